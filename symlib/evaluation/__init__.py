"""symlib.evaluation: predictives, metrics, interpolation and loss barriers, Gaussian
summaries of samples, pruning, and per-unit marginals."""
from symlib.evaluation.metrics import (  # noqa: F401
    accuracy,
    nll,
    agreement,
    total_variation,
    accuracy_from_probs,
    nll_from_probs,
    brier,
    ece,
)
from symlib.evaluation.predictive import (  # noqa: F401
    member_probs,
    predict_from_gaussian,
    predict_from_samples,
    predict_single,
    sample_gaussian,
)
from symlib.evaluation.interpolation import (  # noqa: F401
    barrier,
    interpolate,
    interpolation_curve,
    loss_barrier,
    marginal_barrier,
    marginal_loss_curve,
    midpoint_barrier,
)
from symlib.evaluation.summaries import (  # noqa: F401
    GaussianSummary,
    METHODS,
    direct_summary,
    flatten_summary,
    grouped_rebasin_summary,
    rebasin_summary,
    summary_to_samples,
    tree_to_vector,
    vector_to_tree,
)
from symlib.evaluation.pruning import (  # noqa: F401
    keep_mask,
    num_kept,
    prune_by_sigma,
    pruning_curve,
    stitch,
)
from symlib.evaluation.marginals import (  # noqa: F401
    first_last_pvalues,
    unit_weights,
)

__all__ = [
    "accuracy",
    "nll",
    "agreement",
    "total_variation",
    "accuracy_from_probs",
    "nll_from_probs",
    "brier",
    "ece",
    "member_probs",
    "predict_from_gaussian",
    "predict_from_samples",
    "predict_single",
    "sample_gaussian",
    "barrier",
    "interpolate",
    "interpolation_curve",
    "loss_barrier",
    "marginal_barrier",
    "marginal_loss_curve",
    "midpoint_barrier",
    "GaussianSummary",
    "METHODS",
    "direct_summary",
    "flatten_summary",
    "grouped_rebasin_summary",
    "rebasin_summary",
    "summary_to_samples",
    "tree_to_vector",
    "vector_to_tree",
    "keep_mask",
    "num_kept",
    "prune_by_sigma",
    "pruning_curve",
    "stitch",
    "first_last_pvalues",
    "unit_weights",
]
