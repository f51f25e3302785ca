#!/usr/bin/env python
"""Regenerate the small MNIST / Fashion-MNIST subset shipped in ``symlib/_data/``.

Usage::

    python scripts/make_subset.py --data-dir /path/to/data   # or set $SYMLIB_DATA_DIR

``--data-dir`` must contain ``mnist/`` and ``fashion_mnist/`` folders with the
four standard idx ``.gz`` files each (verified against the published MD5s).

Shipped splits (see ``SUBSET_SIZES``): MNIST train 10,000 and test 2,000;
Fashion-MNIST train 5,000 and test 2,000 (``n // 10`` of each class).

Selection (deterministic, exactly class-balanced): for each shipped
(dataset, split) a fresh ``np.random.default_rng(SEED)`` draws, for the classes
0..9 in turn, a permutation of the indices of that class in the full split and
keeps the first ``n // 10``; the union is sorted ascending (so the subset keeps
the original file order).  For each (dataset, split) three gzip files (mtime 0,
no file name in the header) are written in idx format: images (uint8),
labels (uint8) and the selected indices (int32).  ``subset_manifest.json``
records the sha256 of each file's *decompressed* bytes (independent of the
zlib version), the shapes, the source files and their MD5s, the rule and seed.
Running the script twice produces byte-identical output.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from symlib import data  # noqa: E402

SEED = 0
#: (dataset, split) -> number of examples to ship
SUBSET_SIZES = {
    ("mnist", "train"): 10_000,
    ("mnist", "test"): 2_000,
    ("fashion_mnist", "train"): 5_000,
    ("fashion_mnist", "test"): 2_000,
}
COMMAND = "python scripts/make_subset.py --data-dir $SYMLIB_DATA_DIR"
RULE = (
    "for each (dataset, split): rng = numpy.random.default_rng(seed); for c in 0..9: "
    "keep rng.permutation(numpy.flatnonzero(labels == c))[:n // 10]; "
    "indices = sorted union (original file order)"
)


def select_indices(labels: np.ndarray, n: int, seed: int = SEED) -> np.ndarray:
    """Exactly class-balanced deterministic selection of ``n`` indices.

    Args:
        labels: class labels 0..9 of the full split.
        n: number of indices, a multiple of 10 (``n // 10`` per class).
        seed: seed of ``np.random.default_rng``.

    Returns:
        The sorted int32 indices.

    Raises:
        ValueError: if ``n`` is not a multiple of 10 or a class has too few examples.
    """
    if n % 10:
        raise ValueError(f"n={n} must be a multiple of 10 for a balanced subset")
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        if idx.size < n // 10:
            raise ValueError(f"class {c} has only {idx.size} examples, need {n // 10}")
        parts.append(rng.permutation(idx)[: n // 10])
    return np.sort(np.concatenate(parts)).astype(np.int32)


def write_gz_idx(path: Path, arr: np.ndarray) -> dict:
    """Write ``arr`` as a deterministic gzipped idx file (mtime 0, no file name).

    Args:
        path: the file to write.
        arr: the array (a dtype with an idx type code).

    Returns:
        Its manifest entry: ``file``, ``sha256`` (of the decompressed bytes), ``shape``, ``dtype``.
    """
    raw = data.idx_bytes(arr)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as f:
        f.write(raw)
    path.write_bytes(buf.getvalue())
    assert np.array_equal(data.read_idx(path), arr)
    return {
        "file": path.name,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "shape": list(arr.shape),
        "dtype": str(arr.dtype),
    }


def _source_files(src_dir: Path, dataset: str, split: str) -> dict:
    """The manifest's record of the full files of a split, after checking their MD5."""
    sources = {}
    for kind, name in zip(("images", "labels"), data.FILES[split]):
        path = src_dir / name
        if not path.is_file():
            raise SystemExit(f"missing {path}")
        data.verify_file(path, data.MD5[dataset][name])
        sources[kind] = {"file": f"{dataset}/{name}", "md5": data.MD5[dataset][name]}
    return sources


def make_split(data_dir: Path, out_dir: Path, dataset: str, split: str, n: int) -> dict:
    """Select and write the subset of one split.

    Args:
        data_dir: folder with ``<dataset>/`` holding the full idx files.
        out_dir: where to write the three gzipped idx files.
        dataset: ``"mnist"`` or ``"fashion_mnist"``.
        split: ``"train"`` or ``"test"``.
        n: number of examples to keep (a multiple of 10).

    Returns:
        The split's manifest entry.
    """
    src_dir = data_dir / dataset
    sources = _source_files(src_dir, dataset, split)
    images, labels = (data.read_idx(src_dir / name) for name in data.FILES[split])
    idx = select_indices(labels, n)
    prefix = f"{dataset}-subset-{split}"
    return {
        "n": int(n),
        "n_full": int(labels.shape[0]),
        "source": sources,
        "class_counts": np.bincount(labels[idx], minlength=10).tolist(),
        "images": write_gz_idx(out_dir / f"{prefix}-images-idx3-ubyte.gz", images[idx]),
        "labels": write_gz_idx(out_dir / f"{prefix}-labels-idx1-ubyte.gz", labels[idx]),
        "indices": write_gz_idx(out_dir / f"{prefix}-indices-idx1-int.gz", idx),
    }


def manifest_text(manifest: dict) -> str:
    """The manifest as indented JSON, with short lists of numbers (shapes, class counts) on one line.

    Args:
        manifest: the manifest.

    Returns:
        The text of ``subset_manifest.json``.
    """
    text = json.dumps(manifest, indent=2) + "\n"
    return re.sub(
        r"\[([\d\s,]+)\]",
        lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
        text,
    )


def make_subset(data_dir: Path, out_dir: Path) -> dict:
    """Write every shipped split and the manifest into ``out_dir``.

    Args:
        data_dir: folder with ``mnist/`` and ``fashion_mnist/`` holding the full idx files.
        out_dir: the output folder (created if needed).

    Returns:
        The manifest.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {
        "format_version": 1,
        "description": (
            "Small deterministic real subsets of MNIST and Fashion-MNIST shipped with "
            "symlib (symlib.data.load_mnist(..., source='subset')). Files are gzipped idx; "
            "sha256 values are of the decompressed bytes. The 'indices' file of each split "
            "holds the positions in the full split: subset images == full images[indices]."
        ),
        "command": COMMAND,
        "selection": {"rule": RULE, "seed": SEED},
        "subsets": {},
    }
    for (dataset, split), n in SUBSET_SIZES.items():
        manifest["subsets"].setdefault(dataset, {})[split] = make_split(data_dir, out_dir, dataset, split, n)
    (out_dir / data.SUBSET_MANIFEST).write_text(manifest_text(manifest), encoding="utf-8")
    return manifest


def main(argv=None) -> int:
    """Command-line entry point: parse the arguments, write the subset, print its sizes.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status, 0.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        default=os.environ.get(data.ENV_DATA_DIR),
        help="folder with mnist/ and fashion_mnist/ idx files (default: $SYMLIB_DATA_DIR)",
    )
    parser.add_argument(
        "--out-dir",
        default=str(REPO / "symlib" / "_data"),
        help="where to write the subset (default: symlib/_data in this repository)",
    )
    args = parser.parse_args(argv)
    if not args.data_dir:
        parser.error("no data directory: pass --data-dir or set $SYMLIB_DATA_DIR")
    out_dir = Path(args.out_dir)
    manifest = make_subset(Path(args.data_dir).expanduser(), out_dir)
    for dataset, splits in manifest["subsets"].items():
        for split, e in splits.items():
            files = [e[k]["file"] for k in ("images", "labels", "indices")]
            sizes = sum((out_dir / f).stat().st_size for f in files)
            print(f"{dataset}/{split}: {e['n']} examples, {sizes / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
