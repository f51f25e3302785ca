"""Loading Textures, the Describable Textures Dataset (DTD; Cimpoi et al., CVPR 2014).

Textures is TinyImageNet's out-of-distribution set in Laurent et al. (ICLR 2024, Sec. 4.2
and App. B.3: "the concatenation of all the subsets", 5,640 images, "resized to 64x64").
The official archive (https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz,
about 625 MB) holds, under ``dtd/``:

- ``images/<class>/<class>_<k>.jpg``: 5,640 JPEGs of 47 texture classes (120 a class),
  between 300x300 and 640x640 pixels, most of them not square;
- ``labels/{train,val,test}<i>.txt`` for the ten official splits ``i = 1..10``, one image
  path relative to ``images/`` a line (``banded/banded_0002.jpg``); each split puts 40
  images of each class in train, val and test. Only split 1 is read here (as
  torchvision's ``DTD(partition=1)``, which torch-uncertainty uses).

**Resizing** (what torch-uncertainty's ``TinyImageNetDataModule`` applied to its
``"textures"`` OOD set at the paper's time, ``T.Resize(72)`` then ``T.CenterCrop(64)``,
generalised to other sizes by us): each image is converted to RGB, its shorter side is
resized to ``resize_to`` (default ``image_size * 9 // 8``, i.e. 72 for 64) with Pillow's
bilinear filter (which averages over the whole footprint when shrinking, as torchvision's
``Resize`` does on PIL images), the longer side to ``int(resize_to * long / short)``, and
the central ``image_size x image_size`` square is cut out (offsets rounded as
torchvision's ``CenterCrop``). The paper's text says only "resized to 64x64".

The images are decoded with Pillow (a hard requirement of matplotlib, so of symlib),
imported on use. The archive is read without extracting it, in two passes over the
compressed stream (the split lists, then the images listed).

**Checksum:** the DTD page publishes no checksum for the archive, so
:data:`~symlib.data.MD5` holds ``None`` for it and the file is used *unverified* (a
corrupt archive fails to open, or lacks members, with a clear error). torchvision checks
``fff73e5086ae6bdbea199a49dfb8a4c1``; we could not confirm that value against the
official file here, so it is not enforced. Pass ``md5=`` to :func:`load_textures` to
check a digest you trust.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import numpy as np

from symlib.data.files import REDOWNLOAD, check_choice, verify_file
from symlib.data.loading import check_arrays, decode_rgb, split_files

__all__ = ["TEXTURES_CLASSES", "TEXTURES_SPLITS", "load_textures", "read_textures"]

#: number of classes of the Describable Textures Dataset
TEXTURES_CLASSES = 47
#: the splits :func:`load_textures` reads (``"all"``: train, val and test of split 1, in that order)
TEXTURES_SPLITS = ("train", "val", "test", "all")

_ROOT = "dtd/"
_LISTS = {s: f"{_ROOT}labels/{s}1.txt" for s in ("train", "val", "test")}


def _fit(image_size: int, resize_to: int):
    """The resize-then-centre-crop of the module docstring, as a function of a PIL image."""
    from PIL import Image

    def fit(im):
        w, h = im.size
        short, long = min(w, h), max(w, h)
        new_long = int(resize_to * long / short)
        im = im.resize((resize_to, new_long) if w <= h else (new_long, resize_to), Image.BILINEAR)
        w, h = im.size
        top, left = int(round((h - image_size) / 2.0)), int(round((w - image_size) / 2.0))
        return im.crop((left, top, left + image_size, top + image_size))

    return fit


def _open_tar(archive: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ValueError(f"{archive}: not a readable tar archive ({e}); {REDOWNLOAD}") from None


def _read_lists(archive: Path) -> dict[str, list[str]]:
    """Split -> the image paths (relative to ``dtd/images/``) its list names, in order."""
    texts: dict[str, str] = {}
    wanted = {v: k for k, v in _LISTS.items()}
    try:
        with _open_tar(archive) as tar:
            for member in tar:
                if member.name in wanted and member.isfile():
                    texts[wanted[member.name]] = tar.extractfile(member).read().decode("utf-8")
                    if len(texts) == len(wanted):
                        break
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ValueError(f"{archive}: not a readable tar archive ({e}); {REDOWNLOAD}") from None
    missing = [name for s, name in _LISTS.items() if s not in texts]
    if missing:
        raise ValueError(f"{archive}: archive lacks {', '.join(missing)}")
    lists = {}
    for s, text in texts.items():
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for k, line in enumerate(lines):
            if line.count("/") != 1 or line.startswith("/") or line.endswith("/"):
                raise ValueError(f"{archive}: {_LISTS[s]} line {k + 1}: expected '<class>/<file>', got {line!r}")
        lists[s] = lines
    return lists


def read_textures(archive: str | os.PathLike, split: str = "all", image_size: int = 64,
                  resize_to: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read a split of DTD from the official tar archive (no checksum check here).

    Class ``i`` is the ``i``-th class name in sorted order among the classes of the three
    lists of split 1 (the order of torchvision's ``DTD``). Images come in the order of
    their list; ``"all"`` is train, then val, then test (torch-uncertainty's concatenation).

    Args:
        archive: the ``dtd-r1.0.1.tar.gz`` file.
        split: ``"train"``, ``"val"``, ``"test"`` (``labels/<split>1.txt``) or ``"all"``.
        image_size: the side of the square images returned.
        resize_to: the shorter side's length before the central crop (module docstring);
            ``None`` for ``image_size * 9 // 8``.

    Returns:
        ``(images, labels)``: uint8 ``(n, image_size, image_size, 3)`` (NHWC, RGB) and
        uint8 ``(n,)`` in 0..46.

    Raises:
        ValueError: naming the archive (and member) if ``split`` or a size is invalid, it
            is not a readable tar archive, a split list is missing or malformed, or a
            listed image is missing or cannot be decoded.
    """
    check_choice("split", split, TEXTURES_SPLITS)
    resize_to = image_size * 9 // 8 if resize_to is None else resize_to
    for name, v in (("image_size", image_size), ("resize_to", resize_to)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if resize_to < image_size:
        raise ValueError(f"resize_to ({resize_to}) must be at least image_size ({image_size})")
    archive = Path(archive)
    lists = _read_lists(archive)
    classes = sorted({line.split("/")[0] for lines in lists.values() for line in lines})
    if len(classes) > 256:
        raise ValueError(f"{archive}: the split lists name {len(classes)} classes (more than uint8 labels hold)")
    label_of = {c: i for i, c in enumerate(classes)}
    items = [line for s in (("train", "val", "test") if split == "all" else (split,)) for line in lists[s]]
    members = {f"{_ROOT}images/{line}": None for line in items}
    fit = _fit(int(image_size), int(resize_to))
    try:
        with _open_tar(archive) as tar:
            for member in tar:
                if member.name in members and member.isfile() and members[member.name] is None:
                    where = f"{archive}:{member.name}"
                    members[member.name] = decode_rgb(tar.extractfile(member).read(), where, fit)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ValueError(f"{archive}: not a readable tar archive ({e}); {REDOWNLOAD}") from None
    images = np.empty((len(items), image_size, image_size, 3), np.uint8)
    for i, line in enumerate(items):
        arr = members[f"{_ROOT}images/{line}"]
        if arr is None:
            raise ValueError(f"{archive}: archive lacks {_ROOT}images/{line} (listed in split 1)")
        images[i] = arr
    return images, np.array([label_of[line.split("/")[0]] for line in items], np.int64).astype(np.uint8)


def load_textures(split: str = "all", image_size: int = 64, download_if_missing: bool = True,
                  data_dir: str | os.PathLike | None = None, md5: str | None = None,
                  resize_to: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Load a split of Textures (DTD: 5,640 images of 47 classes; split 1: 1,880 each in train, val, test).

    The archive ``dtd-r1.0.1.tar.gz`` is looked for as described in :mod:`symlib.data`
    (in ``<data_dir or $SYMLIB_DATA_DIR>/textures/``, then
    ``<data_dir or $SYMLIB_DATA_DIR>/``, then the user cache) and downloaded from
    https://www.robots.ox.ac.uk/~vgg/data/dtd/ into the cache if missing and
    ``download_if_missing`` (about 625 MB). **No published checksum exists**: the archive
    is used unverified unless ``md5`` is given (see the module docstring). Each image is
    resized (shorter side to ``resize_to``, bilinear) and centre-cropped to
    ``image_size x image_size`` as the module docstring says.

    Args:
        split: ``"train"``, ``"val"``, ``"test"`` (the lists of official split 1) or
            ``"all"`` (the three concatenated: Laurent et al.'s OOD set for TinyImageNet).
        image_size: the side of the returned square images (64: TinyImageNet's size).
        download_if_missing: download the archive if it is not found.
        data_dir: a directory searched instead of ``$SYMLIB_DATA_DIR``.
        md5: an MD5 digest to check the archive against (``None``: no check).
        resize_to: the shorter side before the crop; ``None`` for ``image_size * 9 // 8``.

    Returns:
        ``(images, labels)``: uint8 images of shape ``(n, image_size, image_size, 3)``
        (NHWC, 0..255) and uint8 labels of shape ``(n,)`` (0..46, the sorted class names).

    Raises:
        ValueError: if ``split`` or a size is invalid, or the archive is malformed.
        DataNotFoundError: saying which file and directories were tried, where the file
            is published (and why the download failed) if it cannot be had.
        ChecksumError: if ``md5`` is given and the archive does not match it.
    """
    check_choice("split", split, TEXTURES_SPLITS)
    (archive,) = split_files("textures", "test", download_if_missing, data_dir, "load_textures")
    verify_file(archive, md5)
    images, labels = read_textures(archive, split, image_size, resize_to)
    return check_arrays(images, labels, (image_size, image_size, 3), TEXTURES_CLASSES, f"{archive}")
