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
# # Re-basin: loss barriers before and after matching
#
# Reproduces Figure 1 of {cite:t}`xiao2023compact` (Sec. 1), which builds on Git Re-Basin
# {cite:p}`ainsworth2023git` and the loss-barrier definition of {cite:t}`entezari2022role`.
#
# **Core idea.** Interpolate linearly between two networks trained from different random
# seeds, $W_\lambda = (1-\lambda) W_0 + \lambda W_1$, and the loss rises sharply in the
# middle: the two solutions sit in different basins. Much of that barrier is an artefact of
# permutation symmetry: the hidden units of $W_1$ are simply in a different order. Re-basin
# finds the permutation of $W_1$ that brings it closest to $W_0$, either by comparing
# weights directly (*weight matching*: a sequence of linear assignment problems) or by
# comparing what the units compute on data (*activation matching*). After matching, the
# interpolation path stays low.
#
# This notebook shows:
#
# - two MLPs trained from independent seeds (shared with the previous chapter through the
#   artifact cache);
# - loss and accuracy along the interpolation path on the training and test sets, for the
#   raw pair and after weight matching and activation matching (the paper's Figure 1);
# - the barrier of each path, and the number of transpositions of the matching permutation.

# %% tags=["hide-cell"]
import jax
import jax.numpy as jnp
import numpy as np

from symlib import experiments, plotting
from symlib.config import get_profile
from symlib.interpolation import interpolation_curve, loss_barrier
from symlib.matching import activation_matching, weight_matching
from symlib.permutations import num_transpositions
from symlib.report import paper_vs_ours
from symlib.specs import apply_permutation, mlp_permutation_spec

plotting.set_style()
profile = get_profile()
print(profile.describe())

# %% [markdown]
# ## Two independently trained networks

# %%
data = experiments.load_data(profile)
runs = experiments.run("mlp_map_pair", profile)
w0, w1 = (jax.tree_util.tree_map(jnp.asarray, runs[s]["params"]) for s in ("seed0", "seed1"))
for s in ("seed0", "seed1"):
    print(f"{s}: test accuracy {float(runs[s]['test_accuracy']):.4f}")

# %% [markdown]
# ## Matching $W_1$ to $W_0$
#
# Weight matching maximises $\sum_\ell \langle W_0^{(\ell)}, P_\ell W_1^{(\ell)} P_{\ell-1}^\top\rangle$
# over the permutations $P_\ell$ (with one hidden layer: a single linear assignment
# problem). Activation matching pairs the units whose activations on the training set are
# most correlated.

# %%
spec = mlp_permutation_spec(num_hidden_layers=1)
wm = weight_matching(jax.random.key(0), spec, w0, w1)
am = activation_matching(spec, w0, w1, data["x_train"])
w1_wm = apply_permutation(spec, wm.perms, w1)
w1_am = apply_permutation(spec, am.perms, w1)
for name, m in (("weight matching", wm), ("activation matching", am)):
    print(f"{name:20s} NoT = {num_transpositions(m.perms['P_0'])} of at most {profile.hidden - 1}")
agree = float(np.mean(np.asarray(wm.perms["P_0"]) == np.asarray(am.perms["P_0"])))
print(f"the two methods assign the same partner to {100 * agree:.1f}% of the units")

# %% [markdown]
# ## Interpolation paths (Figure 1)

# %%
paths = {"no matching": w1, "weight matching": w1_wm, "activation matching": w1_am}
curves, barriers = {}, {}
for split in ("train", "test"):
    x, y = data[f"x_{split}"], data[f"y_{split}"]
    for method, target in paths.items():
        c = interpolation_curve(w0, target, x, y, profile.n_lambdas)
        curves[f"{split}, {method}"] = c
        barriers[(split, method)] = loss_barrier(c["lambda"], c["loss"])

plotting.interpolation_curves(curves, title="Interpolating between two MLPs trained from different seeds");

# %%
print(f"{'loss barrier':22s} {'train':>8s} {'test':>8s}   test acc. at lambda=0.5")
mid = profile.n_lambdas // 2
for method in paths:
    print(f"{method:22s} {barriers[('train', method)]:8.3f} {barriers[('test', method)]:8.3f}"
          f"   {100 * curves[f'test, {method}']['accuracy'][mid]:.2f}%")

# %% [markdown]
# ## Synthesis
#
# {cite:t}`xiao2023compact` (Fig. 1, after {cite:t}`ainsworth2023git`) show that the loss
# barrier between two independently trained MLPs is essentially removed by re-basin. The
# paper gives the claim as a figure without numbers; Git Re-Basin reports near-zero
# barriers for MNIST MLPs of width 512. In our profile:

# %%
paper_vs_ours([
    ("train loss barrier, no matching", "clearly > 0 (Fig. 1)", f"{barriers[('train', 'no matching')]:.3f} nats"),
    ("train loss barrier, weight matching", "about 0 (Fig. 1)", f"{barriers[('train', 'weight matching')]:.3f} nats"),
    ("train loss barrier, activation matching", "about 0 (Fig. 1)",
     f"{barriers[('train', 'activation matching')]:.3f} nats"),
    ("test accuracy at lambda = 0.5, no matching -> weight matching", "drop removed",
     f"{100 * curves['test, no matching']['accuracy'][mid]:.1f}% -> "
     f"{100 * curves['test, weight matching']['accuracy'][mid]:.1f}%"),
], profile.name)

# %% [markdown]
# Matching removes most of the barrier on both the training and the test set. With the
# narrower hidden layer of the quick profile a small barrier remains; Git Re-Basin
# {cite:p}`ainsworth2023git` found that barriers after matching shrink as the width grows,
# which the paper profile (512 units) lets you check. The cell below asserts the claim in
# the form that holds at every width we ran: matching removes at least half of the
# barrier, by either method, on training and test data.

# %% tags=["nbval-check-output"]
for split in ("train", "test"):
    raw = barriers[(split, "no matching")]
    assert raw > 0.1, f"independently trained nets should be separated by a barrier ({split}: {raw:.3f})"
    for method in ("weight matching", "activation matching"):
        assert barriers[(split, method)] < 0.5 * raw, (split, method, barriers[(split, method)], raw)
print("claim verified: re-basin removes most of the loss barrier (train and test, both methods)")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
