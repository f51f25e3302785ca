"""Linear interpolation between two networks and the loss barrier along it.

``W_lambda = (1 - lambda) W_0 + lambda W_1``; the barrier (Entezari et al., 2022, as used by
Xiao et al., 2023, Sec. 2) is

    B(W_0, W_1) = max_lambda L(W_lambda) - (L(W_0) + L(W_1)) / 2,

with ``L`` the mean negative log-likelihood on a dataset. (Xiao et al. print
``(lambda - 1) W_0 + lambda W_1``, a sign typo: at lambda = 0 it would give ``-W_0``.)
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from symlib.evaluation.metrics import accuracy, nll
from symlib.core.models import Params, mlp_apply


def interpolate(params_0: Params, params_1: Params, lam: float | jax.Array) -> Params:
    """``(1 - lam) * params_0 + lam * params_1``, leaf by leaf."""
    return jax.tree_util.tree_map(lambda a, b: (1.0 - lam) * a + lam * b, params_0, params_1)


@jax.jit
def _curve(params_0, params_1, x, y, lambdas):
    def at(lam):
        logits = mlp_apply(interpolate(params_0, params_1, lam), x)
        return nll(logits, y), accuracy(logits, y)

    return jax.lax.map(at, lambdas)


def interpolation_curve(params_0: Params, params_1: Params, x: jax.Array, y: jax.Array,
                        lambdas: Sequence[float] | int = 25) -> dict[str, np.ndarray]:
    """Mean NLL and accuracy of ``W_lambda`` on ``(x, y)`` for each lambda.

    ``lambdas`` is a sequence, or a number of evenly spaced points in [0, 1].
    Returns ``{"lambda", "loss", "accuracy"}`` as numpy arrays.
    """
    lam = np.linspace(0.0, 1.0, lambdas) if isinstance(lambdas, int) else np.asarray(lambdas, float)
    if lam.ndim != 1 or lam.size < 2:
        raise ValueError(f"need at least two interpolation points, got lambdas of shape {lam.shape}")
    if jax.tree_util.tree_structure(params_0) != jax.tree_util.tree_structure(params_1):
        raise ValueError("params_0 and params_1 have different structures")
    loss, acc = _curve(params_0, params_1, jnp.asarray(x), jnp.asarray(y), jnp.asarray(lam, jnp.float32))
    return {"lambda": lam, "loss": np.asarray(loss), "accuracy": np.asarray(acc)}


def loss_barrier(lambdas: Sequence[float], losses: Sequence[float]) -> float:
    """``max_lambda L(W_lambda) - (L(W_0) + L(W_1)) / 2`` from a curve that starts at
    lambda = 0 and ends at lambda = 1. NaN losses are an error, never skipped."""
    lam, loss = np.asarray(lambdas, float), np.asarray(losses, float)
    if lam.shape != loss.shape or lam.ndim != 1 or lam.size < 2:
        raise ValueError(f"lambdas and losses must be 1-D of equal length >= 2, got {lam.shape} and {loss.shape}")
    if not (np.isclose(lam[0], 0.0) and np.isclose(lam[-1], 1.0)):
        raise ValueError(f"the curve must start at lambda=0 and end at lambda=1, got {lam[0]} .. {lam[-1]}")
    if not np.all(np.isfinite(loss)):
        raise ValueError(f"non-finite losses along the path at lambda = {lam[~np.isfinite(loss)].tolist()}")
    return float(loss.max() - 0.5 * (loss[0] + loss[-1]))


def barrier(params_0: Params, params_1: Params, x, y, lambdas: Sequence[float] | int = 25) -> float:
    """Loss barrier between two networks on ``(x, y)`` (see module docstring)."""
    curve = interpolation_curve(params_0, params_1, x, y, lambdas)
    return loss_barrier(curve["lambda"], curve["loss"])
