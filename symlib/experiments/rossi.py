"""Experiments of Rossi et al. (2023), "Permutation invariance of variational
posteriors", and the paper's reference claims.

Registered experiments: ``vi_alignment`` (Sec. 5.1): two mean-field VI MLPs per width and
dataset, Wasserstein alignment, and the marginalised loss along the W2 geodesic, naive
and aligned (:func:`symlib.experiments.run` returns a :class:`VIAlignmentResult`); and
``vi_alignment_timings`` (App. C, Fig. A2): the wall time of aligning those trained
posteriors, beside weight matching of their means (a :class:`VIAlignmentTimings`); and
``vi_alignment_resnet20`` (Sec. 5.1): the same as ``vi_alignment`` for ResNet20 with
LayerNorm, on CIFAR-10 in the paper profile and on Fashion-MNIST as the quick stand-in.

The paper's claims about them are registered with :func:`symlib.experiments.claims.claim`
at the end of the module: alignment lowers every barrier and removes at least half of it,
barriers fall as width grows (Sec. 5.1), and the timing statements of App. C.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.experiments.cache import cached_steps
from symlib.experiments.claims import claim, difference
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import ExperimentResult, data_config, load_align_data, pick, register, run

#: App. B, Table 1: mean-field VI settings of the MLP experiments (initial standard
#: deviation, batch size, temperature of the posterior).
ROSSI_VI_SETTINGS = {"std_init": 0.01, "batch_size": 500, "temperature": 1.0}

#: App. B, Table 1 as far as the text extraction we have keeps it (its columns are
#: scrambled): the MNIST MLP column ends with a learning rate printed as 0.0000001 and
#: 1000 training epochs; the other columns print 0.000001. Quoted in notebook 07 beside
#: our ``align_epochs`` and Adam learning rate, with that caveat.
ROSSI_TRAINING_AS_EXTRACTED = {"learning_rate": "0.0000001 (MNIST MLP column; 0.000001 in the others)",
                               "epochs": "1000 (MNIST MLP column)"}

#: Repeats of each timing in ``vi_alignment_timings``; the minimum is kept (the least
#: disturbed by other processes on the machine). A module constant, not a profile field.
#: Both wall time and the process's CPU time (all its threads) are recorded: on a shared
#: machine the CPU time measures the work done, the wall time includes waiting.
TIMING_REPEATS = 5

#: App. C, Fig. A2 (a figure without numbers): notebook 08.
ROSSI_APPC_CLAIMS = {
    "within_a_minute": "in the majority of cases the alignment completes within a minute (8 x A100 machines)",
    "vi_costlier_than_sgd": "for wide networks, aligning VI solutions is more demanding than matching SGD weights",
    "time_vs_width": "profiled against the model width (Fig. A2)",
}

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


def _widths_of(per_width: Mapping[str, Any]) -> list[int]:
    return sorted(int(w.removeprefix("w")) for w in per_width)


def _align_summary(res: dict[str, Any]) -> dict[str, Any]:
    """``widths[dataset]`` (increasing), and ``marginal`` / ``midpoint`` barriers as
    ``[dataset][split][kind]``: one float per width, kind ``"naive"`` or ``"aligned"``."""
    out: dict[str, Any] = {"widths": {}, "marginal": {}, "midpoint": {}}
    for ds, per_w in res.items():
        widths = _widths_of(per_w)
        out["widths"][ds] = widths
        for which in ("marginal", "midpoint"):
            out[which][ds] = {split: {kind: [float(per_w[f"w{w}"]["barrier"][which][f"{split} {kind}"]) for w in widths]
                                      for kind in ("naive", "aligned")} for split in SPLITS}
    return out


def align_and_compare(spec, q0, q1, evals, profile: Profile, *, taus: int | None = None,
                      num_samples: int | None = None, **curve_kwargs) -> dict[str, Any]:
    """Align ``q1`` to ``q0`` (:func:`symlib.symmetry.alignment.wasserstein_alignment`) and
    compute the marginalised loss along the W2 geodesic, naive and aligned, on every split.

    Args:
        spec: the architecture's permutation spec.
        q0: ``(mu, sigma)`` of the first posterior.
        q1: ``(mu, sigma)`` of the second.
        evals: split name -> ``(x, y)``.
        profile: the run profile (``n_lambdas`` points, ``align_samples`` samples per point).
        taus: points on the geodesic, in place of ``profile.n_lambdas``.
        num_samples: Monte-Carlo samples per point, in place of ``profile.align_samples``.
        **curve_kwargs: passed to :func:`symlib.evaluation.interpolation.marginal_loss_curve`
            (``apply_fn``, ``batch_size``).

    Returns:
        ``curves`` and ``barrier`` (``marginal``, ``midpoint``) keyed ``"<split> naive"`` /
        ``"<split> aligned"``, and ``alignment_seconds``.
    """
    import time

    from symlib.evaluation.interpolation import marginal_barrier, marginal_loss_curve, midpoint_barrier
    from symlib.symmetry.alignment import apply_alignment, wasserstein_alignment

    start = time.perf_counter()
    match = wasserstein_alignment(jax.random.key(0), spec, q0, q1)
    seconds = time.perf_counter() - start
    q1_aligned = apply_alignment(spec, match.perms, q1)
    curves: dict[str, Any] = {}
    barrier: dict[str, dict[str, float]] = {"marginal": {}, "midpoint": {}}
    for split, (x, y) in evals.items():
        for name, target in (("naive", q1), ("aligned", q1_aligned)):
            c = marginal_loss_curve(jax.random.key(7), q0, target, x, y, taus=taus or profile.n_lambdas,
                                    num_samples=num_samples or profile.align_samples, **curve_kwargs)
            curves[f"{split} {name}"] = c
            barrier["marginal"][f"{split} {name}"] = marginal_barrier(c)
            barrier["midpoint"][f"{split} {name}"] = midpoint_barrier(c)
    return {"curves": curves, "barrier": barrier, "alignment_seconds": seconds}


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
        ``alignment_seconds``, ``elbo_final`` and ``posteriors`` (the fitted ``mu0``,
        ``sigma0``, ``mu1``, ``sigma1``, in the MLP's parameter layout, for
        ``vi_alignment_timings``).
    """
    from symlib.inference.vi import fit_mlp_vi
    from symlib.symmetry.specs import mlp_permutation_spec

    spec = mlp_permutation_spec(profile.align_depth)
    data_of = functools.lru_cache(maxsize=1)(lambda dataset: load_align_data(profile, dataset))

    def step(item: tuple[str, int]) -> dict[str, Any]:
        dataset, width = item
        d = data_of(dataset)
        evals = {s: (d[f"x_{s}"][: profile.align_n_eval], d[f"y_{s}"][: profile.align_n_eval]) for s in SPLITS}
        sizes = [d["x_train"].shape[1], *[width] * profile.align_depth, 10]
        fits = [fit_mlp_vi(jax.random.key(100 * seed + width), sizes, d["x_train"], d["y_train"],
                           prior_var=profile.align_prior_var, std_init=ROSSI_VI_SETTINGS["std_init"],
                           epochs=profile.align_epochs, batch_size=ROSSI_VI_SETTINGS["batch_size"],
                           learning_rate=profile.learning_rate, temperature=ROSSI_VI_SETTINGS["temperature"])
                for seed in (0, 1)]
        q0, q1 = (fits[0].mu, fits[0].sigma), (fits[1].mu, fits[1].sigma)
        return {**align_and_compare(spec, q0, q1, evals, profile),
                "elbo_final": np.asarray([f.elbo_history[-1] for f in fits]),
                "posteriors": jax.tree.map(np.asarray, {"mu0": q0[0], "sigma0": q0[1], "mu1": q1[0], "sigma1": q1[1]})}

    # one step per (dataset, width), each kept in the artifact cache: a killed run resumes
    items = [(dataset, int(width)) for dataset in ALIGN_DATASETS for width in profile.align_widths]
    out: dict[str, Any] = {dataset: {} for dataset in ALIGN_DATASETS}
    for (dataset, width), entry in zip(items, cached_steps("vi_alignment", _align_config(profile), items, step,
                                                           label=list)):
        out[dataset][f"w{width}"] = entry
    return out


# ------------------------------------------------------------------ ResNet20 (Sec. 5.1, CIFAR-10)


def _resnet_config(profile: Profile) -> dict[str, Any]:
    keys = ("resnet_dataset", "resnet_widths", "resnet_n_train", "resnet_epochs", "resnet_batch_size",
            "resnet_n_eval", "resnet_n_lambdas", "resnet_samples", "align_prior_var", "learning_rate")
    return {"data_source": profile.data_source, **{k: getattr(profile, k) for k in keys}}


def load_resnet_data(profile: Profile) -> dict[str, np.ndarray]:
    """The images of the ResNet20 experiment: NHWC float32 in [0, 1].

    ``profile.resnet_dataset`` is ``"cifar10"`` (the paper; :func:`symlib.data.load_cifar10`,
    which finds, verifies or downloads the archive and says where it looked when it cannot)
    or ``"fashion_mnist"`` (the quick stand-in: the profile's split, 28x28x1). The first
    ``resnet_n_train`` training and ``resnet_n_eval`` test images are kept.

    Args:
        profile: the run profile.

    Returns:
        ``x_train``, ``y_train``, ``x_test``, ``y_test``.

    Raises:
        ValueError: for another dataset.
    """
    from symlib.core.cnn import as_images

    ds = profile.resnet_dataset
    if ds == "cifar10":
        from symlib import data
        (xtr, ytr), (xte, yte) = data.load_cifar10("train"), data.load_cifar10("test")
        xtr, xte = (np.asarray(a, np.float32) / np.float32(255.0) for a in (xtr, xte))
    elif ds == "fashion_mnist":
        d = load_align_data(profile, ds)
        xtr, ytr, xte, yte = (np.asarray(as_images(d["x_train"])), d["y_train"], np.asarray(as_images(d["x_test"])),
                              d["y_test"])
    else:
        raise ValueError(f"resnet_dataset must be 'cifar10' or 'fashion_mnist', got {ds!r}")
    n, m = profile.resnet_n_train, profile.resnet_n_eval
    return {"x_train": xtr[:n], "y_train": np.asarray(ytr[:n], np.int32),
            "x_test": xte[:m], "y_test": np.asarray(yte[:m], np.int32)}


def resnet20_loglik(params, xb, yb):
    """Categorical log-likelihood of ResNet20 (:func:`symlib.core.resnet.resnet20_apply`), summed over the batch."""
    import jax.numpy as jnp

    from symlib.core.resnet import resnet20_apply

    logp = jax.nn.log_softmax(resnet20_apply(params, xb), axis=-1)
    return jnp.sum(jnp.take_along_axis(logp, yb[:, None].astype(jnp.int32), axis=-1))


@register("vi_alignment_resnet20", _resnet_config,
          "Rossi et al. Sec. 5.1: two mean-field VI ResNet20 (LayerNorm) per width, Wasserstein alignment through "
          "the ResNet20 permutation spec, marginalised barriers (CIFAR-10; Fashion-MNIST as the quick stand-in)",
          summary=lambda res: _align_summary(res), result=VIAlignmentResult)
def vi_alignment_resnet20(profile: Profile) -> dict[str, Any]:
    """:func:`vi_alignment` for ResNet20 with LayerNorm: per width in ``resnet_widths``, two
    VI fits (Bayes by backprop, ``resnet_epochs`` epochs), their Wasserstein alignment and
    the marginalised loss along the W2 geodesic on ``resnet_n_eval`` training and test
    images, naive and aligned.

    Args:
        profile: the run profile (``resnet_*`` and ``align_*`` settings).

    Returns:
        The artifact, in the layout of :func:`vi_alignment`: ``artifact[dataset]["w<width>"]``
        with ``curves``, ``barrier``, ``alignment_seconds``, ``elbo_final`` (and no posteriors).
    """
    from symlib.core.resnet import resnet20_apply, resnet20_init
    from symlib.inference.vi import fit_vi
    from symlib.symmetry.architectures import resnet20_permutation_spec

    d = load_resnet_data(profile)
    spec = resnet20_permutation_spec()
    channels = d["x_train"].shape[-1]
    m = profile.resnet_n_eval
    evals = {"train": (d["x_train"][:m], d["y_train"][:m]), "test": (d["x_test"], d["y_test"])}

    def step(width: int) -> dict[str, Any]:
        fits = [fit_vi(jax.random.key(100 * seed + width), resnet20_init(jax.random.key(1000 + 100 * seed + width),
                                                                          width, 10, channels),
                       resnet20_loglik, d["x_train"], d["y_train"], prior_var=profile.align_prior_var,
                       std_init=ROSSI_VI_SETTINGS["std_init"], epochs=profile.resnet_epochs,
                       batch_size=profile.resnet_batch_size, learning_rate=profile.learning_rate,
                       temperature=ROSSI_VI_SETTINGS["temperature"], loop="python")
                for seed in (0, 1)]
        q0, q1 = (fits[0].mu, fits[0].sigma), (fits[1].mu, fits[1].sigma)
        return {**align_and_compare(spec, q0, q1, evals, profile, taus=profile.resnet_n_lambdas,
                                    num_samples=profile.resnet_samples, apply_fn=resnet20_apply, batch_size=500),
                "elbo_final": np.asarray([f.elbo_history[-1] for f in fits])}

    # one step per width, each kept in the artifact cache: a killed run resumes
    widths = [int(w) for w in profile.resnet_widths]
    steps = cached_steps("vi_alignment_resnet20", _resnet_config(profile), widths, step)
    out = {f"w{width}": entry for width, entry in zip(widths, steps)}
    return {profile.resnet_dataset: out}


# ------------------------------------------------------------------ timings (App. C, Fig. A2)


@dataclass(frozen=True, eq=False)
class VIAlignmentTimings(ExperimentResult):
    """``vi_alignment_timings``: seconds to align the trained posteriors of ``vi_alignment``.

    Attributes:
        widths: ``widths[dataset]``, increasing.
        table: ``table[dataset][column]``, one value per width; columns ``w2_seconds``
            (Wasserstein alignment of ``(mu, sigma)``), ``wm_seconds`` (weight matching of
            the means alone), wall times; ``w2_cpu_seconds``, ``wm_cpu_seconds``, the same
            as process CPU time; ``w2_sweeps``, ``wm_sweeps``, ``w2_sq_identity`` and
            ``w2_sq`` (squared W2 distance before and after alignment).
    """

    widths: dict[str, list[int]]
    table: dict[str, dict[str, np.ndarray]]

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> VIAlignmentTimings:
        """Build from the cached artifact (``artifact[dataset][column]``, ``artifact["widths"]``).

        Args:
            artifact: the experiment's nested dict.

        Returns:
            The typed result.
        """
        widths = {ds: [int(w) for w in np.asarray(ws)] for ds, ws in artifact["widths"].items()}
        table = {ds: {k: np.asarray(v) for k, v in cols.items()} for ds, cols in artifact["table"].items()}
        return cls(artifact=artifact, widths=widths, table=table)

    def column(self, dataset: str, name: str) -> np.ndarray:
        """One column of the timing table, one value per width.

        Args:
            dataset: one of ``ALIGN_DATASETS``.
            name: ``w2_seconds``, ``wm_seconds``, ``w2_cpu_seconds``, ``wm_cpu_seconds``,
                ``w2_sweeps``, ``wm_sweeps``,
                ``w2_sq_identity`` or ``w2_sq``.

        Returns:
            The values, in the order of ``widths[dataset]``.

        Raises:
            ValueError: for a dataset that was not run or an unknown column.
        """
        return pick(pick(self.table, dataset, "dataset"), name, "column")


def _min_time(fn, repeats: int) -> tuple[float, float, Any]:
    """Minimum wall time, minimum process CPU time, and the last output of ``fn()``."""
    import time

    wall, cpu, out = np.inf, np.inf, None
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return float(wall), float(cpu), out


def time_alignments(posteriors: Mapping[int, Mapping[str, Any]], depth: int,
                    repeats: int = TIMING_REPEATS) -> dict[str, list]:
    """Wall time of Wasserstein alignment and of weight matching of the means, per width.

    Each call is timed ``repeats`` times and the minimum kept, of the wall time and of the
    process's CPU time (summed over its threads). Both matchings start from
    the identity with the same sweep-order key (0) and at most 100 sweeps.

    Args:
        posteriors: ``posteriors[width]`` holds ``mu0``, ``sigma0``, ``mu1``, ``sigma1`` of
            an MLP with ``depth`` hidden layers.
        depth: number of hidden layers.
        repeats: timings per call (at least 1).

    Returns:
        Lists, one entry per width (increasing): ``width``, ``w2_seconds``, ``wm_seconds``
        (wall), ``w2_cpu_seconds``, ``wm_cpu_seconds`` (CPU), ``w2_sweeps``, ``wm_sweeps``,
        ``w2_sq_identity``, ``w2_sq``.

    Raises:
        ValueError: if ``repeats`` < 1 or ``posteriors`` is empty.
    """
    from symlib.symmetry.alignment import wasserstein_alignment
    from symlib.symmetry.matching import weight_matching
    from symlib.symmetry.specs import mlp_permutation_spec

    if int(repeats) < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats!r}")
    if not posteriors:
        raise ValueError("posteriors is empty: no width to time")
    spec = mlp_permutation_spec(depth)
    out: dict[str, list] = {k: [] for k in ("width", "w2_seconds", "wm_seconds", "w2_cpu_seconds", "wm_cpu_seconds",
                                            "w2_sweeps", "wm_sweeps", "w2_sq_identity", "w2_sq")}
    for width in sorted(posteriors):
        q = posteriors[width]
        q0, q1 = (q["mu0"], q["sigma0"]), (q["mu1"], q["sigma1"])
        w2_s, w2_cpu, w2 = _min_time(lambda: wasserstein_alignment(0, spec, q0, q1), int(repeats))
        wm_s, wm_cpu, wm = _min_time(lambda: weight_matching(0, spec, q["mu0"], q["mu1"]), int(repeats))
        for k, v in (("width", int(width)), ("w2_seconds", w2_s), ("wm_seconds", wm_s), ("w2_cpu_seconds", w2_cpu),
                     ("wm_cpu_seconds", wm_cpu), ("w2_sweeps", w2.sweeps),
                     ("wm_sweeps", wm.sweeps), ("w2_sq_identity", float(w2.info["w2_sq_identity"])),
                     ("w2_sq", float(w2.info["w2_sq"]))):
            out[k].append(v)
    return out


def _timings_config(profile: Profile) -> dict[str, Any]:
    return {**_align_config(profile), "timing_repeats": TIMING_REPEATS}


def _timings_summary(res: dict[str, Any]) -> dict[str, Any]:
    """``widths[dataset]`` and ``table[dataset][column]`` as lists of floats."""
    return {"widths": {ds: [int(w) for w in np.asarray(ws)] for ds, ws in res["widths"].items()},
            "table": {ds: {k: [float(x) for x in np.asarray(v)] for k, v in cols.items()}
                      for ds, cols in res["table"].items()},
            "repeats": int(res["repeats"])}


@register("vi_alignment_timings", _timings_config,
          "Rossi et al. App. C: seconds to align the trained VI posteriors of vi_alignment, and to match their means",
          summary=_timings_summary, result=VIAlignmentTimings)
def vi_alignment_timings(profile: Profile) -> dict[str, Any]:
    """Time the alignment of the trained posterior pairs of ``vi_alignment``.

    Args:
        profile: the run profile (its ``vi_alignment`` run is loaded or computed).

    Returns:
        The artifact: ``widths[dataset]``, ``table[dataset][column]`` (columns of
        :func:`time_alignments`) and ``repeats``.
    """
    pairs = run("vi_alignment", profile, verbose=False).artifact
    out: dict[str, Any] = {"widths": {}, "table": {}, "repeats": TIMING_REPEATS}
    for dataset, per_width in pairs.items():
        t = time_alignments({int(w.removeprefix("w")): e["posteriors"] for w, e in per_width.items()},
                            profile.align_depth)
        out["widths"][dataset] = np.asarray(t.pop("width"))
        out["table"][dataset] = {k: np.asarray(v) for k, v in t.items()}
    return out


# ----------------------------------------------------------------------------- claims
#
# Fixed from the paper's text before looking at our numbers. Rossi et al. give their
# barriers and timings as figures without numbers, so the readings are qualitative:
# "removes the barrier" is read as in Xiao et al.'s claim (symlib.experiments.xiao),
# "removes at least half of it"; "wider models provide lower barriers" as "the barrier
# at the widest width is below that at the narrowest, and its least-squares slope against
# log2(width) is negative" (the paper says "generally", not "at every step").

_SEC51 = "Rossi et al. (2023), Sec. 5.1"


def _fmt(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def _falls_with_width(widths: Sequence[int], values: Sequence[float]) -> bool:
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return False
    slope = np.polyfit(np.log2(np.asarray(widths, dtype=float)), values, 1)[0]
    return bool(values[-1] < values[0] and slope < 0)


def _check_summary_keys(summary: Mapping[str, Any], keys: Sequence[str], experiment: str) -> None:
    missing = [k for k in keys if k not in summary]
    if missing:
        raise ValueError(f"summary of {experiment!r} lacks {missing} (has {sorted(summary)})")


@claim("vi_alignment", "alignment_lowers_every_barrier", f"{_SEC51}; poster",
       "loss barriers always appear between two VI solutions, and alignment lowers them "
       "(MLPs, MNIST and Fashion-MNIST)")
def _alignment_lowers_every_barrier(summary: Mapping[str, Any]) -> tuple[bool, str]:
    """Naive barrier > 0 and aligned < naive, for every dataset, width and split."""
    _check_summary_keys(summary, ("widths", "marginal"), "vi_alignment")
    holds, worst = True, []
    for ds, per_split in summary["marginal"].items():
        for split, b in per_split.items():
            naive, aligned = np.asarray(b["naive"]), np.asarray(b["aligned"])
            holds &= bool(np.all(naive > 0) and np.all(aligned < naive))
            worst.append(float(np.max(aligned / naive)))
    return holds, f"largest aligned / naive ratio {max(worst):.3f} over {len(worst)} dataset-split pairs"


def _removes_barrier(dataset: str):
    def check(summary: Mapping[str, Any]) -> tuple[bool, str]:
        _check_summary_keys(summary, ("widths", "marginal"), "vi_alignment")
        b = pick(summary["marginal"], dataset, "dataset")
        widest = max(summary["widths"][dataset])
        parts, holds = [], True
        for split in SPLITS:
            naive, aligned = b[split]["naive"][-1], b[split]["aligned"][-1]
            holds &= aligned < 0.5 * naive
            parts.append(f"{split}: {naive:.3f} naive -> {aligned:.3f} aligned ({aligned / naive:.2f})")
        return holds, f"width {widest}: " + "; ".join(parts)
    return check


def _falls(dataset: str):
    def check(summary: Mapping[str, Any]) -> tuple[bool, str]:
        _check_summary_keys(summary, ("widths", "marginal"), "vi_alignment")
        widths = summary["widths"][dataset]
        b = pick(summary["marginal"], dataset, "dataset")
        holds, parts = True, []
        for split in SPLITS:
            for kind in ("naive", "aligned"):
                ok = _falls_with_width(widths, b[split][kind])
                holds &= ok
                parts.append(f"{split} {kind} {_fmt(b[split][kind])}{'' if ok else ' (does not fall)'}")
        return holds, f"widths {', '.join(map(str, widths))}: " + "; ".join(parts)
    return check


for _ds, _label in (("mnist", "MNIST"), ("fashion_mnist", "Fashion-MNIST")):
    claim("vi_alignment", f"alignment_removes_barrier_{_ds}", _SEC51,
          f"{_label} MLP: after alignment the barrier is (nearly) zero; read as: at the widest width the "
          "aligned barrier is below half the naive one (train and test)")(_removes_barrier(_ds))
    claim("vi_alignment", f"barrier_falls_with_width_{_ds}", _SEC51,
          f"{_label} MLP: wider models provide lower barriers, with and without alignment (train and test)")(
        _falls(_ds))

claim("vi_alignment_resnet20", "alignment_lowers_every_barrier", f"{_SEC51}; poster",
      "ResNet20: a loss barrier appears between two VI solutions and alignment lowers it "
      "(nearly zero on CIFAR-10 in the paper)")(_alignment_lowers_every_barrier)

_APPC = "Rossi et al. (2023), App. C, Fig. A2"


@claim("vi_alignment_timings", "within_a_minute", _APPC,
       "in the majority of cases the alignment completes within a minute")
def _within_a_minute(summary: Mapping[str, Any]) -> tuple[bool, str]:
    """More than half of the (dataset, width) alignments take under 60 s."""
    _check_summary_keys(summary, ("widths", "table"), "vi_alignment_timings")
    secs = np.concatenate([np.asarray(c["w2_seconds"], dtype=float) for c in summary["table"].values()])
    under = int(np.sum(secs < 60.0))
    return under > len(secs) / 2, f"{under} of {len(secs)} under 60 s (longest {secs.max():.2f} s)"


@claim("vi_alignment_timings", "time_grows_with_width", _APPC,
       "aligning wider networks is more demanding: the alignment time grows with the width")
def _time_grows_with_width(summary: Mapping[str, Any]) -> tuple[bool, str]:
    """Strictly increasing over the widths, on each dataset (CPU time, minimum of the repeats)."""
    _check_summary_keys(summary, ("widths", "table"), "vi_alignment_timings")
    holds, parts = True, []
    for ds, cols in summary["table"].items():
        secs = np.asarray(cols["w2_cpu_seconds"], dtype=float)
        holds &= bool(np.all(np.diff(secs) > 0))
        parts.append(f"{ds}: " + ", ".join(f"{s:.3f}" for s in secs) + " s CPU")
    return holds, "; ".join(parts)


@claim("vi_alignment_timings", "vi_costlier_than_weight_matching", _APPC,
       "for wide networks, aligning VI solutions is more demanding than matching weights of SGD solutions "
       "(ours: matching the VI means)")
def _vi_costlier(summary: Mapping[str, Any]) -> tuple[bool, str]:
    """At the widest width of each dataset, W2 alignment takes more CPU time than weight matching."""
    _check_summary_keys(summary, ("widths", "table"), "vi_alignment_timings")
    holds, parts = True, []
    for ds, cols in summary["table"].items():
        w2, wm = float(cols["w2_cpu_seconds"][-1]), float(cols["wm_cpu_seconds"][-1])
        holds &= w2 > wm
        parts.append(f"{ds} width {summary['widths'][ds][-1]}: {w2:.3f} s vs {wm:.3f} s CPU ({w2 / wm:.2f}x)")
    return holds, "; ".join(parts)


# What the reduced paper-scale run found (chapters 07 and 08 show the numbers): registered so
# that tests/test_claims.py accepts exactly these failures on the saved files.
_REDUCED = "paper-4widths-16samples"
difference("vi_alignment", _REDUCED, "barrier_falls_with_width_mnist",
           "at the paper's widths and 100 epochs on 50,000 images the aligned barrier falls with width as the "
           "paper says (train 0.061, 0.050, 0.031, 0.042 nats at widths 128 to 1,024: the fitted slope is "
           "negative), but the naive one grows (train 1.78, 1.84, 1.97, 2.37), so 'with and without alignment' "
           "holds only with it; our posteriors have a tenth of the paper's training steps, and the paper's 128 "
           "samples on 10,000 images were beyond this CPU run")
difference("vi_alignment", _REDUCED, "barrier_falls_with_width_fashion_mnist",
           "the aligned barrier falls from width 128 to 512 (train 0.110, 0.075, 0.044 nats) and then rises at "
           "1,024 (0.128), and the naive one grows at every doubling (1.65, 1.71, 1.74, 2.08), so neither "
           "trend is negative; with a tenth of the paper's training steps the widest posteriors fit worst (ELBO "
           "per example -0.76 at width 128, -1.09 at 1,024), which is the likely reason")
difference("vi_alignment_timings", _REDUCED, "vi_costlier_than_weight_matching",
           "at width 1,024 aligning the VI posteriors took less CPU time than matching their means (9.5 vs 13.8 s "
           "on MNIST, 8.0 vs 9.4 s on Fashion-MNIST; one timing each on an idle 2-core CPU): the two take "
           "similar numbers of coordinate-descent sweeps (29 vs 34, 18 vs 18), so the Wasserstein cost's extra "
           "arrays do not make it the more demanding one here")
