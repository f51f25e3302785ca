"""scripts/check_prose.py (run by ``make test``): a number or a verdict of ours written by hand
in a chapter's markdown is reported, the same sentence with ``{glue:text}`` / ``{paper}``
roles is not; a ``{paper}`` or ``{repo}`` value that symlib.experiments.report.paper_facts does not
register is reported; the landing page follows the number rules; and every chapter of the
book and the landing page pass."""
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


@pytest.mark.parametrize("role, value", [("paper", "97.8%"), ("paper", "3.8"), ("repo", "0.5"), ("repo", "1,000")])
def test_an_unregistered_quoted_value_is_reported(tmp_path, role, value):
    """A value in ``{paper}`` that no paper fact quotes (a ratio of ours, a setting the paper
    does not state) fails, and so does a ``{repo}`` value that no repo fact holds (``1,000``
    is a paper's value, not the code's); the message names the chapter, the cell and the value."""
    path = _notebook(tmp_path, f"The paper reports {{{role}}}`{value}` for its ensemble.")
    problems = check_prose.notebook_problems(path)
    assert len(problems) == 1, problems
    assert problems[0].startswith("99_synthetic.py, cell 1: line 1: ") and f"{{{role}}}`{value}`" in problems[0]
    assert "not registered" in problems[0]
    assert check_prose.main(["check_prose", str(path)]) == 1


def test_registered_paper_and_repo_values_pass(tmp_path):
    text = ("The authors train for {paper}`60` epochs at learning rate {paper}`0.04` with weight decay "
            "{repo}`2e-4` (their code), the paper's {paper}`1,000` checkpoints.")
    path = _notebook(tmp_path, text)
    assert check_prose.notebook_problems(path) == []
    assert check_prose.main(["check_prose", str(path)]) == 0


def test_a_role_shown_as_code_is_not_read(tmp_path):
    path = _notebook(tmp_path, "Mark a paper's number as `` {paper}`97.8%` `` in the prose.")
    assert check_prose.notebook_problems(path) == []


PAGE = """# A landing page

Every chapter is executed with the `quick` profile ({doc}`running`); see Fig. 2 and
Sec. 3.1 of {cite:t}`xiao2023compact`, and chapters 2, 3 and 7.

| paper | chapter | numbers shown |
| --- | --- | --- |
| Sec. 5.1, Tables 1-2 | {doc}`7. VI <../notebooks/07_vi_alignment_barriers>` | {sentence} |

```bash
make book   # 3 minutes
```
"""


@pytest.mark.parametrize("sentence, reported", [
    ("alignment removes 93-98% of the barrier", ["93", "98%"]),
    ("a bank of 24 OptuNets (of the paper's {paper}`1,000`)", ["24"]),
    ("a bank of OptuNets smaller than the paper's {paper}`1,000`", []),
    ("the paper's {paper}`120,000` steps", ["{paper}`120,000`"]),
])
def test_a_hand_typed_number_on_a_page_is_reported(tmp_path, sentence, reported):
    path = tmp_path / "intro.md"
    path.write_text(PAGE.replace("{sentence}", sentence))
    problems = check_prose.page_problems(path)
    assert len(problems) == (1 if reported else 0), problems
    for shown in reported:
        assert shown in problems[0] and problems[0].startswith("intro.md, line 8: ")
    assert check_prose.main(["check_prose", str(path)]) == (1 if reported else 0)


def test_a_page_may_define_the_verdicts(tmp_path):
    """The landing page defines "holds" and "differs": the verdict rule is the chapters'."""
    path = tmp_path / "intro.md"
    path.write_text(PAGE.replace("{sentence}", "holds: the whole interval lies on the paper's side"))
    assert check_prose.page_problems(path) == []


def test_the_default_run_reads_the_chapters_and_the_pages():
    assert {ROOT / "book" / "intro.md", ROOT / "book" / "running.md"} <= set(check_prose.PAGES)


@pytest.mark.parametrize("page", ["intro.md", "running.md"])
def test_the_pages_pass_the_number_rules(page):
    problems = check_prose.page_problems(ROOT / "book" / page)
    assert not problems, f"{len(problems)} hand-written number(s) on {page}:\n" + "\n".join(problems)


def test_a_measured_time_typed_into_running_md_is_reported(tmp_path):
    """The page's numbers about runs come from their records (book/_ext/records.py): a time
    typed by hand, as the page had before issue 43, fails the check."""
    text = (ROOT / "book" / "running.md").read_text()
    path = tmp_path / "running.md"
    path.write_text(text.replace("```{book-timings}\n```", "The book took 473 s (7.9 minutes)."))
    problems = check_prose.page_problems(path)
    assert len(problems) == 1 and "473" in problems[0] and "7.9" in problems[0]


def test_the_timing_record_states_the_budgets_and_each_run():
    import json

    data = json.loads((ROOT / "book" / "timings.json").read_text())
    assert data["budget"]["chapter_s"] > 0 and data["budget"]["book_s"] > data["budget"]["chapter_s"]
    for run in data["runs"]:
        assert run["how"] and run["commit"] and run["date"] and run["chapters"]
        assert all(name[:2].isdigit() and seconds > 0 for name, seconds in run["chapters"].items())


CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_passes_the_prose_check(path):
    problems = check_prose.notebook_problems(path)
    assert not problems, f"{len(problems)} hand-written number(s) or verdict(s):\n" + "\n".join(problems)


def _execute_notebooks():
    """scripts/execute_notebooks.py as a module."""
    import sys

    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    # its (spawned) worker processes import it by name to find their functions
    sys.modules["execute_notebooks"] = module
    if str(ROOT / "scripts") not in sys.path:
        sys.path.append(str(ROOT / "scripts"))
    spec.loader.exec_module(module)
    return module


def test_execute_notebooks_records_a_run(tmp_path):
    """scripts/execute_notebooks.py --record appends the seconds, the date and the commit."""
    import json
    import subprocess

    module = _execute_notebooks()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    (tmp_path / "book").mkdir()
    path = tmp_path / "book" / "timings.json"
    path.write_text(json.dumps({"budget": {"chapter_s": 120, "book_s": 480}, "runs": []}))
    run = module.record_timings({"01_a": 6.04, "02_b": 7.0}, "empty cache", path)
    data = json.loads(path.read_text())
    assert data["runs"] == [run] and run["chapters"] == {"01_a": 6.0, "02_b": 7.0} and run["clean"] is True
    assert len(run["commit"]) == 40 and run["how"] == "empty cache"
    with pytest.raises(ValueError, match="how they were run"):
        module.record_timings({"01_a": 1.0}, " ", path)
    run = module.record_timings({"01_a": 6.0}, "with the rate", path, bench={"images_per_s": 61234.6, "networks": 3})
    assert run["bench_train_many"] == {"images_per_s": 61235, "args": " ".join(module.BENCH)}
    assert json.loads(path.read_text())["runs"][-1] == run
    with pytest.raises(RuntimeError, match="bench_train_many.py .* failed"):
        module.bench_rate(tmp_path)  # no benchmarks/ there


def test_a_run_of_chapters_at_once_records_its_wall_time(tmp_path):
    import json

    module = _execute_notebooks()
    path = tmp_path / "timings.json"
    path.write_text(json.dumps({"budget": {}, "runs": []}))
    with pytest.raises(ValueError, match="wall time"):
        module.record_timings({"01_a": 6.0}, "two at once", path, state={"commit": "c", "clean": True}, jobs=2)
    run = module.record_timings({"01_a": 6.0, "02_b": 9.0}, "two at once", path, state={"commit": "c", "clean": True},
                                jobs=2, wall_s=10.04)
    assert run["jobs"] == 2 and run["wall_s"] == 10.0
    one = module.record_timings({"01_a": 6.0}, "alone", path, state={"commit": "c", "clean": True})
    assert "jobs" not in one and "wall_s" not in one


def test_longest_first_orders_by_the_last_record(tmp_path):
    import json

    module = _execute_notebooks()
    path = tmp_path / "timings.json"
    path.write_text(json.dumps({"runs": [{"chapters": {"01_a": 50.0, "02_b": 1.0}},
                                         {"chapters": {"01_a": 5.0, "02_b": 9.0, "03_c": 7.0}}]}))
    names = ["01_a", "02_b", "03_c", "04_new"]
    order = module.longest_first([Path(f"notebooks/{n}.py") for n in names], path)
    assert [p.stem for p in order] == ["04_new", "02_b", "03_c", "01_a"]  # unknown first, then the last run's
    assert all((ROOT / "notebooks" / f"{name}.py").exists() for name in module.ALONE_AFTER_THE_OTHERS)  # not renamed


_TINY = {  # py:percent sources: chapters (one failing), then the two that run alone, each reading what the
    # chapters before it leave at their end (a missing file fails the notebook)
    "01_a": "# %%\nimport time\ntime.sleep(2)\nx = 1\n# %%\nprint(x * 2)\nopen('left_by_a.txt', 'w').write('a')\n",
    "02_b": "# %%\nx = 21\n# %%\nprint(x * 2)\n",
    "03_bad": "# %%\nx = 1 / 0\n# %%\nprint(x)\n",
    "08_alignment_timings": "# %%\nimport time\ntime.sleep(1)\nx = open('left_by_a.txt').read() + '8'\n"
                            "# %%\nprint(x)\nopen('left_by_08.txt', 'w').write(x)\n",
    "14_reproduction_report": "# %%\nx = open('left_by_08.txt').read()\n# %%\nprint(x)\n",
}


def test_jupyter_cache_mode_stores_what_jupyter_book_matches_and_skips_it_next_time(tmp_path, capsys):
    """--jupyter-cache --jobs 2: the build's cache then holds each notebook, as myst-nb looks it
    up; the timing chapter and the report run after the others; a failure is reported and the
    others are kept."""
    import jupytext
    import nbformat
    from jupyter_cache import get_cache

    module = _execute_notebooks()
    sources = []
    for name, text in _TINY.items():
        src = tmp_path / f"{name}.py"
        src.write_text(text)
        nb = jupytext.read(src)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        jupytext.write(nb, src.with_suffix(".ipynb"))
        sources.append(src)
    cache_dir = tmp_path / "jc"
    argv = ["--jobs", "2", "--jupyter-cache", str(cache_dir), *map(str, sources)]
    assert module.main(argv) == 1  # 03_bad fails; the others are executed and kept
    out = capsys.readouterr()
    assert "03_bad.py: FAILED" in out.out and "ZeroDivisionError" in out.err
    cache = get_cache(str(cache_dir))
    for src, printed in ((sources[0], "2"), (sources[1], "42"), (sources[3], "a8"), (sources[4], "a8")):
        ipynb = src.with_suffix(".ipynb")
        assert cache.match_cache_notebook(nbformat.read(ipynb, as_version=4)) is not None
        _, merged = cache.merge_match_into_notebook(nbformat.read(ipynb, as_version=4))
        assert merged.cells[-1].outputs[0]["text"].strip() == printed
    good = [str(sources[i]) for i in (0, 1, 3, 4)]
    assert module.main([*argv[:4], *good]) == 0  # all held already: nothing executed
    out = capsys.readouterr().out
    assert out.count("unchanged, already in") == 4 and "executed in" not in out
    with pytest.raises(SystemExit) as exit_:
        module.main(["--jobs", "0", str(sources[0])])
    assert exit_.value.code == 2
    given = [sources[4], sources[1], sources[3]]  # 14, 02_b, 08 (their files exist by now)
    assert module.main(["--jupyter-cache", str(tmp_path / "jc1"), *map(str, given)]) == 0
    out = capsys.readouterr().out
    assert [out.index(f"{src}: executed") for src in given] == sorted(out.index(f"{src}: executed") for src in given)


@pytest.mark.slow  # a few seconds of training (make test runs it; make test-fast does not)
def test_bench_rate_measures_the_machine():
    module = _execute_notebooks()
    rate = module.bench_rate()
    assert rate["networks"] == 3 and rate["images"] == 4096 and rate["images_per_s"] > 100


def test_bench_rate_runs_fully_optimized_whatever_the_caller_asks(monkeypatch):
    """The rate describes the machine the chapters ran on, so the benchmark compiles as they do:
    not with the less optimized XLA the unit tests ask for (tests/conftest.py)."""
    import os
    import subprocess

    module = _execute_notebooks()
    seen = {}

    def run(cmd, **kw):
        seen.update(kw["env"])
        return subprocess.CompletedProcess(cmd, 0, 'RESULT {"images_per_s": 1.0}\n', "")

    monkeypatch.setenv("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
    monkeypatch.setattr(module.subprocess, "run", run)
    assert module.bench_rate() == {"images_per_s": 1.0}
    assert seen["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "0" and seen["PATH"] == os.environ["PATH"]


def test_a_cached_chapter_runs_again_when_its_inputs_change(tmp_path, monkeypatch):
    """make book skips a chapter held in Jupyter Book's cache only while its inputs besides its
    code (symlib's source, book/results/, gpu/) are those of the cached execution."""
    from symlib.experiments import cache

    module = _execute_notebooks()
    (tmp_path / "book" / "results").mkdir(parents=True)
    (tmp_path / "gpu" / "job").mkdir(parents=True)
    (tmp_path / "book" / "results" / "a-paper.json").write_text("{}")
    before = module.inputs_digest(tmp_path)
    assert module.inputs_digest(tmp_path) == before
    (tmp_path / "gpu" / "job" / "step-0000.json").write_text("{}")  # a step folded
    after = module.inputs_digest(tmp_path)
    assert after != before
    monkeypatch.setattr(cache, "code_version", lambda: "0.1.0+edited")
    assert module.inputs_digest(tmp_path) not in (before, after)
    src = tmp_path / "01_a.py"
    monkeypatch.setattr(module, "jupyter_cache_notebook", lambda path: path)
    monkeypatch.setattr(module, "_in_cache", lambda jc, nb: True)  # the code is in the cache
    assert module.held_in_cache(None, [src], {"01_a": before}, after) == []
    assert module.held_in_cache(None, [src], {}, after) == []
    assert module.held_in_cache(None, [src], {"01_a": after}, after) == [src]
    monkeypatch.setattr(module, "_in_cache", lambda jc, nb: False)  # the code changed
    assert module.held_in_cache(None, [src], {"01_a": after}, after) == []
