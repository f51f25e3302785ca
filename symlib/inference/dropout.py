"""Monte Carlo dropout on the input of one dense layer (Gal & Ghahramani, 2016).

Laurent et al. (ICLR 2024, App. B.1) drop the input of OptuNet's last layer with
probability ``p = 0.2``, both during training and at test time. Dropping input ``j`` of a
dense layer ``h -> h @ W + b`` (``W`` of shape ``(in, out)``) and rescaling the kept
inputs by ``1 / (1 - p)`` is the same as multiplying row ``j`` of ``W`` by the mask
``m_j / (1 - p)``, ``m_j ~ Bernoulli(1 - p)``::

    (h * m / (1 - p)) @ W + b  ==  h @ (diag(m / (1 - p)) W) + b,

so a dropout network is a random network in weight space whose other parameters are
fixed. Both halves of this module work on that view, for any parameter pytree whose
``layer`` holds a 2-D ``"kernel"`` ``(in, out)``:

* training (:func:`symlib.inference.fit_dropout`, or :func:`symlib.inference.fit_ensemble`
  with ``Model(apply_fn, train_apply_fn=dropout_apply(...))`` for many networks at once) draws
  a fresh mask for every example of every minibatch, as a dropout layer does, through :func:`dropout_apply`;
* sampling (:func:`dropout_samples`) draws ONE mask per sample, shared by every input:
  each sample is a network in the pytree layout, the "weight-space" view of MC dropout
  that comparing posteriors in weight space (e.g. the MMD of Laurent et al.) needs. The
  usual MC-dropout prediction draws a fresh mask per input instead; for every input
  that gives the same predictive distribution in expectation (each input's mask has the
  same law), and the same Monte Carlo estimate up to the correlation between inputs.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_key, positive_int
from symlib.inference.shape import Data, Model, NonFiniteFitError, check_fit_inputs, sample
from symlib.inference.training import TrainConfig, fit_map

PyTree = Any
ApplyFn = Callable[[PyTree, jax.Array], jax.Array]


def check_rate(rate) -> float:
    """The dropout probability as a float.

    Args:
        rate: the probability ``p`` of dropping an input.

    Returns:
        ``float(rate)``.

    Raises:
        ValueError: naming ``rate`` unless it is a real number in ``[0, 1)``.
    """
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"rate must be a dropout probability in [0, 1), got {rate!r}")
    return float(rate)


def check_dropout_layer(params: PyTree, layer: str, name: str = "params", batch_dims: int = 0) -> tuple[int, int]:
    """Check that ``params[layer]["kernel"]`` is a dense kernel ``(in, out)``.

    Args:
        params: a parameter pytree (a mapping of layers).
        layer: the name of the dense layer whose input is dropped.
        name: the name of ``params`` in error messages.
        batch_dims: leading axes to skip (1 for a stack of networks).

    Returns:
        ``(in, out)``, the kernel's shape after the leading axes.

    Raises:
        ValueError: naming ``layer`` if ``params`` has no such layer with a kernel of
            ``2 + batch_dims`` dimensions.
    """
    if not isinstance(params, Mapping) or not isinstance(params.get(layer), Mapping) \
            or "kernel" not in params[layer]:
        layers = sorted(params) if isinstance(params, Mapping) else type(params).__name__
        raise ValueError(f"layer={layer!r}: {name} has no such layer with a 'kernel' (layers: {layers})")
    shape = tuple(np.shape(params[layer]["kernel"]))
    if len(shape) != 2 + batch_dims:
        raise ValueError(f"layer={layer!r} must be a dense layer with a kernel (in, out); {name}[{layer!r}]['kernel'] "
                         f"has shape {shape}")
    return shape[batch_dims:]


def dropout_masks(key: jax.Array, rate: float, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Scaled dropout masks ``Bernoulli(1 - rate) / (1 - rate)``, of mean 1.

    Args:
        key: ``jax.random`` key.
        rate: dropout probability in ``[0, 1)``.
        shape: shape of the masks.
        dtype: dtype of the masks.

    Returns:
        An array of ``shape`` with values ``0`` (probability ``rate``) or ``1 / (1 - rate)``.
    """
    keep = jax.random.bernoulli(key, 1.0 - rate, shape)
    return keep.astype(dtype) / jnp.asarray(1.0 - rate, dtype)


def _with_kernel(params: PyTree, layer: str, kernel: jax.Array) -> PyTree:
    """``params`` with ``params[layer]["kernel"]`` replaced (other leaves shared)."""
    return {**params, layer: {**params[layer], "kernel": kernel}}


@dataclass(frozen=True)
class DropoutApply:
    """``apply_fn`` with dropout on the input of ``layer``, a fresh mask per example.

    Calling it as ``(params, x, key)`` returns the logits of every example ``i`` under
    the network whose ``layer`` kernel has its rows multiplied by mask ``i``, the masks
    :func:`dropout_masks` ``(key, rate, (n, in))`` (``apply_fn`` is ``vmap``-ed over the
    examples). Frozen and hashable, so that equal instances share a compiled training loop.
    Build it with :func:`dropout_apply`.
    """

    apply_fn: ApplyFn
    rate: float
    layer: str = "dense_1"

    def __call__(self, params: PyTree, x: jax.Array, key: jax.Array) -> jax.Array:
        kernel = params[self.layer]["kernel"]
        masks = dropout_masks(key, self.rate, (x.shape[0], kernel.shape[0]), kernel.dtype)

        def one(mask, xi):
            return self.apply_fn(_with_kernel(params, self.layer, kernel * mask[:, None]), xi[None])[0]

        return jax.vmap(one)(masks, x)


def dropout_apply(apply_fn: ApplyFn, rate: float, layer: str = "dense_1") -> DropoutApply:
    """The dropout network of ``apply_fn``: the ``stochastic_apply`` of :func:`~symlib.inference.training.fit_map`.

    Args:
        apply_fn: ``apply_fn(params, x) -> logits`` of one network, whose ``params[layer]``
            is a dense layer with a ``"kernel"`` ``(in, out)`` applied to its input as
            ``h @ kernel`` (e.g. :func:`symlib.core.cnn.optunet_apply`).
        rate: dropout probability in ``[0, 1)``.
        layer: the dense layer whose input is dropped.

    Returns:
        A :class:`DropoutApply`, ``(params, x, key) -> logits``.

    Raises:
        ValueError: naming ``rate`` or ``layer`` if they are invalid.
    """
    if not callable(apply_fn):
        raise ValueError(f"apply_fn must be callable, got {apply_fn!r}")
    if not isinstance(layer, str):
        raise ValueError(f"layer must be a layer name, got {layer!r}")
    return DropoutApply(apply_fn, check_rate(rate), layer)


def dropout_samples(key: jax.Array, params: PyTree, num_samples: int, *, rate: float,
                    layer: str = "dense_1") -> PyTree:
    """MC-dropout networks in weight space: ``num_samples`` copies of ``params`` with masked ``layer`` rows.

    Sample ``s`` is ``params`` with the rows of ``params[layer]["kernel"]`` multiplied by
    the mask ``dropout_masks(key, rate, (num_samples, in))[s]``: a dropped input's row is
    exactly zero, a kept one is scaled by ``1 / (1 - rate)``, so the mean kernel over the
    masks is ``params[layer]["kernel"]``. One mask per sample is shared by all inputs (see
    the module docstring); every other leaf (the layer's bias included) is repeated.

    Args:
        key: ``jax.random`` key of the masks.
        params: one network's parameters (e.g. the ``params`` of :func:`fit_dropout`'s posterior).
        num_samples: number of networks.
        rate: dropout probability in ``[0, 1)``.
        layer: the dense layer whose input is dropped.

    Returns:
        The networks stacked on a leading axis of size ``num_samples`` (the layout of
        ``params``).

    Raises:
        ValueError: naming ``rate``, ``layer``, ``num_samples`` or ``key`` if invalid.
    """
    rate = check_rate(rate)
    check_dropout_layer(params, layer)
    num_samples = positive_int(num_samples, "num_samples")
    check_key(key, "key")
    return _masked_copies(key, params, num_samples, rate, layer)


@partial(jax.jit, static_argnums=(2, 3, 4))
def _masked_copies(key, params, num_samples: int, rate: float, layer: str):
    """:func:`dropout_samples`' draws as one compiled program (the same numbers as op by op)."""
    kernel = jnp.asarray(params[layer]["kernel"])
    masks = dropout_masks(key, rate, (num_samples, kernel.shape[0]), kernel.dtype)
    stacked = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (num_samples,) + jnp.shape(a)), params)
    return _with_kernel(stacked, layer, kernel[None] * masks[:, :, None])


class DropoutDraw(NamedTuple):
    """MC-dropout networks drawn with the model's own dropout (:class:`DropoutPosterior`
    with a ``dropout_apply_fn``): the trained network ``params`` and the dropout key of every
    draw, ``rng`` (raw key data, :func:`jax.random.key_data`). Stacked on a leading axis by
    :func:`sample`; evaluate ONE draw with :attr:`DropoutPosterior.predict_fn`."""

    params: PyTree
    rng: jax.Array


@dataclasses.dataclass(frozen=True)
class DropoutPredict:
    """``(draw, x) -> logits`` of one :class:`DropoutDraw`: the model's
    ``dropout_apply_fn(draw.params, x, key)`` with the draw's key. Frozen and hashable, so it
    can be the ``apply_fn`` of :func:`symlib.evaluation.predict_from_samples`."""

    dropout_apply_fn: Callable[[PyTree, jax.Array, jax.Array], jax.Array]

    def __call__(self, draw: DropoutDraw, x: jax.Array) -> jax.Array:
        return self.dropout_apply_fn(draw.params, x, jax.random.wrap_key_data(draw.rng))


class DropoutPosterior(NamedTuple):
    """MC dropout: the trained weights and how dropout is drawn at prediction time.

    Two routes (:func:`fit_dropout`):

    - the model's own dropout (``dropout_apply_fn``, a :class:`Model` field; ``rate`` and
      ``layer`` ``None``): a draw is a :class:`DropoutDraw`, the network and one dropout key.
      Evaluate draws with :attr:`predict_fn` (``predict_from_samples(sample(key, post, n), x,
      apply_fn=post.predict_fn)``): every draw's key draws the masks of the model's own
      ``nn.Dropout`` layers, a fresh mask per input of a batch (the same for the same
      position in every batch of that draw). Any dropout layout works and the state (running
      statistics) is used as the model defines; but a draw is not a network in weight space,
      so the weight-space tools (alignment, MMD) do not take it, and ``model.apply_fn`` does
      not evaluate it.
    - a layer name (``rate``, ``layer``; symlib's pure-function networks, whose ``layer`` is a
      top-level dense layer): a draw is a network in weight space, ``params`` with one mask
      on the rows of ``params[layer]["kernel"]`` (:func:`~symlib.inference.dropout.dropout_samples`),
      evaluated with the model's ``apply_fn``; only that layer's input is dropped.

    ``info``: what the training reports (:func:`fit_dropout`: ``epoch_loss``), or None.
    """

    params: PyTree
    rate: float | None
    layer: str | None = "dense_1"
    dropout_apply_fn: Callable[[PyTree, jax.Array, jax.Array], jax.Array] | None = None
    info: Any = None

    @property
    def predict_fn(self) -> DropoutPredict:
        """``(draw, x) -> logits`` of one :class:`DropoutDraw` (the model's-dropout route)."""
        if self.dropout_apply_fn is None:
            raise ValueError("this DropoutPosterior drops a layer's input: its draws are networks in weight space; "
                             "evaluate them with the model's apply_fn")
        return DropoutPredict(self.dropout_apply_fn)


class DropoutConfig(NamedTuple):
    """MC dropout: the MAP training ``train``; for a model without ``dropout_apply_fn``
    (the layer route of :func:`fit_dropout`), the dropout ``rate`` and the top-level
    ``layer`` whose input is dropped (None: ``"dense_1"``). A model with a ``dropout_apply_fn``
    uses its own dropout (its rate and layers): leave ``rate`` and ``layer`` None."""

    train: TrainConfig
    rate: float | None = None
    layer: str | None = None


def fit_dropout(key: jax.Array, params0: PyTree, model: Model, data: Data, config: DropoutConfig) -> DropoutPosterior:
    """MC dropout: training with dropout from ``params0`` (:func:`~symlib.inference.training.fit_map`
    with a random training forward, ``key`` its data key), dropout again at prediction time.

    Two routes (:class:`DropoutPosterior`):

    - ``model.dropout_apply_fn`` given: the model's own dropout (its ``nn.Dropout`` layers and
      rates; ``config.rate`` and ``config.layer`` must be None). Training is ``fit_map``'s with
      ``model.train_apply_fn`` (the model's dropout and state updates, a fresh key per step;
      without it ``dropout_apply_fn`` with the state held); the draws are
      :class:`DropoutDraw`\\ s, evaluated with the posterior's ``predict_fn``.
    - otherwise the input of the top-level dense layer ``config.layer`` (None: ``"dense_1"``) is
      dropped at ``config.rate`` during training, a fresh mask per example and step
      (:func:`dropout_apply`; the minibatch order and the crops are those ``fit_map`` draws from
      ``key``, so ``rate=0`` trains the network ``fit_map`` trains, to float rounding); for
      symlib's pure-function networks only, so refused for a model with a ``train_apply_fn``
      or state (its own dropout would be ignored); the draws are networks in weight space
      (:func:`dropout_samples`).

    The posterior's ``info`` holds ``epoch_loss``, the mean objective of every epoch.

    Raises:
        ValueError: naming the input: a bad ``config.rate`` or ``config.layer``, a route's
            settings on the other route's model; and as for ``fit_map``.
        NonFiniteFitError: if the training diverged (naming the epoch and the fix).
    """
    check_fit_inputs(model, data, config, DropoutConfig, params0)
    if model.dropout_apply_fn is not None:
        if config.rate is not None or config.layer is not None:
            raise ValueError("the model has a dropout_apply_fn: it drops with its own nn.Dropout layers and rates; "
                             "leave config.rate and config.layer None")
        train_fn = model.train_apply_fn if model.train_apply_fn is not None else model.dropout_apply_fn
        rate, layer = None, None
    else:
        if model.train_apply_fn is not None or model.state:
            raise ValueError("a model with a train_apply_fn or state has its own dropout: give its MC-dropout "
                             "forward as model.dropout_apply_fn (dropout on, state in evaluation mode); the layer "
                             "route (config.rate, config.layer) is for symlib's pure-function networks")
        if config.rate is None:
            raise ValueError("config.rate is required when the model has no dropout_apply_fn (the layer route)")
        layer = "dense_1" if config.layer is None else config.layer
        check_dropout_layer(params0, layer, "params0")
        rate = check_rate(config.rate)
        train_fn = dropout_apply(model.apply_fn, rate, layer)
    try:
        trained = fit_map(key, params0, Model(model.apply_fn, model.state, train_apply_fn=train_fn,
                                              likelihood=model.likelihood), data, config.train)
    except NonFiniteFitError as e:
        raise NonFiniteFitError(f"fit_dropout, training with dropout (config.train): {e}") from None
    return DropoutPosterior(trained.params, rate, layer, model.dropout_apply_fn, trained.info)


@sample.register
def _(posterior: DropoutPosterior, key, n):
    if posterior.dropout_apply_fn is None:
        return dropout_samples(key, posterior.params, n, rate=posterior.rate, layer=posterior.layer)
    n = positive_int(n, "n")
    stack = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (n, *jnp.shape(a))), posterior.params)
    keys = jax.random.split(key, n)
    return DropoutDraw(stack, jax.random.key_data(keys) if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key) else keys)
