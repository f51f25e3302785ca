"""symlib.experiments.xiao.tables and .figures: what the Xiao et al. chapters print, glue and draw,
checked on small known inputs (and the Sec. 1 computations they format: permutation_effect,
distance_by_not, sweep_statistics)."""
from types import SimpleNamespace

import jax
import matplotlib
import numpy as np
import pytest

from symlib.core.models import mlp_init
from symlib.experiments import xiao
from symlib.experiments.profiles import get_profile
from symlib.symmetry.permutations import random_permutation
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def net():
    params = mlp_init(jax.random.key(0), [6, 8, 3])
    x = np.asarray(jax.random.normal(jax.random.key(1), (20, 6)))
    return params, x


# ------------------------------------------------------------------ Sec. 1


def test_permutation_effect_of_a_permuted_copy_and_of_the_network_itself(net):
    params, x = net
    permuted = apply_permutation(mlp_permutation_spec(1), {"P_0": random_permutation(jax.random.key(2), 8)}, params)
    moved = xiao.permutation_effect(params, permuted, x)
    assert moved["max_abs_logit_diff"] < 1e-5 * max(1.0, moved["max_abs_logit"])
    assert moved["prediction_agreement"] == 1.0 and moved["relative_weight_distance"] > 0.1
    same = xiao.permutation_effect(params, params, x)
    assert same["weight_distance"] == 0.0 and same["max_abs_logit_diff"] == 0.0


def test_distance_by_not_plants_each_number_of_transpositions(net):
    params, x = net
    rows = xiao.distance_by_not(params, x, hidden=8, points=4)
    assert [r[0] for r in rows] == [0, 2, 4, 7] and all(r[0] == r[1] for r in rows)
    assert rows[0][3] == 0.0 and all(r[3] > 0 for r in rows[1:]) and all(r[2] < 1e-4 for r in rows)


def test_sec1_lines_values_and_rows():
    effect = {"max_abs_logit_diff": 1.5e-6, "max_abs_logit": 21.25, "prediction_agreement": 1.0,
              "weight_distance": 10.0, "relative_weight_distance": 1.234}
    assert xiao.effect_lines(effect).splitlines()[0] == "max_abs_logit_diff         1.5e-06"
    assert xiao.effect_values(effect, 10000) == {"max_dlogit": "1.5e-06", "max_logit": "21.2",
                                                 "rel_distance": "1.23", "n_test": "10,000"}
    rows = xiao.invariance_rows(effect, 0.9812)
    assert [r[2] for r in rows] == ["1.5e-06", "1.0000", "1.234", "98.12%"]
    assert rows[1][1] == xiao.XIAO_SEC1_CLAIMS["prediction_agreement"]
    text = xiao.distance_by_not_text([(0, 0, 0.0, 0.0), (5, 5, 1e-6, 1.5)]).splitlines()
    assert text == ["    k  NoT(P)  max|dlogit|  rel. distance", "    0       0     0.00e+00          0.000",
                    "    5       5     1.00e-06          1.500"]
    trained = SimpleNamespace(epoch_loss=np.asarray([1.0, 0.25]), test_accuracy=0.98, test_nll=0.07)
    assert xiao.net_line(trained) == "final training objective 0.250; test accuracy 0.9800, test NLL 0.0700"


def test_sec1_figures(net):
    params, _ = net
    fig = xiao.distance_against_not([(0, 0, 0.0, 0.0), (3, 3, 0.0, 1.0)])
    assert fig.axes[0].get_xlabel() == "number of transpositions NoT(P)" and len(fig.axes[0].lines) == 2
    big = {"dense_0": {"kernel": np.ones((784, 50))}, "dense_1": {"kernel": np.ones((50, 10))}}
    first, second = xiao.permuted_weights(big, big, 4)
    assert "4 hidden units" in first.texts[0].get_text() and "same 4" in second.texts[0].get_text()
    matplotlib.pyplot.close("all")


# ------------------------------------------------------------------ Fig. 1

REPS = {s: {"no matching": (1.0, 0.1, 3), "weight matching": (0.2, 0.05, 3), "activation matching": (0.3, 0.0, 3)}
        for s in ("train", "test")}


def _rebasin_result():
    curve = {"accuracy": np.asarray([0.9, 0.5, 0.9])}
    return SimpleNamespace(endpoint_test_accuracy={0: 0.97, 1: 0.96},
                           num_transpositions={"weight matching": 40, "activation matching": 41},
                           permutations={"weight matching": np.arange(4), "activation matching": np.asarray([0, 1, 3, 2])},
                           curve=lambda split, method: curve)


def test_rebasin_lines_values_and_rows():
    res = _rebasin_result()
    lines = xiao.rebasin_pair_lines(res, 64).splitlines()
    assert lines[0] == "pair 0, seed0: test accuracy 0.9700"
    assert lines[2] == "pair 0, weight matching      NoT = 40 of at most 63"
    assert lines[-1].endswith("same partner to 50.0% of the units")
    text = xiao.barrier_text(REPS, res, mid=1).splitlines()
    assert text[1].split() == ["no", "matching", "1.000", "±", "0.100", "1.000", "±", "0.100", "50.00%"]
    assert text[-1] == "(3 independent pairs)"
    values = xiao.barrier_values(REPS)
    assert list(values)[:3] == ["barrier_train_raw", "barrier_train_weight", "barrier_train_activation"]
    assert values["barrier_test_weight"] == "0.200 ± 0.050"
    rows, saved = xiao.barrier_rows(REPS)
    assert len(rows) == 6 and saved == []
    assert rows[0] == ("train loss barrier, no matching (nats)", "clearly > 0 (Fig. 1)", "1.000 ± 0.100 (3 pairs)")
    one = {s: {m: (0.5, float("nan"), 1) for m in REPS[s]} for s in REPS}
    assert xiao.barrier_rows(REPS, one)[1] == ["0.500"] * 6
    record = {"command": "python -m symlib run x", "device": "cpu", "date": "2024-01-01", "elapsed_s": 12}
    assert xiao.saved_run_line(record) == "paper-profile run: `python -m symlib run x` on cpu, 2024-01-01, 12 s"
    assert set(xiao.rebasin_threshold_values()) == {"threshold", "zero_threshold"}
    quick, paper = get_profile("quick"), get_profile("paper")
    setting = xiao.rebasin_setting_values(quick, paper)
    assert setting["seeds"] == "0 and 1" and setting["pp_arch"] == f"784-{paper.hidden}-10"


# ------------------------------------------------------------------ Fig. 2


def test_over_runs():
    assert xiao.over_runs([1.0, 2.0, 3.0]) == "2.000 ± 0.577"
    assert xiao.over_runs([0.5]) == "0.500"


def _sweep():
    not_p = np.asarray([[0, 2, 4], [0, 2, 4]], float)
    cols = {"not_p": not_p, "not_p_prime": not_p + np.asarray([[1, 1, 1], [0, 0, 3]]),
            "distance_raw": not_p * 2, "distance_matched": 1 + not_p / 2,
            "barrier_raw": not_p ** 2, "barrier_matched": np.asarray([[0.1, 0.1, 0.2], [0.2, 0.1, 0.1]])}
    return SimpleNamespace(per_run=lambda c: cols[c])


def test_sweep_statistics_lines_and_values():
    per_run = xiao.sweep_statistics(_sweep())
    assert np.allclose(per_run["Spearman rho(NoT(P), distance_raw)"], 1.0)
    assert np.allclose(per_run["mean |NoT(P') - NoT(P)| (transpositions)"], [1.0, 1.0])
    text = xiao.sweep_statistics_text(per_run).splitlines()
    assert len(text) == 6 and text[1].endswith("(runs: 1.000, 1.000)")
    assert xiao.sweep_statistics_values(per_run)["mean_abs"] == "1.000 ± 0.000"


def _paths():
    partners = {"permuted": SimpleNamespace(not_lambda=np.asarray([0, 0, 5, 6, 6]), not_epochs=np.asarray([6, 6, 7])),
                "independent": SimpleNamespace(not_lambda=np.asarray([0, 3, 2, 6, 7]),
                                               not_epochs=np.asarray([7, 5, 6]))}
    return SimpleNamespace(lambdas=np.linspace(0, 1, 5), epochs=np.arange(3), not_p=6,
                           partner=lambda name: partners[name])


def test_not_path_lines_and_values():
    paths = _paths()
    lines = xiao.not_path_lines(paths, "permuted").splitlines()
    assert lines[0] == "permuted     along lambda: [0, 0, 5, 6, 6]"
    assert lines[1].endswith("largest decrease 0, largest single jump 5 of 6 (83%), ending at lambda = 0.50")
    assert xiao.not_path_values(paths, "independent") == {"jump_independent": "4 of 7",
                                                          "jump_at_independent": "0.75", "drop_independent": 1}
    assert xiao.independent_not_values(paths, 4) == {"ind_epochs": "5 and 7", "hn": "2"}
    reps = {"not_p": np.asarray([6, 5]), "not_epochs": np.asarray([[6, 6, 7], [5, 5, 5]]),
            "not_lambda": np.asarray([[0, 5, 6], [0, 6, 5]])}
    assert xiao.replicates_line(reps) == ("2 independent (reference, permuted copy) pairs: planted NoT [6, 5], range "
                                          "of NoT over the epochs [1, 0], largest fall along the path [0, 1]")
    profile = get_profile("quick")
    values = xiao.epoch_range_values(reps, profile)
    assert values["epoch_ranges"] == "1, 0"
    assert values["steps"] == f"{profile.epochs * (profile.n_train // profile.batch_size):,}"
    rows = xiao.not_claim_rows(xiao.sweep_statistics(_sweep()), _sweep(), paths)
    assert len(rows) == 7 and rows[3][2] == "0.133 ± 0.000 nats (raw: up to 16.000)"
    assert rows[4][2] == "monotone: True; largest single jump 5 of 6"
    assert rows[5][2] == "monotone: False; largest single jump 4 of 7" and rows[6][2] == "6 .. 7 (planted 6)"


def test_threshold_and_saved_values():
    outcome = SimpleNamespace(claim=SimpleNamespace(name="c"), evidence=SimpleNamespace(
        threshold=SimpleNamespace(value=0.50)))
    assert xiao.threshold_values([outcome]) == {"t_c": "0.5"}
    rep = {"units": 10, "repaired": 4, "dead_repaired": 3, "dead_kept": 1, "active_half": 5, "active_half_kept": 5,
           "median_active_kept": 0.25, "median_out_norm_repaired": 0.1, "median_out_norm_kept": 0.8}
    sweep = {"elapsed_s": 600, "summary": {"runs": 2, "not_values": 4, "pearson_not": 0.9,
                                           "spearman": {"distance_raw": 0.95, "barrier_raw": 0.5},
                                           "barrier_matched_mean": 0.01, "barrier_raw_max": 1.5,
                                           "mean_abs_not_change": 20.2,
                                           "rows": {"not_p": [0, 3, 0, 3], "not_p_prime": [10, 12, 20, 14],
                                                    "barrier_raw": [0.01, 1.0, 0.02, 1.5]}}}
    paths = {"elapsed_s": 90, "summary": {"hidden": 20, "not_p": 9, "epochs": 3,
                                          "permuted": {"not_epochs": [9, 9, 12, 13], "not_lambda": [0, 4, 9],
                                                       "repaired": rep}}}
    values = xiao.saved_not_values(sweep, paths, get_profile("paper"))
    assert values["nets"] == 10 and values["s_per_net"] == "60" and values["at_zero"] == "10 and 20"
    # every pair re-pairs at least (fewest transpositions + 1) of the 20 units: 11 of 20
    assert values["at_zero_share"] == "55%" and values["barrier_at_zero"] == "0.010 and 0.020"
    assert values["kept_epochs"] == 1 and values["final_not"] == 13 and values["first_step"] == 4
    assert values["rep_kept"] == 6 and values["rep_norms"] == "0.10 against 0.80" and values["rep_ratio"] == "8"


def test_fig1_and_fig2_figures():
    res = SimpleNamespace(curve=lambda split, m: {"lambda": np.linspace(0, 1, 3), "loss": np.ones(3),
                                                  "accuracy": np.ones(3)})
    assert xiao.interpolation_figure(res) is not None
    fig = xiao.not_sweep_figure(_sweep(), np.asarray([0, 2, 4]))
    assert [ax.get_title() for ax in fig.axes][0] == "(a) NoT(P') against the planted NoT(P)" and len(fig.axes) == 3
    runs = _sweep().per_run("not_p_prime").shape[0]
    assert fig.get_suptitle() == f"mean over {runs} runs, band: +-1 standard error"
    fig = xiao.not_paths_figure(_paths(), 8)
    assert fig.axes[1].get_ylim() == (0, 8)
    matplotlib.pyplot.close("all")


# ------------------------------------------------------------------ Table 1


def _table(value=0.5):
    return {col: {"agreement": (value, 0.01), "tv": (0.25, None), "accuracy_samples": (90.0, 1.0),
                  "accuracy_mean": (None, None) if "sample" in col else (80.0, 2.0)} for col in xiao.TABLE1_ORDER}


def test_table1_cells_rows_and_claims():
    t = xiao.table1(_table())
    assert [r[0] for r in t.rows] == list(xiao.TABLE1_ORDER)
    hmc_qd = t.rows[1]
    assert hmc_qd[1] == "0.5000 +- 0.0100 (0.1212)" and hmc_qd[2] == "0.2500 (0.8641)" and hmc_qd[4] == "80.00 +- 2.00 (28.06)"
    assert t.rows[0][4] == "N/A" and t.rows[3][1] == "0.5000 +- 0.0100"  # no paper value for "(weight)"
    rows, saved = xiao.table1_rows(_table(), {"HMC q_d": {"tv": 0.125}})
    assert len(rows) == 10 * 4 - 2 and rows[0] == ("HMC sample: agreement with HMC", "1.0000", "0.5000")
    assert rows[3] == ("HMC q_d: agreement with HMC", "0.1212", "0.5000")
    assert dict((r[0], r[1]) for r in rows)["HMC q_r (weight): TV to HMC"] == "not in the paper"
    assert saved.count(None) == len(rows) - 1 and "0.1250" in saved
    claims = xiao.table1_claim_rows(_table())
    assert claims[0] == ("(i) HMC: agreement with HMC of q_r vs q_d", "0.825 vs 0.121", "0.500 vs 0.500")
    assert len(claims) == 6 and claims[-1][1] == "97.72 vs 98.66"
    res = SimpleNamespace(replicates=[1, 2], chains_per_replicate=4)
    assert xiao.table1_note(res, "quick").startswith("ours: quick profile, mean +- standard error over 2 independent "
                                                     "runs of 4 HMC chains")


def test_posterior_lines_and_values():
    quick, paper = get_profile("quick"), get_profile("paper")
    values = xiao.posterior_setting_values(quick, paper)
    assert values["chains_per_run"] == quick.hmc_chains // quick.xiao_replicates
    assert values["pp_hidden"] == f"{paper.hidden:,}" and values["hmc_budget"] == str(xiao.hmc_budget(quick))
    assert float(values["rho_gap"]) > 0 and list(values)[-1] == "steps_needed_at_pp_lr"
    assert xiao.posterior_setting_lines(quick).splitlines()[0] == f"HMC budget (quick profile): {xiao.hmc_budget(quick)}"
    assert xiao.samples_line(quick) == (f"{quick.hmc_chains} chains x {quick.hmc_samples} kept samples = "
                                        f"{quick.hmc_chains * quick.hmc_samples} samples")
    diag = SimpleNamespace(rhat_test_loglik=1.25, ess_test_loglik=7.0, rhat_true_class_prob=np.asarray([1.0, 3.0]),
                           ess_true_class_prob=np.asarray([4.0, 6.0]), mean_acceptance=0.8, num_divergences=0)
    rhat_w = xiao.weight_rhat({"dense_0": {"kernel": np.random.default_rng(0).normal(size=(3, 20, 2, 2))},
                               "dense_1": {"kernel": np.random.default_rng(1).normal(size=(3, 20, 2))
                                           + 10 * np.arange(3)[:, None, None]}})
    assert rhat_w["dense_0"].shape == (4,) and np.all(rhat_w["dense_0"] < 1.5)  # one distribution: R-hat near 1
    assert np.all(rhat_w["dense_1"] > 3)  # chains far apart: large R-hat
    table = xiao.convergence_table(diag, rhat_w)
    assert table.rows[2] == ["test log-likelihood", "1.25", "7.0"] and table.rows[3][1:] == ["2.00; 3.00", "5.0"]
    assert xiao.convergence_values(diag, rhat_w, quick)["fn_mixed"] == "have not"
    res = SimpleNamespace(hmc_diagnostics=diag, hmc_test=SimpleNamespace(accuracy=0.9, nll=0.3))
    assert xiao.hmc_line(res) == ("HMC, all chains pooled: mean acceptance 0.800, divergences 0; pooled predictive "
                                  "on the test set: accuracy 0.9000, NLL 0.3000 (Table 1 below scores each run's "
                                  "chains alone)")
    assert table.headers[0] == "quantity (all chains pooled)" and table.rows[0][2] == "-"
    coords = {"num_coordinates": 1234, "num_draws": 10, "ess_min": 1.0, "ess_median": 5.0, "ess_max": 9.0,
              "rhat_median": 1.5, "rhat_max": 3.0, "worst_ess": [{"coordinate": "w[0]", "ess": 1.0, "rhat": 2.0}]}
    assert xiao.coordinate_line(coords).startswith("1,234 weights, 10 draws: ESS min 1.0")
    assert xiao.worst_ess_table(coords).rows == [["w[0]", "1.0", "2.00"]]
    vi = SimpleNamespace(elbo_history=np.linspace(-10, -1, 20), sigma={"a": np.asarray([0.001, 0.5])})
    assert xiao.vi_line(vi, 0.001).endswith("median sigma 0.251 (initial 0.001), 50.0% of sigmas moved above 10x "
                                            "their initial value")


def test_chains_text_and_values():
    by = {"chains": np.asarray([1, 2, 4]), "samples": np.asarray([5, 10, 20]),
          "agreement_q_d": np.asarray([0.9, 0.5, 0.2]), "agreement_q_r": np.asarray([0.95, 0.9, 0.8]),
          "tv_q_d": np.asarray([0.1, 0.4, 0.6]), "tv_q_r": np.asarray([0.05, 0.1, 0.2])}
    assert xiao.chains_text(by).splitlines()[3] == "     4      20          0.200          0.800   0.600   0.200"
    assert xiao.chains_values(by) == {"max_chains": 4, "chain_counts": "1, 2, 4", "chains_one_d": "0.900",
                                      "chains_one_r": "0.950", "chains_all_d": "0.200", "chains_all_r": "0.800"}
    fig = xiao.chains_figure(by, "quick")
    assert fig.axes[0].get_ylim() == (0, 1.02) and len(fig.axes[0].lines) == 2
    fig = xiao.table1_figure(_table(), "quick", 2)
    assert fig.axes[0].get_ylabel() == "agreement with HMC\n(higher is better)"
    # ours carry their standard errors over the runs as error bars; the paper's have none
    assert len(fig.axes[0].containers) == 3 and fig.axes[0].get_legend().get_texts()[0].get_text() == (
        "ours (quick, mean ± s.e. of 2 runs)")
    ax = xiao.elbo_figure([-50.0, -5.0, -2.0]).axes[0]
    assert ax.get_yscale() == "log" and list(ax.lines[0].get_ydata()) == [50.0, 5.0, 2.0]
    assert ax.texts[0].get_text() == "last: 2"
    with pytest.raises(ValueError, match="must be negative"):
        xiao.elbo_figure([-1.0, 0.5])
    matplotlib.pyplot.close("all")


# ------------------------------------------------------------------ Fig. 3


def test_pruning_and_sigma_tables():
    prune = {"keep_fraction": (np.asarray([1.0, 0.25]),) * 2,
             **{k: (np.asarray([0.9, 0.5]), np.asarray([0.01, 0.02])) for k in xiao.PRUNING_LABELS}}
    table = xiao.pruning_table(prune, xiao.PRUNING_LABELS)
    assert table.headers[0] == "weights pruned"
    assert [h.split(":")[0] for h in table.headers[1:]] == list(xiao.PRUNING_LABELS.values())
    assert all("test accuracy (%)" in h for h in table.headers[1:])
    assert table.rows[1][:2] == ["75%", "50.00 ± 2.00"]
    cols = ("HMC q_d", "HMC q_r", "HMC q_r (per chain)", "Ensemble q_d", "Ensemble q_r", "VI q")
    summary = {"median_sigma": {c: 0.5 for c in cols}, "near_prior": {c: 0.125 for c in cols}}
    rows = xiao.sigma_summary_table(summary, get_profile("quick"), 2).rows
    assert rows[0][1] == "0.5 / 0.5 / 0.5" and rows[3][1] == "12.5% / 12.5% / 12.5% / 12.5%"
    assert xiao.sigma_values(summary) == {"near_hmc_d": "12.5%", "med_hmc_d": "0.5", "near_hmc_r": "12.5%",
                                          "med_hmc_r": "0.5", "near_vi": "12.5%", "med_vi": "0.5"}
    fig = xiao.pruning_figure(prune, 2)
    assert fig.axes[0].get_xlabel() == "weights pruned (%)"
    run = SimpleNamespace(sigma={c: np.asarray([0.1, 1.0]) for c in cols}, median_sigma={c: 0.5 for c in cols})
    assert [ax.get_title() for ax in xiao.sigma_histograms(run, 2).axes] == [
        "HMC (run 1 of 2)", "Ensemble (run 1 of 2)", "mean-field VI (run 1 of 2)"]
    # a sigma below the bins' floor (1e-4) is counted in the first bin and the legend says how many
    tiny = SimpleNamespace(sigma={**run.sigma, "Ensemble q_d": np.asarray([1e-7, 1e-6, 0.1, 1.0])},
                           median_sigma=run.median_sigma)
    fig = xiao.sigma_histograms(tiny, 2)
    labels = fig.axes[1].get_legend_handles_labels()[1]
    assert labels[0].endswith(";\n2 below 1e-04, in the first bin") and "below" not in labels[1]
    matplotlib.pyplot.close("all")


def test_sigma_inspection_table_and_values():
    const = np.asarray([True, False, False])
    insp = {"k_d": np.asarray([[0.5, 0.5], [0.2, 0.4], [0.2, 0.4]]), "k_r": np.full((3, 2), 0.25),
            "k_vi": np.asarray([[1.0, 1.0], [0.1, 0.1], [0.1, 0.1]]), "out_d": np.ones((2, 2)),
            "out_r": np.full((2, 2), 0.5), "const": const, "same": [1.0, 0.5, 0.25], "one_d": 0.3, "one_r": 0.2,
            "chains": 3, "n_weights": 12, "n_train": 1000, "n_features": 2}
    rows = xiao.sigma_inspection_table(insp).rows
    assert rows[0] == ["first layer, the 1 always-zero pixels (exact posterior sigma: 1)", "0.500", "0.250", "1.000"]
    assert rows[1][1:] == ["0.300", "0.250", "0.100"] and rows[2][1:3] == ["1.000", "0.500"]
    assert rows[3][0] == "all weights, one sample per chain (3 independent draws)"
    assert rows[3][3] == "n/a (VI has no chains)"
    assert xiao.matching_consistency_line(insp).endswith("chain by chain: 1.00, 0.50, 0.25 (chain 0 holds the reference)")
    values = xiao.sigma_inspection_values(insp, get_profile("quick"))
    assert values["n_const"] == 1 and values["n_train"] == "1,000" and values["other_d"] == "0.300"
    assert values["first_layer_share"] == "50%" and values["init_std"] == "1.00" and values["same_median"] == "0.38"
