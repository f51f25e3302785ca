"""Check the built HTML book: every notebook in _toc.yml rendered, with figures and no errors.

    python scripts/check_book.py [_build/html]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml


def toc_files(toc: Path) -> list[str]:
    files = re.findall(r"file:\s*(\S+)", toc.read_text())
    return [f for f in files if f.startswith("notebooks/")]


def problems(html_root: Path, toc: Path) -> list[str]:
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
