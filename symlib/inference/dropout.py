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

* training (:func:`train_dropout`, or :func:`symlib.inference.training.train_map_many` /
  :func:`~symlib.inference.training.train_many` with ``stochastic_apply=dropout_apply(...)``
  for many networks at once) draws a fresh mask for every example of every minibatch, as
  a dropout layer does, through :func:`dropout_apply`;
* sampling (:func:`dropout_samples`) draws ONE mask per sample, shared by every input:
  each sample is a network in the pytree layout, the "weight-space" view of MC dropout
  that comparing posteriors in weight space (e.g. the MMD of Laurent et al.) needs. The
  usual MC-dropout prediction draws a fresh mask per input instead; for every input
  that gives the same predictive distribution in expectation (each input's mask has the
  same law), and the same Monte Carlo estimate up to the correlation between inputs.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_key, positive_int
from symlib.inference.training import TrainConfig, train_map

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
    """The dropout network of ``apply_fn``: the ``stochastic_apply`` of :func:`~symlib.inference.training.train_map`.

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


def train_dropout(params0: PyTree, data_key: jax.Array, x, y, cfg: TrainConfig, *, rate: float,
                layer: str = "dense_1", apply_fn: ApplyFn, progress: bool | None = None):
    """Train one network with dropout on the input of ``layer`` (MAP objective otherwise).

    The training loop, optimiser, prior and augmentation are those of
    :func:`symlib.inference.training.train_map`, whose objective is evaluated with a fresh
    dropout mask per example and step (:func:`dropout_apply`); the minibatch order and the
    crops are those ``train_map`` draws from ``data_key``, so ``rate=0`` trains the same
    network as ``train_map`` (to float rounding: the examples go through ``vmap``).

    Args:
        params0: initial parameters; ``params0[layer]["kernel"]`` of shape ``(in, out)``.
        data_key: ``jax.random`` key of the minibatch order, the crops and the masks.
        x: training inputs, finite (NHWC images for OptuNet).
        y: integer training labels ``(n,)``.
        cfg: the training configuration (e.g. :func:`symlib.experiments.laurent.optunet.optunet_train_config`).
        rate: dropout probability in ``[0, 1)`` (Laurent et al.: 0.2 on OptuNet).
        layer: the dense layer whose input is dropped (OptuNet's last: ``"dense_1"``).
        apply_fn: ``apply_fn(params, x) -> logits`` of one network.
        progress: show a progress bar over the epochs, as for ``train_map``.

    Returns:
        ``(params, epoch_losses)`` as for :func:`~symlib.inference.training.train_map`; the
        returned ``params`` are the deterministic weights: sample networks from them with
        :func:`dropout_samples`.

    Raises:
        ValueError: naming ``rate`` or ``layer`` if invalid; and as for ``train_map``.
    """
    check_dropout_layer(params0, layer, "params0")
    stochastic = dropout_apply(apply_fn, rate, layer)
    return train_map(params0, data_key, x, y, cfg, progress=progress, apply_fn=apply_fn, stochastic_apply=stochastic)


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
        params: one network's parameters (e.g. from :func:`train_dropout`).
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
    n_in, _ = check_dropout_layer(params, layer)
    num_samples = positive_int(num_samples, "num_samples")
    check_key(key, "key")
    kernel = jnp.asarray(params[layer]["kernel"])
    masks = dropout_masks(key, rate, (num_samples, n_in), kernel.dtype)
    stacked = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (num_samples,) + jnp.shape(a)), params)
    return _with_kernel(stacked, layer, kernel[None] * masks[:, :, None])
