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
    """Oracle of :func:`symlib.symmetry.architectures.optunet_permutation_spec`."""
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
    """Oracle of :func:`symlib.symmetry.architectures.resnet20_permutation_spec`."""
    return _resnet_spec(resnet20_shapes())


def resnet18_permutation_spec() -> PermutationSpec:
    """Oracle of :func:`symlib.symmetry.architectures.resnet18_permutation_spec`."""
    return _resnet_spec(resnet18_shapes())


def optunet_scaling_spec() -> ScalingSpec:
    """Oracle of :func:`symlib.symmetry.architectures.optunet_scaling_spec`."""
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
    """Oracle of :func:`symlib.symmetry.architectures.resnet20_scaling_spec`."""
    return _resnet_scaling_spec("resnet20", groups)


def resnet18_scaling_spec(groups=None) -> ScalingSpec:
    """Oracle of :func:`symlib.symmetry.architectures.resnet18_scaling_spec`."""
    return _resnet_scaling_spec("resnet18", groups)
