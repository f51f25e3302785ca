"""Pairwise weight matching (:func:`~symlib.symmetry.matching.weight_matching`).

Maximise, over one permutation per name, the inner product of A with the permuted B::

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
convention). No step decreases J. We stop after the first sweep whose change of J is at
most ``tol * |J|`` (``tol = 1e-12``), or after ``max_iter`` sweeps.

A spec in which one permutation acts on two axes of the same parameter (a residual
``x + Dense(x)``: ``P`` on both axes of the kernel) makes J quadratic in that permutation;
its LAP is then the usual linearisation, whose gain is not J's change. Such a
*self-dependent* step is taken only if J itself, recomputed over the parameters the
permutation touches, strictly rises, so J still never decreases; and since its cost
depends on itself, the permutation is solved again in the next sweep after every change
(the original method takes the linearised step, which can lower J).

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
   ``O(n^2 rest)``; the moved columns of all terms in one product, written into a reused
   buffer); a cost with a single variable term is recomputed from scratch when more than
   half its columns moved.
3. *Concurrent independent solves.* Consecutive permutations of a sweep's order that do
   not depend on each other (``P_0`` and ``P_2`` of an MLP) are solved on two threads.
4. *J by gains.* J is computed once; then each accepted LAP adds its gain
   ``sum_i C[i, new[i]] - C[i, old[i]]`` (exact for "linear" specs, where no permutation
   acts twice on one parameter; otherwise J is recomputed after each sweep that changed).

A proposed permutation replaces the current one only if it strictly improves the LAP
objective, so ties (e.g. duplicated or dead units) never churn. All arithmetic is numpy
float64. :class:`~symlib.symmetry.matching.MatchResult` reports the time spent in the LAP solver and in building
costs (benchmarks/README.md has the figures).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from symlib.symmetry import permutations as _perm
from symlib.symmetry.matching.common import (MatchResult, Tally, Term, as_f64, build_terms, check_iter, check_pair,
                                             is_linear, objective, sweep_order, sweep_rng, term_deps)
from symlib.symmetry.matching.lap import LapWorkers, assignment_gain, check_lap_solver, lap_solver_used, thread_count
from symlib.symmetry.specs import PermutationSpec, check_blocks, flatten_params, to_views


def _init_perms(init_perms, sizes: Mapping[str, int], spec: PermutationSpec) -> dict[str, np.ndarray]:
    """Identities, replaced by the checked ``init_perms`` (valid, of the right size, within their blocks)."""
    perms = {name: np.arange(n, dtype=np.int64) for name, n in sizes.items()}
    if init_perms is None:
        return perms
    unknown = [k for k in init_perms if k not in sizes]
    if unknown:
        raise ValueError(f"init_perms has unknown permutation name(s) {unknown}; the spec has {list(sizes)}")
    for name, p in init_perms.items():
        try:
            perms[name] = _perm.validate(p, sizes[name])
            check_blocks(spec, name, perms[name])
        except ValueError as e:
            raise ValueError(f"init_perms[{name!r}]: {e}") from None
    return perms


def c_contiguous(M: np.ndarray, block: int = 32) -> np.ndarray:
    """A C-contiguous copy of the 2-D ``M`` (``M`` itself if it is one). A transposed view is
    copied in blocks of ``block`` rows of its source: at 2048 x 2048 this takes 8 ms, against
    28 ms for ``np.ascontiguousarray``, whose element order strides through memory."""
    if M.flags.c_contiguous or M.ndim != 2 or not M.flags.f_contiguous:
        return np.ascontiguousarray(M)
    src = M.T  # C-contiguous
    out = np.empty(M.shape, M.dtype)
    for i in range(0, src.shape[0], block):
        out[:, i:i + block] = src[i:i + block].T
    return out


def independent_runs(order: list[str], deps: Mapping[str, tuple[str, ...]]) -> list[list[str]]:
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


class CostCache:
    """Cost matrices of one pair (A, B), with constant parts precomputed and low-rank updates.

    Every variable term (a parameter whose other axes carry other permutations) is kept up
    to date on its own: when k of its columns moved since the cost was last computed, the
    cached cost gets the rank-k product of those columns (a cost with a single variable
    term is recomputed when more than half of them moved).
    """

    #: a cost with one variable term is recomputed from scratch when more than this
    #: fraction of the term's columns moved
    FULL_FRACTION = 0.5

    def __init__(self, terms: Mapping[str, list[Term]], fa: Mapping, fb: Mapping):
        self.terms = terms
        self.const: dict[str, np.ndarray] = {}
        self.var: dict[str, list[tuple[Term, np.ndarray, np.ndarray]]] = {}
        for name, ts in terms.items():
            n = ts[0].n
            var, const_a, const_b = [], [], []
            for t in ts:
                A, B = t.mat(fa[t.path]).T, t.mat(fb[t.path]).T  # (rest, n)
                if t.variable:
                    var.append((t, c_contiguous(A), c_contiguous(B)))
                else:  # all constant terms in one product
                    const_a.append(A)
                    const_b.append(B)
            self.const[name] = np.concatenate(const_a).T @ np.concatenate(const_b) if const_a else np.zeros((n, n))
            self.var[name] = var
        #: name -> (cost matrix, the column sources of each variable term it was computed for)
        self.cache: dict[str, tuple[np.ndarray, list[np.ndarray]]] = {}
        self._buffers: dict[tuple[int, ...], np.ndarray] = {}

    def _buffer(self, shape: tuple[int, ...]) -> np.ndarray:
        if shape not in self._buffers:
            self._buffers[shape] = np.empty(shape)
        return self._buffers[shape]

    def cost(self, name: str, perms: Mapping[str, np.ndarray]) -> np.ndarray:
        """The cost matrix of ``name`` for the permutations ``perms`` (cached, updated in place)."""
        var = self.var[name]
        if name not in self.cache:
            srcs = [t.colsrc(perms) for t, _, _ in var]
            C = self.const[name].copy()
            for (t, A, B), s in zip(var, srcs):
                C += np.matmul(A.T, B[s], out=self._buffer(C.shape))
            self.cache[name] = (C, [np.array(s, copy=True) for s in srcs])
            return C
        return self._update(name, perms)

    def _update(self, name: str, perms: Mapping[str, np.ndarray]) -> np.ndarray:
        C, old = self.cache[name]
        var = self.var[name]
        xs, ds = [], []  # the moved columns' rows of A and differences of B, over the terms
        for k, (t, A, B) in enumerate(var):
            s = t.colsrc(perms)
            ch = np.flatnonzero(s != old[k])
            if not len(ch):
                continue
            if len(var) == 1 and len(ch) > self.FULL_FRACTION * t.m:
                np.matmul(A.T, B[s], out=C)
                C += self.const[name]
            else:
                D = B[s[ch]]
                D -= B[old[k][ch]]
                xs.append(A[ch])
                ds.append(D)
            old[k] = np.array(s, copy=True)
        if xs:
            # one product for all terms, into a reused buffer: a fresh n x n temporary per
            # update cost more in page faults than a rank-20 product at n = 2048
            X, D = (xs[0], ds[0]) if len(xs) == 1 else (np.concatenate(xs), np.concatenate(ds))
            C += np.matmul(X.T, D, out=self._buffer(C.shape))
        return C


@dataclass
class _PairState:
    """Coordinate-ascent state of :func:`weight_matching`.

    ``version[name]`` counts the accepted changes of ``name``; ``seen[name]`` holds the
    versions of its dependencies its last cost was built from (``None``: never solved);
    ``blocks`` is the spec's :attr:`~symlib.symmetry.specs.PermutationSpec.blocks`;
    ``local_objective(name, perms)`` is J over the parameters ``name`` acts on, which
    decides the steps of the self-dependent permutations (module docstring).
    """

    perms: dict[str, np.ndarray]
    deps: Mapping[str, tuple[str, ...]]
    obj: float
    local_objective: Callable[[str, Mapping[str, np.ndarray]], float]
    blocks: Mapping[str, int] = field(default_factory=dict)
    version: dict[str, int] = field(init=False)
    seen: dict[str, tuple[int, ...] | None] = field(init=False)

    def __post_init__(self):
        self.version = {name: 0 for name in self.deps}
        self.seen = {name: None for name in self.deps}

    def dep_versions(self, name: str) -> tuple[int, ...]:
        return tuple(self.version[q] for q in self.deps[name])

    def accept(self, name: str, C: np.ndarray, col: np.ndarray) -> bool:
        """Take the LAP answer ``col`` if it strictly improves; returns whether it did.

        A self-dependent permutation's LAP gain is a linearisation: its step must also
        strictly raise J itself, and adds J's true change.
        """
        gain = assignment_gain(C, col, self.perms[name])
        if gain > 0 and name in self.deps[name]:
            gain = self.local_objective(name, {**self.perms, name: col}) - self.local_objective(name, self.perms)
        if gain <= 0:
            return False
        self.perms[name] = col
        self.version[name] += 1
        self.obj += gain
        return True


def _solve_run(run: list[str], state: _PairState, costs: CostCache, workers: LapWorkers, tally: Tally) -> bool:
    """Solve the stale LAPs of one run of independent permutations; returns whether any changed."""
    todo = [name for name in run if state.seen[name] != state.dep_versions(name)]
    tally.skipped += len(run) - len(todo)
    if not todo:
        return False
    t0 = time.perf_counter()
    Cs = [costs.cost(name, state.perms) for name in todo]
    t1 = time.perf_counter()
    cols = workers.solve_all(Cs, [state.blocks.get(name, 1) for name in todo])
    t2 = time.perf_counter()
    tally.cost_time += t1 - t0
    tally.solver_time += t2 - t1
    tally.solves += len(todo)
    # the versions the costs were built from: a self-dependent permutation that changed is
    # stale (its cost moved with it); the others in a run do not depend on one another
    built_from = [state.dep_versions(name) for name in todo]
    changed = [state.accept(name, C, col) for name, C, col in zip(todo, Cs, cols)]
    for name, versions in zip(todo, built_from):
        state.seen[name] = versions
    return any(changed)


def _pair_sweep(order: list[str], state: _PairState, costs: CostCache, workers: LapWorkers, tally: Tally) -> bool:
    """One sweep of :func:`weight_matching` in ``order``; returns whether any permutation changed."""
    changed = False
    for run in independent_runs(order, state.deps):
        changed |= _solve_run(run, state, costs, workers, tally)
    return changed


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
    lap_solver: str = "auto",
) -> MatchResult:
    """Permutations of B's units making B closest to A in L2 (Git Re-Basin weight matching).

    Maximises ``J = sum_params <A, apply_permutation(spec, perms, B)>`` by coordinate ascent
    over the spec's permutations (module docstring): each sweep visits them in a random
    order drawn from ``key``, solving one linear assignment per permutation. Consecutive
    permutations of a sweep that do not depend on each other (e.g. ``P_0`` and ``P_2`` of
    an MLP) have their LAPs solved concurrently (scipy releases the GIL); the iterates are
    the same.

    Args:
        key: jax key, int seed, numpy Generator or None; draws the sweep orders.
        spec: the permutation spec both networks fit.
        params_a: the reference network A (nested or flat pytree of arrays).
        params_b: the network B to permute, with the same shapes as A.
        max_iter: the most sweeps (a non-negative int; 0 returns the starting point).
        init_perms: name -> permutation to start from; missing names start at the identity.
        verbose: print J after every sweep.
        tol: stop after the first sweep changing J by at most ``tol * |J|``.
        num_threads: threads for concurrent LAPs (default ``min(4, cpu_count)``).
        lap_solver: ``"auto"`` (Jonker-Volgenant, lapx's ``lapjvh``, where the LAP has no
            likely ties, else scipy) or ``"scipy"`` (always
            :func:`scipy.optimize.linear_sum_assignment`); both exact, see
            :mod:`symlib.symmetry.matching.lap`.

    Returns:
        A :class:`MatchResult`: ``apply_permutation(spec, result.perms, params_b)`` is the
        aligned B; ``result.objective`` holds J after each sweep (non-decreasing);
        ``result.info["lap_solver"]`` is ``"lapjv"`` when Jonker-Volgenant solved the LAPs
        (``"auto"`` with ``lapx`` installed), else ``"scipy"``.

    Raises:
        ValueError: naming the parameter, when A or B does not fit ``spec``, their shapes
            differ or a parameter holds nan or inf; or naming the argument, when
            ``max_iter``, ``tol``, ``num_threads``, ``lap_solver`` or ``init_perms`` is invalid.
        TypeError: if ``spec`` is not a :class:`~symlib.symmetry.specs.PermutationSpec`.
    """
    t_start = time.perf_counter()
    max_iter = check_iter(max_iter, tol)
    num_threads = thread_count(num_threads)
    lap_solver = check_lap_solver(lap_solver)
    sizes = check_pair(spec, params_a, params_b)
    fa = as_f64(to_views(spec, flatten_params(params_a)), "params_a")
    fb = as_f64(to_views(spec, flatten_params(params_b)), "params_b")
    perms = _init_perms(init_perms, sizes, spec)
    names = list(spec.perm_names)
    rng = sweep_rng(key)

    t0 = time.perf_counter()
    terms = build_terms(spec, {p: fa[p].shape for p in fa})
    deps = term_deps(terms)
    costs = CostCache(terms, fa, fb)
    tally = Tally(cost_time=time.perf_counter() - t0)

    # J is computed once, then tracked by adding accepted LAP gains: exact when no
    # permutation acts twice on one parameter ("linear" spec), otherwise recomputed
    linear = is_linear(deps)
    touched = {name: tuple(dict.fromkeys(t.path for t in ts)) for name, ts in terms.items()}

    def local_objective(name: str, at: Mapping[str, np.ndarray]) -> float:
        return objective(spec, fa, fb, at, touched[name])

    state = _PairState(perms, deps, objective(spec, fa, fb, None if init_perms is None else perms), local_objective,
                       spec.blocks)
    initial = state.obj
    history: list[float] = []
    converged = False
    with LapWorkers(num_threads, lap_solver) as workers:
        for sweep in range(max_iter):
            before = state.obj
            changed = _pair_sweep(sweep_order(rng, names), state, costs, workers, tally)
            if changed and not linear:
                state.obj = objective(spec, fa, fb, state.perms)
            history.append(state.obj)
            if verbose:
                print(f"weight_matching sweep {sweep + 1}: J = {state.obj:.10g} (+{state.obj - before:.3g}), "
                      f"{tally.solves} LAPs solved, {tally.skipped} skipped")
            if abs(state.obj - before) <= tol * abs(before):
                converged = True
                break
    return MatchResult(
        perms=state.perms,
        objective=history,
        sweeps=len(history),
        initial_objective=initial,
        converged=converged,
        solver_time=tally.solver_time,
        cost_time=tally.cost_time,
        total_time=time.perf_counter() - t_start,
        num_solves=tally.solves,
        num_skipped=tally.skipped,
        info={"lap_solver": lap_solver_used(lap_solver)},
    )
