"""Scaling runs of the benchmarks: the same worker in 1 and in P processes, one CPU core each.

A benchmark script calls :func:`scaling` with its own command line for a worker; this
module starts the worker once alone and once as P processes on JAX's distributed runtime
(``JAX_COORDINATOR_ADDRESS=127.0.0.1:<free port>``, ``JAX_NUM_PROCESSES``,
``JAX_PROCESS_ID``, read by :func:`symlib.core.distributed.initialize_from_env`). Every
process is pinned to one core (``taskset -c i``, where available) and runs XLA's CPU
backend single-threaded (``--xla_cpu_multi_thread_eigen=false``), so P processes have P
cores. Process 0 of each run prints one line ``RESULT <json>`` with at least
``throughput``; the script prints both throughputs, the speed-up and the efficiency
(speed-up / P).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(argv: list[str], num_processes: int, timeout: float) -> dict:
    """Run ``python argv`` in ``num_processes`` processes (one core each); returns process 0's
    ``RESULT`` (a dict), or exits with every process's stderr if one fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COORDINATOR", "JAX_NUM_PROC", "JAX_PROCESS"))}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=ONE_THREAD, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    if num_processes > 1:
        env.update(JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{_free_port()}", JAX_NUM_PROCESSES=str(num_processes))
    taskset, cores = shutil.which("taskset"), os.cpu_count() or 1
    procs = []
    for i in range(num_processes):
        pin = [taskset, "-c", str(i % cores)] if taskset else []
        rank = {"JAX_PROCESS_ID": str(i)} if num_processes > 1 else {}
        procs.append(subprocess.Popen([*pin, sys.executable, *argv], cwd=REPO, env={**env, **rank},
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    deadline, outs = time.monotonic() + timeout, []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic())))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        outs += [p.communicate() for p in procs[len(outs):]]
    if any(p.returncode != 0 for p in procs):
        for i, (p, (_, err)) in enumerate(zip(procs, outs)):
            print(f"--- process {i} of {num_processes}: exit code {p.returncode}\n{err[-3000:]}", file=sys.stderr)
        raise SystemExit(f"the {num_processes}-process run failed")
    line = next(s for s in outs[0][0].splitlines() if s.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def scaling(argv: list[str], num_processes: int, unit: str, timeout: float = 600) -> tuple[dict, dict]:
    """Run the worker ``argv`` in 1 and in ``num_processes`` processes and print the
    throughputs (in ``unit``), the speed-up and the efficiency. Returns both results."""
    pinned = "pinned with taskset" if shutil.which("taskset") else "not pinned: taskset not found"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"scaling: 1 and {num_processes} processes, one CPU core each ({pinned}; XLA_FLAGS={ONE_THREAD}); "
          f"{os.cpu_count()} CPUs, load average {load:.2f} at start")
    one = launch(argv, 1, timeout)
    many = launch(argv, num_processes, timeout)
    speedup = many["throughput"] / one["throughput"]
    print(f"  1 process : {one['throughput']:10.2f} {unit}   {one.get('detail', '')}")
    print(f"  {num_processes} processes: {many['throughput']:10.2f} {unit}   {many.get('detail', '')}")
    print(f"  speed-up {speedup:.2f}x, efficiency {speedup / num_processes:.2f} (speed-up / {num_processes})")
    return one, many
