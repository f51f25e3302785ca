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
# - the barrier against width, before and after alignment, as mean ± standard error over
#   independent posterior pairs, with the ELBO and endpoint losses of the fits;
# - the alignment under other prior variances and temperatures;
# - the paper's claims as code, judged over the pairs, on this run and on a saved
#   paper-scale run; and, in the paper profile only, the ResNet20 experiment, the MLP on
#   CIFAR-10 and the CIFAR-100 experiment where the paper's alignment falls short.
#
# **Estimator.** $L(\tau) = -\frac1N\sum_i \log \frac1S \sum_{s=1}^S p(y_i \mid x_i,
# m_\tau + s_\tau \odot \varepsilon_s)$ with the same $S$ noise draws $\varepsilon_s$ at
# every $\tau$ (a smooth curve), on the first `align_n_eval` examples of each split. The
# barrier is $\max_\tau [L(\tau) - ((1-\tau) L(0) + \tau L(1))]$.

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from myst_nb import glue

from symlib import experiments
from symlib.experiments import plotting, report, rossi
from symlib.experiments.judging import claims, results, scales
from symlib.experiments.profiles import get_profile
from symlib.experiments.registry import SUMMARIES
from symlib.experiments.report import Table
from symlib.experiments.table import glue_all

plotting.set_style()
profile = get_profile()
print(profile.describe())
print(rossi.describe_alignment(profile))

# %% [markdown]
# ## Training settings: the paper's and ours
#
# Rossi et al. list their hyperparameters in App. B, Table 1. The text extraction we work
# from scrambles that table's columns, so we quote it with that caveat: batch
# {paper}`500`, temperature {paper}`1.0`, one weight sample per training step,
# {paper}`128` test samples, VI standard deviations initialised at {paper}`0.01`, prior
# variance {paper}`0.01` and {paper}`512` base features for the MNIST MLP, and, in the
# MNIST MLP column, a learning rate printed as {paper}`0.0000001` and
# **{paper}`1,000` training epochs**; the table states no number of images. We keep batch, temperature,
# initial standard deviation and prior variance, and depart from the rest:

# %%
n_train_used = rossi.training_images(profile)
display(rossi.training_settings_table(profile, n_train_used))
glue_all(glue, "ch07", rossi.training_values(profile, n_train_used))

# %% [markdown]
# The largest gap is the amount of training. The paper trains for {paper}`1,000` epochs
# at batch {paper}`500` (on how many images it does not state; the table above gives ours);
# this profile takes {glue:text}`ch07_steps` steps per posterior. The learning rate as
# printed would not move the weights in our step budget; we use Adam at
# {glue:text}`ch07_lr`, the rate of every other training in this book. Our posteriors are
# therefore much less converged than the paper's.
#
# **Scale of this run.** In the quick profile this chapter is a **quick miniature**: widths
# {glue:text}`ch07_widths` instead of the paper's {paper}`512`, {glue:text}`ch07_n_train` training images per
# dataset (MNIST cut to the size of the shipped Fashion-MNIST subset, so both share compiled
# code), and barriers
# from {glue:text}`ch07_samples` samples on {glue:text}`ch07_n_eval` images per split. What
# the budget of a chapter (two minutes on two cores) buys instead is replication:
# {glue:text}`ch07_pairs` **independent pairs of posteriors** per dataset and width (pair
# $k$ fits seeds $2k$ and $2k+1$), so every barrier below is a mean ± standard error over
# pairs and every claim is judged on the spread between pairs. To pay for the pairs the
# quick profile dropped its widest width, halved the training images of MNIST and the
# evaluation images, and shrank the ResNet20 stand-in further down (which this chapter no
# longer runs: see its section), against its earlier single-pair version (the next cell
# compares the two). Three pairs give an interval with two degrees of freedom (two pairs
# leave one, and a very wide interval); more did not fit the budget.

# %% tags=["hide-input"]
if profile.name == "quick":
    display(rossi.settings_change_table(rossi.QUICK_BEFORE_REPLICATES,
                                        profile))

# %% [markdown]
# ## Independent VI posterior pairs per width and dataset, aligned
#
# One experiment of `symlib` fits the posteriors, aligns each pair with
# `wasserstein_alignment` and evaluates the curves; it is loaded from the artifact cache
# when present.

# %%
res = experiments.run("vi_alignment", profile)
summary = SUMMARIES["vi_alignment"](res.artifact)
widest = max(profile.align_widths)

# %% [markdown]
# ## Along the geodesic (widest width, first pair)

# %%
for dataset in experiments.ALIGN_DATASETS:
    title = (f"{dataset}: {profile.align_depth} x {widest} MLP, "
             "marginalised loss along the W2 geodesic (pair 0)")
    fig = plotting.interpolation_curves(
        rossi.geodesic_curves(res, dataset, widest), title=title)
    for ax in fig.axes:
        ax.set_xlabel(r"$\tau$ along the $W_2$ geodesic $q_0 \to q_1$")
plt.show()

# %% [markdown]
# ## Barriers against width (mean ± standard error over the pairs)

# %%
fig = rossi.barriers_against_width(summary["widths"],
                                   summary["marginal_pairs"])
display(Table(rossi.BARRIER_TABLE_HEADERS,
              rossi.barrier_table_rows(summary)))

# %% [markdown]
# The last two columns are what explains the training gap below: the final per-example ELBO
# of the fits (the mean of each pair's two) and the test loss of the model average at the
# two ends of the path (the mean of $L(0)$ and $L(1)$), both mean ± standard error over the
# pairs. They are this quick miniature's numbers; the paper profile's run further down has
# the same table.

# %% [markdown]
# ## Robustness to the prior variance and the temperature
#
# Rossi et al. report that their results hold for different prior variances and
# temperatures (according to the generated summary we have; the main text, and with it the
# values, is not among our texts). We test the alignment result at
# width {glue:text}`ch07_sweep_width` on MNIST under a grid of two prior variances by two
# temperatures: prior variance {paper}`0.01` (the paper's) or
# {glue:text}`ch07_pv_other`, and temperature {paper}`1.0` (the paper's) or
# {glue:text}`ch07_t_other` (a cold posterior), with {glue:text}`ch07_pairs` pairs per
# setting. The paper's corner is reused from the run above; the three others are fitted
# by the experiment `vi_alignment_robustness` with the same seeds. This grid is a **quick
# miniature** and a **stand-in** for the paper's (unknown) settings.

# %%
sweep = experiments.run("vi_alignment_robustness", profile)
sweep_summary = SUMMARIES["vi_alignment_robustness"](sweep.artifact)
display(rossi.robustness_table(sweep_summary))
glue_all(glue, "ch07", rossi.robustness_values(sweep_summary))

# %% [markdown]
# ## Synthesis: the paper's claims, as code
#
# {cite:t}`rossi2023permutation` state (their poster, and Sec. 5.1 as quoted by the generated
# summary we have in place of the main text; MLPs of three hidden layers of
# {paper}`512` units in their Table 2; the barriers are in figures without numbers) that
# loss barriers always appear between two VI solutions, that after Wasserstein alignment the
# barrier is zero for MLPs, and that "wider models generally provide lower barriers: for
# MLPs this holds true with and without alignment". These claims are library functions
# registered in
# `symlib.experiments.rossi`, with thresholds in `symlib.experiments.judging.thresholds` (Rossi
# section, each with the paper's words, our reading and when it was set). Each claim is
# judged on the independent pairs: the effect of every pair, a Student-t interval over the
# pairs, and *holds* only when the whole interval is on the paper's side. "Removes the
# barrier" is read as in chapter 02, *more than half of it removed* (at the widest width,
# the worse of train and test); "wider models provide lower barriers" as *a negative slope
# of the barrier against $\log_2$ width*, computed per series of pairs (pair $k$ at every
# width, series sharing no network) and judged in the worst of train/test x naive/aligned.
# The robustness claim asks for more than half of the barrier removed in every setting of
# the grid. The cell below evaluates them on this run and asserts that each verdict is
# the expected one: the paper's verdict if the claim reproduces, or a difference registered
# with its reason.

# %%
outcomes = (claims.evaluate("vi_alignment", summary)
            + claims.evaluate("vi_alignment_robustness", sweep_summary))
claims.epilogue(outcomes, profile.name, prefix="ch07", glue=glue,
                scale=scales.scale_label("vi_alignment", profile.name))

# %% tags=["nbval-check-output"]
claims.assert_expected(outcomes, profile.name, "Rossi et al.")

# %% [markdown]
# **What the replicated quick miniature says.** Alignment lowers every barrier
# ({glue:text}`ch07_v_alignment_lowers_every_barrier`: the least clear cell's reduction is
# {glue:text}`ch07_e_alignment_lowers_every_barrier` nats). At the widest width it removes a
# share of the barrier of {glue:text}`ch07_e_alignment_removes_barrier_mnist` on MNIST
# ({glue:text}`ch07_v_alignment_removes_barrier_mnist`) and
# {glue:text}`ch07_e_alignment_removes_barrier_fashion_mnist` on Fashion-MNIST
# ({glue:text}`ch07_v_alignment_removes_barrier_fashion_mnist`): reduced, but on both
# datasets far from the paper's "zero barrier" in any plain sense. The aligned barrier left
# at that width, in nats, is {glue:text}`ch07_e_aligned_barrier_nearly_zero_mnist` on MNIST
# ({glue:text}`ch07_v_aligned_barrier_nearly_zero_mnist`) and
# {glue:text}`ch07_e_aligned_barrier_nearly_zero_fashion_mnist` on Fashion-MNIST
# ({glue:text}`ch07_v_aligned_barrier_nearly_zero_fashion_mnist`). The width claims:
# MNIST {glue:text}`ch07_v_barrier_falls_with_width_mnist`, Fashion-MNIST
# {glue:text}`ch07_v_barrier_falls_with_width_fashion_mnist` (least clear slope, nats per
# doubling: {glue:text}`ch07_e_barrier_falls_with_width_mnist` and
# {glue:text}`ch07_e_barrier_falls_with_width_fashion_mnist`). The aligned barrier falls
# clearly with width; the naive barrier falls a little, by less than the pairs differ, so
# "with and without alignment" is not shown at this scale (the table above gives every
# mean ± standard error). Across the prior-variance x temperature grid
# ({glue:text}`ch07_v_removes_barrier_every_setting`; worst setting
# {glue:text}`ch07_e_removes_barrier_every_setting`) what alignment removes changes only
# moderately with the prior variance and the temperature, around what it removes in the
# paper's own setting at this width (the table above), in the spirit of the paper's
# statement; but at this width and training it is about half of the barrier in every
# setting, not the paper's "nearly zero", and the registered reading asks for more than
# half everywhere.
#
# The likely reason for what falls short is training, not the alignment: the quick
# profile fits each posterior with {glue:text}`ch07_steps` Adam steps (table above) against
# the paper's {paper}`1,000` epochs. The ELBO per example falls with width (more weights,
# the same data), consistent with the KL term of an unconverged posterior against a tight
# prior: under-trained posteriors of different seeds would differ by more than a
# permutation.

# %% [markdown]
# ## The same claims in the paper profile (GPU)
#
# The paper profile fits {glue:text}`ch07_paper_pairs` independent posterior pairs per
# dataset and width, at widths {glue:text}`ch07_paper_widths`, on the training sets (the
# first {glue:text}`ch07_paper_n_train` images; the rest is the validation split) for
# {glue:text}`ch07_paper_epochs` epochs, and evaluates every barrier with the paper's
# {paper}`128` samples on {glue:text}`ch07_paper_n_eval` images of each split, as many as
# the test set has (the paper does not state a count). It is the paper's setup except for the
# training (the paper's column of the table of settings above): a **labelled reduction**
# to a tenth of the paper's epochs as extracted. It ran on one GPU;
# the cell reads the saved file and says where and when.

# %%
paper_profile = get_profile("paper")
saved = results.load("vi_alignment", "paper")
ps = saved["summary"] if saved is not None else None
print("paper profile of vi_alignment: "
      + ("not run (needs a GPU)" if saved is None else
         f"{saved['device']}, {saved['date']}, "
         f"{saved['elapsed_s']:,.0f} s"))
glue_all(glue, "ch07", rossi.paper_settings_values(paper_profile))
glue("ch07_paper_n_eval", f"{paper_profile.align_n_eval:,}",
     display=False)
if ps is not None:
    fig = rossi.barriers_against_width(
        ps["widths"], ps["marginal_pairs"], title="paper profile")
    plt.show()
    display(Table(rossi.BARRIER_TABLE_HEADERS,
                  rossi.barrier_table_rows(ps)))
    display(Table(rossi.WIDTH_SLOPE_HEADERS, rossi.width_slope_rows(ps)))
    glue_all(glue, "ch07", rossi.paper_run_values(ps))
    # what the prose below says of this run's shape
    mean_of = {
        ds: {k: np.mean(ps["marginal_pairs"][ds]["train"][k], axis=1)
             for k in ("naive", "aligned")}
        for ds in experiments.ALIGN_DATASETS}
    assert all(np.all(np.diff(mean_of[ds]["naive"]) > 0)
               for ds in mean_of), "naive barriers grow with the width"
    assert np.all(np.diff(mean_of["mnist"]["aligned"]) < 0), (
        "MNIST aligned barriers fall at every doubling")
    fm = mean_of["fashion_mnist"]["aligned"]
    assert np.all(np.diff(fm[:3]) < 0) and fm[3] > fm[2], (
        "Fashion-MNIST aligned: falls to 512, rises at 1,024")
    for ds in experiments.ALIGN_DATASETS:
        acc = np.mean(ps["endpoint_accuracy"][ds], axis=1)
        assert acc.max() - acc.min() < 0.01, (
            f"{ds}: accuracy within a percentage point across widths")
        assert np.all(np.diff(np.mean(ps["elbo"][ds], axis=1)) < 0), (
            f"{ds}: ELBO per example falls with width")

# %% [markdown]
# The claims on this run and on the one-pair reduction `paper-4widths-16samples` that ran on
# two CPU cores before it (the same profile with {glue:text}`ch07_saved_samples` samples on
# {glue:text}`ch07_saved_n_eval` images and one pair per width; its cost is in
# {doc}`../book/running`). One pair gives no interval, so that run's verdicts are at best
# "same direction, not significant".

# %%
saved_cpu = results.load("vi_alignment", "paper-4widths-16samples")
saved_n_eval = int(results.command_setting(saved_cpu["command"],
                                           "align_n_eval"))
glue_all(glue, "ch07", {
    "saved_samples": results.command_setting(saved_cpu["command"],
                                             "align_samples"),
    "saved_n_eval": f"{saved_n_eval:,}"})
report.show_saved_run(
    "vi_alignment",
    "needs a GPU: 48 VI fits of up to 3 x 1,024 units, "
    "100 epochs on 50,000 images")

# %% [markdown]
# **What the paper profile says.** With three pairs, alignment lowers every barrier
# ({glue:text}`ch07_pv_alignment_lowers_every_barrier`; least clear reduction
# {glue:text}`ch07_pe_alignment_lowers_every_barrier` nats), and at the widest width it
# removes a share {glue:text}`ch07_pe_alignment_removes_barrier_mnist` of the naive barrier on
# MNIST ({glue:text}`ch07_pv_alignment_removes_barrier_mnist`) and
# {glue:text}`ch07_pe_alignment_removes_barrier_fashion_mnist` on Fashion-MNIST
# ({glue:text}`ch07_pv_alignment_removes_barrier_fashion_mnist`). What it leaves there, read
# absolutely against "nearly zero": {glue:text}`ch07_pe_aligned_barrier_nearly_zero_mnist`
# nats on MNIST ({glue:text}`ch07_pv_aligned_barrier_nearly_zero_mnist`) and
# {glue:text}`ch07_pe_aligned_barrier_nearly_zero_fashion_mnist` on Fashion-MNIST
# ({glue:text}`ch07_pv_aligned_barrier_nearly_zero_fashion_mnist`). The width claims read the
# paper's "with and without alignment" (MNIST
# {glue:text}`ch07_pv_barrier_falls_with_width_mnist`, Fashion-MNIST
# {glue:text}`ch07_pv_barrier_falls_with_width_fashion_mnist`):
#
# - the **naive** barrier *grows* with the width on both datasets (train, widths
#   {glue:text}`ch07_paper_widths`: MNIST {glue:text}`ch07_paper_mnist_train_naive` nats,
#   Fashion-MNIST {glue:text}`ch07_paper_fashion_mnist_train_naive`), by more than the series
#   of pairs differ (slope per doubling, train: MNIST
#   {glue:text}`ch07_paper_mnist_train_naive_slope`, Fashion-MNIST
#   {glue:text}`ch07_paper_fashion_mnist_train_naive_slope`), where the paper finds lower
#   barriers for wider MLPs;
# - the **aligned** barrier falls with the width on MNIST (train
#   {glue:text}`ch07_paper_mnist_train_aligned`; slope
#   {glue:text}`ch07_paper_mnist_train_aligned_slope`), as the paper says; on Fashion-MNIST it
#   falls up to the second widest width and rises at the widest (train
#   {glue:text}`ch07_paper_fashion_mnist_train_aligned`; slope
#   {glue:text}`ch07_paper_fashion_mnist_train_aligned_slope`), the paper's direction but not
#   significant.
#
# So the aligned barrier's trend reproduces where the three series are clear, and the naive
# one is reversed. Our reading is training. The networks are equally accurate at
# every width, within a percentage point (test accuracy of the model averages at the ends of the path, %: MNIST
# {glue:text}`ch07_paper_mnist_acc`, Fashion-MNIST {glue:text}`ch07_paper_fashion_mnist_acc`),
# but the final ELBO per example falls with the width (MNIST {glue:text}`ch07_paper_mnist_elbo`,
# Fashion-MNIST {glue:text}`ch07_paper_fashion_mnist_elbo`), which is consistent with the KL term
# of the wider posteriors being further from converged after {glue:text}`ch07_paper_epochs`
# epochs, so that two wide posteriors of different seeds sit further apart before alignment;
# it does not show it on its own (the KL term also grows with the number of weights). Whether the
# paper's {paper}`1,000` epochs reverse the naive trend is the test this reading calls for:
# the next section runs it on two of the pairs.

# %% [markdown]
# ### Ten times the training: the paper's 1,000 epochs
#
# The first {glue:text}`ch07_long_pairs` pairs of the paper profile (the same seeds, so each
# comparison is paired) were trained again for {glue:text}`ch07_long_epochs` epochs, {glue:text}`ch07_long_factor` times
# as long, at the narrowest and the widest width, with the rest of the paper profile
# unchanged ({glue:text}`ch07_long_scale`; it is what one session's GPU time allowed, and the
# cell says where and when it ran). Each row is one pair at one width, trained for
# {glue:text}`ch07_paper_epochs` and for {glue:text}`ch07_long_epochs` epochs (train barriers,
# nats).

# %%
long_run = results.load("vi_alignment", "paper-1000epochs-2pairs")
ls = long_run["summary"]
print(f"{long_run['device']}, {long_run['date']}, "
      f"{long_run['elapsed_s']:,.0f} s for "
      f"{long_run['steps']['computed']} (dataset, width, pair) steps; "
      f"command: {long_run['command']}")
glue_all(glue, "ch07",
         rossi.longer_training_values(long_run,
                                      paper_profile.align_epochs,
                                      "paper-1000epochs-2pairs"))
length_rows = rossi.training_length_rows(ps, ls)
long_epochs = int(results.command_setting(long_run["command"], "epochs"))
display(rossi.training_length_table(
    length_rows, (paper_profile.align_epochs, long_epochs)))
glue_all(glue, "ch07", rossi.training_length_values(ps, ls))
# what the prose below says of this run
for ds in experiments.ALIGN_DATASETS:
    narrow, wide = min(ls["widths"][ds]), max(ls["widths"][ds])
    g_long = rossi.width_gaps(ls, ds, narrow, wide)
    g_short = rossi.width_gaps(ps, ds, narrow, wide)[: len(g_long)]
    rows = [r for r in length_rows if r[0] == ds]
    assert all(r[4] < r[3] for r in rows if r[1] == wide), (
        f"{ds}: longer training lowers the widest naive barrier")
    assert np.all(g_long < g_short), (
        f"{ds}: longer training narrows the naive width gap "
        "in every pair")
    assert np.all(g_long > 0), (
        f"{ds}: the naive barrier still grows with the width "
        "at the longer training")
    assert (ls["marginal"][ds]["train"]["aligned"][-1]
            < ls["marginal"][ds]["train"]["aligned"][0]), \
        f"{ds}: the aligned barrier falls with the width"
    assert all(r[8] > r[7] for r in rows), (
        f"{ds}: the ELBO per example improves with training in "
        "every row")
    assert np.mean(ls["elbo"][ds][-1]) < np.mean(ls["elbo"][ds][0]), (
        f"{ds}: the ELBO still falls with the width")

# %% [markdown]
# **What ten times the training changes.** It lowers the naive barrier of the widest networks
# in every pair (width {glue:text}`ch07_long_wide`, train, per pair: MNIST
# {glue:text}`ch07_long_mnist_wide_naive` nats, Fashion-MNIST
# {glue:text}`ch07_long_fashion_mnist_wide_naive`), and so narrows the gap between the widest and the
# narrowest networks (naive barrier at {glue:text}`ch07_long_wide` minus at
# {glue:text}`ch07_long_narrow`, per pair, {glue:text}`ch07_paper_epochs` →
# {glue:text}`ch07_long_epochs` epochs: MNIST {glue:text}`ch07_long_mnist_gaps`, Fashion-MNIST
# {glue:text}`ch07_long_fashion_mnist_gaps`). But the gap stays positive in every pair: at the paper's
# training length the naive barrier still grows with the width. The width claims on this run: MNIST
# {glue:text}`ch07_lv_barrier_falls_with_width_mnist` (slope per doubling
# {glue:text}`ch07_le_barrier_falls_with_width_mnist`, the worst of train and test, naive and aligned,
# over the two series), Fashion-MNIST {glue:text}`ch07_lv_barrier_falls_with_width_fashion_mnist`
# ({glue:text}`ch07_le_barrier_falls_with_width_fashion_mnist`). The aligned barrier falls with the
# width as before (train, {glue:text}`ch07_long_narrow` → {glue:text}`ch07_long_wide`: MNIST
# {glue:text}`ch07_long_mnist_aligned`, Fashion-MNIST {glue:text}`ch07_long_fashion_mnist_aligned`; at
# width {glue:text}`ch07_long_narrow` it *rose* with the training in
# {glue:text}`ch07_long_narrow_aligned_up` pairs), and alignment removes most of the widest barrier
# (MNIST {glue:text}`ch07_lv_alignment_removes_barrier_mnist`, Fashion-MNIST
# {glue:text}`ch07_lv_alignment_removes_barrier_fashion_mnist`); that it lowers every barrier is
# {glue:text}`ch07_lv_alignment_lowers_every_barrier` here only because two pairs leave one degree of
# freedom. The ELBO per example improves in every row but still falls with the width (MNIST
# {glue:text}`ch07_long_mnist_elbo`, Fashion-MNIST {glue:text}`ch07_long_fashion_mnist_elbo`, at
# {glue:text}`ch07_long_narrow` and {glue:text}`ch07_long_wide`). Part of that fall is the KL term
# itself, which grows with the number of weights however long one trains, so the ELBO alone does not
# show under-training.
#
# So under-training explains part of the reversed naive trend, not all of it: ten times the
# training narrows the gap but does not close it. This is a labelled reduction, two pairs at
# two widths: more pairs, the middle widths or still longer training could change the
# picture, and the run does not tell which of the paper's other settings, if any, differs
# from ours.

# %% [markdown]
# ## ResNet20 (Sec. 5.1): the paper profile, and why the quick profile cannot show it
#
# {cite:t}`rossi2023permutation` repeat the experiment with ResNet20 (App. B, Table 3; its
# normalisation layers are not in the text we have, and ours uses LayerNorm, see
# `symlib.core.resnet`) on CIFAR-10 and report a "nearly-zero barrier" after
# alignment, and that for ResNet20, unlike MLPs, wider models have lower barriers *only
# after* alignment. `symlib` runs this as the experiment `vi_alignment_resnet20`: the same
# VI fits, Wasserstein alignment through `resnet20_permutation_spec()` (the residual
# stream of each stage is one permutation shared by every layer that writes to it) and the
# same marginalised curves. Both claims are registered on it: alignment lowers the barrier,
# and wider is lower only after alignment (read as: the aligned barrier's slope against
# $\log_2$ width is negative and more negative than the naive one's, and the naive barrier
# falls by less than a registered margin per doubling: a naive trend that is merely not
# significant is no evidence that there is none). The paper profile
# runs it on CIFAR-10 at the paper's batch {paper}`500` with {paper}`128` test samples; the
# widths and the number of epochs are our choice (the text we have gives neither for
# ResNet20; `symlib.experiments.profiles` has them). It needs the CIFAR-10 archive and a GPU:
#
# ```bash
# SYMLIB_PROFILE=paper python -m symlib run vi_alignment_resnet20 --out book/results
# ```
#
# The quick profile does not run it. A **stand-in** small enough for two CPU cores (Fashion-MNIST,
# one input channel, a single width) cannot test either claim: the networks it trains stay
# near chance, and one width has no trend. A mean-field VI ResNet20 at the narrowest width
# has a few hundred thousand weights and learns slowly from its noisy gradients; on two CPU
# cores the budget of a chapter buys a few hundred training steps for both networks
# together. The next cell shows the paper-profile run when one is saved in `book/results/`,
# with its claims judged; the one after it, the record of the stand-ins we tried
# (`symlib.experiments.rossi.RESNET_STANDIN_TRIALS`, timings on this machine while other
# jobs ran). The smallest of them ran in this chapter until it was dropped for the time it
# took from the book while testing nothing; `python -m symlib run vi_alignment_resnet20`
# still runs it in the quick profile.

# %%
report.show_saved_run(
    "vi_alignment_resnet20",
    "needs the CIFAR-10 archive and a GPU")

# %% tags=["hide-input"]
display(Table(rossi.RESNET_STANDIN_HEADERS,
              list(rossi.RESNET_STANDIN_TRIALS)))

# %% [markdown]
# In each of the three larger runs whose barriers we computed, the alignment *raised* the
# barrier, the opposite of the paper (the fourth run's networks stayed at chance, so we
# stopped after the fits). In the smallest, both networks stayed at chance and the two
# barriers moved in opposite directions: noise. We do not read any of this as evidence
# against the paper: its claim is about two converged VI solutions, and ours are not (at
# least one of the two networks is near chance in most of these runs). Between networks this far from convergence, the
# permutation that makes $q_1$'s weights closest to $q_0$'s need not make their functions
# closer. The alignment itself is not at fault: on a planted problem ($q_1$ a random
# permutation of $q_0$ plus noise) it recovers the permutation up to the noise's share and
# keeps the function (`tests/symmetry/test_resnet.py` checks this planted recovery for Wasserstein
# alignment and weight matching). Training two ResNet20 posteriors to convergence is a GPU
# job: the paper profile above.

# %% [markdown]
# ## The MLP on CIFAR-10 (Sec. 5.1): the paper profile only
#
# {cite:t}`rossi2023permutation` report the MLP's result on a harder dataset too: with their
# alignment they "recover zero barrier solutions for MLPs on both MNIST and CIFAR10". The
# experiment `vi_alignment_cifar10` runs this chapter's MLP pairs on CIFAR-10: the same
# widths, pairs, epochs, Monte-Carlo samples and curves as the paper profile above, on each
# image flattened to one vector (pixels and colour channels), with the prior variance of the
# CIFAR-10 MLP's column of App. B, Table 1, {paper}`0.0025` (the column headers are scrambled
# in the text we have: we read the middle column as the CIFAR-10 MLP). Its four claims are
# this chapter's, read on CIFAR-10 with the same thresholds: alignment lowers every barrier,
# removes more than half of it at the widest width, leaves nearly zero, and the barriers fall
# with width. It needs the CIFAR-10 archive (`symlib.data.load_cifar10` downloads it, or
# finds it where `book/running.md` says) and, at the paper profile's size, a GPU:
#
# ```bash
# python -m symlib run vi_alignment_cifar10 --profile paper --out book/results
# ```
#
# The quick profile does not run it: the machine that builds this book has no copy of
# CIFAR-10 and no network. The cell shows the saved paper-profile run when there is one, with
# its claims judged.

# %%
report.show_saved_run(
    "vi_alignment_cifar10",
    "needs the CIFAR-10 archive, and a GPU at this size")

# %% [markdown]
# ## CIFAR-100 (App. C, Fig. A3): where the paper's alignment falls short
#
# On CIFAR-100, {cite:t}`rossi2023permutation` write, "despite converging well, we fall short to
# find zero-barrier solutions", and add that this does not rule out a permutation the
# algorithm could not find. The text we have does not name the architecture of Fig. A3; we
# use ResNet20, the harder of the paper's two CIFAR-10 architectures: on CIFAR-10 the paper
# reaches zero barriers with its MLP but only a "nearly-zero barrier for ResNet20", so
# ResNet20 is already short of zero on CIFAR-10. The experiment
# `vi_alignment_resnet20_cifar100` is `vi_alignment_resnet20` on CIFAR-100's fine labels, with a
# head of one output per class. Its claim reads the paper's words against the threshold under
# which this chapter calls a barrier nearly zero: the aligned barrier at the widest width stays
# above it. Its validity gate is the ResNet20 claims' own: networks at most twice chance are
# not tested. It needs the CIFAR-100 archive and a GPU:
#
# ```bash
# python -m symlib run vi_alignment_resnet20_cifar100 --profile paper --out book/results
# ```

# %%
report.show_saved_run(
    "vi_alignment_resnet20_cifar100",
    "needs the CIFAR-100 archive and a GPU")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
