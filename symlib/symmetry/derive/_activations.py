"""The activations of every permutation of a spec, found in a model's traced computation
(for :func:`~symlib.symmetry.matching.activation_matching` given an ordinary
``apply_fn(params, x) -> output``).

:func:`activation_sites` traces ``apply_fn`` as :mod:`symlib.symmetry.derive` does (every
``jit`` inlined, so that the values of a jitted model are visible too) and, for every
permutation of the spec, picks one value of the computation that carries the permutation
on one of its axes (the axis is in the class of the parameter axes the spec permutes).
Candidates are the values computed from the input by an operation that computes (a
product, a sum, a nonlinearity, a norm's arithmetic; not one that only moves or copies
values: a reshape, transpose, broadcast, pad, slice, concatenation or cast) and on which
the permutation acts on one axis only. Of these the site is, in this order of preference,

1. one with the fewest *other* axes that the spec permutes (the attention weights
   ``(n, heads, q, k)`` for the heads rather than the queries ``(n, q, heads, d)``, whose
   per-head features are permuted too),
2. one with the most entries per unit (the full feature map: before any pooling or mean
   over positions),
3. the last computed (after the nonlinearity and the norm; for a residual stream, after
   the last block adding to it).

So an MLP's hidden layer is its post-ReLU activation, a convolution's channels the
post-ReLU map before pooling (post-BatchNorm and ReLU for a normalised one), a residual
stream the stream after the last block (before the global mean), the heads of attention
the attention weights (post-softmax), the query/key features within a head the scaled
queries and the value features the heads' outputs (both with the heads as one more
permuted axis, aligned before correlating). :func:`capture_activations` evaluates the
traced program up to the last site. Values inside a ``custom_jvp``/``custom_vjp`` function
(``jax.nn.relu``) are seen through its result only; what the derivation refuses (loops,
unknown primitives) is refused here too.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import jax
from jax.extend import core as jcore

from symlib.symmetry.derive._graph import aval_shape
from symlib.symmetry.derive._rules import trace_graph
from symlib.symmetry.specs import PermutationSpec, flatten_params

# operations that only move, copy or cast values: their results are never an activation site
MOVES = {
    "reshape", "transpose", "broadcast_in_dim", "squeeze", "expand_dims", "pad", "slice", "concatenate",
    "convert_element_type", "copy", "copy_p", "reduce_precision", "rev", "gather", "dynamic_slice",
    "dynamic_update_slice", "select_and_gather_add", "optimization_barrier", "sharding_constraint",
}


@dataclass(frozen=True)
class Site:
    """Where a permutation's activations are: output ``out`` of equation ``eqn`` of the
    traced program, the permutation on its axis ``axis``; ``others`` the ``(axis,
    permutation name)`` of its other axes that the spec permutes."""

    eqn: int
    out: int
    axis: int
    others: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Sites:
    """The activation :class:`Site` of every permutation (``sites``, in spec order) in the
    traced ``program``, whose inputs are the parameters at ``paths`` then the input's leaves."""

    program: jcore.ClosedJaxpr
    paths: tuple[str, ...]
    sites: dict[str, Site]


def _owners(g, spec: PermutationSpec, paths: list, pvars: list) -> dict:
    """Graph class root -> the spec's permutation acting on it, read from the spec's parameter
    axes (parts and views skipped). ``ValueError`` if two permutations act on one class or a
    permutation names no parameter axis the model reads."""
    var_of = dict(zip(paths, pvars))
    owner: dict = {}
    for name, where in spec.perm_to_axes.items():
        for path, axis in where:
            if path not in var_of or path in spec.views:
                continue
            root = g.find(g.node(var_of[path], axis))
            if owner.setdefault(root, name) != name:
                raise ValueError(f"the spec's permutations {owner[root]!r} and {name!r} both act on the hidden axis "
                                 f"of {path!r} axis {axis}: in the model they are one permutation")
    missing = [name for name in spec.perm_names if name not in owner.values()]
    if missing:
        raise ValueError(f"cannot find the activations of the spec's permutation(s) {missing}: none of their "
                         f"parameter axes is a whole axis of a parameter of the model (only views or parts)")
    return owner


def activation_sites(apply_fn: Callable, spec: PermutationSpec, params: Mapping, x) -> Sites:
    """The activation site of every permutation of ``spec`` in ``apply_fn(params, x)`` (module docstring).

    Args:
        apply_fn: ``apply_fn(params, x)``, a JAX-traceable function (its output is not used).
        spec: the permutation spec, derived from the model or written by hand with the same
            parameter paths (those of :func:`~symlib.symmetry.specs.flatten_params`).
        params: parameters of the model (only shapes matter).
        x: an example input (only its shape matters: the program is traced for it).

    Returns:
        The :class:`Sites`.

    Raises:
        ValueError: if two permutations of the spec act on one hidden axis of the model, or,
            naming them, for permutations whose activations no computed value carries
            (e.g. a convolution written as slices and products, which reshapes the channels).
        UnsupportedOperationError: naming a primitive that cannot be analysed.
    """
    with jax.disable_jit():  # inline every jit: its values are the program's own
        g, _, paths, pvars = trace_graph("perm", lambda p, *a: (apply_fn(p, *a), {}), params, (x,))
    owner = _owners(g, spec, paths, pvars)
    best: dict[str, tuple] = {}
    for k, eqn in enumerate(g.program.jaxpr.eqns):
        if eqn.primitive.name in MOVES:
            continue
        for j, v in enumerate(eqn.outvars):
            if g.kind.get(g.vid(v)) != "data":
                continue
            shape = aval_shape(v)
            named = {}
            for i in range(len(shape)):
                key = (g.vid(v), i)
                if key in g.parent and g.find(key) in owner:
                    named[i] = owner[g.find(key)]
            for i, name in named.items():
                if list(named.values()).count(name) > 1:
                    continue
                others = tuple((a, m) for a, m in named.items() if a != i)
                rank = (len(others), -(math.prod(shape) // shape[i]), -k)
                if name not in best or rank < best[name][0]:
                    best[name] = (rank, Site(k, j, i, others))
    missing = [name for name in spec.perm_names if name not in best]
    if missing:
        raise ValueError(f"cannot find the activations of the spec's permutation(s) {missing} in apply_fn: no "
                         f"value computed from the input carries them on an axis of its own (a convolution "
                         f"written as slices and products reshapes its channels: use lax.conv_general_dilated; "
                         f"or pass apply_fn returning the activations as a dict by permutation name)")
    return Sites(g.program, tuple(flatten_params(params)), {name: best[name][1] for name in spec.perm_names})


def capture_activations(sites: Sites, params: Mapping, x) -> dict[str, jax.Array]:
    """The activations at ``sites`` of the network ``params`` on ``x``.

    The traced program is evaluated up to the last site only (JAX-traceable: ``jax.jit`` it).

    Args:
        sites: from :func:`activation_sites`.
        params: a network with the parameters (paths and shapes) of the one traced.
        x: inputs of the shape traced.

    Returns:
        ``{permutation name: value}`` in spec order, each value as computed (the
        permutation on its site's ``axis``, its ``others`` on theirs).
    """
    jaxpr = sites.program.jaxpr
    last = max(site.eqn for site in sites.sites.values())
    wanted = [jaxpr.eqns[site.eqn].outvars[site.out] for site in sites.sites.values()]
    debug = jaxpr.debug_info._replace(result_paths=tuple(f"activations[{name!r}]" for name in sites.sites))
    sub = jaxpr.replace(eqns=jaxpr.eqns[:last + 1], outvars=wanted, debug_info=debug)
    flat = flatten_params(params)
    args = [flat[path] for path in sites.paths] + jax.tree_util.tree_leaves(x)
    values = jcore.jaxpr_as_fun(jcore.ClosedJaxpr(sub, sites.program.consts))(*args)
    return dict(zip(sites.sites, values))
