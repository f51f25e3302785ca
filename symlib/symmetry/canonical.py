"""Canonical forms: one representative of every network's symmetry orbit (Laurent et al., ICLR 2024).

* :func:`sort_neurons`: the permutation canonical form, every layer's units sorted by a
  statistic of their incoming weights, descending (``"max"`` by default, the statistic the
  paper found most stable during training, Sec. 5.2).
* :func:`identifiable`: Proposition 1's identifiable network, the scaling symmetry removed
  (min-mass, Definition C.6, or unit-norm scales: :mod:`symlib.symmetry.scaling`), then the
  units sorted.
* :func:`remove_symmetries`: a stack of posterior samples mapped to their canonical forms,
  Table 1's "NS" (App. C.2):

  - ``"unit_norm_sort"``, the paper's NS: every unit's incoming weights rescaled to unit L2
    norm in all layers but the last (:func:`~symlib.symmetry.scaling.unit_norm`), then units
    sorted by their first incoming weight, descending (:func:`sort_neurons` with
    ``statistic=None``, ``ties="index"``): :func:`identifiable` with ``scaling="unit_norm"``;
  - ``"min_mass_sort"``: the min-mass representative
    (:func:`~symlib.symmetry.scaling.min_mass`), then the same sort;
  - ``"rebasin"``: every sample permuted to match a ``reference`` network (Git Re-Basin
    weight matching, :func:`~symlib.symmetry.matching.weight_matching_many`); it removes
    permutations only, not the scaling symmetry, and depends on the reference.

Specs: MLPs :func:`~symlib.symmetry.scaling.mlp_scaling_spec` and
:func:`~symlib.symmetry.specs.mlp_permutation_spec`; OptuNet and the ResNets in
:mod:`symlib.symmetry.architectures`; any other model's derived by
:func:`symlib.symmetry.scaling_spec_from_flax` and :func:`symlib.symmetry.permutation_spec_from_flax`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite
from symlib.symmetry.matching import apply_permutation_many, weight_matching_many
from symlib.symmetry.scaling import ScalingSpec, dependency_order, min_mass, unit_norm
from symlib.symmetry.specs import PermutationSpec, apply_permutation, block_of, check_spec, flatten_params, \
    split_parts, unflatten_params

__all__ = ["IDENTIFIABLE_TOL", "NS_METHODS", "SORT_STATISTICS", "identifiable", "remove_symmetries", "sort_neurons"]

#: the min-mass tolerance of :func:`identifiable` (and so of :func:`remove_symmetries`): relative,
#: on the mass, for whichever solver runs; near the optimum the mass gap is quadratic in the
#: log-scales' error, so they are accurate to about its square root
IDENTIFIABLE_TOL = 1e-12
#: the canonical forms of :func:`remove_symmetries`
NS_METHODS = ("unit_norm_sort", "min_mass_sort", "rebasin")


def key_axis(spec: PermutationSpec, name: str) -> tuple[str, int]:
    """The spec's path whose last axis ``name`` permutes first (the layer producing the
    units), and that axis."""
    for path, axis in spec.perm_to_axes[name]:
        if axis == len(spec.axes[path]) - 1 and len(spec.axes[path]) > 1:
            return path, axis
    raise ValueError(f"permutation {name!r} acts on no kernel's output axis; there is no incoming weight to sort by")


def _unit_kernel(spec: PermutationSpec, name: str) -> tuple[str, str]:
    """The stored kernel producing ``name``'s units, and the spec's path they are read from:
    the part holding them when the kernel is cut along the units' axis, else the stored
    kernel itself (whole when cut along its input axis; seen through its view, if any)."""
    path, axis = key_axis(spec, name)
    stored = spec.stored_path(path)
    return stored, (path if path != stored and spec.parts[stored][0] == axis else stored)


def incoming_weights(spec: PermutationSpec, name: str, flat: Mapping):
    """``(path, k)``: the stored kernel producing ``name``'s units and their incoming weights,
    ``(inputs, units)``: the kernel (or the part of it holding the units) in the spec's view
    of it, every axis but the units' (the last) flattened.

    Args:
        spec: the permutation spec.
        name: one of its permutations.
        flat: the stored parameters, a flat dict (numpy or jax leaves; jittable).

    Raises:
        ValueError: if ``name`` acts on no kernel's output axis.
    """
    stored, read = _unit_kernel(spec, name)
    k = flat[stored] if read == stored else split_parts(spec, {stored: flat[stored]})[read]
    if read in spec.views:
        k = k.reshape(spec.views[read])
    return stored, k.reshape(-1, k.shape[-1])


def sort_order(spec: PermutationSpec) -> list[str]:
    """The permutations in the order :func:`sort_neurons` sorts them: each after those acting
    on its units' incoming weights (input to output: :func:`~symlib.symmetry.scaling.dependency_order`),
    whatever the order of ``spec.axes``.

    Raises:
        ValueError: if those dependencies have a cycle, or a permutation acts on no kernel's output axis.
    """
    deps = {}
    for name in spec.perm_names:
        stored, read = _unit_kernel(spec, name)
        sources = [read] if read != stored else [p for p in spec.axes if spec.stored_path(p) == stored]
        deps[name] = {q for p in sources for q in spec.axes[p] if q is not None}
    return dependency_order(deps, "permutations")


#: Named statistics of a unit's incoming weights, for :func:`sort_neurons` (numpy) and
#: :func:`symlib.symmetry.neuron_order.neuron_statistics` (jax, jittable), hence written with
#: array methods only: each maps the incoming weights ``(inputs, units)``
#: (:func:`incoming_weights`) to ``(units,)``, whatever the order of the rows.
SORT_STATISTICS: dict[str, Callable] = {
    "max": lambda k: k.max(axis=0),
    "min": lambda k: k.min(axis=0),
    "mean": lambda k: k.mean(axis=0),
    "sum": lambda k: k.sum(axis=0),
    "norm": lambda k: (k * k).sum(axis=0) ** 0.5,
    "abs_max": lambda k: abs(k).max(axis=0),
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


def sort_neurons(spec: PermutationSpec, params: Mapping, statistic="max", ties: str = "weights"):
    """Laurent et al.'s permutation canonical form: sort units by a statistic of their incoming weights, descending.

    The permutations are sorted input to output (:func:`sort_order`, whatever the order of
    ``spec.axes``); for each, the units are the output axis of the first kernel it permutes
    (:func:`incoming_weights`: in the spec's view of that kernel, a view splitting its
    output axis included), read after the permutations of its inputs have been applied,
    and the sort key is ``statistic`` of each unit's incoming weights (biases not used).
    Units of a blocked permutation (grouped convolution) are sorted within their group.
    Only permutes, never rescales: valid for any element-wise activation.

    Args:
        spec: the permutation spec (e.g. :func:`symlib.symmetry.architectures.optunet_permutation_spec`).
        params: one network.
        statistic: a name of :data:`SORT_STATISTICS` (default ``"max"``, the largest
            incoming weight, the statistic Laurent et al. found most stable, Sec. 5.2), a
            callable ``f(k) -> (units,)`` of the incoming kernel ``k`` reshaped to
            ``(inputs, units)`` (it must not depend on the order of ``k``'s rows), or None:
            that kernel at index 0 of every other axis (the first incoming weight of a dense
            unit, the top-left weight of the first input channel of a convolution channel;
            the paper's NS of Table 1, :func:`remove_symmetries`).
        ties: ``"index"`` (equal keys keep the original order, a stable sort) or
            ``"weights"`` (default: equal keys are ordered by the incoming weights themselves,
            lexicographically and descending, then by the kernel module's bias, then by
            the original index: only units with identical incoming weights and bias keep
            their order, so the result does not depend on the input's order).

    Returns:
        ``(sorted_params, perms)`` with ``sorted_params == apply_permutation(spec, perms, params)``
        (gather convention: new unit ``i`` is old unit ``perms[name][i]``).

    Raises:
        ValueError: if ``params`` do not fit ``spec``, for an unknown statistic name or
            ``ties``, a statistic of the wrong shape, non-finite weights (naming the
            parameter), or permutations whose inputs depend on one another in a cycle.
        TypeError: if ``statistic`` is neither None, a name nor a callable.
    """
    stat = _statistic_fn(statistic)
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    sizes = check_spec(spec, params)
    for path, leaf in flatten_params(params).items():
        check_finite(np.asarray(leaf, np.float64), path)
    perms = {n: np.arange(sizes[n]) for n in spec.perm_names}
    for name in sort_order(spec):
        current = flatten_params(apply_permutation(spec, perms, params))
        path, k = incoming_weights(spec, name, current)
        k = np.asarray(k, np.float64)
        check_finite(k, path)
        key = np.asarray(stat(k), np.float64) if stat is not None else k[0]
        if key.shape != (k.shape[1],):
            raise ValueError(f"statistic returned shape {key.shape} for {path}, expected ({k.shape[1]},)")
        keys = [np.arange(k.shape[1])]  # np.lexsort: the last key is the primary one
        if ties == "weights":
            for v in _own_vectors(spec, name, path):
                check_finite(np.asarray(current[v], np.float64), v)
                keys.append(-np.asarray(current[v], np.float64))
            keys += [-k[i] for i in range(k.shape[0] - 1, -1, -1)]
        keys += [-key, block_of(sizes[name], spec.blocks.get(name, 1))]
        perms[name] = perms[name][np.lexsort(keys)]
    return apply_permutation(spec, perms, params), perms


_SCALINGS = ("min_mass", "unit_norm", None)


def identifiable(scaling_spec: ScalingSpec, perm_spec: PermutationSpec, params: Mapping, scaling: str | None = "min_mass",
                 statistic="max", ties: str = "weights", activation: str = "relu", **min_mass_kw):
    """Proposition 1's identifiable network: remove the scaling symmetry, then sort the units
    (:func:`sort_neurons`).

    The result does not depend on any prior positive rescaling or permutation of the units
    (up to ties in ``statistic`` when ``ties="index"``), and computes the same function.

    Args:
        scaling_spec: the scaling spec.
        perm_spec: the permutation spec.
        params: one network.
        scaling: ``"min_mass"`` (default: :func:`~symlib.symmetry.scaling.min_mass`, the
            min-mass representative of the scaling orbit), ``"unit_norm"``
            (:func:`~symlib.symmetry.scaling.unit_norm`, the paper's "unit-normed neurons"),
            or ``None`` (permutations only).
        statistic: the sorting statistic of :func:`sort_neurons` (default ``"max"``, the
            largest incoming weight, which Laurent et al. found the most stable, Sec. 5.2).
        ties: how :func:`sort_neurons` orders equal statistics (default ``"weights"``: the
            result does not depend on the input's order).
        activation: the hidden activation, one of
            :data:`~symlib.symmetry.scaling.HOMOGENEOUS_ACTIVATIONS` (checked only with a
            scaling: sorting alone is valid for any activation).
        **min_mass_kw: passed to :func:`~symlib.symmetry.scaling.min_mass` (``tol``,
            ``max_iter``, ``method``); ``tol`` defaults to :data:`IDENTIFIABLE_TOL` here, so
            that two copies of one network give the same canonical weights to about 1e-6
            relative whatever the solver (the chain solver's own default, 1e-10, leaves its
            log-scales at about 1e-5).

    Returns:
        The canonical network (same function, leaves of the input's array type and dtype).
        Warns (``UserWarning``) when the min-mass solver stopped before its tolerance: the
        result is then not canonical to that accuracy.

    Raises:
        ValueError: for another ``scaling``, ``statistic="norm"`` with ``scaling="unit_norm"``
            (every unit's norm is then 1), a non-homogeneous ``activation`` with a scaling, and
            the errors of the steps.
    """
    if scaling not in _SCALINGS:
        raise ValueError(f"scaling must be 'min_mass', 'unit_norm' or None, got {scaling!r}")
    if scaling == "unit_norm" and isinstance(statistic, str) and statistic == "norm":
        raise ValueError("statistic='norm' cannot sort unit-normed units: every incoming norm is 1, so the "
                         "order would follow rounding noise; use 'max', 'abs_max' or another statistic")
    if scaling == "min_mass":
        res = min_mass(scaling_spec, params, activation=activation, **{"tol": IDENTIFIABLE_TOL, **min_mass_kw})
        if not res.converged:
            warnings.warn(f"identifiable: min_mass ({res.solver} solver) stopped after {res.iterations} iterations "
                          "before reaching its tolerance, so this network is not canonical to that accuracy: "
                          "raise max_iter or tol (or try method='newton')", stacklevel=2)
        params = res.params
    elif scaling == "unit_norm":
        params = unit_norm(scaling_spec, params, activation=activation)
    return sort_neurons(perm_spec, params, statistic=statistic, ties=ties)[0]


def _stack_size(flat: Mapping) -> int:
    sizes = {path: np.shape(leaf)[0] if np.ndim(leaf) else None for path, leaf in flat.items()}
    first = next(iter(sizes))
    for path, s in sizes.items():
        if s is None or s != sizes[first]:
            raise ValueError(f"samples_stack[{path!r}] has leading (sample) size {s}, but "
                             f"samples_stack[{first!r}] has {sizes[first]}")
    return int(sizes[first])


def _stack(leaves: list):
    return np.stack(leaves) if isinstance(leaves[0], np.ndarray) else jnp.stack(leaves)


def remove_symmetries(samples_stack: Mapping, scaling_spec: ScalingSpec | None, perm_spec: PermutationSpec,
                      method: str = "unit_norm_sort", *, reference: Mapping | None = None, key=0,
                      max_iter: int = 100) -> dict:
    """Map every network of a stack to a canonical representative of its symmetry orbit (module docstring).

    Args:
        samples_stack: the networks, a leading sample axis on every leaf (nested or flat).
        scaling_spec: the scaling spec (needed by ``"unit_norm_sort"`` and
            ``"min_mass_sort"``; ignored by ``"rebasin"``).
        perm_spec: the permutation spec.
        method: ``"unit_norm_sort"`` (the paper's NS), ``"min_mass_sort"`` or ``"rebasin"``.
        reference: the network every sample is matched to (``"rebasin"`` only).
        key: randomness of the weight-matching sweeps (``"rebasin"``).
        max_iter: the most weight-matching sweeps (``"rebasin"``).

    Returns:
        The canonical stack, in the structure of ``samples_stack`` (nested or flat); numpy
        leaves stay numpy with their dtype, other leaves come back as jax arrays.

    Raises:
        ValueError: for an unknown ``method``, a missing ``scaling_spec`` or
            ``reference``, leaves that disagree on the number of samples (naming the
            leaf), and the errors of the canonical forms (a unit with zero incoming
            weights, networks that do not fit the specs).
    """
    if method not in NS_METHODS:
        raise ValueError(f"method must be one of {NS_METHODS}, got {method!r}")
    if not isinstance(samples_stack, Mapping) or not samples_stack:
        raise ValueError("samples_stack must be a non-empty dict of stacked parameters")
    if method == "rebasin":
        if reference is None:
            raise ValueError("method 'rebasin' needs a reference network (reference=...)")
        match = weight_matching_many(key, perm_spec, reference, samples_stack, max_iter)
        return apply_permutation_many(perm_spec, match.perms, samples_stack)
    if scaling_spec is None:
        raise ValueError(f"method {method!r} needs a scaling_spec")
    flat = flatten_params(samples_stack)
    scaling = "unit_norm" if method == "unit_norm_sort" else "min_mass"
    canon = [flatten_params(identifiable(scaling_spec, perm_spec, {p: leaf[s] for p, leaf in flat.items()},
                                         scaling=scaling, statistic=None, ties="index"))
             for s in range(_stack_size(flat))]
    out = {p: _stack([c[p] for c in canon]) for p in flat}
    nested = any(isinstance(v, Mapping) for v in samples_stack.values())
    return unflatten_params(out) if nested else out
