"""Scaling symmetries of any ReLU network described by a :class:`ScalingSpec`, and the
canonical forms built on them: min-mass, unit-norm and sorting (Laurent et al., ICLR 2024).

:mod:`symlib.symmetry.scaling` solves these problems for MLPs with a solver that uses the
chain structure. This module does the same for any architecture whose rescalable units
are listed in a :class:`ScalingSpec` (OptuNet: :func:`optunet_scaling_spec`), so that a
convolutional network goes through the same tools.

**Scaling spec.** A unit group (the channels of one layer) is a list of entries
``(path, axis, power)``: rescaling the group by positive ``a`` (one factor per unit)
multiplies parameter ``path`` along ``axis`` by ``a ** power``. ``power = +1`` marks the
incoming side (kernel columns, bias, normalisation scale), ``-1`` the outgoing side. When
the axis is ``m`` times longer than the group, unit ``i`` covers positions
``i*m .. i*m + m - 1`` (a grouped convolution: OptuNet's ``conv_0`` channel ``c`` feeds
the ``c``-th block of 5 output channels of ``conv_1``). The *mass* is the sum of squares of
the parameters listed in ``mass_paths`` (kernels; biases excluded, as in Definition C.6).

**Views (a flatten).** ``views`` maps a parameter to the shape in which the spec sees it, a
C-order reshape of the stored leaf as in :attr:`symlib.symmetry.specs.PermutationSpec.views`:
the kernel ``(H*W*C, out)`` of a dense layer reading a flattened NHWC map is seen as
``(H*W, C, out)``, and the entry ``(path, 1, -1)`` divides channel ``c``'s rows at every
spatial position. Every tool reshapes to the view, rescales, and reshapes back.

**Parts (a concatenation).** ``parts`` cuts a parameter into parts along one axis, as
:attr:`symlib.symmetry.specs.PermutationSpec.parts` does: the kernel reading
``concatenate([a, b])`` is seen as ``"kernel[0:n_a]"`` and ``"kernel[n_a:n_a+n_b]"``, the
first divided by ``a``'s factors, the second by ``b``'s.

**Min-mass.** With log-scales ``u``, the mass of the rescaled network is
``M(u) = sum_k w_k^2 exp(2 s_k(u))``, ``s_k`` linear in ``u``: a convex function, strictly
convex when no unit is degenerate (every unit has non-zero incoming and outgoing mass).
:func:`min_mass_spec` minimises it: for a chain spec (an MLP's shape, any parameter
names: :func:`chain_kernels`) with the block-tridiagonal solver of
:func:`symlib.symmetry.mass_chain.min_mass_chain`, otherwise by damped Newton steps on the
exact Hessian (float64, ``jax.hessian``), fine up to a few thousand rescalable units.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite, positive_float, positive_int
from symlib.symmetry.mass_chain import min_mass_chain
from symlib.symmetry.specs import PermutationSpec, apply_permutation, block_of, check_spec, checked_parts, \
    checked_views, flatten_params, join_parts, output_change, split_parts, unflatten_params

__all__ = [
    "ScalingSpec",
    "SpecMinMassResult",
    "apply_scaling_spec",
    "chain_kernels",
    "check_scaling_spec",
    "check_scaling_spec_invariance",
    "identifiable_spec",
    "min_mass_spec",
    "mlp_scaling_spec",
    "optunet_scaling_spec",
    "resnet18_scaling_spec",
    "resnet20_scaling_spec",
    "sort_neurons_spec",
    "mass_spec",
    "mass_along_spec",
    "mass_hessian_spec",
    "unit_norm_spec",
    "unit_norm_traced",
]


@dataclass(frozen=True)
class ScalingSpec:
    """The rescalable unit groups of a ReLU network and the parameters that make its mass.

    Attributes:
        groups: group name -> tuple of ``(path, axis, power)`` entries, ``power`` +1
            (incoming side) or -1 (outgoing side), groups in input-to-output order.
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


def optunet_scaling_spec() -> ScalingSpec:
    """The scaling symmetries of OptuNet (:func:`symlib.core.cnn.optunet_init`).

    Every hidden channel is followed by ReLU (and max-pool or average pool, both
    positively homogeneous), so all of them rescale: the 2 channels of ``conv_0``
    (outgoing side: their group's 5 output channels of ``conv_1``), the 10 of ``conv_1``
    and the 3 units of ``dense_0`` (with their bias). The mass is the sum of the four
    kernels' squares.

    Returns:
        A :class:`ScalingSpec` with groups ``conv_0``, ``conv_1``, ``dense_0``.
    """
    return ScalingSpec(
        groups={
            "conv_0": (("conv_0/kernel", 3, 1), ("conv_1/kernel", 3, -1)),
            "conv_1": (("conv_1/kernel", 3, 1), ("dense_0/kernel", 0, -1)),
            "dense_0": (("dense_0/kernel", 1, 1), ("dense_0/bias", 0, 1), ("dense_1/kernel", 0, -1)),
        },
        mass_paths=("conv_0/kernel", "conv_1/kernel", "dense_0/kernel", "dense_1/kernel"),
    )


def mlp_scaling_spec(num_hidden_layers: int) -> ScalingSpec:
    """The scaling symmetries of a ReLU MLP (:mod:`symlib.core.models`) as a :class:`ScalingSpec`.

    Hidden unit ``j`` of layer ``l`` (group ``"P_l"``, the name of its permutation in
    :func:`~symlib.symmetry.specs.mlp_permutation_spec`) rescales column ``j`` of
    ``dense_l/kernel`` and ``dense_l/bias[j]`` by ``a`` and row ``j`` of
    ``dense_{l+1}/kernel`` by ``1/a``; the mass is the sum of the kernels' squares. The
    spec tools then give the same canonical forms as :mod:`symlib.symmetry.scaling`
    (:func:`unit_norm_spec` equals :func:`symlib.symmetry.scaling.unit_norm`).

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


def _resnet_scaling_spec(arch: str, groups) -> ScalingSpec:
    from symlib.symmetry.architectures import resnet18_permutation_spec, resnet20_permutation_spec

    pspec = {"resnet20": resnet20_permutation_spec, "resnet18": resnet18_permutation_spec}[arch]()
    names = list(pspec.perm_names)
    chosen = names if groups is None else list(groups)
    for g in chosen:
        if g in names:
            continue
        layer = g.rstrip("/")
        known = {path.rsplit("/", 1)[0] for path in pspec.axes}
        if layer in known and layer.split("/")[-1].startswith("conv"):
            norm = layer.rsplit("/", 1)[0] + "/norm" + ("_" + layer[-1] if layer[-1].isdigit() else "")
            kind = "LayerNorm" if arch == "resnet20" else "batch norm"
            extra = ("" if arch == "resnet20" else "; batch norm in inference form keeps it only up to its eps, "
                     "with the running statistics rescaled too")
            raise ValueError(
                f"{arch}: the output channels of {layer!r} have no scaling symmetry: they feed {norm!r} ({kind}), "
                f"which normalises them, so rescaling them one by one changes the function{extra}. The channels "
                f"rescale after the norm: group {pspec.axes[layer + '/kernel'][-1]!r} (the norm's scale and bias "
                f"times a, the kernels reading the channels divided by a)")
        raise ValueError(f"{arch}: unknown scaling group {g!r}; the groups are the permutations {names}")
    entries = {n: [] for n in chosen}
    for path, axes in pspec.axes.items():
        for axis, name in enumerate(axes):
            if name not in entries:
                continue
            leaf = path.rsplit("/", 1)[-1]
            if leaf in ("scale", "bias"):
                entries[name].append((path, axis, 1))
            elif leaf == "kernel" and axis == len(axes) - 2:  # the input-channel axis reads the group
                entries[name].append((path, axis, -1))
    # the first entry gives the group size: a norm's scale
    groups_ = {n: tuple(sorted(e, key=lambda t: (t[2] != 1, t[0]))) for n, e in entries.items()}
    mass = tuple(p for p in pspec.axes if p.endswith(("kernel", "/scale")) and not p.startswith("head/bias"))
    return ScalingSpec(groups=groups_, mass_paths=mass)


def resnet20_scaling_spec(groups=None) -> ScalingSpec:
    """The scaling symmetries of ResNet20 with LayerNorm (:func:`symlib.core.resnet.resnet20_init`).

    A channel rescales where it leaves a norm and enters ReLU: multiplying a norm's
    ``scale`` and ``bias`` of a channel by ``a > 0`` multiplies the channel by ``a``, and
    ReLU (and the residual sum, average pool) commute with that; dividing every kernel
    row that reads the channel by ``a`` undoes it. So every group of the permutation spec
    is a scaling group: a block's inner channels (``norm_0`` -> ``conv_1``) and a residual
    stream (all the norms that write it, ``norm_1`` of its blocks and the shortcut norm,
    against all the kernels that read it, the next convolutions and the head). Channels
    **before** a norm (the convolutions' outputs) have no such symmetry: LayerNorm
    normalises over the channels, so rescaling one channel changes every channel's output.
    Asking for one of those is refused with an error that says so.

    The mass is the sum of squares of all kernels and of the norms' ``scale`` (the biases
    excluded, as in Definition C.6). The scales must count: they are the incoming side of
    every group, and without them the mass would fall forever as the scales grow.

    Args:
        groups: names of the groups to include (permutation names of
            :func:`~symlib.symmetry.architectures.resnet20_permutation_spec`); default all.

    Returns:
        The :class:`ScalingSpec`.

    Raises:
        ValueError: for a convolution's output channels (no scaling symmetry; the message
            names the norm) or an unknown group.
    """
    return _resnet_scaling_spec("resnet20", groups)


def resnet18_scaling_spec(groups=None) -> ScalingSpec:
    """The scaling symmetries of the CIFAR ResNet-18 with batch norm in inference form
    (:func:`symlib.core.resnet.resnet18_init`): as :func:`resnet20_scaling_spec`, the norm's
    ``scale`` and ``bias`` (not its running statistics) against the kernels reading the
    channel. A convolution's output channel before batch norm rescales only approximately
    (exact up to the norm's ``eps`` when the running mean and variance are rescaled too), so
    it is refused.

    Args:
        groups: names of the groups to include; default all.

    Returns:
        The :class:`ScalingSpec`.

    Raises:
        ValueError: as for :func:`resnet20_scaling_spec`.
    """
    return _resnet_scaling_spec("resnet18", groups)


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
            length that does not fit the group.
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
            diff, same = output_change(ref, apply_fn(apply_scaling_spec(spec, params, scales), x), rtol, atol)
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


def _check_scales(scales: Mapping, sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    unknown = [n for n in scales if n not in sizes]
    missing = [n for n in sizes if n not in scales]
    if unknown or missing:
        raise ValueError(f"scales must name exactly the groups {list(sizes)}; unknown {unknown}, missing {missing}")
    out = {}
    for name, s in scales.items():
        s = np.asarray(s, dtype=np.float64)
        if s.shape != (sizes[name],):
            raise ValueError(f"scales[{name!r}] must have shape ({sizes[name]},), got {s.shape}")
        check_finite(s, f"scales[{name!r}]")
        if np.any(s <= 0):
            raise ValueError(f"scales[{name!r}] must be positive; non-positive at unit(s) {np.flatnonzero(s <= 0)[:10].tolist()}")
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


def apply_scaling_spec(spec: ScalingSpec, params: Mapping, scales: Mapping[str, np.ndarray]):
    """Rescale the unit groups of ``spec`` by positive ``scales`` (the function is unchanged).

    Args:
        spec: the scaling spec.
        params: one network.
        scales: group name -> positive factors, one per unit.

    Returns:
        The rescaled network (leaves of the input's array type and dtype).

    Raises:
        ValueError: if ``params`` do not fit ``spec`` (naming the parameter), or a scale
            array is missing, of the wrong shape, or not positive and finite.
    """
    sizes = check_scaling_spec(spec, params)
    logs = {n: np.log(s) for n, s in _check_scales(scales, sizes).items()}
    return _restore(spec, params, _scaled(spec, _float64(spec, params), logs))


def mass_spec(spec: ScalingSpec, params: Mapping) -> float:
    """The mass: sum of squares of the parameters in ``spec.mass_paths`` (float64)."""
    check_scaling_spec(spec, params)
    flat = _viewed(spec, flatten_params(params))
    return float(sum(np.sum(np.square(np.asarray(flat[p], np.float64))) for p in spec.mass_paths))


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


def _raise_if_degenerate(spec: ScalingSpec, flat, sizes) -> None:
    problems = []
    for name in spec.groups:
        for power, side in ((1, "incoming"), (-1, "outgoing")):
            bad = np.flatnonzero(_side_mass(spec, flat, sizes, name, power) == 0)
            if bad.size:
                problems.append(f"group {name!r}: unit(s) {bad[:20].tolist()} have zero {side} mass")
    if problems:
        raise ValueError("the min-mass problem has no minimiser for degenerate units (their scale would run off "
                         "to 0 or infinity): " + "; ".join(problems) + ". Prune or perturb them first.")


@dataclass(frozen=True)
class SpecMinMassResult:
    """Output of :func:`min_mass_spec`.

    Attributes:
        params: the min-mass network (structure and array types of the input).
        scales: group name -> factors, so that ``apply_scaling_spec(spec, input, scales)``
            is ``params``.
        mass: the mass after rescaling.
        mass_before: the mass of the input.
        iterations: Newton steps taken (BCD sweeps plus Newton steps for the chain solver).
        converged: whether the solver's stopping rule was met (``tol``).
        solver: ``"chain"`` or ``"dense"`` (see :func:`min_mass_spec`).
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
    repeated blocks). :func:`min_mass_spec` then uses the block-tridiagonal solver of
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


def min_mass_spec(spec: ScalingSpec, params: Mapping, tol: float = 1e-12, max_iter: int = 100,
                  method: str = "auto") -> SpecMinMassResult:
    """The min-mass representative of ``params``' scaling orbit (Definition C.6), for any spec.

    * ``method="dense"``: damped Newton on the log-scales from ``u = 0`` with the exact
      Hessian in float64 (``jax.hessian``) and Armijo backtracking; stops when half the
      squared Newton decrement is ``<= tol * M``. Any spec, up to a few thousand units.
    * ``"bcd"`` / ``"newton"``: the chain solver of
      :func:`symlib.symmetry.mass_chain.min_mass_chain` (block-coordinate descent, or Newton
      on the block-tridiagonal Hessian, cost linear in the depth), for a chain spec
      (:func:`chain_kernels`: an MLP's, with any parameter names).
    * ``"auto"`` (default): the chain solver's ``"auto"`` for a chain spec, ``"dense"``
      otherwise.

    Args:
        spec: the scaling spec (e.g. :func:`optunet_scaling_spec`).
        params: one network.
        tol: relative tolerance on the mass (positive).
        max_iter: most Newton steps (and most BCD sweeps of the chain solver).
        method: ``"auto"``, ``"dense"``, ``"bcd"`` or ``"newton"``.

    Returns:
        A :class:`SpecMinMassResult`.

    Raises:
        ValueError: if ``params`` do not fit ``spec``, hold nan/inf, or a unit is
            degenerate (naming the group and units); for an unknown ``method``, or
            ``"bcd"``/``"newton"`` with a spec that is not a chain.
    """
    tol = positive_float(tol, "tol")
    max_iter = positive_int(max_iter, "max_iter")
    if method not in ("auto", "dense", "bcd", "newton"):
        raise ValueError(f"method must be 'auto', 'dense', 'bcd' or 'newton', got {method!r}")
    sizes = check_scaling_spec(spec, params)
    flat = _float64(spec, params)
    _raise_if_degenerate(spec, flat, sizes)
    names = list(spec.groups)
    kernels = chain_kernels(spec, flat) if method != "dense" else None
    if method in ("bcd", "newton") and kernels is None:
        raise ValueError(f"method {method!r} needs a chain spec (an MLP's shape, see chain_kernels); this spec is "
                         "not one: use method='dense' or 'auto'")
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
    return SpecMinMassResult(params=_restore(spec, params, final), scales={n: np.exp(x) for n, x in u.items()},
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


def _packed(spec: ScalingSpec, params: Mapping, log_scales: Mapping[str, np.ndarray] | None):
    """Squared mass leaves, group sizes' cut points, and the log-scales as one float64 vector."""
    sizes = check_scaling_spec(spec, params)
    flat = _float64(spec, params)
    names = list(spec.groups)
    cuts = tuple(int(c) for c in np.cumsum([sizes[n] for n in names])[:-1])
    if log_scales is None:
        v = np.zeros(sum(sizes.values()))
    else:
        scales = _check_scales({n: np.exp(np.asarray(u, np.float64)) for n, u in log_scales.items()}, sizes)
        v = np.concatenate([np.log(scales[n]) for n in names])
    return {p: flat[p] ** 2 for p in spec.mass_paths}, cuts, v


def mass_hessian_spec(spec: ScalingSpec, params: Mapping, log_scales: Mapping[str, np.ndarray] | None = None):
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


def mass_along_spec(spec: ScalingSpec, params: Mapping, log_scales: Mapping[str, np.ndarray],
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
    _, _, d = _packed(spec, params, direction)
    f, _, _ = _mass_functions(spec, cuts)
    with _x64():
        return np.array([float(f(jnp.asarray(v + ti * d), sq)) for ti in np.asarray(t, float)])


def unit_norm_spec(spec: ScalingSpec, params: Mapping, include_bias: bool = False):
    """Laurent et al.'s scaling canonical form: every unit's incoming weights get unit L2 norm.

    Groups are processed in the order of ``spec.groups`` (input to output), each after the
    earlier groups' factors have been applied, so a unit's incoming weights are read in
    their final form. The incoming weights are the entries with power +1 among
    ``spec.mass_paths`` (and, with ``include_bias``, the other +1 entries too).

    Args:
        spec: the scaling spec.
        params: one network.
        include_bias: also count the incoming bias (and other non-mass +1 entries).

    Returns:
        The unit-norm network (same function, array types of the input).

    Raises:
        ValueError: naming the group and units whose incoming weights are all zero.
    """
    sizes = check_scaling_spec(spec, params)
    cur = _float64(spec, params)
    for name in spec.groups:
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
    """:func:`unit_norm_spec` in jax, jittable (for observers inside a compiled training loop).

    No checks and no float64: the leaves keep their dtype. A unit whose incoming weights
    are all zero keeps its scale (instead of raising).

    Args:
        spec: the scaling spec.
        params: one network (nested or flat; jax or numpy leaves).

    Returns:
        The unit-norm network, flat (``"layer/leaf"`` keys), jax arrays.
    """
    stored = {p: jnp.asarray(x) for p, x in flatten_params(params).items()}
    cur = _viewed(spec, stored)
    sizes = {n: cur[e[0][0]].shape[e[0][1]] for n, e in spec.groups.items()}
    for name in spec.groups:
        sq = _side_mass(spec, cur, sizes, name, 1, xp=jnp)
        logs = {n: jnp.zeros(sizes[n]) for n in spec.groups}
        logs[name] = jnp.where(sq > 0, -0.5 * jnp.log(jnp.where(sq > 0, sq, 1.0)), 0.0)
        cur = _scaled(spec, cur, logs, xp=jnp)
    return _stored(spec, stored, cur)


def key_axis(spec: PermutationSpec, name: str) -> tuple[str, int]:
    """The parameter whose last axis ``name`` permutes first: the layer producing the units
    (a stored path: a kernel cut into parts along its input axis is returned whole)."""
    for path, axis in spec.perm_to_axes[name]:
        if axis == len(spec.axes[path]) - 1 and len(spec.axes[path]) > 1:
            return spec.stored_path(path), axis
    raise ValueError(f"permutation {name!r} acts on no kernel's output axis; there is no incoming weight to sort by")


#: Named statistics of a unit's incoming weights for :func:`sort_neurons_spec`: each maps a
#: kernel with the units on its last axis, reshaped to ``(inputs, units)``, to ``(units,)``.
SORT_STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "max": lambda k: k.max(axis=0),
    "min": lambda k: k.min(axis=0),
    "mean": lambda k: k.mean(axis=0),
    "sum": lambda k: k.sum(axis=0),
    "norm": lambda k: np.sqrt(np.sum(k**2, axis=0)),
    "abs_max": lambda k: np.abs(k).max(axis=0),
}
_TIES = ("index", "weights")


def _statistic_fn(statistic) -> Callable[[np.ndarray], np.ndarray] | None:
    """The function behind a statistic's name, the callable itself, or None (first weight)."""
    if statistic is None or callable(statistic):
        return statistic
    if isinstance(statistic, str):
        if statistic not in SORT_STATISTICS:
            raise ValueError(f"unknown statistic {statistic!r}; choose one of {sorted(SORT_STATISTICS)} or pass a "
                             "callable")
        return SORT_STATISTICS[statistic]
    raise TypeError(f"statistic must be a name or a callable, got {type(statistic).__name__}")


def _own_vectors(spec: PermutationSpec, name: str, path: str) -> list[str]:
    """The 1-D parameters that ``name`` permutes in the same module as kernel ``path`` (its bias)."""
    module = path.rpartition("/")[0]
    return [spec.stored_path(p) for p, _ in spec.perm_to_axes[name]
            if len(spec.axes[p]) == 1 and p.rpartition("/")[0] == module]


def sort_neurons_spec(spec: PermutationSpec, params: Mapping, statistic=None, ties: str = "index"):
    """Laurent et al.'s permutation canonical form: sort units by a statistic of their incoming weights, descending.

    For each permutation of ``spec`` in order, the units are the output axis of the first
    kernel it permutes (read after the earlier permutations have been applied). The sort key
    is, by default, that kernel at index 0 of every other axis: the first incoming weight of
    a dense unit, the top-left weight of the first input channel of a convolution channel.
    Units of a blocked permutation (grouped convolution) are sorted within their group.

    Args:
        spec: the permutation spec (e.g. :func:`symlib.symmetry.architectures.optunet_permutation_spec`).
        params: one network.
        statistic: None (the first weight), a name of :data:`SORT_STATISTICS` (``"max"``,
            the largest incoming weight, is the statistic Laurent et al. found most stable,
            Sec. 5.2), or a callable ``f(k) -> (units,)`` of the incoming kernel ``k``
            reshaped to ``(inputs, units)``; it must not depend on the order of ``k``'s rows.
        ties: ``"index"`` (default: equal keys keep the original order, a stable sort) or
            ``"weights"`` (equal keys are ordered by the incoming weights themselves,
            lexicographically and descending, then by the kernel module's bias, then by
            the original index: only units with identical incoming weights and bias keep
            their order, so the result does not depend on the input's order).

    Returns:
        ``(sorted_params, perms)`` with ``sorted_params == apply_permutation(spec, perms, params)``
        (gather convention: new unit ``i`` is old unit ``perms[name][i]``).

    Raises:
        ValueError: if ``params`` do not fit ``spec``, for an unknown statistic name or
            ``ties``, a statistic of the wrong shape, or non-finite incoming weights (naming
            the parameter).
        TypeError: if ``statistic`` is neither None, a name nor a callable.
    """
    stat = _statistic_fn(statistic)
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    sizes = check_spec(spec, params)
    perms = {n: np.arange(sizes[n]) for n in spec.perm_names}
    for name in spec.perm_names:
        path, _ = key_axis(spec, name)
        current = flatten_params(apply_permutation(spec, perms, params))
        k = np.asarray(current[path], np.float64)
        k = k.reshape(-1, k.shape[-1])
        check_finite(k, path)
        key = np.asarray(stat(k), np.float64) if stat is not None else k[0]
        if key.shape != (k.shape[1],):
            raise ValueError(f"statistic returned shape {key.shape} for {path}, expected ({k.shape[1]},)")
        keys = [np.arange(k.shape[1])]  # np.lexsort: the last key is the primary one
        if ties == "weights":
            keys += [-np.asarray(current[v], np.float64) for v in _own_vectors(spec, name, path)]
            keys += [-k[i] for i in range(k.shape[0] - 1, -1, -1)]
        keys += [-key, block_of(sizes[name], spec.blocks.get(name, 1))]
        perms[name] = perms[name][np.lexsort(keys)]
    return apply_permutation(spec, perms, params), perms


def identifiable_spec(scaling_spec: ScalingSpec, perm_spec: PermutationSpec, params: Mapping,
                      scaling: str = "min_mass"):
    """Remove the scaling symmetry (``"min_mass"`` or ``"unit_norm"``), then sort (:func:`sort_neurons_spec`).

    Args:
        scaling_spec: the scaling spec.
        perm_spec: the permutation spec.
        params: one network.
        scaling: ``"min_mass"`` or ``"unit_norm"``.

    Returns:
        The canonical network (same function).

    Raises:
        ValueError: for another ``scaling``, and the errors of the steps.
    """
    if scaling == "min_mass":
        params = min_mass_spec(scaling_spec, params).params
    elif scaling == "unit_norm":
        params = unit_norm_spec(scaling_spec, params)
    else:
        raise ValueError(f"scaling must be 'min_mass' or 'unit_norm', got {scaling!r}")
    return sort_neurons_spec(perm_spec, params)[0]
