"""Input checks shared by every subpackage. Each raises ``ValueError`` (``TypeError`` for a
wrong container type) with a message that names the offending input, so a researcher
sees *which* argument is wrong and why, not an error from deep inside numpy or scipy."""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "positive_int",
    "check_key",
    "positive_float",
    "check_finite",
    "check_finite_tree",
    "check_labels",
    "mlp_layer_names",
    "warn_raw_images",
]


def positive_int(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """``value`` as an ``int`` >= 1 (bools rejected); ``None`` passes if ``allow_none``.

    Args:
        value: the value to check (a Python or numpy integer).
        name: how the error message calls it.
        allow_none: accept ``None`` and return it.

    Returns:
        ``int(value)``, or ``None``.

    Raises:
        ValueError: naming ``name`` and the value, if it is not a positive integer.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        extra = " or None" if allow_none else ""
        raise ValueError(f"{name} must be a positive integer{extra}, got {value!r}")
    return int(value)


def positive_float(value: Any, name: str) -> float:
    """``value`` as a finite ``float`` > 0.

    Args:
        value: the value to check (a scalar).
        name: how the error message calls it.

    Returns:
        ``float(value)``.

    Raises:
        ValueError: naming ``name`` and the value otherwise.
    """
    try:
        ok = np.ndim(value) == 0 and not isinstance(value, bool) and math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_finite(array: Any, name: str) -> None:
    """Check that a floating array holds no NaN or inf (integer and boolean arrays
    always pass). Works on numpy and concrete JAX arrays, including the ml_dtypes floats
    (``bfloat16``, ``float8_*``) that numpy's own dtype hierarchy does not count as floating.

    Args:
        array: the array to check.
        name: how the error message calls it.

    Returns:
        None.

    Raises:
        ValueError: naming ``name`` and the number of non-finite entries.
    """
    arr = np.asarray(array)
    if jnp.issubdtype(arr.dtype, jnp.inexact) and not np.all(np.isfinite(arr)):  # jnp knows bfloat16
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains NaN or inf ({bad} of {arr.size} entries)")


def check_finite_tree(tree: Any, name: str) -> None:
    """:func:`check_finite` on every leaf of a pytree.

    Args:
        tree: the pytree to check.
        name: how the error message calls it; the message adds the leaf's path
            (e.g. ``params['dense_0']['kernel']``).

    Returns:
        None.

    Raises:
        ValueError: naming the first leaf that holds NaN or inf.
    """
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        check_finite(leaf, f"{name}{jax.tree_util.keystr(path)}")


def check_labels(labels: Any, num_classes: int, name: str = "labels") -> np.ndarray:
    """Integer class labels in ``[0, num_classes)`` as a numpy array.

    Args:
        labels: array of class indices.
        num_classes: the number of classes (the network's output width).
        name: how the error message calls the labels.

    Returns:
        The labels as a numpy array.

    Raises:
        ValueError: naming ``name`` if the labels are not integers or fall outside the range.
    """
    y = np.asarray(labels)
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"{name} must be integer class indices, got dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"{name} must lie in [0, {num_classes}) for {num_classes} classes, "
                         f"got values in [{int(y.min())}, {int(y.max())}]")
    return y


#: appended to the layout errors of symlib's MLP-only functions: where any model goes instead
GENERIC_ROUTE = (". This function takes symlib's MLP layout only; for any other model use the spec-driven "
                 "route: a PermutationSpec / ScalingSpec of the model (symlib.symmetry.specs, symlib.symmetry.scaling) "
                 "with its apply_fn(params, x), e.g. symlib.symmetry.min_mass, identifiable, "
                 "sort_neurons, check_spec_invariance, and symlib.evaluation.barrier(..., apply_fn=...)")


def mlp_layer_names(params: Any, name: str = "params") -> list[str]:
    """Layer names ``dense_0 .. dense_{L-1}`` of an MLP parameter dict (the layout of
    :mod:`symlib.core.models`), input to output, after checking the layout: a mapping of
    layers, each a mapping with exactly ``kernel`` and ``bias``.

    Args:
        params: the parameter dict to check.
        name: how the error message calls it.

    Returns:
        The layer names, input to output.

    Raises:
        TypeError: if ``params`` (or a layer) is not a mapping.
        ValueError: naming the layers found if the layout is not ``dense_0..dense_{L-1}``.
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"{name} must be a dict of layers, got {type(params).__name__}")
    try:
        names = sorted(params, key=lambda n: int(str(n).rsplit("_", 1)[-1]))
    except ValueError:
        names = None
    expected = [f"dense_{i}" for i in range(len(params))]
    if not names or names != expected:
        raise ValueError(f"MLP {name} must have layers dense_0..dense_{max(len(params) - 1, 0)}, "
                         f"got {sorted(map(str, params))}{GENERIC_ROUTE}")
    for n in names:
        layer = params[n]
        if not isinstance(layer, Mapping) or set(layer) != {"kernel", "bias"}:
            got = sorted(layer) if isinstance(layer, Mapping) else type(layer).__name__
            raise ValueError(f"{name}[{n!r}] must hold exactly 'kernel' and 'bias', got {got}{GENERIC_ROUTE}")
    return names


def check_key(key: Any, name: str, num: int | None = None) -> None:
    """Check that ``key`` is one ``jax.random`` key, or ``num`` keys stacked on a leading axis.

    Typed keys (``jax.random.key``) and raw ``uint32`` keys (``jax.random.PRNGKey``) pass.

    Args:
        key: the key (array) to check.
        name: how the message calls it.
        num: the number of keys expected, or ``None`` for a single key.

    Returns:
        None.

    Raises:
        ValueError: naming ``name`` if ``key`` is not a key of that shape.
    """
    try:
        batch = tuple(jax.random.key_data(key).shape[:-1])
    except (TypeError, ValueError):
        batch = None
    want = () if num is None else (num,)
    if batch != want:
        what = "a jax.random key" if num is None else f"{num} jax.random keys stacked on a leading axis"
        raise ValueError(f"{name} must be {what}, got {type(key).__name__} of shape {np.shape(key)}")


def warn_raw_images(x, name: str = "x") -> None:
    """Warn when ``x`` holds raw 8-bit images (dtype uint8, values up to 255): networks are
    trained on floats, usually scaled to [0, 1], and raw pixels give confident nonsense (a
    loss barrier of 12.6 nats on a network trained on [0, 1]) rather than an error. Token ids
    (int32/int64, for an embedding) are not warned about."""
    if np.asarray(x).dtype == np.uint8:
        warnings.warn(f"{name} holds uint8 values (up to {int(np.max(x))}): if the network was trained on floats "
                      f"scaled to [0, 1], convert them first ({name} / 255.0)", UserWarning, stacklevel=3)
