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
from typing import Any, NamedTuple, TypeVar

import numpy as np

from symlib import data
from symlib.data.files import check_choice
from symlib.experiments import cache
from symlib.experiments.profiles import Profile, get_profile

Compute = Callable[[Profile], dict[str, Any]]
ConfigOf = Callable[[Profile], dict[str, Any]]
Summary = Callable[[dict[str, Any]], dict[str, Any]]

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


@dataclass(frozen=True)
class Experiment:
    """One registered experiment (:func:`register`).

    Attributes:
        name: its name (also the cache file's prefix).
        compute: ``compute(profile) -> artifact``.
        config_of: ``config_of(profile)``, the part of the profile the artifact depends on.
        doc: one-line description.
        summary: turns the artifact into a small JSON-able summary (None: no summary).
        result: the typed result class built from the artifact.
    """

    name: str
    compute: Compute
    config_of: ConfigOf
    doc: str
    summary: Summary | None = None
    result: type[ExperimentResult] = ExperimentResult


#: experiment name -> its :class:`Experiment` record
EXPERIMENTS: dict[str, Experiment] = {}


class _Field(Mapping):
    """A read-only view of one field of the registered experiments that have it."""

    def __init__(self, field_name: str):
        self._field = field_name

    def __getitem__(self, name: str):
        value = getattr(EXPERIMENTS[name], self._field) if name in EXPERIMENTS else None
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self):
        return (n for n, e in EXPERIMENTS.items() if getattr(e, self._field) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: experiment name -> its summary function (a view of :data:`EXPERIMENTS`)
SUMMARIES: Mapping[str, Summary] = _Field("summary")
#: experiment name -> its typed result class (a view of :data:`EXPERIMENTS`)
RESULT_TYPES: Mapping[str, type[ExperimentResult]] = _Field("result")


def pick(options: Mapping[K, V], key: K, what: str) -> V:
    """``options[key]``, with a clear error for a key that is not there.

    Args:
        options: the available values by key.
        key: the key asked for.
        what: what the key names (for the message), e.g. ``"split"``.

    Returns:
        The value stored under ``key``.

    Raises:
        ValueError: if ``key`` is not one of ``options`` (:func:`symlib.data.files.check_choice`'s message).
    """
    check_choice(what, key, options)
    return options[key]


def register(name: str, config_of: ConfigOf, doc: str, summary: Summary | None = None,
             result: type[ExperimentResult] | None = None) -> Callable[[Compute], Compute]:
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

    def wrap(fn: Compute) -> Compute:
        EXPERIMENTS[name] = Experiment(name, fn, config_of, doc, summary, result or ExperimentResult)
        return fn

    return wrap


def _resolve(name: str, profile: Profile | str | None) -> tuple[Experiment, dict[str, Any], Profile]:
    """The experiment, its cache config under ``profile``, and the profile."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    profile = profile if isinstance(profile, Profile) else get_profile(profile)
    exp = EXPERIMENTS[name]
    return exp, exp.config_of(profile), profile


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
    exp, config, profile = _resolve(name, profile)
    artifact = cache.cached(name, config, lambda: exp.compute(profile), verbose=verbose)
    return exp.result.from_artifact(artifact)


def lookup(name: str, profile: Profile | str | None = None) -> ExperimentResult | None:
    """The result of experiment ``name`` if its artifact is in the cache, never computing it.

    For pages that show what earlier chapters (or batch runs) computed without starting a
    long computation themselves (the reproduction report).

    Args:
        name: a registered experiment.
        profile: a profile, a profile name, or None for the active one.

    Returns:
        The typed result, as :func:`run` returns it, or None when the artifact for this
        profile and code version is not stored (or is damaged).

    Raises:
        ValueError: for an unknown experiment or profile name.
    """
    exp, config, _ = _resolve(name, profile)
    try:
        artifact = cache.load(name, config)
    except cache.CorruptArtifactError:
        return None
    return None if artifact is None else exp.result.from_artifact(artifact)


class Steps(NamedTuple):
    """An experiment's cached steps (:func:`symlib.experiments.cache.cached_steps`) as one
    description: what the experiment runs, resuming from the artifact cache, and what the GPU
    queue runs a few at a time on a lent device (:mod:`symlib.experiments.gpu_queue`, which
    takes any object with these four members, as it takes a :class:`Blocks`).

    Attributes:
        name: the experiment whose steps these are.
        cache_config: its cache config.
        starts: the steps' labels, in order (JSON-like).
        train: ``train(label)``: the step's artifact.
    """

    name: str
    cache_config: dict[str, Any]
    starts: list[Any]
    train: Callable[[Any], dict[str, Any]]


@dataclass(frozen=True, eq=False)
class Blocks:
    """Networks trained in blocks of ``block_size``, each block one cached step of ``name``.

    The one description of a bank of networks that both :func:`run_blocks` (the experiment,
    on any machine, resuming from the artifact cache) and the GPU queue
    (:mod:`symlib.experiments.gpu_queue`, one block at a time on a lent device) train from.

    Attributes:
        name: the experiment's name (the steps are cached as ``<name>.step``).
        config: the experiment's cache config (``block_size`` is added to it).
        init_fn: ``init_fn(key) -> params`` of one network.
        init_keys: one initialisation key per network.
        data_keys: one minibatch key per network.
        x: training inputs.
        y: integer training labels.
        cfg: the :class:`~symlib.inference.training.TrainConfig`.
        block_size: networks per block (>= 1).
        apply_fn: ``apply_fn(params, x) -> logits`` of one network.
        observe: optional per-step observer (as for :func:`symlib.inference.fit_ensemble`).
        observe_epoch: optional per-epoch observer (its output a tuple or list of arrays,
            or an array).
    """

    name: str
    config: Mapping[str, Any]
    init_fn: Callable
    init_keys: Any
    data_keys: Any
    x: Any
    y: Any
    cfg: Any
    block_size: int
    apply_fn: Callable
    observe: Callable | None = None
    observe_epoch: Callable | None = None

    def __post_init__(self):
        n, b = len(self.init_keys), int(self.block_size)
        if b < 1 or n < 1 or len(self.data_keys) != n:
            raise ValueError(f"block_size and the number of networks must be at least 1 and the key arrays of equal "
                             f"length, got block_size={self.block_size}, {n} init keys, {len(self.data_keys)} data keys")

    @property
    def cache_config(self) -> dict[str, Any]:
        """The config of the steps in the cache (``config`` with ``block_size``)."""
        return {**self.config, "block_size": int(self.block_size)}

    @property
    def starts(self) -> list[int]:
        """The first network of every block: the blocks' step labels."""
        return list(range(0, len(self.init_keys), int(self.block_size)))

    def first(self, used: int, used_name: str, block_name: str) -> Blocks:
        """Only the first ``used`` networks (0: all), in the same blocks with the same keys: a
        labelled reduction that reads the blocks trained so far (the profile's ``used_name``,
        e.g. ``bank_used``, in blocks of its ``block_name``).

        Raises:
            ValueError: if ``used`` is not 0 or a multiple of the block size up to the networks'
                number.
        """
        n, block = len(self.init_keys), int(self.block_size)
        if used and (used % block or not 0 < used <= n):
            raise ValueError(f"{used_name} must be 0 (all) or a multiple of {block_name}={block} up to the {n} "
                             f"networks (whole blocks), got {used}")
        return dataclasses.replace(self, init_keys=self.init_keys[:used or n], data_keys=self.data_keys[:used or n])

    def train(self, start: int) -> dict[str, Any]:
        """Train the block of networks ``start`` to ``start + block_size`` (or the last).

        Returns:
            The block's artifact: ``params`` (stacked), ``losses`` per network and epoch and,
            with an observer, ``seen`` (a sequence of arrays stored as a dict by index).
        """
        import jax

        from symlib.inference import Data, Model, fit_ensemble

        stop = min(start + int(self.block_size), len(self.init_keys))
        params0 = jax.vmap(self.init_fn)(self.init_keys[start:stop])
        model = Model(self.apply_fn)
        post = fit_ensemble(self.data_keys[start:stop], params0, model, Data(self.x, self.y), self.cfg,
                            observe=self.observe, observe_epoch=self.observe_epoch)
        res = {"params": jax.tree_util.tree_map(np.asarray, post.samples), "losses": np.asarray(post.info["epoch_loss"])}
        if "observed" in post.info:
            res["seen"] = {k: {str(i): np.asarray(a) for i, a in enumerate(v)} if isinstance(v, (list, tuple))
                           else np.asarray(v) for k, v in post.info["observed"].items()}
        return res


def blocks_of(name: str, config: Mapping[str, Any], key, init_fn, apply_fn, n_networks: int, x, y, cfg, *,
              block_size: int, observe=None, observe_epoch=None) -> Blocks:
    """The :class:`Blocks` of ``n_networks`` networks trained from ``key``: with
    ``init_key, data_key = split(key)``, network ``i`` starts from
    ``init_fn(split(init_key, n_networks)[i])`` and draws its minibatches from
    ``split(data_key, n_networks)[i]``, whatever the block size (to float rounding where a
    block is smaller than ``n_networks``: ``vmap`` batches the arithmetic differently).

    Raises:
        ValueError: if ``block_size`` or ``n_networks`` is below 1.
    """
    import jax

    if int(n_networks) < 1:
        raise ValueError(f"n_networks must be at least 1, got {n_networks}")
    init_key, data_key = jax.random.split(key)
    return Blocks(name, config, init_fn, jax.random.split(init_key, int(n_networks)),
                  jax.random.split(data_key, int(n_networks)), x, y, cfg, block_size, apply_fn, observe, observe_epoch)


def fit_many_blocks(name: str, config: Mapping[str, Any], init_fn, init_keys, data_keys, x, y, cfg, *,
                    block_size: int, apply_fn: Callable, observe=None, observe_epoch=None) -> tuple:
    """:func:`symlib.inference.fit_ensemble` of the networks ``init_fn(init_keys[i])``
    with minibatch keys ``data_keys[i]``, in blocks of ``block_size`` networks, each block
    kept in the artifact cache: :func:`run_blocks` of the :class:`Blocks` of these arguments
    (see there).

    Raises:
        ValueError: if ``block_size`` is below 1, or the key arrays differ in length.
    """
    return run_blocks(Blocks(name, config, init_fn, init_keys, data_keys, x, y, cfg, block_size, apply_fn, observe,
                             observe_epoch))


def run_blocks(blocks: Blocks) -> tuple:
    """Train every block of ``blocks``, each kept in the artifact cache as soon as it is done
    (:func:`symlib.experiments.cache.cached_steps`), and join them.

    Args:
        blocks: the networks and how to train them.

    Returns:
        ``(params, epoch_losses)`` as numpy arrays stacked over all networks, and the
        observations (``"step"`` and/or ``"epoch"``) when an observer was given.
    """
    import jax

    done = cache.cached_steps(blocks.name, blocks.cache_config, blocks.starts, blocks.train, label=int)
    cat = lambda *a: np.concatenate(a)  # noqa: E731
    params = jax.tree_util.tree_map(cat, *[blk["params"] for blk in done])
    losses = cat(*[blk["losses"] for blk in done])
    if blocks.observe is None and blocks.observe_epoch is None:
        return params, losses
    seen = {}
    for k, v in done[0]["seen"].items():
        if isinstance(v, Mapping):
            seen[k] = [cat(*[blk["seen"][k][str(i)] for blk in done]) for i in range(len(v))]
        else:
            seen[k] = cat(*[blk["seen"][k] for blk in done])
    return params, losses, seen


def describe() -> str:
    """The registered experiments, one line each.

    Returns:
        ``"<name> <description>"`` lines, sorted by name.
    """
    return "\n".join(f"{name:24s} {exp.doc}" for name, exp in sorted(EXPERIMENTS.items()))


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


def map_train_config(profile: Profile):
    """The profile's MAP training of an MLP (Xiao et al.'s Adam recipe, App. A).

    Args:
        profile: the run profile (``epochs``, ``batch_size``, ``learning_rate``, ``prior_std``).

    Returns:
        The :class:`~symlib.inference.training.TrainConfig` (Adam at ``learning_rate``,
        :func:`symlib.experiments.recipes.constant_adam`), its other fields at their defaults.
    """
    from symlib.experiments.recipes import constant_adam
    from symlib.inference.training import TrainConfig

    return TrainConfig(profile.epochs, profile.batch_size, constant_adam(profile.learning_rate), profile.prior_std)


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
