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
# Reproduces Section 5.2 and Figure 4 (left, MNIST) of {cite:t}`laurent2024symmetry`.
#
# **Core idea.** The identifiable network puts each layer's hidden units in a fixed order:
# remove the scaling symmetry (unit-norm incoming weights), then sort the units by their
# largest incoming weight. Follow that ordering along training: whenever two units trade
# places, the network has "permuted" with respect to its canonical form. Counting the
# pairs of units that trade places at every SGD step, and turning the count into Kendall's
# rank correlation $\tau$ between the orderings before and after the step ($\tau = 1$:
# nothing moved), shows when training moves between permutation-related regions.
#
# This notebook shows, for the paper's OptuNet and for ReLU MLPs trained with the same recipe:
#
# - Kendall's $\tau$ between successive steps, averaged over independent runs, along
#   training with the paper's learning-rate schedule (halved twice);
# - where the changes happen (the high learning-rate phases) and how far they undo
#   themselves: the net change of the ordering over whole epochs;
# - whether late in training the ordering is (nearly) frozen.

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display

from symlib import experiments
from symlib.experiments import claims, plotting, report
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import Table, paper_vs_ours
from symlib.symmetry.neuron_order import kendall_tau_from_discordant

plotting.set_style()
profile = get_profile()
print(profile.describe())

# %% [markdown]
# ## OptuNet
#
# The OptuNets of the min-mass chapter (shared through the artifact cache): the authors'
# recipe, SGD with learning rate 0.04 halved after a quarter and after half of training.
# The compiled training loop counts, after every step, the pairs of units whose order
# changed (`symlib.symmetry.neuron_order.spec_swap_counter`, which reads the architecture
# from its permutation and scaling specs). OptuNet has two permuted layers: the 10 channels
# of the grouped convolution, which can only be permuted within their group of 5 (so 2 x 10
# = 20 pairs can swap, not 45), and the 3 hidden dense units (3 pairs). The first
# convolution's 2 channels are left out: permuting them would also swap the groups of the
# second convolution, a symmetry the spec does not list. Runs below 15% test accuracy are
# left out (the authors' rule; see the previous chapter).

# %%
res = experiments.run("laurent_optunets", profile)
summary = experiments.SUMMARIES["laurent_optunets"](res.artifact)
keep = np.flatnonzero(res.converged)
swaps = res.swaps[keep]  # (runs, epochs, steps per epoch, permutations): pairs that swapped in the step
epoch_stats = [s[keep] for s in res.epoch_stats]  # per permutation (runs, epochs, units) at each epoch's end
runs, epochs, steps, _ = swaps.shape
labels = [f"{n} ({u} units, {b} group{'s' if b > 1 else ''})" for n, u, b in zip(res.perm_names, res.units, res.blocks)]
print(f"{runs} OptuNets, {epochs} epochs of {steps} steps, test accuracy {res.test_accuracy[keep].mean():.3f}; "
      f"learning rate per epoch {np.unique(res.lr)[::-1].tolist()} (halved at epochs {res.milestones.tolist()})")

# %% [markdown]
# ### Kendall's τ between successive steps (Figure 4, left)

# %% tags=["hide-input"]
plotting.swap_figure(swaps, epoch_stats, res.units, res.blocks, labels, res.lr, res.milestones);

# %% [markdown]
# ### Where the changes happen
#
# For each learning-rate phase: the mean number of swapped pairs per step, the share of
# steps with at least one swap, the summed per-step swaps of an epoch against the net
# change of the ordering over that epoch (the rest are swaps undone within the epoch, a
# flicker between units whose statistics are nearly tied, the "instabilities" the paper
# attributes to the sorting statistic).

# %%
def show_phases(sw, names, lr):
    """The phase table of a swap summary (`symlib.experiments.optunet.swap_summary`)."""
    display(Table(
        ["phase (epochs)", "learning rate", "units", "swapped pairs / step", "steps with a swap",
         "swaps / epoch (sum of steps)", "net swapped pairs / epoch", "net τ / epoch"],
        [(f"{r['phase'] + 1} ({r['first_epoch'] + 1}-{r['last_epoch'] + 1})", f"{lr[r['first_epoch']]:g}",
          names[r["layer"]], f"{r['per_step']:.3f}", f"{r['steps_with_swap']:.3f}", f"{r['per_epoch_sum']:.1f}",
          f"{r['net_per_epoch']:.2f}", f"{r['net_tau']:.3f}") for r in sw["phases"]]))
    print(f"last {sw['late_epochs']} epoch(s): net swapped pairs per epoch "
          f"{np.round(sw['late_net_per_epoch'], 3).tolist()} vs {np.round(sw['first_net_per_epoch'], 2).tolist()} "
          f"between epochs 1 and 2 (comparable pairs: {sw['pairs']})")


show_phases(summary["swaps"], res.perm_names, res.lr)

# %% [markdown]
# ## The same on MLPs
#
# The `laurent_nets` MLPs of the min-mass chapter (two hidden layers of 32 units, the same
# recipe) ran the same counters.

# %%
res_mlp = experiments.run("laurent_mlps", profile)
widths = res_mlp.sizes[1:-1]
mlp_labels = [f"hidden layer {l + 1} ({w} units)" for l, w in enumerate(widths)]
summary_mlp = experiments.SUMMARIES["laurent_mlps"](res_mlp.artifact)
mlp_sw = summary_mlp["swaps"]
print(f"{res_mlp.swaps.shape[0]} MLPs {'-'.join(map(str, res_mlp.sizes))}, {res_mlp.swaps.shape[1]} epochs, "
      f"test accuracy {res_mlp.test_accuracy.mean():.3f}")
plotting.swap_figure(res_mlp.swaps, res_mlp.epoch_stats, widths, [1] * len(widths), mlp_labels, res_mlp.lr,
                     res_mlp.milestones);

# %%
show_phases(mlp_sw, [f"layer {l + 1}" for l in range(len(widths))], res_mlp.lr)

# %% [markdown]
# ## The paper's findings beside ours
#
# Figure 4 of the paper has no printed numbers, so the paper's column states what it shows.

# %%
def per_step(sw, phase):
    return "/".join(f"{r['per_step']:.3f}" for r in sw["phases"] if r["phase"] == phase)


def late_tau(sw, units, blocks):
    return "/".join(f"{t:.3f}" for t in kendall_tau_from_discordant(np.asarray(sw["late_net_per_epoch"]),
                                                                    np.asarray(units), np.asarray(blocks)))


last = len(res.milestones)
paper = experiments.LAURENT_FIG4_CLAIMS
display(paper_vs_ours([
    ("where the sorting permutation changes (Fig. 4)", paper["where_units_swap"],
     f"swapped pairs per step, OptuNet (conv_1/dense_0) {per_step(summary['swaps'], 0)} at lr {res.lr[0]:g}, "
     f"{per_step(summary['swaps'], last)} at lr {res.lr[-1]:g}; MLP (layers 1/2) {per_step(mlp_sw, 0)} -> "
     f"{per_step(mlp_sw, last)}"),
    ("last phase of training (Sec. 5.2)", paper["last_phase"],
     f"net τ per epoch over the last tenth: OptuNet {late_tau(summary['swaps'], res.units, res.blocks)}, "
     f"MLP {late_tau(mlp_sw, widths, [1] * len(widths))}; swaps per step do not reach 0"),
], profile.name))

# %% [markdown]
# ## At the paper's scale
#
# The same experiment with the paper profile's data and recipe (60 epochs of the
# 50,000-image training split, about 47,000 SGD steps per network) but 8 and then 16
# OptuNets instead of the profile's 256 (two labelled reductions, 14 and 28 minutes; all 256
# would take about 7.5 hours), run on the 2-core CPU and saved in `book/results/` (the unit
# tests check these claims on both). Most of their networks reach the accuracy the
# authors' repository gives (75% to 85%); of the 16, one stayed below 15% and is left out,
# as in the quick profile, and one reached only 42% (the printed minimum).

# %% tags=["hide-input"]
SEC52 = ("swaps_in_high_lr_phases", "ordering_freezes")
display(report.show_saved_run("laurent_optunets", "256 OptuNets x 60 epochs: about 7.5 hours on a CPU",
                              keep=lambda c: c in SEC52))

# %% [markdown]
# And for the ReLU MLPs (784-128-128-10) of the same recipe: all 256 networks of the paper
# profile, and an earlier reduction to 64 networks:

# %% tags=["hide-input"]
display(report.show_saved_run("laurent_mlps", "256 MLPs x 60 epochs: about 2 hours on a CPU",
                              keep=lambda c: c in SEC52))

# %% [markdown]
# ## Synthesis
#
# {cite:t}`laurent2024symmetry` (Sec. 5.2, Fig. 4) find that changes of the sorting
# permutation are scarce, gathered around instabilities and in the high learning-rate
# phases, and that the weights nearly never permute in the last phase of training. Our
# OptuNets agree: the grouped convolution's channels swap about ten times less often per
# step at the final learning rate than at the first, the hidden dense units far less
# (tables above), and over the last tenth of training the ordering of both layers barely
# changes from one epoch to the next (net $\tau$ per epoch above 0.99). The MLPs show the
# same shape with many more units. What the counts add to the figure: most swaps in a step
# are undone within the epoch (compare the summed and net columns), a flicker between
# units whose sorting statistics are nearly tied rather than a drift to another
# permutation, and it does not stop entirely at the final learning rate.
#
# Differences from the paper, measured rather than assumed away: the quick profile trains
# 3 OptuNets for 100 epochs of a 9,000-image split (14,000 SGD steps each, 75% test
# accuracy, in the 75% to 85% the authors' repository gives for one OptuNet) where the
# paper trains on 60,000 images for 60 epochs (about 56,000 steps); few runs make the
# averages coarse (a single net swap of the 3 dense units moves the mean). At the paper's
# scale (60 epochs of 50,000 images; tables above) the same claims hold with the same
# shape: with 8 OptuNets (80% accuracy) 0.145 -> 0.042 -> 0.019 swapped channel pairs per
# step over the three phases, 0.038 -> 0.017 -> 0.003 for the dense units; with 16 (15
# converged, 77% accuracy) 0.130 -> 0.046 -> 0.017 and 0.037 -> 0.007 -> 0.007, the dense
# units' swaps no longer falling between the last two phases. The first
# convolution's 2 channels are not followed (their permutation is not a symmetry by itself,
# see above). The ResNet-18 panel of Fig. 4 (right) needs CIFAR-100 and a GPU. The claim
# "nearly never permute late" is checked against the first learning-rate phase's mean net
# change per epoch; the MLP version of this chapter compared with epochs 1-2 alone, which
# three OptuNet runs can leave at zero for the 3 dense units (as printed above).

# %% tags=["hide-input"]
outcomes = [o for o in claims.evaluate("laurent_optunets", summary) if o.claim.name in SEC52]
outcomes += [o for o in claims.evaluate("laurent_mlps", summary_mlp) if o.claim.name in SEC52]
display(claims.claims_table(outcomes, profile.name))

# %% tags=["nbval-check-output"]
assert outcomes and all(o.holds for o in outcomes), [(o.claim.name, o.detail) for o in outcomes if not o.holds]
print(f"{len(outcomes)} claim(s) of Laurent et al. verified: " + ", ".join(o.claim.name for o in outcomes))

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
