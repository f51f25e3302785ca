"""Textures (DTD) in symlib.data: the official tar layout, the resize and centre crop, search
order, download, the optional checksum, the errors.

A tiny synthetic ``dtd-r1.0.1.tar.gz`` in the official layout (3 classes, images of several
sizes written by Pillow: lossless PNG bytes under ``.jpg`` names, which Pillow decodes by
content, plus real JPEGs, one of them greyscale; the split lists after the images) is served
from 127.0.0.1.
"""

from __future__ import annotations

import io
import tarfile
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _helpers import check_data_dir_and_md5, check_missing_message, unreachable_url
from symlib import data
from symlib.data import DataNotFoundError

pytestmark = pytest.mark.usefixtures("isolated_data_env")  # see conftest.py

TAR = "dtd-r1.0.1.tar.gz"
CLASSES = ["zigzagged", "banded", "bubbly"]  # not sorted: labels follow the sorted order
GREEN, RED = (0, 200, 0), (220, 0, 0)


def _bytes(arr: np.ndarray, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, quality=95)
    return buf.getvalue()


def _framed(h: int, w: int, border: int = 6) -> np.ndarray:
    """Green with a red frame ``border`` pixels wide: outside Resize(9/8) + CenterCrop."""
    arr = np.empty((h, w, 3), np.uint8)
    arr[...] = RED
    arr[border:h - border, border:w - border] = GREEN
    return arr


def _add(tar: tarfile.TarFile, name: str, raw: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(raw)
    tar.addfile(info, io.BytesIO(raw))


def _archive(path: Path, rng) -> dict:
    files = {}  # name under images/ -> array (None: a lossy JPEG)
    lists = {"train": [], "val": [], "test": []}
    for c in CLASSES:
        for k, split in enumerate(("train", "train", "val", "test")):
            name = f"{c}/{c}_{k:04d}.jpg"
            lists[split].append(name)
            files[name] = _framed(160, 160) if k == 0 else rng.integers(0, 256, (72, 73, 3), dtype=np.uint8)
    with tarfile.open(path, "w:gz") as tar:
        for name, arr in files.items():
            _add(tar, f"dtd/images/{name}", _bytes(arr))
        _add(tar, "dtd/images/banded/banded_0009.jpg", _bytes(np.full((300, 451), 90, np.uint8), "JPEG"))  # unlisted
        _add(tar, "dtd/imdb/imdb.mat", b"not read")
        for split, names in lists.items():
            _add(tar, f"dtd/labels/{split}1.txt", ("\n".join(names) + "\n").encode())
            _add(tar, f"dtd/labels/{split}2.txt", b"banded/banded_0009.jpg\n")  # other official splits: not read
    return {"files": files, "lists": lists}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    out = tmp_path_factory.mktemp("dtd_served")
    return out, _archive(out / TAR, np.random.default_rng(0))


@pytest.fixture
def official(synthetic, serve, monkeypatch):
    server = serve(synthetic[0])
    monkeypatch.setitem(data.MIRRORS, "textures", [server.url])
    return server


def test_official_source_and_no_invented_checksum():
    assert data.DATASET_FILES["textures"] == {"train": (TAR,), "test": (TAR,)}
    assert data.MIRRORS["textures"] == ["https://www.robots.ox.ac.uk/~vgg/data/dtd/download/"]
    assert data.MD5["textures"] == {TAR: None}
    assert data.TEXTURES_CLASSES == 47 and data.TEXTURES_SPLITS == ("train", "val", "test", "all")


def test_downloads_and_reads_every_split_resized_and_centre_cropped(synthetic, official):
    _, arrays = synthetic
    x, y = data.load_textures("all")
    order = sorted(CLASSES)
    names = arrays["lists"]["train"] + arrays["lists"]["val"] + arrays["lists"]["test"]  # torch-uncertainty's order
    assert x.shape == (len(names), 64, 64, 3) and x.dtype == np.uint8 and y.dtype == np.uint8
    assert y.tolist() == [order.index(n.split("/")[0]) for n in names]
    assert (data.cache_dir("textures") / TAR).is_file()
    for i, n in enumerate(names):
        src = arrays["files"][n]
        if src.shape == (72, 73, 3):  # shorter side already 72: no resize; crop offsets round(4.5) = 4, 4
            assert np.array_equal(x[i], src[4:68, 4:68])
        else:  # 160x160 with a 6-pixel red frame: shrunk to 72, the 4-pixel margin cut loses the frame
            assert np.abs(x[i].astype(int) - GREEN).max() <= 3
    for split in ("train", "val", "test"):
        xs, ys = data.load_textures(split)
        idx = [names.index(n) for n in arrays["lists"][split]]
        assert np.array_equal(xs, x[idx]) and np.array_equal(ys, y[idx])


def test_sizes_and_greyscale(synthetic, tmp_path):
    out, arrays = synthetic
    framed = [i for i, n in enumerate(arrays["lists"]["train"]) if arrays["files"][n].shape[0] == 160]
    x, _ = data.read_textures(out / TAR, "train", image_size=32)
    assert x.shape == (6, 32, 32, 3) and np.abs(x[framed].astype(int) - GREEN).max() <= 3
    x, _ = data.read_textures(out / TAR, "train", resize_to=64)  # a plain resize to 64x64 keeps the frame
    assert x[framed[0], 0, 0, 0] > 100
    grey = tmp_path / TAR  # one real greyscale JPEG, wider than tall
    with tarfile.open(grey, "w:gz") as tar:
        _add(tar, "dtd/images/banded/banded_0001.jpg", _bytes(np.full((300, 451), 90, np.uint8), "JPEG"))
        for split in ("train", "val", "test"):
            _add(tar, f"dtd/labels/{split}1.txt", b"banded/banded_0001.jpg\n" if split == "val" else b"")
    x, y = data.read_textures(grey, "all")
    assert x.shape == (1, 64, 64, 3) and y.tolist() == [0]
    assert np.all(np.abs(x.astype(int) - 90) <= 2) and np.array_equal(x[..., 0], x[..., 2])
    with pytest.raises(ValueError, match="image_size must be a positive integer"):
        data.read_textures(grey, image_size=0)
    with pytest.raises(ValueError, match="at least image_size"):
        data.read_textures(grey, resize_to=32)


def test_data_dir_offline_and_optional_md5(synthetic, tmp_path, monkeypatch):
    check_data_dir_and_md5(partial(data.load_textures, "test"), "textures", synthetic[0] / TAR, tmp_path,
                           monkeypatch, 3)


def test_missing_offline_says_where_it_looked_and_where_to_get_it(tmp_path, monkeypatch):
    check_missing_message(partial(data.load_textures, "all"), "textures",
                          "https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz", tmp_path, monkeypatch)
    monkeypatch.setitem(data.MIRRORS, "textures", [unreachable_url()])  # download tried and failed
    with pytest.raises(DataNotFoundError, match="(?s)Downloading into .* failed"):
        data.load_textures()


def test_malformed_archives(tmp_path):
    bad = tmp_path / TAR
    bad.write_bytes(b"not a tar")
    with pytest.raises(ValueError, match="not a readable tar"):
        data.read_textures(bad)
    with tarfile.open(bad, "w:gz") as tar:
        _add(tar, "dtd/labels/train1.txt", b"banded/banded_0001.jpg\n")
    with pytest.raises(ValueError, match="lacks dtd/labels/val1.txt, dtd/labels/test1.txt"):
        data.read_textures(bad)
    with tarfile.open(bad, "w:gz") as tar:
        _add(tar, "dtd/images/banded/banded_0001.jpg", b"garbage")
        _add(tar, "dtd/labels/train1.txt", b"banded/banded_0001.jpg\n")
        _add(tar, "dtd/labels/val1.txt", b"banded/banded_0002.jpg\n")
        _add(tar, "dtd/labels/test1.txt", b"")
    with pytest.raises(ValueError, match="banded_0001.jpg: not a readable image"):
        data.read_textures(bad, "train")
    with pytest.raises(ValueError, match="lacks dtd/images/banded/banded_0002.jpg"):
        data.read_textures(bad, "val")
    with tarfile.open(bad, "w:gz") as tar:
        for split in ("train", "val", "test"):
            _add(tar, f"dtd/labels/{split}1.txt", b"banded_0003.jpg\n" if split == "test" else b"")
    with pytest.raises(ValueError, match="test1.txt line 1: expected"):
        data.read_textures(bad, "train")  # every list is read: the classes come from all three
    with pytest.raises(ValueError, match="unknown split"):
        data.read_textures(bad, "train2")
    raw = bad.read_bytes()
    bad.write_bytes(raw[: len(raw) // 2])  # truncated download
    with pytest.raises(ValueError, match=f"{TAR}"):
        data.read_textures(bad)


def test_a_given_md5_is_checked_by_verify_file_hashing_once(synthetic, md5_calls):
    with pytest.raises(data.ChecksumError, match="expected MD5 0+, got .* corrupt or incomplete"):
        data.load_textures("test", data_dir=synthetic[0], md5="0" * 32)
    assert md5_calls == [synthetic[0] / TAR]  # one pass over the archive for a mismatch


def test_a_truncated_download_is_not_kept(synthetic, serve, tmp_path):
    """The tar.gz has no published MD5: a transfer cut short was kept and trusted. Now it is
    read through to its last member before it is moved into place."""
    whole = (synthetic[0] / TAR).read_bytes()
    served = tmp_path / "served"
    served.mkdir()
    (served / TAR).write_bytes(whole[: len(whole) * 2 // 3])
    dest = tmp_path / "dest"
    with pytest.raises(data.DataNotFoundError, match="incomplete or corrupt archive"):
        data.download("textures", dest_dir=dest, mirrors=[serve(served).url], progress=False)
    assert sorted(p.name for p in dest.iterdir()) == []
    (dest / TAR).write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(ValueError, match="delete the file and download it again"):
        data.read_textures(dest / TAR)
