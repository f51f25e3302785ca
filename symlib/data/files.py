"""The dataset files: their names and published checksums, where they are looked for, and
their verification."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "DATASETS",
    "RGB_DATASETS",
    "TINY_IMAGENET",
    "TEXTURES",
    "ALL_DATASETS",
    "SPLITS",
    "SOURCES",
    "FILES",
    "DATASET_FILES",
    "MD5",
    "N_EXAMPLES",
    "ENV_DATA_DIR",
    "DataNotFoundError",
    "ChecksumError",
    "check_choice",
    "cache_dir",
    "data_search_dirs",
    "find_files",
    "md5_file",
    "verify_file",
    "mark_verified",
]

#: The idx datasets (28x28 grey), loaded by :func:`~symlib.data.load_mnist`.
DATASETS = ("mnist", "fashion_mnist")
#: The 32x32 colour datasets, loaded by :func:`~symlib.data.load_cifar10`,
#: :func:`~symlib.data.load_cifar100` and :func:`~symlib.data.load_svhn`.
RGB_DATASETS = ("cifar10", "cifar100", "svhn")
#: TinyImageNet (64x64 colour, 200 classes), loaded by :func:`~symlib.data.load_tiny_imagenet`.
TINY_IMAGENET = "tiny_imagenet"
#: Textures (DTD, 47 classes, resized to a square on loading), loaded by :func:`~symlib.data.load_textures`.
TEXTURES = "textures"
#: Every dataset whose files are found, verified and downloaded here.
ALL_DATASETS = DATASETS + RGB_DATASETS + (TINY_IMAGENET, TEXTURES)
SPLITS = ("train", "test")
SOURCES = ("full", "subset")

#: split -> (images file, labels file); the standard names, same for both datasets.
FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}

#: dataset -> split -> the files holding it, under their published names. Both CIFAR
#: splits come from one archive (the "python version"); SVHN is the "cropped digits"
#: format 2 (without the ``extra`` set).
DATASET_FILES = {
    "mnist": FILES,
    "fashion_mnist": FILES,
    "cifar10": {"train": ("cifar-10-python.tar.gz",), "test": ("cifar-10-python.tar.gz",)},
    "cifar100": {"train": ("cifar-100-python.tar.gz",), "test": ("cifar-100-python.tar.gz",)},
    "svhn": {"train": ("train_32x32.mat",), "test": ("test_32x32.mat",)},
    "tiny_imagenet": {"train": ("tiny-imagenet-200.zip",), "test": ("tiny-imagenet-200.zip",)},
    "textures": {"train": ("dtd-r1.0.1.tar.gz",), "test": ("dtd-r1.0.1.tar.gz",)},
}

#: dataset -> file name -> published MD5 of the file as distributed (``.gz``, ``.tar.gz``, ``.mat``),
#: or ``None`` where no checksum is published: TinyImageNet's ``tiny-imagenet-200.zip``
#: (Stanford CS231n publishes none; the value other projects use could not be checked
#: here) and Textures' ``dtd-r1.0.1.tar.gz`` (likewise: the DTD page publishes none),
#: whose files are then used unverified.
MD5 = {
    "mnist": {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    },
    "fashion_mnist": {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
    },
    "cifar10": {"cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a"},
    "cifar100": {"cifar-100-python.tar.gz": "eb9058c3a382ffc7106e4002c42a8d85"},
    "svhn": {
        "train_32x32.mat": "e26dedcc434d2e4c54c9b2d4a06d8373",
        "test_32x32.mat": "eb5a983be6a315427106f1b164d9cef3",
    },
    "tiny_imagenet": {"tiny-imagenet-200.zip": None},
    "textures": {"dtd-r1.0.1.tar.gz": None},
}

#: Number of examples in each full split of MNIST and Fashion-MNIST.
N_EXAMPLES = {"train": 60_000, "test": 10_000}

#: The environment variable naming the directory searched first.
ENV_DATA_DIR = "SYMLIB_DATA_DIR"

# Files whose checksum has been verified in this process:
# (resolved path, size, mtime_ns, expected digest).
_VERIFIED: set[tuple[str, int, int, str]] = set()
_CHUNK = 1 << 16
log = logging.getLogger(__name__)


class DataNotFoundError(FileNotFoundError):
    """The requested dataset files could not be found (or downloaded)."""


class ChecksumError(ValueError):
    """A file's checksum does not match the expected (published) value."""


def check_choice(kind: str, value: Any, valid: Iterable[Any]) -> None:
    """Check that ``value`` is one of ``valid``.

    Args:
        kind: what ``value`` is (``"dataset"``, ``"split"``, ...), for the message.
        value: the value given.
        valid: the allowed values.

    Returns:
        None.

    Raises:
        ValueError: naming ``kind``, ``value`` and the valid values.
    """
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; valid values: {', '.join(map(repr, valid))}")


def cache_dir(dataset: str | None = None) -> Path:
    """The user cache directory for downloads.

    Args:
        dataset: one of :data:`ALL_DATASETS`, or ``None`` for the directory holding all of them.

    Returns:
        ``<$XDG_CACHE_HOME or ~/.cache>/symlib/data[/<dataset>]`` (it may not exist).

    Raises:
        ValueError: if ``dataset`` is not a known dataset.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = Path(base) / "symlib" / "data"
    if dataset is None:
        return root
    check_choice("dataset", dataset, ALL_DATASETS)
    return root / dataset


def data_search_dirs(dataset: str, data_dir: str | os.PathLike | None = None) -> list[Path]:
    """Directories searched for ``dataset``'s files, in order of preference.

    Args:
        dataset: one of :data:`ALL_DATASETS`.
        data_dir: a directory searched instead of ``$SYMLIB_DATA_DIR`` (``~`` is expanded);
            ``None`` for the environment variable.

    Returns:
        ``<root>/<dataset>`` and ``<root>`` for ``root`` = ``data_dir`` or
        ``$SYMLIB_DATA_DIR`` (only when given, or when the variable is set and non-empty),
        then :func:`cache_dir` for the dataset; listed whether or not they exist.

    Raises:
        ValueError: if ``dataset`` is not a known dataset.
    """
    check_choice("dataset", dataset, ALL_DATASETS)
    dirs = []
    root = os.fspath(data_dir) if data_dir is not None else os.environ.get(ENV_DATA_DIR)
    if root:
        root = Path(os.path.expanduser(root))
        dirs += [root / dataset, root]
    dirs.append(cache_dir(dataset))
    return dirs


def find_files(dataset: str, split: str, data_dir: str | os.PathLike | None = None) -> tuple[Path, ...] | None:
    """The verified files of a split, from the first search directory holding all of them.

    Each file is checked against its published MD5 (:func:`verify_file`). A directory whose
    files fail the check (corrupt, or another dataset's files under the same names: MNIST and
    Fashion-MNIST share theirs) is skipped, with a WARNING on the ``symlib.data.files`` logger
    if a later directory holds good files.

    Args:
        dataset: one of :data:`ALL_DATASETS`.
        split: one of :data:`SPLITS`.
        data_dir: searched instead of ``$SYMLIB_DATA_DIR``, see :func:`data_search_dirs`.

    Returns:
        The paths of ``DATASET_FILES[dataset][split]`` (for MNIST and Fashion-MNIST
        ``(images_path, labels_path)``) in the first directory of :func:`data_search_dirs`
        that holds them all with their published checksums, else ``None`` (no directory
        holds them all).

    Raises:
        ValueError: if ``dataset`` or ``split`` is unknown.
        ChecksumError: if directories hold all the files but none with the published
            checksums, naming each mismatch.
    """
    check_choice("dataset", dataset, ALL_DATASETS)
    check_choice("split", split, SPLITS)
    skipped = []
    for d in data_search_dirs(dataset, data_dir):
        paths = tuple(d / f for f in DATASET_FILES[dataset][split])
        if not all(p.is_file() for p in paths):
            continue
        mismatch = _mismatch(dataset, paths)
        if mismatch is None:
            if skipped:
                log.warning("%s %s: using the files in %s; skipped:\n%s", dataset, split, d, "\n".join(skipped))
            return paths
        skipped.append(f"  - {mismatch}")
    if skipped:
        raise ChecksumError(f"no folder searched holds {dataset}'s {split} files with their published checksums:\n"
                            + "\n".join(skipped))
    return None


def _mismatch(dataset: str, paths: tuple[Path, ...]) -> str | None:
    """Why ``paths`` are not ``dataset``'s files (the first checksum mismatch), or None if they are."""
    try:
        for p in paths:
            verify_file(p, MD5[dataset][p.name])
    except ChecksumError as err:
        return str(err)
    return None


def md5_file(path: str | os.PathLike) -> str:
    """The MD5 digest of a file's bytes as stored (i.e. of the ``.gz``).

    Args:
        path: the file.

    Returns:
        The lower-case hex digest.
    """
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _verified_key(path: Path, expected_md5: str) -> tuple[str, int, int, str]:
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns, expected_md5.lower()


#: the advice of a read error of an archive that has no published MD5 (a truncated download
#: cannot be told from a whole one by its checksum)
REDOWNLOAD = "if a download of it was interrupted, delete the file and download it again"


def mark_verified(path: str | os.PathLike, expected_md5: str | None) -> None:
    """Remember that ``path`` (as it is now) has the MD5 ``expected_md5``, so that
    :func:`verify_file` does not hash it again in this process.

    Args:
        path: a file whose digest was just checked (e.g. by the downloader).
        expected_md5: its digest.

    Returns:
        None.
    """
    if expected_md5 is not None:
        _VERIFIED.add(_verified_key(Path(path), expected_md5))


def verify_file(path: str | os.PathLike, expected_md5: str | None) -> None:
    """Check a file against its expected MD5 (nothing to check for ``None``: no published sum).

    Successful verifications are remembered for the process (keyed by path, size and
    modification time), so repeated calls are cheap.

    Args:
        path: the file.
        expected_md5: the expected hex digest (any case).

    Returns:
        None.

    Raises:
        ChecksumError: naming the file and both digests if they differ, and the dataset
            whose file it is when the digest is that of another known file.
    """
    if expected_md5 is None:
        return
    path = Path(path)
    key = _verified_key(path, expected_md5)
    if key in _VERIFIED:
        return
    actual = md5_file(path)
    if actual != expected_md5.lower():
        raise ChecksumError(f"checksum mismatch for {path}: expected MD5 {expected_md5}, got {actual} "
                            f"({_known_as(actual)})")
    _VERIFIED.add(key)


def _known_as(digest: str) -> str:
    """What a file with MD5 ``digest`` is: another dataset's file, or unknown (corrupt)."""
    for dataset, files in MD5.items():
        for name, md5 in files.items():
            if md5 == digest:
                return (f"it is {dataset}'s {name}, not a damaged file: keep each dataset's files in a folder "
                        f"<dir>/<dataset>/ of their own, see symlib.data.data_search_dirs")
    return "the file is corrupt or incomplete; delete it and download it again"
