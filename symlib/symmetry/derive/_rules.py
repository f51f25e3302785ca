"""The rules of :mod:`symlib.symmetry.derive`: what each primitive of a jaxpr joins, stops or
records in the graph, and the trace of a function into it."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import jax
import numpy as np
from jax.extend import core as jcore

from symlib.symmetry.specs import flatten_params, unflatten_params
from symlib.symmetry.derive._graph import BINARY, CALLS, COMPARE, CONCAT, CUMULATIVE, FLATTEN, Graph, HOMOGENEOUS_UNARY, RANDOM, REDUCE, STOP_ALL, UNARY, UnsupportedOperationError, WINDOW, aval_shape, is_literal



def _kind_of(g: Graph, invars) -> str:
    kinds = {g.kind.get(g.vid(v), "const") for v in invars if not is_literal(v)}
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


def _elementwise_perm(g: Graph, eqn) -> None:
    out = eqn.outvars[0]
    nd = len(aval_shape(out))
    for v in eqn.invars:
        if not is_literal(v) and len(aval_shape(v)) == nd:
            for i in range(nd):
                g.link(v, i, out, i)
    for o in eqn.outvars[1:]:
        for i in range(min(nd, len(aval_shape(o)))):
            g.link(o, i, out, i)


def _literal_value(v):
    try:
        return float(np.asarray(v.val))
    except (TypeError, ValueError):
        return None


def _zero(g: Graph, v) -> bool:
    """``v`` is a literal zero or a value known to be all zeros (a broadcast of one)."""
    return (is_literal(v) and _literal_value(v) == 0.0) or g.vid(v) in g.zero


def _scalar_const(g: Graph, v) -> bool:
    return is_literal(v) or (not aval_shape(v) and g.kind.get(g.vid(v)) != "data")


def _break(g: Graph, eqn, reason: str) -> None:
    for v in list(eqn.invars) + list(eqn.outvars):
        g.stop_all(v, reason)


def _elementwise_scale(g: Graph, eqn, name: str) -> None:
    out = eqn.outvars[0]
    nd = len(aval_shape(out))
    ins = list(eqn.invars)
    if name == "select_n":
        ins = ins[1:]  # the predicate: a comparison with 0 is invariant to positive scaling
    if name == "clamp":
        lo, x, hi = ins
        if is_literal(lo) and _literal_value(lo) == 0.0 and is_literal(hi) and _literal_value(hi) == math.inf:
            for i in range(nd):
                g.link(x, i, out, i)
        else:
            _break(g, eqn, "clamp")
        return
    arrays = [v for v in ins if not _scalar_const(g, v)]
    consts = [v for v in ins if _scalar_const(g, v)]
    if name in COMPARE:
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
            if g.kind.get(g.vid(a)) == "const" and aval_shape(a):
                _break(g, eqn, f"{name} with a constant array")
                return
        for a in arrays:
            if len(aval_shape(a)) == nd:
                for i in range(nd):
                    g.link(a, i, out, i)
        return
    _break(g, eqn, name)


def _record_activation(g: Graph, xs, out, name: str) -> None:
    """Scale mode: remember that activations ``xs`` went through ``name``, not positively
    homogeneous, for the refusal of :func:`scaling_spec_from_apply`."""
    label = name + (f" (in {' > '.join(g.context)})" if g.context else "")
    for x in xs:
        if not is_literal(x) and g.kind.get(g.vid(x)) == "data" and aval_shape(x):
            g.unary_breaks.append((g.node(x, len(aval_shape(x)) - 1), g.vid(out), label))


def _unary_scale(g: Graph, eqn, name: str) -> None:
    x, out = eqn.invars[0], eqn.outvars[0]
    if name in HOMOGENEOUS_UNARY and len(aval_shape(x)) == len(aval_shape(out)):
        for i in range(len(aval_shape(out))):
            g.link(x, i, out, i)
        return
    _record_activation(g, [x], out, name)
    _break(g, eqn, name)


def _dot(g: Graph, eqn) -> None:
    lhs, rhs = eqn.invars
    out = eqn.outvars[0]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lfree = [i for i in range(len(aval_shape(lhs))) if i not in lc and i not in lb]
    rfree = [i for i in range(len(aval_shape(rhs))) if i not in rc and i not in rb]
    out_axes = list(range(len(aval_shape(out))))
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


def _conv(g: Graph, eqn) -> None:
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
    elif aval_shape(rhs)[rs[1]] == 1:
        g.records.append((g.node(lhs, ls[1]), path, leaf_axes[rs[0]], -1))
    else:
        g.stop(lhs, ls[1], f"input channels of a grouped convolution ({groups} groups)")


def _merge_factors(g: Graph, parts, group: list, big: list, whole, axis: int) -> None:
    """The axes ``group`` of ``parts`` are merged into (or split from) axis
    ``axis`` of ``whole``; each part of length > 1 is joined with its factor of the whole
    axis (C order), which as a whole cannot be permuted."""
    shape = aval_shape(parts)
    for i in big:
        outer = math.prod(shape[k] for k in group if k < i)
        inner = math.prod(shape[k] for k in group if k > i)
        g.union(g.node(parts, i), g.factor(whole, axis, outer, inner))
    g.stop(whole, axis, FLATTEN)


#: reductions along an axis that are not positively homogeneous of degree one (scale mode breaks at them)
NOT_DEGREE_ONE = {"reduce_prod", "cumprod", "cumlogsumexp"}


def _structural(g: Graph, eqn, name: str) -> bool:
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
        elif g.mode == "scale" and not aval_shape(x):
            g.stop_all(out, "broadcast of a non-zero scalar")
        return True
    if name == "reshape":
        x = ins[0]
        try:
            groups = _reshape_groups(aval_shape(x), aval_shape(out))
        except IndexError:  # zero-sized axes
            _break(g, eqn, "reshape of an empty array")
            return True
        for gi, gj in groups:
            big_i = [i for i in gi if aval_shape(x)[i] > 1]
            big_j = [j for j in gj if aval_shape(out)[j] > 1]
            if len(big_i) == 1 and len(big_j) == 1:
                g.link(x, big_i[0], out, big_j[0])
            elif len(big_i) > 1 and len(big_j) == 1:  # merge (flatten)
                _merge_factors(g, x, gi, big_i, out, big_j[0])
            elif len(big_i) == 1 and len(big_j) > 1:  # split
                _merge_factors(g, out, gj, big_j, x, big_i[0])
            else:
                for i in big_i:
                    g.stop(x, i, "reshape merges the axis with others (flatten) or splits it")
                for j in big_j:
                    g.stop(out, j, "reshape merges the axis with others (flatten) or splits it")
        return True
    if name == "squeeze":
        x = ins[0]
        kept = [i for i in range(len(aval_shape(x))) if i not in [d % len(aval_shape(x)) for d in p["dimensions"]]]
        for o, i in enumerate(kept):
            g.link(x, i, out, o)
        return True
    if name == "expand_dims":
        x = ins[0]
        dims = sorted(d % len(aval_shape(out)) for d in p["dimensions"])
        kept = [o for o in range(len(aval_shape(out))) if o not in dims]
        for i, o in enumerate(kept):
            g.link(x, i, out, o)
        return True
    if name == "transpose":
        x = ins[0]
        for o, i in enumerate(p["permutation"]):
            g.link(x, i, out, o)
        return True
    if g.mode == "scale" and name in NOT_DEGREE_ONE:
        # a product over k positions scales a unit by a**k, a log-sum-exp not by any power:
        # rescaling the units that feed it changes the function, as a non-homogeneous activation does
        _record_activation(g, ins[:1], out, name)
        _break(g, eqn, name)
        return True
    if name in REDUCE:
        x = ins[0]
        axes = sorted(a % max(len(aval_shape(x)), 1) for a in p["axes"])
        kept = [i for i in range(len(aval_shape(x))) if i not in axes]
        for o, i in enumerate(kept):
            g.link(x, i, out, o)
        if name in ("argmax", "argmin"):
            for a in axes:
                g.stop(x, a, f"{name} returns positions along the axis")
        elif g.mode == "scale":
            for a in axes:
                g.stop(x, a, f"{name} over the axis")
                g.stop_reduced_part(x, a, f"{name} over part of the axis")
            g.reduced.extend(g.node(x, i) for i in range(len(aval_shape(x))))
            if len(aval_shape(x)) - 1 in axes and not is_literal(x):
                g.statistics[g.vid(out)] = g.vid(x)
        return True
    if name in CUMULATIVE:
        x = ins[0]
        for i in range(len(aval_shape(x))):
            if i == p["axis"] % len(aval_shape(x)):
                g.stop(x, i, f"{name} along the axis")
                g.stop(out, i, f"{name} along the axis")
            else:
                g.link(x, i, out, i)
        return True
    if name in WINDOW:
        n = len(outs)
        operands, inits = ins[:n], ins[n:]
        if g.mode == "scale" and any(not (is_literal(c) and _literal_value(c) in (0.0, -math.inf, math.inf))
                                     for c in inits):
            _break(g, eqn, f"{name} with a non-zero initial value")
        for x, o in zip(operands, outs):
            for i in range(len(aval_shape(x))):
                trivial = (p["window_dimensions"][i] == 1 and p["window_strides"][i] == 1
                           and tuple(p["padding"][i]) == (0, 0)
                           and (p.get("base_dilation") or (1,) * len(aval_shape(x)))[i] == 1)
                if trivial:
                    g.link(x, i, o, i)
                else:
                    g.stop(x, i, "pooling window")
                    g.stop(o, i, "pooling window")
        return True
    if name == "concatenate":
        d = p["dimension"]
        start = 0
        for x in ins:
            n = aval_shape(x)[d]
            for i in range(len(aval_shape(x))):
                if i != d:
                    g.link(x, i, out, i)
            if n:
                seg = g.segment(out, d, start, start + n)
                if is_literal(x):
                    g.reasons.setdefault(g.find(seg), []).append("concatenated with a constant")
                else:
                    g.union(g.node(x, d), seg)
            start += n
        g.stop(out, d, CONCAT)
        return True
    if name == "pad":
        x, value = ins
        if g.mode == "scale" and not (is_literal(value) and _literal_value(value) == 0.0):
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
        strides = p.get("strides") or (1,) * len(aval_shape(x))
        for i, n in enumerate(aval_shape(x)):
            if p["start_indices"][i] == 0 and p["limit_indices"][i] == n and strides[i] == 1:
                g.link(x, i, out, i)
            else:
                g.stop(x, i, "slice")
                g.stop(out, i, "slice")
        return True
    if name in STOP_ALL:
        _break(g, eqn, name)
        return True
    return False


def _run(g: Graph, jaxpr, consts_kind: str = "const") -> None:
    for v in jaxpr.constvars:
        g.kind[g.vid(v)] = consts_kind
        g.keep.append(v)
        g.stop_all(v, "constant array captured by the function")
    for eqn in jaxpr.eqns:
        _eqn(g, eqn)


def _eqn(g: Graph, eqn) -> None:
    name = eqn.primitive.name
    kind = _kind_of(g, eqn.invars)
    for o in eqn.outvars:
        g.kind[g.vid(o)] = "data" if name in RANDOM else kind
        g.keep.append(o)
        for v in eqn.invars:
            g.edge(v, o)
    if name in RANDOM or name in ("debug_callback", "debug_print"):
        return
    if name == "cond":
        # every branch maps the operands to the results; the branch index is a scalar
        from types import SimpleNamespace

        for k, branch in enumerate(eqn.params["branches"]):
            view = SimpleNamespace(invars=list(eqn.invars[1:]), outvars=list(eqn.outvars), primitive=eqn.primitive)
            _call(g, view, branch.jaxpr, branch.consts, f"cond branch {k}")
        return
    if name in CALLS:
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
            and not is_literal(eqn.invars[0]) and g.vid(eqn.invars[0]) in g.origin:
        g.origin[g.vid(eqn.outvars[0])] = g.origin[g.vid(eqn.invars[0])]
    if name == "dot_general":
        _dot(g, eqn)
    elif name == "conv_general_dilated":
        _conv(g, eqn)
    elif _structural(g, eqn, name):
        pass
    elif name in UNARY:
        if g.mode == "perm":
            _elementwise_perm(g, eqn)
        else:
            _unary_scale(g, eqn, name)
    elif name in BINARY:
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


def _call(g: Graph, eqn, sub, consts, label: str) -> None:
    if len(sub.invars) != len(eqn.invars) or len(sub.outvars) != len(eqn.outvars):
        raise UnsupportedOperationError(f"cannot analyse primitive {eqn.primitive.name!r}: its subprogram "
                                        f"does not match its operands")
    outer_in = [None if is_literal(v) else (g.vid(v), g.kind.get(g.vid(v), "const"),
                                               (g.view.get(g.vid(v)), g.origin.get(g.vid(v))),
                                               [g.node(v, i) for i in range(len(aval_shape(v)))]) for v in eqn.invars]
    outer_out = [(g.vid(v), [g.node(v, i) for i in range(len(aval_shape(v)))]) for v in eqn.outvars]
    literal_zero = [_zero(g, v) for v in eqn.invars if is_literal(v)]
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
                if aval_shape(inner) and g.mode == "scale":
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
            if is_literal(inner):
                inner_out.append((None, _literal_value(inner), None, []))
            else:
                inner_out.append((g.vid(inner), None, (g.view.get(g.vid(inner)), g.origin.get(g.vid(inner))),
                                  [g.node(inner, i) for i in range(len(aval_shape(inner)))]))
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


def _first_uses(jaxpr, invars) -> dict:
    """For each of ``invars`` used by ``jaxpr``, the position of its first use in the forward
    computation: the index of the equation that reads it, followed, when that equation calls
    a sub-jaxpr (a jit, a custom derivative, a scan) taking it as an argument, by the position
    of its first use inside. Positions compare lexicographically in the order of execution, so
    the order they give depends only on the computation, not on how the parameters are keyed."""
    first: dict = {}

    def walk(jx, names: dict, prefix: tuple) -> None:
        for k, eqn in enumerate(jx.eqns):
            sub, _ = _subjaxpr(eqn)
            mapped = sub is not None and len(sub.invars) == len(eqn.invars)
            inner: dict = {}
            for j, v in enumerate(eqn.invars):
                if is_literal(v) or v not in names or names[v] in first:
                    continue
                if mapped:
                    inner[sub.invars[j]] = names[v]
                else:
                    first[names[v]] = (*prefix, k)
            if inner:
                walk(sub, inner, (*prefix, k))
                for top in inner.values():  # passed to the call but not read inside it
                    first.setdefault(top, (*prefix, k))

    walk(jaxpr, {v: i for i, v in enumerate(invars)}, ())
    return first


def trace_graph(mode: str, fn: Callable, params: Mapping, args: tuple):
    """Trace ``fn(params, *args) -> (output, state)`` and build the graph.

    ``state`` is a flat dict of paths of ``params`` to updated values (flax's mutable
    collections): their axes are tied to the parameter's instead of stopped as outputs.
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a (nested) dict of arrays, got {type(params).__name__}")
    for i, leaf in enumerate(jax.tree_util.tree_leaves(args)):  # an empty batch: refused before the trace
        if np.ndim(leaf) >= 1 and np.shape(leaf)[0] == 0:
            raise ValueError(f"example input {i} has no examples (shape {np.shape(leaf)}): pass a batch of at least "
                             "one example (the values do not matter, only the shapes)")
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
    g = Graph(mode)
    g.program = closed
    pvars = jaxpr.invars[:len(paths)]
    # the parameters in the order the computation first reads them (unread ones last, by path):
    # every result that follows the order of the parameters (the classes' order and names, the
    # scaling groups' order) then depends on the function, not on the dict's key order
    first = _first_uses(jaxpr, pvars)
    forward = sorted(range(len(paths)), key=lambda i: (i not in first, first.get(i, ()), paths[i]))
    paths, pvars = [paths[i] for i in forward], [pvars[i] for i in forward]
    for path, v in zip(paths, pvars):
        g.kind[g.vid(v)] = "param"
        g.view[g.vid(v)] = (path, tuple(range(len(aval_shape(v)))))
        g.origin[g.vid(v)] = path
        for i in range(len(aval_shape(v))):
            g.node(v, i)
    for v in jaxpr.invars[len(paths):]:
        g.kind[g.vid(v)] = "data"
        g.stop_all(v, "model input")
    _run(g, jaxpr)
    n_out = len(jax.tree_util.tree_leaves(output))
    state_paths = state_keys
    for k, v in enumerate(jaxpr.outvars):
        if is_literal(v):
            continue
        if k >= n_out and state_paths[k - n_out] in paths:
            pv = pvars[paths.index(state_paths[k - n_out])]
            for i in range(len(aval_shape(v))):
                g.link(v, i, pv, i)
        else:
            g.stop_all(v, "model output")
    return g, flat, paths, pvars
