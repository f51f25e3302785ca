"""MCMC convergence diagnostics for HMC runs, in parameter space and in function space.

The estimators are BlackJAX's: :func:`rhat` is Gelman and Rubin's potential scale
reduction (``blackjax.diagnostics.potential_scale_reduction``) and :func:`ess` the
effective sample size with Geyer's initial monotone sequence
(``blackjax.diagnostics.effective_sample_size``). Parameter-space R-hat is not
meaningful for BNNs (permutation symmetry makes chains disagree on every weight), so
:func:`function_space_diagnostics` applies them to functions of the predictions
(test log-likelihood, predictive probabilities), as in Izmailov et al. (2021).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.diagnostics import effective_sample_size, potential_scale_reduction

from symlib.core.models import mlp_apply

__all__ = ["ess", "function_space_diagnostics", "rhat", "summarize_hmc"]


def _chains_samples(x, name: str, min_chains: int) -> jax.Array:
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"{name} needs an array with leading (chains, samples) axes, got shape {x.shape}")
    if x.shape[0] < min_chains:
        raise ValueError(f"{name} needs at least {min_chains} chains, got {x.shape[0]}")
    if x.shape[1] < 2:
        raise ValueError(f"{name} needs at least 2 samples per chain, got {x.shape[1]}")
    return jnp.asarray(x)


_psrf = jax.jit(partial(potential_scale_reduction, chain_axis=0, sample_axis=1))
_ess = jax.jit(partial(effective_sample_size, chain_axis=0, sample_axis=1))


def rhat(x) -> np.ndarray:
    """Potential scale reduction (R-hat) over the leading (chains, samples) axes; shape x.shape[2:]."""
    return np.asarray(_psrf(_chains_samples(x, "rhat", 2)))


def ess(x) -> np.ndarray:
    """Effective sample size (all chains together) over the leading (chains, samples) axes."""
    return np.asarray(_ess(_chains_samples(x, "ess", 1)))


@partial(jax.jit, static_argnames=("apply_fn",))
def _predictive_stats(params, x_test, y_test, points, apply_fn):
    """For a (chains, batch) stack of networks: mean test log-likelihood (chains, batch) and
    the true-class probability at ``points`` (chains, batch, num_points)."""

    def one(p):
        logp = jax.nn.log_softmax(apply_fn(p, x_test), axis=-1)
        true = jnp.take_along_axis(logp, y_test[:, None], axis=-1)[:, 0]
        return jnp.mean(true), jnp.exp(true[points])

    return jax.vmap(jax.vmap(one))(params)


def function_space_diagnostics(samples, x_test, y_test, apply_fn: Callable = mlp_apply, num_points: int = 10,
                               batch_size: int = 16, point_indices=None) -> dict[str, Any]:
    """R-hat and ESS of predictions across chains.

    ``samples``: parameter pytree with leading (chains, samples) axes. Per sample it
    computes the mean test log-likelihood and the predictive probability of the true class
    at ``num_points`` fixed test points (evenly spaced indices, or ``point_indices``),
    streaming over ``batch_size`` samples at a time; returns the per-sample values and
    their R-hat (needs >= 2 chains; NaN otherwise) and ESS.
    """
    x_test, y_test = jnp.asarray(x_test), jnp.asarray(y_test, jnp.int32)
    n = x_test.shape[0]
    if point_indices is None:
        point_indices = np.linspace(0, n - 1, min(num_points, n)).round().astype(np.int32)
    points = jnp.asarray(point_indices, jnp.int32)
    leaves = jax.tree_util.tree_leaves(samples)
    num_chains, num_samples = leaves[0].shape[:2]
    loglik, probs = [], []
    for start in range(0, num_samples, batch_size):
        batch = jax.tree.map(lambda a: jnp.asarray(a[:, start:start + batch_size]), samples)
        ll, pr = _predictive_stats(batch, x_test, y_test, points, apply_fn)
        loglik.append(np.asarray(ll))
        probs.append(np.asarray(pr))
    loglik, probs = np.concatenate(loglik, axis=1), np.concatenate(probs, axis=1)
    return {
        "point_indices": np.asarray(point_indices),
        "test_loglik": _with_diagnostics(loglik),
        "true_class_prob": _with_diagnostics(probs),
    }


def _with_diagnostics(values: np.ndarray) -> dict[str, np.ndarray]:
    nan = np.full(values.shape[2:], np.nan)
    return {
        "values": values,
        "rhat": rhat(values) if values.shape[0] >= 2 and values.shape[1] >= 2 else nan,
        "ess": ess(values) if values.shape[1] >= 2 else nan,
    }


def summarize_hmc(result) -> dict[str, Any]:
    """Mean post-burn-in acceptance, divergence counts and the run's warnings (list of str)
    for a :class:`symlib.inference.hmc.HMCResult`."""
    return {
        "mean_acceptance": result.mean_acceptance,
        "num_divergences": result.num_divergences,
        "num_burnin_divergences": result.num_burnin_divergences,
        "step_size": np.asarray(result.step_size).tolist(),
        "warnings": result.warning_messages(),
    }
