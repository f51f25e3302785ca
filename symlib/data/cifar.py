"""Loading a split of CIFAR-10 or CIFAR-100 from the official "python version" archives.

Each archive (``cifar-10-python.tar.gz``, ``cifar-100-python.tar.gz``) holds pickled
batches: dicts with ``b"data"``, a uint8 array of shape ``(m, 3072)`` (each row a 3x32x32
image, channels first, row-major), and the labels as a list of ints (``b"labels"`` for
CIFAR-10; ``b"fine_labels"`` and ``b"coarse_labels"`` for CIFAR-100).

The batches are read straight from the archive, which is MD5-verified first (see
:func:`~symlib.data.loading.split_files`); nothing is extracted, so no member name can
write outside the cache. :mod:`pickle` is used only on these checksum-verified archives,
and then only with an unpickler that builds nothing but numpy arrays and plain Python
values.
"""

from __future__ import annotations

import io
import os
import pickle
import tarfile
from pathlib import Path
from typing import Any

import numpy as np

from symlib.data.files import SPLITS, check_choice
from symlib.data.loading import check_arrays, split_files

__all__ = ["CIFAR_MEMBERS", "CIFAR100_LABELS", "load_cifar10", "load_cifar100", "read_cifar"]

#: dataset -> split -> the archive members holding it, in order.
CIFAR_MEMBERS = {
    "cifar10": {
        "train": tuple(f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)),
        "test": ("cifar-10-batches-py/test_batch",),
    },
    "cifar100": {"train": ("cifar-100-python/train",), "test": ("cifar-100-python/test",)},
}

#: CIFAR-100 label kind -> number of classes.
CIFAR100_LABELS = {"fine": 100, "coarse": 20}

_IMAGE_SHAPE = (32, 32, 3)
_N_PIXELS = 32 * 32 * 3

# The globals a pickled numpy array needs (numpy < 2 and numpy >= 2 module names).
_ALLOWED_GLOBALS = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
}


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that refuses every global but those building numpy arrays."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a CIFAR batch")
        return super().find_class(module, name)


def _read_members(archive: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    """The bytes of the regular-file members ``names`` of a tar archive, in one pass."""
    wanted = set(names)
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                if member.name in wanted and member.isfile():
                    found[member.name] = tar.extractfile(member).read()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ValueError(f"{archive}: not a readable tar archive ({e})") from None
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"{archive}: archive lacks {', '.join(missing)}")
    return found


def _unpickle_batch(raw: bytes, where: str) -> dict:
    """A pickled batch (a dict with bytes keys)."""
    try:
        batch = _ArrayUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as e:  # a malformed pickle can raise almost anything
        raise ValueError(f"{where}: not a CIFAR batch ({type(e).__name__}: {e})") from None
    if not isinstance(batch, dict):
        raise ValueError(f"{where}: not a CIFAR batch (a {type(batch).__name__}, not a dict)")
    return batch


def _batch_arrays(batch: dict, label_key: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``(data, labels)`` of a batch: ``(m, 3072)`` uint8 and ``(m,)`` int64."""
    if b"data" not in batch or label_key not in batch:
        raise ValueError(f"{where}: batch lacks {b'data'!r} or {label_key!r} (keys: {sorted(batch)})")
    flat = np.asarray(batch[b"data"])
    labels = np.asarray(batch[label_key])
    if flat.dtype != np.uint8 or flat.ndim != 2 or flat.shape[1] != _N_PIXELS:
        raise ValueError(f"{where}: expected uint8 data of shape (m, {_N_PIXELS}), got {flat.dtype} {flat.shape}")
    if labels.shape != (flat.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"{where}: expected {flat.shape[0]} integer labels {label_key!r}, got {labels.dtype} {labels.shape}"
        )
    if labels.size and (labels.min() < 0 or labels.max() > 255):
        raise ValueError(f"{where}: labels {label_key!r} outside 0..255")
    return flat, labels.astype(np.int64)


def read_cifar(archive: str | os.PathLike, members: tuple[str, ...],
               label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Read pickled CIFAR batches from an archive (no checksum check here).

    Only call this on an archive whose checksum matched (the loaders do): the batches
    are unpickled, though with an unpickler that allows only numpy arrays.

    Args:
        archive: the ``.tar.gz`` file.
        members: the batches to read, concatenated in this order.
        label_key: the labels' key in each batch (``b"labels"``, ``b"fine_labels"``, ...).

    Returns:
        ``(images, labels)``: uint8 ``(n, 32, 32, 3)`` (NHWC) and uint8 ``(n,)``.

    Raises:
        ValueError: naming the archive (and member) if it is not a readable archive, a
            member is missing, or a batch is malformed.
    """
    archive = Path(archive)
    raw = _read_members(archive, members)
    parts = [_batch_arrays(_unpickle_batch(raw[m], f"{archive}:{m}"), label_key, f"{archive}:{m}") for m in members]
    flat = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts]).astype(np.uint8)
    images = np.ascontiguousarray(flat.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return images, labels


def _load(dataset: str, split: str, label_key: bytes, n_classes: int, download_if_missing: bool,
          data_dir: str | os.PathLike | None, loader: str) -> tuple[np.ndarray, np.ndarray]:
    """A split of ``dataset`` from its verified archive."""
    check_choice("split", split, SPLITS)
    (archive,) = split_files(dataset, split, download_if_missing, data_dir, loader)
    images, labels = read_cifar(archive, CIFAR_MEMBERS[dataset][split], label_key)
    return check_arrays(images, labels, _IMAGE_SHAPE, n_classes, f"{archive}")


def load_cifar10(split: str = "train", download_if_missing: bool = True,
                 data_dir: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Load a split of CIFAR-10 (50,000 train / 10,000 test images, 10 classes).

    The archive ``cifar-10-python.tar.gz`` is looked for as described in
    :mod:`symlib.data` (in ``<data_dir or $SYMLIB_DATA_DIR>/cifar10/``, then
    ``<data_dir or $SYMLIB_DATA_DIR>/``, then the user cache), MD5-verified (once per
    process), and downloaded from https://www.cs.toronto.edu/~kriz/ into the cache if
    missing and ``download_if_missing``.

    Args:
        split: ``"train"`` (``data_batch_1`` .. ``data_batch_5``) or ``"test"``
            (``test_batch``).
        download_if_missing: download the archive if it is not found.
        data_dir: a directory searched instead of ``$SYMLIB_DATA_DIR``.

    Returns:
        ``(images, labels)``: uint8 images of shape ``(n, 32, 32, 3)`` (NHWC, 0..255) and
        uint8 labels of shape ``(n,)`` (0..9).

    Raises:
        ValueError: if ``split`` is unknown or the archive is malformed.
        DataNotFoundError: saying which file and directories were tried, where the file
            is published (and why the download failed) if it cannot be had.
        ChecksumError: if the archive does not match its published checksum.
    """
    return _load("cifar10", split, b"labels", 10, download_if_missing, data_dir, "load_cifar10")


def load_cifar100(split: str = "train", label: str = "fine", download_if_missing: bool = True,
                  data_dir: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Load a split of CIFAR-100 (50,000 train / 10,000 test images).

    The archive ``cifar-100-python.tar.gz`` is found, verified and downloaded as for
    :func:`load_cifar10` (in ``.../cifar100/``).

    Args:
        split: ``"train"`` or ``"test"``.
        label: ``"fine"`` (100 classes) or ``"coarse"`` (20 superclasses).
        download_if_missing: download the archive if it is not found.
        data_dir: a directory searched instead of ``$SYMLIB_DATA_DIR``.

    Returns:
        ``(images, labels)``: uint8 images of shape ``(n, 32, 32, 3)`` (NHWC, 0..255) and
        uint8 labels of shape ``(n,)`` (0..99 fine, 0..19 coarse).

    Raises:
        ValueError: if ``split`` or ``label`` is unknown or the archive is malformed.
        DataNotFoundError: as for :func:`load_cifar10`.
        ChecksumError: if the archive does not match its published checksum.
    """
    check_choice("label", label, tuple(CIFAR100_LABELS))
    return _load("cifar100", split, f"{label}_labels".encode(), CIFAR100_LABELS[label], download_if_missing,
                 data_dir, "load_cifar100")
