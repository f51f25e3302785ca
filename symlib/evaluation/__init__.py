"""symlib.evaluation: predictives, metrics, interpolation and loss barriers, Gaussian
summaries of samples (also running ones), pruning, per-unit marginals, and the MMD between
posterior samples. It does not import :mod:`symlib.inference` (full-batch HMC in pieces
with running summaries, which needs both, is :mod:`symlib.experiments.xiao.hmc_pieces`).

Names are loaded on first use, from the table ``_EXPORTS``."""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "metrics": ["accuracy", "nll", "agreement", "total_variation", "accuracy_from_probs", "nll_from_probs", "brier",
                "ece", "ood_aupr", "fpr95", "mutual_information", "pair_mutual_information",
                "pairwise_mutual_information"],
    "predictive": ["member_probs", "predict_from_gaussian", "predict_from_samples", "predict_single", "sample_gaussian"],
    "interpolation": ["barrier", "interpolate", "interpolation_curve", "loss_barrier", "marginal_barrier",
                      "marginal_loss_curve", "midpoint_barrier"],
    "summaries": ["GaussianSummary", "METHODS", "direct_summary", "flatten_summary", "grouped_rebasin_summary",
                  "rebasin_summary", "summary_to_samples", "tree_to_vector", "vector_to_tree"],
    "running": ["RunningMoments"],
    "stats": ["difference_interval", "mantel_null", "mantel_test", "mean_interval", "proportion_interval",
              "ratio_interval", "repeat_spread"],
    "pruning": ["keep_mask", "num_kept", "prune_by_sigma", "pruning_curve", "stitch"],
    "marginals": ["first_last_pvalues", "ks_pvalue", "unit_weights"],
    "mmd": ["KERNELS", "MMDBank", "MMDJackknife", "PosteriorMMD", "mmd2_unbiased", "mmd_bandwidths",
            "mmd_kernel_bank", "pairwise_distances", "posterior_mmd", "posterior_mmd_jackknife"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
