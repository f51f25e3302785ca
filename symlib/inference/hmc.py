"""Full-batch Hamiltonian Monte Carlo on BNN posteriors (BlackJAX), chunked and resumable.

Implements the sampler of Xiao et al. (App. A): a standard Gaussian prior, full-batch
log-likelihood, HMC with an identity mass matrix, a fixed step size and a fixed number of
leapfrog steps per iteration (500 in the paper), ``num_burnin`` burn-in iterations (600),
then one sample kept every ``thin`` iterations (10) until ``num_samples`` (1000) are kept.

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

Files in ``out_dir`` (all written to a temporary name, then renamed):

* ``burnin_XXXXX.npz``: per-iteration statistics of a stretch of burn-in;
* ``samples_XXXXX.npz``: ``leaf_<i>`` arrays of shape ``(chains, k, ...)`` (``k`` kept
  samples, at most ``chunk_size``) and the statistics of the iterations that produced them;
* ``state_XXXXX.npz``: the chain state after a chunk (positions, log densities, gradients,
  step sizes, dual-averaging state);
* ``state.json``: the commit marker: progress counters, the config, a hash of config + key
  + initial position (+ the data, for :func:`make_logdensity` targets) and the name of the
  current ``state_XXXXX.npz``. Rewritten last, so a crash never leaves it pointing at
  something incomplete.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from symlib.core.io import atomic_write
from symlib.core.models import mlp_apply

__all__ = [
    "HMCConfig",
    "HMCResult",
    "HMCWarning",
    "LogDensity",
    "iter_sample_chunks",
    "load_result",
    "load_samples",
    "make_logdensity",
    "run_hmc",
]

STATS = ("acceptance_rate", "is_divergent", "energy_error")
_FORMAT_VERSION = 1
SAMPLER_VERSION = 1


class HMCWarning(UserWarning):
    """Emitted after a run whose acceptance rate or divergences suggest a bad step size."""


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
    different target.
    """

    def __init__(self, fn: Callable, data: tuple = (), mesh: Mesh | None = None, fingerprint: str | None = None):
        self.fn, self.data, self.mesh, self.fingerprint = fn, tuple(data), mesh, fingerprint

    def __call__(self, params):
        return _call_logdensity(self, params)

    def replicate(self, tree):
        """Place ``tree`` replicated on this density's mesh (identity without a mesh)."""
        if self.mesh is None:
            return tree
        return jax.device_put(tree, NamedSharding(self.mesh, P()))

    def tree_flatten(self):
        return self.data, (self.fn, self.mesh, self.fingerprint)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(aux[0], tuple(children), aux[1], aux[2])


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
    num_features: int
    max_label: int

    def __call__(self, params, x, y, mask):
        logits = self._logits(params, x)
        logp = jax.nn.log_softmax(logits, axis=-1)
        per_example = jnp.take_along_axis(logp, y[:, None], axis=-1)[:, 0]
        loglik = jnp.sum(jnp.where(mask, per_example, 0.0))
        return log_prior(params, self.prior_var) + loglik / self.temperature

    def _logits(self, params, x):
        _check_mlp_params(params, self.apply_fn, self.num_features)
        try:
            logits = self.apply_fn(params, x)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"apply_fn(params, x) failed for x of shape (n, {self.num_features}): {err}. "
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


def _check_mlp_params(params, apply_fn: Callable, num_features: int) -> None:
    """Clear shape errors for ``mlp_apply`` params (other apply_fns are checked by calling them)."""
    if apply_fn is not mlp_apply or not isinstance(params, dict) or "dense_0" not in params:
        return
    kernel = params["dense_0"].get("kernel") if isinstance(params["dense_0"], dict) else None
    if kernel is None:
        return
    if kernel.ndim != 2:
        raise ValueError(f"expected the parameters of one MLP (2-D kernels), got dense_0/kernel of shape {kernel.shape}")
    if kernel.shape[0] != num_features:
        raise ValueError(
            f"params do not fit x: dense_0/kernel has input width {kernel.shape[0]} but x has {num_features} features"
        )


def log_prior(params, prior_var: float = 1.0) -> jax.Array:
    """log N(params; 0, prior_var I), summed over every parameter."""
    leaves = jax.tree_util.tree_leaves(params)
    dim = sum(leaf.size for leaf in leaves)
    sq = sum(jnp.sum(jnp.square(leaf)) for leaf in leaves)
    return -0.5 * sq / prior_var - 0.5 * dim * math.log(2.0 * math.pi * prior_var)


def _validate_data(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (examples, features), got shape {x.shape}")
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
    if not np.all(np.isfinite(x)):
        raise ValueError(f"x contains {np.count_nonzero(~np.isfinite(x))} NaN or infinite values")
    if y.min() < 0:
        raise ValueError(f"labels must be >= 0, got min label {y.min()}")
    return x, y.astype(np.int32)


def _data_mesh(devices) -> Mesh:
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("devices is empty")
    return Mesh(np.array(devices), ("data",))


def _shard_data(x: np.ndarray, y: np.ndarray, mesh: Mesh):
    """Pad the examples to a multiple of the device count (mask 0 on padding) and shard them."""
    n, n_dev = x.shape[0], mesh.devices.size
    pad = (-n) % n_dev
    mask = np.concatenate([np.ones(n, bool), np.zeros(pad, bool)])
    x = np.concatenate([x, np.zeros((pad, x.shape[1]), x.dtype)])
    y = np.concatenate([y, np.zeros(pad, y.dtype)])
    sharding = NamedSharding(mesh, P("data"))
    return tuple(jax.device_put(a, sharding) for a in (x, y, mask))


def _fingerprint(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(str((part.shape, part.dtype.str)).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()


def make_logdensity(x, y, prior_var: float = 1.0, temperature: float = 1.0, apply_fn: Callable = mlp_apply,
                    devices=None) -> LogDensity:
    """Full-batch log posterior ``params -> log N(params; 0, prior_var I) + sum_i log p(y_i | x_i) / T``.

    ``p(y | x) = softmax(apply_fn(params, x))[y]``. The examples are sharded over
    ``devices`` (default: all devices of the default backend), padded to a multiple of
    their number with masked rows; parameters are replicated. Raises ValueError for
    malformed data (shapes, dtypes, NaN/inf, negative labels) and, when first called, for
    parameters that do not fit ``x`` or too few classes for the labels.
    """
    x, y = _validate_data(x, y)
    if not (math.isfinite(prior_var) and prior_var > 0):
        raise ValueError(f"prior_var must be a positive number, got {prior_var}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    mesh = _data_mesh(devices)
    fn = _BNNLogPosterior(float(prior_var), float(temperature), apply_fn, x.shape[1], int(y.max()))
    fingerprint = _fingerprint(x, y, fn.prior_var, fn.temperature, getattr(apply_fn, "__qualname__", repr(apply_fn)))
    return LogDensity(fn, _shard_data(x, y, mesh), mesh, fingerprint)


# --------------------------------------------------------------------------------------
# Configuration and results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HMCConfig:
    """HMC settings. ``num_samples`` is the number kept per chain, one every ``thin``
    iterations after ``num_burnin`` burn-in iterations. With ``adapt_step_size`` the step
    size is tuned by dual averaging towards ``target_accept`` during burn-in (starting from
    ``step_size``) and frozen afterwards."""

    step_size: float
    num_leapfrog: int
    num_burnin: int
    num_samples: int
    thin: int
    num_chains: int = 1
    adapt_step_size: bool = False
    target_accept: float = 0.8

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

    @property
    def num_iterations(self) -> int:
        """Burn-in plus sampling iterations."""
        return self.num_burnin + self.num_samples * self.thin

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


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
    per chain.
    """

    def __init__(self, samples, stats, step_size, cfg: HMCConfig, out_dir: Path | None = None, like=None):
        self._samples, self.stats, self.step_size, self.config = samples, stats, np.asarray(step_size), cfg
        self.out_dir, self._like = out_dir, like

    @property
    def samples(self):
        if self._samples is None:
            self._samples = load_samples(self.out_dir, like=self._like)
        return self._samples

    @property
    def num_iterations(self) -> int:
        return self.config.num_iterations

    @property
    def num_burnin(self) -> int:
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
        return int(np.sum(self.stats["is_divergent"][:, : self.num_burnin]))

    def summary(self) -> dict[str, Any]:
        """Acceptance, divergences and step size in one dict."""
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
        """Human-readable problems with the run (empty when acceptance and divergences look fine)."""
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


def _chain_block(logdensity, state, da_state, step_size, chain_key, start, num_active, adapt, *, block_len,
                 num_leapfrog, target_accept):
    """HMC iterations ``start .. start + num_active - 1`` of one chain, in a scan of length
    ``block_len`` (iterations ``>= num_active`` are skipped by ``lax.cond``, so one compiled
    program serves every block length up to ``block_len``).

    With ``adapt`` the step size is ``exp(log_step_size)`` of the dual-averaging state, which
    is updated with each acceptance rate; otherwise ``step_size`` is used unchanged.
    Returns the last state, the dual-averaging state, the step size and the per-iteration
    (acceptance rate, divergence flag, energy error), of which the first ``num_active`` are real.
    """
    dtype = jnp.result_type(state.logdensity)
    inverse_mass = jnp.ones(_dimension(state.position), jax.tree_util.tree_leaves(state.position)[0].dtype)
    _, da_update, _ = blackjax.adaptation.step_size.dual_averaging_adaptation(target_accept)

    def transition(carry, t):
        state, da, eps = carry
        eps = jnp.where(adapt, jnp.exp(da.log_step_size).astype(eps.dtype), eps)
        hmc = blackjax.hmc(logdensity, eps, inverse_mass_matrix=inverse_mass, num_integration_steps=num_leapfrog)
        new_state, info = hmc.step(jax.random.fold_in(chain_key, t), state)
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


@partial(jax.jit, static_argnames=("block_len", "num_leapfrog", "target_accept"))
def _run_block(logdensity, state, da_state, step_size, chain_keys, start, num_active, adapt, *, block_len,
               num_leapfrog, target_accept):
    """:func:`_chain_block` for every chain at once (``vmap`` over the leading chain axis)."""
    block = partial(_chain_block, block_len=block_len, num_leapfrog=num_leapfrog, target_accept=target_accept)
    in_axes = (None, 0, 0, 0, 0, None, None, None)
    return jax.vmap(block, in_axes=in_axes)(logdensity, state, da_state, step_size, chain_keys, start, num_active, adapt)


@jax.jit
def _init_states(logdensity, positions):
    return jax.vmap(lambda p: blackjax.hmc.init(p, logdensity))(positions)


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


def _plan(cfg: HMCConfig, chunk_size: int) -> list[_Segment]:
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
# Storage
# --------------------------------------------------------------------------------------


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    atomic_write(path, lambda f: np.savez(f, **arrays))


def _save_json(path: Path, obj) -> None:
    atomic_write(path, lambda f: f.write(json.dumps(obj, indent=1).encode()))


def _skeleton(tree) -> Any:
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


def _rebuild(skeleton, leaves: list):
    kind, value = next(iter(skeleton.items()))
    if kind == "leaf":
        return leaves[value]
    if kind == "dict":
        return {k: _rebuild(v, leaves) for k, v in value.items()}
    if kind == "none":
        return None
    items = [_rebuild(v, leaves) for v in value]
    return tuple(items) if kind == "tuple" else items


def _read_meta(out_dir: Path) -> dict | None:
    path = out_dir / "state.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); not an HMC output directory?") from err


def _unflatten_like(like, meta: dict, leaves: list):
    if like is not None:
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(like), leaves)
    if meta.get("structure") is not None:
        return _rebuild(meta["structure"], leaves)
    return leaves


def iter_sample_chunks(out_dir, like=None) -> Iterator[tuple[int, Any]]:
    """Yield ``(first sample index, samples)`` for each stored chunk of a run in ``out_dir``,
    one chunk in memory at a time; ``samples`` leaves have shape ``(chains, k, ...)``.
    The pytree structure is that of ``like`` if given, else the one recorded in state.json
    (nested dicts, lists, tuples), else a list of leaves."""
    out_dir = Path(out_dir)
    meta = _read_meta(out_dir)
    if meta is None:
        raise FileNotFoundError(f"no HMC run in {out_dir} (state.json missing)")
    first = 0
    for i in range(meta["num_sample_chunks"]):
        with np.load(out_dir / f"samples_{i:05d}.npz") as z:
            leaves = [z[f"leaf_{j}"] for j in range(meta["num_leaves"])]
        yield first, _unflatten_like(like, meta, leaves)
        first += leaves[0].shape[1]


def load_samples(out_dir, like=None):
    """All kept samples stored in ``out_dir``: leaves of shape ``(chains, num_kept, ...)`` (numpy)."""
    chunks = [s for _, s in iter_sample_chunks(out_dir, like)]
    if not chunks:
        raise ValueError(f"{out_dir} holds no samples yet")
    return jax.tree.map(lambda *a: np.concatenate(a, axis=1), *chunks)


def _load_stats(out_dir: Path, meta: dict) -> dict[str, np.ndarray]:
    parts = {k: [] for k in STATS}
    names = [f"burnin_{i:05d}.npz" for i in range(meta["num_burnin_chunks"])]
    names += [f"samples_{i:05d}.npz" for i in range(meta["num_sample_chunks"])]
    for name in names:
        with np.load(out_dir / name) as z:
            for k in STATS:
                parts[k].append(z[k])
    return _concat_stats(parts, meta["config"]["num_chains"])


def _concat_stats(parts: dict[str, list], num_chains: int) -> dict[str, np.ndarray]:
    empty = {"acceptance_rate": np.float32, "is_divergent": bool, "energy_error": np.float32}
    return {k: np.concatenate(v, axis=1) if v else np.zeros((num_chains, 0), empty[k]) for k, v in parts.items()}


def load_result(out_dir, like=None) -> HMCResult:
    """The :class:`HMCResult` of a (possibly unfinished) run stored in ``out_dir``; samples load lazily."""
    out_dir = Path(out_dir)
    meta = _read_meta(out_dir)
    if meta is None:
        raise FileNotFoundError(f"no HMC run in {out_dir} (state.json missing)")
    with np.load(out_dir / meta["state_file"]) as z:
        step_size = z["step_size"]
    return HMCResult(None, _load_stats(out_dir, meta), step_size, HMCConfig(**meta["config"]), out_dir, like)


def _run_hash(cfg: HMCConfig, chunk_size: int, key_data: np.ndarray, positions, logdensity: LogDensity) -> str:
    leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(positions)]
    treedef = str(jax.tree_util.tree_structure(positions))
    return _fingerprint(json.dumps(cfg.to_dict(), sort_keys=True), chunk_size, key_data, treedef, *leaves,
                        logdensity.fingerprint)


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


def _carry_to_host(carry: _Carry) -> dict[str, np.ndarray]:
    arrays = {"step_size": np.asarray(carry.step_size), "logdensity": np.asarray(carry.state.logdensity)}
    for i, leaf in enumerate(jax.tree_util.tree_leaves(carry.state.position)):
        arrays[f"position_{i}"] = np.asarray(leaf)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(carry.state.logdensity_grad)):
        arrays[f"grad_{i}"] = np.asarray(leaf)
    for name, value in carry.da_state._asdict().items():
        arrays[f"da_{name}"] = np.asarray(value)
    return arrays


def _carry_from_host(z, meta: dict, like_state, like_da) -> _Carry:
    treedef = jax.tree_util.tree_structure(like_state.position)
    n = treedef.num_leaves
    position = jax.tree_util.tree_unflatten(treedef, [z[f"position_{i}"] for i in range(n)])
    grad = jax.tree_util.tree_unflatten(treedef, [z[f"grad_{i}"] for i in range(n)])
    state = type(like_state)(position, z["logdensity"], grad)
    da = type(like_da)(**{name: z[f"da_{name}"] for name in like_da._fields})
    return _Carry(state, da, z["step_size"], meta["iteration"], meta["next_segment"], meta["num_kept"],
                  meta["num_burnin_chunks"], meta["num_sample_chunks"])


# --------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------


class _Progress:
    """One-line text progress bar on stderr: iterations done / total, it/s, mean acceptance."""

    def __init__(self, enabled: bool, total: int, done: int):
        self.enabled, self.total, self.done0 = enabled, total, done
        self.t0 = self.last = time.perf_counter()
        self.acc_sum, self.acc_n = 0.0, 0

    def update(self, done: int, acceptance: jax.Array | None) -> None:
        if not self.enabled:
            return
        acc = np.asarray(acceptance)
        self.acc_sum, self.acc_n = self.acc_sum + float(acc.sum()), self.acc_n + acc.size
        now = time.perf_counter()
        if now - self.last < 0.2 and done < self.total:
            return
        self.last = now
        rate = (done - self.done0) / max(now - self.t0, 1e-9)
        width = 30
        filled = int(width * done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        acc_txt = f"{self.acc_sum / self.acc_n:.3f}" if self.acc_n else "n/a"
        sys.stderr.write(f"\r[hmc] |{bar}| {done}/{self.total} it  {rate:.2f} it/s  acc {acc_txt}")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _progress_enabled(progress: bool | None) -> bool:
    if progress is not None:
        return bool(progress)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


# --------------------------------------------------------------------------------------
# run_hmc
# --------------------------------------------------------------------------------------


def _chain_positions(init_params, num_chains: int, init_per_chain: bool | None):
    """Initial positions with a leading chain axis (see :func:`run_hmc`)."""
    leaves = jax.tree_util.tree_leaves(init_params)
    if not leaves:
        raise ValueError("init_params has no array leaves")
    leaves = [jnp.asarray(a) for a in leaves]
    if init_per_chain is None:
        init_per_chain = num_chains > 1 and all(a.ndim >= 1 and a.shape[0] == num_chains for a in leaves)
    if init_per_chain:
        bad = [a.shape for a in leaves if a.ndim == 0 or a.shape[0] != num_chains]
        if bad:
            raise ValueError(f"init_per_chain=True needs a leading axis of size {num_chains} on every leaf, got shapes {bad}")
        return jax.tree.map(jnp.asarray, init_params)
    return jax.tree.map(lambda a: jnp.broadcast_to(jnp.asarray(a), (num_chains, *jnp.shape(a))), init_params)


def _chain_keys(key, num_chains: int) -> jax.Array:
    return jax.vmap(lambda c: jax.random.fold_in(key, c))(jnp.arange(num_chains))


def _key_data(key) -> np.ndarray:
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.asarray(key)


def _fresh_carry(logdensity: LogDensity, positions, cfg: HMCConfig) -> _Carry:
    state = _init_states(logdensity, logdensity.replicate(positions))
    step_size = jnp.full((cfg.num_chains,), cfg.step_size, jnp.float32)
    da_state = _init_dual_averaging(step_size, cfg.target_accept)
    return _Carry(*_strong((state, da_state, step_size)), 0, 0, 0, 0, 0)


def _strong(tree):
    """Device arrays with strong (not weak) types, as after a round trip through numpy, so
    that fresh and resumed runs hit the same compiled programs."""
    return jax.tree.map(lambda a: jnp.asarray(np.asarray(a)), tree)


def _open_run(out_dir: Path, run_hash: str, cfg: HMCConfig, chunk_size: int, fresh: _Carry, structure) -> _Carry:
    """Load the checkpoint in ``out_dir`` (checking it belongs to this run) or start one there."""
    meta = _read_meta(out_dir)
    if meta is None:
        leftovers = sorted(p.name for p in out_dir.glob("samples_*.npz")) + sorted(p.name for p in out_dir.glob("burnin_*.npz"))
        if leftovers:
            raise ValueError(f"{out_dir} holds HMC files ({leftovers[0]}, ...) but no state.json; refusing to overwrite them")
        _write_checkpoint(out_dir, fresh, run_hash, cfg, chunk_size, structure)
        return fresh
    if meta.get("run_hash") != run_hash:
        raise ValueError(
            f"{out_dir} holds a run with a different config, key, initial position or target "
            f"(stored config {meta.get('config')}, chunk_size {meta.get('chunk_size')}; requested {cfg.to_dict()}, "
            f"chunk_size {chunk_size}); use another out_dir to start a new run"
        )
    with np.load(out_dir / meta["state_file"]) as z:
        carry = _carry_from_host(z, meta, fresh.state, fresh.da_state)
    carry.state, carry.da_state, carry.step_size = _strong((carry.state, carry.da_state, carry.step_size))
    return carry


def _write_checkpoint(out_dir: Path, carry: _Carry, run_hash: str, cfg: HMCConfig, chunk_size: int, structure) -> None:
    """Write ``state_<segment>.npz`` then point ``state.json`` at it, then drop the older state files."""
    state_file = f"state_{carry.segment:05d}.npz"
    _save_npz(out_dir / state_file, _carry_to_host(carry))
    meta = {
        "format_version": _FORMAT_VERSION,
        "run_hash": run_hash,
        "config": cfg.to_dict(),
        "chunk_size": chunk_size,
        "iteration": carry.iteration,
        "next_segment": carry.segment,
        "num_kept": carry.num_kept,
        "num_burnin_chunks": carry.num_burnin_chunks,
        "num_sample_chunks": carry.num_sample_chunks,
        "num_leaves": len(jax.tree_util.tree_leaves(carry.state.position)),
        "structure": structure,
        "state_file": state_file,
        "complete": carry.iteration == cfg.num_iterations,
    }
    _save_json(out_dir / "state.json", meta)
    for old in out_dir.glob("state_*.npz"):
        if old.name != state_file:
            old.unlink(missing_ok=True)


def _run_segment(seg: _Segment, carry: _Carry, logdensity, chain_keys, cfg: HMCConfig, progress: _Progress):
    """Run one segment's blocks; returns the new carry, host stats and host samples (or None)."""
    adapt = cfg.adapt_step_size and seg.kind == "burnin"
    if cfg.adapt_step_size and seg.kind == "samples" and carry.iteration == cfg.num_burnin:
        carry.step_size = _final_step_size(carry.da_state)  # freeze the adapted step size
    stats, kept, t = [], [], carry.iteration
    for n in seg.blocks:
        state, da, eps, st = _run_block(logdensity, carry.state, carry.da_state, carry.step_size, chain_keys,
                                        np.int32(t), np.int32(n), np.bool_(adapt), block_len=cfg.thin,
                                        num_leapfrog=cfg.num_leapfrog, target_accept=float(cfg.target_accept))
        carry.state, carry.da_state, carry.step_size = state, da, eps
        t += n
        stats.append((st, n))
        if seg.kind == "samples":
            kept.append(state.position)
        if progress.enabled:
            progress.update(t, np.asarray(st[0])[:, :n])
    host_stats = {k: np.concatenate([np.asarray(s[i])[:, :n] for s, n in stats], axis=1) for i, k in enumerate(STATS)}
    host_kept = jax.tree.map(lambda *a: np.stack([np.asarray(x) for x in a], axis=1), *kept) if kept else None
    carry.iteration, carry.segment = t, carry.segment + 1
    if seg.kind == "samples":
        carry.num_kept += len(kept)
        carry.num_sample_chunks += 1
    else:
        carry.num_burnin_chunks += 1
    return carry, host_stats, host_kept


def _segment_file(out_dir: Path, seg: _Segment, stats, kept, run_hash: str) -> None:
    arrays = dict(stats, first_iteration=np.int64(seg.start), run_hash=np.str_(run_hash))
    if kept is not None:
        arrays.update({f"leaf_{i}": leaf for i, leaf in enumerate(jax.tree_util.tree_leaves(kept))})
    _save_npz(out_dir / f"{seg.kind}_{seg.index:05d}.npz", arrays)


def run_hmc(key, init_params, logdensity: Callable, cfg: HMCConfig, *, out_dir=None, chunk_size: int = 50,
            progress: bool | None = None, init_per_chain: bool | None = None,
            on_chunk: Callable[[dict], None] | None = None) -> HMCResult:
    """Sample ``logdensity`` (any function of a pytree) with HMC; see the module docstring.

    ``init_params``: the initial position. If every leaf has a leading axis of size
    ``cfg.num_chains`` (and ``num_chains > 1``) it is taken as one start per chain,
    otherwise all chains start from it; ``init_per_chain`` forces either reading.
    ``out_dir``: store samples and checkpoints there every ``chunk_size`` kept samples and
    resume from it if it already holds this run (ValueError if it holds another run).
    ``progress``: text progress bar on stderr (default: only if stderr is a terminal).
    ``on_chunk(info)``: called after each chunk is stored (info: kind, index, iteration).
    Emits :class:`HMCWarning` for low/high acceptance or divergences after the run.
    """
    if not isinstance(cfg, HMCConfig):
        raise TypeError(f"cfg must be an HMCConfig, got {type(cfg).__name__}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    logdensity = _as_logdensity(logdensity)
    positions = _chain_positions(init_params, cfg.num_chains, init_per_chain)
    chain_keys = _chain_keys(key, cfg.num_chains)
    carry = _fresh_carry(logdensity, positions, cfg)
    single = jax.tree.map(lambda a: a[0], positions)
    structure = _skeleton(single)
    run_hash = None
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        run_hash = _run_hash(cfg, int(chunk_size), _key_data(key), positions, logdensity)
        carry = _open_run(out_dir, run_hash, cfg, int(chunk_size), carry, structure)
    # the same placement for fresh and resumed runs (and as the blocks' outputs): one compiled program
    carry.state, carry.da_state, carry.step_size, chain_keys = logdensity.replicate(
        (carry.state, carry.da_state, carry.step_size, chain_keys))
    plan = _plan(cfg, int(chunk_size))
    bar = _Progress(_progress_enabled(progress), cfg.num_iterations, carry.iteration)
    all_stats, all_kept = {k: [] for k in STATS}, []
    for seg in plan[carry.segment:]:
        carry, stats, kept = _run_segment(seg, carry, logdensity, chain_keys, cfg, bar)
        if out_dir is not None:
            _segment_file(out_dir, seg, stats, kept, run_hash)
            _write_checkpoint(out_dir, carry, run_hash, cfg, int(chunk_size), structure)
        else:
            for k in STATS:
                all_stats[k].append(stats[k])
            if kept is not None:
                all_kept.append(kept)
        if on_chunk is not None:
            on_chunk({"kind": seg.kind, "index": seg.index, "iteration": carry.iteration})
    if out_dir is not None:
        result = load_result(out_dir, like=single)
    else:
        samples = jax.tree.map(lambda *a: np.concatenate(a, axis=1), *all_kept)
        result = HMCResult(samples, _concat_stats(all_stats, cfg.num_chains), np.asarray(carry.step_size), cfg)
    for msg in result.warning_messages():
        warnings.warn(msg, HMCWarning, stacklevel=2)
    return result
