"""Training many OptuNets at once (symlib.inference.fit_ensemble) vs one at a time.

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

    python benchmarks/bench_train_many.py [--images 4096] [--stacks 1 8 32 64] [--epochs 1] [--json]

``--json`` also prints one ``RESULT {...}`` line per stack (``networks``, ``images_per_s``,
``seconds``, ``images``, ``epochs``, ``repeats``): ``scripts/execute_notebooks.py --record``
reads it to keep the machine's rate beside the chapters' times.

On a GPU (``JAX_PLATFORMS=cuda``) the same script gives the GPU figures.

**Scaling over processes** (``--processes P``): one stack of ``--stacks`` networks (the
first value; default 16) trained by ``fit_ensemble`` once in 1 process and once split over
P processes on JAX's distributed runtime (127.0.0.1; the network axis sharded over the
processes' devices), every process pinned to one CPU core and single-threaded
(``benchmarks/_multiprocess.py``). Printed: images per second (one image through one
network) of both, the speed-up and the efficiency (speed-up / P).

    python benchmarks/bench_train_many.py --processes 2 [--stacks 16] [--images 2048]

**OptuNet's convolutions** (``--convs``): the same training with each implementation of
``symlib.core.cnn.conv2d`` for OptuNet's two convolutions: XLA's convolution for both (the
baseline: what the authors' PyTorch model is, one library convolution per layer), our
former default (``"patches"`` for both) and ``OPTUNET_CONVS`` (``"taps"`` then
``"patches"``), at each stack size (default 3 and 8: chapter 10's OptuNets and chapter 12's
bank blocks). Printed: images per second and the ratio to the baseline.

    python benchmarks/bench_train_many.py --convs [--stacks 3 8] [--images 4096]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

if "--scaling-worker" in sys.argv:  # a process of a --processes run: join the others before JAX starts
    from symlib.core.distributed import initialize_from_env

    initialize_from_env()

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.cnn import OPTUNET_CONVS, as_images, optunet_apply, optunet_init
from symlib.data import load_split, standardize
from symlib.inference import Data, Model, TrainConfig, fit_ensemble
from symlib.experiments.laurent.optunet import optunet_train_config

BANK = {"networks": 1000, "epochs": 60, "images": 60_000}


def time_stack(k: int, x, y, cfg: TrainConfig, repeats: int, apply_fn=optunet_apply) -> float:
    """Best wall time of training ``k`` networks (after one compilation run)."""
    best = np.inf
    for r in range(repeats + 1):
        t = time.perf_counter()
        init_key, data_key = jax.random.split(jax.random.key(r))
        post = fit_ensemble(data_key, jax.vmap(optunet_init)(jax.random.split(init_key, k)), Model(apply_fn),
                            Data(x, y), cfg)
        jax.block_until_ready(post.info["epoch_loss"])
        if r > 0:
            best = min(best, time.perf_counter() - t)
    return best


def scaling_worker(k: int, x, y, cfg: TrainConfig, repeats: int, images: int) -> None:
    """One process of a ``--processes`` run: :func:`time_stack` on all processes' devices;
    process 0 prints ``RESULT <json>``."""
    from symlib.core.distributed import is_writer, sync_processes

    sync_processes("bench.start")
    best = time_stack(k, x, y, cfg, repeats)
    if is_writer():
        detail = f"{k} OptuNets x {images} images x {cfg.epochs} epoch(s) in {best:.2f} s (best of {repeats})"
        print("RESULT " + json.dumps({"throughput": k * cfg.epochs * images / best, "seconds": best, "networks": k,
                                      "processes": jax.process_count(), "detail": detail}))


def compare_convs(stacks, x, y, cfg: TrainConfig, repeats: int, images: int) -> None:
    """Print images/s of each convolution implementation and its ratio to XLA's (``--convs``)."""
    variants = {"xla (baseline)": "xla", "patches (former default)": "patches", f"{OPTUNET_CONVS} (ours)": OPTUNET_CONVS}
    print(f"{'networks K':>10} {'convolutions':>28} {'images/s':>10} {'vs xla':>7}")
    for k in stacks:
        base = None
        for name, conv in variants.items():
            ims = k * cfg.epochs * images / time_stack(k, x, y, cfg, repeats, partial(optunet_apply, conv=conv))
            base = base or ims
            print(f"{k:>10d} {name:>28} {ims:10.0f} {ims / base:7.2f}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=4096, help="training images (shipped MNIST subset, max 10,000)")
    ap.add_argument("--stacks", type=int, nargs="+", default=None,
                    help="networks trained at once (default 1 8 32 64; with --processes: one stack, default 16)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--processes", type=int, default=None,
                    help="compare 1 and this many processes, one CPU core each (one stack: the first of --stacks)")
    ap.add_argument("--convs", action="store_true", help="compare the implementations of OptuNet's convolutions")
    ap.add_argument("--json", action="store_true", help="also print a RESULT line of JSON per stack")
    ap.add_argument("--scaling-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.processes:
        from _multiprocess import scaling

        k = (args.stacks or [16])[0]
        print(f"fit_ensemble: {k} OptuNets, authors' recipe (batch 64, crops), {args.images} images x {args.epochs} "
              f"epoch(s)")
        scaling([str(Path(__file__).resolve()), "--scaling-worker", "--stacks", str(k), "--images", str(args.images),
                 "--epochs", str(args.epochs), "--repeats", str(args.repeats)], args.processes,
                "images/s (image-network passes)")
        return
    d = load_split("mnist", "subset", n_train=args.images, n_test=0)
    x, y = as_images(standardize(d["x_train"], "mnist")), jnp.asarray(d["y_train"])
    cfg = optunet_train_config(len(y), epochs=args.epochs, crop_fill=standardize(0.0, "mnist"))
    if args.scaling_worker:
        return scaling_worker(args.stacks[0], x, y, cfg, args.repeats, args.images)
    print(f"device {jax.devices()[0].device_kind} ({jax.default_backend()}), {os.cpu_count()} CPU cores; "
          f"OptuNet, authors' recipe (batch {cfg.batch_size}, crops), {args.images} images x {args.epochs} epoch(s)")
    if args.convs:
        return compare_convs(args.stacks or [3, 8], x, y, cfg, args.repeats, args.images)
    rows = []
    for k in args.stacks or [1, 8, 32, 64]:
        t = time_stack(k, x, y, cfg, args.repeats)
        rows.append((k, t, k * args.epochs / t, k * args.epochs * args.images / t))
        if args.json:
            print("RESULT " + json.dumps({"networks": k, "images_per_s": rows[-1][3], "seconds": t,
                                          "images": args.images, "epochs": args.epochs, "repeats": args.repeats}),
                  flush=True)
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
