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
# # How long does alignment take?
#
# Reproduces the timing study of {cite:t}`rossi2023permutation` (App. C, Figure A2).
#
# **Core idea.** Wasserstein alignment of two mean-field posteriors solves the same kind of
# problem as weight matching of two deterministic networks, with twice the arrays (means
# and standard deviations). The paper profiles both against the model width and reports
# that "in the majority of cases, the algorithm completes within a minute" (on machines
# with 8 A100 GPUs, App. B.1), and that aligning VI solutions of wide networks "is more
# computationally demanding compared to merely matching weights from SGD solutions".
#
# This notebook times the alignment of the **trained** VI posteriors of the previous
# chapter (experiment `vi_alignment`: two posteriors per dataset and width, at the
# profile's widths), on this book's machine:
#
# - Wasserstein alignment of $(\mu, \sigma)$, and weight matching of the means alone;
# - wall time and CPU time of each, the number of coordinate-descent sweeps, and the
#   $W_2$ distance before and after alignment;
# - the paper's timing claims as code, and a paper-vs-ours table.
#
# **Deviations from the paper.** The paper's deterministic baseline matches two *SGD*
# solutions; we match the means of the two VI posteriors (same architecture, same data,
# no extra training), which makes the comparison one of cost per problem at equal
# weights. Each call is timed 5 times and the minimum kept, as wall time and as the
# process's CPU time (summed over its threads): this book's machine is shared, and CPU
# time measures the work done while wall time also counts waiting. Times depend on the
# machine; the cells that print them are ignored by nbval, and only verdicts are checked.

# %% tags=["hide-cell"]
import os
import platform

import matplotlib.pyplot as plt
from IPython.display import display

from symlib import experiments
from symlib.experiments import claims, plotting, report, rossi
from symlib.experiments.profiles import get_profile
from symlib.experiments.registry import SUMMARIES
from symlib.experiments.report import Table, paper_vs_ours

plotting.set_style()
profile = get_profile()
print(profile.describe())
print(f"MLPs 784-{profile.align_depth} x width-10, widths {list(profile.align_widths)}; "
      f"each timing the minimum of {rossi.TIMING_REPEATS} repeats")

# %% [markdown]
# ## Timing the alignment of trained posteriors
#
# The experiment `vi_alignment_timings` loads the fitted posteriors of `vi_alignment`
# (computed in the previous chapter, or now) and times both matchings from the identity,
# with the same sweep order.

# %% tags=["nbval-ignore-output"]
t = experiments.run("vi_alignment_timings", profile)
print(f"machine: {platform.machine()}, {os.cpu_count()} CPU cores")
for dataset in experiments.ALIGN_DATASETS:
    c = {k: t.column(dataset, k) for k in ("w2_seconds", "wm_seconds", "w2_cpu_seconds", "wm_cpu_seconds",
                                          "w2_sweeps", "wm_sweeps", "w2_sq_identity", "w2_sq")}
    display(Table([f"{dataset}: width", "W2 alignment: wall (s)", "CPU (s)", "sweeps", "CPU per sweep (ms)",
                   "weight matching of means: wall (s)", "CPU (s)", "sweeps", "W2^2 before", "W2^2 after"],
                  [(w, f"{c['w2_seconds'][i]:.3f}", f"{c['w2_cpu_seconds'][i]:.3f}", int(c["w2_sweeps"][i]),
                    f"{1e3 * c['w2_cpu_seconds'][i] / c['w2_sweeps'][i]:.1f}", f"{c['wm_seconds'][i]:.3f}",
                    f"{c['wm_cpu_seconds'][i]:.3f}", int(c["wm_sweeps"][i]), f"{c['w2_sq_identity'][i]:.1f}",
                    f"{c['w2_sq'][i]:.1f}") for i, w in enumerate(t.widths[dataset])]))

fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
for ax, dataset in zip(axes, experiments.ALIGN_DATASETS):
    widths = t.widths[dataset]
    ax.plot(widths, t.column(dataset, "w2_cpu_seconds"), "o-", label="Wasserstein alignment (mu, sigma)")
    ax.plot(widths, t.column(dataset, "wm_cpu_seconds"), "s--", label="weight matching (means only)")
    ax.plot(widths, t.column(dataset, "w2_cpu_seconds") / t.column(dataset, "w2_sweeps"), "^:",
            label="Wasserstein alignment, per sweep")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(widths, [str(w) for w in widths])
    ax.set_xlabel(f"hidden width ({profile.align_depth} hidden layers)")
    ax.set_ylabel("CPU time (s)")
    ax.set_title(f"{dataset}, trained VI posteriors")
    ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## The paper's claims, as code
#
# Three statements of App. C are registered on `vi_alignment_timings` in
# `symlib.experiments.rossi`, fixed from the paper's text before any run: (1) most
# alignments finish within a minute (more than half of our (dataset, width) pairs under
# 60 s of wall time); (2) wider networks take longer (the CPU time increases at every
# doubling of the width, on each dataset); (3) at the widest width, aligning the VI
# posteriors costs more CPU time than matching the means alone. The table shows each
# verdict with its numbers (the numbers depend on the machine and are not checked by
# nbval).

# %% tags=["nbval-ignore-output"]
outcomes = claims.evaluate("vi_alignment_timings", SUMMARIES["vi_alignment_timings"](t.artifact))
display(claims.claims_table(outcomes, profile.name))
print("the same claims on a saved paper-profile run (book/results/):")
display(report.show_saved_run("vi_alignment_timings", "it times the posteriors of vi_alignment's paper profile"))

# %% [markdown]
# **What reproduces and what does not (quick profile).** Every alignment finishes in well
# under a second on two CPU cores, far inside the paper's minute: claim (1) holds and is
# asserted below. Claims (2) and (3) did **not** hold in our stored run and are not
# asserted; the table above reports them with their numbers, and the unit tests apply
# them to a saved paper-profile result (widths 128-1024), where they should be judged.
# Why they fail here (the timings in the tables above are measured afresh at every
# execution, so they differ a little from run to run; the sweep counts do not):
#
# - *(2) time against width.* The number of sweeps the coordinate descent needs varies
#   from pair to pair without following the width (MNIST 8, 10, 12, 8 sweeps at widths
#   32-256; Fashion-MNIST 3, 14, 7, 12), and below width 256 one alignment costs
#   milliseconds to tens of milliseconds of CPU time, where that variation and the noise
#   of a shared machine dominate. Only at width 256 does the cost clearly rise (to a few
#   tenths of a second).
# - *(3) VI alignment against matching the means.* Both matchings take the same number
#   of sweeps at every width: the VI standard deviations of these fits stay small (they
#   start at 0.01), so they barely change the cost matrices and both methods follow the
#   same path. The extra work of the Wasserstein cost is building cost matrices from
#   twice the arrays; at width 256 the linear assignment problems dominate a sweep, and
#   the two CPU times are within the noise of each other (the claims table above
#   gives both). The paper's statement concerns
#   wide networks and a deterministic baseline trained by SGD, which we do not have.
#
# **At the paper's scale** (the reduced run `paper-4widths-16samples` of chapter 7: 100
# epochs on the full data, the paper's widths 128 to 1,024), claims (1) and (2) hold: the
# longest alignment takes 4.8 s, and the CPU time rises at every doubling of the width
# (MNIST 0.02, 0.10, 0.79, 9.5 s; Fashion-MNIST 0.02, 0.10, 1.24, 7.96 s). Claim (3) does
# not: at width 1,024 aligning the posteriors took *less* CPU time than matching their means
# (9.5 against 13.8 s on MNIST, 8.0 against 9.4 s on Fashion-MNIST, one timing each on an
# idle 2-core CPU). The two need similar numbers of sweeps (MNIST 29 and 34, Fashion-MNIST
# 18 and 18), so the extra arrays of the Wasserstein cost do not make it the more demanding
# one in our implementation; a documented difference for that run.
#
# What this notebook asserts, then, is claim (1); the wall time of every alignment is
# measured afresh when the experiment runs, so the check can fail on a slower machine or
# with a pathological number of sweeps.

# %% tags=["nbval-check-output"]
asserted = ("within_a_minute",)
for o in outcomes:
    if o.claim.name in asserted:
        assert o.holds, (o.claim.name, o.detail)
print(f"verified on the {profile.name} profile: " + "; ".join(asserted) + " (claims (2) and (3) reported, not asserted)")

# %% [markdown]
# ## Synthesis
#
# The paper's Fig. A2 is a figure without numbers; beside its statements, ours.

# %% tags=["nbval-ignore-output", "hide-input"]
widest = {ds: t.widths[ds][-1] for ds in experiments.ALIGN_DATASETS}
quoted = rossi.ROSSI_APPC_CLAIMS
rows = []
for ds in experiments.ALIGN_DATASETS:
    w2, wm = t.column(ds, "w2_seconds")[-1], t.column(ds, "wm_seconds")[-1]
    rows.append((f"{ds}: alignment of the widest trained pair (width {widest[ds]}), wall", quoted["within_a_minute"],
                 f"{w2:.2f} s"))
    rows.append((f"{ds}: alignment / matching of the means at width {widest[ds]}, CPU",
                 quoted["vi_costlier_than_sgd"],
                 f"{t.column(ds, 'w2_cpu_seconds')[-1] / t.column(ds, 'wm_cpu_seconds')[-1]:.2f}x"))
    rows.append((f"{ds}: alignment CPU time against width", quoted["time_vs_width"],
                 ", ".join(f"{w}: {s:.3f} s" for w, s in zip(t.widths[ds], t.column(ds, "w2_cpu_seconds")))))
display(paper_vs_ours(rows, profile.name))

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
