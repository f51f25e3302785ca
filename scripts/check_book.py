"""Check the built HTML book: every notebook in _toc.yml rendered, with figures and no errors.

    python scripts/check_book.py [_build/html]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml


def toc_files(toc: Path) -> list[str]:
    """The notebook entries of the book's table of contents.

    Args:
        toc: the ``_toc.yml`` file.

    Returns:
        The ``notebooks/...`` file entries, in order.
    """
    files = re.findall(r"file:\s*(\S+)", toc.read_text())
    return [f for f in files if f.startswith("notebooks/")]


def problems(html_root: Path, toc: Path) -> list[str]:
    """What is wrong with the rendered notebook pages.

    Args:
        html_root: the built HTML book (``_build/html``).
        toc: the ``_toc.yml`` file.

    Returns:
        One message per problem: a missing page, a page without a figure, or a page
        showing a traceback.
    """
    found = []
    for doc in toc_files(toc):
        page = html_root / f"{doc}.html"
        if not page.exists():
            found.append(f"{page}: missing")
            continue
        html = page.read_text()
        if "<img" not in html:
            found.append(f"{page}: no figure rendered (was the notebook executed with a non-inline matplotlib backend?)")
        if "Traceback (most recent call last)" in html:
            found.append(f"{page}: shows a traceback")
    return found


def main(argv: list[str]) -> int:
    """Check the book and print the problems.

    Args:
        argv: ``[program, html_root]`` (``html_root`` defaults to ``_build/html``).

    Returns:
        0 when there is no problem, else 1.
    """
    html_root = Path(argv[1] if len(argv) > 1 else "_build/html")
    toc = Path("_toc.yml")
    yaml.safe_load(toc.read_text())  # fail loudly on a malformed TOC
    found = problems(html_root, toc)
    for p in found:
        print(p, file=sys.stderr)
    print(f"checked {len(toc_files(toc))} notebook pages under {html_root}: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
