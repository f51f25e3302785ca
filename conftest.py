"""pytest hooks for the nbval run over notebooks/ (`make nbval`): print each notebook's execution time at the end.

`make nbval` (part of `make test`) executes every notebook with the run's artifact cache,
in book order, so on a fresh cache these are the chapters' empty-cache times (a chapter
that reuses an earlier one's artifacts is timed as in a fresh book build). The budgets (a
chapter's and the book's, on 2 CPU cores) are stated once, in book/timings.json;
a chapter over its budget is marked, not failed: timings are too noisy for a test.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

_BUDGET = json.loads((Path(__file__).parent / "book" / "timings.json").read_text())["budget"]
BUDGET_S, BOOK_BUDGET_S = float(_BUDGET["chapter_s"]), float(_BUDGET["book_s"])
_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    """Add each cell's setup, call and teardown time to its notebook's total."""
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _seconds[Path(path).stem] += report.duration


def pytest_terminal_summary(terminalreporter):
    """The table of notebook times, with the total."""
    if not _seconds:
        return
    tr = terminalreporter
    tr.section("notebook execution times (nbval, this run's cache)")
    for name, s in _seconds.items():
        tr.write_line(f"{name:<40} {s:7.1f} s" + (f"   over the {BUDGET_S:.0f} s budget" if s > BUDGET_S else ""))
    total = sum(_seconds.values())
    tr.write_line(f"{'total':<40} {total:7.1f} s" + (f"   over the book's {BOOK_BUDGET_S:.0f} s budget"
                                                     if total > BOOK_BUDGET_S else ""))
