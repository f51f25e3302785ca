"""Permutation specs of the convolutional networks of :mod:`symlib.core.cnn`.

Every symmetry tool (``apply_permutation``, weight and activation matching, NoT,
Wasserstein alignment, sorting) reads these specs; see :mod:`symlib.symmetry.specs` for
the convention.

**OptuNet.** ``conv_1`` is a grouped convolution (2 groups of 5 output channels, each
reading one channel of ``conv_0``), so its output channels may only be permuted within
their group (``blocks={"P_conv_1": 2}``); the 3 hidden units of ``dense_0`` are permuted
freely. The two channels of ``conv_0`` are *not* permuted: exchanging them preserves the
function only together with exchanging the two groups of ``conv_1``, a symmetry of order 2
that the spec leaves out, as Laurent et al.'s sorting does. The group of the spec has
``5! * 5! * 3! = 86,400`` elements.
"""
from __future__ import annotations

from symlib.symmetry.specs import PermutationSpec

__all__ = ["optunet_permutation_spec"]


def optunet_permutation_spec() -> PermutationSpec:
    """Spec of OptuNet (:func:`symlib.core.cnn.optunet_init`).

    Returns:
        ``P_conv_1`` (10 channels, within 2 groups of 5) on the output axis of
        ``conv_1/kernel`` and the input axis of ``dense_0/kernel``; ``P_dense_0`` (3 units)
        on ``dense_0`` and the input axis of ``dense_1/kernel``.
    """
    return PermutationSpec(
        {
            "conv_0/kernel": (None, None, None, None),
            "conv_1/kernel": (None, None, None, "P_conv_1"),
            "dense_0/kernel": ("P_conv_1", "P_dense_0"),
            "dense_0/bias": ("P_dense_0",),
            "dense_1/kernel": ("P_dense_0", None),
            "dense_1/bias": (None,),
        },
        blocks={"P_conv_1": 2},
    )
