"""Reference solvers for tests and benchmarks: plain, slow, obviously-correct versions of
symlib's fast algorithms (the original Git Re-Basin loop, generic solvers of the min-mass
problem, the all-in-memory MMD), the MMD baseline of ``benchmarks/bench_mmd.py`` (the
authors' distance-matrix approach) and the timing sweep of Wasserstein alignment.

Not part of the algorithms a researcher calls; kept in the package so that the tests,
the benchmarks and notebook 08 share one copy.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from symlib.core.checks import mlp_layer_names
from symlib.symmetry.alignment import wasserstein_alignment
from symlib.symmetry.matching import weight_matching
from symlib.symmetry.permutations import as_generator
from symlib.symmetry.mass_chain import mass_gradient, mass_terms
from symlib.symmetry.specs import flatten_params, mlp_permutation_spec, to_views


def reference_weight_matching(key, spec, params_a, params_b, max_iter=100, tol=1e-12):
    """The plain Git Re-Basin loop, for reference (tests, benchmarks): every step re-permutes B, rebuilds
    the full cost matrix and solves the LAP. Same sweep orders (one ``rng.permutation``
    per sweep from ``key``), same acceptance rule (strict LAP improvement) and same
    stopping rule (sweep improvement ``<= tol * |J|``) as ``symlib.symmetry.matching.weight_matching``.
    Float64 numpy throughout.

    Args:
        key: seed of the sweep orders (as for :func:`symlib.symmetry.matching.weight_matching`).
        spec: the :class:`~symlib.symmetry.specs.PermutationSpec` of the architecture.
        params_a: the reference network.
        params_b: the network to permute.
        max_iter: maximum number of sweeps.
        tol: stop after a sweep that improves the objective J by at most ``tol * |J|``.

    Returns:
        ``(perms, objective history, seconds in the LAP solver, number of LAP solves)``,
        with ``perms`` a dict from permutation name to index array.
    """
    fa = {k: np.asarray(v, np.float64) for k, v in to_views(spec, flatten_params(params_a)).items()}
    fb = {k: np.asarray(v, np.float64) for k, v in to_views(spec, flatten_params(params_b)).items()}
    rng = as_generator(key)
    names = sorted(spec.perm_names)  # the order symlib draws its sweeps over
    perms = {}
    for name, where in spec.perm_to_axes.items():
        path, axis = where[0]
        perms[name] = np.arange(fa[path].shape[axis])

    def permuted(path, except_axis=None):
        w = fb[path]
        for ax, q in enumerate(spec.axes[path]):
            if q is not None and ax != except_axis:
                w = np.take(w, perms[q], axis=ax)
        return w

    def objective():
        return sum(float(np.vdot(fa[p], permuted(p))) for p in spec.axes)

    obj = objective()
    history, lap_time, solves = [], 0.0, 0
    for _ in range(max_iter):
        order = rng.permutation(len(names))
        before = obj
        for k in order:
            name = names[k]
            n = len(perms[name])
            C = np.zeros((n, n))
            for path, axis in spec.perm_to_axes[name]:
                wa = np.moveaxis(fa[path], axis, 0).reshape(n, -1)
                wb = np.moveaxis(permuted(path, axis), axis, 0).reshape(n, -1)
                C += wa @ wb.T
            t = time.perf_counter()
            _, col = linear_sum_assignment(C, maximize=True)
            lap_time += time.perf_counter() - t
            solves += 1
            rows = np.arange(n)
            if not np.array_equal(col, perms[name]) and C[rows, col].sum() - C[rows, perms[name]].sum() > 0:
                perms[name] = col
        obj = objective()
        history.append(obj)
        if obj - before <= tol * abs(before):
            break
    return perms, history, lap_time, solves


def min_mass_lbfgs(params, max_iter: int = 100_000, ftol: float = 1e-15, gtol: float = 1e-12) -> tuple[float, int]:
    """Reference solution of the min-mass problem by a generic solver: scipy's L-BFGS-B on
    the log-scales with the analytic gradient; used by the tests and the benchmark to
    check :func:`symlib.symmetry.scaling.min_mass`.

    Args:
        params: one MLP (``dense_0 .. dense_{L-1}``, each ``kernel`` and ``bias``).
        max_iter: most L-BFGS-B iterations (twice as many function evaluations).
        ftol: L-BFGS-B's relative-reduction stopping tolerance (the default runs to about
            machine precision; the benchmark loosens it to stop at ``min_mass``'s accuracy).
        gtol: L-BFGS-B's projected-gradient stopping tolerance.

    Returns:
        ``(minimal mass, iterations)``.
    """
    from scipy.optimize import minimize

    W = _squared_kernels(params)
    widths = [w.shape[1] for w in W[:-1]]
    splits = np.cumsum(widths)[:-1]

    def fg(x):
        E = mass_terms(W, np.split(x, splits))
        return sum(e.sum() for e in E), np.concatenate(mass_gradient(E))

    res = minimize(fg, np.zeros(sum(widths)), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=max_iter, maxfun=2 * max_iter, ftol=ftol, gtol=gtol))
    return float(res.fun), int(res.nit)


def _squared_kernels(params) -> list[np.ndarray]:
    """Squared kernels of an MLP in float64, input to output."""
    return [np.asarray(params[n]["kernel"], dtype=np.float64) ** 2 for n in mlp_layer_names(params)]


def min_mass_cvxpy(params) -> tuple[float, list[np.ndarray], str]:
    """Reference solution of the min-mass problem with cvxpy (an optional dependency, in the
    ``test`` extra): the convex program in the log-scales, with the log-weights inside the
    exponential (better conditioned than ``weight * exp(...)``); for tests and benchmarks.

    Args:
        params: one MLP (``dense_0 .. dense_{L-1}``, each ``kernel`` and ``bias``).

    Returns:
        ``(minimal mass, log-scales per hidden layer, solver status)``.
    """
    import cvxpy as cp

    W = _squared_kernels(params)
    u = [cp.Variable(w.shape[1]) for w in W[:-1]]
    terms = []
    for l, w in enumerate(W):
        d_in, d_out = w.shape
        expo = 0
        if l < len(u):
            expo = expo + np.ones((d_in, 1)) @ cp.reshape(u[l], (1, d_out), order="C")
        if l > 0:
            expo = expo - cp.reshape(u[l - 1], (d_in, 1), order="C") @ np.ones((1, d_out))
        terms.append(cp.sum(cp.exp(2 * expo + np.log(np.maximum(w, 1e-300)))))
    prob = cp.Problem(cp.Minimize(sum(terms)))
    prob.solve()
    return float(prob.value), [np.asarray(v.value) for v in u], f"{prob.solver_stats.solver_name}, {prob.status}"


def random_gaussian_posterior(seed: int, sizes: Sequence[int], sigma_range: tuple[float, float] = (0.01, 0.1),
                              bias_scale: float = 0.1) -> tuple[dict, dict]:
    """A random "VI-like" mean-field posterior of an MLP with layer sizes ``sizes``.

    Means: He-normal kernels and ``N(0, bias_scale^2)`` biases; standard deviations
    ``softplus(rho)`` with ``rho`` uniform between ``softplus^-1`` of the two ends of
    ``sigma_range``.

    Args:
        seed: numpy seed.
        sizes: layer sizes ``[d_0, ..., d_L]``.
        sigma_range: ``(low, high)`` of the standard deviations.
        bias_scale: standard deviation of the bias means.

    Returns:
        ``(mu, sigma)``: float32 numpy pytrees in the layout of :func:`symlib.core.models.mlp_init`.

    Raises:
        ValueError: for fewer than two sizes, a non-positive size or a bad ``sigma_range``.
    """
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(f"sizes must list at least two positive widths, got {sizes}")
    lo, hi = (float(v) for v in sigma_range)
    if not 0 < lo <= hi:
        raise ValueError(f"sigma_range must satisfy 0 < low <= high, got {sigma_range}")
    rng = np.random.default_rng(seed)
    r_lo, r_hi = np.log(np.expm1(lo)), np.log(np.expm1(hi))
    mu, sigma = {}, {}
    for l, (d_in, d_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        mu[f"dense_{l}"] = {
            "kernel": (np.sqrt(2.0 / d_in) * rng.standard_normal((d_in, d_out))).astype(np.float32),
            "bias": (bias_scale * rng.standard_normal(d_out)).astype(np.float32),
        }
        sigma[f"dense_{l}"] = {
            name: np.logaddexp(0.0, rng.uniform(r_lo, r_hi, size=shape)).astype(np.float32)
            for name, shape in (("kernel", (d_in, d_out)), ("bias", (d_out,)))
        }
    return mu, sigma


def alignment_timings(widths: Sequence[int], depth: int = 3, seed: int = 0, *, input_dim: int = 784,
                      output_dim: int = 10, max_iter: int = 100) -> dict[str, list]:
    """Seconds for :func:`wasserstein_alignment` of two random VI-like posteriors
    (:func:`random_gaussian_posterior`) of a ``input_dim-width^depth-output_dim`` MLP, and
    for :func:`symlib.symmetry.matching.weight_matching` of their means alone, per width.

    Wall-clock times of the whole calls (validation and float64 conversion included), on
    whatever cores BLAS and the LAP threads get.

    Args:
        widths: hidden widths to time.
        depth: number of hidden layers.
        seed: seed of the two posteriors (``seed``, ``seed + 1``) and of the sweep orders.
        input_dim: input width of the MLP.
        output_dim: output width of the MLP.
        max_iter: maximum number of sweeps of each matching.

    Returns:
        Lists (one entry per width) under ``"width"``, ``"w2_seconds"``, ``"wm_seconds"``,
        ``"ratio"`` (w2 / wm), ``"w2_sweeps"``, ``"wm_sweeps"``, and the squared W2 distance
        before and after alignment (``"w2_sq_identity"``, ``"w2_sq"``).
    """

    depth = int(depth)
    spec = mlp_permutation_spec(depth)
    out: dict[str, list] = {k: [] for k in ("width", "w2_seconds", "wm_seconds", "ratio", "w2_sweeps", "wm_sweeps",
                                            "w2_sq_identity", "w2_sq")}
    for width in widths:
        sizes = [input_dim] + [int(width)] * depth + [output_dim]
        q0 = random_gaussian_posterior(seed, sizes)
        q1 = random_gaussian_posterior(seed + 1, sizes)
        t0 = time.perf_counter()
        w2 = wasserstein_alignment(seed + 2, spec, q0, q1, max_iter)
        t1 = time.perf_counter()
        wm = weight_matching(seed + 2, spec, q0[0], q1[0], max_iter)
        t2 = time.perf_counter()
        out["width"].append(int(width))
        out["w2_seconds"].append(t1 - t0)
        out["wm_seconds"].append(t2 - t1)
        out["ratio"].append((t1 - t0) / max(t2 - t1, 1e-12))
        out["w2_sweeps"].append(w2.sweeps)
        out["wm_sweeps"].append(wm.sweeps)
        out["w2_sq_identity"].append(float(w2.info["w2_sq_identity"]))
        out["w2_sq"].append(float(w2.info["w2_sq"]))
    return out


def mmd2_brute_force(x, y, kernel: str = "gaussian", bandwidth=1.0):
    """The unbiased MMD^2 of :func:`symlib.evaluation.mmd.mmd2_unbiased` the obvious way: all
    ``m x m x d``, ``n x n x d`` and ``m x n x d`` differences in memory at once, float64.

    For tests and benchmarks only (no checks; memory grows as ``(m + n)**2 * d``).

    Args:
        x: ``(m, d)`` samples.
        y: ``(n, d)`` samples.
        kernel: ``"gaussian"`` (``exp(-||a-b||_2^2 / l^2)``) or ``"laplace"`` (``exp(-||a-b||_1 / l)``).
        bandwidth: a number or a 1-D array of them.

    Returns:
        A float, or one value per bandwidth.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    bw = np.asarray(bandwidth, np.float64)

    def gram(a, b):
        diff = a[:, None, :] - b[None, :, :]
        if kernel == "gaussian":
            return np.exp(-np.sum(diff**2, axis=-1)[..., None] / bw**2)
        return np.exp(-np.sum(np.abs(diff), axis=-1)[..., None] / bw)

    m, n = len(x), len(y)
    kxx, kyy, kxy = gram(x, x), gram(y, y), gram(x, y)
    off = ~np.eye(m, dtype=bool), ~np.eye(n, dtype=bool)
    out = kxx[off[0]].mean(axis=0) + kyy[off[1]].mean(axis=0) - 2 * kxy.mean(axis=(0, 1))
    return float(out[0]) if bw.ndim == 0 else out



def _distance_matrix(a: np.ndarray, b: np.ndarray, metric: str, dtype) -> np.ndarray:
    """All distances between the rows of ``a`` and ``b`` (already ``dtype``), as ``torch.cdist``
    computes them: L2 from one matrix product (``sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0))`` in
    ``dtype``), L1 by :func:`scipy.spatial.distance.cdist` (no product shortcut exists)."""
    from scipy.spatial.distance import cdist

    if metric == "l1":
        return cdist(a, b, "cityblock").astype(dtype, copy=False)
    sq_a = np.einsum("ij,ij->i", a, a)
    sq_b = sq_a if b is a else np.einsum("ij,ij->i", b, b)
    dist = sq_a[:, None] + sq_b[None, :] - 2 * (a @ b.T)
    np.maximum(dist, 0, out=dist)
    return np.sqrt(dist, out=dist)


def mmd2_distance_matrix(x, y, kernel: str = "gaussian", bandwidth=1.0, dtype=np.float32):
    """The unbiased MMD^2 of :func:`symlib.evaluation.mmd.mmd2_unbiased` computed as Laurent et
    al.'s published code does (``mmd/mmd_torch.py`` of their repository, itself adapted from
    MMDAgg): the benchmark baseline of ``benchmarks/bench_mmd.py``. Written by us from that
    description, in numpy:

    * the two samples stacked into one ``(m + n, d)`` matrix ``Z`` and cast to ``dtype``
      (float32 by default: the authors' ``torch.cdist`` runs on float32 tensors);
    * **one** ``(m + n) x (m + n)`` distance matrix per metric: the L2 one as ``torch.cdist``
      computes it for more than 25 rows, from one matrix product, the L1 one by
      :func:`scipy.spatial.distance.cdist` (``"cityblock"``, on the ``dtype`` values);
    * then, **per bandwidth**, one ``(m + n)^2`` kernel matrix in ``dtype``
      (``exp(-(D / l)^2)`` Gaussian, ``exp(-D / l)`` Laplace), its diagonal zeroed, and the
      statistic from the sums of its three blocks (accumulated in float64).

    The authors' code also evaluates 2,000 permuted statistics per kernel (their test); only
    the statistic itself (their unpermuted column) is computed here. Memory grows as
    ``(m + n)**2`` plus the whole stacked sample.

    Args:
        x: ``(m, d)`` samples.
        y: ``(n, d)`` samples.
        kernel: ``"gaussian"`` (``exp(-||a-b||_2^2 / l^2)``) or ``"laplace"`` (``exp(-||a-b||_1 / l)``).
        bandwidth: a number or a 1-D array of them.
        dtype: float type of the stacked samples, distances and kernel matrices
            (``np.float64`` for a float64 reference).

    Returns:
        A float, or one value per bandwidth.
    """
    if kernel not in ("gaussian", "laplace"):
        raise ValueError(f"kernel must be 'gaussian' or 'laplace', got {kernel!r}")
    m, n = len(x), len(y)
    z = np.concatenate((np.asarray(x, dtype), np.asarray(y, dtype)))
    dist = _distance_matrix(z, z, "l2" if kernel == "gaussian" else "l1", dtype)
    bws = np.atleast_1d(np.asarray(bandwidth, np.float64))
    out = np.empty(len(bws))
    for i, bw in enumerate(bws):
        k = dist / dtype(bw)
        if kernel == "gaussian":
            np.square(k, out=k)
        np.exp(-k, out=k)
        np.fill_diagonal(k, 0)
        kxx = k[:m, :m].sum(dtype=np.float64)
        kyy = k[m:, m:].sum(dtype=np.float64)
        kxy = k[:m, m:].sum(dtype=np.float64)
        out[i] = kxx / (m * (m - 1)) + kyy / (n * (n - 1)) - 2 * kxy / (m * n)
    return float(out[0]) if np.ndim(bandwidth) == 0 else out


def mmd_bank_distance_matrix(x, y, num_bandwidths: int = 10, max_points: int = 500,
                             dtype=np.float32) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The 20-kernel bank of :func:`symlib.evaluation.mmd.mmd_kernel_bank` the authors' way
    (the baseline of ``benchmarks/bench_mmd.py``, part 2): for each metric, the bandwidths
    from the distances of ``x[:max_points]`` to ``y[:max_points]`` (one ``dtype`` distance
    matrix per metric, MMDAgg's rule as :func:`symlib.evaluation.mmd.mmd_bandwidths` reads
    it), then :func:`mmd2_distance_matrix` (one stacked distance matrix per metric, one
    kernel matrix per bandwidth).

    Returns:
        kernel name (``"gaussian"``, ``"laplace"``) -> ``(bandwidths, MMD^2 values)``.
    """
    out = {}
    for kernel, metric in (("laplace", "l1"), ("gaussian", "l2")):  # the authors' order: L1 first
        a, b = np.asarray(x[:max_points], dtype), np.asarray(y[:max_points], dtype)
        d = np.sort(_distance_matrix(a, b, metric, dtype).ravel().astype(np.float64))
        low = max(d[int(np.floor(len(d) * 0.05))], 0.1) if d[0] < 0.1 else d[0]
        low, high = low / 2, max(d[-1], 0.3) * 2
        bws = low * (high / low) ** (np.arange(num_bandwidths) / (num_bandwidths - 1))
        out[kernel] = (bws, mmd2_distance_matrix(x, y, kernel, bws, dtype))
    return out
