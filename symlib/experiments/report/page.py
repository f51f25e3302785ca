"""The reproduction report's page (chapter 14): one short row per item of
:mod:`symlib.experiments.report.manifest` (:func:`report_rows`), the counts per paper, scale and
verdict (:func:`counts_by_scale`), the HTML of the table with collapsible details
(:func:`report_html`) and every tested claim's effect against its threshold
(:func:`forest_entries`, drawn by :func:`symlib.experiments.plotting.forest`)."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symlib.experiments.judging.claims import Verdict
from symlib.experiments.judging.scales import KINDS
from symlib.experiments.plotting import VERDICT_COLOURS
from symlib.experiments.table import Table

from symlib.experiments.report.manifest import (MANIFEST, PAPERS, Item, RunVerdict, format_value, item_status, ours,
                                         paper_profile_cell, summary_values,
                                         run_verdicts)


NOT_CACHED = "quick result not cached"
#: the quick cell of an item whose experiments only run in the paper profile
PAPER_ONLY = "paper profile only"

#: the short row of every item in the report (:func:`report_rows`)
HEADERS = ("paper", "item", "chapter", "scale", "verdict", "the paper's value", "ours: the deciding claim's effect")

def chapter_link(item: Item) -> str:
    """A Markdown link from the report's page to the item's chapter in the built book.

    MyST renders a link in a notebook's output as it is (no cross-reference), so it points
    at ``NN_name.html`` beside the report's page, not at the ``.ipynb``.

    Args:
        item: a manifest item.

    Returns:
        ``"[N](NN_name.html)"``, or ``"-"`` for an item without a chapter.
    """
    if item.chapter is None:
        return "-"
    name = Path(item.chapter).name
    return f"[{int(name.split('_', 1)[0])}]({name}.html)"


def _short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut at the last word boundary before ``width`` characters (with an
    ellipsis) when longer; the row's details keep the whole text."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:([") + "…"


def key_number(item: Item, summaries: Mapping[str, Mapping[str, Any]], run: RunVerdict | None = None) -> str:
    """Our headline number for ``item`` on one run: the effect and interval of the claim that
    decides the run's verdict (the first tested claim with that verdict), else the first value
    of :attr:`Item.keys` in ``summaries`` (a saved result of :attr:`Item.saved_as` read with
    the first experiment's keys).

    Args:
        item: a manifest item.
        summaries: experiment (or saved result) -> summary of one run.
        run: that run's verdicts.

    Returns:
        ``"claim: effect [interval] over units"`` or ``"label value"``, or "" when there is none.
    """
    if run is not None:
        tested = [o for o in run.outcomes if o.evidence.untested is None]
        deciding = [o for o in tested if o.verdict is run.verdict] or tested
        if deciding:
            o = deciding[0]
            return f"{o.claim.name}: {o.evidence.interval_text()}"
    for ref in item.keys:
        exp, path = ref.split(":", 1)
        for name in (exp, *item.saved_as) if exp == (item.experiments or ("",))[0] else (exp,):
            if name in summaries:
                found = summary_values(summaries[name], path)
                if found:
                    label, value = found[0]
                    return f"{label} {format_value(value)}"
    return ""


@dataclass(frozen=True)
class ReportRow:
    """One item of the report: a short row (:data:`HEADERS`) and its details.

    Attributes:
        paper: the paper's short name.
        label: the item's id and part.
        chapter: :func:`chapter_link`.
        scale: the scale of the run whose verdict is shown (the largest there is; of several
            runs of it, :func:`most_tested`), or "-".
        verdict: that run's verdict (:class:`symlib.experiments.judging.claims.Verdict`), or the
            item's status when no claim was evaluated ("not run", "not attempted", ...).
        paper_number: the paper's key number or finding.
        our_number: ours on that run.
        runs: every run's verdicts.
        details: ``(title, text)`` pairs: what it shows, the paper's value, ours on each
            run, every claim's verdict with our numbers.
    """

    paper: str
    label: str
    chapter: str
    scale: str
    verdict: str
    paper_number: str
    our_number: str
    runs: tuple[RunVerdict, ...]
    details: tuple[tuple[str, str], ...]

    @property
    def cells(self) -> tuple[str, ...]:
        """The short row, in the order of :data:`HEADERS`."""
        return (self.paper, self.label, self.chapter, self.scale, self.verdict, self.paper_number, self.our_number)


def report_rows(quick: Mapping[str, Mapping[str, Any]], paper_runs: Mapping[str, Mapping[str, Mapping[str, Any]]],
                items: Sequence[Item] = MANIFEST) -> list[ReportRow]:
    """One :class:`ReportRow` per item.

    Args:
        quick: :func:`quick_summaries`.
        paper_runs: :func:`saved_runs`.
        items: the items (default the whole manifest).

    Returns:
        The rows.
    """
    from symlib.experiments.registry import SUMMARIES

    rows = []
    for item in items:
        if not item.attempted or (item.kind in ("illustration", "setup") and not item.experiments):
            mine = "n/a" if item.attempted else "not attempted"
        elif not item.experiments:
            mine = "n/a"
        elif not any(e in SUMMARIES for e in item.experiments):
            mine = "in the chapter (its experiments have no summary)"
        elif item.paper_only:
            mine = PAPER_ONLY
        elif not any(e in quick for e in item.experiments):
            mine = NOT_CACHED
        else:
            mine = ours(item, quick) or "(see the chapter)"
        runs = run_verdicts(item, quick, paper_runs)
        head = next(iter(heads_by_scale(runs).values()), None)
        if head is None:  # the status's first words; the reason is in the details
            status = item_status(item, quick, paper_runs)
            scale, verdict, number = "-", re.split(r"[:;(,]", status, maxsplit=1)[0].strip(), ""
        else:
            if head.run == "quick":
                sums = quick
            else:
                sums = {e: paper_runs[e][head.run]["summary"] for e in (*item.experiments, *item.saved_as)
                        if head.run in paper_runs.get(e, {})}
            scale = _short(head.scale.short, 90)  # the whole label is in the details
            verdict = head.verdict.value if head.outcomes else f"{Verdict.NOT_TESTED.value} ({head.note})"
            number = key_number(item, sums, head)
        details = [("what it shows", item.caption), ("the paper", item.paper_value),
                   ("ours (quick profile)", mine), ("ours (saved runs: paper profile, reductions, stand-ins)", paper_profile_cell(item, paper_runs))]
        for r in runs:
            where = f"{r.run} run ({r.scale.label}" + (f"; {r.provenance}" if r.provenance else "") + ")"
            details.append((f"verdict on the {where}: {r.verdict.value if r.outcomes else 'not tested'}",
                            "; ".join(r.details()) or r.note or r.counts))
        if not runs:
            details.append(("status", item_status(item, quick, paper_runs)))
        rows.append(ReportRow(PAPERS[item.paper][1], item.label, chapter_link(item), scale, verdict,
                              _short(item.paper_number or item.paper_value, 100), _short(number, 120), tuple(runs),
                              tuple(details)))
    return rows


def heads_by_scale(runs: Sequence[RunVerdict]) -> dict[str, RunVerdict]:
    """Of an item's runs, the one whose verdict speaks for each scale kind (in the runs' order):
    the run of that kind that tests the most claims (the first of those in the rows' order, the
    paper's profile first, then by label). A reduction whose summary predates a claim (every
    claim "not tested") does not hide a larger one that tests them."""
    kinds = dict.fromkeys(r.scale.kind for r in runs)
    return {kind: max((r for r in runs if r.scale.kind == kind),
                      key=lambda r: sum(o.verdict is not Verdict.NOT_TESTED for o in r.outcomes))
            for kind in kinds}


def counts_by_scale(rows: Sequence[ReportRow]) -> dict[tuple[str, str, str], int]:
    """How many items have each verdict, per paper and scale: one count per item and scale.

    An item judged at the paper's scale and in the quick profile counts in both scales; an
    item with several runs of one scale (two labelled reductions) counts once there, with the
    verdict of its run of that scale that tests the most claims (:func:`heads_by_scale`); an item
    with no run counts under the scale ``"none"`` with its status ("not run", "not attempted",
    "illustration", "setup", "no claim").

    Args:
        rows: :func:`report_rows`.

    Returns:
        ``(paper, scale kind, verdict) -> count``.
    """
    out: dict[tuple[str, str, str], int] = {}
    for row in rows:
        if row.runs:
            keys = [(row.paper, kind, head.verdict.value) for kind, head in heads_by_scale(row.runs).items()]
        else:
            status = {"shown in its chapter": "no claim", "illustration, redrawn in its chapter": "illustration"}.get(
                row.verdict, row.verdict)
            keys = [(row.paper, "none", status)]
        for k in keys:
            out[k] = out.get(k, 0) + 1
    return out


def _html(text: str) -> str:
    import html

    out = html.escape(str(text))
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', out)  # chapter links


def report_html(rows: Sequence[ReportRow]) -> str:
    """The rows as an HTML table that fits a 1280-pixel window (fixed layout, wrapped cells),
    followed by one collapsible ``<details>`` per item with the long text.

    Args:
        rows: :func:`report_rows` (of one paper, typically).

    Returns:
        The HTML.
    """
    widths = (None, "15%", "11%", "18%", "12%", "22%", "22%")  # "chapter" fits its column
    cols = "".join(f'<col style="width:{w}">' for w in widths[1:])
    head = "".join(f"<th>{_html(h)}</th>" for h in HEADERS[1:])
    body = "".join("<tr>" + "".join(f"<td>{_html(c)}</td>" for c in row.cells[1:]) + "</tr>" for row in rows)
    style = ('style="table-layout:fixed;width:100%;border-collapse:collapse;overflow-wrap:anywhere;'
             'word-break:break-word;font-size:0.85em"')
    table = f'<table class="report-table" {style}><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>' \
            f"<tbody>{body}</tbody></table>"
    blocks = []
    for row in rows:
        inner = "".join(f"<p><b>{_html(t)}</b>: {_html(x)}</p>" for t, x in row.details)
        scale = f" ({_html(row.scale)})" if row.runs else ""
        blocks.append(f'<details style="overflow-wrap:anywhere"><summary>{_html(row.label)}: '
                      f"{_html(row.verdict)}{scale}</summary>{inner}</details>")
    return table + "\n" + "\n".join(blocks)


@dataclass(frozen=True)
class ForestEntry:
    """One tested claim on one run, as the forest plot shows it: the effect and its interval
    minus the threshold, signed so that the paper's side is positive (in the claim's units).

    Attributes:
        paper: the paper's short name.
        scale: the run's scale kind (:data:`symlib.experiments.judging.scales.KINDS`).
        run: the run's profile label.
        label: ``"experiment.claim"``.
        effect: the signed distance of the effect from the threshold.
        low: the signed distance of the interval's end nearest the other side (may be ``-inf``).
        high: that of the end furthest on the paper's side (may be ``inf``).
        verdict: the verdict's text.
        one_run: the interval is over the test points or units of one run
            (:func:`symlib.experiments.judging.claims.one_run`).
    """

    paper: str
    scale: str
    run: str
    label: str
    effect: float
    low: float
    high: float
    verdict: str
    one_run: bool = False


def forest_entries(rows: Sequence[ReportRow]) -> list[ForestEntry]:
    """Every tested claim of every run in ``rows`` once (items that share a claim share the
    entry), in the order of the rows, the runs and the claims.

    Args:
        rows: :func:`report_rows`.

    Returns:
        The entries.
    """
    out, seen = [], set()
    for row in rows:
        for run in row.runs:
            for o in run.outcomes:
                ev = o.evidence
                key = (o.claim.experiment, o.claim.name, run.run)
                if ev.untested is not None or key in seen:
                    continue
                seen.add(key)
                t = ev.threshold
                sign = 1.0 if t.direction == "above" else -1.0
                ends = sorted((sign * (ev.low - t.value), sign * (ev.high - t.value)))
                out.append(ForestEntry(row.paper, run.scale.kind, run.run, f"{o.claim.experiment}.{o.claim.name}",
                                       sign * (ev.effect - t.value), ends[0], ends[1], o.verdict.value,
                                       ev.one_run))
    return out


def rows_of_paper(rows: Sequence[ReportRow], paper: str) -> list[ReportRow]:
    """The rows of one paper, by its key in :data:`~symlib.experiments.report.manifest.PAPERS` (``"xiao2023"``).

    Raises:
        ValueError: for an unknown paper key.
    """
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}; the papers are {list(PAPERS)}")
    return [r for r in rows if r.paper == PAPERS[paper][1]]


def paper_forest_entries(rows: Sequence[ReportRow], paper: str) -> list[ForestEntry]:
    """:func:`forest_entries` of one paper's rows (:func:`rows_of_paper`), grouped by scale in the
    order of :data:`~symlib.experiments.judging.scales.KINDS` (paper scale first), the rows' order
    kept within a scale."""
    return sorted(forest_entries(rows_of_paper(rows, paper)), key=lambda e: KINDS.index(e.scale))


#: the columns of the counts: every scale kind, then items without a run
COUNT_SCALES = (*KINDS, "none")

#: the bars' colours in the order of :func:`count_verdicts`: the verdicts as the forest plot
#: colours them, then the statuses of items without a run (illustration, not attempted, not
#: run, setup, ...) in tones far enough apart to tell at a glance
COUNT_COLOURS = (*(VERDICT_COLOURS[v.value] for v in Verdict), "#a6cee3", "#d9d9d9", "#636363", "#fee08b",
                 "#bdbdbd", "#252525")


def count_verdicts(counts: Mapping[tuple[str, str, str], int]) -> list[str]:
    """The verdicts of :func:`counts_by_scale` in a fixed order: every :class:`Verdict`, then the
    statuses of the items without a run, alphabetically."""
    return [v.value for v in Verdict] + sorted({v for (_, s, v) in counts if s == "none"})


def counts_table(counts: Mapping[tuple[str, str, str], int]) -> Table:
    """:func:`counts_by_scale` as a table: one row per paper and scale that has an item, one column
    per verdict or status that occurs (empty where none)."""
    shown = [v for v in count_verdicts(counts) if any(v == k[2] for k in counts)]
    return Table(["paper", "scale", *shown],
                 [(p, s, *(counts.get((p, s, v), "") for v in shown)) for p in (PAPERS[k][1] for k in PAPERS)
                  for s in COUNT_SCALES if any(counts.get((p, s, v)) for v in shown)])
