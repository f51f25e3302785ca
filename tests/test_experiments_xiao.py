"""Helpers of the Xiao et al. experiments (symlib/experiments/xiao.py); the claims' own tests
are in tests/test_claims_xiao.py."""
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
