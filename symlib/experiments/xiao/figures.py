"""Xiao et al. (2023): the chapters' figures, each a function of an experiment's result that
returns its matplotlib figure(s), drawn with the book's style (:mod:`symlib.experiments.plotting`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from symlib.experiments import plotting
from symlib.experiments.xiao.settings import MATCHING_METHODS, XIAO_TABLE1
from symlib.experiments.xiao.tables import TABLE1_ORDER


# ---------------------------------------------------------------------------------------
# Permuting one trained network (Sec. 1)
# ---------------------------------------------------------------------------------------

def distance_against_not(rows: Sequence[tuple[int, int, float, float]]) -> plt.Figure:
    """Relative weight distance of permuted copies against their NoT (the rows of
    :func:`~symlib.experiments.xiao.runs.distance_by_not`), with the distance of independent
    weights of equal norm (:math:`\\sqrt 2`) for reference."""
    fig, ax = plt.subplots(figsize=(4.8, 3.2), constrained_layout=True)
    ax.plot([r[1] for r in rows], [r[3] for r in rows], "o-", label="permuted copy")
    ax.axhline(np.sqrt(2), ls="--", color="0.4", label=r"independent weights ($\sqrt{2}$)")
    ax.set_xlabel("number of transpositions NoT(P)")
    ax.set_ylabel(r"$\|W - PW\|_2 \,/\, \|W\|_2$")
    ax.set_title("A permuted copy moves away as NoT grows")
    ax.legend()
    return fig


def permuted_weights(params: Mapping[str, Any], permuted: Mapping[str, Any], n_show: int
                     ) -> tuple[plt.Figure, plt.Figure]:
    """The weight matrices of a one-hidden-layer MNIST MLP beside those of its permuted copy: the
    first layer's incoming weights of the first ``n_show`` hidden units on 64 pixels from the
    middle of the image (pixels 392-455: image rows 14 and 15 and the first 8 pixels of row 16),
    and the output layer's weights of the same units.

    Returns:
        The two figures (first layer, output layer).
    """
    w1, w1p = np.asarray(params["dense_0"]["kernel"]).T, np.asarray(permuted["dense_0"]["kernel"]).T
    centre = slice(14 * 28, 14 * 28 + 64)
    first = plotting.weight_matrices([w1[:n_show, centre], w1p[:n_show, centre]],
                                     [r"$W_1$ (original)", r"$P W_1$ (permuted)"],
                                     suptitle=f"First layer: incoming weights of {n_show} hidden units, "
                                              "64 central pixels",
                                     xlabel="input pixel - 392 (image rows 14-16)", ylabel="hidden unit")
    w2, w2p = np.asarray(params["dense_1"]["kernel"]), np.asarray(permuted["dense_1"]["kernel"])
    second = plotting.weight_matrices([w2[:n_show], w2p[:n_show]],
                                      [r"$W_2^\top$ (original)", r"$(W_2 P^\top)^\top$ (permuted)"],
                                      suptitle=f"Second layer: outgoing weights of the same {n_show} "
                                               "hidden units",
                                      xlabel="class (logit)", ylabel="hidden unit")
    return first, second


# ---------------------------------------------------------------------------------------
# Re-basin barriers (Fig. 1)
# ---------------------------------------------------------------------------------------

def interpolation_figure(res: Any) -> plt.Figure:
    """Loss and accuracy along the three interpolation paths of pair 0 of a ``rebasin_barriers``
    result (:class:`~symlib.experiments.xiao.results.RebasinResult`), train and test (Fig. 1)."""
    curves = {f"{split}, {m}": res.curve(split, m) for split in ("train", "test") for m in MATCHING_METHODS}
    return plotting.interpolation_curves(curves, title="Interpolating between two MLPs trained from different seeds")


# ---------------------------------------------------------------------------------------
# The number of transpositions (Sec. 2, Fig. 2)
# ---------------------------------------------------------------------------------------

def not_sweep_figure(sweep: Any, ks: np.ndarray) -> plt.Figure:
    """Fig. 2 (a-c) of a ``not_sweep`` result (:class:`~symlib.experiments.xiao.results.NoTSweepResult`)
    against the planted NoT values ``ks``: NoT(P') after training, the distance and the loss barrier
    between the trained networks before and after matching (mean over the runs, band +-1 standard
    error; the identity drawn over the data, so that it stays visible where the two agree)."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), constrained_layout=True)
    plotting.mean_band(axes[0], ks, sweep.per_run("not_p_prime"), r"NoT($P'$) after training")
    axes[0].plot(ks, ks, ls=":", color="k", lw=1.2, label="identity", zorder=3)
    axes[0].set_xlabel("NoT(P) at initialisation")
    axes[0].set_ylabel("NoT(P') after training")
    axes[0].set_title("(a) NoT(P') against the planted NoT(P)")
    axes[0].legend()
    panels = ((axes[1], ("distance_raw", "distance_matched"), "weight-space distance (L2)"),
              (axes[2], ("barrier_raw", "barrier_matched"), "loss barrier (nats)"))
    for ax, (raw, matched), label in panels:
        plotting.mean_band(ax, ks, sweep.per_run(raw), "before matching")
        plotting.mean_band(ax, ks, sweep.per_run(matched), "after matching")
        ax.set_xlabel("NoT(P) at initialisation")
        ax.set_ylabel(label)
        ax.legend()
    axes[1].set_title("(b) distance between the trained nets")
    axes[2].set_title("(c) loss barrier on the training set")
    runs = sweep.per_run("not_p_prime").shape[0]
    fig.suptitle(f"mean over {runs} runs" + (", band: +-1 standard error" if runs > 1 else ""), fontsize=9)
    return fig


def not_paths_figure(paths: Any, hidden: int) -> plt.Figure:
    """Fig. 2 (d) of a ``not_paths`` result (:class:`~symlib.experiments.xiao.results.NoTPathsResult`):
    NoT of the matching permutation along the interpolation path and over training, for the
    permuted-init and the independent-init partner (``hidden`` units: the epochs panel's top)."""
    lam = np.asarray(paths.lambdas)
    fig, (ax_l, ax_e) = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
    for name, color in (("permuted", plotting.PALETTE[0]), ("independent", plotting.PALETTE[1])):
        ax_l.plot(lam, paths.partner(name).not_lambda, "o-", ms=3, color=color, label=f"{name} init")
        ax_e.plot(paths.epochs, paths.partner(name).not_epochs, "o-", ms=3, color=color, label=f"{name} init")
    ax_e.axhline(paths.not_p, ls=":", color="k", lw=1.2, label="NoT(P) planted", zorder=3)
    ax_l.set_xlabel(r"$\lambda$")
    ax_l.set_ylabel(r"NoT($\tilde P$) matching $W_\lambda$ to $W_0$")
    ax_l.set_title("(d) along the interpolation path")
    ax_e.set_xlabel("epoch (0 = initialisation)")
    ax_e.set_ylabel("NoT of the matching permutation")
    ax_e.set_title("(d) over training")
    ax_e.set_ylim(0, hidden)
    for ax in (ax_l, ax_e):
        ax.legend()
    return fig


# ---------------------------------------------------------------------------------------
# The compact representation (Sec. 3.1, Table 1)
# ---------------------------------------------------------------------------------------

def elbo_figure(elbo_history: Sequence[float]) -> plt.Figure:
    """Mean-field VI's negative ELBO per training example over the epochs, on a log axis with
    ticks at 1, 2 and 5 of each decade (a classifier's ELBO is at most 0: a log-likelihood
    minus a KL divergence), its last value marked."""
    neg = -np.asarray(elbo_history, float)
    if not np.all(neg > 0):
        raise ValueError(f"elbo_figure: an ELBO per example must be negative, got a largest value of {-neg.min():g}")
    fig, ax = plt.subplots(figsize=(5.5, 3.2), constrained_layout=True)
    ax.plot(np.arange(1, len(neg) + 1), neg, color=plotting.PALETTE[0])
    plotting.log_y_125(ax)
    ax.annotate(f"last: {neg[-1]:.3g}", (len(neg), neg[-1]), textcoords="offset points", xytext=(-4, 6),
                ha="right", fontsize=8)
    ax.set_xlabel("epoch")
    ax.set_ylabel("-ELBO per training example (nats)")
    ax.set_title("Mean-field VI: the negative ELBO over training (lower is better)", fontsize=10)
    return fig


def table1_figure(table: Mapping[str, Any], profile_name: str, runs: int) -> plt.Figure:
    """Table 1's agreement and total variation with HMC as bars, ours (mean over ``runs`` runs of a
    ``compact_representation`` result's ``table()``) beside the paper's, for the paper's rows."""
    paper_col = {c: i for i, c in enumerate(XIAO_TABLE1["columns"])}
    cols = [c for c in TABLE1_ORDER if c in paper_col]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), constrained_layout=True)
    ours = f"ours ({profile_name}, mean ± s.e. of {runs} runs)"
    for ax, metric, label in ((axes[0], "agreement", "agreement with HMC\n(higher is better)"),
                              (axes[1], "tv", "total variation to HMC\n(lower is better)")):
        bars = {ours: [table[c][metric][0] for c in cols],
                "Xiao et al. (2023)": [XIAO_TABLE1[metric][paper_col[c]] for c in cols]}
        plotting.grouped_bars(ax, cols, bars, ylabel=label, errors={ours: [table[c][metric][1] for c in cols]})
        ax.set_ylim(0, 1.3)  # both metrics lie in [0, 1]: room above the bars for the legend
        ax.set_yticks(np.linspace(0, 1, 6))
        ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.suptitle("Table 1 as a figure: how close each approximation's predictive is to HMC's")
    return fig


def chains_figure(by_chains: Mapping[str, np.ndarray], profile_name: str) -> plt.Figure:
    """Agreement of q_d and q_r with their samples' predictive against the number of HMC chains
    pooled (:func:`~symlib.experiments.xiao.posteriors.agreement_by_chains`)."""
    n_chains = by_chains["chains"]
    fig, ax = plt.subplots(figsize=(5.5, 3.4), constrained_layout=True)
    for i, (key, label) in enumerate((("agreement_q_d", "$q_d$ (direct)"), ("agreement_q_r", "$q_r$ (re-basin)"))):
        ax.plot(n_chains, by_chains[key], "o-", color=plotting.PALETTE[i], label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(n_chains, [str(n) for n in n_chains])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("number of HMC chains the samples come from")
    ax.set_ylabel("agreement with those samples' predictive")
    ax.set_title(f"q_d and q_r against the number of chains ({profile_name} profile)")
    ax.legend()
    return fig


# ---------------------------------------------------------------------------------------
# Comparing, merging and pruning (Sec. 3.2, Fig. 3)
# ---------------------------------------------------------------------------------------

#: the pruning curves of Fig. 3 (right) and their labels
PRUNING_LABELS = {"ensemble": "ensemble only", "hmc": "HMC only",
                  "ensemble mu + hmc sigma": "ensemble μᵣ + HMC σᵣ", "vi": "VI"}
#: their colours, as in the paper's figure: the stitched curve purple, the single-method ones green
PRUNING_COLOURS = {"ensemble": "#1b7837", "hmc": "#7fbf7b", "ensemble mu + hmc sigma": "#762a83", "vi": "0.45"}


def sigma_histograms(run: Any, runs: int) -> plt.Figure:
    """Fig. 3 (left) for one run of ``compact_representation``
    (:class:`~symlib.experiments.xiao.results.CompactRun`, run 1 of ``runs``): histograms of the
    per-weight sigma of q_d and q_r for HMC and the ensemble, and of VI's sigma."""
    sig = run.sigma
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.3), constrained_layout=True)
    bins = np.logspace(np.log10(max(1e-4, min(v.min() for v in sig.values()) + 1e-12)),
                       np.log10(max(v.max() for v in sig.values())), 50)

    def label(name: str, col: str) -> str:  # the median, and how many values the first bin also holds
        below = int((np.asarray(sig[col]) < bins[0]).sum())
        return f"{name} (median {run.median_sigma[col]:.3g})" + (f";\n{below:,} below {bins[0]:.0e}, in the first bin"
                                                                  if below else "")

    sigma_labels = {"q_d": r"$\sigma_d$", "q_r": r"$\sigma_r$", "q_r (per chain)": r"$\sigma_r$ per chain"}
    columns = {"HMC": (("HMC q_d", "q_d"), ("HMC q_r", "q_r"), ("HMC q_r (per chain)", "q_r (per chain)")),
               "Ensemble": (("Ensemble q_d", "q_d"), ("Ensemble q_r", "q_r"))}
    for ax, (method, cols) in zip(axes[:2], columns.items()):
        for (col, kind), color in zip(cols, plotting.PALETTE):
            ax.hist(np.clip(sig[col], bins[0], bins[-1]), bins=bins, histtype="step", lw=1.5, color=color,
                    label=label(sigma_labels[kind], col))
        ax.set_title(f"{method} (run 1 of {runs})")
    axes[2].hist(np.clip(sig["VI q"], bins[0], bins[-1]), bins=bins, histtype="step", lw=1.5,
                 color=plotting.PALETTE[3], label=label("VI", "VI q"))
    axes[2].set_title(f"mean-field VI (run 1 of {runs})")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel(r"per-weight standard deviation $\sigma$")
        ax.legend(fontsize=7.5, loc="upper center")
    axes[0].set_ylabel("number of weights")
    return fig


def pruning_figure(prune: Mapping[str, Any], runs: int) -> plt.Figure:
    """Fig. 3 (right): test accuracy of the mean network against the share of weights pruned
    (largest sigma first), mean ± SE over ``runs`` runs (a ``compact_representation`` result's
    ``pruning()``), for each curve of :data:`PRUNING_LABELS`."""
    keep = prune["keep_fraction"][0]
    fig, ax = plt.subplots(figsize=(7.5, 3.6), constrained_layout=True)
    for key, label in PRUNING_LABELS.items():
        mean, se = prune[key]
        ax.errorbar(100 * (1 - keep), 100 * mean, yerr=100 * se, fmt="o-", ms=3, capsize=2, label=label,
                    color=PRUNING_COLOURS[key])
    ax.set_xlabel("weights pruned (%)")
    ax.set_ylabel("test accuracy of the mean (%)")
    ax.set_title(f"Pruning the weights with the largest sigma (mean +- SE, {runs} runs)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # beside the axes: no curve hidden
    return fig
