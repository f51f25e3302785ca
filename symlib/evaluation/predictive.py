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

The chunking (``chunk_size``, ``fold_chunks``) is written once, here, and is
also used by :func:`symlib.evaluation.interpolation.marginal_loss_curve` (same keys, so
its endpoints are this module's Gaussian predictives) and by
:mod:`symlib.evaluation.summaries`. The noise of one Gaussian draw comes from
:mod:`symlib.core.noise`, shared with variational inference.

``apply_fn(params, x) -> logits`` is the model: it maps one network's parameters (any
pytree) and a batch of inputs to logits, e.g. :func:`symlib.core.models.mlp_apply`; it is a
required argument. Probabilities are ``softmax`` over the last axis. Bad inputs (shapes, NaN,
negative sigma, for ``mlp_apply`` an ``x`` whose width is not the MLP's input width) raise
``ValueError`` naming the problem.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite, check_finite_tree, positive_int, warn_raw_images
from symlib.core.models import layout_check
from symlib.core.gaussian import check_gaussian, gaussian_draws, sample_gaussian  # noqa: F401 (sample_gaussian: re-exported)

__all__ = ["member_probs", "predict_from_gaussian", "predict_from_samples", "predict_single", "sample_gaussian"]

PyTree = Any
ApplyFn = Callable[[PyTree, jax.Array], jax.Array]

# Default chunk: about 2**24 parameters (64 MiB of float32) per chunk, at most 128 samples.
_CHUNK_PARAMS = 2**24
_MAX_CHUNK = 128


# ----------------------------------------------------------------------------- checks

def check_x(x, params: PyTree = None, apply_fn: ApplyFn | None = None, batch_dims: int = 0) -> jax.Array:
    """``x`` as a JAX array after checking it has examples and is finite; for a model with
    a layout check (:func:`symlib.core.models.layout_check`, e.g. ``mlp_apply``) also that
    ``params`` (with ``batch_dims`` leading network axes) take its examples."""
    if np.ndim(x) < 1 or np.shape(x)[0] < 1:
        raise ValueError(f"x must have a leading axis of at least one example, got shape {np.shape(x)}")
    check_finite(x, "x")
    warn_raw_images(x)
    check = layout_check(apply_fn) if params is not None else None
    if check is not None:
        check(params, tuple(np.shape(x))[1:], "params", batch_dims)
    return jnp.asarray(x)


def stack_size(stack: PyTree, name: str = "samples_stack") -> int:
    """Number of networks in ``stack``: the leading axis shared by every leaf (>= 1)."""
    leaves = jax.tree_util.tree_leaves(stack)
    if not leaves:
        raise ValueError(f"{name} has no parameters")
    sizes = {int(np.shape(a)[0]) if np.ndim(a) >= 1 else None for a in leaves}
    if None in sizes or len(sizes) != 1:
        raise ValueError(f"every leaf of {name} needs the same leading sample axis, got leading "
                         f"sizes {sorted(str(s) for s in sizes)}")
    size = sizes.pop()
    if size < 1:
        raise ValueError(f"{name} holds no samples")
    return size


def params_per_sample(stack: PyTree) -> int:
    """Number of parameters of ONE network of ``stack`` (leading sample axis excluded)."""
    return int(sum(np.prod(np.shape(a)[1:], dtype=np.int64) for a in jax.tree_util.tree_leaves(stack)))


def chunk_size(sample_chunk, num_samples: int, params_per_sample: int, *, name: str = "sample_chunk",
               budget: int = _CHUNK_PARAMS, cap: int | None = _MAX_CHUNK) -> int:
    """Samples per chunk: ``sample_chunk`` (at most ``num_samples``), or by default as many
    as fit ``budget`` parameters (at least 1, at most ``cap`` unless ``None``)."""
    if positive_int(sample_chunk, name, allow_none=True) is None:
        fit = budget // max(params_per_sample, 1)
        return max(1, min(num_samples, fit) if cap is None else min(num_samples, cap, fit))
    return int(min(sample_chunk, num_samples))


def _raise_if_nonfinite(probs, what: str) -> None:
    if not bool(jnp.all(jnp.isfinite(probs))):
        raise ValueError(f"non-finite probabilities: {what} contain NaN or inf (or the logits overflowed)")


# ----------------------------------------------------------------------------- chunking

def batched(a: jax.Array, batch_size: int) -> jax.Array:
    """(n, ...) -> (num_batches, bs, ...) with zero padding; ``bs = min(batch_size, n)``."""
    n = a.shape[0]
    bs = min(batch_size, n)
    nb = -(-n // bs)
    pad = nb * bs - n
    if pad:
        a = jnp.concatenate([a, jnp.zeros((pad,) + a.shape[1:], a.dtype)])
    return a.reshape((nb, bs) + a.shape[1:])


def _unbatch(out: jax.Array, n: int) -> jax.Array:
    return out.reshape((-1,) + out.shape[2:])[:n]


def chunk_bounds(num: int, chunk: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive chunks of ``chunk`` rows out of ``num`` (the last may be short)."""
    for start in range(0, num, chunk):
        yield start, min(start + chunk, num)


def _pad_chunk(tree, start: int, stop: int, chunk: int):
    """Rows ``start:stop`` of every leaf, padded to ``chunk`` rows by repeating row ``start``,
    and the float32 weights (1 for real rows, 0 for padding)."""
    idx = np.arange(start, stop)
    if stop - start < chunk:
        idx = np.concatenate([idx, np.full(chunk - (stop - start), start)])
    weights = (np.arange(chunk) < stop - start).astype(np.float32)

    def take(a):
        if isinstance(a, np.ndarray):
            return a[start:stop] if stop - start == chunk else a[idx]
        return a[start:stop] if stop - start == chunk else jnp.take(a, jnp.asarray(idx), axis=0)

    return jax.tree_util.tree_map(take, tree), jnp.asarray(weights)


def fold_chunks(stack, num: int, chunk: int, step: Callable, combine: Callable = operator.add):
    """``step(part, weights)`` on every padded chunk of ``stack``'s leading axis (networks,
    or the PRNG keys of Gaussian draws), the results folded with ``combine`` in order."""
    total = None
    for start, stop in chunk_bounds(num, chunk):
        out = step(*_pad_chunk(stack, start, stop, chunk))
        total = out if total is None else combine(total, out)
    return total


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


# ----------------------------------------------------------------------------- public API

def predict_single(params: PyTree, x, *, apply_fn: ApplyFn, batch_size: int = 2048) -> jax.Array:
    """Softmax probabilities of one network.

    Args:
        params: parameters of one network, the pytree ``apply_fn`` takes.
        x: inputs ``(n, d_0)``, ``n >= 1``, finite.
        apply_fn: ``apply_fn(params, x_batch) -> logits``.
        batch_size: rows of ``x`` evaluated at once.

    Returns:
        The probabilities ``(n, C)`` (JAX array).

    Raises:
        ValueError: if ``x`` is empty, holds NaN or inf, or (for ``mlp_apply``) its width is
            not the network's input width; if ``params`` hold NaN or inf; if ``batch_size``
            is not a positive integer; if the probabilities are not finite (the logits overflowed).
    """
    x = check_x(x, params, apply_fn)
    batch_size = positive_int(batch_size, "batch_size")
    check_finite_tree(params, "params")
    probs = _unbatch(_single(apply_fn, params, batched(x, batch_size)), x.shape[0])
    _raise_if_nonfinite(probs, "the params")
    return probs


def _merge_sample_dims(stack: PyTree, sample_dims: int, name: str = "samples_stack") -> PyTree:
    """``stack`` with its ``sample_dims`` leading axes (e.g. HMC's ``(chains, samples)``)
    merged into one sample axis."""
    sample_dims = positive_int(sample_dims, "sample_dims")
    if sample_dims == 1:
        return stack
    leaves = jax.tree_util.tree_leaves(stack)
    lead = {tuple(np.shape(a)[:sample_dims]) for a in leaves}
    if len(lead) != 1 or any(np.ndim(a) < sample_dims for a in leaves):
        raise ValueError(f"every leaf of {name} needs the same {sample_dims} leading sample axes, got "
                         f"{sorted(lead)}")
    return jax.tree_util.tree_map(lambda a: a.reshape((-1,) + tuple(np.shape(a)[sample_dims:])), stack)


def _check_apply_on_one(apply_fn: ApplyFn, stack: PyTree, x) -> None:
    """Trace ``apply_fn`` on the first network of ``stack``, turning a failure into symlib's
    own error (a stack with more leading axes than ``sample_dims`` says is the usual cause)."""
    one = jax.tree_util.tree_map(lambda a: a[0], stack)
    try:
        out = jax.eval_shape(apply_fn, one, x)  # abstract: costs no compute
        if len(out.shape) != 2 or out.shape[0] != x.shape[0]:
            raise ValueError(f"logits of shape {out.shape} for {x.shape[0]} inputs; expected ({x.shape[0]}, classes)")
    except Exception as e:  # noqa: BLE001 (re-raised with the cause attached)
        shapes = {"/".join(str(getattr(k, "key", k)) for k in path): tuple(np.shape(a))
                  for path, a in jax.tree_util.tree_flatten_with_path(one)[0][:3]}
        raise ValueError(
            f"apply_fn fails on one network of the stack (first leaves of one network: {shapes}): "
            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}. If the stack has several leading "
            "sample axes, e.g. HMC's (chains, samples), pass sample_dims=2") from e


def _checked_stack(samples_stack: PyTree, x, apply_fn: ApplyFn, batch_size: int, sample_chunk: int | None,
                   sample_dims: int):
    """The checked inputs of :func:`predict_from_samples` and :func:`member_probs`: the stack
    with its sample axes merged, ``x``, its batches, the number of networks and the chunk of
    networks on the device at a time."""
    samples_stack = _merge_sample_dims(samples_stack, sample_dims)
    num = stack_size(samples_stack)
    x = check_x(x, samples_stack, apply_fn, batch_dims=1)
    batch_size = positive_int(batch_size, "batch_size")
    _check_apply_on_one(apply_fn, samples_stack, x)
    xbs = batched(x, batch_size)
    return samples_stack, x, xbs, num, chunk_size(sample_chunk, num, params_per_sample(samples_stack))


def predict_from_samples(samples_stack: PyTree, x, *, apply_fn: ApplyFn, batch_size: int = 2048,
                         sample_chunk: int | None = None, sample_dims: int = 1) -> jax.Array:
    """Posterior predictive: the mean of the softmax probabilities of a stack of networks.

    Args:
        samples_stack: ``S`` networks, a leading sample axis on every leaf (numpy or JAX).
        x: inputs ``(n, d_0)``, ``n >= 1``, finite.
        apply_fn: ``apply_fn(params, x_batch) -> logits`` for ONE network.
        batch_size: rows of ``x`` evaluated at once.
        sample_chunk: networks on the device at a time (default: about 2**24 parameters'
            worth, at most 128).
        sample_dims: leading sample axes of every leaf, merged into one (2 for
            ``HMCResult.samples``, whose leaves are ``(chains, samples, ...)``).

    Returns:
        The mean probabilities ``(n, C)`` (JAX array).

    Raises:
        ValueError: for a bad ``x`` (as :func:`predict_single`), a stack without a common
            leading axis, a non-positive ``batch_size`` or ``sample_chunk``, or non-finite
            probabilities (NaN or inf in the samples).
    """
    samples_stack, x, xbs, num, chunk = _checked_stack(samples_stack, x, apply_fn, batch_size, sample_chunk,
                                                       sample_dims)
    total = fold_chunks(samples_stack, num, chunk, lambda part, weights: _sum_chunk(apply_fn, part, weights, xbs))
    probs = _unbatch(total, x.shape[0]) / num
    _raise_if_nonfinite(probs, "the samples")
    return probs


def member_probs(samples_stack: PyTree, x, *, apply_fn: ApplyFn, batch_size: int = 2048,
                 sample_chunk: int | None = None, sample_dims: int = 1) -> np.ndarray:
    """Probabilities of every network of a stack, as a HOST numpy array.

    Memory: the result takes ``4 * S * n * C`` bytes of host memory (1,000 samples x
    10,000 test points x 10 classes = 400 MB); on the device only one chunk's
    ``(sample_chunk, n, C)`` block exists at a time. Prefer :func:`predict_from_samples`
    when only the mean is needed.

    Args:
        samples_stack: ``S`` networks, a leading sample axis on every leaf (numpy or JAX).
        x: inputs ``(n, d_0)``, ``n >= 1``, finite.
        apply_fn: ``apply_fn(params, x_batch) -> logits`` for ONE network.
        batch_size: rows of ``x`` evaluated at once.
        sample_chunk: networks on the device at a time (default as in
            :func:`predict_from_samples`).
        sample_dims: leading sample axes, merged into one (as :func:`predict_from_samples`).

    Returns:
        numpy array ``(S, n, C)``: row ``s`` is the softmax output of network ``s``.

    Raises:
        ValueError: as :func:`predict_from_samples`.
    """
    samples_stack, x, xbs, num, chunk = _checked_stack(samples_stack, x, apply_fn, batch_size, sample_chunk,
                                                       sample_dims)
    n = x.shape[0]
    out = None
    for start, stop in chunk_bounds(num, chunk):
        part, _ = _pad_chunk(samples_stack, start, stop, chunk)
        block = _each_chunk(apply_fn, part, xbs)                     # (chunk, nb, bs, C)
        block = np.asarray(block.reshape((chunk, -1) + block.shape[3:])[: stop - start, :n])
        if out is None:
            out = np.empty((num,) + block.shape[1:], block.dtype)
        out[start:stop] = block
    if not np.all(np.isfinite(out)):
        raise ValueError("non-finite probabilities: the samples contain NaN or inf (or the logits overflowed)")
    return out


def predict_from_gaussian(key: jax.Array, mu: PyTree, sigma: PyTree, x, num_samples: int = 100, *,
                          apply_fn: ApplyFn, batch_size: int = 2048,
                          sample_chunk: int | None = None) -> jax.Array:
    """Monte Carlo predictive of the diagonal Gaussian N(mu, sigma^2) over the parameters.

    The ``num_samples`` draws are made chunk by chunk on the device, with the keys of
    :func:`sample_gaussian`: the result equals
    ``predict_from_samples(sample_gaussian(key, mu, sigma, num_samples), x, apply_fn=apply_fn)``
    and does not depend on ``sample_chunk`` or ``batch_size`` (up to float rounding).

    Args:
        key: JAX PRNG key.
        mu: means, a pytree of arrays (one network).
        sigma: standard deviations (``>= 0``), the same structure and shapes as ``mu``.
        x: inputs ``(n, d_0)``, ``n >= 1``, finite.
        num_samples: number of draws.
        apply_fn: ``apply_fn(params, x_batch) -> logits`` for ONE network.
        batch_size: rows of ``x`` evaluated at once.
        sample_chunk: draws on the device at a time (default as in
            :func:`predict_from_samples`).

    Returns:
        The mean probabilities ``(n, C)`` over the draws (JAX array).

    Raises:
        ValueError: as :func:`sample_gaussian` and :func:`predict_from_samples`.
    """
    check_gaussian(mu, sigma)
    num = positive_int(num_samples, "num_samples")
    x = check_x(x, mu, apply_fn)
    batch_size = positive_int(batch_size, "batch_size")
    mu = jax.tree_util.tree_map(jnp.asarray, mu)
    sigma = jax.tree_util.tree_map(jnp.asarray, sigma)
    n_params = int(sum(np.size(a) for a in jax.tree_util.tree_leaves(mu)))
    chunk = chunk_size(sample_chunk, num, n_params)
    xbs = batched(x, batch_size)
    total = fold_chunks(jax.random.split(key, num), num, chunk,
                         lambda keys, weights: _sum_chunk(apply_fn, gaussian_draws(keys, mu, sigma), weights, xbs))
    probs = _unbatch(total, x.shape[0]) / num
    _raise_if_nonfinite(probs, "mu/sigma")
    return probs
