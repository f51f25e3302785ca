"""Rossi et al. (2023), App. A and Fig. A1: which alignment cost between two mean-field
Gaussian posteriors depends on the permutation, and which permutation each cost picks.

Three small computations that chapter 06 shows, each with its table and the values its prose cites:

- :func:`trace_term_check`: the closed form of ``KL[P#q1 || q0]`` (a constant minus two inner
  products) against :func:`~symlib.symmetry.alignment.kl_diag`, and the range over all
  permutations of the trace term ``T(P) = sum_i (P s1)_i^2 / s0_i^2``;
- :func:`kl_over_permutations`: the full KL and the appendix's mean-only cost of every
  permutation of one pair;
- :func:`mirror_pair_picks`: on a 2-D pair mirror-symmetric about ``y = x``, the permutation
  that the Wasserstein cost, the full KL and the mean-only KL pick.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from symlib.experiments.table import Table
from symlib.symmetry.alignment import kl_alignment, kl_diag, wasserstein2_sq, wasserstein_alignment
from symlib.symmetry.specs import PermutationSpec

#: One "unit" per coordinate: the permutations of a vector ``{"w": (n,)}``.
VECTOR_SPEC = PermutationSpec(axes={"w": ("P",)})

#: The costs :func:`mirror_pair_picks` compares, in the order of its tables.
MIRROR_COSTS = ("Wasserstein", "full KL", "mean-only KL (appendix)")


def _permutations(n: int) -> list[np.ndarray]:
    return [np.array(p) for p in itertools.permutations(range(n))]


@dataclass(frozen=True)
class TraceTermCheck:
    """What :func:`trace_term_check` found.

    Attributes:
        extremes: case name -> ``(min, max)`` of ``T(P)`` over all permutations.
        formula_error: the largest ``|closed form - kl_diag|`` over every permutation and case.
        n_perms: the number of permutations of each case.
    """

    extremes: dict[str, tuple[float, float]]
    formula_error: float
    n_perms: int

    def spread(self, case: str) -> float:
        """``max T(P) - min T(P)`` of one case."""
        if case not in self.extremes:
            raise ValueError(f"unknown case {case!r}; the cases are {list(self.extremes)}")
        low, high = self.extremes[case]
        return high - low

    def spread_text(self, case: str, digits: int = 2) -> str:
        """The range of one case with ``digits`` significant figures, or ``"0 (round-off)"`` when it
        is within float64 round-off of its values (1e-12 relative), so that a range that is zero
        in exact arithmetic does not read as a measured variation."""
        low, high = self.extremes[case]
        spread = self.spread(case)
        return "0 (round-off)" if spread <= 1e-12 * max(1.0, abs(low), abs(high)) else f"{spread:.{digits}g}"

    def table(self) -> Table:
        """One row per case: its minimum, maximum and range of ``T(P)``."""
        return Table(["case", "min over P of T(P)", "max over P", "range"],
                     [(name, f"{lo:.4f}", f"{hi:.4f}", self.spread_text(name, 3))
                      for name, (lo, hi) in self.extremes.items()])

    def glue_values(self) -> dict[str, object]:
        """``n_perms``, ``formula_error`` and ``trace_range_<case>`` (the case's first word) for the prose."""
        return {"n_perms": self.n_perms, "formula_error": f"{self.formula_error:.1e}",
                **{f"trace_range_{name.split()[0]}": self.spread_text(name) for name in self.extremes}}


def trace_term_check(m0: np.ndarray, m1: np.ndarray,
                     cases: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> TraceTermCheck:
    """Check the closed form of ``KL[P#q1 || q0]`` over every permutation ``P`` of the units and
    measure how much its trace term depends on ``P``.

    The closed form is ``sum log(s0 / s1) + sum m0^2 / (2 s0^2) - n/2 - <m0 / s0^2, P m1>
    + 1/2 <1 / s0^2, P (m1^2 + s1^2)>``; the trace term is ``T(P) = sum (P s1)^2 / s0^2``.

    Args:
        m0: means of ``q0``, shape ``(n,)``.
        m1: means of ``q1``, shape ``(n,)``.
        cases: case name -> ``(s0, s1)``, the standard deviations of ``q0`` and ``q1``.

    Returns:
        The extremes of ``T`` per case and the largest error of the closed form.

    Raises:
        ValueError: if an array's shape differs from ``m0``'s.
    """
    m0, m1 = np.asarray(m0, dtype=float), np.asarray(m1, dtype=float)
    for name, arrays in [("m1", (m1,)), *cases.items()]:
        if any(np.shape(a) != m0.shape for a in arrays):
            raise ValueError(f"{name}: every array needs the shape of m0 {m0.shape}, got "
                             f"{[np.shape(a) for a in arrays]}")
    perms, extremes, error = _permutations(m0.size), {}, 0.0
    for name, (s0, s1) in cases.items():
        s0, s1 = np.asarray(s0, dtype=float), np.asarray(s1, dtype=float)
        const = np.sum(np.log(s0) - np.log(s1)) + 0.5 * np.sum(m0**2 / s0**2) - m0.size / 2
        trace = []
        for p in perms:
            closed = const - np.dot(m0 / s0**2, m1[p]) + 0.5 * np.dot(1 / s0**2, m1[p] ** 2 + s1[p] ** 2)
            error = max(error, abs(closed - kl_diag(({"w": m1[p]}, {"w": s1[p]}), ({"w": m0}, {"w": s0}))))
            trace.append(np.sum(s1[p] ** 2 / s0**2))
        extremes[name] = (float(min(trace)), float(max(trace)))
    return TraceTermCheck(extremes, float(error), math.factorial(m0.size))


@dataclass(frozen=True)
class PermutationCosts:
    """The costs of every permutation of ``q1``'s units (:func:`kl_over_permutations`).

    Attributes:
        perms: the permutations, in :func:`itertools.permutations` order.
        full_kl: ``KL[P#q1 || q0]`` of each.
        mean_only: the appendix's remaining mean term ``sum (m0 - P m1)^2 / (2 s0^2)`` of each.
    """

    perms: list[tuple[int, ...]]
    full_kl: list[float]
    mean_only: list[float]

    def table(self) -> Table:
        """One row per permutation: its full KL and its mean-only cost (3 decimals)."""
        return Table(["permutation of q1's units", "full KL[P#q1 || q0]", "mean-only cost (appendix)"],
                     [(str(p), f"{kl:.3f}", f"{mo:.3f}") for p, kl, mo in zip(self.perms, self.full_kl, self.mean_only)])

    def glue_values(self) -> dict[str, str]:
        """``kl_min`` and ``kl_max``: the full KL's extremes over the permutations (3 decimals)."""
        return {"kl_min": f"{min(self.full_kl):.3f}", "kl_max": f"{max(self.full_kl):.3f}"}


def kl_over_permutations(m0: np.ndarray, s0: np.ndarray, m1: np.ndarray, s1: np.ndarray) -> PermutationCosts:
    """The full KL and the appendix's mean-only cost for every permutation ``P`` of ``q1``'s units.

    Args:
        m0: means of ``q0``, shape ``(n,)``.
        s0: standard deviations of ``q0``.
        m1: means of ``q1``.
        s1: standard deviations of ``q1``.

    Returns:
        The costs, one per permutation.
    """
    m0, s0, m1, s1 = (np.asarray(a, dtype=float) for a in (m0, s0, m1, s1))
    perms = _permutations(m0.size)
    return PermutationCosts([tuple(int(i) for i in p) for p in perms],
                            [kl_diag(({"w": m1[p]}, {"w": s1[p]}), ({"w": m0}, {"w": s0})) for p in perms],
                            [float(np.sum((m0 - m1[p]) ** 2 / (2 * s0**2))) for p in perms])


def mirror_pair(mean: Sequence[float], std: Sequence[float]) -> tuple[tuple[dict, dict], tuple[dict, dict]]:
    """``(q0, q1)``: a 2-D diagonal Gaussian ``q0`` and its mirror image about ``y = x``, as
    ``({"w": mean}, {"w": std})`` posteriors."""
    mean, std = np.asarray(mean, dtype=float), np.asarray(std, dtype=float)
    if mean.shape != (2,) or std.shape != (2,):
        raise ValueError(f"a mirror pair needs a 2-D mean and std, got shapes {mean.shape} and {std.shape}")
    return ({"w": mean}, {"w": std}), ({"w": mean[::-1]}, {"w": std[::-1]})


def mirror_pair_picks(mean: Sequence[float], std: Sequence[float]) -> dict[str, str]:
    """The permutation (``"identity"`` or ``"swap"``) that each cost of :data:`MIRROR_COSTS`
    picks to align the mirror image of ``N(mean, diag std^2)`` onto it (:func:`mirror_pair`).

    The swap maps the mirror image exactly onto the original, so it is the right answer.
    """
    q0, q1 = mirror_pair(mean, std)
    results = dict(zip(MIRROR_COSTS, (wasserstein_alignment(0, VECTOR_SPEC, q0, q1),
                                      kl_alignment(0, VECTOR_SPEC, q0, q1),
                                      kl_alignment(0, VECTOR_SPEC, q0, q1, mean_only=True))))
    return {cost: "swap" if list(r.perms["P"]) == [1, 0] else "identity" for cost, r in results.items()}


def mirror_picks_table(cases: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                       picks: Mapping[str, Mapping[str, str]]) -> Table:
    """One row per configuration: the pick of each cost and ``W2^2`` before alignment and after the swap.

    Args:
        cases: configuration -> ``(mean, std)`` of ``q0``.
        picks: configuration -> :func:`mirror_pair_picks` of it.
    """
    return Table(["configuration", *MIRROR_COSTS, "W2^2 identity / swap"],
                 [(name, *(picks[name][c] for c in MIRROR_COSTS), f"{wasserstein2_sq(*mirror_pair(*case)):.2f} / 0")
                  for name, case in cases.items()])


def mirror_glue_values(cases: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                       picks: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The prose's values: ``pick_<a, b, ...>_<w2, kl, mean_kl>`` per configuration in order, and
    ``mean_cost_a``, the mean-only cost of the identity and of the swap in the first configuration."""
    keys = dict(zip(MIRROR_COSTS, ("w2", "kl", "mean_kl")))
    values = {f"pick_{tag}_{keys[c]}": picks[name][c] for name, tag in zip(cases, "abcdefgh") for c in MIRROR_COSTS}
    (q0, q1) = mirror_pair(*next(iter(cases.values())))
    costs = kl_over_permutations(q0[0]["w"], q0[1]["w"], q1[0]["w"], q1[1]["w"]).mean_only
    values["mean_cost_a"] = f"{costs[0]:.3g} and {costs[1]:.3g}"
    return values


def appendix_a_rows(trace: TraceTermCheck, picks: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str, str]]:
    """The ``(quantity, paper, ours)`` rows of App. A and Fig. A1: the trace term's dependence on
    ``P``, and the permutation each cost picks on the mirror pairs (the first configuration has its
    means on the mirror line, the second its means mirrored too)."""
    (on_line, on_picks), (_, mirrored) = list(picks.items())[:2]
    return [
        ("KL cost: the terms other than the means' distance (App. A)", "do not depend on P",
         "the trace term depends on P unless s0 or s1 is constant (range over P: "
         + ", ".join(f"{k} {trace.spread_text(k)}" for k in trace.extremes) + ")"),
        ("KL cost on a pair mirror-symmetric about y = x (Fig. A1)", "identity (fails to recover the symmetry)",
         f"reduced (mean-only) KL: {on_picks[MIRROR_COSTS[2]]}; full KL: {on_picks['full KL']}"),
        ("Wasserstein cost on the same pair (Fig. A1)", "recovers the symmetry (swap)",
         f"{on_picks['Wasserstein']}; with mirrored means as well: {mirrored['Wasserstein']}"),
    ]
