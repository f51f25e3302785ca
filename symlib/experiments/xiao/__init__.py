"""Experiments of Xiao et al. (2023), "A compact representation for Bayesian neural
networks by removing permutation symmetry", and the paper's reference numbers.

Registered experiments: ``mlp_map_pair`` (two MAP-trained MLPs), ``rebasin_barriers``
(Fig. 1), ``not_sweep`` and ``not_paths`` (Fig. 2), ``ensemble``, ``vi``, ``hmc`` (App. A)
and ``compact_representation`` (Table 1, Fig. 3). Each returns a typed result (a frozen
dataclass below) from :func:`symlib.experiments.run`.

Parts: :mod:`~symlib.experiments.xiao.settings` (the paper's numbers, claims and settings),
:mod:`~symlib.experiments.xiao.results` (typed results),
:mod:`~symlib.experiments.xiao.runs` (Fig. 1-2), :mod:`~symlib.experiments.xiao.posteriors`
(App. A, Table 1, Fig. 3), :mod:`~symlib.experiments.xiao.claims`, and what the chapters print,
glue and draw: :mod:`~symlib.experiments.xiao.tables` and :mod:`~symlib.experiments.xiao.figures`; every public name is
also here (loaded on first use, from the table ``_EXPORTS``). Importing the package imports every
part: they register the experiments and claims.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "settings": ["XIAO_SEC1_CLAIMS", "XIAO_FIG1_CLAIMS", "XIAO_FIG2_CLAIMS", "XIAO_TABLE1", "XIAO_TABLE1_SETTING",
                 "XIAO_FIG3_CLAIMS", "MLP_SEEDS", "MATCHING_METHODS", "SPLITS", "PRUNE_FRACTIONS"],
    "results": ["PredictiveScore", "TrainedNet", "MapPairResult", "RebasinResult", "NoTSweepResult", "NoTTrace",
                "NoTPathsResult", "EnsembleRun", "VIRun", "HMCDiagnostics", "HMCRun", "Table1Row", "PruningCurves",
                "CompactRun", "CompactResult", "repaired_units_summary"],
    "runs": ["mlp_map_pair", "pair_seeds", "rebasin_barriers", "barrier_replicates", "pair_barrier_lists", "not_grid",
             "not_sweep", "REPAIRED_ACTIVITY_IMAGES", "describe_repaired", "not_paths_replicates", "not_paths",
             "permutation_effect", "distance_by_not", "sweep_statistics"],
    "posteriors": ["ensemble", "vi", "HMCBudget", "hmc_budget", "hmc_run_dir", "hmc", "hmc_samples", "PIECES_CHAINS",
                   "PIECES_SAMPLES", "PIECES_CHUNK", "MATCH_EXAMPLES", "hmc_pieces_run", "hmc_pieces_summary",
                   "table1_row", "NEAR_PRIOR_FACTOR", "near_prior_fraction", "always_zero_pixels", "unit_sigma_medians",
                   "pixel_sigma_medians", "chain_groups", "compact_representation", "CHAIN_COUNTS",
                   "agreement_by_chains", "weight_rhat", "hmc_sigma_inspection"],
    "claims": ["NEAR_PRIOR_COLUMNS", "TABLE1_SETUP", "mlp_setup_gate"],
    "tables": ["net_line", "effect_lines", "effect_values", "distance_by_not_text", "invariance_rows",
               "rebasin_setting_values", "rebasin_pair_lines", "barrier_text", "barrier_values", "barrier_rows",
               "saved_run_line", "rebasin_threshold_values", "not_setting_values", "over_runs",
               "sweep_statistics_text", "sweep_statistics_values", "not_path_lines", "not_path_values",
               "independent_not_values", "replicates_line", "epoch_range_values", "not_claim_rows", "threshold_values",
               "saved_not_values", "TABLE1_ORDER", "posterior_setting_lines", "posterior_setting_values", "hmc_line",
               "convergence_table", "samples_line", "convergence_values", "coordinate_line", "worst_ess_table",
               "vi_line", "table1", "table1_note", "table1_rows", "table1_claim_rows", "chains_text",
               "chains_values", "pruning_table", "sigma_summary_table", "sigma_values", "sigma_inspection_table",
               "matching_consistency_line", "sigma_inspection_values"],
    "figures": ["distance_against_not", "permuted_weights", "interpolation_figure", "not_sweep_figure", "not_paths_figure",
                "elbo_figure", "table1_figure", "chains_figure",
                "PRUNING_LABELS", "sigma_histograms", "pruning_figure"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# the parts register their experiments (runs, posteriors) and claims (claims) when imported: eagerly,
# in this order
from symlib.experiments.xiao import settings, results, runs, posteriors, claims  # noqa: E402,F401
