"""Artifact cache: expensive results stored on disk under a key of (name, config, version).

An artifact is a nested dict of arrays and scalars (a pytree of dicts). It is stored as
``<name>-<key>.npz`` plus ``<name>-<key>.json``; the JSON is written last and holds the
SHA-256 of the ``.npz``, so it doubles as the completed-marker. Both files are written
to a temporary name and renamed, so a crash never leaves a file that looks complete.
A missing marker or a checksum mismatch is reported and the artifact recomputed.

Location: ``$SYMLIB_CACHE`` or ``<$XDG_CACHE_HOME or ~/.cache>/symlib/artifacts``.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from symlib import __version__
from symlib.core.io import atomic_write

ENV_VAR = "SYMLIB_CACHE"
_SEP = "/"


def cache_dir() -> Path:
    """The directory artifacts are stored in (not created here)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "symlib" / "artifacts"


def _canonical(obj: Any) -> Any:
    """JSON-ready form of a config: dicts sorted, tuples as lists, numpy scalars unwrapped."""
    if isinstance(obj, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"config values must be JSON-like (dict, list, str, number, bool, None), got {type(obj).__name__}: {obj!r}")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``<symlib version>+<hash of the package's .py sources>``.

    Part of every cache key, so editing symlib's code invalidates its artifacts instead
    of silently serving results computed by older code.
    """
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]  # the symlib package (this file is symlib/experiments/cache.py)
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def cache_key(name: str, config: Mapping[str, Any], version: str | None = None) -> str:
    """Hex key from the experiment name, its config and the code version (:func:`code_version`)."""
    version = code_version() if version is None else version
    blob = json.dumps({"name": name, "config": _canonical(config), "version": version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, np.ndarray]:
    if not isinstance(tree, Mapping):
        raise TypeError(f"an artifact must be a nested dict of arrays, got {type(tree).__name__}")
    flat = {}
    for key, value in tree.items():
        if not isinstance(key, str) or _SEP in key or not key:
            raise TypeError(f"artifact keys must be non-empty strings without {_SEP!r}, got {key!r} under {prefix!r}")
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, path + _SEP))
        else:
            arr = np.asarray(value)
            if arr.dtype == object:
                raise TypeError(f"artifact leaf {path!r} is not an array or number: {type(value).__name__}")
            flat[path] = arr
    return flat


def _unflatten(flat: Mapping[str, np.ndarray]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, value in flat.items():
        node = tree
        *parents, leaf = path.split(_SEP)
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return tree


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def artifact_paths(name: str, config: Mapping[str, Any], directory: Path | None = None) -> tuple[Path, Path]:
    """(data file, completed-marker) for an artifact."""
    directory = Path(directory) if directory is not None else cache_dir()
    stem = f"{name}-{cache_key(name, config)}"
    return directory / f"{stem}.npz", directory / f"{stem}.json"


def save(name: str, config: Mapping[str, Any], tree: Mapping[str, Any], directory: Path | None = None) -> Path:
    """Store ``tree`` atomically; returns the data file's path."""
    data_path, marker_path = artifact_paths(name, config, directory)
    flat = _flatten(tree)
    atomic_write(data_path, lambda f: np.savez(f, **flat))
    meta = {
        "name": name,
        "key": data_path.stem.rsplit("-", 1)[-1],
        "config": _canonical(config),
        "symlib_version": code_version(),
        "sha256": _sha256(data_path),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    atomic_write(marker_path, lambda f: f.write(json.dumps(meta, indent=1).encode()))
    return data_path


class CorruptArtifactError(RuntimeError):
    """An artifact on disk is incomplete or does not match its recorded checksum."""


def load(name: str, config: Mapping[str, Any], directory: Path | None = None) -> dict[str, Any] | None:
    """The stored artifact, ``None`` when absent; raises CorruptArtifactError when damaged."""
    data_path, marker_path = artifact_paths(name, config, directory)
    if not data_path.exists() and not marker_path.exists():
        return None
    if not marker_path.exists():
        raise CorruptArtifactError(f"{data_path} has no completed-marker {marker_path.name} (interrupted write?)")
    if not data_path.exists():
        raise CorruptArtifactError(f"{marker_path} exists but its data file {data_path.name} is missing")
    try:
        meta = json.loads(marker_path.read_text())
        expected = meta["sha256"]
    except (json.JSONDecodeError, KeyError) as err:
        raise CorruptArtifactError(f"unreadable completed-marker {marker_path}: {err}") from err
    actual = _sha256(data_path)
    if actual != expected:
        raise CorruptArtifactError(f"{data_path} has sha256 {actual[:12]}…, its marker records {expected[:12]}…")
    try:
        with np.load(data_path, allow_pickle=False) as z:
            flat = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise CorruptArtifactError(f"cannot read {data_path}: {err}") from err
    return _unflatten(flat)


def cached(
    name: str,
    config: Mapping[str, Any],
    compute: Callable[[], Mapping[str, Any]],
    *,
    directory: Path | None = None,
    verbose: bool = True,
) -> dict[str, Any]:
    """Load artifact ``name`` for ``config`` if stored and intact, else ``compute()`` and store it.

    A damaged artifact is reported on stderr, deleted, and recomputed; it is never used.
    Returned leaves are numpy arrays (also right after computing, so both paths agree).
    """
    key = cache_key(name, config)
    try:
        tree = load(name, config, directory)
    except CorruptArtifactError as err:
        print(f"[symlib.experiments.cache] {name} ({key}): damaged artifact, recomputing. {err}", file=sys.stderr)
        for p in artifact_paths(name, config, directory):
            p.unlink(missing_ok=True)
        tree = None
    if tree is not None:
        if verbose:
            print(f"[symlib.experiments.cache] loaded {name} ({key}) from the artifact cache")
        return tree
    if verbose:
        print(f"[symlib.experiments.cache] computing {name} ({key}) ...")
    result = compute()
    save(name, config, result, directory)
    return _unflatten(_flatten(result))
