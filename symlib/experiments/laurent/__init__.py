"""Experiments of Laurent et al. (2024), "A symmetry-aware exploration of Bayesian neural
network posteriors", and the paper's reference numbers: one package.

Parts:

- :mod:`~symlib.experiments.laurent.perceptrons`: Fig. 1 and App. A (``toy_perceptrons``), with its claims;
- :mod:`~symlib.experiments.laurent.mlps`: Figs. 2 and 4 on MLPs (``laurent_mlps``), the
  min-mass problem and the swaps of Sec. 5.2, with their claims;
- :mod:`~symlib.experiments.laurent.toy`: the toy perceptrons' problem and its densities;
- :mod:`~symlib.experiments.laurent.optunet`: Fig. 2 and Sec. 5.2 on OptuNet (``laurent_optunets``);
- :mod:`~symlib.experiments.laurent.posteriors`: Sec. 4 on OptuNet (``optunet_bank``,
  ``posterior_samples``, ``laurent_posteriors``), and
  :mod:`~symlib.experiments.laurent.posterior_claims`: its Sec. 4.3 claims;
- :mod:`~symlib.experiments.laurent.collapse`: Sec. 5.1 on the same bank (``functional_collapse``);
- :mod:`~symlib.experiments.laurent.bank_min_mass`: Fig. 2 on the same bank (``bank_min_mass``);
- :mod:`~symlib.experiments.laurent.posteriors_resnet`: the same at ResNet-18 scale;
- :mod:`~symlib.experiments.laurent.swaps_resnet`: Sec. 5.2, Fig. 4 (right) on ResNet-18 (``rn18_swaps_cifar100``).

Every public name of :mod:`~symlib.experiments.laurent.perceptrons` and :mod:`~symlib.experiments.laurent.mlps` is also here
(loaded on first use, from the table ``_EXPORTS``). Importing the package imports every part: they
register their experiments and claims.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "perceptrons": ["TOY_MAX_LOSS", "TOY_NETS", "LAURENT_FIG1_CLAIMS", "OUTPUT_WEIGHT_FORMS", "ToyPerceptronsResult",
                    "toy_symmetry_tests", "TOY_BOOTSTRAP", "toy_bootstrap", "toy_perceptrons", "SYMMETRY_TEST_LEVEL"],
    "mlps": ["LAURENT_FIG2_CLAIMS", "LAURENT_FIG4_CLAIMS", "LaurentMLPsResult", "laurent_train_config",
             "LAURENT_MLP_BLOCK", "mass_hessian", "mass_along_line", "LINE_T", "min_mass_entry",
             "UNFEASIBLE_RATIO", "swap_summary", "BURST_WINDOW", "laurent_mlps"],
    "tables": ["OPTUNET_SWAP_KEYS", "PHASE_HEADERS", "optunet_swap_labels", "hidden_layer_labels", "optunet_swap_line",
               "optunet_swap_values", "mlp_swap_line", "phase_table", "late_swaps_line", "late_taus", "fig4_rows",
               "optunet_swap_rate_values", "saved_swap_values", "posterior_setting_values", "bank_line", "bank_values",
               "method_seconds_table", "method_settings_lines", "table1_ours", "table1_mnist", "appendix_b4_table",
               "symmetry_removal_table", "resnet_posterior_values", "RESNET_NEEDS", "resnet_run_line",
               "resnet_table1_rows", "mmd_comparison_values", "COLLAPSE_STATS", "collapse_line", "collapse_values",
               "collapse_rows", "collapse_resnet_values", "resnet_collapse_rows", "resnet_collapse_line",
               "claim_threshold_values", "saved_collapse_values", "bank_cpu_hours",
               "optunet_layer_params", "min_mass_setting_values",
               "optunet_training_line", "min_mass_lines", "layer_labels", "largest_weight_table", "corollary1_line",
               "objective_change_table", "convexity_lines", "mlp_min_mass_line", "pooled_ks_line", "RAW_FORM",
               "CANONICAL_FORM", "marginal_values", "marginal_weights_tested", "marginals_table", "fig2_rows",
               "largest_ratio_values",
               "saved_min_mass_values", "gpu_min_mass_values", "saved_posterior_values"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# the parts register their experiments and claims when imported: eagerly, in this order (the MLPs'
# claims before the others')
from symlib.experiments.laurent import (perceptrons, mlps, optunet, posteriors, posterior_claims,  # noqa: E402,F401
                                        collapse, bank_min_mass, posteriors_resnet, swaps_resnet, toy)
