"""MCMC convergence diagnostics for HMC runs, in parameter space and in function space.

:func:`rhat` is the split potential scale reduction (split R-hat; Gelman et al., *Bayesian Data
Analysis*, 3rd ed., Sec. 11.4): each chain is cut into halves and Gelman and Rubin's R-hat
compares the ``2M`` half-chains, so a drift that every chain shares (a trend, a chain still
warming up) raises it too. :func:`ess` is BlackJAX's effective sample size with Geyer's
initial monotone sequence (``blackjax.diagnostics.effective_sample_size``) over the whole
chains (not split). Both read the draws in float64: R-hat is computed in float64 (numpy),
the ESS in JAX's default precision after the pooled mean is subtracted in float64, so a
quantity with a large offset keeps its spread. Parameter-space R-hat is not
meaningful for BNNs (permutation symmetry makes chains disagree on every weight), so
:func:`function_space_diagnostics` applies them to functions of the predictions
(test log-likelihood, predictive probabilities), as in Izmailov et al. (2021).
:func:`coordinate_diagnostics` summarises the per-coordinate ESS and R-hat of any samples
pytree (min, median, the worst coordinates by name), e.g. to find the coordinates that a
fixed-trajectory HMC sampler leaves stuck (see ``HMCConfig``'s jitter).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.diagnostics import effective_sample_size

from symlib.core.checks import positive_int

__all__ = ["coordinate_diagnostics", "ess", "function_space_diagnostics", "rhat", "summarize_hmc"]

#: R-hat needs two draws in each half of a chain
RHAT_MIN_SAMPLES = 4
#: a quantity whose pooled standard deviation is at most this times its mean's magnitude is constant
#: (float64 rounding of the mean of identical draws, with room for any number of draws)
CONSTANT_RTOL = 64 * np.finfo(np.float64).eps


def _chains_samples(x, name: str, min_chains: int, min_samples: int) -> np.ndarray:
    """``x`` as a float64 array with leading ``(chains, samples)`` axes, checked."""
    x = np.asarray(x, np.float64)
    if x.ndim < 2:
        raise ValueError(f"{name} needs an array with leading (chains, samples) axes, got shape {x.shape}")
    if x.shape[0] < min_chains:
        raise ValueError(f"{name} needs at least {min_chains} chains, got {x.shape[0]}")
    if x.shape[1] < min_samples:
        raise ValueError(f"{name} needs at least {min_samples} samples per chain, got {x.shape[1]}")
    return x


_ess = jax.jit(partial(effective_sample_size, chain_axis=0, sample_axis=1))


def rhat(x) -> np.ndarray:
    """Split R-hat (potential scale reduction) of each quantity across chains, in float64.

    Each chain of ``n`` draws is cut into its first and its last ``n // 2`` draws (the middle
    one left out when ``n`` is odd); with ``W`` the mean of the ``2M`` half-chains' variances
    and ``B / (n // 2)`` the variance of their means, R-hat is
    ``sqrt(((n // 2 - 1) / (n // 2) * W + B / (n // 2)) / W)`` (Gelman et al., BDA3, Sec. 11.4).

    Args:
        x: array of shape ``(chains, samples, ...)`` with at least 2 chains and 4 samples.

    Returns:
        R-hat of shape ``x.shape[2:]`` (float64); close to 1 when the chains agree and do not
        drift. NaN for a constant quantity (pooled standard deviation at most
        :data:`CONSTANT_RTOL` times its mean's magnitude) or one holding NaN; inf when every
        half-chain is constant but they differ.

    Raises:
        ValueError: naming ``rhat`` if ``x`` has fewer than 2 axes, 2 chains or 4 samples.
    """
    x = _chains_samples(x, "rhat", 2, RHAT_MIN_SAMPLES)
    half = x.shape[1] // 2
    halves = np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)
    within = halves.var(axis=1, ddof=1).mean(axis=0)
    between = halves.mean(axis=1).var(axis=0, ddof=1)  # B / (n // 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.sqrt(((half - 1) / half * within + between) / within)
    constant = x.std(axis=(0, 1)) <= CONSTANT_RTOL * np.abs(x.mean(axis=(0, 1)))
    return np.where(constant, np.nan, r)


def ess(x) -> np.ndarray:
    """Effective sample size of each quantity, all chains together (Geyer's initial monotone sequence).

    BlackJAX's estimator over the whole chains (not split), on the draws minus their pooled
    mean (subtracted in float64).

    Args:
        x: array of shape ``(chains, samples, ...)`` with at least 2 samples.

    Returns:
        ESS of shape ``x.shape[2:]``; about ``chains * samples`` for independent draws, 0 for a
        quantity that never moves within a chain (a constant one included), NaN for one holding NaN.

    Raises:
        ValueError: naming ``ess`` if ``x`` has fewer than 2 axes or 2 samples.
    """
    x = _chains_samples(x, "ess", 1, 2)
    # BlackJAX squeezes its result, which would drop a quantity's own axes of size 1
    return np.asarray(_ess(jnp.asarray(x - x.mean(axis=(0, 1))))).reshape(x.shape[2:])


@partial(jax.jit, static_argnames=("apply_fn",))
def _predictive_stats(params, x_test, y_test, points, apply_fn):
    """For a (chains, batch) stack of networks: mean test log-likelihood (chains, batch) and
    the true-class probability at ``points`` (chains, batch, num_points)."""

    def one(p):
        logp = jax.nn.log_softmax(apply_fn(p, x_test), axis=-1)
        true = jnp.take_along_axis(logp, y_test[:, None], axis=-1)[:, 0]
        return jnp.mean(true), jnp.exp(true[points])

    return jax.vmap(jax.vmap(one))(params)


def _chains_and_samples(samples) -> tuple[int, int]:
    """The shared leading ``(chains, samples)`` axes of a stack of networks."""
    leaves = jax.tree_util.tree_leaves(samples)
    if not leaves:
        raise ValueError("samples has no array leaves")
    shapes = {tuple(np.shape(a)[:2]) for a in leaves}
    if any(np.ndim(a) < 2 for a in leaves) or len(shapes) != 1:
        raise ValueError("samples must have the same leading (chains, samples) axes on every leaf, "
                         f"got leading shapes {sorted(shapes)}")
    return shapes.pop()


def _test_points(point_indices, num_points: int, n: int) -> np.ndarray:
    if point_indices is None:
        return np.linspace(0, n - 1, min(num_points, n)).round().astype(np.int32)
    points = np.asarray(point_indices)
    if points.ndim != 1 or not np.issubdtype(points.dtype, np.integer) or np.any((points < 0) | (points >= n)):
        raise ValueError(f"point_indices must be a 1-D array of integer indices in [0, {n}), got {point_indices!r}")
    return points


def function_space_diagnostics(samples, x_test, y_test, apply_fn: Callable, num_points: int = 10,
                               batch_size: int = 16, point_indices=None) -> dict[str, Any]:
    """R-hat and ESS of predictions across chains.

    Per sample it computes the mean test log-likelihood and the predictive probability of
    the true class at fixed test points, streaming over ``batch_size`` samples at a time.

    Args:
        samples: parameter pytree with leading ``(chains, samples)`` axes on every leaf.
        x_test: test inputs, shape ``(n, features)``.
        y_test: integer test labels, shape ``(n,)``.
        apply_fn: ``apply_fn(params, x) -> logits`` for one network (the model, e.g.
            :func:`symlib.core.models.mlp_apply`).
        num_points: number of evenly spaced test points (when ``point_indices`` is ``None``).
        batch_size: samples per chain evaluated at once.
        point_indices: indices of the test points (overrides ``num_points``).

    Returns:
        ``point_indices`` and, for ``test_loglik`` (values of shape ``(chains, samples)``)
        and ``true_class_prob`` (``(chains, samples, num_points)``), a dict with
        ``values``, ``rhat`` (NaN with fewer than 2 chains or 4 samples) and ``ess``
        (NaN with fewer than 2 samples).

    Raises:
        ValueError: if the leaves of ``samples`` do not share leading (chains, samples)
            axes, ``x_test`` and ``y_test`` differ in length, ``num_points`` or
            ``batch_size`` is not a positive integer, or ``point_indices`` falls outside the test set.
    """
    num_points, batch_size = positive_int(num_points, "num_points"), positive_int(batch_size, "batch_size")
    num_chains, num_samples = _chains_and_samples(samples)
    x_test, y_test = jnp.asarray(x_test), jnp.asarray(y_test, jnp.int32)
    n = x_test.shape[0]
    if y_test.shape != (n,):
        raise ValueError(f"y_test must hold one label per example of x_test ({n}), got shape {y_test.shape}")
    point_indices = _test_points(point_indices, num_points, n)
    points = jnp.asarray(point_indices, jnp.int32)
    loglik, probs = [], []
    for start in range(0, num_samples, batch_size):
        batch = jax.tree.map(lambda a: jnp.asarray(a[:, start:start + batch_size]), samples)
        ll, pr = _predictive_stats(batch, x_test, y_test, points, apply_fn)
        loglik.append(np.asarray(ll))
        probs.append(np.asarray(pr))
    loglik, probs = np.concatenate(loglik, axis=1), np.concatenate(probs, axis=1)
    return {
        "point_indices": np.asarray(point_indices),
        "test_loglik": with_diagnostics(loglik),
        "true_class_prob": with_diagnostics(probs),
    }


def with_diagnostics(values: np.ndarray) -> dict[str, np.ndarray]:
    """``values`` (chains, draws, ...) with their R-hat (NaN with fewer than 2 chains or 4 draws) and
    ESS (NaN with fewer than 2 draws)."""
    nan = np.full(values.shape[2:], np.nan)
    return {
        "values": values,
        "rhat": rhat(values) if values.shape[0] >= 2 and values.shape[1] >= RHAT_MIN_SAMPLES else nan,
        "ess": ess(values) if values.shape[1] >= 2 else nan,
    }


def summarize_hmc(result) -> dict[str, Any]:
    """Sampler health of an HMC run in one JSON-friendly dict.

    Args:
        result: a :class:`symlib.inference.hmc.HMCResult`.

    Returns:
        ``mean_acceptance`` (after burn-in), ``num_divergences`` (after burn-in),
        ``num_burnin_divergences``, ``step_size`` (list, one per chain) and ``warnings``
        (the run's warning messages, a list of str).
    """
    return {
        "mean_acceptance": result.mean_acceptance,
        "num_divergences": result.num_divergences,
        "num_burnin_divergences": result.num_burnin_divergences,
        "step_size": np.asarray(result.step_size).tolist(),
        "warnings": result.warning_messages(),
    }


def _coordinate_names(samples) -> tuple[list[np.ndarray], list[str]]:
    """The leaves of ``samples`` as ``(chains, samples, coordinates)`` arrays and their path names."""
    flat, _ = jax.tree_util.tree_flatten_with_path(samples)
    if not flat:
        raise ValueError("samples has no array leaves")
    leaves, names = [], []
    for path, leaf in flat:
        leaf = np.asarray(leaf)
        leaves.append(leaf.reshape(*leaf.shape[:2], -1))
        names.append(jax.tree_util.keystr(path, simple=True, separator="/") or "samples")
    return leaves, names


def _batched(fn, x: np.ndarray, batch: int) -> np.ndarray:
    """``fn`` over the coordinate axis of ``x`` (chains, samples, coordinates), ``batch`` at a
    time; the last batch is padded with zeros to the same size (their results dropped), so
    ``fn`` compiles once (each coordinate's result depends on that coordinate alone)."""
    n = x.shape[-1]
    batch = min(batch, n)
    pad = -n % batch
    x = np.concatenate([x, np.zeros(x.shape[:-1] + (pad,), x.dtype)], axis=-1) if pad else x
    return np.concatenate([np.asarray(fn(x[..., i:i + batch])).reshape(-1) for i in range(0, n + pad, batch)])[:n]


def coordinate_diagnostics(samples, num_worst: int = 5, batch_size: int = 4096) -> dict[str, Any]:
    """Per-coordinate ESS and R-hat of a samples pytree, summarised.

    Every scalar coordinate of every leaf is a quantity of its own: its ESS (all chains
    together, :func:`ess`) and, with at least 2 chains of 4 samples, its R-hat (:func:`rhat`). The
    Monte Carlo standard error of a coordinate's posterior mean is its posterior standard
    deviation over ``sqrt(ESS)``, so the smallest ESS says how precise the least precise
    mean is. Coordinates are processed ``batch_size`` at a time, so large networks fit in
    memory.

    Args:
        samples: a pytree of arrays of shape ``(chains, samples, ...)`` (the same leading
            axes on every leaf), e.g. ``HMCResult.samples``.
        num_worst: how many of the worst coordinates to list.
        batch_size: coordinates whose ESS and R-hat are computed at once.

    Returns:
        A JSON-friendly dict: ``num_coordinates``, ``num_draws`` (chains x samples),
        ``ess_min``, ``ess_median``, ``ess_max``, ``rhat_median`` and ``rhat_max`` (all R-hat
        entries NaN with one chain or fewer than 4 samples; ``ess_min`` and ``rhat_max`` are NaN if any coordinate's
        is, the medians and ``ess_max`` skip NaN), ``worst_ess`` and ``worst_rhat``: lists of up to ``num_worst``
        ``{"coordinate": name, "ess": ..., "rhat": ...}`` with the smallest ESS and the
        largest R-hat, ``name`` being the leaf's path and the index in it, as
        ``"dense_0/kernel[2, 1]"``. A NaN ESS or R-hat (e.g. a coordinate that never moves)
        counts as the worst.

    Raises:
        ValueError: naming ``samples`` if it has no leaves, its leaves do not share leading
            ``(chains, samples)`` axes or have fewer than 2 samples; naming ``num_worst`` or
            ``batch_size`` if it is not a positive integer.
    """
    num_worst, batch_size = positive_int(num_worst, "num_worst"), positive_int(batch_size, "batch_size")
    num_chains, num_samples = _chains_and_samples(samples)
    if num_samples < 2:
        raise ValueError(f"samples needs at least 2 samples per chain, got {num_samples}")
    leaves, names = _coordinate_names(samples)
    labels = []
    for name, full in zip(names, jax.tree_util.tree_leaves(samples)):
        shape = np.shape(full)[2:]
        labels += [f"{name}[{', '.join(map(str, idx))}]" if shape else name for idx in np.ndindex(*shape)]
    coords = np.concatenate(leaves, axis=-1)  # every leaf's coordinates in one array: one shape to compile
    ess_v = _batched(ess, coords, batch_size).astype(float)
    with_rhat = num_chains >= 2 and num_samples >= RHAT_MIN_SAMPLES
    rhat_v = (_batched(rhat, coords, batch_size) if with_rhat else np.full(coords.shape[-1], np.nan)).astype(float)

    def entry(i):
        return {"coordinate": labels[i], "ess": float(ess_v[i]), "rhat": float(rhat_v[i])}

    worst_ess = np.argsort(np.where(np.isnan(ess_v), -np.inf, ess_v), kind="stable")[:num_worst]
    rhat_key = np.where(np.isnan(rhat_v), np.inf, rhat_v)
    worst_rhat = np.argsort(-rhat_key, kind="stable")[:num_worst] if with_rhat else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN medians (no R-hat)
        return {
            "num_coordinates": int(ess_v.size),
            "num_draws": int(num_chains * num_samples),
            "ess_min": float(np.min(ess_v)),
            "ess_median": float(np.nanmedian(ess_v)),
            "ess_max": float(np.nanmax(ess_v)) if not np.isnan(ess_v).all() else float("nan"),
            "rhat_median": float(np.nanmedian(rhat_v)),
            "rhat_max": float(np.max(rhat_v)),
            "worst_ess": [entry(i) for i in worst_ess],
            "worst_rhat": [entry(i) for i in worst_rhat],
        }
