"""The scale of every run the book shows: the one registry that labels a result.

Every number of ours comes from a run of one of four scales (:data:`KINDS`):

* **paper scale**: the paper's setting (data, architecture, number of networks, samples);
* **labelled reduction**: the paper's setting with one or more dimensions reduced, each
  named with how much (``"16 of the paper's 1,000 networks"``); saved as
  ``<experiment>-paper-<label>.json``;
* **quick miniature**: every quick-profile result (a subset of the data, small networks),
  except those of experiments that run the paper's setting in every profile
  (:data:`SAME_IN_EVERY_PROFILE`);
* **stand-in**: a setting the paper did not run (another dataset, architecture or method
  standing in for the paper's), at whatever size.

:func:`scale_of` gives the scale of a run from its experiment and profile label (and, for a
run whose size is only known from its summary, the saved record). ``tests/experiments/test_scales.py``
fails when a saved result in ``book/results/`` or an item of the report's manifest has no
scale, or when a reduction does not say which dimension was reduced and by how much.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

PAPER = "paper scale"
REDUCTION = "labelled reduction"
QUICK = "quick miniature"
STAND_IN = "stand-in"

#: the four scales, in the order the report counts them
KINDS = (PAPER, REDUCTION, STAND_IN, QUICK)


@dataclass(frozen=True)
class Scale:
    """The scale of one run.

    Attributes:
        kind: one of :data:`KINDS`.
        reduced: for a reduction (or a reduced stand-in): every dimension reduced and by how
            much, e.g. ``"16 of the paper's 1,000 networks"``.
        stand_in: for a stand-in: what it stands in for, e.g. ``"MNIST MLPs with weight decay;
            the paper's Fig. 9 uses an energy-efficiency MLP"``.
    """

    kind: str
    reduced: str = ""
    stand_in: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown scale {self.kind!r}; one of {KINDS}")
        if self.kind == REDUCTION and not self.reduced:
            raise ValueError("a labelled reduction must say which dimension was reduced and by how much")
        if self.kind == STAND_IN and not self.stand_in:
            raise ValueError("a stand-in must say what it stands in for")
        if self.reduced and not says_how_much(self.reduced):
            raise ValueError(f"reduction {self.reduced!r} does not say by how much ('N of M <what>')")

    @property
    def label(self) -> str:
        """The kind with its details: ``"labelled reduction: 16 of the paper's 1,000 networks"``,
        ``"stand-in (<what for>); reduced: <...>"``, ``"quick miniature (stand-in: <what for>)"``."""
        what = f"stand-in: {self.stand_in}" if self.stand_in and self.kind == QUICK else self.stand_in
        text = self.kind + (f" ({what})" if what else "")
        if self.reduced:
            text += ("; reduced: " if self.kind == STAND_IN else ": ") + self.reduced
        return text

    @property
    def short(self) -> str:
        """The kind with the reduction only (for a table row; :attr:`label` has the rest)."""
        return self.kind + (f": {self.reduced}" if self.reduced else "")

    def __str__(self) -> str:
        return self.label


def says_how_much(text: str) -> bool:
    """Whether a reduction's text names a dimension with its size: ``"N of M <what>"``
    (every part, separated by commas or "and", must)."""
    parts = [p.strip() for p in re.split(r";|, (?=\d)| and (?=\d)", text) if p.strip()]
    return bool(parts) and all(re.search(r"\b\d[\d,]* of (?:[\w'-]+ ){0,4}\d[\d,]*\s+\w", p) for p in parts)


# ---------------------------------------------------------------------------------------
# the registry

#: experiments whose every run is a stand-in (any profile): what they stand in for
STAND_INS: dict[str, str] = {
    "laurent_mlps": "MNIST ReLU MLPs trained with our weight decay; the paper's MLP (Fig. 9) is an "
                    "energy-efficiency regression MLP, and Figs. 2 and 4 use OptuNets and ResNet-18",
    "vi_alignment_timings": "matching the VI means (weight matching) stands in for the paper's weight matching "
                            "of two SGD solutions",
    "vi_alignment_resnet20_timings": "matching the VI means (weight matching) stands in for the paper's weight "
                                     "matching of two SGD solutions",
    "vi_alignment_robustness": "a 2 x 2 grid of prior variances and temperatures of our choosing at one width; "
                               "the paper states the robustness without giving its grid",
}

#: (experiment, profile label) runs that are stand-ins in that profile only
PROFILE_STAND_INS: dict[tuple[str, str], str] = {
    ("vi_alignment_resnet20", "quick"): "ResNet20 on Fashion-MNIST; the paper's ResNet20 runs on CIFAR-10",
}

#: the training images of every OptuNet of the paper profile (its n_train of MNIST's training set)
_OPTUNET_IMAGES = "50,000 of the paper's 60,000 training images (our paper profile holds 10,000 out for validation)"

#: (experiment, profile label) -> what each saved reduction reduced, and by how much
REDUCTIONS: dict[tuple[str, str], str] = {
    # our paper profile trains 256 OptuNets; the paper's checkpoint set has 1,000 (Fig. 2 does not say how
    # many it shows), so the paper profile's run is itself a reduction; every OptuNet of ours (these and the
    # bank's) trains on the paper profile's 50,000-image split of MNIST's 60,000 training images
    ("laurent_optunets", "paper"): f"256 of the paper's 1,000 networks, {_OPTUNET_IMAGES}",
    # the paper profile's bank and what reads it: the paper's counts, on the 50,000-image split
    **{(e, "paper"): _OPTUNET_IMAGES for e in ("optunet_bank", "bank_min_mass", "functional_collapse",
                                                 "laurent_posteriors", "posterior_samples")},
    ("laurent_optunets", "paper-16nets"): f"16 of the paper's 1,000 networks, {_OPTUNET_IMAGES}",
    ("laurent_optunets", "paper-8nets"): f"8 of the paper's 1,000 networks, {_OPTUNET_IMAGES}",
    ("laurent_optunets", "paper-768nets"): "768 of the paper's 1,000 networks (the first 3 of the 4 blocks of 256 "
                                           f"the GPU queue trains, on an H200), {_OPTUNET_IMAGES}",
    ("laurent_mlps", "paper-64nets"): "64 of the 256 networks of our paper profile",
    ("bank_min_mass", "paper-1024nets"): "the first 1,024 of the 1,248 OptuNets of the paper profile's bank (8 blocks "
                                         f"of 128, trained on a GPU), {_OPTUNET_IMAGES}",
    ("laurent_posteriors", "paper-1024nets-800ref-2epochs"): "800 of the paper's 1,000 reference checkpoints (the "
                                                            "converged networks among the first 1,024 of the paper "
                                                            "profile's bank, trained on a GPU), 2 of the paper's "
                                                            "60 epochs of Dropout and BNN (continued from the "
                                                            "modes, BNN with a standard normal prior where the "
                                                            "paper uses Blitz's default of standard deviation 0.1, "
                                                            "SGHMC's chain instead running the authors' library "
                                                            "default of 250 epochs from the first mode) "
                                                            "and 4 of the paper's 20 SWAG snapshots (one per epoch "
                                                            "over 4 epochs, not one every 10 epochs), "
                                                            f"{_OPTUNET_IMAGES}",
    ("functional_collapse", "paper-24nets"): f"24 of the 1,248 OptuNets of the paper profile's bank, {_OPTUNET_IMAGES}",
    ("functional_collapse", "paper-1024nets"): "the first 1,024 of the 1,248 OptuNets of the paper profile's bank "
                                               f"(8 blocks of 128, trained on a GPU), {_OPTUNET_IMAGES}",
    # Sec. 2: "for three random W_init"; Fig. 2's caption: "+-1 sigma over 5 runs"
    ("not_sweep", "paper-10nots-2runs"): "10 of the 512 NoT values, and 2 of the paper's 3 random initialisations "
                                         "(its text, while the Fig. 2 caption says 5 runs)",
    # our paper profile trains the VI posteriors for 100 epochs; the paper's Table 1 (as extracted) prints 1,000
    ("vi_alignment", "paper"): "100 of the paper's 1,000 training epochs (its App. B, Table 1, as extracted), and "
                               "widths from 128 to 1,024 where the paper states only 512",
    # the CIFAR-10 MLP reuses the MNIST run's epochs and widths: its own epoch count is lost in the extraction
    ("vi_alignment_cifar10", "paper"): "100 of the 1,000 training epochs that the paper's App. B, Table 1 gives for "
                                       "MNIST (its CIFAR-10 count is lost in the extraction), and widths from 128 "
                                       "to 1,024 where the paper states only 512",
    ("vi_alignment", "paper-4widths-16samples"): "16 of the paper's 128 MC samples, 2,000 of the 10,000 test "
                                                 "images, 1 of our paper profile's 3 posterior pairs, and 100 of "
                                                 "the paper's 1,000 training epochs (all 4 of our paper profile's "
                                                 "widths, from 128 to 1,024, where the paper states only 512)",
    ("vi_alignment", "paper-1000epochs-2pairs"): "2 of our paper profile's 4 widths (the narrowest and the widest of "
                                                "128 to 1,024, where the paper states only 512) and 2 of our paper "
                                                "profile's 3 posterior pairs, trained for the paper's 1,000 epochs",
    # the precision study (issue 44, ours) runs the paper's sampler (500 leapfrog steps, 784-512-10, 50,000 images)
    # for a few iterations: it measures the sampler's numerics, not the posterior
    # (the paper's 600 burn-in epochs and 1,000 samples, one every 10, are 10,600 iterations if run as one chain;
    # the paper gives no chain count)
    ("hmc_precision", "paper"): "100 of the 10,600 HMC iterations of the paper's run were it a single chain (its 600 "
                                "burn-in epochs plus 1,000 samples one every 10 epochs: it gives no chain count) and 2 "
                                "of our paper profile's 10 chains",
    ("vi_alignment_timings", "paper-4widths-16samples"): "1 of our paper profile's 3 posterior pairs, and 100 of the "
                                                         "paper's 1,000 training epochs (all 4 of our paper "
                                                         "profile's widths, from 128 to 1,024, where the paper "
                                                         "states only 512)",
}

#: paper-profile runs (label ``"paper"``) known to be at the paper's scale (stand-in
#: experiments excepted)
PAPER_RUNS: frozenset[str] = frozenset({
    "ensemble", "vi", "rebasin_barriers", "not_paths", "not_sweep", "toy_perceptrons",
    "functional_collapse", "vi_alignment", "vi_alignment_cifar10", "compact_representation", "laurent_posteriors",
    "hmc", "vi_alignment_resnet20", "vi_alignment_resnet20_cifar100", "rn18_collapse_cifar100",
    "rn18_collapse_tiny_imagenet", "rn18_posteriors_cifar100", "rn18_posteriors_tiny_imagenet", "hmc_pieces",
    "mlp_map_pair", "optunet_bank", "posterior_samples", "rn18_bank_cifar100", "rn18_bank_tiny_imagenet",
    "rn18_swaps_cifar100",
    # the paper profile's bank: 1,248 OptuNets of the authors' recipe (1,120 and 128 more), for the paper's 1,000
    # reference checkpoints and 100 ensemble members among the converged ones
    "bank_min_mass",
})

#: experiments whose every profile runs the paper's setting (their cache config ignores the
#: profile; tests/experiments/test_scales.py checks it): paper scale in the quick profile too
SAME_IN_EVERY_PROFILE: frozenset[str] = frozenset({
    "toy_perceptrons",  # Fig. 1 / App. A: the paper's 10,000 2-2-1 perceptrons, seconds on a CPU
})

#: HMC samples of Xiao et al. (App. A: "In total, we generated 1000 HMC samples")
HMC_PAPER_SAMPLES = 1_000


def _hmc_pieces(profile: str, record: Mapping[str, Any] | None) -> Scale | None:
    """The pieced HMC run's scale from its progress: the samples kept over all chains against
    the paper's 1,000."""
    if record is None:
        return None
    summary = record.get("summary", record)
    kept = summary.get("progress", {}).get("num_kept")
    chains = len(summary.get("diagnostics", {}).get("step_size", []) or [])
    if kept is None or not chains:
        return None
    total = kept * chains
    if total >= HMC_PAPER_SAMPLES:
        return Scale(PAPER)
    return Scale(REDUCTION, f"{total:,} of the paper's {HMC_PAPER_SAMPLES:,} HMC samples ({chains} chains x {kept})")


#: experiments whose scale is read from the saved record (e.g. a run saved while incomplete)
FROM_RECORD: dict[str, Callable[[str, Mapping[str, Any] | None], Scale | None]] = {"hmc_pieces": _hmc_pieces}


def scale_of(experiment: str, profile: str, record: Mapping[str, Any] | None = None) -> Scale:
    """The scale of the run of ``experiment`` with profile label ``profile``.

    Args:
        experiment: the experiment (or a saved result's name, e.g. ``"hmc_pieces"``).
        profile: ``"quick"``, ``"paper"`` or a labelled reduction (``"paper-16nets"``).
        record: the saved record (from :func:`symlib.experiments.judging.results.load`), for runs
            whose size is read from it.

    Returns:
        The :class:`Scale`.

    Raises:
        KeyError: for a run the registry does not know (register it here), e.g. a labelled
            reduction of a stand-in experiment missing from :data:`REDUCTIONS`.
    """
    stand_in = STAND_INS.get(experiment) or PROFILE_STAND_INS.get((experiment, profile))
    if profile == "quick" and experiment in SAME_IN_EVERY_PROFILE and not stand_in:
        return Scale(PAPER)
    if profile == "quick":  # otherwise the run's own label decides the kind: a quick run is a quick miniature
        return Scale(QUICK, stand_in=stand_in or "")
    reduced = REDUCTIONS.get((experiment, profile), "")
    if stand_in and (reduced or profile == "paper"):
        return Scale(STAND_IN, reduced, stand_in)
    if reduced:
        return Scale(REDUCTION, reduced)
    if experiment in FROM_RECORD:
        found = FROM_RECORD[experiment](profile, record)
        if found is not None:
            return found
    if profile == "paper" and experiment in PAPER_RUNS:
        return Scale(PAPER)
    raise KeyError(f"no scale registered for the {profile!r} run of {experiment!r}: add it to "
                   "symlib.experiments.judging.scales (REDUCTIONS, STAND_INS or PAPER_RUNS)")


def scale_label(experiment: str, profile: str, record: Mapping[str, Any] | None = None) -> str:
    """:func:`scale_of`'s label (``"labelled reduction: 16 of the paper's 1,000 networks"``)."""
    return scale_of(experiment, profile, record).label
