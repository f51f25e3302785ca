"""Rossi et al. (2023): the rows of the barrier and timing tables that chapters 07-08 show."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symlib.experiments.rossi.settings import SPLITS



# ------------------------------------------------------------------ display helpers (chapters 07, 08)


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error over independent units (the error is NaN for one unit)."""
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size == 0:
        raise ValueError("mean_se needs at least one value")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")


def format_mean_se(values: Sequence[float], digits: int = 3) -> str:
    """``"0.123 ± 0.010"`` (mean ± standard error over the units), or the value for one unit."""
    m, se = mean_se(values)
    return f"{m:.{digits}f}" if not np.isfinite(se) else f"{m:.{digits}f} ± {se:.{digits}f}"


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


BARRIER_TABLE_HEADERS = ["dataset", "width", "pairs", "train naive", "train aligned", "test naive", "test aligned",
                         "test barrier removed", "ELBO per example", "test loss at the endpoints"]


def barriers_against_width(widths: Mapping[str, Sequence[int]], pairs: Mapping[str, Any], *,
                           title: str | None = None):
    """Marginalised loss barriers against the hidden width (log2 axis), naive and aligned, train
    (solid) and test (dashed): :func:`mean_se` over the independent pairs (no bar for one
    pair). One panel per dataset (Sec. 5.1).

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
            for split, ls in (("train", "-"), ("test", "--")):
                stats = [mean_se(v) for v in pairs[dataset][split][kind]]
                ax.errorbar(ws, [m for m, _ in stats], yerr=[se for _, se in stats], marker="o", ls=ls, capsize=3,
                            color=PALETTE[i], label=f"{split}, {kind}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ws, [str(w) for w in ws])
        ax.set_xlabel("hidden width")
        ax.set_ylabel("marginalised loss barrier (nats)")
        ax.set_title(dataset)
        ax.legend(fontsize=8)
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


TRAINING_LENGTH_HEADERS = ["dataset", "width", "pair", "naive, shorter", "naive, longer", "aligned, shorter",
                           "aligned, longer", "ELBO per example, shorter", "ELBO per example, longer"]


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


TIMING_TABLE_HEADERS = ["width", "W2 alignment CPU (s), median [min-max]", "sweeps",
                        "matching of the means CPU (s), median [min-max]", "sweeps", "W2 alignment wall (s)",
                        "W2^2 before", "W2^2 after"]

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
#: ran). A record of runs too long for a chapter, printed by notebook 07 (not re-run).
RESNET_STANDIN_TRIALS = (
    ("3,000 images x 3 epochs, batch 64, Adam 1e-3", "688 s", "about 0.57 / 0.57", "2.15 -> 2.39", "2.00 -> 2.25"),
    ("2,000 images x 4 epochs, batch 64, Adam 3e-3", "293 s", "0.16 / 0.46", "1.61 -> 2.23", "1.49 -> 2.03"),
    ("the same, temperature 0.04 (the KL weight per image of 50,000 images)", "403 s", "0.13 / 0.47",
     "1.32 -> 2.84", "1.21 -> 2.73"),
    ("1,024 images x 3 epochs, batch 32, Adam 1e-2, temperature 0.02", "143 s (fits only)",
     "0.12 / 0.10 (mean networks)", "-", "-"),
)
RESNET_STANDIN_HEADERS = ["training", "time", "test accuracy of q0 / q1", "barrier train naive -> aligned",
                          "test naive -> aligned"]
