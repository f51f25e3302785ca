"""Tiny synthetic CIFAR-10, CIFAR-100 and SVHN files in the official formats, for the data
tests and the ResNet-18 pipeline's tests (imported as ``from _rgb_files import ...``): CIFAR
batches pickled the way Python 2 did, with ``numpy.core`` names; SVHN as MATLAB v5 files."""
from __future__ import annotations

import io
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np
import scipy.io

N = 20  # images per synthetic batch file
ARCHIVES = {"cifar10": "cifar-10-python.tar.gz", "cifar100": "cifar-100-python.tar.gz"}


# --------------------------------------------------------------------------- #
# synthetic files in the official formats
# --------------------------------------------------------------------------- #
class _Py2Pickler(pickle._Pickler):
    """Pickles as Python 2's cPickle did (protocol 2, every string a byte string)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_bytes(self, obj):
        n = len(obj)
        self.write((pickle.SHORT_BINSTRING + bytes([n]) if n < 256 else pickle.BINSTRING + struct.pack("<i", n)) + obj)
        self.memoize(obj)

    def save_str(self, obj):
        self.save_bytes(obj.encode("latin-1"))

    dispatch[bytes] = save_bytes
    dispatch[str] = save_str


def py2_pickle(obj) -> bytes:
    buf = io.BytesIO()
    _Py2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue().replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")  # as numpy 1 wrote


def flat_images(images: np.ndarray) -> np.ndarray:
    """NHWC images as CIFAR stores them: rows of 3072 bytes, channels first."""
    return images.transpose(0, 3, 1, 2).reshape(len(images), 3072)


def write_tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, raw in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))


def write_cifar10(rng, out: Path) -> dict:
    images = rng.integers(0, 256, (6 * N, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, 6 * N)
    members = {}
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        part = slice(i * N, (i + 1) * N)
        batch = {b"batch_label": b"synthetic", b"labels": labels[part].tolist(), b"data": flat_images(images[part]),
                 b"filenames": [b"x.png"] * N}
        members[f"cifar-10-batches-py/{name}"] = py2_pickle(batch)
    members["cifar-10-batches-py/batches.meta"] = py2_pickle({b"label_names": [b"airplane"] * 10})
    write_tar(out / ARCHIVES["cifar10"], members)
    cut = 5 * N
    return {"train": (images[:cut], labels[:cut]), "test": (images[cut:], labels[cut:])}


def write_cifar100(rng, out: Path) -> dict:
    images = rng.integers(0, 256, (2 * N, 32, 32, 3), dtype=np.uint8)
    fine = np.arange(2 * N) * 7 % 100
    fine[0] = 99
    coarse = fine // 5
    members, expected = {}, {}
    for i, split in enumerate(("train", "test")):
        part = slice(i * N, (i + 1) * N)
        batch = {b"filenames": [b"x.png"] * N, b"batch_label": b"synthetic", b"fine_labels": fine[part].tolist(),
                 b"coarse_labels": coarse[part].tolist(), b"data": flat_images(images[part])}
        members[f"cifar-100-python/{split}"] = py2_pickle(batch)
        expected[split] = (images[part], fine[part], coarse[part])
    members["cifar-100-python/meta"] = py2_pickle({b"fine_label_names": [b"apple"] * 100})
    write_tar(out / ARCHIVES["cifar100"], members)
    return expected


def write_svhn(rng, out: Path) -> dict:
    expected = {}
    for split, dtype in (("train", np.uint8), ("test", np.float64)):  # either label type
        images = rng.integers(0, 256, (N, 32, 32, 3), dtype=np.uint8)
        y = np.arange(N) % 10 + 1  # 1..10, 10 is the digit 0
        scipy.io.savemat(out / f"{split}_32x32.mat", {"X": images.transpose(1, 2, 3, 0), "y": y[:, None].astype(dtype)})
        expected[split] = (images, y % 10)
    return expected
