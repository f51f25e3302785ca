"""The registry of the book's experiments, and what they share.

An experiment is a function ``fn(profile) -> artifact`` (a nested dict of arrays) registered
under a name with :func:`register`, together with the part of the profile its result
depends on (which goes into the cache key), a one-line description, optionally a function
making a small JSON summary of the artifact, and optionally a typed result class.
:func:`run` loads the artifact from the cache (or computes and stores it) and returns the
typed result; its ``artifact`` attribute keeps the raw nested dict.

The paper modules (:mod:`symlib.experiments.xiao`, :mod:`symlib.experiments.rossi`,
:mod:`symlib.experiments.laurent`) register their experiments when imported; importing
:mod:`symlib.experiments` imports all of them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from symlib import data
from symlib.experiments import cache
from symlib.experiments.profiles import Profile, get_profile

Experiment = Callable[[Profile], dict[str, Any]]
ConfigOf = Callable[[Profile], dict[str, Any]]
Summary = Callable[[dict[str, Any]], dict[str, Any]]

#: experiment name -> (function computing the artifact, function giving its config, one-line description)
EXPERIMENTS: dict[str, tuple[Experiment, ConfigOf, str]] = {}
#: experiment name -> function turning its artifact into a small JSON-able summary
SUMMARIES: dict[str, Summary] = {}
#: experiment name -> typed result class (a subclass of :class:`ExperimentResult`)
RESULT_TYPES: dict[str, type[ExperimentResult]] = {}

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, eq=False)
class ExperimentResult:
    """Result of an experiment: the raw artifact, and in subclasses its named fields.

    Subclasses add fields and override :meth:`from_artifact`; the artifact on disk is
    always the nested dict kept in ``artifact``. Their float fields hold ``numpy.float64``
    values (a subclass of ``float``), so arithmetic on them behaves as on the cached arrays
    (a division by zero gives inf or nan with a warning, not an exception).

    Attributes:
        artifact: the experiment's nested dict of arrays, as stored in the artifact cache.
    """

    artifact: dict[str, Any] = dataclasses.field(repr=False)

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> ExperimentResult:
        """Build the result from a cached artifact (subclasses override this and inherit
        this docstring).

        Args:
            artifact: the experiment's nested dict of arrays.

        Returns:
            The result: ``artifact``, and in a subclass its named fields read from it.
        """
        return cls(artifact=artifact)


def pick(options: Mapping[K, V], key: K, what: str) -> V:
    """``options[key]``, with a clear error for a key that is not there.

    Args:
        options: the available values by key.
        key: the key asked for.
        what: what the key names (for the message), e.g. ``"split"``.

    Returns:
        The value stored under ``key``.

    Raises:
        ValueError: if ``key`` is not one of ``options``.
    """
    if key not in options:
        raise ValueError(f"unknown {what} {key!r}; expected one of {list(options)}")
    return options[key]


def register(name: str, config_of: ConfigOf, doc: str, summary: Summary | None = None,
             result: type[ExperimentResult] | None = None) -> Callable[[Experiment], Experiment]:
    """Decorator registering ``fn(profile) -> artifact`` under ``name``.

    Args:
        name: the experiment's name (also the cache file's prefix).
        config_of: ``config_of(profile)`` is the part of the profile the result depends on;
            it goes into the cache key.
        doc: one-line description, shown by ``python -m symlib list`` and ``run --help``.
        summary: turns the artifact into the numbers saved under ``book/results/`` by
            ``python -m symlib run --out``.
        result: typed result class built from the artifact by :func:`run` (default:
            :class:`ExperimentResult`).

    Returns:
        The decorator; it returns the function unchanged.
    """

    def wrap(fn: Experiment) -> Experiment:
        EXPERIMENTS[name] = (fn, config_of, doc)
        if summary is not None:
            SUMMARIES[name] = summary
        if result is not None:
            RESULT_TYPES[name] = result
        return fn

    return wrap


def run(name: str, profile: Profile | str | None = None, *, verbose: bool = True) -> ExperimentResult:
    """Result of experiment ``name`` under ``profile``, from the artifact cache when present.

    Args:
        name: a registered experiment (see :func:`describe`).
        profile: a profile, a profile name, or None for the active one (``$SYMLIB_PROFILE``).
        verbose: log whether the artifact was loaded or computed (INFO on the
            ``symlib.experiments.cache`` logger; ``python -m symlib run`` shows it).

    Returns:
        The experiment's typed result (its class is registered with the experiment); the
        raw nested dict is its ``artifact`` attribute.

    Raises:
        ValueError: for an unknown experiment or profile name.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    profile = profile if isinstance(profile, Profile) else get_profile(profile)
    fn, config_of, _ = EXPERIMENTS[name]
    artifact = cache.cached(name, config_of(profile), lambda: fn(profile), verbose=verbose)
    return RESULT_TYPES.get(name, ExperimentResult).from_artifact(artifact)


def describe() -> str:
    """The registered experiments, one line each.

    Returns:
        ``"<name> <description>"`` lines, sorted by name.
    """
    return "\n".join(f"{name:24s} {doc}" for name, (_, _, doc) in sorted(EXPERIMENTS.items()))


def data_config(profile: Profile) -> dict[str, Any]:
    """The part of ``profile`` that decides the data split.

    Args:
        profile: the run profile.

    Returns:
        ``data_source``, ``n_train``, ``n_val`` and ``n_test`` by name.
    """
    return {k: getattr(profile, k) for k in ("data_source", "n_train", "n_val", "n_test")}


def mlp_config(profile: Profile) -> dict[str, Any]:
    """The part of ``profile`` that decides a MAP-trained MLP (data split and training).

    Args:
        profile: the run profile.

    Returns:
        :func:`data_config` plus ``hidden``, ``epochs``, ``batch_size``, ``learning_rate``
        and ``prior_std``.
    """
    keys = ("hidden", "epochs", "batch_size", "learning_rate", "prior_std")
    return {**data_config(profile), **{k: getattr(profile, k) for k in keys}}


def load_data(profile: Profile, dataset: str = "mnist") -> dict[str, np.ndarray]:
    """The profile's deterministic train/validation/test split of ``dataset``.

    Args:
        profile: the run profile (data source and split sizes).
        dataset: ``"mnist"`` or ``"fashion_mnist"``.

    Returns:
        ``x_train``, ``y_train``, ``x_val``, ``y_val``, ``x_test``, ``y_test`` arrays.
    """
    return data.load_split(dataset, source=profile.data_source, n_train=profile.n_train,
                           n_val=profile.n_val, n_test=profile.n_test, seed=0)


def load_bnn_data(profile: Profile) -> dict[str, np.ndarray]:
    """The profile's split with the training set cut to its first ``bnn_n_train`` examples,
    which every posterior approximation (HMC, VI, ensemble) is fitted to.

    Args:
        profile: the run profile.

    Returns:
        The split of :func:`load_data` with ``x_train`` and ``y_train`` shortened.

    Raises:
        ValueError: if ``bnn_n_train`` exceeds the profile's training examples.
    """
    d = dict(load_data(profile))
    n = profile.bnn_n_train
    if n > len(d["x_train"]):
        raise ValueError(f"bnn_n_train={n} exceeds the {len(d['x_train'])} training examples of profile {profile.name!r}")
    d["x_train"], d["y_train"] = d["x_train"][:n], d["y_train"][:n]
    return d


def load_align_data(profile: Profile, dataset: str) -> dict[str, np.ndarray]:
    """The split used by the alignment experiments.

    Fashion-MNIST's shipped subset has 5,000 training images, so with the subset its
    train and validation sizes are capped at 4,500 and 500.

    Args:
        profile: the run profile.
        dataset: ``"mnist"`` or ``"fashion_mnist"``.

    Returns:
        The split, as :func:`load_data` returns it.
    """
    n_train, n_val = profile.n_train, profile.n_val
    if profile.data_source == "subset" and dataset == "fashion_mnist":
        n_train, n_val = min(n_train, 4_500), min(n_val, 500)
    return data.load_split(dataset, source=profile.data_source, n_train=n_train, n_val=n_val,
                           n_test=profile.n_test, seed=0)
