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

**MLP entry points of the spec tools.** :func:`apply_scaling`, :func:`min_mass`,
:func:`unit_norm` and :func:`sort_neurons` check the MLP layout (``dense_0 .. dense_L``) and
name the layer and neuron in their errors, then call :func:`~symlib.symmetry.channel_scaling.apply_scaling_spec`,
:func:`~symlib.symmetry.channel_scaling.min_mass_spec` (whose chain solver is
:func:`~symlib.symmetry.mass_chain.min_mass_chain`), :func:`~symlib.symmetry.channel_scaling.unit_norm_spec` and
:func:`~symlib.symmetry.channel_scaling.sort_neurons_spec` with the MLP's specs
(:func:`~symlib.symmetry.channel_scaling.mlp_scaling_spec`,
:func:`~symlib.symmetry.specs.mlp_permutation_spec`). For any other model, call those with
its specs (derived by :func:`symlib.symmetry.scaling_spec_from_flax` and
:func:`symlib.symmetry.permutation_spec_from_flax`).

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

from symlib.core.checks import check_finite, mlp_layer_names, positive_float, positive_int
from symlib.core.models import mlp_apply
from symlib.symmetry.permutations import as_generator
from symlib.symmetry.channel_scaling import (apply_scaling_spec, min_mass_spec, mlp_scaling_spec, sort_neurons_spec,
                                             unit_norm_spec)
from symlib.symmetry.mass_chain import MIN_MASS_METHODS
from symlib.symmetry.specs import mlp_permutation_spec

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

#: activations with ``act(a * x) == a * act(x)`` for every ``a > 0`` (leaky ReLU with slope 0.01)
HOMOGENEOUS_ACTIVATIONS = ("relu", "leaky_relu", "identity")



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


def _nested(params: Mapping, p64: Mapping) -> dict:
    """The layers of ``params`` in the order of ``p64`` (only ``dense_l``, as the MLP specs see them)."""
    return {n: dict(params[n]) for n in p64}


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
    logs = _checked_log_scales(scales, _hidden_widths(p64))
    if not logs:
        return _restore(params, p64)
    return apply_scaling_spec(mlp_scaling_spec(len(logs)), _nested(params, p64),
                              {f"P_{l}": np.exp(u) for l, u in enumerate(logs)})


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


# ------------------------------------------------- min_mass




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
    if method not in MIN_MASS_METHODS:
        raise ValueError(f"method must be 'auto', 'bcd' or 'newton', got {method!r}")
    p64 = _as_float64(params)
    before = mass(p64)
    if len(p64) == 1:
        return MinMassResult(_restore(params, p64), [], [], before, before, 0, True)
    _raise_if_degenerate(p64, "the min-mass problem")
    hidden = len(p64) - 1
    r = min_mass_spec(mlp_scaling_spec(hidden), _nested(params, p64), tol, max_iter, method)
    groups = [f"P_{l}" for l in range(hidden)]
    return MinMassResult(params=r.params, scales=[r.scales[g] for g in groups],
                         log_scales=[r.log_scales[g].copy() for g in groups], mass=r.mass, mass_before=before,
                         iterations=r.iterations, converged=bool(r.converged))


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
    for l, name in enumerate(list(p64)[:-1]):
        sq = np.sum(p64[name]["kernel"] ** 2, axis=0) + (p64[name]["bias"] ** 2 if include_bias else 0.0)
        bad = np.flatnonzero(sq == 0)
        if bad.size:
            raise ValueError(
                f"unit_norm: hidden layer {l} (output of dense_{l}) has neuron(s) {bad[:20].tolist()} with a zero "
                f"incoming {'kernel column and bias' if include_bias else 'kernel column'}; they cannot be normalised"
            )
    if len(p64) == 1:
        return _restore(params, p64)
    return unit_norm_spec(mlp_scaling_spec(len(p64) - 1), _nested(params, p64), include_bias=include_bias)


def sort_neurons(params: Mapping, statistic: str | Callable = "max") -> tuple[dict, dict[str, np.ndarray]]:
    """Permutation canonical form of an MLP: sort every hidden layer's units by a statistic of
    their incoming weights; :func:`~symlib.symmetry.channel_scaling.sort_neurons_spec` with
    ``mlp_permutation_spec(L)`` and ``ties="weights"`` (any model: that function with its spec).

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
    p64 = _as_float64(params)  # the MLP layout, its shapes and finite weights
    return sort_neurons_spec(mlp_permutation_spec(len(p64) - 1), _nested(params, p64), statistic=statistic,
                             ties="weights")


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
