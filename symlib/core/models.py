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

from collections.abc import Sequence

import jax
import jax.numpy as jnp

Params = dict[str, dict[str, jax.Array]]


def layer_names(num_layers: int) -> list[str]:
    """Names of the dense layers, input to output."""
    return [f"dense_{i}" for i in range(num_layers)]


def mlp_init(key: jax.Array, sizes: Sequence[int]) -> Params:
    """He-normal kernels and zero biases for a ReLU MLP with layer sizes ``sizes``."""
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2 or any(s < 1 for s in sizes):
        raise ValueError(f"sizes must list at least two positive layer widths, got {sizes}")
    keys = jax.random.split(key, len(sizes) - 1)
    params = {}
    for name, k, d_in, d_out in zip(layer_names(len(sizes) - 1), keys, sizes[:-1], sizes[1:]):
        std = jnp.sqrt(2.0 / d_in)
        params[name] = {
            "kernel": std * jax.random.normal(k, (d_in, d_out), jnp.float32),
            "bias": jnp.zeros((d_out,), jnp.float32),
        }
    return params


def unstack(params, dtype=None) -> list[dict]:
    """Split a stack of networks (leading axis on every leaf) into a list of networks
    with numpy leaves (cast to ``dtype`` if given, e.g. ``np.float64`` for
    :mod:`symlib.symmetry.scaling`)."""
    import numpy as np

    leaves = jax.tree_util.tree_leaves(params)
    if not leaves or any(np.ndim(a) == 0 for a in leaves):
        raise ValueError("unstack needs a stack of networks: every leaf with a leading axis")
    n = {np.shape(a)[0] for a in leaves}
    if len(n) != 1:
        raise ValueError(f"leaves disagree on the number of networks: leading axes {sorted(n)}")
    return [jax.tree_util.tree_map(lambda a: np.asarray(a[i], dtype=dtype), params) for i in range(n.pop())]


def mlp_sizes(params: Params) -> list[int]:
    """Layer sizes ``[d_0, ..., d_L]`` read off the parameters (one network)."""
    names = _sorted_layers(params)
    return [params[names[0]]["kernel"].shape[-2]] + [params[n]["kernel"].shape[-1] for n in names]


def mlp_hidden(params: Params, x: jax.Array) -> list[jax.Array]:
    """Post-ReLU activations of every hidden layer for inputs ``x`` of shape (n, d_0)."""
    names = _sorted_layers(params)
    h, hidden = x, []
    for name in names[:-1]:
        h = jax.nn.relu(h @ params[name]["kernel"] + params[name]["bias"])
        hidden.append(h)
    return hidden


def mlp_apply(params: Params, x: jax.Array) -> jax.Array:
    """Logits of the MLP for inputs ``x`` of shape (n, d_0); returns (n, d_L)."""
    names = _sorted_layers(params)
    h = x
    for name in names[:-1]:
        h = jax.nn.relu(h @ params[name]["kernel"] + params[name]["bias"])
    last = params[names[-1]]
    return h @ last["kernel"] + last["bias"]


def _sorted_layers(params: Params) -> list[str]:
    names = sorted(params, key=lambda n: int(n.rsplit("_", 1)[-1]))
    if names != layer_names(len(names)):
        raise ValueError(f"MLP params must have layers dense_0..dense_{len(names) - 1}, got {sorted(params)}")
    return names
