"""run_hmc across two CPU processes on JAX's distributed runtime (gloo collectives, 127.0.0.1).

Two processes each hold half of a 200-example data set (``make_logdensity(...,
process_local=True)``) and sample a small MLP's posterior together; the samples must
equal a single-process run's to float tolerance. The run is stored in a shared
``out_dir`` that only process 0 writes; a run interrupted after two chunks and resumed
by two fresh processes must give exactly the uninterrupted run. A bank of networks
trained with ``fit_ensemble`` over the two processes equals the one trained in one, and so
does an MMD kernel bank computed by both processes (``processes=True``).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _multiprocess_hmc_worker import bank, mmd_samples, problem  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "_multiprocess_hmc_worker.py"
TIMEOUT_S = 180  # a guard against a hung launch; on 2 idle cores a launch takes about 10 s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(results: Path, mode: str, num_processes: int = 2) -> None:
    """Start the worker in ``num_processes`` processes and wait for all of them; on failure
    or timeout, fail with every process's exit code and stderr. The launches share a
    persistent compilation cache, so the second one loads the first one's programs."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS" and not k.startswith(("SLURM_", "OMPI_"))}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
               JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", JAX_NUM_PROCESSES=str(num_processes),
               JAX_COMPILATION_CACHE_DIR=str(results / "jax-cache"), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(results), mode], cwd=REPO,
                              env={**env, "JAX_PROCESS_ID": str(i)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(num_processes)]
    deadline, outputs, timed_out = time.monotonic() + TIMEOUT_S, [], False
    for p in procs:
        try:
            outputs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            timed_out = True
            for q in procs:
                q.kill()
            outputs.append(p.communicate())
    outputs += [q.communicate() for q in procs[len(outputs):]]
    if timed_out or any(p.returncode != 0 for p in procs):
        report = "\n".join(f"--- process {i}: exit code {p.returncode}\n{err[-4000:]}"
                           for i, (p, (_, err)) in enumerate(zip(procs, outputs)))
        pytest.fail(f"{mode!r} run of {num_processes} processes "
                    f"{'timed out after ' + str(TIMEOUT_S) + ' s' if timed_out else 'failed'}:\n{report}")


def _load(path: Path) -> dict:
    with np.load(path) as z:
        return dict(z)


def _reference():
    """The same run in this process (one process, all 200 examples), without out_dir."""
    import jax

    from symlib.core.models import mlp_apply
    from symlib.inference.hmc import make_logdensity, run_hmc

    x, y, params, cfg, key, _ = problem()
    ld = make_logdensity(x, y, apply_fn=mlp_apply)
    res = run_hmc(key, params, ld, cfg)
    return {f"leaf_{i}": np.asarray(a) for i, a in enumerate(jax.tree_util.tree_leaves(res.samples))}, res, ld


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_two_processes_equal_one_and_resume(tmp_path):
    _launch(tmp_path, "first")
    full = [_load(tmp_path / f"full_p{i}.npz") for i in range(2)]
    ref_leaves, ref, ref_ld = _reference()

    # each process held its own 100 rows; process 0 was the writer
    assert [r["rows"].tolist() for r in full] == [[0, 100], [100, 200]]
    assert [bool(r["writer"]) for r in full] == [True, False]
    # the density over the split data is the single-process one
    for r in full:
        np.testing.assert_allclose(r["logdensity_local"], r["logdensity_full"], rtol=1e-6)
        assert str(r["fingerprint_full"]) == ref_ld.fingerprint
    # both processes read the same stored run; its samples equal the single-process chain
    for k in ref_leaves:
        np.testing.assert_array_equal(full[0][k], full[1][k])
        np.testing.assert_allclose(full[0][k], ref_leaves[k], rtol=1e-4, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(full[0]["stat_acceptance_rate"], ref.stats["acceptance_rate"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(full[0]["step_size"], ref.step_size, rtol=1e-4)
    assert 0.3 < ref.mean_acceptance < 1.0

    # the interrupted run stopped after two chunks (burn-in and the first samples)
    import json

    meta = json.loads((tmp_path / "cut" / "state.json").read_text())
    assert meta["num_sample_chunks"] == 1 and not meta["complete"]
    _launch(tmp_path, "resume")
    cut = [_load(tmp_path / f"cut_p{i}.npz") for i in range(2)]
    for k, v in full[0].items():
        if k.startswith(("leaf_", "stat_")) or k == "step_size":
            for c in cut:
                np.testing.assert_array_equal(c[k], v, err_msg=k)
    assert json.loads((tmp_path / "cut" / "state.json").read_text())["complete"]

    # fit_ensemble split over the two processes: every process got the whole bank, the one-process bank
    x, y = problem()[:2]
    ref_params, ref_losses = bank(x, y)
    for c in cut:
        np.testing.assert_allclose(c["bank_params"], ref_params, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c["bank_losses"], ref_losses, rtol=1e-5, atol=1e-6)

    # the MMD bank's blocks split over the two processes: the one-process values
    from symlib.evaluation.mmd import mmd_kernel_bank

    ref_mmd = mmd_kernel_bank(*mmd_samples(), chunk_size=16).values
    for c in cut:
        for k, v in ref_mmd.items():
            np.testing.assert_allclose(c[f"mmd_{k}"], v, rtol=1e-10, atol=1e-14, err_msg=k)


def test_initialize_from_env_reads_the_launch():
    """No launch variables (or a one-task SLURM step): a single process, nothing started;
    only some of the JAX_* variables: an error naming the missing ones; every process's
    block of rows from process_rows."""
    import jax

    from symlib.core import distributed

    info = distributed.initialize_from_env({})
    assert info.how == "single" and info.process_count == 1 and distributed.is_writer()
    slurm = {"SLURM_JOB_ID": "7", "SLURM_STEP_NODELIST": "n1", "SLURM_NTASKS": "1", "SLURM_PROCID": "0",
             "SLURM_LOCALID": "0"}
    assert distributed.initialize_from_env(slurm).how == "single"
    with pytest.raises(ValueError, match="JAX_NUM_PROCESSES, JAX_PROCESS_ID not"):
        distributed.initialize_from_env({"JAX_COORDINATOR_ADDRESS": "127.0.0.1:1"})
    with pytest.raises(ValueError, match="JAX_NUM_PROCESSES must be an integer"):
        distributed.initialize_from_env({"JAX_COORDINATOR_ADDRESS": "127.0.0.1:1", "JAX_NUM_PROCESSES": "two",
                                         "JAX_PROCESS_ID": "0"})
    assert not jax.distributed.is_initialized()
    assert [distributed.process_rows(10, p, 3) for p in range(3)] == [slice(0, 4), slice(4, 7), slice(7, 10)]
    assert distributed.process_rows(10) == slice(0, 10)
    np.testing.assert_array_equal(distributed.allgather(np.float64(np.pi)), [np.pi])
