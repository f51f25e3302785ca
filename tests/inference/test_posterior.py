"""symlib.inference.posterior: one shape for every posterior approximation. Each
``fit_<method>(key, params0, model, data, config)`` gives bit for bit what its training loop
gives, and ``sample(key, posterior, n)`` what the loop's own sampler draws."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from symlib import inference
from symlib.core.gaussian import DiagonalGaussian, sample_gaussian
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import (Data, DropoutConfig, LaplaceConfig, Model, SGHMCConfig, SWAGConfig, TrainConfig,
                              VIConfig)
from symlib.inference.dropout import dropout_samples
from symlib.inference.hmc import make_logdensity, run_hmc
from symlib.inference.laplace import _laplace_posterior, kfac_sample, laplace_sample, last_layer_kfac
from symlib.inference.sgmcmc import _run_sghmc
from symlib.inference.swag import _train_swag, swag_sample
from symlib.inference.training import _train_map, _train_map_many
from symlib.inference.likelihood import Categorical, network_loglik
from symlib.inference.vi import _train_vi

SIZES = [4, 6, 3]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(48, 4)).astype(np.float32)
Y = RNG.integers(0, 3, 48)
MODEL, DATA = Model(mlp_apply), Data(X, Y)
PARAMS0 = mlp_init(jax.random.key(0), SIZES)


def _same(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b) and len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def _n(stack):
    return len(jax.tree_util.tree_leaves(stack)[0])


def test_fit_map_is_train_map_and_samples_repeat_it():
    cfg = TrainConfig(epochs=2, batch_size=16, optimizer=optax.adam(1e-2))
    post = inference.fit_map(jax.random.key(1), PARAMS0, MODEL, DATA, cfg)
    _same(post.params, _train_map(PARAMS0, jax.random.key(1), X, Y, cfg, mlp_apply)[0])
    draws = inference.sample(jax.random.key(2), post, 3)
    assert _n(draws) == 3
    _same(jax.tree_util.tree_map(lambda a: a[2], draws), post.params)


def test_fit_ensemble_is_train_map_many_of_the_stacked_starts():
    cfg = TrainConfig(epochs=2, batch_size=16, optimizer=optax.adam(1e-2))
    starts = jax.vmap(lambda k: mlp_init(k, SIZES))(jax.random.split(jax.random.key(5), 3))
    post = inference.fit_ensemble(jax.random.key(1), starts, MODEL, DATA, cfg)
    ref, _ = _train_map_many(starts, jax.random.split(jax.random.key(1), 3), X, Y, cfg, mlp_apply)
    assert isinstance(post, inference.Samples)
    _same(post.samples, ref)
    _same(inference.sample(jax.random.key(0), post, 2), jax.tree_util.tree_map(lambda a: a[:2], ref))
    with pytest.raises(ValueError, match="stacked on a leading axis"):
        inference.fit_ensemble(jax.random.key(1), {"w": np.float32(1.0)}, MODEL, DATA, cfg)


def test_fit_vi_is_train_vi_as_one_diagonal_gaussian():
    cfg = VIConfig(epochs=2, batch_size=16, optimizer=optax.adam(1e-2), prior_var=0.5, std_init=0.05)
    post = inference.fit_vi(jax.random.key(3), PARAMS0, MODEL, DATA, cfg)
    res = _train_vi(jax.random.key(3), PARAMS0, network_loglik(mlp_apply, Categorical()), X, Y,
                    epochs=2, batch_size=16, optimizer=cfg.optimizer, prior_var=0.5, std_init=0.05)
    assert isinstance(post, DiagonalGaussian)
    _same(post.mean, res.mu)
    _same(post.std, res.sigma)
    assert set(post.info) == {"elbo"}
    np.testing.assert_array_equal(post.info["elbo"], res.elbo_history)
    _same(inference.sample(jax.random.key(4), post, 5), sample_gaussian(jax.random.key(4), res.mu, res.sigma, 5))


def test_fit_laplace_is_laplace_posterior():
    cfg = LaplaceConfig(prior_precision=2.0, hessian="ggn", batch_size=16)
    post = inference.fit_laplace(jax.random.key(0), PARAMS0, MODEL, DATA, cfg)
    ref = _laplace_posterior(PARAMS0, X, Y, apply_fn=mlp_apply, prior_precision=2.0, hessian="ggn", batch_size=16)
    np.testing.assert_array_equal(post.precision, ref.precision)
    _same(inference.sample(jax.random.key(5), post, 4), laplace_sample(jax.random.key(5), ref, 4))


def test_fit_swag_is_train_swag():
    cfg = SWAGConfig(epochs=4, batch_size=16, optimizer=optax.sgd(0.05), num_snapshots=2, rank=2)
    post = inference.fit_swag(jax.random.key(6), PARAMS0, MODEL, DATA, cfg)
    ref = _train_swag(jax.random.key(6), PARAMS0, X, Y, cfg, apply_fn=mlp_apply)
    _same(post.mean, ref.mean)
    _same(inference.sample(jax.random.key(7), post, 3), swag_sample(jax.random.key(7), ref, 3))


def test_fit_sghmc_keeps_the_draws_and_sample_takes_the_first():
    cfg = SGHMCConfig(step_size=1e-3, epochs=2, batch_size=16, num_samples=3, momentum_refresh=2)
    post = inference.fit_sghmc(jax.random.key(8), PARAMS0, MODEL, DATA, cfg)
    ref = _run_sghmc(jax.random.key(8), PARAMS0, X, Y, loglik_fn=network_loglik(mlp_apply, Categorical()),
                     step_size=1e-3, epochs=2, batch_size=16, num_samples=3, momentum_refresh=2)
    _same(post.samples, ref.samples)
    _same(inference.sample(jax.random.key(0), post, 2), jax.tree_util.tree_map(lambda a: a[:2], ref.samples))
    with pytest.raises(ValueError, match="holds 3 samples; cannot take n=4"):
        inference.sample(jax.random.key(0), post, 4)


def test_fit_dropout_is_fit_map_with_a_dropout_forward():
    from symlib.inference.dropout import dropout_apply

    cfg = DropoutConfig(TrainConfig(epochs=1, batch_size=16, optimizer=optax.adam(1e-2)), rate=0.2, layer="dense_1")
    post = inference.fit_dropout(jax.random.key(9), PARAMS0, MODEL, DATA, cfg)
    trained = inference.fit_map(jax.random.key(9), PARAMS0, MODEL._replace(train_apply_fn=dropout_apply(mlp_apply, 0.2)),
                                DATA, cfg.train)
    ref = trained.params
    _same(post.params, ref)
    _same(post.info["epoch_loss"], trained.info["epoch_loss"])
    _same(inference.sample(jax.random.key(10), post, 4),
          dropout_samples(jax.random.key(10), ref, 4, rate=0.2, layer="dense_1"))


def test_every_method_is_in_fits_and_bad_arguments_are_named():
    assert set(inference.FITS) == {"map", "ensemble", "vi", "laplace", "swag", "sghmc", "hmc", "dropout"}
    cfg = TrainConfig(epochs=1, batch_size=16)
    with pytest.raises(TypeError, match="model must be a symlib.inference.Model"):
        inference.fit_map(jax.random.key(0), PARAMS0, mlp_apply, DATA, cfg)
    # the loop's old call (params0, data_key, x, y, cfg): named as the fits' shape (it once also named the loops)
    with pytest.raises(TypeError, match=r"model must be a symlib.inference.Model\(apply_fn\), got ndarray: the fits "
                                        r"take \(key, params0, model, data, config\)"):
        inference.fit_map(PARAMS0, jax.random.key(0), X, Y, cfg)
    with pytest.raises(TypeError, match=r"data must be a symlib.inference.Data\(x, y\)"):
        inference.fit_map(jax.random.key(0), PARAMS0, MODEL, (X, Y), cfg)
    with pytest.raises(TypeError, match="config must be a VIConfig, got TrainConfig"):
        inference.fit_vi(jax.random.key(0), PARAMS0, MODEL, DATA, cfg)
    with pytest.raises(TypeError, match="no sampler for a dict"):
        inference.sample(jax.random.key(0), {"mu": 1}, 2)
    with pytest.raises(ValueError, match="n"):
        inference.sample(jax.random.key(0), inference.PointEstimate(PARAMS0), 0)


def test_a_new_posterior_type_registers_its_sampler():
    from typing import NamedTuple


    class Constant(NamedTuple):
        value: float

    @inference.sample.register
    def _(posterior: Constant, key, n):
        return {"w": np.full((n, 2), posterior.value)}

    np.testing.assert_array_equal(inference.sample(jax.random.key(0), Constant(3.0), 2)["w"], np.full((2, 2), 3.0))


def test_last_layer_laplace_draws_whole_networks():
    feats = np.maximum(X @ np.asarray(PARAMS0["dense_0"]["kernel"]) + np.asarray(PARAMS0["dense_0"]["bias"]), 0)
    head = PARAMS0["dense_1"]
    kfac = last_layer_kfac(feats, head["kernel"], head["bias"], prior_precision=1.0)
    post = inference.LastLayerLaplace(PARAMS0, kfac, "dense_1")
    draws = inference.sample(jax.random.key(11), post, 3)
    layer = kfac_sample(jax.random.key(11), kfac, 3)
    _same(draws["dense_1"], layer)
    _same(jax.tree_util.tree_map(lambda a: a[1], draws["dense_0"]), PARAMS0["dense_0"])
    with pytest.raises(ValueError, match="no top-level layer 'head'"):
        inference.sample(jax.random.key(11), inference.LastLayerLaplace(PARAMS0, kfac), 3)



def test_every_posterior_type_draws_jax_arrays_of_its_dtype():
    """sample() returns JAX arrays whatever the posterior holds (numpy arrays here), the values
    and the float32 dtype unchanged."""
    net = jax.tree_util.tree_map(np.asarray, PARAMS0)
    stack = jax.tree_util.tree_map(lambda a: np.stack([a, 2 * a]), net)
    feats = np.maximum(X @ net["dense_0"]["kernel"] + net["dense_0"]["bias"], 0)
    kfac = last_layer_kfac(feats, net["dense_1"]["kernel"], net["dense_1"]["bias"], prior_precision=1.0)
    for post, expect in ((inference.PointEstimate(net), jax.tree_util.tree_map(lambda a: np.stack([a, a]), net)),
                         (inference.Samples(stack), stack),
                         (inference.LastLayerLaplace(net, kfac, "dense_1"), None)):
        draws = inference.sample(jax.random.key(3), post, 2)
        for leaf in jax.tree_util.tree_leaves(draws):
            assert isinstance(leaf, jax.Array) and leaf.dtype == jnp.float32, type(post).__name__
        if expect is not None:
            _same(draws, expect)


# ------------------------------------------------------------------ nothing silent (issue 45)

def test_a_fit_refuses_a_non_finite_start():
    bad = jax.tree_util.tree_map(lambda a: a, PARAMS0)
    bad["dense_0"]["kernel"] = np.asarray(bad["dense_0"]["kernel"]).copy()
    bad["dense_0"]["kernel"][0, 0] = np.nan
    for fit, cfg in ((inference.fit_map, TrainConfig(epochs=1, batch_size=16, optimizer=optax.adam(1e-2))),
                     (inference.fit_vi, VIConfig(epochs=1, batch_size=16, optimizer=optax.adam(1e-2))),
                     (inference.fit_sghmc, SGHMCConfig(step_size=1e-3, epochs=2, batch_size=16, num_samples=2))):
        with pytest.raises(ValueError, match=r"params0\['dense_0'\]\['kernel'\].*NaN"):
            fit(jax.random.key(0), bad, MODEL, DATA, cfg)


def test_a_diverging_fit_stops_naming_the_step_and_the_fix():
    with pytest.raises(inference.NonFiniteFitError, match=r"fit_map: the parameters became NaN or inf \(the loss "
                                                          r"was first non-finite at epoch \d+\); lower the learning rate"):
        inference.fit_map(jax.random.key(1), PARAMS0, MODEL, DATA,
                          TrainConfig(epochs=3, batch_size=16, optimizer=optax.adam(1e30)))
    with pytest.raises(inference.NonFiniteFitError, match=r"fit_sghmc: the samples became NaN or inf \(first at kept "
                                                          r"sample \d+ of 3, draw \d+\); lower the step size"):
        inference.fit_sghmc(jax.random.key(2), PARAMS0, MODEL, DATA,
                            SGHMCConfig(step_size=1e3, epochs=4, batch_size=16, num_samples=3))
    with pytest.raises(inference.NonFiniteFitError, match=r"fit_vi: .* lower the learning rate"):
        inference.fit_vi(jax.random.key(3), PARAMS0, MODEL, DATA,
                         VIConfig(epochs=2, batch_size=16, optimizer=optax.adam(1e30)))
    with pytest.raises(inference.NonFiniteFitError, match=r"fit_swag: the snapshots became NaN or inf \(the loss was "
                                                          r"first non-finite at epoch \d+\); lower the learning rate"):
        inference.fit_swag(jax.random.key(4), PARAMS0, MODEL, DATA,
                           SWAGConfig(epochs=4, batch_size=16, optimizer=optax.sgd(1e12), num_snapshots=2, rank=2))


def test_metrics_on_logits_check_concrete_labels():
    from symlib import evaluation

    logits = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\) for 3 classes"):
        evaluation.nll(logits, np.array([0, 1, 3]))  # was nan, with an accuracy that counted the label as wrong

    with pytest.raises(ValueError, match="labels must have shape"):
        evaluation.accuracy(logits, np.array([0, 1]))
    with pytest.raises(ValueError, match="integer class indices"):
        evaluation.nll(logits, np.array([0.0, 1.0, 2.0]))
    assert float(jax.jit(evaluation.nll)(logits, np.array([0, 1, 2]))) == pytest.approx(np.log(3))  # traced: no check


def test_raw_uint8_images_get_a_warning():
    """Issue 45: uint8 images 0..255 went through a fit and a barrier without a word."""
    from symlib import evaluation

    raw = (np.abs(X) * 100).astype(np.uint8)
    with pytest.warns(UserWarning, match=r"data.x holds uint8 values \(up to \d+\).*data.x / 255.0"):
        inference.fit_map(jax.random.key(1), PARAMS0, MODEL, Data(raw, Y),
                          TrainConfig(epochs=1, batch_size=16, optimizer=optax.adam(1e-3)))
    with pytest.warns(UserWarning, match=r"x holds uint8 values"):
        evaluation.interpolation_curve(PARAMS0, PARAMS0, raw, Y, 3, apply_fn=mlp_apply)


# --------------------------------------------------------------------------- HMC

HMC_CFG = inference.HMCConfig(step_size=0.08, num_leapfrog=4, num_burnin=3, num_samples=5, thin=1, num_chains=3)


def test_fit_hmc_is_run_hmc_on_make_logdensity():
    starts = jax.vmap(lambda k: mlp_init(k, SIZES))(jax.random.split(jax.random.key(3), 3))
    post = inference.fit_hmc(jax.random.key(4), starts, MODEL, DATA, HMC_CFG, prior_var=2.0, temperature=0.5)
    ref = run_hmc(jax.random.key(4), starts, make_logdensity(X, Y, prior_var=2.0, temperature=0.5, apply_fn=mlp_apply),
                  HMC_CFG, init_per_chain=True)
    _same(post.samples, ref.samples)
    assert post.chains and post.info.mean_acceptance == ref.mean_acceptance
    # one start for every chain
    one = inference.fit_hmc(jax.random.key(4), PARAMS0, MODEL, DATA, HMC_CFG)
    _same(one.samples, run_hmc(jax.random.key(4), PARAMS0, make_logdensity(X, Y, apply_fn=mlp_apply), HMC_CFG).samples)


def test_samples_of_chains_are_taken_across_the_chains_in_turn():
    chains = {"w": np.arange(3 * 5).reshape(3, 5)}  # chain c, draw d -> 5 c + d
    post = inference.Samples(chains, chains=True)
    np.testing.assert_array_equal(inference.sample(jax.random.key(0), post, 4)["w"], [0, 5, 10, 1])
    np.testing.assert_array_equal(post.stacked()["w"], np.arange(15).reshape(3, 5).T.ravel())
    with pytest.raises(ValueError, match="holds 15 samples; cannot take n=16"):
        inference.sample(jax.random.key(0), post, 16)
    _same(inference.Samples(chains).stacked(), chains)


def test_fit_hmc_holds_the_model_state_and_resumes_from_out_dir(tmp_path):
    def apply(p, x):
        return mlp_apply({k: v for k, v in p.items() if k != "stats"}, x) + p["stats"]["shift"]

    params0 = {**PARAMS0, "stats": {"shift": np.array([0.5, -0.5, 0.0], np.float32)}}
    model = Model(apply, state=("stats",))
    post = inference.fit_hmc(jax.random.key(5), params0, model, DATA, HMC_CFG, out_dir=tmp_path / "run")
    assert post.samples["stats"]["shift"].shape == (3, 5, 3)
    np.testing.assert_array_equal(post.samples["stats"]["shift"][2, 4], params0["stats"]["shift"])
    assert np.ptp(np.asarray(post.samples["dense_0"]["kernel"])[:, :, 0, 0]) > 0  # the weights move
    again = inference.fit_hmc(jax.random.key(5), params0, model, DATA, HMC_CFG, out_dir=tmp_path / "run")
    _same(again.samples, post.samples)
    with pytest.raises(ValueError, match="holds another HMC run"):
        inference.fit_hmc(jax.random.key(6), params0, model, DATA, HMC_CFG, out_dir=tmp_path / "run")
    with pytest.raises(TypeError, match="config must be a HMCConfig, got TrainConfig"):
        inference.fit_hmc(jax.random.key(5), PARAMS0, MODEL, DATA, TrainConfig(epochs=1, batch_size=4))


def test_fit_hmc_names_a_chain_that_became_nan(monkeypatch):
    from symlib.inference import posterior

    real = posterior.run_hmc

    def nan_in_chain_1(*args, **kwargs):
        res = real(*args, **kwargs)
        bad = jax.tree_util.tree_map(lambda a: np.array(a, copy=True), res.samples)
        bad["dense_1"]["bias"][1, 2:] = np.nan
        res._samples = bad
        return res

    monkeypatch.setattr(posterior, "run_hmc", nan_in_chain_1)
    with pytest.raises(inference.NonFiniteFitError, match=r"chain 1 became NaN or inf \(first at kept sample 3 of "
                                                          r"5\); lower the step size \(config.step_size=0.08\)"):
        inference.fit_hmc(jax.random.key(4), PARAMS0, MODEL, DATA, HMC_CFG)
