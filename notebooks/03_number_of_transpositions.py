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
from symlib.experiments import plotting
from symlib.experiments.profiles import get_profile
from symlib.symmetry.permutations import cycles, num_transpositions
from symlib.experiments.report import paper_vs_ours

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
# The cell below asserts the claims with the tolerances stated in the issue that
# planned this chapter: $\mathrm{NoT}(P')$ tracks $\mathrm{NoT}(P)$ (correlation above 0.95),
# distance and barrier increase with NoT (positive rank correlation), NoT along
# $\lambda$ is flat near both ends and monotone in between, and NoT is stable over
# training (for the permuted-init pair, the paper's setting).

# %% tags=["nbval-check-output"]
assert r_not > 0.95, r_not
assert rho["distance_raw"] > 0.5 and rho["barrier_raw"] > 0.5, rho
nl = np.asarray(paths.partner("permuted").not_lambda)
ends = max(1, len(lam) // 10)
assert np.all(nl[: ends + 1] == nl[0]) and np.all(nl[-ends - 1:] == nl[-1]), "NoT should be flat near both ends"
assert nl[0] == 0, "W_lambda at lambda = 0 is W_0 itself"
assert np.all(steps["permuted"] >= 0), "NoT should not decrease along lambda"
assert np.ptp(paths.partner("permuted").not_epochs) <= 0.05 * profile.hidden, "NoT should be stable over training"
print("claims verified: NoT survives training; distance and barrier grow with NoT; NoT monotone along lambda")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
