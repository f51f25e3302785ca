"""Tests for the uncertainty metrics of symlib.evaluation.metrics (Laurent et al. 2024):
OOD detection (AUPR, FPR95, cross-checked against scikit-learn), the mutual information of
samples and of pairs of checkpoints (Sec. 5.1), and an independent check of ECE."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_curve

from symlib.evaluation import (
    ece,
    fpr95,
    mutual_information,
    ood_aupr,
    pair_mutual_information,
    pairwise_mutual_information,
)


def _probs(rng, n, C, conc=1.0):
    return rng.dirichlet(np.full(C, conc), size=n)


def _tied_probs(rng, n, C, levels):
    """Rows whose maximum probability takes one of a few values (many exact ties)."""
    top = rng.choice(levels, size=n)
    rest = (1.0 - top) / (C - 1)
    out = np.repeat(rest[:, None], C, axis=1)
    out[np.arange(n), rng.integers(0, C, size=n)] = top
    return out


def _sklearn_reference(pid, pood):
    y = np.r_[np.zeros(len(pid)), np.ones(len(pood))]
    score = -np.r_[pid.max(axis=1), pood.max(axis=1)]
    ap = average_precision_score(y, score)
    fpr, tpr, _ = roc_curve(y, score, drop_intermediate=False)
    return ap, fpr[np.argmax(tpr >= 0.95)]


def _make_cases():
    rng = np.random.default_rng(0)
    yield _probs(rng, 200, 10), _probs(rng, 150, 10, conc=0.3)  # continuous scores
    yield _probs(rng, 3, 4), _probs(rng, 2, 4)  # small sizes
    yield _probs(rng, 1, 3), _probs(rng, 1, 3)
    levels = np.array([0.4, 0.55, 0.7, 0.9, 1.0])
    yield _tied_probs(rng, 120, 5, levels), _tied_probs(rng, 80, 5, levels)  # many ties
    yield _tied_probs(rng, 7, 3, levels[:2]), _tied_probs(rng, 20, 3, levels[:2])  # 20 OOD: 95% is exactly 19
    row = np.array([[0.5, 0.3, 0.2]])
    yield np.repeat(row, 30, axis=0), np.repeat(row, 10, axis=0)  # all identical rows
    for n_id, n_ood in [(5, 1), (2, 9), (13, 40)]:
        yield _tied_probs(rng, n_id, 4, levels[:3]), _probs(rng, n_ood, 4)


_CASES = list(_make_cases())


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_aupr_and_fpr95_match_sklearn(case):
    pid, pood = _CASES[case]
    ap, fpr = _sklearn_reference(pid, pood)
    assert ood_aupr(pid, pood) == pytest.approx(ap, abs=1e-12)
    assert fpr95(pid, pood) == pytest.approx(fpr, abs=1e-12)
    # float32 input: the float64 conversion keeps its ties
    p32, q32 = pid.astype(np.float32), pood.astype(np.float32)
    ap32, fpr32 = _sklearn_reference(p32.astype(np.float64), q32.astype(np.float64))
    assert ood_aupr(p32, q32) == pytest.approx(ap32, abs=1e-12)
    assert fpr95(p32, q32) == pytest.approx(fpr32, abs=1e-12)


def test_ties_are_one_threshold():
    # 2 ID rows and 2 OOD rows, all with max prob 0.5: one threshold flags all of them
    pid = np.array([[0.5, 0.5], [0.5, 0.5], [0.9, 0.1]])
    pood = np.array([[0.5, 0.5], [0.5, 0.5]])
    # thresholds: {max 0.5}: TP 2, FP 2 -> R = 1, P = 1/2; then {0.9}: no recall gain
    assert ood_aupr(pid, pood) == pytest.approx(0.5)
    # the 95% point lies inside the tie group: both tied ID rows count, FPR = 2/3
    assert fpr95(pid, pood) == pytest.approx(2 / 3)


def test_fpr95_counts_exactly_95_percent_as_reached():
    # 20 OOD inputs with distinct confidences 0.50 .. 0.69; one ID input between the 19th
    # and 20th least confident: 19 / 20 OOD are flagged before it, so FPR95 = 0
    c_ood = 0.50 + 0.01 * np.arange(20)
    pood = np.stack([c_ood, 1 - c_ood], axis=1)
    pid = np.array([[0.685, 0.315], [0.99, 0.01]])
    assert fpr95(pid, pood) == 0.0
    assert fpr95(pid, pood) == _sklearn_reference(pid, pood)[1]
    # with 21 OOD inputs, 19 flagged is below 95%: the ID input at 0.685 counts
    pood21 = np.concatenate([pood, [[0.695, 0.305]]])
    assert fpr95(pid, pood21) == 0.5


def test_perfect_and_uninformative_detectors():
    rng = np.random.default_rng(1)
    confident = np.eye(4)[rng.integers(0, 4, size=50)] * 0.96 + 0.01
    unsure = _probs(rng, 30, 4, conc=50.0)  # max prob well below 0.97, the confident rows' maximum
    assert ood_aupr(confident, unsure) == 1.0
    assert fpr95(confident, unsure) == 0.0
    # reversed roles: every ID input is flagged before any OOD one
    assert fpr95(unsure, confident) == 1.0
    # identical distributions: AUPR ~ the OOD fraction
    n_id, n_ood = 4000, 1000
    p = _probs(rng, n_id + n_ood, 5)
    assert ood_aupr(p[:n_id], p[n_id:]) == pytest.approx(n_ood / (n_id + n_ood), abs=0.03)
    # exactly so when every input has the same score
    assert ood_aupr(np.full((n_id, 5), 0.2), np.full((n_ood, 5), 0.2)) == pytest.approx(0.2)


def test_ood_errors_name_the_argument():
    rng = np.random.default_rng(2)
    pid, pood = _probs(rng, 5, 3), _probs(rng, 4, 3)
    for f in (ood_aupr, fpr95):
        with pytest.raises(ValueError, match="probs_id must have shape"):
            f(pid[0], pood)
        with pytest.raises(ValueError, match="probs_ood must have shape"):
            f(pid, np.stack([pood, pood]))
        with pytest.raises(ValueError, match="probs_id and probs_ood must have the same number of classes"):
            f(pid, _probs(rng, 4, 5))
        with pytest.raises(ValueError, match="rows of probs_ood must sum to 1"):
            f(pid, pood * 2)
        with pytest.raises(ValueError, match=r"probs_id must hold probabilities in \[0, 1\]"):
            f(pid - 0.5, pood)
        with pytest.raises(ValueError, match="probs_ood contains NaN"):
            f(pid, np.where(np.eye(4, 3) > 0, np.nan, pood))
        with pytest.raises(ValueError, match="probs_id needs at least one test point"):
            f(np.zeros((0, 3)), pood)


# --------------------------------------------------------------------------- mutual information


def test_mi_identical_samples_and_disagreeing_one_hots():
    rng = np.random.default_rng(3)
    p = _probs(rng, 20, 6)
    assert mutual_information(np.stack([p, p, p])) == pytest.approx(0.0, abs=1e-12)
    assert mutual_information(p[None]) == pytest.approx(0.0, abs=1e-12)
    a = np.eye(3)[[0, 1, 2, 0]]
    b = np.eye(3)[[1, 2, 0, 2]]
    assert mutual_information(np.stack([a, b])) == pytest.approx(np.log(2))  # 0 log 0 handled
    assert pair_mutual_information(a, b) == pytest.approx(np.log(2))
    assert isinstance(mutual_information(np.stack([a, b])), float)


def test_mi_hand_computed():
    # one input, 2 samples, 2 classes: p1 = (0.9, 0.1), p2 = (0.5, 0.5), mean = (0.7, 0.3)
    h = lambda *q: -sum(x * np.log(x) for x in q)  # noqa: E731
    expected = h(0.7, 0.3) - (h(0.9, 0.1) + h(0.5, 0.5)) / 2
    assert expected == pytest.approx(0.1017, abs=1e-4)
    sp = np.array([[[0.9, 0.1], [1.0, 0.0]], [[0.5, 0.5], [1.0, 0.0]]])  # second input: MI 0
    assert mutual_information(sp) == pytest.approx(expected / 2)
    assert pair_mutual_information(sp[0], sp[1]) == pytest.approx(expected / 2)
    # batched (..., S, n, C)
    batched = mutual_information(np.stack([sp, sp[:, [0, 0]]]))
    assert batched.shape == (2,) and np.allclose(batched, [expected / 2, expected])


def test_mi_never_negative_and_bounded():
    rng = np.random.default_rng(4)
    for S, C in [(2, 2), (5, 10), (30, 3)]:
        sp = _probs(rng, S * 40, C, conc=0.2).reshape(S, 40, C)
        mi = mutual_information(sp)
        assert 0.0 <= mi <= np.log(min(S, C)) + 1e-12
    # rounding cannot make nearly identical samples negative (clamped per input)
    p = _probs(rng, 50, 7)
    assert mutual_information(np.stack([p, p * (1 + 1e-15)])) >= 0.0


def test_pairwise_equals_loop_of_pairs():
    rng = np.random.default_rng(5)
    M, n, C = 6, 25, 4
    mp = _probs(rng, M * n, C, conc=0.5).reshape(M, n, C)
    pairs = np.array([(i, j) for i in range(M) for j in range(M)])
    loop = np.array([pair_mutual_information(mp[i], mp[j]) for i, j in pairs])
    for chunk in (None, 1, 7, 1000):
        out = pairwise_mutual_information(mp, pairs, chunk_size=chunk)
        assert out.shape == (len(pairs),) and np.allclose(out, loop, atol=1e-14)
    assert np.allclose(out[pairs[:, 0] == pairs[:, 1]], 0.0)
    assert pairwise_mutual_information(mp, np.zeros((0, 2), int)).shape == (0,)


def test_mi_errors_name_the_argument():
    rng = np.random.default_rng(6)
    p = _probs(rng, 5, 3)
    with pytest.raises(ValueError, match=r"sample_probs must have shape \(S, n, C\)"):
        mutual_information(p)
    with pytest.raises(ValueError, match="rows of sample_probs must sum to 1"):
        mutual_information(np.stack([p, 0.5 * p]))
    with pytest.raises(ValueError, match="sample_probs contains NaN"):
        mutual_information(np.stack([p, np.full_like(p, np.nan)]))
    with pytest.raises(ValueError, match="probs_a must have shape"):
        pair_mutual_information(p[0], p)
    with pytest.raises(ValueError, match="probs_a and probs_b must have the same shape"):
        pair_mutual_information(p, p[:4])
    with pytest.raises(ValueError, match="probs_b must hold probabilities"):
        pair_mutual_information(p, p - 0.6)
    mp = np.stack([p, p, p])
    with pytest.raises(ValueError, match="member_probs must have shape"):
        pairwise_mutual_information(p, [[0, 1]])
    with pytest.raises(ValueError, match=r"pairs must have shape \(P, 2\)"):
        pairwise_mutual_information(mp, [0, 1, 2])
    with pytest.raises(ValueError, match="pairs must hold integer"):
        pairwise_mutual_information(mp, [[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"pairs must lie in \[0, 3\)"):
        pairwise_mutual_information(mp, [[0, 3]])
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        pairwise_mutual_information(mp, [[0, 1]], chunk_size=0)


# --------------------------------------------------------------------------- ECE, independently


def test_ece_matches_a_direct_computation():
    """ECE (15 equal-width bins (b/15, (b+1)/15], top-label confidence, L1, weighted by bin
    counts) recomputed with a plain loop over bins."""
    rng = np.random.default_rng(7)
    n, C, B = 500, 10, 15
    probs = _probs(rng, n, C, conc=0.1)
    probs[:20] = np.eye(C)[rng.integers(0, C, size=20)]  # confidences of exactly 1
    labels = np.where(rng.random(n) < 0.7, probs.argmax(axis=1), rng.integers(0, C, size=n))
    conf = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    expected = 0.0
    for b in range(B):
        lo, hi = b / B, (b + 1) / B
        in_bin = (conf > lo) & (conf <= hi) if b else (conf <= hi)
        if in_bin.any():
            expected += in_bin.mean() * abs(correct[in_bin].mean() - conf[in_bin].mean())
    assert ece(probs, labels) == pytest.approx(expected, abs=1e-12)
