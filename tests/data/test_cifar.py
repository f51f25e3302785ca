"""Tests for CIFAR-10, CIFAR-100 and SVHN in symlib.data: search, checksums, download, reading.

The official files are far too large for the tests, so tiny synthetic files in the
official formats are built here (CIFAR batches pickled the way Python 2 did, with
``numpy.core`` names; SVHN as MATLAB v5 files) and the URL / MD5 tables
(:data:`symlib.data.MIRRORS`, :data:`symlib.data.MD5`) are pointed at them, served from
127.0.0.1.
"""

from __future__ import annotations

import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from _helpers import corrupt, leftovers, unreachable_url
from _rgb_files import ARCHIVES, N, write_cifar10, write_cifar100, write_svhn, write_tar
from symlib import data
from symlib.data import ChecksumError, DataNotFoundError

pytestmark = pytest.mark.usefixtures("isolated_data_env")  # see conftest.py

OFFICIAL_URLS = {
    "cifar-10-python.tar.gz": "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    "cifar-100-python.tar.gz": "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
    "train_32x32.mat": "http://ufldl.stanford.edu/housenumbers/train_32x32.mat",
    "test_32x32.mat": "http://ufldl.stanford.edu/housenumbers/test_32x32.mat",
}
LOADERS = {
    "cifar10": data.load_cifar10,
    "cifar100": data.load_cifar100,
    "svhn": data.load_svhn,
}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The served directory, its files' MD5s and the arrays they hold."""
    out = tmp_path_factory.mktemp("served")
    rng = np.random.default_rng(0)
    expected = {"cifar10": write_cifar10(rng, out), "cifar100": write_cifar100(rng, out), "svhn": write_svhn(rng, out)}
    md5 = {ds: {name: data.md5_file(out / name) for name in data.MD5[ds]} for ds in data.RGB_DATASETS}
    return out, md5, expected


@pytest.fixture
def official(synthetic, serve, monkeypatch):
    """The checksum tables patched to the synthetic files, and the URL table to a loopback
    server serving them; returns the server."""
    served, md5, _ = synthetic
    server = serve(served)
    for ds in data.RGB_DATASETS:
        monkeypatch.setitem(data.MD5, ds, md5[ds])
        monkeypatch.setitem(data.MIRRORS, ds, [server.url])
    return server


def _files(synthetic, dataset: str, dest: Path) -> Path:
    """A copy of ``dataset``'s synthetic files in ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in data.MD5[dataset]:
        (dest / name).write_bytes((synthetic[0] / name).read_bytes())
    return dest


def _check_images(images, labels, n):
    assert images.shape == (n, 32, 32, 3) and images.dtype == np.uint8 and images.flags.c_contiguous
    assert labels.shape == (n,) and labels.dtype == np.uint8


# --------------------------------------------------------------------------- #
# tables
# --------------------------------------------------------------------------- #
def test_official_sources_and_checksums():
    assert data.RGB_DATASETS == ("cifar10", "cifar100", "svhn")
    assert data.ALL_DATASETS == data.DATASETS + data.RGB_DATASETS + (data.TINY_IMAGENET, data.TEXTURES)
    assert data.MD5["cifar10"] == {"cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a"}
    assert data.MD5["cifar100"] == {"cifar-100-python.tar.gz": "eb9058c3a382ffc7106e4002c42a8d85"}
    assert data.MD5["svhn"] == {"train_32x32.mat": "e26dedcc434d2e4c54c9b2d4a06d8373",
                                "test_32x32.mat": "eb5a983be6a315427106f1b164d9cef3"}
    for ds in data.RGB_DATASETS:
        names = {n for split in data.SPLITS for n in data.DATASET_FILES[ds][split]}
        assert names == set(data.MD5[ds])
        assert {data.MIRRORS[ds][0] + n for n in names} <= set(OFFICIAL_URLS.values())
    assert data.DATASET_FILES["svhn"]["test"] == ("test_32x32.mat",)


# --------------------------------------------------------------------------- #
# download, checksum, load
# --------------------------------------------------------------------------- #
def test_cifar10_downloads_verifies_and_loads(synthetic, official):
    expected = synthetic[2]["cifar10"]
    images, labels = data.load_cifar10("train")
    _check_images(images, labels, 5 * N)
    np.testing.assert_array_equal(images, expected["train"][0])  # NHWC from channel-first rows
    np.testing.assert_array_equal(labels, expected["train"][1])
    assert official.requests == ["/cifar-10-python.tar.gz"]
    assert leftovers(data.cache_dir("cifar10")) == ["cifar-10-python.tar.gz"]
    images, labels = data.load_cifar10("test")  # the same archive, from the cache now
    _check_images(images, labels, N)
    np.testing.assert_array_equal(images, expected["test"][0])
    np.testing.assert_array_equal(labels, expected["test"][1])
    assert len(official.requests) == 1
    # the layout, spelled out: a row holds the red plane, then green, then blue
    raw = pickle.loads(tarfile.open(synthetic[0] / ARCHIVES["cifar10"]).extractfile(
        "cifar-10-batches-py/test_batch").read(), encoding="bytes")[b"data"]
    assert images[0, 0, 1, 0] == raw[0, 1] and images[0, 0, 0, 1] == raw[0, 1024] and images[0, 1, 0, 2] == raw[0, 2080]


def test_cifar100_fine_and_coarse_labels(synthetic, official):
    expected = synthetic[2]["cifar100"]
    for split in data.SPLITS:
        images, fine = data.load_cifar100(split)
        _check_images(images, fine, N)
        np.testing.assert_array_equal(images, expected[split][0])
        np.testing.assert_array_equal(fine, expected[split][1])
        images, coarse = data.load_cifar100(split, label="coarse")
        np.testing.assert_array_equal(coarse, expected[split][2])
        np.testing.assert_array_equal(images, expected[split][0])
    assert fine.max() <= 99 and coarse.max() <= 19 and data.load_cifar100("train")[1].max() == 99
    assert official.requests == ["/cifar-100-python.tar.gz"]


def test_svhn_downloads_only_the_split_and_maps_10_to_0(synthetic, official):
    expected = synthetic[2]["svhn"]
    images, labels = data.load_svhn("test")
    _check_images(images, labels, N)
    assert official.requests == ["/test_32x32.mat"]
    assert leftovers(data.cache_dir("svhn")) == ["test_32x32.mat"]
    np.testing.assert_array_equal(images, expected["test"][0])
    np.testing.assert_array_equal(labels, expected["test"][1])
    assert labels[9] == 0 and labels[0] == 1 and set(labels.tolist()) == set(range(10))  # file label 10 -> 0
    images, labels = data.load_svhn("train")
    np.testing.assert_array_equal(images, expected["train"][0])
    np.testing.assert_array_equal(labels, expected["train"][1])
    assert official.requests == ["/test_32x32.mat", "/train_32x32.mat"]


def test_download_function_fetches_every_file(official, tmp_path):
    dest = data.download("svhn", dest_dir=tmp_path / "dl", timeout=5)
    assert leftovers(dest) == ["test_32x32.mat", "train_32x32.mat"]
    data.download("svhn", dest_dir=dest, splits=["train"])  # present and verified: not fetched again
    assert len(official.requests) == 2


# --------------------------------------------------------------------------- #
# data dir, no network
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("dataset", data.RGB_DATASETS)
def test_loads_from_data_dir_without_network(synthetic, official, tmp_path, monkeypatch, dataset):
    for ds in data.RGB_DATASETS:
        monkeypatch.setitem(data.MIRRORS, ds, [unreachable_url()])
    load = LOADERS[dataset]
    n = 5 * N if dataset == "cifar10" else N
    # $SYMLIB_DATA_DIR/<dataset>/
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "env"))
    _files(synthetic, dataset, tmp_path / "env" / dataset)
    _check_images(*load("train", download_if_missing=False), n)
    # an explicit data_dir is searched instead, here with the files directly in it
    flat = _files(synthetic, dataset, tmp_path / "flat")
    assert data.find_files(dataset, "test", data_dir=flat) == tuple(flat / f for f in data.DATASET_FILES[dataset]["test"])
    _check_images(*load("test", download_if_missing=False, data_dir=flat), N)
    corrupt(flat / data.DATASET_FILES[dataset]["test"][0])  # it was really that copy that was read
    with pytest.raises(ChecksumError):
        load("test", download_if_missing=False, data_dir=flat)
    assert official.requests == []
    assert not data.cache_dir(dataset).exists()


def test_cache_is_searched_after_data_dir(synthetic, official, tmp_path, monkeypatch):
    _files(synthetic, "svhn", data.cache_dir("svhn"))
    monkeypatch.setitem(data.MIRRORS, "svhn", [unreachable_url()])
    _check_images(*data.load_svhn("test", download_if_missing=False, data_dir=tmp_path / "empty"), N)
    assert official.requests == []


# --------------------------------------------------------------------------- #
# checksums
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("dataset", data.RGB_DATASETS)
def test_corrupted_file_gives_checksum_error(synthetic, official, tmp_path, dataset):
    root = _files(synthetic, dataset, tmp_path / "data" / dataset)
    name = data.DATASET_FILES[dataset]["test"][0]
    corrupt(root / name)
    with pytest.raises(ChecksumError) as err:
        LOADERS[dataset]("test", download_if_missing=False, data_dir=tmp_path / "data")
    assert name in str(err.value) and data.MD5[dataset][name] in str(err.value)


def test_corrupted_download_gives_checksum_error(synthetic, official, tmp_path, serve, monkeypatch):
    bad = _files(synthetic, "cifar10", tmp_path / "bad")
    corrupt(bad / "cifar-10-python.tar.gz")
    monkeypatch.setitem(data.MIRRORS, "cifar10", [serve(bad).url])
    with pytest.raises(ChecksumError, match="cifar-10-python.tar.gz"):
        data.load_cifar10("test")
    assert leftovers(data.cache_dir("cifar10")) == []  # nothing unverified kept


def test_the_published_checksums_are_checked(synthetic, serve, tmp_path):
    # unpatched MD5 table: the synthetic archive is not the official one
    with pytest.raises(ChecksumError, match="c58f30108f718f92721af3b95e74349a"):
        data.load_cifar10("test", download_if_missing=False, data_dir=_files(synthetic, "cifar10", tmp_path / "d"))


# --------------------------------------------------------------------------- #
# missing files, offline
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("dataset, split", [("cifar10", "train"), ("cifar100", "test"), ("svhn", "test")])
def test_missing_offline_lists_places_and_urls(tmp_path, monkeypatch, dataset, split):
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "env"))
    (tmp_path / "env").mkdir()
    with pytest.raises(DataNotFoundError) as err:
        LOADERS[dataset](split, download_if_missing=False)
    msg = str(err.value)
    dirs = data.data_search_dirs(dataset)
    assert len(dirs) == 3 and all(str(d) in msg for d in dirs)
    assert "(does not exist)" in msg and "SYMLIB_DATA_DIR" in msg and "data_dir" in msg
    for name in data.DATASET_FILES[dataset][split]:
        assert name in msg and OFFICIAL_URLS[name] in msg
    assert f"load_{dataset}(" in msg and f"download({dataset!r})" in msg
    if dataset == "svhn":
        assert "train_32x32.mat" not in msg


def test_download_failure_is_explained(tmp_path, monkeypatch):
    mirror = unreachable_url()
    monkeypatch.setitem(data.MIRRORS, "cifar100", [mirror])
    with pytest.raises(DataNotFoundError) as err:
        data.load_cifar100("train", data_dir=tmp_path / "nothing")
    msg = str(err.value)
    assert str(tmp_path / "nothing" / "cifar100") in msg and mirror in msg and "failed" in msg
    assert not any(n.endswith(".part") for n in leftovers(data.cache_dir("cifar100")))


# --------------------------------------------------------------------------- #
# arguments and malformed files
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: data.load_cifar10("validation"), "unknown split 'validation'"),
        (lambda: data.load_cifar100("train", label="medium"), "unknown label 'medium'; valid values: 'fine', 'coarse'"),
        (lambda: data.load_svhn("extra"), "unknown split 'extra'"),
        (lambda: data.download("svhn", splits=["extra"]), "unknown split"),
        (lambda: data.data_search_dirs("cifar1000"), "unknown dataset"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _patched_archive(tmp_path, monkeypatch, members: dict[str, bytes]) -> Path:
    """A CIFAR-10 archive with ``members``, accepted by a patched checksum table."""
    root = tmp_path / "d"
    root.mkdir()
    write_tar(root / ARCHIVES["cifar10"], members)
    monkeypatch.setitem(data.MD5, "cifar10", {ARCHIVES["cifar10"]: data.md5_file(root / ARCHIVES["cifar10"])})
    return root


def test_archive_is_read_without_extracting(synthetic, tmp_path, monkeypatch):
    with tarfile.open(synthetic[0] / ARCHIVES["cifar10"]) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}
    members["../../escaped.txt"] = b"outside"
    root = _patched_archive(tmp_path, monkeypatch, members)
    _check_images(*data.load_cifar10("test", download_if_missing=False, data_dir=root), N)
    assert not list(tmp_path.rglob("escaped.txt")) and not (tmp_path.parent / "escaped.txt").exists()
    assert leftovers(root) == [ARCHIVES["cifar10"]]


@pytest.mark.parametrize(
    "members, match",
    [
        ({"cifar-10-batches-py/data_batch_1": b""}, "lacks cifar-10-batches-py/test_batch"),
        ({"cifar-10-batches-py/test_batch": pickle.dumps(["not", "a", "dict"])}, "not a CIFAR batch"),
        ({"cifar-10-batches-py/test_batch": pickle.dumps({b"data": 1, b"labels": []}, protocol=4)}, "expected uint8"),
        ({"cifar-10-batches-py/test_batch": pickle.dumps({b"labels": []}, protocol=4)}, "lacks b'data'"),
        # an object other than numpy arrays is refused, never built
        ({"cifar-10-batches-py/test_batch": pickle.dumps({b"data": Path("x")}, protocol=4)}, "refusing to load"),
    ],
)
def test_malformed_archive(tmp_path, monkeypatch, members, match):
    root = _patched_archive(tmp_path, monkeypatch, members)
    with pytest.raises(ValueError, match=match):
        data.load_cifar10("test", download_if_missing=False, data_dir=root)


def test_malformed_svhn(tmp_path, monkeypatch):
    path = tmp_path / "test_32x32.mat"
    scipy.io.savemat(path, {"X": np.zeros((32, 32, 3, 2), np.uint8), "y": np.array([[0], [3]])})
    with pytest.raises(ValueError, match="outside 1..10"):
        data.read_svhn(path)
    scipy.io.savemat(path, {"X": np.zeros((32, 32, 3, 2), np.uint8)})
    with pytest.raises(ValueError, match="'X' and 'y'"):
        data.read_svhn(path)
    path.write_bytes(b"not a mat file")
    with pytest.raises(ValueError, match="not a readable MATLAB file"):
        data.read_svhn(path)
