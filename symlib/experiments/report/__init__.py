"""The report floor of the book's machinery, on top of the three papers: the tables of the
notebooks' "Synthesis" sections (here), the reproduction report's manifest of every claim and
run (:mod:`.manifest`), the report pages (:mod:`.page`) and the facts quoted from the papers
and the authors' code (:mod:`.paper_facts`).

:func:`paper_vs_ours` is the one table of the paper's values beside ours, optionally with
a column of a saved paper-profile run (:class:`PaperProfile`, from ``book/results/``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from symlib.experiments.table import Table  # noqa: F401  (the tables of this module; claims use it too)

NOT_RUN = "not run"


@dataclass(frozen=True)
class PaperProfile:
    """Values of a saved paper-profile run, for the extra column of :func:`paper_vs_ours`.

    Attributes:
        values: one value per row of the table (a sequence aligned with the rows), or
            values by quantity (a mapping); a missing value or None shows as "not run".
        source: where the run was done, shown in the column header (e.g. device and date);
            empty when no run was saved.
        scale: the run's scale (:mod:`symlib.experiments.judging.scales`), shown in the header; filled
            by :meth:`from_saved` from the record's experiment and profile.
    """

    values: Sequence[object] | Mapping[str, object] = field(default_factory=dict)
    source: str = ""
    scale: str = ""

    @classmethod
    def from_saved(cls, record: Mapping[str, Any] | None, values: Sequence[object] | Mapping[str, object]
                   ) -> PaperProfile:
        """The column for a record of :func:`symlib.experiments.judging.results.load`.

        Args:
            record: the saved run (with ``device`` and ``date``), or None when it was never run.
            values: the run's values, aligned with the table's rows or by quantity.

        Returns:
            The column; with no record every cell reads "not run".
        """
        if record is None:
            return cls()
        scale = _scale(record["experiment"], record["profile"], record) if "experiment" in record and "profile" in \
            record else ""
        return cls(values, f"{record['device']}, {record['date']}", scale)

    def header(self) -> str:
        """The column header.

        Returns:
            ``"ours (paper profile, <scale>, <source>)"``, without the parts that are empty.
        """
        return "ours (" + ", ".join(x for x in ("paper profile", self.scale, self.source) if x) + ")"

    def cells(self, quantities: Sequence[str]) -> list[str]:
        """The column's cells for rows with these quantities.

        Args:
            quantities: the first cell of every row.

        Returns:
            One string per row: the value, or "not run" where it is missing or None.

        Raises:
            ValueError: if ``values`` is a sequence whose length differs from the rows'.
        """
        if isinstance(self.values, Mapping):
            found = [self.values.get(q) for q in quantities]
        else:
            if len(self.values) not in (0, len(quantities)):
                raise ValueError(f"paper_profile has {len(self.values)} values for {len(quantities)} rows")
            found = list(self.values) or [None] * len(quantities)
        return [NOT_RUN if v is None else str(v) for v in found]


def paper_vs_ours(rows: Sequence[tuple[str, object, object]], profile_name: str,
                  paper_profile: PaperProfile | Sequence[object] | Mapping[str, object] | None = None,
                  scale: str | None = None) -> Table:
    """The paper's values beside ours, with the profile named in the header.

    Args:
        rows: ``(quantity, the paper's value, ours)`` per row.
        profile_name: the profile our values come from.
        paper_profile: values of a saved paper-profile run, as a :class:`PaperProfile` or
            as its ``values`` (a sequence aligned with ``rows`` or a mapping by quantity);
            adds the column "ours (paper profile, <scale>, <source>)", "not run" where a value is missing.
        scale: the scale of our run (e.g. ``"quick miniature"``), named in its column's header.

    Returns:
        The table (renders as Markdown in Jupyter).

    Raises:
        ValueError: if a row does not have three cells, or ``paper_profile`` is a sequence
            of another length than ``rows``.
        TypeError: if ``paper_profile`` is neither a PaperProfile, a sequence nor a mapping.
    """
    headers = ["quantity", "paper", f"ours ({profile_name} profile" + (f", {scale})" if scale else ")")]
    if paper_profile is None:
        return Table(headers, rows)
    bad = [r for r in rows if len(r) != 3]
    if bad:
        raise ValueError(f"every row needs 3 cells (quantity, paper, ours), got {bad[0]!r}")
    if not isinstance(paper_profile, PaperProfile):
        if isinstance(paper_profile, str) or not isinstance(paper_profile, (Sequence, Mapping)):
            raise TypeError(f"paper_profile must be a PaperProfile, a sequence or a mapping, "
                            f"got {type(paper_profile).__name__}")
        paper_profile = PaperProfile(paper_profile)
    cells = paper_profile.cells([str(r[0]) for r in rows])
    return Table([*headers, paper_profile.header()], [(*r, c) for r, c in zip(rows, cells)])


def _scale(name: str, profile: str, record: Mapping[str, Any] | None, short: bool = True) -> str:
    """The run's scale (:func:`symlib.experiments.judging.scales.scale_of`), or a visible note when the
    registry does not know it (``tests/experiments/test_scales.py`` fails for such a file in ``book/results``)."""
    from symlib.experiments.judging import scales

    try:
        scale = scales.scale_of(name, profile, record)
    except KeyError:
        return "scale not registered in symlib.experiments.judging.scales"
    return scale.short if short else scale.label


def saved_run_claims(name: str, profile: str, keep=None) -> tuple[str, Any] | None:
    """A run saved in ``book/results/`` (:func:`symlib.experiments.judging.results.load`) and its
    paper claims evaluated on it, for showing beside a notebook's own run.

    Args:
        name: the experiment.
        profile: the saved run's profile label (e.g. ``"paper"``, ``"paper-8nets"``).
        keep: optional predicate on claim names: the claims to show (default all).

    Returns:
        ``(provenance, table)``: a line with the run's networks, accuracy, date, commit,
        device, time and command, then its scale (:mod:`symlib.experiments.judging.scales`) and any hand
        amendment the record states (its ``amended``); and
        :func:`symlib.experiments.judging.claims.claims_table` of its claims with the scale in its
        header; None when no such run was saved.
    """
    from symlib.experiments.judging import claims, results

    record = results.load(name, profile)
    if record is None:
        return None
    summary = record["summary"]
    facts = [f"{k} {summary[k]}" if not isinstance(summary[k], float) else f"{k} {summary[k]:.3f}"
             for k in ("nets", "test_accuracy_mean", "test_accuracy_min") if k in summary]
    minutes = "" if record.get("elapsed_s") is None else f", {record['elapsed_s'] / 60:.0f} min"
    steps = record.get("steps") or {}
    if minutes and steps.get("loaded"):
        total = steps["loaded"] + steps["computed"]
        minutes += (f" for the last {steps['computed']} of its {total} steps (the other {steps['loaded']} were "
                    "loaded from the artifact cache of an earlier, interrupted invocation)" if steps["computed"] else
                    f" to summarise its {total} steps, every one loaded from the artifact cache, where an earlier "
                    "invocation or the GPU queue computed them (the device above only summarised them)")
    scale = _scale(name, profile, record)
    commit = f" at commit {record['commit'][:7]}" if record.get("commit") else ""
    line = (f"{', '.join(facts) + '; ' if facts else ''}run on {record['date']}{commit}, {record['device']}{minutes}:\n"
            f"{record['command']}\nscale: {scale}" + (f"\namended: {record['amended']}" if "amended" in record else ""))
    outcomes = [o for o in claims.evaluate(name, summary) if keep is None or keep(o.claim.name)]
    return line, claims.claims_table(outcomes, profile, scale=scale)


def show_saved_run(name: str, needs: str, profile: str | None = None, keep=None) -> Table | None:
    """For a notebook's "paper profile" cell: print the saved runs' provenance and return
    the table of the paper's claims on them; or print that none was run, and why.

    Args:
        name: the experiment.
        needs: what a run needs, printed when none was saved (e.g. "needs a GPU").
        profile: one saved run's profile label; default: every saved run of the paper profile
            and its labelled reductions (``paper``, ``paper-...``), the table then with a
            column naming each row's run.
        keep: optional predicate on claim names (see :func:`saved_run_claims`).

    Returns:
        The claims table (shown by Jupyter as the cell's value), or None when not run.
    """
    from symlib.experiments.judging import results

    labels = [profile] if profile is not None else results.saved_labels(name)
    saved = [(label, saved_run_claims(name, label, keep)) for label in labels]
    saved = [(label, s) for label, s in saved if s is not None]
    if not saved:
        print(f"{profile or 'paper'} profile of {name}: not run ({needs}); run it with\n"
              f"  python -m symlib run {name} --profile paper --out book/results")
        return None
    for label, (line, _) in saved:
        print(f"{label} profile of {name}: {line}")
    if len(saved) == 1:
        return saved[0][1][1]
    first = saved[0][1][1]
    headers = ["run (scale)", *first.headers]
    headers[3] = "ours"  # each row's profile and scale are in its first cell
    return Table(headers, [(f"{label} ({_scale(name, label, results.load(name, label))})", *row)
                           for label, (_, table) in saved for row in table.rows])
