"""Small JSON summaries of runs that were really done (paper profile, GPU), kept in the
repository under ``book/results/`` so the book shows them without re-running.

Each file ``<experiment>-<profile>.json`` records the numbers with the command, profile,
device, date, elapsed time and the symlib version that produced them (``symlib_version``:
the package version and the hash of its sources, as in the artifact cache's keys; also
separately as ``package_version`` and ``code_hash``), with the Python and JAX versions.
"""
from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ENV_VAR = "SYMLIB_RESULTS"


def results_dir() -> Path:
    """``$SYMLIB_RESULTS``, else ``book/results`` of the repository containing the working
    directory (found by walking up to the folder holding ``_toc.yml``), else ``./book/results``.

    Returns:
        The folder (not created here).
    """
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    return repository_root() / "book" / "results"


def device_description() -> str:
    """Accelerator (or CPU) that JAX computes on, with the host's core count.

    Returns:
        E.g. ``"1 x cpu (cpu); host x86_64 with 2 cores"``.
    """
    import jax

    dev = jax.devices()[0]
    kind = getattr(dev, "device_kind", dev.platform)
    return f"{len(jax.devices())} x {kind} ({dev.platform}); host {platform.machine()} with {os.cpu_count()} cores"


def git_commit(root: Path) -> dict[str, Any]:
    """``{"commit", "clean", "from"}`` of the code this process runs, from the checkout at ``root``.

    Where ``python -m symlib gpu prepare`` left ``.gpu-carry/provenance.json`` for these very
    sources (the same :func:`~symlib.experiments.cache.code_version`) and this checkout's git
    does not know the commit it names, that record: a lent machine's copy of ``.git`` can be
    older than the working tree it was sent (seen on 2026-11-27, when it named the session's
    starting commit). Where git knows that commit (the checkout that prepared it, with any
    commits or edits since), git's answer; ``None`` values where there is no git either.
    """
    from symlib.experiments.cache import code_version

    saved = Path(root) / ".gpu-carry" / "provenance.json"
    if saved.exists():
        prov = json.loads(saved.read_text())
        if prov.get("symlib_version") == code_version() and not _git_knows(root, prov.get("commit")):
            return {"commit": prov.get("commit"), "clean": bool(prov.get("clean")), "from": "gpu prepare"}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True)
        return {"commit": commit.stdout.strip(), "clean": not dirty.stdout.strip(), "from": "git"}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "clean": None, "from": "unknown"}


def _git_knows(root: Path, commit: str | None) -> bool:
    """Whether the git checkout at ``root`` holds ``commit`` (False without git or a commit)."""
    if not commit:
        return False
    try:
        return subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root,
                              capture_output=True).returncode == 0
    except OSError:
        return False


def repository_root() -> Path:
    """The repository holding the working directory (the folder with ``_toc.yml``), else the
    working directory."""
    here = Path.cwd().resolve()
    return next((f for f in (here, *here.parents) if (f / "_toc.yml").exists()), here)


def _jax_version() -> str:
    import jax

    return jax.__version__


def jsonable(obj: Any) -> Any:
    """``obj`` with every array (numpy or JAX) and numpy scalar as lists and Python numbers,
    and every key a string: what ``json.dumps`` takes."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return obj


def save(name: str, profile: str, summary: dict[str, Any], *, command: str | None = None,
         directory: Path | None = None, elapsed_s: float | None = None, computed: bool | None = None,
         steps: Mapping[str, int] | None = None, device: str | None = None,
         date: str | None = None, versions: Mapping[str, str] | None = None,
         commit: Mapping[str, Any] | None = None) -> Path:
    """Write ``summary`` (numbers, lists, dicts) with its provenance.

    Args:
        name: the experiment's name.
        profile: the profile's name.
        summary: the numbers to keep (arrays become lists).
        command: the command that produced them (default: this process's command line).
        directory: where to write (default: :func:`results_dir`).
        elapsed_s: wall time of the command in seconds (of this invocation only: a run
            resumed from cached steps counts its last piece, one loaded from the cache about 0).
        computed: whether this invocation computed the artifact (False: it was loaded from
            the artifact cache, e.g. computed by an earlier run of the same code); None: unknown.
        steps: for an experiment computed in cached steps, ``{"computed": n, "loaded": m}``:
            how many steps this invocation computed and how many it loaded from the cache
            (an earlier, interrupted invocation's); kept as the record's ``steps``.
        device: the device that computed it (default: :func:`device_description` of this
            process's; give it for a record assembled elsewhere from a device's step files).
        date: the date it was computed, ``YYYY-MM-DD`` (default: today).
        versions: ``symlib_version``, ``python`` and ``jax`` of the process that computed it
            (default: this process's; give them, like ``device``, for an assembled record).
        commit: ``{"commit", "clean", "from"}`` of the code that computed it (default:
            :func:`git_commit` of :func:`repository_root`; give it for an assembled record).

    Returns:
        The path of ``<name>-<profile>.json``.
    """
    from symlib.core.io import atomic_write
    from symlib import __version__
    from symlib.experiments.cache import code_version

    versions = {"symlib_version": code_version(), "python": platform.python_version(), "jax": _jax_version(),
                **(versions or {})}
    unknown = set(versions) - {"symlib_version", "python", "jax"}
    if unknown:
        raise ValueError(f"versions has unknown keys {sorted(unknown)}; expected symlib_version, python, jax")
    directory = Path(directory) if directory is not None else results_dir()
    directory.mkdir(parents=True, exist_ok=True)
    record = {
        "experiment": name,
        "profile": profile,
        "command": command if command is not None else " ".join([Path(sys.executable).name, *sys.argv]),
        "device": device if device is not None else device_description(),
        "date": date if date is not None else time.strftime("%Y-%m-%d"),
        "elapsed_s": None if elapsed_s is None else round(float(elapsed_s), 1),
        "computed": computed,
        **({"steps": {"computed": int(steps["computed"]), "loaded": int(steps["loaded"])}} if steps else {}),
        **{k: v for k, v in (commit if commit is not None else git_commit(repository_root())).items()
           if k in ("commit", "clean")},
        "symlib_version": versions["symlib_version"],
        "package_version": versions["symlib_version"].rsplit("+", 1)[0] or __version__,
        "code_hash": versions["symlib_version"].rsplit("+", 1)[-1],
        "python": versions["python"],
        "jax": versions["jax"],
        "summary": jsonable(summary),
    }
    path = directory / f"{name}-{profile}.json"
    atomic_write(path, lambda f: f.write((json.dumps(record, indent=1) + "\n").encode()))
    return path


def load(name: str, profile: str, directory: Path | None = None) -> dict[str, Any] | None:
    """The saved record for ``name`` under ``profile``.

    Args:
        name: the experiment's name.
        profile: the profile's name.
        directory: where to look (default: :func:`results_dir`).

    Returns:
        The record (``summary``, ``command``, ``device``, ``date``, ...), or None if that
        run was never saved.

    Raises:
        ValueError: if the file is not valid JSON.
    """
    path = (Path(directory) if directory is not None else results_dir()) / f"{name}-{profile}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); delete it or re-run the experiment") from err


def command_setting(command: str, name: str) -> str:
    """The value given to setting ``name`` in a saved run's command line: ``--name VALUE``,
    ``--name=VALUE`` or ``name=VALUE`` (as in ``--set name=VALUE``), the last occurrence (the
    one the run applied, as argparse and the profile's ``--set`` do).

    Raises:
        ValueError: if the command does not set ``name``.
    """
    found = re.findall(rf"(?:--{re.escape(name)}(?:\s+|=)|(?<![\w-]){re.escape(name)}=)(\S+)", command)
    if not found:
        raise ValueError(f"the command does not set {name!r}: {command!r}")
    return found[-1]


def saved_labels(name: str, base: str = "paper", directory: Path | None = None) -> list[str]:
    """The profile labels of the saved runs of ``name``: ``base`` itself and its labelled
    reductions (``<base>-...``), ``base`` first, the others in natural order (numbers by
    value: ``paper-8nets`` before ``paper-16nets``).

    Args:
        name: the experiment's name.
        base: the base profile (default ``"paper"``).
        directory: where to look (default: :func:`results_dir`).

    Returns:
        The labels (empty when none was saved).
    """
    folder = Path(directory) if directory is not None else results_dir()
    labels = []
    for path in folder.glob(f"{name}-{base}*.json"):
        label = path.stem[len(name) + 1:]
        if label == base or label.startswith(f"{base}-"):
            labels.append(label)
    return sorted(labels, key=lambda label: label_order(label, base))


def label_order(label: str, base: str = "paper") -> tuple:
    """A sort key of profile labels: ``base`` first, then the others in natural order (numbers
    by value: ``paper-8nets`` before ``paper-16nets``)."""
    return label != base, [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", label)]
