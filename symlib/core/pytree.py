"""Pytree helpers: nested parameter dicts <-> flat ``{"a/b": leaf}`` dicts (through
``flax.traverse_util``), and pytrees <-> one flat vector.

:func:`tree_to_vector` keeps float64 on the host (numpy). ``jax.flatten_util.ravel_pytree``
is the right tool inside jitted code (:func:`ravel`), but it follows JAX's dtype rules
and would silently round float64 statistics to float32 when x64 is off.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from flax import traverse_util
from flax.core import FrozenDict
from jax.flatten_util import ravel_pytree

__all__ = ["SEP", "flatten_dict", "unflatten_dict", "tree_to_vector", "vector_to_tree", "ravel"]

SEP = "/"
PyTree = Any


def _check_keys(tree: Mapping, where: str = "the root") -> None:
    if not isinstance(tree, (dict, FrozenDict)):
        raise TypeError(f"expected nested dicts of arrays, got a {type(tree).__name__} at {where!r} (a mapping that "
                        "is not a dict; for a flax.nnx State convert it first with nnx.to_pure_dict(state))")
    for key, value in tree.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"keys must be non-empty strings, got {key!r} under {where!r}")
        if isinstance(value, Mapping):
            _check_keys(value, f"{where}/{key}" if where != "the root" else key)


def flatten_dict(tree: Mapping, sep: str = SEP) -> dict[str, Any]:
    """Nested dicts -> ``{"a/b/c": leaf}``; anything that is not a Mapping is a leaf.

    An already-flat dict comes back unchanged (its keys may hold ``sep``). Empty
    sub-dicts vanish.

    Args:
        tree: nested dicts with string keys.
        sep: the separator between path components.

    Returns:
        A flat dict from paths to leaves.

    Raises:
        TypeError: if ``tree`` is not a mapping or a key is not a non-empty string.
        ValueError: if two routes lead to the same path (``{"a/b": x, "a": {"b": y}}``).
    """
    if not isinstance(tree, Mapping):
        raise TypeError(f"expected a (nested) dict, got {type(tree).__name__}")
    _check_keys(tree)
    flat = traverse_util.flatten_dict(tree, sep=sep)
    if len(flat) != sum(1 for _ in _leaf_paths(tree)):
        seen: set[str] = set()
        for path in _leaf_paths(tree, sep):
            if path in seen:
                raise ValueError(f"path {path!r} occurs twice")
            seen.add(path)
    return dict(flat)


def _leaf_paths(tree: Mapping, sep: str = SEP, prefix: str = ""):
    for key, value in tree.items():
        path = f"{prefix}{sep}{key}" if prefix else key
        if isinstance(value, Mapping):
            yield from _leaf_paths(value, sep, path)
        else:
            yield path


def unflatten_dict(flat: Mapping[str, Any], sep: str = SEP) -> dict[str, Any]:
    """Inverse of :func:`flatten_dict`: ``{"a/b": x}`` -> ``{"a": {"b": x}}``.

    Args:
        flat: a dict from paths to leaves.
        sep: the separator between path components.

    Returns:
        The nested dicts.

    Raises:
        ValueError: for an empty path component, or a path that is both a leaf and a
            prefix of another path.
    """
    for path in flat:
        if any(part == "" for part in path.split(sep)):
            raise ValueError(f"path {path!r} has an empty component")
    paths = set(flat)
    for path in flat:
        parts = path.split(sep)
        for i in range(1, len(parts)):
            prefix = sep.join(parts[:i])
            if prefix in paths:
                raise ValueError(f"{prefix!r} is both a leaf and a prefix of {path!r}")
    return traverse_util.unflatten_dict({tuple(k.split(sep)): v for k, v in flat.items()})


def tree_to_vector(tree: PyTree, dtype=np.float64) -> np.ndarray:
    """All leaves of ``tree`` flattened (C order) and concatenated into one numpy vector.

    Args:
        tree: a pytree of arrays.
        dtype: the vector's dtype (float64 by default, on the host).

    Returns:
        The vector, in ``jax.tree_util`` leaf order (dict keys sorted:
        ``dense_0/bias, dense_0/kernel, ...``).
    """
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        return np.zeros((0,), dtype)
    return np.concatenate([np.asarray(a, dtype=dtype).reshape(-1) for a in leaves])


def vector_to_tree(vec, like: PyTree) -> PyTree:
    """Inverse of :func:`tree_to_vector`.

    Args:
        vec: vector of length equal to the total size of ``like``'s leaves.
        like: the pytree giving the structure and shapes.

    Returns:
        A pytree like ``like`` with numpy leaves of ``vec``'s dtype.

    Raises:
        ValueError: if ``vec`` has the wrong shape.
    """
    vec = np.asarray(vec)
    leaves, treedef = jax.tree_util.tree_flatten(like)
    sizes = [int(np.size(a)) for a in leaves]
    if vec.ndim != 1 or vec.shape[0] != sum(sizes):
        raise ValueError(f"vec must have shape ({sum(sizes)},) to fill the tree, got {vec.shape}")
    parts = np.split(vec, np.cumsum(sizes)[:-1]) if sizes else []
    return jax.tree_util.tree_unflatten(treedef, [p.reshape(np.shape(a)) for p, a in zip(parts, leaves)])


def ravel(tree: PyTree):
    """``jax.flatten_util.ravel_pytree``, for use inside jitted code (JAX dtypes).

    Args:
        tree: a pytree of arrays.

    Returns:
        ``(flat jax vector, unravel function)``.
    """
    return ravel_pytree(tree)
