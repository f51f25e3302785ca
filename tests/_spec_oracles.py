"""The hand-written permutation and scaling specs of OptuNet, ResNet20 and ResNet-18: the
oracles that :mod:`symlib.symmetry.architectures` (whose specs are derived from the models'
jaxprs by :mod:`symlib.symmetry.derive`) is tested against, entry by entry and in order
(``tests/symmetry/test_derive_specs.py``). Written from the architectures' definitions; the
reasoning is in the docstring of :mod:`symlib.symmetry.architectures`.
"""
from __future__ import annotations

from collections.abc import Mapping

from symlib.core.resnet import inner_name, resnet18_shapes, resnet20_shapes, stream_name
from symlib.symmetry.scaling import ScalingSpec
from symlib.symmetry.specs import PermutationSpec


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


def _resnet_spec(shapes: Mapping[str, tuple[int, ...]]) -> PermutationSpec:
    """Spec of a ResNet of :mod:`symlib.core.resnet` from its parameter paths (module docstring)."""
    last = max(int(path.split("/")[0].split("_")[1]) for path in shapes if path.startswith("stage_"))
    axes = {}
    for path in shapes:
        parts = path.split("/")
        if parts[0] == "head":
            axes[path] = (stream_name(last), None) if parts[1] == "kernel" else (None,)
            continue
        if parts[0] == "stem":
            reads, writes = None, stream_name(0)
        else:
            s, b = int(parts[0].split("_")[1]), int(parts[1].split("_")[1])
            stream_in = stream_name(s - 1 if s > 0 and b == 0 else s)
            if parts[2] in ("conv_0", "norm_0"):
                reads, writes = stream_in, inner_name(s, b)
            elif parts[2] in ("conv_1", "norm_1"):
                reads, writes = inner_name(s, b), stream_name(s)
            else:  # shortcut/conv, shortcut/norm
                reads, writes = stream_in, stream_name(s)
        axes[path] = (None, None, reads, writes) if parts[-1] == "kernel" else (writes,)
    return PermutationSpec(axes)


def resnet20_permutation_spec() -> PermutationSpec:
    """Spec of ResNet20 (:func:`symlib.core.resnet.resnet20_init`, any width and classes).

    Returns:
        Over every parameter: ``P_stage_0 .. P_stage_2`` on the residual streams and
        ``P_stage_s_block_b`` (9) on the inner channels of the blocks (module docstring);
        ``None`` on kernel spatial axes, the image channels and the classes.
    """
    return _resnet_spec(resnet20_shapes())


def resnet18_permutation_spec() -> PermutationSpec:
    """Spec of the CIFAR ResNet-18 (:func:`symlib.core.resnet.resnet18_init`, any classes).

    Returns:
        Over every parameter (the running ``mean``/``var`` of each norm permuted with its
        ``scale``/``bias``): ``P_stage_0 .. P_stage_3`` on the residual streams and
        ``P_stage_s_block_b`` (8) on the inner channels of the blocks (module docstring).
    """
    return _resnet_spec(resnet18_shapes())


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
    return ScalingSpec(
        groups={
            "conv_0": (("conv_0/kernel", 3, 1), ("conv_1/kernel", 3, -1)),
            "conv_1": (("conv_1/kernel", 3, 1), ("dense_0/kernel", 0, -1)),
            "dense_0": (("dense_0/kernel", 1, 1), ("dense_0/bias", 0, 1), ("dense_1/kernel", 0, -1)),
        },
        mass_paths=("conv_0/kernel", "conv_1/kernel", "dense_0/kernel", "dense_1/kernel"),
    )


def _resnet_scaling_spec(arch: str, groups) -> ScalingSpec:
    pspec = {"resnet20": resnet20_permutation_spec, "resnet18": resnet18_permutation_spec}[arch]()
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
    entries = {n: [] for n in chosen}
    for path, axes in pspec.axes.items():
        for axis, name in enumerate(axes):
            if name not in entries:
                continue
            leaf = path.rsplit("/", 1)[-1]
            if leaf in ("scale", "bias"):
                entries[name].append((path, axis, 1))
            elif leaf == "kernel" and axis == len(axes) - 2:  # the input-channel axis reads the group
                entries[name].append((path, axis, -1))
    # the first entry gives the group size: a norm's scale
    groups_ = {n: tuple(sorted(e, key=lambda t: (t[2] != 1, t[0]))) for n, e in entries.items()}
    mass = tuple(p for p in pspec.axes if p.endswith(("kernel", "/scale")) and not p.startswith("head/bias"))
    return ScalingSpec(groups=groups_, mass_paths=mass)


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
