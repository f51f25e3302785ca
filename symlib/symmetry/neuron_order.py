"""How often hidden units change places during training (Laurent et al., 2024, Section 5.2).

The identifiable network of Proposition 1 sorts each hidden layer's units by a statistic
of their incoming weights after the scaling symmetry is removed
(:func:`symlib.symmetry.canonical.identifiable`). Following that sorting permutation along
training shows when the network "permutes": whenever two units exchange places in the
order, the permutation changes. This module computes, in jax so that it can run inside the
compiled training loop (``observe`` of :func:`symlib.inference.fit_ensemble`),
for any network through its specs (an MLP's: ``mlp_scaling_spec(L)``, ``mlp_permutation_spec(L)``):

* :func:`neuron_statistics`: per permutation (hidden layer), the sorting statistic of every
  unit after unit-norm scaling (the numbers :func:`symlib.symmetry.canonical.sort_neurons`
  sorts when given ``symlib.symmetry.scaling.unit_norm(scaling_spec, params)``);
* :func:`discordant_pairs`: how many pairs of units are in opposite order in two
  statistic vectors (the pairs that swapped);
* :func:`swap_counter`: the observer counting, for one optimisation step, the swapped
  pairs of every hidden layer; :func:`statistics_observer`, the statistics once an epoch;
* :func:`kendall_tau_from_discordant`: Kendall's tau between the two orderings,
  ``1 - 4 D / (n (n - 1))`` (1 when nothing moved).

Units are compared by their statistic only; the statistic "max" of the incoming weights
(the paper's choice, found the most stable) does not depend on the order of the previous
layer's units, so the permutation of layer ``l`` can be read off layer ``l``'s kernel alone.

**NaN.** Called on concrete arrays, the functions raise ``ValueError`` naming the input
that holds NaN or inf (a NaN statistic would silently count as "no swap"). Under
``jax.jit`` or ``jax.vmap`` (the observers inside the training loop) the values are
traced and cannot be checked: there NaN weights give NaN statistics and uncounted pairs.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite
from symlib.symmetry.canonical import SORT_STATISTICS, incoming_weights
from symlib.symmetry.scaling import check_scaling_spec, unit_norm_traced
from symlib.symmetry.specs import check_spec, flatten_params

__all__ = ["discordant_pairs", "discordant_pairs_batch", "kendall_tau_from_discordant", "neuron_statistics",
           "epoch_swaps", "phase_summary", "statistics_observer", "swap_counter", "swap_bursts"]

SCALINGS = ("unit_norm", None)


def _check_args(statistic, scaling) -> None:
    if statistic not in SORT_STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose one of {sorted(SORT_STATISTICS)}")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")


def _check_finite_if_concrete(x, name: str) -> None:
    """:func:`symlib.core.checks.check_finite` unless ``x`` is traced (inside jit / vmap)."""
    if not isinstance(x, jax.core.Tracer):
        check_finite(x, name)


def _check_blocks(blocks, n) -> None:
    """A ValueError unless every ``blocks`` is an integer >= 1 that divides its ``n``."""
    g, m = np.asarray(blocks), np.asarray(n)
    if not (np.issubdtype(g.dtype, np.integer) or np.all(g == np.round(g))) or np.any(g < 1) or np.any(m % g):
        raise ValueError(f"blocks must be integers >= 1 dividing the number of units n, got blocks "
                         f"{g.tolist()} for n {m.tolist()}")


def discordant_pairs(a: jax.Array, b: jax.Array, blocks: int = 1) -> jax.Array:
    """Number of unit pairs ``i < j`` ordered one way by ``a`` and the other way by ``b``
    (ties count as not discordant). ``O(n^2)`` memory, fine for layer widths in the
    thousands. Jittable; the NaN check applies to concrete arrays only.

    With ``blocks = g > 1`` (a grouped convolution's channels, permuted within their group
    only) only pairs inside the same block of ``n / g`` consecutive units count.

    Args:
        a: statistics of ``n`` units, shape ``(n,)``.
        b: statistics of the same units, shape ``(n,)``.
        blocks: number of blocks, dividing ``n``.

    Returns:
        The number of discordant pairs, an integer scalar array.

    Raises:
        ValueError: if concrete ``a`` or ``b`` hold NaN or inf, or ``blocks`` does not divide ``n``.
    """
    _check_blocks(blocks, a.shape[-1])
    _check_finite_if_concrete(a, "a")
    _check_finite_if_concrete(b, "b")
    sa = jnp.sign(a[:, None] - a[None, :])
    sb = jnp.sign(b[:, None] - b[None, :])
    discordant = sa * sb < 0
    if blocks != 1:
        block = jnp.arange(a.shape[-1]) // (a.shape[-1] // blocks)
        discordant = discordant & (block[:, None] == block[None, :])
    return jnp.sum(discordant) // 2


def discordant_pairs_batch(a, b, blocks: int = 1) -> np.ndarray:
    """:func:`discordant_pairs` over matching leading axes of ``a`` and ``b`` (shape
    ``(..., n)``, broadcast), e.g. the orderings at successive epochs of many runs.

    Args:
        a: statistics, shape ``(..., n)``.
        b: statistics, shape ``(..., n)``, broadcastable against ``a``.
        blocks: as for :func:`discordant_pairs`.

    Returns:
        Discordant pairs, the broadcast leading shape.

    Raises:
        ValueError: if ``a`` or ``b`` hold NaN or inf, or ``blocks`` does not divide ``n``.
    """
    check_finite(a, "a")
    check_finite(b, "b")
    f = jnp.vectorize(functools.partial(discordant_pairs, blocks=int(blocks)), signature="(n),(n)->()")
    return np.asarray(f(jnp.asarray(a), jnp.asarray(b)))


def kendall_tau_from_discordant(d, n, blocks=1):
    """Kendall's tau (tau-a) of two strict orderings of ``n`` items with ``d`` discordant
    pairs, ``1 - 4 d / (n (n - 1))`` (1 when ``n < 2``). With ``blocks = g`` (items ordered
    within ``g`` blocks of ``n / g`` only, :func:`discordant_pairs`) the comparable pairs are
    ``g m (m - 1) / 2``, ``m = n / g``.

    Args:
        d: discordant pairs; NaN (no measurement, as in :func:`phase_summary`) gives NaN.
        n: number of items; broadcasts against ``d``.
        blocks: number of blocks; broadcasts against ``n``.

    Returns:
        Kendall's tau, float64 of the broadcast shape.

    Raises:
        ValueError: if a ``blocks`` is not an integer >= 1 dividing its ``n``.
    """
    _check_blocks(blocks, n)
    d = np.asarray(d, dtype=np.float64)
    g = np.asarray(blocks, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64) / g
    pairs = g * m * (m - 1) / 2
    return np.where(pairs > 0, 1.0 - 2.0 * d / np.where(pairs > 0, pairs, 1.0), 1.0)


def neuron_statistics(scaling_spec, perm_spec, params: Mapping, statistic: str = "max",
                      scaling: str | None = "unit_norm") -> list[jax.Array]:
    """One array per permutation of ``perm_spec``: ``statistic`` of each unit's incoming weights.

    With ``scaling="unit_norm"`` the network is first put in unit-norm form through
    ``scaling_spec`` (:func:`symlib.symmetry.scaling.unit_norm_traced`: group by group from
    the input, each unit's incoming weights divided by their norm and its outgoing weights
    multiplied by it). Then, for every permutation of ``perm_spec`` in order, the units are the
    output axis of the kernel that produces them, in the spec's view of it (the weights
    :func:`~symlib.symmetry.canonical.incoming_weights` gives
    :func:`~symlib.symmetry.canonical.sort_neurons`) and each unit's statistic is taken
    over all its incoming weights (for a convolution channel: its whole kernel). A unit whose
    incoming weights are all zero keeps its scale. Jittable; the NaN check applies to
    concrete arrays only.

    Args:
        scaling_spec: a :class:`~symlib.symmetry.scaling.ScalingSpec` (ignored, and may be
            None, when ``scaling`` is ``None``), e.g. ``mlp_scaling_spec(L)``.
        perm_spec: a :class:`~symlib.symmetry.specs.PermutationSpec`, e.g. ``mlp_permutation_spec(L)``.
        params: one network.
        statistic: a name in :data:`~symlib.symmetry.canonical.SORT_STATISTICS` (under
            ``"unit_norm"``, ``"norm"`` is 1 for every unit with incoming weights).
        scaling: ``"unit_norm"`` or ``None`` (the raw kernels).

    Returns:
        One ``(units,)`` array per permutation of ``perm_spec``, in ``perm_spec.perm_names`` order.

    Raises:
        ValueError: for an unknown statistic or scaling, params that do not fit the specs
            (naming the parameter), a permutation that produces no kernel's units, or a
            concrete kernel holding NaN or inf (naming it).
    """
    _check_args(statistic, scaling)
    check_spec(perm_spec, params)  # shapes only: also at trace time under jit
    if scaling is not None:
        check_scaling_spec(scaling_spec, params)
    flat = unit_norm_traced(scaling_spec, params) if scaling == "unit_norm" else flatten_params(params)
    out = []
    for name in perm_spec.perm_names:
        path, k = incoming_weights(perm_spec, name, flat)
        k = jnp.asarray(k)
        _check_finite_if_concrete(k, path)
        out.append(SORT_STATISTICS[statistic](k))
    return out


_OBSERVERS: dict = {}


def _observer(kind: str, scaling_spec, perm_spec, statistic: str, scaling):
    _check_args(statistic, scaling)
    # equal specs give the same function object (specs are frozen dataclasses; their repr is their value)
    key = (kind, repr(scaling_spec) if scaling is not None else None, repr(perm_spec), statistic, scaling)
    if key not in _OBSERVERS:
        blocks = [int(perm_spec.blocks.get(n, 1)) for n in perm_spec.perm_names]

        def stats(params):
            return neuron_statistics(scaling_spec, perm_spec, params, statistic, scaling)

        def count(before, after):
            return jnp.stack([discordant_pairs(b, a, g) for b, a, g in zip(stats(before), stats(after), blocks)]
                             ).astype(jnp.int32)

        _OBSERVERS[key] = count if kind == "count" else stats
    return _OBSERVERS[key]


def swap_counter(scaling_spec, perm_spec, statistic: str = "max", scaling: str | None = "unit_norm"):
    """Observer ``f(params_before, params_after) -> int array (permutations,)``: the pairs of
    units of every permutation of ``perm_spec`` whose order by :func:`neuron_statistics`
    changed in the step, for ``observe`` of :func:`symlib.inference.fit_ensemble`;
    for a blocked permutation (grouped convolution) only pairs within a block count. Equal
    specs and arguments give the same function object (a static argument of the compiled
    training loop). Inside jit the weights are not checked for NaN.

    Args:
        scaling_spec: the scaling spec (as for :func:`neuron_statistics`).
        perm_spec: the permutation spec.
        statistic: a name in :data:`~symlib.symmetry.canonical.SORT_STATISTICS`.
        scaling: ``"unit_norm"`` or ``None``.

    Returns:
        The observer function.

    Raises:
        ValueError: for an unknown statistic or scaling.
    """
    return _observer("count", scaling_spec, perm_spec, statistic, scaling)


def statistics_observer(scaling_spec, perm_spec, statistic: str = "max", scaling: str | None = "unit_norm"):
    """Observer ``f(params) ->`` :func:`neuron_statistics`, for ``observe_epoch`` of
    :func:`symlib.inference.fit_ensemble`; cached like :func:`swap_counter`.

    Raises:
        ValueError: for an unknown statistic or scaling.
    """
    return _observer("stats", scaling_spec, perm_spec, statistic, scaling)


def epoch_swaps(epoch_stats, blocks=None) -> list[np.ndarray]:
    """Per hidden layer, ``(runs, epochs - 1)``: the pairs of units in opposite order at the
    ends of consecutive epochs (the net change of the ordering over each epoch), from the
    per-layer ``(runs, epochs, units)`` statistics of :func:`statistics_observer`.

    Args:
        epoch_stats: one ``(runs, epochs, units)`` array per hidden layer.
        blocks: optional number of blocks per layer (:func:`discordant_pairs`; default 1 each).

    Returns:
        One ``(runs, epochs - 1)`` integer array per hidden layer.

    Raises:
        ValueError: naming the layer (``epoch_stats[l]``) if its statistics hold NaN or inf.
    """
    for l, s in enumerate(epoch_stats):
        check_finite(s, f"epoch_stats[{l}]")
    blocks = [1] * len(epoch_stats) if blocks is None else list(blocks)
    return [discordant_pairs_batch(s[:, 1:], s[:, :-1], g) for s, g in zip(epoch_stats, blocks)]


def phase_summary(swaps: np.ndarray, epoch_stats, milestones, blocks=None) -> list[dict]:
    """Swap statistics of runs recorded by ``laurent_mlps``-style training, per
    learning-rate phase (epochs between ``milestones``) and hidden layer.

    ``swaps``: ``(runs, epochs, steps, layers)`` swapped pairs per step (:func:`swap_counter`);
    ``epoch_stats``: per layer ``(runs, epochs, units)`` statistics at each epoch's end
    (:func:`statistics_observer`). Each row: ``phase`` (0-based), ``first_epoch`` /
    ``last_epoch`` (0-based, inclusive), ``layer``, ``units``, ``per_step`` (mean swapped
    pairs per step), ``steps_with_swap`` (share of steps with at least one), ``per_epoch_sum``
    (per-step swaps summed over an epoch), ``net_per_epoch`` (pairs in opposite order at the
    ends of consecutive epochs; NaN for a phase made only of epoch 0) and ``net_tau``.

    Args:
        swaps: ``(runs, epochs, steps, layers)`` swapped pairs per step.
        epoch_stats: per hidden layer, ``(runs, epochs, units)`` statistics.
        milestones: epochs at which a new learning-rate phase starts, increasing.
        blocks: optional number of blocks per layer (grouped convolutions; :func:`discordant_pairs`).

    Returns:
        One dict per (phase, layer), keys as listed above.

    Raises:
        ValueError: if ``swaps`` and ``epoch_stats`` disagree on the number of layers, or
            the statistics hold NaN or inf.
    """
    swaps = np.asarray(swaps)
    runs, epochs, _, layers = swaps.shape
    if len(epoch_stats) != layers:
        raise ValueError(f"{len(epoch_stats)} layers of statistics but {layers} layers of swap counts")
    phase_of_epoch = np.searchsorted(np.asarray(milestones), np.arange(epochs), side="right")
    blocks = [1] * layers if blocks is None else list(blocks)
    net = epoch_swaps(epoch_stats, blocks)  # per layer (runs, epochs - 1)
    rows = []
    for ph in range(len(milestones) + 1):
        ep = np.flatnonzero(phase_of_epoch == ph)
        if ep.size == 0:
            continue
        ep_net = ep[ep > 0] - 1  # net change from the end of epoch e - 1 to the end of e
        for l in range(layers):
            per_step = swaps[:, ep, :, l]
            n = int(np.shape(epoch_stats[l])[-1])
            net_mean = float(net[l][:, ep_net].mean()) if ep_net.size else float("nan")
            rows.append({"phase": ph, "first_epoch": int(ep[0]), "last_epoch": int(ep[-1]), "layer": l, "units": n,
                         "per_step": float(per_step.mean()), "steps_with_swap": float(np.mean(per_step > 0)),
                         "per_epoch_sum": float(per_step.sum(axis=2).mean()), "net_per_epoch": net_mean,
                         "net_tau": float(kendall_tau_from_discordant(net_mean, n, blocks[l]))})
    return rows


def swap_bursts(swaps, milestones, window: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """How rare the changes of the sorting permutation are, and how gathered in time.

    A step *changes* the ordering of a layer when at least one pair of its units swaps. Per
    run and layer this returns the share of steps that change it, and a clustering ratio: the
    share of changing steps with another changing step at most ``window`` steps away, over the
    share expected if each learning-rate phase's changes fell at random steps of that phase
    (for ``n_k`` changes among ``T_k`` steps of phase ``k``, a change has a neighbour with
    probability ``1 - (1 - 2 window / (T_k - 1)) ** (n_k - 1)``; the expectation weighs the
    phases by their changes). A ratio of 1 is no clustering beyond the phases' own rates;
    changes in bursts give more.

    Args:
        swaps: ``(runs, epochs, steps, layers)`` swapped pairs per step (:func:`swap_counter`).
        milestones: epochs at which a new learning-rate phase starts, increasing.
        window: the neighbourhood, in steps (positive).

    Returns:
        ``(share, ratio)``, each ``(runs, layers)``; the ratio is NaN for a run and layer with
        fewer than two changes (or none expected to neighbour one another).

    Raises:
        ValueError: if ``swaps`` is not 4-d, holds a negative, NaN or inf count, or
            ``window`` is not a positive integer.
    """
    swaps = np.asarray(swaps, np.float64)
    if swaps.ndim != 4:
        raise ValueError(f"swaps must be (runs, epochs, steps, layers), got shape {swaps.shape}")
    check_finite(swaps, "swaps")
    if (swaps < 0).any():
        raise ValueError("swaps holds a negative count")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    runs, epochs, steps, layers = swaps.shape
    changed = (swaps > 0).reshape(runs, epochs * steps, layers)
    phase = np.repeat(np.searchsorted(np.asarray(milestones), np.arange(epochs), side="right"), steps)
    phase_steps = np.bincount(phase)
    share = changed.mean(axis=1)
    ratio = np.full((runs, layers), np.nan)
    for r in range(runs):
        for l in range(layers):
            idx = np.flatnonzero(changed[r, :, l])
            if idx.size < 2:
                continue
            near = np.zeros(idx.size, bool)
            close = np.diff(idx) <= window
            near[1:] |= close
            near[:-1] |= close
            n_k = np.bincount(phase[idx], minlength=phase_steps.size)
            t_k = np.maximum(phase_steps - 1, 1)
            p_k = np.where(n_k >= 2, 1 - (1 - np.minimum(1.0, 2 * window / t_k)) ** np.maximum(n_k - 1, 0), 0.0)
            expected = float(np.sum(n_k * p_k) / idx.size)
            if expected > 0:
                ratio[r, l] = float(near.mean()) / expected
    return share, ratio
