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
    assert "BROKEN" not in res.stdout and "Contracts: 3 kept, 0 broken." in res.stdout, res.stdout


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
