"""Rossi et al. (2023) with ResNet20 (LayerNorm): the barriers of Sec. 5.1 on CIFAR-10
(``vi_alignment_resnet20``), on CIFAR-100 (App. C, Fig. A3, ``vi_alignment_resnet20_cifar100``)
and the timings of App. C, Fig. A2 for ResNet20 (``vi_alignment_resnet20_timings``)."""
from __future__ import annotations

from typing import Any

import jax
import numpy as np

from symlib.experiments.cache import cached_steps
from symlib.experiments.profiles import Profile
from symlib.experiments.recipes import constant_adam
from symlib.experiments.registry import load_align_data, register, run
from symlib.experiments.rossi.runs import (VIAlignmentResult, VIAlignmentTimings, align_and_compare, align_summary,
                                           time_alignments, timings_summary, widths_of)
from symlib.experiments.rossi.settings import ROSSI_VI_SETTINGS, TIMING_REPEATS


# ------------------------------------------------------------------ ResNet20 (Sec. 5.1, CIFAR-10)


def _resnet_config(profile: Profile) -> dict[str, Any]:
    keys = ("resnet_dataset", "resnet_widths", "resnet_n_train", "resnet_epochs", "resnet_batch_size",
            "resnet_n_eval", "resnet_n_lambdas", "resnet_samples", "align_prior_var", "learning_rate")
    return {"data_source": profile.data_source, **{k: getattr(profile, k) for k in keys}}


#: classes of each dataset the ResNet20 experiments read
RESNET_CLASSES = {"cifar10": 10, "cifar100": 100, "fashion_mnist": 10}


def _resnet_timed_config(profile: Profile) -> dict[str, Any]:
    """``vi_alignment_resnet20``'s configuration: each width's step also times the alignment."""
    return {**_resnet_config(profile), "timing_repeats": TIMING_REPEATS}


def _resnet_cifar100_config(profile: Profile) -> dict[str, Any]:
    return {**_resnet_config(profile), "resnet_dataset": "cifar100"}


def load_resnet_data(profile: Profile, dataset: str | None = None) -> dict[str, np.ndarray]:
    """The images of a ResNet20 experiment: NHWC float32 in [0, 1].

    The dataset is ``"cifar10"`` (the paper; :func:`symlib.data.load_cifar10`, which finds,
    verifies or downloads the archive and says where it looked when it cannot),
    ``"cifar100"`` (App. C, Fig. A3; :func:`symlib.data.load_cifar100`, its 100 fine
    classes) or ``"fashion_mnist"`` (the quick stand-in: the profile's split, 28x28x1). The
    first ``resnet_n_train`` training and ``resnet_n_eval`` test images are kept.

    Args:
        profile: the run profile.
        dataset: the dataset (default ``profile.resnet_dataset``).

    Returns:
        ``x_train``, ``y_train``, ``x_test``, ``y_test``.

    Raises:
        ValueError: for another dataset.
    """
    from symlib.core.cnn import as_images

    ds = profile.resnet_dataset if dataset is None else dataset
    if ds in ("cifar10", "cifar100"):
        from symlib import data
        load = data.load_cifar10 if ds == "cifar10" else data.load_cifar100
        (xtr, ytr), (xte, yte) = load("train"), load("test")
        xtr, xte = (np.asarray(a, np.float32) / np.float32(255.0) for a in (xtr, xte))
    elif ds == "fashion_mnist":
        d = load_align_data(profile, ds)
        xtr, ytr, xte, yte = (np.asarray(as_images(d["x_train"])), d["y_train"], np.asarray(as_images(d["x_test"])),
                              d["y_test"])
    else:
        raise ValueError(f"resnet_dataset must be one of {sorted(RESNET_CLASSES)}, got {ds!r}")
    n, m = profile.resnet_n_train, profile.resnet_n_eval
    return {"x_train": xtr[:n], "y_train": np.asarray(ytr[:n], np.int32),
            "x_test": xte[:m], "y_test": np.asarray(yte[:m], np.int32)}


@register("vi_alignment_resnet20", _resnet_timed_config,
          "Rossi et al. Sec. 5.1: two mean-field VI ResNet20 (LayerNorm) per width, Wasserstein alignment through "
          "the ResNet20 permutation spec, marginalised barriers (CIFAR-10; Fashion-MNIST as the quick stand-in)",
          summary=align_summary, result=VIAlignmentResult)
def vi_alignment_resnet20(profile: Profile) -> dict[str, Any]:
    """:func:`vi_alignment` for ResNet20 with LayerNorm: per width in ``resnet_widths``, two
    VI fits (Bayes by backprop, ``resnet_epochs`` epochs), their Wasserstein alignment and
    the marginalised loss along the W2 geodesic on ``resnet_n_eval`` training and test
    images, naive and aligned; and the timings of App. C, Fig. A2 on the same pair
    (:func:`~symlib.experiments.rossi.runs.time_alignments`, while its posteriors are at hand:
    they are not kept).

    Args:
        profile: the run profile (``resnet_*`` and ``align_*`` settings).

    Returns:
        The artifact, in the layout of :func:`vi_alignment`: ``artifact[dataset]["w<width>"]``
        with ``curves``, ``barrier``, ``alignment_seconds``, ``elbo_final``, ``timings`` (the
        columns of ``time_alignments`` for that width) and no posteriors.
    """
    return _resnet_pairs(profile, profile.resnet_dataset, "vi_alignment_resnet20", _resnet_timed_config(profile),
                         timed=True)


@register("vi_alignment_resnet20_cifar100", _resnet_cifar100_config,
          "Rossi et al. App. C, Fig. A3: vi_alignment_resnet20 on CIFAR-100, where the paper's alignment does not "
          "reach a zero barrier", summary=align_summary, result=VIAlignmentResult)
def vi_alignment_resnet20_cifar100(profile: Profile) -> dict[str, Any]:
    """:func:`vi_alignment_resnet20` on CIFAR-100 (100 classes), whatever ``resnet_dataset``
    says: App. C, Fig. A3. The text we have does not name Fig. A3's architecture; ResNet20
    is the paper's architecture for CIFAR (App. B, Table 1).

    Args:
        profile: the run profile (``resnet_*`` and ``align_*`` settings).

    Returns:
        The artifact, in the layout of :func:`vi_alignment` with the one dataset ``"cifar100"``.

    Raises:
        symlib.data.DataNotFoundError: if the CIFAR-100 archive cannot be had.
    """
    return _resnet_pairs(profile, "cifar100", "vi_alignment_resnet20_cifar100", _resnet_cifar100_config(profile))


def _resnet_pairs(profile: Profile, dataset: str, name: str, cache_config: dict[str, Any], *,
                  timed: bool = False) -> dict[str, Any]:
    """The ResNet20 experiments' work: per width in ``resnet_widths``, two VI fits on
    ``dataset``, their alignment and curves (and, ``timed``, the alignment's timings), each
    width a step kept in the artifact cache under ``name`` and ``cache_config``."""
    from symlib.core.resnet import resnet20_apply, resnet20_init
    from symlib.inference import Data, Model, VIConfig, fit_vi
    from symlib.symmetry.architectures import resnet20_permutation_spec

    d = load_resnet_data(profile, dataset)
    spec = resnet20_permutation_spec()
    channels = d["x_train"].shape[-1]
    m = profile.resnet_n_eval
    evals = {"train": (d["x_train"][:m], d["y_train"][:m]), "test": (d["x_test"], d["y_test"])}

    # one compiled step called from Python: XLA runs ResNet20's backward pass slowly inside a scan on CPU
    config = VIConfig(epochs=profile.resnet_epochs, batch_size=profile.resnet_batch_size,
                      optimizer=constant_adam(profile.learning_rate), prior_var=profile.align_prior_var,
                      std_init=ROSSI_VI_SETTINGS["std_init"], temperature=ROSSI_VI_SETTINGS["temperature"],
                      loop="python")
    data = Data(d["x_train"], d["y_train"])

    def step(width: int) -> dict[str, Any]:
        fits = [fit_vi(jax.random.key(100 * seed + width),
                       resnet20_init(jax.random.key(1000 + 100 * seed + width), width, RESNET_CLASSES[dataset],
                                     channels),
                       Model(resnet20_apply), data, config)
                for seed in (0, 1)]
        q0, q1 = (fits[0].mean, fits[0].std), (fits[1].mean, fits[1].std)
        entry = {**align_and_compare(spec, q0, q1, evals, profile, taus=profile.resnet_n_lambdas,
                                     num_samples=profile.resnet_samples, apply_fn=resnet20_apply, batch_size=500),
                 "elbo_final": np.asarray([f.info["elbo"][-1] for f in fits])}
        if timed:
            t = time_alignments({width: {"mu0": q0[0], "sigma0": q0[1], "mu1": q1[0], "sigma1": q1[1]}}, spec)
            entry["timings"] = {k: np.asarray(v) for k, v in t.items() if k != "width"}
        return entry

    # one step per width, each kept in the artifact cache: a killed run resumes
    widths = [int(w) for w in profile.resnet_widths]
    steps = cached_steps(name, cache_config, widths, step)
    out = {f"w{width}": entry for width, entry in zip(widths, steps)}
    return {dataset: out}


# ------------------------------------------------------------------ timings (App. C, Fig. A2, ResNet20)


def _resnet_timings_summary(res: dict[str, Any]) -> dict[str, Any]:
    """``vi_alignment_timings``' summary, and ``endpoint_accuracy`` (the gate of the ResNet20 claims)."""
    accuracy = {ds: np.asarray(v, float).tolist() for ds, v in res["endpoint_accuracy"].items()}
    return {**timings_summary(res), "endpoint_accuracy": accuracy}


@register("vi_alignment_resnet20_timings", _resnet_timed_config,
          "Rossi et al. App. C, Fig. A2 (ResNet20): seconds to align the VI posteriors of vi_alignment_resnet20, "
          "and to match their means", summary=_resnet_timings_summary, result=VIAlignmentTimings)
def vi_alignment_resnet20_timings(profile: Profile) -> dict[str, Any]:
    """The timings that ``vi_alignment_resnet20`` took of each width's pair, as one table:
    App. C, Fig. A2 for ResNet20, in the layout of ``vi_alignment_timings``.

    Args:
        profile: the run profile (its ``vi_alignment_resnet20`` run is loaded or computed).

    Returns:
        The artifact: ``widths[dataset]``, ``table[dataset][column]`` (the columns of
        :func:`~symlib.experiments.rossi.runs.time_alignments`, one row per width),
        ``repeats``, and ``endpoint_accuracy[dataset]`` (per width, the lower test accuracy of
        each pair's two model averages: the paper times trained solutions).
    """
    pairs = run("vi_alignment_resnet20", profile, verbose=False).artifact
    out: dict[str, Any] = {"widths": {}, "table": {}, "repeats": TIMING_REPEATS,
                           "endpoint_accuracy": {ds: np.asarray(v) for ds, v in
                                                 align_summary(pairs)["endpoint_accuracy"].items()}}
    for dataset, per_width in pairs.items():
        widths = widths_of(per_width)
        timings = [per_width[f"w{w}"]["timings"] for w in widths]
        out["widths"][dataset] = np.asarray(widths)
        out["table"][dataset] = {k: np.concatenate([np.asarray(t[k]) for t in timings]) for k in timings[0]}
    return out
