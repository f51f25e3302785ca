"""Permutation matching of two networks, Git Re-Basin style (Ainsworth et al., ICLR 2023).

Everything is read from a :class:`~symlib.symmetry.specs.PermutationSpec`; no layer name is
hard-coded (except in :func:`activation_matching` when its ``apply_fn`` returns a list of
an MLP's hidden layers: layer ``l`` is then the spec's ``"P_l"``; given the model's
ordinary forward function instead, it finds the activations of every permutation in the
traced computation). MLPs and convolutional
networks (:mod:`symlib.core.cnn`, :mod:`symlib.symmetry.architectures`) are treated alike:
a convolution kernel ``(kh, kw, c_in, c_out)`` is one more parameter whose last axis (and,
in the next layer, whose input axis) a permutation acts on.

Blocks
------
A permutation with :attr:`~symlib.symmetry.specs.PermutationSpec.blocks` (``g`` groups, the
output channels of a grouped convolution) may only move units within ``g`` equal
contiguous blocks. Every tool here honours it by solving each linear assignment block by
block: the cost matrix restricted to each diagonal block is one LAP, and the answers are
assembled (:func:`~symlib.symmetry.matching.lap.solve_lap`, used at every solve, with either
LAP solver of :mod:`~symlib.symmetry.matching.lap`). That is the exact optimum over the
block-preserving permutations, so every property of the tools (monotone J, exact recovery of a
planted permutation, skipped solves) carries over. ``init_perms`` and the rows given to
:func:`apply_permutation_many` are checked to keep their blocks. Unblocked permutations
are solved exactly as before (one LAP, the same bits).

Convention
----------
As in :func:`symlib.symmetry.specs.apply_permutation` (gather form): a result ``perms`` maps every
permutation name to an index array ``p`` with "new unit ``i`` of B is old unit ``p[i]``",
so ``apply_permutation(spec, result.perms, params_b)`` is B aligned to A. If ``B`` is a
permuted copy of ``A``, ``B = apply_permutation(spec, q, A)``, the exact answer is
``inverse(q)``, i.e. ``compose(q[name], result.perms[name])`` is the identity.

Modules
-------
* :mod:`~symlib.symmetry.matching.weight`: pairwise :func:`weight_matching` (coordinate ascent,
  its cost cache and sweeps).
* :mod:`~symlib.symmetry.matching.activation`: :func:`activation_matching` (correlation of
  activations streamed over a data set; given, or captured from the model's computation at
  the sites of :func:`symlib.symmetry.derive.activation_sites`).
* :mod:`~symlib.symmetry.matching.many`: :func:`weight_matching_many` and
  :func:`apply_permutation_many` (a stack of networks to one reference).
* :mod:`~symlib.symmetry.matching.lap`: the linear assignment (LAP) solvers every tool uses
  and the worker threads that run them.
* :mod:`~symlib.symmetry.matching.common`: the result types, input checks and cost terms
  shared by the above.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "common": ["ManyMatchResult", "MatchResult"],
    "activation": ["activation_matching"],
    "many": ["apply_permutation_many", "weight_matching_many"],
    "weight": ["weight_matching"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
