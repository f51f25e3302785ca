"""symlib.inference.diagnostics against hand computations: split R-hat (BDA3), constant quantities,
float64 draws with a large offset, and the one HMC health summary."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.inference.diagnostics import coordinate_diagnostics, ess, rhat, summarize_hmc, with_diagnostics
from symlib.inference.hmc import HMCConfig, run_hmc


def _ar1(rng, rho, chains, n):
    x = np.empty((chains, n))
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + rng.normal(size=chains) * np.sqrt(1 - rho**2)
    return x


def _gelman_rubin(chains: list[list[float]]) -> float:
    """Gelman and Rubin's R-hat of a list of chains of equal length, written out term by term."""
    m, n = len(chains), len(chains[0])
    means = [sum(c) / n for c in chains]
    grand = sum(means) / m
    b = n / (m - 1) * sum((mu - grand) ** 2 for mu in means)
    w = sum(sum((v - mu) ** 2 for v in c) / (n - 1) for c, mu in zip(chains, means)) / m
    return (((n - 1) / n * w + b / n) / w) ** 0.5


def _split_by_hand(x: np.ndarray) -> float:
    """BDA3's split R-hat: every chain's first and last n // 2 draws as chains of their own."""
    half = x.shape[1] // 2
    pieces = [list(c[:half]) for c in x] + [list(c[x.shape[1] - half:]) for c in x]
    return _gelman_rubin(pieces)


@pytest.mark.parametrize("n", [200, 201])
def test_rhat_is_the_split_r_hat(n):
    x = _ar1(np.random.default_rng(0), 0.8, 3, n)
    np.testing.assert_allclose(rhat(x), _split_by_hand(x), rtol=1e-12)
    stacked = np.stack([x, 2.0 * x + 5.0], axis=-1)  # several quantities at once, each its own R-hat
    np.testing.assert_allclose(rhat(stacked), [_split_by_hand(x)] * 2, rtol=1e-10)


def test_rhat_sees_a_drift_that_every_chain_shares():
    rng = np.random.default_rng(1)
    x = _ar1(rng, 0.5, 4, 1000) + np.linspace(0.0, 10.0, 1000)  # the same trend in every chain
    assert _gelman_rubin([list(c) for c in x]) < 1.01  # the chains agree with each other...
    assert rhat(x) > 1.5  # ...but each half disagrees with the other


def test_a_constant_quantity_has_nan_rhat_and_zero_ess():
    for value in (0.1, 1000.3, 0.0, np.float32(0.1)):
        x = np.full((4, 100), value)
        assert np.isnan(rhat(x)), value
        assert ess(x) == 0.0, value
    mixed = np.random.default_rng(2).normal(size=(4, 100, 2))
    mixed[..., 1] = 0.7  # only the second quantity is constant
    r = rhat(mixed)
    assert np.isfinite(r[0]) and np.isnan(r[1])
    stuck = np.repeat(np.arange(4.0)[:, None], 100, axis=1)  # every chain constant, each elsewhere
    assert rhat(stuck) == np.inf


def test_float64_draws_with_a_large_offset_keep_their_spread():
    x = _ar1(np.random.default_rng(3), 0.5, 4, 1000) * 1e-4
    np.testing.assert_allclose(ess(x + 1000.0), ess(x), rtol=1e-3)
    np.testing.assert_allclose(rhat(x + 1000.0), _split_by_hand(x), rtol=1e-6)


def test_too_few_draws_for_a_split():
    with pytest.raises(ValueError, match="rhat needs at least 4 samples per chain, got 3"):
        rhat(np.zeros((2, 3)))
    x = np.random.default_rng(4).normal(size=(2, 3))
    assert np.isnan(with_diagnostics(x)["rhat"]) and np.isfinite(with_diagnostics(x)["ess"])
    out = coordinate_diagnostics({"a": x})
    assert np.isnan(out["rhat_max"]) and out["worst_rhat"] == []


def test_the_result_summary_is_summarize_hmc_plus_the_run_size():
    cfg = HMCConfig(step_size=40.0, num_leapfrog=5, num_burnin=2, num_samples=10, thin=1, num_chains=2)
    with pytest.warns(UserWarning):
        res = run_hmc(jax.random.key(0), jnp.ones(2), lambda p: -0.5 * jnp.sum(p**2), cfg)
    summary = res.summary()
    assert summary == {**summarize_hmc(res), "num_chains": 2, "num_samples": 10, "num_iterations": 12}
    assert len(summary["warnings"]) == 2
