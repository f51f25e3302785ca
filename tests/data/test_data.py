"""Tests for symlib.data: idx parsing, checksums, search, download, subset, splits.

Tests that need the complete MNIST / Fashion-MNIST files use ``$SYMLIB_DATA_DIR``
if set, else ``../shared/data`` next to the repository, and are skipped if
neither holds the files.  The downloader is only ever pointed at loopback
servers (127.0.0.1).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pooch
import pytest

from _helpers import corrupt, leftovers, unreachable_url
from symlib import data
from symlib.data import ChecksumError, DataNotFoundError
from symlib.data import subset as data_subset

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SYMLIB_DATA_DIR") or REPO.parent / "shared" / "data")


def _have(dataset: str) -> bool:
    return all((SHARED / dataset / f).is_file() for s in data.SPLITS for f in data.FILES[s])


needs_mnist = pytest.mark.skipif(
    not _have("mnist"), reason=f"full MNIST idx files not found in {SHARED / 'mnist'} (set SYMLIB_DATA_DIR)"
)
needs_fashion = pytest.mark.skipif(
    not _have("fashion_mnist"),
    reason=f"full Fashion-MNIST idx files not found in {SHARED / 'fashion_mnist'} (set SYMLIB_DATA_DIR)",
)
#: (dataset, split) -> number of examples in the shipped subset (n // 10 per class)
SUBSET_SIZES = {
    ("mnist", "train"): 10_000,
    ("mnist", "test"): 2_000,
    ("fashion_mnist", "train"): 5_000,
    ("fashion_mnist", "test"): 2_000,
}
SUBSET_SPLITS = list(SUBSET_SIZES)
_NEEDS = {"mnist": needs_mnist, "fashion_mnist": needs_fashion}
SUBSET_SPLITS_FULL = [pytest.param(d, s, marks=_NEEDS[d]) for d, s in SUBSET_SPLITS]
pytestmark = pytest.mark.usefixtures("isolated_data_env")  # see conftest.py


def _copy_dataset(dataset: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for split in data.SPLITS:
        for name in data.FILES[split]:
            shutil.copyfile(SHARED / dataset / name, dest / name)
    return dest


# --------------------------------------------------------------------------- #
# module basics
# --------------------------------------------------------------------------- #
def test_import_does_not_import_jax():
    code = "import sys, symlib.data; assert 'jax' not in sys.modules, sorted(m for m in sys.modules if 'jax' in m)"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_constants():
    assert data.DATASETS == ("mnist", "fashion_mnist")
    assert set(data.FILES) == {"train", "test"}
    for ds in data.DATASETS:
        assert set(data.MD5[ds]) == {f for s in data.FILES.values() for f in s}
        assert all(len(v) == 32 for v in data.MD5[ds].values())
        assert data.MIRRORS[ds] and all(m.startswith(("http://", "https://")) for m in data.MIRRORS[ds])
    assert data.MD5["mnist"]["train-images-idx3-ubyte.gz"] == "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    assert data.MD5["fashion_mnist"]["t10k-labels-idx1-ubyte.gz"] == "bb300cfdad3c16e7a12a480ee83cd310"
    assert issubclass(DataNotFoundError, FileNotFoundError)
    assert issubclass(ChecksumError, ValueError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: data.load_mnist("cifar10"),
        lambda: data.load_mnist("mnist", "validation"),
        lambda: data.load_mnist("mnist", "train", source="web"),
        lambda: data.find_files("emnist", "train"),
        lambda: data.load_split("kmnist", "subset"),
        lambda: data.load_split("mnist", "everything"),
    ],
)
def test_unknown_choices_list_valid_values(call):
    with pytest.raises(ValueError, match="valid values"):
        call()


# --------------------------------------------------------------------------- #
# idx parsing
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_roundtrip(tmp_path, dtype, compress):
    arr = (np.arange(2 * 3 * 4) - 5).reshape(2, 3, 4).astype(dtype)
    raw = data.idx_bytes(arr)
    path = tmp_path / ("a.idx.gz" if compress else "a.idx")
    path.write_bytes(gzip.compress(raw) if compress else raw)
    out = data.read_idx(path)
    assert out.dtype == np.dtype(dtype) and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)
    out[0, 0, 0] = 1  # writable


def _header(code, dims):
    return bytes([0, 0, code, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not an idx file"),
        (b"\x00\x00", "not an idx file"),
        (b"\x01\x02\x08\x01" + (3).to_bytes(4, "big") + b"abc", "magic"),
        (_header(0x07, [3]) + b"abc", "type code"),
        (b"\x00\x00\x08\x00", "0 dimensions"),
        (b"\x00\x00\x08\x03" + (3).to_bytes(4, "big"), "truncated idx header"),
        (_header(0x08, [2, 3]) + b"12345", "requires 6"),
        (_header(0x08, [2, 3]) + b"1234567", "requires 6"),
        (_header(0x0C, [2]) + b"1234", "requires 8"),
        (b"\x1f\x8b\x08\x00garbage-not-gzip", "corrupt gzip"),
        (gzip.compress(_header(0x08, [60000, 28, 28]) + b"\x00" * 100, mtime=0)[:-10], "corrupt gzip"),
    ],
)
def test_read_idx_rejects_malformed(tmp_path, content, message):
    path = tmp_path / "broken-idx3-ubyte"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as err:
        data.read_idx(path)
    assert str(path) in str(err.value)


# --------------------------------------------------------------------------- #
# checksums
# --------------------------------------------------------------------------- #
def test_md5_and_verify(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"hello symlib")
    good = hashlib.md5(b"hello symlib").hexdigest()
    assert data.md5_file(path) == good
    data.verify_file(path, good)
    data.verify_file(path, good.upper())
    bad = "0" * 32
    with pytest.raises(ChecksumError) as err:
        data.verify_file(path, bad)
    msg = str(err.value)
    assert str(path) in msg and bad in msg and good in msg


def test_verify_cache_notices_modification(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"a")
    data.verify_file(path, hashlib.md5(b"a").hexdigest())
    path.write_bytes(b"bb")  # size changes -> cache key changes
    with pytest.raises(ChecksumError):
        data.verify_file(path, hashlib.md5(b"a").hexdigest())


@pytest.mark.parametrize(
    "dataset", [pytest.param("mnist", marks=needs_mnist), pytest.param("fashion_mnist", marks=needs_fashion)]
)
def test_shared_files_match_published_md5(dataset):
    for name, md5 in data.MD5[dataset].items():
        assert data.md5_file(SHARED / dataset / name) == md5


@needs_mnist
def test_corrupted_copy_rejected_by_loader(tmp_path, monkeypatch):
    root = tmp_path / "data"
    d = root / "mnist"
    d.mkdir(parents=True)
    for name in data.FILES["test"]:
        shutil.copyfile(SHARED / "mnist" / name, d / name)
    corrupt(d / "t10k-labels-idx1-ubyte.gz")
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(root))
    with pytest.raises(ChecksumError) as err:
        data.load_mnist("mnist", "test", download_if_missing=False)
    assert "t10k-labels-idx1-ubyte.gz" in str(err.value)
    assert data.MD5["mnist"]["t10k-labels-idx1-ubyte.gz"] in str(err.value)


# --------------------------------------------------------------------------- #
# search dirs
# --------------------------------------------------------------------------- #
def test_search_dirs(tmp_path, monkeypatch):
    cache = tmp_path / "xdg-cache" / "symlib" / "data" / "mnist"
    assert data.data_search_dirs("mnist") == [cache]
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "d"))
    assert data.data_search_dirs("mnist") == [tmp_path / "d" / "mnist", tmp_path / "d", cache]
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert data.data_search_dirs("fashion_mnist")[-1] == (
        Path.home() / ".cache" / "symlib" / "data" / "fashion_mnist"
    )
    assert data.find_files("mnist", "train") is None


def _fake_md5(monkeypatch, dataset: str, content: bytes) -> None:
    """``dataset``'s published MD5s replaced by those of small files: ``<name>`` holds
    ``content + name`` (:func:`_fake_file`)."""
    monkeypatch.setitem(data.MD5, dataset, {name: hashlib.md5(content + name.encode()).hexdigest()
                                            for name in data.MD5[dataset]})


def _fake_file(path: Path, content: bytes) -> None:
    path.write_bytes(content + path.name.encode())


def test_find_files_layouts(tmp_path, monkeypatch):
    root = tmp_path / "d"
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(root))
    _fake_md5(monkeypatch, "mnist", b"x")
    _fake_md5(monkeypatch, "fashion_mnist", b"x")
    (root / "mnist").mkdir(parents=True)
    for name in data.FILES["test"]:  # flat layout: files directly in SYMLIB_DATA_DIR
        _fake_file(root / name, b"x")
    assert data.find_files("mnist", "test") == tuple(root / n for n in data.FILES["test"])
    assert data.find_files("mnist", "train") is None
    for name in data.FILES["test"]:  # per-dataset folder takes precedence
        _fake_file(root / "mnist" / name, b"x")
    assert data.find_files("mnist", "test") == tuple(root / "mnist" / n for n in data.FILES["test"])
    # only one of the two files in the cache: not found there
    cache = data.cache_dir("fashion_mnist")
    cache.mkdir(parents=True)
    _fake_file(cache / data.FILES["train"][0], b"x")
    assert data.find_files("fashion_mnist", "train") is None


def test_find_files_skips_a_folder_of_another_datasets_files(tmp_path, monkeypatch, caplog):
    """SYMLIB_DATA_DIR holding MNIST's files directly (same names as Fashion-MNIST's) does not hide
    the verified Fashion-MNIST files in the cache, and the mismatch says whose files they are."""
    _fake_md5(monkeypatch, "mnist", b"mnist")
    _fake_md5(monkeypatch, "fashion_mnist", b"fashion")
    root = tmp_path / "d"
    root.mkdir()
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(root))
    for name in data.FILES["test"]:
        _fake_file(root / name, b"mnist")
    assert data.find_files("mnist", "test") == tuple(root / n for n in data.FILES["test"])
    with pytest.raises(ChecksumError) as err:  # nothing else: the mismatch is the error
        data.find_files("fashion_mnist", "test")
    msg = str(err.value)
    assert str(root / data.FILES["test"][0]) in msg and "it is mnist's t10k-images-idx3-ubyte.gz" in msg
    assert "delete it" not in msg  # they are good files, of another dataset
    cache = data.cache_dir("fashion_mnist")
    cache.mkdir(parents=True)
    for name in data.FILES["test"]:
        _fake_file(cache / name, b"fashion")
    with caplog.at_level(logging.WARNING, logger="symlib.data.files"):
        assert data.find_files("fashion_mnist", "test") == tuple(cache / n for n in data.FILES["test"])
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert str(root) in caplog.text and "it is mnist's t10k-images-idx3-ubyte.gz" in caplog.text


def test_a_file_of_no_known_dataset_is_called_corrupt(tmp_path):
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(b"garbage")
    with pytest.raises(ChecksumError, match="corrupt or incomplete; delete it"):
        data.verify_file(path, data.MD5["mnist"][path.name])


# --------------------------------------------------------------------------- #
# full data
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "dataset, split, n",
    [
        pytest.param("mnist", "train", 60000, marks=needs_mnist),
        pytest.param("mnist", "test", 10000, marks=needs_mnist),
        pytest.param("fashion_mnist", "train", 60000, marks=needs_fashion),
        pytest.param("fashion_mnist", "test", 10000, marks=needs_fashion),
    ],
)
def test_load_full(monkeypatch, dataset, split, n):
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(SHARED))
    monkeypatch.setitem(data.MIRRORS, dataset, [unreachable_url()])
    images, labels = data.load_mnist(dataset, split, download_if_missing=False)
    assert images.shape == (n, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (n,) and labels.dtype == np.uint8
    assert images.min() == 0 and images.max() == 255
    assert set(np.unique(labels)) == set(range(10))
    counts = np.bincount(labels, minlength=10)
    assert counts.min() > n // 20  # every class well represented
    x = data.preprocess(images[:500])
    assert x.shape == (500, 784) and x.dtype == np.float32
    assert x.min() == 0.0 and x.max() == 1.0


@needs_mnist
def test_flat_data_dir_layout(monkeypatch):
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(SHARED / "mnist"))
    images, labels = data.load_mnist("mnist", "test", download_if_missing=False)
    assert images.shape == (10000, 28, 28) and labels.shape == (10000,)


# --------------------------------------------------------------------------- #
# missing data, offline
# --------------------------------------------------------------------------- #
def _check_missing_message(msg: str, split="train"):
    for name in data.FILES[split]:
        assert name in msg
    for d in data.data_search_dirs("mnist"):
        assert str(d) in msg
    assert "SYMLIB_DATA_DIR" in msg


@pytest.mark.parametrize("download_if_missing", [False, True])
def test_missing_offline_gives_clear_error(tmp_path, monkeypatch, download_if_missing):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(empty))
    mirror = unreachable_url()
    monkeypatch.setitem(data.MIRRORS, "mnist", [mirror])
    with pytest.raises(DataNotFoundError) as err:
        data.load_mnist("mnist", "train", download_if_missing=download_if_missing)
    msg = str(err.value)
    _check_missing_message(msg)
    assert len(data.data_search_dirs("mnist")) == 3
    if download_if_missing:
        assert mirror in msg  # the failed mirror and its error are reported
        assert not any(n.endswith(".part") for n in leftovers(data.cache_dir("mnist")))
    # load_split surfaces the same error
    with pytest.raises(DataNotFoundError):
        data.load_split("mnist", "full", n_train=10)


def test_download_all_mirrors_fail(tmp_path):
    mirrors = [unreachable_url(), unreachable_url()]
    with pytest.raises(DataNotFoundError) as err:
        data.download("mnist", dest_dir=tmp_path / "dl", mirrors=mirrors, timeout=5)
    msg = str(err.value)
    assert all(m in msg for m in mirrors)
    assert "train-images-idx3-ubyte.gz" in msg
    assert leftovers(tmp_path / "dl") == []


def test_download_rejects_non_http_mirror(tmp_path):
    with pytest.raises(ValueError, match="not an http"):
        data.download("mnist", dest_dir=tmp_path, mirrors=["file:///etc/"])


# --------------------------------------------------------------------------- #
# downloader against a loopback server
# --------------------------------------------------------------------------- #
@needs_mnist
def test_download_from_local_server(tmp_path, serve, capsys):
    server = serve(_copy_dataset("mnist", tmp_path / "served"))
    dest = tmp_path / "dl"
    out = data.download("mnist", dest_dir=dest, mirrors=[unreachable_url(), server.url], timeout=5)
    assert out == dest
    expected = sorted(data.MD5["mnist"])
    assert leftovers(dest) == expected  # no partial files
    for name in expected:
        assert data.md5_file(dest / name) == data.MD5["mnist"][name]
    assert len(server.requests) == 4
    assert capsys.readouterr().err == ""  # stderr is not a TTY under pytest: no progress bar
    # already present and correct: nothing fetched again
    data.download("mnist", dest_dir=dest, mirrors=[server.url])
    assert len(server.requests) == 4
    # a corrupted local file is replaced, with a progress bar when asked for; the
    # unreachable mirror tried first leaves no bar without a total (no "%") behind
    corrupt(dest / "t10k-labels-idx1-ubyte.gz")
    data.download("mnist", dest_dir=dest, mirrors=[unreachable_url(), server.url], progress=True)
    assert server.requests[4:] == ["/t10k-labels-idx1-ubyte.gz"]
    assert data.md5_file(dest / "t10k-labels-idx1-ubyte.gz") == data.MD5["mnist"]["t10k-labels-idx1-ubyte.gz"]
    err = capsys.readouterr().err
    assert "mnist/t10k-labels-idx1-ubyte.gz" in err and "100%" in err
    bars = [line for line in err.replace("\r", "\n").splitlines() if "t10k-labels" in line]
    assert bars and all("%" in line for line in bars)
    assert leftovers(dest) == expected


@needs_mnist
def test_download_is_quiet_and_expands_home(tmp_path, serve, monkeypatch):
    # pooch logs "Downloading data from ..." at INFO through its own handler on stderr;
    # download() silences it (a notebook would show it) and restores the level
    server = serve(_copy_dataset("mnist", tmp_path / "served"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = pooch.get_logger()
    level = logger.level
    logger.addHandler(handler)
    try:
        out = data.download("mnist", dest_dir="~/dl", mirrors=[server.url], timeout=5)
    finally:
        logger.removeHandler(handler)
    assert records == [] and logger.level == level
    assert out == tmp_path / "home" / "dl"
    assert leftovers(out) == sorted(data.MD5["mnist"])


@needs_mnist
def test_download_checksum_mismatch(tmp_path, serve):
    served = _copy_dataset("mnist", tmp_path / "served")
    corrupt(served / "train-labels-idx1-ubyte.gz")
    server = serve(served)
    dest = tmp_path / "dl"
    with pytest.raises(ChecksumError) as err:
        data.download("mnist", dest_dir=dest, mirrors=[server.url], timeout=5)
    msg = str(err.value)
    assert "train-labels-idx1-ubyte.gz" in msg and data.MD5["mnist"]["train-labels-idx1-ubyte.gz"] in msg
    # the file fetched before is complete; the corrupt one left nothing behind
    assert leftovers(dest) == ["train-images-idx3-ubyte.gz"]


@needs_mnist
def test_download_mismatch_falls_back_to_good_mirror(tmp_path, serve):
    bad = _copy_dataset("mnist", tmp_path / "bad")
    corrupt(bad / "t10k-labels-idx1-ubyte.gz")
    bad_server = serve(bad)
    good_server = serve(_copy_dataset("mnist", tmp_path / "good"))
    dest = tmp_path / "dl"
    data.download("mnist", dest_dir=dest, mirrors=[bad_server.url, good_server.url], timeout=5)
    assert leftovers(dest) == sorted(data.MD5["mnist"])
    assert good_server.requests == ["/t10k-labels-idx1-ubyte.gz"]


@needs_mnist
def test_load_mnist_downloads_into_cache(tmp_path, serve, monkeypatch):
    server = serve(_copy_dataset("mnist", tmp_path / "served"))
    monkeypatch.setitem(data.MIRRORS, "mnist", [server.url])
    images, labels = data.load_mnist("mnist", "test")
    assert images.shape == (10000, 28, 28) and labels.shape == (10000,)
    assert leftovers(data.cache_dir("mnist")) == sorted(data.FILES["test"])  # only the split asked for
    assert data.find_files("mnist", "test") == tuple(data.cache_dir("mnist") / n for n in data.FILES["test"])
    data.load_mnist("mnist", "train")
    assert server.requests[2:] == ["/" + n for n in data.FILES["train"]]
    assert leftovers(data.cache_dir("mnist")) == sorted(data.MD5["mnist"])
    data.load_mnist("mnist", "test")  # found in the cache now
    data.load_mnist("mnist", "train")
    assert len(server.requests) == 4


# --------------------------------------------------------------------------- #
# shipped subset
# --------------------------------------------------------------------------- #
def test_subset_manifest_files_and_size():
    manifest = data.subset_manifest()
    assert manifest["selection"]["seed"] == 0
    assert "make_subset.py" in manifest["command"]
    shipped = {(d, s) for d, splits in manifest["subsets"].items() for s in splits}
    assert shipped == set(SUBSET_SPLITS)
    data_dir = REPO / "symlib" / "_data"
    expected_files = {data.SUBSET_MANIFEST}
    total = 0
    for dataset, split in SUBSET_SPLITS:
        entry = manifest["subsets"][dataset][split]
        n = SUBSET_SIZES[dataset, split]
        assert entry["n"] == n and entry["n_full"] == data.N_EXAMPLES[split]
        assert entry["class_counts"] == [n // 10] * 10  # exactly class-balanced
        assert entry["source"]["images"]["file"] == f"{dataset}/{data.FILES[split][0]}"
        assert entry["source"]["images"]["md5"] == data.MD5[dataset][data.FILES[split][0]]
        assert entry["source"]["labels"]["md5"] == data.MD5[dataset][data.FILES[split][1]]
        for kind in ("images", "labels", "indices"):
            info = entry[kind]
            path = data_dir / info["file"]
            raw = gzip.decompress(path.read_bytes())
            assert hashlib.sha256(raw).hexdigest() == info["sha256"]
            assert list(data.read_idx(path).shape) == info["shape"]
            assert info["shape"][0] == n
            expected_files.add(info["file"])
            total += path.stat().st_size
    # nothing else ships in symlib/_data, and it stays small (about 5.1 MB now)
    assert {p.name for p in data_dir.iterdir() if not p.name.startswith(".")} == expected_files
    assert total < 6e6


@pytest.mark.parametrize("dataset, split", SUBSET_SPLITS)
def test_subset_loads_offline(tmp_path, monkeypatch, dataset, split):
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "nothing-here"))
    monkeypatch.setitem(data.MIRRORS, dataset, [unreachable_url()])
    entry = data.subset_manifest()["subsets"][dataset][split]
    images, labels = data.load_mnist(dataset, split, source="subset", download_if_missing=False)
    n = entry["n"]
    assert images.shape == (n, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (n,) and labels.dtype == np.uint8
    assert int(images.max()) == 255 and int(images.min()) == 0 and int(labels.max()) == 9
    assert np.bincount(labels, minlength=10).tolist() == entry["class_counts"] == [n // 10] * 10
    assert hashlib.sha256(data.idx_bytes(images)).hexdigest() == entry["images"]["sha256"]
    assert hashlib.sha256(data.idx_bytes(labels)).hexdigest() == entry["labels"]["sha256"]
    idx = data.subset_indices(dataset, split)
    assert idx.shape == (n,) and np.all(np.diff(idx) > 0)
    assert idx[0] >= 0 and idx[-1] < entry["n_full"]


@pytest.mark.parametrize("dataset, split", SUBSET_SPLITS_FULL)
def test_subset_equals_full_data_at_indices(monkeypatch, dataset, split):
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(SHARED))
    full_x, full_y = data.load_mnist(dataset, split, download_if_missing=False)
    sub_x, sub_y = data.load_mnist(dataset, split, source="subset")
    idx = data.subset_indices(dataset, split)
    np.testing.assert_array_equal(sub_x, full_x[idx])
    np.testing.assert_array_equal(sub_y, full_y[idx])
    # the indices follow the documented rule (re-implemented here independently):
    # a fresh default_rng(seed) per split; per class c, the first n // 10 of a
    # permutation of that class's positions; sorted union
    entry = data.subset_manifest()["subsets"][dataset][split]
    rng = np.random.default_rng(data.subset_manifest()["selection"]["seed"])
    k = entry["n"] // 10
    expected = np.sort(np.concatenate([rng.permutation(np.flatnonzero(full_y == c))[:k] for c in range(10)]))
    np.testing.assert_array_equal(idx, expected)


@pytest.mark.skipif(not (_have("mnist") and _have("fashion_mnist")), reason=f"full data not found in {SHARED}")
def test_make_subset_reproduces_shipped_manifest(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, str(REPO / "scripts" / "make_subset.py"), "--data-dir", str(SHARED), "--out-dir", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    shipped = REPO / "symlib" / "_data" / data.SUBSET_MANIFEST
    assert (out / data.SUBSET_MANIFEST).read_bytes() == shipped.read_bytes()
    for path in out.glob("*.gz"):  # same decompressed content (gzip bytes may depend on zlib)
        assert gzip.decompress(path.read_bytes()) == gzip.decompress((shipped.parent / path.name).read_bytes())


def test_subset_split_not_shipped(monkeypatch):
    # every split is shipped now; check the error path with a manifest lacking one
    manifest = data.subset_manifest()
    del manifest["subsets"]["fashion_mnist"]["train"]
    monkeypatch.setattr(data_subset, "subset_manifest", lambda: manifest)  # where it is looked up
    with pytest.raises(ValueError, match="shipped") as err:
        data.load_mnist("fashion_mnist", "train", source="subset")
    listed = str(err.value).split("shipped:")[1]
    assert "mnist/train" in listed and "fashion_mnist/test" in listed
    assert "fashion_mnist/train" not in listed
    with pytest.raises(ValueError, match="shipped"):
        data.subset_indices("fashion_mnist", "train")


def test_subset_tampering_detected(tmp_path, monkeypatch):
    entry = data.subset_manifest()["subsets"]["mnist"]["test"]
    src = REPO / "symlib" / "_data"
    tampered = tmp_path / "_data"
    shutil.copytree(src, tampered)
    raw = bytearray(gzip.decompress((src / entry["labels"]["file"]).read_bytes()))
    raw[-1] = (raw[-1] + 1) % 10
    (tampered / entry["labels"]["file"]).write_bytes(gzip.compress(bytes(raw)))
    monkeypatch.setattr(data_subset, "_subset_resource", lambda name: tampered / name)
    with pytest.raises(ChecksumError, match=entry["labels"]["file"]):
        data.load_mnist("mnist", "test", source="subset")


# --------------------------------------------------------------------------- #
# preprocessing and splits
# --------------------------------------------------------------------------- #
def test_preprocess():
    images = np.array([[[0, 255], [128, 1]]], dtype=np.uint8).repeat(3, axis=0)
    x = data.preprocess(images)
    assert x.shape == (3, 4) and x.dtype == np.float32
    np.testing.assert_allclose(x[0], [0.0, 1.0, 128 / 255, 1 / 255], rtol=1e-6)
    sub_x, _ = data.load_mnist("mnist", "test", source="subset")
    x = data.preprocess(sub_x)
    assert x.shape == (sub_x.shape[0], 784) and 0.0 <= x.min() and x.max() <= 1.0
    with pytest.raises(ValueError, match="uint8"):
        data.preprocess(x.reshape(-1, 28, 28))  # already scaled: refuse to scale twice
    with pytest.raises(ValueError):
        data.preprocess(np.zeros(5, np.uint8))
    assert data.preprocess(np.zeros((0, 28, 28), np.uint8)).shape == (0, 784)


def test_train_val_split():
    tr, va = data.train_val_split(100, 20, seed=3)
    tr2, va2 = data.train_val_split(100, 20, seed=3)
    np.testing.assert_array_equal(tr, tr2)
    np.testing.assert_array_equal(va, va2)
    assert len(tr) == 80 and len(va) == 20
    assert not set(tr.tolist()) & set(va.tolist())
    assert sorted(tr.tolist() + va.tolist()) == list(range(100))
    tr3, _ = data.train_val_split(100, 20, seed=4)
    assert not np.array_equal(tr, tr3)
    tr0, va0 = data.train_val_split(5, 0)
    assert len(va0) == 0 and sorted(tr0.tolist()) == list(range(5))
    assert len(data.train_val_split(0, 0)[0]) == 0
    with pytest.raises(ValueError):
        data.train_val_split(10, 11)
    with pytest.raises(ValueError):
        data.train_val_split(10, -1)
    with pytest.raises(ValueError):
        data.train_val_split(-1, 0)
    with pytest.raises(TypeError):
        data.train_val_split(10, 2.5)


def test_load_split_subset():
    out = data.load_split("mnist", "subset", n_train=500, n_val=100, n_test=50, seed=1)
    assert list(out) == ["x_train", "y_train", "x_val", "y_val", "x_test", "y_test"]
    for part, n in (("train", 500), ("val", 100), ("test", 50)):
        x, y = out[f"x_{part}"], out[f"y_{part}"]
        assert x.shape == (n, 784) and x.dtype == np.float32
        assert y.shape == (n,) and y.dtype == np.int32
        assert 0.0 <= x.min() and x.max() <= 1.0 and 0 <= y.min() and y.max() <= 9
    again = data.load_split("mnist", "subset", n_train=500, n_val=100, n_test=50, seed=1)
    for k in out:
        np.testing.assert_array_equal(out[k], again[k])
    # train and val are disjoint sets of examples
    rows = lambda x: {r.tobytes() for r in x}  # noqa: E731
    assert not rows(out["x_train"]) & rows(out["x_val"])
    # the test set is the first n_test test examples
    tx, ty = data.load_mnist("mnist", "test", source="subset")
    np.testing.assert_array_equal(out["x_test"], data.preprocess(tx[:50]))
    np.testing.assert_array_equal(out["y_test"], ty[:50])
    # another seed gives another split; defaults use everything
    other = data.load_split("mnist", "subset", n_train=500, n_val=100, n_test=50, seed=2)
    assert not np.array_equal(out["x_train"], other["x_train"])
    full = data.load_split("mnist", "subset", n_val=1000)
    assert full["x_train"].shape == (9000, 784) and full["x_val"].shape == (1000, 784)
    assert full["x_test"].shape == (2000, 784)


def test_load_split_fashion_subset(tmp_path, monkeypatch):
    # offline: no data dir, no reachable mirror
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "nothing-here"))
    monkeypatch.setitem(data.MIRRORS, "fashion_mnist", [unreachable_url()])
    out = data.load_split("fashion_mnist", "subset", n_train=4500, n_val=500, n_test=2000)
    for part, n in (("train", 4500), ("val", 500), ("test", 2000)):
        x, y = out[f"x_{part}"], out[f"y_{part}"]
        assert x.shape == (n, 784) and x.dtype == np.float32
        assert y.shape == (n,) and y.dtype == np.int32
        assert 0.0 <= x.min() and x.max() <= 1.0 and set(np.unique(y).tolist()) == set(range(10))
    # train + val are exactly the 5,000 shipped train examples, 500 per class
    tx, ty = data.load_mnist("fashion_mnist", "train", source="subset")
    rows = lambda x: {r.tobytes() for r in x}  # noqa: E731
    assert not rows(out["x_train"]) & rows(out["x_val"])
    np.testing.assert_array_equal(
        np.bincount(np.concatenate([out["y_train"], out["y_val"]]), minlength=10), [500] * 10
    )
    assert rows(out["x_train"]) | rows(out["x_val"]) == rows(data.preprocess(tx))
    # it is Fashion-MNIST, not MNIST
    mx, _ = data.load_mnist("mnist", "train", source="subset")
    assert not rows(data.preprocess(tx)) & rows(data.preprocess(mx))
    # the default uses all of it; asking for more says how much there is
    full = data.load_split("fashion_mnist", "subset", n_val=500)
    assert full["x_train"].shape == (4500, 784) and full["x_test"].shape == (2000, 784)
    with pytest.raises(ValueError, match=r"only 5000 are available .*'subset'"):
        data.load_split("fashion_mnist", "subset", n_train=4501, n_val=500)
    # the test split alone needs no train split
    out = data.load_split("fashion_mnist", "subset", n_train=0, n_val=0)
    assert out["x_train"].shape == (0, 784) and out["y_val"].shape == (0,)
    assert out["x_test"].shape == (2000, 784) and out["y_test"].dtype == np.int32


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_train=9500, n_val=600), r"only 10000 are available .*'subset'"),
        (dict(n_val=10001), r"only 10000 are available"),
        (dict(n_train=10, n_test=2001), r"n_test=2001.*only 2000 are available .*'subset'"),
    ],
)
def test_load_split_too_many(kwargs, match):
    with pytest.raises(ValueError, match=match):
        data.load_split("mnist", "subset", **kwargs)


@needs_mnist
def test_load_split_full(monkeypatch):
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(SHARED))
    out = data.load_split("mnist", "full", n_train=200, n_val=50, n_test=30, seed=0)
    assert out["x_train"].shape == (200, 784) and out["x_val"].shape == (50, 784)
    assert out["x_test"].shape == (30, 784) and out["y_test"].dtype == np.int32
    with pytest.raises(ValueError, match=r"only 60000 are available .*'full'"):
        data.load_split("mnist", "full", n_train=60000, n_val=1)
