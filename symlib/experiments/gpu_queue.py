"""The GPU queue: the papers' headline runs, in order, advanced one resumable step at a time
on a GPU that is lent now and then, for a few minutes, with no network.

The queue is a versioned file in the repository (``gpu/queue.json``): an ordered list of jobs,
each with its GPU-minute estimate and its progress. Its steps live beside it, one folder per
job (``gpu/<job>/step-NNNN.npz`` and ``.json``: the step's arrays, their checksum and their
provenance: device, date, git commit, command, versions). Three commands move it on and a fourth reads it
(``python -m symlib gpu ...``, :func:`symlib.__main__.main`):

- ``prepare`` (here, once): the data and the wheels the device lacks, in an ignored folder
  (``.gpu-carry/``) that the device call carries, with the commit it was prepared at.
- ``next --minutes M --out DIR`` (on the device, :func:`symlib.experiments.gpu_device.next_steps`): the first unfinished job's next steps, as
  many as fit in ``M`` minutes, each written to ``DIR`` as soon as it is done (a tar of the
  step files, split into parts under the 16 MiB a returned file may have, with a manifest of
  their SHA-256 sums and a log), so a call killed mid-step keeps its finished steps.
- ``fold DIR`` (here): checks every part against the manifest (a damaged part is refused by
  name), adds the new steps to the job's folder (a step already there with the same files
  is skipped: folding twice changes nothing; one with other files is refused, naming the files
  to move away), copies saved results to ``book/results/``,
  updates the queue's progress and prints the GPU-minutes left.
- ``install [JOB ...]`` (here): puts the folded steps of ``blocks`` jobs into the artifact
  cache, so that ``python -m symlib run`` finds them (a labelled reduction can read the steps of
  a job that is not finished yet).

A step's arrays are keyed by the job's definition, not by symlib's source hash (unlike the
artifact cache), so edits to unrelated code do not discard GPU work; a job whose definition
changes is a new job (its ``version``): the steps folded for its older version are ignored
(:func:`folded_steps`), and replaced as the new version's are folded. Before a run that needs
a finished job (a job's ``needs``), ``next`` puts that job's steps into the artifact cache
where the experiment looks for them (:func:`symlib.experiments.cache.save_step`).

Job kinds: ``blocks`` (an experiment's cached steps, one a step; ``target`` names the
function ``profile -> steps``, where ``steps`` has ``name``, ``cache_config``, ``starts``
(the steps' labels) and ``train(label)``: a :class:`~symlib.experiments.registry.Blocks` of
networks, or an experiment's :class:`~symlib.experiments.registry.Steps`),
``experiments`` (registered experiments run in one step, their summaries saved like ``python
-m symlib run --out``), ``pieces`` (a pieced HMC run, :mod:`symlib.experiments.xiao.hmc_pieces`:
``target`` names the function ``profile -> PiecedHMC``; a step is one piece of the time left in
the call), ``tests`` (pytest with ``args`` on the device, a step for each entry of ``paths``: the test
paths, glob patterns relative to the checkout; its report, the counts, failures and errors with
their messages, and the log's end, come back) and ``planned`` (listed with its estimate; no runner yet: ``next`` stops there and
says so).

A ``pieces`` job's run lives in ``gpu/pieces/<state>/`` (ignored by git: tens of MB of running
summaries, rewritten every piece; the jobs that share a ``state`` continue one run, the first
up to ``until_kept`` kept samples per chain). ``prepare`` and ``fold`` put its detached part
(the chains and the reference sample, :func:`~symlib.experiments.xiao.hmc_pieces.detach`) in
the carry; the device advances it by one piece and returns the piece's partial state, which
``fold`` attaches to the run here (:func:`~symlib.experiments.xiao.hmc_pieces.attach`); git
keeps each piece's provenance and progress (``gpu/<job>/step-NNNN.json``).

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
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from symlib.core.io import atomic_write
from symlib.core.pytree import unflatten_dict

QUEUE_VERSION = 1
KINDS = ("blocks", "experiments", "pieces", "tests", "planned")
WHERE = ("device", "here")
#: where the runs of ``pieces`` jobs live, beside the queue file (ignored by git)
PIECES = "pieces"
CARRY = ".gpu-carry"
#: what travels to a device call (the working tree, tracked and untracked-not-ignored files, and
#: the carry) is 64 MiB at most: folded steps are committed in ``gpu/`` and travel every call
TRAVEL_BYTES = 64 * 2**20
#: the packages a lent GPU's image lacks (book/running.md), fetched as wheels by ``prepare``
DEVICE_WHEELS = ("blackjax==1.7.1", "pooch==1.9.0", "platformdirs==4.14.8", "lapx==0.11.1")
DATASETS = ("mnist", "fashion_mnist")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_json(path: Path, obj: Any) -> None:
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
        _check_step_minutes(path, job)
        missing = [n for n in job.get("needs", []) if n not in seen]
        if missing:
            raise ValueError(f"{path}: job {name!r} needs {missing}, which must come before it in the queue")
        seen.add(name)
    return queue


def job_hash(job: Mapping[str, Any]) -> str:
    """Hash of what a job computes (its definition without progress, estimate or notes)."""
    keep = {k: v for k, v in job.items() if k in ("name", "version", "kind", "target", "experiments", "profile",
                                                    "set", "label", "steps", "needs", "state", "until_kept", "args",
                                                    "paths")}
    return sha256_hex(json.dumps(keep, sort_keys=True).encode())[:16]


def job_profile(job: Mapping[str, Any]):
    """The job's profile: ``profile``, reduced by ``set`` under ``label`` when given."""
    from symlib.experiments.profiles import get_profile, reduced

    base = get_profile(job.get("profile", "paper"))
    if job.get("set"):
        return reduced(base, {k: str(v) for k, v in job["set"].items()}, job["label"])
    return base


def job_target(job: Mapping[str, Any]) -> Callable:
    module, _, name = job["target"].partition(":")
    return getattr(importlib.import_module(module), name)


def job_blocks(job: Mapping[str, Any]):
    """The steps of a ``blocks`` job (data loaded): a :class:`~symlib.experiments.registry.Blocks`
    or any object with ``name``, ``cache_config``, ``starts`` and ``train(label)``.

    Raises:
        ValueError: if the job's declared ``steps`` is not its number of steps.
    """
    blocks = job_target(job)(job_profile(job))
    if len(blocks.starts) != int(job["steps"]):
        raise ValueError(f"job {job['name']!r} declares {job['steps']} steps but its profile gives "
                         f"{len(blocks.starts)} blocks; correct the queue file (and its version)")
    return blocks


def pieces_progress(queue: Mapping[str, Any], root: Path, state: str) -> dict[str, Any] | None:
    """The progress of the pieced run ``state`` after its last folded piece (the ``piece``
    record of the step, over every job that shares the run), or None before the first."""
    last = None
    for job in queue["jobs"]:
        if job["kind"] == "pieces" and job["state"] == state:
            for meta in folded_steps(root / job["name"], job).values():
                if last is None or meta["piece"]["iteration"] > last["iteration"]:
                    last = meta["piece"]
    return last


def job_done(queue: Mapping[str, Any], root: Path, job: Mapping[str, Any], done_now: Iterable[int] = ()) -> bool:
    """Whether a job has nothing left: every step of its current version folded
    (:func:`folded_steps`) or in ``done_now`` (steps run in this call); for a ``pieces`` job,
    its run reached ``until_kept`` kept samples per chain (or the end)."""
    if job["kind"] == "pieces":
        prog = pieces_progress(queue, root, job["state"])
        if prog is None:
            return False
        return prog["complete"] or (job.get("until_kept") is not None and prog["num_kept"] >= int(job["until_kept"]))
    return len(set(folded_steps(root / job["name"], job)) | set(done_now)) >= int(job["steps"])


def folded_steps(state: Path, job: Mapping[str, Any] | None = None) -> dict[int, dict[str, Any]]:
    """The steps folded into a job's folder: index -> the step's metadata.

    With ``job``, only the steps of its current definition (their ``job_hash`` is the job's,
    :func:`job_hash`): a job whose definition changes is a new job, and the steps of its
    older version are not its steps (:func:`older_steps` counts them). A ``pieces`` job's steps
    are pieces of its run (``gpu/pieces/<state>/``), which holds every piece attached, whatever
    the version that folded it: all are kept."""
    out = {}
    keep = None if job is None or job["kind"] == "pieces" else job_hash(job)
    for meta_path in sorted(Path(state).glob("step-*.json")):
        meta = json.loads(meta_path.read_text())
        if keep is None or meta.get("job_hash") == keep:
            out[int(meta["index"])] = meta
    return out


def older_steps(state: Path, job: Mapping[str, Any]) -> list[int]:
    """The indices of the steps in a job's folder folded for another definition of the job
    than its current one (ignored by :func:`folded_steps`; folding a step of the current
    version replaces the older one's)."""
    if job["kind"] == "pieces":
        return []
    current = set(folded_steps(state, job))
    return sorted(set(folded_steps(state)) - current)


_CALL_LINE = re.compile(r"^\d\d:\d\d:\d\d call of up to ([\d.]+) min on .*, (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC), commit")
_STEP_LINE = re.compile(r"^\d\d:\d\d:\d\d step (\d+) of (\S+) (started|\(\d+ steps\) done)")
_FAILED_LINE = re.compile(r"^\d\d:\d\d:\d\d job (\S+) failed \(")


def stopped_steps(log: str) -> list[dict[str, Any]]:
    """The steps a device call's log shows started but neither done nor failed: the call was
    stopped (killed at its time limit) while they ran. Each: ``job``, ``index``, ``seconds``
    (from the step's start to the log's last line: a lower bound on the step's time),
    ``date`` and ``call_minutes`` (of the call, from its first line)."""
    lines = [line for line in log.splitlines() if re.match(r"^\d\d:\d\d:\d\d ", line)]
    call = next((m for m in map(_CALL_LINE.match, lines) if m), None)

    def clock(line: str) -> int:  # seconds since midnight (UTC)
        h, m, sec = line[:8].split(":")
        return int(h) * 3600 + int(m) * 60 + int(sec)

    started: dict[tuple[str, int], int] = {}
    for line in lines:
        if (m := _STEP_LINE.match(line)):
            key = (m.group(2), int(m.group(1)))
            if m.group(3) == "started":
                started[key] = clock(line)
            else:
                started.pop(key, None)
        elif (m := _FAILED_LINE.match(line)):
            started = {k: v for k, v in started.items() if k[0] != m.group(1)}
    return [{"job": job, "index": index, "seconds": (clock(lines[-1]) - t) % 86400,
             "date": call.group(2) if call else None, "call_minutes": float(call.group(1)) if call else None}
            for (job, index), t in started.items()]


def stopped_record(state: Path, job: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """The stopped steps of a job's current version (:func:`stopped_steps`, recorded by
    :func:`fold` as ``gpu/<job>/stopped-NNNN.json``): index -> the longest record."""
    out: dict[int, dict[str, Any]] = {}
    for path in sorted(Path(state).glob("stopped-*.json")):
        rec = json.loads(path.read_text())
        if rec.get("job_hash") == job_hash(job):
            out[int(rec["index"])] = rec
    return out


def _record_stopped(log_path: Path, queue_path: Path) -> int:
    """Record the steps a call's log shows stopped (:func:`stopped_steps`) in their jobs'
    folders, keeping the longest; returns how many records are new or longer."""
    jobs = {j["name"]: j for j in load_queue(queue_path)["jobs"]}
    count = 0
    for rec in stopped_steps(Path(log_path).read_text()):
        job = jobs.get(rec["job"])
        if job is None:
            continue
        path = Path(queue_path).parent / job["name"] / f"stopped-{rec['index']:04d}.json"
        old = json.loads(path.read_text()) if path.exists() else None
        if old is None or old.get("job_hash") != job_hash(job) or old["seconds"] < rec["seconds"]:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(path, {**rec, "job_hash": job_hash(job)})
            count += 1
    return count


def load_step(state: Path, index: int) -> dict[str, Any]:
    """A folded step's arrays, checked against the SHA-256 in its metadata.

    Raises:
        ValueError: if the arrays file is missing or does not match its checksum.
    """
    meta = json.loads((Path(state) / f"step-{index:04d}.json").read_text())
    path = Path(state) / f"step-{index:04d}.npz"
    if not path.exists() or sha256_hex(path.read_bytes()) != meta["sha256"]:
        raise ValueError(f"{path} is missing or does not match the SHA-256 in its .json; restore it from git")
    with np.load(path) as z:
        return unflatten_dict({k: z[k] for k in z.files})


def install_steps(job: Mapping[str, Any], state: Path, directory: Path | None = None, blocks=None) -> int:
    """Put a ``blocks`` job's folded steps (of its current version, :func:`folded_steps`, each
    checked to be the block the job expects at its index) into the artifact cache, where its
    experiment (:func:`~symlib.experiments.registry.run_blocks`) finds them instead of training them, and
    where a later step of the same job that goes on from an earlier one (a piece of SGHMC's
    chain) finds it.

    Args:
        job: the job.
        state: its folder of folded steps.
        directory: the cache folder (default: the cache's).
        blocks: the job's steps (:func:`job_blocks`), when the caller has them already.

    Returns:
        How many steps were installed.

    Raises:
        ValueError: for a step labelled with another block than the job's blocks have at its
            index, or whose arrays do not match their checksum (:func:`load_step`).
    """
    from symlib.experiments.cache import save_step

    if job["kind"] != "blocks":
        return 0
    steps = folded_steps(state, job)
    if not steps:
        return 0
    blocks = job_blocks(job) if blocks is None else blocks
    for index, meta in steps.items():
        expected = blocks.starts[index] if 0 <= index < len(blocks.starts) else None
        if json.loads(json.dumps(meta.get("label"))) != json.loads(json.dumps(expected)):
            raise ValueError(f"{Path(state) / f'step-{index:04d}.json'} holds block {meta.get('label')!r}, but "
                             f"job {job['name']!r} expects block {expected!r} at step {index}: its blocks changed "
                             "under the same definition; give the job a new version in the queue file (its steps "
                             "are then run again), or restore the code its steps were made with")
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
    folded = folded_steps(queue_path.parent / name, jobs[name])
    if not folded:
        raise ValueError(f"job {name!r} has no folded step (of its current version) in {queue_path.parent / name}")
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



def reduction_provenance(record: Mapping[str, Any], job: str, used: str, block: int,
                         queue_path: Path | None = None) -> dict[str, Any]:
    """:func:`folded_provenance` of the steps of ``job`` that a saved labelled reduction read:
    its command's ``<used>=`` networks (e.g. ``--set bank_used=1024``) in blocks of ``block``,
    one step each, the job's first steps.

    Args:
        record: the saved run (:func:`symlib.experiments.judging.results.load`).
        job: the queue's job whose steps it folded.
        used: the setting that names how many networks it read.
        block: networks per step.
        queue_path: the queue file (default: the repository's ``gpu/queue.json``).

    Raises:
        ValueError: if the command does not set ``used``, and as :func:`folded_provenance`.
    """
    from symlib.experiments.judging.results import command_setting, repository_root

    steps = int(command_setting(record["command"], used)) // int(block)
    return folded_provenance(Path(queue_path) if queue_path is not None else repository_root() / "gpu" / "queue.json",
                             job, steps)


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


def carried_piece(root: Path, state: str) -> Path:
    """Where the carry holds the detached state of the pieced run ``state`` (``root``: the queue's folder)."""
    return Path(root).parent / CARRY / PIECES / state


def read_return(directory: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and the files of what a device call returned, every part checked. Only the
    parts the manifest lists are read, each up to its ``bytes``: what a call killed while it
    added a step wrote beyond them (:class:`~symlib.experiments.gpu_device.Bundle`) is ignored.

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
        with open(path, "rb") as f:
            data = f.read(int(part["bytes"]))
        if sha256_hex(data) != part["sha256"]:
            raise ValueError(f"part {part['name']} does not match its SHA-256 in the manifest (damaged in transfer?); "
                             f"nothing was folded")
        blob += data
    if sha256_hex(blob) != manifest["sha256"]:
        raise ValueError(f"the joined parts in {directory} do not match the manifest's SHA-256; nothing was folded")
    files = {}
    with tarfile.open(fileobj=io.BytesIO(blob + b"\0" * 1024), mode="r") as tar:  # the tar's end, which a Bundle omits
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
    already folded with the same files (its ``.json`` and every file it lists present, with the
    same SHA-256 sums) is skipped; one folded for an older version of the job is replaced.
    Every job's return is checked before any is folded.

    The call's log (``gpu-log.txt``), if there, is read first: a step it shows started but not
    finished (the call was stopped at its time limit) is recorded with its lower bound on the
    step's time (:func:`stopped_steps`), and later calls skip the job while that bound does not
    fit their minutes (:mod:`symlib.experiments.gpu_device`), instead of stopping again there.

    Returns:
        Counts: ``new`` (steps added), ``already`` (steps already there), ``results`` (records
        copied) and ``stopped`` (stopped steps recorded, new or longer).

    Raises:
        ValueError: for a damaged return, a return made for another version of the job, or
            a step (or piece) already folded with other contents (naming the files to move
            away); for a folder that holds no return and whose log shows no stopped step.
    """
    log = Path(directory) / "gpu-log.txt"
    shown = stopped_steps(log.read_text()) if log.exists() else []
    counts = {"new": 0, "already": 0, "results": 0, "stopped": _record_stopped(log, queue_path) if shown else 0}
    if shown and not (Path(directory) / "manifest.json").exists() and not any(Path(directory).glob("*/manifest.json")):
        update_progress(queue_path)
        return counts
    bundles = returned_bundles(directory)
    for bundle in bundles:
        read_return(bundle)
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
            if fname not in files or sha256_hex(files[fname]) != sha:
                raise ValueError(f"{fname} of {name} is missing or does not match its SHA-256; nothing was folded")
    plans = {name: _fold_plan(state, job, name, meta, results_dir) for name, meta in metas.items()}
    counts = {"new": 0, "already": 0, "results": 0}
    for name, meta in sorted(metas.items()):
        if plans[name] == "already":
            counts["already"] += 1
            continue
        if job["kind"] == "pieces":
            meta = _attach_piece(queue_path, job, meta, files)
            atomic_write(state / name, lambda f, m=meta: f.write((json.dumps(m, indent=1) + "\n").encode()))
            counts["new"] += 1
            continue
        for fname in meta["files"]:
            target = _step_target(state, results_dir, fname)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, lambda f, b=files[fname]: f.write(b))
            counts["results"] += fname.startswith("result-")
        atomic_write(state / name, lambda f, b=files[name]: f.write(b))
        counts["new"] += 1
    update_progress(queue_path)
    return counts


def _step_target(state: Path, results_dir: Path, fname: str) -> Path:
    """Where :func:`fold` puts a returned step's file ``fname``: a saved result in
    ``results_dir``, else the job's folder."""
    return (results_dir / fname[len("result-"):]) if fname.startswith("result-") else state / fname


def _fold_plan(state: Path, job: Mapping[str, Any], name: str, meta: Mapping[str, Any], results_dir: Path) -> str:
    """How :func:`fold` takes the returned step ``name`` (its metadata ``meta``): ``"already"``
    when the job's folder holds it, its ``.json`` for the job's current version listing the same
    files, each present with its SHA-256 (a piece: the same files and piece record); else
    ``"new"``: not folded yet, folded for an older version of the job (replaced), or folded
    with a file missing since (written again).

    Raises:
        ValueError: naming the files to move away, for a step (or piece) folded with other
            contents than the return's, or a file in the way that belongs to no folded step.
    """
    folded_path = state / name
    folded = json.loads(folded_path.read_text()) if folded_path.exists() else None
    index, what = int(meta["index"]), f"step {int(meta['index'])} of job {job['name']!r}"
    if job["kind"] == "pieces":  # its files are attached to the run, not kept in the job's folder
        if folded is None:
            return "new"

        def record(m):
            return {k: v for k, v in (m.get("piece") or {}).items() if k != "state_sha256"}

        if folded.get("files") == meta["files"] and record(folded) == record(meta):
            return "already"
        raise ValueError(f"piece {index} of job {job['name']!r} is folded already ({folded_path}) with other contents "
                         "than this return's (another call advanced the run from the same state?): a run takes one "
                         "piece at each index, and this return cannot be attached; discard it. Nothing was folded")
    older = {}
    if folded is not None and folded.get("job_hash") != job_hash(job):  # an older version's step: replaced
        older, folded = dict(folded.get("files") or {}), None
    if folded is not None and folded.get("files") != meta["files"]:
        listed = folded.get("files") or {}
        data = [str(_step_target(state, results_dir, f)) for f in sorted(set(listed) | set(meta["files"]))
                if listed.get(f) != meta["files"].get(f)]
        raise ValueError(f"{what} is folded already with other contents than this return's (computed twice?): to fold "
                         f"this return's instead, move away both {folded_path} and {' and '.join(data)}, then fold "
                         "again (to keep the folded one, discard this return). Nothing was folded")
    missing = False
    for fname, sha in meta["files"].items():
        target = _step_target(state, results_dir, fname)
        if not target.exists():
            missing = True
            continue
        have = sha256_hex(target.read_bytes())
        if have == sha or older.get(fname) == have:
            continue
        if folded is not None:
            raise ValueError(f"{target} does not match the SHA-256 that {folded_path} lists for it (changed since "
                             f"{what} was folded?): restore it from git, or move away both {folded_path} and {target} "
                             "to fold this return's. Nothing was folded")
        raise ValueError(f"{target} exists with other contents than {what} of this return (computed twice?) and "
                         f"belongs to no folded step ({folded_path} is not there or does not list it): move {target} "
                         "away to fold this return. Nothing was folded")
    return "new" if folded is None or missing else "already"


def pieces_state(queue_path: Path, state: str) -> Path:
    """Where the pieced run ``state`` of a queue lives here (ignored by git)."""
    return Path(queue_path).parent / PIECES / state


def _attach_piece(queue_path: Path, job: Mapping[str, Any], meta: dict[str, Any],
                  files: Mapping[str, bytes]) -> dict[str, Any]:
    """Attach a returned piece to its run here, refresh the carry's detached state, and return
    the step's metadata with the run's arrays checksum after the piece (``piece.state_sha256``:
    the next piece must start from it)."""
    import tempfile

    from symlib.experiments.xiao.hmc_pieces import attach, load_state

    index = int(meta["index"])
    run_dir = pieces_state(queue_path, job["state"])
    with tempfile.TemporaryDirectory() as tmp:
        piece = Path(tmp)
        state_json = files[f"piece-{index:04d}.state.json"]
        (piece / "state.json").write_bytes(state_json)
        (piece / json.loads(state_json)["state_file"]).write_bytes(files[f"piece-{index:04d}.npz"])
        attach(run_dir, piece)
    after = load_state(run_dir)[0]
    meta = {**meta, "piece": {**meta["piece"], "state_sha256": after["sha256"]}}
    carry = Path(queue_path).resolve().parent.parent / CARRY
    if carry.is_dir():
        detach_to_carry(queue_path, job["state"])
    return meta


def detach_to_carry(queue_path: Path, state: str) -> Path | None:
    """Put the detached state of the pieced run ``state`` into the carry (or remove the carry's
    copy if the run has not started here). Returns the carry's folder, or None.

    Raises:
        ValueError: if the queue has folded pieces of the run but its state is missing here.
    """
    from symlib.experiments.xiao.hmc_pieces import detach

    queue_path = Path(queue_path).resolve()
    run_dir = pieces_state(queue_path, state)
    target = carried_piece(queue_path.parent, state)
    folded = pieces_progress(load_queue(queue_path), queue_path.parent, state)
    if not (run_dir / "state.json").exists():
        if folded is not None:
            raise ValueError(f"the queue has folded pieces of run {state!r} (up to iteration {folded['iteration']}) but "
                             f"its state {run_dir} is missing here: restore it, or start the run over (delete the "
                             f"step-*.json of its jobs)")
        shutil.rmtree(target, ignore_errors=True)
        return None
    return detach(run_dir, target)


def update_progress(queue_path: Path) -> dict[str, Any]:
    """Recompute every job's ``progress`` from its folder and write the queue file."""
    queue = load_queue(queue_path)
    for job in queue["jobs"]:
        steps = folded_steps(Path(queue_path).parent / job["name"], job)
        secs = [float(m["seconds"]) for m in steps.values()]
        job["progress"] = {"steps_done": len(steps), "gpu_seconds": round(sum(secs), 1),
                           "seconds_per_step": round(float(np.median(secs)), 1) if secs else None,
                           "devices": sorted({m["device"] for m in steps.values()})}
        older = older_steps(Path(queue_path).parent / job["name"], job)
        if older:
            job["progress"]["older_steps"] = older
        stopped = stopped_record(Path(queue_path).parent / job["name"], job)
        if stopped:
            job["progress"]["stopped"] = {str(i): {k: r[k] for k in ("seconds", "date", "call_minutes")}
                                          for i, r in stopped.items() if i not in steps}
        if job["kind"] == "pieces" and steps:
            last = max((m["piece"] for m in steps.values()), key=lambda p: p["iteration"])
            job["progress"].update({k: last[k] for k in ("iteration", "num_kept", "until_iteration",
                                                          "seconds_per_iteration")})
    write_json(queue_path, queue)
    return queue


def _check_step_minutes(path: Path, job: Mapping[str, Any]) -> None:
    """A job's optional ``step_minutes``: one positive estimate per step, adding up to its estimate."""
    if "step_minutes" not in job:
        return
    per = job["step_minutes"]
    if not (isinstance(per, list) and len(per) == int(job["steps"])
            and all(isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0 for m in per)):
        raise ValueError(f"{path}: job {job['name']!r}: step_minutes must be one positive number per step "
                         f"({job['steps']}), got {per!r}")
    if abs(sum(per) - estimate_minutes(job)) > 1e-6:
        raise ValueError(f"{path}: job {job['name']!r}: its step_minutes add up to {sum(per):g}, not its estimate "
                         f"{estimate_minutes(job):g}")


def step_seconds(job: Mapping[str, Any], index: int) -> float | None:
    """The seconds step ``index`` of a job is expected to take from its ``step_minutes`` (for
    steps of unequal cost, e.g. one SGHMC chain beside batched fits), or None without them."""
    per = job.get("step_minutes")
    return None if per is None else 60.0 * float(per[index])


def estimate_minutes(job: Mapping[str, Any]) -> float:
    """A job's estimated minutes on the machine it runs on: ``estimate_gpu_minutes`` (one
    H100) for a device job, ``estimate_minutes_here`` (this 2-core machine) for one that runs here."""
    return float(job["estimate_minutes_here" if job.get("where") == "here" else "estimate_gpu_minutes"])


def minutes_left(job: Mapping[str, Any]) -> float:
    """GPU-minutes a job still needs: its remaining steps at the measured rate, else its estimate."""
    prog = job.get("progress") or {}
    if job["kind"] == "pieces" and prog.get("seconds_per_iteration"):
        return max(prog["until_iteration"] - prog["iteration"], 0) * prog["seconds_per_iteration"] / 60.0
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
        run = ""
        if job["kind"] == "pieces" and "num_kept" in prog:
            run = (f" [run {job['state']!r} at iteration {prog['iteration']}, {prog['num_kept']} kept samples per chain; "
                   f"this job ends at iteration {prog['until_iteration']}]")
        if prog.get("older_steps"):
            run += (f" [{len(prog['older_steps'])} folded step(s) of an older version ignored: this version's steps "
                    "replace them as they are folded]")
        for index, rec in (prog.get("stopped") or {}).items():
            run += f" [step {index} stopped with its call after at least {rec['seconds']} s on {rec['date']}]"
        lines.append(f"{job['name']:24s} {job['kind']:11s} {prog.get('steps_done', 0):>3}/{job['steps']:<3} steps  "
                     f"{prog.get('gpu_seconds', 0) / 60:6.1f} {unit} spent  {minutes_left(job):6.1f} left  "
                     f"{job['title']}{run}")
    device = [j for j in queue["jobs"] if j.get("where", "device") == "device"]
    lines.append(f"left in all: about {sum(minutes_left(j) for j in device):.0f} GPU-minutes "
                 f"(estimates where no step has run yet), and about "
                 f"{sum(minutes_left(j) for j in queue['jobs'] if j not in device):.0f} minutes here")
    return lines


def prepare(root: Path, data_dir: Path | None, wheels: bool = True, datasets: tuple[str, ...] = DATASETS,
            queue_path: Path | None = None) -> Path:
    """Fill ``<root>/.gpu-carry``: the files of ``datasets`` (the working tree and the carry
    travel within 64 MiB: Fashion-MNIST alone is 30 MB, so carry only what the job needs), the wheels the device
    lacks (:data:`DEVICE_WHEELS`, for its Python 3.12; needs the package registry), the
    detached state of every pieced run of the queue ``queue_path`` (default
    ``<root>/gpu/queue.json``; :func:`detach_to_carry`) and the commit now checked out.

    Returns:
        The carry folder.

    Raises:
        ValueError: if ``data_dir`` lacks a dataset, the carry folder is not ignored by git,
            a pieced run's state is missing here, or what would travel exceeds
            :data:`TRAVEL_BYTES` (:func:`travelling`).
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
    write_json(saved, {**prov, "symlib_version": code_version()})
    queue_path = Path(queue_path) if queue_path is not None else root / "gpu" / "queue.json"
    if queue_path.exists():
        for state in sorted({j["state"] for j in load_queue(queue_path)["jobs"] if j["kind"] == "pieces"}):
            detach_to_carry(queue_path, state)
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
