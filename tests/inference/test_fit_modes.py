"""fit_modes: one posterior around each of several networks, all in one compiled loop (the
multi-mode methods of Laurent et al.), equal to fitting each mode alone."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from _helpers import assert_tree_close, stack_trees
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import (Data, LaplaceConfig, Model, NonFiniteFitError, SWAGConfig, VIConfig, fit_modes,
                              fit_swag, fit_vi, sample)

SIZES = (6, 12, 3)
MLP = Model(mlp_apply)
VI = VIConfig(epochs=3, batch_size=16, optimizer=optax.adam(1e-2), num_mc=2, std_init=1e-2)
SWAG = SWAGConfig(epochs=5, batch_size=16, optimizer=optax.sgd(0.05), num_snapshots=4, rank=3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, SIZES[0])).astype(np.float32)
    return Data(jnp.asarray(x), jnp.asarray(np.argmax(x[:, :3], axis=1).astype(np.int32)))


@pytest.fixture(scope="module")
def modes():
    return jax.vmap(lambda k: mlp_init(k, SIZES))(jax.random.split(jax.random.key(0), 3))


def _mode(stack, m):
    return jax.tree_util.tree_map(lambda a: a[m], stack)


@pytest.mark.parametrize("fit, config", [(fit_vi, VI), (fit_swag, SWAG)], ids=["vi", "swag"])
def test_each_mode_is_the_fit_of_that_mode_alone(fit, config, data, modes):
    key = jax.random.key(3)
    posts = fit_modes(key, modes, MLP, data, config)
    assert len(posts) == 3
    for m, (post, k) in enumerate(zip(posts, jax.random.split(key, 3))):
        alone = fit(k, _mode(modes, m), MLP, data, config)
        assert type(post) is type(alone)
        for u, v in zip(jax.tree_util.tree_leaves(post), jax.tree_util.tree_leaves(alone)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-6, err_msg=f"mode {m}")
    # the modes are fitted apart: different starts, different posteriors
    assert not np.allclose(np.asarray(posts[0].mean["dense_0"]["kernel"]), np.asarray(posts[1].mean["dense_0"]["kernel"]))
    assert sample(jax.random.key(4), posts[2], 5)["dense_1"]["bias"].shape == (5, SIZES[-1])


def test_the_result_does_not_depend_on_the_order_of_the_params_keys(data, modes):
    reordered = {k: {n: modes[k][n] for n in reversed(list(modes[k]))} for k in reversed(list(modes))}
    a = fit_modes(jax.random.key(5), modes, MLP, data, VI)
    b = fit_modes(jax.random.key(5), reordered, MLP, data, VI)
    for p, q in zip(a, b):
        assert_tree_close(p.mean, q.mean, rtol=0, atol=0)
        assert_tree_close(p.std, q.std, rtol=0, atol=0)


def test_a_config_without_a_batched_loop_is_named(data, modes):
    with pytest.raises(TypeError, match="fit_modes has no batched loop for a LaplaceConfig"):
        fit_modes(jax.random.key(0), modes, MLP, data, LaplaceConfig(prior_precision=1.0))


def test_modes_that_are_not_a_stack_are_named(data):
    one = mlp_init(jax.random.key(0), SIZES)
    with pytest.raises(ValueError, match="modes must be stacked: the leaves disagree on the leading axis"):
        fit_modes(jax.random.key(0), one, MLP, data, VI)
    with pytest.raises(ValueError, match="modes holds no arrays"):
        fit_modes(jax.random.key(0), {}, MLP, data, VI)


def test_a_bad_key_and_a_python_loop_are_named(data, modes):
    with pytest.raises(ValueError, match="key"):
        fit_modes(np.zeros(3), modes, MLP, data, VI)
    with pytest.raises(ValueError, match="fitting modes at once needs loop='scan'"):
        fit_modes(jax.random.key(0), modes, MLP, data, VI._replace(loop="python"))


def test_a_mode_with_nan_is_named_before_any_work(data, modes):
    bad = jax.tree_util.tree_map(lambda a: a.at[1].set(jnp.nan), modes)
    with pytest.raises(ValueError, match="params0"):
        fit_modes(jax.random.key(0), bad, MLP, data, SWAG)


@pytest.mark.parametrize("config", [VI._replace(optimizer=optax.sgd(1e12)), SWAG._replace(optimizer=optax.sgd(1e12))],
                         ids=["vi", "swag"])
def test_a_diverging_mode_stops_with_its_index(config, data, modes):
    with pytest.raises(NonFiniteFitError, match=r"fit_modes \((VI|SWAG), mode 0\).*lower the learning rate"):
        fit_modes(jax.random.key(0), modes, MLP, data, config)


def test_stacks_made_with_numpy_work_alike(data, modes):
    stacked = stack_trees([_mode(modes, m) for m in range(3)])
    a = fit_modes(jax.random.key(6), modes, MLP, data, SWAG)
    b = fit_modes(jax.random.key(6), stacked, MLP, data, SWAG)
    for p, q in zip(a, b):
        assert_tree_close(p.mean, q.mean, rtol=1e-6, atol=1e-7)
