"""From raw uint8 images to model inputs: pixel scaling, the train/validation split, and
:func:`load_split`, which returns ready-to-use arrays."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from symlib.data.files import DATASETS, N_EXAMPLES, SOURCES, check_choice
from symlib.data.mnist import load_mnist

__all__ = ["preprocess", "train_val_split", "load_split"]

_N_PIXELS = 28 * 28
_KEYS = ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")


def _count(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """``value`` as an ``int`` >= 0; ``None`` passes if ``allow_none``.

    Unlike :func:`symlib.core.checks.positive_int`, 0 is allowed and a non-integer is a
    ``TypeError`` (as it has always been here).
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def preprocess(images: Any) -> np.ndarray:
    """Scale uint8 pixels to float32 in [0, 1] and flatten each image.

    This is the one place where pixel scaling happens; non-uint8 input is rejected to
    avoid scaling twice.

    Args:
        images: uint8 array of shape ``(n, 28, 28)`` (or any ``(n, ...)``).

    Returns:
        float32 array of shape ``(n, 784)`` (``(n, prod(...))``), ``pixel / 255``.

    Raises:
        ValueError: if ``images`` is not uint8 or has fewer than 2 dimensions.
    """
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(f"preprocess expects raw uint8 pixels, got dtype {images.dtype}")
    if images.ndim < 2:
        raise ValueError(f"preprocess expects shape (n, ...), got {images.shape}")
    flat = images.reshape(images.shape[0], int(np.prod(images.shape[1:])))
    return flat.astype(np.float32) / np.float32(255.0)


#: per-channel pixel mean and standard deviation (of pixels in [0, 1]) used to standardise
#: each dataset, as in the papers' code (MNIST: torchvision's usual 0.1307 / 0.3081)
CHANNEL_STATS = {
    "mnist": ((0.1307,), (0.3081,)),
    "fashion_mnist": ((0.2860,), (0.3530,)),
}


def standardize(x: Any, dataset: str) -> Any:
    """Standardise pixels in [0, 1]: ``(x - mean) / std`` with :data:`CHANNEL_STATS` of ``dataset``.

    Laurent et al.'s OptuNet sees MNIST standardised this way (torch-uncertainty's MNIST
    data module); the MLP chapters use the raw [0, 1] pixels.

    Args:
        x: pixels in [0, 1], flat ``(n, d)`` (one channel) or images ``(..., channels)``;
            a Python float is fine (``standardize(0.0, "mnist")``: a black pixel).
        dataset: a key of :data:`CHANNEL_STATS`.

    Returns:
        ``x`` standardised, same shape (numpy or JAX array, or float).

    Raises:
        ValueError: for a dataset without statistics, or raw uint8 pixels (up to 255, not [0, 1]).
    """
    if dataset not in CHANNEL_STATS:
        raise ValueError(f"no channel statistics for dataset {dataset!r}; known: {sorted(CHANNEL_STATS)}")
    if getattr(x, "dtype", None) == np.uint8:
        raise ValueError("standardize expects pixels in [0, 1], got raw uint8 pixels: scale them first "
                         "(preprocess, or x / 255)")
    mean, std = CHANNEL_STATS[dataset]
    if len(mean) == 1:
        return (x - mean[0]) / std[0]
    return (x - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)


def train_val_split(n: int, val_size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Deterministically split ``range(n)`` into training and validation indices.

    A permutation from ``np.random.default_rng(seed)`` is drawn; its first ``val_size``
    entries are the validation indices and the rest the training indices. Taking a prefix
    of ``train_idx`` gives a random subsample.

    Args:
        n: number of examples (>= 0).
        val_size: number of validation examples, 0..``n``.
        seed: seed of the permutation.

    Returns:
        ``(train_idx, val_idx)``: int64, in the permuted order, disjoint, together covering
        ``range(n)``.

    Raises:
        TypeError: if ``n`` or ``val_size`` is not an integer.
        ValueError: if either is negative or ``val_size > n``.
    """
    n = _count(n, "n")
    val_size = _count(val_size, "val_size")
    if val_size > n:
        raise ValueError(f"val_size={val_size} exceeds the number of examples n={n}")
    perm = np.random.default_rng(seed).permutation(n).astype(np.int64)
    return perm[val_size:], perm[:val_size]


def _empty() -> tuple[np.ndarray, np.ndarray]:
    """Zero model inputs and labels."""
    return np.zeros((0, _N_PIXELS), np.float32), np.zeros((0,), np.int32)


def _prepare(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Model inputs (:func:`preprocess`) and int32 labels."""
    return preprocess(images), labels.astype(np.int32)


def _too_many(what: str, avail: int, dataset: str, split: str, source: str) -> ValueError:
    """The error for asking more examples of a split than it holds."""
    hint = f" (use source='full' for up to {N_EXAMPLES[split]})" if source == "subset" else ""
    return ValueError(
        f"requested {what} {'training' if split == 'train' else 'test'} examples, "
        f"but only {avail} are available in the {dataset} {split} split of "
        f"source={source!r}{hint}"
    )


def _train_and_val(dataset: str, source: str, n_train: int | None, n_val: int,
                   seed: int) -> tuple[np.ndarray, ...]:
    """``(x_train, y_train, x_val, y_val)`` from the train split (not loaded if both are empty)."""
    if n_train == 0 and n_val == 0:
        return _empty() + _empty()
    images, labels = load_mnist(dataset, "train", source)
    avail = images.shape[0]
    want = n_val + (n_train if n_train is not None else 0)
    if want > avail:
        raise _too_many(f"n_train={n_train} + n_val={n_val} = {want}", avail, dataset, "train", source)
    train_idx, val_idx = train_val_split(avail, n_val, seed)
    if n_train is not None:
        train_idx = train_idx[:n_train]
    return _prepare(images[train_idx], labels[train_idx]) + _prepare(images[val_idx], labels[val_idx])


def _test(dataset: str, source: str, n_test: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(x_test, y_test)``: the first ``n_test`` test examples (not loaded if 0)."""
    if n_test == 0:
        return _empty()
    images, labels = load_mnist(dataset, "test", source)
    avail = images.shape[0]
    if n_test is not None and n_test > avail:
        raise _too_many(f"n_test={n_test}", avail, dataset, "test", source)
    k = avail if n_test is None else n_test
    return _prepare(images[:k], labels[:k])


def load_split(dataset: str, source: str, n_train: int | None = None, n_val: int = 0,
               n_test: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Load train/validation/test arrays ready for a model.

    The train split of ``dataset`` (from ``source``, see :func:`~symlib.data.load_mnist`)
    is split with :func:`train_val_split` (``n_val`` examples, ``seed``); the first
    ``n_train`` of the remaining form the training set. The test set is the first
    ``n_test`` test examples. Splits with zero requested examples are not loaded (e.g.
    ``n_train=0, n_val=0`` needs no train split).

    Args:
        dataset: ``"mnist"`` or ``"fashion_mnist"``.
        source: ``"full"`` or ``"subset"``.
        n_train: number of training examples; ``None`` for all that remain after validation.
        n_val: number of validation examples.
        n_test: number of test examples; ``None`` for all.
        seed: seed of the train/validation split.

    Returns:
        A dict with ``x_train, y_train, x_val, y_val, x_test, y_test``; ``x_*`` are float32
        ``(n, 784)`` in [0, 1] (via :func:`preprocess`), ``y_*`` int32 ``(n,)``.

    Raises:
        TypeError: if a count is not an integer.
        ValueError: if ``dataset`` or ``source`` is unknown, a count is negative, or more
            examples are requested than the split holds.
        DataNotFoundError: if the full files are needed and cannot be had (see
            :func:`~symlib.data.load_mnist`).
    """
    check_choice("dataset", dataset, DATASETS)
    check_choice("source", source, SOURCES)
    n_val = _count(n_val, "n_val")
    n_train = _count(n_train, "n_train", allow_none=True)
    n_test = _count(n_test, "n_test", allow_none=True)
    arrays = _train_and_val(dataset, source, n_train, n_val, seed) + _test(dataset, source, n_test)
    return dict(zip(_KEYS, arrays))
