"""Artifact cache: expensive results stored on disk under a key of (name, config, version).

An artifact is a nested dict of arrays and scalars (a pytree of dicts). It is stored as
``<name>-<key>.npz`` plus ``<name>-<key>.json``; the JSON is written last and holds the
SHA-256 of the ``.npz``, so it doubles as the completed-marker. Both files are written
to a temporary name and renamed, so a crash never leaves a file that looks complete.
A missing marker or a checksum mismatch is reported and the artifact recomputed.

A run killed before its artifact is stored leaves nothing behind (the writes are atomic), so
it would start again from scratch; long experiments therefore run their outer loop (widths,
datasets, blocks of networks) through :func:`cached_steps`, which stores every finished step
as an artifact of its own, and a re-run continues with the first missing step.

Progress goes to the logger ``symlib.experiments.cache`` (a child of ``"symlib"``): whether
an artifact was loaded or computed at INFO, quiet under Python's default WARNING level (so
notebooks and the book show nothing; ``python -m symlib run`` shows it on stderr), and a
damaged artifact at WARNING, visible everywhere.

Location: ``$SYMLIB_CACHE`` or ``<$XDG_CACHE_HOME or ~/.cache>/symlib/artifacts``.

The same folder keeps XLA's compiled programs (``<cache>/xla``, :func:`use_compilation_cache`,
switched on when :mod:`symlib.experiments` is imported), so a chapter, or a later
``python -m symlib run``, loads what an earlier process compiled instead of compiling it
again; ``rm -rf`` of the folder empties both.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import filelock
import numpy as np

from symlib import __version__
from symlib.core.io import atomic_write
from symlib.core.pytree import flatten_dict, unflatten_dict

ENV_VAR = "SYMLIB_CACHE"
XLA_ENV_VAR = "SYMLIB_XLA_CACHE"
T = TypeVar("T")
_SEP = "/"
log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """The directory artifacts are stored in (not created here).

    Returns:
        ``$SYMLIB_CACHE``, else ``<$XDG_CACHE_HOME or ~/.cache>/symlib/artifacts``.
    """
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "symlib" / "artifacts"


def use_compilation_cache(directory: Path | None = None) -> Path | None:
    """Keep XLA's compiled programs on disk, in ``<artifact cache>/xla``, for later processes.

    JAX's persistent compilation cache (``jax_compilation_cache_dir``), with every program
    kept however short its compilation (most of a chapter's compile time is many small
    programs). A program compiled from the same computation on the same backend and JAX
    version is loaded instead of compiled; the numbers are those of a fresh compilation.
    :mod:`symlib.experiments` calls this when imported, so the book's chapters share their
    compiled programs as they share their artifacts.

    Nothing is changed when ``$SYMLIB_XLA_CACHE`` is ``0`` or when a compilation cache is
    already set (yours is kept). The folder is chosen once per process: a later change
    of ``$SYMLIB_CACHE`` does not move it. Processes may share it at once (two chapters
    executed together): JAX writes an entry in one piece, without a lock, and a process
    that reads an entry while another writes it gets JAX's warning ("Error reading
    persistent compilation cache entry") and compiles the program itself. No size limit is
    set (JAX's default): a limit makes JAX lock the folder, but its eviction then lists and
    reads every entry at every write, which slowed the last chapters of a book by seconds
    each (a book leaves about a thousand programs). The unit tests switch the cache off.

    Args:
        directory: the artifact cache (default: :func:`cache_dir`).

    Returns:
        The folder in use (ours or the one already set), or None when switched off.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    if os.environ.get(XLA_ENV_VAR, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    current = jax.config.jax_compilation_cache_dir
    if current:
        return Path(current)
    folder = Path(directory if directory is not None else cache_dir()) / "xla"
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    compilation_cache.reset_cache()  # a compilation before this call may have found the cache off
    return folder


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
    """``<symlib version>+<hash of the package's .py sources and data files>``.

    Part of every cache key, so editing symlib's code, or its shipped data (``symlib/_data``:
    the MNIST subsets of the quick profile and their manifest), invalidates its artifacts
    instead of silently serving results computed from older code or data.

    Returns:
        The version string, e.g. ``"0.1.0+935acd53c7a3"``.
    """
    h = hashlib.sha256()
    root = package_root()
    for path in sorted([*root.rglob("*.py"), *(p for p in (root / "_data").rglob("*") if p.is_file())]):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def package_root() -> Path:
    """The ``symlib`` package folder whose sources and data :func:`code_version` hashes.

    Returns:
        The folder of the ``symlib`` package (all subpackages, not only ``symlib/experiments``).
    """
    return Path(__file__).resolve().parents[1]


def _hash(record: Mapping[str, Any]) -> str:
    blob = json.dumps(record, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_key(name: str, config: Mapping[str, Any], version: str | None = None) -> str:
    """Hex key from the experiment name, its config and the code version.

    Args:
        name: the experiment's name.
        config: the part of the profile its result depends on (JSON-like values).
        version: the code version (default: :func:`code_version`).

    Returns:
        A 16-character hex key.

    Raises:
        TypeError: if ``config`` holds a value that is not JSON-like.
    """
    version = code_version() if version is None else version
    return _hash({"name": name, "config": _canonical(config), "version": version})


def config_key(name: str, config: Mapping[str, Any]) -> str:
    """Hex key from the experiment name and its config only, without the code version.

    For results that must survive unrelated code edits (the HMC chains on disk): put
    whatever version decides them (e.g. a sampler version) into ``config``.

    Args:
        name: the experiment's name.
        config: its configuration (JSON-like values).

    Returns:
        A 16-character hex key.

    Raises:
        TypeError: if ``config`` holds a value that is not JSON-like.
    """
    return _hash({"name": name, "config": _canonical(config)})


def _check_keys(tree: Any, prefix: str = "") -> None:
    """Artifact keys: non-empty strings without the path separator, at every level."""
    if not isinstance(tree, Mapping):
        raise TypeError(f"an artifact must be a nested dict of arrays, got {type(tree).__name__}")
    for key, value in tree.items():
        if not isinstance(key, str) or _SEP in key or not key:
            raise TypeError(f"artifact keys must be non-empty strings without {_SEP!r}, got {key!r} under {prefix!r}")
        if isinstance(value, Mapping):
            _check_keys(value, f"{prefix}{key}{_SEP}")


def _element_shapes(value: Any) -> list[tuple[int, ...]] | None:
    """Shapes of the elements of a list, tuple or object array (None for anything else)."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        items = list(value.ravel())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        return None
    try:
        return [np.shape(v) for v in items]
    except ValueError:  # an element is itself ragged
        return None


def _leaf_array(path: str, value: Any) -> np.ndarray:
    """``value`` as one numpy array; a clear error for ragged or non-numeric leaves, and for
    dtypes a ``.npz`` does not read back as themselves (bfloat16 and the other ``ml_dtypes``
    would come back as raw bytes)."""
    shapes = _element_shapes(value)
    if shapes is not None and len(set(shapes)) > 1:
        raise ValueError(f"artifact leaf {path!r} holds arrays of different shapes {shapes}; one array is expected "
                         f"(store them under separate keys of a dict instead)")
    try:
        arr = np.asarray(value)
    except ValueError as err:  # ragged nested sequences
        raise ValueError(f"artifact leaf {path!r} cannot be stored as one array: {err}") from err
    if arr.dtype == object:
        raise TypeError(f"artifact leaf {path!r} is not an array or number: {type(value).__name__}")
    if np.lib.format.descr_to_dtype(np.lib.format.dtype_to_descr(arr.dtype)) != arr.dtype:
        raise TypeError(f"artifact leaf {path!r} has dtype {arr.dtype}, which an .npz file cannot store "
                        f"(it would be read back as raw bytes); convert it, e.g. to float32")
    return arr


def _flatten(tree: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Artifact -> ``{"a/b": array}`` (keys checked, leaves turned into arrays)."""
    _check_keys(tree)
    return {path: _leaf_array(path, value) for path, value in flatten_dict(tree, sep=_SEP).items()}


def _unflatten(flat: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``{"a/b": array}`` -> nested dicts."""
    return unflatten_dict(flat, sep=_SEP)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def artifact_paths(name: str, config: Mapping[str, Any], directory: Path | None = None) -> tuple[Path, Path]:
    """Where an artifact is stored.

    Args:
        name: the experiment's name.
        config: its configuration (part of the key).
        directory: the cache folder (default: :func:`cache_dir`).

    Returns:
        ``(data file, completed-marker)``: ``<name>-<key>.npz`` and ``<name>-<key>.json``.
    """
    directory = Path(directory) if directory is not None else cache_dir()
    stem = f"{name}-{cache_key(name, config)}"
    return directory / f"{stem}.npz", directory / f"{stem}.json"


def save(name: str, config: Mapping[str, Any], tree: Mapping[str, Any], directory: Path | None = None) -> Path:
    """Store ``tree`` atomically.

    Args:
        name: the experiment's name.
        config: its configuration (part of the key, recorded in the marker).
        tree: the artifact: nested dicts whose leaves are arrays or numbers (a list of
            equally shaped arrays is stacked into one array).
        directory: the cache folder (default: :func:`cache_dir`).

    Returns:
        The data file's path.

    Raises:
        TypeError: if ``tree`` is not a nested dict with non-empty string keys without
            ``"/"``, or a leaf is not numeric or has a dtype an ``.npz`` cannot store
            (bfloat16, float8).
        ValueError: if a leaf holds arrays of different shapes (a ragged list), naming
            the leaf's path and the shapes.
    """
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
    """The stored artifact.

    Args:
        name: the experiment's name.
        config: its configuration.
        directory: the cache folder (default: :func:`cache_dir`).

    Returns:
        The nested dict of arrays, or None when it was never stored.

    Raises:
        CorruptArtifactError: when the marker or the data file is missing, unreadable,
            or the checksum does not match.
    """
    data_path, marker_path = artifact_paths(name, config, directory)
    if not data_path.exists() and not marker_path.exists():
        return None
    if not marker_path.exists():
        raise CorruptArtifactError(f"{data_path} has no completed-marker {marker_path.name} (interrupted write?)")
    if not data_path.exists():
        raise CorruptArtifactError(f"{marker_path} exists but its data file {data_path.name} is missing")
    expected = _recorded_sha256(marker_path)
    actual = _sha256(data_path)
    if actual != expected:
        raise CorruptArtifactError(f"{data_path} has sha256 {actual[:12]}…, its marker records {expected[:12]}…")
    try:
        with np.load(data_path, allow_pickle=False) as z:
            flat = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise CorruptArtifactError(f"cannot read {data_path}: {err}") from err
    return _unflatten(flat)


def _recorded_sha256(marker_path: Path) -> str:
    """The data file's SHA-256 recorded in a completed-marker.

    Raises:
        CorruptArtifactError: if the marker is not a JSON object with a string ``"sha256"``.
    """
    try:
        meta = json.loads(marker_path.read_bytes())
    except ValueError as err:  # not JSON, or not UTF-8
        raise CorruptArtifactError(f"unreadable completed-marker {marker_path}: {err}") from err
    if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
        raise CorruptArtifactError(f"completed-marker {marker_path} is not a JSON object with a \"sha256\" string")
    return meta["sha256"]


def cached(
    name: str,
    config: Mapping[str, Any],
    compute: Callable[[], Mapping[str, Any]],
    *,
    directory: Path | None = None,
    verbose: bool = True,
) -> dict[str, Any]:
    """Load artifact ``name`` for ``config`` if stored and intact, else ``compute()`` and store it.

    Processes that share the cache compute an artifact once: the computing one holds a file
    lock (``.locks/<name>-<key>.lock``, the ``filelock`` package; lock files stay, since
    deleting one is unsafe while others wait), and another that needs the same artifact waits
    for it and loads it (two chapters executed at once, ``scripts/execute_notebooks.py
    --jobs 2``). A damaged artifact is never used: without the lock it is taken as missing (it
    may be one being written), and once the lock is held it is read again and, if still
    damaged, reported (a WARNING on the ``symlib.experiments.cache`` logger), deleted and
    recomputed.
    Returned leaves are numpy arrays (also right after computing, so both paths agree).

    Args:
        name: the experiment's name.
        config: its configuration.
        compute: computes the artifact when it is not stored.
        directory: the cache folder (default: :func:`cache_dir`).
        verbose: log whether it was loaded or computed (INFO on the
            ``symlib.experiments.cache`` logger, shown only where logging is configured to
            show INFO, as ``python -m symlib run`` does); False logs nothing of it.

    Returns:
        The artifact as nested dicts of numpy arrays.
    """
    key = cache_key(name, config)
    tree = _load_if_intact(name, config, directory)
    if tree is None:
        data_path = artifact_paths(name, config, directory)[0]
        (data_path.parent / ".locks").mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(data_path.parent / ".locks" / f"{data_path.stem}.lock"):
            tree = _load_or_forget(name, config, directory)  # stored meanwhile by another process?
            if tree is None:
                if verbose:
                    log.info("computing %s (%s) ...", name, key)
                result = compute()
                save(name, config, result, directory)
                COMPUTED.add(key)
                return _unflatten(_flatten(result))
    if verbose:
        log.info("loaded %s (%s) from the artifact cache", name, key)
    return tree


def _load_if_intact(name: str, config: Mapping[str, Any], directory: Path | None) -> dict[str, Any] | None:
    """:func:`load`, with a damaged artifact taken as missing and left alone (used without the lock,
    when another process may be writing it)."""
    try:
        return load(name, config, directory)
    except CorruptArtifactError:
        return None


def _load_or_forget(name: str, config: Mapping[str, Any], directory: Path | None) -> dict[str, Any] | None:
    """:func:`load`, with a damaged artifact reported (WARNING), deleted and taken as missing
    (used only while holding the artifact's lock)."""
    try:
        return load(name, config, directory)
    except CorruptArtifactError as err:
        log.warning("%s (%s): damaged artifact, recomputing. %s", name, cache_key(name, config), err)
        for p in artifact_paths(name, config, directory):
            p.unlink(missing_ok=True)
        return None


#: per experiment name, how many steps its last :func:`cached_steps` call loaded from the
#: cache and how many it computed (read by ``python -m symlib run`` for the saved record)
STEPS_RUN: dict[str, dict[str, int]] = {}

#: the cache keys of the artifacts :func:`cached` computed in this process (a damaged one
#: recomputed included), so a caller can tell computed from loaded after the fact
COMPUTED: set[str] = set()


def cached_steps(
    name: str,
    config: Mapping[str, Any],
    items: Iterable[T],
    fn: Callable[[T], Mapping[str, Any]],
    *,
    label: Callable[[T], Any] = str,
    directory: Path | None = None,
    verbose: bool = True,
) -> list[dict[str, Any]]:
    """``[fn(item) for item in items]``, each step stored in the cache as soon as it is done.

    The outer loop of a long experiment (one width, one dataset, one block of networks per
    step) goes through this, so a run that is killed keeps the steps it finished and a new
    run continues with the first missing one. Every step is an ordinary artifact
    (:func:`cached`) named ``<name>.step`` whose config is ``config`` plus
    ``{"step": label(item)}``: same atomic writes and checksums, same code-version rule
    (editing symlib starts the steps afresh, as it does the whole artifact). Step
    artifacts stay in the cache after the experiment's own artifact is stored; deleting
    them only costs a recomputation if that artifact is deleted too.

    Args:
        name: the experiment's name.
        config: the experiment's configuration (its cache config).
        items: the steps, in order.
        fn: computes one step's artifact (a nested dict of arrays and numbers).
        label: a JSON-like label of an item, unique among ``items`` (default ``str``).
        directory: the cache folder (default: :func:`cache_dir`).
        verbose: log whether each step was loaded or computed (INFO).

    Returns:
        One artifact per item, in order, as :func:`cached` returns them (numpy leaves,
        also for the steps computed now, so a resumed run and an uninterrupted one agree).

    Raises:
        ValueError: if two items have the same label.
    """
    items = list(items)
    labels = [_canonical(label(item)) for item in items]
    seen = [json.dumps(x, sort_keys=True) for x in labels]
    if len(set(seen)) != len(seen):
        raise ValueError(f"cached_steps({name!r}): step labels must be unique, got {labels}")
    out = []
    tally = STEPS_RUN[name] = {"computed": 0, "loaded": 0}
    for i, (item, lab) in enumerate(zip(items, labels)):
        step_config = _step_config(config, lab)
        if verbose:
            log.info("%s: step %d of %d (%s)", name, i + 1, len(items), lab)
        key = cache_key(f"{name}.step", step_config)
        COMPUTED.discard(key)
        out.append(cached(f"{name}.step", step_config, functools.partial(fn, item), directory=directory,
                          verbose=verbose))
        tally["computed" if key in COMPUTED else "loaded"] += 1
    return out


def _step_config(config: Mapping[str, Any], label: Any) -> dict[str, Any]:
    """The cache config of the step labelled ``label`` of :func:`cached_steps`."""
    return {**config, "step": _canonical(label)}


def save_step(name: str, config: Mapping[str, Any], label: Any, tree: Mapping[str, Any],
              directory: Path | None = None) -> Path:
    """Store ``tree`` as the step ``label`` of :func:`cached_steps` ``(name, config, ...)``,
    so that a later run of that experiment loads it instead of computing it (a step computed
    elsewhere, e.g. on a lent GPU by :mod:`symlib.experiments.gpu_queue`).

    Args:
        name: the experiment's name (as given to :func:`cached_steps`).
        config: its configuration (as given to :func:`cached_steps`).
        label: the step's label (``label(item)`` there).
        tree: the step's artifact.
        directory: the cache folder (default: :func:`cache_dir`).

    Returns:
        The path of the stored data file.
    """
    return save(f"{name}.step", _step_config(config, label), tree, directory)
