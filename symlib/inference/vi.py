"""Mean-field Gaussian variational inference (Bayes by backprop), on plain pytrees.

Bayes by backprop is the method of Blundell et al. (2015), "Weight Uncertainty in Neural
Networks" (ICML): a factorised Gaussian posterior over the weights, fitted by stochastic
gradient ascent on the ELBO through reparameterised weight samples.

The variational family is a fully factorised Gaussian over every parameter of a network,

    q(W) = prod_j N(w_j | mu_j, sigma_j^2),     sigma_j = softplus(rho_j) > 0,

with an isotropic Gaussian prior p(W) = N(0, prior_var I). ``mu`` and ``rho`` are two
pytrees laid out *exactly* like the network's parameter pytree (:class:`MeanFieldState`,
made by :func:`init_mean_field`; model-state entries such as BatchNorm statistics are held
apart, fixed), so the fitted ``mu`` and ``sigma`` feed unchanged into the matching,
alignment and prediction tools; :func:`symlib.inference.fit_vi` returns them as a
:class:`~symlib.core.gaussian.DiagonalGaussian`.

Objective and its scaling
-------------------------
For a minibatch ``B`` of size ``|B|`` drawn from ``N = n_data`` training examples, and
``M = num_mc`` reparameterised weight draws ``W_m = mu + sigma * eps_m``, the minibatch
estimate of the (likelihood-tempered) negative ELBO is::

    NELBO_B = -(N / |B|) * (1/M) sum_m sum_{i in B} log p(y_i | x_i, W_m) / temperature
              + KL(q || p),

an unbiased estimate of ``-E_q[log p(D | W)] / temperature + KL(q || p)``. What the
optimiser actually minimises is ``NELBO_B / N`` (the negative ELBO *per training
example*): the same optimum and, since Adam is invariant to a constant rescaling of the
loss (up to its ``eps``), essentially the same trajectory, with gradients of order one.
``temperature`` tempers the likelihood only; equivalently it weights the KL term by
``temperature`` (``temperature < 1`` is a "cold" posterior). The ELBO history (``fit_vi``'s ``info["elbo"]``)
holds, per epoch, the mean over that epoch's minibatches of ``-NELBO_B / N`` (the
per-example ELBO, in nats per example).

One ``eps`` is drawn per forward pass: every example of a minibatch sees the same
sampled network (plain reparameterisation; no local reparameterisation trick), and
each of the ``num_mc`` samples is a fresh network. Minibatches are a fresh permutation
of the training set every epoch (the last incomplete batch is dropped), decided by
``key`` alone, so a fit is deterministic for a given key.

The training loop is a pure function of these pytrees: the whole run (epochs x minibatches)
is one ``jax.lax.scan`` inside ``jax.jit`` that takes the gradient of
:func:`neg_elbo_from_noise` with respect to ``(mu, rho)`` and applies the config's optax
transformation (Adam in Bayes by backprop, e.g. ``optax.adam(1e-3)``); this is much faster
on CPU than a Python loop over a compiled step. For larger
convolutional networks on CPU, ``loop="python"`` (:class:`symlib.inference.VIConfig`) calls
one compiled step from a Python loop instead (same draws): XLA runs their backward pass
inside a compiled loop many times slower.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from symlib.core.checks import check_finite_tree, check_key, positive_float
from symlib.core.noise import normal_vector, perturb, split_like
from symlib.inference._loop import (check_minibatch_data, check_network_data, check_optimizer, check_state,
                                   merge_state, split_state)
from symlib.inference.likelihood import NetworkLogLik, network_loglik
from symlib.core.gaussian import DiagonalGaussian
from symlib.inference.shape import Data, Model, check_fit_inputs, fit_modes, raise_if_not_finite, unstack

PyTree = Any
LogLikFn = Callable[[PyTree, jax.Array, jax.Array], jax.Array]

DEFAULT_STD_INIT = 0.01
DEFAULT_PRIOR_VAR = 1.0

def inverse_softplus(y: float) -> float:
    """The ``rho`` with ``softplus(rho) == y``.

    Args:
        y: a positive finite number.

    Returns:
        ``log(expm1(y))`` as a Python float (computed in float64).

    Raises:
        ValueError: if ``y`` is not positive and finite.
    """
    if not y > 0 or not math.isfinite(y):
        raise ValueError(f"softplus is positive: cannot invert {y}")
    return float(np.log(np.expm1(np.float64(y))))


def gaussian_kl(mu, sigma, prior_var: float) -> jax.Array:
    """KL( N(mu, diag(sigma^2)) || N(0, prior_var I) ) summed over every leaf of the pytrees:

        sum_j 0.5 * (sigma_j^2 / v + mu_j^2 / v - 1 - log(sigma_j^2 / v)).

    Args:
        mu: pytree of means.
        sigma: pytree of standard deviations (positive), same structure as ``mu``.
        prior_var: variance ``v`` of the isotropic Gaussian prior.

    Returns:
        The KL divergence, a scalar.
    """
    def leaf(m, s):
        ratio = s**2 / prior_var
        return 0.5 * jnp.sum(ratio + m**2 / prior_var - 1.0 - jnp.log(ratio))

    return sum(jax.tree_util.tree_leaves(jax.tree_util.tree_map(leaf, mu, sigma)))


class MeanFieldState(NamedTuple):
    """The variational parameters of a mean-field Gaussian as plain pytrees: ``mu`` and
    ``rho`` (``sigma = softplus(rho)``) over the weights, in the network's parameter layout
    without its model-state entries. It is what the optimiser updates."""

    mu: PyTree
    rho: PyTree


def init_mean_field(init_mu: PyTree, std_init: float = DEFAULT_STD_INIT,
                    state: tuple[str, ...] = ()) -> tuple[MeanFieldState, dict]:
    """The mean-field Gaussian that starts at the network ``init_mu``, every standard
    deviation at ``std_init``, with the model-state entries ``state`` held fixed.

    Args:
        init_mu: the initial means, any pytree of float arrays (the network's layout).
        std_init: the initial standard deviation (``rho = inverse_softplus(std_init)``).
        state: top-level entries of ``init_mu`` that are model state, not weights (e.g. a
            Flax model's ``("batch_stats",)``): left out of ``q``, returned as they are.

    Returns:
        ``(q, fixed)``: the variational parameters over the weights and the state entries
        of ``init_mu`` (``{}`` without state).

    Raises:
        ValueError: a non-positive ``std_init``, a bad ``state``, an ``init_mu`` without
            parameters, with a non-floating leaf or with NaN or inf.
    """
    positive_float(std_init, "std_init")
    state = check_state(init_mu, state, "init_mu")
    weights, fixed = split_state(init_mu, state)
    leaves = jax.tree_util.tree_leaves(weights)
    if not leaves:
        raise ValueError("init_mu has no parameters")
    for a in leaves:
        if not jnp.issubdtype(jnp.result_type(a), jnp.floating):
            raise ValueError(f"init_mu must hold floating-point arrays, got dtype {jnp.result_type(a)}")
    check_finite_tree(weights, "init_mu")
    rho0 = inverse_softplus(std_init)
    rho = jax.tree_util.tree_map(lambda a: jnp.asarray(np.full(jnp.shape(a), rho0, jnp.result_type(a))), weights)
    return MeanFieldState(jax.tree_util.tree_map(jnp.asarray, weights), rho), \
        jax.tree_util.tree_map(jnp.asarray, fixed)


def sample_from_noise(q: MeanFieldState, eps: jax.Array) -> PyTree:
    """The reparameterised weights ``mu + softplus(rho) * eps`` (differentiable in ``q``).

    Args:
        q: the variational parameters.
        eps: flat standard-normal noise ``(n_params,)`` in ``jax.tree_util``'s leaf order of
            ``q.mu`` (:func:`symlib.core.noise.normal_vector`).

    Returns:
        The weights, in the layout of ``q.mu``.
    """
    return perturb(q.mu, jax.tree_util.tree_map(jax.nn.softplus, q.rho), split_like(eps, q.mu))


def neg_elbo_from_noise(q: MeanFieldState, eps: jax.Array, loglik_fn: LogLikFn, xb, yb, n_data: int, *,
                        prior_var: float = DEFAULT_PRIOR_VAR, temperature: float = 1.0, fixed: dict | None = None):
    """The minibatch negative ELBO per training example, ``NELBO_B / n_data`` (module
    docstring), for given standard-normal noise.

    With the noise fixed, the estimate is a deterministic function of ``q``; permuting
    ``mu``, ``rho`` and ``eps`` together leaves it unchanged.

    Args:
        q: the variational parameters.
        eps: noise ``(n_params,)`` (one network) or ``(num_mc, n_params)`` (the mean of their
            log-likelihoods).
        loglik_fn: ``loglik_fn(params, xb, yb)``, the SUM of the minibatch's log-likelihoods.
        xb: minibatch inputs.
        yb: minibatch targets.
        n_data: number of training examples ``N``.
        prior_var: the prior variance.
        temperature: likelihood temperature.
        fixed: the model-state entries (:func:`init_mean_field`), put back into every network.

    Returns:
        ``(objective, kl)``: the negative ELBO per example and the KL term.
    """
    fixed = {} if fixed is None else fixed

    def loglik(e):
        return loglik_fn(merge_state(sample_from_noise(q, e), fixed), xb, yb)

    ll = loglik(eps) if eps.ndim == 1 else jnp.mean(jax.vmap(loglik)(eps))
    kl = gaussian_kl(q.mu, jax.tree_util.tree_map(jax.nn.softplus, q.rho), prior_var)
    nelbo = -(n_data / xb.shape[0]) * ll / temperature + kl
    return nelbo / n_data, kl


class VIResult(NamedTuple):
    """``mu`` and ``sigma`` in the layout of the network's parameters; ``elbo_history``
    is the per-example ELBO averaged over each epoch (numpy, length ``epochs``)."""
    mu: PyTree
    sigma: PyTree
    elbo_history: np.ndarray


_STATIC = ("loglik_fn", "batch_size", "n_data", "prior_var", "temperature", "num_mc", "optimizer")
LOOPS = ("scan", "python")


def _step(fixed, x, y, *, loglik_fn, n_data, prior_var, temperature, num_mc, optimizer):
    """The optimiser's step on one minibatch: ``((q, opt_state), (idx, key)) -> (carry, elbo)``."""
    opt = optimizer

    def objective(q, k, xb, yb):
        eps = normal_vector(k, q.mu, None if num_mc == 1 else num_mc)
        return neg_elbo_from_noise(q, eps, loglik_fn, xb, yb, n_data, prior_var=prior_var, temperature=temperature,
                                   fixed=fixed)[0]

    grad_fn = jax.value_and_grad(objective)

    def step(carry, inp):
        q, state = carry
        idx, k = inp
        loss, grads = grad_fn(q, k, x[idx], y[idx])
        updates, state = opt.update(grads, state, q)
        return (optax.apply_updates(q, updates), state), -loss

    return opt, step


def _epoch_plan(key, n: int, epochs: int, batch_size: int):
    """The minibatch orders ``(epochs, steps, batch_size)`` (a fresh permutation per epoch)
    and the noise keys ``(epochs, steps)`` of every step."""
    steps = n // batch_size
    order_key, noise_key = jax.random.split(key)
    orders = jax.vmap(lambda k: jax.random.permutation(k, n)[: steps * batch_size].reshape(steps, batch_size))(
        jax.random.split(order_key, epochs))
    noise = jax.vmap(lambda k: jax.random.split(k, steps))(jax.random.split(noise_key, epochs))
    return orders, noise


def _moments(q: MeanFieldState, fixed: dict) -> tuple[PyTree, PyTree]:
    """The means and standard deviations in the network's layout (0 on the state entries)."""
    sigma = jax.tree_util.tree_map(jax.nn.softplus, q.rho)
    return merge_state(q.mu, fixed), merge_state(sigma, jax.tree_util.tree_map(jnp.zeros_like, fixed))


@partial(jax.jit, static_argnames=("epochs",) + _STATIC)
def _train(q, fixed, key, x, y, *, epochs, batch_size, **static):
    opt, step = _step(fixed, x, y, **static)

    def epoch(carry, plan):
        carry, elbos = jax.lax.scan(step, carry, plan)
        return carry, jnp.mean(elbos)

    plan = _epoch_plan(key, x.shape[0], epochs, batch_size)
    (q, _), history = jax.lax.scan(epoch, (q, opt.init(q)), plan)
    return history, *_moments(q, fixed)


@partial(jax.jit, static_argnames=_STATIC, donate_argnums=(0,))
def _one_step(carry, fixed, x, y, idx, k, *, batch_size, **static):
    return _step(fixed, x, y, **static)[1](carry, (idx, k))


def _train_python(q, fixed, key, x, y, *, epochs, batch_size, **static):
    """:func:`_train` with the steps in a Python loop (one compiled step): the same draws."""
    opt, _ = _step(fixed, x, y, **static)
    # the compiled step donates its carry: start from copies, not the caller's arrays, and copy
    # the optimizer's state too (a state may hold the parameters' own buffers, e.g. lookahead's)
    q = jax.tree_util.tree_map(jnp.copy, q)
    carry, history = (q, jax.tree_util.tree_map(jnp.copy, opt.init(q))), []
    for order, keys in zip(*_epoch_plan(key, x.shape[0], epochs, batch_size)):
        elbos = []
        for idx, k in zip(order, keys):
            carry, elbo = _one_step(carry, fixed, x, y, idx, k, batch_size=batch_size, **static)
            elbos.append(elbo)
        history.append(jnp.mean(jnp.stack(elbos)))
    return jnp.stack(history), *_moments(carry[0], fixed)


def _train_vi(key: jax.Array, init_mu: PyTree, loglik_fn: LogLikFn, x, y, *,
              n_data: int | None = None, prior_var: float | None = None, std_init: float | None = None,
              epochs: int, batch_size: int, optimizer: optax.GradientTransformation,
              temperature: float = 1.0, num_mc: int = 1, loop: str = "scan", state: tuple[str, ...] = (),
              modes: bool = False) -> VIResult:
    """Fit a mean-field Gaussian posterior by maximising the ELBO with ``optimizer``: Bayes by
    backprop (Blundell et al., 2015, "Weight Uncertainty in Neural Networks"); the loop of
    :func:`symlib.inference.fit_vi`.

    The objective and the ELBO reported are defined in the module docstring.
    Deterministic for a given ``key``.

    Args:
        key: ``jax.random`` key of the minibatch orders and the weight noise (with ``modes``:
            one key per mode, stacked).
        init_mu: the initial means (any pytree of float arrays: the network's parameter layout;
            with ``modes``: one network per mode, stacked on a leading axis).
        loglik_fn: ``loglik_fn(params, xb, yb)``, the SUM of the log-likelihoods of the
            minibatch (a scalar) for one network ``params``; with a
            :func:`~symlib.inference.likelihood.network_loglik` (e.g.
            ``network_loglik(optunet_apply, Categorical())`` for OptuNet), ``x`` and ``y`` are
            checked against its network under its likelihood.
        x: training inputs (leading axis: examples), finite.
        y: training targets (same leading axis).
        n_data: the ``N`` of the likelihood scaling (default ``len(x)``).
        prior_var: prior variance (default 1.0).
        std_init: initial ``sigma`` (default 0.01).
        epochs: passes over the training set.
        batch_size: examples per minibatch (the last incomplete batch is dropped).
        optimizer: the optax transformation (Bayes by backprop: ``optax.adam(learning_rate)``; its
            schedules count optimisation steps); a static argument of the compiled loop,
            hashed by identity.
        temperature: likelihood temperature (``< 1``: a cold posterior).
        num_mc: weight draws per minibatch.
        loop: ``"scan"`` (the whole run is one compiled ``jax.lax.scan``: fastest for
            MLPs and small CNNs) or ``"python"`` (one compiled step called from a Python
            loop). Both draw the same minibatches and noise. On CPU, XLA runs the
            backward pass of larger convolutions inside a compiled loop many times slower
            (ResNet20: 7.2 s instead of 0.32 s a step of 64 images, measured on 2 cores):
            use ``"python"`` there.
        state: top-level entries of ``init_mu`` that are model state (e.g. a Flax model's
            ``("batch_stats",)``): held fixed at their values in ``init_mu`` (the network's
            evaluation mode), with ``sigma`` exactly 0 there.
        modes: fit every mode of ``init_mu`` at once (``jax.vmap`` of the scanned loop: needs
            ``loop="scan"``); mode ``m`` draws as a fit from ``key[m]`` and ``init_mu``'s
            ``m``-th network alone would, and the result's leaves gain the leading mode axis.

    Returns:
        A :class:`VIResult` with ``mu``, ``sigma`` and the per-epoch ELBO.

    Raises:
        ValueError: naming the input: ``x`` and ``y`` of different lengths, NaN or inf in
            them, a non-positive ``epochs``, ``batch_size``, ``num_mc``, ``n_data``,
            ``temperature``, ``std_init`` or ``prior_var``, ``init_mu``
            with NaN, a ``key`` that is not a key, a ``loglik_fn`` that fails on (or does
            not return a scalar for) a minibatch, or, with a
            :func:`~symlib.inference.likelihood.network_loglik`, data that do not fit its network.
    """
    n_data = check_minibatch_data(x, y, batch_size, epochs, num_mc, n_data)
    if loop not in LOOPS:
        raise ValueError(f"loop must be one of {LOOPS}, got {loop!r}")
    positive_float(temperature, "temperature")
    check_optimizer(optimizer)
    prior_var = positive_float(DEFAULT_PRIOR_VAR if prior_var is None else prior_var, "prior_var")
    starts = unstack(init_mu) if modes else [init_mu]
    check_key(key, "key", len(starts) if modes else None)
    if modes and loop != "scan":
        raise ValueError(f"fitting modes at once needs loop='scan', got loop={loop!r}")
    inits = [init_mean_field(m, DEFAULT_STD_INIT if std_init is None else std_init, state) for m in starts]
    x, y = jnp.asarray(x), jnp.asarray(y)
    check_loglik(loglik_fn, merge_state(inits[0][0].mu, inits[0][1]), x, y, batch_size, "init_mu")

    static = dict(loglik_fn=loglik_fn, epochs=int(epochs), batch_size=int(batch_size), n_data=n_data,
                  prior_var=float(prior_var), temperature=float(temperature), num_mc=int(num_mc), optimizer=optimizer)
    if modes:
        q, fixed = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *inits)
        history, mu, sigma = jax.vmap(lambda q1, f1, k1: _train(q1, f1, k1, x, y, **static))(q, fixed, key)
    else:
        history, mu, sigma = (_train if loop == "scan" else _train_python)(*inits[0], key, x, y, **static)
    history = np.asarray(history)
    if not np.all(np.isfinite(history)):
        warnings.warn("the ELBO became non-finite during VI; lower the learning rate", RuntimeWarning,
                      stacklevel=2)
    return VIResult(mu, sigma, history)


def check_loglik(loglik_fn: LogLikFn, params: PyTree, x, y, batch_size: int, name: str = "params") -> None:
    """Check that ``loglik_fn`` takes a minibatch of ``x``/``y`` and returns a scalar (nothing is computed).

    For a :func:`~symlib.inference.likelihood.network_loglik` the data are checked against
    the network of its ``apply_fn`` under its likelihood (e.g. labels within its classes).

    Args:
        loglik_fn: ``loglik_fn(params, xb, yb)``, the SUM of the minibatch's log-likelihoods.
        params: one network's parameters.
        x: inputs (leading axis: examples).
        y: targets (same leading axis).
        batch_size: the minibatch size tried (``x[:batch_size]``).
        name: the name of ``params`` in error messages.

    Raises:
        ValueError: naming the data or ``loglik_fn`` when they do not fit together.
    """
    if isinstance(loglik_fn, NetworkLogLik):
        check_network_data(loglik_fn.apply_fn, params, x, y, name, likelihood=loglik_fn.likelihood)
    try:
        out = jax.eval_shape(loglik_fn, params, x[:batch_size], y[:batch_size])
    except (TypeError, ValueError, IndexError) as e:
        raise ValueError(f"loglik_fn({name}, x[:batch_size], y[:batch_size]) failed: do x and y fit the "
                         f"model? {type(e).__name__}: {e}") from e
    if not (hasattr(out, "shape") and out.shape == ()):
        raise ValueError(f"loglik_fn must return a scalar (the SUM over the minibatch), got {out}")


class VIConfig(NamedTuple):
    """Mean-field VI (Bayes by backprop; :func:`fit_vi`): the optax transformation ``optimizer``
    (e.g. ``optax.adam(1e-3)``; its schedules count steps; hashed by identity, so a new
    ``optax.adam(...)`` call makes a new config and compiles the loop again) for
    ``epochs`` passes in minibatches of ``batch_size``, prior
    ``N(0, prior_var)``, initial standard deviation ``std_init`` (None: the loop's default),
    likelihood ``temperature``, ``num_mc`` weight draws per step, ``n_data`` the likelihood's
    ``N`` (None: ``len(x)``), ``loop`` ``"scan"`` or ``"python"``."""

    epochs: int
    batch_size: int
    optimizer: optax.GradientTransformation
    prior_var: float = DEFAULT_PRIOR_VAR
    std_init: float | None = None
    temperature: float = 1.0
    num_mc: int = 1
    n_data: int | None = None
    loop: str = "scan"


def fit_vi(key: jax.Array, params0: PyTree, model: Model, data: Data, config: VIConfig) -> DiagonalGaussian:
    """Mean-field VI (Bayes by backprop, module docstring) with means initialised at ``params0``.

    The likelihood is ``model.likelihood`` of ``model.apply_fn``'s outputs (evaluation mode). The model state
    (``model.state``) is held fixed at ``params0``'s values: not optimised, standard deviation
    exactly 0, carried unchanged by every draw. The Gaussian's ``info`` holds ``elbo``, the
    per-example ELBO averaged over every epoch.

    Raises:
        NonFiniteFitError: if the means, the standard deviations or the ELBO became NaN or inf.
    """
    check_fit_inputs(model, data, config, VIConfig, params0)
    with warnings.catch_warnings():  # a non-finite ELBO is an error here, named below
        warnings.filterwarnings("ignore", "the ELBO became non-finite", RuntimeWarning)
        res = _train_vi(key, params0, network_loglik(model.apply_fn, model.likelihood), data.x, data.y,
                        **config._asdict(), state=model.state)
    raise_if_not_finite((res.mu, res.sigma), "fit_vi", *_NOT_FINITE, res.elbo_history)
    raise_if_not_finite(res.elbo_history, "fit_vi", "ELBO", _NOT_FINITE[1], res.elbo_history)
    return DiagonalGaussian(res.mu, res.sigma, {"elbo": res.elbo_history})


_NOT_FINITE = ("posterior's means or standard deviations", "lower the learning rate of config.optimizer")


@fit_modes.register
def _(config: VIConfig, keys, modes, model: Model, data: Data) -> list[DiagonalGaussian]:
    for net in unstack(modes):
        check_fit_inputs(model, data, config, VIConfig, net)
    with warnings.catch_warnings():  # a non-finite ELBO is an error here, named below with its mode
        warnings.filterwarnings("ignore", "the ELBO became non-finite", RuntimeWarning)
        res = _train_vi(keys, modes, network_loglik(model.apply_fn, model.likelihood), data.x, data.y,
                        **config._asdict(), state=model.state, modes=True)
    posts = []
    for m, (mu, sigma) in enumerate(zip(unstack(res.mu), unstack(res.sigma))):
        raise_if_not_finite((mu, sigma), f"fit_modes (VI, mode {m})", *_NOT_FINITE, res.elbo_history[m])
        raise_if_not_finite(res.elbo_history[m], f"fit_modes (VI, mode {m})", "ELBO", _NOT_FINITE[1],
                            res.elbo_history[m])
        posts.append(DiagonalGaussian(mu, sigma, {"elbo": res.elbo_history[m]}))
    return posts
