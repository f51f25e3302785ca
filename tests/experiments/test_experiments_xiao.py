"""Helpers of the Xiao et al. experiments (symlib/experiments/xiao/); the claims' own tests
are in tests/experiments/test_claims_xiao.py."""
import dataclasses

import numpy as np
import pytest

from symlib.experiments import xiao
from symlib.experiments.profiles import get_profile
from symlib.experiments.xiao import near_prior_fraction


def test_near_prior_fraction():
    assert near_prior_fraction(np.array([1.0, 0.7, 1.4, 0.5, 2.0, 0.0]), 1.0) == pytest.approx(3 / 6)
    assert near_prior_fraction(np.array([2.0, 0.1]), 2.0) == 0.5


@pytest.mark.parametrize("sigma, prior_std", [(np.array([]), 1.0), (np.array([np.nan]), 1.0),
                                              (np.array([-1.0]), 1.0), (np.array([1.0]), 0.0)])
def test_near_prior_fraction_rejects_bad_input(sigma, prior_std):
    with pytest.raises(ValueError, match="sigma|prior_std"):
        near_prior_fraction(sigma, prior_std)


def test_pairs_are_independent_and_pair_zero_is_the_figures():
    seeds = [s for k in range(10) for s in xiao.pair_seeds(k)]
    assert len(set(seeds)) == len(seeds)
    assert xiao.pair_seeds(0) == xiao.MLP_SEEDS


@pytest.mark.parametrize("name", ["quick", "paper"])
def test_profiles_replicate_the_barrier_and_not_experiments(name):
    """Issue 28: at least 3 independent network pairs (chapter 02) and 3 runs (chapter 03)."""
    p = get_profile(name)
    assert p.rebasin_pairs >= 3 and p.not_runs >= 3


def test_not_paths_replicates_fall_back_to_the_figures_pair():
    summary = {"hidden": 8, "not_p": 3, "permuted": {"not_epochs": [3, 3], "not_lambda": [0, 1, 3]}}
    rep = xiao.not_paths_replicates(summary)
    assert rep["not_epochs"].shape == (1, 2) and rep["not_lambda"].tolist() == [[0, 1, 3]]
    summary["replicates"] = {"not_p": [3, 4], "not_epochs": [[3, 3], [4, 4]], "not_lambda": [[0, 1, 3], [0, 2, 4]]}
    assert xiao.not_paths_replicates(summary)["not_lambda"].shape == (2, 3)


def test_agreement_by_chains_uses_the_first_n_chains(monkeypatch):
    """On a stand-in sample stack (4 chains x 2 samples of a 784-8-10 MLP) and random data."""
    import jax

    from symlib.core.models import mlp_init

    rng = np.random.default_rng(0)
    data = {"x_train": rng.normal(size=(30, 784)).astype(np.float32),
            "x_test": rng.normal(size=(20, 784)).astype(np.float32), "y_test": rng.integers(0, 10, 20)}
    nets = [mlp_init(k, [784, 8, 10]) for k in jax.random.split(jax.random.key(0), 8)]
    stack = jax.tree_util.tree_map(lambda *a: np.stack(a).reshape((4, 2) + a[0].shape), *nets)
    asked = []
    monkeypatch.setattr(xiao.posteriors, "hmc_samples", lambda p: asked.append(p.hmc_chains) or stack)
    monkeypatch.setattr(xiao.posteriors, "load_bnn_data", lambda p: data)
    profile = dataclasses.replace(get_profile("quick"), mc_samples=4)
    out = xiao.agreement_by_chains(profile, counts=(1, 2, 4))
    assert asked == [4]  # one HMC run with the most chains
    assert out["chains"].tolist() == [1, 2, 4] and out["samples"].tolist() == [2, 4, 8]
    for k in ("agreement_q_d", "agreement_q_r", "tv_q_d", "tv_q_r"):
        assert out[k].shape == (3,) and np.all((out[k] >= 0) & (out[k] <= 1))
    with pytest.raises(ValueError, match="positive numbers of chains"):
        xiao.agreement_by_chains(profile, counts=(0, 2))
