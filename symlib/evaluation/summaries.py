"""Diagonal-Gaussian summaries of a stack of networks (Xiao et al. 2023, Sec. 3).

Given ``K`` networks (posterior samples, ensemble members), stacked on a leading axis
of every leaf:

* :func:`direct_summary` gives ``q_d = N(mu_d, diag(sigma_d^2))``: the per-weight sample
  mean and standard deviation of the raw samples. Because of permutation symmetry the
  samples sit in different "basins", so ``mu_d`` is a poor network and ``sigma_d`` large.
* :func:`rebasin_summary` gives ``q_r = N(mu_r, diag(sigma_r^2))``: every sample is first
  permuted (:mod:`symlib.symmetry.matching`, weight or activation matching) into the frame of one
  shared reference (by default one of the samples, "an arbitrary shared reference
  sample" in the paper), then the same statistics are taken.

Statistics
----------
The standard deviation is the population one (``ddof=0``, divide by ``K``), as
``numpy.std``'s default; at least two samples are required. Both moments are computed by
a two-pass algorithm (mean, then the sum of squared deviations from it) in float64,
``chunk`` samples at a time (default: about 2**23 parameters, 64 MiB of float64, per
chunk). Only one chunk is ever converted to float64 (and, for ``q_r``, permuted), so
1,000 samples of a 407k-parameter network need no copy of the stack: the extra memory
is one chunk plus the float64 accumulators. JAX leaves are sliced chunk by chunk and
moved to the host one chunk at a time. The results are numpy arrays in the dtype of the
samples (float64 for integer samples).

Results are :class:`GaussianSummary` objects; :func:`summary_to_samples` draws from
them (:func:`symlib.evaluation.predictive.sample_gaussian`), :func:`flatten_summary` gives the
flat ``(P,)`` vectors of means and standard deviations (:func:`~symlib.core.pytree.tree_to_vector` and
:func:`~symlib.core.pytree.vector_to_tree` live in :mod:`symlib.core.pytree` and are
importable from here too).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from symlib.core.pytree import tree_to_vector, vector_to_tree
from symlib.core.gaussian import DiagonalGaussian
from symlib.evaluation.predictive import chunk_bounds, chunk_size, params_per_sample, sample_gaussian
from symlib.evaluation.predictive import stack_size as _leading_size
from symlib.symmetry import permutations as _perm
from symlib.symmetry.specs import PermutationSpec, check_spec

__all__ = [
    "GaussianSummary",
    "METHODS",
    "direct_summary",
    "flatten_summary",
    "grouped_rebasin_summary",
    "rebasin_summary",
    "summary_to_samples",
    "tree_to_vector",
    "vector_to_tree",
]

PyTree = Any

#: Matching methods accepted by :func:`rebasin_summary`.
METHODS = ("weight", "activation")

# about 2**23 parameters (64 MiB of float64) per chunk of samples
_CHUNK_PARAMS = 2**23


@dataclass
class GaussianSummary:
    """A diagonal Gaussian ``N(mu, diag(sigma^2))`` over the weights of one network.

    Attributes:
        mu: pytree with the layout of ONE network (numpy arrays): the means.
        sigma: the standard deviations, same layout.
        perms: for ``q_r``, permutation name -> int64 ``(K, n)`` array, row ``s`` being
            the permutation (gather convention of :mod:`symlib.symmetry.specs`) that
            aligned sample ``s`` to the reference
            (``apply_permutation_many(spec, perms, samples)`` is the aligned stack);
            ``None`` for ``q_d``.
        reference_index: index of the sample used as the reference (its row of
            ``perms`` is the identity), or ``None`` (``q_d``, or an explicit reference
            network).
        num_samples: ``K``.
        method: ``"direct"``, ``"weight"`` or ``"activation"``.
        info: extra numbers (e.g. the matching objectives).
    """

    mu: PyTree
    sigma: PyTree
    perms: dict[str, np.ndarray] | None = None
    reference_index: int | None = None
    num_samples: int | None = None
    method: str = "direct"
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def gaussian(self) -> DiagonalGaussian:
        """The summary's distribution as the library's one diagonal Gaussian, ``(mu, sigma)``
        (what VI fits and the Wasserstein alignment takes)."""
        return DiagonalGaussian(self.mu, self.sigma)

    @property
    def num_params(self) -> int:
        """Number of weights ``P`` of one network."""
        return int(sum(np.size(a) for a in jax.tree_util.tree_leaves(self.mu)))


# --------------------------------------------------------------------------- flat vectors


def flatten_summary(summary: GaussianSummary) -> tuple[np.ndarray, np.ndarray]:
    """The means and standard deviations of a summary as flat vectors.

    Args:
        summary: a :class:`GaussianSummary`.

    Returns:
        ``(mu, sigma)``, float64 numpy ``(P,)`` vectors in the leaf order of
        :func:`symlib.core.pytree.tree_to_vector` (dict keys sorted).
    """
    return tree_to_vector(summary.mu), tree_to_vector(summary.sigma)


# --------------------------------------------------------------------------- moments


def _stack_size(samples_stack: PyTree) -> int:
    """Number of samples ``K >= 2`` of the stack (the shared leading axis)."""
    k = _leading_size(samples_stack)
    if k < 2:
        raise ValueError(f"a mean and standard deviation need at least 2 samples, samples_stack holds {k}")
    return k


def _out_dtype(leaf) -> np.dtype:
    dt = np.dtype(getattr(leaf, "dtype", np.asarray(leaf).dtype))
    return dt if jax.numpy.issubdtype(dt, jax.numpy.floating) else np.dtype(np.float64)


def _leaf_paths(tree: PyTree) -> list[str]:
    return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


def _moments(samples_stack: PyTree, transform: Callable[[PyTree, int, int], PyTree] | None = None,
             chunk: int | None = None) -> tuple[PyTree, PyTree]:
    """Per-weight mean and population std (ddof=0) over the leading axis, two-pass in
    float64, ``chunk`` samples at a time; ``transform(chunk_tree, start, stop)`` (e.g. a
    permutation) is applied to every chunk, in both passes, before it is accumulated."""
    num = _stack_size(samples_stack)
    leaves, treedef = jax.tree_util.tree_flatten(samples_stack)
    c = chunk_size(chunk, num, params_per_sample(samples_stack), name="chunk", budget=_CHUNK_PARAMS, cap=None)

    def chunks():
        for start, stop in chunk_bounds(num, c):
            part = [np.asarray(a[start:stop]) for a in leaves]
            if transform is not None:
                tree = transform(jax.tree_util.tree_unflatten(treedef, part), start, stop)
                part = treedef.flatten_up_to(tree)
            yield [np.asarray(a, dtype=np.float64) for a in part]

    sums = [np.zeros(np.shape(a)[1:], np.float64) for a in leaves]
    for part in chunks():
        for s, a in zip(sums, part):
            s += a.sum(axis=0)
    means = [s / num for s in sums]
    bad = [i for i, m in enumerate(means) if not np.all(np.isfinite(m))]
    if bad:
        names = _leaf_paths(samples_stack)
        raise ValueError(f"samples_stack holds NaN or inf in {[names[i] for i in bad]}")
    sq = [np.zeros_like(m) for m in means]
    for part in chunks():
        for s, a, m in zip(sq, part, means):
            d = a - m
            s += np.einsum("i...,i...->...", d, d)
    dtypes = [_out_dtype(a) for a in leaves]
    mu = [m.astype(dt) for m, dt in zip(means, dtypes)]
    sigma = [np.sqrt(s / num).astype(dt) for s, dt in zip(sq, dtypes)]
    return jax.tree_util.tree_unflatten(treedef, mu), jax.tree_util.tree_unflatten(treedef, sigma)


# --------------------------------------------------------------------------- summaries


def direct_summary(samples_stack: PyTree, *, chunk: int | None = None) -> GaussianSummary:
    """``q_d``: per-weight mean and standard deviation (``ddof=0``) of the raw samples.

    See the module docstring for the chunked float64 two-pass computation.

    Args:
        samples_stack: any pytree (numpy or JAX leaves) with the same leading sample
            axis ``K >= 2`` on every leaf.
        chunk: samples converted to float64 at a time (default: about 2**23 parameters'
            worth).

    Returns:
        A :class:`GaussianSummary` with ``method="direct"``; its ``perms`` and
        ``reference_index`` are ``None``.

    Raises:
        ValueError: if the stack has no parameters, fewer than 2 samples, leaves without
            a common leading axis, NaN or inf, or ``chunk`` is not a positive integer.
    """
    num = _stack_size(samples_stack)
    mu, sigma = _moments(samples_stack, chunk=chunk)
    return GaussianSummary(mu=mu, sigma=sigma, perms=None, reference_index=None, num_samples=num, method="direct")


def _sample(samples_stack: Mapping, index: int) -> PyTree:
    return jax.tree_util.tree_map(lambda a: np.asarray(a[index]), samples_stack)


def _check_index(reference_index, num: int) -> int:
    if isinstance(reference_index, bool) or not isinstance(reference_index, (int, np.integer)):
        raise ValueError(f"reference_index must be an int, got {reference_index!r}")
    i = int(reference_index)
    if not -num <= i < num:
        raise ValueError(f"reference_index {i} is out of range for a stack of {num} samples")
    return i % num


def rebasin_summary(
    samples_stack: Mapping,
    spec: PermutationSpec,
    *,
    reference: Mapping | None = None,
    reference_index: int = 0,
    method: str = "weight",
    key=0,
    data=None,
    max_iter: int = 100,
    chunk: int | None = None,
    match_kwargs: Mapping[str, Any] | None = None,
) -> GaussianSummary:
    """``q_r``: mean and standard deviation (``ddof=0``) after aligning every sample to one
    shared reference.

    Every sample ``s`` is matched to the reference:

    * ``method="weight"``: weight matching, all samples at once with
      :func:`symlib.symmetry.matching.weight_matching_many` (``key``, ``max_iter``);
    * ``method="activation"``: :func:`symlib.symmetry.matching.activation_matching` of each
      sample, over the inputs ``data`` (an ``(N, d_0)`` array or an iterable of batches;
      required, else ``ValueError``); ``key`` and ``max_iter`` are unused.

    ``match_kwargs`` are passed on to the matching function (e.g. ``chunk_size``,
    ``num_threads``, ``precision`` for weight matching; ``batch_size``, ``apply_fn`` for
    activation matching). When the reference is a sample of the stack, its own row of
    ``perms`` is set to the identity (it defines the frame; matching a network to itself
    returns the identity anyway, up to ties between identical units).

    The aligned samples are never stored: each chunk is permuted on the fly while the
    moments are accumulated (module docstring).

    Args:
        samples_stack: a (nested) dict of parameters with a leading sample axis
            ``K >= 2``, fitting ``spec`` (``batch_dims=1``).
        spec: the :class:`~symlib.symmetry.specs.PermutationSpec` of the network.
        reference: a params pytree of one network to align to; if ``None``, sample
            ``reference_index`` of the stack.
        reference_index: index of the reference sample (negative indices count from the
            end; ignored when ``reference`` is given).
        method: ``"weight"`` or ``"activation"`` (:data:`METHODS`).
        key: PRNG key (or int seed) of the weight-matching sweep orders.
        data: inputs for activation matching.
        max_iter: sweeps of weight matching.
        chunk: samples aligned and accumulated at a time (as in :func:`direct_summary`).
        match_kwargs: extra keyword arguments of the matching function.

    Returns:
        A :class:`GaussianSummary` with the permutations found (``perms[name]``:
        ``(K, n)``) and ``info["objective"]`` the final matching objective of every
        sample (weight: J; activation: the total matched correlation over all layers).

    Raises:
        TypeError: if ``spec`` is not a ``PermutationSpec`` or ``samples_stack`` not a dict.
        ValueError: for an unknown ``method``, activation matching without ``data``, an
            out-of-range ``reference_index``, a stack that does not fit ``spec``, or the
            errors of :func:`direct_summary`.
    """
    from symlib.symmetry.matching import activation_matching, apply_permutation_many, weight_matching_many

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods are {list(METHODS)}")
    if not isinstance(spec, PermutationSpec):
        raise TypeError(f"spec must be a PermutationSpec, got {type(spec).__name__}")
    if not isinstance(samples_stack, Mapping):
        raise TypeError(f"samples_stack must be a (nested) dict of parameters, got {type(samples_stack).__name__}")
    num = _stack_size(samples_stack)
    try:
        sizes = check_spec(spec, samples_stack, batch_dims=1)
    except ValueError as e:
        raise ValueError(f"samples_stack does not fit the spec: {e}") from None
    if reference is None:
        ref_index: int | None = _check_index(reference_index, num)
        ref = _sample(samples_stack, ref_index)
    else:
        ref_index = None
        ref = reference
    if method == "activation" and data is None:
        raise ValueError("method='activation' needs data: the inputs over which activations are correlated")
    kwargs = dict(match_kwargs or {})

    if method == "weight":
        res = weight_matching_many(key, spec, ref, samples_stack, max_iter, **kwargs)
        perms = {name: np.array(res.perms[name], dtype=np.int64) for name in spec.perm_names}
        objective = np.asarray(res.objective, dtype=np.float64)
        info = {"objective": objective, "sweeps": np.asarray(res.sweeps), "converged": np.asarray(res.converged),
                "total_time": res.total_time}
    else:
        perms = {name: np.empty((num, sizes[name]), np.int64) for name in spec.perm_names}
        objective = np.full(num, np.nan)
        for s in range(num):
            if s == ref_index:
                continue
            r = activation_matching(spec, ref, _sample(samples_stack, s), data, **kwargs)
            for name in spec.perm_names:
                perms[name][s] = r.perms[name]
            objective[s] = float(np.sum(r.objective))
        info = {"objective": objective}
    if ref_index is not None:
        for name in spec.perm_names:
            perms[name][ref_index] = _perm.identity(sizes[name])

    def align(tree, start, stop):
        return apply_permutation_many(spec, {name: p[start:stop] for name, p in perms.items()}, tree)

    mu, sigma = _moments(samples_stack, transform=align, chunk=chunk)
    return GaussianSummary(mu=mu, sigma=sigma, perms=perms, reference_index=ref_index, num_samples=num,
                           method=method, info=info)


def summary_to_samples(key, summary: GaussianSummary, num_samples: int) -> PyTree:
    """Draws from ``N(summary.mu, diag(summary.sigma^2))``.

    Args:
        key: JAX PRNG key, or an int (turned into ``jax.random.PRNGKey(key)``).
        summary: a :class:`GaussianSummary`.
        num_samples: number of draws.

    Returns:
        The draws stacked on a leading axis of every leaf
        (:func:`symlib.evaluation.predictive.sample_gaussian`).

    Raises:
        ValueError: as :func:`symlib.evaluation.predictive.sample_gaussian`.
    """
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.PRNGKey(int(key))
    return sample_gaussian(key, summary.mu, summary.sigma, num_samples)


def grouped_rebasin_summary(samples_stack: Mapping, groups, spec: PermutationSpec, *, reference_group=None,
                            method: str = "weight", key=0, data=None, chunk: int | None = None) -> GaussianSummary:
    """``q_r`` with one permutation per group of samples (for example per HMC chain).

    A Markov chain does not hop between permutation modes, so its samples already share
    one frame; matching them one by one to a reference from another chain adds noise
    (weights the data do not constrain are matched at random). Here the mean network of
    each group is matched to the mean network of ``reference_group`` (default: the group
    of the first sample) by ``method``, and that one permutation is applied to all of
    the group's samples before taking the moments.

    Args:
        samples_stack: a (nested) dict of parameters with a leading sample axis ``K >= 2``.
        groups: one group id per sample, shape ``(K,)``.
        spec: the :class:`~symlib.symmetry.specs.PermutationSpec` of the network.
        reference_group: the group whose mean network is the reference (default: the
            group of the first sample).
        method: ``"weight"`` or ``"activation"``.
        key: PRNG key (or int seed) of weight matching.
        data: inputs for activation matching.
        chunk: samples aligned and accumulated at a time (as in :func:`direct_summary`).

    Returns:
        A :class:`GaussianSummary` whose ``perms[name]`` are ``(K, n)`` (equal rows
        within a group) and whose ``info["groups"]`` are the group ids.

    Raises:
        ValueError: for an unknown ``method``, activation matching without ``data``,
            ``groups`` not of shape ``(K,)`` or holding NaN, an unknown ``reference_group``, or the errors
            of :func:`direct_summary`.
    """
    from symlib.symmetry.matching import activation_matching, apply_permutation_many, weight_matching

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods are {list(METHODS)}")
    if method == "activation" and data is None:
        raise ValueError("method='activation' needs data: the inputs over which activations are correlated")
    num = _stack_size(samples_stack)
    groups = np.asarray(groups)
    if groups.shape != (num,):
        raise ValueError(f"groups must give one id per sample: shape ({num},), got {groups.shape}")
    if groups.dtype.kind in "fc" and not np.all(np.isfinite(groups)):
        raise ValueError("groups must be ids that equal themselves; NaN or inf ids match no sample")
    sizes = check_spec(spec, samples_stack, batch_dims=1)
    ids = list(dict.fromkeys(groups.tolist()))
    reference_group = ids[0] if reference_group is None else reference_group
    if reference_group not in ids:
        raise ValueError(f"reference_group {reference_group!r} is not one of the groups {ids}")

    def group_mean(g):
        members = np.flatnonzero(groups == g)
        return jax.tree_util.tree_map(lambda a: np.asarray(a)[members].astype(np.float64).mean(0), samples_stack)

    ref = group_mean(reference_group)
    perms = {name: np.empty((num, sizes[name]), np.int64) for name in spec.perm_names}
    for g in ids:
        if g == reference_group:
            found = {name: _perm.identity(sizes[name]) for name in spec.perm_names}
        elif method == "weight":
            found = weight_matching(key, spec, ref, group_mean(g)).perms
        else:
            found = activation_matching(spec, ref, group_mean(g), data).perms
        for name in spec.perm_names:
            perms[name][groups == g] = found[name]

    def align(tree, start, stop):
        return apply_permutation_many(spec, {name: p[start:stop] for name, p in perms.items()}, tree)

    mu, sigma = _moments(samples_stack, transform=align, chunk=chunk)
    return GaussianSummary(mu=mu, sigma=sigma, perms=perms, reference_index=None, num_samples=num,
                           method=f"{method} (per group)", info={"groups": groups})
