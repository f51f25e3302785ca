"""Xiao et al.'s HMC convergence gate (symlib.experiments.xiao.claims.hmc_gate) on diagnostics
that are not finite: before 2026-12-01 Python's max/min over the runs let a NaN R-hat or ESS pass
or fail depending on the runs' order."""
import numpy as np
import pytest

from symlib.experiments.xiao.claims import hmc_gate


def _compact(runs):
    """The part of a compact_representation summary that the gate reads: converged runs."""
    return {"replicates": [{"hmc_convergence": {"rhat_test_loglik": 1.01, "ess_test_loglik": 800.0}}
                           for _ in range(runs)]}


@pytest.mark.parametrize("key, what", [("rhat_test_loglik", "R-hat"), ("ess_test_loglik", "effective sample size")])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None])
@pytest.mark.parametrize("where", [0, 1, 2])
def test_a_non_finite_diagnostic_fails_its_gate_in_any_position(key, what, bad, where):
    s = _compact(runs=3)
    assert hmc_gate(s) == []  # converged runs pass
    s["replicates"][where]["hmc_convergence"][key] = bad
    failed = hmc_gate(s)
    assert len(failed) == 1 and f"HMC {what} of the test log-likelihood is not finite" in failed[0]
    assert f"run(s) {where + 1} of 3" in failed[0]


def test_both_gates_are_reported():
    s = _compact(runs=2)
    s["replicates"][0]["hmc_convergence"]["rhat_test_loglik"] = np.nan
    s["replicates"][1]["hmc_convergence"]["ess_test_loglik"] = 5.0
    failed = hmc_gate(s)
    assert len(failed) == 2 and "R-hat" in failed[0] and "too few" in failed[1] and "5 (the worst" in failed[1]
