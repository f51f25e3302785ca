"""Expensive experiments of the book: one function each, cached on disk, one package per paper.

A notebook calls :func:`run`; a GPU batch job calls ``python -m symlib run NAME``. Both
go through the artifact cache, so the notebook loads what the batch job computed.
:func:`run` returns a typed result (a frozen dataclass with named fields); its
``artifact`` attribute keeps the cached nested dict.

- :mod:`symlib.experiments.registry`: :func:`register`, :func:`run`, :func:`describe`,
  the shared data loaders and config helpers;
- :mod:`symlib.experiments.xiao`: Xiao et al. (2023), Figs. 1-3 and Table 1;
- :mod:`symlib.experiments.rossi`: Rossi et al. (2023), Sec. 5.1;
- :mod:`symlib.experiments.laurent`: Laurent et al. (2024): the MLPs of Figs. 1, 2 and 4
  (``mlps``, ``toy``), OptuNet's Fig. 2 and Sec. 5.2 (``optunet``), Sec. 4-5.1
  (``posteriors``) and its ResNet-18 scale (``posteriors_resnet``).

Each paper package also holds that paper's reference numbers and claims as constants,
which the notebooks quote. :mod:`symlib.experiments.manifest` lists every table and figure
of the three papers with the experiments and claims that judge it (the reproduction report).
Long experiments run their outer loop through :func:`symlib.experiments.cache.cached_steps`
(or :func:`fit_many_blocks` for banks of networks), so a killed run resumes.
"""
from __future__ import annotations

from symlib.experiments.cache import use_compilation_cache
from symlib.experiments.laurent.perceptrons import (LAURENT_FIG1_CLAIMS, OUTPUT_WEIGHT_FORMS, TOY_MAX_LOSS, TOY_NETS,
                                                    ToyPerceptronsResult, toy_perceptrons)
from symlib.experiments.laurent.mlps import (LAURENT_FIG2_CLAIMS, LAURENT_FIG4_CLAIMS, LaurentMLPsResult, laurent_mlps,
                                             laurent_train_config)
from symlib.experiments.laurent.optunet import (CONVERGED_ACCURACY, OptuNetsResult, laurent_optunets, optunet_data,
                                                swap_summary)
from symlib.experiments.laurent.collapse import functional_collapse
from symlib.experiments.laurent.posteriors import (METHODS, MULTI, NS_VARIANTS, SINGLE, laurent_posteriors, optunet_bank,
                                                   posterior_samples)
from symlib.experiments.laurent.posteriors_resnet import TASKS as RN18_TASKS
from symlib.experiments.laurent.posteriors_resnet import resnet_bank, resnet_collapse, resnet_posteriors
from symlib.experiments.registry import (EXPERIMENTS, RESULT_TYPES, SUMMARIES, Blocks, Experiment, ExperimentResult,
                                         blocks_of, data_config, describe, fit_many_blocks, load_align_data, load_bnn_data, load_data, lookup,
                                         mlp_config, register, run, run_blocks, train_many_blocks)
from symlib.experiments.rossi import (ALIGN_DATASETS, ROSSI_SEC51_CLAIMS, ROSSI_VI_SETTINGS, AlignedVIPair,
                                      VIAlignmentResult, vi_alignment)
from symlib.experiments.xiao import (MATCHING_METHODS, MLP_SEEDS, PRUNE_FRACTIONS, XIAO_FIG1_CLAIMS,
                                     XIAO_FIG2_CLAIMS, XIAO_FIG3_CLAIMS, XIAO_SEC1_CLAIMS, XIAO_TABLE1,
                                     XIAO_TABLE1_SETTING, CompactResult, EnsembleRun, HMCDiagnostics, HMCRun,
                                     MapPairResult, NoTPathsResult, NoTSweepResult, NoTTrace, PredictiveScore,
                                     PruningCurves, RebasinResult, Table1Row, TrainedNet, VIRun,
                                     compact_representation, ensemble, hmc, hmc_run_dir, hmc_samples, mlp_map_pair,
                                     not_grid, not_paths, not_sweep, rebasin_barriers, vi)

__all__ = [
    # registry
    "EXPERIMENTS", "SUMMARIES", "RESULT_TYPES", "Experiment", "ExperimentResult", "register", "run", "lookup", "describe",
    "train_many_blocks", "fit_many_blocks", "Blocks", "blocks_of", "run_blocks", "use_compilation_cache",
    "load_data", "load_bnn_data", "load_align_data", "data_config", "mlp_config",
    # Xiao et al. (2023)
    "mlp_map_pair", "rebasin_barriers", "not_sweep", "not_paths", "not_grid", "ensemble", "vi", "hmc",
    "hmc_run_dir", "hmc_samples", "compact_representation",
    "MLP_SEEDS", "MATCHING_METHODS", "PRUNE_FRACTIONS",
    "XIAO_SEC1_CLAIMS", "XIAO_FIG1_CLAIMS", "XIAO_FIG2_CLAIMS", "XIAO_TABLE1", "XIAO_TABLE1_SETTING",
    "XIAO_FIG3_CLAIMS",
    "TrainedNet", "MapPairResult", "RebasinResult", "NoTSweepResult", "NoTTrace", "NoTPathsResult",
    "PredictiveScore", "EnsembleRun", "VIRun", "HMCDiagnostics", "HMCRun", "Table1Row", "PruningCurves",
    "CompactResult",
    # Rossi et al. (2023)
    "vi_alignment", "ALIGN_DATASETS", "ROSSI_VI_SETTINGS", "ROSSI_SEC51_CLAIMS", "AlignedVIPair",
    "VIAlignmentResult",
    # Laurent et al. (2024)
    "toy_perceptrons", "laurent_mlps", "laurent_train_config", "TOY_MAX_LOSS", "TOY_NETS", "OUTPUT_WEIGHT_FORMS",
    "LAURENT_FIG1_CLAIMS", "LAURENT_FIG2_CLAIMS", "LAURENT_FIG4_CLAIMS", "ToyPerceptronsResult",
    "LaurentMLPsResult",
    "CONVERGED_ACCURACY", "OptuNetsResult", "laurent_optunets", "optunet_data", "swap_summary",
    "optunet_bank", "posterior_samples", "laurent_posteriors", "functional_collapse", "METHODS", "SINGLE", "MULTI", "NS_VARIANTS",
    "RN18_TASKS", "resnet_bank", "resnet_posteriors", "resnet_collapse",
]

# the chapters (and `python -m symlib run`) share XLA's compiled programs through the artifact
# cache; $SYMLIB_XLA_CACHE=0 switches it off
use_compilation_cache()
