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
# # Do independently trained networks collapse onto the same function?
#
# Reproduces Section 5.1 and Appendix D.2 (Figure 7, OptuNet on MNIST / Fashion-MNIST) of
# {cite:t}`laurent2024symmetry`.
#
# **Core idea.** Permutations make the posterior hold many copies of every mode, but that
# says nothing about whether two independently trained networks compute different
# functions. Take two networks as a two-member ensemble: the mutual information (MI)
# between the prediction and the member, i.e. the Jensen-Shannon divergence of their two
# predictive distributions, averaged over a test set, is zero when they agree everywhere
# (functional collapse) and grows with their disagreement. Measured over many pairs,
# in distribution and out of distribution, it shows how diverse an ensemble drawn from
# the pool is, and whether in-distribution diversity predicts OOD diversity.
#
# This notebook shows, for pairs of networks of the reference bank of the previous chapter:
#
# - the distribution of the pairwise MI on MNIST test images (ID) and on Fashion-MNIST (OOD);
# - their relation: scatter, Pearson and Spearman correlations, with a permutation test
#   over networks;
# - the paper's claims about them (App. D.2), judged with their uncertainty.

# %% tags=["hide-cell"]
import numpy as np
from IPython.display import display
from myst_nb import glue

from symlib import experiments
from symlib.experiments import laurent, plotting, report
from symlib.experiments.judging import claims, results, scales
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import paper_vs_ours
from symlib.experiments.table import glue_all

plotting.set_style()
profile = get_profile()
print(profile.describe())
paper_profile = get_profile("paper")
SCALE = scales.scale_label("functional_collapse", profile.name)

# %% [markdown]
# ## Pairwise mutual information
#
# The networks are the converged OptuNets of `optunet_bank` (shared with the previous
# chapter through the artifact cache). For every pair (all pairs in the quick profile;
# `collapse_pairs` random pairs in the paper profile), `symlib.evaluation.pairwise_mutual_information`
# averages the two-member ensemble's MI over `post_n_eval` MNIST and as many Fashion-MNIST
# test images.

# %%
res = experiments.run("functional_collapse", profile)
summary = experiments.SUMMARIES["functional_collapse"](res.artifact)
print(laurent.collapse_line(summary))
glue_all(glue, "ch13", laurent.collapse_values(summary))

# %% tags=["hide-input"]
plotting.pairwise_mi_figure(np.asarray(res.artifact["mi_id"]), np.asarray(res.artifact["mi_ood"]),
                            pearson_r=summary["pearson_r"], spearman_rho=summary["spearman_rho"],
                            suptitle=f"Two-member ensembles of bank OptuNets ({profile.name} profile)");

# %% [markdown]
# The p-value that `scipy` gives for a correlation assumes independent pairs, which pairs
# sharing a network are not (each of our {glue:text}`ch13_nets` networks is in many pairs).
# The claims below judge the correlation by a permutation test over networks instead
# (relabelling the networks keeps the dependence between pairs that share one), and the
# dispersion by the coefficient of variation (standard deviation over mean), a scale-free
# measure: the OOD MI is larger on average, so its raw standard deviation is larger for
# that reason alone.

# %%
display(paper_vs_ours(laurent.collapse_rows(summary), profile.name, scale=SCALE))

# %% [markdown]
# ## ResNet-18 on CIFAR-100 (Fig. 3; paper profile only)
#
# `rn18_collapse_cifar100` (`symlib.experiments.laurent.posteriors_resnet`) computes the same pairwise
# MI over `collapse_pairs` pairs of the ResNet-18 bank of the previous chapter's CIFAR-100
# section ({glue:text}`ch13_rn18_nets` networks in the paper profile, trained with the
# authors' recipe), on {glue:text}`ch13_rn18_eval` CIFAR-100 test images (ID) and as many
# SVHN test images (OOD). It needs the data and a GPU; run it with
#
# ```bash
# python -m symlib run rn18_collapse_cifar100 --profile paper --out book/results
# ```
#
# and `book/results/rn18_collapse_cifar100-paper.json` is shown here. The TinyImageNet panel
# (App. D.2, Fig. 8) is `rn18_collapse_tiny_imagenet`, the same computation on TinyImageNet's
# validation images (ID) and Textures (DTD, `symlib.data.load_textures`, OOD); it needs the
# data and a GPU too, and no saved run of it is shown yet.

# %%
glue_all(glue, "ch13", laurent.collapse_resnet_values(paper_profile))
record = results.load("rn18_collapse_cifar100", "paper")
if record is not None:
    print(laurent.resnet_collapse_line(record))
display(paper_vs_ours(laurent.resnet_collapse_rows(record), "paper"))


# %% [markdown]
# ## Synthesis: the paper's claims, as code
#
# {cite:t}`laurent2024symmetry` find for ResNet-18 on CIFAR-100 (Sec. 5.1, Fig. 3) that the
# in-distribution MI of two networks varies little, the OOD MI much more, with no
# significant correlation between them; for OptuNet (App. D.2) both are more dispersed and
# there is some positive correlation, "a high chance of functional collapse in small
# networks". The claims are library functions (`symlib.experiments.judging.claims`, registered in
# `symlib.experiments.laurent.collapse`, thresholds in `symlib.experiments.judging.thresholds`): "more
# dispersed out of distribution" compares the coefficients of variation, "some positive
# correlation" asks for a correlation whose permutation test over networks excludes zero,
# and "a non-negligible probability" of functional collapse for a share of pairs whose ID MI
# is below half the mean whose whole interval lies above
# {glue:text}`ch13_t_collapse_frequency:.0%` (counted over disjoint pairs, so that no network
# appears twice). The cell after the table asserts that each verdict is the expected one.

# %%
outcomes = claims.evaluate("functional_collapse", summary)
claims.epilogue(outcomes, profile.name, prefix="ch13", glue=glue, scale=SCALE)
glue_all(glue, "ch13", laurent.claim_threshold_values(outcomes))

# %% tags=["nbval-check-output"]
claims.assert_expected(outcomes, profile.name, "Laurent et al.")

# %% [markdown]
# **What our run says.** Over {glue:text}`ch13_pairs` pairs of {glue:text}`ch13_nets`
# networks, the OOD MI has the larger standard deviation ({glue:text}`ch13_std_ood:.4f`
# against {glue:text}`ch13_std_id:.4f` nats) but also the larger mean
# ({glue:text}`ch13_mean_ood:.3f` against {glue:text}`ch13_mean_id:.3f`); relative to the
# mean, the coefficients of variation are {glue:text}`ch13_cv_ood:.3f` (OOD) and
# {glue:text}`ch13_cv_id:.3f` (ID). The paper's words read literally, a higher variance out
# of distribution: {glue:text}`ch13_v_ood_variance_larger`
# ({glue:text}`ch13_e_ood_variance_larger`); relative to the mean, more dispersed:
# {glue:text}`ch13_v_ood_more_dispersed` ({glue:text}`ch13_e_ood_more_dispersed`). The
# correlation between the ID and the OOD MI is Pearson r = {glue:text}`ch13_pearson_r:.3f`
# (Spearman {glue:text}`ch13_spearman_rho:.3f`); some positive correlation:
# {glue:text}`ch13_v_positive_correlation` ({glue:text}`ch13_e_positive_correlation`).
# {glue:text}`ch13_below_half:.1%` of all pairs have an ID MI below half the mean, the
# paper's sign of functional collapse; a non-negligible share, judged over disjoint pairs:
# {glue:text}`ch13_v_collapse_frequency` ({glue:text}`ch13_e_collapse_frequency`).
#
# Differences from the paper: our bank is the quick profile's (few networks trained with
# Adam for a few epochs, previous chapter) instead of {paper}`1,000` networks trained with
# the authors' recipe, so our networks are less accurate and their MI larger; the pairs are
# all pairs of the converged networks. The ResNet-18 / CIFAR-100 panel (Fig. 3) is the
# previous section's, run in the paper profile only.

# %% [markdown]
# ### At the paper's scale
#
# The paper's bank is {paper}`1,000` OptuNets trained with the authors' recipe (SGD,
# {paper}`60` epochs on the full training set); the paper profile's bank of
# {glue:text}`ch13_pp_bank` would take about {glue:text}`ch13_pp_hours` hours on our CPU at
# the rate of the reduction below. We ran the largest reduction that fitted a
# session, labelled as such: the same recipe and data with a bank of
# {glue:text}`ch13_s_bank` networks (all pairs of the converged ones). The same claims are
# checked on it below (and by the unit tests).

# %%
saved = results.load("functional_collapse", "paper-24nets")
saved_outcomes = claims.evaluate("functional_collapse", saved["summary"])
glue_all(glue, "ch13", laurent.saved_collapse_values(saved, paper_profile, saved_outcomes))
report.show_saved_run("functional_collapse", "a bank of 1,000 OptuNets: more than a day on a CPU")

# %% [markdown]
# **What the reduced paper-scale run shows** (`paper-24nets`, {glue:text}`ch13_s_minutes`
# minutes on {glue:text}`ch13_s_device`, shared with other jobs). {glue:text}`ch13_s_converged` of the
# {glue:text}`ch13_s_bank` OptuNets trained past chance (the authors' convergence threshold;
# the other {glue:text}`ch13_s_failed` stayed at chance, which this small network with its
# {repo}`3`-unit bottleneck sometimes does), giving {glue:text}`ch13_s_pairs` pairs. The
# OOD MI has the larger standard deviation ({glue:text}`ch13_s_std_ood:.3f` against
# {glue:text}`ch13_s_std_id:.3f` nats) and the larger mean ({glue:text}`ch13_s_mean_ood:.2f`
# and {glue:text}`ch13_s_mean_id:.2f` nats); relative to the mean the two spreads are
# {glue:text}`ch13_s_cv_ood:.3f` (OOD) and {glue:text}`ch13_s_cv_id:.3f` (ID), so by the
# coefficient of variation the OOD MI is {glue:text}`ch13_s_cv_compare` dispersed one. The
# correlation is
# Pearson r = {glue:text}`ch13_s_pearson_r:.3f` (Spearman {glue:text}`ch13_s_spearman_rho:.3f`),
# with p = {glue:text}`ch13_s_pearson_p:.2f` even if the pairs were independent, which they
# are not (each network is in {glue:text}`ch13_s_per_net` pairs). So with the authors'
# recipe and all of MNIST the sign of the paper's correlation comes out, but not a
# correlation one could tell from zero; the pattern is closer to the paper's ResNet-18
# finding (no significant correlation) than to its OptuNet one. Functional collapse is rare
# here too: {glue:text}`ch13_s_below_half` of {glue:text}`ch13_s_pairs` pairs have an ID MI
# below half the mean. The claims table above judges the four claims over the networks
# (the ratios of the two standard deviations and of the two coefficients of variation with a
# bootstrap over networks, the correlation with a permutation test that moves networks, not
# pairs, and the collapse frequency on disjoint pairs):
# {glue:text}`ch13_s_v_ood_variance_larger` (variance), {glue:text}`ch13_s_v_ood_more_dispersed` (dispersion),
# {glue:text}`ch13_s_v_positive_correlation` (correlation) and
# {glue:text}`ch13_s_v_collapse_frequency` (collapse frequency).

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
