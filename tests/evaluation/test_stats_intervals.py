"""symlib.evaluation.stats after the coverage audit (2026-12-01): inputs that are not one value
per unit are refused, a constant quantity or malformed pairs stop the Mantel test, tied units
give no interval, and a ratio of means over few runs has a delta-method interval that keeps
its coverage."""
import itertools

import numpy as np
import pytest

from symlib.evaluation import stats


def _all_pairs(n):
    return np.asarray(list(itertools.combinations(range(n), 2)))


@pytest.mark.parametrize("which", ["a", "b"])
def test_mantel_refuses_a_constant_quantity(which):
    """A constant quantity has no correlation (r is NaN): before, p came out as the strongest
    possible, 1 / (permutations + 1)."""
    pairs = _all_pairs(5)
    varying = np.random.default_rng(0).normal(size=len(pairs))
    a, b = (np.ones(len(pairs)), varying) if which == "a" else (varying, np.ones(len(pairs)))
    for test in (stats.mantel_test, stats.mantel_null):
        with pytest.raises(ValueError, match=rf"\({which}\)|: {which} is constant"):
            test(pairs, a, b, permutations=99)


@pytest.mark.parametrize("bad", ["duplicate", "self", "reversed duplicate"])
def test_mantel_refuses_pairs_that_are_not_each_pair_once(bad):
    """Ten rows over five networks, as many as every pair, but one pair missing."""
    pairs = _all_pairs(5)
    pairs[-1] = {"duplicate": pairs[0], "self": [4, 4], "reversed duplicate": pairs[0][::-1]}[bad]
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="mantel_test: pairs"):
        stats.mantel_test(pairs, rng.normal(size=10), rng.normal(size=10), permutations=99)


def test_mantel_accepts_every_pair_in_any_order_and_orientation():
    pairs = _all_pairs(5)[::-1, ::-1]
    rng = np.random.default_rng(2)
    r, p = stats.mantel_test(pairs, rng.normal(size=10), rng.normal(size=10), permutations=99)
    assert -1 <= r <= 1 and 0 < p <= 1


@pytest.mark.parametrize("call", [
    lambda v: stats.mean_interval(v),
    lambda v: stats.difference_interval(v, [1.0, 2.0, 3.0]),
    lambda v: stats.difference_interval([1.0, 2.0, 3.0], v),
    lambda v: stats.repeat_spread(v),
    lambda v: stats.ratio_interval(v, v + 1),
])
def test_two_dimensional_values_are_refused_not_flattened(call):
    """A (units, test points) array is not units x points independent units."""
    v = np.random.default_rng(3).normal(size=(3, 50)) + 2.0
    with pytest.raises(ValueError, match=r"1-D.*\(3, 50\)"):
        call(v)


def test_tied_units_give_no_interval():
    """Two pairs both at 0 estimate no noise; that is no evidence of no noise."""
    assert stats.mean_interval([0.0, 0.0]) == (0.0, -np.inf, np.inf)
    assert stats.mean_interval([0.4, 0.4, 0.4], 0.9) == (pytest.approx(0.4), -np.inf, np.inf)


@pytest.mark.parametrize("successes, trials", [(2.7, 5), (2, 5.0), (True, 5), (1, True), (np.float64(2.0), 5)])
def test_proportion_interval_refuses_counts_that_are_not_integers(successes, trials):
    with pytest.raises(TypeError, match="successes|trials"):
        stats.proportion_interval(successes, trials)


def test_proportion_interval_takes_numpy_integers():
    assert stats.proportion_interval(np.int64(2), np.int32(5))[0] == 0.4


def test_ratio_interval_by_hand():
    """num = (1, 2, 3), den = (2, 2, 4): R = 2 / (8/3) = 0.75, d = (-0.5, 0.5, 0), sd(d) = 0.5,
    se = 0.5 / (sqrt(3) 8/3); t with 2 degrees of freedom at 97.5% is 4.302653 (tables)."""
    r, lo, hi = stats.ratio_interval([1.0, 2.0, 3.0], [2.0, 2.0, 4.0], 0.95)
    half = 4.302652729911275 * 0.5 / (np.sqrt(3) * 8 / 3)
    assert r == pytest.approx(0.75) and (lo, hi) == pytest.approx((0.75 - half, 0.75 + half))


def test_ratio_interval_covers_with_five_runs():
    """2000 simulated sets of 5 runs (swap counts: Poisson, 6 late and 40 early per run on
    average, ratio of means 0.15): the 95% interval covers the true ratio 92-98% of the time
    (the percentile bootstrap it replaces: about 85%)."""
    rng = np.random.default_rng(4)
    covered = 0
    for _ in range(2000):
        _, lo, hi = stats.ratio_interval(rng.poisson(6, 5).astype(float), rng.poisson(40, 5).astype(float))
        covered += lo <= 0.15 <= hi
    assert 0.92 <= covered / 2000 <= 0.98


def test_ratio_interval_without_spread_gives_no_interval():
    """No late swap in any run: every d_i is 0, which estimates no noise, not a certain 0."""
    assert stats.ratio_interval([0.0, 0.0, 0.0], [3.0, 1.0, 2.0]) == (0.0, -np.inf, np.inf)


@pytest.mark.parametrize("num, den, level, match", [
    ([1.0], [2.0], 0.95, "at least 2"),
    ([1.0, 2.0], [2.0, 3.0, 4.0], 0.95, "2 units, den 3"),
    ([1.0, 2.0], [1.0, -1.0], 0.95, "mean of den must be positive"),
    ([1.0, 2.0], [1.0, np.nan], 0.95, "not finite"),
    ([1.0, 2.0], [1.0, 2.0], 1.0, "level must be in"),
])
def test_ratio_interval_errors(num, den, level, match):
    with pytest.raises(ValueError, match=match):
        stats.ratio_interval(num, den, level)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.1])
@pytest.mark.parametrize("call", [
    lambda level: stats.mean_interval([1.0, 2.0, 4.0], level),
    lambda level: stats.difference_interval([1.0, 2.0, 4.0], [0.0, 0.5, 3.0], level),
    lambda level: stats.proportion_interval(2, 5, level),
], ids=["mean", "difference", "proportion"])
def test_every_interval_refuses_a_level_outside_0_1(call, level):
    """At level 1 scipy's Welch interval came back as (inf, inf): an interval that holds
    nothing, wholly above any threshold, where the whole line was meant."""
    with pytest.raises(ValueError, match="level must be in"):
        call(level)


def test_a_ratio_proportional_in_every_run_gives_no_interval():
    """num = 0.3 den in every run: d_i is 0 up to rounding, not evidence of a certain 0.3."""
    den = np.asarray([3.7, 1.1, 2.9, 5.3])
    r, lo, hi = stats.ratio_interval(0.3 * den, den)
    assert r == pytest.approx(0.3) and (lo, hi) == (-np.inf, np.inf)


def test_difference_of_two_tied_groups_has_no_interval():
    """Three runs at 1 against three at 0: Welch's interval was [1, 1], a certain difference
    from six numbers with no spread. One tied group alone would leave Welch only the other
    group's noise, so it gives no interval either; two groups with spread give one."""
    assert stats.difference_interval([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]) == (1.0, -np.inf, np.inf)
    assert stats.difference_interval([0.1 + 0.2, 0.3, 0.3], [0.0] * 3)[1:] == (-np.inf, np.inf)
    assert stats.difference_interval([1.0, 1.0, 1.0], [0.0, 0.1, 0.2])[1:] == (-np.inf, np.inf)
    d, lo, hi = stats.difference_interval([1.0, 1.1, 0.9], [0.0, 0.1, 0.2])
    assert np.isfinite(lo) and np.isfinite(hi) and lo < d < hi


@pytest.mark.parametrize("shift", [0.7, True])
def test_mantel_refuses_pairs_that_are_not_integers(shift):
    """0.7 was truncated to network 0 without a word; whole floats (as json gives) are taken."""
    pairs = _all_pairs(5)
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=10), rng.normal(size=10)
    bad = pairs + 0.7 if shift is not True else pairs.astype(bool)
    with pytest.raises(ValueError, match="pairs must hold integer network indices"):
        stats.mantel_test(bad, a, b, permutations=99)
    assert stats.mantel_test(pairs.astype(float), a, b, permutations=99) == stats.mantel_test(
        pairs, a, b, permutations=99)
