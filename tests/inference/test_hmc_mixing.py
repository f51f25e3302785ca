"""HMC mixing with a fixed trajectory, and jitter (``HMCConfig.step_size_jitter``,
``HMCConfig.num_leapfrog_jitter``; Neal 2011, Sec. 5.4.2.2).

The target is a diagonal Gaussian with scales from 0.185 to 2, one of which is put at a
leapfrog resonance: with step size ``H`` and ``L`` steps, the leapfrog map of a coordinate
with standard deviation ``s`` rotates its phase by ``L * theta``, ``cos(theta) = 1 - H^2 / (2 s^2)``.
``SIGMA_RES`` makes that 99% of a full turn, so without jitter the coordinate comes back
almost where it started after every iteration (an AR(1) chain with autocorrelation about
cos(2 pi / 100) = 0.998). The other scales avoid the resonances ``L * theta ~ k pi``.

The check (:func:`_moments_ok`): for every coordinate, the sample mean and the sample mean
of ``x^2`` lie within ``Z_MAX`` Monte Carlo standard errors of the truth (0 and ``s^2``),
the standard errors computed from the true standard deviations (``s`` and ``sqrt(2) s^2``)
and each coordinate's own ESS (``symlib.inference.diagnostics.ess``); and every such ESS
is at least ``MIN_ESS_FRACTION`` of the draws, so that the standard errors are small
(with 4,000 draws, ESS >= 200: the variance within ``Z_MAX * sqrt(2) / sqrt(200) = 0.4 s^2``;
with jitter the resonant coordinate's ESS is about 14% of the draws, without it about 0.1%). ``Z_MAX = 4``: 12
quantities per run, so a correct sampler whose ESS is estimated well exceeds it with
probability about 12 * 6e-5 < 1e-3.
"""
from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symlib.inference.hmc as hmc
from symlib.inference.diagnostics import coordinate_diagnostics, ess
from symlib.inference.hmc import HMCConfig, run_hmc

H, L = 0.1, 20
SIGMA_RES = H / (2 * math.sin(0.99 * math.pi / L))  # L * theta = 0.99 * 2 pi
SCALES = np.array([0.185, 0.26, SIGMA_RES, 0.45, 1.0, 2.0], np.float32)
RES = 2  # index of the resonant coordinate
Z_MAX, MIN_ESS_FRACTION = 4.0, 0.05
CHAINS, SAMPLES = 4, 1000


def _run(seed, scales=SCALES, chains=CHAINS, samples=SAMPLES, step_size=H, **jitter):
    scales = jnp.asarray(scales)

    def logdensity(x):
        return -0.5 * jnp.sum(jnp.square(x / scales))

    key = jax.random.key(seed)
    init = jax.random.normal(jax.random.fold_in(key, 10_000), (chains, scales.size)) * scales  # from the target
    cfg = HMCConfig(step_size=step_size, num_leapfrog=L, num_burnin=50, num_samples=samples, thin=1,
                    num_chains=chains, **jitter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hmc.HMCWarning)
        return np.asarray(run_hmc(key, init, logdensity, cfg).samples, np.float64)


def _moment_errors(x, scales):
    """z-scores of the mean and of E[x^2] per coordinate, and the smallest ESS fraction."""
    scales = np.asarray(scales, np.float64)
    draws = x.shape[0] * x.shape[1]
    ess_m, ess_v = ess(x), ess(x**2)
    z_mean = x.mean(axis=(0, 1)) / (scales / np.sqrt(ess_m))
    z_var = ((x**2).mean(axis=(0, 1)) - scales**2) / (math.sqrt(2) * scales**2 / np.sqrt(ess_v))
    return z_mean, z_var, min(ess_m.min(), ess_v.min()) / draws


def _moments_ok(x, scales=SCALES) -> bool:
    z_mean, z_var, ess_frac = _moment_errors(x, scales)
    return bool(np.all(np.abs(z_mean) <= Z_MAX) and np.all(np.abs(z_var) <= Z_MAX) and ess_frac >= MIN_ESS_FRACTION)


@pytest.mark.parametrize("jitter", [dict(step_size_jitter=0.2), dict(num_leapfrog_jitter=4)], ids=["step", "steps"])
def test_jitter_every_coordinate_within_a_few_mcse(jitter):
    x = _run(0, **jitter)
    z_mean, z_var, ess_frac = _moment_errors(x, SCALES)
    assert _moments_ok(x), (z_mean, z_var, ess_frac)


def test_without_jitter_the_resonant_coordinate_fails_the_check_and_the_others_pass():
    x = _run(0)
    z_mean, z_var, ess_frac = _moment_errors(x, SCALES)
    assert not _moments_ok(x)
    # the resonant coordinate is the one that fails: its ESS collapses (about 1 per chain) ...
    assert min(ess(x[..., RES]), ess(x[..., RES] ** 2)) < 0.01 * x.shape[0] * x.shape[1]
    # ... and without it the same check passes: the check is not too strict for this sampler
    keep = np.arange(SCALES.size) != RES
    assert _moments_ok(x[..., keep], SCALES[keep]), (z_mean, z_var)
    # coordinate_diagnostics names it first
    assert coordinate_diagnostics({"x": x})["worst_ess"][0]["coordinate"] == f"x[{RES}]"


def test_no_jitter_is_the_default_and_gives_the_same_chain():
    """Explicit zeros are the default (no jitter) and give the same bits; any jitter changes
    the chain. (That the default is the pre-jitter sampler: next test.)"""
    base = _run(3, samples=3)
    np.testing.assert_array_equal(base, _run(3, samples=3, step_size_jitter=0.0, num_leapfrog_jitter=0))
    assert not np.array_equal(base, _run(3, samples=3, step_size_jitter=0.2))
    assert not np.array_equal(base, _run(3, samples=3, num_leapfrog_jitter=2))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="pinned values computed on CPU")
def test_default_chain_is_bitwise_the_pre_jitter_chain(xla_fully_optimized):
    """Pinned samples of symlib's sampler before jitter was added (CPU, float32, XLA fully
    optimized, as they were computed): no jitter takes the old code path bit for bit."""
    scales = jnp.asarray([0.3, 1.0, 2.0], jnp.float32)

    def logdensity(x):
        return -0.5 * jnp.sum((x / scales) ** 2)

    cfg = HMCConfig(step_size=0.4, num_leapfrog=5, num_burnin=6, num_samples=3, thin=2, num_chains=2)
    res = run_hmc(jax.random.key(42), jnp.asarray([0.1, -0.5, 1.0]), logdensity, cfg)
    expected = np.array([
        [[0.06280601024627686, 1.206107258796692, 1.0243810415267944],
         [0.041258804500103, 1.7933990955352783, 1.9286420345306396],
         [-0.06462699919939041, -0.6042473316192627, -1.7972735166549683]],
        [[-0.06011717766523361, 1.0999422073364258, -1.835719108581543],
         [-0.5065814852714539, 0.12506575882434845, -3.117110013961792],
         [-0.13857737183570862, -1.007706880569458, -2.547719717025757]]], np.float32)
    np.testing.assert_array_equal(np.asarray(res.samples), expected)


def _one_dim_run(seed=0):
    """sd 0.1 with step sizes 0.057..0.171 (jitter 0.5): trajectories whose accuracy depends
    strongly on the step size, so a step size tied to the accept/reject decision shows."""
    return _run(seed, scales=[0.1], chains=8, samples=2500, step_size=0.114, step_size_jitter=0.5)


def test_jittered_step_size_is_independent_of_the_acceptance_decision():
    x = _one_dim_run()
    assert _moments_ok(x, [0.1]), _moment_errors(x, [0.1])


@pytest.mark.skipif(jax.random.key_data(jax.random.fold_in(jax.random.key(5), 1)).tolist()
                    != jax.random.key_data(jax.random.split(jax.random.key(5))[1]).tolist(),
                    reason="this JAX's fold_in(k, 1) is not split(k)[1]")
def test_the_check_catches_a_jitter_drawn_from_blackjax_accept_key(monkeypatch):
    """The check above can fail: drawing the jitter from ``fold_in(k, 1)`` (BlackJAX's
    accept/reject key) biases the variance by about -13%, far more than its MCSE."""
    monkeypatch.setattr(hmc.kernel, "_jitter_keys", lambda k: (jax.random.fold_in(k, 1), jax.random.fold_in(k, 2)))
    jax.clear_caches()
    try:
        x = _one_dim_run()
    finally:
        monkeypatch.undo()
        jax.clear_caches()
    z_mean, z_var, _ = _moment_errors(x, [0.1])
    assert z_var[0] < -Z_MAX, z_var
