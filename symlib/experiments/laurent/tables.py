"""Laurent et al. (2024), Secs. 3.6, 4, 5.1 and 5.2: the lines, tables and prose values that the
chapters on the min-mass problem, the swaps during training, the posterior estimates and the
functional collapse show, from the experiments' results, their summaries and the saved
paper-profile runs; so that a chapter shows one call per result."""
from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symlib.core.cnn import OPTUNET_SHAPES
from symlib.experiments.laurent.mlps import LAURENT_FIG2_CLAIMS, LAURENT_FIG4_CLAIMS, MIN_RATIO_RUNS
from symlib.experiments.laurent.optunet import CONVERGED_ACCURACY, LAURENT_OPTUNET, OPTUNET_LAYERS
from symlib.experiments.laurent.posteriors import (APPENDIX_B4_MNIST, BNN_PRIOR_STD, SETTINGS, TABLE1_COLUMNS,
                                                   TABLE1_MNIST, ZOO_GROUPS, bank_decay, sghmc_config,
                                                   swag_schedule)
from symlib.experiments.laurent.posteriors_resnet import SETTINGS as RESNET_SETTINGS
from symlib.experiments.laurent.posteriors_resnet import TABLE1 as RESNET_TABLE1
from symlib.experiments.laurent.posteriors_resnet import methods_of
from symlib.experiments.judging.results import command_setting
from symlib.experiments.profiles import Profile
from symlib.experiments.table import Table
from symlib.symmetry.neuron_order import kendall_tau_from_discordant

# ---------------------------------------------------------------------------------------
# When hidden units change places during training (Sec. 5.2, Fig. 4)
# ---------------------------------------------------------------------------------------

#: the glue key of each of OptuNet's two followed permutations (grouped convolution, dense units)
OPTUNET_SWAP_KEYS = ("conv", "dense")

#: the columns of :func:`phase_table`
PHASE_HEADERS = ("phase (epochs)", "learning rate", "permutation", "swapped pairs / step", "share of steps with a swap",
                 "swaps / epoch (sum of steps)", "net swapped pairs / epoch", "net τ / epoch")


def _converged(res: Any) -> np.ndarray:
    return np.flatnonzero(res.converged)


def optunet_swap_labels(res: Any) -> list[str]:
    """``"<permutation> (<units> units, <blocks> group[s])"`` for each permutation that a
    ``laurent_optunets`` result follows (the panels of :func:`~symlib.experiments.plotting.swap_figure`)."""
    return [f"{n} ({u} units, {b} group{'s' if b > 1 else ''})"
            for n, u, b in zip(res.perm_names, res.units, res.blocks)]


def hidden_layer_labels(widths: Sequence[int]) -> list[str]:
    """``"hidden layer <l> (<width> units)"`` for each hidden layer of an MLP."""
    return [f"hidden layer {l + 1} ({w} units)" for l, w in enumerate(widths)]


def optunet_swap_line(res: Any) -> str:
    """The converged runs of a ``laurent_optunets`` result: how many, their epochs and steps,
    their mean test accuracy and the learning-rate schedule."""
    keep = _converged(res)
    runs, epochs, steps, _ = res.swaps[keep].shape
    return (f"{runs} OptuNets, {epochs} epochs of {steps} steps, test accuracy "
            f"{res.test_accuracy[keep].mean():.3f}; learning rate per epoch "
            f"{np.unique(res.lr)[::-1].tolist()} "
            f"(halved at epochs {res.milestones.tolist()})")


def optunet_swap_values(res: Any, profile: Profile) -> dict[str, Any]:
    """The values the prose cites from the converged runs of a ``laurent_optunets`` result under
    ``profile``: ``runs``, ``epochs``, ``steps`` (SGD steps per run), ``n_train``, ``acc`` and
    ``min_ratio_runs`` (the fewest runs over which the Sec. 5.2 ratios are judged,
    :data:`~symlib.experiments.laurent.mlps.MIN_RATIO_RUNS`)."""
    keep = _converged(res)
    runs, epochs, steps, _ = res.swaps[keep].shape
    return {"runs": runs, "epochs": epochs, "steps": f"{epochs * steps:,}", "n_train": f"{profile.n_train:,}",
            "acc": f"{res.test_accuracy[keep].mean():.0%}", "min_ratio_runs": MIN_RATIO_RUNS}


def mlp_swap_line(res: Any) -> str:
    """A ``laurent_mlps`` result's networks, architecture, epochs and mean test accuracy."""
    return (f"{res.swaps.shape[0]} MLPs {'-'.join(map(str, res.sizes))}, "
            f"{res.swaps.shape[1]} epochs, test accuracy {res.test_accuracy.mean():.3f}")


def phase_table(swaps: Mapping[str, Any], names: Sequence[str], lr: Sequence[float]) -> Table:
    """One row per learning-rate phase and permutation of a swap summary
    (:func:`~symlib.experiments.laurent.mlps.swap_summary`): the phase's epochs (counted from 1)
    and learning rate (``lr`` per epoch), the permutation's name (``names`` by layer index), the
    swapped pairs per step, the share of steps with a swap, the summed and the net swapped
    pairs per epoch, and the net Kendall's τ per epoch."""
    return Table(list(PHASE_HEADERS),
                 [(f"{r['phase'] + 1} ({r['first_epoch'] + 1}-{r['last_epoch'] + 1})", f"{lr[r['first_epoch']]:g}",
                   names[r["layer"]], f"{r['per_step']:.3f}", f"{r['steps_with_swap']:.3f}",
                   f"{r['per_epoch_sum']:.1f}", f"{r['net_per_epoch']:.2f}", f"{r['net_tau']:.3f}")
                  for r in swaps["phases"]])


def late_swaps_line(swaps: Mapping[str, Any]) -> str:
    """The net swapped pairs per epoch over the last epochs of a swap summary against those
    between epochs 1 and 2, with the comparable pairs of each permutation."""
    return (f"last {swaps['late_epochs']} epoch(s): net swapped pairs per epoch "
            f"{np.round(swaps['late_net_per_epoch'], 3).tolist()} vs "
            f"{np.round(swaps['first_net_per_epoch'], 2).tolist()} between epochs 1 and 2 "
            f"(comparable pairs: {swaps['pairs']})")


def _per_step(swaps: Mapping[str, Any], phase: int) -> str:
    """The swapped pairs per step of every permutation in learning-rate phase ``phase``, ``/``-joined."""
    return "/".join(f"{r['per_step']:.3f}" for r in swaps["phases"] if r["phase"] == phase)


def late_taus(swaps: Mapping[str, Any], units: Sequence[int], blocks: Sequence[int]) -> np.ndarray:
    """Kendall's τ of the net change per epoch over the last tenth of training, per permutation
    of a swap summary (``units`` and ``blocks`` per permutation)."""
    return kendall_tau_from_discordant(np.asarray(swaps["late_net_per_epoch"]), np.asarray(units),
                                       np.asarray(blocks))


def _phase_rates(swaps: Mapping[str, Any], layer: int) -> str:
    """The swapped pairs per step of permutation ``layer`` over the learning-rate phases, ``" -> "``-joined."""
    return " -> ".join(f"{r['per_step']:.3f}" for r in swaps["phases"] if r["layer"] == layer)


def fig4_rows(optunet_swaps: Mapping[str, Any], mlp_swaps: Mapping[str, Any], res: Any,
              mlp_widths: Sequence[int]) -> list[tuple[str, str, str]]:
    """``(quantity, paper, ours)`` rows of Fig. 4 and Sec. 5.2: the swapped pairs per step in the
    first and the last learning-rate phase, and the net τ per epoch over the last tenth of
    training, of the OptuNets (swap summary ``optunet_swaps`` of the ``laurent_optunets`` result
    ``res``) and of the MLPs (``mlp_swaps``, hidden widths ``mlp_widths``)."""
    paper, last = LAURENT_FIG4_CLAIMS, len(res.milestones)

    def taus(swaps, units, blocks):
        return "/".join(f"{t:.3f}" for t in late_taus(swaps, units, blocks))

    return [
        ("where the sorting permutation changes (Fig. 4)", paper["where_units_swap"],
         f"swapped pairs per step, OptuNet (conv_1/dense_0) {_per_step(optunet_swaps, 0)} at lr "
         f"{res.lr[0]:g}, {_per_step(optunet_swaps, last)} at lr {res.lr[-1]:g}; MLP (layers 1/2) "
         f"{_per_step(mlp_swaps, 0)} -> {_per_step(mlp_swaps, last)}"),
        ("last phase of training (Sec. 5.2)", paper["last_phase"],
         "net τ per epoch over the last tenth: OptuNet "
         f"{taus(optunet_swaps, res.units, res.blocks)}, "
         f"MLP {taus(mlp_swaps, mlp_widths, [1] * len(mlp_widths))}; swaps per step do not reach 0"),
    ]


def optunet_swap_rate_values(swaps: Mapping[str, Any], units: Sequence[int], blocks: Sequence[int]) -> dict[str, str]:
    """``late_tau_min`` (the smallest net τ per epoch over the last tenth of training) and, per
    permutation of OptuNet, ``<conv|dense>_rates`` (swapped pairs per step over the phases)."""
    values = {"late_tau_min": f"{np.min(late_taus(swaps, units, blocks)):.3f}"}
    values |= {f"{key}_rates": _phase_rates(swaps, q) for q, key in enumerate(OPTUNET_SWAP_KEYS)}
    return values


def _check_paper_size(paper: Mapping[str, Any], paper_profile: Profile) -> None:
    """Raise a ValueError unless the saved OptuNets' paper run has the paper profile's number of networks."""
    if paper["summary"]["nets"] != paper_profile.optunet_nets:
        raise ValueError(f"the saved paper run has {paper['summary']['nets']} OptuNets, the paper profile "
                         f"{paper_profile.optunet_nets}")


def saved_swap_values(paper_profile: Profile, paper: Mapping[str, Any], reductions: Mapping[str, Mapping[str, Any]],
                      mlp_paper: Mapping[str, Any], mlp_reduced: Mapping[str, Any]) -> dict[str, Any]:
    """The values the prose cites from the saved ``laurent_optunets`` and ``laurent_mlps`` runs at
    the paper's scale.

    Args:
        paper_profile: the paper profile.
        paper: the OptuNets' saved paper-profile run (its ``summary`` is read).
        reductions: tag -> a smaller saved run of the OptuNets (e.g. ``{"s8": ...}``).
        mlp_paper: the MLPs' saved paper-profile run.
        mlp_reduced: the MLPs' reduced saved run.

    Returns:
        ``pp_epochs``, ``pp_n_train``, ``pp_nets``; per run (``pp`` for the paper's, else its
        tag) ``<tag>_nets`` (reductions only), ``_dropped``, ``_acc``, ``_conv_rates`` and
        ``_dense_rates``; and ``pp_mlp_sizes``, ``pp_mlp_nets``, ``pp_mlp_nets_reduced``.

    Raises:
        ValueError: if the saved paper run has another number of networks than the profile.
    """
    _check_paper_size(paper, paper_profile)
    values = {"pp_epochs": paper_profile.optunet_epochs, "pp_n_train": f"{paper_profile.n_train:,}",
              "pp_nets": paper_profile.optunet_nets}
    for tag, ss in {"pp": paper["summary"], **{t: r["summary"] for t, r in reductions.items()}}.items():
        if tag != "pp":
            values[f"{tag}_nets"] = ss["nets"]
        values[f"{tag}_dropped"] = ss["nets"] - ss["converged"]
        values[f"{tag}_acc"] = f"{ss['test_accuracy_mean']:.0%}"
        values |= {f"{tag}_{key}_rates": _phase_rates(ss["swaps"], q) for q, key in enumerate(OPTUNET_SWAP_KEYS)}
    values["pp_mlp_sizes"] = "-".join(map(str, (784, *mlp_paper["summary"]["swaps"]["units"], 10)))
    values["pp_mlp_nets"] = mlp_paper["summary"]["nets"]
    values["pp_mlp_nets_reduced"] = mlp_reduced["summary"]["nets"]
    return values


# ---------------------------------------------------------------------------------------
# Posterior estimates against the reference (Sec. 4, Table 1, App. B.4)
# ---------------------------------------------------------------------------------------

def posterior_setting_values(profile: Profile, paper_profile: Profile) -> dict[str, Any]:
    """The settings the prose of the posterior-estimates chapter cites: SWAG's snapshots and
    epochs, and the epochs between its snapshots, under ``profile`` (``_q``) and
    ``paper_profile`` (``_p``), the training images, the Laplace subsample, the methods'
    settings (dropout rate, BNN's ELBO samples and prior standard deviation, SWAG's scale,
    SGHMC's epochs of scale adaptation ``sghmc_adapt_q`` and ``_p``), and the reference's and
    the samples' sizes and the bank's epochs."""
    values = {}
    for tag, p in (("q", profile), ("p", paper_profile)):
        values[f"swag_snaps_{tag}"], values[f"swag_epochs_{tag}"] = swag_schedule(p.post_method_epochs)
        values[f"swag_every_{tag}"] = values[f"swag_epochs_{tag}"] // values[f"swag_snaps_{tag}"]
    return values | {
        "bnn_prior_std": BNN_PRIOR_STD,
        "n_train": f"{profile.n_train:,}", "n_train_p": f"{paper_profile.n_train:,}",
        "laplace_n": f"{profile.laplace_n_data:,}" if profile.laplace_n_data else "all",
        "dropout": SETTINGS["dropout_rate"], "bnn_mc": SETTINGS["bnn_num_mc"], "swag_scale": SETTINGS["swag_scale"],
        "sghmc_adapt_q": _sghmc_of(profile).adapt_epochs, "sghmc_adapt_p": _sghmc_of(paper_profile).adapt_epochs,
        "reference": profile.post_reference,
        "samples": profile.post_samples, "bank_epochs": profile.bank_epochs, "bank_nets": profile.bank_nets,
        "modes": profile.post_modes, "n_eval": f"{profile.post_n_eval:,}"}


def _sghmc_of(profile: Profile):
    """The zoo's SGHMC config under ``profile`` (:func:`~symlib.experiments.laurent.posteriors.sghmc_config`)."""
    return sghmc_config(profile.post_sghmc_epochs, profile.n_train, profile.post_samples, 1.0)


def bank_line(bank: Mapping[str, Any], summary: Mapping[str, Any], split: Mapping[str, Any]) -> str:
    """An ``optunet_bank`` artifact's networks, training time and accuracies, with the sizes of
    the reference and the deep ensemble (``split``) and the reference's mean accuracy
    (``summary`` of ``laurent_posteriors``)."""
    acc = np.asarray(bank["test_accuracy"])
    return (f"{len(acc)} OptuNets trained in {bank['seconds']:.0f} s; {len(split['converged'])} converged "
            f"(test accuracy {acc[split['converged']].min():.2f}-{acc.max():.2f}); reference: "
            f"{len(split['reference'])} networks (mean accuracy {summary['reference_accuracy']:.3f}); "
            f"deep ensemble: {len(split['ensemble'])}")


def _verdict_values(outcomes) -> dict[str, str]:
    """``v_<claim>``: each outcome's verdict, for a chapter's prose about a saved run."""
    return {f"v_{o.claim.name}": o.verdict.value for o in outcomes}


def bank_values(summary: Mapping[str, Any], profile: Profile) -> dict[str, str]:
    """``reference_acc`` (the reference's mean accuracy) and ``bank_lr`` (the bank's learning rate)."""
    return {"reference_acc": f"{summary['reference_accuracy']:.0%}",
            "bank_lr": f"{bank_decay(profile).learning_rate:g}"}


def saved_posterior_values(record: Mapping[str, Any], outcomes) -> dict[str, Any]:
    """The values the prose cites from a saved ``laurent_posteriors`` run: the settings its
    command gave (``bank_used``, ``samples``, ``modes``, ``method_epochs``), the reference's
    size and mean accuracy, every method's accuracy (``acc_<method>``, in percent, ``-`` in
    ``multi-`` names read ``_``), ECE (``ece_<method>``) and ID and OOD mutual information
    (``mi_id_<method>``, ``mi_ood_<method>``) in Table 1's units (times a hundred), the deep ensemble's gap to Table 1's (``de_gap``, points), the
    minutes it ran, its device and the verdicts (``v_<claim>``).

    Args:
        record: the saved run (``summary``, ``command``, ``elapsed_s``, ``device``).
        outcomes: its claims' outcomes (:func:`symlib.experiments.judging.claims.evaluate`).

    Raises:
        ValueError: if the command does not set one of those settings.
    """
    s, cmd = record["summary"], record["command"]
    de = 100 * s["metrics"]["DE"]["acc"]
    return ({"bank_used": f"{int(command_setting(cmd, 'bank_used')):,}", "samples": int(command_setting(cmd, "post_samples")),
             "modes": int(command_setting(cmd, "post_modes")),
             "method_epochs": int(command_setting(cmd, "post_method_epochs")),
             "reference": f"{s['reference_size']:,}", "reference_acc": f"{s['reference_accuracy']:.0%}",
             "de_gap": f"{TABLE1_MNIST['DE'][TABLE1_COLUMNS.index('Acc')] - de:.1f}",
             "minutes": f"{record['elapsed_s'] / 60:.0f}", "device": record["device"]}
            | {f"acc_{m.replace('-', '_')}": f"{100 * s['metrics'][m]['acc']:.1f}%" for m in s["methods"]}
            | {f"{k}_{m.replace('-', '_')}": f"{100 * s['metrics'][m][k]:.1f}" for m in s["methods"]
               for k in ("ece", "mi_id", "mi_ood")}
            | _verdict_values(outcomes))


def method_seconds_table(summary: Mapping[str, Any], profile_name: str) -> Table:
    """The seconds each fit of the method zoo took (:data:`ZOO_GROUPS`; the deep ensemble,
    trained with the bank, left out). A method X and its multi-X are one fit at the modes,
    timed together (the summary gives each half): one row names both, with their total."""
    sec = summary["seconds"]
    return Table(["method", f"seconds ({profile_name} profile, this machine)"],
                 [(" and ".join(names) + (", fitted together" if len(names) > 1 else ""),
                   f"{sum(sec[n] for n in names):.1f}") for names, _ in ZOO_GROUPS.values()])


def method_settings_lines(profile: Profile) -> str:
    """The methods' settings (the paper's, as the zoo takes them) and the profile's choices
    for them, which override SWAG's snapshots and rank and SGHMC's adaptation, two lines."""
    snaps, _ = swag_schedule(profile.post_method_epochs)
    return (f"settings (SWAG's snapshots and rank and SGHMC's adaptation at most these): {SETTINGS}\n"
            f"profile: {profile.post_method_epochs} epoch(s) of Dropout and BNN, {profile.post_sghmc_epochs} of SGHMC, "
            f"started from the modes: {profile.post_warm_start}; SGHMC scale-adapted for "
            f"{_sghmc_of(profile).adapt_epochs} epoch(s) ({profile.n_train:,} images); SWAG: {snaps} snapshots, "
            f"rank {min(SETTINGS['swag_rank'], snaps)}; Laplace Hessian: "
            f"{profile.laplace_hessian} over {profile.laplace_n_data or 'all'} training images")


def _mmd_cell(value: float | None, mmd: bool) -> str:
    """An MMD (4 decimals) or a metric (1 decimal), ``n/a`` for None."""
    return "n/a" if value is None else (f"{value:.4f}" if mmd else f"{value:.1f}")


def table1_ours(summary: Mapping[str, Any], method: str) -> list[float | None]:
    """Table 1's columns for ``method`` of a ``laurent_posteriors`` summary: the median MMD² raw and
    NS, then the metrics in percent (MI times a hundred)."""
    mm, me = summary["mmd"], summary["metrics"][method]
    return [mm["MMD"][method]["median"], mm["NS"][method]["median"],
            *(100 * me[k] for k in ("acc", "ece", "brier", "aupr", "fpr95", "mi_id", "mi_ood"))]


def table1_mnist(summary: Mapping[str, Any], profile_name: str) -> Table:
    """Table 1's MNIST block: one row per method, each cell ``paper / ours`` (the paper's values
    with the one decimal it prints; its MMD columns beside our MMD², as the headers say)."""
    rows = [[m] + [f"{p:.1f} / {_mmd_cell(o, i < 2)}" for i, (p, o) in enumerate(zip(TABLE1_MNIST[m],
                                                                                      table1_ours(summary, m)))]
            for m in summary["methods"]]
    mmd = {"MMD": "MMD (paper) / MMD² (ours)", "NS": "NS: MMD (paper) / MMD² (ours)"}
    return Table(["method (paper / ours, " + profile_name + " profile)", *(mmd.get(c, c) for c in TABLE1_COLUMNS)],
                 rows)


def appendix_b4_table(summary: Mapping[str, Any], profile_name: str) -> Table:
    """App. B.4: the median/mean/max over the kernels of the MMD², raw and NS, paper's and ours."""
    rows = []
    for m in summary["methods"]:
        ours = [summary["mmd"][v][m][s] for v in ("MMD", "NS") for s in ("median", "mean", "max")]
        rows.append([m, "/".join(f"{x:.1f}" for x in APPENDIX_B4_MNIST[m][:3]),
                     "/".join(f"{x:.4f}" for x in ours[:3]),
                     "/".join(f"{x:.1f}" for x in APPENDIX_B4_MNIST[m][3:]), "/".join(f"{x:.4f}" for x in ours[3:])])
    return Table(["method", "MMD paper", f"MMD² ours ({profile_name})", "NS paper", f"NS MMD² ours ({profile_name})"],
                 rows)


def symmetry_removal_table(summary: Mapping[str, Any]) -> Table:
    """The median MMD² of every method under every way of removing the symmetries (raw included)."""
    variants = list(summary["mmd"])
    return Table(["method", *variants], [[m] + [_mmd_cell(summary["mmd"][v][m]["median"], True) for v in variants]
                                         for m in summary["methods"]])


def resnet_posterior_values(paper_profile: Profile) -> dict[str, Any]:
    """The ResNet-18 settings the prose cites: ``rn18_nets``, ``rn18_dropout``, ``rn18_samples``,
    ``rn18_reference``."""
    return {"rn18_nets": f"{paper_profile.rn18_nets:,}", "rn18_dropout": RESNET_SETTINGS["dropout_rate"],
            "rn18_samples": paper_profile.rn18_samples, "rn18_reference": f"{paper_profile.rn18_reference:,}"}


#: what a ResNet-18 task needs, shown where no run of it is saved
RESNET_NEEDS = {"cifar100": "not run: needs CIFAR-100 data and a GPU",
                "tiny_imagenet": "not run: needs TinyImageNet data and a GPU"}


def resnet_run_line(task: str, record: Mapping[str, Any] | None) -> str:
    """``"<task>: saved run (<device>, <date>)"``, or what the task needs when ``record`` is None."""
    if record is None:
        return f"{task}: {RESNET_NEEDS[task]}"
    return f"{task}: saved run ({record['device']}, {record['date']})"


def resnet_table1_rows(task: str, record: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    """``(method, paper, ours)`` rows of Table 1's ResNet-18 block for ``task``, each cell the nine
    columns ``/``-joined; ours from a saved ``rn18_posteriors_<task>`` run, or what it needs."""
    rows = []
    for m in methods_of(task):
        paper = " / ".join("/" if v is None else f"{v:g}" for v in RESNET_TABLE1[task][m])
        ours = RESNET_NEEDS[task] if record is None else " / ".join(
            "n/a" if v is None else f"{v:.3g}" for v in record["summary"]["table1"][m].values())
        rows.append((m, paper, ours))
    return rows


def mmd_comparison_values(summary: Mapping[str, Any]) -> dict[str, str]:
    """What the prose cites from the MMD² of a ``laurent_posteriors`` summary: ``gap_<MMD|NS>``
    (the smallest single-mode MMD² over the largest multi-mode one), ``ns_lower`` and
    ``ns_not_lower`` (the methods whose MMD² NS lowers, or not), and ``better_<min-mass|re-basin>``
    (the methods for which that way of removing the symmetries beats NS)."""
    mmd, methods = summary["mmd"], summary["methods"]
    values = {}
    for v in ("MMD", "NS"):
        best_single = min(mmd[v][m]["median"] for m in summary["single"])
        worst_multi = max(mmd[v][m]["median"] for m in summary["multi"])  # the multi-mode methods and DE
        values[f"gap_{v}"] = f"{best_single / worst_multi:.2f}"
    ns_lower = [m for m in methods if mmd["NS"][m]["median"] < mmd["MMD"][m]["median"]]
    values["ns_lower"] = f"{len(ns_lower)} of {len(methods)}"
    values["ns_not_lower"] = ", ".join(m for m in methods if m not in ns_lower) or "none"
    for v in ("NS min-mass", "NS re-basin"):
        better = [m for m in methods
                  if mmd[v][m]["median"] is not None and mmd[v][m]["median"] < mmd["NS"][m]["median"]]
        values[f"better_{v.split()[-1]}"] = ", ".join(better) or "none"
    return values


# ---------------------------------------------------------------------------------------
# Functional collapse (Sec. 5.1, App. D.2)
# ---------------------------------------------------------------------------------------

#: the summary entries of ``functional_collapse`` that the prose cites as numbers
COLLAPSE_STATS = ("mean_id", "std_id", "mean_ood", "std_ood", "cv_id", "cv_ood", "pearson_r", "spearman_rho")


def collapse_line(summary: Mapping[str, Any]) -> str:
    """The pairs of a ``functional_collapse`` summary and the mean and standard deviation of their
    MI in and out of distribution."""
    return (f"{summary['pairs']} pairs; MI in nats: ID mean {summary['mean_id']:.4f} "
            f"(std {summary['std_id']:.4f}), OOD mean {summary['mean_ood']:.4f} "
            f"(std {summary['std_ood']:.4f})")


def collapse_values(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``pairs``, ``nets``, the statistics of :data:`COLLAPSE_STATS` and ``below_half`` (the share of
    pairs whose ID MI is below half the mean) of a ``functional_collapse`` summary."""
    return {"pairs": summary["pairs"], "nets": summary["networks"],
            **{k: float(summary[k]) for k in COLLAPSE_STATS}, "below_half": float(summary["below_half_id"])}


def collapse_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(quantity, paper, ours)`` rows of Fig. 7 and App. D.2 for a ``functional_collapse``
    summary: the spread of the ID MI, the spread of the OOD MI against it, their correlation."""
    s = summary
    return [
        ("spread of the ID MI (Fig. 7)", "non-negligible probability of an MI twice lower than the mean",
         f"{s['below_half_id']:.1%} of pairs below half the mean; coefficient of variation {s['cv_id']:.2f}"),
        ("spread of the OOD MI (Sec. 5.1, Fig. 3, said of ResNet-18; carried to OptuNet)",
         "higher than in distribution",
         f"std {s['std_ood']:.4f} vs {s['std_id']:.4f} nats (coefficient of variation "
         f"{s['cv_ood']:.2f} vs {s['cv_id']:.2f})"),
        ("ID vs OOD MI (App. D.2)", "some positive correlation for OptuNet (none for ResNet-18 on CIFAR-100)",
         f"Pearson r = {s['pearson_r']:.3f} (p = {s['pearson_p']:.2g} if the pairs were "
         f"independent), Spearman ρ = {s['spearman_rho']:.3f}"),
    ]


def collapse_resnet_values(paper_profile: Profile) -> dict[str, str]:
    """``rn18_nets`` and ``rn18_eval``: the paper profile's ResNet-18 bank and evaluation images."""
    return {"rn18_nets": f"{paper_profile.rn18_nets:,}", "rn18_eval": f"{paper_profile.rn18_n_eval:,}"}


def resnet_collapse_rows(record: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    """``(quantity, paper, ours)`` rows of Fig. 3 (ResNet-18 on CIFAR-100) from a saved
    ``rn18_collapse_cifar100`` run, or what it needs when ``record`` is None."""
    if record is None:
        cells = ["not run: needs CIFAR-100 data and a GPU"] * 3
    else:
        rs = record["summary"]
        cells = [f"std {rs['std_id']:.4f} nats (coefficient of variation {rs['cv_id']:.2f})",
                 f"std {rs['std_ood']:.4f} vs {rs['std_id']:.4f} nats (ID)",
                 f"Pearson r = {rs['pearson_r']:.3f} (p = {rs['pearson_p']:.2g}), "
                 f"Spearman ρ = {rs['spearman_rho']:.3f}"]
    return [("spread of the ID MI (Fig. 3, left)", "very low variance", cells[0]),
            ("spread of the OOD MI (Fig. 3, centre)", "higher than in distribution", cells[1]),
            ("ID vs OOD MI (Fig. 3, right)", "no significant correlation", cells[2])]


def resnet_collapse_line(record: Mapping[str, Any]) -> str:
    """``"saved run: <device>, <date>; <pairs> pairs"`` of a saved ``rn18_collapse_*`` run."""
    return f"saved run: {record['device']}, {record['date']}; {record['summary']['pairs']} pairs"


def claim_threshold_values(outcomes: Sequence[Any]) -> dict[str, Any]:
    """``t_<claim>``: the threshold of each judged claim (:class:`~symlib.experiments.judging.claims.Outcome`)."""
    return {f"t_{o.claim.name}": o.evidence.threshold.value for o in outcomes}


def saved_collapse_values(record: Mapping[str, Any], outcomes: Sequence[Any]) -> dict[str, Any]:
    """The values the prose cites from a saved reduced ``functional_collapse`` run (its command
    names the bank's size, ``bank_used=`` or ``bank_nets=``) and the claims judged on it.

    Args:
        record: the saved run (``command``, ``device``, ``elapsed_s``, ``summary``).
        outcomes: the claims evaluated on the run's summary.

    Returns:
        ``bank`` (the networks the run read), ``device``, ``minutes``, ``cv_compare``,
        ``networks`` (the converged networks in the pairs), ``failed`` (the others),
        ``per_net`` (pairs per network, on average), ``below_half`` (pairs below half the
        mean ID MI), ``std_ratio`` and ``mean_ratio`` (OOD over ID), the
        summary's numbers ``<pairs|mean_id|...>`` and ``v_<claim>`` (verdicts).

    Raises:
        ValueError: if the run's command names neither ``bank_used=`` nor ``bank_nets=``.
    """
    ss = record["summary"]
    bank_size = _command_int(record["command"], ("bank_used", "bank_nets"))
    n = int(ss["networks"])
    values = {"bank": bank_size, "device": record["device"],
              "cv_compare": "the more" if ss["cv_ood"] > ss["cv_id"] else "not the more",
              "minutes": f"{record['elapsed_s'] / 60:.0f}", "networks": n, "failed": bank_size - n,
              "per_net": 2 * int(ss["pairs"]) / n,
              "below_half": int(round(ss["below_half_id"] * ss["pairs"])),
              "std_ratio": float(ss["std_ood"] / ss["std_id"]), "mean_ratio": float(ss["mean_ood"] / ss["mean_id"])}
    for k in ("pairs", "mean_id", "std_id", "mean_ood", "std_ood", "cv_id", "cv_ood", "pearson_r", "pearson_p",
              "spearman_rho"):
        values[k] = ss[k] if isinstance(ss[k], int) else float(ss[k])
    values |= _verdict_values(outcomes)
    return values


def bank_cpu_hours(record: Mapping[str, Any], paper_profile: Profile) -> dict[str, Any]:
    """``pp_bank`` (the paper profile's bank: ``bank_nets`` and the ``bank_more`` after them) and
    ``pp_hours``: the hours it would take at the rate of a saved ``functional_collapse`` run that trained its bank of ``bank_nets=``
    networks itself (its ``elapsed_s``)."""
    bank_size = _command_int(record["command"], ("bank_nets",))
    whole = paper_profile.bank_nets + paper_profile.bank_more
    return {"pp_bank": f"{whole:,}", "pp_hours": f"{record['elapsed_s'] / bank_size * whole / 3600:.0f}"}


def _command_int(command: str, fields: Sequence[str]) -> int:
    """The first of ``fields`` that a saved run's command sets, as an integer
    (:func:`~symlib.experiments.judging.results.command_setting`).

    Raises:
        ValueError: if the command sets none of them.
    """
    for field in fields:
        with contextlib.suppress(ValueError):
            return int(command_setting(command, field))
    raise ValueError(f"the saved run's command names no {' or '.join(f + '=' for f in fields)}: {command!r}")


# ---------------------------------------------------------------------------------------
# The min-mass problem (Fig. 2, Corollary 1, Proposition 2, App. D.3)
# ---------------------------------------------------------------------------------------

def optunet_layer_params() -> dict[str, int]:
    """Parameters (weights and biases) of each of OptuNet's layers, by our count of its shapes."""
    return {layer: sum(int(np.prod(shape)) for path, shape in OPTUNET_SHAPES.items() if path.startswith(layer + "/"))
            for layer in OPTUNET_LAYERS}


def min_mass_setting_values(profile: Profile, ks_level: float) -> dict[str, Any]:
    """The settings the prose of the min-mass chapter cites: OptuNet's parameters (total and per
    layer), the training images, the OptuNets' number, epochs and SGD steps, the convergence
    threshold, the level ``ks_level`` of the marginals' KS tests and the MLPs' hidden widths."""
    params = optunet_layer_params()
    steps = profile.optunet_epochs * (profile.n_train // LAURENT_OPTUNET["batch_size"])
    return {"optunet_params": sum(params.values()), "layer_params": " + ".join(str(v) for v in params.values()),
            "n_train": f"{profile.n_train:,}", "optunet_nets": profile.optunet_nets,
            "optunet_epochs": profile.optunet_epochs, "optunet_steps": f"{steps:,}",
            "converged_acc": f"{CONVERGED_ACCURACY:.0%}", "ks_level": ks_level,
            "mlp_hidden": " and ".join(map(str, profile.laurent_hidden))}


def optunet_training_line(res: Any, profile: Profile) -> str:
    """A ``laurent_optunets`` result's networks, epochs, steps and schedule, and the test accuracy of
    those that reached the convergence threshold."""
    keep = _converged(res)
    acc = res.test_accuracy[keep]
    return (f"{len(res.converged)} OptuNets, {res.epoch_loss.shape[1]} epochs on {profile.n_train} "
            f"images ({res.swaps.shape[2]} steps per epoch), learning rate halved at epochs "
            f"{res.milestones.tolist()}; "
            f"{len(keep)} reached {CONVERGED_ACCURACY:.0%}: test accuracy "
            f"{acc.mean():.3f} (min {acc.min():.3f}, max {acc.max():.3f})")


def min_mass_lines(solved: Sequence[Any], max_logit_change: float) -> str:
    """Two lines on min-mass solutions (:func:`~symlib.symmetry.min_mass`): whether every solve
    converged, the largest logit change of the rescaled networks, and the relative mass decrease."""
    decrease = np.array([(s.mass_before - s.mass) / s.mass_before for s in solved])
    return (f"all {len(solved)} solved to convergence: {all(s.converged for s in solved)}; "
            f"largest logit change {max_logit_change:.1e} (float64)\n"
            f"relative mass decrease: mean {decrease.mean():.3f}, min {decrease.min():.3f}, "
            f"max {decrease.max():.3f}")


def layer_labels(layers: Sequence[str], params: Sequence[int]) -> list[str]:
    """``"<layer>\\n(<parameters>)"`` per layer: the x tick labels of
    :func:`~symlib.experiments.plotting.min_mass_figure`."""
    return [f"{l}\n({p})" for l, p in zip(layers, params)]


def largest_weight_table(largest: Mapping[str, np.ndarray], layers: Sequence[str], weights: Sequence[int],
                         params: Sequence[int]) -> Table:
    """Per layer: its weights and parameters, the mean over networks of its largest absolute
    weight, trained and at the min-mass point (``largest``: form -> (networks, layers)), and their ratio."""
    return Table(["layer", "weights", "parameters", "largest |w| trained (mean)", "largest |w| min-mass (mean)",
                  "ratio"],
                 [(l, w, p, f"{largest['trained'][:, i].mean():.3f}", f"{largest['min-mass'][:, i].mean():.3f}",
                   f"{largest['min-mass'][:, i].mean() / largest['trained'][:, i].mean():.2f}")
                  for i, (l, w, p) in enumerate(zip(layers, weights, params))])


def corollary1_line(weight_decay: float, d_kernel: np.ndarray, d_bias: np.ndarray) -> str:
    """How many networks the min-mass rescaling gives a lower regularised objective (the kernel
    and hidden-bias penalty changes ``d_kernel`` and ``d_bias`` per network sum below zero)."""
    return (f"weight decay {weight_decay}; regularised objective lower for {np.sum(d_kernel + d_bias < 0)} "
            f"of {len(d_kernel)} networks")


def objective_change_table(d_kernel: np.ndarray, d_bias: np.ndarray, final_objective: np.ndarray) -> Table:
    """Mean, min and max over networks of the change of the training objective by the min-mass
    rescaling: its kernel and hidden-bias penalty parts, their total, and the total relative to
    each network's last-epoch objective."""
    return Table(["change of the training objective per network", "mean", "min", "max"],
                 [(name, *(f"{f(v):+.4g}" for f in (np.mean, np.min, np.max)))
                  for name, v in (("kernel penalty (wd/2) dM", d_kernel),
                                  ("hidden-bias penalty (wd/2) dB", d_bias),
                                  ("total penalty = regularised objective (data term unchanged)", d_kernel + d_bias),
                                  ("total, relative to the last epoch's mean objective",
                                   (d_kernel + d_bias) / final_objective))])


def convexity_lines(min_mass: Mapping[str, Any]) -> str:
    """The Hessian's smallest over largest eigenvalue at each point and the random lines through the
    optimum (convex, smallest there) of a summary's ``min_mass`` entry, two lines."""
    ev, rl = min_mass["hessian_min_over_max_eigenvalue"], min_mass["random_lines"]
    return ("smallest / largest Hessian eigenvalue over all networks: "
            + ", ".join(f"{k} {v:.3f}" for k, v in ev.items())
            + f"\nrandom lines through the optimum: {rl['convex']} of {rl['lines']} convex, "
              f"{rl['minimum_at_optimum']} smallest at the optimum")


def mlp_min_mass_line(res: Any, profile: Profile, before: np.ndarray, after: np.ndarray) -> str:
    """A ``laurent_mlps`` result's networks, recipe and test accuracy, and the mean relative mass
    decrease from ``before`` to ``after`` the min-mass problem."""
    return (f"{len(before)} MLPs {'-'.join(map(str, res.sizes))}, {profile.laurent_epochs} epochs, "
            f"weight decay {profile.laurent_weight_decay}; "
            f"test accuracy {res.test_accuracy.mean():.3f}; "
            f"mass lower at the optimum by {100 * np.mean(1 - after / before):.1f}% on average")


def pooled_ks_line(pooled: Mapping[str, np.ndarray], level: float) -> str:
    """The share of KS p-values below ``level``, pooled over layers, per form of the weights."""
    return f"pooled share of p < {level}: " + ", ".join(f"{k} {np.mean(v < level):.3f}" for k, v in pooled.items())


#: the form of the weights before symmetry removal, and after both are removed (keys of the marginals' p-values)
RAW_FORM, CANONICAL_FORM = "trained (raw)", "scaling and permutation removed"


def marginal_values(pooled: Mapping[str, np.ndarray], level: float, checkpoints: int) -> dict[str, Any]:
    """``ks_raw_share`` and ``ks_canon_share`` (the pooled share of KS p-values below ``level``
    before and after symmetry removal) and ``ks_checkpoints``."""
    return {"ks_raw_share": float(np.mean(pooled[RAW_FORM] < level)),
            "ks_canon_share": float(np.mean(pooled[CANONICAL_FORM] < level)), "ks_checkpoints": checkpoints}


def marginal_weights_tested(l: int, layers: Sequence[str]) -> str:
    """Which weights the marginal tests of layer ``l`` of ``layers`` compare: those of its first
    and last unit, incoming for a hidden layer; for the output layer (which has no hidden units)
    the outgoing weights of the last hidden layer's first and last unit."""
    return "incoming" if l < len(layers) - 1 else "outgoing (last hidden layer)"


def marginals_table(pvals: Mapping[str, Mapping[int, np.ndarray]], layers: Sequence[str], level: float) -> Table:
    """Per layer: the weight positions tested, and per form of the weights the share of KS p-values
    below ``level`` and their median (``pvals``: form -> layer index -> p-values)."""
    rows = []
    for l, name in enumerate(layers):
        kind = marginal_weights_tested(l, layers)
        rows.append((name, f"{len(pvals[RAW_FORM][l])} {kind}",
                     *[f"{np.mean(p[l] < level):.2f} / {np.median(p[l]):.2f}" for p in pvals.values()]))
    return Table(["layer", "positions tested", *[f"{k}: share p<{level} / median p" for k in pvals]], rows)


def _largest_ratio(largest: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per layer: the mean largest weight at the min-mass point over the trained one's."""
    return largest["min-mass"].mean(0) / largest["trained"].mean(0)


def fig2_rows(optunet: Mapping[str, Any], mlp: Mapping[str, Any], pooled: Mapping[str, np.ndarray],
              level: float) -> list[tuple[str, str, str]]:
    """``(quantity, paper, ours)`` rows of Fig. 2 and App. D.3.

    Args:
        optunet: the OptuNets' ``before`` and ``after`` masses, ``largest`` weights (form ->
            (networks, layers)), ``layers`` and ``layer_params``.
        mlp: the MLPs' ``before``, ``after``, ``largest`` and ``layers``.
        pooled: form -> the marginals' KS p-values pooled over layers.
        level: the level at which a p-value counts as small.
    """
    paper, o, m = LAURENT_FIG2_CLAIMS, optunet, mlp
    decrease = (o["before"] - o["after"]) / o["before"]
    return [
        ("trained networks above their min-mass point (Fig. 2, OptuNets)", paper["above_min_mass"],
         f"{np.sum(o['after'] < o['before'])} of {len(o['before'])} OptuNets, mass {100 * decrease.mean():.1f}% lower "
         f"at the optimum; {np.sum(m['after'] < m['before'])} of {len(m['before'])} MLPs"),
        ("largest weight after solving min-mass (Fig. 2)", paper["largest_weight_after_min_mass"],
         "OptuNet " + ", ".join(f"{l} ({w} parameters) x{r:.2f}"
                                for l, w, r in zip(o["layers"], o["layer_params"], _largest_ratio(o["largest"])))
         + "; MLP " + ", ".join(f"{l} x{r:.2f}" for l, r in zip(m["layers"], _largest_ratio(m["largest"])))),
        ("marginals across units before symmetry removal (Fig. 9, MLP)", paper["marginals_before_removal"],
         f"{100 * np.mean(pooled[RAW_FORM] < level):.1f}% of KS p-values < {level}"),
        ("after symmetry removal (App. D.3)", paper["marginals_after_removal"],
         f"{100 * np.mean(pooled[CANONICAL_FORM] < level):.1f}% of KS p-values < {level}"),
    ]


def largest_ratio_values(largest: Mapping[str, np.ndarray], layers: Sequence[str],
                         params: Sequence[int]) -> dict[str, Any]:
    """``ratio_<layer>`` (``"x<ratio>"``, the mean largest weight at the min-mass point over the
    trained one's) for every layer, then ``params_<layer>``."""
    values = {f"ratio_{name}": f"x{r:.2f}" for name, r in zip(layers, _largest_ratio(largest))}
    return values | {f"params_{name}": n for name, n in zip(layers, params)}


def _min_mass_run_values(summary: Mapping[str, Any], tag: str = "") -> dict[str, Any]:
    """The prose's numbers of one OptuNet run's min-mass summary, keyed ``<tag>_...`` (unprefixed
    without a tag): ``nets``, ``converged``, ``acc``, ``min_acc``, ``dropped``, ``dec`` (the
    range of the relative mass decrease), ``conv0`` and ``conv1`` (the convolutions'
    largest-weight ratios)."""
    smm = summary["min_mass"]
    dec = 1 - np.asarray(smm["mass_after"]) / np.asarray(smm["mass_before"])
    ratio = np.asarray(smm["largest_weight_min_mass"]) / np.asarray(smm["largest_weight_trained"])
    values = {"nets": summary["nets"], "converged": summary["converged"], "acc": f"{summary['test_accuracy_mean']:.1%}",
              "min_acc": f"{summary['test_accuracy_min']:.0%}", "dropped": summary["nets"] - summary["converged"],
              "dec": f"{dec.min():.0%} to {dec.max():.0%} (mean {dec.mean():.0%})",
              "conv0": f"x{ratio[0]:.2f}", "conv1": f"x{ratio[1]:.2f}"}
    return {(f"{tag}_{k}" if tag else k): v for k, v in values.items()}


def _corollary1_values(min_mass: Mapping[str, Any], tag: str = "") -> dict[str, Any]:
    """Corollary 1's check on one run, keyed ``<tag>_cor1_...`` (``cor1_...`` without a tag):
    the networks whose whole penalty (kernels and hidden biases) the min-mass rescaling lowers
    (``lower``) or not (``higher``), those whose kernels' mass it lowers (``kernels_lower``),
    and for the worst network the hidden biases' change (``db``) and sum of squares before
    (``b_before``) and the kernels' change (``dm``)."""
    d_kernels = np.asarray(min_mass["mass_after"]) - np.asarray(min_mass["mass_before"])
    d_biases = np.asarray(min_mass["hidden_bias_sq_after"]) - np.asarray(min_mass["hidden_bias_sq_before"])
    worst = int(np.argmax(d_kernels + d_biases))
    values = {"lower": int(np.sum(d_kernels + d_biases < 0)), "higher": int(np.sum(d_kernels + d_biases >= 0)),
              "kernels_lower": int(np.sum(d_kernels < 0)), "db": f"{d_biases[worst]:+.1f}",
              "dm": f"{d_kernels[worst]:+.1f}", "b_before": f"{min_mass['hidden_bias_sq_before'][worst]:.1f}"}
    return {(f"{tag}_cor1_{k}" if tag else f"cor1_{k}"): v for k, v in values.items()}


def gpu_min_mass_values(record: Mapping[str, Any], outcomes, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The values the prose cites from a saved run of the min-mass problem (``bank_min_mass``,
    or ``laurent_optunets``) on networks the GPU queue trained: those of
    :func:`_min_mass_run_values` and :func:`_corollary1_values` (unprefixed), ``seconds``,
    ``device``, the verdicts (``v_<claim>``) and where the networks were trained
    (``provenance``: :func:`symlib.experiments.gpu_queue.folded_provenance`, keys prefixed
    ``gpu_``).

    Args:
        record: the saved run (``summary``, ``elapsed_s``, ``device``).
        outcomes: its claims' outcomes (:func:`symlib.experiments.judging.claims.evaluate`).
        provenance: the queue job's folded provenance (of the steps the run read).
    """
    return (_min_mass_run_values(record["summary"]) | _corollary1_values(record["summary"]["min_mass"])
            | {"seconds": f"{record['elapsed_s']:.0f}", "device": record["device"]}
            | _verdict_values(outcomes)
            | {f"gpu_{k}": v for k, v in provenance.items()})


def saved_min_mass_values(paper_profile: Profile, paper: Mapping[str, Any], reductions: Mapping[str, Mapping[str, Any]],
                          mlp_paper: Mapping[str, Any], mlp_reduced: Mapping[str, Any],
                          paper_verdicts: Mapping[str, str]) -> dict[str, Any]:
    """The values the prose cites from the saved ``laurent_optunets`` and ``laurent_mlps`` runs at
    the paper's scale (min mass, Corollary 1).

    Args:
        paper_profile: the paper profile.
        paper: the OptuNets' saved paper-profile run (``summary``, ``elapsed_s``, ``date``).
        reductions: tag -> a smaller saved run of the OptuNets (e.g. ``{"s8": ...}``).
        mlp_paper: the MLPs' saved paper-profile run.
        mlp_reduced: the MLPs' reduced saved run.
        paper_verdicts: claim name -> verdict on the paper run (``corollary1_lower_loss`` is cited).

    Returns:
        ``pp_epochs``, ``pp_n_train``, ``pp_steps``, ``pp_seconds``, ``pp_date``; per
        run (``pp``, else its tag) ``<tag>_nets``, ``_minutes`` (reductions only),
        ``_converged``, ``_acc``, ``_min_acc``, ``_dropped``, ``_dec`` (the range of the relative
        mass decrease), ``_conv0`` and ``_conv1`` (the convolutions' largest-weight ratios); the
        Corollary 1 check on the paper run (``pp_cor1_*``, ``pp_v_corollary1``); and the MLPs'
        ``pp_mlp_sizes``, ``pp_mlp_nets``, ``pp_mlp_nets_reduced``, ``pp_mlp_seconds``.

    Raises:
        ValueError: if the saved paper run has another number of networks than the profile.
    """
    _check_paper_size(paper, paper_profile)
    steps = paper_profile.optunet_epochs * (paper_profile.n_train // LAURENT_OPTUNET["batch_size"])
    values = {"pp_epochs": paper_profile.optunet_epochs, "pp_n_train": f"{paper_profile.n_train:,}",
              "pp_steps": f"{round(steps, -3):,}",
              "pp_seconds": f"{paper['elapsed_s']:.0f}", "pp_date": paper["date"]}
    for tag, rec in {"pp": paper, **reductions}.items():
        values |= _min_mass_run_values(rec["summary"], tag)
        if tag != "pp":
            values[f"{tag}_minutes"] = f"{rec['elapsed_s'] / 60:.0f}"
    values |= _corollary1_values(paper["summary"]["min_mass"], "pp")
    values["pp_v_corollary1"] = paper_verdicts["corollary1_lower_loss"]
    return values | {"pp_mlp_sizes": "-".join(map(str, (784, *mlp_paper["summary"]["swaps"]["units"], 10))),
                     "pp_mlp_nets": mlp_paper["summary"]["nets"], "pp_mlp_nets_reduced": mlp_reduced["summary"]["nets"],
                     "pp_mlp_seconds": f"{mlp_paper['elapsed_s']:.0f}"}
