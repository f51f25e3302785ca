"""Activation matching from the model's ordinary forward function (issue 45, item 5).

``activation_matching(spec, A, B, data, apply_fn=model_apply)``, with ``apply_fn``
returning the model's output, finds the activations of every permutation in the traced
computation itself (:func:`symlib.symmetry.derive.activation_sites`).

(a) On symlib's MLP, OptuNet and ResNet20 it returns the same permutations as the
hand-written activation functions (``mlp_hidden``'s list, ``optunet_hidden`` and
``resnet20_hidden`` by permutation name) on the same data, for two *independent*
networks, where the permutations depend on which activations are read: matching another
choice (pre-activations, pooled features) gives different ones, which is checked too.
(b) On the zoo of flax.linen models of ``test_derive_specs`` (and BatchNorm CNNs with
their running statistics), with the derived spec: B = A with its hidden units permuted
by a random permutation of the spec is matched back onto A exactly (the activations are
equal up to the permutation, so the right pairs have correlation 1).
(c) Errors name the problem.
"""
from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

from _helpers import random_mlp

from symlib.core.cnn import global_avg_pool, optunet_apply, optunet_hidden, optunet_init
from symlib.core.models import mlp_apply, mlp_init
from symlib.core.resnet import resnet20_apply, resnet20_hidden, resnet20_init
from symlib.symmetry import (
    activation_sites,
    apply_permutation,
    flatten_params,
    mlp_permutation_spec,
    optunet_permutation_spec,
    permutation_spec_from_apply,
    permutation_spec_from_flax,
    random_permutations,
    resnet20_permutation_spec,
)
from symlib.symmetry.matching import activation_matching
from symlib.symmetry.specs import PermutationSpec

from test_derive_specs import BNCNN, ZOO  # the zoo of flax.linen models
from test_key_order import BackwardsBN


def _same(a, b) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _float64(tree):
    return jax.tree_util.tree_map(lambda w: np.asarray(w, np.float64), tree)


# --- (a) the same permutations as the hand-written activations --------------------------------------


def test_mlp_captured_equals_hand_written_list():
    sizes = [6, 12, 10, 3]
    a = _float64(mlp_init(jax.random.key(0), sizes))
    b = _float64(mlp_init(jax.random.key(1), sizes))
    x = np.asarray(jax.random.normal(jax.random.key(2), (300, 6)))
    spec = mlp_permutation_spec(2)
    hand = activation_matching(spec, a, b, x, batch_size=128)  # default: mlp_hidden, the list form
    for fn in (mlp_apply, jax.jit(mlp_apply)):  # a jitted model is traced through its jit
        auto = activation_matching(spec, a, b, x, batch_size=128, apply_fn=fn)  # 128, 128, 44: two shapes
        assert _same(auto.perms, hand.perms)
        np.testing.assert_allclose(auto.objective, hand.objective, rtol=1e-6)
        assert auto.info["num_rows"] == {"P_0": 300, "P_1": 300}
    # the derived spec (other names, same groups) reads the same activations
    derived = permutation_spec_from_apply(mlp_apply, a, x[:2])
    auto = activation_matching(derived, a, b, x, apply_fn=mlp_apply)
    assert _same(dict(zip(("P_0", "P_1"), (auto.perms[n] for n in derived.perm_names))), hand.perms)
    # the choice matters: the pre-activations give other permutations
    pre = activation_matching(spec, a, b, x, apply_fn=_pre_activations)
    assert not _same(pre.perms, hand.perms)


def _pre_activations(p, x):
    z0 = x @ p["dense_0"]["kernel"] + p["dense_0"]["bias"]
    return [z0, jax.nn.relu(z0) @ p["dense_1"]["kernel"] + p["dense_1"]["bias"]]


@pytest.fixture(scope="module")
def images():
    return np.asarray(jax.random.normal(jax.random.key(7), (64, 28, 28, 1)))


def test_optunet_captured_equals_hand_written_dict(images):
    spec = optunet_permutation_spec()
    a, b = optunet_init(jax.random.key(0)), optunet_init(jax.random.key(1))

    def hidden(pool):
        def fn(p, x):
            h = optunet_hidden(p, x, conv="xla")
            return {"P_conv_1": global_avg_pool(h["conv_1"]) if pool else h["conv_1"], "P_dense_0": h["dense_0"]}
        return fn

    hand = activation_matching(spec, a, b, images, batch_size=24, apply_fn=hidden(False))
    auto = activation_matching(spec, a, b, images, batch_size=24, apply_fn=partial(optunet_apply, conv="xla"))
    assert _same(auto.perms, hand.perms)
    assert auto.info["num_rows"] == hand.info["num_rows"] == {"P_conv_1": 64 * 4 * 4, "P_dense_0": 64}
    pooled = activation_matching(spec, a, b, images, batch_size=24, apply_fn=hidden(True))
    assert not np.array_equal(pooled.perms["P_conv_1"], hand.perms["P_conv_1"])  # before the pool, not after


def test_resnet20_captured_equals_hand_written_dict():
    spec = resnet20_permutation_spec()
    a, b = resnet20_init(jax.random.key(0), 1, 10, 3), resnet20_init(jax.random.key(1), 1, 10, 3)
    x = np.asarray(jax.random.normal(jax.random.key(2), (24, 8, 8, 3)))
    hand = activation_matching(spec, a, b, x, batch_size=16, apply_fn=resnet20_hidden)
    auto = activation_matching(spec, a, b, x, batch_size=16, apply_fn=resnet20_apply)
    assert _same(auto.perms, hand.perms)
    assert auto.info["num_rows"] == hand.info["num_rows"]
    # the residual stream is read after its last block, before the global mean pool
    pooled = activation_matching(spec, a, b, x, batch_size=16, apply_fn=lambda p, x: {
        k: (global_avg_pool(h) if k == "P_stage_2" else h) for k, h in resnet20_hidden(p, x).items()})
    assert not np.array_equal(pooled.perms["P_stage_2"], hand.perms["P_stage_2"])


# --- (b) the zoo of flax models: a permuted copy is matched back exactly ------------------------------


def _more(x, n: int = 64):
    """``n`` examples of the shape of ``x``'s."""
    return np.asarray(jax.random.normal(jax.random.key(11), (n,) + tuple(x.shape[1:])))


def _params(model, x):
    """Initial parameters (key 0: on the data no permutation has two dead ReLU units, which have
    the same constant activations and cannot be told apart by any activation matching)."""
    return jax.tree.map(np.asarray, model.init(jax.random.key(0), x)["params"])


def _check_recovers(spec, variables, apply_fn, x, data=None):
    planted = random_permutations(5, spec, variables)
    b = apply_permutation(spec, planted, variables)
    res = activation_matching(spec, variables, b, x if data is None else data, batch_size=24, apply_fn=apply_fn)
    back = flatten_params(apply_permutation(spec, res.perms, b))
    for path, leaf in flatten_params(variables).items():
        np.testing.assert_allclose(np.asarray(back[path]), np.asarray(leaf), atol=1e-5, rtol=0, err_msg=path)
    for name, total in zip(spec.perm_names, res.objective):  # correlation 1 on every pair (but a dead unit's 0)
        assert total > len(res.perms[name]) - 1 - 1e-4
    return res


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_permuted_copy_is_matched_back(name):
    model, x, _, _ = ZOO[name]
    params = _params(model, x)
    spec = permutation_spec_from_flax(model, params, x)
    res = _check_recovers(spec, params, lambda p, x: model.apply({"params": p}, x), _more(x))
    if name == "attention":  # the per-head features are read with the heads as more rows
        sites = activation_sites(lambda p, x: model.apply({"params": p}, x), spec, params, x)
        heads = [n for n, s in sites.sites.items() if not s.others and n != spec.perm_names[0]]
        per_head = [n for n, s in sites.sites.items() if s.others]
        assert len(heads) == 1 and len(per_head) == 2
        assert all(res.info["num_rows"][n] > res.info["num_examples"] * x.shape[1] for n in per_head)


@pytest.mark.parametrize("model", [BNCNN(), BackwardsBN()], ids=["bn_cnn", "backwards_bn"])
def test_batch_norm_cnn_with_running_statistics(model):
    x = ZOO["pool_cnn"][1]
    variables = jax.tree.map(np.asarray, dict(model.init({"params": jax.random.key(0)}, x)))
    # non-trivial running statistics, permuted with their channels
    variables["batch_stats"] = jax.tree.map(lambda s: s + np.random.default_rng(s.size).uniform(0.1, 0.5, s.shape),
                                            variables["batch_stats"])
    spec = permutation_spec_from_flax(model, variables, x)
    assert any(p.startswith("batch_stats/") for p in spec.axes)
    _check_recovers(spec, variables, model.apply, _more(x))


def test_one_shot_iterator_is_refused_when_two_passes_are_needed():
    model, x, _, _ = ZOO["attention"]
    params = _params(model, x)
    spec = permutation_spec_from_flax(model, params, x)
    fn = lambda p, x: model.apply({"params": p}, x)  # noqa: E731
    data = _more(x, 48)
    with pytest.raises(ValueError, match="one-shot iterator"):
        activation_matching(spec, params, params, (data[i:i + 16] for i in range(0, 48, 16)), apply_fn=fn)
    _check_recovers(spec, params, fn, None, data=[data[i:i + 16] for i in range(0, 48, 16)])
    # a single pass (no per-head features): a one-shot iterator is fine
    model, x, _, _ = ZOO["mlp2"]
    params = _params(model, x)
    spec = permutation_spec_from_flax(model, params, x)
    data = _more(x, 48)
    _check_recovers(spec, params, lambda p, x: model.apply({"params": p}, x), None,
                    data=(data[i:i + 16] for i in range(0, 48, 16)))


# --- (c) errors ---------------------------------------------------------------------------------


def test_errors_name_the_problem():
    a = random_mlp(np.random.default_rng(0), [4, 5, 3])
    x = np.ones((8, 4))
    # a permutation that no computed value carries (the axis between two parameter matrices)
    p = {"a": np.ones((4, 6)), "b": np.ones((6, 3))}
    spec = PermutationSpec({"a": (None, "P_inner"), "b": ("P_inner", None)})
    with pytest.raises(ValueError, match=r"cannot find the activations.*'P_inner'"):
        activation_matching(spec, p, p, x, apply_fn=lambda p, x: x @ (p["a"] @ p["b"]))
    # two permutations of the spec on one hidden axis of the model
    split = PermutationSpec({"dense_0/kernel": (None, "P_a"), "dense_0/bias": ("P_b",),
                             "dense_1/kernel": ("P_a", None), "dense_1/bias": (None,)})
    with pytest.raises(ValueError, match="'P_a' and 'P_b' both act"):
        activation_matching(split, a, a, x, apply_fn=mlp_apply)
    # neither an array nor activations
    with pytest.raises(TypeError, match="apply_fn must return"):
        activation_matching(mlp_permutation_spec(1), a, a, x, apply_fn=lambda p, x: None)
