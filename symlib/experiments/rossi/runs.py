"""Rossi et al. (2023): mean-field VI pairs of MLPs aligned by Wasserstein matching, the
robustness sweep and the alignment timings; their typed results (ResNet20's are in
:mod:`~symlib.experiments.rossi.resnet`)."""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.core.models import mlp_apply, mlp_init
from symlib.experiments.cache import cached_steps
from symlib.experiments.profiles import Profile
from symlib.experiments.recipes import constant_adam
from symlib.experiments.registry import ExperimentResult, Steps, data_config, load_align_data, pick, register, run
from symlib.experiments.rossi.settings import (ALIGN_DATASETS, CIFAR10_MLP_PRIOR_VAR, ROSSI_VI_SETTINGS, SPLITS,
                                              TIMING_REPEATS)

#: the MLP initialiser, compiled once per layout: the initial means of every VI fit here
_mlp_init = jax.jit(mlp_init, static_argnums=1)



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
            "align_pairs", "align_n_train", "align_keep_posteriors", "n_lambdas", "learning_rate")
    return {**data_config(profile), **{k: getattr(profile, k) for k in keys}}


def widths_of(per_width: Mapping[str, Any]) -> list[int]:
    return sorted(int(w.removeprefix("w")) for w in per_width)


def align_summary(res: dict[str, Any]) -> dict[str, Any]:
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
        widths = widths_of(per_w)
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
    from symlib.inference import Data, Model, VIConfig, fit_vi
    from symlib.symmetry.specs import mlp_permutation_spec

    evals = {s: (data[f"x_{s}"][: profile.align_n_eval], data[f"y_{s}"][: profile.align_n_eval]) for s in SPLITS}
    sizes = [data["x_train"].shape[1], *[int(width)] * profile.align_depth, 10]
    n = profile.align_n_train
    x_train, y_train = (data["x_train"], data["y_train"]) if n is None else (data["x_train"][:n], data["y_train"][:n])
    config = VIConfig(epochs=profile.align_epochs, batch_size=ROSSI_VI_SETTINGS["batch_size"],
                      optimizer=constant_adam(profile.learning_rate),
                      prior_var=profile.align_prior_var if prior_var is None else prior_var,
                      std_init=ROSSI_VI_SETTINGS["std_init"],
                      temperature=ROSSI_VI_SETTINGS["temperature"] if temperature is None else temperature)

    def fit(seed: int):  # the seed's key splits into the initial means' key and the fit's
        init_key, fit_key = jax.random.split(jax.random.key(100 * seed + int(width)))
        return fit_vi(fit_key, _mlp_init(init_key, tuple(sizes)), Model(mlp_apply), Data(x_train, y_train), config)

    fits = [fit(seed) for seed in _pair_seeds(pair)]
    q0, q1 = (fits[0].mean, fits[0].std), (fits[1].mean, fits[1].std)
    return {**align_and_compare(mlp_permutation_spec(profile.align_depth), q0, q1, evals, profile,
                                curve_seed=7 + int(pair), apply_fn=mlp_apply),
            "elbo_final": np.asarray([f.info["elbo"][-1] for f in fits]),
            "posteriors": jax.tree.map(np.asarray, {"mu0": q0[0], "sigma0": q0[1], "mu1": q1[0], "sigma1": q1[1]})}


def _fitted_pairs(steps: Steps, datasets) -> dict[str, Any]:
    """Run ``steps`` (resuming from the artifact cache) into ``artifact[dataset]["w<width>"]["pair<k>"]``."""
    out: dict[str, Any] = {dataset: {} for dataset in datasets}
    for (dataset, width, pair), entry in zip(steps.starts, cached_steps(steps.name, steps.cache_config, steps.starts,
                                                                        steps.train, label=list)):
        out[dataset].setdefault(f"w{width}", {})[f"pair{pair}"] = entry
    return out


def _pair_steps(name: str, config: dict[str, Any], profile: Profile, datasets, load, *,
                keep_posteriors: bool, prior_var: float | None = None) -> Steps:
    """The steps of an MLP alignment experiment: one independent pair of one dataset and width
    a step (:func:`fit_and_align_pair`), labelled ``[dataset, width, pair]``.

    Args:
        name: the experiment.
        config: its cache configuration.
        profile: the run profile (``align_*`` sizes).
        datasets: the datasets, in order.
        load: ``load(dataset)``, the split of a dataset (called once per dataset, when its
            first step runs).
        keep_posteriors: keep each pair's fitted ``posteriors`` in its step.
        prior_var: the prior variance (default ``profile.align_prior_var``).

    Raises:
        ValueError: if ``align_pairs`` < 1.
    """
    if int(profile.align_pairs) < 1:
        raise ValueError(f"align_pairs must be at least 1, got {profile.align_pairs!r}")
    data_of = functools.lru_cache(maxsize=1)(load)

    def train(label) -> dict[str, Any]:
        dataset, width, pair = label
        entry = fit_and_align_pair(profile, data_of(dataset), int(width), int(pair), prior_var=prior_var)
        if not keep_posteriors:
            entry.pop("posteriors")
        return entry

    labels = [[dataset, int(width), pair] for dataset in datasets for width in profile.align_widths
              for pair in range(int(profile.align_pairs))]
    return Steps(name, config, labels, train)


@register("vi_alignment", _align_config,
          "Rossi et al.: independent pairs of mean-field VI MLPs per width and dataset, Wasserstein alignment, "
          "marginalised barriers",
          summary=align_summary, result=VIAlignmentResult)
def vi_alignment(profile: Profile) -> dict[str, Any]:
    """Fit ``align_pairs`` independent pairs of VI posteriors per dataset and width, align
    each pair, and evaluate the barriers.

    Args:
        profile: the run profile (``align_*`` sizes).

    Returns:
        The artifact: ``artifact[dataset]["w<width>"]["pair<k>"]`` holds ``curves`` and
        ``barrier`` (``marginal`` and ``midpoint``) under ``"<split> naive"`` /
        ``"<split> aligned"``, ``alignment_seconds``, ``elbo_final`` and, with
        ``align_keep_posteriors``, ``posteriors`` (the fitted ``mu0``, ``sigma0``, ``mu1``,
        ``sigma1``, in the MLP's parameter layout, for ``vi_alignment_timings``).

    Raises:
        ValueError: if ``align_pairs`` < 1.
    """
    return _fitted_pairs(vi_alignment_steps(profile), ALIGN_DATASETS)


def vi_alignment_steps(profile: Profile) -> Steps:
    """The steps of ``vi_alignment``, one independent pair of one dataset and width a step
    (:func:`fit_and_align_pair`; its ``posteriors`` kept with ``align_keep_posteriors``), as
    a :class:`~symlib.experiments.registry.Steps`: what the experiment runs, resuming from
    the artifact cache, and what the GPU queue's job ``rossi-1000epochs`` runs a few at a time
    (without posteriors: a width-1,024 pair's are 13 MB, and every folded step travels to the
    next device call).

    Args:
        profile: the run profile (``align_*`` sizes).

    Returns:
        The steps, labelled ``[dataset, width, pair]``; nothing is fitted until a step's
        ``train`` is called.

    Raises:
        ValueError: if ``align_pairs`` < 1.
    """
    return _pair_steps("vi_alignment", _align_config(profile), profile, ALIGN_DATASETS,
                       lambda dataset: load_align_data(profile, dataset),
                       keep_posteriors=bool(profile.align_keep_posteriors))


# ------------------------------------------------------------------ the MLP on CIFAR-10 (Sec. 5.1)


def _cifar10_config(profile: Profile) -> dict[str, Any]:
    keys = ("align_widths", "align_depth", "align_epochs", "align_samples", "align_n_eval", "align_pairs",
            "align_n_train", "n_lambdas", "learning_rate")
    return {"dataset": "cifar10", "prior_var": CIFAR10_MLP_PRIOR_VAR, **{k: getattr(profile, k) for k in keys}}


def load_cifar10_flat() -> dict[str, np.ndarray]:
    """CIFAR-10 for an MLP (:func:`symlib.data.load_cifar10`): each image flattened to 3,072
    float32 values in [0, 1] (NHWC order), as the MNIST MLPs read 784.

    Returns:
        ``x_train``, ``y_train`` (50,000), ``x_test``, ``y_test`` (10,000).
    """
    from symlib import data

    out = {}
    for split in ("train", "test"):
        x, y = data.load_cifar10(split)
        out[f"x_{split}"] = (np.asarray(x, np.float32) / np.float32(255.0)).reshape(len(x), -1)
        out[f"y_{split}"] = np.asarray(y, np.int32)
    return out


@register("vi_alignment_cifar10", _cifar10_config,
          "Rossi et al. Sec. 5.1: independent pairs of mean-field VI MLPs per width on CIFAR-10, Wasserstein "
          "alignment, marginalised barriers",
          summary=align_summary, result=VIAlignmentResult)
def vi_alignment_cifar10(profile: Profile) -> dict[str, Any]:
    """:func:`vi_alignment` for the MLP on CIFAR-10 (Sec. 5.1): the same fits, alignment and
    curves, on flattened CIFAR-10 images (:func:`load_cifar10_flat`), with the prior variance
    of the paper's CIFAR-10 MLP (:data:`~symlib.experiments.rossi.settings.CIFAR10_MLP_PRIOR_VAR`).
    The posteriors are not kept (a width-1,024 pair's are 50 MB).

    Args:
        profile: the run profile (``align_*`` sizes; ``align_prior_var`` is not used).

    Returns:
        The artifact, in the layout of :func:`vi_alignment` with the one dataset ``"cifar10"``.

    Raises:
        ValueError: if ``align_pairs`` < 1.
        symlib.data.DataNotFoundError: if the CIFAR-10 archive cannot be had.
    """
    steps = _pair_steps("vi_alignment_cifar10", _cifar10_config(profile), profile, ("cifar10",),
                        lambda dataset: load_cifar10_flat(), keep_posteriors=False, prior_var=CIFAR10_MLP_PRIOR_VAR)
    return _fitted_pairs(steps, ("cifar10",))


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
    base = run("vi_alignment", profile, verbose=False).artifact[ds][f"w{width}"] if _sweep_from_base(profile) else None
    steps = vi_alignment_robustness_steps(profile)
    done = {tuple(label): entry for label, entry in zip(steps.starts, cached_steps(
        steps.name, steps.cache_config, steps.starts, steps.train, label=list))}
    settings = {}
    for pv, t in _robustness_grid():
        if base is not None and pv == profile.align_prior_var and t == ROSSI_VI_SETTINGS["temperature"]:
            pairs = {k: {kk: vv for kk, vv in e.items() if kk != "posteriors"} for k, e in base.items()}
        else:
            pairs = {f"pair{p}": done[(pv, t, p)] for p in range(int(profile.align_pairs))}
        settings[_setting_key(pv, t)] = {"prior_var": pv, "temperature": t, "pairs": pairs}
    return {"width": width, "dataset": ds, "settings": settings}


def _robustness_grid() -> list[tuple[float, float]]:
    return [(pv, t) for pv in ROBUSTNESS_PRIOR_VARS for t in ROBUSTNESS_TEMPERATURES]


def _sweep_from_base(profile: Profile) -> bool:
    """Whether the sweep takes the paper's setting from ``vi_alignment`` (which runs its width)."""
    return int(profile.align_sweep_width) in profile.align_widths and profile.align_prior_var in ROBUSTNESS_PRIOR_VARS


def vi_alignment_robustness_steps(profile: Profile) -> Steps:
    """The pairs ``vi_alignment_robustness`` fits itself, one (prior variance, temperature,
    pair) a step, without posteriors: every setting of the grid but the paper's where
    ``vi_alignment`` runs the sweep's width (then its pairs are that setting's). What the
    experiment runs, resuming from the artifact cache, and what the GPU queue's job
    ``rossi-grid-512`` runs a few at a time.

    Args:
        profile: the run profile (``align_*`` sizes, ``align_sweep_width``).

    Returns:
        The :class:`~symlib.experiments.registry.Steps`, labelled ``[prior_var, temperature, pair]``.
    """
    width = int(profile.align_sweep_width)
    data_of = functools.lru_cache(maxsize=1)(lambda: load_align_data(profile, ROBUSTNESS_DATASET))
    skip = (profile.align_prior_var, ROSSI_VI_SETTINGS["temperature"]) if _sweep_from_base(profile) else None

    def train(label) -> dict[str, Any]:
        pv, t, pair = label
        entry = fit_and_align_pair(profile, data_of(), width, int(pair), prior_var=pv, temperature=t)
        entry.pop("posteriors")
        return entry

    labels = [[pv, t, pair] for pv, t in _robustness_grid() for pair in range(int(profile.align_pairs))
              if (pv, t) != skip]
    return Steps("vi_alignment_robustness", _robustness_config(profile), labels, train)


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


def time_alignments(posteriors: Mapping[int, Mapping[str, Any]], spec,
                    repeats: int = TIMING_REPEATS) -> dict[str, list]:
    """Wall time of Wasserstein alignment and of weight matching of the means, per width.

    Each call is timed ``repeats`` times, as wall time and as the process's CPU time (summed
    over its threads); every repeat is kept (``<column>_repeats``) beside the median. Both
    matchings start from the identity with the same sweep-order key (0) and at most 100
    sweeps.

    Args:
        posteriors: ``posteriors[width]`` holds ``mu0``, ``sigma0``, ``mu1``, ``sigma1`` of
            one network of that width.
        spec: the networks' permutation spec (any width: it names axes, not sizes).
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

    if int(repeats) < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats!r}")
    if not posteriors:
        raise ValueError("posteriors is empty: no width to time")
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


def timings_summary(res: dict[str, Any]) -> dict[str, Any]:
    """``widths[dataset]`` and ``table[dataset][column]``: lists of floats, one per width
    (the ``..._repeats`` columns: one list of every repeat per width)."""
    return {"widths": {ds: [int(w) for w in np.asarray(ws)] for ds, ws in res["widths"].items()},
            "table": {ds: {k: np.asarray(v, dtype=float).tolist() for k, v in cols.items()}
                      for ds, cols in res["table"].items()},
            "repeats": int(res["repeats"])}


@register("vi_alignment_timings", _timings_config,
          "Rossi et al. App. C: seconds to align the trained VI posteriors of vi_alignment, and to match their means",
          summary=timings_summary, result=VIAlignmentTimings)
def vi_alignment_timings(profile: Profile) -> dict[str, Any]:
    """Time the alignment of the trained posterior pairs of ``vi_alignment`` (the first
    independent pair of each dataset and width).

    Args:
        profile: the run profile (its ``vi_alignment`` run is loaded or computed).

    Returns:
        The artifact: ``widths[dataset]``, ``table[dataset][column]`` (columns of
        :func:`time_alignments`) and ``repeats``.

    Raises:
        ValueError: if the profile does not keep the posteriors (``align_keep_posteriors``).
    """
    if not profile.align_keep_posteriors:
        raise ValueError("vi_alignment_timings aligns the posteriors of vi_alignment, which this profile does not "
                         "keep: set align_keep_posteriors=true")
    from symlib.symmetry.specs import mlp_permutation_spec

    pairs = run("vi_alignment", profile, verbose=False).artifact
    out: dict[str, Any] = {"widths": {}, "table": {}, "repeats": TIMING_REPEATS}
    for dataset, per_width in pairs.items():
        t = time_alignments({int(w.removeprefix("w")): _pair_entries(e)[0]["posteriors"]
                             for w, e in per_width.items()}, mlp_permutation_spec(profile.align_depth))
        out["widths"][dataset] = np.asarray(t.pop("width"))
        out["table"][dataset] = {k: np.asarray(v) for k, v in t.items()}
    return out
