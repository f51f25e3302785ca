"""Full-batch HMC at paper scale, in pieces whose carried state holds summaries, not samples.

Xiao et al.'s HMC (500 leapfrog steps per iteration, 600 burn-in iterations, one sample kept
every 10, 2 chains x 500 samples of a 407k-parameter MLP on 50,000 images) is millions of
full-batch gradients: hours of GPU time, while a GPU may be lent for ten minutes at a time.
:func:`advance` runs the next piece of such a run and stops when its time is up; between
pieces everything lives in a small *state directory* that can be copied from machine to
machine. It never stores the samples (1,000 x 407k floats, 1.6 GB): every kept sample is
folded into running summaries as soon as it is drawn, then dropped:

* **chain state**: positions, log densities, gradients, step sizes and dual-averaging state
  of every chain (the checkpoint of :func:`symlib.inference.hmc.run_hmc`), and the progress
  counters;
* **q_d**: per-chain running mean and ``M2`` (float64, :class:`~symlib.evaluation.running.RunningMoments`)
  of the raw samples; their merge is the direct summary, and matching the chains' means
  gives the one-permutation-per-chain q_r;
* **q_r**: every sample is matched to a reference fixed at the first kept sample of chain 0
  (stored in the state) by weight matching (:func:`~symlib.symmetry.matching.weight_matching_many`,
  key ``match_key``) and, when inputs ``x_match`` are given, by activation matching (Xiao
  et al.'s rebasin, :func:`~symlib.symmetry.matching.activation_matching`) and folded into
  one running mean and ``M2`` per method; the permutation found for every sample is kept;
* **predictive sums**: the float64 sum over samples of every sample's softmax
  probabilities on the test set, so the HMC predictive (and the agreement, total
  variation and accuracy of Table 1, which compare other predictives with it) is exact;
  per sample, the mean test log-likelihood and the true-class probability at
  ``num_points`` evenly spaced test points (R-hat and ESS as
  :func:`symlib.inference.diagnostics.function_space_diagnostics` computes them);
* **diagnostics**: the per-iteration acceptance rate, divergence flag and energy error,
  the log density of every kept sample and of every chain at the end of every segment
  (a trace thinned to one value per segment through burn-in).

A piece *is* :func:`symlib.inference.hmc.run_hmc` with a summary sink (:class:`PiecedSink`:
it opens the state, folds every segment, writes the state and stops the run before a segment
that would not fit the piece), so the chains are those of ``run_hmc`` with the same key, initial
state, target, config and ``chunk_size``: the same compiled blocks (``thin`` iterations
each) in the same segments (``chunk_size`` blocks each), so the draws are identical and
:func:`summaries` equals the summaries of ``run_hmc``'s stored samples
(:func:`~symlib.evaluation.summaries.direct_summary`, ``rebasin_summary`` with reference 0,
``grouped_rebasin_summary`` by chain, ``predict_from_samples``) to float rounding, however
the run is cut into pieces. A piece ends at a segment boundary, so choose ``chunk_size``
so that one segment takes a small share of a piece (the paper setting uses 5 kept samples,
50 iterations, a segment).

**Files** in the state directory: ``state.json`` (the commit marker: the run's identity,
progress counters, the name, size and sha256 of the arrays file, and one provenance record
per piece: command, device, date, elapsed time, iterations run) and ``state_<iteration>.npz``
(every array above). After every segment the arrays are written to a new file, then
``state.json`` is rewritten to point at it (both atomically), then older arrays files are
deleted; a piece killed at any moment leaves the state of its last finished segment. A
truncated or damaged file raises :class:`symlib.inference.hmc.CorruptRunError` naming it.
The size is :func:`state_nbytes`: about 37 MB for the paper setting (2 chains of a
407,050-parameter MLP, 10,000 test images, both matching methods).

**Detached pieces.** :func:`detach` copies only the chains' state and the reference sample (about
8 MB for the paper setting) elsewhere; a piece advanced there folds its samples into empty
summaries, and :func:`attach` merges them back into the run's directory, so the summaries never
travel. The result equals a run advanced in place to float rounding.

Only MLPs in the layout of :mod:`symlib.core.models` (``mlp_apply``) are supported: the
permutation spec is :func:`~symlib.symmetry.specs.mlp_permutation_spec` of their depth.
"""
from __future__ import annotations

import datetime
import io
import os
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.models import mlp_apply
from symlib.evaluation import metrics
from symlib.evaluation.running import RunningMoments
from symlib.evaluation.summaries import GaussianSummary
# the chunk machinery of run_hmc (the same plan, blocks and checkpoints): kept private there
from symlib.inference.hmc import driver as _driver
from symlib.inference.hmc import store as _store
from symlib.inference.hmc import target as _target
from symlib.inference.hmc import CorruptRunError, HMCConfig, LogDensity
from symlib.inference.hmc.config import STATS
from symlib.symmetry import permutations as _perm
from symlib.symmetry.specs import PermutationSpec, mlp_permutation_spec

__all__ = ["PieceProgress", "PiecedHMC", "PiecedSummaries", "advance", "attach", "detach", "load_state", "state_nbytes",
           "summaries"]

PyTree = Any

_FORMAT_VERSION = 1  # layout of the state directory and of its arrays
_STATE_JSON = "state.json"


@dataclass(frozen=True, eq=False)
class PiecedHMC:
    """What defines a pieced HMC run. It is rebuilt by the caller for every piece (the data
    are not stored); :func:`advance` checks it against the identity recorded in the state.

    Attributes:
        key: the JAX random key of the chains (as for :func:`~symlib.inference.hmc.run_hmc`).
        init_params: the initial position(s), as for ``run_hmc`` (an MLP in the
            :mod:`symlib.core.models` layout, one start per chain or one for all).
        logdensity: the target, a :class:`~symlib.inference.hmc.LogDensity`
            (:func:`~symlib.inference.hmc.make_logdensity`).
        cfg: the :class:`~symlib.inference.hmc.HMCConfig`.
        x_test: test inputs ``(n, features)`` of the predictive sums.
        y_test: integer test labels ``(n,)``.
        x_match: inputs for activation matching (``None``: weight matching only).
        chunk_size: kept samples per segment; a piece ends at a segment boundary.
        match_key: the key (int seed) of weight matching's sweep orders.
        num_points: test points whose true-class probability is traced per sample.
        init_per_chain: as for ``run_hmc``.
    """

    key: Any
    init_params: PyTree
    logdensity: LogDensity
    cfg: HMCConfig
    x_test: Any
    y_test: Any
    x_match: Any = None
    chunk_size: int = 5
    match_key: int = 0
    num_points: int = 10
    init_per_chain: bool | None = None

    @property
    def methods(self) -> tuple[str, ...]:
        """The matching methods of q_r: ``("weight",)``, plus ``"activation"`` with ``x_match``."""
        return ("weight",) if self.x_match is None else ("weight", "activation")


@dataclass(frozen=True)
class PieceProgress:
    """What one call of :func:`advance` did, and what remains.

    Attributes:
        state_dir: the state directory.
        iteration: iterations done (per chain) after this piece.
        num_iterations: iterations of the whole run (burn-in plus ``num_samples * thin``).
        num_kept: samples kept per chain so far.
        num_samples: samples per chain of the whole run.
        piece_iterations: iterations this piece ran.
        piece_seconds: wall time of this piece (from the call of :func:`advance`).
        seconds_per_iteration: measured in this piece (after its first segment, which
            includes compilation), else the last recorded one, else ``None``.
        remaining_seconds: ``seconds_per_iteration`` times the iterations left (``None``
            without a measurement): an estimate.
        complete: every iteration is done.
        state_bytes: size of the state directory's files.
    """

    state_dir: str
    iteration: int
    num_iterations: int
    num_kept: int
    num_samples: int
    piece_iterations: int
    piece_seconds: float
    seconds_per_iteration: float | None
    remaining_seconds: float | None
    complete: bool
    state_bytes: int

    def __str__(self) -> str:
        rate = "" if self.seconds_per_iteration is None else f", {self.seconds_per_iteration:.3g} s per iteration"
        left = ("complete" if self.complete else
                f"{self.num_iterations - self.iteration} iterations left"
                + ("" if self.remaining_seconds is None else f" (about {self.remaining_seconds / 60:.1f} min)"))
        return (f"iteration {self.iteration}/{self.num_iterations}, {self.num_kept}/{self.num_samples} samples per "
                f"chain; this piece: {self.piece_iterations} iterations in {self.piece_seconds:.1f} s{rate}; {left}; "
                f"state {self.state_bytes / 2**20:.1f} MiB")


@dataclass(frozen=True, eq=False)
class PiecedSummaries:
    """The summaries of a pieced run so far (:func:`summaries`).

    Attributes:
        q_d: the direct summary of all kept samples.
        q_r: by method (``"weight"``, ``"activation"`` when matched by activations,
            ``"weight (per chain)"``: one permutation per chain, the chains' means
            weight-matched to chain 0's), the summary after matching; ``perms`` hold the
            permutation of every sample (rows chain-major), ``reference_index`` is 0.
        test_probs: ``(n_test, classes)`` float64, the mean of the samples' softmax
            probabilities (the HMC predictive).
        test: ``accuracy`` and ``nll`` of ``test_probs``.
        diagnostics: ``mean_acceptance``, ``num_divergences`` (after burn-in),
            ``num_burnin_divergences``, ``step_size`` (per chain), ``rhat_test_loglik``,
            ``ess_test_loglik``, ``rhat_true_class_prob``, ``ess_true_class_prob`` (NaN
            with fewer than 2 samples per chain or, for the split R-hat, 4 samples per chain
            or 2 chains).
        traces: ``test_loglik`` ``(chains, kept)``, ``true_class_prob`` ``(chains, kept,
            points)``, ``point_indices``, ``sample_logdensity`` ``(chains, kept)``,
            ``segment_iteration`` and ``segment_logdensity`` (chains, segments), and the
            per-iteration ``acceptance_rate``, ``is_divergent``, ``energy_error``.
        progress: ``iteration``, ``num_iterations``, ``num_kept``, ``num_samples``,
            ``complete`` and ``pieces`` (the provenance record of every piece).
        y_test: the test labels the predictive sums were scored on.
    """

    q_d: GaussianSummary
    q_r: dict[str, GaussianSummary]
    test_probs: np.ndarray
    test: dict[str, float]
    diagnostics: dict[str, Any]
    traces: dict[str, np.ndarray]
    progress: dict[str, Any]
    y_test: np.ndarray


# --------------------------------------------------------------------------------------
# The accumulated state
# --------------------------------------------------------------------------------------


def _perm_dtype(n: int):
    return np.int16 if n <= np.iinfo(np.int16).max else np.int32


@dataclass
class _Folded:
    """Everything folded in so far (host arrays)."""

    raw: list[RunningMoments]  # per chain
    qr: dict[str, RunningMoments]  # by method
    perms: dict[str, dict[str, np.ndarray]]  # method -> name -> (chains, num_samples, n)
    objective: dict[str, np.ndarray]  # method -> (chains, num_samples)
    reference: list[np.ndarray] | None  # leaves of the reference sample
    prob_sum: np.ndarray  # (n_test, classes) float64
    y_test: np.ndarray
    point_indices: np.ndarray
    test_loglik: np.ndarray  # (chains, num_samples)
    true_class_prob: np.ndarray  # (chains, num_samples, points)
    sample_logdensity: np.ndarray  # (chains, num_samples)
    stats: dict[str, np.ndarray]  # (chains, iterations done)
    segment_iteration: np.ndarray  # (segments done,)
    segment_logdensity: np.ndarray  # (chains, segments done)

    @classmethod
    def fresh(cls, like: PyTree, num_chains: int, num_samples: int, y_test: np.ndarray, num_classes: int,
              num_points: int, methods: tuple[str, ...], perm_sizes: Mapping[str, int]) -> _Folded:
        n = len(y_test)
        points = np.linspace(0, n - 1, min(num_points, n)).round().astype(np.int32)
        return cls(
            raw=[RunningMoments.zeros(like) for _ in range(num_chains)],
            qr={m: RunningMoments.zeros(like) for m in methods},
            perms={m: {name: np.zeros((num_chains, num_samples, size), _perm_dtype(size))
                       for name, size in perm_sizes.items()} for m in methods},
            objective={m: np.full((num_chains, num_samples), np.nan) for m in methods},
            reference=None,
            prob_sum=np.zeros((n, num_classes), np.float64),
            y_test=np.asarray(y_test, np.int32),
            point_indices=points,
            test_loglik=np.full((num_chains, num_samples), np.nan),
            true_class_prob=np.full((num_chains, num_samples, len(points)), np.nan),
            sample_logdensity=np.full((num_chains, num_samples), np.nan),
            stats={"acceptance_rate": np.zeros((num_chains, 0), np.float32),
                   "is_divergent": np.zeros((num_chains, 0), bool),
                   "energy_error": np.zeros((num_chains, 0), np.float32)},
            segment_iteration=np.zeros(0, np.int64),
            segment_logdensity=np.zeros((num_chains, 0), np.float32),
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for c, mom in enumerate(self.raw):
            out.update(mom.to_arrays(f"raw{c}_"))
        for m, mom in self.qr.items():
            out.update(mom.to_arrays(f"qr_{m}_"))
            out[f"objective_{m}"] = self.objective[m]
            for name, p in self.perms[m].items():
                out[f"perm_{m}_{name}"] = p
        out["has_reference"] = np.bool_(self.reference is not None)
        for i, leaf in enumerate(self.reference or []):
            out[f"reference_{i}"] = leaf
        out.update(prob_sum=self.prob_sum, y_test=self.y_test, point_indices=self.point_indices,
                   test_loglik=self.test_loglik, true_class_prob=self.true_class_prob,
                   sample_logdensity=self.sample_logdensity, segment_iteration=self.segment_iteration,
                   segment_logdensity=self.segment_logdensity)
        out.update({f"stats_{k}": v for k, v in self.stats.items()})
        return out

    @classmethod
    def from_arrays(cls, z, like: PyTree, num_chains: int, methods: tuple[str, ...], perm_names) -> _Folded:
        return cls(
            raw=[RunningMoments.from_arrays(z, f"raw{c}_", like) for c in range(num_chains)],
            qr={m: RunningMoments.from_arrays(z, f"qr_{m}_", like) for m in methods},
            perms={m: {name: z[f"perm_{m}_{name}"] for name in perm_names} for m in methods},
            objective={m: z[f"objective_{m}"] for m in methods},
            reference=_reference(z),
            **{k: z[k] for k in ("prob_sum", "y_test", "point_indices", "test_loglik", "true_class_prob",
                                 "sample_logdensity", "segment_iteration", "segment_logdensity")},
            stats={k: z[f"stats_{k}"] for k in STATS},
        )

    def merge(self, piece: _Folded, first: int, last: int) -> None:
        """Fold in the summaries of a piece that kept samples ``first .. last - 1`` (a partial
        state's, :func:`attach`): moments merged, sums added, per-sample columns copied,
        per-iteration and per-segment traces appended."""
        for mine, theirs in zip(self.raw + list(self.qr.values()), piece.raw + list(piece.qr.values())):
            mine.merge(theirs)
        cols = slice(first, last)
        for m in self.perms:
            for name, p in self.perms[m].items():
                p[:, cols] = piece.perms[m][name][:, cols]
            self.objective[m][:, cols] = piece.objective[m][:, cols]
        for name in ("test_loglik", "true_class_prob", "sample_logdensity"):
            getattr(self, name)[:, cols] = getattr(piece, name)[:, cols]
        if self.reference is None:
            self.reference = piece.reference
        self.prob_sum = self.prob_sum + piece.prob_sum
        self.stats = {k: np.concatenate([v, piece.stats[k]], axis=1) for k, v in self.stats.items()}
        self.segment_iteration = np.concatenate([self.segment_iteration, piece.segment_iteration])
        self.segment_logdensity = np.concatenate([self.segment_logdensity, piece.segment_logdensity], axis=1)


def _reference(arrays: Mapping[str, np.ndarray]) -> list[np.ndarray] | None:
    """The leaves of the reference sample stored in a state's arrays (None before the first kept sample)."""
    n = sum(1 for k in arrays if k.startswith("reference_"))
    return [arrays[f"reference_{i}"] for i in range(n)] if bool(arrays["has_reference"]) else None


@partial(jax.jit, static_argnames=("apply_fn",))
def _predictive_stats(params, x, y, points, logdensity, *, apply_fn):
    """For a stack of networks (leading axis): softmax probabilities on ``x``, mean
    log-likelihood of ``y``, true-class probabilities at ``points`` and the log density,
    one network at a time."""

    def one(p):
        logits = apply_fn(p, x)
        logp = jax.nn.log_softmax(logits, axis=-1)
        true = jnp.take_along_axis(logp, y[:, None], axis=-1)[:, 0]
        return jax.nn.softmax(logits, axis=-1), jnp.mean(true), jnp.exp(true[points]), logdensity(p)

    return jax.lax.map(one, params)


def _chain_major(tree):
    """``(chains, k, ...)`` leaves -> ``(chains * k, ...)``."""
    return jax.tree_util.tree_map(lambda a: np.asarray(a).reshape((-1,) + np.shape(a)[2:]), tree)


def _fold_samples(folded: _Folded, run: PiecedHMC, spec: PermutationSpec, kept, first: int) -> None:
    """Fold the kept samples ``kept`` (leaves ``(chains, k, ...)``, sample indices
    ``first .. first + k - 1``) into every summary."""
    from symlib.symmetry.matching import activation_matching, apply_permutation_many, weight_matching_many

    leaves, treedef = jax.tree_util.tree_flatten(kept)
    chains, k = leaves[0].shape[:2]
    if folded.reference is None:
        folded.reference = [np.array(a[0, 0]) for a in leaves]
    ref = jax.tree_util.tree_unflatten(treedef, folded.reference)
    for c in range(chains):
        folded.raw[c].update(jax.tree_util.tree_map(lambda a: a[c], kept))

    flat = _chain_major(kept)
    probs, loglik, true_prob, logdens = _predictive_stats(
        run.logdensity.replicate(jax.tree_util.tree_map(jnp.asarray, flat)), jnp.asarray(run.x_test),
        jnp.asarray(folded.y_test), jnp.asarray(folded.point_indices), run.logdensity, apply_fn=mlp_apply)
    folded.prob_sum += np.asarray(probs, np.float64).sum(axis=0)
    cols = slice(first, first + k)
    folded.test_loglik[:, cols] = np.asarray(loglik).reshape(chains, k)
    folded.true_class_prob[:, cols] = np.asarray(true_prob).reshape(chains, k, -1)
    folded.sample_logdensity[:, cols] = np.asarray(logdens).reshape(chains, k)

    is_ref = np.zeros((chains, k), bool)
    if first == 0:
        is_ref[0, 0] = True
    is_ref = is_ref.reshape(-1)
    for method in run.methods:
        if method == "weight":
            res = weight_matching_many(run.match_key, spec, ref, flat)
            perms = {name: np.asarray(res.perms[name], np.int64) for name in spec.perm_names}
            objective = np.asarray(res.objective, np.float64)
        else:
            sizes = {name: folded.perms[method][name].shape[-1] for name in spec.perm_names}
            perms = {name: np.empty((chains * k, n), np.int64) for name, n in sizes.items()}
            objective = np.full(chains * k, np.nan)
            for s in range(chains * k):
                if is_ref[s]:
                    continue
                sample = jax.tree_util.tree_map(lambda a: a[s], flat)
                r = activation_matching(spec, ref, sample, run.x_match)
                for name in spec.perm_names:
                    perms[name][s] = r.perms[name]
                objective[s] = float(np.sum(r.objective))
        for name, p in perms.items():
            p[is_ref] = _perm.identity(p.shape[1])
            folded.perms[method][name][:, cols] = p.reshape(chains, k, -1)
        folded.objective[method][:, cols] = objective.reshape(chains, k)
        folded.qr[method].update(apply_permutation_many(spec, perms, flat))


def _fold_segment(folded: _Folded, run: PiecedHMC, spec, carry, stats: dict, kept, first: int) -> None:
    for name in STATS:
        folded.stats[name] = np.concatenate([folded.stats[name], np.asarray(stats[name])], axis=1)
    folded.segment_iteration = np.append(folded.segment_iteration, carry.iteration)
    ld = np.asarray(carry.state.logdensity, np.float32)[:, None]
    folded.segment_logdensity = np.concatenate([folded.segment_logdensity, ld], axis=1)
    if kept is not None:
        _fold_samples(folded, run, spec, kept, first)


# --------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------


def _array_file(iteration: int) -> str:
    return f"state_{iteration:07d}.npz"


def _read_json(state_dir: Path) -> dict | None:
    path = state_dir / _STATE_JSON
    meta = _store.read_json(path, "truncated or damaged. Restore the state directory from a copy (e.g. its last "
                                f"commit), or delete {state_dir} to start the run over.")
    if meta is None:
        return None
    if not isinstance(meta, dict) or meta.get("format_version") != _FORMAT_VERSION or "sha256" not in meta:
        raise CorruptRunError(f"{path} is not the state of a pieced HMC run in format {_FORMAT_VERSION}; "
                              f"delete {state_dir} to start over")
    return meta


def _open_arrays(state_dir: Path, meta: dict):
    """The state's arrays file, verified against its sha256 (``np.load`` of it)."""
    name = meta["state_file"]
    return np.load(io.BytesIO(_store.read_verified(state_dir / name, {name: meta["sha256"]})))


def load_state(state_dir) -> tuple[dict, dict[str, np.ndarray]]:
    """The state of a pieced run, checked against its checksum.

    Args:
        state_dir: the state directory written by :func:`advance`.

    Returns:
        ``(meta, arrays)``: the contents of ``state.json`` and every array of the state.

    Raises:
        FileNotFoundError: if ``state_dir`` holds no state.
        CorruptRunError: naming the file if ``state.json`` or the arrays file is missing,
            truncated or damaged.
    """
    state_dir = Path(state_dir)
    meta = _read_json(state_dir)
    if meta is None:
        raise FileNotFoundError(f"no pieced HMC state in {state_dir} ({_STATE_JSON} missing)")
    with _open_arrays(state_dir, meta) as z:
        return meta, {k: z[k] for k in z.files}


def _write_state(state_dir: Path, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write the arrays to a new file, point ``state.json`` (``meta``, updated in place) at it,
    then delete older arrays files."""
    name = _array_file(meta["iteration"])
    meta["sha256"] = _store.save_npz(state_dir / name, arrays)
    meta.update(state_file=name, bytes=(state_dir / name).stat().st_size)
    _store.save_json(state_dir / _STATE_JSON, meta)
    for old in state_dir.glob("state_*.npz"):
        if old.name != name:
            old.unlink()


def _summary_identity(run: PiecedHMC) -> str:
    parts = [np.asarray(run.x_test), np.asarray(run.y_test), run.match_key, run.num_points, run.methods]
    if run.x_match is not None:
        parts.append(np.asarray(run.x_match))
    return _target.hash_parts(*parts)


def _check_identity(state_dir: Path, meta: dict, identity: dict) -> None:
    stored = meta["identity"]
    differ = sorted(part for part in identity if stored.get(part) != identity[part])
    if differ:
        raise ValueError(f"{state_dir} holds another pieced HMC run: it differs in {', '.join(differ)} "
                         f"(stored config {meta['config']}). Choose another state directory, or delete {state_dir} "
                         "to discard the stored run.")


def _device() -> str:
    dev = jax.devices()[0]
    return f"{len(jax.devices())} x {getattr(dev, 'device_kind', dev.platform)} ({dev.platform})"


def _spec_of(like: PyTree) -> PermutationSpec:
    from symlib.core.checks import mlp_layer_names

    return mlp_permutation_spec(len(mlp_layer_names(like, "init_params")) - 1)


# --------------------------------------------------------------------------------------
# advance
# --------------------------------------------------------------------------------------


def _positive_or_none(value, name: str):
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be > 0 or None, got {value!r}")
    return value


def _num_classes(like: PyTree) -> int:
    """Output width of an MLP (the last layer's bias)."""
    from symlib.core.checks import mlp_layer_names

    return int(np.shape(like[mlp_layer_names(like)[-1]]["bias"])[-1])


def _piece_record(command: str | None, start_iteration: int) -> dict[str, Any]:
    return {"command": command if command is not None else shlex.join([Path(sys.executable).name, *sys.argv]),
            "device": _device(), "host_cpus": os.cpu_count(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "start_iteration": start_iteration, "end_iteration": start_iteration, "elapsed_s": 0.0,
            "seconds_per_iteration": None}


def _open(state_dir: Path, run: PiecedHMC, prep, spec: PermutationSpec):
    """``(meta, folded, carry)``: the stored state of this run, or a fresh one."""
    from symlib.symmetry.specs import check_spec

    cfg, like = prep.cfg, prep.like
    identity = {**_store.run_identity(cfg, prep.chunk_size, run.key, prep.positions, prep.logdensity),
                "summaries": _summary_identity(run)}
    fresh = prep.fresh_carry()
    meta = _read_json(state_dir)
    if meta is None:
        folded = _Folded.fresh(like, cfg.num_chains, cfg.num_samples, np.asarray(run.y_test), _num_classes(like),
                               run.num_points, run.methods, check_spec(spec, like))
        meta = {"format_version": _FORMAT_VERSION, "identity": identity, "config": cfg.to_dict(),
                "chunk_size": prep.chunk_size, "structure": _store.tree_skeleton(like), "methods": list(run.methods),
                "match_key": run.match_key, "pieces": []}
        return meta, folded, fresh
    _check_identity(state_dir, meta, identity)
    with _open_arrays(state_dir, meta) as z:
        arrays = {k: z[k] for k in z.files}
    if meta.get("detached"):  # the chains and the reference only (detach): this piece's summaries start empty
        folded = _Folded.fresh(like, cfg.num_chains, cfg.num_samples, np.asarray(run.y_test), _num_classes(like),
                               run.num_points, run.methods, check_spec(spec, like))
        folded.reference = _reference(arrays)
    else:
        folded = _Folded.from_arrays(arrays, like, cfg.num_chains, run.methods, spec.perm_names)
    chain = {k[len("chain_"):]: v for k, v in arrays.items() if k.startswith("chain_")}
    restored = _driver.state_from_host(chain, fresh.state, fresh.da_state)
    return meta, folded, _driver.carry_at(prep.plan, meta["segment"], *_driver.strong_types(restored))


class PiecedSink:
    """The :class:`~symlib.inference.hmc.Sink` of one piece (:func:`advance`): opens the
    state directory (or starts the run), folds every segment's kept samples into the running
    summaries, writes the state after every segment, and stops the run (``proceed``) before
    a segment that would not fit the piece's budget or counts. Its result is a
    :class:`PieceProgress`."""

    def __init__(self, state_dir: Path, run: PiecedHMC, prep, *, budget_seconds: float | None,
                 num_iterations: int | None, num_samples: int | None, command: str | None, started: float):
        self.state_dir, self.pieced, self.prep, self.started = state_dir, run, prep, started
        self.budget_seconds, self.num_iterations, self.num_samples = budget_seconds, num_iterations, num_samples
        self.command = command
        self.spec = _spec_of(prep.like)

    def open(self):
        self.meta, self.folded, carry = _open(self.state_dir, self.pieced, self.prep, self.spec)
        self.start_iteration, self.start_kept = carry.iteration, carry.num_kept
        self.rate = self.meta["pieces"][-1]["seconds_per_iteration"] if self.meta["pieces"] else None
        self.record = _piece_record(self.command, self.start_iteration)
        self.measured = [0, 0.0]  # iterations and seconds of this piece's segments after its first (compilation)
        return carry

    def proceed(self, seg, carry) -> bool:
        if self.num_iterations is not None and carry.iteration - self.start_iteration >= self.num_iterations:
            return False
        if self.num_samples is not None and carry.num_kept - self.start_kept >= self.num_samples:
            return False
        if (self.budget_seconds is not None and self.rate is not None
                and time.time() + 1.2 * self.rate * seg.num_iters + 5.0 > self.started + self.budget_seconds):
            return False
        self.t0, self.first_kept = time.time(), carry.num_kept
        return True

    def store(self, seg, carry, stats: dict, kept) -> None:
        meta = self.meta
        _fold_segment(self.folded, self.pieced, self.spec, carry, stats, kept, self.first_kept)
        if not meta["pieces"] or meta["pieces"][-1] is not self.record:
            meta["pieces"].append(self.record)
        self.record.update(end_iteration=carry.iteration, elapsed_s=round(time.time() - self.started, 1))
        meta.pop("detached", None)  # from now on the arrays hold this piece's summaries
        meta.update(iteration=carry.iteration, segment=carry.segment, num_kept=carry.num_kept,
                    complete=carry.iteration == self.prep.cfg.num_iterations)
        _write_state(self.state_dir, meta, {**self.folded.to_arrays(),
                                            **{f"chain_{k}": v for k, v in _driver.carry_to_host(carry).items()}})
        seconds = time.time() - self.t0  # sampling, folding and writing the state
        if carry.iteration - seg.num_iters > self.start_iteration:
            self.measured[0] += seg.num_iters
            self.measured[1] += seconds
            self.rate = self.measured[1] / self.measured[0]
        elif self.rate is None:
            self.rate = seconds / seg.num_iters  # includes compilation: an overestimate
        self.record["seconds_per_iteration"] = self.rate

    def result(self, carry) -> PieceProgress:
        state_dir, cfg, rate = self.state_dir, self.prep.cfg, self.rate
        if carry.iteration > self.start_iteration:  # the last measurement
            _store.save_json(state_dir / _STATE_JSON, self.meta)
        left = cfg.num_iterations - carry.iteration
        size = sum(p.stat().st_size for p in state_dir.iterdir() if p.is_file()) if state_dir.exists() else 0
        return PieceProgress(str(state_dir), carry.iteration, cfg.num_iterations, carry.num_kept, cfg.num_samples,
                             carry.iteration - self.start_iteration, time.time() - self.started, rate,
                             None if rate is None else rate * left, left == 0, size)


def advance(state_dir, run: PiecedHMC, *, budget_seconds: float | None = None, num_iterations: int | None = None,
            num_samples: int | None = None, progress: bool | None = None, command: str | None = None,
            started: float | None = None) -> PieceProgress:
    """Run the next piece of a pieced HMC run (module docstring) and save its state:
    :func:`~symlib.inference.hmc.run_hmc` with a :class:`PiecedSink`.

    The piece loads the state of ``state_dir`` (or starts the run if there is none), runs
    segment after segment of the run's plan, folds each segment's kept samples into the
    summaries and writes the state after every segment. It stops at the end of the run,
    or before a segment that would not end within ``budget_seconds`` (estimated from the
    seconds per iteration measured so far, with a 20% margin, plus 5 s for writing the state;
    a piece without a measurement runs one segment), or once it has run ``num_iterations``
    iterations or kept ``num_samples`` samples per chain.

    Args:
        state_dir: the state directory (created if missing).
        run: the run's definition; must be the one the state was started with.
        budget_seconds: wall time the piece may take, counted from ``started``.
        num_iterations: stop after at least this many iterations in this piece.
        num_samples: stop after at least this many kept samples per chain in this piece.
        progress: show a progress bar on stderr (default: only if stderr is a terminal).
        command: recorded in the piece's provenance (default: this process's command line).
        started: ``time.time()`` at which the budget started (default: now), e.g. the
            start of the process, so that loading data and compiling count.

    Returns:
        A :class:`PieceProgress`.

    Raises:
        ValueError: if ``state_dir`` holds another run (naming what differs), or for a
            non-positive budget or count; the errors of ``run_hmc`` for a bad ``run``.
        CorruptRunError: naming a state file that is missing, truncated or damaged.
    """
    started = time.time() if started is None else started
    for value, name in ((budget_seconds, "budget_seconds"), (num_iterations, "num_iterations"),
                        (num_samples, "num_samples")):
        _positive_or_none(value, name)

    def sink(prep) -> PiecedSink:
        return PiecedSink(Path(state_dir), run, prep, budget_seconds=budget_seconds, num_iterations=num_iterations,
                          num_samples=num_samples, command=command, started=started)

    return _driver.run_hmc(run.key, run.init_params, run.logdensity, run.cfg, chunk_size=run.chunk_size,
                        progress=progress, init_per_chain=run.init_per_chain, sink=sink)


# --------------------------------------------------------------------------------------
# Detached pieces: the chains travel, the summaries stay
# --------------------------------------------------------------------------------------


def _is_chain_or_reference(name: str) -> bool:  # what detach copies
    return name.startswith(("chain_", "reference_")) or name == "has_reference"


def detach(state_dir, out_dir) -> Path:
    """Copy to ``out_dir`` what the next piece of a pieced run needs: the chains' state, the
    reference sample, the progress and the provenance, without the summaries (for the paper
    setting about 8 MB of the state's 37 MB; :func:`state_nbytes`). A piece advanced from
    ``out_dir`` (:func:`advance`, on any machine) folds its samples into summaries that start
    empty: a *partial* state, which :func:`attach` merges back into ``state_dir``. So only the
    small part travels to the machine that samples, and the summaries never leave this one.

    Args:
        state_dir: a run's state directory (not a partial state).
        out_dir: where the detached state is written (created; any older state in it is replaced).

    Returns:
        ``out_dir``.

    Raises:
        FileNotFoundError: if ``state_dir`` holds no state.
        ValueError: if ``state_dir`` holds a partial state.
        CorruptRunError: naming a state file that is missing, truncated or damaged.
    """
    state_dir, out_dir = Path(state_dir), Path(out_dir)
    meta, arrays = load_state(state_dir)
    if meta.get("base") is not None:
        raise ValueError(f"{state_dir} holds a partial state (a piece advanced from a detached state): attach it "
                         "to its run's state directory, and detach from there")
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in (*out_dir.glob("state_*.npz"), out_dir / _STATE_JSON):
        old.unlink(missing_ok=True)
    base = {k: meta[k] for k in ("iteration", "segment", "num_kept", "sha256")}
    _write_state(out_dir, {**meta, "base": {**base, "pieces": len(meta["pieces"])}, "detached": True},
                 {k: v for k, v in arrays.items() if _is_chain_or_reference(k)})
    return out_dir


def _same_pieces(done: list, newer: list) -> bool:
    """Whether the pieces ``done`` start the list ``newer`` (by start, end and date)."""
    return [(p["start_iteration"], p["end_iteration"], p["date"]) for p in newer][:len(done)] == [
        (p["start_iteration"], p["end_iteration"], p["date"]) for p in done]


def attach(state_dir, piece_dir) -> dict[str, Any]:
    """Merge a piece advanced from a detached state (:func:`detach`) into its run's state
    directory: the summaries merged (moments by Chan et al.'s pairwise update, sums added,
    per-sample and per-iteration traces joined), the chains' state and the pieces' provenance
    taken from the piece. The summaries equal those of a run advanced in place, to float
    rounding. A piece that started the run (advanced from no state) is copied into an empty
    ``state_dir``. Attaching the same piece twice changes nothing.

    Args:
        state_dir: the run's state directory (the one the piece was detached from).
        piece_dir: the state directory the piece was advanced in.

    Returns:
        ``iteration`` and ``num_kept`` of the run afterwards, ``pieces`` (how many the piece
        brought) and ``already`` (True if the piece was attached before).

    Raises:
        ValueError: if the piece belongs to another run, was advanced from another state than
            ``state_dir``'s (an older one: detach again, and run that piece again), or ran
            nothing since it was detached.
        CorruptRunError: naming a state file that is missing, truncated or damaged.
    """
    state_dir, piece_dir = Path(state_dir), Path(piece_dir)
    pmeta, parrays = load_state(piece_dir)
    if pmeta.get("detached"):
        raise ValueError(f"{piece_dir} is a detached state that no piece has advanced: nothing to attach")
    meta = _read_json(state_dir)
    base = pmeta.get("base")

    def result(m: dict, already: bool) -> dict[str, Any]:
        return {"iteration": int(m["iteration"]), "num_kept": int(m["num_kept"]), "already": already,
                "pieces": len(pmeta["pieces"]) - (base["pieces"] if base else 0)}

    if meta is not None:
        _check_identity(state_dir, meta, pmeta["identity"])
        if meta["iteration"] >= pmeta["iteration"] and _same_pieces(pmeta["pieces"], meta["pieces"]):
            return result(meta, True)
    if base is None:  # the piece started the run
        if meta is not None:
            raise ValueError(f"{piece_dir} started the run anew, but {state_dir} already holds it at iteration "
                             f"{meta['iteration']}: a piece must be advanced from the state detached from {state_dir}")
        state_dir.mkdir(parents=True, exist_ok=True)
        _write_state(state_dir, dict(pmeta), parrays)
        return result(pmeta, False)
    if meta is None or meta["sha256"] != base["sha256"]:
        where = "holds no state" if meta is None else f"is at iteration {meta['iteration']} (arrays {meta['sha256'][:12]})"
        raise ValueError(f"the piece in {piece_dir} continues the state at iteration {base['iteration']} (arrays "
                         f"{base['sha256'][:12]}), but {state_dir} {where}: detach the state again and rerun the piece")
    _, arrays = load_state(state_dir)
    cfg, methods = HMCConfig(**meta["config"]), tuple(meta["methods"])
    like = _like_from_state(meta, arrays)
    names = _spec_of(like).perm_names
    folded = _Folded.from_arrays(arrays, like, cfg.num_chains, methods, names)
    folded.merge(_Folded.from_arrays(parrays, like, cfg.num_chains, methods, names), base["num_kept"],
                 pmeta["num_kept"])
    merged = {k: v for k, v in pmeta.items() if k != "base"}
    _write_state(state_dir, merged, {**folded.to_arrays(),
                                     **{k: v for k, v in parrays.items() if k.startswith("chain_")}})
    return result(merged, False)


# --------------------------------------------------------------------------------------
# Reading the summaries
# --------------------------------------------------------------------------------------


def _like_from_state(meta: dict, arrays: Mapping[str, np.ndarray]) -> PyTree:
    """One network (chain 0's current position) in the structure recorded in the state."""
    n = sum(1 for k in arrays if k.startswith("chain_position_"))
    return _store.rebuild_tree(meta["structure"], [arrays[f"chain_position_{i}"][0] for i in range(n)])


def _per_chain_summary(folded: _Folded, spec: PermutationSpec, like: PyTree, kept: int, match_key) -> GaussianSummary:
    """q_r with one permutation per chain: chain c's mean weight-matched to chain 0's."""
    from symlib.symmetry.matching import weight_matching

    total = RunningMoments.zeros(like)
    sizes = {name: p.shape[-1] for name, p in folded.perms["weight"].items()}
    perms = {name: np.empty((len(folded.raw), kept, n), np.int64) for name, n in sizes.items()}
    for c, mom in enumerate(folded.raw):
        found = ({name: _perm.identity(n) for name, n in sizes.items()} if c == 0
                 else weight_matching(match_key, spec, folded.raw[0].mean, mom.mean).perms)
        total.merge(mom.permuted(spec, found))
        for name in sizes:
            perms[name][c] = found[name]
    groups = np.repeat(np.arange(len(folded.raw)), kept)
    return total.summary("weight (per group)", perms={k: v.reshape(-1, v.shape[-1]) for k, v in perms.items()},
                         info={"groups": groups})


def summaries(state_dir) -> PiecedSummaries:
    """The summaries of the samples a pieced run has kept so far (module docstring).

    Args:
        state_dir: the state directory written by :func:`advance`.

    Returns:
        A :class:`PiecedSummaries`.

    Raises:
        FileNotFoundError: if ``state_dir`` holds no state.
        ValueError: if fewer than 2 samples have been kept.
        CorruptRunError: naming a state file that is missing, truncated or damaged.
    """
    from symlib.inference.diagnostics import summarize_hmc, with_diagnostics

    meta, arrays = load_state(state_dir)
    if meta.get("base") is not None:
        raise ValueError(f"{state_dir} holds a partial state (the summaries of the pieces advanced since it was "
                         "detached): attach it to its run's state directory and read the summaries there")
    cfg, methods, kept = HMCConfig(**meta["config"]), tuple(meta["methods"]), int(meta["num_kept"])
    chains = cfg.num_chains
    if chains * kept < 2:
        raise ValueError(f"{state_dir} holds {kept} kept sample(s) per chain so far; summaries need at least 2 samples")
    like = _like_from_state(meta, arrays)
    spec = _spec_of(like)
    folded = _Folded.from_arrays(arrays, like, chains, methods, spec.perm_names)
    q_d = RunningMoments.zeros(like)
    for mom in folded.raw:
        q_d.merge(mom)
    q_r = {}
    for m in methods:
        perms = {name: p[:, :kept].reshape(chains * kept, -1).astype(np.int64) for name, p in folded.perms[m].items()}
        q_r[m] = folded.qr[m].summary(m, perms=perms, reference_index=0,
                                      info={"objective": folded.objective[m][:, :kept].reshape(-1)})
    q_r["weight (per chain)"] = _per_chain_summary(folded, spec, like, kept, meta["match_key"])
    probs = folded.prob_sum / (chains * kept)
    y = folded.y_test
    stats = {k: v for k, v in folded.stats.items()}
    step_size = arrays["chain_step_size"]
    health = summarize_hmc(_store.HMCResult(None, stats, step_size, cfg))
    traces = {"test_loglik": folded.test_loglik[:, :kept], "true_class_prob": folded.true_class_prob[:, :kept],
              "point_indices": folded.point_indices, "sample_logdensity": folded.sample_logdensity[:, :kept],
              "segment_iteration": folded.segment_iteration, "segment_logdensity": folded.segment_logdensity, **stats}
    diagnostics = dict(health)
    for name in ("test_loglik", "true_class_prob"):
        d = with_diagnostics(traces[name])
        diagnostics[f"rhat_{name}"], diagnostics[f"ess_{name}"] = d["rhat"], d["ess"]
    progress = {"iteration": int(meta["iteration"]), "num_iterations": cfg.num_iterations, "num_kept": kept,
                "num_samples": cfg.num_samples, "complete": bool(meta["complete"]), "pieces": meta["pieces"]}
    return PiecedSummaries(q_d=q_d.summary("direct"), q_r=q_r, test_probs=probs,
                           test={"accuracy": float(metrics.accuracy_from_probs(probs, y)),
                                 "nll": float(metrics.nll_from_probs(probs, y))},
                           diagnostics=diagnostics, traces=traces, progress=progress, y_test=np.asarray(y))


def state_nbytes(like: PyTree, cfg: HMCConfig, n_test: int, *, num_points: int = 10,
                 methods: tuple[str, ...] = ("weight", "activation"), detached: bool = False) -> int:
    """An upper bound on the bytes of the arrays file of a pieced run's state once every
    sample is kept (the ``.npz`` file, without the few kB of ``state.json``; it counts one
    segment per block of ``thin`` iterations), computed without running anything.

    Args:
        like: one network (an MLP in the :mod:`symlib.core.models` layout).
        cfg: the run's :class:`~symlib.inference.hmc.HMCConfig`.
        n_test: test examples of the predictive sums.
        num_points: traced test points.
        methods: the matching methods of q_r.
        detached: only what :func:`detach` copies (the chains' state and the reference).

    Returns:
        The total size in bytes (e.g. about 37 MB for 2 chains of a 784-512-10 MLP with
        10,000 test images and both methods; about 8 MB detached).
    """
    from symlib.symmetry.specs import check_spec

    like = jax.tree_util.tree_map(lambda a: np.zeros(np.shape(a), np.asarray(a).dtype), like)
    spec = _spec_of(like)
    folded = _Folded.fresh(like, cfg.num_chains, cfg.num_samples, np.zeros(n_test, np.int32), _num_classes(like),
                           num_points, tuple(methods), check_spec(spec, like))
    folded.reference = jax.tree_util.tree_leaves(like)
    folded.stats = {k: np.zeros((cfg.num_chains, cfg.num_iterations), v.dtype) for k, v in folded.stats.items()}
    segments = len(_store.plan_segments(cfg, 1))  # at most one segment per block
    folded.segment_iteration = np.zeros(segments, np.int64)
    folded.segment_logdensity = np.zeros((cfg.num_chains, segments), np.float32)
    arrays = folded.to_arrays()
    for i, leaf in enumerate(jax.tree_util.tree_leaves(like)):  # the chain state, as carry_to_host writes it
        arrays[f"chain_position_{i}"] = arrays[f"chain_grad_{i}"] = np.zeros((cfg.num_chains, *leaf.shape), leaf.dtype)
    for name in ("step_size", "logdensity", "da_0", "da_1", "da_2", "da_3", "da_4"):
        arrays[f"chain_{name}"] = np.zeros(cfg.num_chains, np.float32)
    if detached:
        arrays = {k: v for k, v in arrays.items() if _is_chain_or_reference(k)}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getbuffer().nbytes
