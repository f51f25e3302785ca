"""Downloading the dataset files from public mirrors or their official sources, through
:mod:`pooch`.

Each file is fetched by :func:`pooch.retrieve` (``requests`` underneath, so the usual
``*_proxy`` / ``no_proxy`` variables apply), which streams it to a temporary file next to
the target, checks its MD5 and only then moves it into place; on a mismatch it deletes the
temporary file. A file without a published MD5 (TinyImageNet, Textures) is downloaded
under a ``.part`` name and moved into place only once its archive reads to the end (every
zip member's CRC, every tar member), so an interrupted transfer from a server that sends no
length is not kept. This module adds the mirror fallback, our error messages and the progress
bar of :mod:`symlib.core.progress`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from symlib.core.progress import progress_bar, progress_enabled
from symlib.data.files import (
    ALL_DATASETS,
    DATASET_FILES,
    MD5,
    SPLITS,
    ChecksumError,
    DataNotFoundError,
    cache_dir,
    check_choice,
    mark_verified,
    verify_file,
)

__all__ = ["MIRRORS", "download"]

_CHUNK = 1 << 16  # bytes read (and written) at a time

#: dataset -> public base URLs, tried in order (file name is appended). CIFAR, SVHN,
#: TinyImageNet and Textures come from their official sources only.
MIRRORS = {
    "mnist": [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
    ],
    "fashion_mnist": [
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://storage.googleapis.com/tensorflow/tf-keras-datasets/",
    ],
    "cifar10": ["https://www.cs.toronto.edu/~kriz/"],
    "cifar100": ["https://www.cs.toronto.edu/~kriz/"],
    "svhn": ["http://ufldl.stanford.edu/housenumbers/"],
    "tiny_imagenet": ["http://cs231n.stanford.edu/"],
    "textures": ["https://www.robots.ox.ac.uk/~vgg/data/dtd/download/"],
}


class _ByteBar:
    """The progress bar handed to pooch's downloader (``total``, ``update``, ``reset``,
    ``close``). The tqdm bar is made only when pooch sets ``total``, i.e. once the server
    has answered, so a mirror that cannot be reached leaves no empty bar behind."""

    def __init__(self, desc: str):
        self.desc = desc
        self._bar = None

    @property
    def total(self) -> int | None:
        return None if self._bar is None else self._bar.total

    @total.setter
    def total(self, total: int) -> None:
        self.close()
        self._bar = progress_bar(total or None, self.desc, enabled=True, unit="B", unit_scale=True)

    def update(self, n: int) -> None:
        self._bar.update(n)

    def reset(self) -> None:
        self._bar.reset()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@contextmanager
def _quiet_pooch() -> Iterator[None]:
    """Hide pooch's INFO messages ("Downloading data from ...") while inside the block."""
    import pooch  # imported on use: pooch imports tqdm.auto, which warns inside notebooks without ipywidgets

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _checked_mirrors(mirrors: Sequence[str]) -> list[str]:
    """``mirrors`` as a new list, after checking that there is at least one and all are http(s)."""
    mirrors = list(mirrors)
    if not mirrors:
        raise ValueError("no mirrors given")
    for m in mirrors:
        if not str(m).startswith(("http://", "https://")):
            raise ValueError(f"mirror {m!r} is not an http(s) URL")
    return mirrors


def _is_checksum_mismatch(error: Exception) -> bool:
    """Whether an error of :func:`pooch.retrieve` is its hash mismatch (a plain ``ValueError``;
    the network errors of ``requests`` are ``OSError``)."""
    return isinstance(error, ValueError) and not isinstance(error, OSError)


def _check_archive(path: Path, name: str) -> None:
    """Read the archive at ``path``, a zip or tar by its final ``name``, to its end (a zip's
    every member against its CRC, a tar's every member header through the compressed stream).

    Raises:
        ValueError: naming ``path`` if the archive is truncated or corrupt.
    """
    import tarfile
    import zipfile

    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()
            if bad is not None:
                raise ValueError(f"member {bad} fails its CRC")
        else:
            with tarfile.open(path, "r:*") as tar:
                for _ in tar:
                    pass
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError) as e:
        raise ValueError(f"{path}: incomplete or corrupt archive ({e})") from None


def _retrieve(url: str, target: Path, md5: str | None, timeout: float, bar_label: str | None) -> None:
    """Download ``url`` to ``target`` if its MD5 is ``md5`` (for ``None``, if it is an archive
    that reads to its end: :func:`_check_archive`); raise (and keep no file) otherwise."""
    import pooch  # imported on use, see _quiet_pooch

    bar = _ByteBar(bar_label) if bar_label else False
    downloader = pooch.HTTPDownloader(progressbar=bar, chunk_size=_CHUNK, timeout=timeout)
    fetched = target if md5 is not None else target.with_name(target.name + ".part")
    try:
        with _quiet_pooch():
            pooch.retrieve(url, known_hash=None if md5 is None else f"md5:{md5}", fname=fetched.name,
                           path=target.parent,
                           downloader=downloader)
    finally:
        if bar:
            bar.close()
    if md5 is None:
        try:
            _check_archive(fetched, target.name)
        except ValueError as e:  # a transfer cut short, as a network error is (not a checksum mismatch)
            fetched.unlink(missing_ok=True)
            raise OSError(str(e)) from None
        os.replace(fetched, target)


def _download_error(dataset: str, name: str, mirrors: list[str], errors: list[str],
                    bad_checksum: bool) -> DataNotFoundError | ChecksumError:
    """The error raised when no mirror delivered ``name``, listing each mirror's error."""
    detail = "\n".join("  - " + e for e in errors)
    if bad_checksum:
        return ChecksumError(
            f"could not download {name} for {dataset} with the published "
            f"MD5 {MD5[dataset][name]} (partial file deleted):\n{detail}"
        )
    return DataNotFoundError(
        f"could not download {name} for {dataset} from any mirror "
        f"({', '.join(mirrors)}):\n{detail}"
    )


def _download_file(dataset: str, name: str, dest: Path, mirrors: list[str], timeout: float,
                   show_progress: bool) -> None:
    """Fetch ``dest/name`` from the first mirror that delivers it with the published MD5.

    The mirror that worked is moved to the front of ``mirrors`` (so it is tried first for
    the next file).
    """
    expected = MD5[dataset][name]
    label = f"{dataset}/{name}" if show_progress else None
    errors: list[str] = []
    bad_checksum = False
    for i, base in enumerate(mirrors):
        url = base.rstrip("/") + "/" + name
        try:
            _retrieve(url, dest / name, expected, timeout, label)
        except (OSError, ValueError) as e:
            mismatch = _is_checksum_mismatch(e)
            bad_checksum |= mismatch
            errors.append(f"{url}: {e}" if mismatch else f"{url}: {type(e).__name__}: {e}")
            continue
        mark_verified(dest / name, expected)
        mirrors.insert(0, mirrors.pop(i))
        return
    raise _download_error(dataset, name, mirrors, errors, bad_checksum)


def _is_verified(path: Path, md5: str | None) -> bool:
    """Whether ``path`` exists with the MD5 ``md5`` (exists, for ``None``)."""
    if not path.is_file():
        return False
    if md5 is None:
        return True
    try:
        verify_file(path, md5)
    except ChecksumError:
        return False
    return True


def download(dataset: str, dest_dir: str | os.PathLike | None = None,
             mirrors: Sequence[str] | None = None, progress: bool | None = None,
             timeout: float = 30, splits: Sequence[str] | None = None) -> Path:
    """Download the files of ``dataset`` (all of them, or those of ``splits``) and verify them.

    Each file is fetched from the first mirror that works (the last successful one is
    tried first for the next file), streamed to a temporary file in ``dest_dir``, checked
    against the published MD5 (a file without one, read to the end of its archive) and only
    then moved into place, so a file with the final name is always complete and verified. Files already present with the correct
    checksum are not downloaded again; a present file with a wrong checksum is replaced.

    Args:
        dataset: one of :data:`~symlib.data.ALL_DATASETS`.
        dest_dir: where to put the files (``~`` is expanded); defaults to
            :func:`~symlib.data.cache_dir` of the dataset.
        mirrors: base URLs (the file name is appended); defaults to ``MIRRORS[dataset]``.
        progress: show a progress bar on stderr; ``None`` shows it only when stderr is a
            terminal (so nothing is printed in notebooks or CI).
        timeout: seconds to wait for a server to answer.
        splits: the splits whose files are wanted (see
            :data:`~symlib.data.DATASET_FILES`); ``None`` for all.

    Returns:
        ``dest_dir`` as a :class:`~pathlib.Path` (created if needed).

    Raises:
        ValueError: if ``dataset`` or a split is unknown, or ``mirrors`` is empty or holds
            a URL that is not http(s).
        ChecksumError: if no mirror delivered a file with the right checksum and at least
            one delivered wrong bytes (the partial file is deleted).
        DataNotFoundError: listing each mirror and its error if every mirror failed
            otherwise (e.g. no network).
        OSError: if ``dest_dir`` cannot be created.
    """
    check_choice("dataset", dataset, ALL_DATASETS)
    splits = SPLITS if splits is None else tuple(splits)
    for split in splits:
        check_choice("split", split, SPLITS)
    mirrors = _checked_mirrors(MIRRORS[dataset] if mirrors is None else mirrors)
    dest = Path(cache_dir(dataset) if dest_dir is None else dest_dir).expanduser()  # as pooch does
    dest.mkdir(parents=True, exist_ok=True)
    show_progress = progress_enabled(progress)
    names = dict.fromkeys(name for split in splits for name in DATASET_FILES[dataset][split])
    for name in names:
        if not _is_verified(dest / name, MD5[dataset][name]):
            _download_file(dataset, name, dest, mirrors, timeout, show_progress)
    return dest
