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
import numpy as np
from IPython.display import display

from symlib import experiments
from symlib.experiments import plotting
from symlib.experiments.profiles import get_profile
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
# ## Two VI posteriors per width and dataset, aligned
#
# One experiment of `symlib` fits the posteriors, aligns them with `wasserstein_alignment`
# and evaluates the curves; it is loaded from the artifact cache when present.

# %%
res = experiments.run("vi_alignment", profile)
widest = max(profile.align_widths)

# %% [markdown]
# ## Along the geodesic (widest width)

# %%
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

# %%
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

# %%
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
# ## Synthesis
#
# {cite:t}`rossi2023permutation` report (Sec. 5.1; 3 x 512 MLPs in their Table 2) that after
# Wasserstein alignment the barriers between VI solutions are nearly zero for MLPs on MNIST,
# and that wider models have lower barriers, with and without alignment. Their numbers are
# in figures we do not have; beside their claims, ours:

# %%
def rel(dataset, w, split="test"):
    pair = res.run(dataset, w)
    return pair.marginal_barrier(split=split, aligned=True) / pair.marginal_barrier(split=split, aligned=False)


def aligned_test_barriers(dataset):
    return [res.run(dataset, w).marginal_barrier(split="test", aligned=True) for w in widths]


top = max(widths)
paper = experiments.ROSSI_SEC51_CLAIMS
display(Table(["claim", "paper", f"ours ({profile.name} profile)"], [
    ("alignment lowers the test barrier (every width, both datasets)", paper["alignment_lowers_barrier"],
     "yes" if all(rel(d, w) < 1 for d in experiments.ALIGN_DATASETS for w in widths) else "no"),
    (f"MNIST: aligned / naive test barrier at width {top}", paper["mnist_aligned_barrier"], f"{rel('mnist', top):.3f}"),
    (f"Fashion-MNIST: aligned / naive test barrier at width {top}", paper["fashion_mnist_aligned_barrier"],
     f"{rel('fashion_mnist', top):.3f}"),
    ("MNIST: aligned test barrier decreases with width", paper["barrier_decreases_with_width"],
     " > ".join(f"{b:.3f}" for b in aligned_test_barriers("mnist"))),
    ("Fashion-MNIST: aligned test barrier decreases with width", paper["barrier_decreases_with_width"],
     " , ".join(f"{b:.3f}" for b in aligned_test_barriers("fashion_mnist"))),
]))

# %% [markdown]
# In the quick profile alignment lowers every barrier, and on MNIST the aligned barrier
# falls with width to a small fraction of the naive one. On Fashion-MNIST a clear barrier
# remains at these widths and it does not fall monotonically; the quick profile's VI
# posteriors are trained for few epochs on 4,500 images, and the paper profile
# (widths up to 1024, 100 epochs, full data) is where the width effect should be judged.
#
# The cell below asserts: (1) after alignment the test barrier is lower than before, for
# every width and both datasets; (2) at the widest quick width on MNIST the aligned test
# barrier is below 10% of the naive one. The tolerance is relative because the level of
# the marginalised loss, and the upward bias of its $S$-sample estimator (order $1/S$),
# differ between settings, so an absolute "zero" would not mean the same thing at every
# scale; 10% separates "the barrier is essentially gone" from "it was reduced".

# %% tags=["nbval-check-output"]
for dataset in experiments.ALIGN_DATASETS:
    for w in widths:
        assert rel(dataset, w) < 1.0, (dataset, w, rel(dataset, w))
assert rel("mnist", top) < 0.10, rel("mnist", top)
print("claims verified: alignment lowers every test barrier; on MNIST it nearly removes it at the widest width")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
