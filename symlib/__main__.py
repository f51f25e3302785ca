"""Command line: ``python -m symlib list`` and ``python -m symlib run NAME [--profile P]``."""
from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from collections.abc import Iterator

LOG_FORMAT = "[%(name)s] %(message)s"


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (not the one at creation)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging's own convention
            self.handleError(record)


@contextlib.contextmanager
def log_to_stderr(level: int = logging.INFO) -> Iterator[logging.Handler]:
    """Show the ``symlib`` loggers' records at ``level`` and above on stderr, for the duration.

    Only the ``"symlib"`` logger is touched (not the root logger, so JAX's and other
    libraries' logging stays as it was); its level and handlers are restored afterwards.

    Args:
        level: the lowest level shown (default INFO: the artifact cache's loaded/computing lines).

    Yields:
        The handler added to the ``"symlib"`` logger.
    """
    logger = logging.getLogger("symlib")
    handler = _StderrHandler(level)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def build_parser(experiment_list: str) -> argparse.ArgumentParser:
    """The command-line parser.

    Args:
        experiment_list: one line per experiment (name and description), shown by ``run --help``.

    Returns:
        The parser with the ``list`` and ``run`` subcommands.
    """
    parser = argparse.ArgumentParser(prog="python -m symlib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments")
    run_p = sub.add_parser("run", help="compute (or load) experiments into the artifact cache",
                           description="Compute (or load) experiments into the artifact cache.",
                           epilog="experiments:\n" + "\n".join(f"  {line}" for line in experiment_list.splitlines()),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    run_p.add_argument("names", nargs="+", metavar="NAME", help="experiment names (listed below)")
    run_p.add_argument("--profile", default=None, help="quick or paper (default: $SYMLIB_PROFILE or quick)")
    run_p.add_argument("--out", default=None, metavar="DIR",
                       help="also write each experiment's summary as DIR/<name>-<profile>.json with the command, "
                            "device and date (e.g. --out book/results)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status (0); argument errors exit through argparse with status 2.
    """
    from symlib import experiments
    from symlib.experiments import results
    from symlib.experiments.cache import artifact_paths, cache_dir
    from symlib.experiments.profiles import get_profile

    parser = build_parser(experiments.describe())
    args = parser.parse_args(argv)
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
    with log_to_stderr():  # the cache's loaded/computing lines, on stderr
        for name in args.names:
            start = time.time()
            # whether this command computes the artifact or finds it (the completed-marker) in the cache
            computed = not artifact_paths(name, experiments.EXPERIMENTS[name][1](profile))[1].exists()
            result = experiments.run(name, profile)
            elapsed = time.time() - start
            print(f"{name}: done in {elapsed:.1f} s (artifact cache: {cache_dir()})")
            if args.out and name in experiments.SUMMARIES:
                path = results.save(name, profile.name, experiments.SUMMARIES[name](result.artifact), directory=args.out,
                                    command="python -m symlib " + " ".join(argv if argv is not None else sys.argv[1:]),
                                    elapsed_s=elapsed, computed=computed)
                print(f"{name}: summary written to {path}")
            elif args.out:
                print(f"{name}: has no summary to write; its artifact is in the cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
