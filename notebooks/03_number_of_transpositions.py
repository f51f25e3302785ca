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
# # The number of transpositions (NoT)
#
# Reproduces Section 2 and Figure 2 of {cite:t}`xiao2023compact`.
#
# **Core idea.** To say how *far apart in permutation* two networks are, count the fewest
# swaps of two hidden units that turn one ordering into the other: the number of
# transpositions, $\mathrm{NoT}(P)$. Split $P$ into disjoint cycles; a cycle of length
# $k$ takes $k-1$ swaps, so $\mathrm{NoT}(P) = n - \#\text{cycles}(P)$. The paper trains a
# network from $W_\text{init}$ and a copy from $P W_\text{init}$ for permutations $P$ of
# every NoT, then re-basins the two trained networks. If training does not scramble units,
# the matching permutation $P'$ should undo $P$, so $\mathrm{NoT}(P') \approx \mathrm{NoT}(P)$;
# and if NoT measures distance, the raw distance and loss barrier between the two trained
# networks should grow with it.
#
# This notebook shows:
#
# - the paper's worked example of NoT, checked by `symlib.symmetry.permutations`;
# - Figure 2 (a): $\mathrm{NoT}(P')$ after training against $\mathrm{NoT}(P)$ at
#   initialisation, over several random initialisations (mean and $\pm 1\sigma$);
# - Figure 2 (b, c): weight-space distance and loss barrier between the trained networks
#   against NoT, before and after matching;
# - Figure 2 (d): NoT of the permutation matching $W_\lambda$ to $W_0$ along the
#   interpolation path, and of the permutation matching the two networks over training.

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from symlib import experiments
from symlib.experiments import claims, plotting, report, results
from symlib.experiments.profiles import get_profile
from symlib.symmetry.permutations import cycles, num_transpositions
from symlib.experiments.report import paper_vs_ours
from symlib.experiments.xiao import describe_repaired

plotting.set_style()
profile = get_profile()
print(profile.describe())
print(f"NoT sweep: {profile.not_runs} random initialisations x NoT values {experiments.not_grid(profile).tolist()}")

# %% [markdown]
# ## A worked example
#
# The paper's example maps $1 \mapsto 4$, $2 \mapsto 1$, $3 \mapsto 5$, $4 \mapsto 2$,
# $5 \mapsto 3$, i.e. $P = (1\,4\,2)(3\,5) = (1\,4)(4\,2)(3\,5)$, so $\mathrm{NoT}(P) = 3$.
# `symlib` indexes from zero, with `perm[i]` the image of `i`:

# %%
example = np.array([4, 1, 5, 2, 3]) - 1
example_cycles = [tuple(int(i) + 1 for i in c) for c in cycles(example)]
print("cycles (1-indexed):", example_cycles, " NoT =", num_transpositions(example))
assert example_cycles == [(1, 4, 2), (3, 5)] and num_transpositions(example) == 3

# %% [markdown]
# ## The sweep
#
# For each random initialisation, one network is trained from $W_\text{init}$ and one from
# $P W_\text{init}$ for each NoT value, each with its own minibatch order. $P$ is drawn
# uniformly among the permutations with exactly that many transpositions. Every trained
# permuted network is then matched to the unpermuted one by weight matching. The whole
# sweep (all networks trained at once with `vmap`) is an experiment of `symlib`, loaded
# from the artifact cache when present.

# %%
sweep = experiments.run("not_sweep", profile)
ks = experiments.not_grid(profile)
by_run = sweep.per_run  # (runs, NoT values) array of a sweep column
not_p, not_pp = by_run("not_p"), by_run("not_p_prime")
assert np.all(not_p == ks[None, :]), "the planted permutations must have the requested NoT"

# %% tags=["hide-input"]
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), constrained_layout=True)
plotting.mean_band(axes[0], ks, not_pp, r"NoT($P'$) after training")
axes[0].plot(ks, ks, ls=":", color="0.4", label="identity")
axes[0].set_xlabel("NoT(P) at initialisation")
axes[0].set_ylabel("NoT(P') after training")
axes[0].set_title("(a) NoT survives training")
axes[0].legend()
for ax, (raw, matched), label in ((axes[1], ("distance_raw", "distance_matched"), "weight-space distance (L2)"),
                                  (axes[2], ("barrier_raw", "barrier_matched"), "loss barrier (nats)")):
    plotting.mean_band(ax, ks, by_run(raw), "before matching")
    plotting.mean_band(ax, ks, by_run(matched), "after matching")
    ax.set_xlabel("NoT(P) at initialisation")
    ax.set_ylabel(label)
    ax.legend()
axes[1].set_title("(b) distance between the trained nets")
axes[2].set_title("(c) loss barrier on the training set");

# %%
r_not = stats.pearsonr(not_p.ravel(), not_pp.ravel()).statistic
rho = {key: stats.spearmanr(not_p.ravel(), by_run(key).ravel()).statistic
       for key in ("distance_raw", "barrier_raw", "distance_matched", "barrier_matched")}
print(f"Pearson r(NoT(P), NoT(P'))            = {r_not:.4f}")
print(f"mean |NoT(P') - NoT(P)|               = {np.mean(np.abs(not_pp - not_p)):.2f} transpositions")
for key, value in rho.items():
    print(f"Spearman rho(NoT(P), {key:17s}) = {value:.3f}")

# %% [markdown]
# ## NoT along the interpolation path and over training (Figure 2, right)
#
# Two pairs of networks, both trained for the profile's epochs with their own minibatch
# orders: a reference from $W_\text{init}$ and a partner from $P W_\text{init}$ with
# $\mathrm{NoT}(P) = \lfloor (n-1)/2 \rfloor$ (*permuted init*, the paper's setting), and
# the same reference with a partner from an unrelated random initialisation
# (*independent init*, a step beyond the paper). Along
# $W_\lambda = (1-\lambda) W_0 + \lambda W_1$ we match $W_\lambda$ to $W_0$ and record
# $\mathrm{NoT}(\tilde P)$; over training we match the partner to the reference at
# initialisation and after every epoch.

# %%
paths = experiments.run("not_paths", profile)
lam = np.asarray(paths.lambdas)
fig, (ax_l, ax_e) = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
for name, color in (("permuted", plotting.PALETTE[0]), ("independent", plotting.PALETTE[1])):
    ax_l.plot(lam, paths.partner(name).not_lambda, "o-", ms=3, color=color, label=f"{name} init")
    ax_e.plot(paths.epochs, paths.partner(name).not_epochs, "o-", ms=3, color=color, label=f"{name} init")
ax_e.axhline(paths.not_p, ls=":", color="0.4", label="NoT(P) planted")
ax_l.set_xlabel(r"$\lambda$")
ax_l.set_ylabel(r"NoT($\tilde P$) matching $W_\lambda$ to $W_0$")
ax_l.set_title("(d) along the interpolation path")
ax_e.set_xlabel("epoch (0 = initialisation)")
ax_e.set_ylabel("NoT of the matching permutation")
ax_e.set_title("(d) over training")
ax_e.set_ylim(0, profile.hidden)
for ax in (ax_l, ax_e):
    ax.legend()

# %%
steps = {}
for name in ("permuted", "independent"):
    nl = np.asarray(paths.partner(name).not_lambda)
    steps[name] = np.diff(nl)
    jump = int(steps[name].max())
    print(f"{name:12s} along lambda: {nl.tolist()}")
    print(f"{'':12s} largest decrease {max(0, -int(steps[name].min()))}, largest single jump {jump} "
          f"of {int(nl[-1])} ({100 * jump / max(1, nl[-1]):.0f}%)")
    print(f"{'':12s} over epochs : {np.asarray(paths.partner(name).not_epochs).tolist()}")

# %% [markdown]
# Both paths are monotone and flat near both ends, but they differ in shape. For the pair
# that started as permuted copies, $\mathrm{NoT}(\tilde P)$ jumps from $0$ to
# $\mathrm{NoT}(P')$ in one or two steps around $\lambda = 0.5$: the two networks are
# nearly exact permuted copies, so $W_\lambda$ stays nearer to $W_0$ than to any other
# permutation of it until the midpoint. For independently initialised networks the
# change is spread over the second half of the path, closer to the "smooth" change the
# paper describes. Their matching permutation is nearly a random one
# ($\mathrm{NoT} \approx n - H_n$, about $n - \ln n$) and moves by a few transpositions
# from epoch to epoch, while for the permuted-init pair it does not move at all.

# %% [markdown]
# ## Synthesis
#
# {cite:t}`xiao2023compact` report (Fig. 2; 512 hidden units, full MNIST, NoT from 0 to
# 511, 5 runs) that NoT is "remarkably stable over training", that distance and barrier
# correlate strongly with NoT, and that NoT along the interpolation path is flat near
# both trained models and changes smoothly and monotonically in between. The figure has
# no printed numbers, so we compare the claims:

# %% tags=["hide-input"]
paper = experiments.XIAO_FIG2_CLAIMS
permuted, independent = paths.partner("permuted"), paths.partner("independent")
paper_vs_ours([
    ("NoT(P') vs NoT(P)", paper["not_after_training"], f"Pearson r = {r_not:.4f}"),
    ("raw distance vs NoT", paper["distance_vs_not"], f"Spearman rho = {rho['distance_raw']:.3f}"),
    ("raw loss barrier vs NoT", paper["barrier_vs_not"], f"Spearman rho = {rho['barrier_raw']:.3f}"),
    ("loss barrier after matching", "not shown", f"mean {by_run('barrier_matched').mean():.3f} nats "
     f"(raw: up to {by_run('barrier_raw').max():.3f})"),
    ("NoT along lambda (permuted init)", paper["not_along_path"],
     f"monotone: {bool(np.all(steps['permuted'] >= 0))}; largest single jump {int(steps['permuted'].max())} "
     f"of {int(permuted.not_lambda[-1])}"),
    ("NoT along lambda (independent init)", "not studied",
     f"monotone: {bool(np.all(steps['independent'] >= 0))}; largest single jump {int(steps['independent'].max())} "
     f"of {int(independent.not_lambda[-1])}"),
    ("NoT over epochs (permuted init)", paper["not_over_epochs"], f"{np.min(permuted.not_epochs)} .. "
     f"{np.max(permuted.not_epochs)} (planted {paths.not_p})"),
], profile.name)

# %% [markdown]
# The claims are library functions (`symlib.experiments.claims`, registered in
# `symlib.experiments.xiao`) with the tolerances stated in the issue that planned this
# chapter, fixed before any run: $\mathrm{NoT}(P')$ tracks $\mathrm{NoT}(P)$ (Pearson
# correlation above 0.95); distance and barrier increase with NoT (Spearman correlation
# above 0.5); NoT along $\lambda$ is 0 at $W_0$, flat near both ends and monotone in between;
# and NoT is stable over training (it moves by at most 5% of the width, for the
# permuted-init pair, the paper's setting). A fifth, that $\mathrm{NoT}(P')$ is close to
# $\mathrm{NoT}(P)$ itself (mean difference at most the same 5%), was added after the
# paper-scale run below. The cell below evaluates them on our run and the last cell asserts
# them; the unit tests apply the same functions to every saved paper-scale run in
# `book/results/`.

# %% tags=["hide-input"]
outcomes = [o for name, res in (("not_sweep", sweep), ("not_paths", paths))
            for o in claims.evaluate(name, experiments.SUMMARIES[name](res.artifact))]
display(claims.claims_table(outcomes, profile.name))

# %% [markdown]
# ### At the paper's scale
#
# The paper's Figure 2 trains 512-unit networks on all of MNIST's training images, for
# each of the 512 NoT values, 5 times. With Xiao et al.'s training recipe of App. A
# (Adam, 50 epochs, batch 128; the paper does not state the recipe of Fig. 2) our sweep
# costs about 43 s per network on 2 CPU cores (training, matching and barriers), so
# the 2,560 networks would take about 30 hours. The path-and-epochs panel (three
# networks, 59 s) was run at the paper's settings. For the sweep we ran the largest
# reduction that fitted this session, labelled as such: the paper's networks, data and
# training, at 10 NoT values evenly spaced in 0 to 511 and 2 random initialisations
# (22 networks, 16 minutes). The tables below evaluate the same claim functions on the
# saved runs (`book/results/`).

# %% tags=["hide-input"]
display(report.show_saved_run("not_paths", "three 512-unit networks, 50 epochs on 50,000 images: a minute on a CPU"))
display(report.show_saved_run("not_sweep", "2,560 trainings of 512-unit networks: about 30 hours on a CPU"))

# %% [markdown]
# **What differs at the paper's scale.** Two of the five claims hold: NoT after
# training still tracks NoT at initialisation (Pearson r = 0.989), and the raw distance and
# barrier still grow with it (Spearman 0.97 and 0.98), while matching removes the barrier
# (0.003 nats on average, against up to 0.14 before). But NoT is *not* "almost exactly
# unaffected by training" in our runs, which is the paper's stronger claim:
#
# - two networks started from the same $W_\text{init}$ ($\mathrm{NoT}(P) = 0$) end 172
#   and 181 transpositions apart, and on average $\mathrm{NoT}(P')$ exceeds
#   $\mathrm{NoT}(P)$ by 109;
# - over training, the permuted-init pair keeps its planted 255 transpositions for 4
#   epochs, then drifts to 362 by epoch 50;
# - along the path, NoT jumps from 0 to 36 at the first step away from $W_0$.
#
# The networks that drift apart this way still lie in one basin: the pairs started from
# one $W_\text{init}$ have a raw barrier of only 0.001 and 0.003 nats. So after 19,500 Adam
# steps with different minibatch orders, weight matching re-pairs about a third of the
# units of two networks that need no re-basin at all; in the
# quick profile's 700 steps it re-pairs none. We do not know the paper's training length
# for Fig. 2.
#
# **Which units re-pair?** `not_paths` also records, for the permuted-init pair, the
# matching at initialisation and after the last epoch, and how often each hidden unit of
# the trained reference is active (ReLU output above 0) on the first 10,000 training
# images. A unit is *re-paired* when it is matched to a different unit of the partner
# after training than at initialisation (the planted pairing).

# %% tags=["hide-input"]
print(f"{profile.name} profile: " + describe_repaired(paths.repaired()))
saved_paths = results.load("not_paths", "paper")
if saved_paths is not None and "repaired" in saved_paths["summary"]["permuted"]:
    print("paper profile: " + describe_repaired(saved_paths["summary"]["permuted"]["repaired"]))

# %% [markdown]
# At the paper's scale the re-paired units are mostly units that carry almost nothing of
# the function: 102 of the 170 re-paired units never fire on 10,000 training images (16
# of the 342 kept units do), the median re-paired unit is never active (the median kept
# unit is active on 29% of the images), and their outgoing weights are about a ninth of
# the kept units' (median norm 0.08 against 0.76). Of the 256 more active units, 231 keep
# their planted partner. A likely mechanism (not tested further): a dead unit gets no
# gradient from the data, only the prior's pull towards zero, so the dead units of a
# network shrink until they are nearly interchangeable, and the small differences left by
# different minibatch orders decide how the matching pairs them. Either way the drift in
# NoT comes mostly from units whose pairing hardly changes the function, which fits the
# near-zero barrier: the paper's claim holds for the units that matter, but NoT, which
# counts every unit alike, does not show it. (This describes one pair; it is not one of
# the claims, and the quick profile, which re-pairs no unit, has nothing to compare.)
#
# The claim that NoT$(P')$ is close to NoT$(P)$ itself (`not_nearly_equal`: mean
# difference at most 5% of the width, the tolerance of the epochs claim) was added after
# the first paper-scale sweep, because the correlation alone (the chapter's original
# check) passed on numbers that are far from equal. Each failing claim is registered as a
# documented difference (`symlib.experiments.claims.difference`, with these numbers), so
# the unit tests accept exactly these failures on the saved files and no others, and the
# {doc}`reproduction report <14_reproduction_report>` marks Figure 2 as differing.

# %% tags=["nbval-check-output"]
failed = claims.unexpected_failures(outcomes, profile.name)  # every claim, in the quick profile
assert not failed, [(o.claim.name, o.detail) for o in failed]
print(f"{len(outcomes)} claim(s) of Xiao et al. verified: " + ", ".join(o.claim.name for o in outcomes if o.holds))

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
