"""The papers' claims as code, each judged with its uncertainty.

A claim is a function of an experiment's *summary* (the small JSON-able dict that
``SUMMARIES[name]`` makes from an artifact, and that ``python -m symlib run NAME --out``
saves under ``book/results/``). It returns :class:`Evidence`: an effect size, its interval
over the independent units (seeds, network pairs, networks, repeats), the threshold read
from :mod:`symlib.experiments.judging.thresholds`, and a one-line detail with the numbers. The
verdict follows from those (:class:`Verdict`): *holds* only when the whole interval lies on
the paper's side of the threshold, so noise alone, or a single pair of networks, never
gives "holds".

Because claims read summaries, the same check runs on

* the quick-profile result inside a notebook (:func:`evaluate`, :func:`claims_table`), and
* every paper-profile file in ``book/results/`` (``tests/experiments/test_claims.py``),

so a paper-scale run that contradicts a claim fails CI instead of sitting silently beside it.

Claims are registered by the paper modules with :func:`claim`, next to the experiments
they judge; each names its source (paper, section, figure) and states the claim as the
paper does.
"""
from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from symlib.experiments.table import Table
from symlib.experiments.judging.thresholds import Threshold, threshold

Summary = Mapping[str, Any]

__all__ = ["Claim", "ClaimOutcome", "Evidence", "Verdict", "CLAIMS", "DIFFERENCES", "claim", "difference",
           "documented_difference", "evaluate", "unexpected_failures", "check_summary", "claims_table", "exact",
           "one_run", "gated", "mean_of_units", "share_of_units", "not_tested", "interval_evidence", "verdict_counts",
           "worst", "best", "bonferroni_level", "glue_outcomes", "print_differences", "epilogue", "assert_expected"]


class Verdict(str, enum.Enum):
    """A claim's verdict on one summary: the symmetric rule of :attr:`Evidence.verdict`."""

    HOLDS = "holds"
    SAME_DIRECTION = "same direction, not significant"
    OPPOSITE_DIRECTION = "opposite direction, not significant"
    DIFFERS = "differs"
    NOT_TESTED = "not tested"


@dataclass(frozen=True)
class Evidence:
    """What a claim found on one summary.

    Attributes:
        effect: the effect size, in the threshold's units.
        low: lower end of its interval over the independent units (``effect`` for an exact,
            worst-case quantity; ``-inf`` when one unit gives no interval).
        high: upper end.
        threshold: the registered threshold (:data:`symlib.experiments.judging.thresholds.THRESHOLDS`).
        units: what the interval is over, e.g. ``"3 network pairs"`` or ``"all 16 networks
            (worst case)"``.
        detail: the numbers behind the verdict, in one line.
        untested: why the summary cannot test the claim (then the verdict is "not tested").
        one_run: the interval runs over the test points, units or pixels of one run of the
            method (one set of samples, one fit), not over independent runs of it: it says
            nothing of the run-to-run spread, so the verdict is at most "same direction" or
            "opposite direction, not significant" (:func:`one_run`).
    """

    effect: float
    low: float
    high: float
    threshold: Threshold
    units: str
    detail: str
    untested: str | None = None
    one_run: bool = False

    def __post_init__(self):
        if not isinstance(self.threshold, Threshold):
            raise TypeError(f"Evidence needs a registered Threshold, got {type(self.threshold).__name__}")
        if self.untested is None:
            if not math.isfinite(self.effect):
                raise ValueError(f"{self.threshold.key}: the effect is {self.effect} (not finite); "
                                 "say why with not_tested() instead")
            if math.isnan(self.low) or math.isnan(self.high) or not self.low <= self.effect <= self.high:
                raise ValueError(f"{self.threshold.key}: interval [{self.low}, {self.high}] does not contain the "
                                 f"effect {self.effect}")

    @property
    def verdict(self) -> Verdict:
        """The symmetric rule: *holds* when the whole interval lies strictly on the paper's
        side of the threshold, *differs* when it lies strictly on the other side, and in
        between *same direction, not significant* (the estimate on the paper's side) or
        *opposite direction, not significant* (the estimate on the threshold or the other
        side); *not tested* when ``untested`` is set. An interval that touches the threshold
        is in between; an exact value (``low == effect == high``) is judged by itself. Evidence
        from :func:`one_run` is never "holds" or "differs"."""
        if self.untested is not None:
            return Verdict.NOT_TESTED
        t = self.threshold
        near, far = (self.low, self.high) if t.direction == "above" else (self.high, self.low)
        if t.beyond(near) and not self.one_run:
            return Verdict.HOLDS
        if t.opposite(far) and not self.one_run:
            return Verdict.DIFFERS
        return Verdict.SAME_DIRECTION if t.beyond(self.effect) else Verdict.OPPOSITE_DIRECTION

    def interval_text(self) -> str:
        """``"0.41 [0.3, 0.52] over 3 network pairs"``, the exact value with its units,
        ``"0 (no interval) over 3 runs"`` for an infinite interval (one unit, or units that
        tie); for a claim that was not tested ``"not judged: <why>"``, after the effect that
        was measured when a validity gate withheld the verdict (:func:`gated`)."""
        if self.untested is None:
            return self._measured_text()
        if math.isfinite(self.effect):
            return f"{self._measured_text()}, not judged: {self.untested}"
        return f"not judged: {self.untested}"

    def _measured_text(self) -> str:
        if self.low == self.effect == self.high:
            return f"{self.effect:.3g} ({self.units})"
        if math.isinf(self.low) and math.isinf(self.high):
            return f"{self.effect:.3g} (no interval) over {self.units}"
        return f"{self.effect:.3g} [{self.low:.3g}, {self.high:.3g}] over {self.units}"


def one_run(ev: Evidence) -> Evidence:
    """``ev`` marked as judged within one run of the method (its interval over the test
    points, hidden units or pixels of one set of samples or one fit): the verdict is at most
    "same direction" or "opposite direction, not significant", and the units say "one run".

    Args:
        ev: the evidence (a not-tested one is returned as it is).

    Returns:
        The marked evidence.
    """
    if ev.untested is not None:
        return ev
    units = ev.units if "one run" in ev.units else f"{ev.units} (one run)"
    return dataclasses.replace(ev, units=units, one_run=True)


def gated(ev: Evidence, failed: Sequence[str]) -> Evidence:
    """``ev``, or "not tested" when the run failed a validity gate (a sampler that has not
    converged, a miniature outside the paper's regime): the same whichever way the effect
    points, with the gates' reasons; the effect that was not judged is kept, with its
    interval, and shown by :meth:`Evidence.interval_text` and in the detail.

    Args:
        ev: the claim's evidence.
        failed: one sentence per failed gate (empty: the run passed every gate).

    Returns:
        ``ev`` or a not-tested Evidence on the same threshold.
    """
    if not failed or ev.untested is not None:
        return ev
    return dataclasses.replace(ev, untested="; ".join(failed), detail=f"not judged: {ev.interval_text()}; {ev.detail}")


def exact(effect: float, threshold: Threshold, units: str, detail: str) -> Evidence:
    """Evidence from a quantity with no sampling noise at the claim's level: a worst case over
    every unit (largest logit change, smallest share), or a count over all units.

    Args:
        effect: the quantity.
        threshold: the registered threshold.
        units: what it is over, e.g. ``"all 256 networks (worst case)"``.
        detail: the numbers.
    """
    return Evidence(float(effect), float(effect), float(effect), threshold, units, detail)


def interval_evidence(effect: float, low: float, high: float, threshold: Threshold, units: str,
                      detail: str) -> Evidence:
    """Evidence from an effect and an interval computed by the caller (a permutation test's
    bound, a bootstrap over networks, ...).

    An interval of no width (its ends equal up to rounding, relative 1e-12) becomes no
    interval, as tied units do in :func:`mean_of_units`: bootstrap replicates or jackknife
    values that all agree estimate the noise as zero, which is no evidence that it is. An
    exact quantity is :func:`exact`'s.
    """
    low, high = float(low), float(high)
    if math.isfinite(low) and math.isfinite(high) and abs(high - low) <= 1e-12 * max(abs(low), abs(high)):
        low, high = -math.inf, math.inf
        detail = (f"{detail}; " if detail else "") + "the resampled values do not vary: no interval"
    return Evidence(float(effect), low, high, threshold, units, detail)


def mean_of_units(values: Sequence[float], threshold: Threshold, units: str, detail: str) -> Evidence:
    """Evidence from the mean of one value per independent unit, with its Student-t interval
    at the threshold's level (:func:`symlib.evaluation.stats.mean_interval`). Two or more
    units with the same value give no interval (their spread is no estimate of the noise),
    and the detail says so.

    Args:
        values: one value per unit (a network pair, a seed, a network), 1-D.
        threshold: the registered threshold.
        units: the units' name in the plural, e.g. ``"network pairs"``; the count is added.
        detail: the numbers.

    Raises:
        ValueError: for values that are not 1-D, empty or not finite.
    """
    from symlib.evaluation.stats import mean_interval

    v = np.asarray(values, dtype=np.float64)
    m, lo, hi = mean_interval(v, threshold.level)
    if v.size > 1 and not math.isfinite(lo):
        detail = (f"{detail}; " if detail else "") + f"no spread among the {v.size} {units} (all {m:.3g}): no interval"
    return Evidence(m, lo, hi, threshold, f"{v.size} {units}", detail)


def share_of_units(successes: int, trials: int, threshold: Threshold, units: str, detail: str) -> Evidence:
    """Evidence from a share of units with its exact (Clopper-Pearson) interval."""
    from symlib.evaluation.stats import proportion_interval

    share, lo, hi = proportion_interval(successes, trials, threshold.level)
    return Evidence(share, lo, hi, threshold, f"{trials} {units}", detail)


def untrained_limit(lowest: float, classes: int) -> float | None:
    """The accuracy at or below which a ``classes``-way classifier has not learned (the
    registered gate ``gate.untrained_accuracy``, in multiples of chance) when ``lowest`` is at
    or below it (or not a finite number: a gate fails closed), else None."""
    limit = threshold("gate.untrained_accuracy").value / classes
    return limit if not math.isfinite(lowest) or lowest <= limit else None


def not_tested(threshold: Threshold, reason: str, detail: str = "") -> Evidence:
    """Evidence for a summary that cannot test the claim (too few units, a failed validity
    check such as a sampler that did not reach a known posterior), with the reason."""
    if not reason.strip():
        raise ValueError("not_tested needs the reason")
    return Evidence(float("nan"), float("nan"), float("nan"), threshold, "", detail or reason, untested=reason)


Check = Callable[[Summary], Evidence]


@dataclass(frozen=True)
class Claim:
    """One claim of a paper about one experiment.

    Attributes:
        experiment: the registered experiment whose summary it reads.
        name: short identifier, unique per experiment.
        source: where the paper says it (e.g. ``"Xiao et al. (2023), Fig. 1"``).
        statement: the claim as the paper states it.
        check: ``summary -> Evidence``.
    """

    experiment: str
    name: str
    source: str
    statement: str
    check: Check


@dataclass(frozen=True)
class ClaimOutcome:
    """A claim evaluated on one summary.

    Attributes:
        claim: the claim.
        evidence: what its check returned.
    """

    claim: Claim
    evidence: Evidence

    @property
    def verdict(self) -> Verdict:
        """The verdict (:attr:`Evidence.verdict`)."""
        return self.evidence.verdict

    @property
    def holds(self) -> bool:
        """Whether the verdict is "holds"."""
        return self.verdict is Verdict.HOLDS

    @property
    def detail(self) -> str:
        """The numbers behind the verdict."""
        return self.evidence.detail


#: experiment name -> its claims, in registration order
CLAIMS: dict[str, list[Claim]] = {}

#: (experiment, profile label, claim name) -> (the verdict found, why): runs of that profile on
#: which the claim does not hold, a finding documented in the claim's chapter (:func:`difference`)
DIFFERENCES: dict[tuple[str, str, str], tuple[Verdict, str]] = {}


def claim(experiment: str, name: str, source: str, statement: str) -> Callable[[Check], Check]:
    """Register the decorated ``check(summary) -> Evidence`` as a claim.

    Args:
        experiment: the experiment whose summary the check reads.
        name: short identifier, unique per experiment.
        source: paper, section and figure or table.
        statement: the claim as the paper states it.

    Returns:
        The decorator (it returns the check unchanged).

    Raises:
        ValueError: if ``experiment`` already has a claim called ``name``.
    """

    def register(check: Check) -> Check:
        existing = CLAIMS.setdefault(experiment, [])
        if any(c.name == name for c in existing):
            raise ValueError(f"experiment {experiment!r} already has a claim named {name!r}")
        existing.append(Claim(experiment, name, source, statement, check))
        return check

    return register


def difference(experiment: str, profile: str, name: str, why: str, verdict: Verdict = Verdict.DIFFERS) -> None:
    """Record that claim ``name`` does not hold on the runs of profile ``profile`` (a saved
    ``<experiment>-<profile>.json``, or ``"quick"`` for the book's quick profile).

    A run that does not reproduce a claim is a result, not a defect; it is kept with the
    claim still stated as the paper states it. Registering the difference (the verdict
    found, and the numbers and the reason in a sentence, also said in the chapter) is what
    lets the tests and notebooks accept it: they require the claims that do not hold on a
    run to be exactly the registered differences for its profile, with the registered
    verdict, so a difference that goes away, or a new one, fails CI.

    Args:
        experiment: the experiment.
        profile: the run's profile label (``"quick"``, ``"paper"``, ``"paper-16nets"``, ...).
        name: the claim's name (registered with :func:`claim` before this call).
        why: one or two sentences: what we found and why it may differ from the paper.
        verdict: the verdict found (anything but "holds").

    Raises:
        ValueError: for an unknown claim, an empty reason, a "holds" verdict or a difference
            registered twice.
    """
    if not any(c.name == name for c in CLAIMS.get(experiment, [])):
        raise ValueError(f"experiment {experiment!r} has no claim named {name!r}")
    if not why.strip():
        raise ValueError("a documented difference needs its reason")
    if Verdict(verdict) is Verdict.HOLDS:
        raise ValueError("a documented difference cannot have the verdict 'holds'")
    key = (experiment, profile, name)
    if key in DIFFERENCES:
        raise ValueError(f"difference {key} is registered already")
    DIFFERENCES[key] = (Verdict(verdict), why.strip())


def documented_difference(experiment: str, profile: str, name: str) -> str | None:
    """The reason registered with :func:`difference`, or None.

    Args:
        experiment: the experiment.
        profile: the run's profile label.
        name: the claim's name.

    Returns:
        The reason, or None when the claim is expected to hold for that run.
    """
    entry = DIFFERENCES.get((experiment, profile, name))
    return entry[1] if entry else None


_RANK = {Verdict.DIFFERS: 0, Verdict.OPPOSITE_DIRECTION: 1, Verdict.SAME_DIRECTION: 2, Verdict.HOLDS: 3}


def worst(evidence: Sequence[Evidence]) -> Evidence:
    """The least favourable of several Evidence judged on one threshold.

    For a claim judged as "every part must hold": a part that differs comes first (one
    contradicted part refutes the whole, whatever a part that could not be judged would have
    shown); then a not-tested one; otherwise the worst verdict, and within it the interval end
    nearest the threshold.

    Args:
        evidence: one or more Evidence on the same threshold.

    Returns:
        One element of ``evidence``.
    """
    tested = [e for e in evidence if e.untested is None]
    differs = [e for e in tested if e.verdict is Verdict.DIFFERS]
    if differs:
        return min(differs, key=_order)
    if len(tested) < len(evidence):
        return next(e for e in evidence if e.untested is not None)
    return min(evidence, key=_order)


def best(evidence: Sequence[Evidence]) -> Evidence:
    """The most favourable of several Evidence judged on one threshold, for a claim judged as
    "some part holds" (the dual of :func:`worst`): it holds when one part holds and differs
    only when every part differs. Not-tested parts are left out unless every part is.

    With ``k`` parts, each judged at the threshold's level, some part would hold by chance up
    to ``k`` times as often as one claim does; so the caller computes every part's interval at
    :func:`bonferroni_level` ``(threshold.level, k)`` (Bonferroni), which keeps the chance of
    a false "holds" at most that of one claim at the threshold's level. :func:`worst` needs no
    such correction (every part must hold).

    Args:
        evidence: one or more Evidence on the same threshold, their intervals at
            ``bonferroni_level(threshold.level, len(evidence))``.

    Returns:
        One element of ``evidence``.
    """
    tested = [e for e in evidence if e.untested is None]
    return max(tested, key=_order) if tested else evidence[0]


def bonferroni_level(level: float, parts: int) -> float:
    """The confidence level of each of ``parts`` intervals whose union must keep the error
    rate of one interval at ``level``: ``1 - (1 - level) / parts`` (for :func:`best`).

    Args:
        level: the family's confidence level, in (0, 1).
        parts: the number of parts, at least 1.

    Raises:
        ValueError: for a level outside (0, 1) or fewer than one part.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"bonferroni_level: level must be in (0, 1), got {level}")
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"bonferroni_level: parts must be an integer >= 1, got {parts!r}")
    return 1.0 - (1.0 - level) / parts


def _order(e: Evidence) -> tuple[int, float, float]:
    """Sort key from least to most favourable: the verdict, then (for a verdict on the paper's
    side or in between) the interval end nearest the threshold, else the signed effect."""
    up = e.threshold.direction == "above"
    near = e.low if up else -e.high
    signed = e.effect if up else -e.effect
    rank = _RANK[e.verdict]
    return (rank, near, signed) if rank else (0, signed, signed)


def glue_outcomes(outcomes: Sequence[ClaimOutcome], prefix: str, glue) -> None:
    """Glue each outcome's verdict as ``{prefix}_v_{claim}`` and its interval (or "not tested")
    as ``{prefix}_e_{claim}``; ``glue`` is myst-nb's, passed in so the library needs no book extra."""
    for o in outcomes:
        glue(f"{prefix}_v_{o.claim.name}", o.verdict.value, display=False)
        glue(f"{prefix}_e_{o.claim.name}", o.evidence.interval_text(), display=False)


def print_differences(outcomes: Sequence[ClaimOutcome], profile: str) -> None:
    """Print the registered reason of every outcome that has one for ``profile``."""
    for o in outcomes:
        why = documented_difference(o.claim.experiment, profile, o.claim.name)
        if why:
            print(f"{o.claim.experiment}.{o.claim.name} ({o.verdict.value}): {why}")


def epilogue(outcomes: Sequence[ClaimOutcome], profile: str, *, prefix: str, glue, scale: str | None = None,
             display=None) -> None:
    """A chapter's claims in one call: their table (:func:`claims_table`, displayed), each
    outcome glued (:func:`glue_outcomes`: ``{prefix}_v_{claim}`` and ``{prefix}_e_{claim}``) and
    the registered reason of every documented difference printed (:func:`print_differences`).
    The chapter then checks the verdicts in a cell of its own (:func:`assert_expected`).

    Args:
        outcomes: from :func:`evaluate`.
        profile: the profile label of the run they were evaluated on.
        prefix: the chapter's glue prefix (``"ch13"``).
        glue: myst-nb's ``glue`` (passed in so the library needs no book extra).
        scale: the run's scale label for the table's header (:func:`claims_table`).
        display: the function that shows the table (default: IPython's ``display``).
    """
    if display is None:
        from IPython.display import display
    display(claims_table(outcomes, profile, scale=scale))
    glue_outcomes(outcomes, prefix, glue)
    print_differences(outcomes, profile)


def unexpected_failures(outcomes: Sequence[ClaimOutcome], profile: str) -> list[ClaimOutcome]:
    """The outcomes whose verdict is not the one expected for ``profile``: "holds", or the
    verdict of the difference registered for that profile (:func:`difference`).

    A notebook asserts that this is empty; so does ``tests/experiments/test_claims.py`` for every saved
    run. A registered difference that now holds is unexpected too (its text is stale).

    Args:
        outcomes: from :func:`evaluate`.
        profile: the profile label of the run they were evaluated on.

    Returns:
        The unexpected outcomes.
    """
    out = []
    for o in outcomes:
        entry = DIFFERENCES.get((o.claim.experiment, profile, o.claim.name))
        expected = entry[0] if entry else Verdict.HOLDS
        if o.verdict is not expected:
            out.append(o)
    return out


def assert_expected(outcomes: Sequence[ClaimOutcome], profile: str, what: str, *,
                    saved: Sequence[tuple[str, Sequence[ClaimOutcome]]] = (), qualified: bool = False) -> None:
    """A chapter's check of its claims, in one call: every outcome has the verdict expected for
    ``profile`` (:func:`unexpected_failures`), and so has every outcome of each saved run in
    ``saved`` (``(profile label, outcomes)`` pairs); then one line names every claim of
    ``outcomes`` and its verdict (``experiment.claim`` with ``qualified``).

    Args:
        outcomes: from :func:`evaluate`, on the run of ``profile``.
        profile: that run's profile label.
        what: whose claims, for the printed line (``"Laurent et al."``).
        saved: the saved runs' outcomes, each with its profile label.
        qualified: name each claim with its experiment.

    Raises:
        AssertionError: naming every unexpected outcome (run, claim, verdict and detail), so that
            a result that changes class fails the chapter.
    """
    unexpected = [(label, o.claim.name, o.verdict.value, o.detail)
                  for label, found in ((profile, outcomes), *saved) for o in unexpected_failures(found, label)]
    if unexpected:
        raise AssertionError(f"claims whose verdict is not the registered one: {unexpected}")
    print(f"{len(outcomes)} claim(s) of {what} have their expected verdicts: " + ", ".join(
        f"{o.claim.experiment + '.' if qualified else ''}{o.claim.name} ({o.verdict.value})" for o in outcomes))


def evaluate(experiment: str, summary: Summary) -> list[ClaimOutcome]:
    """Every claim registered for ``experiment``, evaluated on ``summary``.

    Args:
        experiment: the experiment name.
        summary: its summary (from ``SUMMARIES[experiment]`` or a ``book/results`` file).

    Returns:
        One :class:`ClaimOutcome` per claim (an empty list if it has none).

    Raises:
        TypeError: if a check returns anything but :class:`Evidence`.
    """
    outcomes = []
    for c in CLAIMS.get(experiment, []):
        ev = c.check(summary)
        if not isinstance(ev, Evidence):
            raise TypeError(f"claim {experiment}.{c.name} returned {type(ev).__name__}, not Evidence")
        outcomes.append(ClaimOutcome(c, ev))
    return outcomes


def verdict_counts(outcomes: Sequence[ClaimOutcome]) -> dict[str, int]:
    """Number of outcomes per verdict (every verdict listed, in :class:`Verdict` order)."""
    return {v.value: sum(o.verdict is v for o in outcomes) for v in Verdict}


def claims_table(outcomes: Sequence[ClaimOutcome], profile_name: str, scale: str | None = None) -> Table:
    """The outcomes as a table: source, the paper's statement, ours (numbers), the effect with
    its interval against the threshold, and the verdict.

    Args:
        outcomes: from :func:`evaluate`.
        profile_name: the profile that produced the summary (named in the header).
        scale: the run's scale label (e.g. ``"quick miniature"``), named in the header.

    Returns:
        A :class:`~symlib.experiments.report.Table`.
    """
    def verdict(o: ClaimOutcome) -> str:
        v = o.verdict.value
        if o.verdict is not Verdict.HOLDS and documented_difference(o.claim.experiment, profile_name, o.claim.name):
            v += " (documented: see the chapter)"
        if o.evidence.threshold.read_after_data:
            v += " (threshold read after seeing the data)"
        return v

    def effect(o: ClaimOutcome) -> str:
        ev = o.evidence
        if ev.untested is not None:
            return f"not tested: {ev.untested}"
        return f"{ev.interval_text()}; needs {ev.threshold.describe()}"

    where = f"{profile_name} profile" + (f", {scale}" if scale else "")
    return Table(["source", "the paper says", f"ours ({where})", "effect [interval] vs threshold", "verdict"],
                 [(o.claim.source, o.claim.statement, o.detail, effect(o), verdict(o)) for o in outcomes])


def check_summary(experiment: str, summary: Summary, profile: str = "quick") -> list[ClaimOutcome]:
    """Evaluate the claims of ``experiment`` on ``summary`` and raise on any unexpected verdict.

    Args:
        experiment: the experiment name.
        summary: its summary.
        profile: the run's profile label (its registered differences are expected).

    Returns:
        The outcomes.

    Raises:
        AssertionError: listing every claim whose verdict is not the expected one, with its
            numbers.
        ValueError: if the experiment has no registered claims.
    """
    outcomes = evaluate(experiment, summary)
    if not outcomes:
        raise ValueError(f"experiment {experiment!r} has no registered claims")
    failed = unexpected_failures(outcomes, profile)
    if failed:
        lines = "\n".join(f"- {o.claim.source}: {o.claim.statement} -> {o.verdict.value}; ours: {o.detail}"
                          for o in failed)
        raise AssertionError(f"{len(failed)} claim(s) of {experiment!r} do not hold as registered:\n{lines}")
    return outcomes

