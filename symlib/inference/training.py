"""MAP training (optax) of MLPs or any other network: one, or many at once with ``vmap``.

A network is a parameter pytree and an ``apply_fn(params, x) -> outputs`` for one network
(e.g. :func:`symlib.core.models.mlp_apply`, or :func:`symlib.core.cnn.optunet_apply`
for OptuNet), with a likelihood (:mod:`symlib.inference.likelihood`; categorical by default,
the outputs logits). The objective is the negative log posterior per training example under an
isotropic Gaussian prior N(0, prior_std^2 I)::

    L(W) = -mean_i log p(y_i | f_W(x_i)) + ||W||^2 / (2 prior_std^2 N)

(for the categorical likelihood the first term is the mean cross-entropy)

(plain SGD on this objective is SGD with weight decay ``wd = 1 / (prior_std^2 N)``; see
:meth:`TrainConfig.prior_std_for_weight_decay`). The optimiser is any optax transformation,
``TrainConfig.optimizer`` (default ``optax.adam(1e-3)``); its learning-rate schedule counts
optimisation steps (``n // batch_size`` per epoch). The papers' recipes are built in
:mod:`symlib.experiments` (e.g. Laurent et al.'s SGD at 0.04 halved at epochs 15 and 30 of 60,
:func:`symlib.experiments.laurent.optunet.optunet_train_config`).

Training is deterministic given the initial parameters and ``data_key``, which alone
decides the minibatch order (a fresh permutation of the training set every epoch; the
last incomplete batch is dropped) and, with ``TrainConfig.augment="crop"``, the random
crops of every step (:func:`random_crop`; images only). :func:`symlib.inference.fit_ensemble`
trains ``K`` networks at once (``vmap``). :func:`symlib.inference.fit_map` can show a progress bar over the
epochs (:func:`symlib.core.progress.progress_bar`, on a terminal or when asked).

A random network can stand in for ``apply_fn`` in the objective: ``stochastic_apply(params, x,
key) -> logits`` (e.g. dropout, :func:`symlib.inference.dropout.dropout_apply`) gets a fresh
key at every step, a child of the epoch's key that leaves the minibatch order and the
crops as they are.
"""
from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jax.sharding import NamedSharding, PartitionSpec

from symlib.core.checks import check_key, positive_float, positive_int
from symlib.core.distributed import global_mesh, put_global
from symlib.core.losses import accuracy, nll
from symlib.core.models import Params
from symlib.core.progress import progress_enabled
from symlib.inference._loop import (check_network_data, check_optimizer, check_state, epoch_bar, merge_state,
                                   report_epoch, split_state)
from symlib.inference.likelihood import Categorical
from symlib.inference.shape import Data, Model, PointEstimate, Samples, check_fit_inputs, raise_if_not_finite

PyTree = Any

#: data augmentations of ``TrainConfig.augment`` (besides ``None``)
AUGMENTATIONS = ("crop", "crop_flip")
#: zero padding of the ``"crop"`` augmentation (pixels on every side; PyTorch's ``RandomCrop(28, padding=4)``)
CROP_PADDING = 4


class TrainConfig(NamedTuple):
    """Hyper-parameters of MAP training (a hashable static argument of the compiled loop).

    Attributes:
        epochs: passes over the training set.
        batch_size: examples per minibatch (the last incomplete batch is dropped).
        optimizer: the optax transformation that turns the objective's gradients into
            updates, e.g. ``optax.adam(1e-3)`` (the default) or
            ``optax.sgd(optax.piecewise_constant_schedule(0.04, {15 * steps: 0.5}), momentum=0.9)``;
            its schedules count optimisation steps (``n // batch_size`` per epoch).
        prior_std: standard deviation of the isotropic Gaussian prior.
        augment: data augmentation applied to every minibatch inside the compiled step:
            ``None`` (none), ``"crop"`` (:func:`random_crop` with padding
            :data:`CROP_PADDING`, for NHWC images; a fresh crop per example and step) or
            ``"crop_flip"`` (the crop, then a horizontal flip of each image with
            probability 1/2, :func:`random_flip`: the CIFAR recipe).
        crop_fill: the value of the padded pixels of ``"crop"``: 0 for raw images; for
            standardised images, the standardised value of a black pixel (PyTorch crops
            before ``Normalize``), e.g. ``symlib.data.standardize(0.0, "mnist")``.

    An optax transformation is a tuple of functions, hashed and compared by identity: the
    same config object (or one built from the same transformation object) reuses the
    compiled loop, while a new ``optax.adam(...)`` call makes a new config, which compiles
    the loop again. Build the optimiser once and reuse it.
    """

    epochs: int
    batch_size: int
    optimizer: optax.GradientTransformation = optax.adam(1e-3)
    prior_std: float = 1.0
    augment: str | None = None
    crop_fill: float = 0.0

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


def sq_norm(params: Params) -> jax.Array:
    """Sum of squares of every parameter.

    Args:
        params: any pytree of arrays.

    Returns:
        A scalar.
    """
    return sum(jnp.sum(p**2) for p in jax.tree_util.tree_leaves(params))


def map_objective(params: Params, x: jax.Array, y: jax.Array, n_total: int, prior_std: float,
                  apply_fn, likelihood=Categorical()) -> jax.Array:
    """Minibatch estimate of the negative log posterior per example (see module docstring).

    The prior term's gradient is ``W / (prior_std^2 N)``, i.e. weight decay ``1 / (prior_std^2 N)``
    on top of the mean negative log-likelihood (:meth:`TrainConfig.prior_std_for_weight_decay`).

    Args:
        params: one network's parameters.
        x: minibatch inputs (``(b, d_0)`` for an MLP).
        y: minibatch targets (integer labels ``(b,)`` for the categorical likelihood).
        n_total: number of training examples ``N`` (scales the prior term).
        prior_std: standard deviation of the Gaussian prior.
        apply_fn: ``apply_fn(params, x) -> outputs`` (logits ``(b, classes)`` of a classifier).
        likelihood: the model's likelihood (:mod:`symlib.inference.likelihood`).

    Returns:
        ``-mean log p(y | f(x)) + ||W||^2 / (2 prior_std^2 N)``, a scalar.
    """
    return _mean_nll(likelihood, apply_fn(params, x), y) + sq_norm(params) / (2.0 * prior_std**2 * n_total)


def _mean_nll(likelihood, outputs, y):
    return -jnp.mean(likelihood.loglik(outputs, y))


def random_crop(key: jax.Array, images: jax.Array, padding: int = CROP_PADDING, fill: float = 0.0) -> jax.Array:
    """Random crops of the original size from padded images (PyTorch's ``RandomCrop(size, padding)``).

    Every image is padded by ``padding`` pixels of value ``fill`` on each side, then cut back to its
    size at an offset drawn uniformly from ``0..2*padding`` along each axis, independently
    per image (``jax.lax.dynamic_slice`` under ``vmap``); jittable.

    Args:
        key: ``jax.random`` key; the crops are a function of it.
        images: NHWC images ``(n, h, w, c)``.
        padding: pixels added on every side, >= 0 (0: the identity).
        fill: value of the added pixels (0: black for raw images).

    Returns:
        The cropped images, shape and dtype of ``images``.

    Raises:
        ValueError: if ``images`` is not 4-D or ``padding`` is negative.
    """
    if np.ndim(images) != 4:
        raise ValueError(f"random_crop takes NHWC images (n, h, w, c), got shape {np.shape(images)}")
    if not isinstance(padding, (int, np.integer)) or padding < 0:
        raise ValueError(f"padding must be a non-negative integer, got {padding!r}")
    n, h, w, c = images.shape
    padded = jnp.pad(images, ((0, 0), (padding, padding), (padding, padding), (0, 0)), constant_values=fill)
    offsets = jax.random.randint(key, (n, 2), 0, 2 * padding + 1)
    cut = lambda im, o: jax.lax.dynamic_slice(im, (o[0], o[1], 0), (h, w, c))  # noqa: E731
    return jax.vmap(cut)(padded, offsets)


def random_flip(key: jax.Array, images: jax.Array) -> jax.Array:
    """Flip each NHWC image horizontally with probability 1/2 (PyTorch's ``RandomHorizontalFlip``).

    Args:
        key: ``jax.random`` key; the flips are a function of it.
        images: NHWC images ``(n, h, w, c)``.

    Returns:
        The images, some mirrored along the width axis.
    """
    flip = jax.random.bernoulli(key, 0.5, (images.shape[0],))
    return jnp.where(flip[:, None, None, None], images[:, :, ::-1], images)


def _check_config(cfg: TrainConfig, n: int) -> None:
    """Raise ``ValueError`` naming the field of ``cfg`` that is invalid for ``n`` examples."""
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    positive_int(cfg.epochs, "epochs")
    if positive_int(cfg.batch_size, "batch_size") > n:
        raise ValueError(f"batch_size={cfg.batch_size} must be between 1 and the {n} training examples")
    check_optimizer(cfg.optimizer)
    positive_float(cfg.prior_std, "prior_std")
    if cfg.augment is not None and cfg.augment not in AUGMENTATIONS:
        raise ValueError(f"unknown augment {cfg.augment!r}; choose None or one of {AUGMENTATIONS}")


def check_fit(apply_fn, params0: Params, x, y, cfg: TrainConfig, batch_dims: int, likelihood=Categorical()) -> None:
    """All checks of :func:`_train_map` / :func:`_train_map_many` before any work."""
    check_network_data(apply_fn, params0, x, y, "params0", batch_dims, likelihood)
    _check_config(cfg, x.shape[0])
    if cfg.augment is not None and np.ndim(x) != 4:
        raise ValueError(f"augment={cfg.augment!r} needs NHWC images x (n, h, w, c), got shape {np.shape(x)}")


def epoch_steps(x, y, cfg: TrainConfig, opt: optax.GradientTransformation, apply_fn, observe=None,
                stochastic_apply=None, state: tuple[str, ...] = (), likelihood=Categorical()):
    """One epoch of minibatch optimisation of :func:`map_objective`, for use inside compiled loops.

    The minibatches are a permutation of the ``n`` examples drawn from the epoch's key
    (the last incomplete batch dropped), cropped with a child key when ``cfg.augment`` is
    ``"crop"``; every step takes the gradient of :func:`map_objective` (prior
    ``cfg.prior_std``, ``N = n``) and applies ``opt``. :func:`_train_map` and
    :func:`~symlib.inference.swag.fit_swag` run it under ``jax.lax.scan``.

    Args:
        x: training inputs ``(n, ...)``.
        y: training targets (integer labels ``(n,)`` for the categorical likelihood).
        cfg: supplies ``batch_size``, ``prior_std``, ``augment`` and ``crop_fill``.
        opt: the optax optimiser (its schedule counts steps).
        apply_fn: ``apply_fn(params, x) -> logits`` of one network.
        observe: optional ``observe(params_before, params_after)``, evaluated every step.
        stochastic_apply: optional ``stochastic_apply(params, x, key) -> logits`` used for
            training instead of ``apply_fn`` (e.g. MC dropout), with a fresh key per step
            (a child of the epoch's key); or ``-> (logits, new_state)``, a training-mode
            forward (a Flax model's ``nn.Dropout`` and ``BatchNorm`` on the batch's
            statistics) whose ``new_state`` (a dict over some of ``state``'s names) replaces
            those entries of the network after every step (the running statistics updated
            the way the model defines).
        state: top-level entries of the network that are model state, not weights (e.g.
            ``("batch_stats",)``): no gradient, no prior term, not seen by ``opt`` (whose state
            is over the weights: initialise it with ``opt.init(split_state(params, state)[0])``);
            held as they are unless ``stochastic_apply`` returns new values.
        likelihood: the model's likelihood (:mod:`symlib.inference.likelihood`).

    Returns:
        ``run(carry, key) -> (carry, losses, seen)``, ``carry = (params, opt_state)``,
        ``losses`` the ``(steps,)`` minibatch objectives (before each update) and ``seen``
        the stacked observations (``None`` without ``observe``).
    """
    n = x.shape[0]
    steps = n // cfg.batch_size

    def objective(weights, fixed, xb, yb, noise_key):
        # map_objective over the weights; the forward's new model state (if any) as the aux
        net = merge_state(weights, fixed)
        out = apply_fn(net, xb) if noise_key is None else stochastic_apply(net, xb, noise_key)
        logits, new = out if isinstance(out, tuple) else (out, {})
        if set(new) - set(state):
            raise ValueError(f"stochastic_apply returned the state entries {sorted(set(new) - set(state))}, "
                             f"which are not declared model state (state={state})")
        return _mean_nll(likelihood, logits, yb) + sq_norm(weights) / (2.0 * cfg.prior_std**2 * n), new

    loss_grad = jax.value_and_grad(objective, has_aux=True)

    def batch(idx, crop_key):
        if crop_key is None:
            return x[idx], y[idx]
        xb = random_crop(crop_key, x[idx], fill=cfg.crop_fill)
        if cfg.augment == "crop_flip":
            xb = random_flip(jax.random.fold_in(crop_key, 1), xb)
        return xb, y[idx]

    def step(carry, inputs):
        params, opt_state = carry
        idx, crop_key, noise_key = inputs
        weights, fixed = split_state(params, state)
        (loss, new_state), grads = loss_grad(weights, fixed, *batch(idx, crop_key), noise_key)
        updates, opt_state = opt.update(grads, opt_state, weights)
        new = merge_state(optax.apply_updates(weights, updates), {**fixed, **new_state})
        return (new, opt_state), (loss if observe is None else (loss, observe(params, new)))

    def run(carry, key):
        order = jax.random.permutation(key, n)[: steps * cfg.batch_size].reshape(steps, cfg.batch_size)
        # the epoch's permutation key is left as it was; crops and the network's noise use children
        crop_keys = None if cfg.augment is None else jax.random.split(jax.random.fold_in(key, 1), steps)
        noise_keys = None if stochastic_apply is None else jax.random.split(jax.random.fold_in(key, 2), steps)
        carry, out = jax.lax.scan(step, carry, (order, crop_keys, noise_keys))
        losses, seen = (out, None) if observe is None else out
        return carry, losses, seen

    return run


@partial(jax.jit, static_argnames=("cfg", "keep_trajectory", "progress", "observe", "observe_epoch", "apply_fn",
                                   "stochastic_apply", "state", "likelihood"))
def _fit(params0, data_key, x, y, cfg: TrainConfig, apply_fn, keep_trajectory: bool, progress: bool = False,
         observe=None, observe_epoch=None, stochastic_apply=None, state=(), likelihood=Categorical()):
    opt = cfg.optimizer
    run_epoch = epoch_steps(x, y, cfg, opt, apply_fn, observe, stochastic_apply, state, likelihood)

    def epoch(carry, inputs):
        index, key = inputs
        carry, losses, seen = run_epoch(carry, key)
        if progress:
            jax.debug.callback(report_epoch, index, jnp.mean(losses))
        kept = carry[0] if keep_trajectory else (None if observe_epoch is None else observe_epoch(carry[0]))
        return carry, (jnp.mean(losses), kept, seen)

    keys = jax.random.split(data_key, cfg.epochs)
    (params, _), (losses, traj, seen) = jax.lax.scan(epoch, (params0, opt.init(split_state(params0, state)[0])),
                                                     (jnp.arange(cfg.epochs), keys))
    return params, losses, traj, seen


def _train_map(params0: Params, data_key: jax.Array, x: jax.Array, y: jax.Array, cfg: TrainConfig, apply_fn,
            keep_trajectory: bool = False, progress: bool | None = None, *,
            stochastic_apply=None, state: tuple[str, ...] = (), likelihood=Categorical()):
    """Train one network from ``params0`` by minimising the MAP objective.

    Args:
        params0: initial parameters, the pytree ``apply_fn`` takes.
        data_key: ``jax.random`` key deciding the minibatch order of every epoch (and the
            crops of ``cfg.augment``).
        x: training inputs, finite: ``(n, d_0)`` for an MLP, what ``apply_fn`` takes otherwise
            (NHWC images ``(n, h, w, c)`` for ``augment="crop"``).
        y: training targets that fit the network under ``likelihood`` (categorical: integer
            labels ``(n,)`` in ``[0, classes)``).
        cfg: the training configuration.
        apply_fn: ``apply_fn(params, x) -> logits`` of one network (e.g.
            :func:`~symlib.core.models.mlp_apply`); a static argument of the compiled loop,
            so pass the same function object each time.
        keep_trajectory: also return the parameters after every epoch.
        progress: show a ``"train"`` progress bar over the epochs (on stderr, with the
            epoch's mean objective); ``None`` shows it only on a terminal.
        stochastic_apply: optional ``stochastic_apply(params, x, key) -> logits``, a
            random network (e.g. dropout, :func:`symlib.inference.dropout.dropout_apply`)
            used for the training objective in place of ``apply_fn`` (which still checks
            ``x`` and ``y``); its key at every step is a child of that epoch's key in
            ``data_key`` that leaves the minibatch order and the crops unchanged. A static
            argument of the compiled loop, like ``apply_fn`` (hashable, equal when equivalent).
            With ``state``, it may return ``(logits, new_state)``: a training-mode forward
            (e.g. a Flax model's ``module.apply(v, x, train=True, mutable=["batch_stats"],
            rngs={"dropout": key})``) whose new state replaces the network's after every step
            (:func:`epoch_steps`).
        state: the top-level entries of ``params0`` that are model state (e.g. a Flax
            model's ``("batch_stats",)``): no gradient and no prior term; updated by a
            ``stochastic_apply`` that returns them, else held fixed.
        likelihood: the model's likelihood (:mod:`symlib.inference.likelihood`; a static
            argument of the compiled loop).

    Returns:
        ``(params, epoch_losses)``, the final parameters and the mean objective of every
        epoch; with ``keep_trajectory``, ``(params, epoch_losses, trajectory)``, the
        per-epoch parameters stacked on a leading axis.

    Raises:
        ValueError: naming the input when ``x``/``y`` do not fit the network (shapes,
            input width, labels outside the network's outputs, NaN or inf in ``x``), when
            ``data_key`` is not a key, or when a field of ``cfg`` is invalid.
        TypeError: if ``cfg`` is not a :class:`TrainConfig` or ``params0`` not a dict of
            layers (MLP).
    """
    check_fit(apply_fn, params0, x, y, cfg, 0, likelihood)
    state = check_state(params0, state)
    check_key(data_key, "data_key")
    show = progress_enabled(progress)
    with epoch_bar(cfg.epochs, show):
        params, losses, traj, _ = _fit(params0, data_key, x, y, cfg, apply_fn, keep_trajectory, show,
                                       stochastic_apply=stochastic_apply, state=state, likelihood=likelihood)
    return (params, losses, traj) if keep_trajectory else (params, losses)


@partial(jax.jit, static_argnames=("cfg", "observe", "observe_epoch", "apply_fn", "stochastic_apply", "mesh", "state",
                                   "likelihood"))
def _fit_many_sharded(params0, data_keys, x, y, cfg: TrainConfig, observe, observe_epoch, apply_fn, stochastic_apply,
                      mesh, state=(), likelihood=Categorical()):
    """``vmap`` of :func:`_fit` on every device's block of networks (``shard_map``: each
    device trains its own networks with no communication; left to XLA's partitioner, the
    loop gathered the data and the convolutions' activations at every step), then the
    results gathered, replicated, so that every process holds all of them."""
    def block(p, k, x, y):
        return jax.vmap(lambda p1, k1: _fit(p1, k1, x, y, cfg, apply_fn, False, False, observe, observe_epoch,
                                            stochastic_apply, state, likelihood))(p, k)

    nets = PartitionSpec("networks")
    out = jax.shard_map(block, mesh=mesh, in_specs=(nets, nets, PartitionSpec(), PartitionSpec()),
                        out_specs=nets)(params0, data_keys, x, y)
    replicated = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda a: jax.lax.with_sharding_constraint(a, replicated), out)


def _fit_many_over_devices(params0, data_keys, x, y, cfg, observe, observe_epoch, apply_fn, stochastic_apply,
                           devices, state=(), likelihood=Categorical()):
    """The ``K`` networks split over ``devices`` (every device of every process by default):
    the stack is padded to a multiple of the device count with copies of network 0,
    sharded along a 1-D mesh ``("networks",)``, trained, gathered and cut back to ``K``.
    One device: the plain ``vmap``."""
    mesh = global_mesh("networks", devices)
    if mesh.size == 1:
        return jax.vmap(lambda p, k: _fit(p, k, x, y, cfg, apply_fn, False, False, observe, observe_epoch,
                                          stochastic_apply, state, likelihood))(params0, data_keys)
    k = jax.tree_util.tree_leaves(params0)[0].shape[0]
    pad = (-k) % mesh.size

    def padded(a):
        return jnp.concatenate([a, jnp.repeat(a[:1], pad, axis=0)]) if pad else a

    params0, data_keys = jax.tree.map(padded, (params0, data_keys))
    sharded, replicated = NamedSharding(mesh, PartitionSpec("networks")), NamedSharding(mesh, PartitionSpec())
    params0, data_keys = put_global((params0, data_keys), sharded)
    x, y = put_global((x, y), replicated)
    out = _fit_many_sharded(params0, data_keys, x, y, cfg, observe, observe_epoch, apply_fn, stochastic_apply, mesh,
                            state, likelihood)
    return jax.tree.map(lambda a: a[:k], out)


def _train_map_many(params0: Params, data_keys: jax.Array, x, y, cfg: TrainConfig, apply_fn, observe=None,
                 observe_epoch=None, *, stochastic_apply=None, devices=None, state: tuple[str, ...] = (),
                 likelihood=Categorical()):
    """Train a stack of networks at once with ``vmap``, the stack split over ``devices``.

    **Several devices or processes.** The networks are independent, so the stack is
    sharded along its network axis over ``devices`` (default: every device of every
    process, :func:`symlib.core.distributed.global_mesh`; the data are replicated): each
    device trains ``K / devices`` networks (the stack padded with copies of network 0 to a
    multiple of the device count, which are dropped). The results are gathered, so every
    process gets all ``K`` networks. With one device nothing changes: a plain ``vmap``.
    The results equal the one-device run's to float rounding (``vmap`` over fewer networks
    may order the arithmetic differently). With several processes every process calls this
    function with the same arguments (after :func:`jax.distributed.initialize`).

    Observers are pure jax functions (pass the same function object each time: they are
    static arguments of the compiled loop): ``observe(params_before, params_after)`` is
    evaluated at every optimisation step, its outputs stacked with leading axes
    ``(networks, epochs, steps_per_epoch)``; ``observe_epoch(params)`` at the end of
    every epoch, leading axes ``(networks, epochs)``.

    Args:
        params0: initial parameters of ``K`` networks (leading axis ``K`` on every leaf).
        data_keys: ``K`` ``jax.random`` keys, one minibatch order per network.
        x: training inputs (as for :func:`_train_map`), shared by all networks.
        y: training targets, as for :func:`_train_map`.
        cfg: the training configuration.
        observe: optional per-step observer.
        observe_epoch: optional per-epoch observer.
        apply_fn: ``apply_fn(params, x) -> logits`` of one network, as for :func:`_train_map`.
        stochastic_apply: optional random network of the training objective, as for :func:`_train_map`.
        devices: the devices to split the networks over (default: all of every process;
            ``jax.devices()[:1]`` for one).
        state: the top-level entries of the networks that are model state, as for :func:`_train_map`.
        likelihood: the model's likelihood, as for :func:`_train_map`.

    Returns:
        Stacked ``(params, epoch_losses)``; with an observer, ``(params, epoch_losses,
        observed)``, ``observed`` a dict with keys ``"step"`` and/or ``"epoch"``.

    Raises:
        ValueError: as for :func:`_train_map`; also if ``params0`` is not a stack of networks
            or ``data_keys`` does not hold one key per network.
    """
    check_fit(apply_fn, params0, x, y, cfg, 1, likelihood)
    state = check_state(params0, state)
    n_nets = jax.tree_util.tree_leaves(params0)[0].shape[0]
    check_key(data_keys, "data_keys", n_nets)
    params, losses, per_epoch, per_step = _fit_many_over_devices(params0, data_keys, x, y, cfg, observe, observe_epoch,
                                                                 apply_fn, stochastic_apply, devices, state,
                                                                 likelihood)
    if observe is None and observe_epoch is None:
        return params, losses
    observed = {"step": per_step} if observe is not None else {}
    if observe_epoch is not None:
        observed["epoch"] = per_epoch
    return params, losses, observed


def evaluate(params: Params, x: jax.Array, y: jax.Array, apply_fn) -> dict[str, float]:
    """Loss and accuracy of one network.

    Args:
        params: one network's parameters.
        x: inputs (``(n, d_0)`` for an MLP).
        y: integer labels ``(n,)`` in ``[0, classes)``.
        apply_fn: ``apply_fn(params, x) -> logits`` (e.g. :func:`~symlib.core.models.mlp_apply`).

    Returns:
        ``{"nll": mean negative log-likelihood, "accuracy": fraction correct}``.

    Raises:
        ValueError: naming ``x`` or ``y`` if they do not fit the network.
    """
    check_network_data(apply_fn, params, x, y, "params")
    logits = apply_fn(params, x)
    return {"nll": float(nll(logits, y)), "accuracy": float(accuracy(logits, y))}


def fit_map(key: jax.Array, params0: PyTree, model: Model, data: Data, config: TrainConfig, *,
            keep_trajectory: bool = False, progress: bool | None = None) -> PointEstimate:
    """MAP training from ``params0``: minibatch epochs of the MAP objective (:func:`map_objective`),
    ``key`` deciding the minibatch orders and crops.

    The gradient is over the weights; with ``model.train_apply_fn`` the loss is the training
    mode's and the model state (``model.state``) is replaced at every step by what it returns
    (BatchNorm's running statistics updated as the model defines), else the state is held.
    The estimate's ``info`` holds ``epoch_loss`` (the mean objective of every epoch) and, with
    ``keep_trajectory``, ``trajectory`` (the parameters after every epoch, stacked: ``epochs``
    entries, ``params0`` not among them); ``progress`` shows a progress bar over the epochs.

    Raises:
        NonFiniteFitError: if the parameters or the loss became NaN or inf.
    """
    check_fit_inputs(model, data, config, TrainConfig, params0)
    check_key(key, "key")
    out = _train_map(params0, key, data.x, data.y, config, model.apply_fn, keep_trajectory, progress,
                    stochastic_apply=model.train_apply_fn, state=model.state, likelihood=model.likelihood)
    params, losses = out[0], out[1]
    raise_if_not_finite(params, "fit_map", "parameters", "lower the learning rate of config.optimizer", losses)
    raise_if_not_finite(losses, "fit_map", "loss", "lower the learning rate of config.optimizer", losses)
    return PointEstimate(params, {"epoch_loss": losses, **({"trajectory": out[2]} if keep_trajectory else {})})


def _member_keys(key, k: int) -> jax.Array:
    """``k`` member keys: ``key`` itself when it is already a stack of ``k`` keys, else ``split(key, k)``."""
    if k < 1:
        raise ValueError("params0 holds no members: stack at least one starting network on its leading axis")
    typed = jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key)
    if jnp.ndim(key) == (1 if typed else 2):
        if len(key) != k:
            raise ValueError(f"key holds {len(key)} member keys, but params0 holds {k} members")
        return key
    check_key(key, "key")
    return jax.random.split(key, k)


def fit_ensemble(key: jax.Array, params0: PyTree, model: Model, data: Data, config: TrainConfig, *,
                 observe=None, observe_epoch=None, devices=None) -> Samples:
    """A deep ensemble: every member trained to its MAP from its own start, all at once
    (one ``vmap`` of :func:`fit_map`'s loop, sharded over ``devices``). Here ``params0`` holds the ``K``
    members' starting networks stacked on a leading axis (e.g. ``jax.vmap(init_fn)`` of ``K``
    keys); member ``i`` draws its minibatch order from ``jax.random.split(key, K)[i]``, or from
    ``key[i]`` when ``key`` is already a stack of ``K`` keys. The trained members are the
    posterior's samples. Model state as for :func:`fit_map`.

    ``observe(params_before, params_after)`` (every step) and ``observe_epoch(params)`` (the
    end of every epoch) are observers run inside the compiled loop (e.g.
    :func:`symlib.symmetry.neuron_order.swap_counter`); ``devices`` shards the members over
    devices. The posterior's ``info`` holds ``epoch_loss`` (members x epochs) and, with an
    observer, ``observed`` (``{"step": ..., "epoch": ...}``).

    Raises:
        NonFiniteFitError: if a member's parameters or loss became NaN or inf.
    """
    check_fit_inputs(model, data, config, TrainConfig, params0)
    leaves = jax.tree_util.tree_leaves(params0)
    if not leaves or np.ndim(leaves[0]) == 0:
        raise ValueError("params0 must hold the ensemble members' starting networks stacked on a leading axis")
    keys = _member_keys(key, np.shape(leaves[0])[0])
    out = _train_map_many(params0, keys, data.x, data.y, config, model.apply_fn, observe, observe_epoch,
                         stochastic_apply=model.train_apply_fn, devices=devices, state=model.state,
                         likelihood=model.likelihood)
    params, losses = out[0], out[1]
    raise_if_not_finite(params, "fit_ensemble", "members' parameters", "lower the learning rate of "
                   "config.optimizer", np.asarray(losses).T)
    raise_if_not_finite(losses, "fit_ensemble", "members' loss", "lower the learning rate of config.optimizer",
                        np.asarray(losses).T)
    info = {"epoch_loss": losses, **({"observed": out[2]} if observe is not None or observe_epoch is not None else {})}
    return Samples(params, info=info)
