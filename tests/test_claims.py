"""The papers' claims as code (symlib.experiments.claims): the framework, and every
paper-profile result saved under book/results/ checked against its experiment's claims."""
import json
from pathlib import Path

import pytest

import symlib.experiments  # noqa: F401  (registers the experiments and their claims)
from symlib.experiments import claims

RESULTS = sorted((Path(__file__).resolve().parents[1] / "book" / "results").glob("*.json"))


def test_there_are_saved_results():
    assert RESULTS, "book/results/ holds no paper-profile result"


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_saved_result_satisfies_its_papers_claims(path):
    """Every claim holds on the saved run, except the differences documented for its profile
    (claims.difference), and each of those really fails (else its text is stale)."""
    record = json.loads(path.read_text())
    experiment, profile = record["experiment"], record["profile"]
    assert claims.CLAIMS.get(experiment), f"{path.name}: experiment {experiment!r} has no registered claims"
    outcomes = claims.evaluate(experiment, record["summary"])
    documented = {name for (e, p, name) in claims.DIFFERENCES if (e, p) == (experiment, profile)}
    failed = {o.claim.name: o.detail for o in outcomes if not o.holds}
    undocumented = {k: v for k, v in failed.items() if k not in documented}
    assert not undocumented, f"{path.name}: claims fail without a documented difference: {undocumented}"
    stale = documented - set(failed)
    assert not stale, f"{path.name}: documented differences that no longer fail (update the chapter): {sorted(stale)}"


def test_documented_differences_name_real_claims_and_saved_runs():
    for (experiment, profile, name), why in claims.DIFFERENCES.items():
        assert any(c.name == name for c in claims.CLAIMS[experiment])
        assert any(p.name == f"{experiment}-{profile}.json" for p in RESULTS), (experiment, profile)
        assert len(why) > 40, "say what differs and why, in a sentence"


def test_difference_registry_errors(monkeypatch):
    _toy_claims(monkeypatch)
    monkeypatch.setattr(claims, "DIFFERENCES", {})
    with pytest.raises(ValueError, match="has no claim named 'big'"):
        claims.difference("toy", "paper", "big", "because")
    with pytest.raises(ValueError, match="needs its reason"):
        claims.difference("toy", "paper", "small", "  ")
    claims.difference("toy", "paper", "small", "ours is 12 at paper scale")
    assert claims.documented_difference("toy", "paper", "small") == "ours is 12 at paper scale"
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


def _toy_claims(monkeypatch):
    monkeypatch.setattr(claims, "CLAIMS", {})

    @claims.claim("toy", "positive", "Someone (2024), Fig. 9", "the value is positive")
    def _positive(summary):
        return summary["value"] > 0, f"value {summary['value']}"

    @claims.claim("toy", "small", "Someone (2024), Sec. 2", "the value is below 10")
    def _small(summary):
        return summary["value"] < 10, f"value {summary['value']}"


def test_claims_hold_and_fail_with_their_numbers(monkeypatch):
    _toy_claims(monkeypatch)
    assert [o.holds for o in claims.evaluate("toy", {"value": 3})] == [True, True]
    with pytest.raises(AssertionError, match=r"1 claim\(s\) of 'toy' do not hold:\n- Someone \(2024\), Sec. 2: "
                                             r"the value is below 10 -> ours: value 12"):
        claims.check_summary("toy", {"value": 12})
    table = claims.claims_table(claims.evaluate("toy", {"value": -1}), "quick")
    assert table.rows[0][-1] == "NO" and table.rows[1][-1] == "yes"
    assert table.headers[2] == "ours (quick profile)"


def test_claim_registry_errors(monkeypatch):
    _toy_claims(monkeypatch)
    with pytest.raises(ValueError, match="already has a claim named 'small'"):
        claims.claim("toy", "small", "x", "y")(lambda s: (True, ""))
    with pytest.raises(ValueError, match="has no registered claims"):
        claims.check_summary("nothing", {})


def test_rebasin_claim_fails_when_matching_leaves_the_barrier():
    summary = {f"barrier_{s}": {"no matching": 0.2, "weight matching": 0.15, "activation matching": 0.01}
               for s in ("train", "test")}
    outcome, = claims.evaluate("rebasin_barriers", summary)
    assert not outcome.holds and "0.150 (weight)" in outcome.detail
