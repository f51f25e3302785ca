"""Rossi et al. (2023): the values that the chapters' prose cites, computed from the runs'
summaries and saved records. Each function returns a ``{name: value}`` mapping in a fixed order,
for :func:`symlib.experiments.table.glue_all` (the chapter adds its prefix)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symlib.experiments.judging.claims import ClaimOutcome, evaluate
from symlib.experiments.judging.scales import scale_label
from symlib.experiments.profiles import Profile
from symlib.experiments.rossi.claims import width_slopes
from symlib.experiments.rossi.runs import ROBUSTNESS_PRIOR_VARS, ROBUSTNESS_TEMPERATURES
from symlib.experiments.rossi.settings import ALIGN_DATASETS, ROSSI_VI_SETTINGS
from symlib.experiments.judging.results import command_setting
from symlib.experiments.rossi.tables import training_length_rows, width_gaps


def _joined(values: Sequence[Any], fmt: str, sep: str = ", ") -> str:
    return sep.join(format(v, fmt) for v in values)


def outcome_values(outcomes: Sequence[ClaimOutcome], tag: str) -> dict[str, str]:
    """Per outcome, in order: ``<tag>v_<claim>`` its verdict and ``<tag>e_<claim>`` its interval text."""
    values = {}
    for o in outcomes:
        values[f"{tag}v_{o.claim.name}"] = o.verdict.value
        values[f"{tag}e_{o.claim.name}"] = o.evidence.interval_text()
    return values


def training_values(profile: Profile, n_train: Mapping[str, int]) -> dict[str, object]:
    """The scale of ``profile``'s alignment runs: ``steps`` (optimiser steps per posterior, each
    distinct count once), ``pairs``, ``widths``, ``n_eval``, ``samples``, ``n_train`` (each distinct
    count once) and ``lr``.

    Args:
        profile: the profile.
        n_train: dataset -> training images used (:func:`~symlib.experiments.rossi.tables.training_images`).
    """
    steps = {profile.align_epochs * (n // ROSSI_VI_SETTINGS["batch_size"]) for n in n_train.values()}
    return {"steps": _joined(sorted(steps), ","), "pairs": profile.align_pairs,
            "widths": ", ".join(map(str, profile.align_widths)), "n_eval": f"{profile.align_n_eval:,}",
            "samples": profile.align_samples, "n_train": _joined(sorted(set(n_train.values())), ","),
            "lr": f"{profile.learning_rate:g}"}


def robustness_values(summary: Mapping[str, Any]) -> dict[str, object]:
    """``sweep_width`` of a ``vi_alignment_robustness`` summary, and the grid's other prior variance
    (``pv_other``) and temperature (``t_other``) beside the paper's."""
    return {"sweep_width": summary["width"], "pv_other": f"{ROBUSTNESS_PRIOR_VARS[1]:g}",
            "t_other": f"{ROBUSTNESS_TEMPERATURES[1]:g}"}


def paper_settings_values(paper: Profile) -> dict[str, object]:
    """The paper profile's alignment scale: ``paper_pairs``, ``paper_widths``, ``paper_epochs``, ``paper_n_train``."""
    return {"paper_pairs": paper.align_pairs, "paper_widths": _joined(paper.align_widths, ","),
            "paper_epochs": paper.align_epochs, "paper_n_train": f"{paper.align_n_train or paper.n_train:,}"}


def paper_run_values(summary: Mapping[str, Any]) -> dict[str, str]:
    """A ``vi_alignment`` run at several widths, per dataset: the slope of the barrier per
    doubling of every (split, kind) (``paper_<ds>_<split>_<kind>_slope``), the train barriers
    naive and aligned against width (``paper_<ds>_train_<kind>``), the mean ELBO per example
    (``paper_<ds>_elbo``) and endpoint test accuracy in % (``paper_<ds>_acc``) per width; then every
    claim's verdict and interval (``pv_<claim>``, ``pe_<claim>``)."""
    values = {}
    for ds in ALIGN_DATASETS:
        slopes = width_slopes(summary, ds)
        for split, kind in slopes:
            values[f"paper_{ds}_{split}_{kind}_slope"] = slopes[split, kind].interval_text()
        for kind in ("naive", "aligned"):
            values[f"paper_{ds}_train_{kind}"] = _joined(summary["marginal"][ds]["train"][kind], ".3f")
        values[f"paper_{ds}_elbo"] = _joined([np.mean(v) for v in summary["elbo"][ds]], ".2f")
        values[f"paper_{ds}_acc"] = _joined([100 * np.mean(v) for v in summary["endpoint_accuracy"][ds]], ".1f")
    return {**values, **outcome_values(evaluate("vi_alignment", summary), "p")}


def longer_training_values(record: Mapping[str, Any], epochs: int, label: str) -> dict[str, object]:
    """A saved ``vi_alignment`` run trained longer than the paper profile: ``long_epochs`` (from
    its command), ``long_factor`` (over the paper profile's ``epochs``) and ``long_scale`` (its scale
    label, saved under ``label``)."""
    long_epochs = int(command_setting(record["command"], "epochs"))
    return {"long_epochs": f"{long_epochs:,}", "long_factor": f"{long_epochs // epochs}",
            "long_scale": scale_label("vi_alignment", label, record)}


def training_length_values(short: Mapping[str, Any], long: Mapping[str, Any]) -> dict[str, str]:
    """The same pairs trained for two lengths (``vi_alignment`` summaries), per dataset: the naive
    width gap of every pair, shorter → longer (``long_<ds>_gaps``, widest minus narrowest width of
    the longer run), the widest naive barrier of every pair, shorter → longer (``long_<ds>_wide_naive``),
    the longer run's aligned train barrier against width (``long_<ds>_aligned``) and its mean ELBO
    per example per width (``long_<ds>_elbo``); then ``long_pairs``, ``long_narrow``, ``long_wide``,
    ``long_narrow_aligned_up`` (how many pairs' aligned barrier at the narrowest width rose with the
    training) and every claim on the longer run (``lv_<claim>``, ``le_<claim>``)."""
    rows, values = training_length_rows(short, long), {}
    for ds in ALIGN_DATASETS:
        narrow, wide = min(long["widths"][ds]), max(long["widths"][ds])
        g_long = width_gaps(long, ds, narrow, wide)
        g_short = width_gaps(short, ds, narrow, wide)[: len(g_long)]
        values[f"long_{ds}_gaps"] = _joined(g_short, ".2f") + " → " + _joined(g_long, ".2f")
        values[f"long_{ds}_wide_naive"] = ", ".join(f"{r[3]:.2f} → {r[4]:.2f}" for r in rows
                                                    if r[0] == ds and r[1] == wide)
        values[f"long_{ds}_aligned"] = _joined(long["marginal"][ds]["train"]["aligned"], ".3f", " → ")
        values[f"long_{ds}_elbo"] = _joined([np.mean(v) for v in long["elbo"][ds]], ".2f")
    narrowest = min(r[1] for r in rows)
    narrow_rows = [r for r in rows if r[1] == narrowest]
    values.update({"long_pairs": len({r[2] for r in rows}), "long_narrow": f"{narrowest:,}",
                   "long_wide": f"{max(r[1] for r in rows):,}",
                   "long_narrow_aligned_up": f"{sum(r[6] > r[5] for r in narrow_rows)} of the {len(narrow_rows)}"})
    return {**values, **outcome_values(evaluate("vi_alignment", long), "l")}


def saved_timing_values(record: Mapping[str, Any]) -> dict[str, object]:
    """A saved ``vi_alignment_timings`` run: the slowest repeat of any alignment, in wall time
    (``saved_longest``, what claim (i) reads),
    the widths (``saved_widths``), per dataset the median CPU time of the alignment per width
    (``saved_<ds>_w2``), its ratio to matching the means at the widest width (``saved_<ds>_ratio``)
    and both sweep counts there (``saved_<ds>_sweeps``); the repeats and the run's date."""
    summary = record["summary"]
    table = summary["table"]
    values = {"saved_longest": f"{max(np.max(c['w2_seconds_repeats']) for c in table.values()):.2f}",
              "saved_widths": _joined(summary["widths"]["mnist"], ",")}
    for ds, c in table.items():
        values[f"saved_{ds}_w2"] = _joined(c["w2_cpu_seconds"], ".2f")
        values[f"saved_{ds}_ratio"] = f"{c['w2_cpu_seconds'][-1] / c['wm_cpu_seconds'][-1]:.2f}x"
        values[f"saved_{ds}_sweeps"] = f"{c['w2_sweeps'][-1]:.0f} / {c['wm_sweeps'][-1]:.0f}"
    return {**values, "saved_repeats": summary["repeats"], "saved_date": record["date"]}
