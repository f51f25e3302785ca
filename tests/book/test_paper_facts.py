"""The registry of quoted numbers (symlib.experiments.report.paper_facts): every paper fact's quote
is in its paper's text (``../shared/papers``) and contains its value, every repo fact's value
is a number of its quoted code, and the checks can fail."""
from __future__ import annotations

import re

import pytest

from symlib.experiments.report import paper_facts
from symlib.experiments.report.manifest import PAPERS
from symlib.experiments.report.paper_facts import PAPER_FACTS, REPO_FACTS, PaperFact, RepoFact


@pytest.fixture(scope="module")
def papers_dir():
    if not paper_facts.PAPERS_DIR.is_dir():
        pytest.skip(f"the paper texts are not there ({paper_facts.PAPERS_DIR}, next to the repository): cannot "
                    "check the registry's quotes against them")
    return paper_facts.PAPERS_DIR


def _id(fact) -> str:
    if isinstance(fact, PaperFact):
        return f"{fact.paper}:{fact.value}:{fact.section}"
    return f"{fact.repo}:{fact.value}:{fact.path}"


@pytest.mark.parametrize("fact", PAPER_FACTS, ids=_id)
def test_every_quote_is_in_its_paper_and_contains_its_value(papers_dir, fact):
    assert paper_facts.quote_problems(fact, papers_dir) == []


@pytest.mark.parametrize("fact", PAPER_FACTS, ids=_id)
def test_every_quote_contains_its_value(fact):
    """Needs no paper text: runs even where ``../shared/papers`` is absent."""
    assert fact.paper in PAPERS, fact
    assert fact.section and fact.quote.strip() == fact.quote and len(fact.quote) <= 120, fact
    assert paper_facts.value_in_text(fact.value, fact.quote), fact


@pytest.mark.parametrize("fact", REPO_FACTS, ids=_id)
def test_every_repo_fact_names_its_file_and_holds_its_value(fact):
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", fact.repo), fact.repo
    assert fact.path and not fact.path.startswith("/"), fact.path
    assert re.fullmatch(r"[0-9a-f]{40}", fact.commit), fact.commit
    assert fact.fact and fact.code, fact
    assert paper_facts.value_in_code(fact), fact


def test_the_whole_registry_checks_out(papers_dir):
    assert paper_facts.registry_problems(papers_dir) == []


def test_lookup():
    found = paper_facts.lookup("98.66%")
    assert [f.paper for f in found] == ["xiao2023"] and "98.66" in found[0].quote
    assert {f.paper for f in paper_facts.lookup("1,000", "paper")} == {"xiao2023", "rossi2023", "laurent2024"}
    assert paper_facts.lookup("2e-4", "paper") == () and paper_facts.lookup("2e-4", "repo")[0].repo == \
        "ENSTA-U2IS-AI/optuMNIST"
    assert all(isinstance(f, PaperFact) for f in paper_facts.lookup("10", "paper"))
    assert all(isinstance(f, RepoFact) for f in paper_facts.lookup("10", "repo"))
    # numbers we computed from paper numbers, or wrongly attributed, are not registered
    for ours in ("3.8", "120,000", "56,000", "0.70", "784-512-10", "1, 2, 4, 8"):
        assert paper_facts.lookup(ours) == (), ours
    assert "1,000" in paper_facts.paper_values() and "1e-2" in paper_facts.repo_values()
    with pytest.raises(ValueError):
        paper_facts.lookup("10", "code")


@pytest.mark.parametrize("value, text, found", [
    ("1,000", "we generated 1000 HMC samples", True),
    ("1000", "a bank of 1,000 networks", True),
    ("98.66%", "Test Accuracy (%) of Samples 98.43 98.66", True),
    ("1%", "the few outliers (less than 1 %)", True),
    ("-0.5", "a shift of \u22120.5", True),
    ("4", "a random crop of size 28 and padding four", True),
    ("20", "the median over the twenty MMD kernels", True),
    ("10", "a bank of 100 networks at 1.0 and 0.10", False),
    ("1", "temperature 1.0", False),
    ("512", "5120 units", False),
    ("0.01", "0.0125", False),
])
def test_the_normaliser_allows_formatting_but_not_other_numbers(value, text, found):
    assert paper_facts.value_in_text(value, text) is found


def test_a_misquoted_fact_is_reported(papers_dir):
    invented = PaperFact("3.8", "laurent2024", "Sec. 4.3", "the single-mode MMD is 3.8 times the multi-mode one")
    problems = paper_facts.quote_problems(invented, papers_dir)
    assert len(problems) == 1 and "not in the paper's text" in problems[0]
    wrong_value = PaperFact("0.3081", "laurent2024", "App. B.1", "we normalize the data as usual")
    problems = paper_facts.quote_problems(wrong_value, papers_dir)
    assert len(problems) == 1 and "does not contain '0.3081'" in problems[0]


def test_a_repo_fact_whose_code_lacks_the_value_is_reported():
    fact = RepoFact("2e-4", "ENSTA-U2IS-AI/optuMNIST", "optumnist/optumnist-v1.py", "0" * 40,
                    "optimizer = optim.SGD(model.parameters(), lr=0.04, weight_decay=0.0005)", "weight decay")
    assert not paper_facts.value_in_code(fact)
    assert paper_facts.value_in_code(RepoFact("15%", "a/b", "c.py", "0" * 40, "divergence_threshold=0.15", "x"))


def test_a_missing_papers_folder_is_said_plainly(tmp_path):
    with pytest.raises(FileNotFoundError, match="paper texts are not there"):
        paper_facts.paper_text("xiao2023", tmp_path / "absent")
