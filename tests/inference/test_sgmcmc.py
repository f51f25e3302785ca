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
    just before a refresh: the linear recursion of `steps` Euler steps after a momentum refresh
    p ~ N(0, 1)."""
    a = np.array([[1.0, h], [-h * curvature, 1.0 - friction]])
    q = np.diag([0.0, 2.0 * friction])
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


def test_a_short_refresh_period_inflates_the_variance_as_predicted(gaussian):
    # a refresh every 10 draws: just before a refresh the variance is ~7% too large, as the
    # linear recursion of the refreshed Euler scheme predicts (kept: draws 6009, 6019, ..., 9999)
    z = _standardised(gaussian, step_size=0.02, friction=0.1, momentum_refresh=10, epochs=10_000, thinning=10)
    predicted = _refreshed_euler_variance(0.02, 0.1, 1 / TAU**2 + N / SIGMA**2, 10)
    assert predicted > 1.05
    assert abs(z.mean()) < 0.03, z.mean()
    assert abs(z.var() - predicted) < 0.03, (z.var(), predicted)


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
    assert res.alpha == pytest.approx(0.05 / 1e-3)
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
    kept slots straddle the second stop)."""
    from symlib.core.models import mlp_apply, mlp_init
    from symlib.inference import SGHMCState, sghmc_epochs

    x = jax.random.normal(jax.random.key(0), (48, 4))
    data, model = Data(x, (x[:, 0] > 0).astype(jnp.int32)), Model(mlp_apply)
    params0 = mlp_init(jax.random.key(1), [4, 6, 2])
    cfg = SGHMCConfig(step_size=1e-2, epochs=5, batch_size=16, num_samples=6, momentum_refresh=3, prior_std=1.0)
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
        sghmc_epochs(jax.random.key(2), params0, model, data, cfg._replace(step_size=1e6, friction=1.0), 2)
    other = mlp_init(jax.random.key(1), [4, 5, 2])
    with pytest.raises(ValueError, match="resume does not fit this run"):
        fit_sghmc(jax.random.key(2), other, model, data, cfg, resume=second)


def test_the_chain_does_not_depend_on_the_order_of_the_params_keys():
    """The refreshed momentum and the diffusion's noise are drawn leaf by leaf: the same
    network with its dict keys inserted in another order gives the same draws."""
    from symlib.core.models import mlp_apply, mlp_init

    x = jax.random.normal(jax.random.key(0), (48, 4))
    data, model = Data(x, (x[:, 0] > 0).astype(jnp.int32)), Model(mlp_apply)
    params0 = mlp_init(jax.random.key(1), [4, 6, 2])
    reordered = {k: {n: params0[k][n] for n in reversed(list(params0[k]))} for k in reversed(list(params0))}
    assert list(reordered) != list(params0)
    cfg = SGHMCConfig(step_size=1e-2, epochs=3, batch_size=16, num_samples=4, momentum_refresh=2, prior_std=1.0)
    a = fit_sghmc(jax.random.key(2), params0, model, data, cfg).samples
    b = fit_sghmc(jax.random.key(2), reordered, model, data, cfg).samples
    for k in params0:
        for n in params0[k]:
            np.testing.assert_array_equal(np.asarray(a[k][n]), np.asarray(b[k][n]))
