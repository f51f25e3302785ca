"""The manifest of the reproduction report (symlib.experiments.report.manifest): it names every table
and figure of the three papers (parsed from the texts in ``../shared/papers``), only
chapters that exist, registered experiments, claims and summary keys; and the report's
status comes from the claims."""
import dataclasses
import json
import re
import types
from pathlib import Path

import numpy as np
import pytest

import symlib.experiments  # noqa: F401  (registers the experiments and their claims)
from symlib.experiments.report import manifest, page as report_page
from symlib.experiments.judging import scales
from symlib.experiments.report.manifest import MANIFEST, PAPERS, Item
from symlib.experiments.judging.thresholds import Threshold

REPO = Path(__file__).resolve().parents[2]
PAPERS_DIR = REPO.parent / "shared" / "papers"
RESULTS = REPO / "book" / "results"
MENTION = re.compile(r"\b(Figure|Fig\.|Table)\s*([A-Z]?)(\d+)\b")


def paper_items(paper: str) -> set[str]:
    """Every "Figure N" / "Table N" the paper's texts mention, with the gaps in a numbering
    filled (a figure whose caption was lost in extraction still has a number)."""
    found: dict[tuple[str, str], set[int]] = {}
    for name in PAPERS[paper][2]:
        for kind, prefix, number in MENTION.findall((PAPERS_DIR / name).read_text()):
            found.setdefault(("Table" if kind == "Table" else "Figure", prefix), set()).add(int(number))
    return {f"{kind} {prefix}{n}" for (kind, prefix), numbers in found.items() for n in range(1, max(numbers) + 1)}


@pytest.fixture(scope="module")
def papers_dir():
    if not PAPERS_DIR.is_dir():
        pytest.skip(f"the paper texts are not there ({PAPERS_DIR}, next to the repository): cannot check the "
                    "manifest against them")
    return PAPERS_DIR


def missing_and_invented(paper: str, items) -> tuple[list[str], list[str]]:
    """The paper's tables and figures the items miss, and the numbered ones they list that
    the paper does not have."""
    in_paper = paper_items(paper)
    listed = {i.id for i in items if i.paper == paper}
    numbered = {x for x in listed if re.fullmatch(r"(Figure|Table) [A-Z]?\d+", x)}
    return sorted(in_paper - listed), sorted(numbered - in_paper)


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_manifest_lists_every_table_and_figure_of_the_paper(papers_dir, paper):
    assert paper_items(paper), f"no table or figure found in the texts of {paper}"
    missing, invented = missing_and_invented(paper, MANIFEST)
    assert not missing, f"the manifest misses {missing} of {paper}"
    assert not invented, f"the manifest lists {invented} for {paper}, which its texts do not number"


def test_the_check_notices_a_missing_item(papers_dir):
    # Laurent et al.'s Figure 6 is never mentioned in the extracted text: the numbering requires it
    shortened = [i for i in MANIFEST if not (i.paper == "laurent2024" and i.id in ("Figure 6", "Table 2"))]
    assert missing_and_invented("laurent2024", shortened) == (["Figure 6", "Table 2"], [])
    extra = [*MANIFEST, Item("xiao2023", "Figure 4", "x", "figure", paper_value="y")]
    assert missing_and_invented("xiao2023", extra) == ([], ["Figure 4"])


def _toc_files() -> set[str]:
    return set(re.findall(r"file:\s*(\S+)", (REPO / "_toc.yml").read_text()))


def test_chapters_exist_in_the_toc_and_on_disk():
    toc = _toc_files()
    for item in MANIFEST:
        if item.chapter is not None:
            assert item.chapter in toc, f"{item.paper} {item.label}: chapter {item.chapter} is not in _toc.yml"
            assert (REPO / f"{item.chapter}.py").exists(), f"{item.paper} {item.label}: no {item.chapter}.py"
    assert "notebooks/14_reproduction_report" in toc


def test_items_are_well_formed():
    seen = set()
    for item in MANIFEST:
        where = f"{item.paper} {item.label}"
        assert item.paper in PAPERS and item.kind in manifest.KINDS, where
        assert (item.paper, item.label) not in seen, f"{where} is listed twice"
        seen.add((item.paper, item.label))
        assert item.caption and item.paper_value, f"{where}: caption and the paper's value are required"
        assert item.attempted or item.reason.startswith("not attempted"), f"{where}: say why it is not attempted"
        for exp in item.experiments:
            assert exp in symlib.experiments.EXPERIMENTS, f"{where}: unknown experiment {exp!r}"
        for ref in (*item.keys, *item.claims):
            exp = ref.split(":", 1)[0]
            assert exp in item.experiments, f"{where}: {ref!r} names an experiment the item does not list"
        manifest.item_claims(item)  # raises for a claim that is not registered
        if item.kind in ("table", "figure") and item.experiments and any(
                e in symlib.experiments.judging.claims.CLAIMS for e in item.experiments):
            assert manifest.item_claims(item), f"{where}: its experiments have claims, none judges it"


def test_every_registered_claim_judges_a_report_row():
    """A claim registered for an experiment appears in some row of chapter 14's report
    (else a verdict of ours could be missing from the page a reader scans)."""
    shown = {f"{c.experiment}:{c.name}" for item in MANIFEST for c in manifest.item_claims(item)}
    registered = {f"{exp}:{c.name}" for exp, cs in symlib.experiments.judging.claims.CLAIMS.items() for c in cs}
    assert registered - shown == set(), f"claims in no report row: {sorted(registered - shown)}"


def test_manifest_counts():
    per_paper = {p: sum(i.paper == p for i in MANIFEST) for p in PAPERS}
    assert all(n >= 4 for n in per_paper.values()), per_paper


SAVED = sorted(RESULTS.glob("*.json"))


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.name)
def test_summary_keys_resolve_on_saved_runs(path):
    record = json.loads(path.read_text())
    for item in MANIFEST:
        for ref in item.keys:
            exp, key = ref.split(":", 1)
            if exp == record["experiment"]:
                assert manifest.summary_values(record["summary"], key), f"{path.name}: no {key!r} ({item.label})"


def test_summary_values_and_formatting():
    summary = {"mmd": {"MMD": {"DE": {"median": 0.001, "max": 0.5}}}, "xs": [1.0, 2.0, 3.0, 4.0, 5.0]}
    assert manifest.summary_values(summary, "mmd/MMD/DE/*") == [("MMD/DE/median", 0.001), ("MMD/DE/max", 0.5)]
    assert manifest.summary_values(summary, "mmd/NS/DE/median") == []
    assert manifest.format_value(summary["xs"]) == "mean 3 over 5"
    assert manifest.format_value({"a": 0.12345}) == "a 0.123"


def _barriers(after: float) -> dict:
    return {f"barrier_{s}": {"no matching": 0.2, "weight matching": after, "activation matching": after}
            for s in ("train", "test")}


_T = Threshold("test.barrier", 0.05, "below", "the barrier vanishes", "synthetic", "in this test")


def _barrier_check(summary):
    from symlib.experiments.judging import claims

    values = [summary["barrier_test"]["weight matching"], summary["barrier_test"].get("weight matching 2",
                                                                                      summary["barrier_test"]["weight matching"])]
    if summary.get("noisy"):
        return claims.mean_of_units([values[0]], _T, "network pairs", "one pair")
    if summary.get("predates_the_claim"):
        return claims.not_tested(_T, "the summary predates the claim")
    return claims.exact(max(values), _T, "all pairs (worst case)", f"barrier {max(values):.3f}")


@pytest.fixture
def synthetic_claims(monkeypatch):
    """The experiments' claims replaced by one synthetic claim of Fig. 1 (the real ones are
    judged in tests/experiments/test_claims.py)."""
    from symlib.experiments.judging import claims

    c = claims.Claim("rebasin_barriers", "synthetic_barrier", "Xiao et al. (2023), Fig. 1", "the barrier vanishes",
                     _barrier_check)
    monkeypatch.setitem(claims.CLAIMS, "rebasin_barriers", [c])
    monkeypatch.setattr(claims, "DIFFERENCES", {})
    return claims


def test_verdict_combines_the_claims():
    V = manifest.Verdict
    assert manifest.combine([V.HOLDS, V.HOLDS]) is V.HOLDS
    assert manifest.combine([V.HOLDS, V.SAME_DIRECTION]) is V.SAME_DIRECTION
    assert manifest.combine([V.SAME_DIRECTION, V.DIFFERS, V.HOLDS]) is V.DIFFERS
    assert manifest.combine([V.HOLDS, V.NOT_TESTED]) is V.NOT_TESTED
    assert manifest.combine([]) is V.NOT_TESTED


def test_status_comes_from_the_claims_with_the_scale(synthetic_claims):
    fig1 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 1")
    record = {"device": "1 x H100 (gpu)", "date": "2026-01-02"}
    good = {"rebasin_barriers": {"paper": {**record, "summary": _barriers(0.001)}}}
    bad = {"rebasin_barriers": {"paper": {**record, "summary": _barriers(0.15)}}}
    assert manifest.item_status(fig1, {}, {}) == "not run"
    assert manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.001)}, {}) == "holds (quick miniature; quick)"
    assert manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.15)}, good) == (
        "holds (paper scale; paper) | differs (quick miniature; quick)")
    status = manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.001)}, bad)
    assert status == "differs (paper scale; paper) | holds (quick miniature; quick)"
    noisy = {**_barriers(0.001), "noisy": True}
    assert manifest.item_status(fig1, {"rebasin_barriers": noisy}, {}) == (
        "same direction, not significant (quick miniature; quick)")
    too_small = dataclasses.replace(fig1, quick_inconclusive="networks near chance")
    assert manifest.item_status(too_small, {"rebasin_barriers": _barriers(0.001)}, {}) == (
        "not tested (quick miniature; quick: too small to test: networks near chance)")
    assert manifest.item_status(too_small, {"rebasin_barriers": _barriers(0.001)}, good) == (
        "holds (paper scale; paper) | not tested (quick miniature; quick: too small to test: networks near chance)")
    row = report_page.report_rows({}, good, [fig1])[0]
    assert row.chapter == "[2](02_rebasin_barriers.html)" and row.scale == "paper scale" and row.verdict == "holds"
    assert row.our_number == "synthetic_barrier: 0.001 (all pairs (worst case))"
    details = dict(row.details)
    assert details["ours (quick profile)"] == report_page.NOT_CACHED and "1 x H100 (gpu), 2026-01-02" in str(row.details)
    rn18 = next(i for i in MANIFEST if i.paper == "laurent2024" and i.part == "CIFAR-100 / ResNet-18")
    assert rn18.paper_only and dict(report_page.report_rows({}, {}, [rn18])[0].details)["ours (quick profile)"] == (
        report_page.PAPER_ONLY)
    not_attempted = Item("xiao2023", "Figure 9", "x", "figure", paper_value="y", reason="not attempted: no data")
    row = report_page.report_rows({}, {}, [not_attempted])[0]
    assert (row.scale, row.verdict) == ("-", "not attempted") and ("status", "not attempted: no data") in row.details


def test_no_status_says_reproduced_and_every_verdict_names_its_scale(synthetic_claims):
    record = {"device": "cpu", "date": "2026-01-02"}
    runs = {"rebasin_barriers": {"paper": {**record, "summary": _barriers(0.001)}}}
    rows = report_page.report_rows({"rebasin_barriers": _barriers(0.001)}, runs)
    for row in rows:
        assert "reproduced" not in " ".join(row.cells).lower(), row.cells
        assert "reproduced" not in manifest.item_status(next(i for i in MANIFEST if i.label == row.label
                                                             and manifest.PAPERS[i.paper][1] == row.paper),
                                                        {"rebasin_barriers": _barriers(0.001)}, runs).lower()
        if row.runs:
            assert row.scale.split(":")[0] in scales.KINDS and row.verdict in {v.value for v in manifest.Verdict}
    counts = report_page.counts_by_scale(rows)
    assert counts[("Xiao et al. (2023)", "paper scale", "holds")] == 1
    assert counts[("Xiao et al. (2023)", "quick miniature", "holds")] == 1
    html = report_page.report_html(rows[:3])
    assert html.count("<details") == 3 and "table-layout:fixed" in html and '<a href="02_rebasin_barriers.html">' in html


def test_an_item_counts_once_per_scale(synthetic_claims):
    """Two labelled reductions of one item count once among the reductions (the first run's
    verdict), beside its quick run."""
    record = {"device": "cpu", "date": "2026-01-02"}
    scales.REDUCTIONS[("rebasin_barriers", "paper-1seed")] = "1 of the paper's 2 seeds"
    scales.REDUCTIONS[("rebasin_barriers", "paper-2seeds")] = "2 of the paper's 4 seeds"
    try:
        runs = {"rebasin_barriers": {"paper-1seed": {**record, "summary": _barriers(0.001)},
                                     "paper-2seeds": {**record, "summary": _barriers(0.001)}}}
        rows = [r for r in report_page.report_rows({"rebasin_barriers": _barriers(0.001)}, runs)
                if r.paper == "Xiao et al. (2023)" and r.runs]
        counts = report_page.counts_by_scale(rows)
    finally:
        del scales.REDUCTIONS[("rebasin_barriers", "paper-1seed")], scales.REDUCTIONS[("rebasin_barriers", "paper-2seeds")]
    assert sum(len(r.runs) for r in rows) > len(rows)  # more runs than items
    reductions = sum(v for (p, s, _), v in counts.items() if s == "labelled reduction")
    quick = sum(v for (p, s, _), v in counts.items() if s == "quick miniature")
    assert reductions == len(rows) and quick == len(rows)


def test_the_row_shows_the_run_of_its_scale_that_tests_the_claims(synthetic_claims):
    """Of two labelled reductions, one whose summary cannot test the claim ("paper" comes first
    in the rows' order) does not hide the other's verdict, in the row or in the counts; the
    details still list both."""
    record = {"device": "cpu", "date": "2026-01-02"}
    scales.REDUCTIONS[("rebasin_barriers", "paper")] = "1 of the paper's 2 seeds"
    scales.REDUCTIONS[("rebasin_barriers", "paper-2seeds")] = "2 of the paper's 4 seeds"
    try:
        runs = {"rebasin_barriers": {"paper": {**record, "summary": {**_barriers(0.001), "predates_the_claim": 1}},
                                     "paper-2seeds": {**record, "summary": _barriers(0.15)}}}
        fig1 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 1")
        row = report_page.report_rows({}, runs, [fig1])[0]
        counts = report_page.counts_by_scale([row])
    finally:
        del scales.REDUCTIONS[("rebasin_barriers", "paper")], scales.REDUCTIONS[("rebasin_barriers", "paper-2seeds")]
    assert [r.run for r in row.runs] == ["paper", "paper-2seeds"]
    assert row.verdict == "differs" and "2 of the paper's 4 seeds" in row.scale
    assert counts == {("Xiao et al. (2023)", "labelled reduction", "differs"): 1}
    assert sum("not tested" in title for title, _ in row.details) == 1


def test_a_reduction_is_labelled_with_what_it_reduced(synthetic_claims):
    fig1 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 1")
    record = {"device": "cpu", "date": "2026-01-02", "summary": _barriers(0.001)}
    scales.REDUCTIONS[("rebasin_barriers", "paper-1seed")] = "1 of the paper's 2 seeds"
    try:
        status = manifest.item_status(fig1, {}, {"rebasin_barriers": {"paper-1seed": record}})
    finally:
        del scales.REDUCTIONS[("rebasin_barriers", "paper-1seed")]
    assert status == "holds (labelled reduction: 1 of the paper's 2 seeds; paper-1seed)"


def test_hmc_budget_is_read_from_the_profile():
    from symlib.experiments.profiles import get_profile

    paper = get_profile("paper")
    text = manifest.hmc_budget(paper)
    assert f"{paper.bnn_n_train:,} images" in text and f"{paper.hmc_chains} chains" in text
    assert manifest.NEEDS_GPU_HMC.endswith(text)
    smaller = dataclasses.replace(paper, hmc_chains=2, bnn_n_train=1_000)
    assert "2 chains" in manifest.hmc_budget(smaller) and "1,000 images" in manifest.hmc_budget(smaller)


def test_a_saved_hmc_pieces_run_fills_table1_and_figure3(tmp_path, monkeypatch):
    from symlib.experiments.judging import claims

    table = {col: {"agreement": 0.9, "tv": 0.1} for col in ("HMC sample", "HMC q_d", "HMC q_r")}
    summary = {"table": table, "median_sigma": {"HMC q_d": 0.5, "HMC q_r": 0.05},
               "near_prior": {"HMC q_d": 0.4, "HMC q_r": 0.01}, "progress": {"num_kept": 120, "num_samples": 500},
               "diagnostics": {"step_size": [1e-4, 1e-4]}}
    (tmp_path / "hmc_pieces-paper.json").write_text(json.dumps({"experiment": "hmc_pieces", "profile": "paper",
                                                                "device": "1 x H100", "date": "2026-11-25",
                                                                "summary": summary}))
    runs = manifest.saved_runs(tmp_path)
    t1 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Table 1" and not i.part)
    fig3 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 3")
    cell = manifest.paper_profile_cell(t1, runs)
    assert "HMC q_r/agreement 0.9" in cell and "hmc_pieces, paper, labelled reduction: 240 of the paper's 1,000 " \
        "HMC samples (2 chains x 120)" in cell
    assert "median_sigma/HMC q_r 0.05" in manifest.paper_profile_cell(fig3, runs) or "HMC q_r 0.05" in \
        manifest.paper_profile_cell(fig3, runs)
    # only the claim the item names explicitly (ours, judged on compact_representation runs alone)
    monkeypatch.setitem(claims.CLAIMS, "compact_representation", [c for c in claims.CLAIMS["compact_representation"]
                                                                  if c.name == "qd_falls_with_chains"])
    [run] = manifest.run_verdicts(t1, {}, runs)
    assert run.run == "paper" and run.scale.kind == scales.REDUCTION and run.verdict is manifest.Verdict.NOT_TESTED
    c = claims.Claim("hmc_pieces", "qr_agrees", "Xiao et al. (2023), Table 1", "q_r agrees with HMC",
                     lambda s: claims.exact(s["table"]["HMC q_r"]["tv"], _T.__class__(
                         "test.tv", 0.5, "below", "q", "r", "s"), "all", "tv"))
    monkeypatch.setitem(claims.CLAIMS, "hmc_pieces", [c])
    [run] = manifest.run_verdicts(t1, {}, runs)
    assert run.verdict is manifest.Verdict.HOLDS
    row = report_page.report_rows({}, runs, [t1])[0]
    assert row.verdict == "holds" and row.our_number == "qr_agrees: 0.1 (all)"
    monkeypatch.setitem(claims.CLAIMS, "hmc_pieces", [])
    assert report_page.report_rows({}, runs, [t1])[0].our_number == "HMC q_d/agreement 0.9"
    complete = {**summary, "progress": {"num_kept": 500, "num_samples": 500}}
    assert scales.scale_of("hmc_pieces", "paper", {"summary": complete}).kind == scales.PAPER


def test_saved_runs_keeps_paper_profiles(tmp_path):
    for name, profile in (("a", "paper"), ("a", "paper-8nets"), ("b", "quick")):
        (tmp_path / f"{name}-{profile}.json").write_text(json.dumps({"experiment": name, "profile": profile,
                                                                     "summary": {}}))
    runs = manifest.saved_runs(tmp_path)
    assert set(runs) == {"a"} and set(runs["a"]) == {"paper", "paper-8nets"}


def test_quick_summaries_never_compute(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    called = []
    monkeypatch.setattr(symlib.experiments.registry.cache, "cached", lambda *a, **k: called.append(a))
    assert manifest.quick_summaries("quick") == {} and called == []


def test_status_lists_every_saved_run_and_documented_reasons(synthetic_claims):
    claims = synthetic_claims
    fig1 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 1")
    record = {"device": "cpu", "date": "2026-01-02"}
    runs = {"rebasin_barriers": {"paper": {**record, "summary": _barriers(0.001)},
                                 "paper-small": {**record, "summary": _barriers(0.15)}}}
    scales.REDUCTIONS[("rebasin_barriers", "paper-small")] = "1 of the paper's 2 seeds"
    try:
        claims.difference("rebasin_barriers", "paper-small", "synthetic_barrier", "the small run's nets are too narrow")
        status = manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.001)}, runs)
        [paper, small, quick] = manifest.run_verdicts(fig1, {"rebasin_barriers": _barriers(0.001)}, runs)
    finally:
        del scales.REDUCTIONS[("rebasin_barriers", "paper-small")]
    assert status.split(" | ") == ["holds (paper scale; paper)",
                                   "differs (labelled reduction: 1 of the paper's 2 seeds; paper-small)",
                                   "holds (quick miniature; quick)"]
    assert small.details()[0].endswith("why: the small run's nets are too narrow")


def test_one_verdict_per_scale_within_a_run_label():
    """Laurent's Figure 2 reads laurent_optunets (its paper profile a reduction: 256 of the
    paper's 1,000 OptuNets) and laurent_mlps (a stand-in) under the one label "paper": each gets
    its own verdict and scale, the reduction first, instead of one verdict under the stand-in."""
    fig2 = next(i for i in MANIFEST if i.paper == "laurent2024" and i.id == "Figure 2")
    runs = manifest.saved_runs(REPO / "book" / "results")
    verdicts = manifest.run_verdicts(fig2, {}, runs)
    paper = [r for r in verdicts if r.run == "paper"]
    assert [r.scale.kind for r in paper] == [scales.REDUCTION, scales.STAND_IN]
    assert {o.claim.experiment for o in paper[0].outcomes} == {"laurent_optunets"}
    assert {o.claim.experiment for o in paper[1].outcomes} == {"laurent_mlps"}
    assert verdicts[0] is paper[0]  # the largest reduction leads the row


def test_check_book_accepts_the_report_html_and_refuses_a_reproduced_status():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_book", REPO / "scripts" / "check_book.py")
    check_book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_book)
    rows = report_page.report_rows({}, {})
    page = "".join(report_page.report_html([r for r in rows if r.paper == PAPERS[p][1]]) for p in PAPERS)
    assert check_book.report_problems(page) == []
    assert len(check_book.report_problems(page.replace("not run", "reproduced (quick profile)"))) == 1
    assert len(check_book.report_problems("<p>nothing</p>")) == 2


def test_forest_entries_turn_every_claim_to_the_papers_side():
    """The forest plot's entries: one per tested claim and run (items sharing a claim share it),
    effect and interval minus the threshold, positive on the paper's side for either direction,
    unbounded ends kept; the figure draws them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from symlib.experiments import plotting
    from symlib.experiments.report import page as report_page
    from symlib.experiments.judging import results as saved_results

    paper_runs = manifest.saved_runs(saved_results.results_dir())
    rows = report_page.report_rows({}, paper_runs)
    entries = report_page.forest_entries(rows)
    keys = [(e.label, e.run) for e in entries]
    assert len(keys) == len(set(keys)) and entries
    tested = {(f"{o.claim.experiment}.{o.claim.name}", r.run): o for row in rows for r in row.runs
              for o in r.outcomes if o.evidence.untested is None}
    assert set(keys) == set(tested)
    for e in entries:
        ev = tested[(e.label, e.run)].evidence
        assert e.low <= e.effect <= e.high
        assert (e.low > 0 and not e.one_run) == (e.verdict == "holds")
        assert (e.high < 0 and not e.one_run) == (e.verdict == "differs")
        assert e.one_run == tested[(e.label, e.run)].evidence.one_run
        side = 1 if ev.threshold.direction == "above" else -1
        assert np.isclose(e.effect, side * (ev.effect - ev.threshold.value))
    assert any(not np.isfinite(e.low) for e in entries)  # a one-pair run's unbounded interval
    fig = plotting.forest(entries[:12], title="test")
    assert len(fig.axes[0].get_yticklabels()) == 12
    plt.close(fig)


def test_the_report_refuses_a_partly_filled_cache(tmp_path, monkeypatch):
    """The report executed after only some chapters (a cache without their results) stops with
    an error that names the items and chapters missing, instead of a page of 'not cached'."""
    from symlib.experiments import registry

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    expected = [i for i in MANIFEST if manifest.runs_in_quick(i)]
    names = {e for i in expected for e in i.experiments}
    assert "laurent_posteriors" in names and not names & {"rn18_posteriors_cifar100", "vi_alignment_resnet20"}
    with pytest.raises(manifest.QuickResultsMissing, match=f"for {len(expected)} items of the report") as err:
        manifest.quick_summaries("quick", complete=True)
    assert str(tmp_path) in str(err.value) and "notebooks/12_posterior_estimates" in str(err.value)
    # every experiment with a summary cached but those of one item alone
    gone = next(i for i in expected if not any(set(i.experiments) & set(j.experiments) for j in expected if j is not i))
    found = {e for i in expected for e in i.experiments if e in registry.SUMMARIES} - set(gone.experiments)
    monkeypatch.setattr(registry, "lookup", lambda name, profile: (
        types.SimpleNamespace(artifact={"name": name}) if name in found else None))
    monkeypatch.setattr(registry, "SUMMARIES", {e: (lambda art: dict(art)) for e in registry.SUMMARIES})
    with pytest.raises(manifest.QuickResultsMissing, match="for 1 item of the report") as err:
        manifest.quick_summaries("quick", complete=True)
    assert gone.label in str(err.value) and gone.chapter in str(err.value)
    quick = manifest.quick_summaries("quick")  # without complete: what there is, no error
    assert set(quick) == found and all(quick[e] == {"name": e} for e in found)
    found |= set(gone.experiments)
    assert set(manifest.quick_summaries("quick", complete=True)) == found & set(registry.SUMMARIES)
