"""Experiments of Rossi et al. (2023), "Permutation invariance of variational
posteriors", and the paper's reference claims.

Registered experiments: ``vi_alignment`` (Sec. 5.1): ``align_pairs`` independent pairs of
mean-field VI MLPs per width and dataset, Wasserstein alignment, and the marginalised loss
along the W2 geodesic, naive and aligned (:func:`symlib.experiments.run` returns a
:class:`VIAlignmentResult`); ``vi_alignment_robustness``: the same at one width under two
prior variances x two temperatures; and
``vi_alignment_timings`` (App. C, Fig. A2): the wall time of aligning those trained
posteriors, beside weight matching of their means (a :class:`VIAlignmentTimings`); and
``vi_alignment_resnet20`` (Sec. 5.1): the same as ``vi_alignment`` for ResNet20 with
LayerNorm, on CIFAR-10 in the paper profile and on Fashion-MNIST as the quick stand-in; and
``vi_alignment_cifar10`` (Sec. 5.1): ``vi_alignment``'s MLPs on CIFAR-10, and
``vi_alignment_resnet20_cifar100`` (App. C, Fig. A3): ``vi_alignment_resnet20`` on CIFAR-100
(paper profile only: they need the archives); ``vi_alignment_resnet20_timings`` (App. C,
Fig. A2 for ResNet20): the timings ``vi_alignment_resnet20`` takes of its pairs.

The paper's claims about them are registered with :func:`symlib.experiments.judging.claims.claim`
at the end of the module, each returning Evidence over the independent units (posterior
pairs, repeated timings) against a threshold of :mod:`symlib.experiments.judging.thresholds`:
alignment lowers every barrier and removes more than half of it, barriers fall as width
grows, the result holds across prior variances and temperatures, and for ResNet20 wider is
lower only after alignment (Sec. 5.1), the MLP's barriers on CIFAR-10 as on MNIST, a barrier
left after alignment on CIFAR-100 (App. C, Fig. A3); and the timing statements of App. C.

Parts: :mod:`~symlib.experiments.rossi.settings`, :mod:`~symlib.experiments.rossi.runs`,
:mod:`~symlib.experiments.rossi.resnet` (ResNet20),
:mod:`~symlib.experiments.rossi.tables`, :mod:`~symlib.experiments.rossi.prose` (the values the
chapters' prose cites), :mod:`~symlib.experiments.rossi.kl_cost` (App. A: the KL and Wasserstein costs on
small Gaussians) and :mod:`~symlib.experiments.rossi.claims`; every
public name is also here (loaded on first use, from the table ``_EXPORTS``). Importing the package
imports every part: they register the experiments and claims.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "settings": ["ROSSI_VI_SETTINGS", "ROSSI_TRAINING_AS_EXTRACTED", "TIMING_REPEATS", "ROSSI_APPC_CLAIMS",
                 "ROSSI_SEC51_CLAIMS", "ALIGN_DATASETS", "SPLITS", "CIFAR10_MLP_PRIOR_VAR"],
    "runs": ["AlignedVIPair", "VIAlignmentResult", "align_and_compare", "fit_and_align_pair", "vi_alignment",
             "ROBUSTNESS_PRIOR_VARS", "ROBUSTNESS_TEMPERATURES", "ROBUSTNESS_DATASET", "vi_alignment_robustness",
             "load_cifar10_flat", "vi_alignment_cifar10", "VIAlignmentTimings", "TIMED_COLUMNS",
             "time_alignments", "vi_alignment_timings"],
    "resnet": ["load_resnet_data", "vi_alignment_resnet20", "RESNET_CLASSES", "vi_alignment_resnet20_cifar100",
               "vi_alignment_resnet20_timings"],
    "tables": ["barriers_against_width", "training_length_rows", "TRAINING_LENGTH_HEADERS", "width_gaps", "mean_se",
               "format_mean_se", "barrier_table_rows", "BARRIER_TABLE_HEADERS", "timing_table_rows",
               "TIMING_TABLE_HEADERS", "QUICK_BEFORE_REPLICATES", "RESNET_STANDIN_TRIALS", "RESNET_STANDIN_HEADERS",
               "describe_alignment", "training_images", "training_settings_table", "settings_change_table",
               "geodesic_curves", "robustness_table", "training_length_table", "resnet_table", "describe_resnet",
               "timing_spreads", "timing_tables", "timing_paper_rows"],
    "prose": ["outcome_values", "training_values", "robustness_values", "paper_settings_values", "paper_run_values",
              "longer_training_values", "training_length_values", "saved_timing_values"],
    "kl_cost": ["TraceTermCheck", "trace_term_check", "PermutationCosts", "kl_over_permutations", "mirror_pair",
                "mirror_pair_picks", "mirror_picks_table", "mirror_glue_values", "appendix_a_rows", "MIRROR_COSTS",
                "VECTOR_SPEC"],
    "claims": ["barrier_reduction", "width_slopes", "width_slope_rows", "WIDTH_SLOPE_HEADERS",
               "TIMING_CLAIMS_MACHINE_DEPENDENT"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# the parts register their experiments (runs) and claims (claims) when imported: eagerly, in this order
from symlib.experiments.rossi import settings, runs, resnet, tables, claims  # noqa: E402,F401
