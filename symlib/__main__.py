"""Command line: ``python -m symlib list``, ``python -m symlib run NAME [--profile P]``,
``python -m symlib hmc-piece --state DIR [--minutes M]`` (Xiao et al.'s HMC in pieces) and
``python -m symlib gpu prepare|next|fold|install|status`` (the GPU queue)."""
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


def _positive_float(text: str) -> float:
    """``text`` as a finite number above 0 (an argparse ``type``: anything else is a usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    """``text`` as an integer of at least 1 (an argparse ``type``: anything else is a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser(experiment_list: str) -> argparse.ArgumentParser:
    """The command-line parser.

    Args:
        experiment_list: one line per experiment (name and description), shown by ``run --help``.

    Returns:
        The parser with the ``list``, ``run`` and ``hmc-piece`` subcommands.
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
    run_p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", dest="overrides",
                       help="replace a profile field (repeatable), for a run that fits only at a smaller size; "
                            "needs --label")
    run_p.add_argument("--label", default=None,
                       help="the name of the reduced profile made by --set, starting with the base profile's name "
                            "and a dash (e.g. paper-2runs); results are saved as <name>-<label>.json")
    piece = sub.add_parser(
        "hmc-piece", help="advance Xiao et al.'s HMC run by one piece (state and summaries in DIR)",
        description="Advance Xiao et al.'s full-batch HMC (the hmc experiment's settings, CHAINS x SAMPLES kept "
                    "samples) by one piece of at most MINUTES, folding every kept sample into running summaries "
                    "(q_d, q_r, the test predictive, diagnostics) kept in DIR; run it again to continue. "
                    "See book/running.md, 'HMC at paper scale, in pieces'.")
    piece.add_argument("--state", required=True, metavar="DIR", help="the state directory (created on the first piece)")
    piece.add_argument("--profile", default=None, help="quick or paper (default: $SYMLIB_PROFILE or quick)")
    piece.add_argument("--minutes", type=_positive_float, default=9.0,
                       help="wall time of this piece, process start included (default 9)")
    piece.add_argument("--chains", type=_positive_int, default=None, help="chains (default 2)")
    piece.add_argument("--samples", type=_positive_int, default=None, help="kept samples per chain (default 500)")
    piece.add_argument("--chunk-size", type=_positive_int, default=None, help="kept samples per segment (default 5)")
    piece.add_argument("--out", default=None, metavar="DIR",
                       help="once the run is complete, write its summary as DIR/hmc_pieces-<profile>.json")
    piece.add_argument("--status", action="store_true",
                       help="only check the state against its checksum and print its progress and pieces")
    piece.add_argument("--summarize", action="store_true",
                       help="do not advance: write the summary of the samples kept so far to --out (a labelled "
                            "reduction until the run is complete)")
    gpu = sub.add_parser("gpu", help="the GPU queue: prepare the carry, run the next steps, fold what came back",
                         description="The GPU queue (gpu/queue.json; symlib.experiments.gpu_queue): the papers' "
                                     "headline runs in order, advanced one resumable step at a time on a lent GPU. "
                                     "See book/running.md, 'The GPU queue'.")
    gsub = gpu.add_subparsers(dest="gpu_command", required=True)
    g_prep = gsub.add_parser("prepare", help="here: data, wheels and the commit into .gpu-carry/")
    g_prep.add_argument("--data-dir", default=None, help="folder with mnist/ and fashion_mnist/ (default: "
                                                        "$SYMLIB_DATA_DIR, then the data cache)")
    g_prep.add_argument("--no-wheels", action="store_true", help="skip downloading the device's wheels")
    g_prep.add_argument("--datasets", nargs="+", default=["mnist", "fashion_mnist"],
                        help="the datasets to carry (default both; the carry and the tree travel within 64 MiB)")
    g_next = gsub.add_parser("next", help="on the device: the first unfinished job's next steps within MINUTES")
    g_next.add_argument("--minutes", type=_positive_float, required=True, help="wall time of this call, process start included")
    g_next.add_argument("--out", required=True, metavar="DIR", help="where the steps are written as they finish ($OUT)")
    g_next.add_argument("--job", default=None, help="run this job instead of the first unfinished one")
    g_next.add_argument("--here", action="store_true", help="the first unfinished job that runs on this machine "
                                                            "(\"where\": \"here\"), not on the device")
    g_fold = gsub.add_parser("fold", help="here: fold a device call's return into the queue and book/results")
    g_fold.add_argument("returned", metavar="DIR", help="the folder the device call's files came back in")
    g_fold.add_argument("--results", default=None, metavar="DIR", help="where saved results go (default book/results)")
    g_inst = gsub.add_parser("install", help="here: the folded steps of blocks jobs into the artifact cache, "
                                             "where `run` finds them (for a reduction of an unfinished job)")
    g_inst.add_argument("jobs", nargs="*", metavar="JOB", help="the jobs (default: every blocks job)")
    g_stat = gsub.add_parser("status", help="each job's steps, GPU-minutes spent and left")
    for p in (g_prep, g_next, g_fold, g_inst, g_stat):
        p.add_argument("--queue", default="gpu/queue.json", help="the queue file (default gpu/queue.json)")
    return parser


def _gpu(args, argv: list[str] | None, started: float) -> int:
    """The ``gpu`` commands (see :func:`build_parser`)."""
    from pathlib import Path

    from symlib.experiments import gpu_device, gpu_queue

    queue = Path(args.queue)
    try:
        if args.gpu_command == "prepare":
            carry = gpu_queue.prepare(queue.resolve().parent.parent, args.data_dir, wheels=not args.no_wheels,
                                      datasets=tuple(args.datasets), queue_path=queue)
            sizes = gpu_queue.travelling(carry.parent)
            print(f"prepared {carry}: carry it ('{gpu_queue.CARRY}') in the device call; book/running.md gives the call "
                  f"(what travels: the tree {sizes['tree'] / 2**20:.1f} MiB and the carry "
                  f"{sizes['carry'] / 2**20:.1f} MiB, of {gpu_queue.TRAVEL_BYTES >> 20} MiB)")
        elif args.gpu_command == "next":
            command = "python -m symlib " + " ".join(argv if argv is not None else sys.argv[1:])
            gpu_device.next_steps(queue, Path(args.out), args.minutes, started=started, command=command,
                                  job_name=args.job, here=args.here)
        elif args.gpu_command == "fold":
            counts = gpu_queue.fold(Path(args.returned), queue, args.results)
            print(f"folded: {counts['new']} new step(s), {counts['already']} already there, "
                  f"{counts['results']} saved result(s), {counts['stopped']} step(s) stopped with the call")
        elif args.gpu_command == "install":
            for name, count in gpu_queue.install(queue, args.jobs).items():
                print(f"{name}: {count} folded step(s) in the artifact cache")
        if args.gpu_command in ("fold", "status"):
            print("\n".join(gpu_queue.status_lines(queue)))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def _hmc_piece(args, argv: list[str] | None, started: float) -> int:
    """The ``hmc-piece`` command (see :func:`build_parser`)."""
    import jax

    from symlib.experiments.xiao.hmc_pieces import advance, state_nbytes
    from symlib.experiments import xiao
    from symlib.experiments.profiles import get_profile

    if args.status:
        from symlib.experiments.xiao.hmc_pieces import load_state

        try:
            meta, _ = load_state(args.state)
        except (FileNotFoundError, ValueError) as err:  # no state there, or a damaged one
            print(f"error: {err}", file=sys.stderr)
            return 1
        cfg = meta["config"]
        print(f"{args.state}: iteration {meta['iteration']} of {cfg['num_burnin'] + cfg['num_samples'] * cfg['thin']}, "
              f"{meta['num_kept']}/{cfg['num_samples']} samples per chain ({cfg['num_chains']} chains), "
              f"{'complete' if meta['complete'] else 'not complete'}; checksum ok")
        for p in meta["pieces"]:
            print(f"  {p['date']}  iterations {p['start_iteration']}-{p['end_iteration']}  {p['elapsed_s']} s  "
                  f"{p['device']}")
        return 0
    profile = get_profile(args.profile)
    if args.summarize:
        if not args.out:
            print("error: --summarize writes to --out DIR: give it", file=sys.stderr)
            return 1
        try:
            _save_piece_summary(profile, args.state, args.out, "python -m symlib " + " ".join(
                argv if argv is not None else sys.argv[1:]))
        except (FileNotFoundError, ValueError) as err:  # no state there, or a damaged one
            print(f"error: {err}", file=sys.stderr)
            return 1
        return 0
    chains = xiao.PIECES_CHAINS if args.chains is None else args.chains
    samples = xiao.PIECES_SAMPLES if args.samples is None else args.samples
    chunk_size = xiao.PIECES_CHUNK if args.chunk_size is None else args.chunk_size
    run = xiao.hmc_pieces_run(profile, chains, samples, chunk_size)
    command = "python -m symlib " + " ".join(argv if argv is not None else sys.argv[1:])
    cfg = run.cfg
    like = jax.tree_util.tree_map(lambda a: a[0], run.init_params)
    size = state_nbytes(like, cfg, len(run.y_test), methods=run.methods) / 1e6
    print(f"{profile.describe()}\nHMC in pieces: {cfg.num_chains} chains x {cfg.num_samples} samples, "
          f"{cfg.num_iterations} iterations of {cfg.num_leapfrog} leapfrog steps per chain; state in {args.state} "
          f"(at most {size:.1f} MB)", flush=True)
    prog = advance(args.state, run, budget_seconds=60 * args.minutes, started=started, command=command)
    print(prog)
    if not prog.complete and prog.remaining_seconds is not None:
        pieces = prog.remaining_seconds / max(60 * args.minutes - 60.0, 60.0)
        print(f"left: about {prog.remaining_seconds / 60:.1f} min of sampling at this piece's rate, "
              f"about {int(pieces) + 1} more piece(s) of {args.minutes:g} min (an estimate)")
    if prog.complete and args.out:
        _save_piece_summary(profile, args.state, args.out, command)
    return 0


def _save_piece_summary(profile, state, out, command: str) -> None:
    """Table 1's HMC columns of a pieced run's samples so far, saved as ``out/hmc_pieces-<profile>.json``
    (its scale is read from the samples kept: ``judging.scales``)."""
    from symlib.experiments import xiao
    from symlib.experiments.judging import results

    summary = xiao.hmc_pieces_summary(profile, state)
    elapsed = sum(p["elapsed_s"] for p in summary["pieces"])
    path = results.save("hmc_pieces", profile.name, summary, directory=out, command=command, elapsed_s=elapsed)
    prog = summary["progress"]
    print(f"summary of {prog['num_kept']} of {prog['num_samples']} kept samples per chain "
          f"({'complete' if prog['complete'] else 'not complete'}) written to {path}")


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status (0); argument errors exit through argparse with status 2.
    """
    from symlib import experiments
    from symlib.experiments.judging import results
    from symlib.experiments.cache import COMPUTED, STEPS_RUN, cache_dir, cache_key
    from symlib.experiments.profiles import get_profile, reduced

    started = time.time()
    parser = build_parser(experiments.describe())
    args = parser.parse_args(argv)
    if args.command == "gpu":
        return _gpu(args, argv, started)
    if args.command == "hmc-piece":
        try:
            get_profile(args.profile)
        except ValueError as err:
            parser.error(str(err))
        return _hmc_piece(args, argv, started)
    if args.command == "list":
        print(experiments.describe())
        return 0
    try:
        profile = get_profile(args.profile)
        if args.overrides or args.label:
            if not (args.overrides and args.label):
                raise ValueError("--set and --label go together: a reduced run must be labelled as such")
            profile = reduced(profile, args.overrides, args.label)
        unknown = [n for n in args.names if n not in experiments.EXPERIMENTS]
        if unknown:
            raise ValueError(f"unknown experiment(s) {unknown}; see `python -m symlib list`")
    except ValueError as err:
        parser.error(str(err))
    print(profile.describe())
    with log_to_stderr():  # the cache's loaded/computing lines, on stderr
        for name in args.names:
            start = time.time()
            # whether this command computed the artifact (a damaged one recomputed included) or loaded it
            key = cache_key(name, experiments.EXPERIMENTS[name].config_of(profile))
            COMPUTED.discard(key)
            STEPS_RUN.pop(name, None)
            result = experiments.run(name, profile)
            computed = key in COMPUTED
            elapsed = time.time() - start
            print(f"{name}: done in {elapsed:.1f} s (artifact cache: {cache_dir()})")
            if args.out and name in experiments.SUMMARIES:
                path = results.save(name, profile.name, experiments.SUMMARIES[name](result.artifact), directory=args.out,
                                    command="python -m symlib " + " ".join(argv if argv is not None else sys.argv[1:]),
                                    elapsed_s=elapsed, computed=computed, steps=STEPS_RUN.get(name))
                print(f"{name}: summary written to {path}")
            elif args.out:
                print(f"{name}: has no summary to write; its artifact is in the cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
