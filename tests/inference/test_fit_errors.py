"""SGHMC's temperature against the exact likelihood-tempered posterior of a linear-Gaussian model, fits
whose objective becomes non-finite while their parameters stay finite, and the dropout docstrings."""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import symlib.inference.dropout as dropout
from symlib.inference import (Data, Gaussian, Model, NonFiniteFitError, SGHMCConfig, TrainConfig, VIConfig,
                              fit_ensemble, fit_map, fit_modes, fit_sghmc, fit_vi)

LINEAR = Model(lambda p, x: x @ p["w"], likelihood=Gaussian(1.0))


def test_sghmc_tempers_the_likelihood_only():
    """y = x w + N(0, 1) noise with x = I (d examples, d weights) and prior N(0, I): at temperature T the
    prior times the likelihood to the power 1 / T is N(m, s^2 I) per weight with precision
    1 / s^2 = 1 + 1 / T and mean m = (y / T) s^2 (T = 0.25: s^2 = 0.2, m = 0.8 y; tempering the
    whole posterior would give s^2 = T / 2 = 0.125 and m = y / 2)."""
    d, temperature = 64, 0.25
    y = np.random.default_rng(0).normal(size=d).astype(np.float32)
    var = 1.0 / (1.0 + 1.0 / temperature)
    cfg = SGHMCConfig(step_size=0.05, epochs=20_000, batch_size=d, num_samples=400, friction=0.1,
                      momentum_refresh=100, temperature=temperature)
    w = np.asarray(fit_sghmc(jax.random.key(0), {"w": jnp.zeros(d)}, LINEAR, Data(np.eye(d, dtype=np.float32), y),
                             cfg).samples["w"])
    assert abs(np.mean(w.var(axis=0)) / var - 1.0) < 0.08, np.mean(w.var(axis=0))
    slope = np.polyfit(y, w.mean(axis=0), 1)[0]
    assert abs(slope - var / temperature) < 0.05, slope


def test_sghmc_takes_a_temperature_with_the_hyper_prior():
    """The Gibbs draw of the prior precision sees the prior only, so tempering the likelihood leaves it valid."""
    d = 8
    cfg = SGHMCConfig(step_size=0.01, epochs=4, batch_size=d, num_samples=2, temperature=0.5, prior_gamma=(10.0, 10.0))
    post = fit_sghmc(jax.random.key(0), {"w": jnp.zeros(d)}, LINEAR, Data(np.eye(d, dtype=np.float32), np.ones(d)), cfg)
    assert post.samples["w"].shape == (2, d)


def _overflowing():
    """Targets so large that the Gaussian log-likelihood overflows float32 while its gradient and
    Adam's steps stay finite: the objective is inf with finite parameters."""
    x = np.random.default_rng(1).normal(size=(32, 2)).astype(np.float32)
    return Data(x, np.full(32, 1e20, np.float32))


def test_a_non_finite_elbo_is_an_error_even_with_finite_parameters():
    cfg = VIConfig(epochs=3, batch_size=16, optimizer=optax.adam(1e-3))
    with pytest.raises(NonFiniteFitError, match=r"fit_vi: the ELBO became NaN or inf \(the loss was first non-finite "
                                                r"at epoch 1\)"):
        fit_vi(jax.random.key(0), {"w": jnp.zeros(2)}, LINEAR, _overflowing(), cfg)
    modes = {"w": jnp.zeros((2, 2))}
    with pytest.raises(NonFiniteFitError, match=r"fit_modes \(VI, mode 0\): the ELBO became NaN or inf"):
        fit_modes(jax.random.key(0), modes, LINEAR, _overflowing(), cfg)


def test_a_non_finite_loss_is_an_error_even_with_finite_parameters():
    cfg = TrainConfig(epochs=2, batch_size=16, optimizer=optax.adam(1e-3))
    with pytest.raises(NonFiniteFitError, match=r"fit_map: the loss became NaN or inf \(the loss was first non-finite "
                                                r"at epoch 1\)"):
        fit_map(jax.random.key(0), {"w": jnp.zeros(2)}, LINEAR, _overflowing(), cfg)
    with pytest.raises(NonFiniteFitError, match=r"fit_ensemble: the members' loss became NaN or inf"):
        fit_ensemble(jax.random.key(0), {"w": jnp.zeros((2, 2))}, LINEAR, _overflowing(), cfg)


def test_the_dropout_docstrings_name_functions_that_exist():
    own = [obj for obj in vars(dropout).values() if getattr(obj, "__module__", None) == dropout.__name__]
    for obj in [dropout, *own]:
        name = getattr(obj, "__name__", obj)
        for ref in re.findall(r":func:`~?([\w.]+)`", obj.__doc__ or ""):
            owner, _, attr = ref.rpartition(".")
            target = dropout if not owner else __import__(owner, fromlist=[attr])
            assert hasattr(target, attr), f"{name}'s docstring names {ref}, which does not exist"
