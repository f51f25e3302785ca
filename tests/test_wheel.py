"""The library as a user installs it: a wheel, in a clean virtual environment, without the book.

Builds the wheel of this checkout, installs it (and only its declared dependencies, from the
package registry or pip's cache) into a new virtual environment without the book and test
extras, and runs the README's quickstart there, from a directory outside the checkout so that
``import symlib`` can only find the installed wheel. Also checks that the wheel carries the
shipped MNIST subset, that the book's packages are not installed with it, and reports the
time of ``import symlib.symmetry`` in that environment (the figure quoted in the README).
"""
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of a clean venv with the symlib wheel installed, a working directory outside the repo)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    # Build from a private copy of what the wheel is made of: setuptools writes build/ and
    # *.egg-info/ beside pyproject.toml, and two pytest-xdist workers building in the checkout
    # at once remove each other's build/bdist.* (a CI run failed so).
    src = base / "src"
    shutil.copytree(ROOT / "symlib", src / "symlib", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    # --no-build-isolation: build with the setuptools of this environment (no download needed)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(src)])
    wheels = list(dist.glob("symlib-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheels[0])])
    work = base / "work"
    work.mkdir()
    return py, work, wheels[0]


def test_wheel_ships_the_mnist_subset(installed):
    import zipfile

    names = zipfile.ZipFile(installed[2]).namelist()
    assert any(re.match(r"symlib/_data/.*\.gz$", n) for n in names), "the wheel lacks symlib/_data/*.gz"
    assert not any(n.startswith(("notebooks/", "book/", "tests/")) for n in names), "the wheel carries the book"


def test_wheel_installs_the_library_without_the_book(installed):
    py, work, _ = installed
    listed = _run([str(py), "-m", "pip", "list", "--format=freeze"], cwd=work).lower()
    for book_only in ("jupyter-book", "jupytext", "nbval", "pytest", "selenium"):
        assert f"\n{book_only}==" not in f"\n{listed}", f"{book_only} was installed with the library"
    where = _run([str(py), "-c", "import symlib, os; print(os.path.dirname(symlib.__file__))"], cwd=work).strip()
    assert str(ROOT) not in where, f"symlib was imported from the checkout ({where}), not the wheel"


def test_readme_quickstart_runs_from_the_wheel(installed):
    py, work, _ = installed
    section = (ROOT / "README.md").read_text().split("## symlib as a library: a quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (work / "quickstart.py").write_text(code)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SYMLIB_DATA_DIR")}
    out = _run([str(py), "quickstart.py"], cwd=work, env=env, timeout=900)
    before, after = map(float, re.search(r"barrier ([\d.]+) -> ([\d.]+) nats", out).groups())
    assert after < before, out


def test_import_of_symmetry_is_fast(installed):
    py, work, _ = installed
    code = ("import time; t = time.perf_counter(); import symlib.symmetry; "
            "print(f'{time.perf_counter() - t:.3f}')")
    _run([str(py), "-c", code], cwd=work)                        # first import: compile the .pyc files
    seconds = min(float(_run([str(py), "-c", code], cwd=work)) for _ in range(3))
    print(f"import symlib.symmetry in a clean venv: {seconds:.2f} s (best of 3)")
    # JAX itself takes most of it; 10 s would mean the library imports something heavy eagerly
    assert seconds < 10, seconds
