import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import integrate, stats

from symlib.core.gaussian import DiagonalGaussian
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import Data, Model, VIConfig, fit_vi
from symlib.core.noise import normal_vector, split_like
from symlib.inference.likelihood import Categorical, network_loglik
from symlib.inference.vi import (MeanFieldState, VIResult, _train_vi,
                                  gaussian_kl, init_mean_field, inverse_softplus, neg_elbo_from_noise,
                                  sample_from_noise)

# ----------------------------------------------------------------------------- helpers

N, D, NOISE_VAR, PRIOR_VAR = 64, 4, 0.5, 2.0


def _orthogonal_regression(seed=0):
    """Design with X^T X = diag(64, 16, 4, 1): the exact posterior factorises."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(N, D)))
    x = (q * np.sqrt([64.0, 16.0, 4.0, 1.0])).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0]) + np.sqrt(NOISE_VAR) * rng.normal(size=N)).astype(np.float32)
    return x, y


def _exact_posterior(x, y, temperature=1.0):
    """Posterior of N(0, PRIOR_VAR) prior and likelihood tempered by 1/temperature."""
    prec = np.diag(x.T.astype(np.float64) @ x) / (NOISE_VAR * temperature) + 1.0 / PRIOR_VAR
    mean = (x.T.astype(np.float64) @ y / (NOISE_VAR * temperature)) / prec
    return mean, 1.0 / np.sqrt(prec)


def _gauss_loglik(params, xb, yb):
    r = yb - xb @ params["w"]
    return jnp.sum(-0.5 * r**2 / NOISE_VAR - 0.5 * jnp.log(2 * jnp.pi * NOISE_VAR))


def _toy_classification(n=200, d=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(d, 3)), axis=1).astype(np.int32)
    return x, y


FAST = dict(epochs=3, batch_size=50, optimizer=optax.adam(1e-2))
MLP_LOGLIK = network_loglik(mlp_apply, Categorical())  # the MLP classifier's summed log-likelihood


def _fit_mlp_vi(key, sizes, x, y, **kw):
    """Mean-field VI of the MLP ``sizes`` through fit_vi: ``key`` splits into the initial
    means' key and the fit's."""
    init_key, fit_key = jax.random.split(key)
    return fit_vi(fit_key, mlp_init(init_key, sizes), Model(mlp_apply), Data(x, y), VIConfig(**kw))

# ----------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("batch_size,temperature", [(N, 1.0), (N // 2, 0.5)])
def test_recovers_exact_posterior_of_orthogonal_linear_regression(batch_size, temperature):
    x, y = _orthogonal_regression()
    mean, std = _exact_posterior(x, y, temperature)
    total_steps = 2000
    # a Gaussian likelihood (regression): the loop's own loglik_fn, which fit_vi (categorical) does not take
    res = _train_vi(jax.random.key(1), {"w": jnp.zeros(D)}, _gauss_loglik, x, y, prior_var=PRIOR_VAR, std_init=0.1,
                    epochs=total_steps * batch_size // N, batch_size=batch_size,
                    optimizer=optax.adam(optax.cosine_decay_schedule(0.05, total_steps)), num_mc=16,
                    temperature=temperature)
    assert isinstance(res, VIResult)
    np.testing.assert_allclose(res.sigma["w"], std, rtol=0.05)
    assert np.all(np.abs(np.asarray(res.mu["w"]) - mean) < 0.1 * std), (res.mu["w"], mean, std)
    assert res.elbo_history[-1] > res.elbo_history[0]


def test_elbo_scaling_at_exact_posterior_is_log_evidence_per_example():
    """With q the exact posterior, ELBO = log p(D); the minibatch estimate is unbiased
    for it (per example), whichever minibatch size is used."""
    x, y = _orthogonal_regression()
    mean, std = _exact_posterior(x, y)
    q = MeanFieldState({"w": jnp.asarray(mean, jnp.float32)},
                       {"w": jnp.asarray([inverse_softplus(s) for s in std], jnp.float32)})
    np.testing.assert_allclose(jax.nn.softplus(q.rho["w"]), std, rtol=1e-5)
    cov = NOISE_VAR * np.eye(N) + PRIOR_VAR * x.astype(np.float64) @ x.T
    log_evidence = stats.multivariate_normal(np.zeros(N), cov).logpdf(y)
    for batch in (N, 16):
        est = np.mean([float(neg_elbo_from_noise(q, normal_vector(jax.random.key(b), q.mu, 4096), _gauss_loglik,
                                                 x[b * batch:(b + 1) * batch], y[b * batch:(b + 1) * batch], N,
                                                 prior_var=PRIOR_VAR)[0])
                       for b in range(N // batch)])
        np.testing.assert_allclose(-est, log_evidence / N, rtol=2e-3)


def test_kl_formula_matches_numerical_integration():
    for m, s, v in [(0.3, 0.2, 1.0), (-1.5, 2.0, 0.5), (0.0, 0.01, 0.0025)]:
        q, p = stats.norm(m, s), stats.norm(0.0, np.sqrt(v))
        numeric, _ = integrate.quad(lambda w: q.pdf(w) * (q.logpdf(w) - p.logpdf(w)), m - 12 * s, m + 12 * s)
        analytic = float(gaussian_kl({"a": jnp.float32(m)}, {"a": jnp.float32(s)}, v))
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)
    mu = {"a": jnp.array([0.3, -1.5]), "b": {"c": jnp.zeros((2, 2))}}
    sig = {"a": jnp.array([0.2, 2.0]), "b": {"c": jnp.ones((2, 2))}}
    parts = float(gaussian_kl({"a": mu["a"]}, {"a": sig["a"]}, 1.0))
    assert float(gaussian_kl(mu, sig, 1.0)) == pytest.approx(parts)     # N(0,1) vs prior N(0,1): 0
    assert float(gaussian_kl(mu, sig, 2.0)) > 0


# ----------------------------------------------------------------------------- module


def test_init_mean_field_layout_state_and_errors():
    sizes = [5, 7, 3]
    mu0 = mlp_init(jax.random.key(0), sizes)
    q, fixed = init_mean_field(mu0, std_init=0.05)
    assert fixed == {}
    jax.tree_util.tree_map(np.testing.assert_array_equal, q.mu, mu0)  # the means start at the network
    for rho in jax.tree_util.tree_leaves(q.rho):
        np.testing.assert_allclose(jax.nn.softplus(rho), 0.05, rtol=1e-5)
    net = {"params": mu0, "batch_stats": {"m": jnp.ones(3)}}
    q, fixed = init_mean_field(net, state=("batch_stats",))
    assert set(q.mu) == set(q.rho) == {"params"} and set(fixed) == {"batch_stats"}
    x = jnp.ones((4, 5))
    tiny = MeanFieldState(mu0, jax.tree_util.tree_map(lambda a: jnp.full_like(a, inverse_softplus(1e-7)), mu0))
    draw = sample_from_noise(tiny, normal_vector(jax.random.key(3), mu0))
    np.testing.assert_allclose(mlp_apply(draw, x), mlp_apply(mu0, x), atol=1e-4)  # sigma ~ 0: the means
    with pytest.raises(ValueError, match="init_mu has no parameters"):
        init_mean_field({})
    with pytest.raises(ValueError, match="floating-point"):
        init_mean_field({"w": jnp.arange(3)})
    with pytest.raises(ValueError, match="std_init must be a positive"):
        init_mean_field(mu0, std_init=0.0)

def test_fit_mlp_vi_layout_positivity_determinism_and_learning():
    x, y = _toy_classification()
    sizes = [6, 16, 3]
    kw = dict(epochs=40, batch_size=50, optimizer=optax.adam(1e-2), prior_var=1.0, std_init=0.01, num_mc=2)
    a = _fit_mlp_vi(jax.random.key(0), sizes, x, y, **kw)
    b = _fit_mlp_vi(jax.random.key(0), sizes, x, y, **kw)
    c = _fit_mlp_vi(jax.random.key(1), sizes, x, y, **kw)
    assert isinstance(a, DiagonalGaussian) and set(a.info) == {"elbo"}
    ref = mlp_init(jax.random.key(0), sizes)
    for tree in (a.mean, a.std):
        assert jax.tree_util.tree_structure(tree) == jax.tree_util.tree_structure(ref)
        assert jax.tree_util.tree_map(jnp.shape, tree) == jax.tree_util.tree_map(jnp.shape, ref)
    assert all(bool(jnp.all(s > 0)) for s in jax.tree_util.tree_leaves(a.std))
    jax.tree_util.tree_map(np.testing.assert_array_equal, a.mean, b.mean)
    jax.tree_util.tree_map(np.testing.assert_array_equal, a.std, b.std)
    np.testing.assert_array_equal(a.info["elbo"], b.info["elbo"])
    assert not np.allclose(a.mean["dense_0"]["kernel"], c.mean["dense_0"]["kernel"])
    assert isinstance(a.info["elbo"], np.ndarray) and a.info["elbo"].shape == (40,)
    assert a.info["elbo"][-1] > a.info["elbo"][0]
    acc = float(jnp.mean(jnp.argmax(mlp_apply(a.mean, x), 1) == y))
    assert acc > 0.85


def test_python_loop_draws_what_the_compiled_loop_draws():
    """loop="python" (one compiled step, for large CNNs on CPU) gives the scan's fit."""
    x, y = _toy_classification()
    kw = dict(epochs=3, batch_size=50, optimizer=optax.adam(1e-2), num_mc=2)
    a = _fit_mlp_vi(jax.random.key(5), [6, 8, 3], x, y, **kw)
    b = _fit_mlp_vi(jax.random.key(5), [6, 8, 3], x, y, loop="python", **kw)
    np.testing.assert_allclose(a.info["elbo"], b.info["elbo"], rtol=1e-5)
    for ta, tb in ((a.mean, b.mean), (a.std, b.std)):
        jax.tree_util.tree_map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6), ta, tb)


def test_python_loop_leaves_the_callers_params0_usable():
    """The compiled step donates its carry; the caller's jax arrays must not be the ones donated."""
    x, y = _toy_classification()
    mu0 = jax.tree_util.tree_map(jnp.asarray, mlp_init(jax.random.key(0), [6, 4, 3]))
    fit_vi(jax.random.key(1), mu0, Model(mlp_apply), Data(x, y),
           VIConfig(epochs=1, batch_size=50, optimizer=optax.adam(1e-2), loop="python"))
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree_util.tree_leaves(mu0))


def test_errors_are_named():
    x, y = _toy_classification()
    mu0 = mlp_init(jax.random.key(0), [6, 4, 3])
    k = jax.random.key(0)
    bad_x = x.copy()
    bad_x[3, 2] = np.nan
    cases = [
        (dict(x=x[:10]), "leading"),
        (dict(x=bad_x), "x contains NaN"),
        (dict(batch_size=1000), "batch_size"),
        (dict(batch_size=0), "batch_size"),
        (dict(epochs=0), "epochs"),
        (dict(num_mc=0), "num_mc"),
        (dict(std_init=0.0), "std_init"),
        (dict(prior_var=-1.0), "prior_var"),
        (dict(temperature=0.0), "temperature"),
        (dict(n_data=0), "n_data"),
        (dict(loop="while"), "loop"),
    ]
    for change, msg in cases:
        kw = dict(x=x, y=y, **FAST) | change
        with pytest.raises(ValueError, match=msg):
            fit_vi(k, mu0, Model(mlp_apply), Data(kw.pop("x"), kw.pop("y")), VIConfig(**kw))
    for bad in (1e-2, "adam", optax.adam):  # a learning rate, a name, the factory uncalled
        with pytest.raises(TypeError, match="^optimizer must be an optax.GradientTransformation"):
            fit_vi(k, mu0, Model(mlp_apply), Data(x, y), VIConfig(**FAST | dict(optimizer=bad)))
    # the loop's own inputs, which fit_vi (categorical likelihood, params0 checked first) does not pass on
    with pytest.raises(ValueError, match="scalar"):
        _train_vi(k, mu0, lambda p, xb, yb: mlp_apply(p, xb)[:, 0], x, y, **FAST)
    nan_mu = jax.tree_util.tree_map(lambda a: a.at[0].set(jnp.nan), mu0)
    with pytest.raises(ValueError, match="init_mu"):
        _train_vi(k, nan_mu, MLP_LOGLIK, x, y, **FAST)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\) for 3 classes"):
        _fit_mlp_vi(k, [6, 4, 3], x, y + 1, **FAST)
    with pytest.raises(ValueError, match="integer"):
        _fit_mlp_vi(k, [6, 4, 3], x, y.astype(np.float32), **FAST)
    with pytest.raises(ValueError, match="features"):
        _fit_mlp_vi(k, [5, 4, 3], x, y, **FAST)
    with pytest.raises(ValueError, match="softplus"):
        inverse_softplus(0.0)


def test_data_that_does_not_fit_the_network_is_named():
    x, y = _toy_classification()
    k = jax.random.key(0)
    mu0 = mlp_init(jax.random.key(0), [6, 4, 3])
    bad_x = x.copy()
    bad_x[0, 0] = np.inf
    with pytest.raises(ValueError, match=r"x contains NaN or inf \(1 of 1200 entries\)"):
        _fit_mlp_vi(k, [6, 4, 3], bad_x, y, **FAST)
    # the network's data check (the MLP convenience once said "(n, d)")
    with pytest.raises(ValueError, match=r"expected x of shape \(n, \.\.\.\) and y of shape \(n,\), got \(200, 6\) "
                                         r"and \(200, 1\)"):
        _fit_mlp_vi(k, [6, 4, 3], x, y[:, None], **FAST)
    with pytest.raises(ValueError, match=r"sizes must list at least two positive layer widths"):
        _fit_mlp_vi(k, [6], x, y, **FAST)
    with pytest.raises(ValueError, match="key must be a jax.random key, got int"):
        fit_vi(0, mu0, Model(mlp_apply), Data(x, y), VIConfig(**FAST))
    with pytest.raises(ValueError, match="epochs must be a positive integer, got True"):
        fit_vi(k, mu0, Model(mlp_apply), Data(x, y), VIConfig(**(FAST | dict(epochs=True))))
    # the loop's network_loglik (the MLP's): x and y are checked against the MLP of init_mu
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\)"):
        _train_vi(k, mu0, MLP_LOGLIK, x, y + 1, **FAST)
    with pytest.raises(ValueError, match="x has 6 features but the network's input width is 5"):
        _train_vi(k, mlp_init(jax.random.key(0), [5, 4, 3]), MLP_LOGLIK, x, y, **FAST)
    # any other likelihood that fails on a minibatch is reported as such, not from deep inside jax
    xr, yr = _orthogonal_regression()
    with pytest.raises(ValueError, match=r"loglik_fn\(init_mu, x\[:batch_size\], y\[:batch_size\]\) failed"):
        _train_vi(k, {"w": jnp.zeros(D + 1)}, _gauss_loglik, xr, yr, **FAST | dict(batch_size=16))


def test_neg_elbo_averages_the_draws_and_is_invariant_to_a_joint_permutation():
    x, y = _toy_classification(n=20)
    mu0 = mlp_init(jax.random.key(0), [6, 4, 3])
    q, _ = init_mean_field(mu0, std_init=0.1)
    eps = normal_vector(jax.random.key(7), q.mu, 3)
    mean3 = neg_elbo_from_noise(q, eps, MLP_LOGLIK, x, y, 100, temperature=0.5)
    ones = [neg_elbo_from_noise(q, e, MLP_LOGLIK, x, y, 100, temperature=0.5) for e in eps]
    kl = float(gaussian_kl(q.mu, jax.tree_util.tree_map(jax.nn.softplus, q.rho), 1.0))
    assert float(mean3[1]) == pytest.approx(kl) and all(float(o[1]) == pytest.approx(kl) for o in ones)
    np.testing.assert_allclose(mean3[0], np.mean([float(o[0]) for o in ones]), rtol=1e-5)
    # permute the 4 hidden units in mu, rho and the noise alike: the same estimate
    perm = np.array([2, 0, 3, 1])

    def permute(t):
        return {"dense_0": {"kernel": t["dense_0"]["kernel"][:, perm], "bias": t["dense_0"]["bias"][perm]},
                "dense_1": {"kernel": t["dense_1"]["kernel"][perm], "bias": t["dense_1"]["bias"]}}

    e_perm = jnp.concatenate([a.ravel() for a in jax.tree_util.tree_leaves(permute(split_like(eps[0], q.mu)))])
    qp = MeanFieldState(permute(q.mu), permute(q.rho))
    moved = neg_elbo_from_noise(qp, e_perm, MLP_LOGLIK, x, y, 100, temperature=0.5)
    np.testing.assert_allclose(moved[0], ones[0][0], rtol=1e-6)
    assert not np.allclose(neg_elbo_from_noise(qp, eps[0], MLP_LOGLIK, x, y, 100, temperature=0.5)[0],
                           ones[0][0], rtol=1e-6)  # the noise left unpermuted: another network


def test_bayes_by_backprop_of_optunet_through_network_loglik():
    """Laurent et al.'s BNN on OptuNet: 3 ELBO samples, no weight decay (the prior is the KL term)."""
    from symlib.core.cnn import optunet_apply, optunet_init
    from symlib.core.losses import nll

    x = jax.random.normal(jax.random.key(0), (64, 28, 28, 1))
    y = jax.random.randint(jax.random.key(1), (64,), 0, 10)
    loglik = network_loglik(optunet_apply, Categorical())
    assert loglik == network_loglik(optunet_apply, Categorical())  # equal: one compiled loop
    params = optunet_init(jax.random.key(2))
    # fit_vi's likelihood is network_loglik(model.apply_fn, model.likelihood)
    res = fit_vi(jax.random.key(3), params, Model(optunet_apply), Data(x, y),
                 VIConfig(epochs=2, batch_size=16, optimizer=optax.adam(1e-2), num_mc=3))
    assert jax.tree_util.tree_structure(res.mean) == jax.tree_util.tree_structure(params)
    assert res.info["elbo"].shape == (2,) and np.isfinite(res.info["elbo"]).all()
    np.testing.assert_allclose(loglik(params, x, y), -64 * nll(optunet_apply(params, x), y), rtol=1e-5)
    with pytest.raises(ValueError, match="y"):  # labels checked against OptuNet's 10 classes
        fit_vi(jax.random.key(3), params, Model(optunet_apply), Data(x, y + 10),
               VIConfig(epochs=1, batch_size=16, optimizer=optax.adam(1e-2)))


def test_fit_vi_with_state_does_not_depend_on_the_key_order():
    """The same network with its top-level entries (weights, state) in another order: the same fit."""
    x, y = _toy_classification()
    net = {"w": mlp_init(jax.random.key(0), [6, 8, 3]), "s": {"shift": jnp.asarray([0.1, -0.2, 0.3])}}

    def apply(v, xb):
        return mlp_apply(v["w"], xb) + v["s"]["shift"]

    cfg = VIConfig(**FAST)
    a = fit_vi(jax.random.key(4), net, Model(apply, state=("s",)), Data(x, y), cfg)
    b = fit_vi(jax.random.key(4), {"s": net["s"], "w": net["w"]}, Model(apply, state=("s",)), Data(x, y), cfg)
    jax.tree_util.tree_map(np.testing.assert_array_equal, (a.mean, a.std), (b.mean, b.std))
    np.testing.assert_array_equal(a.info["elbo"], b.info["elbo"])
    np.testing.assert_array_equal(a.std["s"]["shift"], 0.0)
