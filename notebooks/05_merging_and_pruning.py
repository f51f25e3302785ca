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
# # Comparing, merging and pruning BNNs in weight space
#
# Reproduces Section 3.2 and Figure 3 of {cite:t}`xiao2023compact`.
#
# **Core idea.** Once every posterior approximation is a diagonal Gaussian in one shared
# frame (HMC and ensemble through re-basin, VI by construction), their per-weight
# uncertainties can be compared directly, and even combined: take the means of one method
# and the standard deviations of another, after matching the two into the same frame.
# The standard deviations are useful in their own right: weights with a large $\sigma$
# are the ones the data do not pin down, so pruning them first should cost little
# accuracy.
#
# This notebook shows:
#
# - histograms of $\sigma_d$ and $\sigma_r$ for HMC and the ensemble, and of VI's $\sigma$
#   (Figure 3, left);
# - test accuracy of the mean network when only the weights with the lowest $\sigma$ are
#   kept, for the ensemble alone, HMC alone, the ensemble's means with HMC's standard
#   deviations ("stitched"), and VI (Figure 3, right).

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display

from symlib import experiments
from symlib.experiments import plotting
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import Table

plotting.set_style()
profile = get_profile()
print(profile.describe())

# %% [markdown]
# The summaries come from the experiment of the previous chapter (loaded from the
# artifact cache when it ran).

# %%
res = experiments.run("compact_representation", profile)
sig, med = res.sigma, res.median_sigma  # by approximation (the rows of Table 1)

# %% [markdown]
# ## Standard deviations before and after re-basin (Figure 3, left)

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.3), constrained_layout=True)
bins = np.logspace(np.log10(max(1e-4, min(v.min() for v in sig.values()) + 1e-12)),
                   np.log10(max(v.max() for v in sig.values())), 50)
sigma_labels = {"q_d": r"$\sigma_d$", "q_r": r"$\sigma_r$", "q_r (per chain)": r"$\sigma_r$ per chain"}
columns = {"HMC": (("HMC q_d", "q_d"), ("HMC q_r", "q_r"), ("HMC q_r (per chain)", "q_r (per chain)")),
           "Ensemble": (("Ensemble q_d", "q_d"), ("Ensemble q_r", "q_r"))}
for ax, (method, cols) in zip(axes[:2], columns.items()):
    for (col, kind), color in zip(cols, plotting.PALETTE):
        ax.hist(sig[col], bins=bins, histtype="step", lw=1.5, color=color,
                label=f"{sigma_labels[kind]} (median {med[col]:.3g})")
    ax.set_title(method)
axes[2].hist(sig["VI q"], bins=bins, histtype="step", lw=1.5, color=plotting.PALETTE[3],
             label=f"VI (median {med['VI q']:.3g})")
axes[2].set_title("mean-field VI")
for ax in axes:
    ax.set_xscale("log")
    ax.set_xlabel(r"per-weight standard deviation $\sigma$")
    ax.legend(fontsize=8)
axes[0].set_ylabel("number of weights");

# %% [markdown]
# ## Pruning by uncertainty (Figure 3, right)
#
# Keep the fraction of weights (over all parameters) with the lowest $\sigma$, set the
# others to zero, and evaluate the mean network on the test set.

# %%
prune = res.pruning
labels = {"ensemble": "ensemble only", "hmc": "HMC only", "ensemble mu + hmc sigma": r"ensemble $\mu_r$ + HMC $\sigma_r$",
          "vi": "VI"}
fig, ax = plt.subplots(figsize=(5.5, 3.6), constrained_layout=True)
for i, (key, label) in enumerate(labels.items()):
    ax.plot(100 * (1 - prune.keep_fraction), 100 * prune.accuracy[key], "o-", ms=3, label=label, color=plotting.PALETTE[i])
ax.set_xlabel("weights pruned (%)")
ax.set_ylabel("test accuracy of the mean (%)")
ax.set_title("Pruning the weights with the largest sigma")
ax.legend();

# %%
rows = [(f"{100 * (1 - f):.0f}%", *(f"{100 * prune.accuracy[k][i]:.2f}" for k in labels))
        for i, f in enumerate(prune.keep_fraction)]
display(Table(["pruned", *labels.values()], rows))

# %% [markdown]
# ## Synthesis
#
# {cite:t}`xiao2023compact` (Sec. 3.2) observe that (i) re-basin reduces the standard
# deviations overall; (ii) HMC and VI put many weights at $\sigma \approx 1$, the prior's
# scale, a sign that the Bayesian methods switch those weights off; and (iii) pruning by
# HMC's $\sigma_r$ while keeping the ensemble's means ("stitched") significantly beats
# pruning with either method alone. The figure has no printed numbers; here is what we
# measured:

# %%
heavy = prune.keep_fraction <= 0.3
gain = {k: float(np.mean(prune.accuracy["ensemble mu + hmc sigma"][heavy] - prune.accuracy[k][heavy]))
        for k in ("ensemble", "hmc")}
paper = experiments.XIAO_FIG3_CLAIMS
near_prior = {k: float(np.mean(np.abs(np.log(sig[k])) < np.log(1.5))) for k in ("HMC q_r", "VI q", "Ensemble q_r")}
display(Table(["claim", "paper", f"ours ({profile.name} profile)"], [
    ("(i) re-basin shrinks sigma: median sigma_r vs sigma_d, HMC (per-sample matching, the paper's)",
     paper["rebasin_shrinks_sigma"],
     f"{med['HMC q_r']:.3g} vs {med['HMC q_d']:.3g}"),
    ("(i) same, HMC with one permutation per chain", "not studied",
     f"{med['HMC q_r (per chain)']:.3g} vs {med['HMC q_d']:.3g}"),
    ("(i) same, ensemble", paper["rebasin_shrinks_sigma"], f"{med['Ensemble q_r']:.3g} vs {med['Ensemble q_d']:.3g}"),
    ("(ii) weights with sigma within 1.5x of the prior's 1: HMC q_r / VI / ensemble q_r", paper["sigma_near_prior"],
     " / ".join(f"{100 * near_prior[k]:.1f}%" for k in ("HMC q_r", "VI q", "Ensemble q_r"))),
    ("(iii) stitched minus ensemble-only accuracy, mean over >= 70% pruned", paper["stitched_pruning_gain"],
     f"{100 * gain['ensemble']:+.2f} points"),
    ("(iii) stitched minus HMC-only accuracy, mean over >= 70% pruned", paper["stitched_pruning_gain"],
     f"{100 * gain['hmc']:+.2f} points"),
]))

# %% [markdown]
# A caveat on VI in the quick profile: its standard deviations barely leave their
# initialisation (0.01; see the narrow spike in the histogram). The quick profile gives VI
# only a few hundred Adam steps on 2,000 examples, too few for the softplus parameters of
# $\sigma$ to travel to the prior's scale, so finding (ii) cannot show for VI here; the
# paper profile runs 50 epochs on 50,000 examples. VI's pruning curve above reflects
# these small, early differences between its $\sigma$.
#
# Finding (i) holds clearly for the ensemble. For HMC it depends on how the samples are
# matched, and in the quick profile the paper's per-sample version does **not** shrink the
# standard deviations: with chains started from independent initialisations, every
# sample of the second chain is matched to a reference in the first chain on its own,
# and for the many weights the data barely constrain (most first-layer weights) these
# per-sample matches disagree with each other, so samples of one chain are scattered
# over several unit orders and their spread grows. Matching each chain once, through its
# mean network, removes only the permutation between chains and leaves the within-chain
# frame intact; the spread then shrinks slightly, in line with the paper's remark that
# HMC's large standard deviations are hardly affected by re-basin.
#
# The cell below asserts what holds in this profile: re-basin shrinks the median standard
# deviation of the ensemble, and of HMC when each chain is matched once. The paper's
# per-sample version for HMC is reported above with its numbers, not asserted. Whether
# the stitched pruning curve beats both others is reported in the table, not asserted.

# %% tags=["nbval-check-output"]
assert med["Ensemble q_r"] < med["Ensemble q_d"], (med["Ensemble q_r"], med["Ensemble q_d"])
assert med["HMC q_r (per chain)"] < med["HMC q_d"], (med["HMC q_r (per chain)"], med["HMC q_d"])
print("claim verified: re-basin shrinks the per-weight standard deviations (ensemble; HMC matched per chain)")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
