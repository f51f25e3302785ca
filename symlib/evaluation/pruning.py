"""Pruning by uncertainty and stitching of compact representations (Xiao et al. 2023,
Sec. 3.2 and Fig. 3 right).

* :func:`prune_by_sigma` keeps the weights with the LOWEST standard deviation ``sigma``
  (the most certain ones) and zeroes the rest of the means ``mu``: a deterministic
  network. The fraction is taken over ALL parameters of the network at once (kernels and
  biases of every layer ranked together, one global threshold), not per layer.
* :func:`pruning_curve` is the test accuracy of that network for several fractions.
* :func:`stitch` merges two summaries: the means of one with the standard deviations of
  the other, after bringing the second into the first's permutation frame (the purple
  curve of Fig. 3 right: ``mu_r`` from an ensemble, ``sigma_r`` from HMC).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import jax
import numpy as np

from symlib.core.pytree import tree_to_vector, vector_to_tree

__all__ = ["keep_mask", "num_kept", "prune_by_sigma", "pruning_curve", "stitch"]

PyTree = Any


def _check_fraction(keep_fraction) -> float:
    if isinstance(keep_fraction, bool):
        raise ValueError(f"keep_fraction must be a number in [0, 1], got {keep_fraction!r}")
    try:
        f = float(keep_fraction)
    except (TypeError, ValueError):
        raise ValueError(f"keep_fraction must be a number in [0, 1], got {keep_fraction!r}") from None
    if not 0.0 <= f <= 1.0:  # also rejects NaN
        raise ValueError(f"keep_fraction must lie in [0, 1], got {keep_fraction!r}")
    return f


def num_kept(keep_fraction: float, num_params: int) -> int:
    """``round(keep_fraction * num_params)``, rounding halves up (``floor(f * P + 1/2)``).

    The product is exact: ``f`` is read as the shortest decimal that gives the float back
    (``repr``, the number as typed), so ``0.145`` of 100 weights keeps 15, not the 14 that
    the float product ``14.499999999999998`` would round to.

    Args:
        keep_fraction: fraction of the weights kept, in [0, 1].
        num_params: total number of weights ``P``.

    Returns:
        The number of weights kept.

    Raises:
        ValueError: if ``keep_fraction`` is not a number in [0, 1].
    """
    f = _check_fraction(keep_fraction)
    return int(min(num_params, math.floor(Fraction(repr(f)) * num_params + Fraction(1, 2))))


def _check_pair(mu: PyTree, sigma: PyTree) -> None:
    mdef, sdef = jax.tree_util.tree_structure(mu), jax.tree_util.tree_structure(sigma)
    if mdef != sdef:
        raise ValueError(f"mu and sigma must have the same pytree structure, got {mdef} and {sdef}")
    leaves_m, leaves_s = jax.tree_util.tree_leaves(mu), jax.tree_util.tree_leaves(sigma)
    if not leaves_m:
        raise ValueError("mu has no parameters")
    for (path, m), s in zip(jax.tree_util.tree_flatten_with_path(mu)[0], leaves_s):
        if np.shape(m) != np.shape(s):
            raise ValueError(f"mu and sigma differ in shape at {jax.tree_util.keystr(path)}: "
                             f"{np.shape(m)} vs {np.shape(s)}")


def _order(sigma_vec: np.ndarray) -> np.ndarray:
    """Indices of the weights from lowest to highest sigma; ties keep the flat order
    (stable sort), so the result is deterministic."""
    if np.isnan(sigma_vec).any():
        raise ValueError("sigma contains NaN")
    if (sigma_vec < 0).any():
        raise ValueError("sigma must be non-negative (a standard deviation)")
    return np.argsort(sigma_vec, kind="stable")


def _mask_from_order(order: np.ndarray, k: int) -> np.ndarray:
    mask = np.zeros(order.shape[0], dtype=bool)
    mask[order[:k]] = True
    return mask


def keep_mask(sigma: PyTree, keep_fraction: float) -> PyTree:
    """Boolean pytree like ``sigma``: True for the ``round(keep_fraction * P)`` weights
    with the lowest sigma, ranked over all ``P`` parameters together. Ties are broken by
    position in the flat order of :func:`symlib.core.pytree.tree_to_vector` (sorted leaf
    names, C order within a leaf): the earlier weight is kept.

    Args:
        sigma: pytree of non-negative standard deviations (numpy or JAX).
        keep_fraction: fraction of the weights kept, in [0, 1].

    Returns:
        A boolean pytree of numpy arrays shaped like ``sigma``.

    Raises:
        ValueError: if ``keep_fraction`` is not in [0, 1], or ``sigma`` holds NaN or
            negative entries.
    """
    f = _check_fraction(keep_fraction)
    vec = tree_to_vector(sigma)
    order = _order(vec)
    return vector_to_tree(_mask_from_order(order, num_kept(f, vec.shape[0])), sigma)


def _apply_mask(mu: PyTree, mask_vec: np.ndarray) -> PyTree:
    mask = vector_to_tree(mask_vec, mu)
    return jax.tree_util.tree_map(lambda m, k: np.where(k, np.asarray(m), np.zeros((), np.asarray(m).dtype)),
                                  mu, mask)


def prune_by_sigma(mu: PyTree, sigma: PyTree, keep_fraction: float) -> PyTree:
    """The means ``mu`` with all but the lowest-sigma weights set to zero.

    Exactly ``round(keep_fraction * P)`` weights are kept (halves rounded up), where ``P``
    counts ALL parameters of the network (every kernel and bias; one global ranking, not
    per layer): those with the lowest ``sigma``, ties broken deterministically as in
    :func:`keep_mask`. ``keep_fraction`` must lie in [0, 1] (else ``ValueError``): 1
    returns ``mu`` unchanged, 0 all zeros. ``mu`` and ``sigma`` are pytrees of the same
    structure and shapes (numpy or JAX); ``sigma`` must be non-negative and free of NaN.
    Returns a pytree like ``mu`` of numpy arrays in ``mu``'s dtypes.

    Args:
        mu: pytree of means.
        sigma: pytree of standard deviations, same structure and shapes as ``mu``.
        keep_fraction: fraction of the weights kept, in [0, 1].

    Returns:
        A pytree like ``mu`` of numpy arrays in ``mu``'s dtypes.

    Raises:
        ValueError: if ``mu`` and ``sigma`` differ in structure or shapes, ``mu`` is empty,
            ``keep_fraction`` is not in [0, 1], or ``sigma`` holds NaN or negative entries.
    """
    _check_pair(mu, sigma)
    f = _check_fraction(keep_fraction)
    vec = tree_to_vector(sigma)
    mask = _mask_from_order(_order(vec), num_kept(f, vec.shape[0]))
    return _apply_mask(mu, mask)


def pruning_curve(mu: PyTree, sigma: PyTree, x, y, keep_fractions: Sequence[float],
                  apply_fn: Callable, *, batch_size: int = 2048) -> dict[str, np.ndarray]:
    """Test accuracy of :func:`prune_by_sigma` ``(mu, sigma, f)`` for each ``f`` of
    ``keep_fractions`` (Fig. 3 right of Xiao et al. 2023).

    ``apply_fn(params, x) -> logits`` is the model (e.g. :func:`symlib.core.models.mlp_apply`);
    ``y`` holds integer labels. The ranking of sigma is computed once. Returns ``{"keep_fraction":
    (F,), "num_kept": (F,) int, "accuracy": (F,)}`` as numpy arrays, in the given order.

    Args:
        mu: pytree of means.
        sigma: pytree of standard deviations like ``mu``.
        x: test inputs.
        y: integer test labels.
        keep_fractions: the fractions, each in [0, 1].
        apply_fn: ``apply_fn(params, x) -> logits``.
        batch_size: test points per forward pass.

    Returns:
        ``{"keep_fraction": (F,), "num_kept": (F,) int, "accuracy": (F,)}``.

    Raises:
        ValueError: if ``keep_fractions`` is empty or holds a value outside [0, 1], or as
            :func:`prune_by_sigma`.
    """
    from symlib.evaluation.metrics import accuracy_from_probs
    from symlib.evaluation.predictive import predict_single

    _check_pair(mu, sigma)
    fracs = np.asarray([_check_fraction(f) for f in np.atleast_1d(np.asarray(keep_fractions, dtype=object))],
                       dtype=np.float64)
    if fracs.size == 0:
        raise ValueError("keep_fractions is empty")
    vec = tree_to_vector(sigma)
    order = _order(vec)
    P = vec.shape[0]
    kept = np.array([num_kept(f, P) for f in fracs], dtype=np.int64)
    acc = np.empty(len(fracs))
    for i, k in enumerate(kept):
        pruned = _apply_mask(mu, _mask_from_order(order, int(k)))
        probs = predict_single(pruned, x, apply_fn=apply_fn, batch_size=batch_size)
        acc[i] = accuracy_from_probs(probs, y)
    return {"keep_fraction": fracs, "num_kept": kept, "accuracy": acc}


def stitch(mu_summary, sigma_summary, spec, *, key=0, max_iter: int = 100, return_perms: bool = False):
    """Means of one summary with the standard deviations of another, in a common frame.

    ``mu_summary`` and ``sigma_summary`` are :class:`~symlib.evaluation.summaries.GaussianSummary`
    objects (anything with ``.mu`` and ``.sigma``), e.g. ``q_r`` of an ensemble and
    ``q_r`` of HMC. Their reference frames are arbitrary and differ by a permutation, so
    the sigmas cannot be used as they are: first ``sigma_summary.mu`` is weight-matched
    (:func:`symlib.symmetry.matching.weight_matching`, ``key``, ``max_iter``) to
    ``mu_summary.mu``, giving ``perms``; the same ``perms`` are applied to
    ``sigma_summary.sigma`` (the summary's mean and std live in the same frame, so they
    are permuted together). Returns ``(mu_summary.mu, permuted sigma)``, ready for
    :func:`prune_by_sigma`; with ``return_perms=True``, ``(mu, sigma, perms)``.

    Args:
        mu_summary: the summary whose means are kept (``.mu`` and ``.sigma``).
        sigma_summary: the summary whose standard deviations are used.
        spec: the :class:`~symlib.symmetry.specs.PermutationSpec` of the network.
        key: seed of the weight matching.
        max_iter: iterations of the weight matching.
        return_perms: also return the permutations.

    Returns:
        ``(mu, sigma)``, or ``(mu, sigma, perms)`` with ``return_perms``.

    Raises:
        TypeError: if a summary lacks ``.mu`` or ``.sigma``.
        ValueError: if the means and standard deviations differ in structure or shapes.
    """
    from symlib.symmetry.matching import weight_matching
    from symlib.symmetry.specs import apply_permutation

    for name, s in (("mu_summary", mu_summary), ("sigma_summary", sigma_summary)):
        if not (hasattr(s, "mu") and hasattr(s, "sigma")):
            raise TypeError(f"{name} must have .mu and .sigma (a GaussianSummary), got {type(s).__name__}")
    _check_pair(mu_summary.mu, sigma_summary.sigma)
    _check_pair(sigma_summary.mu, sigma_summary.sigma)
    res = weight_matching(key, spec, mu_summary.mu, sigma_summary.mu, max_iter)
    sigma = apply_permutation(spec, res.perms, sigma_summary.sigma)
    if return_perms:
        return mu_summary.mu, sigma, res.perms
    return mu_summary.mu, sigma
