"""The registered experiments end to end, on a tiny profile (seconds, not minutes)."""
import dataclasses

import numpy as np
import pytest

from symlib import experiments
from symlib.experiments.profiles import get_profile

TINY = dataclasses.replace(
    get_profile("quick"), name="tiny", n_train=300, n_val=0, n_test=200, hidden=8, epochs=2, batch_size=50,
    n_lambdas=3, not_points=3, not_runs=2, bnn_n_train=100, hmc_chains=2, hmc_leapfrog=3, hmc_burnin=4,
    hmc_samples=4, hmc_thin=1, bnn_epochs=2, vi_batch_size=50, ensemble_members=2, mc_samples=4)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))


def _probs_ok(res):
    p = np.asarray(res["test_probs"])
    assert p.shape == (TINY.n_test, 10) and np.allclose(p.sum(1), 1, atol=1e-5)
    assert 0 <= float(res["test"]["accuracy"]) <= 1 and float(res["test"]["nll"]) > 0


def test_ensemble_and_vi():
    ens = experiments.run("ensemble", TINY, verbose=False)
    assert ens["params"]["dense_0"]["kernel"].shape == (2, 784, 8)
    _probs_ok(ens)
    vi = experiments.run("vi", TINY, verbose=False)
    assert vi["mu"]["dense_0"]["kernel"].shape == vi["sigma"]["dense_0"]["kernel"].shape == (784, 8)
    assert np.all(vi["sigma"]["dense_1"]["bias"] > 0)
    _probs_ok(vi)


def test_hmc_writes_resumable_chains_and_diagnostics():
    res = experiments.run("hmc", TINY, verbose=False)
    _probs_ok(res)
    samples = experiments.hmc_samples(TINY)
    assert samples["dense_1"]["kernel"].shape == (2, 4, 8, 10)
    assert res["stats"]["acceptance_rate"].shape == (2, TINY.hmc_burnin + TINY.hmc_samples * TINY.hmc_thin)
    assert res["diagnostics"]["rhat_true_class_prob"].shape == (10,)
    assert any(experiments.hmc_run_dir(TINY).glob("samples_*.npz"))


def test_not_experiments():
    sweep = experiments.run("not_sweep", TINY, verbose=False)
    assert sweep["not_p"].shape == (TINY.not_runs * 3,)
    paths = experiments.run("not_paths", TINY, verbose=False)
    assert paths["permuted"]["not_lambda"][0] == 0


def test_bnn_n_train_too_large_is_an_error():
    with pytest.raises(ValueError, match="bnn_n_train"):
        experiments.run("hmc", dataclasses.replace(TINY, bnn_n_train=10_000), verbose=False)


def test_toy_helpers():
    from symlib.experiments.toy import count_modes, sort_by_output_weight, two_gaussians

    x, y = two_gaussians(n_per_class=50)
    assert x.shape == (100, 2) and np.all((x.sum(1) > 0) == (y == 1))
    rng = np.random.default_rng(0)
    assert len(count_modes(rng.normal(size=2000))) == 1
    assert len(count_modes(np.concatenate([rng.normal(-5, 1, 2000), rng.normal(5, 1, 2000)]))) == 2
    net = {"dense_0": {"kernel": rng.normal(size=(2, 2)), "bias": rng.normal(size=2)},
           "dense_1": {"kernel": np.array([[-1.0], [2.0]]), "bias": np.zeros(1)}}
    sorted_net, perm = sort_by_output_weight(net)
    assert list(perm) == [1, 0] and sorted_net["dense_1"]["kernel"][0, 0] == 2.0
