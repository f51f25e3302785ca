# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,-all
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (symlib)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reproduction report: every table and figure of the three papers
#
# One short row per table and figure of {cite:t}`xiao2023compact`, {cite:t}`rossi2023permutation`
# and {cite:t}`laurent2024symmetry`, main text and appendices, including those the book does
# not attempt. Each row gives the chapter, the **scale** of the run it judges, the
# **verdict** of the paper's claims on that run, and one key number each for the paper and
# for us; the long text (what the item shows, the paper's full value, ours on every run,
# each claim with its interval) is in the item's collapsible details below the table.
#
# The page is generated when the book is built, from three sources:
#
# - the manifest `symlib.experiments.report.manifest.MANIFEST`: for each item the paper's value,
#   the chapter, the experiments and summary keys that give ours, and for an item not
#   attempted the reason (`tests/experiments/test_manifest.py` checks it against the paper texts);
# - the quick-profile artifacts in the artifact cache, filled by the earlier chapters
#   (read with `experiments.lookup`, which never computes);
# - the results saved in `book/results/` (the paper profile, a labelled reduction of it,
#   or a stand-in), with the device and date of each run.
#
# **Scale** comes from one registry, `symlib.experiments.judging.scales`: *paper scale*, *labelled
# reduction* (which dimension was reduced, and by how much), *quick miniature* (every
# quick-profile result) or *stand-in* (a setting the paper did not run).
# `tests/experiments/test_scales.py` fails for a saved result without a scale.
#
# **Verdict** is never written by hand: it is the verdict of the paper's claims as code
# (`symlib.experiments.judging.claims`, the same checks the chapters assert) on a run. An item
# holds on a run only when every one of its claims holds there, that is when the whole
# interval of each effect (over the independent units: seeds, networks, network pairs,
# repeated timings) lies on the paper's side of its threshold; the weakest claim decides
# otherwise ("differs", then "opposite direction, not significant", then "same direction, not
# significant", then "not tested"). The row
# shows the largest scale there is; the details list every run. See "How to read the
# verdicts" on the {doc}`landing page <../book/intro>`.

# %% tags=["hide-cell"]

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import HTML, display
from myst_nb import glue

from symlib.experiments import plotting
from symlib.experiments.judging import claims, results, scales
from symlib.experiments.report import manifest, page as report_page
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import Table

plotting.set_style()
profile = get_profile("quick")
print("quick-profile numbers read from the artifact cache;", profile.describe())
quick = manifest.quick_summaries("quick")
paper_runs = manifest.saved_runs(results.results_dir())
rows = report_page.report_rows(quick, paper_runs)
n_saved = sum(len(v) for v in paper_runs.values())
print(f"quick results found in the cache: {len(quick)} experiments; saved results in book/results: {n_saved}; "
      f"manifest items: {len(rows)}")
glue("ch14_items", len(rows), display=False)
glue("ch14_saved", n_saved, display=False)
glue("ch14_quick", len(quick), display=False)


def paper_section(paper: str) -> HTML:
    name = manifest.PAPERS[paper][1]
    return HTML(report_page.report_html([r for r in rows if r.paper == name]))


def forest(paper: str) -> None:
    name = manifest.PAPERS[paper][1]
    entries = sorted((e for e in report_page.forest_entries(rows) if e.paper == name),
                     key=lambda e: scales.KINDS.index(e.scale))
    plotting.forest(entries, title=f"{name}: every tested claim on every run, against its threshold")
    plt.show()


# %% [markdown]
# The report covers {glue:text}`ch14_items` items, judged on {glue:text}`ch14_saved` saved
# results and on the quick-profile results of {glue:text}`ch14_quick` experiments found in
# the cache.
#
# Below each paper's table, a forest plot shows every claim tested on every run at once: the
# effect (dot) and its interval (bar) minus the claim's threshold, turned so that the paper's
# side is always to the right of the vertical line, on a symmetric-log axis because the
# claims' units differ; colours are the verdicts, thin grey lines separate the scales (paper
# scale, labelled reduction, stand-in, quick miniature, top to bottom), and an arrow marks an
# unbounded interval (one unit). A bar wholly right of the line means the claim holds, wholly
# left that it differs, unless its dot is hollow: an interval over the test images or units of
# one run of a method says nothing of the spread between runs, so it is at most "not
# significant".
#
# ## Xiao et al. (2023)

# %% tags=["hide-input"]
paper_section("xiao2023")

# %% tags=["hide-input"]
forest("xiao2023")

# %% [markdown]
# ## Rossi et al. (2023)
#
# Only the appendix, a summary and the poster of this paper are in the texts we work from:
# the main text's figures (the Sec. 5.1 barriers) are named by section.

# %% tags=["hide-input"]
paper_section("rossi2023")

# %% tags=["hide-input"]
forest("rossi2023")

# %% [markdown]
# ## Laurent et al. (2024)

# %% tags=["hide-input"]
paper_section("laurent2024")

# %% tags=["hide-input"]
forest("laurent2024")

# %% [markdown]
# ## Synthesis
#
# The counts below are recomputed at every build. Each item counts once per scale: an item
# judged both on a labelled reduction and in the quick profile counts in both columns, so a
# verdict in miniature is never added to one at the paper's scale, and an item with two
# reductions counts once among the reductions (with its first run's verdict). Items
# with no run count under "none" with their status: "not run" (code and tests exist, the run
# needs data or a GPU that no build of the book had), "not attempted" (the reason is in the
# item's details), illustrations and setup tables (nothing to judge), and items whose
# experiments register no claim about them.

# %% tags=["hide-input"]
counts = report_page.counts_by_scale(rows)
scale_cols = [*scales.KINDS, "none"]
verdicts = [v.value for v in claims.Verdict] + sorted({v for (_, s, v) in counts if s == "none"})
papers = [manifest.PAPERS[k][1] for k in manifest.PAPERS]
shown = [v for v in verdicts if any(v == k[2] for k in counts)]
display(Table(["paper", "scale", *shown],
              [(p, s, *(counts.get((p, s, v), "") for v in shown)) for p in papers for s in scale_cols
               if any(counts.get((p, s, v)) for v in shown)]))

# the verdicts in fixed colours (holds, same direction, opposite direction, differs, not
# tested), the statuses of items without a run in greys
colours = dict(zip(verdicts, ["#1b9e77", "#e6ab02", "#fdae61", "#d95f02", "#7570b3", "#bdbdbd", "#969696",
                              "#737373", "#525252", "#d9d9d9", "#252525"]))
fig, axes = plt.subplots(1, len(papers), figsize=(11, 3.6), sharey=True, constrained_layout=True)
for ax, paper in zip(axes, papers):
    bottom = np.zeros(len(scale_cols))
    for v in verdicts:
        n = np.array([counts.get((paper, s, v), 0) for s in scale_cols])
        if n.any():
            ax.bar(range(len(scale_cols)), n, bottom=bottom, color=colours.get(v, "#969696"), label=v,
                   edgecolor="white", linewidth=0.5)
        bottom += n
    ax.set_xticks(range(len(scale_cols)), [s.replace(" ", "\n", 1) for s in scale_cols], fontsize=7)
    ax.set_title(paper, fontsize=9)
axes[0].set_ylabel("items")
handles = {h.get_label(): h for ax in axes for h in ax.get_legend_handles_labels()[0]}
fig.legend([handles[v] for v in verdicts if v in handles], [v for v in verdicts if v in handles], fontsize=7,
           loc="outside right center")
fig.suptitle("verdicts of the papers' claims per scale (each item counts once per scale)", fontsize=10)
plt.show()

toc = (results.results_dir().parents[1] / "_toc.yml").read_text()
assert len(rows) == len(manifest.MANIFEST)
assert all(item.chapter is None or item.chapter in toc for item in manifest.MANIFEST)
assert all(r.verdict and r.scale for r in rows)
assert not any("reproduced" in " ".join(r.cells).lower() for r in rows)
assert all(r.scale.split(":")[0] in scales.KINDS for r in rows if r.runs)
