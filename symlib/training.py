"""MAP training of MLPs with Adam (optax): one network, or many at once with ``vmap``.

The objective is the negative log posterior per training example under an isotropic
Gaussian prior N(0, prior_std^2 I):

    L(W) = mean_i CE(f_W(x_i), y_i) + ||W||^2 / (2 prior_std^2 N)

Training is deterministic given the initial parameters and ``data_key``, which alone
decides the minibatch order (a fresh permutation of the training set every epoch; the
last incomplete batch is dropped).
"""
from __future__ import annotations

import sys
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from .metrics import accuracy, nll
from .models import Params, mlp_apply, mlp_init


class TrainConfig(NamedTuple):
    epochs: int
    batch_size: int
    learning_rate: float = 1e-3
    prior_std: float = 1.0

    @classmethod
    def from_profile(cls, profile) -> "TrainConfig":
        return cls(profile.epochs, profile.batch_size, profile.learning_rate, profile.prior_std)


def sq_norm(params: Params) -> jax.Array:
    """Sum of squares of every parameter."""
    return sum(jnp.sum(p**2) for p in jax.tree_util.tree_leaves(params))


def map_objective(params: Params, x: jax.Array, y: jax.Array, n_total: int, prior_std: float) -> jax.Array:
    """Minibatch estimate of the negative log posterior per example (see module docstring)."""
    return nll(mlp_apply(params, x), y) + sq_norm(params) / (2.0 * prior_std**2 * n_total)


def _check_inputs(x: jax.Array, y: jax.Array, cfg: TrainConfig) -> None:
    if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(f"expected x of shape (n, d) and y of shape (n,), got {x.shape} and {y.shape}")
    if not 1 <= cfg.batch_size <= x.shape[0]:
        raise ValueError(f"batch_size={cfg.batch_size} must be between 1 and the {x.shape[0]} training examples")
    if cfg.epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {cfg.epochs}")


def _report_epoch(epoch, loss, total):
    print(f"epoch {int(epoch) + 1}/{total}: objective {float(loss):.4f}", file=sys.stderr, flush=True)


@partial(jax.jit, static_argnames=("cfg", "keep_trajectory", "progress"))
def _fit(params0, data_key, x, y, cfg: TrainConfig, keep_trajectory: bool, progress: bool = False):
    n = x.shape[0]
    steps = n // cfg.batch_size
    opt = optax.adam(cfg.learning_rate)
    loss_grad = jax.value_and_grad(map_objective)

    def step(carry, idx):
        params, state = carry
        loss, grads = loss_grad(params, x[idx], y[idx], n, cfg.prior_std)
        updates, state = opt.update(grads, state, params)
        return (optax.apply_updates(params, updates), state), loss

    def epoch(carry, inputs):
        index, key = inputs
        order = jax.random.permutation(key, n)[: steps * cfg.batch_size].reshape(steps, cfg.batch_size)
        carry, losses = jax.lax.scan(step, carry, order)
        if progress:
            jax.debug.callback(_report_epoch, index, jnp.mean(losses), cfg.epochs)
        return carry, (jnp.mean(losses), carry[0] if keep_trajectory else None)

    keys = jax.random.split(data_key, cfg.epochs)
    (params, _), (losses, traj) = jax.lax.scan(epoch, (params0, opt.init(params0)), (jnp.arange(cfg.epochs), keys))
    return params, losses, traj


def fit_map(params0: Params, data_key: jax.Array, x: jax.Array, y: jax.Array, cfg: TrainConfig,
            keep_trajectory: bool = False, progress: bool | None = None):
    """Train from ``params0``; returns ``(params, epoch_losses)``, plus the per-epoch
    parameters stacked on a leading axis when ``keep_trajectory``.

    ``progress`` prints one line per epoch to stderr; by default only on a terminal.
    """
    _check_inputs(x, y, cfg)
    progress = sys.stderr.isatty() if progress is None else bool(progress)
    params, losses, traj = _fit(params0, data_key, x, y, cfg, keep_trajectory, progress)
    return (params, losses, traj) if keep_trajectory else (params, losses)


def train_mlp(key: jax.Array, sizes, x, y, cfg: TrainConfig):
    """Initialise (``mlp_init``) and train one MLP; ``key`` is split into init and data keys."""
    init_key, data_key = jax.random.split(key)
    return fit_map(mlp_init(init_key, sizes), data_key, x, y, cfg)


def fit_map_many(params0: Params, data_keys: jax.Array, x, y, cfg: TrainConfig):
    """Train a stack of networks at once (leading axis on every leaf of ``params0`` and on
    ``data_keys``) with ``vmap``; returns stacked ``(params, epoch_losses)``."""
    _check_inputs(x, y, cfg)
    n_nets = jax.tree_util.tree_leaves(params0)[0].shape[0]
    if data_keys.shape[0] != n_nets:
        raise ValueError(f"{n_nets} networks but {data_keys.shape[0]} data keys")
    run = jax.vmap(lambda p, k: _fit(p, k, x, y, cfg, False)[:2])
    return run(params0, data_keys)


def evaluate(params: Params, x: jax.Array, y: jax.Array) -> dict[str, float]:
    """Loss (mean NLL) and accuracy of one network."""
    logits = mlp_apply(params, x)
    return {"nll": float(nll(logits, y)), "accuracy": float(accuracy(logits, y))}
