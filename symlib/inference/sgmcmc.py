"""Stochastic gradient Hamiltonian Monte Carlo (Chen et al., 2014), scale-adapted as in the
sampler Laurent et al. ran (Springenberg et al., 2016).

:func:`_run_sghmc` samples the posterior ``p(W | D) ∝ N(W; 0, prior_std^2 I) prod_i p(y_i | x_i, W)``
of a network from minibatch estimates of its gradient (BlackJAX's
:func:`blackjax.sgmcmc.gradients.grad_estimator`)::

    grad log p(W | D) ~= grad log N(W; 0, prior_std^2 I) + (N / |B|) sum_{i in B} grad log p(y_i | x_i, W).

Minibatches are a fresh permutation of the training set every epoch (drawn without
replacement; the last incomplete batch is dropped), decided by ``key`` alone; the whole
run is one ``jax.lax.scan`` over the epochs (and the minibatches) inside ``jax.jit``.

The chain
---------
Every minibatch is one *draw*: one update of the velocity ``v`` and the weights ``W`` with
that minibatch's gradient ``d`` of the potential ``-log N(W; 0, prior_std^2 I) - sum_i log p(y_i | x_i, W) / T``
(its minibatch estimate, as above with the likelihood term over ``T``), weight by weight::

    v <- (1 - C) v - lr^2 M^-1 d + lr sqrt(2 C M^-1) n,     W <- W + v,     n ~ N(0, I),

``lr = step_size``, ``C = friction`` (the velocity's decay per draw), ``T = temperature``
(tempering the likelihood only, as :func:`~symlib.inference.fit_hmc` and
:func:`~symlib.inference.fit_vi` do) and ``M^-1`` the preconditioner. This is
Chen et al.'s update in its learning-rate form (learning rate ``lr^2``, momentum decay ``C``);
with ``v = lr sqrt(M^-1) u`` each weight runs plain SGHMC with its own step ``lr sqrt(M^-1)``
and unit mass. The velocity is drawn afresh, ``v ~ N(0, lr^2 M^-1)``, every
``momentum_refresh`` draws (draw 0 included). This is the schedule of the library the
authors used (J. Antorán's PyTorch Bayesian-Neural-Networks, ``H_SA_SGHMC`` run by
``train_SGHMC_MNIST.py``: one update a minibatch, velocity resampled every
``resample_its = 50`` minibatches; the update above is its own, velocity first). BlackJAX's
SGHMC kernel and diffusion have one scalar step and no preconditioner, so the update is
written here.

The refresh biases the chain when the friction has not mixed the velocity within ``L``
draws (``L = momentum_refresh``, ``C L`` small): the first update after a refresh kicks the
fresh velocity with a whole gradient step, and the draws' variance comes out too small. On a
Gaussian target of curvature 2 with ``lr = 0.01``, ``C = 0.05`` it is 5% too small with ``L = 20``, 2% with
``L = 50`` and 0.6% with ``L = 100``, measured on the draws just before a refresh (exact for
the linear recursion and checked by the tests); with ``L = 1`` the chain is a Langevin step with
half the noise it needs, so ``L >= 2``. The discretisation adds an ``O(lr)`` bias of its own.
The library's noise variance also subtracts ``lr^4`` (its gradient-noise estimate): 1e-8
against ``2 C lr^2`` = 1e-5 at its settings, left out here.

Scale adaptation and the hyper-prior
------------------------------------
The library's sampler is *scale-adapted* (Springenberg et al., 2016, Eqs. 8-10): during its
first ``adapt_epochs`` epochs every weight keeps running estimates of its gradient's mean
``g`` and second moment ``V`` over an adaptive window ``tau`` (all starting at 1), and the
preconditioner is ``M^-1 = 1 / (sqrt(V) + 1e-6)``: weights with large gradients take small
steps. After those epochs ``M^-1`` is frozen, and the chain is SGHMC with a fixed diagonal
mass, valid from then on; the adaptation must therefore end before the first kept draw.
The library also puts a Gamma hyper-prior (shape ``alpha0``, rate ``beta0``; its defaults
10 and 10) on each parameter array's prior precision ``lambda``, Gibbs-sampled every
``prior_refresh`` draws (its ``resample_prior_its = 15``) from its conditional
``Gamma(alpha0 + n / 2, beta0 + |w|^2 / 2)`` for the array's ``n`` weights ``w``. Without
``prior_gamma`` the prior is fixed at ``N(0, prior_std^2 I)``; without ``adapt_epochs``,
``M^-1 = 1``. The library's MNIST script burns in (adapts) for 20 of its 250 epochs with
``lr = 1e-2``, ``C = 0.05``. It also clips each gradient's norm at the mean plus 20
standard deviations of the last 1,000 norms, against explosions; that is not reproduced: a
chain that becomes NaN or inf stops with :class:`~symlib.inference.shape.NonFiniteFitError`.

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
from symlib.inference._loop import check_minibatch_data, check_state, epoch_bar, merge_state, report_epoch, split_state
from symlib.inference.likelihood import network_loglik
from symlib.inference.vi import check_loglik
from symlib.core.progress import progress_enabled
from symlib.inference.shape import Data, Model, NonFiniteFitError, Samples, check_fit_inputs, first_non_finite

PyTree = Any


class SGHMCResult(NamedTuple):
    """``samples``: the kept positions stacked on a leading axis (the network's pytree
    layout); ``draw_indices``: the 0-based draws (one per minibatch) they come from (numpy);
    ``preconditioner``: the per-weight ``M^-1 = 1 / (sqrt(V) + eps)`` the chain sampled with
    (ones without scale adaptation); ``prior_precision``: each leaf's prior precision at the
    last draw (the Gibbs draw of the hyper-prior, else ``1 / prior_std^2``)."""
    samples: PyTree
    draw_indices: np.ndarray
    preconditioner: PyTree
    prior_precision: PyTree


class SGHMCState(NamedTuple):
    """An SGHMC run in progress (:func:`sghmc_epochs`) after ``epochs_done`` epochs (model-state
    entries left out): ``position``, the weights; ``momentum``, their velocity ``v``;
    ``adaptation``, the scale adaptation's running ``(tau, g, V)`` per weight; ``prior_precision``,
    each leaf's prior precision; ``kept``, the buffer of the run's ``num_samples`` kept draws
    (the slots of draws not made yet hold zeros)."""
    position: PyTree
    momentum: PyTree
    adaptation: tuple[PyTree, PyTree, PyTree]
    prior_precision: PyTree
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


#: the scale adaptation's guard against division by zero (the authors' library's)
ADAPT_EPS = 1e-6


def _adapted(stats: tuple[PyTree, PyTree, PyTree], grad: PyTree) -> tuple[PyTree, PyTree, PyTree]:
    """One step of the scale adaptation, weight by weight (Springenberg et al., 2016, Eqs. 8-9):
    the window ``tau`` of the running averages shrinks where the mean gradient ``g`` is large
    against its second moment ``V``, and ``g`` and ``V`` move towards ``grad`` and ``grad^2``."""
    tree_map = jax.tree_util.tree_map
    tau, g, v = stats
    tau = tree_map(lambda t, m, s: t - t * m**2 / (s + ADAPT_EPS) + 1.0, tau, g, v)
    rate = tree_map(lambda t: 1.0 / (t + ADAPT_EPS), tau)
    return (tau, tree_map(lambda m, r, d: m + r * (d - m), g, rate, grad),
            tree_map(lambda s, r, d: s + r * (d**2 - s), v, rate, grad))


def _inverse_mass(second_moment: PyTree) -> PyTree:
    """The preconditioner ``M^-1 = 1 / (sqrt(V) + eps)`` of the gradients' second moments ``V``."""
    return jax.tree_util.tree_map(lambda v: 1.0 / (jnp.sqrt(v) + ADAPT_EPS), second_moment)


def _leaf_keys(key, tree) -> PyTree:
    """One key per leaf of ``tree``, in its flattening order (sorted dict keys)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return jax.tree_util.tree_unflatten(treedef, list(jax.random.split(key, len(leaves))))


def _gibbs_precision(key, position, alpha0: float, beta0: float) -> PyTree:
    """Each leaf's prior precision drawn from its conditional under a ``Gamma(alpha0, beta0)``
    hyper-prior (shape, rate): ``Gamma(alpha0 + n / 2, beta0 + |w|^2 / 2)`` for its ``n`` weights ``w``."""
    def draw(k, w):  # float32 whatever the weights' dtype: the chain carries the precisions in float32
        rate = beta0 + 0.5 * jnp.sum(w.astype(jnp.float32) ** 2)
        return (jax.random.gamma(k, alpha0 + w.size / 2, dtype=jnp.float32) / rate).astype(jnp.float32)

    return jax.tree_util.tree_map(draw, _leaf_keys(key, position), position)


@partial(jax.jit, static_argnames=("loglik_fn", "epochs", "start", "stop", "batch_size", "first", "thinning",
                                   "momentum_refresh", "adapt_draws", "prior_gamma", "prior_refresh", "progress"))
def _sghmc(key, carry, fixed, x, y, step_size, friction, temperature, *, loglik_fn, epochs, start, stop,
           batch_size, first, thinning, momentum_refresh, adapt_draws, prior_gamma, prior_refresh, progress):
    """Epochs ``start`` to ``stop - 1`` of an ``epochs``-epoch run from ``carry`` (position,
    velocity, adaptation, prior precisions, kept buffer)."""
    n = x.shape[0]
    steps = n // batch_size
    tree_map = jax.tree_util.tree_map

    def example_loglik(params, example):  # BlackJAX vmaps it over the minibatch's examples
        xi, yi = example
        return loglik_fn(merge_state(params, fixed), xi[None], yi[None])

    def store(buffer, slot, position):
        return tree_map(lambda b, w: b.at[slot].set(w), buffer, position)

    def draw(carry, inputs):
        position, velocity, stats, precision, buffer = carry
        t, idx, k = inputs
        prior_key, refresh_key, noise_key = jax.random.split(k, 3)
        if prior_gamma is not None:
            precision = jax.lax.cond(t % prior_refresh == 0,
                                     lambda: _gibbs_precision(prior_key, position, *prior_gamma), lambda: precision)
        log_prior = lambda w: -0.5 * sum(jnp.sum(lam * a**2) for lam, a in zip(  # noqa: E731
            jax.tree_util.tree_leaves(precision), jax.tree_util.tree_leaves(w)))
        grad_log_post = blackjax.sgmcmc.gradients.grad_estimator(
            log_prior, lambda params, example: example_loglik(params, example) / temperature, n)
        grad = tree_map(jnp.negative, grad_log_post(position, (x[idx], y[idx])))
        stats = jax.lax.cond(t < adapt_draws, lambda: _adapted(stats, grad), lambda: stats)
        inv_mass = _inverse_mass(stats[2])
        velocity = jax.lax.cond(t % momentum_refresh == 0, lambda: tree_map(
            lambda m, z: step_size * jnp.sqrt(m) * z, inv_mass, generate_gaussian_noise(refresh_key, position)),
                                lambda: velocity)
        velocity = tree_map(lambda v, m, gr, z: (1.0 - friction) * v - step_size**2 * m * gr
                            + step_size * jnp.sqrt(2.0 * friction * m) * z,
                            velocity, inv_mass, grad, generate_gaussian_noise(noise_key, position))
        position = tree_map(jnp.add, position, velocity)
        rel = t - first
        keep = (rel >= 0) & (rel % thinning == 0)
        buffer = jax.lax.cond(keep, store, lambda b, s, w: b, buffer, rel // thinning, position)
        return (position, velocity, stats, precision, buffer), None

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


def _gamma_pair(prior_gamma) -> tuple[float, float] | None:
    if prior_gamma is None:
        return None
    if not isinstance(prior_gamma, (tuple, list)) or len(prior_gamma) != 2:
        raise ValueError(f"prior_gamma must be None or (alpha0, beta0), the Gamma hyper-prior's shape and rate, "
                         f"got {prior_gamma!r}")
    return positive_float(prior_gamma[0], "prior_gamma's alpha0"), positive_float(prior_gamma[1], "prior_gamma's beta0")


def _run_sghmc(key: jax.Array, params0: PyTree, x, y, *, loglik_fn: Callable, step_size: float, epochs: int,
               batch_size: int, num_samples: int, burn_in: int | None = None, thinning: int | None = None,
               prior_std: float = 1.0, friction: float = 0.05, momentum_refresh: int = 50,
               temperature: float = 1.0, adapt_epochs: int = 0, prior_gamma: tuple[float, float] | None = None,
               prior_refresh: int = 15, progress: bool | None = None, state: tuple[str, ...] = (),
               stop: int | None = None, resume: SGHMCState | None = None) -> SGHMCResult | SGHMCState:
    """Sample a network's posterior by (scale-adapted) SGHMC (the module docstring).

    The run makes ``epochs * (n // batch_size)`` draws, one update per minibatch with the
    velocity refreshed every ``momentum_refresh`` draws, and keeps ``num_samples`` of them
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
        step_size: the learning rate ``lr`` (Laurent et al.'s library: 1e-2), > 0.
        epochs: passes over the training set.
        batch_size: examples per minibatch, at most ``n``.
        num_samples: number of draws kept.
        burn_in: draws discarded first (default: half the draws).
        thinning: spacing of the kept draws (default: spread over the draws after the burn-in).
        prior_std: standard deviation of the isotropic Gaussian prior (with ``prior_gamma``:
            only where the prior precision starts, ``1 / prior_std^2``, until draw 0's Gibbs draw).
        friction: the velocity's decay per draw ``C`` in ``(0, 1]`` (the library: 0.05).
        momentum_refresh: draws (minibatches) between velocity refreshes, >= 2 (the library: 50).
        temperature: likelihood temperature ``T``: the chain samples the prior times the
            likelihood to the power ``1 / T`` (1: the Bayes posterior; the hyper-prior's Gibbs
            draw, which sees the prior only, is unchanged).
        adapt_epochs: epochs at the start whose draws adapt the preconditioner, frozen from then
            on; they must end before the first kept draw (0: none, ``M^-1 = 1``; the library's
            MNIST script: 20).
        prior_gamma: ``(alpha0, beta0)``, a Gamma hyper-prior (shape, rate) on each leaf's prior
            precision, Gibbs-sampled every ``prior_refresh`` draws (the library: ``(10, 10)``, every
            15); ``None``: the fixed prior ``N(0, prior_std^2 I)``.
        prior_refresh: draws between the Gibbs draws of the prior precisions, >= 1.
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
            ``num_samples``; ``friction`` outside ``(0, 1]``; a ``momentum_refresh`` below 2
            or ``prior_refresh`` below 1; ``adapt_epochs`` reaching a kept draw; a ``prior_gamma``
            that is not two positive numbers;
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
        raise ValueError(f"friction must lie in (0, 1] (the velocity's decay per draw), got {friction!r}")
    if positive_int(momentum_refresh, "momentum_refresh") < 2:
        raise ValueError("momentum_refresh must be >= 2: refreshed at every draw, the chain is a Langevin step with "
                         "half the noise it needs (its draws' variance about half the posterior's)")
    prior_refresh = positive_int(prior_refresh, "prior_refresh")
    prior_gamma = _gamma_pair(prior_gamma)
    steps = n // int(batch_size)
    first, thinning = sghmc_schedule(int(epochs) * steps, num_samples, burn_in, thinning)
    adapt_draws = _nonnegative_int(adapt_epochs, "adapt_epochs") * steps
    if adapt_draws > first:
        raise ValueError(f"adapt_epochs={adapt_epochs} ({adapt_draws} draws) reaches the first kept draw ({first}): "
                         "the preconditioner must be frozen while the chain is sampled; fewer adapt_epochs or a "
                         "longer burn_in")
    check_key(key, "key")
    x, y = jnp.asarray(x), jnp.asarray(y)
    params0 = jax.tree_util.tree_map(jnp.asarray, params0)
    check_loglik(loglik_fn, params0, x, y, batch_size, "params0")
    weights, fixed = split_state(params0, check_state(params0, state))
    ones = jax.tree_util.tree_map(jnp.ones_like, weights)
    kept = jax.tree_util.tree_map(lambda a: jnp.zeros((int(num_samples),) + jnp.shape(a), jnp.result_type(a)), weights)
    carry = (weights, jax.tree_util.tree_map(jnp.zeros_like, weights), (ones, ones, ones),  # draw 0 refreshes v
             jax.tree_util.tree_map(lambda _: jnp.float32(prior_std**-2), weights), kept)
    if resume is not None:
        like = jax.tree_util.tree_map(jnp.shape, carry)
        given = (resume.position, resume.momentum, tuple(resume.adaptation), resume.prior_precision, resume.kept)
        if jax.tree_util.tree_map(jnp.shape, given) != like:
            raise ValueError(f"resume does not fit this run: its position, momentum, adaptation, prior precisions and "
                             f"kept draws must have shapes {like}")
        carry = jax.tree_util.tree_map(jnp.asarray, given)
    show = progress_enabled(progress)
    with epoch_bar(int(epochs), show, "sghmc"):  # the whole run: a resumed one starts at its epochs done
        position, velocity, stats, precision, samples = _sghmc(
            key, carry, fixed, x, y, step_size, float(friction), temperature, loglik_fn=loglik_fn,
            epochs=int(epochs), start=start, stop=stop, batch_size=int(batch_size), first=first, thinning=thinning,
            momentum_refresh=int(momentum_refresh), adapt_draws=adapt_draws, prior_gamma=prior_gamma,
            prior_refresh=prior_refresh, progress=show)
    if stop < int(epochs):
        return SGHMCState(position, velocity, stats, precision, samples, stop)
    if fixed:
        held = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (int(num_samples), *jnp.shape(a))), fixed)
        samples = {k: held[k] if k in held else samples[k] for k in params0}
    return SGHMCResult(samples, first + thinning * np.arange(int(num_samples)), _inverse_mass(stats[2]), precision)


class SGHMCConfig(NamedTuple):
    """SGHMC (:func:`fit_sghmc`): step size, epochs, minibatch, kept draws (after ``burn_in``,
    every ``thinning``-th), prior, friction, draws between momentum refreshes, temperature, and
    the scale-adapted sampler's epochs of adaptation and Gamma hyper-prior (``_run_sghmc``'s
    arguments of the same names; the defaults are plain SGHMC with a fixed prior)."""

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
    adapt_epochs: int = 0
    prior_gamma: tuple[float, float] | None = None
    prior_refresh: int = 15


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
    """SGHMC (scale-adapted as ``config`` sets, minibatches) from ``params0``; the kept draws.
    With ``resume`` (a state of :func:`sghmc_epochs` for the same key, ``params0`` and config)
    the run goes on from it.

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
