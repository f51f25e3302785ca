"""SWAG (symlib.inference.swag): known answers for the snapshot statistics, the sampler's
moments, the snapshot schedule of fit_swag, and input checks."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from symlib.inference import Data, Model, fit_map, fit_swag
from symlib.inference.swag import SWAGConfig, SWAGPosterior, swag_covariance, swag_from_snapshots, swag_sample
from symlib.inference.training import TrainConfig, map_objective

K = 6


def _snapshots(seed=0, k=K):
    """A stack of k snapshots of a two-leaf pytree (D = 5), correlated across parameters."""
    rng = np.random.default_rng(seed)
    flat = rng.normal(size=(k, 5)) @ rng.normal(size=(5, 5)) + np.arange(5.0)
    return {"a": flat[:, :2].reshape(k, 2, 1).astype(np.float32), "b": flat[:, 2:].astype(np.float32)}, flat


def _direct_covariance(flat, rank, scale):
    """scale * (diag + D^T D / (R - 1)) from the snapshots, with numpy (float64): the covariance
    torch-uncertainty's SWAG (Laurent et al.'s library) and Maddox et al.'s code draw at a given
    scale (Maddox et al.'s Eq. (2), with its halves, is scale 0.5)."""
    mean = flat.mean(axis=0)
    diag = np.diag(flat.var(axis=0))
    if rank == 0:
        return scale * diag
    dev = flat[len(flat) - rank:] - mean
    return scale * (diag + dev.T @ dev / (rank - 1))


@pytest.mark.parametrize("rank", [0, 4, K])
def test_snapshot_statistics_and_sample_moments(rank):
    snaps, flat = _snapshots()
    scale = 0.3
    post = swag_from_snapshots(snaps, rank, scale)
    np.testing.assert_allclose(post.mean["a"].ravel(), flat.mean(0)[:2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(post.mean["b"], flat.mean(0)[2:], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(post.variance["b"], flat.var(0)[2:], rtol=1e-4, atol=1e-4)
    assert post.deviations.shape == (rank, 5) and post.num_snapshots == K
    expected = _direct_covariance(flat, rank, scale)
    np.testing.assert_allclose(swag_covariance(post), expected, rtol=1e-4, atol=1e-4)
    samples = swag_sample(jax.random.PRNGKey(1), post, 200_000)
    assert samples["a"].shape == (200_000, 2, 1) and samples["b"].shape == (200_000, 3)
    draws = np.concatenate([np.asarray(samples["a"]).reshape(-1, 2), np.asarray(samples["b"])], axis=1)
    sd = np.sqrt(np.diag(expected))
    np.testing.assert_allclose(draws.mean(0), flat.mean(0), atol=0.02 * sd.max())
    np.testing.assert_allclose(np.cov(draws.T), expected, atol=0.02 * expected.max())
    # the scale multiplies the covariance
    wide = swag_sample(jax.random.PRNGKey(1), post, 200_000, scale=4 * scale)
    np.testing.assert_allclose(np.std(np.asarray(wide["b"]), 0), 2 * np.std(np.asarray(samples["b"]), 0), rtol=0.02)


def test_diagonal_variance_keeps_its_precision_far_from_zero():
    """Snapshots near 1 with a spread of 3e-4: mean(theta^2) - mean^2 in float32 loses most of
    the digits (and zeroes some variances); the variance about the mean keeps them."""
    rng = np.random.default_rng(3)
    flat = (1.0 + 3e-4 * rng.normal(size=(20, 400))).astype(np.float32)
    post = swag_from_snapshots({"w": flat}, 0)
    np.testing.assert_allclose(post.variance["w"], flat.astype(np.float64).var(axis=0), rtol=1e-3)


def _softmax_regression(n=96, d=3, c=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(d, c)) + rng.gumbel(size=(n, c)), axis=1).astype(np.int32)
    return x, y


def linear_apply(params, x):
    return x @ params["kernel"] + params["bias"]


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_fit_swag_snapshots_are_the_sgd_trajectory_and_mean_near_map():
    """With a constant learning rate and no momentum the SWAG phase is fit_map's SGD run:
    the snapshots are its parameters after epochs 2, 4, 6; started at the MAP optimum
    (Newton's method on the convex objective) the SWAG mean stays near it."""
    x, y = _softmax_regression()
    n, prior_std = len(x), 1.0
    params = {"kernel": jnp.zeros((3, 3)), "bias": jnp.zeros(3)}
    flat, unravel = ravel_pytree(params)
    obj = lambda f: map_objective(unravel(f), x, y, n, prior_std, linear_apply)  # noqa: E731
    for _ in range(20):
        flat = flat - jnp.linalg.solve(jax.hessian(obj)(flat), jax.grad(obj)(flat))
    assert float(jnp.abs(jax.grad(obj)(flat)).max()) < 1e-5
    map_params = unravel(flat)

    cfg = SWAGConfig(epochs=6, batch_size=16, optimizer=optax.sgd(0.05), num_snapshots=3, rank=3, snapshot_every=2)
    key = jax.random.PRNGKey(3)
    post = fit_swag(key, map_params, Model(linear_apply), Data(x, y), cfg)
    assert isinstance(post, SWAGPosterior) and post.epoch_losses.shape == (6,)
    train = TrainConfig(6, 16, cfg.optimizer, prior_std)
    sgd = fit_map(key, map_params, Model(linear_apply), Data(x, y), train, keep_trajectory=True)
    losses, traj = sgd.info["epoch_loss"], sgd.info["trajectory"]
    expected = swag_from_snapshots(jax.tree_util.tree_map(lambda a: a[jnp.array([1, 3, 5])], traj), 3, cfg.scale)
    np.testing.assert_allclose(post.epoch_losses, losses, rtol=1e-5)
    for leaf in ("kernel", "bias"):
        np.testing.assert_allclose(post.mean[leaf], expected.mean[leaf], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(post.mean[leaf], map_params[leaf], atol=0.05)
    np.testing.assert_allclose(post.deviations, expected.deviations, rtol=1e-4, atol=1e-6)
    assert float(jnp.max(post.deviations**2)) > 0


def test_ramp_starts_at_its_first_rate():
    """Full-batch SGD (one step an epoch) on a linear ramp from 0.01 to 1 over 4 steps: the
    first snapshot is one step of size 0.01 from params0 (rank = K keeps every snapshot:
    theta_k = mean + dev_k)."""
    x, y = _softmax_regression(n=16)
    p0 = {"kernel": jnp.full((3, 3), 0.1), "bias": jnp.zeros(3)}
    cfg = SWAGConfig(epochs=4, batch_size=16, optimizer=optax.sgd(optax.linear_schedule(0.01, 1.0, 4)),
                     num_snapshots=4, rank=4)
    post = fit_swag(jax.random.PRNGKey(0), p0, Model(linear_apply), Data(x, y), cfg)
    mean, unravel = ravel_pytree(post.mean)
    first = unravel(mean + post.deviations[0])
    grad = jax.grad(map_objective)(p0, x, y, 16, 1.0, linear_apply)
    for leaf in ("kernel", "bias"):
        np.testing.assert_allclose(first[leaf], p0[leaf] - 0.01 * grad[leaf], rtol=1e-5, atol=1e-6)


def test_bad_inputs_name_the_argument():
    snaps, _ = _snapshots()
    with pytest.raises(ValueError, match="rank"):
        swag_from_snapshots(snaps, K + 1)
    with pytest.raises(ValueError, match="rank"):
        swag_from_snapshots(snaps, 1)
    with pytest.raises(ValueError, match="scale"):
        swag_from_snapshots(snaps, 2, scale=0.0)
    with pytest.raises(ValueError, match="snapshots"):
        swag_from_snapshots({"a": np.zeros((K, 2)), "b": np.zeros((K + 1, 2))}, 2)
    with pytest.raises(ValueError, match="snapshots"):
        swag_from_snapshots({"a": np.zeros((K, 2)), "b": np.float32(1.0)}, 2)
    with pytest.raises(ValueError, match="snapshots"):
        swag_from_snapshots({"a": np.zeros((1, 2))}, 0)
    post = swag_from_snapshots(snaps, 2)
    with pytest.raises(ValueError, match="scale"):
        swag_sample(jax.random.PRNGKey(0), post, 3, scale=-1.0)
    with pytest.raises(ValueError, match="num_samples"):
        swag_sample(jax.random.PRNGKey(0), post, 0)
    x, y = _softmax_regression(n=32)
    p0 = {"kernel": jnp.zeros((3, 3)), "bias": jnp.zeros(3)}
    bad = {"snapshot_every": dict(epochs=4, num_snapshots=3, rank=2, snapshot_every=2),
           "rank": dict(epochs=4, num_snapshots=3, rank=4),
           "num_snapshots": dict(epochs=4, num_snapshots=1, rank=0),
           "scale": dict(epochs=4, num_snapshots=2, rank=2, scale=0.0),
           "batch_size": dict(epochs=4, num_snapshots=2, rank=2, batch_size=64)}
    for name, kw in bad.items():
        cfg = SWAGConfig(**{"batch_size": 8, "optimizer": optax.sgd(0.1), **kw})
        with pytest.raises(ValueError, match=name):
            fit_swag(jax.random.PRNGKey(0), p0, Model(linear_apply), Data(x, y), cfg)
    with pytest.raises(ValueError, match="y"):
        fit_swag(jax.random.PRNGKey(0), p0, Model(linear_apply), Data(x, y[:-1]),
                 SWAGConfig(4, 8, optax.sgd(0.1), num_snapshots=2, rank=2))
    with pytest.raises(TypeError, match="optimizer must be an optax.GradientTransformation .* got float 0.1"):
        fit_swag(jax.random.PRNGKey(0), p0, Model(linear_apply), Data(x, y), SWAGConfig(4, 8, 0.1, num_snapshots=2,
                                                                                        rank=2))
