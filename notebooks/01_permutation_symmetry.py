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
# # Permutation symmetry: same function, distant weights
#
# Reproduces the observation that opens Section 1 of {cite:t}`xiao2023compact`.
#
# **Core idea.** In a layer $x \mapsto \sigma_2(W_2\,\sigma_1(W_1 x + b_1) + b_2)$ nothing
# ties a hidden unit to its position: reorder the hidden units with a permutation matrix
# $P$ and carry their weights along ($W_1 \to P W_1$, $b_1 \to P b_1$,
# $W_2 \to W_2 P^{\top}$) and every input gives the same output. The two weight vectors,
# however, can be as far apart in Euclidean distance as two unrelated networks. Any
# summary of a posterior that averages or compares raw weights inherits this problem.
#
# This notebook shows:
#
# - an MLP trained by MAP on real MNIST digits {cite:p}`lecun1998gradient` with `symlib`;
# - that permuting its hidden units leaves the logits unchanged up to float32 rounding,
#   on every test image;
# - that the permuted weights are nonetheless far from the originals, and how the distance
#   grows with the number of transpositions (NoT) the permutation is made of;
# - the weight matrices before and after, side by side.

# %% tags=["hide-cell"]
import jax
import jax.numpy as jnp
import numpy as np
from myst_nb import glue

from symlib import experiments
from symlib.experiments import plotting, xiao
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import paper_vs_ours
from symlib.experiments.table import glue_all
from symlib.symmetry.permutations import (num_transpositions,
                                          random_permutation)
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

plotting.set_style()
profile = get_profile()
print(profile.describe())

# %% [markdown]
# ## A trained network
#
# One hidden layer of ReLU units, trained with Adam on the negative log posterior under a
# standard Gaussian prior (MAP), as in App. A of {cite:t}`xiao2023compact`. The training
# run is an experiment of `symlib.experiments`; it is loaded from the artifact cache when
# an earlier run stored it. (It trains two networks from independent seeds; the second is
# used by the next chapter.)

# %%
data = experiments.load_data(profile)
print({k: v.shape for k, v in data.items()})
runs = experiments.run("mlp_map_pair", profile)
net = runs.net(0)
params = jax.tree_util.tree_map(jnp.asarray, net.params)
print(xiao.net_line(net))

# %% [markdown]
# ## Permuting the hidden units
#
# `symlib` describes which permutation acts on which axis of which parameter once per
# architecture, in a *permutation spec*. For a one-hidden-layer MLP a single permutation
# `P_0` acts on the output axis of the first kernel and bias and on the input axis of the
# second kernel. `apply_permutation` applies any permutation through the spec.

# %%
spec = mlp_permutation_spec(num_hidden_layers=1)
for path, axes in spec.axes.items():
    print(f"{path:15s} axes -> {axes}")

perm = random_permutation(jax.random.key(42), profile.hidden)
permuted = apply_permutation(spec, {"P_0": perm}, params)
print(f"a random permutation of {profile.hidden} units; "
      f"NoT = {num_transpositions(perm)}")


# %% [markdown]
# ## Same function ...
#
# We compare the logits of the two networks on every one of the profile's
# {glue:text}`ch01_n_test` test images.

# %%
result = xiao.permutation_effect(params, permuted, data["x_test"])
print(xiao.effect_lines(result))
glue_all(glue, "ch01", xiao.effect_values(result, len(data["x_test"])))

# %% [markdown]
# The largest change of any logit on any of the test images is at the level of float32
# rounding (the hidden activations are summed in a different order), and the two networks
# predict the same class for every image.
#
# ## ... distant weights
#
# The Euclidean distance between the weight vectors is of the order of the norm of the
# weights themselves. For reference, two networks with independent weights of equal norm
# are $\sqrt{2} \approx 1.41$ norms apart.
#
# How far a permutation moves the weights depends on how many units it displaces. The
# number of transpositions $\mathrm{NoT}(P)$ (the fewest swaps of two units whose product
# is $P$) counts this; it is the measure {cite:t}`xiao2023compact` introduce in Section 2.
# Below, for permutations with exactly $k$ transpositions, drawn uniformly at random, the
# function never changes while the distance grows with $k$.

# %%
sweep = xiao.distance_by_not(params, data["x_test"], profile.hidden)
print(xiao.distance_by_not_text(sweep))

# %% tags=["hide-input"]
xiao.distance_against_not(sweep);

# %% [markdown]
# ## The weight matrices before and after
#
# Rows are hidden units. The permutation moves whole rows of the first-layer matrix
# $W_1$ (one unit's incoming weights) and the matching columns of $W_2$ (its outgoing
# weights); the figure shows the first {glue:text}`ch01_n_show` rows of each matrix. Every row
# of the permuted matrix is a row of the original, in another place: here
# {glue:text}`ch01_from_below` of the first {glue:text}`ch01_n_show` rows of the permuted
# matrix come from units further down the original, so the two panels share only the other
# rows, each in a new place.

# %%
n_show = 48
w1, w1p = (np.asarray(p["dense_0"]["kernel"]).T
            for p in (params, permuted))
source = [int(np.argmin(np.abs(w1 - row).sum(axis=1)))
          for row in w1p[:n_show]]  # the original unit of each row
assert all(np.array_equal(w1p[i], w1[j]) for i, j in enumerate(source))
glue("ch01_n_show", n_show, display=False)
glue("ch01_from_below", sum(j >= n_show for j in source), display=False)
xiao.permuted_weights(params, permuted, n_show);

# %% [markdown]
# ## Synthesis
#
# {cite:t}`xiao2023compact` (Sec. 1) state that replacing $W_1, b_1, W_2$ by
# $PW_1, Pb_1, W_2P^{-1}$ leaves the network's function unchanged, so that Euclidean
# distances in weight space are not meaningful. The paper gives no number for this; it
# is exact in real arithmetic. What we measured, in the profile printed at the top:

# %% tags=["hide-input"]
paper_vs_ours(xiao.invariance_rows(result, net.test_accuracy),
              profile.name)

# %% [markdown]
# The claim is checked as three conditions, each of which can fail: the logits must agree
# to float32 rounding on every test image (in our run the largest change is
# {glue:text}`ch01_max_dlogit` against logits as large as {glue:text}`ch01_max_logit`), the
# weights must move by a distance comparable to their own norm (the random permutation moves
# them by {glue:text}`ch01_rel_distance` norms), and the distance must grow with the number
# of transpositions. The cell below asserts all three, and that the network it tests is a
# trained one (its test accuracy), so the book cannot silently stop supporting the claim;
# its printed line is the verdict.

# %% tags=["nbval-check-output"]
tolerance = 1e-5 * max(1.0, result["max_abs_logit"])
assert result["max_abs_logit_diff"] <= tolerance, result
assert result["prediction_agreement"] == 1.0
assert result["relative_weight_distance"] > 0.5, (
    "a random permutation should move the weights far")
assert all(r[2] <= tolerance for r in sweep), (
    "every permutation must leave the logits unchanged")
distances = [r[3] for r in sweep]
assert distances[0] == 0.0 and all(np.diff(distances) > 0), (
    "distance should grow with NoT")
assert net.test_accuracy > 0.9, (
    "the trained MLP should classify MNIST well")
print("claims verified: function invariant, weights distant, "
      "distance increasing in NoT")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
