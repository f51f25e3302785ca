"""MAP training of MLPs (optax): one network, or many at once with ``vmap``.

The objective is the negative log posterior per training example under an isotropic
Gaussian prior N(0, prior_std^2 I):

    L(W) = mean_i CE(f_W(x_i), y_i) + ||W||^2 / (2 prior_std^2 N)

(plain SGD on this objective is SGD with weight decay ``wd = 1 / (prior_std^2 N)``; see
:meth:`TrainConfig.prior_std_for_weight_decay`). The optimiser is Adam (default) or SGD with
optional momentum, with a piecewise-constant learning rate multiplied by ``lr_factor`` at
each epoch of ``lr_milestones`` (Laurent et al.'s recipe: SGD, 0.04, halved at epochs 15
and 30 of 60).

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

from symlib.core.losses import accuracy, nll
from symlib.core.models import Params, mlp_apply, mlp_init


OPTIMIZERS = ("adam", "sgd")


class TrainConfig(NamedTuple):
    epochs: int
    batch_size: int
    learning_rate: float = 1e-3
    prior_std: float = 1.0
    optimizer: str = "adam"
    momentum: float = 0.0
    lr_milestones: tuple[int, ...] = ()
    lr_factor: float = 0.5

    @classmethod
    def from_profile(cls, profile) -> "TrainConfig":
        return cls(profile.epochs, profile.batch_size, profile.learning_rate, profile.prior_std)

    @staticmethod
    def prior_std_for_weight_decay(weight_decay: float, n_train: int) -> float:
        """The ``prior_std`` whose Gaussian prior term equals SGD weight decay ``weight_decay``
        (gradient ``weight_decay * W``) on ``n_train`` examples: ``1 / sqrt(wd N)``."""
        if weight_decay <= 0 or n_train < 1:
            raise ValueError(f"weight_decay must be > 0 and n_train >= 1, got {weight_decay} and {n_train}")
        return float(1.0 / (weight_decay * n_train) ** 0.5)


def learning_rate_at(cfg: TrainConfig, epoch):
    """Learning rate during (0-based) ``epoch``: ``learning_rate * lr_factor**k``, ``k`` the
    number of milestones ``<= epoch``."""
    k = sum(epoch >= m for m in cfg.lr_milestones)
    return cfg.learning_rate * cfg.lr_factor**k


def make_optimizer(cfg: TrainConfig, steps_per_epoch: int) -> optax.GradientTransformation:
    """The optax optimiser of ``cfg`` with its per-step learning-rate schedule."""
    schedule = optax.piecewise_constant_schedule(
        cfg.learning_rate, {int(m) * steps_per_epoch: cfg.lr_factor for m in cfg.lr_milestones})
    if cfg.optimizer == "adam":
        return optax.adam(schedule)
    return optax.sgd(schedule, momentum=cfg.momentum or None)


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
    if cfg.optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {cfg.optimizer!r}; choose one of {OPTIMIZERS}")
    if not 0.0 <= cfg.momentum < 1.0 or cfg.lr_factor <= 0 or cfg.learning_rate <= 0:
        raise ValueError(f"need 0 <= momentum < 1, lr_factor > 0 and learning_rate > 0, got {cfg.momentum}, "
                         f"{cfg.lr_factor} and {cfg.learning_rate}")
    if any(not 0 < m < cfg.epochs for m in cfg.lr_milestones) or list(cfg.lr_milestones) != sorted(cfg.lr_milestones):
        raise ValueError(f"lr_milestones {cfg.lr_milestones} must be increasing epochs in 1..{cfg.epochs - 1}")


def _report_epoch(epoch, loss, total):
    print(f"epoch {int(epoch) + 1}/{total}: objective {float(loss):.4f}", file=sys.stderr, flush=True)


@partial(jax.jit, static_argnames=("cfg", "keep_trajectory", "progress", "observe", "observe_epoch"))
def _fit(params0, data_key, x, y, cfg: TrainConfig, keep_trajectory: bool, progress: bool = False,
         observe=None, observe_epoch=None):
    n = x.shape[0]
    steps = n // cfg.batch_size
    opt = make_optimizer(cfg, steps)
    loss_grad = jax.value_and_grad(map_objective)

    def step(carry, idx):
        params, state = carry
        loss, grads = loss_grad(params, x[idx], y[idx], n, cfg.prior_std)
        updates, state = opt.update(grads, state, params)
        new = optax.apply_updates(params, updates)
        return (new, state), (loss if observe is None else (loss, observe(params, new)))

    def epoch(carry, inputs):
        index, key = inputs
        order = jax.random.permutation(key, n)[: steps * cfg.batch_size].reshape(steps, cfg.batch_size)
        carry, out = jax.lax.scan(step, carry, order)
        losses, seen = (out, None) if observe is None else out
        if progress:
            jax.debug.callback(_report_epoch, index, jnp.mean(losses), cfg.epochs)
        kept = carry[0] if keep_trajectory else (None if observe_epoch is None else observe_epoch(carry[0]))
        return carry, (jnp.mean(losses), kept, seen)

    keys = jax.random.split(data_key, cfg.epochs)
    (params, _), (losses, traj, seen) = jax.lax.scan(epoch, (params0, opt.init(params0)),
                                                     (jnp.arange(cfg.epochs), keys))
    return params, losses, traj, seen


def fit_map(params0: Params, data_key: jax.Array, x: jax.Array, y: jax.Array, cfg: TrainConfig,
            keep_trajectory: bool = False, progress: bool | None = None):
    """Train from ``params0``; returns ``(params, epoch_losses)``, plus the per-epoch
    parameters stacked on a leading axis when ``keep_trajectory``.

    ``progress`` prints one line per epoch to stderr; by default only on a terminal.
    """
    _check_inputs(x, y, cfg)
    progress = sys.stderr.isatty() if progress is None else bool(progress)
    params, losses, traj, _ = _fit(params0, data_key, x, y, cfg, keep_trajectory, progress)
    return (params, losses, traj) if keep_trajectory else (params, losses)


def train_mlp(key: jax.Array, sizes, x, y, cfg: TrainConfig):
    """Initialise (``mlp_init``) and train one MLP; ``key`` is split into init and data keys."""
    init_key, data_key = jax.random.split(key)
    return fit_map(mlp_init(init_key, sizes), data_key, x, y, cfg)


def fit_map_many(params0: Params, data_keys: jax.Array, x, y, cfg: TrainConfig, observe=None, observe_epoch=None):
    """Train a stack of networks at once (leading axis on every leaf of ``params0`` and on
    ``data_keys``) with ``vmap``; returns stacked ``(params, epoch_losses)``.

    Observers are pure jax functions (pass the same function object each time: they are
    static arguments of the compiled loop):

    * ``observe(params_before, params_after)`` is evaluated at every optimisation step,
      its outputs stacked with leading axes ``(networks, epochs, steps_per_epoch)``;
    * ``observe_epoch(params)`` at the end of every epoch, leading axes ``(networks, epochs)``.

    With either, the result is ``(params, epoch_losses, observed)``, ``observed`` a dict
    with keys ``"step"`` and/or ``"epoch"``.
    """
    _check_inputs(x, y, cfg)
    n_nets = jax.tree_util.tree_leaves(params0)[0].shape[0]
    if data_keys.shape[0] != n_nets:
        raise ValueError(f"{n_nets} networks but {data_keys.shape[0]} data keys")
    run = jax.vmap(lambda p, k: _fit(p, k, x, y, cfg, False, False, observe, observe_epoch))
    params, losses, per_epoch, per_step = run(params0, data_keys)
    if observe is None and observe_epoch is None:
        return params, losses
    observed = {"step": per_step} if observe is not None else {}
    if observe_epoch is not None:
        observed["epoch"] = per_epoch
    return params, losses, observed


def evaluate(params: Params, x: jax.Array, y: jax.Array) -> dict[str, float]:
    """Loss (mean NLL) and accuracy of one network."""
    logits = mlp_apply(params, x)
    return {"nll": float(nll(logits, y)), "accuracy": float(accuracy(logits, y))}
