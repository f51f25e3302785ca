"""Min-mass (Definition C.6 of Laurent et al., ICLR 2024): symlib.symmetry.min_mass vs baselines.

On one He-initialised 784-W-W-W-10 ReLU MLP (default W = 512; random positive rescaling of
the hidden units applied first, spread ``--spread`` in log-space, so that there is
something to remove), times

* ``symlib.symmetry.min_mass`` on the MLP's scaling spec (``mlp_scaling_spec(3)``): the
  chain solver that ``method="auto"`` picks for a chain spec (BCD, then Newton when it
  slows down), its Newton alone (``newton``), and the general dense-Hessian Newton
  (``dense``) that any spec can use (``--dense-width`` caps the width it is timed at: its
  Hessian has ``(3 W)^2`` entries),
* scipy L-BFGS-B on the same convex log-scale objective with the analytic gradient,
* cvxpy (the paper's tool) with exponential cones, unless ``--no-cvxpy`` or cvxpy is not
  installed; ``--cvxpy-width`` lets cvxpy run on a narrower network when the full one is
  out of reach (then every method is also timed on that network),

and prints times, mass, speed ratios and relative objective differences.

    python benchmarks/bench_min_mass.py [--width 512] [--no-cvxpy] [--cvxpy-width 128]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from symlib.symmetry import scaling as S
from symlib.testing import reference as R


def he_mlp(rng, sizes):
    return {
        f"dense_{l}": {"kernel": rng.normal(size=(a, b)) * np.sqrt(2.0 / a), "bias": np.zeros(b)}
        for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def timed(fn, repeat=1):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run(width, spread, seed, with_cvxpy, repeat, dense_width=512):
    rng = np.random.default_rng(seed)
    sizes = [784, width, width, width, 10]
    spec = S.mlp_scaling_spec(len(sizes) - 2)
    params = he_mlp(rng, sizes)
    params = S.apply_scaling(spec, params, {f"P_{l}": np.exp(spread * rng.normal(size=w))
                                            for l, w in enumerate(sizes[1:-1])})
    n_par = sum(p["kernel"].size + p["bias"].size for p in params.values())
    print(f"[{'-'.join(map(str, sizes))}]  {n_par:,} parameters, {sum(sizes[1:-1])} log-scales, "
          f"mass before {S.mass(spec, params):.6g}")
    t_auto, r_auto = timed(lambda: S.min_mass(spec, params), repeat)
    t_newt, r_newt = timed(lambda: S.min_mass(spec, params, method="newton"), repeat)
    t_lb, (f_lb, nit) = timed(lambda: R.min_mass_lbfgs(params), 1)
    ref = r_newt.mass
    print(f"  min_mass auto   : {t_auto:9.4f} s  mass {r_auto.mass:.12g}  iters {r_auto.iterations:4d}  "
          f"converged {r_auto.converged}  rel. diff vs newton {(r_auto.mass - ref) / ref:+.2e}")
    print(f"  min_mass newton : {t_newt:9.4f} s  mass {r_newt.mass:.12g}  iters {r_newt.iterations:4d}  "
          f"converged {r_newt.converged}")
    if width <= dense_width:
        t_dense, r_dense = timed(lambda: S.min_mass(spec, params, method="dense"), 1)
        print(f"  min_mass dense  : {t_dense:9.4f} s  mass {r_dense.mass:.12g}  iters {r_dense.iterations:4d}  "
              f"rel. diff vs newton {(r_dense.mass - ref) / ref:+.2e}  time / min_mass auto {t_dense / t_auto:7.1f}x")
    print(f"  scipy L-BFGS-B  : {t_lb:9.4f} s  mass {f_lb:.12g}  iters {nit:4d}  "
          f"rel. diff {(r_auto.mass - f_lb) / f_lb:+.2e}  speed-up {t_lb / t_auto:7.1f}x")
    if with_cvxpy:
        t_cv, (f_cv, _, status) = timed(lambda: R.min_mass_cvxpy(params), 1)
        print(f"  cvxpy ({status}): {t_cv:9.4f} s  mass {f_cv:.12g}  "
              f"rel. diff {(r_auto.mass - f_cv) / f_cv:+.2e}  speed-up {t_cv / t_auto:7.1f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--spread", type=float, default=1.0, help="std of the random log-rescaling applied first")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
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
    run(args.width, args.spread, args.seed, have_cvxpy and args.cvxpy_width is None, args.repeat, args.dense_width)
    if have_cvxpy and args.cvxpy_width is not None:
        run(args.cvxpy_width, args.spread, args.seed, True, args.repeat, args.dense_width)


if __name__ == "__main__":
    main()
