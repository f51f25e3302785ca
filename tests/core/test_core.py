"""symlib.core: input checks, pytree helpers, atomic writes and the progress bar."""
import io
import os
import stat
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core import checks, progress, pytree
from symlib.core.io import atomic_write
from symlib.core.models import mlp_init


@pytest.mark.parametrize("value", [0, -3, 1.5, True, "2", None])
def test_positive_int_rejects_and_names_the_input(value):
    with pytest.raises(ValueError, match=r"num_chains must be a positive integer, got"):
        checks.positive_int(value, "num_chains")


def test_positive_int_accepts_numpy_ints_and_optional_none():
    assert checks.positive_int(np.int64(4), "n") == 4 and type(checks.positive_int(np.int64(4), "n")) is int
    assert checks.positive_int(None, "n", allow_none=True) is None
    with pytest.raises(ValueError, match="positive integer or None"):
        checks.positive_int(0, "n", allow_none=True)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "x", [1.0], True])
def test_positive_float_rejects(value):
    with pytest.raises(ValueError, match="prior_std must be a positive finite number"):
        checks.positive_float(value, "prior_std")
    assert checks.positive_float(np.float32(0.5), "prior_std") == 0.5


def test_check_finite_names_leaf_and_counts():
    tree = {"dense_0": {"kernel": np.ones((2, 2)), "bias": np.array([0.0, np.nan])}}
    with pytest.raises(ValueError, match=r"params\['dense_0'\]\['bias'\] contains NaN or inf \(1 of 2 entries\)"):
        checks.check_finite_tree(tree, "params")
    checks.check_finite(np.array([1, 2]), "labels")  # integers always pass
    checks.check_finite_tree({"a": jnp.ones(3)}, "params")


def test_check_labels():
    assert checks.check_labels(np.array([0, 9]), 10).tolist() == [0, 9]
    with pytest.raises(ValueError, match=r"y_train must lie in \[0, 10\) for 10 classes, got values in \[0, 10\]"):
        checks.check_labels(np.array([0, 10]), 10, "y_train")
    with pytest.raises(ValueError, match="must be integer class indices"):
        checks.check_labels(np.array([0.0, 1.0]), 10)


def test_mlp_init_is_he_normal_drawn_in_each_kernels_shape():
    """The flat draws reshaped (what compiles fast) are the numbers of a draw in the
    kernel's own shape, one key per layer, eagerly, under vmap and under jit."""
    sizes = [5, 7, 3]
    keys = jax.random.split(jax.random.key(4), 2)
    want = [np.sqrt(2.0 / d_in) * jax.random.normal(k, (d_in, d_out), jnp.float32)
            for k, d_in, d_out in zip(keys, sizes[:-1], sizes[1:])]
    jitted = jax.jit(mlp_init, static_argnums=1)(jax.random.key(4), tuple(sizes))
    # compiled as one program the multiplication is fused into the draw (last bits differ
    # from op by op), the same way whether the draw is shaped or flat
    want_jit = jax.jit(lambda ks: [np.sqrt(2.0 / d_in) * jax.random.normal(k, (d_in, d_out), jnp.float32)
                                   for k, d_in, d_out in zip(ks, sizes[:-1], sizes[1:])])(keys)
    for layer, expected, expected_jit in zip(("dense_0", "dense_1"), want, want_jit):
        np.testing.assert_array_equal(mlp_init(jax.random.key(4), sizes)[layer]["kernel"], expected)
        np.testing.assert_array_equal(jitted[layer]["kernel"], expected_jit)
        np.testing.assert_array_equal(mlp_init(jax.random.key(4), sizes)[layer]["bias"], np.zeros(expected.shape[1]))
    two = jax.random.split(jax.random.key(9), 2)
    stacked = jax.vmap(lambda k: mlp_init(k, sizes))(two)
    for i in range(2):
        for a, b in zip(jax.tree_util.tree_leaves(mlp_init(two[i], sizes)), jax.tree_util.tree_leaves(stacked)):
            np.testing.assert_array_equal(a, b[i])


def test_mlp_layer_names():
    params = mlp_init(jax.random.key(0), [3, 4, 2])
    assert checks.mlp_layer_names(params) == ["dense_0", "dense_1"]
    with pytest.raises(ValueError, match=r"layers dense_0..dense_1, got \['dense_0', 'dense_2'\]"):
        checks.mlp_layer_names({"dense_0": params["dense_0"], "dense_2": params["dense_1"]})
    with pytest.raises(ValueError, match=r"params\['dense_1'\] must hold exactly 'kernel' and 'bias'"):
        checks.mlp_layer_names({"dense_0": params["dense_0"], "dense_1": {"kernel": 1}})
    with pytest.raises(TypeError, match="must be a dict of layers"):
        checks.mlp_layer_names([1, 2])


def test_flatten_roundtrip_and_errors():
    tree = {"a": {"b": 1, "c": {"d": 2}}, "e": 3}
    flat = pytree.flatten_dict(tree)
    assert flat == {"a/b": 1, "a/c/d": 2, "e": 3}
    assert pytree.unflatten_dict(flat) == tree
    assert pytree.flatten_dict({"a/b": 1}) == {"a/b": 1}  # already flat
    with pytest.raises(ValueError, match="'a/b' occurs twice"):
        pytree.flatten_dict({"a/b": 1, "a": {"b": 2}})
    with pytest.raises(ValueError, match="'a' is both a leaf and a prefix of 'a/b'"):
        pytree.unflatten_dict({"a": 1, "a/b": 2})
    with pytest.raises(ValueError, match="empty component"):
        pytree.unflatten_dict({"a//b": 1})
    with pytest.raises(TypeError, match="non-empty strings"):
        pytree.flatten_dict({1: 2})


def test_vector_roundtrip_keeps_float64():
    tree = {"w": np.arange(6, dtype=np.float64).reshape(2, 3) + 1e-12, "b": np.ones(2)}
    vec = pytree.tree_to_vector(tree)
    assert vec.dtype == np.float64 and vec.shape == (8,)
    back = pytree.vector_to_tree(vec, tree)
    np.testing.assert_array_equal(back["w"], tree["w"])
    with pytest.raises(ValueError, match=r"vec must have shape \(8,\)"):
        pytree.vector_to_tree(vec[:-1], tree)
    flat, unravel = pytree.ravel({"a": jnp.ones(2), "b": jnp.zeros(3)})
    assert flat.shape == (5,) and unravel(flat)["b"].shape == (3,)


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "sub" / "x.bin"
    atomic_write(target, lambda f: f.write(b"abc"))
    assert target.read_bytes() == b"abc"

    def broken(f):
        f.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_bytes() == b"abc"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.bin"]


@pytest.mark.skipif(os.name != "posix", reason="folders are fsynced on POSIX only")
def test_atomic_write_fsyncs_the_file_and_then_its_folder(tmp_path, monkeypatch):
    """The rename is durable too: after the file's data, its folder is fsynced."""
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(stat.S_ISDIR(os.fstat(fd).st_mode)), real_fsync(fd)))
    atomic_write(tmp_path / "x.bin", lambda f: f.write(b"abc"))
    assert synced == [False, True]


def test_progress_bar_only_when_enabled(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    assert progress.progress_enabled(None) is False  # not a terminal
    bar = progress.progress_bar(3, "hmc")
    bar.update(3)
    bar.close()
    assert buf.getvalue() == ""
    bar = progress.progress_bar(3, "hmc", enabled=True)
    bar.update(3)
    bar.close()
    assert "hmc" in buf.getvalue() and "3/3" in buf.getvalue()


def test_noise_is_one_flat_draw_cut_into_leaves():
    from symlib.core import noise

    like = {"dense_0": {"kernel": jnp.zeros((3, 4)), "bias": jnp.zeros(4)}, "dense_1": {"kernel": jnp.zeros((4, 2)),
                                                                                      "bias": jnp.zeros(2)}}
    key = jax.random.key(0)
    assert noise.num_params(like) == 3 * 4 + 4 + 4 * 2 + 2
    flat = noise.normal_vector(key, like)
    eps = noise.standard_normal_like(key, like)
    np.testing.assert_array_equal(np.asarray(pytree.tree_to_vector(eps, np.float32)), np.asarray(flat))
    assert noise.normal_vector(key, like, 3).shape == (3, noise.num_params(like))
    sigma = jax.tree_util.tree_map(lambda a: jnp.full(a.shape, 2.0), like)
    mu = jax.tree_util.tree_map(lambda a: a + 1.0, like)
    draw = noise.perturb(mu, sigma, eps)
    np.testing.assert_allclose(np.asarray(draw["dense_1"]["bias"]), 1.0 + 2.0 * np.asarray(eps["dense_1"]["bias"]))


def test_mlp_layout_check_names_the_width_and_returns_the_classes():
    from symlib.core.models import check_mlp_layout, layout_check, mlp_apply

    params = mlp_init(jax.random.key(0), [4, 3, 2])
    assert layout_check(mlp_apply) is check_mlp_layout
    assert check_mlp_layout(params, (4,)) == 2
    stack = jax.tree_util.tree_map(lambda a: jnp.stack([a, a, a]), params)
    assert check_mlp_layout(stack, (4,), "samples", batch_dims=1) == 2
    with pytest.raises(ValueError, match="x has 5 features but the network's input width is 4"):
        check_mlp_layout(params, (5,))
    with pytest.raises(ValueError, match=r"the MLP takes x of shape \(n, features\), got examples of shape \(2, 2\)"):
        check_mlp_layout(params, (2, 2))
    with pytest.raises(ValueError, match=r"samples\['dense_0'\] must hold a kernel with 3 axes"):
        check_mlp_layout(params, (4,), "samples", batch_dims=1)


def test_layout_checks_are_looked_up_by_apply_fn():
    from symlib.core.models import _LAYOUT_CHECKS, layout_check, register_layout_check

    def apply(params, x):
        return x @ params["w"]

    def check(params, example_shape, name, batch_dims):
        raise ValueError(f"{name} do not take {example_shape}")

    assert layout_check(apply) is None and layout_check(None) is None
    with pytest.raises(TypeError, match="two callables"):
        register_layout_check(apply, "not a check")
    register_layout_check(apply, check)
    try:
        assert layout_check(apply) is check
    finally:
        del _LAYOUT_CHECKS[apply]
    assert layout_check(apply) is None
