"""Sphinx extension: tables generated at build time from the records the runs leave behind.

``book/running.md`` is a page of instructions; the numbers it shows about runs (how long each
chapter took, which paper-scale runs were saved, on which device, how far the GPU queue is)
are not typed by hand but read from the files the runs wrote, so they cannot go stale:

* ``{saved-runs}``: every record in ``book/results/*.json`` (``symlib.experiments.judging.results.save``):
  experiment, label, device, date, elapsed seconds and command;
* ``{book-timings}``: every execution of the chapters recorded in ``book/timings.json``
  (``scripts/execute_notebooks.py`` appends one after executing every chapter), with the budgets;
* ``{gpu-queue}``: the jobs of ``gpu/queue.json`` (``symlib.experiments.gpu_queue``), steps folded,
  GPU-minutes spent and left, and the devices and dates of the folded steps;
* ``{chapter-shares}``: what the chapters' code lines do, compute, formatting, plotting and
  hidden (``scripts/chapter_shares.py``).

``scripts/check_prose.py`` checks the page's own text; these tables are generated.
"""
from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _table(headers: list[str], rows: list[list], caption: str, widths: list[int] | None = None) -> list[nodes.Node]:
    """A docutils table with a header row, and its caption as a paragraph above it. A cell is a
    string (text) or a docutils node (e.g. ``nodes.literal`` for a command, which must keep its
    ``--`` rather than be typeset as a dash); ``widths`` are relative column widths."""
    table = nodes.table(classes=["records-table"] + (["colwidths-given"] if widths else []))
    group = nodes.tgroup(cols=len(headers))
    table += group
    group.extend(nodes.colspec(colwidth=w) for w in (widths or [1] * len(headers)))

    def row(cells: list) -> nodes.row:
        r = nodes.row()
        for c in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            para += c if isinstance(c, nodes.Node) else nodes.Text(c)
            entry += para
            r += entry
        return r

    head = nodes.thead()
    head += row(headers)
    body = nodes.tbody()
    body.extend(row(r) for r in rows)
    group += head
    group += body
    return [nodes.paragraph(text=caption), table]


class SavedRuns(SphinxDirective):
    """The records of ``book/results/*.json``, one row each."""

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        self.env.note_dependency(str(root / "book" / "results"))
        rows = []
        for path in sorted((root / "book" / "results").glob("*.json")):
            rec = json.loads(path.read_text())
            if "experiment" not in rec:
                continue
            elapsed = rec.get("elapsed_s")
            rows.append([rec["experiment"], rec.get("profile", ""), rec.get("device", ""), str(rec.get("date", "")),
                         "" if elapsed is None else f"{float(elapsed):,.0f}",
                         nodes.literal(text=rec.get("command", ""))])
        return _table(["experiment", "label", "device", "date", "elapsed (s)", "command"], rows,
                      f"Generated from the {len(rows)} records in book/results/ at build time.",
                      widths=[3, 3, 4, 2, 2, 8])


#: executions shown by ``{book-timings}`` (the most recent; the file keeps every one)
SHOWN_TIMINGS = 5


class BookTimings(SphinxDirective):
    """The chapter timings of ``book/timings.json``: one column per execution."""

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        path = root / "book" / "timings.json"
        self.env.note_dependency(str(path))
        data = json.loads(path.read_text())
        runs = data["runs"][-SHOWN_TIMINGS:]
        chapters = sorted({c for r in runs for c in r["chapters"]})
        rows = [[c, *(f"{r['chapters'][c]:.0f}" if c in r["chapters"] else "" for r in runs)] for c in chapters]
        def total(r):  # one after another: the chapters' sum; several at once: the wall time
            s = r.get("wall_s", sum(r["chapters"].values()))
            return f"{s:.0f} ({s / 60:.1f} min)" + (f", {r['jobs']} at a time" if r.get("jobs", 1) > 1 else "")

        rows.append(["total", *(total(r) for r in runs)])
        def rate(r):  # the machine's rate, for runs recorded with it
            return f", {r['bench_train_many']['images_per_s']:,} images/s" if "bench_train_many" in r else ""

        headers = ["chapter", *(f"{i + 1}: {r['date']}, {r['commit'][:7]}{rate(r)}" for i, r in enumerate(runs))]
        notes = "; ".join(f"{i + 1}: {r['how']}" for i, r in enumerate(runs))
        measured = [r["bench_train_many"]["args"] for r in runs if "bench_train_many" in r]
        budget = data["budget"]
        caption = (f"Seconds per chapter of the last {len(runs)} of {len(data['runs'])} recorded executions, "
                   f"generated from book/timings.json at build time. Budgets: "
                   f"{budget['chapter_s']:.0f} s a chapter, {budget['book_s'] / 60:.0f} minutes for the book. "
                   f"A run that executed chapters at once (scripts/execute_notebooks.py --jobs, as make book "
                   f"does) gives each chapter's seconds while it shared the cores, and its total is the wall "
                   f"time. "
                   f"Executions: {notes}."
                   + (f" Images/s: the machine's rate right after the chapters, benchmarks/bench_train_many.py "
                      f"{measured[-1]} (3 OptuNets at the authors' recipe, as chapter 10 trains them)."
                      if measured else ""))
        return _table(headers, rows, caption)


class GPUQueue(SphinxDirective):
    """The jobs of ``gpu/queue.json`` with their progress."""

    def run(self) -> list[nodes.Node]:
        from symlib.experiments import gpu_queue

        root = Path(self.env.srcdir)
        path = root / "gpu" / "queue.json"
        self.env.note_dependency(str(path))
        queue = gpu_queue.load_queue(path)
        rows = []
        for job in queue["jobs"]:
            steps = gpu_queue.folded_steps(path.parent / job["name"], job)
            prog = job.get("progress") or {}
            dates = sorted(str(m["date"])[:10] for m in steps.values())
            where = "; ".join(sorted({m["device"] for m in steps.values()}))
            runs_on = "GPU" if job.get("where", "device") == "device" else "here"
            rows.append([job["name"], f"{job['kind']} ({runs_on})", f"{len(steps)} of {job['steps']}",
                         f"{prog.get('gpu_seconds', 0) / 60:.1f}", f"{gpu_queue.minutes_left(job):.1f}",
                         f"{where} ({dates[0]} to {dates[-1]})" if steps else "", job["title"]])
        gpu = [j for j in queue["jobs"] if j.get("where", "device") == "device"]
        left = sum(gpu_queue.minutes_left(j) for j in gpu)
        here = sum(gpu_queue.minutes_left(j) for j in queue["jobs"] if j not in gpu)
        return _table(["job", "kind (runs on)", "steps folded", "min spent", "min left", "device (dates)", "what"],
                      rows, f"Generated from gpu/queue.json and its step files at build time: about {left:.0f} "
                            f"GPU-minutes left, and about {here:.0f} minutes on a 2-core CPU for the jobs that run "
                            "here (estimates where no step has run yet).")


class ChapterShares(SphinxDirective):
    """What the chapters' code lines do (``scripts/chapter_shares.py``), one row a chapter."""

    def run(self) -> list[nodes.Node]:
        import importlib.util

        root = Path(self.env.srcdir)
        script = root / "scripts" / "chapter_shares.py"
        self.env.note_dependency(str(script))
        spec = importlib.util.spec_from_file_location("chapter_shares", script)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        shares = mod.book_shares(root / "notebooks")
        for path in (root / "notebooks").glob("[0-9][0-9]_*.py"):
            self.env.note_dependency(str(path))
        rows = [[name.replace("_", " "), str(c["lines"]),
                 *(f"{mod.percent(c, k):.0f}%" for k in ("compute", "format", "plot", "import", "hidden"))]
                for name, c in shares.items()]
        total = shares["all"]
        shown = mod.percent(total, "format") + mod.percent(total, "plot")
        return _table(["chapter", "code lines", "compute", "print, format, glue", "plot", "imports", "in hidden cells"],
                      rows, f"Generated from the chapters' sources at build time by scripts/chapter_shares.py: "
                            f"formatting and plotting are {shown:.0f}% of the code lines (goal: at most 25%), hidden "
                            f"cells hold {mod.percent(total, 'hidden'):.0f}% (goal: at most 40%).",
                      widths=[5, 2, 2, 2, 2, 2, 2])


def setup(app):
    app.add_directive("saved-runs", SavedRuns)
    app.add_directive("book-timings", BookTimings)
    app.add_directive("gpu-queue", GPUQueue)
    app.add_directive("chapter-shares", ChapterShares)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
