"""Predictive metrics. Inputs are logits or probabilities with classes on the last axis.

:func:`accuracy` and :func:`nll` take logits (JAX); the functions after them take
predictive probabilities (numpy or JAX), including the agreement (Eq. 1) and total
variation (Eq. 2) of Xiao et al. (2023).
"""
from __future__ import annotations

import numpy as _np

from symlib.core.checks import check_finite, check_labels, positive_int
from symlib.core.losses import accuracy, nll  # metrics on logits, defined in core for training

__all__ = ["accuracy", "nll", "agreement", "total_variation", "accuracy_from_probs", "nll_from_probs", "brier", "ece"]


# --------------------------------------------------------------------------- from probabilities
#
# The functions below take predictive PROBABILITIES (not logits) with test points on
# axis -2 and classes on axis -1: ``(n, C)``, or ``(..., n, C)`` for a batch of
# predictives (e.g. one per posterior sample), in which case the result has shape
# ``(...)``. They accept numpy or JAX arrays, compute in float64 numpy on the host and
# return a Python float for a single predictive, else a numpy array. Bad inputs (wrong
# shapes, NaN or inf, labels out of range) raise ``ValueError`` naming the problem.

_PROB_TOL = 1e-3  # tolerance on "entries in [0, 1] and rows summing to 1"


def _as_float_array(a, name: str) -> _np.ndarray:
    arr = _np.asarray(a)
    if arr.dtype == object or not (_np.issubdtype(arr.dtype, _np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    arr = arr.astype(_np.float64, copy=False)
    if arr.ndim < 2:
        raise ValueError(f"{name} must have shape (n, C) (or (..., n, C)), got shape {arr.shape}")
    if arr.shape[-2] < 1 or arr.shape[-1] < 1:
        raise ValueError(f"{name} needs at least one test point and one class, got shape {arr.shape}")
    check_finite(arr, name)
    return arr


def _check_probs(arr: _np.ndarray, name: str) -> None:
    if arr.min() < -_PROB_TOL or arr.max() > 1 + _PROB_TOL:
        raise ValueError(f"{name} must hold probabilities in [0, 1], got values in [{arr.min():.4g}, {arr.max():.4g}]")
    dev = float(_np.abs(arr.sum(axis=-1) - 1.0).max())
    if dev > _PROB_TOL:
        raise ValueError(f"the rows of {name} must sum to 1 (probabilities, not logits); largest deviation {dev:.3g}")


def _pair(p, q, need_probs: bool) -> tuple[_np.ndarray, _np.ndarray]:
    p = _as_float_array(p, "p")
    q = _as_float_array(q, "q")
    if p.shape[-2:] != q.shape[-2:]:
        raise ValueError(f"p and q must both be (n, C) over the same test points and classes, got shapes "
                         f"{p.shape} and {q.shape}")
    try:
        _np.broadcast_shapes(p.shape, q.shape)
    except ValueError:
        raise ValueError(f"the leading (batch) axes of p {p.shape} and q {q.shape} do not broadcast") from None
    if need_probs:
        _check_probs(p, "p")
        _check_probs(q, "q")
    return p, q


def _labels(labels, probs: _np.ndarray) -> _np.ndarray:
    lab = _np.asarray(labels)
    n, C = probs.shape[-2:]
    if lab.ndim != 1 or lab.shape[0] != n:
        raise ValueError(f"labels must have shape ({n},) to match probs of shape {probs.shape}, got {lab.shape}")
    if lab.dtype == bool or not _np.issubdtype(lab.dtype, _np.integer):
        if _np.issubdtype(lab.dtype, _np.floating) and _np.all(_np.isfinite(lab)) and _np.all(lab == _np.round(lab)):
            lab = lab.astype(_np.int64)
        else:
            raise ValueError(f"labels must be integer class indices, got dtype {lab.dtype}")
    return check_labels(lab, C, "labels").astype(_np.int64, copy=False)


def _out(x):
    x = _np.asarray(x, dtype=_np.float64)
    return float(x) if x.ndim == 0 else x


def _label_probs(probs: _np.ndarray, lab: _np.ndarray) -> _np.ndarray:
    """``probs[..., i, lab[i]]`` -> shape ``(..., n)``."""
    idx = _np.broadcast_to(lab[:, None], probs.shape[:-1] + (1,))
    return _np.take_along_axis(probs, idx, axis=-1)[..., 0]


def agreement(p, q):
    """Eq. (1) of Xiao et al. (2023): the fraction of test points where the two predictives
    have the same top class, ``mean_i 1[argmax_c p[i, c] == argmax_c q[i, c]]``.

    Only the argmax matters, so logits work too; ties go to the lowest class index
    (``numpy.argmax``). Symmetric in ``p`` and ``q``; 1 for identical inputs.

    Args:
        p: ``(n, C)`` probabilities or logits (leading batch axes broadcast against ``q``'s).
        q: the same for the other predictive.

    Returns:
        A float in [0, 1], or an array over the broadcast batch axes.

    Raises:
        ValueError: naming ``p`` or ``q`` for non-numeric input, wrong or mismatched
            shapes, or NaN or inf.
    """
    p, q = _pair(p, q, need_probs=False)
    return _out(_np.mean(_np.argmax(p, axis=-1) == _np.argmax(q, axis=-1), axis=-1))


def total_variation(p, q):
    """Eq. (2) of Xiao et al. (2023): the mean over test points of the total variation
    distance ``0.5 * sum_c |p[i, c] - q[i, c]|`` between the two predictive distributions.

    Args:
        p: ``(n, C)`` probabilities (leading batch axes broadcast against ``q``'s).
        q: the same for the other predictive.

    Returns:
        A float in [0, 1] (0 for identical predictives, 1 for disjoint supports at every
        point), or an array over the broadcast batch axes.

    Raises:
        ValueError: naming ``p`` or ``q`` for wrong or mismatched shapes, NaN or inf,
            entries outside [0, 1] or rows not summing to 1 (within 1e-3).
    """
    p, q = _pair(p, q, need_probs=True)
    return _out(_np.mean(0.5 * _np.abs(p - q).sum(axis=-1), axis=-1))


def accuracy_from_probs(probs, labels):
    """Fraction of test points with ``argmax_c probs[i, c] == labels[i]`` (ties: lowest
    class index).

    Args:
        probs: ``(n, C)`` or ``(..., n, C)`` probabilities (logits work too).
        labels: ``(n,)`` integer class labels in ``[0, C)``.

    Returns:
        A float, or an array over the leading axes of ``probs``.

    Raises:
        ValueError: naming ``probs`` or ``labels`` for wrong shapes, NaN or inf, or labels
            that are not integers in ``[0, C)``.
    """
    probs = _as_float_array(probs, "probs")
    lab = _labels(labels, probs)
    return _out(_np.mean(_np.argmax(probs, axis=-1) == lab, axis=-1))


def nll_from_probs(probs, labels, eps: float = 1e-12):
    """Mean negative log-likelihood ``-mean_i log probs[i, labels[i]]``.

    The probability of the true class is clipped to ``[eps, 1]`` before the log, so a
    point given probability 0 costs ``-log(eps)`` (27.6 for the default 1e-12) instead of
    ``inf``; with ``eps=0`` no clipping is done and the result may be ``inf``.

    Args:
        probs: ``(n, C)`` or ``(..., n, C)`` probabilities (rows summing to 1 within 1e-3).
        labels: ``(n,)`` integer class labels in ``[0, C)``.
        eps: clipping floor in ``[0, 1)``.

    Returns:
        A float, or an array over the leading axes of ``probs``.

    Raises:
        ValueError: naming ``probs``, ``labels`` or ``eps`` when invalid.
    """
    probs = _as_float_array(probs, "probs")
    _check_probs(probs, "probs")
    lab = _labels(labels, probs)
    eps = float(eps)
    if not (eps >= 0.0 and eps < 1.0):
        raise ValueError(f"eps must lie in [0, 1), got {eps}")
    pt = _np.clip(_label_probs(probs, lab), eps, 1.0)
    with _np.errstate(divide="ignore"):
        return _out(-_np.mean(_np.log(pt), axis=-1))


def brier(probs, labels):
    """Brier score ``mean_i sum_c (probs[i, c] - 1[c == labels[i]])^2`` (summed over
    classes, not averaged; range [0, 2], 0 for a confident correct prediction).

    Args:
        probs: ``(n, C)`` or ``(..., n, C)`` probabilities (rows summing to 1 within 1e-3).
        labels: ``(n,)`` integer class labels in ``[0, C)``.

    Returns:
        A float, or an array over the leading axes of ``probs``.

    Raises:
        ValueError: naming ``probs`` or ``labels`` when invalid.
    """
    probs = _as_float_array(probs, "probs")
    _check_probs(probs, "probs")
    lab = _labels(labels, probs)
    onehot = _np.arange(probs.shape[-1]) == lab[:, None]
    return _out(_np.mean(((probs - onehot) ** 2).sum(axis=-1), axis=-1))


def ece(probs, labels, num_bins: int = 15):
    """Expected calibration error with ``num_bins`` equal-width confidence bins.

    Confidence is ``max_c probs[i, c]``; point ``i`` falls in bin ``b`` when
    ``b / B < conf <= (b + 1) / B`` (a confidence of exactly 0 goes to the first bin).
    ``ECE = sum_b (|bin b| / n) * |accuracy in bin b - mean confidence in bin b|``;
    empty bins contribute 0.

    Args:
        probs: ``(n, C)`` or ``(..., n, C)`` probabilities (rows summing to 1 within 1e-3).
        labels: ``(n,)`` integer class labels in ``[0, C)``.
        num_bins: number of bins ``B``, a positive integer.

    Returns:
        A float in [0, 1], or an array over the leading axes of ``probs``.

    Raises:
        ValueError: naming ``probs``, ``labels`` or ``num_bins`` when invalid.
    """
    probs = _as_float_array(probs, "probs")
    _check_probs(probs, "probs")
    lab = _labels(labels, probs)
    B = positive_int(num_bins, "num_bins")
    lead = probs.shape[:-2]
    flat = probs.reshape((-1,) + probs.shape[-2:])
    out = _np.empty(flat.shape[0])
    n = probs.shape[-2]
    for k, pr in enumerate(flat):
        conf = pr.max(axis=-1)
        correct = (pr.argmax(axis=-1) == lab).astype(_np.float64)
        # bin index: ceil(conf * B) - 1, clipped to [0, B - 1]
        b = _np.clip(_np.ceil(conf * B).astype(_np.int64) - 1, 0, B - 1)
        sum_conf = _np.bincount(b, weights=conf, minlength=B)
        sum_acc = _np.bincount(b, weights=correct, minlength=B)
        out[k] = _np.abs(sum_acc - sum_conf).sum() / n
    return _out(out.reshape(lead))
