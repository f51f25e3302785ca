"""Loading a split of MNIST or Fashion-MNIST, from the complete files or the shipped subset."""

from __future__ import annotations

import os

import numpy as np

from symlib.data.files import DATASETS, SOURCES, SPLITS, check_choice
from symlib.data.idx import read_idx
from symlib.data.loading import check_arrays, split_files
from symlib.data.subset import load_subset

__all__ = ["load_mnist"]

_SUBSET_HINT = ", or use source='subset' for the small subset shipped with symlib"


def load_mnist(dataset: str = "mnist", split: str = "train", source: str = "full",
               download_if_missing: bool = True,
               data_dir: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Load a split of MNIST or Fashion-MNIST.

    ``source="full"`` loads the complete split from the standard idx files (see
    :mod:`symlib.data` for where they are looked for); they are MD5-verified once per
    process, and downloaded into the user cache if missing and ``download_if_missing``.
    ``source="subset"`` loads the small subset shipped with the package
    (sha256-verified against its manifest).

    Args:
        dataset: ``"mnist"`` or ``"fashion_mnist"``.
        split: ``"train"`` or ``"test"``.
        source: ``"full"`` or ``"subset"``.
        download_if_missing: download missing full files from the public mirrors.
        data_dir: a directory searched instead of ``$SYMLIB_DATA_DIR`` (see
            :func:`~symlib.data.data_search_dirs`).

    Returns:
        ``(images, labels)``: uint8 images of shape ``(n, 28, 28)`` (0..255) and uint8
        labels of shape ``(n,)`` (0..9).

    Raises:
        ValueError: if ``dataset``, ``split`` or ``source`` is unknown, a subset split is
            not shipped, or a file is malformed.
        DataNotFoundError: saying which files and directories were tried (and why the
            download failed, e.g. offline) if the full files cannot be had.
        ChecksumError: if a file does not match its published checksum.
    """
    check_choice("dataset", dataset, DATASETS)
    check_choice("split", split, SPLITS)
    check_choice("source", source, SOURCES)
    if source == "subset":
        return check_arrays(*load_subset(dataset, split), (28, 28), 10, f"shipped subset {dataset}/{split}")
    paths = split_files(dataset, split, download_if_missing, data_dir, "load_mnist", _SUBSET_HINT)
    images, labels = (read_idx(p) for p in paths)
    return check_arrays(images, labels, (28, 28), 10, f"{paths[0].parent}")
