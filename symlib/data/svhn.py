"""Loading a split of SVHN (Netzer et al. 2011), the "cropped digits" format.

SVHN is the out-of-distribution set that Laurent et al. pair with CIFAR-100. Each split is
a MATLAB v5 file (``train_32x32.mat``, ``test_32x32.mat``) holding ``X``, uint8 of shape
``(32, 32, 3, n)``, and ``y``, of shape ``(n, 1)`` with labels 1..10, where 10 stands for
the digit 0. The files are read with :func:`scipy.io.loadmat` (imported on use).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from symlib.data.files import SPLITS, check_choice
from symlib.data.loading import check_arrays, split_files

__all__ = ["load_svhn", "read_svhn"]


def read_svhn(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read an SVHN ``.mat`` file (no checksum check here).

    Args:
        path: the file.

    Returns:
        ``(images, labels)``: uint8 ``(n, 32, 32, 3)`` (NHWC) and uint8 ``(n,)`` in 0..9
        (the file's label 10 becomes 0, so a label is the digit shown).

    Raises:
        ValueError: naming the file if it is not a readable ``.mat`` file or ``X`` / ``y``
            are missing or malformed.
    """
    from scipy.io import loadmat  # imported on use: scipy is slow to import

    path = Path(path)
    try:
        mat = loadmat(path, variable_names=("X", "y"))
    except Exception as e:  # scipy raises ValueError, TypeError, OSError, ... on bad files
        raise ValueError(f"{path}: not a readable MATLAB file ({type(e).__name__}: {e})") from None
    if "X" not in mat or "y" not in mat:
        raise ValueError(f"{path}: expected variables 'X' and 'y', got {sorted(k for k in mat if not k.startswith('__'))}")
    x, y = np.asarray(mat["X"]), np.asarray(mat["y"])
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[:3] != (32, 32, 3):
        raise ValueError(f"{path}: expected uint8 'X' of shape (32, 32, 3, n), got {x.dtype} {x.shape}")
    n = x.shape[3]
    if y.size != n or y.ndim > 2 or not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)):
        raise ValueError(f"{path}: expected {n} numeric labels 'y', got {y.dtype} {y.shape}")
    y = y.reshape(n)
    if n and (not np.all(np.isin(y, np.arange(1, 11)))):
        raise ValueError(f"{path}: labels 'y' outside 1..10")
    labels = (y.astype(np.int64) % 10).astype(np.uint8)
    return np.ascontiguousarray(x.transpose(3, 0, 1, 2)), labels


def load_svhn(split: str = "train", download_if_missing: bool = True,
              data_dir: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Load a split of SVHN (73,257 train / 26,032 test images, digits 0..9).

    The split's file (``train_32x32.mat`` or ``test_32x32.mat``) is looked for as
    described in :mod:`symlib.data` (in ``<data_dir or $SYMLIB_DATA_DIR>/svhn/``, then
    ``<data_dir or $SYMLIB_DATA_DIR>/``, then the user cache), MD5-verified (once per
    process), and downloaded from http://ufldl.stanford.edu/housenumbers/ into the cache
    if missing and ``download_if_missing``. The ``extra`` set is not used.

    Args:
        split: ``"train"`` or ``"test"``.
        download_if_missing: download the split's file if it is not found.
        data_dir: a directory searched instead of ``$SYMLIB_DATA_DIR``.

    Returns:
        ``(images, labels)``: uint8 images of shape ``(n, 32, 32, 3)`` (NHWC, 0..255) and
        uint8 labels of shape ``(n,)`` (0..9, the digit shown; the file's 10 is 0).

    Raises:
        ValueError: if ``split`` is unknown or the file is malformed.
        DataNotFoundError: saying which file and directories were tried, where the file
            is published (and why the download failed) if it cannot be had.
        ChecksumError: if the file does not match its published checksum.
    """
    check_choice("split", split, SPLITS)
    (path,) = split_files("svhn", split, download_if_missing, data_dir, "load_svhn")
    return check_arrays(*read_svhn(path), (32, 32, 3), 10, f"{path}")
