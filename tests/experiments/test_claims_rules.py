"""claims.mean_of_units after the coverage audit (2026-12-01): tied units give no interval and
say so in the detail, and values that are not one per unit are refused, not flattened."""
import numpy as np
import pytest

from symlib.experiments.judging import claims
from symlib.experiments.judging.thresholds import threshold

T = threshold("exact_zero")  # "below 1e-9"


def test_tied_units_give_no_interval_and_say_so():
    """Two pairs both at 0: before, a zero-width interval and "holds" with certainty."""
    ev = claims.mean_of_units([0.0, 0.0], T, "network pairs", "barriers 0, 0")
    assert (ev.effect, ev.low, ev.high) == (0.0, -np.inf, np.inf)
    assert ev.verdict is claims.Verdict.SAME_DIRECTION
    assert ev.detail == "barriers 0, 0; no spread among the 2 network pairs (all 0): no interval"
    assert claims.mean_of_units([0.0], T, "network pairs", "").detail == ""  # one unit: no interval, as ever
    # the interval text says "no interval" instead of printing [-inf, inf] (since 2026-12-02)
    assert ev.interval_text() == "0 (no interval) over 2 network pairs"


def test_units_with_spread_keep_their_interval():
    ev = claims.mean_of_units([0.0, 1e-12, 2e-12], T, "network pairs", "")
    assert np.isfinite(ev.low) and ev.verdict is claims.Verdict.HOLDS and "spread" not in ev.detail


def test_values_that_are_not_one_per_unit_are_refused():
    with pytest.raises(ValueError, match=r"1-D.*\(2, 3\)"):
        claims.mean_of_units(np.zeros((2, 3)), T, "seeds", "")


def test_a_gated_claim_is_not_tested_and_still_shows_the_effect_it_measured():
    """gated (since 2026-12-03): the glued interval text of a claim withheld by a validity gate
    gives the measured effect before the reason, so prose built around it keeps its number."""
    for values in ([0.0, 1e-12, 2e-12], [5.0, 6.0, 7.0]):  # on the paper's side, and against it
        ev = claims.mean_of_units(values, T, "runs", "per run: ...")
        out = claims.gated(ev, ["the chains have not converged", "too few samples"])
        assert out.verdict is claims.Verdict.NOT_TESTED
        assert out.untested == "the chains have not converged; too few samples"
        assert out.interval_text() == f"{ev.interval_text()}, not judged: {out.untested}"
        assert out.detail == f"not judged: {ev.interval_text()}; per run: ..."
        assert claims.gated(ev, []) is ev
    # a claim that could not be measured at all says only why
    assert claims.not_tested(T, "no per-run values").interval_text() == "not judged: no per-run values"
