"""Convolutional networks as plain pytrees: Laurent et al.'s OptuNet.

Images are ``(n, height, width, channels)`` (NHWC). Convolution kernels are stored
``(kernel_height, kernel_width, in_channels // groups, out_channels)`` (HWIO, the layout of
Flax and of ``jax.lax.conv_general_dilated``); dense kernels input-major, as for the MLP of
:mod:`symlib.core.models`. Every apply function takes one network (``jax.vmap`` it for a
stack) and checks the parameters against the architecture's layout, naming the first
parameter that does not fit.

**OptuNet** (Laurent, Aldea & Franchi, ICLR 2024; the authors' ``optumnist-v1.py``)::

    conv_0   1 -> 2 channels, kernel 4, no bias, VALID      (4, 4, 1, 2)     32
    ReLU, max-pool 3 stride 3
    conv_1   2 -> 10 channels, kernel 5, 2 groups, no bias  (5, 5, 1, 10)   250
    ReLU, global average pool
    dense_0  10 -> 3, bias, ReLU                             (10, 3) + (3,)   33
    dense_1  3 -> 10, bias (logits)                          (3, 10) + (10,)  40

355 parameters in all (the paper's text says 392; the code defines 355). In ``conv_1``
output channels 0-4 read input channel 0 and channels 5-9 read input channel 1 (the
``feature_group_count`` convention of XLA and PyTorch's ``groups``). A 28x28 MNIST image
becomes 25x25 after ``conv_0``, 8x8 after the pool and 4x4 after ``conv_1``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite, warn_raw_images
from symlib.core.pytree import SEP, flatten_dict

__all__ = [
    "CONV_IMPLS",
    "OPTUNET_CONVS",
    "OPTUNET_SHAPES",
    "as_images",
    "check_layout",
    "conv2d",
    "global_avg_pool",
    "max_pool",
    "optunet_apply",
    "optunet_hidden",
    "optunet_init",
]

#: parameter path -> shape of one OptuNet (355 parameters)
OPTUNET_SHAPES: dict[str, tuple[int, ...]] = {
    "conv_0/kernel": (4, 4, 1, 2),
    "conv_1/kernel": (5, 5, 1, 10),
    "dense_0/kernel": (10, 3),
    "dense_0/bias": (3,),
    "dense_1/kernel": (3, 10),
    "dense_1/bias": (10,),
}
OPTUNET_GROUPS = 2


def _flat(params: Mapping, name: str) -> dict:
    if not isinstance(params, Mapping):
        raise TypeError(f"{name} must be a dict of layers, got {type(params).__name__}")
    return flatten_dict(params, SEP)


def check_layout(params: Mapping, shapes: Mapping[str, tuple[int, ...]], arch: str, name: str = "params",
                 batch_dims: int = 0) -> None:
    """Raise naming the parameter when ``params`` does not have exactly the layout ``shapes``.

    Args:
        params: nested dict of arrays (``{"conv_0": {"kernel": ...}}``).
        shapes: parameter path (``"conv_0/kernel"``) -> expected shape of one network.
        arch: the architecture's name, for the message.
        name: the argument's name, for the message.
        batch_dims: leading axes allowed on every leaf (a stack of networks).

    Raises:
        TypeError: if ``params`` is not a dict of layers.
        ValueError: for a missing or unexpected parameter, or one of the wrong shape.
    """
    flat = _flat(params, name)
    missing = [p for p in shapes if p not in flat]
    if missing:
        raise ValueError(f"{name} is missing parameter(s) {missing} of {arch}")
    extra = [p for p in flat if p not in shapes]
    if extra:
        raise ValueError(f"{name} has parameter(s) {extra} that {arch} does not have")
    for path, want in shapes.items():
        got = tuple(np.shape(flat[path]))
        if len(got) != batch_dims + len(want) or got[batch_dims:] != tuple(want):
            lead = f" after {batch_dims} batch axes" if batch_dims else ""
            raise ValueError(f"{name} parameter {path!r} of {arch} has shape {got}; expected {tuple(want)}{lead}")


def as_images(x, height: int = 28, width: int = 28, channels: int = 1) -> jax.Array:
    """Flat image vectors ``(n, height * width * channels)`` -> images ``(n, height, width, channels)``.

    Args:
        x: flat (row-major, channels last) vectors, or images already of the wanted shape.
        height, width, channels: the image shape.

    Returns:
        ``x`` reshaped to NHWC.

    Raises:
        ValueError: if ``x`` has neither shape.
    """
    shape = tuple(np.shape(x))
    if len(shape) == 4 and shape[1:] == (height, width, channels):
        return jnp.asarray(x)
    if len(shape) != 2 or shape[1] != height * width * channels:
        raise ValueError(f"x has shape {shape}; expected (n, {height * width * channels}) vectors or "
                         f"(n, {height}, {width}, {channels}) images")
    return jnp.reshape(jnp.asarray(x), (shape[0], height, width, channels))


#: implementations of :func:`conv2d`
CONV_IMPLS = ("xla", "patches", "taps")


def conv2d(x: jax.Array, kernel: jax.Array, stride: int = 1, padding="VALID", groups: int = 1,
           impl: str = "xla") -> jax.Array:
    """2-D convolution of NHWC images with an HWIO kernel (cross-correlation, as in every DL library).

    Args:
        x: images ``(n, h, w, c_in)``.
        kernel: ``(kh, kw, c_in // groups, c_out)``.
        stride: the same stride along both axes.
        padding: ``"VALID"``, ``"SAME"`` or explicit ``((top, bottom), (left, right))``.
        groups: feature groups: output channel ``o`` reads input channels of group
            ``o // (c_out // groups)`` only.
        impl: ``"xla"`` (``jax.lax.conv_general_dilated``, the default; what
            :mod:`symlib.symmetry.derive` traces), ``"patches"`` (the same convolution as
            ``kh * kw`` shifted slices stacked into one ``(n, h', w', kh * kw, c_in)`` array
            and one matrix product) or ``"taps"`` (the sum over the ``kh * kw`` taps of a
            shifted slice times that tap's ``(c_in, c_out)`` matrix, group by group: no
            stacked array); the last two take ``"VALID"`` padding and stride 1 only. On a
            CPU, XLA's convolution is slow for the tiny, many-network (``vmap``)
            convolutions of OptuNet: :func:`optunet_hidden` computes its first convolution
            (1 input channel, 2 outputs) with ``"taps"`` and its second (two groups of
            five outputs) with ``"patches"``, the fastest of the three for each
            (``benchmarks/bench_train_many.py --convs``). The three agree to float32
            rounding.

    Returns:
        ``(n, h', w', c_out)``.

    Raises:
        ValueError: for an unknown ``impl``, or ``"patches"`` with other padding or stride.
    """
    if impl == "xla":
        # XLA's convolution takes one dtype; promote as the matrix products of the other impls do
        dtype = jnp.result_type(x, kernel)
        x, kernel = jnp.asarray(x, dtype), jnp.asarray(kernel, dtype)
        return jax.lax.conv_general_dilated(x, kernel, (stride, stride), padding,
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=groups)
    if impl not in CONV_IMPLS:
        raise ValueError(f"impl must be one of {CONV_IMPLS}, got {impl!r}")
    if stride != 1 or padding != "VALID":
        raise ValueError(f"impl={impl!r} takes stride 1 and padding 'VALID', got stride {stride}, padding {padding!r}")
    kh, kw, c_group, c_out = kernel.shape
    n, h, w, _ = x.shape
    rows, cols = h - kh + 1, w - kw + 1
    if impl == "taps":
        per = c_out // groups
        out = [sum(x[:, i:i + rows, j:j + cols, g * c_group:(g + 1) * c_group] @ kernel[i, j, :, g * per:(g + 1) * per]
                   for i in range(kh) for j in range(kw)) for g in range(groups)]
        return out[0] if groups == 1 else jnp.concatenate(out, axis=-1)
    # (n, rows, cols, kh * kw, c_in): the window of every output pixel, tap by tap
    taps = jnp.stack([x[:, i:i + rows, j:j + cols, :] for i in range(kh) for j in range(kw)], axis=3)
    taps = taps.reshape(n, rows, cols, kh * kw, groups, c_group)
    k = kernel.reshape(kh * kw, c_group, groups, c_out // groups)
    return jnp.einsum("nhwtgc,tcgo->nhwgo", taps, k).reshape(n, rows, cols, c_out)


def max_pool(x: jax.Array, size: int, stride: int) -> jax.Array:
    """Max-pooling of NHWC images over ``size x size`` windows (no padding, floor)."""
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, size, size, 1), (1, stride, stride, 1), "VALID")


def global_avg_pool(x: jax.Array) -> jax.Array:
    """Mean over the spatial axes: ``(n, h, w, c) -> (n, c)``."""
    return jnp.mean(x, axis=(1, 2))


def uniform_init(key, shape, fan_in: int) -> jax.Array:
    """float32 draws from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (PyTorch's default initialisation)."""
    bound = 1.0 / np.sqrt(fan_in)
    # drawn flat, then shaped: the same numbers (threefry counts the elements in row-major
    # order either way), and XLA compiles a flat draw several times faster than a 4-D one
    return jax.random.uniform(key, (math.prod(shape),), jnp.float32, -bound, bound).reshape(shape)


@jax.jit  # one program: under vmap, op by op takes about a second more to compile (same numbers)
def optunet_init(key: jax.Array) -> dict:
    """Initial OptuNet parameters, PyTorch's default initialisation (as in the authors' code).

    Every kernel and bias is drawn from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (what
    ``kaiming_uniform_(a=sqrt(5))`` gives), ``fan_in`` the inputs of one output unit
    (``in_channels // groups * kernel area`` for convolutions).

    Args:
        key: a ``jax.random`` key.

    Returns:
        float32 parameters in the layout of :data:`OPTUNET_SHAPES` (nested by layer).
    """
    keys = jax.random.split(key, len(OPTUNET_SHAPES))
    flat = {}
    for k, (path, shape) in zip(keys, OPTUNET_SHAPES.items()):
        layer = path.split("/")[0]
        kshape = OPTUNET_SHAPES[f"{layer}/kernel"]
        fan_in = int(np.prod(kshape[:-1]))
        flat[path] = uniform_init(k, shape, fan_in)
    out: dict = {}
    for path, value in flat.items():
        layer, leaf = path.split("/")
        out.setdefault(layer, {})[leaf] = value
    return out


def check_images(x, channels: int, min_size: int, arch: str) -> None:
    """Raise unless ``x`` is a batch of finite ``(n, h, w, channels)`` images of at least ``min_size`` pixels a side."""
    shape = tuple(np.shape(x))
    if len(shape) != 4 or shape[-1] != channels:
        raise ValueError(f"x has shape {shape}; {arch} takes images (n, height, width, {channels}) "
                         f"(flat vectors: symlib.core.cnn.as_images)")
    if min(shape[1:3]) < min_size:
        raise ValueError(f"x has images of {shape[1]}x{shape[2]} pixels; {arch} needs at least {min_size}x{min_size}")
    if not isinstance(x, jax.core.Tracer):
        check_finite(x, "x")
        warn_raw_images(x)


#: :func:`conv2d`'s implementation of OptuNet's two convolutions, the fastest of each on a CPU
OPTUNET_CONVS = ("taps", "patches")


def optunet_hidden(params: Mapping, x: jax.Array, conv: str | tuple[str, str] = OPTUNET_CONVS) -> dict[str, jax.Array]:
    """Post-ReLU activations of OptuNet's hidden units.

    Args:
        params: one OptuNet (:func:`optunet_init` layout).
        x: images ``(n, h, w, 1)``, at least 18x18 (MNIST: 28x28; smaller leaves no pixel after the second convolution).
        conv: :func:`conv2d`'s ``impl`` for both convolutions, or a pair (first, second).
            The default, :data:`OPTUNET_CONVS`, trains fastest on a CPU; ``"xla"`` (one
            ``conv_general_dilated`` each) is what to pass to trace OptuNet with
            :mod:`symlib.symmetry.derive`.

    Returns:
        ``{"conv_0": (n, h-3, w-3, 2)`` (before the pool), ``"conv_1": (n, h', w', 10)``,
        ``"dense_0": (n, 3)}``.

    Raises:
        ValueError: naming the parameter that does not fit OptuNet, or for images of
            the wrong shape or with nan/inf.
    """
    check_layout(params, OPTUNET_SHAPES, "OptuNet")
    check_images(x, 1, 18, "OptuNet")
    first, second = (conv, conv) if isinstance(conv, str) else conv
    h0 = jax.nn.relu(conv2d(x, params["conv_0"]["kernel"], impl=first))
    h1 = jax.nn.relu(conv2d(max_pool(h0, 3, 3), params["conv_1"]["kernel"], groups=OPTUNET_GROUPS, impl=second))
    h2 = jax.nn.relu(global_avg_pool(h1) @ params["dense_0"]["kernel"] + params["dense_0"]["bias"])
    return {"conv_0": h0, "conv_1": h1, "dense_0": h2}


def optunet_apply(params: Mapping, x: jax.Array, conv: str | tuple[str, str] = OPTUNET_CONVS) -> jax.Array:
    """OptuNet's logits.

    Args:
        params: one OptuNet (:func:`optunet_init` layout); ``jax.vmap`` for a stack.
        x: images ``(n, h, w, 1)``, at least 18x18 (MNIST: 28x28; smaller leaves no pixel after the second convolution).
        conv: as for :func:`optunet_hidden` (``"xla"`` to trace it with :mod:`symlib.symmetry.derive`).

    Returns:
        Logits ``(n, 10)``.

    Raises:
        ValueError: as for :func:`optunet_hidden`.
    """
    h = optunet_hidden(params, x, conv)["dense_0"]
    return h @ params["dense_1"]["kernel"] + params["dense_1"]["bias"]
