"""Loss along a straight path between two networks, and along the W2 geodesic between two
mean-field Gaussian posteriors.

Deterministic networks
----------------------
``W_lambda = (1 - lambda) W_0 + lambda W_1``; the barrier (Frankle et al., 2020, as Xiao et
al., 2023, Sec. 2 use it: their reference [5]; Entezari et al., 2022 measure the height above
the chord instead, as :func:`marginal_barrier` does) is

    B(W_0, W_1) = max_lambda L(W_lambda) - (L(W_0) + L(W_1)) / 2,

with ``L`` the mean negative log-likelihood on a dataset (:func:`interpolation_curve`,
:func:`loss_barrier`, :func:`barrier`). (Xiao et al. print ``(lambda - 1) W_0 + lambda W_1``,
a sign typo: at lambda = 0 it would give ``-W_0``.)

Mean-field posteriors: the marginalised loss barrier (Rossi et al., 2023)
-------------------------------------------------------------------------
Along the W2 geodesic :func:`symlib.symmetry.alignment.w2_geodesic` between diagonal
Gaussians (``mu_tau = (1-tau) mu0 + tau mu1``, ``sigma_tau = (1-tau) sigma0 + tau sigma1``),
:func:`marginal_loss_curve` evaluates, at each ``tau``, the NLL of the Bayesian model
average of ``q_tau``

    L(tau) = - (1/n) sum_i log( (1/S) sum_s p(y_i | x_i, w_s(tau)) ),
    w_s(tau) = mu_tau + sigma_tau * eps_s,   eps_s ~ N(0, I),  s = 1..S,

with the SAME ``eps_s`` at every ``tau`` (common random numbers, so the curve is smooth
in ``tau`` and its endpoints are the usual S-sample predictive NLLs of ``q0`` and ``q1``:
the noise, keys and chunking are those of
:func:`symlib.evaluation.predictive.predict_from_gaussian`). By Jensen this overestimates
the exact predictive NLL, by ``O(1/S)``, and by about the same amount all along the path.
:func:`marginal_barrier` is ``max_tau [L(tau) - ((1-tau) L(0) + tau L(1))]``, the height
above the chord of the endpoints (note: :func:`loss_barrier` subtracts the plain mean
``(L(0) + L(1)) / 2`` instead); :func:`midpoint_barrier` is ``L(0.5) - (L(0) + L(1)) / 2``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite_tree, check_labels, positive_int
from symlib.core.models import Params
from symlib.evaluation.metrics import accuracy, nll
from symlib.core.noise import perturb, standard_normal_like
from symlib.evaluation.predictive import batched, check_x, chunk_size, fold_chunks
from symlib.symmetry.alignment import w2_geodesic

__all__ = [
    "barrier",
    "interpolate",
    "interpolation_curve",
    "loss_barrier",
    "marginal_barrier",
    "marginal_loss_curve",
    "midpoint_barrier",
]

PyTree = Any


# --------------------------------------------------------------------------- checks


def _check_labels_for(y, x: jax.Array, num_classes: int) -> np.ndarray:
    """``y`` as numpy labels after checking: one per row of ``x``, integers in [0, num_classes)."""
    labels = np.asarray(y)
    if labels.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},) to match x, got {labels.shape}")
    return check_labels(labels, num_classes, "y")


def _check_same_tree(tree_0: PyTree, tree_1: PyTree, names=("params_0", "params_1")) -> None:
    """Raise ``ValueError`` naming the leaves if two pytrees differ in structure or leaf shapes."""
    n0, n1 = names
    paths_0 = {jax.tree_util.keystr(p): np.shape(a) for p, a in jax.tree_util.tree_leaves_with_path(tree_0)}
    paths_1 = {jax.tree_util.keystr(p): np.shape(a) for p, a in jax.tree_util.tree_leaves_with_path(tree_1)}
    if jax.tree_util.tree_structure(tree_0) != jax.tree_util.tree_structure(tree_1):
        raise ValueError(f"{n0} and {n1} have different parameter trees (only in {n0}: "
                         f"{sorted(set(paths_0) - set(paths_1))}, only in {n1}: {sorted(set(paths_1) - set(paths_0))})")
    for path, shape in paths_0.items():
        if shape != paths_1[path]:
            raise ValueError(f"{n0}{path} has shape {shape} but {n1}{path} has shape {paths_1[path]}")


# --------------------------------------------------------------------------- deterministic networks


def interpolate(params_0: Params, params_1: Params, lam: float | jax.Array) -> Params:
    """The network on the straight line between two networks.

    Args:
        params_0: parameters at ``lam = 0``.
        params_1: parameters at ``lam = 1``, the same pytree structure.
        lam: position on the line (any real, or a traced JAX scalar).

    Returns:
        ``(1 - lam) * params_0 + lam * params_1``, leaf by leaf.
    """
    return jax.tree_util.tree_map(lambda a, b: (1.0 - lam) * a + lam * b, params_0, params_1)


@partial(jax.jit, static_argnums=0)
def _curve(apply_fn, params_0, params_1, x, y, lambdas):
    def at(lam):
        logits = apply_fn(interpolate(params_0, params_1, lam), x)
        return nll(logits, y), accuracy(logits, y)

    return jax.lax.map(at, lambdas)


def interpolation_curve(params_0: Params, params_1: Params, x: jax.Array, y: jax.Array,
                        lambdas: Sequence[float] | int = 25, *, apply_fn: Callable) -> dict[str, np.ndarray]:
    """Mean NLL and accuracy of ``W_lambda`` on ``(x, y)`` for each lambda.

    Works for any model: pass its ``apply_fn(params, x) -> logits`` and any params pytree
    (for symlib's MLP, ``apply_fn=mlp_apply`` of :mod:`symlib.core.models`, whose layout is
    then checked).

    Args:
        params_0: parameters at lambda = 0.
        params_1: parameters at lambda = 1: the same tree and shapes as ``params_0``.
        x: inputs ``(n, d_0)``, ``d_0`` the networks' input width; finite.
        y: integer labels ``(n,)`` in ``[0, C)``, ``C`` the networks' output width.
        lambdas: a sequence of at least two points, or a number of evenly spaced points
            in [0, 1].
        apply_fn: ``apply_fn(params, x) -> logits (n, C)`` of one network.

    Returns:
        ``{"lambda", "loss", "accuracy"}`` as numpy arrays, one entry per lambda.

    Raises:
        ValueError: naming the input, if there are fewer than two lambdas; if the
            endpoints' parameter trees or leaf shapes differ or hold NaN or inf; if ``x``
            is empty, non-finite or not ``(n, d_0)``; if ``y`` is not ``(n,)`` integer
            labels in ``[0, C)``.
    """
    count = isinstance(lambdas, (int, np.integer)) and not isinstance(lambdas, bool)
    lam = np.linspace(0.0, 1.0, int(lambdas)) if count else np.asarray(lambdas, float)
    if lam.ndim != 1 or lam.size < 2:
        raise ValueError(f"need at least two interpolation points, got lambdas of shape {lam.shape}")
    _check_same_tree(params_0, params_1)
    check_finite_tree(params_0, "params_0")
    check_finite_tree(params_1, "params_1")
    xj = check_x(x, params_0, apply_fn)
    _check_labels_for(y, xj, _num_classes(apply_fn, params_0, xj))
    loss, acc = _curve(apply_fn, params_0, params_1, xj, jnp.asarray(y), jnp.asarray(lam, jnp.float32))
    return {"lambda": lam, "loss": np.asarray(loss), "accuracy": np.asarray(acc)}


def loss_barrier(lambdas: Sequence[float], losses: Sequence[float]) -> float:
    """Loss barrier of a curve: ``max_lambda L(W_lambda) - (L(W_0) + L(W_1)) / 2``.

    Args:
        lambdas: 1-D points of the curve, starting at 0 and ending at 1.
        losses: the losses at those points (NaN is an error, never skipped).

    Returns:
        The barrier, a float (``|L(W_1) - L(W_0)| / 2`` for a path whose maximum is
        at an endpoint).

    Raises:
        ValueError: if the arrays are not 1-D of equal length >= 2, the curve does not
            start at 0 and end at 1, or a loss is not finite.
    """
    lam, loss = np.asarray(lambdas, float), np.asarray(losses, float)
    if lam.shape != loss.shape or lam.ndim != 1 or lam.size < 2:
        raise ValueError(f"lambdas and losses must be 1-D of equal length >= 2, got {lam.shape} and {loss.shape}")
    if not (np.isclose(lam[0], 0.0) and np.isclose(lam[-1], 1.0)):
        raise ValueError(f"the curve must start at lambda=0 and end at lambda=1, got {lam[0]} .. {lam[-1]}")
    if not np.all(np.isfinite(loss)):
        raise ValueError(f"non-finite losses along the path at lambda = {lam[~np.isfinite(loss)].tolist()}")
    return float(loss.max() - 0.5 * (loss[0] + loss[-1]))


def barrier(params_0: Params, params_1: Params, x, y, lambdas: Sequence[float] | int = 25, *,
            apply_fn: Callable) -> float:
    """Loss barrier between two networks on ``(x, y)`` (see the module docstring).

    Args:
        params_0: parameters at lambda = 0 (any pytree that ``apply_fn`` takes).
        params_1: parameters at lambda = 1 (same tree and shapes).
        x: inputs of the model.
        y: integer labels ``(n,)`` in ``[0, C)``.
        lambdas: points of the path, as in :func:`interpolation_curve` (must include 0 and 1).
        apply_fn: ``apply_fn(params, x) -> logits`` of one network.

    Returns:
        :func:`loss_barrier` of :func:`interpolation_curve`.

    Raises:
        ValueError: as :func:`interpolation_curve` and :func:`loss_barrier`.
    """
    curve = interpolation_curve(params_0, params_1, x, y, lambdas, apply_fn=apply_fn)
    return loss_barrier(curve["lambda"], curve["loss"])


# --------------------------------------------------------------------------- marginal loss curve


@partial(jax.jit, static_argnums=0)
def _curve_chunk(apply_fn, keys, weights, mu0, s0, mu1, s1, xbs, ybs, taus):
    """For one chunk of noise keys: per (tau, example) the log-sum-exp over the chunk's
    samples of ``log p(y | x, w_s)`` and the sum of their softmax probabilities."""
    eps = jax.vmap(lambda k: standard_normal_like(k, mu0))(keys)
    log_w = jnp.where(weights > 0, 0.0, -jnp.inf)

    def at_tau(tau):
        mu = jax.tree_util.tree_map(lambda a, b: (1.0 - tau) * a + tau * b, mu0, mu1)
        sig = jax.tree_util.tree_map(lambda a, b: (1.0 - tau) * a + tau * b, s0, s1)

        def one_batch(xy):
            xb, yb = xy
            one_sample = lambda e: jax.nn.log_softmax(apply_fn(perturb(mu, sig, e), xb), axis=-1)
            logp = jax.vmap(one_sample)(eps)  # (c, bs, C)
            lp_y = jnp.take_along_axis(logp, yb[None, :, None], axis=-1)[..., 0]  # (c, bs)
            lse = jax.nn.logsumexp(lp_y + log_w[:, None], axis=0)
            psum = jnp.sum(jnp.exp(logp) * weights[:, None, None], axis=0)
            return lse, psum

        return jax.lax.map(one_batch, (xbs, ybs))

    return jax.lax.map(at_tau, taus)


def _combine_chunks(a, b):
    """Fold two chunks' ``(log-sum-exp, probability sum)``."""
    return jnp.logaddexp(a[0], b[0]), a[1] + b[1]


def _taus(taus) -> np.ndarray:
    if isinstance(taus, (int, np.integer)) and not isinstance(taus, bool):
        if taus < 2:
            raise ValueError(f"need at least two points on the path, got taus={taus}")
        return np.linspace(0.0, 1.0, int(taus))
    t = np.asarray(taus, dtype=np.float64)
    if t.ndim != 1 or t.size < 1:
        raise ValueError(f"taus must be an int or a 1-D sequence of points in [0, 1], got shape {t.shape}")
    if not np.all(np.isfinite(t)) or t.min() < 0 or t.max() > 1:
        raise ValueError(f"taus must lie in [0, 1], got {t.tolist()}")
    return t


def _float32_tree(tree: PyTree) -> PyTree:
    return jax.tree_util.tree_map(lambda a: jnp.asarray(np.asarray(a, np.float32)), tree)


def _num_classes(apply_fn: Callable, params: PyTree, x: jax.Array) -> int:
    """Output width of ``apply_fn(params, x)``, from shapes only (``jax.eval_shape``)."""
    row = jax.ShapeDtypeStruct((1,) + x.shape[1:], x.dtype)
    return int(jax.eval_shape(apply_fn, params, row).shape[-1])


def marginal_loss_curve(key, q0, q1, x, y, taus: Sequence[float] | int = 11, num_samples: int = 16, *,
                        apply_fn: Callable, batch_size: int = 2048,
                        sample_chunk: int | None = None) -> dict[str, np.ndarray]:
    """NLL and accuracy of the Bayesian model average along the W2 geodesic from q0 to q1.

    At each ``tau``, ``q_tau = w2_geodesic(q0, q1, tau)`` and, with ``S = num_samples``
    standard normal draws ``eps_s`` (the same for every tau: draw ``s`` uses
    ``jax.random.split(key, S)[s]``, whatever ``sample_chunk``, and is the draw ``s`` of
    :func:`symlib.evaluation.predictive.sample_gaussian`),

        loss(tau)     = -(1/n) sum_i log( (1/S) sum_s p(y_i | x_i, mu_tau + sigma_tau * eps_s) ),
        accuracy(tau) = (1/n) sum_i 1[ argmax_c (1/S) sum_s p(c | x_i, w_s) == y_i ],

    ``p = softmax(apply_fn(w, x))``. The log of the sample mean is taken with a
    log-sum-exp, so it never underflows. This S-sample estimator overestimates the exact
    predictive NLL by ``O(1/S)`` (Jensen), by about the same amount at every tau. With
    ``sigma = 0`` it is the NLL of the deterministic interpolation
    (:func:`interpolation_curve`). Float32 on the device; ``x`` is processed in batches of
    ``batch_size`` rows and the samples ``sample_chunk`` at a time (the chunking of
    :mod:`symlib.evaluation.predictive`).

    Args:
        key: JAX PRNG key of the noise.
        q0: the posterior at ``tau = 0``: a pair ``(mu, sigma)`` of parameter pytrees (or
            an object with ``.mu`` and ``.sigma``), ``sigma >= 0``.
        q1: the posterior at ``tau = 1``, the same parameters and shapes.
        x: inputs ``(n, ...)``, ``n >= 1``, finite (``(n, d_0)`` for ``mlp_apply``).
        y: integer labels ``(n,)`` in ``[0, C)``, ``C`` the networks' output width.
        taus: an int (that many evenly spaced points of [0, 1], at least 2) or a 1-D
            sequence of points in [0, 1].
        num_samples: ``S``, the number of noise draws.
        apply_fn: ``apply_fn(params, x_batch) -> logits`` for ONE network.
        batch_size: rows of ``x`` evaluated at once.
        sample_chunk: draws evaluated at once (default: about 2**24 parameters' worth,
            at most 128).

    Returns:
        ``{"tau", "loss", "accuracy"}`` (numpy, one entry per tau); feed it to
        :func:`marginal_barrier` / :func:`midpoint_barrier`.

    Raises:
        ValueError: naming the input, for bad ``taus``, ``num_samples``, ``batch_size`` or
            ``sample_chunk``; for posteriors that do not match or hold NaN, inf or negative
            sigma (as :func:`symlib.symmetry.alignment.w2_geodesic`); for an empty,
            non-finite or (``mlp_apply``) wrongly shaped ``x``; for labels that are not
            ``(n,)`` integers in ``[0, C)``; and for a non-finite loss along the path.
        TypeError: if ``q0`` or ``q1`` is not a pair of parameter dicts.
    """
    t = _taus(taus)
    S = positive_int(num_samples, "num_samples")
    batch_size = positive_int(batch_size, "batch_size")
    # the path's endpoints, validated and in q0's layout
    mu0, sg0, mu1, sg1 = map(_float32_tree, (*w2_geodesic(q0, q1, 0.0), *w2_geodesic(q0, q1, 1.0)))
    xj = check_x(x, mu0, apply_fn)
    y = _check_labels_for(y, xj, _num_classes(apply_fn, mu0, xj))
    n_params = int(sum(np.size(a) for a in jax.tree_util.tree_leaves(mu0)))
    chunk = chunk_size(sample_chunk, S, n_params)

    n = xj.shape[0]
    xbs = batched(xj, batch_size)
    ybs = batched(jnp.asarray(y.astype(np.int32)), batch_size)
    tj = jnp.asarray(t, jnp.float32)
    step = lambda keys, weights: _curve_chunk(apply_fn, keys, weights, mu0, sg0, mu1, sg1, xbs, ybs, tj)
    lse, psum = fold_chunks(jax.random.split(key, S), S, chunk, step, _combine_chunks)
    lse = np.asarray(lse, np.float64).reshape(len(t), -1)[:, :n]
    psum = np.asarray(psum).reshape((len(t), -1) + psum.shape[3:])[:, :n]
    loss = -(lse - math.log(S)).mean(axis=1)
    acc = (psum.argmax(axis=-1) == y[None, :]).mean(axis=1)
    if not np.all(np.isfinite(loss)):
        raise ValueError(f"non-finite loss along the path at tau = {t[~np.isfinite(loss)].tolist()} "
                         "(NaN or overflowing logits)")
    return {"tau": t, "loss": loss, "accuracy": acc}


# --------------------------------------------------------------------------- marginal barriers


def _curve_arrays(curve: Mapping) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(curve, Mapping):
        raise TypeError(f"curve must be a dict with 'tau' and 'loss' (from marginal_loss_curve), got {type(curve).__name__}")
    key = "tau" if "tau" in curve else "lambda" if "lambda" in curve else None
    if key is None or "loss" not in curve:
        raise ValueError(f"curve must have 'tau' (or 'lambda') and 'loss', got keys {sorted(curve)}")
    t, loss = np.asarray(curve[key], float), np.asarray(curve["loss"], float)
    if t.ndim != 1 or t.shape != loss.shape or t.size < 2:
        raise ValueError(f"tau and loss must be 1-D of equal length >= 2, got {t.shape} and {loss.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"non-finite tau values: {t.tolist()}")
    if not np.all(np.isfinite(loss)):
        raise ValueError(f"non-finite losses along the path at tau = {t[~np.isfinite(loss)].tolist()}")
    return t, loss


def _at(t: np.ndarray, loss: np.ndarray, where: float) -> float:
    hit = np.flatnonzero(np.isclose(t, where, rtol=0.0, atol=1e-9))
    if hit.size == 0:
        raise ValueError(f"the curve has no point at tau = {where} (taus: {t.tolist()})")
    return float(loss[hit[0]])


def marginal_barrier(curve: Mapping) -> float:
    """Height of a loss curve above the chord between its endpoints.

    ``max_tau [L(tau) - ((1 - tau) L(0) + tau L(1))]`` (>= 0, as the chord meets the
    curve at the endpoints).

    Args:
        curve: a dict with ``"tau"`` (or ``"lambda"``) and ``"loss"``, e.g. from
            :func:`marginal_loss_curve`; it must contain tau = 0 and tau = 1 (any order).

    Returns:
        The barrier, a float.

    Raises:
        TypeError: if ``curve`` is not a mapping.
        ValueError: for missing keys, mismatched or too short arrays, taus outside
            [0, 1], no point at tau = 0 or 1, or non-finite losses.
    """
    t, loss = _curve_arrays(curve)
    if t.min() < -1e-9 or t.max() > 1 + 1e-9:
        raise ValueError(f"tau must lie in [0, 1], got {t.tolist()}")
    l0, l1 = _at(t, loss, 0.0), _at(t, loss, 1.0)
    return float(np.max(loss - ((1.0 - t) * l0 + t * l1)))


def midpoint_barrier(curve: Mapping) -> float:
    """Midpoint barrier of a loss curve: ``L(0.5) - (L(0) + L(1)) / 2``.

    Args:
        curve: a dict with ``"tau"`` (or ``"lambda"``) and ``"loss"`` containing tau = 0,
            0.5 and 1, e.g. from :func:`marginal_loss_curve`.

    Returns:
        The barrier, a float (negative when the midpoint lies below the endpoints' mean).

    Raises:
        TypeError: if ``curve`` is not a mapping.
        ValueError: for missing keys or points, or non-finite losses.
    """
    t, loss = _curve_arrays(curve)
    return _at(t, loss, 0.5) - 0.5 * (_at(t, loss, 0.0) + _at(t, loss, 1.0))
