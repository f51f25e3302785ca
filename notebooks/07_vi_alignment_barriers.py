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
# # Aligned variational posteriors are linearly connected
#
# Reproduces the MLP experiments of {cite:t}`rossi2023permutation` (Sec. 5.1; setup in
# App. B, Tables 1 and 2) on MNIST {cite:p}`lecun1998gradient` and Fashion-MNIST
# {cite:p}`xiao2017fashion`.
#
# **Core idea.** Train two mean-field VI posteriors $q_0, q_1$ from different seeds and
# walk along the 2-Wasserstein geodesic between them: for diagonal Gaussians it moves
# means and standard deviations linearly, $q_\tau = \mathcal N\big((1-\tau) m_0 + \tau m_1,
# \mathrm{diag}((1-\tau) s_0 + \tau s_1)^2\big)$. The *marginalised* loss of $q_\tau$ is the
# negative log-likelihood of its Bayesian model average. Naively it rises sharply between
# the two solutions; after permuting $q_1$'s units to minimise $W_2(q_0, P_\# q_1)$ (Wasserstein
# alignment), the paper finds the barrier nearly vanishes for MLPs, and that wider models
# have lower barriers.
#
# This notebook shows:
#
# - marginalised loss and accuracy along the geodesic, naive and aligned, on training and
#   test data, for both datasets (widest width of the profile);
# - the barrier against width, before and after alignment (the width effect);
# - our numbers beside the paper's claims.
#
# **Estimator.** $L(\tau) = -\frac1N\sum_i \log \frac1S \sum_{s=1}^S p(y_i \mid x_i,
# m_\tau + s_\tau \odot \varepsilon_s)$ with the same $S$ noise draws $\varepsilon_s$ at
# every $\tau$ (a smooth curve), on the first `align_n_eval` examples of each split. The
# barrier is $\max_\tau [L(\tau) - ((1-\tau) L(0) + \tau L(1))]$.

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt
from IPython.display import display

from symlib import experiments
from symlib.experiments import claims, plotting, report, rossi
from symlib.experiments.profiles import get_profile
from symlib.experiments.registry import SUMMARIES
from symlib.experiments.report import Table

plotting.set_style()
profile = get_profile()
print(profile.describe())
vi_settings = experiments.ROSSI_VI_SETTINGS
print(f"alignment experiments: {profile.align_depth} hidden layers of widths {list(profile.align_widths)}, "
      f"mean-field VI, prior variance {profile.align_prior_var}, temperature {vi_settings['temperature']:g}, "
      f"batch {vi_settings['batch_size']}, std init {vi_settings['std_init']:g}, "
      f"{profile.align_epochs} epochs; S = {profile.align_samples} samples on {profile.align_n_eval} examples per split")

# %% [markdown]
# ## Training settings: the paper's and ours
#
# Rossi et al. list their hyperparameters in App. B, Table 1. The text extraction we work
# from scrambles that table's columns, so we quote it with that caveat: batch 500,
# temperature 1, one weight sample per training step, 128 test samples, VI standard
# deviations initialised at 0.01, prior variance 0.01 and 512 base features for the MNIST
# MLP, and, in the MNIST MLP column, a learning rate printed as 0.0000001 and **1,000
# training epochs** on the full training set. We keep batch, temperature, initial standard
# deviation and prior variance, and depart from the rest:

# %%
quoted = rossi.ROSSI_TRAINING_AS_EXTRACTED
display(Table(["setting", "Rossi et al. (App. B, Table 1, as extracted)", f"ours ({profile.name} profile)"], [
    ("training epochs", quoted["epochs"], f"{profile.align_epochs}"),
    ("optimiser, learning rate", quoted["learning_rate"], f"Adam, {profile.learning_rate:g}"),
    ("batch size", 500, vi_settings["batch_size"]),
    ("temperature", 1.0, vi_settings["temperature"]),
    ("VI std init", 0.01, vi_settings["std_init"]),
    ("prior variance", 0.01, profile.align_prior_var),
    ("hidden widths", "512 (Table 2); width study in Sec. 5.1", ", ".join(map(str, profile.align_widths))),
    ("training images", "full training sets (60,000)",
     "MNIST 9,000, Fashion-MNIST 4,500" if profile.data_source == "subset" else f"{profile.n_train:,}"),
    ("test samples S of the marginalised loss", 128, profile.align_samples),
]))

# %% [markdown]
# The largest gap is the amount of training. At batch 500 the paper's 1,000 epochs on
# 60,000 images are 120,000 gradient steps per posterior; the quick profile takes 20 epochs
# of 18 steps on MNIST (360 steps) and of 9 steps on Fashion-MNIST (180 steps), the paper
# profile 100 epochs of 100 steps (10,000 steps). The learning rate as printed (1e-7) would
# not move the weights in our step budget; we use Adam at 1e-3, the rate of every other
# training in this book. Our posteriors are therefore much less converged than the
# paper's, Fashion-MNIST's most of all.

# %% [markdown]
# ## Two VI posteriors per width and dataset, aligned
#
# One experiment of `symlib` fits the posteriors, aligns them with `wasserstein_alignment`
# and evaluates the curves; it is loaded from the artifact cache when present.

# %%
res = experiments.run("vi_alignment", profile)
widest = max(profile.align_widths)

# %% [markdown]
# ## Along the geodesic (widest width)

# %% tags=["hide-input"]
for dataset in experiments.ALIGN_DATASETS:
    curves = {}
    for split in ("train", "test"):
        for aligned, label in ((False, "no alignment"), (True, "Wasserstein alignment")):
            c = res.run(dataset, widest).curve(split=split, aligned=aligned)
            curves[f"{split}, {label}"] = {"lambda": c["tau"], "loss": c["loss"], "accuracy": c["accuracy"]}
    fig = plotting.interpolation_curves(curves, title=f"{dataset}: {profile.align_depth} x {widest} MLP, "
                                                      "marginalised loss along the W2 geodesic")
    for ax in fig.axes:
        ax.set_xlabel(r"$\tau$ along the $W_2$ geodesic $q_0 \to q_1$")
plt.show()

# %% [markdown]
# ## Barriers against width

# %% tags=["hide-input"]
widths = list(profile.align_widths)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
for ax, dataset in zip(axes, experiments.ALIGN_DATASETS):
    for i, (kind, aligned) in enumerate((("naive", False), ("aligned", True))):
        for split, ls in (("train", "-"), ("test", "--")):
            ax.plot(widths, [res.run(dataset, w).marginal_barrier(split=split, aligned=aligned) for w in widths],
                    marker="o", ls=ls, color=plotting.PALETTE[i], label=f"{split}, {kind}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(widths, [str(w) for w in widths])
    ax.set_xlabel("hidden width")
    ax.set_ylabel("marginalised loss barrier (nats)")
    ax.set_title(dataset)
    ax.legend(fontsize=8)

# %% tags=["hide-input"]
rows = []
for dataset in experiments.ALIGN_DATASETS:
    for w in widths:
        pair = res.run(dataset, w)
        rows.append((dataset, w, *(f"{pair.marginal_barrier(split=split, aligned=aligned):.3f}"
                                   for split in ("train", "test") for aligned in (False, True)),
                     f"{pair.midpoint_barrier(split='test', aligned=True):.3f}",
                     f"{pair.alignment_seconds:.2f}"))
display(Table(["dataset", "width", "train naive", "train aligned", "test naive", "test aligned",
               "test aligned (midpoint)", "alignment (s)"], rows))

# %% [markdown]
# ## Synthesis: the paper's claims, as code
#
# {cite:t}`rossi2023permutation` state (Sec. 5.1; 3 x 512 MLPs in their Table 2; the
# barriers are in figures without numbers) that loss barriers always appear between two
# VI solutions, that after Wasserstein alignment the barrier is zero for MLPs, and that
# "wider models generally provide lower barriers: for MLPs this holds true with and
# without alignment". These claims are library functions registered on the experiment
# `vi_alignment` in `symlib.experiments.rossi`, fixed from the paper's text before any run;
# the unit tests apply them to every paper-profile result saved in `book/results/`. Since
# the paper gives no numbers, the readings are qualitative and stated in the table:
# "removes the barrier" is read as in chapter 02, *at least half of it removed* (at the
# widest width, train and test); "wider models provide lower barriers" as *the barrier at
# the widest width is below that at the narrowest and its least-squares slope against
# $\log_2$ width is negative* (the paper says "generally", not "at every width"). The cell
# below evaluates them on this run and asserts every one of them.

# %% tags=["hide-input"]
outcomes = claims.evaluate("vi_alignment", SUMMARIES["vi_alignment"](res.artifact))
display(claims.claims_table(outcomes, profile.name))

# %% tags=["nbval-check-output"]
assert all(o.holds for o in outcomes), [(o.claim.name, o.detail) for o in outcomes if not o.holds]
print(f"{len(outcomes)} claim(s) of Rossi et al. verified: " + ", ".join(o.claim.name for o in outcomes))

# %% [markdown]
# The same claims at the paper's scale. The paper profile trains on the full training sets
# for 100 epochs at widths 128 to 1,024 and evaluates the barriers with 128 samples on
# 10,000 images. We ran the largest reduction that fitted a CPU session, labelled as such:
# the paper's data, depth, prior, widths and 100 epochs, with barriers from 16 samples on
# 2,000 images of each split (`paper-4widths-16samples`, 59 minutes on 2 cores, 21 of them
# for the two MNIST fits at width 1,024). The paper's evaluation would take about 40 times
# as long as ours, a few hours more here (an estimate, not run).

# %% tags=["hide-input"]
report.show_saved_run("vi_alignment", "16 VI fits of up to 3 x 1,024 units, 100 epochs on 50,000 images")

# %% [markdown]
# **At the paper's scale the alignment claims hold; the width claims hold only after
# alignment on MNIST, and not at all on Fashion-MNIST once width 1,024 is included.** With
# 100 epochs on the full data, alignment leaves 2% of the naive barrier at width 1,024 on
# MNIST (test: 2.37 -> 0.041 nats) and 6% on Fashion-MNIST (2.11 -> 0.128), and 2% on both
# at width 512 (MNIST 1.95 -> 0.032, Fashion-MNIST 1.74 -> 0.039): the paper's "nearly
# zero", on both datasets, which the quick profile could not show on Fashion-MNIST. What
# does not reproduce is the width trend:
#
# - the naive barrier *grows* at every doubling of the width, on both datasets (MNIST train
#   1.78, 1.84, 1.97, 2.37 nats from width 128 to 1,024; Fashion-MNIST 1.65, 1.71, 1.74,
#   2.08), where the paper finds "lower barriers, with and without alignment";
# - the aligned barrier falls from width 128 to 512 (MNIST train 0.061, 0.050, 0.031;
#   Fashion-MNIST 0.110, 0.075, 0.044) and then rises at 1,024 (MNIST 0.042, Fashion-MNIST
#   0.128). On MNIST the fitted slope over $\log_2$ width stays negative, so the claim holds
#   after alignment; on Fashion-MNIST it does not.
#
# The likely reason is training, as in the quick profile, now at the widest width: our
# posteriors get 10,000 steps where the paper's get 120,000 (table above), and the wider the
# network the worse its fit in that budget. The per-example ELBO falls with width (MNIST
# -0.40, -0.43, -0.50, -0.67; Fashion-MNIST -0.76, -0.78, -0.87, -1.09, the mean of each
# pair's two fits), the KL of 2.9 million weights against a prior of variance 0.01 weighing
# on each example more than at smaller widths, and the test loss at the endpoints of the
# path rises with it (Fashion-MNIST 0.37 at width 128, 0.40 at 1,024). This is a reading of
# our numbers, not a tested cause: a longer run at width 1,024 would test it. Widths 128 to
# 512 of this run reproduce, to the printed digits, an earlier run of the same reduction
# without width 1,024 (`paper-3widths-16samples`, now replaced by this one): the fits and
# the evaluation are seeded. The two width claims are registered as documented differences
# (`symlib.experiments.claims.difference`) for this run; the table says so.

# %% [markdown]
# **What the numbers say beyond the verdicts (quick profile).** On MNIST alignment leaves
# 7% of the naive test barrier at width 256 (0.096 of 1.448 nats) and the aligned barrier
# falls at every doubling of the width (0.697, 0.266, 0.184, 0.096 nats from width 32 to
# 256): close to the paper's "zero barrier". The naive MNIST barrier falls only slightly
# and not at every step (1.554, 1.475, 1.419, 1.448). Fashion-MNIST is different, and the
# claims hold there only in the qualitative readings above:
#
# - at width 256 the aligned test barrier is 0.480 nats, 39% of the naive 1.236: reduced,
#   but not "(nearly) zero" in any plain sense of the paper's words;
# - the width trend is not monotone: the aligned test barrier goes 0.841, 0.940, 0.501,
#   0.480 from width 32 to 256 (up from 32 to 64), and the naive one 1.456, 1.324, 1.381,
#   1.236 (up from 64 to 128); only the overall trend (widest below narrowest, negative
#   slope) falls as the paper says.
#
# The likely reason is training, not the alignment: the quick profile fits each
# Fashion-MNIST posterior with 180 Adam steps on 4,500 images (MNIST: 360 steps on 9,000),
# against the paper's 1,000 epochs on the full data (table above). Under-trained posteriors
# of different seeds differ by more than a permutation, and with one pair per width the
# barrier at each width also carries the luck of that pair (we run no repeats), which is
# enough to break monotonicity between neighbouring widths. The reduced paper-scale run
# above supports this reading up to width 512: trained for 100 epochs on the full data, the
# aligned Fashion-MNIST barrier is nearly zero and falls at every doubling from 128 to 512;
# at 1,024, the width least trained by that budget, it rises again.

# %% [markdown]
# ## ResNet20 (Sec. 5.1): the paper profile, and why the quick profile cannot show it
#
# {cite:t}`rossi2023permutation` repeat the experiment with ResNet20 (LayerNorm instead of
# batch norm, App. B, Table 3) on CIFAR-10 and report a "nearly-zero barrier" after
# alignment, and that for ResNet20, unlike MLPs, wider models have lower barriers *only
# after* alignment. `symlib` runs this as the experiment `vi_alignment_resnet20`: the same
# VI fits, Wasserstein alignment through `resnet20_permutation_spec()` (the residual
# stream of each stage is one permutation shared by every layer that writes to it) and the
# same marginalised curves. The paper profile is the paper's setup (CIFAR-10, widths 1, 2,
# 4, 8, 100 epochs at batch 500) and needs the CIFAR-10 archive and a GPU:
#
# ```bash
# SYMLIB_PROFILE=paper python -m symlib run vi_alignment_resnet20 --out book/results
# ```
#
# The quick profile runs a **stand-in** on Fashion-MNIST (one input channel, 28 x 28) at
# width 1, small enough for two CPU cores, and it is too small to test the claim: the
# networks it trains stay near chance. The next cell runs it; the verdict of the paper's
# claim on it is shown, not asserted, and the text after it gives the numbers of larger
# stand-ins we tried.

# %%
rn = experiments.run("vi_alignment_resnet20", profile)
rn_rows, rn_ds = [], profile.resnet_dataset
for w in rn.widths(rn_ds):
    pair = rn.run(rn_ds, w)
    acc = pair.curves[("test", False)]["accuracy"]
    rn_rows.append((rn_ds, w, f"{acc[0]:.2f} / {acc[-1]:.2f}",
                    *(f"{pair.marginal_barrier(split=split, aligned=aligned):.3f}"
                      for split in ("train", "test") for aligned in (False, True))))
print(f"{profile.name} profile: {profile.resnet_n_train:,} training images, {profile.resnet_epochs} epochs at batch "
      f"{profile.resnet_batch_size}; barriers on {profile.resnet_n_eval} images per split, "
      f"{profile.resnet_n_lambdas} points x {profile.resnet_samples} samples")
display(Table(["dataset", "width", "test accuracy of q0 / q1", "train naive", "train aligned", "test naive",
               "test aligned"], rn_rows))
display(claims.claims_table(claims.evaluate("vi_alignment_resnet20", SUMMARIES["vi_alignment_resnet20"](rn.artifact)),
                            profile.name))
saved_rn = report.saved_run_claims("vi_alignment_resnet20", "paper")
print("paper profile: " + ("not run (needs the CIFAR-10 archive and a GPU)" if saved_rn is None else saved_rn[0]))
if saved_rn is not None:
    display(saved_rn[1])

# %% [markdown]
# The verdict in the table above is no evidence either way: the two networks of the
# stand-in are near chance (their accuracies are in the first table), so their "barrier" is
# the noise of two untrained networks. The reproduction report marks this row "not tested"
# for the quick profile.
#
# **Why the quick profile cannot show it.** A mean-field VI ResNet20 has about 270,000
# weights (width 1) and learns slowly from its noisy gradients; on two CPU cores one
# training step at batch 64 on 28 x 28 images takes about 0.3 s, so the budget of a
# chapter buys a few hundred steps for both networks together. We tried larger stand-ins
# than the one above (Fashion-MNIST, width 1, two fits, alignment and curves on 256 images;
# `dataclasses.replace` of the quick profile with the settings named, passed to
# `symlib.experiments.rossi.vi_alignment_resnet20`, on this machine while other jobs ran):
#
# | training | time | test accuracy of q0 / q1 | barrier train naive -> aligned | test naive -> aligned |
# |---|---|---|---|---|
# | 3,000 images x 3 epochs, batch 64, Adam 1e-3 | 688 s | about 0.57 / 0.57 | 2.15 -> 2.39 | 2.00 -> 2.25 |
# | 2,000 images x 4 epochs, batch 64, Adam 3e-3 | 293 s | 0.16 / 0.46 | 1.61 -> 2.23 | 1.49 -> 2.03 |
# | the same, temperature 0.04 (the KL weight per image of 50,000 images) | 403 s | 0.13 / 0.47 | 1.32 -> 2.84 | 1.21 -> 2.73 |
# | 1,024 images x 3 epochs, batch 32, Adam 1e-2, temperature 0.02 | 143 s (fits only) | 0.12 / 0.10 (mean networks) | - | - |
#
# In each of the three runs whose barriers we computed, the alignment *raised* the barrier,
# the opposite of the paper (the fourth run's networks stayed at chance, so we stopped after
# the fits). We do not read this as evidence against the paper: its claim is about two
# converged VI solutions, and ours are not (at least one of the two networks is near chance
# in three of the four runs, and in the best one both reach only 57% test accuracy after
# three epochs on 3,000 images). Between networks this far from convergence, the permutation that makes
# $q_1$'s weights closest to $q_0$'s need not make their functions closer. The alignment
# itself is not at fault: on a planted problem ($q_1$ a random permutation of $q_0$, plus
# noise of 30% of each layer's weight scale) it brings the squared distance of the means
# from 2,830 back to 124, exactly the noise's share, and keeps the function to 5e-7
# (`tests/test_resnet.py` checks this planted recovery for Wasserstein alignment and weight
# matching). Training two ResNet20 posteriors to convergence is a GPU job: the paper
# profile above.

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
