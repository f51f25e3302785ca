"""Layer-wise marginal distributions of weights across checkpoints (Laurent et al., App. D.3).

A corollary of Proposition 1 (Laurent et al., 2024): when the initial weights of a layer
are i.i.d. and training treats hidden units alike, swapping two hidden units leaves the
distribution of the trained weights unchanged, so every unit's weights have the same
marginal distribution. Removing the symmetries (:func:`symlib.symmetry.scaling.identifiable`)
gives each position in the sorted order its own distribution.

:func:`first_last_pvalues` tests this with two-sample Kolmogorov-Smirnov tests, one per
weight position, between the first and the last hidden unit of a layer. The two samples
come from disjoint halves of the checkpoints, so that they are independent (the weights
of two units of one network are not), which is what the test assumes.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = ["first_last_pvalues", "unit_weights"]


def unit_weights(nets: Sequence[dict], layer: int, unit: int) -> np.ndarray:
    """Weights of hidden ``unit`` in every checkpoint, shape ``(checkpoints, positions)``.

    For a hidden layer (``layer < L - 1``, output of ``dense_{layer}``) these are the unit's
    incoming kernel weights, column ``unit`` of ``dense_{layer}/kernel``; for the output
    layer (``layer == L - 1``) they are the outgoing weights of unit ``unit`` of the last
    hidden layer, row ``unit`` of ``dense_{L-1}/kernel``.
    """
    n_layers = len(nets[0])
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer must be in 0..{n_layers - 1}, got {layer}")
    k = np.stack([np.asarray(net[f"dense_{layer}"]["kernel"]) for net in nets])
    return k[:, unit, :] if layer == n_layers - 1 else k[:, :, unit]


def first_last_pvalues(nets: Sequence[dict], layer: int) -> np.ndarray:
    """Kolmogorov-Smirnov p-values, one per weight position of ``layer`` (see
    :func:`unit_weights`), comparing the first hidden unit's weight in the first half of
    ``nets`` with the last hidden unit's weight in the second half.

    Under identical marginals each p-value is (close to) uniform on [0, 1], so about 5%
    fall below 0.05. Needs at least 8 checkpoints (4 per sample).
    """
    if len(nets) < 8:
        raise ValueError(f"need at least 8 checkpoints (two independent halves), got {len(nets)}")
    half = len(nets) // 2
    first = unit_weights(nets[:half], layer, 0)
    last = unit_weights(nets[half: 2 * half], layer, -1)
    return np.asarray([stats.ks_2samp(first[:, i], last[:, i]).pvalue for i in range(first.shape[1])])
