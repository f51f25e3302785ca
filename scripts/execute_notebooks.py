"""Execute notebooks from their reviewed .py source and store the outputs in the paired .ipynb.

    python scripts/execute_notebooks.py notebooks/01_permutation_symmetry.py [...]

Reads the py:percent source with jupytext, executes it in the notebooks/ folder with the
current Python's kernel, keeps only ``tags`` in cell metadata (no timings or other
run-dependent metadata), and writes the .ipynb; the pair stays in sync.

    python scripts/execute_notebooks.py --record "make sync, empty cache, nothing else running" notebooks/*.py

also appends the execution's seconds per chapter, with the date, the commit (and whether the
tree was clean) and the words given, to ``book/timings.json``, the record that
``book/running.md`` shows (``book/_ext/records.py``) and that states the time budgets. After
the chapters it measures the machine's rate on chapter 10's OptuNets
(``benchmarks/bench_train_many.py``, :data:`BENCH`, a few seconds) and keeps it in the
run, so that executions on different machines, or on one machine at a busy hour, can be
compared.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient


def execute(src: Path, timeout: int) -> float:
    """Execute one notebook source and write its paired .ipynb with the outputs.

    Args:
        src: the ``notebooks/NN_name.py`` source.
        timeout: seconds allowed per cell.

    Returns:
        The execution's wall time in seconds.
    """
    nb = jupytext.read(src)
    start = time.time()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(src.parent)}}).execute()
    elapsed = time.time() - start
    for cell in nb.cells:
        cell.metadata = nbformat.NotebookNode({k: v for k, v in cell.metadata.items() if k == "tags"})
    nb.metadata.pop("language_info", None)
    jupytext.write(nb, src.with_suffix(".ipynb"))
    return elapsed


TIMINGS = Path(__file__).resolve().parents[1] / "book" / "timings.json"

#: the rate kept with a recorded run: ``bench_train_many.py`` on 3 OptuNets (chapter 10's
#: stack) at the authors' recipe, 4,096 images x 3 epochs, best of 3 runs after compilation
BENCH = ["--stacks", "3", "--images", "4096", "--epochs", "3", "--repeats", "3"]


def bench_rate(root: Path = TIMINGS.parents[1]) -> dict:
    """The machine's training rate now: ``benchmarks/bench_train_many.py`` with :data:`BENCH`.

    Returns:
        Its ``RESULT`` record (``images_per_s``, ``networks``, ``images``, ...).

    Raises:
        RuntimeError: if the benchmark fails or prints no result.
    """
    cmd = [sys.executable, str(root / "benchmarks" / "bench_train_many.py"), *BENCH, "--json"]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    results = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not results:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return results[-1]


def git_state(root: Path = TIMINGS.parents[1]) -> dict:
    """The commit checked out in ``root`` and whether its tracked files are unmodified."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "clean": git("status", "--porcelain", "--untracked-files=no") == ""}


def record_timings(seconds: dict[str, float], how: str, path: Path = TIMINGS, state: dict | None = None,
                   bench: dict | None = None) -> dict:
    """Append one execution (seconds per chapter) to the timings record.

    Args:
        seconds: chapter name (the notebook's stem) -> wall seconds.
        how: how it was run (cache state, machine load), in words.
        path: the record (a JSON object with ``budget`` and ``runs``).
        state: the :func:`git_state` the chapters ran from (taken before executing them, since
            the execution rewrites the .ipynb files); default: the state now.
        bench: the machine's rate (:func:`bench_rate`), kept as ``run["bench_train_many"]``
            with the benchmark's arguments; None: not measured.

    Returns:
        The run appended.

    Raises:
        ValueError: if ``how`` is empty or ``seconds`` is.
    """
    if not how.strip() or not seconds:
        raise ValueError("a timing record needs the chapters' seconds and how they were run")
    state = state or git_state(path.parents[1])
    data = json.loads(path.read_text())
    run = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), **state, "how": how.strip(),
           "chapters": {k: round(float(v), 1) for k, v in seconds.items()}}
    if bench is not None:
        run["bench_train_many"] = {"images_per_s": round(float(bench["images_per_s"])), "args": " ".join(BENCH)}
    data["runs"].append(run)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return run


def main(argv: list[str] | None = None) -> int:
    """Execute the notebooks named on the command line.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        0; a bad source exits through argparse with status 2.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="+", type=Path, help="notebooks/NN_name.py files")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (default 900)")
    parser.add_argument("--record", metavar="HOW", help="append the seconds per chapter to "
                        "book/timings.json, with HOW (e.g. 'empty cache, nothing else running')")
    args = parser.parse_args(argv)
    for src in args.sources:
        if src.suffix != ".py" or not src.exists():
            parser.error(f"{src}: expected an existing notebooks/NN_name.py source")
    state = git_state() if args.record else None
    seconds = {}
    for src in args.sources:
        seconds[src.stem] = execute(src, args.timeout)
        print(f"{src}: executed in {seconds[src.stem]:.1f} s", flush=True)
    print(f"total: {sum(seconds.values()):.1f} s")
    if args.record:
        bench = bench_rate()
        print(f"bench_train_many {' '.join(BENCH)}: {bench['images_per_s']:,.0f} images/s")
        record_timings(seconds, args.record, state=state, bench=bench)
        print(f"recorded in {TIMINGS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
