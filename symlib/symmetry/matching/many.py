"""Many-to-one weight matching (:func:`~symlib.symmetry.matching.weight_matching_many`) and
:func:`~symlib.symmetry.matching.apply_permutation_many`.

Match every network of a stack (e.g. posterior samples) to one reference: the same
coordinate ascent for all samples in lock-step (same sweep orders as
``weight_matching(key, ...)``), costs built in chunks of samples, LAPs solved on a
thread pool (scipy releases the GIL) overlapping the next chunk's matrix products.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from symlib.core.checks import positive_int
from symlib.symmetry.matching.common import (ManyMatchResult, Tally, Term, as_f64, build_terms, check_finite_params,
                                             check_iter, check_pair, is_linear, objective, sweep_order, sweep_rng,
                                             term_deps)
from symlib.symmetry.matching.lap import LapWorkers, assignment_gain, check_lap_solver, lap_solver_used, thread_count
from symlib.symmetry.specs import (
    PermutationSpec,
    check_blocks,
    check_perm_names,
    check_spec,
    flatten_params,
    join_parts,
    split_parts,
    to_views,
    unflatten_params,
)


def apply_permutation_many(spec: PermutationSpec, perms_stack: Mapping[str, Any], params_stack: Mapping):
    """Permute every network of a stack by its own permutations.

    Row ``s`` of every permutation is applied to network ``s`` exactly as
    :func:`symlib.symmetry.specs.apply_permutation` would (``new = take(old, perms[s],
    axis)``). numpy leaves stay numpy (``np.take_along_axis``); other leaves use ``jnp``.

    Args:
        spec: the permutation spec the networks fit (after their leading axis).
        perms_stack: name -> integer array ``(m, n)``, one permutation per network.
        params_stack: the networks, with a leading axis ``m`` on every leaf (nested or flat).

    Returns:
        The permuted stack, with the structure of ``params_stack`` (nested or flat).

    Raises:
        ValueError: if the stack does not fit ``spec``, its leaves disagree on ``m``, or a
            ``perms_stack`` entry is unknown, has the wrong shape or dtype, or has a row
            that is not a permutation or moves a unit out of its block
            (:attr:`~symlib.symmetry.specs.PermutationSpec.blocks`; the message names the
            entry and the row).
    """
    sizes = check_spec(spec, params_stack, batch_dims=1)
    flat = flatten_params(params_stack)
    check_perm_names(sizes, perms_stack)
    ms = {int(np.shape(v)[0]) for v in flat.values()}
    if len(ms) > 1:
        raise ValueError(f"leaves of params_stack disagree on the stack size: {sorted(ms)}")
    m = ms.pop() if ms else 0
    checked = {name: _check_perm_rows(spec, name, p, m, sizes[name]) for name, p in perms_stack.items()}
    cut = split_parts(spec, flat, batch_dims=1)
    viewed = to_views(spec, flat, batch_dims=1)
    out = {path: _permute_leaf_rows(leaf, spec.axes[path], checked, sizes, m).reshape(np.shape(cut[path]))
           for path, leaf in viewed.items()}
    out = join_parts(spec, out, batch_dims=1)
    nested = any(isinstance(v, Mapping) for v in params_stack.values())
    return unflatten_params(out) if nested else out


def _check_perm_rows(spec: PermutationSpec, name: str, p, m: int, n: int) -> np.ndarray:
    """``perms_stack[name]`` as int64 ``(m, n)``; ``ValueError`` unless every row is a permutation
    keeping the units within their blocks (:attr:`PermutationSpec.blocks`)."""
    arr = np.asarray(p)
    if arr.shape != (m, n) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"perms_stack[{name!r}] must be an integer array of shape ({m}, {n}), "
                         f"got {arr.dtype}{list(arr.shape)}")
    if m and not np.array_equal(np.sort(arr, axis=1), np.broadcast_to(np.arange(n), arr.shape)):
        bad = int(np.flatnonzero((np.sort(arr, axis=1) != np.arange(n)).any(axis=1))[0])
        raise ValueError(f"perms_stack[{name!r}] row {bad} is not a permutation of {n} items")
    try:
        check_blocks(spec, name, arr)
    except ValueError:
        for s, row in enumerate(arr):  # name the first row that crosses groups
            try:
                check_blocks(spec, name, row)
            except ValueError as e:
                raise ValueError(f"perms_stack[{name!r}] row {s}: {e}") from None
    return arr.astype(np.int64, copy=False)


def _permute_leaf_rows(leaf, names: tuple, perms: Mapping[str, np.ndarray], sizes: Mapping[str, int], m: int):
    """Apply row ``s`` of the permutations of every axis ``names`` to network ``s`` of ``leaf``."""
    nd = len(names) + 1
    for axis, name in enumerate(names):
        if name is None:
            continue
        idx = perms[name].reshape((m,) + (1,) * axis + (sizes[name],) + (1,) * (nd - axis - 2))
        if isinstance(leaf, np.ndarray):
            leaf = np.take_along_axis(leaf, idx, axis=axis + 1)
        else:
            leaf = jnp.take_along_axis(leaf, jnp.asarray(idx), axis=axis + 1)
    return leaf


@dataclass(frozen=True)
class _ManyProblem:
    """The fixed data of :func:`weight_matching_many`: reference, stack and cost terms."""

    spec: PermutationSpec
    names: list[str]
    sizes: dict[str, int]
    terms: dict[str, list[Term]]
    deps: dict[str, tuple[str, ...]]
    ref: dict[str, np.ndarray]  # reference, float64
    stack: dict[str, np.ndarray]  # stack, its own dtype, leading axis m
    ref_mats: dict[str, np.ndarray]  # (n, total rest) per permutation: its terms side by side, product dtype
    dtype: np.dtype  # of the matrix products
    m: int
    linear: bool  # J tracked by LAP gains (see is_linear)

    @classmethod
    def build(cls, spec: PermutationSpec, params_ref: Mapping, params_stack: Mapping, precision: str) -> _ManyProblem:
        """Check the inputs (``ValueError`` naming the parameter) and set up the terms."""
        sizes = check_pair(spec, params_ref, params_stack, batch_dims_b=1)
        ref = as_f64(to_views(spec, flatten_params(params_ref)), "params_ref")
        stack = {p: np.asarray(v) for p, v in to_views(spec, flatten_params(params_stack), batch_dims=1).items()}
        check_finite_params(stack, "params_stack")
        terms = build_terms(spec, {p: ref[p].shape for p in ref})
        dtype = np.dtype(precision)
        ref_mats = {name: np.concatenate([t.mat(ref[t.path]) for t in ts], axis=1).astype(dtype, copy=False)
                    for name, ts in terms.items()}
        m = int(next(iter(stack.values())).shape[0]) if stack else 0
        deps = term_deps(terms)
        return cls(spec, list(spec.perm_names), sizes, terms, deps, ref, stack, ref_mats, dtype, m, is_linear(deps))

    def default_chunk_size(self) -> int:
        """At most 64 samples and 64 MiB of float64 costs per chunk."""
        n_max = max(self.sizes.values(), default=1)
        return max(1, min(64, (64 * 2**20 // 8) // max(n_max * n_max, 1)))

    def objectives(self, rows: np.ndarray, perms: Mapping[str, np.ndarray] | None) -> np.ndarray:
        """J of the samples ``rows`` under ``perms`` (``(m, n)`` each; ``None``: identities).

        The same float64 arithmetic as :func:`weight_matching`, so J values agree bit for bit.
        """
        out = np.zeros(len(rows))
        for j, s in enumerate(rows):
            sample = {p: self.stack[p][s].astype(np.float64, copy=False) for p in self.stack}
            sample_perms = None if perms is None else {k: v[s] for k, v in perms.items()}
            out[j] = objective(self.spec, self.ref, sample, sample_perms)
        return out

    def local_objective(self, name: str, s: int, perms: Mapping[str, np.ndarray]) -> float:
        """J of sample ``s`` under ``perms`` (its own, ``(n,)`` each) over the parameters ``name`` acts on."""
        paths = tuple(dict.fromkeys(t.path for t in self.terms[name]))
        sample = {p: self.stack[p][s].astype(np.float64, copy=False) for p in paths}
        return objective(self.spec, self.ref, sample, perms, paths)

    def chunk_costs(self, name: str, perms: Mapping[str, np.ndarray], rows: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Cost matrices of ``name`` for the samples ``rows``, written into ``out`` ``(len(rows), n, n)``.

        One BLAS gemm per sample, written into ``out``: the sample's terms (permuted by the
        other permutations) are copied side by side into one ``(n, total rest)`` matrix, in
        the product dtype, to match :attr:`ref_mats`. On CPU this is as fast as any batched
        form we tried (numpy's stacked matmul is ~4x slower, jax.vmap in float32 ~ numpy
        float32).
        """
        A = self.ref_mats[name]
        ts = self.terms[name]
        srcs = [t.colsrc_batch(perms, rows) if t.variable else None for t in ts]
        bounds = np.cumsum([0] + [t.m for t in ts])
        Bcat = np.empty(A.shape, self.dtype)
        for j, s in enumerate(rows):
            for t, src, lo, hi in zip(ts, srcs, bounds[:-1], bounds[1:]):
                Bs = t.mat(self.stack[t.path][s])  # (n, rest) view, stack dtype
                Bcat[:, lo:hi] = Bs if src is None else np.take(Bs, src[j], axis=1)
            np.matmul(A, Bcat.T, out=out[j])
        return out


class _CostBuffers:
    """Two reusable float64 ``(chunk_size, n, n)`` buffers per size ``n``, handed out in turn.

    At most two chunks are alive (one being solved, one being built); reusing their
    memory avoids page-faulting fresh memory for every chunk.
    """

    def __init__(self, chunk_size: int):
        self.chunk_size = chunk_size
        self._buffers: dict[int, list[np.ndarray]] = {}
        self._turn = 0

    def next(self, n: int, count: int) -> np.ndarray:
        """The other buffer than last time, cut to ``(count, n, n)``."""
        if n not in self._buffers:
            self._buffers[n] = [np.empty((self.chunk_size, n, n)) for _ in range(2)]
        self._turn ^= 1
        return self._buffers[n][self._turn][:count]


@dataclass
class _ManyState:
    """Per-sample coordinate-ascent state of :func:`weight_matching_many` (arrays over samples).

    ``version[name][s]`` counts the accepted changes of ``name`` in sample ``s``;
    ``seen[name][s]`` holds the versions of its dependencies its last cost there was built
    from (``solved[name][s]``); ``changed`` marks the samples changed in this sweep; a step
    of a self-dependent permutation must raise J itself (``problem.local_objective``).
    """

    problem: _ManyProblem
    perms: dict[str, np.ndarray]
    deps: Mapping[str, tuple[str, ...]]
    version: dict[str, np.ndarray]
    seen: dict[str, np.ndarray]
    solved: dict[str, np.ndarray]
    obj: np.ndarray
    active: np.ndarray
    changed: np.ndarray
    sweeps: np.ndarray
    converged: np.ndarray
    history: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def start(cls, problem: _ManyProblem, initial: np.ndarray) -> _ManyState:
        """Identity permutations, nothing solved, every sample active."""
        m = problem.m
        return cls(
            problem=problem,
            perms={name: np.tile(np.arange(n, dtype=np.int64), (m, 1)) for name, n in problem.sizes.items()},
            deps=problem.deps,
            version={name: np.zeros(m, np.int64) for name in problem.names},
            seen={name: np.full((m, len(problem.deps[name])), -1, np.int64) for name in problem.names},
            solved={name: np.zeros(m, bool) for name in problem.names},
            obj=initial.copy(),
            active=np.ones(m, bool),
            changed=np.zeros(m, bool),
            sweeps=np.zeros(m, np.int64),
            converged=np.zeros(m, bool),
        )

    def dep_versions(self, name: str) -> np.ndarray:
        """``(m, k)`` current versions of the ``k`` permutations ``name`` depends on."""
        if not self.deps[name]:
            return np.zeros((len(self.obj), 0), np.int64)
        return np.stack([self.version[q] for q in self.deps[name]], axis=1)

    def stale(self, name: str) -> np.ndarray:
        """Active samples whose LAP for ``name`` must be solved (never solved, or a dependency changed)."""
        fresh = self.solved[name] & (self.seen[name] == self.dep_versions(name)).all(axis=1)
        return self.active & ~fresh

    def mark_solved(self, name: str, rows: np.ndarray, versions: np.ndarray) -> None:
        """Record that ``name`` was solved for the samples ``rows`` with costs built from the
        dependencies' ``versions`` (``(len(rows), k)``, taken before the step)."""
        self.seen[name][rows] = versions
        self.solved[name][rows] = True

    def accept(self, name: str, s: int, C: np.ndarray, col: np.ndarray) -> None:
        """Take the LAP answer ``col`` for sample ``s`` if it strictly improves (for a
        self-dependent permutation: if J itself strictly rises)."""
        gain = assignment_gain(C, col, self.perms[name][s])
        if gain > 0 and name in self.deps[name]:
            old = {k: v[s] for k, v in self.perms.items()}
            gain = (self.problem.local_objective(name, s, {**old, name: col})
                    - self.problem.local_objective(name, s, old))
        if gain > 0:
            self.perms[name][s] = col
            self.version[name][s] += 1
            self.changed[s] = True
            self.obj[s] += gain


class _Chunk(NamedTuple):
    """Samples whose LAPs are being solved, their cost matrices and the function waiting for them."""

    rows: np.ndarray
    costs: np.ndarray
    results: Callable[[], list[tuple[np.ndarray, float]]]


def _accept_chunk(name: str, chunk: _Chunk, state: _ManyState, tally: Tally) -> None:
    """Wait for a chunk's LAPs and take the improving answers."""
    t = time.perf_counter()
    results = chunk.results()
    tally.wait_time += time.perf_counter() - t
    for j, s in enumerate(chunk.rows):
        col, seconds = results[j]
        tally.solver_time += seconds
        state.accept(name, s, chunk.costs[j], col)


def _many_step(name: str, problem: _ManyProblem, state: _ManyState, buffers: _CostBuffers,
               workers: LapWorkers, tally: Tally) -> None:
    """Solve ``name`` for every stale sample, chunk by chunk.

    One chunk is kept in flight: its LAPs are solved on the workers while the next
    chunk's costs are built.
    """
    stale = state.stale(name)
    tally.skipped += int((state.active & ~stale).sum())
    rows_all = np.flatnonzero(stale)
    if len(rows_all) == 0:
        return
    built_from = state.dep_versions(name)[rows_all]  # a self-dependent step makes its own cost stale
    pending: deque[_Chunk] = deque()
    for lo in range(0, len(rows_all), buffers.chunk_size):
        rows = rows_all[lo:lo + buffers.chunk_size]
        t0 = time.perf_counter()
        C = problem.chunk_costs(name, state.perms, rows, buffers.next(problem.sizes[name], len(rows)))
        tally.cost_time += time.perf_counter() - t0
        pending.append(_Chunk(rows, C, workers.submit(C, problem.spec.blocks.get(name, 1))))
        tally.solves += len(rows)
        while len(pending) > 1:
            _accept_chunk(name, pending.popleft(), state, tally)
    while pending:
        _accept_chunk(name, pending.popleft(), state, tally)
    state.mark_solved(name, rows_all, built_from)


def _end_many_sweep(problem: _ManyProblem, state: _ManyState, before: np.ndarray, tol: float, tally: Tally) -> None:
    """Convergence bookkeeping after a sweep: J, sweep counts, history, stopping rule."""
    changed = np.flatnonzero(state.active & state.changed)
    if len(changed) and not problem.linear:
        t0 = time.perf_counter()
        state.obj[changed] = problem.objectives(changed, state.perms)
        tally.cost_time += time.perf_counter() - t0
    state.sweeps[state.active] += 1
    state.history.append(state.obj.copy())
    done = state.active & (np.abs(state.obj - before) <= tol * np.abs(before))
    state.converged |= done
    state.active &= ~done


def _many_sweep(order: list[str], problem: _ManyProblem, state: _ManyState, tol: float, buffers: _CostBuffers,
                workers: LapWorkers, tally: Tally) -> None:
    """One sweep of every active sample, visiting the permutations in ``order``."""
    before = state.obj.copy()
    state.changed[:] = False
    for name in order:
        _many_step(name, problem, state, buffers, workers, tally)
    _end_many_sweep(problem, state, before, tol, tally)


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
    lap_solver: str = "auto",
) -> ManyMatchResult:
    """:func:`weight_matching` of every network of a stack (leading axis ``m``) to one reference.

    Sample ``s`` follows the iterates of ``weight_matching(key, spec, params_ref, sample_s,
    max_iter, tol=tol)`` (up to float rounding): all samples sweep together with the same
    random orders, and each stops (and is frozen) when its own stopping rule fires. Per
    permutation step only the samples whose dependencies changed are solved (the skip
    rule of the :mod:`~symlib.symmetry.matching.weight` docstring); their costs are rebuilt in full (no per-sample cost
    cache, to bound memory), ``chunk_size`` samples at a time, with one BLAS product per
    sample and term, and the chunk's LAPs are solved on ``num_threads`` threads while the
    next chunk is built. For a single permutation (one hidden layer) one solve per sample
    is optimal; the second sweep only confirms it and costs nothing.

    ``precision="float32"`` forms each matrix product in float32 (up to 2x faster on CPU;
    the products' sum over a permutation's terms is taken, and J computed, in float64, but
    each product carries float32 rounding): the permutations then agree
    with :func:`weight_matching` unless two assignments are within float32 rounding of each
    other. The default ``"float64"`` reproduces it up to float64 rounding.

    Args:
        key: jax key, int seed, numpy Generator or None; draws the sweep orders.
        spec: the permutation spec the reference and every network of the stack fit.
        params_ref: the reference network.
        params_stack: the networks to align, with a leading axis ``m`` on every leaf.
        max_iter: the most sweeps (a non-negative int).
        tol: a sample stops after the first sweep changing its J by at most ``tol * |J|``.
        chunk_size: samples whose costs are built at a time (default: at most 64 samples
            and 64 MiB of float64 costs per chunk).
        num_threads: LAP threads (default ``min(4, cpu_count)``; 1 solves inline).
        precision: ``"float64"`` or ``"float32"``, the dtype of the matrix products.
        verbose: print the number of active samples and the mean J after every sweep.
        lap_solver: ``"auto"`` or ``"scipy"``, as in :func:`weight_matching`.

    Returns:
        A :class:`ManyMatchResult` (``perms[name]`` is ``(m, n)``; apply it with
        :func:`apply_permutation_many`).

    Raises:
        ValueError: naming the parameter, when the reference or the stack does not fit
            ``spec``, their shapes differ or a parameter holds nan or inf; or naming the
            argument, when ``max_iter``, ``tol``, ``chunk_size``, ``num_threads``,
            ``precision`` or ``lap_solver`` is invalid.
        TypeError: if ``spec`` is not a :class:`~symlib.symmetry.specs.PermutationSpec`.
    """
    t_start = time.perf_counter()
    max_iter = check_iter(max_iter, tol)
    chunk_size = positive_int(chunk_size, "chunk_size", allow_none=True)
    num_threads = thread_count(num_threads)
    if precision not in ("float64", "float32"):
        raise ValueError(f"precision must be 'float64' or 'float32', got {precision!r}")
    lap_solver = check_lap_solver(lap_solver)
    problem = _ManyProblem.build(spec, params_ref, params_stack, precision)
    chunk_size = chunk_size or problem.default_chunk_size()
    rng = sweep_rng(key)

    tally = Tally()
    t0 = time.perf_counter()
    initial = problem.objectives(np.arange(problem.m), None)
    tally.cost_time += time.perf_counter() - t0
    state = _ManyState.start(problem, initial)
    buffers = _CostBuffers(chunk_size)
    with LapWorkers(num_threads, lap_solver) as workers:
        for sweep in range(max_iter):
            if not state.active.any():
                break
            _many_sweep(sweep_order(rng, problem.names), problem, state, tol, buffers, workers, tally)
            if verbose:
                print(f"weight_matching_many sweep {sweep + 1}: {int(state.active.sum())} of {problem.m} still "
                      f"active, mean J = {state.obj.mean() if problem.m else float('nan'):.10g}")
    return ManyMatchResult(
        perms=state.perms,
        objective=state.obj,
        sweeps=state.sweeps,
        initial_objective=initial,
        converged=state.converged,
        objective_history=state.history,
        solver_time=tally.solver_time,
        cost_time=tally.cost_time,
        total_time=time.perf_counter() - t_start,
        num_solves=tally.solves,
        num_skipped=tally.skipped,
        info={"chunk_size": chunk_size, "num_threads": num_threads, "lap_wait_time": tally.wait_time,
              "lap_solver": lap_solver_used(lap_solver)},
    )
