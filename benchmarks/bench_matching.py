"""Benchmark symlib.symmetry.matching against a faithful implementation of the published Git
Re-Basin weight-matching algorithm (Ainsworth et al., "Git Re-Basin", ICLR 2023),
:func:`git_rebasin_weight_matching` below: float32 JAX cost products, one scipy LAP per
permutation per sweep.

Run from the repository root:

    .venv/bin/python benchmarks/bench_matching.py --quick   # about 35 s on 2 cores (with the ResNet20 x4 pair)
    .venv/bin/python benchmarks/bench_matching.py           # about 6-8 min: adds 784-2048x3-10 (best of 3), 1000 samples

Everything runs in one process and every speed-up is printed as a ratio to the baseline
timed in the same process (the machine may be shared, absolute times are noisy). Part 1
times weight_matching with both LAP solvers (lap_solver="scipy" and the default "auto",
lapjv where it pays), prints each one's ratio to the baseline, and checks that the
baseline and symlib end on the same permutations (or the same objective to 1e-6
relative). The old float64 "plain loop" that rebuilds every permuted weight at every step
(symlib.testing.reference.reference_weight_matching, the denominator of the figures in
benchmarks/README.md before 2026-11-27) is timed beside them as a secondary reference only,
never a ratio's denominator (--no-old-loop skips it). Every contender, the old loop too, gets
one untimed warm-up call and is then timed best of --repeats in interleaved rounds. See
benchmarks/README.md for what the numbers mean.
"""
from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from symlib.symmetry import permutations as P  # noqa: E402
from symlib.symmetry.matching import apply_permutation_many, weight_matching, weight_matching_many  # noqa: E402
from symlib.symmetry.permutations import as_generator  # noqa: E402
from symlib.testing.reference import reference_weight_matching  # noqa: E402
from symlib.core.models import mlp_init  # noqa: E402
from symlib.core.resnet import resnet20_init  # noqa: E402
from symlib.symmetry.architectures import resnet20_permutation_spec  # noqa: E402
from symlib.symmetry.specs import flatten_params, mlp_permutation_spec, to_views, unflatten_params  # noqa: E402


# --------------------------------------------------------------------------- the baseline


@functools.partial(jax.jit, static_argnames=("axes",))
def _rebasin_cost(was, wbs, inv, axes):
    """Cost matrix of one permutation, float32: ``sum_t A_t(axis_t) . B_t(axis_t)^T`` over the
    weights ``t`` it acts on, every axis but ``axis_t`` contracted. ``wbs`` are B's weights
    with *all* current permutations applied, this one included, so the product's columns are
    in B's permuted order; ``inv`` (the inverse of this permutation) puts them back in B's
    own unit order, which is what the LAP is posed in."""
    C = None
    for wa, wb, axis in zip(was, wbs, axes):
        rest = tuple(i for i in range(wa.ndim) if i != axis)
        term = jnp.tensordot(wa, wb, axes=(rest, rest))  # (n, n)
        C = term if C is None else C + term
    return jnp.take(C, inv, axis=1)


def git_rebasin_weight_matching(key, spec, params_a, params_b, max_iter: int = 100, tol: float = 1e-12):
    """Weight matching as published by Ainsworth et al. (Git Re-Basin, ICLR 2023, the weight
    matching algorithm), written for this benchmark from the paper: THE baseline of this script.

    Coordinate descent over the spec's permutations. Each sweep visits every permutation
    once, in a random order; for permutation ``P_l`` (n units), with every other permutation
    fixed, the cost matrix is the sum, over the weights that have an axis permuted by
    ``P_l``, of ``W_A @ (permuted W_B)^T`` (that axis first, all other axes flattened): float32
    matrix products in JAX (one jitted function, compiled on first use for each permutation's
    shapes), as in the published implementation. The linear assignment problem on it is solved by
    :func:`scipy.optimize.linear_sum_assignment` (``maximize=True``), as the published
    implementation does: **one LAP per permutation per sweep**, none skipped.

    Not a strawman, and no more than the paper's algorithm:

    * B's weights are kept permuted by all current permutations (float32 JAX arrays) and
      re-permuted *once per accepted update*, only the weights the updated permutation acts
      on (one gather each), instead of being rebuilt from scratch at every step; the cost's
      columns are put back in B's unit order by one n x n gather;
    * A's weights are converted once;
    * the LAP answer is accepted only if it strictly improves the LAP objective (its gain is
      summed in float64 from the float32 cost matrix), and J is tracked by adding the gains
      (recomputed after each sweep if a permutation acts twice on one weight);
    * the sweep orders are drawn from ``key`` exactly as symlib's (``rng.permutation`` per
      sweep of ``symlib.symmetry.permutations.as_generator(key)``: "random order per sweep,
      fixed seed"), and the stopping rule is symlib's (stop after the first sweep improving J
      by at most ``tol * |J|``; the paper stops when no permutation improves, the same thing
      up to ``tol``), so the iterates and sweep counts can be compared with
      :func:`symlib.symmetry.matching.weight_matching` one to one.

    What it does not do (symlib's accelerations): skip LAPs whose cost cannot have changed,
    cache the cost matrices and update them by low-rank products, solve independent LAPs
    concurrently, use a Jonker-Volgenant solver. Block constraints (``spec.blocks``) are not
    supported.

    Returns:
        ``dict(perms, objective (J after each sweep, float32 costs), sweeps, num_solves,
        solver_time, cost_time, permute_time, total_time)``; ``permute_time`` is the time to
        accept an update and dispatch B's gathers (JAX runs them asynchronously: they finish
        inside the next ``cost_time``).
    """
    t_start = time.perf_counter()
    if any(g > 1 for g in spec.blocks.values()):
        raise NotImplementedError("git_rebasin_weight_matching does not support spec.blocks")
    fa = {p: jnp.asarray(v, jnp.float32) for p, v in to_views(spec, flatten_params(params_a)).items()}
    fb = {p: jnp.asarray(v, jnp.float32) for p, v in to_views(spec, flatten_params(params_b)).items()}
    names = sorted(spec.perm_names)  # the order symlib draws its sweeps over
    perms = {}
    for name, where in spec.perm_to_axes.items():
        path, axis = where[0]
        perms[name] = np.arange(fa[path].shape[axis])
    # a permutation acting on two axes of one weight makes J quadratic in it: J is then
    # recomputed after each sweep instead of tracked by the LAP gains
    linear = all(len([q for q in spec.axes[p] if q is not None]) == len({q for q in spec.axes[p] if q is not None})
                 for p in spec.axes)
    pb = dict(fb)  # B with every current permutation applied (the identities to start with)
    terms = {name: (tuple(fa[p] for p, _ in where), tuple(p for p, _ in where), tuple(ax for _, ax in where))
             for name, where in spec.perm_to_axes.items()}

    def objective():
        return float(sum(float(jnp.vdot(fa[p], pb[p])) for p in spec.axes))

    rng = as_generator(key)
    obj = objective()
    history = []
    solves, solver_time, cost_time, permute_time = 0, 0.0, 0.0, 0.0
    for _ in range(max_iter):
        before = obj
        for k in rng.permutation(len(names)):
            name = names[k]
            was, paths, axes = terms[name]
            old = perms[name]
            t0 = time.perf_counter()
            C = np.asarray(_rebasin_cost(was, tuple(pb[p] for p in paths), jnp.asarray(np.argsort(old)), axes))
            t1 = time.perf_counter()
            _, col = linear_sum_assignment(C, maximize=True)
            t2 = time.perf_counter()
            cost_time += t1 - t0
            solver_time += t2 - t1
            solves += 1
            if np.array_equal(col, old):
                continue
            rows = np.arange(len(col))
            gain = float(C[rows, col].sum(dtype=np.float64) - C[rows, old].sum(dtype=np.float64))
            if gain <= 0:
                continue
            # accepted: re-permute, once, the weights of B this permutation acts on
            step = jnp.asarray(np.argsort(old)[col])  # new unit j of pb = its unit inv(old)[col[j]] now
            for p, ax in zip(paths, axes):
                pb[p] = jnp.take(pb[p], step, axis=ax)
            perms[name] = col
            obj += gain
            permute_time += time.perf_counter() - t2
        if not linear:
            obj = objective()
        history.append(obj)
        if obj - before <= tol * abs(before):
            break
    jax.block_until_ready(pb)
    return dict(perms=perms, objective=history, sweeps=len(history), num_solves=solves, solver_time=solver_time,
                cost_time=cost_time, permute_time=permute_time, total_time=time.perf_counter() - t_start)


def objective64(spec, params_a, params_b, perms) -> float:
    """J = sum over weights of <A, perms(B)> in float64 numpy: the common yardstick of the check."""
    fa, fb = to_views(spec, flatten_params(params_a)), to_views(spec, flatten_params(params_b))
    total = 0.0
    for path, names in spec.axes.items():
        w = np.asarray(fb[path], np.float64)
        for axis, name in enumerate(names):
            if name is not None:
                w = np.take(w, perms[name], axis=axis)
        total += float(np.vdot(np.asarray(fa[path], np.float64), w))
    return total


# --------------------------------------------------------------------------- data


def random_net(seed: int, sizes, bias_scale: float = 0.1):
    """He-normal MLP (symlib.core.models.mlp_init) with small random biases, float32 numpy."""
    params = mlp_init(jax.random.PRNGKey(seed), sizes)
    rng = np.random.default_rng(seed + 10_000)
    out = {}
    for layer, leaves in params.items():
        out[layer] = {
            "kernel": np.asarray(leaves["kernel"]),
            "bias": (bias_scale * rng.standard_normal(leaves["bias"].shape)).astype(np.float32),
        }
    return out


def fmt_sizes(sizes):
    return "-".join(str(s) for s in sizes)


# --------------------------------------------------------------------------- part 1

#: one row per case of part 1, for the summary table at the end
SUMMARY: list[dict] = []


def bench_pair(sizes, repeats: int, seed: int = 0, old_loop: bool = True):
    spec = mlp_permutation_spec(len(sizes) - 2)
    a, b = random_net(seed, sizes), random_net(seed + 1, sizes)
    return time_pair(fmt_sizes(sizes), spec, a, b, repeats, jax.random.PRNGKey(seed + 2), old_loop)


def random_resnet20(seed: int, width: int, norm_scale: float = 0.1):
    """ResNet20 (symlib.core.resnet.resnet20_init: He-normal convolutions) whose LayerNorm scales
    and biases get small random offsets (1 + 0.1 N, 0.1 N), float32 numpy."""
    flat = flatten_params(resnet20_init(jax.random.PRNGKey(seed), width, 10, 3))
    rng = np.random.default_rng(seed + 10_000)
    out = {}
    for path, leaf in flat.items():
        leaf = np.asarray(leaf)
        if not path.startswith("head/") and path.endswith(("/scale", "/bias")):  # the norms
            leaf = leaf + (norm_scale * rng.standard_normal(leaf.shape)).astype(np.float32)
        out[path] = leaf
    return unflatten_params(out)


def bench_resnet20_pair(width: int, repeats: int, seed: int = 0, old_loop: bool = True):
    a, b = random_resnet20(seed, width), random_resnet20(seed + 1, width)
    return time_pair(f"ResNet20 x{width}, 10 classes", resnet20_permutation_spec(), a, b, repeats,
                     jax.random.PRNGKey(seed + 2), old_loop)


def _ours_line(label: str, res, t: float) -> str:
    return (f"  {label}: {t:8.3f} s  sweeps {res.sweeps:3d}  LAPs {res.num_solves:3d} "
            f"(+{res.num_skipped} skipped)  LAP {res.solver_time:.3f} s ({res.solver_time / res.total_time:5.1%}), "
            f"costs {res.cost_time:.3f} s ({res.cost_time / res.total_time:5.1%})  J = {res.objective[-1]:.10f}")


def time_pair(label: str, spec, a, b, repeats: int, key, old_loop: bool = True):
    """The faithful Git Re-Basin baseline (:func:`git_rebasin_weight_matching`),
    ``weight_matching(lap_solver="scipy")``, ``weight_matching`` (default LAP solver, lapjv
    where available) and (``old_loop``) the old float64 plain loop as a secondary reference:
    one untimed warm-up call of each (the baseline's compiles its cost functions), then
    ``repeats`` interleaved rounds of one call of each, best of ``repeats`` for all alike.
    Prints the same-permutation check; returns baseline/ours."""
    contenders = {
        "base": lambda: git_rebasin_weight_matching(key, spec, a, b),
        "scipy": lambda: weight_matching(key, spec, a, b, lap_solver="scipy"),
        "ours": lambda: weight_matching(key, spec, a, b),
    }
    if old_loop:
        contenders["old"] = lambda: reference_weight_matching(key, spec, a, b)
    for fn in contenders.values():  # untimed warm-up, the same for every contender
        fn()
    times = {name: [] for name in contenders}
    results = {}
    for _ in range(repeats):  # interleaved, best of `repeats`
        for name, fn in contenders.items():
            t = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - t)
    base, res_s, res = results["base"], results["scipy"], results["ours"]
    t_base, t_ours = times["base"], times["ours"]
    tb, ts, to = min(t_base), min(times["scipy"]), min(t_ours)
    lap = res.info["lap_solver"]
    # the check: every final objective recomputed in float64 from the permutations
    jb = objective64(spec, a, b, base["perms"])
    print(f"\n[{label}]  best of {repeats}  (load average {os.getloadavg()[0]:.2f})")
    print(f"  baseline (Git Re-Basin, float32 JAX costs, scipy LAP): {tb:8.3f} s  sweeps {base['sweeps']:3d}  "
          f"LAPs {base['num_solves']:3d}  LAP {base['solver_time']:.3f} s ({base['solver_time'] / base['total_time']:5.1%}), "
          f"costs {base['cost_time']:.3f} s ({base['cost_time'] / base['total_time']:5.1%}), "
          f"re-permuting B {base['permute_time']:.3f} s  J = {jb:.10f}")
    print(_ours_line("ours, scipy LAP", res_s, ts))
    print(_ours_line(f"ours, {lap} LAP", res, to))
    checks = {}
    for name, r, t in (("scipy LAP", res_s, ts), (f"{lap} LAP", res, to)):
        jo = objective64(spec, a, b, r.perms)
        rel = abs(jb - jo) / abs(jb)
        same = all(np.array_equal(base["perms"][k], r.perms[k]) for k in r.perms)
        checks[name] = (same, rel)
        print(f"  ratio baseline/ours ({name}): {tb / t:.2f}x   same-permutation check: identical perms {same}, "
              f"|J_base - J_ours| / |J| = {rel:.1e} ({'PASS' if same or rel <= 1e-6 else 'FAIL'}: identical "
              f"or within 1e-6)")
        if not same and rel > 1e-6:
            print("  NOTE: objectives differ by more than 1e-6: a near-tie in some LAP was broken differently "
                  "(the baseline's costs are float32, ours float64) and the runs went to different local optima.")
    if repeats > 1:
        print(f"  each repeat, baseline/ours ({lap} LAP): "
              + ", ".join(f"{b_ / o:.2f}x" for b_, o in zip(t_base, t_ours))
              + "  (baseline s: " + ", ".join(f"{b_:.3f}" for b_ in t_base)
              + "; ours s: " + ", ".join(f"{o:.3f}" for o in t_ours) + ")")
    print(f"  J(identity) = {res.initial_objective:.4f}; lapjv over scipy LAP time (ours): "
          f"{res_s.solver_time / max(res.solver_time, 1e-12):.2f}x")
    row = dict(label=label, repeats=repeats, base=tb, scipy=ts, ours=to, lap=lap, sweeps_base=base["sweeps"],
               sweeps_ours=res.sweeps, solves_base=base["num_solves"], solves_ours=res.num_solves,
               same=all(c[0] for c in checks.values()), rel=max(c[1] for c in checks.values()), old=None)
    if old_loop:
        perms_o = results["old"][0]
        row["old"] = min(times["old"])
        same_o = all(np.array_equal(perms_o[k], base["perms"][k]) for k in perms_o)
        print(f"  secondary reference, NOT the ratio's denominator: old float64 plain loop (rebuilds every permuted "
              f"weight at every step), best of {repeats} after a warm-up: {row['old']:.3f} s = "
              f"{row['old'] / tb:.2f}x the baseline's time, {row['old'] / to:.2f}x ours; identical perms to the "
              f"baseline: {same_o}")
    SUMMARY.append(row)
    return tb / to


def print_summary():
    print("\n== summary of part 1: baseline = faithful Git Re-Basin (float32 JAX costs, scipy LAP), best of N ==")
    print("| case | best of | baseline | ours, scipy LAP | ours, auto LAP | baseline / ours (scipy) | "
          "baseline / ours (auto) | sweeps (baseline / ours) | LAPs (baseline / ours) | identical perms | max rel dJ "
          "| old plain loop (best of N) |")
    for r in SUMMARY:
        old = "-" if r["old"] is None else f"{r['old']:.3f} s ({r['old'] / r['base']:.2f}x baseline)"
        print(f"| {r['label']} | {r['repeats']} | {r['base']:.3f} s | {r['scipy']:.3f} s | {r['ours']:.3f} s "
              f"({r['lap']}) | {r['base'] / r['scipy']:.2f}x | {r['base'] / r['ours']:.2f}x | "
              f"{r['sweeps_base']} / {r['sweeps_ours']} | {r['solves_base']} / {r['solves_ours']} | {r['same']} | "
              f"{r['rel']:.1e} | {old} |")


# --------------------------------------------------------------------------- part 2


def make_stack(ref, spec, m: int, noise: float, seed: int):
    """m copies of ref, each perturbed by Gaussian noise (relative scale `noise`) and permuted."""
    rng = np.random.default_rng(seed)
    flat = flatten_params(ref)
    stack = {}
    for path, w in flat.items():
        scale = noise * float(np.std(w)) if w.size > 1 else noise
        stack[path] = (w[None] + scale * rng.standard_normal((m,) + w.shape, dtype=np.float32)).astype(np.float32)
    sizes = {name: flat[where[0][0]].shape[where[0][1]] for name, where in spec.perm_to_axes.items()}
    planted = {name: np.stack([rng.permutation(n) for _ in range(m)]) for name, n in sizes.items()}
    stack = apply_permutation_many(spec, planted, stack)
    nested = {}
    for path, v in stack.items():
        layer, leaf = path.split("/")
        nested.setdefault(layer, {})[leaf] = v
    return nested, planted


def bench_many(sizes, m: int, loop_m: int, repeats: int, noise: float = 0.05, seed: int = 0):
    spec = mlp_permutation_spec(len(sizes) - 2)
    ref = random_net(seed, sizes)
    t = time.perf_counter()
    stack, planted = make_stack(ref, spec, m, noise, seed + 1)
    t_make = time.perf_counter() - t
    key = 0
    print(f"\n[many-to-one: {m} perturbed (noise {noise} x std) and permuted copies of a {fmt_sizes(sizes)} MLP "
          f"matched to the unperturbed one]  (stack built in {t_make:.1f} s)")

    # (a) head-to-head on the first loop_m samples, interleaved, best of `repeats`
    sub = jax.tree_util.tree_map(lambda x: x[:loop_m], stack)
    samples = [jax.tree_util.tree_map(lambda x, s=s: x[s], sub) for s in range(loop_m)]
    best = {"loop": [], "base": [], "float64": [], "float32": []}
    # untimed warm-up of every contender (the baseline's compiles its cost functions)
    weight_matching(key, spec, ref, samples[0])
    git_rebasin_weight_matching(key, spec, ref, samples[0])
    for precision in ("float64", "float32"):
        weight_matching_many(key, spec, ref, sub, precision=precision)
    for _ in range(repeats):
        t = time.perf_counter()
        loop = [weight_matching(key, spec, ref, sample) for sample in samples]
        best["loop"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for sample in samples:
            git_rebasin_weight_matching(key, spec, ref, sample)
        best["base"].append(time.perf_counter() - t)
        for precision in ("float64", "float32"):
            t = time.perf_counter()
            weight_matching_many(key, spec, ref, sub, precision=precision)
            best[precision].append(time.perf_counter() - t)
    best = {k: min(v) / loop_m for k, v in best.items()}
    print(f"  (a) on {loop_m} samples, best of {repeats}, interleaved (ms/sample): "
          f"loop of weight_matching {best['loop'] * 1e3:.2f}, loop of the Git Re-Basin baseline {best['base'] * 1e3:.2f}, "
          f"weight_matching_many float64 {best['float64'] * 1e3:.2f}, float32 {best['float32'] * 1e3:.2f}")
    for precision in ("float64", "float32"):
        print(f"      ratio loop/many ({precision}): {best['loop'] / best[precision]:.2f}x vs the weight_matching "
              f"loop, {best['base'] / best[precision]:.2f}x vs the Git Re-Basin baseline loop")

    # (b) all m samples at once
    print(f"  (b) all {m} samples:")
    rows = []
    for precision in ("float64", "float32"):
        t = time.perf_counter()
        res = weight_matching_many(key, spec, ref, stack, precision=precision)
        t_many = time.perf_counter() - t
        agree = all(np.array_equal(loop[s].perms[k], res.perms[k][s]) for s in range(loop_m) for k in res.perms)
        dj = max(abs(loop[s].objective[-1] - res.objective[s]) / abs(loop[s].objective[-1]) for s in range(loop_m))
        recovered = np.mean([
            all(P.num_transpositions(P.compose(planted[k][s], res.perms[k][s])) == 0 for k in res.perms)
            for s in range(m)
        ])
        print(f"      weight_matching_many ({precision}): {t_many:7.2f} s ({t_many / m * 1e3:.2f} ms/sample)  "
              f"[costs {res.cost_time:.2f} s; LAPs {res.solver_time:.2f} s summed over {res.info['num_threads']} "
              f"threads, overlapping the costs ({res.info['lap_wait_time']:.2f} s waited); sweeps/sample "
              f"{res.sweeps.min()}-{res.sweeps.max()}; chunk {res.info['chunk_size']}]")
        print(f"          vs the weight_matching loop extrapolated from (a) ({best['loop'] * m:.2f} s): "
              f"{best['loop'] * m / t_many:.2f}x;  same perms as the loop on its {loop_m} samples: {agree}; "
              f"max rel |dJ| {dj:.1e}; planted permutation recovered exactly in {recovered:.1%} of samples")
        rows.append((precision, t_many))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="skip the 2048-wide net; 200 samples for many-to-one")
    ap.add_argument("--repeats", type=int, default=None, help="repeats of the small pair benchmarks (best of)")
    ap.add_argument("--repeats-large", type=int, default=3,
                    help="repeats of the 784-2048x3-10 pair (best of; default 3, about 25 s each)")
    ap.add_argument("--no-old-loop", action="store_true",
                    help="do not time the old float64 plain loop (a secondary reference, best of N like the others)")
    ap.add_argument("--samples", type=int, default=None, help="stack size for the many-to-one benchmark")
    ap.add_argument("--loop-samples", type=int, default=None, help="samples timed in the per-sample loop")
    args = ap.parse_args(argv)
    repeats = args.repeats or 3
    m = args.samples or (200 if args.quick else 1000)
    loop_m = args.loop_samples or (20 if args.quick else 50)
    print(f"symlib.symmetry.matching benchmark ({'quick' if args.quick else 'full'}); python {platform.python_version()}, "
          f"numpy {np.__version__}, jax {jax.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    t0 = time.perf_counter()
    print("\n== 1. one pair: faithful Git Re-Basin weight matching (baseline: float32 JAX costs, scipy LAP, one LAP "
          "per permutation per sweep) vs symlib.symmetry.matching.weight_matching ==")
    old = not args.no_old_loop
    bench_pair([784, 512, 10], repeats, old_loop=old)
    bench_pair([784, 512, 512, 512, 10], repeats, old_loop=old)
    bench_resnet20_pair(4, repeats, old_loop=old)
    if not args.quick:
        bench_pair([784, 2048, 2048, 2048, 10], args.repeats_large, old_loop=old)
    print_summary()
    print("\n== 2. many-to-one: weight_matching_many vs a per-sample loop of weight_matching ==")
    bench_many([784, 512, 10], m, loop_m, repeats)
    print(f"\ntotal benchmark time {time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
