"""Tests for symlib.symmetry.specs."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symlib.symmetry import permutations as P
from symlib.core.models import mlp_apply, mlp_hidden, mlp_init
from symlib.symmetry.specs import (
    PermutationSpec,
    apply_permutation,
    check_spec,
    check_spec_invariance,
    flatten_params,
    mlp_permutation_spec,
    param_distance,
    random_permutations,
    unflatten_params,
)


def _np_params(seed: int, sizes) -> dict:
    """Random float64 numpy MLP params (non-zero biases, so bias permutation matters)."""
    rng = np.random.default_rng(seed)
    return {
        f"dense_{l}": {"kernel": rng.normal(size=(a, b)), "bias": rng.normal(size=(b,))}
        for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def _assert_tree_equal(a, b):
    fa, fb = flatten_params(a), flatten_params(b)
    assert sorted(fa) == sorted(fb)
    for k in fa:
        np.testing.assert_array_equal(np.asarray(fa[k]), np.asarray(fb[k]), err_msg=k)


@st.composite
def mlp_case(draw):
    depth = draw(st.integers(0, 3))
    sizes = [draw(st.integers(1, 16)) for _ in range(depth + 2)]
    seed = draw(st.integers(0, 2**31 - 1))
    return depth, sizes, seed


# ------------------------------------------------------------------ spec structure


def test_mlp_spec_structure():
    spec = mlp_permutation_spec(2)
    assert spec.axes == {
        "dense_0/kernel": (None, "P_0"),
        "dense_0/bias": ("P_0",),
        "dense_1/kernel": ("P_0", "P_1"),
        "dense_1/bias": ("P_1",),
        "dense_2/kernel": ("P_1", None),
        "dense_2/bias": (None,),
    }
    assert spec.perm_names == ["P_0", "P_1"]
    assert spec.perm_to_axes == {
        "P_0": [("dense_0/kernel", 1), ("dense_0/bias", 0), ("dense_1/kernel", 0)],
        "P_1": [("dense_1/kernel", 1), ("dense_1/bias", 0), ("dense_2/kernel", 0)],
    }


def test_mlp_spec_zero_hidden_and_negative():
    spec = mlp_permutation_spec(0)
    assert spec.axes == {"dense_0/kernel": (None, None), "dense_0/bias": (None,)}
    assert spec.perm_names == [] and spec.perm_to_axes == {}
    with pytest.raises(ValueError, match="non-negative"):
        mlp_permutation_spec(-1)


def test_spec_is_frozen_and_normalises_lists():
    spec = PermutationSpec({"w": [None, "A"], "b": ["A"]})
    assert spec.axes == {"w": (None, "A"), "b": ("A",)}
    with pytest.raises(AttributeError):
        spec.axes = {}
    with pytest.raises(TypeError):
        PermutationSpec({"w": "A"})
    with pytest.raises(TypeError):
        PermutationSpec({"w": (1,)})


def test_flatten_unflatten_roundtrip():
    params = mlp_init(jax.random.key(0), [3, 4, 2])
    flat = flatten_params(params)
    assert list(flat) == ["dense_0/kernel", "dense_0/bias", "dense_1/kernel", "dense_1/bias"]
    assert flat["dense_1/kernel"] is params["dense_1"]["kernel"]
    back = unflatten_params(flat)
    _assert_tree_equal(back, params)
    assert back.keys() == params.keys()
    assert flatten_params(flat) == flat  # already flat: unchanged
    deep = {"a": {"b": {"c": 1, "d": 2}}, "e": 3}
    assert flatten_params(deep) == {"a/b/c": 1, "a/b/d": 2, "e": 3}
    assert unflatten_params(flatten_params(deep)) == deep
    with pytest.raises(ValueError, match="both a leaf and a prefix"):
        unflatten_params({"a": 1, "a/b": 2})
    with pytest.raises(ValueError, match="occurs twice"):
        flatten_params({"a": {"b": 1}, "a/b": 2})


def test_flatten_unflatten_are_the_core_helpers_and_name_bad_inputs():
    from symlib.core.pytree import flatten_dict, unflatten_dict

    deep = {"a": {"b": {"c": 1}}, "e": {}}
    assert flatten_params(deep) == flatten_dict(deep) == {"a/b/c": 1}
    assert unflatten_params({"a/b": 1, "c": 2}) == unflatten_dict({"a/b": 1, "c": 2})
    with pytest.raises(TypeError, match="params must be a .*dict.*got list"):
        flatten_params([("dense_0", 1)])
    with pytest.raises(TypeError, match="keys must be non-empty strings"):
        flatten_params({"dense_0": {0: 1}})
    with pytest.raises(TypeError, match="flat must be a dict.*got list"):
        unflatten_params([("a", 1)])
    with pytest.raises(TypeError, match="paths must be strings, got 3"):
        unflatten_params({3: 1})
    with pytest.raises(ValueError, match="'a//b' has an empty component"):
        unflatten_params({"a//b": 1})


# ------------------------------------------------------------------ check_spec


def test_check_spec_sizes_and_batch_dims():
    params = mlp_init(jax.random.key(0), [3, 5, 7, 2])
    spec = mlp_permutation_spec(2)
    assert check_spec(spec, params) == {"P_0": 5, "P_1": 7}
    stacked = jax.tree.map(lambda x: jnp.stack([x] * 4), params)
    assert check_spec(spec, stacked, batch_dims=1) == {"P_0": 5, "P_1": 7}
    with pytest.raises(ValueError, match="dense_0/kernel"):
        check_spec(spec, stacked)  # 3 axes but spec lists 2


def test_check_spec_missing_param():
    params = mlp_init(jax.random.key(0), [3, 5, 2])
    del params["dense_1"]["bias"]
    with pytest.raises(ValueError, match=r"dense_1/bias.*missing from params"):
        check_spec(mlp_permutation_spec(1), params)


def test_check_spec_extra_param():
    params = mlp_init(jax.random.key(0), [3, 5, 2])
    params["dense_1"]["scale"] = jnp.ones(2)
    with pytest.raises(ValueError, match=r"dense_1/scale.*not in the spec"):
        check_spec(mlp_permutation_spec(1), params)


def test_check_spec_wrong_ndim():
    params = mlp_init(jax.random.key(0), [3, 5, 2])
    params["dense_0"]["bias"] = jnp.zeros((5, 1))
    with pytest.raises(ValueError, match=r"dense_0/bias.*\(5, 1\).*2 axes.*1 axes"):
        check_spec(mlp_permutation_spec(1), params)


def test_check_spec_wrong_axis_size():
    params = mlp_init(jax.random.key(0), [3, 5, 4, 2])
    params["dense_1"]["kernel"] = jnp.zeros((6, 4))
    with pytest.raises(ValueError, match=r"'P_0'.*dense_0/kernel.*size 5.*dense_1/kernel.*size 6"):
        check_spec(mlp_permutation_spec(2), params)
    params = mlp_init(jax.random.key(0), [3, 5, 4, 2])
    params["dense_1"]["bias"] = jnp.zeros(3)
    with pytest.raises(ValueError, match=r"'P_1'.*dense_1/kernel.*size 4.*dense_1/bias.*size 3"):
        check_spec(mlp_permutation_spec(2), params)


# ------------------------------------------------------------------ apply_permutation


@jax.jit
def _forward(params, x):
    return mlp_apply(params, x), mlp_hidden(params, x)


@settings(max_examples=25, deadline=None)
@given(mlp_case())
def test_function_invariance_mlp_apply(case):
    depth, sizes, seed = case
    params = jax.tree.map(lambda a: a.astype(np.float32), _np_params(seed, sizes))
    spec = mlp_permutation_spec(depth)
    perms = random_permutations(seed, spec, params)
    new = apply_permutation(spec, perms, params)
    x = np.random.default_rng(seed + 1).normal(size=(5, sizes[0])).astype(np.float32)
    out_new, hid_new = _forward(new, x)
    out_old, hid_old = _forward(params, x)
    np.testing.assert_allclose(out_new, out_old, rtol=1e-5, atol=1e-5)
    # hidden activations are permuted copies: new unit i is old unit perm[i]
    assert len(hid_new) == depth
    for l, (h_new, h_old) in enumerate(zip(hid_new, hid_old)):
        np.testing.assert_allclose(h_new, np.asarray(h_old)[:, perms[f"P_{l}"]], rtol=1e-5, atol=1e-5)


def test_function_invariance_jax_arrays():
    sizes = [4, 7, 5, 3, 2]
    key = jax.random.key(11)
    params = mlp_init(key, sizes)
    params = jax.tree.map(lambda a: a + 0.3, params)  # non-zero biases
    spec = mlp_permutation_spec(3)
    perms = random_permutations(key, spec, params)
    new = apply_permutation(spec, perms, params)
    for leaf in flatten_params(new).values():
        assert isinstance(leaf, jax.Array)
    x = jax.random.normal(jax.random.fold_in(key, 1), (6, sizes[0]))
    np.testing.assert_allclose(mlp_apply(new, x), mlp_apply(params, x), rtol=1e-5, atol=1e-5)
    back = apply_permutation(spec, {k: P.inverse(v) for k, v in perms.items()}, new)
    _assert_tree_equal(back, params)


@settings(max_examples=40, deadline=None)
@given(mlp_case())
def test_roundtrip_and_composition_numpy(case):
    depth, sizes, seed = case
    params = _np_params(seed, sizes)
    spec = mlp_permutation_spec(depth)
    rng = np.random.default_rng(seed)
    p = random_permutations(rng, spec, params)
    q = random_permutations(rng, spec, params)
    B = apply_permutation(spec, p, params)
    for leaf in flatten_params(B).values():
        assert isinstance(leaf, np.ndarray) and leaf.dtype == np.float64
    back = apply_permutation(spec, {k: P.inverse(v) for k, v in p.items()}, B)
    _assert_tree_equal(back, params)
    # applying p then q equals applying compose(p, q) once
    twice = apply_permutation(spec, q, B)
    once = apply_permutation(spec, {k: P.compose(p[k], q[k]) for k in p}, params)
    _assert_tree_equal(twice, once)
    # the function is unchanged (float64 numpy forward pass)
    x = rng.normal(size=(4, sizes[0]))

    def fwd(prm):
        h = x
        for l in range(depth + 1):
            h = h @ prm[f"dense_{l}"]["kernel"] + prm[f"dense_{l}"]["bias"]
            if l < depth:
                h = np.maximum(h, 0)
        return h

    np.testing.assert_allclose(fwd(B), fwd(params), rtol=1e-12, atol=1e-12)


def test_explicit_small_example():
    # one hidden layer of 3 units; B = A with units shuffled by p
    spec = mlp_permutation_spec(1)
    A = {
        "dense_0": {"kernel": np.array([[1.0, 2.0, 3.0]]), "bias": np.array([10.0, 20.0, 30.0])},
        "dense_1": {"kernel": np.array([[1.0], [2.0], [3.0]]), "bias": np.array([0.5])},
    }
    p = np.array([2, 0, 1])
    B = apply_permutation(spec, {"P_0": p}, A)
    np.testing.assert_array_equal(B["dense_0"]["kernel"], [[3.0, 1.0, 2.0]])
    np.testing.assert_array_equal(B["dense_0"]["bias"], [30.0, 10.0, 20.0])
    np.testing.assert_array_equal(B["dense_1"]["kernel"], [[3.0], [1.0], [2.0]])
    np.testing.assert_array_equal(B["dense_1"]["bias"], [0.5])
    _assert_tree_equal(apply_permutation(spec, {"P_0": P.inverse(p)}, B), A)


def test_flat_params_stay_flat_and_untouched_leaves_identical():
    params = mlp_init(jax.random.key(1), [2, 3, 2])
    flat = flatten_params(params)
    spec = mlp_permutation_spec(1)
    out = apply_permutation(spec, {"P_0": np.array([1, 2, 0])}, flat)
    assert set(out) == set(flat)
    assert out["dense_1/bias"] is flat["dense_1/bias"]


def test_batch_dims_stack_of_networks():
    sizes = [3, 4, 5, 2]
    keys = jax.random.split(jax.random.key(0), 3)
    stacked = jax.vmap(lambda k: mlp_init(k, sizes))(keys)
    spec = mlp_permutation_spec(2)
    perms = random_permutations(0, spec, stacked, batch_dims=1)
    assert {k: len(v) for k, v in perms.items()} == {"P_0": 4, "P_1": 5}
    new = apply_permutation(spec, perms, stacked, batch_dims=1)
    x = jax.random.normal(jax.random.key(9), (6, 3))
    np.testing.assert_allclose(
        jax.vmap(mlp_apply, (0, None))(new, x), jax.vmap(mlp_apply, (0, None))(stacked, x), rtol=1e-5, atol=1e-5
    )
    for i in range(3):
        one = jax.tree.map(lambda a: a[i], stacked)
        _assert_tree_equal(jax.tree.map(lambda a: a[i], new), apply_permutation(spec, perms, one))


def test_apply_under_jit():
    sizes = [3, 6, 2]
    params = mlp_init(jax.random.key(2), sizes)
    spec = mlp_permutation_spec(1)
    perms = random_permutations(jax.random.key(3), spec, params)
    f = jax.jit(lambda prm, pm: apply_permutation(spec, pm, prm))
    traced = f(params, {k: jnp.asarray(v) for k, v in perms.items()})
    _assert_tree_equal(traced, apply_permutation(spec, perms, params))
    g = jax.jit(lambda prm: apply_permutation(spec, perms, prm))
    _assert_tree_equal(g(params), traced)


def test_apply_permutation_errors():
    params = mlp_init(jax.random.key(0), [3, 4, 5, 2])
    spec = mlp_permutation_spec(2)
    good = {"P_0": np.arange(4), "P_1": np.arange(5)}
    with pytest.raises(ValueError, match=r"no permutation given for \['P_1'\]"):
        apply_permutation(spec, {"P_0": np.arange(4)}, params)
    with pytest.raises(ValueError, match=r"unknown permutation name\(s\) \['P_9'\]"):
        apply_permutation(spec, {**good, "P_9": np.arange(3)}, params)
    with pytest.raises(ValueError, match=r"'P_1'.*5 items, got length 4"):
        apply_permutation(spec, {**good, "P_1": np.arange(4)}, params)
    with pytest.raises(ValueError, match=r"'P_0'.*repeated values \[0\]"):
        apply_permutation(spec, {**good, "P_0": np.array([0, 0, 1, 2])}, params)
    with pytest.raises(ValueError, match=r"'P_0'.*dtype float"):
        apply_permutation(spec, {**good, "P_0": np.arange(4.0)}, params)
    with pytest.raises(ValueError, match="dense_2/bias"):
        del params["dense_2"]["bias"]
        apply_permutation(spec, good, params)


def test_random_permutations_deterministic_and_valid():
    params = mlp_init(jax.random.key(0), [3, 4, 5, 2])
    spec = mlp_permutation_spec(2)
    a = random_permutations(jax.random.key(5), spec, params)
    b = random_permutations(jax.random.key(5), spec, params)
    assert list(a) == ["P_0", "P_1"]
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    P.validate(a["P_0"], 4)
    P.validate(a["P_1"], 5)
    assert random_permutations(0, mlp_permutation_spec(0), mlp_init(jax.random.key(0), [3, 2])) == {}


def test_param_distance():
    a = {"dense_0": {"kernel": np.zeros((2, 2)), "bias": np.zeros(2)}}
    b = {"dense_0": {"kernel": np.full((2, 2), 1.0), "bias": np.array([0.0, 3.0])}}
    assert param_distance(a, b) == np.sqrt(4 + 9)
    assert param_distance(b, b) == 0.0
    with pytest.raises(ValueError, match="differ"):
        param_distance(a, {"dense_0": {"kernel": np.zeros((2, 2))}})


# --------------------------------------------------------------------------- views (flatten)
def _flatten_net(rng):
    """A conv feature map of 3 channels at 4 positions, flattened (NHWC) into a dense layer."""
    return {"conv/kernel": rng.normal(size=(2, 3)), "conv/bias": rng.normal(size=3),
            "dense/kernel": rng.normal(size=(12, 5)), "dense/bias": rng.normal(size=5),
            "out/kernel": rng.normal(size=(5, 2))}


FLATTEN_SPEC = PermutationSpec(
    {"conv/kernel": (None, "P_c"), "conv/bias": ("P_c",), "dense/kernel": (None, "P_c", "P_d"),
     "dense/bias": ("P_d",), "out/kernel": ("P_d", None)},
    views={"dense/kernel": (4, 3, 5)})


def _flatten_apply(p, x):
    """x: (batch, 4 positions, 2 features) -> conv (per position) -> flatten -> dense -> out."""
    h = np.maximum(x @ p["conv/kernel"] + p["conv/bias"], 0).reshape(len(x), -1)
    return np.maximum(h @ p["dense/kernel"] + p["dense/bias"], 0) @ p["out/kernel"]


def test_views_permute_flattened_rows_in_blocks():
    rng = np.random.default_rng(0)
    p = _flatten_net(rng)
    assert check_spec(FLATTEN_SPEC, p) == {"P_c": 3, "P_d": 5}
    perm = {"P_c": np.array([2, 0, 1]), "P_d": np.arange(5)}
    q = apply_permutation(FLATTEN_SPEC, perm, p)
    rows = (np.arange(4)[:, None] * 3 + perm["P_c"][None, :]).reshape(-1)
    np.testing.assert_array_equal(q["dense/kernel"], p["dense/kernel"][rows])
    assert q["dense/kernel"].shape == (12, 5)
    x = rng.normal(size=(7, 4, 2))
    np.testing.assert_allclose(_flatten_apply(q, x), _flatten_apply(p, x), rtol=1e-12)
    # a random permutation is a symmetry; its inverse undoes it; jax leaves work too
    r = random_permutations(1, FLATTEN_SPEC, p)
    back = apply_permutation(FLATTEN_SPEC, {n: np.argsort(v) for n, v in r.items()},
                             apply_permutation(FLATTEN_SPEC, r, p))
    for k in p:
        np.testing.assert_array_equal(back[k], p[k])
    jq = apply_permutation(FLATTEN_SPEC, perm, {k: jnp.asarray(v) for k, v in p.items()})
    np.testing.assert_allclose(np.asarray(jq["dense/kernel"]), q["dense/kernel"], rtol=1e-6)


def test_views_with_matching_and_batch_axes():
    from symlib.symmetry import apply_permutation_many, weight_matching, weight_matching_many

    rng = np.random.default_rng(1)
    a = _flatten_net(rng)
    planted = random_permutations(2, FLATTEN_SPEC, a)
    b = apply_permutation(FLATTEN_SPEC, planted, a)
    res = weight_matching(0, FLATTEN_SPEC, a, b)
    back = apply_permutation(FLATTEN_SPEC, res.perms, b)
    for k in a:
        np.testing.assert_array_equal(back[k], a[k])
    stack = {k: np.stack([b[k], a[k]]) for k in a}
    many = weight_matching_many(0, FLATTEN_SPEC, a, stack)
    aligned = apply_permutation_many(FLATTEN_SPEC, many.perms, stack)
    for k in a:
        np.testing.assert_array_equal(aligned[k], np.stack([a[k], a[k]]))
    batched = apply_permutation(FLATTEN_SPEC, planted, stack, batch_dims=1)
    np.testing.assert_array_equal(batched["dense/kernel"][1], b["dense/kernel"])


def test_views_are_checked():
    axes = dict(FLATTEN_SPEC.axes)
    with pytest.raises(ValueError, match="not a parameter of the spec"):
        PermutationSpec(axes, views={"nope/kernel": (4, 3, 5)})
    with pytest.raises(ValueError, match="has 2 axes but axes"):
        PermutationSpec(axes, views={"dense/kernel": (12, 5)})
    with pytest.raises(ValueError, match="positive ints"):
        PermutationSpec(axes, views={"dense/kernel": (4, 0, 5)})
    p = _flatten_net(np.random.default_rng(0))
    p["dense/kernel"] = np.zeros((10, 5))
    with pytest.raises(ValueError, match=r"'dense/kernel' has shape \(10, 5\), which the spec views as \(4, 3, 5\)"):
        check_spec(FLATTEN_SPEC, p)


def test_views_with_wasserstein_alignment():
    from symlib.symmetry import apply_alignment, composite_spec, wasserstein_alignment

    rng = np.random.default_rng(3)
    mu = _flatten_net(rng)
    sigma = {k: np.exp(rng.normal(size=v.shape) - 2) for k, v in mu.items()}
    assert composite_spec(FLATTEN_SPEC, ["mu", "sigma"]).views == {"mu/dense/kernel": (4, 3, 5),
                                                                   "sigma/dense/kernel": (4, 3, 5)}
    planted = random_permutations(4, FLATTEN_SPEC, mu)
    q1 = apply_alignment(FLATTEN_SPEC, planted, (mu, sigma))
    res = wasserstein_alignment(0, FLATTEN_SPEC, (mu, sigma), q1)
    m2, s2 = apply_alignment(FLATTEN_SPEC, res.perms, q1)
    for k in mu:
        np.testing.assert_array_equal(m2[k], mu[k])
        np.testing.assert_array_equal(s2[k], sigma[k])


def _concat_spec():
    """Branches a (3 units) and b (4 units) concatenated into a dense layer of 5 units."""
    return PermutationSpec(
        {"a/kernel": (None, "Pa"), "b/kernel": (None, "Pb"), "c/kernel[0:3]": ("Pa", "Pc"),
         "c/kernel[3:7]": ("Pb", "Pc"), "c/bias": ("Pc",), "d/kernel": ("Pc", None)},
        parts={"c/kernel": (0, (3, 4))})


def _concat_params(rng):
    return {"a": {"kernel": rng.normal(size=(2, 3))}, "b": {"kernel": rng.normal(size=(2, 4))},
            "c": {"kernel": rng.normal(size=(7, 5)), "bias": rng.normal(size=5)},
            "d": {"kernel": rng.normal(size=(5, 1))}}


def _concat_apply(p, x):
    h = jnp.concatenate([jax.nn.relu(x @ p["a"]["kernel"]), jax.nn.relu(x @ p["b"]["kernel"])], axis=-1)
    return jax.nn.relu(h @ p["c"]["kernel"] + p["c"]["bias"]) @ p["d"]["kernel"]


def test_parts_cut_a_parameter_and_keep_the_function():
    from symlib.symmetry import join_parts, split_parts

    spec, rng = _concat_spec(), np.random.default_rng(0)
    params = _concat_params(rng)
    assert spec.stored_paths == ["a/kernel", "b/kernel", "c/kernel", "c/bias", "d/kernel"]
    assert check_spec(spec, params) == {"Pa": 3, "Pb": 4, "Pc": 5}
    flat = flatten_params(params)
    cut = split_parts(spec, flat)
    assert list(cut) == ["a/kernel", "b/kernel", "c/kernel[0:3]", "c/kernel[3:7]", "c/bias", "d/kernel"]
    np.testing.assert_array_equal(cut["c/kernel[3:7]"], flat["c/kernel"][3:])
    assert list(join_parts(spec, cut)) == list(flat)
    np.testing.assert_array_equal(join_parts(spec, cut)["c/kernel"], flat["c/kernel"])
    perms = {"Pa": np.array([2, 0, 1]), "Pb": np.array([3, 1, 0, 2]), "Pc": np.arange(5)}
    moved = apply_permutation(spec, perms, params)
    np.testing.assert_array_equal(moved["c"]["kernel"], flat["c/kernel"][[2, 0, 1, 6, 4, 3, 5]])
    x = rng.normal(size=(6, 2))
    np.testing.assert_allclose(_concat_apply(moved, x), _concat_apply(params, x), rtol=1e-6, atol=1e-6)
    assert check_spec_invariance(spec, params, _concat_apply, x) < 1e-5
    # a stack of networks (batch_dims), and traced permutations under jit
    stack = jax.tree.map(lambda v: np.stack([v, 2 * v]), params)
    moved_stack = apply_permutation(spec, perms, stack, batch_dims=1)
    np.testing.assert_array_equal(moved_stack["c"]["kernel"][1], 2 * moved["c"]["kernel"])
    jitted = jax.jit(lambda p, q: apply_permutation(spec, q, p))(params, perms)
    np.testing.assert_allclose(np.asarray(jitted["c"]["kernel"]), moved["c"]["kernel"])


def test_parts_are_checked():
    axes = {"c/kernel[0:3]": ("Pa", None), "c/kernel[3:7]": ("Pb", None)}
    with pytest.raises(ValueError, match=r"the spec must name its parts, not 'c/kernel'"):
        PermutationSpec({**axes, "c/kernel": (None, None)}, parts={"c/kernel": (0, (3, 4))})
    with pytest.raises(ValueError, match=r"axes has no entry for \['c/kernel\[3:6\]'\]"):
        PermutationSpec(axes, parts={"c/kernel": (0, (3, 3))})
    with pytest.raises(ValueError, match="two or more positive lengths"):
        PermutationSpec(axes, parts={"c/kernel": (0, (7,))})
    with pytest.raises(ValueError, match="cannot also have a view"):
        PermutationSpec(axes, views={"c/kernel[0:3]": (3, 1)}, parts={"c/kernel": (0, (3, 4))})
    spec, params = _concat_spec(), _concat_params(np.random.default_rng(1))
    params["c"]["kernel"] = np.zeros((8, 5))
    with pytest.raises(ValueError, match=r"'c/kernel' has shape \(8, 5\); the spec cuts axis 0 into parts of "
                                         r"lengths \[3, 4\], 7 in all"):
        check_spec(spec, params)
    del params["c"]["kernel"]
    with pytest.raises(ValueError, match=r"\['c/kernel'\] are in the spec but missing from params"):
        check_spec(spec, params)
