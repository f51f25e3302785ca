"""The graph of :mod:`symlib.symmetry.derive`: a union-find over the (value, axis) nodes of a
traced program, with stop reasons, block constraints, factors of flattened axes and the
scaling records; the primitive sets the rules dispatch on."""
from __future__ import annotations

from dataclasses import dataclass, field

from jax.extend import core as jcore

from symlib.symmetry.specs import PermutationSpec



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


UNARY = {
    "neg", "sign", "floor", "ceil", "round", "is_finite", "exp", "exp2", "log", "log1p", "expm1", "tanh",
    "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "abs",
    "sqrt", "rsqrt", "cbrt", "integer_pow", "square", "erf", "erfc", "erf_inv", "lgamma", "digamma", "not",
    "convert_element_type", "copy", "copy_p", "reduce_precision", "real", "imag", "conj", "population_count",
    "clz", "bitcast_convert_type", "stop_gradient", "optimization_barrier", "sharding_constraint",
}
BINARY = {
    "add", "add_any", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and", "or", "xor",
    "eq", "ne", "lt", "le", "gt", "ge", "shift_left", "shift_right_logical", "shift_right_arithmetic",
    "select_n", "clamp",
}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
# unary ops that commute with multiplication by a positive number
HOMOGENEOUS_UNARY = {"neg", "convert_element_type", "copy", "copy_p", "reduce_precision", "abs", "stop_gradient",
                      "optimization_barrier", "sharding_constraint"}
REDUCE = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "reduce_xor",
           "argmax", "argmin"}
CUMULATIVE = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}
WINDOW = {"reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window"}
RANDOM = {"random_seed", "random_bits", "random_wrap", "random_unwrap", "random_split", "random_fold_in",
           "threefry2x32", "rng_bit_generator", "random_clone", "rng_uniform"}
STOP_ALL = {"gather", "scatter", "scatter-add", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
             "dynamic_slice", "dynamic_update_slice", "sort", "rev", "top_k", "iota", "split",
             "select_and_scatter_add", "select_and_gather_add"}
CALLS = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
          "remat", "checkpoint", "remat2", "custom_lin"}


def is_literal(v) -> bool:
    return isinstance(v, jcore.Literal)


def aval_shape(v) -> tuple[int, ...]:
    return tuple(getattr(v.aval, "shape", ()))


class Graph:
    """Union-find over (value, axis) nodes with stop reasons, block constraints and scaling records."""

    def __init__(self, mode: str):
        self.mode = mode  # "perm" or "scale"
        self.program = None  # the traced ClosedJaxpr (set by trace_graph)
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
        self.statistics: dict = {}  # scale mode: id of a reduction over its input's last axis -> id of the input
        self.edges: dict[int, list[int]] = {}  # id(var) -> ids of the values computed from it
        self.kernel_inputs: set[int] = set()  # ids of the activations read by a kernel
        # flatten: a factor of an axis (axis viewed as (outer, size, inner)) is a node
        # (vid, axis, outer, inner); every class of equal-length axes keeps its factors by
        # (outer, inner), and classes joined have their equal factors joined
        self.subs: dict = {}  # class root -> {(outer, inner): factor node}
        self.sub_of: dict = {}  # factor node -> the node of the whole axis

    def vid(self, v):
        """Identity of a traced value in the current subprogram call."""
        return (self.scopes[-1], id(v))

    def edge(self, a, b) -> None:
        if not is_literal(a):
            self.edges.setdefault(self.vid(a), []).append(self.vid(b))

    def feeds_statistics_only(self, vid) -> bool:
        """Scale mode: every use of the value ``vid`` is a reduction over its last axis (a
        norm's statistic, such as an RMSNorm's mean of squares)."""
        uses = self.edges.get(vid, ())
        return bool(uses) and all(self.statistics.get(w) == vid for w in uses)

    def stop_reduced_part(self, v, axis: int, reason: str) -> None:
        """Scale mode: stop every axis that axis ``axis`` of ``v`` is a factor of (a reshape
        split the axis and the factor is reduced over: a GroupNorm's statistics over the
        channels of a group), as a reduction over the whole axis is stopped."""
        root = self.find(self.node(v, axis))
        for key, whole in list(self.sub_of.items()):
            if self.find(key) == root and self.find(whole) != root:
                reasons = self.reasons.setdefault(self.find(whole), [])
                if reason not in reasons:
                    reasons.append(reason)

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
            self.size[key] = aval_shape(v)[axis]
        return key

    def factor(self, v, axis: int, outer: int, inner: int):
        """The node of the factor of axis ``axis`` of ``v`` seen as ``(outer, size, inner)``."""
        key = (self.vid(v), axis, outer, inner)
        if key not in self.parent:
            self.keep.append(v)
            self.parent[key] = key
            self.size[key] = aval_shape(v)[axis] // (outer * inner)
            whole = self.sub_of[key] = self.node(v, axis)
            known = self.subs.setdefault(self.find(whole), {})
            if (outer, inner) in known:
                self.union(known[(outer, inner)], key)
            else:
                known[(outer, inner)] = key
        return key

    def segment(self, v, axis: int, start: int, stop: int):
        """The node of positions ``start:stop`` of axis ``axis`` of ``v`` (a concatenation's
        output: each input is one segment of the joined axis)."""
        key = (self.vid(v), axis, "seg", start, stop)
        if key not in self.parent:
            self.keep.append(v)
            self.parent[key] = key
            self.size[key] = stop - start
            whole = self.sub_of[key] = self.node(v, axis)
            known = self.subs.setdefault(self.find(whole), {})
            if ("seg", start, stop) in known:
                self.union(known[("seg", start, stop)], key)
            else:
                known[("seg", start, stop)] = key
        return key

    def has_segments(self, root) -> bool:
        return any(k[0] == "seg" for k in self.subs.get(root, {}))

    def free_segments(self, root, n: int) -> list | None:
        """The segments of an axis of length ``n`` in class ``root`` (stopped as a whole by a
        concatenation) as ``[(start, stop, segment root or None, why stopped), ...]`` tiling the axis; None
        when they overlap or leave gaps, when the axis is also reshaped, or when none may move."""
        out = self._tiles(root, n, 0, set())
        if out is None or all(r is None for _, _, r, _ in out):
            return None
        return out

    def _tiles(self, root, n: int, offset: int, seen: set) -> list | None:
        known = self.subs.get(root, {})
        if not known or any(k[0] != "seg" for k in known) or root in seen:
            return None
        out, pos = [], 0
        for (_, a, b), key in sorted(known.items()):
            if a != pos:
                return None
            r = self.find(key)
            reasons = self.reasons.get(r, ())
            if reasons and self.has_segments(r) and all(x.startswith(CONCAT) for x in reasons):
                inner = self._tiles(r, b - a, offset + a, seen | {root})  # a concatenation of concatenations
                if inner is None:
                    return None
                out.extend(inner)
            else:
                why = tuple(reasons) or (("size 1",) if b - a == 1 else ())
                out.append((offset + a, offset + b, None if why else r, why))
            pos = b
        return out if pos == n else None

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
        if self.has_segments(root):
            return None
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

    def _real_reasons(self, root) -> list[str]:
        """The reasons a class is stopped for, other than being flattened or concatenated itself."""
        return [r for r in self.reasons.get(root, ()) if not r.startswith((FLATTEN, CONCAT))]

    def stop_blocked_factors(self) -> None:
        """Stop every factor or segment of an axis stopped for another reason than the
        flatten or concatenation itself (a model output, a slice, a normalisation in scale
        mode...), down through nested concatenations: moving the part would move that axis."""
        changed = True
        while changed:
            changed = False
            for key, whole in self.sub_of.items():
                why = self._real_reasons(self.find(whole))
                if why and not self._real_reasons(self.find(key)):
                    after = "a concatenation" if len(key) == 5 else "a reshape"
                    self.reasons.setdefault(self.find(key), []).append(f"{why[0]}, after {after}")
                    changed = True

    def link(self, a, i, b, j) -> None:
        """Join axis i of value a with axis j of value b when both are values of equal length."""
        if is_literal(a) or is_literal(b):
            return
        if aval_shape(a)[i] == aval_shape(b)[j]:
            self.union(self.node(a, i), self.node(b, j))

    def stop(self, v, axis: int, reason: str) -> None:
        if is_literal(v) or not aval_shape(v):
            return
        where = f" (in {' > '.join(self.context)})" if self.context else ""
        reasons = self.reasons.setdefault(self.find(self.node(v, axis)), [])
        if reason + where not in reasons:
            reasons.append(reason + where)

    def stop_all(self, v, reason: str) -> None:
        for i in range(len(aval_shape(v))):
            self.stop(v, i, reason)

    def stopped(self, v, axis: int) -> bool:
        return self.find(self.node(v, axis)) in self.reasons

    def pinned(self, v) -> bool:
        """Scale mode: every axis of ``v`` of length > 1 is in a stopped class (``v`` is never
        rescaled); an axis stopped only by a flatten or a concatenation whose parts may move is not."""
        return all(self.stopped(v, i) and not self.flattened_only(v, i) for i, n in enumerate(aval_shape(v)) if n > 1)

    def flattened_only(self, v, axis: int) -> bool:
        """The axis is stopped by a reshape or a concatenation alone and has factors or
        segments of its own (a flattened map, a concatenation)."""
        root = self.find(self.node(v, axis))
        return bool(self.subs.get(root)) and all(r.startswith((FLATTEN, CONCAT)) for r in self.reasons.get(root, ()))

    def stop_incompatible_segments(self) -> None:
        """Stop the segments of every axis whose segments do not tile it (two concatenations
        cutting one summed axis at different places, or one also reshaped), and what is cut from them."""
        for root in list(self.subs):
            root = self.find(root)
            if self.has_segments(root) and self._tiles(root, self.size[root], 0, set()) is None:
                for key in self.subs.get(root, {}).values():
                    why = self.reasons.setdefault(self.find(key), [])
                    if INCOMPATIBLE not in why:
                        why.append(INCOMPATIBLE)
        self.stop_blocked_factors()


FLATTEN = "reshape merges the axis with others (flatten) or splits it"
CONCAT = "concatenate joins the axis from several values"
INCOMPATIBLE = "an axis concatenated (or reshaped) in incompatible ways"
