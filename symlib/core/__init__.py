"""symlib.core: the bottom layer. MLP and CNN (OptuNet, ResNets) parameters as pytrees and their apply functions,
losses on logits, pytree helpers, Gaussian noise for parameter pytrees, input checks, atomic file writes, the one progress
bar and the multi-process helpers of JAX's distributed runtime (``symlib.core.distributed``, importable before
anything starts JAX's backend). Imports no other symlib subpackage.

Names are loaded on first use, so that ``import symlib.data`` (which needs only the
progress bar) does not import JAX.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "models": ["Params", "layer_names", "mlp_apply", "mlp_hidden", "mlp_init", "mlp_sizes", "unstack", "check_sizes",
               "check_mlp_params", "check_mlp_layout", "layout_check", "register_layout_check"],
    "cnn": ["OPTUNET_SHAPES", "as_images", "check_layout", "conv2d", "global_avg_pool", "max_pool", "optunet_apply",
            "optunet_hidden", "optunet_init"],
    "resnet": ["NORM_EPS", "batch_norm_inference", "inner_name", "layer_norm", "resnet18_apply", "resnet18_apply_train",
               "resnet18_features", "resnet18_hidden", "resnet18_running_statistics",
               "resnet18_init", "resnet18_shapes", "resnet20_apply", "resnet20_hidden", "resnet20_init", "resnet20_shapes",
               "stream_name"],
    "losses": ["accuracy", "nll"],
    "pytree": ["flatten_dict", "unflatten_dict", "tree_to_vector", "vector_to_tree", "ravel"],
    "checks": ["check_finite", "check_finite_tree", "check_labels", "mlp_layer_names", "positive_float",
               "positive_int", "check_key"],
    "noise": ["num_params", "normal_vector", "split_like", "standard_normal_like", "perturb"],
    "io": ["atomic_write"],
    "progress": ["progress_bar", "progress_enabled"],
    "distributed": ["initialize_from_env", "is_writer", "sync_processes", "allgather", "global_mesh", "process_rows",
                    "put_global", "ProcessInfo"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
