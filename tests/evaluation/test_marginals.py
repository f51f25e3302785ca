import numpy as np
import pytest
from _helpers import random_mlp

from symlib.evaluation.marginals import first_last_pvalues, ks_pvalue, unit_weights
from symlib.core.models import unstack


def _nets(n, seed=0, skew=0.0):
    rng = np.random.default_rng(seed)
    nets = [random_mlp(rng, [6, 5, 4, 3]) for _ in range(n)]
    for net in nets:  # make the first unit of hidden layer 1 different (incoming and outgoing)
        net["dense_1"]["kernel"][:, 0] += skew
        net["dense_2"]["kernel"][0, :] += skew
    return nets


def test_unit_weights_picks_incoming_then_outgoing():
    nets = _nets(3)
    np.testing.assert_array_equal(unit_weights(nets, 0, 2)[1], nets[1]["dense_0"]["kernel"][:, 2])
    np.testing.assert_array_equal(unit_weights(nets, 2, -1)[2], nets[2]["dense_2"]["kernel"][-1, :])
    with pytest.raises(ValueError, match="layer"):
        unit_weights(nets, 3, 0)


def test_identical_marginals_give_uniform_pvalues_and_shifts_are_detected():
    same = np.concatenate([first_last_pvalues(_nets(200, seed=s), l) for s in range(5) for l in range(3)])
    assert 0.0 <= np.mean(same < 0.05) < 0.15
    moved = first_last_pvalues(_nets(200, seed=9, skew=1.0), 1)
    assert np.all(moved < 1e-6)
    with pytest.raises(ValueError, match="8 checkpoints"):
        first_last_pvalues(_nets(7), 0)


def test_unstack():
    rng = np.random.default_rng(0)
    nets = [random_mlp(rng, [3, 2, 1]) for _ in range(4)]
    stacked = {k: {kk: np.stack([n[k][kk] for n in nets]) for kk in nets[0][k]} for k in nets[0]}
    back = unstack(stacked, np.float32)
    assert len(back) == 4 and back[2]["dense_1"]["kernel"].dtype == np.float32
    np.testing.assert_allclose(back[3]["dense_0"]["bias"], nets[3]["dense_0"]["bias"], rtol=1e-6)
    with pytest.raises(ValueError, match="disagree"):
        unstack({"a": np.zeros((2, 3)), "b": np.zeros((3, 3))})


def test_unit_weights_names_bad_inputs():
    nets = _nets(2)  # layers dense_0 (6->5), dense_1 (5->4), dense_2 (4->3)
    with pytest.raises(ValueError, match="nets must hold at least one checkpoint"):
        unit_weights([], 0, 0)
    with pytest.raises(ValueError, match=r"layer must be in 0..2, got -1"):
        unit_weights(nets, -1, 0)
    with pytest.raises(ValueError, match=r"unit must index one of the 5 hidden units \(-5..4\), got 5"):
        unit_weights(nets, 0, 5)
    with pytest.raises(ValueError, match=r"unit must index one of the 4 hidden units \(-4..3\), got -5"):
        unit_weights(nets, 2, -5)
    with pytest.raises(ValueError, match="MLP nets\\[0\\] must have layers"):
        unit_weights([{"layer": nets[0]["dense_0"]}], 0, 0)
    with pytest.raises(ValueError, match="no hidden layer"):
        unit_weights([{"dense_0": nets[0]["dense_0"]}], 0, 0)


def test_ks_pvalue_is_scipy_s_and_silent_only_where_its_fallback_returns_one(monkeypatch):
    """scipy warns that its exact p-value 'failed' when it rounds to 1 (two samples of 5 with
    D = 1/5), and returns the asymptotic one, 1 as well: ks_pvalue drops that warning only."""
    import warnings

    from scipy import stats

    a = np.arange(5.0)
    with pytest.warns(RuntimeWarning, match="Exact calculation unsuccessful"):
        assert stats.ks_2samp(a, a + 1).pvalue == 1.0  # scipy's warning, which ks_pvalue drops
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ks_pvalue(a, a) == ks_pvalue(a, a + 1) == 1.0
        assert [ks_pvalue(a, a + k) for k in range(2, 7)] == [stats.ks_2samp(a, a + k).pvalue for k in range(2, 7)]
    assert ks_pvalue(a, a + 5) == pytest.approx(2 / 252)  # exact: 2 of the C(10, 5) orderings

    real = stats.ks_2samp

    def other_fallback(x, y):  # a fallback whose p-value is not 1 keeps scipy's warning
        warnings.warn("ks_2samp: Exact calculation unsuccessful. Switching to method=asymp.", RuntimeWarning)
        return real(x, y, method="asymp")

    monkeypatch.setattr(stats, "ks_2samp", other_fallback)
    with pytest.warns(RuntimeWarning, match="Exact calculation unsuccessful"):
        assert ks_pvalue(a, a + 5) < 1
