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
