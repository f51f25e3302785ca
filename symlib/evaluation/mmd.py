"""Maximum mean discrepancy between posterior samples (Laurent et al., ICLR 2024, Sec. 4, App. B.4).

The paper compares each approximate posterior (100 samples) with a reference posterior
(1,000 independently trained checkpoints) layer by layer: every sample's flattened
weights of one layer are one vector, and the two sets of vectors are compared with the
unbiased MMD^2 under 20 kernels (10 Gaussian, 10 Laplace bandwidths); the table reports
the median over the kernels, averaged over layers weighted by parameter count.

* :func:`mmd2_unbiased`: the U-statistic MMD^2 for one kernel and one or many bandwidths.
* :func:`pairwise_distances`: L1 or L2 distance matrices, chunked.
* :func:`mmd_bandwidths`: the bandwidth rule of the authors' code (our reading of it).
* :func:`mmd_kernel_bank`: the 20 kernels and their median, mean and max.
* :func:`posterior_mmd`: the per-layer bank and the parameter-weighted aggregate.
* :func:`posterior_mmd_jackknife`: the same, and again without each group of either
  sample (a delete-a-group jackknife), every layer's distances computed once.

**Memory.** Distances are computed block by block: ``chunk_size`` rows of one sample
against ``chunk_size`` rows of the other, and within a block ``feature_chunk`` columns at
a time (float64 copies of the slices: squared L2 distances by one matrix product,
``||a||^2 + ||b||^2 - 2 a.b``, L1 by :func:`scipy.spatial.distance.cdist`), summed in
float64. Only slices are ever read, so the samples may be memory-mapped arrays
(``np.load(path, mmap_mode="r")``) far larger than memory (ResNet-18: 11M parameters x
1,000 samples); the working memory is ``O(chunk_size**2 * num_bandwidths +
chunk_size * feature_chunk)`` (by default about 64 MiB: blocks of 32 MiB, two alive at a
time). The time is that of all ``(m + n)**2 / 2`` distances:
the L1 distances (Laplace kernel) have no matrix-product shortcut.

**Several processes.** With ``processes=True`` (:func:`mmd2_unbiased`,
:func:`mmd_kernel_bank`, :func:`posterior_mmd`) the blocks of the statistic are dealt out
round-robin to the processes of JAX's distributed runtime (:mod:`symlib.core.distributed`),
each process reading only its blocks' rows (the samples may be memory-mapped files on a
shared filesystem), and the per-process sums are added up, so every process gets the
result (the same as one process's, to float rounding: the sums are added in another
order). Every process must then make the same call. The bandwidths' distances (at most
``2 * max_points`` rows) are computed by every process.

Samples are ``(m, d)`` arrays, one row per sample (numpy, memmap or anything
``np.asarray`` takes); bad input raises ``ValueError`` naming the argument.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

from symlib.core.checks import positive_int
from symlib.symmetry.specs import flatten_params

__all__ = [
    "KERNELS",
    "MMDBank",
    "MMDJackknife",
    "PosteriorMMD",
    "mmd2_unbiased",
    "mmd_bandwidths",
    "mmd_kernel_bank",
    "pairwise_distances",
    "posterior_mmd",
    "posterior_mmd_jackknife",
]

#: the kernels, each with the distance it is built on
KERNELS = ("gaussian", "laplace")
_METRIC = {"gaussian": "l2", "laplace": "l1"}
_METRICS = ("l1", "l2")  # L2 blocks hold SQUARED distances until the end
#: float64 numbers read per block when ``feature_chunk`` is not given (32 MiB)
_READ_BUDGET = 1 << 22


# --------------------------------------------------------------------------- reading samples


class _Columns:
    """The leaves of a stacked layer seen as one ``(S, d)`` matrix, without copying them:
    ``[rows]`` gives another view, ``[rows, cols]`` reads only that block."""

    def __init__(self, parts):
        self.parts = [p if p.ndim == 2 else np.reshape(p, (p.shape[0], -1)) for p in parts]
        self.ends = np.cumsum([p.shape[1] for p in self.parts])
        self.shape = (self.parts[0].shape[0], int(self.ends[-1]))
        self.ndim = 2
        self.dtype = np.result_type(*[p.dtype for p in self.parts])

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            return _Columns([p[key] for p in self.parts])
        rows, cols = key
        out, start = [], 0
        for p, end in zip(self.parts, self.ends):
            lo, hi = max(cols.start, start), min(cols.stop, end)
            if lo < hi:
                out.append(np.asarray(p[rows, lo - start:hi - start], np.float64))
            start = end
        return np.concatenate(out, axis=1)


def _samples(a, name: str, min_rows: int = 2):
    """``a`` as an ``(m, d)`` array-like (memmaps and :class:`_Columns` stay unread)."""
    if not isinstance(a, (np.ndarray, _Columns)):
        a = np.asarray(a)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise ValueError(f"{name} must be a numeric array, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must have shape (samples, features), got shape {a.shape}")
    if a.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} samples (rows), got {a.shape[0]}")
    if a.shape[1] < 1:
        raise ValueError(f"{name} needs at least one feature (column), got shape {a.shape}")
    return a


def _pair(x, y):
    x, y = _samples(x, "x"), _samples(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must have the same number of features, got x {x.shape} and y {y.shape}")
    return x, y


def _read(a, name: str, rows: slice, cols: slice) -> np.ndarray:
    block = a[rows, cols]
    block = block if isinstance(a, _Columns) else np.asarray(block, np.float64)
    if not np.all(np.isfinite(block)):
        raise ValueError(f"{name} contains NaN or inf (in rows {rows.start}..{rows.stop - 1})")
    return block


# --------------------------------------------------------------------------- distances


def _squared_l2(ba: np.ndarray, bb: np.ndarray) -> np.ndarray:
    """``||a_i - b_j||^2`` as ``||a_i||^2 + ||b_j||^2 - 2 a_i . b_j``: one float64 matrix
    product (about 8x faster than :func:`~scipy.spatial.distance.cdist`). Both blocks are
    first centred on ``ba``'s mean (distances do not move), so the cancellation costs about
    ``1e-16`` of the samples' spread, not of their distance from the origin."""
    centre = ba.mean(axis=0)
    ba, bb = ba - centre, bb - centre
    return np.einsum("ij,ij->i", ba, ba)[:, None] + np.einsum("ij,ij->i", bb, bb)[None, :] - 2.0 * (ba @ bb.T)


def _distance_block(a, b, names, rows_a: slice, rows_b: slice, metrics, feature_chunk) -> dict[str, np.ndarray]:
    """Distances (L1, and SQUARED L2) between rows ``rows_a`` of ``a`` and ``rows_b`` of ``b``.
    A block of a sample against itself (``a is b``, the same rows) is symmetric, with a zero
    diagonal, whatever the rounding of the matrix product."""
    d = a.shape[1]
    step = feature_chunk or max(1, _READ_BUDGET // (rows_a.stop - rows_a.start + rows_b.stop - rows_b.start))
    out = {m: 0.0 for m in metrics}
    for c0 in range(0, d, step):
        cols = slice(c0, min(c0 + step, d))
        ba, bb = _read(a, names[0], rows_a, cols), _read(b, names[1], rows_b, cols)
        for m in metrics:
            out[m] = out[m] + (_squared_l2(ba, bb) if m == "l2" else cdist(ba, bb, "cityblock"))
    if "l2" in out:
        out["l2"] = np.maximum(out["l2"], 0.0)
        if a is b and rows_a == rows_b:
            out["l2"] = (out["l2"] + out["l2"].T) / 2
            np.fill_diagonal(out["l2"], 0.0)
    return out


def _block_pairs(m: int, n: int, same: bool, chunk_size: int,
                 share: tuple[int, int] | None = None) -> Iterator[tuple[slice, slice]]:
    """The one chunk loop: ``(rows_a, rows_b)`` over an ``(m, n)`` distance matrix; with
    ``same`` (a sample against itself), upper blocks only (``rows_b.start >= rows_a.start``).
    With ``share = (index, count)`` only the blocks ``index, index + count, ...`` of that
    sequence."""
    index, count = share or (0, 1)
    number = 0
    for i0 in range(0, m, chunk_size):
        for j0 in range(i0 if same else 0, n, chunk_size):
            number += 1
            if (number - 1) % count == index:
                yield slice(i0, min(i0 + chunk_size, m)), slice(j0, min(j0 + chunk_size, n))


def _distance_blocks(a, b, names, metrics, chunk_size: int, feature_chunk,
                     share: tuple[int, int] | None = None) -> Iterator[tuple[slice, slice, dict]]:
    """``(rows_a, rows_b, {metric: block})`` over the distance matrix of ``a`` against ``b``
    (with ``b is None``, of ``a`` against itself), in the blocks of :func:`_block_pairs`."""
    same = b is None
    b = a if same else b
    for ra, rb in _block_pairs(a.shape[0], b.shape[0], same, chunk_size, share):
        yield ra, rb, _distance_block(a, b, names, ra, rb, metrics, feature_chunk)


def _three(x, y) -> tuple:
    """The statistic's three distance matrices as ``(a, b, names)``: ``x`` against itself,
    ``y`` against itself (``b`` None) and ``x`` against ``y``."""
    return (x, None, ("x", "x")), (y, None, ("y", "y")), (x, y, ("x", "y"))


def _full_distances(a, b, names, metrics, chunk_size: int, feature_chunk) -> dict[str, np.ndarray]:
    """The whole distance matrices (L1, and SQUARED L2) of ``a`` against ``b`` (``None``: itself)."""
    same = b is None
    out = {m: np.zeros((a.shape[0], (a if same else b).shape[0])) for m in metrics}
    for ra, rb, block in _distance_blocks(a, b, names, metrics, chunk_size, feature_chunk):
        for m in metrics:
            out[m][ra, rb] = block[m]
            if same:
                out[m][rb, ra] = block[m].T
    return out


def _matrix_blocks(d: Mapping[str, np.ndarray], same: bool, chunk_size: int) -> Iterator[tuple[slice, slice, dict]]:
    """The blocks of :func:`_distance_blocks` cut from whole distance matrices ``d``
    (metric -> matrix): the same numbers, to the rounding of the matrix products."""
    m, n = next(iter(d.values())).shape
    for ra, rb in _block_pairs(m, n, same, chunk_size):
        yield ra, rb, {k: v[ra, rb] for k, v in d.items()}


def _metric(metric) -> str:
    if metric not in _METRICS:
        raise ValueError(f"metric must be 'l1' or 'l2', got {metric!r}")
    return metric


def _chunks(chunk_size, feature_chunk) -> tuple[int, int | None]:
    return positive_int(chunk_size, "chunk_size"), positive_int(feature_chunk, "feature_chunk", allow_none=True)


def pairwise_distances(a, b=None, *, metric: str = "l2", chunk_size: int = 256,
                       feature_chunk: int | None = None) -> np.ndarray:
    """L1 or L2 distance matrix between the rows of ``a`` and of ``b`` (or of ``a`` itself), chunked.

    Args:
        a: ``(m, d)`` samples (numpy, memmap, ...).
        b: ``(n, d)`` samples, or None for the distances within ``a``.
        metric: ``"l2"`` (Euclidean) or ``"l1"`` (Manhattan).
        chunk_size: rows per block.
        feature_chunk: columns read at a time (default: 32 MiB of float64 per block).

    Returns:
        The float64 ``(m, n)`` (or ``(m, m)``) matrix.

    Raises:
        ValueError: naming ``a`` or ``b`` (not 2-D, no rows, different numbers of
            columns, NaN or inf), ``metric``, ``chunk_size`` or ``feature_chunk``.
    """
    metric = _metric(metric)
    chunk_size, feature_chunk = _chunks(chunk_size, feature_chunk)
    a = _samples(a, "a", min_rows=1)
    if b is not None:
        b = _samples(b, "b", min_rows=1)
        if a.shape[1] != b.shape[1]:
            raise ValueError(f"a and b must have the same number of columns, got a {a.shape} and b {b.shape}")
    out = _full_distances(a, b, ("a", "b" if b is not None else "a"), (metric,), chunk_size, feature_chunk)[metric]
    return np.sqrt(out) if metric == "l2" else out


# --------------------------------------------------------------------------- the statistic


def _bandwidths(bandwidth) -> tuple[np.ndarray, bool]:
    """``(1-D positive float64 array, was_scalar)``."""
    try:
        bw = np.asarray(bandwidth, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"bandwidth must be a positive number or a 1-D array of them, got {bandwidth!r}") from None
    if bw.ndim > 1 or bw.size == 0 or not np.all(np.isfinite(bw)) or np.any(bw <= 0):
        raise ValueError(f"bandwidth must be a positive finite number or a non-empty 1-D array of them, "
                         f"got {bandwidth!r}")
    return np.atleast_1d(bw), bw.ndim == 0


def _kernel(kernel):
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    return kernel


def _kernel_sum(kernel: str, block: Mapping[str, np.ndarray], bw: np.ndarray, diagonal: bool) -> np.ndarray:
    """Per bandwidth: the sum of the kernel over the block (its diagonal left out when ``diagonal``)."""
    if kernel == "gaussian":
        k = np.exp(-block["l2"][None] / bw[:, None, None] ** 2)
    else:
        k = np.exp(-block["l1"][None] / bw[:, None, None])
    s = k.sum(axis=(1, 2))
    return s - np.trace(k, axis1=1, axis2=2) if diagonal else s


def _metrics(kernels) -> tuple[str, ...]:
    return tuple(sorted({_METRIC[k] for k in kernels}))


def _kernel_sums(blocks, bws: Mapping[str, np.ndarray], same: bool) -> dict[str, np.ndarray]:
    """Per kernel and bandwidth, the kernel summed over the distance ``blocks``: with ``same``
    (a sample against itself, upper blocks), ``sum_{i != j} k(a_i, a_j)``, the blocks off
    the diagonal doubled; else over every pair."""
    sums = {k: np.zeros(bw.size) for k, bw in bws.items()}
    for ra, rb, block in blocks:
        on_diag = same and ra.start == rb.start
        for k, bw in bws.items():
            sums[k] += (2.0 if same and not on_diag else 1.0) * _kernel_sum(k, block, bw, on_diag)
    return sums


def _mmd2_of(sums: tuple[dict, dict, dict], m: int, n: int, bws: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    sxx, syy, sxy = sums
    return {k: sxx[k] / (m * (m - 1)) + syy[k] / (n * (n - 1)) - 2.0 * sxy[k] / (m * n) for k in bws}


def _process_share(processes: bool) -> tuple[int, int] | None:
    """``(process index, process count)`` when the blocks are split over several processes."""
    if not processes:
        return None
    import jax

    return (jax.process_index(), jax.process_count()) if jax.process_count() > 1 else None


def _mmd2(x, y, bws: Mapping[str, np.ndarray], chunk_size: int, feature_chunk,
          processes: bool = False) -> dict[str, np.ndarray]:
    """Unbiased MMD^2 for every kernel and bandwidth of ``bws``, one pass per distance matrix
    (its blocks split over the processes with ``processes``)."""
    share, metrics = _process_share(processes), _metrics(bws)
    sums = tuple(_kernel_sums(_distance_blocks(a, b, names, metrics, chunk_size, feature_chunk, share), bws, b is None)
                 for a, b, names in _three(x, y))
    if share is not None:
        from symlib.core.distributed import allgather

        kernels = list(bws)
        local = np.concatenate([part[k] for part in sums for k in kernels])
        total, start = allgather(local).sum(axis=0), 0
        for part in sums:
            for k in kernels:
                part[k] = total[start:start + part[k].size]
                start += part[k].size
    return _mmd2_of(sums, x.shape[0], y.shape[0], bws)


def mmd2_unbiased(x, y, kernel: str = "gaussian", bandwidth=1.0, *, chunk_size: int = 256,
                  feature_chunk: int | None = None, processes: bool = False):
    """The unbiased MMD^2 U-statistic between samples ``x`` and ``y`` (Gretton et al., 2012, Eq. 3).

    ``MMD^2_u = mean_{i != j} k(x_i, x_j) + mean_{i != j} k(y_i, y_j) - 2 mean_{i, j} k(x_i, y_j)``,
    an unbiased estimate of the squared MMD: it may be negative when the two
    distributions are (nearly) equal. Kernels: ``"gaussian"``,
    ``exp(-||a - b||_2^2 / bandwidth^2)``; ``"laplace"``, ``exp(-||a - b||_1 / bandwidth)``.
    Computed block by block in float64 (module docstring); several bandwidths share one
    pass over the distances.

    Args:
        x: ``(m, d)`` samples, ``m >= 2`` (numpy, memmap, ...).
        y: ``(n, d)`` samples, ``n >= 2``.
        kernel: ``"gaussian"`` or ``"laplace"``.
        bandwidth: a positive number, or a 1-D array of them.
        chunk_size: rows per block.
        feature_chunk: columns read at a time (default: 32 MiB of float64 per block).
        processes: split the blocks over the processes of JAX's distributed runtime
            (module docstring); every process must make the same call.

    Returns:
        A float, or a float64 array with one value per bandwidth.

    Raises:
        ValueError: naming ``x`` or ``y`` (not 2-D, fewer than 2 rows, different numbers
            of columns, non-numeric, NaN or inf), ``kernel``, ``bandwidth`` (not positive
            and finite), ``chunk_size`` or ``feature_chunk``.
    """
    kernel = _kernel(kernel)
    bw, scalar = _bandwidths(bandwidth)
    chunk_size, feature_chunk = _chunks(chunk_size, feature_chunk)
    x, y = _pair(x, y)
    out = _mmd2(x, y, {kernel: bw}, chunk_size, feature_chunk, processes)[kernel]
    return float(out[0]) if scalar else out


# --------------------------------------------------------------------------- bandwidths and the bank


def _cross(blocks, metrics) -> dict[str, np.ndarray]:
    """Every distance of the blocks of ``x`` against ``y``, per metric, L2 not squared."""
    parts = {m: [] for m in metrics}
    for _, _, block in blocks:
        for m in metrics:
            parts[m].append(np.ravel(block[m]))
    return {m: (np.sqrt if m == "l2" else np.asarray)(np.concatenate(p)) for m, p in parts.items()}


def _cross_distances(x, y, metrics, max_points: int, chunk_size: int, feature_chunk) -> dict[str, np.ndarray]:
    """:func:`_cross` of ``x[:max_points]`` against ``y[:max_points]``."""
    return _cross(_distance_blocks(x[:max_points], y[:max_points], ("x", "y"), metrics, chunk_size, feature_chunk),
                  metrics)


def _bandwidth_rule(dist: np.ndarray, num: int) -> np.ndarray:
    lo = float(dist.min())
    if lo < 0.1:
        lo = max(float(np.sort(dist)[int(np.floor(0.05 * dist.size))]), 0.1)
    lo = lo / 2
    hi = 2 * max(float(dist.max()), 0.3)
    return np.geomspace(lo, hi, num)


def mmd_bandwidths(x, y, num: int = 10, kernel: str = "gaussian", *, max_points: int = 500,
                   chunk_size: int = 256, feature_chunk: int | None = None) -> np.ndarray:
    """The bandwidths of the paper's kernel bank: ``num`` geometric steps over the scale of the data.

    The rule of MMDAgg (Schrab et al.), of which the authors' MMD code is a port
    (``docs/laurent_sec4.md``, "MMD"): the distances of every point of ``x[:max_points]``
    to every point of ``y[:max_points]`` (the two samples against each other only; L2 for
    the Gaussian kernel, L1 for the Laplace kernel). ``l_min`` is the smallest distance,
    or, when that is below 0.1, the 5% quantile (the sorted distances' entry
    ``floor(0.05 * count)``) floored at 0.1; it is then halved.
    ``l_max = 2 * max(largest distance, 0.3)``. The bandwidths are
    ``numpy.geomspace(l_min, l_max, num)``.

    Args:
        x: ``(m, d)`` samples, ``m >= 2``.
        y: ``(n, d)`` samples, ``n >= 2``.
        num: number of bandwidths.
        kernel: ``"gaussian"`` or ``"laplace"``.
        max_points: rows of each sample used (the first ones).
        chunk_size: rows per block.
        feature_chunk: columns read at a time.

    Returns:
        ``(num,)`` increasing float64 bandwidths.

    Raises:
        ValueError: naming the argument, as for :func:`mmd2_unbiased` (and ``num``,
            ``max_points``).
    """
    kernel = _kernel(kernel)
    num, max_points = positive_int(num, "num"), positive_int(max_points, "max_points")
    chunk_size, feature_chunk = _chunks(chunk_size, feature_chunk)
    x, y = _pair(x, y)
    metric = _METRIC[kernel]
    return _bandwidth_rule(_cross_distances(x, y, (metric,), max_points, chunk_size, feature_chunk)[metric], num)


@dataclass(frozen=True)
class MMDBank:
    """MMD^2 under a bank of kernels (:func:`mmd_kernel_bank`).

    Attributes:
        values: kernel name -> ``(num_bandwidths,)`` MMD^2 values.
        bandwidths: kernel name -> the bandwidths used.
        median: median over all kernels and bandwidths (the paper's statistic).
        mean: mean over them.
        max: maximum over them.
    """

    values: dict[str, np.ndarray]
    bandwidths: dict[str, np.ndarray]
    median: float
    mean: float
    max: float


def mmd_kernel_bank(x, y, num_bandwidths: int = 10, *, kernels=KERNELS, max_points: int = 500,
                    chunk_size: int = 256, feature_chunk: int | None = None, processes: bool = False) -> MMDBank:
    """The paper's 20 MMDs: unbiased MMD^2 for ``num_bandwidths`` Gaussian and Laplace kernels.

    Bandwidths from :func:`mmd_bandwidths` for each kernel; the L1 and L2 distances are
    computed in the same passes (one for the bandwidths, one per distance matrix of the
    statistic).

    Args:
        x: ``(m, d)`` samples, ``m >= 2`` (numpy, memmap, ...).
        y: ``(n, d)`` samples, ``n >= 2``.
        num_bandwidths: bandwidths per kernel.
        kernels: kernel names, a non-empty subset of :data:`KERNELS`.
        max_points: rows of each sample used to choose the bandwidths.
        chunk_size: rows per block.
        feature_chunk: columns read at a time.
        processes: split the statistic's blocks over the processes of JAX's distributed
            runtime, as for :func:`mmd2_unbiased`.

    Returns:
        An :class:`MMDBank`.

    Raises:
        ValueError: naming the argument, as for :func:`mmd2_unbiased` and
            :func:`mmd_bandwidths`, or ``kernels``.
    """
    kernels, num_bandwidths, max_points = _bank_settings(kernels, num_bandwidths, max_points)
    chunk_size, feature_chunk = _chunks(chunk_size, feature_chunk)
    x, y = _pair(x, y)
    dist = _cross_distances(x, y, _metrics(kernels), max_points, chunk_size, feature_chunk)
    bws = {k: _bandwidth_rule(dist[_METRIC[k]], num_bandwidths) for k in kernels}
    return _bank(_mmd2(x, y, bws, chunk_size, feature_chunk, processes), bws, kernels)


def _bank_settings(kernels, num_bandwidths, max_points) -> tuple[tuple[str, ...], int, int]:
    kernels = tuple(kernels) if not isinstance(kernels, str) else (kernels,)
    if not kernels or len(set(kernels)) != len(kernels) or any(k not in KERNELS for k in kernels):
        raise ValueError(f"kernels must be distinct names from {KERNELS}, got {kernels!r}")
    return kernels, positive_int(num_bandwidths, "num_bandwidths"), positive_int(max_points, "max_points")


def _bank(values: dict[str, np.ndarray], bws: dict[str, np.ndarray], kernels) -> MMDBank:
    every = np.concatenate([values[k] for k in kernels])
    return MMDBank(values=values, bandwidths=bws, median=float(np.median(every)), mean=float(np.mean(every)),
                   max=float(np.max(every)))


def _bank_of_matrices(d: Mapping[str, Mapping[str, np.ndarray]], kernels, num_bandwidths: int, max_points: int,
                      chunk_size: int) -> MMDBank:
    """:func:`mmd_kernel_bank` from whole distance matrices ``d`` (``"xx"``, ``"yy"``,
    ``"xy"``: metric -> matrix) instead of the samples: the same blocks, the same numbers."""
    m, n = next(iter(d["xy"].values())).shape
    first = {k: v[:max_points, :max_points] for k, v in d["xy"].items()}
    dist = _cross(_matrix_blocks(first, False, chunk_size), _metrics(kernels))
    bws = {k: _bandwidth_rule(dist[_METRIC[k]], num_bandwidths) for k in kernels}
    sums = tuple(_kernel_sums(_matrix_blocks(d[part], part != "xy", chunk_size), bws, part != "xy")
                 for part in ("xx", "yy", "xy"))
    return _bank(_mmd2_of(sums, m, n, bws), bws, kernels)


# --------------------------------------------------------------------------- per layer


@dataclass(frozen=True)
class PosteriorMMD:
    """Layer-wise MMD between two posterior samples (:func:`posterior_mmd`).

    Attributes:
        per_layer: layer name -> its :class:`MMDBank`.
        weights: layer name -> its number of parameters (per sample).
        median: the paper's number: the mean over layers, weighted by ``weights``, of
            each layer's median over kernels.
        mean: the same weighted mean of each layer's mean over kernels.
        max: the same weighted mean of each layer's max over kernels.
    """

    per_layer: dict[str, MMDBank]
    weights: dict[str, int]
    median: float
    mean: float
    max: float


def _stack_layout(stack: Mapping, name: str) -> dict[str, dict[str, object]]:
    """Layer -> {leaf path -> leaf}, after checking every leaf has the same leading size."""
    if not isinstance(stack, Mapping) or not stack:
        raise ValueError(f"{name} must be a non-empty dict of stacked parameters, got {type(stack).__name__}")
    layers, size = {}, None
    for layer, sub in stack.items():
        leaves = flatten_params(sub) if isinstance(sub, Mapping) else {"": sub}
        for path, leaf in leaves.items():
            shape = np.shape(leaf)
            full = f"{layer}/{path}".rstrip("/")
            if len(shape) < 1:
                raise ValueError(f"{name}[{full!r}] has no leading sample axis (shape {shape})")
            if size is not None and shape[0] != size[1]:
                raise ValueError(f"{name}[{full!r}] holds {shape[0]} samples but {name}[{size[0]!r}] holds {size[1]}")
            size = size or (full, shape[0])
        layers[layer] = leaves
    return layers


def _check_same_layout(lx: Mapping, ly: Mapping) -> None:
    for layer in dict.fromkeys([*lx, *ly]):
        px, py = lx.get(layer, {}), ly.get(layer, {})
        for path in dict.fromkeys([*px, *py]):
            full = f"{layer}/{path}".rstrip("/")
            if path not in px or path not in py:
                where = "samples_x" if path not in px else "samples_y"
                raise ValueError(f"leaf {full!r} is missing from {where}")
            sx, sy = np.shape(px[path])[1:], np.shape(py[path])[1:]
            if sx != sy:
                raise ValueError(f"leaf {full!r} has per-sample shape {sx} in samples_x but {sy} in samples_y")


def _layer_matrix(leaves: Mapping[str, object]):
    parts = [leaf if isinstance(leaf, np.ndarray) else np.asarray(leaf) for leaf in leaves.values()]
    return _Columns(parts)


def posterior_mmd(samples_x: Mapping, samples_y: Mapping, *, layers=None, num_bandwidths: int = 10,
                  kernels=KERNELS, max_points: int = 500, chunk_size: int = 256,
                  feature_chunk: int | None = None, processes: bool = False) -> PosteriorMMD:
    """The paper's layer-wise MMD between two stacks of networks (Sec. 4, App. B.4).

    A layer is a top-level key of the parameter pytree (``"dense_0"``: its kernel and
    bias, flattened and concatenated per sample, the leaves of both stacks matched by name
    whatever their order in the dicts). Each layer gets a :func:`mmd_kernel_bank`;
    the aggregate is the mean over layers weighted by their parameter counts of the
    layers' median (and mean, and max) over kernels. The leaves are read block by block
    (memmapped leaves are never loaded whole).

    Args:
        samples_x: stacked parameters (leading axis = samples), e.g. the reference
            posterior; every leaf has the same number of samples (>= 2).
        samples_y: the other stack, same layout (sizes may differ).
        layers: names of the layers to compare (default: all, in ``samples_x``'s order).
        num_bandwidths: bandwidths per kernel.
        kernels: kernel names (default both: 20 kernels in all).
        max_points: rows of each stack used to choose the bandwidths.
        chunk_size: rows per block.
        feature_chunk: columns read at a time.
        processes: split each layer's statistic over the processes of JAX's distributed
            runtime, as for :func:`mmd2_unbiased`.

    Returns:
        A :class:`PosteriorMMD`.

    Raises:
        ValueError: naming the first leaf that is missing from one stack or has another
            per-sample shape, a leaf whose sample count differs from the other leaves
            of its stack, an unknown layer, and the errors of :func:`mmd_kernel_bank`.
    """
    per_layer, weights = {}, {}
    for layer, (x, y) in _layer_pairs(samples_x, samples_y, layers).items():
        per_layer[layer] = mmd_kernel_bank(x, y, num_bandwidths, kernels=kernels, max_points=max_points,
                                           chunk_size=chunk_size, feature_chunk=feature_chunk, processes=processes)
        weights[layer] = x.shape[1]
    return _aggregate(per_layer, weights)


def _layer_pairs(samples_x: Mapping, samples_y: Mapping, layers) -> dict[str, tuple[_Columns, _Columns]]:
    """Layer -> its ``(x, y)`` matrices (:class:`_Columns`, unread), for the chosen layers in
    order; ``y``'s leaves are taken by name in ``x``'s order, so the columns match whatever
    order each stack's dicts hold them in."""
    lx, ly = _stack_layout(samples_x, "samples_x"), _stack_layout(samples_y, "samples_y")
    _check_same_layout(lx, ly)
    chosen = list(lx) if layers is None else list(layers)
    unknown = [layer for layer in chosen if layer not in lx]
    if unknown or not chosen:
        raise ValueError(f"layers must name some of the layers {list(lx)}; unknown {unknown}")
    return {layer: (_layer_matrix(lx[layer]), _layer_matrix({path: ly[layer][path] for path in lx[layer]}))
            for layer in chosen}


def _aggregate(per_layer: dict[str, MMDBank], weights: dict[str, int]) -> PosteriorMMD:
    """The parameter-weighted mean over the layers of ``per_layer`` (in its order)."""
    w = np.array([weights[layer] for layer in per_layer], np.float64)

    def weighted(stat: str) -> float:
        return float(np.dot(w, [getattr(bank, stat) for bank in per_layer.values()]) / w.sum())

    return PosteriorMMD(per_layer=per_layer, weights=dict(weights), median=weighted("median"), mean=weighted("mean"),
                        max=weighted("max"))


@dataclass(frozen=True)
class MMDJackknife:
    """:func:`posterior_mmd` and its delete-a-group jackknife replicates
    (:func:`posterior_mmd_jackknife`).

    Attributes:
        full: the :class:`PosteriorMMD` of all the samples.
        groups_x: the groups of ``samples_x``, sorted (``numpy.unique``).
        without_x: ``(len(groups_x),)``: the aggregate median (``PosteriorMMD.median``)
            without each group of ``samples_x``, ``samples_y`` whole.
        groups_y: the groups of ``samples_y``, sorted.
        without_y: ``(len(groups_y),)``: the same without each group of ``samples_y``.
    """

    full: PosteriorMMD
    groups_x: np.ndarray
    without_x: np.ndarray
    groups_y: np.ndarray
    without_y: np.ndarray


def _groups(groups, rows: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(labels per row, the sorted labels)``, after checking every replicate keeps 2 rows."""
    g = np.asarray(groups)
    if g.shape != (rows,):
        raise ValueError(f"{name} must give the group of each of the {rows} samples, got shape {g.shape}")
    labels, counts = np.unique(g, return_counts=True)
    if len(labels) < 2:
        raise ValueError(f"{name} has {len(labels)} group; a jackknife leaves one out of at least 2")
    if rows - counts.max() < 2:
        raise ValueError(f"{name}: leaving out group {labels[np.argmax(counts)].item()!r} keeps {rows - counts.max()} "
                         f"sample(s); the MMD needs at least 2")
    return g, labels


def posterior_mmd_jackknife(samples_x: Mapping, samples_y: Mapping, groups_x, groups_y, *, layers=None,
                            num_bandwidths: int = 10, kernels=KERNELS, max_points: int = 500,
                            chunk_size: int = 256, feature_chunk: int | None = None) -> MMDJackknife:
    """:func:`posterior_mmd` of two stacks, and again without each group of either stack: the
    replicates of a delete-a-group jackknife over their independent units (the networks of
    a reference posterior, the modes of a multi-mode approximation).

    Each layer's distances are computed once, as whole matrices, and every replicate is
    read from them: a replicate is :func:`posterior_mmd` of the remaining samples (its
    bandwidths chosen anew from them), the same numbers up to float rounding: the squared
    L2 distances come from matrix products, whose rounding may depend on the rows computed
    together, and a layer's distances are read in several pieces of columns when it has
    more than 8,192 numbers with the default ``feature_chunk``. Memory: the whole ``(m + n)**2`` distances of
    one layer at a time, per metric (float64; 1,000 and 100 samples: 10 MB).

    Args:
        samples_x: stacked parameters, ``m`` samples (as for :func:`posterior_mmd`).
        samples_y: the other stack, ``n`` samples.
        groups_x: ``(m,)`` the group of each sample of ``samples_x`` (any labels); a
            replicate leaves out all the samples of one group, and keeps at least 2.
        groups_y: ``(n,)`` the same for ``samples_y``.
        layers, num_bandwidths, kernels, max_points, chunk_size, feature_chunk: as for
            :func:`posterior_mmd`.

    Returns:
        An :class:`MMDJackknife`.

    Raises:
        ValueError: naming ``groups_x`` or ``groups_y`` (not one label a sample, fewer
            than 2 groups, a group whose removal leaves fewer than 2 samples), and the
            errors of :func:`posterior_mmd`.
    """
    kernels, num_bandwidths, max_points = _bank_settings(kernels, num_bandwidths, max_points)
    chunk_size, feature_chunk = _chunks(chunk_size, feature_chunk)
    pairs = _layer_pairs(samples_x, samples_y, layers)
    x0, y0 = _pair(*next(iter(pairs.values())))
    gx, labels_x = _groups(groups_x, x0.shape[0], "groups_x")
    gy, labels_y = _groups(groups_y, y0.shape[0], "groups_y")
    every_x, every_y = np.arange(x0.shape[0]), np.arange(y0.shape[0])
    keeps = ([(every_x, every_y)] + [(np.flatnonzero(gx != u), every_y) for u in labels_x]
             + [(every_x, np.flatnonzero(gy != u)) for u in labels_y])
    banks: list[dict[str, MMDBank]] = [{} for _ in keeps]
    weights = {}
    metrics = _metrics(kernels)
    for layer, (x, y) in pairs.items():
        x, y = _pair(x, y)
        d = {part: _full_distances(a, b, names, metrics, chunk_size, feature_chunk)
             for part, (a, b, names) in zip(("xx", "yy", "xy"), _three(x, y))}
        for bank, (kx, ky) in zip(banks, keeps):
            rows = {"xx": (kx, kx), "yy": (ky, ky), "xy": (kx, ky)}
            cut = {part: {k: v[np.ix_(*rows[part])] for k, v in by.items()} for part, by in d.items()}
            bank[layer] = _bank_of_matrices(cut, kernels, num_bandwidths, max_points, chunk_size)
        weights[layer] = x.shape[1]
    replicates = np.array([_aggregate(bank, weights).median for bank in banks[1:]], float)
    return MMDJackknife(full=_aggregate(banks[0], weights), groups_x=labels_x, without_x=replicates[:len(labels_x)],
                        groups_y=labels_y, without_y=replicates[len(labels_x):])
