"""Mean-field Gaussian variational inference (Bayes by backprop), written with Flax NNX.

Bayes by backprop is the method of Blundell et al. (2015), "Weight Uncertainty in Neural
Networks" (ICML): a factorised Gaussian posterior over the weights, fitted by stochastic
gradient ascent on the ELBO through reparameterised weight samples.

The variational family is a fully factorised Gaussian over every parameter of a network,

    q(W) = prod_j N(w_j | mu_j, sigma_j^2),     sigma_j = softplus(rho_j) > 0,

with an isotropic Gaussian prior p(W) = N(0, prior_var I). ``mu`` and ``rho`` live in an
NNX module (:class:`MeanField`, or :class:`MeanFieldMLP` for the symlib MLP) as
``nnx.Param`` variables laid out *exactly* like the deterministic network's parameter
pytree, so the fitted ``mu`` and ``sigma`` can be fed unchanged to the matching,
alignment and prediction tools.

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
``temperature`` (``temperature < 1`` is a "cold" posterior). ``VIResult.elbo_history``
holds, per epoch, the mean over that epoch's minibatches of ``-NELBO_B / N`` (the
per-example ELBO, in nats per example).

One ``eps`` is drawn per forward pass: every example of a minibatch sees the same
sampled network (plain reparameterisation; no local reparameterisation trick), and
each of the ``num_mc`` samples is a fresh network. Minibatches are a fresh permutation
of the training set every epoch (the last incomplete batch is dropped), decided by
``key`` alone, so a fit is deterministic for a given key.

The training loop is functional NNX: the module is ``nnx.split`` into its graph
definition and ``nnx.Param`` state, and the whole run (epochs x minibatches) is one
``jax.lax.scan`` inside ``jax.jit`` that ``nnx.merge``-s the module, takes the gradient
of the objective with respect to the ``Param`` state and applies an ``optax.adam``
update; this is much faster on CPU than a Python loop over an ``nnx.jit``-ed step, and
independent of the ``nnx.Optimizer`` API, which changes between Flax versions. For larger
convolutional networks on CPU, ``train_vi(..., loop="python")`` calls one compiled step from
a Python loop instead (same draws): XLA runs their backward pass inside a compiled loop
many times slower.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from symlib.core.checks import check_finite_tree, check_key, positive_float
from symlib.core.gaussian import DiagonalGaussian
from symlib.core.noise import normal_vector, perturb, split_like
from symlib.core.models import Params, check_mlp_data, check_sizes, mlp_apply, mlp_init
from symlib.inference._loop import check_minibatch_data, check_network_data, check_state

PyTree = Any
LogLikFn = Callable[[PyTree, jax.Array, jax.Array], jax.Array]

DEFAULT_STD_INIT = 0.01
DEFAULT_PRIOR_VAR = 1.0

# ``nnx.data`` marks a container attribute as holding data (Flax >= 0.11); older Flax
# treats every attribute that way already.
_as_data = getattr(nnx, "data", lambda value: value)


def _is_var(v) -> bool:
    return isinstance(v, nnx.Variable)


def _value(v):
    """The array held by an ``nnx.Variable`` (``.value`` is deprecated in recent Flax)."""
    return v.get_value() if hasattr(v, "get_value") else v.value


def _values(tree):
    """Replace every ``nnx.Variable`` of ``tree`` by its array."""
    return jax.tree_util.tree_map(_value, tree, is_leaf=_is_var)


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


class MeanField(nnx.Module):
    """Diagonal Gaussian over a parameter pytree ``init_mu`` (any structure).

    ``self.mu`` and ``self.rho`` are pytrees of ``nnx.Param`` with the structure of
    ``init_mu``; ``rho`` starts at ``inverse_softplus(std_init)`` so that every
    ``sigma = softplus(rho)`` starts at ``std_init``.

    With ``state`` (top-level keys of ``init_mu``, e.g. a Flax model's ``("batch_stats",)``)
    those entries are model state, not weights: they are kept as they are in ``init_mu``
    (in ``self.fixed``, not an ``nnx.Param``, so neither differentiated nor optimised), left
    out of the noise and the KL, carried unchanged by every sampled network, and given a
    standard deviation of exactly 0 by :meth:`std`.
    """

    def __init__(self, init_mu: PyTree, *, std_init: float = DEFAULT_STD_INIT,
                 prior_var: float = DEFAULT_PRIOR_VAR, state: tuple[str, ...] = ()):
        positive_float(std_init, "std_init")
        positive_float(prior_var, "prior_var")
        state = check_state(init_mu, state, "init_mu")
        self.layout = tuple(init_mu) if state else None  # the network's top-level order (static)
        if state:
            self.fixed = _as_data({k: jax.tree_util.tree_map(lambda a: nnx.Variable(jnp.asarray(a)), init_mu[k])
                                   for k in state})
            init_mu = {k: v for k, v in init_mu.items() if k not in state}
        leaves = jax.tree_util.tree_leaves(init_mu)
        if not leaves:
            raise ValueError("init_mu has no parameters")
        for a in leaves:
            if not jnp.issubdtype(jnp.result_type(a), jnp.floating):
                raise ValueError(f"init_mu must hold floating-point arrays, got dtype {jnp.result_type(a)}")
        check_finite_tree(init_mu, "init_mu")
        rho0 = inverse_softplus(std_init)
        self.mu = _as_data(jax.tree_util.tree_map(lambda a: nnx.Param(jnp.asarray(a)), init_mu))
        self.rho = _as_data(jax.tree_util.tree_map(
            lambda a: nnx.Param(jnp.asarray(np.full(jnp.shape(a), rho0, jnp.result_type(a)))), init_mu))
        self.prior_var = float(prior_var)  # static (part of the graph definition)

    def _network(self, weights: PyTree, fixed: dict | None = None) -> PyTree:
        """The network's layout: ``weights`` with the state entries (``fixed``, default
        the module's own) back in place; ``weights`` itself without state."""
        if self.layout is None:
            return weights
        fixed = _values(self.fixed) if fixed is None else fixed
        return {k: fixed[k] if k in fixed else weights[k] for k in self.layout}

    def mean(self) -> PyTree:
        """The means.

        Returns:
            ``mu`` as a plain pytree of arrays (the network's parameter layout; the state
            entries, if any, at their fixed values).
        """
        return self._network(_values(self.mu))

    def std(self) -> PyTree:
        """The standard deviations.

        Returns:
            ``sigma = softplus(rho)`` as a plain pytree of arrays (exactly 0 on the state
            entries, if any).
        """
        sigma = jax.tree_util.tree_map(jax.nn.softplus, _values(self.rho))
        if self.layout is None:
            return sigma
        return self._network(sigma, jax.tree_util.tree_map(jnp.zeros_like, _values(self.fixed)))

    def noise(self, key: jax.Array, num: int | None = None) -> jax.Array:
        """Flat standard-normal noise: one float32 draw for all the weights (a single
        threefry call keeps compilation fast on CPU).

        Args:
            key: ``jax.random`` key.
            num: number of draws, or ``None`` for one.

        Returns:
            Noise of shape ``(n_params,)``, or ``(num, n_params)``, in the leaf order of
            ``jax.tree_util`` (:func:`symlib.core.pytree.tree_to_vector`'s order).
        """
        return normal_vector(key, self.mu, num)

    def params_from_noise(self, eps: jax.Array) -> PyTree:
        """The reparameterised network ``mu + sigma * eps`` (differentiable in mu and rho).

        Args:
            eps: flat noise of shape ``(n_params,)`` (see :meth:`noise`).

        Returns:
            A parameter pytree in the network's layout (the state entries, if any, unchanged).
        """
        mu = _values(self.mu)
        sigma = jax.tree_util.tree_map(jax.nn.softplus, _values(self.rho))
        return self._network(perturb(mu, sigma, split_like(eps, mu)))

    def sample_params(self, key: jax.Array) -> PyTree:
        """One reparameterised draw of the network's parameters.

        Args:
            key: ``jax.random`` key of the noise.

        Returns:
            ``mu + sigma * eps`` in the layout of ``mu``.
        """
        return self.params_from_noise(self.noise(key))

    def kl(self) -> jax.Array:
        """The KL term of the ELBO.

        Returns:
            Analytic ``KL(q || N(0, prior_var I))`` summed over all weights (:func:`gaussian_kl`;
            the state entries are no weights).
        """
        return gaussian_kl(_values(self.mu), jax.tree_util.tree_map(jax.nn.softplus, _values(self.rho)),
                           self.prior_var)

    def neg_elbo(self, key, loglik_fn: LogLikFn, xb, yb, n_data: int, temperature: float = 1.0,
                 num_mc: int = 1):
        """Minibatch negative ELBO per training example, ``NELBO_B / n_data`` (module docstring).

        Args:
            key: ``jax.random`` key of the ``num_mc`` weight draws (:meth:`noise`).
            loglik_fn: ``loglik_fn(params, xb, yb)``, the SUM of the minibatch's log-likelihoods.
            xb: minibatch inputs.
            yb: minibatch targets.
            n_data: number of training examples ``N``.
            temperature: likelihood temperature.
            num_mc: number of networks drawn.

        Returns:
            ``(objective, kl)``: the negative ELBO per example and the KL term.
        """
        eps = self.noise(key, None if num_mc == 1 else num_mc)
        return self.neg_elbo_from_noise(eps, loglik_fn, xb, yb, n_data, temperature)

    def neg_elbo_from_noise(self, eps: jax.Array, loglik_fn: LogLikFn, xb, yb, n_data: int,
                            temperature: float = 1.0):
        """:meth:`neg_elbo` for given standard-normal noise instead of a key.

        With the noise fixed, the estimate is a deterministic function of ``mu`` and
        ``sigma``; permuting ``mu``, ``sigma`` and ``eps`` together leaves it unchanged.

        Args:
            eps: noise of shape ``(n_params,)`` (one network) or ``(num_mc, n_params)``.
            loglik_fn: ``loglik_fn(params, xb, yb)``, the SUM of the minibatch's log-likelihoods.
            xb: minibatch inputs.
            yb: minibatch targets.
            n_data: number of training examples ``N``.
            temperature: likelihood temperature.

        Returns:
            ``(objective, kl)``: the negative ELBO per example and the KL term.
        """
        batch = xb.shape[0]
        if eps.ndim == 1:
            loglik = loglik_fn(self.params_from_noise(eps), xb, yb)
        else:
            per_draw = jax.vmap(lambda e: loglik_fn(self.params_from_noise(e), xb, yb))
            loglik = jnp.mean(per_draw(eps))
        kl = self.kl()
        nelbo = -(n_data / batch) * loglik / temperature + kl
        return nelbo / n_data, kl


class MeanFieldMLP(MeanField):
    """Mean-field Gaussian over the symlib MLP with layer sizes ``sizes``.

    ``mu`` is initialised like :func:`symlib.core.models.mlp_init` (He-normal kernels, zero
    biases) from ``rngs.params()``; every ``sigma`` starts at ``std_init``. Calling the
    module samples ONE network (one ``eps`` for the whole input batch) and returns its
    logits; the noise comes from ``key`` if given, else from ``rngs.sample()``.
    """

    def __init__(self, sizes: Sequence[int], *, rngs: nnx.Rngs, std_init: float = DEFAULT_STD_INIT,
                 prior_var: float = DEFAULT_PRIOR_VAR):
        super().__init__(mlp_init(rngs.params(), sizes), std_init=std_init, prior_var=prior_var)
        self.rngs = rngs

    def __call__(self, x: jax.Array, *, key: jax.Array | None = None) -> jax.Array:
        """Logits of one sampled network.

        Args:
            x: inputs ``(n, d_0)``.
            key: ``jax.random`` key of the noise; ``None`` draws it from ``rngs.sample()``.

        Returns:
            Logits ``(n, d_L)``.
        """
        if key is None:
            key = self.rngs.sample()
        return mlp_apply(self.sample_params(key), x)


class VIResult(NamedTuple):
    """``mu`` and ``sigma`` in the layout of the network's parameters; ``elbo_history``
    is the per-example ELBO averaged over each epoch (numpy, length ``epochs``)."""
    mu: PyTree
    sigma: PyTree
    elbo_history: np.ndarray

    @property
    def gaussian(self) -> DiagonalGaussian:
        """The fitted posterior as the library's one diagonal Gaussian, ``(mu, sigma)``."""
        return DiagonalGaussian(self.mu, self.sigma)


_STATIC = ("graphdef", "loglik_fn", "batch_size", "n_data", "temperature", "num_mc", "learning_rate")
LOOPS = ("scan", "python")


def _step(graphdef, rest, x, y, *, loglik_fn, n_data, temperature, num_mc, learning_rate):
    """The Adam step on one minibatch: ``((params, opt_state), (idx, key)) -> (carry, elbo)``."""
    opt = optax.adam(learning_rate)

    def objective(p, k, xb, yb):
        model = nnx.merge(graphdef, p, rest)
        return model.neg_elbo(k, loglik_fn, xb, yb, n_data, temperature, num_mc)[0]

    grad_fn = jax.value_and_grad(objective)

    def step(carry, inp):
        p, state = carry
        idx, k = inp
        loss, grads = grad_fn(p, k, x[idx], y[idx])
        updates, state = opt.update(grads, state, p)
        return (optax.apply_updates(p, updates), state), -loss

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


@partial(jax.jit, static_argnames=("epochs",) + _STATIC)
def _train(graphdef, params, rest, key, x, y, *, loglik_fn, epochs, batch_size, n_data,
           temperature, num_mc, learning_rate):
    opt, step = _step(graphdef, rest, x, y, loglik_fn=loglik_fn, n_data=n_data, temperature=temperature,
                      num_mc=num_mc, learning_rate=learning_rate)

    def epoch(carry, plan):
        carry, elbos = jax.lax.scan(step, carry, plan)
        return carry, jnp.mean(elbos)

    plan = _epoch_plan(key, x.shape[0], epochs, batch_size)
    (params, _), history = jax.lax.scan(epoch, (params, opt.init(params)), plan)
    model = nnx.merge(graphdef, params, rest)
    return params, history, model.mean(), model.std()


@partial(jax.jit, static_argnames=_STATIC, donate_argnums=(1,))
def _one_step(graphdef, carry, rest, x, y, idx, k, *, loglik_fn, batch_size, n_data, temperature, num_mc,
              learning_rate):
    return _step(graphdef, rest, x, y, loglik_fn=loglik_fn, n_data=n_data, temperature=temperature,
                 num_mc=num_mc, learning_rate=learning_rate)[1](carry, (idx, k))


def _train_python(graphdef, params, rest, key, x, y, *, epochs, **static):
    """:func:`_train` with the steps in a Python loop (one compiled step): the same draws."""
    opt, _ = _step(graphdef, rest, x, y, **{k: v for k, v in static.items() if k != "batch_size"})
    # the compiled step donates its carry: start from copies, not the caller's arrays
    carry, history = (jax.tree_util.tree_map(jnp.copy, params), opt.init(params)), []
    for order, keys in zip(*_epoch_plan(key, x.shape[0], epochs, static["batch_size"])):
        elbos = []
        for idx, k in zip(order, keys):
            carry, elbo = _one_step(graphdef, carry, rest, x, y, idx, k, **static)
            elbos.append(elbo)
        history.append(jnp.mean(jnp.stack(elbos)))
    model = nnx.merge(graphdef, carry[0], rest)
    return carry[0], jnp.stack(history), model.mean(), model.std()


def train_vi(key: jax.Array, init_mu: PyTree | MeanField, loglik_fn: LogLikFn, x, y, *,
           n_data: int | None = None, prior_var: float | None = None, std_init: float | None = None,
           epochs: int, batch_size: int, learning_rate: float | optax.Schedule,
           temperature: float = 1.0, num_mc: int = 1, loop: str = "scan", state: tuple[str, ...] = ()) -> VIResult:
    """Fit a mean-field Gaussian posterior by maximising the ELBO with Adam: Bayes by
    backprop (Blundell et al., 2015, "Weight Uncertainty in Neural Networks").

    The objective and the ELBO reported are defined in the module docstring.
    Deterministic for a given ``key``.

    Args:
        key: ``jax.random`` key of the minibatch orders and the weight noise.
        init_mu: the initial means (any pytree of float arrays: the network's parameter
            layout), or a :class:`MeanField` module (e.g. :class:`MeanFieldMLP`), which is
            then trained from its current ``mu``/``rho`` with its own ``prior_var`` and is
            updated in place.
        loglik_fn: ``loglik_fn(params, xb, yb)``, the SUM of the log-likelihoods of the
            minibatch (a scalar) for one network ``params``; with
            :func:`categorical_loglik`, ``x`` and ``y`` are checked against the MLP, with
            :func:`categorical_loglik_fn` against its network (e.g.
            ``categorical_loglik_fn(optunet_apply)`` for OptuNet).
        x: training inputs (leading axis: examples), finite.
        y: training targets (same leading axis).
        n_data: the ``N`` of the likelihood scaling (default ``len(x)``).
        prior_var: prior variance (default 1.0); ``None`` when a module is given.
        std_init: initial ``sigma`` (default 0.01); ``None`` when a module is given.
        epochs: passes over the training set.
        batch_size: examples per minibatch (the last incomplete batch is dropped).
        learning_rate: a float or an optax schedule (a function of the step count).
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
            evaluation mode), with ``sigma`` exactly 0 there (:class:`MeanField`). Not with a
            module (give it to :class:`MeanField`).

    Returns:
        A :class:`VIResult` with ``mu``, ``sigma`` and the per-epoch ELBO.

    Raises:
        ValueError: naming the input: ``x`` and ``y`` of different lengths, NaN or inf in
            them, a non-positive ``epochs``, ``batch_size``, ``num_mc``, ``n_data``,
            ``temperature``, ``learning_rate``, ``std_init`` or ``prior_var``, ``init_mu``
            with NaN, a ``key`` that is not a key, a ``loglik_fn`` that fails on (or does
            not return a scalar for) a minibatch, or, with :func:`categorical_loglik`,
            data that do not fit the MLP.
    """
    n_data = check_minibatch_data(x, y, batch_size, epochs, num_mc, n_data)
    if loop not in LOOPS:
        raise ValueError(f"loop must be one of {LOOPS}, got {loop!r}")
    positive_float(temperature, "temperature")
    if not callable(learning_rate):
        positive_float(learning_rate, "learning_rate")
    check_key(key, "key")
    if isinstance(init_mu, MeanField):
        if prior_var is not None or std_init is not None or state:
            raise ValueError("prior_var, std_init and state come from the MeanField module given; leave them unset")
        model = init_mu
    else:
        model = MeanField(init_mu,
                          std_init=DEFAULT_STD_INIT if std_init is None else std_init,
                          prior_var=DEFAULT_PRIOR_VAR if prior_var is None else prior_var, state=state)
    x, y = jnp.asarray(x), jnp.asarray(y)
    check_loglik(loglik_fn, model.mean(), x, y, batch_size, "init_mu")

    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    params, history, mu, sigma = (_train if loop == "scan" else _train_python)(
        graphdef, params, rest, key, x, y, loglik_fn=loglik_fn, epochs=int(epochs), batch_size=int(batch_size),
        n_data=n_data, temperature=float(temperature), num_mc=int(num_mc),
        learning_rate=learning_rate if callable(learning_rate) else float(learning_rate))
    nnx.update(model, params)
    history = np.asarray(history)
    if not np.all(np.isfinite(history)):
        warnings.warn("the ELBO became non-finite during VI; lower the learning rate", RuntimeWarning,
                      stacklevel=2)
    return VIResult(mu, sigma, history)


def check_loglik(loglik_fn: LogLikFn, params: PyTree, x, y, batch_size: int, name: str = "params") -> None:
    """Check that ``loglik_fn`` takes a minibatch of ``x``/``y`` and returns a scalar (nothing is computed).

    For :func:`categorical_loglik` the data are checked against the MLP, and for a
    :func:`categorical_loglik_fn` against the network of its ``apply_fn`` (labels
    within its classes).

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
    if loglik_fn is categorical_loglik:
        check_network_data(mlp_apply, params, x, y, name)
    elif isinstance(loglik_fn, CategoricalLogLik):
        check_network_data(loglik_fn.apply_fn, params, x, y, name)
    try:
        out = jax.eval_shape(loglik_fn, params, x[:batch_size], y[:batch_size])
    except (TypeError, ValueError, IndexError) as e:
        raise ValueError(f"loglik_fn({name}, x[:batch_size], y[:batch_size]) failed: do x and y fit the "
                         f"model? {type(e).__name__}: {e}") from e
    if not (hasattr(out, "shape") and out.shape == ()):
        raise ValueError(f"loglik_fn must return a scalar (the SUM over the minibatch), got {out}")


def _sum_log_softmax(logits: jax.Array, yb: jax.Array) -> jax.Array:
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.sum(jnp.take_along_axis(logp, yb[:, None].astype(jnp.int32), axis=-1))


def categorical_loglik(params: Params, xb: jax.Array, yb: jax.Array) -> jax.Array:
    """Categorical log-likelihood of an MLP classifier, summed over the minibatch.

    Args:
        params: one network's parameters.
        xb: inputs ``(b, d_0)``.
        yb: integer labels ``(b,)``.

    Returns:
        ``sum_i log softmax(mlp_apply(params, xb))[i, yb[i]]``, a scalar.
    """
    return _sum_log_softmax(mlp_apply(params, xb), yb)


@dataclass(frozen=True)
class CategoricalLogLik:
    """Categorical log-likelihood of the classifier ``apply_fn``, summed over the minibatch.

    ``(params, xb, yb) -> sum_i log softmax(apply_fn(params, xb))[i, yb[i]]``; frozen and
    hashable, so that equal instances share compiled loops. Build it with
    :func:`categorical_loglik_fn`.
    """

    apply_fn: Callable[[PyTree, jax.Array], jax.Array]

    def __call__(self, params: PyTree, xb: jax.Array, yb: jax.Array) -> jax.Array:
        return _sum_log_softmax(self.apply_fn(params, xb), yb)


def categorical_loglik_fn(apply_fn: Callable[[PyTree, jax.Array], jax.Array] = mlp_apply) -> LogLikFn:
    """The ``loglik_fn`` of a classifier (:func:`train_vi`, :func:`symlib.inference.sgmcmc.run_sghmc`).

    Args:
        apply_fn: ``apply_fn(params, x) -> logits (b, classes)`` of one network (e.g.
            :func:`symlib.core.cnn.optunet_apply`).

    Returns:
        A :class:`CategoricalLogLik`, ``(params, xb, yb) ->`` the summed log-likelihood;
        data passed with it to :func:`train_vi` are checked against the network.

    Raises:
        ValueError: if ``apply_fn`` is not callable.
    """
    if not callable(apply_fn):
        raise ValueError(f"apply_fn must be callable, got {apply_fn!r}")
    return CategoricalLogLik(apply_fn)


def train_mlp_vi(key: jax.Array, sizes: Sequence[int], x, y, **kwargs) -> VIResult:
    """Mean-field VI (Bayes by backprop) for the categorical MLP with layer sizes ``sizes``.

    Args:
        key: ``jax.random`` key, split into the ``mlp_init`` key of the initial means and
            the :func:`train_vi` key.
        sizes: layer widths ``[d_0, ..., d_L]``.
        x: training inputs ``(n, d_0)``, finite.
        y: integer training labels ``(n,)`` in ``[0, d_L)``.
        **kwargs: as for :func:`train_vi` (``epochs``, ``batch_size``, ``learning_rate`` required).

    Returns:
        A :class:`VIResult`, ``mu`` and ``sigma`` in the MLP's parameter layout.

    Raises:
        ValueError: naming the input: bad ``sizes`` or ``key``, ``x`` or ``y`` of the wrong
            shape, ``x`` whose width is not ``sizes[0]`` or that holds NaN or inf, labels
            that are not integers in ``[0, sizes[-1])``; and as for :func:`train_vi`.
    """
    sizes = check_sizes(sizes)
    check_mlp_data(sizes, x, y)
    check_key(key, "key")
    init_key, fit_key = jax.random.split(key)
    return train_vi(fit_key, _mlp_init(init_key, tuple(sizes)), categorical_loglik, x, y, **kwargs)


_mlp_init = jax.jit(mlp_init, static_argnums=1)
