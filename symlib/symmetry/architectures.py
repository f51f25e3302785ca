"""Permutation and scaling specs of the convolutional networks of :mod:`symlib.core.cnn` and
:mod:`symlib.core.resnet`.

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

**ResNets** (ResNet20 with LayerNorm, the CIFAR ResNet-18 with batch norm in inference
form; layout in :mod:`symlib.core.resnet`). The channels of each stage's residual stream
share one permutation ``P_stage_s``: the stem's output (stage 0), the output axis of every
``conv_1`` and of the shortcut convolution, the norms that write the stream
(``norm_1``, ``shortcut/norm``, ``stem/norm``), and the input axis of every convolution
that reads it (each block's ``conv_0``, the next stage's first ``conv_0`` and shortcut
convolution, and for the last stage the rows of ``head/kernel``). The inner channels of
each block get their own permutation ``P_stage_s_block_b``: the output axis of
``conv_0``, ``norm_0`` (``scale``, ``bias`` and for batch norm ``mean``, ``var``) and the
input axis of ``conv_1``. The permutation names are the keys of
:func:`symlib.core.resnet.resnet20_hidden` and :func:`~symlib.core.resnet.resnet18_hidden`.

*Positive scaling.* Every norm ends with a per-channel affine map (``scale``, ``bias``)
whose output goes through a ReLU (inner channels: ``norm_0 -> ReLU -> conv_1``) or
through a sum and a ReLU (streams). Multiplying ``scale`` and ``bias`` of a channel by
``a > 0`` in every norm that writes it, and dividing the input axis of every convolution
or dense kernel that reads it by ``a``, leaves the function unchanged exactly (ReLU is
positively homogeneous): for an inner channel, its ``norm_0`` and ``conv_1``; for a
stream channel, ``stem/norm`` (stage 0), every ``norm_1`` and ``shortcut/norm`` of the
stage write it, and the ``conv_0`` kernels, the next stage's shortcut convolution and
``head/kernel`` read it (``head/bias`` is untouched). Scaling the *output channels of a
convolution* instead is not a symmetry when a LayerNorm follows (it normalises with
statistics mixed over all channels of the pixel); with batch norm in inference form,
scaling a convolution's output channel, its running ``mean`` by ``a`` and ``var`` by
``a**2`` is a symmetry only up to ``eps`` (``sqrt(a**2 var + eps) != a sqrt(var + eps)``).
``tests/symmetry/test_resnet.py`` checks all of these statements numerically.

**Derived, not written.** Every spec here is computed by :mod:`symlib.symmetry.derive` from the
model's own jaxpr (:func:`~symlib.symmetry.derive.permutation_spec_from_apply` and
:func:`~symlib.symmetry.derive.scaling_spec_from_apply` on small parameters of the same
layout: the specs do not depend on the width or the number of classes), once per process, with
the derived names put into the names above (``P_conv_1``; ``P_stage_s``,
``P_stage_s_block_b``; the scaling groups of OptuNet by layer) and the entries in the order of
the hand-written specs that ``tests/_spec_oracles.py`` keeps as the oracles
(``tests/symmetry/test_derive_specs.py`` checks them equal, entry by entry and in order).
"""
from __future__ import annotations

import copy
import functools
import re
from functools import partial

import jax.numpy as jnp

from symlib.core.cnn import OPTUNET_SHAPES, optunet_apply
from symlib.core.resnet import (inner_name, resnet18_apply, resnet18_shapes, resnet20_apply, resnet20_shapes,
                                stream_name)
from symlib.symmetry.derive import permutation_spec_from_apply, scaling_spec_from_apply
from symlib.symmetry.scaling import ScalingSpec
from symlib.symmetry.specs import PermutationSpec

__all__ = ["optunet_permutation_spec", "optunet_scaling_spec", "resnet18_permutation_spec", "resnet18_scaling_spec",
           "resnet20_permutation_spec", "resnet20_scaling_spec"]


def _zeros(shapes) -> dict:
    """Zero parameters of the layout ``{"a/b": shape}``, nested as the models take them."""
    out: dict = {}
    for path, shape in shapes.items():
        *parents, leaf = path.split("/")
        node = out
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = jnp.zeros(shape, jnp.float32)
    return out


def _resnet_name(derived: str) -> str:
    """A ResNet's permutation name for derive's ``"P_<first writer's layer>"``: the stem and
    every ``conv_1``/``norm_1`` (and the shortcut's) write a stage's stream, ``conv_0``/``norm_0``
    a block's inner channels."""
    layer = derived[2:]
    if layer.startswith("stem/"):
        return stream_name(0)
    match = re.fullmatch(r"stage_(\d+)/block_(\d+)/(?:conv|norm)_([01])", layer)
    if match is None:
        raise ValueError(f"unexpected derived group {derived!r}: the ResNet naming needs updating")
    stage, block, which = map(int, match.groups())
    return inner_name(stage, block) if which == 0 else stream_name(stage)


def _renamed(pspec: PermutationSpec, sspec: ScalingSpec, name, order, by_path: bool) -> tuple[PermutationSpec,
                                                                                               ScalingSpec]:
    """The specs with every group renamed by ``name``, the permutation axes in the parameter
    order ``order`` and, with ``by_path``, each scaling group's entries incoming side first,
    by path (the ResNets' norms: bias before scale; derive lists them in parameter order)."""
    rename = lambda n: None if n is None else name(n)  # noqa: E731
    axes = {path: tuple(map(rename, pspec.axes[path])) for path in order}
    perm = PermutationSpec(axes, blocks={name(k): v for k, v in pspec.blocks.items()})
    groups = {name(k): tuple(sorted(v, key=lambda e: (e[2] != 1, e[0])) if by_path else v)
              for k, v in sspec.groups.items()}
    return perm, ScalingSpec(groups=groups, mass_paths=sspec.mass_paths, views=sspec.views, parts=sspec.parts)


@functools.lru_cache(maxsize=None)
def _derived(arch: str) -> tuple[PermutationSpec, ScalingSpec]:
    """The permutation and scaling specs of ``arch``, derived from its jaxpr (module docstring)."""
    if arch == "optunet":
        order, small = list(OPTUNET_SHAPES), OPTUNET_SHAPES
        apply_fn, image = partial(optunet_apply, conv="xla"), (28, 28, 1)
        name, scale_name = (lambda n: n), (lambda n: n[2:])  # OptuNet's scaling groups are named by layer
    else:
        order = list(resnet20_shapes() if arch == "resnet20" else resnet18_shapes())
        small = resnet20_shapes(in_channels=1) if arch == "resnet20" else resnet18_shapes(base_width=4)
        apply_fn, image = (resnet20_apply if arch == "resnet20" else resnet18_apply), (32, 32, 3)
        image = image[:2] + (small["stem/conv/kernel"][2],)
        name = scale_name = _resnet_name
    params, x = _zeros(small), jnp.zeros((1, *image), jnp.float32)
    pspec = permutation_spec_from_apply(apply_fn, params, x)
    sspec = scaling_spec_from_apply(apply_fn, params, x)
    resnet = arch != "optunet"
    return _renamed(pspec, sspec, name, order, resnet)[0], _renamed(pspec, sspec, scale_name, order, resnet)[1]


def _spec(arch: str, kind: int):
    """A fresh copy of ``arch``'s derived permutation (``kind=0``) or scaling (``1``) spec."""
    return copy.deepcopy(_derived(arch)[kind])


def optunet_permutation_spec() -> PermutationSpec:
    """Spec of OptuNet (:func:`symlib.core.cnn.optunet_init`).

    Returns:
        ``P_conv_1`` (10 channels, within 2 groups of 5) on the output axis of
        ``conv_1/kernel`` and the input axis of ``dense_0/kernel``; ``P_dense_0`` (3 units)
        on ``dense_0`` and the input axis of ``dense_1/kernel``.
    """
    return _spec("optunet", 0)


def resnet20_permutation_spec() -> PermutationSpec:
    """Spec of ResNet20 (:func:`symlib.core.resnet.resnet20_init`, any width and classes).

    Returns:
        Over every parameter: ``P_stage_0 .. P_stage_2`` on the residual streams and
        ``P_stage_s_block_b`` (9) on the inner channels of the blocks (module docstring);
        ``None`` on kernel spatial axes, the image channels and the classes.
    """
    return _spec("resnet20", 0)


def resnet18_permutation_spec() -> PermutationSpec:
    """Spec of the CIFAR ResNet-18 (:func:`symlib.core.resnet.resnet18_init`, any classes).

    Returns:
        Over every parameter (the running ``mean``/``var`` of each norm permuted with its
        ``scale``/``bias``): ``P_stage_0 .. P_stage_3`` on the residual streams and
        ``P_stage_s_block_b`` (8) on the inner channels of the blocks (module docstring).
    """
    return _spec("resnet18", 0)


def optunet_scaling_spec() -> ScalingSpec:
    """The scaling symmetries of OptuNet (:func:`symlib.core.cnn.optunet_init`).

    Every hidden channel is followed by ReLU (and max-pool or average pool, both
    positively homogeneous), so all of them rescale: the 2 channels of ``conv_0``
    (outgoing side: their group's 5 output channels of ``conv_1``), the 10 of ``conv_1``
    and the 3 units of ``dense_0`` (with their bias). The mass is the sum of the four
    kernels' squares.

    Returns:
        A :class:`~symlib.symmetry.scaling.ScalingSpec` with groups ``conv_0``, ``conv_1``, ``dense_0``.
    """
    return _spec("optunet", 1)


def _resnet_scaling_spec(arch: str, groups) -> ScalingSpec:
    pspec, full = _derived(arch)
    names = list(pspec.perm_names)
    chosen = names if groups is None else list(groups)
    for g in chosen:
        if g in names:
            continue
        layer = g.rstrip("/")
        known = {path.rsplit("/", 1)[0] for path in pspec.axes}
        if layer in known and layer.split("/")[-1].startswith("conv"):
            norm = layer.rsplit("/", 1)[0] + "/norm" + ("_" + layer[-1] if layer[-1].isdigit() else "")
            kind = "LayerNorm" if arch == "resnet20" else "batch norm"
            extra = ("" if arch == "resnet20" else "; batch norm in inference form keeps it only up to its eps, "
                     "with the running statistics rescaled too")
            raise ValueError(
                f"{arch}: the output channels of {layer!r} have no scaling symmetry: they feed {norm!r} ({kind}), "
                f"which normalises them, so rescaling them one by one changes the function{extra}. The channels "
                f"rescale after the norm: group {pspec.axes[layer + '/kernel'][-1]!r} (the norm's scale and bias "
                f"times a, the kernels reading the channels divided by a)")
        raise ValueError(f"{arch}: unknown scaling group {g!r}; the groups are the permutations {names}")
    return ScalingSpec(groups={n: full.groups[n] for n in chosen}, mass_paths=full.mass_paths, views=full.views,
                       parts=full.parts)


def resnet20_scaling_spec(groups=None) -> ScalingSpec:
    """The scaling symmetries of ResNet20 with LayerNorm (:func:`symlib.core.resnet.resnet20_init`).

    A channel rescales where it leaves a norm and enters ReLU: multiplying a norm's
    ``scale`` and ``bias`` of a channel by ``a > 0`` multiplies the channel by ``a``, and
    ReLU (and the residual sum, average pool) commute with that; dividing every kernel
    row that reads the channel by ``a`` undoes it. So every group of the permutation spec
    is a scaling group: a block's inner channels (``norm_0`` -> ``conv_1``) and a residual
    stream (all the norms that write it, ``norm_1`` of its blocks and the shortcut norm,
    against all the kernels that read it, the next convolutions and the head). Channels
    **before** a norm (the convolutions' outputs) have no such symmetry: LayerNorm
    normalises over the channels, so rescaling one channel changes every channel's output.
    Asking for one of those is refused with an error that says so.

    The mass is the sum of squares of all kernels and of the norms' ``scale`` (the biases
    excluded, as in Definition C.6). The scales must count: they are the incoming side of
    every group, and without them the mass would fall forever as the scales grow.

    Args:
        groups: names of the groups to include (permutation names of
            :func:`~symlib.symmetry.architectures.resnet20_permutation_spec`); default all.

    Returns:
        The :class:`~symlib.symmetry.scaling.ScalingSpec`.

    Raises:
        ValueError: for a convolution's output channels (no scaling symmetry; the message
            names the norm) or an unknown group.
    """
    return _resnet_scaling_spec("resnet20", groups)


def resnet18_scaling_spec(groups=None) -> ScalingSpec:
    """The scaling symmetries of the CIFAR ResNet-18 with batch norm in inference form
    (:func:`symlib.core.resnet.resnet18_init`): as :func:`resnet20_scaling_spec`, the norm's
    ``scale`` and ``bias`` (not its running statistics) against the kernels reading the
    channel. A convolution's output channel before batch norm rescales only approximately
    (exact up to the norm's ``eps`` when the running mean and variance are rescaled too), so
    it is refused.

    Args:
        groups: names of the groups to include; default all.

    Returns:
        The :class:`~symlib.symmetry.scaling.ScalingSpec`.

    Raises:
        ValueError: as for :func:`resnet20_scaling_spec`.
    """
    return _resnet_scaling_spec("resnet18", groups)
