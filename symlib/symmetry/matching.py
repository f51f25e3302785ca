"""Permutation matching of two networks, Git Re-Basin style (Ainsworth et al., ICLR 2023).

Everything is read from a :class:`~symlib.symmetry.specs.PermutationSpec`; no layer name is
hard-coded (except in :func:`activation_matching`, which maps hidden layer ``l`` of an MLP
to the spec's ``"P_l"``).

Convention
----------
As in :func:`symlib.symmetry.specs.apply_permutation` (gather form): a result ``perms`` maps every
permutation name to an index array ``p`` with "new unit ``i`` of B is old unit ``p[i]``",
so ``apply_permutation(spec, result.perms, params_b)`` is B aligned to A. If ``B`` is a
permuted copy of ``A``, ``B = apply_permutation(spec, q, A)``, the exact answer is
``inverse(q)``, i.e. ``compose(q[name], result.perms[name])`` is the identity.

Weight matching (:func:`weight_matching`)
-----------------------------------------
Maximise, over one permutation per name, the inner product of A with the permuted B,

    J(pi) = sum_params < w_A , pi(w_B) >  =  const - ||A - pi(B)||^2 / 2,

(the weight-matching objective of Ainsworth et al., Sec. 3.2: argmax over P of
sum_l <W_l^A, P_l W_l^B P_{l-1}^T>_F), i.e. minimise the L2 distance between A and the
permuted B. J is a sum of bilinear terms, so it is solved by
coordinate ascent: each *sweep* visits every permutation once, in a random order drawn
from ``key``; for permutation ``P`` (size n) all other permutations are held fixed and

    C[i, j] = sum_{(param, axis) acted on by P} < A_param moved(axis) row i ,
                                                  B_param (others applied) moved(axis) row j >

i.e. ``C = sum A_mat @ B_mat.T`` with ``A_mat`` of shape (n, rest). Then J, as a function
of ``P``, is ``const + sum_i C[i, p[i]]``: a linear assignment problem (LAP), solved
exactly by :func:`scipy.optimize.linear_sum_assignment` (``maximize=True``,
``p = col_ind``; row ``i`` of A is matched with row ``p[i]`` of B, which is the gather
convention). No step decreases J. We stop after the first sweep whose improvement is at
most ``tol * |J|`` (``tol = 1e-12``), or after ``max_iter`` sweeps.
(A spec in which one permutation acts on two axes of the same parameter makes J
quadratic in that permutation; the step above is then the usual linearisation and the
monotonicity guarantee is lost, as in the original method.)

Cost per sweep, one n x n LAP per permutation, O(n^3) worst case (Jonker-Volgenant-like
shortest augmenting paths), plus building C: O(n^2 * rest) per (param, axis), e.g.
O(n_{l-1} n_l n_{l+1}) for hidden layer l of an MLP.

Exact accelerations used here (same iterates as the plain loop, up to float rounding):

1. *Skip unchanged.* ``C`` for ``P`` depends only on the permutations acting on the other
   axes of the parameters ``P`` touches (its *dependencies*). If none changed since ``P``
   was last solved, ``C`` and hence the LAP solution are unchanged: the solve is skipped.
   For a one-hidden-layer MLP this halves the work (the second, confirming sweep is
   free); a sweep in which nothing needs solving ends the run.
2. *Incremental costs.* Terms whose other axes carry no permutation (biases, the input
   kernel, the output kernel) are computed once. For the others, ``C`` is cached and,
   when a dependency changed in only k of its entries, updated by a rank-k product
   ``A[:, ch] @ (B[:, new[ch]] - B[:, old[ch]]).T`` (``O(n^2 k)`` instead of
   ``O(n^2 rest)``); it is recomputed from scratch when more than half the columns moved.
3. *Concurrent independent solves.* Consecutive permutations of a sweep's order that do
   not depend on each other (``P_0`` and ``P_2`` of an MLP) are solved on two threads.
4. *J by gains.* J is computed once; then each accepted LAP adds its gain
   ``sum_i C[i, new[i]] - C[i, old[i]]`` (exact for "linear" specs, where no permutation
   acts twice on one parameter; otherwise J is recomputed after each sweep).

A proposed permutation replaces the current one only if it strictly improves the LAP
objective, so ties (e.g. duplicated or dead units) never churn. All arithmetic is numpy
float64. :class:`MatchResult` reports the time spent in the LAP solver and in building
costs. Where the time goes (2 CPU cores, random He-init nets; benchmarks/README.md): for
784-512-512-512-10 about 60% LAP and 30% costs, ~1.8x faster than the plain loop; for
784-2048x3-10 about 57% LAP (52 solves instead of 66) and 34% costs, ~2.9x faster. The
LAP solver is now the bottleneck; scipy's solver cannot be warm-started (we tried
column-dual shifts from the previous solve: no gain), so the remaining speed-ups are the
skipped and the concurrent solves.

Activation matching (:func:`activation_matching`)
-------------------------------------------------
For MLPs: the Pearson correlation of hidden units of A and B over a data set (streamed in
batches, only sums kept), one LAP per hidden layer maximising the total correlation.

Many-to-one (:func:`weight_matching_many`)
------------------------------------------
Match every network of a stack (e.g. posterior samples) to one reference: the same
coordinate ascent for all samples in lock-step (same sweep orders as
``weight_matching(key, ...)``), costs built in chunks of samples, LAPs solved on a
thread pool (scipy releases the GIL) overlapping the next chunk's matrix products.
"""
from __future__ import annotations

import functools
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linear_sum_assignment

from symlib.symmetry import permutations as _perm
from symlib.symmetry.specs import PermutationSpec, check_perm_names, check_spec, flatten_params, unflatten_params

__all__ = [
    "ManyMatchResult",
    "MatchResult",
    "activation_matching",
    "apply_permutation_many",
    "weight_matching",
    "weight_matching_many",
]


# --------------------------------------------------------------------------- results


@dataclass
class MatchResult:
    """Outcome of :func:`weight_matching` or :func:`activation_matching`.

    perms: name -> int64 permutation (gather convention, see the module docstring).
    objective: weight matching: J after each sweep (``len == sweeps``; non-decreasing for
        specs where no permutation acts twice on one parameter); activation
        matching: the total matched correlation of each hidden layer, in ``P_0, P_1, ...``
        order.
    sweeps: sweeps run (weight matching; includes the last, confirming sweep) or 1.
    initial_objective: J before the first sweep (weight matching; the identity or
        ``init_perms``), else ``nan``.
    converged: whether the stopping rule fired before ``max_iter``.
    solver_time / cost_time / total_time: wall-clock seconds in the LAP solver, in
        building cost matrices (and J), and overall.
    num_solves / num_skipped: LAPs solved / skipped because nothing they depend on changed.
    info: extra, method-specific numbers.
    """

    perms: dict[str, np.ndarray]
    objective: list[float]
    sweeps: int = 1
    initial_objective: float = float("nan")
    converged: bool = True
    solver_time: float = 0.0
    cost_time: float = 0.0
    total_time: float = 0.0
    num_solves: int = 0
    num_skipped: int = 0
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class ManyMatchResult:
    """Outcome of :func:`weight_matching_many` for ``m`` samples.

    perms: name -> int64 array ``(m, n)``, row ``s`` aligning sample ``s`` to the reference.
    objective: ``(m,)`` final J of every sample; ``initial_objective`` likewise before the
        first sweep; ``objective_history``: one ``(m,)`` array per sweep, holding each
        sample's J after that sweep (frozen once the sample has converged).
    sweeps: ``(m,)`` sweeps run per sample; ``converged``: ``(m,)`` bool.
    solver_time: seconds inside LAP calls summed over threads (they overlap the cost
        building); ``info["lap_wait_time"]``: wall time spent waiting for them.
    """

    perms: dict[str, np.ndarray]
    objective: np.ndarray
    sweeps: np.ndarray
    initial_objective: np.ndarray
    converged: np.ndarray
    objective_history: list[np.ndarray] = field(default_factory=list)
    solver_time: float = 0.0
    cost_time: float = 0.0
    total_time: float = 0.0
    num_solves: int = 0
    num_skipped: int = 0
    info: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def _all_finite(arr: np.ndarray) -> bool:
    # a sum is finite iff every entry is (barring overflow): O(1) memory; exact check if not
    with np.errstate(invalid="ignore", over="ignore"):
        if arr.size == 0 or np.isfinite(np.sum(arr, dtype=np.float64)):
            return True
    return bool(np.all(np.isfinite(arr)))


def _as_f64(leaf, path: str) -> np.ndarray:
    arr = np.asarray(leaf, dtype=np.float64)
    if not _all_finite(arr):
        raise ValueError(f"parameter {path!r} holds non-finite values (nan or inf)")
    return arr


def _check_pair(spec: PermutationSpec, params_a: Mapping, params_b: Mapping, batch_dims_b: int = 0) -> dict[str, int]:
    """check_spec on both; shapes of A and B (after B's batch axes) must agree per param."""
    if not isinstance(spec, PermutationSpec):
        raise TypeError(f"spec must be a PermutationSpec, got {type(spec).__name__}")
    try:
        sizes = check_spec(spec, params_a)
    except ValueError as e:
        raise ValueError(f"params_a does not fit the spec: {e}") from None
    try:
        check_spec(spec, params_b, batch_dims_b)
    except ValueError as e:
        raise ValueError(f"params_b does not fit the spec: {e}") from None
    fa, fb = flatten_params(params_a), flatten_params(params_b)
    lead = None
    for path in spec.axes:
        sa, sb = tuple(np.shape(fa[path])), tuple(np.shape(fb[path]))
        if sb[batch_dims_b:] != sa:
            raise ValueError(
                f"parameter {path!r} has shape {sa} in params_a but {sb[batch_dims_b:]} in params_b"
                + (f" (after {batch_dims_b} batch axes)" if batch_dims_b else "")
                + "; A and B must have identical shapes"
            )
        if batch_dims_b:
            if lead is None:
                lead = sb[:batch_dims_b]
            elif sb[:batch_dims_b] != lead:
                raise ValueError(f"parameter {path!r} has batch shape {sb[:batch_dims_b]}, others {lead}")
    return sizes


def _rng(key) -> np.random.Generator:
    return _perm.as_generator(key)


def _c_strides(shape: tuple[int, ...]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


class _Term:
    """One (parameter, axis) pair acted on by permutation ``name``.

    ``B_mat = moveaxis(w, axis, 0).reshape(n, rest)``; the other axes (in C order) carry
    ``rest_names``. ``colsrc(perms)`` gives, for every column of B with the other
    permutations applied, the column of the unpermuted ``B_mat`` it comes from.
    """

    def __init__(self, path: str, axis: int, shape: tuple[int, ...], names: tuple):
        self.path, self.axis = path, axis
        self.n = shape[axis]
        self.rest_shape = shape[:axis] + shape[axis + 1:]
        self.rest_names = names[:axis] + names[axis + 1:]
        self.m = int(np.prod(self.rest_shape, dtype=np.int64))
        self.deps = {q for q in self.rest_names if q is not None}
        self.variable = bool(self.deps)
        self.strides = _c_strides(self.rest_shape)

    def mat(self, w: np.ndarray, batch: int = 0) -> np.ndarray:
        """``(…, n, rest)`` view/copy of ``w`` with this term's axis first (after ``batch`` axes)."""
        moved = np.moveaxis(w, batch + self.axis, batch)
        return moved.reshape(moved.shape[:batch] + (self.n, self.m))

    def colsrc(self, perms: Mapping[str, np.ndarray]) -> np.ndarray:
        if len(self.rest_shape) == 1:
            return perms[self.rest_names[0]]
        idx = np.zeros((), np.int64)
        r = len(self.rest_shape)
        for k, (d, q, st) in enumerate(zip(self.rest_shape, self.rest_names, self.strides)):
            comp = perms[q] if q is not None else np.arange(d, dtype=np.int64)
            idx = idx + (st * comp).reshape((1,) * k + (d,) + (1,) * (r - k - 1))
        return np.broadcast_to(idx, self.rest_shape).reshape(-1)

    def colsrc_batch(self, perms: Mapping[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        """``(len(rows), rest)``: :meth:`colsrc` of every selected sample (perms are ``(m, n)``)."""
        c = len(rows)
        if len(self.rest_shape) == 1:
            return perms[self.rest_names[0]][rows]
        idx = np.zeros((c,) + (1,) * len(self.rest_shape), np.int64)
        r = len(self.rest_shape)
        for k, (d, q, st) in enumerate(zip(self.rest_shape, self.rest_names, self.strides)):
            if q is not None:
                comp = perms[q][rows]
            else:
                comp = np.broadcast_to(np.arange(d, dtype=np.int64), (c, d))
            idx = idx + (st * comp).reshape((c,) + (1,) * k + (d,) + (1,) * (r - k - 1))
        return np.broadcast_to(idx, (c,) + self.rest_shape).reshape(c, -1)


def _build_terms(spec: PermutationSpec, shapes: Mapping[str, tuple]) -> dict[str, list[_Term]]:
    terms: dict[str, list[_Term]] = {}
    for name, where in spec.perm_to_axes.items():
        terms[name] = [_Term(path, axis, tuple(shapes[path]), spec.axes[path]) for path, axis in where]
    return terms


def _deps(terms: Mapping[str, list[_Term]]) -> dict[str, tuple[str, ...]]:
    return {name: tuple(sorted(set().union(*(t.deps for t in ts)))) for name, ts in terms.items()}


def _permuted(spec: PermutationSpec, path: str, w: np.ndarray, perms: Mapping[str, np.ndarray] | None) -> np.ndarray:
    if perms is None:  # all identities
        return w
    for axis, name in enumerate(spec.axes[path]):
        if name is not None:
            w = np.take(w, perms[name], axis=axis)
    return w


def _objective(spec: PermutationSpec, fa: Mapping, fb: Mapping, perms: Mapping[str, np.ndarray] | None) -> float:
    """J = sum over params of <A, perms(B)>, float64 (``perms=None``: all identities)."""
    total = 0.0
    for path in spec.axes:
        total += float(np.vdot(fa[path], _permuted(spec, path, fb[path], perms)))
    return total


def _init_perms(init_perms, sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    perms = {name: np.arange(n, dtype=np.int64) for name, n in sizes.items()}
    if init_perms is None:
        return perms
    unknown = [k for k in init_perms if k not in sizes]
    if unknown:
        raise ValueError(f"init_perms has unknown permutation name(s) {unknown}; the spec has {list(sizes)}")
    for name, p in init_perms.items():
        try:
            perms[name] = _perm.validate(p, sizes[name])
        except ValueError as e:
            raise ValueError(f"init_perms[{name!r}]: {e}") from None
    return perms


def _check_iter(max_iter, tol):
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative int, got {max_iter!r}")
    if not (tol >= 0):
        raise ValueError(f"tol must be non-negative, got {tol!r}")
    return int(max_iter)


def _independent_runs(order: list[str], deps: Mapping[str, tuple[str, ...]]) -> list[list[str]]:
    """Cut ``order`` into maximal runs of consecutive, mutually independent permutations.

    Within a run no permutation's cost depends on another's, so solving the run's LAPs
    together (concurrently) gives exactly the iterates of solving them one by one.
    """
    runs: list[list[str]] = []
    for name in order:
        if runs and all(name not in deps[g] and g not in deps[name] for g in runs[-1]):
            runs[-1].append(name)
        else:
            runs.append([name])
    return runs


def _gain(C: np.ndarray, new: np.ndarray, old: np.ndarray) -> float:
    """LAP objective gain of ``new`` over ``old`` (0 when equal, so ties never churn)."""
    if np.array_equal(new, old):
        return 0.0
    rows = np.arange(len(new))
    return float(C[rows, new].sum() - C[rows, old].sum())


def _lap(C: np.ndarray) -> np.ndarray:
    """Column matched to every row, maximising ``sum_i C[i, col[i]]``."""
    _, col = linear_sum_assignment(C, maximize=True)
    return col.astype(np.int64, copy=False)


# --------------------------------------------------------------------------- weight matching


class _CostCache:
    """Cost matrices of one pair (A, B), with constant parts precomputed and low-rank updates."""

    #: recompute from scratch when more than this fraction of a cost's columns moved
    FULL_FRACTION = 0.5

    def __init__(self, terms: Mapping[str, list[_Term]], fa: Mapping, fb: Mapping):
        self.terms = terms
        self.const: dict[str, np.ndarray] = {}
        self.var: dict[str, list[tuple[_Term, np.ndarray, np.ndarray]]] = {}
        for name, ts in terms.items():
            n = ts[0].n
            const = np.zeros((n, n))
            var = []
            for t in ts:
                A = np.ascontiguousarray(t.mat(fa[t.path]).T)  # (rest, n)
                B = np.ascontiguousarray(t.mat(fb[t.path]).T)  # (rest, n)
                if t.variable:
                    var.append((t, A, B))
                else:
                    const += A.T @ B
            self.const[name] = const
            self.var[name] = var
        self.cache: dict[str, tuple[np.ndarray, list[np.ndarray]]] = {}

    def cost(self, name: str, perms: Mapping[str, np.ndarray]) -> np.ndarray:
        var = self.var[name]
        srcs = [t.colsrc(perms) for t, _, _ in var]
        if name in self.cache:
            C, old = self.cache[name]
            changed = [np.flatnonzero(s != o) for s, o in zip(srcs, old)]
            moved = sum(len(ch) for ch in changed)
            if moved == 0:
                return C
            if moved <= self.FULL_FRACTION * sum(t.m for t, _, _ in var):
                for (t, A, B), ch, s, o in zip(var, changed, srcs, old):
                    if len(ch):
                        C += A[ch].T @ (B[s[ch]] - B[o[ch]])
                self.cache[name] = (C, [np.array(s, copy=True) for s in srcs])
                return C
        C = self.const[name].copy()
        for (t, A, B), s in zip(var, srcs):
            C += A.T @ B[s]
        self.cache[name] = (C, [np.array(s, copy=True) for s in srcs])
        return C


def weight_matching(
    key,
    spec: PermutationSpec,
    params_a: Mapping,
    params_b: Mapping,
    max_iter: int = 100,
    init_perms: Mapping[str, Any] | None = None,
    verbose: bool = False,
    *,
    tol: float = 1e-12,
    num_threads: int | None = None,
) -> MatchResult:
    """Permutations of B's units making B closest to A in L2 (Git Re-Basin weight matching).

    Maximises ``J = sum_params <A, apply_permutation(spec, perms, B)>`` by coordinate ascent
    over the spec's permutations (module docstring): each sweep visits them in a random
    order drawn from ``key`` (jax key, int seed, numpy Generator or None), solving one
    linear assignment per permutation. Stops after the first sweep improving J by at
    most ``tol * |J|``, or after ``max_iter`` sweeps. ``init_perms`` (name -> perm, missing
    names = identity) sets the starting point.

    Consecutive permutations of a sweep that do not depend on each other (e.g. ``P_0``
    and ``P_2`` of an MLP) have their LAPs solved concurrently on ``num_threads`` threads
    (default ``min(4, cpu_count)``; scipy releases the GIL); the iterates are the same.

    Returns a :class:`MatchResult`: ``apply_permutation(spec, result.perms, params_b)``
    is the aligned B; ``result.objective`` holds J after each sweep (non-decreasing).
    Raises ``ValueError`` (naming the parameter) when A or B does not fit ``spec`` or
    their shapes differ, or when a parameter is not finite.
    """
    t_start = time.perf_counter()
    max_iter = _check_iter(max_iter, tol)
    num_threads = _default_threads() if num_threads is None else max(1, int(num_threads))
    sizes = _check_pair(spec, params_a, params_b)
    fa = {p: _as_f64(v, p) for p, v in flatten_params(params_a).items()}
    fb = {p: _as_f64(v, p) for p, v in flatten_params(params_b).items()}
    perms = _init_perms(init_perms, sizes)
    names = list(spec.perm_names)
    rng = _rng(key)

    t0 = time.perf_counter()
    terms = _build_terms(spec, {p: fa[p].shape for p in fa})
    deps = _deps(terms)
    costs = _CostCache(terms, fa, fb)
    cost_time = time.perf_counter() - t0
    solver_time = 0.0

    version = {name: 0 for name in names}
    seen: dict[str, tuple[int, ...] | None] = {name: None for name in names}
    # J is computed once, then tracked by adding accepted LAP gains: exact when no
    # permutation acts twice on one parameter ("linear" spec), otherwise recomputed
    linear = all(name not in deps[name] for name in names)
    obj = _objective(spec, fa, fb, None if init_perms is None else perms)
    initial = obj
    history: list[float] = []
    solves = skipped = 0
    converged = False
    pool = None
    try:
        for sweep in range(max_iter):
            order = rng.permutation(len(names))
            before = obj
            changed_any = False
            for group in _independent_runs([names[k] for k in order], deps):
                todo = []
                for name in group:
                    if seen[name] == tuple(version[q] for q in deps[name]):
                        skipped += 1
                    else:
                        todo.append(name)
                if not todo:
                    continue
                t0 = time.perf_counter()
                Cs = [costs.cost(name, perms) for name in todo]
                t1 = time.perf_counter()
                if len(todo) > 1 and num_threads > 1:
                    if pool is None:
                        pool = ThreadPoolExecutor(num_threads)
                    cols = list(pool.map(_lap, Cs))
                else:
                    cols = [_lap(C) for C in Cs]
                t2 = time.perf_counter()
                cost_time += t1 - t0
                solver_time += t2 - t1
                solves += len(todo)
                for name, C, col in zip(todo, Cs, cols):
                    gain = _gain(C, col, perms[name])
                    if gain > 0:
                        perms[name] = col
                        version[name] += 1
                        changed_any = True
                        obj += gain
                for name in todo:
                    # the solve saw the dependencies as they are now (the permutation's own
                    # change included when it depends on itself)
                    seen[name] = tuple(version[q] for q in deps[name])
            if changed_any and not linear:
                obj = _objective(spec, fa, fb, perms)
            history.append(obj)
            if verbose:
                print(f"weight_matching sweep {sweep + 1}: J = {obj:.10g} (+{obj - before:.3g}), "
                      f"{solves} LAPs solved, {skipped} skipped")
            if obj - before <= tol * abs(before):
                converged = True
                break
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return MatchResult(
        perms=perms,
        objective=history,
        sweeps=len(history),
        initial_objective=initial,
        converged=converged,
        solver_time=solver_time,
        cost_time=cost_time,
        total_time=time.perf_counter() - t_start,
        num_solves=solves,
        num_skipped=skipped,
    )


# --------------------------------------------------------------------------- activation matching


def _hidden_perm_names(spec: PermutationSpec, num_hidden: int, widths: list[int], sizes: Mapping[str, int]) -> list[str]:
    expected = [f"P_{l}" for l in range(num_hidden)]
    if sorted(spec.perm_names) != sorted(expected):
        raise ValueError(
            f"activation_matching maps hidden layer l to permutation 'P_l': the network has "
            f"{num_hidden} hidden layer(s), so the spec must name exactly {expected}, got {spec.perm_names}"
        )
    for l, (name, w) in enumerate(zip(expected, widths)):
        if sizes[name] != w:
            raise ValueError(f"hidden layer {l} has {w} units but the spec's {name!r} permutes {sizes[name]}")
    return expected


def _batches(data, batch_size: int) -> Iterable:
    if hasattr(data, "shape") and hasattr(data, "__getitem__"):
        n = int(data.shape[0])
        for i in range(0, n, batch_size):
            yield data[i:i + batch_size]
    else:
        yield from data


@functools.partial(jax.jit, static_argnums=0)
def _hidden_pair(apply_fn, pa, pb, x):
    return apply_fn(pa, x), apply_fn(pb, x)


def activation_matching(
    spec: PermutationSpec,
    params_a: Mapping,
    params_b: Mapping,
    data,
    batch_size: int = 1024,
    apply_fn: Callable | None = None,
    *,
    eps: float = 1e-12,
) -> MatchResult:
    """Match hidden units of two MLPs by the correlation of their activations over ``data``.

    ``apply_fn(params, x)`` returns the list of hidden activations ``[(batch, n_0), ...,
    (batch, n_{L-1})]`` (default :func:`symlib.core.models.mlp_hidden`); hidden layer ``l`` is
    permuted by the spec's ``"P_l"`` (``ValueError`` unless the spec names exactly
    ``P_0 .. P_{L-1}`` with matching sizes). ``data`` is an array ``(N, d_0)`` (cut into
    batches of ``batch_size``) or an iterable of batches; only running sums are kept
    (float64, shifted by the first batch's means for accuracy).

    For every layer the Pearson correlation ``corr[i, j] = cov(a_i, b_j) / (std(a_i)
    std(b_j) + eps)`` is formed and one LAP maximises ``sum_i corr[i, p[i]]``. Units
    with zero variance over the data (dead ReLUs, constants) have exactly zero covariance
    (thanks to the shift), so their correlations are 0, never NaN. For MLPs the hidden
    activations of B do not depend on the other layers' permutations, so the layers are
    independent and this is exact.

    Returns a :class:`MatchResult` with ``objective[l]`` the matched total correlation of
    layer ``l`` and ``info["mean_correlation"]`` the per-layer means.
    """
    t_start = time.perf_counter()
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    batch_size = int(batch_size)
    sizes = _check_pair(spec, params_a, params_b)
    if apply_fn is None:
        from symlib.core.models import mlp_hidden as apply_fn
    hidden = functools.partial(_hidden_pair, apply_fn)
    pa = jax.tree_util.tree_map(jnp.asarray, params_a)
    pb = jax.tree_util.tree_map(jnp.asarray, params_b)

    count = 0
    shift_a = shift_b = None
    sa = sb = saa = sbb = sab = None
    t_cost = time.perf_counter()
    for x in _batches(data, batch_size):
        x = jnp.asarray(x)
        if x.shape[0] == 0:
            continue
        ha, hb = hidden(pa, pb, x)
        ha = [np.asarray(h, np.float64) for h in ha]
        hb = [np.asarray(h, np.float64) for h in hb]
        if shift_a is None:
            if len(ha) != len(hb):
                raise ValueError("apply_fn returned different numbers of hidden layers for A and B")
            widths = [h.shape[-1] for h in ha]
            names = _hidden_perm_names(spec, len(ha), widths, sizes)
            shift_a = [h.mean(axis=0) for h in ha]
            shift_b = [h.mean(axis=0) for h in hb]
            sa = [np.zeros(w) for w in widths]
            sb = [np.zeros(w) for w in widths]
            saa = [np.zeros(w) for w in widths]
            sbb = [np.zeros(w) for w in widths]
            sab = [np.zeros((w, w)) for w in widths]
        for l, (x_a, x_b) in enumerate(zip(ha, hb)):
            da = x_a - shift_a[l]
            db = x_b - shift_b[l]
            sa[l] += da.sum(axis=0)
            sb[l] += db.sum(axis=0)
            saa[l] += np.einsum("ni,ni->i", da, da)
            sbb[l] += np.einsum("ni,ni->i", db, db)
            sab[l] += da.T @ db
        count += x.shape[0]
    if count == 0:
        raise ValueError("data holds no examples")
    cost_time = time.perf_counter() - t_cost

    perms: dict[str, np.ndarray] = {}
    objective, mean_corr = [], []
    solver_time = 0.0
    for l, name in enumerate(names):
        ma, mb = sa[l] / count, sb[l] / count
        var_a = np.maximum(saa[l] / count - ma**2, 0.0)
        var_b = np.maximum(sbb[l] / count - mb**2, 0.0)
        cov = sab[l] / count - np.outer(ma, mb)
        corr = cov / (np.outer(np.sqrt(var_a), np.sqrt(var_b)) + eps)
        t0 = time.perf_counter()
        col = _lap(corr)
        solver_time += time.perf_counter() - t0
        perms[name] = col
        total = float(corr[np.arange(len(col)), col].sum())
        objective.append(total)
        mean_corr.append(total / max(len(col), 1))
    # names may be listed by the spec in another order; return them in spec order
    perms = {name: perms[name] for name in spec.perm_names}
    return MatchResult(
        perms=perms,
        objective=objective,
        sweeps=1,
        solver_time=solver_time,
        cost_time=cost_time,
        total_time=time.perf_counter() - t_start,
        num_solves=len(names),
        info={"mean_correlation": mean_corr, "num_examples": count},
    )


# --------------------------------------------------------------------------- many-to-one


def apply_permutation_many(spec: PermutationSpec, perms_stack: Mapping[str, Any], params_stack: Mapping):
    """Permute every network of a stack by its own permutations.

    ``params_stack`` has a leading axis ``m`` on every leaf; ``perms_stack[name]`` is an
    integer array ``(m, n)`` whose row ``s`` is applied to network ``s`` exactly as
    :func:`symlib.symmetry.specs.apply_permutation` would (``new = take(old, perms[s], axis)``).
    numpy leaves stay numpy (``np.take_along_axis``); other leaves use ``jnp``. Returns
    the same structure (nested or flat).
    """
    sizes = check_spec(spec, params_stack, batch_dims=1)
    flat = flatten_params(params_stack)
    check_perm_names(sizes, perms_stack)
    ms = {int(np.shape(v)[0]) for v in flat.values()}
    if len(ms) > 1:
        raise ValueError(f"leaves of params_stack disagree on the stack size: {sorted(ms)}")
    m = ms.pop() if ms else 0
    checked = {}
    for name, p in perms_stack.items():
        arr = np.asarray(p)
        if arr.shape != (m, sizes[name]) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"perms_stack[{name!r}] must be an integer array of shape ({m}, {sizes[name]}), "
                f"got {arr.dtype}{list(arr.shape)}"
            )
        if m and not np.array_equal(np.sort(arr, axis=1), np.broadcast_to(np.arange(sizes[name]), arr.shape)):
            bad = int(np.flatnonzero((np.sort(arr, axis=1) != np.arange(sizes[name])).any(axis=1))[0])
            raise ValueError(f"perms_stack[{name!r}] row {bad} is not a permutation of {sizes[name]} items")
        checked[name] = arr.astype(np.int64, copy=False)
    out = {}
    for path, leaf in flat.items():
        names = spec.axes[path]
        nd = len(names) + 1
        for axis, name in enumerate(names):
            if name is None:
                continue
            idx = checked[name].reshape((m,) + (1,) * axis + (sizes[name],) + (1,) * (nd - axis - 2))
            if isinstance(leaf, np.ndarray):
                leaf = np.take_along_axis(leaf, idx, axis=axis + 1)
            else:
                leaf = jnp.take_along_axis(leaf, jnp.asarray(idx), axis=axis + 1)
        out[path] = leaf
    nested = any(isinstance(v, Mapping) for v in params_stack.values())
    return unflatten_params(out) if nested else out


def _default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def weight_matching_many(
    key,
    spec: PermutationSpec,
    params_ref: Mapping,
    params_stack: Mapping,
    max_iter: int = 100,
    *,
    tol: float = 1e-12,
    chunk_size: int | None = None,
    num_threads: int | None = None,
    precision: str = "float64",
    verbose: bool = False,
) -> ManyMatchResult:
    """:func:`weight_matching` of every network of a stack (leading axis ``m``) to one reference.

    Sample ``s`` follows the iterates of ``weight_matching(key, spec, params_ref, sample_s,
    max_iter, tol=tol)`` (up to float rounding): all samples sweep together with the same
    random orders, and each stops (and is frozen) when its own stopping rule fires. Per
    permutation step only the samples whose dependencies changed are solved (the skip
    rule of the module docstring); their costs are rebuilt in full (no per-sample cost
    cache, to bound memory), ``chunk_size`` samples at a time (default: at most 64
    samples and 64 MiB of float64 costs per chunk), with one BLAS product per sample and
    term, and the chunk's LAPs are solved on ``num_threads`` threads (default
    ``min(4, cpu_count)``; 1 = inline) while the next chunk is built. For a single
    permutation (one hidden layer) one solve per sample is optimal; the second sweep only
    confirms it and costs nothing.

    ``precision="float32"`` forms the matrix products in float32 (up to 2x faster on CPU;
    costs are still accumulated, and J computed, in float64): the permutations then agree
    with :func:`weight_matching` unless two assignments are within float32 rounding of each
    other. The default ``"float64"`` reproduces it up to float64 rounding.

    Returns a :class:`ManyMatchResult` (``perms[name]`` is ``(m, n)``; apply with
    :func:`apply_permutation_many`).
    """
    t_start = time.perf_counter()
    max_iter = _check_iter(max_iter, tol)
    sizes = _check_pair(spec, params_ref, params_stack, batch_dims_b=1)
    fa = {p: _as_f64(v, p) for p, v in flatten_params(params_ref).items()}
    fb_raw = {p: np.asarray(v) for p, v in flatten_params(params_stack).items()}
    for p, v in fb_raw.items():
        if not _all_finite(v):
            raise ValueError(f"parameter {p!r} of params_stack holds non-finite values (nan or inf)")
    m = int(next(iter(fb_raw.values())).shape[0]) if fb_raw else 0
    names = list(spec.perm_names)
    rng = _rng(key)
    terms = _build_terms(spec, {p: fa[p].shape for p in fa})
    deps = _deps(terms)
    n_max = max(sizes.values(), default=1)
    if chunk_size is None:
        chunk_size = max(1, min(64, (64 * 2**20 // 8) // max(n_max * n_max, 1)))
    chunk_size = max(1, int(chunk_size))
    num_threads = _default_threads() if num_threads is None else max(1, int(num_threads))

    # reference matrices, (n, rest) per term
    if precision not in ("float64", "float32"):
        raise ValueError(f"precision must be 'float64' or 'float32', got {precision!r}")
    dtype = np.dtype(precision)
    amat = {(t.path, t.axis): np.ascontiguousarray(t.mat(fa[t.path]), dtype=dtype) for ts in terms.values() for t in ts}

    perms = {name: np.tile(np.arange(n, dtype=np.int64), (m, 1)) for name, n in sizes.items()}
    version = {name: np.zeros(m, np.int64) for name in names}
    seen = {name: np.full((m, len(deps[name])), -1, np.int64) for name in names}
    solved = {name: np.zeros(m, bool) for name in names}

    def objectives(rows: np.ndarray, identity: bool = False) -> np.ndarray:
        # the same float64 arithmetic as weight_matching, so J values agree bit for bit
        out = np.zeros(len(rows))
        for j, s in enumerate(rows):
            fb_s = {p: fb_raw[p][s].astype(np.float64, copy=False) for p in fb_raw}
            if identity:
                out[j] = _objective(spec, fa, fb_s, None)
            else:
                out[j] = _objective(spec, fa, fb_s, {k: v[s] for k, v in perms.items()})
        return out

    linear = all(name not in deps[name] for name in names)  # J tracked by gains, see weight_matching
    cost_time = solver_time = 0.0
    solves = skipped = 0
    t0 = time.perf_counter()
    obj = objectives(np.arange(m), identity=True)
    cost_time += time.perf_counter() - t0
    initial = obj.copy()
    active = np.ones(m, bool)
    sweeps = np.zeros(m, np.int64)
    converged = np.zeros(m, bool)
    history: list[np.ndarray] = []

    def dep_state(name: str) -> np.ndarray:
        if not deps[name]:
            return np.zeros((m, 0), np.int64)
        return np.stack([version[q] for q in deps[name]], axis=1)

    buffers: dict[int, list[np.ndarray]] = {}
    use = [0]

    def build(name: str, rows: np.ndarray) -> np.ndarray:
        # One BLAS gemm per (sample, term): on CPU as fast as any batched form we tried
        # (numpy's stacked matmul is ~4x slower, jax.vmap in float32 ~ numpy float32).
        # Two reused output buffers (at most two chunks are alive: one being solved, one
        # being built) avoid page-faulting fresh memory for every chunk.
        n = sizes[name]
        if n not in buffers:
            buffers[n] = [np.empty((chunk_size, n, n)) for _ in range(2)]
        use[0] ^= 1
        C = buffers[n][use[0]][: len(rows)]
        for k, t in enumerate(terms[name]):
            A = amat[(t.path, t.axis)]
            leaf = fb_raw[t.path]
            src = t.colsrc_batch(perms, rows) if t.variable else None
            for j, s in enumerate(rows):
                Bs = t.mat(leaf[s])  # (n, rest) view, stack dtype
                if src is not None:
                    Bs = np.take(Bs, src[j], axis=1)
                prod = A @ Bs.astype(dtype, copy=False).T
                if k == 0:
                    C[j] = prod
                else:
                    C[j] += prod
        return C

    pool = ThreadPoolExecutor(num_threads) if num_threads > 1 else None
    lap_seconds = [0.0]

    def timed_lap(C: np.ndarray) -> tuple[np.ndarray, float]:
        t = time.perf_counter()
        col = _lap(C)
        return col, time.perf_counter() - t

    def submit(C: np.ndarray) -> Callable[[], list[tuple[np.ndarray, float]]]:
        if pool is None:
            done = [timed_lap(c) for c in C]
            return lambda: done
        futs = [pool.submit(timed_lap, c) for c in C]
        return lambda: [f.result() for f in futs]

    wait_time = 0.0
    try:
        for sweep in range(max_iter):
            if not active.any():
                break
            order = rng.permutation(len(names))
            before = obj.copy()
            changed = np.zeros(m, bool)
            for k in order:
                name = names[k]
                need = active & ~(solved[name] & (seen[name] == dep_state(name)).all(axis=1))
                skipped += int((active & ~need).sum())
                rows_all = np.flatnonzero(need)
                if len(rows_all) == 0:
                    continue
                pending: deque = deque()

                def finish(rows, C, get):
                    nonlocal wait_time
                    t = time.perf_counter()
                    results = get()
                    wait_time += time.perf_counter() - t
                    for j, s in enumerate(rows):
                        col, dt = results[j]
                        lap_seconds[0] += dt
                        gain = _gain(C[j], col, perms[name][s])
                        if gain > 0:
                            perms[name][s] = col
                            version[name][s] += 1
                            changed[s] = True
                            obj[s] += gain

                for lo in range(0, len(rows_all), chunk_size):
                    rows = rows_all[lo:lo + chunk_size]
                    t0 = time.perf_counter()
                    C = build(name, rows)
                    cost_time += time.perf_counter() - t0
                    pending.append((rows, C, submit(C)))
                    solves += len(rows)
                    while len(pending) > 1:  # keep one chunk in flight while building the next
                        finish(*pending.popleft())
                while pending:
                    finish(*pending.popleft())
                seen[name][rows_all] = dep_state(name)[rows_all]
                solved[name][rows_all] = True
            upd = np.flatnonzero(active & changed)
            if len(upd) and not linear:
                t0 = time.perf_counter()
                obj[upd] = objectives(upd)
                cost_time += time.perf_counter() - t0
            sweeps[active] += 1
            history.append(obj.copy())
            done = active & (obj - before <= tol * np.abs(before))
            converged |= done
            active &= ~done
            if verbose:
                print(f"weight_matching_many sweep {sweep + 1}: {int(active.sum())} of {m} still active, "
                      f"mean J = {obj.mean() if m else float('nan'):.10g}")
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    solver_time = lap_seconds[0]
    return ManyMatchResult(
        perms=perms,
        objective=obj,
        sweeps=sweeps,
        initial_objective=initial,
        converged=converged,
        objective_history=history,
        solver_time=solver_time,
        cost_time=cost_time,
        total_time=time.perf_counter() - t_start,
        num_solves=solves,
        num_skipped=skipped,
        info={"chunk_size": chunk_size, "num_threads": num_threads, "lap_wait_time": wait_time},
    )
