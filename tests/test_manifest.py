"""The manifest of the reproduction report (symlib.experiments.manifest): it names every table
and figure of the three papers (parsed from the texts in ``../shared/papers``), only
chapters that exist, registered experiments, claims and summary keys; and the report's
status comes from the claims."""
import dataclasses
import json
import re
from pathlib import Path

import pytest

import symlib.experiments  # noqa: F401  (registers the experiments and their claims)
from symlib.experiments import manifest
from symlib.experiments.manifest import MANIFEST, PAPERS, Item

REPO = Path(__file__).resolve().parents[1]
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
                e in symlib.experiments.claims.CLAIMS for e in item.experiments):
            assert manifest.item_claims(item), f"{where}: its experiments have claims, none judges it"


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


def test_status_comes_from_the_claims():
    fig1 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 1")
    record = {"device": "1 x H100 (gpu)", "date": "2026-01-02"}
    good = {"rebasin_barriers": {"paper": {**record, "summary": _barriers(0.001)}}}
    bad = {"rebasin_barriers": {"paper": {**record, "summary": _barriers(0.15)}}}
    assert manifest.item_status(fig1, {}, {}) == "not run"
    assert manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.001)}, {}) == "reproduced (quick profile)"
    assert manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.15)}, good) == "reproduced (paper profile)"
    status = manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.001)}, bad)
    assert status.startswith("differs (paper profile): ") and "ours:" in status
    too_small = dataclasses.replace(fig1, quick_inconclusive="networks near chance")
    assert manifest.item_status(too_small, {"rebasin_barriers": _barriers(0.001)}, {}) == (
        "not tested (quick profile: networks near chance)")
    assert manifest.item_status(too_small, {"rebasin_barriers": _barriers(0.001)}, good) == "reproduced (paper profile)"
    row = manifest.report_rows({}, good, [fig1])[0]
    assert row[3] == "[2](02_rebasin_barriers.html)" and row[5] == manifest.NOT_CACHED
    rn18 = next(i for i in MANIFEST if i.paper == "laurent2024" and i.part == "CIFAR-100 / ResNet-18")
    assert rn18.paper_only and manifest.report_rows({}, {}, [rn18])[0][5] == manifest.PAPER_ONLY
    assert "1 x H100 (gpu), 2026-01-02" in row[6] and row[7] == "reproduced (paper profile)"
    fig2 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 2")
    if not any(e in symlib.experiments.SUMMARIES for e in fig2.experiments):
        assert manifest.report_rows({}, {}, [fig2])[0][5].startswith("in the chapter")
    not_attempted = Item("xiao2023", "Figure 9", "x", "figure", paper_value="y", reason="not attempted: no data")
    assert manifest.report_rows({}, {}, [not_attempted])[0][5:] == ("not attempted", "not attempted",
                                                                    "not attempted: no data")


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


def test_status_lists_every_saved_run_and_documented_reasons(monkeypatch):
    from symlib.experiments import claims

    fig1 = next(i for i in MANIFEST if i.paper == "xiao2023" and i.id == "Figure 1")
    record = {"device": "cpu", "date": "2026-01-02"}
    runs = {"rebasin_barriers": {"paper": {**record, "summary": _barriers(0.001)},
                                 "paper-small": {**record, "summary": _barriers(0.15)}}}
    monkeypatch.setattr(claims, "DIFFERENCES", {})
    claims.difference("rebasin_barriers", "paper-small", "rebasin_removes_barrier", "the small run's nets are too narrow")
    status = manifest.item_status(fig1, {"rebasin_barriers": _barriers(0.001)}, runs)
    first, second = status.split(" | ")
    assert first.startswith("differs (paper-small profile): ") and first.endswith("why: the small run's nets are too narrow")
    assert second == "reproduced (paper profile)"
