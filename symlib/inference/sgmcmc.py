"""Stochastic gradient Hamiltonian Monte Carlo (Chen et al., 2014) with BlackJAX.

:func:`_run_sghmc` samples the posterior ``p(W | D) ∝ N(W; 0, prior_std^2 I) prod_i p(y_i | x_i, W)``
of a network with BlackJAX's SGHMC diffusion (:func:`blackjax.sgmcmc.diffusions.sghmc`), whose
gradients are the minibatch estimates of :func:`blackjax.sgmcmc.gradients.grad_estimator`::

    grad log p(W | D) ~= grad log N(W; 0, prior_std^2 I) + (N / |B|) sum_{i in B} grad log p(y_i | x_i, W).

Minibatches are a fresh permutation of the training set every epoch (drawn without
replacement; the last incomplete batch is dropped), decided by ``key`` alone; the whole
run is one ``jax.lax.scan`` over the epochs (and the minibatches) inside ``jax.jit``.

The chain
---------
Every minibatch is one *draw*: one Euler step of the SGHMC diffusion on that minibatch's
gradient ``g``::

    W <- W + h p,      p <- (1 - alpha h) p + h g(W_old) + sqrt(2 alpha h T) n,     n ~ N(0, I),

``h = step_size``, ``alpha`` the friction coefficient, ``T = temperature`` (BlackJAX's
``beta``, the estimated gradient noise, is 0). The momentum ``p`` carries over from one
minibatch to the next and is drawn afresh, ``p ~ N(0, I)``, every ``momentum_refresh``
draws (the first draw included). This is the schedule of the sampler Laurent et al. ran
(J. Antorán's PyTorch library, ``train_SGHMC_MNIST.py``: one update a minibatch, the
momentum resampled every ``resample_its = 50`` minibatches). BlackJAX's own kernel
(:func:`blackjax.sghmc`) instead refreshes the momentum at every call and integrates
``num_integration_steps`` steps on the *same* minibatch: that costs that many gradients
a minibatch and lets one minibatch's gradient steer the chain for a whole trajectory,
which is why the loop here calls the diffusion itself.

The position update uses the momentum *before* the gradient step, so the gradient acts
only ``L - 1`` times between refreshes (``L = momentum_refresh``, at least 2; with one, the
chain would be a pure random walk). The refresh biases the chain when the friction has
not yet mixed the momentum within ``L`` steps (``friction * L`` small): the variance comes
out too large by up to a factor ``L / (L - 1)``. On a Gaussian target with ``h = 0.01``,
``friction = 0.05`` it is 3% too large with ``L = 20``, 1% with ``L = 50`` and 0.6% with
``L = 100``, measured on the draws just before a refresh (exact for the linear recursion and
checked by the tests); hence the default ``L = 50``. The Euler discretisation adds an
``O(h)`` bias of its own. ``T`` tempers the whole posterior (prior included),
``p(W | D)^(1/T)``; the momentum is refreshed at unit variance whatever ``T`` (exact only
for ``T = 1``).

Relation to the paper's hyper-parameters
----------------------------------------
Chen et al.'s update in "learning-rate" form, with ``v = h p``, reads
``W <- W + v``, ``v <- v + eta g - a v + N(0, 2 a eta)`` with learning rate ``eta = h^2``
and per-step friction ``a = alpha h``. Laurent et al. (ICLR 2024) ran SGHMC from the
PyTorch library of J. Antorán (``H_SA_SGHMC``: lr 1e-2, friction 0.05, prior std 0.1),
whose update has this form with ``eta = lr^2`` and ``a = friction`` (up to its
preconditioner). Here ``friction`` is that ``a`` and ``step_size`` that ``lr``, so
``alpha = friction / step_size`` (``step_size=1e-2, friction=0.05``: ``alpha = 5``).
That library's sampler is *scale-adapted* (Springenberg et al., 2016): it preconditions
every weight by a running estimate of its squared gradient and puts a Gamma
hyper-prior (``alpha0 = beta0 = 10``) on the prior precision; neither is reproduced
here (a fixed isotropic Gaussian prior, no preconditioning), so the paper's step size
can be unstable on the full data set: with ``N`` examples the curvature of ``log p(W | D)``
grows with ``N``, and ``step_size`` may have to shrink accordingly. On OptuNet with 5,000
MNIST images (batch 64, friction 0.05, prior std 0.1), ``step_size=1e-2`` diverged and
``1e-3`` did not.

Cost: one gradient a minibatch, so an epoch of SGHMC costs about an epoch of SGD.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.util import generate_gaussian_noise

from symlib.core.checks import check_key, positive_float, positive_int
from symlib.inference.hmc import log_prior
from symlib.inference._loop import check_minibatch_data, check_state, epoch_bar, merge_state, report_epoch, split_state
from symlib.inference.likelihood import network_loglik
from symlib.inference.vi import check_loglik
from symlib.core.progress import progress_enabled
from symlib.inference.shape import Data, Model, NonFiniteFitError, Samples, check_fit_inputs, first_non_finite

PyTree = Any


class SGHMCResult(NamedTuple):
    """``samples``: the kept positions stacked on a leading axis (the network's pytree
    layout); ``draw_indices``: the 0-based draws (Euler steps, one per minibatch) they
    come from (numpy); ``alpha``: BlackJAX's friction coefficient ``friction / step_size``."""
    samples: PyTree
    draw_indices: np.ndarray
    alpha: float


class SGHMCState(NamedTuple):
    """An SGHMC run in progress (:func:`sghmc_epochs`): ``position`` and ``momentum``, the
    weights and their momentum after ``epochs_done`` epochs (model-state entries left out),
    and ``kept``, the buffer of the run's ``num_samples`` kept draws (the slots of draws not
    made yet hold zeros)."""
    position: PyTree
    momentum: PyTree
    kept: PyTree
    epochs_done: int


def _nonnegative_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def sghmc_schedule(total_draws: int, num_samples: int, burn_in: int | None = None,
                   thinning: int | None = None) -> tuple[int, int]:
    """Which draws :func:`_run_sghmc` keeps: ``num_samples`` draws ``thinning`` apart, ending with the last.

    Kept draw ``j`` is ``first + j * thinning``, ``first = total_draws - 1 - (num_samples - 1) * thinning``,
    which must not fall in the burn-in.

    Args:
        total_draws: number of draws of the run.
        num_samples: number of draws kept.
        burn_in: draws discarded first (default: half of them).
        thinning: spacing of the kept draws (default: as far apart as the draws after
            the burn-in allow, ``(total_draws - burn_in) // num_samples``).

    Returns:
        ``(first, thinning)``.

    Raises:
        ValueError: naming ``burn_in``, ``thinning`` or ``num_samples`` when they do not
            fit in ``total_draws`` draws.
    """
    burn_in = total_draws // 2 if burn_in is None else _nonnegative_int(burn_in, "burn_in")
    num_samples = positive_int(num_samples, "num_samples")
    if burn_in >= total_draws:
        raise ValueError(f"burn_in={burn_in} leaves none of the {total_draws} draws (epochs x minibatches per epoch)")
    thinning = max(1, (total_draws - burn_in) // num_samples) if thinning is None else positive_int(thinning,
                                                                                                    "thinning")
    available = (total_draws - burn_in - 1) // thinning + 1
    if num_samples > available:
        raise ValueError(f"num_samples={num_samples} exceeds the {available} draws available: {total_draws} draws "
                         f"(epochs x minibatches per epoch), burn_in={burn_in}, thinning={thinning}")
    return total_draws - 1 - (num_samples - 1) * thinning, thinning


@partial(jax.jit, static_argnames=("loglik_fn", "prior_var", "epochs", "start", "stop", "batch_size", "first",
                                   "thinning", "momentum_refresh", "progress"))
def _sghmc(key, carry, fixed, x, y, step_size, alpha, temperature, *, loglik_fn, prior_var, epochs, start, stop,
           batch_size, first, thinning, momentum_refresh, progress):
    """Epochs ``start`` to ``stop - 1`` of an ``epochs``-epoch run from ``carry`` (position, momentum, kept buffer)."""
    n = x.shape[0]
    steps = n // batch_size

    def example_loglik(params, example):  # BlackJAX vmaps it over the minibatch's examples
        xi, yi = example
        return loglik_fn(merge_state(params, fixed), xi[None], yi[None])

    grad_fn = blackjax.sgmcmc.gradients.grad_estimator(lambda p: log_prior(p, prior_var), example_loglik, n)
    euler_step = blackjax.sgmcmc.diffusions.sghmc(alpha)

    def store(buffer, slot, position):
        return jax.tree_util.tree_map(lambda b, w: b.at[slot].set(w), buffer, position)

    def draw(carry, inputs):
        position, momentum, buffer = carry
        t, idx, k = inputs
        refresh_key, noise_key = jax.random.split(k)
        momentum = jax.lax.cond(t % momentum_refresh == 0, lambda: generate_gaussian_noise(refresh_key, position),
                                lambda: momentum)
        position, momentum = euler_step(noise_key, position, momentum, grad_fn(position, (x[idx], y[idx])),
                                        step_size, temperature)
        rel = t - first
        keep = (rel >= 0) & (rel % thinning == 0)
        buffer = jax.lax.cond(keep, store, lambda b, s, w: b, buffer, rel // thinning, position)
        return (position, momentum, buffer), None

    def epoch(carry, inputs):
        index, k = inputs
        order_key, step_key = jax.random.split(k)
        order = jax.random.permutation(order_key, n)[: steps * batch_size].reshape(steps, batch_size)
        carry, _ = jax.lax.scan(draw, carry, (index * steps + jnp.arange(steps), order,
                                              jax.random.split(step_key, steps)))
        if progress:
            jax.debug.callback(report_epoch, index)
        return carry, None

    carry, _ = jax.lax.scan(epoch, carry,
                            (jnp.arange(start, stop), jax.random.split(key, epochs)[start:stop]))
    return carry


def _run_sghmc(key: jax.Array, params0: PyTree, x, y, *, loglik_fn: Callable, step_size: float, epochs: int, batch_size: int,
              num_samples: int, burn_in: int | None = None, thinning: int | None = None,
              prior_std: float = 1.0, friction: float = 0.05, momentum_refresh: int = 50,
              temperature: float = 1.0, progress: bool | None = None, state: tuple[str, ...] = (),
              stop: int | None = None, resume: SGHMCState | None = None) -> SGHMCResult | SGHMCState:
    """Sample a network's posterior by SGHMC (BlackJAX's SGHMC diffusion; see the module docstring).

    The run makes ``epochs * (n // batch_size)`` draws, one Euler step per minibatch with the
    momentum refreshed every ``momentum_refresh`` draws, and keeps ``num_samples`` of them
    (:func:`sghmc_schedule`): the last draw and the ones ``thinning`` draws before it,
    none from the first ``burn_in``. Deterministic for a given ``key``.

    Args:
        key: ``jax.random`` key of the minibatch orders and the noise.
        params0: the initial network (e.g. a MAP fit), any pytree of float arrays.
        x: training inputs (leading axis: examples), finite.
        y: training targets (integer labels for a classifier).
        loglik_fn: ``loglik_fn(params, xb, yb)``, the SUM of the log-likelihoods of a
            minibatch: for a network and its likelihood
            :func:`~symlib.inference.likelihood.network_loglik` (e.g.
            ``network_loglik(optunet_apply, Categorical())``; the data are then checked against
            the network), or any other function.
        step_size: BlackJAX's step size ``h`` (the paper's learning rate ``lr``), > 0.
        epochs: passes over the training set.
        batch_size: examples per minibatch, at most ``n``.
        num_samples: number of draws kept.
        burn_in: draws discarded first (default: half the draws).
        thinning: spacing of the kept draws (default: spread over the draws after the burn-in).
        prior_std: standard deviation of the isotropic Gaussian prior (paper: 0.1).
        friction: per-step momentum decay ``alpha h`` in ``(0, 1]`` (paper: 0.05);
            BlackJAX's ``alpha`` is ``friction / step_size``.
        momentum_refresh: draws (minibatch steps) between momentum refreshes, >= 2 (the
            paper's library: 50; see the module docstring for the bias of a short one).
        temperature: posterior temperature ``T`` (1: the Bayes posterior).
        progress: show an ``"sghmc"`` progress bar over the epochs; ``None``: on a terminal only.
        state: top-level entries of ``params0`` that are model state (e.g. a Flax model's
            ``("batch_stats",)``): held fixed at their values in ``params0`` (the network's
            evaluation mode), not sampled, no prior; every kept sample carries them unchanged.
        stop: run only up to epoch ``stop`` (default: ``epochs``, the whole run).
        resume: go on from this state of the same run (same key, ``params0`` and settings),
            at its ``epochs_done``.

    Returns:
        An :class:`SGHMCResult` when the run reached ``epochs`` (``.samples`` holds
        ``num_samples`` networks stacked on a leading axis in the layout of ``params0``),
        else the :class:`SGHMCState` at ``stop``. A run in pieces draws exactly what the
        whole run draws.

    Raises:
        ValueError: naming the input: a non-positive ``step_size``, ``prior_std``, ``temperature``, ``epochs`` or
            ``num_samples``; ``friction`` outside ``(0, 1]``; ``momentum_refresh < 2``;
            ``batch_size`` not in ``1..n``; more ``num_samples`` than draws available
            after ``burn_in`` with this ``thinning``; ``x``/``y`` that do not fit the
            network or hold NaN or inf; a ``key`` that is not a key; a ``stop`` not after
            ``resume``'s epochs or past ``epochs``; a ``resume`` not in the layout of this run.
    """
    n = check_minibatch_data(x, y, batch_size, epochs, 1, None)
    start = 0 if resume is None else _nonnegative_int(resume.epochs_done, "resume.epochs_done")
    stop = int(epochs) if stop is None else positive_int(stop, "stop")
    if not start < stop <= int(epochs):
        raise ValueError(f"stop must lie after the {start} epochs done and within epochs={epochs}, got stop={stop}")
    step_size = positive_float(step_size, "step_size")
    prior_std = positive_float(prior_std, "prior_std")
    temperature = positive_float(temperature, "temperature")
    if not 0.0 < positive_float(friction, "friction") <= 1.0:
        raise ValueError(f"friction must lie in (0, 1] (the momentum decay per step), got {friction!r}")
    if positive_int(momentum_refresh, "momentum_refresh") < 2:
        raise ValueError("momentum_refresh must be >= 2: refreshed at every draw, the momentum the position moves "
                         "with never holds a gradient (a pure random walk)")
    first, thinning = sghmc_schedule(int(epochs) * (n // int(batch_size)), num_samples, burn_in, thinning)
    check_key(key, "key")
    x, y = jnp.asarray(x), jnp.asarray(y)
    params0 = jax.tree_util.tree_map(jnp.asarray, params0)
    check_loglik(loglik_fn, params0, x, y, batch_size, "params0")
    weights, fixed = split_state(params0, check_state(params0, state))
    alpha = friction / step_size
    kept = jax.tree_util.tree_map(lambda a: jnp.zeros((int(num_samples),) + jnp.shape(a), jnp.result_type(a)), weights)
    carry = (weights, jax.tree_util.tree_map(jnp.zeros_like, weights), kept)  # draw 0 draws the momentum
    if resume is not None:
        like = jax.tree_util.tree_map(jnp.shape, carry)
        if jax.tree_util.tree_map(jnp.shape, (resume.position, resume.momentum, resume.kept)) != like:
            raise ValueError(f"resume does not fit this run: its position, momentum and kept draws must have shapes "
                             f"{like}")
        carry = jax.tree_util.tree_map(jnp.asarray, (resume.position, resume.momentum, resume.kept))
    show = progress_enabled(progress)
    with epoch_bar(int(epochs), show, "sghmc"):  # the whole run: a resumed one starts at its epochs done
        position, momentum, samples = _sghmc(
            key, carry, fixed, x, y, step_size, alpha, temperature, loglik_fn=loglik_fn, prior_var=prior_std**2,
            epochs=int(epochs), start=start, stop=stop, batch_size=int(batch_size), first=first, thinning=thinning,
            momentum_refresh=int(momentum_refresh), progress=show)
    if stop < int(epochs):
        return SGHMCState(position, momentum, samples, stop)
    if fixed:
        held = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (int(num_samples), *jnp.shape(a))), fixed)
        samples = {k: held[k] if k in held else samples[k] for k in params0}
    return SGHMCResult(samples, first + thinning * np.arange(int(num_samples)), float(alpha))


class SGHMCConfig(NamedTuple):
    """SGHMC (:func:`fit_sghmc`): step size, epochs, minibatch, kept draws (after ``burn_in``,
    every ``thinning``-th), prior, friction, draws between momentum refreshes and temperature."""

    step_size: float
    epochs: int
    batch_size: int
    num_samples: int
    burn_in: int | None = None
    thinning: int | None = None
    prior_std: float = 1.0
    friction: float = 0.05
    momentum_refresh: int = 50
    temperature: float = 1.0


def sghmc_epochs(key: jax.Array, params0: PyTree, model: Model, data: Data, config: SGHMCConfig, stop: int,
                 resume: SGHMCState | None = None) -> SGHMCState:
    """The run of :func:`fit_sghmc` up to epoch ``stop`` (``< config.epochs``), going on from
    ``resume`` when given: a long run in pieces, each short enough for its window (the
    GPU queue's), that draws exactly what the whole run draws; ``fit_sghmc(..., resume=state)``
    finishes it.

    Raises:
        ValueError: as :func:`fit_sghmc`, and for a ``stop`` not between ``resume``'s epochs
            and ``config.epochs`` (exclusive).
    """
    check_fit_inputs(model, data, config, SGHMCConfig, params0)
    if positive_int(stop, "stop") >= config.epochs:
        raise ValueError(f"stop={stop} must come before config.epochs={config.epochs}: fit_sghmc finishes a run")
    state = _run_sghmc(key, params0, data.x, data.y, loglik_fn=network_loglik(model.apply_fn, model.likelihood),
                       **config._asdict(), state=model.state, stop=stop, resume=resume)
    if not all(np.all(np.isfinite(np.asarray(a))) for a in jax.tree_util.tree_leaves(state.position)):
        raise NonFiniteFitError(f"sghmc_epochs: the chain became NaN or inf by epoch {stop}; lower the step size "
                                f"(config.step_size={config.step_size!r})")
    return state


def fit_sghmc(key: jax.Array, params0: PyTree, model: Model, data: Data, config: SGHMCConfig, *,
              resume: SGHMCState | None = None) -> Samples:
    """SGHMC (BlackJAX, minibatches) from ``params0``; the kept draws. With ``resume`` (a state
    of :func:`sghmc_epochs` for the same key, ``params0`` and config) the run goes on from it.

    The likelihood is ``model.likelihood`` of ``model.apply_fn``'s outputs (evaluation mode); the model state
    (``model.state``) is held fixed at ``params0``'s values and carried by every draw."""
    check_fit_inputs(model, data, config, SGHMCConfig, params0)
    res = _run_sghmc(key, params0, data.x, data.y, loglik_fn=network_loglik(model.apply_fn, model.likelihood),
                     **config._asdict(), state=model.state, resume=resume)
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(res.samples)]
    bad = first_non_finite(np.concatenate([leaf.reshape(leaf.shape[0], -1) for leaf in leaves], axis=1))
    if bad is not None:
        raise NonFiniteFitError(f"fit_sghmc: the samples became NaN or inf (first at kept sample {bad + 1} of "
                                f"{leaves[0].shape[0]}, draw {int(res.draw_indices[bad]) + 1}); lower the step size "
                                f"(config.step_size={config.step_size!r})")
    return Samples(res.samples)
