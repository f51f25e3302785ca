"""Layer-wise marginal distributions of weights across checkpoints (Laurent et al., App. D.3).

A corollary of Proposition 1 (Laurent et al., 2024): when the initial weights of a layer
are i.i.d. and training treats hidden units alike, swapping two hidden units leaves the
distribution of the trained weights unchanged, so every unit's weights have the same
marginal distribution. Removing the symmetries (:func:`symlib.symmetry.canonical.identifiable`)
gives each position in the sorted order its own distribution.

:func:`first_last_pvalues` tests this with two-sample Kolmogorov-Smirnov tests, one per
weight position, between the first and the last hidden unit of a layer. The two samples
come from disjoint halves of the checkpoints, so that they are independent (the weights
of two units of one network are not), which is what the test assumes.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

from symlib.core.checks import mlp_layer_names

__all__ = ["first_last_pvalues", "ks_pvalue", "unit_weights"]


#: scipy's words when its exact two-sample KS p-value falls back to the asymptotic one
_KS_FALLBACK = "ks_2samp: Exact calculation unsuccessful"


def ks_pvalue(a, b) -> float:
    """The two-sided two-sample Kolmogorov-Smirnov p-value of :func:`scipy.stats.ks_2samp`.

    scipy computes the exact p-value as one minus the probability of the complement, and treats
    a result that rounds to 1 or above as a failure: it warns and returns the asymptotic
    p-value, also 1 there (two samples of 5 with ``D = 1/5``, for instance). That warning is
    dropped when the p-value returned is 1; any other fallback keeps its warning.

    Args:
        a, b: the two samples (1-D, non-empty).

    Returns:
        The p-value.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = float(stats.ks_2samp(a, b).pvalue)
    for w in caught:
        if not (p >= 1.0 and str(w.message).startswith(_KS_FALLBACK)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return p


def _check_unit(nets: Sequence[dict], layer: int, unit: int) -> list[str]:
    """Layer names of ``nets[0]`` after checking ``nets``, ``layer`` and ``unit``."""
    if len(nets) < 1:
        raise ValueError("nets must hold at least one checkpoint")
    names = mlp_layer_names(nets[0], "nets[0]")
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < len(names):
        raise ValueError(f"layer must be in 0..{len(names) - 1}, got {layer!r}")
    if len(names) < 2:
        raise ValueError("nets have no hidden layer (a single dense layer)")
    last = layer == len(names) - 1
    width = np.shape(nets[0][f"dense_{layer}"]["kernel"])[0 if last else 1]
    if isinstance(unit, bool) or not isinstance(unit, (int, np.integer)) or not -width <= unit < width:
        raise ValueError(f"unit must index one of the {width} hidden units ({-width}..{width - 1}), got {unit!r}")
    return names


def unit_weights(nets: Sequence[dict], layer: int, unit: int) -> np.ndarray:
    """Weights of one hidden unit in every checkpoint.

    For a hidden layer (``layer < L - 1``, output of ``dense_{layer}``) these are the unit's
    incoming kernel weights, column ``unit`` of ``dense_{layer}/kernel``; for the output
    layer (``layer == L - 1``) they are the outgoing weights of unit ``unit`` of the last
    hidden layer, row ``unit`` of ``dense_{L-1}/kernel``.

    Args:
        nets: MLP parameters of every checkpoint (same architecture).
        layer: dense layer index in ``0..L-1``.
        unit: hidden unit index (negative counts from the end).

    Returns:
        Array of shape ``(checkpoints, positions)``.

    Raises:
        ValueError: for no checkpoints, a layer out of range, a unit out of range, or
            parameters without a hidden layer.
        TypeError: if ``nets[0]`` is not a dict of layers.
    """
    names = _check_unit(nets, layer, unit)
    k = np.stack([np.asarray(net[f"dense_{layer}"]["kernel"]) for net in nets])
    return k[:, unit, :] if layer == len(names) - 1 else k[:, :, unit]


def first_last_pvalues(nets: Sequence[dict], layer: int) -> np.ndarray:
    """Kolmogorov-Smirnov p-values, one per weight position of ``layer`` (see
    :func:`unit_weights`), comparing the first hidden unit's weight in the first half of
    ``nets`` with the last hidden unit's weight in the second half.

    Under identical marginals each p-value is (close to) uniform on [0, 1], so about 5%
    fall below 0.05.

    Args:
        nets: MLP parameters of at least 8 checkpoints (4 per sample).
        layer: dense layer index in ``0..L-1``.

    Returns:
        The p-values, shape ``(positions,)``.

    Raises:
        ValueError: for fewer than 8 checkpoints, or as :func:`unit_weights`.
    """
    if len(nets) < 8:
        raise ValueError(f"need at least 8 checkpoints (two independent halves), got {len(nets)}")
    half = len(nets) // 2
    first = unit_weights(nets[:half], layer, 0)
    last = unit_weights(nets[half: 2 * half], layer, -1)
    return np.asarray([ks_pvalue(first[:, i], last[:, i]) for i in range(first.shape[1])])
