"""Specs derived from a model's jaxpr (symlib.symmetry.derive).

(a) For symlib's own MLP, OptuNet, ResNet20 and ResNet-18 the derived permutation and
scaling specs equal the hand-written ones (``tests/_spec_oracles.py`` for the convolutional
networks) as groups of (path, axis) at any width (names differ); and the specs that
:mod:`symlib.symmetry.architectures` derives and renames equal the oracles exactly, names,
entries and their order included.
(b) On a zoo of small flax.linen models: a random permutation drawn from the derived spec
leaves the outputs unchanged (and the updated batch statistics permuted), so does a
random positive scaling from the derived scaling spec (ReLU models), and weight matching
recovers a planted permutation exactly. (c) What cannot be analysed is refused by name.

Tolerance for "unchanged": float32 outputs within ``atol = rtol = 1e-5`` (ReLU, pooling
and sums only reorder the same float operations; the norms' reductions sum in another
order). Tiny models and 8x8 images keep the file fast.
"""
from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core.cnn import optunet_apply, optunet_init
from symlib.core.models import mlp_apply, mlp_init
from symlib.core.resnet import resnet18_apply, resnet18_init, resnet20_apply, resnet20_init
from symlib.symmetry import (
    apply_scaling,
    apply_permutation,
    check_scaling_spec,
    check_spec,
    check_spec_invariance,
    derive_report,
    flatten_params,
    mlp_permutation_spec,
    mlp_scaling_spec,
    optunet_permutation_spec,
    optunet_scaling_spec,
    permutation_spec_from_apply,
    permutation_spec_from_flax,
    random_permutations,
    resnet18_permutation_spec,
    resnet18_scaling_spec,
    resnet20_permutation_spec,
    resnet20_scaling_spec,
    scaling_spec_from_apply,
    scaling_spec_from_flax,
    weight_matching,
)
from symlib.symmetry import architectures
from symlib.symmetry.derive import UnsupportedOperationError, flax_derive_report
import _spec_oracles as oracles

TOL = dict(atol=1e-5, rtol=1e-5)


def perm_groups(spec):
    return {frozenset(v) for v in spec.perm_to_axes.values()}


def blocks_by_group(spec):
    return {frozenset(spec.perm_to_axes[n]): g for n, g in spec.blocks.items()}


def scale_groups(spec):
    return {frozenset(v) for v in spec.groups.values()}


# --- (a) symlib's own architectures ---------------------------------------------------------------


@pytest.mark.parametrize("hidden", [1, 2, 3])
def test_mlp_matches_hand_written(hidden):
    sizes = [3] + [4 + l for l in range(hidden)] + [2]
    p = mlp_init(jax.random.key(0), sizes)
    x = jnp.ones((2, 3))
    spec = permutation_spec_from_apply(mlp_apply, p, x)
    assert perm_groups(spec) == perm_groups(mlp_permutation_spec(hidden))
    assert set(spec.axes) == set(mlp_permutation_spec(hidden).axes)
    s = scaling_spec_from_apply(mlp_apply, p, x)
    assert scale_groups(s) == scale_groups(mlp_scaling_spec(hidden))
    assert set(s.mass_paths) == set(mlp_scaling_spec(hidden).mass_paths)


def test_optunet_matches_hand_written():
    p = optunet_init(jax.random.key(0))
    x = jnp.ones((2, 18, 18, 1))
    report = derive_report(partial(optunet_apply, conv="xla"), p, x)  # the tracer reads XLA's convolution
    hand = oracles.optunet_permutation_spec()
    assert perm_groups(report.spec) == perm_groups(hand)
    assert blocks_by_group(report.spec) == blocks_by_group(hand)  # conv_1 permuted within its 2 groups
    assert any("grouped convolution" in r for r in report.stopped[("conv_0/kernel", 3)])
    s = scaling_spec_from_apply(partial(optunet_apply, conv="xla"), p, x)
    assert scale_groups(s) == scale_groups(oracles.optunet_scaling_spec())
    assert set(s.mass_paths) == set(oracles.optunet_scaling_spec().mass_paths)


def test_resnet20_matches_hand_written():
    p = resnet20_init(jax.random.key(0), 1, 2, 1)
    x = jnp.ones((2, 4, 4, 1))
    spec = permutation_spec_from_apply(resnet20_apply, p, x)
    assert perm_groups(spec) == perm_groups(oracles.resnet20_permutation_spec())
    s = scaling_spec_from_apply(resnet20_apply, p, x)
    assert scale_groups(s) == scale_groups(oracles.resnet20_scaling_spec())
    assert set(s.mass_paths) == set(oracles.resnet20_scaling_spec().mass_paths)


def test_resnet18_matches_hand_written():
    p = resnet18_init(jax.random.key(0), 2, 1, 2)  # base width 2: no stage has a single channel
    x = jnp.ones((2, 8, 8, 1))
    spec = permutation_spec_from_apply(resnet18_apply, p, x)
    assert perm_groups(spec) == perm_groups(oracles.resnet18_permutation_spec())
    s = scaling_spec_from_apply(resnet18_apply, p, x)
    assert scale_groups(s) == scale_groups(oracles.resnet18_scaling_spec())
    assert set(s.mass_paths) == set(oracles.resnet18_scaling_spec().mass_paths)


@pytest.mark.parametrize("arch", ["optunet", "resnet20", "resnet18"])
def test_builtin_specs_are_the_oracles_exactly(arch):
    """The derived and renamed specs of symlib.symmetry.architectures are the hand-written ones:
    every name, every entry, in the same order (the order the tools iterate in)."""
    built_p, hand_p = (getattr(m, f"{arch}_permutation_spec")() for m in (architectures, oracles))
    assert list(built_p.axes.items()) == list(hand_p.axes.items())
    assert built_p.blocks == hand_p.blocks and list(built_p.perm_names) == list(hand_p.perm_names)
    assert (built_p.views, built_p.parts) == (hand_p.views, hand_p.parts)
    built_s, hand_s = (getattr(m, f"{arch}_scaling_spec")() for m in (architectures, oracles))
    assert list(built_s.groups.items()) == list(hand_s.groups.items())
    assert built_s.mass_paths == hand_s.mass_paths
    assert (built_s.views, built_s.parts) == (hand_s.views, hand_s.parts)


def test_builtin_specs_are_fresh_copies():
    """Changing a returned spec does not change the next one (the derivation is cached)."""
    spec = architectures.optunet_permutation_spec()
    spec.axes["conv_1/kernel"] = (None,) * 4
    assert architectures.optunet_permutation_spec().axes["conv_1/kernel"][-1] == "P_conv_1"


@pytest.mark.parametrize("arch", ["resnet20", "resnet18"])
def test_resnet_scaling_subset_is_the_oracles(arch):
    groups = ["P_stage_1", "P_stage_0_block_1"]
    built = getattr(architectures, f"{arch}_scaling_spec")(groups)
    hand = getattr(oracles, f"{arch}_scaling_spec")(groups)
    assert list(built.groups.items()) == list(hand.groups.items()) and built.mass_paths == hand.mass_paths


def test_derived_spec_is_a_symmetry_of_resnet18():
    p = resnet18_init(jax.random.key(1), 2, 1, 2)
    flat = flatten_params(p)
    # non-trivial running statistics, so that permuting them is checked too
    flat = {k: (v + 0.3 * jax.random.uniform(jax.random.key(len(k)), v.shape) if k.endswith(("mean", "var")) else v)
            for k, v in flat.items()}
    x = jax.random.normal(jax.random.key(2), (3, 8, 8, 1))
    flat = {k: np.asarray(v) for k, v in flat.items()}
    spec = permutation_spec_from_apply(resnet18_apply, flat, x)
    q = apply_permutation(spec, random_permutations(0, spec, flat), flat)
    out = _outputs(resnet18_apply, [flat, q], x)
    np.testing.assert_allclose(out[1], out[0], **TOL)


# --- (b) a zoo of flax.linen models ---------------------------------------------------------------


class MLP(nn.Module):
    widths: tuple = (5,)

    @nn.compact
    def __call__(self, x):
        for w in self.widths:
            x = nn.relu(nn.Dense(w)(x))
        return nn.Dense(3)(x)


class PoolCNN(nn.Module):
    """conv -> ReLU -> max-pool -> conv -> ReLU -> avg-pool -> flatten -> dense -> ReLU -> dense."""

    @nn.compact
    def __call__(self, x):
        x = nn.max_pool(nn.relu(nn.Conv(4, (3, 3))(x)), (2, 2), (2, 2))
        x = nn.avg_pool(nn.relu(nn.Conv(5, (3, 3))(x)), (2, 2), (2, 2))
        x = x.reshape(x.shape[0], -1)
        x = nn.relu(nn.Dense(6)(x))
        return nn.Dense(3)(x)


class ResLN(nn.Module):
    """Residual CNN with LayerNorm over the channels, global mean pool."""

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.LayerNorm()(nn.Conv(4, (3, 3), use_bias=False)(x)))
        for _ in range(2):
            r = nn.relu(nn.LayerNorm()(nn.Conv(6, (3, 3), use_bias=False)(h)))
            r = nn.LayerNorm()(nn.Conv(4, (3, 3), use_bias=False)(r))
            h = nn.relu(h + r)
        return nn.Dense(3)(h.mean(axis=(1, 2)))


class BNCNN(nn.Module):
    """Conv -> BatchNorm -> ReLU twice, dropout, global mean pool, dense."""

    @nn.compact
    def __call__(self, x, train: bool = False):
        for c in (4, 5):
            x = nn.Conv(c, (3, 3))(x)
            x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.5)(x))
        x = nn.Dropout(0.3, deterministic=not train)(x)
        return nn.Dense(3)(x.mean(axis=(1, 2)))


class DenseNetBlock(nn.Module):
    """DenseNet-style: each convolution reads the concatenation of the input and all earlier
    features (one of them twice), then LayerNorm over the channels and a mean pool."""

    @nn.compact
    def __call__(self, x):
        h1 = nn.relu(nn.Conv(3, (3, 3))(x))
        c1 = jnp.concatenate([x, h1], axis=-1)
        h2 = nn.relu(nn.Conv(4, (3, 3))(c1))
        c2 = jnp.concatenate([c1, h2, h2], axis=-1)
        return nn.Dense(2)(nn.LayerNorm()(c2).mean(axis=(1, 2)))


class Concat(nn.Module):
    """Two dense branches concatenated, then a dense layer."""

    @nn.compact
    def __call__(self, x):
        a = nn.relu(nn.Dense(4)(x))
        b = nn.relu(nn.Dense(3)(x))
        h = nn.relu(nn.Dense(5)(jnp.concatenate([a, b], axis=-1)))
        return nn.Dense(2)(h)


class TanhMLP(nn.Module):
    act: str = "tanh"

    @nn.compact
    def __call__(self, x):
        h = nn.Dense(4)(x)
        h = {"tanh": jnp.tanh, "gelu": nn.gelu, "sigmoid": nn.sigmoid}[self.act](h)
        return nn.Dense(2)(h)


class Attention(nn.Module):
    """Dense embedding, residual multi-head self-attention, LayerNorm, mean over positions."""

    @nn.compact
    def __call__(self, x):
        h = nn.Dense(8)(x)
        h = nn.LayerNorm()(h + nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8)(h))
        return nn.Dense(2)(h.mean(axis=1))


def _init(module, x, **kw):
    """Variables as numpy arrays (permuting them then needs no compilation)."""
    v = module.init({"params": jax.random.key(3), "dropout": jax.random.key(4)}, x, **kw)
    return jax.tree.map(np.asarray, dict(v))


def _outputs(apply, trees, *args):
    """``apply(tree, *args)`` for several trees of the same structure, in one compiled call."""
    stacked = jax.tree.map(lambda *leaves: np.stack(leaves), *trees)
    return jax.jit(jax.vmap(apply, in_axes=(0,) + (None,) * len(args)))(stacked, *args)


VEC = jax.random.normal(jax.random.key(5), (4, 6))
IMG = jax.random.normal(jax.random.key(6), (4, 8, 8, 2))

# model, input, expected number of permutations, expected number of scaling groups (None: not a ReLU model)
ZOO = {
    "mlp1": (MLP((5,)), VEC, 1, 1),
    "mlp2": (MLP((5, 4)), VEC, 2, 2),
    "mlp3": (MLP((5, 4, 6)), VEC, 3, 3),
    # the second convolution's channels are flattened into the dense rows: permuted and
    # rescaled in blocks (a view of the dense kernel)
    "pool_cnn": (PoolCNN(), IMG, 3, 3),
    "res_ln": (ResLN(), IMG, 3, 3),
    # each concatenated branch keeps its own permutation and scaling: the reading kernel is cut into parts
    "concat": (Concat(), VEC, 3, 3),
    # input, features and features twice concatenated along the channels, LayerNorm (no per-channel
    # scaling before it: only the norm's scale rescales), mean pool
    "dense_net": (DenseNetBlock(), IMG, 2, 1),
    # residual stream, heads (shared by query, key, value, out), query/key features, value features
    "attention": (Attention(), jax.random.normal(jax.random.key(7), (2, 5, 3)), 4, None),
}
RELU_ZOO = sorted(k for k, v in ZOO.items() if v[3] is not None)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_permutation_leaves_outputs_unchanged(name):
    model, x, n_perms, _ = ZOO[name]
    params = _init(model, x)["params"]
    spec = permutation_spec_from_flax(model, params, x)
    assert len(spec.perm_names) == n_perms
    trees = [{"params": params}] + [{"params": apply_permutation(spec, random_permutations(seed, spec, params), params)}
                                    for seed in range(3)]
    out = _outputs(model.apply, trees, x)
    for k in range(1, 4):
        np.testing.assert_allclose(out[k], out[0], **TOL)


@pytest.mark.parametrize("name", RELU_ZOO)
def test_zoo_scaling_leaves_outputs_unchanged(name):
    model, x, _, n_groups = ZOO[name]
    params = _init(model, x)["params"]
    spec = scaling_spec_from_flax(model, params, x)
    assert len(spec.groups) == n_groups
    sizes = check_scaling_spec(spec, params)
    rng = np.random.default_rng(0)
    scales = {g: np.exp(rng.uniform(-1, 1, n)) for g, n in sizes.items()}
    scaled = apply_scaling(spec, params, scales)
    out = _outputs(model.apply, [{"params": params}, {"params": scaled}], x)
    np.testing.assert_allclose(out[1], out[0], **TOL)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_weight_matching_recovers_planted_permutation(name):
    model, x, _, _ = ZOO[name]
    params = _init(model, x)["params"]
    spec = permutation_spec_from_flax(model, params, x)
    planted = random_permutations(7, spec, params)
    b = apply_permutation(spec, planted, params)
    res = weight_matching(0, spec, params, b)
    back = flatten_params(apply_permutation(spec, res.perms, b))
    for path, leaf in flatten_params(params).items():
        np.testing.assert_array_equal(np.asarray(back[path]), np.asarray(leaf), err_msg=path)


def test_flatten_permutes_the_dense_rows_in_blocks():
    """A flattened NHWC map of C channels: the dense kernel (H*W*C, out) is viewed as
    (H*W, C, out), so its row s*C + c moves with channel c at every position s."""
    model, x = PoolCNN(), IMG
    params = _init(model, x)["params"]
    report = flax_derive_report(model, params, x)
    spec = report.spec
    assert spec.views == {"Dense_0/kernel": (4, 5, 6)}  # 2 x 2 positions, 5 channels, 6 units
    assert spec.axes["Dense_0/kernel"] == (None, "P_Conv_1", "P_Dense_0")
    assert spec.axes["Conv_1/kernel"][3] == "P_Conv_1"
    assert ("Dense_0/kernel", 0) not in report.stopped
    perms = {n: np.arange(k) for n, k in check_spec(spec, params).items()}
    perms["P_Conv_1"] = np.array([2, 0, 4, 1, 3])
    moved = apply_permutation(spec, perms, params)["Dense_0"]["kernel"]
    rows = (np.arange(4)[:, None] * 5 + perms["P_Conv_1"][None, :]).reshape(-1)
    np.testing.assert_array_equal(np.asarray(moved), np.asarray(params["Dense_0"]["kernel"])[rows])


class ChannelsFirstFlatten(nn.Module):
    """A PyTorch-style flatten: NHWC -> NCHW, then flatten (row c*H*W + s)."""

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(3, (3, 3), strides=(2, 2))(x))
        x = x.transpose(0, 3, 1, 2).reshape(x.shape[0], -1)
        x = nn.relu(nn.Dense(4)(x))
        return nn.Dense(2)(x)


class FlattenAlsoReturned(nn.Module):
    """The flattened map is also a model output: its channels may not be permuted."""

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Conv(3, (3, 3), strides=(2, 2))(x)).reshape(x.shape[0], -1)
        return nn.Dense(2)(h), h


def test_channels_first_flatten_and_a_flatten_that_is_an_output():
    x = IMG
    model = ChannelsFirstFlatten()
    params = _init(model, x)["params"]
    spec = permutation_spec_from_flax(model, params, x)
    assert spec.views == {"Dense_0/kernel": (3, 16, 4)}  # channel slowest: (C, H*W, out)
    assert spec.axes["Dense_0/kernel"] == ("P_Conv_0", None, "P_Dense_0")
    trees = [{"params": params}] + [{"params": apply_permutation(spec, random_permutations(s, spec, params), params)}
                                    for s in range(3)]
    out = _outputs(model.apply, trees, x)
    for k in range(1, 4):
        np.testing.assert_allclose(out[k], out[0], **TOL)
    model = FlattenAlsoReturned()
    report = flax_derive_report(model, _init(model, x)["params"], x)
    assert report.spec.views == {}
    assert report.spec.axes["Conv_0/kernel"][3] is None
    assert any("model output" in r for r in report.stopped[("Conv_0/kernel", 3)])


def test_scaling_through_a_flatten():
    """Rescaling channel c of the flattened map divides the dense rows s*C + c at every
    position s: the derived scaling spec sees the dense kernel through the same view as the
    permutation spec, and the canonical forms work through it."""
    from symlib.symmetry import ScalingSpec, identifiable, min_mass

    x = IMG
    model = PoolCNN()
    params = _init(model, x)["params"]
    spec = scaling_spec_from_flax(model, params, x)
    assert spec.views == {"Dense_0/kernel": (4, 5, 6)}
    assert spec.groups["P_Conv_1"] == (("Conv_1/kernel", 3, 1), ("Conv_1/bias", 0, 1), ("Dense_0/kernel", 1, -1))  # forward order
    assert spec.groups["P_Dense_0"][-1] == ("Dense_1/kernel", 0, -1)
    assert ("Dense_0/kernel", 2, 1) in spec.groups["P_Dense_0"]
    hand = ScalingSpec(
        {"c0": (("Conv_0/kernel", 3, 1), ("Conv_0/bias", 0, 1), ("Conv_1/kernel", 2, -1)),
         "c1": (("Conv_1/kernel", 3, 1), ("Conv_1/bias", 0, 1), ("Dense_0/kernel", 1, -1)),
         "d0": (("Dense_0/kernel", 2, 1), ("Dense_0/bias", 0, 1), ("Dense_1/kernel", 0, -1))},
        ("Conv_0/kernel", "Conv_1/kernel", "Dense_0/kernel", "Dense_1/kernel"), views={"Dense_0/kernel": (4, 5, 6)})
    scales = {"P_Conv_1": np.array([0.5, 2.0, 3.0, 1.0, 0.25])}
    scales.update({g: np.ones(n) for g, n in check_scaling_spec(spec, params).items() if g not in scales})
    moved = apply_scaling(spec, params, scales)
    rows = np.tile(scales["P_Conv_1"], 4)  # row s*5 + c belongs to channel c
    np.testing.assert_allclose(np.asarray(moved["Dense_0"]["kernel"]),
                               np.asarray(params["Dense_0"]["kernel"]) / rows[:, None], rtol=1e-6)
    renamed = dict(zip(("c0", "c1", "d0"), (scales[g] for g in spec.groups)))
    for a, b in zip(jax.tree.leaves(moved), jax.tree.leaves(apply_scaling(hand, params, renamed))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    out = _outputs(model.apply, [{"params": params}, {"params": moved}], x)
    np.testing.assert_allclose(out[1], out[0], **TOL)
    # min-mass through the view: the same minimum from the network and from a rescaled copy
    rng = np.random.default_rng(1)
    disguised = apply_scaling(spec, params, {g: np.exp(rng.uniform(-1, 1, n))
                                                  for g, n in check_scaling_spec(spec, params).items()})
    a, b = min_mass(spec, params), min_mass(spec, disguised)
    assert a.solver == "dense" and a.converged and b.converged
    assert abs(a.mass - b.mass) < 1e-8 * a.mass and a.mass < a.mass_before
    perm = permutation_spec_from_flax(model, params, x)
    ca, cb = identifiable(spec, perm, params), identifiable(spec, perm, disguised)
    for u, v in zip(jax.tree.leaves(ca), jax.tree.leaves(cb)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-4, atol=1e-6)
    # a channels-first flatten: the channel is the slowest factor of the rows
    model = ChannelsFirstFlatten()
    params = _init(model, x)["params"]
    spec = scaling_spec_from_flax(model, params, x)
    assert spec.views == {"Dense_0/kernel": (3, 16, 4)}
    assert ("Dense_0/kernel", 0, -1) in spec.groups["P_Conv_0"]
    scaled = apply_scaling(spec, params, {g: np.exp(rng.uniform(-1, 1, n))
                                               for g, n in check_scaling_spec(spec, params).items()})
    out = _outputs(model.apply, [{"params": params}, {"params": scaled}], x)
    np.testing.assert_allclose(out[1], out[0], **TOL)
    # a flattened map that is also an output keeps its channels' scale
    model = FlattenAlsoReturned()
    params = _init(model, x)["params"]
    spec = scaling_spec_from_flax(model, params, x)
    assert spec.groups == {} and spec.views == {}


class FlattenTanh(nn.Module):
    """ReLU channels flattened, then tanh: no scaling symmetry."""

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Conv(3, (3, 3), strides=(2, 2))(x)).reshape(x.shape[0], -1)
        return nn.Dense(2)(jnp.tanh(h))


def test_scaling_refuses_tanh_after_a_flatten():
    model, x = FlattenTanh(), IMG
    with pytest.raises(ValueError, match=r"'Conv_0/kernel' go through 'tanh'"):
        scaling_spec_from_flax(model, _init(model, x)["params"], x)


def test_concatenation_cuts_the_reading_kernel_into_parts():
    model, x = Concat(), VEC
    spec = permutation_spec_from_flax(model, _init(model, x)["params"], x)
    assert spec.parts == {"Dense_2/kernel": (0, (4, 3))}
    assert spec.axes["Dense_2/kernel[0:4]"] == ("P_Dense_0", "P_Dense_2")
    assert spec.axes["Dense_2/kernel[4:7]"] == ("P_Dense_1", "P_Dense_2")
    assert "Dense_2/kernel" not in spec.axes and "Dense_2/kernel" in spec.stored_paths
    # concatenations of concatenations: the input's channels are a part that does not move,
    # each feature map's channels a part of its own wherever they are read, twice in one place
    model, x = DenseNetBlock(), IMG
    report = flax_derive_report(model, _init(model, x)["params"], x)
    spec = report.spec
    assert spec.parts["Conv_1/kernel"] == (2, (2, 3))
    assert spec.parts["Dense_0/kernel"] == (0, (2, 3, 4, 4))
    assert [spec.axes[f"LayerNorm_0/scale[{a}]"] for a in ("0:2", "2:5", "5:9", "9:13")] == [
        (None,), ("P_Conv_0",), ("P_Conv_1",), ("P_Conv_1",)]
    assert any("model input" in r for r in report.stopped[("Dense_0/kernel[0:2]", 0)])


class DenseNetNoNorm(nn.Module):
    """DenseNetBlock without the LayerNorm: every feature map's channels rescale, through parts."""

    @nn.compact
    def __call__(self, x):
        h1 = nn.relu(nn.Conv(3, (3, 3))(x))
        c1 = jnp.concatenate([x, h1], axis=-1)
        h2 = nn.relu(nn.Conv(4, (3, 3))(c1))
        return nn.Dense(2)(jnp.concatenate([c1, h2, h2], axis=-1).mean(axis=(1, 2)))


class NestedConcatOutput(nn.Module):
    """A concatenation of a concatenation that is a model output: nothing inside may move."""

    @nn.compact
    def __call__(self, x):
        c1 = jnp.concatenate([x, nn.relu(nn.Dense(3)(x))], axis=-1)
        c2 = jnp.concatenate([c1, nn.relu(nn.Dense(4)(c1))], axis=-1)
        return nn.Dense(2)(c2), c2


def test_scaling_through_a_concatenation():
    from symlib.symmetry import check_scaling_spec_invariance, identifiable, min_mass

    model, x = DenseNetNoNorm(), IMG
    params = _init(model, x)["params"]
    spec = scaling_spec_from_flax(model, params, x)
    assert spec.parts == {"Conv_1/kernel": (2, (2, 3)), "Dense_0/kernel": (0, (2, 3, 4, 4))}
    assert set(spec.groups["P_Conv_0"]) == {("Conv_0/kernel", 3, 1), ("Conv_0/bias", 0, 1),
                                            ("Conv_1/kernel[2:5]", 2, -1), ("Dense_0/kernel[2:5]", 0, -1)}
    assert ("Dense_0/kernel[5:9]", 0, -1) in spec.groups["P_Conv_1"]
    assert ("Dense_0/kernel[9:13]", 0, -1) in spec.groups["P_Conv_1"]
    assert "Dense_0/kernel[0:2]" in spec.mass_paths and "Dense_0/kernel" not in spec.mass_paths
    apply = lambda p, xb: model.apply({"params": p}, xb)  # noqa: E731
    assert check_scaling_spec_invariance(spec, params, apply, x) < 1e-5
    result = min_mass(spec, params)
    assert result.converged and result.mass < result.mass_before
    assert result.params["Dense_0"]["kernel"].shape == params["Dense_0"]["kernel"].shape
    canonical = identifiable(spec, permutation_spec_from_flax(model, params, x), params)
    np.testing.assert_allclose(apply(canonical, x), apply(params, x), **TOL)


def test_nested_concatenation_that_is_an_output():
    model, x = NestedConcatOutput(), VEC
    report = flax_derive_report(model, _init(model, x)["params"], x)
    assert "P_Dense_0" not in report.spec.perm_names
    assert any("model output" in r for r in report.stopped[("Dense_0/kernel", 1)])


class ConcatOutput(nn.Module):
    """The concatenation is also a model output: neither branch may move."""

    @nn.compact
    def __call__(self, x):
        h = jnp.concatenate([nn.relu(nn.Dense(4)(x)), nn.relu(nn.Dense(3)(x))], axis=-1)
        return nn.Dense(2)(h), h


class OverlappingConcats(nn.Module):
    """Two concatenations cut one summed axis at different places: no branch may move."""

    @nn.compact
    def __call__(self, x):
        a = jnp.concatenate([nn.relu(nn.Dense(4)(x)), nn.relu(nn.Dense(3)(x))], axis=-1)
        b = jnp.concatenate([nn.relu(nn.Dense(2)(x)), nn.relu(nn.Dense(5)(x))], axis=-1)
        return nn.Dense(2)(a + b)


@pytest.mark.parametrize("model", [ConcatOutput(), OverlappingConcats()], ids=["output", "overlap"])
def test_concatenation_that_cannot_be_cut(model):
    x = VEC
    params = _init(model, x)["params"]
    report = flax_derive_report(model, params, x)
    assert report.spec.perm_names == [] and report.spec.parts == {}
    assert check_spec_invariance(report.spec, params, lambda p, xb: model.apply({"params": p}, xb), x) == 0.0


def test_batch_norm_with_batch_statistics():
    """Training mode: the permutation acts on the running statistics too, and the updated
    statistics come out permuted; inference mode with the (non-trivial) running statistics."""
    model, x = BNCNN(), IMG
    variables = _init(model, x)
    rngs = {"dropout": jax.random.key(8)}
    _, upd = model.apply(variables, x, train=True, mutable=["batch_stats"], rngs=rngs)
    variables = {"params": variables["params"], "batch_stats": upd["batch_stats"]}
    spec = permutation_spec_from_flax(model, variables, x, train=True, mutable=["batch_stats"], rngs=rngs)
    assert len(spec.perm_names) == 2
    assert spec.axes["batch_stats/BatchNorm_0/mean"] == spec.axes["params/Conv_0/bias"]
    assert spec.axes["batch_stats/BatchNorm_1/var"] == spec.axes["params/BatchNorm_1/scale"]
    for seed in range(2):
        perms = random_permutations(seed, spec, variables)
        q = apply_permutation(spec, perms, variables)
        # training mode, same dropout key: dropout masks are not permuted, so compare without dropout
        out_a, upd_a = model.apply(variables, x, train=True, mutable=["batch_stats"], rngs=rngs)
        out_b, upd_b = model.apply(q, x, train=True, mutable=["batch_stats"], rngs=rngs)
        want = apply_permutation(spec, perms, {"params": variables["params"], "batch_stats": upd_a["batch_stats"]})
        got = flatten_params({"params": variables["params"], "batch_stats": upd_b["batch_stats"]})
        for path, leaf in flatten_params(want).items():
            np.testing.assert_allclose(got[path] if path.startswith("batch_stats") else leaf, leaf, **TOL)
        np.testing.assert_allclose(model.apply(q, x), model.apply(variables, x), **TOL)
    # the same spec from inference mode (no mutable collections)
    spec_eval = permutation_spec_from_flax(model, variables, x)
    assert perm_groups(spec_eval) == perm_groups(spec)
    # weight matching over parameters and running statistics recovers a planted permutation
    variables = jax.tree.map(np.asarray, variables)
    b = apply_permutation(spec, random_permutations(9, spec, variables), variables)
    back = flatten_params(apply_permutation(spec, weight_matching(0, spec, variables, b).perms, b))
    for path, leaf in flatten_params(variables).items():
        np.testing.assert_array_equal(back[path], leaf, err_msg=path)


def test_batch_norm_scaling():
    """Rescaling a batch norm's scale and bias (and dividing the kernel rows reading the
    channel) is a symmetry in inference and in training mode; the convolutions' own output
    channels, normalised by the batch norm, are no group."""
    model, x = BNCNN(), IMG
    variables = _init(model, x)
    _, upd = model.apply(variables, x, train=True, mutable=["batch_stats"], rngs={"dropout": jax.random.key(8)})
    variables = {"params": variables["params"], "batch_stats": jax.tree.map(np.asarray, dict(upd["batch_stats"]))}
    spec = scaling_spec_from_flax(model, variables, x)
    assert scale_groups(spec) == {
        frozenset({("params/BatchNorm_0/scale", 0, 1), ("params/BatchNorm_0/bias", 0, 1), ("params/Conv_1/kernel", 2, -1)}),
        frozenset({("params/BatchNorm_1/scale", 0, 1), ("params/BatchNorm_1/bias", 0, 1), ("params/Dense_0/kernel", 0, -1)}),
    }
    assert set(spec.mass_paths) == {"params/Conv_0/kernel", "params/Conv_1/kernel", "params/Dense_0/kernel",
                                    "params/BatchNorm_0/scale", "params/BatchNorm_1/scale"}
    sizes = check_scaling_spec(spec, variables)
    scaled = apply_scaling(spec, variables, {g: np.exp(np.random.default_rng(2).uniform(-1, 1, n))
                                                      for g, n in sizes.items()})
    np.testing.assert_allclose(model.apply(scaled, x), model.apply(variables, x), **TOL)
    train = lambda v: model.apply(v, x, train=True, mutable=["batch_stats"], rngs={"dropout": jax.random.key(8)})
    (out_a, upd_a), (out_b, upd_b) = train(variables), train(scaled)
    np.testing.assert_allclose(out_b, out_a, **TOL)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, **TOL), upd_a, upd_b)


def test_dropout_is_elementwise():
    model, x = BNCNN(), IMG
    variables = _init(model, x)
    rngs = {"dropout": jax.random.key(8)}
    spec_train = permutation_spec_from_flax(model, variables, x, train=True, mutable=["batch_stats"], rngs=rngs)
    spec_eval = permutation_spec_from_flax(model, variables, x)
    assert perm_groups(spec_train) == perm_groups(spec_eval)


def test_params_only_paths():
    model, x = MLP((5, 4)), VEC
    params = _init(model, x)["params"]
    spec = permutation_spec_from_flax(model, params, x)
    assert set(spec.axes) == set(flatten_params(params))
    assert spec.axes["Dense_0/kernel"] == (None, "P_Dense_0")


# --- (c) refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("act, op", [("tanh", "tanh"), ("sigmoid", "logistic"), ("gelu", "integer_pow")])
def test_scaling_refuses_non_homogeneous_activation(act, op):
    model = TanhMLP(act)
    params = _init(model, VEC)["params"]
    with pytest.raises(ValueError, match=op):
        scaling_spec_from_flax(model, params, VEC)
    # the permutation symmetry is still there
    spec = permutation_spec_from_flax(model, params, VEC)
    assert len(spec.perm_names) == 1


@jax.custom_vjp
def _relu_vjp(x):
    return jnp.maximum(x, 0.0)


_relu_vjp.defvjp(lambda x: (_relu_vjp(x), x), lambda x, g: (g * (x > 0),))

_ACTS = {
    "relu": jax.nn.relu,
    "leaky_relu": jax.nn.leaky_relu,
    "where_relu": lambda h: jnp.where(h > 0, h, 0.0),
    "checkpoint_relu": jax.checkpoint(jax.nn.relu),
    "custom_vjp_relu": _relu_vjp,
    "relu6": jax.nn.relu6,
    "elu": jax.nn.elu,
    "silu": jax.nn.silu,
    "softplus": jax.nn.softplus,
}


@pytest.mark.parametrize("act", sorted(_ACTS))
def test_activations_apply_fn(act):
    """Permutations for any elementwise activation; scaling for the positively homogeneous ones
    (through jit, custom_jvp, custom_vjp and checkpoint), refused by name for the others."""
    k = jax.random.split(jax.random.key(11), 5)
    p = {"a": {"kernel": jax.random.normal(k[0], (3, 4)), "bias": jax.random.normal(k[1], (4,))},
         "b": {"kernel": jax.random.normal(k[2], (4, 5)), "bias": jax.random.normal(k[3], (5,))},
         "c": {"kernel": jax.random.normal(k[4], (5, 2))}}
    x = jax.random.normal(jax.random.key(12), (6, 3))

    def f(p, x):
        h = _ACTS[act](x @ p["a"]["kernel"] + p["a"]["bias"])
        h = _ACTS[act](h @ p["b"]["kernel"] + p["b"]["bias"])
        return h @ p["c"]["kernel"]

    spec = permutation_spec_from_apply(f, p, x)
    assert perm_groups(spec) == {frozenset({("a/kernel", 1), ("a/bias", 0), ("b/kernel", 0)}),
                                 frozenset({("b/kernel", 1), ("b/bias", 0), ("c/kernel", 0)})}
    q = apply_permutation(spec, random_permutations(0, spec, p), p)
    np.testing.assert_allclose(f(q, x), f(p, x), **TOL)
    if act in ("relu6", "elu", "silu", "softplus"):
        with pytest.raises(ValueError, match=f"not positively homogeneous.*{act}|{act}.*not positively"):
            scaling_spec_from_apply(f, p, x)
        return
    s = scaling_spec_from_apply(f, p, x)
    assert scale_groups(s) == {frozenset({("a/kernel", 1, 1), ("a/bias", 0, 1), ("b/kernel", 0, -1)}),
                               frozenset({("b/kernel", 1, 1), ("b/bias", 0, 1), ("c/kernel", 0, -1)})}
    assert s.mass_paths == ("a/kernel", "b/kernel", "c/kernel")
    scales = {g: np.exp(np.random.default_rng(1).uniform(-1, 1, 4 if "a/kernel" in str(e) else 5))
              for g, e in s.groups.items()}
    np.testing.assert_allclose(f(apply_scaling(s, p, scales), x), f(p, x), **TOL)


_POOLS = {
    "sum": lambda h: jnp.sum(h, axis=1),
    "max": lambda h: jnp.max(h, axis=1),
    "cummax": lambda h: jax.lax.cummax(h, axis=1)[:, -1],
    "prod": lambda h: jnp.prod(h, axis=1),
    "cumprod": lambda h: jnp.cumprod(h, axis=1)[:, -1],
    "cumlogsumexp": lambda h: jax.lax.cumlogsumexp(h, axis=1)[:, -1],
}


@pytest.mark.parametrize("pool", sorted(_POOLS))
def test_pooling_over_positions_keeps_scaling_only_when_degree_one(pool):
    """Pooling ReLU units over positions: a sum or a max scales with the unit, so the scaling
    group is derived and leaves the outputs unchanged; a product over k positions scales it
    by a**k and a log-sum-exp by no power, so the derivation is refused by name."""
    k = jax.random.split(jax.random.key(3), 2)
    p = {"d0": {"kernel": jax.random.normal(k[0], (3, 4)), "bias": jnp.zeros(4)},
         "d1": {"kernel": jax.random.normal(k[1], (4, 2)), "bias": jnp.zeros(2)}}
    x = jax.random.uniform(jax.random.key(4), (5, 3, 3), minval=0.5, maxval=1.5)

    def f(p, x):
        h = jax.nn.relu(x @ p["d0"]["kernel"] + p["d0"]["bias"])  # (n, positions, units)
        return _POOLS[pool](h) @ p["d1"]["kernel"] + p["d1"]["bias"]

    if pool in ("prod", "cumprod", "cumlogsumexp"):
        with pytest.raises(ValueError, match="not positively homogeneous"):
            scaling_spec_from_apply(f, p, x)
        return
    s = scaling_spec_from_apply(f, p, x)
    assert scale_groups(s) == {frozenset({("d0/kernel", 1, 1), ("d0/bias", 0, 1), ("d1/kernel", 0, -1)})}
    scales = {g: np.exp(np.random.default_rng(2).uniform(-1, 1, 4)) for g in s.groups}
    np.testing.assert_allclose(f(apply_scaling(s, p, scales), x), f(p, x), **TOL)


def test_tied_weights():
    """An autoencoder with a tied kernel: the permutation acts on it once (both uses share
    the class); no scaling group, since rescaling it would act on both uses."""

    def f(p, x):
        h = jax.nn.relu(x @ p["w"] + p["b"])
        return h @ p["w"].T

    p = {"w": jax.random.normal(jax.random.key(0), (3, 4)), "b": jnp.zeros(4)}
    x = jnp.ones((2, 3))
    spec = permutation_spec_from_apply(f, p, x)
    assert spec.axes == {"w": (None, "P_w_1"), "b": ("P_w_1",)}
    assert scaling_spec_from_apply(f, p, x).groups == {}


def test_unsupported_primitive_is_named():
    def rnn(params, xs):
        def step(h, x):
            h = jnp.tanh(h @ params["w"] + x @ params["u"])
            return h, h
        return jax.lax.scan(step, jnp.zeros((xs.shape[1], 3)), xs)[1] @ params["v"]

    params = {"w": jnp.ones((3, 3)), "u": jnp.ones((2, 3)), "v": jnp.ones((3, 1))}
    with pytest.raises(UnsupportedOperationError, match="'scan'"):
        permutation_spec_from_apply(rnn, params, jnp.ones((5, 4, 2)))


def test_output_and_softmax_axes():
    """Logits are stopped as outputs; a softmax over hidden units is equivariant (its
    normaliser is a reduction, invariant to the permutation)."""

    def f(p, x):
        h = jax.nn.softmax(x @ p["a"], axis=-1)
        return h @ p["b"]

    p = {"a": jnp.ones((3, 4)), "b": jnp.ones((4, 2))}
    report = derive_report(f, p, jnp.ones((2, 3)))
    assert report.spec.axes == {"a": (None, "P_a_1"), "b": ("P_a_1", None)}
    assert report.stopped[("b", 1)] == ("model output",)


def test_silent_cases_get_an_error_naming_the_problem():
    """Issue 45: an empty example batch is refused before the trace (it raised JAX's
    ZeroDivisionError from inside the model); NaN parameters are named by the invariance
    check instead of being blamed on the spec."""
    model, x = ZOO["mlp2"][0], ZOO["mlp2"][1]
    params = _init(model, x)["params"]
    with pytest.raises(ValueError, match=r"example input 0 has no examples \(shape \(0, 6\)\)"):
        permutation_spec_from_flax(model, params, x[:0])
    spec = permutation_spec_from_flax(model, params, x)
    bad = jax.tree.map(np.array, params)
    bad["Dense_0"]["kernel"][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"params\['Dense_0'\]\['kernel'\].*NaN"):
        check_spec_invariance(spec, {"params": bad}["params"], lambda p, v: model.apply({"params": p}, v), x)
    with pytest.raises(ValueError, match="outputs of apply_fn.*are not finite"):
        check_spec_invariance(spec, params, lambda p, v: model.apply({"params": p}, v) * np.nan, x)
