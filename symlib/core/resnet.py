"""Residual networks as plain pytrees: ResNet20 with LayerNorm and the CIFAR ResNet-18.

Conventions as in :mod:`symlib.core.cnn`: images ``(n, height, width, channels)`` (NHWC),
convolution kernels HWIO ``(kh, kw, in_channels, out_channels)``, dense kernels
input-major; every apply function takes one network (``jax.vmap`` it for a stack) and
checks the parameters against the layout of the architecture, which it reads from the
stem and head kernels (input channels, width, classes), naming the first parameter that
does not fit. No convolution has a bias.

**ResNet20** (He et al. 2016's CIFAR ResNet with LayerNorm instead of BatchNorm, as in
Ainsworth et al.'s Git Re-Basin code and Rossi et al.), width multiplier ``w``::

    stem     conv 3x3, 16w channels, SAME -> LayerNorm -> ReLU
    stage_0  3 basic blocks, 16w channels, stride 1
    stage_1  3 basic blocks, 32w channels, the first with stride 2 and a shortcut
    stage_2  3 basic blocks, 64w channels, the first with stride 2 and a shortcut
    head     global average pool -> dense (with bias) to the classes

A basic block computes ``relu(shortcut(x) + norm_1(conv_1(relu(norm_0(conv_0(x))))))``
(``conv_0`` carries the block's stride); the shortcut is the identity, or in the first
block of stages 1 and 2 a 1x1 convolution with stride 2 followed by a norm. Padding is
``"SAME"`` (Flax's default). LayerNorm normalises each pixel over the channel axis only
(Flax's ``nn.LayerNorm`` on NHWC), with a learnable per-channel ``scale`` and ``bias``
and ``eps = 1e-5`` (Flax's default is ``1e-6``; the difference is negligible).
Parameters: 272,474 for ``w = 1``, 4,327,754 for ``w = 4`` (10 classes, 3 channels).

**ResNet-18** (the CIFAR-style ResNet-18 of torch-uncertainty that Laurent et al. use):
a 3x3 stem convolution with 64 channels and stride 1, no max-pool, then stages of 64,
128, 256 and 512 channels with 2 basic blocks each, stride 2 and a 1x1 shortcut
convolution + norm in the first block of stages 1-3, global average pool and a dense
head. Padding is PyTorch's: 1 for 3x3 convolutions, 0 for 1x1 (for even image sizes and
stride 2 this differs from ``"SAME"``, which pads only bottom/right). The norms are batch
norm in **inference form**: per channel ``scale``, ``bias`` and the running statistics
``mean``, ``var``; ``y = scale * (x - mean) / sqrt(var + 1e-5) + bias``. ``mean`` and
``var`` are state, not trained parameters. For training, :func:`resnet18_apply_train`
normalises with the statistics of the batch instead (PyTorch's training mode; the running
statistics are neither read nor updated) and :func:`resnet18_running_statistics` sets them
afterwards from a pass over training images ("precise batch norm": the mean over batches
of the batch mean and of the unbiased batch variance). 11,220,132 trained parameters for
100 classes, plus 9,600 running statistics.

**Parameter layout** (nested dicts; flat paths with ``"/"``, see
:func:`symlib.core.pytree.flatten_dict`); ``NORM`` stands for the leaves ``scale``,
``bias`` (ResNet20) or ``scale``, ``bias``, ``mean``, ``var`` (ResNet-18), each ``(c,)``::

    stem/conv/kernel                         (3, 3, in_channels, c_0)
    stem/norm/NORM
    stage_s/block_b/conv_0/kernel            (3, 3, c_in, c_s)
    stage_s/block_b/norm_0/NORM
    stage_s/block_b/conv_1/kernel            (3, 3, c_s, c_s)
    stage_s/block_b/norm_1/NORM
    stage_s/block_0/shortcut/conv/kernel     (1, 1, c_{s-1}, c_s)    stages s >= 1 only
    stage_s/block_0/shortcut/norm/NORM
    head/kernel                              (c_last, num_classes)
    head/bias                                (num_classes,)

Stages and blocks count from 0; ``c_in`` is ``c_{s-1}`` in the first block of stage
``s >= 1`` and ``c_s`` otherwise.

**Hidden activations** (:func:`resnet20_hidden`, :func:`resnet18_hidden`) are keyed by
the permutation that permutes their channels in
:mod:`symlib.symmetry.architectures`: ``"P_stage_s"`` is the residual stream of stage
``s`` (the post-ReLU output of its last block), ``"P_stage_s_block_b"`` the inner
channels of block ``b`` (post-ReLU output of ``norm_0``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import positive_int
from symlib.core.cnn import check_images, check_layout, conv2d, global_avg_pool, uniform_init
from symlib.core.pytree import SEP, flatten_dict, unflatten_dict

__all__ = [
    "NORM_EPS",
    "batch_norm_inference",
    "inner_name",
    "layer_norm",
    "resnet18_apply",
    "resnet18_apply_train",
    "resnet18_features",
    "resnet18_hidden",
    "resnet18_running_statistics",
    "resnet18_init",
    "resnet18_shapes",
    "resnet20_apply",
    "resnet20_hidden",
    "resnet20_init",
    "resnet20_shapes",
    "stream_name",
]

#: epsilon of every LayerNorm and batch norm of this module
NORM_EPS = 1e-5

_PAD_3X3_TORCH = ((1, 1), (1, 1))


@dataclass(frozen=True)
class _Arch:
    """What distinguishes the two ResNets."""

    name: str
    width_arg: str  # name of the width argument of the init function
    base_widths: tuple[int, ...]  # channels of each stage for width (multiplier) 1
    num_blocks: int  # basic blocks per stage
    batch_norm: bool  # inference-form batch norm, else LayerNorm
    pad_3x3: object  # padding of the 3x3 convolutions
    pad_1x1: str
    min_size: int  # smallest image side accepted

    @property
    def norm_leaves(self) -> tuple[str, ...]:
        return ("scale", "bias", "mean", "var") if self.batch_norm else ("scale", "bias")


_RESNET20 = _Arch("ResNet20", "width_multiplier", (16, 32, 64), 3, False, "SAME", "SAME", 4)
_RESNET18 = _Arch("ResNet-18", "base_width", (1, 2, 4, 8), 2, True, _PAD_3X3_TORCH, "VALID", 8)


def stream_name(stage: int) -> str:
    """Name of the permutation (and hidden activation) of stage ``stage``'s residual stream."""
    return f"P_stage_{stage}"


def inner_name(stage: int, block: int) -> str:
    """Name of the permutation (and hidden activation) of the inner channels of a block."""
    return f"P_stage_{stage}_block_{block}"


def _has_shortcut(stage: int, block: int) -> bool:
    return stage > 0 and block == 0


def _shapes(arch: _Arch, width: int, num_classes: int, in_channels: int) -> dict[str, tuple[int, ...]]:
    widths = [width * c for c in arch.base_widths]
    shapes: dict[str, tuple[int, ...]] = {}

    def layer(path: str, size: int, c_in: int, c_out: int, conv_name: str, norm_name: str) -> None:
        shapes[f"{path}/{conv_name}/kernel"] = (size, size, c_in, c_out)
        for leaf in arch.norm_leaves:
            shapes[f"{path}/{norm_name}/{leaf}"] = (c_out,)

    layer("stem", 3, in_channels, widths[0], "conv", "norm")
    c_in = widths[0]
    for s, c in enumerate(widths):
        for b in range(arch.num_blocks):
            path = f"stage_{s}/block_{b}"
            layer(path, 3, c_in, c, "conv_0", "norm_0")
            layer(path, 3, c, c, "conv_1", "norm_1")
            if _has_shortcut(s, b):
                layer(f"{path}/shortcut", 1, c_in, c, "conv", "norm")
            c_in = c
    shapes["head/kernel"] = (c_in, num_classes)
    shapes["head/bias"] = (num_classes,)
    return shapes


def _check_config(arch: _Arch, width, num_classes, in_channels) -> tuple[int, int, int]:
    return (positive_int(width, arch.width_arg), positive_int(num_classes, "num_classes"),
            positive_int(in_channels, "in_channels"))


def resnet20_shapes(width_multiplier: int = 1, num_classes: int = 10,
                    in_channels: int = 3) -> dict[str, tuple[int, ...]]:
    """Parameter path -> shape of one ResNet20 (module docstring for the layout).

    Args:
        width_multiplier: ``w``; the stages have ``16w``, ``32w`` and ``64w`` channels.
        num_classes: outputs of the dense head.
        in_channels: channels of the input images.

    Returns:
        The shapes, in network order (stem, stages, head).

    Raises:
        ValueError: naming the argument that is not a positive integer.
    """
    return _shapes(_RESNET20, *_check_config(_RESNET20, width_multiplier, num_classes, in_channels))


def resnet18_shapes(num_classes: int = 100, in_channels: int = 3, base_width: int = 64) -> dict[str, tuple[int, ...]]:
    """Parameter path -> shape of one CIFAR ResNet-18 (module docstring for the layout).

    Args:
        num_classes: outputs of the dense head.
        in_channels: channels of the input images.
        base_width: channels of the stem and the first stage (64 in ResNet-18); the
            stages have ``1, 2, 4, 8`` times as many.

    Returns:
        The shapes, in network order (stem, stages, head); every norm has ``scale``,
        ``bias``, ``mean`` and ``var``.

    Raises:
        ValueError: naming the argument that is not a positive integer.
    """
    return _shapes(_RESNET18, *_check_config(_RESNET18, base_width, num_classes, in_channels))


def _init(key: jax.Array, shapes: Mapping[str, tuple[int, ...]]) -> dict:
    # one draw for all convolution kernels and one for the head (kernel rows and bias as
    # the last row): a draw per leaf would compile one random op per shape
    k_conv, k_head = jax.random.split(key)
    kernels = [p for p in shapes if p.endswith("/kernel") and not p.startswith("head/")]
    z = np.asarray(jax.random.normal(k_conv, (sum(int(np.prod(shapes[p])) for p in kernels),), jnp.float32))
    fan_in, num_classes = shapes["head/kernel"]
    head = np.asarray(uniform_init(k_head, (fan_in + 1, num_classes), fan_in))
    flat, start = {}, 0
    for path, shape in shapes.items():
        leaf = path.rsplit(SEP, 1)[1]
        if path == "head/kernel":
            value = head[:-1]
        elif path == "head/bias":
            value = head[-1]
        elif leaf == "kernel":
            size, fan_out = int(np.prod(shape)), shape[0] * shape[1] * shape[3]
            value = np.sqrt(2.0 / fan_out, dtype=np.float32) * z[start:start + size].reshape(shape)
            start += size
        else:
            value = np.full(shape, 1.0 if leaf in ("scale", "var") else 0.0, np.float32)
        flat[path] = jnp.asarray(value)
    return unflatten_dict(flat, SEP)


def resnet20_init(key: jax.Array, width_multiplier: int = 1, num_classes: int = 10, in_channels: int = 3) -> dict:
    """Initial ResNet20 parameters.

    Convolution kernels are He (Kaiming) normal in ``fan_out`` mode, ``N(0, 2 / (kh * kw *
    out_channels))`` (torchvision's ResNet initialisation); every LayerNorm has ``scale = 1``
    and ``bias = 0``; the dense head is PyTorch's default, kernel and bias
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.

    Args:
        key: a ``jax.random`` key.
        width_multiplier: ``w``; the stages have ``16w``, ``32w`` and ``64w`` channels.
        num_classes: outputs of the dense head.
        in_channels: channels of the input images.

    Returns:
        float32 parameters in the layout of :func:`resnet20_shapes` (nested dicts).

    Raises:
        ValueError: naming the argument that is not a positive integer.
    """
    return _init(key, resnet20_shapes(width_multiplier, num_classes, in_channels))


def resnet18_init(key: jax.Array, num_classes: int = 100, in_channels: int = 3, base_width: int = 64) -> dict:
    """Initial CIFAR ResNet-18 parameters, batch norm in inference form.

    Convolution kernels are He (Kaiming) normal in ``fan_out`` mode, ``N(0, 2 / (kh * kw *
    out_channels))`` (torchvision's ResNet initialisation); every batch norm has
    ``scale = 1``, ``bias = 0`` and running statistics ``mean = 0``, ``var = 1``; the dense
    head is PyTorch's default, kernel and bias ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.
    ``mean`` and ``var`` are state, not trained: :func:`resnet18_apply_train` (and
    :func:`resnet18_features` with ``train=True``) normalise with the batch's statistics
    instead, and :func:`resnet18_running_statistics` re-estimates them for a trained network.

    Args:
        key: a ``jax.random`` key.
        num_classes: outputs of the dense head.
        in_channels: channels of the input images.
        base_width: channels of the stem and first stage (64).

    Returns:
        float32 parameters in the layout of :func:`resnet18_shapes` (nested dicts).

    Raises:
        ValueError: naming the argument that is not a positive integer.
    """
    return _init(key, resnet18_shapes(num_classes, in_channels, base_width))


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array, eps: float = NORM_EPS) -> jax.Array:
    """LayerNorm over the last (channel) axis, then a per-channel affine map.

    Args:
        x: activations ``(..., c)``; each pixel is normalised over its ``c`` channels.
        scale, bias: ``(c,)``.
        eps: added to the variance.

    Returns:
        ``scale * (x - mean) / sqrt(var + eps) + bias``, mean and (biased) variance over
        the last axis.
    """
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return scale * (x - mean) * jax.lax.rsqrt(var + eps) + bias


def batch_norm_inference(x: jax.Array, scale: jax.Array, bias: jax.Array, mean: jax.Array, var: jax.Array,
                         eps: float = NORM_EPS) -> jax.Array:
    """Batch norm in inference form: a per-channel affine map with running statistics.

    Args:
        x: activations ``(..., c)``.
        scale, bias: the learnt affine map, ``(c,)``.
        mean, var: the running statistics, ``(c,)``.
        eps: added to the variance.

    Returns:
        ``scale * (x - mean) / sqrt(var + eps) + bias``.
    """
    return scale * (x - mean) * jax.lax.rsqrt(var + eps) + bias


def _read_layout(arch: _Arch, params: Mapping) -> tuple[dict, int]:
    """Flat parameters and input channels, after checking ``params`` against the layout of
    ``arch`` read from the stem and head kernels."""
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict of layers, got {type(params).__name__}")
    flat = flatten_dict(params, SEP)
    for path, ndim in (("stem/conv/kernel", 4), ("head/kernel", 2)):
        if path not in flat:
            raise ValueError(f"params is missing parameter(s) [{path!r}] of {arch.name}")
        if np.ndim(flat[path]) != ndim:
            raise ValueError(f"params parameter {path!r} of {arch.name} has shape {tuple(np.shape(flat[path]))}; "
                             f"expected {ndim} axes")
    _, _, in_channels, c0 = np.shape(flat["stem/conv/kernel"])
    base = arch.base_widths[0]
    if c0 < base or c0 % base:
        raise ValueError(f"params parameter 'stem/conv/kernel' of {arch.name} has {c0} output channels; "
                         f"expected a positive multiple of {base}")
    width, num_classes = c0 // base, np.shape(flat["head/kernel"])[1]
    config = f"{arch.name} ({arch.width_arg} {width}, {num_classes} classes, {in_channels} input channels)"
    check_layout(flat, _shapes(arch, width, num_classes, in_channels), config)
    if arch.batch_norm:
        for path, leaf in flat.items():
            if path.endswith("/var") and not isinstance(leaf, jax.core.Tracer) and not np.all(np.asarray(leaf) >= 0):
                raise ValueError(f"params parameter {path!r} of {arch.name} (running variance) has negative entries")
    return flat, in_channels


def _forward(arch: _Arch, params: Mapping, x: jax.Array,
             batch_stats: bool = False) -> tuple[dict[str, jax.Array], dict, dict[str, tuple]]:
    """Hidden activations keyed by permutation name, the flat parameters and, with
    ``batch_stats``, the batch's ``(mean, biased var, values per channel)`` of every norm (by norm path),
    which then normalised the activations in place of the running statistics."""
    flat, in_channels = _read_layout(arch, params)
    check_images(x, in_channels, arch.min_size, arch.name)
    stats: dict[str, tuple] = {}

    def conv_norm(h, path: str, conv_name: str, norm_name: str, stride: int) -> jax.Array:
        kernel = flat[f"{path}/{conv_name}/kernel"]
        pad = arch.pad_3x3 if kernel.shape[0] == 3 else arch.pad_1x1
        h = conv2d(h, kernel, stride, pad)
        leaves = [flat[f"{path}/{norm_name}/{leaf}"] for leaf in arch.norm_leaves]
        if not arch.batch_norm:
            return layer_norm(h, *leaves)
        if batch_stats:
            mean, var = jnp.mean(h, axis=(0, 1, 2)), jnp.var(h, axis=(0, 1, 2))
            stats[f"{path}/{norm_name}"] = (mean, var, h.shape[0] * h.shape[1] * h.shape[2])
            leaves = leaves[:2] + [mean, var]
        return batch_norm_inference(h, *leaves)

    hidden = {}
    h = jax.nn.relu(conv_norm(x, "stem", "conv", "norm", 1))
    for s in range(len(arch.base_widths)):
        for b in range(arch.num_blocks):
            path, shortcut = f"stage_{s}/block_{b}", _has_shortcut(s, b)
            stride = 2 if shortcut else 1
            inner = jax.nn.relu(conv_norm(h, path, "conv_0", "norm_0", stride))
            hidden[inner_name(s, b)] = inner
            out = conv_norm(inner, path, "conv_1", "norm_1", 1)
            skip = conv_norm(h, f"{path}/shortcut", "conv", "norm", stride) if shortcut else h
            h = jax.nn.relu(skip + out)
        hidden[stream_name(s)] = h
    return hidden, flat, stats


def _features(arch: _Arch, params: Mapping, x: jax.Array, batch_stats: bool = False) -> tuple[jax.Array, dict]:
    hidden, flat, _ = _forward(arch, params, x, batch_stats)
    return global_avg_pool(hidden[stream_name(len(arch.base_widths) - 1)]), flat


def _logits(arch: _Arch, params: Mapping, x: jax.Array, batch_stats: bool = False) -> jax.Array:
    features, flat = _features(arch, params, x, batch_stats)
    return features @ flat["head/kernel"] + flat["head/bias"]


def resnet20_hidden(params: Mapping, x: jax.Array) -> dict[str, jax.Array]:
    """Post-ReLU activations of ResNet20, keyed by the permutation of their channels.

    Args:
        params: one ResNet20 (:func:`resnet20_init` layout, nested or flat).
        x: images ``(n, h, w, in_channels)``, at least 4x4 (CIFAR: 32x32).

    Returns:
        ``{"P_stage_s_block_b": (n, h_s, w_s, c_s)}`` for the inner channels of every
        block and ``{"P_stage_s": (n, h_s, w_s, c_s)}`` for the output of every stage
        (its residual stream after the last block), in network order.

    Raises:
        TypeError: if ``params`` is not a dict.
        ValueError: naming the parameter that does not fit ResNet20, or for images of
            the wrong shape or channels or with nan/inf.
    """
    return _forward(_RESNET20, params, x)[0]


def resnet20_apply(params: Mapping, x: jax.Array) -> jax.Array:
    """ResNet20's logits.

    Args:
        params: one ResNet20 (:func:`resnet20_init` layout); ``jax.vmap`` for a stack.
        x: images ``(n, h, w, in_channels)``, at least 4x4 (CIFAR: 32x32).

    Returns:
        Logits ``(n, num_classes)``.

    Raises:
        TypeError, ValueError: as for :func:`resnet20_hidden`.
    """
    return _logits(_RESNET20, params, x)


def resnet18_hidden(params: Mapping, x: jax.Array) -> dict[str, jax.Array]:
    """Post-ReLU activations of the CIFAR ResNet-18, keyed by the permutation of their channels.

    Args:
        params: one ResNet-18 (:func:`resnet18_init` layout, nested or flat).
        x: images ``(n, h, w, in_channels)``, at least 8x8 (CIFAR: 32x32).

    Returns:
        ``{"P_stage_s_block_b": (n, h_s, w_s, c_s)}`` for the inner channels of every
        block and ``{"P_stage_s": (n, h_s, w_s, c_s)}`` for the output of every stage,
        in network order.

    Raises:
        TypeError: if ``params`` is not a dict.
        ValueError: naming the parameter that does not fit ResNet-18 (or a running
            variance with negative entries), or for images of the wrong shape or
            channels or with nan/inf.
    """
    return _forward(_RESNET18, params, x)[0]


def resnet18_apply(params: Mapping, x: jax.Array) -> jax.Array:
    """The CIFAR ResNet-18's logits (batch norm with running statistics).

    Args:
        params: one ResNet-18 (:func:`resnet18_init` layout); ``jax.vmap`` for a stack.
        x: images ``(n, h, w, in_channels)``, at least 8x8 (CIFAR: 32x32).

    Returns:
        Logits ``(n, num_classes)``.

    Raises:
        TypeError, ValueError: as for :func:`resnet18_hidden`.
    """
    return _logits(_RESNET18, params, x)


def resnet18_apply_train(params: Mapping, x: jax.Array) -> jax.Array:
    """The CIFAR ResNet-18's logits in training mode: every batch norm uses the mean and
    (biased) variance of its input over the batch and the pixels, as PyTorch's
    ``BatchNorm2d`` does in ``train()``; the running statistics ``mean`` / ``var`` are not
    read (their gradient is zero) and not updated (:func:`resnet18_running_statistics`).

    Args:
        params: one ResNet-18 (:func:`resnet18_init` layout).
        x: a batch of images ``(n, h, w, in_channels)``, at least 8x8.

    Returns:
        Logits ``(n, num_classes)``; each depends on the whole batch.

    Raises:
        TypeError, ValueError: as for :func:`resnet18_hidden`.
    """
    return _logits(_RESNET18, params, x, batch_stats=True)


def resnet18_features(params: Mapping, x: jax.Array, train: bool = False) -> jax.Array:
    """The input of the head: the globally average-pooled output of the last stage
    (running statistics), the features of last-layer Laplace and last-layer dropout.

    Args:
        params: one ResNet-18 (:func:`resnet18_init` layout).
        x: images ``(n, h, w, in_channels)``, at least 8x8.
        train: normalise with the batch's statistics, as :func:`resnet18_apply_train`.

    Returns:
        Features ``(n, 8 * base_width)``; ``resnet18_apply`` is ``features @ head/kernel + head/bias``.

    Raises:
        TypeError, ValueError: as for :func:`resnet18_hidden`.
    """
    return _features(_RESNET18, params, x, batch_stats=train)[0]


def resnet18_running_statistics(params: Mapping, x, batch_size: int = 128) -> dict:
    """``params`` with the running statistics of every batch norm re-estimated on ``x``.

    The images are cut into batches of ``batch_size`` (the last incomplete one dropped,
    unless it is the only one); each norm's ``mean`` becomes the mean over batches of the
    batch mean and its ``var`` the mean over batches of the unbiased batch variance (the
    batch statistics of :func:`resnet18_apply_train`, each norm seeing the previous
    norms in training mode). This is "precise batch norm", the running statistics that
    PyTorch's exponential average approximates, and what SWAG's ``bn_update`` does for a
    sampled network.

    Args:
        params: one ResNet-18 (:func:`resnet18_init` layout).
        x: training images ``(n, h, w, in_channels)``, numpy or JAX, ``n >= 2``.
        batch_size: images per batch, >= 2.

    Returns:
        The parameters (nested, float32 leaves of ``params``' dtypes) with new ``mean`` and ``var``.

    Raises:
        TypeError, ValueError: as for :func:`resnet18_hidden`, and if ``batch_size < 2``
            or fewer than 2 images are given.
    """
    bs = positive_int(batch_size, "batch_size")
    n = int(np.shape(x)[0])
    if bs < 2 or n < 2:
        raise ValueError(f"batch statistics need batches of at least 2 images; got batch_size={bs}, {n} images")
    bs = min(bs, n)
    flat = flatten_dict(params, SEP)
    sums: dict[str, list] = {}
    for start in range(0, n - bs + 1, bs):
        for path, stat in _unbiased_batch_statistics(params, jnp.asarray(x[start:start + bs])).items():
            acc = sums.setdefault(path, [0.0, 0.0, 0])
            acc[0] = acc[0] + np.asarray(stat[0], np.float64)
            acc[1] = acc[1] + np.asarray(stat[1], np.float64)
            acc[2] += 1
    out = dict(flat)
    for path, (mean_sum, var_sum, count) in sums.items():
        out[f"{path}/mean"] = jnp.asarray(mean_sum / count, jnp.result_type(flat[f"{path}/mean"]))
        out[f"{path}/var"] = jnp.asarray(var_sum / count, jnp.result_type(flat[f"{path}/var"]))
    return unflatten_dict(out, SEP)


@jax.jit
def _unbiased_batch_statistics(params, x):
    """norm path -> (batch mean, unbiased batch variance) of ResNet-18 in training mode."""
    _, _, stats = _forward(_RESNET18, params, x, batch_stats=True)
    return {path: (mean, var * count / max(count - 1, 1)) for path, (mean, var, count) in stats.items()}
