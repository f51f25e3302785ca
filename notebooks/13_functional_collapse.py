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
plotting.pairwise_mi_figure(
    np.asarray(res.artifact["mi_id"]),
    np.asarray(res.artifact["mi_ood"]),
    pearson_r=summary["pearson_r"], spearman_rho=summary["spearman_rho"],
    suptitle="Two-member ensembles of bank OptuNets "
             f"({profile.name} profile)");

# %% [markdown]
# The p-value that `scipy` gives for a correlation assumes independent pairs, which pairs
# sharing a network are not (each of our {glue:text}`ch13_nets` networks is in many pairs).
# The claims below judge the correlation by a permutation test over networks instead
# (relabelling the networks keeps the dependence between pairs that share one), and the
# dispersion by the coefficient of variation (standard deviation over mean), a scale-free
# measure: the OOD MI is larger on average, so its raw standard deviation is larger for
# that reason alone.

# %%
display(paper_vs_ours(laurent.collapse_rows(summary), profile.name,
                      scale=SCALE))

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
# networks". Of OptuNet the paper says that its MI is more dispersed than ResNet-18's, which
# only ResNet-18 networks could test, not that its OOD MI is more dispersed than its ID MI: the
# two spread claims below carry the Sec. 5.1 statement to OptuNet (ours), and chapter 14 lists
# them under Figure 3, not Figure 7. The claims are library functions (`symlib.experiments.judging.claims`,
# registered in `symlib.experiments.laurent.collapse`, thresholds in
# `symlib.experiments.judging.thresholds`): "more
# dispersed out of distribution" compares the coefficients of variation, "some positive
# correlation" asks for a correlation whose permutation test over networks excludes zero,
# and "a non-negligible probability" of functional collapse asks that the share of pairs
# whose ID MI is below half the mean have its whole interval above
# {glue:text}`ch13_t_collapse_frequency:.0%` (pairs counted over disjoint pairs, so that no
# network appears twice). The cell after the table asserts that each verdict is the expected one.

# %%
outcomes = claims.evaluate("functional_collapse", summary)
claims.epilogue(outcomes, profile.name, prefix="ch13", glue=glue,
                scale=SCALE)
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
# the authors' recipe, so our networks are less accurate. Beside the `paper-1024nets` run
# below, whose networks follow the authors' recipe, their mean ID MI is
# {glue:text}`ch13_id_vs_g` ({glue:text}`ch13_mean_id:.3f` against
# {glue:text}`ch13_g_mean_id:.3f` nats) and their mean OOD MI {glue:text}`ch13_ood_vs_g`
# ({glue:text}`ch13_mean_ood:.3f` against {glue:text}`ch13_g_mean_ood:.3f`); the pairs are
# all pairs of the converged networks. The ResNet-18 / CIFAR-100 panel (Fig. 3) is the
# previous section's, run in the paper profile only.

# %% [markdown]
# ### At the paper's scale
#
# The paper's bank is {paper}`1,000` OptuNets trained with the authors' recipe (SGD,
# {paper}`60` epochs on the full training set). Our paper profile's bank of
# {glue:text}`ch13_pp_bank` networks (the reference posterior and the deep ensemble of the
# previous chapter, with a margin for networks that stay at chance) is trained by the first
# two jobs of the GPU queue ({doc}`../book/running`), in blocks of
# {glue:text}`ch13_g_block`. Two labelled reductions of it ran:
#
# - `paper-1024nets`: its first {glue:text}`ch13_g_bank:,` networks, {glue:text}`ch13_g_steps`
#   blocks ({glue:text}`ch13_g_gpu_minutes` GPU-minutes on {glue:text}`ch13_g_gpu`,
#   {glue:text}`ch13_g_first`, commit {glue:text}`ch13_g_commits`), scored here in
#   {glue:text}`ch13_g_minutes` minutes on {glue:text}`ch13_g_device` over
#   {glue:text}`ch13_g_pairs:,` random pairs of the converged networks (the paper profile's
#   `collapse_pairs`);
# - `paper-24nets`: a bank of {glue:text}`ch13_s_bank` networks trained on our CPU (all pairs
#   of the converged ones); at its rate the whole bank would take about
#   {glue:text}`ch13_pp_hours` hours here.
#
# The first is run again from the folded blocks, without a GPU, by
#
# ```bash
# python -m symlib gpu install laurent-bank
# python -m symlib run functional_collapse --profile paper \
#     --set bank_used=1024 --label paper-1024nets --out book/results
# ```
#
# With random pairs the permutation test of the correlation cannot be run (relabelling the
# networks needs the value of every pair), so the correlation's interval is then a bootstrap
# over the networks, like the spread ratios' (`symlib.experiments.laurent.collapse.network_bootstrap`).

# %%
from symlib.experiments import gpu_queue

gpu_run = results.load("functional_collapse", "paper-1024nets")
gpu_outcomes = claims.evaluate("functional_collapse", gpu_run["summary"])
bank_prov = gpu_queue.reduction_provenance(
    gpu_run, "laurent-bank", "bank_used", paper_profile.bank_block)
glue_all(glue, "ch13_g",
         laurent.saved_collapse_values(gpu_run, gpu_outcomes)
         | {"block": paper_profile.bank_block,
            "gpu": bank_prov["devices"],
            "gpu_minutes": bank_prov["minutes"],
            "first": bank_prov["first"], "commits": bank_prov["commits"],
            "steps": bank_prov["steps"]})
saved = results.load("functional_collapse", "paper-24nets")
saved_outcomes = claims.evaluate("functional_collapse", saved["summary"])
glue_all(glue, "ch13_s",
         laurent.saved_collapse_values(saved, saved_outcomes))
glue_all(glue, "ch13", laurent.bank_cpu_hours(saved, paper_profile))
# the quick run's mean MI beside paper-1024nets'
glue_all(glue, "ch13", {
    f"{k}_vs_g": ("larger"
                  if (summary[f"mean_{k}"]
                      > gpu_run["summary"][f"mean_{k}"])
                  else "smaller")
    for k in ("id", "ood")})
report.show_saved_run(
    "functional_collapse",
    "a bank of 1,000 OptuNets: more than a day on a CPU")

# %% tags=["nbval-check-output"]
claims.assert_expected(gpu_outcomes, "paper-1024nets", "Laurent et al.",
                       saved=[("paper-24nets", saved_outcomes)])

# %% tags=["hide-input"]
g = gpu_run["summary"]
plotting.pairwise_mi_figure(
    np.asarray(g["mi_id_pairs"]), np.asarray(g["mi_ood_pairs"]),
    pearson_r=g["pearson_r"], spearman_rho=g["spearman_rho"],
    suptitle=f"{g['pairs']:,} pairs of {g['networks']} converged "
             "OptuNets of the paper profile's bank "
             "(paper-1024nets; cf. the paper's Fig. 7)");

# %% [markdown]
# **What the larger run shows** (`paper-1024nets`). {glue:text}`ch13_g_networks` of the
# {glue:text}`ch13_g_bank:,` OptuNets trained past chance (the other {glue:text}`ch13_g_failed` stayed
# at chance, which this small network with its {repo}`3`-unit bottleneck sometimes does). Over
# {glue:text}`ch13_g_pairs:,` random pairs of them, each network in {glue:text}`ch13_g_per_net:.0f`
# pairs on average, the OOD MI has {glue:text}`ch13_g_std_ratio:.2f` times the standard deviation of
# the ID MI ({glue:text}`ch13_g_std_ood:.4f` against {glue:text}`ch13_g_std_id:.4f` nats): the paper's
# words, a higher variance out of distribution, {glue:text}`ch13_g_v_ood_variance_larger`. But its
# mean is {glue:text}`ch13_g_mean_ratio:.2f` times the ID one ({glue:text}`ch13_g_mean_ood:.3f`
# against {glue:text}`ch13_g_mean_id:.3f` nats), so relative to its size the OOD MI is
# {glue:text}`ch13_g_cv_compare` dispersed one: coefficients of variation
# {glue:text}`ch13_g_cv_ood:.3f` (OOD) and {glue:text}`ch13_g_cv_id:.3f` (ID), and the scale-free
# reading of the claim {glue:text}`ch13_g_v_ood_more_dispersed`. The correlation between the ID and
# the OOD MI is Pearson r = {glue:text}`ch13_g_pearson_r:.3f` (Spearman
# {glue:text}`ch13_g_spearman_rho:.3f`): small, and judged by its interval over the
# {glue:text}`ch13_g_networks` networks, "some positive correlation"
# {glue:text}`ch13_g_v_positive_correlation`, as the paper finds for OptuNet (App. D.2) and unlike its
# ResNet-18 (Sec. 5.1). Functional collapse is rare: {glue:text}`ch13_g_below_half` of the
# {glue:text}`ch13_g_pairs:,` pairs have an ID MI below half the mean, and the share over disjoint
# pairs ({glue:text}`ch13_g_v_collapse_frequency`) cannot tell it from the
# {glue:text}`ch13_t_collapse_frequency:.0%` we read "non-negligible" as; the paper gives no share to
# compare. The figure is the paper's Fig. 7 for our networks. Its ID histogram has a second, smaller
# mode of high MI, which the next cell explains.

# %%
acc_mi = laurent.collapse.mi_and_accuracy(g)
glue_all(glue, "ch13_a", acc_mi)
print({k: round(v, 3) for k, v in acc_mi.items()})

# %% [markdown]
# **The second mode is the weak networks.** The networks that pass the convergence rule are not
# equally good: their test accuracies have a median of {glue:text}`ch13_a_median_accuracy:.1%`
# and a tail far below it. A pair's ID MI falls with the lower accuracy of its two networks
# (Pearson r = {glue:text}`ch13_a_r_id_lower:.2f`): a poorly trained network disagrees with
# every other one on MNIST, and its pairs make the second mode. Its OOD MI does not follow (r =
# {glue:text}`ch13_a_r_ood_lower:.2f`). Over the {glue:text}`ch13_a_pairs_both_above:,` pairs
# whose two networks both reach the median accuracy, the mean ID MI is
# {glue:text}`ch13_a_mean_id_both_above:.3f` nats (the other pairs:
# {glue:text}`ch13_a_mean_id_others:.3f`) and the ID-OOD correlation is r =
# {glue:text}`ch13_a_r_both_above:.2f` (the other pairs: {glue:text}`ch13_a_r_others:.2f`). The
# correlation the paper sees for OptuNet is thus clearer among well-trained networks, and
# the weak ones dilute it. This describes one run (its correlations count pairs that share
# networks); it is not a judged claim.
#
# **The earlier reduction** (`paper-24nets`, {glue:text}`ch13_s_minutes` minutes on
# {glue:text}`ch13_s_device`, shared with other jobs): {glue:text}`ch13_s_networks` of its
# {glue:text}`ch13_s_bank` networks converged, giving {glue:text}`ch13_s_pairs` pairs. Its
# spreads are of the same size as the larger run's (standard deviations {glue:text}`ch13_s_std_ood:.3f`
# OOD and {glue:text}`ch13_s_std_id:.3f` ID, coefficients of variation
# {glue:text}`ch13_s_cv_ood:.3f` and {glue:text}`ch13_s_cv_id:.3f`); its correlation, Pearson
# r = {glue:text}`ch13_s_pearson_r:.3f`, has the paper's sign, but with
# {glue:text}`ch13_s_networks` networks the permutation test cannot tell it from zero, and
# the pairs below half the mean number {glue:text}`ch13_s_below_half`. Its verdicts:
# {glue:text}`ch13_s_v_ood_variance_larger` (variance), {glue:text}`ch13_s_v_ood_more_dispersed`
# (dispersion), {glue:text}`ch13_s_v_positive_correlation` (correlation) and
# {glue:text}`ch13_s_v_collapse_frequency` (collapse frequency). Where the two runs' verdicts
# differ, the intervals of the smaller run were too wide to judge: it had
# {glue:text}`ch13_s_networks` networks where the larger has {glue:text}`ch13_g_networks`.

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
