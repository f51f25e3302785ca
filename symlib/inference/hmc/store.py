"""A run's storage: the plan of segments (one file each), checksummed ``.npz``/JSON files, the
run's identity (what must match to resume it), and loading its samples and result."""
from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.io import atomic_write
from symlib.inference.diagnostics import summarize_hmc
from symlib.inference.hmc.config import STATS, SAMPLER_VERSION, CorruptRunError, HMCConfig
from symlib.inference.hmc.target import LogDensity, hash_parts


FORMAT_VERSION = 2  # layout of out_dir; 2: sha256 checksums in state.json, every checkpoint kept


# --------------------------------------------------------------------------------------
# Storage: checksummed files
# --------------------------------------------------------------------------------------


def segment_file(seg: Segment) -> str:
    return f"{seg.kind}_{seg.index:05d}.npz"


def state_file(segment: int) -> str:
    """The checkpoint taken before segment ``segment``."""
    return f"state_{segment:05d}.npz"


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write ``arrays`` to ``path`` atomically; returns the sha256 hex digest of the file."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    atomic_write(path, lambda f: f.write(data))
    return hashlib.sha256(data).hexdigest()


def save_json(path: Path, obj) -> None:
    """Write ``obj`` to ``path`` as JSON, atomically."""
    atomic_write(path, lambda f: f.write(json.dumps(obj, indent=1).encode()))


def _recompute_advice(path: Path) -> str:
    what = "checkpoint" if path.name.startswith("state_") else "file"
    return (f"Delete that {what} and call run_hmc again with the same arguments to recompute it from the "
            f"previous checkpoint, or delete the run directory {path.parent} to start over.")


def read_verified(path: Path, checksums: dict[str, str]) -> bytes:
    """The bytes of ``path`` after checking them against ``checksums[path.name]``.

    Raises:
        CorruptRunError: naming the file if it is missing, has no checksum or does not match it.
    """
    if not path.exists():
        raise CorruptRunError(f"{path} is missing. Call run_hmc again with the same arguments to recompute it "
                              f"from the previous checkpoint, or delete the run directory {path.parent} to start over.")
    expected = checksums.get(path.name)
    if expected is None:
        raise CorruptRunError(f"{path} has no sha256 checksum in {path.parent / 'state.json'}, so it cannot be "
                              f"verified. {_recompute_advice(path)}")
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise CorruptRunError(f"{path} is truncated or corrupted: its sha256 is {actual[:16]}..., expected "
                              f"{expected[:16]}... ({len(data)} bytes). {_recompute_advice(path)}")
    return data


def load_npz(out_dir: Path, name: str, meta: dict):
    """``np.load`` of a verified file of the run in ``out_dir`` (use as a context manager)."""
    return np.load(io.BytesIO(read_verified(out_dir / name, meta["checksums"])))


_META_KEYS = ("identity", "config", "chunk_size", "next_segment", "num_burnin_chunks", "num_sample_chunks",
              "num_leaves", "state_file", "checksums")


def read_json(path: Path, advice: str) -> Any:
    """The JSON in ``path``, or None when there is no such file.

    Raises:
        CorruptRunError: if it is not valid JSON, with ``advice`` (what to do about it).
    """
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CorruptRunError(f"{path} is not valid JSON ({err}): {advice}") from err


def read_meta(out_dir: Path) -> dict | None:
    """The run's ``state.json``, or ``None`` if there is none.

    Raises:
        CorruptRunError: if it is not valid JSON or lacks an entry.
        ValueError: if it was written in another storage format.
    """
    path = out_dir / "state.json"
    meta = read_json(path, f"truncated, or not an HMC output directory? Delete the run directory {out_dir} to "
                           "start over.")
    if meta is None:
        return None
    if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
        version = meta.get("format_version") if isinstance(meta, dict) else None
        raise ValueError(f"{out_dir} holds an HMC run in storage format {version}, but this symlib reads format "
                         f"{FORMAT_VERSION} (checksummed files); delete that directory or choose another out_dir")
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise CorruptRunError(f"{path} lacks {missing}; delete the run directory {out_dir} to start over")
    return meta


def _require_meta(out_dir: Path) -> dict:
    meta = read_meta(out_dir)
    if meta is None:
        raise FileNotFoundError(f"no HMC run in {out_dir} (state.json missing)")
    return meta


def tree_skeleton(tree) -> Any:
    """JSON description of a pytree's containers (leaves numbered), or None if unsupported."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    numbered = jax.tree_util.tree_unflatten(treedef, list(range(len(leaves))))

    def encode(node):
        if isinstance(node, int):
            return {"leaf": node}
        if type(node) is dict and all(isinstance(k, str) for k in node):
            return {"dict": {k: encode(v) for k, v in node.items()}}
        if type(node) in (list, tuple):
            return {type(node).__name__: [encode(v) for v in node]}
        if node is None:
            return {"none": None}
        raise TypeError

    try:
        return encode(numbered)
    except TypeError:
        return None


def rebuild_tree(skeleton, leaves: list):
    """The pytree that :func:`tree_skeleton` described, with ``leaves`` at its numbered leaves."""
    kind, value = next(iter(skeleton.items()))
    if kind == "leaf":
        return leaves[value]
    if kind == "dict":
        return {k: rebuild_tree(v, leaves) for k, v in value.items()}
    if kind == "none":
        return None
    items = [rebuild_tree(v, leaves) for v in value]
    return tuple(items) if kind == "tuple" else items


def _unflatten_like(like, meta: dict, leaves: list):
    if like is not None:
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(like), leaves)
    if meta.get("structure") is not None:
        return rebuild_tree(meta["structure"], leaves)
    return leaves


def iter_sample_chunks(out_dir, like=None) -> Iterator[tuple[int, Any]]:
    """Stored chunks of samples of a run, one in memory at a time.

    Args:
        out_dir: the run's directory (see :func:`run_hmc`).
        like: a pytree with the structure of one sample; default: the structure recorded
            in state.json (nested dicts, lists, tuples), else a list of leaves.

    Yields:
        ``(index of the chunk's first sample, samples)`` with leaves of shape ``(chains, k, ...)``.

    Raises:
        FileNotFoundError: if ``out_dir`` holds no run.
        CorruptRunError: naming a chunk file that is missing or does not match its checksum.
    """
    out_dir = Path(out_dir)
    meta = _require_meta(out_dir)
    first = 0
    for i in range(meta["num_sample_chunks"]):
        with load_npz(out_dir, f"samples_{i:05d}.npz", meta) as z:
            leaves = [z[f"leaf_{j}"] for j in range(meta["num_leaves"])]
        yield first, _unflatten_like(like, meta, leaves)
        first += leaves[0].shape[1]


def load_samples(out_dir, like=None):
    """All kept samples stored in ``out_dir``.

    Args:
        out_dir: the run's directory.
        like: structure of one sample, as in :func:`iter_sample_chunks`.

    Returns:
        A pytree of numpy arrays of shape ``(chains, num_kept, ...)``.

    Raises:
        FileNotFoundError: if ``out_dir`` holds no run.
        ValueError: if it holds no samples yet.
        CorruptRunError: naming a chunk file that is missing or does not match its checksum.
    """
    chunks = [s for _, s in iter_sample_chunks(out_dir, like)]
    if not chunks:
        raise ValueError(f"{out_dir} holds no samples yet")
    return jax.tree.map(lambda *a: np.concatenate(a, axis=1), *chunks)


def _load_stats(out_dir: Path, meta: dict) -> dict[str, np.ndarray]:
    parts = {k: [] for k in STATS}
    names = [f"burnin_{i:05d}.npz" for i in range(meta["num_burnin_chunks"])]
    names += [f"samples_{i:05d}.npz" for i in range(meta["num_sample_chunks"])]
    for name in names:
        with load_npz(out_dir, name, meta) as z:
            for k in STATS:
                parts[k].append(z[k])
    return concat_stats(parts, meta["config"]["num_chains"])


def concat_stats(parts: dict[str, list], num_chains: int) -> dict[str, np.ndarray]:
    empty = {"acceptance_rate": np.float32, "is_divergent": bool, "energy_error": np.float32}
    return {k: np.concatenate(v, axis=1) if v else np.zeros((num_chains, 0), empty[k]) for k, v in parts.items()}


def load_result(out_dir, like=None) -> HMCResult:
    """The result of a (possibly unfinished) run stored in ``out_dir``.

    Args:
        out_dir: the run's directory.
        like: structure of one sample, as in :func:`iter_sample_chunks`.

    Returns:
        An :class:`HMCResult` with the statistics of every stored iteration; its samples
        are loaded lazily.

    Raises:
        FileNotFoundError: if ``out_dir`` holds no run.
        CorruptRunError: naming a file that is missing or does not match its checksum.
    """
    out_dir = Path(out_dir)
    meta = _require_meta(out_dir)
    with load_npz(out_dir, meta["state_file"], meta) as z:
        step_size = z["step_size"]
    return HMCResult(None, _load_stats(out_dir, meta), step_size, HMCConfig(**meta["config"]), out_dir, like)


# --------------------------------------------------------------------------------------
# Identity of a run
# --------------------------------------------------------------------------------------

_IDENTITY_PARTS = {
    "config": "HMC config (HMCConfig)",
    "chunk_size": "chunk layout (chunk_size)",
    "data": "data (the log density's fingerprint)",
    "initial_state": "initial state (init_params)",
    "key": "key",
    "sampler_version": "sampler version (SAMPLER_VERSION)",
}


def _key_parts(key) -> tuple:
    key = key if isinstance(key, jax.Array) else jnp.asarray(key)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return str(jax.random.key_impl(key)), np.asarray(jax.random.key_data(key))
    return "raw", np.asarray(key)


def run_identity(cfg: HMCConfig, chunk_size: int, key, positions, logdensity: LogDensity) -> dict[str, Any]:
    """The fields of a run's identity (see :func:`run_fingerprint`), each a digest or a description."""
    leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(positions)]
    structure = tree_skeleton(positions) or str(jax.tree_util.tree_structure(positions))
    return {
        "config": hash_parts(json.dumps(cfg.identity_dict(), sort_keys=True)),
        "chunk_size": chunk_size,
        "data": logdensity.fingerprint,
        "initial_state": hash_parts(json.dumps(structure, sort_keys=True), *leaves),
        "key": hash_parts(*_key_parts(key)),
        "sampler_version": SAMPLER_VERSION,
    }


def identity_mismatch(out_dir: Path, meta: dict, identity: dict, cfg: HMCConfig) -> str | None:
    """Why the run stored in ``out_dir`` is not this one (``None`` if it is)."""
    stored = meta["identity"]
    differ = [part for part in _IDENTITY_PARTS if stored.get(part) != identity[part]]
    if not differ:
        return None
    shown = {"config": (meta["config"], cfg.to_dict()), "chunk_size": (meta["chunk_size"], identity["chunk_size"]),
             "sampler_version": (stored.get("sampler_version"), identity["sampler_version"])}
    details = [f"{part}: stored {shown[part][0]}, requested {shown[part][1]}" for part in differ if part in shown]
    labels = ", ".join(_IDENTITY_PARTS[part] for part in differ)
    return (f"{out_dir} holds another HMC run: it differs in the {labels}"
            + (f" ({'; '.join(details)})" if details else "")
            + f". Choose another out_dir for this run, or delete {out_dir} to discard the stored one.")


# --------------------------------------------------------------------------------------
# The plan: segments of blocks, each followed by a checkpoint
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    kind: str  # "burnin" or "samples"
    index: int  # file index within its kind
    start: int  # first global iteration
    blocks: tuple[int, ...]  # iterations per jitted call

    @property
    def num_iters(self) -> int:
        return sum(self.blocks)


def plan_segments(cfg: HMCConfig, chunk_size: int) -> list[Segment]:
    """Burn-in in blocks of ``thin`` iterations (the remainder first), then sampling blocks of
    ``thin`` iterations, grouped ``chunk_size`` blocks per segment (= per file)."""
    segments, start = [], 0
    rem, full = cfg.num_burnin % cfg.thin, cfg.num_burnin // cfg.thin
    burn_blocks = ([rem] if rem else []) + [cfg.thin] * full
    for i in range(0, len(burn_blocks), chunk_size):
        seg = Segment("burnin", len(segments), start, tuple(burn_blocks[i:i + chunk_size]))
        segments.append(seg)
        start += seg.num_iters
    for j, i in enumerate(range(0, cfg.num_samples, chunk_size)):
        seg = Segment("samples", j, start, (cfg.thin,) * min(chunk_size, cfg.num_samples - i))
        segments.append(seg)
        start += seg.num_iters
    return segments


# --------------------------------------------------------------------------------------
# The result of a run (its samples load from the store)
# --------------------------------------------------------------------------------------


class HMCResult:
    """Output of :func:`run_hmc`.

    ``samples``: pytree like the initial position with leading ``(num_chains, num_samples)``
    axes (numpy; loaded from ``out_dir`` on first access when the run was stored there).
    ``stats``: dict of ``(num_chains, num_iterations)`` arrays ``acceptance_rate``,
    ``is_divergent``, ``energy_error`` (burn-in included). ``step_size``: final step size
    per chain. ``config``: the :class:`HMCConfig`. ``out_dir``: where the run is stored, or ``None``.
    """

    def __init__(self, samples, stats, step_size, cfg: HMCConfig, out_dir: Path | None = None, like=None):
        self._samples, self.stats, self.step_size, self.config = samples, stats, np.asarray(step_size), cfg
        self.out_dir, self._like = out_dir, like

    @property
    def samples(self):
        """The kept samples (read from ``out_dir`` and checked against their checksums on first access)."""
        if self._samples is None:
            self._samples = load_samples(self.out_dir, like=self._like)
        return self._samples

    @property
    def num_iterations(self) -> int:
        """Burn-in plus sampling iterations of the config."""
        return self.config.num_iterations

    @property
    def num_burnin(self) -> int:
        """Burn-in iterations of the config."""
        return self.config.num_burnin

    @property
    def mean_acceptance(self) -> float:
        """Mean acceptance probability after burn-in, over chains and iterations."""
        return float(np.mean(self.stats["acceptance_rate"][:, self.num_burnin:]))

    @property
    def num_divergences(self) -> int:
        """Divergent transitions after burn-in, summed over chains."""
        return int(np.sum(self.stats["is_divergent"][:, self.num_burnin:]))

    @property
    def num_burnin_divergences(self) -> int:
        """Divergent transitions during burn-in, summed over chains."""
        return int(np.sum(self.stats["is_divergent"][:, : self.num_burnin]))

    def summary(self) -> dict[str, Any]:
        """The sampler's health (:func:`~symlib.inference.diagnostics.summarize_hmc`) and the run's size.

        Returns:
            ``mean_acceptance``, ``num_divergences``, ``num_burnin_divergences``,
            ``step_size`` (list, one per chain), ``warnings`` (list of str), ``num_chains``,
            ``num_samples``, ``num_iterations``.
        """
        return {
            **summarize_hmc(self),
            "num_chains": self.config.num_chains,
            "num_samples": self.config.num_samples,
            "num_iterations": self.num_iterations,
        }

    def warning_messages(self) -> list[str]:
        """Human-readable problems with the run.

        Returns:
            One message per problem (acceptance after burn-in below 0.2 or above 0.99,
            divergent transitions); empty when the run looks fine.
        """
        msgs, acc, eps = [], self.mean_acceptance, _fmt_steps(self.step_size)
        n_iter = self.config.num_chains * self.config.num_samples * self.config.thin
        if acc < 0.2:
            msgs.append(f"mean acceptance after burn-in is {acc:.3f} (< 0.2) with step size {eps}: "
                        "the step size is probably too large; try a smaller one")
        elif acc > 0.99:
            msgs.append(f"mean acceptance after burn-in is {acc:.3f} (> 0.99) with step size {eps}: "
                        "the step size may be needlessly small (slow exploration); try a larger one")
        div, div_burn = self.num_divergences, self.num_burnin_divergences
        if div or (div_burn and not self.config.adapt_step_size):
            msgs.append(f"{div} of {n_iter} transitions after burn-in diverged ({div_burn} during burn-in) "
                        f"with step size {eps}: try a smaller step size")
        return msgs


def _fmt_steps(step_size: np.ndarray) -> str:
    vals = np.unique(np.round(np.asarray(step_size, float), 8))
    return f"{vals[0]:.4g}" if vals.size == 1 else f"{vals.min():.4g}..{vals.max():.4g}"
