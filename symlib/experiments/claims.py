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

__all__ = ["Claim", "ClaimOutcome", "CLAIMS", "claim", "evaluate", "check_summary", "check_result", "claims_table"]


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
    return Table(["source", "the paper says", f"ours ({profile_name} profile)", "holds"],
                 [(o.claim.source, o.claim.statement, o.detail, "yes" if o.holds else "NO") for o in outcomes])


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
