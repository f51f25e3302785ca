"""symlib.core: the bottom layer. MLP parameters as pytrees and their apply function,
losses on logits, pytree helpers, input checks, atomic file writes and the one progress
bar. Imports no other symlib subpackage."""
from symlib.core.checks import (
    check_finite,
    check_finite_tree,
    check_labels,
    mlp_layer_names,
    positive_float,
    positive_int,
)
from symlib.core.io import atomic_write
from symlib.core.losses import accuracy, nll
from symlib.core.models import Params, layer_names, mlp_apply, mlp_hidden, mlp_init, mlp_sizes, unstack
from symlib.core.progress import progress_bar, progress_enabled
from symlib.core.pytree import flatten_dict, ravel, tree_to_vector, unflatten_dict, vector_to_tree

__all__ = [
    "Params", "layer_names", "mlp_apply", "mlp_hidden", "mlp_init", "mlp_sizes", "unstack",
    "accuracy", "nll",
    "flatten_dict", "unflatten_dict", "tree_to_vector", "vector_to_tree", "ravel",
    "check_finite", "check_finite_tree", "check_labels", "mlp_layer_names", "positive_float", "positive_int",
    "atomic_write",
    "progress_bar", "progress_enabled",
]
