"""The driver: :func:`run_hmc` runs the chains segment by segment from a checkpoint, into memory
or into a run directory (resumable, multi-process aware), with a progress meter."""
from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite_tree, positive_int
from symlib.core.progress import progress_bar
from symlib.core.distributed import is_writer, sync_processes
from symlib.inference.hmc.config import STATS, HMCConfig, HMCWarning
from symlib.inference.hmc.kernel import final_step_size, init_dual_averaging, init_states, run_block
from symlib.inference.hmc.store import (FORMAT_VERSION, HMCResult, Segment, concat_stats, identity_mismatch, load_npz,
                                       load_result, plan_segments, read_meta, read_verified, run_identity, save_json, save_npz,
                                       segment_file, state_file, tree_skeleton)
from symlib.inference.hmc.target import LogDensity, as_logdensity, hash_parts


def run_fingerprint(key, init_params, logdensity: Callable, cfg: HMCConfig, *, chunk_size: int = 50,
                    init_per_chain: bool | None = None) -> dict[str, Any]:
    """The identity of the run that :func:`run_hmc` makes with these arguments.

    It holds exactly what determines the stored files: the config, the chunk layout, the
    data, the initial state, the key and :data:`SAMPLER_VERSION` (not symlib's code
    version). :func:`run_hmc` records it in ``state.json`` and resumes a run in ``out_dir``
    only if it is equal, part by part.

    Args:
        key: the JAX random key of the run.
        init_params: the initial position, as for :func:`run_hmc`.
        logdensity: the target, as for :func:`run_hmc`.
        cfg: the :class:`HMCConfig`.
        chunk_size: kept samples per stored chunk.
        init_per_chain: as for :func:`run_hmc`.

    Returns:
        A JSON-serialisable dict: ``config``, ``initial_state`` and ``key`` (sha256 hex
        digests), ``data`` (``logdensity.fingerprint``: a digest of the data and settings
        for a :func:`make_logdensity` target; ``None`` for a plain function, whose data
        cannot be checked), ``chunk_size`` and ``sampler_version`` (integers).

    Raises:
        TypeError: if ``cfg`` is not an :class:`HMCConfig` or ``logdensity`` is not callable.
        ValueError: for a bad ``chunk_size`` or ``init_params`` (as :func:`run_hmc`).
    """
    run = prepare_run(key, init_params, logdensity, cfg, chunk_size, init_per_chain)
    return run_identity(cfg, run.chunk_size, key, run.positions, run.logdensity)


# --------------------------------------------------------------------------------------
# Chain state <-> host arrays
# --------------------------------------------------------------------------------------


@dataclass
class Carry:
    """Everything a block needs to continue the chains (all with a leading chain axis)."""

    state: Any  # blackjax HMCState
    da_state: Any  # dual-averaging state
    step_size: jax.Array
    iteration: int  # next global iteration
    segment: int  # next segment to run
    num_kept: int
    num_burnin_chunks: int
    num_sample_chunks: int


def carry_at(plan: list[Segment], segment: int, state, da_state, step_size) -> Carry:
    """A carry before ``plan[segment]``, its counters read off the plan."""
    done = plan[:segment]
    num_burnin_chunks = sum(seg.kind == "burnin" for seg in done)
    num_kept = sum(len(seg.blocks) for seg in done if seg.kind == "samples")
    return Carry(state, da_state, step_size, sum(seg.num_iters for seg in done), segment, num_kept,
                  num_burnin_chunks, len(done) - num_burnin_chunks)


def carry_to_host(carry: Carry) -> dict[str, np.ndarray]:
    """A checkpoint's arrays (numpy) of ``carry``: step size, log density, positions, dual averaging."""
    arrays = {"step_size": np.asarray(carry.step_size), "logdensity": np.asarray(carry.state.logdensity)}
    for i, leaf in enumerate(jax.tree_util.tree_leaves(carry.state.position)):
        arrays[f"position_{i}"] = np.asarray(leaf)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(carry.state.logdensity_grad)):
        arrays[f"grad_{i}"] = np.asarray(leaf)
    for name, value in carry.da_state._asdict().items():
        arrays[f"da_{name}"] = np.asarray(value)
    return arrays


def state_from_host(z, like_state, like_da) -> tuple:
    """(HMC state, dual-averaging state, step size) from a checkpoint's arrays."""
    treedef = jax.tree_util.tree_structure(like_state.position)
    n = treedef.num_leaves
    position = jax.tree_util.tree_unflatten(treedef, [z[f"position_{i}"] for i in range(n)])
    grad = jax.tree_util.tree_unflatten(treedef, [z[f"grad_{i}"] for i in range(n)])
    state = type(like_state)(position, z["logdensity"], grad)
    da = type(like_da)(**{name: z[f"da_{name}"] for name in like_da._fields})
    return state, da, z["step_size"]


# --------------------------------------------------------------------------------------
# run_hmc
# --------------------------------------------------------------------------------------


def reads_per_chain(init_params, num_chains: int) -> bool:
    """The guess of :func:`run_hmc` (and :func:`~symlib.inference.fit_hmc`) when ``init_per_chain``
    is not given: ``init_params`` holds one start per chain when there are several chains and
    every leaf leads with an axis of size ``num_chains``."""
    leaves = jax.tree_util.tree_leaves(init_params)
    return num_chains > 1 and bool(leaves) and all(np.ndim(a) >= 1 and np.shape(a)[0] == num_chains for a in leaves)


@contextlib.contextmanager
def per_chain_guess(guessed: bool, num_chains: int, name: str) -> Iterator[None]:
    """Where the starts were guessed to be one per chain (:func:`reads_per_chain`), re-raise a
    ``ValueError`` or ``TypeError`` of the block as a ``ValueError`` that names that reading
    and ``init_per_chain=False``; otherwise let it through."""
    try:
        yield
    except (TypeError, ValueError) as err:
        if not guessed:
            raise
        raise ValueError(f"{name} was read as one start per chain, since every leaf leads with an axis of size "
                         f"num_chains={num_chains}; if it is one start for all chains, pass init_per_chain=False. "
                         f"{type(err).__name__}: {err}") from err


def chain_positions(init_params, num_chains: int, init_per_chain: bool | None):
    """Initial positions with a leading chain axis (see :func:`run_hmc`)."""
    leaves = jax.tree_util.tree_leaves(init_params)
    if not leaves:
        raise ValueError("init_params has no array leaves")
    check_finite_tree(init_params, "init_params")
    leaves = [jnp.asarray(a) for a in leaves]
    if init_per_chain is None:
        init_per_chain = reads_per_chain(init_params, num_chains)
    if init_per_chain:
        bad = [a.shape for a in leaves if a.ndim == 0 or a.shape[0] != num_chains]
        if bad:
            raise ValueError(f"init_per_chain=True needs a leading axis of size {num_chains} on every leaf, "
                             f"got shapes {bad}")
        return jax.tree.map(jnp.asarray, init_params)
    return jax.tree.map(lambda a: jnp.broadcast_to(jnp.asarray(a), (num_chains, *jnp.shape(a))), init_params)


def per_chain_keys(key, num_chains: int) -> jax.Array:
    """One key per chain: ``key`` folded with the chain index."""
    return jax.vmap(lambda c: jax.random.fold_in(key, c))(jnp.arange(num_chains))


def strong_types(tree):
    """Device arrays with strong (not weak) types, as after a round trip through numpy, so
    that fresh and resumed runs hit the same compiled programs."""
    return jax.tree.map(lambda a: jnp.asarray(np.asarray(a)), tree)


@dataclass
class Run:
    """The validated arguments of :func:`run_hmc`."""

    cfg: HMCConfig
    chunk_size: int
    logdensity: LogDensity
    positions: Any  # initial positions, leading chain axis
    plan: list[Segment]

    @property
    def like(self):
        """The initial position of the first chain: the structure of one sample."""
        return jax.tree.map(lambda a: a[0], self.positions)

    def fresh_carry(self) -> Carry:
        """The carry before the first iteration."""
        state = init_states(self.logdensity, self.logdensity.replicate(self.positions))
        step_size = jnp.full((self.cfg.num_chains,), self.cfg.step_size, jnp.float32)
        da_state = init_dual_averaging(step_size, self.cfg.target_accept)
        return carry_at(self.plan, 0, *strong_types((state, da_state, step_size)))


def prepare_run(key, init_params, logdensity, cfg, chunk_size, init_per_chain) -> Run:
    """The validated arguments of :func:`run_hmc`, with the initial positions and the segment plan."""
    if not isinstance(cfg, HMCConfig):
        raise TypeError(f"cfg must be an HMCConfig, got {type(cfg).__name__}")
    chunk_size = positive_int(chunk_size, "chunk_size")
    positions = chain_positions(init_params, cfg.num_chains, init_per_chain)
    return Run(cfg, chunk_size, as_logdensity(logdensity), positions, plan_segments(cfg, chunk_size))


class Sink(Protocol):
    """Where :func:`run_hmc` hands the chains, segment by segment (``run_hmc(..., sink=)``).

    A sink is made for one prepared :class:`Run` (the validated arguments, the initial
    positions and the segment plan). :meth:`open` gives the carry to start from (a fresh
    one, or a checkpoint when the sink resumes a stored run); :meth:`store` receives each
    segment's last carry, its per-iteration statistics (:data:`STATS`, arrays
    ``(chains, iterations)``) and its kept samples (a pytree with leading axes
    ``(chains, k)``, or None during burn-in); :meth:`result` turns the final carry into
    what :func:`run_hmc` returns (an :class:`HMCResult` for the built-in sinks, which
    :func:`run_hmc` then checks for a bad step size; a summary of a sink's own).
    :class:`InMemorySink` (the default) keeps everything in memory, :class:`RunDirSink`
    (``out_dir=``) writes checksummed chunks and checkpoints.

    A sink may also define ``proceed(seg, carry) -> bool``, asked before each segment: on
    ``False`` the run stops there and :meth:`result` gets the carry of the last segment run
    (a run cut into pieces, e.g. to fit a time budget, that a later call continues from what
    the sink stored; :mod:`symlib.experiments.xiao.hmc_pieces` is such a sink).
    """

    def open(self) -> Carry: ...

    def store(self, seg: Segment, carry: Carry, stats: dict, kept) -> None: ...

    def result(self, carry: Carry) -> Any: ...


class InMemorySink:
    """Where a run without ``out_dir`` keeps its statistics and samples (a :class:`Sink`)."""

    def __init__(self, run: Run):
        self.run, self.stats, self.kept = run, {k: [] for k in STATS}, []

    def open(self) -> Carry:
        return self.run.fresh_carry()

    def store(self, seg: Segment, carry: Carry, stats: dict, kept) -> None:
        for k in STATS:
            self.stats[k].append(stats[k])
        if kept is not None:
            self.kept.append(kept)

    def result(self, carry: Carry) -> HMCResult:
        samples = jax.tree.map(lambda *a: np.concatenate(a, axis=1), *self.kept)
        cfg = self.run.cfg
        return HMCResult(samples, concat_stats(self.stats, cfg.num_chains), np.asarray(carry.step_size), cfg)


class RunDirSink:
    """A run stored in ``out_dir``: opens (or resumes) it, writes chunks and checkpoints
    with their checksums, and loads the result.

    With several processes (a shared ``out_dir``) every process reads the stored run, only
    process 0 (:func:`~symlib.core.distributed.is_writer`) writes, and the others wait
    at a barrier after every checkpoint until it is on disk."""

    def __init__(self, path: Path, run: Run, key):
        self.path, self.run = path, run
        self.identity = run_identity(run.cfg, run.chunk_size, key, run.positions, run.logdensity)
        self.run_hash = hash_parts(json.dumps(self.identity, sort_keys=True))
        self.structure = tree_skeleton(run.like)
        self.checksums: dict[str, str] = {}

    def open(self) -> Carry:
        """The carry to continue from: a fresh one for a new run, else the latest usable checkpoint."""
        self.path.mkdir(parents=True, exist_ok=True)
        meta = read_meta(self.path)
        fresh = self.run.fresh_carry()
        if meta is None:
            self._refuse_leftovers()
            sync_processes("symlib.hmc.open")  # every process has looked before process 0 writes
            self.checkpoint(fresh)
            return fresh
        mismatch = identity_mismatch(self.path, meta, self.identity, self.run.cfg)
        if mismatch:
            raise ValueError(mismatch)
        segment = self._resume_point(meta)
        plan = self.run.plan
        keep = {segment_file(seg) for seg in plan[:segment]} | {state_file(i) for i in range(segment + 1)}
        self.checksums = {name: sha for name, sha in meta["checksums"].items() if name in keep}
        carry = fresh
        if segment > 0:
            with load_npz(self.path, state_file(segment), meta) as z:
                state = state_from_host(z, fresh.state, fresh.da_state)
            carry = carry_at(plan, segment, *strong_types(state))
        sync_processes("symlib.hmc.open")  # every process has read the stored run before process 0 writes
        return carry

    def _refuse_leftovers(self) -> None:
        leftovers = sorted(p.name for pattern in ("samples_*.npz", "burnin_*.npz", "state_*.npz")
                           for p in self.path.glob(pattern))
        if leftovers:
            raise ValueError(f"{self.path} holds HMC files ({leftovers[0]}, ...) but no state.json; refusing to "
                             "overwrite them: choose another out_dir or delete that directory")

    def _resume_point(self, meta: dict) -> int:
        """The segment to continue from: the latest checkpoint, or the one before the first
        deleted file. Checks every stored file before it against its checksum."""
        done = min(meta["next_segment"], len(self.run.plan))
        for i, seg in enumerate(self.run.plan[:done]):
            path = self.path / segment_file(seg)
            if not path.exists():
                done = i
                break
            read_verified(path, meta["checksums"])
        while done > 0 and not (self.path / state_file(done)).exists():
            done -= 1
        return done

    def store(self, seg: Segment, carry: Carry, stats: dict, kept) -> None:
        """Write the segment's file, then the checkpoint after it."""
        if is_writer():
            arrays = dict(stats, first_iteration=np.int64(seg.start), run_hash=np.str_(self.run_hash))
            if kept is not None:
                arrays.update({f"leaf_{i}": leaf for i, leaf in enumerate(jax.tree_util.tree_leaves(kept))})
            self.checksums[segment_file(seg)] = save_npz(self.path / segment_file(seg), arrays)
        self.checkpoint(carry)

    def checkpoint(self, carry: Carry) -> None:
        """Write ``state_<segment>.npz``, then point ``state.json`` at it (process 0 only;
        every process returns once it is written)."""
        if is_writer():
            self._write_checkpoint(carry)
        sync_processes(f"symlib.hmc.checkpoint.{carry.segment}")

    def _write_checkpoint(self, carry: Carry) -> None:
        name = state_file(carry.segment)
        self.checksums[name] = save_npz(self.path / name, carry_to_host(carry))
        cfg = self.run.cfg
        meta = {
            "format_version": FORMAT_VERSION,
            "identity": self.identity,
            "run_hash": self.run_hash,
            "config": cfg.to_dict(),
            "chunk_size": self.run.chunk_size,
            "iteration": carry.iteration,
            "next_segment": carry.segment,
            "num_kept": carry.num_kept,
            "num_burnin_chunks": carry.num_burnin_chunks,
            "num_sample_chunks": carry.num_sample_chunks,
            "num_leaves": len(jax.tree_util.tree_leaves(carry.state.position)),
            "structure": self.structure,
            "state_file": name,
            "complete": carry.iteration == cfg.num_iterations,
            "checksums": dict(sorted(self.checksums.items())),
        }
        save_json(self.path / "state.json", meta)

    def result(self, carry: Carry) -> HMCResult:
        return load_result(self.path, like=self.run.like)


class ProgressMeter:
    """Advances the progress bar block by block and shows the running mean acceptance. It
    reads the acceptance back from the device only when the bar is shown."""

    def __init__(self, total: int, done: int, enabled: bool | None):
        self.bar = progress_bar(total, "hmc", enabled=enabled, initial=done, unit="it")
        self.acc_sum, self.acc_count = 0.0, 0

    def update(self, acceptance, num_iters: int) -> None:
        if self.bar.disable:
            return
        acc = np.asarray(acceptance)[:, :num_iters]
        self.acc_sum, self.acc_count = self.acc_sum + float(acc.sum()), self.acc_count + acc.size
        self.bar.set_postfix_str(f"acc={self.acc_sum / self.acc_count:.3f}", refresh=False)
        self.bar.update(num_iters)

    def close(self) -> None:
        self.bar.close()


def run_segment(seg: Segment, carry: Carry, logdensity, chain_keys, cfg: HMCConfig, meter: ProgressMeter):
    """Run one segment's blocks; returns the new carry, host stats and host samples (or None)."""
    adapt = cfg.adapt_step_size and seg.kind == "burnin"
    if cfg.adapt_step_size and seg.kind == "samples" and carry.iteration == cfg.num_burnin:
        # freeze the adapted step size, in the carry's dtype (the adaptation's is float64 under x64)
        carry.step_size = final_step_size(carry.da_state).astype(carry.step_size.dtype)
    stats, kept, t = [], [], carry.iteration
    for n in seg.blocks:
        state, da, eps, st = run_block(logdensity, carry.state, carry.da_state, carry.step_size, chain_keys,
                                        np.int32(t), np.int32(n), np.bool_(adapt), block_len=cfg.thin,
                                        num_leapfrog=cfg.num_leapfrog, target_accept=float(cfg.target_accept),
                                        step_size_jitter=float(cfg.step_size_jitter),
                                        num_leapfrog_jitter=int(cfg.num_leapfrog_jitter))
        carry.state, carry.da_state, carry.step_size = state, da, eps
        t += n
        stats.append((st, n))
        if seg.kind == "samples":
            kept.append(state.position)
        meter.update(st[0], n)
    host_stats = {k: np.concatenate([np.asarray(s[i])[:, :n] for s, n in stats], axis=1) for i, k in enumerate(STATS)}
    host_kept = jax.tree.map(lambda *a: np.stack([np.asarray(x) for x in a], axis=1), *kept) if kept else None
    carry.iteration, carry.segment = t, carry.segment + 1
    if seg.kind == "samples":
        carry.num_kept += len(kept)
        carry.num_sample_chunks += 1
    else:
        carry.num_burnin_chunks += 1
    return carry, host_stats, host_kept


def _sample(run: Run, carry: Carry, chain_keys, sink, progress: bool | None, on_chunk) -> Carry:
    """Run the remaining segments of the plan, handing each to ``sink``."""
    # the same placement for fresh and resumed runs (and as the blocks' outputs): one compiled program
    carry.state, carry.da_state, carry.step_size, chain_keys = run.logdensity.replicate(
        (carry.state, carry.da_state, carry.step_size, chain_keys))
    meter = ProgressMeter(run.cfg.num_iterations, carry.iteration, progress if is_writer() else False)
    try:
        proceed = getattr(sink, "proceed", None)
        for seg in run.plan[carry.segment:]:
            if proceed is not None and not proceed(seg, carry):
                break
            carry, stats, kept = run_segment(seg, carry, run.logdensity, chain_keys, run.cfg, meter)
            sink.store(seg, carry, stats, kept)
            if on_chunk is not None:
                on_chunk({"kind": seg.kind, "index": seg.index, "iteration": carry.iteration})
    finally:
        meter.close()
    return carry


def run_hmc(key, init_params, logdensity: Callable, cfg: HMCConfig, *, out_dir=None, chunk_size: int = 50,
            progress: bool | None = None, init_per_chain: bool | None = None,
            on_chunk: Callable[[dict], None] | None = None, sink: Callable[[Run], Sink] | None = None) -> HMCResult:
    """Sample ``logdensity`` (any function of a pytree) with HMC; see the module docstring.

    Emits :class:`HMCWarning` for low or high acceptance or for divergences after the run.

    Args:
        key: JAX random key; chain ``c`` uses ``fold_in(key, c)``.
        init_params: the initial position, a pytree of finite arrays. If every leaf has a
            leading axis of size ``cfg.num_chains`` (and ``num_chains > 1``) it is taken as
            one start per chain, otherwise all chains start from it.
        logdensity: the log density, a :class:`LogDensity` (see :func:`make_logdensity`)
            or any function of a pytree.
        cfg: the :class:`HMCConfig`.
        out_dir: store samples and checkpoints there every ``chunk_size`` kept samples and
            resume from it if it already holds this run (same :func:`run_fingerprint`).
        chunk_size: kept samples per stored chunk.
        progress: show a progress bar on stderr (default: only if stderr is a terminal).
        init_per_chain: force reading ``init_params`` as one start per chain (``True``)
            or as one start for all chains (``False``).
        on_chunk: called as ``on_chunk(info)`` after each chunk is stored, with ``info``
            holding ``kind``, ``index`` and ``iteration``.
        sink: ``sink(run) -> Sink``, where the chains go instead of memory or ``out_dir``
            (e.g. running summaries that never keep the samples); not with ``out_dir``.

    Returns:
        An :class:`HMCResult` (with ``out_dir`` its samples are read from disk when first
        used), or the ``result`` of a ``sink`` of one's own.

    Raises:
        TypeError: if ``cfg`` is not an :class:`HMCConfig` or ``logdensity`` is not callable.
        ValueError: naming the leaf, if ``init_params`` holds NaN or inf; for a bad
            ``chunk_size`` or per-chain layout; if ``out_dir`` holds another run (naming what
            differs) or stray HMC files; if the log density fails on starts guessed to be one
            per chain (naming that reading and ``init_per_chain=False``).
        CorruptRunError: naming a stored file that is missing, truncated, damaged or
            without checksum (delete it and call again to recompute it).
    """
    run = prepare_run(key, init_params, logdensity, cfg, chunk_size, init_per_chain)
    chain_keys = per_chain_keys(key, cfg.num_chains)
    if sink is not None and out_dir is not None:
        raise ValueError("give out_dir or sink, not both (RunDirSink is the sink of out_dir)")
    if sink is not None:
        to = sink(run)
    else:
        to = InMemorySink(run) if out_dir is None else RunDirSink(Path(out_dir), run, key)
    guessed = init_per_chain is None and reads_per_chain(init_params, cfg.num_chains)
    with per_chain_guess(guessed, cfg.num_chains, "init_params"):  # the first call of the log density
        start = to.open()
    carry = _sample(run, start, chain_keys, to, progress, on_chunk)
    result = to.result(carry)
    if isinstance(result, HMCResult):
        for msg in result.warning_messages():
            warnings.warn(msg, HMCWarning, stacklevel=2)
    return result
