"""The tables and prose values of Rossi et al.'s chapters (symlib.experiments.rossi): rows and
formatting of known inputs."""
import math

import numpy as np
import pytest

from symlib.experiments import rossi


# ------------------------------------------------------------------ App. A: the KL and Wasserstein costs


def _trace_cases():
    s = np.array([0.3, 1.0, 0.6])
    return {"s0 constant": (np.full(3, 0.7), s), "s1 constant": (s, np.full(3, 0.7)),
            "neither constant": (s, s[::-1].copy())}


def test_trace_term_check_invariant_exactly_when_one_std_is_constant():
    check = rossi.trace_term_check(np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0, -0.3]), _trace_cases())
    assert check.n_perms == 6
    assert check.formula_error < 1e-12
    assert check.spread("s0 constant") < 1e-12 and check.spread("s1 constant") < 1e-12
    s = np.array([0.3, 1.0, 0.6])
    # T(P) = sum (P s1)^2 / s0^2 with s1 = s reversed: its extremes pair the largest s1 with the smallest s0 or not
    traces = [np.sum(s[::-1][list(p)] ** 2 / s**2) for p in [(0, 1, 2), (1, 0, 2), (2, 1, 0), (0, 2, 1), (1, 2, 0),
                                                                (2, 0, 1)]]
    assert check.extremes["neither constant"] == pytest.approx((min(traces), max(traces)))
    assert check.table().rows[0][0] == "s0 constant" and len(check.table().rows) == 3
    values = check.glue_values()
    assert list(values) == ["n_perms", "formula_error", "trace_range_s0", "trace_range_s1", "trace_range_neither"]
    assert values["trace_range_neither"] == f"{max(traces) - min(traces):.2g}"
    with pytest.raises(ValueError, match="unknown case"):
        check.spread("both")


def test_trace_term_check_names_a_bad_shape():
    with pytest.raises(ValueError, match="s0 constant"):
        rossi.trace_term_check(np.zeros(3), np.zeros(3), {"s0 constant": (np.ones(2), np.ones(3))})


def test_kl_over_permutations_rows_and_extremes():
    s0, s1 = np.array([1.0, 0.1, 0.5]), np.array([0.1, 0.5, 1.0])
    costs = rossi.kl_over_permutations(np.zeros(3), s0, np.zeros(3), s1)
    assert costs.perms[0] == (0, 1, 2) and len(costs.perms) == math.factorial(3)
    assert costs.mean_only == [0.0] * 6  # equal means: only the standard deviations differ
    # the permutation (2, 0, 1) puts s1's values in s0's order: P s1 = s0, so the KL is zero
    assert costs.full_kl[costs.perms.index((2, 0, 1))] == pytest.approx(0.0, abs=1e-12)
    assert costs.table().rows[0] == ["(0, 1, 2)", f"{costs.full_kl[0]:.3f}", "0.000"]
    assert costs.glue_values() == {"kl_min": "0.000", "kl_max": f"{max(costs.full_kl):.3f}"}


def test_mirror_pair_picks_the_swap_except_the_mean_only_kl_on_the_line():
    cases = {"on the line": ((0.0, 0.0), (1.0, 0.2)), "mirrored": ((1.0, -1.0), (1.0, 0.2))}
    picks = {name: rossi.mirror_pair_picks(*case) for name, case in cases.items()}
    assert picks["on the line"] == {"Wasserstein": "swap", "full KL": "swap", "mean-only KL (appendix)": "identity"}
    assert picks["mirrored"]["Wasserstein"] == "swap"
    table = rossi.mirror_picks_table(cases, picks)
    assert table.rows[0] == ["on the line", "swap", "swap", "identity", f"{2 * 0.8 ** 2:.2f} / 0"]
    values = rossi.mirror_glue_values(cases, picks)
    assert values["pick_a_mean_kl"] == "identity" and values["pick_b_w2"] == "swap"
    assert values["mean_cost_a"] == "0 and 0"  # both means on the mirror line: a tie
    rows = rossi.appendix_a_rows(rossi.trace_term_check(np.zeros(3), np.zeros(3), _trace_cases()), picks)
    assert [r[1] for r in rows] == ["do not depend on P", "identity (fails to recover the symmetry)",
                                    "recovers the symmetry (swap)"]
    assert rows[1][2] == "reduced (mean-only) KL: identity; full KL: swap"
    with pytest.raises(ValueError, match="2-D"):
        rossi.mirror_pair((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
