"""Gaussian noise for parameter pytrees, drawn one way everywhere: ONE float32
standard-normal vector for all the weights (a single threefry call per draw keeps
compilation fast on CPU), cut into the leaves in ``jax.tree_util`` order.

Variational inference (:mod:`symlib.inference.vi`), the predictives of a Gaussian
posterior (:mod:`symlib.evaluation.predictive`) and the marginal loss along the W2
geodesic (:mod:`symlib.evaluation.interpolation`) all draw through these functions, so
the same key gives the same network in each of them.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["num_params", "normal_vector", "split_like", "standard_normal_like", "perturb"]

PyTree = Any


def _sizes(like: PyTree) -> list[int]:
    return [int(np.prod(jnp.shape(a), dtype=np.int64)) for a in jax.tree_util.tree_leaves(like)]


def num_params(like: PyTree) -> int:
    """Number of scalars in a pytree.

    Args:
        like: a pytree of arrays.

    Returns:
        The summed sizes of its leaves.
    """
    return sum(_sizes(like))


def normal_vector(key: jax.Array, like: PyTree, num: int | None = None) -> jax.Array:
    """Flat standard-normal noise for the parameters of ``like``.

    Args:
        key: ``jax.random`` key.
        like: parameter pytree (only the leaves' shapes are used).
        num: number of draws, or ``None`` for one.

    Returns:
        float32 noise of shape ``(P,)``, or ``(num, P)``, where ``P = num_params(like)``.
    """
    total = num_params(like)
    return jax.random.normal(key, (total,) if num is None else (num, total), jnp.float32)


def split_like(flat: jax.Array, like: PyTree) -> PyTree:
    """Cut the vector ``flat`` into the leaves (shapes and dtypes) of ``like``.

    Args:
        flat: vector of length ``num_params(like)``.
        like: parameter pytree giving the structure, shapes and dtypes.

    Returns:
        A pytree with the structure of ``like``.
    """
    leaves, treedef = jax.tree_util.tree_flatten(like)
    cuts = np.cumsum(_sizes(like))[:-1].tolist()
    parts = [part.reshape(jnp.shape(a)).astype(jnp.result_type(a)) for part, a in zip(jnp.split(flat, cuts), leaves)]
    return jax.tree_util.tree_unflatten(treedef, parts)


def standard_normal_like(key: jax.Array, like: PyTree) -> PyTree:
    """One standard-normal draw shaped like ``like``.

    Args:
        key: ``jax.random`` key.
        like: parameter pytree giving the structure, shapes and dtypes.

    Returns:
        :func:`split_like` of :func:`normal_vector`: the same numbers as the flat draw.
    """
    return split_like(normal_vector(key, like), like)


def perturb(mu: PyTree, sigma: PyTree, eps: PyTree) -> PyTree:
    """The reparameterised draw of a diagonal Gaussian.

    Args:
        mu: means (a parameter pytree).
        sigma: standard deviations, same structure.
        eps: standard-normal noise, same structure (e.g. :func:`standard_normal_like`).

    Returns:
        ``mu + sigma * eps`` leaf by leaf, ``eps`` cast to the dtype of ``mu``.
    """
    return jax.tree_util.tree_map(lambda m, s, e: m + s * e.astype(jnp.result_type(m)), mu, sigma, eps)
