"""symlib.evaluation.stats: intervals and tests over independent units, cross-checked against
scipy and against simulated data (coverage, null distributions)."""
import numpy as np
import pytest
from scipy import stats as sps

from symlib.evaluation import stats


def test_mean_interval_matches_the_t_interval_and_covers():
    rng = np.random.default_rng(0)
    v = rng.normal(2.0, 1.0, size=7)
    m, lo, hi = stats.mean_interval(v, 0.95)
    ref = sps.t.interval(0.95, 6, loc=v.mean(), scale=sps.sem(v))
    assert m == pytest.approx(v.mean()) and (lo, hi) == pytest.approx(ref)
    covered = sum(lo <= 0.0 <= hi for _, lo, hi in (stats.mean_interval(rng.normal(0, 1, 5)) for _ in range(400)))
    assert 0.90 <= covered / 400 <= 0.99  # nominal 95%


def test_one_unit_gives_no_interval_and_non_finite_values_are_refused():
    assert stats.mean_interval([0.3]) == (0.3, -np.inf, np.inf)
    with pytest.raises(ValueError, match="1 of 3 values are not finite"):
        stats.mean_interval([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="at least 1"):
        stats.mean_interval([])


def test_proportion_interval_is_clopper_pearson():
    share, lo, hi = stats.proportion_interval(3, 10)
    ci = sps.binomtest(3, 10).proportion_ci(method="exact")
    assert share == 0.3 and (lo, hi) == pytest.approx((ci.low, ci.high))
    with pytest.raises(ValueError, match="successes <= trials"):
        stats.proportion_interval(11, 10)


def test_difference_interval_is_welch():
    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 0.5, 1.0]
    d, lo, hi = stats.difference_interval(a, b)
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval()
    assert d == pytest.approx(2.0) and (lo, hi) == pytest.approx((ci.low, ci.high))


def _all_pairs(n):
    i, j = np.triu_indices(n, 1)
    return np.stack([i, j], 1)


def test_mantel_test_finds_a_network_level_link_and_not_noise():
    rng = np.random.default_rng(2)
    n = 12
    pairs = _all_pairs(n)
    quality = rng.normal(size=n)
    # both quantities driven by the same per-network property: a real link
    a = quality[pairs].sum(1) + 0.3 * rng.normal(size=len(pairs))
    b = quality[pairs].sum(1) + 0.3 * rng.normal(size=len(pairs))
    r, p = stats.mantel_test(pairs, a, b, permutations=499)
    assert r > 0.5 and p < 0.01
    # independent per-network properties: shared networks make pair-level p-values anti-conservative
    false_pos = 0
    for seed in range(40):
        g = np.random.default_rng(100 + seed)
        qa, qb = g.normal(size=n), g.normal(size=n)
        _, p = stats.mantel_test(pairs, qa[pairs].sum(1), qb[pairs].sum(1), permutations=199, seed=seed)
        false_pos += p < 0.05
    assert false_pos <= 6  # about 2 expected at the 5% level


def test_mantel_test_needs_all_pairs():
    with pytest.raises(ValueError, match="every pair of its 4 networks"):
        stats.mantel_test(_all_pairs(4)[:5], np.arange(5.0), np.arange(5.0))


def test_repeat_spread():
    assert stats.repeat_spread([3.0, 1.0, 2.0, 10.0, 2.5]) == (2.5, 1.0, 10.0)
