"""The papers' claims as code.

A claim is a function of an experiment's *summary* (the small JSON-able dict that
``SUMMARIES[name]`` makes from an artifact, and that ``python -m symlib run NAME --out``
saves under ``book/results/``). It returns whether the claim holds and a one-line detail
with the numbers. Because claims read summaries, the same check runs on

* the quick-profile result inside a notebook (:func:`check_result`), and
* every paper-profile file in ``book/results/`` (``tests/test_claims.py``),

so a paper-scale run that contradicts a claim fails CI instead of sitting silently beside it.

Claims are registered by the paper modules with :func:`claim`, next to the experiments
they judge; each names its source (paper, section, figure) and states the claim as the
paper does, fixed before looking at our numbers.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from symlib.experiments.registry import SUMMARIES
from symlib.experiments.report import Table

Summary = Mapping[str, Any]
Check = Callable[[Summary], tuple[bool, str]]

__all__ = ["Claim", "ClaimOutcome", "CLAIMS", "DIFFERENCES", "claim", "difference", "documented_difference", "evaluate",
           "unexpected_failures",
           "check_summary", "check_result", "claims_table"]


@dataclass(frozen=True)
class Claim:
    """One claim of a paper about one experiment.

    Attributes:
        experiment: the registered experiment whose summary it reads.
        name: short identifier, unique per experiment.
        source: where the paper says it (e.g. ``"Xiao et al. (2023), Fig. 1"``).
        statement: the claim as the paper states it.
        check: ``summary -> (holds, detail)``.
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
        holds: whether it holds.
        detail: the numbers behind the verdict.
    """

    claim: Claim
    holds: bool
    detail: str


#: experiment name -> its claims, in registration order
CLAIMS: dict[str, list[Claim]] = {}

#: (experiment, profile label, claim name) -> why a saved run of that profile contradicts the
#: claim: a finding, documented in the claim's chapter (see :func:`difference`)
DIFFERENCES: dict[tuple[str, str, str], str] = {}


def claim(experiment: str, name: str, source: str, statement: str) -> Callable[[Check], Check]:
    """Register the decorated ``check(summary) -> (holds, detail)`` as a claim.

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


def difference(experiment: str, profile: str, name: str, why: str) -> None:
    """Record that the saved run ``<experiment>-<profile>.json`` contradicts claim ``name``.

    A paper-scale run that does not reproduce a claim is a result, not a defect; it is kept
    in ``book/results/`` with the claim still stated as the paper states it. Registering the
    difference (with the numbers and the reason in a sentence, also said in the chapter)
    is what lets the unit tests accept that file: they require the claims that fail on a
    saved run to be exactly the registered differences for its profile, so a difference
    that stops failing, or a new failure, fails CI.

    Args:
        experiment: the experiment.
        profile: the saved run's profile label (e.g. ``"paper"``).
        name: the claim's name (registered with :func:`claim` before this call).
        why: one or two sentences: what we found and why it may differ from the paper.

    Raises:
        ValueError: for an unknown claim, an empty reason or a difference registered twice.
    """
    if not any(c.name == name for c in CLAIMS.get(experiment, [])):
        raise ValueError(f"experiment {experiment!r} has no claim named {name!r}")
    if not why.strip():
        raise ValueError("a documented difference needs its reason")
    key = (experiment, profile, name)
    if key in DIFFERENCES:
        raise ValueError(f"difference {key} is registered already")
    DIFFERENCES[key] = why.strip()


def documented_difference(experiment: str, profile: str, name: str) -> str | None:
    """The reason registered with :func:`difference`, or None.

    Args:
        experiment: the experiment.
        profile: the run's profile label.
        name: the claim's name.

    Returns:
        The reason, or None when the claim is expected to hold for that run.
    """
    return DIFFERENCES.get((experiment, profile, name))


def unexpected_failures(outcomes: list[ClaimOutcome], profile: str) -> list[ClaimOutcome]:
    """The outcomes that fail without a documented difference for ``profile``.

    A notebook asserts that this is empty: in the quick profile every claim must hold; in a
    profile with a registered finding (:func:`difference`) that claim may fail, and is shown.

    Args:
        outcomes: from :func:`evaluate`.
        profile: the profile label of the run they were evaluated on.

    Returns:
        The failing outcomes not registered as differences.
    """
    return [o for o in outcomes
            if not o.holds and documented_difference(o.claim.experiment, profile, o.claim.name) is None]


def evaluate(experiment: str, summary: Summary) -> list[ClaimOutcome]:
    """Every claim registered for ``experiment``, evaluated on ``summary``.

    Args:
        experiment: the experiment name.
        summary: its summary (from ``SUMMARIES[experiment]`` or a ``book/results`` file).

    Returns:
        One :class:`ClaimOutcome` per claim (an empty list if it has none).
    """
    outcomes = []
    for c in CLAIMS.get(experiment, []):
        holds, detail = c.check(summary)
        outcomes.append(ClaimOutcome(c, bool(holds), str(detail)))
    return outcomes


def claims_table(outcomes: list[ClaimOutcome], profile_name: str) -> Table:
    """The outcomes as a table: source, the paper's statement, ours (numbers), verdict.

    Args:
        outcomes: from :func:`evaluate`.
        profile_name: the profile that produced the summary (named in the header).

    Returns:
        A :class:`~symlib.experiments.report.Table`.
    """
    def verdict(o: ClaimOutcome) -> str:
        if o.holds:
            return "yes"
        documented = documented_difference(o.claim.experiment, profile_name, o.claim.name)
        return "NO (a documented difference: see the chapter)" if documented else "NO"

    return Table(["source", "the paper says", f"ours ({profile_name} profile)", "holds"],
                 [(o.claim.source, o.claim.statement, o.detail, verdict(o)) for o in outcomes])


def check_summary(experiment: str, summary: Summary) -> list[ClaimOutcome]:
    """Evaluate the claims of ``experiment`` on ``summary`` and raise if any fails.

    Args:
        experiment: the experiment name.
        summary: its summary.

    Returns:
        The outcomes (all holding).

    Raises:
        AssertionError: listing every claim that does not hold, with its numbers.
        ValueError: if the experiment has no registered claims.
    """
    outcomes = evaluate(experiment, summary)
    if not outcomes:
        raise ValueError(f"experiment {experiment!r} has no registered claims")
    failed = [o for o in outcomes if not o.holds]
    if failed:
        lines = "\n".join(f"- {o.claim.source}: {o.claim.statement} -> ours: {o.detail}" for o in failed)
        raise AssertionError(f"{len(failed)} claim(s) of {experiment!r} do not hold:\n{lines}")
    return outcomes


def check_result(experiment: str, result: Any) -> list[ClaimOutcome]:
    """:func:`check_summary` on a result of :func:`symlib.experiments.run`.

    Args:
        experiment: the experiment name.
        result: its typed result (or the raw artifact dict).

    Returns:
        The outcomes (all holding).

    Raises:
        AssertionError: listing every claim that does not hold.
    """
    artifact = result if isinstance(result, Mapping) else result.artifact
    return check_summary(experiment, SUMMARIES[experiment](artifact))
