import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import Data, Model, Samples, fit_ensemble, fit_map
from symlib.inference.ensembles import member_keys
from symlib.inference.training import TrainConfig


def _toy(n=256, d=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(d, 3)), axis=1).astype(np.int32)
    return jnp.asarray(x), jnp.asarray(y)


CFG = TrainConfig(epochs=30, batch_size=32, optimizer=optax.adam(3e-3), prior_std=1.0)
SIZES = [12, 16, 3]
MLP = Model(mlp_apply)


def _mlp_ensemble(key, sizes, x, y, cfg, num_members):
    """A deep ensemble of MLPs: member i starts from ``mlp_init`` of its init key and trains
    with its data key, both from :func:`member_keys` (``split(split(key, K)[i])``)."""
    init_keys, data_keys = member_keys(key, num_members)
    params0 = jax.vmap(lambda k: mlp_init(k, sizes))(init_keys)
    return fit_ensemble(data_keys, params0, MLP, Data(x, y), cfg)


@pytest.fixture(scope="module")
def ensemble():
    x, y = _toy()
    return x, y, _mlp_ensemble(jax.random.key(0), SIZES, x, y, CFG, num_members=3)


def test_shapes_and_layout(ensemble):
    _, _, res = ensemble
    assert isinstance(res, Samples) and not res.chains and set(res.info) == {"epoch_loss"}
    ref = mlp_init(jax.random.key(0), SIZES)
    assert jax.tree_util.tree_structure(res.samples) == jax.tree_util.tree_structure(ref)
    for leaf, r in zip(jax.tree_util.tree_leaves(res.samples), jax.tree_util.tree_leaves(ref)):
        assert leaf.shape == (3,) + r.shape
    assert res.info["epoch_loss"].shape == (3, CFG.epochs)


def test_members_differ_and_each_fits(ensemble):
    x, y, res = ensemble
    losses = res.info["epoch_loss"]
    logits = jax.vmap(mlp_apply, in_axes=(0, None))(res.samples, x)
    kernels = np.asarray(res.samples["dense_0"]["kernel"])
    for i in range(3):
        acc = float(jnp.mean(jnp.argmax(logits[i], 1) == y))
        assert acc > 0.85, (i, acc)
        assert losses[i, -1] < 0.6 * losses[i, 0]
        for j in range(i):
            assert not np.allclose(kernels[i], kernels[j])
            assert not np.allclose(logits[i], logits[j], atol=1e-3)
            assert not np.allclose(losses[i], losses[j])


def test_deterministic_and_member_equals_fit_map_alone(ensemble):
    x, y, res = ensemble
    again = _mlp_ensemble(jax.random.key(0), SIZES, x, y, CFG, num_members=3)
    jax.tree_util.tree_map(np.testing.assert_array_equal, res.samples, again.samples)
    np.testing.assert_array_equal(res.info["epoch_loss"], again.info["epoch_loss"])
    # member 1 is the network that its own key, split(key, 3)[1], trains alone
    init_key, data_key = jax.random.split(jax.random.split(jax.random.key(0), 3)[1])
    one = fit_map(data_key, mlp_init(init_key, SIZES), MLP, Data(x, y), CFG)
    np.testing.assert_allclose(res.info["epoch_loss"][1], one.info["epoch_loss"], rtol=2e-5, atol=1e-6)
    jax.tree_util.tree_map(lambda s, o: np.testing.assert_allclose(s[1], o, rtol=1e-4, atol=1e-5), res.samples,
                           one.params)


def test_errors():
    x, y = _toy(n=64)
    with pytest.raises(ValueError, match="x has 12 features but the network's input width is 5"):
        _mlp_ensemble(jax.random.key(0), [5, 4, 3], x, y, CFG, num_members=2)
    with pytest.raises(ValueError, match="batch_size"):
        _mlp_ensemble(jax.random.key(0), SIZES, x, y, CFG._replace(batch_size=1000), num_members=2)


def test_data_that_does_not_fit_the_members_is_named_before_any_work():
    x, y = _toy(n=64)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\) for 3 classes"):
        _mlp_ensemble(key, SIZES, x, y + 1, CFG, num_members=2)
    with pytest.raises(ValueError, match="y must be integer class indices"):
        _mlp_ensemble(key, SIZES, x, y.astype(jnp.float32), CFG, num_members=2)
    with pytest.raises(ValueError, match=r"x contains NaN or inf \(1 of 768 entries\)"):
        _mlp_ensemble(key, SIZES, x.at[0, 0].set(jnp.nan), y, CFG, num_members=2)
    with pytest.raises(ValueError, match=r"the MLP takes x of shape \(n, features\), got examples of shape \(12, 1\)"):
        _mlp_ensemble(key, SIZES, x[:, :, None], y, CFG, num_members=2)


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
