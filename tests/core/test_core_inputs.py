"""symlib.core: file modes of atomic_write, bfloat16 in the finite checks, list labels in the
losses, process_rows' range check, the removed check_mlp_data, resnet18_init's references."""
import os
import re
import stat

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symlib.core
from symlib.core import checks, distributed, losses, models, resnet
from symlib.core.io import atomic_write


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_atomic_write_gives_a_new_file_the_mode_of_a_plain_open(tmp_path):
    old = os.umask(0o027)
    try:
        plain = tmp_path / "plain.bin"
        with open(plain, "wb") as f:
            f.write(b"x")
        atomic_write(tmp_path / "atomic.bin", lambda f: f.write(b"x"))
    finally:
        os.umask(old)
    assert _mode(plain) == 0o640
    assert _mode(tmp_path / "atomic.bin") == _mode(plain)


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "x.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o604)
    atomic_write(target, lambda f: f.write(b"new"))
    assert target.read_bytes() == b"new" and _mode(target) == 0o604


def test_check_finite_catches_nan_and_inf_in_bfloat16():
    bad = jnp.array([1.0, jnp.nan, jnp.inf], jnp.bfloat16)
    with pytest.raises(ValueError, match=r"w contains NaN or inf \(2 of 3 entries\)"):
        checks.check_finite(bad, "w")
    with pytest.raises(ValueError, match=r"params\['a'\] contains NaN or inf"):
        checks.check_finite_tree({"a": bad, "b": jnp.ones(2, jnp.bfloat16)}, "params")
    checks.check_finite(jnp.ones(3, jnp.bfloat16), "w")  # finite bfloat16 passes


def test_losses_take_list_labels():
    logits = np.array([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0], [1.0, 2.0, 0.0]], np.float32)
    labels = [0, 1, 0, 0]
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))  # independent log-softmax
    expected_nll = -np.mean([logp[i, c] for i, c in enumerate(labels)])
    assert float(losses.nll(jnp.asarray(logits), labels)) == pytest.approx(expected_nll, rel=1e-6)
    assert float(losses.accuracy(jnp.asarray(logits), labels)) == pytest.approx(0.5)  # rows 0 and 1 right
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\)"):
        losses.nll(jnp.asarray(logits), [0, 1, 3, 0])


@pytest.mark.parametrize("index, count", [(5, 2), (2, 2), (-1, 2), (0, 0)])
def test_process_rows_rejects_an_index_outside_the_processes(index, count):
    with pytest.raises(ValueError, match="process_"):
        distributed.process_rows(10, process_index=index, process_count=count)


def test_process_rows_blocks_cover_every_row_once():
    rows = [distributed.process_rows(11, p, 4) for p in range(4)]
    assert np.concatenate([np.arange(11)[r] for r in rows]).tolist() == list(range(11))


def test_check_mlp_data_is_gone():
    assert "check_mlp_data" not in symlib.core.__all__
    assert not hasattr(models, "check_mlp_data")


def test_resnet18_init_doc_points_to_the_training_mode_functions():
    doc = resnet.resnet18_init.__doc__
    refs = set(re.findall(r":func:`(\w+)`", doc))
    assert {"resnet18_apply_train", "resnet18_running_statistics", "resnet18_features"} <= refs
    assert all(callable(getattr(resnet, name, None)) for name in refs)
    assert "out of scope" not in doc
    params = resnet.resnet18_init(jax.random.key(0), num_classes=3, base_width=4)
    assert resnet.resnet18_features(params, jnp.ones((2, 8, 8, 3)), train=True).shape == (2, 32)


def test_atomic_write_writes_through_a_symlink_and_takes_a_string(tmp_path):
    """A symlinked file was replaced by a regular one (the target kept the old bytes), and a
    str path failed with AttributeError."""
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write(str(link), lambda f: f.write(b"new"))
    assert link.is_symlink() and target.read_text() == "new" and link.read_text() == "new"


def test_an_mlp_refuses_a_stack_of_networks():
    """Four stacked networks on four examples: network i's bias was added to example i of every
    network, with no error (max difference 5 from the vmapped logits)."""
    from symlib.core.models import mlp_apply, mlp_hidden, mlp_init

    stack = jax.vmap(lambda k: mlp_init(k, [3, 5, 2]))(jax.random.split(jax.random.key(0), 4))
    x = jnp.ones((4, 3))
    for fn in (mlp_apply, mlp_hidden):
        with pytest.raises(ValueError, match="3-D kernel and a 2-D bias.*jax.vmap"):
            fn(stack, x)
    assert jax.vmap(mlp_apply, in_axes=(0, None))(stack, x).shape == (4, 4, 2)


def test_xla_convolutions_take_low_precision_and_integer_images():
    """conv='xla' and the ResNets raised TypeError on bfloat16 images (lax's one dtype), while
    OptuNet's default convolutions promoted them."""
    from symlib.core.cnn import conv2d

    rng = np.random.default_rng(0)
    x, k = rng.normal(size=(2, 6, 6, 2)), rng.normal(size=(3, 3, 2, 4)).astype(np.float32)
    ref = conv2d(jnp.asarray(x, jnp.float32), jnp.asarray(k), impl="xla")
    for dtype in (jnp.bfloat16, jnp.float16):
        out = conv2d(jnp.asarray(x, dtype), jnp.asarray(k), impl="xla")
        assert out.dtype == jnp.float32
        np.testing.assert_allclose(out, conv2d(jnp.asarray(x, dtype), jnp.asarray(k), impl="patches"), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(out, ref, rtol=0.05, atol=0.1)


def test_raw_pixels_are_refused_by_standardize_and_warned_about_by_optunet():
    from symlib.core.cnn import optunet_apply, optunet_init
    from symlib.data.splits import standardize

    raw = np.full((2, 28, 28, 1), 200, np.uint8)
    with pytest.raises(ValueError, match="raw uint8 pixels"):
        standardize(raw, "mnist")
    with pytest.warns(UserWarning, match="uint8 values"):
        optunet_apply(optunet_init(jax.random.key(0)), raw)
