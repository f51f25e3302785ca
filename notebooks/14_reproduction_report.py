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
# **verdict** of the paper's claims on that run, the paper's value, and ours: the effect of
# the claim that decides the verdict, in that claim's units (which need not be those of the
# paper's value: a gap in points beside two accuracies, say; the claim's statement is in the
# details). The long text (what the item shows, the paper's full value, ours on every run,
# each claim with its threshold and interval, the whole scale) is in the item's collapsible
# details below the table.
#
# The page is generated when the book is built, from three sources:
#
# - the manifest `symlib.experiments.report.manifest.MANIFEST`: for each item the paper's value,
#   the chapter, the experiments and summary keys that give ours, and for an item not
#   attempted the reason (`tests/experiments/test_manifest.py` checks it against the paper texts);
# - the quick-profile artifacts in the artifact cache, filled by the earlier chapters
#   (read with `experiments.lookup`, which never computes); executed on a cache that lacks
#   one of them, the page stops with an error naming the chapters to execute first;
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
# shows the largest scale there is and, of several runs of that scale, the one that tests
# the most claims; the details list every run. See "How to read the
# verdicts" on the {doc}`landing page <../book/intro>`.

# %% tags=["hide-cell"]
from IPython.display import HTML, display
from myst_nb import glue

from symlib.experiments import plotting
from symlib.experiments.judging import results, scales
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import manifest, page as report_page
from symlib.experiments.table import glue_all

plotting.set_style()
profile = get_profile("quick")
print("quick-profile numbers read from the artifact cache;",
      profile.describe())
quick = manifest.quick_summaries("quick", complete=True)
paper_runs = manifest.saved_runs(results.results_dir())
rows = report_page.report_rows(quick, paper_runs)
n_saved = sum(len(v) for v in paper_runs.values())
print(f"quick results found in the cache: {len(quick)} experiments; "
      f"saved results in book/results: {n_saved}; "
      f"manifest items: {len(rows)}")
glue_all(glue, "ch14",
         {"items": len(rows), "saved": n_saved, "quick": len(quick)})

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
# unbounded interval (one unit). Green is the paper's side and orange the other, dark where
# the interval is wholly on that side. A bar wholly right of the line means the claim holds,
# wholly left that it differs, unless its dot is hollow: an interval over the test images or
# units of one run of a method says nothing of the spread between runs, so it is at most "not
# significant".
#
# ## Xiao et al. (2023)

# %%
HTML(report_page.report_html(
    report_page.rows_of_paper(rows, "xiao2023")))

# %%
fig = plotting.forest(
    report_page.paper_forest_entries(rows, "xiao2023"),
    title="Xiao et al. (2023): every tested claim on every run, "
          "against its threshold")

# %% [markdown]
# ## Rossi et al. (2023)
#
# Only the appendix, a summary and the poster of this paper are in the texts we work from:
# the main text's figures (the Sec. 5.1 barriers) are named by section.

# %%
HTML(report_page.report_html(
    report_page.rows_of_paper(rows, "rossi2023")))

# %%
fig = plotting.forest(
    report_page.paper_forest_entries(rows, "rossi2023"),
    title="Rossi et al. (2023): every tested claim on every run, "
          "against its threshold")

# %% [markdown]
# ## Laurent et al. (2024)

# %%
HTML(report_page.report_html(
    report_page.rows_of_paper(rows, "laurent2024")))

# %%
fig = plotting.forest(
    report_page.paper_forest_entries(rows, "laurent2024"),
    title="Laurent et al. (2024): every tested claim on every run, "
          "against its threshold")

# %% [markdown]
# ## Synthesis
#
# The counts below are recomputed at every build. Each item counts once per scale: an item
# judged both on a labelled reduction and in the quick profile counts in both columns, so a
# verdict in miniature is never added to one at the paper's scale, and an item with two
# reductions counts once among the reductions (with the verdict of the one that tests the most claims). Items
# with no run count under "none" with their status: "not run" (code and tests exist, the run
# needs data or a GPU that no build of the book had), "not attempted" (the reason is in the
# item's details), illustrations and setup tables (nothing to judge), and items whose
# experiments register no claim about them.

# %%
counts = report_page.counts_by_scale(rows)
display(report_page.counts_table(counts))
verdicts = report_page.count_verdicts(counts)
fig = plotting.stacked_counts(
    counts, [p for _, p, _ in manifest.PAPERS.values()],
    report_page.COUNT_SCALES, verdicts,
    dict(zip(verdicts, report_page.COUNT_COLOURS)),
    suptitle="verdicts of the papers' claims per scale "
             "(each item counts once per scale)")

toc = (results.results_dir().parents[1] / "_toc.yml").read_text()
assert len(rows) == len(manifest.MANIFEST)
assert all(item.chapter is None or item.chapter in toc
           for item in manifest.MANIFEST)
assert all(r.verdict and r.scale for r in rows)
assert not any("reproduced" in " ".join(r.cells).lower() for r in rows)
assert all(r.scale.split(":")[0] in scales.KINDS for r in rows if r.runs)
