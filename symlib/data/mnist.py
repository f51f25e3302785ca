"""Loading a split of MNIST or Fashion-MNIST, from the complete files or the shipped subset."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from symlib.data.downloads import download
from symlib.data.files import (
    DATASETS,
    ENV_DATA_DIR,
    FILES,
    MD5,
    SOURCES,
    SPLITS,
    ChecksumError,
    DataNotFoundError,
    cache_dir,
    check_choice,
    data_search_dirs,
    find_files,
    verify_file,
)
from symlib.data.idx import read_idx
from symlib.data.subset import load_subset

__all__ = ["load_mnist"]


def _check_arrays(images: np.ndarray, labels: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` after checking uint8 ``(n, 28, 28)`` images and ``(n,)`` labels in 0..9."""
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(f"{where}: expected uint8 images of shape (n, 28, 28), got {images.dtype} {images.shape}")
    if labels.dtype != np.uint8 or labels.shape != (images.shape[0],):
        raise ValueError(
            f"{where}: expected uint8 labels of shape ({images.shape[0]},), got {labels.dtype} {labels.shape}"
        )
    if labels.size and labels.max() > 9:
        raise ValueError(f"{where}: labels outside 0..9 (max {labels.max()})")
    return images, labels


def _missing_message(dataset: str, split: str, dirs: Sequence[Path], download_note: str) -> str:
    """What was looked for, where, and how to get it."""
    files = ", ".join(FILES[split])
    searched = "\n".join(f"  - {d}" + ("" if d.is_dir() else " (does not exist)") for d in dirs)
    return (
        f"{dataset} {split} files not found: {files}\n"
        f"Searched, in order:\n{searched}\n"
        f"Set the environment variable {ENV_DATA_DIR} to a directory containing them "
        f"(either {ENV_DATA_DIR}/{dataset}/<files> or {ENV_DATA_DIR}/<files>), "
        "or allow downloading (load_mnist(..., download_if_missing=True) / "
        f"symlib.data.download({dataset!r})) on a machine with internet access, "
        "or use source='subset' for the small subset shipped with symlib."
        + download_note
    )


def _full_files(dataset: str, split: str, download_if_missing: bool) -> tuple[Path, Path]:
    """The (unverified) files of a full split: found, or downloaded into the cache."""
    paths = find_files(dataset, split)
    if paths is not None:
        return paths
    dirs = data_search_dirs(dataset)
    if not download_if_missing:
        raise DataNotFoundError(_missing_message(dataset, split, dirs, ""))
    try:
        dest = download(dataset)
    except ChecksumError:
        raise
    except OSError as e:  # DataNotFoundError (all mirrors failed) or cache not writable
        note = f"\nDownloading into {cache_dir(dataset)} failed:\n{e}"
        raise DataNotFoundError(_missing_message(dataset, split, dirs, note)) from e
    images, labels = (dest / f for f in FILES[split])
    return images, labels


def load_mnist(dataset: str = "mnist", split: str = "train", source: str = "full",
               download_if_missing: bool = True) -> tuple[np.ndarray, np.ndarray]:
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
        return _check_arrays(*load_subset(dataset, split), f"shipped subset {dataset}/{split}")
    paths = _full_files(dataset, split, download_if_missing)
    for p in paths:
        verify_file(p, MD5[dataset][p.name])
    images, labels = (read_idx(p) for p in paths)
    return _check_arrays(images, labels, f"{paths[0].parent}")
