"""Experiments of Rossi et al. (2023), "Permutation invariance of variational
posteriors", and the paper's reference claims.

Registered experiment: ``vi_alignment`` (Sec. 5.1): two mean-field VI MLPs per width and
dataset, Wasserstein alignment, and the marginalised loss along the W2 geodesic, naive
and aligned. :func:`symlib.experiments.run` returns a :class:`VIAlignmentResult`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.experiments.profiles import Profile
from symlib.experiments.registry import ExperimentResult, data_config, load_align_data, pick, register

#: App. B, Table 1: mean-field VI settings of the MLP experiments (initial standard
#: deviation, batch size, temperature of the posterior).
ROSSI_VI_SETTINGS = {"std_init": 0.01, "batch_size": 500, "temperature": 1.0}

#: Sec. 5.1 (3 x 512 MLPs, Table 2; the numbers are in figures we do not have): after
#: Wasserstein alignment the barriers between VI solutions are nearly zero for MLPs, and
#: wider models have lower barriers: notebook 07.
ROSSI_SEC51_CLAIMS = {
    "alignment_lowers_barrier": "yes",
    "mnist_aligned_barrier": "nearly zero barrier",
    "fashion_mnist_aligned_barrier": "nearly zero (MLPs)",
    "barrier_decreases_with_width": "yes",
}

ALIGN_DATASETS = ("mnist", "fashion_mnist")
SPLITS = ("train", "test")


def _kind(aligned: bool) -> str:
    return "aligned" if aligned else "naive"


@dataclass(frozen=True, eq=False)
class AlignedVIPair:
    """Two VI posteriors of one width on one dataset, aligned by the Wasserstein cost.

    Attributes:
        curves: ``curves[(split, aligned)]`` is a dict of arrays ``tau``, ``loss`` and
            ``accuracy`` of the marginalised loss along the W2 geodesic.
        marginal: ``marginal[(split, aligned)]``, the barrier of that curve (nats).
        midpoint: ``midpoint[(split, aligned)]``, the barrier at tau = 0.5 (nats).
        alignment_seconds: wall time of the alignment.
        elbo_final: final ELBO of the two fits.
    """

    curves: dict[tuple[str, bool], dict[str, np.ndarray]]
    marginal: dict[tuple[str, bool], float]
    midpoint: dict[tuple[str, bool], float]
    alignment_seconds: float
    elbo_final: np.ndarray

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> AlignedVIPair:
        """Build from one ``artifact[dataset]["w<width>"]`` entry.

        Args:
            entry: the stored curves, barriers, timing and ELBOs.

        Returns:
            The typed pair.
        """
        keys = {(split, aligned): f"{split} {_kind(aligned)}" for split in SPLITS for aligned in (False, True)}
        barrier = entry["barrier"]
        return cls(curves={k: entry["curves"][name] for k, name in keys.items()},
                   marginal={k: np.float64(barrier["marginal"][name]) for k, name in keys.items()},
                   midpoint={k: np.float64(barrier["midpoint"][name]) for k, name in keys.items()},
                   alignment_seconds=np.float64(entry["alignment_seconds"]), elbo_final=entry["elbo_final"])

    def curve(self, *, split: str, aligned: bool) -> dict[str, np.ndarray]:
        """The marginalised loss curve along the geodesic.

        Args:
            split: ``"train"`` or ``"test"``.
            aligned: after Wasserstein alignment (True) or naive (False).

        Returns:
            Dict of arrays ``tau``, ``loss`` and ``accuracy``.

        Raises:
            ValueError: for an unknown split.
        """
        return pick(self.curves, (split, bool(aligned)), "(split, aligned)")

    def marginal_barrier(self, *, split: str, aligned: bool) -> float:
        """The marginalised loss barrier, the largest excess over the straight line (nats).

        Args:
            split: ``"train"`` or ``"test"``.
            aligned: after Wasserstein alignment (True) or naive (False).

        Returns:
            The barrier.

        Raises:
            ValueError: for an unknown split.
        """
        return pick(self.marginal, (split, bool(aligned)), "(split, aligned)")

    def midpoint_barrier(self, *, split: str, aligned: bool) -> float:
        """The excess of the marginalised loss at tau = 0.5 over the straight line (nats).

        Args:
            split: ``"train"`` or ``"test"``.
            aligned: after Wasserstein alignment (True) or naive (False).

        Returns:
            The midpoint barrier.

        Raises:
            ValueError: for an unknown split.
        """
        return pick(self.midpoint, (split, bool(aligned)), "(split, aligned)")


@dataclass(frozen=True, eq=False)
class VIAlignmentResult(ExperimentResult):
    """``vi_alignment``: aligned VI posterior pairs by dataset and width.

    Attributes:
        pairs: ``pairs[dataset][width]``, datasets as in ``ALIGN_DATASETS``.
    """

    pairs: dict[str, dict[int, AlignedVIPair]]

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> VIAlignmentResult:
        """Build from the cached artifact (``artifact[dataset]["w<width>"]``).

        Args:
            artifact: the experiment's nested dict.

        Returns:
            The typed result.
        """
        pairs = {ds: {int(w.removeprefix("w")): AlignedVIPair.from_dict(entry) for w, entry in per_width.items()}
                 for ds, per_width in artifact.items()}
        return cls(artifact=artifact, pairs=pairs)

    def widths(self, dataset: str) -> list[int]:
        """The widths run on ``dataset``, increasing.

        Args:
            dataset: one of ``ALIGN_DATASETS``.

        Returns:
            The hidden widths.

        Raises:
            ValueError: for a dataset that was not run.
        """
        return sorted(pick(self.pairs, dataset, "dataset"))

    def run(self, dataset: str, width: int) -> AlignedVIPair:
        """The aligned pair of one dataset and width.

        Args:
            dataset: one of ``ALIGN_DATASETS``.
            width: one of the profile's ``align_widths``.

        Returns:
            The pair's curves, barriers and timing.

        Raises:
            ValueError: for a dataset or width that was not run.
        """
        return pick(pick(self.pairs, dataset, "dataset"), width, "width")


def _align_config(profile: Profile) -> dict[str, Any]:
    keys = ("align_widths", "align_depth", "align_epochs", "align_prior_var", "align_samples", "align_n_eval",
            "n_lambdas", "learning_rate")
    return {**data_config(profile), **{k: getattr(profile, k) for k in keys}}


def _align_summary(res: dict[str, Any]) -> dict[str, Any]:
    return {ds: {w: {k: {m: float(v) for m, v in b.items()} for k, b in r["barrier"].items()}
                 for w, r in per_w.items()} for ds, per_w in res.items()}


@register("vi_alignment", _align_config,
          "Rossi et al.: two mean-field VI MLPs per width and dataset, Wasserstein alignment, marginalised barriers",
          summary=_align_summary, result=VIAlignmentResult)
def vi_alignment(profile: Profile) -> dict[str, Any]:
    """Fit two VI posteriors per dataset and width, align them, and evaluate the barriers.

    Args:
        profile: the run profile (``align_*`` sizes).

    Returns:
        The artifact: ``artifact[dataset]["w<width>"]`` holds ``curves`` and ``barrier``
        (``marginal`` and ``midpoint``) under ``"<split> naive"`` / ``"<split> aligned"``,
        ``alignment_seconds`` and ``elbo_final``.
    """
    import time

    from symlib.inference.vi import fit_mlp_vi
    from symlib.evaluation.interpolation import marginal_barrier, marginal_loss_curve, midpoint_barrier
    from symlib.symmetry.alignment import apply_alignment, wasserstein_alignment
    from symlib.symmetry.specs import mlp_permutation_spec

    out: dict[str, Any] = {}
    spec = mlp_permutation_spec(profile.align_depth)
    for dataset in ALIGN_DATASETS:
        d = load_align_data(profile, dataset)
        evals = {s: (d[f"x_{s}"][: profile.align_n_eval], d[f"y_{s}"][: profile.align_n_eval]) for s in SPLITS}
        out[dataset] = {}
        for width in profile.align_widths:
            sizes = [d["x_train"].shape[1], *[width] * profile.align_depth, 10]
            fits = [fit_mlp_vi(jax.random.key(100 * seed + width), sizes, d["x_train"], d["y_train"],
                               prior_var=profile.align_prior_var, std_init=ROSSI_VI_SETTINGS["std_init"],
                               epochs=profile.align_epochs, batch_size=ROSSI_VI_SETTINGS["batch_size"],
                               learning_rate=profile.learning_rate, temperature=ROSSI_VI_SETTINGS["temperature"])
                    for seed in (0, 1)]
            q0, q1 = (fits[0].mu, fits[0].sigma), (fits[1].mu, fits[1].sigma)
            start = time.perf_counter()
            match = wasserstein_alignment(jax.random.key(0), spec, q0, q1)
            seconds = time.perf_counter() - start
            q1_aligned = apply_alignment(spec, match.perms, q1)
            curves: dict[str, Any] = {}
            barrier: dict[str, dict[str, float]] = {"marginal": {}, "midpoint": {}}
            for split, (x, y) in evals.items():
                for name, target in (("naive", q1), ("aligned", q1_aligned)):
                    c = marginal_loss_curve(jax.random.key(7), q0, target, x, y, taus=profile.n_lambdas,
                                            num_samples=profile.align_samples)
                    curves[f"{split} {name}"] = c
                    barrier["marginal"][f"{split} {name}"] = marginal_barrier(c)
                    barrier["midpoint"][f"{split} {name}"] = midpoint_barrier(c)
            out[dataset][f"w{width}"] = {"curves": curves, "barrier": barrier, "alignment_seconds": seconds,
                                         "elbo_final": np.asarray([f.elbo_history[-1] for f in fits])}
    return out
