"""Benchmark symlib.evaluation.mmd against the authors' approach (Laurent et al.'s published
MMD code, mmd/mmd_torch.py: one (m + n)^2 distance matrix per metric, float32 like their
torch.cdist, then one kernel matrix per bandwidth; written by us as
symlib.testing.reference.mmd2_distance_matrix and mmd_bank_distance_matrix), then a
memory-mapped sample, and the delete-a-group jackknife of the layer-wise MMD
(posterior_mmd_jackknife) against posterior_mmd called once per replicate.

Run from the repository root:

    .venv/bin/python benchmarks/bench_mmd.py --quick   # ~5 s
    .venv/bin/python benchmarks/bench_mmd.py           # ~30 s

In parts 1 and 2 every timing is the best of --repeats calls after one untimed warm-up
call, both sides alike, interleaved, and the peak memory is taken in one more call of each.
Peak memory is the peak of the numpy (and Python) allocations traced by tracemalloc
during the call, above what was allocated before it; ru_maxrss (the
process's peak resident set, which only grows) is printed after part 1. The all-in-memory
brute force (symlib.testing.reference.mmd2_brute_force) is no baseline: it only checks
both results, untimed, on the first rows. Data are random Gaussian samples (a stand-in
for posterior samples; the cost depends only on the sizes). See benchmarks/README.md for
the numbers.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc

import numpy as np
import scipy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from symlib.evaluation.mmd import (  # noqa: E402
    mmd2_unbiased,
    mmd_kernel_bank,
    posterior_mmd,
    posterior_mmd_jackknife,
)
from symlib.testing.reference import (  # noqa: E402
    mmd2_brute_force,
    mmd2_distance_matrix,
    mmd_bank_distance_matrix,
)

MIB = 1 << 20


def measured(fn, *args, repeats: int = 1, **kwargs):
    """``(result, best seconds, peak traced MiB)`` over ``repeats`` calls."""
    best, peak = np.inf, 0
    for _ in range(repeats):
        tracemalloc.start()
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return out, best, peak / MIB


def best_of(fn, repeats: int) -> float:
    """Best seconds of ``repeats`` calls after one untimed warm-up call."""
    fn()
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def head_to_head(ours, baseline, repeats: int):
    """Both callables: one untimed warm-up call each, then ``repeats`` rounds of one timed call
    each (interleaved, tracemalloc off), then one call each under tracemalloc for the peak
    memory; ``(our result, best s, peak MiB), (baseline's, best s, peak MiB)``."""
    fns = {"ours": ours, "base": baseline}
    out = {name: fn() for name, fn in fns.items()}
    best = {name: np.inf for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            out[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    peak = {name: measured(fn)[2] for name, fn in fns.items()}
    return tuple((out[k], best[k], peak[k]) for k in ("ours", "base"))


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def samples(seed: int, m: int, d: int, shift: float = 0.0, dtype=np.float64) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((m, d)) + shift).astype(dtype)


def bench_against_authors(m: int, n: int, d: int, repeats: int, num_bandwidths: int = 10, check_rows: int = 40):
    x, y = samples(0, m, d), samples(1, n, d, shift=0.05)
    print(f"[x {m} x {d}, y {n} x {d}, {num_bandwidths} bandwidths; the samples themselves (float64): "
          f"{(x.nbytes + y.nbytes) / MIB:.1f} MiB; best of {repeats} after a warm-up, interleaved]")
    for kernel, scale in (("gaussian", np.sqrt(2 * d)), ("laplace", 2 * d / np.sqrt(np.pi))):
        bw = scale * np.geomspace(0.25, 4.0, num_bandwidths)  # around the typical distance
        (ours, t_ours, mem_ours), (ref, t_ref, mem_ref) = head_to_head(
            lambda: mmd2_unbiased(x, y, kernel, bw), lambda: mmd2_distance_matrix(x, y, kernel, bw), repeats)
        rel = float(np.max(np.abs(ours - ref)) / np.max(np.abs(ours)))
        print(f"  {kernel:8s} chunked {t_ours:7.3f} s {mem_ours:8.1f} MiB | authors' approach (float32) {t_ref:7.3f} s "
              f"{mem_ref:8.1f} MiB | time ratio (authors/chunked) {t_ref / t_ours:5.2f}x, memory ratio "
              f"{mem_ref / mem_ours:5.2f}x | max rel. diff {rel:.1e}")
        t64 = best_of(lambda: mmd2_distance_matrix(x, y, kernel, bw, dtype=np.float64), repeats)
        xs, ys = x[:check_rows], y[:check_rows]
        brute = mmd2_brute_force(xs, ys, kernel, bw)
        scale_b = np.max(np.abs(brute))
        print(f"           (secondary: the authors' approach in float64 {t64:7.3f} s = {t64 / t_ref:.2f}x its float32 "
              f"time; untimed check on the first {check_rows} rows against the brute force: max rel. diff chunked "
              f"{np.max(np.abs(mmd2_unbiased(xs, ys, kernel, bw) - brute)) / scale_b:.1e}, authors' float32 "
              f"{np.max(np.abs(mmd2_distance_matrix(xs, ys, kernel, bw) - brute)) / scale_b:.1e})")
    print(f"  ru_maxrss after part 1: {maxrss_mib():.0f} MiB")


def bench_bank(m: int, n: int, d: int, repeats: int):
    x, y = samples(2, m, d), samples(3, n, d, shift=0.05)
    (bank, t_ours, mem_ours), (base, t_ref, mem_ref) = head_to_head(
        lambda: mmd_kernel_bank(x, y), lambda: mmd_bank_distance_matrix(x, y), repeats)
    rel = max(float(np.max(np.abs(bank.values[k] - base[k][1])) / np.max(np.abs(bank.values[k]))) for k in base)
    median = float(np.median(np.concatenate([v for _, v in base.values()])))
    print(f"[x {m} x {d}, y {n} x {d}: OptuNet size (355 parameters), random data; best of {repeats} after a warm-up, "
          f"interleaved]")
    print(f"  mmd_kernel_bank (10 Gaussian + 10 Laplace, bandwidths from the first 500 of each): {t_ours:.3f} s, "
          f"peak {mem_ours:.1f} MiB; median {bank.median:.3e}, mean {bank.mean:.3e}, max {bank.max:.3e}")
    print(f"  authors' approach (float32; bandwidths the same way, one distance matrix per metric): {t_ref:.3f} s, "
          f"peak {mem_ref:.1f} MiB; median {median:.3e} | time ratio (authors/ours) {t_ref / t_ours:5.2f}x, "
          f"memory ratio {mem_ref / mem_ours:5.2f}x | max rel. diff of the 20 values {rel:.1e}")


def bench_memmap(m: int, n: int, d: int):
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for seed, rows in ((4, m), (5, n)):
            path = os.path.join(tmp, f"s{seed}.npy")
            np.save(path, samples(seed, rows, d, dtype=np.float32))
            paths.append(path)
        x, y = (np.load(p, mmap_mode="r") for p in paths)
        on_disk = (x.nbytes + y.nbytes) / MIB
        bw = np.sqrt(2 * d) * np.geomspace(0.25, 4.0, 10)
        _, seconds, mem = measured(mmd2_unbiased, x, y, "gaussian", bw)
        print(f"[memmap float32 x {m} x {d}, y {n} x {d}: {on_disk:.0f} MiB on disk, {2 * on_disk:.0f} MiB as float64]")
        print(f"  mmd2_unbiased, Gaussian, 10 bandwidths: {seconds:.2f} s, peak traced {mem:.1f} MiB "
              f"(blocks of 32 MiB of float64, two alive at a time)")


def optunet_like(seed: int, m: int, shift: float = 0.0) -> dict:
    """``m`` random stand-ins for OptuNet's 355 parameters, in its four layers."""
    rng = np.random.default_rng(seed)
    shapes = {"conv_0": {"kernel": (4, 4, 1, 2)}, "conv_1": {"kernel": (5, 5, 1, 10)},
              "dense_0": {"kernel": (10, 3), "bias": (3,)}, "dense_1": {"kernel": (3, 10), "bias": (10,)}}
    return {layer: {leaf: rng.standard_normal((m, *shape)) + shift for leaf, shape in leaves.items()}
            for layer, leaves in shapes.items()}


def bench_jackknife(m: int, n: int, groups: int):
    """The jackknife replicates by posterior_mmd_jackknife (every layer's distances once) against
    the baseline: posterior_mmd of the whole stacks, then of the stacks without each group."""
    x, y = optunet_like(6, m), optunet_like(7, n, shift=0.05)
    gx, gy = np.arange(m) * groups // m, np.arange(n) * groups // n

    def rows(stack, keep):
        return {layer: {leaf: a[keep] for leaf, a in sub.items()} for layer, sub in stack.items()}

    def baseline():
        return (posterior_mmd(x, y).median, [posterior_mmd(rows(x, gx != g), y).median for g in range(groups)],
                [posterior_mmd(x, rows(y, gy != g)).median for g in range(groups)])

    jk, t_ours, mem_ours = measured(posterior_mmd_jackknife, x, y, gx, gy)
    (full, wx, wy), t_ref, mem_ref = measured(baseline)
    diff = max(abs(jk.full.median - full), np.max(np.abs(jk.without_x - wx)), np.max(np.abs(jk.without_y - wy)))
    print(f"[OptuNet-sized stacks (355 parameters in 4 layers), {m} against {n} samples, {groups} groups each: "
          f"{2 * groups + 1} layer-wise MMDs]")
    print(f"  posterior_mmd_jackknife {t_ours:7.2f} s {mem_ours:7.1f} MiB | posterior_mmd per replicate "
          f"{t_ref:7.2f} s {mem_ref:7.1f} MiB | time ratio (baseline/ours) {t_ref / t_ours:5.2f}x | "
          f"max abs. diff {diff:.1e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (about 5 s)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="parts 1 and 2: best of this many calls of each side, after one warm-up call")
    args = ap.parse_args(argv)
    print(f"symlib.evaluation.mmd benchmark ({'quick' if args.quick else 'full'}); python {platform.python_version()}, "
          f"numpy {np.__version__}, scipy {scipy.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    t0 = time.perf_counter()
    print("\n== 1. chunked mmd2_unbiased vs the authors' approach (one distance matrix per metric, float32) ==")
    bench_against_authors(*((100, 100, 500) if args.quick else (200, 200, 2000)), repeats=args.repeats)
    print("\n== 2. the 20-kernel bank at the paper's OptuNet scale (1,000 reference vs 100 samples) ==")
    bench_bank(*((300, 100, 355) if args.quick else (1000, 100, 355)), repeats=args.repeats)
    print("\n== 3. a memory-mapped sample ==")
    bench_memmap(*((100, 50, 50_000) if args.quick else (200, 50, 250_000)))
    print("\n== 4. the delete-a-group jackknife of the layer-wise MMD (Table 1's intervals) ==")
    bench_jackknife(*((200, 40, 10) if args.quick else (1000, 100, 20)))
    print(f"\ntotal benchmark time {time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
