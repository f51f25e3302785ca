"""Expensive experiments of the book: one function each, cached on disk, one package per paper.

A notebook calls :func:`run`; a GPU batch job calls ``python -m symlib run NAME``. Both
go through the artifact cache, so the notebook loads what the batch job computed.
:func:`run` returns a typed result (a frozen dataclass with named fields); its
``artifact`` attribute keeps the cached nested dict.

The modules sit on four floors, each importing only the floors below it (pyproject's
import-linter contract ``experiments-floors``):

1. the bench: :mod:`~symlib.experiments.profiles`, :mod:`~symlib.experiments.cache`,
   :mod:`~symlib.experiments.table`, :mod:`~symlib.experiments.recipes` (the papers' optimisers), then :mod:`~symlib.experiments.registry`,
   :mod:`~symlib.experiments.weights` and :mod:`~symlib.experiments.plotting`;
2. judging (:mod:`symlib.experiments.judging`): claims and their verdicts, the thresholds
   quoted from the papers, the scale label of every result, the saved runs;
3. the three papers, independent of each other (below);
4. the report (:mod:`symlib.experiments.report`: the synthesis tables, the manifest, the
   report pages, the facts quoted from the papers) and the GPU queue
   (:mod:`~symlib.experiments.gpu_queue`; above it :mod:`~symlib.experiments.gpu_device`, what a
   device call runs).

- :mod:`symlib.experiments.registry`: :func:`register`, :func:`run`, :func:`describe`,
  the shared data loaders and config helpers;
- :mod:`symlib.experiments.xiao`: Xiao et al. (2023), Figs. 1-3 and Table 1 (and the pieced
  HMC of its GPU runs, :mod:`~symlib.experiments.xiao.hmc_pieces`);
- :mod:`symlib.experiments.rossi`: Rossi et al. (2023), Sec. 5.1;
- :mod:`symlib.experiments.laurent`: Laurent et al. (2024): the MLPs of Figs. 1, 2 and 4
  (``mlps``, ``toy``), OptuNet's Fig. 2 and Sec. 5.2 (``optunet``), Sec. 4-5.1
  (``posteriors``) and its ResNet-18 scale (``posteriors_resnet``).

Each paper package also holds that paper's reference numbers and claims as constants,
which the notebooks quote. :mod:`symlib.experiments.report.manifest` lists every table and figure
of the three papers with the experiments and claims that judge it (the reproduction report).
Long experiments run their outer loop through :func:`symlib.experiments.cache.cached_steps`
(or :func:`fit_many_blocks` for banks of networks), so a killed run resumes.

The names above are loaded on first use, from the table ``_EXPORTS``. Importing the package imports
the three paper packages, which register their experiments and claims.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

from symlib.experiments.cache import use_compilation_cache

_EXPORTS = {
    "registry": ["EXPERIMENTS", "SUMMARIES", "RESULT_TYPES", "Experiment", "ExperimentResult", "register", "run",
                 "lookup", "describe", "fit_many_blocks", "Blocks", "blocks_of", "run_blocks",
                 "load_data", "load_bnn_data", "load_align_data", "data_config", "mlp_config"],
    "cache": ["use_compilation_cache"],
    # Xiao et al. (2023)
    "xiao.runs": ["mlp_map_pair", "rebasin_barriers", "not_sweep", "not_paths", "not_grid"],
    "xiao.posteriors": ["ensemble", "vi", "hmc", "hmc_run_dir", "hmc_samples", "compact_representation"],
    "xiao.settings": ["MLP_SEEDS", "MATCHING_METHODS", "PRUNE_FRACTIONS", "XIAO_SEC1_CLAIMS", "XIAO_FIG1_CLAIMS",
                      "XIAO_FIG2_CLAIMS", "XIAO_TABLE1", "XIAO_TABLE1_SETTING", "XIAO_FIG3_CLAIMS"],
    "xiao.results": ["TrainedNet", "MapPairResult", "RebasinResult", "NoTSweepResult", "NoTTrace", "NoTPathsResult",
                     "PredictiveScore", "EnsembleRun", "VIRun", "HMCDiagnostics", "HMCRun", "Table1Row", "PruningCurves",
                     "CompactResult"],
    # Rossi et al. (2023)
    "rossi.runs": ["vi_alignment", "AlignedVIPair", "VIAlignmentResult"],
    "rossi.settings": ["ALIGN_DATASETS", "ROSSI_VI_SETTINGS", "ROSSI_SEC51_CLAIMS"],
    # Laurent et al. (2024)
    "laurent.perceptrons": ["toy_perceptrons", "TOY_MAX_LOSS", "TOY_NETS", "OUTPUT_WEIGHT_FORMS", "LAURENT_FIG1_CLAIMS",
                            "ToyPerceptronsResult"],
    "laurent.mlps": ["laurent_mlps", "laurent_train_config", "LAURENT_FIG2_CLAIMS", "LAURENT_FIG4_CLAIMS",
                     "LaurentMLPsResult"],
    "laurent.optunet": ["CONVERGED_ACCURACY", "OptuNetsResult", "laurent_optunets", "optunet_data", "swap_summary"],
    "laurent.posteriors": ["optunet_bank", "posterior_samples", "laurent_posteriors", "METHODS", "SINGLE", "MULTI",
                           "NS_VARIANTS"],
    "laurent.collapse": ["functional_collapse"],
    "laurent.posteriors_resnet": ["RN18_TASKS", "resnet_bank", "resnet_posteriors", "resnet_collapse"],
}
#: the names exported under another name than their module's
_RENAMED = {"RN18_TASKS": "TASKS"}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), renamed=_RENAMED)


# the paper packages register their experiments (registry.EXPERIMENTS) and claims (claims.CLAIMS)
# when imported: eagerly, in this order (the registries' order)
from symlib.experiments import laurent, rossi, xiao  # noqa: E402,F401

# the chapters (and `python -m symlib run`) share XLA's compiled programs through the artifact
# cache; $SYMLIB_XLA_CACHE=0 switches it off
use_compilation_cache()
