"""Test accuracy of the OptuNets folded so far into the GPU queue's job ``laurent-bank``
(``gpu/laurent-bank/``), on the paper profile's 10,000 MNIST test images: a check of a bank
that is not complete yet (once it is, ``python -m symlib run optunet_bank --profile paper``
computes the same accuracies from the folded blocks).

    SYMLIB_DATA_DIR=... python scripts/gpu_bank_accuracy.py [gpu/laurent-bank]
"""
import json
import sys
from pathlib import Path

import jax
import numpy as np

from symlib.core.cnn import optunet_apply
from symlib.experiments.gpu_queue import folded_steps, load_queue, load_step
from symlib.experiments.laurent.optunet import CONVERGED_ACCURACY, optunet_data
from symlib.experiments.profiles import get_profile


def current_blocks(state: Path) -> list[dict]:
    """The folded steps of the job's current version (its definition in ``queue.json`` beside
    the job's folder), in order: steps folded for an older definition are left out."""
    jobs = {j["name"]: j for j in load_queue(state.parent / "queue.json")["jobs"]}
    if state.name not in jobs:
        raise SystemExit(f"{state.parent / 'queue.json'} has no job named {state.name!r}")
    blocks = [load_step(state, i) for i in sorted(folded_steps(state, jobs[state.name]))]
    if not blocks:
        raise SystemExit(f"no folded steps of the current version of {state.name!r} in {state}")
    return blocks


def main(state: Path) -> dict:
    blocks = current_blocks(state)
    params = jax.tree_util.tree_map(lambda *a: np.concatenate(a), *[b["params"] for b in blocks])
    losses = np.concatenate([b["losses"] for b in blocks])
    d = optunet_data(get_profile("paper"))
    predict = jax.jit(jax.vmap(optunet_apply, in_axes=(0, None)))
    acc = np.concatenate([np.mean(np.asarray(predict(jax.tree_util.tree_map(lambda a: a[i:i + 64], params),
                                                      d["x_test"]).argmax(-1)) == d["y_test"][None], axis=1)
                          for i in range(0, len(losses), 64)])
    ok = acc >= CONVERGED_ACCURACY
    return {"networks": len(acc), "converged": int(ok.sum()), "converged_accuracy": CONVERGED_ACCURACY,
            "accuracy_mean_converged": round(float(acc[ok].mean()), 4), "accuracy_median": round(float(np.median(acc)), 4),
            "accuracy_min_converged": round(float(acc[ok].min()), 4), "accuracy_max": round(float(acc.max()), 4),
            "final_loss_median": round(float(np.median(losses[:, -1])), 4),
            "nonfinite_losses": int((~np.isfinite(losses)).any(axis=1).sum())}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1] if len(sys.argv) > 1 else "gpu/laurent-bank")), indent=1))
