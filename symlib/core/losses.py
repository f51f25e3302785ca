"""Losses on logits shared by training and evaluation: accuracy and mean negative
log-likelihood of integer labels (JAX, jit-able).

Called on concrete arrays (not under ``jax.jit`` or ``jax.grad``, where the values are
traced and cannot be checked) both check their labels: integers of the logits' leading
shape in ``[0, C)``. Out of range, ``take_along_axis`` would clamp or fill silently (a label
of 10 for 10 classes gave an NLL of nan and an accuracy that counted it as wrong).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_labels


def _check_concrete(logits, labels) -> None:
    """Check ``labels`` against ``logits`` unless either is traced (inside jit or grad)."""
    if isinstance(logits, jax.core.Tracer) or isinstance(labels, jax.core.Tracer):
        return
    shape = np.shape(logits)
    if np.shape(labels) != shape[:-1]:
        raise ValueError(f"labels must have shape {shape[:-1]} to match logits {shape}, got {np.shape(labels)}")
    check_labels(labels, shape[-1])


def accuracy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Fraction of correct predictions.

    Args:
        logits: array ``(..., C)`` of logits.
        labels: integer labels of shape ``logits.shape[:-1]`` (an array or a nested list).

    Returns:
        The mean of ``argmax(logits) == labels`` (a JAX scalar).

    Raises:
        ValueError: for concrete labels of the wrong shape, not integers, or outside ``[0, C)``.
    """
    _check_concrete(logits, labels)
    labels = jnp.asarray(labels)  # a list passes the check but has no [..., None] or ==
    return jnp.mean(jnp.argmax(logits, axis=-1) == labels)


def nll(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean negative log-likelihood (cross-entropy) of integer labels.

    Args:
        logits: array ``(..., C)`` of logits.
        labels: integer labels of shape ``logits.shape[:-1]`` (an array or a nested list).

    Returns:
        ``-mean(log_softmax(logits)[labels])`` (a JAX scalar).

    Raises:
        ValueError: for concrete labels of the wrong shape, not integers, or outside ``[0, C)``.
    """
    _check_concrete(logits, labels)
    labels = jnp.asarray(labels)  # a list passes the check but has no [..., None] or ==
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32), axis=-1))
