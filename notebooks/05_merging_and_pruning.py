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
from symlib.experiments import claims, plotting, report
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

# %% tags=["hide-input"]
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

# %% tags=["hide-input"]
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
summary = experiments.SUMMARIES["compact_representation"](res.artifact)
fig3 = [o for o in claims.evaluate("compact_representation", summary) if not o.claim.name.startswith("qr_beats_qd")]
display(claims.claims_table(fig3, profile.name))
display(report.show_saved_run("compact_representation", "full-batch HMC on 60,000 images: a GPU",
                              keep=lambda name: not name.startswith("qr_beats_qd")))
near = summary["near_prior"]
display(Table(["quantity", f"ours ({profile.name} profile)"], [
    ("median sigma: HMC q_d / HMC q_r (per sample) / HMC q_r (per chain)",
     f"{med['HMC q_d']:.3g} / {med['HMC q_r']:.3g} / {med['HMC q_r (per chain)']:.3g}"),
    ("median sigma: ensemble q_d / q_r", f"{med['Ensemble q_d']:.3g} / {med['Ensemble q_r']:.3g}"),
    ("median sigma: VI (initial value)", f"{med['VI q']:.3g} ({profile.vi_std_init})"),
    ("weights with sigma within 1.5x of the prior's: HMC q_d / HMC q_r / VI / ensemble q_r",
     " / ".join(f"{100 * near[k]:.1f}%" for k in ("HMC q_d", "HMC q_r", "VI q", "Ensemble q_r"))),
]))

# %% [markdown]
# To look inside HMC's $\sigma_r$ versus $\sigma_d$, the cell below recomputes both summaries
# from the stored samples and splits the first-layer weights by whether their pixel is zero
# in every training image (then their exact posterior is the prior, $N(0, 1)$). It also
# measures how consistently per-sample matching permutes the samples of one chain, and
# recomputes both summaries from one sample per chain (independent draws).

# %%
import jax  # noqa: E402

from symlib.evaluation import summaries  # noqa: E402
from symlib.experiments.registry import load_bnn_data  # noqa: E402
from symlib.symmetry.specs import mlp_permutation_spec  # noqa: E402

x_match = load_bnn_data(profile)["x_train"]
const = np.asarray(x_match.std(0) == 0)
spec = mlp_permutation_spec(1)
C, S = profile.hmc_chains, profile.hmc_samples
stack = jax.tree_util.tree_map(lambda a: np.asarray(a).reshape((-1,) + a.shape[2:]), experiments.hmc_samples(profile))
q_d = summaries.direct_summary(stack)
q_r = summaries.rebasin_summary(stack, spec, method="activation", data=x_match[:5000])
k_d, k_r = q_d.sigma["dense_0"]["kernel"], q_r.sigma["dense_0"]["kernel"]
perm = q_r.perms["P_0"]
same = [float(np.median((perm[c * S:(c + 1) * S] == perm[c * S]).mean(1))) for c in range(C)]
one = jax.tree_util.tree_map(lambda a: a[::S], stack)
one_d = np.median(summaries.flatten_summary(summaries.direct_summary(one))[1])
one_r = np.median(summaries.flatten_summary(summaries.rebasin_summary(one, spec, method="activation",
                                                                      data=x_match[:5000]))[1])
display(Table(["HMC weights", "median sigma_d", "median sigma_r (per sample)"], [
    (f"first layer, the {int(const.sum())} always-zero pixels (exact posterior sigma: 1)",
     f"{np.median(k_d[const]):.3f}", f"{np.median(k_r[const]):.3f}"),
    ("first layer, the other pixels", f"{np.median(k_d[~const]):.3f}", f"{np.median(k_r[~const]):.3f}"),
    ("output layer", f"{np.median(q_d.sigma['dense_1']['kernel']):.3f}",
     f"{np.median(q_r.sigma['dense_1']['kernel']):.3f}"),
    (f"all weights, one sample per chain ({C} independent draws)", f"{one_d:.3f}", f"{one_r:.3f}"),
]))
print("share of hidden units that per-sample matching permutes like the chain's first sample "
      f"(median over the chain's samples), chain by chain: {', '.join(f'{v:.2f}' for v in same)} "
      "(chain 0 holds the reference)")

# %% [markdown]
# **VI.** With the training budget of the previous chapter (250 epochs at learning rate
# 0.005 in the quick profile), VI's standard deviations leave their initial value 0.01 and
# most of them sit at the prior's scale: with 2,000 training examples and a 784-128-10
# network, the data pin down few individual weights, and the KL term pulls the rest to the
# prior. Finding (ii) holds for VI, more extremely than in the paper's histogram (50,000
# examples there).
#
# **Why HMC's $\sigma_r$ is not smaller than $\sigma_d$ here.** The paper's finding (i)
# holds for the ensemble but not for HMC in the quick profile (table above). We traced it
# to two properties of our short HMC chains, not to a defect in how $\sigma$ is computed
# (`direct_summary` and `rebasin_summary` are unit-tested against numpy on permuted
# stacks):
#
# - *The weights are prior-dominated and not yet at equilibrium.* A first-layer weight
#   fed by a pixel that is zero in all 2,000 training images has exactly the prior
#   $N(0, 1)$ as its posterior, yet its $\sigma_d$ across our samples is well below 1 and
#   about the same as for the other first-layer weights (table above): the chains started
#   from a He initialisation (standard deviation 0.05) and have diffused only part of the
#   way to the prior's scale, and at this scale the data constrain almost no single
#   first-layer weight (the first layer is 99% of the weights).
# - *Per-sample matching scrambles autocorrelated samples.* Matching each sample to the
#   reference on its own permutes, in every chain but the reference's, a large share of
#   the hidden units differently from one sample to the next (printed above): the matching
#   of units whose weights the data barely constrain is decided by noise. Successive
#   samples of a chain are strongly correlated, so scrambling them destroys that
#   correlation and adds spread; $\sigma_r$ exceeds $\sigma_d$ in the first layer and is
#   smaller only in the output layer. With one sample per chain (independent draws, no
#   within-chain correlation to destroy) the two medians are close (last row).
#
# In the paper's setting (1,000 samples from long, well-mixed chains) the prior-dominated
# weights sit at $\sigma \approx 1$ in any frame, so scrambling them changes nothing, and
# re-basin shrinks the spread of the weights the data do constrain. So the quick profile
# does not reproduce finding (i) for HMC; the claim is reported with its numbers and is not
# asserted here. The per-chain summary of the previous chapter, which keeps each chain's
# frame, is shown for comparison but is not the paper's method and is not used to stand in
# for it.
#
# **Stitching** (finding iii) is asserted: pruning the ensemble's means by HMC's
# $\sigma_r$ beats both single-method curves by far more than the bar, because the
# ensemble's own $\sigma_r$ (spread of five MAP networks) ranks weights by a noisy
# criterion and HMC's means are poor networks.
#
# The cell below asserts the Fig. 3 claims that hold in this profile (ensemble shrinkage,
# (ii) and (iii)); the HMC shrinkage claim is displayed above and deliberately left out.

# %% tags=["nbval-check-output"]
asserted = [o for o in fig3 if o.claim.name != "rebasin_shrinks_sigma_hmc"]
failed = [(o.claim.name, o.detail) for o in asserted if not o.holds]
assert not failed, failed
print(f"asserted: {', '.join(o.claim.name for o in asserted)}; reported only: rebasin_shrinks_sigma_hmc "
      f"({'holds' if next(o for o in fig3 if o.claim.name == 'rebasin_shrinks_sigma_hmc').holds else 'does not hold'}"
      " in this profile)")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
