"""The likelihood of a :class:`~symlib.inference.shape.Model`: how its outputs explain the targets.

Every fit of :mod:`symlib.inference` takes it from ``model.likelihood``; each type writes once
what the fits need:

- ``loglik``: the per-example log-likelihoods ``(n,)`` of the network's outputs and the
  targets (MAP's objective, the VI and SGHMC minibatch sums, HMC's density, the dense
  Laplace's full Hessian);
- ``check``: the targets against the network's output shape, before any work;
- ``output_hessian``: the Hessian of the negative log-likelihood in output space, per
  example ``(n, k, k)`` (``k`` the outputs per example): the middle factor of the GGN of
  :func:`~symlib.inference.laplace.fit_laplace`.

Two types: :class:`Categorical` (a classifier: logits ``(n, classes)``, integer labels) and
:class:`Gaussian` (a regression with homoscedastic noise of fixed standard deviation: real
targets of the outputs' shape, ``(n,)`` or ``(n, d)``). Both are frozen and hashable, so that
they can be static arguments of the compiled loops (equal likelihoods share a compilation).

:func:`network_loglik` binds a likelihood to a network: the minibatch log-likelihood
``(params, xb, yb) -> sum`` of the VI and SGHMC loops.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite, check_labels

__all__ = ["Categorical", "Gaussian", "NetworkLogLik", "network_loglik"]

PyTree = Any


@dataclass(frozen=True)
class Categorical:
    """The categorical likelihood of a classifier: ``p(y | x) = softmax(f(x))[y]``, the
    network's outputs ``f(x)`` the logits ``(n, classes)``, the targets integer labels
    ``(n,)`` in ``[0, classes)``."""

    def loglik(self, outputs: jax.Array, y: jax.Array) -> jax.Array:
        """``log softmax(outputs)[i, y_i]``, the ``(n,)`` per-example log-likelihoods."""
        logp = jax.nn.log_softmax(outputs, axis=-1)
        return jnp.take_along_axis(logp, y[:, None].astype(jnp.int32), axis=-1)[:, 0]

    def check(self, y, output_shape: tuple | None, name: str = "y") -> None:
        """Check the labels ``y`` against the logits of one example, ``output_shape``
        (``(classes,)``; ``None``: only what the network does not decide: one integer
        label ``>= 0`` per example).

        Raises:
            ValueError: naming ``name`` (or the network's outputs) when they do not fit.
        """
        if np.ndim(y) != 1:
            raise ValueError(f"{name} must be 1-D (one integer label per example) for a categorical likelihood, "
                             f"got shape {np.shape(y)}")
        if output_shape is None:
            labels = np.asarray(y)
            if not np.issubdtype(labels.dtype, np.integer):
                raise ValueError(f"{name} must hold integer class labels, got dtype {labels.dtype}")
            if labels.size and labels.min() < 0:
                raise ValueError(f"{name}: labels must be >= 0, got min label {labels.min()}")
            return
        if len(output_shape) != 1:
            raise ValueError(f"apply_fn must return logits (n, classes) for a categorical likelihood; for one example "
                             f"it returned shape {(1, *output_shape)}")
        check_labels(y, output_shape[0], name)

    def output_hessian(self, outputs: jax.Array) -> jax.Array:
        """``diag(p_i) - p_i p_i^T``, ``p_i = softmax(outputs_i)``: ``(n, classes, classes)``."""
        p = jax.nn.softmax(outputs)
        return jax.vmap(jnp.diag)(p) - p[:, :, None] * p[:, None, :]


@dataclass(frozen=True)
class Gaussian:
    """The Gaussian likelihood of a regression with homoscedastic noise of fixed standard
    deviation ``noise_std``: ``p(y | x) = N(y; f(x), noise_std^2 I)``, the network's outputs
    ``f(x)`` and the real targets ``y`` of the same shape, ``(n,)`` or ``(n, d)`` (then the
    ``d`` outputs of an example are independent given ``f(x)``).

    Raises:
        ValueError: if ``noise_std`` is not a positive finite number.
    """

    noise_std: float = 1.0

    def __post_init__(self):
        std = self.noise_std
        if isinstance(std, bool) or not isinstance(std, (int, float, np.integer, np.floating)) \
                or not math.isfinite(std) or std <= 0:
            raise ValueError(f"Gaussian(noise_std=...) must be a positive finite number, got {std!r}")
        object.__setattr__(self, "noise_std", float(std))

    def loglik(self, outputs: jax.Array, y: jax.Array) -> jax.Array:
        """``log N(y_i; outputs_i, noise_std^2 I)``, the ``(n,)`` per-example log-likelihoods."""
        r = (y - outputs) / self.noise_std
        terms = -0.5 * r**2 - (math.log(self.noise_std) + 0.5 * math.log(2.0 * math.pi))
        return terms if terms.ndim == 1 else jnp.sum(terms.reshape(terms.shape[0], -1), axis=1)

    def check(self, y, output_shape: tuple | None, name: str = "y") -> None:
        """Check the targets ``y`` against the outputs of one example, ``output_shape``
        (``()`` for targets ``(n,)``, ``(d,)`` for ``(n, d)``; ``None``: only what the network
        does not decide: finite floating-point targets ``(n,)`` or ``(n, d)``).

        Raises:
            ValueError: naming ``name`` when they do not fit.
        """
        targets = np.asarray(y)
        if targets.ndim not in (1, 2):
            raise ValueError(f"{name} must be real targets of shape (n,) or (n, d) for a Gaussian likelihood, got "
                             f"shape {targets.shape}")
        if not np.issubdtype(targets.dtype, np.floating):
            raise ValueError(f"{name} must be floating-point targets for a Gaussian likelihood, got dtype "
                             f"{targets.dtype} (integer class labels need Categorical(); else cast them)")
        check_finite(targets, name)
        if output_shape is not None and tuple(output_shape) != targets.shape[1:]:
            raise ValueError(f"{name} has shape {targets.shape} but the network's outputs have shape "
                             f"(n, {', '.join(map(str, output_shape))}) (a Gaussian likelihood takes targets of the "
                             "outputs' shape)".replace("(n, )", "(n,)"))

    def output_hessian(self, outputs: jax.Array) -> jax.Array:
        """``I / noise_std^2`` for every example: ``(n, k, k)``, ``k`` the outputs per example."""
        n, k = outputs.shape[0], int(np.prod(outputs.shape[1:], dtype=int))
        return jnp.broadcast_to(jnp.eye(k, dtype=outputs.dtype) / self.noise_std**2, (n, k, k))


@dataclass(frozen=True)
class NetworkLogLik:
    """The minibatch log-likelihood of the network ``apply_fn`` under ``likelihood``:
    ``(params, xb, yb) -> sum_i likelihood.loglik(apply_fn(params, xb), yb)_i``; frozen and
    hashable, so that equal instances share compiled loops. Build it with :func:`network_loglik`."""

    apply_fn: Callable[[PyTree, jax.Array], jax.Array]
    likelihood: Categorical | Gaussian

    def __call__(self, params: PyTree, xb: jax.Array, yb: jax.Array) -> jax.Array:
        return jnp.sum(self.likelihood.loglik(self.apply_fn(params, xb), yb))


def network_loglik(apply_fn: Callable[[PyTree, jax.Array], jax.Array],
                   likelihood: Categorical | Gaussian) -> NetworkLogLik:
    """The ``loglik_fn`` of the VI and SGHMC loops for the network ``apply_fn`` under ``likelihood``.

    Raises:
        ValueError: if ``apply_fn`` is not callable or ``likelihood`` not a likelihood.
    """
    if not callable(apply_fn):
        raise ValueError(f"apply_fn must be callable, got {apply_fn!r}")
    check_likelihood(likelihood)
    return NetworkLogLik(apply_fn, likelihood)


def check_likelihood(likelihood, name: str = "likelihood") -> None:
    """Raise ``TypeError`` naming ``name`` unless it is a :class:`Categorical` or a :class:`Gaussian`."""
    if not isinstance(likelihood, (Categorical, Gaussian)):
        raise TypeError(f"{name} must be symlib.inference.Categorical() or Gaussian(noise_std), got "
                        f"{type(likelihood).__name__}")
