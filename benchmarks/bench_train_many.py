"""Training many OptuNets at once (symlib.inference.training.train_many) vs one at a time.

The reference posterior of Laurent et al.'s Sec. 4 is 1,000 OptuNets, each trained for 60
epochs on the 60,000 MNIST images with the authors' recipe (SGD, batch 64, random crops).
This script times that recipe on ``--images`` MNIST images (the shipped subset) for
``K = 1`` (the baseline: one network at a time) and for larger stacks trained with
``vmap`` in one compiled loop, all in one process, and prints

* network-epochs per second and images per second (one image through one network, forward
  and backward), best of ``--repeats`` after a compilation run;
* the speed-up over K = 1 (the same work done one network at a time);
* the extrapolated time of the full reference bank: 1,000 networks x 60 epochs x 60,000
  images at the best measured throughput.

    python benchmarks/bench_train_many.py [--images 4096] [--stacks 1 8 32 64] [--epochs 1]

On a GPU (``JAX_PLATFORMS=cuda``) the same script gives the GPU figures.
"""
from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.cnn import as_images, optunet_apply, optunet_init
from symlib.data import load_split, standardize
from symlib.inference.training import TrainConfig, train_many

BANK = {"networks": 1000, "epochs": 60, "images": 60_000}


def time_stack(k: int, x, y, cfg: TrainConfig, repeats: int) -> float:
    """Best wall time of training ``k`` networks (after one compilation run)."""
    best = np.inf
    for r in range(repeats + 1):
        t = time.perf_counter()
        params, losses = train_many(jax.random.key(r), optunet_init, optunet_apply, k, x, y, cfg)
        jax.block_until_ready(losses)
        if r > 0:
            best = min(best, time.perf_counter() - t)
    return best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=4096, help="training images (shipped MNIST subset, max 10,000)")
    ap.add_argument("--stacks", type=int, nargs="+", default=[1, 8, 32, 64], help="networks trained at once")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    d = load_split("mnist", "subset", n_train=args.images, n_test=0)
    x, y = as_images(standardize(d["x_train"], "mnist")), jnp.asarray(d["y_train"])
    cfg = TrainConfig.laurent_optunet(len(y), epochs=args.epochs, crop_fill=standardize(0.0, "mnist"))
    print(f"device {jax.devices()[0].device_kind} ({jax.default_backend()}), {os.cpu_count()} CPU cores; "
          f"OptuNet, authors' recipe (batch {cfg.batch_size}, crops), {args.images} images x {args.epochs} epoch(s)")
    rows = []
    for k in args.stacks:
        t = time_stack(k, x, y, cfg, args.repeats)
        rows.append((k, t, k * args.epochs / t, k * args.epochs * args.images / t))
    base = rows[0][2] / rows[0][0] if rows[0][0] == 1 else None
    print(f"{'networks K':>10} {'time (s)':>9} {'net-epochs/s':>13} {'images/s':>10} {'vs K=1':>8}")
    for k, t, ne, ims in rows:
        ratio = f"{ne / base:8.2f}" if base else "       -"
        print(f"{k:>10d} {t:9.2f} {ne:13.3f} {ims:10.0f} {ratio}")
    best = max(r[3] for r in rows)
    total = BANK["networks"] * BANK["epochs"] * BANK["images"]
    print(f"reference bank ({BANK['networks']} OptuNets x {BANK['epochs']} epochs x {BANK['images']} images) at the "
          f"best {best:.0f} images/s: {total / best / 3600:.1f} h on this machine")


if __name__ == "__main__":
    main()
