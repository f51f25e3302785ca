"""Execute notebooks from their reviewed .py source and store the outputs in the paired .ipynb.

    python scripts/execute_notebooks.py notebooks/01_permutation_symmetry.py [...]

Reads the py:percent source with jupytext, executes it in the notebooks/ folder with the
current Python's kernel, keeps only ``tags`` in cell metadata (no timings or other
run-dependent metadata), and writes the .ipynb; the pair stays in sync.
"""
from __future__ import annotations

import argparse
import sys
import time
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
    args = parser.parse_args(argv)
    for src in args.sources:
        if src.suffix != ".py" or not src.exists():
            parser.error(f"{src}: expected an existing notebooks/NN_name.py source")
        print(f"{src}: executed in {execute(src, args.timeout):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
