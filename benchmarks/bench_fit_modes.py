"""Fitting a posterior around each of M modes at once (symlib.inference.fit_modes) vs one mode after the other.

Laurent et al.'s multi-mode methods (Sec. 4, Table 1) fit Bayes by backprop and SWAG around
each of 10 trained OptuNets; the authors fit one network after another. This script times both
on ``--images`` MNIST images (the shipped subset) with the book's settings
(``laurent.posteriors.SETTINGS``: batch 64; BNN: Adam 1e-3, 3 weight draws a step; SWAG: SGD
0.04) for ``--modes`` OptuNets:

* the baseline: ``fit_vi`` / ``fit_swag`` called for each mode in turn, with the keys
  ``fit_modes`` gives them (``jax.random.split(key, M)``), so both do the same work;
* ``fit_modes``: every mode in one compiled loop (``jax.vmap``).

Printed per method: the first call (compilation included) and the best of ``--repeats``
calls after it, for both, and the ratio baseline / ``fit_modes`` of each; and the largest
difference between the two results (they are the same fits, up to float rounding).

    python benchmarks/bench_fit_modes.py [--modes 10] [--images 4096] [--epochs 2] [--repeats 2]

On a GPU (``JAX_PLATFORMS=cuda``) the same script gives the GPU figures.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
import optax

from symlib.core.cnn import as_images, optunet_apply, optunet_init
from symlib.data import load_split, standardize
from symlib.experiments.laurent.posteriors import SETTINGS
from symlib.inference import Data, Model, SWAGConfig, VIConfig, fit_modes, fit_swag, fit_vi


def configs(epochs: int) -> dict:
    """The zoo's BNN and SWAG settings for ``epochs`` epochs (SWAG: a snapshot an epoch)."""
    return {"BNN (fit_vi)": (fit_vi, VIConfig(epochs=epochs, batch_size=SETTINGS["batch_size"],
                                               optimizer=optax.adam(SETTINGS["bnn_learning_rate"]), prior_var=1.0,
                                               std_init=SETTINGS["bnn_std_init"], num_mc=SETTINGS["bnn_num_mc"])),
            "SWAG (fit_swag)": (fit_swag, SWAGConfig(epochs=epochs, batch_size=SETTINGS["batch_size"],
                                                     optimizer=optax.sgd(SETTINGS["swag_learning_rate"]),
                                                     num_snapshots=epochs, rank=epochs, scale=SETTINGS["swag_scale"]))}


def timed(fn, repeats: int) -> tuple[float, float, object]:
    """``(first call's seconds, best of the next repeats, the last result)``."""
    times, out = [], None
    for _ in range(repeats + 1):
        t = time.perf_counter()
        out = jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return times[0], min(times[1:]), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", type=int, default=10)
    parser.add_argument("--images", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if args.epochs < 2 or args.repeats < 1:
        parser.error("--epochs must be at least 2 (SWAG takes a snapshot an epoch) and --repeats at least 1")
    d = load_split("mnist", "subset", n_train=args.images, n_test=0)
    data = Data(as_images(standardize(d["x_train"], "mnist")), np.asarray(d["y_train"]))
    model = Model(optunet_apply)
    modes = jax.vmap(optunet_init)(jax.random.split(jax.random.key(0), args.modes))
    key = jax.random.key(1)
    print(f"{args.modes} OptuNets, {len(data.y)} images, {args.epochs} epochs, on {jax.devices()[0].device_kind} "
          f"(jax {jax.__version__})")
    print(f"{'method':<17} {'one after the other (s)':>24} {'fit_modes (s)':>15} {'ratio':>13} {'max |diff|':>11}")
    print(f"{'':<17} {'first':>11} {'best':>12} {'first':>7} {'best':>7} {'first':>6} {'best':>6}")
    for name, (fit, cfg) in configs(args.epochs).items():
        def one_by_one(fit=fit, cfg=cfg):
            return [fit(k, jax.tree_util.tree_map(lambda a, m=m: a[m], modes), model, data, cfg)
                    for m, k in enumerate(jax.random.split(key, args.modes))]

        f0, f1, ref = timed(one_by_one, args.repeats)
        b0, b1, got = timed(lambda cfg=cfg: fit_modes(key, modes, model, data, cfg), args.repeats)
        diff = max(float(np.max(np.abs(np.asarray(u) - np.asarray(v))))
                   for u, v in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got)))
        print(f"{name:<17} {f0:>11.2f} {f1:>12.2f} {b0:>7.2f} {b1:>7.2f} {f0 / b0:>6.2f} {f1 / b1:>6.2f} {diff:>11.1e}")


if __name__ == "__main__":
    main()
