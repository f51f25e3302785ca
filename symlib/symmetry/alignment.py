"""Aligning two mean-field Gaussian posteriors under permutations (Rossi, Singh, Hannagan, 2023).

A mean-field posterior is a pair ``q = (mu, sigma)`` of pytrees in the network's
parameter layout (``sigma`` a standard deviation, ``>= 0``): ``q(W) = prod_j
N(w_j | mu_j, sigma_j^2)``. (A :class:`~symlib.core.gaussian.DiagonalGaussian`, e.g. of
:func:`symlib.inference.fit_vi`, or anything with ``.mu`` and ``.sigma``, is accepted wherever
``q`` is.) A permutation ``P`` of hidden units
acts on both pytrees alike, and the push-forward ``P#q`` is the Gaussian with mean
``P mu`` and standard deviations ``P sigma``: :func:`apply_alignment`.

No new optimiser: both costs below are reduced to :func:`symlib.symmetry.matching.weight_matching`
(coordinate ascent with exact LAPs on ``J = sum <A, P(B)>``) run on *composite* pytrees,
several copies of the parameters acted on by the same permutations
(:func:`composite_spec`). The returned permutations are then applied to ``q1`` with the
ORIGINAL spec: ``apply_alignment(spec, result.perms, q1)`` is ``q1`` aligned to ``q0``.
Any spec works, convolutional networks included (e.g. a mean-field OptuNet with
:func:`~symlib.symmetry.architectures.optunet_permutation_spec`); its
:attr:`~symlib.symmetry.specs.PermutationSpec.blocks` carry over to the composite spec,
so grouped channels stay in their groups.

Wasserstein cost (the paper's choice, Sec. 4.2)
-----------------------------------------------
For diagonal Gaussians, ``W2^2(q0, P#q1) = ||mu0 - P mu1||^2 + ||sigma0 - P sigma1||^2``,
i.e. ``const - 2 (<mu0, P mu1> + <sigma0, P sigma1>)``: weight matching of
``A = {"mu": mu0, "sigma": sigma0}`` with ``B = {"mu": mu1, "sigma": sigma1}``
(:func:`wasserstein_alignment`). It starts at the identity and only accepts strict
improvements, so the aligned W2 never exceeds the unaligned one (a start given through
``matching_kwargs``' ``init_perms`` gives up that guarantee: it bounds W2 by the start's).

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
line), where the full KL and W2 still pick the swap (tests/symmetry/test_alignment.py).

Interpolation
-------------
:func:`w2_geodesic` is the W2 geodesic (McCann interpolation) between diagonal Gaussians:
``mu_tau = (1-tau) mu0 + tau mu1``, ``sigma_tau = (1-tau) sigma0 + tau sigma1``. The loss
of the Bayesian model average along it, and the marginalised loss barrier, are evaluation
tools: :func:`symlib.evaluation.interpolation.marginal_loss_curve`,
:func:`symlib.evaluation.interpolation.marginal_barrier` and
:func:`symlib.evaluation.interpolation.midpoint_barrier`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symlib.core.gaussian import DiagonalGaussian
from symlib.symmetry.matching import MatchResult, weight_matching
from symlib.symmetry.specs import PermutationSpec, apply_permutation, check_spec, flatten_params, unflatten_params

__all__ = [
    "apply_alignment",
    "composite_spec",
    "kl_alignment",
    "kl_cost_terms",
    "kl_diag",
    "w2_geodesic",
    "wasserstein2_sq",
    "wasserstein_alignment",
]

PyTree = Any


# --------------------------------------------------------------------------- validation


def _unpack(q, name: str) -> tuple[Mapping, Mapping]:
    if hasattr(q, "mu") and hasattr(q, "sigma"):
        mu, sigma = q.mu, q.sigma
    elif isinstance(q, DiagonalGaussian):
        mu, sigma = q.mean, q.std
    elif isinstance(q, (tuple, list)) and len(q) == 2:
        mu, sigma = q
    else:
        raise TypeError(f"{name} must be a DiagonalGaussian or a pair (mu, sigma) of parameter pytrees (or have "
                        ".mu and .sigma), "
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
    ``(None, "P_0")``. Matches the pytree ``{"mu": mu, "sigma": sigma}``. The
    :attr:`~symlib.symmetry.specs.PermutationSpec.blocks` of ``spec`` carry over (the
    copies share the permutations), so a grouped convolution's channels stay in their
    groups.

    Args:
        spec: the permutation spec of one copy of the parameters.
        prefixes: distinct non-empty names of the copies (no leading, trailing or double
            ``/``).

    Returns:
        The composite :class:`~symlib.symmetry.specs.PermutationSpec`.

    Raises:
        TypeError: if ``spec`` is not a ``PermutationSpec`` or ``prefixes`` is one string.
        ValueError: for no prefixes, an invalid prefix, or repeated prefixes.
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
    return PermutationSpec({f"{pre}/{path}": names for pre in prefixes for path, names in spec.axes.items()},
                           blocks=dict(spec.blocks),
                           views={f"{pre}/{path}": view for pre in prefixes for path, view in spec.views.items()},
                           parts={f"{pre}/{path}": cut for pre in prefixes for path, cut in spec.parts.items()})


def apply_alignment(spec: PermutationSpec, perms: Mapping[str, Any], q) -> tuple[PyTree, PyTree]:
    """``P#q``: the same permutations applied to the means and to the standard deviations.

    The network function of every sample is unchanged
    (:func:`symlib.symmetry.specs.apply_permutation`).

    Args:
        spec: the permutation spec of the network.
        perms: permutation name -> index array (e.g. ``result.perms`` of
            :func:`wasserstein_alignment`).
        q: a pair ``(mu, sigma)`` of parameter pytrees, or an object with ``.mu`` and ``.sigma``.

    Returns:
        ``(mu, sigma)`` permuted, in the structure of ``q``'s.

    Raises:
        TypeError: if ``q`` is not a pair of parameter dicts.
    """
    mu, sigma = _unpack(q, "q")
    return apply_permutation(spec, perms, mu), apply_permutation(spec, perms, sigma)


def _permuted(spec: PermutationSpec, perms: Mapping[str, np.ndarray], flat: Mapping) -> dict:
    return apply_permutation(spec, perms, {p: np.asarray(v) for p, v in flat.items()})


# --------------------------------------------------------------------------- divergences


def wasserstein2_sq(q0, q1) -> float:
    """Squared 2-Wasserstein distance between two diagonal Gaussians.

    Args:
        q0: a pair ``(mu, sigma)`` of parameter pytrees (or ``.mu``/``.sigma``), ``sigma >= 0``.
        q1: the same, with the same parameters and shapes.

    Returns:
        ``sum ||mu0 - mu1||^2 + ||sigma0 - sigma1||^2`` over all parameters (float64).

    Raises:
        TypeError: if ``q0`` or ``q1`` is not a pair of parameter dicts.
        ValueError: naming the parameter, if the two differ in parameters or shapes, or
            hold NaN, inf or negative sigma.
    """
    m0, s0, m1, s1, _ = _pair(q0, q1)
    return float(sum(np.sum((m0[p] - m1[p]) ** 2) + np.sum((s0[p] - s1[p]) ** 2) for p in m0))


def kl_diag(p, q) -> float:
    """``KL[p || q]`` between diagonal Gaussians, summed over all parameters.

    With ``p = (m1, s1)`` and ``q = (m0, s0)``:
    ``sum log(s0/s1) + (s1^2 + (m1 - m0)^2) / (2 s0^2) - 1/2``. ``kl_diag(q1, q0)`` is the
    KL that :func:`kl_alignment` minimises.

    Args:
        p: a pair ``(mu, sigma)`` of parameter pytrees (or ``.mu``/``.sigma``), ``sigma > 0``.
        q: the same, with the same parameters and shapes.

    Returns:
        The divergence (float64).

    Raises:
        TypeError: if ``p`` or ``q`` is not a pair of parameter dicts.
        ValueError: naming the parameter, if the two differ in parameters or shapes, or
            a sigma is not positive and finite.
    """
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

    Args:
        key: PRNG key (or int seed) of the sweep orders.
        spec: the permutation spec of the network.
        q0: the target, a pair ``(mu, sigma)`` (or an object with ``.mu``/``.sigma``) in
            the network layout, sigma finite and ``>= 0``.
        q1: the posterior to align, the same parameters and shapes.
        max_iter: maximum number of sweeps.
        **matching_kwargs: passed on to :func:`symlib.symmetry.matching.weight_matching`.

    Returns:
        The :class:`~symlib.symmetry.matching.MatchResult`:
        ``apply_alignment(spec, result.perms, q1)`` is ``q1`` aligned to ``q0``;
        ``result.objective`` is J per sweep, and ``result.info`` adds ``"w2_sq"``
        (aligned), ``"w2_sq_identity"`` (unaligned) and ``"cost": "wasserstein"``.

    Raises:
        TypeError: if ``spec`` is not a ``PermutationSpec`` or ``q0``/``q1`` not pairs of dicts.
        ValueError: naming the parameter, for mismatched shapes, NaN, inf or negative
            sigma, or posteriors that do not fit ``spec``.
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

    Args:
        q0: the target, a pair ``(mu, sigma)`` (or ``.mu``/``.sigma``), sigma positive.
        q1: the posterior to align, the same parameters and shapes.
        mean_only: drop the trace term (the appendix's reduced cost).

    Returns:
        ``(A, B)``: dicts ``{"a": ..., "b": ...}`` of float64 numpy pytrees.

    Raises:
        TypeError: if ``q0`` or ``q1`` is not a pair of parameter dicts.
        ValueError: naming the parameter, for mismatched shapes, NaN, inf or a sigma
            that is not positive.
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

    Args:
        key: PRNG key (or int seed) of the sweep orders.
        spec: the permutation spec of the network.
        q0: the target, a pair ``(mu, sigma)`` (or ``.mu``/``.sigma``), every sigma positive.
        q1: the posterior to align, the same parameters and shapes.
        max_iter: maximum number of sweeps.
        mean_only: use the appendix's reduced cost (means only).
        **matching_kwargs: passed on to :func:`symlib.symmetry.matching.weight_matching`.

    Returns:
        The :class:`~symlib.symmetry.matching.MatchResult` (apply with
        :func:`apply_alignment` and the original ``spec``); ``result.info`` adds ``"kl"``
        (``KL[P#q1 || q0]`` at the result, the full KL even when ``mean_only``),
        ``"kl_identity"``, ``"kl_const"`` (``c``) and ``"cost"``.

    Raises:
        TypeError: if ``spec`` is not a ``PermutationSpec`` or ``q0``/``q1`` not pairs of dicts.
        ValueError: naming the parameter, for mismatched shapes, NaN, inf or a sigma that
            is not positive, or posteriors that do not fit ``spec``.
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


# --------------------------------------------------------------------------- geodesic


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
    and in the standard deviations).

    Args:
        q0: the start, a pair ``(mu, sigma)`` (or ``.mu``/``.sigma``), sigma ``>= 0``.
        q1: the end, the same parameters and shapes.
        tau: a number in [0, 1].

    Returns:
        ``(mu, sigma)`` in ``q0``'s structure, numpy, in the leaves' dtypes; ``tau = 0``
        gives (copies of) ``q0`` and ``tau = 1`` gives ``q1`` exactly.

    Raises:
        TypeError: if ``q0`` or ``q1`` is not a pair of parameter dicts.
        ValueError: for ``tau`` outside [0, 1] or not a number, or (naming the parameter)
            mismatched shapes, NaN, inf or negative sigma.
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
