"""Scaling symmetries of ReLU MLPs, the min-mass problem and identifiable networks.

Laurent, Aldea & Franchi, "A Symmetry-Aware Exploration of BNN Posteriors" (ICLR 2024),
Section 3 and Appendix C.7.

**Scaling symmetry.** ReLU is positively homogeneous (``relu(a x) = a relu(x)`` for
``a > 0``), so multiplying hidden unit ``j`` of hidden layer ``l`` by ``lambda > 0`` on its
incoming side (column ``j`` of ``dense_l/kernel`` and ``dense_l/bias[j]``) and dividing its
outgoing side (row ``j`` of ``dense_{l+1}/kernel``) by ``lambda`` leaves the network function
unchanged (:func:`apply_scaling`). Hidden layer ``l`` is the output of ``dense_l``; its units
live on the axes that the permutation ``"P_l"`` of
:func:`symlib.symmetry.specs.mlp_permutation_spec` acts on, and that spec is what this module reads.

**Min-mass problem** (Definition C.6). The *mass* of a network is the sum of its squared
kernel weights, biases excluded (:func:`mass`). With log-scales ``u_l = log(lambda_l)``
(``u`` of the input and output layers fixed at 0), the mass of the rescaled network is

    M(u) = sum_l sum_{i,j} K_l[i, j]^2 exp(2 (u_l[j] - u_{l-1}[i])),

strictly convex in ``u`` when no neuron is degenerate (Proposition 7), so it has a unique
minimiser. :func:`min_mass` finds it by a few sweeps of exact block-coordinate descent
(units of one layer do not interact, and the optimum of one unit given its neighbours is
``u_l[j] = log(B_j / A_j) / 4`` with ``A_j = sum_i K_l[i,j]^2 exp(-2 u_{l-1}[i])`` and
``B_j = sum_k K_{l+1}[j,k]^2 exp(2 u_{l+1}[k])``), switching to damped Newton steps
when BCD slows down. The Hessian is
a grounded weighted graph Laplacian, block-tridiagonal across layers; each Newton system is
solved exactly by block Cholesky elimination (cost ``sum_l width_l^3``).

A neuron is *degenerate* when all its incoming kernel weights or all its outgoing kernel
weights are zero: the mass can then be decreased forever by pushing its scale to 0 or
infinity, and there is no minimiser. Exactly these neurons break the problem (when none is
degenerate, every unit is linked to the input and to the output by non-zero weights, which
makes ``M`` coercive and its Hessian positive definite). :func:`min_mass` and
:func:`unit_norm` raise ``ValueError`` naming the layers and neuron indices; prune such
neurons first (:mod:`symlib.evaluation.pruning`) or perturb them.

**Identifiable network** (Proposition 1): remove the scaling symmetry (min-mass or
unit-norm canonical scales), then the permutation symmetry by sorting each hidden layer's
units by a statistic of their incoming weights (:func:`sort_neurons`;
:func:`identifiable`).

Every function takes one network (no batch axis) as nested dicts of numpy or jax arrays,
computes in float64 numpy and returns leaves of the input's array type and dtype (numpy
stays numpy, jax becomes ``jnp`` arrays). Non-finite weights are rejected with a
``ValueError`` naming the leaf.

**Activation.** Rescaling preserves the function only for positively homogeneous
activations (:data:`HOMOGENEOUS_ACTIVATIONS`). Every operation that rescales or compares
functions takes ``activation="relu"`` (the activation of :mod:`symlib.core.models`) and
raises ``ValueError`` naming any other activation, e.g. ``"tanh"``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from symlib.core.checks import check_finite, mlp_layer_names, positive_float, positive_int
from symlib.core.models import mlp_apply
from symlib.symmetry.permutations import as_generator
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

__all__ = [
    "HOMOGENEOUS_ACTIVATIONS",
    "MinMassResult",
    "apply_scaling",
    "check_function_unchanged",
    "degenerate_neurons",
    "identifiable",
    "mass",
    "min_mass",
    "min_mass_chain",
    "sort_neurons",
    "unit_norm",
]

#: activations with ``act(a * x) == a * act(x)`` for every ``a > 0`` (leaky ReLU with slope 0.01)
HOMOGENEOUS_ACTIVATIONS = ("relu", "leaky_relu", "identity")

#: BCD sweeps of ``method="auto"`` before it hands over to Newton in any case
_AUTO_MAX_SWEEPS = 500
#: observed BCD rate above which ``method="auto"`` switches to Newton
_AUTO_SLOW_RATE = 0.9
#: Armijo sufficient-decrease constant and the smallest step length tried
_ARMIJO_C = 0.25
_ARMIJO_MIN_STEP = 1e-12


# --------------------------------------------------------------------------- helpers


def _check_activation(activation) -> None:
    """Raise ``ValueError`` naming ``activation`` unless it is positively homogeneous."""
    if isinstance(activation, str) and activation in HOMOGENEOUS_ACTIVATIONS:
        return
    label = activation if isinstance(activation, str) else getattr(activation, "__name__", repr(activation))
    raise ValueError(
        f"activation {label!r} is not positively homogeneous: rescaling hidden units changes the function "
        f"(act(a * x) == a * act(x) for every a > 0 holds only for {list(HOMOGENEOUS_ACTIVATIONS)})"
    )


def _layer_names(params: Mapping) -> list[str]:
    """Layer names of one network, after checking the layout and the shapes of its leaves."""
    names = mlp_layer_names(params)
    for n in names:
        k, b = np.shape(params[n]["kernel"]), np.shape(params[n]["bias"])
        if len(k) != 2 or b != (k[1],):
            raise ValueError(
                f"layer {n!r}: kernel must be (d_in, d_out) and bias (d_out,), got {k} and {b} "
                "(one network; no batch axis)"
            )
    for a, b in zip(names[:-1], names[1:]):
        if np.shape(params[a]["kernel"])[1] != np.shape(params[b]["kernel"])[0]:
            raise ValueError(
                f"{a}/kernel has {np.shape(params[a]['kernel'])[1]} outputs but {b}/kernel has "
                f"{np.shape(params[b]['kernel'])[0]} inputs"
            )
    return names


def _as_float64(params: Mapping) -> dict[str, dict[str, np.ndarray]]:
    """One network as float64 numpy leaves, layers in order; checks layout, shapes and finiteness."""
    out = {}
    for n in _layer_names(params):
        out[n] = {}
        for leaf in ("kernel", "bias"):
            x = np.asarray(params[n][leaf], dtype=np.float64)
            check_finite(x, f"{n}/{leaf}")
            out[n][leaf] = x
    return out


def _restore(template: Mapping, values: Mapping) -> dict:
    """``values`` (float64 numpy) cast back to the array type and dtype of ``template``."""
    out = {}
    for n, layer in values.items():
        out[n] = {}
        for leaf, x in layer.items():
            ref = template[n][leaf]
            dtype = getattr(ref, "dtype", None)
            if dtype is None or not np.issubdtype(np.dtype(dtype), np.floating):
                dtype = np.float64
            if isinstance(ref, np.ndarray) or np.isscalar(ref) or isinstance(ref, (list, tuple)):
                out[n][leaf] = np.asarray(x, dtype=dtype)
            else:
                out[n][leaf] = jnp.asarray(x, dtype=dtype)
    return out


def _scaled(p64: Mapping, log_scales: Sequence[np.ndarray]) -> dict:
    """Apply scales ``exp(log_scales)`` to float64 params (no checks)."""
    names = list(p64)
    out = {n: {"kernel": p64[n]["kernel"].copy(), "bias": p64[n]["bias"].copy()} for n in names}
    spec = mlp_permutation_spec(len(names) - 1)
    axes = spec.perm_to_axes
    for l, u in enumerate(log_scales):
        lam = np.exp(u)
        for path, axis in axes[f"P_{l}"]:
            layer, leaf = path.split("/")
            x = out[layer][leaf]
            shape = [1] * x.ndim
            shape[axis] = -1
            incoming = layer == f"dense_{l}"  # dense_l is the layer producing the units of P_l
            out[layer][leaf] = x * lam.reshape(shape) if incoming else x / lam.reshape(shape)
    return out


def _hidden_widths(p64: Mapping) -> list[int]:
    """Number of units of every hidden layer (the outputs of all layers but the last)."""
    return [p64[n]["kernel"].shape[1] for n in list(p64)[:-1]]


def _checked_log_scales(scales: Sequence, widths: Sequence[int]) -> list[np.ndarray]:
    """``log(scales)`` after checking one positive finite array of the right width per hidden layer."""
    if isinstance(scales, (np.ndarray, str)) or not isinstance(scales, Sequence):
        raise ValueError(
            f"scales must be a list with one array per hidden layer ({len(widths)}), got {type(scales).__name__}"
        )
    if len(scales) != len(widths):
        raise ValueError(f"scales must hold one array per hidden layer: expected {len(widths)}, got {len(scales)}")
    logs = []
    for l, (s, w) in enumerate(zip(scales, widths)):
        s = np.asarray(s, dtype=np.float64)
        if s.shape != (w,):
            raise ValueError(f"scales[{l}] (hidden layer {l}, output of dense_{l}) must have shape ({w},), got {s.shape}")
        check_finite(s, f"scales[{l}] (hidden layer {l})")
        if np.any(s <= 0):
            bad = np.flatnonzero(s <= 0)
            raise ValueError(
                f"scales[{l}] (hidden layer {l}) must be positive; non-positive at neuron(s) {bad[:10].tolist()}"
            )
        logs.append(np.log(s))
    return logs


# --------------------------------------------------------------------------- scaling


def apply_scaling(params: Mapping, scales: Sequence, activation: str = "relu") -> dict:
    """Rescale the hidden units of an MLP by positive ``scales`` (function unchanged).

    Unit ``j`` of hidden layer ``l``: column ``j`` of ``dense_l/kernel`` and
    ``dense_l/bias[j]`` are multiplied by ``scales[l][j]``, row ``j`` of
    ``dense_{l+1}/kernel`` is divided by it. The axes come from the ``"P_l"`` entry of
    :func:`symlib.symmetry.specs.mlp_permutation_spec`'s ``perm_to_axes``.

    Args:
        params: one network (``dense_0 .. dense_{L-1}``, each ``kernel`` and ``bias``).
        scales: one positive array per hidden layer (``len(params) - 1`` of them, the
            ``l``-th of shape ``(width_l,)``).
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`.

    Returns:
        The rescaled network, leaves of the input's array type and dtype.

    Raises:
        ValueError: for a non-homogeneous ``activation``, non-finite weights, a wrong
            number of scale arrays, a wrong shape, or non-positive / non-finite scales
            (naming the layer).
    """
    _check_activation(activation)
    p64 = _as_float64(params)
    return _restore(params, _scaled(p64, _checked_log_scales(scales, _hidden_widths(p64))))


def mass(params: Mapping) -> float:
    """Mass of a network, the sum of its squared kernel weights (Definition C.6).

    Args:
        params: one network; biases do not enter the mass.

    Returns:
        The mass, computed in float64.

    Raises:
        ValueError: if the layout or the shapes of ``params`` are wrong.
    """
    names = _layer_names(params)
    return float(sum(np.sum(np.square(np.asarray(params[n]["kernel"], dtype=np.float64))) for n in names))


def degenerate_neurons(params: Mapping) -> dict[int, np.ndarray]:
    """Hidden units whose incoming or outgoing kernel weights are all zero.

    Args:
        params: one network.

    Returns:
        Hidden layer index -> indices of its degenerate units (only layers that have some).

    Raises:
        ValueError: if the layout or the shapes of ``params`` are wrong.
    """
    names = _layer_names(params)
    out = {}
    for l in range(len(names) - 1):
        k_in = np.asarray(params[names[l]]["kernel"])
        k_out = np.asarray(params[names[l + 1]]["kernel"])
        bad = np.flatnonzero(~np.any(k_in != 0, axis=0) | ~np.any(k_out != 0, axis=1))
        if bad.size:
            out[l] = bad
    return out


def _raise_if_degenerate(params: Mapping, what: str) -> None:
    bad = degenerate_neurons(params)
    if bad:
        listing = "; ".join(
            f"hidden layer {l} (dense_{l} -> dense_{l + 1}): neuron(s) {idx[:20].tolist()}"
            + (f" and {idx.size - 20} more" if idx.size > 20 else "")
            for l, idx in bad.items()
        )
        raise ValueError(
            f"{what} is undefined for degenerate neurons (all incoming or all outgoing kernel weights zero; "
            f"their scale would run off to 0 or infinity): {listing}. Prune or perturb them first."
        )


# --------------------------------------------------------------------------- min-mass


@dataclass(frozen=True)
class MinMassResult:
    """Output of :func:`min_mass`.

    Attributes:
        params: the min-mass network (same structure and array types as the input).
        scales: one array per hidden layer, such that ``apply_scaling(input, scales)`` is
            ``params``.
        log_scales: ``log(scales)``, one array per hidden layer.
        mass: the mass after rescaling.
        mass_before: the mass of the input.
        iterations: block-coordinate sweeps plus Newton steps.
        converged: whether the stopping rule of the method was met (relative to ``tol``).
    """

    params: dict
    scales: list
    log_scales: list
    mass: float
    mass_before: float
    iterations: int
    converged: bool


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
    squared Newton decrement is within ``tol * f`` (that step is still taken) or when a
    step no longer lowers the mass."""
    for k in range(max_steps):
        E = mass_terms(W, u)
        f = float(sum(e.sum() for e in E))
        step, dec = _newton_direction(E)
        if not np.isfinite(dec):
            return u, k + 1, False
        u, f_cand = _armijo_step(W, u, step, f, dec)
        if 0.5 * dec <= tol * f or f_cand >= f:
            return u, k + 1, 0.5 * dec <= tol * f or (f - f_cand) <= tol * f
    return u, max_steps, False


# ------------------------------------------------- min_mass


_MIN_MASS_METHODS = ("auto", "bcd", "newton")


def _min_mass_result(params, p64, u, before: float, iterations: int, converged: bool) -> MinMassResult:
    """The :class:`MinMassResult` of log-scales ``u`` found for ``params`` (float64 copy ``p64``)."""
    final = _scaled(p64, u)
    return MinMassResult(
        params=_restore(params, final),
        scales=[np.exp(ul) for ul in u],
        log_scales=[ul.copy() for ul in u],
        mass=mass(final),
        mass_before=before,
        iterations=iterations,
        converged=bool(converged),
    )


def min_mass(
    params: Mapping,
    tol: float = 1e-10,
    max_iter: int = 10_000,
    method: str = "auto",
    activation: str = "relu",
) -> MinMassResult:
    """Exact solution of the min-mass problem (Definition C.6).

    Minimises the mass ``M(u)`` (see the module docstring) over the log-scales ``u`` of
    the hidden units, to ``M(u) - min M <= tol * M(u)`` (estimated), by

    * ``"bcd"``: exact block-coordinate descent, sweeping even then odd hidden layers,
      each unit set to its closed-form conditional optimum. Linear convergence; a sweep
      costs about two passes over the kernels. Stops once the last decrease ``D_k`` and
      the observed rate ``r = D_k / D_{k-1} < 1`` give ``D_k * r / (1 - r) <= tol * M``
      (and ``D_k <= tol * M``), or after ``max_iter`` sweeps.
    * ``"newton"``: damped Newton from ``u = 0``: block-tridiagonal Hessian solved
      exactly by block Cholesky (cost ``sum_l width_l^3`` per step), Armijo
      backtracking; stops when half the squared Newton decrement is ``<= tol * M``
      (that step is still taken: quadratic convergence puts the result at machine
      precision), or after ``max_iter`` steps.
    * ``"auto"`` (default): BCD while it converges fast (rate below 0.9; for He-init
      784-512x3-10 it takes about 20 sweeps, ~20 ms), Newton from there when BCD slows
      down (ill-conditioned, e.g. trained, networks) or after 500 sweeps.

    The tolerance is on the mass; near the optimum the mass gap is quadratic in the
    log-scale error, so BCD's log-scales are accurate to about ``sqrt(tol)`` (1e-5 to
    1e-6 at the default), Newton's to machine precision. Use ``method="newton"`` (or a
    smaller ``tol``) when the canonical weights must match to more digits. Biases are
    rescaled with the incoming side (``bias_j * lambda_j``) but do not enter the mass.

    Args:
        params: one network. A network without hidden layers is returned as is.
        tol: relative tolerance on the mass (positive).
        max_iter: most BCD sweeps, and most Newton steps (positive integer).
        method: ``"auto"``, ``"bcd"`` or ``"newton"``.
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`.

    Returns:
        A :class:`MinMassResult`; its ``iterations`` counts BCD sweeps plus Newton steps.

    Raises:
        ValueError: if a neuron is degenerate (no minimiser; see
            :func:`degenerate_neurons`), for non-finite weights, a non-homogeneous
            ``activation``, an unknown ``method`` or a non-positive ``tol`` / ``max_iter``.
    """
    _check_activation(activation)
    tol = positive_float(tol, "tol")
    max_iter = positive_int(max_iter, "max_iter")
    if method not in _MIN_MASS_METHODS:
        raise ValueError(f"method must be 'auto', 'bcd' or 'newton', got {method!r}")
    p64 = _as_float64(params)
    before = mass(p64)
    if len(p64) == 1:
        return MinMassResult(_restore(params, p64), [], [], before, before, 0, True)
    _raise_if_degenerate(p64, "the min-mass problem")
    u, iterations, converged = min_mass_chain([np.square(layer["kernel"]) for layer in p64.values()], tol, max_iter,
                                              method)
    return _min_mass_result(params, p64, u, before, iterations, converged)


def min_mass_chain(squares: Sequence[np.ndarray], tol: float = 1e-10, max_iter: int = 10_000,
                   method: str = "auto") -> tuple[list[np.ndarray], int, bool]:
    """The min-mass log-scales of a chain of kernels (the solver of :func:`min_mass`).

    A chain: kernel ``l`` (squared, ``squares[l]``, shape ``(d_l, d_{l+1})``) has its
    columns scaled by the units of hidden layer ``l`` and its rows by those of layer
    ``l - 1``; the mass is ``sum_l sum(squares[l] * exp(2 (u_l[None, :] - u_{l-1}[:, None])))``.
    Any :class:`~symlib.symmetry.channel_scaling.ScalingSpec` of this shape (an MLP's,
    whatever its parameter names) is solved with it by
    :func:`~symlib.symmetry.channel_scaling.min_mass_spec`.

    Args:
        squares: the squared kernels, input to output (float64, no degenerate unit: see
            :func:`degenerate_neurons`).
        tol: relative tolerance on the mass (positive).
        max_iter: most BCD sweeps, and most Newton steps.
        method: ``"auto"``, ``"bcd"`` or ``"newton"`` (as in :func:`min_mass`).

    Returns:
        ``(log_scales, iterations, converged)``: one array per hidden layer, BCD sweeps
        plus Newton steps, and whether the stopping rule was met.
    """
    tol = positive_float(tol, "tol")
    max_iter = positive_int(max_iter, "max_iter")
    if method not in _MIN_MASS_METHODS:
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


# --------------------------------------------------------------------------- canonical forms


def unit_norm(params: Mapping, include_bias: bool = False, activation: str = "relu") -> dict:
    """Canonical scaling: every hidden unit's incoming weight vector gets unit L2 norm.

    Layer by layer from the input: hidden layer ``l``'s scales are applied first to the
    rows of ``dense_l/kernel`` (the previous layer's scales), then each unit ``j`` is
    divided by the norm of its incoming vector, column ``j`` of ``dense_l/kernel``
    (plus ``dense_l/bias[j]`` if ``include_bias``); the factor moves to row ``j`` of
    ``dense_{l+1}/kernel``. The output layer absorbs all scales, so the function is
    unchanged, and the result does not depend on any prior positive rescaling.

    Args:
        params: one network.
        include_bias: normalise the kernel column and the bias together; ``False``
            (default) normalises the kernel column only, matching the mass of
            Definition C.6 which excludes biases.
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`.

    Returns:
        The unit-norm network, leaves of the input's array type and dtype.

    Raises:
        ValueError: naming the layer and neurons whose incoming vector is zero (zero
            outgoing weights are harmless here), for non-finite weights or a
            non-homogeneous ``activation``.
    """
    _check_activation(activation)
    p64 = _as_float64(params)
    names = list(p64)
    cur = {n: dict(p64[n]) for n in names}
    for l in range(len(names) - 1):
        k, b = cur[names[l]]["kernel"], cur[names[l]]["bias"]
        sq = np.sum(k**2, axis=0) + (b**2 if include_bias else 0.0)
        bad = np.flatnonzero(sq == 0)
        if bad.size:
            raise ValueError(
                f"unit_norm: hidden layer {l} (output of dense_{l}) has neuron(s) {bad[:20].tolist()} with a zero "
                f"incoming {'kernel column and bias' if include_bias else 'kernel column'}; they cannot be normalised"
            )
        norm = np.sqrt(sq)
        cur[names[l]] = {"kernel": k / norm, "bias": b / norm}
        cur[names[l + 1]] = {"kernel": cur[names[l + 1]]["kernel"] * norm[:, None], "bias": cur[names[l + 1]]["bias"]}
    return _restore(params, cur)


_STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "max": lambda k: k.max(axis=0),
    "min": lambda k: k.min(axis=0),
    "mean": lambda k: k.mean(axis=0),
    "sum": lambda k: k.sum(axis=0),
    "norm": lambda k: np.sqrt(np.sum(k**2, axis=0)),
    "abs_max": lambda k: np.abs(k).max(axis=0),
}


def _statistic_fn(statistic: str | Callable) -> Callable[[np.ndarray], np.ndarray]:
    """The function behind a statistic's name, or the callable itself."""
    if isinstance(statistic, str):
        if statistic not in _STATISTICS:
            raise ValueError(f"unknown statistic {statistic!r}; choose one of {sorted(_STATISTICS)} or pass a callable")
        return _STATISTICS[statistic]
    if callable(statistic):
        return statistic
    raise TypeError(f"statistic must be a name or a callable, got {type(statistic).__name__}")


def _descending_order(k: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Units in descending order of ``s``; ties broken by the incoming column ``k[:, j]``
    (lexicographically, descending), then by ``b``, then by the index."""
    # np.lexsort: last key is primary. Descending => sort negated values.
    keys = [np.arange(k.shape[1]), -b] + [-k[i] for i in range(k.shape[0] - 1, -1, -1)] + [-s]
    return np.lexsort(keys).astype(np.int64)


def sort_neurons(params: Mapping, statistic: str | Callable = "max") -> tuple[dict, dict[str, np.ndarray]]:
    """Permutation canonical form: sort every hidden layer's units by a statistic of their incoming weights.

    Units are put in *descending* order of ``statistic`` of their incoming kernel column
    (``dense_l/kernel[:, j]``, biases not used). Layers are processed from the input, so
    the incoming columns are read after the previous layer has been sorted. Ties in the
    statistic are broken deterministically by the incoming column itself
    (lexicographically, descending, in the already-sorted row order), then by the bias,
    then by the original index (only units with identical incoming weights and bias are
    left in their original order). Only permutes, never rescales: valid for any
    element-wise activation, so there is no ``activation`` argument.

    Args:
        params: one network.
        statistic: ``"max"`` (default), the maximum incoming weight, which the paper
            found the most stable statistic during training (Section 5.2); or ``"min"``,
            ``"mean"``, ``"sum"``, ``"norm"``, ``"abs_max"``; or a callable mapping a
            kernel ``(d_in, d_out)`` to ``(d_out,)`` values that must not depend on the
            order of the kernel's rows.

    Returns:
        ``(sorted_params, perms)`` with ``perms = {"P_l": index array}`` and
        ``sorted_params == apply_permutation(mlp_permutation_spec(L), perms, params)``
        (gather convention: new unit ``i`` is old unit ``perms["P_l"][i]``).

    Raises:
        ValueError: for an unknown statistic name, a statistic of the wrong shape, or
            NaN / inf weights (naming the leaf, e.g. ``dense_1/kernel``).
        TypeError: if ``statistic`` is neither a name nor a callable.
    """
    stat = _statistic_fn(statistic)
    p64 = _as_float64(params)
    names = list(p64)
    H = len(names) - 1
    perms: dict[str, np.ndarray] = {}
    prev = None
    for l in range(H):
        k, b = p64[names[l]]["kernel"], p64[names[l]]["bias"]
        if prev is not None:
            k = k[prev]
        s = np.asarray(stat(k), dtype=np.float64)
        if s.shape != (k.shape[1],):
            raise ValueError(f"statistic returned shape {s.shape} for dense_{l}/kernel, expected ({k.shape[1]},)")
        prev = perms[f"P_{l}"] = _descending_order(k, b, s)
    spec = mlp_permutation_spec(H)
    return apply_permutation(spec, perms, {n: dict(params[n]) for n in names}), perms


_SCALINGS = ("min_mass", "unit_norm", None)


def identifiable(
    params: Mapping,
    scaling: str | None = "min_mass",
    statistic: str | Callable = "max",
    activation: str = "relu",
    **min_mass_kw,
) -> dict:
    """Proposition 1's identifiable network: remove the scaling symmetry, then sort the units.

    The result does not depend on any prior positive rescaling or permutation of the
    hidden units (up to ties in ``statistic``), and computes the same function.

    Args:
        params: one network.
        scaling: ``"min_mass"`` (default: :func:`min_mass`, the min-mass representative
            of the scaling orbit), ``"unit_norm"`` (:func:`unit_norm`, the paper's
            "unit-normed neurons"), or ``None`` (permutations only).
        statistic: the sorting statistic of :func:`sort_neurons`.
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`
            (checked only when ``scaling`` is not ``None``: sorting alone is valid for
            any activation).
        **min_mass_kw: passed to :func:`min_mass` (``tol``, ``max_iter``, ``method``).

    Returns:
        The identifiable network, leaves of the input's array type and dtype.

    Raises:
        ValueError: for an unknown ``scaling``, a non-homogeneous ``activation`` with a
            scaling, and the errors of :func:`min_mass` / :func:`unit_norm` /
            :func:`sort_neurons`.
    """
    if scaling not in _SCALINGS:
        raise ValueError(f"scaling must be 'min_mass', 'unit_norm' or None, got {scaling!r}")
    if scaling == "min_mass":
        params = min_mass(params, activation=activation, **min_mass_kw).params
    elif scaling == "unit_norm":
        params = unit_norm(params, activation=activation)
    return sort_neurons(params, statistic)[0]


# --------------------------------------------------------------------------- function check


def _x64():
    """Context in which JAX computes in float64 (``jax.enable_x64`` from JAX 0.8 on,
    ``jax.experimental.enable_x64`` before)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # JAX < 0.8

    return enable_x64(True)


_mlp_apply_jit = jax.jit(mlp_apply)

#: hidden activations other than ReLU; :mod:`symlib.core.models` has ReLU MLPs only
_OTHER_ACTIVATIONS = {
    "leaky_relu": jax.nn.leaky_relu,  # negative slope 0.01
    "identity": lambda h: h,
}


def _apply_other_activation(p64: Mapping, x, act: Callable):
    """Logits of an MLP whose hidden activation is ``act`` (not ReLU): same layers as
    :func:`symlib.core.models.mlp_apply`."""
    names = list(p64)
    h = x
    for n in names[:-1]:
        h = act(h @ p64[n]["kernel"] + p64[n]["bias"])
    return h @ p64[names[-1]]["kernel"] + p64[names[-1]]["bias"]


def _forward(p64: Mapping, x: np.ndarray, activation: str) -> np.ndarray:
    """Logits of a float64 network on float64 inputs, computed by JAX in float64.

    ReLU networks go through the model's own :func:`symlib.core.models.mlp_apply`.
    JAX computes in float32 unless 64-bit mode is on (it is off by default), and float32
    round-off (about 1e-7 relative) would hide or fake the differences that
    :func:`check_function_unchanged` measures, so the network is evaluated inside
    :func:`jax.enable_x64`.
    """
    with _x64():
        if activation == "relu":
            out = _mlp_apply_jit(p64, x)
        else:
            out = _apply_other_activation(p64, jnp.asarray(x), _OTHER_ACTIVATIONS[activation])
        return np.asarray(out)


def check_function_unchanged(a: Mapping, b: Mapping, key=0, n: int = 256, activation: str = "relu") -> float:
    """Max absolute logit difference of networks ``a`` and ``b`` on ``n`` standard normal inputs.

    Evaluated in float64 (ReLU networks by :func:`symlib.core.models.mlp_apply` under
    :func:`jax.enable_x64`), so that float32 round-off does not hide or fake differences.

    Args:
        a: one network.
        b: a network of the same layer sizes.
        key: a jax key, an int seed or a numpy Generator, for the inputs.
        n: number of inputs (positive integer).
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`.

    Returns:
        ``max |logits_a - logits_b|`` over the inputs and outputs.

    Raises:
        ValueError: for a non-homogeneous ``activation``, a non-positive ``n``, networks
            of different layer sizes, or non-finite weights (naming the leaf).
    """
    _check_activation(activation)
    n = positive_int(n, "n")
    a64, b64 = _as_float64(a), _as_float64(b)
    shapes_a = [np.shape(layer["kernel"]) for layer in a64.values()]
    shapes_b = [np.shape(layer["kernel"]) for layer in b64.values()]
    if shapes_a != shapes_b:
        raise ValueError(f"networks a and b must have the same layer shapes, got kernels {shapes_a} and {shapes_b}")
    x = as_generator(key).normal(size=(n, shapes_a[0][0]))
    return float(np.max(np.abs(_forward(a64, x, activation) - _forward(b64, x, activation))))
