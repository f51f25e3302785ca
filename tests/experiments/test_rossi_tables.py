"""The tables and prose values of Rossi et al.'s chapters (symlib.experiments.rossi): rows and
formatting of known inputs."""
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from symlib.experiments import rossi
from symlib.experiments.judging import results
from symlib.experiments.profiles import get_profile


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
    # a range that is zero up to float64 round-off reads as zero, not as a measured 1e-15
    assert values["trace_range_s0"] == values["trace_range_s1"] == "0 (round-off)"
    rows = check.table().rows
    assert rows[0][3] == "0 (round-off)" and rows[2][3] == f"{max(traces) - min(traces):.3g}"
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


# ------------------------------------------------------------------ Sec. 5.1 and App. C: settings, barriers, timings

RESULTS = Path(__file__).resolve().parents[2] / "book" / "results"


def test_settings_tables_show_the_profile():
    profile = get_profile("quick")
    n_train = {"mnist": 5_000, "fashion_mnist": 6_000}
    table = rossi.training_settings_table(profile, n_train)
    assert len(table.rows) == 11 and table.headers[2] == "ours (quick profile)"
    assert table.rows[7] == ["training images", "not stated", "mnist 5,000, fashion_mnist 6,000"]
    assert table.rows[10][:2] == ["images per split for the barrier", "not stated"]  # App. B, Table 1 gives no count
    values = rossi.training_values(profile, n_train)
    assert values["steps"] == f"{profile.align_epochs * 10:,}, {profile.align_epochs * 12:,}"
    assert values["n_train"] == "5,000, 6,000" and values["pairs"] == profile.align_pairs
    change = rossi.settings_change_table({"align_pairs": 1, "align_widths": (32, 64)}, profile)
    assert change.rows == [["align_pairs", "1", f"{profile.align_pairs:,}"],
                           ["align_widths", "32, 64", ", ".join(map(str, profile.align_widths))]]
    assert str(list(profile.align_widths)) in rossi.describe_alignment(profile)
    assert f"{profile.resnet_n_train:,} training images" in rossi.describe_resnet(profile)


def test_robustness_table_and_values():
    summary = {"width": 64, "settings": [{"prior_var": 0.01, "temperature": 1.0}],
               "marginal_pairs": {"test": {"naive": [[1.0, 2.0]], "aligned": [[0.5, 0.5]]}}}
    (row,) = rossi.robustness_table(summary).rows
    assert row == ["0.01", "1.0", "2", rossi.format_mean_se([1.0, 2.0]), "0.500 ± 0.000",
                   rossi.format_mean_se([50.0, 75.0], 0) + "%"]
    values = rossi.robustness_values(summary)
    assert values["sweep_width"] == 64 and values["pv_other"] == f"{rossi.ROBUSTNESS_PRIOR_VARS[1]:g}"


def test_command_setting_reads_both_forms():
    cmd = "python -m symlib run --set xalign_n_eval=1 --set align_n_eval=2000 ; gpu.py --epochs 1000 --widths 128"
    assert results.command_setting(cmd, "align_n_eval") == "2000"
    assert results.command_setting(cmd, "epochs") == "1000"
    with pytest.raises(ValueError, match="align_samples"):
        results.command_setting(cmd, "align_samples")
    # the value the run applied: the last --set of a field (the profile's dict keeps the last),
    # and --name=VALUE as well as --name VALUE
    again = "python -m symlib run x --set align_n_eval=100 --set align_n_eval=300 --label=paper-x"
    assert results.command_setting(again, "align_n_eval") == "300"
    assert results.command_setting(again, "label") == "paper-x"


def _fake_timings():
    cols = {"w2_seconds": [0.1, 0.4], "w2_cpu_seconds": [0.2, 0.8], "wm_cpu_seconds": [0.1, 0.2],
            "w2_cpu_seconds_repeats": [[0.2, 0.1, 0.3], [0.8, 0.9, 0.7]],
            "wm_cpu_seconds_repeats": [[0.1, 0.1, 0.1], [0.2, 0.3, 0.1]]}
    return SimpleNamespace(widths={ds: [8, 16] for ds in rossi.ALIGN_DATASETS},
                           column=lambda ds, name: np.asarray(cols[name]))


def test_timing_rows_and_spreads():
    t = _fake_timings()
    rows = rossi.timing_paper_rows(t)
    assert len(rows) == 3 * len(rossi.ALIGN_DATASETS)
    assert rows[0][0] == "mnist: alignment of the widest trained pair (width 16), wall" and rows[0][2] == "0.400 s"
    assert rows[1][2] == "4.00x" and rows[2][2] == "8: 0.200 s, 16: 0.800 s"
    spread = rossi.timing_spreads(t)["mnist"]["Wasserstein alignment (mu, sigma)"]
    np.testing.assert_allclose(spread, [[0.2, 0.1, 0.3], [0.8, 0.7, 0.9]])


def test_saved_run_values():
    paper = results.load("vi_alignment", "paper", RESULTS)
    long = results.load("vi_alignment", "paper-1000epochs-2pairs", RESULTS)
    if paper is None or long is None:
        pytest.skip("the saved paper-profile runs are not in book/results")
    ps, ls = paper["summary"], long["summary"]
    values = rossi.paper_run_values(ps)
    assert values["paper_mnist_train_naive"] == ", ".join(f"{v:.3f}" for v in ps["marginal"]["mnist"]["train"]["naive"])
    assert any(k.startswith("pv_") for k in values) and list(values)[0] == "paper_mnist_train_naive_slope"
    assert rossi.longer_training_values(long, 100, "paper-1000epochs-2pairs")["long_epochs"] == "1,000"
    length = rossi.training_length_values(ps, ls)
    assert length["long_pairs"] == 2 and " → " in length["long_mnist_gaps"]
    assert length["long_narrow"] == f"{min(ls['widths']['mnist']):,}"
    table = rossi.training_length_table(rossi.training_length_rows(ps, ls), (100, 1000))
    assert all(len(r[3].split(".")[1]) == 3 for r in table.rows)
    assert table.headers[3:5] == ["naive, 100 epochs (nats)", "naive, 1,000 epochs (nats)"]
    timings = results.load("vi_alignment_timings", "paper-4widths-16samples", RESULTS)
    saved = rossi.saved_timing_values(timings)
    c = timings["summary"]["table"]["mnist"]
    assert saved["saved_mnist_ratio"] == f"{c['w2_cpu_seconds'][-1] / c['wm_cpu_seconds'][-1]:.2f}x"
    assert saved["saved_date"] == timings["date"]


def test_outcome_values_keeps_each_claims_pair_in_order():
    outcomes = [SimpleNamespace(claim=SimpleNamespace(name=n), verdict=SimpleNamespace(value=v),
                                evidence=SimpleNamespace(interval_text=lambda n=n: f"{n} interval"))
                for n, v in (("a", "holds"), ("b", "differs"))]
    assert list(rossi.outcome_values(outcomes, "p").items()) == [
        ("pv_a", "holds"), ("pe_a", "a interval"), ("pv_b", "differs"), ("pe_b", "b interval")]


def test_plots_of_the_mirror_pairs_and_the_timings():
    import matplotlib

    matplotlib.use("Agg")
    from symlib.experiments import plotting

    fig = plotting.mirrored_gaussians({"(a)": ((0.0, 0.0), (1.0, 0.2)), "(b)": ((1.0, -1.0), (1.0, 0.2))},
                                      {"(a)": {"Wasserstein": "swap"}}, suptitle="picks")
    assert [ax.get_title() for ax in fig.axes] == ["(a)\nWasserstein: swap", "(b)"]
    assert fig.axes[0].get_xlim() == pytest.approx((-3.2, 3.2))  # (b)'s 2-sd contour reaches 1 + 2 * 1
    assert fig.get_suptitle().startswith("picks\ncontours at 1 (thick) and 2 (thin) standard deviations")
    t = _fake_timings()
    fig = plotting.timings_against_width(t.widths, rossi.timing_spreads(t), xlabel="width")
    assert [ax.get_title() for ax in fig.axes] == [f"{ds}, trained VI posteriors" for ds in rossi.ALIGN_DATASETS]
    assert fig.axes[0].get_legend_handles_labels()[1] == ["Wasserstein alignment (mu, sigma)",
                                                          "weight matching (means only)"]
    pairs = {"mnist": {split: {"naive": [[2.0, 2.2], [1.0, 1.1]], "aligned": [[0.06, 0.07], [0.03, 0.04]]}
                       for split in ("train", "test")}}
    fig = rossi.barriers_against_width({"mnist": [128, 256]}, pairs, title="t")
    ax = fig.axes[0]
    assert ax.get_yscale() == "symlog"  # the aligned barriers, 30 times smaller, keep their slope
    handles, labels = ax.get_legend_handles_labels()
    markers = {label: (h.lines[0].get_marker(), h.lines[0].get_markerfacecolor()) for h, label in zip(handles, labels)}
    assert markers["train, naive"][0] == "o" and markers["test, naive"] == ("s", "white")


def test_interpolation_curves_pair_train_and_test_of_a_method_and_keep_other_labels_apart():
    import matplotlib

    matplotlib.use("Agg")
    from symlib.experiments import plotting

    curve = {"lambda": np.linspace(0, 1, 3), "loss": np.ones(3), "accuracy": np.ones(3)}
    labels = ["train, naive", "test, naive", "test, weight matching", "wide, naive", "narrow, naive"]
    fig = plotting.interpolation_curves({k: curve for k in reversed(labels)})
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    style = {k: (lines[k].get_color(), lines[k].get_linestyle()) for k in labels}
    assert style["train, naive"][0] == style["test, naive"][0] != style["test, weight matching"][0]
    assert (style["train, naive"][1], style["test, naive"][1]) == ("-", "--")
    # labels that name no split (a width, a model) are curves of their own, each its own colour
    colours = {style[k][0] for k in ("test, naive", "test, weight matching", "wide, naive", "narrow, naive")}
    assert len(colours) == 4 and style["wide, naive"][1] == style["narrow, naive"][1] == "-"
