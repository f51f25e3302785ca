import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.models import mlp_apply, mlp_init, mlp_sizes
from symlib.training import TrainConfig, fit_map, fit_map_many, train_mlp


def _toy(n=256, d=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w = rng.normal(size=(d, 3))
    y = np.argmax(x @ w, axis=1).astype(np.int32)
    return jnp.asarray(x), jnp.asarray(y)


CFG = TrainConfig(epochs=30, batch_size=32, learning_rate=3e-3, prior_std=1.0)


def test_mlp_init_shapes_and_errors():
    params = mlp_init(jax.random.key(0), [5, 7, 4, 3])
    assert mlp_sizes(params) == [5, 7, 4, 3]
    assert mlp_apply(params, jnp.ones((2, 5))).shape == (2, 3)
    with pytest.raises(ValueError, match="sizes"):
        mlp_init(jax.random.key(0), [5])


def test_training_learns_and_is_deterministic():
    x, y = _toy()
    p1, l1 = train_mlp(jax.random.key(0), [12, 16, 3], x, y, CFG)
    p2, l2 = train_mlp(jax.random.key(0), [12, 16, 3], x, y, CFG)
    np.testing.assert_array_equal(l1, l2)
    jax.tree_util.tree_map(np.testing.assert_array_equal, p1, p2)
    assert l1[-1] < 0.6 * l1[0]
    acc = float(jnp.mean(jnp.argmax(mlp_apply(p1, x), 1) == y))
    assert acc > 0.85


def test_data_key_changes_minibatch_order_only():
    x, y = _toy()
    p0 = mlp_init(jax.random.key(3), [12, 16, 3])
    a, la = fit_map(p0, jax.random.key(1), x, y, CFG)
    b, lb = fit_map(p0, jax.random.key(2), x, y, CFG)
    assert not np.allclose(la, lb)


def test_many_at_once_equals_one_by_one():
    x, y = _toy()
    inits = [mlp_init(jax.random.key(i), [12, 8, 3]) for i in range(3)]
    keys = jax.random.split(jax.random.key(9), 3)
    stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *inits)
    many, losses = fit_map_many(stacked, keys, x, y, CFG)
    for i in range(3):
        one, l1 = fit_map(inits[i], keys[i], x, y, CFG)
        np.testing.assert_allclose(losses[i], l1, rtol=2e-5, atol=1e-6)
        jax.tree_util.tree_map(lambda s, o: np.testing.assert_allclose(s[i], o, rtol=1e-4, atol=1e-5), many, one)


def test_bad_inputs_named():
    x, y = _toy()
    with pytest.raises(ValueError, match="batch_size"):
        train_mlp(jax.random.key(0), [12, 4, 3], x, y, CFG._replace(batch_size=10_000))
    with pytest.raises(ValueError, match=r"\(n,\)"):
        train_mlp(jax.random.key(0), [12, 4, 3], x, y[:10], CFG)


def test_progress_lines_only_when_asked(capfd):
    x, y = _toy()
    p0 = mlp_init(jax.random.key(3), [12, 4, 3])
    fit_map(p0, jax.random.key(1), x, y, CFG._replace(epochs=2), progress=True)
    jax.effects_barrier()
    assert "epoch 2/2: objective" in capfd.readouterr().err
    fit_map(p0, jax.random.key(1), x, y, CFG._replace(epochs=2))
    jax.effects_barrier()
    assert "epoch" not in capfd.readouterr().err
