"""Permutation and scaling specs derived from a model's computation graph.

Instead of writing a :class:`~symlib.symmetry.specs.PermutationSpec` by hand,
:func:`permutation_spec_from_apply` traces ``apply_fn(params, *example_args)`` with
:func:`jax.make_jaxpr` and finds, for every hidden axis, which parameter axes must be
permuted together. :func:`permutation_spec_from_flax` does the same for a
``flax.linen`` module (``module.apply``), also over its ``batch_stats`` when given the
whole variables dict. :func:`scaling_spec_from_apply` / :func:`scaling_spec_from_flax`
derive the positive-scaling symmetries of ReLU networks as a
:class:`~symlib.symmetry.channel_scaling.ScalingSpec`. :func:`derive_report` returns the
permutation spec together with the reason why each parameter axis left unpermuted was
stopped.

**Algorithm.** Every axis of every value of the traced program is a node of a
union-find. An operation that is *equivariant* along an axis joins the nodes of its
operands' and result's axes: elementwise operations (activations, biases added with
broadcasting, residual sums, norms' per-channel ``scale``, ``bias`` and running
statistics, dropout masks), the contracted axes of ``dot_general`` (a dense kernel's rows
with its input's features), the feature axes of ``conv_general_dilated`` (HWIO kernels:
input channels with the input's channels, output channels with the result's), axes
passed through unchanged by ``reshape``, ``transpose``, ``broadcast_in_dim``, reductions
over *other* axes, pooling windows of size one, and subprograms (``jit``,
``custom_jvp_call`` such as ``jax.nn.relu``, ``custom_vjp_call``, ``checkpoint``, every
branch of ``cond``; a jitted function's jaxpr is analysed afresh at each call). A
reduction over an axis (``reduce_sum``, ``reduce_max``: a LayerNorm's mean and variance
over the features, a softmax's normaliser) is *invariant* to that axis's permutation, so
it joins nothing and stops nothing; the statistic, broadcast back, is constant along the
axis.

Some nodes are *stopped*: the axes of the model's inputs and outputs, of captured
constant arrays, the spatial axes of convolutions and pooling windows, the input
channels of grouped convolutions, axes sliced, padded, reversed, sorted, gathered or
returned as positions (``argmax``), the concatenation axis (the result's axis is a
concatenation of several permutations, which a :class:`PermutationSpec` cannot express),
and an axis that a ``reshape`` both splits and merges (``(6, 4) -> (4, 6)``). A class of
joined nodes becomes a permutation of the spec when no node
in it is stopped, it holds at least one parameter axis and its size exceeds one. The
output channels of a grouped convolution (``feature_group_count = g``) may only move
within their ``g`` blocks (``PermutationSpec.blocks``), as in
:func:`~symlib.symmetry.architectures.optunet_permutation_spec`.

**Flatten.** A ``reshape`` that merges axes (a flatten of an NHWC map, ``(H, W, C) ->
H*W*C``) or splits one keeps each merged axis as a *factor* of the long axis: the long
axis, seen as ``(outer, size, inner)`` in C order, has the merged axis as its middle
factor, and that factor node is joined with it. Classes of long axes that are joined (the
flattened features and the dense kernel's rows they are contracted with) have their
equal factors joined too. The long axis as a whole is stopped; a parameter axis whose
class has free factors is seen by the spec through a view
(``PermutationSpec.views``): the dense kernel ``(H*W*C, out)`` as ``(H*W, C, out)``
with the channels' permutation on the middle axis, so that row ``s*C + c`` moves with
channel ``c`` at every position ``s`` (a channels-first flatten gives ``(C, H*W, out)``).
A factor of a long axis stopped for another reason (the flattened map is also an output)
is stopped with it. Scaling specs stay stopped at a flatten. A primitive the analysis
does not know (``scan``, ``while``, collectives, ``fft``...) raises
:class:`UnsupportedOperationError` naming it. Random numbers (dropout masks) are treated
as fresh values that take the permutation of whatever they are combined with: the
function is then equivariant in distribution, not for a fixed key.

Names: a class is named ``"P_" + layer`` after the first parameter (in ``params`` order)
whose *last* axis it permutes (a kernel's output axis or a bias), e.g. ``"P_dense_0"``;
otherwise ``"P_" + path + "_" + axis``.

**Scaling.** The same traversal with other rules: the incoming side of a unit is the
output axis of the kernel producing it (``dot_general``/``conv`` with a parameter
kernel: entry ``+1``) and every parameter added to it or multiplied into it after a
normalisation (a bias, a norm's ``scale`` and ``bias``: ``+1``); the outgoing side is the
input axis of every kernel reading it (``-1``). Between them only positively homogeneous
operations may act: ``max(x, 0)`` (ReLU), ``select_n`` on a comparison with 0 together
with multiplication by a constant (leaky ReLU), sums of two units of the same group
(residual streams), max and average pooling, products and quotients by constants.
Anything else (``tanh``, ``logistic``, ``exp``, ``integer_pow`` in GELU...) between a
producing kernel and a consuming one makes :func:`scaling_spec_from_apply` raise a
``ValueError`` naming it. A grouped convolution with one input channel per group reads
channel ``c`` through output channels ``c*m .. c*m+m-1`` of its kernel: the outgoing entry
is that kernel's output axis (the repeat convention of
:class:`~symlib.symmetry.channel_scaling.ScalingSpec`, as in
:func:`~symlib.symmetry.channel_scaling.optunet_scaling_spec`). A group touching a
kernel read by several ``dot_general``/``conv`` (tied weights) is left out. A unit normalised by a
norm (channels before a LayerNorm, or before batch norm in inference form) has no exact
scaling symmetry and is left out. ``mass_paths`` are the kernels and the parameters
multiplied into a unit (norms' ``scale``), as in
:func:`~symlib.symmetry.channel_scaling.resnet20_scaling_spec`: a group whose incoming
side is a norm's ``scale`` needs it in the mass, or the mass would fall forever. Groups
are named as permutations.

**Attention** is analysed as what it is: ``dot_general`` between two activations joins
the contracted axes of queries and keys. With ``flax.linen.MultiHeadDotProductAttention``
(``DenseGeneral`` kernels ``(features, heads, head_dim)``) the derived spec permutes the
heads (one permutation shared by query, key, value and output projections), the
query/key features within a head and the value features within a head, the same
permutation in every head (per-head permutations are a larger symmetry that a
:class:`PermutationSpec` cannot express); a head-splitting ``reshape`` instead stops the
feature axes. For scaling, products of two activations are never rescaled.

**Not supported:** recurrent layers and loops (``scan``, ``while``: refused by name);
embeddings and any indexing (``gather``, ``dynamic_slice``: their axes are stopped);
permutations across a concatenation (stopped, as above); a flatten for scaling specs;
symmetries other
than permutations of whole axes (e.g. the sign symmetry of ``tanh`` units, rotations).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax.extend import core as jcore

from symlib.symmetry.channel_scaling import ScalingSpec
from symlib.symmetry.specs import PermutationSpec, flatten_params, unflatten_params

__all__ = [
    "DeriveReport",
    "UnsupportedOperationError",
    "derive_report",
    "flax_derive_report",
    "permutation_spec_from_apply",
    "permutation_spec_from_flax",
    "scaling_spec_from_apply",
    "scaling_spec_from_flax",
]


class UnsupportedOperationError(ValueError):
    """The traced model holds a primitive that the derivation cannot analyse."""


@dataclass(frozen=True)
class DeriveReport:
    """What :func:`derive_report` found.

    Attributes:
        spec: the derived :class:`PermutationSpec`.
        stopped: for every parameter axis left unpermuted, ``(path, axis) ->`` the reasons
            (operations, with the enclosing ``jit``/``custom_jvp`` names) that stopped
            its class, e.g. ``("model output",)`` or ``("reshape merges the axis with
            others (flatten)",)``; ``("size 1",)`` for an axis of length one.
    """

    spec: PermutationSpec
    stopped: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)


_UNARY = {
    "neg", "sign", "floor", "ceil", "round", "is_finite", "exp", "exp2", "log", "log1p", "expm1", "tanh",
    "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "abs",
    "sqrt", "rsqrt", "cbrt", "integer_pow", "square", "erf", "erfc", "erf_inv", "lgamma", "digamma", "not",
    "convert_element_type", "copy", "copy_p", "reduce_precision", "real", "imag", "conj", "population_count",
    "clz", "bitcast_convert_type", "stop_gradient", "optimization_barrier", "sharding_constraint",
}
_BINARY = {
    "add", "add_any", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and", "or", "xor",
    "eq", "ne", "lt", "le", "gt", "ge", "shift_left", "shift_right_logical", "shift_right_arithmetic",
    "select_n", "clamp",
}
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
# unary ops that commute with multiplication by a positive number
_HOMOGENEOUS_UNARY = {"neg", "convert_element_type", "copy", "copy_p", "reduce_precision", "abs", "stop_gradient",
                      "optimization_barrier", "sharding_constraint"}
_REDUCE = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "reduce_xor",
           "argmax", "argmin"}
_CUMULATIVE = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}
_WINDOW = {"reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window"}
_RANDOM = {"random_seed", "random_bits", "random_wrap", "random_unwrap", "random_split", "random_fold_in",
           "threefry2x32", "rng_bit_generator", "random_clone", "rng_uniform"}
_STOP_ALL = {"gather", "scatter", "scatter-add", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
             "dynamic_slice", "dynamic_update_slice", "sort", "rev", "top_k", "iota", "split",
             "select_and_scatter_add", "select_and_gather_add"}
_CALLS = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
          "remat", "checkpoint", "remat2", "custom_lin"}


def _is_literal(v) -> bool:
    return isinstance(v, jcore.Literal)


def _shape(v) -> tuple[int, ...]:
    return tuple(getattr(v.aval, "shape", ()))


class _Graph:
    """Union-find over (value, axis) nodes with stop reasons, block constraints and scaling records."""

    def __init__(self, mode: str):
        self.mode = mode  # "perm" or "scale"
        self.parent: dict = {}
        self.size: dict = {}
        self.reasons: dict = {}
        self.blocks: dict = {}
        self.keep: list = []  # keeps traced Vars alive so their ids stay unique
        self.kind: dict[int, str] = {}  # id(var) -> "data" | "param" | "const"
        self.view: dict[int, tuple[str, tuple]] = {}  # id(var) -> (param path, leaf axis of each var axis)
        self.records: list = []  # scale mode: (node, path, axis, power)
        self.unary_breaks: list = []  # scale mode: (node, name)
        self.kernels: list[str] = []
        self.origin: dict = {}  # vid -> parameter path, for values that are a parameter reshaped or broadcast
        self.multipliers: set[str] = set()  # scale mode: parameters multiplied into a unit (norms' scale)
        self.kernel_uses: dict[str, int] = {}  # scale mode: how many dot/conv read each kernel
        self.zero: set = set()  # vids of values known to be zero (literal 0 passed into a jit, its broadcasts)
        self.context: list[str] = []
        self.scopes: list[int] = [0]  # one scope per call of a subprogram (a jitted function's jaxpr is shared)
        self.next_scope = 1
        self.reduced: list = []  # scale mode: nodes of values reduced (normalisations)
        self.edges: dict[int, list[int]] = {}  # id(var) -> ids of the values computed from it
        self.kernel_inputs: set[int] = set()  # ids of the activations read by a kernel
        # perm mode, flatten: a factor of an axis (axis viewed as (outer, size, inner)) is a node
        # (vid, axis, outer, inner); every class of equal-length axes keeps its factors by
        # (outer, inner), and classes joined have their equal factors joined
        self.subs: dict = {}  # class root -> {(outer, inner): factor node}
        self.sub_of: dict = {}  # factor node -> the node of the whole axis

    def vid(self, v):
        """Identity of a traced value in the current subprogram call."""
        return (self.scopes[-1], id(v))

    def edge(self, a, b) -> None:
        if not _is_literal(a):
            self.edges.setdefault(self.vid(a), []).append(self.vid(b))

    def reaches_kernel(self, start: int) -> bool:
        seen, todo = {start}, [start]
        while todo:
            v = todo.pop()
            if v in self.kernel_inputs:
                return True
            for w in self.edges.get(v, ()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return False

    # --- union-find --------------------------------------------------------------------------
    def node(self, v, axis: int):
        key = (self.vid(v), axis)
        if key not in self.parent:
            self.keep.append(v)
            self.parent[key] = key
            self.size[key] = _shape(v)[axis]
        return key

    def factor(self, v, axis: int, outer: int, inner: int):
        """The node of the factor of axis ``axis`` of ``v`` seen as ``(outer, size, inner)``."""
        key = (self.vid(v), axis, outer, inner)
        if key not in self.parent:
            self.keep.append(v)
            self.parent[key] = key
            self.size[key] = _shape(v)[axis] // (outer * inner)
            whole = self.sub_of[key] = self.node(v, axis)
            known = self.subs.setdefault(self.find(whole), {})
            if (outer, inner) in known:
                self.union(known[(outer, inner)], key)
            else:
                known[(outer, inner)] = key
        return key

    def find(self, a):
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        self.parent[rb] = ra
        if rb in self.reasons:
            self.reasons.setdefault(ra, []).extend(self.reasons.pop(rb))
        if rb in self.blocks:
            self.blocks.setdefault(ra, set()).update(self.blocks.pop(rb))
        moved = self.subs.pop(rb, None)
        if moved:
            known = self.subs.setdefault(ra, {})
            for k, key in moved.items():
                if k in known:
                    self.union(known[k], key)  # factors are shorter than the axis: never ra's class
                else:
                    known[k] = key

    def free_factors(self, root, n: int) -> list | None:
        """The factors of an axis of length ``n`` in class ``root`` (stopped as a whole) that
        may be permuted, as ``[(size, factor root or None), ...]`` tiling the axis in C
        order; None when there are none or they overlap."""
        free = []
        for (outer, inner), key in self.subs.get(root, {}).items():
            r, size = self.find(key), n // (outer * inner)
            if size > 1 and r not in self.reasons:
                free.append((outer, size, r))
        out, pos = [], 1
        for outer, size, r in sorted(free, key=lambda f: f[0]):
            if outer < pos or outer % pos:
                return None
            if outer > pos:
                out.append((outer // pos, None))
            out.append((size, r))
            pos = outer * size
        if not out or n % pos:
            return None
        if n > pos:
            out.append((n // pos, None))
        return out

    def stop_blocked_factors(self) -> None:
        """Stop every factor of an axis stopped for another reason than the flatten itself
        (a model output, a slice...): permuting the factor would permute that axis."""
        changed = True
        while changed:
            changed = False
            for key, whole in self.sub_of.items():
                why = [r for r in self.reasons.get(self.find(whole), ()) if not r.startswith(_FLATTEN)]
                if why and self.find(key) not in self.reasons:
                    self.reasons[self.find(key)] = [f"{why[0]}, after a reshape"]
                    changed = True

    def link(self, a, i, b, j) -> None:
        """Join axis i of value a with axis j of value b when both are values of equal length."""
        if _is_literal(a) or _is_literal(b):
            return
        if _shape(a)[i] == _shape(b)[j]:
            self.union(self.node(a, i), self.node(b, j))

    def stop(self, v, axis: int, reason: str) -> None:
        if _is_literal(v) or not _shape(v):
            return
        where = f" (in {' > '.join(self.context)})" if self.context else ""
        reasons = self.reasons.setdefault(self.find(self.node(v, axis)), [])
        if reason + where not in reasons:
            reasons.append(reason + where)

    def stop_all(self, v, reason: str) -> None:
        for i in range(len(_shape(v))):
            self.stop(v, i, reason)

    def stopped(self, v, axis: int) -> bool:
        return self.find(self.node(v, axis)) in self.reasons

    def pinned(self, v) -> bool:
        """Scale mode: every axis of ``v`` of length > 1 is in a stopped class (``v`` is never rescaled)."""
        return all(self.stopped(v, i) for i, n in enumerate(_shape(v)) if n > 1)


def _kind_of(g: _Graph, invars) -> str:
    kinds = {g.kind.get(g.vid(v), "const") for v in invars if not _is_literal(v)}
    return "data" if "data" in kinds else "param" if "param" in kinds else "const"


def _reshape_groups(a: tuple[int, ...], b: tuple[int, ...]):
    """Split two shapes of equal size into aligned runs of axes with equal products."""
    groups, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        gi, gj, pa, pb = [i], [j], a[i], b[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                pa *= a[i]
                gi.append(i)
                i += 1
            else:
                pb *= b[j]
                gj.append(j)
                j += 1
        groups.append((gi, gj))
    groups.append((list(range(i, len(a))), list(range(j, len(b)))))
    return groups


def _subjaxpr(eqn):
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        sub = eqn.params.get(key)
        if isinstance(sub, jcore.ClosedJaxpr):
            return sub.jaxpr, sub.consts
        if isinstance(sub, jcore.Jaxpr):
            return sub, ()
    return None, None


def _elementwise_perm(g: _Graph, eqn) -> None:
    out = eqn.outvars[0]
    nd = len(_shape(out))
    for v in eqn.invars:
        if not _is_literal(v) and len(_shape(v)) == nd:
            for i in range(nd):
                g.link(v, i, out, i)
    for o in eqn.outvars[1:]:
        for i in range(min(nd, len(_shape(o)))):
            g.link(o, i, out, i)


def _literal_value(v):
    try:
        return float(np.asarray(v.val))
    except (TypeError, ValueError):
        return None


def _zero(g: _Graph, v) -> bool:
    """``v`` is a literal zero or a value known to be all zeros (a broadcast of one)."""
    return (_is_literal(v) and _literal_value(v) == 0.0) or g.vid(v) in g.zero


def _scalar_const(g: _Graph, v) -> bool:
    return _is_literal(v) or (not _shape(v) and g.kind.get(g.vid(v)) != "data")


def _break(g: _Graph, eqn, reason: str) -> None:
    for v in list(eqn.invars) + list(eqn.outvars):
        g.stop_all(v, reason)


def _elementwise_scale(g: _Graph, eqn, name: str) -> None:
    out = eqn.outvars[0]
    nd = len(_shape(out))
    ins = list(eqn.invars)
    if name == "select_n":
        ins = ins[1:]  # the predicate: a comparison with 0 is invariant to positive scaling
    if name == "clamp":
        lo, x, hi = ins
        if _is_literal(lo) and _literal_value(lo) == 0.0 and _is_literal(hi) and _literal_value(hi) == math.inf:
            for i in range(nd):
                g.link(x, i, out, i)
        else:
            _break(g, eqn, "clamp")
        return
    arrays = [v for v in ins if not _scalar_const(g, v)]
    consts = [v for v in ins if _scalar_const(g, v)]
    if name in _COMPARE:
        if any(_zero(g, c) for c in consts + arrays) or not consts:
            for a in arrays[1:]:
                for i in range(nd):
                    g.link(a, i, arrays[0], i)
        else:
            for a in arrays:
                g.stop_all(a, f"{name} with a non-zero constant")
        return  # the boolean result is invariant
    if name in ("mul", "div"):
        if len(arrays) == 1 and (name == "mul" or arrays[0] is ins[0]):
            for i in range(nd):
                g.link(arrays[0], i, out, i)
            return
        if len(arrays) == 2:
            a, b = arrays
            free = [v for v in (a, b) if not g.pinned(v)]
            if name == "mul" and len(free) == 1:
                other = b if free[0] is a else a
                if g.kind.get(g.vid(other)) == "data" and g.vid(free[0]) in g.origin:
                    g.multipliers.add(g.origin[g.vid(free[0])])
                    g.origin[g.vid(out)] = g.origin[g.vid(free[0])]
                elif g.vid(free[0]) in g.origin:
                    g.origin[g.vid(out)] = g.origin[g.vid(free[0])]
                for i in range(nd):
                    g.link(free[0], i, out, i)
                return
            if name == "mul" and len(free) == 2 and {g.kind.get(g.vid(a)), g.kind.get(g.vid(b))} == {"param", "data"}:
                # a per-channel parameter (a norm's scale) times an activation: the product takes the
                # parameter's scaling and the activation may not be rescaled
                data, par = (a, b) if g.kind.get(g.vid(a)) == "data" else (b, a)
                g.stop_all(data, "multiplied by a parameter")
                if g.vid(par) in g.origin:
                    g.multipliers.add(g.origin[g.vid(par)])
                for i in range(nd):
                    g.link(par, i, out, i)
                return
            if name == "div" and free == [a]:
                for i in range(nd):
                    g.link(a, i, out, i)
                return
        _break(g, eqn, f"{name} of two values that would both be rescaled")
        return
    if name in ("add", "add_any", "sub", "max", "min", "select_n"):
        arrays = [a for a in arrays if not _zero(g, a)]
        if any(not _zero(g, c) for c in consts):
            _record_activation(g, arrays, out, f"{name} with a non-zero constant")
            _break(g, eqn, f"{name} with a non-zero constant")
            return
        for a in arrays:
            if g.kind.get(g.vid(a)) == "const" and _shape(a):
                _break(g, eqn, f"{name} with a constant array")
                return
        for a in arrays:
            if len(_shape(a)) == nd:
                for i in range(nd):
                    g.link(a, i, out, i)
        return
    _break(g, eqn, name)


def _record_activation(g: _Graph, xs, out, name: str) -> None:
    """Scale mode: remember that activations ``xs`` went through ``name``, not positively
    homogeneous, for the refusal of :func:`scaling_spec_from_apply`."""
    label = name + (f" (in {' > '.join(g.context)})" if g.context else "")
    for x in xs:
        if not _is_literal(x) and g.kind.get(g.vid(x)) == "data" and _shape(x):
            g.unary_breaks.append((g.node(x, len(_shape(x)) - 1), g.vid(out), label))


def _unary_scale(g: _Graph, eqn, name: str) -> None:
    x, out = eqn.invars[0], eqn.outvars[0]
    if name in _HOMOGENEOUS_UNARY and len(_shape(x)) == len(_shape(out)):
        for i in range(len(_shape(out))):
            g.link(x, i, out, i)
        return
    _record_activation(g, [x], out, name)
    _break(g, eqn, name)


def _dot(g: _Graph, eqn) -> None:
    lhs, rhs = eqn.invars
    out = eqn.outvars[0]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lfree = [i for i in range(len(_shape(lhs))) if i not in lc and i not in lb]
    rfree = [i for i in range(len(_shape(rhs))) if i not in rc and i not in rb]
    out_axes = list(range(len(_shape(out))))
    ob, ol, orr = out_axes[:len(lb)], out_axes[len(lb):len(lb) + len(lfree)], out_axes[len(lb) + len(lfree):]
    if g.mode == "perm":
        for a, b in zip(lc, rc):
            g.link(lhs, a, rhs, b)
        for k, (a, b) in enumerate(zip(lb, rb)):
            g.link(lhs, a, rhs, b)
            g.link(lhs, a, out, ob[k])
        for a, o in zip(lfree, ol):
            g.link(lhs, a, out, o)
        for b, o in zip(rfree, orr):
            g.link(rhs, b, out, o)
        return
    views = {g.vid(v): g.view.get(g.vid(v)) for v in (lhs, rhs)}
    if g.kind.get(g.vid(lhs)) == "data" and views[g.vid(rhs)] and not lb:
        data, kern, dc, kc, dfree, kfree, odata, okern = lhs, rhs, lc, rc, lfree, rfree, ol, orr
    elif g.kind.get(g.vid(rhs)) == "data" and views[g.vid(lhs)] and not lb:
        data, kern, dc, kc, dfree, kfree, odata, okern = rhs, lhs, rc, lc, rfree, lfree, orr, ol
    else:
        _break(g, eqn, "dot_general not between an activation and a parameter kernel")
        return
    path, leaf_axes = g.view[g.vid(kern)]
    g.kernel_inputs.add(g.vid(data))
    g.kernel_uses[path] = g.kernel_uses.get(path, 0) + 1
    if path not in g.kernels:
        g.kernels.append(path)
    for a, b in zip(dc, kc):
        g.records.append((g.node(data, a), path, leaf_axes[b], -1))
    for a, o in zip(dfree, odata):
        g.link(data, a, out, o)
    for b, o in zip(kfree, okern):
        g.records.append((g.node(out, o), path, leaf_axes[b], 1))


def _conv(g: _Graph, eqn) -> None:
    lhs, rhs = eqn.invars
    out = eqn.outvars[0]
    dn = eqn.params["dimension_numbers"]
    ls, rs, os_ = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    groups = eqn.params["feature_group_count"]
    if eqn.params.get("batch_group_count", 1) != 1:
        _break(g, eqn, "convolution with batch_group_count > 1")
        return
    g.link(lhs, ls[0], out, os_[0])
    for v, spec in ((lhs, ls), (rhs, rs), (out, os_)):
        for ax in spec[2:]:
            g.stop(v, ax, "convolution window (spatial axis)")
    if g.mode == "perm":
        g.link(rhs, rs[0], out, os_[1])
        if groups == 1:
            g.link(lhs, ls[1], rhs, rs[1])
        else:
            g.blocks.setdefault(g.find(g.node(out, os_[1])), set()).add(int(groups))
            g.stop(lhs, ls[1], f"input channels of a grouped convolution ({groups} groups)")
            g.stop(rhs, rs[1], f"input channels of a grouped convolution ({groups} groups)")
        return
    view = g.view.get(g.vid(rhs))
    if g.kind.get(g.vid(lhs)) != "data" or not view:
        _break(g, eqn, "convolution whose kernel is not a parameter")
        return
    path, leaf_axes = view
    g.kernel_inputs.add(g.vid(lhs))
    g.kernel_uses[path] = g.kernel_uses.get(path, 0) + 1
    if path not in g.kernels:
        g.kernels.append(path)
    g.records.append((g.node(out, os_[1]), path, leaf_axes[rs[0]], 1))
    if groups == 1:
        g.records.append((g.node(lhs, ls[1]), path, leaf_axes[rs[1]], -1))
    elif _shape(rhs)[rs[1]] == 1:
        g.records.append((g.node(lhs, ls[1]), path, leaf_axes[rs[0]], -1))
    else:
        g.stop(lhs, ls[1], f"input channels of a grouped convolution ({groups} groups)")


_FLATTEN = "reshape merges the axis with others (flatten) or splits it"


def _merge_factors(g: _Graph, parts, group: list, big: list, whole, axis: int) -> None:
    """Perm mode: the axes ``group`` of ``parts`` are merged into (or split from) axis
    ``axis`` of ``whole``; each part of length > 1 is joined with its factor of the whole
    axis (C order), which as a whole cannot be permuted."""
    shape = _shape(parts)
    for i in big:
        outer = math.prod(shape[k] for k in group if k < i)
        inner = math.prod(shape[k] for k in group if k > i)
        g.union(g.node(parts, i), g.factor(whole, axis, outer, inner))
    g.stop(whole, axis, _FLATTEN)


def _structural(g: _Graph, eqn, name: str) -> bool:
    """Shape operations shared by both modes; False if ``name`` is not one of them."""
    p = eqn.params
    ins, outs = eqn.invars, eqn.outvars
    out = outs[0] if outs else None
    if name == "broadcast_in_dim":
        x = ins[0]
        for i, d in enumerate(p["broadcast_dimensions"]):
            g.link(x, i, out, d)
        if _zero(g, x):
            g.zero.add(g.vid(out))
        elif g.mode == "scale" and not _shape(x):
            g.stop_all(out, "broadcast of a non-zero scalar")
        return True
    if name == "reshape":
        x = ins[0]
        try:
            groups = _reshape_groups(_shape(x), _shape(out))
        except IndexError:  # zero-sized axes
            _break(g, eqn, "reshape of an empty array")
            return True
        for gi, gj in groups:
            big_i = [i for i in gi if _shape(x)[i] > 1]
            big_j = [j for j in gj if _shape(out)[j] > 1]
            if len(big_i) == 1 and len(big_j) == 1:
                g.link(x, big_i[0], out, big_j[0])
            elif g.mode == "perm" and len(big_i) > 1 and len(big_j) == 1:  # merge (flatten)
                _merge_factors(g, x, gi, big_i, out, big_j[0])
            elif g.mode == "perm" and len(big_i) == 1 and len(big_j) > 1:  # split
                _merge_factors(g, out, gj, big_j, x, big_i[0])
            else:
                for i in big_i:
                    g.stop(x, i, "reshape merges the axis with others (flatten) or splits it")
                for j in big_j:
                    g.stop(out, j, "reshape merges the axis with others (flatten) or splits it")
        return True
    if name == "squeeze":
        x = ins[0]
        kept = [i for i in range(len(_shape(x))) if i not in [d % len(_shape(x)) for d in p["dimensions"]]]
        for o, i in enumerate(kept):
            g.link(x, i, out, o)
        return True
    if name == "expand_dims":
        x = ins[0]
        dims = sorted(d % len(_shape(out)) for d in p["dimensions"])
        kept = [o for o in range(len(_shape(out))) if o not in dims]
        for i, o in enumerate(kept):
            g.link(x, i, out, o)
        return True
    if name == "transpose":
        x = ins[0]
        for o, i in enumerate(p["permutation"]):
            g.link(x, i, out, o)
        return True
    if name in _REDUCE:
        x = ins[0]
        axes = sorted(a % max(len(_shape(x)), 1) for a in p["axes"])
        kept = [i for i in range(len(_shape(x))) if i not in axes]
        for o, i in enumerate(kept):
            g.link(x, i, out, o)
        if name in ("argmax", "argmin"):
            for a in axes:
                g.stop(x, a, f"{name} returns positions along the axis")
        elif g.mode == "scale":
            for a in axes:
                g.stop(x, a, f"{name} over the axis")
            g.reduced.extend(g.node(x, i) for i in range(len(_shape(x))))
        return True
    if name in _CUMULATIVE:
        x = ins[0]
        for i in range(len(_shape(x))):
            if i == p["axis"] % len(_shape(x)):
                g.stop(x, i, f"{name} along the axis")
                g.stop(out, i, f"{name} along the axis")
            else:
                g.link(x, i, out, i)
        return True
    if name in _WINDOW:
        n = len(outs)
        operands, inits = ins[:n], ins[n:]
        if g.mode == "scale" and any(not (_is_literal(c) and _literal_value(c) in (0.0, -math.inf, math.inf))
                                     for c in inits):
            _break(g, eqn, f"{name} with a non-zero initial value")
        for x, o in zip(operands, outs):
            for i in range(len(_shape(x))):
                trivial = (p["window_dimensions"][i] == 1 and p["window_strides"][i] == 1
                           and tuple(p["padding"][i]) == (0, 0)
                           and (p.get("base_dilation") or (1,) * len(_shape(x)))[i] == 1)
                if trivial:
                    g.link(x, i, o, i)
                else:
                    g.stop(x, i, "pooling window")
                    g.stop(o, i, "pooling window")
        return True
    if name == "concatenate":
        d = p["dimension"]
        for x in ins:
            for i in range(len(_shape(x))):
                if i == d:
                    g.stop(x, i, "concatenate (the joined axis would need a block-diagonal permutation)")
                else:
                    g.link(x, i, out, i)
        g.stop(out, d, "concatenate (the joined axis would need a block-diagonal permutation)")
        return True
    if name == "pad":
        x, value = ins
        if g.mode == "scale" and not (_is_literal(value) and _literal_value(value) == 0.0):
            _break(g, eqn, "pad with a non-zero value")
        for i, cfg in enumerate(p["padding_config"]):
            if tuple(cfg) == (0, 0, 0):
                g.link(x, i, out, i)
            else:
                g.stop(x, i, "pad")
                g.stop(out, i, "pad")
        return True
    if name == "slice":
        x = ins[0]
        strides = p.get("strides") or (1,) * len(_shape(x))
        for i, n in enumerate(_shape(x)):
            if p["start_indices"][i] == 0 and p["limit_indices"][i] == n and strides[i] == 1:
                g.link(x, i, out, i)
            else:
                g.stop(x, i, "slice")
                g.stop(out, i, "slice")
        return True
    if name in _STOP_ALL:
        _break(g, eqn, name)
        return True
    return False


def _run(g: _Graph, jaxpr, consts_kind: str = "const") -> None:
    for v in jaxpr.constvars:
        g.kind[g.vid(v)] = consts_kind
        g.keep.append(v)
        g.stop_all(v, "constant array captured by the function")
    for eqn in jaxpr.eqns:
        _eqn(g, eqn)


def _eqn(g: _Graph, eqn) -> None:
    name = eqn.primitive.name
    kind = _kind_of(g, eqn.invars)
    for o in eqn.outvars:
        g.kind[g.vid(o)] = "data" if name in _RANDOM else kind
        g.keep.append(o)
        for v in eqn.invars:
            g.edge(v, o)
    if name in _RANDOM or name in ("debug_callback", "debug_print"):
        return
    if name == "cond":
        # every branch maps the operands to the results; the branch index is a scalar
        from types import SimpleNamespace

        for k, branch in enumerate(eqn.params["branches"]):
            view = SimpleNamespace(invars=list(eqn.invars[1:]), outvars=list(eqn.outvars), primitive=eqn.primitive)
            _call(g, view, branch.jaxpr, branch.consts, f"cond branch {k}")
        return
    if name in _CALLS:
        sub, consts = _subjaxpr(eqn)
        if sub is None:
            raise UnsupportedOperationError(f"cannot analyse primitive {name!r}: no subprogram found")
        _call(g, eqn, sub, consts, eqn.params.get("name", name))
        return
    if name in ("convert_element_type", "transpose") and g.vid(eqn.invars[0]) in g.view:
        path, axes = g.view[g.vid(eqn.invars[0])]
        g.view[g.vid(eqn.outvars[0])] = (path, axes if name == "convert_element_type"
                                      else tuple(axes[i] for i in eqn.params["permutation"]))
    if name in ("convert_element_type", "reshape", "squeeze", "expand_dims", "transpose", "copy", "copy_p") \
            and _zero(g, eqn.invars[0]):
        g.zero.add(g.vid(eqn.outvars[0]))
    if name in ("convert_element_type", "transpose", "reshape", "broadcast_in_dim", "squeeze", "expand_dims") \
            and not _is_literal(eqn.invars[0]) and g.vid(eqn.invars[0]) in g.origin:
        g.origin[g.vid(eqn.outvars[0])] = g.origin[g.vid(eqn.invars[0])]
    if name == "dot_general":
        _dot(g, eqn)
    elif name == "conv_general_dilated":
        _conv(g, eqn)
    elif _structural(g, eqn, name):
        pass
    elif name in _UNARY:
        if g.mode == "perm":
            _elementwise_perm(g, eqn)
        else:
            _unary_scale(g, eqn, name)
    elif name in _BINARY:
        if g.mode == "perm":
            _elementwise_perm(g, eqn)
        else:
            _elementwise_scale(g, eqn, name)
    else:
        raise UnsupportedOperationError(
            f"cannot analyse primitive {name!r}" + (f" (in {' > '.join(g.context)})" if g.context else "")
            + ": the symmetry derivation knows elementwise operations, dot_general, conv_general_dilated, "
              "shape operations, reductions, pooling jit/custom_jvp subprograms and cond; loops "
              "(scan, while: recurrent layers) and collectives are not supported")


def _call(g: _Graph, eqn, sub, consts, label: str) -> None:
    if len(sub.invars) != len(eqn.invars) or len(sub.outvars) != len(eqn.outvars):
        raise UnsupportedOperationError(f"cannot analyse primitive {eqn.primitive.name!r}: its subprogram "
                                        f"does not match its operands")
    outer_in = [None if _is_literal(v) else (g.vid(v), g.kind.get(g.vid(v), "const"),
                                               (g.view.get(g.vid(v)), g.origin.get(g.vid(v))),
                                               [g.node(v, i) for i in range(len(_shape(v)))]) for v in eqn.invars]
    outer_out = [(g.vid(v), [g.node(v, i) for i in range(len(_shape(v)))]) for v in eqn.outvars]
    literal_zero = [_zero(g, v) for v in eqn.invars if _is_literal(v)]
    zero_in = [g.vid(v) in g.zero for v in eqn.invars]
    g.scopes.append(g.next_scope)
    g.next_scope += 1
    g.context.append(str(label))
    try:
        for inner, outer in zip(sub.invars, outer_in):
            g.keep.append(inner)
            if outer is None:
                g.kind[g.vid(inner)] = "const"
                if literal_zero.pop(0):
                    g.zero.add(g.vid(inner))
                if _shape(inner) and g.mode == "scale":
                    g.stop_all(inner, "literal")
                continue
            vid, kind, (view, origin), nodes = outer
            g.kind[g.vid(inner)] = kind
            if zero_in[list(sub.invars).index(inner)]:
                g.zero.add(g.vid(inner))
            if view:
                g.view[g.vid(inner)] = view
            if origin:
                g.origin[g.vid(inner)] = origin
            g.edges.setdefault(vid, []).append(g.vid(inner))
            for i, nd in enumerate(nodes):
                g.union(g.node(inner, i), nd)
        _run(g, sub)
        inner_out = []
        for inner in sub.outvars:
            if _is_literal(inner):
                inner_out.append((None, _literal_value(inner), None, []))
            else:
                inner_out.append((g.vid(inner), None, (g.view.get(g.vid(inner)), g.origin.get(g.vid(inner))),
                                  [g.node(inner, i) for i in range(len(_shape(inner)))]))
    finally:
        g.context.pop()
        g.scopes.pop()
    for (vid, value, view, nodes), (ovid, onodes), outer in zip(inner_out, outer_out, eqn.outvars):
        if vid is None:
            if g.mode == "scale" and value != 0.0:
                g.stop_all(outer, "literal result")
            continue
        g.edges.setdefault(vid, []).append(ovid)
        view, origin = view
        if view:
            g.view[ovid] = view
        if origin:
            g.origin[ovid] = origin
        for a, b in zip(nodes, onodes):
            g.union(a, b)


# --- tracing -------------------------------------------------------------------------------------


def _trace(mode: str, fn: Callable, params: Mapping, args: tuple):
    """Trace ``fn(params, *args) -> (output, state)`` and build the graph.

    ``state`` is a flat dict of paths of ``params`` to updated values (flax's mutable
    collections): their axes are tied to the parameter's instead of stopped as outputs.
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a (nested) dict of arrays, got {type(params).__name__}")
    flat = flatten_params(params)
    paths = list(flat)
    nested = any(isinstance(v, Mapping) for v in params.values())
    arg_leaves, arg_tree = jax.tree_util.tree_flatten(args)

    state_keys: list = []

    def wrapped(leaves, a_leaves):
        p = dict(zip(paths, leaves))
        p = unflatten_params(p) if nested else p
        out, state = fn(p, *jax.tree_util.tree_unflatten(arg_tree, a_leaves))
        state_keys[:] = list(state)
        return out, [state[k] for k in state_keys]

    closed, (output, _) = jax.make_jaxpr(wrapped, return_shape=True)([flat[k] for k in paths], list(arg_leaves))
    jaxpr = closed.jaxpr
    g = _Graph(mode)
    pvars = jaxpr.invars[:len(paths)]
    for path, v in zip(paths, pvars):
        g.kind[g.vid(v)] = "param"
        g.view[g.vid(v)] = (path, tuple(range(len(_shape(v)))))
        g.origin[g.vid(v)] = path
        for i in range(len(_shape(v))):
            g.node(v, i)
    for v in jaxpr.invars[len(paths):]:
        g.kind[g.vid(v)] = "data"
        g.stop_all(v, "model input")
    _run(g, jaxpr)
    n_out = len(jax.tree_util.tree_leaves(output))
    state_paths = state_keys
    for k, v in enumerate(jaxpr.outvars):
        if _is_literal(v):
            continue
        if k >= n_out and state_paths[k - n_out] in paths:
            pv = pvars[paths.index(state_paths[k - n_out])]
            for i in range(len(_shape(v))):
                g.link(v, i, pv, i)
        else:
            g.stop_all(v, "model output")
    return g, flat, paths, pvars


def _plain(apply_fn: Callable, kwargs: Mapping) -> Callable:
    def fn(p, *a):
        return apply_fn(p, *a, **kwargs), {}
    return fn


def _class_names(members: dict, ndims: Mapping[str, int], prefix: str | None = None) -> dict:
    names, used = {}, set()
    for root, where in members.items():
        outputs = [(p, a) for p, a in where if a == ndims[p] - 1]
        path, axis = outputs[0] if outputs else where[0]
        if prefix and path.startswith(prefix):
            path = path[len(prefix):]
        base = "P_" + (path.rsplit("/", 1)[0] if outputs and "/" in path else f"{path}_{axis}")
        name, k = base, 1
        while name in used:
            k += 1
            name = f"{base}_{k}"
        used.add(name)
        names[root] = name
    return names


def _perm_report(g: _Graph, flat: Mapping, paths: list, pvars: list, keep_prefix: str | None = None) -> DeriveReport:
    members: dict = {}
    stopped: dict = {}
    views: dict = {}
    g.stop_blocked_factors()
    for path, v in zip(paths, pvars):  # factors of one axis that overlap (two reshapes): none of them moves
        for i, n in enumerate(_shape(v)):
            root = g.find(g.node(v, i))
            if root in g.reasons and g.subs.get(root) and g.free_factors(root, n) is None:
                for key in g.subs[root].values():
                    if g.find(key) not in g.reasons:
                        g.reasons[g.find(key)] = ["an axis reshaped in incompatible ways"]
    g.stop_blocked_factors()
    for path, v in zip(paths, pvars):
        view = []  # (length, class root or None) per axis of the spec's view of the parameter
        for i, n in enumerate(_shape(v)):
            root = g.find(g.node(v, i))
            factors = g.free_factors(root, n) if root in g.reasons else [(n, root)]
            if root in g.reasons and factors is None:
                stopped[(path, i)] = tuple(g.reasons[root])
                factors = [(n, None)]
            elif n == 1:
                stopped[(path, i)] = ("size 1",)
                factors = [(n, None)]
            view.extend(factors)
        if len(view) != len(_shape(v)):
            views[path] = tuple(size for size, _ in view)
        for k, (_, root) in enumerate(view):
            if root is not None:
                members.setdefault(root, []).append((path, k))
    blocks = {}
    for root, where in list(members.items()):
        gs = g.blocks.get(root, set())
        if len(gs) > 1 and any(max(gs) % q for q in gs):
            for pa in where:
                stopped[pa] = (f"grouped convolutions with incompatible group counts {sorted(gs)}",)
            del members[root]
        elif gs:
            blocks[root] = max(gs)
    ndims = {path: len(views.get(path, _shape(v))) for path, v in zip(paths, pvars)}
    names = _class_names(members, ndims, keep_prefix)
    axes = {path: [None] * ndims[path] for path in paths}
    for root, where in members.items():
        for path, i in where:
            axes[path][i] = names[root]
    spec_blocks = {names[r]: b for r, b in blocks.items() if b > 1}
    if keep_prefix is not None:
        strip = len(keep_prefix)
        axes = {p[strip:]: a for p, a in axes.items() if p.startswith(keep_prefix)}
        views = {p[strip:]: a for p, a in views.items() if p.startswith(keep_prefix)}
        stopped = {(p[strip:], i): r for (p, i), r in stopped.items() if p.startswith(keep_prefix)}
        used = {n for a in axes.values() for n in a if n}
        spec_blocks = {n: b for n, b in spec_blocks.items() if n in used}
    return DeriveReport(PermutationSpec(axes, blocks=spec_blocks, views=views), stopped)


def derive_report(apply_fn: Callable, params: Mapping, *example_args, **example_kwargs) -> DeriveReport:
    """Derive the permutation spec of ``apply_fn(params, *example_args, **example_kwargs)``
    and why each unpermuted parameter axis was stopped (module docstring).

    Args:
        apply_fn: ``apply_fn(params, *args, **kwargs)``, a JAX-traceable function.
        params: the parameters (nested or flat dict of arrays); the spec uses their flat
            ``"a/b/c"`` paths (:func:`~symlib.symmetry.specs.flatten_params`).
        *example_args: example inputs (arrays or pytrees of arrays; only shapes matter).
        **example_kwargs: passed to ``apply_fn`` unchanged (closed over, not traced).

    Returns:
        A :class:`DeriveReport`.

    Raises:
        UnsupportedOperationError: naming a primitive that cannot be analysed.
        TypeError: if ``params`` is not a dict.
    """
    g, flat, paths, pvars = _trace("perm", _plain(apply_fn, example_kwargs), params, example_args)
    return _perm_report(g, flat, paths, pvars)


def permutation_spec_from_apply(apply_fn: Callable, params: Mapping, *example_args, **example_kwargs) -> PermutationSpec:
    """The :class:`PermutationSpec` of ``apply_fn(params, *example_args)``, derived from its jaxpr.

    Args and raises as for :func:`derive_report`; this returns its ``spec``.
    """
    return derive_report(apply_fn, params, *example_args, **example_kwargs).spec


def _flax_fn(module, variables: Mapping, kwargs: dict):
    kwargs = dict(kwargs)
    mutable = kwargs.pop("mutable", False)
    rngs = kwargs.pop("rngs", None)
    full = isinstance(variables.get("params"), Mapping)
    tree = dict(variables) if full else {"params": variables}

    def fn(v, *a):
        res = module.apply(v, *a, rngs=rngs, mutable=mutable, **kwargs)
        if mutable is False:
            return res, {}
        out, updates = res
        return out, flatten_params(dict(updates))

    return fn, tree, (None if full else "params/")


def _check_flax(module) -> None:
    import flax.linen as nn  # lazily: the rest of symlib does not need flax.linen

    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a flax.linen.Module, got {type(module).__name__}")


def flax_derive_report(module, variables: Mapping, *example_args, **example_kwargs) -> DeriveReport:
    """:func:`derive_report` for a ``flax.linen`` module (see :func:`permutation_spec_from_flax`)."""
    _check_flax(module)
    fn, tree, prefix = _flax_fn(module, variables, example_kwargs)
    g, flat, paths, pvars = _trace("perm", fn, tree, example_args)
    return _perm_report(g, flat, paths, pvars, keep_prefix=prefix)


def permutation_spec_from_flax(module, variables: Mapping, *example_args, **example_kwargs) -> PermutationSpec:
    """The :class:`PermutationSpec` of a ``flax.linen`` module, traced through ``module.apply``.

    Args:
        module: a ``flax.linen.Module``.
        variables: either its ``params`` (the spec then has their flat paths,
            ``"Dense_0/kernel"``) or the whole variables dict ``{"params": ...,
            "batch_stats": ...}`` (paths ``"params/Dense_0/kernel"``,
            ``"batch_stats/BatchNorm_0/mean"``: the running statistics are permuted with
            their channels).
        *example_args: example inputs of ``module.__call__``.
        **example_kwargs: ``rngs`` and ``mutable`` go to ``module.apply`` (with
            ``mutable=["batch_stats"]`` the updated statistics are tied to the stored
            ones); the rest to ``module.__call__`` (e.g. ``train=True``).

    Returns:
        The derived :class:`PermutationSpec`.

    Raises:
        TypeError: if ``module`` is not a flax.linen Module.
        UnsupportedOperationError: naming a primitive that cannot be analysed.
    """
    return flax_derive_report(module, variables, *example_args, **example_kwargs).spec


def _scaling_from_graph(g: _Graph, flat: Mapping, paths: list, pvars: list, keep_prefix: str | None = None) -> ScalingSpec:
    entries: dict = {}
    for path, v in zip(paths, pvars):
        if path in g.kernels:
            continue  # kernels enter through records only
        for i in range(len(_shape(v))):
            root = g.find(g.node(v, i))
            entries.setdefault(root, []).append((path, i, 1))
    for nd, path, axis, power in g.records:
        entries.setdefault(g.find(nd), []).append((path, axis, power))
    reduced = {g.find(nd) for nd in g.reduced}
    for nd, out_id, label in g.unary_breaks:
        root = g.find(nd)
        reasons = g.reasons.get(root, [])
        incoming = sorted((p for p, _, s in entries.get(root, ()) if s == 1), key=lambda p: p not in g.kernels)
        if (incoming and root not in reduced and not any(r.startswith("model output") for r in reasons)
                and g.reaches_kernel(out_id)):
            raise ValueError(f"no scaling symmetry: the units produced by {incoming[0]!r} go through "
                             f"{label!r}, which is not positively homogeneous (only ReLU, leaky ReLU, max/average "
                             f"pooling and sums keep the scaling symmetry)")
    shared = {p for p, n in g.kernel_uses.items() if n > 1}
    groups = {}
    for root, ents in entries.items():
        if root in g.reasons or g.size[root] == 1:
            continue
        if any(p in shared for p, _, _ in ents):
            continue  # a kernel read twice (tied weights): each group would rescale it for both uses
        if not any(s == 1 for _, _, s in ents) or not any(s == -1 for _, _, s in ents):
            continue
        groups[root] = tuple(dict.fromkeys(ents))
    order = {p: k for k, p in enumerate(paths)}
    ranked = sorted(groups, key=lambda r: min(order[p] for p, _, s in groups[r] if s == 1))
    names = _class_names({r: [(p, a) for p, a, s in groups[r] if s == 1] for r in ranked},
                         {p: np.ndim(leaf) for p, leaf in flat.items()}, keep_prefix)
    strip = (lambda p: p[len(keep_prefix):]) if keep_prefix else (lambda p: p)
    out = {names[r]: tuple((strip(p), a, s) for p, a, s in sorted(groups[r], key=lambda e: (-e[2], order[e[0]])))
           for r in ranked}
    mass = tuple(strip(p) for p in paths if p in g.kernels or p in g.multipliers)
    return ScalingSpec(groups=out, mass_paths=mass)


def scaling_spec_from_apply(apply_fn: Callable, params: Mapping, *example_args, **example_kwargs) -> ScalingSpec:
    """The positive-scaling symmetries of a ReLU network ``apply_fn(params, *example_args)``.

    Every hidden unit produced by a kernel (``+1`` on the kernel's output axis, its bias,
    or a norm's ``scale`` and ``bias`` after normalisation) and read by kernels (``-1`` on
    their input axis) through positively homogeneous operations only (ReLU, leaky ReLU,
    pooling, residual sums) is a group (module docstring); ``mass_paths`` are the kernels
    and the norms' ``scale``.

    Args:
        apply_fn, params, example_args, example_kwargs: as for :func:`derive_report`.

    Returns:
        The derived :class:`ScalingSpec` (group names as in the permutation spec).

    Raises:
        ValueError: naming the activation when a hidden unit goes through one that is not
            positively homogeneous (``tanh``, ``logistic``, GELU's ``integer_pow``...).
        UnsupportedOperationError: naming a primitive that cannot be analysed.
    """
    g, flat, paths, pvars = _trace("scale", _plain(apply_fn, example_kwargs), params, example_args)
    return _scaling_from_graph(g, flat, paths, pvars)


def scaling_spec_from_flax(module, params: Mapping, *example_args, **example_kwargs) -> ScalingSpec:
    """:func:`scaling_spec_from_apply` for a ``flax.linen`` module (arguments as for
    :func:`permutation_spec_from_flax`)."""
    _check_flax(module)
    fn, tree, prefix = _flax_fn(module, params, example_kwargs)
    g, flat, paths, pvars = _trace("scale", fn, tree, example_args)
    return _scaling_from_graph(g, flat, paths, pvars, keep_prefix=prefix)
