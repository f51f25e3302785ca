"""Loading a split of TinyImageNet (Stanford CS231n's ``tiny-imagenet-200.zip``).

TinyImageNet is the third task of Laurent et al. (ICLR 2024, Table 1; ResNet-18, images
kept at 64x64). The official archive (http://cs231n.stanford.edu/tiny-imagenet-200.zip)
holds, under ``tiny-imagenet-200/``:

- ``wnids.txt``: the 200 WordNet ids of the classes, one a line;
- ``train/<wnid>/images/<wnid>_<k>.JPEG``: 500 training images of each class;
- ``val/images/val_<k>.JPEG`` and ``val/val_annotations.txt``: 10,000 labelled
  validation images (50 a class), one tab-separated line ``file  wnid  x0  y0  x1  y1``
  per image;
- ``test/images/``: 10,000 test images **without** labels (not read here).

The images are 64x64 JPEGs, a few of them greyscale (converted to RGB here, as PyTorch's
``ImageFolder`` does). They are decoded with Pillow, which comes with matplotlib (a
hard requirement of matplotlib, so of symlib); it is imported on use. The archive is read
without extracting it, so no member name can write outside the cache.

**Checksum:** Stanford publishes no checksum for the archive, so
:data:`~symlib.data.MD5` holds ``None`` for it and the file is used *unverified* (a
corrupt archive still fails to open, or lacks members, with a clear error). Other
projects check ``90528d7ca1a48142e341f4ef8d21d0de``; we could not confirm that value
against the official file, so it is not enforced. Pass ``md5=`` to
:func:`load_tiny_imagenet` to check a digest you trust.

**OOD set:** Laurent et al. pair TinyImageNet with Textures (the Describable Textures
Dataset, Cimpoi et al. 2014: all 5,640 images of its three subsets resized to 64x64),
loaded by :func:`~symlib.data.load_textures` (``split="all", image_size=64``).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from symlib.data.files import REDOWNLOAD, check_choice, verify_file
from symlib.data.loading import check_arrays, decode_rgb, split_files

__all__ = ["TINY_IMAGENET_CLASSES", "TINY_IMAGENET_SPLITS", "load_tiny_imagenet", "read_tiny_imagenet"]

#: number of classes of TinyImageNet
TINY_IMAGENET_CLASSES = 200
#: the splits :func:`load_tiny_imagenet` reads; ``"test"`` is the labelled validation set
TINY_IMAGENET_SPLITS = ("train", "val", "test")

_ROOT = "tiny-imagenet-200/"
_IMAGE_SHAPE = (64, 64, 3)


def _decode(raw: bytes, where: str) -> np.ndarray:
    arr = decode_rgb(raw, where)
    if arr.shape != _IMAGE_SHAPE:
        raise ValueError(f"{where}: expected a 64x64 image, got shape {arr.shape}")
    return arr


def _read_text(zf: zipfile.ZipFile, name: str, archive: Path) -> str:
    try:
        return zf.read(name).decode("utf-8")
    except KeyError:
        raise ValueError(f"{archive}: archive lacks {name}") from None


def read_tiny_imagenet(archive: str | os.PathLike, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Read a split of TinyImageNet from the official zip archive (no checksum check here).

    Class ``i`` is the ``i``-th WordNet id of ``wnids.txt`` in sorted order (the order of
    PyTorch's ``ImageFolder``). Training images are read class by class, each class's
    images in the order of their file names; validation images in the order of
    ``val_annotations.txt``.

    Args:
        archive: the ``tiny-imagenet-200.zip`` file.
        split: ``"train"`` (``train/<wnid>/images/``) or ``"val"`` / ``"test"`` (both
            the labelled ``val/`` set: the official test images have no labels).

    Returns:
        ``(images, labels)``: uint8 ``(n, 64, 64, 3)`` (NHWC, RGB) and uint8 ``(n,)`` in 0..199.

    Raises:
        ValueError: naming the archive (and member) if it is not a readable zip archive,
            a listed member is missing, an image cannot be decoded or is not 64x64, or a
            validation line names an unknown class.
    """
    check_choice("split", split, TINY_IMAGENET_SPLITS)
    archive = Path(archive)
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as e:
        raise ValueError(f"{archive}: not a readable zip archive ({e}); {REDOWNLOAD}") from None
    with zf:
        wnids = sorted(w.strip() for w in _read_text(zf, _ROOT + "wnids.txt", archive).split() if w.strip())
        if not wnids:
            raise ValueError(f"{archive}: {_ROOT}wnids.txt lists no classes")
        if len(wnids) > 256:
            raise ValueError(f"{archive}: {_ROOT}wnids.txt lists {len(wnids)} classes (more than uint8 labels hold)")
        label_of = {w: i for i, w in enumerate(wnids)}
        if split == "train":
            names = set(zf.namelist())
            items = []
            for w in wnids:
                prefix = f"{_ROOT}train/{w}/images/"
                members = sorted(n for n in names if n.startswith(prefix) and not n.endswith("/"))
                if not members:
                    raise ValueError(f"{archive}: archive has no training images under {prefix}")
                items += [(m, label_of[w]) for m in members]
        else:
            items = []
            lines = _read_text(zf, _ROOT + "val/val_annotations.txt", archive).splitlines()
            for k, line in enumerate(lines):
                if not line.strip():
                    continue
                fields = line.split("\t")
                if len(fields) < 2 or fields[1] not in label_of:
                    raise ValueError(f"{archive}: {_ROOT}val/val_annotations.txt line {k + 1}: expected "
                                     f"'file<TAB>wnid...' with a wnid of wnids.txt, got {line!r}")
                items.append((f"{_ROOT}val/images/{fields[0]}", label_of[fields[1]]))
        images = np.empty((len(items),) + _IMAGE_SHAPE, np.uint8)
        for i, (member, _) in enumerate(items):
            try:
                raw = zf.read(member)
            except KeyError:
                raise ValueError(f"{archive}: archive lacks {member}") from None
            images[i] = _decode(raw, f"{archive}:{member}")
    return images, np.array([lab for _, lab in items], np.int64).astype(np.uint8)


def load_tiny_imagenet(split: str = "train", download_if_missing: bool = True,
                       data_dir: str | os.PathLike | None = None,
                       md5: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Load a split of TinyImageNet (100,000 train / 10,000 labelled validation images, 200 classes).

    The archive ``tiny-imagenet-200.zip`` is looked for as described in :mod:`symlib.data`
    (in ``<data_dir or $SYMLIB_DATA_DIR>/tiny_imagenet/``, then
    ``<data_dir or $SYMLIB_DATA_DIR>/``, then the user cache) and downloaded from
    http://cs231n.stanford.edu/ into the cache if missing and ``download_if_missing``
    (about 237 MB). **No published checksum exists**: the archive is used unverified unless
    ``md5`` is given (see the module docstring). Decoding the 100,000 training JPEGs takes
    a minute or so.

    Args:
        split: ``"train"``, or ``"val"`` / ``"test"``: the labelled validation images, the
            test set of Laurent et al. (the official test images have no labels).
        download_if_missing: download the archive if it is not found.
        data_dir: a directory searched instead of ``$SYMLIB_DATA_DIR``.
        md5: an MD5 digest to check the archive against (``None``: no check).

    Returns:
        ``(images, labels)``: uint8 images of shape ``(n, 64, 64, 3)`` (NHWC, 0..255) and
        uint8 labels of shape ``(n,)`` (0..199, the sorted WordNet ids).

    Raises:
        ValueError: if ``split`` is unknown or the archive is malformed.
        DataNotFoundError: saying which file and directories were tried, where the file
            is published (and why the download failed) if it cannot be had.
        ChecksumError: if ``md5`` is given and the archive does not match it.
    """
    check_choice("split", split, TINY_IMAGENET_SPLITS)
    (archive,) = split_files("tiny_imagenet", "train" if split == "train" else "test", download_if_missing,
                             data_dir, "load_tiny_imagenet")
    verify_file(archive, md5)
    images, labels = read_tiny_imagenet(archive, split)
    return check_arrays(images, labels, _IMAGE_SHAPE, TINY_IMAGENET_CLASSES, f"{archive}")
