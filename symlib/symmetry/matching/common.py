"""What the matching modules share: the result types, checks of their inputs, the work tally
and the cost terms a spec gives.

A *term* (:class:`Term`) is one (parameter, axis) pair a permutation acts on; the cost matrix
of a permutation is a sum over its terms (:mod:`~symlib.symmetry.matching.weight`, "Weight
matching"), and the objective ``J`` (:func:`objective`) is the inner product of A with the
permuted B.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from symlib.symmetry import permutations as _perm
from symlib.symmetry.specs import PermutationSpec, check_spec, flatten_params


# --------------------------------------------------------------------------- results


@dataclass
class MatchResult:
    """Outcome of :func:`weight_matching` or :func:`activation_matching`.

    Attributes:
        perms: name -> int64 permutation (gather convention, see the package docstring).
        objective: weight matching: J after each sweep (``len == sweeps``; non-decreasing);
            activation matching: the total matched correlation of each permutation (``P_0, P_1,
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


def as_f64(flat: Mapping[str, Any], which: str) -> dict[str, np.ndarray]:
    """Every leaf of ``flat`` as a float64 numpy array; ``ValueError`` naming a non-finite one."""
    out = {}
    for path, leaf in flat.items():
        arr = np.asarray(leaf, dtype=np.float64)
        if not _all_finite(arr):
            raise _nonfinite_error(path, which)
        out[path] = arr
    return out


def check_finite_params(flat: Mapping[str, Any], which: str) -> None:
    """``ValueError`` naming the first leaf of ``flat`` (a ``which``) holding nan or inf."""
    for path, leaf in flat.items():
        if not _all_finite(np.asarray(leaf)):
            raise _nonfinite_error(path, which)


def check_pair(spec: PermutationSpec, params_a: Mapping, params_b: Mapping, batch_dims_b: int = 0) -> dict[str, int]:
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
    for path in spec.stored_paths:
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


def check_iter(max_iter, tol):
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative int, got {max_iter!r}")
    if not (tol >= 0):
        raise ValueError(f"tol must be non-negative, got {tol!r}")
    return int(max_iter)


@dataclass
class Tally:
    """Work and time counted over a matching run (see :class:`MatchResult`)."""

    solves: int = 0
    skipped: int = 0
    cost_time: float = 0.0
    solver_time: float = 0.0
    wait_time: float = 0.0


# --------------------------------------------------------------------------- cost terms


def sweep_rng(key) -> np.random.Generator:
    return _perm.as_generator(key)


def _c_strides(shape: tuple[int, ...]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


class Term:
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


def build_terms(spec: PermutationSpec, shapes: Mapping[str, tuple]) -> dict[str, list[Term]]:
    terms: dict[str, list[Term]] = {}
    for name, where in spec.perm_to_axes.items():
        terms[name] = [Term(path, axis, tuple(shapes[path]), spec.axes[path]) for path, axis in where]
    return terms


def term_deps(terms: Mapping[str, list[Term]]) -> dict[str, tuple[str, ...]]:
    return {name: tuple(sorted(set().union(*(t.deps for t in ts)))) for name, ts in terms.items()}


def is_linear(deps: Mapping[str, tuple[str, ...]]) -> bool:
    """No permutation acts twice on one parameter: J is then tracked exactly by LAP gains."""
    return all(name not in ds for name, ds in deps.items())


def _permuted(spec: PermutationSpec, path: str, w: np.ndarray, perms: Mapping[str, np.ndarray] | None) -> np.ndarray:
    if perms is None:  # all identities
        return w
    for axis, name in enumerate(spec.axes[path]):
        if name is not None:
            w = np.take(w, perms[name], axis=axis)
    return w


def objective(spec: PermutationSpec, fa: Mapping, fb: Mapping, perms: Mapping[str, np.ndarray] | None,
              paths: tuple[str, ...] | None = None) -> float:
    """J = sum over params of <A, perms(B)>, float64 (``perms=None``: all identities; ``paths``:
    the sum over these parameters only)."""
    total = 0.0
    for path in spec.axes if paths is None else paths:
        total += float(np.vdot(fa[path], _permuted(spec, path, fb[path], perms)))
    return total


def sweep_order(rng: np.random.Generator, names: list[str]) -> list[str]:
    """The permutation names in the random order of one sweep (one draw from ``rng``).

    The draw permutes the sorted names, so equal specs listing their permutations in
    different orders get the same sweeps.
    """
    ordered = sorted(names)
    return [ordered[k] for k in rng.permutation(len(ordered))]
