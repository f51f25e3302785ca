"""Canonical forms that depend only on the function, not on the parameter dict's key order.

Any ``jax.tree_util.tree_map`` or optax update returns dicts with sorted keys, and a user's
layers need not be named in forward order (``proj``, ``hidden``, ``logits``). A derived spec
orders and names its permutations and scaling groups by the traced computation, so the spec
of a network, of the same network with its keys shuffled at every depth, and of its
``tree_map`` copy are the same; and the identifiable form (scaling removed, units sorted)
of a network and of a permuted, rescaled copy of it agree (issue 45, item 1).
"""
from __future__ import annotations

from collections.abc import Mapping

import flax.linen as nn
import jax
import numpy as np
import pytest

from symlib.symmetry import (
    apply_permutation,
    apply_scaling,
    check_scaling_spec,
    flatten_params,
    permutation_spec_from_flax,
    random_permutations,
    scaling_spec_from_flax,
)
from symlib.symmetry import identifiable

from test_derive_specs import RELU_ZOO, ZOO  # the zoo of flax.linen models


class Backwards(nn.Module):
    """An MLP whose layer names sort against the forward order (``proj`` > ``logits`` > ``hidden``)."""

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(5, name="proj")(x))
        x = nn.relu(nn.Dense(4, name="hidden")(x))
        return nn.Dense(3, name="logits")(x)


class BackwardsBN(nn.Module):
    """Conv -> BatchNorm -> ReLU twice, the names sorting against the forward order."""

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.BatchNorm(use_running_average=True, name="z_bn")(nn.Conv(4, (3, 3), name="z_stem")(x)))
        x = nn.relu(nn.BatchNorm(use_running_average=True, name="a_bn")(nn.Conv(5, (3, 3), name="a_body")(x)))
        return nn.Dense(3, name="m_head")(x.mean(axis=(1, 2)))


MODELS = {**{k: (v[0], v[1]) for k, v in ZOO.items()},
          "backwards": (Backwards(), ZOO["mlp1"][1]), "backwards_bn": (BackwardsBN(), ZOO["pool_cnn"][1])}
RELU = [*RELU_ZOO, "backwards", "backwards_bn"]


def _leaves(tree, fn):
    """``fn`` on every leaf, the dicts' key order kept (``jax.tree_util.tree_map`` would sort it)."""
    return {k: _leaves(v, fn) for k, v in tree.items()} if isinstance(tree, Mapping) else fn(tree)


def _init(module, x):
    """The variables in the order flax builds them (the modules' creation order), as numpy."""
    v = module.init({"params": jax.random.key(3), "dropout": jax.random.key(4)}, x)
    return _leaves(dict(v), np.asarray)


def shuffled(tree, rng):
    """``tree`` with the keys of every dict in a random order (the same leaves)."""
    if isinstance(tree, Mapping):
        keys = list(tree)
        rng.shuffle(keys)
        return {k: shuffled(tree[k], rng) for k in keys}
    return tree


def _variants(variables):
    """The variables as built, with keys shuffled at every depth (two seeds), and after a tree_map."""
    return [variables, shuffled(variables, np.random.default_rng(0)), shuffled(variables, np.random.default_rng(1)),
            jax.tree_util.tree_map(lambda a: a, variables)]


def _perm_signature(spec):
    return [(n, tuple(spec.perm_to_axes[n])) for n in spec.perm_names], dict(spec.blocks)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_derived_permutation_spec_ignores_key_order(name):
    model, x = MODELS[name]
    variables = _init(model, x)
    signatures = [_perm_signature(permutation_spec_from_flax(model, v, x)) for v in _variants(variables)]
    assert all(s == signatures[0] for s in signatures[1:]), signatures


@pytest.mark.parametrize("name", RELU)
def test_derived_scaling_spec_ignores_key_order(name):
    model, x = MODELS[name]
    specs = [scaling_spec_from_flax(model, v, x) for v in _variants(_init(model, x))]
    groups = [[(g, tuple(e)) for g, e in s.groups.items()] for s in specs]
    assert all(g == groups[0] for g in groups[1:]), groups
    assert all(s.mass_paths == specs[0].mass_paths for s in specs)


def test_names_follow_the_forward_order():
    model, x = MODELS["backwards"]
    spec = permutation_spec_from_flax(model, jax.tree_util.tree_map(lambda a: a, _init(model, x)["params"]), x)
    assert spec.perm_names == ["P_proj", "P_hidden"]
    variables = jax.tree_util.tree_map(lambda a: a, _init(*MODELS["backwards_bn"]))
    spec = permutation_spec_from_flax(MODELS["backwards_bn"][0], variables, MODELS["backwards_bn"][1])
    assert spec.perm_names == ["P_params/z_stem", "P_params/a_body"]  # the convolutions, not the statistics




@pytest.mark.parametrize("scaling", ["unit_norm", "min_mass"])
@pytest.mark.parametrize("name", RELU)
def test_identifiable_form_of_a_permuted_rescaled_copy_is_the_same(name, scaling):
    """identifiable(A) == identifiable(permuted and rescaled A), each with the spec derived from
    its own dict (A as built; the copy with its keys shuffled after a tree_map)."""
    model, x = MODELS[name]
    params = _leaves(_init(model, x), lambda a: np.asarray(a, np.float64))  # the whole variables dict
    pspec, sspec = permutation_spec_from_flax(model, params, x), scaling_spec_from_flax(model, params, x)
    sizes = check_scaling_spec(sspec, params)
    rng = np.random.default_rng(3)
    copy = apply_scaling(sspec, params, {g: np.exp(rng.uniform(-1, 1, n)) for g, n in sizes.items()})
    copy = apply_permutation(pspec, random_permutations(4, pspec, copy), copy)
    copy = shuffled(jax.tree_util.tree_map(lambda a: a, copy), np.random.default_rng(5))
    pspec_b, sspec_b = permutation_spec_from_flax(model, copy, x), scaling_spec_from_flax(model, copy, x)
    a = flatten_params(identifiable(sspec, pspec, params, scaling=scaling))
    b = flatten_params(identifiable(sspec_b, pspec_b, copy, scaling=scaling))
    tol = 1e-6 if scaling == "unit_norm" else 1e-4  # min-mass: an iterative solve, to its tolerance
    for path in a:
        np.testing.assert_allclose(np.asarray(b[path]), np.asarray(a[path]), rtol=tol, atol=tol, err_msg=path)
