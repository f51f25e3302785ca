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
# **Core idea.** Once every posterior approximation is a diagonal Gaussian (HMC's samples
# and the ensemble's members summarised after re-basin, VI by construction) in one shared
# frame (through matching), their per-weight
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
from IPython.display import display
from myst_nb import glue

from symlib import experiments
from symlib.experiments import plotting, report, xiao
from symlib.experiments.judging import claims, scales
from symlib.experiments.profiles import get_profile
from symlib.experiments.table import glue_all

plotting.set_style()
profile = get_profile()
print(profile.describe())
print(f"HMC budget ({profile.name} profile): {xiao.hmc_budget(profile)}")
glue("ch05_hmc_budget", str(xiao.hmc_budget(profile)), display=False)
glue("ch05_profile", profile.name, display=False)

# %% [markdown]
# The summaries come from the experiment of the previous chapter (loaded from the
# artifact cache when it ran); its HMC samples are, in this run's
# ({glue:text}`ch05_profile`) profile, {glue:text}`ch05_hmc_budget`.

# %%
res = experiments.run("compact_representation", profile)
summary = experiments.SUMMARIES["compact_representation"](res.artifact)
print(f"{len(res.replicates)} independent runs of "
      f"{res.chains_per_replicate} HMC chains, one ensemble and one "
      "VI fit each; the histograms show the first run, "
      "the pruning curves and the claims all runs")

# %% [markdown]
# ## Standard deviations before and after re-basin (Figure 3, left)

# %% tags=["hide-input"]
# the first of the independent runs
xiao.sigma_histograms(res.replicates[0], len(res.replicates));

# %% [markdown]
# ## Pruning by uncertainty (Figure 3, right)
#
# Keep the fraction of weights (over all parameters) with the lowest $\sigma$, set the
# others to zero, and evaluate the mean network on the test set.

# %%
# by curve: mean accuracy over the runs and its standard error
prune = res.pruning()
xiao.pruning_figure(prune, len(res.replicates));

# %%
display(xiao.pruning_table(prune, xiao.PRUNING_LABELS))

# %% [markdown]
# ## Synthesis
#
# {cite:t}`xiao2023compact` (Sec. 3.2) observe that (i) re-basin reduces the standard
# deviations overall; (ii) HMC and VI put many weights at $\sigma \approx 1$, the prior's
# scale, a sign that the Bayesian methods switch those weights off; and (iii) pruning by
# HMC's $\sigma_r$ while keeping the ensemble's means ("stitched") significantly beats
# pruning with either method alone. The figure has no printed numbers. Each observation is
# a registered claim (`symlib.experiments.xiao`, thresholds in
# `symlib.experiments.judging.thresholds`), evaluated below on this run, with its effect, its
# interval over the independent units it names, the threshold and the verdict:

# %%
every = claims.evaluate("compact_representation", summary)
fig3 = [o for o in every if "Fig. 3" in o.claim.source]
fig3_names = {o.claim.name for o in fig3}
claims.epilogue(fig3, profile.name, prefix="ch05", glue=glue,
                scale=scales.scale_label("compact_representation",
                                         profile.name))
saved_table = report.show_saved_run(
    "compact_representation",
    "full-batch HMC on the full training set: a GPU",
    keep=lambda name: name in fig3_names)
if saved_table is not None:
    display(saved_table)
display(xiao.sigma_summary_table(summary, profile, len(res.replicates)))
glue_all(glue, "ch05", xiao.sigma_values(summary))

# %% [markdown]
# To look inside HMC's $\sigma_r$ versus $\sigma_d$, the cell below recomputes both summaries
# from all the stored samples (every chain pooled, not the runs the claims are judged over)
# and splits the first-layer weights by whether their pixel is zero
# in every training image (then their exact posterior is the prior, $N(0, 1)$). It also
# measures how consistently per-sample matching permutes the samples of one chain, and
# recomputes both summaries from one sample per chain (independent draws).

# %%
inspection = xiao.hmc_sigma_inspection(profile)
display(xiao.sigma_inspection_table(inspection))
print(xiao.matching_consistency_line(inspection))
glue_all(glue, "ch05", xiao.sigma_inspection_values(inspection, profile))

# %% [markdown]
# **Finding (ii), against a known posterior.** "Lots of weights with a variance close to
# one" is read by the paper as mode collapse: under the standard Gaussian prior, weights the
# data do not need keep the prior's $\sigma = 1$. A share of weights near $1$ cannot tell a
# posterior that reached the prior on those weights from a sampler that is still on its
# way, so the claim is judged on weights whose exact posterior we know. A first-layer
# weight fed by a pixel that is zero in all {glue:text}`ch05_n_train` training images does
# not change the likelihood, so its posterior is the prior and its $\sigma$ must be $1$;
# there are {glue:text}`ch05_n_const` such pixels here. Their median $\sigma$ is
# {glue:text}`ch05_const_vi` for VI, {glue:text}`ch05_const_d` for HMC's $\sigma_d$ and
# {glue:text}`ch05_const_r` for its $\sigma_r$ (table above). The claim's effect, the worst
# of the three as $|\log(\sigma / 1)|$ averaged over these pixels, is
# {glue:text}`ch05_e_bayesian_sigma_near_prior`, against a bound of $\log 1.5$: the
# verdict is *{glue:text}`ch05_v_bayesian_sigma_near_prior`*. The share of all weights
# within a factor $1.5$ of the prior's $\sigma$, the only reading before this check was
# added, is {glue:text}`ch05_near_hmc_d` for HMC's $q_d$, {glue:text}`ch05_near_hmc_r` for
# its $q_r$ and {glue:text}`ch05_near_vi` for VI. That reading is no longer the claim
# because it cannot fail the right way: in a run whose chains never reached the prior's
# scale on the weights where the posterior is known, a share could still be large, made
# of other weights that happen to lie near $1$.
#
# **VI.** With the training budget of the previous chapter ({glue:text}`ch05_vi_epochs`
# epochs at learning rate {glue:text}`ch05_vi_lr` in this profile), VI's standard deviations
# leave their initial value {glue:text}`ch05_vi_std_init` (median now
# {glue:text}`ch05_med_vi`): with {glue:text}`ch05_n_train` training examples and a
# {glue:text}`ch05_arch` network the data pin down few individual weights, and the KL term
# pulls the rest to the prior. The paper does not give its training-set size (only
# "MNIST"); ours is far smaller.
#
# **HMC's $\sigma_r$ against $\sigma_d$.** Finding (i), that re-basin shrinks the standard
# deviations, is judged per hidden unit (the units a permutation exchanges): for the
# ensemble {glue:text}`ch05_v_rebasin_shrinks_sigma_ensemble`
# ({glue:text}`ch05_e_rebasin_shrinks_sigma_ensemble`), for HMC
# {glue:text}`ch05_v_rebasin_shrinks_sigma_hmc` ({glue:text}`ch05_e_rebasin_shrinks_sigma_hmc`).
# Where HMC's does not shrink, we traced it to two properties of our short HMC chains, not to
# a defect in how $\sigma$ is computed (`direct_summary` and `rebasin_summary` are
# unit-tested against numpy on permuted stacks):
#
# - *The weights are prior-dominated and not yet at equilibrium.* The always-zero pixels'
#   weights have a $\sigma_d$ of {glue:text}`ch05_const_d`, about the same as the other
#   first-layer weights ({glue:text}`ch05_other_d`), where the exact value is $1$: the chains
#   started from a He initialisation (standard deviation {glue:text}`ch05_init_std`) and
#   have diffused only part of the way to the prior's scale, and at this scale the data
#   constrain almost no single first-layer weight (the first layer has
#   {glue:text}`ch05_first_layer_share` of the weights).
# - *Per-sample matching scrambles autocorrelated samples.* Matching each sample to the
#   reference on its own permutes, in every chain but the reference's, a large share of
#   the hidden units differently from one sample to the next (the median share permuted
#   like the chain's first sample is {glue:text}`ch05_same_median`, printed above by
#   chain): the matching of units whose weights the data barely constrain is decided by
#   noise. Successive samples of a chain are correlated, so scrambling them destroys that
#   correlation and adds spread. With one sample per chain (independent draws, no
#   within-chain correlation to destroy) the medians of $\sigma_d$ and $\sigma_r$ are
#   {glue:text}`ch05_one_d` and {glue:text}`ch05_one_r` (last row).
#
# In the paper's setting ({paper}`1,000` samples) the prior-dominated weights would sit at
# $\sigma \approx 1$ in any frame if the chains reached equilibrium, so scrambling them
# would change nothing, and re-basin would shrink the spread of the weights the data do
# constrain. The per-chain summary of the previous chapter, which keeps each chain's frame,
# is shown for comparison but is not the paper's method and does not stand in for it.
#
# **Stitching** (finding iii): the stitched curve's gain over the better single-method
# curve, averaged over the pruning levels, is
# {glue:text}`ch05_e_stitched_pruning_wins` (test accuracy as a fraction); verdict
# *{glue:text}`ch05_v_stitched_pruning_wins`*. The ensemble's own $\sigma_r$ (spread of a
# few MAP networks) ranks weights by a noisy criterion, and HMC's means are poor networks.
#
# The cell below asserts that each Fig. 3 claim has its expected verdict in this profile:
# the paper's, or a difference registered with its reason (printed above the table).

# %% tags=["nbval-check-output"]
claims.assert_expected(fig3, profile.name, "Fig. 3")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
