import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.evaluation.predictive import (member_probs, predict_from_gaussian, predict_from_samples, predict_single,
                               sample_gaussian)

SIZES = [6, 10, 4]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(37, 6)).astype(np.float32)         # 37: not a multiple of any batch size used


def _stack(num, seed=0):
    nets = [mlp_init(jax.random.key(seed + i), SIZES) for i in range(num)]
    return jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(b) for b in a]), *nets)


def _softmax(params, x):
    return np.asarray(jax.nn.softmax(mlp_apply(params, jnp.asarray(x)), axis=-1))


def test_single_matches_direct_and_batching():
    params = mlp_init(jax.random.key(0), SIZES)
    ref = _softmax(params, X)
    for bs in (2048, 8):
        probs = predict_single(params, X, batch_size=bs, apply_fn=mlp_apply)
        assert probs.shape == (37, 4)
        np.testing.assert_allclose(probs, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.sum(ref, axis=1), 1.0, rtol=1e-5)


def test_stack_of_identical_nets_equals_single():
    params = mlp_init(jax.random.key(1), SIZES)
    same = jax.tree_util.tree_map(lambda a: np.repeat(np.asarray(a)[None], 5, axis=0), params)
    np.testing.assert_allclose(predict_from_samples(same, X, sample_chunk=2, apply_fn=mlp_apply),
                               predict_single(params, X, apply_fn=mlp_apply), rtol=1e-5, atol=1e-6)


def test_chunking_and_batching_do_not_change_the_predictive():
    stack = _stack(7)
    ref = np.mean([_softmax(jax.tree_util.tree_map(lambda a: a[i], stack), X) for i in range(7)], axis=0)
    jax_stack = jax.tree_util.tree_map(jnp.asarray, stack)
    for s, chunk, bs in [(stack, None, 2048), (stack, 1, 5), (stack, 3, 16), (jax_stack, 7, 37), (jax_stack, 100, 8)]:
        probs = predict_from_samples(s, X, sample_chunk=chunk, batch_size=bs, apply_fn=mlp_apply)
        np.testing.assert_allclose(probs, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.sum(np.asarray(probs), axis=1), 1.0, rtol=1e-5)
    each = member_probs(stack, X, sample_chunk=3, batch_size=16, apply_fn=mlp_apply)
    assert isinstance(each, np.ndarray) and each.shape == (7, 37, 4)
    np.testing.assert_allclose(each[4], _softmax(jax.tree_util.tree_map(lambda a: a[4], stack), X), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(each.mean(0), ref, rtol=1e-5, atol=1e-6)


def test_gaussian_predictive():
    mu = mlp_init(jax.random.key(2), SIZES)
    zero = jax.tree_util.tree_map(jnp.zeros_like, mu)
    np.testing.assert_allclose(predict_from_gaussian(jax.random.key(0), mu, zero, X, 6, sample_chunk=4,
                                                     apply_fn=mlp_apply),
                               predict_single(mu, X, apply_fn=mlp_apply), rtol=1e-5, atol=1e-6)
    sigma = jax.tree_util.tree_map(lambda a: 0.3 * jnp.ones_like(a), mu)
    key = jax.random.key(5)
    a = predict_from_gaussian(key, mu, sigma, X, 10, sample_chunk=4, batch_size=16, apply_fn=mlp_apply)
    b = predict_from_gaussian(key, mu, sigma, X, 10, sample_chunk=10, apply_fn=mlp_apply)
    c = predict_from_samples(sample_gaussian(key, mu, sigma, 10), X, sample_chunk=3, apply_fn=mlp_apply)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.sum(np.asarray(a), axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(a, predict_from_gaussian(key, mu, sigma, X, 10, sample_chunk=4, batch_size=16,
                                                           apply_fn=mlp_apply))
    assert not np.allclose(a, predict_from_gaussian(jax.random.key(6), mu, sigma, X, 10, sample_chunk=4,
                                                    batch_size=16, apply_fn=mlp_apply))
    assert not np.allclose(a, predict_single(mu, X, apply_fn=mlp_apply), atol=1e-3)


def test_sample_gaussian_moments_and_layout():
    mu = {"w": jnp.array([1.0, -2.0]), "b": {"c": jnp.zeros((3,))}}
    sigma = {"w": jnp.array([0.5, 2.0]), "b": {"c": jnp.full((3,), 0.1)}}
    s = sample_gaussian(jax.random.key(0), mu, sigma, 4000)
    assert s["w"].shape == (4000, 2) and s["b"]["c"].shape == (4000, 3)
    np.testing.assert_allclose(s["w"].mean(0), mu["w"], atol=0.1)
    np.testing.assert_allclose(s["w"].std(0), sigma["w"], rtol=0.05)
    np.testing.assert_allclose(s["b"]["c"].std(0), 0.1, rtol=0.05)
    first = sample_gaussian(jax.random.key(0), mu, sigma, 4000)
    np.testing.assert_array_equal(s["w"], first["w"])


def test_custom_apply_fn():
    def linear(p, x):
        return x @ p["w"]

    stack = {"w": RNG.normal(size=(3, 6, 2)).astype(np.float32)}
    ref = np.mean([np.asarray(jax.nn.softmax(X @ stack["w"][i], axis=-1)) for i in range(3)], axis=0)
    np.testing.assert_allclose(predict_from_samples(stack, X, apply_fn=linear, sample_chunk=2), ref, rtol=1e-5,
                               atol=1e-6)


def test_errors_are_named():
    mu = mlp_init(jax.random.key(2), SIZES)
    sigma = jax.tree_util.tree_map(jnp.ones_like, mu)
    neg = jax.tree_util.tree_map(lambda a: -a, sigma)
    with pytest.raises(ValueError, match="sigma must be non-negative"):
        predict_from_gaussian(jax.random.key(0), mu, neg, X, 4, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="sigma must be non-negative"):
        sample_gaussian(jax.random.key(0), mu, neg, 4)
    with pytest.raises(ValueError, match="structure"):
        predict_from_gaussian(jax.random.key(0), mu, {"dense_0": sigma["dense_0"]}, X, 4, apply_fn=mlp_apply)
    bad_shape = {**sigma, "dense_0": {**sigma["dense_0"], "bias": jnp.ones(3)}}
    with pytest.raises(ValueError, match="shapes"):
        predict_from_gaussian(jax.random.key(0), mu, bad_shape, X, 4, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="num_samples"):
        predict_from_gaussian(jax.random.key(0), mu, sigma, X, 0, apply_fn=mlp_apply)
    nan_x = X.copy()
    nan_x[0, 0] = np.nan
    with pytest.raises(ValueError, match="x contains NaN"):
        predict_single(mu, nan_x, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="x contains NaN"):
        predict_from_samples(_stack(2), nan_x, apply_fn=mlp_apply)
    nan_mu = {**mu, "dense_1": {**mu["dense_1"], "bias": jnp.full(4, jnp.nan)}}
    with pytest.raises(ValueError, match=r"mu\['dense_1'\]\['bias'\] contains NaN"):
        predict_from_gaussian(jax.random.key(0), nan_mu, sigma, X, 4, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"params\['dense_1'\]\['bias'\] contains NaN"):
        predict_single(nan_mu, X, apply_fn=mlp_apply)
    nan_stack = _stack(3)
    nan_stack["dense_0"]["kernel"][1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        predict_from_samples(nan_stack, X, sample_chunk=2, apply_fn=mlp_apply)
    ragged = _stack(3)
    ragged["dense_1"]["bias"] = ragged["dense_1"]["bias"][:2]
    with pytest.raises(ValueError, match="leading sample axis"):
        predict_from_samples(ragged, X, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="sample_chunk"):
        predict_from_samples(_stack(2), X, sample_chunk=0, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="batch_size"):
        predict_single(mu, X, batch_size=0, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="leading axis"):
        predict_single(mu, X[:0], apply_fn=mlp_apply)


def test_x_of_the_wrong_width_is_named():
    mu = mlp_init(jax.random.key(2), SIZES)
    sigma = jax.tree_util.tree_map(jnp.ones_like, mu)
    narrow = X[:, :5]
    with pytest.raises(ValueError, match=r"x has 5 features but the network's input width is 6"):
        predict_single(mu, narrow, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"x has 5 features but the network's input width is 6"):
        predict_from_samples(_stack(2), narrow, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"x has 5 features but the network's input width is 6"):
        member_probs(_stack(2), narrow, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"x has 5 features but the network's input width is 6"):
        predict_from_gaussian(jax.random.key(0), mu, sigma, narrow, 2, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"the MLP takes x of shape \(n, features\), got examples of shape \(\): x must have shape \(n, 6\)"):
        predict_single(mu, X[:, 0], apply_fn=mlp_apply)
    # a custom apply_fn defines its own input layout: no MLP width check
    stack = {"w": RNG.normal(size=(2, 6, 2)).astype(np.float32)}
    probs = predict_from_samples(stack, X[:, None, :], apply_fn=lambda p, x: x[:, 0] @ p["w"])
    assert probs.shape == (37, 2)
