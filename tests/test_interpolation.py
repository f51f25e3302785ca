import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.evaluation.interpolation import barrier, interpolate, interpolation_curve, loss_barrier
from symlib.core.models import mlp_apply, mlp_init
from symlib.evaluation.metrics import nll


def test_interpolate_endpoints_and_midpoint():
    a, b = mlp_init(jax.random.key(0), [4, 5, 3]), mlp_init(jax.random.key(1), [4, 5, 3])
    jax.tree_util.tree_map(np.testing.assert_allclose, interpolate(a, b, 0.0), a)
    jax.tree_util.tree_map(np.testing.assert_allclose, interpolate(a, b, 1.0), b)
    mid = interpolate(a, b, 0.5)
    np.testing.assert_allclose(mid["dense_0"]["kernel"], (a["dense_0"]["kernel"] + b["dense_0"]["kernel"]) / 2)


def test_curve_matches_direct_evaluation():
    a, b = mlp_init(jax.random.key(0), [6, 8, 3]), mlp_init(jax.random.key(1), [6, 8, 3])
    x = jax.random.normal(jax.random.key(2), (50, 6))
    y = jax.random.randint(jax.random.key(3), (50,), 0, 3)
    curve = interpolation_curve(a, b, x, y, [0.0, 0.3, 1.0])
    direct = [float(nll(mlp_apply(interpolate(a, b, t), x), y)) for t in (0.0, 0.3, 1.0)]
    np.testing.assert_allclose(curve["loss"], direct, rtol=1e-5)
    assert curve["accuracy"].shape == (3,) and np.all((curve["accuracy"] >= 0) & (curve["accuracy"] <= 1))


def test_barrier_definition():
    assert loss_barrier([0, 0.5, 1], [1.0, 3.0, 2.0]) == pytest.approx(1.5)
    # a convex path has barrier 0 (max at an endpoint minus their mean = half the gap)
    assert loss_barrier([0, 0.5, 1], [1.0, 1.0, 1.0]) == 0.0


def test_barrier_of_identical_networks_is_zero():
    a = mlp_init(jax.random.key(0), [6, 8, 3])
    x = jax.random.normal(jax.random.key(2), (20, 6))
    y = jnp.zeros(20, jnp.int32)
    assert abs(barrier(a, a, x, y, 5)) < 1e-6


def test_barrier_errors():
    with pytest.raises(ValueError, match="lambda=0"):
        loss_barrier([0.1, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        loss_barrier([0, 0.5, 1], [1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="equal length"):
        loss_barrier([0, 1], [1.0])
