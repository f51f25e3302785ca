"""Command line: ``python -m symlib list`` and ``python -m symlib run NAME [--profile P]``."""
from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symlib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments")
    run_p = sub.add_parser("run", help="compute (or load) experiments into the artifact cache")
    run_p.add_argument("names", nargs="+", help="experiment names (see `list`)")
    run_p.add_argument("--profile", default=None, help="quick or paper (default: $SYMLIB_PROFILE or quick)")
    args = parser.parse_args(argv)

    from . import experiments
    from .config import get_profile

    if args.command == "list":
        print(experiments.describe())
        return 0
    try:
        profile = get_profile(args.profile)
        unknown = [n for n in args.names if n not in experiments.EXPERIMENTS]
        if unknown:
            raise ValueError(f"unknown experiment(s) {unknown}; see `python -m symlib list`")
    except ValueError as err:
        parser.error(str(err))
    print(profile.describe())
    for name in args.names:
        start = time.time()
        experiments.run(name, profile)
        print(f"{name}: done in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
