"""The one diagonal Gaussian over a network's weights, and its draws.

:class:`DiagonalGaussian` is ``N(mean, diag(std^2))`` with ``mean`` and ``std`` in the
network's parameter layout (and an ``info`` of what produced it). It is what mean-field VI
fits (:func:`symlib.inference.fit_vi`), what the Gaussian summaries of a set of samples are
(``GaussianSummary.gaussian``), and what the Wasserstein alignment of
:mod:`symlib.symmetry.alignment` aligns. :func:`sample_gaussian` draws from it; the noise of
one draw comes from :mod:`symlib.core.noise`, shared with variational inference.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from symlib.core.checks import check_finite_tree, positive_int
from symlib.core.noise import perturb, standard_normal_like

PyTree = Any

__all__ = ["DiagonalGaussian", "check_gaussian", "gaussian_draws", "sample_gaussian"]


class DiagonalGaussian(NamedTuple):
    """``N(mean, diag(std^2))`` over the weights of one network.

    Attributes:
        mean: pytree of arrays (the network's parameter layout): the means.
        std: the standard deviations (``>= 0``), the same structure and shapes.
        info: what produced it reports, or None (:func:`symlib.inference.fit_vi`: ``elbo``,
            the per-example ELBO averaged over each epoch, one value per epoch).
    """

    mean: PyTree
    std: PyTree
    info: Any = None


def check_gaussian(mu: PyTree, sigma: PyTree) -> None:
    """Raise ``ValueError`` unless ``mu`` and ``sigma`` are a diagonal Gaussian: the same
    structure and shapes, finite, at least one parameter, ``sigma >= 0``."""
    mu_def, sig_def = jax.tree_util.tree_structure(mu), jax.tree_util.tree_structure(sigma)
    if mu_def != sig_def:
        raise ValueError(f"mu and sigma must have the same pytree structure, got {mu_def} and {sig_def}")
    if not jax.tree_util.tree_leaves(mu):
        raise ValueError("mu has no parameters")
    for m, s in zip(jax.tree_util.tree_leaves(mu), jax.tree_util.tree_leaves(sigma)):
        if np.shape(m) != np.shape(s):
            raise ValueError(f"mu and sigma leaves must have equal shapes, got {np.shape(m)} and {np.shape(s)}")
    check_finite_tree(mu, "mu")
    check_finite_tree(sigma, "sigma")
    if any(np.any(np.asarray(s) < 0) for s in jax.tree_util.tree_leaves(sigma)):
        raise ValueError("sigma must be non-negative (it is a standard deviation, not a log or rho)")


def _gaussian_one(key, mu, sigma):
    """One draw of N(mu, sigma^2): :func:`~symlib.core.noise.perturb` with
    :func:`~symlib.core.noise.standard_normal_like` noise."""
    return perturb(mu, sigma, standard_normal_like(key, mu))


#: ``gaussian_draws(keys, mu, sigma)``: one draw per key, stacked on a leading axis (jitted;
#: no checks: :func:`sample_gaussian` is the checked entry point)
gaussian_draws = jax.jit(jax.vmap(_gaussian_one, in_axes=(0, None, None)))


def sample_gaussian(key: jax.Array, mu: PyTree, sigma: PyTree, num_samples: int) -> PyTree:
    """Draws of the diagonal Gaussian N(mu, sigma^2) over the parameters.

    Draw ``i`` is ``mu + sigma * eps_i`` with ``eps_i`` one float32 standard normal vector
    of all the weights drawn with ``jax.random.split(key, num_samples)[i]`` and cut into
    the leaves in ``jax.tree_util`` order.

    Args:
        key: JAX PRNG key.
        mu: means, a pytree of arrays.
        sigma: standard deviations (``>= 0``), the same structure and shapes as ``mu``.
        num_samples: number of draws.

    Returns:
        The draws stacked on a leading axis of every leaf (JAX arrays).

    Raises:
        ValueError: if ``mu`` and ``sigma`` differ in structure or shapes, hold NaN or inf,
            ``sigma`` is negative, or ``num_samples`` is not a positive integer.
    """
    check_gaussian(mu, sigma)
    num_samples = positive_int(num_samples, "num_samples")
    mu = jax.tree_util.tree_map(jax.numpy.asarray, mu)
    sigma = jax.tree_util.tree_map(jax.numpy.asarray, sigma)
    return gaussian_draws(jax.random.split(key, num_samples), mu, sigma)
