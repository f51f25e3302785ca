"""Memory-mapped weight stores: banks of networks too large for the artifact cache's files
(1,100 ResNet-18 are 49 GB), kept beside it, one float32 ``.npy`` per leaf with the networks
on the leading axis, written chunk by chunk so that a killed run resumes at the next chunk.

A store lives in ``<cache>/weights/<name>-<key>`` (:func:`store_dir`). It is complete once
its writer has put a ``complete`` marker in it; :func:`open_weights` refuses one without.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from symlib.experiments import cache

__all__ = ["create_weights", "write_weights", "open_weights", "resume_weights", "store_dir", "STORE_VERSION"]


def _leaf_file(directory: Path, path: str) -> Path:
    return directory / (path.replace("/", "__") + ".npy")


def create_weights(directory: Path, template: dict, n: int) -> dict[str, np.memmap]:
    """A new weight store: one memory-mapped float32 ``.npy`` per leaf, ``n`` networks.

    A ``complete`` marker left by an earlier store in ``directory`` is removed first, so
    :func:`open_weights` refuses the store until it has been filled again.

    Args:
        directory: where the files go (created).
        template: one network (nested dict), for the leaves' paths and shapes.
        n: networks in the store.

    Returns:
        Flat path -> writable memmap of shape ``(n, *leaf shape)``.
    """
    from symlib.core.pytree import flatten_dict

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "complete").unlink(missing_ok=True)
    flat = flatten_dict(template, "/")
    layout = {"n": int(n), "leaves": {p: list(np.shape(a)) for p, a in flat.items()}}
    (directory / "layout.json").write_text(json.dumps(layout))
    return {p: np.lib.format.open_memmap(_leaf_file(directory, p), mode="w+", dtype=np.float32,
                                         shape=(n, *np.shape(a))) for p, a in flat.items()}


def write_weights(store: dict[str, np.memmap], start: int, stack: dict) -> None:
    """Write a stack of networks (nested dict, leading axis) at ``start`` and flush."""
    from symlib.core.pytree import flatten_dict

    for p, a in flatten_dict(stack, "/").items():
        store[p][start:start + np.shape(a)[0]] = np.asarray(a, np.float32)
        store[p].flush()


def open_weights(directory: Path) -> dict:
    """A weight store's networks as a nested dict of read-only memmaps (leading axis = networks).

    Args:
        directory: a store written by :func:`create_weights`.

    Returns:
        The stack (nothing is read into memory until sliced).

    Raises:
        FileNotFoundError: if the store is missing or incomplete (no ``complete`` marker).
    """
    from symlib.core.pytree import unflatten_dict

    if not (directory / "complete").exists():
        raise FileNotFoundError(f"weight store {directory} is missing or incomplete; delete the experiment's "
                                f"cached artifact (or the directory) and run it again")
    layout = json.loads((directory / "layout.json").read_text())
    return unflatten_dict({p: np.load(_leaf_file(directory, p), mmap_mode="r") for p in layout["leaves"]}, "/")


#: version of the weight stores' format and of the code that fills them: the stores are keyed
#: by the config and this, not by the code version, so that an unrelated edit does not
#: retrain a bank of a thousand ResNet-18
STORE_VERSION = 1


def store_dir(name: str, config: dict) -> Path:
    """The folder of experiment ``name``'s weight store for ``config``, under the artifact
    cache (:func:`symlib.experiments.cache.cache_dir`): ``weights/<name>-<key>``, the key
    made from the config and :data:`STORE_VERSION`."""
    return cache.cache_dir() / "weights" / f"{name}-{cache.config_key(name, {**config, 'store': STORE_VERSION})}"


def resume_weights(directory: Path) -> dict[str, np.memmap] | None:
    """An existing store's leaves as writable memmaps, to go on filling it after a killed
    run (the chunks already written stay), or None if there is no store at ``directory``.

    Args:
        directory: a store made by :func:`create_weights`.

    Returns:
        Flat path -> writable memmap, as :func:`create_weights` returns, or None.
    """
    if not (directory / "layout.json").exists():
        return None
    layout = json.loads((directory / "layout.json").read_text())
    return {p: np.load(_leaf_file(directory, p), mmap_mode="r+") for p in layout["leaves"]}
