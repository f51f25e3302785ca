"""What a device call runs: ``python -m symlib gpu next`` (:func:`next_steps`), each kind's steps
(:mod:`symlib.experiments.gpu_queue` describes the queue, its kinds and the commands), and what
comes back: a :class:`Bundle` per job, cut into parts under the limits of a call's return.

This side only reads the queue and the carry; folding, installing, preparing and the status are
:mod:`~symlib.experiments.gpu_queue`'s, on this machine.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from symlib.core.pytree import flatten_dict
from symlib.experiments.gpu_queue import (QUEUE_VERSION, carried_piece, estimate_minutes, folded_steps, install_steps,
                                          job_blocks, job_done, job_hash, job_profile, job_target, load_queue,
                                          pieces_progress, sha256_hex, step_seconds, stopped_record, write_json)

#: the largest file a device call may return is 16 MiB: parts are cut below it
PART_BYTES = 15 * 2**20
#: a device call returns at most 8 files: the log, and a manifest and parts per job
MAX_FILES = 8
#: and at most 64 MiB in all
RETURN_BYTES = 64 * 2**20
#: parts of one job's return at most
MAX_PARTS = MAX_FILES - 2
#: margin on a step's expected seconds before starting it within the minutes given
MARGIN = 1.25


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
    """What a device call returns for one job (in ``out/<job>/``): its step files as one tar
    stream, cut into at most ``max_parts`` parts under :data:`PART_BYTES`, ``max_bytes`` in
    all, and a ``manifest.json`` with the parts' lengths and SHA-256 sums, rewritten (atomically)
    after every file added, so a call killed later keeps the steps it finished.

    A file is only appended: to the end of the last part (up to :data:`PART_BYTES`), then to
    new parts, and only then is the manifest replaced. The bytes a manifest lists never change,
    so a call killed at any point leaves a return that folds, by the manifest of before the file
    or the one after it (the reader reads each part up to the manifest's ``bytes`` and ignores
    parts it does not list, :func:`~symlib.experiments.gpu_queue.read_return`); and no part is
    ever written under a new name beside an old one, so a return never has more parts than
    its finished self (a call returns :data:`MAX_FILES` files). The stream lacks the tar's
    closing blocks, which the reader adds."""

    def __init__(self, out: Path, job: Mapping[str, Any], max_parts: int = MAX_PARTS,
                 max_bytes: int = RETURN_BYTES - 2**20):
        self.out, self.job, self.max_parts, self.max_bytes = Path(out), job, max_parts, max_bytes
        self.names: list[str] = []
        self.parts: list[dict[str, Any]] = []  # as the manifest lists them
        self._whole, self._last = hashlib.sha256(), hashlib.sha256()  # of the stream, of its last part
        self.num_parts = self.num_bytes = 0
        self.out.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        member = info.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape") + data + bytes(-len(data) % 512)
        total = self.num_bytes + len(member)
        num_parts = -(-total // PART_BYTES)
        if num_parts > self.max_parts or total > self.max_bytes:
            raise RuntimeError(f"the return for job {self.job['name']!r} would need {num_parts} parts of at most "
                               f"{PART_BYTES >> 20} MiB, {total / 2**20:.1f} MiB, where {self.max_parts} parts "
                               f"and {self.max_bytes / 2**20:.1f} MiB are left (a device call returns {MAX_FILES} "
                               f"files, {RETURN_BYTES >> 20} MiB): make its steps smaller")
        parts, whole, last = [dict(p) for p in self.parts], self._whole.copy(), self._last.copy()
        rest = memoryview(member)
        while rest:
            if not parts or parts[-1]["bytes"] >= PART_BYTES:
                parts.append({"name": f"{self.job['name']}.tar.part-{len(parts):02d}", "sha256": None, "bytes": 0})
                last = hashlib.sha256()
            part = parts[-1]
            chunk, rest = rest[:PART_BYTES - part["bytes"]], rest[PART_BYTES - part["bytes"]:]
            path = self.out / part["name"]
            with open(path, "r+b" if part["bytes"] and path.exists() else "wb") as f:
                f.seek(part["bytes"])
                f.truncate()  # what a write that failed here left beyond the manifest's bytes
                f.write(chunk)
            whole.update(chunk)
            last.update(chunk)
            part["bytes"] += len(chunk)
            part["sha256"] = last.hexdigest()
        names = self.names + [name]
        write_json(self.out / "manifest.json", {"queue_version": QUEUE_VERSION, "job": self.job["name"],
                                                 "job_hash": job_hash(self.job), "parts": parts,
                                                 "sha256": whole.hexdigest(), "files": sorted(set(names))})
        self.names, self.parts, self._whole, self._last = names, parts, whole, last
        self.num_parts, self.num_bytes = len(parts), total


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
    in ``skip`` and is not done (:func:`job_done`, with ``done_now``: job -> steps run in this
    call); None when all are done. A pieced run advances by one piece a call: a ``pieces`` job
    whose run had a piece in this call is skipped."""
    skip, done_now = set(skip), done_now or {}
    advanced = {j["state"] for j in queue["jobs"] if j["kind"] == "pieces" and j["name"] in done_now}
    for job in queue["jobs"]:
        if job["kind"] == "planned" or job.get("where", "device") != where or job["name"] in skip:
            continue
        if job["kind"] == "pieces" and job["state"] in advanced:
            continue
        if not job_done(queue, root, job, done_now.get(job["name"], ())):
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
    files_left, bytes_left = MAX_FILES - 1, RETURN_BYTES - 2**20  # the log
    prov = provenance(command, root.parent)
    _log(out, f"call of up to {minutes:g} min on {prov['device']}, {prov['date']}, commit {prov['commit']}")
    failed: dict[str, str] = {}
    while True:
        job = jobs[job_name] if job_name else first_unfinished(queue, root, where, done_now, failed)
        if job is None or (job_name and job["name"] in done_now):
            planned = [j["name"] for j in queue["jobs"] if j["kind"] == "planned" and not job_done(queue, root, j)]
            advanced = {jobs[n]["state"] for n in done_now if jobs[n]["kind"] == "pieces"}
            waiting = [j["name"] for j in queue["jobs"] if j["kind"] == "pieces" and j["state"] in advanced
                       and j["name"] not in done_now and not job_done(queue, root, j)]
            if waiting:  # a pieced run advances by one piece a call
                _log(out, f"stopping: the run advanced in this call goes on in job(s) {', '.join(waiting)} once "
                          "this call is folded")
                break
            _log(out, f"every job of the queue that runs {'here' if here else 'on the device'} is done"
                      + (f"; planned jobs without a runner yet: {', '.join(planned)}" if planned else ""))
            break
        blocked = [need for need in job.get("needs", []) if need in failed]
        if blocked:
            failed[job["name"]] = f"needs job {blocked[0]!r}, which failed"
            _log(out, f"skipping job {job['name']}: {failed[job['name']]}")
            continue
        for need in job.get("needs", []):
            if not job_done(queue, root, jobs[need], done_now.get(need, set())):
                if done_now:  # this call ran out of time or files before the job's inputs were complete
                    _log(out, f"stopping: job {job['name']!r} needs job {need!r}, which is not finished")
                    return _call_result(done_now, failed)
                raise ValueError(f"job {job['name']!r} needs job {need!r}, which is not finished")
            if need not in done_now:
                install_steps(jobs[need], root / need)
        bundle = Bundle(out / job["name"], job, max_parts=files_left - 1, max_bytes=bytes_left)
        try:
            ran, finished = _advance(job, root, bundle, out, started, minutes, prov, queue)
        except Exception as err:  # any failure of one job: the window goes on with the others
            if job_name:
                raise
            failed[job["name"]] = f"{type(err).__name__}: {err}"
            _log(out, f"job {job['name']} failed ({failed[job['name']]}); going on with the next job")
            ran, finished = [], True
        done_now.setdefault(job["name"], set()).update(ran)
        files_left -= 1 + bundle.num_parts if bundle.num_parts else 0
        bytes_left -= bundle.num_bytes
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
             prov: Mapping[str, Any], queue: Mapping[str, Any]) -> tuple[list[int], bool]:
    """One job's missing steps, as many as fit in the time left.

    Returns:
        ``(indices run, whether the job has no step left)``.
    """
    from symlib.experiments.cache import save_step

    if job["kind"] == "pieces":
        return _advance_piece(job, root, bundle, out, started, minutes, prov, queue)
    done = folded_steps(root / job["name"], job)
    todo = [i for i in range(int(job["steps"])) if i not in done]
    expected = (job.get("progress", {}).get("seconds_per_step")
                or 60.0 * estimate_minutes(job) / max(int(job["steps"]), 1))
    _log(out, f"job {job['name']}: {len(done)} of {job['steps']} steps folded; up to {minutes:g} min from the call's "
              f"start on {prov['device']} (commit {prov['commit']}, matmul precision {prov['matmul_precision']})")
    blocks = job_blocks(job) if job["kind"] == "blocks" else None
    if blocks is not None:  # a step that goes on from an earlier one of the job finds it in the cache
        install_steps(job, root / job["name"], blocks=blocks)
    stopped = stopped_record(root / job["name"], job)
    ran = []
    for index in todo:
        if index in stopped and MARGIN * stopped[index]["seconds"] > 60.0 * minutes:  # it would be stopped again
            rec = stopped[index]
            raise ValueError(f"step {index} of {job['name']} was stopped with its call after at least {rec['seconds']} "
                             f"s on {rec['date']}, more than this call's {minutes:g} min allow: split the job's steps (a "
                             "new version) or give it a longer call")
        elapsed = time.time() - started
        expected = max(step_seconds(job, index) or expected, stopped.get(index, {}).get("seconds", 0.0))
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
        elif job["kind"] == "tests":
            files = _run_tests(job, index, root.parent, started + 60.0 * minutes - time.time() - WRITE_MARGIN_S)
        else:
            files = _run_experiments(job, prov["command"])
        seconds = time.perf_counter() - t0
        extra = {} if blocks is None else {"label": blocks.starts[index],
                                           "sha256": sha256_hex(files[f"step-{index:04d}.npz"])}
        _add_step(bundle, job, index, seconds, prov, files, extra)
        ran.append(index)
        expected = max(expected if len(ran) == 1 else 0.0, seconds)
        _log(out, f"step {index} of {job['name']} ({job['steps']} steps) done in {seconds:.1f} s")
    return ran, True


def _add_step(bundle: Bundle, job: Mapping[str, Any], index: int, seconds: float, prov: Mapping[str, Any],
              files: Mapping[str, bytes], extra: Mapping[str, Any]) -> None:
    """Add a finished step to the job's return: its files, then its metadata (``step-NNNN.json``:
    the job, its hash, the step, its seconds, the call's provenance, the date, the files' SHA-256
    sums, and ``extra``)."""
    meta = {"job": job["name"], "job_hash": job_hash(job), "index": index, "seconds": round(seconds, 2), **prov,
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "files": {name: sha256_hex(data) for name, data in files.items()}, **extra}
    for name, data in files.items():
        bundle.add(name, data)
    bundle.add(f"step-{index:04d}.json", (json.dumps(meta, indent=1) + "\n").encode())


#: seconds a step that runs to the end of a call's minutes (a piece, the tests) leaves for writing its return
WRITE_MARGIN_S = 20.0


def _advance_piece(job: Mapping[str, Any], root: Path, bundle: Bundle, out: Path, started: float, minutes: float,
                   prov: Mapping[str, Any], queue: Mapping[str, Any]) -> tuple[list[int], bool]:
    """A ``pieces`` job's next piece, advanced from the carried detached state (none for the
    run's first piece) within the time left, its partial state added to ``bundle``.

    Returns:
        ``(indices run, whether the job has nothing left)``.

    Raises:
        ValueError: if the carry's detached state is missing or is not the state after the
            last folded piece (``gpu prepare`` was not run after the last ``fold``).
    """
    import tempfile

    import jax

    from symlib.experiments.xiao.hmc_pieces import advance, state_nbytes

    if job_done(queue, root, job):
        _log(out, f"job {job['name']}: its run has reached where the job ends; nothing to do")
        return [], True
    index = len(folded_steps(root / job["name"]))
    last = pieces_progress(queue, root, job["state"])
    carried = carried_piece(root, job["state"])
    detached = json.loads((carried / "state.json").read_text()) if (carried / "state.json").exists() else None
    if last is not None and (detached is None or detached["base"]["sha256"] != last["state_sha256"]):
        raise ValueError(f"the carry's detached state of run {job['state']!r} ({carried}) is "
                         f"{'missing' if detached is None else 'not the one after the last folded piece'}: "
                         "run `python -m symlib gpu prepare` here after folding, then call again")
    run = job_target(job)(job_profile(job))
    cfg = run.cfg
    until = job.get("until_kept")
    kept = 0 if last is None else int(last["num_kept"])
    need = state_nbytes(jax.tree_util.tree_map(lambda a: a[0], run.init_params), cfg, len(run.y_test),
                        num_points=run.num_points, methods=run.methods) + 2**20
    if need > min(bundle.max_bytes, bundle.max_parts * PART_BYTES):
        _log(out, f"stopping: a piece of {job['name']} returns up to {need / 2**20:.0f} MiB, "
                  f"{bundle.max_bytes / 2**20:.0f} MiB in {bundle.max_parts} parts are left in this call")
        return [], False
    _log(out, f"job {job['name']}: piece {index} of run {job['state']!r} from iteration "
              f"{0 if last is None else last['iteration']} ({kept} kept samples per chain"
              f"{'' if until is None else f', until {until}'}), up to {minutes:g} min from the call's start on "
              f"{prov['device']} (commit {prov['commit']}, matmul precision {prov['matmul_precision']})")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "state"
        if last is not None:
            shutil.copytree(carried, work)
        t0 = time.perf_counter()
        piece = advance(work, run, budget_seconds=60.0 * minutes - WRITE_MARGIN_S, started=started,
                        num_samples=None if until is None else max(int(until) - kept, 1), command=prov["command"],
                        progress=False)
        seconds = time.perf_counter() - t0
        _log(out, f"piece {index} of {job['name']}: {piece}")
        if piece.piece_iterations == 0:
            return [], False
        meta_bytes = (work / "state.json").read_bytes()
        arrays_name = json.loads(meta_bytes)["state_file"]
        files = {f"piece-{index:04d}.state.json": meta_bytes, f"piece-{index:04d}.npz": (work / arrays_name).read_bytes()}
    until_iteration = cfg.num_iterations if until is None else min(cfg.num_burnin + int(until) * cfg.thin,
                                                                    cfg.num_iterations)
    _add_step(bundle, job, index, seconds, prov, files, {"piece": {
        "state": job["state"], "start_iteration": piece.iteration - piece.piece_iterations, "iteration": piece.iteration,
        "num_kept": piece.num_kept, "num_iterations": piece.num_iterations, "num_samples": piece.num_samples,
        "until_iteration": until_iteration, "complete": piece.complete,
        "seconds_per_iteration": piece.seconds_per_iteration}})
    done = piece.complete or (until is not None and piece.num_kept >= int(until))
    _log(out, f"piece {index} of {job['name']} done in {seconds:.1f} s" + (" (the job is done)" if done else ""))
    return [index], done


#: the end of a ``tests`` job's pytest output that comes back
TESTS_LOG_BYTES = 256 * 1024


def tests_report(junit_xml: bytes | None, returncode: int | None, seconds: float) -> dict[str, Any]:
    """The report of a pytest run from its JUnit XML: ``counts`` (tests, passed, failed,
    errors, skipped), ``failed`` and ``errors`` (test id -> the first 2,000 characters of the
    message and traceback: a collection error is an error of the module), ``returncode`` (None: stopped
    at the time limit, so no XML) and ``seconds``."""
    import xml.etree.ElementTree as ET

    report: dict[str, Any] = {"returncode": returncode, "seconds": round(seconds, 1), "counts": {}, "failed": {},
                              "errors": {}}
    if junit_xml is None:
        return report
    counts = dict.fromkeys(("tests", "passed", "failed", "errors", "skipped"), 0)
    for case in ET.fromstring(junit_xml).iter("testcase"):
        test = "::".join(filter(None, (case.get("classname", "").replace(".", "/"), case.get("name"))))
        counts["tests"] += 1
        for tag, key in (("failure", "failed"), ("error", "errors"), ("skipped", "skipped")):
            found = case.find(tag)
            if found is not None:
                counts[key] += 1
                if key != "skipped":
                    report[key][test] = "\n".join(filter(None, (found.get("message"), found.text)))[:2000]
                break
        else:
            counts["passed"] += 1
    report["counts"] = counts
    return report


def step_test_paths(job: Mapping[str, Any], index: int, repo: Path) -> list[str]:
    """The test paths of step ``index`` of a ``tests`` job: its ``paths`` entry, globs expanded in ``repo``.

    Raises:
        ValueError: if the job's ``steps`` is not the number of its ``paths``, or a pattern matches nothing.
    """
    if len(job["paths"]) != int(job["steps"]):
        raise ValueError(f"job {job['name']!r} declares {job['steps']} steps but has {len(job['paths'])} paths; "
                         "correct the queue file (and its version)")
    out = []
    for pattern in job["paths"][index]:
        found = sorted(str(p.relative_to(repo)) for p in Path(repo).glob(pattern))
        if not found:
            raise ValueError(f"test path {pattern!r} of job {job['name']!r} matches nothing in {repo}")
        out += found
    return out


def _run_tests(job: Mapping[str, Any], index: int, repo: Path, seconds_left: float) -> dict[str, bytes]:
    """Step ``index`` of a ``tests`` job: pytest with the job's ``args`` on its paths
    (:func:`step_test_paths`) in the checkout ``repo``, each worker without JAX's preallocation of
    the GPU's memory, stopped after ``seconds_left``; its report (:func:`tests_report`) and the
    end of its log."""
    import tempfile

    paths = step_test_paths(job, index, repo)
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}  # several workers share one GPU
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", *paths, *job["args"], "-p", "no:cacheprovider", f"--junitxml={junit}",
               "-q", "-rfE", "--continue-on-collection-errors"]  # a module whose package the device lacks
        t0 = time.time()
        try:
            done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, timeout=max(seconds_left, 1.0))
            code, log = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as err:
            code, log = None, (err.stdout or b"") + (err.stderr or b"")
        report = tests_report(junit.read_bytes() if junit.exists() else None, code, time.time() - t0)
    report["command"] = " ".join(["python", "-m", "pytest", *paths, *job["args"]])
    return {f"tests-{index:04d}.json": (json.dumps(report, indent=1) + "\n").encode(),
            f"tests-{index:04d}.log": log[-TESTS_LOG_BYTES:]}


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

