"""MNIST and Fashion-MNIST: finding, verifying, downloading and loading.

This module depends only on numpy and the standard library (it does not import
JAX), so it is cheap to import from scripts, tests and notebooks.

Where the data comes from
-------------------------
``load_mnist(..., source="full")`` looks for the four standard idx files of a
dataset (``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``) in, in order:

1. ``$SYMLIB_DATA_DIR/<dataset>/`` (e.g. ``$SYMLIB_DATA_DIR/mnist/``);
2. ``$SYMLIB_DATA_DIR/`` itself, for a directory that holds one dataset's
   files directly (MNIST and Fashion-MNIST use the *same* file names, so the
   checksum check then tells you if the files belong to the other dataset);
3. the user cache ``<$XDG_CACHE_HOME or ~/.cache>/symlib/data/<dataset>/``,
   which is also where :func:`download` puts files by default.

Files are verified against the published MD5 sums (once per process and file).
If they are missing and ``download_if_missing`` is true they are downloaded from
public mirrors into the cache; if that is impossible (e.g. offline) a
:class:`DataNotFoundError` explains what was looked for and where.

``source="subset"`` needs neither files nor network: a small, deterministic,
real, exactly class-balanced subset (MNIST: 10,000 train and 2,000 test images;
Fashion-MNIST: 5,000 train and 2,000 test images) ships inside the package
(``symlib/_data/``), verified against ``symlib/_data/subset_manifest.json``; it
is produced by ``scripts/make_subset.py``.

Preprocessing (pixel scaling to [0, 1] and flattening) happens in exactly one
place, :func:`preprocess`; :func:`load_split` returns ready-to-use arrays.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import operator
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from http.client import HTTPException
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "DATASETS",
    "SPLITS",
    "SOURCES",
    "FILES",
    "MD5",
    "MIRRORS",
    "DataNotFoundError",
    "ChecksumError",
    "read_idx",
    "data_search_dirs",
    "cache_dir",
    "find_files",
    "md5_file",
    "verify_file",
    "download",
    "load_mnist",
    "subset_manifest",
    "subset_indices",
    "preprocess",
    "train_val_split",
    "load_split",
]

DATASETS = ("mnist", "fashion_mnist")
SPLITS = ("train", "test")
SOURCES = ("full", "subset")

#: split -> (images file, labels file); the standard names, same for both datasets.
FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}

#: dataset -> file name -> published MD5 of the .gz file.
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
}

#: dataset -> public base URLs, tried in order (file name is appended).
MIRRORS = {
    "mnist": [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
    ],
    "fashion_mnist": [
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://storage.googleapis.com/tensorflow/tf-keras-datasets/",
    ],
}

#: Number of examples in each full split.
N_EXAMPLES = {"train": 60_000, "test": 10_000}

ENV_DATA_DIR = "SYMLIB_DATA_DIR"
SUBSET_MANIFEST = "subset_manifest.json"

# idx type code -> big-endian numpy dtype
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_IDX_CODES = {dt.newbyteorder("="): code for code, dt in _IDX_DTYPES.items()}

# Files whose checksum has been verified in this process:
# (resolved path, size, mtime_ns, expected digest).
_VERIFIED: set[tuple[str, int, int, str]] = set()
_CHUNK = 1 << 16


class DataNotFoundError(FileNotFoundError):
    """The requested dataset files could not be found (or downloaded)."""


class ChecksumError(ValueError):
    """A file's checksum does not match the expected (published) value."""


# --------------------------------------------------------------------------- #
# idx format
# --------------------------------------------------------------------------- #
def _read_bytes(path) -> bytes:
    """Return the (decompressed, if gzip) contents of ``path``."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, ValueError, zlib.error) as e:  # BadGzipFile is an OSError
            raise ValueError(f"{path}: corrupt gzip data ({e})") from None
    return raw


def _parse_idx(raw: bytes, name: str) -> np.ndarray:
    """Parse the bytes of an idx file; ``name`` is used in error messages."""
    if len(raw) < 4:
        raise ValueError(f"{name}: not an idx file (only {len(raw)} bytes)")
    if raw[0] != 0 or raw[1] != 0:
        raise ValueError(
            f"{name}: not an idx file (bad magic number 0x{raw[:4].hex()}; "
            "the first two bytes must be zero)"
        )
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{name}: unknown idx data type code 0x{code:02x}")
    if ndim == 0:
        raise ValueError(f"{name}: idx header declares 0 dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(
            f"{name}: truncated idx header ({len(raw)} bytes, need {header} "
            f"for {ndim} dimensions)"
        )
    dims = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = _IDX_DTYPES[code]
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    payload = len(raw) - header
    if payload != expected:
        raise ValueError(
            f"{name}: idx payload is {payload} bytes but the header "
            f"(type 0x{code:02x}, shape {dims}) requires {expected}"
        )
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=True)


def read_idx(path) -> np.ndarray:
    """Read an idx file (gzip-compressed or plain) into a numpy array.

    The gzip compression is detected from the file's magic bytes.  The idx
    magic number, data type, number of dimensions and payload size are
    validated; any problem raises :class:`ValueError` naming the file.
    The result is a writable, native-byte-order array.
    """
    path = Path(path)
    return _parse_idx(_read_bytes(path), str(path))


def _idx_bytes(arr: np.ndarray) -> bytes:
    """Serialize an array to idx bytes (inverse of :func:`read_idx`)."""
    arr = np.asarray(arr)
    code = _IDX_CODES.get(arr.dtype.newbyteorder("="))
    if code is None:
        raise ValueError(f"dtype {arr.dtype} has no idx type code")
    if not 1 <= arr.ndim <= 255:
        raise ValueError(f"idx needs 1..255 dimensions, got {arr.ndim}")
    header = bytes([0, 0, code, arr.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in arr.shape
    )
    return header + np.ascontiguousarray(arr, dtype=_IDX_DTYPES[code]).tobytes()


# --------------------------------------------------------------------------- #
# locating and verifying files
# --------------------------------------------------------------------------- #
def _check_choice(kind: str, value, valid) -> None:
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; valid values: {', '.join(map(repr, valid))}")


def cache_dir(dataset: str | None = None) -> Path:
    """User cache directory for downloads: ``<$XDG_CACHE_HOME or ~/.cache>/symlib/data[/<dataset>]``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = Path(base) / "symlib" / "data"
    if dataset is None:
        return root
    _check_choice("dataset", dataset, DATASETS)
    return root / dataset


def data_search_dirs(dataset: str) -> list[Path]:
    """Directories searched for ``dataset``'s files, in order of preference.

    ``$SYMLIB_DATA_DIR/<dataset>`` and ``$SYMLIB_DATA_DIR`` (both only when the
    variable is set and non-empty), then :func:`cache_dir` for the dataset.
    Directories are listed whether or not they exist.
    """
    _check_choice("dataset", dataset, DATASETS)
    dirs = []
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        root = Path(os.path.expanduser(env))
        dirs += [root / dataset, root]
    dirs.append(cache_dir(dataset))
    return dirs


def find_files(dataset: str, split: str) -> tuple[Path, Path] | None:
    """Return ``(images_path, labels_path)`` from the first search directory
    (see :func:`data_search_dirs`) holding both files of ``split``, else None.

    Files are not verified here; :func:`load_mnist` does that.
    """
    _check_choice("dataset", dataset, DATASETS)
    _check_choice("split", split, SPLITS)
    for d in data_search_dirs(dataset):
        paths = tuple(d / f for f in FILES[split])
        if all(p.is_file() for p in paths):
            return paths  # type: ignore[return-value]
    return None


def md5_file(path) -> str:
    """Hex MD5 digest of a file's bytes (as stored, i.e. of the .gz)."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path, expected_md5: str) -> None:
    """Raise :class:`ChecksumError` unless ``md5_file(path) == expected_md5``.

    Successful verifications are remembered for the process (keyed by path,
    size and modification time), so repeated calls are cheap.
    """
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, expected_md5.lower())
    if key in _VERIFIED:
        return
    actual = md5_file(path)
    if actual != expected_md5.lower():
        raise ChecksumError(
            f"checksum mismatch for {path}: expected MD5 {expected_md5}, got {actual} "
            "(the file is corrupt, incomplete, or belongs to another dataset; "
            "delete it and download it again)"
        )
    _VERIFIED.add(key)


# --------------------------------------------------------------------------- #
# downloading
# --------------------------------------------------------------------------- #
class _Progress:
    """Minimal single-line text progress bar on stderr."""

    def __init__(self, label: str, total: int | None, stream=None):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream if stream is not None else sys.stderr
        self._last = 0.0

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        mb = self.done / 1e6
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(30 * frac)
            line = f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}% {mb:.1f}/{self.total / 1e6:.1f} MB"
        else:
            line = f"\r{self.label} {mb:.1f} MB"
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        self._draw()
        self.stream.write("\n")
        self.stream.flush()


def _show_progress(progress: bool | None) -> bool:
    if progress is not None:
        return bool(progress)
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _fetch(url: str, tmp, timeout: float, show: bool, label: str) -> str:
    """Stream ``url`` into the open binary file ``tmp``; return the MD5 digest."""
    opener = urllib.request.build_opener()  # honours *_proxy / no_proxy
    h = hashlib.md5(usedforsecurity=False)
    with opener.open(url, timeout=timeout) as resp:
        length = resp.headers.get("Content-Length")
        bar = _Progress(label, int(length) if length and length.isdigit() else None) if show else None
        try:
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                tmp.write(chunk)
                h.update(chunk)
                if bar:
                    bar.update(len(chunk))
        finally:
            if bar:
                bar.close()
    return h.hexdigest()


def download(dataset: str, dest_dir=None, mirrors=None, progress=None, timeout=30) -> Path:
    """Download the four files of ``dataset`` into ``dest_dir`` and verify them.

    ``dest_dir`` defaults to :func:`cache_dir` for the dataset; ``mirrors`` to
    ``MIRRORS[dataset]`` (base URLs; the file name is appended).  Each file is
    fetched from the first mirror that works (the last successful one is tried
    first for the next file), streamed to a temporary file in ``dest_dir``,
    checked against the published MD5 and only then atomically renamed into
    place, so a file with the final name is always complete and verified.
    Files already present with the correct checksum are not downloaded again.

    A progress bar is written to stderr if ``progress`` is true, or if it is
    None and stderr is a terminal (so nothing is printed in notebooks or CI).

    Raises :class:`ChecksumError` if no mirror delivered the file with the right
    checksum and at least one delivered wrong bytes (the partial file is
    deleted), and :class:`DataNotFoundError` listing each mirror and its error if
    every mirror failed otherwise (e.g. no network).  Returns ``dest_dir``.
    """
    _check_choice("dataset", dataset, DATASETS)
    mirrors = list(MIRRORS[dataset] if mirrors is None else mirrors)
    if not mirrors:
        raise ValueError("no mirrors given")
    for m in mirrors:
        if not str(m).startswith(("http://", "https://")):
            raise ValueError(f"mirror {m!r} is not an http(s) URL")
    dest = Path(cache_dir(dataset) if dest_dir is None else dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    show = _show_progress(progress)

    for split in SPLITS:
        for name in FILES[split]:
            expected = MD5[dataset][name]
            target = dest / name
            if target.is_file():
                try:
                    verify_file(target, expected)
                    continue
                except ChecksumError:
                    pass  # re-download and replace
            errors: list[str] = []
            bad_checksum = False
            for i, base in enumerate(mirrors):
                url = base.rstrip("/") + "/" + name
                fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=dest)
                tmp_path = Path(tmp_name)
                try:
                    with os.fdopen(fd, "wb") as tmp:
                        actual = _fetch(url, tmp, timeout, show, f"{dataset}/{name}")
                    if actual != expected:
                        bad_checksum = True
                        errors.append(
                            f"{url}: checksum mismatch (expected MD5 {expected}, got {actual})"
                        )
                        continue
                    os.replace(tmp_path, target)
                    _VERIFIED.add(
                        (str(target.resolve()), target.stat().st_size,
                         target.stat().st_mtime_ns, expected)
                    )
                    if i:  # prefer the mirror that worked for the next files
                        mirrors.insert(0, mirrors.pop(i))
                    break
                except (OSError, HTTPException, ValueError) as e:
                    errors.append(f"{url}: {type(e).__name__}: {e}")
                finally:
                    tmp_path.unlink(missing_ok=True)
            else:
                detail = "\n".join("  - " + e for e in errors)
                if bad_checksum:
                    raise ChecksumError(
                        f"could not download {name} for {dataset} with the published "
                        f"MD5 {expected} (partial file deleted):\n{detail}"
                    )
                raise DataNotFoundError(
                    f"could not download {name} for {dataset} from any mirror "
                    f"({', '.join(mirrors)}):\n{detail}"
                )
    return dest


# --------------------------------------------------------------------------- #
# loading
# --------------------------------------------------------------------------- #
def _check_arrays(images, labels, where: str):
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(f"{where}: expected uint8 images of shape (n, 28, 28), got {images.dtype} {images.shape}")
    if labels.dtype != np.uint8 or labels.shape != (images.shape[0],):
        raise ValueError(
            f"{where}: expected uint8 labels of shape ({images.shape[0]},), got {labels.dtype} {labels.shape}"
        )
    if labels.size and labels.max() > 9:
        raise ValueError(f"{where}: labels outside 0..9 (max {labels.max()})")
    return images, labels


def _subset_resource(name: str):
    return resources.files("symlib") / "_data" / name


def subset_manifest() -> dict:
    """The manifest of the shipped subset (``symlib/_data/subset_manifest.json``)."""
    return json.loads(_subset_resource(SUBSET_MANIFEST).read_text(encoding="utf-8"))


def _subset_entry(dataset: str, split: str) -> dict:
    subsets = subset_manifest()["subsets"]
    if split not in subsets.get(dataset, {}):
        shipped = ", ".join(f"{d}/{s}" for d in subsets for s in subsets[d])
        raise ValueError(
            f"the shipped subset has no {dataset}/{split} split; shipped: {shipped} "
            "(use source='full' for everything else)"
        )
    return subsets[dataset][split]


def _load_subset_file(info: dict) -> np.ndarray:
    name = info["file"]
    raw = _subset_resource(name).read_bytes()
    try:
        raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"shipped subset file {name}: corrupt gzip data ({e})") from None
    actual = hashlib.sha256(raw).hexdigest()  # a few ms; always checked
    if actual != info["sha256"]:
        raise ChecksumError(
            f"shipped subset file {name}: expected sha256 {info['sha256']} "
            f"(from {SUBSET_MANIFEST}), got {actual}; reinstall symlib or rerun "
            "scripts/make_subset.py"
        )
    return _parse_idx(raw, f"shipped subset file {name}")


def subset_indices(dataset: str, split: str) -> np.ndarray:
    """Indices into the full ``split`` of ``dataset`` that form the shipped subset
    (``load_mnist(dataset, split, "subset")[0] == full_images[subset_indices(...)]``)."""
    _check_choice("dataset", dataset, DATASETS)
    _check_choice("split", split, SPLITS)
    return _load_subset_file(_subset_entry(dataset, split)["indices"]).astype(np.int64)


def _missing_message(dataset: str, split: str, dirs, download_note: str) -> str:
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


def load_mnist(dataset="mnist", split="train", source="full", download_if_missing=True):
    """Load a split of MNIST or Fashion-MNIST as ``(images, labels)``.

    Returns uint8 images of shape ``(n, 28, 28)`` (0..255) and uint8 labels of
    shape ``(n,)`` (0..9).  ``source="full"`` loads the complete split from the
    standard idx files (see the module docstring for where they are looked for;
    they are MD5-verified once per process, and downloaded into the user cache
    if missing and ``download_if_missing``); a :class:`DataNotFoundError` says
    which files and directories were tried if that fails, including when
    offline.  ``source="subset"`` loads the small subset shipped with the
    package (sha256-verified against its manifest); splits not shipped raise
    :class:`ValueError`.
    """
    _check_choice("dataset", dataset, DATASETS)
    _check_choice("split", split, SPLITS)
    _check_choice("source", source, SOURCES)

    if source == "subset":
        entry = _subset_entry(dataset, split)
        images = _load_subset_file(entry["images"])
        labels = _load_subset_file(entry["labels"])
        return _check_arrays(images, labels, f"shipped subset {dataset}/{split}")

    paths = find_files(dataset, split)
    if paths is None:
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
        paths = tuple(dest / f for f in FILES[split])
    for p in paths:
        verify_file(p, MD5[dataset][p.name])
    images, labels = (read_idx(p) for p in paths)
    return _check_arrays(images, labels, f"{paths[0].parent}")


# --------------------------------------------------------------------------- #
# preprocessing and splits
# --------------------------------------------------------------------------- #
def preprocess(images) -> np.ndarray:
    """Scale uint8 pixels to float32 in [0, 1] and flatten each image.

    ``images`` of shape ``(n, 28, 28)`` (or any ``(n, ...)``) become
    ``(n, 784)`` (``(n, prod(...))``).  This is the one place where pixel
    scaling happens; non-uint8 input is rejected to avoid scaling twice.
    """
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(f"preprocess expects raw uint8 pixels, got dtype {images.dtype}")
    if images.ndim < 2:
        raise ValueError(f"preprocess expects shape (n, ...), got {images.shape}")
    flat = images.reshape(images.shape[0], int(np.prod(images.shape[1:])))
    return flat.astype(np.float32) / np.float32(255.0)


def _as_count(name: str, value) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def train_val_split(n, val_size, seed=0):
    """Deterministically split ``range(n)`` into ``(train_idx, val_idx)``.

    A permutation from ``np.random.default_rng(seed)`` is drawn; its first
    ``val_size`` entries are the validation indices and the rest the training
    indices (both int64, in that permuted order, disjoint, together covering
    ``range(n)``).  Taking a prefix of ``train_idx`` gives a random subsample.
    """
    n = _as_count("n", n)
    val_size = _as_count("val_size", val_size)
    if val_size > n:
        raise ValueError(f"val_size={val_size} exceeds the number of examples n={n}")
    perm = np.random.default_rng(seed).permutation(n).astype(np.int64)
    return perm[val_size:], perm[:val_size]


def load_split(dataset, source, n_train=None, n_val=0, n_test=None, seed=0) -> dict:
    """Load train/validation/test arrays ready for a model.

    The train split of ``dataset`` (from ``source``, see :func:`load_mnist`) is
    split with :func:`train_val_split` (``n_val`` examples, ``seed``); the first
    ``n_train`` of the remaining (all if None) form the training set.  The test
    set is the first ``n_test`` test examples (all if None).  Splits with zero
    requested examples are not loaded (e.g. ``n_train=0, n_val=0`` needs no
    train split).

    Returns a dict with ``x_train, y_train, x_val, y_val, x_test, y_test``;
    ``x_*`` are float32 ``(n, 784)`` in [0, 1] (via :func:`preprocess`),
    ``y_*`` int32 ``(n,)``.
    """
    _check_choice("dataset", dataset, DATASETS)
    _check_choice("source", source, SOURCES)
    n_val = _as_count("n_val", n_val)
    if n_train is not None:
        n_train = _as_count("n_train", n_train)
    if n_test is not None:
        n_test = _as_count("n_test", n_test)

    def empty():
        return np.zeros((0, 28 * 28), np.float32), np.zeros((0,), np.int32)

    def prep(images, labels):
        return preprocess(images), labels.astype(np.int32)

    out = {}
    if n_train == 0 and n_val == 0:
        out["x_train"], out["y_train"] = empty()
        out["x_val"], out["y_val"] = empty()
    else:
        images, labels = load_mnist(dataset, "train", source)
        avail = images.shape[0]
        want = n_val + (n_train if n_train is not None else 0)
        if want > avail:
            raise ValueError(
                f"requested n_train={n_train} + n_val={n_val} = {want} training examples, "
                f"but only {avail} are available in the {dataset} train split of "
                f"source={source!r}"
                + (" (use source='full' for up to 60000)" if source == "subset" else "")
            )
        train_idx, val_idx = train_val_split(avail, n_val, seed)
        if n_train is not None:
            train_idx = train_idx[:n_train]
        out["x_train"], out["y_train"] = prep(images[train_idx], labels[train_idx])
        out["x_val"], out["y_val"] = prep(images[val_idx], labels[val_idx])

    if n_test == 0:
        out["x_test"], out["y_test"] = empty()
    else:
        images, labels = load_mnist(dataset, "test", source)
        avail = images.shape[0]
        if n_test is not None and n_test > avail:
            raise ValueError(
                f"requested n_test={n_test} test examples, but only {avail} are available "
                f"in the {dataset} test split of source={source!r}"
                + (" (use source='full' for up to 10000)" if source == "subset" else "")
            )
        k = avail if n_test is None else n_test
        out["x_test"], out["y_test"] = prep(images[:k], labels[:k])
    return {k: out[k] for k in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")}
