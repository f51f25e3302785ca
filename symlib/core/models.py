"""Multilayer perceptrons as plain pytrees (the contract every symlib tool reads).

Parameters of an MLP with layer sizes ``[d_0, d_1, ..., d_L]`` are a dict

    {"dense_0": {"kernel": (d_0, d_1), "bias": (d_1,)},
     ...
     "dense_{L-1}": {"kernel": (d_{L-1}, d_L), "bias": (d_L,)}}

so ``h_{l+1} = relu(h_l @ kernel_l + bias_l)`` (no ReLU after the last layer). The
kernel is stored input-major, as in Flax; the paper's ``W_l`` is ``kernel_l.T``.
A leading batch axis on every leaf (a stack of networks, HMC samples) is allowed by
the tools that say so; ``mlp_apply`` itself takes one network (``jax.vmap`` it).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import mlp_layer_names

Params = dict[str, dict[str, jax.Array]]


def layer_names(num_layers: int) -> list[str]:
    """Names of the dense layers, input to output.

    Args:
        num_layers: number of dense layers ``L``.

    Returns:
        ``["dense_0", ..., "dense_{L-1}"]``.
    """
    return [f"dense_{i}" for i in range(num_layers)]


def check_sizes(sizes: Sequence[int], name: str = "sizes") -> list[int]:
    """Layer widths ``[d_0, ..., d_L]`` of an MLP as Python ints, after checking them.

    Args:
        sizes: the widths, input first, output last (anything ``int()`` accepts).
        name: how the message calls ``sizes``.

    Returns:
        The widths as a list of ``int``.

    Raises:
        ValueError: naming ``name`` unless there are at least two widths, all positive.
    """
    try:
        out = [int(s) for s in sizes]
    except (TypeError, ValueError):
        out = []
    if len(out) < 2 or any(s < 1 for s in out):
        raise ValueError(f"{name} must list at least two positive layer widths, got {sizes}")
    return out


def check_mlp_params(params: Any, name: str = "params", batch_dims: int = 0) -> list[int]:
    """Check that ``params`` is an MLP (the layout of this module) with consistent shapes.

    Args:
        params: the parameters to check.
        name: how messages call ``params``.
        batch_dims: number of leading axes shared by every leaf (1 for a stack of networks).

    Returns:
        The layer sizes ``[d_0, ..., d_L]``.

    Raises:
        TypeError: if ``params`` (or a layer) is not a dict.
        ValueError: naming the layer if the layers are not ``dense_0..dense_{L-1}`` with
            ``kernel`` and ``bias``, a leaf has the wrong number of axes, the shapes of
            consecutive layers do not chain, or the leading ``batch_dims`` axes differ.
    """
    names = mlp_layer_names(params, name)
    lead = None
    sizes: list[int] = []
    for n in names:
        kernel, bias = np.shape(params[n]["kernel"]), np.shape(params[n]["bias"])
        if len(kernel) != 2 + batch_dims or len(bias) != 1 + batch_dims:
            raise ValueError(f"{name}[{n!r}] must hold a kernel with {2 + batch_dims} axes and a bias with "
                             f"{1 + batch_dims} (batch_dims={batch_dims}), got shapes {kernel} and {bias}")
        lead = kernel[:batch_dims] if lead is None else lead
        if kernel[:batch_dims] != lead or bias[:batch_dims] != lead:
            raise ValueError(f"{name}[{n!r}]: the leading {batch_dims} axes of every leaf must agree, "
                             f"got {kernel[:batch_dims]} and {bias[:batch_dims]} (expected {lead})")
        d_in, d_out = kernel[batch_dims:]
        if sizes and d_in != sizes[-1]:
            raise ValueError(f"{name}[{n!r}]['kernel'] has {d_in} inputs but the layer before has {sizes[-1]} outputs")
        if bias[batch_dims:] != (d_out,):
            raise ValueError(f"{name}[{n!r}]['bias'] must have {d_out} entries like the kernel's outputs, "
                             f"got shape {bias}")
        sizes = sizes or [d_in]
        sizes.append(d_out)
    return sizes


def mlp_init(key: jax.Array, sizes: Sequence[int]) -> Params:
    """He-normal kernels and zero biases for a ReLU MLP with layer sizes ``sizes``.

    Args:
        key: ``jax.random`` key; split into one key per layer.
        sizes: layer widths ``[d_0, ..., d_L]``, at least two, all positive.

    Returns:
        float32 parameters ``{"dense_l": {"kernel": (d_l, d_{l+1}), "bias": (d_{l+1},)}}``.

    Raises:
        ValueError: if ``sizes`` has fewer than two widths or a width below 1.
    """
    sizes = check_sizes(sizes)
    keys = jax.random.split(key, len(sizes) - 1)
    params = {}
    for name, k, d_in, d_out in zip(layer_names(len(sizes) - 1), keys, sizes[:-1], sizes[1:]):
        std = jnp.sqrt(2.0 / d_in)
        params[name] = {  # drawn flat, then shaped: the same numbers, compiled faster (cnn.uniform_init)
            "kernel": std * jax.random.normal(k, (d_in * d_out,), jnp.float32).reshape(d_in, d_out),
            "bias": jnp.zeros((d_out,), jnp.float32),
        }
    return params


def unstack(params, dtype=None) -> list[dict]:
    """Split a stack of networks (leading axis on every leaf) into a list of networks.

    Args:
        params: a pytree whose leaves all share a leading (network) axis.
        dtype: cast every leaf to this dtype if given, e.g. ``np.float64`` for
            :mod:`symlib.symmetry.scaling`.

    Returns:
        One pytree per network, with numpy leaves.

    Raises:
        ValueError: if a leaf has no leading axis or the leaves disagree on its length.
    """
    leaves = jax.tree_util.tree_leaves(params)
    if not leaves or any(np.ndim(a) == 0 for a in leaves):
        raise ValueError("unstack needs a stack of networks: every leaf with a leading axis")
    n = {np.shape(a)[0] for a in leaves}
    if len(n) != 1:
        raise ValueError(f"leaves disagree on the number of networks: leading axes {sorted(n)}")
    return [jax.tree_util.tree_map(lambda a: np.asarray(a[i], dtype=dtype), params) for i in range(n.pop())]


def mlp_sizes(params: Params) -> list[int]:
    """Layer sizes ``[d_0, ..., d_L]`` read off the parameters.

    Args:
        params: MLP parameters (a stack of networks works too: the sizes are read off the
            last two axes of every kernel).

    Returns:
        The widths, input first.

    Raises:
        TypeError: if ``params`` is not a dict of layers.
        ValueError: if the layers are not ``dense_0..dense_{L-1}`` holding ``kernel`` and ``bias``.
    """
    names = mlp_layer_names(params)
    return [params[names[0]]["kernel"].shape[-2]] + [params[n]["kernel"].shape[-1] for n in names]


def _one_mlp(params: Params) -> list[str]:
    """The layer names of one MLP (:func:`~symlib.core.checks.mlp_layer_names`), after checking
    that its kernels are 2-D and its biases 1-D: a stack of networks would broadcast against
    the examples (network ``i``'s bias added to example ``i``) instead of failing."""
    names = mlp_layer_names(params)
    for name in names:
        k, b = np.ndim(params[name]["kernel"]), np.ndim(params[name]["bias"])
        if (k, b) != (2, 1):
            raise ValueError(f"params[{name!r}] has a {k}-D kernel and a {b}-D bias; one network's are 2-D and "
                             "1-D (for a stack of networks, jax.vmap the function over its leading axis)")
    return names


def mlp_hidden(params: Params, x: jax.Array) -> list[jax.Array]:
    """Post-ReLU activations of every hidden layer.

    Args:
        params: one network's parameters.
        x: inputs of shape ``(n, d_0)``.

    Returns:
        ``L - 1`` arrays, the ``l``-th of shape ``(n, d_{l+1})``.

    Raises:
        TypeError: if ``params`` is not a dict of layers.
        ValueError: if the layers are not ``dense_0..dense_{L-1}`` holding ``kernel`` and ``bias``,
            or the kernels are not 2-D and the biases 1-D (a stack of networks).
    """
    names = _one_mlp(params)
    h, hidden = x, []
    for name in names[:-1]:
        h = jax.nn.relu(h @ params[name]["kernel"] + params[name]["bias"])
        hidden.append(h)
    return hidden


def mlp_apply(params: Params, x: jax.Array) -> jax.Array:
    """Logits of the MLP (ReLU after every layer but the last).

    Args:
        params: one network's parameters (``jax.vmap`` this function for a stack).
        x: inputs of shape ``(n, d_0)``.

    Returns:
        Logits of shape ``(n, d_L)``.

    Raises:
        TypeError: if ``params`` is not a dict of layers.
        ValueError: if the layers are not ``dense_0..dense_{L-1}`` holding ``kernel`` and ``bias``,
            or the kernels are not 2-D and the biases 1-D (a stack of networks).
    """
    names = _one_mlp(params)
    h = x
    for name in names[:-1]:
        h = jax.nn.relu(h @ params[name]["kernel"] + params[name]["bias"])
    last = params[names[-1]]
    return h @ last["kernel"] + last["bias"]


# ----------------------------------------------------------------------------- layout checks
# A model may register a check of its parameters against the inputs' shape, which names
# the layer or the input width where calling the model would only fail deep inside JAX.
# The library's data checks look the check up by ``apply_fn`` (``jax.eval_shape`` serves
# every model without one); symlib's MLP registers :func:`check_mlp_layout` below.

LayoutCheck = Callable[[Any, tuple, str, int], int]
_LAYOUT_CHECKS: dict[Callable, LayoutCheck] = {}


def register_layout_check(apply_fn: Callable, check: LayoutCheck) -> None:
    """Register ``check`` as the layout check of the model ``apply_fn``.

    Args:
        apply_fn: the model, ``apply_fn(params, x) -> logits`` (looked up by identity).
        check: ``check(params, example_shape, name, batch_dims) -> classes``; raises
            ``ValueError`` (or ``TypeError``) naming ``name``, the layer or ``x`` unless
            ``params``, with ``batch_dims`` leading network axes, take examples of shape
            ``example_shape``; returns the number of logits. It reads shapes only, so it
            also runs on traced parameters.

    Raises:
        TypeError: if either argument is not callable.
    """
    if not callable(apply_fn) or not callable(check):
        raise TypeError(f"register_layout_check takes two callables, got {type(apply_fn).__name__} and "
                        f"{type(check).__name__}")
    _LAYOUT_CHECKS[apply_fn] = check


def layout_check(apply_fn: Callable | None) -> LayoutCheck | None:
    """The layout check registered for ``apply_fn`` (see :func:`register_layout_check`), or ``None``."""
    try:
        return _LAYOUT_CHECKS.get(apply_fn)
    except TypeError:  # an unhashable callable has none
        return None


def check_mlp_layout(params: Any, example_shape: tuple, name: str = "params", batch_dims: int = 0) -> int:
    """The layout check of :func:`mlp_apply`: ``params`` an MLP taking examples of ``example_shape``.

    Args:
        params: the parameters (``batch_dims`` leading network axes on every leaf).
        example_shape: the shape of one example, ``(d_0,)`` for this MLP.
        name: how messages call ``params``.
        batch_dims: number of leading network axes.

    Returns:
        The number of classes ``d_L``.

    Raises:
        TypeError, ValueError: as :func:`check_mlp_params`; ``ValueError`` naming ``x`` if
            its examples are not vectors of the network's input width.
    """
    sizes = check_mlp_params(params, name, batch_dims)
    example_shape = tuple(example_shape)
    if len(example_shape) != 1:
        raise ValueError(f"the MLP takes x of shape (n, features), got examples of shape {example_shape}: "
                         f"x must have shape (n, {sizes[0]})")
    if example_shape[0] != sizes[0]:
        raise ValueError(f"x has {example_shape[0]} features but the network's input width is {sizes[0]}")
    return sizes[-1]


register_layout_check(mlp_apply, check_mlp_layout)
