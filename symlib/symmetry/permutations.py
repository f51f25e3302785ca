"""Permutations as integer index arrays, and the statistics symlib computes on them.

Convention used throughout symlib: a permutation of ``n`` items is a 1-D integer
array ``perm`` of length ``n`` holding each of ``0..n-1`` once; ``perm[i]`` is the
*image* of ``i``. Everything here is numpy-first (results are ``np.ndarray`` or
Python scalars) and accepts anything ``np.asarray`` understands, jax arrays included.

* ``compose(p, q)[i] = p[q[i]]``: apply ``q`` first, then ``p`` (``p ∘ q``).
* ``to_matrix(p)`` is the matrix ``P`` with ``P[p[i], i] = 1``, so ``(P @ x)[p[i]] = x[i]``
  (the entry at ``i`` is moved to position ``p[i]``) and
  ``to_matrix(compose(p, q)) == to_matrix(p) @ to_matrix(q)``.
  Gathering, ``np.take(x, p) == x[p]``, is the *inverse* move:
  ``x[p] == to_matrix(p).T @ x == to_matrix(inverse(p)) @ x``. ``symlib.symmetry.specs`` permutes
  weights by gathering (the new unit ``i`` is the old unit ``p[i]``).
* ``num_transpositions(p)`` (NoT), the number of transpositions of Xiao et al. (2023),
  is ``n - (number of cycles of p)``: the least number of transpositions whose product
  is ``p``; it is a metric on permutations (``NoT(compose(inverse(p), q))`` is the
  Cayley distance).

Randomness: the ``random_*`` functions take ``key``, which may be a ``jax.random`` key
(typed or raw ``uint32[2]``), an ``int`` seed, a ``numpy.random.Generator`` (consumed in
place), or ``None`` (fresh OS entropy); see :func:`as_generator`. Sampling itself runs
in numpy; a jax key is only used to seed a numpy generator, deterministically.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "as_generator",
    "compose",
    "cycles",
    "from_matrix",
    "identity",
    "inverse",
    "is_permutation",
    "kendall_tau",
    "log_stirling1_table",
    "num_cycles",
    "num_transpositions",
    "num_transpositions_batch",
    "random_permutation",
    "random_permutation_with_transpositions",
    "to_matrix",
    "validate",
]

_MAX_LISTED = 10


def _listing(values) -> str:
    values = [int(v) for v in values]
    if len(values) <= _MAX_LISTED:
        return str(values)
    return f"{values[:_MAX_LISTED]} ... ({len(values)} in all)"


def validate(perm, n: int | None = None) -> np.ndarray:
    """Check that ``perm`` is a permutation (of ``n`` items, if given); return it as int64.

    Raises ``ValueError`` saying what is wrong: not 1-D (with the shape), a non-integer
    dtype (with the dtype), the wrong length, values outside ``0..len-1`` (listed), or
    repeated values (listing which repeat and which are missing).

    Args:
        perm: the candidate (anything ``np.asarray`` accepts).
        n: the number of items expected, or ``None`` for any.

    Returns:
        ``perm`` as a new int64 array.

    Raises:
        ValueError: describing the first problem found.
    """
    if isinstance(perm, (list, tuple)) and len(perm) == 0:
        arr = np.zeros((0,), np.int64)
    else:
        arr = np.asarray(perm)
    if arr.ndim != 1:
        raise ValueError(f"a permutation must be a 1-D integer array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"a permutation must have an integer dtype, got dtype {arr.dtype}")
    length = arr.shape[0]
    if n is not None and length != int(n):
        raise ValueError(f"expected a permutation of {int(n)} items, got length {length}")
    bad = (arr < 0) | (arr >= length)
    if bad.any():
        raise ValueError(
            f"permutation of length {length} has values outside 0..{length - 1}: "
            f"{_listing(np.unique(arr[bad]))}"
        )
    arr = arr.astype(np.int64, copy=True)
    counts = np.bincount(arr, minlength=length)
    if (counts != 1).any():
        raise ValueError(
            f"permutation of length {length} has repeated values {_listing(np.flatnonzero(counts > 1))} "
            f"and missing values {_listing(np.flatnonzero(counts == 0))}"
        )
    return arr


def is_permutation(perm, n: int | None = None) -> bool:
    """Whether :func:`validate` accepts ``perm``.

    Args:
        perm: the candidate.
        n: the number of items expected, or ``None`` for any.

    Returns:
        ``True`` if ``perm`` is a permutation (of ``n`` items).
    """
    try:
        validate(perm, n)
    except ValueError:
        return False
    return True


def identity(n: int) -> np.ndarray:
    """The identity permutation ``[0, 1, ..., n-1]``.

    Args:
        n: number of items, >= 0.

    Returns:
        An int64 array.

    Raises:
        ValueError: if ``n`` is negative.
    """
    if int(n) < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    return np.arange(int(n), dtype=np.int64)


def compose(p, q) -> np.ndarray:
    """``p ∘ q``: ``compose(p, q)[i] = p[q[i]]`` (apply ``q`` first, then ``p``).

    Args:
        p: the permutation applied second.
        q: the permutation applied first, of the same length.

    Returns:
        The composition as an int64 array.

    Raises:
        ValueError: if ``p`` or ``q`` is not a permutation, or their lengths differ.
    """
    p = validate(p)
    q = validate(q, len(p))
    return p[q]


def inverse(p) -> np.ndarray:
    """The inverse permutation: ``inverse(p)[p[i]] = i``.

    Args:
        p: a permutation (1-D integer array holding each of ``0..n-1`` once).

    Returns:
        The inverse as an int64 array.

    Raises:
        ValueError: if ``p`` is not a permutation (see :func:`validate`).
    """
    p = validate(p)
    inv = np.empty_like(p)
    inv[p] = np.arange(len(p), dtype=p.dtype)
    return inv


def to_matrix(p, dtype=np.float64) -> np.ndarray:
    """Permutation matrix ``P`` with ``P[p[i], i] = 1``, so ``(P @ x)[p[i]] = x[i]``.

    ``to_matrix(compose(p, q)) == to_matrix(p) @ to_matrix(q)``; the gather ``x[p]``
    equals ``to_matrix(p).T @ x``. :func:`from_matrix` is the inverse map.

    Args:
        p: a permutation (1-D integer array holding each of ``0..n-1`` once).
        dtype: dtype of the matrix.

    Returns:
        The ``(n, n)`` permutation matrix.

    Raises:
        ValueError: if ``p`` is not a permutation (see :func:`validate`).
    """
    p = validate(p)
    n = len(p)
    P = np.zeros((n, n), dtype=dtype)
    P[p, np.arange(n)] = 1
    return P


def from_matrix(P) -> np.ndarray:
    """The permutation ``p`` with ``to_matrix(p) == P`` (``p[i]`` is the row of the 1 in column ``i``).

    Raises ``ValueError`` unless ``P`` is square, has only 0/1 entries, and has exactly
    one 1 in every row and every column.

    Args:
        P: a square 0/1 (or boolean) matrix.

    Returns:
        The permutation as an int64 array.

    Raises:
        ValueError: if ``P`` is not a permutation matrix (saying why).
    """
    P = np.asarray(P)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"a permutation matrix must be square 2-D, got shape {P.shape}")
    if P.dtype == np.bool_:
        ones = P
    else:
        if not (np.issubdtype(P.dtype, np.number)):
            raise ValueError(f"a permutation matrix must be numeric or boolean, got dtype {P.dtype}")
        ones = P == 1
        other = ~ones & (P != 0)
        if other.any():
            r, c = np.argwhere(other)[0]
            raise ValueError(f"a permutation matrix has only 0/1 entries, got {P[r, c]!r} at ({r}, {c})")
    col = ones.sum(axis=0)
    row = ones.sum(axis=1)
    if (col != 1).any():
        raise ValueError(f"columns {_listing(np.flatnonzero(col != 1))} do not hold exactly one 1")
    if (row != 1).any():
        raise ValueError(f"rows {_listing(np.flatnonzero(row != 1))} do not hold exactly one 1")
    if P.shape[0] == 0:
        return np.zeros((0,), np.int64)
    return np.argmax(ones, axis=0).astype(np.int64)


def cycles(p) -> list[tuple[int, ...]]:
    """Cycle decomposition of ``p``, fixed points included as 1-cycles.

    Each cycle ``(a, p[a], p[p[a]], ...)`` starts at its smallest element; cycles are
    sorted by that first element. E.g. ``cycles([3, 0, 4, 1, 2]) == [(0, 3, 1), (2, 4)]``.

    Args:
        p: a permutation (1-D integer array holding each of ``0..n-1`` once).

    Returns:
        The cycles as tuples of ints.

    Raises:
        ValueError: if ``p`` is not a permutation (see :func:`validate`).
    """
    p = validate(p)
    seen = np.zeros(len(p), dtype=bool)
    out = []
    for start in range(len(p)):
        if seen[start]:
            continue
        cyc = []
        j = start
        while not seen[j]:
            seen[j] = True
            cyc.append(j)
            j = int(p[j])
        out.append(tuple(cyc))
    return out


def num_cycles(p) -> int:
    """Number of cycles of ``p`` (fixed points count as cycles).

    Args:
        p: a permutation (1-D integer array holding each of ``0..n-1`` once).

    Returns:
        The number of cycles.

    Raises:
        ValueError: if ``p`` is not a permutation (see :func:`validate`).
    """
    return len(cycles(p))


def num_transpositions(p) -> int:
    """The number of transpositions NoT of Xiao et al. (2023): ``n - num_cycles(p)``, the
    least number of transpositions whose product is ``p``.

    Args:
        p: a permutation (1-D integer array holding each of ``0..n-1`` once).

    Returns:
        NoT, an int in ``0..n-1``.

    Raises:
        ValueError: if ``p`` is not a permutation (see :func:`validate`).
    """
    p = validate(p)
    return len(p) - num_cycles(p)


def num_transpositions_batch(perms) -> np.ndarray:
    """:func:`num_transpositions` of each row of an ``(m, n)`` array; returns int64 ``(m,)``.

    Args:
        perms: an ``(m, n)`` array, one permutation per row.

    Returns:
        The NoT of every row, int64 of shape ``(m,)``.

    Raises:
        ValueError: if ``perms`` is not 2-D or a row is not a permutation.
    """
    perms = np.asarray(perms)
    if perms.ndim != 2:
        raise ValueError(f"expected an (m, n) array of permutations, got shape {perms.shape}")
    return np.array([num_transpositions(row) for row in perms], dtype=np.int64)


def kendall_tau(p, q) -> float:
    """Kendall's rank correlation between the orderings ``p`` and ``q`` (same length).

    Item ``i`` has rank ``p[i]`` in one ordering and ``q[i]`` in the other; tau is
    (concordant - discordant pairs) / (n choose 2). ``1.0`` when ``p == q``, ``-1.0`` when
    the ranks are reversed (``q == n - 1 - p``); ``1.0`` for ``n < 2`` (the orderings are
    necessarily equal). Uses ``scipy.stats.kendalltau``, O(n log n).

    Args:
        p: the ranks in one ordering (a permutation).
        q: the ranks in the other (a permutation of the same length).

    Returns:
        Kendall's tau in [-1, 1].

    Raises:
        ValueError: if ``p`` or ``q`` is not a permutation, or their lengths differ.
    """
    from scipy.stats import kendalltau

    p = validate(p)
    q = validate(q, len(p))
    if len(p) < 2:
        return 1.0
    return float(kendalltau(p, q).statistic)


# --------------------------------------------------------------------------- randomness


def as_generator(key=None) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a jax key, an int seed, a Generator, or ``None``.

    A Generator is returned as is (and consumed by the caller); an ``int`` (a Python, numpy
    or 0-d jax integer) seeds ``np.random.default_rng``; a ``jax.random`` key (typed, or raw ``uint32[2]``) is turned
    into 128 random bits with ``jax.random.bits`` that seed the Generator, so the same key
    always gives the same draws; ``None`` gives fresh OS entropy.

    Args:
        key: a ``jax.random`` key, an int seed, a ``numpy.random.Generator`` or ``None``.

    Returns:
        A ``numpy.random.Generator``.

    Raises:
        TypeError: if ``key`` is a bool.
    """
    if key is None:
        return np.random.default_rng()
    if isinstance(key, np.random.Generator):
        return key
    if isinstance(key, (bool, np.bool_)):
        raise TypeError("key must be a jax key, an int seed, a numpy Generator or None, got a bool")
    if isinstance(key, (int, np.integer)):
        return np.random.default_rng(int(key))
    import jax
    import jax.numpy as jnp

    dtype = getattr(key, "dtype", None)
    if dtype is not None and np.ndim(key) == 0 and jnp.issubdtype(dtype, jnp.integer):
        return np.random.default_rng(int(key))  # a jax integer scalar is an int seed, not a key
    bits = jax.random.bits(key, (4,), dtype=jnp.uint32)
    return np.random.default_rng(np.asarray(bits, dtype=np.uint64))


def random_permutation(key, n: int) -> np.ndarray:
    """A uniformly random permutation of ``n`` items (``key`` as in :func:`as_generator`).

    Args:
        key: randomness, as in :func:`as_generator`.
        n: number of items, >= 0.

    Returns:
        An int64 array.

    Raises:
        ValueError: if ``n`` is negative.
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    return as_generator(key).permutation(n).astype(np.int64)


@functools.lru_cache(maxsize=8)
def log_stirling1_table(n: int) -> np.ndarray:
    """``T[j, m] = log c(j, m)`` for ``0 <= j, m <= n``: logs of unsigned Stirling numbers of the first kind.

    ``c(j, m)`` counts the permutations of ``j`` items with exactly ``m`` cycles;
    ``-inf`` where it is 0. Built row by row from ``c(j, m) = c(j-1, m-1) + (j-1) c(j-1, m)``
    in float64 log-space (an ``(n+1)^2`` table, 32 MiB at ``n = 2048``); cached per ``n``.
    The returned array is read-only.

    Args:
        n: the largest ``j`` and ``m``.

    Returns:
        The read-only ``(n + 1, n + 1)`` float64 table.
    """
    n = int(n)
    T = np.full((n + 1, n + 1), -np.inf)
    T[0, 0] = 0.0
    for j in range(1, n + 1):
        prev = T[j - 1]
        row = T[j]
        # own cycle: c(j-1, m-1)
        row[1:] = prev[:-1]
        if j > 1:
            # inserted after one of the j-1 earlier elements: (j-1) c(j-1, m)
            row[1:] = np.logaddexp(row[1:], math.log(j - 1) + prev[1:])
    T.setflags(write=False)
    return T


def random_permutation_with_transpositions(key, n: int, k: int) -> np.ndarray:
    """A uniformly random permutation of ``n`` items among those with NoT exactly ``k``.

    Permutations with ``k`` transpositions are those with ``m = n - k`` cycles; there are
    ``c(n, m)`` of them (unsigned Stirling number of the first kind). Going down from item
    ``j = n`` with ``m`` cycles left to place, item ``j`` closes a cycle on its own with
    probability ``c(j-1, m-1) / c(j, m)`` and otherwise is inserted after one of the ``j-1``
    smaller items, chosen uniformly; every permutation with ``m`` cycles is thereby drawn
    with probability ``1 / c(n, m)``. Needs ``n >= 1`` and ``0 <= k <= n - 1`` (else
    ``ValueError``); ``key`` as in :func:`as_generator`. O(n^2) once per ``n`` (cached
    table, :func:`log_stirling1_table`), then O(n) per draw.

    Args:
        key: randomness, as in :func:`as_generator`.
        n: number of items, >= 1.
        k: the number of transpositions, in ``0..n-1``.

    Returns:
        An int64 permutation with ``num_transpositions == k``.

    Raises:
        ValueError: if ``n < 1`` or ``k`` is out of range.
    """
    n, k = int(n), int(k)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= k <= n - 1:
        raise ValueError(f"k must satisfy 0 <= k <= n - 1 = {n - 1}, got k = {k}")
    rng = as_generator(key)
    T = log_stirling1_table(n)
    log_u = np.log(rng.random(n))
    m = n - k
    own = np.zeros(n, dtype=bool)  # own[j-1]: item j (1-indexed) closes its own cycle
    for j in range(n, 0, -1):
        if m == j:  # every remaining item is a fixed point of the sub-permutation
            own[:j] = True
            m = 0
            break
        if m >= 1 and log_u[j - 1] < T[j - 1, m - 1] - T[j, m]:
            own[j - 1] = True
            m -= 1
    assert m == 0, "internal error in cycle-count sampling"
    # Build bottom-up: item j (0-indexed) is a fixed point, or goes after a uniform earlier i.
    targets = rng.integers(0, np.maximum(np.arange(n), 1))
    perm = np.empty(n, dtype=np.int64)
    for j in range(n):
        if own[j]:
            perm[j] = j
        else:
            i = int(targets[j])
            perm[j] = perm[i]
            perm[i] = j
    return perm

