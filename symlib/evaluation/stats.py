"""Uncertainty over independent units: the intervals and tests that the claims use.

Every function here takes the values of *independent units* (seeds, network pairs,
networks, repeated timings) and returns an interval or a p-value over them. Test points of
one network pair are not independent units for a claim about networks; pass one value per
pair instead.

Thin wrappers over :mod:`scipy.stats` (Student-t intervals, the percentile bootstrap,
Clopper-Pearson intervals), plus a Mantel permutation test for correlations between values
on pairs of networks, where pairs sharing a network are not independent.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["mean_interval", "bootstrap_interval", "min_bootstrap_units", "proportion_interval", "mantel_test",
           "mantel_null", "repeat_spread", "difference_interval"]


def _finite_1d(values: Sequence[float] | np.ndarray, what: str, min_n: int = 1) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size < min_n:
        raise ValueError(f"{what} needs at least {min_n} value(s), got {v.size}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: {int(np.sum(~np.isfinite(v)))} of {v.size} values are not finite "
                         "(nothing is dropped silently: remove or explain them first)")
    return v


def mean_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its Student-t confidence interval over independent units.

    One unit gives an infinite interval (no evidence of a direction), so a claim judged on a
    single network pair can never be called significant.

    Args:
        values: one value per independent unit.
        level: confidence level.

    Returns:
        ``(mean, low, high)``.

    Raises:
        ValueError: for no value or a non-finite one.
    """
    from scipy import stats

    v = _finite_1d(values, "mean_interval")
    m = float(v.mean())
    if v.size == 1:
        return m, -np.inf, np.inf
    se = float(v.std(ddof=1) / np.sqrt(v.size))
    if se == 0.0:
        return m, m, m
    lo, hi = stats.t.interval(level, df=v.size - 1, loc=m, scale=se)
    return m, float(lo), float(hi)


def min_bootstrap_units(level: float = 0.95) -> int:
    """The fewest units whose percentile bootstrap can place a ``level`` interval.

    ``n`` units have ``C(2n - 1, n)`` distinct resamples (multisets); each tail of the
    interval holds a share ``(1 - level) / 2`` of them, which must be at least one distinct
    resample, or the bound is just the most extreme resample (for 3 units, 10 resamples,
    whichever single unit is most extreme). At ``level = 0.95`` this is 5 units (126
    resamples; 4 units have 35, fewer than 40).

    Args:
        level: confidence level, in (0, 1).
    """
    from math import comb

    if not 0.0 < level < 1.0:
        raise ValueError(f"min_bootstrap_units: level must be in (0, 1), got {level}")
    n = 2
    while comb(2 * n - 1, n) * (1 - level) / 2 < 1:
        n += 1
    return n


def bootstrap_interval(values: Sequence[float] | np.ndarray, statistic: Callable[[np.ndarray], float] = np.mean,
                       level: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """A statistic of independent units and its percentile-bootstrap interval.

    Args:
        values: one value per unit (1-D), or one row per unit (2-D; the statistic then
            takes the resampled rows).
        statistic: maps the (resampled) units to a number.
        level: confidence level.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling.

    Returns:
        ``(statistic, low, high)``; with fewer units than :func:`min_bootstrap_units` the
        interval is infinite (no evidence of a direction).
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = _finite_1d(v, "bootstrap_interval")
    elif not np.all(np.isfinite(v)):
        raise ValueError("bootstrap_interval: values are not all finite")
    est = float(statistic(v))
    n = v.shape[0]
    if n < min_bootstrap_units(level):
        return est, -np.inf, np.inf
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    boots = np.asarray([statistic(v[i]) for i in idx], dtype=np.float64)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return est, float(lo), float(hi)


def proportion_interval(successes: int, trials: int, level: float = 0.95) -> tuple[float, float, float]:
    """A share and its exact (Clopper-Pearson) interval.

    Args:
        successes: units with the property.
        trials: units.
        level: confidence level.

    Returns:
        ``(share, low, high)``.
    """
    from scipy import stats

    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"proportion_interval needs 0 <= successes <= trials, trials >= 1; got {successes}/{trials}")
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=level, method="exact")
    return successes / trials, float(ci.low), float(ci.high)


def difference_interval(first: Sequence[float], second: Sequence[float], level: float = 0.95
                  ) -> tuple[float, float, float]:
    """Mean difference ``mean(first) - mean(second)`` of two independent groups of units and
    its Welch interval (one value per unit in each group).

    Returns:
        ``(difference, low, high)``; with fewer than two units in a group the interval is
        infinite.
    """
    from scipy import stats

    a, b = _finite_1d(first, "difference_interval (first)"), _finite_1d(second, "difference_interval (second)")
    d = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return d, -np.inf, np.inf
    res = stats.ttest_ind(a, b, equal_var=False)
    ci = res.confidence_interval(confidence_level=level)
    return d, float(ci.low), float(ci.high)


def _pair_layout(pairs, a, b, name: str):
    """Checked ``(inverse indices (n_pairs, 2), n networks, a, b)`` of every pair of some networks."""
    pairs = np.asarray(pairs, dtype=np.int64)
    a, b = _finite_1d(a, f"{name} (a)", 3), _finite_1d(b, f"{name} (b)", 3)
    if pairs.shape != (a.size, 2) or b.size != a.size:
        raise ValueError(f"{name}: pairs {pairs.shape}, a {a.shape}, b {b.shape} do not match")
    nets, inv = np.unique(pairs, return_inverse=True)
    inv = inv.reshape(pairs.shape)
    n = nets.size
    if a.size != n * (n - 1) // 2:
        raise ValueError(f"{name} needs every pair of its {n} networks ({n * (n - 1) // 2}), got {a.size}")
    return inv, n, a, b


def mantel_null(pairs: np.ndarray, a: Sequence[float], b: Sequence[float], permutations: int = 4999,
                seed: int = 0) -> np.ndarray:
    """Pearson correlations of ``a`` and ``b`` under random relabellings of the networks: the null
    distribution of :func:`mantel_test` (same arguments and errors), e.g. for an interval on ``r``."""
    inv, n, a, b = _pair_layout(pairs, a, b, "mantel_test")
    B = np.full((n, n), np.nan)
    B[inv[:, 0], inv[:, 1]] = b
    B[inv[:, 1], inv[:, 0]] = b
    rng = np.random.default_rng(seed)
    out = np.empty(permutations)
    for k in range(permutations):
        p = rng.permutation(n)
        out[k] = np.corrcoef(a, B[p[inv[:, 0]], p[inv[:, 1]]])[0, 1]
    return out


def mantel_test(pairs: np.ndarray, a: Sequence[float], b: Sequence[float], permutations: int = 4999,
                seed: int = 0) -> tuple[float, float]:
    """Pearson correlation of two quantities measured on pairs of networks, with a
    network-level permutation p-value (a Mantel test).

    Pairs that share a network are not independent, so permuting the pair values would
    overstate the evidence. Here the networks' labels are permuted instead: ``b`` of pair
    ``(i, j)`` is replaced by ``b`` of pair ``(pi(i), pi(j))``, which keeps every dependence
    between pairs and breaks only the link between ``a`` and ``b``. Needs every pair of the
    networks involved (all ``i < j``).

    Args:
        pairs: ``(n_pairs, 2)`` network indices.
        a: the first quantity per pair.
        b: the second quantity per pair.
        permutations: random relabellings.
        seed: seed of the relabellings.

    Returns:
        ``(r, p)``: the correlation and the one-sided p-value for ``r > 0``.

    Raises:
        ValueError: if the pairs are not all pairs of their networks.
    """
    _, _, a, b = _pair_layout(pairs, a, b, "mantel_test")
    r = float(np.corrcoef(a, b)[0, 1])
    null = mantel_null(pairs, a, b, permutations, seed)
    return r, (int(np.sum(null >= r)) + 1) / (permutations + 1)


def repeat_spread(repeats: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    """Median of repeated measurements (timings) and their range.

    Args:
        repeats: the repeats of one measurement.

    Returns:
        ``(median, min, max)``.
    """
    v = _finite_1d(repeats, "repeat_spread")
    return float(np.median(v)), float(v.min()), float(v.max())
