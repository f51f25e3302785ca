"""Laurent et al.'s single_mode_better_ece ("often": some (X, multi-X) pair better calibrated
alone), read with claims.best over k pairs: since 2026-12-01 each pair's interval is at the
Bonferroni level 1 - (1 - level) / k, so that picking the most favourable pair does not make a
false "holds" likelier than one comparison does."""
import numpy as np
import pytest
from scipy import stats as sps

from symlib.experiments.judging import claims
from symlib.experiments.judging.thresholds import threshold
from symlib.experiments.laurent.posterior_claims import single_mode_better_ece

PAIRS = ("Dropout", "BNN", "SWAG", "Laplace")


def _summary(ece_units, pairs=PAIRS):
    """Each method's ECE as the mean of its units, with its leave-one-out replicates (the
    delete-a-group jackknife of a mean, whose variance is var(units) / n)."""
    methods = [m for x in pairs for m in (x, f"multi-{x}")]
    met, jk = {}, {}
    for m in methods:
        u = np.asarray(ece_units[m], float)
        met[m] = {"ece": float(u.mean())}
        jk[m] = {"ece": [float(np.delete(u, i).mean()) for i in range(u.size)]}
    return {"methods": methods, "metrics": met, "metrics_jackknife": jk,
            "sample_groups": {m: len(ece_units[m]) for m in methods}}


def test_bonferroni_level():
    assert claims.bonferroni_level(0.95, 1) == pytest.approx(0.95)
    assert claims.bonferroni_level(0.95, 4) == pytest.approx(0.9875)
    for level, parts in ((1.0, 2), (0.95, 0), (0.95, 1.5), (0.95, True)):
        with pytest.raises(ValueError, match="bonferroni_level"):
            claims.bonferroni_level(level, parts)


@pytest.mark.parametrize("pairs", [PAIRS, PAIRS[:3], PAIRS[:1]])
def test_each_pair_is_judged_at_the_bonferroni_level(pairs):
    """By hand: the clearest pair (Laplace, or the only one) has effect
    ECE(multi-X) - ECE(X), variance var(x) / n + var(multi-x) / n, and its interval the
    Student-t quantile of 1 - 0.025 / k with n - 1 degrees of freedom."""
    rng = np.random.default_rng(0)
    units = {m: rng.normal(0.3, 0.02, 10) for x in pairs for m in (x, f"multi-{x}")}
    clearest = pairs[-1]
    units[clearest] = rng.normal(0.1, 0.02, 10)
    ev = single_mode_better_ece(_summary(units, pairs))
    a, b = units[f"multi-{clearest}"], units[clearest]
    effect = a.mean() - b.mean()
    half = sps.t.ppf(1 - 0.025 / len(pairs), 9) * np.sqrt(a.var(ddof=1) / 10 + b.var(ddof=1) / 10)
    assert (ev.effect, ev.low, ev.high) == pytest.approx((effect, effect - half, effect + half))
    assert f"each at the {100 * (1 - 0.05 / len(pairs)):.2f}% level (Bonferroni)" in ev.units


def test_the_most_favourable_of_four_null_pairs_is_significant_at_most_as_often_as_one_comparison():
    """Four pairs with no difference: the most favourable pair's interval lies above 0 in at
    most 2.5% of runs, plus simulation noise (each pair at 95%, it did in 6.3% of these runs)."""
    rng = np.random.default_rng(1)
    t = threshold("laurent_posteriors.single_mode_better_ece")
    above = 0
    for _ in range(1000):
        units = {m: rng.normal(0.3, 0.02, 10) for x in PAIRS for m in (x, f"multi-{x}")}
        above += single_mode_better_ece(_summary(units)).low > t.value
    assert above / 1000 <= 0.04
