"""A small table for the notebooks and the library's reports: Markdown in Jupyter (and the
book), aligned text elsewhere. Its own module so that :mod:`symlib.experiments.judging.claims` and
:mod:`symlib.experiments.report` can both use it without importing each other."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence


class Table:
    """A small table that renders as Markdown in Jupyter (and the book) and as text elsewhere.

    Args:
        headers: the column headers.
        rows: the rows, one cell per header (cells are shown with ``str``).

    Raises:
        ValueError: if a row has another number of cells than ``headers``.
    """

    def __init__(self, headers: Sequence[str], rows: Sequence[Sequence[object]]):
        bad = [r for r in rows if len(r) != len(headers)]
        if bad:
            raise ValueError(f"every row needs {len(headers)} cells ({list(headers)}), got {bad[0]!r}")
        self.headers = [str(h) for h in headers]
        self.rows = [[str(c) for c in r] for r in rows]

    def _repr_markdown_(self) -> str:
        esc = lambda s: s.replace("|", r"\|")  # noqa: E731
        lines = ["| " + " | ".join(map(esc, self.headers)) + " |", "|" + "---|" * len(self.headers)]
        lines += ["| " + " | ".join(map(esc, r)) + " |" for r in self.rows]
        return "\n".join(lines)

    def __repr__(self) -> str:
        widths = [max(len(x) for x in col) for col in zip(self.headers, *self.rows)]
        fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
        return "\n".join([fmt(self.headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in self.rows])


def glue_all(glue: Callable, prefix: str, values: Mapping[str, object]) -> None:
    """Glue every entry of ``values`` for the chapter's prose, as ``<prefix>_<name>``.

    Args:
        glue: ``myst_nb.glue`` (the chapters pass it in; the library does not import the book's tools).
        prefix: the chapter's prefix, e.g. ``"ch04"``.
        values: name -> value, glued unchanged (a number stays a number, a string a string),
            in the mapping's order, with ``display=False``.

    Raises:
        ValueError: if ``prefix`` or a name is empty.
    """
    if not prefix or any(not str(name) for name in values):
        raise ValueError(f"glue names need a prefix and a name, got prefix {prefix!r} and names {list(values)}")
    for name, value in values.items():
        glue(f"{prefix}_{name}", value, display=False)


def plus_minus(mean: float, se: float, digits: int = 3) -> str:
    """``"mean ± se"`` with ``digits`` decimals, or more where the error would round to zero:
    then both to two significant figures of the error (``0.00320 ± 0.000063``, not
    ``0.003 ± 0.000``). A non-finite error (one unit) gives the mean alone.

    Args:
        mean: the estimate.
        se: its standard error.
        digits: decimals when the error shows at that precision.

    Returns:
        The text.
    """
    if not math.isfinite(se):
        return f"{mean:.{digits}f}"
    if se > 0 and round(se, digits) == 0:
        digits = 1 - math.floor(math.log10(se))
    return f"{mean:.{digits}f} ± {se:.{digits}f}"
