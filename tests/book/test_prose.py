"""scripts/check_prose.py (run by ``make test``): a number or a verdict of ours written by hand
in a chapter's markdown is reported, the same sentence with ``{glue:text}`` / ``{paper}``
roles is not; and every chapter of the book passes."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_prose", ROOT / "scripts" / "check_prose.py")
check_prose = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_prose)

HEADER = """# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---
"""


def _notebook(tmp_path: Path, *markdown: str) -> Path:
    cells = [HEADER, "# %%\nfrom myst_nb import glue\nglue('ch99_barrier', 0.012, display=False)\n"]
    for text in markdown:
        cells.append("# %% [markdown]\n" + "\n".join(f"# {line}" if line else "#" for line in text.splitlines()) + "\n")
    path = tmp_path / "99_synthetic.py"
    path.write_text("\n".join(cells))
    return path


PLANTED = {
    "number": "After alignment the barrier falls to 0.012 on the test set.",
    "percent": "Our ensemble reaches 97.8% test accuracy.",
    "verdict": "The claim holds for every width.",
    "reproduced": "Figure 2 is reproduced at the paper's scale.",
}
GLUED = {
    "number": "After alignment the barrier falls to {glue:text}`ch99_barrier:.3f` on the test set.",
    "percent": "Our ensemble reaches {glue:text}`ch99_accuracy:.1%` test accuracy, the paper {paper}`98.66%`.",
    "verdict": "The claim's verdict for every width: {glue:text}`ch99_verdict`.",
    "reproduced": "Figure 2's verdict at the paper's scale is {glue:text}`ch99_fig2_verdict`.",
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_a_hand_written_number_or_verdict_is_reported(tmp_path, kind):
    problems = check_prose.notebook_problems(_notebook(tmp_path, PLANTED[kind]))
    assert len(problems) == 1, problems
    assert ("verdict" if kind in ("verdict", "reproduced") else "number") in problems[0]
    assert check_prose.main(["check_prose", str(tmp_path / "99_synthetic.py")]) == 1


@pytest.mark.parametrize("kind", sorted(GLUED))
def test_the_same_sentence_with_roles_passes(tmp_path, kind):
    path = _notebook(tmp_path, GLUED[kind])
    assert check_prose.notebook_problems(path) == []
    assert check_prose.main(["check_prose", str(path)]) == 0


def test_references_names_criteria_and_code_pass(tmp_path):
    text = ("As in Fig. 2 and Sec. 3.1 of {cite:t}`xiao2023compact`, ResNet20 on CIFAR-10 (chapter 07).\n"
            "The claim holds only when the whole interval lies below the threshold.\n"
            "We run `python -m symlib run x --set nets=16` and plot $\\lambda = 0.5$.")
    assert check_prose.notebook_problems(_notebook(tmp_path, text)) == []


def test_only_markdown_cells_are_read(tmp_path):
    path = _notebook(tmp_path, "Nothing to report here.")
    path.write_text(path.read_text() + "\n# %%\nprint('the claim holds: 0.012')\n")
    assert check_prose.notebook_problems(path) == []


CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_passes_the_prose_check(path):
    problems = check_prose.notebook_problems(path)
    assert not problems, f"{len(problems)} hand-written number(s) or verdict(s):\n" + "\n".join(problems)
