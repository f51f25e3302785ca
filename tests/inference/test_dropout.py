"""MC dropout on the input of a dense layer (symlib.inference.dropout): the weight-space
masks, their equivalence with dropping hidden features, training through fit_dropout (fit_map's loop)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from symlib.core.cnn import optunet_apply, optunet_hidden, optunet_init
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import Data, DropoutConfig, DropoutPosterior, Model, fit_dropout, fit_ensemble, fit_map
from symlib.inference.dropout import dropout_apply, dropout_masks, dropout_samples
from symlib.inference.ensembles import multi_mode_samples
from symlib.inference.training import TrainConfig

RATE = 0.2


@pytest.fixture(scope="module")
def optunet():
    return optunet_init(jax.random.key(0))


@pytest.fixture(scope="module")
def images():
    x = jax.random.normal(jax.random.key(1), (96, 28, 28, 1))
    return x, jax.random.randint(jax.random.key(2), (96,), 0, 10)


def test_masks_keep_the_expected_kernel_and_zero_whole_rows(optunet):
    s = dropout_samples(jax.random.key(3), optunet, 20000, rate=RATE)
    kernel = optunet["dense_1"]["kernel"]  # (3, 10)
    k = np.asarray(s["dense_1"]["kernel"])
    assert k.shape == (20000, 3, 10)
    # every row is either exactly zero or the original row scaled by 1 / (1 - p)
    dropped = np.all(k == 0.0, axis=2)
    kept = np.all(np.isclose(k, np.asarray(kernel)[None] / (1 - RATE), rtol=1e-6, atol=0), axis=2)
    assert np.all(dropped ^ kept)
    assert abs(dropped.mean() - RATE) < 0.01
    # E[mask] = 1: the mean kernel is the trained one (standard error ~ 0.0035 relative)
    np.testing.assert_allclose(k.mean(0), kernel, rtol=0.02, atol=1e-3)
    # every other leaf is repeated unchanged
    for layer in ("conv_0", "conv_1", "dense_0"):
        np.testing.assert_array_equal(s[layer]["kernel"], np.broadcast_to(optunet[layer]["kernel"],
                                                                          s[layer]["kernel"].shape))
    np.testing.assert_array_equal(s["dense_1"]["bias"], np.broadcast_to(optunet["dense_1"]["bias"], (20000, 10)))


def test_draws_are_the_masked_kernels_to_the_last_bit(optunet):
    # one compiled program (dropout._masked_copies) gives exactly the op-by-op draws
    key = jax.random.key(5)
    kernel = optunet["dense_1"]["kernel"]
    masks = dropout_masks(key, RATE, (7, kernel.shape[0]), kernel.dtype)
    s = dropout_samples(key, optunet, 7, rate=RATE)
    np.testing.assert_array_equal(s["dense_1"]["kernel"], kernel[None] * masks[:, :, None])


def test_sampled_networks_equal_dropping_the_hidden_features(optunet, images):
    x = images[0][:8]
    key = jax.random.key(4)
    s = dropout_samples(key, optunet, 5, rate=RATE)
    logits = jax.vmap(optunet_apply, in_axes=(0, None))(s, x)  # (5, 8, 10)
    h = optunet_hidden(optunet, x)["dense_0"]  # (8, 3): the input of dense_1
    masks = dropout_masks(key, RATE, (5, 3))  # the same draws as dropout_samples
    manual = (h[None] * masks[:, None, :]) @ optunet["dense_1"]["kernel"] + optunet["dense_1"]["bias"]
    np.testing.assert_allclose(logits, manual, rtol=1e-5, atol=1e-5)


def test_per_example_dropout_of_an_mlp_masks_each_input_separately():
    params = mlp_init(jax.random.key(5), [4, 6, 3])
    x = jax.random.normal(jax.random.key(6), (7, 4))
    key = jax.random.key(7)
    out = dropout_apply(mlp_apply, 0.5, "dense_1")(params, x, key)
    h = jax.nn.relu(x @ params["dense_0"]["kernel"] + params["dense_0"]["bias"])
    masks = dropout_masks(key, 0.5, (7, 6))  # one mask per example
    manual = (h * masks) @ params["dense_1"]["kernel"] + params["dense_1"]["bias"]
    np.testing.assert_allclose(out, manual, rtol=1e-5, atol=1e-6)
    assert len({tuple(np.asarray(m)) for m in masks}) > 1  # the masks differ between examples


def test_training_with_rate_zero_is_fit_map_and_dropout_changes_it():
    params = mlp_init(jax.random.key(12), [5, 8, 3])
    x = jax.random.normal(jax.random.key(13), (64, 5))
    y = jax.random.randint(jax.random.key(14), (64,), 0, 3)
    cfg = TrainConfig(epochs=3, batch_size=16, optimizer=optax.adam(1e-2))
    key = jax.random.key(8)
    model, data = Model(mlp_apply), Data(x, y)
    ref = fit_map(key, params, model, data, cfg)
    post = fit_dropout(key, params, model, data, DropoutConfig(cfg, rate=0.0))
    assert isinstance(post, DropoutPosterior) and post.rate == 0.0 and post.layer == "dense_1"
    same = post.params
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), ref.params, same)
    np.testing.assert_allclose(post.info["epoch_loss"], ref.info["epoch_loss"], rtol=1e-5)
    dropped_post = fit_dropout(key, params, model, data, DropoutConfig(cfg, rate=RATE))
    dropped = dropped_post.params
    assert dropped_post.info["epoch_loss"].shape == (3,) and np.all(np.isfinite(dropped_post.info["epoch_loss"]))
    assert not np.allclose(dropped["dense_1"]["kernel"], ref.params["dense_1"]["kernel"])
    # many networks at once through the same hook: network 0 is the one trained alone
    stack = jax.tree_util.tree_map(lambda a: jnp.stack([a, a]), params)
    many = fit_ensemble(jnp.stack([key, jax.random.key(9)]), stack,
                        Model(mlp_apply, train_apply_fn=dropout_apply(mlp_apply, RATE)), data, cfg).samples
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a[0], b, rtol=1e-4, atol=1e-6), many, dropped)


def test_dropout_training_of_optunet_with_crops(optunet, images):
    x, y = images
    cfg = TrainConfig(epochs=1, batch_size=32, optimizer=optax.adam(1e-2), augment="crop")
    post = fit_dropout(jax.random.key(15), optunet, Model(optunet_apply), Data(x, y), DropoutConfig(cfg, rate=RATE))
    assert post.rate == RATE and post.layer == "dense_1"
    assert jax.tree_util.tree_structure(post.params) == jax.tree_util.tree_structure(optunet)
    losses = post.info["epoch_loss"]
    assert losses.shape == (1,) and np.isfinite(losses).all()


def test_multi_mode_dropout_pools_the_modes_in_order(optunet):
    modes = jax.tree_util.tree_map(lambda a: jnp.stack([a, a + 1, a + 2]), optunet)
    s = multi_mode_samples(jax.random.key(11), lambda k, p, n: dropout_samples(k, p, n, rate=RATE), modes, 4)
    assert s["dense_1"]["kernel"].shape == (12, 3, 10)
    np.testing.assert_array_equal(s["conv_0"]["kernel"][4:8], np.broadcast_to(modes["conv_0"]["kernel"][1],
                                                                              (4, 4, 4, 1, 2)))


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5, float("nan"), "0.2", True])
def test_bad_rate_raises(optunet, images, rate):
    with pytest.raises(ValueError, match="rate"):
        dropout_samples(jax.random.key(0), optunet, 3, rate=rate)
    with pytest.raises(ValueError, match="rate"):
        fit_dropout(jax.random.key(0), optunet, Model(optunet_apply), Data(*images),
                    DropoutConfig(TrainConfig(1, 32), rate=rate))


def test_bad_layer_and_num_samples_raise(optunet):
    with pytest.raises(ValueError, match="layer='dense_7'"):
        dropout_samples(jax.random.key(0), optunet, 3, rate=RATE, layer="dense_7")
    with pytest.raises(ValueError, match="layer='conv_0'.*dense layer"):
        dropout_samples(jax.random.key(0), optunet, 3, rate=RATE, layer="conv_0")
    with pytest.raises(ValueError, match="num_samples"):
        dropout_samples(jax.random.key(0), optunet, 0, rate=RATE)
