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
        if doc == REPORT:
            found += [f"{page}: {p}" for p in report_problems(html)]
    return found


#: the reproduction report's page
REPORT = "notebooks/14_reproduction_report"


def report_problems(html: str) -> list[str]:
    """What is wrong with the rendered reproduction report: its short tables
    (``symlib.experiments.report.page.report_html``) or their collapsible details missing, or a
    verdict written as "reproduced" (every verdict is one of the claims' four, with its scale).

    Args:
        html: the page's HTML.

    Returns:
        One message per problem.
    """
    found = []
    if html.count('class="report-table"') < 3:
        found.append("fewer than three report tables (one per paper)")
    if "<details" not in html:
        found.append("no collapsible details")
    if re.search(r"\breproduced \(", html):
        found.append("a status reads 'reproduced (...)': verdicts come from claims.Verdict with their scale")
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
