"""Rossi et al. Sec. 5.1 at the paper's 1,000 training epochs, one posterior pair per
(dataset, width), each step written to OUT as soon as it is done, so that a device call that
runs out of time keeps its finished steps (the artifact cache's step files hold the fitted
posteriors, too large to come back from a lent machine).

    python scripts/gpu_vi_epochs.py run OUT [--epochs 1000] [--widths 128 1024] [--pair 0]
    python scripts/gpu_vi_epochs.py assemble STEPS_DIR LABEL [--device TEXT] [--results book/results]

Pair k uses the seeds of pair k of the ``vi_alignment`` paper profile, so each step is a
paired comparison with that run's 100-epoch fit. ``assemble`` gathers the step files into one
saved result, ``vi_alignment-<LABEL>.json``, whose summary is the experiment's own
(``_align_summary``), so the claims and chapter 07 read it like any other run."""
import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

from symlib.experiments.profiles import get_profile
from symlib.experiments.rossi import ALIGN_DATASETS
from symlib.experiments.judging import results
from symlib.experiments.cache import code_version
from symlib.experiments.judging.results import device_description
from symlib.experiments.registry import SUMMARIES
from symlib.experiments.rossi.runs import fit_and_align_pair
from symlib.experiments.registry import load_align_data


def run_steps(args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    profile = dataclasses.replace(get_profile("paper"), align_epochs=args.epochs)
    for dataset in ALIGN_DATASETS:
        data = load_align_data(profile, dataset)
        for width in args.widths:
            start = time.perf_counter()
            entry = fit_and_align_pair(profile, data, width, args.pair)
            entry.pop("posteriors")
            record = {"dataset": dataset, "width": width, "pair": args.pair, "epochs": args.epochs,
                      "seconds": time.perf_counter() - start, "device": device_description(),
                      "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                      "command": " ".join(["python", *sys.argv]), "jax": jax.__version__, "symlib_version": code_version(),
                      "python": platform.python_version(), "entry": results.jsonable(entry)}
            (args.out / f"{dataset}-w{width}-pair{args.pair}-e{args.epochs}.json").write_text(json.dumps(record))
            print(dataset, width, f"{record['seconds']:.0f} s", {k: round(v, 3) for k, v in entry["barrier"]["marginal"].items()},
                  "elbo", np.asarray(entry["elbo_final"]).round(3), flush=True)


def _versions(records: list[dict], symlib_version: str | None) -> dict[str, str]:
    """The one symlib, Python and JAX version of all the step files."""
    out = {}
    for key in ("symlib_version", "python", "jax"):
        found = {r[key] for r in records if key in r} or ({symlib_version} if key == "symlib_version" and symlib_version
                                                         else set())
        if len(found) != 1:
            raise SystemExit(f"the step files have {len(found)} values of {key} ({sorted(found)}); "
                             + ("pass --symlib-version" if not found and key == "symlib_version" else "assemble one run"))
        out[key] = found.pop()
    return out


def assemble(args: argparse.Namespace) -> None:
    records = [json.loads(p.read_text()) for p in sorted(args.steps.glob("*.json"))]
    if not records:
        raise SystemExit(f"no step files in {args.steps}")
    epochs = {r["epochs"] for r in records}
    if len(epochs) != 1:
        raise SystemExit(f"the step files mix training lengths {sorted(epochs)}; assemble one length at a time")
    artifact: dict = {}
    for r in records:
        artifact.setdefault(r["dataset"], {}).setdefault(f"w{r['width']}", {})[f"pair{r['pair']}"] = r["entry"]
    commands = sorted({r["command"] for r in records})
    path = results.save("vi_alignment", args.label, SUMMARIES["vi_alignment"](artifact),
                        command=" ; ".join(commands), directory=args.results,
                        elapsed_s=sum(r["seconds"] for r in records), computed=True,
                        steps={"computed": len(records), "loaded": 0},
                        device=args.device or records[0]["device"], date=min(r["date"] for r in records)[:10],
                        versions=_versions(records, args.symlib_version))
    print(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run", help="fit, align and evaluate the pairs, one file per step")
    r.add_argument("out", type=Path)
    r.add_argument("--epochs", type=int, default=1000)
    r.add_argument("--widths", type=int, nargs="+", default=[128, 1024])
    r.add_argument("--pair", type=int, default=0)
    a = sub.add_parser("assemble", help="gather step files into one saved result")
    a.add_argument("steps", type=Path)
    a.add_argument("label", help="the profile label, e.g. paper-1000epochs-2pairs")
    a.add_argument("--device", help="the device, when the step files predate device_description")
    a.add_argument("--symlib-version", help="the symlib version, when the step files predate recording it")
    a.add_argument("--results", type=Path, default=None)
    args = ap.parse_args()
    (run_steps if args.what == "run" else assemble)(args)


if __name__ == "__main__":
    main()
