"""Plotting helpers: each returns a matplotlib ``Figure``; one style for the whole book."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib

import matplotlib.pyplot as plt
import numpy as np

#: Okabe-Ito colour-blind-safe palette.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


def set_style() -> None:
    """The book's matplotlib style (call once in a notebook's setup cell).

    Inside a Jupyter kernel it also selects the inline backend, so figures reach the
    notebook's outputs even when ``MPLBACKEND`` names a non-interactive backend.

    Returns:
        None; ``matplotlib.pyplot.rcParams`` is updated in place.
    """
    _inline_in_kernel()
    plt.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": 150,
        "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "font.size": 10,
        "legend.frameon": False,
        "image.cmap": "RdBu_r",
    })


def _inline_in_kernel() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and "IPKernelApp" in shell.config:
        shell.run_line_magic("matplotlib", "inline")


def weight_matrices(matrices: Sequence[np.ndarray], titles: Sequence[str], *, suptitle: str | None = None,
                    xlabel: str = "input unit", ylabel: str = "hidden unit", max_cols: int = 64,
                    max_rows: int = 64) -> plt.Figure:
    """Heatmaps of weight matrices side by side on one symmetric colour scale.

    Only the top-left ``max_rows x max_cols`` block is shown so individual units stay
    visible; rows are the units the permutation acts on.

    Args:
        matrices: the matrices, one panel each.
        titles: one title per matrix.
        suptitle: title of the whole figure.
        xlabel: label of every panel's x axis.
        ylabel: label of the first panel's y axis.
        max_cols: columns shown.
        max_rows: rows shown.

    Returns:
        The figure.

    Raises:
        ValueError: if ``matrices`` and ``titles`` differ in length.
    """
    if len(matrices) != len(titles):
        raise ValueError(f"{len(matrices)} matrices but {len(titles)} titles")
    blocks = [np.asarray(m)[:max_rows, :max_cols] for m in matrices]
    vmax = max(float(np.abs(b).max()) for b in blocks) or 1.0
    fig, axes = plt.subplots(1, len(blocks), figsize=(3.4 * len(blocks) + 0.8, 3.4), constrained_layout=True)
    axes = np.atleast_1d(axes)
    for ax, block, title in zip(axes, blocks, titles):
        im = ax.imshow(block, vmin=-vmax, vmax=vmax, cmap="RdBu_r", interpolation="nearest", aspect="auto")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(False)
    axes[0].set_ylabel(ylabel)
    fig.colorbar(im, ax=list(axes), shrink=0.85, label="weight value")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def interpolation_curves(curves: dict[str, dict[str, np.ndarray]], *, title: str | None = None) -> plt.Figure:
    """Loss and accuracy along ``W_lambda`` for several paths (Xiao et al. Fig. 1).

    ``curves`` maps a label such as ``"test, after weight matching"`` to the output of
    :func:`symlib.evaluation.interpolation.interpolation_curve`. A label ``"train, <method>"``
    is drawn solid and ``"test, <method>"`` dashed, the same method in the same colour; any
    other label (``"wide, naive"``) is a curve of its own, solid, in a colour of its own.

    Args:
        curves: label -> dict of arrays ``lambda``, ``loss`` and ``accuracy``.
        title: title of the figure.

    Returns:
        The figure (loss left, accuracy right).
    """
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9.5, 3.4), constrained_layout=True)
    def split_and_method(label: str) -> tuple[str, str]:
        split, _, method = label.partition(", ")
        return (split, method) if split in ("train", "test") and method else ("", label)

    methods = list(dict.fromkeys(split_and_method(label)[1] for label in curves))
    for label, curve in curves.items():
        split, method = split_and_method(label)
        style = dict(color=PALETTE[methods.index(method) % len(PALETTE)],
                     ls="--" if split == "test" else "-", marker="o", ms=3)
        ax_loss.plot(curve["lambda"], curve["loss"], label=label, **style)
        ax_acc.plot(curve["lambda"], 100 * np.asarray(curve["accuracy"]), label=label, **style)
    ax_loss.set_ylabel("loss (mean NLL, nats)")
    ax_acc.set_ylabel("accuracy (%)")
    for ax in (ax_loss, ax_acc):
        ax.set_xlabel(r"$\lambda$ in $W_\lambda = (1-\lambda) W_0 + \lambda W_1$")
    ax_acc.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    if title:
        fig.suptitle(title)
    return fig


def mean_band(ax: plt.Axes, x: np.ndarray, ys: np.ndarray, label: str, color: str | None = None) -> None:
    """Mean over the rows of ``ys`` (runs) against ``x``, with a band of +-1 standard error of
    that mean (``ddof=1``; no band for a single run).

    Args:
        ax: the axes to draw on.
        x: the x values, one per column of ``ys``.
        ys: ``(runs, len(x))`` values.
        label: legend label of the mean.
        color: line and band colour (default: the next of the cycle).

    Returns:
        None; draws on ``ax``.
    """
    ys = np.asarray(ys, float)
    mean = ys.mean(axis=0)
    (line,) = ax.plot(x, mean, marker="o", ms=3, label=label, color=color)
    if ys.shape[0] > 1:
        se = ys.std(axis=0, ddof=1) / np.sqrt(ys.shape[0])
        ax.fill_between(x, mean - se, mean + se, color=line.get_color(), alpha=0.25, lw=0)


def grouped_bars(ax: plt.Axes, categories: Sequence[str], series: dict[str, Sequence[float | None]], *,
                 ylabel: str, title: str | None = None,
                 errors: Mapping[str, Sequence[float | None]] | None = None) -> None:
    """Bars of several series side by side for each category; ``None`` leaves a gap.

    Args:
        ax: the axes to draw on.
        categories: one group of bars each.
        series: legend label -> one value per category.
        ylabel: label of the y axis.
        title: title of the axes.
        errors: legend label -> the half-length of each bar's error bar (a standard error),
            for the series that have them (``None``: no error bar).

    Returns:
        None; draws on ``ax``.
    """
    width = 0.8 / max(1, len(series))
    x = np.arange(len(categories))
    errors = errors or {}
    for i, (label, values) in enumerate(series.items()):
        vals = np.array([np.nan if v is None else float(v) for v in values])
        err = None if label not in errors else np.array([np.nan if e is None else float(e) for e in errors[label]])
        ax.bar(x + (i - (len(series) - 1) / 2) * width, vals, width, label=label, color=PALETTE[i % len(PALETTE)],
               yerr=err, capsize=2 if err is not None else 0, error_kw={"lw": 1})
    ax.set_xticks(x, categories, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)


def gaussian_ellipses(ax: plt.Axes, mean: Sequence[float], std: Sequence[float], *, label: str | None = None,
                      color: str | None = None, ls: str = "-", levels: Sequence[float] = (1.0, 2.0)) -> None:
    """Contours (1 and 2 standard deviations) of an axis-aligned 2-D Gaussian.

    Args:
        ax: the axes to draw on.
        mean: the Gaussian's mean ``(x, y)``.
        std: its standard deviations along x and y.
        label: legend label (on the first contour).
        color: line colour.
        ls: line style.
        levels: the contours, in standard deviations.

    Returns:
        None; draws on ``ax``.
    """
    t = np.linspace(0, 2 * np.pi, 200)
    for i, k in enumerate(levels):
        ax.plot(mean[0] + k * std[0] * np.cos(t), mean[1] + k * std[1] * np.sin(t), ls=ls, color=color,
                lw=1.5 if i == 0 else 0.8, label=label if i == 0 else None)
    ax.plot(*mean, marker="x", color=color, ms=6)


def min_mass_figure(before: Sequence[float], after: Sequence[float], largest: dict[str, np.ndarray],
                    layer_labels: Sequence[str], *, title: str | None = None) -> plt.Figure:
    """Laurent et al.'s Fig. 2 for a set of networks: mass before and after the min-mass
    rescaling (networks sorted by trained mass, each named by its index when there are at most
    24), the share of mass removed, and the largest weight of every layer.

    Args:
        before: mass of each trained network.
        after: mass of each network at its min-mass point.
        largest: ``{"trained": (nets, layers), "min-mass": (nets, layers)}``, the largest ``|weight|`` per layer.
        layer_labels: one tick label per layer (name and size).
        title: optional figure title.

    Returns:
        The figure (three panels).
    """
    before, after = np.asarray(before, float), np.asarray(after, float)
    decrease = (before - after) / before
    order = np.argsort(before)
    idx = np.arange(len(before))
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), constrained_layout=True)
    axes[0].vlines(idx, after[order], before[order], color="0.6", lw=1)
    axes[0].plot(idx, before[order], "o", ms=4, label="trained (SGD + weight decay)")
    axes[0].plot(idx, after[order], "o", ms=4, label="min-mass rescaling (same function)")
    if len(order) <= 24:  # few enough to name each network by its index, as the other figures do
        axes[0].set_xticks(idx, [str(i) for i in order], fontsize=7 if len(order) > 12 else None)
        axes[0].set_xlabel("network (its index; sorted by trained mass)")
    else:
        axes[0].set_xlabel("rank of the network by trained mass")
        axes[0].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[0].set_ylabel("mass: sum of squared weights")
    axes[0].legend(fontsize=8)
    axes[0].set_title("mass of the same functions")
    jitter = np.random.default_rng(0).uniform(-0.15, 0.15, len(decrease))
    axes[1].plot(jitter, 100 * decrease, "o", ms=4, color=PALETTE[2], alpha=0.7)
    axes[1].boxplot(100 * decrease, positions=[0], widths=0.5, showfliers=False, medianprops={"color": "k"})
    axes[1].set_xticks([])
    axes[1].set_xlim(-0.6, 0.6)
    axes[1].set_ylabel("mass removed by rescaling (%)")
    axes[1].set_title(f"every network is above its minimum ({len(decrease)} networks)")
    pos = np.arange(len(layer_labels))
    for k, (name, vals) in enumerate(largest.items()):
        axes[2].boxplot(np.asarray(vals), positions=pos + (k - 0.5) * 0.35, widths=0.3, patch_artist=True,
                        boxprops={"facecolor": PALETTE[k], "alpha": 0.6}, medianprops={"color": "k"})
        axes[2].plot([], [], "s", color=PALETTE[k], alpha=0.6, label=name)
    axes[2].set_xticks(pos, list(layer_labels))
    axes[2].set_xlabel("layer (parameters)")
    axes[2].set_ylabel("largest |weight| of the layer")
    axes[2].set_title("largest weight per layer")
    axes[2].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def swap_figure(swaps: np.ndarray, epoch_stats: Sequence[np.ndarray], units: Sequence[int], blocks: Sequence[int],
                labels: Sequence[str], lr: np.ndarray, milestones: Sequence[int]) -> plt.Figure:
    """Laurent et al.'s Fig. 4 for recorded runs: Kendall's tau between the orderings of
    sorted units at successive steps (left; the first group's per-step lines on top, the
    learning rate in the lower part), and the net change of the ordering over each epoch and
    towards the final ordering (right).

    Args:
        swaps: ``(runs, epochs, steps, groups)`` swapped pairs per step
            (:func:`symlib.symmetry.neuron_order.swap_counter`).
        epoch_stats: per group ``(runs, epochs, units)`` sorting statistics at each epoch's end.
        units: units per group.
        blocks: blocks per group (units ordered within blocks; 1 for a dense layer).
        labels: one legend label per group.
        lr: learning rate per epoch.
        milestones: epochs where the learning rate changed.

    Returns:
        The figure (two panels).
    """
    from symlib.symmetry.neuron_order import discordant_pairs_batch, epoch_swaps, kendall_tau_from_discordant

    runs, epochs, steps, groups = swaps.shape
    t = (np.arange(epochs * steps) + 1) / steps
    fig, axes = plt.subplots(1, 2, figsize=(14, 3.8), constrained_layout=True)
    for g in range(groups):
        tau = kendall_tau_from_discordant(swaps[..., g], int(units[g]), int(blocks[g]))
        axes[0].plot(t, tau.mean(0).reshape(-1), lw=0.4, alpha=0.5, color=PALETTE[g], zorder=2 + groups - g)
        axes[0].plot(np.arange(epochs) + 0.5, tau.mean(axis=(0, 2)), "o-", ms=3, color=PALETTE[g],
                     label=f"{labels[g]}: per step (thin), epoch mean (dots)")
    for ax in axes:
        for m in milestones:
            ax.axvline(m, color="0.4", ls="--", lw=1)
    axes[0].set_xlabel("epoch")
    axes[0].set_ylabel(f"Kendall's τ, step t vs t+1 (mean of {runs} runs)")
    axes[0].set_title("orderings of sorted units between successive steps")
    axes[0].legend(fontsize=8, loc="lower right")
    lr_ax = axes[0].twinx()
    lr_ax.step(np.arange(epochs + 1), np.r_[lr, lr[-1]], where="post", color="0.3", lw=1)
    lr_ax.set_ylabel("learning rate (grey)")
    lr_ax.set_ylim(0, 2.5 * np.max(lr))  # the schedule in the panel's lower part, below most of the τ
    lr_ax.grid(False)
    for g, (s, swapped) in enumerate(zip(epoch_stats, epoch_swaps(epoch_stats, blocks))):
        n, b = int(units[g]), int(blocks[g])
        net = kendall_tau_from_discordant(swapped, n, b)
        to_final = kendall_tau_from_discordant(discordant_pairs_batch(s, s[:, -1:], b), n, b)
        axes[1].plot(np.arange(2, epochs + 1), net.mean(0), "o-", ms=3, color=PALETTE[g],
                     label=f"{labels[g]}: end of epoch e-1 vs e")
        axes[1].plot(np.arange(1, epochs + 1), to_final.mean(0), "s:", ms=3, color=PALETTE[g],
                     label=f"{labels[g]}: end of epoch e vs end of training")
    axes[1].set_xlabel("epoch e")
    axes[1].set_ylabel("Kendall's τ (mean over runs)")
    axes[1].set_title("net change of the ordering")
    axes[1].legend(fontsize=8, loc="lower right")
    return fig


#: the verdicts' colours: the paper's side green, the other orange, dark where the interval is
#: wholly on one side, light where it is not
VERDICT_COLOURS = {"holds": "#1b7837", "same direction, not significant": "#7fbf7b",
                   "opposite direction, not significant": "#f1a340", "differs": "#b35806", "not tested": "#7570b3"}


def _symlog_ticks(linthresh: float, edge: float, most: int = 4) -> tuple[list[float], list[float]]:
    """Ticks of a symmetric-log axis: 0 and the powers of ten from ``linthresh`` to ``edge`` on
    both sides, as ``(labelled, unlabelled)``. With more than ``most`` decades a side, every
    other decade (counted from ``edge``) is left unlabelled, so that the labels of a narrow
    figure do not run into each other."""
    decades = np.arange(np.log10(edge), np.log10(linthresh) - 0.5, -1.0)
    step = 2 if decades.size > most else 1
    ticks = [[float(s * 10.0 ** d) for d in part for s in (-1, 1)] for part in (decades[::step], decades[1::step])]
    return sorted(ticks[0] + [0.0]), sorted(ticks[1] if step == 2 else [])


def forest(entries: Sequence, *, title: str | None = None, linthresh: float = 1e-2) -> plt.Figure:
    """A forest plot of claims: per entry (:class:`symlib.experiments.report.page.ForestEntry`)
    the effect minus its threshold and the interval, signed so that the paper's side is to the
    right of the line at 0, on a symmetric-log axis (the claims' units differ), coloured by
    verdict, grouped by scale as the entries come; an unbounded end is drawn as an arrow, and
    an interval within one run (never "holds" or "differs") has a hollow dot.

    Args:
        entries: the entries, in the order to show them (top to bottom).
        title: the figure's title.
        linthresh: the symmetric-log axis's linear range around 0.

    Returns:
        The figure.
    """
    n = len(entries)
    fig, ax = plt.subplots(figsize=(8.5, 1.4 + 0.23 * max(n, 1)), layout="constrained")
    finite = [abs(v) for e in entries for v in (e.effect, e.low, e.high) if np.isfinite(v)]
    edge = 10 ** np.ceil(np.log10(max(max(finite, default=1.0), 10 * linthresh)))
    beyond = 1.2 * edge  # where an unbounded end's arrow sits, past every finite value
    for i, e in enumerate(entries):
        y = n - 1 - i
        c = VERDICT_COLOURS.get(e.verdict, "#969696")
        lo, hi = max(e.low, -beyond), min(e.high, beyond)
        ax.plot([lo, hi], [y, y], color=c, lw=1.6, solid_capstyle="butt")
        ax.plot([e.effect], [y], "o", color=c, ms=4.5, mfc="white" if e.one_run else c, zorder=3)
        for end, bound, marker in ((e.low, -beyond, "<"), (e.high, beyond, ">")):
            if not np.isfinite(end):
                ax.plot([bound], [y], marker, color=c, ms=5)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_xscale("symlog", linthresh=linthresh)
    ax.set_xlim(-edge * 1.4, edge * 1.4)
    labelled, unlabelled = _symlog_ticks(linthresh, edge)
    ax.set_xticks(labelled)
    ax.set_xticks(unlabelled, minor=True)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_yticks(range(n), [f"{e.label} ({e.run})" for e in reversed(entries)], fontsize=7.5)
    ax.set_ylim(-0.7, n - 0.3)
    starts = [i for i in range(n) if i == 0 or entries[i].scale != entries[i - 1].scale]
    for k, i in enumerate(starts):  # each scale's group: a line above it and its name at the right
        stop = starts[k + 1] if k + 1 < len(starts) else n
        if i:
            ax.axhline(n - i - 0.5, color="#525252", lw=0.8, ls="--")
        name = entries[i].scale
        if 0.23 * (stop - i) < 0.075 * len(name):  # too long for its band: on two lines
            name = name.replace(" ", "\n", 1)
        ax.text(1.01, n - 1 - (i + stop - 1) / 2, name, transform=ax.get_yaxis_transform(),
                rotation=-90, va="center", ha="left", fontsize=7.5, color="#525252", multialignment="center")
    ax.set_xlabel("effect minus threshold, in each claim's units (symmetric log scale)\n"
                  "right of 0: the paper's side of the threshold", fontsize=8)
    handles = [plt.Line2D([], [], color=c, marker="o", lw=1.6, label=v) for v, c in VERDICT_COLOURS.items()
               if any(e.verdict == v for e in entries)]
    if any(e.one_run for e in entries):
        handles.append(plt.Line2D([], [], color="0.3", marker="o", mfc="white", lw=0,
                                  label="hollow: an interval within one run"))
    fig.legend(handles=handles, fontsize=7.5, loc="outside lower center", ncol=min(len(handles), 3), frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def mirrored_gaussians(pairs: dict[str, tuple[Sequence[float], Sequence[float]]],
                       notes: dict[str, dict[str, str]] | None = None, *, lim: float = 3.0,
                       suptitle: str | None = None) -> plt.Figure:
    """One panel per configuration: a 2-D diagonal Gaussian ``q0`` and its mirror image ``q1``
    about ``y = x`` (:func:`gaussian_ellipses`: the thick contour at 1 standard deviation, the thin
    one at 2, as the figure's caption says), with the mirror line dotted (Rossi et al., Fig. A1).

    Args:
        pairs: panel title -> ``(mean, std)`` of ``q0``.
        notes: panel title -> ``{name: value}``, shown as ``name: value`` under the title.
        lim: the axes run from ``-lim`` to ``lim``, or further when a 2-sd contour would be cut.
        suptitle: title of the figure.

    Returns:
        The figure.
    """
    lim = max(lim, *(2.2 * s + abs(m) for mean, std in pairs.values() for m, s in zip(mean, std)))
    fig = plt.figure(figsize=(5 * len(pairs), 4.2), constrained_layout=True)
    axes = fig.subplots(1, len(pairs), squeeze=False)[0]
    for ax, (name, (mean, std)) in zip(axes, pairs.items()):
        gaussian_ellipses(ax, mean, std, label="$q_0$", color=PALETTE[0])
        gaussian_ellipses(ax, mean[::-1], std[::-1], label="$q_1$", color=PALETTE[1], ls="--")
        ax.plot([-lim, lim], [-lim, lim], ":", color="0.5", lw=1)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_xlabel("unit 1")
        ax.set_ylabel("unit 2")
        note = ", ".join(f"{k}: {v}" for k, v in (notes or {}).get(name, {}).items())
        ax.set_title(name + ("\n" + note if note else ""), fontsize=9)
        ax.legend(loc="lower right")
    contours = "contours at 1 (thick) and 2 (thin) standard deviations; x: the means"
    fig.suptitle(f"{suptitle}\n{contours}" if suptitle else contours, fontsize=10)
    return fig


def log_y_125(ax: plt.Axes) -> None:
    """A logarithmic y axis with plain-number ticks at 1, 2 and 5 of each decade (no minor labels),
    so that values within one decade can be read off."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def timings_against_width(widths: dict[str, Sequence[int]], spreads: dict[str, dict[str, np.ndarray]], *,
                          xlabel: str = "hidden width", ylabel: str = "CPU time (s): median, range of repeats",
                          subtitle: str = "trained VI posteriors", styles: Sequence[str] = ("o-", "s--")) -> plt.Figure:
    """Repeated timings against width on log-log axes, one panel per dataset: the median of the
    repeats with a bar over their range, one series per method.

    Args:
        widths: dataset -> its widths (the x values).
        spreads: dataset -> method label -> ``(widths, 3)`` median, minimum and maximum of the repeats.
        xlabel: label of the x axes.
        ylabel: label of the y axes.
        subtitle: each panel's title is ``"<dataset>, <subtitle>"``.
        styles: matplotlib format of each series, in order.

    Returns:
        The figure.
    """
    fig, axes = plt.subplots(1, len(spreads), figsize=(5 * len(spreads), 3.4), constrained_layout=True, squeeze=False,
                             sharey=True)  # one time axis: the panels compare by eye
    for ax, (dataset, series) in zip(axes[0], spreads.items()):
        ws = widths[dataset]
        for style, (label, spread) in zip(styles, series.items()):
            spread = np.asarray(spread)
            ax.errorbar(ws, spread[:, 0], yerr=[spread[:, 0] - spread[:, 1], spread[:, 2] - spread[:, 0]],
                        fmt=style, capsize=3, label=label)
        ax.set_xscale("log", base=2)
        log_y_125(ax)
        ax.set_xticks(ws, [str(w) for w in ws])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{dataset}, {subtitle}")
        ax.legend(fontsize=8)
    return fig


def output_weight_densities(x: np.ndarray, y: np.ndarray, weights: dict[str, np.ndarray], *,
                            suptitle: str | None = None, bins: int = 80) -> plt.Figure:
    """The training data of a 2-D problem, then the 2-D histogram of two output weights per form
    (Laurent et al., Fig. 1): each on a square window holding 99.5% of its ``|weights|`` (the
    title says how many networks fall outside it), with the diagonal dotted.

    Args:
        x: ``(n, 2)`` training inputs.
        y: ``(n,)`` their labels (colours).
        weights: panel title -> ``(networks, 2)`` output weights.
        suptitle: title of the figure.
        bins: histogram bins per axis.

    Returns:
        The figure.
    """
    rows = 2 if len(weights) >= 3 else 1  # four panels as two rows: readable at the page's width
    cols = -(-(1 + len(weights)) // rows)
    fig, grid = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.9 * rows), constrained_layout=True, squeeze=False)
    axes = grid.ravel()
    for ax in axes[1 + len(weights):]:
        ax.set_visible(False)
    axes[0].scatter(*np.asarray(x).T, c=y, cmap="coolwarm", s=6)
    axes[0].set_title("training data (2 classes)")
    axes[0].set_xlabel("$x_1$")
    axes[0].set_ylabel("$x_2$")
    for ax, (title, w) in zip(axes[1:], weights.items()):
        lim = np.percentile(np.abs(w), 99.5)
        ax.hist2d(w[:, 0], w[:, 1], bins=bins, range=[[-lim, lim], [-lim, lim]], cmap="viridis", cmin=1)
        ax.plot([-lim, lim], [-lim, lim], ":", color="0.5", lw=1)
        outside = int(np.sum(np.any(np.abs(w) > lim, axis=1)))
        ax.set_title(f"{title}\n({outside} of {len(w)} networks outside the window)", fontsize=9)
        ax.set_xlabel("output weight of hidden unit 1")
        ax.set_ylabel("output weight of hidden unit 2")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def split_half_histogram(d: np.ndarray, modes: Sequence[float] = (), *, xlabel: str = "$d$", units: str = "networks",
                         bins: int = 80) -> plt.Figure:
    """The split-half symmetry comparison: the histogram of ``d`` over the first half of the units
    beside that of ``-d`` over the second half (equal under a symmetry ``d -> -d``), on a window
    holding 99.5% of ``|d|``, with ``modes`` dotted.

    Args:
        d: one value per unit.
        modes: locations marked with dotted vertical lines.
        xlabel: label of the x axis.
        units: what the values are of, for the legend.
        bins: histogram bins.

    Returns:
        The figure.
    """
    d = np.asarray(d)
    fig, ax = plt.subplots(figsize=(7, 3), constrained_layout=True)
    half = len(d) // 2
    lim = np.percentile(np.abs(d), 99.5)
    edges = np.linspace(-lim, lim, bins + 1)
    ax.hist(d[:half], edges, histtype="step", lw=1.5, density=True, label=f"$d$, first half of the {units}")
    ax.hist(-d[half:], edges, histtype="step", lw=1.5, density=True, label="$-d$, second half")
    for m in modes:
        ax.axvline(m, color="0.4", ls=":", lw=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density")
    ax.set_title("the split-half comparison, with the KDE's modes (dotted)")
    ax.legend(fontsize=8, framealpha=0.9)
    return fig


def stacked_counts(counts: dict[tuple[str, str, str], int], panels: Sequence[str], categories: Sequence[str],
                   stacks: Sequence[str], colours: dict[str, str] | None = None, *, ylabel: str = "items",
                   suptitle: str | None = None, figsize: tuple[float, float] = (11, 3.6)) -> plt.Figure:
    """Stacked bars of counts, one panel per ``panels`` entry sharing the y axis: a bar per
    category, stacked in the order of ``stacks``, with one legend at the right for the stacks that occur.

    Args:
        counts: ``(panel, category, stack) -> count`` (missing keys count 0).
        panels: the panels, left to right.
        categories: the bars of each panel (a category's first space becomes a line break).
        stacks: the stacked parts, bottom to top.
        colours: stack -> colour (grey for a stack not in it).
        ylabel: label of the first panel's y axis.
        suptitle: title of the figure.
        figsize: the figure's size.

    Returns:
        The figure.
    """
    colours = colours or {}
    fig, axes = plt.subplots(1, len(panels), figsize=figsize, sharey=True, constrained_layout=True, squeeze=False)
    axes = axes[0]
    for ax, panel in zip(axes, panels):
        bottom = np.zeros(len(categories))
        for v in stacks:
            n = np.array([counts.get((panel, c, v), 0) for c in categories])
            if n.any():
                ax.bar(range(len(categories)), n, bottom=bottom, color=colours.get(v, "#969696"), label=v,
                       edgecolor="white", linewidth=0.5)
            bottom += n
        ax.set_xticks(range(len(categories)), [c.replace(" ", "\n", 1) for c in categories], fontsize=7)
        ax.set_title(panel, fontsize=9)
    axes[0].set_ylabel(ylabel)
    handles = {h.get_label(): h for ax in axes for h in ax.get_legend_handles_labels()[0]}
    fig.legend([handles[v] for v in stacks if v in handles], [v for v in stacks if v in handles], fontsize=7,
               loc="outside right center")
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    return fig


#: how many decades below the smallest positive value :func:`grouped_bars_figure` draws a value
#: at or below zero on a logarithmic axis
NONPOSITIVE_FLOOR_DECADES = 1


def grouped_bars_figure(categories: Sequence[str], series: dict[str, Sequence[float | None]], *, ylabel: str,
                        title: str | None = None, log: bool = False, nonpositive_note: str = "≤ 0",
                        figsize: tuple[float, float] = (9, 3.6)) -> plt.Figure:
    """A figure of :func:`grouped_bars`, optionally on a logarithmic y axis.

    On a logarithmic axis a value at or below zero (an unbiased estimate of a squared distance
    can be) has no bar; so that it does not vanish, it is drawn as a hatched bar whose top lies
    :data:`NONPOSITIVE_FLOOR_DECADES` decades below the smallest positive value (at 1 when none is
    positive), labelled ``nonpositive_note``.

    Args:
        categories: one group of bars each.
        series: legend label -> one value per category (``None`` leaves a gap).
        ylabel: label of the y axis.
        title: title of the axes.
        log: a logarithmic y axis.
        nonpositive_note: the label of a value at or below zero on a logarithmic axis.
        figsize: the figure's size.

    Returns:
        The figure.
    """
    fig, ax = plt.subplots(figsize=figsize)
    values = [float(v) for vals in series.values() for v in vals if v is not None]
    clipped = log and any(v <= 0 for v in values)
    if clipped:
        positive = [v for v in values if v > 0]
        floor = min(positive) * 10.0 ** -NONPOSITIVE_FLOOR_DECADES if positive else 1.0
        shown = {k: [None if v is None else (floor if float(v) <= 0 else v) for v in vals]
                 for k, vals in series.items()}
    grouped_bars(ax, categories, shown if clipped else series, ylabel=ylabel, title=title)
    if log:
        ax.set_yscale("log")
    if clipped:
        for bars, vals in zip(ax.containers, series.values()):
            for bar, v in zip(bars, vals):
                if v is not None and float(v) <= 0:
                    bar.set_hatch("///")
                    bar.set_alpha(0.5)
                    ax.annotate(nonpositive_note, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                                rotation=90, fontsize=7)
    fig.tight_layout()
    return fig


def pairwise_mi_figure(mi_id: np.ndarray, mi_ood: np.ndarray, *, pearson_r: float, spearman_rho: float,
                       suptitle: str | None = None) -> plt.Figure:
    """The mutual information of two-member ensembles, one value per pair of networks: its
    histogram in distribution and out of distribution (on one x axis and the same bins), and
    the two against each other.

    Args:
        mi_id: per pair, the MI on in-distribution (MNIST) inputs, in nats.
        mi_ood: per pair, the MI on out-of-distribution (Fashion-MNIST) inputs, in nats.
        pearson_r: Pearson's correlation of the two (shown in the scatter's title).
        spearman_rho: Spearman's correlation of the two (likewise).
        suptitle: title of the figure.

    Returns:
        The figure.
    """
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    edges = np.histogram_bin_edges(np.r_[np.ravel(mi_id), np.ravel(mi_ood)], bins=40)
    axes[0].hist(mi_id, bins=edges, color=PALETTE[0])
    axes[0].set(xlabel="MI of the pair on MNIST (ID), nats", ylabel="pairs", title="in distribution")
    axes[1].sharex(axes[0])  # one x range and bin width: the spreads compare by eye
    axes[1].hist(mi_ood, bins=edges, color=PALETTE[1])
    axes[1].set(xlabel="MI of the pair on Fashion-MNIST (OOD), nats", ylabel="pairs",
                title="out of distribution")
    dense = len(mi_id) > 2_000  # thousands of pairs: smaller, fainter points show where they crowd
    axes[2].scatter(mi_id, mi_ood, s=2 if dense else 6, alpha=0.15 if dense else 0.5, color=PALETTE[2])
    axes[2].set(xlabel="ID MI, nats", ylabel="OOD MI, nats",
                title=f"Pearson r = {pearson_r:.2f}, Spearman ρ = {spearman_rho:.2f}")
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def training_runs_figure(epoch_loss: np.ndarray, converged: np.ndarray, milestones: Sequence[int],
                         test_accuracy: np.ndarray, *, loss_title: str, accuracy_title: str) -> plt.Figure:
    """Networks trained at once: the training objective per epoch, one line per network (red for
    those in ``~converged``), with the learning-rate milestones dashed; and each network's test
    accuracy (red likewise), the networks numbered on a whole-number axis.

    Args:
        epoch_loss: ``(networks, epochs)`` training objective.
        converged: ``(networks,)`` booleans.
        milestones: epochs (counted from 0) after which the learning rate changed.
        test_accuracy: ``(networks,)`` test accuracy in [0, 1].
        loss_title: title of the left panel.
        accuracy_title: title of the right panel.

    Returns:
        The figure.
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), constrained_layout=True)
    epochs_axis = np.arange(1, epoch_loss.shape[1] + 1)
    for i, loss in enumerate(epoch_loss):
        axes[0].plot(epochs_axis, loss, lw=1, color="C0" if converged[i] else "C3")
    for k, m in enumerate(milestones):
        axes[0].axvline(m + 0.5, color="0.5", ls="--", lw=1, label="learning rate changes" if k == 0 else None)
    if len(milestones):
        axes[0].legend(fontsize=8, loc="upper right")
    axes[0].set_xlabel("epoch")
    axes[0].set_ylabel("training objective (cross-entropy + penalty)")
    axes[0].set_title(loss_title)
    axes[1].scatter(100 * np.asarray(test_accuracy), np.arange(len(test_accuracy)),
                    c=["C0" if c else "C3" for c in converged], zorder=2)
    axes[1].set_xlabel("test accuracy (%)")
    axes[1].set_ylabel("network")
    axes[1].yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[1].set_title(accuracy_title)
    return fig


def mass_landscape_figure(t: np.ndarray, path: np.ndarray, line_t: np.ndarray, lines: Sequence[np.ndarray],
                          eigenvalues: dict[str, np.ndarray], *, name: str) -> plt.Figure:
    """The mass of one network in its log-scales: along the path from its trained scales (``t = 0``)
    to its min-mass scales (``t = 1``), along random lines through the optimum, and the Hessian's
    eigenvalues.

    Args:
        t: the path's points.
        path: the mass at each of ``t``.
        line_t: the points of every random line (distance from the optimum).
        lines: the mass along each random line at ``line_t``.
        eigenvalues: label (e.g. ``"trained"``, ``"min-mass"``) -> the Hessian's eigenvalues there.
        name: the network's name in the titles.

    Returns:
        The figure.
    """
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), constrained_layout=True)
    axes[0].plot(t, path)
    axes[0].axvline(0, color="0.5", ls=":", lw=1)
    axes[0].axvline(1, color="0.5", ls=":", lw=1)
    axes[0].set_xlabel("t (log-scales t u*: 0 trained, 1 min-mass)")
    axes[0].set_ylabel("mass")
    axes[0].set_title(f"{name}: from trained to min-mass")
    for m in lines:
        axes[1].plot(line_t, m, lw=1)
    axes[1].set_xlabel("distance from u* along a random unit direction")
    axes[1].set_ylabel("mass")
    axes[1].set_title(f"{name}: random lines through u*")
    for label, ev in eigenvalues.items():
        axes[2].semilogy(ev, "o", ms=4, label=label)
    units = len(next(iter(eigenvalues.values())))
    axes[2].set_xlabel(f"eigenvalue index ({units} rescalable units)")
    axes[2].set_ylabel("Hessian eigenvalue")
    axes[2].set_title(f"{name}: Hessian of the mass in u")
    axes[2].legend()
    return fig


def pvalue_cdfs(pvalues: dict[str, Sequence[np.ndarray]], titles: Sequence[str]) -> plt.Figure:
    """The empirical distribution of p-values, one panel per layer and one curve per series, against
    the uniform distribution that identical marginals would give.

    Args:
        pvalues: series name -> per panel, that layer's p-values.
        titles: one title per panel.

    Returns:
        The figure.
    """
    fig, axes = plt.subplots(1, len(titles), figsize=(4 * len(titles), 3.8), constrained_layout=True)
    for l, ax in enumerate(axes):
        for k, (name, p) in enumerate(pvalues.items()):
            q = np.sort(p[l])
            ax.step(np.r_[0, q, 1], np.r_[0, np.arange(1, len(q) + 1) / len(q), 1], where="post", lw=2,
                    color=f"C{k}", label=name)
        ax.plot([0, 1], [0, 1], ":", color="0.5", lw=1, label="identical marginals (uniform)")
        ax.set_title(titles[l])
        ax.set_xlabel("p-value")
    axes[0].set_ylabel("share of tests with a smaller p-value")
    axes[0].legend(fontsize=8)
    return fig


def overlaid_histograms(panels: dict[str, dict[str, np.ndarray]], *, xlabel: str, ylabel: str,
                        bins: int = 20) -> plt.Figure:
    """Side-by-side panels sharing the y axis, each overlaying the density histograms of a few
    samples on the same bin edges (over the range of the panel's samples together).

    Args:
        panels: panel title -> sample label -> values.
        xlabel: label of every x axis.
        ylabel: label of the first panel's y axis.
        bins: histogram bins.

    Returns:
        The figure.
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(10, 3.2), constrained_layout=True, sharey=True)
    for ax, (title, samples) in zip(axes, panels.items()):
        edges = np.histogram_bin_edges(np.concatenate([np.ravel(x) for x in samples.values()]), bins)
        for label, x in samples.items():
            ax.hist(x, edges, alpha=0.55, density=True, label=label)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel(ylabel)
    axes[0].legend()
    return fig
