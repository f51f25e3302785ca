"""The small MNIST / Fashion-MNIST subset shipped inside the package (``symlib/_data/``).

Each shipped (dataset, split) is three gzipped idx files (images, labels, and the indices
of the examples in the full split), listed with the sha256 of their decompressed bytes in
``subset_manifest.json``; ``scripts/make_subset.py`` produces them.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from importlib import resources
from importlib.resources.abc import Traversable

import numpy as np

from symlib.data.files import DATASETS, SPLITS, ChecksumError, check_choice
from symlib.data.idx import parse_idx

__all__ = ["SUBSET_MANIFEST", "subset_manifest", "subset_indices", "load_subset"]

#: File name of the manifest, in ``symlib/_data/``.
SUBSET_MANIFEST = "subset_manifest.json"


def _subset_resource(name: str) -> Traversable:
    """The shipped file ``symlib/_data/<name>``."""
    return resources.files("symlib") / "_data" / name


def subset_manifest() -> dict:
    """The manifest of the shipped subset.

    Returns:
        The parsed ``symlib/_data/subset_manifest.json``: the selection rule and seed, and
        under ``"subsets"`` one entry per dataset and split (sizes, class counts, source
        files, and ``file`` / ``sha256`` / ``shape`` of the images, labels and indices).
    """
    return json.loads(_subset_resource(SUBSET_MANIFEST).read_text(encoding="utf-8"))


def _subset_entry(dataset: str, split: str) -> dict:
    """The manifest entry of a shipped split; ``ValueError`` listing the shipped ones if absent."""
    subsets = subset_manifest()["subsets"]
    if split not in subsets.get(dataset, {}):
        shipped = ", ".join(f"{d}/{s}" for d in subsets for s in subsets[d])
        raise ValueError(
            f"the shipped subset has no {dataset}/{split} split; shipped: {shipped} "
            "(use source='full' for everything else)"
        )
    return subsets[dataset][split]


def _load_subset_file(info: dict) -> np.ndarray:
    """Read one shipped file after checking its decompressed bytes against the manifest."""
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
    return parse_idx(raw, f"shipped subset file {name}")


def load_subset(dataset: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """The shipped subset of a split, sha256-verified against the manifest.

    Args:
        dataset: one of :data:`~symlib.data.DATASETS`.
        split: one of :data:`~symlib.data.SPLITS`.

    Returns:
        ``(images, labels)`` as stored (uint8; not yet checked for shape, see
        :func:`symlib.data.load_mnist`).

    Raises:
        ValueError: if the split is not shipped or a file is not valid gzipped idx data.
        ChecksumError: if a file does not match the manifest.
    """
    entry = _subset_entry(dataset, split)
    return _load_subset_file(entry["images"]), _load_subset_file(entry["labels"])


def subset_indices(dataset: str, split: str) -> np.ndarray:
    """Indices into the full ``split`` of ``dataset`` that form the shipped subset.

    ``load_mnist(dataset, split, "subset")[0] == full_images[subset_indices(dataset, split)]``.

    Args:
        dataset: one of :data:`~symlib.data.DATASETS`.
        split: one of :data:`~symlib.data.SPLITS`.

    Returns:
        Sorted int64 indices, one per shipped example.

    Raises:
        ValueError: if ``dataset`` or ``split`` is unknown or not shipped.
        ChecksumError: if the indices file does not match the manifest.
    """
    check_choice("dataset", dataset, DATASETS)
    check_choice("split", split, SPLITS)
    return _load_subset_file(_subset_entry(dataset, split)["indices"]).astype(np.int64)
