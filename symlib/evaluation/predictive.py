"""Predictive distributions of one network, a stack of networks, or a diagonal Gaussian.

Everything is batched so that no more than needed is materialised on the device:

* the test inputs are cut into batches of ``batch_size`` rows (the last one padded),
  looped over with ``jax.lax.map`` inside ``jit``;
* a stack of ``S`` networks (leading sample axis on every leaf; numpy or JAX) is
  processed ``sample_chunk`` networks at a time: only one chunk is moved to the device
  at once (numpy slices), evaluated with a jitted ``vmap`` over the chunk, and the SUM
  of its softmax probabilities accumulated, so 1,000 samples of a 400k-parameter net
  never sit on the device together. Peak device memory is about
  ``chunk * (n_params + batch_size * widest_layer)`` floats plus the (n, C) output.
  The last chunk is padded by repeating one of its samples with weight zero, so one
  compiled function serves every chunk;
* Gaussian samples are drawn chunk by chunk on the device (one chunk of networks
  exists at a time, then goes through the same kernel as a stack): sample ``i`` uses the key
  ``jax.random.split(key, num_samples)[i]`` whatever the chunking, so results do not
  depend on ``sample_chunk`` and equal :func:`sample_gaussian` followed by
  :func:`predict_from_samples`.

``apply_fn(params, x) -> logits`` maps one network and a batch of inputs to logits
(default :func:`symlib.core.models.mlp_apply`); probabilities are ``softmax`` over the last
axis. Bad inputs (shapes, NaN, negative sigma) raise ``ValueError`` naming the problem.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.models import mlp_apply

PyTree = Any
ApplyFn = Callable[[PyTree, jax.Array], jax.Array]

# Default chunk: about 2**24 parameters (64 MiB of float32) per chunk, at most 128 samples.
_CHUNK_PARAMS = 2**24
_MAX_CHUNK = 128


# ----------------------------------------------------------------------------- checks

def _check_x(x) -> jax.Array:
    if np.ndim(x) < 1 or np.shape(x)[0] < 1:
        raise ValueError(f"x must have a leading axis of at least one example, got shape {np.shape(x)}")
    if jnp.issubdtype(jnp.result_type(x), jnp.inexact) and not np.all(np.isfinite(np.asarray(x))):
        raise ValueError("x contains NaN or inf")
    return jnp.asarray(x)


def _check_batch_size(batch_size) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def _check_finite_tree(tree, name: str) -> None:
    for leaf in jax.tree_util.tree_leaves(tree):
        if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact) and not np.all(np.isfinite(np.asarray(leaf))):
            raise ValueError(f"{name} contains NaN or inf")


def _stack_size(stack) -> int:
    leaves = jax.tree_util.tree_leaves(stack)
    if not leaves:
        raise ValueError("samples_stack has no parameters")
    sizes = {np.shape(a)[0] if np.ndim(a) >= 1 else None for a in leaves}
    if None in sizes or len(sizes) != 1:
        raise ValueError("every leaf of samples_stack needs the same leading sample axis, got leading "
                         f"sizes {sorted(str(s) for s in sizes)}")
    size = sizes.pop()
    if size < 1:
        raise ValueError("samples_stack holds no samples")
    return int(size)


def _chunk_size(sample_chunk, num_samples: int, params_per_sample: int) -> int:
    if sample_chunk is None:
        return max(1, min(num_samples, _MAX_CHUNK, _CHUNK_PARAMS // max(params_per_sample, 1)))
    if isinstance(sample_chunk, bool) or not isinstance(sample_chunk, (int, np.integer)) or sample_chunk < 1:
        raise ValueError(f"sample_chunk must be a positive integer or None, got {sample_chunk!r}")
    return int(min(sample_chunk, num_samples))


def _batched_x(x: jax.Array, batch_size: int) -> jax.Array:
    """(n, ...) -> (num_batches, bs, ...) with zero padding; ``bs = min(batch_size, n)``."""
    n = x.shape[0]
    bs = min(batch_size, n)
    nb = -(-n // bs)
    pad = nb * bs - n
    if pad:
        x = jnp.concatenate([x, jnp.zeros((pad,) + x.shape[1:], x.dtype)])
    return x.reshape((nb, bs) + x.shape[1:])


def _unbatch(out: jax.Array, n: int) -> jax.Array:
    return out.reshape((-1,) + out.shape[2:])[:n]


def _raise_if_nonfinite(probs, what: str) -> None:
    if not bool(jnp.all(jnp.isfinite(probs))):
        raise ValueError(f"non-finite probabilities: {what} contain NaN or inf (or the logits overflowed)")


# ----------------------------------------------------------------------------- kernels

def _probs(apply_fn, params, xb):
    return jax.nn.softmax(apply_fn(params, xb), axis=-1)


@partial(jax.jit, static_argnums=0)
def _single(apply_fn, params, xbs):
    return jax.lax.map(lambda xb: _probs(apply_fn, params, xb), xbs)


def _weighted_sum(apply_fn, chunk, weights, xbs):
    def per_batch(xb):
        probs = jax.vmap(lambda p: _probs(apply_fn, p, xb))(chunk)          # (c, bs, C)
        probs = jnp.where(weights[:, None, None] > 0, probs, 0.0)
        return jnp.einsum("c,cbk->bk", weights, probs)

    return jax.lax.map(per_batch, xbs)                                         # (nb, bs, C)


def _each(apply_fn, chunk, xbs):
    per_batch = lambda xb: jax.vmap(lambda p: _probs(apply_fn, p, xb))(chunk)  # (c, bs, C)
    return jnp.moveaxis(jax.lax.map(per_batch, xbs), 1, 0)                     # (c, nb, bs, C)


_sum_chunk = jax.jit(_weighted_sum, static_argnums=0)
_each_chunk = jax.jit(_each, static_argnums=0)


def _gaussian_one(key, mu, sigma):
    """``mu + sigma * eps`` with ONE float32 normal draw for all the weights, cut into the
    leaves (a single threefry call per sample keeps compilation fast on CPU)."""
    leaves, treedef = jax.tree_util.tree_flatten(mu)
    sizes = [int(np.prod(jnp.shape(m), dtype=np.int64)) for m in leaves]
    eps = jnp.split(jax.random.normal(key, (sum(sizes),), jnp.float32), np.cumsum(sizes)[:-1].tolist())
    draws = [m + s * e.reshape(jnp.shape(m)).astype(jnp.result_type(m))
             for m, s, e in zip(leaves, treedef.flatten_up_to(sigma), eps)]
    return jax.tree_util.tree_unflatten(treedef, draws)


_gaussian_many = jax.jit(jax.vmap(_gaussian_one, in_axes=(0, None, None)))


def _pad_chunk(tree, start: int, stop: int, chunk: int):
    """Rows ``start:stop`` of every leaf, padded to ``chunk`` rows by repeating row ``start``."""
    idx = np.arange(start, stop)
    if stop - start < chunk:
        idx = np.concatenate([idx, np.full(chunk - (stop - start), start)])
    weights = (np.arange(chunk) < stop - start).astype(np.float32)

    def take(a):
        if isinstance(a, np.ndarray):
            return a[start:stop] if stop - start == chunk else a[idx]
        return a[start:stop] if stop - start == chunk else jnp.take(a, jnp.asarray(idx), axis=0)

    return jax.tree_util.tree_map(take, tree), jnp.asarray(weights)


# ----------------------------------------------------------------------------- public API

def predict_single(params: PyTree, x, *, apply_fn: ApplyFn = mlp_apply, batch_size: int = 2048) -> jax.Array:
    """Softmax probabilities (n, C) of one network ``params``."""
    x = _check_x(x)
    batch_size = _check_batch_size(batch_size)
    _check_finite_tree(params, "params")
    return _unbatch(_single(apply_fn, params, _batched_x(x, batch_size)), x.shape[0])


def _params_per_sample(stack) -> int:
    return int(sum(np.prod(np.shape(a)[1:], dtype=np.int64) for a in jax.tree_util.tree_leaves(stack)))


def predict_from_samples(samples_stack: PyTree, x, *, apply_fn: ApplyFn = mlp_apply, batch_size: int = 2048,
                         sample_chunk: int | None = None) -> jax.Array:
    """Posterior predictive (n, C): the mean over the ``S`` networks of ``samples_stack``
    (leading sample axis on every leaf, numpy or JAX) of their softmax probabilities.
    ``sample_chunk`` networks are on the device at a time (default: about 2**24
    parameters' worth, at most 128)."""
    x = _check_x(x)
    batch_size = _check_batch_size(batch_size)
    num = _stack_size(samples_stack)
    chunk = _chunk_size(sample_chunk, num, _params_per_sample(samples_stack))
    xbs = _batched_x(x, batch_size)
    total = None
    for start in range(0, num, chunk):
        part, weights = _pad_chunk(samples_stack, start, min(start + chunk, num), chunk)
        s = _sum_chunk(apply_fn, part, weights, xbs)
        total = s if total is None else total + s
    probs = _unbatch(total, x.shape[0]) / num
    _raise_if_nonfinite(probs, "the samples")
    return probs


def member_probs(samples_stack: PyTree, x, *, apply_fn: ApplyFn = mlp_apply, batch_size: int = 2048,
                 sample_chunk: int | None = None) -> np.ndarray:
    """Probabilities of every network of the stack, as a HOST numpy array (S, n, C).

    Memory: the result takes ``4 * S * n * C`` bytes of host memory (1,000 samples x
    10,000 test points x 10 classes = 400 MB); on the device only one chunk's
    ``(sample_chunk, n, C)`` block exists at a time. Prefer :func:`predict_from_samples`
    when only the mean is needed."""
    x = _check_x(x)
    batch_size = _check_batch_size(batch_size)
    num = _stack_size(samples_stack)
    chunk = _chunk_size(sample_chunk, num, _params_per_sample(samples_stack))
    xbs = _batched_x(x, batch_size)
    n = x.shape[0]
    out = None
    for start in range(0, num, chunk):
        stop = min(start + chunk, num)
        part, _ = _pad_chunk(samples_stack, start, stop, chunk)
        block = _each_chunk(apply_fn, part, xbs)                     # (chunk, nb, bs, C)
        block = np.asarray(block.reshape((chunk, -1) + block.shape[3:])[: stop - start, :n])
        if out is None:
            out = np.empty((num,) + block.shape[1:], block.dtype)
        out[start:stop] = block
    if not np.all(np.isfinite(out)):
        raise ValueError("non-finite probabilities: the samples contain NaN or inf (or the logits overflowed)")
    return out


def _check_gaussian(mu, sigma) -> None:
    mu_def, sig_def = jax.tree_util.tree_structure(mu), jax.tree_util.tree_structure(sigma)
    if mu_def != sig_def:
        raise ValueError(f"mu and sigma must have the same pytree structure, got {mu_def} and {sig_def}")
    if not jax.tree_util.tree_leaves(mu):
        raise ValueError("mu has no parameters")
    for m, s in zip(jax.tree_util.tree_leaves(mu), jax.tree_util.tree_leaves(sigma)):
        if np.shape(m) != np.shape(s):
            raise ValueError(f"mu and sigma leaves must have equal shapes, got {np.shape(m)} and {np.shape(s)}")
    _check_finite_tree(mu, "mu")
    _check_finite_tree(sigma, "sigma")
    if any(np.any(np.asarray(s) < 0) for s in jax.tree_util.tree_leaves(sigma)):
        raise ValueError("sigma must be non-negative (it is a standard deviation, not a log or rho)")


def _check_num_samples(num_samples) -> int:
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive integer, got {num_samples!r}")
    return int(num_samples)


def sample_gaussian(key: jax.Array, mu: PyTree, sigma: PyTree, num_samples: int) -> PyTree:
    """``num_samples`` draws of the diagonal Gaussian N(mu, sigma^2), stacked on a leading
    axis of every leaf; draw ``i`` uses ``jax.random.split(key, num_samples)[i]``."""
    _check_gaussian(mu, sigma)
    num_samples = _check_num_samples(num_samples)
    mu = jax.tree_util.tree_map(jnp.asarray, mu)
    sigma = jax.tree_util.tree_map(jnp.asarray, sigma)
    return _gaussian_many(jax.random.split(key, num_samples), mu, sigma)


def predict_from_gaussian(key: jax.Array, mu: PyTree, sigma: PyTree, x, num_samples: int = 100, *,
                          apply_fn: ApplyFn = mlp_apply, batch_size: int = 2048,
                          sample_chunk: int | None = None) -> jax.Array:
    """Monte Carlo predictive (n, C) of the diagonal Gaussian N(mu, sigma^2) over the
    parameters, with ``num_samples`` draws made chunk by chunk on the device. Equal to
    ``predict_from_samples(sample_gaussian(key, mu, sigma, num_samples), x)``."""
    _check_gaussian(mu, sigma)
    num = _check_num_samples(num_samples)
    x = _check_x(x)
    batch_size = _check_batch_size(batch_size)
    mu = jax.tree_util.tree_map(jnp.asarray, mu)
    sigma = jax.tree_util.tree_map(jnp.asarray, sigma)
    n_params = int(sum(np.size(a) for a in jax.tree_util.tree_leaves(mu)))
    chunk = _chunk_size(sample_chunk, num, n_params)
    keys = jax.random.split(key, num)
    xbs = _batched_x(x, batch_size)
    total = None
    for start in range(0, num, chunk):
        part, weights = _pad_chunk(keys, start, min(start + chunk, num), chunk)
        s = _sum_chunk(apply_fn, _gaussian_many(part, mu, sigma), weights, xbs)
        total = s if total is None else total + s
    probs = _unbatch(total, x.shape[0]) / num
    _raise_if_nonfinite(probs, "mu/sigma")
    return probs
