"""Symmetry-free representatives of a stack of posterior samples ("NS" of Laurent et al., ICLR 2024).

Table 1's "NS" MMD compares posteriors after removing the symmetries of every sample
(App. C.2): :func:`remove_symmetries` applies one canonical form to each network of a
stack (leading axis = samples) and returns the stack of canonical networks, each
computing the same function as the original.

* ``"unit_norm_sort"``, the paper's NS: every unit's incoming weights rescaled to unit
  L2 norm in all layers but the last (:func:`~symlib.symmetry.channel_scaling.unit_norm_spec`),
  then units sorted by their first incoming weight, descending
  (:func:`~symlib.symmetry.channel_scaling.sort_neurons_spec`); that composition is
  :func:`~symlib.symmetry.channel_scaling.identifiable_spec` with ``scaling="unit_norm"``.
* ``"min_mass_sort"``: the min-mass representative (Definition C.6,
  :func:`~symlib.symmetry.channel_scaling.min_mass_spec`), then the same sort.
* ``"rebasin"``: every sample permuted to match a ``reference`` network (Git Re-Basin
  weight matching, :func:`~symlib.symmetry.matching.weight_matching_many`); it removes
  permutations only, not the scaling symmetry, and depends on the reference.

Specs: OptuNet :func:`~symlib.symmetry.channel_scaling.optunet_scaling_spec` and
:func:`~symlib.symmetry.architectures.optunet_permutation_spec`; MLPs
:func:`~symlib.symmetry.channel_scaling.mlp_scaling_spec` and
:func:`~symlib.symmetry.specs.mlp_permutation_spec`.
"""
from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from symlib.symmetry.channel_scaling import ScalingSpec, identifiable_spec
from symlib.symmetry.matching import apply_permutation_many, weight_matching_many
from symlib.symmetry.specs import PermutationSpec, flatten_params, unflatten_params

__all__ = ["NS_METHODS", "remove_symmetries"]

#: the canonical forms of :func:`remove_symmetries`
NS_METHODS = ("unit_norm_sort", "min_mass_sort", "rebasin")


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
    canon = [flatten_params(identifiable_spec(scaling_spec, perm_spec, {p: leaf[s] for p, leaf in flat.items()},
                                              scaling=scaling))
             for s in range(_stack_size(flat))]
    out = {p: _stack([c[p] for c in canon]) for p in flat}
    nested = any(isinstance(v, Mapping) for v in samples_stack.values())
    return unflatten_params(out) if nested else out
