"""The LAP solver behind every matching tool (symlib.symmetry.matching.lap.solve_lap).

``lap_solver="auto"`` solves with Jonker-Volgenant (lapx's ``lap.lapjvh``) where the matrix has no
likely ties and with scipy otherwise; ``"scipy"`` always uses
``scipy.optimize.linear_sum_assignment``. Both are exact: the objective must be the
optimum, and the permutation scipy's wherever the optimum is unique (float matrices) or
ties are likely (integer-valued matrices, duplicated rows or columns), so that matching
follows the plain Git Re-Basin loop step for step.
"""
from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from _helpers import conv_spec_pair, random_mlp, stack_trees

from symlib.core.cnn import optunet_init
from symlib.symmetry.architectures import optunet_permutation_spec
import symlib.symmetry.matching.lap as matching_lap
from symlib.symmetry.matching import (
    activation_matching,
    weight_matching,
    weight_matching_many,
)
from symlib.symmetry.matching.lap import solve_lap, solve_lap_block, ties_likely
from symlib.symmetry.specs import mlp_permutation_spec
from symlib.testing.reference import reference_weight_matching

pytest.importorskip("lap")


@pytest.fixture(autouse=True)
def lapjv_calls(monkeypatch):
    """Count the matrices sent to Jonker-Volgenant (every square one without likely ties)."""
    calls = []
    real = matching_lap.lapjvh

    def counted(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(matching_lap, "lapjvh", counted)
    return calls


def _scipy(C):
    return linear_sum_assignment(C, maximize=True)[1]


def _value(C, col):
    return float(C[np.arange(len(col)), col].sum())


def _is_perm(col, n):
    return np.array_equal(np.sort(col), np.arange(n))


def _float_matrices(rng):
    """Float matrices whose optimum is unique (with probability 1), of many sizes and scales."""
    for n in (2, 3, 7, 50, 199):
        yield rng.standard_normal((n, n))
        yield rng.standard_normal((n, n)) * 1e9  # far above lap's LARGE = 1e6: scaled away
        yield rng.standard_normal((n, n)) * 1e-30
        yield 1e6 + rng.standard_normal((n, 3)) @ rng.standard_normal((3, n))  # low rank plus a large offset
        yield np.eye(n) + 1e-9 * rng.standard_normal((n, n))  # nearly diagonal, as in late sweeps
        yield 1.0 + 1e-10 * rng.standard_normal((n, n))  # nearly equal entries (may count as tied)


def test_lapjv_equals_scipy_on_float_matrices(lapjv_calls):
    rng = np.random.default_rng(0)
    for C in _float_matrices(rng):
        ref = _scipy(C)
        col = solve_lap_block(C, "lapjv")
        assert col.dtype == np.int64
        np.testing.assert_array_equal(col, ref, err_msg=f"n={len(C)}, scale {np.abs(C).max():.1e}")
        np.testing.assert_array_equal(solve_lap(C), ref)
        np.testing.assert_array_equal(solve_lap(C, lap_solver="scipy"), ref)
    assert len(lapjv_calls) >= 40  # all but the nearly constant matrices that count as tied


def test_lapjv_is_used_for_float_matrices_and_scipy_for_ties(lapjv_calls):
    rng = np.random.default_rng(7)
    C = rng.standard_normal((200, 200))
    np.testing.assert_array_equal(solve_lap(C), _scipy(C))
    assert lapjv_calls == [(200, 200)]
    np.testing.assert_array_equal(solve_lap(np.round(3 * C)), _scipy(np.round(3 * C)))  # integer-valued: likely ties
    np.testing.assert_array_equal(solve_lap(C, lap_solver="scipy"), _scipy(C))
    assert lapjv_calls == [(200, 200)]


def test_many_random_matrices_same_permutation_and_optimum():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(2, 120))
        C = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-20, 20)
        assert not ties_likely(C)  # so lapjv solves it
        ref, col = _scipy(C), solve_lap_block(C, "lapjv")
        np.testing.assert_array_equal(col, ref)


@pytest.mark.parametrize("kind", ["integer", "duplicate_rows", "duplicate_cols", "zeros", "constant", "rank_one_int"])
def test_tied_matrices_go_to_scipy(kind):
    """Integer-valued matrices and duplicated rows or columns have several optima: the answer
    is scipy's (so matching follows the plain loop), and in any case optimal and valid."""
    rng = np.random.default_rng(2)
    n = 40
    C = {
        "integer": lambda: rng.integers(0, 4, (n, n)).astype(float),
        "duplicate_rows": lambda: rng.standard_normal((n, n))[np.r_[0, np.arange(n - 1)]],
        "duplicate_cols": lambda: rng.standard_normal((n, n))[:, np.r_[0, np.arange(n - 1)]],
        "shifted_row": lambda: (lambda M: np.vstack([M, M[:1] + 0.25]))(rng.standard_normal((n - 1, n))),
        "zeros": lambda: np.zeros((n, n)),
        "constant": lambda: np.full((n, n), 0.3),
        "rank_one_int": lambda: np.outer(np.arange(n), np.arange(n)).astype(float),
    }[kind]()
    assert ties_likely(C)
    col = solve_lap(C)
    assert _is_perm(col, n)
    np.testing.assert_array_equal(col, _scipy(C))
    assert _value(C, col) == pytest.approx(_value(C, _scipy(C)), rel=1e-12, abs=1e-12)


def test_degenerate_and_rectangular():
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(solve_lap(np.array([[2.5]])), [0])
    np.testing.assert_array_equal(solve_lap(np.zeros((0, 0))), np.zeros(0, np.int64))
    # rectangular matrices (not used by matching, which is square) fall back to scipy
    R = rng.standard_normal((5, 8))
    np.testing.assert_array_equal(solve_lap_block(R, "lapjv"), _scipy(R))
    # ties that the guard does not see: the optimum is still reached, by a valid permutation
    n = 30
    base = rng.standard_normal(n)
    C = np.add.outer(base, base)  # every permutation is optimal
    col = solve_lap_block(C, "lapjv")
    assert _is_perm(col, n)
    assert _value(C, col) == pytest.approx(_value(C, _scipy(C)), rel=1e-12)


def test_blocks_with_lapjv():
    rng = np.random.default_rng(4)
    C = rng.standard_normal((12, 12))
    col = solve_lap(C, 3)
    for lo in range(0, 12, 4):
        np.testing.assert_array_equal(col[lo:lo + 4], _scipy(C[lo:lo + 4, lo:lo + 4]) + lo)


def test_unknown_lap_solver():
    a = random_mlp(np.random.default_rng(0), [5, 4, 3])
    with pytest.raises(ValueError, match="lap_solver"):
        weight_matching(0, mlp_permutation_spec(1), a, a, lap_solver="munkres")
    with pytest.raises(ValueError, match="lap_solver"):
        weight_matching_many(0, mlp_permutation_spec(1), a, stack_trees([a]), lap_solver="lapjv")
    with pytest.raises(ValueError, match="lap_solver"):
        activation_matching(mlp_permutation_spec(1), a, a, np.ones((4, 5)), lap_solver="")


def _assert_same(res_a, res_b):
    assert res_a.objective == res_b.objective
    for k in res_a.perms:
        np.testing.assert_array_equal(res_a.perms[k], res_b.perms[k], err_msg=k)


@pytest.mark.parametrize("sizes", [[20, 64, 5], [30, 48, 48, 6], [16, 80, 40, 80, 4], [50, 128, 128, 128, 10]])
def test_weight_matching_lapjv_same_iterates_as_plain_loop(sizes, lapjv_calls):
    """Same permutations as the plain re-basin loop (scipy) and as lap_solver="scipy"."""
    rng = np.random.default_rng(sum(sizes))
    spec = mlp_permutation_spec(len(sizes) - 2)
    a, b = random_mlp(rng, sizes), random_mlp(rng, sizes)
    res = weight_matching(7, spec, a, b, num_threads=1)  # every LAP inline, so by lapjv
    assert res.info["lap_solver"] == "lapjv"
    assert len(lapjv_calls) == res.num_solves
    _assert_same(res, weight_matching(7, spec, a, b))  # concurrent solves on threads (lapjv there too)
    res_scipy = weight_matching(7, spec, a, b, lap_solver="scipy")
    assert res_scipy.info["lap_solver"] == "scipy"
    _assert_same(res, res_scipy)
    perms_ref, hist_ref, _, _ = reference_weight_matching(7, spec, a, b)
    assert res.objective[-1] == pytest.approx(hist_ref[-1], rel=1e-12)
    for k in perms_ref:
        np.testing.assert_array_equal(res.perms[k], perms_ref[k], err_msg=k)


def test_weight_matching_lapjv_conv_specs(lapjv_calls):
    """OptuNet (grouped convolution: blocks) and a generic spec with 4-D kernels."""
    spec = optunet_permutation_spec()
    a, b = (jax.tree_util.tree_map(lambda w: np.asarray(w, np.float64), optunet_init(jax.random.PRNGKey(s)))
            for s in (0, 1))
    _assert_same(weight_matching(3, spec, a, b), weight_matching(3, spec, a, b, lap_solver="scipy"))
    spec, a, b = conv_spec_pair(np.random.default_rng(5))
    res = weight_matching(4, spec, a, b)
    _assert_same(res, weight_matching(4, spec, a, b, lap_solver="scipy"))
    assert lapjv_calls
    perms_ref, _, _, _ = reference_weight_matching(4, spec, a, b)
    for k in perms_ref:
        np.testing.assert_array_equal(res.perms[k], perms_ref[k], err_msg=k)


def test_many_and_activation_matching_lapjv_equal_scipy():
    rng = np.random.default_rng(6)
    sizes = [12, 32, 32, 4]
    spec = mlp_permutation_spec(2)
    ref = random_mlp(rng, sizes)
    stack = stack_trees([random_mlp(rng, sizes) for _ in range(4)])
    many, many_s = (weight_matching_many(1, spec, ref, stack, lap_solver=s, num_threads=1) for s in ("auto", "scipy"))
    assert many.info["lap_solver"] == "lapjv" and many_s.info["lap_solver"] == "scipy"
    assert lapjv_calls
    np.testing.assert_array_equal(many.objective, many_s.objective)
    for k in many.perms:
        np.testing.assert_array_equal(many.perms[k], many_s.perms[k])
    x = rng.normal(size=(64, 12))
    act, act_s = (activation_matching(spec, ref, random_mlp(np.random.default_rng(9), sizes), x, lap_solver=s)
                  for s in ("auto", "scipy"))
    _assert_same(act, act_s)


def test_without_the_lap_package_everything_goes_to_scipy(monkeypatch):
    monkeypatch.setattr(matching_lap, "lapjvh", None)
    rng = np.random.default_rng(8)
    C = 5 * np.eye(50) + rng.standard_normal((50, 50))
    np.testing.assert_array_equal(solve_lap(C), _scipy(C))
    sizes = [10, 24, 24, 3]
    a, b = random_mlp(rng, sizes), random_mlp(rng, sizes)
    res = weight_matching(2, mlp_permutation_spec(2), a, b)
    assert res.info["lap_solver"] == "scipy"
    _assert_same(res, weight_matching(2, mlp_permutation_spec(2), a, b, lap_solver="scipy"))
