"""Losses on logits shared by training and evaluation: accuracy and mean negative
log-likelihood of integer labels (JAX, jit-able)."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def accuracy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Fraction of correct predictions.

    Args:
        logits: array ``(..., C)`` of logits.
        labels: integer labels of shape ``logits.shape[:-1]``.

    Returns:
        The mean of ``argmax(logits) == labels`` (a JAX scalar).
    """
    return jnp.mean(jnp.argmax(logits, axis=-1) == labels)


def nll(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean negative log-likelihood (cross-entropy) of integer labels.

    Args:
        logits: array ``(..., C)`` of logits.
        labels: integer labels of shape ``logits.shape[:-1]``.

    Returns:
        ``-mean(log_softmax(logits)[labels])`` (a JAX scalar).
    """
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32), axis=-1))
