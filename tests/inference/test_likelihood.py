"""The likelihood of a Model (symlib.inference.likelihood): Categorical and Gaussian through every fit.

Bayesian linear regression, ``y = x w + b + N(0, NOISE^2)`` with the prior ``N(0, PRIOR_VAR I)``,
has a known posterior, ``N(m, A^{-1})`` with ``A = X^T X / NOISE^2 + I / PRIOR_VAR`` and
``m = A^{-1} X^T y / NOISE^2`` (``X`` the inputs with a column of ones): the MAP is ``m`` (the
ridge solution), the Laplace posterior (GGN or full Hessian) is exact, HMC samples it, VI's
mean-field mean is ``m`` too; SGHMC, SWAG and ensembles land near ``m``.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from symlib import inference
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import (Categorical, Data, DropoutConfig, Gaussian, HMCConfig, LaplaceConfig, Model, SGHMCConfig,
                              SWAGConfig, TrainConfig, VIConfig)
from symlib.inference.hmc import make_logdensity
from symlib.inference.laplace import laplace_covariance

N, D, NOISE, PRIOR_VAR = 64, 3, 0.5, 2.0


def linear_apply(params, x):
    return x @ params["w"] + params["b"]


LINEAR = Model(linear_apply, likelihood=Gaussian(NOISE))


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, D)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5]) + 0.3 + NOISE * rng.normal(size=N)).astype(np.float32)
    design = np.concatenate([np.ones((N, 1)), x], axis=1).astype(np.float64)  # ravel_pytree order: b, then w
    precision = design.T @ design / NOISE**2 + np.eye(D + 1) / PRIOR_VAR
    cov = np.linalg.inv(precision)
    mean = cov @ design.T @ y.astype(np.float64) / NOISE**2
    return Data(jnp.asarray(x), jnp.asarray(y)), mean, cov


def flat(params):
    return np.asarray(ravel_pytree(params)[0], np.float64)


def flat_stack(stack):
    return np.asarray(jax.vmap(lambda p: ravel_pytree(p)[0])(stack), np.float64)


P0 = {"w": jnp.zeros(D), "b": jnp.zeros(())}
SGD = TrainConfig(epochs=2000, batch_size=N, optimizer=optax.sgd(0.1), prior_std=PRIOR_VAR**0.5)


def test_likelihoods_log_density_and_output_hessian():
    rng = np.random.default_rng(1)
    f, y = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    ll = Gaussian(0.7).loglik(jnp.asarray(f), jnp.asarray(y))
    ref = np.sum(-0.5 * ((y - f) / 0.7) ** 2 - np.log(0.7) - 0.5 * np.log(2 * np.pi), axis=1)
    np.testing.assert_allclose(ll, ref, rtol=1e-5)
    np.testing.assert_allclose(Gaussian(0.7).loglik(jnp.asarray(f[:, 0]), jnp.asarray(y[:, 0])),
                               -0.5 * ((y[:, 0] - f[:, 0]) / 0.7) ** 2 - np.log(0.7) - 0.5 * np.log(2 * np.pi),
                               rtol=1e-5)
    # the output Hessian is the Hessian of the negative log-likelihood in output space
    logits, labels = jnp.asarray(rng.normal(size=(4, 3)), jnp.float32), jnp.asarray([0, 2, 1, 2])
    for lik, out, target in ((Categorical(), logits, labels), (Gaussian(0.7), jnp.asarray(f, jnp.float32),
                                                               jnp.asarray(y, jnp.float32))):
        exact = jax.vmap(jax.hessian(lambda o, t: -lik.loglik(o[None], t[None])[0]))(out, target)
        np.testing.assert_allclose(lik.output_hessian(out), exact, rtol=1e-5, atol=1e-6)
    assert Gaussian(2) == Gaussian(2.0) and hash(Gaussian(2)) == hash(Gaussian(2.0))  # one compiled loop


def test_map_and_ensemble_are_the_ridge_solution(problem):
    data, mean, _ = problem
    fit = inference.fit_map(jax.random.key(0), P0, LINEAR, data, SGD)
    np.testing.assert_allclose(flat(fit.params), mean, atol=2e-4)
    starts = {"w": jax.random.normal(jax.random.key(1), (3, D)), "b": jnp.arange(3.0)}
    members = inference.fit_ensemble(jax.random.key(2), starts, LINEAR, data, SGD._replace(epochs=1000))
    np.testing.assert_allclose(flat_stack(members.samples), np.broadcast_to(mean, (3, D + 1)), atol=2e-3)


def test_laplace_is_the_exact_posterior(problem):
    data, mean, cov = problem
    ridge = jax.tree_util.tree_map(jnp.asarray, {"b": jnp.float32(mean[0]), "w": jnp.asarray(mean[1:], jnp.float32)})
    for hessian in ("ggn", "full"):
        post = inference.fit_laplace(None, ridge, LINEAR, data,
                                     LaplaceConfig(prior_precision=1 / PRIOR_VAR, hessian=hessian, batch_size=20))
        np.testing.assert_allclose(laplace_covariance(post), cov, rtol=1e-4, atol=1e-9)
    # a Gaussian likelihood's noise scales the curvature: twice the noise, a quarter of the data precision
    wide = inference.fit_laplace(None, ridge, LINEAR._replace(likelihood=Gaussian(2 * NOISE)), data,
                                 LaplaceConfig(prior_precision=1 / PRIOR_VAR, hessian="ggn"))
    design = np.concatenate([np.ones((N, 1)), np.asarray(data.x, np.float64)], axis=1)
    np.testing.assert_allclose(wide.precision, design.T @ design / (2 * NOISE) ** 2 + np.eye(D + 1) / PRIOR_VAR,
                               rtol=1e-4)
    with pytest.raises(ValueError, match="last-layer KFAC Laplace is written for a categorical likelihood"):
        inference.fit_laplace(None, {"head": {"kernel": jnp.zeros((D, 1)), "bias": jnp.zeros(1)}},
                              Model(lambda p, x: x @ p["head"]["kernel"] + p["head"]["bias"], likelihood=Gaussian()),
                              Data(data.x, data.y[:, None]), LaplaceConfig(prior_precision=1.0, last_layer="head"))


def test_hmc_samples_the_conjugate_posterior(problem):
    data, mean, cov = problem
    # jittered trajectories: with a fixed length the chains can hop between two points around the mean
    cfg = HMCConfig(step_size=0.05, num_leapfrog=10, num_burnin=100, num_samples=400, thin=1, num_chains=2,
                    step_size_jitter=0.2, num_leapfrog_jitter=7)
    post = inference.fit_hmc(jax.random.key(3), P0, LINEAR, data, cfg, prior_var=PRIOR_VAR)
    draws = flat_stack(post.stacked())
    se = np.sqrt(np.diag(cov) / len(draws)) * 3  # HMC's draws are about independent here; a generous margin
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean), 4 * se)
    np.testing.assert_allclose(np.cov(draws.T), cov, rtol=0.3, atol=0.1 * np.sqrt(np.diag(cov)).max() ** 2)
    # the density is the conjugate model's log joint (a constant aside): its gradient vanishes at the mean
    ld = make_logdensity(data.x, data.y, prior_var=PRIOR_VAR, apply_fn=linear_apply, likelihood=Gaussian(NOISE))
    grad = jax.grad(ld)({"b": jnp.float32(mean[0]), "w": jnp.asarray(mean[1:], jnp.float32)})
    np.testing.assert_allclose(flat(grad), 0.0, atol=2e-3)
    assert ld.fingerprint != make_logdensity(data.x, data.y, prior_var=PRIOR_VAR, apply_fn=linear_apply,
                                             likelihood=Gaussian(2 * NOISE)).fingerprint


def test_vi_mean_is_the_posterior_mean(problem):
    data, mean, cov = problem
    # a decaying learning rate, so that the last iterate is the optimum, not Adam's noise around it
    post = inference.fit_vi(jax.random.key(4), P0, LINEAR, data,
                            VIConfig(epochs=3000, batch_size=N,
                                     optimizer=optax.adam(optax.cosine_decay_schedule(1e-2, 3000)), prior_var=PRIOR_VAR, num_mc=4))
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_array_less(np.abs(flat(post.mean) - mean), 0.1 * sd)
    # the mean-field optimum's standard deviations are 1 / sqrt(diag(A))
    np.testing.assert_allclose(flat(post.std), 1 / np.sqrt(np.diag(np.linalg.inv(cov))), rtol=0.05)


def test_sghmc_and_swag_land_near_the_ridge_solution(problem):
    data, mean, cov = problem
    ridge = {"b": jnp.float32(mean[0]), "w": jnp.asarray(mean[1:], jnp.float32)}
    sd = np.sqrt(np.diag(cov))
    sghmc = inference.fit_sghmc(jax.random.key(5), P0, LINEAR, data,
                                SGHMCConfig(step_size=0.01, epochs=200, batch_size=16, num_samples=100,
                                            prior_std=PRIOR_VAR**0.5, momentum_refresh=10))
    draws = flat_stack(sghmc.samples)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean), 1.5 * sd)
    assert np.all(draws.std(axis=0) < 3 * sd) and np.all(draws.std(axis=0) > 0.2 * sd)
    swag = inference.fit_swag(jax.random.key(6), ridge, LINEAR, data,
                              SWAGConfig(epochs=40, batch_size=16, optimizer=optax.sgd(1e-2), num_snapshots=10, rank=2,
                                         prior_std=PRIOR_VAR**0.5))
    np.testing.assert_array_less(np.abs(flat(swag.mean) - mean), sd)


def test_dropout_regression_runs_and_fits(problem):
    data, _, _ = problem
    net = mlp_init(jax.random.key(7), [D, 16, 1])
    post = inference.fit_dropout(jax.random.key(8), net, Model(mlp_apply, likelihood=Gaussian(NOISE)),
                                 Data(data.x, data.y[:, None]),
                                 DropoutConfig(TrainConfig(epochs=300, batch_size=16, optimizer=optax.adam(1e-2)),
                                               rate=0.1))
    loss = np.asarray(post.info["epoch_loss"])
    assert np.isfinite(loss).all() and loss[-10:].mean() < 0.5 * loss[:10].mean()
    resid = np.asarray(mlp_apply(post.params, data.x))[:, 0] - np.asarray(data.y)
    assert np.mean(resid**2) < 0.25 * np.var(np.asarray(data.y))


def test_bad_targets_and_likelihoods_raise(problem):
    data, _, _ = problem
    key = jax.random.key(0)
    fast = SGD._replace(epochs=1)
    with pytest.raises(ValueError, match=r"y has shape \(64, 2\) but the network's outputs have shape \(n,\)"):
        inference.fit_map(key, P0, LINEAR, Data(data.x, jnp.stack([data.y, data.y], 1)), fast)
    with pytest.raises(ValueError, match=r"y has shape \(64, 1\) but the network's outputs have shape \(n,\)"):
        inference.fit_vi(key, P0, LINEAR, Data(data.x, data.y[:, None]), VIConfig(epochs=1, batch_size=N,
                                                                                  optimizer=optax.adam(1e-2)))
    with pytest.raises(ValueError, match="y contains NaN or inf"):
        inference.fit_laplace(None, P0, LINEAR, Data(data.x, data.y.at[3].set(jnp.inf)),
                              LaplaceConfig(prior_precision=1.0))
    with pytest.raises(ValueError, match="y must be floating-point targets for a Gaussian likelihood, got dtype int32"):
        inference.fit_map(key, P0, LINEAR, Data(data.x, jnp.arange(N)), fast)
    with pytest.raises(ValueError, match="y contains NaN or inf"):
        inference.fit_hmc(key, P0, LINEAR, Data(data.x, data.y.at[0].set(jnp.nan)),
                          HMCConfig(step_size=0.05, num_leapfrog=2, num_burnin=1, num_samples=1, thin=1))
    ld = make_logdensity(data.x, jnp.stack([data.y, data.y], 1), apply_fn=linear_apply, likelihood=Gaussian())
    with pytest.raises(ValueError, match=r"y has shape \(2, 2\) but the network's outputs have shape \(n,\)"):
        ld(P0)  # the outputs are checked when the density is first traced
    for bad in (0.0, -1.0, float("nan"), "1"):
        with pytest.raises(ValueError, match=r"Gaussian\(noise_std=...\) must be a positive finite number"):
            Gaussian(bad)
    with pytest.raises(TypeError, match="model.likelihood must be symlib.inference.Categorical"):
        inference.fit_map(key, P0, Model(linear_apply, likelihood="gaussian"), data, fast)
    # categorical labels out of range, and the categorical likelihood of regression outputs
    net = mlp_init(jax.random.key(0), [D, 4, 3])
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\) for 3 classes"):
        inference.fit_sghmc(key, net, Model(mlp_apply), Data(data.x, jnp.arange(N) % 4),
                            SGHMCConfig(step_size=1e-3, epochs=1, batch_size=16, num_samples=1))
    with pytest.raises(ValueError, match=r"y must be integer class indices"):
        inference.fit_swag(key, net, Model(mlp_apply), data,
                           SWAGConfig(epochs=4, batch_size=16, optimizer=optax.sgd(1e-2), num_snapshots=2, rank=2))
    with pytest.raises(ValueError, match=r"apply_fn must return logits \(n, classes\) for a categorical likelihood"):
        inference.fit_map(key, P0, Model(linear_apply), Data(data.x, jnp.zeros(N, jnp.int32)), fast)
