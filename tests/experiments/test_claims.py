"""The papers' claims as code (symlib.experiments.judging.claims): the framework, and every
paper-profile result saved under book/results/ checked against its experiment's claims."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

import symlib.experiments  # noqa: F401  (registers the experiments and their claims)
from symlib.experiments import laurent
from symlib.experiments.judging import claims, thresholds
from symlib.experiments.judging.thresholds import THRESHOLDS, Threshold
from symlib.experiments.laurent.posteriors import TABLE1_MNIST

RESULTS = sorted((Path(__file__).resolve().parents[2] / "book" / "results").glob("*.json"))


def test_there_are_saved_results():
    assert RESULTS, "book/results/ holds no paper-profile result"


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_saved_result_satisfies_its_papers_claims(path):
    """Every claim holds on the saved run, except the differences documented for its profile
    (claims.difference), each with exactly its registered verdict (else its text is stale),
    and every verdict is judged against a threshold of the one registry."""
    record = json.loads(path.read_text())
    experiment, profile = record["experiment"], record["profile"]
    assert claims.CLAIMS.get(experiment), f"{path.name}: experiment {experiment!r} has no registered claims"
    outcomes = claims.evaluate(experiment, record["summary"])
    unexpected = {o.claim.name: (o.verdict.value, o.detail) for o in claims.unexpected_failures(outcomes, profile)}
    assert not unexpected, f"{path.name}: verdicts other than registered (holds, or claims.difference): {unexpected}"
    for o in outcomes:
        t = o.evidence.threshold
        assert THRESHOLDS.get(t.key) is t, f"{path.name}: {o.claim.name} judges against an unregistered threshold"


def test_documented_differences_name_real_claims_and_runs():
    for (experiment, profile, name), (verdict, why) in claims.DIFFERENCES.items():
        assert any(c.name == name for c in claims.CLAIMS[experiment])
        assert verdict is not claims.Verdict.HOLDS
        if profile != "quick":
            assert any(p.name == f"{experiment}-{profile}.json" for p in RESULTS), (experiment, profile)
        assert len(why) > 40, "say what differs and why, in a sentence"


def test_every_claim_has_its_own_tests():
    """Each registered claim is exercised by name in a tests/test_claims_<area>.py file (a
    summary where it holds, one where it does not, and one of noise alone)."""
    texts = "\n".join(p.read_text() for p in Path(__file__).parent.glob("test_claims_*.py"))
    missing = [f"{e}.{c.name}" for e, cs in claims.CLAIMS.items() for c in cs if f'"{c.name}"' not in texts]
    assert not missing, f"claims without tests in tests/test_claims_*.py: {missing}"


def test_difference_registry_errors(monkeypatch):
    _toy_claims(monkeypatch)
    monkeypatch.setattr(claims, "DIFFERENCES", {})
    with pytest.raises(ValueError, match="has no claim named 'big'"):
        claims.difference("toy", "paper", "big", "because")
    with pytest.raises(ValueError, match="needs its reason"):
        claims.difference("toy", "paper", "small", "  ")
    with pytest.raises(ValueError, match="cannot have the verdict 'holds'"):
        claims.difference("toy", "paper", "small", "fine", verdict=claims.Verdict.HOLDS)
    claims.difference("toy", "paper", "small", "ours is 12 at paper scale")
    assert claims.documented_difference("toy", "paper", "small") == "ours is 12 at paper scale"
    assert claims.DIFFERENCES[("toy", "paper", "small")][0] is claims.Verdict.DIFFERS
    assert claims.documented_difference("toy", "quick", "small") is None
    with pytest.raises(ValueError, match="registered already"):
        claims.difference("toy", "paper", "small", "again")


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_saved_result_records_its_provenance(path):
    record = json.loads(path.read_text())
    for key in ("experiment", "profile", "command", "device", "date", "elapsed_s", "symlib_version", "summary"):
        assert record.get(key) not in (None, ""), f"{path.name} does not record {key!r}"
    assert path.name == f"{record['experiment']}-{record['profile']}.json"
    assert record["profile"].startswith("paper"), f"{path.name}: book/results holds paper-profile runs"


ABOVE = Threshold("toy.above", 0.0, "above", "the value is positive", "strictly above zero", "2026-11-25, a test")
BELOW = Threshold("toy.below", 10.0, "below", "the value is below 10", "strictly below ten", "2026-11-25, a test")


def _toy_claims(monkeypatch):
    monkeypatch.setattr(claims, "CLAIMS", {})

    @claims.claim("toy", "positive", "Someone (2024), Fig. 9", "the value is positive")
    def _positive(summary):
        return claims.mean_of_units(summary["values"], ABOVE, "seeds", f"values {summary['values']}")

    @claims.claim("toy", "small", "Someone (2024), Sec. 2", "the value is below 10")
    def _small(summary):
        return claims.mean_of_units(summary["values"], BELOW, "seeds", f"values {summary['values']}")


def test_verdicts_follow_the_symmetric_rule():
    """holds / differs only when the whole interval is strictly on one side; in between, the
    estimate's side names the inconclusive class; the boundaries pinned both ways."""
    ev, V, inf = claims.interval_evidence, claims.Verdict, float("inf")
    cases = [  # (effect, low, high, threshold, verdict)
        (1.0, 0.5, 1.5, ABOVE, V.HOLDS),
        (1.0, -0.5, 1.5, ABOVE, V.SAME_DIRECTION),
        (-1.0, -1.5, 0.5, ABOVE, V.OPPOSITE_DIRECTION),  # the old rule's "differs"
        (-1.0, -1.5, -0.5, ABOVE, V.DIFFERS),
        (1.0, 0.0, 1.5, ABOVE, V.SAME_DIRECTION),  # touching the threshold from the paper's side
        (-1.0, -1.5, 0.0, ABOVE, V.OPPOSITE_DIRECTION),  # touching it from the other side
        (0.0, -1.0, 1.0, ABOVE, V.OPPOSITE_DIRECTION),  # an estimate on the threshold is not beyond it
        (0.0, 0.0, 0.0, ABOVE, V.OPPOSITE_DIRECTION),  # resampled values that never vary: no interval
        (2.0, 2.0, 2.0, ABOVE, V.SAME_DIRECTION),  # (before 2026-12-03: holds, as if exact)
        (-2.0, -2.0, -2.0, ABOVE, V.OPPOSITE_DIRECTION),
        (0.2, 0.2 - 4e-16, 0.2 + 4e-16, ABOVE, V.SAME_DIRECTION),  # a jackknife of tied values
        (5.0, -inf, inf, ABOVE, V.SAME_DIRECTION),  # one unit: an unbounded interval
        (-5.0, -inf, inf, ABOVE, V.OPPOSITE_DIRECTION),
        (-5.0, -inf, -1.0, ABOVE, V.DIFFERS),  # an infinite bound on the far side still differs
        (5.0, 1.0, inf, ABOVE, V.HOLDS),
        (9.0, 8.0, 9.9, BELOW, V.HOLDS),
        (9.0, 8.0, 10.5, BELOW, V.SAME_DIRECTION),
        (11.0, 9.0, 12.0, BELOW, V.OPPOSITE_DIRECTION),
        (11.0, 10.5, 12.0, BELOW, V.DIFFERS),
        (11.0, 10.0, 12.0, BELOW, V.OPPOSITE_DIRECTION),  # touching
        (10.0, 10.0, 10.0, BELOW, V.OPPOSITE_DIRECTION),
        (12.0, 10.5, inf, BELOW, V.DIFFERS),
    ]
    for effect, low, high, t, verdict in cases:
        assert ev(effect, low, high, t, "3 pairs", "").verdict is verdict, (effect, low, high, t.direction)
    assert "do not vary" in ev(2.0, 2.0, 2.0, ABOVE, "3 pairs", "").detail
    # an exact quantity (a worst case over every network) is exact()'s, with no interval to estimate
    assert claims.exact(1e-12, BELOW, "all nets (worst case)", "").verdict is V.HOLDS
    assert claims.exact(2.0, ABOVE, "all nets", "").verdict is V.HOLDS
    assert claims.exact(-2.0, ABOVE, "all nets", "").verdict is V.DIFFERS
    assert claims.exact(0.0, ABOVE, "all nets", "").verdict is V.OPPOSITE_DIRECTION
    assert claims.not_tested(ABOVE, "too few units").verdict is V.NOT_TESTED
    with pytest.raises(ValueError, match="does not contain the effect"):
        ev(1.0, 1.2, 1.5, ABOVE, "3 pairs", "")
    with pytest.raises(ValueError, match="not finite"):
        claims.exact(float("nan"), ABOVE, "all", "")
    with pytest.raises(TypeError, match="registered Threshold"):
        claims.exact(1.0, 0.0, "all", "")


def test_the_rule_is_symmetric():
    """Mirroring an interval about the threshold swaps holds with differs and same with
    opposite direction (except an estimate on the threshold, which is never 'beyond')."""
    V = claims.Verdict
    mirror = {V.HOLDS: V.DIFFERS, V.DIFFERS: V.HOLDS, V.SAME_DIRECTION: V.OPPOSITE_DIRECTION,
              V.OPPOSITE_DIRECTION: V.SAME_DIRECTION}
    rng = np.random.default_rng(1)
    for _ in range(500):
        effect = float(rng.normal())
        if effect == 0.0:
            continue
        low, high = effect - abs(rng.normal()), effect + abs(rng.normal())
        a = claims.interval_evidence(effect, low, high, ABOVE, "pairs", "").verdict
        b = claims.interval_evidence(-effect, -high, -low, ABOVE, "pairs", "").verdict
        assert mirror[a] is b
        c = claims.interval_evidence(10.0 - effect, 10.0 - high, 10.0 - low, BELOW, "pairs", "").verdict
        assert c is a  # the same question asked with the other direction


def test_noise_alone_never_holds():
    """Zero-mean noise over a few seeds, or a single unit however large, is never "holds"."""
    rng = np.random.default_rng(0)
    for seed in range(20):
        values = np.random.default_rng(seed).normal(0.0, 1.0, size=3)
        values -= values.mean() - 0.05 * rng.normal()  # an estimate near zero, of either sign
        assert claims.mean_of_units(values, ABOVE, "seeds", "").verdict is not claims.Verdict.HOLDS
    assert claims.mean_of_units([5.0], ABOVE, "network pairs", "").verdict is claims.Verdict.SAME_DIRECTION
    assert claims.share_of_units(1, 2, Threshold("toy.share", 0.5, "above", "most", "over half", "a test"),
                                 "networks", "").verdict is not claims.Verdict.HOLDS


def test_claims_hold_and_fail_with_their_numbers(monkeypatch):
    _toy_claims(monkeypatch)
    assert [o.verdict for o in claims.evaluate("toy", {"values": [3.0, 3.2, 2.9]})] == [claims.Verdict.HOLDS] * 2
    with pytest.raises(AssertionError, match=r"1 claim\(s\) of 'toy' do not hold as registered:\n- Someone "
                                             r"\(2024\), Sec. 2: the value is below 10 -> differs; ours: values"):
        claims.check_summary("toy", {"values": [12.0, 12.5, 11.8]})
    table = claims.claims_table(claims.evaluate("toy", {"values": [-1.0, -1.2, -0.9]}), "quick", "quick miniature")
    assert table.rows[0][-1] == "differs" and table.rows[1][-1] == "holds"
    assert table.headers[2] == "ours (quick profile, quick miniature)"
    assert "needs > 0" in table.rows[0][3] and "over 3 seeds" in table.rows[0][3]
    counts = claims.verdict_counts(claims.evaluate("toy", {"values": [-1.0, -1.2, -0.9]}))
    assert counts == {"holds": 1, "same direction, not significant": 0, "opposite direction, not significant": 0,
                      "differs": 1, "not tested": 0}


def test_a_registered_difference_is_expected_and_a_stale_one_is_not(monkeypatch):
    _toy_claims(monkeypatch)
    monkeypatch.setattr(claims, "DIFFERENCES", {})
    claims.difference("toy", "quick", "small", "ours is above ten in the quick profile",
                      verdict=claims.Verdict.DIFFERS)
    claims.check_summary("toy", {"values": [12.0, 12.5, 11.8]})  # the registered difference: accepted
    with pytest.raises(AssertionError, match="-> holds"):  # it went away: the text is stale
        claims.check_summary("toy", {"values": [3.0, 3.2, 2.9]})
    with pytest.raises(AssertionError, match="same direction"):  # another verdict than registered
        claims.check_summary("toy", {"values": [1.0, 30.0, -10.0]}, "quick")


def test_a_check_must_return_evidence(monkeypatch):
    monkeypatch.setattr(claims, "CLAIMS", {})
    claims.claim("toy", "old", "x", "y")(lambda s: (True, "old style"))
    with pytest.raises(TypeError, match="returned tuple, not Evidence"):
        claims.evaluate("toy", {})


def test_claim_registry_errors(monkeypatch):
    _toy_claims(monkeypatch)
    with pytest.raises(ValueError, match="already has a claim named 'small'"):
        claims.claim("toy", "small", "x", "y")(lambda s: None)
    with pytest.raises(ValueError, match="has no registered claims"):
        claims.check_summary("nothing", {})


def test_threshold_registry():
    for key, t in THRESHOLDS.items():
        assert t.key == key and t.quote and t.reading and t.set_on and 0 < t.level < 1
    with pytest.raises(KeyError, match="no threshold 'nope'"):
        thresholds.threshold("nope")
    with pytest.raises(ValueError, match="registered already"):
        thresholds.define("exact_zero", 1, "below", "q", "r", "s")
    with pytest.raises(ValueError, match="direction must be"):
        thresholds.define("toy.sideways", 1, "sideways", "q", "r", "s")
    with pytest.raises(ValueError, match="needs the paper's words"):
        thresholds.define("toy.empty", 1, "above", " ", "r", "s")


def test_rebasin_claim_fails_when_matching_leaves_the_barrier():
    pairs = {"no matching": [0.2, 0.22, 0.19], "weight matching": [0.15, 0.16, 0.14],
             "activation matching": [0.01, 0.012, 0.009]}
    summary = {f"barrier_pairs_{s}": pairs for s in ("train", "test")}
    outcome = next(o for o in claims.evaluate("rebasin_barriers", summary) if o.claim.name == "rebasin_removes_barrier")
    assert outcome.verdict is claims.Verdict.DIFFERS and "0.15 +- 0.0058 (weight)" in outcome.detail
    assert outcome.evidence.units.startswith("3 independent network pairs")
    assert THRESHOLDS.get(outcome.evidence.threshold.key) is outcome.evidence.threshold


def test_quick_profile_differences_quote_no_numbers_of_ours():
    """A registered difference for the quick profile is printed by its chapter at every
    execution, but its text is typed in the code: a number of ours in it (a decimal or a
    percentage) would go stale as soon as training changes, so the reason says what differs
    and the claims table gives the numbers. (Saved paper-profile runs are fixed files: their
    reasons may quote them.)"""
    import re

    numeric = re.compile(r"\d+\.\d+|\d+\s*%")
    stale = {key: numeric.findall(why) for key, (_, why) in claims.DIFFERENCES.items()
             if key[1] == "quick" and numeric.search(why)}
    assert not stale, f"quick-profile differences quoting numbers: {stale}"
    assert numeric.search("train naive 1.71 nats") and numeric.search("removes 47% of it")  # the check can fail


def _quotes(token: str, values) -> bool:
    """Whether ``token`` (as printed: "0.374", "94.1%", "9e-6") is one of ``values`` rounded to
    the digits it shows (a percentage either as a share or in percent)."""
    text = token.rstrip("%")
    x = float(text)
    if "e" in text:
        half = 0.5 * 10.0 ** np.floor(np.log10(abs(x)))
    else:
        half = 0.5 * 10.0 ** -(len(text.split(".")[1]) if "." in text else 0)
    scales = (100.0, 1.0) if token.endswith("%") else (1.0,)
    return any(abs(v * s - x) <= half * (1 + 1e-9) for v in values for s in scales)


def _worst_network(record):
    """Chapter 10's values of a saved min-mass run (its prose cites them): for the network whose
    whole penalty the kernel-only rescaling raises most, the hidden biases' change ``cor1_db``
    and the kernels' ``cor1_dm``."""
    return laurent.gpu_min_mass_values(record, [], {})


def _bias_growth(summary):
    """The fold by which the hidden biases' sum of squares grows, in each network whose whole
    penalty rises under the kernel-only min-mass rescaling."""
    mm = {k: np.asarray(v, float) for k, v in summary["min_mass"].items()
          if k in ("mass_before", "mass_after", "hidden_bias_sq_before", "hidden_bias_sq_after")}
    rises = mm["mass_after"] + mm["hidden_bias_sq_after"] > mm["mass_before"] + mm["hidden_bias_sq_before"]
    return mm["hidden_bias_sq_after"][rises] / mm["hidden_bias_sq_before"][rises]


def _barrier_falls(summary):
    return [np.mean(n) - np.mean(a) for ds in summary["midpoint"].values() for b in ds.values()
            for n, a in zip(b["naive"], b["aligned"])]


#: numbers quoted in saved runs' registered differences that are not in their claims' evidence:
#: token -> what it is, and how it is read or computed from the saved run (or the paper's table)
DERIVED_QUOTES = {
    ("not_sweep", "paper-10nots-2runs", "not_nearly_equal"): {
        "0.001": ("the raw barrier of the first run's pair started from the same W_init (NoT(P) = 0)",
                  lambda r: r["summary"]["rows"]["barrier_raw"][r["summary"]["rows"]["not_p"].index(0)])},
    **{(exp, label, "corollary1_lower_loss"): {
        rise: ("the worst network's rise of the hidden biases' sum of squares",
               lambda r: float(_worst_network(r)["cor1_db"])),
        fall: ("that network's change of the kernels' sum of squares", lambda r: float(_worst_network(r)["cor1_dm"]))}
       for exp, label, rise, fall in (("laurent_optunets", "paper", "47.2", "-23.2"),
                                      ("laurent_optunets", "paper-768nets", "92.8", "-39.7"),
                                      ("bank_min_mass", "paper-1024nets", "49.4", "-20.2"))},
    ("functional_collapse", "paper-1024nets", "ood_more_dispersed"): {
        "2.4": ("the ratio of the OOD to the ID mean MI",
                lambda r: r["summary"]["mean_ood"] / r["summary"]["mean_id"])},
    ("vi_alignment", "paper-4widths-16samples", "alignment_lowers_every_barrier"): {
        "1.5": ("the smallest fall of a cell's barrier", lambda r: min(_barrier_falls(r["summary"]))),
        "2.3": ("the largest fall of a cell's barrier", lambda r: max(_barrier_falls(r["summary"])))},
    **{("laurent_posteriors", "paper-1024nets-800ref-2epochs", name): {
        "94.1%": ("the deep ensemble's accuracy", lambda r: r["summary"]["metrics"]["DE"]["acc"]),
        "95.3%": ("Table 1's deep-ensemble accuracy (the paper's number)", lambda r: TABLE1_MNIST["DE"][2] / 100)}
       for name in ("multi_mode_closer", "ensemble_closest", "single_mode_better_ece",
                    "multi_mode_better_ood_detection", "multi_mode_higher_mi")},
}


DERIVED_QUOTES[("bank_min_mass", "paper-1024nets", "corollary1_lower_loss")].update({
    "1.7": ("the least growth of the hidden biases' sum of squares where the penalty rises",
            lambda r: min(_bias_growth(r["summary"]))),
    "2.4": ("the most such growth", lambda r: max(_bias_growth(r["summary"])))})


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_numbers_in_a_saved_runs_differences_are_the_runs(path):
    """A registered difference for a saved run is typed in the code and may quote the run's
    numbers (test_quick_profile_differences_quote_no_numbers_of_ours): each decimal or
    percentage it quotes must be a value of its claims' evidence (effects, interval ends, the
    numbers of their details), to the digits shown, or one of DERIVED_QUOTES, computed from the
    saved run; a typo, or a run saved again under the same name, fails here."""
    record = json.loads(path.read_text())
    experiment = record["experiment"]
    label = path.stem[len(experiment) + 1:]
    outcomes = claims.evaluate(experiment, record["summary"])
    values = []
    for o in outcomes:
        values += [v for v in (o.evidence.effect, o.evidence.low, o.evidence.high) if np.isfinite(v)]
        values += [float(t) for t in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", o.detail)]
    for (exp, profile, name), (_, why) in claims.DIFFERENCES.items():
        if (exp, profile) != (experiment, label):
            continue
        derived = DERIVED_QUOTES.get((exp, profile, name), {})
        tokens = re.findall(r"(?<![\w.])-?\d+\.\d+%?|(?<![\w.])-?\d+%|(?<![\w.])\d+e-\d+", why)
        unknown = [t for t in tokens if t not in derived and not _quotes(t, values)]
        assert not unknown, f"{path.name}, {name}: {unknown} are not numbers of the run: {why}"
        for token, (what, compute) in derived.items():
            assert token in why, f"{name}: DERIVED_QUOTES lists {token}, which the reason no longer quotes"
            assert _quotes(token, [compute(record)]), (path.name, name, token, what)


def test_the_quote_check_can_fail():
    assert _quotes("0.374", [0.37412]) and _quotes("94.1%", [0.9409]) and _quotes("9e-6", [9.3e-6])
    assert not _quotes("0.374", [0.3752]) and not _quotes("94.1%", [0.9425]) and not _quotes("2e-6", [9e-6])


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_thresholds_precede_the_runs_they_judge_or_say_so(path):
    """Every threshold that judges a saved run was set on or before the run's date, or its
    set_on says it was read after seeing the data (then the verdict is marked wherever shown)."""
    record = json.loads(path.read_text())
    for o in claims.evaluate(record["experiment"], record["summary"]):
        t = o.evidence.threshold
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", t.set_date), (t.key, t.set_on)
        if o.verdict is claims.Verdict.NOT_TESTED:
            continue  # a claim that does not judge the run (e.g. registered after it, on data it lacks)
        assert t.set_date <= record["date"][:10] or t.read_after_data, \
            f"{path.name}: {t.key} was set on {t.set_date}, after the run of {record['date']}, without saying so"


def test_a_late_reading_is_marked_in_the_tables(monkeypatch):
    late = Threshold("toy.late", 0.0, "above", "positive", "above zero", "2026-11-26, after seeing our numbers")
    monkeypatch.setattr(claims, "CLAIMS", {})
    claims.claim("toy", "late", "Someone (2024)", "the value is positive")(
        lambda s: claims.mean_of_units(s["values"], late, "seeds", ""))
    table = claims.claims_table(claims.evaluate("toy", {"values": [1.0, 1.1, 0.9]}), "quick")
    assert table.rows[0][-1] == "holds (threshold read after seeing the data)"
    assert late.read_after_data and not ABOVE.read_after_data


def _shuffled(obj, rng):
    """``obj`` with the keys of every dict, at every depth, in a random order."""
    if isinstance(obj, dict):
        keys = list(obj)
        rng.shuffle(keys)
        return {k: _shuffled(obj[k], rng) for k in keys}
    if isinstance(obj, list):
        return [_shuffled(v, rng) for v in obj]
    return obj


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_verdicts_do_not_depend_on_key_order(path):
    """Every claim on every saved summary gives the same effect, interval and verdict with the
    summary's keys shuffled at every depth."""
    record = json.loads(path.read_text())
    rng = np.random.default_rng(0)
    base = claims.evaluate(record["experiment"], record["summary"])
    for _ in range(2):
        again = claims.evaluate(record["experiment"], _shuffled(record["summary"], rng))
        for a, b in zip(base, again):
            assert a.claim.name == b.claim.name and a.verdict is b.verdict, (a.claim.name, a.verdict, b.verdict)
            np.testing.assert_allclose([a.evidence.effect, a.evidence.low, a.evidence.high],
                                       [b.evidence.effect, b.evidence.low, b.evidence.high], equal_nan=True)


def test_gates_fail_closed_on_a_diagnostic_that_is_not_a_number():
    """A NaN accuracy or setup value cannot show that a run is in the paper's regime: before
    2026-12-03 ``untrained_limit`` let a NaN accuracy pass (``nan <= limit`` is False) and
    ``mlp_setup_gate`` passed or failed by the order of its keys (``min`` with a NaN)."""
    from symlib.experiments.xiao.claims import mlp_setup_gate

    assert claims.untrained_limit(float("nan"), 10) == pytest.approx(0.2)
    assert claims.untrained_limit(0.5, 10) is None and claims.untrained_limit(0.2, 10) == pytest.approx(0.2)
    for summary in ({"hidden": float("nan"), "n_train": 50_000}, {"n_train": float("nan"), "hidden": 512}):
        reasons = mlp_setup_gate(summary)
        assert len(reasons) == 1 and "not a finite number" in reasons[0]
    assert mlp_setup_gate({"hidden": 512, "n_train": 50_000}) == []


def test_worst_lets_a_contradicted_part_refute_the_whole():
    """Every part must hold: a part that differs decides, even beside a part that could not be
    judged (before 2026-12-03 the not-tested part hid it); without one, a not-tested part comes
    first; otherwise the least favourable verdict."""
    V = claims.Verdict
    holds = claims.interval_evidence(1.0, 0.5, 1.5, ABOVE, "3 pairs", "")
    differs = claims.interval_evidence(-1.0, -1.5, -0.5, ABOVE, "3 pairs", "")
    worse = claims.interval_evidence(-2.0, -2.5, -1.5, ABOVE, "3 pairs", "")
    inconclusive = claims.interval_evidence(-1.0, -1.5, 0.5, ABOVE, "3 pairs", "")
    untested = claims.not_tested(ABOVE, "that part's networks did not learn")
    assert claims.worst([untested, holds, differs]) is differs
    assert claims.worst([holds, differs, worse]) is worse  # of two contradictions, the larger
    assert claims.worst([holds, inconclusive, untested]).verdict is V.NOT_TESTED
    assert claims.worst([holds, inconclusive]) is inconclusive
