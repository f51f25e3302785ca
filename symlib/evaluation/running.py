"""Running (streaming) per-weight means and variances of a stack of networks.

:class:`RunningMoments` folds networks in batch by batch and keeps, per weight, the count
``n``, the mean and ``M2`` (the sum of squared deviations from the mean), all in float64.
A batch's own mean and ``M2`` are taken two-pass (mean, then squared deviations from it),
then merged into the running ones with the pairwise update of Chan, Golub and LeVeque
(1979), the batch form of Welford's algorithm::

    delta = mean_b - mean_a,   n = n_a + n_b
    mean  = mean_a + delta * n_b / n
    M2    = M2_a + M2_b + delta^2 * n_a * n_b / n

This is numerically stable (no ``E[x^2] - E[x]^2`` cancellation) and gives the moments of
:func:`symlib.evaluation.summaries.direct_summary` (population variance ``M2 / n``) to float64
rounding, whatever the batches, so a sampler can fold its samples in as they come and
never keep them (:mod:`symlib.experiments.xiao.hmc_pieces`). Two accumulators merge the same way
(:meth:`RunningMoments.merge`), and since a permutation of the hidden units acts on the
mean and on ``M2`` weight by weight, the moments of a permuted stack are the permuted
moments (:meth:`RunningMoments.permuted`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.evaluation.summaries import GaussianSummary

__all__ = ["RunningMoments"]

PyTree = Any


def _summary_dtype(leaf) -> np.dtype:
    """The dtype of ``leaf``'s moments in a summary: its own if floating (bfloat16 too), else float64."""
    dt = np.dtype(getattr(leaf, "dtype", np.asarray(leaf).dtype))
    return dt if jnp.issubdtype(dt, jnp.floating) else np.dtype(np.float64)


def _check_shapes(what: str, got: list, want: list, paths: list) -> None:
    """A ValueError naming the first leaf whose shape in ``got`` is not the one in ``want``."""
    for path, g, w in zip(paths, got, want):
        if tuple(g) != tuple(w):
            raise ValueError(f"{what}: leaf {jax.tree_util.keystr(path)} has per-network shape {tuple(g)}, "
                             f"the accumulator's is {tuple(w)} (a single network needs a leading batch "
                             f"axis of 1)")


def _batch_moments(leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(leaf, np.float64)
    mean = a.mean(axis=0)
    d = a - mean
    return mean, np.einsum("i...,i...->...", d, d)


class RunningMoments:
    """Per-weight count, mean and ``M2`` of the networks folded in so far (module docstring).

    Attributes:
        count: the number of networks folded in.
        mean: float64 pytree with the layout of one network.
        m2: float64 pytree of the sums of squared deviations from ``mean``.
        dtypes: per leaf of ``mean`` (``tree_leaves`` order), the dtype of that leaf in the
            summaries returned by :meth:`summary`: the samples' own, float64 for non-float leaves.
    """

    def __init__(self, count: int, mean: PyTree, m2: PyTree, dtypes: Sequence[np.dtype]):
        self.count, self.mean, self.m2 = int(count), mean, m2
        self.dtypes = [np.dtype(dt) for dt in dtypes]

    @classmethod
    def zeros(cls, like: PyTree) -> RunningMoments:
        """An empty accumulator for networks shaped like ``like``.

        Args:
            like: one network (any pytree of arrays); its leaves' dtypes become :attr:`dtypes`
                (float64 for integer leaves), as :func:`~symlib.evaluation.summaries.direct_summary`
                keeps each leaf's dtype.

        Returns:
            An accumulator with ``count == 0``.
        """
        dtypes = [_summary_dtype(a) for a in jax.tree_util.tree_leaves(like)]
        zeros = jax.tree_util.tree_map(lambda a: np.zeros(np.shape(a), np.float64), like)
        return cls(0, zeros, jax.tree_util.tree_map(np.copy, zeros), dtypes)

    def update(self, batch: PyTree) -> RunningMoments:
        """Fold in a batch of networks (in place).

        Args:
            batch: a pytree like :attr:`mean` with a leading batch axis ``k >= 1`` on every leaf.

        Returns:
            ``self``.

        Raises:
            ValueError: if the batch is empty, its leaves disagree on ``k``, a leaf's shape after
                ``k`` is not the accumulator's (one network passed without its batch axis), or it
                holds NaN or inf.
        """
        leaves = jax.tree_util.tree_structure(self.mean).flatten_up_to(batch)
        sizes = {np.shape(a)[0] if np.ndim(a) else None for a in leaves}
        if len(sizes) != 1 or None in sizes or 0 in sizes:
            raise ValueError(f"batch needs one leading axis k >= 1 shared by every leaf, got sizes "
                             f"{sorted(map(str, sizes))}")
        k = sizes.pop()
        self._check_layout("update", [np.shape(a)[1:] for a in leaves])
        pairs = [_batch_moments(a) for a in leaves]
        b_mean, b_m2 = [m for m, _ in pairs], [s for _, s in pairs]
        if not all(np.all(np.isfinite(m)) for m in b_mean):
            raise ValueError("the batch holds NaN or inf")
        return self._merge(k, b_mean, b_m2)

    def merge(self, other: RunningMoments) -> RunningMoments:
        """Fold in another accumulator's networks (in place; ``other`` is unchanged).

        Args:
            other: moments of other networks of the same layout.

        Returns:
            ``self``.

        Raises:
            ValueError: if a leaf of ``other`` is not shaped as the same leaf here.
        """
        treedef = jax.tree_util.tree_structure(self.mean)
        means, m2s = treedef.flatten_up_to(other.mean), treedef.flatten_up_to(other.m2)
        self._check_layout("merge", [np.shape(a) for a in means])
        self._check_layout("merge", [np.shape(a) for a in m2s])
        return self._merge(other.count, means, m2s)

    def _check_layout(self, what: str, shapes: list) -> None:
        paths_leaves = jax.tree_util.tree_flatten_with_path(self.mean)[0]
        _check_shapes(what, shapes, [np.shape(a) for _, a in paths_leaves], [p for p, _ in paths_leaves])

    def _merge(self, n_b: int, mean_b: list, m2_b: list) -> RunningMoments:
        if n_b == 0:
            return self
        n_a, n = self.count, self.count + n_b
        means, treedef = jax.tree_util.tree_flatten(self.mean)
        m2s = treedef.flatten_up_to(self.m2)
        new_mean, new_m2 = [], []
        for ma, m2a, mb, m2bb in zip(means, m2s, mean_b, m2_b):
            delta = mb - ma
            new_mean.append(ma + delta * (n_b / n))
            new_m2.append(m2a + m2bb + delta * delta * (n_a * n_b / n))
        self.count = n
        self.mean = jax.tree_util.tree_unflatten(treedef, new_mean)
        self.m2 = jax.tree_util.tree_unflatten(treedef, new_m2)
        return self

    def permuted(self, spec, perms: Mapping[str, Any]) -> RunningMoments:
        """The moments of the same networks after permuting every one of them by ``perms``.

        Args:
            spec: the :class:`~symlib.symmetry.specs.PermutationSpec` the networks fit.
            perms: one permutation per name of ``spec`` (gather convention of
                :func:`symlib.symmetry.specs.apply_permutation`).

        Returns:
            A new accumulator.
        """
        from symlib.symmetry.specs import apply_permutation

        return RunningMoments(self.count, apply_permutation(spec, perms, self.mean),
                              apply_permutation(spec, perms, self.m2), self.dtypes)

    @property
    def variance(self) -> PyTree:
        """Population variance ``M2 / count`` (float64 pytree)."""
        return jax.tree_util.tree_map(lambda m2: m2 / self.count, self.m2)

    def summary(self, method: str = "direct", **fields) -> GaussianSummary:
        """The diagonal Gaussian of the moments, as :func:`~symlib.evaluation.summaries.direct_summary` gives it.

        Args:
            method: the summary's ``method`` field.
            **fields: other fields of :class:`~symlib.evaluation.summaries.GaussianSummary`
                (``perms``, ``reference_index``, ``info``).

        Returns:
            ``GaussianSummary(mu, sigma)``, each leaf in its dtype of :attr:`dtypes`,
            ``sigma = sqrt(M2 / count)``.

        Raises:
            ValueError: with fewer than 2 networks folded in.
        """
        if self.count < 2:
            raise ValueError(f"a mean and standard deviation need at least 2 samples, {self.count} folded in")
        means, treedef = jax.tree_util.tree_flatten(self.mean)
        variances = treedef.flatten_up_to(self.variance)
        mu = treedef.unflatten([m.astype(dt) for m, dt in zip(means, self.dtypes)])
        sigma = treedef.unflatten([np.sqrt(v).astype(dt) for v, dt in zip(variances, self.dtypes)])
        return GaussianSummary(mu=mu, sigma=sigma, num_samples=self.count, method=method, **fields)

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The accumulator as named arrays (for an ``.npz`` file).

        Args:
            prefix: prepended to every name.

        Returns:
            ``{prefix + "count": ..., prefix + "mean_<i>": ..., prefix + "m2_<i>": ...}``
            (leaves in ``tree_leaves`` order).
        """
        out = {f"{prefix}count": np.int64(self.count)}
        for i, (m, s) in enumerate(zip(jax.tree_util.tree_leaves(self.mean), jax.tree_util.tree_leaves(self.m2))):
            out[f"{prefix}mean_{i}"], out[f"{prefix}m2_{i}"] = m, s
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str, like: PyTree) -> RunningMoments:
        """The inverse of :meth:`to_arrays`.

        Args:
            arrays: the named arrays (e.g. an open ``.npz``).
            prefix: the prefix given to :meth:`to_arrays`.
            like: one network, for the structure and the :attr:`dtypes`.

        Returns:
            The accumulator.

        Raises:
            ValueError: if a stored leaf is not shaped as the same leaf of ``like``.
        """
        out = cls.zeros(like)
        treedef = jax.tree_util.tree_structure(out.mean)
        n = treedef.num_leaves
        out.count = int(arrays[f"{prefix}count"])
        def leaves(name):
            return [np.asarray(arrays[f"{prefix}{name}_{i}"], np.float64) for i in range(n)]

        means, m2s = leaves("mean"), leaves("m2")
        out._check_layout("from_arrays", [np.shape(a) for a in means])
        out._check_layout("from_arrays", [np.shape(a) for a in m2s])
        out.mean = jax.tree_util.tree_unflatten(treedef, means)
        out.m2 = jax.tree_util.tree_unflatten(treedef, m2s)
        return out
