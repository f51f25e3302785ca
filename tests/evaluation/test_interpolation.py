"""Tests for symlib.evaluation.interpolation: straight paths between networks and the
marginalised loss along the W2 geodesic between mean-field posteriors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.evaluation.interpolation import (barrier, interpolate, interpolation_curve, loss_barrier, marginal_barrier,
                                             marginal_loss_curve, midpoint_barrier)
from symlib.evaluation.metrics import nll, nll_from_probs
from symlib.evaluation.predictive import predict_from_gaussian
from symlib.testing.reference import random_gaussian_posterior


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
    curve = interpolation_curve(a, b, x, y, [0.0, 0.3, 1.0], apply_fn=mlp_apply)
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
    assert abs(barrier(a, a, x, y, 5, apply_fn=mlp_apply)) < 1e-6


def test_barrier_errors():
    with pytest.raises(ValueError, match="lambda=0"):
        loss_barrier([0.1, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        loss_barrier([0, 0.5, 1], [1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="equal length"):
        loss_barrier([0, 1], [1.0])


def test_curve_errors_name_the_input():
    a, b = mlp_init(jax.random.key(0), [6, 8, 3]), mlp_init(jax.random.key(1), [6, 8, 3])
    x = jax.random.normal(jax.random.key(2), (20, 6))
    y = jax.random.randint(jax.random.key(3), (20,), 0, 3)
    nan_b = {**b, "dense_1": {**b["dense_1"], "bias": b["dense_1"]["bias"].at[1].set(jnp.nan)}}
    with pytest.raises(ValueError, match=r"params_1\['dense_1'\]\['bias'\] contains NaN or inf"):
        interpolation_curve(a, nan_b, x, y, 3, apply_fn=mlp_apply)
    inf_a = {**a, "dense_0": {**a["dense_0"], "kernel": a["dense_0"]["kernel"].at[0, 0].set(jnp.inf)}}
    with pytest.raises(ValueError, match=r"params_0\['dense_0'\]\['kernel'\] contains NaN or inf"):
        barrier(inf_a, b, x, y, 3, apply_fn=mlp_apply)
    wider = mlp_init(jax.random.key(1), [6, 9, 3])
    with pytest.raises(ValueError, match=r"params_0\['dense_0'\]\['bias'\] has shape \(8,\) but "
                                         r"params_1\['dense_0'\]\['bias'\] has shape \(9,\)"):
        interpolation_curve(a, wider, x, y, 3, apply_fn=mlp_apply)
    deeper = mlp_init(jax.random.key(1), [6, 8, 8, 3])
    with pytest.raises(ValueError, match=r"different parameter trees \(only in params_0: \[\], "
                                         r"only in params_1: \[\"\['dense_2'\]\['bias'\]"):
        barrier(a, deeper, x, y, 3, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\) for 3 classes, got values in \[0, 3\]"):
        interpolation_curve(a, b, x, y.at[4].set(3), 3, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\).*got values in \[-1, "):
        barrier(a, b, x, y.at[0].set(-1), 3, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"y must have shape \(20,\)"):
        interpolation_curve(a, b, x, y[:5], 3, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"x has 5 features but the network's input width is 6"):
        interpolation_curve(a, b, x[:, :5], y, 3, apply_fn=mlp_apply)


# --------------------------------------------------------------------------- marginal loss curve


def _toy_data(n=60, d=5, c=3, seed=0):
    kx, ky = jax.random.split(jax.random.key(seed))
    return jax.random.normal(kx, (n, d)), jax.random.randint(ky, (n,), 0, c)


def test_marginal_curve_with_zero_sigma_is_the_deterministic_interpolation():
    x, y = _toy_data()
    a, b = mlp_init(jax.random.key(1), [5, 7, 3]), mlp_init(jax.random.key(2), [5, 7, 3])
    zeros = jax.tree_util.tree_map(jnp.zeros_like, a)
    taus = [0.0, 0.3, 0.5, 1.0]
    curve = marginal_loss_curve(jax.random.key(3), (a, zeros), (b, zeros), x, y, taus, num_samples=4, batch_size=16,
                                apply_fn=mlp_apply)
    ref = interpolation_curve(a, b, x, y, taus, apply_fn=mlp_apply)
    np.testing.assert_allclose(curve["loss"], ref["loss"], rtol=1e-5)
    np.testing.assert_allclose(curve["accuracy"], ref["accuracy"])
    np.testing.assert_array_equal(curve["tau"], taus)


def test_marginal_curve_endpoints_are_the_predictive_nll_and_chunking_does_not_matter():
    x, y = _toy_data(n=50, seed=4)
    q0 = random_gaussian_posterior(0, [5, 6, 3], sigma_range=(0.1, 0.5))
    q1 = random_gaussian_posterior(1, [5, 6, 3], sigma_range=(0.1, 0.5))
    key = jax.random.key(7)
    c1 = marginal_loss_curve(key, q0, q1, x, y, 5, num_samples=7, apply_fn=mlp_apply)
    c2 = marginal_loss_curve(key, q0, q1, x, y, 5, num_samples=7, sample_chunk=3, batch_size=16,
                             apply_fn=mlp_apply)
    np.testing.assert_allclose(c1["loss"], c2["loss"], rtol=1e-5)
    np.testing.assert_array_equal(c1["accuracy"], c2["accuracy"])
    # same noise as symlib.evaluation.predictive (draw s uses split(key, S)[s])
    for q, i in ((q0, 0), (q1, -1)):
        probs = predict_from_gaussian(key, q[0], q[1], x, 7, apply_fn=mlp_apply)
        assert c1["loss"][i] == pytest.approx(nll_from_probs(np.asarray(probs), np.asarray(y)), rel=1e-5)
    # common random numbers: a finer grid passes through the coarse grid's values
    c3 = marginal_loss_curve(key, q0, q1, x, y, [0.0, 0.125, 0.25, 0.5, 0.75, 1.0], num_samples=7,
                             apply_fn=mlp_apply)
    np.testing.assert_allclose(c3["loss"][[0, 2, 3, 4, 5]], c1["loss"], rtol=1e-5)
    with pytest.raises(ValueError, match="num_samples"):
        marginal_loss_curve(key, q0, q1, x, y, 5, num_samples=0, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="taus"):
        marginal_loss_curve(key, q0, q1, x, y, [0.0, 1.2], apply_fn=mlp_apply)


# --------------------------------------------------------------------------- barriers


def test_barrier_definitions_on_hand_made_curves():
    curve = {"tau": np.array([0.0, 0.5, 1.0]), "loss": np.array([1.0, 3.0, 2.0])}
    assert marginal_barrier(curve) == pytest.approx(1.5)
    assert midpoint_barrier(curve) == pytest.approx(1.5)
    # the chord, not the mean of the endpoints: peak at tau = 0.25 over a chord at 1.5
    curve = {"tau": np.array([0.0, 0.25, 0.5, 1.0]), "loss": np.array([1.0, 2.5, 2.0, 3.0])}
    assert marginal_barrier(curve) == pytest.approx(1.0)
    assert midpoint_barrier(curve) == pytest.approx(0.0)
    # a convex curve has zero barrier; a straight line too
    assert marginal_barrier({"tau": [0, 0.5, 1], "loss": [1.0, 0.5, 1.0]}) == 0.0
    assert marginal_barrier({"tau": [0, 0.5, 1], "loss": [1.0, 1.5, 2.0]}) == pytest.approx(0.0, abs=1e-15)
    assert midpoint_barrier({"tau": [0, 0.5, 1], "loss": [1.0, 0.5, 1.0]}) == pytest.approx(-0.5)
    # unsorted taus and the "lambda" key of symlib.evaluation.interpolation
    assert marginal_barrier({"lambda": [1.0, 0.0, 0.5], "loss": [2.0, 1.0, 3.0]}) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="non-finite"):
        marginal_barrier({"tau": [0, 0.5, 1], "loss": [1.0, np.nan, 1.0]})
    with pytest.raises(ValueError, match="non-finite"):
        midpoint_barrier({"tau": [0, 0.5, 1], "loss": [1.0, 2.0, np.nan]})
    with pytest.raises(ValueError, match="tau = 0.5"):
        midpoint_barrier({"tau": [0, 0.4, 1], "loss": [1.0, 2.0, 1.0]})
    with pytest.raises(ValueError, match="tau = 1.0"):
        marginal_barrier({"tau": [0, 0.5, 0.9], "loss": [1.0, 2.0, 1.0]})
    with pytest.raises(ValueError, match="'loss'"):
        marginal_barrier({"tau": [0, 1]})


def test_marginal_barrier_of_identical_posteriors_is_zero():
    x, y = _toy_data(n=30, seed=5)
    q = random_gaussian_posterior(0, [5, 6, 3], sigma_range=(0.1, 0.5))
    curve = marginal_loss_curve(jax.random.key(0), q, q, x, y, 3, num_samples=5, apply_fn=mlp_apply)
    assert abs(marginal_barrier(curve)) < 1e-5 and abs(midpoint_barrier(curve)) < 1e-5


def test_marginal_curve_errors_name_the_input():
    x, y = _toy_data(n=20, seed=6)
    q0 = random_gaussian_posterior(0, [5, 6, 3], sigma_range=(0.1, 0.5))
    q1 = random_gaussian_posterior(1, [5, 6, 3], sigma_range=(0.1, 0.5))
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 3\) for 3 classes"):
        marginal_loss_curve(key, q0, q1, x, y.at[2].set(3), 3, num_samples=2, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"y must have shape \(20,\)"):
        marginal_loss_curve(key, q0, q1, x, y[:3], 3, num_samples=2, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"x has 4 features but the network's input width is 5"):
        marginal_loss_curve(key, q0, q1, x[:, :4], y, 3, num_samples=2, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="sample_chunk"):
        marginal_loss_curve(key, q0, q1, x, y, 3, num_samples=2, sample_chunk=0, apply_fn=mlp_apply)
    bad = ({**q1[0], "dense_0": {**q1[0]["dense_0"], "bias": np.full(6, np.nan, np.float32)}}, q1[1])
    with pytest.raises(ValueError, match="q1: mean of parameter 'dense_0/bias' holds NaN or inf"):
        marginal_loss_curve(key, q0, bad, x, y, 3, num_samples=2, apply_fn=mlp_apply)
