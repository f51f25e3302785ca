"""symlib.symmetry: permutations (cycles, number of transpositions), permutation specs,
weight and activation matching, Wasserstein/KL alignment of mean-field posteriors, ReLU
scaling symmetries (min-mass, unit-norm) and canonical forms (sorting, identifiable networks,
symmetry-free stacks of samples), the specs of the built-in networks, specs derived from any
model, and neuron order during training.

Every tool takes the model's specs first: a :class:`PermutationSpec` (permutations, matching,
alignment, sorting) and a :class:`ScalingSpec` (scalings, min-mass); the built-in MLPs' are
``mlp_permutation_spec(L)`` and ``mlp_scaling_spec(L)``, any other model's are derived by
``permutation_spec_from_flax`` / ``scaling_spec_from_flax`` (or ``_from_apply``).

Names are loaded on first use (``_EXPORTS``: module -> names), so ``import symlib.symmetry``
imports only what is used.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "permutations": ["as_generator", "compose", "cycles", "from_matrix", "identity", "inverse", "is_permutation",
                     "kendall_tau", "log_stirling1_table", "num_cycles", "num_transpositions",
                     "num_transpositions_batch", "random_permutation", "random_permutation_with_transpositions",
                     "to_matrix", "validate"],
    "specs": ["PermutationSpec", "apply_permutation", "block_of", "check_blocks", "check_spec", "check_spec_invariance",
              "flatten_params", "join_parts", "mlp_permutation_spec", "param_distance", "part_name",
              "random_permutations", "split_parts", "to_views", "unflatten_params", "view_shape"],
    "architectures": ["optunet_permutation_spec", "optunet_scaling_spec", "resnet18_permutation_spec",
                      "resnet18_scaling_spec", "resnet20_permutation_spec", "resnet20_scaling_spec"],
    "scaling": ["HOMOGENEOUS_ACTIVATIONS", "MinMassResult", "ScalingSpec", "apply_scaling", "chain_kernels",
                "check_scaling_spec", "check_scaling_spec_invariance", "degenerate_neurons", "function_change", "mass",
                "mass_along", "mass_hessian", "min_mass", "mlp_scaling_spec", "unit_norm", "unit_norm_traced"],
    "canonical": ["IDENTIFIABLE_TOL", "NS_METHODS", "SORT_STATISTICS", "identifiable", "remove_symmetries",
                  "sort_neurons"],
    "derive": ["DeriveReport", "UnsupportedOperationError", "activation_sites", "capture_activations", "derive_report",
               "flax_derive_report", "permutation_spec_from_apply", "permutation_spec_from_flax",
               "scaling_spec_from_apply", "scaling_spec_from_flax"],
    "matching": ["ManyMatchResult", "MatchResult", "activation_matching", "apply_permutation_many", "weight_matching",
                 "weight_matching_many"],
    "alignment": ["apply_alignment", "composite_spec", "kl_alignment", "kl_cost_terms", "kl_diag", "w2_geodesic",
                  "wasserstein2_sq", "wasserstein_alignment"],
    "neuron_order": ["discordant_pairs", "discordant_pairs_batch", "kendall_tau_from_discordant", "neuron_statistics",
                     "epoch_swaps", "phase_summary", "statistics_observer", "swap_bursts", "swap_counter"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
