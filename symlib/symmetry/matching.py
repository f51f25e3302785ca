"""Permutation matching of two networks, Git Re-Basin style (Ainsworth et al., ICLR 2023).

Everything is read from a :class:`~symlib.symmetry.specs.PermutationSpec`; no layer name is
hard-coded (except in :func:`activation_matching` when its ``apply_fn`` returns a list of
an MLP's hidden layers: layer ``l`` is then the spec's ``"P_l"``). MLPs and convolutional
networks (:mod:`symlib.core.cnn`, :mod:`symlib.symmetry.architectures`) are treated alike:
a convolution kernel ``(kh, kw, c_in, c_out)`` is one more parameter whose last axis (and,
in the next layer, whose input axis) a permutation acts on.

Blocks
------
A permutation with :attr:`~symlib.symmetry.specs.PermutationSpec.blocks` (``g`` groups, the
output channels of a grouped convolution) may only move units within ``g`` equal
contiguous blocks. Every tool here honours it by solving each linear assignment block by
block: the cost matrix restricted to each diagonal block is one LAP, and the answers are
assembled (``_lap``, used at every solve, with either LAP solver below). That is the
exact optimum over the
block-preserving permutations, so every property below (monotone J, exact recovery of a
planted permutation, skipped solves) carries over. ``init_perms`` and the rows given to
:func:`apply_permutation_many` are checked to keep their blocks. Unblocked permutations
are solved exactly as before (one LAP, the same bits).

Convention
----------
As in :func:`symlib.symmetry.specs.apply_permutation` (gather form): a result ``perms`` maps every
permutation name to an index array ``p`` with "new unit ``i`` of B is old unit ``p[i]``",
so ``apply_permutation(spec, result.perms, params_b)`` is B aligned to A. If ``B`` is a
permuted copy of ``A``, ``B = apply_permutation(spec, q, A)``, the exact answer is
``inverse(q)``, i.e. ``compose(q[name], result.perms[name])`` is the identity.

Weight matching (:func:`weight_matching`)
-----------------------------------------
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
   ``O(n^2 rest)``; the moved columns of all terms in one product, written into a reused
   buffer); a cost with a single variable term is recomputed from scratch when more than
   half its columns moved.
3. *Concurrent independent solves.* Consecutive permutations of a sweep's order that do
   not depend on each other (``P_0`` and ``P_2`` of an MLP) are solved on two threads.
4. *J by gains.* J is computed once; then each accepted LAP adds its gain
   ``sum_i C[i, new[i]] - C[i, old[i]]`` (exact for "linear" specs, where no permutation
   acts twice on one parameter; otherwise J is recomputed after each sweep).

A proposed permutation replaces the current one only if it strictly improves the LAP
objective, so ties (e.g. duplicated or dead units) never churn. All arithmetic is numpy
float64. :class:`MatchResult` reports the time spent in the LAP solver and in building
costs (benchmarks/README.md has the figures).

LAP solver
----------
Every LAP (``_lap``) is solved exactly, by one of two solvers (``lap_solver=`` of every
matching function):

* ``"auto"`` (default): Jonker-Volgenant, ``lap.lapjvh`` from the ``lapx`` package (a
  dependency; its hybrid Jonker-Volgenant solver, which releases the GIL). On the cost
  matrices of the 784-2048x3-10 benchmark it is 1.2-2.5x faster than scipy in the first
  sweeps and up to 5x in later ones, where most rows' best columns are distinct
  (benchmarks/README.md). The matrix is first scaled by a power of two to
  ``max |C| < 1`` (exact in floating point; the ``lap`` package's older ``lapjv`` missed
  the optimum for costs near its internal ``LARGE = 1e6``, and the scaling costs one pass).
  Matrices whose LAP probably has several optima go to scipy instead: integer-valued
  ones, and those with two rows or two columns equal up to an added constant (duplicated
  or dead units); see ``_ties_likely``.
* ``"scipy"``: :func:`scipy.optimize.linear_sum_assignment`, the solver of the plain
  re-basin loop (and the fallback where ``lapx`` is not installed, or the matrix is not
  square). Both solvers release the GIL, so LAPs solved on worker threads (concurrent
  independent solves, :func:`weight_matching_many` with ``num_threads > 1``) run in
  parallel with each other and with the matrix products.

Both are exact, so where the optimum is unique (float costs without exact ties) they give
the same permutation, and matching the same iterates as with scipy
(``tests/test_lap_solver.py`` checks this on random, scaled, nearly diagonal and tied
matrices and on MLP and convolutional specs). Where ties slip past the guard, the
objective is the same optimum but the permutation may be another optimal one. Warm
starts did not pay: the previous solve's column duals (from ``lapjv`` on the reduced
matrix, with the duals recomputed by label-correcting shortest paths) or a sparse
candidate LAP with dual pricing were no faster than a cold ``lapjv`` here: consecutive
solves of one permutation move tens to hundreds of units, a sixth to two thirds of the
rows lose tightness, and recomputing the duals costs several passes over the n x n
matrix (benchmarks/README.md).

Activation matching (:func:`activation_matching`)
-------------------------------------------------
The Pearson correlation of hidden units of A and B over a data set (streamed in batches,
only sums kept), one LAP per permutation maximising the total correlation. ``apply_fn``
names the activations each permutation acts on (a dict by permutation name, or for an MLP
a list by hidden layer); convolutional features count every spatial position as an
example.

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
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linear_sum_assignment

try:  # Jonker-Volgenant from lapx (a dependency; without it every LAP goes to scipy)
    from lap import lapjvh as _lapjv
except ImportError:  # pragma: no cover
    _lapjv = None

from symlib.core.checks import positive_int
from symlib.symmetry import permutations as _perm
from symlib.symmetry.specs import (
    PermutationSpec,
    check_blocks,
    check_perm_names,
    check_spec,
    flatten_params,
    unflatten_params,
)

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

    Attributes:
        perms: name -> int64 permutation (gather convention, see the module docstring).
        objective: weight matching: J after each sweep (``len == sweeps``; non-decreasing
            for specs where no permutation acts twice on one parameter); activation
            matching: the total matched correlation of each permutation (``P_0, P_1,
            ...`` order for a list-returning ``apply_fn``, else the spec's order).
        sweeps: sweeps run (weight matching; includes the last, confirming sweep) or 1.
        initial_objective: J before the first sweep (weight matching; the identity or
            ``init_perms``), else ``nan``.
        converged: whether the stopping rule fired before ``max_iter``.
        solver_time: wall-clock seconds in the LAP solver.
        cost_time: wall-clock seconds building cost matrices (and J).
        total_time: wall-clock seconds overall.
        num_solves: LAPs solved.
        num_skipped: LAPs skipped because nothing they depend on changed.
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

    Attributes:
        perms: name -> int64 array ``(m, n)``, row ``s`` aligning sample ``s`` to the
            reference.
        objective: ``(m,)`` final J of every sample.
        sweeps: ``(m,)`` sweeps run per sample.
        initial_objective: ``(m,)`` J of every sample before the first sweep.
        converged: ``(m,)`` bool, whether each sample's stopping rule fired.
        objective_history: one ``(m,)`` array per sweep, holding each sample's J after
            that sweep (frozen once the sample has converged).
        solver_time: seconds inside LAP calls summed over threads (they overlap the cost
            building; ``info["lap_wait_time"]`` is the wall time spent waiting for them).
        cost_time: seconds building cost matrices (and J).
        total_time: wall-clock seconds overall.
        num_solves: LAPs solved, over all samples.
        num_skipped: LAPs skipped because nothing they depend on changed.
        info: ``chunk_size``, ``num_threads``, ``lap_wait_time`` and ``lap_solver``
            (``"lapjv"`` or ``"scipy"``, as in :func:`weight_matching`).
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


# --------------------------------------------------------------------------- input checks


def _all_finite(arr: np.ndarray) -> bool:
    # a sum is finite iff every entry is (barring overflow): O(1) memory; exact check if not
    with np.errstate(invalid="ignore", over="ignore"):
        if arr.size == 0 or np.isfinite(np.sum(arr, dtype=np.float64)):
            return True
    return bool(np.all(np.isfinite(arr)))


def _nonfinite_error(path: str, which: str) -> ValueError:
    return ValueError(f"parameter {path!r} of {which} holds non-finite values (nan or inf)")


def _as_f64(flat: Mapping[str, Any], which: str) -> dict[str, np.ndarray]:
    """Every leaf of ``flat`` as a float64 numpy array; ``ValueError`` naming a non-finite one."""
    out = {}
    for path, leaf in flat.items():
        arr = np.asarray(leaf, dtype=np.float64)
        if not _all_finite(arr):
            raise _nonfinite_error(path, which)
        out[path] = arr
    return out


def _check_finite_params(flat: Mapping[str, Any], which: str) -> None:
    """``ValueError`` naming the first leaf of ``flat`` (a ``which``) holding nan or inf."""
    for path, leaf in flat.items():
        if not _all_finite(np.asarray(leaf)):
            raise _nonfinite_error(path, which)


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


def _check_iter(max_iter, tol):
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative int, got {max_iter!r}")
    if not (tol >= 0):
        raise ValueError(f"tol must be non-negative, got {tol!r}")
    return int(max_iter)


def _thread_count(num_threads) -> int:
    """``num_threads`` checked; ``None``: ``min(4, cpu_count)``."""
    num_threads = positive_int(num_threads, "num_threads", allow_none=True)
    return max(1, min(4, os.cpu_count() or 1)) if num_threads is None else num_threads


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


# --------------------------------------------------------------------------- cost terms


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


def _c_contiguous(M: np.ndarray, block: int = 32) -> np.ndarray:
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


def _build_terms(spec: PermutationSpec, shapes: Mapping[str, tuple]) -> dict[str, list[_Term]]:
    terms: dict[str, list[_Term]] = {}
    for name, where in spec.perm_to_axes.items():
        terms[name] = [_Term(path, axis, tuple(shapes[path]), spec.axes[path]) for path, axis in where]
    return terms


def _deps(terms: Mapping[str, list[_Term]]) -> dict[str, tuple[str, ...]]:
    return {name: tuple(sorted(set().union(*(t.deps for t in ts)))) for name, ts in terms.items()}


def _is_linear(deps: Mapping[str, tuple[str, ...]]) -> bool:
    """No permutation acts twice on one parameter: J is then tracked exactly by LAP gains."""
    return all(name not in ds for name, ds in deps.items())


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


def _sweep_order(rng: np.random.Generator, names: list[str]) -> list[str]:
    """The permutation names in the random order of one sweep (one draw from ``rng``)."""
    return [names[k] for k in rng.permutation(len(names))]


# --------------------------------------------------------------------------- LAP solves


def _gain(C: np.ndarray, new: np.ndarray, old: np.ndarray) -> float:
    """LAP objective gain of ``new`` over ``old`` (0 when equal, so ties never churn)."""
    if np.array_equal(new, old):
        return 0.0
    rows = np.arange(len(new))
    return float(C[rows, new].sum() - C[rows, old].sum())


#: the LAP solvers a matching function accepts (``lap_solver=``); see :func:`_lap`
LAP_SOLVERS = ("auto", "scipy")


def _check_lap_solver(lap_solver: str) -> str:
    if lap_solver not in LAP_SOLVERS:
        raise ValueError(f"lap_solver must be one of {LAP_SOLVERS}, got {lap_solver!r}")
    return lap_solver


def _lap_solver_used(lap_solver: str) -> str:
    """The solver ``lap_solver`` resolves to: ``"lapjv"`` (lapx's ``lapjvh``) for ``"auto"`` when ``lapx`` is there."""
    return "lapjv" if lap_solver == "auto" and _lapjv is not None else "scipy"


def _ties_likely(C: np.ndarray, scale: float | None = None) -> bool:
    """Whether the LAP on the square ``C`` probably has several optima: ``C`` is integer-valued,
    or two rows (two columns) are equal up to an added constant, e.g. duplicated or dead units.

    There the optimum that a solver returns depends on its tie-breaking, so :func:`_lap`
    leaves such matrices to scipy, whose answer the plain Git Re-Basin loop gives. The
    test is conservative: rows (columns) are projected on a fixed random vector summing to
    zero (blind to added constants), and projections agreeing to within the rounding error
    of the projection count as equal. Cost: two matrix-vector products. ``scale``:
    ``max |C|`` when the caller has it.
    """
    n = C.shape[0]
    if n < 2:
        return False
    if scale is None:
        scale = _abs_max(C)
    if np.array_equal(C[0], np.round(C[0])) and np.array_equal(C[:, 0], np.round(C[:, 0])) \
            and np.array_equal(C, np.round(C)) and scale < 2.0**52:  # (every larger float is whole)
        return True
    g = _projection(n)
    tol = 64 * np.finfo(np.float64).eps * scale * float(np.abs(g).sum())
    for h in (C @ g, g @ C):
        if np.min(np.diff(np.sort(h))) <= tol:
            return True
    return False


def _abs_max(C: np.ndarray) -> float:
    """``max |C|`` without an n x n temporary."""
    return max(float(C.max()), -float(C.min()))


@functools.lru_cache(maxsize=8)
def _projection(n: int) -> np.ndarray:
    """The fixed random vector of :func:`_ties_likely` (zero sum; read-only)."""
    g = np.random.default_rng(0).standard_normal(n)
    g -= g.mean()
    g.flags.writeable = False
    return g


_SCRATCH = threading.local()


def _scratch(shape: tuple[int, ...]) -> np.ndarray:
    """A float64 array of ``shape`` reused by this thread's LAP solves (a fresh 32 MB array per
    solve at n = 2048 cost more in page faults than the scaling pass itself)."""
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.shape != shape:
        buf = _SCRATCH.buf = np.empty(shape)
    return buf


def _lap_block(C: np.ndarray, solver: str) -> np.ndarray:
    """Column matched to every row of the square ``C``, maximising ``sum_i C[i, col[i]]``.

    ``solver="lapjv"``: ``lap.lapjvh`` (lapx's hybrid Jonker-Volgenant) on ``-C`` scaled by
    a power of two to ``max |C| < 1`` (exact in floating point), unless the LAP has likely
    ties (:func:`_ties_likely`); otherwise :func:`scipy.optimize.linear_sum_assignment`.
    Both are exact, so where the optimum is unique (any float cost matrix without exact
    ties) they return the same permutation.
    """
    square = C.shape[0] == C.shape[1] and C.shape[0] > 1
    if solver == "lapjv" and square:
        scale = _abs_max(C)
        if 0.0 < scale < np.inf and not _ties_likely(C, scale):
            factor = -np.ldexp(1.0, -int(np.frexp(scale)[1]))  # -2^-e with 2^(e-1) <= scale < 2^e
            rows, cols = _lapjv(np.multiply(C, factor, out=_scratch(C.shape)), return_cost=False)
            col = np.empty(C.shape[0], np.int64)
            col[rows] = cols
            return col
    _, col = linear_sum_assignment(C, maximize=True)
    return col.astype(np.int64, copy=False)


def _lap(C: np.ndarray, groups: int = 1, lap_solver: str = "auto") -> np.ndarray:
    """Column matched to every row, maximising ``sum_i C[i, col[i]]``.

    With ``groups > 1`` rows and columns are cut into that many equal contiguous blocks
    (:attr:`~symlib.symmetry.specs.PermutationSpec.blocks`) and every row is matched within
    its block: one LAP per diagonal block of ``C``, the answers assembled. This is the
    exact optimum over the permutations that keep every unit in its block. ``groups == 1``
    is one plain LAP (bit for bit the unblocked answer).

    ``lap_solver``: ``"auto"`` solves with lapx's ``lap.lapjvh`` when ``lapx`` is
    installed (a dependency of symlib) and the LAP has no likely ties, else with scipy
    (:func:`_lap_block`); ``"scipy"`` always uses
    :func:`scipy.optimize.linear_sum_assignment`, the solver of the plain re-basin loop.
    """
    solver = _lap_solver_used(lap_solver)
    if groups == 1:
        return _lap_block(C, solver)
    size = C.shape[0] // groups
    col = np.empty(C.shape[0], np.int64)
    for lo in range(0, C.shape[0], size):
        col[lo:lo + size] = _lap_block(C[lo:lo + size, lo:lo + size], solver) + lo
    return col


def _timed_lap(C: np.ndarray, groups: int = 1, lap_solver: str = "auto") -> tuple[np.ndarray, float]:
    """:func:`_lap` and the seconds it took (measured on the thread that runs it)."""
    t = time.perf_counter()
    col = _lap(C, groups, lap_solver)
    return col, time.perf_counter() - t


class _LapWorkers:
    """LAP solves inline (one thread) or on a thread pool started on first use.

    Both solvers release the GIL, so solves on the pool run concurrently with each other
    and with the caller's matrix products. As a context manager it shuts the pool down
    (waiting for running solves) on exit.
    """

    def __init__(self, num_threads: int, lap_solver: str = "auto"):
        self.num_threads = num_threads
        self.lap_solver = lap_solver
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> _LapWorkers:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.num_threads)
        return self._pool

    def solve_all(self, costs: list[np.ndarray], groups: list[int]) -> list[np.ndarray]:
        """Solve every cost matrix now (``costs[k]`` within ``groups[k]`` blocks, see :func:`_lap`),
        concurrently when there are several and threads to spare."""
        if len(costs) > 1 and self.num_threads > 1:
            return list(self._executor().map(functools.partial(_lap, lap_solver=self.lap_solver), costs, groups))
        return [_lap(C, g, self.lap_solver) for C, g in zip(costs, groups)]

    def submit(self, costs: np.ndarray, groups: int = 1) -> Callable[[], list[tuple[np.ndarray, float]]]:
        """Start timed solves of a stack of cost matrices (each within ``groups`` blocks, see
        :func:`_lap`); returns a function waiting for them."""
        if self.num_threads == 1:
            done = [_timed_lap(C, groups, self.lap_solver) for C in costs]
            return lambda: done
        futures = [self._executor().submit(_timed_lap, C, groups, self.lap_solver) for C in costs]
        return lambda: [f.result() for f in futures]


@dataclass
class _Tally:
    """Work and time counted over a matching run (see :class:`MatchResult`)."""

    solves: int = 0
    skipped: int = 0
    cost_time: float = 0.0
    solver_time: float = 0.0
    wait_time: float = 0.0


# --------------------------------------------------------------------------- weight matching


class _CostCache:
    """Cost matrices of one pair (A, B), with constant parts precomputed and low-rank updates.

    Every variable term (a parameter whose other axes carry other permutations) is kept up
    to date on its own: when k of its columns moved since the cost was last computed, the
    cached cost gets the rank-k product of those columns (a cost with a single variable
    term is recomputed when more than half of them moved).
    """

    #: a cost with one variable term is recomputed from scratch when more than this
    #: fraction of the term's columns moved
    FULL_FRACTION = 0.5

    def __init__(self, terms: Mapping[str, list[_Term]], fa: Mapping, fb: Mapping):
        self.terms = terms
        self.const: dict[str, np.ndarray] = {}
        self.var: dict[str, list[tuple[_Term, np.ndarray, np.ndarray]]] = {}
        for name, ts in terms.items():
            n = ts[0].n
            var, const_a, const_b = [], [], []
            for t in ts:
                A, B = t.mat(fa[t.path]).T, t.mat(fb[t.path]).T  # (rest, n)
                if t.variable:
                    var.append((t, _c_contiguous(A), _c_contiguous(B)))
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
    versions of its dependencies when it was last solved (``None``: never solved);
    ``blocks`` is the spec's :attr:`~symlib.symmetry.specs.PermutationSpec.blocks`.
    """

    perms: dict[str, np.ndarray]
    deps: Mapping[str, tuple[str, ...]]
    obj: float
    blocks: Mapping[str, int] = field(default_factory=dict)
    version: dict[str, int] = field(init=False)
    seen: dict[str, tuple[int, ...] | None] = field(init=False)

    def __post_init__(self):
        self.version = {name: 0 for name in self.deps}
        self.seen = {name: None for name in self.deps}

    def dep_versions(self, name: str) -> tuple[int, ...]:
        return tuple(self.version[q] for q in self.deps[name])

    def accept(self, name: str, C: np.ndarray, col: np.ndarray) -> bool:
        """Take the LAP answer ``col`` if it strictly improves; returns whether it did."""
        gain = _gain(C, col, self.perms[name])
        if gain <= 0:
            return False
        self.perms[name] = col
        self.version[name] += 1
        self.obj += gain
        return True


def _solve_run(run: list[str], state: _PairState, costs: _CostCache, workers: _LapWorkers, tally: _Tally) -> bool:
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
    changed = [state.accept(name, C, col) for name, C, col in zip(todo, Cs, cols)]
    for name in todo:
        # the solve saw the dependencies as they are now (the permutation's own change
        # included when it depends on itself)
        state.seen[name] = state.dep_versions(name)
    return any(changed)


def _pair_sweep(order: list[str], state: _PairState, costs: _CostCache, workers: _LapWorkers, tally: _Tally) -> bool:
    """One sweep of :func:`weight_matching` in ``order``; returns whether any permutation changed."""
    changed = False
    for run in _independent_runs(order, state.deps):
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
        tol: stop after the first sweep improving J by at most ``tol * |J|``.
        num_threads: threads for concurrent LAPs (default ``min(4, cpu_count)``).
        lap_solver: ``"auto"`` (Jonker-Volgenant, lapx's ``lapjvh``, where the LAP has no
            likely ties, else scipy) or ``"scipy"`` (always
            :func:`scipy.optimize.linear_sum_assignment`); both exact, see "LAP solver" in
            the module docstring.

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
    max_iter = _check_iter(max_iter, tol)
    num_threads = _thread_count(num_threads)
    lap_solver = _check_lap_solver(lap_solver)
    sizes = _check_pair(spec, params_a, params_b)
    fa = _as_f64(flatten_params(params_a), "params_a")
    fb = _as_f64(flatten_params(params_b), "params_b")
    perms = _init_perms(init_perms, sizes, spec)
    names = list(spec.perm_names)
    rng = _rng(key)

    t0 = time.perf_counter()
    terms = _build_terms(spec, {p: fa[p].shape for p in fa})
    deps = _deps(terms)
    costs = _CostCache(terms, fa, fb)
    tally = _Tally(cost_time=time.perf_counter() - t0)

    # J is computed once, then tracked by adding accepted LAP gains: exact when no
    # permutation acts twice on one parameter ("linear" spec), otherwise recomputed
    linear = _is_linear(deps)
    state = _PairState(perms, deps, _objective(spec, fa, fb, None if init_perms is None else perms), spec.blocks)
    initial = state.obj
    history: list[float] = []
    converged = False
    with _LapWorkers(num_threads, lap_solver) as workers:
        for sweep in range(max_iter):
            before = state.obj
            changed = _pair_sweep(_sweep_order(rng, names), state, costs, workers, tally)
            if changed and not linear:
                state.obj = _objective(spec, fa, fb, state.perms)
            history.append(state.obj)
            if verbose:
                print(f"weight_matching sweep {sweep + 1}: J = {state.obj:.10g} (+{state.obj - before:.3g}), "
                      f"{tally.solves} LAPs solved, {tally.skipped} skipped")
            if state.obj - before <= tol * abs(before):
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
        info={"lap_solver": _lap_solver_used(lap_solver)},
    )


# --------------------------------------------------------------------------- activation matching


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

    def correlation(self, eps: float) -> np.ndarray:
        """``corr[i, j] = cov(a_i, b_j) / (std(a_i) std(b_j) + eps)`` over the ``count`` rows."""
        count = self.count
        ma, mb = self.sum_a / count, self.sum_b / count
        var_a = np.maximum(self.sumsq_a / count - ma**2, 0.0)
        var_b = np.maximum(self.sumsq_b / count - mb**2, 0.0)
        cov = self.cross / count - np.outer(ma, mb)
        return cov / (np.outer(np.sqrt(var_a), np.sqrt(var_b)) + eps)


def _hidden_batch(hidden: Callable, pa, pb, x, first_example: int, spec: PermutationSpec,
                  sizes: Mapping[str, int]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """float64 ``(rows, units)`` activations of A and B on the batch ``x`` by permutation name
    (:func:`_as_rows`); ``ValueError`` if ``x`` is not finite."""
    ha, hb, finite = hidden(pa, pb, x)
    if not bool(finite):
        raise ValueError(f"data holds non-finite values (nan or inf) in examples "
                         f"{first_example}..{first_example + x.shape[0] - 1}")
    return _as_rows(spec, sizes, ha), _as_rows(spec, sizes, hb)


def _stream_layer_sums(hidden: Callable, pa, pb, data, batch_size: int, spec: PermutationSpec,
                       sizes: Mapping[str, int]) -> tuple[dict[str, _LayerSums], int]:
    """Stream ``data`` through A and B; returns the sums by permutation name and the example count."""
    count = 0
    layers: dict[str, _LayerSums] | None = None
    for x in _batches(data, batch_size):
        x = jnp.asarray(x)
        if x.shape[0] == 0:
            continue
        ha, hb = _hidden_batch(hidden, pa, pb, x, count, spec, sizes)
        if layers is None:
            layers = {name: _LayerSums.start(ha[name], hb[name]) for name in ha}
        for name, layer in layers.items():
            layer.add(ha[name], hb[name])
        count += x.shape[0]
    if count == 0:
        raise ValueError("data holds no examples")
    return layers, count


class _LayerMatch(NamedTuple):
    perm: np.ndarray
    total_correlation: float
    seconds: float


def _match_layer(corr: np.ndarray, groups: int, lap_solver: str = "auto") -> _LayerMatch:
    """One LAP (within ``groups`` blocks, see :func:`_lap`) maximising the matched total correlation of a layer."""
    t0 = time.perf_counter()
    col = _lap(corr, groups, lap_solver)
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

    ``apply_fn(params, x)`` gives the hidden activations that every permutation of the
    spec acts on, either as a dict ``{permutation name: activations}`` naming exactly the
    spec's permutations (any architecture; activations of layers the spec does not permute
    are simply left out), or as a list ``[h_0, ..., h_{L-1}]`` by MLP hidden layer, layer
    ``l`` permuted by the spec's ``"P_l"``. Activations are ``(batch, ..., units)``, the
    units last; all other axes are flattened into examples, so a convolutional feature
    map ``(n, h, w, c)`` counts every spatial position as an example, ``(n * h * w, c)``.
    For OptuNet (:func:`symlib.core.cnn.optunet_hidden`, keyed by layer) with
    :func:`~symlib.symmetry.architectures.optunet_permutation_spec`::

        def apply_fn(params, x):
            h = optunet_hidden(params, x)
            return {"P_conv_1": h["conv_1"], "P_dense_0": h["dense_0"]}

    Only running sums of the activations are kept (float64, shifted by the first batch's
    means for accuracy). For every permutation the Pearson correlation ``corr[i, j] =
    cov(a_i, b_j) / (std(a_i) std(b_j) + eps)`` is formed and one LAP maximises ``sum_i
    corr[i, p[i]]`` (within every block of a permutation with
    :attr:`~symlib.symmetry.specs.PermutationSpec.blocks`). Units with zero variance over
    the data (dead ReLUs, constants) have exactly zero covariance (thanks to the shift),
    so their correlations are 0, never NaN. The activations of B do not depend on how
    its other layers are permuted, so the layers are independent and this is exact.

    Args:
        spec: the permutation spec.
        params_a: the reference network A.
        params_b: the network B to permute, with the same shapes as A.
        data: an array whose leading axis holds the examples (``(N, d_0)`` vectors,
            ``(N, h, w, c)`` images; cut into batches of ``batch_size``) or an iterable
            of batches.
        batch_size: examples per batch when ``data`` is an array (a positive int).
        apply_fn: ``apply_fn(params, x)`` returns the hidden activations, a dict keyed by
            permutation name or a list by MLP hidden layer (above; default
            :func:`symlib.core.models.mlp_hidden`, the list form).
        eps: added to the product of standard deviations.
        lap_solver: ``"auto"`` or ``"scipy"``, as in :func:`weight_matching`.

    Returns:
        A :class:`MatchResult` with ``objective`` the matched total correlation of every
        permutation (list form: ``P_0, P_1, ...``; dict form: the spec's order),
        ``info["mean_correlation"]`` the means per unit, ``info["num_examples"]`` the
        number of examples seen and ``info["num_rows"]`` the rows (examples times spatial
        positions) per permutation.

    Raises:
        ValueError: if ``batch_size`` is not a positive int or ``lap_solver`` is unknown; if
            A or B does not fit ``spec`` or holds nan or inf (naming the parameter); if ``data`` holds nan or
            inf or no examples; if ``apply_fn``'s dict does not name exactly the spec's
            permutations, its list does not match a spec ``P_0 .. P_{L-1}``, or the
            activations' last axis is not the permutation's size (naming it).
        TypeError: if ``spec`` is not a :class:`~symlib.symmetry.specs.PermutationSpec`,
            or ``apply_fn`` returns neither a dict nor a list.
    """
    t_start = time.perf_counter()
    batch_size = positive_int(batch_size, "batch_size")
    lap_solver = _check_lap_solver(lap_solver)
    sizes = _check_pair(spec, params_a, params_b)
    _check_finite_params(flatten_params(params_a), "params_a")
    _check_finite_params(flatten_params(params_b), "params_b")
    if apply_fn is None:
        from symlib.core.models import mlp_hidden as apply_fn
    hidden = functools.partial(_hidden_pair, apply_fn)
    pa = jax.tree_util.tree_map(jnp.asarray, params_a)
    pb = jax.tree_util.tree_map(jnp.asarray, params_b)

    t_cost = time.perf_counter()
    layers, count = _stream_layer_sums(hidden, pa, pb, data, batch_size, spec, sizes)
    cost_time = time.perf_counter() - t_cost

    matches = {name: _match_layer(layer.correlation(eps), spec.blocks.get(name, 1), lap_solver)
               for name, layer in layers.items()}
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
            "num_rows": {name: layer.count for name, layer in layers.items()},
            "lap_solver": _lap_solver_used(lap_solver),
        },
    )


# --------------------------------------------------------------------------- many-to-one


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
    out = {path: _permute_leaf_rows(leaf, spec.axes[path], checked, sizes, m) for path, leaf in flat.items()}
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
    terms: dict[str, list[_Term]]
    deps: dict[str, tuple[str, ...]]
    ref: dict[str, np.ndarray]  # reference, float64
    stack: dict[str, np.ndarray]  # stack, its own dtype, leading axis m
    ref_mats: dict[str, np.ndarray]  # (n, total rest) per permutation: its terms side by side, product dtype
    dtype: np.dtype  # of the matrix products
    m: int
    linear: bool  # J tracked by LAP gains (see _is_linear)

    @classmethod
    def build(cls, spec: PermutationSpec, params_ref: Mapping, params_stack: Mapping, precision: str) -> _ManyProblem:
        """Check the inputs (``ValueError`` naming the parameter) and set up the terms."""
        sizes = _check_pair(spec, params_ref, params_stack, batch_dims_b=1)
        ref = _as_f64(flatten_params(params_ref), "params_ref")
        stack = {p: np.asarray(v) for p, v in flatten_params(params_stack).items()}
        _check_finite_params(stack, "params_stack")
        terms = _build_terms(spec, {p: ref[p].shape for p in ref})
        dtype = np.dtype(precision)
        ref_mats = {name: np.concatenate([t.mat(ref[t.path]) for t in ts], axis=1).astype(dtype, copy=False)
                    for name, ts in terms.items()}
        m = int(next(iter(stack.values())).shape[0]) if stack else 0
        deps = _deps(terms)
        return cls(spec, list(spec.perm_names), sizes, terms, deps, ref, stack, ref_mats, dtype, m, _is_linear(deps))

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
            out[j] = _objective(self.spec, self.ref, sample, sample_perms)
        return out

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
    ``seen[name][s]`` holds the versions of its dependencies when it was last solved
    there (``solved[name][s]``); ``changed`` marks the samples changed in this sweep.
    """

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

    def mark_solved(self, name: str, rows: np.ndarray) -> None:
        """Record that ``name`` was solved for the samples ``rows`` with the current dependencies."""
        self.seen[name][rows] = self.dep_versions(name)[rows]
        self.solved[name][rows] = True

    def accept(self, name: str, s: int, C: np.ndarray, col: np.ndarray) -> None:
        """Take the LAP answer ``col`` for sample ``s`` if it strictly improves."""
        gain = _gain(C, col, self.perms[name][s])
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


def _accept_chunk(name: str, chunk: _Chunk, state: _ManyState, tally: _Tally) -> None:
    """Wait for a chunk's LAPs and take the improving answers."""
    t = time.perf_counter()
    results = chunk.results()
    tally.wait_time += time.perf_counter() - t
    for j, s in enumerate(chunk.rows):
        col, seconds = results[j]
        tally.solver_time += seconds
        state.accept(name, s, chunk.costs[j], col)


def _many_step(name: str, problem: _ManyProblem, state: _ManyState, buffers: _CostBuffers,
               workers: _LapWorkers, tally: _Tally) -> None:
    """Solve ``name`` for every stale sample, chunk by chunk.

    One chunk is kept in flight: its LAPs are solved on the workers while the next
    chunk's costs are built.
    """
    stale = state.stale(name)
    tally.skipped += int((state.active & ~stale).sum())
    rows_all = np.flatnonzero(stale)
    if len(rows_all) == 0:
        return
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
    state.mark_solved(name, rows_all)


def _end_many_sweep(problem: _ManyProblem, state: _ManyState, before: np.ndarray, tol: float, tally: _Tally) -> None:
    """Convergence bookkeeping after a sweep: J, sweep counts, history, stopping rule."""
    changed = np.flatnonzero(state.active & state.changed)
    if len(changed) and not problem.linear:
        t0 = time.perf_counter()
        state.obj[changed] = problem.objectives(changed, state.perms)
        tally.cost_time += time.perf_counter() - t0
    state.sweeps[state.active] += 1
    state.history.append(state.obj.copy())
    done = state.active & (state.obj - before <= tol * np.abs(before))
    state.converged |= done
    state.active &= ~done


def _many_sweep(order: list[str], problem: _ManyProblem, state: _ManyState, tol: float, buffers: _CostBuffers,
                workers: _LapWorkers, tally: _Tally) -> None:
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
    rule of the module docstring); their costs are rebuilt in full (no per-sample cost
    cache, to bound memory), ``chunk_size`` samples at a time, with one BLAS product per
    sample and term, and the chunk's LAPs are solved on ``num_threads`` threads while the
    next chunk is built. For a single permutation (one hidden layer) one solve per sample
    is optimal; the second sweep only confirms it and costs nothing.

    ``precision="float32"`` forms the matrix products in float32 (up to 2x faster on CPU;
    costs are still accumulated, and J computed, in float64): the permutations then agree
    with :func:`weight_matching` unless two assignments are within float32 rounding of each
    other. The default ``"float64"`` reproduces it up to float64 rounding.

    Args:
        key: jax key, int seed, numpy Generator or None; draws the sweep orders.
        spec: the permutation spec the reference and every network of the stack fit.
        params_ref: the reference network.
        params_stack: the networks to align, with a leading axis ``m`` on every leaf.
        max_iter: the most sweeps (a non-negative int).
        tol: a sample stops after the first sweep improving its J by at most ``tol * |J|``.
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
    max_iter = _check_iter(max_iter, tol)
    chunk_size = positive_int(chunk_size, "chunk_size", allow_none=True)
    num_threads = _thread_count(num_threads)
    if precision not in ("float64", "float32"):
        raise ValueError(f"precision must be 'float64' or 'float32', got {precision!r}")
    lap_solver = _check_lap_solver(lap_solver)
    problem = _ManyProblem.build(spec, params_ref, params_stack, precision)
    chunk_size = chunk_size or problem.default_chunk_size()
    rng = _rng(key)

    tally = _Tally()
    t0 = time.perf_counter()
    initial = problem.objectives(np.arange(problem.m), None)
    tally.cost_time += time.perf_counter() - t0
    state = _ManyState.start(problem, initial)
    buffers = _CostBuffers(chunk_size)
    with _LapWorkers(num_threads, lap_solver) as workers:
        for sweep in range(max_iter):
            if not state.active.any():
                break
            _many_sweep(_sweep_order(rng, problem.names), problem, state, tol, buffers, workers, tally)
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
              "lap_solver": _lap_solver_used(lap_solver)},
    )
