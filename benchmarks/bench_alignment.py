"""Benchmark symlib.symmetry.alignment.wasserstein_alignment against weight matching of the means alone.

Run from the repository root:

    .venv/bin/python benchmarks/bench_alignment.py                           # 784-1024x3-10, ~15 s
    .venv/bin/python benchmarks/bench_alignment.py --widths 128 256 512 1024  # sweep, printed as a table

Two random "VI-like" mean-field posteriors (symlib.testing.reference.random_gaussian_posterior:
He-normal means, N(0, 0.1^2) biases, sigma = softplus(rho) with sigma in [0.01, 0.1]) are
aligned with the W2 cost (weight matching of {mu, sigma} on the composite spec), and the
same pair's means alone with symlib.symmetry.matching.weight_matching, in the same process and
interleaved (the machine may be shared: read the ratio rather than absolute times).
See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from symlib.symmetry.alignment import (  # noqa: E402
    apply_alignment,
    wasserstein2_sq,
    wasserstein_alignment,
)
from symlib.symmetry.matching import weight_matching  # noqa: E402
from symlib.testing.reference import alignment_timings, random_gaussian_posterior  # noqa: E402
from symlib.symmetry.specs import mlp_permutation_spec  # noqa: E402


def fmt_sizes(sizes):
    """Layer sizes as a dash-joined label.

    Args:
        sizes: layer widths, e.g. ``[784, 1024, 10]``.

    Returns:
        The label, e.g. ``"784-1024-10"``.
    """
    return "-".join(str(s) for s in sizes)


def one_pair(width: int, depth: int, seed: int, repeats: int, max_iter: int) -> None:
    """Time W2 alignment against weight matching of the means on one random pair, and print it.

    Args:
        width: hidden width of the ``784-width^depth-10`` MLP.
        depth: number of hidden layers.
        seed: seed of the two posteriors (``seed`` and ``seed + 1``) and of the matching.
        repeats: interleaved repeats; the best time of each method is kept.
        max_iter: maximum number of sweeps of both methods.

    Returns:
        None; the timings, W2 distances and their ratio are printed.
    """
    sizes = [784] + [width] * depth + [10]
    spec = mlp_permutation_spec(depth)
    t = time.perf_counter()
    q0 = random_gaussian_posterior(seed, sizes)
    q1 = random_gaussian_posterior(seed + 1, sizes)
    n_params = sum(v.size for layer in q0[0].values() for v in layer.values())
    print(f"[{fmt_sizes(sizes)}]  {n_params:,} parameters per posterior (x2 for mu and sigma), "
          f"built in {time.perf_counter() - t:.1f} s; best of {repeats}, interleaved")
    t_w2, t_wm = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        w2 = wasserstein_alignment(seed + 2, spec, q0, q1, max_iter)
        t1 = time.perf_counter()
        wm = weight_matching(seed + 2, spec, q0[0], q1[0], max_iter)
        t2 = time.perf_counter()
        t_w2.append(t1 - t0)
        t_wm.append(t2 - t1)
    bw, bm = min(t_w2), min(t_wm)
    print(f"  wasserstein_alignment: {bw:8.3f} s  sweeps {w2.sweeps:3d}  LAPs {w2.num_solves:3d} (+{w2.num_skipped} skipped)  "
          f"LAP {w2.solver_time:.3f} s, costs {w2.cost_time:.3f} s  converged {w2.converged}")
    print(f"      W2^2: {w2.info['w2_sq_identity']:.4f} unaligned -> {w2.info['w2_sq']:.4f} aligned")
    print(f"  weight_matching (mu):  {bm:8.3f} s  sweeps {wm.sweeps:3d}  LAPs {wm.num_solves:3d} (+{wm.num_skipped} skipped)  "
          f"LAP {wm.solver_time:.3f} s, costs {wm.cost_time:.3f} s  converged {wm.converged}")
    w2_wm = wasserstein2_sq(q0, apply_alignment(spec, wm.perms, q1))
    same = all(np.array_equal(w2.perms[k], wm.perms[k]) for k in wm.perms)
    print(f"      W2^2 with the means-only permutations: {w2_wm:.4f}   same permutations as W2 alignment: {same}")
    print(f"  ratio W2 alignment / weight matching: {bw / bm:.2f}x   (runs W2 {[round(v, 3) for v in t_w2]}, "
          f"WM {[round(v, 3) for v in t_wm]})")


def sweep(widths, depth: int, seed: int) -> None:
    """Print a table of :func:`symlib.testing.reference.alignment_timings` over hidden widths.

    Args:
        widths: hidden widths to time.
        depth: number of hidden layers.
        seed: seed of the posteriors.

    Returns:
        None; the table is printed.
    """
    out = alignment_timings(widths, depth=depth, seed=seed)
    print(f"[width sweep] 784-width^{depth}-10, symlib.testing.reference.alignment_timings(widths={list(widths)}, depth={depth}, seed={seed})")
    print(f"  {'width':>6} {'W2 align (s)':>13} {'sweeps':>7} {'WM mu (s)':>10} {'sweeps':>7} {'ratio':>6}")
    for w, a, sa, b, sb, r in zip(out["width"], out["w2_seconds"], out["w2_sweeps"], out["wm_seconds"],
                                  out["wm_sweeps"], out["ratio"]):
        print(f"  {w:>6} {a:>13.3f} {sa:>7} {b:>10.3f} {sb:>7} {r:>6.2f}")


def main(argv=None) -> None:
    """Command-line entry point (see the module docstring).

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        None; the benchmark is printed.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=1024, help="hidden width of the single-pair run (default 1024)")
    ap.add_argument("--depth", type=int, default=3, help="number of hidden layers (default 3)")
    ap.add_argument("--widths", type=int, nargs="+", help="run a width sweep instead and print a table")
    ap.add_argument("--repeats", type=int, default=1, help="repeats of the single-pair run (best is kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-iter", type=int, default=100)
    args = ap.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"symlib.symmetry.alignment benchmark; python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, load average {load:.2f} at start")
    t = time.perf_counter()
    if args.widths:
        sweep(args.widths, args.depth, args.seed)
    else:
        one_pair(args.width, args.depth, args.seed, args.repeats, args.max_iter)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"total benchmark time {time.perf_counter() - t:.1f} s; load average {load:.2f} at end")


if __name__ == "__main__":
    main()
