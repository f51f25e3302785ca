"""SWAG: stochastic weight averaging Gaussian (Maddox et al. 2019), diagonal plus low rank.

Maddox, Garipov, Izmailov, Vetrov and Wilson, "A Simple Baseline for Bayesian Uncertainty
in Deep Learning" (NeurIPS 2019). Starting from a trained network, SGD goes on with a
high learning rate and ``K`` snapshots ``theta_1..theta_K`` of the parameters are taken at
regular intervals. With ``D`` the number of parameters (flattened with
``jax.flatten_util.ravel_pytree``) the Gaussian posterior estimate is

    mean      theta_bar = (1/K) sum_k theta_k
    diagonal  Sigma_diag = diag((1/K) sum_k (theta_k - theta_bar)^2)
    low rank  Dhat = the (R, D) matrix of the last R deviations theta_k - theta_bar

and a sample is (as in Maddox et al.'s code and in torch-uncertainty, the library
Laurent et al. used: ``scale`` multiplies the covariance, ``sqrt(scale)`` the deviation)::

    theta = theta_bar + sqrt(scale) * ( Sigma_diag^{1/2} z1 + Dhat^T z2 / sqrt(R - 1) ),
    z1 ~ N(0, I_D),  z2 ~ N(0, I_R),

so that ``Cov(theta) = scale * (Sigma_diag + Dhat^T Dhat / (R - 1))``; ``scale = 0.5`` gives
Maddox et al.'s Eq. (2), whose halves are this scale. With ``rank = 0`` (SWAG-diagonal) the
low-rank term is left out: ``theta = theta_bar + sqrt(scale) Sigma_diag^{1/2} z1``. Laurent
et al. (ICLR 2024) sample "with a scale of 0.1" and ``R = K = 20``: ``scale = 0.1`` here.
(Until 2026-12-01 the halves were built into the sample as well, so that the scale of 0.1
drew half the covariance the authors' library draws.)

The deviations are taken from the final mean ``theta_bar`` of all snapshots (the sample
covariance of the snapshots is then ``Dhat^T Dhat / (K - 1)`` when ``R = K``); Maddox et
al.'s online implementation uses the running mean at the time of each snapshot instead,
which only matters while the mean still drifts.

:func:`_train_swag` runs the SGD phase with the MAP objective and minibatch loop of
:mod:`symlib.inference.training` (:func:`~symlib.inference.training.map_objective`,
:func:`~symlib.inference.training.epoch_steps`): the optax transformation
``SWAGConfig.optimizer`` (SGD at a high learning rate, e.g. ``optax.sgd(0.04)``, or with
Laurent et al.'s linear ramp, ``optax.sgd(optax.linear_schedule(start, high, ramp_steps))``)
on ``mean CE + ||W||^2 / (2 prior_std^2 N)``, and one snapshot at the end of every
``snapshot_every``-th epoch, the last at the final epoch. :func:`swag_from_snapshots`
builds the posterior from any stack of snapshots.

*Model state.* With ``state`` (e.g. a Flax model's ``("batch_stats",)``, see
:func:`_train_swag`) the named top-level entries are no weights: the SGD phase takes no
gradient of them and, with a training-mode ``stochastic_apply`` that returns them, updates
them every step the way the model defines (BatchNorm's running statistics). The posterior
holds them at their values at the end of the run with no spread (zero variance, zero
deviations): every sample carries those same statistics. (Maddox et al. re-estimate the
statistics of every sample on the training data instead; that is left to the caller.)
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from symlib.core.checks import check_finite_tree, check_key, positive_float, positive_int
from symlib.inference._loop import check_optimizer, check_state, epoch_bar, report_epoch, split_state
from symlib.inference.likelihood import Categorical
from symlib.inference.training import TrainConfig, check_fit, epoch_steps
from symlib.core.progress import progress_enabled
from symlib.inference.shape import (Data, Model, check_fit_inputs, fit_modes, raise_if_not_finite, sample,
                                   stacked_leading_axis, unstack)

__all__ = ["SWAGConfig", "SWAGPosterior", "swag_from_snapshots", "swag_sample", "swag_covariance",
           "fit_swag"]

PyTree = Any


class SWAGConfig(NamedTuple):
    """Hyper-parameters of the SWAG phase (a hashable static argument of the compiled loop).

    Attributes:
        epochs: passes over the training set after the trained network (Laurent et al.:
            twice the MAP training, 120 for OptuNet).
        batch_size: examples per minibatch (the last incomplete batch is dropped).
        optimizer: the optax transformation of the SGD phase, e.g. ``optax.sgd(0.04)`` (its
            schedules count optimisation steps, ``n // batch_size`` per epoch); hashed by
            identity, as for :class:`~symlib.inference.training.TrainConfig`.
        prior_std: standard deviation of the Gaussian prior of the MAP objective
            (weight decay ``1 / (prior_std^2 N)``, as in :class:`TrainConfig`).
        num_snapshots: snapshots ``K`` (Laurent et al.: 20).
        rank: deviations kept for the low-rank term, ``0`` (diagonal only) or in
            ``2..num_snapshots`` (Laurent et al.: 20).
        scale: default sampling scale of :func:`swag_sample` (Laurent et al.: 0.1).
        snapshot_every: epochs between snapshots; ``None``: ``epochs // num_snapshots``.
            The last snapshot is taken after the final epoch, the first after epoch
            ``epochs - (num_snapshots - 1) * snapshot_every`` (counting from 1).
        augment: ``None``, ``"crop"`` or ``"crop_flip"``, as for :class:`TrainConfig`.
        crop_fill: padded pixel value of ``"crop"``, as for :class:`TrainConfig`.
    """

    epochs: int
    batch_size: int
    optimizer: optax.GradientTransformation
    prior_std: float = 1.0
    num_snapshots: int = 20
    rank: int = 20
    scale: float = 0.1
    snapshot_every: int | None = None
    augment: str | None = None
    crop_fill: float = 0.0

    def interval(self) -> int:
        """Epochs between snapshots (``snapshot_every`` or ``epochs // num_snapshots``)."""
        return self.snapshot_every if self.snapshot_every is not None else self.epochs // self.num_snapshots

    def train_config(self) -> TrainConfig:
        """The :class:`TrainConfig` with the fields shared with the MAP loop (the same optimiser)."""
        return TrainConfig(self.epochs, self.batch_size, self.optimizer, self.prior_std, self.augment, self.crop_fill)


class SWAGPosterior(NamedTuple):
    """A SWAG posterior estimate.

    Attributes:
        mean: the snapshots' mean ``theta_bar`` in the network's pytree layout.
        variance: the diagonal ``Sigma_diag`` in the same layout (>= 0).
        deviations: ``(R, D)`` rows ``theta_k - theta_bar`` of the last ``R`` snapshots, in
            ``ravel_pytree(mean)`` order (``(0, D)`` for ``rank = 0``).
        scale: default sampling scale.
        num_snapshots: snapshots ``K`` the estimate was built from.
        epoch_losses: mean objective of every SWAG epoch (:func:`_train_swag`), else ``None``.
    """

    mean: PyTree
    variance: PyTree
    deviations: jax.Array
    scale: float
    num_snapshots: int
    epoch_losses: jax.Array | None = None


def _check_rank(rank, num_snapshots: int) -> int:
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 0 or rank == 1 \
            or rank > num_snapshots:
        raise ValueError(f"rank must be 0 (diagonal) or in 2..{num_snapshots} (the number of snapshots), got {rank!r}")
    return int(rank)


def swag_from_snapshots(snapshots: PyTree, rank: int, scale: float = 0.1) -> SWAGPosterior:
    """The SWAG posterior of a stack of parameter snapshots (see the module docstring).

    Args:
        snapshots: ``K`` snapshots stacked on a leading axis of every leaf (the layout of
            ``jax.vmap``), ``K >= 2``, finite.
        rank: deviations kept, ``0`` (diagonal SWAG) or in ``2..K`` (the last ``rank``
            snapshots' deviations).
        scale: default sampling scale, > 0.

    Returns:
        The :class:`SWAGPosterior`.

    Raises:
        ValueError: naming ``snapshots`` if it is not a stack of at least 2 finite
            snapshots, ``rank`` if out of range, ``scale`` if not positive.
    """
    k = stacked_leading_axis(snapshots, "snapshots")
    if k < 2:
        raise ValueError(f"snapshots must hold at least 2 snapshots on the leading axis, got {k}")
    check_finite_tree(snapshots, "snapshots")
    rank = _check_rank(rank, k)
    scale = positive_float(scale, "scale")
    flat = jax.vmap(lambda t: ravel_pytree(t)[0])(snapshots)
    _, unravel = ravel_pytree(jax.tree_util.tree_map(lambda a: a[0], snapshots))
    mean = jnp.mean(flat, axis=0)
    variance = jnp.var(flat, axis=0)  # two passes: mean(theta^2) - mean^2 cancels in float32
    deviations = flat[k - rank:] - mean
    return SWAGPosterior(unravel(mean), unravel(variance), deviations, scale, k)


def _check_posterior(posterior: SWAGPosterior) -> None:
    if not isinstance(posterior, SWAGPosterior):
        raise TypeError(f"posterior must be a SWAGPosterior, got {type(posterior).__name__}")


def swag_covariance(posterior: SWAGPosterior, scale: float | None = None) -> jax.Array:
    """The dense ``(D, D)`` covariance of :func:`swag_sample`'s samples (small networks only).

    Args:
        posterior: the SWAG posterior.
        scale: sampling scale; ``None``: ``posterior.scale``.

    Returns:
        ``scale * (diag(Sigma_diag) + Dhat^T Dhat / (R - 1))`` in ``ravel_pytree`` order
        (``scale * diag(Sigma_diag)`` for ``R = 0``).

    Raises:
        ValueError: if ``scale`` is not positive.
    """
    _check_posterior(posterior)
    scale = posterior.scale if scale is None else positive_float(scale, "scale")
    var = ravel_pytree(posterior.variance)[0]
    r = posterior.deviations.shape[0]
    if r == 0:
        return scale * jnp.diag(var)
    dev = posterior.deviations
    return scale * (jnp.diag(var) + dev.T @ dev / (r - 1))


def swag_sample(key: jax.Array, posterior: SWAGPosterior, num_samples: int, scale: float | None = None) -> PyTree:
    """Samples of a SWAG posterior (formula in the module docstring).

    Args:
        key: ``jax.random`` key.
        posterior: the SWAG posterior.
        num_samples: samples to draw, >= 1.
        scale: multiplies the covariance (``sqrt(scale)`` the deviation from the mean);
            ``None``: ``posterior.scale``.

    Returns:
        The samples in the network's pytree layout, stacked on a leading axis of size
        ``num_samples``.

    Raises:
        ValueError: naming ``key``, ``num_samples`` or ``scale`` if invalid.
        TypeError: if ``posterior`` is not a :class:`SWAGPosterior`.
    """
    _check_posterior(posterior)
    check_key(key, "key")
    num = positive_int(num_samples, "num_samples")
    scale = posterior.scale if scale is None else positive_float(scale, "scale")
    mean, unravel = ravel_pytree(posterior.mean)
    std = jnp.sqrt(ravel_pytree(posterior.variance)[0])
    dev = posterior.deviations
    r = dev.shape[0]
    k1, k2 = jax.random.split(key)
    z1 = jax.random.normal(k1, (num, mean.size), mean.dtype)
    if r == 0:
        draws = std * z1
    else:
        z2 = jax.random.normal(k2, (num, r), mean.dtype)
        draws = std * z1 + z2 @ dev / np.sqrt(r - 1.0)
    return jax.vmap(unravel)(mean + np.sqrt(scale) * draws)


def _check_config(cfg: SWAGConfig) -> None:
    """Raise ``ValueError`` naming the SWAG-specific field of ``cfg`` that is invalid."""
    if not isinstance(cfg, SWAGConfig):
        raise TypeError(f"cfg must be a SWAGConfig, got {type(cfg).__name__}")
    k = positive_int(cfg.num_snapshots, "num_snapshots")
    if k < 2:
        raise ValueError(f"num_snapshots must be at least 2, got {k}")
    _check_rank(cfg.rank, k)
    positive_float(cfg.scale, "scale")
    check_optimizer(cfg.optimizer)
    every = cfg.interval()
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1 \
            or (k - 1) * every >= cfg.epochs:
        raise ValueError(f"snapshot_every={cfg.snapshot_every!r} (interval {every}) must be a positive integer with "
                         f"(num_snapshots - 1) * snapshot_every < epochs = {cfg.epochs}")


def _swag_run(params0, key, x, y, cfg: SWAGConfig, apply_fn, progress: bool, stochastic_apply=None, state=(),
              likelihood=Categorical()):
    train = cfg.train_config()
    opt = cfg.optimizer
    run_epoch = epoch_steps(x, y, train, opt, apply_fn, stochastic_apply=stochastic_apply, state=state,
                            likelihood=likelihood)
    flat0 = ravel_pytree(params0)[0]
    k, every = cfg.num_snapshots, cfg.interval()
    first = cfg.epochs - 1 - (k - 1) * every  # 0-based epoch of the first snapshot

    def epoch(carry, inputs):
        index, epoch_key = inputs
        run, snaps = carry
        run, losses, _ = run_epoch(run, epoch_key)
        take = (index >= first) & ((index - first) % every == 0)
        slot = jnp.clip((index - first) // every, 0, k - 1)
        snaps = jax.lax.cond(take, lambda s: s.at[slot].set(ravel_pytree(run[0])[0]), lambda s: s, snaps)
        if progress:
            jax.debug.callback(report_epoch, index, jnp.mean(losses))
        return (run, snaps), jnp.mean(losses)

    carry0 = ((params0, opt.init(split_state(params0, state)[0])), jnp.zeros((k, flat0.size), flat0.dtype))
    ((last, _), snaps), losses = jax.lax.scan(epoch, carry0, (jnp.arange(cfg.epochs),
                                                              jax.random.split(key, cfg.epochs)))
    return snaps, losses, split_state(last, state)[1]


_swag_run_jit = jax.jit(_swag_run, static_argnames=("cfg", "apply_fn", "progress", "stochastic_apply", "state",
                                                    "likelihood"))


def _hold_state(post: SWAGPosterior, fixed: dict) -> SWAGPosterior:
    """``post`` with the model state entries ``fixed`` as its mean there and no spread
    (zero variance and zero deviations): every sample carries ``fixed``."""
    if not fixed:
        return post
    mean = {**post.mean, **fixed}
    variance = {**post.variance, **jax.tree_util.tree_map(jnp.zeros_like, fixed)}
    in_state = {k: jax.tree_util.tree_map(lambda a, on=(k in fixed): jnp.full(jnp.shape(a), on, jnp.float32), v)
                for k, v in post.mean.items()}
    mask = ravel_pytree(in_state)[0] > 0
    return post._replace(mean=mean, variance=variance, deviations=jnp.where(mask, 0.0, post.deviations))


def _train_swag(key: jax.Array, params0: PyTree, x: jax.Array, y: jax.Array, cfg: SWAGConfig, *,
             apply_fn, progress: bool | None = False, stochastic_apply=None,
             state: tuple[str, ...] = (), likelihood=Categorical()) -> SWAGPosterior:
    """Run the SWAG phase from a trained network and build the posterior (module docstring).

    Args:
        key: ``jax.random`` key deciding the minibatch order (and crops) of every epoch.
        params0: the trained network (e.g. a MAP fit of
            :func:`~symlib.inference.training.fit_map`).
        x: training inputs, as for :func:`~symlib.inference.training.fit_map`.
        y: training targets (integer labels ``(n,)`` for the categorical likelihood).
        cfg: the SWAG configuration.
        apply_fn: ``apply_fn(params, x) -> logits`` of one network (e.g.
            :func:`~symlib.core.models.mlp_apply`); a static argument of the compiled loop.
        progress: show a ``"train"`` progress bar over the epochs; ``None``: on a terminal.
        stochastic_apply: optional training-mode forward ``(params, x, key) -> logits`` or
            ``-> (logits, new_state)``, as for :func:`~symlib.inference.training.fit_map`.
        state: the top-level entries of ``params0`` that are model state (module docstring):
            no gradient; updated by a ``stochastic_apply`` that returns them, else held; the
            posterior holds their final values with no spread.
        likelihood: the model's likelihood (:mod:`symlib.inference.likelihood`).

    Returns:
        The :class:`SWAGPosterior` of the ``cfg.num_snapshots`` snapshots, rank
        ``cfg.rank``, scale ``cfg.scale``, with the epochs' mean objectives in
        ``epoch_losses``.

    Raises:
        ValueError: naming the argument or field of ``cfg`` that is invalid (data that do
            not fit the network, a bad key, a snapshot schedule that does not fit in
            ``epochs``, ``rank`` out of range, ...).
        TypeError: if ``cfg`` is not a :class:`SWAGConfig`.
    """
    state = _check_inputs(key, params0, x, y, cfg, apply_fn, state, likelihood)
    show = progress_enabled(progress)
    with epoch_bar(cfg.epochs, show):
        snaps, losses, fixed = _swag_run_jit(params0, key, x, y, cfg, apply_fn, show, stochastic_apply, state,
                                             likelihood)
    return _posterior(params0, snaps, losses, fixed, cfg, "fit_swag")


def _check_inputs(key, params0, x, y, cfg: SWAGConfig, apply_fn, state, likelihood) -> tuple[str, ...]:
    """Check the SWAG run's inputs (:func:`_train_swag`'s Raises); the checked ``state``."""
    _check_config(cfg)
    check_fit(apply_fn, params0, x, y, cfg.train_config(), 0, likelihood)
    state = check_state(params0, state)
    check_key(key, "key")
    return state


def _posterior(params0, snaps, losses, fixed, cfg: SWAGConfig, method: str) -> SWAGPosterior:
    """The posterior of one run's flat snapshots, with its state ``fixed`` and its epoch losses;
    :class:`~symlib.inference.shape.NonFiniteFitError` (naming ``method``, the epoch and the fix)
    if the SGD phase diverged."""
    raise_if_not_finite(snaps, method, "snapshots", _NOT_FINITE[1], losses)
    _, unravel = ravel_pytree(params0)
    post = swag_from_snapshots(jax.vmap(unravel)(snaps), cfg.rank, cfg.scale)
    return _hold_state(post, fixed)._replace(epoch_losses=losses)


_NOT_FINITE = ("SWAG moments", "lower the learning rate of config.optimizer")


def fit_swag(key: jax.Array, params0: PyTree, model: Model, data: Data, config: SWAGConfig) -> SWAGPosterior:
    """SWAG from the trained network ``params0``: SGD from it, its snapshots' moments
    (:func:`swag_from_snapshots`).

    Model state as for :func:`fit_map` (trained in ``model.train_apply_fn``'s training mode,
    the state updated every step); the posterior holds the state of the end of the run with
    no spread (zero variance and deviations), so every draw carries it."""
    check_fit_inputs(model, data, config, SWAGConfig, params0)
    post = _train_swag(key, params0, data.x, data.y, config, apply_fn=model.apply_fn,
                      stochastic_apply=model.train_apply_fn, state=model.state, likelihood=model.likelihood)
    raise_if_not_finite(post, "fit_swag", *_NOT_FINITE)
    return post


@fit_modes.register
def _(config: SWAGConfig, keys, modes, model: Model, data: Data) -> list[SWAGPosterior]:
    nets = unstack(modes)
    for net in nets:
        check_fit_inputs(model, data, config, SWAGConfig, net)
    state = _check_inputs(keys[0], nets[0], data.x, data.y, config, model.apply_fn, model.state, model.likelihood)
    snaps, losses, fixed = jax.vmap(lambda p, k: _swag_run_jit(
        p, k, data.x, data.y, config, model.apply_fn, False, model.train_apply_fn, state, model.likelihood))(modes, keys)
    posts = []
    for m, (net, fixed_m) in enumerate(zip(nets, unstack(fixed) if fixed else [{}] * len(nets))):
        method = f"fit_modes (SWAG, mode {m})"
        post = _posterior(net, snaps[m], losses[m], fixed_m, config, method)
        raise_if_not_finite(post, method, *_NOT_FINITE)
        posts.append(post)
    return posts


@sample.register
def _(posterior: SWAGPosterior, key, n):
    return swag_sample(key, posterior, n)
