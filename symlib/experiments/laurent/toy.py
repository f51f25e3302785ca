"""The toy problem of Laurent et al. (2024), App. A: 2-2-1 ReLU perceptrons on two
linearly separable 2-D Gaussian classes, thousands trained at once.

The paper's class means were lost in the text we have; we use +-(1.5, 1.5) with identity
covariance and reject points on the wrong side of the line x + y = 0 (the paper: "we
ensured that the samples were fully separable"), 200 points per class.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

from symlib.core.models import mlp_apply, mlp_init

CLASS_MEAN = 1.5


def two_gaussians(seed: int = 0, n_per_class: int = 200, mean: float = CLASS_MEAN) -> tuple[np.ndarray, np.ndarray]:
    """Two separable Gaussian classes: class 0 around ``-(mean, mean)``, class 1 around
    ``+(mean, mean)``, identity covariance, only points on their class's side of x + y = 0.

    Args:
        seed: seed of the numpy generator.
        n_per_class: points per class.
        mean: distance of the class means from the origin along each axis.

    Returns:
        ``(x, y)``: ``(2n, 2)`` float32 points and ``(2n,)`` int32 labels.
    """
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for label, sign in ((0, -1.0), (1, 1.0)):
        kept = np.empty((0, 2))
        while len(kept) < n_per_class:
            draw = rng.normal(size=(2 * n_per_class, 2)) + sign * mean
            kept = np.concatenate([kept, draw[sign * draw.sum(1) > 0]])
        xs.append(kept[:n_per_class])
        ys.append(np.full(n_per_class, label))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int32)


def bce_loss(params, x, y):
    """Mean binary cross-entropy of the single logit ``mlp_apply(params, x)[:, 0]``.

    Args:
        params: the network's parameters.
        x: ``(n, 2)`` inputs.
        y: ``(n,)`` labels in {0, 1}.

    Returns:
        The scalar loss.
    """
    return jnp.mean(optax.sigmoid_binary_cross_entropy(mlp_apply(params, x)[:, 0], y.astype(jnp.float32)))


@partial(jax.jit, static_argnames=("epochs", "batch_size"))
def _train_one(params, key, x, y, epochs: int, batch_size: int, learning_rate: float):
    opt = optax.sgd(learning_rate)
    n = x.shape[0]
    steps = n // batch_size

    def step(carry, idx):
        p, s = carry
        grads = jax.grad(bce_loss)(p, x[idx], y[idx])
        updates, s = opt.update(grads, s, p)
        return (optax.apply_updates(p, updates), s), None

    def epoch(carry, k):
        order = jax.random.permutation(k, n)[: steps * batch_size].reshape(steps, batch_size)
        return jax.lax.scan(step, carry, order)[0], None

    (params, _), _ = jax.lax.scan(epoch, (params, opt.init(params)), jax.random.split(key, epochs))
    return params, bce_loss(params, x, y)


def train_perceptrons(key, x, y, num_nets: int = 10_000, *, sizes=(2, 2, 1), epochs: int = 10, batch_size: int = 10,
                      learning_rate: float = 2.0):
    """Train ``num_nets`` networks at once (``vmap``) with SGD on binary cross-entropy
    (Laurent et al. App. A: batch 10, learning rate 2, 10 epochs).

    Args:
        key: JAX random key (initialisations and minibatch orders).
        x: ``(n, 2)`` inputs.
        y: ``(n,)`` labels in {0, 1}.
        num_nets: networks to train.
        sizes: layer sizes.
        epochs: SGD epochs.
        batch_size: minibatch size.
        learning_rate: SGD step size.

    Returns:
        ``(params, loss)``: the parameters stacked on a leading axis (numpy) and each
        network's final training loss.

    Raises:
        ValueError: if ``num_nets`` is below 1.
    """
    if num_nets < 1:
        raise ValueError(f"num_nets must be >= 1, got {num_nets}")
    init_key, data_key = jax.random.split(key)
    inits = jax.vmap(lambda k: mlp_init(k, list(sizes)))(jax.random.split(init_key, num_nets))
    train = jax.vmap(lambda p, k: _train_one(p, k, jnp.asarray(x), jnp.asarray(y), epochs, batch_size,
                                             learning_rate))
    params, loss = train(inits, jax.random.split(data_key, num_nets))
    return jax.device_get(params), np.asarray(loss)


def sort_by_output_weight(params):
    """Order the hidden units of a one-hidden-layer net by their (single) outgoing weight,
    largest first: the ordering Laurent et al. use for their Figure 1 (App. A.2, "starting
    from the last layer").

    Args:
        params: a one-hidden-layer network with a single output.

    Returns:
        ``(params, perm)``: the reordered network and the permutation applied.
    """
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

    out = np.asarray(params["dense_1"]["kernel"])[:, 0]
    perm = np.lexsort((np.arange(len(out)), -out))
    return apply_permutation(mlp_permutation_spec(1), {"P_0": perm}, params), perm


def kde_on_grid(values: np.ndarray, grid: int = 400) -> tuple[np.ndarray, np.ndarray, float]:
    """A Gaussian-KDE density of ``values`` (Scott's bandwidth) on ``grid`` points between
    the sample's extremes.

    The density is :class:`scipy.stats.gaussian_kde`'s (the same bandwidth,
    ``n ** (-1/5)`` times the standard deviation with ``ddof=1``, and the same
    normalisation), its kernel sum computed by one compiled float32 program (about ten
    times faster than scipy's float64 on a CPU, which matters for the bootstrap's hundreds
    of densities); it agrees with scipy's to about 1e-6 relative (``tests/experiments/test_experiments.py``).

    Returns:
        ``(points, density, bandwidth)``; the bandwidth in the units of ``values``; points
        and bandwidth in float64.
    """
    values = np.asarray(values, float)
    if values.ndim != 1 or len(values) < 2:
        raise ValueError(f"kde_on_grid takes a 1-D sample of at least 2 values, got shape {values.shape}")
    bandwidth = float(len(values) ** -0.2 * np.std(values, ddof=1))
    g = np.linspace(values.min(), values.max(), grid)
    density = np.asarray(_kde_sum(jnp.asarray(g, jnp.float32), jnp.asarray(values, jnp.float32),
                                  jnp.float32(bandwidth)), float)
    return g, density, bandwidth


@jax.jit
def _kde_sum(points: jax.Array, values: jax.Array, bandwidth: jax.Array) -> jax.Array:
    """``mean_i N(points; values_i, bandwidth^2)``."""
    z = (points[:, None] - values[None, :]) / bandwidth
    return jnp.exp(-0.5 * z * z).sum(axis=1) / (values.shape[0] * bandwidth * np.sqrt(2 * np.pi))


def modes_of_density(points: np.ndarray, density: np.ndarray, min_height: float = 0.1) -> np.ndarray:
    """Local maxima of a density on increasing ``points`` higher than ``min_height`` times
    the highest (see :func:`count_modes`)."""
    f = np.asarray(density)
    peaks = [j for j in range(1, len(f) - 1) if f[j] > f[j - 1] and f[j] >= f[j + 1] and f[j] > min_height * f.max()]
    return np.asarray(points)[peaks]


def count_modes(values: np.ndarray, grid: int = 400, min_height: float = 0.1) -> np.ndarray:
    """Locations of the modes of a Gaussian-KDE density of ``values`` (Scott's bandwidth):
    local maxima higher than ``min_height`` times the highest.

    Args:
        values: the 1-D sample.
        grid: points at which the density is evaluated, between the sample's extremes.
        min_height: smallest mode height, relative to the highest.

    Returns:
        The modes' locations, increasing.
    """
    g, f, _ = kde_on_grid(values, grid)
    return modes_of_density(g, f, min_height)
