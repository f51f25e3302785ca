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
stays numpy, jax becomes ``jnp`` arrays).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

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
    "sort_neurons",
    "unit_norm",
]

HOMOGENEOUS_ACTIVATIONS = ("relu", "leaky_relu", "identity")


# --------------------------------------------------------------------------- helpers


def _check_activation(activation: str) -> None:
    if activation not in HOMOGENEOUS_ACTIVATIONS:
        raise ValueError(
            f"activation {activation!r} is not positively homogeneous: scaling invariance needs "
            f"act(a * x) == a * act(x) for every a > 0, which holds only for {list(HOMOGENEOUS_ACTIVATIONS)}"
        )


def _layer_names(params: Mapping) -> list[str]:
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict of layers, got {type(params).__name__}")
    try:
        names = sorted(params, key=lambda n: int(str(n).rsplit("_", 1)[-1]))
    except ValueError:
        names = None
    expected = [f"dense_{i}" for i in range(len(params))]
    if names != expected or not names:
        raise ValueError(f"MLP params must have layers dense_0..dense_{len(params) - 1}, got {sorted(map(str, params))}")
    for n in names:
        layer = params[n]
        if not isinstance(layer, Mapping) or set(layer) != {"kernel", "bias"}:
            raise ValueError(f"layer {n!r} must hold exactly 'kernel' and 'bias'")
        k, b = np.shape(layer["kernel"]), np.shape(layer["bias"])
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
    out = {}
    for n in _layer_names(params):
        out[n] = {}
        for leaf in ("kernel", "bias"):
            x = np.asarray(params[n][leaf], dtype=np.float64)
            if not np.all(np.isfinite(x)):
                raise ValueError(f"{n}/{leaf} holds non-finite values")
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
                import jax.numpy as jnp

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


# --------------------------------------------------------------------------- scaling


def apply_scaling(params: Mapping, scales: Sequence, activation: str = "relu") -> dict:
    """Rescale the hidden units of a ReLU MLP by positive ``scales`` (function unchanged).

    ``scales`` holds one positive array per hidden layer (``len(params) - 1`` of them, the
    ``l``-th of shape ``(width_l,)``). Unit ``j`` of hidden layer ``l``: column ``j`` of
    ``dense_l/kernel`` and ``dense_l/bias[j]`` are multiplied by ``scales[l][j]``, row ``j``
    of ``dense_{l+1}/kernel`` is divided by it. The axes come from the ``"P_l"`` entry of
    :func:`symlib.symmetry.specs.mlp_permutation_spec`'s ``perm_to_axes``.

    Raises ``ValueError`` for a non-homogeneous ``activation`` (anything but ``"relu"``,
    ``"leaky_relu"``, ``"identity"``), a wrong number of scale arrays, a wrong shape, or
    non-positive / non-finite scales (naming the layer).
    """
    _check_activation(activation)
    p64 = _as_float64(params)
    names = list(p64)
    widths = [p64[n]["kernel"].shape[1] for n in names[:-1]]
    if isinstance(scales, (np.ndarray, str)) or not isinstance(scales, Sequence):
        raise ValueError(f"scales must be a list with one array per hidden layer ({len(widths)}), got {type(scales).__name__}")
    if len(scales) != len(widths):
        raise ValueError(f"scales must hold one array per hidden layer: expected {len(widths)}, got {len(scales)}")
    logs = []
    for l, (s, w) in enumerate(zip(scales, widths)):
        s = np.asarray(s, dtype=np.float64)
        if s.shape != (w,):
            raise ValueError(f"scales[{l}] (hidden layer {l}, output of dense_{l}) must have shape ({w},), got {s.shape}")
        if not np.all(np.isfinite(s)):
            raise ValueError(f"scales[{l}] (hidden layer {l}) holds non-finite values")
        if np.any(s <= 0):
            bad = np.flatnonzero(s <= 0)
            raise ValueError(
                f"scales[{l}] (hidden layer {l}) must be positive; non-positive at neuron(s) {bad[:10].tolist()}"
            )
        logs.append(np.log(s))
    return _restore(params, _scaled(p64, logs))


def mass(params: Mapping) -> float:
    """Sum of squared kernel weights (biases excluded, as in Definition C.6)."""
    names = _layer_names(params)
    return float(sum(np.sum(np.square(np.asarray(params[n]["kernel"], dtype=np.float64))) for n in names))


def degenerate_neurons(params: Mapping) -> dict[int, np.ndarray]:
    """Hidden layer -> indices of its degenerate units (all incoming or all outgoing kernel weights zero)."""
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


@dataclass(frozen=True)
class MinMassResult:
    """Output of :func:`min_mass`.

    ``params``: the min-mass network (same structure and array types as the input);
    ``scales`` / ``log_scales``: one array per hidden layer, such that
    ``apply_scaling(input, scales)`` is ``params``; ``mass`` / ``mass_before``: the mass
    after / before; ``iterations``: block-coordinate sweeps plus Newton steps;
    ``converged``: whether the Newton decrement reached ``tol`` (relative to the mass).
    """

    params: dict
    scales: list
    log_scales: list
    mass: float
    mass_before: float
    iterations: int
    converged: bool


def _mass_terms(W: Sequence[np.ndarray], u: Sequence[np.ndarray]) -> list[np.ndarray]:
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
    return float(sum(e.sum() for e in _mass_terms(W, u)))


def _bcd_sweep(W, u) -> None:
    """One exact block-coordinate sweep (even hidden layers, then odd), in place."""
    H = len(u)
    for parity in (0, 1):
        for l in range(parity, H, 2):
            a = W[l].sum(axis=0) if l == 0 else np.exp(-2.0 * u[l - 1]) @ W[l]
            b = W[l + 1].sum(axis=1) if l == H - 1 else W[l + 1] @ np.exp(2.0 * u[l + 1])
            u[l] = 0.25 * (np.log(b) - np.log(a))


def _newton_direction(E: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """Newton step ``-H^{-1} g`` (per hidden layer) and the squared Newton decrement ``g' H^{-1} g``.

    Hidden layer ``l`` couples only to ``l - 1`` and ``l + 1``: ``H`` is block-tridiagonal
    with diagonal blocks ``diag(4 colsum E_l + 4 rowsum E_{l+1})`` and off-diagonal blocks
    ``H[l, l+1] = -4 E_{l+1}``. Solved by block Cholesky elimination (forward), then back
    substitution.
    """
    H = len(E) - 1
    g = [2.0 * (E[l].sum(axis=0) - E[l + 1].sum(axis=1)) for l in range(H)]
    d = [4.0 * (E[l].sum(axis=0) + E[l + 1].sum(axis=1)) for l in range(H)]
    chol, rhs = [], []
    prev_c = prev_y = None
    for l in range(H):
        S = np.diag(d[l])
        r = -g[l]
        if l > 0:
            U = -4.0 * E[l]  # H[l-1, l]
            Z = scipy.linalg.cho_solve(prev_c, U)  # S_{l-1}^{-1} U
            S = S - U.T @ Z
            r = r - U.T @ prev_y
        c = scipy.linalg.cho_factor(S, lower=True, check_finite=False)
        y = scipy.linalg.cho_solve(c, r, check_finite=False)
        chol.append(c)
        rhs.append(y)
        prev_c, prev_y = c, y
    step = [None] * H
    step[H - 1] = rhs[H - 1]
    for l in range(H - 2, -1, -1):
        U = -4.0 * E[l + 1]
        step[l] = rhs[l] - scipy.linalg.cho_solve(chol[l], U @ step[l + 1], check_finite=False)
    decrement = float(-sum(gl @ sl for gl, sl in zip(g, step)))
    return step, decrement


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
      784-512x3-10 it takes about 20 sweeps, ~30 ms), Newton from there when BCD slows
      down (ill-conditioned, e.g. trained, networks) or after 500 sweeps.

    The tolerance is on the mass; near the optimum the mass gap is quadratic in the
    log-scale error, so BCD's log-scales are accurate to about ``sqrt(tol)`` (1e-5 to
    1e-6 at the default), Newton's to machine precision. Use ``method="newton"`` (or a
    smaller ``tol``) when the canonical weights must match to more digits.

    ``iterations`` counts BCD sweeps plus Newton steps. A network without hidden layers
    is returned as is. Raises ``ValueError`` if a neuron is degenerate (no minimiser; see
    :func:`degenerate_neurons`), for non-finite weights or a non-homogeneous activation.
    Biases are rescaled with the incoming side (``bias_j * lambda_j``) but do not enter
    the mass.
    """
    _check_activation(activation)
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol}")
    if method not in ("auto", "bcd", "newton"):
        raise ValueError(f"method must be 'auto', 'bcd' or 'newton', got {method!r}")
    p64 = _as_float64(params)
    names = list(p64)
    H = len(names) - 1
    before = mass(p64)
    if H == 0:
        return MinMassResult(_restore(params, p64), [], [], before, before, 0, True)
    _raise_if_degenerate(p64, "the min-mass problem")
    W = [np.square(p64[n]["kernel"]) for n in names]
    u = [np.zeros(W[l].shape[1]) for l in range(H)]

    iterations = 0
    converged = False
    f = before
    if method != "newton":
        max_sweeps = int(max_iter) if method == "bcd" else min(int(max_iter), 500)
        prev_dec = None
        for k in range(max_sweeps):
            _bcd_sweep(W, u)
            iterations += 1
            f_new = _objective(W, u)
            dec = f - f_new
            f = f_new
            rate = dec / prev_dec if prev_dec not in (None, 0.0) else None
            if dec <= 0.0 or (rate is not None and rate < 1.0 and dec <= tol * f and dec * rate <= tol * f * (1.0 - rate)):
                converged = dec <= tol * f
                break
            if method == "auto" and rate is not None and k >= 3 and rate > 0.9:
                break
            prev_dec = dec
    if not converged and method != "bcd":
        for _ in range(int(max_iter)):
            E = _mass_terms(W, u)
            f = float(sum(e.sum() for e in E))
            step, dec = _newton_direction(E)
            iterations += 1
            if not np.isfinite(dec):
                break
            # Armijo backtracking (directional derivative = -dec).
            t = 1.0
            while True:
                cand = [ul + t * sl for ul, sl in zip(u, step)]
                f_cand = _objective(W, cand)
                if np.isfinite(f_cand) and f_cand <= f - 0.25 * t * dec:
                    break
                t *= 0.5
                if t < 1e-12:
                    cand, f_cand = u, f
                    break
            u = cand
            if 0.5 * dec <= tol * f or f_cand >= f:
                converged = 0.5 * dec <= tol * f or (f - f_cand) <= tol * f
                break
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


def unit_norm(params: Mapping, include_bias: bool = False, activation: str = "relu") -> dict:
    """Canonical scaling: every hidden unit's incoming weight vector gets unit L2 norm.

    Layer by layer from the input: hidden layer ``l``'s scales are applied first to the
    rows of ``dense_l/kernel`` (the previous layer's scales), then each unit ``j`` is
    divided by the norm of its incoming vector, column ``j`` of ``dense_l/kernel``
    (plus ``dense_l/bias[j]`` if ``include_bias``); the factor moves to row ``j`` of
    ``dense_{l+1}/kernel``. The output layer absorbs all scales, so the function is
    unchanged, and the result does not depend on any prior positive rescaling.
    ``include_bias=False`` (default) normalises the kernel column only, matching the
    mass of Definition C.6 which excludes biases. Raises ``ValueError`` naming the layer
    and neurons whose incoming vector is zero (zero outgoing weights are harmless here).
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


def sort_neurons(params: Mapping, statistic: str | Callable = "max") -> tuple[dict, dict[str, np.ndarray]]:
    """Permutation canonical form: sort every hidden layer's units by a statistic of their incoming weights.

    Units are put in *descending* order of ``statistic`` of their incoming kernel column
    (``dense_l/kernel[:, j]``, biases not used). Default ``"max"``, the maximum incoming
    weight, which the paper found the most stable statistic during training (Section
    5.2). Others: ``"min"``, ``"mean"``, ``"sum"``, ``"norm"``, ``"abs_max"``, or a
    callable mapping a kernel ``(d_in, d_out)`` to ``(d_out,)`` values that must not
    depend on the order of the kernel's rows.

    Layers are processed from the input, so the incoming columns are read after the
    previous layer has been sorted. Ties in the statistic are broken deterministically by
    the incoming column itself (lexicographically, descending, in the already-sorted row
    order), then by the bias, then by the original index (only units with identical
    incoming weights and bias are left in their original order).

    Returns ``(sorted_params, perms)`` with ``perms = {"P_l": index array}`` and
    ``sorted_params == apply_permutation(mlp_permutation_spec(L), perms, params)``
    (gather convention: new unit ``i`` is old unit ``perms["P_l"][i]``).
    """
    if isinstance(statistic, str):
        if statistic not in _STATISTICS:
            raise ValueError(f"unknown statistic {statistic!r}; choose one of {sorted(_STATISTICS)} or pass a callable")
        stat = _STATISTICS[statistic]
    elif callable(statistic):
        stat = statistic
    else:
        raise TypeError(f"statistic must be a name or a callable, got {type(statistic).__name__}")
    names = _layer_names(params)
    H = len(names) - 1
    perms: dict[str, np.ndarray] = {}
    prev = None
    for l in range(H):
        k = np.asarray(params[names[l]]["kernel"], dtype=np.float64)
        b = np.asarray(params[names[l]]["bias"], dtype=np.float64)
        if prev is not None:
            k = k[prev]
        s = np.asarray(stat(k), dtype=np.float64)
        if s.shape != (k.shape[1],):
            raise ValueError(f"statistic returned shape {s.shape} for dense_{l}/kernel, expected ({k.shape[1]},)")
        # np.lexsort: last key is primary. Descending => sort negated values.
        keys = [np.arange(k.shape[1]), -b] + [-k[i] for i in range(k.shape[0] - 1, -1, -1)] + [-s]
        order = np.lexsort(keys).astype(np.int64)
        perms[f"P_{l}"] = order
        prev = order
    spec = mlp_permutation_spec(H)
    return apply_permutation(spec, perms, {n: dict(params[n]) for n in names}), perms


def identifiable(
    params: Mapping,
    scaling: str | None = "min_mass",
    statistic: str | Callable = "max",
    activation: str = "relu",
    **min_mass_kw,
) -> dict:
    """Proposition 1's identifiable network: remove the scaling symmetry, then sort the units.

    ``scaling="min_mass"`` (default: :func:`min_mass`, the min-mass representative of
    the scaling orbit), ``"unit_norm"`` (:func:`unit_norm`, the paper's "unit-normed
    neurons"), or ``None`` (permutations only). Then :func:`sort_neurons` with
    ``statistic``. The result does not depend on any prior positive rescaling or
    permutation of the hidden units (up to ties in ``statistic``), and computes the
    same function.
    """
    _check_activation(activation)
    if scaling == "min_mass":
        p = min_mass(params, **min_mass_kw).params
    elif scaling == "unit_norm":
        p = unit_norm(params)
    elif scaling is None:
        p = params
    else:
        raise ValueError(f"scaling must be 'min_mass', 'unit_norm' or None, got {scaling!r}")
    return sort_neurons(p, statistic)[0]


def _forward(params: Mapping, x: np.ndarray, activation: str) -> np.ndarray:
    names = _layer_names(params)
    h = x
    for i, n in enumerate(names):
        h = h @ np.asarray(params[n]["kernel"], dtype=np.float64) + np.asarray(params[n]["bias"], dtype=np.float64)
        if i < len(names) - 1:
            if activation == "relu":
                h = np.maximum(h, 0.0)
            elif activation == "leaky_relu":
                h = np.where(h > 0, h, 0.01 * h)
    return h


def check_function_unchanged(a: Mapping, b: Mapping, key=0, n: int = 256, activation: str = "relu") -> float:
    """Max absolute logit difference of networks ``a`` and ``b`` on ``n`` standard normal inputs.

    Evaluated in float64 numpy (so float32 round-off of ``mlp_apply`` does not hide or
    fake differences). ``key``: a jax key, an int seed or a numpy Generator.
    """
    from symlib.symmetry.permutations import as_generator

    d_in = np.shape(a[_layer_names(a)[0]]["kernel"])[0]
    x = as_generator(key).normal(size=(int(n), d_in))
    return float(np.max(np.abs(_forward(a, x, activation) - _forward(b, x, activation))))

