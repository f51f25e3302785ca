"""Full-batch Hamiltonian Monte Carlo on BNN posteriors (BlackJAX), chunked, resumable and checksummed.

Implements the sampler of Xiao et al. (App. A): a standard Gaussian prior, full-batch
log-likelihood, HMC with an identity mass matrix, a fixed step size and a fixed number of
leapfrog steps per iteration (500 in the paper), ``num_burnin`` burn-in iterations (600),
then one sample kept every ``thin`` iterations (10) until ``num_samples`` (1000) are kept.
Optionally (off by default) the step size or the number of leapfrog steps is drawn afresh
at every iteration (``HMCConfig.step_size_jitter``, ``HMCConfig.num_leapfrog_jitter``;
Neal 2011, Sec. 5.4.2.2), which keeps a fixed trajectory from resonating with some
coordinates' periods (see :class:`HMCConfig`).

* :func:`make_logdensity` builds the (tempered) log posterior of an MLP on a data set,
  data-parallel over devices with ``jax.sharding``: the examples are split along a 1-D
  ``Mesh(devices, ("data",))``, parameters are replicated and XLA inserts the reduction
  of the per-example sum. One code path for one CPU, one GPU or several devices.
* :func:`run_hmc` runs several chains at once (``vmap``) with BlackJAX's HMC kernel.
  The transitions run inside ``jax.lax.scan``; one jitted call makes ``thin`` iterations
  and returns only the last state, plus per-iteration statistics for every iteration.
  With ``out_dir`` the kept samples are written to disk chunk by chunk
  (``samples_XXXXX.npz``) together with a checkpoint of the chain state, so that an
  interrupted run resumes where it stopped and gives the same chain as an uninterrupted
  one (the key of iteration ``t`` of chain ``c`` is ``fold_in(fold_in(key, c), t)``).
* **Several processes or hosts** (JAX's distributed runtime, started by
  :func:`symlib.core.distributed.initialize_from_env`): the same calls in every process.
  The mesh spans the devices of every process, each process provides its own rows
  (``make_logdensity(..., process_local=True)``) or the whole data set, the chain state
  is replicated (every process gets all samples), and with ``out_dir`` (on a shared
  filesystem) only process 0 writes while the others wait at a barrier after each
  checkpoint; every process reads the stored run to resume it.

**Identity of a stored run.** A run is identified by :func:`run_fingerprint`: the
:class:`HMCConfig`, the chunk layout (``chunk_size``), the data (the fingerprint of a
:func:`make_logdensity` target), the initial state, the key and :data:`SAMPLER_VERSION`;
never by the version of symlib's code, so editing unrelated code does not abandon a long
run. :func:`run_hmc` resumes only a run with the same identity and otherwise says which
part differs.

Files in ``out_dir`` (each written to a temporary name, then renamed):

* ``burnin_XXXXX.npz``: per-iteration statistics of a stretch of burn-in;
* ``samples_XXXXX.npz``: ``leaf_<i>`` arrays of shape ``(chains, k, ...)`` (``k`` kept
  samples, at most ``chunk_size``) and the statistics of the iterations that produced them;
* ``state_XXXXX.npz``: the checkpoint before segment ``XXXXX`` (positions, log densities,
  gradients, step sizes, dual-averaging state). Every checkpoint is kept (each is about
  two samples per chain), so a lost or damaged file can be recomputed from the one before;
* ``state.json``: the commit marker: progress counters, the config, the run's identity,
  the sha256 checksum of every file above and the name of the latest checkpoint.
  Rewritten last, so a crash never leaves it pointing at something incomplete.

Every file is checked against its checksum whenever it is read (loading samples or a
result, resuming a run). A missing, truncated or damaged file, or one without a checksum,
raises :class:`CorruptRunError` naming it; deleting that file and calling :func:`run_hmc`
again with the same arguments recomputes it (and everything after it) from the
checkpoint before it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from symlib.core.checks import check_finite, check_finite_tree, mlp_layer_names, positive_float, positive_int
from symlib.core.io import atomic_write
from symlib.core.models import mlp_apply
from symlib.core.progress import progress_bar
from symlib.core.distributed import allgather, barrier, global_mesh, is_writer, put_global

__all__ = [
    "SAMPLER_VERSION",
    "CorruptRunError",
    "HMCConfig",
    "HMCResult",
    "HMCWarning",
    "JitteredHMC",
    "LogDensity",
    "iter_sample_chunks",
    "jittered_hmc",
    "load_result",
    "load_samples",
    "log_prior",
    "make_logdensity",
    "run_fingerprint",
    "run_hmc",
]

STATS = ("acceptance_rate", "is_divergent", "energy_error")

SAMPLER_VERSION = 1
"""Version of the sampler's mathematics. Bump it when the integrator, the step-size
adaptation, the momentum distribution or the thinning/burn-in logic changes, i.e. whenever
the same config, data, initial state and key would give a different chain. It is part of
every run's identity (:func:`run_fingerprint`), so a stored run of another sampler version
is never resumed."""

_FORMAT_VERSION = 2  # layout of out_dir; 2: sha256 checksums in state.json, every checkpoint kept


class HMCWarning(UserWarning):
    """Emitted after a run whose acceptance rate or divergences suggest a bad step size."""


class CorruptRunError(ValueError):
    """A file of a run stored by :func:`run_hmc` is missing, truncated, damaged or has no
    checksum. The message names the file and says how to recompute it."""


# --------------------------------------------------------------------------------------
# Target densities
# --------------------------------------------------------------------------------------


@jax.tree_util.register_pytree_node_class
class LogDensity:
    """A log density ``params -> scalar`` that carries its data as pytree leaves.

    ``fn(params, *data)`` is the density; ``data`` (arrays, possibly sharded) are passed to
    jitted samplers as arguments instead of being baked into the program as constants.
    ``mesh`` is the device mesh the data live on (``None``: wherever JAX puts them) and
    ``fingerprint`` a hash of the data and settings, used to refuse resuming a run on a
    different target (``None``: the data cannot be checked).
    """

    def __init__(self, fn: Callable, data: tuple = (), mesh: Mesh | None = None, fingerprint: str | None = None):
        self.fn, self.data, self.mesh, self.fingerprint = fn, tuple(data), mesh, fingerprint

    def __call__(self, params):
        return _call_logdensity(self, params)

    def replicate(self, tree):
        """Place ``tree`` replicated on this density's mesh.

        Args:
            tree: a pytree of arrays.

        Returns:
            ``tree`` with every leaf replicated on :attr:`mesh` (``tree`` itself without a mesh).
        """
        if self.mesh is None:
            return tree
        return put_global(tree, NamedSharding(self.mesh, P()))

    def tree_flatten(self):
        """JAX pytree protocol.

        Returns:
            The data arrays (the leaves) and ``(fn, mesh, fingerprint)`` (static).
        """
        return self.data, (self.fn, self.mesh, self.fingerprint)

    @classmethod
    def tree_unflatten(cls, aux, children):
        """JAX pytree protocol: the inverse of :meth:`tree_flatten`.

        Args:
            aux: ``(fn, mesh, fingerprint)``.
            children: the data arrays.

        Returns:
            A :class:`LogDensity`.
        """
        return cls(aux[0], tuple(children), aux[1], aux[2])


def _replicated(logdensity: LogDensity, tree):
    """Constrain the outputs of a jitted function to be replicated on the density's mesh, so
    that every process holds (and can read) the whole chain state."""
    if logdensity.mesh is None:
        return tree
    sharding = NamedSharding(logdensity.mesh, P())
    return jax.tree.map(lambda a: jax.lax.with_sharding_constraint(a, sharding), tree)


@jax.jit
def _call_logdensity(logdensity: LogDensity, params):
    return logdensity.fn(params, *logdensity.data)


def _as_logdensity(logdensity: Callable) -> LogDensity:
    if isinstance(logdensity, LogDensity):
        return logdensity
    if not callable(logdensity):
        raise TypeError(f"logdensity must be callable, got {type(logdensity).__name__}")
    return LogDensity(logdensity)


@dataclass(frozen=True)
class _BNNLogPosterior:
    """Tempered log posterior of a classifier: log N(params; 0, prior_var I) + loglik / T."""

    prior_var: float
    temperature: float
    apply_fn: Callable
    example_shape: tuple
    max_label: int

    def __call__(self, params, x, y, mask):
        logits = self._logits(params, x)
        logp = jax.nn.log_softmax(logits, axis=-1)
        per_example = jnp.take_along_axis(logp, y[:, None], axis=-1)[:, 0]
        loglik = jnp.sum(jnp.where(mask, per_example, 0.0))
        return log_prior(params, self.prior_var) + loglik / self.temperature

    def _logits(self, params, x):
        if self.apply_fn is mlp_apply:
            if len(self.example_shape) != 1:
                raise ValueError(f"the MLP takes x of shape (n, features), got examples of shape {self.example_shape}")
            _check_mlp_params(params, self.example_shape[0])
        try:
            logits = self.apply_fn(params, x)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"apply_fn(params, x) failed for x of shape (n, {', '.join(map(str, self.example_shape))}): {err}. "
                "Check that the parameters fit the data (input width, layer shapes)."
            ) from err
        if logits.ndim != 2 or logits.shape[0] != x.shape[0]:
            raise ValueError(f"apply_fn must return logits of shape (n, classes); got {logits.shape} for x of shape {x.shape}")
        if logits.shape[1] <= self.max_label:
            raise ValueError(
                f"labels go up to {self.max_label} but the network has {logits.shape[1]} outputs; "
                "labels must lie in [0, number of classes)"
            )
        return logits


def _check_mlp_params(params, num_features: int) -> None:
    """Clear layout and shape errors for parameters of :func:`symlib.core.models.mlp_apply`
    (other ``apply_fn`` are checked by calling them)."""
    mlp_layer_names(params)
    kernel = params["dense_0"]["kernel"]
    if kernel.ndim != 2:
        raise ValueError(f"expected the parameters of one MLP (2-D kernels), got dense_0/kernel of shape {kernel.shape}")
    if kernel.shape[0] != num_features:
        raise ValueError(
            f"params do not fit x: dense_0/kernel has input width {kernel.shape[0]} but x has {num_features} features"
        )


def log_prior(params, prior_var: float = 1.0) -> jax.Array:
    """Log density of the isotropic Gaussian prior, summed over every parameter.

    Args:
        params: a pytree of arrays.
        prior_var: the prior variance of every parameter.

    Returns:
        ``log N(params; 0, prior_var I)`` as a scalar.
    """
    leaves = jax.tree_util.tree_leaves(params)
    dim = sum(leaf.size for leaf in leaves)
    sq = sum(jnp.sum(jnp.square(leaf)) for leaf in leaves)
    return -0.5 * sq / prior_var - 0.5 * dim * math.log(2.0 * math.pi * prior_var)


def _validate_data(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim < 2:
        raise ValueError(f"x must have an example axis and at least one feature axis (e.g. (n, features) or "
                         f"(n, height, width, channels) images), got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"x must be floating point, got dtype {x.dtype}")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one integer label per example), got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must hold integer class labels, got dtype {y.dtype}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} examples but y has {y.shape[0]} labels")
    if x.shape[0] == 0:
        raise ValueError("the data set is empty")
    check_finite(x, "x")
    if y.min() < 0:
        raise ValueError(f"labels must be >= 0, got min label {y.min()}")
    return x, y.astype(np.int32)


def _data_mesh(devices) -> Mesh:
    if devices is None:  # every device of every process, each process's devices in one block
        return global_mesh("data")
    devices = list(devices)
    if not devices:
        raise ValueError("devices is empty")
    return Mesh(np.array(devices), ("data",))


def _shard_data(x: np.ndarray, y: np.ndarray, mesh: Mesh):
    """Pad the examples to a multiple of the device count (mask 0 on padding) and shard them."""
    n, n_dev = x.shape[0], mesh.devices.size
    pad = (-n) % n_dev
    mask = np.concatenate([np.ones(n, bool), np.zeros(pad, bool)])
    x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
    y = np.concatenate([y, np.zeros(pad, y.dtype)])
    sharding = NamedSharding(mesh, P("data"))
    return tuple(jax.device_put(a, sharding) for a in (x, y, mask))


def _shard_local_data(x: np.ndarray, y: np.ndarray, mesh: Mesh):
    """Global arrays from each process's own rows (see ``make_logdensity(process_local=True)``).

    Every process pads its rows to the same count, a multiple of its number of devices
    (mask 0 on padding); the global arrays hold process 0's block, then process 1's, ...

    Returns:
        ``(x, y, mask)`` sharded along the mesh, the largest label of all processes, and
        the sha256 digests of every process's rows (``(processes, 32)`` uint8).
    """
    local_devices = [d for d in mesh.devices.flat if d.process_index == jax.process_index()]
    digest = np.frombuffer(bytes.fromhex(hash_parts(x, y)), np.uint8)
    info = allgather(np.concatenate([np.array([x.shape[0], len(local_devices), int(y.max())], np.int64),
                                     digest.astype(np.int64)]))
    if len(set(info[:, 1].tolist())) != 1 or info[0, 1] == 0:
        raise ValueError(f"process_local=True needs the mesh to hold the same number of devices of every process, "
                         f"got {info[:, 1].tolist()} (processes in order)")
    n_dev = int(info[0, 1])
    rows = -(-int(info[:, 0].max()) // n_dev) * n_dev  # rows per process, padding included
    pad = rows - x.shape[0]
    mask = np.concatenate([np.ones(x.shape[0], bool), np.zeros(pad, bool)])
    x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
    y = np.concatenate([y, np.zeros(pad, y.dtype)])
    sharding = NamedSharding(mesh, P("data"))
    arrays = tuple(jax.make_array_from_process_local_data(sharding, a, (rows * info.shape[0],) + a.shape[1:])
                   for a in (x, y, mask))
    return arrays, int(info[:, 2].max()), info[:, 3:].astype(np.uint8)


def hash_parts(*parts) -> str:
    """sha256 hex digest of ``parts``: arrays by shape, dtype and bytes, anything else by ``repr``."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(str((part.shape, part.dtype.str)).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()


def make_logdensity(x, y, prior_var: float = 1.0, temperature: float = 1.0, apply_fn: Callable = mlp_apply,
                    devices=None, *, process_local: bool = False) -> LogDensity:
    """Full-batch tempered log posterior of a classifier.

    The density is ``params -> log N(params; 0, prior_var I) + sum_i log p(y_i | x_i) / T``
    with ``p(y | x) = softmax(apply_fn(params, x))[y]``. The examples are sharded over
    ``devices``, padded to a multiple of their number with masked rows; parameters are
    replicated.

    **Several processes** (after :func:`jax.distributed.initialize`, e.g. through
    :func:`symlib.core.distributed.initialize_from_env`): ``devices=None`` means the
    devices of every process, and every process calls this function (and then
    :func:`run_hmc`) with the same arguments, except for the data with ``process_local``:

    * ``process_local=False`` (default): every process passes the whole data set; each
      places only the rows of its own devices.
    * ``process_local=True``: every process passes only its own rows (e.g.
      ``x[process_rows(n)]``, :func:`symlib.core.distributed.process_rows`); the data
      set is their concatenation in process order. Each process pads its rows to a common
      count. The density's fingerprint then hashes the list of per-process hashes (in one
      process: the same fingerprint as ``process_local=False``), so a stored run resumes
      with the same split of the data over processes only.

    Args:
        x: inputs, a floating array of shape ``(n, features)`` (an MLP) or ``(n, ...)``
            for other networks (e.g. NHWC images for :func:`symlib.core.cnn.optunet_apply`),
            without NaN or inf.
        y: integer labels ``>= 0`` of shape ``(n,)``.
        prior_var: variance of the Gaussian prior on every parameter.
        temperature: the log-likelihood is divided by it (``T``).
        apply_fn: ``apply_fn(params, x) -> logits`` of shape ``(n, classes)``.
        devices: devices to shard the examples over (default: all devices of the default
            backend, of every process). With ``process_local``, leave it ``None``.
        process_local: ``x`` and ``y`` are this process's rows only (see above).

    Returns:
        A :class:`LogDensity` whose ``fingerprint`` hashes the data, ``prior_var``,
        ``temperature`` and the name of ``apply_fn``.

    Raises:
        ValueError: for malformed data (shapes, dtypes, NaN/inf, negative labels), a
            non-positive ``prior_var`` or ``temperature``, an empty ``devices``; and, when
            the density is first called, for parameters that do not fit ``x`` (for
            :func:`symlib.core.models.mlp_apply`: not the ``dense_0..dense_{L-1}`` layout, or the
            wrong input width) or too few classes for the labels.
    """
    x, y = _validate_data(x, y)
    prior_var, temperature = positive_float(prior_var, "prior_var"), positive_float(temperature, "temperature")
    mesh = _data_mesh(devices)
    name = getattr(apply_fn, "__qualname__", repr(apply_fn))
    if not process_local:
        fn = _BNNLogPosterior(prior_var, temperature, apply_fn, tuple(x.shape[1:]), int(y.max()))
        fingerprint = hash_parts(x, y, fn.prior_var, fn.temperature, name)
        return LogDensity(fn, _shard_data(x, y, mesh), mesh, fingerprint)
    data, max_label, digests = _shard_local_data(x, y, mesh)
    fn = _BNNLogPosterior(prior_var, temperature, apply_fn, tuple(x.shape[1:]), max_label)
    if len(digests) == 1:
        fingerprint = hash_parts(x, y, fn.prior_var, fn.temperature, name)
    else:
        fingerprint = hash_parts("process_local", digests, fn.prior_var, fn.temperature, name)
    return LogDensity(fn, data, mesh, fingerprint)


# --------------------------------------------------------------------------------------
# Configuration and results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HMCConfig:
    """HMC settings. ``num_samples`` is the number kept per chain, one every ``thin``
    iterations after ``num_burnin`` burn-in iterations. With ``adapt_step_size`` the step
    size is tuned by dual averaging towards ``target_accept`` during burn-in (starting from
    ``step_size``) and frozen afterwards.

    **Jitter** (Neal 2011, "MCMC using Hamiltonian dynamics", Sec. 5.4.2.2; Stan's
    ``stepsize_jitter``). With a fixed step size ``eps`` and a fixed number of leapfrog
    steps ``L``, a coordinate of a Gaussian posterior with standard deviation ``s`` whose
    trajectory length ``eps * L`` is close to a multiple of its period (about ``2 pi s``)
    comes back where it started after every iteration and barely moves; close to an odd
    multiple of the half period (``pi s``) it is only reflected, so its square (its
    variance) barely moves. Drawing the step size, or the number of steps, afresh at every
    iteration breaks this resonance:

    * ``step_size_jitter = j``: iteration ``t`` of a chain integrates with step size
      ``eps_t = eps * u``, ``u ~ Uniform[1 - j, 1 + j]`` (``eps`` the fixed or adapted
      step size; during adaptation the dual averaging still tunes ``eps`` from the
      acceptance rates of the jittered steps). The stored ``step_size`` is ``eps``.
    * ``num_leapfrog_jitter = J``: iteration ``t`` takes ``L_t ~ Uniform{L - J, ..., L + J}``
      leapfrog steps (so ``J < num_leapfrog``). On a GPU all chains wait for the longest
      trajectory of the iteration, so this costs up to ``L + J`` gradient evaluations.

    The draws use keys derived from the iteration's key ``k = fold_in(fold_in(key, c), t)``
    by ``fold_in(k, _JITTER_STREAM)``, a stream that BlackJAX's step never uses, so they are
    independent of the momentum and of the accept/reject decision (which still use ``k``,
    as without jitter). A run is still reproducible and resumable, and the jitter is part
    of the run's identity (it is a field of the config).

    **The default is no jitter** (``step_size_jitter = 0.0``, ``num_leapfrog_jitter = 0``):
    it is the sampler as Xiao et al. describe it (App. A: 500 leapfrog steps per
    iteration; no jitter is mentioned) and it gives bit for bit the chains of symlib before
    jitter existed, so stored runs keep their identity and are resumed. Turn jitter on
    (e.g. ``step_size_jitter=0.2``) when the posterior has scales that differ widely and
    ``L`` is fixed; :func:`symlib.inference.diagnostics.coordinate_diagnostics` shows the
    coordinates whose effective sample size collapses.

    Raises:
        ValueError: naming the field, for a non-positive or non-finite ``step_size``, counts
            below their minimum (``num_burnin >= 0``, the others ``>= 1``), a ``target_accept``
            outside (0, 1), ``adapt_step_size`` without burn-in, a ``step_size_jitter``
            outside [0, 1) or a ``num_leapfrog_jitter`` outside [0, ``num_leapfrog``).
    """

    step_size: float
    num_leapfrog: int
    num_burnin: int
    num_samples: int
    thin: int
    num_chains: int = 1
    adapt_step_size: bool = False
    target_accept: float = 0.8
    step_size_jitter: float = 0.0
    num_leapfrog_jitter: int = 0

    def __post_init__(self):
        _check_real(self.step_size, "step_size")
        if not self.step_size > 0:
            raise ValueError(f"step_size must be > 0, got {self.step_size}")
        for name, low in (("num_leapfrog", 1), ("num_burnin", 0), ("num_samples", 1), ("thin", 1), ("num_chains", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not isinstance(self.adapt_step_size, (bool, np.bool_)):
            raise ValueError(f"adapt_step_size must be a bool, got {self.adapt_step_size!r}")
        _check_real(self.target_accept, "target_accept")
        if not 0 < self.target_accept < 1:
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept}")
        if self.adapt_step_size and self.num_burnin == 0:
            raise ValueError("adapt_step_size needs burn-in iterations (num_burnin >= 1) to adapt during")
        _check_real(self.step_size_jitter, "step_size_jitter")
        if not 0 <= self.step_size_jitter < 1:
            raise ValueError(f"step_size_jitter must lie in [0, 1) (the step size is drawn from "
                             f"[(1 - j) eps, (1 + j) eps]), got {self.step_size_jitter}")
        jit_l = self.num_leapfrog_jitter
        if isinstance(jit_l, bool) or not isinstance(jit_l, (int, np.integer)) or not 0 <= jit_l < self.num_leapfrog:
            raise ValueError(f"num_leapfrog_jitter must be an integer in [0, num_leapfrog) = [0, {self.num_leapfrog}) "
                             f"(at least one leapfrog step per iteration), got {jit_l!r}")

    @property
    def num_iterations(self) -> int:
        """Burn-in plus sampling iterations."""
        return self.num_burnin + self.num_samples * self.thin

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain Python values.

        Returns:
            ``{field name: value}``, JSON-serialisable; ``HMCConfig(**cfg.to_dict()) == cfg``.
        """
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def identity_dict(self) -> dict[str, Any]:
        """The fields that identify a run: :meth:`to_dict` without the jitter fields when
        they are 0 (no jitter), so that a run without jitter keeps the identity it had
        before jitter existed.

        Returns:
            A JSON-serialisable dict of field values.
        """
        d = self.to_dict()
        for name in _JITTER_FIELDS:
            if d[name] == 0:
                del d[name]
        return d


_JITTER_FIELDS = ("step_size_jitter", "num_leapfrog_jitter")


def _check_real(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


class HMCResult:
    """Output of :func:`run_hmc`.

    ``samples``: pytree like the initial position with leading ``(num_chains, num_samples)``
    axes (numpy; loaded from ``out_dir`` on first access when the run was stored there).
    ``stats``: dict of ``(num_chains, num_iterations)`` arrays ``acceptance_rate``,
    ``is_divergent``, ``energy_error`` (burn-in included). ``step_size``: final step size
    per chain. ``config``: the :class:`HMCConfig`. ``out_dir``: where the run is stored, or ``None``.
    """

    def __init__(self, samples, stats, step_size, cfg: HMCConfig, out_dir: Path | None = None, like=None):
        self._samples, self.stats, self.step_size, self.config = samples, stats, np.asarray(step_size), cfg
        self.out_dir, self._like = out_dir, like

    @property
    def samples(self):
        """The kept samples (read from ``out_dir`` and checked against their checksums on first access)."""
        if self._samples is None:
            self._samples = load_samples(self.out_dir, like=self._like)
        return self._samples

    @property
    def num_iterations(self) -> int:
        """Burn-in plus sampling iterations of the config."""
        return self.config.num_iterations

    @property
    def num_burnin(self) -> int:
        """Burn-in iterations of the config."""
        return self.config.num_burnin

    @property
    def mean_acceptance(self) -> float:
        """Mean acceptance probability after burn-in, over chains and iterations."""
        return float(np.mean(self.stats["acceptance_rate"][:, self.num_burnin:]))

    @property
    def num_divergences(self) -> int:
        """Divergent transitions after burn-in, summed over chains."""
        return int(np.sum(self.stats["is_divergent"][:, self.num_burnin:]))

    @property
    def num_burnin_divergences(self) -> int:
        """Divergent transitions during burn-in, summed over chains."""
        return int(np.sum(self.stats["is_divergent"][:, : self.num_burnin]))

    def summary(self) -> dict[str, Any]:
        """Acceptance, divergences and step size in one dict.

        Returns:
            ``mean_acceptance``, ``num_divergences``, ``num_burnin_divergences``,
            ``step_size`` (list, one per chain), ``num_chains``, ``num_samples``, ``num_iterations``.
        """
        return {
            "mean_acceptance": self.mean_acceptance,
            "num_divergences": self.num_divergences,
            "num_burnin_divergences": self.num_burnin_divergences,
            "step_size": self.step_size.tolist(),
            "num_chains": self.config.num_chains,
            "num_samples": self.config.num_samples,
            "num_iterations": self.num_iterations,
        }

    def warning_messages(self) -> list[str]:
        """Human-readable problems with the run.

        Returns:
            One message per problem (acceptance after burn-in below 0.2 or above 0.99,
            divergent transitions); empty when the run looks fine.
        """
        msgs, acc, eps = [], self.mean_acceptance, _fmt_steps(self.step_size)
        n_iter = self.config.num_chains * self.config.num_samples * self.config.thin
        if acc < 0.2:
            msgs.append(f"mean acceptance after burn-in is {acc:.3f} (< 0.2) with step size {eps}: "
                        "the step size is probably too large; try a smaller one")
        elif acc > 0.99:
            msgs.append(f"mean acceptance after burn-in is {acc:.3f} (> 0.99) with step size {eps}: "
                        "the step size may be needlessly small (slow exploration); try a larger one")
        div, div_burn = self.num_divergences, self.num_burnin_divergences
        if div or (div_burn and not self.config.adapt_step_size):
            msgs.append(f"{div} of {n_iter} transitions after burn-in diverged ({div_burn} during burn-in) "
                        f"with step size {eps}: try a smaller step size")
        return msgs


def _fmt_steps(step_size: np.ndarray) -> str:
    vals = np.unique(np.round(np.asarray(step_size, float), 8))
    return f"{vals[0]:.4g}" if vals.size == 1 else f"{vals.min():.4g}..{vals.max():.4g}"


# --------------------------------------------------------------------------------------
# The jitted transition block
# --------------------------------------------------------------------------------------


def _kinetic_energy(momentum) -> jax.Array:
    """0.5 |p|^2: the kinetic energy under the identity mass matrix."""
    return 0.5 * sum(jnp.sum(jnp.square(m)) for m in jax.tree_util.tree_leaves(momentum))


def _dimension(tree) -> int:
    return sum(leaf.size for leaf in jax.tree_util.tree_leaves(tree))


_JITTER_STREAM = 0x6A17E4B3
"""``fold_in`` data of an iteration's jitter key (see :class:`HMCConfig`). It must not be a
small integer: with JAX's partitionable threefry ``fold_in(k, i) == split(k, n)[i]``, and
BlackJAX's HMC step draws the momentum from ``split(k)[0]`` and the accept/reject uniform
from ``split(k)[1]``. A jitter drawn from ``fold_in(k, 1)`` would equal that uniform, make
the step size depend on the acceptance decision and bias the chain (about -13% on a
variance; ``tests/test_hmc_mixing.py`` checks this)."""


def _jitter_keys(key) -> tuple[jax.Array, jax.Array]:
    """The keys of an iteration's step-size and step-count draws, from its key ``key``."""
    key_eps, key_steps = jax.random.split(jax.random.fold_in(key, _JITTER_STREAM))
    return key_eps, key_steps


def _jittered(key, eps, *, num_leapfrog, step_size_jitter, num_leapfrog_jitter):
    """The step size and number of leapfrog steps of one iteration whose key is ``key``:
    ``eps`` and ``num_leapfrog`` themselves without jitter (the code path of an unjittered
    sampler), else drawn as :class:`HMCConfig` says, from ``fold_in(key, _JITTER_STREAM)``,
    independently of the momentum and of the accept/reject decision."""
    if not (step_size_jitter or num_leapfrog_jitter):
        return eps, num_leapfrog
    key_eps, key_steps = _jitter_keys(key)
    if step_size_jitter:
        u = jax.random.uniform(key_eps, (), eps.dtype, -1.0, 1.0)
        eps = eps * (1.0 + step_size_jitter * u)
    if num_leapfrog_jitter:
        num_leapfrog = jax.random.randint(key_steps, (), num_leapfrog - num_leapfrog_jitter,
                                          num_leapfrog + num_leapfrog_jitter + 1)
    return eps, num_leapfrog


class JitteredHMC(NamedTuple):
    """A jittered HMC kernel in BlackJAX's style (:func:`jittered_hmc`).

    Attributes:
        init: ``init(position) -> state`` (a ``blackjax`` HMC state).
        step: ``step(key, state, step_size) -> (state, info)``: one iteration with step
            size ``step_size`` before jitter (``info`` is BlackJAX's HMC info).
    """

    init: Callable
    step: Callable


def jittered_hmc(logdensity: Callable, num_leapfrog: int, *, step_size_jitter: float = 0.0,
                 num_leapfrog_jitter: int = 0) -> JitteredHMC:
    """The HMC kernel of :func:`run_hmc`, for a loop of one's own: identity mass matrix,
    ``num_leapfrog`` leapfrog steps, and per iteration a step size and a number of steps
    jittered as :class:`HMCConfig` says (uniform ``eps * (1 + step_size_jitter * U(-1, 1))``
    and ``num_leapfrog +- num_leapfrog_jitter``), drawn from the iteration's key
    independently of the momentum and of the accept/reject decision. Without jitter an
    iteration is exactly ``blackjax.hmc(logdensity, eps, ...).step(key, state)``.

    Args:
        logdensity: ``logdensity(position) -> scalar`` (e.g. a :class:`LogDensity`).
        num_leapfrog: leapfrog steps per iteration (before jitter).
        step_size_jitter: relative half-width of the step-size jitter, in ``[0, 1)``.
        num_leapfrog_jitter: half-width of the step-count jitter, below ``num_leapfrog``.

    Returns:
        A :class:`JitteredHMC` (``init``, ``step``); both can be jitted and vmapped.
    """

    def init(position):
        return blackjax.hmc.init(position, logdensity)

    def step(key, state, step_size):
        eps, steps = _jittered(key, jnp.asarray(step_size), num_leapfrog=num_leapfrog,
                               step_size_jitter=step_size_jitter, num_leapfrog_jitter=num_leapfrog_jitter)
        leaves = jax.tree_util.tree_leaves(state.position)
        inverse_mass = jnp.ones(_dimension(state.position), leaves[0].dtype)
        hmc = blackjax.hmc(logdensity, eps, inverse_mass_matrix=inverse_mass, num_integration_steps=steps)
        return hmc.step(key, state)

    return JitteredHMC(init, step)


def _chain_block(logdensity, state, da_state, step_size, chain_key, start, num_active, adapt, *, block_len,
                 num_leapfrog, target_accept, step_size_jitter=0.0, num_leapfrog_jitter=0):
    """HMC iterations ``start .. start + num_active - 1`` of one chain, in a scan of length
    ``block_len`` (iterations ``>= num_active`` are skipped by ``lax.cond``, so one compiled
    program serves every block length up to ``block_len``).

    With ``adapt`` the step size is ``exp(log_step_size)`` of the dual-averaging state, which
    is updated with each acceptance rate; otherwise ``step_size`` is used unchanged. Each
    iteration integrates with that step size and ``num_leapfrog`` steps, each jittered as
    :class:`HMCConfig` says when ``step_size_jitter`` / ``num_leapfrog_jitter`` is non-zero.
    Returns the last state, the dual-averaging state, the (unjittered) step size and the
    per-iteration (acceptance rate, divergence flag, energy error), of which the first
    ``num_active`` are real.
    """
    dtype = jnp.result_type(state.logdensity)
    kernel = jittered_hmc(logdensity, num_leapfrog, step_size_jitter=step_size_jitter,
                          num_leapfrog_jitter=num_leapfrog_jitter)
    _, da_update, _ = blackjax.adaptation.step_size.dual_averaging_adaptation(target_accept)

    def transition(carry, t):
        state, da, eps = carry
        eps = jnp.where(adapt, jnp.exp(da.log_step_size).astype(eps.dtype), eps)
        key = jax.random.fold_in(chain_key, t)
        new_state, info = kernel.step(key, state, eps)
        acceptance = info.acceptance_rate.astype(dtype)
        energy_error = (info.energy - (-state.logdensity + _kinetic_energy(info.momentum))).astype(dtype)
        da = jax.tree.map(partial(jnp.where, adapt), da_update(da, acceptance), da)
        return (new_state, da, eps), (acceptance, info.is_divergent, energy_error)

    def skip(carry, t):
        return carry, (jnp.zeros((), dtype), jnp.zeros((), bool), jnp.zeros((), dtype))

    def one_iteration(carry, i):
        return jax.lax.cond(i < num_active, transition, skip, carry, start + i)

    steps = jnp.arange(block_len, dtype=jnp.int32)
    (state, da_state, step_size), stats = jax.lax.scan(one_iteration, (state, da_state, step_size), steps)
    return state, da_state, step_size, stats


@partial(jax.jit, static_argnames=("block_len", "num_leapfrog", "target_accept", "step_size_jitter",
                                   "num_leapfrog_jitter"))
def _run_block(logdensity, state, da_state, step_size, chain_keys, start, num_active, adapt, *, block_len,
               num_leapfrog, target_accept, step_size_jitter=0.0, num_leapfrog_jitter=0):
    """:func:`_chain_block` for every chain at once (``vmap`` over the leading chain axis)."""
    block = partial(_chain_block, block_len=block_len, num_leapfrog=num_leapfrog, target_accept=target_accept,
                    step_size_jitter=step_size_jitter, num_leapfrog_jitter=num_leapfrog_jitter)
    in_axes = (None, 0, 0, 0, 0, None, None, None)
    out = jax.vmap(block, in_axes=in_axes)(logdensity, state, da_state, step_size, chain_keys, start, num_active, adapt)
    return _replicated(logdensity, out)


@jax.jit
def _init_states(logdensity, positions):
    return _replicated(logdensity, jax.vmap(jittered_hmc(logdensity, 1).init)(positions))


def _init_dual_averaging(step_size: jax.Array, target_accept: float):
    da_init, _, _ = blackjax.adaptation.step_size.dual_averaging_adaptation(target_accept)
    da = jax.vmap(da_init)(step_size)
    return da._replace(step=jnp.asarray(da.step, jnp.int32))


def _final_step_size(da_state) -> jax.Array:
    return jnp.exp(da_state.log_step_size_avg)


# --------------------------------------------------------------------------------------
# The plan: segments of blocks, each followed by a checkpoint
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Segment:
    kind: str  # "burnin" or "samples"
    index: int  # file index within its kind
    start: int  # first global iteration
    blocks: tuple[int, ...]  # iterations per jitted call

    @property
    def num_iters(self) -> int:
        return sum(self.blocks)


def plan_segments(cfg: HMCConfig, chunk_size: int) -> list[_Segment]:
    """Burn-in in blocks of ``thin`` iterations (the remainder first), then sampling blocks of
    ``thin`` iterations, grouped ``chunk_size`` blocks per segment (= per file)."""
    segments, start = [], 0
    rem, full = cfg.num_burnin % cfg.thin, cfg.num_burnin // cfg.thin
    burn_blocks = ([rem] if rem else []) + [cfg.thin] * full
    for i in range(0, len(burn_blocks), chunk_size):
        seg = _Segment("burnin", len(segments), start, tuple(burn_blocks[i:i + chunk_size]))
        segments.append(seg)
        start += seg.num_iters
    for j, i in enumerate(range(0, cfg.num_samples, chunk_size)):
        seg = _Segment("samples", j, start, (cfg.thin,) * min(chunk_size, cfg.num_samples - i))
        segments.append(seg)
        start += seg.num_iters
    return segments


# --------------------------------------------------------------------------------------
# Storage: checksummed files
# --------------------------------------------------------------------------------------


def _segment_file(seg: _Segment) -> str:
    return f"{seg.kind}_{seg.index:05d}.npz"


def _state_file(segment: int) -> str:
    """The checkpoint taken before segment ``segment``."""
    return f"state_{segment:05d}.npz"


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write ``arrays`` to ``path`` atomically; returns the sha256 hex digest of the file."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    atomic_write(path, lambda f: f.write(data))
    return hashlib.sha256(data).hexdigest()


def save_json(path: Path, obj) -> None:
    """Write ``obj`` to ``path`` as JSON, atomically."""
    atomic_write(path, lambda f: f.write(json.dumps(obj, indent=1).encode()))


def _recompute_advice(path: Path) -> str:
    what = "checkpoint" if path.name.startswith("state_") else "file"
    return (f"Delete that {what} and call run_hmc again with the same arguments to recompute it from the "
            f"previous checkpoint, or delete the run directory {path.parent} to start over.")


def read_verified(path: Path, checksums: dict[str, str]) -> bytes:
    """The bytes of ``path`` after checking them against ``checksums[path.name]``.

    Raises:
        CorruptRunError: naming the file if it is missing, has no checksum or does not match it.
    """
    if not path.exists():
        raise CorruptRunError(f"{path} is missing. Call run_hmc again with the same arguments to recompute it "
                              f"from the previous checkpoint, or delete the run directory {path.parent} to start over.")
    expected = checksums.get(path.name)
    if expected is None:
        raise CorruptRunError(f"{path} has no sha256 checksum in {path.parent / 'state.json'}, so it cannot be "
                              f"verified. {_recompute_advice(path)}")
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise CorruptRunError(f"{path} is truncated or corrupted: its sha256 is {actual[:16]}..., expected "
                              f"{expected[:16]}... ({len(data)} bytes). {_recompute_advice(path)}")
    return data


def _load_npz(out_dir: Path, name: str, meta: dict):
    """``np.load`` of a verified file of the run in ``out_dir`` (use as a context manager)."""
    return np.load(io.BytesIO(read_verified(out_dir / name, meta["checksums"])))


_META_KEYS = ("identity", "config", "chunk_size", "next_segment", "num_burnin_chunks", "num_sample_chunks",
              "num_leaves", "state_file", "checksums")


def read_json(path: Path, advice: str) -> Any:
    """The JSON in ``path``, or None when there is no such file.

    Raises:
        CorruptRunError: if it is not valid JSON, with ``advice`` (what to do about it).
    """
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CorruptRunError(f"{path} is not valid JSON ({err}): {advice}") from err


def _read_meta(out_dir: Path) -> dict | None:
    """The run's ``state.json``, or ``None`` if there is none.

    Raises:
        CorruptRunError: if it is not valid JSON or lacks an entry.
        ValueError: if it was written in another storage format.
    """
    path = out_dir / "state.json"
    meta = read_json(path, f"truncated, or not an HMC output directory? Delete the run directory {out_dir} to "
                           "start over.")
    if meta is None:
        return None
    if not isinstance(meta, dict) or meta.get("format_version") != _FORMAT_VERSION:
        version = meta.get("format_version") if isinstance(meta, dict) else None
        raise ValueError(f"{out_dir} holds an HMC run in storage format {version}, but this symlib reads format "
                         f"{_FORMAT_VERSION} (checksummed files); delete that directory or choose another out_dir")
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise CorruptRunError(f"{path} lacks {missing}; delete the run directory {out_dir} to start over")
    return meta


def _require_meta(out_dir: Path) -> dict:
    meta = _read_meta(out_dir)
    if meta is None:
        raise FileNotFoundError(f"no HMC run in {out_dir} (state.json missing)")
    return meta


def tree_skeleton(tree) -> Any:
    """JSON description of a pytree's containers (leaves numbered), or None if unsupported."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    numbered = jax.tree_util.tree_unflatten(treedef, list(range(len(leaves))))

    def encode(node):
        if isinstance(node, int):
            return {"leaf": node}
        if type(node) is dict and all(isinstance(k, str) for k in node):
            return {"dict": {k: encode(v) for k, v in node.items()}}
        if type(node) in (list, tuple):
            return {type(node).__name__: [encode(v) for v in node]}
        if node is None:
            return {"none": None}
        raise TypeError

    try:
        return encode(numbered)
    except TypeError:
        return None


def rebuild_tree(skeleton, leaves: list):
    """The pytree that :func:`tree_skeleton` described, with ``leaves`` at its numbered leaves."""
    kind, value = next(iter(skeleton.items()))
    if kind == "leaf":
        return leaves[value]
    if kind == "dict":
        return {k: rebuild_tree(v, leaves) for k, v in value.items()}
    if kind == "none":
        return None
    items = [rebuild_tree(v, leaves) for v in value]
    return tuple(items) if kind == "tuple" else items


def _unflatten_like(like, meta: dict, leaves: list):
    if like is not None:
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(like), leaves)
    if meta.get("structure") is not None:
        return rebuild_tree(meta["structure"], leaves)
    return leaves


def iter_sample_chunks(out_dir, like=None) -> Iterator[tuple[int, Any]]:
    """Stored chunks of samples of a run, one in memory at a time.

    Args:
        out_dir: the run's directory (see :func:`run_hmc`).
        like: a pytree with the structure of one sample; default: the structure recorded
            in state.json (nested dicts, lists, tuples), else a list of leaves.

    Yields:
        ``(index of the chunk's first sample, samples)`` with leaves of shape ``(chains, k, ...)``.

    Raises:
        FileNotFoundError: if ``out_dir`` holds no run.
        CorruptRunError: naming a chunk file that is missing or does not match its checksum.
    """
    out_dir = Path(out_dir)
    meta = _require_meta(out_dir)
    first = 0
    for i in range(meta["num_sample_chunks"]):
        with _load_npz(out_dir, f"samples_{i:05d}.npz", meta) as z:
            leaves = [z[f"leaf_{j}"] for j in range(meta["num_leaves"])]
        yield first, _unflatten_like(like, meta, leaves)
        first += leaves[0].shape[1]


def load_samples(out_dir, like=None):
    """All kept samples stored in ``out_dir``.

    Args:
        out_dir: the run's directory.
        like: structure of one sample, as in :func:`iter_sample_chunks`.

    Returns:
        A pytree of numpy arrays of shape ``(chains, num_kept, ...)``.

    Raises:
        FileNotFoundError: if ``out_dir`` holds no run.
        ValueError: if it holds no samples yet.
        CorruptRunError: naming a chunk file that is missing or does not match its checksum.
    """
    chunks = [s for _, s in iter_sample_chunks(out_dir, like)]
    if not chunks:
        raise ValueError(f"{out_dir} holds no samples yet")
    return jax.tree.map(lambda *a: np.concatenate(a, axis=1), *chunks)


def _load_stats(out_dir: Path, meta: dict) -> dict[str, np.ndarray]:
    parts = {k: [] for k in STATS}
    names = [f"burnin_{i:05d}.npz" for i in range(meta["num_burnin_chunks"])]
    names += [f"samples_{i:05d}.npz" for i in range(meta["num_sample_chunks"])]
    for name in names:
        with _load_npz(out_dir, name, meta) as z:
            for k in STATS:
                parts[k].append(z[k])
    return _concat_stats(parts, meta["config"]["num_chains"])


def _concat_stats(parts: dict[str, list], num_chains: int) -> dict[str, np.ndarray]:
    empty = {"acceptance_rate": np.float32, "is_divergent": bool, "energy_error": np.float32}
    return {k: np.concatenate(v, axis=1) if v else np.zeros((num_chains, 0), empty[k]) for k, v in parts.items()}


def load_result(out_dir, like=None) -> HMCResult:
    """The result of a (possibly unfinished) run stored in ``out_dir``.

    Args:
        out_dir: the run's directory.
        like: structure of one sample, as in :func:`iter_sample_chunks`.

    Returns:
        An :class:`HMCResult` with the statistics of every stored iteration; its samples
        are loaded lazily.

    Raises:
        FileNotFoundError: if ``out_dir`` holds no run.
        CorruptRunError: naming a file that is missing or does not match its checksum.
    """
    out_dir = Path(out_dir)
    meta = _require_meta(out_dir)
    with _load_npz(out_dir, meta["state_file"], meta) as z:
        step_size = z["step_size"]
    return HMCResult(None, _load_stats(out_dir, meta), step_size, HMCConfig(**meta["config"]), out_dir, like)


# --------------------------------------------------------------------------------------
# Identity of a run
# --------------------------------------------------------------------------------------

_IDENTITY_PARTS = {
    "config": "HMC config (HMCConfig)",
    "chunk_size": "chunk layout (chunk_size)",
    "data": "data (the log density's fingerprint)",
    "initial_state": "initial state (init_params)",
    "key": "key",
    "sampler_version": "sampler version (SAMPLER_VERSION)",
}


def _key_parts(key) -> tuple:
    key = key if isinstance(key, jax.Array) else jnp.asarray(key)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return str(jax.random.key_impl(key)), np.asarray(jax.random.key_data(key))
    return "raw", np.asarray(key)


def run_identity(cfg: HMCConfig, chunk_size: int, key, positions, logdensity: LogDensity) -> dict[str, Any]:
    """The fields of a run's identity (see :func:`run_fingerprint`), each a digest or a description."""
    leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(positions)]
    structure = tree_skeleton(positions) or str(jax.tree_util.tree_structure(positions))
    return {
        "config": hash_parts(json.dumps(cfg.identity_dict(), sort_keys=True)),
        "chunk_size": chunk_size,
        "data": logdensity.fingerprint,
        "initial_state": hash_parts(json.dumps(structure, sort_keys=True), *leaves),
        "key": hash_parts(*_key_parts(key)),
        "sampler_version": SAMPLER_VERSION,
    }


def run_fingerprint(key, init_params, logdensity: Callable, cfg: HMCConfig, *, chunk_size: int = 50,
                    init_per_chain: bool | None = None) -> dict[str, Any]:
    """The identity of the run that :func:`run_hmc` makes with these arguments.

    It holds exactly what determines the stored files: the config, the chunk layout, the
    data, the initial state, the key and :data:`SAMPLER_VERSION` (not symlib's code
    version). :func:`run_hmc` records it in ``state.json`` and resumes a run in ``out_dir``
    only if it is equal, part by part.

    Args:
        key: the JAX random key of the run.
        init_params: the initial position, as for :func:`run_hmc`.
        logdensity: the target, as for :func:`run_hmc`.
        cfg: the :class:`HMCConfig`.
        chunk_size: kept samples per stored chunk.
        init_per_chain: as for :func:`run_hmc`.

    Returns:
        A JSON-serialisable dict: ``config``, ``initial_state`` and ``key`` (sha256 hex
        digests), ``data`` (``logdensity.fingerprint``: a digest of the data and settings
        for a :func:`make_logdensity` target; ``None`` for a plain function, whose data
        cannot be checked), ``chunk_size`` and ``sampler_version`` (integers).

    Raises:
        TypeError: if ``cfg`` is not an :class:`HMCConfig` or ``logdensity`` is not callable.
        ValueError: for a bad ``chunk_size`` or ``init_params`` (as :func:`run_hmc`).
    """
    run = prepare_run(key, init_params, logdensity, cfg, chunk_size, init_per_chain)
    return run_identity(cfg, run.chunk_size, key, run.positions, run.logdensity)


def _identity_mismatch(out_dir: Path, meta: dict, identity: dict, cfg: HMCConfig) -> str | None:
    """Why the run stored in ``out_dir`` is not this one (``None`` if it is)."""
    stored = meta["identity"]
    differ = [part for part in _IDENTITY_PARTS if stored.get(part) != identity[part]]
    if not differ:
        return None
    shown = {"config": (meta["config"], cfg.to_dict()), "chunk_size": (meta["chunk_size"], identity["chunk_size"]),
             "sampler_version": (stored.get("sampler_version"), identity["sampler_version"])}
    details = [f"{part}: stored {shown[part][0]}, requested {shown[part][1]}" for part in differ if part in shown]
    labels = ", ".join(_IDENTITY_PARTS[part] for part in differ)
    return (f"{out_dir} holds another HMC run: it differs in the {labels}"
            + (f" ({'; '.join(details)})" if details else "")
            + f". Choose another out_dir for this run, or delete {out_dir} to discard the stored one.")


# --------------------------------------------------------------------------------------
# Chain state <-> host arrays
# --------------------------------------------------------------------------------------


@dataclass
class _Carry:
    """Everything a block needs to continue the chains (all with a leading chain axis)."""

    state: Any  # blackjax HMCState
    da_state: Any  # dual-averaging state
    step_size: jax.Array
    iteration: int  # next global iteration
    segment: int  # next segment to run
    num_kept: int
    num_burnin_chunks: int
    num_sample_chunks: int


def carry_at(plan: list[_Segment], segment: int, state, da_state, step_size) -> _Carry:
    """A carry before ``plan[segment]``, its counters read off the plan."""
    done = plan[:segment]
    num_burnin_chunks = sum(seg.kind == "burnin" for seg in done)
    num_kept = sum(len(seg.blocks) for seg in done if seg.kind == "samples")
    return _Carry(state, da_state, step_size, sum(seg.num_iters for seg in done), segment, num_kept,
                  num_burnin_chunks, len(done) - num_burnin_chunks)


def carry_to_host(carry: _Carry) -> dict[str, np.ndarray]:
    """A checkpoint's arrays (numpy) of ``carry``: step size, log density, positions, dual averaging."""
    arrays = {"step_size": np.asarray(carry.step_size), "logdensity": np.asarray(carry.state.logdensity)}
    for i, leaf in enumerate(jax.tree_util.tree_leaves(carry.state.position)):
        arrays[f"position_{i}"] = np.asarray(leaf)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(carry.state.logdensity_grad)):
        arrays[f"grad_{i}"] = np.asarray(leaf)
    for name, value in carry.da_state._asdict().items():
        arrays[f"da_{name}"] = np.asarray(value)
    return arrays


def state_from_host(z, like_state, like_da) -> tuple:
    """(HMC state, dual-averaging state, step size) from a checkpoint's arrays."""
    treedef = jax.tree_util.tree_structure(like_state.position)
    n = treedef.num_leaves
    position = jax.tree_util.tree_unflatten(treedef, [z[f"position_{i}"] for i in range(n)])
    grad = jax.tree_util.tree_unflatten(treedef, [z[f"grad_{i}"] for i in range(n)])
    state = type(like_state)(position, z["logdensity"], grad)
    da = type(like_da)(**{name: z[f"da_{name}"] for name in like_da._fields})
    return state, da, z["step_size"]


# --------------------------------------------------------------------------------------
# run_hmc
# --------------------------------------------------------------------------------------


def _chain_positions(init_params, num_chains: int, init_per_chain: bool | None):
    """Initial positions with a leading chain axis (see :func:`run_hmc`)."""
    leaves = jax.tree_util.tree_leaves(init_params)
    if not leaves:
        raise ValueError("init_params has no array leaves")
    check_finite_tree(init_params, "init_params")
    leaves = [jnp.asarray(a) for a in leaves]
    if init_per_chain is None:
        init_per_chain = num_chains > 1 and all(a.ndim >= 1 and a.shape[0] == num_chains for a in leaves)
    if init_per_chain:
        bad = [a.shape for a in leaves if a.ndim == 0 or a.shape[0] != num_chains]
        if bad:
            raise ValueError(f"init_per_chain=True needs a leading axis of size {num_chains} on every leaf, got shapes {bad}")
        return jax.tree.map(jnp.asarray, init_params)
    return jax.tree.map(lambda a: jnp.broadcast_to(jnp.asarray(a), (num_chains, *jnp.shape(a))), init_params)


def per_chain_keys(key, num_chains: int) -> jax.Array:
    """One key per chain: ``key`` folded with the chain index."""
    return jax.vmap(lambda c: jax.random.fold_in(key, c))(jnp.arange(num_chains))


def strong_types(tree):
    """Device arrays with strong (not weak) types, as after a round trip through numpy, so
    that fresh and resumed runs hit the same compiled programs."""
    return jax.tree.map(lambda a: jnp.asarray(np.asarray(a)), tree)


@dataclass
class _Run:
    """The validated arguments of :func:`run_hmc`."""

    cfg: HMCConfig
    chunk_size: int
    logdensity: LogDensity
    positions: Any  # initial positions, leading chain axis
    plan: list[_Segment]

    @property
    def like(self):
        """The initial position of the first chain: the structure of one sample."""
        return jax.tree.map(lambda a: a[0], self.positions)

    def fresh_carry(self) -> _Carry:
        """The carry before the first iteration."""
        state = _init_states(self.logdensity, self.logdensity.replicate(self.positions))
        step_size = jnp.full((self.cfg.num_chains,), self.cfg.step_size, jnp.float32)
        da_state = _init_dual_averaging(step_size, self.cfg.target_accept)
        return carry_at(self.plan, 0, *strong_types((state, da_state, step_size)))


def prepare_run(key, init_params, logdensity, cfg, chunk_size, init_per_chain) -> _Run:
    """The validated arguments of :func:`run_hmc`, with the initial positions and the segment plan."""
    if not isinstance(cfg, HMCConfig):
        raise TypeError(f"cfg must be an HMCConfig, got {type(cfg).__name__}")
    chunk_size = positive_int(chunk_size, "chunk_size")
    positions = _chain_positions(init_params, cfg.num_chains, init_per_chain)
    return _Run(cfg, chunk_size, _as_logdensity(logdensity), positions, plan_segments(cfg, chunk_size))


class _InMemory:
    """Where a run without ``out_dir`` keeps its statistics and samples."""

    def __init__(self, run: _Run):
        self.run, self.stats, self.kept = run, {k: [] for k in STATS}, []

    def open(self) -> _Carry:
        return self.run.fresh_carry()

    def store(self, seg: _Segment, carry: _Carry, stats: dict, kept) -> None:
        for k in STATS:
            self.stats[k].append(stats[k])
        if kept is not None:
            self.kept.append(kept)

    def result(self, carry: _Carry) -> HMCResult:
        samples = jax.tree.map(lambda *a: np.concatenate(a, axis=1), *self.kept)
        cfg = self.run.cfg
        return HMCResult(samples, _concat_stats(self.stats, cfg.num_chains), np.asarray(carry.step_size), cfg)


class _RunDir:
    """A run stored in ``out_dir``: opens (or resumes) it, writes chunks and checkpoints
    with their checksums, and loads the result.

    With several processes (a shared ``out_dir``) every process reads the stored run, only
    process 0 (:func:`~symlib.core.distributed.is_writer`) writes, and the others wait
    at a barrier after every checkpoint until it is on disk."""

    def __init__(self, path: Path, run: _Run, key):
        self.path, self.run = path, run
        self.identity = run_identity(run.cfg, run.chunk_size, key, run.positions, run.logdensity)
        self.run_hash = hash_parts(json.dumps(self.identity, sort_keys=True))
        self.structure = tree_skeleton(run.like)
        self.checksums: dict[str, str] = {}

    def open(self) -> _Carry:
        """The carry to continue from: a fresh one for a new run, else the latest usable checkpoint."""
        self.path.mkdir(parents=True, exist_ok=True)
        meta = _read_meta(self.path)
        fresh = self.run.fresh_carry()
        if meta is None:
            self._refuse_leftovers()
            barrier("symlib.hmc.open")  # every process has looked before process 0 writes
            self.checkpoint(fresh)
            return fresh
        mismatch = _identity_mismatch(self.path, meta, self.identity, self.run.cfg)
        if mismatch:
            raise ValueError(mismatch)
        segment = self._resume_point(meta)
        plan = self.run.plan
        keep = {_segment_file(seg) for seg in plan[:segment]} | {_state_file(i) for i in range(segment + 1)}
        self.checksums = {name: sha for name, sha in meta["checksums"].items() if name in keep}
        carry = fresh
        if segment > 0:
            with _load_npz(self.path, _state_file(segment), meta) as z:
                state = state_from_host(z, fresh.state, fresh.da_state)
            carry = carry_at(plan, segment, *strong_types(state))
        barrier("symlib.hmc.open")  # every process has read the stored run before process 0 writes
        return carry

    def _refuse_leftovers(self) -> None:
        leftovers = sorted(p.name for pattern in ("samples_*.npz", "burnin_*.npz", "state_*.npz")
                           for p in self.path.glob(pattern))
        if leftovers:
            raise ValueError(f"{self.path} holds HMC files ({leftovers[0]}, ...) but no state.json; refusing to "
                             "overwrite them: choose another out_dir or delete that directory")

    def _resume_point(self, meta: dict) -> int:
        """The segment to continue from: the latest checkpoint, or the one before the first
        deleted file. Checks every stored file before it against its checksum."""
        done = min(meta["next_segment"], len(self.run.plan))
        for i, seg in enumerate(self.run.plan[:done]):
            path = self.path / _segment_file(seg)
            if not path.exists():
                done = i
                break
            read_verified(path, meta["checksums"])
        while done > 0 and not (self.path / _state_file(done)).exists():
            done -= 1
        return done

    def store(self, seg: _Segment, carry: _Carry, stats: dict, kept) -> None:
        """Write the segment's file, then the checkpoint after it."""
        if is_writer():
            arrays = dict(stats, first_iteration=np.int64(seg.start), run_hash=np.str_(self.run_hash))
            if kept is not None:
                arrays.update({f"leaf_{i}": leaf for i, leaf in enumerate(jax.tree_util.tree_leaves(kept))})
            self.checksums[_segment_file(seg)] = save_npz(self.path / _segment_file(seg), arrays)
        self.checkpoint(carry)

    def checkpoint(self, carry: _Carry) -> None:
        """Write ``state_<segment>.npz``, then point ``state.json`` at it (process 0 only;
        every process returns once it is written)."""
        if is_writer():
            self._write_checkpoint(carry)
        barrier(f"symlib.hmc.checkpoint.{carry.segment}")

    def _write_checkpoint(self, carry: _Carry) -> None:
        name = _state_file(carry.segment)
        self.checksums[name] = save_npz(self.path / name, carry_to_host(carry))
        cfg = self.run.cfg
        meta = {
            "format_version": _FORMAT_VERSION,
            "identity": self.identity,
            "run_hash": self.run_hash,
            "config": cfg.to_dict(),
            "chunk_size": self.run.chunk_size,
            "iteration": carry.iteration,
            "next_segment": carry.segment,
            "num_kept": carry.num_kept,
            "num_burnin_chunks": carry.num_burnin_chunks,
            "num_sample_chunks": carry.num_sample_chunks,
            "num_leaves": len(jax.tree_util.tree_leaves(carry.state.position)),
            "structure": self.structure,
            "state_file": name,
            "complete": carry.iteration == cfg.num_iterations,
            "checksums": dict(sorted(self.checksums.items())),
        }
        save_json(self.path / "state.json", meta)

    def result(self, carry: _Carry) -> HMCResult:
        return load_result(self.path, like=self.run.like)


class ProgressMeter:
    """Advances the progress bar block by block and shows the running mean acceptance. It
    reads the acceptance back from the device only when the bar is shown."""

    def __init__(self, total: int, done: int, enabled: bool | None):
        self.bar = progress_bar(total, "hmc", enabled=enabled, initial=done, unit="it")
        self.acc_sum, self.acc_count = 0.0, 0

    def update(self, acceptance, num_iters: int) -> None:
        if self.bar.disable:
            return
        acc = np.asarray(acceptance)[:, :num_iters]
        self.acc_sum, self.acc_count = self.acc_sum + float(acc.sum()), self.acc_count + acc.size
        self.bar.set_postfix_str(f"acc={self.acc_sum / self.acc_count:.3f}", refresh=False)
        self.bar.update(num_iters)

    def close(self) -> None:
        self.bar.close()


def run_segment(seg: _Segment, carry: _Carry, logdensity, chain_keys, cfg: HMCConfig, meter: ProgressMeter):
    """Run one segment's blocks; returns the new carry, host stats and host samples (or None)."""
    adapt = cfg.adapt_step_size and seg.kind == "burnin"
    if cfg.adapt_step_size and seg.kind == "samples" and carry.iteration == cfg.num_burnin:
        carry.step_size = _final_step_size(carry.da_state)  # freeze the adapted step size
    stats, kept, t = [], [], carry.iteration
    for n in seg.blocks:
        state, da, eps, st = _run_block(logdensity, carry.state, carry.da_state, carry.step_size, chain_keys,
                                        np.int32(t), np.int32(n), np.bool_(adapt), block_len=cfg.thin,
                                        num_leapfrog=cfg.num_leapfrog, target_accept=float(cfg.target_accept),
                                        step_size_jitter=float(cfg.step_size_jitter),
                                        num_leapfrog_jitter=int(cfg.num_leapfrog_jitter))
        carry.state, carry.da_state, carry.step_size = state, da, eps
        t += n
        stats.append((st, n))
        if seg.kind == "samples":
            kept.append(state.position)
        meter.update(st[0], n)
    host_stats = {k: np.concatenate([np.asarray(s[i])[:, :n] for s, n in stats], axis=1) for i, k in enumerate(STATS)}
    host_kept = jax.tree.map(lambda *a: np.stack([np.asarray(x) for x in a], axis=1), *kept) if kept else None
    carry.iteration, carry.segment = t, carry.segment + 1
    if seg.kind == "samples":
        carry.num_kept += len(kept)
        carry.num_sample_chunks += 1
    else:
        carry.num_burnin_chunks += 1
    return carry, host_stats, host_kept


def _sample(run: _Run, carry: _Carry, chain_keys, sink, progress: bool | None, on_chunk) -> _Carry:
    """Run the remaining segments of the plan, handing each to ``sink``."""
    # the same placement for fresh and resumed runs (and as the blocks' outputs): one compiled program
    carry.state, carry.da_state, carry.step_size, chain_keys = run.logdensity.replicate(
        (carry.state, carry.da_state, carry.step_size, chain_keys))
    meter = ProgressMeter(run.cfg.num_iterations, carry.iteration, progress if is_writer() else False)
    try:
        for seg in run.plan[carry.segment:]:
            carry, stats, kept = run_segment(seg, carry, run.logdensity, chain_keys, run.cfg, meter)
            sink.store(seg, carry, stats, kept)
            if on_chunk is not None:
                on_chunk({"kind": seg.kind, "index": seg.index, "iteration": carry.iteration})
    finally:
        meter.close()
    return carry


def run_hmc(key, init_params, logdensity: Callable, cfg: HMCConfig, *, out_dir=None, chunk_size: int = 50,
            progress: bool | None = None, init_per_chain: bool | None = None,
            on_chunk: Callable[[dict], None] | None = None) -> HMCResult:
    """Sample ``logdensity`` (any function of a pytree) with HMC; see the module docstring.

    Emits :class:`HMCWarning` for low or high acceptance or for divergences after the run.

    Args:
        key: JAX random key; chain ``c`` uses ``fold_in(key, c)``.
        init_params: the initial position, a pytree of finite arrays. If every leaf has a
            leading axis of size ``cfg.num_chains`` (and ``num_chains > 1``) it is taken as
            one start per chain, otherwise all chains start from it.
        logdensity: the log density, a :class:`LogDensity` (see :func:`make_logdensity`)
            or any function of a pytree.
        cfg: the :class:`HMCConfig`.
        out_dir: store samples and checkpoints there every ``chunk_size`` kept samples and
            resume from it if it already holds this run (same :func:`run_fingerprint`).
        chunk_size: kept samples per stored chunk.
        progress: show a progress bar on stderr (default: only if stderr is a terminal).
        init_per_chain: force reading ``init_params`` as one start per chain (``True``)
            or as one start for all chains (``False``).
        on_chunk: called as ``on_chunk(info)`` after each chunk is stored, with ``info``
            holding ``kind``, ``index`` and ``iteration``.

    Returns:
        An :class:`HMCResult`; with ``out_dir`` its samples are read from disk when first used.

    Raises:
        TypeError: if ``cfg`` is not an :class:`HMCConfig` or ``logdensity`` is not callable.
        ValueError: naming the leaf, if ``init_params`` holds NaN or inf; for a bad
            ``chunk_size`` or per-chain layout; if ``out_dir`` holds another run (naming what
            differs) or stray HMC files.
        CorruptRunError: naming a stored file that is missing, truncated, damaged or
            without checksum (delete it and call again to recompute it).
    """
    run = prepare_run(key, init_params, logdensity, cfg, chunk_size, init_per_chain)
    chain_keys = per_chain_keys(key, cfg.num_chains)
    sink = _InMemory(run) if out_dir is None else _RunDir(Path(out_dir), run, key)
    carry = _sample(run, sink.open(), chain_keys, sink, progress, on_chunk)
    result = sink.result(carry)
    for msg in result.warning_messages():
        warnings.warn(msg, HMCWarning, stacklevel=2)
    return result
