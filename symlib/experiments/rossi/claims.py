"""Rossi et al. (2023): the registered claims (Evidence over pairs, repeats and widths) and the
registered differences of our runs."""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symlib.experiments.judging.claims import (Evidence, Verdict, claim, worst, difference, interval_evidence,
                                               mean_of_units, not_tested, one_run, share_of_units, untrained_limit)
from symlib.experiments.registry import pick
from symlib.experiments.judging.thresholds import threshold
from symlib.experiments.rossi.settings import SPLITS



# ----------------------------------------------------------------------------- claims
#
# Each claim returns Evidence over independent units: posterior pairs (or series of pairs,
# one network pair per width) for the barriers, the (dataset, width) alignments for
# within_a_minute. The timing ratios (time_grows_with_width, vi_costlier_than_weight_matching)
# have an interval over repeated timings of one posterior pair per width, which are not
# independent units, so their verdict is capped (judging.claims.one_run) at "same / opposite
# direction, not significant". The thresholds and our readings of the paper's words are in
# symlib.experiments.judging.thresholds (Rossi section). A summary with one pair per width
# (the runs saved before replicates) gives an infinite interval, so at best "same direction,
# not significant".

_SEC51 = "Rossi et al. (2023), Sec. 5.1"
_APPC = "Rossi et al. (2023), App. C, Fig. A2"
_POSTER = "Rossi et al. (2023), poster"
#: Sec. 5.1's sentence on the MLP barriers, as rossi2023_summary.md quotes it (the paper says "zero", not
#: "nearly zero", of the MLPs; "nearly-zero" of ResNet20), and the poster's, which names no dataset
_ZERO_MLP = '"we recover zero barrier solutions for MLPs on both MNIST and CIFAR10"'
_ZERO_MLP_POSTER = '"With alignment we can find solutions with zero loss barrier for MLPs"'
_WIDER_MLP = '"wider models generally provide lower barriers: for MLPs this holds true with and without alignment"'


def _check_summary_keys(summary: Mapping[str, Any], keys: Sequence[str], experiment: str) -> None:
    missing = [k for k in keys if k not in summary]
    if missing:
        raise ValueError(f"summary of {experiment!r} lacks {missing} (has {sorted(summary)})")


def _pair_barriers(summary: Mapping[str, Any], experiment: str) -> dict[str, Any]:
    """``[dataset][split][kind]``: per width, the barrier of every independent pair; from
    ``marginal_pairs``, or one pair per width from ``marginal`` (runs without replicates)."""
    _check_summary_keys(summary, ("widths", "marginal"), experiment)
    if "marginal_pairs" in summary:
        return summary["marginal_pairs"]
    return {ds: {split: {kind: [[float(v)] for v in b[kind]] for kind in b} for split, b in per_split.items()}
            for ds, per_split in summary["marginal"].items()}


def _pairs_text(n: Sequence[int]) -> str:
    lo, hi = min(n), max(n)
    return f"{lo} pair{'s' if hi > 1 else ''}" if lo == hi else f"{lo}-{hi} pairs"


def _slope(widths: Sequence[int], values: Sequence[float]) -> float:
    """Least-squares slope of ``values`` against log2(widths): nats per doubling."""
    return float(np.polyfit(np.log2(np.asarray(widths, dtype=float)), np.asarray(values, dtype=float), 1)[0])


def _series_slopes(widths: Sequence[int], per_width: Sequence[Sequence[float]]) -> list[float]:
    """One slope per series of independent pairs (pair k at every width)."""
    n = min(len(v) for v in per_width)
    return [_slope(widths, [v[k] for v in per_width]) for k in range(n)]


def barrier_reduction(summary: Mapping[str, Any], experiment: str = "vi_alignment") -> Evidence:
    """``alignment_lowers_every_barrier``: naive minus aligned barrier, mean over pairs, worst cell."""
    t = threshold("vi_alignment.alignment_lowers_every_barrier")
    pairs = _pair_barriers(summary, experiment)
    cells, sizes = [], []
    for ds, per_split in pairs.items():
        for split, b in per_split.items():
            for w, naive, aligned in zip(summary["widths"][ds], b["naive"], b["aligned"]):
                d = np.asarray(naive, dtype=float) - np.asarray(aligned, dtype=float)
                sizes.append(d.size)
                cells.append((mean_of_units(d, t, "posterior pairs", ""), f"{ds} {split} width {w}",
                              float(np.mean(naive)), float(np.mean(aligned))))
    if not cells:
        return not_tested(t, f"the summary of {experiment!r} holds no barrier")
    least = worst([c[0] for c in cells])
    where, naive, aligned = next((c[1], c[2], c[3]) for c in cells if c[0] is least)
    lowered = sum(c[0].effect > 0 for c in cells)
    return Evidence(least.effect, least.low, least.high, t, f"{_pairs_text(sizes)} per cell (worst of {len(cells)} "
                    "dataset-split-width cells)",
                    f"alignment lowers the mean barrier in {lowered} of {len(cells)} cells; least clear: {where}, "
                    f"{naive:.3f} naive -> {aligned:.3f} aligned nats (mean over {_pairs_text(sizes)})")


def _widest(summary: Mapping[str, Any], dataset: str) -> tuple[int, int]:
    """``(index, width)`` of the widest width of ``dataset`` (the widths need not be sorted)."""
    widths = list(summary["widths"][dataset])
    i = int(np.argmax(widths))
    return i, widths[i]


def _removed_share(dataset: str, experiment: str = "vi_alignment"):
    def check(summary: Mapping[str, Any]) -> Evidence:
        t = threshold("vi_alignment.alignment_removes_barrier")
        b = pick(_pair_barriers(summary, experiment), dataset, "dataset")
        i, widest = _widest(summary, dataset)
        evs, parts = [], []
        for split in SPLITS:
            naive, aligned = np.asarray(b[split]["naive"][i], float), np.asarray(b[split]["aligned"][i], float)
            if np.any(naive <= 0):  # the curve never rises above the chord: no barrier to remove
                return not_tested(t, f"{dataset} {split}: the naive barrier is zero in {int(np.sum(naive <= 0))} of "
                                     f"{naive.size} pairs at width {widest}, so the share removed is undefined")
            share = 1.0 - aligned / naive
            evs.append(mean_of_units(share, t, "posterior pairs", ""))
            parts.append(f"{split}: {naive.mean():.3f} naive -> {aligned.mean():.3f} aligned nats "
                         f"({100 * share.mean():.0f}% removed)")
        w = worst(evs)
        return Evidence(w.effect, w.low, w.high, t, f"{w.units} at width {widest} (worse of train, test)",
                        f"width {widest}, mean over {w.units}: " + "; ".join(parts))
    return check


def _aligned_at_widest(summary: Mapping[str, Any], dataset: str, experiment: str, t) -> Evidence:
    """The aligned barrier at the widest width against ``t``: the mean over the posterior pairs,
    the worse of train and test."""
    b = pick(_pair_barriers(summary, experiment), dataset, "dataset")
    i, widest = _widest(summary, dataset)
    evs = [mean_of_units(np.asarray(b[split]["aligned"][i], float), t, "posterior pairs",
                         f"{split} {float(np.mean(b[split]['aligned'][i])):.3f} nats") for split in SPLITS]
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} at width {widest} (worse of train, test)",
                    f"aligned barrier at width {widest}, mean over {w.units}: " + "; ".join(e.detail for e in evs))


def _aligned_nearly_zero(dataset: str, experiment: str = "vi_alignment"):
    return lambda summary: _aligned_at_widest(summary, dataset, experiment,
                                              threshold("vi_alignment.aligned_barrier_nearly_zero"))


def width_slopes(summary: Mapping[str, Any], dataset: str,
                 experiment: str = "vi_alignment") -> dict[tuple[str, str], Evidence]:
    """The slope of the barrier against log2(width) (nats per doubling) of every series of
    independent pairs (pair k at every width), as evidence per ``(split, kind)``: the mean over
    the series with its Student-t interval, against the threshold of
    ``barrier_falls_with_width``.

    Args:
        summary: a ``vi_alignment`` (or ResNet20) summary with at least two widths.
        dataset: the dataset's key in the summary.
        experiment: the experiment, for error messages.

    Raises:
        ValueError: if the summary has fewer than two widths of ``dataset``.
    """
    t = threshold("vi_alignment.barrier_falls_with_width")
    widths = summary["widths"][dataset]
    if len(widths) < 2:
        raise ValueError(f"{experiment}: {dataset} has one width ({widths}); a slope needs two")
    b = pick(_pair_barriers(summary, experiment), dataset, "dataset")
    return {(split, kind): mean_of_units(_series_slopes(widths, b[split][kind]), t, "series of independent pairs",
                                         "")
            for split in SPLITS for kind in ("naive", "aligned")}


def width_slope_rows(summary: Mapping[str, Any], experiment: str = "vi_alignment") -> list[tuple]:
    """Rows ``(dataset, split, barrier, series, slope per doubling, 95% interval)`` of
    :func:`width_slopes` for every dataset of a summary with at least two widths."""
    rows = []
    pairs = _pair_barriers(summary, experiment)
    for ds, widths in summary["widths"].items():
        if len(widths) < 2:
            continue
        for (split, kind), ev in width_slopes(summary, ds, experiment).items():
            series = min(len(v) for v in pairs[ds][split][kind])  # as _series_slopes pairs them up
            rows.append((ds, split, kind, series, f"{ev.effect:+.3f}", f"[{ev.low:+.3f}, {ev.high:+.3f}]"))
    return rows


WIDTH_SLOPE_HEADERS = ["dataset", "split", "barrier", "series", "slope (nats per doubling of the width)",
                       "95% interval over the series"]


def _falls(dataset: str, experiment: str = "vi_alignment"):
    def check(summary: Mapping[str, Any]) -> Evidence:
        t = threshold("vi_alignment.barrier_falls_with_width")
        widths = summary["widths"][dataset]
        if len(widths) < 2:
            return not_tested(t, f"{dataset}: one width ({widths}); a trend needs two")
        b = pick(_pair_barriers(summary, experiment), dataset, "dataset")
        slopes = width_slopes(summary, dataset, experiment)
        parts = [f"{split} {kind} {', '.join(f'{float(np.mean(v)):.3f}' for v in b[split][kind])} "
                 f"(slope {slopes[split, kind].effect:+.3f}/doubling)" for split, kind in slopes]
        w = worst(list(slopes.values()))
        return Evidence(w.effect, w.low, w.high, t, f"{w.units} (worst of train/test x naive/aligned)",
                        f"widths {', '.join(map(str, widths))}, mean barriers: " + "; ".join(parts))
    return check


@claim("vi_alignment", "alignment_lowers_every_barrier", f"{_SEC51}; poster",
       '"Loss barriers always appear between two solutions in the standard VI approach" (poster); read as: '
       "alignment lowers them (MLPs, MNIST and Fashion-MNIST)")
def _alignment_lowers_every_barrier(summary: Mapping[str, Any]) -> Evidence:
    return barrier_reduction(summary, "vi_alignment")


for _ds, _label, _source, _zero in (("mnist", "MNIST", _SEC51, _ZERO_MLP),
                                    ("fashion_mnist", "Fashion-MNIST", _POSTER, _ZERO_MLP_POSTER
                                     + " (of MLPs; Sec. 5.1's sentence names MNIST and CIFAR10)")):
    claim("vi_alignment", f"alignment_removes_barrier_{_ds}", _source,
          f"{_label} MLP: {_zero}; read as: at the widest width alignment removes more than half of the naive "
          "barrier (train and test)")(_removed_share(_ds))
    claim("vi_alignment", f"aligned_barrier_nearly_zero_{_ds}", _source,
          f"{_label} MLP: {_zero}; the absolute reading: the aligned barrier at the widest width is below a small "
          "number of nats (nearly zero; train and test)")(_aligned_nearly_zero(_ds))
    claim("vi_alignment", f"barrier_falls_with_width_{_ds}", _SEC51,
          f"{_label} MLP: {_WIDER_MLP} (train and test)")(_falls(_ds))

claim("vi_alignment_cifar10", "alignment_lowers_every_barrier", f"{_SEC51}; poster",
      '"Loss barriers always appear between two solutions in the standard VI approach" (poster); read as: '
      "alignment lowers them (MLPs, CIFAR-10)")(
    lambda summary: barrier_reduction(summary, "vi_alignment_cifar10"))
claim("vi_alignment_cifar10", "alignment_removes_barrier_cifar10", _SEC51,
      f"CIFAR-10 MLP: {_ZERO_MLP}; read as: at the widest width alignment removes more than half of the naive "
      "barrier (train and test)")(
    _removed_share("cifar10", "vi_alignment_cifar10"))
claim("vi_alignment_cifar10", "aligned_barrier_nearly_zero_cifar10", _SEC51,
      f"CIFAR-10 MLP: {_ZERO_MLP}; the absolute reading: the aligned barrier at the widest width is below a small "
      "number of nats (nearly zero; train and test)")(_aligned_nearly_zero("cifar10", "vi_alignment_cifar10"))
claim("vi_alignment_cifar10", "barrier_falls_with_width_cifar10", _SEC51,
      f"CIFAR-10 MLP: {_WIDER_MLP} (train and test)")(
    _falls("cifar10", "vi_alignment_cifar10"))


# Validity check of the ResNet20 claims (judging.claims.untrained_limit): a barrier between
# networks that have not learned (test accuracy of either model average at most twice chance:
# 0.2 for 10 classes, 0.02 for CIFAR-100's 100) is noise, so the claims are "not tested" on such a run.


def _resnet_untrained(summary: Mapping[str, Any], consequence: str) -> str | None:
    from symlib.experiments.rossi.resnet import RESNET_CLASSES

    accuracy = summary.get("endpoint_accuracy") or {}
    datasets = sorted(set(summary.get("marginal_pairs") or {}) | set(summary.get("table") or {}))
    missing = [ds for ds in datasets if not accuracy.get(ds)]
    if missing or not accuracy:
        return (f"the summary holds no test accuracy of the VI networks on {', '.join(missing) or 'any dataset'}, "
                f"so whether they learned cannot be checked (if they have not, {consequence})")
    for ds, per_w in accuracy.items():
        lowest = min(min(v) for v in per_w)
        limit = untrained_limit(lowest, RESNET_CLASSES[ds])
        if limit is not None:
            return (f"the VI networks have not learned: the lowest test accuracy of a pair's model averages on {ds} "
                    f"is {lowest:.2f} (at most {limit:g}, twice chance), so {consequence}")
    return None


def _resnet_gate(summary: Mapping[str, Any], t,
                 consequence: str = "a barrier between them is noise") -> Evidence | None:
    """Not-tested evidence against ``t`` when the networks have not learned (:func:`_resnet_untrained`), else None."""
    why = _resnet_untrained(summary, consequence)
    return not_tested(t, why) if why else None


@claim("vi_alignment_resnet20", "alignment_lowers_every_barrier", f"{_SEC51}; poster",
       "ResNet20: a loss barrier appears between two VI solutions and alignment lowers it "
       "(nearly zero on CIFAR-10 in the paper)")
def _resnet_lowers(summary: Mapping[str, Any]) -> Evidence:
    return (_resnet_gate(summary, threshold("vi_alignment.alignment_lowers_every_barrier"))
            or barrier_reduction(summary, "vi_alignment_resnet20"))


@claim("vi_alignment_resnet20", "wider_lower_only_after_alignment", _SEC51,
       'ResNet20: "wider models generally provide lower barriers: for MLPs this holds true with and without '
       'alignment, while for the ResNet20 this is happening only after alignment"')
def _resnet_wider_lower(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_resnet20.wider_lower_only_after_alignment")
    gated = _resnet_gate(summary, t)
    if gated:
        return gated
    margin = threshold("vi_alignment_resnet20.naive_flat_margin").value
    pairs = _pair_barriers(summary, "vi_alignment_resnet20")
    evs, parts = [], []
    for ds, per_split in pairs.items():
        widths = summary["widths"][ds]
        if len(widths) < 2:
            return not_tested(t, f"{ds}: one width ({', '.join(map(str, widths))}); a width trend needs at least two")
        for split, b in per_split.items():
            aligned = _series_slopes(widths, b["aligned"])
            naive = _series_slopes(widths, b["naive"])
            evs.append(mean_of_units(aligned, t, "series of independent pairs", ""))
            evs.append(mean_of_units(np.subtract(aligned, naive), t, "series of independent pairs", ""))
            # the 'only', judged like the other parts: the naive barrier's fall per doubling minus
            # the margin is below 0 (holds: width does not lower it), wholly above 0 (differs), or
            # in between; a naive trend that is merely not significant no longer counts as the 'only'
            evs.append(mean_of_units(-np.asarray(naive) - margin, t, "series of independent pairs",
                                     f"{ds} {split}: the naive barrier's fall per doubling minus {margin:g}"))
            parts.append(f"{ds} {split}: slope aligned {np.mean(aligned):+.3f}, naive {np.mean(naive):+.3f} "
                         "nats/doubling")
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t,
                    f"{w.units} (worst of the aligned slope, aligned - naive, and the naive barrier's fall per "
                    f"doubling minus {margin:g}; train, test)",
                    f"widths {', '.join(map(str, widths))}: " + "; ".join(parts))


@claim("vi_alignment_resnet20_cifar100", "barrier_remains_after_alignment", "Rossi et al. (2023), App. C, Fig. A3",
       "CIFAR-100: despite converging well, the alignment falls short of zero-barrier solutions")
def _cifar100_barrier_remains(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_resnet20_cifar100.barrier_remains_after_alignment")
    return _resnet_gate(summary, t) or _aligned_at_widest(summary, "cifar100", "vi_alignment_resnet20_cifar100", t)


@claim("vi_alignment_robustness", "removes_barrier_every_setting",
       "Rossi et al. (2023) summary (rossi2023_summary.md, a generated summary, not Sec. 5.1)",
       '"The results hold for different prior variances and temperatures" (the summary\'s sentence; neither the '
       "appendix nor the poster we have says it); read as: alignment removes more than half of the naive barrier "
       "in every (prior variance, temperature) setting")
def _robust(summary: Mapping[str, Any]) -> Evidence:
    t = threshold("vi_alignment_robustness.removes_barrier_every_setting")
    _check_summary_keys(summary, ("settings", "marginal_pairs", "width"), "vi_alignment_robustness")
    evs, parts = [], []
    for i, st in enumerate(summary["settings"]):
        shares = []
        for split in SPLITS:
            naive = np.asarray(summary["marginal_pairs"][split]["naive"][i], float)
            aligned = np.asarray(summary["marginal_pairs"][split]["aligned"][i], float)
            if np.any(naive <= 0):  # as in _removed_share: no barrier to remove, the share is undefined
                return not_tested(t, f"prior var {st['prior_var']:g}, T {st['temperature']:g}, {split}: the naive "
                                     f"barrier is zero in {int(np.sum(naive <= 0))} of {naive.size} pairs, so the "
                                     "share removed is undefined")
            share = 1.0 - aligned / naive
            evs.append(mean_of_units(share, t, "posterior pairs", ""))
            shares.append(f"{100 * share.mean():.0f}%")
        parts.append(f"prior var {st['prior_var']:g}, T {st['temperature']:g}: {' / '.join(shares)}")
    if not evs:
        return not_tested(t, "the summary holds no setting")
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} per setting (worst of {len(evs)} setting-splits)",
                    f"{summary.get('dataset', '')} width {summary['width']}, share removed (train / test): "
                    + "; ".join(parts))


# ---- timings: the summaries time one posterior pair per (dataset, width), each call repeated. The
# share within a minute is over those alignments (different pairs); a ratio's interval, the range
# its repeats allow, is the spread of repeated timings of one pair, not an interval over independent
# pairs, so the ratio claims are judged within one run (judging.claims.one_run): at most "same /
# opposite direction, not significant". An interval over pairs would need a summary that times
# several pairs per width, which the runs do not (they time each width's first pair).


def _repeats_of(summary: Mapping[str, Any], dataset: str, column: str) -> np.ndarray | None:
    """``(widths, repeats)`` timings of one column, or None for a summary without repeats."""
    rep = summary["table"][dataset].get(f"{column}_repeats")
    return None if rep is None else np.asarray(rep, dtype=float)


_NO_REPEATS = ("the summary keeps one timing per call (the minimum of {n} repeats), not the repeats themselves, "
               "so the spread between repeats cannot be told")


#: the units of a ratio's interval: repeated timings of one pair (one_run keys on "one run")
_REPEATS_OF_ONE_PAIR = ("interval = range of the repeats, which time one posterior pair: not independent pairs, "
                        "one run")


def _ratio_evidence(num: np.ndarray, den: np.ndarray, t) -> Evidence:
    """Median ratio and the range the repeats allow: [min num / max den, max num / min den]
    (repeats of one pair's timing: the caller marks the result :func:`one_run`)."""
    return interval_evidence(float(np.median(num) / np.median(den)), float(num.min() / den.max()),
                             float(num.max() / den.min()), t, "", "")


def _within_a_minute(summary: Mapping[str, Any], experiment: str) -> Evidence:
    t = threshold("vi_alignment_timings.within_a_minute")
    _check_summary_keys(summary, ("widths", "table"), experiment)
    reps = [_repeats_of(summary, ds, "w2_seconds") for ds in summary["table"]]
    if any(r is None for r in reps):
        return not_tested(t, _NO_REPEATS.format(n=summary.get("repeats", "?")))
    slowest = np.concatenate([r.max(axis=1) for r in reps])
    under = int(np.sum(slowest < 60.0))
    return share_of_units(under, slowest.size, t, "alignments (dataset, width)",
                          f"{under} of {slowest.size} alignments under 60 s in every repeat (slowest repeat "
                          f"{slowest.max():.2f} s)")


#: how claims.worst ranks the parts of a timing claim, for the units column
_WORST_BY = " by verdict, then by the end of its interval nearest the threshold, not by its median"


def _time_grows_with_width(summary: Mapping[str, Any], experiment: str) -> Evidence:
    t = threshold("vi_alignment_timings.time_grows_with_width")
    _check_summary_keys(summary, ("widths", "table"), experiment)
    evs, parts = [], []
    for ds in summary["table"]:
        r = _repeats_of(summary, ds, "w2_cpu_seconds")
        if r is None:
            return not_tested(t, _NO_REPEATS.format(n=summary.get("repeats", "?")))
        if r.shape[0] < 2:
            return not_tested(t, f"{ds}: one width; growth needs two")
        evs += [_ratio_evidence(r[i + 1], r[i], t) for i in range(r.shape[0] - 1)]
        parts.append(f"{ds}: " + ", ".join(f"{np.median(x):.3f} [{x.min():.3f}-{x.max():.3f}]" for x in r)
                     + " s CPU")
    w = worst(evs)
    return one_run(Evidence(w.effect, w.low, w.high, t, f"{r.shape[1]} repeats per width (worst of {len(evs)} "
                            f"doublings{_WORST_BY}; {_REPEATS_OF_ONE_PAIR})",
                            "median [min-max] per width: " + "; ".join(parts)))


def _vi_costlier(summary: Mapping[str, Any], experiment: str) -> Evidence:
    t = threshold("vi_alignment_timings.vi_costlier_than_weight_matching")
    _check_summary_keys(summary, ("widths", "table"), experiment)
    evs, parts = [], []
    for ds, cols in summary["table"].items():
        w2, wm = _repeats_of(summary, ds, "w2_cpu_seconds"), _repeats_of(summary, ds, "wm_cpu_seconds")
        if w2 is None or wm is None:
            return not_tested(t, _NO_REPEATS.format(n=summary.get("repeats", "?")))
        i, widest = _widest(summary, ds)
        evs.append(_ratio_evidence(w2[i], wm[i], t))
        parts.append(f"{ds} width {widest}: {np.median(w2[i]):.3f} vs {np.median(wm[i]):.3f} s "
                     f"CPU (medians; {evs[-1].effect:.2f}x, repeats allow {evs[-1].low:.2f}-{evs[-1].high:.2f}x)")
    w = worst(evs)
    return one_run(Evidence(w.effect, w.low, w.high, t, f"{w2.shape[1]} repeats each (worst of {len(evs)} datasets"
                            f"{_WORST_BY}; {_REPEATS_OF_ONE_PAIR})", "; ".join(parts)))


#: App. C's timing statements, each with its source, the paper's words and its check: the MLP's
#: timings (vi_alignment_timings) and ResNet20's (vi_alignment_resnet20_timings, gated on networks
#: that learned, since the paper times trained solutions) are judged by the same checks on the same
#: thresholds. The growth with the width is our reading of what Fig. A2 plots: App. C states no trend.
_TIMING_CLAIMS = (
    ("within_a_minute", _APPC, '"in the majority of cases, the algorithm completes within a minute"',
     _within_a_minute),
    ("time_grows_with_width", f"ours, after {_APPC}",
     '"In Fig. A2 we show the results for MLP and ResNet20 architectures, varying the model width" (App. C states '
     "no trend); our reading of what Fig. A2 plots, not a sentence of the paper: the alignment time grows with the "
     "width", _time_grows_with_width),
    ("vi_costlier_than_weight_matching", _APPC,
     '"in case of variational inference (VI) solving our distribution alignment problem for wide neural networks is '
     'more computationally demanding compared to merely matching weights from stochastic gradient descent (SGD) '
     'solutions" (our stand-in for the SGD weights: matching the VI means)', _vi_costlier),
)


def _resnet_timing(check, name: str):
    def judged(summary: Mapping[str, Any]) -> Evidence:
        t = threshold(f"vi_alignment_timings.{name}")
        return (_resnet_gate(summary, t, "timing their alignment does not time the paper's trained solutions")
                or check(summary, "vi_alignment_resnet20_timings"))
    return judged


for _name, _source, _statement, _check in _TIMING_CLAIMS:
    claim("vi_alignment_timings", _name, _source, _statement)(
        functools.partial(_check, experiment="vi_alignment_timings"))
    claim("vi_alignment_resnet20_timings", _name, _source, _statement)(_resnet_timing(_check, _name))


# What the reduced paper-scale run found (chapters 07 and 08 show the numbers): registered so
# that tests/experiments/test_claims.py accepts exactly these verdicts on the saved files.
_REDUCED = "paper-4widths-16samples"
_ONE_PAIR = ("the saved run has one VI posterior pair per width (align_pairs=1, to fit in an hour on two CPU cores; "
             "the paper profile's run, on a GPU, has 3), so the interval over pairs is unbounded: ")
difference("vi_alignment", _REDUCED, "alignment_lowers_every_barrier",
           _ONE_PAIR + "alignment lowers every one of the 16 barriers (by 1.5 to 2.3 nats), same direction as "
           "the paper, not significant by our rule", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", _REDUCED, "alignment_removes_barrier_mnist",
           _ONE_PAIR + "at width 1,024 alignment removes 98% of the MNIST barrier (train and test), same direction "
           "as the paper, not significant by our rule", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", _REDUCED, "alignment_removes_barrier_fashion_mnist",
           _ONE_PAIR + "at width 1,024 alignment removes 94% of the Fashion-MNIST barrier (train and test), same "
           "direction as the paper, not significant by our rule", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", _REDUCED, "barrier_falls_with_width_mnist",
           "at our paper profile's widths (the paper states 512 only, App. B, Table 2) and 100 epochs on 50,000 "
           "images the aligned barrier falls with width (train "
           "0.061, 0.050, 0.031, 0.042 nats at widths 128 to 1,024), but the naive one grows (train 1.78, 1.84, "
           "1.97, 2.37; slope +0.19 nats per doubling), so 'with and without alignment' does not hold; our "
           "posteriors have a tenth of the paper's training steps. With one pair per width the slope's interval is "
           "unbounded: opposite direction, not significant (the 3-pair paper profile's run differs)",
           verdict=Verdict.OPPOSITE_DIRECTION)
difference("vi_alignment", _REDUCED, "barrier_falls_with_width_fashion_mnist",
           "the aligned barrier falls from width 128 to 512 (train 0.110, 0.075, 0.044 nats) and rises at 1,024 "
           "(0.128), and the naive one grows at every doubling (1.65, 1.71, 1.74, 2.08), so the naive trend is "
           "positive; with a tenth of the paper's training steps the widest posteriors fit worst, the likely reason. "
           "With one pair per width the slope's interval is unbounded: opposite direction, not significant",
           verdict=Verdict.OPPOSITE_DIRECTION)
# The paper profile's run (3 pairs per width, 128 samples on 10,000 images; an H100, 2026-11-26):
# the three alignment claims hold; the width claims differ on the naive barrier.
_PAPER_WIDTH = ("with 3 independent pairs per width at our paper profile's widths 128 to 1,024 (the paper states "
                "one width, 512: App. B, Table 2) and 100 epochs, the naive barrier grows with the width, by more "
                "than the series of pairs differ (chapter 07 gives each slope and its interval), so 'with and "
                "without alignment' does not hold; ")
difference("vi_alignment", "paper", "barrier_falls_with_width_mnist",
           _PAPER_WIDTH + "the aligned barrier falls at every doubling, an interval below zero; the paper's MNIST "
           "column trains for 1,000 epochs (as extracted), ten times ours, and two of our pairs trained that long "
           "narrow the naive width gap without closing it (paper-1000epochs-2pairs)")
difference("vi_alignment", "paper", "barrier_falls_with_width_fashion_mnist",
           _PAPER_WIDTH + "the aligned barrier falls from width 128 to 512 and rises at 1,024, a negative slope whose "
           "interval includes zero; the paper trains ten times longer (as extracted), and two of our pairs trained "
           "that long narrow the naive width gap without closing it (paper-1000epochs-2pairs)")
# The paper's 1,000 epochs (an H100, 2026-11-26, scripts/gpu_vi_epochs.py): pairs 0 and 1 of the
# paper profile, at its narrowest and widest widths, trained ten times longer.
_LONG = "paper-1000epochs-2pairs"
_TWO_PAIRS = ("the run trains pairs 0 and 1 of the paper profile for the paper's 1,000 epochs at widths 128 and "
              "1,024 only (the GPU time of one session), so its intervals over 2 pairs have one degree of freedom: ")
difference("vi_alignment", _LONG, "alignment_lowers_every_barrier",
           _TWO_PAIRS + "alignment lowers all 8 mean barriers, by 1.7 nats or more, in the paper's direction; "
           "not significant by our rule with two pairs (the 3-pair paper profile's run holds)",
           verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", _LONG, "barrier_falls_with_width_mnist",
           _TWO_PAIRS + "ten times the training lowers the naive barrier at width 1,024 in both pairs and narrows its "
           "gap to width 128, but the naive barrier still grows with the width (train 1.84 -> 2.29 nats, +0.15 per "
           "doubling); the aligned one falls (0.092 -> 0.029). Over 2 pairs the slope's interval reaches below "
           "zero: opposite direction, not significant", verdict=Verdict.OPPOSITE_DIRECTION)
difference("vi_alignment", _LONG, "barrier_falls_with_width_fashion_mnist",
           _TWO_PAIRS + "ten times the training lowers the naive barrier at width 1,024 in both pairs and narrows its "
           "gap to width 128, but the naive barrier still grows with the width (train 1.58 -> 1.85 nats, +0.09 per "
           "doubling); the aligned one falls (0.248 -> 0.090). Over 2 pairs the slope's interval reaches below "
           "zero: opposite direction, not significant", verdict=Verdict.OPPOSITE_DIRECTION)
# The absolute reading of '(nearly) zero' (vi_alignment.aligned_barrier_nearly_zero, read after
# seeing these runs): MNIST's aligned barrier at width 1,024 is under it, Fashion-MNIST's is not.
for _label, _n in ((_REDUCED, "one pair"), (_LONG, "two pairs")):
    difference("vi_alignment", _label, "aligned_barrier_nearly_zero_mnist",
               f"the aligned MNIST barrier at width 1,024 is below the registered 'nearly zero' in nats, the paper's "
               f"direction, but an interval over {_n} is too wide to say so: same direction, not significant",
               verdict=Verdict.SAME_DIRECTION)
    difference("vi_alignment", _label, "aligned_barrier_nearly_zero_fashion_mnist",
               f"the aligned Fashion-MNIST barrier at width 1,024 is above the registered 'nearly zero' in nats, and "
               f"an interval over {_n} cannot tell it from it: opposite direction, not significant",
               verdict=Verdict.OPPOSITE_DIRECTION)
difference("vi_alignment", "paper", "aligned_barrier_nearly_zero_fashion_mnist",
           "with 3 pairs the aligned Fashion-MNIST barrier at width 1,024 is about twice the registered 'nearly zero' "
           "(0.05 nats) and its interval over the pairs reaches just below it: opposite direction, not significant; "
           "alignment still removes most of the naive barrier (alignment_removes_barrier_fashion_mnist holds)",
           verdict=Verdict.OPPOSITE_DIRECTION)

# The timings of that run (re-run on 2026-11-26 with every repeat kept) test all three timing
# claims: within_a_minute holds over the 8 alignments; the two ratios time one pair per width,
# so their repeats are no interval over pairs and the verdicts are capped (one_run).
_ONE_PAIR_TIMED = ("the run times one posterior pair per dataset and width, 5 repeats each, and repeats of one "
                   "pair's timing are not independent pairs, so the verdict is at most 'same / opposite direction, "
                   "not significant': ")
difference("vi_alignment_timings", _REDUCED, "time_grows_with_width",
           _ONE_PAIR_TIMED + "the median CPU time of alignment grows at every doubling of the width, beyond the "
           "repeats' range (the doubling least favourable to the claim: 5.03x, the repeats allow 2.88-7.28x), the "
           "direction we read in Fig. A2: same direction, not significant", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment_timings", _REDUCED, "vi_costlier_than_weight_matching",
           _ONE_PAIR_TIMED + "at width 1,024 aligning the posteriors took 0.72x (MNIST) and 0.85x (Fashion-MNIST) of "
           "the CPU time of matching their means (medians of 5 repeats; the repeats allow 0.69-0.76x and "
           "0.85-0.90x): in symlib both are the same coordinate-ascent sweeps over the layers' assignment problems "
           "(the Wasserstein cost adds the standard deviations' term), and alignment took as many sweeps or fewer "
           "(MNIST 29 against 34, Fashion-MNIST 18 against 18) and less CPU time per sweep; the paper's Fig. A2 "
           "times its own implementation and gives no cost per sweep: opposite direction, not significant",
           verdict=Verdict.OPPOSITE_DIRECTION)

# What the quick profile finds (chapter 07 shows the numbers; the runs are seeded, so these
# verdicts are reproducible; the timing claims are not, see TIMING_CLAIMS_MACHINE_DEPENDENT).
_QUICK_WIDTH = ("3 independent pairs per width at widths 32, 64, 128 (20 epochs on 4,500 images): the aligned barrier "
                "falls clearly with width, but the naive one falls by less than the pairs differ (the claims table "
                "gives the slope per doubling and its interval over the 3 series; ")
difference("vi_alignment", "quick", "barrier_falls_with_width_mnist",
           _QUICK_WIDTH + "MNIST), so 'with and without alignment' is in the paper's direction but not significant; "
           "more pairs or wider, better-trained networks would be needed", verdict=Verdict.SAME_DIRECTION)
difference("vi_alignment", "quick", "barrier_falls_with_width_fashion_mnist",
           _QUICK_WIDTH + "Fashion-MNIST), so 'with and without alignment' is in the paper's direction but not "
           "significant", verdict=Verdict.SAME_DIRECTION)
for _ds in ("mnist", "fashion_mnist"):
    difference("vi_alignment", "quick", f"aligned_barrier_nearly_zero_{_ds}",
               "at the quick profile's widest width alignment removes most of the naive barrier, but what is left is "
               "several times the registered 'nearly zero' in nats, over every pair (the claims table gives it): "
               "small, under-trained posteriors keep a barrier")
difference("vi_alignment_robustness", "quick", "removes_barrier_every_setting",
           "at width 64 on MNIST (20 epochs on 4,500 images, 3 pairs per setting) alignment removes about half of "
           "the barrier in every setting, the paper's own setting included (chapter 07 "
           "tabulates the shares): the settings agree with each other, as the paper says, but at this width and "
           "training no setting reaches the 'nearly zero' of the paper; the least share's interval over the 3 pairs "
           "spans one half: opposite direction, not significant", verdict=Verdict.OPPOSITE_DIRECTION)

#: Timing claims whose quick-profile verdict depends on the machine and its load: at the
#: quick widths an alignment takes tens of milliseconds, and which side of one the median
#: ratio lies changes between executions. Judged within one run (one pair timed per width),
#: their verdict is "same direction" or "opposite direction, not significant", never "holds" or
#: "differs". Chapter 08 shows and glues them, and asserts the others.
TIMING_CLAIMS_MACHINE_DEPENDENT = ("time_grows_with_width", "vi_costlier_than_weight_matching")
difference("vi_alignment_resnet20", "quick", "alignment_lowers_every_barrier",
           "the quick stand-in (Fashion-MNIST, width 1, 256 images x 2 epochs, one pair) trains two ResNet20 "
           "posteriors that stay at chance (the chapter prints their test accuracy), so their barrier is noise: not tested; the "
           "claim needs the paper profile (CIFAR-10, 100 epochs, a GPU)", verdict=Verdict.NOT_TESTED)
difference("vi_alignment_resnet20", "quick", "wider_lower_only_after_alignment",
           "the quick stand-in runs one width (1) with networks at chance, so there is no width trend to judge: not "
           "tested; the claim needs the paper profile's widths 1, 2, 4, 8 on CIFAR-10", verdict=Verdict.NOT_TESTED)
