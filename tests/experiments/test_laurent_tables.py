"""The lines, tables and prose values of the chapters on swaps during training, posterior estimates
and functional collapse (symlib.experiments.laurent.tables), on small known inputs."""
from types import SimpleNamespace

import numpy as np
import pytest

from symlib.experiments.laurent import tables
from symlib.experiments.laurent.posteriors import (METHODS, MULTI, SETTINGS, SINGLE, SWAG_MIN_SNAPSHOTS, TABLE1_COLUMNS,
                                                  swag_schedule)
from symlib.experiments.laurent.posteriors_resnet import methods_of
from symlib.experiments.profiles import get_profile


# ---------------------------------------------------------------------------------------
# swaps during training
# ---------------------------------------------------------------------------------------

def _phase(phase, layer, per_step, first, last):
    return {"phase": phase, "first_epoch": first, "last_epoch": last, "layer": layer, "per_step": per_step,
            "steps_with_swap": per_step / 2, "per_epoch_sum": 10 * per_step, "net_per_epoch": per_step / 4,
            "net_tau": 1 - per_step}


def _swaps():
    """Two permutations over two learning-rate phases (epochs 1-2 and 3-4)."""
    return {"phases": [_phase(0, 0, 0.5, 0, 1), _phase(0, 1, 0.25, 0, 1), _phase(1, 0, 0.125, 2, 3),
                       _phase(1, 1, 0.0, 2, 3)],
            "late_net_per_epoch": [1.0, 0.0], "first_net_per_epoch": [2.345, 0.5], "late_epochs": 1,
            "pairs": [20, 3], "units": [10, 3]}


def _optunets():
    """Three runs (the second below the convergence threshold), 4 epochs of 5 steps, 2 permutations."""
    return SimpleNamespace(converged=np.array([True, False, True]), swaps=np.zeros((3, 4, 5, 2)),
                           test_accuracy=np.array([0.5, 0.1, 0.7]), lr=np.array([0.04, 0.04, 0.02, 0.02]),
                           milestones=np.array([2]), perm_names=["conv_1", "dense_0"], units=[10, 3], blocks=[2, 1])


def test_optunet_lines_and_values_count_only_the_converged_runs():
    res = _optunets()
    assert tables.optunet_swap_line(res) == ("2 OptuNets, 4 epochs of 5 steps, test accuracy 0.600; learning rate "
                                             "per epoch [0.04, 0.02] (halved at epochs [2])")
    values = tables.optunet_swap_values(res, get_profile("quick"))
    assert list(values) == ["runs", "epochs", "steps", "n_train", "acc", "min_ratio_runs"]
    assert (values["runs"], values["epochs"], values["steps"], values["acc"]) == (2, 4, "20", "60%")
    # the fewest runs over which the ratios are judged: the rule the claims apply
    from symlib.experiments.laurent.mlps import MIN_RATIO_RUNS
    assert values["min_ratio_runs"] == MIN_RATIO_RUNS
    assert tables.optunet_swap_labels(res) == ["conv_1 (10 units, 2 groups)", "dense_0 (3 units, 1 group)"]
    assert tables.hidden_layer_labels([16, 8]) == ["hidden layer 1 (16 units)", "hidden layer 2 (8 units)"]


def test_mlp_swap_line():
    res = SimpleNamespace(swaps=np.zeros((6, 3, 2, 2)), sizes=(784, 16, 16, 10), test_accuracy=np.array([0.9, 0.8]))
    assert tables.mlp_swap_line(res) == "6 MLPs 784-16-16-10, 3 epochs, test accuracy 0.850"


def test_phase_table_rows_count_epochs_from_one():
    table = tables.phase_table(_swaps(), ["conv", "dense"], [0.04, 0.04, 0.02, 0.02])
    assert table.headers == list(tables.PHASE_HEADERS) and len(table.rows) == 4
    assert table.rows[0] == ["1 (1-2)", "0.04", "conv", "0.500", "0.250", "5.0", "0.12", "0.500"]
    assert table.rows[3][:3] == ["2 (3-4)", "0.02", "dense"]
    assert tables.late_swaps_line(_swaps()) == ("last 1 epoch(s): net swapped pairs per epoch [1.0, 0.0] vs "
                                                "[2.35, 0.5] between epochs 1 and 2 (comparable pairs: [20, 3])")


def test_late_tau_and_rates():
    # 1 net discordant pair of the 20 comparable ones (10 units in 2 groups): tau = 1 - 2 / 20
    np.testing.assert_allclose(tables.late_taus(_swaps(), [10, 3], [2, 1]), [0.9, 1.0])
    values = tables.optunet_swap_rate_values(_swaps(), [10, 3], [2, 1])
    assert values == {"late_tau_min": "0.900", "conv_rates": "0.500 -> 0.125", "dense_rates": "0.250 -> 0.000"}


def test_fig4_rows_read_the_first_and_last_phase():
    rows = tables.fig4_rows(_swaps(), _swaps(), _optunets(), [4, 4])
    assert [r[0] for r in rows] == ["where the sorting permutation changes (Fig. 4)",
                                    "last phase of training (Sec. 5.2)"]
    assert "OptuNet (conv_1/dense_0) 0.500/0.250 at lr 0.04, 0.125/0.000 at lr 0.02" in rows[0][2]
    assert "OptuNet 0.900/1.000, MLP " in rows[1][2]


def _saved_optunets(nets, converged):
    return {"summary": {"nets": nets, "converged": converged, "test_accuracy_mean": 0.784, "swaps": _swaps()}}


def test_saved_swap_values_order_and_check():
    pp = get_profile("paper")
    mlp = {"summary": {"nets": 256, "swaps": {"units": [100, 100]}}}
    values = tables.saved_swap_values(pp, _saved_optunets(pp.optunet_nets, pp.optunet_nets - 3),
                                      {"s8": _saved_optunets(8, 8)}, mlp, {"summary": {"nets": 64}})
    assert list(values) == ["pp_epochs", "pp_n_train", "pp_nets", "pp_dropped", "pp_acc", "pp_conv_rates",
                            "pp_dense_rates", "s8_nets", "s8_dropped", "s8_acc", "s8_conv_rates", "s8_dense_rates",
                            "pp_mlp_sizes", "pp_mlp_nets", "pp_mlp_nets_reduced"]
    assert values["pp_dropped"] == 3 and values["s8_acc"] == "78%" and values["pp_mlp_sizes"] == "784-100-100-10"
    with pytest.raises(ValueError, match="saved paper run has 7 OptuNets"):
        tables.saved_swap_values(pp, _saved_optunets(7, 7), {}, mlp, {"summary": {"nets": 64}})


# ---------------------------------------------------------------------------------------
# posterior estimates
# ---------------------------------------------------------------------------------------

def _posteriors_summary():
    """Single-mode methods at MMD² 1.0 + i / 10, multi-mode at 0.1; NS halves the single-mode ones;
    min-mass undefined for Dropout, re-basin better than NS for DE only."""
    mmd = {}
    for v in ("MMD", "NS", "NS min-mass", "NS re-basin"):
        mmd[v] = {}
        for i, m in enumerate(METHODS):
            x = 1.0 + i / 10 if m in SINGLE else 0.1
            x = x / 2 if v != "MMD" and m in SINGLE else x
            if v == "NS min-mass":
                x = None if m == "Dropout" else x
            if v == "NS re-basin" and m == "DE":
                x = 0.05
            mmd[v][m] = {"median": x, "mean": x, "max": x}
    metrics = {m: {"acc": 0.9, "ece": 0.01234, "brier": 0.2, "aupr": 0.5, "fpr95": 0.6, "mi_id": 0.001,
                   "mi_ood": 0.002} for m in METHODS}
    return {"methods": list(METHODS), "single": list(SINGLE), "multi": list(MULTI), "mmd": mmd, "metrics": metrics,
            "seconds": {m: 1.25 for m in METHODS}, "reference_accuracy": 0.8123}


def test_posterior_setting_values():
    quick, paper = get_profile("quick"), get_profile("paper")
    values = tables.posterior_setting_values(quick, paper)
    assert list(values)[:6] == ["swag_snaps_q", "swag_epochs_q", "swag_every_q", "swag_snaps_p", "swag_epochs_p",
                                "swag_every_p"]
    assert (values["swag_snaps_p"], values["swag_epochs_p"]) == swag_schedule(paper.post_method_epochs)
    # the paper profile: 20 snapshots over 120 epochs, one every 6 (the paper: every 10)
    assert values["swag_every_p"] == values["swag_epochs_p"] // values["swag_snaps_p"] == 6
    assert values["bnn_prior_std"] == 0.1  # Blitz's default prior, which App. B.1 names
    assert values["dropout"] == SETTINGS["dropout_rate"] and values["samples"] == quick.post_samples
    # SGHMC adapts for the library's 20 epochs of its 250 in the paper profile, half its 5 in the quick one
    assert (values["sghmc_adapt_q"], values["sghmc_adapt_p"]) == (2, 20)
    assert values["n_train_p"] == "50,000"
    # the profile's sizes the prose names by their settings, with their values in this profile
    assert (values["bank_nets"], values["bank_epochs"], values["modes"], values["reference"]) == (
        quick.bank_nets, quick.bank_epochs, quick.post_modes, quick.post_reference)
    assert values["n_eval"] == f"{quick.post_n_eval:,}"


def test_sghmc_config_adapts_then_keeps_draws_the_library_s_epochs_apart():
    from symlib.experiments.laurent.posteriors import sghmc_config

    paper = sghmc_config(250, 50_000, 100, 0.1)  # 781 minibatches an epoch
    assert (paper.step_size, paper.adapt_epochs, paper.burn_in, paper.thinning) == (1e-2, 20, 20 * 781, 2 * 781)
    assert (paper.prior_gamma, paper.prior_refresh, paper.momentum_refresh) == ((10.0, 10.0), 15, 50)
    short = sghmc_config(5, 9_000, 8, 0.1)  # 140 an epoch: 3 epochs after 2 of adaptation, 8 draws 52 apart
    assert (short.adapt_epochs, short.burn_in, short.thinning) == (2, 280, 52)
    with pytest.raises(ValueError, match="epochs=1: SGHMC needs at least 2 epochs"):
        sghmc_config(1, 9_000, 8, 0.1)


def test_saved_posterior_values_read_the_command_and_the_summary():
    summary = {**_posteriors_summary(), "reference_size": 800}
    record = {"summary": summary, "elapsed_s": 767.7, "device": "cpu",
              "command": "python -m symlib run laurent_posteriors --profile paper --set bank_used=1024 --set "
                         "post_samples=100 --set post_modes=10 --set post_method_epochs=2 --label x"}
    values = tables.saved_posterior_values(record, [_outcome("ensemble_closest", "holds", 0.0)])
    assert (values["bank_used"], values["samples"], values["modes"], values["method_epochs"]) == ("1,024", 100, 10, 2)
    assert (values["reference"], values["reference_acc"], values["minutes"]) == ("800", "81%", "13")
    de = 100 * summary["metrics"]["DE"]["acc"]
    assert values["acc_DE"] == f"{de:.1f}%" and values["de_gap"] == f"{95.3 - de:.1f}"
    assert "acc_multi_SWAG" in values and values["v_ensemble_closest"] == "holds"
    metrics = summary["metrics"]["multi-SWAG"]
    assert (values["ece_multi_SWAG"], values["mi_id_multi_SWAG"], values["mi_ood_multi_SWAG"]) == tuple(
        f"{100 * metrics[k]:.1f}" for k in ("ece", "mi_id", "mi_ood"))
    with pytest.raises(ValueError, match="does not set 'post_modes'"):
        tables.saved_posterior_values({**record, "command": "run --set bank_used=8 --set post_samples=4"}, [])


def test_swag_schedule():
    assert swag_schedule(0) == swag_schedule(1) == (SWAG_MIN_SNAPSHOTS, SWAG_MIN_SNAPSHOTS) == (4, 4)
    assert swag_schedule(2) == (4, 4)
    assert swag_schedule(3) == (6, 6)
    assert swag_schedule(60) == (SETTINGS["swag_snapshots"], 120)


def test_bank_line_and_values():
    bank = {"test_accuracy": np.array([0.1, 0.5, 0.7, 0.9]), "seconds": 12.4}
    split = {"converged": np.array([1, 2, 3]), "reference": np.array([1, 2]), "ensemble": np.array([3])}
    assert tables.bank_line(bank, _posteriors_summary(), split) == (
        "4 OptuNets trained in 12 s; 3 converged (test accuracy 0.50-0.90); reference: 2 networks "
        "(mean accuracy 0.812); deep ensemble: 1")
    assert tables.bank_values(_posteriors_summary(), get_profile("quick"))["reference_acc"] == "81%"


def test_method_tables():
    s = _posteriors_summary()
    seconds = tables.method_seconds_table(s, "quick")
    # X and multi-X are one fit, timed together: one row with their total; SGHMC has no multi-X
    pairs = {m: f"multi-{m}" for m in METHODS if f"multi-{m}" in METHODS}
    assert [r[0] for r in seconds.rows] == [f"{m} and {pairs[m]}, fitted together" if m in pairs else m
                                            for m in METHODS if m != "DE" and m not in pairs.values()]
    assert seconds.rows[0][1] == f"{s['seconds']['Dropout'] + s['seconds']['multi-Dropout']:.1f}"
    assert "SGHMC" in [r[0] for r in seconds.rows]
    # the rows do not depend on the order of the summary's keys
    shuffled = {**s, "seconds": dict(reversed(list(s["seconds"].items()))), "methods": list(reversed(s["methods"]))}
    assert tables.method_seconds_table(shuffled, "quick").rows == seconds.rows
    t1 = tables.table1_mnist(s, "quick")
    assert t1.headers == ["method (paper / ours, quick profile)", "MMD (paper) / MMD² (ours)",
                          "NS: MMD (paper) / MMD² (ours)", *TABLE1_COLUMNS[2:]]
    assert t1.rows[0][1].endswith(" / 1.0000") and t1.rows[0][4].endswith(" / 1.2")
    dropout = t1.rows[[r[0] for r in t1.rows].index("Dropout")]
    assert dropout[1].startswith("15.0 / ")  # the paper's decimal kept, as it prints it
    b4 = tables.appendix_b4_table(s, "quick")
    assert b4.rows[0][2] == "1.0000/1.0000/1.0000" and b4.rows[0][4] == "0.5000/0.5000/0.5000"
    assert b4.headers[2] == "MMD² ours (quick)"
    variants = tables.symmetry_removal_table(s)
    assert variants.headers == ["method", "MMD", "NS", "NS min-mass", "NS re-basin"]
    assert variants.rows[0][3] == "n/a"
    lines = tables.method_settings_lines(get_profile("quick"))
    assert lines.startswith("settings (SWAG's snapshots and rank and SGHMC's adaptation at most these): "
                            f"{SETTINGS}\nprofile: ")
    snaps = tables.swag_schedule(get_profile("quick").post_method_epochs)[0]
    assert f"SWAG: {snaps} snapshots, rank {min(SETTINGS['swag_rank'], snaps)};" in lines


def test_mmd_comparison_values():
    values = tables.mmd_comparison_values(_posteriors_summary())
    assert values == {"gap_MMD": "10.00", "gap_NS": "5.00", "ns_lower": f"{len(SINGLE)} of {len(METHODS)}",
                      "ns_not_lower": ", ".join(MULTI),
                      "better_min-mass": "none", "better_re-basin": "DE"}


def test_resnet_rows_without_and_with_a_saved_run():
    rows = tables.resnet_table1_rows("cifar100", None)
    assert [r[0] for r in rows] == list(methods_of("cifar100"))
    assert all(r[2] == tables.RESNET_NEEDS["cifar100"] for r in rows)
    assert tables.resnet_run_line("cifar100", None) == "cifar100: " + tables.RESNET_NEEDS["cifar100"]
    record = {"device": "gpu", "date": "2026-01-01",
              "summary": {"table1": {m: {"MMD": 1.23456, "NS": None} for m in methods_of("cifar100")}}}
    assert tables.resnet_table1_rows("cifar100", record)[0][2] == "1.23 / n/a"
    assert tables.resnet_run_line("cifar100", record) == "cifar100: saved run (gpu, 2026-01-01)"
    assert set(tables.resnet_posterior_values(get_profile("paper"))) == {"rn18_nets", "rn18_dropout", "rn18_samples",
                                                                         "rn18_reference"}


# ---------------------------------------------------------------------------------------
# functional collapse
# ---------------------------------------------------------------------------------------

def _collapse_summary():
    return {"pairs": 6, "networks": 4, "mean_id": 0.1, "std_id": 0.02, "mean_ood": 0.3, "std_ood": 0.09, "cv_id": 0.2,
            "cv_ood": 0.3, "pearson_r": 0.12345, "pearson_p": 0.5, "spearman_rho": 0.1, "below_half_id": 1 / 6}


def test_collapse_line_values_and_rows():
    s = _collapse_summary()
    assert tables.collapse_line(s) == ("6 pairs; MI in nats: ID mean 0.1000 (std 0.0200), OOD mean 0.3000 "
                                       "(std 0.0900)")
    values = tables.collapse_values(s)
    assert list(values) == ["pairs", "nets", *tables.COLLAPSE_STATS, "below_half"]
    assert values["nets"] == 4 and values["below_half"] == pytest.approx(1 / 6)
    rows = tables.collapse_rows(s)
    assert rows[0][2] == "16.7% of pairs below half the mean; coefficient of variation 0.20"
    assert rows[2][2].startswith("Pearson r = 0.123 (p = 0.5 if")
    assert all(r[2].startswith("not run") for r in tables.resnet_collapse_rows(None))
    record = {"device": "gpu", "date": "d", "summary": s}
    assert tables.resnet_collapse_rows(record)[1][2] == "std 0.0900 vs 0.0200 nats (ID)"
    assert tables.resnet_collapse_line(record) == "saved run: gpu, d; 6 pairs"


def _outcome(name, verdict, threshold):
    return SimpleNamespace(claim=SimpleNamespace(name=name), verdict=SimpleNamespace(value=verdict),
                           evidence=SimpleNamespace(threshold=SimpleNamespace(value=threshold)))


def test_claim_threshold_values():
    assert tables.claim_threshold_values([_outcome("a", "holds", 0.1), _outcome("b", "fails", 2)]) == {
        "t_a": 0.1, "t_b": 2}


def test_saved_collapse_values_count_the_networks_of_the_pairs():
    record = {"command": "python -m symlib run functional_collapse --set bank_nets=5 --label x", "device": "cpu",
              "elapsed_s": 600.0, "summary": _collapse_summary()}
    values = tables.saved_collapse_values(record, [_outcome("a", "holds", 1)])
    # 6 pairs = all pairs of 4 networks of the 5 (one did not converge)
    assert (values["bank"], values["networks"], values["failed"], values["per_net"]) == (5, 4, 1, 3)
    assert values["minutes"] == "10" and values["below_half"] == 1
    assert values["cv_compare"] == "the more" and values["pairs"] == 6 and values["v_a"] == "holds"
    assert (values["std_ratio"], values["mean_ratio"]) == pytest.approx((4.5, 3.0))
    # a reduction that reads the first networks of a larger bank names bank_used=, which wins
    used = {**record, "command": record["command"].replace("bank_nets=5", "bank_nets=8 --set bank_used=6"),
            "summary": {**_collapse_summary(), "pairs": 4}}
    values = tables.saved_collapse_values(used, [])
    assert (values["bank"], values["failed"], values["per_net"]) == (6, 2, 2.0)
    with pytest.raises(ValueError, match="names no bank_used= or bank_nets="):
        tables.saved_collapse_values({**record, "command": "run it"}, [])


def test_bank_cpu_hours_scale_the_run_to_the_paper_profile_bank():
    record = {"command": "python -m symlib run functional_collapse --set bank_nets=24 --label x", "elapsed_s": 3600.0}
    # the paper profile's bank: its 1,120 networks and the 128 trained after them
    assert tables.bank_cpu_hours(record, get_profile("paper")) == {"pp_bank": "1,248", "pp_hours": "52"}
    with pytest.raises(ValueError, match="names no bank_nets="):
        tables.bank_cpu_hours({**record, "command": "run it --set bank_used=1024"}, get_profile("paper"))


# ---------------------------------------------------------------------------------------
# the min-mass problem
# ---------------------------------------------------------------------------------------

def test_optunet_layer_params_and_setting_values():
    params = tables.optunet_layer_params()
    assert list(params) == ["conv_0", "conv_1", "dense_0", "dense_1"]
    assert params["dense_1"] == 3 * 10 + 10  # 3 hidden units to 10 classes, with biases
    quick = get_profile("quick")
    values = tables.min_mass_setting_values(quick, 0.05)
    assert values["optunet_params"] == sum(params.values()) and values["ks_level"] == 0.05
    assert values["layer_params"] == " + ".join(map(str, params.values()))
    assert values["converged_acc"] == "15%"


def test_min_mass_and_corollary_lines():
    solved = [SimpleNamespace(mass_before=2.0, mass=1.0, converged=True),
              SimpleNamespace(mass_before=4.0, mass=3.0, converged=True)]
    assert tables.min_mass_lines(solved, 1.5e-12) == (
        "all 2 solved to convergence: True; largest logit change 1.5e-12 (float64)\n"
        "relative mass decrease: mean 0.375, min 0.250, max 0.500")
    d_kernel, d_bias = np.array([-1.0, -0.1]), np.array([0.5, 0.2])
    assert tables.corollary1_line(2e-4, d_kernel, d_bias) == ("weight decay 0.0002; regularised objective lower "
                                                              "for 1 of 2 networks")
    table = tables.objective_change_table(d_kernel, d_bias, np.array([2.0, 2.0]))
    assert table.rows[2] == ["total penalty = regularised objective (data term unchanged)", "-0.2", "-0.5", "+0.1"]
    tiny = tables.objective_change_table(np.array([-1e-7, -2e-7]), np.array([1e-9, 0.0]), np.array([2.0, 2.0]))
    assert tiny.rows[1][1:] == ["+5e-10", "+0", "+1e-09"]  # small changes keep their digits


def test_largest_weight_table_and_ratios():
    largest = {"trained": np.array([[1.0, 2.0], [3.0, 2.0]]), "min-mass": np.array([[2.0, 1.0], [2.0, 1.0]])}
    table = tables.largest_weight_table(largest, ["a", "b"], [8, 4], [10, 5])
    assert table.rows[0] == ["a", "8", "10", "2.000", "2.000", "1.00"]
    assert table.rows[1][-1] == "0.50"
    assert tables.largest_ratio_values(largest, ["a", "b"], [10, 5]) == {
        "ratio_a": "x1.00", "ratio_b": "x0.50", "params_a": 10, "params_b": 5}
    assert tables.layer_labels(["a", "b"], [10, 5]) == ["a\n(10)", "b\n(5)"]


def test_convexity_lines():
    mm = {"hessian_min_over_max_eigenvalue": {"trained": 0.01234, "optimum": 0.5},
          "random_lines": {"convex": 9, "lines": 10, "minimum_at_optimum": 8}}
    assert tables.convexity_lines(mm) == ("smallest / largest Hessian eigenvalue over all networks: trained 0.012, "
                                          "optimum 0.500\nrandom lines through the optimum: 9 of 10 convex, "
                                          "8 smallest at the optimum")


def _pvals():
    raw = {0: np.array([0.01, 0.5, 0.9, 0.2]), 1: np.array([0.6, 0.7])}
    canon = {0: np.array([0.01, 0.02, 0.9, 0.2]), 1: np.array([0.01, 0.7])}
    return {tables.RAW_FORM: raw, tables.CANONICAL_FORM: canon}


def test_marginals_table_and_values():
    pvals = _pvals()
    table = tables.marginals_table(pvals, ["dense_0", "dense_1"], 0.05)
    assert table.headers[2] == f"{tables.RAW_FORM}: share p<0.05 / median p"
    assert table.rows[0] == ["dense_0", "4 incoming", "0.25 / 0.35", "0.50 / 0.11"]
    assert table.rows[1][1] == "2 outgoing (last hidden layer)"
    pooled = {k: np.concatenate(list(v.values())) for k, v in pvals.items()}
    values = tables.marginal_values(pooled, 0.05, 12)
    assert values == {"ks_raw_share": pytest.approx(1 / 6), "ks_canon_share": pytest.approx(0.5), "ks_checkpoints": 12}
    assert tables.pooled_ks_line(pooled, 0.05) == (f"pooled share of p < 0.05: {tables.RAW_FORM} 0.167, "
                                                   f"{tables.CANONICAL_FORM} 0.500")
    largest = {"trained": np.ones((2, 2)), "min-mass": 2 * np.ones((2, 2))}
    nets = {"before": np.array([2.0, 1.0]), "after": np.array([1.0, 1.0]), "largest": largest, "layers": ["a", "b"],
            "layer_params": [3, 4]}
    rows = tables.fig2_rows(nets, nets, pooled, 0.05)
    assert rows[0][2] == "1 of 2 OptuNets, mass 25.0% lower at the optimum; 1 of 2 MLPs"
    assert rows[1][2] == "OptuNet a (3 parameters) x2.00, b (4 parameters) x2.00; MLP a x2.00, b x2.00"
    assert rows[3][2] == "50.0% of KS p-values < 0.05"


def _saved_min_mass(nets, converged):
    mm = {"mass_before": [2.0, 4.0], "mass_after": [1.0, 3.0], "largest_weight_trained": [1.0, 2.0, 1.0, 1.0],
          "largest_weight_min_mass": [1.5, 1.0, 1.0, 1.0], "hidden_bias_sq_before": [0.5, 1.0],
          "hidden_bias_sq_after": [0.5, 3.0]}
    return {"summary": {"nets": nets, "converged": converged, "test_accuracy_mean": 0.8, "test_accuracy_min": 0.7,
                        "min_mass": mm}, "elapsed_s": 120.0, "date": "2026-01-01"}


def test_saved_min_mass_values():
    pp = get_profile("paper")
    mlp = {"summary": {"nets": 256, "swaps": {"units": [100, 100]}}, "elapsed_s": 61.2}
    values = tables.saved_min_mass_values(pp, _saved_min_mass(pp.optunet_nets, pp.optunet_nets),
                                          {"s8": _saved_min_mass(8, 7)}, mlp, {"summary": {"nets": 64}},
                                          {"corollary1_lower_loss": "fails"})
    assert values["pp_dec"] == "25% to 50% (mean 38%)" and values["pp_conv0"] == "x1.50"
    assert values["s8_nets"] == 8 and values["s8_minutes"] == "2" and values["s8_dropped"] == 1
    # network 1: kernels -1, biases +2: the whole penalty grows
    assert (values["pp_cor1_lower"], values["pp_cor1_higher"], values["pp_cor1_kernels_lower"]) == (1, 1, 2)
    assert (values["pp_cor1_db"], values["pp_cor1_dm"], values["pp_cor1_b_before"]) == ("+2.0", "-1.0", "1.0")
    assert values["pp_v_corollary1"] == "fails" and values["pp_mlp_seconds"] == "61"
    assert list(values)[-4:] == ["pp_mlp_sizes", "pp_mlp_nets", "pp_mlp_nets_reduced", "pp_mlp_seconds"]
    with pytest.raises(ValueError, match="saved paper run has 3 OptuNets"):
        tables.saved_min_mass_values(pp, _saved_min_mass(3, 3), {}, mlp, {"summary": {"nets": 64}}, {})


def test_random_unit_direction_has_unit_norm_over_all_groups():
    from symlib.experiments.laurent.optunet import random_unit_direction

    u = {"a": np.zeros(3), "b": np.zeros((2, 2))}
    d = random_unit_direction(u, np.random.default_rng(0))
    assert {k: v.shape for k, v in d.items()} == {"a": (3,), "b": (2, 2)}
    assert sum(np.sum(v ** 2) for v in d.values()) == pytest.approx(1.0)
    again = random_unit_direction(u, np.random.default_rng(0))
    assert all(np.array_equal(d[k], again[k]) for k in d)


def test_the_chapters_figures():
    import matplotlib.pyplot as plt

    from symlib.experiments import plotting

    fig = plotting.pairwise_mi_figure(np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.2, 0.5]), pearson_r=0.5,
                                      spearman_rho=0.25, suptitle="s")
    assert [ax.get_title() for ax in fig.axes] == ["in distribution", "out of distribution",
                                                   "Pearson r = 0.50, Spearman ρ = 0.25"]
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()  # ID and OOD spreads on one scale
    assert fig.axes[0].patches[0].get_width() == pytest.approx(fig.axes[1].patches[0].get_width())
    fig = plotting.grouped_bars_figure(["a", "b"], {"MMD": [1.0, 10.0], "NS": [None, 1.0]}, ylabel="y", log=True)
    assert fig.axes[0].get_yscale() == "log" and len(fig.axes[0].patches) == 4
    assert not fig.axes[0].texts  # nothing at or below zero: no note
    # a value at or below zero (an unbiased MMD² estimate) is drawn at a floor, hatched and labelled, not dropped
    fig = plotting.grouped_bars_figure(["a", "b"], {"MMD": [1.0, -0.005], "NS": [None, 0.5]}, ylabel="y", log=True,
                                       nonpositive_note="≤ 0 (unbiased estimate)")
    low = fig.axes[0].containers[0][1]
    assert np.isclose(low.get_height(), 0.5 * 10.0 ** -plotting.NONPOSITIVE_FLOOR_DECADES) and low.get_hatch()
    assert [t.get_text() for t in fig.axes[0].texts] == ["≤ 0 (unbiased estimate)"]
    assert fig.axes[0].containers[0][0].get_height() == 1.0 and not fig.axes[0].containers[0][0].get_hatch()
    fig = plotting.grouped_bars_figure(["a"], {"MMD": [-1.0]}, ylabel="y", log=True)  # none positive: floor at 1
    assert fig.axes[0].containers[0][0].get_height() == 1.0 and fig.axes[0].texts[0].get_text() == "≤ 0"
    fig = plotting.grouped_bars_figure(["a", "b"], {"MMD": [-1.0, 2.0]}, ylabel="y")  # linear axis: as given
    assert fig.axes[0].containers[0][0].get_height() == -1.0 and not fig.axes[0].texts
    fig = plotting.training_runs_figure(np.ones((3, 4)), np.array([True, False, True]), [1], np.array([0.1, 0.5, 0.9]),
                                        loss_title="l", accuracy_title="a")
    assert [line.get_color() for line in fig.axes[0].lines[:3]] == ["C0", "C3", "C0"] and len(fig.axes[0].lines) == 4
    import matplotlib.colors as mcolors
    dots = fig.axes[1].collections[0].get_facecolors()  # the accuracies coloured as the lines
    assert [mcolors.to_hex(c) for c in dots] == [mcolors.to_hex(c) for c in ("C0", "C3", "C0")]
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in fig.axes[1].get_yticks())  # networks are numbered, not halved
    fig = plotting.mass_landscape_figure(np.linspace(0, 1, 3), np.ones(3), np.linspace(-1, 1, 5), [np.ones(5)] * 2,
                                         {"trained": np.array([1.0, 2.0]), "min-mass": np.array([1.0, 3.0])}, name="n")
    assert len(fig.axes[1].lines) == 2 and fig.axes[2].get_xlabel() == "eigenvalue index (2 rescalable units)"
    fig = plotting.pvalue_cdfs({"raw": [np.array([0.2, 0.4])] * 3}, ["x", "y", "z"])
    assert [ax.get_title() for ax in fig.axes] == ["x", "y", "z"]
    fig = plotting.overlaid_histograms({"p": {"first": np.arange(5.0), "last": np.arange(5.0) + 1}}
                                       | {"q": {"first": np.zeros(3)}}, xlabel="w", ylabel="d")
    assert fig.axes[0].get_legend_handles_labels()[1] == ["first", "last"] and fig.axes[0].get_ylabel() == "d"
    first, last = ([p.get_x() for p in c.patches] for c in fig.axes[0].containers)
    assert np.allclose(first, last)  # the two samples on the same bin edges
    assert fig.axes[0].get_legend() is not None
    plt.close("all")
    fig = plotting.training_runs_figure(np.ones((2, 4)), np.array([True, True]), [1, 2], np.array([0.5, 0.9]),
                                        loss_title="l", accuracy_title="a")
    assert fig.axes[0].get_legend_handles_labels()[1] == ["learning rate changes"]
    before, after = np.array([3.0, 1.0, 2.0]), np.array([2.0, 0.5, 1.5])
    largest = {"trained": np.ones((3, 2)), "min-mass": np.ones((3, 2))}
    fig = plotting.min_mass_figure(before, after, largest, ["a", "b"])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2", "0"]  # indices, by trained mass
    fig = plotting.min_mass_figure(np.arange(1.0, 31.0), np.arange(1.0, 31.0) / 2, {k: np.ones((30, 2)) for k in
                                                                                  largest}, ["a", "b"])
    assert fig.axes[0].get_xlabel() == "rank of the network by trained mass"
    plt.close("all")


def test_gpu_min_mass_values_count_corollary1_on_every_network():
    """Three networks: the min-mass rescaling lowers every kernel mass; the hidden biases of the
    third grow by more than its kernels shrink, so the whole penalty rises there only."""
    mm = {"mass_before": [10.0, 20.0, 30.0], "mass_after": [8.0, 15.0, 27.0],
          "hidden_bias_sq_before": [1.0, 1.0, 2.0], "hidden_bias_sq_after": [1.5, 2.0, 6.5],
          "largest_weight_trained": [1.0, 2.0, 1.0, 1.0], "largest_weight_min_mass": [1.5, 1.0, 1.0, 1.0]}
    record = {"summary": {"nets": 4, "converged": 3, "test_accuracy_mean": 0.75, "test_accuracy_min": 0.5,
                          "min_mass": mm}, "elapsed_s": 61.2, "device": "cpu"}
    prov = {"steps": 8, "of": 9, "devices": "an H100", "minutes": 12.4, "first": "2026-11-27"}
    values = tables.gpu_min_mass_values(record, [_outcome("above_min_mass", "holds", 0.1)], prov)
    assert (values["nets"], values["converged"], values["dropped"], values["acc"]) == (4, 3, 1, "75.0%")
    assert (values["cor1_lower"], values["cor1_higher"], values["cor1_kernels_lower"]) == (2, 1, 3)
    assert (values["cor1_db"], values["cor1_dm"], values["cor1_b_before"]) == ("+4.5", "-3.0", "2.0")
    assert values["dec"] == "10% to 25% (mean 18%)" and (values["conv0"], values["conv1"]) == ("x1.50", "x0.50")
    assert values["seconds"] == "61" and values["v_above_min_mass"] == "holds"
    assert (values["gpu_steps"], values["gpu_devices"], values["gpu_first"]) == (8, "an H100", "2026-11-27")
