"""Aligning two mean-field Gaussian posteriors under permutations (Rossi, Singh, Hannagan, 2023).

A mean-field posterior is a pair ``q = (mu, sigma)`` of pytrees in the network's
parameter layout (``sigma`` a standard deviation, ``>= 0``): ``q(W) = prod_j
N(w_j | mu_j, sigma_j^2)``. (A :class:`symlib.inference.vi.VIResult`, or anything with ``.mu``
and ``.sigma``, is accepted wherever ``q`` is.) A permutation ``P`` of hidden units
acts on both pytrees alike, and the push-forward ``P#q`` is the Gaussian with mean
``P mu`` and standard deviations ``P sigma``: :func:`apply_alignment`.

No new optimiser: both costs below are reduced to :func:`symlib.symmetry.matching.weight_matching`
(coordinate ascent with exact LAPs on ``J = sum <A, P(B)>``) run on *composite* pytrees,
several copies of the parameters acted on by the same permutations
(:func:`composite_spec`). The returned permutations are then applied to ``q1`` with the
ORIGINAL spec: ``apply_alignment(spec, result.perms, q1)`` is ``q1`` aligned to ``q0``.

Wasserstein cost (the paper's choice, Sec. 4.2)
-----------------------------------------------
For diagonal Gaussians, ``W2^2(q0, P#q1) = ||mu0 - P mu1||^2 + ||sigma0 - P sigma1||^2``,
i.e. ``const - 2 (<mu0, P mu1> + <sigma0, P sigma1>)``: weight matching of
``A = {"mu": mu0, "sigma": sigma0}`` with ``B = {"mu": mu1, "sigma": sigma1}``
(:func:`wasserstein_alignment`). It starts at the identity and only accepts strict
improvements, so the aligned W2 never exceeds the unaligned one.

KL cost (Appendix A, Figure A1)
-------------------------------
With ``m, s`` means and standard deviations,

    KL[P#q1 || q0] = sum_i [ log(s0_i / (P s1)_i)
                             + ((P s1)_i^2 + ((P m1)_i - m0_i)^2) / (2 s0_i^2) - 1/2 ].

``sum_i log (P s1)_i`` is permutation invariant; the rest is

    KL = c - J,   J = <m0 / s0^2, P m1>  +  <-1 / (2 s0^2), P (m1^2 + s1^2)>,
    c  = sum_i [ log s0_i - log s1_i + m0_i^2 / (2 s0_i^2) - 1/2 ],

so KL alignment is weight matching of ``A = {"a": m0/s0^2, "b": -1/(2 s0^2)}`` with
``B = {"a": m1, "b": m1^2 + s1^2}`` (:func:`kl_alignment`, :func:`kl_cost_terms`).

The appendix states that, of the KL, only the Mahalanobis mean term
``(m0 - P m1)^T diag(s0^-2) (m0 - P m1)`` depends on ``P`` ("disregarding any covariance
information"). The log-determinants are indeed invariant, but the trace term
``sum_i (P s1)_i^2 / s0_i^2`` depends on ``P`` unless ``s0`` is constant, so the KL does
see the variances. ``mean_only=True`` reproduces the appendix's reduced cost (``B["b"] =
m1^2``). On the mirror-symmetric toy of Figure A1 (``q1`` the reflection of ``q0`` about
``y = x``) the swap brings ``q1`` exactly onto ``q0``, so every one of these costs (W2,
full KL, mean-only KL) is minimised by the swap whenever the means differ (``a != b``);
the mean-only cost returns the identity only in the tie ``a == b`` (means on the mirror
line), where the full KL and W2 still pick the swap (tests/test_alignment.py).

Interpolation and the marginalised loss barrier
-----------------------------------------------
:func:`w2_geodesic` is the W2 geodesic (McCann interpolation) between diagonal Gaussians:
``mu_tau = (1-tau) mu0 + tau mu1``, ``sigma_tau = (1-tau) sigma0 + tau sigma1``.
:func:`marginal_loss_curve` evaluates, at each ``tau``, the NLL of the Bayesian model
average of ``q_tau``

    L(tau) = - (1/n) sum_i log( (1/S) sum_s p(y_i | x_i, w_s(tau)) ),
    w_s(tau) = mu_tau + sigma_tau * eps_s,   eps_s ~ N(0, I),  s = 1..S,

with the SAME ``eps_s`` at every ``tau`` (common random numbers, so the curve is smooth
in ``tau`` and its endpoints are the usual S-sample predictive NLLs of ``q0`` and ``q1``).
By Jensen this overestimates the exact predictive NLL, by ``O(1/S)``, and by about the
same amount all along the path. :func:`marginal_barrier` is
``max_tau [L(tau) - ((1-tau) L(0) + tau L(1))]``, the height above the chord of the
endpoints (note: :func:`symlib.evaluation.interpolation.loss_barrier` subtracts the plain mean
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

from symlib.symmetry.matching import MatchResult, weight_matching
from symlib.core.models import mlp_apply
from symlib.symmetry.specs import PermutationSpec, apply_permutation, check_spec, flatten_params, unflatten_params

__all__ = [
    "apply_alignment",
    "composite_spec",
    "kl_alignment",
    "kl_cost_terms",
    "kl_diag",
    "marginal_barrier",
    "marginal_loss_curve",
    "midpoint_barrier",
    "w2_geodesic",
    "wasserstein2_sq",
    "wasserstein_alignment",
]

PyTree = Any


# --------------------------------------------------------------------------- validation


def _unpack(q, name: str) -> tuple[Mapping, Mapping]:
    if hasattr(q, "mu") and hasattr(q, "sigma"):
        mu, sigma = q.mu, q.sigma
    elif isinstance(q, (tuple, list)) and len(q) == 2:
        mu, sigma = q
    else:
        raise TypeError(f"{name} must be a pair (mu, sigma) of parameter pytrees (or have .mu and .sigma), "
                        f"got {type(q).__name__}")
    if not isinstance(mu, Mapping) or not isinstance(sigma, Mapping):
        raise TypeError(f"{name}: mu and sigma must be (nested) dicts of arrays, got "
                        f"{type(mu).__name__} and {type(sigma).__name__}")
    return mu, sigma


def _gaussian(q, name: str, *, positive: bool = False, dtype=np.float64):
    """Flat ``(mu, sigma)`` dicts (``dtype``; ``None`` keeps the leaves' dtypes) of a
    validated diagonal Gaussian, and whether its ``mu`` was nested."""
    mu, sigma = _unpack(q, name)
    fm, fs = flatten_params(mu), flatten_params(sigma)
    if not fm:
        raise ValueError(f"{name} has no parameters")
    if set(fm) != set(fs):
        only_m = sorted(set(fm) - set(fs))
        only_s = sorted(set(fs) - set(fm))
        raise ValueError(f"{name}: mu and sigma hold different parameters (only in mu: {only_m}, only in sigma: {only_s})")
    out_m, out_s = {}, {}
    for path in fm:
        m = np.asarray(fm[path]) if dtype is None else np.asarray(fm[path], dtype)
        s = np.asarray(fs[path]) if dtype is None else np.asarray(fs[path], dtype)
        if m.shape != s.shape:
            raise ValueError(f"{name}: parameter {path!r} has mean shape {m.shape} but sigma shape {s.shape}")
        for what, arr in (("mean", m), ("sigma", s)):
            if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
                raise ValueError(f"{name}: {what} of parameter {path!r} must be real numbers, got dtype {arr.dtype}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name}: {what} of parameter {path!r} holds NaN or inf")
        if s.size:
            smin = float(np.min(s))
            if positive and smin <= 0:
                raise ValueError(f"{name}: sigma of parameter {path!r} must be positive for the KL divergence "
                                 f"(min {smin:.3g})")
            if smin < 0:
                raise ValueError(f"{name}: sigma of parameter {path!r} has negative entries (min {smin:.3g}); "
                                 "sigma is a standard deviation, not a log-std or rho")
        out_m[path], out_s[path] = m, s
    nested = any(isinstance(v, Mapping) for v in mu.values())
    return out_m, out_s, nested


def _pair(q0, q1, *, positive: bool = False, dtype=np.float64, names=("q0", "q1")):
    n0, n1 = names
    m0, s0, nested = _gaussian(q0, n0, positive=positive, dtype=dtype)
    m1, s1, _ = _gaussian(q1, n1, positive=positive, dtype=dtype)
    if set(m0) != set(m1):
        raise ValueError(f"{n0} and {n1} hold different parameters (only in {n0}: {sorted(set(m0) - set(m1))}, "
                         f"only in {n1}: {sorted(set(m1) - set(m0))})")
    for path in m0:
        if m0[path].shape != m1[path].shape:
            raise ValueError(f"parameter {path!r} has shape {m0[path].shape} in {n0} but {m1[path].shape} in {n1}")
    m1 = {p: m1[p] for p in m0}
    s1 = {p: s1[p] for p in m0}
    return m0, s0, m1, s1, nested


def _check_fits(spec: PermutationSpec, flat: Mapping) -> None:
    if not isinstance(spec, PermutationSpec):
        raise TypeError(f"spec must be a PermutationSpec, got {type(spec).__name__}")
    try:
        check_spec(spec, flat)
    except ValueError as e:
        raise ValueError(f"q0/q1 do not fit the spec: {e}") from None


def _layout(flat: Mapping, nested: bool):
    return unflatten_params(dict(flat)) if nested else dict(flat)


# --------------------------------------------------------------------------- composite specs


def composite_spec(spec: PermutationSpec, prefixes: Sequence[str]) -> PermutationSpec:
    """The permutations of ``spec`` acting on several copies of its parameters.

    Path ``p`` of ``spec`` becomes ``f"{prefix}/{p}"`` for every prefix, with the same
    permutation names on the same axes, e.g. ``composite_spec(mlp_permutation_spec(1),
    ["mu", "sigma"])`` has ``"mu/dense_0/kernel"`` and ``"sigma/dense_0/kernel"``, both
    ``(None, "P_0")``. Matches the pytree ``{"mu": mu, "sigma": sigma}``.
    """
    if not isinstance(spec, PermutationSpec):
        raise TypeError(f"spec must be a PermutationSpec, got {type(spec).__name__}")
    if isinstance(prefixes, str):
        raise TypeError("prefixes must be a sequence of strings, not one string")
    prefixes = list(prefixes)
    if not prefixes:
        raise ValueError("need at least one prefix")
    for p in prefixes:
        if not isinstance(p, str) or not p or p.startswith("/") or p.endswith("/") or "//" in p:
            raise ValueError(f"prefixes must be non-empty strings without leading, trailing or double '/', got {p!r}")
    if len(set(prefixes)) != len(prefixes):
        raise ValueError(f"prefixes must be distinct, got {prefixes}")
    return PermutationSpec({f"{pre}/{path}": names for pre in prefixes for path, names in spec.axes.items()})


def apply_alignment(spec: PermutationSpec, perms: Mapping[str, Any], q) -> tuple[PyTree, PyTree]:
    """``P#q``: the same permutations applied to the means and to the standard deviations.

    Returns ``(mu, sigma)`` in the structure of ``q``'s (see
    :func:`symlib.symmetry.specs.apply_permutation`; the network function of every sample is
    unchanged).
    """
    mu, sigma = _unpack(q, "q")
    return apply_permutation(spec, perms, mu), apply_permutation(spec, perms, sigma)


def _permuted(spec: PermutationSpec, perms: Mapping[str, np.ndarray], flat: Mapping) -> dict:
    return apply_permutation(spec, perms, {p: np.asarray(v) for p, v in flat.items()})


# --------------------------------------------------------------------------- divergences


def wasserstein2_sq(q0, q1) -> float:
    """Squared 2-Wasserstein distance between two diagonal Gaussians (sum over all params):
    ``sum ||mu0 - mu1||^2 + ||sigma0 - sigma1||^2`` (float64)."""
    m0, s0, m1, s1, _ = _pair(q0, q1)
    return float(sum(np.sum((m0[p] - m1[p]) ** 2) + np.sum((s0[p] - s1[p]) ** 2) for p in m0))


def kl_diag(p, q) -> float:
    """``KL[p || q]`` between diagonal Gaussians ``p = (m1, s1)``, ``q = (m0, s0)``, summed:
    ``sum log(s0/s1) + (s1^2 + (m1 - m0)^2) / (2 s0^2) - 1/2`` (float64). Every sigma
    must be positive. ``kl_diag(q1, q0)`` is the KL that :func:`kl_alignment` minimises."""
    m1, s1, m0, s0, _ = _pair(p, q, positive=True, names=("p", "q"))
    total = 0.0
    for path in m0:
        r = s1[path] / s0[path]
        total += float(np.sum(-np.log(r) + 0.5 * r**2 + 0.5 * ((m1[path] - m0[path]) / s0[path]) ** 2 - 0.5))
    return total


def _w2_flat(m0, s0, m1, s1) -> float:
    return float(sum(np.sum((m0[p] - m1[p]) ** 2) + np.sum((s0[p] - s1[p]) ** 2) for p in m0))


# --------------------------------------------------------------------------- Wasserstein alignment


def wasserstein_alignment(key, spec: PermutationSpec, q0, q1, max_iter: int = 100, **matching_kwargs) -> MatchResult:
    """Permutations ``P`` minimising ``W2^2(q0, P#q1)`` for diagonal Gaussians (Rossi et al., Sec. 4.2).

    ``W2^2 = sum ||mu0 - P mu1||^2 + ||sigma0 - P sigma1||^2``; minimising it maximises
    ``<mu0, P mu1> + <sigma0, P sigma1>``, which is :func:`symlib.symmetry.matching.weight_matching`
    of ``{"mu": mu0, "sigma": sigma0}`` and ``{"mu": mu1, "sigma": sigma1}`` on
    ``composite_spec(spec, ["mu", "sigma"])`` (coordinate ascent from the identity, one
    exact LAP per permutation; ``key`` draws the sweep orders; ``matching_kwargs`` such as
    ``init_perms``, ``tol``, ``num_threads``, ``verbose`` are passed on).

    ``q0``, ``q1``: ``(mu, sigma)`` pairs (or objects with ``.mu``/``.sigma``) in the
    network layout; shapes must agree, sigma must be finite and ``>= 0`` (``ValueError``
    naming the parameter). Returns the :class:`~symlib.symmetry.matching.MatchResult`:
    ``apply_alignment(spec, result.perms, q1)`` is ``q1`` aligned to ``q0``;
    ``result.objective`` is J per sweep, and ``result.info`` adds ``"w2_sq"`` (aligned),
    ``"w2_sq_identity"`` (unaligned) and ``"cost": "wasserstein"``.
    """
    m0, s0, m1, s1, _ = _pair(q0, q1)
    _check_fits(spec, m0)
    res = weight_matching(key, composite_spec(spec, ["mu", "sigma"]), {"mu": m0, "sigma": s0},
                          {"mu": m1, "sigma": s1}, max_iter, **matching_kwargs)
    res.info.update(
        cost="wasserstein",
        w2_sq_identity=_w2_flat(m0, s0, m1, s1),
        w2_sq=_w2_flat(m0, s0, _permuted(spec, res.perms, m1), _permuted(spec, res.perms, s1)),
    )
    return res


# --------------------------------------------------------------------------- KL alignment


def _kl_terms_flat(m0, s0, m1, s1, mean_only: bool):
    A = {"a": {p: m0[p] / s0[p] ** 2 for p in m0}, "b": {p: -0.5 / s0[p] ** 2 for p in m0}}
    B = {"a": dict(m1), "b": {p: m1[p] ** 2 + (0.0 if mean_only else s1[p] ** 2) for p in m0}}
    return A, B


def kl_cost_terms(q0, q1, *, mean_only: bool = False) -> tuple[dict, dict]:
    """The composite pytrees ``(A, B)`` with ``KL[P#q1 || q0] = c - sum <A, P(B)>``.

    ``A = {"a": m0 / s0^2, "b": -1 / (2 s0^2)}`` and ``B = {"a": m1, "b": m1^2 + s1^2}``
    (each entry in the layout of ``q0``'s mu), to be matched on
    ``composite_spec(spec, ["a", "b"])``; ``c = sum log(s0/s1) + m0^2/(2 s0^2) - 1/2``
    does not depend on ``P`` (module docstring). The ``s1^2`` in ``B["b"]`` is the trace
    term ``sum (P s1)^2 / (2 s0^2)``, which the appendix wrongly takes for permutation
    invariant; ``mean_only=True`` drops it (``B["b"] = m1^2``): the cost is then the
    appendix's Mahalanobis mean term ``(m0 - P m1)^T diag(s0^-2) (m0 - P m1) / 2`` alone.
    Float64 numpy; all sigmas must be positive.
    """
    m0, s0, m1, s1, nested = _pair(q0, q1, positive=True)
    A, B = _kl_terms_flat(m0, s0, m1, s1, mean_only)
    return ({k: _layout(v, nested) for k, v in A.items()}, {k: _layout(v, nested) for k, v in B.items()})


def kl_alignment(key, spec: PermutationSpec, q0, q1, max_iter: int = 100, *, mean_only: bool = False,
                 **matching_kwargs) -> MatchResult:
    """Permutations ``P`` minimising ``KL[P#q1 || q0]`` between diagonal Gaussians.

    ``KL = c - J`` with ``J = <m0/s0^2, P m1> - <1/(2 s0^2), P(m1^2 + s1^2)>`` (module
    docstring), so this is :func:`symlib.symmetry.matching.weight_matching` of the pytrees of
    :func:`kl_cost_terms` on ``composite_spec(spec, ["a", "b"])``. Contrary to Appendix
    A of the paper, the cost depends on the variances through the trace term
    ``sum (P s1)^2 / s0^2`` whenever ``s0`` is not constant; ``mean_only=True`` gives the
    appendix's reduced cost (Mahalanobis distance of the means only).

    Every sigma must be positive (``ValueError`` naming the parameter). Returns the
    :class:`~symlib.symmetry.matching.MatchResult` (apply with :func:`apply_alignment` and the
    original ``spec``); ``result.info`` adds ``"kl"`` (``KL[P#q1 || q0]`` at the result,
    the full KL even when ``mean_only``), ``"kl_identity"``, ``"kl_const"`` (``c``) and
    ``"cost"``.
    """
    m0, s0, m1, s1, _ = _pair(q0, q1, positive=True)
    _check_fits(spec, m0)
    A, B = _kl_terms_flat(m0, s0, m1, s1, mean_only)
    res = weight_matching(key, composite_spec(spec, ["a", "b"]), A, B, max_iter, **matching_kwargs)
    const = float(sum(np.sum(np.log(s0[p]) - np.log(s1[p]) + 0.5 * (m0[p] / s0[p]) ** 2 - 0.5) for p in m0))
    res.info.update(
        cost="kl_mean_only" if mean_only else "kl",
        kl_identity=kl_diag((m1, s1), (m0, s0)),
        kl=kl_diag((_permuted(spec, res.perms, m1), _permuted(spec, res.perms, s1)), (m0, s0)),
        kl_const=const,
    )
    return res


# --------------------------------------------------------------------------- geodesic and loss curve


def _check_tau(tau) -> float:
    try:
        t = float(tau)
    except (TypeError, ValueError):
        raise ValueError(f"tau must be a number in [0, 1], got {tau!r}") from None
    if np.ndim(tau) != 0 or not (0.0 <= t <= 1.0):
        raise ValueError(f"tau must be a number in [0, 1], got {tau!r}")
    return t


def w2_geodesic(q0, q1, tau: float) -> tuple[PyTree, PyTree]:
    """The point at ``tau`` in [0, 1] of the W2 geodesic between diagonal Gaussians.

    ``mu = (1-tau) mu0 + tau mu1`` and ``sigma = (1-tau) sigma0 + tau sigma1`` (for
    Gaussians with commuting covariances the McCann interpolation is linear in the mean
    and in the standard deviations). Returns ``(mu, sigma)`` in ``q0``'s structure,
    numpy, in the leaves' dtypes; ``tau = 0`` gives ``q0`` and ``tau = 1`` gives ``q1``
    exactly.
    """
    t = _check_tau(tau)
    m0, s0, m1, s1, nested = _pair(q0, q1, dtype=None)
    if t == 0.0:
        return _layout({p: m0[p].copy() for p in m0}, nested), _layout({p: s0[p].copy() for p in m0}, nested)
    if t == 1.0:
        return _layout({p: m1[p].copy() for p in m0}, nested), _layout({p: s1[p].copy() for p in m0}, nested)
    mu = {p: (1.0 - t) * m0[p] + t * m1[p] for p in m0}
    sigma = {p: (1.0 - t) * s0[p] + t * s1[p] for p in m0}
    return _layout(mu, nested), _layout(sigma, nested)


def _unflatten_like(flat: jax.Array, like) -> PyTree:
    leaves, treedef = jax.tree_util.tree_flatten(like)
    cuts = np.cumsum([int(np.prod(a.shape, dtype=np.int64)) for a in leaves])[:-1].tolist()
    parts = [part.reshape(a.shape) for part, a in zip(jnp.split(flat, cuts), leaves)]
    return jax.tree_util.tree_unflatten(treedef, parts)


@partial(jax.jit, static_argnums=0)
def _curve_chunk(apply_fn, mu0, s0, mu1, s1, keys, weights, xbs, ybs, taus):
    """For one chunk of noise keys: per (tau, example) the log-sum-exp over the chunk's
    samples of ``log p(y | x, w_s)`` and the sum of their softmax probabilities."""
    n_params = sum(int(np.prod(a.shape, dtype=np.int64)) for a in jax.tree_util.tree_leaves(mu0))
    eps = jax.vmap(lambda k: jax.random.normal(k, (n_params,), jnp.float32))(keys)
    eps = jax.vmap(lambda e: _unflatten_like(e, mu0))(eps)
    log_w = jnp.where(weights > 0, 0.0, -jnp.inf)

    def at_tau(tau):
        mu = jax.tree_util.tree_map(lambda a, b: (1.0 - tau) * a + tau * b, mu0, mu1)
        sig = jax.tree_util.tree_map(lambda a, b: (1.0 - tau) * a + tau * b, s0, s1)

        def one_batch(xy):
            xb, yb = xy

            def one_sample(e):
                w = jax.tree_util.tree_map(lambda m, s, z: m + s * z, mu, sig, e)
                return jax.nn.log_softmax(apply_fn(w, xb), axis=-1)

            logp = jax.vmap(one_sample)(eps)  # (c, bs, C)
            lp_y = jnp.take_along_axis(logp, yb[None, :, None], axis=-1)[..., 0]  # (c, bs)
            lse = jax.nn.logsumexp(lp_y + log_w[:, None], axis=0)
            psum = jnp.sum(jnp.exp(logp) * weights[:, None, None], axis=0)
            return lse, psum

        return jax.lax.map(one_batch, (xbs, ybs))

    return jax.lax.map(at_tau, taus)


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


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def marginal_loss_curve(key, q0, q1, x, y, taus: Sequence[float] | int = 11, num_samples: int = 16, *,
                        apply_fn: Callable = mlp_apply, batch_size: int = 2048,
                        sample_chunk: int | None = None) -> dict[str, np.ndarray]:
    """NLL and accuracy of the Bayesian model average along the W2 geodesic from q0 to q1.

    At each ``tau`` (an int: that many evenly spaced points of [0, 1]; or a sequence in
    [0, 1]), ``q_tau = w2_geodesic(q0, q1, tau)`` and, with ``S = num_samples`` standard
    normal draws ``eps_s`` (the same for every tau: draw ``s`` uses
    ``jax.random.split(key, S)[s]``, whatever ``sample_chunk``),

        loss(tau)     = -(1/n) sum_i log( (1/S) sum_s p(y_i | x_i, mu_tau + sigma_tau * eps_s) ),
        accuracy(tau) = (1/n) sum_i 1[ argmax_c (1/S) sum_s p(c | x_i, w_s) == y_i ],

    ``p = softmax(apply_fn(w, x))``. The log of the sample mean is taken with a
    log-sum-exp, so it never underflows. This S-sample estimator overestimates the exact
    predictive NLL by ``O(1/S)`` (Jensen), by about the same amount at every tau. With
    ``sigma = 0`` it is the NLL of the deterministic interpolation
    (:func:`symlib.evaluation.interpolation.interpolation_curve`). Float32 on the device; ``x`` is
    processed in batches of ``batch_size`` rows and the samples ``sample_chunk`` at a time
    (default: about 2**24 parameters per chunk).

    Returns ``{"tau", "loss", "accuracy"}`` (numpy, one entry per tau); feed it to
    :func:`marginal_barrier` / :func:`midpoint_barrier`.
    """
    t = _taus(taus)
    S = _positive_int(num_samples, "num_samples")
    batch_size = _positive_int(batch_size, "batch_size")
    m0, s0, m1, s1, nested = _pair(q0, q1, dtype=np.float32)
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim < 1 or x.shape[0] < 1:
        raise ValueError(f"x must have a leading axis of at least one example, got shape {x.shape}")
    if np.issubdtype(x.dtype, np.inexact) and not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or inf")
    if y.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},) to match x, got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer) or (y.size and y.min() < 0):
        raise ValueError(f"y must hold non-negative integer class labels, got dtype {y.dtype}")
    n_params = int(sum(v.size for v in m0.values()))
    if sample_chunk is None:
        chunk = max(1, min(S, 128, 2**24 // max(n_params, 1)))
    else:
        chunk = min(_positive_int(sample_chunk, "sample_chunk"), S)

    tree = partial(_layout, nested=nested)
    mu0, sg0, mu1, sg1 = (jax.tree_util.tree_map(jnp.asarray, tree(d)) for d in (m0, s0, m1, s1))
    n = x.shape[0]
    bs = min(batch_size, n)
    nb = -(-n // bs)
    pad = nb * bs - n
    xp = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)]) if pad else x
    yp = np.concatenate([y, np.zeros(pad, y.dtype)]) if pad else y
    xbs = jnp.asarray(xp.reshape((nb, bs) + x.shape[1:]))
    ybs = jnp.asarray(yp.reshape(nb, bs).astype(np.int32))
    keys = jax.random.split(key, S)
    tj = jnp.asarray(t, jnp.float32)
    lse = psum = None
    for start in range(0, S, chunk):
        stop = min(start + chunk, S)
        part = keys[start:stop]
        weights = np.zeros(chunk, np.float32)
        weights[: stop - start] = 1.0
        if stop - start < chunk:  # pad with copies of a real key, weight zero: one compiled shape
            part = jnp.concatenate([part, jnp.repeat(part[:1], chunk - (stop - start), axis=0)])
        l_c, p_c = _curve_chunk(apply_fn, mu0, sg0, mu1, sg1, part, jnp.asarray(weights), xbs, ybs, tj)
        lse = l_c if lse is None else jnp.logaddexp(lse, l_c)
        psum = p_c if psum is None else psum + p_c
    lse = np.asarray(lse, np.float64).reshape(len(t), -1)[:, :n]
    psum = np.asarray(psum).reshape((len(t), nb * bs) + psum.shape[3:])[:, :n]
    loss = -(lse - math.log(S)).mean(axis=1)
    acc = (psum.argmax(axis=-1) == y[None, :]).mean(axis=1)
    if not np.all(np.isfinite(loss)):
        raise ValueError(f"non-finite loss along the path at tau = {t[~np.isfinite(loss)].tolist()} "
                         "(NaN or overflowing logits)")
    return {"tau": t, "loss": loss, "accuracy": acc}


# --------------------------------------------------------------------------- barriers


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
    """``max_tau [L(tau) - ((1 - tau) L(0) + tau L(1))]``: the largest excess of the loss
    over the chord between the endpoint losses (>= 0, as the chord meets the curve at the
    endpoints). ``curve`` is a dict with ``"tau"`` (or ``"lambda"``) and ``"loss"``, e.g.
    from :func:`marginal_loss_curve`; it must contain tau = 0 and tau = 1. Non-finite
    losses raise ``ValueError``."""
    t, loss = _curve_arrays(curve)
    if t.min() < -1e-9 or t.max() > 1 + 1e-9:
        raise ValueError(f"tau must lie in [0, 1], got {t.tolist()}")
    l0, l1 = _at(t, loss, 0.0), _at(t, loss, 1.0)
    return float(np.max(loss - ((1.0 - t) * l0 + t * l1)))


def midpoint_barrier(curve: Mapping) -> float:
    """``L(0.5) - (L(0) + L(1)) / 2`` from a curve containing tau = 0, 0.5 and 1
    (``ValueError`` otherwise, or on non-finite losses)."""
    t, loss = _curve_arrays(curve)
    return _at(t, loss, 0.5) - 0.5 * (_at(t, loss, 0.0) + _at(t, loss, 1.0))


# --------------------------------------------------------------------------- timings

