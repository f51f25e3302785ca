"""MNIST, Fashion-MNIST, CIFAR-10, CIFAR-100, SVHN, TinyImageNet and Textures (DTD):
finding, verifying, downloading and loading.

This package depends on numpy, the standard library and :mod:`pooch` (for downloads);
it does not import JAX, so it is cheap to import from scripts, tests and notebooks.

Modules: :mod:`~symlib.data.files` (file names, checksums, search directories),
:mod:`~symlib.data.idx` (the idx format), :mod:`~symlib.data.downloads`,
:mod:`~symlib.data.loading` (what the loaders share), :mod:`~symlib.data.subset` (the
shipped subset), :mod:`~symlib.data.mnist` (:func:`load_mnist`),
:mod:`~symlib.data.cifar` (:func:`load_cifar10`, :func:`load_cifar100`),
:mod:`~symlib.data.svhn` (:func:`load_svhn`), :mod:`~symlib.data.tiny_imagenet`
(:func:`load_tiny_imagenet`), :mod:`~symlib.data.textures` (:func:`load_textures`) and
:mod:`~symlib.data.splits`
(:func:`preprocess`, :func:`train_val_split`, :func:`load_split`). Everything public is
importable from ``symlib.data`` itself (each name loaded on first use, from the table
``_EXPORTS``).

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

Every loader takes ``data_dir=``, a directory searched instead of ``$SYMLIB_DATA_DIR``.
Files are verified against the published MD5 sums (once per process and file).
If they are missing and ``download_if_missing`` is true the split's files are
downloaded from public mirrors (:data:`MIRRORS`) into the cache; if that is impossible
(e.g. offline) a :class:`DataNotFoundError` explains what was looked for, where, and
where the files are published.

CIFAR-10, CIFAR-100 and SVHN (:data:`RGB_DATASETS`) are found the same way, in
``cifar10/``, ``cifar100/`` and ``svhn/``, under their official names
(:data:`DATASET_FILES`): ``cifar-10-python.tar.gz`` and ``cifar-100-python.tar.gz``
(the "python version" archives from https://www.cs.toronto.edu/~kriz/cifar.html, read
without extracting them) and ``train_32x32.mat`` / ``test_32x32.mat`` (the cropped
digits from http://ufldl.stanford.edu/housenumbers/). They are loaded as uint8 NHWC
images ``(n, 32, 32, 3)`` and uint8 labels. TinyImageNet is found the same way in
``tiny_imagenet/`` as ``tiny-imagenet-200.zip`` (http://cs231n.stanford.edu/), read
without extracting it, images ``(n, 64, 64, 3)``; no checksum is published for it, so it
is used unverified (:func:`load_tiny_imagenet` takes ``md5=`` to check one). Textures,
TinyImageNet's out-of-distribution set, is found the same way in ``textures/`` as
``dtd-r1.0.1.tar.gz`` (https://www.robots.ox.ac.uk/~vgg/data/dtd/, read without
extracting it, images resized and centre-cropped to ``(n, 64, 64, 3)`` by default; no
published checksum either, :func:`load_textures` takes ``md5=``). The quick profile never
needs them; no subset of them ships.

``source="subset"`` needs neither files nor network: a small, deterministic,
real, exactly class-balanced subset (MNIST: 10,000 train and 2,000 test images;
Fashion-MNIST: 5,000 train and 2,000 test images) ships inside the package
(``symlib/_data/``), verified against ``symlib/_data/subset_manifest.json``; it
is produced by ``scripts/make_subset.py``.

Preprocessing (pixel scaling to [0, 1] and flattening) happens in exactly one
place, :func:`preprocess`; :func:`load_split` returns ready-to-use arrays.
:func:`standardize` maps them to zero mean and unit variance per channel where a
paper's code does (OptuNet).
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "files": ["DATASETS", "RGB_DATASETS", "TINY_IMAGENET", "TEXTURES", "ALL_DATASETS", "SPLITS", "SOURCES", "FILES",
              "DATASET_FILES", "MD5", "N_EXAMPLES", "ENV_DATA_DIR", "DataNotFoundError", "ChecksumError",
              "data_search_dirs", "cache_dir", "find_files", "md5_file", "verify_file"],
    "idx": ["read_idx", "idx_bytes"],
    "downloads": ["MIRRORS", "download"],
    "subset": ["SUBSET_MANIFEST", "subset_manifest", "subset_indices"],
    "mnist": ["load_mnist"],
    "cifar": ["CIFAR_MEMBERS", "CIFAR100_LABELS", "load_cifar10", "load_cifar100", "read_cifar"],
    "svhn": ["load_svhn", "read_svhn"],
    "tiny_imagenet": ["TINY_IMAGENET_CLASSES", "TINY_IMAGENET_SPLITS", "load_tiny_imagenet", "read_tiny_imagenet"],
    "textures": ["TEXTURES_CLASSES", "TEXTURES_SPLITS", "load_textures", "read_textures"],
    "splits": ["preprocess", "CHANNEL_STATS", "standardize", "train_val_split", "load_split"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
