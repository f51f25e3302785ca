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
# # When do hidden units change places during training?
#
# Reproduces Section 5.2 and Figure 4 (left, MNIST) of {cite:t}`laurent2024symmetry`, and
# says how to run its right panel (ResNet-18 on CIFAR-100) in the paper profile.
#
# **Core idea.** The identifiable network puts each layer's hidden units in a fixed order:
# remove the scaling symmetry (unit-norm incoming weights), then sort the units by their
# largest incoming weight. Follow that ordering along training: whenever two units trade
# places, the network has "permuted" with respect to its canonical form. Counting the
# pairs of units that trade places at every SGD step, and turning the count into Kendall's
# rank correlation $\tau$ between the orderings before and after the step ($\tau = 1$:
# nothing moved), shows when training moves between permutation-related regions.
#
# This notebook shows, for the paper's OptuNet and for ReLU MLPs trained with the same
# schedule (and a weight decay of ours, chapter 10):
#
# - Kendall's $\tau$ between successive steps, averaged over independent runs, along
#   training with the paper's learning-rate schedule (halved twice);
# - where the changes happen (the high learning-rate phases) and how far they undo
#   themselves: the net change of the ordering over whole epochs;
# - whether late in training the ordering is (nearly) frozen.

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
from symlib.symmetry.architectures import resnet18_permutation_spec

plotting.set_style()
profile = get_profile()
print(profile.describe())
glue("ch11_mlp_hidden", " and ".join(map(str, profile.laurent_hidden)),
     display=False)

# %% [markdown]
# ## OptuNet
#
# The OptuNets of the min-mass chapter (shared through the artifact cache): the authors'
# recipe, SGD with learning rate {paper}`0.04` halved after a quarter and after half of
# training. The compiled training loop counts, after every step, the pairs of units whose
# order changed (`symlib.symmetry.neuron_order.swap_counter`, which reads the
# architecture from its permutation and scaling specs). OptuNet has two permuted layers: the
# {repo}`10` channels of the grouped convolution, which can only be permuted within their
# group ($10 / 2 = 5$ channels, so $2 \times \binom{5}{2} = 20$ pairs can swap, not
# $\binom{10}{2} = 45$), and the {repo}`3` hidden dense units ($\binom{3}{2} = 3$ pairs).
# The first convolution's {repo}`2` channels are left out: permuting them would also swap
# the groups of the second convolution, a symmetry the spec does not list. Runs below
# {repo}`15%` test accuracy are left out (the authors' rule; see the previous chapter).

# %%
res = experiments.run("laurent_optunets", profile)
summary = experiments.SUMMARIES["laurent_optunets"](res.artifact)
keep = np.flatnonzero(res.converged)
# (runs, epochs, steps per epoch, permutations):
# pairs swapped in the step
swaps = res.swaps[keep]
# per permutation: (runs, epochs, units)
epoch_stats = [s[keep] for s in res.epoch_stats]
print(laurent.optunet_swap_line(res))
glue_all(glue, "ch11", laurent.optunet_swap_values(res, profile))
glue_all(glue, "ch11_quick",
         {"nets": int(res.converged.size),
          "dropped": int(res.converged.size - keep.size)})

# %% [markdown]
# ### Kendall's τ between successive steps (Figure 4, left)

# %% tags=["hide-input"]
plotting.swap_figure(swaps, epoch_stats, res.units, res.blocks,
                     laurent.optunet_swap_labels(res), res.lr,
                     res.milestones);

# %% [markdown]
# ### Where the changes happen
#
# For each learning-rate phase: the mean number of swapped pairs per step, the share of
# steps with at least one swap, the summed per-step swaps of an epoch against the net
# change of the ordering over that epoch (the rest are swaps undone within the epoch, a
# flicker between units whose statistics are nearly tied, the "instabilities" the paper
# attributes to the sorting statistic).

# %%
display(laurent.phase_table(summary["swaps"], res.perm_names, res.lr))
print(laurent.late_swaps_line(summary["swaps"]))

# %% [markdown]
# ## The same on MLPs
#
# The `laurent_nets` MLPs of the min-mass chapter (two hidden layers of
# {glue:text}`ch11_mlp_hidden` units, the OptuNet schedule with a weight decay of ours) ran
# the same counters.

# %%
res_mlp = experiments.run("laurent_mlps", profile)
widths = res_mlp.sizes[1:-1]
summary_mlp = experiments.SUMMARIES["laurent_mlps"](res_mlp.artifact)
mlp_sw = summary_mlp["swaps"]
print(laurent.mlp_swap_line(res_mlp))

# %% tags=["hide-input"]
plotting.swap_figure(res_mlp.swaps, res_mlp.epoch_stats, widths,
                     [1] * len(widths),
                     laurent.hidden_layer_labels(widths),
                     res_mlp.lr, res_mlp.milestones);

# %%
display(laurent.phase_table(
    mlp_sw, [f"layer {l + 1}" for l in range(len(widths))],
    res_mlp.lr))
print(laurent.late_swaps_line(mlp_sw))

# %% [markdown]
# ## The paper's findings beside ours
#
# Figure 4 of the paper has no printed numbers, so the paper's column states what it shows.

# %%
display(paper_vs_ours(
    laurent.fig4_rows(summary["swaps"], mlp_sw, res, widths),
    profile.name,
    scale="OptuNets: "
          f"{scales.scale_label('laurent_optunets', profile.name)}; "
          f"MLPs: {scales.scale_label('laurent_mlps', profile.name)}"))
glue_all(glue, "ch11",
         laurent.optunet_swap_rate_values(summary["swaps"], res.units,
                                          res.blocks))

# %% [markdown]
# ## At the paper's scale
#
# The same experiment with the paper profile's data and recipe ({glue:text}`ch11_pp_epochs`
# epochs of the {glue:text}`ch11_pp_n_train`-image training split), four times: with the
# profile's {glue:text}`ch11_pp_nets` OptuNets on an H100 GPU, with
# {glue:text}`ch11_s8_nets` and {glue:text}`ch11_s16_nets` OptuNets on the 2-core CPU (the
# previous chapter gives their times), and with {glue:text}`ch11_g768_nets` trained by the GPU queue. The paper's
# checkpoint set has {paper}`1,000` OptuNets, so all four are labelled reductions, and they
# are one bank read at several sizes, not independent replications (every run draws network
# $i$ from the same key sequence; the previous chapter says more); they are saved in
# `book/results/`, and the
# unit tests check these claims on each. Of the {glue:text}`ch11_pp_nets`,
# {glue:text}`ch11_pp_dropped` stayed below the convergence threshold and are left out; the
# same rule leaves out {glue:text}`ch11_s16_dropped` of the {glue:text}`ch11_s16_nets` and
# {glue:text}`ch11_s8_dropped` of the {glue:text}`ch11_s8_nets` OptuNets of the CPU runs, and
# {glue:text}`ch11_quick_dropped` of the quick profile's {glue:text}`ch11_quick_nets`.
#
# The two claims that are ratios of rates (`swaps_in_high_lr_phases`, `ordering_freezes`)
# carry the registered delta-method interval, which is symmetric about the ratio: with few
# runs and a ratio near zero its lower end can fall below zero, where no ratio of
# non-negative rates lies. Both claims say "below" a threshold above zero: the upper end
# decides whether a claim holds, and a lower end below zero can only keep it from being
# judged to differ.

# %%
saved = {label: results.load("laurent_optunets", label)
         for label in ("paper", "paper-8nets", "paper-16nets",
                       "paper-768nets")}
glue_all(glue, "ch11", laurent.saved_swap_values(
    get_profile("paper"), saved["paper"],
    {"s8": saved["paper-8nets"], "s16": saved["paper-16nets"],
     "g768": saved["paper-768nets"]},
    results.load("laurent_mlps", "paper"),
    results.load("laurent_mlps", "paper-64nets")))
SEC52 = ("swaps_scarce", "swaps_gathered", "swaps_in_high_lr_phases",
         "ordering_freezes")
display(report.show_saved_run(
    "laurent_optunets",
    "256 OptuNets x 60 epochs: about 3 minutes "
    "on an H100, 6 hours on a 2-core CPU",
    keep=lambda c: c in SEC52))

# %% [markdown]
# **On more of the paper's OptuNets.** Chapter 10's run `paper-768nets` (the first
# {glue:text}`ch11_g768_nets:,` of the {paper}`1,000` OptuNets that the GPU queue trains;
# {glue:text}`ch11_g768_dropped` stayed below the convergence threshold) is the first at this
# scale whose summary keeps the per-run counts of the MNIST panel's own two claims. The
# ordering changes at few steps: {glue:text}`ch11_g768_v_swaps_scarce`
# ({glue:text}`ch11_g768_e_swaps_scarce`). But the changes are not gathered in bursts as the
# registered reading asks: {glue:text}`ch11_g768_v_swaps_gathered`
# ({glue:text}`ch11_g768_e_swaps_gathered`). The dense layer's three units change in bursts,
# the grouped convolution's channels barely more often together than at random; the reason
# printed under the table gives both ratios. The ordering still nearly freezes late in
# training ({glue:text}`ch11_g768_v_ordering_freezes`) and changes most in the high
# learning-rate phases ({glue:text}`ch11_g768_v_swaps_in_high_lr_phases`).

# %%
g768_outcomes = [
    o for o in claims.evaluate("laurent_optunets",
                               saved["paper-768nets"]["summary"])
    if o.claim.name in SEC52]
claims.epilogue(g768_outcomes, "paper-768nets", prefix="ch11_g768",
                glue=glue,
                scale=scales.scale_label("laurent_optunets",
                                         "paper-768nets"))

# %% [markdown]
# And for the ReLU MLPs ({glue:text}`ch11_pp_mlp_sizes`) of the same recipe: all
# {glue:text}`ch11_pp_mlp_nets` networks of the paper profile (run on the H100), and a
# reduction to {glue:text}`ch11_pp_mlp_nets_reduced` networks (run on the CPU):

# %% tags=["hide-input"]
display(report.show_saved_run("laurent_mlps",
                              "256 MLPs x 60 epochs: about 1 minute "
                              "on an H100, 2 hours on a 2-core CPU",
                              keep=lambda c: c in SEC52))

# %% [markdown]
# ## ResNet-18 on CIFAR-100 (Figure 4, right): the paper profile only
#
# The right panel follows ResNet-18 trained on CIFAR-100 with the authors' recipe. There the
# paper sees "a lot of variation during the phases with a high learning rate (reduced after
# 25 and 50 epochs)" and, as on MNIST, no "particular sign of permutations in the last part of
# the training". The experiment `rn18_swaps_cifar100` trains the paper profile's
# {glue:text}`ch11_rn18_nets` ResNet-18 with that recipe (the one of the ResNet-18 bank,
# `symlib.experiments.laurent.posteriors_resnet.resnet_train_config`) and counts, at every SGD
# step, the pairs of channels that trade places in each of the network's
# {glue:text}`ch11_rn18_perms` permutations (the residual stream of each stage is one, the
# inner channels of each block another: `resnet18_permutation_spec`), with the OptuNets'
# counter after removing the scaling symmetry of the batch norms' channels. Its two claims are
# the last two of the synthesis below, with the same checks and thresholds, the worst
# permutation deciding; they are not tested when a network stays at most twice chance. The
# paper does not say how many networks its panel averages; ours is the paper profile's choice,
# enough for the interval over runs. It needs the CIFAR-100 archive and a GPU:
#
# ```bash
# python -m symlib run rn18_swaps_cifar100 --profile paper --out book/results
# ```
#
# The cell shows the saved paper-profile run when there is one, with its claims judged.

# %%
glue("ch11_rn18_nets", get_profile("paper").rn18_swap_nets,
     display=False)
glue("ch11_rn18_perms", len(resnet18_permutation_spec().perm_names),
     display=False)
report.show_saved_run(
    "rn18_swaps_cifar100",
    "needs the CIFAR-100 archive and a GPU")

# %% [markdown]
# ## Synthesis: the paper's claims, as code
#
# {cite:t}`laurent2024symmetry` (Sec. 5.2, Fig. 4) find that on MNIST (left panel) the
# changes of the sorting permutation are "scarce yet gathered around points of
# instability", that the weights nearly never permute in the last phase of training, and
# that the ResNet-18 (right panel), whose results differ "since the number of degrees of
# freedom is much higher", changes a lot in the high learning-rate phases. Four claims read
# this (`symlib.experiments.laurent`,
# thresholds in `symlib.experiments.judging.thresholds`): the MNIST panel's own two, *scarce* (the
# share of SGD steps that change the ordering, below one in ten) and *gathered* (the
# changing steps have another change within {glue:text}`ch11_burst_window` steps at least twice as often as if each
# learning-rate phase's changes fell at random steps of that phase,
# `symlib.symmetry.neuron_order.swap_bursts`); the ordering nearly frozen late in training
# (the net change per epoch over the last tenth against the first phase's); and, as a claim
# of ours since the paper says it of ResNet-18, not of the MNIST panel, the swap rate per
# step falling from the first learning-rate phase to the last. Each is judged over the
# independent runs; the cell after the tables asserts that each verdict is the expected one.

# %%
opt_outcomes = [o for o in claims.evaluate("laurent_optunets", summary)
                if o.claim.name in SEC52]
mlp_outcomes = [o for o in claims.evaluate("laurent_mlps", summary_mlp)
                if o.claim.name in SEC52]
# ch11_opt_v_<claim>, ch11_opt_e_<claim>
claims.epilogue(opt_outcomes, profile.name, prefix="ch11_opt", glue=glue,
                scale=scales.scale_label("laurent_optunets",
                                         profile.name))
claims.epilogue(mlp_outcomes, profile.name, prefix="ch11_mlp", glue=glue,
                scale=scales.scale_label("laurent_mlps", profile.name))
glue("ch11_burst_window", laurent.BURST_WINDOW, display=False)
outcomes = opt_outcomes + mlp_outcomes

# %% tags=["nbval-check-output"]
claims.assert_expected(outcomes, profile.name, "Laurent et al.",
                       qualified=True,
                       saved=[("paper-768nets", g768_outcomes)])

# %% [markdown]
# **What our runs say.** Changes scarce: OptuNets {glue:text}`ch11_opt_v_swaps_scarce`
# ({glue:text}`ch11_opt_e_swaps_scarce`), MLPs {glue:text}`ch11_mlp_v_swaps_scarce`
# ({glue:text}`ch11_mlp_e_swaps_scarce`). Gathered in bursts: OptuNets
# {glue:text}`ch11_opt_v_swaps_gathered` ({glue:text}`ch11_opt_e_swaps_gathered`), MLPs
# {glue:text}`ch11_mlp_v_swaps_gathered` ({glue:text}`ch11_mlp_e_swaps_gathered`). Swaps
# gathered in the high learning-rate phases (ours, after the ResNet-18 panel): OptuNets
# {glue:text}`ch11_opt_v_swaps_in_high_lr_phases`, MLPs
# {glue:text}`ch11_mlp_v_swaps_in_high_lr_phases`. On our OptuNets the grouped convolution's
# channels go from {glue:text}`ch11_conv_rates` swapped pairs per step over the three
# phases, the hidden dense units from {glue:text}`ch11_dense_rates`. The ordering nearly
# frozen late in training: OptuNets {glue:text}`ch11_opt_v_ordering_freezes`, MLPs
# {glue:text}`ch11_mlp_v_ordering_freezes`; over the last tenth of training the smallest
# net $\tau$ per epoch of the OptuNets' layers is {glue:text}`ch11_late_tau_min`. What the
# counts add to the figure: most swaps in a step are undone within the epoch (compare the
# summed and net columns of the phase tables), a flicker between units whose sorting
# statistics are nearly tied rather than a drift to another permutation, and it does not
# stop entirely at the final learning rate.
#
# Differences from the paper, measured rather than assumed away: the quick profile trains
# {glue:text}`ch11_runs` OptuNets for {glue:text}`ch11_epochs` epochs of a
# {glue:text}`ch11_n_train`-image split ({glue:text}`ch11_steps` SGD steps each,
# {glue:text}`ch11_acc` test accuracy; the authors' repository gives {repo}`75%` to
# {repo}`85%` for one OptuNet) where the paper trains on {paper}`60,000` images for
# {paper}`60` epochs at batch {paper}`64`; few runs make the averages coarse (a single net
# swap of the {repo}`3` dense units moves the mean), and the two ratios of rates are not
# tested on them: their interval (the delta-method Student-t interval over the runs,
# `symlib.evaluation.stats.ratio_interval`) is read from {glue:text}`ch11_min_ratio_runs` runs
# on, because over three float rounding alone turned a ratio's direction between two machines
# (`symlib.experiments.laurent.mlps.MIN_RATIO_RUNS`). At the paper's scale (tables
# above) the swap rates per step over the three phases are, with the
# {glue:text}`ch11_pp_nets` OptuNets of the paper profile ({glue:text}`ch11_pp_acc`
# accuracy), {glue:text}`ch11_pp_conv_rates` for the channel pairs and
# {glue:text}`ch11_pp_dense_rates` for the dense units; with
# {glue:text}`ch11_s8_nets` OptuNets ({glue:text}`ch11_s8_acc` accuracy),
# {glue:text}`ch11_s8_conv_rates` for the channel pairs and
# {glue:text}`ch11_s8_dense_rates` for the dense units; with {glue:text}`ch11_s16_nets`
# ({glue:text}`ch11_s16_acc` accuracy) {glue:text}`ch11_s16_conv_rates` and
# {glue:text}`ch11_s16_dense_rates`. The first convolution's {repo}`2` channels are not
# followed (their permutation is not a symmetry by itself, see above). The ResNet-18 panel
# of Fig. 4 (right) needs CIFAR-100 and a GPU (its section above). The claim "nearly never permute late" is
# checked against the first learning-rate phase's mean net change per epoch, not against
# the first two epochs alone, which few OptuNet runs can leave at zero for the {repo}`3` dense units
# (as printed above).

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
