"""The claims of Xiao et al. registered for ``compact_representation``, on hand-made summaries."""
import copy

import numpy as np
import pytest

from symlib.experiments import claims
from symlib.experiments.xiao import near_prior_fraction

GOOD = {
    "table": {"HMC q_d": {"agreement": 0.15, "tv": 0.8, "accuracy_samples": 15.0, "accuracy_mean": 38.0},
              "HMC q_r": {"agreement": 0.72, "tv": 0.65, "accuracy_samples": 70.0, "accuracy_mean": 84.0},
              "Ensemble q_d": {"agreement": 0.62, "tv": 0.65, "accuracy_samples": 61.0, "accuracy_mean": 63.0},
              "Ensemble q_r": {"agreement": 0.93, "tv": 0.16, "accuracy_samples": 89.0, "accuracy_mean": 90.0}},
    "median_sigma": {"HMC q_d": 0.6, "HMC q_r": 0.5, "Ensemble q_d": 0.03, "Ensemble q_r": 0.025},
    "near_prior": {"HMC q_d": 0.3, "HMC q_r": 0.3, "VI q": 0.9, "Ensemble q_r": 0.0},
    "pruning": {"keep_fraction": [1.0, 0.5, 0.1], "ensemble": [0.9, 0.3, 0.1], "hmc": [0.8, 0.6, 0.2],
                "ensemble mu + hmc sigma": [0.9, 0.85, 0.4], "vi": [0.9, 0.9, 0.5]},
    "n_test": 2000, "prior_std": 1.0,
}


def _outcomes(summary):
    return {o.claim.name: o for o in claims.evaluate("compact_representation", summary)}


def test_all_claims_hold_on_a_summary_like_the_paper():
    out = _outcomes(GOOD)
    assert set(out) == {"qr_beats_qd_hmc", "qr_beats_qd_ensemble", "rebasin_shrinks_sigma_hmc",
                        "rebasin_shrinks_sigma_ensemble", "bayesian_sigma_near_prior", "stitched_pruning_wins"}
    assert all(o.holds for o in out.values()), {k: o.detail for k, o in out.items() if not o.holds}


@pytest.mark.parametrize("edit, name", [
    (lambda s: s["table"]["HMC q_r"].update(agreement=0.2), "qr_beats_qd_hmc"),  # gap 0.05 < 0.1
    (lambda s: s["table"]["Ensemble q_r"].update(tv=0.7), "qr_beats_qd_ensemble"),
    (lambda s: s["median_sigma"].update({"HMC q_r": 0.7}), "rebasin_shrinks_sigma_hmc"),
    (lambda s: s["median_sigma"].update({"Ensemble q_r": 0.04}), "rebasin_shrinks_sigma_ensemble"),
    (lambda s: s["near_prior"].update({"VI q": 0.0}), "bayesian_sigma_near_prior"),
    (lambda s: s["pruning"].update(hmc=[0.8, 0.85, 0.39]), "stitched_pruning_wins"),  # gain 0.005 < 2.2 points
])
def test_each_claim_fails_when_its_effect_is_absent(edit, name):
    summary = copy.deepcopy(GOOD)
    edit(summary)
    out = _outcomes(summary)
    assert not out[name].holds
    assert all(o.holds for k, o in out.items() if k != name)


def test_near_prior_fraction():
    assert near_prior_fraction(np.array([1.0, 0.7, 1.4, 0.5, 2.0, 0.0]), 1.0) == pytest.approx(3 / 6)
    assert near_prior_fraction(np.array([2.0, 0.1]), 2.0) == 0.5


@pytest.mark.parametrize("sigma, prior_std", [(np.array([]), 1.0), (np.array([np.nan]), 1.0),
                                              (np.array([-1.0]), 1.0), (np.array([1.0]), 0.0)])
def test_near_prior_fraction_rejects_bad_input(sigma, prior_std):
    with pytest.raises(ValueError, match="sigma|prior_std"):
        near_prior_fraction(sigma, prior_std)
