import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from symlib.core.models import mlp_apply, mlp_init, mlp_sizes
from symlib.inference import Data, Model, PointEstimate, Samples, fit_ensemble, fit_map
from symlib.inference.training import TrainConfig, _fit, _train_map, _train_map_many, evaluate

MLP = Model(mlp_apply)


def _toy(n=256, d=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w = rng.normal(size=(d, 3))
    y = np.argmax(x @ w, axis=1).astype(np.int32)
    return jnp.asarray(x), jnp.asarray(y)


CFG = TrainConfig(epochs=30, batch_size=32, optimizer=optax.adam(3e-3), prior_std=1.0)


def _fit_mlp(key, sizes, x, y, cfg):
    """An MLP initialised and trained from one key: ``init_key, data_key = split(key)``, then
    :func:`fit_map` from ``mlp_init(init_key, sizes)`` with ``data_key``; ``(params, epoch losses)``."""
    init_key, data_key = jax.random.split(key)
    post = fit_map(data_key, mlp_init(init_key, sizes), MLP, Data(x, y), cfg)
    assert isinstance(post, PointEstimate) and set(post.info) == {"epoch_loss"}
    return post.params, post.info["epoch_loss"]


def test_mlp_init_shapes_and_errors():
    params = mlp_init(jax.random.key(0), [5, 7, 4, 3])
    assert mlp_sizes(params) == [5, 7, 4, 3]
    assert mlp_apply(params, jnp.ones((2, 5))).shape == (2, 3)
    with pytest.raises(ValueError, match="sizes"):
        mlp_init(jax.random.key(0), [5])


def test_training_learns_and_is_deterministic():
    x, y = _toy()
    p1, l1 = _fit_mlp(jax.random.key(0), [12, 16, 3], x, y, CFG)
    p2, l2 = _fit_mlp(jax.random.key(0), [12, 16, 3], x, y, CFG)
    np.testing.assert_array_equal(l1, l2)
    jax.tree_util.tree_map(np.testing.assert_array_equal, p1, p2)
    assert l1[-1] < 0.6 * l1[0]
    acc = float(jnp.mean(jnp.argmax(mlp_apply(p1, x), 1) == y))
    assert acc > 0.85


def test_data_key_changes_minibatch_order_only():
    x, y = _toy()
    p0 = mlp_init(jax.random.key(3), [12, 16, 3])
    la = fit_map(jax.random.key(1), p0, MLP, Data(x, y), CFG).info["epoch_loss"]
    lb = fit_map(jax.random.key(2), p0, MLP, Data(x, y), CFG).info["epoch_loss"]
    assert not np.allclose(la, lb)


def test_many_at_once_equals_one_by_one():
    x, y = _toy()
    inits = [mlp_init(jax.random.key(i), [12, 8, 3]) for i in range(3)]
    keys = jax.random.split(jax.random.key(9), 3)
    stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *inits)
    ens = fit_ensemble(keys, stacked, MLP, Data(x, y), CFG)  # a stack of keys: member i's data key is keys[i]
    assert isinstance(ens, Samples) and set(ens.info) == {"epoch_loss"}
    many, losses = ens.samples, ens.info["epoch_loss"]
    for i in range(3):
        single = fit_map(keys[i], inits[i], MLP, Data(x, y), CFG)
        one, l1 = single.params, single.info["epoch_loss"]
        np.testing.assert_allclose(losses[i], l1, rtol=2e-5, atol=1e-6)
        jax.tree_util.tree_map(lambda s, o: np.testing.assert_allclose(s[i], o, rtol=1e-4, atol=1e-5), many, one)


def test_bad_inputs_named():
    x, y = _toy()
    with pytest.raises(ValueError, match="batch_size"):
        _fit_mlp(jax.random.key(0), [12, 4, 3], x, y, CFG._replace(batch_size=10_000))
    with pytest.raises(ValueError, match=r"\(n,\)"):
        _fit_mlp(jax.random.key(0), [12, 4, 3], x, y[:10], CFG)


@pytest.mark.parametrize("fit", ["fit_map", "fit_ensemble", "fit_ensemble_one_key"])
def test_data_that_does_not_fit_the_network_is_named(fit):
    x, y = _toy(n=64)
    sizes = [12, 4, 3]

    def run(x, y, sizes=sizes, cfg=CFG._replace(epochs=1)):
        if fit == "fit_map":
            return fit_map(jax.random.key(1), mlp_init(jax.random.key(0), sizes), MLP, Data(x, y), cfg)
        stack = jax.vmap(lambda k: mlp_init(k, sizes))(jax.random.split(jax.random.key(0), 2))
        # one key per member, or one key that fit_ensemble splits into the members' keys
        key = jax.random.key(1) if fit == "fit_ensemble_one_key" else jax.random.split(jax.random.key(1), 2)
        return fit_ensemble(key, stack, MLP, Data(x, y), cfg)

    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\) for 3 classes, got values in \[1, 3\]"):
        run(x, y + 1)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\)"):
        run(x, y.at[0].set(-1))
    with pytest.raises(ValueError, match="y must be integer class indices"):
        run(x, y.astype(jnp.float32))
    with pytest.raises(ValueError, match="x has 12 features but the network's input width is 5"):
        run(x, y, sizes=[5, 4, 3])
    with pytest.raises(ValueError, match=r"x contains NaN or inf \(1 of 768 entries\)"):
        run(x.at[3, 4].set(jnp.nan), y)
    with pytest.raises(ValueError, match="prior_std must be a positive finite number"):
        run(x, y, cfg=CFG._replace(prior_std=0.0))
    with pytest.raises(ValueError, match="epochs must be a positive integer, got 0"):
        run(x, y, cfg=CFG._replace(epochs=0))
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 32.0"):
        run(x, y, cfg=CFG._replace(batch_size=32.0))
    for bad in (3e-3, "sgd", optax.sgd):  # a learning rate, a name, the factory uncalled
        with pytest.raises(TypeError, match="^optimizer must be an optax.GradientTransformation"):
            run(x, y, cfg=CFG._replace(optimizer=bad))


def test_bad_parameters_keys_and_config_are_named():
    x, y = _toy(n=64)
    p0 = mlp_init(jax.random.key(0), [12, 4, 3])
    cfg = CFG._replace(epochs=1)
    data = Data(x, y)
    with pytest.raises(ValueError, match="^key must be a jax.random key, got int"):  # the fit's own name for it
        fit_map(0, p0, MLP, data, cfg)
    with pytest.raises(ValueError, match=r"key must be a jax.random key, got PRNGKeyArray of shape \(2,\)"):
        fit_map(jax.random.split(jax.random.key(0), 2), p0, MLP, data, cfg)
    with pytest.raises(TypeError, match="config must be a TrainConfig, got dict"):
        fit_map(jax.random.key(1), p0, MLP, data, dict(cfg._asdict()))
    with pytest.raises(TypeError, match="cfg must be a TrainConfig, got dict"):  # the loop's own check
        _train_map(p0, jax.random.key(1), x, y, dict(cfg._asdict()), mlp_apply)
    broken = {"dense_0": p0["dense_0"], "dense_1": {"kernel": p0["dense_1"]["kernel"][:3], "bias": p0["dense_1"]["bias"]}}
    with pytest.raises(ValueError, match=r"params0\['dense_1'\]\['kernel'\] has 3 inputs but the layer before has 4"):
        fit_map(jax.random.key(1), broken, MLP, data, cfg)
    with pytest.raises(ValueError, match="MLP params0 must have layers dense_0..dense_1"):
        fit_map(jax.random.key(1), {"dense_0": p0["dense_0"], "layer_1": p0["dense_1"]}, MLP, data, cfg)
    stack = jax.vmap(lambda k: mlp_init(k, [12, 4, 3]))(jax.random.split(jax.random.key(0), 2))
    with pytest.raises(ValueError, match="key holds 3 member keys, but params0 holds 2 members"):
        fit_ensemble(jax.random.split(jax.random.key(1), 3), stack, MLP, data, cfg)
    with pytest.raises(ValueError, match="data_keys must be 2 jax.random keys stacked on a leading axis"):
        _train_map_many(stack, jax.random.split(jax.random.key(1), 3), x, y, cfg, mlp_apply)  # the loop's own check
    with pytest.raises(ValueError, match=r"params0\['dense_0'\] must hold a kernel with 3 axes"):
        fit_ensemble(jax.random.key(1), p0, MLP, data, cfg)  # one network where a stack is due
    with pytest.raises(ValueError, match="y must lie in"):
        evaluate(p0, x, y + 1, mlp_apply)


def test_progress_bar_only_when_asked(capfd):
    x, y = _toy()
    p0 = mlp_init(jax.random.key(3), [12, 4, 3])
    loud = fit_map(jax.random.key(1), p0, MLP, Data(x, y), CFG._replace(epochs=2), progress=True)
    err = capfd.readouterr().err
    assert "train: 100%" in err and "2/2" in err and "objective=" in err
    quiet = fit_map(jax.random.key(1), p0, MLP, Data(x, y), CFG._replace(epochs=2))
    jax.effects_barrier()
    assert "train" not in capfd.readouterr().err  # stderr is no terminal under pytest
    jax.tree_util.tree_map(np.testing.assert_array_equal, quiet, loud)  # the bar changes no number


def test_the_same_config_reuses_the_compiled_loop_and_a_new_optimizer_compiles_again():
    """An optax transformation is hashed by identity: the same config (or a copy holding the same
    transformation) reuses the compiled loop; a new optax.adam(...) call is a new static argument."""
    x, y = _toy(n=64)
    p0 = mlp_init(jax.random.key(0), [12, 4, 3])
    cfg = TrainConfig(epochs=1, batch_size=32, optimizer=optax.adam(1e-2))
    run = lambda c: fit_map(jax.random.key(1), p0, MLP, Data(x, y), c).params  # noqa: E731
    first = run(cfg)
    size = _fit._cache_size()
    again = run(cfg)
    same = run(TrainConfig(1, 32, cfg.optimizer))
    assert _fit._cache_size() == size
    fresh = run(cfg._replace(optimizer=optax.adam(1e-2)))
    assert _fit._cache_size() == size + 1
    for out in (again, same, fresh):  # the same numbers all the same
        jax.tree_util.tree_map(np.testing.assert_array_equal, out, first)


def test_prior_std_for_weight_decay_is_sgd_weight_decay():
    """Plain SGD on the MAP objective with prior_std_for_weight_decay(wd, N) takes the step
    of SGD on the mean cross-entropy plus wd * W (PyTorch-style weight decay)."""
    from symlib.evaluation.metrics import nll
    from symlib.inference.training import map_objective

    x, y = _toy(n=64)
    params = mlp_init(jax.random.key(3), [12, 5, 3])
    wd, n = 5e-4, x.shape[0]
    std = TrainConfig.prior_std_for_weight_decay(wd, n)
    g_map = jax.grad(map_objective)(params, x, y, n, std, mlp_apply)
    g_ce = jax.grad(lambda p: nll(mlp_apply(p, x), y))(params)
    jax.tree_util.tree_map(lambda a, b, w: np.testing.assert_allclose(a, b + wd * w, rtol=1e-5, atol=1e-8),
                           g_map, g_ce, params)
    with pytest.raises(ValueError, match="weight_decay"):
        TrainConfig.prior_std_for_weight_decay(0.0, n)


def test_fit_map_many_observers():
    from symlib.symmetry import mlp_permutation_spec, mlp_scaling_spec
    from symlib.symmetry.neuron_order import neuron_statistics

    x, y = _toy(n=128)
    cfg = TrainConfig(epochs=3, batch_size=32, optimizer=optax.sgd(optax.piecewise_constant_schedule(0.1, {4: 0.5})))
    inits = jax.vmap(lambda k: mlp_init(k, [12, 6, 3]))(jax.random.split(jax.random.key(0), 2))
    keys = jax.random.split(jax.random.key(1), 2)
    step_norm = lambda a, b: jnp.sum((a["dense_0"]["kernel"] - b["dense_0"]["kernel"]) ** 2)  # noqa: E731
    stat = lambda p: neuron_statistics(mlp_scaling_spec(1), mlp_permutation_spec(1), p)[0]  # noqa: E731
    ens = fit_ensemble(keys, inits, MLP, Data(x, y), cfg, observe=step_norm, observe_epoch=stat)
    params, losses, seen = ens.samples, ens.info["epoch_loss"], ens.info["observed"]
    assert set(seen) == {"step", "epoch"}
    assert seen["step"].shape == (2, 3, 4) and seen["epoch"].shape == (2, 3, 6)
    assert np.all(np.asarray(seen["step"]) > 0)
    for i in range(2):  # the last epoch's observation is of the returned parameters
        final = jax.tree_util.tree_map(lambda a: a[i], params)
        np.testing.assert_allclose(seen["epoch"][i, -1], stat(final), rtol=1e-6)
    # observers do not change training
    plain = fit_ensemble(keys, inits, MLP, Data(x, y), cfg)
    assert "observed" not in plain.info
    np.testing.assert_allclose(losses, plain.info["epoch_loss"], rtol=1e-6)


def test_random_flip_mirrors_some_images():
    from symlib.inference.training import random_flip

    x = jnp.arange(8 * 2 * 3 * 1, dtype=jnp.float32).reshape(8, 2, 3, 1)
    out = np.asarray(random_flip(jax.random.key(0), x))
    flipped = [np.array_equal(o, np.asarray(x[i])[:, ::-1]) for i, o in enumerate(out)]
    kept = [np.array_equal(o, np.asarray(x[i])) for i, o in enumerate(out)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)
