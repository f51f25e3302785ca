"""Activation matching (:func:`~symlib.symmetry.matching.activation_matching`).

The Pearson correlation of hidden units of A and B over a data set (streamed in batches,
only sums kept), one LAP per permutation maximising the total correlation. ``apply_fn``
names the activations each permutation acts on (a dict by permutation name, or for an MLP
a list by hidden layer); convolutional features count every spatial position as an
example.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import positive_int
from symlib.symmetry.matching.common import MatchResult, check_finite_params, check_pair
from symlib.symmetry.matching.lap import check_lap_solver, lap_solver_used, solve_lap
from symlib.symmetry.specs import PermutationSpec, flatten_params


def _hidden_perm_names(spec: PermutationSpec, num_hidden: int) -> list[str]:
    """``P_0 .. P_{L-1}``, the names of an MLP's hidden layers; ``ValueError`` unless the spec names exactly those."""
    expected = [f"P_{l}" for l in range(num_hidden)]
    if sorted(spec.perm_names) != sorted(expected):
        raise ValueError(
            f"activation_matching maps hidden layer l to permutation 'P_l' when apply_fn returns a list: the "
            f"network has {num_hidden} hidden layer(s), so the spec must name exactly {expected}, got "
            f"{spec.perm_names} (an apply_fn returning a dict keyed by permutation name works for any spec)"
        )
    return expected


def _by_perm_name(spec: PermutationSpec, hidden) -> dict[str, Any]:
    """``apply_fn``'s activations keyed by permutation name: a dict (checked to name exactly the
    spec's permutations, put in spec order) or a list by MLP hidden layer (``P_0, P_1, ...``)."""
    if isinstance(hidden, Mapping):
        unknown = [k for k in hidden if k not in spec.perm_names]
        if unknown:
            raise ValueError(f"apply_fn returned activations under {unknown}, which the spec does not permute; "
                             f"its dict must be keyed by the spec's permutation names {spec.perm_names}")
        missing = [name for name in spec.perm_names if name not in hidden]
        if missing:
            raise ValueError(f"apply_fn returned no activations for the spec's permutation(s) {missing}; its dict "
                             f"must name exactly {spec.perm_names}")
        return {name: hidden[name] for name in spec.perm_names}
    if isinstance(hidden, (list, tuple)):
        return dict(zip(_hidden_perm_names(spec, len(hidden)), hidden))
    raise TypeError(f"apply_fn must return a list of hidden activations or a dict of permutation name -> "
                    f"activations, got {type(hidden).__name__}")


def _as_rows(spec: PermutationSpec, sizes: Mapping[str, int], hidden) -> dict[str, np.ndarray]:
    """``apply_fn``'s activations as float64 ``(examples, units)`` by permutation name.

    All axes but the last are flattened into examples (conv features ``(n, h, w, c)``
    give ``(n * h * w, c)``); the last must hold the units the permutation acts on.
    """
    out = {}
    for name, h in _by_perm_name(spec, hidden).items():
        h = np.asarray(h, np.float64)
        if h.ndim < 2 or h.shape[-1] != sizes[name]:
            raise ValueError(f"apply_fn's activations for {name!r} have shape {h.shape}; expected "
                             f"(batch, ..., {sizes[name]}), the last axis the units the spec's {name!r} permutes")
        out[name] = h.reshape(-1, h.shape[-1])
    return out


def _batches(data, batch_size: int) -> Iterable:
    if hasattr(data, "shape") and hasattr(data, "__getitem__"):
        n = int(data.shape[0])
        for i in range(0, n, batch_size):
            yield data[i:i + batch_size]
    else:
        yield from data


@functools.partial(jax.jit, static_argnums=0)
def _hidden_pair(apply_fn, pa, pb, x):
    """Hidden activations of A and B on ``x``, and whether ``x`` is all finite."""
    return apply_fn(pa, x), apply_fn(pb, x), jnp.all(jnp.isfinite(x))


@dataclass
class _LayerSums:
    """Running float64 sums of one hidden layer's activations in A and B, over ``count`` rows.

    The activations are shifted by the first batch's means (``shift_a``, ``shift_b``)
    before summing, for accuracy; units constant over the data then have exactly zero
    (co)variance. A row is an example, or one spatial position of one example for conv
    features, so ``count`` may differ between layers.
    """

    shift_a: np.ndarray
    shift_b: np.ndarray
    sum_a: np.ndarray
    sum_b: np.ndarray
    sumsq_a: np.ndarray
    sumsq_b: np.ndarray
    cross: np.ndarray
    count: int = 0

    @classmethod
    def start(cls, ha: np.ndarray, hb: np.ndarray) -> _LayerSums:
        """Empty sums, shifted by the means of the first batch ``ha``, ``hb``."""
        width = ha.shape[-1]
        return cls(ha.mean(axis=0), hb.mean(axis=0), np.zeros(width), np.zeros(width),
                   np.zeros(width), np.zeros(width), np.zeros((width, width)))

    def add(self, ha: np.ndarray, hb: np.ndarray) -> None:
        """Add a batch ``(rows, width)`` of activations of A and B."""
        self.count += ha.shape[0]
        da = ha - self.shift_a
        db = hb - self.shift_b
        self.sum_a += da.sum(axis=0)
        self.sum_b += db.sum(axis=0)
        self.sumsq_a += np.einsum("ni,ni->i", da, da)
        self.sumsq_b += np.einsum("ni,ni->i", db, db)
        self.cross += da.T @ db

    def correlation(self, eps: float) -> np.ndarray:
        """``corr[i, j] = cov(a_i, b_j) / (std(a_i) std(b_j) + eps)`` over the ``count`` rows."""
        count = self.count
        ma, mb = self.sum_a / count, self.sum_b / count
        var_a = np.maximum(self.sumsq_a / count - ma**2, 0.0)
        var_b = np.maximum(self.sumsq_b / count - mb**2, 0.0)
        cov = self.cross / count - np.outer(ma, mb)
        return cov / (np.outer(np.sqrt(var_a), np.sqrt(var_b)) + eps)


def _hidden_batch(hidden: Callable, pa, pb, x, first_example: int, spec: PermutationSpec,
                  sizes: Mapping[str, int]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """float64 ``(rows, units)`` activations of A and B on the batch ``x`` by permutation name
    (:func:`_as_rows`); ``ValueError`` if ``x`` is not finite."""
    ha, hb, finite = hidden(pa, pb, x)
    if not bool(finite):
        raise ValueError(f"data holds non-finite values (nan or inf) in examples "
                         f"{first_example}..{first_example + x.shape[0] - 1}")
    return _as_rows(spec, sizes, ha), _as_rows(spec, sizes, hb)


def _stream_layer_sums(hidden: Callable, pa, pb, data, batch_size: int, spec: PermutationSpec,
                       sizes: Mapping[str, int]) -> tuple[dict[str, _LayerSums], int]:
    """Stream ``data`` through A and B; returns the sums by permutation name and the example count."""
    count = 0
    layers: dict[str, _LayerSums] | None = None
    for x in _batches(data, batch_size):
        x = jnp.asarray(x)
        if x.shape[0] == 0:
            continue
        ha, hb = _hidden_batch(hidden, pa, pb, x, count, spec, sizes)
        if layers is None:
            layers = {name: _LayerSums.start(ha[name], hb[name]) for name in ha}
        for name, layer in layers.items():
            layer.add(ha[name], hb[name])
        count += x.shape[0]
    if count == 0:
        raise ValueError("data holds no examples")
    return layers, count


class _LayerMatch(NamedTuple):
    perm: np.ndarray
    total_correlation: float
    seconds: float


def _match_layer(corr: np.ndarray, groups: int, lap_solver: str = "auto") -> _LayerMatch:
    """One LAP (within ``groups`` blocks, see :func:`solve_lap`) maximising the matched total correlation of a layer."""
    t0 = time.perf_counter()
    col = solve_lap(corr, groups, lap_solver)
    seconds = time.perf_counter() - t0
    return _LayerMatch(col, float(corr[np.arange(len(col)), col].sum()), seconds)


def activation_matching(
    spec: PermutationSpec,
    params_a: Mapping,
    params_b: Mapping,
    data,
    batch_size: int = 1024,
    apply_fn: Callable | None = None,
    *,
    eps: float = 1e-12,
    lap_solver: str = "auto",
) -> MatchResult:
    """Match hidden units of two networks by the correlation of their activations over ``data``.

    ``apply_fn(params, x)`` gives the hidden activations that every permutation of the
    spec acts on, either as a dict ``{permutation name: activations}`` naming exactly the
    spec's permutations (any architecture; activations of layers the spec does not permute
    are simply left out), or as a list ``[h_0, ..., h_{L-1}]`` by MLP hidden layer, layer
    ``l`` permuted by the spec's ``"P_l"``. Activations are ``(batch, ..., units)``, the
    units last; all other axes are flattened into examples, so a convolutional feature
    map ``(n, h, w, c)`` counts every spatial position as an example, ``(n * h * w, c)``.
    For OptuNet (:func:`symlib.core.cnn.optunet_hidden`, keyed by layer) with
    :func:`~symlib.symmetry.architectures.optunet_permutation_spec`::

        def apply_fn(params, x):
            h = optunet_hidden(params, x)
            return {"P_conv_1": h["conv_1"], "P_dense_0": h["dense_0"]}

    Only running sums of the activations are kept (float64, shifted by the first batch's
    means for accuracy). For every permutation the Pearson correlation ``corr[i, j] =
    cov(a_i, b_j) / (std(a_i) std(b_j) + eps)`` is formed and one LAP maximises ``sum_i
    corr[i, p[i]]`` (within every block of a permutation with
    :attr:`~symlib.symmetry.specs.PermutationSpec.blocks`). Units with zero variance over
    the data (dead ReLUs, constants) have exactly zero covariance (thanks to the shift),
    so their correlations are 0, never NaN. The activations of B do not depend on how
    its other layers are permuted, so the layers are independent and this is exact.

    Args:
        spec: the permutation spec.
        params_a: the reference network A.
        params_b: the network B to permute, with the same shapes as A.
        data: an array whose leading axis holds the examples (``(N, d_0)`` vectors,
            ``(N, h, w, c)`` images; cut into batches of ``batch_size``) or an iterable
            of batches.
        batch_size: examples per batch when ``data`` is an array (a positive int).
        apply_fn: ``apply_fn(params, x)`` returns the hidden activations, a dict keyed by
            permutation name or a list by MLP hidden layer (above; default
            :func:`symlib.core.models.mlp_hidden`, the list form).
        eps: added to the product of standard deviations.
        lap_solver: ``"auto"`` or ``"scipy"``, as in :func:`weight_matching`.

    Returns:
        A :class:`MatchResult` with ``objective`` the matched total correlation of every
        permutation (list form: ``P_0, P_1, ...``; dict form: the spec's order),
        ``info["mean_correlation"]`` the means per unit, ``info["num_examples"]`` the
        number of examples seen and ``info["num_rows"]`` the rows (examples times spatial
        positions) per permutation.

    Raises:
        ValueError: if ``batch_size`` is not a positive int or ``lap_solver`` is unknown; if
            A or B does not fit ``spec`` or holds nan or inf (naming the parameter); if ``data`` holds nan or
            inf or no examples; if ``apply_fn``'s dict does not name exactly the spec's
            permutations, its list does not match a spec ``P_0 .. P_{L-1}``, or the
            activations' last axis is not the permutation's size (naming it).
        TypeError: if ``spec`` is not a :class:`~symlib.symmetry.specs.PermutationSpec`,
            or ``apply_fn`` returns neither a dict nor a list.
    """
    t_start = time.perf_counter()
    batch_size = positive_int(batch_size, "batch_size")
    lap_solver = check_lap_solver(lap_solver)
    sizes = check_pair(spec, params_a, params_b)
    check_finite_params(flatten_params(params_a), "params_a")
    check_finite_params(flatten_params(params_b), "params_b")
    if apply_fn is None:
        from symlib.core.models import mlp_hidden as apply_fn
    hidden = functools.partial(_hidden_pair, apply_fn)
    pa = jax.tree_util.tree_map(jnp.asarray, params_a)
    pb = jax.tree_util.tree_map(jnp.asarray, params_b)

    t_cost = time.perf_counter()
    layers, count = _stream_layer_sums(hidden, pa, pb, data, batch_size, spec, sizes)
    cost_time = time.perf_counter() - t_cost

    matches = {name: _match_layer(layer.correlation(eps), spec.blocks.get(name, 1), lap_solver)
               for name, layer in layers.items()}
    return MatchResult(
        # names may be listed by the spec in another order; return them in spec order
        perms={name: matches[name].perm for name in spec.perm_names},
        objective=[match.total_correlation for match in matches.values()],
        sweeps=1,
        solver_time=sum(match.seconds for match in matches.values()),
        cost_time=cost_time,
        total_time=time.perf_counter() - t_start,
        num_solves=len(matches),
        info={
            "mean_correlation": [match.total_correlation / max(len(match.perm), 1) for match in matches.values()],
            "num_examples": count,
            "num_rows": {name: layer.count for name, layer in layers.items()},
            "lap_solver": lap_solver_used(lap_solver),
        },
    )
