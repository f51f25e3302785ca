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

    python scripts/execute_notebooks.py --jobs 2 --jupyter-cache _build/.jupyter_cache notebooks/*.py

(``make book``) executes two notebooks at a time, the longest first (by the last recorded
run), and stores them in Jupyter Book's execution cache instead of the .ipynb files, so that
``jupyter-book build`` finds every chapter executed; a notebook already in that cache with
the same code and the same inputs is skipped, as the build itself would skip it (a chapter's
inputs besides its code, :func:`inputs_digest`: symlib's source, ``book/results/`` and
``gpu/``; a saved run added or a claim changed runs the chapters again, which Jupyter Book's
cache, keyed by the code alone, would not). Chapters executed together
share the artifact cache safely: an artifact two of them need is computed once
(:func:`symlib.experiments.cache.cached` locks it); the chapter that times its alignments
and the report (:data:`ALONE_AFTER_THE_OTHERS`) run alone, after the others. A chapter's
seconds then include the time it shared the two cores (an upper bound of its time alone);
the total printed (and recorded with ``--record``, as ``wall_s``) is the wall time of the
whole execution.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient


def _run(nb: nbformat.NotebookNode, cwd: Path, timeout: int) -> float:
    """Execute ``nb`` in place in a fresh kernel working in ``cwd``; the wall seconds.

    No timings are added to the cells' metadata (``record_timing=False``): the .ipynb keeps
    only tags, and Jupyter Book's cache matches a notebook by its code and cell metadata.
    """
    start = time.time()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return time.time() - start


def execute(src: Path, timeout: int) -> tuple[float, nbformat.NotebookNode]:
    """Execute one notebook source and write its paired .ipynb with the outputs.

    Args:
        src: the ``notebooks/NN_name.py`` source.
        timeout: seconds allowed per cell.

    Returns:
        The execution's wall time in seconds, and the executed notebook.
    """
    nb = jupytext.read(src)
    elapsed = _run(nb, src.parent, timeout)
    for cell in nb.cells:
        cell.metadata = nbformat.NotebookNode({k: v for k, v in cell.metadata.items() if k == "tags"})
    nb.metadata.pop("language_info", None)
    jupytext.write(nb, src.with_suffix(".ipynb"))
    return elapsed, nb


#: notebooks that ``--jobs`` executes alone, after the others, in this order: chapter 08
#: judges claims on the CPU time of its alignments, which a chapter executed beside it
#: would lengthen (measured: one ratio fell from 1.27x to 0.52x and its verdict changed);
#: chapter 14 reports what the others stored in the artifact cache, chapter 08's included
ALONE_AFTER_THE_OTHERS = ("08_alignment_timings", "14_reproduction_report")


def longest_first(sources: list[Path], path: Path | None = None) -> list[Path]:
    """``sources`` ordered by their seconds in the last recorded run, longest first.

    A chapter the record does not have comes first (its time is unknown); ties keep the
    given order. Two chapters executed at once finish soonest when the long ones start
    first.

    Args:
        sources: the notebooks' .py sources.
        path: the timings record (default :data:`TIMINGS`).

    Returns:
        The same sources, reordered.
    """
    runs = json.loads((path or TIMINGS).read_text())["runs"]
    last = runs[-1]["chapters"] if runs else {}
    return sorted(sources, key=lambda src: -last.get(src.stem, float("inf")))


def jupyter_cache_notebook(src: Path) -> nbformat.NotebookNode:
    """The notebook Jupyter Book reads for ``src``: its paired .ipynb.

    Raises:
        FileNotFoundError: if the .ipynb is missing (``make sync`` writes it).
    """
    ipynb = src.with_suffix(".ipynb")
    if not ipynb.exists():
        raise FileNotFoundError(f"{ipynb}: missing; Jupyter Book reads it (make sync NB={src} writes it)")
    return nbformat.read(ipynb, as_version=4)


def _execute_for_cache(src: Path, timeout: int) -> tuple[float, nbformat.NotebookNode]:
    """Execute the .ipynb Jupyter Book reads (in a worker process); its seconds and the notebook."""
    nb = jupyter_cache_notebook(src)
    return _run(nb, src.parent, timeout), nb


def _in_cache(cache, nb: nbformat.NotebookNode) -> bool:
    """Whether a Jupyter Book execution cache holds ``nb``'s code executed (its own test)."""
    try:
        return cache.match_cache_notebook(nb) is not None
    except KeyError:  # jupyter-cache's answer for "not held"
        return False


#: the file in a Jupyter Book execution cache folder that keeps, per chapter, the
#: :func:`inputs_digest` its cached execution read
INPUTS_STAMP = "symlib-inputs.json"


def inputs_digest(root: Path | None = None) -> str:
    """What a chapter's outputs depend on besides its code: symlib's source (its code hash,
    :func:`symlib.experiments.cache.code_version`) and every file of the saved results and of
    the GPU queue (``book/results/``, ``gpu/``) under ``root`` (default: this repository)."""
    from symlib.experiments.cache import code_version

    root = TIMINGS.parents[1] if root is None else Path(root)
    h = hashlib.sha256(code_version().encode())
    for folder in ("book/results", "gpu"):
        for path in sorted(p for p in (root / folder).rglob("*") if p.is_file()):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def held_in_cache(cache, sources: list[Path], stamp: dict[str, str], digest: str) -> list[Path]:
    """The sources a Jupyter Book execution cache holds executed with their code now and with
    the inputs now (``stamp[stem] == digest``: :data:`INPUTS_STAMP`)."""
    return [src for src in sources if stamp.get(src.stem) == digest and _in_cache(cache, jupyter_cache_notebook(src))]


def run_all(sources: list[Path], timeout: int, jobs: int, jupyter_cache: Path | None) -> tuple[dict[str, float], list[str]]:
    """Execute ``sources``, ``jobs`` at a time, and print each one's seconds as it ends.

    Args:
        sources: the .py sources, in the order to start them.
        timeout: seconds allowed per cell.
        jobs: notebooks executed at once (each in its own kernel).
        jupyter_cache: store the executed notebooks in this Jupyter Book execution cache
            (skipping those it already holds with the same code and inputs,
            :func:`held_in_cache`) instead of writing the .ipynb.

    Returns:
        Seconds per executed chapter (its stem), and the chapters that failed, each with
        its error.
    """
    cache = None
    if jupyter_cache is not None:
        from jupyter_cache import get_cache

        cache = get_cache(str(jupyter_cache))
        stamp_path = Path(jupyter_cache) / INPUTS_STAMP
        stamp = json.loads(stamp_path.read_text()) if stamp_path.exists() else {}
        digest = inputs_digest()
        held = held_in_cache(cache, sources, stamp, digest)
        for src in held:
            print(f"{src}: unchanged, already in {jupyter_cache} (same code, symlib and saved results)", flush=True)
        sources = [src for src in sources if src not in held]
    seconds, failed = {}, []
    work = _execute_for_cache if cache is not None else execute
    alone = ALONE_AFTER_THE_OTHERS if jobs > 1 else ()  # one at a time: in the order given
    waves = [[s for s in sources if s.stem not in alone], *([s for s in sources if s.stem == name] for name in alone)]
    # spawned, not forked, workers: a parent that has started JAX's threads (a test process, or a
    # caller that imported symlib) must not fork (Python warns that the child may deadlock)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for wave in waves:
            futures = {pool.submit(work, src, timeout): src for src in wave}
            for future in as_completed(futures):
                src = futures[future]
                try:
                    elapsed, nb = future.result()
                except Exception as err:  # noqa: BLE001 - reported with the chapter, the others go on
                    failed.append(f"{src}: {type(err).__name__}: {str(err)[-2000:]}")
                    print(f"{src}: FAILED ({type(err).__name__})", flush=True)
                    continue
                if cache is not None:
                    from jupyter_cache.base import CacheBundleIn

                    cache.cache_notebook_bundle(CacheBundleIn(nb, str(src.with_suffix(".ipynb").resolve()),
                                                              data={"execution_seconds": elapsed}),
                                                check_validity=False, overwrite=True)
                    stamp[src.stem] = digest
                    stamp_path.write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
                seconds[src.stem] = elapsed
                print(f"{src}: executed in {elapsed:.1f} s", flush=True)
    return seconds, failed


TIMINGS = Path(__file__).resolve().parents[1] / "book" / "timings.json"

#: the rate kept with a recorded run: ``bench_train_many.py`` on 3 OptuNets (chapter 10's
#: stack) at the authors' recipe, 4,096 images x 3 epochs, best of 3 runs after compilation
BENCH = ["--stacks", "3", "--images", "4096", "--epochs", "3", "--repeats", "3"]


def bench_rate(root: Path = TIMINGS.parents[1]) -> dict:
    """The machine's training rate now: ``benchmarks/bench_train_many.py`` with :data:`BENCH`.

    The benchmark runs with XLA's full optimization, as the chapters do, whatever the caller's
    environment says (the unit tests ask for less, ``tests/conftest.py``): the rate describes the
    machine the chapters ran on.

    Returns:
        Its ``RESULT`` record (``images_per_s``, ``networks``, ``images``, ...).

    Raises:
        RuntimeError: if the benchmark fails or prints no result.
    """
    cmd = [sys.executable, str(root / "benchmarks" / "bench_train_many.py"), *BENCH, "--json"]
    env = {**os.environ, "JAX_DISABLE_MOST_OPTIMIZATIONS": "0"}
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
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
                   bench: dict | None = None, jobs: int = 1, wall_s: float | None = None) -> dict:
    """Append one execution (seconds per chapter) to the timings record.

    Args:
        seconds: chapter name (the notebook's stem) -> wall seconds.
        how: how it was run (cache state, machine load), in words.
        path: the record (a JSON object with ``budget`` and ``runs``).
        state: the :func:`git_state` the chapters ran from (taken before executing them, since
            the execution rewrites the .ipynb files); default: the state now.
        bench: the machine's rate (:func:`bench_rate`), kept as ``run["bench_train_many"]``
            with the benchmark's arguments; None: not measured.
        jobs: chapters executed at once; above 1 the run keeps ``jobs`` and ``wall_s``.
        wall_s: the whole execution's wall time (needed when ``jobs`` > 1, where it is less
            than the chapters' sum).

    Returns:
        The run appended.

    Raises:
        ValueError: if ``how`` is empty or ``seconds`` is.
    """
    if not how.strip() or not seconds:
        raise ValueError("a timing record needs the chapters' seconds and how they were run")
    if jobs > 1 and wall_s is None:
        raise ValueError(f"chapters executed {jobs} at a time: the record needs the wall time (wall_s)")
    state = state or git_state(path.parents[1])
    data = json.loads(path.read_text())
    run = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), **state, "how": how.strip(),
           "chapters": {k: round(float(v), 1) for k, v in seconds.items()}}
    if jobs > 1:
        run.update(jobs=jobs, wall_s=round(float(wall_s), 1))
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
        0; 1 if a notebook failed (the others are executed and kept; the errors are printed);
        a bad source or option exits through argparse with status 2.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="+", type=Path, help="notebooks/NN_name.py files")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (default 900)")
    parser.add_argument("--record", metavar="HOW", help="append the seconds per chapter to "
                        "book/timings.json, with HOW (e.g. 'empty cache, nothing else running')")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once, the longest "
                        "first (default 1: one after another, in the order given)")
    parser.add_argument("--jupyter-cache", type=Path, metavar="DIR", help="store the executed "
                        "notebooks in Jupyter Book's execution cache DIR (make book: _build/.jupyter_cache) "
                        "instead of the .ipynb files; notebooks it holds unchanged are skipped")
    args = parser.parse_args(argv)
    for src in args.sources:
        if src.suffix != ".py" or not src.exists():
            parser.error(f"{src}: expected an existing notebooks/NN_name.py source")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: expected at least 1")
    sources = longest_first(args.sources) if args.jobs > 1 else list(args.sources)
    state = git_state() if args.record else None
    start = time.time()
    seconds, failed = run_all(sources, args.timeout, args.jobs, args.jupyter_cache)
    wall = time.time() - start
    print(f"total: {sum(seconds.values()):.1f} s" + (f" of chapters, {wall:.1f} s wall time, {args.jobs} at a time"
                                                     if args.jobs > 1 else ""))
    if failed:
        print("failed:\n" + "\n".join(failed), file=sys.stderr)
        return 1
    if args.record:
        bench = bench_rate()
        print(f"bench_train_many {' '.join(BENCH)}: {bench['images_per_s']:,.0f} images/s")
        record_timings(seconds, args.record, state=state, bench=bench, jobs=args.jobs, wall_s=wall)
        print(f"recorded in {TIMINGS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
