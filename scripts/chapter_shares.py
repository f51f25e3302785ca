"""What the chapters' code does, line by line: compute, print/format/glue, plot, imports; and how
much of it sits in hidden cells (issue 46, item 6: at most 25% formatting and plotting, at most
40% hidden).

Every top-level statement of a code cell of ``notebooks/NN_*.py`` (jupytext percent format) is
parsed with :mod:`ast`; a compound statement (``for``, ``with``, ``if``, ``try``, a function
definition) is split into its own statements, so a loop that computes and then prints counts
its lines as such. A statement is

- **plot** if it calls ``plotting.*``, ``plt.*``, a figure's or an axis's method (names
  ``fig``, ``ax``, ``axes``, ``axs``) or a function whose name holds ``plot``;
- **format** if it calls ``print``, ``display``, ``glue``, ``Table``, ``Markdown`` or ``HTML``,
  or builds text (an f-string or ``str.format``/``join`` as its whole value), and does not
  plot;
- **import** for ``import`` statements;
- **compute** otherwise (assignments, calls into symlib, asserts, loops' own lines).

A cell is hidden when it is tagged ``hide-cell``, ``hide-input``, ``remove-cell`` or
``remove-input``. Blank lines and comments are not counted.

    python scripts/chapter_shares.py            # a table per chapter and the totals
    python scripts/chapter_shares.py --json     # the same as JSON
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("compute", "format", "plot", "import")
HIDDEN_TAGS = {"hide-cell", "hide-input", "remove-cell", "remove-input"}
PLOT_ROOTS = {"plotting", "plt", "fig", "ax", "axes", "axs", "matplotlib"}
FORMAT_CALLS = {"print", "display", "glue", "Table", "Markdown", "HTML"}


def code_cells(path: Path) -> list[tuple[str, bool]]:
    """``(source, hidden)`` of every code cell of a percent-format notebook."""
    cells, current, hidden, is_code = [], [], False, False
    for line in path.read_text().splitlines() + ["# %%"]:
        if line.startswith("# %%"):
            if is_code and current:
                cells.append(("\n".join(current), hidden))
            is_code = not line.startswith("# %% [markdown]")
            tags = re.search(r'tags=\[([^\]]*)\]', line)
            hidden = bool(tags and HIDDEN_TAGS & {t.strip().strip('"\'') for t in tags.group(1).split(",")})
            current = []
        elif is_code:
            current.append(line)
    return cells


def _root_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _call_names(stmt: ast.AST) -> tuple[set[str], set[str]]:
    """The roots and the final names of every call in ``stmt``."""
    roots, names = set(), set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            roots.add(_root_name(node.func))
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    return roots, names


def classify(stmt: ast.stmt) -> str:
    """The kind of one simple statement (module docstring)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return "import"
    roots, names = _call_names(stmt)
    if roots & PLOT_ROOTS or any("plot" in n.lower() for n in names):
        return "plot"
    if names & FORMAT_CALLS:
        return "format"
    value = getattr(stmt, "value", None)
    if isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                                            and value.func.attr in ("format", "join")
                                            and isinstance(value.func.value, ast.Constant)):
        return "format"
    return "compute"


def _code_lines(stmt: ast.stmt, lines: list[str]) -> set[int]:
    return {i for i in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)
            if lines[i - 1].strip() and not lines[i - 1].strip().startswith("#")}


def _walk(stmts: list[ast.stmt], lines: list[str], out: dict[int, str]) -> None:
    for stmt in stmts:
        bodies = [getattr(stmt, f) for f in ("body", "orelse", "finalbody", "handlers") if getattr(stmt, f, None)]
        if bodies and not isinstance(stmt, ast.ClassDef):
            inner: dict[int, str] = {}
            for body in bodies:
                _walk([s for s in body if isinstance(s, ast.stmt)], lines, inner)
                for h in body:
                    if isinstance(h, ast.ExceptHandler):
                        _walk(h.body, lines, inner)
            head = _code_lines(stmt, lines) - set(inner)  # the header lines (for ..., with ..., def ...)
            kinds = list(inner.values())  # the header takes its body's most common kind (ties: KINDS order)
            head_kind = max(KINDS, key=kinds.count)
            out.update({i: head_kind for i in head})
            out.update(inner)
        else:
            out.update({i: classify(stmt) for i in _code_lines(stmt, lines)})


def chapter_shares(path: Path) -> dict[str, int]:
    """Code lines of one chapter by kind, and how many of them are hidden."""
    counts = {k: 0 for k in KINDS} | {"hidden": 0, "lines": 0}
    for source, hidden in code_cells(path):
        src = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        lines = src.splitlines()
        kinds: dict[int, str] = {}
        _walk(ast.parse(src).body, lines, kinds)
        for kind in kinds.values():
            counts[kind] += 1
        counts["lines"] += len(kinds)
        counts["hidden"] += len(kinds) if hidden else 0
    return counts


def book_shares(notebooks: Path = ROOT / "notebooks") -> dict[str, dict[str, int]]:
    """:func:`chapter_shares` of every chapter, and ``"all"`` their sum."""
    out = {p.stem: chapter_shares(p) for p in sorted(notebooks.glob("[0-9][0-9]_*.py"))}
    out["all"] = {k: sum(c[k] for c in out.values()) for k in (*KINDS, "hidden", "lines")}
    return out


def percent(counts: dict[str, int], key: str) -> float:
    return 100.0 * counts[key] / max(counts["lines"], 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    shares = book_shares()
    if args.json:
        print(json.dumps(shares, indent=1))
        return 0
    print(f"{'chapter':34s} {'lines':>5s} {'compute':>8s} {'format':>7s} {'plot':>5s} {'import':>7s} {'hidden':>7s}")
    for name, c in shares.items():
        print(f"{name:34s} {c['lines']:5d} " + " ".join(f"{percent(c, k):{w}.0f}%" for k, w in
                                                      (("compute", 7), ("format", 6), ("plot", 4), ("import", 6),
                                                       ("hidden", 6))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
