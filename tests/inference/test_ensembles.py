import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.inference.ensembles import EnsembleResult, train_ensemble
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference.training import TrainConfig, train_mlp


def _toy(n=256, d=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(d, 3)), axis=1).astype(np.int32)
    return jnp.asarray(x), jnp.asarray(y)


CFG = TrainConfig(epochs=30, batch_size=32, learning_rate=3e-3, prior_std=1.0)
SIZES = [12, 16, 3]


@pytest.fixture(scope="module")
def ensemble():
    x, y = _toy()
    return x, y, train_ensemble(jax.random.key(0), SIZES, x, y, CFG, num_members=3)


def test_shapes_and_layout(ensemble):
    _, _, res = ensemble
    assert isinstance(res, EnsembleResult)
    ref = mlp_init(jax.random.key(0), SIZES)
    assert jax.tree_util.tree_structure(res.params) == jax.tree_util.tree_structure(ref)
    for leaf, r in zip(jax.tree_util.tree_leaves(res.params), jax.tree_util.tree_leaves(ref)):
        assert leaf.shape == (3,) + r.shape
    assert res.epoch_losses.shape == (3, CFG.epochs)


def test_members_differ_and_each_fits(ensemble):
    x, y, res = ensemble
    logits = jax.vmap(mlp_apply, in_axes=(0, None))(res.params, x)
    kernels = np.asarray(res.params["dense_0"]["kernel"])
    for i in range(3):
        acc = float(jnp.mean(jnp.argmax(logits[i], 1) == y))
        assert acc > 0.85, (i, acc)
        assert res.epoch_losses[i, -1] < 0.6 * res.epoch_losses[i, 0]
        for j in range(i):
            assert not np.allclose(kernels[i], kernels[j])
            assert not np.allclose(logits[i], logits[j], atol=1e-3)
            assert not np.allclose(res.epoch_losses[i], res.epoch_losses[j])


def test_deterministic_and_member_equals_train_mlp(ensemble):
    x, y, res = ensemble
    again = train_ensemble(jax.random.key(0), SIZES, x, y, CFG, num_members=3)
    jax.tree_util.tree_map(np.testing.assert_array_equal, res.params, again.params)
    np.testing.assert_array_equal(res.epoch_losses, again.epoch_losses)
    key1 = jax.random.split(jax.random.key(0), 3)[1]
    one, losses = train_mlp(key1, SIZES, x, y, CFG)
    np.testing.assert_allclose(res.epoch_losses[1], losses, rtol=2e-5, atol=1e-6)
    jax.tree_util.tree_map(lambda s, o: np.testing.assert_allclose(s[1], o, rtol=1e-4, atol=1e-5), res.params, one)


def test_errors():
    x, y = _toy(n=64)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="num_members"):
            train_ensemble(jax.random.key(0), SIZES, x, y, CFG, num_members=bad)
    with pytest.raises(ValueError, match="features"):
        train_ensemble(jax.random.key(0), [5, 4, 3], x, y, CFG, num_members=2)
    with pytest.raises(ValueError, match="sizes"):
        train_ensemble(jax.random.key(0), [12], x, y, CFG, num_members=2)
    with pytest.raises(ValueError, match="batch_size"):
        train_ensemble(jax.random.key(0), SIZES, x, y, CFG._replace(batch_size=1000), num_members=2)


def test_data_that_does_not_fit_the_members_is_named_before_any_work():
    x, y = _toy(n=64)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\) for 3 classes"):
        train_ensemble(key, SIZES, x, y + 1, CFG, num_members=2)
    with pytest.raises(ValueError, match="y must be integer class indices"):
        train_ensemble(key, SIZES, x, y.astype(jnp.float32), CFG, num_members=2)
    with pytest.raises(ValueError, match=r"x contains NaN or inf \(1 of 768 entries\)"):
        train_ensemble(key, SIZES, x.at[0, 0].set(jnp.nan), y, CFG, num_members=2)
    with pytest.raises(ValueError, match=r"expected x of shape \(n, d\)"):
        train_ensemble(key, SIZES, x[:, :, None], y, CFG, num_members=2)
    with pytest.raises(ValueError, match="num_members must be a positive integer, got 0"):
        train_ensemble(key, SIZES, x, y, CFG, num_members=0)
    with pytest.raises(ValueError, match=r"sizes must list at least two positive layer widths, got \[12, 0, 3\]"):
        train_ensemble(key, [12, 0, 3], x, y, CFG, num_members=2)
    with pytest.raises(ValueError, match="key must be a jax.random key, got int"):
        train_ensemble(0, SIZES, x, y, CFG, num_members=2)


def test_multi_mode_samples_of_fitted_posteriors_in_mode_order():
    """Per-mode objects (e.g. fitted SWAG or Laplace posteriors) are sampled in list order."""
    from symlib.inference.ensembles import multi_mode_samples

    posteriors = [{"mean": float(m)} for m in range(3)]
    sample = lambda k, post, n: {"w": jnp.full((n, 2), post["mean"]) + 0 * jax.random.normal(k, (n, 2))}
    out = multi_mode_samples(jax.random.key(0), sample, posteriors, 2)
    np.testing.assert_array_equal(np.asarray(out["w"])[:, 0], [0, 0, 1, 1, 2, 2])
    bad = lambda k, post, n: {"w": jnp.zeros((n + int(post["mean"]), 2))}
    with pytest.raises(ValueError, match="for mode 1"):
        multi_mode_samples(jax.random.key(0), bad, posteriors, 2)
    with pytest.raises(ValueError, match="empty"):
        multi_mode_samples(jax.random.key(0), sample, [], 2)
