"""The linear assignment problems (LAPs) of every matching tool, and the threads solving them.

Every LAP (:func:`solve_lap`) is solved exactly, by one of two solvers (``lap_solver=`` of every
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
  or dead units); see :func:`ties_likely`.
* ``"scipy"``: :func:`scipy.optimize.linear_sum_assignment`, the solver of the plain
  re-basin loop (and the fallback where ``lapx`` is not installed, or the matrix is not
  square). Both solvers release the GIL, so LAPs solved on worker threads (concurrent
  independent solves, :func:`~symlib.symmetry.matching.weight_matching_many` with ``num_threads > 1``) run in
  parallel with each other and with the matrix products.

Both are exact, so where the optimum is unique (float costs without exact ties) they give
the same permutation, and matching the same iterates as with scipy
(``tests/symmetry/test_lap_solver.py`` checks this on random, scaled, nearly diagonal and tied
matrices and on MLP and convolutional specs). Where ties slip past the guard, the
objective is the same optimum but the permutation may be another optimal one. Warm
starts did not pay: the previous solve's column duals (from ``lapjv`` on the reduced
matrix, with the duals recomputed by label-correcting shortest paths) or a sparse
candidate LAP with dual pricing were no faster than a cold ``lapjv`` here: consecutive
solves of one permutation move tens to hundreds of units, a sixth to two thirds of the
rows lose tightness, and recomputing the duals costs several passes over the n x n
matrix (benchmarks/README.md).
"""
from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.optimize import linear_sum_assignment

try:  # Jonker-Volgenant from lapx (a dependency; without it every LAP goes to scipy)
    from lap import lapjvh
except ImportError:  # pragma: no cover
    lapjvh = None

from symlib.core.checks import positive_int


def assignment_gain(C: np.ndarray, new: np.ndarray, old: np.ndarray) -> float:
    """LAP objective gain of ``new`` over ``old`` (0 when equal, so ties never churn)."""
    if np.array_equal(new, old):
        return 0.0
    rows = np.arange(len(new))
    return float(C[rows, new].sum() - C[rows, old].sum())


#: the LAP solvers a matching function accepts (``lap_solver=``); see :func:`solve_lap`
LAP_SOLVERS = ("auto", "scipy")


def check_lap_solver(lap_solver: str) -> str:
    if lap_solver not in LAP_SOLVERS:
        raise ValueError(f"lap_solver must be one of {LAP_SOLVERS}, got {lap_solver!r}")
    return lap_solver


def lap_solver_used(lap_solver: str) -> str:
    """The solver ``lap_solver`` resolves to: ``"lapjv"`` (lapx's ``lapjvh``) for ``"auto"`` when ``lapx`` is there."""
    return "lapjv" if lap_solver == "auto" and lapjvh is not None else "scipy"


def ties_likely(C: np.ndarray, scale: float | None = None) -> bool:
    """Whether the LAP on the square ``C`` probably has several optima: ``C`` is integer-valued,
    or two rows (two columns) are equal up to an added constant, e.g. duplicated or dead units.

    There the optimum that a solver returns depends on its tie-breaking, so :func:`solve_lap`
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
    """The fixed random vector of :func:`ties_likely` (zero sum; read-only)."""
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


def solve_lap_block(C: np.ndarray, solver: str) -> np.ndarray:
    """Column matched to every row of the square ``C``, maximising ``sum_i C[i, col[i]]``.

    ``solver="lapjv"``: ``lap.lapjvh`` (lapx's hybrid Jonker-Volgenant) on ``-C`` scaled by
    a power of two to ``max |C| < 1`` (exact in floating point), unless the LAP has likely
    ties (:func:`ties_likely`); otherwise :func:`scipy.optimize.linear_sum_assignment`.
    Both are exact, so where the optimum is unique (any float cost matrix without exact
    ties) they return the same permutation.
    """
    square = C.shape[0] == C.shape[1] and C.shape[0] > 1
    if solver == "lapjv" and square:
        scale = _abs_max(C)
        if 0.0 < scale < np.inf and not ties_likely(C, scale):
            factor = -np.ldexp(1.0, -int(np.frexp(scale)[1]))  # -2^-e with 2^(e-1) <= scale < 2^e
            rows, cols = lapjvh(np.multiply(C, factor, out=_scratch(C.shape)), return_cost=False)
            col = np.empty(C.shape[0], np.int64)
            col[rows] = cols
            return col
    _, col = linear_sum_assignment(C, maximize=True)
    return col.astype(np.int64, copy=False)


def solve_lap(C: np.ndarray, groups: int = 1, lap_solver: str = "auto") -> np.ndarray:
    """Column matched to every row, maximising ``sum_i C[i, col[i]]``.

    With ``groups > 1`` rows and columns are cut into that many equal contiguous blocks
    (:attr:`~symlib.symmetry.specs.PermutationSpec.blocks`) and every row is matched within
    its block: one LAP per diagonal block of ``C``, the answers assembled. This is the
    exact optimum over the permutations that keep every unit in its block. ``groups == 1``
    is one plain LAP (bit for bit the unblocked answer).

    ``lap_solver``: ``"auto"`` solves with lapx's ``lap.lapjvh`` when ``lapx`` is
    installed (a dependency of symlib) and the LAP has no likely ties, else with scipy
    (:func:`solve_lap_block`); ``"scipy"`` always uses
    :func:`scipy.optimize.linear_sum_assignment`, the solver of the plain re-basin loop.
    """
    solver = lap_solver_used(lap_solver)
    if groups == 1:
        return solve_lap_block(C, solver)
    size = C.shape[0] // groups
    col = np.empty(C.shape[0], np.int64)
    for lo in range(0, C.shape[0], size):
        col[lo:lo + size] = solve_lap_block(C[lo:lo + size, lo:lo + size], solver) + lo
    return col


def _timed_lap(C: np.ndarray, groups: int = 1, lap_solver: str = "auto") -> tuple[np.ndarray, float]:
    """:func:`solve_lap` and the seconds it took (measured on the thread that runs it)."""
    t = time.perf_counter()
    col = solve_lap(C, groups, lap_solver)
    return col, time.perf_counter() - t


class LapWorkers:
    """LAP solves inline (one thread) or on a thread pool started on first use.

    Both solvers release the GIL, so solves on the pool run concurrently with each other
    and with the caller's matrix products. As a context manager it shuts the pool down
    (waiting for running solves) on exit.
    """

    def __init__(self, num_threads: int, lap_solver: str = "auto"):
        self.num_threads = num_threads
        self.lap_solver = lap_solver
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> LapWorkers:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.num_threads)
        return self._pool

    def solve_all(self, costs: list[np.ndarray], groups: list[int]) -> list[np.ndarray]:
        """Solve every cost matrix now (``costs[k]`` within ``groups[k]`` blocks, see :func:`solve_lap`),
        concurrently when there are several and threads to spare."""
        if len(costs) > 1 and self.num_threads > 1:
            return list(self._executor().map(functools.partial(solve_lap, lap_solver=self.lap_solver), costs, groups))
        return [solve_lap(C, g, self.lap_solver) for C, g in zip(costs, groups)]

    def submit(self, costs: np.ndarray, groups: int = 1) -> Callable[[], list[tuple[np.ndarray, float]]]:
        """Start timed solves of a stack of cost matrices (each within ``groups`` blocks, see
        :func:`solve_lap`); returns a function waiting for them."""
        if self.num_threads == 1:
            done = [_timed_lap(C, groups, self.lap_solver) for C in costs]
            return lambda: done
        futures = [self._executor().submit(_timed_lap, C, groups, self.lap_solver) for C in costs]
        return lambda: [f.result() for f in futures]


def thread_count(num_threads) -> int:
    """``num_threads`` checked; ``None``: ``min(4, cpu_count)``."""
    num_threads = positive_int(num_threads, "num_threads", allow_none=True)
    return max(1, min(4, os.cpu_count() or 1)) if num_threads is None else num_threads
