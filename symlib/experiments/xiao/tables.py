"""Xiao et al. (2023): what the chapters print and glue from the experiments' results (tables,
aligned text lines, and the values their prose cites), so that a chapter shows one call per
result."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from symlib.experiments.judging.thresholds import THRESHOLDS
from symlib.experiments.profiles import Profile
from symlib.experiments.table import Table, plus_minus
from symlib.experiments.xiao.posteriors import hmc_budget
from symlib.experiments.xiao.runs import not_grid, pair_seeds
from symlib.experiments.xiao.settings import (MATCHING_METHODS, SPLITS, XIAO_FIG1_CLAIMS, XIAO_FIG2_CLAIMS,
                                             XIAO_SEC1_CLAIMS, XIAO_TABLE1, XIAO_TABLE1_SETTING)


# ---------------------------------------------------------------------------------------
# Permuting one trained network (Sec. 1)
# ---------------------------------------------------------------------------------------

def net_line(net: Any) -> str:
    """``"final training objective ...; test accuracy ..., test NLL ..."`` of a trained network
    (:class:`~symlib.experiments.xiao.results.TrainedNet`)."""
    return (f"final training objective {net.epoch_loss[-1]:.3f}; "
            f"test accuracy {net.test_accuracy:.4f}, test NLL {net.test_nll:.4f}")


def effect_lines(effect: Mapping[str, float]) -> str:
    """One line ``name value`` (3 significant digits) per entry of
    :func:`~symlib.experiments.xiao.runs.permutation_effect`."""
    return "\n".join(f"{k:26s} {v:.3g}" for k, v in effect.items())


def effect_values(effect: Mapping[str, float], n_test: int) -> dict[str, str]:
    """The values the prose cites from :func:`~symlib.experiments.xiao.runs.permutation_effect`
    on ``n_test`` test images: ``max_dlogit``, ``max_logit``, ``rel_distance`` and ``n_test``."""
    return {"max_dlogit": f"{effect['max_abs_logit_diff']:.1e}", "max_logit": f"{effect['max_abs_logit']:.3g}",
            "rel_distance": f"{effect['relative_weight_distance']:.2f}", "n_test": f"{n_test:,}"}


def distance_by_not_text(rows: Sequence[tuple[int, int, float, float]]) -> str:
    """The rows of :func:`~symlib.experiments.xiao.runs.distance_by_not` under a header, aligned."""
    lines = [f"{'k':>5} {'NoT(P)':>7} {'max|dlogit|':>12} {'rel. distance':>14}"]
    lines += [f"{k:5d} {n:7d} {d:12.2e} {r:14.3f}" for k, n, d, r in rows]
    return "\n".join(lines)


def invariance_rows(effect: Mapping[str, float], test_accuracy: float) -> list[tuple[str, str, str]]:
    """``(quantity, paper, ours)`` rows of the Sec. 1 claim: the permuted copy's logit difference,
    prediction agreement and relative weight distance, and the trained MLP's test accuracy."""
    paper = XIAO_SEC1_CLAIMS
    return [
        ("max abs logit difference on the test set", paper["max_logit_difference"],
         f"{effect['max_abs_logit_diff']:.1e}"),
        ("prediction agreement", paper["prediction_agreement"], f"{effect['prediction_agreement']:.4f}"),
        ("relative weight distance of the permuted copy", "not reported",
         f"{effect['relative_weight_distance']:.3f}"),
        ("test accuracy of the trained MLP", paper["test_accuracy"], f"{100 * test_accuracy:.2f}%"),
    ]


# ---------------------------------------------------------------------------------------
# Re-basin barriers (Fig. 1)
# ---------------------------------------------------------------------------------------

#: the glue key of each matching method
_METHOD_KEYS = dict(zip(MATCHING_METHODS, ("raw", "weight", "activation")))


def rebasin_setting_values(profile: Profile, paper_profile: Profile) -> dict[str, Any]:
    """The settings the prose of the re-basin chapter cites: ``pairs``, ``seeds`` (of pair 0),
    ``hidden``, and the paper profile's ``pp_arch``, ``pp_n_train`` and ``pp_epochs``."""
    return {"pairs": profile.rebasin_pairs, "seeds": " and ".join(map(str, pair_seeds(0))),
            "hidden": profile.hidden, "pp_arch": f"784-{paper_profile.hidden}-10",
            "pp_n_train": f"{paper_profile.n_train:,}", "pp_epochs": paper_profile.epochs}


def rebasin_pair_lines(res: Any, hidden: int) -> str:
    """Pair 0 of a ``rebasin_barriers`` result (:class:`~symlib.experiments.xiao.results.RebasinResult`):
    the endpoints' test accuracies, the NoT of each matching permutation (of at most
    ``hidden - 1``), and the share of units the two matchings pair alike."""
    lines = [f"pair 0, seed{seed}: test accuracy {acc:.4f}" for seed, acc in res.endpoint_test_accuracy.items()]
    lines += [f"pair 0, {method:20s} NoT = {value} of at most {hidden - 1}"
              for method, value in res.num_transpositions.items()]
    perms = res.permutations
    agree = float(np.mean(perms["weight matching"] == perms["activation matching"]))
    lines.append(f"pair 0: the two methods assign the same partner to {100 * agree:.1f}% of the units")
    return "\n".join(lines)


def barrier_text(reps: Mapping[str, Mapping[str, tuple[float, float, int]]], res: Any, mid: int) -> str:
    """The barriers of :func:`~symlib.experiments.xiao.runs.barrier_replicates` (mean ± SE over the
    pairs, train and test, one line per matching method) with pair 0's test accuracy at the
    path's point ``mid`` (the result's ``curve``), and the number of pairs."""
    lines = [f"{'loss barrier (nats)':22s} {'train':>16s} {'test':>16s}   pair 0: test acc. at lambda=0.5"]
    for m in MATCHING_METHODS:
        cells = [plus_minus(*reps[s][m][:2]) for s in SPLITS]
        acc_mid = 100 * res.curve("test", m)["accuracy"][mid]
        lines.append(f"{m:22s} {cells[0]:>16s} {cells[1]:>16s}   {acc_mid:.2f}%")
    lines.append(f"({reps['train']['no matching'][2]} independent pairs)")
    return "\n".join(lines)


def barrier_values(reps: Mapping[str, Mapping[str, tuple[float, float, int]]]) -> dict[str, str]:
    """``barrier_<split>_<raw|weight|activation>``: ``"mean ± se"`` of every barrier of
    :func:`~symlib.experiments.xiao.runs.barrier_replicates`."""
    return {f"barrier_{s}_{_METHOD_KEYS[m]}": plus_minus(*reps[s][m][:2])
            for s in SPLITS for m in MATCHING_METHODS}


def _mean_se_pairs(stats: tuple[float, float, int]) -> str:
    """``"mean ± se (n pairs)"``, or the mean alone for one pair."""
    mean, se, n = stats
    return f"{mean:.3f}" if n < 2 else f"{plus_minus(mean, se)} ({n} pairs)"


def barrier_rows(reps: Mapping[str, Mapping[str, tuple[float, float, int]]],
                 saved: Mapping[str, Mapping[str, tuple[float, float, int]]] | None = None
                 ) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The Fig. 1 claim beside ours: ``(quantity, paper, ours)`` for each split's barrier of each
    matching method, and the same cells of a saved paper-profile run.

    Args:
        reps: this run's :func:`~symlib.experiments.xiao.runs.barrier_replicates`.
        saved: the saved run's, or None when none was saved.

    Returns:
        The rows and the saved run's cells (empty without one).
    """
    rows, saved_cells = [], []
    for split in SPLITS:
        for m in MATCHING_METHODS:
            claim = XIAO_FIG1_CLAIMS["barrier_no_matching" if m == "no matching" else "barrier_matched"]
            rows.append((f"{split} loss barrier, {m} (nats)", f"{claim} (Fig. 1)", _mean_se_pairs(reps[split][m])))
            if saved is not None:
                saved_cells.append(_mean_se_pairs(saved[split][m]))
    return rows, saved_cells


def saved_run_line(record: Mapping[str, Any]) -> str:
    """``"paper-profile run: `<command>` on <device>, <date>, <seconds> s"`` of a saved run."""
    return (f"paper-profile run: `{record['command']}` on {record['device']}, "
            f"{record['date']}, {record['elapsed_s']} s")


def rebasin_threshold_values() -> dict[str, str]:
    """The thresholds of the re-basin claims the prose cites: ``threshold`` (share of the barrier
    removed) and ``zero_threshold`` (nats left after matching)."""
    return {"threshold": f"{THRESHOLDS['rebasin_barriers.rebasin_removes_barrier'].value:g}",
            "zero_threshold": f"{THRESHOLDS['rebasin_barriers.matched_barrier_nearly_zero'].value:g}"}


# ---------------------------------------------------------------------------------------
# The number of transpositions (Sec. 2, Fig. 2)
# ---------------------------------------------------------------------------------------

def not_setting_values(profile: Profile) -> dict[str, int]:
    """The NoT sweep's size the prose cites: ``runs`` (random initialisations), ``not_values``
    (NoT values per run) and ``hidden`` (units)."""
    return {"runs": profile.not_runs, "not_values": len(not_grid(profile)), "hidden": profile.hidden}


#: the name of the per-run Pearson correlation of NoT(P') with NoT(P) in :func:`~symlib.experiments.xiao.runs.sweep_statistics`
_PEARSON = "Pearson r(NoT(P), NoT(P'))"


def over_runs(values: Sequence[float]) -> str:
    """``"mean ± se"`` over independent runs (:func:`~symlib.experiments.table.plus_minus`); the
    mean alone for one run."""
    v = np.asarray(values, float)
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
    return plus_minus(float(v.mean()), se)


def sweep_statistics_text(per_run: Mapping[str, Sequence[float]]) -> str:
    """One line per statistic of :func:`~symlib.experiments.xiao.runs.sweep_statistics`: its
    :func:`over_runs` and the value of every run."""
    return "\n".join(f"{name:45s} {over_runs(values)}   (runs: {', '.join(f'{v:.3f}' for v in values)})"
                     for name, values in per_run.items())


def sweep_statistics_values(per_run: Mapping[str, Sequence[float]]) -> dict[str, str]:
    """``pearson`` and ``mean_abs``: :func:`over_runs` of the sweep's NoT(P') against NoT(P)."""
    return {"pearson": over_runs(per_run[_PEARSON]),
            "mean_abs": over_runs(per_run["mean |NoT(P') - NoT(P)| (transpositions)"])}


def _path_steps(paths: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    nl = np.asarray(paths.partner(name).not_lambda)
    return nl, np.diff(nl)


def not_path_lines(paths: Any, name: str) -> str:
    """A ``not_paths`` partner's NoT along the path (with its largest decrease and largest single
    step, and where that step ends) and over the epochs, in three lines."""
    nl, steps = _path_steps(paths, name)
    jump = int(steps.max())
    where = np.asarray(paths.lambdas)[1:][int(np.argmax(steps))]
    return "\n".join([f"{name:12s} along lambda: {nl.tolist()}",
                      f"{'':12s} largest decrease {max(0, -int(steps.min()))}, largest single jump "
                      f"{jump} of {int(nl[-1])} ({100 * jump / max(1, nl[-1]):.0f}%), ending at lambda = {where:.2f}",
                      f"{'':12s} over epochs : {np.asarray(paths.partner(name).not_epochs).tolist()}"])


def not_path_values(paths: Any, name: str) -> dict[str, Any]:
    """``jump_<name>`` ("k of n"), ``jump_at_<name>`` (the lambda where it ends) and ``drop_<name>``
    (the largest decrease) of a ``not_paths`` partner's NoT along the path."""
    nl, steps = _path_steps(paths, name)
    return {f"jump_{name}": f"{int(steps.max())} of {int(nl[-1])}",
            f"jump_at_{name}": f"{np.asarray(paths.lambdas)[1:][int(np.argmax(steps))]:.2f}",
            f"drop_{name}": max(0, -int(steps.min()))}


def independent_not_values(paths: Any, hidden: int) -> dict[str, str]:
    """``ind_epochs`` (the least and largest NoT of the independent partner over the epochs) and
    ``hn`` (``hidden - H_hidden``, the expected NoT of a random permutation, rounded)."""
    ind_epochs = np.asarray(paths.partner("independent").not_epochs)
    harmonic = np.sum(1 / np.arange(1, hidden + 1))
    return {"ind_epochs": f"{ind_epochs.min()} and {ind_epochs.max()}", "hn": f"{hidden - harmonic:.0f}"}


def replicates_line(reps: Mapping[str, np.ndarray]) -> str:
    """The independent (reference, permuted copy) pairs of
    :func:`~symlib.experiments.xiao.runs.not_paths_replicates`: planted NoT, range of NoT over the
    epochs and largest fall along the path, one number per pair."""
    return (f"{len(reps['not_p'])} independent (reference, permuted copy) pairs: planted NoT "
            f"{reps['not_p'].tolist()}, range of NoT over the epochs {np.ptp(reps['not_epochs'], axis=1).tolist()}, "
            f"largest fall along the path {[max(0, -int(np.diff(r).min())) for r in reps['not_lambda']]}")


def epoch_range_values(reps: Mapping[str, np.ndarray], profile: Profile) -> dict[str, str]:
    """``steps`` (the profile's training steps) and ``epoch_ranges`` (each pair's range of NoT over
    the epochs, of :func:`~symlib.experiments.xiao.runs.not_paths_replicates`)."""
    return {"steps": f"{profile.epochs * (profile.n_train // profile.batch_size):,}",
            "epoch_ranges": ", ".join(map(str, np.ptp(reps["not_epochs"], axis=1).tolist()))}


def not_claim_rows(per_run: Mapping[str, Sequence[float]], sweep: Any, paths: Any) -> list[tuple[str, str, str]]:
    """The Fig. 2 claims beside ours: ``(quantity, paper, ours)`` for NoT after training, distance
    and barrier against NoT (:func:`~symlib.experiments.xiao.runs.sweep_statistics` over the runs),
    the barrier after matching, and pair 0's NoT along the path and over the epochs."""
    paper = XIAO_FIG2_CLAIMS
    rho = "Spearman rho(NoT(P), {})"
    rows = [("NoT(P') vs NoT(P)", paper["not_after_training"], f"Pearson r = {over_runs(per_run[_PEARSON])}"),
            ("raw distance vs NoT", paper["distance_vs_not"],
             f"Spearman rho = {over_runs(per_run[rho.format('distance_raw')])}"),
            ("raw loss barrier vs NoT", paper["barrier_vs_not"],
             f"Spearman rho = {over_runs(per_run[rho.format('barrier_raw')])}"),
            ("loss barrier after matching", "not shown",
             f"{over_runs(sweep.per_run('barrier_matched').mean(1))} nats "
             f"(raw: up to {sweep.per_run('barrier_raw').max():.3f})")]
    for name, claim in (("permuted", paper["not_along_path"]), ("independent", "not studied")):
        nl, steps = _path_steps(paths, name)
        rows.append((f"NoT along lambda ({name} init, pair 0)", claim,
                     f"monotone: {bool(np.all(steps >= 0))}; largest single jump {int(steps.max())} of {int(nl[-1])}"))
    permuted = paths.partner("permuted")
    rows.append(("NoT over epochs (permuted init, pair 0)", paper["not_over_epochs"],
                 f"{np.min(permuted.not_epochs)} .. {np.max(permuted.not_epochs)} (planted {paths.not_p})"))
    return rows


def threshold_values(outcomes: Sequence[Any]) -> dict[str, str]:
    """``t_<claim>``: the threshold of each claim outcome (:func:`symlib.experiments.judging.claims.evaluate`)."""
    return {f"t_{o.claim.name}": f"{o.evidence.threshold.value:g}" for o in outcomes}


def saved_not_values(saved_sweep: Mapping[str, Any], saved_paths: Mapping[str, Any],
                     paper_profile: Profile) -> dict[str, Any]:
    """What the prose cites from the saved paper-scale ``not_sweep`` and ``not_paths`` runs (their
    records of :func:`symlib.experiments.judging.results.load`) and the paper profile: cost per
    network and of a full sweep, the pooled statistics, the pairs started from one initialisation,
    the permuted pair's NoT over training, and which units re-paired (``rep_*``)."""
    ss, sp = saved_sweep["summary"], saved_paths["summary"]
    rows = {k: np.asarray(v) for k, v in ss["rows"].items()}
    nets = ss["runs"] * (ss["not_values"] + 1)
    per_net = saved_sweep["elapsed_s"] / nets
    rho = ss["spearman"]
    at_zero = rows["not_p"] == 0
    ne, nl = np.asarray(sp["permuted"]["not_epochs"]), np.asarray(sp["permuted"]["not_lambda"])
    rep = sp["permuted"]["repaired"]
    norms = rep["median_out_norm_repaired"], rep["median_out_norm_kept"]
    return {
        "epochs": paper_profile.epochs, "n_train": f"{paper_profile.n_train:,}", "batch": paper_profile.batch_size,
        "s_per_net": f"{per_net:.0f}", "hours_per_run": f"{per_net * (paper_profile.hidden + 1) / 3600:.0f}",
        "paths_min": f"{saved_paths['elapsed_s'] / 60:.1f}", "not_values": ss["not_values"], "runs": ss["runs"],
        "nets": nets, "sweep_min": f"{saved_sweep['elapsed_s'] / 60:.0f}", "pearson": f"{ss['pearson_not']:.3f}",
        "rho": f"{rho['distance_raw']:.2f} and {rho['barrier_raw']:.2f}",
        "matched": f"{ss['barrier_matched_mean']:.3f}", "raw_max": f"{ss['barrier_raw_max']:.2f}",
        "at_zero": " and ".join(str(int(v)) for v in rows["not_p_prime"][at_zero]),
        # k transpositions move at least k + 1 units: the share every pair re-pairs, rounded down
        "at_zero_share": f"{np.floor(100 * (rows['not_p_prime'][at_zero].min() + 1) / sp['hidden']):.0f}%",
        "barrier_at_zero": " and ".join(f"{v:.3f}" for v in rows["barrier_raw"][at_zero]),
        "mean_abs": f"{ss['mean_abs_not_change']:.0f}", "planted": sp["not_p"],
        "kept_epochs": int(np.argmax(ne != sp["not_p"])) - 1, "final_not": int(ne[-1]), "last_epoch": sp["epochs"],
        "first_step": int(nl[1]),
        "steps": f"{paper_profile.epochs * (paper_profile.n_train // paper_profile.batch_size):,}",
        **{f"rep_{key}": rep[key] for key in ("units", "repaired", "dead_repaired", "dead_kept", "active_half",
                                               "active_half_kept")},
        "rep_kept": rep["units"] - rep["repaired"], "rep_active_kept": f"{rep['median_active_kept']:.0%}",
        "rep_norms": f"{norms[0]:.2f} against {norms[1]:.2f}", "rep_ratio": f"{norms[1] / norms[0]:.0f}",
    }


# ---------------------------------------------------------------------------------------
# The compact representation (Sec. 3.1, Table 1)
# ---------------------------------------------------------------------------------------

#: Table 1's rows, in the order the chapter shows them (the paper's and ours)
TABLE1_ORDER = ("HMC sample", "HMC q_d", "HMC q_r", "HMC q_r (weight)", "HMC q_r (per chain)",
                "Ensemble sample", "Ensemble q_d", "Ensemble q_r", "Ensemble q_r (weight)", "VI q")
_PAPER_COL = {c: i for i, c in enumerate(XIAO_TABLE1["columns"])}
#: each metric of Table 1: its label and format
_TABLE1_METRICS = {"agreement": ("agreement with HMC", "{:.4f}"), "tv": ("TV to HMC", "{:.4f}"),
                   "accuracy_samples": ("test acc. % of predictive", "{:.2f}"),
                   "accuracy_mean": ("test acc. % of the mean", "{:.2f}")}


def posterior_setting_lines(profile: Profile) -> str:
    """The HMC budget, the ensemble's size, VI's training and the Monte-Carlo samples of a
    profile, in two lines."""
    return (f"HMC budget ({profile.name} profile): {hmc_budget(profile)}\n"
            f"ensemble of {profile.ensemble_members}; VI {profile.vi_epochs} epochs (Adam, learning rate "
            f"{profile.vi_learning_rate}); {profile.mc_samples} Monte-Carlo samples per Gaussian "
            f"predictive; {profile.bnn_n_train:,} training examples for every approximation")


def posterior_setting_values(profile: Profile, paper_profile: Profile) -> dict[str, Any]:
    """The settings the prose of the compact-representation chapter cites, for ``profile`` and
    (prefixed ``pp_``) for the paper profile: the HMC budget, the data, the ensemble's and VI's
    training; and how far VI's ``rho`` must move from its initial value to reach the prior's
    scale (``rho_gap``), in steps at the paper profile's learning rate."""
    out: dict[str, Any] = {"profile": profile.name, "runs": profile.xiao_replicates,
                           "chains_per_run": profile.hmc_chains // profile.xiao_replicates}
    for tag, p in (("", profile), ("pp_", paper_profile)):
        budget = hmc_budget(p)
        out |= {f"{tag}hmc_budget": str(budget), f"{tag}hmc_leapfrog": f"{budget.leapfrog:,}",
                f"{tag}hmc_warmup": f"{budget.warmup:,}"}
        for field in ("bnn_n_train", "n_val", "hidden", "vi_epochs", "vi_batch_size", "mc_samples",
                      "ensemble_members", "bnn_epochs"):
            out[f"{tag}{field}"] = f"{getattr(p, field):,}"
        out[f"{tag}vi_lr"] = f"{p.vi_learning_rate:g}"
        out[f"{tag}vi_steps"] = f"{p.vi_epochs * (p.bnn_n_train // p.vi_batch_size):,}"
    out["vi_std_init"] = f"{profile.vi_std_init:g}"
    # Adam moves rho (sigma = softplus(rho)) by about the learning rate per step at most
    rho_gap = float(np.log(np.expm1(profile.prior_std)) - np.log(np.expm1(profile.vi_std_init)))
    out["rho_gap"] = f"{rho_gap:.1f}"
    out["vi_steps_at_pp"] = f"{paper_profile.vi_epochs * (profile.bnn_n_train // profile.vi_batch_size):,}"
    out["steps_needed_at_pp_lr"] = f"{rho_gap / paper_profile.vi_learning_rate:,.0f}"
    return out


def hmc_line(res: Any) -> str:
    """The HMC run of a ``compact_representation`` result, all its chains pooled: acceptance,
    divergences, and the pooled predictive's test accuracy and NLL (Table 1 scores each run's
    chains alone, so its HMC row differs)."""
    diag = res.hmc_diagnostics
    return (f"HMC, all chains pooled: mean acceptance {diag.mean_acceptance:.3f}, divergences {diag.num_divergences}; "
            f"pooled predictive on the test set: accuracy {res.hmc_test.accuracy:.4f}, NLL {res.hmc_test.nll:.4f} "
            "(Table 1 below scores each run's chains alone)")


def convergence_table(diag: Any, rhat_w: Mapping[str, np.ndarray]) -> Table:
    """R-hat and ESS of the HMC chains in weight space (median over each layer's weights,
    :func:`~symlib.experiments.xiao.runs.weight_rhat`) and in function space (test log-likelihood,
    true-class probabilities; :class:`~symlib.experiments.xiao.results.HMCDiagnostics`), all the
    chains pooled (the claims judge each run's chains alone)."""
    return Table(["quantity (all chains pooled)", "R-hat", "ESS"], [
        ("weights, first layer (median over weights)", f"{np.median(rhat_w['dense_0']):.2f}", "-"),
        ("weights, output layer (median over weights)", f"{np.median(rhat_w['dense_1']):.2f}", "-"),
        ("test log-likelihood", f"{float(diag.rhat_test_loglik):.2f}", f"{float(diag.ess_test_loglik):.1f}"),
        ("true-class probability of 10 test points (median; max)",
         f"{np.median(diag.rhat_true_class_prob):.2f}; {np.max(diag.rhat_true_class_prob):.2f}",
         f"{np.median(diag.ess_true_class_prob):.1f}"),
    ])


def samples_line(profile: Profile) -> str:
    """``"<chains> chains x <kept> kept samples = <n> samples"`` of a profile's HMC."""
    return (f"{profile.hmc_chains} chains x {profile.hmc_samples} kept samples = "
            f"{profile.hmc_chains * profile.hmc_samples} samples")


def convergence_values(diag: Any, rhat_w: Mapping[str, np.ndarray], profile: Profile) -> dict[str, str]:
    """What the prose cites of the convergence diagnostics: ``rhat_w`` (first layer),
    ``rhat_loglik``, ``ess_loglik``, ``n_hmc`` (samples) and ``fn_mixed`` ("have" when the test
    log-likelihood's R-hat is below 1.1, else "have not")."""
    return {"rhat_w": f"{np.median(rhat_w['dense_0']):.2f}", "rhat_loglik": f"{float(diag.rhat_test_loglik):.2f}",
            "ess_loglik": f"{float(diag.ess_test_loglik):.1f}",
            "n_hmc": f"{profile.hmc_chains * profile.hmc_samples:,}",
            "fn_mixed": "have" if float(diag.rhat_test_loglik) < 1.1 else "have not"}


def coordinate_line(coords: Mapping[str, Any]) -> str:
    """ESS and R-hat over the weights, of :func:`symlib.inference.diagnostics.coordinate_diagnostics`."""
    return (f"{coords['num_coordinates']:,} weights, {coords['num_draws']} draws: "
            f"ESS min {coords['ess_min']:.1f}, median {coords['ess_median']:.1f}, max {coords['ess_max']:.1f}; "
            f"R-hat median {coords['rhat_median']:.2f}, max {coords['rhat_max']:.2f}")


def worst_ess_table(coords: Mapping[str, Any]) -> Table:
    """The weights with the smallest ESS of :func:`symlib.inference.diagnostics.coordinate_diagnostics`."""
    return Table(["weight with the smallest ESS", "ESS", "R-hat"],
                 [(w["coordinate"], f"{w['ess']:.1f}", f"{w['rhat']:.2f}") for w in coords["worst_ess"]])


def vi_line(vi_res: Any, std_init: float) -> str:
    """VI's ELBO per example (first epoch, mean and change over the last tenth of training) and how
    far its standard deviations left their initial value ``std_init``."""
    elbo = np.asarray(vi_res.elbo_history)
    sigma = np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(vi_res.sigma)])
    last = max(1, len(elbo) // 10)
    moved = np.mean(sigma > 10 * std_init)
    return (f"ELBO per example: first epoch {elbo[0]:.2f}, mean of the last tenth "
            f"{elbo[-last:].mean():.3f} (change over the last tenth {elbo[-1] - elbo[-last]:+.3f}); "
            f"median sigma {np.median(sigma):.3f} (initial {std_init}), "
            f"{100 * moved:.1f}% of sigmas moved above 10x their initial value")


def _table1_cell(table: Mapping[str, Any], col: str, metric: str, fmt: str) -> str:
    """Ours (mean +- SE over the runs), and the paper's value in brackets where Table 1 has one."""
    mean, se = table[col][metric]
    ours = "N/A" if mean is None else fmt.format(mean) + ("" if se is None else " +- " + fmt.format(se))
    i = _PAPER_COL.get(col)
    theirs = "" if i is None or XIAO_TABLE1[metric][i] is None else fmt.format(XIAO_TABLE1[metric][i])
    return f"{ours} ({theirs})" if theirs else ours


def table1(table: Mapping[str, Any]) -> Table:
    """Table 1 of a ``compact_representation`` result (its ``table()``: by row and metric, mean and
    standard error over the runs), the paper's value in brackets where it has one."""
    rows = [[col, *(_table1_cell(table, col, m, fmt) for m, (_, fmt) in _TABLE1_METRICS.items())]
            for col in TABLE1_ORDER]
    return Table(["approximation", "agreement with HMC (up)", "TV to HMC (down)", "test acc. % of predictive",
                  "test acc. % of the mean"], rows)


def table1_note(res: Any, profile_name: str) -> str:
    """What Table 1's cells are (ours over the runs, the paper's in brackets) and what its rows
    beyond the paper mean."""
    return (f"ours: {profile_name} profile, mean +- standard error over {len(res.replicates)} independent runs of "
            f"{res.chains_per_replicate} HMC chains, one ensemble and one VI fit each; (in brackets): Xiao et al. "
            f"(2023), Table 1, {XIAO_TABLE1_SETTING}. 'q_r' is activation matching (the paper's choice); "
            "'(weight)' is weight matching; '(per chain)' matches each HMC chain's mean once and applies "
            "that permutation to all its samples.")


def table1_rows(table: Mapping[str, Any], saved: Mapping[str, Mapping[str, float]]
                ) -> tuple[list[tuple[str, str, str]], list[str | None]]:
    """Every cell of Table 1 as a row ``(row: metric, paper, ours)`` for
    :func:`symlib.experiments.report.paper_vs_ours`, and the same cells of a saved paper-profile run.

    Args:
        table: this run's ``table()``.
        saved: the saved run's summary ``table`` (row -> metric -> value); empty when none was saved.

    Returns:
        The rows (cells we do not have are left out) and the saved run's cells (None where it lacks one).
    """
    rows, saved_cells = [], []
    for col in TABLE1_ORDER:
        for metric, (label, fmt) in _TABLE1_METRICS.items():
            ours = table[col][metric][0]
            if ours is None:
                continue
            i = _PAPER_COL.get(col)
            rows.append((f"{col}: {label}", "not in the paper" if i is None else fmt.format(XIAO_TABLE1[metric][i]),
                         fmt.format(ours)))
            saved_cells.append(fmt.format(saved[col][metric]) if metric in saved.get(col, {}) else None)
    return rows, saved_cells


def _versus(table: Mapping[str, Any], metric: str, a: str, b: str, fmt: str) -> tuple[str, str]:
    """``"a vs b"`` for the paper's Table 1 and for ours."""
    return (f"{XIAO_TABLE1[metric][_PAPER_COL[a]]:{fmt}} vs {XIAO_TABLE1[metric][_PAPER_COL[b]]:{fmt}}",
            f"{table[a][metric][0]:{fmt}} vs {table[b][metric][0]:{fmt}}")


def table1_claim_rows(table: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The findings of Sec. 3.1 as ``(finding, paper, ours)`` comparisons of two Table 1 rows:
    (i) q_r against q_d, (ii) the ensemble's q_r against HMC's, (iii) the ensemble's q_r against
    its samples."""
    return [
        *((f"(i) {m}: agreement with HMC of q_r vs q_d", *_versus(table, "agreement", f"{m} q_r", f"{m} q_d", ".3f"))
          for m in ("HMC", "Ensemble")),
        *((f"(i) {m}: test accuracy % of the mean, mu_r vs mu_d",
           *_versus(table, "accuracy_mean", f"{m} q_r", f"{m} q_d", ".2f")) for m in ("HMC", "Ensemble")),
        ("(ii) agreement with HMC: ensemble q_r vs HMC q_r",
         *_versus(table, "agreement", "Ensemble q_r", "HMC q_r", ".3f")),
        ("(iii) test accuracy % of the ensemble's q_r vs its samples",
         *_versus(table, "accuracy_samples", "Ensemble q_r", "Ensemble sample", ".2f")),
    ]


def chains_text(by_chains: Mapping[str, np.ndarray]) -> str:
    """:func:`~symlib.experiments.xiao.posteriors.agreement_by_chains` as aligned lines: samples,
    agreement and TV of q_d and q_r for each number of chains."""
    lines = [f"{'chains':>6} {'samples':>7} {'agreement q_d':>14} {'agreement q_r':>14} {'TV q_d':>7} {'TV q_r':>7}"]
    for i, n in enumerate(by_chains["chains"]):
        b = {k: v[i] for k, v in by_chains.items()}
        lines.append(f"{n:6d} {b['samples']:7d} {b['agreement_q_d']:14.3f} {b['agreement_q_r']:14.3f} "
                     f"{b['tv_q_d']:7.3f} {b['tv_q_r']:7.3f}")
    return "\n".join(lines)


def chains_values(by_chains: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``max_chains``, ``chain_counts`` and the agreements of q_d and q_r for one chain
    (``chains_one_d``, ``chains_one_r``) and for all (``chains_all_*``) of
    :func:`~symlib.experiments.xiao.posteriors.agreement_by_chains`."""
    n_chains = by_chains["chains"]
    out: dict[str, Any] = {"max_chains": int(n_chains.max()), "chain_counts": ", ".join(map(str, n_chains.tolist()))}
    for i, tag in ((0, "one"), (-1, "all")):
        out[f"chains_{tag}_d"] = f"{by_chains['agreement_q_d'][i]:.3f}"
        out[f"chains_{tag}_r"] = f"{by_chains['agreement_q_r'][i]:.3f}"
    return out


# ---------------------------------------------------------------------------------------
# Comparing, merging and pruning (Sec. 3.2, Fig. 3)
# ---------------------------------------------------------------------------------------

def pruning_table(prune: Mapping[str, Any], labels: Mapping[str, str]) -> Table:
    """The pruning curves (a ``compact_representation`` result's ``pruning()``) as a table: the
    share of weights pruned, then each curve's test accuracy % of the mean network (mean +- SE
    over the runs); ``labels``: curve -> its name in the column header, in the columns' order."""
    keep = prune["keep_fraction"][0]
    rows = [(f"{100 * (1 - f):.0f}%", *(plus_minus(100 * prune[k][0][i], 100 * prune[k][1][i], 2) for k in labels))
            for i, f in enumerate(keep)]
    return Table(["weights pruned", *(f"{name}: test accuracy (%), mean ± SE" for name in labels.values())], rows)


def sigma_summary_table(summary: Mapping[str, Any], profile: Profile, runs: int) -> Table:
    """Median sigma of every approximation and the share of weights near the prior's sigma, of a
    ``compact_representation`` summary (``median_sigma``, ``near_prior``; means over ``runs`` runs)."""
    med, near = summary["median_sigma"], summary["near_prior"]
    return Table(["quantity", f"ours ({profile.name} profile, mean over {runs} runs)"], [
        ("median sigma: HMC q_d / HMC q_r (per sample) / HMC q_r (per chain)",
         f"{med['HMC q_d']:.3g} / {med['HMC q_r']:.3g} / {med['HMC q_r (per chain)']:.3g}"),
        ("median sigma: ensemble q_d / q_r", f"{med['Ensemble q_d']:.3g} / {med['Ensemble q_r']:.3g}"),
        ("median sigma: VI (initial value)", f"{med['VI q']:.3g} ({profile.vi_std_init})"),
        ("weights with sigma within 1.5x of the prior's: HMC q_d / HMC q_r / VI / ensemble q_r",
         " / ".join(f"{100 * near[k]:.1f}%" for k in ("HMC q_d", "HMC q_r", "VI q", "Ensemble q_r"))),
    ])


def sigma_values(summary: Mapping[str, Any]) -> dict[str, str]:
    """``near_<hmc_d|hmc_r|vi>`` (share of weights near the prior's sigma) and ``med_<...>`` (median
    sigma) of a ``compact_representation`` summary, in that order per approximation."""
    out = {}
    for key, name in (("HMC q_d", "hmc_d"), ("HMC q_r", "hmc_r"), ("VI q", "vi")):
        out[f"near_{name}"] = f"{100 * summary['near_prior'][key]:.1f}%"
        out[f"med_{name}"] = f"{summary['median_sigma'][key]:.3g}"
    return out


def _pixel_medians(insp: Mapping[str, Any], mask: np.ndarray) -> tuple[str, ...]:
    return tuple(f"{np.median(k[mask]):.3f}" for k in (insp["k_d"], insp["k_r"], insp["k_vi"]))


def sigma_inspection_table(insp: Mapping[str, Any]) -> Table:
    """Median first-layer sigma of HMC (direct and re-basin) and VI on the always-zero pixels and
    on the others, the output layer's, and the medians from one sample per chain, of
    :func:`~symlib.experiments.xiao.posteriors.hmc_sigma_inspection`."""
    const = insp["const"]
    return Table(["weights", "HMC: median sigma_d", "HMC: median sigma_r (per sample)", "VI: median sigma"], [
        (f"first layer, the {int(const.sum())} always-zero pixels (exact posterior sigma: 1)",
         *_pixel_medians(insp, const)),
        ("first layer, the other pixels", *_pixel_medians(insp, ~const)),
        ("output layer", f"{np.median(insp['out_d']):.3f}", f"{np.median(insp['out_r']):.3f}", "not computed"),
        (f"all weights, one sample per chain ({insp['chains']} independent draws)", f"{insp['one_d']:.3f}",
         f"{insp['one_r']:.3f}", "n/a (VI has no chains)"),
    ])


def matching_consistency_line(insp: Mapping[str, Any]) -> str:
    """How consistently per-sample matching permutes each chain's samples
    (:func:`~symlib.experiments.xiao.posteriors.hmc_sigma_inspection`'s ``same``), chain by chain."""
    return ("share of hidden units that per-sample matching permutes like the chain's first sample "
            f"(median over the chain's samples), chain by chain: {', '.join(f'{v:.2f}' for v in insp['same'])} "
            "(chain 0 holds the reference)")


def sigma_inspection_values(insp: Mapping[str, Any], profile: Profile) -> dict[str, Any]:
    """What the prose cites of :func:`~symlib.experiments.xiao.posteriors.hmc_sigma_inspection` and
    of VI's training in ``profile``."""
    k_d, const = insp["k_d"], insp["const"]
    return {"n_const": int(const.sum()), "n_train": f"{insp['n_train']:,}",
            "const_d": f"{np.median(k_d[const]):.3f}", "const_r": f"{np.median(insp['k_r'][const]):.3f}",
            "const_vi": f"{np.median(insp['k_vi'][const]):.3f}", "other_d": f"{np.median(k_d[~const]):.3f}",
            "one_d": f"{insp['one_d']:.3f}", "one_r": f"{insp['one_r']:.3f}",
            "first_layer_share": f"{100 * k_d.size / insp['n_weights']:.0f}%",
            "init_std": f"{np.sqrt(2 / insp['n_features']):.2f}", "same_median": f"{np.median(insp['same'][1:]):.2f}",
            "vi_epochs": profile.vi_epochs, "vi_lr": f"{profile.vi_learning_rate:g}",
            "vi_std_init": f"{profile.vi_std_init:g}", "arch": f"784-{profile.hidden}-10"}
