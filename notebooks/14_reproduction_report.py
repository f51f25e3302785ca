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
# One row per table and figure of {cite:t}`xiao2023compact`, {cite:t}`rossi2023permutation`
# and {cite:t}`laurent2024symmetry`, main text and appendices, including those the book does
# not attempt. The page is generated when the book is built, from three sources:
#
# - the manifest `symlib.experiments.manifest.MANIFEST`: for each item the paper's value,
#   the chapter, the experiments and summary keys that give ours, and for an item not
#   attempted the reason (`tests/test_manifest.py` checks it against the paper texts);
# - the quick-profile artifacts in the artifact cache, filled by the earlier chapters
#   (read with `experiments.lookup`, which never computes: an artifact that is not there
#   reads "quick result not cached");
# - the paper-profile results saved in `book/results/` (a run of the papers' sizes, or a
#   labelled reduction of it such as `paper-8nets`), with the device and date of the run.
#
# The status is not written by hand: it is the verdict of the paper's claims as code
# (`symlib.experiments.claims`, the same checks the chapters assert) on the largest run there
# is: "reproduced (*profile*)" when every claim about the item holds, "differs (*profile*)"
# with the claim that fails and our numbers, "not tested" when the only run is too small to
# test the claim (the reason is given), "not run" when no run of its experiments is
# available. Illustrations and setup tables have nothing to check; figures whose
# experiments register no claim yet say so.

# %% tags=["hide-cell"]
import re
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import display

from symlib.experiments import manifest, plotting, results
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import Table

plotting.set_style()
profile = get_profile("quick")
print("quick-profile numbers read from the artifact cache;", profile.describe())
quick = manifest.quick_summaries("quick")
paper_runs = manifest.saved_runs(results.results_dir())
print(f"quick results found in the cache: {len(quick)} experiments; "
      f"paper-profile files in book/results: {sum(len(v) for v in paper_runs.values())}")

# %% [markdown]
# ## Xiao et al. (2023)

# %% tags=["hide-input"]
rows = manifest.report_rows(quick, paper_runs)


def paper_table(paper: str) -> Table:
    name = manifest.PAPERS[paper][1]
    return Table(manifest.HEADERS[1:], [r[1:] for r in rows if r[0] == name])


paper_table("xiao2023")

# %% [markdown]
# ## Rossi et al. (2023)
#
# Only the appendix, a summary and the poster of this paper are in the texts we work from:
# the main text's figures (the Sec. 5.1 barriers) are named by section.

# %% tags=["hide-input"]
paper_table("rossi2023")

# %% [markdown]
# ## Laurent et al. (2024)

# %% tags=["hide-input"]
paper_table("laurent2024")

# %% [markdown]
# ## Synthesis
#
# The counts below are recomputed at every build. Items "not run" have their code and
# tests (the ResNet-18 experiments, for instance) but need data or a GPU that no build of
# the book had; items "not attempted" have no experiment yet, for the reason given in
# each row. "Reproduced (quick profile)" means the
# claim holds in miniature (a subset of MNIST, smaller networks); only a paper-profile row
# says it holds at the paper's scale.

# %%
def status_kind(status: str) -> str:
    return re.split(r"[(:;,]", status, maxsplit=1)[0].strip()


counts = Counter((r[0], status_kind(r[-1])) for r in rows)
display(Table(["paper", "status", "items"], [(p, s, n) for (p, s), n in sorted(counts.items())]))

papers = [manifest.PAPERS[k][1] for k in manifest.PAPERS]
kinds = sorted({k for _, k in counts})
fig, ax = plt.subplots(figsize=(8, 2.6), constrained_layout=True)
left = [0] * len(papers)
for i, kind in enumerate(kinds):
    n = [counts.get((p, kind), 0) for p in papers]
    ax.barh(papers, n, left=left, color=plotting.PALETTE[i % len(plotting.PALETTE)], label=kind)
    left = [a + b for a, b in zip(left, n)]
ax.set_xlabel("tables and figures (manifest items)")
ax.set_title("status of every table and figure of the three papers")
ax.invert_yaxis()
ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
plt.show()

toc = (Path(results.results_dir()).parents[1] / "_toc.yml").read_text()
assert len(rows) == len(manifest.MANIFEST)
assert all(item.chapter is None or item.chapter in toc for item in manifest.MANIFEST)
assert all(r[-1] for r in rows) and all(r[-2] for r in rows)
