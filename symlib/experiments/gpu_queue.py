"""The GPU queue: the papers' headline runs, in order, advanced one resumable step at a time
on a GPU that is lent now and then, for a few minutes, with no network.

The queue is a versioned file in the repository (``gpu/queue.json``): an ordered list of jobs,
each with its GPU-minute estimate and its progress. Its steps live beside it, one folder per
job (``gpu/<job>/step-NNNN.npz`` and ``.json``: the step's arrays, their checksum and their
provenance: device, date, git commit, command, versions). Three commands move it on and a fourth reads it
(``python -m symlib gpu ...``, :func:`symlib.__main__.main`):

- ``prepare`` (here, once): the data and the wheels the device lacks, in an ignored folder
  (``.gpu-carry/``) that the device call carries, with the commit it was prepared at.
- ``next --minutes M --out DIR`` (on the device): the first unfinished job's next steps, as
  many as fit in ``M`` minutes, each written to ``DIR`` as soon as it is done (a tar of the
  step files, split into parts under the 16 MiB a returned file may have, with a manifest of
  their SHA-256 sums and a log), so a call killed mid-step keeps its finished steps.
- ``fold DIR`` (here): checks every part against the manifest (a damaged part is refused by
  name), adds the new steps to the job's folder (a step already there with the same checksum
  is skipped: folding twice changes nothing), copies saved results to ``book/results/``,
  updates the queue's progress and prints the GPU-minutes left.
- ``install [JOB ...]`` (here): puts the folded steps of ``blocks`` jobs into the artifact
  cache, so that ``python -m symlib run`` finds them (a labelled reduction can read the steps of
  a job that is not finished yet).

A step's arrays are keyed by the job's definition, not by symlib's source hash (unlike the
artifact cache), so edits to unrelated code do not discard GPU work; a job whose definition
changes is a new job (its ``version``). Before a run that needs a finished job (a job's
``needs``), ``next`` puts that job's steps into the artifact cache where the experiment
looks for them (:func:`symlib.experiments.cache.save_step`).

Job kinds: ``blocks`` (an experiment's cached steps, one a step; ``target`` names the
function ``profile -> steps``, where ``steps`` has ``name``, ``cache_config``, ``starts``
(the steps' labels) and ``train(label)``: a :class:`~symlib.experiments.registry.Blocks` of
networks, or an experiment's :class:`~symlib.experiments.registry.Steps`),
``experiments`` (registered experiments run in one step, their summaries saved like ``python
-m symlib run --out``), and ``planned`` (listed with its estimate; no runner yet: ``next``
stops there and says so).

A job runs ``where`` ``"device"`` (the default) or ``"here"``: a job that needs no GPU once the
jobs it ``needs`` are folded (scoring samples, or data the device's carry cannot hold beside
the rest: the working tree and the carry travel within 64 MiB) runs on this machine with
``next --here``, and is folded like a device call's return; ``next`` on the device skips it.
"""
from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from symlib.core.io import atomic_write
from symlib.core.pytree import flatten_dict, unflatten_dict

QUEUE_VERSION = 1
KINDS = ("blocks", "experiments", "planned")
WHERE = ("device", "here")
#: the largest file a device call may return is 16 MiB: parts are cut below it
PART_BYTES = 15 * 2**20
#: a device call returns at most 8 files: the log, and a manifest and parts per job
MAX_FILES = 8
#: parts of one job's return at most
MAX_PARTS = MAX_FILES - 2
#: margin on a step's expected seconds before starting it within the minutes given
MARGIN = 1.25
CARRY = ".gpu-carry"
#: what travels to a device call (the working tree, tracked and untracked-not-ignored files, and
#: the carry) is 64 MiB at most: folded steps are committed in ``gpu/`` and travel every call
TRAVEL_BYTES = 64 * 2**20
#: the packages a lent GPU's image lacks (book/running.md), fetched as wheels by ``prepare``
DEVICE_WHEELS = ("blackjax==1.7.1", "pooch==1.9.0", "platformdirs==4.14.8", "lapx==0.11.1")
DATASETS = ("mnist", "fashion_mnist")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_json(path: Path, obj: Any) -> None:
    atomic_write(Path(path), lambda f: f.write((json.dumps(obj, indent=1) + "\n").encode()))


def load_queue(path: Path) -> dict[str, Any]:
    """The queue file, checked: its version, unique job names, known kinds, ``needs`` earlier.

    Raises:
        ValueError: naming the first problem found.
    """
    path = Path(path)
    try:
        queue = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read the GPU queue {path}: {err}") from err
    if queue.get("version") != QUEUE_VERSION:
        raise ValueError(f"{path}: queue version {queue.get('version')!r}, this symlib reads version {QUEUE_VERSION}")
    seen: set[str] = set()
    for job in queue.get("jobs", []):
        name = job.get("name")
        if not name or name in seen:
            raise ValueError(f"{path}: job names must be present and unique, got {name!r}")
        if job.get("kind") not in KINDS:
            raise ValueError(f"{path}: job {name!r} has kind {job.get('kind')!r}; kinds: {', '.join(KINDS)}")
        if job.get("where", "device") not in WHERE:
            raise ValueError(f"{path}: job {name!r} has where {job.get('where')!r}; one of: {', '.join(WHERE)}")
        for field in ("title", "steps", "estimate_gpu_minutes") + (("estimate_minutes_here",) if job.get("where") == "here"
                                                                  else ()):
            if field not in job:
                raise ValueError(f"{path}: job {name!r} lacks {field!r}")
        missing = [n for n in job.get("needs", []) if n not in seen]
        if missing:
            raise ValueError(f"{path}: job {name!r} needs {missing}, which must come before it in the queue")
        seen.add(name)
    return queue


def job_hash(job: Mapping[str, Any]) -> str:
    """Hash of what a job computes (its definition without progress, estimate or notes)."""
    keep = {k: v for k, v in job.items() if k in ("name", "version", "kind", "target", "experiments", "profile",
                                                    "set", "label", "steps", "needs")}
    return _sha256(json.dumps(keep, sort_keys=True).encode())[:16]


def job_profile(job: Mapping[str, Any]):
    """The job's profile: ``profile``, reduced by ``set`` under ``label`` when given."""
    from symlib.experiments.profiles import get_profile, reduced

    base = get_profile(job.get("profile", "paper"))
    if job.get("set"):
        return reduced(base, {k: str(v) for k, v in job["set"].items()}, job["label"])
    return base


def _target(job: Mapping[str, Any]) -> Callable:
    module, _, name = job["target"].partition(":")
    return getattr(importlib.import_module(module), name)


def job_blocks(job: Mapping[str, Any]):
    """The steps of a ``blocks`` job (data loaded): a :class:`~symlib.experiments.registry.Blocks`
    or any object with ``name``, ``cache_config``, ``starts`` and ``train(label)``.

    Raises:
        ValueError: if the job's declared ``steps`` is not its number of steps.
    """
    blocks = _target(job)(job_profile(job))
    if len(blocks.starts) != int(job["steps"]):
        raise ValueError(f"job {job['name']!r} declares {job['steps']} steps but its profile gives "
                         f"{len(blocks.starts)} blocks; correct the queue file (and its version)")
    return blocks


def folded_steps(state: Path) -> dict[int, dict[str, Any]]:
    """The steps folded into a job's folder: index -> the step's metadata."""
    out = {}
    for meta_path in sorted(Path(state).glob("step-*.json")):
        meta = json.loads(meta_path.read_text())
        out[int(meta["index"])] = meta
    return out


def load_step(state: Path, index: int) -> dict[str, Any]:
    """A folded step's arrays, checked against the SHA-256 in its metadata.

    Raises:
        ValueError: if the arrays file is missing or does not match its checksum.
    """
    meta = json.loads((Path(state) / f"step-{index:04d}.json").read_text())
    path = Path(state) / f"step-{index:04d}.npz"
    if not path.exists() or _sha256(path.read_bytes()) != meta["sha256"]:
        raise ValueError(f"{path} is missing or does not match the SHA-256 in its .json; restore it from git")
    with np.load(path) as z:
        return unflatten_dict({k: z[k] for k in z.files})


def install_steps(job: Mapping[str, Any], state: Path, directory: Path | None = None) -> int:
    """Put a ``blocks`` job's folded steps into the artifact cache, where its experiment
    (:func:`~symlib.experiments.registry.run_blocks`) finds them instead of training them.

    Returns:
        How many steps were installed.
    """
    from symlib.experiments.cache import save_step

    if job["kind"] != "blocks":
        return 0
    steps = folded_steps(state)
    if not steps:
        return 0
    blocks = job_blocks(job)
    for index in steps:
        save_step(blocks.name, blocks.cache_config, blocks.starts[index], load_step(state, index), directory)
    return len(steps)


def folded_provenance(queue_path: Path, name: str, steps: int | None = None) -> dict[str, Any]:
    """Where and when a job's folded steps ran, for the prose of a result built on them.

    Args:
        queue_path: the queue file.
        name: the job.
        steps: only the job's first ``steps`` steps (those a labelled reduction read; default:
            every folded step).

    Returns:
        ``steps`` (folded) and ``of`` (the job's), ``devices`` (joined), ``minutes`` (the
        steps' seconds, summed), ``first`` and ``last`` (dates, days only) and ``commits``
        (short, joined; ``unknown`` where a step ran outside a git checkout).

    Raises:
        ValueError: for a job that is not in the queue or has no folded step, or fewer than
            ``steps`` first steps folded.
    """
    queue_path = Path(queue_path)
    jobs = {j["name"]: j for j in load_queue(queue_path)["jobs"]}
    if name not in jobs:
        raise ValueError(f"no job {name!r} in {queue_path}; jobs: {', '.join(jobs)}")
    folded = folded_steps(queue_path.parent / name)
    if not folded:
        raise ValueError(f"job {name!r} has no folded step in {queue_path.parent / name}")
    if steps is not None:
        missing = sorted(set(range(int(steps))) - set(folded))
        if missing:
            raise ValueError(f"job {name!r} lacks folded step(s) {missing} of its first {steps}")
        folded = {i: m for i, m in folded.items() if i < int(steps)}
    dates = sorted(m["date"][:10] for m in folded.values())
    return {"steps": len(folded), "of": int(jobs[name]["steps"]),
            "devices": "; ".join(sorted({m["device"] for m in folded.values()})),
            "minutes": round(sum(float(m["seconds"]) for m in folded.values()) / 60, 1),
            "first": dates[0], "last": dates[-1],
            "commits": ", ".join(sorted({m["commit"][:7] if m.get("commit") else "unknown" for m in folded.values()}))}


def install(queue_path: Path, names: list[str] | tuple[str, ...] = ()) -> dict[str, int]:
    """:func:`install_steps` of the queue's ``blocks`` jobs ``names`` (default: all of them),
    finished or not: a labelled reduction that reads the steps folded so far (e.g. chapter 13's
    ``functional_collapse`` with ``bank_used``) then finds them instead of training them.

    Returns:
        ``{job: steps installed}``.

    Raises:
        ValueError: for a name that is not a ``blocks`` job of the queue.
    """
    queue_path = Path(queue_path)
    jobs = {j["name"]: j for j in load_queue(queue_path)["jobs"] if j["kind"] == "blocks"}
    unknown = [n for n in names if n not in jobs]
    if unknown:
        raise ValueError(f"not a blocks job of {queue_path}: {', '.join(unknown)}; blocks jobs: {', '.join(jobs)}")
    return {n: install_steps(jobs[n], queue_path.parent / n) for n in (names or jobs)}


def provenance(command: str, root: Path) -> dict[str, Any]:
    """Device, date, commit, command and versions of this process."""
    import jax

    from symlib.experiments.cache import code_version
    from symlib.experiments.judging.results import device_description, git_commit

    return {"device": device_description(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            **git_commit(root), "command": command, "symlib_version": code_version(), "jax": jax.__version__,
            "python": platform.python_version(),
            "matmul_precision": os.environ.get("JAX_DEFAULT_MATMUL_PRECISION", "default")}


class Bundle:
    """What a device call returns for one job (in ``out/<job>/``): its step files in one tar,
    rewritten after every step (so a call killed later keeps them), cut into at most
    ``max_parts`` parts under :data:`PART_BYTES`, and a ``manifest.json`` with the parts'
    SHA-256 sums, written last."""

    def __init__(self, out: Path, job: Mapping[str, Any], max_parts: int = MAX_PARTS):
        self.out, self.job, self.files, self.max_parts, self.num_parts = Path(out), job, {}, max_parts, 0
        self.out.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, data: bytes) -> None:
        self.files[name] = data
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for fname, blob in self.files.items():
                info = tarfile.TarInfo(fname)
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
        blob = buf.getvalue()
        parts = [blob[i:i + PART_BYTES] for i in range(0, len(blob), PART_BYTES)]
        if len(parts) > self.max_parts:
            raise RuntimeError(f"the return for job {self.job['name']!r} would need {len(parts)} parts of at most "
                               f"{PART_BYTES >> 20} MiB, {self.max_parts} left (a device call returns "
                               f"{MAX_FILES} files): make its steps smaller")
        names = []
        for i, part in enumerate(parts):
            pname = f"{self.job['name']}.tar.part-{i:02d}"
            atomic_write(self.out / pname, lambda f, p=part: f.write(p))
            names.append({"name": pname, "sha256": _sha256(part), "bytes": len(part)})
        self.num_parts = len(parts)
        _write_json(self.out / "manifest.json", {"queue_version": QUEUE_VERSION, "job": self.job["name"],
                                                 "job_hash": job_hash(self.job), "parts": names,
                                                 "sha256": _sha256(blob), "files": sorted(self.files)})


def _npz_bytes(tree: Mapping[str, Any]) -> bytes:
    """A step's arrays as a compressed ``.npz``: the per-step swap counts of OptuNets, 3% of
    them nonzero, shrink 47-fold (4 networks x 60 epochs of the paper's split: 1.5 MB to 32 kB)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in flatten_dict(tree).items()})
    return buf.getvalue()


def _log(out: Path, line: str) -> None:
    """``line`` on stdout and in the call's log, after the UTC time (where a call spends its minutes)."""
    line = f"{time.strftime('%H:%M:%S', time.gmtime())} {line}"
    print(line, flush=True)
    with open(Path(out) / "gpu-log.txt", "a") as f:
        f.write(line + "\n")


def first_unfinished(queue: Mapping[str, Any], root: Path, where: str = "device",
                     done_now: Mapping[str, set[int]] | None = None,
                     skip: Iterable[str] = ()) -> dict[str, Any] | None:
    """The first job of the queue that runs ``where``, has a runner (not ``planned``), is not
    in ``skip`` and has a step neither folded nor in ``done_now`` (job -> steps run in this
    call); None when all are done."""
    skip = set(skip)
    for job in queue["jobs"]:
        if job["kind"] == "planned" or job.get("where", "device") != where or job["name"] in skip:
            continue
        if len(set(folded_steps(root / job["name"])) | set((done_now or {}).get(job["name"], ()))) < int(job["steps"]):
            return job
    return None


def next_steps(queue_path: Path, out: Path, minutes: float, *, started: float | None = None,
               command: str = "", job_name: str | None = None, here: bool = False) -> dict[str, list[int]]:
    """Run the queue's next steps within ``minutes`` of ``started`` (default: now), each written
    to ``out/<job>/`` as soon as it is done: the first unfinished job's steps, then, while time
    and the return's :data:`MAX_FILES` files allow, the next job's (a step of a ``blocks`` job
    run here is also put into the artifact cache, so a later job of the same call that needs
    it finds it). Jobs are taken among the device's, or with ``here`` among those that run
    on this machine (``"where": "here"``); ``planned`` jobs (no runner yet) are skipped and
    named. A job that fails (its inputs, or a step) is logged and the call goes on with the
    next job that does not need it, so one failure does not spend the rest of a lent window;
    the call then raises. With ``job_name`` only that job runs.

    Returns:
        ``{job: indices of the steps run}``, in the order run.

    Raises:
        ValueError: for a ``job_name`` that is unknown or planned, or a job whose ``needs``
            are unfinished; at the end of a call in which a job failed (naming each, with its
            error; the steps that other jobs finished are in ``out`` all the same).
    """
    queue_path = Path(queue_path)
    root = queue_path.parent
    queue = load_queue(queue_path)
    started = time.time() if started is None else started
    jobs = {j["name"]: j for j in queue["jobs"]}
    if job_name is not None and job_name not in jobs:
        raise ValueError(f"no job {job_name!r} in {queue_path}; jobs: {', '.join(jobs)}")
    if job_name is not None and jobs[job_name]["kind"] == "planned":
        job = jobs[job_name]
        raise ValueError(f"job {job['name']!r} ({job['title']}) has no runner yet: {job.get('note', '')}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    where = "here" if here else "device"
    done_now: dict[str, set[int]] = {}
    files_left = MAX_FILES - 1  # the log
    prov = provenance(command, root.parent)
    failed: dict[str, str] = {}
    while True:
        job = jobs[job_name] if job_name else first_unfinished(queue, root, where, done_now, failed)
        if job is None or (job_name and job["name"] in done_now):
            planned = [j["name"] for j in queue["jobs"] if j["kind"] == "planned"
                       and len(folded_steps(root / j["name"])) < int(j["steps"])]
            _log(out, f"every job of the queue that runs {'here' if here else 'on the device'} is done"
                      + (f"; planned jobs without a runner yet: {', '.join(planned)}" if planned else ""))
            break
        blocked = [need for need in job.get("needs", []) if need in failed]
        if blocked:
            failed[job["name"]] = f"needs job {blocked[0]!r}, which failed"
            _log(out, f"skipping job {job['name']}: {failed[job['name']]}")
            continue
        for need in job.get("needs", []):
            if len(set(folded_steps(root / need)) | done_now.get(need, set())) < int(jobs[need]["steps"]):
                if done_now:  # this call ran out of time or files before the job's inputs were complete
                    _log(out, f"stopping: job {job['name']!r} needs job {need!r}, which is not finished")
                    return _call_result(done_now, failed)
                raise ValueError(f"job {job['name']!r} needs job {need!r}, which is not finished")
            if need not in done_now:
                install_steps(jobs[need], root / need)
        bundle = Bundle(out / job["name"], job, max_parts=files_left - 1)
        try:
            ran, finished = _advance(job, root, bundle, out, started, minutes, prov)
        except Exception as err:  # any failure of one job: the window goes on with the others
            if job_name:
                raise
            failed[job["name"]] = f"{type(err).__name__}: {err}"
            _log(out, f"job {job['name']} failed ({failed[job['name']]}); going on with the next job")
            ran, finished = [], True
        done_now.setdefault(job["name"], set()).update(ran)
        files_left -= 1 + bundle.num_parts if bundle.num_parts else 0
        if not bundle.num_parts:
            shutil.rmtree(out / job["name"], ignore_errors=True)
        if not finished or job_name or files_left < 2:
            break
    return _call_result(done_now, failed)


def _call_result(done_now: Mapping[str, set[int]], failed: Mapping[str, str]) -> dict[str, list[int]]:
    """What :func:`next_steps` returns: the steps run, job by job, unless a job failed.

    Raises:
        ValueError: naming every job that failed, with its error.
    """
    if failed:
        raise ValueError("job(s) failed in this call (the other jobs' steps are in the output folder): "
                         + "; ".join(f"{name}: {why}" for name, why in failed.items()))
    return {name: sorted(v) for name, v in done_now.items()}


def _advance(job: Mapping[str, Any], root: Path, bundle: Bundle, out: Path, started: float, minutes: float,
             prov: Mapping[str, Any]) -> tuple[list[int], bool]:
    """One job's missing steps, as many as fit in the time left.

    Returns:
        ``(indices run, whether the job has no step left)``.
    """
    from symlib.experiments.cache import save_step

    done = folded_steps(root / job["name"])
    todo = [i for i in range(int(job["steps"])) if i not in done]
    expected = (job.get("progress", {}).get("seconds_per_step")
                or 60.0 * estimate_minutes(job) / max(int(job["steps"]), 1))
    _log(out, f"job {job['name']}: {len(done)} of {job['steps']} steps folded; up to {minutes:g} min from the call's "
              f"start on {prov['device']} (commit {prov['commit']}, matmul precision {prov['matmul_precision']})")
    blocks = job_blocks(job) if job["kind"] == "blocks" else None
    ran = []
    for index in todo:
        elapsed = time.time() - started
        if elapsed + MARGIN * expected > 60.0 * minutes:
            _log(out, f"stopping: step {index} of {job['name']} needs about {expected:.0f} s, "
                      f"{60 * minutes - elapsed:.0f} s left")
            return ran, False
        _log(out, f"step {index} of {job['name']} started (about {expected:.0f} s expected)")  # if the call is killed
        t0 = time.perf_counter()
        if blocks is not None:
            tree = blocks.train(blocks.starts[index])
            save_step(blocks.name, blocks.cache_config, blocks.starts[index], tree)  # for a later job of this call
            files = {f"step-{index:04d}.npz": _npz_bytes(tree)}
        else:
            files = _run_experiments(job, prov["command"])
        seconds = time.perf_counter() - t0
        meta = {"job": job["name"], "job_hash": job_hash(job), "index": index, "seconds": round(seconds, 2),
                **prov, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                "files": {name: _sha256(data) for name, data in files.items()}}
        if blocks is not None:
            meta.update(label=blocks.starts[index], sha256=meta["files"][f"step-{index:04d}.npz"])
        for name, data in files.items():
            bundle.add(name, data)
        bundle.add(f"step-{index:04d}.json", (json.dumps(meta, indent=1) + "\n").encode())
        ran.append(index)
        expected = max(expected if len(ran) == 1 else 0.0, seconds)
        _log(out, f"step {index} of {job['name']} ({job['steps']} steps) done in {seconds:.1f} s")
    return ran, True


def _run_experiments(job: Mapping[str, Any], command: str) -> dict[str, bytes]:
    """An ``experiments`` job's one step: each experiment run, its summary saved as a record."""
    import tempfile

    from symlib import experiments
    from symlib.experiments.judging import results

    profile = job_profile(job)
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in job["experiments"]:
            start = time.time()
            result = experiments.run(name, profile)
            path = results.save(name, profile.name, experiments.SUMMARIES[name](result.artifact), directory=tmp,
                                command=command, elapsed_s=time.time() - start, computed=True)
            files[f"result-{path.name}"] = path.read_bytes()
    return files


def read_return(directory: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and the files of what a device call returned, every part checked.

    Raises:
        ValueError: naming a missing or damaged part, or a damaged whole.
    """
    directory = Path(directory)
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{directory}/manifest.json is missing or damaged ({err}): nothing to fold") from err
    blob = b""
    for part in manifest["parts"]:
        path = directory / part["name"]
        if not path.exists():
            raise ValueError(f"part {part['name']} is missing from {directory}")
        data = path.read_bytes()
        if _sha256(data) != part["sha256"]:
            raise ValueError(f"part {part['name']} does not match its SHA-256 in the manifest (damaged in transfer?); "
                             f"nothing was folded")
        blob += data
    if _sha256(blob) != manifest["sha256"]:
        raise ValueError(f"the joined parts in {directory} do not match the manifest's SHA-256; nothing was folded")
    files = {}
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r") as tar:
        for member in tar.getmembers():
            if not member.isfile() or "/" in member.name or member.name.startswith("."):
                raise ValueError(f"unexpected entry {member.name!r} in the returned tar; nothing was folded")
            files[member.name] = tar.extractfile(member).read()
    return manifest, files


def returned_bundles(directory: Path) -> list[Path]:
    """The job folders of a call's return: ``directory`` itself if it holds a
    ``manifest.json``, else its subfolders that do (one a job, in name order).

    Raises:
        ValueError: if there is none.
    """
    directory = Path(directory)
    if (directory / "manifest.json").exists():
        return [directory]
    found = sorted(d for d in directory.iterdir() if (d / "manifest.json").exists()) if directory.is_dir() else []
    if not found:
        raise ValueError(f"{directory} holds no manifest.json, nor any folder with one: nothing to fold")
    return found


def fold(directory: Path, queue_path: Path, results_dir: Path | None = None) -> dict[str, int]:
    """Fold what a device call returned (every job's folder of it, :func:`returned_bundles`)
    into the jobs' folders, ``book/results/`` and the queue's progress. Idempotent: a step
    already folded with the same checksum is skipped. Every job's return is checked before
    any is folded.

    Returns:
        ``{"new": steps added, "already": steps already there, "results": records copied}``.

    Raises:
        ValueError: for a damaged return, a return made for another version of the job, or
            a step already folded with a different checksum.
    """
    bundles = returned_bundles(directory)
    for bundle in bundles:
        read_return(bundle)
    counts = {"new": 0, "already": 0, "results": 0}
    for bundle in bundles:
        for k, v in _fold_one(bundle, queue_path, results_dir).items():
            counts[k] += v
    return counts


def _fold_one(directory: Path, queue_path: Path, results_dir: Path | None) -> dict[str, int]:
    """:func:`fold` of one job's return."""
    queue_path = Path(queue_path)
    queue = load_queue(queue_path)
    manifest, files = read_return(directory)
    jobs = {j["name"]: j for j in queue["jobs"]}
    job = jobs.get(manifest["job"])
    if job is None or job_hash(job) != manifest["job_hash"]:
        raise ValueError(f"the return in {directory} was made for job {manifest['job']!r} as defined by hash "
                         f"{manifest['job_hash']}, which is not the queue's job now: nothing was folded")
    state = queue_path.parent / job["name"]
    results_dir = Path(results_dir) if results_dir is not None else queue_path.parent.parent / "book" / "results"
    metas = {n: json.loads(b) for n, b in files.items() if n.startswith("step-") and n.endswith(".json")}
    for name, meta in metas.items():  # check everything before writing anything
        for fname, sha in meta["files"].items():
            if fname not in files or _sha256(files[fname]) != sha:
                raise ValueError(f"{fname} of {name} is missing or does not match its SHA-256; nothing was folded")
            target = (results_dir / fname[len("result-"):]) if fname.startswith("result-") else state / fname
            if target.exists() and _sha256(target.read_bytes()) != sha:
                raise ValueError(f"{target} exists with other contents than step {meta['index']} of this return "
                                 f"(computed twice?); move it away to fold this return")
    counts = {"new": 0, "already": 0, "results": 0}
    for name, meta in sorted(metas.items()):
        if (state / name).exists():
            counts["already"] += 1
            continue
        for fname in meta["files"]:
            target = (results_dir / fname[len("result-"):]) if fname.startswith("result-") else state / fname
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, lambda f, b=files[fname]: f.write(b))
            counts["results"] += fname.startswith("result-")
        atomic_write(state / name, lambda f, b=files[name]: f.write(b))
        counts["new"] += 1
    update_progress(queue_path)
    return counts


def update_progress(queue_path: Path) -> dict[str, Any]:
    """Recompute every job's ``progress`` from its folder and write the queue file."""
    queue = load_queue(queue_path)
    for job in queue["jobs"]:
        steps = folded_steps(Path(queue_path).parent / job["name"])
        secs = [float(m["seconds"]) for m in steps.values()]
        job["progress"] = {"steps_done": len(steps), "gpu_seconds": round(sum(secs), 1),
                           "seconds_per_step": round(float(np.median(secs)), 1) if secs else None,
                           "devices": sorted({m["device"] for m in steps.values()})}
    _write_json(queue_path, queue)
    return queue


def estimate_minutes(job: Mapping[str, Any]) -> float:
    """A job's estimated minutes on the machine it runs on: ``estimate_gpu_minutes`` (one
    H100) for a device job, ``estimate_minutes_here`` (this 2-core machine) for one that runs here."""
    return float(job["estimate_minutes_here" if job.get("where") == "here" else "estimate_gpu_minutes"])


def minutes_left(job: Mapping[str, Any]) -> float:
    """GPU-minutes a job still needs: its remaining steps at the measured rate, else its estimate."""
    prog = job.get("progress") or {}
    left = int(job["steps"]) - int(prog.get("steps_done", 0))
    per = prog.get("seconds_per_step") or 60.0 * estimate_minutes(job) / max(int(job["steps"]), 1)
    return left * per / 60.0


def status_lines(queue_path: Path) -> list[str]:
    """One line per job (steps done, GPU-minutes spent and left), and the total left."""
    queue = load_queue(queue_path)
    lines = []
    for job in queue["jobs"]:
        prog = job.get("progress") or {}
        unit = "GPU-min" if job.get("where", "device") == "device" else "min here"
        lines.append(f"{job['name']:24s} {job['kind']:11s} {prog.get('steps_done', 0):>3}/{job['steps']:<3} steps  "
                     f"{prog.get('gpu_seconds', 0) / 60:6.1f} {unit} spent  {minutes_left(job):6.1f} left  "
                     f"{job['title']}")
    device = [j for j in queue["jobs"] if j.get("where", "device") == "device"]
    lines.append(f"left in all: about {sum(minutes_left(j) for j in device):.0f} GPU-minutes "
                 f"(estimates where no step has run yet), and about "
                 f"{sum(minutes_left(j) for j in queue['jobs'] if j not in device):.0f} minutes here")
    return lines


def prepare(root: Path, data_dir: Path | None, wheels: bool = True, datasets: tuple[str, ...] = DATASETS) -> Path:
    """Fill ``<root>/.gpu-carry``: the files of ``datasets`` (the working tree and the carry
    travel within 64 MiB: Fashion-MNIST alone is 30 MB, so carry only what the job needs), the wheels the device
    lacks (:data:`DEVICE_WHEELS`, for its Python 3.12; needs the package registry) and the
    commit now checked out.

    Returns:
        The carry folder.

    Raises:
        ValueError: if ``data_dir`` lacks a dataset, the carry folder is not ignored by git, or
            what would travel exceeds :data:`TRAVEL_BYTES` (:func:`travelling`).
    """
    root = Path(root)
    carry = root / CARRY
    ignored = subprocess.run(["git", "check-ignore", "-q", CARRY + "/"], cwd=root).returncode == 0
    if not ignored:
        raise ValueError(f"{carry} is not ignored by git: add '/{CARRY}/' to .gitignore first")
    from symlib.data.files import data_search_dirs

    shutil.rmtree(carry / "data", ignore_errors=True)
    for name in datasets:
        dirs = data_search_dirs(name, data_dir)
        src = next((d for d in dirs if len(list(d.glob("*.gz"))) >= 4), dirs[0])
        found = sorted(Path(src).glob("*.gz"))
        if len(found) < 4:
            raise ValueError(f"{src} holds {len(found)} of the 4 {name} files; pass --data-dir")
        dst = carry / "data" / name
        dst.mkdir(parents=True, exist_ok=True)
        for f in found:
            shutil.copy2(f, dst / f.name)
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                        "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                        "-d", str(carry / "whl"), *DEVICE_WHEELS], check=True)
    from symlib.experiments.cache import code_version

    saved = carry / "provenance.json"
    saved.unlink(missing_ok=True)  # git's answer here, not an older prepare's
    from symlib.experiments.judging.results import git_commit

    prov = {k: v for k, v in git_commit(root).items() if k != "from"}
    _write_json(saved, {**prov, "symlib_version": code_version()})
    travelling(root)
    return carry


def travelling(root: Path) -> dict[str, int]:
    """The bytes that travel to a device call from the checkout ``root``: ``tree`` (the files
    git tracks or would track) and ``carry`` (:data:`CARRY`).

    Raises:
        ValueError: if together they exceed :data:`TRAVEL_BYTES`, naming the largest folders
            (the call would be refused).
    """
    root = Path(root)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    sizes: dict[str, int] = {}
    for name in filter(None, listed):
        path = root / name
        if path.is_file():
            top = name.split("/")[0] if "/" in name else "."
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    carry = sum(p.stat().st_size for p in (root / CARRY).rglob("*") if p.is_file())
    out = {"tree": sum(sizes.values()), "carry": carry}
    if out["tree"] + carry > TRAVEL_BYTES:
        largest = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])[:4])
        raise ValueError(f"the working tree ({out['tree'] / 2**20:.1f} MiB; largest: {largest}) and {CARRY} "
                         f"({carry / 2**20:.1f} MiB) exceed the {TRAVEL_BYTES >> 20} MiB a device call takes: carry "
                         "less (--datasets) or move folded steps out of the tree")
    return out
