"""Min-mass (Definition C.6 of Laurent et al., ICLR 2024): symlib.symmetry.min_mass vs baselines.

On one He-initialised 784-W-W-W-10 ReLU MLP (default W = 512; random positive rescaling of
the hidden units applied first, spread ``--spread`` in log-space, so that there is
something to remove), times

* ``symlib.symmetry.min_mass`` on the MLP's scaling spec (``mlp_scaling_spec(3)``): the
  chain solver that ``method="auto"`` picks for a chain spec (BCD, then Newton when it
  slows down), its Newton alone (``newton``), and the general dense-Hessian Newton
  (``dense``) that any spec can use (``--dense-width`` caps the width it is timed at: its
  Hessian has ``(3 W)^2`` entries),
* scipy L-BFGS-B on the same convex log-scale objective with the analytic gradient, twice:
  **stopped at auto's accuracy** (the loosest ``ftol`` of 2e-6, 1e-6, 5e-7, ..., 1e-15 whose
  result is no farther above the optimum, relatively, than auto's; chosen by untimed runs
  first; the headline ratio) and run to about machine precision (``ftol`` 1e-15, ``gtol``
  1e-12, the accuracy of Newton),
* cvxpy (the paper's tool) with exponential cones, at CLARABEL's default tolerances,
  unless ``--no-cvxpy`` or cvxpy is not installed; ``--cvxpy-width`` lets cvxpy run on a
  narrower network when the full one is out of reach (then every method is also timed on
  that network).

Every method is timed alike: one untimed warm-up call each, then ``--repeat`` rounds in
which each method runs once (interleaved), best of the rounds. Printed beside each time:
the mass, the relative gap ``(mass - best) / best`` to the lowest mass any method found,
and the time relative to ``min_mass`` auto.

    python benchmarks/bench_min_mass.py [--width 512] [--repeat 3] [--no-cvxpy] [--cvxpy-width 128]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from symlib.symmetry import scaling as S
from symlib.testing import reference as R

#: the ftol ladder searched for L-BFGS-B's stop at auto's accuracy, loosest first (5, 2, 1 per decade)
FTOLS = tuple(c * 10.0 ** -k for k in range(6, 16) for c in (5, 2, 1))[1:]  # 2e-6 ... 1e-15


def he_mlp(rng, sizes):
    return {
        f"dense_{l}": {"kernel": rng.normal(size=(a, b)) * np.sqrt(2.0 / a), "bias": np.zeros(b)}
        for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def timed(fn, repeat=1):
    """Best seconds of ``repeat`` calls and the last result (no warm-up: see :func:`interleaved`)."""
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def interleaved(fns: dict, repeat: int, warmup: int = 1) -> dict:
    """``name -> (best seconds, result)``: ``warmup`` untimed calls of each, then ``repeat``
    rounds of one call of each in turn."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    best = {name: (np.inf, None) for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t, out = timed(fn)
            best[name] = (min(best[name][0], t), out)
    return best


def matched_ftol(params, target_gap: float, optimum: float) -> tuple[float, float]:
    """The loosest ftol of :data:`FTOLS` at which L-BFGS-B ends no farther above ``optimum``
    (relatively) than ``target_gap`` (the tightest if none does), and the gap it reaches."""
    gap = np.inf
    for ftol in FTOLS:
        f, _ = R.min_mass_lbfgs(params, ftol=ftol)
        gap = (f - optimum) / optimum
        if gap <= target_gap:
            break
    return ftol, gap


def run(width, spread, seed, with_cvxpy, repeat, dense_width=512):
    rng = np.random.default_rng(seed)
    sizes = [784, width, width, width, 10]
    spec = S.mlp_scaling_spec(len(sizes) - 2)
    params = he_mlp(rng, sizes)
    params = S.apply_scaling(spec, params, {f"P_{l}": np.exp(spread * rng.normal(size=w))
                                            for l, w in enumerate(sizes[1:-1])})
    n_par = sum(p["kernel"].size + p["bias"].size for p in params.values())
    print(f"[{'-'.join(map(str, sizes))}]  {n_par:,} parameters, {sum(sizes[1:-1])} log-scales, "
          f"mass before {S.mass(spec, params):.6g}  (load average {os.getloadavg()[0]:.2f})")
    # untimed calibration: the optimum (the lowest of Newton and L-BFGS-B to machine precision),
    # auto's gap to it, and the ftol at which L-BFGS-B stops at that gap
    auto_mass = S.min_mass(spec, params).mass
    optimum = min(S.min_mass(spec, params, method="newton").mass, R.min_mass_lbfgs(params)[0])
    ftol, _ = matched_ftol(params, max((auto_mass - optimum) / optimum, 0.0), optimum)

    fns = {
        "min_mass auto": lambda: S.min_mass(spec, params),
        "min_mass newton": lambda: S.min_mass(spec, params, method="newton"),
        f"L-BFGS-B, ftol {ftol:.0e} (auto's accuracy)": lambda: R.min_mass_lbfgs(params, ftol=ftol),
        "L-BFGS-B, ftol 1e-15 (machine precision)": lambda: R.min_mass_lbfgs(params),
    }
    if width <= dense_width:
        fns["min_mass dense"] = lambda: S.min_mass(spec, params, method="dense")
    if with_cvxpy:
        fns["cvxpy"] = lambda: R.min_mass_cvxpy(params)
    res = interleaved(fns, repeat)
    masses = {}
    for name, (_, out) in res.items():
        masses[name] = out[0] if isinstance(out, tuple) else out.mass
    best = min(min(masses.values()), optimum)
    t_auto = res["min_mass auto"][0]
    print(f"  every method: one warm-up call, then best of {repeat} interleaved rounds; gap = (mass - lowest mass "
          f"found) / lowest = (m - {best:.12g}) / {best:.12g}")
    for name, (t, out) in res.items():
        if isinstance(out, tuple):
            extra = f"iters {out[1]:4d}" if name.startswith("L-BFGS") else f"({out[2]})"
        else:
            extra = f"iters {out.iterations:4d}  converged {out.converged}"
        print(f"  {name:44s}: {t:9.4f} s  gap {(masses[name] - best) / best:9.2e}  time / auto {t / t_auto:8.1f}x  "
              f"mass {masses[name]:.12g}  {extra}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--spread", type=float, default=1.0, help="std of the random log-rescaling applied first")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many interleaved rounds, after a warm-up")
    ap.add_argument("--no-cvxpy", action="store_true")
    ap.add_argument("--cvxpy-width", type=int, default=None,
                    help="run cvxpy only on a network of this width (all methods re-timed on it)")
    ap.add_argument("--dense-width", type=int, default=512,
                    help="time min_mass(method='dense') only up to this width")
    args = ap.parse_args()
    try:
        import cvxpy  # noqa: F401

        have_cvxpy = not args.no_cvxpy
    except ImportError:
        print("cvxpy not installed: scipy L-BFGS-B is the only baseline")
        have_cvxpy = False
    print(f"bench_min_mass: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    run(args.width, args.spread, args.seed, have_cvxpy and args.cvxpy_width is None, args.repeat, args.dense_width)
    if have_cvxpy and args.cvxpy_width is not None:
        run(args.cvxpy_width, args.spread, args.seed, True, args.repeat, args.dense_width)


if __name__ == "__main__":
    main()
