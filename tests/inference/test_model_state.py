"""Model state is not a weight (issue 45, item 2): a flax.linen CNN with BatchNorm and its own
nn.Dropout goes through fit_map, fit_vi, fit_swag, fit_laplace (dense and last layer), fit_sghmc
and fit_dropout with its running statistics updated (MAP, SWAG) or held (VI, Laplace, SGHMC),
never given a spread, and carried by every draw; dropout uses the model's own layer."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from symlib import inference
from symlib.core.cnn import as_images
from symlib.data import load_split, standardize
from symlib.evaluation.predictive import member_probs, predict_from_samples
from symlib.inference import (Data, DropoutConfig, LaplaceConfig, Model, SGHMCConfig, SWAGConfig, TrainConfig,
                              VIConfig)
from symlib.inference.laplace import last_layer_kfac

MOMENTUM = 0.9


class CNN(nn.Module):
    """Conv -> BatchNorm -> relu -> avg pool -> flatten -> Dense -> relu -> Dropout -> Dense."""

    channels: int = 8
    hidden: int = 32
    pool: int = 2
    rate: float = 0.5

    @nn.compact
    def __call__(self, x, train: bool = False, mc_dropout: bool = False):
        x = nn.Conv(self.channels, (3, 3), strides=(2, 2))(x)
        x = nn.BatchNorm(use_running_average=not train, momentum=MOMENTUM)(x)
        x = nn.avg_pool(nn.relu(x), (self.pool, self.pool), strides=(self.pool, self.pool))
        x = nn.relu(nn.Dense(self.hidden)(x.reshape((x.shape[0], -1))))
        x = nn.Dropout(self.rate, deterministic=not (train or mc_dropout))(x)
        return nn.Dense(10)(x)


def model_of(module: CNN) -> Model:
    return Model(apply_fn=lambda v, x: module.apply(v, x),
                 state=("batch_stats",),
                 train_apply_fn=lambda v, x, k: module.apply(v, x, train=True, mutable=["batch_stats"],
                                                             rngs={"dropout": k}),
                 dropout_apply_fn=lambda v, x, k: module.apply(v, x, mc_dropout=True, rngs={"dropout": k}))


NET, TINY = CNN(), CNN(channels=2, hidden=8, pool=7)
MODEL = model_of(NET)
ADAM = TrainConfig(epochs=4, batch_size=32, optimizer=optax.adam(1e-2))


@pytest.fixture(scope="module")
def data():
    d = load_split("mnist", "subset", n_train=384, n_test=0)
    return Data(as_images(standardize(d["x_train"], "mnist")), jnp.asarray(d["y_train"]))


@pytest.fixture(scope="module")
def init(data):
    return NET.init(jax.random.key(0), data.x[:2])


@pytest.fixture(scope="module")
def trained(init, data):
    return inference.fit_map(jax.random.key(1), init, MODEL, data, ADAM).params


def _leaves(tree):
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(tree)]


def _equal(a, b):
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for u, v in zip(_leaves(a), _leaves(b)):
        np.testing.assert_array_equal(u, v)


def _each_draw_carries(draws, stats, n):
    for k in range(n):
        _equal(jax.tree_util.tree_map(lambda a: a[k], draws["batch_stats"]), stats)


def _accuracy(params, data, model=MODEL):
    return float(jnp.mean(jnp.argmax(model.apply_fn(params, data.x), -1) == data.y))


def test_a_state_name_that_is_not_a_top_level_key_is_named(init, data):
    bad = MODEL._replace(state=("batch_stat",))
    with pytest.raises(ValueError, match=r"state entry 'batch_stat' is not a top-level key of params0 \(its keys: "
                                         r"\['batch_stats', 'params'\]\)"):
        inference.fit_map(jax.random.key(1), init, bad, data, ADAM)
    with pytest.raises(ValueError, match="tuple of top-level keys"):
        inference.fit_vi(jax.random.key(1), init, MODEL._replace(state="batch_stats"), data,
                         VIConfig(epochs=1, batch_size=32, optimizer=optax.adam(1e-3)))


def test_fit_map_updates_the_running_statistics_and_learns(init, trained, data):
    stats0, stats = init["batch_stats"]["BatchNorm_0"], trained["batch_stats"]["BatchNorm_0"]
    assert not np.allclose(stats["mean"], stats0["mean"]) and not np.allclose(stats["var"], stats0["var"])
    # the batch moments of the training set under the trained weights: one training-mode step from the
    # stored statistics gives m * old + (1 - m) * batch
    _, new = NET.apply(trained, data.x, train=True, mutable=["batch_stats"], rngs={"dropout": jax.random.key(0)})
    for name in ("mean", "var"):
        batch = (np.asarray(new["batch_stats"]["BatchNorm_0"][name]) - MOMENTUM * np.asarray(stats[name])) \
            / (1 - MOMENTUM)
        np.testing.assert_allclose(stats[name], batch, rtol=0.25, atol=0.1 * np.abs(batch).max())
    assert _accuracy(trained, data) > _accuracy(init, data) + 0.4


def test_without_a_train_apply_fn_the_state_is_held_and_not_differentiated(init, data):
    held = inference.fit_map(jax.random.key(1), init, MODEL._replace(train_apply_fn=None), data,
                             ADAM._replace(epochs=1)).params
    _equal(held["batch_stats"], init["batch_stats"])
    assert not np.allclose(held["params"]["Dense_1"]["kernel"], init["params"]["Dense_1"]["kernel"])
    # the state's entries would change under a gradient (they enter the logits) and weight decay
    g = jax.grad(lambda v: jnp.sum(MODEL.apply_fn(v, data.x[:8])))(init)["batch_stats"]["BatchNorm_0"]["mean"]
    assert np.abs(np.asarray(g)).max() > 0


def test_a_train_apply_fn_that_returns_an_undeclared_entry_is_named(init, data):
    model = MODEL._replace(state=())
    with pytest.raises(ValueError, match=r"returned the state entries \['batch_stats'\], which are not declared"):
        inference.fit_map(jax.random.key(1), init, model, data, ADAM._replace(epochs=1))


def test_fit_vi_holds_the_state_with_zero_spread(trained, data):
    post = inference.fit_vi(jax.random.key(2), trained, MODEL, data,
                            VIConfig(epochs=1, batch_size=64, optimizer=optax.adam(1e-3), std_init=0.01))
    assert all(np.all(np.isfinite(a)) for a in _leaves(post.mean))
    _equal(post.mean["batch_stats"], trained["batch_stats"])
    assert all(np.all(a == 0) for a in _leaves(post.std["batch_stats"]))
    assert all(np.all(a > 0) for a in _leaves(post.std["params"]))
    draws = inference.sample(jax.random.key(3), post, 4)
    _each_draw_carries(draws, trained["batch_stats"], 4)
    assert not np.allclose(draws["params"]["Dense_0"]["kernel"][0], draws["params"]["Dense_0"]["kernel"][1])


def test_fit_swag_draws_carry_the_statistics_of_the_end_of_its_run(trained, data):
    cfg = SWAGConfig(epochs=4, batch_size=64, optimizer=optax.sgd(0.02, momentum=0.5), num_snapshots=3, rank=2)
    post = inference.fit_swag(jax.random.key(4), trained, MODEL, data, cfg)
    # the SWAG phase's SGD is fit_map's with the same configuration: same end of run
    end = inference.fit_map(jax.random.key(4), trained, MODEL, data, cfg.train_config()).params
    for u, v in zip(_leaves(post.mean["batch_stats"]), _leaves(end["batch_stats"])):
        np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-5)
    assert not np.allclose(post.mean["batch_stats"]["BatchNorm_0"]["mean"],
                           trained["batch_stats"]["BatchNorm_0"]["mean"])
    assert all(np.all(a == 0) for a in _leaves(post.variance["batch_stats"]))
    assert any(np.any(a > 0) for a in _leaves(post.variance["params"]))
    draws = inference.sample(jax.random.key(5), post, 3)
    _each_draw_carries(draws, post.mean["batch_stats"], 3)
    assert not np.allclose(draws["params"]["Dense_1"]["kernel"][0], draws["params"]["Dense_1"]["kernel"][1])


@pytest.mark.parametrize("config", [VIConfig(epochs=1, batch_size=64, optimizer=optax.adam(1e-3), std_init=0.01),
                                    SWAGConfig(epochs=3, batch_size=64, optimizer=optax.sgd(0.02), num_snapshots=2,
                                               rank=2)], ids=["vi", "swag"])
def test_fit_modes_keeps_each_mode_s_state_as_its_own_fit_does(config, init, trained, data):
    modes = jax.tree_util.tree_map(lambda *a: jnp.stack(a), trained, init)  # two modes with different statistics
    posts = inference.fit_modes(jax.random.key(6), modes, MODEL, data, config)
    fit = inference.fit_vi if isinstance(config, VIConfig) else inference.fit_swag
    for m, (post, k) in enumerate(zip(posts, jax.random.split(jax.random.key(6), 2))):
        alone = fit(k, jax.tree_util.tree_map(lambda a: a[m], modes), MODEL, data, config)
        for u, v in zip(_leaves(post), _leaves(alone)):
            np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-5, err_msg=f"mode {m}")
        spread = post.std if isinstance(config, VIConfig) else post.variance
        assert all(np.all(a == 0) for a in _leaves(spread["batch_stats"]))
    assert not np.allclose(posts[0].mean["batch_stats"]["BatchNorm_0"]["mean"],
                           posts[1].mean["batch_stats"]["BatchNorm_0"]["mean"])


def test_fit_laplace_last_layer_on_the_cnn(trained, data):
    post = inference.fit_laplace(jax.random.key(6), trained, MODEL, data,
                                 LaplaceConfig(prior_precision=1.0, batch_size=128, last_layer="params/Dense_1"))
    assert isinstance(post, inference.LastLayerLaplace)
    # the layer's inputs, read off the network, are the Dropout's output in evaluation mode
    _, seen = NET.apply(trained, data.x, capture_intermediates=True)
    feats = seen["intermediates"]["Dropout_0"]["__call__"][0]
    head = trained["params"]["Dense_1"]
    ref = last_layer_kfac(feats, head["kernel"], head["bias"], prior_precision=1.0)
    np.testing.assert_allclose(post.posterior.a_factor, ref.a_factor, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(post.posterior.g_factor, ref.g_factor, rtol=1e-4, atol=1e-7)
    draws = inference.sample(jax.random.key(7), post, 3)
    _each_draw_carries(draws, trained["batch_stats"], 3)
    _equal(jax.tree_util.tree_map(lambda a: a[2], draws["params"]["Dense_0"]), trained["params"]["Dense_0"])
    assert not np.allclose(draws["params"]["Dense_1"]["kernel"][0], head["kernel"])
    few = Data(data.x[:32], data.y[:32])
    with pytest.raises(ValueError, match="'params/Dense_0' is not the network's last dense layer"):
        inference.fit_laplace(None, trained, MODEL, few, LaplaceConfig(1.0, last_layer="params/Dense_0"))
    with pytest.raises(ValueError, match="no layer 'params/Head'"):
        inference.fit_laplace(None, trained, MODEL, few, LaplaceConfig(1.0, last_layer="params/Head"))


@pytest.fixture(scope="module")
def tiny(data):
    v0 = TINY.init(jax.random.key(0), data.x[:2])
    return v0, inference.fit_map(jax.random.key(1), v0, model_of(TINY), data, ADAM).params


def test_fit_laplace_dense_holds_the_state(tiny, data):
    v = tiny[1]
    post = inference.fit_laplace(None, v, model_of(TINY), data, LaplaceConfig(prior_precision=10.0, hessian="ggn",
                                                                               batch_size=128))
    n_weights = sum(a.size for a in _leaves(v["params"]))
    assert post.state == ("batch_stats",) and post.precision.shape == (n_weights, n_weights)
    draws = inference.sample(jax.random.key(8), post, 3)
    _each_draw_carries(draws, v["batch_stats"], 3)
    assert not np.allclose(draws["params"]["Conv_0"]["kernel"][0], v["params"]["Conv_0"]["kernel"])


def test_fit_sghmc_holds_the_state(tiny, data):
    v = tiny[1]
    chain = inference.fit_sghmc(jax.random.key(9), v, model_of(TINY), data,
                                SGHMCConfig(step_size=1e-3, epochs=2, batch_size=64, num_samples=2,
                                            momentum_refresh=2))
    _each_draw_carries(chain.samples, v["batch_stats"], 2)
    assert not np.allclose(chain.samples["params"]["Dense_1"]["kernel"][0], v["params"]["Dense_1"]["kernel"])


def test_fit_ensemble_members_update_their_own_statistics(tiny, data):
    v0 = jax.vmap(lambda k: TINY.init(k, data.x[:2]))(jax.random.split(jax.random.key(3), 2))
    members = inference.fit_ensemble(jax.random.key(4), v0, model_of(TINY), data, ADAM._replace(epochs=1)).samples
    mean = np.asarray(members["batch_stats"]["BatchNorm_0"]["mean"])
    assert not np.allclose(mean, 0.0) and not np.allclose(mean[0], mean[1])


def test_fit_dropout_uses_the_model_s_own_dropout(init, trained, data):
    cfg = DropoutConfig(ADAM._replace(epochs=1))
    post = inference.fit_dropout(jax.random.key(10), trained, MODEL, data, cfg)
    assert post.rate is None and post.layer is None
    # training is fit_map's: the model's own dropout and statistics updates
    _equal(post.params, inference.fit_map(jax.random.key(10), trained, MODEL, data, cfg.train).params)
    draws = inference.sample(jax.random.key(11), post, 4)
    assert isinstance(draws, inference.DropoutDraw) and draws.rng.shape[0] == 4
    _each_draw_carries(draws.params, post.params["batch_stats"], 4)
    each = np.asarray(member_probs(draws, data.x[:64], apply_fn=post.predict_fn))  # (draws, points, classes)
    assert not np.allclose(each[0], each[1])  # dropout on at prediction time, a mask per draw
    probs = predict_from_samples(draws, data.x[:64], apply_fn=post.predict_fn)
    np.testing.assert_allclose(probs, each.mean(axis=0), rtol=1e-5, atol=1e-6)

    # rate 0: no noise anywhere; the draws are the evaluation-mode network (running statistics)
    still = model_of(NET.clone(rate=0.0))
    post0 = inference.fit_dropout(jax.random.key(12), init, still, data, cfg)
    _equal(post0.params, inference.fit_map(jax.random.key(12), init, still, data, cfg.train).params)
    each0 = np.asarray(member_probs(inference.sample(jax.random.key(13), post0, 2), data.x[:64],
                                    apply_fn=post0.predict_fn))
    ref = jax.nn.softmax(still.apply_fn(post0.params, data.x[:64]))
    np.testing.assert_allclose(each0[0], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(each0[1], ref, rtol=1e-5, atol=1e-6)


def test_fit_dropout_names_the_route(init, data):
    with pytest.raises(ValueError, match="leave config.rate and config.layer None"):
        inference.fit_dropout(jax.random.key(0), init, MODEL, data, DropoutConfig(ADAM, rate=0.2))
    with pytest.raises(ValueError, match="give its MC-dropout forward as model.dropout_apply_fn"):
        inference.fit_dropout(jax.random.key(0), init, MODEL._replace(dropout_apply_fn=None), data,
                              DropoutConfig(ADAM, rate=0.2))
    with pytest.raises(ValueError, match="evaluate them with the model's apply_fn"):
        inference.DropoutPosterior(init, 0.2).predict_fn
