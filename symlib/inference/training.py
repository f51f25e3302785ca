"""MAP training of MLPs (optax): one network, or many at once with ``vmap``.

The objective is the negative log posterior per training example under an isotropic
Gaussian prior N(0, prior_std^2 I)::

    L(W) = mean_i CE(f_W(x_i), y_i) + ||W||^2 / (2 prior_std^2 N)

(plain SGD on this objective is SGD with weight decay ``wd = 1 / (prior_std^2 N)``; see
:meth:`TrainConfig.prior_std_for_weight_decay`). The optimiser is Adam (default) or SGD with
optional momentum, with a piecewise-constant learning rate multiplied by ``lr_factor`` at
each epoch of ``lr_milestones`` (Laurent et al.'s recipe: SGD, 0.04, halved at epochs 15
and 30 of 60).

Training is deterministic given the initial parameters and ``data_key``, which alone
decides the minibatch order (a fresh permutation of the training set every epoch; the
last incomplete batch is dropped). :func:`fit_map` can show a progress bar over the
epochs (:func:`symlib.core.progress.progress_bar`, on a terminal or when asked).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from symlib.core.checks import check_key, positive_float, positive_int
from symlib.core.losses import accuracy, nll
from symlib.core.models import Params, check_mlp_data, check_mlp_params, mlp_apply, mlp_init
from symlib.core.progress import progress_bar, progress_enabled

OPTIMIZERS = ("adam", "sgd")


class TrainConfig(NamedTuple):
    """Hyper-parameters of MAP training (a hashable static argument of the compiled loop).

    Attributes:
        epochs: passes over the training set.
        batch_size: examples per minibatch (the last incomplete batch is dropped).
        learning_rate: initial learning rate.
        prior_std: standard deviation of the isotropic Gaussian prior.
        optimizer: ``"adam"`` or ``"sgd"``.
        momentum: SGD momentum in ``[0, 1)`` (0: none).
        lr_milestones: increasing epochs at which the learning rate is multiplied by ``lr_factor``.
        lr_factor: the factor applied at each milestone.
    """

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
        """The Adam configuration of an experiment profile.

        Args:
            profile: anything with ``epochs``, ``batch_size``, ``learning_rate`` and ``prior_std``.

        Returns:
            A :class:`TrainConfig` with the other fields at their defaults.
        """
        return cls(profile.epochs, profile.batch_size, profile.learning_rate, profile.prior_std)

    @staticmethod
    def prior_std_for_weight_decay(weight_decay: float, n_train: int) -> float:
        """The ``prior_std`` whose Gaussian prior term equals SGD weight decay.

        Args:
            weight_decay: the weight decay ``wd`` (gradient ``wd * W``), > 0.
            n_train: number of training examples ``N``, >= 1.

        Returns:
            ``1 / sqrt(wd N)``.

        Raises:
            ValueError: if ``weight_decay <= 0`` or ``n_train < 1``.
        """
        if weight_decay <= 0 or n_train < 1:
            raise ValueError(f"weight_decay must be > 0 and n_train >= 1, got {weight_decay} and {n_train}")
        return float(1.0 / (weight_decay * n_train) ** 0.5)


def learning_rate_at(cfg: TrainConfig, epoch):
    """Learning rate during a (0-based) epoch.

    Args:
        cfg: the training configuration.
        epoch: the epoch (an int, or a jax integer inside traced code).

    Returns:
        ``learning_rate * lr_factor**k``, ``k`` the number of milestones ``<= epoch``.
    """
    k = sum(epoch >= m for m in cfg.lr_milestones)
    return cfg.learning_rate * cfg.lr_factor**k


def make_optimizer(cfg: TrainConfig, steps_per_epoch: int) -> optax.GradientTransformation:
    """The optax optimiser of ``cfg`` with its per-step learning-rate schedule.

    Args:
        cfg: the training configuration.
        steps_per_epoch: optimisation steps per epoch (milestones are in epochs).

    Returns:
        ``optax.adam`` or ``optax.sgd`` (with momentum if ``cfg.momentum``) on a
        piecewise-constant schedule.
    """
    schedule = optax.piecewise_constant_schedule(
        cfg.learning_rate, {int(m) * steps_per_epoch: cfg.lr_factor for m in cfg.lr_milestones})
    if cfg.optimizer == "adam":
        return optax.adam(schedule)
    return optax.sgd(schedule, momentum=cfg.momentum or None)


def sq_norm(params: Params) -> jax.Array:
    """Sum of squares of every parameter.

    Args:
        params: any pytree of arrays.

    Returns:
        A scalar.
    """
    return sum(jnp.sum(p**2) for p in jax.tree_util.tree_leaves(params))


def map_objective(params: Params, x: jax.Array, y: jax.Array, n_total: int, prior_std: float) -> jax.Array:
    """Minibatch estimate of the negative log posterior per example (see module docstring).

    Args:
        params: one network's parameters.
        x: minibatch inputs ``(b, d_0)``.
        y: minibatch integer labels ``(b,)``.
        n_total: number of training examples ``N`` (scales the prior term).
        prior_std: standard deviation of the Gaussian prior.

    Returns:
        ``mean CE + ||W||^2 / (2 prior_std^2 N)``, a scalar.
    """
    return nll(mlp_apply(params, x), y) + sq_norm(params) / (2.0 * prior_std**2 * n_total)


def _check_config(cfg: TrainConfig, n: int) -> None:
    """Raise ``ValueError`` naming the field of ``cfg`` that is invalid for ``n`` examples."""
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    epochs = positive_int(cfg.epochs, "epochs")
    if positive_int(cfg.batch_size, "batch_size") > n:
        raise ValueError(f"batch_size={cfg.batch_size} must be between 1 and the {n} training examples")
    if cfg.optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {cfg.optimizer!r}; choose one of {OPTIMIZERS}")
    positive_float(cfg.learning_rate, "learning_rate")
    positive_float(cfg.lr_factor, "lr_factor")
    positive_float(cfg.prior_std, "prior_std")
    if not 0.0 <= cfg.momentum < 1.0:
        raise ValueError(f"momentum must lie in [0, 1), got {cfg.momentum!r}")
    milestones = list(cfg.lr_milestones)
    if any(not 0 < m < epochs for m in milestones) or milestones != sorted(milestones):
        raise ValueError(f"lr_milestones {cfg.lr_milestones} must be increasing epochs in 1..{epochs - 1}")


def _check_inputs(x: jax.Array, y: jax.Array, cfg: TrainConfig, sizes) -> None:
    """Check the data against the network's layer ``sizes``, and ``cfg``, before training.

    Raises:
        ValueError: naming ``x``, ``y`` or the field of ``cfg`` that is wrong.
    """
    check_mlp_data(sizes, x, y)
    _check_config(cfg, x.shape[0])


# The bar of the fit_map call running now (innermost last); the compiled loop reports to
# it through a host callback, since a compiled function cannot hold a Python object.
_EPOCH_BARS: list = []


def _report_epoch(epoch, loss) -> None:
    """Host callback at the end of every epoch: advance the bar, show the objective."""
    if _EPOCH_BARS:
        bar = _EPOCH_BARS[-1]
        bar.set_postfix(objective=f"{float(loss):.4f}", refresh=False)
        bar.update(int(epoch) + 1 - bar.n)


@contextlib.contextmanager
def _epoch_bar(epochs: int, enabled: bool) -> Iterator[None]:
    """A ``"train"`` progress bar over ``epochs`` that :func:`_report_epoch` updates."""
    if not enabled:
        yield
        return
    bar = progress_bar(epochs, "train", enabled=True, unit="epoch")
    _EPOCH_BARS.append(bar)
    try:
        yield
        jax.effects_barrier()  # every epoch's callback has run
    finally:
        _EPOCH_BARS.remove(bar)
        bar.close()


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
            jax.debug.callback(_report_epoch, index, jnp.mean(losses))
        kept = carry[0] if keep_trajectory else (None if observe_epoch is None else observe_epoch(carry[0]))
        return carry, (jnp.mean(losses), kept, seen)

    keys = jax.random.split(data_key, cfg.epochs)
    (params, _), (losses, traj, seen) = jax.lax.scan(epoch, (params0, opt.init(params0)),
                                                     (jnp.arange(cfg.epochs), keys))
    return params, losses, traj, seen


def fit_map(params0: Params, data_key: jax.Array, x: jax.Array, y: jax.Array, cfg: TrainConfig,
            keep_trajectory: bool = False, progress: bool | None = None):
    """Train one MLP from ``params0`` by minimising the MAP objective.

    Args:
        params0: initial parameters (the layout of :mod:`symlib.core.models`).
        data_key: ``jax.random`` key deciding the minibatch order of every epoch.
        x: training inputs ``(n, d_0)``, finite.
        y: integer training labels ``(n,)`` in ``[0, d_L)``.
        cfg: the training configuration.
        keep_trajectory: also return the parameters after every epoch.
        progress: show a ``"train"`` progress bar over the epochs (on stderr, with the
            epoch's mean objective); ``None`` shows it only on a terminal.

    Returns:
        ``(params, epoch_losses)``, the final parameters and the mean objective of every
        epoch; with ``keep_trajectory``, ``(params, epoch_losses, trajectory)``, the
        per-epoch parameters stacked on a leading axis.

    Raises:
        ValueError: naming the input when ``x``/``y`` do not fit the network (shapes,
            input width, labels outside the network's outputs, NaN or inf in ``x``), when
            ``data_key`` is not a key, or when a field of ``cfg`` is invalid.
        TypeError: if ``cfg`` is not a :class:`TrainConfig` or ``params0`` not a dict of layers.
    """
    _check_inputs(x, y, cfg, check_mlp_params(params0, "params0"))
    check_key(data_key, "data_key")
    show = progress_enabled(progress)
    with _epoch_bar(cfg.epochs, show):
        params, losses, traj, _ = _fit(params0, data_key, x, y, cfg, keep_trajectory, show)
    return (params, losses, traj) if keep_trajectory else (params, losses)


def train_mlp(key: jax.Array, sizes, x, y, cfg: TrainConfig):
    """Initialise (:func:`symlib.core.models.mlp_init`) and train one MLP.

    Args:
        key: ``jax.random`` key, split into the init key and the data key of :func:`fit_map`.
        sizes: layer widths ``[d_0, ..., d_L]``.
        x: training inputs ``(n, d_0)``.
        y: integer training labels ``(n,)`` in ``[0, d_L)``.
        cfg: the training configuration.

    Returns:
        ``(params, epoch_losses)`` as for :func:`fit_map`.

    Raises:
        ValueError: as for :func:`fit_map`, and for invalid ``sizes`` or ``key``.
    """
    check_key(key, "key")
    init_key, data_key = jax.random.split(key)
    return fit_map(mlp_init(init_key, sizes), data_key, x, y, cfg)


def fit_map_many(params0: Params, data_keys: jax.Array, x, y, cfg: TrainConfig, observe=None, observe_epoch=None):
    """Train a stack of networks at once with ``vmap``.

    Observers are pure jax functions (pass the same function object each time: they are
    static arguments of the compiled loop): ``observe(params_before, params_after)`` is
    evaluated at every optimisation step, its outputs stacked with leading axes
    ``(networks, epochs, steps_per_epoch)``; ``observe_epoch(params)`` at the end of
    every epoch, leading axes ``(networks, epochs)``.

    Args:
        params0: initial parameters of ``K`` networks (leading axis ``K`` on every leaf).
        data_keys: ``K`` ``jax.random`` keys, one minibatch order per network.
        x: training inputs ``(n, d_0)``, shared by all networks.
        y: integer training labels ``(n,)`` in ``[0, d_L)``.
        cfg: the training configuration.
        observe: optional per-step observer.
        observe_epoch: optional per-epoch observer.

    Returns:
        Stacked ``(params, epoch_losses)``; with an observer, ``(params, epoch_losses,
        observed)``, ``observed`` a dict with keys ``"step"`` and/or ``"epoch"``.

    Raises:
        ValueError: as for :func:`fit_map`; also if ``params0`` is not a stack of networks
            or ``data_keys`` does not hold one key per network.
    """
    sizes = check_mlp_params(params0, "params0", batch_dims=1)
    _check_inputs(x, y, cfg, sizes)
    n_nets = jax.tree_util.tree_leaves(params0)[0].shape[0]
    check_key(data_keys, "data_keys", n_nets)
    run = jax.vmap(lambda p, k: _fit(p, k, x, y, cfg, False, False, observe, observe_epoch))
    params, losses, per_epoch, per_step = run(params0, data_keys)
    if observe is None and observe_epoch is None:
        return params, losses
    observed = {"step": per_step} if observe is not None else {}
    if observe_epoch is not None:
        observed["epoch"] = per_epoch
    return params, losses, observed


def evaluate(params: Params, x: jax.Array, y: jax.Array) -> dict[str, float]:
    """Loss and accuracy of one network.

    Args:
        params: one network's parameters.
        x: inputs ``(n, d_0)``.
        y: integer labels ``(n,)`` in ``[0, d_L)``.

    Returns:
        ``{"nll": mean negative log-likelihood, "accuracy": fraction correct}``.

    Raises:
        ValueError: naming ``x`` or ``y`` if they do not fit the network.
    """
    check_mlp_data(check_mlp_params(params), x, y)
    logits = mlp_apply(params, x)
    return {"nll": float(nll(logits, y)), "accuracy": float(accuracy(logits, y))}
