"""The one registry of the thresholds that turn the papers' words into verdicts.

Every registered claim (:mod:`symlib.experiments.claims`) judges its effect size against a
:class:`Threshold` read from :data:`THRESHOLDS` (``tests/test_claims.py`` checks that each
outcome's threshold *is* the registered object). A threshold quotes the paper's words, says
how we read them and why, and records when it was set: a threshold set after seeing our
numbers says so.

Direction: ``"above"`` means the paper's claim is ``effect > value``, ``"below"`` means
``effect < value``. The verdict (:class:`symlib.experiments.claims.Verdict`) is *holds* when
the whole interval of the effect over the independent units lies on the paper's side,
*same direction, not significant* when only the estimate does, *differs* when the estimate
does not, and *not tested* when the summary cannot test the claim.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Threshold", "THRESHOLDS", "threshold", "define"]


@dataclass(frozen=True)
class Threshold:
    """A claim's threshold on its effect size.

    Attributes:
        key: the registry key (``"<experiment>.<claim>"`` or a shared name).
        value: the boundary.
        direction: ``"above"`` (the claim is ``effect > value``) or ``"below"``.
        quote: the paper's words that the threshold reads.
        reading: how we read them, and why this value.
        set_on: when the value was set (date, and before or after which run).
        level: confidence level of the effect's interval.
    """

    key: str
    value: float
    direction: Literal["above", "below"]
    quote: str
    reading: str
    set_on: str
    level: float = 0.95

    def beyond(self, x: float) -> bool:
        """Whether ``x`` lies strictly on the paper's side of the boundary."""
        return bool(x > self.value) if self.direction == "above" else bool(x < self.value)

    def describe(self) -> str:
        """``"> 0.5"`` or ``"< 0.1"``."""
        return f"{'>' if self.direction == 'above' else '<'} {self.value:g}"


#: key -> threshold; filled below, one section per paper
THRESHOLDS: dict[str, Threshold] = {}


def define(key: str, value: float, direction: Literal["above", "below"], quote: str, reading: str, set_on: str,
           level: float = 0.95) -> Threshold:
    """Register a threshold (only this module calls it).

    Raises:
        ValueError: for a key registered twice, a bad direction or level, or empty text.
    """
    if key in THRESHOLDS:
        raise ValueError(f"threshold {key!r} is registered already")
    if direction not in ("above", "below"):
        raise ValueError(f"threshold {key!r}: direction must be 'above' or 'below', got {direction!r}")
    if not 0 < level < 1:
        raise ValueError(f"threshold {key!r}: level must be in (0, 1), got {level}")
    if not (quote.strip() and reading.strip() and set_on.strip()):
        raise ValueError(f"threshold {key!r} needs the paper's words, our reading and when it was set")
    THRESHOLDS[key] = t = Threshold(key, float(value), direction, quote.strip(), reading.strip(), set_on.strip(),
                                    level)
    return t


def threshold(key: str) -> Threshold:
    """The registered threshold ``key``.

    Raises:
        KeyError: naming the key and the registered ones.
    """
    try:
        return THRESHOLDS[key]
    except KeyError:
        raise KeyError(f"no threshold {key!r} in symlib.experiments.thresholds (registered: "
                       f"{', '.join(sorted(THRESHOLDS)) or 'none'})") from None


# ============================================================================ shared readings

define("exact_zero", 1e-9, "below",
       "the function is unchanged (the symmetries leave it invariant)",
       "the largest change of any logit over all networks and test inputs, in float64; rounding alone stays "
       "far below 1e-9, so this is a worst case over every unit, not an estimate",
       "2026-11-22, before any run")


# ============================================================================ Xiao et al. (2023)
# (claims in symlib/experiments/xiao.py)


# ---------------------------------------------------------------------------- end of Xiao et al.


# ============================================================================ Rossi et al. (2023)
# (claims in symlib/experiments/rossi.py)
# Rossi et al. give their barriers and timings as figures without numbers, so the readings
# are qualitative. The values below are those of the boolean checks registered on
# 2026-11-23 before any run; on 2026-11-25 they became thresholds on effects with
# intervals over independent posterior pairs (or repeated timings), which changed the
# units, not the values.

define("vi_alignment.alignment_lowers_every_barrier", 0.0, "above",
       "Loss barriers always appear between two solutions in the standard VI approach; with alignment we can find "
       "solutions with zero loss barrier for MLPs and nearly-zero loss barrier for ResNet20 (poster; Sec. 5.1)",
       "effect: the naive minus the aligned marginalised barrier (nats), the mean over independent posterior pairs "
       "with its Student-t interval, in the worst (dataset, width, split) cell; above 0 means alignment lowers "
       "the barrier (and, since a barrier is never negative, that the naive barrier is positive)",
       "2026-11-23, before any run (as 'naive > 0 and aligned < naive'); an interval over pairs since 2026-11-25")

define("vi_alignment.alignment_removes_barrier", 0.5, "above",
       "after alignment the barrier is (nearly) zero for MLPs (Sec. 5.1; poster: 'zero loss barrier')",
       "effect: the share of the naive barrier that alignment removes, 1 - aligned / naive, at the widest width, "
       "the mean over independent posterior pairs with its Student-t interval, the worse of train and test; "
       "'(nearly) zero' read as in chapter 02 for Xiao et al.: at least half of the barrier removed",
       "2026-11-23, before any run; an interval over pairs since 2026-11-25")

define("vi_alignment.barrier_falls_with_width", 0.0, "below",
       "wider models generally provide lower barriers: for MLPs this holds true with and without alignment (Sec. 5.1)",
       "effect: the least-squares slope of the barrier against log2(width) (nats per doubling) of each series of "
       "independent pairs (pair k at every width; series share no network), the mean over series with its "
       "Student-t interval, the worst of train/test x naive/aligned; 'generally' read as a negative trend, "
       "not a fall at every doubling",
       "2026-11-23, before any run (as 'widest below narrowest and slope < 0'); a slope per series with an "
       "interval since 2026-11-25")

define("vi_alignment_resnet20.wider_lower_only_after_alignment", 0.0, "below",
       "for ResNet20, wider models have lower barriers only after alignment (Sec. 5.1; unlike MLPs, where it holds "
       "with and without alignment)",
       "two effects, each the mean over series of independent pairs of a least-squares slope against log2(width) "
       "(nats per doubling), judged together (the worse verdict): the aligned barrier's slope is below 0 (wider "
       "is lower after alignment) and the aligned minus the naive slope is below 0 (alignment makes width help "
       "more than it does naively); a naive trend that cannot be told from zero is the 'only'",
       "2026-11-25, before any ResNet20 run with more than one width")

define("vi_alignment_robustness.removes_barrier_every_setting", 0.5, "above",
       "the results hold for different prior variances and temperatures (Rossi et al. 2023, as summarised in "
       "rossi2023_summary.md; the prior variance 0.0025 appears in App. B, Table 1)",
       "effect: the share of the naive barrier removed by alignment, 1 - aligned / naive, the mean over "
       "independent posterior pairs with its Student-t interval, in the worst (prior variance, temperature, "
       "split) setting; the same reading of 'nearly zero' as vi_alignment.alignment_removes_barrier",
       "2026-11-25, before running the sweep")

define("vi_alignment_timings.within_a_minute", 0.5, "above",
       "in the majority of cases, the algorithm completes within a minute (App. C; 8 x A100 machines)",
       "effect: the share of the (dataset, width) alignments whose slowest repeat takes under 60 s of wall time, "
       "with its exact (Clopper-Pearson) interval over the alignments; 'majority' = more than half",
       "2026-11-23, before any run (as 'more than half under 60 s'); an interval since 2026-11-25")

define("vi_alignment_timings.time_grows_with_width", 1.0, "above",
       "aligning wider networks is more demanding (App. C, Fig. A2 profiles the time against the model width)",
       "effect: the ratio of the median CPU times of alignment at consecutive widths, the smallest over the "
       "doublings and datasets; its interval runs from the fastest repeat at the wider width over the slowest at "
       "the narrower to the reverse, so the claim holds only when the growth exceeds the spread of the repeats",
       "2026-11-23, before any run (as 'strictly increasing'); a ratio with the repeats' spread since 2026-11-25")

define("vi_alignment_timings.vi_costlier_than_weight_matching", 1.0, "above",
       "for wide networks, aligning VI solutions is more computationally demanding compared to merely matching "
       "weights from SGD solutions (App. C)",
       "effect: the median CPU time of Wasserstein alignment over that of weight matching of the VI means (our "
       "stand-in for the paper's SGD weights) at the widest width, the smaller over the datasets; interval from "
       "the repeats' extremes as for time_grows_with_width",
       "2026-11-23, before any run (as 'W2 CPU time > WM CPU time'); a ratio with the repeats' spread since "
       "2026-11-25")


# ---------------------------------------------------------------------------- end of Rossi et al.


# ============================================================================ Laurent et al. (2024)
# (claims in symlib/experiments/laurent.py, posteriors.py, optunet.py)


# ---------------------------------------------------------------------------- end of Laurent et al.
