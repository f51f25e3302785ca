"""Laplace (symlib.inference.laplace): known answers for the curvature (GGN = Hessian for
softmax regression; batched = all-at-once on OptuNet; KFAC exact for one example), the
samplers' covariances, the handling of a precision that is not positive definite, and
input checks. The dense Laplace is fitted through fit_laplace (LaplaceConfig)."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from symlib.core.cnn import optunet_apply, optunet_init
from symlib.inference import Data, LaplaceConfig, Model, fit_laplace
from symlib.inference.laplace import (KFACPosterior, LaplacePosterior, LaplaceWarning, kfac_precision, kfac_sample,
                                      laplace_covariance, laplace_sample, last_layer_kfac)

TAU = 0.5


def linear_apply(params, x):
    return x @ params["kernel"] + params["bias"]


def nan_apply(params, x):
    return linear_apply(params, x) * jnp.sqrt(-1.0)


def _softmax_regression(n=40, d=4, c=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, c, size=n).astype(np.int32)
    params = {"kernel": jnp.asarray(rng.normal(size=(d, c)), jnp.float32),
              "bias": jnp.asarray(rng.normal(size=c), jnp.float32)}
    return params, x, y


def _laplace(params, x, y, apply_fn=linear_apply, **config):
    """fit_laplace of the classifier ``apply_fn`` around ``params`` on ``(x, y)``, ``config`` LaplaceConfig's fields."""
    return fit_laplace(jax.random.key(0), params, Model(apply_fn), Data(x, y), LaplaceConfig(**config))


def _nll_sum(apply_fn, unravel, x, y):
    def f(flat):
        logp = jax.nn.log_softmax(apply_fn(unravel(flat), x))
        return -jnp.sum(jnp.take_along_axis(logp, y[:, None], axis=1))
    return f


def test_ggn_equals_full_hessian_for_softmax_regression():
    """Softmax regression is linear in its parameters: the GGN is the exact Hessian,
    anywhere (here at random parameters), and both equal jax.hessian of the summed NLL."""
    params, x, y = _softmax_regression()
    full = _laplace(params, x, y, prior_precision=TAU, hessian="full", batch_size=16)
    ggn = _laplace(params, x, y, prior_precision=TAU, hessian="ggn", batch_size=7)
    flat, unravel = ravel_pytree(params)
    exact = np.asarray(jax.hessian(_nll_sum(linear_apply, unravel, x, y))(flat)) + TAU * np.eye(flat.size)
    np.testing.assert_allclose(full.precision, exact, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ggn.precision, exact, rtol=1e-4, atol=1e-4)
    assert full.num_clipped == ggn.num_clipped == 0 and full.num_data == 40
    assert isinstance(full, LaplacePosterior) and full.hessian == "full" and ggn.hessian == "ggn"


def test_num_data_scales_a_subsample_to_the_whole_set():
    """A data set that is its first half twice: the curvature of the half with num_data = N
    equals the curvature of the whole set (the subsample's sum scaled by N / n)."""
    params, x, y = _softmax_regression(n=20)
    xx, yy = np.concatenate([x, x]), np.concatenate([y, y])
    whole = _laplace(params, xx, yy, prior_precision=TAU, hessian="ggn")
    half = _laplace(params, x, y, prior_precision=TAU, hessian="ggn", num_data=40)
    np.testing.assert_allclose(half.precision, whole.precision, rtol=1e-5, atol=1e-5)
    assert half.num_data == whole.num_data == 40
    with pytest.raises(ValueError, match="num_data"):
        _laplace(params, x, y, prior_precision=TAU, num_data=19)


@pytest.fixture(scope="module")
def optunet_problem():
    x = jax.random.normal(jax.random.PRNGKey(0), (48, 18, 18, 1))
    y = jax.random.randint(jax.random.PRNGKey(1), (48,), 0, 10)
    return optunet_init(jax.random.PRNGKey(2)), x, y


def test_batched_full_hessian_matches_one_shot_on_optunet(optunet_problem):
    """The leaf-blocked, minibatch-accumulated Hessian (batches of 20:
    the last one padded)
    equals jax.hessian of the summed NLL over all 48 images (18x18,
    OptuNet's smallest input, for speed) at once. At a random
    initialisation (not a minimum) the precision is indefinite: the negative-curvature
    eigenvalues are raised to the prior precision, counted and warned about."""
    params, x, y = optunet_problem
    with pytest.warns(LaplaceWarning, match="raised"):
        post = _laplace(params, x, y, optunet_apply, prior_precision=1e-3, batch_size=20)
    flat, unravel = ravel_pytree(params)
    exact = np.asarray(jax.jit(jax.hessian(_nll_sum(optunet_apply, unravel, x, y)))(flat))
    np.testing.assert_allclose(post.precision - 1e-3 * np.eye(355), exact, atol=1e-4 * np.abs(exact).max())
    lam = np.linalg.eigvalsh(exact + 1e-3 * np.eye(355))
    assert post.num_clipped == int(np.sum(lam < 1e-3 - 1e-5 * np.abs(lam).max())) > 0
    assert post.eigenvalues.min() >= 1e-3
    samples = laplace_sample(jax.random.PRNGKey(3), post, 5)
    assert jax.tree_util.tree_map(jnp.shape, samples)["conv_1"]["kernel"] == (5, 5, 5, 1, 10)


def test_ggn_matches_jacobian_formula_on_optunet(optunet_problem):
    """The GGN accumulated in batches equals sum_i J_i^T (diag p_i - p_i p_i^T) J_i from
    the Jacobian of all logits at once; it is positive semi-definite (nothing clipped)."""
    params, x, y = optunet_problem
    x, y = x[:6], y[:6]
    post = _laplace(params, x, y, optunet_apply, prior_precision=1.0, hessian="ggn", batch_size=4)
    flat, unravel = ravel_pytree(params)
    logits_of = lambda f: optunet_apply(unravel(f), x)  # noqa: E731
    jac = np.asarray(jax.jit(jax.jacrev(logits_of))(flat), np.float64)
    p = np.asarray(jax.nn.softmax(logits_of(flat)), np.float64)
    lam = np.stack([np.diag(q) - np.outer(q, q) for q in p])
    exact = np.einsum("bcd,bce,bef->df", jac, lam, jac)
    np.testing.assert_allclose(post.precision - np.eye(355), exact, atol=1e-4 * np.abs(exact).max())
    assert post.num_clipped == 0


def test_laplace_samples_have_the_inverse_precision_as_covariance():
    params, x, y = _softmax_regression()
    post = _laplace(params, x, y, prior_precision=TAU, batch_size=16)
    cov = np.linalg.inv(post.precision)
    np.testing.assert_allclose(laplace_covariance(post), cov, rtol=1e-6, atol=1e-6)
    samples = laplace_sample(jax.random.PRNGKey(0), post, 200_000)
    draws = jax.vmap(lambda t: ravel_pytree(t)[0])(samples)
    mean = ravel_pytree(params)[0]
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(np.mean(draws, 0), mean, atol=0.02 * sd.max())
    np.testing.assert_allclose(np.cov(np.asarray(draws, np.float64).T), cov, atol=0.02 * np.abs(cov).max())


def test_laplace_samples_do_not_depend_on_the_eigenbasis_of_a_repeated_eigenvalue():
    """Softmax is unchanged by adding one vector to every class's logit weights: the curvature
    is zero on those d + 1 directions, where the precision's eigenvalue is the prior's, repeated.
    Any orthonormal basis of that space is an eigenbasis (eigh's choice varies with the LAPACK
    build); the same key must draw the same networks from a rotated one."""
    params, x, y = _softmax_regression(d=4, c=3)
    post = _laplace(params, x, y, prior_precision=TAU, hessian="ggn", batch_size=16)
    repeated = np.abs(post.eigenvalues - TAU) < 1e-6
    assert repeated.sum() == 5
    block = post.eigenvectors[:, repeated]
    turn = np.linalg.qr(np.random.default_rng(1).normal(size=(5, 5)))[0]
    rotated = post.eigenvectors.copy()
    rotated[:, repeated] = block @ turn
    assert not np.allclose(rotated, post.eigenvectors, atol=1e-2)
    np.testing.assert_allclose(rotated.T @ rotated, np.eye(rotated.shape[1]), atol=1e-10)
    same, turned = (jax.vmap(lambda t: ravel_pytree(t)[0])(laplace_sample(jax.random.key(4), p, 6))
                    for p in (post, post._replace(eigenvectors=rotated)))
    np.testing.assert_allclose(turned, same, rtol=1e-5, atol=1e-5)


def _last_layer(n, d=3, c=4, seed=0, bias=True):
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n, d)).astype(np.float32)
    kernel = rng.normal(size=(d, c)).astype(np.float32)
    return feats, kernel, rng.normal(size=c).astype(np.float32) if bias else None


@pytest.mark.parametrize("bias", [True, False])
def test_kfac_is_exact_for_one_example(bias):
    """For N = 1, N A kron G is the exact GGN of row-major vec([[W], [b]]); and the
    precision is (sqrt(N) A + sqrt(tau) I) kron (sqrt(N) G + sqrt(tau) I)."""
    feats, kernel, b = _last_layer(1, bias=bias)
    post = last_layer_kfac(feats, kernel, b, prior_precision=TAU)
    assert isinstance(post, KFACPosterior)
    abar = np.concatenate([feats, np.ones((1, 1), np.float32)], 1) if bias else feats
    wbar = np.concatenate([kernel, b[None]], 0) if bias else kernel
    ggn = _laplace({"w": jnp.asarray(wbar)}, abar, np.zeros(1, np.int32), lambda p, a: a @ p["w"],
                   prior_precision=TAU, hessian="ggn").precision - TAU * np.eye(wbar.size)
    np.testing.assert_allclose(np.kron(post.a_factor, post.g_factor), ggn, rtol=1e-5, atol=1e-6)
    eye_a, eye_g = np.eye(len(post.a_factor)), np.eye(len(post.g_factor))
    expected = (ggn + TAU * np.eye(wbar.size)
                + np.sqrt(TAU) * (np.kron(post.a_factor, eye_g) + np.kron(eye_a, post.g_factor)))
    np.testing.assert_allclose(kfac_precision(post), expected, rtol=1e-5, atol=1e-6)


def test_kfac_samples_have_the_matrix_normal_covariance():
    feats, kernel, b = _last_layer(50, d=2, c=3)
    post = last_layer_kfac(feats, kernel, b, prior_precision=TAU)
    samples = kfac_sample(jax.random.PRNGKey(0), post, 200_000)
    assert samples["kernel"].shape == (200_000, 2, 3) and samples["bias"].shape == (200_000, 3)
    wbar = np.concatenate([np.asarray(samples["kernel"]), np.asarray(samples["bias"])[:, None]], 1).reshape(200_000, -1)
    cov = np.linalg.inv(kfac_precision(post))
    np.testing.assert_allclose(wbar.mean(0), np.concatenate([kernel, b[None]]).ravel(),
                               atol=0.02 * np.sqrt(np.diag(cov)).max())
    np.testing.assert_allclose(np.cov(wbar.T.astype(np.float64)), cov, atol=0.02 * np.abs(cov).max())


def test_bad_inputs_name_the_argument():
    params, x, y = _softmax_regression()
    for tau in (0.0, -1.0):
        with pytest.raises(ValueError, match="prior_precision"):
            _laplace(params, x, y, prior_precision=tau)
    with pytest.raises(ValueError, match="hessian"):
        _laplace(params, x, y, prior_precision=1.0, hessian="exact")
    with pytest.raises(ValueError, match="y"):
        _laplace(params, x, y[:-1], prior_precision=1.0)
    with pytest.raises(ValueError, match="y"):
        _laplace(params, x, y + 3, prior_precision=1.0)
    with pytest.raises(ValueError, match="batch_size"):
        _laplace(params, x, y, prior_precision=1.0, batch_size=0)
    post = _laplace(params, x, y, prior_precision=1.0, batch_size=16)
    with pytest.raises(ValueError, match="num_samples"):
        laplace_sample(jax.random.PRNGKey(0), post, 0)
    feats, kernel, b = _last_layer(5)
    with pytest.raises(ValueError, match="prior_precision"):
        last_layer_kfac(feats, kernel, b, prior_precision=0.0)
    with pytest.raises(ValueError, match="kernel"):
        last_layer_kfac(feats, kernel.T, b, prior_precision=1.0)
    with pytest.raises(ValueError, match="bias"):
        last_layer_kfac(feats, kernel, b[:-1], prior_precision=1.0)
    with pytest.raises(ValueError, match="features"):
        last_layer_kfac(feats[0], kernel, b, prior_precision=1.0)
    with pytest.raises(ValueError, match="params"):
        _laplace({"kernel": params["kernel"], "bias": params["bias"] * np.nan}, x, y, prior_precision=1.0)
    with pytest.raises(ValueError, match="nan"):  # e.g. a network whose logits overflow
        _laplace(params, x, y, nan_apply, prior_precision=1.0, batch_size=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a positive-definite precision warns about nothing
        _laplace(params, x, y, prior_precision=1.0, hessian="ggn", batch_size=7)


def test_a_dense_laplace_too_large_is_refused_before_any_work():
    """Issue 45: a full Laplace on a 26.7k-parameter CNN ran for minutes without a word. Above
    max_params it is refused at once, with the memory and work it would take and the
    alternatives; max_params=None runs it anyway."""
    import time

    from symlib.core.models import mlp_apply, mlp_init
    from symlib.inference.laplace import MAX_FULL_PARAMS

    big = mlp_init(jax.random.key(0), [100, 100, 10])  # 11,110 parameters
    x, y = np.zeros((4, 100), np.float32), np.zeros(4, int)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"dense full Laplace on 11,110 parameters needs a 11,110 x 11,110 float64 "
                                         r"precision \(0.99 GB\).*last-layer Laplace.*max_params=None"):
        _laplace(big, x, y, mlp_apply, prior_precision=1.0)
    assert time.perf_counter() - start < 1.0 and MAX_FULL_PARAMS == 10_000
    small = mlp_init(jax.random.key(0), [3, 4, 2])
    with pytest.raises(ValueError, match="above max_params=10"):
        _laplace(small, np.zeros((4, 3), np.float32), np.zeros(4, int), mlp_apply, prior_precision=1.0,
                 max_params=10)
    with warnings.catch_warnings():  # fit_laplace's predictive check on all-zero inputs is not this test's subject
        warnings.filterwarnings("ignore", "fit_laplace: the sampled predictive", LaplaceWarning)
        post = _laplace(small, np.zeros((4, 3), np.float32), np.zeros(4, int), mlp_apply, prior_precision=1.0,
                        max_params=None)
    assert post.precision.shape == (26, 26)
