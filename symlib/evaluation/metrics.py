"""Predictive metrics. Inputs are logits or probabilities with classes on the last axis.

:func:`accuracy` and :func:`nll` take logits (JAX); the functions after them take
predictive probabilities (numpy or JAX), including the agreement (Eq. 1) and total
variation (Eq. 2) of Xiao et al. (2023), and the uncertainty metrics of Laurent et al.
(2024): out-of-distribution detection (:func:`ood_aupr`, :func:`fpr95`), the mutual
information of a posterior's samples (:func:`mutual_information`) and of pairs of
checkpoints (Sec. 5.1, :func:`pair_mutual_information`,
:func:`pairwise_mutual_information`).
"""
from __future__ import annotations

import jax.numpy as _jnp
import numpy as _np

from symlib.core.checks import check_finite, check_labels, positive_int
from symlib.core.losses import accuracy, nll  # metrics on logits, defined in core for training

__all__ = ["accuracy", "nll", "agreement", "total_variation", "accuracy_from_probs", "nll_from_probs", "brier", "ece",
           "ood_aupr", "fpr95", "mutual_information", "pair_mutual_information", "pairwise_mutual_information"]


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
    if arr.dtype == object or not (_jnp.issubdtype(arr.dtype, _jnp.number) or arr.dtype == bool):  # jnp: bfloat16
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

    torchmetrics' ``CalibrationError`` (which Laurent et al. use) closes its bins on the
    left instead, ``b / B <= conf < (b + 1) / B``, with a confidence of exactly 1 in a bin
    of its own. The two agree unless confidences fall exactly on a bin edge; they can then
    differ, e.g. when saturated predictions with confidence 1.0 share the last bin here
    with less confident ones whose calibration errors have the opposite sign.

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


# --------------------------------------------------------------------------- out-of-distribution detection
#
# Both detectors flag an input as out-of-distribution (OOD, the positive class) when its
# score ``-max_c probs[i, c]`` is at least a threshold: the less confident, the more
# suspect. Sweeping the threshold down through the distinct scores gives, for each one,
# the numbers TP (OOD flagged) and FP (in-distribution flagged). Inputs with the same
# score (exactly equal maximum probabilities, compared in float64) are flagged together:
# a tie is one threshold, never split, as in sklearn's ``roc_curve`` and
# ``precision_recall_curve``.


def _probs_of_shape(a, name: str, axes: str) -> _np.ndarray:
    """Checked probabilities with exactly the axes named in ``axes`` (e.g. ``"n, C"``), in float64."""
    arr = _as_float_array(a, name)
    if arr.ndim != len(axes.split(",")):
        raise ValueError(f"{name} must have shape ({axes}), got shape {arr.shape}")
    _check_probs(arr, name)
    return arr


def _ood_inputs(probs_id, probs_ood) -> tuple[_np.ndarray, _np.ndarray]:
    """Checked ``(n_id, C)`` and ``(n_ood, C)`` probabilities in float64."""
    pid = _probs_of_shape(probs_id, "probs_id", "n, C")
    pood = _probs_of_shape(probs_ood, "probs_ood", "n, C")
    if pid.shape[1] != pood.shape[1]:
        raise ValueError(f"probs_id and probs_ood must have the same number of classes, got {pid.shape[1]} "
                         f"(probs_id {pid.shape}) and {pood.shape[1]} (probs_ood {pood.shape})")
    return pid, pood


def _detection_counts(probs_id, probs_ood) -> tuple[_np.ndarray, _np.ndarray, int, int]:
    """Cumulative ``(tp, fp)`` at each distinct threshold, from the highest score down
    (so both end at ``n_ood`` and ``n_id``), and ``(n_ood, n_id)``."""
    pid, pood = _ood_inputs(probs_id, probs_ood)
    n_id, n_ood = pid.shape[0], pood.shape[0]
    # score = -confidence: sorting confidences ascending sorts scores descending
    conf = _np.concatenate([pood.max(axis=1), pid.max(axis=1)])
    is_ood = _np.concatenate([_np.ones(n_ood, _np.int64), _np.zeros(n_id, _np.int64)])
    order = _np.argsort(conf, kind="stable")
    conf, is_ood = conf[order], is_ood[order]
    # last position of each run of equal confidences: a tie is one threshold
    ends = _np.append(_np.flatnonzero(_np.diff(conf) != 0), conf.size - 1)
    tp = _np.cumsum(is_ood)[ends]
    fp = ends + 1 - tp
    return tp, fp, n_ood, n_id


def ood_aupr(probs_id, probs_ood) -> float:
    """Area under the precision-recall curve for telling OOD inputs from
    in-distribution ones (OOD positive, score ``-max_c probs[i, c]``), as average
    precision: ``sum_k (R_k - R_{k-1}) P_k`` over the distinct thresholds ``k`` from the
    highest score down, with recall ``R_k = TP_k / n_ood``, precision
    ``P_k = TP_k / (TP_k + FP_k)`` and ``R_0 = 0`` (sklearn's
    ``average_precision_score``; no interpolation). Inputs with equal scores form one
    threshold.

    A perfect detector (every OOD input less confident than every in-distribution one)
    gets 1; one that cannot tell them apart gets about ``n_ood / (n_id + n_ood)``.

    Args:
        probs_id: ``(n_id, C)`` predictive probabilities on in-distribution inputs.
        probs_ood: ``(n_ood, C)`` predictive probabilities on OOD inputs.

    Returns:
        A float in [0, 1].

    Raises:
        ValueError: naming ``probs_id`` or ``probs_ood`` for non-numeric input, a shape
            that is not ``(n, C)`` with ``n >= 1``, different numbers of classes, NaN or
            inf, or rows that are not probabilities (within 1e-3).
    """
    tp, fp, n_ood, _ = _detection_counts(probs_id, probs_ood)
    recall_gain = _np.diff(tp, prepend=0) / n_ood
    return float(_np.sum(recall_gain * (tp / (tp + fp))))


def fpr95(probs_id, probs_ood) -> float:
    """False-positive rate at 95% true-positive rate (OOD positive, score
    ``-max_c probs[i, c]``): the fraction of in-distribution inputs flagged at the first
    threshold, from the highest score down, that flags at least 95% of the OOD inputs.

    Ties: inputs with equal scores (exactly equal maximum probabilities) form one
    threshold and are flagged together, so when the 95% point falls inside a group of
    tied inputs the whole group is flagged and all of its in-distribution members count
    as false positives. "At least 95%" is tested exactly, as ``20 * TP >= 19 * n_ood``.
    This is ``fpr[k]`` for the first ``k`` with ``tpr[k] >= 0.95`` on sklearn's
    ``roc_curve`` (with ``drop_intermediate=False``; the default may drop that point).
    torch-uncertainty's ``FPR95`` instead takes the threshold whose TPR is *nearest* 0.95,
    which may lie below it; the two agree when some threshold has TPR exactly 0.95.

    Args:
        probs_id: ``(n_id, C)`` predictive probabilities on in-distribution inputs.
        probs_ood: ``(n_ood, C)`` predictive probabilities on OOD inputs.

    Returns:
        A float in [0, 1]: 0 for a perfect detector.

    Raises:
        ValueError: naming ``probs_id`` or ``probs_ood``, as :func:`ood_aupr`.
    """
    tp, fp, n_ood, n_id = _detection_counts(probs_id, probs_ood)
    k = int(_np.argmax(20 * tp >= 19 * n_ood))  # exists: tp[-1] == n_ood
    return float(fp[k] / n_id)


# --------------------------------------------------------------------------- mutual information


def _entropy(p: _np.ndarray) -> _np.ndarray:
    """Shannon entropy in nats over the last axis, with ``0 log 0 = 0`` (entries below 0,
    allowed by the probability tolerance, count as 0)."""
    p = _np.maximum(p, 0.0)
    logp = _np.log(p, out=_np.zeros_like(p), where=p > 0)
    return -(p * logp).sum(axis=-1)


def _mutual_information(sp: _np.ndarray) -> _np.ndarray:
    """The definition, on checked ``(..., S, n, C)`` probabilities -> ``(...)``."""
    per_input = _entropy(sp.mean(axis=-3)) - _entropy(sp).mean(axis=-2)
    return _np.maximum(per_input, 0.0).mean(axis=-1)


def mutual_information(sample_probs):
    """Mutual information between the prediction and the sample, averaged over inputs:
    ``mean_i max(0, H(mean_s p[s, i]) - mean_s H(p[s, i]))`` in nats, where ``H`` is the
    Shannon entropy over classes (``0 log 0 = 0``). This is the epistemic part of the
    predictive entropy; 0 when all samples agree, at most ``log min(S, C)``. The clamp at
    0 only removes rounding error (the difference is never negative in exact arithmetic).

    Args:
        sample_probs: ``(S, n, C)`` predictive probabilities, one ``(n, C)`` slice per
            posterior sample (or ensemble member); ``(..., S, n, C)`` for a batch.

    Returns:
        A float, or an array over the leading axes before ``S``.

    Raises:
        ValueError: naming ``sample_probs`` for non-numeric input, fewer than 3 axes, NaN
            or inf, or rows that are not probabilities (within 1e-3).
    """
    sp = _as_float_array(sample_probs, "sample_probs")
    if sp.ndim < 3 or sp.shape[-3] < 1:
        raise ValueError(f"sample_probs must have shape (S, n, C) (or (..., S, n, C)) with S >= 1, "
                         f"got shape {sp.shape}")
    _check_probs(sp, "sample_probs")
    return _out(_mutual_information(sp))


def pair_mutual_information(probs_a, probs_b) -> float:
    """Sec. 5.1 of Laurent et al. (2024) (functional collapse): the mutual information of
    the two-member ensemble of two checkpoints, i.e. the Jensen-Shannon divergence (nats)
    of their predictions, averaged over inputs: :func:`mutual_information` of
    ``stack([probs_a, probs_b])``. Symmetric; 0 for identical predictions, ``log 2`` when
    they are one-hot on different classes at every input.

    Args:
        probs_a: ``(n, C)`` predictive probabilities of one checkpoint.
        probs_b: ``(n, C)`` predictive probabilities of the other, on the same inputs.

    Returns:
        A float in ``[0, log 2]``.

    Raises:
        ValueError: naming ``probs_a`` or ``probs_b`` for a shape that is not ``(n, C)``,
            different shapes, NaN or inf, or rows that are not probabilities.
    """
    arrays = [_probs_of_shape(probs_a, "probs_a", "n, C"), _probs_of_shape(probs_b, "probs_b", "n, C")]
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(f"probs_a and probs_b must have the same shape (n, C), got {arrays[0].shape} "
                         f"and {arrays[1].shape}")
    return mutual_information(_np.stack(arrays))


_PAIR_CHUNK_BYTES = 1 << 25  # default memory for one chunk of pairs (32 MiB of float64)


def pairwise_mutual_information(member_probs, pairs, chunk_size: int | None = None) -> _np.ndarray:
    """:func:`pair_mutual_information` for many pairs of members at once:
    ``out[p] = pair_mutual_information(member_probs[i], member_probs[j])`` with
    ``(i, j) = pairs[p]``.

    The pairs are processed ``chunk_size`` at a time, so at most a
    ``(chunk_size, 2, n, C)`` gather of ``member_probs`` exists at any moment, never the
    whole ``(P, 2, n, C)``.

    Args:
        member_probs: ``(M, n, C)`` predictive probabilities of ``M`` checkpoints.
        pairs: ``(P, 2)`` integer member indices in ``[0, M)`` (``P`` may be 0; a pair
            ``(i, i)`` gives 0).
        chunk_size: pairs per chunk, a positive integer; ``None`` picks the largest
            chunk whose gather fits in 32 MiB (at least 1).

    Returns:
        A ``(P,)`` float64 numpy array.

    Raises:
        ValueError: naming ``member_probs``, ``pairs`` or ``chunk_size`` when invalid.
    """
    mp = _probs_of_shape(member_probs, "member_probs", "M, n, C")
    M, n, C = mp.shape
    idx = _np.asarray(pairs)
    if idx.size == 0 and idx.ndim in (1, 2):
        idx = idx.reshape(0, 2).astype(_np.int64)
    if idx.ndim != 2 or idx.shape[1] != 2:
        raise ValueError(f"pairs must have shape (P, 2), got shape {idx.shape}")
    if idx.dtype == bool or not _np.issubdtype(idx.dtype, _np.integer):
        raise ValueError(f"pairs must hold integer member indices, got dtype {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= M):
        raise ValueError(f"pairs must lie in [0, {M}) for {M} members, got values in [{idx.min()}, {idx.max()}]")
    if chunk_size is None:
        chunk = max(1, _PAIR_CHUNK_BYTES // (2 * n * C * 8))
    else:
        chunk = positive_int(chunk_size, "chunk_size")
    out = _np.empty(idx.shape[0])
    for start in range(0, idx.shape[0], chunk):
        out[start:start + chunk] = _mutual_information(mp[idx[start:start + chunk]])
    return out
