"""Throughput of ``symlib.inference.hmc.run_hmc`` against a bare gradient loop (one process).

For a 784-512-10 MLP (407,050 parameters) on N random MNIST-shaped examples, it times

* **sampler**: ``run_hmc`` (BlackJAX HMC, identity mass matrix, ``--leapfrog`` steps per
  iteration, ``--iterations`` iterations kept with ``thin=1``, no burn-in), i.e.
  ``iterations x leapfrog`` gradient evaluations of the full-batch log posterior;
* **baseline**: a jitted ``fori_loop`` of ``jax.value_and_grad(logdensity)`` (plus a tiny
  parameter update so that nothing is optimised away), called once per iteration with
  ``leapfrog`` gradient evaluations, plus one call with a single evaluation standing for
  the sampler's initial ``value_and_grad``: the same number of gradients in total.

Both use the same ``make_logdensity`` (sharded over all local devices) and are compiled
before timing; the compared runs are interleaved and the best of ``--repeats`` is kept.
Printed per N: leapfrog steps per second, the ratio sampler/baseline (throughput; 1 means
the sampler adds nothing to the gradient cost), achieved FLOP/s (counting
6 x N x num_params per gradient) and, with ``--peak-tflops``, the fraction of that peak.

    .venv/bin/python benchmarks/hmc_throughput.py                  # N = 1,000 and 10,000 (a couple of minutes on 2 cores)
    .venv/bin/python benchmarks/hmc_throughput.py --full           # adds N = 60,000
    .venv/bin/python benchmarks/hmc_throughput.py --n 60000 --peak-tflops 67 --json out.json

**Scaling over processes** (``--processes P``): ``run_hmc`` alone, once in 1 process and
once in P processes on JAX's distributed runtime (127.0.0.1), every process pinned to one
CPU core and single-threaded (``benchmarks/_multiprocess.py``); in the P-process run each
process holds N / P examples (``make_logdensity(..., process_local=True)``). Printed: the
gradient evaluations per second of both, the speed-up and the efficiency (speed-up / P).

    .venv/bin/python benchmarks/hmc_throughput.py --processes 2            # N = 2,000
    .venv/bin/python benchmarks/hmc_throughput.py --processes 2 --n 10000
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import warnings
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

if "--scaling-worker" in sys.argv:  # a process of a --processes run: join the others before JAX starts
    from symlib.core.distributed import initialize_from_env

    initialize_from_env()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from symlib.inference.hmc import HMCConfig, HMCWarning, make_logdensity, run_hmc  # noqa: E402
from symlib.core.models import mlp_apply, mlp_init  # noqa: E402

SIZES = [784, 512, 10]


@partial(jax.jit, static_argnames=("num_grads",))
def _gradient_loop(logdensity, params, num_grads):
    """``num_grads`` evaluations of value_and_grad(logdensity), each feeding the next."""
    value_and_grad = jax.value_and_grad(logdensity)

    def body(_, carry):
        p, total = carry
        value, grad = value_and_grad(p)
        return jax.tree.map(lambda a, g: a + 1e-8 * g, p, grad), total + value

    return jax.lax.fori_loop(0, num_grads, body, (params, jnp.zeros((), jnp.float32)))


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_one(n: int, args) -> dict:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], size=n).astype(np.int32)
    logdensity = make_logdensity(x, y, apply_fn=mlp_apply)
    params = mlp_init(jax.random.key(0), SIZES)
    num_params = sum(a.size for a in jax.tree_util.tree_leaves(params))
    cfg = HMCConfig(step_size=args.step_size, num_leapfrog=args.leapfrog, num_burnin=0,
                    num_samples=args.iterations, thin=1, num_chains=args.chains)
    init = logdensity.replicate(params)
    results = {}

    def sampler():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", HMCWarning)
            res = run_hmc(jax.random.key(1), init, logdensity, cfg, progress=False)
        results["acceptance"] = res.mean_acceptance
        results["warnings"] = [str(w.message) for w in caught]

    def baseline():
        for _c in range(args.chains):  # as run_hmc's initial value_and_grad (one per chain)
            jax.block_until_ready(_gradient_loop(logdensity, init, 1))
        for _ in range(args.iterations):
            for _c in range(args.chains):
                out = _gradient_loop(logdensity, init, args.leapfrog)
        jax.block_until_ready(out)

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HMCWarning)
        run_hmc(jax.random.key(1), init, logdensity, HMCConfig(**{**cfg.to_dict(), "num_samples": 1}), progress=False)
    jax.block_until_ready(_gradient_loop(logdensity, init, args.leapfrog))
    jax.block_until_ready(_gradient_loop(logdensity, init, 1))
    compile_s = time.perf_counter() - t0

    t_sampler, t_base = [], []
    for _ in range(args.repeats):  # interleaved
        t_sampler.append(_time(sampler))
        t_base.append(_time(baseline))
    grads = args.iterations * args.leapfrog * args.chains  # leapfrog steps (each one gradient), + 1 initial
    ts, tb = min(t_sampler), min(t_base)
    flop_per_grad = 6.0 * n * num_params
    out = {
        "n": n,
        "num_params": num_params,
        "chains": args.chains,
        "leapfrog": args.leapfrog,
        "iterations": args.iterations,
        "gradient_evaluations": grads + args.chains,
        "compile_and_warmup_s": compile_s,
        "sampler_s": ts,
        "baseline_s": tb,
        "sampler_leapfrog_per_s": grads / ts,
        "baseline_equivalent_steps_per_s": grads / tb,
        "ratio_sampler_over_baseline": tb / ts,
        "sampler_tflops": flop_per_grad * (grads + args.chains) / ts / 1e12,
        "baseline_tflops": flop_per_grad * (grads + args.chains) / tb / 1e12,
        "mean_acceptance": results["acceptance"],
        "hmc_warnings": results["warnings"],
        "all_sampler_s": t_sampler,
        "all_baseline_s": t_base,
    }
    if args.peak_tflops:
        out["sampler_fraction_of_peak"] = out["sampler_tflops"] / args.peak_tflops
        out["baseline_fraction_of_peak"] = out["baseline_tflops"] / args.peak_tflops
    return out


def scaling_worker(args) -> None:
    """One process of a ``--processes`` run: ``run_hmc`` on this process's rows, timed
    (best of ``--repeats`` after a compilation run); process 0 prints ``RESULT <json>``."""
    from symlib.core.distributed import is_writer, process_rows, sync_processes

    n = args.n[0]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], size=n).astype(np.int32)
    rows = process_rows(n)
    logdensity = make_logdensity(x[rows], y[rows], process_local=True, apply_fn=mlp_apply)
    params = mlp_init(jax.random.key(0), SIZES)
    iterations = args.iterations or 5
    cfg = HMCConfig(step_size=args.step_size, num_leapfrog=args.leapfrog, num_burnin=0, num_samples=iterations,
                    thin=1, num_chains=args.chains)
    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HMCWarning)
        for r in range(args.repeats + 1):  # the first run compiles
            sync_processes(f"bench.{r}")
            t = time.perf_counter()
            run_hmc(jax.random.key(1), params, logdensity, cfg, progress=False)
            times.append(time.perf_counter() - t)
    grads = (iterations * args.leapfrog + 1) * args.chains
    best = min(times[1:])
    if is_writer():
        detail = (f"N = {n:,} ({rows.stop - rows.start:,} per process), {grads} gradients in {best:.3f} s "
                  f"(best of {args.repeats}; compile run {times[0]:.1f} s)")
        print("RESULT " + json.dumps({"throughput": grads / best, "seconds": best, "n": n, "gradients": grads,
                                      "processes": jax.process_count(), "detail": detail}))


def _report(r: dict, peak: float | None) -> None:
    print(f"[N = {r['n']:,}]  784-512-10 MLP, {r['num_params']:,} params, {r['chains']} chain(s), "
          f"{r['iterations']} iterations x {r['leapfrog']} leapfrog steps "
          f"+ {r['chains']} initial = {r['gradient_evaluations']} gradients "
          f"(compile + warm-up {r['compile_and_warmup_s']:.1f} s)")
    print(f"  sampler (run_hmc):     {r['sampler_s']:8.3f} s  {r['sampler_leapfrog_per_s']:9.2f} leapfrog steps/s  "
          f"{r['sampler_tflops'] * 1e3:8.1f} GFLOP/s" + (f"  ({100 * r['sampler_fraction_of_peak']:.1f}% of peak)" if peak else ""))
    print(f"  baseline (grad loop):  {r['baseline_s']:8.3f} s  {r['baseline_equivalent_steps_per_s']:9.2f} steps/s (equiv.)   "
          f"{r['baseline_tflops'] * 1e3:8.1f} GFLOP/s" + (f"  ({100 * r['baseline_fraction_of_peak']:.1f}% of peak)" if peak else ""))
    print(f"  ratio sampler/baseline (throughput): {r['ratio_sampler_over_baseline']:.3f}   "
          f"mean acceptance {r['mean_acceptance']:.3f}   runs (s): sampler {np.round(r['all_sampler_s'], 3).tolist()}, "
          f"baseline {np.round(r['all_baseline_s'], 3).tolist()}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=None, help="data set sizes (default 1000 10000)")
    parser.add_argument("--full", action="store_true", help="also N = 60,000 (full MNIST size)")
    parser.add_argument("--leapfrog", type=int, default=10, help="leapfrog steps per iteration (default 10)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="HMC iterations timed per run (default: 10 for N <= 1000, 2 above)")
    parser.add_argument("--chains", type=int, default=1)
    parser.add_argument("--step-size", type=float, default=2e-4)
    parser.add_argument("--repeats", type=int, default=5, help="best of this many interleaved runs (default 5)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="fp32 peak of the device, for the fraction of peak")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--processes", type=int, default=None,
                        help="compare 1 and this many processes, one CPU core each (N default 2,000)")
    parser.add_argument("--scaling-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.scaling_worker:
        return scaling_worker(args)
    if args.processes:
        from _multiprocess import scaling

        n = (args.n or [2000])[0]
        worker = [str(Path(__file__).resolve()), "--scaling-worker", "--n", str(n), "--leapfrog", str(args.leapfrog),
                  "--chains", str(args.chains), "--step-size", str(args.step_size),
                  "--repeats", str(args.repeats), "--iterations", str(args.iterations or 5)]
        print(f"run_hmc, 784-512-10 MLP, N = {n:,}, {args.leapfrog} leapfrog steps x {args.iterations or 5} iterations "
              f"x {args.chains} chain(s)")
        scaling(worker, args.processes, "gradient evaluations/s")
        return None
    sizes = args.n or [1000, 10000]
    if args.full and 60000 not in sizes:
        sizes.append(60000)

    dev = jax.devices()[0]
    device_name = f"{dev.platform}: {dev.device_kind}"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"symlib.inference.hmc throughput; jax {jax.__version__}, {len(jax.devices())} x {device_name}, "
          f"{os.cpu_count()} CPUs, load average {load:.2f} at start")
    if dev.platform == "gpu":
        print(f"GPU: {dev.device_kind}" + (f", fp32 peak {args.peak_tflops} TFLOP/s (given)" if args.peak_tflops else ""))
    results = []
    for n in sizes:
        iterations = args.iterations or (10 if n <= 1000 else 2)
        r = bench_one(n, argparse.Namespace(**{**vars(args), "iterations": iterations}))
        _report(r, args.peak_tflops)
        results.append(r)
    if args.json:
        payload = {
            "device": device_name,
            "num_devices": len(jax.devices()),
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "python": platform.python_version(),
            "jax": jax.__version__,
            "peak_tflops": args.peak_tflops,
            "results": results,
        }
        args.json.write_text(json.dumps(payload, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
