"""Activation matching (:func:`~symlib.symmetry.matching.activation_matching`).

The Pearson correlation of hidden units of A and B over a data set (streamed in batches,
only sums kept), one LAP per permutation maximising the total correlation. ``apply_fn``
either names the activations each permutation acts on (a dict by permutation name, or for
an MLP a list by hidden layer) or is the model's ordinary forward function, whose
activations are then found in its traced computation
(:func:`~symlib.symmetry.derive.activation_sites`); convolutional features
count every spatial position as an example.
"""
from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import positive_int
from symlib.symmetry.derive import activation_sites, capture_activations
from symlib.symmetry.derive._activations import Sites
from symlib.symmetry.matching.common import MatchResult, check_finite_params, check_pair
from symlib.symmetry.matching.lap import check_lap_solver, lap_solver_used, solve_lap
from symlib.symmetry.specs import PermutationSpec, flatten_params


def _hidden_perm_names(spec: PermutationSpec, num_hidden: int) -> list[str]:
    """``P_0 .. P_{L-1}``, the names of an MLP's hidden layers; ``ValueError`` unless the spec names exactly those."""
    expected = [f"P_{l}" for l in range(num_hidden)]
    if sorted(spec.perm_names) != sorted(expected):
        raise ValueError(
            f"activation_matching maps hidden layer l to permutation 'P_l' when apply_fn returns a list: the "
            f"network has {num_hidden} hidden layer(s), so the spec must name exactly {expected}, got "
            f"{spec.perm_names} (an apply_fn returning a dict keyed by permutation name works for any spec)"
        )
    return expected


def _by_perm_name(spec: PermutationSpec, hidden) -> dict[str, Any]:
    """``apply_fn``'s activations keyed by permutation name: a dict (checked to name exactly the
    spec's permutations, put in spec order) or a list by MLP hidden layer (``P_0, P_1, ...``)."""
    if isinstance(hidden, Mapping):
        unknown = [k for k in hidden if k not in spec.perm_names]
        if unknown:
            raise ValueError(f"apply_fn returned activations under {unknown}, which the spec does not permute; "
                             f"its dict must be keyed by the spec's permutation names {spec.perm_names}")
        missing = [name for name in spec.perm_names if name not in hidden]
        if missing:
            raise ValueError(f"apply_fn returned no activations for the spec's permutation(s) {missing}; its dict "
                             f"must name exactly {spec.perm_names}")
        return {name: hidden[name] for name in spec.perm_names}
    if isinstance(hidden, (list, tuple)):
        return dict(zip(_hidden_perm_names(spec, len(hidden)), hidden))
    raise TypeError(f"apply_fn must return a list of hidden activations or a dict of permutation name -> "
                    f"activations, got {type(hidden).__name__}")


def _as_rows(spec: PermutationSpec, sizes: Mapping[str, int], hidden) -> dict[str, np.ndarray]:
    """``apply_fn``'s activations as float64 ``(examples, units)`` by permutation name.

    All axes but the last are flattened into examples (conv features ``(n, h, w, c)``
    give ``(n * h * w, c)``); the last must hold the units the permutation acts on.
    """
    out = {}
    for name, h in _by_perm_name(spec, hidden).items():
        h = np.asarray(h, np.float64)
        if h.ndim < 2 or h.shape[-1] != sizes[name]:
            raise ValueError(f"apply_fn's activations for {name!r} have shape {h.shape}; expected "
                             f"(batch, ..., {sizes[name]}), the last axis the units the spec's {name!r} permutes")
        out[name] = h.reshape(-1, h.shape[-1])
    return out


def _batches(data, batch_size: int) -> Iterable:
    if hasattr(data, "shape") and hasattr(data, "__getitem__"):
        n = int(data.shape[0])
        for i in range(0, n, batch_size):
            yield data[i:i + batch_size]
    else:
        yield from data


@functools.partial(jax.jit, static_argnums=0)
def _hidden_pair(apply_fn, pa, pb, x):
    """Hidden activations of A and B on ``x``, and whether ``x`` is all finite."""
    return apply_fn(pa, x), apply_fn(pb, x), jnp.all(jnp.isfinite(x))


def _captured_pair(sites: Sites, pa, pb, x):
    """The activations at ``sites`` of A and B on ``x``, and whether ``x`` is all finite."""
    return capture_activations(sites, pa, x), capture_activations(sites, pb, x), jnp.all(jnp.isfinite(x))


def _site_rows(h, axis: int, others, perms: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """A site's activations as float64 ``(rows, units)``: with ``perms``, every other permuted
    axis (``others``: ``(axis, name)``) first aligned by its match (B's heads put in A's order),
    then the permuted ``axis`` last and all other axes flattened into rows."""
    h = np.asarray(h, np.float64)
    for a, name in others if perms is not None else ():
        h = np.take(h, perms[name], axis=a)
    h = np.moveaxis(h, axis, -1)
    return h.reshape(-1, h.shape[-1])


class _Reader:
    """The activations of A and B on a batch, as float64 ``(rows, units)`` by permutation name.

    Given activations (``apply_fn`` returns a dict or list) are used as they are (one
    round). Captured ones (``apply_fn`` returns the model's output) are read at the sites of
    :func:`activation_sites`, traced once per batch shape; a permutation whose site has
    other permuted axes (the heads, for per-head features) is matched in a later ``round``
    than those, with B's other axes aligned by their matches.
    """

    def __init__(self, spec: PermutationSpec, sizes: Mapping[str, int], apply_fn: Callable, pa, x):
        self.spec, self.sizes, self.apply_fn, self.pa = spec, sizes, apply_fn, pa
        out = jax.eval_shape(apply_fn, pa, x)
        if not isinstance(out, (Mapping, list, tuple, jax.ShapeDtypeStruct)):
            raise TypeError(f"apply_fn must return the model's output (one array), a list of hidden activations "
                            f"or a dict of permutation name -> activations, got {type(out).__name__}")
        self.captured = isinstance(out, jax.ShapeDtypeStruct)
        if not self.captured:
            self.pair = functools.partial(_hidden_pair, apply_fn)
            self.rounds = [list(spec.perm_names)]
            return
        self.traced: dict = {}
        where = self._traced(x)[0]
        deps = {name: {m for _, m in where[name].others} for name in spec.perm_names}
        self.rounds = []
        while len(done := [n for r in self.rounds for n in r]) < len(deps):
            now = [n for n in spec.perm_names if n not in done and deps[n] <= set(done)]
            if not now:
                left = {n: sorted(deps[n]) for n in spec.perm_names if n not in done}
                raise ValueError(f"cannot order the matches: the activations of each of {left} carry a "
                                 f"permutation that is not matched before them")
            self.rounds.append(now)

    def _traced(self, x) -> tuple[dict, Callable]:
        """The sites for batches of ``x``'s shape and the jitted capture of A and B there."""
        key = (tuple(x.shape), str(x.dtype))
        if key not in self.traced:
            sites = activation_sites(self.apply_fn, self.spec, self.pa, x)
            if self.traced:
                first = next(iter(self.traced.values()))[0]
                if [(s.eqn, s.out) for s in first.values()] != [(s.eqn, s.out) for s in sites.sites.values()]:
                    raise ValueError(f"apply_fn computes differently for a batch of shape {key[0]}: its activations "
                                     f"are not where they are for the first batch; pass batches of equal shape")
            self.traced[key] = (sites.sites, jax.jit(functools.partial(_captured_pair, sites)))
        return self.traced[key]

    def read(self, pa, pb, x, first_example: int, names, perms: Mapping[str, np.ndarray]):
        """Activations of A and B on the batch ``x`` for the permutations ``names``, ``perms``
        the matches of the earlier rounds; ``ValueError`` if ``x`` is not finite."""
        if self.captured:
            where, pair = self._traced(x)
        else:
            pair = self.pair
        ha, hb, finite = pair(pa, pb, x)
        if not bool(finite):
            raise ValueError(f"data holds non-finite values (nan or inf) in examples "
                             f"{first_example}..{first_example + x.shape[0] - 1}")
        if not self.captured:
            return _as_rows(self.spec, self.sizes, ha), _as_rows(self.spec, self.sizes, hb)
        return ({n: _site_rows(ha[n], where[n].axis, where[n].others) for n in names},
                {n: _site_rows(hb[n], where[n].axis, where[n].others, perms) for n in names})


@dataclass
class _LayerSums:
    """Running float64 sums of one hidden layer's activations in A and B, over ``count`` rows.

    The activations are shifted by the first batch's means (``shift_a``, ``shift_b``)
    before summing, for accuracy; units constant over the data then have exactly zero
    (co)variance. A row is an example, or one spatial position of one example for conv
    features, so ``count`` may differ between layers.
    """

    shift_a: np.ndarray
    shift_b: np.ndarray
    sum_a: np.ndarray
    sum_b: np.ndarray
    sumsq_a: np.ndarray
    sumsq_b: np.ndarray
    cross: np.ndarray
    count: int = 0

    @classmethod
    def start(cls, ha: np.ndarray, hb: np.ndarray) -> _LayerSums:
        """Empty sums, shifted by the means of the first batch ``ha``, ``hb``."""
        width = ha.shape[-1]
        return cls(ha.mean(axis=0), hb.mean(axis=0), np.zeros(width), np.zeros(width),
                   np.zeros(width), np.zeros(width), np.zeros((width, width)))

    def add(self, ha: np.ndarray, hb: np.ndarray) -> None:
        """Add a batch ``(rows, width)`` of activations of A and B."""
        self.count += ha.shape[0]
        da = ha - self.shift_a
        db = hb - self.shift_b
        self.sum_a += da.sum(axis=0)
        self.sum_b += db.sum(axis=0)
        self.sumsq_a += np.einsum("ni,ni->i", da, da)
        self.sumsq_b += np.einsum("ni,ni->i", db, db)
        self.cross += da.T @ db

    def variances(self) -> tuple[np.ndarray, np.ndarray]:
        """The variance of every unit of A and of B over the ``count`` rows."""
        ma, mb = self.sum_a / self.count, self.sum_b / self.count
        return np.maximum(self.sumsq_a / self.count - ma**2, 0.0), np.maximum(self.sumsq_b / self.count - mb**2, 0.0)

    def correlation(self, eps: float) -> np.ndarray:
        """``corr[i, j] = cov(a_i, b_j) / (std(a_i) std(b_j) + eps)`` over the ``count`` rows."""
        count = self.count
        var_a, var_b = self.variances()
        cov = self.cross / count - np.outer(self.sum_a / count, self.sum_b / count)
        return cov / (np.outer(np.sqrt(var_a), np.sqrt(var_b)) + eps)

    def check_varied(self, name: str) -> None:
        """``ValueError`` naming permutation ``name`` if every unit of A, or of B, is constant
        over the data: every correlation is then 0 and any matching is as good as another."""
        for which, var in zip(("params_a", "params_b"), self.variances()):
            if not np.any(var > 0):
                raise ValueError(f"every unit of permutation {name!r} is constant over the data in {which} "
                                 f"({self.count} rows): the correlations are all 0 and do not identify a matching; "
                                 "pass data on which the units vary")


def _stream_layer_sums(reader: _Reader, pa, pb, data, batch_size: int, names,
                       perms: Mapping[str, np.ndarray]) -> tuple[dict[str, _LayerSums], int]:
    """Stream ``data`` through A and B; returns the sums of the permutations ``names`` and the example count."""
    count = 0
    layers: dict[str, _LayerSums] | None = None
    for x in _batches(data, batch_size):
        x = jnp.asarray(x)
        if x.shape[0] == 0:
            continue
        ha, hb = reader.read(pa, pb, x, count, names, perms)
        if layers is None:
            layers = {name: _LayerSums.start(ha[name], hb[name]) for name in ha}
        for name, layer in layers.items():
            layer.add(ha[name], hb[name])
        count += x.shape[0]
    if count < 2:
        raise ValueError(f"data holds {count} example(s); correlations need at least 2")
    return layers, count


def _first_batch(data, batch_size: int):
    """The first non-empty batch of ``data`` and ``data`` to stream from the start again (a
    one-shot iterator is consumed: its batches are chained back); ``ValueError`` if none."""
    if hasattr(data, "shape") and hasattr(data, "__getitem__"):
        if int(data.shape[0]) == 0:
            raise ValueError("data holds no examples")
        return jnp.asarray(data[:batch_size]), data
    it, seen = iter(data), []
    for x in it:
        seen.append(x)
        if np.shape(x)[0]:
            return jnp.asarray(x), (data if it is not data else itertools.chain(seen, it))
    raise ValueError("data holds no examples")


class _LayerMatch(NamedTuple):
    perm: np.ndarray
    total_correlation: float
    seconds: float


def _match_layer(corr: np.ndarray, groups: int, lap_solver: str = "auto") -> _LayerMatch:
    """One LAP (within ``groups`` blocks, see :func:`solve_lap`) maximising the matched total correlation of a layer."""
    t0 = time.perf_counter()
    col = solve_lap(corr, groups, lap_solver)
    seconds = time.perf_counter() - t0
    return _LayerMatch(col, float(corr[np.arange(len(col)), col].sum()), seconds)


def activation_matching(
    spec: PermutationSpec,
    params_a: Mapping,
    params_b: Mapping,
    data,
    batch_size: int = 1024,
    apply_fn: Callable | None = None,
    *,
    eps: float = 1e-12,
    lap_solver: str = "auto",
) -> MatchResult:
    """Match hidden units of two networks by the correlation of their activations over ``data``.

    ``apply_fn(params, x)`` is either the model's ordinary forward function, returning its
    output (one array, e.g. the logits), or a function returning the hidden activations
    that every permutation of the spec acts on.

    *The model's output* (``mlp_apply``, ``partial(optunet_apply, conv="xla")``,
    ``resnet20_apply``, ``lambda p, x: model.apply({"params": p}, x)`` for a flax module):
    the activations of every permutation are captured from the traced computation, as
    :mod:`symlib.symmetry.derive` sees it (every ``jit`` inlined). For each permutation,
    the value used is one computed from the input by arithmetic (not a reshape, transpose,
    broadcast, pad, slice, concatenation or cast) that carries the permutation on one of
    its axes, with the fewest other axes that the spec permutes, then the most entries per
    unit (before any pooling or mean over positions), then the last computed: an MLP's or
    convolution's post-activation (for a BatchNorm'd convolution the ReLU after the norm),
    a residual stream after the last block adding to it, the heads of attention their
    attention weights, per-head query/key features the scaled queries and per-head value
    features the heads' outputs
    (:func:`~symlib.symmetry.derive.activation_sites`). A value's other
    permuted axes (the heads of a per-head feature) are aligned by their own matches first:
    those permutations are matched in an earlier pass over ``data``. The spec may be
    derived (:func:`~symlib.symmetry.derive.permutation_spec_from_apply`,
    :func:`~symlib.symmetry.derive.permutation_spec_from_flax`) or written by hand with the
    same parameter paths; a convolution must be ``lax.conv_general_dilated`` (OptuNet:
    ``conv="xla"``). The activations are recomputed (no output is needed), and the
    program is traced once per batch shape.

    *Given activations*: a dict ``{permutation name: activations}`` naming exactly the
    spec's permutations (any architecture; activations of layers the spec does not permute
    are simply left out), or a list ``[h_0, ..., h_{L-1}]`` by MLP hidden layer, layer
    ``l`` permuted by the spec's ``"P_l"``. Activations are ``(batch, ..., units)``, the
    units last. For OptuNet (:func:`symlib.core.cnn.optunet_hidden`, keyed by layer) with
    :func:`~symlib.symmetry.architectures.optunet_permutation_spec`::

        def apply_fn(params, x):
            h = optunet_hidden(params, x)
            return {"P_conv_1": h["conv_1"], "P_dense_0": h["dense_0"]}

    Either way all axes but the units are flattened into rows, so a convolutional feature
    map ``(n, h, w, c)`` counts every spatial position as an example, ``(n * h * w, c)``.
    Only running sums of the activations are kept (float64, shifted by the first batch's
    means for accuracy). For every permutation the Pearson correlation ``corr[i, j] =
    cov(a_i, b_j) / (std(a_i) std(b_j) + eps)`` is formed and one LAP maximises ``sum_i
    corr[i, p[i]]`` (within every block of a permutation with
    :attr:`~symlib.symmetry.specs.PermutationSpec.blocks`). Units with zero variance over
    the data (dead ReLUs, constants) have exactly zero covariance (thanks to the shift),
    so their correlations are 0, never NaN; a permutation all of whose units are constant in
    A or in B is an error. The activations of B do not depend on how
    its other layers are permuted, so the layers are independent and this is exact.

    Args:
        spec: the permutation spec.
        params_a: the reference network A (for a flax module with batch statistics, the
            whole variables dict, with ``apply_fn=module.apply``).
        params_b: the network B to permute, with the same shapes as A.
        data: an array whose leading axis holds the examples (``(N, d_0)`` vectors,
            ``(N, h, w, c)`` images; cut into batches of ``batch_size``) or an iterable
            of batches (a list, not a one-shot iterator, when captured activations need
            more than one pass, above).
        batch_size: examples per batch when ``data`` is an array (a positive int).
        apply_fn: ``apply_fn(params, x)`` returns the model's output (one array) or the
            hidden activations, a dict keyed by permutation name or a list by MLP hidden
            layer (above; default :func:`symlib.core.models.mlp_hidden`, the list form).
        eps: added to the product of standard deviations.
        lap_solver: ``"auto"`` or ``"scipy"``, as in :func:`weight_matching`.

    Returns:
        A :class:`MatchResult` with ``objective`` the matched total correlation of every
        permutation (list form: ``P_0, P_1, ...``; otherwise the spec's order),
        ``info["mean_correlation"]`` the means per unit, ``info["num_examples"]`` the
        number of examples seen and ``info["num_rows"]`` the rows (examples times spatial
        positions, times heads for a per-head feature) per permutation.

    Raises:
        ValueError: if ``batch_size`` is not a positive int or ``lap_solver`` is unknown; if
            A or B does not fit ``spec`` or holds nan or inf (naming the parameter); if ``data`` holds nan or
            inf or fewer than 2 examples; if every unit of a permutation is constant over ``data``
            in A or in B (naming the permutation); if ``apply_fn``'s dict does not name exactly the spec's
            permutations, its list does not match a spec ``P_0 .. P_{L-1}``, or the
            activations' last axis is not the permutation's size (naming it); for captured
            activations, naming the permutations whose activations no computed value carries,
            if two permutations of the spec act on one hidden axis of the model, if the
            batches' shapes change where the activations are, or if ``data`` is a one-shot
            iterator and more than one pass is needed.
        UnsupportedOperationError: (a ``ValueError``) naming a primitive of ``apply_fn``
            that the tracing cannot analyse, for captured activations.
        TypeError: if ``spec`` is not a :class:`~symlib.symmetry.specs.PermutationSpec`,
            or ``apply_fn`` returns neither an array, a dict nor a list.
    """
    t_start = time.perf_counter()
    batch_size = positive_int(batch_size, "batch_size")
    lap_solver = check_lap_solver(lap_solver)
    sizes = check_pair(spec, params_a, params_b)
    check_finite_params(flatten_params(params_a), "params_a")
    check_finite_params(flatten_params(params_b), "params_b")
    if apply_fn is None:
        from symlib.core.models import mlp_hidden as apply_fn
    pa = jax.tree_util.tree_map(jnp.asarray, params_a)
    pb = jax.tree_util.tree_map(jnp.asarray, params_b)

    t_cost = time.perf_counter()
    reiterable = hasattr(data, "shape") or iter(data) is not data
    x0, data = _first_batch(data, batch_size)
    reader = _Reader(spec, sizes, apply_fn, pa, x0)
    if len(reader.rounds) > 1 and not reiterable:
        raise ValueError(f"the activations of {reader.rounds[1:]} carry permutations matched before them "
                         f"({reader.rounds[0]}), so data is streamed {len(reader.rounds)} times: pass an array "
                         f"or a list of batches, not a one-shot iterator")
    matches: dict[str, _LayerMatch] = {}
    num_rows: dict[str, int] = {}
    cost_time = 0.0
    for names in reader.rounds:
        layers, count = _stream_layer_sums(reader, pa, pb, data, batch_size, names,
                                           {name: match.perm for name, match in matches.items()})
        cost_time += time.perf_counter() - t_cost
        for name, layer in layers.items():
            layer.check_varied(name)
            matches[name] = _match_layer(layer.correlation(eps), spec.blocks.get(name, 1), lap_solver)
            num_rows[name] = layer.count
        t_cost = time.perf_counter()
    order = list(spec.perm_names) if reader.captured else list(matches)
    matches = {name: matches[name] for name in order}
    return MatchResult(
        # names may be listed by the spec in another order; return them in spec order
        perms={name: matches[name].perm for name in spec.perm_names},
        objective=[match.total_correlation for match in matches.values()],
        sweeps=1,
        solver_time=sum(match.seconds for match in matches.values()),
        cost_time=cost_time,
        total_time=time.perf_counter() - t_start,
        num_solves=len(matches),
        info={
            "mean_correlation": [match.total_correlation / max(len(match.perm), 1) for match in matches.values()],
            "num_examples": count,
            "num_rows": {name: num_rows[name] for name in order},
            "lap_solver": lap_solver_used(lap_solver),
        },
    )
