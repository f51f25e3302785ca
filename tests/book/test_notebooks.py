"""Static checks of the notebooks (execution itself is nbval's job: `make nbval`)."""
import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="jupytext is in the 'test' extra")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "notebooks").glob("*.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert SOURCES, "no notebooks/*.py found"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_pair_in_sync(src):
    nb_path = src.with_suffix(".ipynb")
    assert nb_path.exists(), f"{src.name} has no paired .ipynb: run `make sync NB=...`"
    py_cells = [(c.cell_type, c.source.strip()) for c in jupytext.read(src).cells]
    nb_cells = [(c.cell_type, c.source.strip()) for c in jupytext.read(nb_path).cells]
    assert py_cells == nb_cells, f"{src.name} and {nb_path.name} differ: run `make sync` and re-execute"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_are_clean(nb_path):
    assert nb_path.with_suffix(".py").exists(), f"{nb_path.name} has no paired .py"
    nb = jupytext.read(nb_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert any(c.get("outputs") for c in code), f"{nb_path.name} has no stored outputs: execute it"
    for i, cell in enumerate(code):
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{nb_path.name}: code cell {i} stored an error"
            text = "".join(out.get("text", "")) if isinstance(out.get("text", ""), list) else out.get("text", "")
            assert "<Figure size" not in text, f"{nb_path.name}: cell {i} prints a Figure repr (end the line with ;)"
        assert set(cell.get("metadata", {})) <= {"tags"}, f"{nb_path.name}: cell {i} has metadata beyond tags"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_structure(src):
    text = src.read_text()
    assert "{cite" in text, f"{src.name} does not cite its paper"
    assert "## Synthesis" in text, f"{src.name} has no Synthesis section"
    # every chapter asserts its claims: an assert, or the one-call check claims.assert_expected
    assert re.search(r"^\s*(assert |claims\.assert_expected\()", text, re.M), f"{src.name} asserts no claim"
    assert "describe()" in text, f"{src.name} does not print the active profile"


#: the longest source line of a chapter: its prose is read in the .py and its code on the page
MAX_LINE = 120


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_source_lines_are_at_most_max_line(src):
    long = [i for i, line in enumerate(src.read_text().splitlines(), 1) if len(line) > MAX_LINE]
    assert not long, f"{src.name}: lines {long} are longer than {MAX_LINE} characters (wrap them)"


#: the widest code line a chapter's page shows unbroken: the book's code column holds 73
#: characters at 1280 px (measured), and wrap-code.css breaks a longer line at any character
MAX_CODE_LINE = 73


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_code_lines_fit_the_page(src):
    code = [c.source for c in jupytext.read(src).cells if c.cell_type == "code"]
    long = [line for source in code for line in source.splitlines() if len(line) > MAX_CODE_LINE]
    assert not long, f"{src.name}: {len(long)} code lines over {MAX_CODE_LINE} characters, e.g. {long[0]!r}"


def test_the_stored_report_has_every_quick_result():
    """The book that `make test` builds shows the outputs stored here: the reproduction report
    must have been executed after the chapters, on their cache, with no item left without its
    quick-profile result (it was committed so once, executed alone)."""
    from symlib.experiments.report.page import NOT_CACHED

    report = ROOT / "notebooks" / "14_reproduction_report.ipynb"
    assert NOT_CACHED not in report.read_text(), f"{report.name}: execute it after the chapters (make sync)"
