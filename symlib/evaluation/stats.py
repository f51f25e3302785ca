"""Uncertainty over independent units: the intervals and tests that the claims use.

Every function here takes the values of *independent units* (seeds, network pairs,
networks, repeated timings), one value per unit in a 1-D sequence, and returns an interval
or a p-value over them. Test points of one network pair are not independent units for a
claim about networks; pass one value per pair instead (a 2-D array is refused, not
flattened).

Thin wrappers over :mod:`scipy.stats` (Student-t intervals, Clopper-Pearson intervals),
a delta-method interval for a ratio of means, and a Mantel permutation test for
correlations between values on pairs of networks, where pairs sharing a network are not
independent.
"""
from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import numpy as np

__all__ = ["mean_interval", "ratio_interval", "proportion_interval", "mantel_test", "mantel_null", "repeat_spread",
           "difference_interval"]


def _finite_1d(values: Sequence[float] | np.ndarray, what: str, min_n: int = 1) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{what} needs one value per independent unit (a 1-D sequence), got shape {v.shape}; "
                         "reduce each unit to one value first (e.g. its mean over test points)")
    if v.size < min_n:
        raise ValueError(f"{what} needs at least {min_n} value(s), got {v.size}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: {int(np.sum(~np.isfinite(v)))} of {v.size} values are not finite "
                         "(nothing is dropped silently: remove or explain them first)")
    return v


def _tied(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether ``x`` equals ``y`` everywhere up to rounding (relative 1e-12): units with no spread."""
    return bool(np.allclose(x, y, rtol=1e-12, atol=0.0))


def _check_level(level: float, name: str) -> None:
    """Raise unless ``level`` is a confidence level strictly between 0 and 1 (at 1 scipy's
    intervals are ``(inf, inf)``, an interval that holds nothing, not the whole line)."""
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"{name}: level must be in (0, 1), got {level}")


def mean_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its Student-t confidence interval over independent units.

    One unit gives an infinite interval (no evidence of a direction), so a claim judged on a
    single network pair can never be called significant. Units that all have the same value
    (up to rounding) give an infinite interval too: their spread estimates the noise as zero,
    which is no evidence that it is.

    Args:
        values: one value per independent unit (1-D).
        level: confidence level.

    Returns:
        ``(mean, low, high)``.

    Raises:
        ValueError: for no value, a non-finite one, values that are not 1-D, or a level
            outside (0, 1).
    """
    from scipy import stats

    _check_level(level, "mean_interval")
    v = _finite_1d(values, "mean_interval")
    m = float(v.mean())
    if _tied(v, np.full_like(v, v[0])):
        return m, -np.inf, np.inf
    lo, hi = stats.t.interval(level, df=v.size - 1, loc=m, scale=float(v.std(ddof=1) / np.sqrt(v.size)))
    return m, float(lo), float(hi)


def ratio_interval(num: Sequence[float] | np.ndarray, den: Sequence[float] | np.ndarray, level: float = 0.95
                   ) -> tuple[float, float, float]:
    """A ratio of means over independent units, ``R = mean(num) / mean(den)``, and its
    delta-method (linearisation) Student-t interval.

    Unit ``i`` contributes ``d_i = num_i - R den_i``; the standard error of ``R`` is
    ``sd(d) / (sqrt(n) mean(den))`` (``sd`` with ``n - 1`` degrees of freedom) and the interval
    ``R +- t_{n-1} se``, with ``t_{n-1}`` the two-sided ``level`` quantile of Student's t. Unlike
    a percentile bootstrap it stays near its coverage with few units (5 runs of swap counts:
    about ``level``; heavily skewed units cover somewhat less).
    When every ``d_i`` is 0 up to rounding (every unit's ``num`` is ``R`` times its ``den``,
    e.g. all ``num`` zero) the interval is infinite, as for :func:`mean_interval` with no spread.

    Args:
        num: the numerator's value per unit (1-D).
        den: the denominator's value per unit (1-D, the same units).
        level: confidence level, in (0, 1).

    Returns:
        ``(ratio, low, high)``.

    Raises:
        ValueError: for fewer than 2 units, units that differ in number, a non-finite value,
            values that are not 1-D, a mean of ``den`` that is not positive, or a level outside
            (0, 1).
    """
    from scipy import stats

    _check_level(level, "ratio_interval")
    a, b = _finite_1d(num, "ratio_interval (num)", 2), _finite_1d(den, "ratio_interval (den)", 2)
    if a.size != b.size:
        raise ValueError(f"ratio_interval: num has {a.size} units, den {b.size}; they must be the same units")
    if not b.mean() > 0:
        raise ValueError(f"ratio_interval: the mean of den must be positive, got {b.mean():g}")
    r = float(a.mean() / b.mean())
    if _tied(a * b.mean(), b * a.mean()):
        return r, -np.inf, np.inf
    se = float(np.std(a - r * b, ddof=1) / (np.sqrt(a.size) * b.mean()))
    half = float(stats.t.ppf((1 + level) / 2, a.size - 1)) * se
    return r, r - half, r + half


def _count(x, what: str) -> int:
    """``x`` as an int when it is an integer (not a bool), else a TypeError naming ``what``."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, Integral):
        raise TypeError(f"proportion_interval: {what} must be an integer count, got {x!r} ({type(x).__name__})")
    return int(x)


def proportion_interval(successes: int, trials: int, level: float = 0.95) -> tuple[float, float, float]:
    """A share and its exact (Clopper-Pearson) interval.

    Args:
        successes: units with the property (an integer).
        trials: units (an integer).
        level: confidence level.

    Returns:
        ``(share, low, high)``.

    Raises:
        TypeError: for a count that is not an integer (a float such as 2.7, or a bool).
        ValueError: unless ``0 <= successes <= trials`` and ``trials >= 1``, or for a level
            outside (0, 1).
    """
    from scipy import stats

    _check_level(level, "proportion_interval")
    k, n = _count(successes, "successes"), _count(trials, "trials")
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"proportion_interval needs 0 <= successes <= trials, trials >= 1; got {k}/{n}")
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return k / n, float(ci.low), float(ci.high)


def difference_interval(first: Sequence[float], second: Sequence[float], level: float = 0.95
                  ) -> tuple[float, float, float]:
    """Mean difference ``mean(first) - mean(second)`` of two independent groups of units and
    its Welch interval (one value per unit in each group, 1-D).

    Returns:
        ``(difference, low, high)``; with fewer than two units in a group, or a group with no
        spread (its units tied, up to rounding), the interval is infinite: as in
        :func:`mean_interval`, a spread of zero is no evidence that a group's noise is zero.

    Raises:
        ValueError: for an empty group, a non-finite value, values that are not 1-D, or a level
            outside (0, 1).
    """
    from scipy import stats

    _check_level(level, "difference_interval")
    a, b = _finite_1d(first, "difference_interval (first)"), _finite_1d(second, "difference_interval (second)")
    d = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2 or _tied(a, np.full_like(a, a[0])) or _tied(b, np.full_like(b, b[0])):
        return d, -np.inf, np.inf
    res = stats.ttest_ind(a, b, equal_var=False)
    ci = res.confidence_interval(confidence_level=level)
    return d, float(ci.low), float(ci.high)


def _pair_layout(pairs, a, b, name: str):
    """Checked ``(inverse indices (n_pairs, 2), n networks, a, b)`` of every pair of some networks."""
    raw = np.asarray(pairs)
    if raw.dtype == bool or not (np.issubdtype(raw.dtype, np.integer)
                                 or (np.issubdtype(raw.dtype, np.floating) and np.all(raw == np.round(raw)))):
        raise ValueError(f"{name}: pairs must hold integer network indices, got {raw.dtype} values "
                         f"{raw.ravel()[:4].tolist()}")
    pairs = raw.astype(np.int64)
    a, b = _finite_1d(a, f"{name} (a)", 3), _finite_1d(b, f"{name} (b)", 3)
    if pairs.shape != (a.size, 2) or b.size != a.size:
        raise ValueError(f"{name}: pairs {pairs.shape}, a {a.shape}, b {b.shape} do not match")
    same = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
    if same.size:
        raise ValueError(f"{name}: pairs must join two different networks; pair {same[0]} is "
                         f"{pairs[same[0]].tolist()}")
    if np.unique(np.sort(pairs, axis=1), axis=0).shape[0] != pairs.shape[0]:
        raise ValueError(f"{name}: pairs must be distinct (unordered); some pair is listed twice")
    nets, inv = np.unique(pairs, return_inverse=True)
    inv = inv.reshape(pairs.shape)
    n = nets.size
    if a.size != n * (n - 1) // 2:
        raise ValueError(f"{name} needs every pair of its {n} networks ({n * (n - 1) // 2}), got {a.size}")
    for what, v in (("a", a), ("b", b)):
        if np.all(v == v[0]):
            raise ValueError(f"{name}: {what} is constant ({v[0]:g} on every pair), so it has no correlation")
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
    networks involved (each unordered pair ``i != j`` once).

    Args:
        pairs: ``(n_pairs, 2)`` network indices.
        a: the first quantity per pair.
        b: the second quantity per pair.
        permutations: random relabellings.
        seed: seed of the relabellings.

    Returns:
        ``(r, p)``: the correlation and the one-sided p-value for ``r > 0``.

    Raises:
        ValueError: if the pairs are not each pair of their networks once (a pair of a network
            with itself, a pair listed twice, a pair missing), or ``a`` or ``b`` is constant
            (no correlation to test).
    """
    _, _, a, b = _pair_layout(pairs, a, b, "mantel_test")
    r = float(np.corrcoef(a, b)[0, 1])
    null = mantel_null(pairs, a, b, permutations, seed)
    return r, (int(np.sum(null >= r)) + 1) / (permutations + 1)


def repeat_spread(repeats: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    """Median of repeated measurements (timings) and their range.

    Args:
        repeats: the repeats of one measurement (1-D).

    Returns:
        ``(median, min, max)``.
    """
    v = _finite_1d(repeats, "repeat_spread")
    return float(np.median(v)), float(v.min()), float(v.max())
