"""symlib's layering (pyproject's [tool.importlinter] contracts), checked on every test run:
each subpackage imports only the layers below it, `core` imports no other subpackage,
`data`, `symmetry` and `inference` are independent peers, `evaluation` never imports
`inference`, and no library subpackage imports the book's `experiments`."""
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("core", "data", "symmetry", "inference", "evaluation", "experiments", "testing")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports (import-linter, in the 'test' extra) is not installed")
    return subprocess.run([exe, "--no-logo", "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": str(Path(sys.executable).parent)})


def test_contracts_hold():
    res = _lint_imports(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "BROKEN" not in res.stdout and "Contracts: 4 kept, 0 broken." in res.stdout, res.stdout


def test_top_level_holds_at_most_two_modules():
    modules = sorted(p.name for p in (ROOT / "symlib").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(modules) <= 2, f"symlib/ keeps library code in subpackages; found top-level modules {modules}"
    for name in SUBPACKAGES:
        assert (ROOT / "symlib" / name / "__init__.py").exists(), f"symlib.{name} is missing"


@pytest.mark.parametrize("culprit", ["symmetry/matching/weight.py", "core/models.py", "evaluation/metrics.py"])
def test_contracts_catch_a_library_module_importing_experiments(tmp_path, culprit):
    """The check can fail: a copy of the package in which one library module imports
    symlib.experiments breaks the contracts."""
    shutil.copytree(ROOT / "symlib", tmp_path / "symlib", ignore=shutil.ignore_patterns("_data", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "symlib" / culprit
    target.write_text(target.read_text() + textwrap.dedent("""

        def _uses_the_book():
            from symlib.experiments import cache  # noqa: F401
        """))
    res = _lint_imports(tmp_path)
    assert res.returncode != 0, res.stdout
    assert "BROKEN" in res.stdout and "symlib.experiments" in res.stdout, res.stdout


@pytest.mark.parametrize("culprit, imported", [
    ("evaluation/metrics.py", "symlib.inference.vi"),        # evaluation never imports inference
    ("inference/vi.py", "symlib.symmetry.specs"),            # the peers are independent
    ("symmetry/specs.py", "symlib.data.mnist"),
    # the experiments' floors: the bench below judging, judging below the papers, the papers
    # below the report, and the papers independent of each other
    ("experiments/registry.py", "symlib.experiments.judging.claims"),
    ("experiments/judging/claims.py", "symlib.experiments.xiao.runs"),
    ("experiments/laurent/mlps.py", "symlib.experiments.report.manifest"),
    ("experiments/rossi/runs.py", "symlib.experiments.xiao.settings"),
])
def test_contracts_catch_peers_and_evaluation_importing_inference(tmp_path, culprit, imported):
    shutil.copytree(ROOT / "symlib", tmp_path / "symlib", ignore=shutil.ignore_patterns("_data", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "symlib" / culprit
    target.write_text(target.read_text() + textwrap.dedent(f"""

        def _reaches_across():
            import {imported}  # noqa: F401
        """))
    res = _lint_imports(tmp_path)
    assert res.returncode != 0, res.stdout
    assert "BROKEN" in res.stdout, res.stdout


def import_cycles(root: Path) -> list[list[str]]:
    """Cycles among the modules under ``root / "symlib"``: every ``import`` of a symlib module,
    at module level or inside a function (a circle through a lazy import is still a circle
    for whoever reads or splits the code). ``from package import submodule`` counts as an
    import of the submodule only."""
    import ast

    mods = {}
    for p in (root / "symlib").rglob("*.py"):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").startswith("symlib"):
                subs = [a for a in n.names if f"{n.module}.{a.name}" in mods]
                edges[m].update(f"{n.module}.{a.name}" for a in subs)
                if n.module in mods and len(subs) < len(n.names):
                    edges[m].add(n.module)
            elif isinstance(n, ast.Import):
                edges[m].update(a.name for a in n.names if a.name in mods)
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycles():
    assert import_cycles(ROOT) == []


def test_the_cycle_check_can_fail(tmp_path):
    shutil.copytree(ROOT / "symlib", tmp_path / "symlib", ignore=shutil.ignore_patterns("_data", "__pycache__"))
    target = tmp_path / "symlib" / "experiments" / "table.py"
    target.write_text(target.read_text() + "\n\ndef _lazy():\n    from symlib.experiments.judging import claims  # noqa: F401\n")
    assert ["symlib.experiments.judging.claims", "symlib.experiments.table"] in import_cycles(tmp_path)


#: the training loops and samplers behind the fits: private to their modules in symlib/inference
PRIVATE_LOOPS = ("train_map", "train_map_many", "train_vi", "train_swag", "train_dropout", "laplace_posterior",
                 "run_sghmc", "train_many", "train_mlp", "train_mlp_vi", "train_ensemble")


def _loop_mentions(paths) -> list[str]:
    import re

    pattern = re.compile(r"(?<![\w.\"'])(" + "|".join(PRIVATE_LOOPS) + r")\b")  # not in a string of names
    return [f"{p}:{i + 1}: {line.strip()}" for p in paths for i, line in enumerate(p.read_text().splitlines())
            if pattern.search(line)]


def test_only_inference_names_its_loops():
    """Everything outside ``symlib/inference`` (the other packages, the notebooks, benchmarks,
    scripts, tests and README) fits through ``fit_<method>``; no public loop is left to call."""
    root = Path(__file__).resolve().parents[1]
    paths = [p for d in ("symlib", "notebooks", "benchmarks", "scripts", "tests") for p in (root / d).rglob("*.py")
             if p.relative_to(root).parts[:2] != ("symlib", "inference")] + [root / "README.md"]
    assert _loop_mentions(paths) == []


def test_the_loop_check_can_fail(tmp_path):
    culprit = tmp_path / "culprit.py"
    culprit.write_text("from symlib.inference.training import " + "train_map\nx = _train_map  # private: fine\n")
    assert len(_loop_mentions([culprit])) == 1
