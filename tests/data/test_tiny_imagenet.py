"""TinyImageNet in symlib.data: the official zip layout, search order, download, the optional checksum.

A tiny synthetic ``tiny-imagenet-200.zip`` in the official layout (3 classes, 64x64
images written by Pillow: lossless PNG bytes under ``.JPEG`` names, which Pillow decodes by
content, plus one real greyscale JPEG) is served from 127.0.0.1.
"""

from __future__ import annotations

import io
import zipfile
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _helpers import check_data_dir_and_md5, check_missing_message
from symlib import data

pytestmark = pytest.mark.usefixtures("isolated_data_env")  # see conftest.py

ZIP = "tiny-imagenet-200.zip"
WNIDS = ["n09999999", "n01443537", "n02099601"]  # not sorted: labels follow the sorted order
ROOT = "tiny-imagenet-200/"


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _jpeg_grey(value: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((64, 64), value, np.uint8), mode="L").save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def _archive(path: Path, rng) -> dict:
    train = {w: [rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(2)] for w in WNIDS}
    val = [(f"val_{k}.JPEG", WNIDS[k % 3], rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)) for k in range(4)]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(ROOT + "wnids.txt", "\n".join(WNIDS) + "\n")
        zf.writestr(ROOT + "words.txt", "".join(f"{w}\tthing {w}\n" for w in WNIDS))
        for w, ims in train.items():
            zf.writestr(f"{ROOT}train/{w}/{w}_boxes.txt", "")
            for i, im in enumerate(ims):
                zf.writestr(f"{ROOT}train/{w}/images/{w}_{i}.JPEG", _png(im))
        zf.writestr(f"{ROOT}train/{WNIDS[0]}/images/{WNIDS[0]}_9.JPEG", _jpeg_grey(200))  # a real greyscale JPEG
        zf.writestr(ROOT + "val/val_annotations.txt", "".join(f"{f}\t{w}\t0\t0\t63\t63\n" for f, w, _ in val))
        for f, _, im in val:
            zf.writestr(f"{ROOT}val/images/{f}", _png(im))
        zf.writestr(ROOT + "test/images/test_0.JPEG", _png(val[0][2]))
    return {"train": train, "val": val}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_served")
    arrays = _archive(out / ZIP, np.random.default_rng(0))
    return out, arrays


@pytest.fixture
def official(synthetic, serve, monkeypatch):
    out, _ = synthetic
    server = serve(out)
    monkeypatch.setitem(data.MIRRORS, "tiny_imagenet", [server.url])
    return server


def test_official_source_and_no_invented_checksum():
    assert data.DATASET_FILES["tiny_imagenet"] == {"train": (ZIP,), "test": (ZIP,)}
    assert data.MIRRORS["tiny_imagenet"] == ["http://cs231n.stanford.edu/"]
    assert data.MD5["tiny_imagenet"] == {ZIP: None}


def test_downloads_and_reads_train_and_val_in_the_official_layout(synthetic, official):
    _, arrays = synthetic
    x, y = data.load_tiny_imagenet("train")
    assert x.shape == (7, 64, 64, 3) and x.dtype == np.uint8 and y.dtype == np.uint8
    order = sorted(WNIDS)  # label i = i-th wnid in sorted order; images by file name within a class
    expect_y = [order.index(w) for w in order for _ in range(len(arrays["train"][w]) + (w == WNIDS[0]))]
    assert y.tolist() == expect_y
    first = order.index(WNIDS[1])  # class 0 is n01443537
    assert np.array_equal(x[0], arrays["train"][order[0]][0]) and first == 0
    grey = x[[i for i, lab in enumerate(y) if lab == order.index(WNIDS[0])][-1]]
    assert np.all(np.abs(grey.astype(int) - 200) <= 2) and np.array_equal(grey[..., 0], grey[..., 2])
    assert (data.cache_dir("tiny_imagenet") / ZIP).is_file()
    xv, yv = data.load_tiny_imagenet("val")
    assert xv.shape == (4, 64, 64, 3)
    assert yv.tolist() == [order.index(w) for _, w, _ in arrays["val"]]
    assert all(np.array_equal(xv[k], im) for k, (_, _, im) in enumerate(arrays["val"]))
    xt, yt = data.load_tiny_imagenet("test")  # the labelled validation set
    assert np.array_equal(xt, xv) and np.array_equal(yt, yv)


def test_data_dir_offline_and_optional_md5(synthetic, tmp_path, monkeypatch):
    check_data_dir_and_md5(partial(data.load_tiny_imagenet, "val"), "tiny_imagenet", synthetic[0] / ZIP, tmp_path,
                           monkeypatch, 4)


def test_missing_offline_says_where_it_looked_and_where_to_get_it(tmp_path, monkeypatch):
    check_missing_message(partial(data.load_tiny_imagenet, "train"), "tiny_imagenet",
                          "http://cs231n.stanford.edu/tiny-imagenet-200.zip", tmp_path, monkeypatch)


def test_malformed_archives(tmp_path):
    bad = tmp_path / "a.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable zip"):
        data.read_tiny_imagenet(bad)
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr(ROOT + "wnids.txt", "n1\n")
        zf.writestr(ROOT + "train/n1/images/n1_0.JPEG", b"garbage")
        zf.writestr(ROOT + "val/val_annotations.txt", "val_0.JPEG\tn2\t0\t0\t1\t1\n")
    with pytest.raises(ValueError, match="n1_0.JPEG: not a readable image"):
        data.read_tiny_imagenet(bad, "train")
    with pytest.raises(ValueError, match="line 1: expected"):
        data.read_tiny_imagenet(bad, "val")
    with pytest.raises(ValueError, match="unknown split"):
        data.read_tiny_imagenet(bad, "extra")


def test_a_given_md5_is_checked_by_verify_file_hashing_once(synthetic, tmp_path, md5_calls):
    with pytest.raises(data.ChecksumError, match="expected MD5 0+, got .* corrupt or incomplete"):
        data.load_tiny_imagenet("val", data_dir=synthetic[0], md5="0" * 32)
    assert md5_calls == [synthetic[0] / ZIP]  # one pass over the archive for a mismatch


def test_a_truncated_download_is_not_kept(synthetic, serve, tmp_path, monkeypatch):
    """The zip has no published MD5: half of it, served as if whole, was moved into place and
    trusted by every later call. Now it is read to its end first, and refused."""
    out, _ = synthetic
    half = tmp_path / "served"
    half.mkdir()
    whole = (out / ZIP).read_bytes()
    (half / ZIP).write_bytes(whole[: len(whole) // 2])
    server = serve(half)
    dest = tmp_path / "dest"
    with pytest.raises(data.DataNotFoundError, match="incomplete or corrupt archive"):
        data.download("tiny_imagenet", dest_dir=dest, mirrors=[server.url], progress=False)
    assert sorted(p.name for p in dest.iterdir()) == []
    (dest / ZIP).write_bytes(whole[: len(whole) // 2])  # a partial file from elsewhere: the reader says what to do
    with pytest.raises(ValueError, match="delete the file and download it again"):
        data.read_tiny_imagenet(dest / ZIP, "val")
