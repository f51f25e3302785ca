"""Tests for symlib.symmetry.permutations."""
from __future__ import annotations

import itertools
import math
from collections import Counter

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from symlib.symmetry import permutations as P


@st.composite
def perms(draw, min_n=0, max_n=30):
    n = draw(st.integers(min_n, max_n))
    return np.array(draw(st.permutations(list(range(n)))), dtype=np.int64)


@st.composite
def perm_pairs(draw, max_n=30):
    n = draw(st.integers(0, max_n))
    p = draw(st.permutations(list(range(n))))
    q = draw(st.permutations(list(range(n))))
    return np.array(p, dtype=np.int64), np.array(q, dtype=np.int64)


def _stirling1(n: int, m: int) -> int:
    c = [[0] * (n + 1) for _ in range(n + 1)]
    c[0][0] = 1
    for j in range(1, n + 1):
        for k in range(1, j + 1):
            c[j][k] = c[j - 1][k - 1] + (j - 1) * c[j - 1][k]
    return c[n][m]


# ------------------------------------------------------------------ worked example


def test_paper_worked_example():
    # 1-indexed: 1->4, 2->1, 3->5, 4->2, 5->3  ==  cycles (1 4 2)(3 5), NoT = 3.
    one_indexed = {1: 4, 2: 1, 3: 5, 4: 2, 5: 3}
    p = np.array([one_indexed[i + 1] - 1 for i in range(5)])
    np.testing.assert_array_equal(p, [3, 0, 4, 1, 2])
    assert P.cycles(p) == [(0, 3, 1), (2, 4)]
    assert [tuple(i + 1 for i in c) for c in P.cycles(p)] == [(1, 4, 2), (3, 5)]
    assert P.num_transpositions(p) == 3
    assert P.num_cycles(p) == 2


def test_cycles_fixed_points_and_order():
    p = [0, 2, 1, 3, 5, 6, 4]
    assert P.cycles(p) == [(0,), (1, 2), (3,), (4, 5, 6)]
    assert P.cycles([]) == []
    assert P.num_transpositions(P.identity(7)) == 0
    assert P.num_transpositions(np.arange(6)[::-1]) == 3


@settings(max_examples=60, deadline=None)
@given(perms())
def test_cycles_partition_and_follow_p(p):
    cs = P.cycles(p)
    assert sorted(i for c in cs for i in c) == list(range(len(p)))
    assert [c[0] for c in cs] == sorted(c[0] for c in cs)
    for c in cs:
        assert c[0] == min(c)
        for a, b in zip(c, c[1:] + c[:1]):
            assert p[a] == b
    assert P.num_transpositions(p) == len(p) - len(cs)


# ------------------------------------------------------------------ algebra


@settings(max_examples=60, deadline=None)
@given(perm_pairs())
def test_compose_inverse_identities(pq):
    p, q = pq
    n = len(p)
    e = P.identity(n)
    np.testing.assert_array_equal(P.compose(p, q), p[q])
    np.testing.assert_array_equal(P.compose(p, P.inverse(p)), e)
    np.testing.assert_array_equal(P.compose(P.inverse(p), p), e)
    np.testing.assert_array_equal(P.compose(p, e), p)
    np.testing.assert_array_equal(P.compose(e, p), p)
    np.testing.assert_array_equal(P.inverse(P.inverse(p)), p)
    np.testing.assert_array_equal(P.inverse(P.compose(p, q)), P.compose(P.inverse(q), P.inverse(p)))
    r = np.roll(p, 1) if n else p  # some third permutation
    np.testing.assert_array_equal(P.compose(P.compose(p, q), r), P.compose(p, P.compose(q, r)))


@settings(max_examples=60, deadline=None)
@given(perm_pairs())
def test_num_transpositions_inverse_parity_triangle(pq):
    p, q = pq
    a, b = P.num_transpositions(p), P.num_transpositions(q)
    pq_ = P.num_transpositions(P.compose(p, q))
    assert P.num_transpositions(P.inverse(p)) == a
    assert pq_ % 2 == (a + b) % 2
    assert pq_ <= a + b
    assert 0 <= a <= max(len(p) - 1, 0)


def test_num_transpositions_batch():
    ps = np.stack([P.identity(5), [3, 0, 4, 1, 2], [1, 0, 2, 3, 4], np.arange(5)[::-1]])
    np.testing.assert_array_equal(P.num_transpositions_batch(ps), [0, 3, 1, 2])
    with pytest.raises(ValueError, match="shape"):
        P.num_transpositions_batch(np.arange(5))


def test_accepts_jax_arrays():
    p = jax.numpy.array([3, 0, 4, 1, 2])
    assert P.num_transpositions(p) == 3
    np.testing.assert_array_equal(P.inverse(p), [1, 3, 4, 0, 2])
    assert isinstance(P.validate(p), np.ndarray)


# ------------------------------------------------------------------ matrices


@settings(max_examples=40, deadline=None)
@given(perm_pairs(max_n=12))
def test_matrix_roundtrip_and_convention(pq):
    p, q = pq
    n = len(p)
    M = P.to_matrix(p)
    assert M.shape == (n, n)
    np.testing.assert_array_equal(P.from_matrix(M), p)
    np.testing.assert_array_equal(P.from_matrix(M.astype(bool)), p)
    x = np.arange(n, dtype=float) * 10 + 1
    y = M @ x
    for i in range(n):
        assert y[p[i]] == x[i]  # documented: (P @ x)[p[i]] = x[i]
    np.testing.assert_array_equal(x[p], M.T @ x)
    np.testing.assert_array_equal(x[p], P.to_matrix(P.inverse(p)) @ x)
    np.testing.assert_array_equal(P.to_matrix(P.compose(p, q)), M @ P.to_matrix(q))


def test_from_matrix_rejects_non_permutation_matrices():
    with pytest.raises(ValueError, match="square"):
        P.from_matrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match="0/1"):
        P.from_matrix(np.array([[0.5, 0.5], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="columns"):
        P.from_matrix(np.array([[1, 1], [0, 0]]).T)
    with pytest.raises(ValueError, match="rows"):
        P.from_matrix(np.array([[1, 1], [0, 0]]))


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    "bad, n, pattern",
    [
        (np.array([0, 1, 1, 3]), None, r"repeated values \[1\] and missing values \[2\]"),
        (np.array([0, 4, 1]), None, r"outside 0\.\.2: \[4\]"),
        (np.array([0, -1, 1]), None, r"outside 0\.\.2: \[-1\]"),
        (np.array([0.0, 1.0]), None, "dtype float64"),
        (np.array([True, False]), None, "dtype bool"),
        (np.zeros((2, 2), dtype=int), None, r"shape \(2, 2\)"),
        (np.int64(0), None, r"shape \(\)"),
        (np.array([1, 0]), 3, "3 items, got length 2"),
    ],
)
def test_validate_errors(bad, n, pattern):
    with pytest.raises(ValueError, match=pattern):
        P.validate(bad, n)
    assert not P.is_permutation(bad, n)


def test_validate_ok():
    out = P.validate(np.array([2, 0, 1], dtype=np.int8), 3)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [2, 0, 1])
    np.testing.assert_array_equal(P.validate([]), np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError):
        P.compose([0, 1], [0, 1, 2])
    with pytest.raises(ValueError):
        P.inverse([0, 0])


# ------------------------------------------------------------------ kendall tau


@settings(max_examples=30, deadline=None)
@given(perms(min_n=2))
def test_kendall_tau_identical_and_reversed(p):
    assert P.kendall_tau(p, p) == pytest.approx(1.0)
    n = len(p)
    assert P.kendall_tau(p, n - 1 - p) == pytest.approx(-1.0)
    assert P.kendall_tau(P.identity(n), P.identity(n)[::-1]) == pytest.approx(-1.0)
    q = np.roll(p, 1)
    assert P.kendall_tau(p, q) == pytest.approx(P.kendall_tau(q, p))
    assert P.kendall_tau(p[::-1], q[::-1]) == pytest.approx(P.kendall_tau(p, q))
    assert -1.0 <= P.kendall_tau(p, q) <= 1.0


def test_kendall_tau_values():
    assert P.kendall_tau([0], [0]) == 1.0
    # one discordant pair out of 3: (3 - 2*1) / 3
    assert P.kendall_tau([0, 1, 2], [1, 0, 2]) == pytest.approx(1 / 3)


# ------------------------------------------------------------------ randomness


def test_random_permutation_key_types_and_determinism():
    for key in (0, np.random.default_rng(0), jax.random.key(0), jax.random.PRNGKey(0)):
        p = P.random_permutation(key, 20)
        P.validate(p, 20)
    np.testing.assert_array_equal(P.random_permutation(3, 50), P.random_permutation(3, 50))
    np.testing.assert_array_equal(
        P.random_permutation(jax.random.key(3), 50), P.random_permutation(jax.random.key(3), 50)
    )
    assert len(P.random_permutation(None, 0)) == 0
    with pytest.raises(ValueError):
        P.random_permutation(0, -1)


def test_log_stirling_table_matches_exact():
    T = P.log_stirling1_table(12)
    for n in range(13):
        for m in range(13):
            c = _stirling1(n, m) if m <= n else 0
            if c == 0:
                assert T[n, m] == -np.inf
            else:
                assert T[n, m] == pytest.approx(math.log(c), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 5, 17])
def test_random_with_transpositions_all_k(n):
    rng = np.random.default_rng(n)
    for k in range(n):
        for _ in range(3):
            p = P.random_permutation_with_transpositions(rng, n, k)
            P.validate(p, n)
            assert P.num_transpositions(p) == k


@pytest.mark.parametrize("n", [512, 2048])
def test_random_with_transpositions_large_n(n):
    for k in [0, 1, 2, n // 3, n // 2, n - 2, n - 1]:
        p = P.random_permutation_with_transpositions(jax.random.key(k), n, k)
        P.validate(p, n)
        assert P.num_transpositions(p) == k


def test_random_with_transpositions_rejects_bad_k():
    for n, k in [(5, 5), (5, -1), (1, 1), (0, 0)]:
        with pytest.raises(ValueError):
            P.random_permutation_with_transpositions(0, n, k)


def test_random_with_transpositions_deterministic():
    a = P.random_permutation_with_transpositions(jax.random.key(7), 30, 11)
    b = P.random_permutation_with_transpositions(jax.random.key(7), 30, 11)
    np.testing.assert_array_equal(a, b)


def test_random_with_transpositions_uniform_n4_k2():
    n, k, draws = 4, 2, 4400
    support = [p for p in itertools.permutations(range(n)) if P.num_transpositions(p) == k]
    assert len(support) == _stirling1(4, 2) == 11
    rng = np.random.default_rng(12345)
    counts = Counter(tuple(int(v) for v in P.random_permutation_with_transpositions(rng, n, k)) for _ in range(draws))
    assert set(counts) == set(support)
    obs = np.array([counts[p] for p in support])
    assert chisquare(obs).pvalue > 1e-3


def test_random_with_transpositions_uniform_n5_k3():
    n, k, draws = 5, 3, 5000
    support = [p for p in itertools.permutations(range(n)) if P.num_transpositions(p) == k]
    assert len(support) == _stirling1(5, 2) == 50
    rng = np.random.default_rng(2024)
    counts = Counter(tuple(int(v) for v in P.random_permutation_with_transpositions(rng, n, k)) for _ in range(draws))
    assert set(counts) == set(support)
    assert chisquare(np.array([counts[p] for p in support])).pvalue > 1e-3
