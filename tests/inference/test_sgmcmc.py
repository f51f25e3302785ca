"""SGHMC through BlackJAX (symlib.inference.sgmcmc): known stationary moments on a conjugate
Gaussian model, a smoke run on OptuNet, the sample schedule and the input checks. A classifier
goes through fit_sghmc; the Gaussian model's own log-likelihood, the kept draws' indices and the
loop's likelihood argument are the private loop's (_run_sghmc)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core.cnn import optunet_apply, optunet_init
from symlib.inference import Data, Model, SGHMCConfig, fit_sghmc
from symlib.inference.ensembles import multi_mode_samples
from symlib.inference.likelihood import Categorical, network_loglik
from symlib.inference.sgmcmc import _run_sghmc, sghmc_schedule

# y_ij ~ N(theta_j, SIGMA^2), theta_j ~ N(0, TAU^2), N examples, D independent coordinates
D, N, SIGMA, TAU = 1024, 4, 2.0, 1.0


def gaussian_loglik(params, xb, yb):
    return -0.5 * jnp.sum((xb - params["theta"]) ** 2) / SIGMA**2


@pytest.fixture(scope="module")
def gaussian():
    x = jax.random.normal(jax.random.key(0), (N, D)) * SIGMA + 1.5
    precision = 1 / TAU**2 + N / SIGMA**2
    mean = np.asarray(x.sum(0)) / SIGMA**2 / precision
    return x, jnp.zeros(N, jnp.int32), mean, precision**-0.5


def _standardised(gaussian, **kwargs):
    x, y, mean, std = gaussian
    res = _run_sghmc(jax.random.key(1), {"theta": jnp.zeros(D)}, x, y, loglik_fn=gaussian_loglik, batch_size=N,
                     prior_std=TAU, num_samples=400, **kwargs)
    return (np.asarray(res.samples["theta"]) - mean) / std


def _refreshed_euler_variance(h, friction, curvature, steps):
    """Stationary variance (times the curvature) of the SGHMC chain on a 1-D Gaussian at the draw
    just before a refresh: the linear recursion of `steps` updates after a refresh u ~ N(0, 1) of
    the velocity v = h u, each u <- (1 - friction) u - h curvature theta + sqrt(2 friction) z, then
    theta <- theta + h u."""
    a = np.array([[1.0 - h * h * curvature, h * (1.0 - friction)], [-h * curvature, 1.0 - friction]])
    q = 2.0 * friction * np.array([[h * h, h], [h, 1.0]])
    a_l = np.linalg.matrix_power(a, steps)
    q_l = sum(np.linalg.matrix_power(a, i) @ q @ np.linalg.matrix_power(a, i).T for i in range(steps))
    var = 1.0 / curvature
    for _ in range(10000):
        var = (a_l @ np.diag([var, 1.0]) @ a_l.T + q_l)[0, 0]
    return var * curvature


def test_sghmc_matches_the_conjugate_gaussian_posterior(gaussian):
    # full-batch gradients (one draw an epoch), small steps, a refresh every 100 draws; kept:
    # every 100th draw, each just before a refresh. The moments are the posterior's to within
    # the discretisation bias (0.6%) and Monte Carlo error (~0.4% on the variance)
    z = _standardised(gaussian, step_size=0.01, friction=0.05, momentum_refresh=100, epochs=50_000, burn_in=10_000,
                      thinning=100)
    assert z.shape == (400, D)
    assert abs(z.mean()) < 0.02, z.mean()
    assert abs(z.var() - 1.0) < 0.025, z.var()
    assert abs(_refreshed_euler_variance(0.01, 0.05, 1 / TAU**2 + N / SIGMA**2, 100) - 1.0) < 0.01


def test_a_short_refresh_period_shrinks_the_variance_as_predicted(gaussian):
    # a refresh every 10 draws: just before a refresh the variance is ~9% too small, as the
    # linear recursion of the refreshed updates predicts (kept: draws 6009, 6019, ..., 9999)
    z = _standardised(gaussian, step_size=0.02, friction=0.1, momentum_refresh=10, epochs=10_000, thinning=10)
    predicted = _refreshed_euler_variance(0.02, 0.1, 1 / TAU**2 + N / SIGMA**2, 10)
    assert predicted < 0.95
    assert abs(z.mean()) < 0.03, z.mean()
    assert abs(z.var() - predicted) < 0.03, (z.var(), predicted)


def test_scale_adaptation_preconditions_each_weight_and_keeps_the_posterior():
    """Two groups of coordinates whose posteriors differ 16-fold in precision: the adapted
    preconditioner M^-1 ~ 1 / sqrt(E[grad^2]) is smaller for the steeper group, and with it
    frozen each group's draws have the variance the refreshed updates at its own effective step
    h sqrt(M^-1) predict (within Monte Carlo error), centred on the posterior mean."""
    scale = jnp.concatenate([jnp.full(256, 0.5), jnp.full(256, 2.0)])
    x = jax.random.normal(jax.random.key(0), (N, 512)) * scale + 1.5
    curvature = np.asarray(1 / TAU**2 + N / scale**2)
    mean = np.asarray(x.sum(0) / scale**2) / curvature

    def loglik(params, xb, yb):
        return -0.5 * jnp.sum(((xb - params["theta"]) / scale) ** 2)

    res = _run_sghmc(jax.random.key(1), {"theta": jnp.zeros(512)}, x, jnp.zeros(N, jnp.int32), loglik_fn=loglik,
                     batch_size=N, prior_std=TAU, num_samples=300, step_size=0.05, friction=0.05,
                     momentum_refresh=100, epochs=40_000, adapt_epochs=2_000, burn_in=10_000, thinning=100)
    inv_mass = np.asarray(res.preconditioner["theta"])
    steep, flat = inv_mass[:256].mean(), inv_mass[256:].mean()
    assert steep < 0.5 * flat, (steep, flat)
    z = (np.asarray(res.samples["theta"]) - mean) * np.sqrt(curvature)
    for group, m in ((slice(0, 256), steep), (slice(256, 512), flat)):
        predicted = _refreshed_euler_variance(0.05 * np.sqrt(m), 0.05, curvature[group][0], 100)
        assert abs(z[:, group].mean()) < 0.03, z[:, group].mean()
        assert abs(z[:, group].var() - predicted) < 0.04, (z[:, group].var(), predicted)


def test_the_gibbs_draw_of_a_prior_precision_has_its_gamma_conditional():
    """Under a Gamma(alpha0, beta0) hyper-prior (shape, rate) a leaf of n weights w has the
    conditional Gamma(alpha0 + n / 2, beta0 + |w|^2 / 2): mean and variance of 20,000 draws."""
    from symlib.inference.sgmcmc import _gibbs_precision

    position = {"a": jnp.arange(6.0).reshape(2, 3) / 4, "b": jnp.array([0.5, -1.0])}
    draws = jax.vmap(lambda k: _gibbs_precision(k, position, 3.0, 2.0))(jax.random.split(jax.random.key(0), 20_000))
    for leaf, (shape, rate) in (("a", (3.0 + 3, 2.0 + 55 / 32)), ("b", (3.0 + 1, 2.0 + 0.625))):
        got = np.asarray(draws[leaf])
        assert abs(got.mean() / (shape / rate) - 1) < 0.02, (leaf, got.mean(), shape / rate)
        assert abs(got.var() / (shape / rate**2) - 1) < 0.06, (leaf, got.var(), shape / rate**2)


def test_the_hyper_prior_sets_the_scale_of_the_draws():
    """With no data, the weights follow their prior: a Gamma hyper-prior with mean precision 100
    (alpha0 = 200, beta0 = 2) makes the chain's weights about 0.1 in scale whatever prior_std
    it starts from, and the sampled precision stays near 100; without it they keep prior_std = 1."""
    def no_data(params, xb, yb):
        return 0.0 * jnp.sum(params["theta"])

    kwargs = dict(batch_size=1, num_samples=200, step_size=0.02, friction=0.1, momentum_refresh=50, epochs=60_000,
                  thinning=100, prior_std=1.0)
    x, y = jnp.zeros((1, 1)), jnp.zeros(1, jnp.int32)
    hyper = _run_sghmc(jax.random.key(2), {"theta": jnp.zeros(256)}, x, y, loglik_fn=no_data, prior_gamma=(200.0, 2.0),
                       prior_refresh=15, **kwargs)
    fixed = _run_sghmc(jax.random.key(2), {"theta": jnp.zeros(256)}, x, y, loglik_fn=no_data, **kwargs)
    assert 70 < float(hyper.prior_precision["theta"]) < 140, hyper.prior_precision
    assert abs(np.asarray(hyper.samples["theta"]).var() / 0.01 - 1) < 0.3
    assert abs(np.asarray(fixed.samples["theta"]).var() - 1) < 0.15


def test_schedule_keeps_the_last_draws_after_the_burn_in():
    assert sghmc_schedule(100, 10) == (54, 5)  # burn-in 50: draws 54, 59, ..., 99
    assert sghmc_schedule(100, 10, burn_in=0, thinning=1) == (90, 1)
    assert sghmc_schedule(10, 10, burn_in=0) == (0, 1)
    with pytest.raises(ValueError, match="num_samples=11 exceeds the 10 draws"):
        sghmc_schedule(10, 11, burn_in=0)
    with pytest.raises(ValueError, match="num_samples=6 exceeds the 5 draws"):
        sghmc_schedule(10, 6, burn_in=1, thinning=2)
    with pytest.raises(ValueError, match="burn_in"):
        sghmc_schedule(10, 1, burn_in=10)


@pytest.fixture(scope="module")
def tiny_mnist():
    x = jax.random.normal(jax.random.key(2), (64, 28, 28, 1))
    return x, jax.random.randint(jax.random.key(3), (64,), 0, 10), optunet_init(jax.random.key(4))


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_optunet_smoke(tiny_mnist):
    x, y, params0 = tiny_mnist
    model, data = Model(optunet_apply), Data(x, y)
    cfg = SGHMCConfig(step_size=1e-3, epochs=2, batch_size=16, num_samples=3, momentum_refresh=5, prior_std=0.1)
    samples = fit_sghmc(jax.random.key(5), params0, model, data, cfg).samples
    assert jax.tree_util.tree_structure(samples) == jax.tree_util.tree_structure(params0)
    jax.tree_util.tree_map(lambda s, p: (s.shape == (3,) + p.shape) or pytest.fail(str(s.shape)), samples, params0)
    assert all(np.isfinite(a).all() for a in jax.tree_util.tree_leaves(samples))
    assert not np.allclose(samples["dense_1"]["kernel"][0], samples["dense_1"]["kernel"][1])
    # which draws were kept, and the friction coefficient, are the loop's own: the same run
    res = _run_sghmc(jax.random.key(5), params0, x, y, loglik_fn=network_loglik(optunet_apply, Categorical()),
                     **cfg._asdict())
    jax.tree_util.tree_map(np.testing.assert_array_equal, res.samples, samples)
    np.testing.assert_array_equal(res.draw_indices, [5, 6, 7])  # 8 draws, burn-in 4, thinning 1
    # no adaptation: the preconditioner stays 1, the prior precision 1 / prior_std^2
    assert all(np.allclose(a, 1.0, rtol=1e-5) for a in jax.tree_util.tree_leaves(res.preconditioner))
    assert all(float(a) == pytest.approx(100.0) for a in jax.tree_util.tree_leaves(res.prior_precision))
    # multi-mode SGHMC through the generic helper (mode-major order)
    modes = jax.tree_util.tree_map(lambda a: jnp.stack([a, -a]), params0)
    pooled = multi_mode_samples(jax.random.key(6), lambda k, p, n: fit_sghmc(
        k, p, model, data, cfg._replace(num_samples=n)).samples, modes, 2)
    assert pooled["conv_0"]["kernel"].shape == (4, 4, 4, 1, 2)
    assert np.all(np.sign(pooled["dense_1"]["bias"][:2]) != np.sign(pooled["dense_1"]["bias"][2:]))


@pytest.mark.parametrize("bad, match", [
    ({"step_size": 0.0}, "step_size"),
    ({"step_size": -1e-3}, "step_size"),
    ({"batch_size": 65}, "batch_size"),
    ({"num_samples": 100}, "num_samples=100 exceeds"),
    ({"friction": 1.5}, "friction"),
    ({"momentum_refresh": 1}, "momentum_refresh"),
    ({"prior_std": 0.0}, "prior_std"),
    ({"temperature": -1.0}, "temperature"),
    ({"burn_in": -1}, "burn_in"),
    ({"adapt_epochs": 2}, "adapt_epochs=2 .8 draws. reaches the first kept draw"),
    ({"adapt_epochs": -1}, "adapt_epochs"),
    ({"prior_gamma": (1.0,)}, "prior_gamma must be None or"),
    ({"prior_gamma": (1.0, 0.0)}, "beta0"),
    ({"prior_refresh": 0}, "prior_refresh"),
])
def test_bad_inputs_raise(tiny_mnist, bad, match):
    x, y, params0 = tiny_mnist
    cfg = SGHMCConfig(**dict(step_size=1e-3, epochs=2, batch_size=16, num_samples=3) | bad)
    with pytest.raises(ValueError, match=match):
        fit_sghmc(jax.random.key(0), params0, Model(optunet_apply), Data(x, y), cfg)


def test_bad_data_and_likelihood_raise(tiny_mnist):
    x, y, params0 = tiny_mnist
    kwargs = dict(step_size=1e-3, epochs=1, batch_size=16, num_samples=1)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 10\)"):  # the loop's network_loglik checks the data
        _run_sghmc(jax.random.key(0), params0, x, y + 10, loglik_fn=network_loglik(optunet_apply, Categorical()),
                   **kwargs)
    cfg, model = SGHMCConfig(**kwargs), Model(optunet_apply)
    with pytest.raises(ValueError, match="y"):
        fit_sghmc(jax.random.key(0), params0, model, Data(x, y + 10), cfg)
    with pytest.raises(ValueError, match="x"):
        fit_sghmc(jax.random.key(0), params0, model, Data(x.at[0, 0, 0, 0].set(jnp.nan), y), cfg)


def test_a_run_in_pieces_draws_what_the_whole_run_draws():
    """sghmc_epochs then fit_sghmc(resume=...): the kept draws of a run stopped after 2 and
    after 4 of its 5 epochs equal the uninterrupted run's (15 draws, draws 9 to 14 kept: the
    kept slots straddle the second stop; the scales adapt up to the first, the hyper-prior's
    Gibbs draws cross both)."""
    from symlib.core.models import mlp_apply, mlp_init
    from symlib.inference import SGHMCState, sghmc_epochs

    x = jax.random.normal(jax.random.key(0), (48, 4))
    data, model = Data(x, (x[:, 0] > 0).astype(jnp.int32)), Model(mlp_apply)
    params0 = mlp_init(jax.random.key(1), [4, 6, 2])
    cfg = SGHMCConfig(step_size=1e-2, epochs=5, batch_size=16, num_samples=6, momentum_refresh=3, prior_std=1.0,
                      adapt_epochs=2, prior_gamma=(2.0, 1.0), prior_refresh=2)  # the state carries both
    whole = fit_sghmc(jax.random.key(2), params0, model, data, cfg).samples
    first = sghmc_epochs(jax.random.key(2), params0, model, data, cfg, 2)
    assert isinstance(first, SGHMCState) and first.epochs_done == 2
    assert not np.any(np.asarray(first.kept["dense_0"]["kernel"]))  # nothing kept in the burn-in
    second = sghmc_epochs(jax.random.key(2), params0, model, data, cfg, 4, resume=first)
    kept = np.asarray(second.kept["dense_0"]["kernel"])
    assert second.epochs_done == 4 and np.all(kept[:3] != 0) and not np.any(kept[3:])  # draws 9-11 kept so far
    pieced = fit_sghmc(jax.random.key(2), params0, model, data, cfg, resume=second).samples
    for a, b in zip(jax.tree_util.tree_leaves(whole), jax.tree_util.tree_leaves(pieced)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="stop=5 must come before config.epochs=5"):
        sghmc_epochs(jax.random.key(2), params0, model, data, cfg, 5)
    with pytest.raises(ValueError, match="stop must lie after the 4 epochs done"):
        sghmc_epochs(jax.random.key(2), params0, model, data, cfg, 3, resume=second)
    from symlib.inference import NonFiniteFitError
    with pytest.raises(NonFiniteFitError, match="sghmc_epochs: the chain became NaN or inf by epoch 2; lower the step"):
        sghmc_epochs(jax.random.key(2), params0, model, data,
                     cfg._replace(step_size=1e6, friction=1.0, adapt_epochs=0, prior_gamma=None), 2)
    other = mlp_init(jax.random.key(1), [4, 5, 2])
    with pytest.raises(ValueError, match="resume does not fit this run"):
        fit_sghmc(jax.random.key(2), other, model, data, cfg, resume=second)


def test_the_chain_does_not_depend_on_the_order_of_the_params_keys():
    """The refreshed momentum, the update's noise and the hyper-prior's Gibbs draws are drawn
    leaf by leaf, the scales adapted weight by weight: the same network with its dict keys
    inserted in another order gives the same draws."""
    from symlib.core.models import mlp_apply, mlp_init

    x = jax.random.normal(jax.random.key(0), (48, 4))
    data, model = Data(x, (x[:, 0] > 0).astype(jnp.int32)), Model(mlp_apply)
    params0 = mlp_init(jax.random.key(1), [4, 6, 2])
    reordered = {k: {n: params0[k][n] for n in reversed(list(params0[k]))} for k in reversed(list(params0))}
    assert list(reordered) != list(params0)
    cfg = SGHMCConfig(step_size=1e-2, epochs=3, batch_size=16, num_samples=4, momentum_refresh=2, prior_std=1.0,
                      adapt_epochs=1, prior_gamma=(2.0, 1.0), prior_refresh=2)
    a = fit_sghmc(jax.random.key(2), params0, model, data, cfg).samples
    b = fit_sghmc(jax.random.key(2), reordered, model, data, cfg).samples
    for k in params0:
        for n in params0[k]:
            np.testing.assert_array_equal(np.asarray(a[k][n]), np.asarray(b[k][n]))
