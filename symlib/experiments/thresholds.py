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


# ---------------------------------------------------------------------------- end of Rossi et al.


# ============================================================================ Laurent et al. (2024)
# (claims in symlib/experiments/laurent.py, posteriors.py, optunet.py)


# ---------------------------------------------------------------------------- end of Laurent et al.
