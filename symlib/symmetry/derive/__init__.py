"""Permutation and scaling specs derived from a model's computation graph.

Instead of writing a :class:`~symlib.symmetry.specs.PermutationSpec` by hand,
:func:`permutation_spec_from_apply` traces ``apply_fn(params, *example_args)`` with
:func:`jax.make_jaxpr` and finds, for every hidden axis, which parameter axes must be
permuted together. :func:`permutation_spec_from_flax` does the same for a
``flax.linen`` module (``module.apply``), also over its ``batch_stats`` when given the
whole variables dict. :func:`scaling_spec_from_apply` / :func:`scaling_spec_from_flax`
derive the positive-scaling symmetries of ReLU networks as a
:class:`~symlib.symmetry.scaling.ScalingSpec`. :func:`derive_report` returns the
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
returned as positions (``argmax``), the joined axis of a concatenation as a whole (see
below), and an axis that a ``reshape`` both splits and merges (``(6, 4) -> (4, 6)``). A class of
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
is stopped with it. Scaling specs see a flatten the same way: the dense kernel reading a
flattened ReLU map is viewed as ``(H*W, C, out)`` (``ScalingSpec.views``) and rescaling
channel ``c`` divides its rows at every position. A primitive the analysis
does not know (``scan``, ``while``, collectives, ``fft``...) raises
:class:`UnsupportedOperationError` naming it. Random numbers (dropout masks) are treated
as fresh values that take the permutation of whatever they are combined with: the
function is then equivariant in distribution, not for a fixed key.

**Concatenation.** ``concatenate`` makes each input a *segment* of the joined axis (positions
``start:stop``), joined with that input's axis. A parameter axis whose class is cut into
segments that tile it (a concatenation of concatenations is expanded) is cut into *parts*
(``PermutationSpec.parts``): the dense kernel reading ``concatenate([a, b])`` becomes
``"kernel[0:n_a]"`` on ``a``'s permutation and ``"kernel[n_a:n_a+n_b]"`` on ``b``'s, and a value
concatenated twice puts its permutation on both parts. A segment that may not move (the
model's input, a constant) is a part without a permutation. Segments that overlap (two
concatenations cut one summed axis at different places), a joined axis that is also a model
output, or a parameter cut along two axes or also reshaped stop every segment involved. Scaling
specs cut the same parameters into the same parts (``ScalingSpec.parts``): rescaling a
branch's units divides its part of the reading kernel.

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
``ValueError`` naming it, unless its result feeds only reductions over the units (an
RMSNorm's mean of squares: part of the norm's statistic). A grouped convolution with one
input channel per group reads channel ``c`` through output channels ``c*m .. c*m+m-1`` of
its kernel: the outgoing entry is that kernel's output axis (the repeat convention of
:class:`~symlib.symmetry.scaling.ScalingSpec`, as in
:func:`~symlib.symmetry.architectures.optunet_scaling_spec`). A group touching a kernel
read by several ``dot_general``/``conv`` (tied weights) is left out. A unit normalised by
a norm (channels before a LayerNorm, an RMSNorm, a GroupNorm, whose statistics reduce over
a factor of the split channel axis, or before batch norm in inference form) has no exact
scaling symmetry and is left out; the units after the norm (its ``scale`` and ``bias``)
are a group. ``mass_paths`` are the kernels and the parameters multiplied into a unit
(norms' ``scale``), as in :func:`~symlib.symmetry.architectures.resnet20_scaling_spec`: a
group whose incoming side is a norm's ``scale`` needs it in the mass, or the mass would
fall forever. Groups are named as permutations.

**Attention** is analysed as what it is: ``dot_general`` between two activations joins
the contracted axes of queries and keys. With ``flax.linen.MultiHeadDotProductAttention``
(``DenseGeneral`` kernels ``(features, heads, head_dim)``) the derived spec permutes the
heads (one permutation shared by query, key, value and output projections), the
query/key features within a head and the value features within a head, the same
permutation in every head (per-head permutations are a larger symmetry that a
:class:`PermutationSpec` cannot express); a head-splitting ``reshape`` instead stops the
feature axes. For scaling, products of two activations are never rescaled.

**Activations.** The same trace tells where the units of each permutation are computed:
:func:`activation_sites` picks, for every permutation of
a spec, the value of the computation that
:func:`~symlib.symmetry.matching.activation_matching` correlates when given the model's
ordinary forward function (the post-activation of a layer, a residual stream after its last
block, the attention weights of the heads; see that module).

**Not supported:** recurrent layers and loops (``scan``, ``while``: refused by name);
embeddings and any indexing (``gather``, ``dynamic_slice``: their axes are stopped);
symmetries other than permutations of whole axes (e.g. the sign symmetry of ``tanh`` units, rotations).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from symlib.symmetry.scaling import ScalingSpec
from symlib.symmetry.specs import PermutationSpec, flatten_params, part_name
from symlib.symmetry.derive._graph import DeriveReport, Graph, UnsupportedOperationError, aval_shape
from symlib.symmetry.derive._rules import trace_graph
from symlib.symmetry.derive._activations import activation_sites, capture_activations


__all__ = [
    "DeriveReport",
    "UnsupportedOperationError",
    "activation_sites",
    "capture_activations",
    "derive_report",
    "flax_derive_report",
    "permutation_spec_from_apply",
    "permutation_spec_from_flax",
    "scaling_spec_from_apply",
    "scaling_spec_from_flax",
]


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


def _perm_report(g: Graph, flat: Mapping, paths: list, pvars: list, keep_prefix: str | None = None) -> DeriveReport:
    members: dict = {}
    stopped: dict = {}
    views: dict = {}
    g.stop_blocked_factors()
    g.stop_incompatible_segments()
    for path, v in zip(paths, pvars):  # factors of one axis that overlap (two reshapes): none of them moves
        for i, n in enumerate(aval_shape(v)):
            root = g.find(g.node(v, i))
            if root in g.reasons and g.subs.get(root) and not g.has_segments(root) and g.free_factors(root, n) is None:
                for key in g.subs[root].values():
                    if g.find(key) not in g.reasons:
                        g.reasons[g.find(key)] = ["an axis reshaped in incompatible ways"]
    g.stop_blocked_factors()
    parts: dict = {}
    ndims: dict = {}
    for path, v in zip(paths, pvars):
        shape = aval_shape(v)
        per_axis, cuts = [], {}  # per axis: [(length, class root or None), ...]; axis -> segments
        for i, n in enumerate(shape):
            root = g.find(g.node(v, i))
            factors = g.free_factors(root, n) if root in g.reasons else [(n, root)]
            segments = g.free_segments(root, n) if root in g.reasons and factors is None else None
            if segments is not None:
                cuts[i] = segments
                factors = [(n, None)]
            elif root in g.reasons and factors is None:
                stopped[(path, i)] = tuple(g.reasons[root])
                factors = [(n, None)]
            elif n == 1:
                stopped[(path, i)] = ("size 1",)
                factors = [(n, None)]
            per_axis.append(factors)
        if len(cuts) > 1 or (cuts and any(len(f) > 1 for f in per_axis)):
            for i in cuts:  # a PermutationSpec cuts a parameter along one axis, without a view
                stopped[(path, i)] = ("concatenated along this axis, and cut or reshaped along another",)
            cuts = {}
        if cuts:
            (i, segments), = cuts.items()
            parts[path] = (i, tuple(b - a for a, b, _, _ in segments))
            for a, b, seg_root, why in segments:
                part = part_name(path, a, b)
                roots = [f[0][1] for f in per_axis]
                roots[i] = seg_root
                if seg_root is None:
                    stopped[(part, i)] = why
                ndims[part] = len(shape)
                for k, root in enumerate(roots):
                    if root is not None:
                        members.setdefault(root, []).append((part, k))
            continue
        view = [f for factors in per_axis for f in factors]
        if len(view) != len(shape):
            views[path] = tuple(size for size, _ in view)
        ndims[path] = len(view)
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
    names = _class_names(members, ndims, keep_prefix)
    axes = {path: [None] * n for path, n in ndims.items()}
    for root, where in members.items():
        for path, i in where:
            axes[path][i] = names[root]
    spec_blocks = {names[r]: b for r, b in blocks.items() if b > 1}
    if keep_prefix is not None:
        strip = len(keep_prefix)
        axes = {p[strip:]: a for p, a in axes.items() if p.startswith(keep_prefix)}
        views = {p[strip:]: a for p, a in views.items() if p.startswith(keep_prefix)}
        parts = {p[strip:]: c for p, c in parts.items() if p.startswith(keep_prefix)}
        stopped = {(p[strip:], i): r for (p, i), r in stopped.items() if p.startswith(keep_prefix)}
        used = {n for a in axes.values() for n in a if n}
        spec_blocks = {n: b for n, b in spec_blocks.items() if n in used}
    return DeriveReport(PermutationSpec(axes, blocks=spec_blocks, views=views, parts=parts), stopped)


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
    g, flat, paths, pvars = trace_graph("perm", _plain(apply_fn, example_kwargs), params, example_args)
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
    g, flat, paths, pvars = trace_graph("perm", fn, tree, example_args)
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


def _kernel_views(g: Graph, shapes: Mapping[str, tuple[int, ...]]) -> tuple[dict, dict]:
    """Scale mode, flatten: a kernel axis contracted with (or producing) a flattened axis
    whose factors may be rescaled is seen through a view that splits it into those factors.
    Returns ``(tilings, views)``: ``tilings[path][leaf axis]`` is ``[(size, factor root or
    None), ...]`` and ``views[path]`` the kernel's view shape."""
    tilings: dict = {}
    for nd, path, axis, _ in g.records:
        root = g.find(nd)
        if root in g.reasons and g.subs.get(root):
            tiling = g.free_factors(root, shapes[path][axis])
            if tiling and tilings.get(path, {}).get(axis, tiling) == tiling:
                tilings.setdefault(path, {})[axis] = tiling
    views = {path: tuple(size for i, n in enumerate(shapes[path]) for size, _ in by_axis.get(i, [(n, None)]))
             for path, by_axis in tilings.items()}
    return tilings, views


def _param_cuts(g: Graph, paths: list, pvars: list, views: Mapping) -> dict:
    """Scale mode, concatenation: ``path -> (axis, segments)`` for every parameter whose
    axis is a concatenation's (segments as :meth:`Graph.free_segments`). A parameter cut
    along two axes, or also seen through a view, is not cut: its segments are stopped (and
    the cuts computed again, since stopping them may change others')."""
    axes_of: dict = {}  # path -> {leaf axis: node}: a kernel's axes as its records see them, others' own
    for path, v in zip(paths, pvars):
        if path not in g.kernels:
            axes_of[path] = {i: g.node(v, i) for i in range(len(aval_shape(v)))}
    for nd, path, axis, _ in g.records:
        axes_of.setdefault(path, {})[axis] = nd
    shapes = {path: aval_shape(v) for path, v in zip(paths, pvars)}
    while True:
        cuts, changed = {}, False
        for path, nodes in axes_of.items():
            found = [(i, segs) for i, nd in sorted(nodes.items()) if g.find(nd) in g.reasons
                     and (segs := g.free_segments(g.find(nd), shapes[path][i])) is not None]
            if len(found) == 1 and path not in views:
                cuts[path] = found[0]
                continue
            for _, segs in found if len(found) > 1 or path in views else ():
                for _, _, root, _ in segs:
                    if root is not None:
                        g.reasons.setdefault(root, []).append("a parameter cut along two axes, or also reshaped")
                        changed = True
        if not changed:
            return cuts
        g.stop_blocked_factors()


def _scaling_from_graph(g: Graph, flat: Mapping, paths: list, pvars: list, keep_prefix: str | None = None) -> ScalingSpec:
    g.stop_blocked_factors()
    g.stop_incompatible_segments()
    shapes = {path: aval_shape(v) for path, v in zip(paths, pvars)}
    tilings, views = _kernel_views(g, shapes)
    cuts = _param_cuts(g, paths, pvars, views)
    part_names = {path: [part_name(path, a, b) for a, b, _, _ in segs] for path, (_, segs) in cuts.items()}
    entries: dict = {}

    def add(root, path: str, axis: int, power: int) -> None:
        if path not in cuts:
            entries.setdefault(root, []).append((path, axis, power))
            return
        cut_axis, segs = cuts[path]
        for (_, _, seg_root, _), part in zip(segs, part_names[path]):
            if axis != cut_axis:  # every part takes the factor of the whole axis
                entries.setdefault(root, []).append((part, axis, power))
            elif seg_root is not None:  # each part takes its own segment's
                entries.setdefault(seg_root, []).append((part, axis, power))

    for path, v in zip(paths, pvars):
        if path in g.kernels:
            continue  # kernels enter through records only
        for i in range(len(aval_shape(v))):
            add(g.find(g.node(v, i)), path, i, 1)
    for nd, path, axis, power in g.records:
        by_axis = tilings.get(path, {})
        start = sum(len(by_axis.get(i, [None])) for i in range(axis))  # the leaf axis's first view axis
        if axis in by_axis:
            for k, (_, root) in enumerate(by_axis[axis]):
                if root is not None:
                    entries.setdefault(root, []).append((path, start + k, power))
        else:
            add(g.find(nd), path, start, power)
    reduced = {g.find(nd) for nd in g.reduced}
    for nd, out_id, label in g.unary_breaks:
        root = g.find(nd)
        reasons = g.reasons.get(root, [])
        parts = [root] + [g.find(k) for k in g.subs.get(root, {}).values()]  # a flattened or concatenated map's units
        incoming = sorted((p for r in parts for p, _, s in entries.get(r, ()) if s == 1),
                          key=lambda p: p not in g.kernels)
        if (incoming and root not in reduced and not any(r.startswith("model output") for r in reasons)
                and not g.feeds_statistics_only(out_id) and g.reaches_kernel(out_id)):
            where = incoming[0][len(keep_prefix):] if keep_prefix and incoming[0].startswith(keep_prefix) else incoming[0]
            raise ValueError(f"no scaling symmetry: the units produced by {where!r} go through "
                             f"{label!r}, which is not positively homogeneous (only ReLU, leaky ReLU, max/average "
                             f"pooling and sums keep the scaling symmetry)")
    shared = {p for p, n in g.kernel_uses.items() if n > 1}
    stored = {part: path for path, names in part_names.items() for part in names}
    groups = {}
    for root, ents in entries.items():
        if root in g.reasons or g.size[root] == 1:
            continue
        if any(stored.get(p, p) in shared for p, _, _ in ents):
            continue  # a kernel read twice (tied weights): each group would rescale it for both uses
        if not any(s == 1 for _, _, s in ents) or not any(s == -1 for _, _, s in ents):
            continue
        groups[root] = tuple(dict.fromkeys(ents))
    order = {p: k for k, p in enumerate(paths)}
    rank = {p: (order[p], 0) for p in paths} | {part: (order[path], k + 1) for path, names in part_names.items()
                                                 for k, part in enumerate(names)}
    ranked = sorted(groups, key=lambda r: min(rank[p] for p, _, s in groups[r] if s == 1))
    ndims = {p: len(views.get(p, np.shape(leaf))) for p, leaf in flat.items()}
    ndims.update({part: ndims[stored[part]] for part in stored})
    names = _class_names({r: [(p, a) for p, a, s in groups[r] if s == 1] for r in ranked}, ndims, keep_prefix)
    strip = (lambda p: p[len(keep_prefix):]) if keep_prefix else (lambda p: p)
    out = {names[r]: tuple((strip(p), a, s) for p, a, s in sorted(groups[r], key=lambda e: (-e[2], rank[e[0]])))
           for r in ranked}
    mass = tuple(strip(q) for p in paths if p in g.kernels or p in g.multipliers for q in part_names.get(p, [p]))
    used = {p for ents in out.values() for p, _, _ in ents} | set(mass)
    return ScalingSpec(groups=out, mass_paths=mass,
                       views={strip(p): v for p, v in views.items() if strip(p) in used},
                       parts={strip(p): (axis, tuple(b - a for a, b, _, _ in segs)) for p, (axis, segs) in cuts.items()
                              if any(strip(q) in used for q in part_names[p])})


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
    g, flat, paths, pvars = trace_graph("scale", _plain(apply_fn, example_kwargs), params, example_args)
    return _scaling_from_graph(g, flat, paths, pvars)


def scaling_spec_from_flax(module, params: Mapping, *example_args, **example_kwargs) -> ScalingSpec:
    """:func:`scaling_spec_from_apply` for a ``flax.linen`` module (arguments as for
    :func:`permutation_spec_from_flax`)."""
    _check_flax(module)
    fn, tree, prefix = _flax_fn(module, params, example_kwargs)
    g, flat, paths, pvars = trace_graph("scale", fn, tree, example_args)
    return _scaling_from_graph(g, flat, paths, pvars, keep_prefix=prefix)
