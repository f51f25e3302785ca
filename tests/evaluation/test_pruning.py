"""Tests for symlib.evaluation.pruning (prune by sigma, pruning curves, stitching summaries)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.symmetry import permutations as P
from symlib.evaluation.metrics import accuracy_from_probs
from symlib.core.models import mlp_apply
from symlib.evaluation.predictive import predict_single
from symlib.evaluation.pruning import keep_mask, num_kept, prune_by_sigma, pruning_curve, stitch
from symlib.symmetry.specs import apply_permutation, flatten_params, mlp_permutation_spec, random_permutations
from symlib.evaluation.summaries import GaussianSummary, tree_to_vector


def _mlp(rng, sizes):
    return {
        f"dense_{l}": {"kernel": rng.normal(size=(a, b)) / np.sqrt(a), "bias": 0.1 * rng.normal(size=(b,))}
        for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def _assert_tree_close(a, b, **kw):
    fa, fb = flatten_params(a), flatten_params(b)
    assert sorted(fa) == sorted(fb)
    for k in fa:
        np.testing.assert_allclose(np.asarray(fa[k]), np.asarray(fb[k]), err_msg=k, **kw)


@pytest.fixture()
def net():
    rng = np.random.default_rng(0)
    mu = _mlp(rng, [6, 5, 3])  # 6*5 + 5 + 5*3 + 3 = 53 parameters
    sigma = jax.tree_util.tree_map(lambda a: rng.uniform(0.01, 1.0, size=a.shape), mu)
    return mu, sigma


# --------------------------------------------------------------------------- prune_by_sigma


@pytest.mark.parametrize("f", [0.0, 0.1, 0.25, 0.5, 0.77, 1.0])
def test_keeps_exactly_the_lowest_sigma(net, f):
    mu, sigma = net
    Ptot = tree_to_vector(mu).size
    assert Ptot == 53
    pruned = prune_by_sigma(mu, sigma, f)
    m, pv, sv = tree_to_vector(mu), tree_to_vector(pruned), tree_to_vector(sigma)
    kept = pv != 0
    k = int(np.floor(f * Ptot + 0.5))
    assert kept.sum() == k == num_kept(f, Ptot)
    np.testing.assert_array_equal(pv[kept], m[kept])  # kept weights are untouched means
    if 0 < k < Ptot:
        assert sv[kept].max() < sv[~kept].min()  # the kept ones have the lowest sigma
    # the mask agrees
    np.testing.assert_array_equal(tree_to_vector(keep_mask(sigma, f), dtype=bool), kept)


def test_global_ranking_over_kernels_and_biases():
    mu = {"dense_0": {"kernel": np.ones((2, 2)), "bias": np.ones(2)}, "dense_1": {"kernel": np.ones((2, 1)), "bias": np.ones(1)}}
    sigma = {"dense_0": {"kernel": np.full((2, 2), 5.0), "bias": np.array([0.1, 9.0])},
             "dense_1": {"kernel": np.array([[0.2], [7.0]]), "bias": np.array([0.3])}}
    pruned = prune_by_sigma(mu, sigma, 3 / 9)  # keep 3 of 9: the 0.1, 0.2 and 0.3 weights
    np.testing.assert_array_equal(pruned["dense_0"]["kernel"], np.zeros((2, 2)))
    np.testing.assert_array_equal(pruned["dense_0"]["bias"], [1.0, 0.0])
    np.testing.assert_array_equal(pruned["dense_1"]["kernel"], [[1.0], [0.0]])
    np.testing.assert_array_equal(pruned["dense_1"]["bias"], [1.0])


def test_extremes_rounding_and_ties(net):
    mu, sigma = net
    _assert_tree_close(prune_by_sigma(mu, sigma, 1.0), mu, rtol=0, atol=0)
    assert not tree_to_vector(prune_by_sigma(mu, sigma, 0.0)).any()
    # halves round up: 10 params, f = 0.25 -> 2.5 -> 3
    mu10 = {"w": np.arange(1.0, 11.0)}
    flat_sigma = {"w": np.ones(10)}
    out = prune_by_sigma(mu10, flat_sigma, 0.25)
    # all sigmas tie: the first ones in flat order are kept, deterministically
    np.testing.assert_array_equal(out["w"], [1, 2, 3, 0, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(prune_by_sigma(mu10, flat_sigma, 0.25)["w"], out["w"])
    # jax inputs, dtype preserved
    out32 = prune_by_sigma(jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float32), mu), sigma, 0.5)
    assert out32["dense_0"]["kernel"].dtype == np.float32


def test_prune_errors(net):
    mu, sigma = net
    for bad in (-0.1, 1.01, float("nan"), "half", True):
        with pytest.raises(ValueError, match="keep_fraction"):
            prune_by_sigma(mu, sigma, bad)
    with pytest.raises(ValueError, match="structure"):
        prune_by_sigma(mu, {"dense_0": sigma["dense_0"]}, 0.5)
    wrong = jax.tree_util.tree_map(lambda a: a, sigma)
    wrong["dense_1"]["bias"] = np.ones(4)
    with pytest.raises(ValueError, match="shape"):
        prune_by_sigma(mu, wrong, 0.5)
    neg = jax.tree_util.tree_map(lambda a: -a, sigma)
    with pytest.raises(ValueError, match="non-negative"):
        prune_by_sigma(mu, neg, 0.5)
    nan = jax.tree_util.tree_map(lambda a: np.full_like(a, np.nan), sigma)
    with pytest.raises(ValueError, match="NaN"):
        prune_by_sigma(mu, nan, 0.5)


# --------------------------------------------------------------------------- pruning_curve


def test_pruning_curve_on_a_toy_teacher():
    rng = np.random.default_rng(1)
    mu = _mlp(rng, [8, 32, 4])
    x = rng.normal(size=(400, 8)).astype(np.float32)
    y = np.asarray(jnp.argmax(mlp_apply(mu, x), axis=-1))
    # "uncertainty" = 1 / |mu|: prunes the smallest-magnitude weights first
    sigma = jax.tree_util.tree_map(lambda a: 1.0 / (np.abs(a) + 1e-6), mu)
    fracs = [1.0, 0.9, 0.7, 0.5, 0.2, 0.0]
    curve = pruning_curve(mu, sigma, x, y, fracs, apply_fn=mlp_apply)
    assert set(curve) >= {"keep_fraction", "accuracy"}
    np.testing.assert_array_equal(curve["keep_fraction"], fracs)
    acc = curve["accuracy"]
    assert acc.shape == (6,) and np.all((0 <= acc) & (acc <= 1))
    assert acc[0] == 1.0  # the unpruned teacher labels its own data
    assert acc[1] > 0.9  # magnitude pruning of 10% barely hurts
    assert acc[0] >= acc[2] >= acc[4] - 0.05  # monotone-ish
    assert acc[-1] == pytest.approx(np.mean(y == 0))  # all-zero net predicts class 0
    # consistent with prune_by_sigma + predict_single
    probs = predict_single(prune_by_sigma(mu, sigma, 0.5), x, apply_fn=mlp_apply)
    assert acc[3] == pytest.approx(accuracy_from_probs(probs, y))
    # a random ranking hurts more than the magnitude ranking at 50%
    rand = jax.tree_util.tree_map(lambda a: rng.uniform(size=a.shape), mu)
    assert pruning_curve(mu, rand, x, y, [0.5], apply_fn=mlp_apply)["accuracy"][0] < acc[3]


# --------------------------------------------------------------------------- stitch


def test_stitch_moves_sigma_into_the_mu_frame():
    rng = np.random.default_rng(2)
    sizes = [20, 12, 10, 16]
    spec = mlp_permutation_spec(2)
    mu_a = _mlp(rng, sizes)
    sigma_a = jax.tree_util.tree_map(lambda a: rng.uniform(0.1, 1.0, size=a.shape), mu_a)
    sigma_true = jax.tree_util.tree_map(lambda a: rng.uniform(0.1, 1.0, size=a.shape), mu_a)
    q = random_permutations(rng, spec, mu_a)
    # the second summary lives in another frame: its mean is (nearly) a permuted mu_a
    mu_b = jax.tree_util.tree_map(lambda a: a + 1e-3 * rng.normal(size=a.shape), apply_permutation(spec, q, mu_a))
    sigma_b = apply_permutation(spec, q, sigma_true)
    A = GaussianSummary(mu=mu_a, sigma=sigma_a)
    B = GaussianSummary(mu=mu_b, sigma=sigma_b)
    mu, sigma, perms = stitch(A, B, spec, return_perms=True)
    assert mu is mu_a
    assert {k: P.num_transpositions(P.compose(q[k], perms[k])) for k in q} == {k: 0 for k in q}
    _assert_tree_close(sigma, sigma_true, rtol=0, atol=0)
    mu2, sigma2 = stitch(A, B, spec)
    _assert_tree_close(sigma2, sigma_true, rtol=0, atol=0)
    # without the matching the sigmas would be in the wrong places
    assert not np.allclose(tree_to_vector(sigma_b), tree_to_vector(sigma_true))
    # stitched (mu, sigma) prunes like (mu_a, sigma_true)
    _assert_tree_close(prune_by_sigma(mu, sigma, 0.3), prune_by_sigma(mu_a, sigma_true, 0.3), rtol=0, atol=0)
    with pytest.raises(TypeError, match="GaussianSummary"):
        stitch((mu_a, sigma_a), B, spec)


@pytest.mark.parametrize("f, p, kept", [(0.145, 100, 15), (0.29, 50, 15), (0.575, 100, 58), (0.125, 100, 13),
                                        (0.25, 10, 3), (1 / 3, 9, 3), (0.0, 7, 0), (1.0, 7, 7)])
def test_num_kept_rounds_the_decimal_half_up(f, p, kept):
    """0.145 * 100 is 14.499999999999998 in floats, which floor(x + 0.5) rounded to 14."""
    assert num_kept(f, p) == kept
