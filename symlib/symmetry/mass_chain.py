"""The min-mass problem of a chain of kernels (an MLP's, or any chain spec's): exact
block-coordinate descent and damped Newton on the block-tridiagonal Hessian.

The chain solver behind :func:`symlib.symmetry.scaling.min_mass`; the mathematics is in the docstring
of :mod:`symlib.symmetry.scaling`. Works on the squared kernels ``W_l = K_l ** 2`` (float64)
and the log-scales ``u_l`` of the hidden units, one array per hidden layer.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

from symlib.core.checks import positive_float, positive_int

#: the methods of :func:`min_mass_chain` (and of :func:`symlib.symmetry.scaling.min_mass`)
MIN_MASS_METHODS = ("auto", "bcd", "newton")
#: BCD sweeps of ``method="auto"`` before it hands over to Newton in any case
_AUTO_MAX_SWEEPS = 500
#: observed BCD rate above which ``method="auto"`` switches to Newton
_AUTO_SLOW_RATE = 0.9
#: Armijo sufficient-decrease constant and the smallest step length tried
_ARMIJO_C = 0.25
_ARMIJO_MIN_STEP = 1e-12
#: a Newton step whose line search finds no lower mass ends the run as converged only if its
#: predicted decrease (half the squared decrement) is below this fraction of the mass, about
#: what float64 sums of many terms can still resolve; a larger one means the solver is stuck
_STALL_RTOL = 1e-12


def mass_terms(W: Sequence[np.ndarray], u: Sequence[np.ndarray]) -> list[np.ndarray]:
    """E_l[i, j] = W_l[i, j] exp(2 (u_l[j] - u_{l-1}[i])) with u of input/output = 0."""
    L = len(W)
    E = []
    for l in range(L):
        e = W[l]
        if l > 0:
            e = e * np.exp(-2.0 * u[l - 1])[:, None]
        if l < L - 1:
            e = e * np.exp(2.0 * u[l])[None, :]
        E.append(e)
    return E


def _objective(W, u) -> float:
    """The mass ``M(u)`` of the network rescaled by ``exp(u)`` (``W``: squared kernels)."""
    return float(sum(e.sum() for e in mass_terms(W, u)))


def mass_gradient(E: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Gradient of ``M`` in the log-scales, per hidden layer: ``2 (incoming - outgoing mass)``."""
    return [2.0 * (E[l].sum(axis=0) - E[l + 1].sum(axis=1)) for l in range(len(E) - 1)]


# ------------------------------------------------- block-coordinate descent


def _bcd_sweep(W, u) -> None:
    """One exact block-coordinate sweep (even hidden layers, then odd), in place."""
    H = len(u)
    for parity in (0, 1):
        for l in range(parity, H, 2):
            a = W[l].sum(axis=0) if l == 0 else np.exp(-2.0 * u[l - 1]) @ W[l]
            b = W[l + 1].sum(axis=1) if l == H - 1 else W[l + 1] @ np.exp(2.0 * u[l + 1])
            u[l] = 0.25 * (np.log(b) - np.log(a))


def _observed_rate(dec: float, prev_dec: float | None) -> float | None:
    """Ratio of the last two mass decreases (``None`` before there are two)."""
    return dec / prev_dec if prev_dec not in (None, 0.0) else None


def _bcd_done(dec: float, rate: float | None, f: float, tol: float) -> bool:
    """Stop BCD: no decrease, or the geometric tail ``dec * rate / (1 - rate)`` and the
    last decrease are both within ``tol * f``."""
    if dec <= 0.0:
        return True
    return rate is not None and rate < 1.0 and dec <= tol * f and dec * rate <= tol * f * (1.0 - rate)


def _bcd_too_slow(rate: float | None, sweep: int) -> bool:
    """``method="auto"`` hands over to Newton once BCD's rate exceeds ``_AUTO_SLOW_RATE``
    (judged from the fourth sweep on)."""
    return rate is not None and sweep >= 3 and rate > _AUTO_SLOW_RATE


def _run_bcd(W, u, f: float, tol: float, max_sweeps: int, switch_when_slow: bool) -> tuple[int, bool]:
    """BCD sweeps on ``u`` (in place) from mass ``f``; returns ``(sweeps, converged)``."""
    prev_dec = None
    for k in range(max_sweeps):
        _bcd_sweep(W, u)
        f_new = _objective(W, u)
        dec = f - f_new
        f = f_new
        rate = _observed_rate(dec, prev_dec)
        if _bcd_done(dec, rate, f, tol):
            return k + 1, dec <= tol * f
        if switch_when_slow and _bcd_too_slow(rate, k):
            return k + 1, False
        prev_dec = dec
    return max_sweeps, False


# ------------------------------------------------- Newton


def _block_forward_elimination(E, diagonals, rhs) -> tuple[list, list[np.ndarray]]:
    """Block Cholesky elimination of ``H x = rhs``, ``H`` block-tridiagonal with diagonal
    blocks ``diag(diagonals[l])`` and off-diagonal blocks ``H[l-1, l] = -4 E_l``.

    Returns the Cholesky factors of the Schur complements and the eliminated right-hand sides.
    """
    chol, y = [], []
    for l, d in enumerate(diagonals):
        S = np.diag(d)
        r = rhs[l]
        if l > 0:
            U = -4.0 * E[l]  # H[l-1, l]
            Z = scipy.linalg.cho_solve(chol[-1], U)  # S_{l-1}^{-1} U
            S = S - U.T @ Z
            r = r - U.T @ y[-1]
        c = scipy.linalg.cho_factor(S, lower=True, check_finite=False)
        chol.append(c)
        y.append(scipy.linalg.cho_solve(c, r, check_finite=False))
    return chol, y


def _block_back_substitution(E, chol, y) -> list[np.ndarray]:
    """Solution of the block-tridiagonal system from :func:`_block_forward_elimination`'s output."""
    H = len(y)
    x = [None] * H
    x[H - 1] = y[H - 1]
    for l in range(H - 2, -1, -1):
        U = -4.0 * E[l + 1]
        x[l] = y[l] - scipy.linalg.cho_solve(chol[l], U @ x[l + 1], check_finite=False)
    return x


def _newton_direction(E: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """Newton step ``-H^{-1} g`` (per hidden layer) and the squared Newton decrement ``g' H^{-1} g``.

    Hidden layer ``l`` couples only to ``l - 1`` and ``l + 1``: ``H`` is block-tridiagonal
    with diagonal blocks ``diag(4 colsum E_l + 4 rowsum E_{l+1})`` and off-diagonal blocks
    ``H[l, l+1] = -4 E_{l+1}``. Solved by block Cholesky elimination (forward), then back
    substitution.
    """
    g = mass_gradient(E)
    d = [4.0 * (E[l].sum(axis=0) + E[l + 1].sum(axis=1)) for l in range(len(g))]
    chol, y = _block_forward_elimination(E, d, [-gl for gl in g])
    step = _block_back_substitution(E, chol, y)
    decrement = float(-sum(gl @ sl for gl, sl in zip(g, step)))
    return step, decrement


def _armijo_step(W, u, step, f: float, dec: float) -> tuple[list[np.ndarray], float]:
    """Backtracking along ``step`` from ``u`` (mass ``f``, directional derivative ``-dec``)
    until the Armijo condition holds; ``(u, f)`` unchanged if the step shrinks to nothing."""
    t = 1.0
    while True:
        cand = [ul + t * sl for ul, sl in zip(u, step)]
        f_cand = _objective(W, cand)
        if np.isfinite(f_cand) and f_cand <= f - _ARMIJO_C * t * dec:
            return cand, f_cand
        t *= 0.5
        if t < _ARMIJO_MIN_STEP:
            return u, f


def _run_newton(W, u, tol: float, max_steps: int) -> tuple[list[np.ndarray], int, bool]:
    """Damped Newton steps from ``u``; returns ``(u, steps, converged)``. Stops when half the
    squared Newton decrement is within ``tol * f`` (that step is still taken), converged, or
    when the line search finds no lower mass: converged if the predicted decrease is below
    what float64 resolves (``_STALL_RTOL``), else not (a stuck solver is never reported
    as converged)."""
    for k in range(max_steps):
        E = mass_terms(W, u)
        f = float(sum(e.sum() for e in E))
        step, dec = _newton_direction(E)
        if not np.isfinite(dec):
            return u, k + 1, False
        u, f_cand = _armijo_step(W, u, step, f, dec)
        if 0.5 * dec <= tol * f:
            return u, k + 1, True
        if f_cand >= f:
            return u, k + 1, 0.5 * dec <= _STALL_RTOL * f
    return u, max_steps, False


def min_mass_chain(squares: Sequence[np.ndarray], tol: float = 1e-10, max_iter: int = 10_000,
                   method: str = "auto") -> tuple[list[np.ndarray], int, bool]:
    """The min-mass log-scales of a chain of kernels (the solver of :func:`symlib.symmetry.scaling.min_mass`).

    A chain: kernel ``l`` (squared, ``squares[l]``, shape ``(d_l, d_{l+1})``) has its
    columns scaled by the units of hidden layer ``l`` and its rows by those of layer
    ``l - 1``; the mass is ``sum_l sum(squares[l] * exp(2 (u_l[None, :] - u_{l-1}[:, None])))``.
    Any :class:`~symlib.symmetry.scaling.ScalingSpec` of this shape (an MLP's,
    whatever its parameter names) is solved with it by
    :func:`~symlib.symmetry.scaling.min_mass`.

    Args:
        squares: the squared kernels, input to output (float64, no degenerate unit: see
            :func:`symlib.symmetry.scaling.degenerate_neurons`).
        tol: relative tolerance on the mass (positive).
        max_iter: most BCD sweeps, and most Newton steps.
        method: ``"auto"``, ``"bcd"`` or ``"newton"`` (as in :func:`symlib.symmetry.scaling.min_mass`).

    Returns:
        ``(log_scales, iterations, converged)``: one array per hidden layer, BCD sweeps
        plus Newton steps, and whether the stopping rule was met.
    """
    tol = positive_float(tol, "tol")
    max_iter = positive_int(max_iter, "max_iter")
    if method not in MIN_MASS_METHODS:
        raise ValueError(f"method must be 'auto', 'bcd' or 'newton', got {method!r}")
    W = [np.asarray(w, np.float64) for w in squares]
    for a, b in zip(W[:-1], W[1:]):
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
            raise ValueError(f"squares must be a chain of 2-D kernels, got shapes {[w.shape for w in W]}")
    u = [np.zeros(w.shape[1]) for w in W[:-1]]
    if not u:
        return [], 0, True
    before = float(sum(np.sum(w) for w in W))
    iterations, converged = 0, False
    if method != "newton":
        max_sweeps = max_iter if method == "bcd" else min(max_iter, _AUTO_MAX_SWEEPS)
        iterations, converged = _run_bcd(W, u, before, tol, max_sweeps, switch_when_slow=method == "auto")
    if not converged and method != "bcd":
        u, steps, converged = _run_newton(W, u, tol, max_iter)
        iterations += steps
    return u, iterations, converged
