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
LayerNorm, on CIFAR-10 in the paper profile and on Fashion-MNIST as the quick stand-in.

The paper's claims about them are registered with :func:`symlib.experiments.claims.claim`
at the end of the module, each returning Evidence over the independent units (posterior
pairs, repeated timings) against a threshold of :mod:`symlib.experiments.thresholds`:
alignment lowers every barrier and removes more than half of it, barriers fall as width
grows, the result holds across prior variances and temperatures, and for ResNet20 wider is
lower only after alignment (Sec. 5.1); and the timing statements of App. C.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.experiments.cache import cached_steps
from symlib.experiments.claims import (Evidence, Verdict, claim, worst, difference, interval_evidence, mean_of_units,
                                      not_tested, share_of_units)
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import ExperimentResult, data_config, load_align_data, pick, register, run
from symlib.experiments.thresholds import threshold

#: App. B, Table 1: mean-field VI settings of the MLP experiments (initial standard
#: deviation, batch size, temperature of the posterior).
ROSSI_VI_SETTINGS = {"std_init": 0.01, "batch_size": 500, "temperature": 1.0}

#: App. B, Table 1 as far as the text extraction we have keeps it (its columns are
#: scrambled): the MNIST MLP column ends with a learning rate printed as 0.0000001 and
#: 1000 training epochs; the other columns print 0.000001. Quoted in notebook 07 beside
#: our ``align_epochs`` and Adam learning rate, with that caveat.
ROSSI_TRAINING_AS_EXTRACTED = {"learning_rate": "0.0000001 (MNIST MLP column; 0.000001 in the others)",
                               "epochs": "1000 (MNIST MLP column)"}

#: Repeats of each timing in ``vi_alignment_timings``; every repeat is kept, the median
#: reported with the spread (:func:`symlib.evaluation.stats.repeat_spread`), and a timing
#: claim holds only when its difference exceeds the spread of the repeats. A module
#: constant, not a profile field. Both wall time and the process's CPU time (all its
#: threads) are recorded: on a shared machine the CPU time measures the work done, the
#: wall time includes waiting.
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


def _pair_entries(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The posterior pairs of one ``artifact[dataset]["w<width>"]`` entry, in order: one pair
    (an entry with a ``barrier``, as saved before replicates and by ``vi_alignment_resnet20``)
    or ``"pair<k>"`` entries, ``k = 0, 1, ...``."""
    if "barrier" in entry:
        return [entry]
    keys = sorted((k for k in entry if k.startswith("pair")), key=lambda k: int(k.removeprefix("pair")))
    if not keys:
        raise ValueError(f"an alignment entry needs 'barrier' or 'pair<k>' entries, got {sorted(entry)}")
    return [entry[k] for k in keys]


@dataclass(frozen=True, eq=False)
class VIAlignmentResult(ExperimentResult):
    """``vi_alignment``: aligned VI posterior pairs by dataset and width.

    Attributes:
        pairs: ``pairs[dataset][width]``, the independent posterior pairs of that dataset
            and width (``align_pairs`` of them), datasets as in ``ALIGN_DATASETS``.
    """

    pairs: dict[str, dict[int, list[AlignedVIPair]]]

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> VIAlignmentResult:
        """Build from the cached artifact (``artifact[dataset]["w<width>"]["pair<k>"]``, or
        one pair per width in the layout without replicates).

        Args:
            artifact: the experiment's nested dict.

        Returns:
            The typed result.
        """
        pairs = {ds: {int(w.removeprefix("w")): [AlignedVIPair.from_dict(e) for e in _pair_entries(entry)]
                      for w, entry in per_width.items()}
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

    def replicates(self, dataset: str, width: int) -> list[AlignedVIPair]:
        """Every independent posterior pair of one dataset and width.

        Raises:
            ValueError: for a dataset or width that was not run.
        """
        return pick(pick(self.pairs, dataset, "dataset"), width, "width")

    def run(self, dataset: str, width: int, pair: int = 0) -> AlignedVIPair:
        """One aligned pair of one dataset and width.

        Args:
            dataset: one of ``ALIGN_DATASETS``.
            width: one of the profile's ``align_widths``.
            pair: which of the independent pairs (0 to ``align_pairs - 1``).

        Returns:
            The pair's curves, barriers and timing.

        Raises:
            ValueError: for a dataset, width or pair that was not run.
        """
        reps = self.replicates(dataset, width)
        if not 0 <= int(pair) < len(reps):
            raise ValueError(f"pair must be in [0, {len(reps)}) for {dataset} width {width}, got {pair!r}")
        return reps[int(pair)]


def _align_config(profile: Profile) -> dict[str, Any]:
    keys = ("align_widths", "align_depth", "align_epochs", "align_prior_var", "align_samples", "align_n_eval",
            "align_pairs", "align_n_train", "n_lambdas", "learning_rate")
    return {**data_config(profile), **{k: getattr(profile, k) for k in keys}}


def _widths_of(per_width: Mapping[str, Any]) -> list[int]:
    return sorted(int(w.removeprefix("w")) for w in per_width)


def _align_summary(res: dict[str, Any]) -> dict[str, Any]:
    """``widths[dataset]`` (increasing); ``marginal`` / ``midpoint`` barriers as
    ``[dataset][split][kind]``, one float per width (the mean over the pairs), kind
    ``"naive"`` or ``"aligned"``; ``marginal_pairs[dataset][split][kind]``, one list per
    width with the barrier of every independent pair; ``elbo[dataset]`` (one list per
    width: the final per-example ELBO of each pair, the mean of its two fits) and
    ``endpoint_loss[dataset]`` (one list per width: each pair's test loss at tau = 0 and 1,
    averaged) and ``endpoint_accuracy[dataset]`` (the lower test accuracy of each pair's two
    model averages)."""
    out: dict[str, Any] = {"widths": {}, "marginal": {}, "midpoint": {}, "marginal_pairs": {}, "elbo": {},
                           "endpoint_loss": {}, "endpoint_accuracy": {}}
    for ds, per_w in res.items():
        widths = _widths_of(per_w)
        out["widths"][ds] = widths
        reps = {w: _pair_entries(per_w[f"w{w}"]) for w in widths}
        for which in ("marginal", "midpoint"):
            out[which][ds] = {split: {kind: [float(np.mean([e["barrier"][which][f"{split} {kind}"] for e in reps[w]]))
                                             for w in widths] for kind in ("naive", "aligned")} for split in SPLITS}
        out["marginal_pairs"][ds] = {
            split: {kind: [[float(e["barrier"]["marginal"][f"{split} {kind}"]) for e in reps[w]] for w in widths]
                    for kind in ("naive", "aligned")} for split in SPLITS}
        out["elbo"][ds] = [[float(np.mean(e["elbo_final"])) for e in reps[w]] for w in widths]
        out["endpoint_loss"][ds] = [[float(np.mean(np.asarray(e["curves"]["test naive"]["loss"])[[0, -1]]))
                                     for e in reps[w]] for w in widths]
        out["endpoint_accuracy"][ds] = [[float(np.min(np.asarray(e["curves"]["test naive"]["accuracy"])[[0, -1]]))
                                         for e in reps[w]] for w in widths]
    return out


def align_and_compare(spec, q0, q1, evals, profile: Profile, *, taus: int | None = None,
                      num_samples: int | None = None, curve_seed: int = 7, **curve_kwargs) -> dict[str, Any]:
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
        curve_seed: seed of the Monte-Carlo draws of the curves (one per independent pair).
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
            c = marginal_loss_curve(jax.random.key(curve_seed), q0, target, x, y, taus=taus or profile.n_lambdas,
                                    num_samples=num_samples or profile.align_samples, **curve_kwargs)
            curves[f"{split} {name}"] = c
            barrier["marginal"][f"{split} {name}"] = marginal_barrier(c)
            barrier["midpoint"][f"{split} {name}"] = midpoint_barrier(c)
    return {"curves": curves, "barrier": barrier, "alignment_seconds": seconds}


def _pair_seeds(pair: int) -> tuple[int, int]:
    """The two fit seeds of independent pair ``pair``: ``(2 pair, 2 pair + 1)`` (pair 0 is
    the seeds 0 and 1 of the runs without replicates)."""
    if int(pair) < 0:
        raise ValueError(f"pair must be >= 0, got {pair!r}")
    return 2 * int(pair), 2 * int(pair) + 1


def fit_and_align_pair(profile: Profile, data: Mapping[str, np.ndarray], width: int, pair: int, *,
                       prior_var: float | None = None, temperature: float | None = None) -> dict[str, Any]:
    """Fit the two VI posteriors of independent pair ``pair`` of an MLP of ``width`` units per
    hidden layer, align them and evaluate the marginalised curves (:func:`align_and_compare`).

    Args:
        profile: the run profile (``align_*`` sizes, ``learning_rate``; the first
            ``align_n_train`` training images are used, all of them when it is None).
        data: ``x_train``, ``y_train``, ``x_test``, ``y_test`` (flattened images).
        width: hidden width.
        pair: index of the pair; its fits use the seeds :func:`_pair_seeds` and its curves
            the Monte-Carlo seed ``7 + pair``.
        prior_var: prior variance (default ``profile.align_prior_var``).
        temperature: likelihood temperature (default the paper's, 1).

    Returns:
        As :func:`align_and_compare`, plus ``elbo_final`` (final per-example ELBO of the two
        fits) and ``posteriors`` (``mu0``, ``sigma0``, ``mu1``, ``sigma1``).
    """
    from symlib.inference.vi import fit_mlp_vi
    from symlib.symmetry.specs import mlp_permutation_spec

    evals = {s: (data[f"x_{s}"][: profile.align_n_eval], data[f"y_{s}"][: profile.align_n_eval]) for s in SPLITS}
    sizes = [data["x_train"].shape[1], *[int(width)] * profile.align_depth, 10]
    n = profile.align_n_train
    x_train, y_train = (data["x_train"], data["y_train"]) if n is None else (data["x_train"][:n], data["y_train"][:n])
    fits = [fit_mlp_vi(jax.random.key(100 * seed + int(width)), sizes, x_train, y_train,
                       prior_var=profile.align_prior_var if prior_var is None else prior_var,
                       std_init=ROSSI_VI_SETTINGS["std_init"], epochs=profile.align_epochs,
                       batch_size=ROSSI_VI_SETTINGS["batch_size"], learning_rate=profile.learning_rate,
                       temperature=ROSSI_VI_SETTINGS["temperature"] if temperature is None else temperature)
            for seed in _pair_seeds(pair)]
    q0, q1 = (fits[0].mu, fits[0].sigma), (fits[1].mu, fits[1].sigma)
    return {**align_and_compare(mlp_permutation_spec(profile.align_depth), q0, q1, evals, profile,
                                curve_seed=7 + int(pair)),
            "elbo_final": np.asarray([f.elbo_history[-1] for f in fits]),
            "posteriors": jax.tree.map(np.asarray, {"mu0": q0[0], "sigma0": q0[1], "mu1": q1[0], "sigma1": q1[1]})}


@register("vi_alignment", _align_config,
          "Rossi et al.: independent pairs of mean-field VI MLPs per width and dataset, Wasserstein alignment, "
          "marginalised barriers",
          summary=_align_summary, result=VIAlignmentResult)
def vi_alignment(profile: Profile) -> dict[str, Any]:
    """Fit ``align_pairs`` independent pairs of VI posteriors per dataset and width, align
    each pair, and evaluate the barriers.

    Args:
        profile: the run profile (``align_*`` sizes).

    Returns:
        The artifact: ``artifact[dataset]["w<width>"]["pair<k>"]`` holds ``curves`` and
        ``barrier`` (``marginal`` and ``midpoint``) under ``"<split> naive"`` /
        ``"<split> aligned"``, ``alignment_seconds``, ``elbo_final`` and ``posteriors`` (the
        fitted ``mu0``, ``sigma0``, ``mu1``, ``sigma1``, in the MLP's parameter layout, for
        ``vi_alignment_timings``).

    Raises:
        ValueError: if ``align_pairs`` < 1.
    """
    if int(profile.align_pairs) < 1:
        raise ValueError(f"align_pairs must be at least 1, got {profile.align_pairs!r}")
    data_of = functools.lru_cache(maxsize=1)(lambda dataset: load_align_data(profile, dataset))

    def step(item: tuple[str, int, int]) -> dict[str, Any]:
        dataset, width, pair = item
        return fit_and_align_pair(profile, data_of(dataset), width, pair)

    # one step per (dataset, width, pair), each kept in the artifact cache: a killed run resumes
    items = [(dataset, int(width), pair) for dataset in ALIGN_DATASETS for width in profile.align_widths
             for pair in range(int(profile.align_pairs))]
    out: dict[str, Any] = {dataset: {} for dataset in ALIGN_DATASETS}
    for (dataset, width, pair), entry in zip(items, cached_steps("vi_alignment", _align_config(profile), items,
                                                                 step, label=list)):
        out[dataset].setdefault(f"w{width}", {})[f"pair{pair}"] = entry
    return out


# ------------------------------------------------ robustness to the prior variance and the temperature

#: The prior variances and likelihood temperatures of ``vi_alignment_robustness`` (a 2 x 2
#: grid; the paper's setting, prior variance 0.01 and temperature 1, is one corner). The
#: paper (Rossi et al. 2023) states that its results hold for different prior variances and
#: temperatures without listing them here; 0.0025 is the prior variance of another column
#: of its Table 1, 0.1 a cold posterior. Module constants, not profile fields.
ROBUSTNESS_PRIOR_VARS = (0.01, 0.0025)
ROBUSTNESS_TEMPERATURES = (1.0, 0.1)
#: the dataset of the robustness sweep
ROBUSTNESS_DATASET = "mnist"


def _setting_key(prior_var: float, temperature: float) -> str:
    return f"prior_var={prior_var:g},temperature={temperature:g}"


def _robustness_config(profile: Profile) -> dict[str, Any]:
    return {**_align_config(profile), "align_sweep_width": profile.align_sweep_width,
            "prior_vars": list(ROBUSTNESS_PRIOR_VARS), "temperatures": list(ROBUSTNESS_TEMPERATURES),
            "dataset": ROBUSTNESS_DATASET}


def _robustness_summary(res: dict[str, Any]) -> dict[str, Any]:
    """``width``, ``dataset``, ``settings`` (``{"prior_var", "temperature"}`` dicts) and
    ``marginal_pairs[split][kind]``: per setting, the barrier of every independent pair."""
    keys = list(res["settings"])
    return {"width": int(res["width"]), "dataset": str(res["dataset"]),
            "settings": [{"prior_var": float(res["settings"][k]["prior_var"]),
                          "temperature": float(res["settings"][k]["temperature"])} for k in keys],
            "marginal_pairs": {split: {kind: [[float(e["barrier"]["marginal"][f"{split} {kind}"])
                                               for e in _pair_entries(res["settings"][k]["pairs"])] for k in keys]
                                       for kind in ("naive", "aligned")} for split in SPLITS}}


@register("vi_alignment_robustness", _robustness_config,
          "Rossi et al.: the alignment barriers of vi_alignment at one width under 2 prior variances x 2 "
          "temperatures", summary=_robustness_summary)
def vi_alignment_robustness(profile: Profile) -> dict[str, Any]:
    """``align_pairs`` aligned posterior pairs of an MLP of width ``align_sweep_width`` on
    ``ROBUSTNESS_DATASET`` for every prior variance and temperature of the grid. The paper's
    setting (``align_prior_var``, temperature 1) is taken from ``vi_alignment`` when that
    experiment runs the width; the other settings are fitted here with the same seeds.

    Args:
        profile: the run profile.

    Returns:
        ``width``, ``dataset`` and ``settings[key]`` with ``prior_var``, ``temperature`` and
        ``pairs`` (``"pair<k>"`` entries as in ``vi_alignment``, without posteriors).
    """
    width, ds = int(profile.align_sweep_width), ROBUSTNESS_DATASET
    base = None
    if width in profile.align_widths and profile.align_prior_var in ROBUSTNESS_PRIOR_VARS:
        base = run("vi_alignment", profile, verbose=False).artifact[ds][f"w{width}"]
    data_of = functools.lru_cache(maxsize=1)(lambda: load_align_data(profile, ds))
    grid = [(pv, t) for pv in ROBUSTNESS_PRIOR_VARS for t in ROBUSTNESS_TEMPERATURES]
    todo = [(pv, t, pair) for pv, t in grid for pair in range(int(profile.align_pairs))
            if not (base is not None and pv == profile.align_prior_var and t == ROSSI_VI_SETTINGS["temperature"])]

    def step(item: tuple[float, float, int]) -> dict[str, Any]:
        pv, t, pair = item
        entry = fit_and_align_pair(profile, data_of(), width, pair, prior_var=pv, temperature=t)
        entry.pop("posteriors")
        return entry

    done = dict(zip(todo, cached_steps("vi_alignment_robustness", _robustness_config(profile), todo, step,
                                       label=list)))
    settings = {}
    for pv, t in grid:
        if base is not None and pv == profile.align_prior_var and t == ROSSI_VI_SETTINGS["temperature"]:
            pairs = {k: {kk: vv for kk, vv in e.items() if kk != "posteriors"} for k, e in base.items()}
        else:
            pairs = {f"pair{p}": done[(pv, t, p)] for p in range(int(profile.align_pairs))}
        settings[_setting_key(pv, t)] = {"prior_var": pv, "temperature": t, "pairs": pairs}
    return {"width": width, "dataset": ds, "settings": settings}


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
            as process CPU time (medians of the repeats; every repeat under
            ``<column>_repeats``, one row per width); ``w2_sweeps``, ``wm_sweeps``,
            ``w2_sq_identity`` and ``w2_sq`` (squared W2 distance before and after alignment).
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
            name: ``w2_seconds``, ``wm_seconds``, ``w2_cpu_seconds``, ``wm_cpu_seconds``
                (medians), the same with ``_repeats`` (one row of repeats per width),
                ``w2_sweeps``, ``wm_sweeps``, ``w2_sq_identity`` or ``w2_sq``.

        Returns:
            The values, in the order of ``widths[dataset]``.

        Raises:
            ValueError: for a dataset that was not run or an unknown column.
        """
        return pick(pick(self.table, dataset, "dataset"), name, "column")


def _repeat_times(fn, repeats: int) -> tuple[list[float], list[float], Any]:
    """Every repeat's wall time and process CPU time of ``fn()``, and its last output."""
    import time

    wall, cpu, out = [], [], None
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu, out


#: the timed quantities of :func:`time_alignments`, each kept with every repeat
TIMED_COLUMNS = ("w2_seconds", "wm_seconds", "w2_cpu_seconds", "wm_cpu_seconds")


def time_alignments(posteriors: Mapping[int, Mapping[str, Any]], depth: int,
                    repeats: int = TIMING_REPEATS) -> dict[str, list]:
    """Wall time of Wasserstein alignment and of weight matching of the means, per width.

    Each call is timed ``repeats`` times, as wall time and as the process's CPU time (summed
    over its threads); every repeat is kept (``<column>_repeats``) beside the median. Both
    matchings start from the identity with the same sweep-order key (0) and at most 100
    sweeps.

    Args:
        posteriors: ``posteriors[width]`` holds ``mu0``, ``sigma0``, ``mu1``, ``sigma1`` of
            an MLP with ``depth`` hidden layers.
        depth: number of hidden layers.
        repeats: timings per call (at least 1).

    Returns:
        Lists, one entry per width (increasing): ``width``; the medians ``w2_seconds``,
        ``wm_seconds`` (wall), ``w2_cpu_seconds``, ``wm_cpu_seconds`` (CPU), and the same
        with ``_repeats`` appended (one list of ``repeats`` values per width);
        ``w2_sweeps``, ``wm_sweeps``, ``w2_sq_identity``, ``w2_sq``.

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
    out: dict[str, list] = {k: [] for k in ("width", *TIMED_COLUMNS, *(f"{c}_repeats" for c in TIMED_COLUMNS),
                                            "w2_sweeps", "wm_sweeps", "w2_sq_identity", "w2_sq")}
    for width in sorted(posteriors):
        q = posteriors[width]
        q0, q1 = (q["mu0"], q["sigma0"]), (q["mu1"], q["sigma1"])
        w2_s, w2_cpu, w2 = _repeat_times(lambda: wasserstein_alignment(0, spec, q0, q1), int(repeats))
        wm_s, wm_cpu, wm = _repeat_times(lambda: weight_matching(0, spec, q["mu0"], q["mu1"]), int(repeats))
        for col, reps in zip(TIMED_COLUMNS, (w2_s, wm_s, w2_cpu, wm_cpu)):
            out[col].append(float(np.median(reps)))
            out[f"{col}_repeats"].append([float(r) for r in reps])
        for k, v in (("width", int(width)), ("w2_sweeps", w2.sweeps), ("wm_sweeps", wm.sweeps),
                     ("w2_sq_identity", float(w2.info["w2_sq_identity"])), ("w2_sq", float(w2.info["w2_sq"]))):
            out[k].append(v)
    return out


def _timings_config(profile: Profile) -> dict[str, Any]:
    return {**_align_config(profile), "timing_repeats": TIMING_REPEATS}


def _timings_summary(res: dict[str, Any]) -> dict[str, Any]:
    """``widths[dataset]`` and ``table[dataset][column]``: lists of floats, one per width
    (the ``..._repeats`` columns: one list of every repeat per width)."""
    return {"widths": {ds: [int(w) for w in np.asarray(ws)] for ds, ws in res["widths"].items()},
            "table": {ds: {k: np.asarray(v, dtype=float).tolist() for k, v in cols.items()}
                      for ds, cols in res["table"].items()},
            "repeats": int(res["repeats"])}


@register("vi_alignment_timings", _timings_config,
          "Rossi et al. App. C: seconds to align the trained VI posteriors of vi_alignment, and to match their means",
          summary=_timings_summary, result=VIAlignmentTimings)
def vi_alignment_timings(profile: Profile) -> dict[str, Any]:
    """Time the alignment of the trained posterior pairs of ``vi_alignment`` (the first
    independent pair of each dataset and width).

    Args:
        profile: the run profile (its ``vi_alignment`` run is loaded or computed).

    Returns:
        The artifact: ``widths[dataset]``, ``table[dataset][column]`` (columns of
        :func:`time_alignments`) and ``repeats``.
    """
    pairs = run("vi_alignment", profile, verbose=False).artifact
    out: dict[str, Any] = {"widths": {}, "table": {}, "repeats": TIMING_REPEATS}
    for dataset, per_width in pairs.items():
        t = time_alignments({int(w.removeprefix("w")): _pair_entries(e)[0]["posteriors"]
                             for w, e in per_width.items()}, profile.align_depth)
        out["widths"][dataset] = np.asarray(t.pop("width"))
        out["table"][dataset] = {k: np.asarray(v) for k, v in t.items()}
    return out


# ------------------------------------------------------------------ display helpers (chapters 07, 08)


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error over independent units (the error is NaN for one unit)."""
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size == 0:
        raise ValueError("mean_se needs at least one value")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")


def format_mean_se(values: Sequence[float], digits: int = 3) -> str:
    """``"0.123 ± 0.010"`` (mean ± standard error over the units), or the value for one unit."""
    m, se = mean_se(values)
    return f"{m:.{digits}f}" if not np.isfinite(se) else f"{m:.{digits}f} ± {se:.{digits}f}"


def barrier_table_rows(summary: Mapping[str, Any]) -> list[tuple]:
    """Rows ``(dataset, width, pairs, train naive, train aligned, test naive, test aligned,
    share removed (test), ELBO per example, endpoint test loss)`` of a ``vi_alignment``
    summary, each cell the mean ± standard error over the independent pairs."""
    rows = []
    for ds, widths in summary["widths"].items():
        mp = summary["marginal_pairs"][ds]
        for i, w in enumerate(widths):
            cells = [format_mean_se(mp[split][kind][i]) for split in SPLITS for kind in ("naive", "aligned")]
            share = 1 - np.asarray(mp["test"]["aligned"][i]) / np.asarray(mp["test"]["naive"][i])
            rows.append((ds, w, len(mp["test"]["naive"][i]), *cells, format_mean_se(100 * share, 0) + "%",
                         format_mean_se(summary["elbo"][ds][i], 2), format_mean_se(summary["endpoint_loss"][ds][i])))
    return rows


BARRIER_TABLE_HEADERS = ["dataset", "width", "pairs", "train naive", "train aligned", "test naive", "test aligned",
                         "test barrier removed", "ELBO per example", "test loss at the endpoints"]


def timing_table_rows(summary: Mapping[str, Any], dataset: str) -> list[tuple]:
    """Rows ``(width, W2 CPU median [min-max], sweeps, WM CPU median [min-max], sweeps, W2 wall
    median, W2^2 before, after)`` of a ``vi_alignment_timings`` summary with repeats."""
    from symlib.evaluation.stats import repeat_spread

    cols = summary["table"][dataset]

    def spread(name: str, i: int) -> str:
        med, lo, hi = repeat_spread(cols[f"{name}_repeats"][i])
        return f"{med:.3f} [{lo:.3f}-{hi:.3f}]"

    return [(w, spread("w2_cpu_seconds", i), int(cols["w2_sweeps"][i]), spread("wm_cpu_seconds", i),
             int(cols["wm_sweeps"][i]), spread("w2_seconds", i), f"{cols['w2_sq_identity'][i]:.1f}",
             f"{cols['w2_sq'][i]:.1f}") for i, w in enumerate(summary["widths"][dataset])]


TIMING_TABLE_HEADERS = ["width", "W2 alignment CPU (s), median [min-max]", "sweeps",
                        "matching of the means CPU (s), median [min-max]", "sweeps", "W2 alignment wall (s)",
                        "W2^2 before", "W2^2 after"]

#: The quick profile's alignment settings before replicated pairs (up to 2026-11-24), for
#: chapter 07's account of where the budget of the replicates came from: one pair per width
#: at four widths, MNIST on 9,000 images, barriers on 2,000 images per split, and a larger
#: ResNet20 stand-in.
QUICK_BEFORE_REPLICATES = {"align_pairs": 1, "align_widths": (32, 64, 128, 256), "align_n_train": 9_000,
                           "align_n_eval": 2_000, "resnet_n_train": 512, "resnet_n_eval": 128,
                           "resnet_n_lambdas": 5, "resnet_samples": 4}


#: ResNet20 stand-ins tried on 2026-11-23 (Fashion-MNIST, width 1, two fits, alignment and
#: curves on 256 images; ``dataclasses.replace`` of the quick profile with these settings,
#: passed to :func:`vi_alignment_resnet20`, on the book's 2-core machine while other jobs
#: ran). A record of runs too long for a chapter, printed by notebook 07 (not re-run).
RESNET_STANDIN_TRIALS = (
    ("3,000 images x 3 epochs, batch 64, Adam 1e-3", "688 s", "about 0.57 / 0.57", "2.15 -> 2.39", "2.00 -> 2.25"),
    ("2,000 images x 4 epochs, batch 64, Adam 3e-3", "293 s", "0.16 / 0.46", "1.61 -> 2.23", "1.49 -> 2.03"),
    ("the same, temperature 0.04 (the KL weight per image of 50,000 images)", "403 s", "0.13 / 0.47",
     "1.32 -> 2.84", "1.21 -> 2.73"),
    ("1,024 images x 3 epochs, batch 32, Adam 1e-2, temperature 0.02", "143 s (fits only)",
     "0.12 / 0.10 (mean networks)", "-", "-"),
)
RESNET_STANDIN_HEADERS = ["training", "time", "test accuracy of q0 / q1", "barrier train naive -> aligned",
                          "test naive -> aligned"]


# ----------------------------------------------------------------------------- claims
#
# Each claim returns Evidence over independent units: posterior pairs (or series of pairs,
# one network pair per width) for the barriers, repeats for the timings. The thresholds
# and our readings of the paper's words are in symlib.experiments.thresholds (Rossi
# section). A summary with one pair per width (the runs saved before replicates) gives an
# infinite interval, so at best "same direction, not significant".

_SEC51 = "Rossi et al. (2023), Sec. 5.1"
_APPC = "Rossi et al. (2023), App. C, Fig. A2"
def _check_summary_keys(summary: Mapping[str, Any], keys: Sequence[str], experiment: str) -> None:
    missing = [k for k in keys if k not in summary]
    if missing:
        raise ValueError(f"summary of {experiment!r} lacks {missing} (has {sorted(summary)})")


def _pair_barriers(summary: Mapping[str, Any], experiment: str) -> dict[str, Any]:
    """``[dataset][split][kind]``: per width, the barrier of every independent pair; from
    ``marginal_pairs``, or one pair per width from ``marginal`` (runs without replicates)."""
    _check_summary_keys(summary, ("widths", "marginal"), experiment)
    if "marginal_pairs" in summary:
        return summary["marginal_pairs"]
    return {ds: {split: {kind: [[float(v)] for v in b[kind]] for kind in b} for split, b in per_split.items()}
            for ds, per_split in summary["marginal"].items()}


def _pairs_text(n: Sequence[int]) -> str:
    lo, hi = min(n), max(n)
    return f"{lo} pair{'s' if hi > 1 else ''}" if lo == hi else f"{lo}-{hi} pairs"


def _slope(widths: Sequence[int], values: Sequence[float]) -> float:
    """Least-squares slope of ``values`` against log2(widths): nats per doubling."""
    return float(np.polyfit(np.log2(np.asarray(widths, dtype=float)), np.asarray(values, dtype=float), 1)[0])


def _series_slopes(widths: Sequence[int], per_width: Sequence[Sequence[float]]) -> list[float]:
    """One slope per series of independent pairs (pair k at every width)."""
    n = min(len(v) for v in per_width)
    return [_slope(widths, [v[k] for v in per_width]) for k in range(n)]


def barrier_reduction(summary: Mapping[str, Any], experiment: str = "vi_alignment") -> Evidence:
    """``alignment_lowers_every_barrier``: naive minus aligned barrier, mean over pairs, worst cell."""
    t = threshold("vi_alignment.alignment_lowers_every_barrier")
    pairs = _pair_barriers(summary, experiment)
    cells, sizes = [], []
    for ds, per_split in pairs.items():
        for split, b in per_split.items():
            for w, naive, aligned in zip(summary["widths"][ds], b["naive"], b["aligned"]):
                d = np.asarray(naive, dtype=float) - np.asarray(aligned, dtype=float)
                sizes.append(d.size)
                cells.append((mean_of_units(d, t, "posterior pairs", ""), f"{ds} {split} width {w}",
                              float(np.mean(naive)), float(np.mean(aligned))))
    if not cells:
        return not_tested(t, f"the summary of {experiment!r} holds no barrier")
    least = worst([c[0] for c in cells])
    where, naive, aligned = next((c[1], c[2], c[3]) for c in cells if c[0] is least)
    lowered = sum(c[0].effect > 0 for c in cells)
    return Evidence(least.effect, least.low, least.high, t, f"{_pairs_text(sizes)} per cell (worst of {len(cells)} "
                    "dataset-split-width cells)",
                    f"alignment lowers the mean barrier in {lowered} of {len(cells)} cells; least clear: {where}, "
                    f"{naive:.3f} naive -> {aligned:.3f} aligned nats (mean over {_pairs_text(sizes)})")


def _removed_share(dataset: str):
    def check(summary: Mapping[str, Any]) -> Evidence:
        t = threshold("vi_alignment.alignment_removes_barrier")
        b = pick(_pair_barriers(summary, "vi_alignment"), dataset, "dataset")
        widest = max(summary["widths"][dataset])
        evs, parts = [], []
        for split in SPLITS:
            naive, aligned = np.asarray(b[split]["naive"][-1], float), np.asarray(b[split]["aligned"][-1], float)
            share = 1.0 - aligned / naive
            evs.append(mean_of_units(share, t, "posterior pairs", ""))
            parts.append(f"{split}: {naive.mean():.3f} naive -> {aligned.mean():.3f} aligned nats "
                         f"({100 * share.mean():.0f}% removed)")
        w = worst(evs)
        return Evidence(w.effect, w.low, w.high, t, f"{w.units} at width {widest} (worse of train, test)",
                        f"width {widest}, mean over {w.units}: " + "; ".join(parts))
    return check


def _falls(dataset: str):
    def check(summary: Mapping[str, Any]) -> Evidence:
        t = threshold("vi_alignment.barrier_falls_with_width")
        widths = summary["widths"][dataset]
        b = pick(_pair_barriers(summary, "vi_alignment"), dataset, "dataset")
        if len(widths) < 2:
            return not_tested(t, f"{dataset}: one width ({widths}); a trend needs two")
        evs, parts = [], []
        for split in SPLITS:
            for kind in ("naive", "aligned"):
                slopes = _series_slopes(widths, b[split][kind])
                evs.append(mean_of_units(slopes, t, "series of independent pairs", ""))
                means = [float(np.mean(v)) for v in b[split][kind]]
                parts.append(f"{split} {kind} {', '.join(f'{m:.3f}' for m in means)} "
                             f"(slope {np.mean(slopes):+.3f}/doubling)")
        w = worst(evs)
        return Evidence(w.effect, w.low, w.high, t, f"{w.units} (worst of train/test x naive/aligned)",
                        f"widths {', '.join(map(str, widths))}, mean barriers: " + "; ".join(parts))
    return check


@claim("vi_alignment", "alignment_lowers_every_barrier", f"{_SEC51}; poster",
       "loss barriers always appear between two VI solutions, and alignment lowers them "
       "(MLPs, MNIST and Fashion-MNIST)")
def _alignment_lowers_every_barrier(summary: Mapping[str, Any]) -> Evidence:
    return barrier_reduction(summary, "vi_alignment")


for _ds, _label in (("mnist", "MNIST"), ("fashion_mnist", "Fashion-MNIST")):
    claim("vi_alignment", f"alignment_removes_barrier_{_ds}", _SEC51,
          f"{_label} MLP: after alignment the barrier is (nearly) zero; read as: at the widest width alignment "
          "removes more than half of the naive barrier (train and test)")(_removed_share(_ds))
    claim("vi_alignment", f"barrier_falls_with_width_{_ds}", _SEC51,
          f"{_label} MLP: wider models provide lower barriers, with and without alignment (train and test)")(
        _falls(_ds))


#: Validity check of the ResNet20 claims (set on 2026-11-25, after seeing the quick stand-in's
#: networks at chance): a barrier between networks that have not learned (test accuracy of
#: either model average at most twice chance, 0.2 for 10 classes) is noise, so the claims
#: are "not tested" on such a run.
RESNET_MIN_ACCURACY = 0.2


def _resnet_untrained(summary: Mapping[str, Any]) -> str | None:
    acc = summary.get("endpoint_accuracy")
    if not acc:
        return None
    lowest = min(min(min(v) for v in per_w) for per_w in acc.values())
    if lowest <= RESNET_MIN_ACCURACY:
        return (f"the VI networks have not learned: the lowest test accuracy of a pair's model averages is "
                f"{lowest:.2f} (at most {RESNET_MIN_ACCURACY:g}, twice chance), so a barrier between them is noise")
    return None


@claim("vi_alignment_resnet20", "alignment_lowers_every_barrier", f"{_SEC51}; poster",
       "ResNet20: a loss barrier appears between two VI solutions and alignment lowers it "
       "(nearly zero on CIFAR-10 in the paper)")
def _resnet_lowers(summary: Mapping[str, Any]) -> Evidence:
    why = _resnet_untrained(summary)
    if why:
        return not_tested(threshold("vi_alignment.alignment_lowers_every_barrier"), why)
    return barrier_reduction(summary, "vi_alignment_resnet20")


@claim("vi_alignment_resnet20", "wider_lower_only_after_alignment", _SEC51,
       "ResNet20: unlike MLPs, wider models have lower barriers only after alignment")
def _resnet_wider_lower(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_resnet20.wider_lower_only_after_alignment")
    why = _resnet_untrained(summary)
    if why:
        return not_tested(t, why)
    pairs = _pair_barriers(summary, "vi_alignment_resnet20")
    evs, parts = [], []
    for ds, per_split in pairs.items():
        widths = summary["widths"][ds]
        if len(widths) < 2:
            return not_tested(t, f"{ds}: one width ({', '.join(map(str, widths))}); a width trend needs at least two")
        for split, b in per_split.items():
            aligned = _series_slopes(widths, b["aligned"])
            naive = _series_slopes(widths, b["naive"])
            evs.append(mean_of_units(aligned, t, "series of independent pairs", ""))
            evs.append(mean_of_units(np.subtract(aligned, naive), t, "series of independent pairs", ""))
            parts.append(f"{ds} {split}: slope aligned {np.mean(aligned):+.3f}, naive {np.mean(naive):+.3f} "
                         "nats/doubling")
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} (worst of aligned, aligned - naive; train, test)",
                    f"widths {', '.join(map(str, widths))}: " + "; ".join(parts))


@claim("vi_alignment_robustness", "removes_barrier_every_setting", f"{_SEC51}; Rossi et al. (2023) summary",
       "the alignment result holds for different prior variances and temperatures: read as: alignment removes "
       "more than half of the naive barrier in every (prior variance, temperature) setting")
def _robust(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_robustness.removes_barrier_every_setting")
    _check_summary_keys(summary, ("settings", "marginal_pairs", "width"), "vi_alignment_robustness")
    evs, parts = [], []
    for i, st in enumerate(summary["settings"]):
        shares = []
        for split in SPLITS:
            naive = np.asarray(summary["marginal_pairs"][split]["naive"][i], float)
            aligned = np.asarray(summary["marginal_pairs"][split]["aligned"][i], float)
            share = 1.0 - aligned / naive
            evs.append(mean_of_units(share, t, "posterior pairs", ""))
            shares.append(f"{100 * share.mean():.0f}%")
        parts.append(f"prior var {st['prior_var']:g}, T {st['temperature']:g}: {' / '.join(shares)}")
    if not evs:
        return not_tested(t, "the summary holds no setting")
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} per setting (worst of {len(evs)} setting-splits)",
                    f"{summary.get('dataset', '')} width {summary['width']}, share removed (train / test): "
                    + "; ".join(parts))


# ---- timings: a verdict only when the difference exceeds the spread of the repeats


def _repeats_of(summary: Mapping[str, Any], dataset: str, column: str) -> np.ndarray | None:
    """``(widths, repeats)`` timings of one column, or None for a summary without repeats."""
    rep = summary["table"][dataset].get(f"{column}_repeats")
    return None if rep is None else np.asarray(rep, dtype=float)


_NO_REPEATS = ("the summary keeps one timing per call (the minimum of {n} repeats), not the repeats themselves, "
               "so the spread between repeats cannot be told")


def _ratio_evidence(num: np.ndarray, den: np.ndarray, t) -> Evidence:
    """Median ratio and the range the repeats allow: [min num / max den, max num / min den]."""
    return interval_evidence(float(np.median(num) / np.median(den)), float(num.min() / den.max()),
                             float(num.max() / den.min()), t, "", "")


@claim("vi_alignment_timings", "within_a_minute", _APPC,
       "in the majority of cases the alignment completes within a minute")
def _within_a_minute(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_timings.within_a_minute")
    _check_summary_keys(summary, ("widths", "table"), "vi_alignment_timings")
    reps = [_repeats_of(summary, ds, "w2_seconds") for ds in summary["table"]]
    if any(r is None for r in reps):
        return not_tested(t, _NO_REPEATS.format(n=summary.get("repeats", "?")))
    slowest = np.concatenate([r.max(axis=1) for r in reps])
    under = int(np.sum(slowest < 60.0))
    return share_of_units(under, slowest.size, t, "alignments (dataset, width)",
                          f"{under} of {slowest.size} alignments under 60 s in every repeat (slowest repeat "
                          f"{slowest.max():.2f} s)")


@claim("vi_alignment_timings", "time_grows_with_width", _APPC,
       "aligning wider networks is more demanding: the alignment time grows with the width")
def _time_grows_with_width(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_timings.time_grows_with_width")
    _check_summary_keys(summary, ("widths", "table"), "vi_alignment_timings")
    evs, parts = [], []
    for ds in summary["table"]:
        r = _repeats_of(summary, ds, "w2_cpu_seconds")
        if r is None:
            return not_tested(t, _NO_REPEATS.format(n=summary.get("repeats", "?")))
        if r.shape[0] < 2:
            return not_tested(t, f"{ds}: one width; growth needs two")
        evs += [_ratio_evidence(r[i + 1], r[i], t) for i in range(r.shape[0] - 1)]
        parts.append(f"{ds}: " + ", ".join(f"{np.median(x):.3f} [{x.min():.3f}-{x.max():.3f}]" for x in r)
                     + " s CPU")
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{r.shape[1]} repeats per width (smallest of {len(evs)} "
                    "doublings; interval = range of the repeats)", "median [min-max] per width: " + "; ".join(parts))


@claim("vi_alignment_timings", "vi_costlier_than_weight_matching", _APPC,
       "for wide networks, aligning VI solutions is more demanding than matching weights of SGD solutions "
       "(stand-in: matching the VI means)")
def _vi_costlier(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_timings.vi_costlier_than_weight_matching")
    _check_summary_keys(summary, ("widths", "table"), "vi_alignment_timings")
    evs, parts = [], []
    for ds, cols in summary["table"].items():
        w2, wm = _repeats_of(summary, ds, "w2_cpu_seconds"), _repeats_of(summary, ds, "wm_cpu_seconds")
        if w2 is None or wm is None:
            return not_tested(t, _NO_REPEATS.format(n=summary.get("repeats", "?")))
        evs.append(_ratio_evidence(w2[-1], wm[-1], t))
        parts.append(f"{ds} width {summary['widths'][ds][-1]}: {np.median(w2[-1]):.3f} vs {np.median(wm[-1]):.3f} s "
                     f"CPU (medians; {evs[-1].effect:.2f}x, repeats allow {evs[-1].low:.2f}-{evs[-1].high:.2f}x)")
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{w2.shape[1]} repeats each (smaller over {len(evs)} datasets; "
                    "interval = range of the repeats)", "; ".join(parts))


# What the reduced paper-scale run found (chapters 07 and 08 show the numbers): registered so
# that tests/test_claims.py accepts exactly these verdicts on the saved files.
_REDUCED = "paper-4widths-16samples"
_ONE_PAIR = ("the saved run has one VI posterior pair per width (it predates replicates), so the interval over "
             "pairs is unbounded: ")
difference("vi_alignment", _REDUCED, "alignment_lowers_every_barrier",
           _ONE_PAIR + "alignment lowers every one of the 16 barriers (by 1.5 to 2.3 nats), same direction as "
           "the paper, not significant by our rule", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", _REDUCED, "alignment_removes_barrier_mnist",
           _ONE_PAIR + "at width 1,024 alignment removes 98% of the MNIST barrier (train and test), same direction "
           "as the paper, not significant by our rule", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", _REDUCED, "alignment_removes_barrier_fashion_mnist",
           _ONE_PAIR + "at width 1,024 alignment removes 94% of the Fashion-MNIST barrier (train and test), same "
           "direction as the paper, not significant by our rule", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", _REDUCED, "barrier_falls_with_width_mnist",
           "at the paper's widths and 100 epochs on 50,000 images the aligned barrier falls with width (train "
           "0.061, 0.050, 0.031, 0.042 nats at widths 128 to 1,024), but the naive one grows (train 1.78, 1.84, "
           "1.97, 2.37; slope +0.19 nats per doubling), so 'with and without alignment' does not hold; our "
           "posteriors have a tenth of the paper's training steps")
difference("vi_alignment", _REDUCED, "barrier_falls_with_width_fashion_mnist",
           "the aligned barrier falls from width 128 to 512 (train 0.110, 0.075, 0.044 nats) and rises at 1,024 "
           "(0.128), and the naive one grows at every doubling (1.65, 1.71, 1.74, 2.08), so the naive trend is "
           "positive; with a tenth of the paper's training steps the widest posteriors fit worst, the likely reason")
for _name in ("within_a_minute", "time_grows_with_width", "vi_costlier_than_weight_matching"):
    difference("vi_alignment_timings", _REDUCED, _name,
               "the saved run keeps one timing per call (the minimum of 5 repeats), not the repeats, so the spread "
               "between repeats, which our timing claims need, is unknown: not tested on that run",
               verdict=Verdict.NOT_TESTED)

# What the quick profile finds (chapter 07 shows the numbers; the runs are seeded, so these
# verdicts are reproducible; the timing claims are not, see TIMING_CLAIMS_MACHINE_DEPENDENT).
_QUICK_WIDTH = ("3 independent pairs per width at widths 32, 64, 128 (20 epochs on 4,500 images): the aligned barrier "
                "falls clearly with width, but the naive one falls by less than the pairs differ (the claims table "
                "gives the slope per doubling and its interval over the 3 series; ")
difference("vi_alignment", "quick", "barrier_falls_with_width_mnist",
           _QUICK_WIDTH + "MNIST), so 'with and without alignment' is in the paper's direction but not significant; "
           "more pairs or wider, better-trained networks would be needed", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", "quick", "barrier_falls_with_width_fashion_mnist",
           _QUICK_WIDTH + "Fashion-MNIST), so 'with and without alignment' is in the paper's direction but not "
           "significant", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment_robustness", "quick", "removes_barrier_every_setting",
           "at width 64 on MNIST (20 epochs on 4,500 images, 3 pairs per setting) alignment removes about half of "
           "the barrier in every setting, the paper's own setting included (chapter 07 "
           "tabulates the shares): the settings agree with each other, as the paper says, but at this width and "
           "training no setting reaches the 'nearly zero' of the paper")

#: Timing claims whose quick-profile verdict depends on the machine and its load: at the
#: quick widths an alignment takes tens of milliseconds, and whether a ratio clears the range
#: of the repeats changes between executions (both "same direction" and "holds"/"differs"
#: were seen on the 2-core machine). Chapter 08 shows and glues them, and asserts the others.
TIMING_CLAIMS_MACHINE_DEPENDENT = ("time_grows_with_width", "vi_costlier_than_weight_matching")
difference("vi_alignment_resnet20", "quick", "alignment_lowers_every_barrier",
           "the quick stand-in (Fashion-MNIST, width 1, 256 images x 2 epochs, one pair) trains two ResNet20 "
           "posteriors that stay at chance (the chapter prints their test accuracy), so their barrier is noise: not tested; the "
           "claim needs the paper profile (CIFAR-10, 100 epochs, a GPU)", verdict=Verdict.NOT_TESTED)
difference("vi_alignment_resnet20", "quick", "wider_lower_only_after_alignment",
           "the quick stand-in runs one width (1) with networks at chance, so there is no width trend to judge: not "
           "tested; the claim needs the paper profile's widths 1, 2, 4, 8 on CIFAR-10", verdict=Verdict.NOT_TESTED)
