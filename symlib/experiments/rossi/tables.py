"""Rossi et al. (2023): the barrier, settings and timing tables that chapters 07-08 show."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symlib.experiments.profiles import Profile
from symlib.experiments.registry import load_align_data
from symlib.experiments.rossi.settings import (ALIGN_DATASETS, ROSSI_APPC_CLAIMS, ROSSI_TRAINING_AS_EXTRACTED,
                                               ROSSI_VI_SETTINGS, SPLITS)
from symlib.experiments.table import Table, plus_minus

# ------------------------------------------------------------------ display helpers (chapters 07, 08)


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error over independent units (the error is NaN for one unit)."""
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size == 0:
        raise ValueError("mean_se needs at least one value")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")


def format_mean_se(values: Sequence[float], digits: int = 3) -> str:
    """``"0.123 ± 0.010"`` (mean ± standard error over the units, :func:`~symlib.experiments.table.plus_minus`),
    or the value for one unit."""
    m, se = mean_se(values)
    return plus_minus(m, se, digits)


def barrier_table_rows(summary: Mapping[str, Any]) -> list[tuple]:
    """Rows ``(dataset, width, pairs, train naive, train aligned, test naive, test aligned,
    share removed (test), ELBO per example, endpoint test loss)`` of a ``vi_alignment``
    summary, each cell the mean ± standard error over the independent pairs."""
    rows = []
    for ds, widths in summary["widths"].items():
        mp = summary["marginal_pairs"][ds]
        for i, w in enumerate(widths):
            cells = [format_mean_se(mp[split][kind][i]) for split in SPLITS for kind in ("naive", "aligned")]
            share = 1 - np.asarray(mp["test"]["aligned"][i]) / np.asarray(mp["test"]["naive"][i])
            rows.append((ds, w, len(mp["test"]["naive"][i]), *cells, format_mean_se(100 * share, 0) + "%",
                         format_mean_se(summary["elbo"][ds][i], 2), format_mean_se(summary["endpoint_loss"][ds][i])))
    return rows


BARRIER_TABLE_HEADERS = ["dataset", "width", "pairs", "train naive (nats)", "train aligned (nats)", "test naive (nats)",
                         "test aligned (nats)", "test barrier removed", "ELBO per example (nats)",
                         "test loss at the endpoints (nats)"]


def barriers_against_width(widths: Mapping[str, Sequence[int]], pairs: Mapping[str, Any], *,
                           title: str | None = None):
    """Marginalised loss barriers against the hidden width (log2 axis), naive and aligned, train
    (solid, filled dots) and test (dashed, open squares): :func:`mean_se` over the independent
    pairs (no bar for one pair). One panel per dataset (Sec. 5.1). The barriers are on a
    symmetric-log axis (linear within 0.01 nats of 0), so that the aligned barriers, often
    tens of times smaller than the naive ones, show their trend too.

    Args:
        widths: dataset -> its widths (a ``vi_alignment`` summary's ``widths``).
        pairs: dataset -> split -> ``"naive"``/``"aligned"`` -> per width, the barrier of every
            pair (its ``marginal_pairs``).
        title: title of the figure.

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    from symlib.experiments.plotting import PALETTE

    fig, axes = plt.subplots(1, len(widths), figsize=(5 * len(widths), 3.4), constrained_layout=True,
                             squeeze=False)
    for ax, (dataset, ws) in zip(axes[0], widths.items()):
        for i, kind in enumerate(("naive", "aligned")):
            for split, ls, marker, face in (("train", "-", "o", PALETTE[i]), ("test", "--", "s", "white")):
                stats = [mean_se(v) for v in pairs[dataset][split][kind]]
                ax.errorbar(ws, [m for m, _ in stats], yerr=[se for _, se in stats], marker=marker, mfc=face, ls=ls,
                            capsize=3, color=PALETTE[i], label=f"{split}, {kind}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ws, [str(w) for w in ws])
        ax.set_xlabel("hidden width")
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_ylabel("marginalised loss barrier (nats)\n(symmetric log scale)")
        ax.set_title(dataset)
        ax.legend(fontsize=8, handlelength=3)
    if title:
        fig.suptitle(title)
    return fig


def _width_index(summary: Mapping[str, Any], dataset: str, width: int) -> int:
    widths = [int(w) for w in summary["widths"][dataset]]
    if int(width) not in widths:
        raise ValueError(f"{dataset}: width {width} is not in the summary's widths {widths}")
    return widths.index(int(width))


def training_length_rows(short: Mapping[str, Any], long: Mapping[str, Any], *, split: str = "train") -> list[tuple]:
    """The same posterior pairs trained for two lengths, side by side: rows ``(dataset, width,
    pair, naive short, naive long, aligned short, aligned long, ELBO short, ELBO long)`` of two
    ``vi_alignment`` summaries, for every dataset, width and pair index that both have.

    Pair ``k`` of every run has the same seeds (:func:`symlib.experiments.rossi.runs.fit_and_align_pair`),
    so each row is one paired comparison: only the number of epochs differs.

    Args:
        short: the summary of the shorter training.
        long: the summary of the longer training.
        split: ``"train"`` or ``"test"``: the barriers' split.

    Returns:
        One row per (dataset, width, pair) found in both, barriers in nats.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    rows = []
    for ds in [d for d in short["widths"] if d in long["widths"]]:
        for w in long["widths"][ds]:
            if int(w) not in [int(v) for v in short["widths"][ds]]:
                continue
            i, j = _width_index(short, ds, w), _width_index(long, ds, w)
            sp, lp = short["marginal_pairs"][ds][split], long["marginal_pairs"][ds][split]
            for k in range(min(len(sp["naive"][i]), len(lp["naive"][j]))):
                rows.append((ds, int(w), k, sp["naive"][i][k], lp["naive"][j][k], sp["aligned"][i][k],
                             lp["aligned"][j][k], short["elbo"][ds][i][k], long["elbo"][ds][j][k]))
    return rows


TRAINING_LENGTH_HEADERS = ["dataset", "width", "pair", "naive, shorter (nats)", "naive, longer (nats)",
                           "aligned, shorter (nats)", "aligned, longer (nats)", "ELBO per example, shorter (nats)",
                           "ELBO per example, longer (nats)"]


def width_gaps(summary: Mapping[str, Any], dataset: str, narrow: int, wide: int, *, split: str = "train",
               kind: str = "naive") -> np.ndarray:
    """Per independent pair ``k``: the barrier at width ``wide`` minus the barrier at width
    ``narrow`` (nats; above zero: the wider network's barrier is higher), for the pairs that both
    widths have.

    Args:
        summary: a ``vi_alignment`` summary.
        dataset: its dataset.
        narrow: the narrower width.
        wide: the wider width.
        split: ``"train"`` or ``"test"``.
        kind: ``"naive"`` or ``"aligned"``.

    Returns:
        One gap per pair, in pair order.
    """
    if kind not in ("naive", "aligned"):
        raise ValueError(f"kind must be 'naive' or 'aligned', got {kind!r}")
    pairs = summary["marginal_pairs"][dataset][split][kind]
    lo, hi = pairs[_width_index(summary, dataset, narrow)], pairs[_width_index(summary, dataset, wide)]
    n = min(len(lo), len(hi))
    return np.asarray(hi[:n], dtype=float) - np.asarray(lo[:n], dtype=float)


def timing_table_rows(summary: Mapping[str, Any], dataset: str) -> list[tuple]:
    """Rows ``(width, W2 CPU median [min-max], sweeps, WM CPU median [min-max], sweeps, W2 wall
    median, W2^2 before, after)`` of a ``vi_alignment_timings`` summary with repeats."""
    from symlib.evaluation.stats import repeat_spread

    cols = summary["table"][dataset]

    def spread(name: str, i: int) -> str:
        med, lo, hi = repeat_spread(cols[f"{name}_repeats"][i])
        return f"{med:.3f} [{lo:.3f}-{hi:.3f}]"

    return [(w, spread("w2_cpu_seconds", i), int(cols["w2_sweeps"][i]), spread("wm_cpu_seconds", i),
             int(cols["wm_sweeps"][i]), spread("w2_seconds", i), f"{cols['w2_sq_identity'][i]:.1f}",
             f"{cols['w2_sq'][i]:.1f}") for i, w in enumerate(summary["widths"][dataset])]


TIMING_TABLE_HEADERS = ["width (times in s: median [min-max] of the repeats)", "W2 alignment CPU", "sweeps",
                        "matching of the means CPU", "sweeps", "W2 alignment wall", "W₂² before", "W₂² after"]

#: The quick profile's alignment settings before replicated pairs (up to 2026-11-24), for
#: chapter 07's account of where the budget of the replicates came from: one pair per width
#: at four widths, MNIST on 9,000 images, barriers on 2,000 images per split, and a larger
#: ResNet20 stand-in.
QUICK_BEFORE_REPLICATES = {"align_pairs": 1, "align_widths": (32, 64, 128, 256), "align_n_train": 9_000,
                           "align_n_eval": 2_000, "resnet_n_train": 512, "resnet_n_eval": 128,
                           "resnet_n_lambdas": 5, "resnet_samples": 4}


#: ResNet20 stand-ins tried on 2026-11-23 (Fashion-MNIST, width 1, two fits, alignment and
#: curves on 256 images; ``dataclasses.replace`` of the quick profile with these settings,
#: passed to :func:`vi_alignment_resnet20`, on the book's 2-core machine while other jobs
#: ran), and the quick profile's own stand-in, which notebook 07 ran until 2026-11-29 (curves
#: on 64 images; its numbers are that notebook's stored output of 2026-11-29). A record of
#: runs, printed by notebook 07 (not re-run).
RESNET_STANDIN_TRIALS = (
    ("3,000 images x 3 epochs, batch 64, Adam 1e-3", "688 s", "about 0.57 / 0.57", "2.15 -> 2.39", "2.00 -> 2.25"),
    ("2,000 images x 4 epochs, batch 64, Adam 3e-3", "293 s", "0.16 / 0.46", "1.61 -> 2.23", "1.49 -> 2.03"),
    ("the same, temperature 0.04 (the KL weight per image of 50,000 images)", "403 s", "0.13 / 0.47",
     "1.32 -> 2.84", "1.21 -> 2.73"),
    ("1,024 images x 3 epochs, batch 32, Adam 1e-2, temperature 0.02", "143 s (fits only)",
     "0.12 / 0.10 (mean networks)", "-", "-"),
    ("256 images x 2 epochs, batch 64, Adam 1e-3 (the quick profile's resnet_* settings)", "about 20 s",
     "0.09 / 0.09", "0.090 -> 0.117", "0.182 -> 0.096"),
)
RESNET_STANDIN_HEADERS = ["training", "time", "test accuracy of q0 / q1", "barrier train naive -> aligned",
                          "test naive -> aligned"]


# ------------------------------------------------------------------ the settings of the alignment runs


def describe_alignment(profile: Profile) -> str:
    """One line: the alignment experiments' architecture, VI settings, training and evaluation in ``profile``."""
    vi = ROSSI_VI_SETTINGS
    return (f"alignment experiments: {profile.align_depth} hidden layers of widths {list(profile.align_widths)}, "
            f"mean-field VI, prior variance {profile.align_prior_var}, temperature {vi['temperature']:g}, "
            f"batch {vi['batch_size']}, std init {vi['std_init']:g}, {profile.align_epochs} epochs; "
            f"S = {profile.align_samples} samples on {profile.align_n_eval} examples per split")


def training_images(profile: Profile) -> dict[str, int]:
    """Dataset -> the number of training images the alignment runs of ``profile`` fit on
    (``align_n_train``, or the whole training split when it is smaller or unset)."""
    return {ds: min(profile.align_n_train or 10**9, len(load_align_data(profile, ds)["y_train"]))
            for ds in ALIGN_DATASETS}


def training_settings_table(profile: Profile, n_train: Mapping[str, int]) -> Table:
    """The paper's training settings (App. B, Table 1, as extracted) beside ``profile``'s.

    Args:
        profile: our profile.
        n_train: dataset -> training images used (:func:`training_images`).
    """
    quoted, vi = ROSSI_TRAINING_AS_EXTRACTED, ROSSI_VI_SETTINGS
    return Table(["setting", "Rossi et al. (App. B, Table 1, as extracted)", f"ours ({profile.name} profile)"], [
        ("training epochs", quoted["epochs"], f"{profile.align_epochs}"),
        ("optimiser, learning rate", quoted["learning_rate"], f"Adam, {profile.learning_rate:g}"),
        ("batch size", 500, vi["batch_size"]),
        ("temperature", 1.0, vi["temperature"]),
        ("VI std init", 0.01, vi["std_init"]),
        ("prior variance", 0.01, profile.align_prior_var),
        ("hidden widths", "512 (Table 2); width study in Sec. 5.1", ", ".join(map(str, profile.align_widths))),
        ("training images", "not stated", ", ".join(f"{ds} {n:,}" for ds, n in n_train.items())),
        ("independent posterior pairs per width", "not stated", profile.align_pairs),
        ("test samples S of the marginalised loss", 128, profile.align_samples),
        ("images per split for the barrier", "not stated", profile.align_n_eval),
    ])


def settings_change_table(before: Mapping[str, Any], profile: Profile) -> Table:
    """Profile settings before a change (e.g. :data:`QUICK_BEFORE_REPLICATES`) beside ``profile``'s
    current values: integers with thousands separators, tuples as comma-separated lists."""
    def cell(v: Any) -> str:
        return ", ".join(map(str, v)) if isinstance(v, tuple) else f"{v:,}"

    return Table(["setting", f"{profile.name} profile before replicates", f"{profile.name} profile now"],
                 [(k, cell(v), cell(tuple(getattr(profile, k)) if isinstance(v, tuple) else getattr(profile, k)))
                  for k, v in before.items()])


def geodesic_curves(result: Any, dataset: str, width: int) -> dict[str, dict[str, np.ndarray]]:
    """The marginalised loss and accuracy along the W2 geodesic of the first pair at ``width``,
    naive and aligned, on both splits, keyed ``"<split>, <no alignment | Wasserstein alignment>"``
    as :func:`symlib.experiments.plotting.interpolation_curves` takes them.

    Args:
        result: a :class:`~symlib.experiments.rossi.runs.VIAlignmentResult`.
        dataset: its dataset.
        width: one of its widths.
    """
    curves = {}
    for split in SPLITS:
        for aligned, label in ((False, "no alignment"), (True, "Wasserstein alignment")):
            c = result.run(dataset, width).curve(split=split, aligned=aligned)
            curves[f"{split}, {label}"] = {"lambda": c["tau"], "loss": c["loss"], "accuracy": c["accuracy"]}
    return curves


def robustness_table(summary: Mapping[str, Any]) -> Table:
    """One row per (prior variance, temperature) of a ``vi_alignment_robustness`` summary: the
    number of pairs, the naive and aligned test barriers and the share removed, each the mean ±
    standard error over the pairs."""
    mp = summary["marginal_pairs"]["test"]
    rows = []
    for i, st in enumerate(summary["settings"]):
        removed = 100 * (1 - np.asarray(mp["aligned"][i]) / np.asarray(mp["naive"][i]))
        rows.append((st["prior_var"], st["temperature"], len(mp["naive"][i]), format_mean_se(mp["naive"][i]),
                     format_mean_se(mp["aligned"][i]), format_mean_se(removed, 0) + "%"))
    return Table(["prior variance", "temperature", "pairs", "test naive", "test aligned", "test barrier removed"], rows)


def training_length_table(rows: Sequence[tuple], epochs: tuple[int, int]) -> Table:
    """:func:`training_length_rows` as a table, barriers and ELBOs with 3 decimals; ``epochs``:
    the shorter and the longer training's epochs, named in the headers."""
    headers = [h.replace("shorter", f"{epochs[0]:,} epochs").replace("longer", f"{epochs[1]:,} epochs")
               for h in TRAINING_LENGTH_HEADERS]
    return Table(headers, [(*r[:3], *(f"{v:.3f}" for v in r[3:])) for r in rows])


def resnet_table(result: Any, dataset: str) -> Table:
    """One row per width of a ``vi_alignment_resnet20`` result: the test accuracy of ``q0`` and
    ``q1`` (the ends of the naive path) and the four barriers (train/test, naive/aligned)."""
    rows = []
    for w in result.widths(dataset):
        pair = result.run(dataset, w)
        acc = pair.curves[("test", False)]["accuracy"]
        rows.append((dataset, w, f"{acc[0]:.2f} / {acc[-1]:.2f}",
                     *(f"{pair.marginal_barrier(split=split, aligned=aligned):.3f}"
                       for split in SPLITS for aligned in (False, True))))
    return Table(["dataset", "width", "test accuracy of q0 / q1", "train naive", "train aligned", "test naive",
                  "test aligned"], rows)


def describe_resnet(profile: Profile) -> str:
    """One line: the training and evaluation sizes of ``profile``'s ResNet20 alignment run."""
    return (f"{profile.name} profile: {profile.resnet_n_train:,} training images, {profile.resnet_epochs} epochs at "
            f"batch {profile.resnet_batch_size}; barriers on {profile.resnet_n_eval} images per split, "
            f"{profile.resnet_n_lambdas} points x {profile.resnet_samples} samples")


# ------------------------------------------------------------------ timings (chapter 08)


def timing_spreads(result: Any) -> dict[str, dict[str, np.ndarray]]:
    """Dataset -> ``{"Wasserstein alignment (mu, sigma)", "weight matching (means only)"}`` ->
    ``(widths, 3)``: the median, minimum and maximum CPU time of the repeats at each width of a
    :class:`~symlib.experiments.rossi.runs.VIAlignmentTimings`."""
    from symlib.evaluation.stats import repeat_spread

    return {ds: {label: np.asarray([repeat_spread(r) for r in result.column(ds, f"{col}_repeats")])
                 for col, label in (("w2_cpu_seconds", "Wasserstein alignment (mu, sigma)"),
                                    ("wm_cpu_seconds", "weight matching (means only)"))}
            for ds in ALIGN_DATASETS}


def timing_tables(summary: Mapping[str, Any]) -> list[Table]:
    """One :func:`timing_table_rows` table per dataset, its first header naming the dataset."""
    return [Table([f"{ds}: " + TIMING_TABLE_HEADERS[0], *TIMING_TABLE_HEADERS[1:]], timing_table_rows(summary, ds))
            for ds in ALIGN_DATASETS]


def timing_paper_rows(result: Any) -> list[tuple[str, str, str]]:
    """``(quantity, paper, ours)`` rows of App. C's statements for a ``vi_alignment_timings``
    result: per dataset the wall time of the widest alignment, its CPU time over that of
    matching the means, and the CPU time against width (medians of the repeats)."""
    rows = []
    for ds in ALIGN_DATASETS:
        widest, w2_cpu = result.widths[ds][-1], result.column(ds, "w2_cpu_seconds")
        rows.append((f"{ds}: alignment of the widest trained pair (width {widest}), wall",
                     ROSSI_APPC_CLAIMS["within_a_minute"], f"{result.column(ds, 'w2_seconds')[-1]:.3f} s"))
        rows.append((f"{ds}: alignment / matching of the means at width {widest}, CPU",
                     ROSSI_APPC_CLAIMS["vi_costlier_than_sgd"],
                     f"{w2_cpu[-1] / result.column(ds, 'wm_cpu_seconds')[-1]:.2f}x"))
        rows.append((f"{ds}: alignment CPU time against width", ROSSI_APPC_CLAIMS["time_vs_width"],
                     ", ".join(f"{w}: {s:.3f} s" for w, s in zip(result.widths[ds], w2_cpu))))
    return rows
