"""Every table and figure of the three papers, and what the book does with each.

The reproduction report (``notebooks/14_reproduction_report.py``) is built from this list,
the paper-profile results in ``book/results/`` and the quick-profile artifacts in the cache;
``tests/experiments/test_manifest.py`` checks that the list names every table and figure found in the
paper texts (``../shared/papers``), that every chapter exists, and that every experiment,
claim and summary key it names is registered.

It is a Python module rather than a YAML file so that it can quote the paper modules'
constants (``XIAO_TABLE1``, ``TABLE1_MNIST``, ...) instead of copying them, needs no YAML
parser, and fails at import (and in the tests) when it names an experiment that does not
exist.

An :class:`Item` is one table or figure (or one part of it, e.g. one dataset block of a
table). Its verdict is never written here: :func:`run_verdicts` evaluates the claims of its
experiments (:mod:`symlib.experiments.judging.claims`) on every run there is (the saved results and
the quick profile's cached artifacts), each run labelled with its scale
(:mod:`symlib.experiments.judging.scales`); an item holds on a run only when all of its claims hold
there (:func:`combine`). :mod:`symlib.experiments.report.page` makes the report's short rows
and their details, the counts per paper, scale and verdict, and the page's HTML.
"""
from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symlib.experiments.judging.claims import (CLAIMS, Claim, ClaimOutcome, Verdict, documented_difference, evaluate,
                                       verdict_counts)
from symlib.experiments.laurent.mlps import LAURENT_FIG2_CLAIMS, LAURENT_FIG4_CLAIMS
from symlib.experiments.laurent.perceptrons import LAURENT_FIG1_CLAIMS
from symlib.experiments.laurent.posteriors import APPENDIX_B4_MNIST, TABLE1_MNIST
from symlib.experiments.profiles import Profile, get_profile
from symlib.experiments.rossi import ROSSI_APPC_CLAIMS, ROSSI_SEC51_CLAIMS, ROSSI_VI_SETTINGS
from symlib.experiments.judging.scales import KINDS as SCALE_KINDS
from symlib.experiments.judging.scales import PAPER, QUICK, REDUCTION, STAND_IN, Scale, scale_of
from symlib.experiments.judging.results import label_order
from symlib.experiments.xiao import TABLE1_SETUP, XIAO_FIG1_CLAIMS, XIAO_FIG2_CLAIMS, XIAO_FIG3_CLAIMS, XIAO_TABLE1

#: paper key -> (citation key in book/references.bib, short name, text files in ../shared/papers)
PAPERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "xiao2023": ("xiao2023compact", "Xiao et al. (2023)", ("xiao2023_compact_representation.md",)),
    "rossi2023": ("rossi2023permutation", "Rossi et al. (2023)",
                  ("rossi2023_appendix.md", "rossi2023_summary.md", "rossi2023_poster.md")),
    "laurent2024": ("laurent2024symmetry", "Laurent et al. (2024)", ("laurent2024_symmetry_aware_posteriors.md",)),
}

#: kinds of item: numbers or a claim to check ("table", "figure"), a picture with nothing to
#: measure ("illustration"), or the experimental setup ("setup": hyperparameters, architectures)
KINDS = ("table", "figure", "illustration", "setup")



def hmc_budget(profile: Profile) -> str:
    """The HMC run of ``profile`` in words, read from its ``hmc_*`` and ``bnn_n_train`` fields
    (:func:`symlib.experiments.xiao.hmc_budget` when the paper module has it)."""
    try:
        from symlib.experiments.xiao import hmc_budget as from_xiao
    except ImportError:
        from_xiao = None
    if from_xiao is not None:
        return str(from_xiao(profile))
    per_chain = profile.hmc_burnin + profile.hmc_samples * profile.hmc_thin
    grads = profile.hmc_chains * per_chain * profile.hmc_leapfrog
    return (f"full-batch HMC on {profile.bnn_n_train:,} images, {profile.hmc_chains} chains x ({profile.hmc_burnin} "
            f"burn-in + {profile.hmc_samples} samples x {profile.hmc_thin}) iterations x {profile.hmc_leapfrog} "
            f"leapfrog steps, about {grads / 1e6:.1f} million full-batch gradients")


NEEDS_GPU_HMC = "needs a GPU: " + hmc_budget(get_profile("paper"))


@dataclass(frozen=True)
class Item:
    """One table or figure of a paper (or one part of it).

    Attributes:
        paper: a key of :data:`PAPERS`.
        id: as the paper numbers it: ``"Table 1"``, ``"Figure 2"``, ``"Figure A1"``; main-text
            items of Rossi et al. whose number is not in the texts we have are named by section
            (``"Sec. 5.1 ..."``).
        caption: what it shows, in a line.
        kind: one of :data:`KINDS`.
        part: which part of a table or figure this row covers ("" for all of it).
        chapter: the notebook that reproduces it (``"notebooks/NN_name"``, as in ``_toc.yml``), or None.
        experiments: the registered experiments producing our numbers.
        claims: claims checked for it, as ``"experiment:name"``, besides those that
            :func:`item_claims` finds by the item's id in the claims' sources.
        keys: summary values shown as ours, ``"experiment:path/in/summary"`` (``*`` matches
            every key at its level).
        paper_value: the paper's value or claim, short (quoted, or from the paper module's constants).
        paper_profile: shown in the paper-profile column when no run is saved (e.g. "needs a GPU").
        reason: for an item the book does not attempt: why.
        quick_inconclusive: for an item whose quick-profile run is too small to test the
            paper's claim (e.g. networks that stay near chance): why; its claims are then not
            judged on the quick run, and the status says so.
        paper_only: its experiments run in the paper profile only (no chapter runs them in
            the quick profile): the quick column says so instead of "not cached".
        saved_as: saved results outside the experiment registry that give this item's
            values at the paper's scale (``book/results/<name>-<profile>.json``, e.g.
            ``hmc_pieces`` from ``python -m symlib hmc-piece``), read with the keys of its first
            experiment; claims registered under that name are evaluated on them.
        paper_number: the paper's key number or finding in a few words, for the report's short
            row (default: the start of ``paper_value``).
    """

    paper: str
    id: str
    caption: str
    kind: str
    part: str = ""
    chapter: str | None = None
    experiments: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    paper_value: str = ""
    paper_profile: str = ""
    reason: str = ""
    quick_inconclusive: str = ""
    paper_only: bool = False
    saved_as: tuple[str, ...] = ()
    paper_number: str = ""

    @property
    def label(self) -> str:
        """The id, with the part in parentheses when there is one."""
        return f"{self.id} ({self.part})" if self.part else self.id

    @property
    def attempted(self) -> bool:
        """Whether the book reproduces it (in a chapter or with an experiment)."""
        return bool(self.chapter or self.experiments)


def _t1(col: str) -> str:
    i = XIAO_TABLE1["columns"].index(col)
    return f"{XIAO_TABLE1['agreement'][i]:.2f} / {XIAO_TABLE1['tv'][i]:.2f}"


def _laurent_t1(method: str) -> str:
    v = TABLE1_MNIST[method]
    return f"MMD {v[0]}, NS {v[1]}"


_SINGLE_MMD = [TABLE1_MNIST[m][0] for m in ("Dropout", "BNN", "SGHMC", "SWAG", "Laplace")]
_MULTI_MMD = [TABLE1_MNIST[m][0] for m in ("multi-Dropout", "multi-BNN", "multi-SWAG", "multi-Laplace")]
#: the claims of Laurent et al.'s Table 1 (Sec. 4.3), registered for every posterior experiment
LAURENT_TABLE1_CLAIMS = ("multi_mode_closer", "ensemble_closest", "single_mode_better_ece",
                         "multi_mode_better_ood_detection", "multi_mode_higher_mi")

MANIFEST: tuple[Item, ...] = (
    # ------------------------------------------------------------------ Xiao et al. (2023)
    Item("xiao2023", "Figure 1", "training dynamics of W_0, W_1 and their interpolation W_lambda: the loss barrier "
         "before and after re-basin", "figure", chapter="notebooks/02_rebasin_barriers",
         experiments=("rebasin_barriers",), keys=("rebasin_barriers:barrier_test",),
         paper_value=f"barrier before re-basin {XIAO_FIG1_CLAIMS['barrier_no_matching']}, after "
                     f"{XIAO_FIG1_CLAIMS['barrier_matched']} (no numbers printed)"),
    Item("xiao2023", "Figure 2", "NoT after training against NoT at initialisation, weight distance and loss "
         "barrier against NoT (3 initialisations in the text, 5 runs in the caption); NoT along the interpolation "
         "path and over epochs", "figure",
         chapter="notebooks/03_number_of_transpositions", experiments=("not_sweep", "not_paths"),
         paper_value=f"NoT(P') vs NoT(P): {XIAO_FIG2_CLAIMS['not_after_training']}; distance and barrier: "
                     f"{XIAO_FIG2_CLAIMS['barrier_vs_not']}; along the path: {XIAO_FIG2_CLAIMS['not_along_path']}"),
    Item("xiao2023", "Table 1", "agreement and total variation to HMC, test accuracy, of q_d (before re-basin) and "
         "q_r (after) for HMC and ensembles, and of VI", "table", chapter="notebooks/04_compact_representation",
         experiments=("compact_representation",),
         keys=tuple(f"compact_representation:table/{c}/{k}" for c in ("HMC q_d", "HMC q_r", "Ensemble q_d",
                                                                       "Ensemble q_r", "VI q")
                    for k in ("agreement", "tv")),
         paper_value=("agreement / TV: HMC q_d " + _t1("HMC q_d") + ", q_r " + _t1("HMC q_r") + "; ensemble q_d "
                      + _t1("Ensemble q_d") + ", q_r " + _t1("Ensemble q_r") + "; VI " + _t1("VI q")),
         paper_number="HMC q_r agreement / TV " + _t1("HMC q_r"),
         claims=("compact_representation:qd_falls_with_chains",),
         paper_profile=NEEDS_GPU_HMC, saved_as=("hmc_pieces",)),
    Item("xiao2023", "Table 1", "test accuracy of the deep ensemble's and VI's predictives, from their own runs "
         "(the columns of Table 1 that need no HMC)", "table", part="ensemble and VI accuracy",
         chapter="notebooks/04_compact_representation", experiments=("ensemble", "vi"),
         keys=("ensemble:accuracy", "vi:accuracy"),
         paper_value=(f"ensemble {XIAO_TABLE1['accuracy_samples'][3]}%, VI {XIAO_TABLE1['accuracy_samples'][6]}% "
                      "(predictives' test accuracy)"),
         quick_inconclusive=(f"a miniature of the paper's network and data (fewer hidden units and training "
                             f"images than its {TABLE1_SETUP['hidden']} and {TABLE1_SETUP['n_train']:,}), on which "
                             "gate.xiao_mlp_setup leaves the claim not tested")),
    Item("xiao2023", "Figure 3", "histograms of sigma before and after re-basin (HMC, ensemble, VI); test accuracy "
         "against pruning, with stitched means and variances", "figure", chapter="notebooks/05_merging_and_pruning",
         experiments=("compact_representation",),
         keys=("compact_representation:median_sigma/*", "compact_representation:near_prior/*"),
         paper_value=f"re-basin shrinks sigma: {XIAO_FIG3_CLAIMS['rebasin_shrinks_sigma']}; sigma near the prior: "
                     f"{XIAO_FIG3_CLAIMS['sigma_near_prior']}; stitched pruning gain "
                     f"{XIAO_FIG3_CLAIMS['stitched_pruning_gain']}",
         paper_profile=NEEDS_GPU_HMC, saved_as=("hmc_pieces",)),
    # ------------------------------------------------------------------ Rossi et al. (2023)
    Item("rossi2023", "Sec. 5.1 MLP barriers", "marginalised loss barriers between two VI solutions along the "
         "Wasserstein geodesic, before and after alignment, against width (main-text figure; its number is not in "
         "the appendix, summary and poster we have)", "figure", part="MLP, MNIST and Fashion-MNIST",
         chapter="notebooks/07_vi_alignment_barriers", experiments=("vi_alignment", "vi_alignment_robustness"),
         claims=(*(f"vi_alignment:{c}" for c in ("alignment_lowers_every_barrier", "alignment_removes_barrier_mnist",
                                                 "aligned_barrier_nearly_zero_mnist",
                                                 "barrier_falls_with_width_mnist",
                                                 "alignment_removes_barrier_fashion_mnist",
                                                 "aligned_barrier_nearly_zero_fashion_mnist",
                                                 "barrier_falls_with_width_fashion_mnist")),
                 "vi_alignment_robustness:removes_barrier_every_setting"),
         keys=("vi_alignment:widths/mnist", "vi_alignment:marginal/*/test/aligned"),
         paper_value=f"aligned barrier: {ROSSI_SEC51_CLAIMS['mnist_aligned_barrier']}; falls with width: "
                     f"{ROSSI_SEC51_CLAIMS['barrier_decreases_with_width']} (numbers only in the figure)"),
    Item("rossi2023", "Sec. 5.1 MLP barriers", "the same for an MLP on CIFAR-10", "figure", part="MLP, CIFAR-10",
         chapter="notebooks/07_vi_alignment_barriers", experiments=("vi_alignment_cifar10",), paper_only=True,
         claims=tuple(f"vi_alignment_cifar10:{c}" for c in ("alignment_lowers_every_barrier",
                                                             "alignment_removes_barrier_cifar10",
                                                             "aligned_barrier_nearly_zero_cifar10",
                                                             "barrier_falls_with_width_cifar10")),
         keys=("vi_alignment_cifar10:marginal/*/test/aligned",),
         paper_value=f"{ROSSI_SEC51_CLAIMS['cifar10_aligned_barrier']} (summary, Sec. 5.1)",
         paper_profile="needs the CIFAR-10 archive (a GPU shortens it)"),
    Item("rossi2023", "Sec. 5.1 ResNet20 barriers", "the same for ResNet20 on CIFAR-10 (main-text figure)", "figure",
         chapter="notebooks/07_vi_alignment_barriers", experiments=("vi_alignment_resnet20",), paper_only=True,
         claims=("vi_alignment_resnet20:alignment_lowers_every_barrier",
                 "vi_alignment_resnet20:wider_lower_only_after_alignment"),
         keys=("vi_alignment_resnet20:marginal/*/test/*",),
         paper_value="nearly-zero barrier after alignment; wider models lower barriers only after alignment",
         paper_profile="needs CIFAR-10 data and a GPU (widths 1, 2, 4, 8)"),
    Item("rossi2023", "Figure A1", "LAP with the KL cost keeps the identity, the Wasserstein cost recovers the swap "
         "of two symmetric Gaussians", "illustration", chapter="notebooks/06_kl_vs_wasserstein",
         paper_value="KL: identity permutation; Wasserstein: aligns the two distributions"),
    Item("rossi2023", "Figure A2", "seconds to align two VI solutions (Wasserstein) and to match two SGD solutions, "
         "against width, MLP and ResNet20", "figure", part="MLP", chapter="notebooks/08_alignment_timings",
         experiments=("vi_alignment_timings",), keys=("vi_alignment_timings:table/*/w2_seconds",),
         paper_value=f"{ROSSI_APPC_CLAIMS['within_a_minute']}; {ROSSI_APPC_CLAIMS['vi_costlier_than_sgd']}"),
    Item("rossi2023", "Figure A2", "the timings for ResNet20", "figure", part="ResNet20",
         chapter="notebooks/08_alignment_timings", experiments=("vi_alignment_resnet20_timings",), paper_only=True,
         claims=tuple(f"vi_alignment_resnet20_timings:{c}" for c in ("within_a_minute", "time_grows_with_width",
                                                                     "vi_costlier_than_weight_matching")),
         keys=("vi_alignment_resnet20_timings:table/*/w2_seconds",),
         paper_value=f"{ROSSI_APPC_CLAIMS['within_a_minute']}; {ROSSI_APPC_CLAIMS['vi_costlier_than_sgd']}",
         paper_profile="needs CIFAR-10 data and a GPU: it reads the timings vi_alignment_resnet20 takes of its "
                       "pairs"),
    Item("rossi2023", "Figure A3", "alignment fails to reach zero barrier on CIFAR-100", "figure",
         chapter="notebooks/07_vi_alignment_barriers", experiments=("vi_alignment_resnet20_cifar100",),
         paper_only=True, claims=("vi_alignment_resnet20_cifar100:barrier_remains_after_alignment",),
         keys=("vi_alignment_resnet20_cifar100:marginal/*/test/aligned",),
         paper_value="barriers remain after alignment (CIFAR-100)",
         paper_profile="needs the CIFAR-100 archive and a GPU (VI ResNet20s: the text does not name the architecture)"),
    Item("rossi2023", "Table 1", "hyperparameters of the experiments (App. B)", "setup",
         chapter="notebooks/07_vi_alignment_barriers",
         paper_value=f"batch {ROSSI_VI_SETTINGS['batch_size']}, temperature {ROSSI_VI_SETTINGS['temperature']}, VI std "
                     f"init {ROSSI_VI_SETTINGS['std_init']}, no data augmentation"),
    Item("rossi2023", "Table 2", "MLP architecture: three 512-unit Linear-ReLU layers", "setup",
         chapter="notebooks/07_vi_alignment_barriers", paper_value="3 x 512, ReLU"),
    Item("rossi2023", "Table 3", "ResNet20 architecture (16, 32, 64 channels x width, three blocks each)", "setup",
         chapter="notebooks/07_vi_alignment_barriers", experiments=("vi_alignment_resnet20",), paper_only=True,
         paper_value="ResNet20, base features 16", paper_profile="needs CIFAR-10 data and a GPU"),
    # ------------------------------------------------------------------ Laurent et al. (2024)
    Item("laurent2024", "Figure 1", "posterior of the output weights of 10,000 2-2-1 perceptrons: raw, unit-normed, "
         "and with permutations removed", "figure", chapter="notebooks/09_toy_posterior_symmetries",
         experiments=("toy_perceptrons",),
         claims=tuple(f"toy_perceptrons:{c}" for c in ("few_dropped", "functions_unchanged", "raw_symmetric",
                                                        "mode_duplicated", "scaling_regroups")),
         keys=("toy_perceptrons:dropped_fraction", "toy_perceptrons:max_logit_diff"),
         paper_value=f"raw: {LAURENT_FIG1_CLAIMS['raw_density']}; canonical: "
                     f"{LAURENT_FIG1_CLAIMS['canonical_density']}; dropped {LAURENT_FIG1_CLAIMS['dropped_networks']}"),
    Item("laurent2024", "Figure 2", "mass of trained OptuNets against their min-mass equivalents, and the largest "
         "weight of each layer", "figure", chapter="notebooks/10_min_mass",
         experiments=("laurent_optunets", "laurent_mlps", "bank_min_mass"),
         claims=tuple(f"{e}:{c}" for e in ("laurent_optunets", "laurent_mlps", "bank_min_mass")
                      for c in ("above_min_mass", "min_mass_convex", "corollary1_lower_loss", "largest_weight")),
         keys=("laurent_optunets:min_mass/mass_before", "laurent_optunets:min_mass/mass_after",
               "bank_min_mass:min_mass/mass_before", "bank_min_mass:min_mass/mass_after"),
         paper_value=f"above the min-mass point: {LAURENT_FIG2_CLAIMS['above_min_mass']}; largest weight: "
                     f"{LAURENT_FIG2_CLAIMS['largest_weight_after_min_mass']}"),
    Item("laurent2024", "Figure 3", "pairwise mutual information of 1,000 ResNet-18 on CIFAR-100 (ID) and SVHN "
         "(OOD), and their correlation", "figure", part="ResNet-18, CIFAR-100 / SVHN",
         paper_value="ID MI has very low variance, OOD MI more; no significant ID/OOD correlation",
         chapter="notebooks/13_functional_collapse", experiments=("rn18_collapse_cifar100",), paper_only=True,
         paper_profile="needs CIFAR-100 and SVHN data and a GPU (1,000 ResNet-18); chapter 13 shows the "
                "OptuNet version (Figure 7)"),
    Item("laurent2024", "Figure 3", "its statement on the spread of the MI, tested on OptuNet (MNIST / "
         "Fashion-MNIST): the paper says it of ResNet-18 only", "figure",
         part="the spread statement on OptuNet (ours)", chapter="notebooks/13_functional_collapse",
         experiments=("functional_collapse",),
         claims=("functional_collapse:ood_more_dispersed", "functional_collapse:ood_variance_larger"),
         keys=("functional_collapse:cv_id", "functional_collapse:cv_ood"),
         paper_value="the variance of the OOD MI is higher (said of ResNet-18; App. D.2 compares OptuNet's "
                     "dispersions with ResNet-18's, not OOD with ID)"),
    Item("laurent2024", "Figure 4", "Kendall's tau between successive sorting permutations during training",
         "figure", part="left: OptuNet, MNIST", chapter="notebooks/11_permutation_frequency",
         experiments=("laurent_optunets", "laurent_mlps"),
         claims=tuple(f"{e}:{c}" for e in ("laurent_optunets", "laurent_mlps")
                      for c in ("swaps_in_high_lr_phases", "ordering_freezes")),
         paper_value=f"{LAURENT_FIG4_CLAIMS['where_units_swap']}; last phase: {LAURENT_FIG4_CLAIMS['last_phase']}"),
    Item("laurent2024", "Figure 4", "the same for ResNet-18 on CIFAR-100", "figure", part="right: ResNet-18",
         chapter="notebooks/11_permutation_frequency", experiments=("rn18_swaps_cifar100",), paper_only=True,
         claims=("rn18_swaps_cifar100:swaps_in_high_lr_phases", "rn18_swaps_cifar100:ordering_freezes"),
         paper_value="much variation while the learning rate is high, none in the last phase",
         paper_profile="needs the CIFAR-100 archive and a GPU (ResNet-18 trained with the authors' recipe)"),
    Item("laurent2024", "Figure 5", "training data of the toy example (two Gaussian classes, 200 points each)",
         "illustration", chapter="notebooks/09_toy_posterior_symmetries", paper_value="illustration"),
    Item("laurent2024", "Figure 6", "not referenced in the extracted text (its caption was lost); numbered between "
         "App. A.1's Figure 5 and App. D.2's Figure 7, i.e. in App. B (presumably OptuNet's architecture, B.2)",
         "illustration", paper_value="illustration",
         reason="not attempted: no caption or data in the texts we have; OptuNet itself is symlib.core.cnn"),
    Item("laurent2024", "Figure 7", "functional collapse of OptuNet on MNIST / Fashion-MNIST: pairwise MI in and "
         "out of distribution and their correlation", "figure", chapter="notebooks/13_functional_collapse",
         experiments=("functional_collapse",),
         claims=("functional_collapse:positive_correlation", "functional_collapse:collapse_frequency"),
         keys=("functional_collapse:pearson_r", "functional_collapse:below_half_id"),
         paper_value="OptuNet's MI more dispersed than ResNet-18's; some positive ID/OOD correlation; a "
                     "non-negligible chance of an MI twice lower than expected"),
    Item("laurent2024", "Figure 8", "functional collapse of ResNet-18 on TinyImageNet / Textures", "figure",
         paper_value="close to Figure 3; weak positive correlation",
         chapter="notebooks/13_functional_collapse", experiments=("rn18_collapse_tiny_imagenet",), paper_only=True,
         paper_profile="needs TinyImageNet and Textures data and a GPU"),
    Item("laurent2024", "Figure 9", "layer-wise marginals of an MLP's weights, with KS p-values, before and after "
         "removing the symmetries", "figure", chapter="notebooks/10_min_mass", experiments=("laurent_mlps",),
         claims=("laurent_mlps:marginals_identical_before", "laurent_mlps:marginals_differ_after"),
         keys=("laurent_mlps:marginals/share_below_005/*",),
         paper_value=f"before: {LAURENT_FIG2_CLAIMS['marginals_before_removal']}; after: "
                     f"{LAURENT_FIG2_CLAIMS['marginals_after_removal']} (energy-efficiency MLP; ours: MNIST MLPs)"),
    Item("laurent2024", "Table 1", "MMD to the reference posterior with and without symmetries, accuracy, ECE, Brier, "
         "AUPR, FPR95, ID / OOD mutual information of ten posterior estimates", "table", part="MNIST / OptuNet",
         chapter="notebooks/12_posterior_estimates", experiments=("laurent_posteriors",),
         claims=tuple(f"laurent_posteriors:{c}" for c in LAURENT_TABLE1_CLAIMS),
         keys=tuple(f"laurent_posteriors:mmd/MMD/{m}/median" for m in ("Laplace", "multi-Laplace", "DE")),
         paper_value=f"single-mode MMD {min(_SINGLE_MMD)}-{max(_SINGLE_MMD)}, multi-mode {min(_MULTI_MMD)}-"
                     f"{max(_MULTI_MMD)}, DE 0.0; e.g. Laplace {_laurent_t1('Laplace')}",
         paper_profile="not run: 100 samples per method on the bank of 1,248 OptuNets (days on 2 CPU cores; "
                       "the GPU queue's jobs laurent-bank, laurent-bank-more and laurent-table1 train them)"),
    Item("laurent2024", "Table 1", "the same block for ResNet-18 on CIFAR-100 (OOD: SVHN)", "table",
         part="CIFAR-100 / ResNet-18", paper_value="single-mode MMD 4.5-9.0, multi-mode 0.6-6.1, DE 0.0",
         chapter="notebooks/12_posterior_estimates", experiments=("rn18_posteriors_cifar100",), paper_only=True,
         claims=tuple(f"rn18_posteriors_cifar100:{c}" for c in LAURENT_TABLE1_CLAIMS),
         paper_profile="needs CIFAR-100 and SVHN data and a GPU (1,100 ResNet-18)"),
    Item("laurent2024", "Table 1", "the same block for ResNet-18 on TinyImageNet (OOD: Textures)", "table",
         part="TinyImageNet / ResNet-18", paper_value="single-mode MMD 5.5-9.8, multi-mode 0.5-6.7, DE 0.0",
         chapter="notebooks/12_posterior_estimates", experiments=("rn18_posteriors_tiny_imagenet",), paper_only=True,
         claims=tuple(f"rn18_posteriors_tiny_imagenet:{c}" for c in LAURENT_TABLE1_CLAIMS),
         paper_profile="needs TinyImageNet and Textures data and a GPU"),
    Item("laurent2024", "Table 2", "median, mean and max of the layer-wise MMDs with and without symmetries "
         "(App. B.4)", "table", part="MNIST / OptuNet", chapter="notebooks/12_posterior_estimates",
         experiments=("laurent_posteriors",), claims=("laurent_posteriors:multi_mode_closer",),
         keys=tuple(f"laurent_posteriors:mmd/{v}/Laplace/*" for v in ("MMD", "NS")),
         paper_value="Laplace: MMD median / mean / max " + " / ".join(map(str, APPENDIX_B4_MNIST["Laplace"][:3]))
                     + ", NS " + " / ".join(map(str, APPENDIX_B4_MNIST["Laplace"][3:])),
         paper_profile="not run: 100 samples per method on the bank of 1,248 OptuNets (days on 2 CPU cores; "
                       "the GPU queue's jobs laurent-bank, laurent-bank-more and laurent-table1 train them)"),
    Item("laurent2024", "Table 2", "the same for CIFAR-100 and TinyImageNet (ResNet-18)", "table",
         part="CIFAR-100 and TinyImageNet / ResNet-18", paper_value="as Table 1's ResNet-18 blocks, with means and maxima",
         chapter="notebooks/12_posterior_estimates",
         experiments=("rn18_posteriors_cifar100", "rn18_posteriors_tiny_imagenet"), paper_only=True,
         claims=("rn18_posteriors_cifar100:multi_mode_closer", "rn18_posteriors_tiny_imagenet:multi_mode_closer"),
         paper_profile="needs CIFAR-100 / SVHN, TinyImageNet / Textures data and a GPU"),
)


# ---------------------------------------------------------------------------------------
# claims, summary values, status


def _id_pattern(item_id: str) -> re.Pattern | None:
    m = re.fullmatch(r"(Figure|Table) ([A-Z]?\d+)", item_id)
    if m is None:
        return None
    word = r"Fig(?:ure|s?\.)" if m.group(1) == "Figure" else r"Tab(?:le|\.)"
    return re.compile(rf"\b{word}\s*{m.group(2)}\b")


def item_claims(item: Item) -> list[Claim]:
    """The claims that judge ``item``: those of its experiments whose source names its id
    (e.g. "Fig. 3" for "Figure 3"), and those it lists in ``claims``.

    Args:
        item: a manifest item.

    Returns:
        The claims, without repeats, in the order of the experiments' registrations.

    Raises:
        KeyError: if ``item.claims`` names a claim that is not registered.
    """
    pattern = _id_pattern(item.id)
    wanted = set(item.claims)
    for ref in item.claims:
        exp, name = ref.split(":", 1)
        if not any(c.name == name for c in CLAIMS.get(exp, [])):
            raise KeyError(f"{item.paper} {item.label}: no claim {name!r} registered for experiment {exp!r}")
    out = []
    for exp in item.experiments:
        for c in CLAIMS.get(exp, []):
            if f"{exp}:{c.name}" in wanted or (pattern is not None and pattern.search(c.source)):
                out.append(c)
    return out


def summary_values(summary: Mapping[str, Any], path: str) -> list[tuple[str, Any]]:
    """The values at ``path`` (``"a/b/c"``, ``*`` for every key at a level) of a summary.

    Args:
        summary: an experiment's summary.
        path: the path, as in :attr:`Item.keys` after the ``"experiment:"``.

    Returns:
        ``(label, value)`` pairs, the label being the path with the keys matched by ``*``
        (without its first part when it has three or more); empty when the path is not there.
    """
    parts = path.split("/")
    found: list[tuple[list[str], Any]] = [([], summary)]
    for part in parts:
        nxt = []
        for labels, node in found:
            if not isinstance(node, Mapping):
                continue
            if part == "*":
                nxt += [([*labels, str(k)], v) for k, v in node.items()]
            elif part in node:
                nxt.append(([*labels, part], node[part]))
        found = nxt
    drop = 1 if len(parts) >= 3 else 0  # "table/HMC q_r/agreement" -> "HMC q_r/agreement"
    return [("/".join(labels[drop:]), value) for labels, value in found]


def format_value(value: Any) -> str:
    """A short string of a summary value.

    Args:
        value: a number, bool, None, list or dict from a summary.

    Returns:
        Numbers with 3 significant digits, dicts as ``"key value, ..."``, lists of more
        than four numbers as their mean.
    """
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        return f"{value:.3g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {format_value(v)}" for k, v in value.items())
    if isinstance(value, Sequence) and not isinstance(value, str):
        nums = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(nums) == len(value) and len(value) > 4:
            return f"mean {sum(nums) / len(nums):.3g} over {len(nums)}"
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


def ours(item: Item, summaries: Mapping[str, Mapping[str, Any]]) -> str:
    """Our values for ``item`` from the experiments' summaries (:attr:`Item.keys`); for an
    item without keys, the numbers its claims report (their details).

    Args:
        item: a manifest item.
        summaries: experiment -> summary (experiments without one are left out).

    Returns:
        ``"label value; ..."``, or "" when none of its keys (or claims) is in ``summaries``.
    """
    parts = []
    for ref in item.keys:
        exp, path = ref.split(":", 1)
        if exp in summaries:
            parts += [f"{label} {format_value(v)}" for label, v in summary_values(summaries[exp], path)]
    if not item.keys:
        names = {(c.experiment, c.name) for c in item_claims(item)}
        for exp in dict.fromkeys(e for e, _ in names):
            if exp in summaries:
                parts += [o.detail for o in evaluate(exp, summaries[exp]) if (exp, o.claim.name) in names]
    return "; ".join(parts)


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """An item's verdict on one run from its claims' verdicts: "holds" only when every claim
    holds; otherwise the weakest: "differs" before "opposite direction, not significant" before
    "same direction, not significant" before "not tested" (no claim at all is "not tested").

    Args:
        verdicts: the claims' verdicts (:class:`symlib.experiments.judging.claims.Verdict`).

    Returns:
        The item's verdict.
    """
    found = set(verdicts)
    for v in (Verdict.DIFFERS, Verdict.OPPOSITE_DIRECTION, Verdict.SAME_DIRECTION, Verdict.NOT_TESTED):
        if v in found:
            return v
    return Verdict.HOLDS if found else Verdict.NOT_TESTED


@dataclass(frozen=True)
class RunVerdict:
    """An item's claims evaluated on one run.

    Attributes:
        run: the run's profile label (``"quick"``, ``"paper"``, ``"paper-16nets"``).
        scale: its scale (:func:`symlib.experiments.judging.scales.scale_of`): shown apart from the verdict.
        outcomes: the claims' outcomes.
        missing: experiments of the item with claims but no summary in this run.
        note: why nothing was judged (e.g. a quick run too small to test the claim).
        provenance: device and date of a saved run ("" for the quick run).
    """

    run: str
    scale: Scale
    outcomes: tuple[ClaimOutcome, ...] = ()
    missing: tuple[str, ...] = ()
    note: str = ""
    provenance: str = ""

    @property
    def verdict(self) -> Verdict:
        """:func:`combine` of the claims' verdicts ("not tested" when none was evaluated)."""
        return combine([o.verdict for o in self.outcomes])

    @property
    def counts(self) -> str:
        """``"3 of 4 claims hold; 1 differs"``."""
        n = len(self.outcomes)
        if not n:
            return self.note or "no claim evaluated"
        by = verdict_counts(self.outcomes)
        rest = [f"{k} {v}" for v, k in ((v, by[v.value]) for v in Verdict if v is not Verdict.HOLDS) if k]
        return f"{by[Verdict.HOLDS.value]} of {n} claims hold" + (f"; {', '.join(rest)}" if rest else "")

    @property
    def text(self) -> str:
        """The verdict with the run's scale: ``"holds (labelled reduction: 16 of ...; paper-16nets)"``."""
        return f"{self.verdict.value} ({self.scale.short}; {self.run})"

    def details(self) -> list[str]:
        """One line per claim: the verdict, the statement and our numbers, and the documented
        reason of an expected difference."""
        out = []
        for o in self.outcomes:
            why = documented_difference(o.claim.experiment, self.run, o.claim.name)
            late = " [threshold read after seeing the data]" if o.evidence.threshold.read_after_data else ""
            out.append(f"{o.verdict.value}{late}: {o.claim.statement} (ours: {o.detail}; "
                       f"{o.evidence.interval_text()})" + (f"; why: {why}" if why else ""))
        if self.missing:
            out.append(f"{', '.join(self.missing)} not in this run")
        return out


def _evaluate_item(item: Item, summaries: Mapping[str, Mapping[str, Any]]) -> tuple[list[ClaimOutcome], list[str]]:
    """The outcomes of :func:`item_claims` (and of the claims registered for its saved results,
    :attr:`Item.saved_as`) on one run, and the experiments with claims but no summary."""
    claims = item_claims(item)
    outcomes, missing = [], []
    for exp in (*item.experiments, *item.saved_as):
        mine = {c.name for c in claims if c.experiment == exp}
        if exp in item.saved_as:
            pattern = _id_pattern(item.id)
            mine = {c.name for c in CLAIMS.get(exp, []) if pattern is None or pattern.search(c.source)}
        if not mine:
            continue
        if exp not in summaries:
            missing.append(exp)
            continue
        outcomes += [o for o in evaluate(exp, summaries[exp]) if o.claim.name in mine]
    return outcomes, missing


def saved_runs(directory: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The paper-profile results files of ``directory``, by experiment and profile label.

    Args:
        directory: the results folder (``book/results``).

    Returns:
        ``runs[experiment][profile] = record`` for every ``*.json`` whose profile starts
        with ``"paper"`` (``"paper"`` itself, or a labelled reduction like ``"paper-8nets"``).
    """
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(Path(directory).glob("*.json")):
        record = json.loads(path.read_text())
        if str(record.get("profile", "")).startswith("paper"):
            runs.setdefault(record["experiment"], {})[record["profile"]] = record
    return runs


def _run_scale(item: Item, label: str, records: Mapping[str, Mapping[str, Any]]) -> Scale:
    """The scale of run ``label`` of the item: that of its first experiment in the run (a
    stand-in or reduction of any of them makes the run one)."""
    found = [scale_of(exp, label, rec) for exp, rec in records.items()]
    for kind in (STAND_IN, REDUCTION, QUICK, PAPER):
        for sc in found:
            if sc.kind == kind:
                return sc
    return scale_of((*item.experiments, *item.saved_as)[0], label)


def run_verdicts(item: Item, quick: Mapping[str, Mapping[str, Any]],
                 paper_runs: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[RunVerdict]:
    """The item's claims on every run there is: each saved paper-profile run (the paper's
    scale first, then the reductions and stand-ins), then the quick run.

    Args:
        item: a manifest item.
        quick: experiment -> quick-profile summary (those found in the artifact cache).
        paper_runs: :func:`saved_runs`.

    Returns:
        One :class:`RunVerdict` per run with a summary of the item's experiments (the quick
        run also when it is too small to test the claims: its note says why); empty for an
        item without claims or runs.
    """
    if not item.attempted or item.kind in ("illustration", "setup") or not (item_claims(item) or item.saved_as):
        return []
    names = (*item.experiments, *item.saved_as)
    labels = sorted({p for e in names for p in paper_runs.get(e, {})}, key=label_order)
    out = []
    for label in labels:
        records = {e: paper_runs[e][label] for e in names if label in paper_runs.get(e, {})}
        # one verdict per scale: experiments of one label can differ in scale (a stand-in beside
        # a reduction), and a verdict names one scale
        groups: dict[Scale, dict[str, Mapping[str, Any]]] = {}
        for exp, rec in records.items():
            groups.setdefault(scale_of(exp, label, rec), {})[exp] = rec
        found = []
        for scale, group in groups.items():
            outcomes, missing = _evaluate_item(item, {e: r["summary"] for e, r in group.items()})
            missing = [e for e in missing if e not in records]
            first = next(iter(group.values()))
            note = "" if outcomes else "no claim reads this run's summary yet"
            found.append(RunVerdict(label, scale, tuple(outcomes), tuple(missing), note,
                                    f"{first.get('device', '?')}, {first.get('date', '?')}"))
        # a scale none of the item's claims reads is left out when another of the label's is read
        out += [r for r in found if r.outcomes] or found[:1]
    order = {k: i for i, k in enumerate(SCALE_KINDS)}
    out.sort(key=lambda r: order[r.scale.kind])
    if item.paper_only:
        return out
    in_quick = {e: quick[e] for e in item.experiments if e in quick}
    if item.quick_inconclusive:
        if in_quick:
            out.append(RunVerdict("quick", _run_scale(item, "quick", dict.fromkeys(in_quick)),
                                  note=f"too small to test: {item.quick_inconclusive}"))
        return out
    if in_quick:
        outcomes, missing = _evaluate_item(item, in_quick)
        if outcomes:
            out.append(RunVerdict("quick", _run_scale(item, "quick", dict.fromkeys(in_quick)), tuple(outcomes),
                                  tuple(missing)))
    return out


def item_status(item: Item, quick: Mapping[str, Mapping[str, Any]],
                paper_runs: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The item's verdict on every run, each with the run's scale.

    Args:
        item: a manifest item.
        quick: experiment -> quick-profile summary (those found in the artifact cache).
        paper_runs: :func:`saved_runs`.

    Returns:
        ``"<verdict> (<scale>; <run>) | ..."`` (the verdicts of :class:`symlib.experiments.judging.claims.Verdict`,
        largest scale first), or "not run", "not attempted: <reason>", "illustration, redrawn
        in its chapter", "setup: ...", "shown in its chapter; no claim function checks it yet".
    """
    if not item.attempted:
        return item.reason or "not attempted"
    if item.kind == "illustration":
        return "illustration, redrawn in its chapter"
    if item.kind == "setup":
        return ("setup: quoted in its chapter" if item.chapter else
                f"setup: followed by {', '.join(item.experiments)} (no chapter yet)")
    if not item_claims(item) and not item.saved_as:
        return "shown in its chapter; no claim function checks it yet"
    runs = run_verdicts(item, quick, paper_runs)
    if runs:
        return " | ".join(r.text if r.outcomes else f"{Verdict.NOT_TESTED.value} ({r.scale.short}; {r.run}: {r.note})"
                          for r in runs)
    return "not run"


def _values(item: Item, exp: str, summary: Mapping[str, Any]) -> str:
    """:func:`ours` for one experiment or saved result of the item (a saved result of
    :attr:`Item.saved_as` is read with the keys of the item's first experiment)."""
    if exp in item.saved_as and item.experiments:
        keys = [f"{exp}:{ref.split(':', 1)[1]}" for ref in item.keys if ref.startswith(f"{item.experiments[0]}:")]
        return ours(dataclasses.replace(item, keys=tuple(keys), experiments=(exp,)), {exp: summary})
    return ours(item, {exp: summary})


def paper_profile_cell(item: Item, paper_runs: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The paper-profile column: our values from the saved runs, each labelled with its
    run, scale, device and date; or why there is none.

    Args:
        item: a manifest item.
        paper_runs: :func:`saved_runs`.

    Returns:
        The cell's text.
    """
    if not item.attempted:
        return "not attempted"
    cells = []
    for exp in (*item.experiments, *item.saved_as):
        for label, record in sorted(paper_runs.get(exp, {}).items(), key=lambda kv: label_order(kv[0])):
            values = _values(item, exp, record["summary"]) or "saved"
            cells.append(f"{values} [{exp}, {label}, {scale_of(exp, label, record).short}: {record['device']}, "
                         f"{record['date']}]")
    if cells:
        return "; ".join(cells)
    if item.kind in ("illustration", "setup") and not item.experiments:
        return "n/a"
    return item.paper_profile or "not run yet"


# ---------------------------------------------------------------------------------------
# the report


def runs_in_quick(item: Item) -> bool:
    """Whether a chapter runs the item's experiments in the quick profile, so that the report
    expects one of their summaries in the artifact cache (an attempted item, not
    ``paper_only``, with an experiment that has a registered summary)."""
    from symlib.experiments.registry import SUMMARIES

    return item.attempted and not item.paper_only and any(e in SUMMARIES for e in item.experiments)


class QuickResultsMissing(LookupError):
    """The artifact cache lacks the quick-profile results that the report reads."""


def quick_summaries(profile: str = "quick", complete: bool = False) -> dict[str, dict[str, Any]]:
    """Summaries of the manifest's experiments whose artifacts are in the cache; nothing is
    computed (:func:`symlib.experiments.registry.lookup`).

    Args:
        profile: the profile whose artifacts to read.
        complete: require a result for every item a chapter runs in this profile
            (:func:`runs_in_quick`): the book's report, executed after the chapters, is never
            built on a partly filled cache.

    Returns:
        experiment -> summary, for those cached and with a registered summary.

    Raises:
        QuickResultsMissing: with ``complete``, when an item has none of its experiments in
            the cache; the message names the items, their chapters and the cache folder.
    """
    from symlib.experiments import cache
    from symlib.experiments.registry import SUMMARIES, lookup

    out = {}
    for exp in dict.fromkeys(e for item in MANIFEST for e in item.experiments):
        if exp in SUMMARIES:
            found = lookup(exp, profile)
            if found is not None:
                out[exp] = SUMMARIES[exp](found.artifact)
    missing = [i for i in MANIFEST if runs_in_quick(i) and not any(e in out for e in i.experiments)] if complete else []
    if missing:
        chapters = sorted({i.chapter or "-" for i in missing})
        listed = "; ".join(f"{i.paper} {i.label} ({', '.join(i.experiments)})" for i in missing)
        raise QuickResultsMissing(
            f"the artifact cache ({cache.cache_dir()}) has no {profile!r} results for {len(missing)} "
            f"item{'s' if len(missing) != 1 else ''} of the report: {listed}. Execute their chapters first, in the "
            f"same cache ({', '.join(chapters)}; `make book` and nbval run them before the report).")
    return out
