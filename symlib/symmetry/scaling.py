"""Scaling symmetries of ReLU networks, the min-mass problem and unit-norm canonical scales,
for any network described by a :class:`ScalingSpec` (Laurent, Aldea & Franchi, "A
Symmetry-Aware Exploration of BNN Posteriors", ICLR 2024, Section 3 and Appendix C.7).

**Scaling symmetry.** ReLU is positively homogeneous (``relu(a x) = a relu(x)`` for
``a > 0``), so multiplying a hidden unit's incoming side (its kernel column, its bias, a
norm's scale) by ``a > 0`` and dividing its outgoing side (the kernel rows that read it) by
``a`` leaves the network's function unchanged (:func:`apply_scaling`).

**Scaling spec.** A unit group (the units of one layer) is a list of entries
``(path, axis, power)``: rescaling the group by positive ``a`` (one factor per unit)
multiplies parameter ``path`` along ``axis`` by ``a ** power``. ``power = +1`` marks the
incoming side, ``-1`` the outgoing side. When the axis is ``m`` times longer than the group,
unit ``i`` covers positions ``i*m .. i*m + m - 1`` (a grouped convolution: OptuNet's
``conv_0`` channel ``c`` feeds the ``c``-th block of 5 output channels of ``conv_1``). The
*mass* is the sum of squares of the parameters listed in ``mass_paths`` (kernels; biases
excluded, as in Definition C.6). Built-in specs: :func:`mlp_scaling_spec` (groups
``P_0 .. P_{L-1}``, the names of :func:`~symlib.symmetry.specs.mlp_permutation_spec`),
and, in :mod:`symlib.symmetry.architectures`, the OptuNet and ResNet specs;
any other model's spec is derived by :func:`symlib.symmetry.scaling_spec_from_flax` or
:func:`symlib.symmetry.scaling_spec_from_apply`.

**Views (a flatten).** ``views`` maps a parameter to the shape in which the spec sees it, a
C-order reshape of the stored leaf as in :attr:`symlib.symmetry.specs.PermutationSpec.views`:
the kernel ``(H*W*C, out)`` of a dense layer reading a flattened NHWC map is seen as
``(H*W, C, out)``, and the entry ``(path, 1, -1)`` divides channel ``c``'s rows at every
spatial position. Every tool reshapes to the view, rescales, and reshapes back.

**Parts (a concatenation).** ``parts`` cuts a parameter into parts along one axis, as
:attr:`symlib.symmetry.specs.PermutationSpec.parts` does: the kernel reading
``concatenate([a, b])`` is seen as ``"kernel[0:n_a]"`` and ``"kernel[n_a:n_a+n_b]"``, the
first divided by ``a``'s factors, the second by ``b``'s.

**Min-mass problem** (Definition C.6). With log-scales ``u`` (one per unit), the mass of the
rescaled network is ``M(u) = sum_k w_k^2 exp(2 s_k(u))``, ``s_k`` linear in ``u``: convex,
and strictly convex, with a unique minimiser, when no unit is *degenerate*
(Proposition 7). A unit is degenerate when its incoming or its outgoing mass is zero: the mass
then falls forever as its scale runs off to 0 or infinity (:func:`degenerate_neurons`;
:func:`min_mass` raises naming them: prune them first, :mod:`symlib.evaluation.pruning`, or
perturb them). :func:`min_mass` picks the solver from the spec:

- a *chain* (an MLP's shape, whatever the parameter names: :func:`chain_kernels`): for a
  layer-by-layer MLP ``M(u) = sum_l sum_{i,j} K_l[i, j]^2 exp(2 (u_l[j] - u_{l-1}[i]))``,
  minimised by exact block-coordinate descent (the units of one layer do not interact, and one
  unit's optimum given its neighbours is ``u_l[j] = log(B_j / A_j) / 4`` with ``A_j = sum_i
  K_l[i,j]^2 exp(-2 u_{l-1}[i])`` and ``B_j = sum_k K_{l+1}[j,k]^2 exp(2 u_{l+1}[k])``),
  switching to damped Newton steps when BCD slows down; the Hessian is a grounded weighted
  graph Laplacian, block-tridiagonal across layers, solved exactly by block Cholesky
  elimination (cost ``sum_l width_l^3``; :func:`symlib.symmetry.mass_chain.min_mass_chain`);
- any other spec: damped Newton on the exact Hessian (float64, ``jax.hessian``), fine up to a
  few thousand rescalable units.

**Canonical forms** built on these (unit-norm or min-mass scales, then sorted units) are in
:mod:`symlib.symmetry.canonical` (:func:`~symlib.symmetry.canonical.identifiable`).

Every function takes one network (no batch axis), nested or flat dicts of numpy or jax
arrays, computes in float64 numpy and returns leaves of the input's array type and dtype
(numpy stays numpy, jax becomes ``jnp`` arrays). Non-finite weights are rejected with a
``ValueError`` naming the leaf.

**Activation.** Rescaling preserves the function only for positively homogeneous
activations (:data:`HOMOGENEOUS_ACTIVATIONS`). Every operation that rescales takes
``activation="relu"`` and raises ``ValueError`` naming any other activation, e.g. ``"tanh"``.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite, positive_float, positive_int
from symlib.symmetry.mass_chain import MIN_MASS_METHODS, min_mass_chain
from symlib.symmetry.specs import checked_parts, checked_views, flatten_params, join_parts, output_change, \
    split_parts, unflatten_params

__all__ = [
    "HOMOGENEOUS_ACTIVATIONS",
    "MinMassResult",
    "ScalingSpec",
    "apply_scaling",
    "chain_kernels",
    "check_scaling_spec",
    "check_scaling_spec_invariance",
    "degenerate_neurons",
    "function_change",
    "mass",
    "mass_along",
    "mass_hessian",
    "min_mass",
    "mlp_scaling_spec",
    "unit_norm",
    "unit_norm_traced",
]

#: activations with ``act(a * x) == a * act(x)`` for every ``a > 0`` (leaky ReLU with slope 0.01)
HOMOGENEOUS_ACTIVATIONS = ("relu", "leaky_relu", "identity")

#: default tolerance and most iterations of :func:`min_mass` per solver: the chain solver's
#: BCD converges linearly (10,000 sweeps at most), dense Newton quadratically (a tighter
#: tolerance costs one more step)
MIN_MASS_DEFAULTS = {"chain": (1e-10, 10_000), "dense": (1e-12, 100)}


def _check_activation(activation) -> None:
    """Raise ``ValueError`` naming ``activation`` unless it is positively homogeneous."""
    if isinstance(activation, str) and activation in HOMOGENEOUS_ACTIVATIONS:
        return
    label = activation if isinstance(activation, str) else getattr(activation, "__name__", repr(activation))
    raise ValueError(
        f"activation {label!r} is not positively homogeneous: rescaling hidden units changes the function "
        f"(act(a * x) == a * act(x) for every a > 0 holds only for {list(HOMOGENEOUS_ACTIVATIONS)})"
    )


@dataclass(frozen=True)
class ScalingSpec:
    """The rescalable unit groups of a ReLU network and the parameters that make its mass.

    Attributes:
        groups: group name -> tuple of ``(path, axis, power)`` entries, ``power`` +1
            (incoming side) or -1 (outgoing side). Any order: :func:`unit_norm` orders the
            groups input to output from their entries; :func:`min_mass` uses its chain
            solver when the groups are listed input to output (:func:`chain_kernels`).
        mass_paths: the parameters whose squares make the mass.
        views: parameter path -> the shape in which the spec sees it (a C-order reshape of
            the stored leaf; module docstring); ``axis`` in the entries counts the view's axes.
        parts: stored parameter path -> ``(axis, lengths)``: the parameter is cut into parts
            along ``axis``, as in :attr:`symlib.symmetry.specs.PermutationSpec.parts` (a
            concatenation); entries and ``mass_paths`` then name the parts
            (``f"{path}[{start}:{stop}]"``), never the parameter itself.
    """

    groups: dict[str, tuple[tuple[str, int, int], ...]]
    mass_paths: tuple[str, ...]
    views: dict[str, tuple[int, ...]] = field(default_factory=dict)
    parts: dict[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict)

    def __post_init__(self):
        clean = {}
        for name, entries in self.groups.items():
            entries = tuple((str(p), int(a), int(s)) for p, a, s in entries)
            if not any(s == 1 for _, _, s in entries) or not any(s == -1 for _, _, s in entries):
                raise ValueError(f"scaling group {name!r} needs an incoming (+1) and an outgoing (-1) entry")
            if any(s not in (1, -1) for _, _, s in entries):
                raise ValueError(f"scaling group {name!r}: powers must be +1 or -1, got {entries}")
            clean[name] = entries
        object.__setattr__(self, "groups", clean)
        object.__setattr__(self, "mass_paths", tuple(self.mass_paths))
        known = {p for entries in clean.values() for p, _, _ in entries} | set(self.mass_paths)
        object.__setattr__(self, "views", checked_views(self.views, known,
                                                        "no group or mass path of the scaling spec uses"))
        object.__setattr__(self, "parts", checked_parts(self.parts, known, set(self.views)))


def mlp_scaling_spec(num_hidden_layers: int) -> ScalingSpec:
    """The scaling symmetries of a ReLU MLP (:mod:`symlib.core.models`) as a :class:`ScalingSpec`.

    Hidden unit ``j`` of layer ``l`` (group ``"P_l"``, the name of its permutation in
    :func:`~symlib.symmetry.specs.mlp_permutation_spec`) rescales column ``j`` of
    ``dense_l/kernel`` and ``dense_l/bias[j]`` by ``a`` and row ``j`` of
    ``dense_{l+1}/kernel`` by ``1/a``; the mass is the sum of the kernels' squares. A chain
    (:func:`chain_kernels`): :func:`min_mass` solves it with the block-tridiagonal solver.

    Args:
        num_hidden_layers: number of hidden layers ``L`` (>= 1).

    Returns:
        A :class:`ScalingSpec` with groups ``P_0 .. P_{L-1}``.

    Raises:
        ValueError: if ``num_hidden_layers`` is not a positive integer.
    """
    L = positive_int(num_hidden_layers, "num_hidden_layers")
    groups = {f"P_{l}": ((f"dense_{l}/kernel", 1, 1), (f"dense_{l}/bias", 0, 1), (f"dense_{l + 1}/kernel", 0, -1))
              for l in range(L)}
    return ScalingSpec(groups=groups, mass_paths=tuple(f"dense_{l}/kernel" for l in range(L + 1)))


def _viewed(spec: ScalingSpec, flat: Mapping) -> dict:
    """The leaves of a flat parameter dict cut into the spec's parts (:attr:`ScalingSpec.parts`)
    and reshaped to its views (:attr:`ScalingSpec.views`)."""
    out = {}
    for path, leaf in split_parts(spec, flat).items():
        view = spec.views.get(path)
        if view is not None:
            if int(np.prod(np.shape(leaf))) != int(np.prod(view)):
                raise ValueError(f"parameter {path!r} has shape {tuple(np.shape(leaf))}, which the scaling spec views "
                                 f"as {view}: the view needs {int(np.prod(view))} elements")
            leaf = leaf.reshape(view)
        out[path] = leaf
    return out


def _stored(spec: ScalingSpec, stored: Mapping, viewed: Mapping) -> dict:
    """Inverse of :func:`_viewed`: ``viewed`` leaves back to the shapes of the flat ``stored``
    leaves, parts joined."""
    cut = split_parts(spec, stored)
    return join_parts(spec, {p: x.reshape(np.shape(cut[p])) for p, x in viewed.items()})


def _float64(spec: ScalingSpec, params: Mapping) -> dict[str, np.ndarray]:
    """float64 leaves in the spec's views, checked finite."""
    flat = {}
    for path, leaf in flatten_params(params).items():
        arr = np.asarray(leaf, dtype=np.float64)
        check_finite(arr, path)
        flat[path] = arr
    return _viewed(spec, flat)


def check_scaling_spec(spec: ScalingSpec, params: Mapping) -> dict[str, int]:
    """Check ``params`` against ``spec``; return the number of units of every group.

    The size of a group is the axis length of its first entry; every other entry's axis
    must be a multiple of it.

    Raises:
        ValueError: naming the parameter that is missing, has too few axes or an axis
            length that does not fit the group, or a mass parameter listed twice.
    """
    flat = _viewed(spec, flatten_params(params))
    sizes = {}
    for name, entries in spec.groups.items():
        lengths = []
        for path, axis, _ in entries:
            if path not in flat:
                raise ValueError(f"scaling group {name!r} acts on parameter {path!r}, which params do not have")
            shape = np.shape(flat[path])
            if not -len(shape) <= axis < len(shape):
                raise ValueError(f"scaling group {name!r} acts on axis {axis} of {path!r}, which has shape {shape}"
                                 + (" (the spec's view)" if path in spec.views else ""))
            lengths.append(shape[axis])
        n = lengths[0]
        for (path, axis, _), m in zip(entries, lengths):
            if m % n:
                raise ValueError(f"scaling group {name!r} has {n} units but axis {axis} of {path!r} has length {m}, "
                                 f"not a multiple of {n}")
        sizes[name] = n
    missing = [p for p in spec.mass_paths if p not in flat]
    if missing:
        raise ValueError(f"the mass of the scaling spec uses parameter(s) {missing}, which params do not have")
    twice = sorted({p for p in spec.mass_paths if list(spec.mass_paths).count(p) > 1})
    if twice:
        raise ValueError(f"the mass of the scaling spec lists parameter(s) {twice} more than once (each would count "
                         "twice in the mass)")
    return sizes


def check_scaling_spec_invariance(spec: ScalingSpec, params: Mapping, apply_fn, x, key=0, trials: int = 2,
                                  rtol: float = 1e-4, atol: float = 1e-5, spread: float = 1.0) -> float:
    """Check that ``spec`` is a symmetry of the network: rescaling each group's units by
    random positive factors leaves ``apply_fn(params, x)`` unchanged.

    The scaling analogue of :func:`symlib.symmetry.specs.check_spec_invariance`: a
    hand-written spec with the right shapes but an entry on the wrong layer passes
    :func:`check_scaling_spec` and then changes the function. Each group in turn gets
    ``trials`` draws of factors ``exp(spread * N(0, 1))``, the others stay at 1.

    Args:
        spec: the scaling spec.
        params: parameters that fit ``spec`` (nested or flat, as ``apply_fn`` takes them).
        apply_fn: ``apply_fn(params, x) -> outputs`` (any pytree of arrays).
        x: a batch of inputs.
        key: seed of the random factors (int or numpy Generator).
        trials: draws per group.
        rtol: relative tolerance on the outputs.
        atol: absolute tolerance on the outputs.
        spread: standard deviation of the log-factors.

    Returns:
        The largest absolute change of any output over all trials.

    Raises:
        ValueError: naming the group whose rescaling changed the outputs, and by how much
            (or :func:`check_scaling_spec`'s error when the shapes do not fit).
    """
    sizes = check_scaling_spec(spec, params)
    rng = key if isinstance(key, np.random.Generator) else np.random.default_rng(key)
    ref = jax.tree_util.tree_leaves(apply_fn(params, x))
    worst = 0.0
    for name in spec.groups:
        for _ in range(int(trials)):
            scales = {n: np.ones(k) for n, k in sizes.items()}
            scales[name] = np.exp(float(spread) * rng.standard_normal(sizes[name]))
            diff, same = output_change(ref, apply_fn(apply_scaling(spec, params, scales), x), rtol, atol)
            worst = max(worst, diff)
            if not same:
                where = ", ".join(f"{p}[axis {ax}, power {pw:+d}]" for p, ax, pw in spec.groups[name])
                raise ValueError(
                    f"scaling group {name!r} of the spec changes the network's outputs (largest change "
                    f"{diff:.3g}): the parameter axes it rescales together ({where}) are not a symmetry "
                    "of apply_fn; check which layer each belongs to and that its units go through ReLU")
    return worst


def _expand(v, length: int, axis: int, ndim: int):
    """Per-unit values ``v`` along ``axis`` of a leaf with ``ndim`` axes (repeated per block)."""
    xp = jnp if isinstance(v, jax.Array) else np  # numpy stays float64 outside x64 mode
    v = xp.repeat(v, length // v.shape[0]) if length != v.shape[0] else v
    shape = [1] * ndim
    shape[axis] = length
    return xp.reshape(v, shape)


def _log_factor(spec: ScalingSpec, path: str, shape, u: Mapping):
    """Sum of ``power * u`` over the entries acting on ``path``, broadcastable to ``shape``."""
    out = 0.0
    for name, entries in spec.groups.items():
        for p, axis, power in entries:
            if p == path:
                out = out + power * _expand(u[name], shape[axis], axis % len(shape), len(shape))
    return out


def _check_scales(scales: Mapping, sizes: Mapping[str, int], what: str = "scales",
                  positive: bool = True) -> dict[str, np.ndarray]:
    """``scales`` checked (one finite float64 vector per group, positive unless ``positive``
    is False, as for log-scales), named ``what`` in the errors."""
    kind = "positive factors" if positive else "log-scales"
    if not isinstance(scales, Mapping):
        raise TypeError(f"{what} must be a dict: group name -> {kind} (groups {list(sizes)}), got "
                        f"{type(scales).__name__}")
    unknown = [n for n in scales if n not in sizes]
    missing = [n for n in sizes if n not in scales]
    if unknown or missing:
        raise ValueError(f"{what} must name exactly the groups {list(sizes)}; unknown {unknown}, missing {missing}")
    out = {}
    for name, s in scales.items():
        s = np.asarray(s, dtype=np.float64)
        if s.shape != (sizes[name],):
            raise ValueError(f"{what}[{name!r}] must have shape ({sizes[name]},), got {s.shape}")
        check_finite(s, f"{what}[{name!r}]")
        if positive and np.any(s <= 0):
            raise ValueError(f"{what}[{name!r}] must be positive; non-positive at unit(s) "
                             f"{np.flatnonzero(s <= 0)[:10].tolist()}")
        out[name] = s
    return out


def _restore(spec: ScalingSpec, template: Mapping, flat64: Mapping[str, np.ndarray]):
    """float64 leaves as the spec sees them (parts, views) back to the shape, array type,
    dtype and nesting of ``template``."""
    ref = flatten_params(template)
    flat64 = _stored(spec, ref, flat64)
    out = {}
    for path, x in flat64.items():
        r = ref[path]
        dtype = getattr(r, "dtype", np.float64)
        out[path] = np.asarray(x, dtype) if isinstance(r, np.ndarray) else jnp.asarray(x, dtype)
    nested = any(isinstance(v, Mapping) for v in template.values())
    return unflatten_params(out) if nested else out


def _scaled(spec: ScalingSpec, flat: Mapping[str, np.ndarray], log_scales: Mapping[str, np.ndarray], xp=np) -> dict:
    touched = {p for entries in spec.groups.values() for p, _, _ in entries}
    return {path: (xp.asarray(x * xp.exp(_log_factor(spec, path, x.shape, log_scales))) if path in touched else x)
            for path, x in flat.items()}


def apply_scaling(spec: ScalingSpec, params: Mapping, scales: Mapping[str, np.ndarray], activation: str = "relu"):
    """Rescale the unit groups of ``spec`` by positive ``scales`` (the function is unchanged).

    Unit ``j`` of an MLP's hidden layer ``l`` (group ``"P_l"`` of :func:`mlp_scaling_spec`):
    column ``j`` of ``dense_l/kernel`` and ``dense_l/bias[j]`` are multiplied by
    ``scales["P_l"][j]``, row ``j`` of ``dense_{l+1}/kernel`` is divided by it.

    Args:
        spec: the scaling spec.
        params: one network.
        scales: group name -> positive factors, one per unit.
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`.

    Returns:
        The rescaled network (leaves of the input's array type and dtype).

    Raises:
        ValueError: if ``params`` do not fit ``spec`` (naming the parameter), a scale
            array is missing, of the wrong shape, or not positive and finite, or for a
            non-homogeneous ``activation``.
    """
    _check_activation(activation)
    sizes = check_scaling_spec(spec, params)
    logs = {n: np.log(s) for n, s in _check_scales(scales, sizes).items()}
    return _restore(spec, params, _scaled(spec, _float64(spec, params), logs))


def mass(spec: ScalingSpec, params: Mapping) -> float:
    """The mass of a network (Definition C.6): the sum of squares of the parameters in
    ``spec.mass_paths`` (the kernels; biases excluded), in float64.

    Raises:
        ValueError: if ``params`` do not fit ``spec`` or hold nan/inf (naming the parameter).
    """
    check_scaling_spec(spec, params)
    flat = _float64(spec, params)
    return float(sum(np.sum(np.square(flat[p])) for p in spec.mass_paths))


def _side_mass(spec: ScalingSpec, flat: Mapping[str, np.ndarray], sizes: Mapping[str, int], name: str,
               power: int, xp=np) -> np.ndarray:
    """Per unit of group ``name``: the mass on its incoming (+1) or outgoing (-1) side."""
    out = 0.0
    for path, axis, pw in spec.groups[name]:
        if pw != power or path not in spec.mass_paths:
            continue
        sq = xp.square(flat[path])
        axis = axis % sq.ndim
        per_pos = sq.sum(axis=tuple(a for a in range(sq.ndim) if a != axis))
        out = out + per_pos.reshape(sizes[name], -1).sum(axis=1)
    return out + xp.zeros(sizes[name])


def _degenerate(spec: ScalingSpec, flat, sizes) -> dict[str, dict[str, np.ndarray]]:
    """Group name -> {"incoming" / "outgoing": indices of the units with zero mass on that side}."""
    out = {}
    for name in spec.groups:
        for power, side in ((1, "incoming"), (-1, "outgoing")):
            bad = np.flatnonzero(_side_mass(spec, flat, sizes, name, power) == 0)
            if bad.size:
                out.setdefault(name, {})[side] = bad
    return out


def degenerate_neurons(spec: ScalingSpec, params: Mapping) -> dict[str, np.ndarray]:
    """The units whose incoming or outgoing mass is zero (all their incoming, or all their
    outgoing, kernel weights zero): the min-mass problem has no minimiser with them.

    Args:
        spec: the scaling spec.
        params: one network.

    Returns:
        Group name -> sorted indices of its degenerate units (only groups that have some).

    Raises:
        ValueError: if ``params`` do not fit ``spec`` or hold nan/inf (naming the parameter).
    """
    sizes = check_scaling_spec(spec, params)
    return {name: np.unique(np.concatenate(list(sides.values())))
            for name, sides in _degenerate(spec, _float64(spec, params), sizes).items()}


def _raise_if_degenerate(spec: ScalingSpec, flat, sizes) -> None:
    problems = [f"group {name!r}: unit(s) {bad[:20].tolist()} have zero {side} mass"
                for name, sides in _degenerate(spec, flat, sizes).items() for side, bad in sides.items()]
    if problems:
        raise ValueError("the min-mass problem has no minimiser for degenerate units (their scale would run off "
                         "to 0 or infinity): " + "; ".join(problems) + ". Prune or perturb them first.")


@dataclass(frozen=True)
class MinMassResult:
    """Output of :func:`min_mass`.

    Attributes:
        params: the min-mass network (structure and array types of the input).
        scales: group name -> factors, so that ``apply_scaling(spec, input, scales)``
            is ``params``.
        mass: the mass after rescaling.
        mass_before: the mass of the input.
        iterations: Newton steps taken (BCD sweeps plus Newton steps for the chain solver).
        converged: whether the solver's stopping rule was met (``tol``).
        solver: ``"chain"`` or ``"dense"`` (see :func:`min_mass`).
        log_scales: group name -> ``log(scales)`` as the solver found them.
    """

    params: dict
    scales: dict[str, np.ndarray]
    mass: float
    mass_before: float
    iterations: int
    converged: bool
    solver: str = "dense"
    log_scales: dict[str, np.ndarray] = field(default_factory=dict)


def _x64():
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # JAX < 0.8

    return enable_x64(True)


_MASS_FUNCTIONS: dict = {}


def _mass_functions(spec: ScalingSpec, cuts: tuple[int, ...]):
    """Compiled ``M(v, squares)``, its gradient and Hessian for ``spec`` (cached per spec and sizes)."""
    key = (repr(spec.groups), spec.mass_paths, repr(spec.views), repr(spec.parts), cuts)
    if key not in _MASS_FUNCTIONS:
        names = list(spec.groups)

        def mass_of(v, sq):
            u = dict(zip(names, jnp.split(v, cuts)))
            return sum(jnp.sum(sq[p] * jnp.exp(2.0 * _log_factor(spec, p, sq[p].shape, u))) for p in spec.mass_paths)

        _MASS_FUNCTIONS[key] = (jax.jit(mass_of), jax.jit(jax.grad(mass_of)), jax.jit(jax.hessian(mass_of)))
    return _MASS_FUNCTIONS[key]


def chain_kernels(spec: ScalingSpec, params: Mapping) -> list[str] | None:
    """The kernels of ``spec``, input to output, when it is a *chain* (an MLP's shape,
    whatever the parameter names), else None.

    A chain: the mass is made of 2-D kernels ``K_0 .. K_L``; group ``l`` (in the spec's
    order) scales the columns of ``K_l`` (+1), the rows of ``K_{l+1}`` (-1) and
    possibly 1-D parameters of its own (+1, biases), one factor per position (no
    repeated blocks). :func:`min_mass` then uses the block-tridiagonal solver of
    :func:`symlib.symmetry.mass_chain.min_mass_chain`.
    """
    flat = flatten_params(params)
    kernels = list(spec.mass_paths)
    cut_or_viewed = bool(spec.parts) or any(p in spec.views for p in kernels)
    if cut_or_viewed or len(kernels) != len(spec.groups) + 1 or any(
            p not in flat or np.ndim(flat[p]) != 2 for p in kernels):
        return None
    for l, entries in enumerate(spec.groups.values()):
        ins = {(p, a % 2) for p, a, s in entries if s == 1 and p in kernels}
        outs = {(p, a % 2) for p, a, s in entries if s == -1}
        others = [(p, a) for p, a, s in entries if s == 1 and p not in kernels]
        if ins != {(kernels[l], 1)} or outs != {(kernels[l + 1], 0)}:
            return None
        n = np.shape(flat[kernels[l]])[1]
        if np.shape(flat[kernels[l + 1]])[0] != n or any(
                p not in flat or np.ndim(flat[p]) != 1 or np.shape(flat[p])[0] != n for p, _ in others):
            return None
    return kernels


def min_mass(spec: ScalingSpec, params: Mapping, tol: float | None = None, max_iter: int | None = None,
             method: str = "auto", activation: str = "relu") -> MinMassResult:
    """The min-mass representative of ``params``' scaling orbit (Definition C.6), for any spec.

    * ``method="dense"``: damped Newton on the log-scales from ``u = 0`` with the exact
      Hessian in float64 (``jax.hessian``) and Armijo backtracking; stops when half the
      squared Newton decrement is ``<= tol * M``. Any spec, up to a few thousand units.
    * ``"bcd"`` / ``"newton"``: the chain solver of
      :func:`symlib.symmetry.mass_chain.min_mass_chain` (module docstring), for a chain spec
      (:func:`chain_kernels`: an MLP's, with any parameter names). ``"bcd"``: exact
      block-coordinate descent, sweeping even then odd layers, each unit set to its
      closed-form conditional optimum; linear convergence, a sweep costs about two passes over
      the kernels; stops once the last decrease ``D_k`` and the observed rate
      ``r = D_k / D_{k-1} < 1`` give ``D_k * r / (1 - r) <= tol * M``. ``"newton"``: damped
      Newton from ``u = 0`` on the block-tridiagonal Hessian (block Cholesky, cost
      ``sum_l width_l^3`` a step), stopping as the dense method does (that step is still
      taken: quadratic convergence puts the result at machine precision).
    * ``"auto"`` (default): for a chain spec, BCD while it converges fast (rate below 0.9;
      for a He-initialised 784-512x3-10 MLP about 20 sweeps, ~20 ms), Newton from there
      when BCD slows down (ill-conditioned, e.g. trained, networks) or after 500 sweeps;
      ``"dense"`` for any other spec.

    Near the optimum the mass gap is quadratic in the log-scale error, so BCD's log-scales
    are accurate to about ``sqrt(tol)`` (1e-5 to 1e-6 at the chain default), Newton's to
    machine precision: use ``method="newton"`` (or a smaller ``tol``) when canonical weights
    must match to more digits. Biases are rescaled with the incoming side but do not enter
    the mass.

    Args:
        spec: the scaling spec (e.g. :func:`mlp_scaling_spec`,
            :func:`~symlib.symmetry.architectures.optunet_scaling_spec`).
        params: one network.
        tol: relative tolerance on the mass (positive); None: the solver's default
            (:data:`MIN_MASS_DEFAULTS`: 1e-10 for the chain solver, 1e-12 for dense Newton).
        max_iter: most Newton steps (and most BCD sweeps of the chain solver); None: the
            solver's default (10,000 for the chain solver, 100 for dense Newton).
        method: ``"auto"``, ``"dense"``, ``"bcd"`` or ``"newton"``.
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`.

    Returns:
        A :class:`MinMassResult`.

    Raises:
        ValueError: if ``params`` do not fit ``spec``, hold nan/inf, or a unit is
            degenerate (naming the group and units: :func:`degenerate_neurons`); for an
            unknown ``method``, ``"bcd"``/``"newton"`` with a spec that is not a chain, a
            non-positive ``tol`` / ``max_iter`` or a non-homogeneous ``activation``.
    """
    _check_activation(activation)
    if method not in ("dense",) + MIN_MASS_METHODS:
        raise ValueError(f"method must be 'auto', 'dense', 'bcd' or 'newton', got {method!r}")
    sizes = check_scaling_spec(spec, params)
    flat = _float64(spec, params)
    _raise_if_degenerate(spec, flat, sizes)
    names = list(spec.groups)
    kernels = chain_kernels(spec, flat) if method != "dense" else None
    if method in ("bcd", "newton") and kernels is None:
        raise ValueError(f"method {method!r} needs a chain spec (an MLP's shape, see chain_kernels); this spec is "
                         "not one: use method='dense' or 'auto'")
    default_tol, default_iter = MIN_MASS_DEFAULTS["chain" if kernels is not None else "dense"]
    tol = positive_float(default_tol if tol is None else tol, "tol")
    max_iter = positive_int(default_iter if max_iter is None else max_iter, "max_iter")
    if kernels is not None:
        before = float(sum(np.sum(np.square(flat[p])) for p in kernels))
        logs, steps, converged = min_mass_chain([np.square(flat[p]) for p in kernels], tol, max_iter,
                                                "auto" if method == "auto" else method)
        u = dict(zip(names, logs))
        solver = "chain"
    else:
        u, before, steps, converged = _dense_newton(spec, flat, sizes, tol, max_iter)
        solver = "dense"
    final = _scaled(spec, flat, u)
    return MinMassResult(params=_restore(spec, params, final), scales={n: np.exp(x) for n, x in u.items()},
                             mass=float(sum(np.sum(np.square(final[p])) for p in spec.mass_paths)),
                             mass_before=before, iterations=steps, converged=converged, solver=solver,
                             log_scales={n: np.asarray(x, np.float64) for n, x in u.items()})


def _dense_newton(spec: ScalingSpec, flat: Mapping[str, np.ndarray], sizes: Mapping[str, int], tol: float,
                  max_iter: int) -> tuple[dict[str, np.ndarray], float, int, bool]:
    """Damped Newton with the exact Hessian: ``(log-scales, mass before, steps, converged)``."""
    names = list(spec.groups)
    cuts = tuple(int(c) for c in np.cumsum([sizes[n] for n in names])[:-1])
    f, grad, hess = _mass_functions(spec, cuts)
    sq = {p: flat[p] ** 2 for p in spec.mass_paths}
    with _x64():
        v = jnp.zeros(sum(sizes.values()), jnp.float64)
        before = fv = float(f(v, sq))
        converged, steps = False, 0
        for steps in range(1, max_iter + 1):
            g, H = np.asarray(grad(v, sq)), np.asarray(hess(v, sq))
            d = -np.linalg.solve(H, g)
            dec = float(-g @ d)
            t = 1.0
            while t > 1e-12 and float(f(v + t * d, sq)) > fv - 0.25 * t * dec:
                t *= 0.5
            v = v + t * d
            fv = float(f(v, sq))
            if 0.5 * dec <= tol * fv:
                converged = True
                break
        u = {n: np.asarray(x) for n, x in zip(names, jnp.split(v, cuts))}
    return u, before, steps, converged


def _packed(spec: ScalingSpec, params: Mapping, log_scales: Mapping[str, np.ndarray] | None,
            what: str = "log_scales"):
    """Squared mass leaves, group sizes' cut points, and the log-scales (checked as they are,
    named ``what`` in errors; no exp/log round trip) as one float64 vector."""
    sizes = check_scaling_spec(spec, params)
    flat = _float64(spec, params)
    names = list(spec.groups)
    cuts = tuple(int(c) for c in np.cumsum([sizes[n] for n in names])[:-1])
    if log_scales is None:
        v = np.zeros(sum(sizes.values()))
    else:
        checked = _check_scales(log_scales, sizes, what, positive=False)
        v = np.concatenate([checked[n] for n in names])
    return {p: flat[p] ** 2 for p in spec.mass_paths}, cuts, v


def mass_hessian(spec: ScalingSpec, params: Mapping, log_scales: Mapping[str, np.ndarray] | None = None):
    """Hessian of the mass in the log-scales (Proposition 2: positive definite without degenerate units).

    Args:
        spec: the scaling spec.
        params: one network.
        log_scales: group name -> log-scales at which to evaluate (zeros, the network as
            it is, when None).

    Returns:
        The ``(U, U)`` Hessian, ``U`` the number of rescalable units, groups in spec order.
    """
    sq, cuts, v = _packed(spec, params, log_scales)
    _, _, hess = _mass_functions(spec, cuts)
    with _x64():
        return np.asarray(hess(jnp.asarray(v), sq))


def mass_along(spec: ScalingSpec, params: Mapping, log_scales: Mapping[str, np.ndarray],
                    direction: Mapping[str, np.ndarray], t) -> np.ndarray:
    """The mass at log-scales ``log_scales + t * direction`` for every ``t`` (a line through log-scale space).

    Args:
        spec: the scaling spec.
        params: one network.
        log_scales: group name -> origin of the line.
        direction: group name -> direction (same shapes).
        t: positions along the line.

    Returns:
        ``M(origin + t direction)`` for each ``t``.
    """
    sq, cuts, v = _packed(spec, params, log_scales)
    _, _, d = _packed(spec, params, direction, "direction")
    f, _, _ = _mass_functions(spec, cuts)
    with _x64():
        return np.array([float(f(jnp.asarray(v + ti * d), sq)) for ti in np.asarray(t, float)])


def dependency_order(deps: Mapping[str, Collection[str]], what: str) -> list[str]:
    """The names of ``deps`` ordered so that each comes after every name it depends on.

    ``deps[name]`` holds the names whose step must come before ``name``'s (others than the
    keys, and ``name`` itself, are ignored). Of the names free to go, the first in sorted
    order goes first: the order depends on the dependencies alone, not on the dict's order.

    Args:
        deps: name -> the names it depends on.
        what: what the names are, for the error message (e.g. ``"scaling groups"``).

    Returns:
        The names, in dependency order.

    Raises:
        ValueError: if the dependencies have a cycle (naming the ``what`` left on or after it).
    """
    pending = {name: {d for d in ds if d in deps and d != name} for name, ds in deps.items()}
    order: list[str] = []
    while pending:
        free = [name for name, ds in pending.items() if not ds]
        if not free:
            raise ValueError(f"the {what} {sorted(pending)} depend on one another in a cycle: no input-to-output "
                             "order exists")
        first = min(free)
        order.append(first)
        del pending[first]
        for ds in pending.values():
            ds.discard(first)
    return order


def _unit_norm_order(spec: ScalingSpec, include_bias: bool) -> list[str]:
    """The groups input to output: each after the other groups that rescale the parameters
    its incoming norm reads (power +1 entries among the mass paths, all of them with
    ``include_bias``)."""
    incoming = {name: {p for p, _, pw in entries if pw == 1 and (include_bias or p in spec.mass_paths)}
                for name, entries in spec.groups.items()}
    deps = {name: {other for other, entries in spec.groups.items() if any(p in reads for p, _, _ in entries)}
            for name, reads in incoming.items()}
    return dependency_order(deps, "scaling groups")


def unit_norm(spec: ScalingSpec, params: Mapping, include_bias: bool = False, activation: str = "relu"):
    """Laurent et al.'s scaling canonical form: every unit's incoming weights get unit L2 norm.

    Groups are processed input to output (each after the groups rescaling the parameters its
    incoming weights are read from: :func:`dependency_order`, whatever the order of
    ``spec.groups``), each after the earlier groups' factors have been applied, so a unit's
    incoming weights are read in their final form. The incoming weights are the entries
    with power +1 among ``spec.mass_paths`` (and, with ``include_bias``, the other +1
    entries too).

    Args:
        spec: the scaling spec.
        params: one network.
        include_bias: also count the incoming bias (and other non-mass +1 entries); False
            (default) normalises the kernel weights only, as the mass of Definition C.6,
            which excludes biases.
        activation: the hidden activation, one of :data:`HOMOGENEOUS_ACTIVATIONS`.

    Returns:
        The unit-norm network (same function, array types of the input); it does not
        depend on any prior positive rescaling.

    Raises:
        ValueError: naming the group and units whose incoming weights are all zero (zero
            outgoing weights are harmless here), for non-finite weights, a non-homogeneous
            ``activation``, or groups whose dependencies have a cycle.
    """
    _check_activation(activation)
    sizes = check_scaling_spec(spec, params)
    cur = _float64(spec, params)
    for name in _unit_norm_order(spec, include_bias):
        sq = _side_mass(spec, cur, sizes, name, 1)
        if include_bias:
            for path, axis, pw in spec.groups[name]:
                if pw == 1 and path not in spec.mass_paths:
                    x = np.square(cur[path])
                    axis = axis % x.ndim
                    sq = sq + x.sum(axis=tuple(a for a in range(x.ndim) if a != axis)).reshape(sizes[name], -1).sum(1)
        bad = np.flatnonzero(sq == 0)
        if bad.size:
            raise ValueError(f"unit_norm: group {name!r} has unit(s) {bad[:20].tolist()} with zero incoming weights")
        logs = {n: np.zeros(sizes[n]) for n in spec.groups}
        logs[name] = -0.5 * np.log(sq)
        cur = _scaled(spec, cur, logs)
    return _restore(spec, params, cur)


def unit_norm_traced(spec: ScalingSpec, params: Mapping) -> dict:
    """:func:`unit_norm` in jax, jittable (for observers inside a compiled training loop).

    Group by group from the input (the order of :func:`unit_norm`), each unit's incoming
    entries (power +1) are divided by the norm of its incoming mass weights and its outgoing
    entries (power -1) multiplied by it. No checks and no float64: the leaves keep their
    dtype. A unit whose incoming weights are all zero keeps its scale (instead of raising).

    Args:
        spec: the scaling spec.
        params: one network (nested or flat; jax or numpy leaves).

    Returns:
        The unit-norm network, flat (``"layer/leaf"`` keys), jax arrays.

    Raises:
        ValueError: if the groups' dependencies have a cycle.
    """
    stored = {p: jnp.asarray(x) for p, x in flatten_params(params).items()}
    cur = _viewed(spec, stored)
    sizes = {n: cur[e[0][0]].shape[e[0][1]] for n, e in spec.groups.items()}
    for name in _unit_norm_order(spec, include_bias=False):
        sq = _side_mass(spec, cur, sizes, name, 1, xp=jnp)
        norm = jnp.sqrt(jnp.where(sq > 0, sq, 1.0))
        for path, axis, power in spec.groups[name]:
            x = cur[path]
            factor = _expand(norm, x.shape[axis], axis % x.ndim, x.ndim)
            cur[path] = x / factor if power == 1 else x * factor
    return _stored(spec, stored, cur)


def _float64_tree(tree, name: str):
    """Every leaf of ``tree`` as float64 numpy, checked finite (named ``name/layer/leaf``)."""
    def cast(path, leaf):
        arr = np.asarray(leaf, np.float64)
        keys = [str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path]
        check_finite(arr, "/".join([name, *keys]))
        return arr
    return jax.tree_util.tree_map_with_path(cast, tree)


def function_change(apply_fn: Callable, a, b, x) -> float:
    """The largest absolute change of ``apply_fn``'s outputs between networks ``a`` and ``b``
    on inputs ``x``, computed in float64.

    The check that a rescaling, a permutation or a canonical form kept the function: both
    networks and the inputs are cast to float64 and ``jax.jit(apply_fn)`` runs inside
    :func:`jax.enable_x64`, because float32 round-off (about 1e-7 relative) would hide or fake
    the differences measured here.

    Args:
        apply_fn: ``apply_fn(params, x) -> outputs`` (any pytree of arrays), jittable.
        a: one network.
        b: a network of the same structure and shapes.
        x: a batch of inputs.

    Returns:
        ``max |apply_fn(a, x) - apply_fn(b, x)|`` over every output.

    Raises:
        ValueError: for networks of different structures or shapes, non-finite weights or
            inputs (naming the leaf, e.g. ``b/dense_1/bias``), or an empty ``x``.
    """
    a64, b64 = _float64_tree(a, "a"), _float64_tree(b, "b")
    shapes_a = jax.tree_util.tree_map(np.shape, a64)
    shapes_b = jax.tree_util.tree_map(np.shape, b64)
    if jax.tree_util.tree_structure(a64) != jax.tree_util.tree_structure(b64) or shapes_a != shapes_b:
        raise ValueError(f"networks a and b must have the same structure and shapes, got {shapes_a} and {shapes_b}")
    x64 = np.asarray(x, np.float64)
    if x64.size == 0:
        raise ValueError(f"x must hold at least one input, got shape {x64.shape}")
    check_finite(x64, "x")
    f = jax.jit(apply_fn)
    with _x64():
        out_a = jax.tree_util.tree_leaves(f(a64, x64))
        out_b = jax.tree_util.tree_leaves(f(b64, x64))
        return float(max(np.max(np.abs(np.asarray(p) - np.asarray(q))) for p, q in zip(out_a, out_b)))
