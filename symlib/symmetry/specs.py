"""Permutation specs: which named permutation acts on which axis of which parameter.

A :class:`PermutationSpec` maps every parameter, by its flat path (``"dense_0/kernel"``,
see :func:`flatten_params`), to a tuple with one entry per axis: the name of the
permutation acting on that axis, or ``None``. For an MLP (:func:`mlp_permutation_spec`)
the units of hidden layer ``l`` are permuted by ``"P_l"``, which acts on the output axis
of ``dense_l/kernel``, on ``dense_l/bias`` and on the input axis of ``dense_{l+1}/kernel``.

Convention (the one of :mod:`symlib.symmetry.permutations`, gather form): applying permutation
``p`` named ``P`` makes the new unit ``i`` the old unit ``p[i]``; along every axis acted
on by ``P``, ``new = take(old, p, axis)``. The network function is unchanged, and
``apply_permutation(spec, {"P": inverse(p)}, apply_permutation(spec, {"P": p}, A)) == A``.
Applying ``q`` after ``p`` equals applying ``compose(p, q)`` once.

Tools that accept ``batch_dims`` allow that many leading axes on every parameter (a
stack of networks, HMC samples); they are shared by all leaves and never permuted.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite_tree
from symlib.core.pytree import SEP, flatten_dict, unflatten_dict
from symlib.symmetry import permutations as _perm

__all__ = [
    "PermutationSpec",
    "apply_permutation",
    "block_of",
    "check_blocks",
    "check_spec",
    "check_spec_invariance",
    "flatten_params",
    "join_parts",
    "mlp_permutation_spec",
    "param_distance",
    "part_name",
    "random_permutations",
    "split_parts",
    "to_views",
    "unflatten_params",
    "view_shape",
]



@dataclass(frozen=True)
class PermutationSpec:
    """For each parameter path, the permutation name (or ``None``) acting on each axis.

    ``axes`` maps ``"dense_0/kernel"`` to e.g. ``(None, "P_0")``. Lists are accepted and
    stored as tuples. Derived: :attr:`perm_names` (in order of first appearance in
    ``axes``) and :attr:`perm_to_axes`.

    ``blocks`` (optional) maps a permutation name to a number of groups ``g``: that
    permutation may only move units within ``g`` equal, contiguous blocks (the output
    channels of a grouped convolution: channel ``o`` of ``c`` belongs to group
    ``o // (c // g)``). Every tool that builds or checks permutations honours it.

    ``views`` (optional) maps a path to the shape in which the spec sees that parameter:
    a C-order reshape of the stored leaf (after any batch axes), with the same number of
    elements; ``axes[path]`` then has one entry per axis of the view. This expresses a
    flatten: the kernel ``(H*W*C, out)`` of a dense layer reading a flattened NHWC map of
    ``C`` channels is viewed as ``(H*W, C, out)`` with axes ``(None, "P_conv", "P_dense")``,
    so a permutation of the channels is applied at every spatial position (row
    ``s*C + c``). Every tool reshapes the leaf to its view, permutes, and reshapes back.

    ``parts`` (optional) maps a stored parameter to ``(axis, lengths)``: the parameter is
    cut along ``axis`` into consecutive *parts* of those lengths, each a parameter of the
    spec of its own, named ``f"{path}[{start}:{stop}]"`` in ``axes``. This expresses a
    concatenation: a dense layer reading ``concatenate([a, b])`` of ``n_a`` and ``n_b``
    units has the kernel ``(n_a + n_b, out)`` with parts ``"kernel[0:n_a]"`` on ``(P_a,
    P_out)`` and ``"kernel[n_a:n_a+n_b]"`` on ``(P_b, P_out)``. Every tool cuts the leaf into
    its parts (:func:`split_parts`), permutes them, and joins them back (:func:`join_parts`).
    A part cannot also have a view.
    """

    axes: dict[str, tuple[str | None, ...]]
    blocks: dict[str, int] = field(default_factory=dict)
    views: dict[str, tuple[int, ...]] = field(default_factory=dict)
    parts: dict[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.axes, Mapping):
            raise TypeError(f"axes must be a dict of path -> tuple of names, got {type(self.axes).__name__}")
        clean = {}
        for path, names in self.axes.items():
            if not isinstance(path, str):
                raise TypeError(f"parameter paths must be strings, got {path!r}")
            if isinstance(names, str) or not isinstance(names, (tuple, list)):
                raise TypeError(f"axes[{path!r}] must be a tuple of permutation names or None, got {names!r}")
            for name in names:
                if name is not None and not isinstance(name, str):
                    raise TypeError(f"axes[{path!r}] holds {name!r}; entries must be str or None")
            clean[path] = tuple(names)
        object.__setattr__(self, "axes", clean)
        if not isinstance(self.blocks, Mapping):
            raise TypeError(f"blocks must be a dict of permutation name -> number of groups, got {self.blocks!r}")
        known = {n for names in clean.values() for n in names if n is not None}
        for name, g in self.blocks.items():
            if name not in known:
                raise ValueError(f"blocks names {name!r}, which no axis of the spec is permuted by")
            if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 1:
                raise ValueError(f"blocks[{name!r}] must be a positive int (number of groups), got {g!r}")
        object.__setattr__(self, "blocks", {n: int(g) for n, g in self.blocks.items()})
        views = checked_views(self.views, set(clean), "is not a parameter of the spec")
        for path, view in views.items():
            if len(view) != len(clean[path]):
                raise ValueError(f"views[{path!r}] = {tuple(view)} has {len(view)} axes but axes[{path!r}] lists "
                                 f"{len(clean[path])}: {clean[path]}")
        object.__setattr__(self, "views", views)
        parts = checked_parts(self.parts, set(clean), set(views))
        for path, (axis, lengths) in parts.items():
            names = [part_name(path, a, b) for a, b in _bounds(lengths)]
            absent = [n for n in names if n not in clean]
            if absent:
                raise ValueError(f"parts cuts {path!r} into {names}, but axes has no entry for {absent}")
            ndims = {len(clean[n]) for n in names}
            if len(ndims) > 1 or axis >= ndims.pop():
                raise ValueError(f"the parts {names} of {path!r} must list the same number of axes, more than {axis}")
        object.__setattr__(self, "parts", parts)

    @property
    def stored_paths(self) -> list[str]:
        """The paths of the stored parameters: those of ``axes``, each part replaced by the
        parameter it is cut from (:attr:`parts`), in order of first appearance."""
        return list(dict.fromkeys(self.stored_path(path) for path in self.axes))

    def stored_path(self, path: str) -> str:
        """The stored parameter that the spec's path ``path`` is (a part's: the one it is cut from)."""
        return _owners(self.parts).get(path, path)

    @property
    def perm_names(self) -> list[str]:
        """Names of the permutations, in order of first appearance in ``axes``."""
        return list(self.perm_to_axes)

    @property
    def perm_to_axes(self) -> dict[str, list[tuple[str, int]]]:
        """For each permutation name, the ``(parameter path, axis)`` pairs it acts on."""
        out: dict[str, list[tuple[str, int]]] = {}
        for path, names in self.axes.items():
            for axis, name in enumerate(names):
                if name is not None:
                    out.setdefault(name, []).append((path, axis))
        return out


def checked_views(views, known: set, unknown: str) -> dict[str, tuple[int, ...]]:
    """``views`` (path -> shape) validated: every path in ``known`` (else ``ValueError``
    ending in ``unknown``), every shape a tuple of positive ints."""
    if not isinstance(views, Mapping):
        raise TypeError(f"views must be a dict of parameter path -> shape, got {views!r}")
    out = {}
    for path, view in views.items():
        if path not in known:
            raise ValueError(f"views names {path!r}, which {unknown}")
        if isinstance(view, (str, bytes)) or not isinstance(view, (tuple, list)) or any(
                isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in view):
            raise ValueError(f"views[{path!r}] must be a tuple of positive ints (a shape), got {view!r}")
        out[path] = tuple(int(d) for d in view)
    return out


def checked_parts(parts, known: set, viewed: set) -> dict[str, tuple[int, tuple[int, ...]]]:
    """``parts`` (path -> ``(axis, lengths)``) validated: at least two positive lengths, a
    non-negative axis, the path itself not in ``known`` (the spec names its parts instead)
    and no part in ``viewed``."""
    if not isinstance(parts, Mapping):
        raise TypeError(f"parts must be a dict of parameter path -> (axis, lengths), got {parts!r}")
    out = {}
    for path, cut in parts.items():
        try:
            axis, lengths = cut
            axis, lengths = int(axis), tuple(int(n) for n in lengths)
        except (TypeError, ValueError):
            raise ValueError(f"parts[{path!r}] must be (axis, lengths), got {cut!r}") from None
        if axis < 0 or len(lengths) < 2 or any(n < 1 for n in lengths):
            raise ValueError(f"parts[{path!r}] must be (axis >= 0, two or more positive lengths), got {cut!r}")
        if path in known:
            raise ValueError(f"parts cuts {path!r} into parts, so the spec must name its parts, not {path!r} itself")
        for a, b in _bounds(lengths):
            if part_name(path, a, b) in viewed:
                raise ValueError(f"part {part_name(path, a, b)!r} cannot also have a view")
        out[path] = (axis, lengths)
    return out


def _bounds(lengths) -> list[tuple[int, int]]:
    ends = np.cumsum([0] + list(lengths)).tolist()
    return list(zip(ends[:-1], ends[1:]))


def _owners(parts: Mapping[str, tuple[int, tuple[int, ...]]]) -> dict[str, str]:
    """Part name -> the stored parameter it is cut from."""
    return {part_name(p, a, b): p for p, (_, lengths) in parts.items() for a, b in _bounds(lengths)}


def part_name(path: str, start: int, stop: int) -> str:
    """The spec's name of the part ``start:stop`` of parameter ``path`` (:attr:`PermutationSpec.parts`)."""
    return f"{path}[{start}:{stop}]"


def split_parts(spec: PermutationSpec, flat: Mapping[str, Any], batch_dims: int = 0) -> dict[str, Any]:
    """The leaves of a flat parameter dict with every parameter of :attr:`PermutationSpec.parts`
    cut into its parts (keys :func:`part_name`), in place of the parameter; the others as they are.

    Raises:
        ValueError: naming the parameter whose axis is not as long as its parts together.
    """
    out = {}
    for path, leaf in flat.items():
        if path not in spec.parts:
            out[path] = leaf
            continue
        axis, lengths = spec.parts[path]
        shape = _shape(leaf)
        k = batch_dims + axis
        if len(shape) <= k or shape[k] != sum(lengths):
            raise ValueError(f"parameter {path!r} has shape {shape}; the spec cuts axis {axis}"
                             + (f" (after {batch_dims} batch axes)" if batch_dims else "")
                             + f" into parts of lengths {list(lengths)}, {sum(lengths)} in all")
        for a, b in _bounds(lengths):
            out[part_name(path, a, b)] = leaf[(slice(None),) * k + (slice(a, b),)]
    return out


def join_parts(spec: PermutationSpec, leaves: Mapping[str, Any], batch_dims: int = 0) -> dict[str, Any]:
    """Inverse of :func:`split_parts`: the parts of every parameter joined back along their axis,
    in the position of the first part."""
    out: dict[str, Any] = {}
    owner = _owners(spec.parts)
    for path in leaves:
        parent = owner.get(path)
        if parent is None:
            out[path] = leaves[path]
        elif parent not in out:
            axis, lengths = spec.parts[parent]
            pieces = [leaves[part_name(parent, a, b)] for a, b in _bounds(lengths)]
            xp = np if all(isinstance(x, np.ndarray) for x in pieces) else jnp
            out[parent] = xp.concatenate(pieces, axis=batch_dims + axis)
    return out


def view_shape(spec: PermutationSpec, path: str, shape: tuple[int, ...], batch_dims: int = 0) -> tuple[int, ...]:
    """The shape in which ``spec`` sees a leaf of ``shape`` at ``path`` (its
    :attr:`PermutationSpec.views` entry after the ``batch_dims`` leading axes, or ``shape``).

    Raises:
        ValueError: if the view does not hold as many elements as the leaf.
    """
    view = spec.views.get(path)
    shape = tuple(int(d) for d in shape)
    if view is None:
        return shape
    if len(shape) < batch_dims or math.prod(shape[batch_dims:]) != math.prod(view):
        raise ValueError(f"parameter {path!r} has shape {shape}, which the spec views as {view}"
                         + (f" after {batch_dims} batch axes" if batch_dims else "")
                         + f": the view needs {math.prod(view)} elements")
    return shape[:batch_dims] + view


def to_views(spec: PermutationSpec, flat: Mapping[str, Any], batch_dims: int = 0) -> dict[str, Any]:
    """The leaves of a flat parameter dict as the spec sees them: cut into their parts
    (:func:`split_parts`) and reshaped to their views (:attr:`PermutationSpec.views`);
    other leaves come back as they are. Keys are the spec's paths (``spec.axes``)."""
    return {p: (leaf.reshape(view_shape(spec, p, _shape(leaf), batch_dims)) if p in spec.views else leaf)
            for p, leaf in split_parts(spec, flat, batch_dims).items()}


def mlp_permutation_spec(num_hidden_layers: int) -> PermutationSpec:
    """Spec of an MLP (:mod:`symlib.core.models`) with ``num_hidden_layers`` hidden layers.

    Hidden layer ``l`` (output of ``dense_l``) has its units permuted by ``"P_l"``:
    ``dense_l/kernel -> (P_{l-1} or None, P_l)``, ``dense_l/bias -> (P_l,)``; the last layer
    ``dense_L`` (``L = num_hidden_layers``) has ``(P_{L-1} or None, None)`` and ``(None,)``.

    Args:
        num_hidden_layers: number of hidden layers ``L`` (>= 0).

    Returns:
        The :class:`PermutationSpec` with permutations ``P_0 .. P_{L-1}``.

    Raises:
        TypeError: if ``num_hidden_layers`` is not an integer.
        ValueError: if it is negative.
    """
    if isinstance(num_hidden_layers, bool) or int(num_hidden_layers) != num_hidden_layers:
        raise TypeError(f"num_hidden_layers must be an int, got {num_hidden_layers!r}")
    L = int(num_hidden_layers)
    if L < 0:
        raise ValueError(f"num_hidden_layers must be non-negative, got {L}")
    axes = {}
    for l in range(L + 1):
        p_in = f"P_{l - 1}" if l > 0 else None
        p_out = f"P_{l}" if l < L else None
        axes[f"dense_{l}/kernel"] = (p_in, p_out)
        axes[f"dense_{l}/bias"] = (p_out,)
    return PermutationSpec(axes)


def flatten_params(params: Mapping) -> dict[str, Any]:
    """Nested parameter dicts -> ``{"dense_0/kernel": leaf}``.

    A thin alias of :func:`symlib.core.pytree.flatten_dict` with ``sep="/"``: anything
    that is not a Mapping is a leaf, an already-flat dict comes back unchanged (its keys
    may hold ``"/"``), empty sub-dicts vanish, and leaves keep their identity and order.

    Args:
        params: a (nested) dict of arrays, e.g. MLP parameters.

    Returns:
        A flat dict from ``"/"``-joined paths to the leaves, in the order of ``params``.

    Raises:
        TypeError: if ``params`` is not a dict, or a key is not a non-empty string.
        ValueError: if two routes lead to the same path (``{"a/b": x, "a": {"b": y}}``).
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a (nested) dict of arrays, got {type(params).__name__}")
    return flatten_dict(params, SEP)


def param_distance(a: Mapping, b: Mapping) -> float:
    """Euclidean distance between two parameter trees of the same structure (all leaves,
    biases included), computed in float64.

    Args:
        a: a parameter tree.
        b: a parameter tree with the same paths.

    Returns:
        The distance as a Python float.

    Raises:
        ValueError: if the trees hold different parameters, or a parameter's shapes differ
            (numpy would broadcast a ``(1, 4)`` kernel against a ``(3, 4)`` one).
    """
    fa, fb = flatten_params(a), flatten_params(b)
    if sorted(fa) != sorted(fb):
        raise ValueError(f"parameter trees differ: {sorted(set(fa) ^ set(fb))}")
    shapes = [(k, np.shape(fa[k]), np.shape(fb[k])) for k in sorted(fa) if np.shape(fa[k]) != np.shape(fb[k])]
    if shapes:
        k, sa, sb = shapes[0]
        raise ValueError(f"parameter {k!r} has shape {sa} in a and {sb} in b")
    return float(np.sqrt(sum(np.sum((np.asarray(fa[k], np.float64) - np.asarray(fb[k], np.float64)) ** 2)
                             for k in fa)))


def unflatten_params(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`flatten_params`: ``{"a/b": x}`` -> ``{"a": {"b": x}}``.

    A thin alias of :func:`symlib.core.pytree.unflatten_dict` with ``sep="/"``.

    Args:
        flat: a dict from ``"/"``-joined string paths to leaves.

    Returns:
        The nested dict, keys in the order of ``flat``.

    Raises:
        TypeError: if ``flat`` is not a dict or a path is not a string.
        ValueError: for a path with an empty component, or a path that is both a leaf
            and a prefix of another path.
    """
    if not isinstance(flat, Mapping):
        raise TypeError(f"flat must be a dict of path -> leaf, got {type(flat).__name__}")
    for path in flat:
        if not isinstance(path, str):
            raise TypeError(f"parameter paths must be strings, got {path!r}")
    return unflatten_dict(flat, SEP)


def _shape(leaf) -> tuple[int, ...]:
    shape = getattr(leaf, "shape", None)
    return tuple(shape) if shape is not None else np.shape(leaf)


def check_spec(spec: PermutationSpec, params: Mapping, batch_dims: int = 0) -> dict[str, int]:
    """Check ``params`` against ``spec``; return the size of every permutation.

    Raises ``ValueError`` naming the parameter (and sizes) when a parameter of the spec is
    missing from ``params`` or the other way round, when a parameter's number of axes
    (after ``batch_dims`` leading axes, which are ignored) differs from the spec's, or
    when two axes acted on by the same permutation differ in size.

    Args:
        spec: the permutation spec.
        params: the parameters (nested or flat dict).
        batch_dims: number of leading axes on every parameter that are not permuted.

    Returns:
        The size of every permutation of ``spec``, by name.

    Raises:
        ValueError: as described above, or for a negative ``batch_dims``.
    """
    batch_dims = int(batch_dims)
    if batch_dims < 0:
        raise ValueError(f"batch_dims must be non-negative, got {batch_dims}")
    flat = flatten_params(params)
    stored = spec.stored_paths
    missing = [p for p in stored if p not in flat]
    extra = [p for p in flat if p not in set(stored)]
    if missing or extra:
        what = (f"parameter(s) {missing} are in the spec but missing from params" if missing else
                f"parameter(s) {extra} are in params but not in the spec")
        raise ValueError(f"{what}; the spec's paths are {sorted(stored)}, the params' paths are {sorted(flat)}")
    flat = split_parts(spec, flat, batch_dims)
    shapes = {}
    for path, names in spec.axes.items():
        shape = shapes[path] = view_shape(spec, path, _shape(flat[path]), batch_dims)
        if len(shape) != batch_dims + len(names):
            raise ValueError(
                f"parameter {path!r} has shape {shape}: {len(shape)} axes, but the spec lists "
                f"{len(names)} axes {names}" + (f" after {batch_dims} batch axes" if batch_dims else "")
            )
    sizes: dict[str, int] = {}
    first: dict[str, tuple[str, int]] = {}
    for name, where in spec.perm_to_axes.items():
        for path, axis in where:
            size = int(shapes[path][batch_dims + axis])
            if name not in sizes:
                sizes[name], first[name] = size, (path, axis)
            elif size != sizes[name]:
                p0, a0 = first[name]
                raise ValueError(
                    f"permutation {name!r} acts on axis {a0} of {p0!r} (size {sizes[name]}) and on "
                    f"axis {axis} of {path!r} (size {size}); the sizes must agree"
                )
    for name, g in spec.blocks.items():
        if sizes[name] % g:
            p0, a0 = first[name]
            raise ValueError(f"permutation {name!r} keeps units within {g} groups, but axis {a0} of {p0!r} has "
                             f"{sizes[name]} units, not a multiple of {g}")
    return sizes


def block_of(n: int, groups: int) -> np.ndarray:
    """The group of each of ``n`` units split into ``groups`` equal contiguous blocks."""
    return np.arange(n) // (n // groups)


def check_blocks(spec: PermutationSpec, name: str, perm: np.ndarray) -> None:
    """Raise ``ValueError`` if permutation ``name`` of ``spec`` moves a unit out of its group.

    Args:
        spec: the permutation spec (its :attr:`PermutationSpec.blocks`).
        name: the permutation's name.
        perm: a valid permutation (concrete, ``(n,)``; rows of a stack ``(m, n)`` work too).

    Raises:
        ValueError: naming the permutation and the first unit moved across groups.
    """
    g = spec.blocks.get(name, 1)
    if g == 1:
        return
    perm = np.asarray(perm)
    groups = block_of(perm.shape[-1], g)
    bad = np.argwhere(groups[perm] != groups)
    if bad.size:
        where = tuple(int(v) for v in bad[0])
        i = where[-1]
        raise ValueError(f"permutation {name!r} must keep units within its {g} groups, but puts unit "
                         f"{int(perm[where])} (group {groups[perm[where]]}) at position {i} (group {groups[i]})")


def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def check_perm_names(sizes: Mapping[str, int], perms: Mapping[str, Any]) -> None:
    """Raise ValueError unless ``perms`` names exactly the spec's permutations (``sizes``).

    Args:
        sizes: the permutation sizes by name (from :func:`check_spec`).
        perms: the permutations given, by name.

    Raises:
        ValueError: naming the unknown or missing permutations.
    """
    unknown = [n for n in perms if n not in sizes]
    if unknown:
        raise ValueError(f"unknown permutation name(s) {unknown}; the spec has {list(sizes)}")
    missing = [n for n in sizes if n not in perms]
    if missing:
        raise ValueError(f"no permutation given for {missing}")


def apply_permutation(spec: PermutationSpec, perms: Mapping[str, Any], params: Mapping, batch_dims: int = 0):
    """Permute ``params`` by ``perms`` (name -> index array) without changing the network function.

    Along every axis acted on by permutation ``name``,
    ``new = take(old, perms[name], axis + batch_dims)``: the new unit ``i`` is the old unit
    ``perms[name][i]``. Hence applying ``inverse(p)`` undoes applying ``p``. Every name of
    the spec must be in ``perms`` and no other (else ``ValueError``); each permutation is
    validated with :func:`symlib.symmetry.permutations.validate` against the size from
    :func:`check_spec`. numpy leaves stay numpy (``np.take``); other leaves (jax arrays,
    tracers) use ``jnp.take``, so this works under ``jax.jit`` (traced permutations are
    only shape-checked). Returns the same structure as ``params`` (nested or flat);
    leaves no permutation touches are returned as they are.

    Args:
        spec: the permutation spec.
        perms: one index array per permutation name of ``spec``.
        params: the parameters (nested or flat dict; numpy, JAX or traced leaves).
        batch_dims: number of leading axes on every parameter that are not permuted.

    Returns:
        The permuted parameters in the structure of ``params``.

    Raises:
        ValueError: if ``params`` does not fit ``spec`` (:func:`check_spec`), ``perms`` names
            other permutations, or a permutation is invalid or of the wrong size.
    """
    sizes = check_spec(spec, params, batch_dims)
    check_perm_names(sizes, perms)
    checked = {}
    for name, perm in perms.items():
        if _is_tracer(perm):
            if perm.shape != (sizes[name],) or not jnp.issubdtype(perm.dtype, jnp.integer):
                raise ValueError(
                    f"permutation {name!r} must be an integer array of shape ({sizes[name]},), "
                    f"got {perm.dtype}{list(perm.shape)}"
                )
            checked[name] = perm
        else:
            try:
                checked[name] = _perm.validate(perm, sizes[name])
            except ValueError as e:
                raise ValueError(f"permutation {name!r}: {e}") from None
            check_blocks(spec, name, checked[name])
    nested = any(isinstance(v, Mapping) for v in params.values())
    flat = split_parts(spec, flatten_params(params), batch_dims)
    out = {}
    for path, leaf in flat.items():
        stored = _shape(leaf)
        if path in spec.views:
            leaf = leaf.reshape(view_shape(spec, path, stored, batch_dims))
        for axis, name in enumerate(spec.axes[path]):
            if name is None:
                continue
            perm = checked[name]
            if isinstance(leaf, np.ndarray) and isinstance(perm, np.ndarray):
                leaf = np.take(leaf, perm, axis=batch_dims + axis)
            else:
                leaf = jnp.take(leaf, perm, axis=batch_dims + axis)
        out[path] = leaf.reshape(stored) if path in spec.views else leaf
    out = join_parts(spec, out, batch_dims)
    return unflatten_params(out) if nested else out


def random_permutations(key, spec: PermutationSpec, params: Mapping, batch_dims: int = 0) -> dict[str, np.ndarray]:
    """A uniformly random permutation for every name of ``spec``, sized from ``params``.

    A permutation with :attr:`PermutationSpec.blocks` is uniform among those that keep
    every unit within its group.

    ``key`` as in :func:`symlib.symmetry.permutations.as_generator` (jax key, int seed, numpy
    Generator or None); names are drawn in :attr:`PermutationSpec.perm_names` order.

    Args:
        key: randomness, as in :func:`symlib.symmetry.permutations.as_generator`.
        spec: the permutation spec.
        params: parameters that fit ``spec``, giving the sizes.
        batch_dims: number of leading axes on every parameter that are not permuted.

    Returns:
        One int64 permutation per name of ``spec``.

    Raises:
        ValueError: if ``params`` does not fit ``spec``.
    """
    sizes = check_spec(spec, params, batch_dims)
    rng = _perm.as_generator(key)
    out = {}
    for name in spec.perm_names:
        g, n = spec.blocks.get(name, 1), sizes[name]
        size = n // g
        out[name] = np.concatenate([b * size + _perm.random_permutation(rng, size) for b in range(g)])
    return out


def check_spec_invariance(spec: PermutationSpec, params: Mapping, apply_fn, x, key=0, trials: int = 2,
                          rtol: float = 1e-4, atol: float = 1e-5, perturb: float = 0.1) -> float:
    """Check that ``spec`` is a symmetry of the network: permuting ``params`` by random
    permutations of each of its names leaves ``apply_fn(params, x)`` unchanged.

    :func:`check_spec` only compares shapes, so a hand-written spec with the right shapes but
    a parameter on the wrong permutation (a bias of layer 1 permuted with layer 2's units,
    say) passes it, and matching with it then silently changes the function. This applies
    ``trials`` random permutations of every name, one name at a time, and compares the
    outputs. A symmetry holds for any parameter values, so the parameters are first
    perturbed (``perturb`` times each leaf's standard deviation, plus ``perturb / 10``): equal
    values, such as the zero biases of a freshly initialised network, would hide a wrong
    entry.

    Args:
        spec: the permutation spec.
        params: parameters that fit ``spec`` (nested or flat, as ``apply_fn`` takes them).
        apply_fn: ``apply_fn(params, x) -> outputs`` (any pytree of arrays).
        x: a batch of inputs.
        key: seed of the random permutations.
        trials: random permutations per name.
        rtol: relative tolerance on the outputs.
        atol: absolute tolerance on the outputs.
        perturb: relative size of the perturbation (0: check ``params`` as they are).

    Returns:
        The largest absolute change of any output over all trials.

    Raises:
        ValueError: naming the permutation whose random draw changed the outputs, and by
            how much (or :func:`check_spec`'s error when the shapes do not fit).
    """
    sizes = check_spec(spec, params)
    check_finite_tree(params, "params")  # NaN weights give NaN outputs, which no spec can keep equal
    rng = _perm.as_generator(key)
    if perturb:
        params = jax.tree_util.tree_map(
            lambda v: (np.asarray(v) + (perturb * float(np.std(v)) + perturb / 10)
                       * rng.standard_normal(np.shape(v))).astype(np.asarray(v).dtype), params)
    ref = jax.tree_util.tree_leaves(apply_fn(params, x))
    if not all(np.all(np.isfinite(np.asarray(r))) for r in ref):
        raise ValueError("the outputs of apply_fn(params, x) are not finite (NaN or inf) before any permutation, "
                         "so the check cannot compare them: look at x and at the model, not at the spec")
    worst = 0.0
    for name in spec.perm_names:
        for _ in range(int(trials)):
            perms = {n: np.arange(k) for n, k in sizes.items()}
            perms[name] = random_permutations(rng, spec, params)[name]
            diff, same = output_change(ref, apply_fn(apply_permutation(spec, perms, params), x), rtol, atol)
            worst = max(worst, diff)
            if not same:
                where = ", ".join(f"{p}[axis {ax}]" for p, ax in spec.perm_to_axes[name])
                raise ValueError(
                    f"permutation {name!r} of the spec changes the network's outputs (largest change "
                    f"{diff:.3g}): the parameter axes it permutes together ({where}) are not a symmetry "
                    "of apply_fn; check which layer each of them belongs to")
    return worst


def output_change(ref_leaves, out, rtol: float, atol: float) -> tuple[float, bool]:
    """The largest absolute change from the leaves ``ref_leaves`` to the pytree ``out``
    (float64), and whether every leaf is within the tolerances (``np.allclose``)."""
    worst, same = 0.0, True
    for a, b in zip(ref_leaves, jax.tree_util.tree_leaves(out)):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        worst = max(worst, float(np.max(np.abs(a - b))) if a.size else 0.0)
        same = same and bool(np.allclose(a, b, rtol=rtol, atol=atol))
    return worst, same
