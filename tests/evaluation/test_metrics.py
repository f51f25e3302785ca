"""Tests for the probability-based metrics of symlib.evaluation.metrics (agreement, TV, ...)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.evaluation.metrics import (
    accuracy,
    accuracy_from_probs,
    agreement,
    brier,
    ece,
    nll,
    nll_from_probs,
    total_variation,
)

# 3 test points, 2 classes; the third row of P is a tie (argmax -> class 0)
P = np.array([[0.9, 0.1], [0.4, 0.6], [0.5, 0.5]])
Q = np.array([[0.6, 0.4], [0.7, 0.3], [0.1, 0.9]])


def _dirichlet(rng, shape, C):
    return rng.dirichlet(np.ones(C), size=shape)


# --------------------------------------------------------------------------- agreement / TV


def test_agreement_hand_computed():
    # argmax P = (0, 1, 0), argmax Q = (0, 0, 1): only the first point agrees
    assert agreement(P, Q) == pytest.approx(1 / 3)
    assert agreement(Q, P) == pytest.approx(1 / 3)
    assert isinstance(agreement(P, Q), float)


def test_total_variation_hand_computed():
    # 0.5 * (0.3 + 0.3), 0.5 * (0.3 + 0.3), 0.5 * (0.4 + 0.4)
    assert total_variation(P, Q) == pytest.approx((0.3 + 0.3 + 0.4) / 3)
    assert total_variation(Q, P) == pytest.approx(total_variation(P, Q))


def test_identical_inputs():
    rng = np.random.default_rng(0)
    p = _dirichlet(rng, 50, 10)
    assert agreement(p, p) == 1.0
    assert total_variation(p, p) == 0.0
    assert agreement(jnp.asarray(p), p) == 1.0  # jax and numpy inputs


def test_tv_bounds_and_disjoint_support():
    rng = np.random.default_rng(1)
    for _ in range(5):
        p, q = _dirichlet(rng, 40, 5), _dirichlet(rng, 40, 5)
        tv = total_variation(p, q)
        assert 0.0 <= tv <= 1.0
    eye = np.eye(3)
    assert total_variation(eye, np.roll(eye, 1, axis=1)) == pytest.approx(1.0)
    assert agreement(eye, np.roll(eye, 1, axis=1)) == 0.0


def test_agreement_with_logits_equals_with_probs():
    rng = np.random.default_rng(2)
    la, lb = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
    pa, pb = jax.nn.softmax(la), jax.nn.softmax(lb)
    assert agreement(la, lb) == agreement(pa, pb)


def test_batched_leading_axes_broadcast():
    rng = np.random.default_rng(3)
    stack = _dirichlet(rng, (4, 20), 3)  # (S, n, C)
    ref = _dirichlet(rng, 20, 3)  # (n, C)
    ag = agreement(stack, ref)
    tv = total_variation(stack, ref)
    assert ag.shape == tv.shape == (4,)
    for s in range(4):
        assert ag[s] == agreement(stack[s], ref)
        assert tv[s] == pytest.approx(total_variation(stack[s], ref))


def test_pair_errors():
    with pytest.raises(ValueError, match="same test points"):
        agreement(P, Q[:2])
    with pytest.raises(ValueError, match="same test points"):
        total_variation(P, np.ones((3, 3)) / 3)
    with pytest.raises(ValueError, match="do not broadcast"):
        agreement(np.stack([P, P]), np.stack([Q, Q, Q]))
    with pytest.raises(ValueError, match="NaN"):
        agreement(np.where(P > 0.8, np.nan, P), Q)
    with pytest.raises(ValueError, match="NaN"):
        total_variation(P, np.where(Q > 0.8, np.nan, Q))
    with pytest.raises(ValueError, match="inf"):
        agreement(np.where(P > 0.8, np.inf, P), Q)
    with pytest.raises(ValueError, match="shape"):
        agreement(P[0], Q[0])
    with pytest.raises(ValueError, match="sum to 1"):
        total_variation(P * 0.5, Q)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        total_variation(P - 0.5, Q)


# --------------------------------------------------------------------------- accuracy / nll / brier / ece


def test_accuracy_and_nll_hand_computed():
    labels = np.array([0, 0, 1])
    # argmax P = (0, 1, 0): only the first is right
    assert accuracy_from_probs(P, labels) == pytest.approx(1 / 3)
    expected = -(np.log(0.9) + np.log(0.4) + np.log(0.5)) / 3
    assert nll_from_probs(P, labels) == pytest.approx(expected)


def test_nll_clipping():
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    labels = np.array([1, 0])
    eps = 1e-12
    assert nll_from_probs(probs, labels) == pytest.approx((-np.log(eps) - np.log(0.5)) / 2)
    assert nll_from_probs(probs, labels, eps=1e-3) == pytest.approx((-np.log(1e-3) - np.log(0.5)) / 2)
    assert nll_from_probs(probs, labels, eps=0.0) == np.inf
    with pytest.raises(ValueError, match="eps"):
        nll_from_probs(probs, labels, eps=1.5)


def test_consistent_with_logit_metrics():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(64, 5)).astype(np.float32)
    labels = rng.integers(0, 5, size=64)
    probs = jax.nn.softmax(jnp.asarray(logits))
    assert accuracy_from_probs(probs, labels) == pytest.approx(float(accuracy(logits, labels)))
    assert nll_from_probs(probs, labels) == pytest.approx(float(nll(logits, labels)), rel=1e-5)


def test_brier_hand_computed():
    assert brier(np.array([[0.9, 0.1]]), np.array([0])) == pytest.approx(0.02)
    assert brier(np.array([[0.0, 1.0]]), np.array([0])) == pytest.approx(2.0)
    # P with labels (0, 0, 1): 0.02, 0.72, 0.5
    assert brier(P, np.array([0, 0, 1])) == pytest.approx((0.02 + 0.72 + 0.5) / 3)


def test_ece_hand_computed():
    probs = np.array([[0.93, 0.07], [0.84, 0.16], [0.28, 0.72], [0.61, 0.39]])
    labels = np.array([0, 1, 1, 0])  # correct: 1, 0, 1, 1; confidences .93 .84 .72 .61
    # one point per bin with 10 bins
    assert ece(probs, labels, num_bins=10) == pytest.approx((0.07 + 0.84 + 0.28 + 0.39) / 4)
    # all in (0.5, 1] with 2 bins: |0.75 - 0.775|
    assert ece(probs, labels, num_bins=2) == pytest.approx(0.025)
    # perfectly calibrated one-hot predictions that are right
    assert ece(np.eye(3), np.arange(3)) == pytest.approx(0.0)
    batched = ece(np.stack([probs, probs]), labels, num_bins=10)
    assert batched.shape == (2,) and np.allclose(batched, 0.395)
    with pytest.raises(ValueError, match="num_bins"):
        ece(probs, labels, num_bins=0)


def test_label_errors():
    with pytest.raises(ValueError, match="labels must have shape"):
        accuracy_from_probs(P, np.array([0, 1]))
    with pytest.raises(ValueError, match="labels must lie"):
        nll_from_probs(P, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="integer"):
        brier(P, np.array([0.5, 1.0, 0.0]))
    with pytest.raises(ValueError, match="NaN"):
        accuracy_from_probs(np.full((3, 2), np.nan), np.array([0, 1, 0]))
    with pytest.raises(ValueError, match="sum to 1"):
        nll_from_probs(np.ones((3, 2)), np.array([0, 1, 0]))
    # float labels holding integers are accepted
    assert accuracy_from_probs(P, np.array([0.0, 0.0, 1.0])) == pytest.approx(1 / 3)


def test_messages_name_the_input():
    labels = np.array([0, 1, 0])
    for bad in (0, 2.5, True, None):
        with pytest.raises(ValueError, match=f"num_bins must be a positive integer, got {bad!r}"):
            ece(P, labels, num_bins=bad)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\) for 2 classes, got values in \[-1, 1\]"):
        brier(P, np.array([0, 1, -1]))
    with pytest.raises(ValueError, match=r"probs contains NaN or inf \(2 of 6 entries\)"):
        ece(np.where(np.eye(3, 2) > 0, np.inf, 0.5), labels)
    with pytest.raises(ValueError, match=r"q contains NaN or inf"):
        agreement(P, np.full_like(P, np.nan))
