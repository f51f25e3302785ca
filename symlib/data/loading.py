"""What the loaders share: the verified files of a split (found, or downloaded into the
cache), the message when they cannot be had, the decoding of image files and the check of
the loaded arrays."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from symlib.data.downloads import MIRRORS, download
from symlib.data.files import (
    DATASET_FILES,
    ENV_DATA_DIR,
    MD5,
    ChecksumError,
    DataNotFoundError,
    cache_dir,
    data_search_dirs,
    find_files,
    verify_file,
)

__all__ = ["split_files", "check_arrays", "decode_rgb"]


def _missing_message(dataset: str, split: str, dirs: Sequence[Path], loader: str, alternative: str,
                     download_note: str) -> str:
    """What was looked for, where, and how to get it."""
    names = DATASET_FILES[dataset][split]
    searched = "\n".join(f"  - {d}" + ("" if d.is_dir() else " (does not exist)") for d in dirs)
    urls = ", ".join(MIRRORS[dataset][0].rstrip("/") + "/" + name for name in names)
    first = f"{dataset} {split} files not found: {', '.join(names)}"
    if alternative and download_note:
        first = (f"{dataset} {split}: the full files are not here and could not be downloaded (offline?)"
                 f"{alternative.replace(', or use', '; use', 1)}. Details:\n{first}")
    return (
        f"{first}\n"
        f"Searched, in order:\n{searched}\n"
        f"Set the environment variable {ENV_DATA_DIR} (or pass data_dir=...) to a directory "
        f"containing them (either <dir>/{dataset}/<files> or <dir>/<files>), "
        f"or allow downloading ({loader}(..., download_if_missing=True) / "
        f"symlib.data.download({dataset!r})) on a machine with internet access"
        f"{alternative}.\n"
        f"They are published at: {urls}"
        + download_note
    )


def split_files(dataset: str, split: str, download_if_missing: bool, data_dir: str | os.PathLike | None = None,
                loader: str = "load_mnist", alternative: str = "") -> tuple[Path, ...]:
    """The files of a split, found or downloaded, and verified against their published MD5.

    The files are looked for in :func:`~symlib.data.data_search_dirs`; if no directory
    holds them all and ``download_if_missing``, they are downloaded into
    :func:`~symlib.data.cache_dir`. Verification is remembered for the process (see
    :func:`~symlib.data.verify_file`).

    Args:
        dataset: one of :data:`~symlib.data.ALL_DATASETS`.
        split: one of :data:`~symlib.data.SPLITS`.
        download_if_missing: download missing files from ``MIRRORS[dataset]``.
        data_dir: searched instead of ``$SYMLIB_DATA_DIR``.
        loader: the public function asking, named in the error message.
        alternative: another way to get data, appended to the message's advice
            (e.g. ``", or use source='subset' ..."``).

    Returns:
        The paths of ``DATASET_FILES[dataset][split]``, verified.

    Raises:
        ValueError: if ``dataset`` or ``split`` is unknown.
        DataNotFoundError: listing the files, the directories searched, how to get the
            files (their URLs) and why the download failed, if it was tried.
        ChecksumError: if a file does not match its published checksum.
    """
    paths = find_files(dataset, split, data_dir)
    if paths is None:
        dirs = data_search_dirs(dataset, data_dir)
        if not download_if_missing:
            raise DataNotFoundError(_missing_message(dataset, split, dirs, loader, alternative, ""))
        try:
            dest = download(dataset, splits=(split,))
        except ChecksumError:
            raise
        except OSError as e:  # DataNotFoundError (all mirrors failed) or cache not writable
            note = f"\nDownloading into {cache_dir(dataset)} failed:\n{e}"
            # one error with everything in it (the download's errors are in ``note``), not a chain
            raise DataNotFoundError(_missing_message(dataset, split, dirs, loader, alternative, note)) from None
        paths = tuple(dest / name for name in DATASET_FILES[dataset][split])
    for p in paths:
        verify_file(p, MD5[dataset][p.name])
    return paths


def check_arrays(images: np.ndarray, labels: np.ndarray, image_shape: tuple[int, ...], n_classes: int,
                 where: str) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` after checking their dtypes, shapes and label range.

    Args:
        images: should be uint8 of shape ``(n, *image_shape)``.
        labels: should be uint8 of shape ``(n,)``, in ``0..n_classes - 1``.
        image_shape: the shape of one image.
        n_classes: the number of classes.
        where: what to call the source in error messages (e.g. a path).

    Returns:
        ``(images, labels)`` unchanged.

    Raises:
        ValueError: naming ``where`` and what is wrong.
    """
    shape = "(n, " + ", ".join(map(str, image_shape)) + ")"
    if images.dtype != np.uint8 or images.ndim != 1 + len(image_shape) or images.shape[1:] != tuple(image_shape):
        raise ValueError(f"{where}: expected uint8 images of shape {shape}, got {images.dtype} {images.shape}")
    if labels.dtype != np.uint8 or labels.shape != (images.shape[0],):
        raise ValueError(
            f"{where}: expected uint8 labels of shape ({images.shape[0]},), got {labels.dtype} {labels.shape}"
        )
    if labels.size and labels.max() >= n_classes:
        raise ValueError(f"{where}: labels outside 0..{n_classes - 1} (max {labels.max()})")
    return images, labels


def decode_rgb(raw: bytes, where: str, prepare: Callable | None = None) -> np.ndarray:
    """An image file's bytes decoded with Pillow, converted to RGB (as PyTorch's loaders do).

    Pillow comes with matplotlib (a hard requirement of matplotlib, so of symlib); it is
    imported on use.

    Args:
        raw: the file's bytes (any format Pillow reads; the format is told by content).
        where: what to call the file in error messages (e.g. ``archive:member``).
        prepare: applied to the RGB :class:`PIL.Image.Image` before conversion to an
            array (e.g. a resize and crop); ``None`` for none.

    Returns:
        uint8 ``(height, width, 3)``.

    Raises:
        ValueError: naming ``where`` if the bytes are not a readable image.
    """
    from PIL import Image  # imported on use

    try:
        with Image.open(io.BytesIO(raw)) as im:
            im = im.convert("RGB")
            if prepare is not None:
                im = prepare(im)
            return np.asarray(im, dtype=np.uint8)
    except Exception as e:  # Pillow raises many kinds of errors on bad bytes
        raise ValueError(f"{where}: not a readable image ({type(e).__name__}: {e})") from None
