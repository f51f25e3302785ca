"""Tests of symlib.inference.diagnostics: R-hat and ESS on synthetic chains, function-space diagnostics."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.inference.diagnostics import coordinate_diagnostics, ess, function_space_diagnostics, rhat, summarize_hmc
from symlib.inference.hmc import HMCConfig, run_hmc
from symlib.core.models import mlp_apply, mlp_init


def _ar1(rng, rho, chains, n):
    x = np.empty((chains, n))
    x[:, 0] = rng.normal(size=chains)
    noise = rng.normal(size=(chains, n)) * np.sqrt(1 - rho**2)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    return x


def test_rhat_iid_chains_close_to_one():
    x = np.random.default_rng(0).normal(size=(4, 1000, 3))
    r = rhat(x)
    assert r.shape == (3,)
    assert np.all(np.abs(r - 1) < 0.01), r


def test_rhat_detects_chains_with_different_means():
    x = np.random.default_rng(1).normal(size=(4, 500))
    x[2:] += 2.0
    assert float(rhat(x)) > 1.1


def test_ess_iid_close_to_number_of_draws():
    x = np.random.default_rng(2).normal(size=(4, 1000))
    assert 0.8 * 4000 < float(ess(x)) < 1.2 * 4000


def test_ess_ar1_much_smaller():
    n, rho = 2000, 0.95
    x = _ar1(np.random.default_rng(3), rho, 4, n)
    e = float(ess(x))
    theory = 4 * n * (1 - rho) / (1 + rho)  # about 205
    assert e < 0.1 * 4 * n
    assert 0.5 * theory < e < 2 * theory, (e, theory)


def test_diagnostics_validate_shapes():
    with pytest.raises(ValueError, match="2 chains"):
        rhat(np.zeros((1, 10)))
    with pytest.raises(ValueError, match="chains, samples"):
        ess(np.zeros(10))


def test_function_space_diagnostics_matches_direct_computation():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(15, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=15).astype(np.int32)
    keys = jax.random.split(jax.random.key(0), 3 * 5)
    nets = jax.vmap(lambda k: mlp_init(k, [3, 4, 2]))(keys)
    samples = jax.tree.map(lambda a: np.asarray(a).reshape(3, 5, *a.shape[1:]), nets)
    out = function_space_diagnostics(samples, x, y, num_points=4, batch_size=2, apply_fn=mlp_apply)
    assert out["test_loglik"]["values"].shape == (3, 5)
    assert out["true_class_prob"]["values"].shape == (3, 5, 4)
    assert out["true_class_prob"]["rhat"].shape == (4,) and out["true_class_prob"]["ess"].shape == (4,)
    idx = out["point_indices"]
    net = jax.tree.map(lambda a: a[1, 3], samples)
    logp = jax.nn.log_softmax(mlp_apply(net, x))
    np.testing.assert_allclose(out["test_loglik"]["values"][1, 3], np.mean(np.asarray(logp)[np.arange(15), y]), rtol=1e-5)
    np.testing.assert_allclose(out["true_class_prob"]["values"][1, 3], np.exp(np.asarray(logp)[idx, y[idx]]), rtol=1e-5)
    assert np.isfinite(out["test_loglik"]["rhat"]) and np.isfinite(out["test_loglik"]["ess"])


def test_summarize_hmc():
    def logdensity(p):
        return -0.5 * jnp.sum(p**2)

    cfg = HMCConfig(step_size=40.0, num_leapfrog=5, num_burnin=2, num_samples=10, thin=1, num_chains=2)
    with pytest.warns(UserWarning):
        res = run_hmc(jax.random.key(0), jnp.ones(2), logdensity, cfg)
    summary = summarize_hmc(res)
    assert summary["num_divergences"] == res.num_divergences > 0
    assert summary["mean_acceptance"] < 0.2
    assert len(summary["warnings"]) == 2


def test_function_space_diagnostics_validates_inputs():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=6).astype(np.int32)
    nets = jax.vmap(lambda k: mlp_init(k, [3, 4, 2]))(jax.random.split(jax.random.key(0), 4))
    samples = jax.tree.map(lambda a: np.asarray(a).reshape(2, 2, *a.shape[1:]), nets)
    with pytest.raises(ValueError, match=r"same leading \(chains, samples\) axes on every leaf"):
        function_space_diagnostics({**samples, "dense_1": jax.tree.map(lambda a: a[:, :1], samples["dense_1"])}, x, y,
                                   apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="samples has no array leaves"):
        function_space_diagnostics({}, x, y, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"y_test must hold one label per example of x_test \(6\)"):
        function_space_diagnostics(samples, x, y[:5], apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"point_indices must be .* in \[0, 6\)"):
        function_space_diagnostics(samples, x, y, point_indices=[0, 6], apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        function_space_diagnostics(samples, x, y, batch_size=0, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="num_points must be a positive integer"):
        function_space_diagnostics(samples, x, y, num_points=0, apply_fn=mlp_apply)
    out = function_space_diagnostics(samples, x, y, point_indices=[5, 0], apply_fn=mlp_apply)
    assert out["point_indices"].tolist() == [5, 0] and out["true_class_prob"]["values"].shape == (2, 2, 2)


def test_coordinate_diagnostics_finds_the_stuck_and_the_disagreeing_coordinates():
    rng = np.random.default_rng(4)
    samples = {"dense_0": {"kernel": rng.normal(size=(4, 400, 2, 3)), "bias": rng.normal(size=(4, 400, 3))},
               "scalar": rng.normal(size=(4, 400))}
    samples["dense_0"]["kernel"][:, :, 1, 2] = _ar1(rng, 0.995, 4, 400)  # barely moves: tiny ESS
    samples["scalar"][2:] += 3.0  # two chains elsewhere: large R-hat
    out = coordinate_diagnostics(samples, num_worst=2)
    assert out["num_coordinates"] == 10 and out["num_draws"] == 1600
    worst = {e["coordinate"] for e in out["worst_ess"]}
    assert worst == {"dense_0/kernel[1, 2]", "scalar"}, out["worst_ess"]
    # split R-hat flags both: the chains that disagree and the coordinate that drifts within its chains
    assert {e["coordinate"] for e in out["worst_rhat"]} == {"dense_0/kernel[1, 2]", "scalar"}, out["worst_rhat"]
    assert out["worst_rhat"][0]["rhat"] == out["rhat_max"] > out["worst_rhat"][1]["rhat"] > 1.5
    assert out["ess_min"] == min(e["ess"] for e in out["worst_ess"]) < 50 < 1000 < out["ess_median"] <= out["ess_max"]
    np.testing.assert_allclose(out["ess_min"], min(float(ess(samples["scalar"])), float(ess(samples["dense_0"]["kernel"][:, :, 1, 2]))), rtol=1e-5)
    assert 0.99 < out["rhat_median"] < 1.02
    # batching over coordinates changes nothing
    small = coordinate_diagnostics(samples, num_worst=2, batch_size=1)
    assert [e["coordinate"] for e in small["worst_ess"]] == [e["coordinate"] for e in out["worst_ess"]]
    # the result depends on the leaves, not on the order the dict's keys were inserted in
    shuffled = {"scalar": samples["scalar"], "dense_0": {"bias": samples["dense_0"]["bias"],
                                                         "kernel": samples["dense_0"]["kernel"]}}
    assert coordinate_diagnostics(shuffled, num_worst=2) == out
    padded = coordinate_diagnostics(samples, num_worst=2, batch_size=3)  # 10 coordinates: the last batch padded
    assert [e["coordinate"] for e in padded["worst_ess"]] == [e["coordinate"] for e in small["worst_ess"]]
    assert padded["num_coordinates"] == 10
    for k in ("ess_min", "ess_median", "ess_max", "rhat_median", "rhat_max"):
        np.testing.assert_allclose(small[k], out[k], rtol=1e-4, err_msg=k)
        np.testing.assert_allclose(padded[k], small[k], rtol=1e-4, err_msg=k)
    import json
    json.dumps(out)


def test_coordinate_diagnostics_one_chain_and_bad_input():
    x = np.random.default_rng(5).normal(size=(1, 50, 2))
    out = coordinate_diagnostics(x)
    assert np.isnan(out["rhat_max"]) and out["worst_rhat"] == [] and out["worst_ess"][0]["coordinate"].startswith("samples[")
    with pytest.raises(ValueError, match="samples has no array leaves"):
        coordinate_diagnostics({})
    with pytest.raises(ValueError, match="samples must have the same leading"):
        coordinate_diagnostics({"a": np.zeros((2, 5)), "b": np.zeros((2, 4))})
    with pytest.raises(ValueError, match="samples needs at least 2 samples"):
        coordinate_diagnostics(np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match="num_worst must be a positive integer"):
        coordinate_diagnostics(x, num_worst=0)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        coordinate_diagnostics(x, batch_size=0)


@pytest.mark.parametrize("shape", [(4, 200, 1), (4, 200, 3, 1), (4, 200, 1, 3), (4, 200)])
def test_ess_keeps_the_quantitys_axes_of_size_one(shape):
    """BlackJAX squeezes its result: (4, 200, 1) gave ESS of shape (), not rhat's (1,)."""
    x = np.random.default_rng(5).normal(size=shape)
    assert ess(x).shape == rhat(x).shape == shape[2:]
    flat = ess(x.reshape(4, 200, -1)).reshape(shape[2:])
    np.testing.assert_allclose(ess(x), flat, rtol=1e-6)
