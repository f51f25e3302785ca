"""The papers' optimisers (symlib.experiments.recipes): schedules in steps, milestones in epochs."""
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from symlib.experiments.laurent.optunet import optunet_decay, optunet_train_config
from symlib.experiments.recipes import StepDecay, constant_adam, cosine_sgd, ramp_sgd, step_sgd


def _rates(opt: optax.GradientTransformation, steps: int) -> np.ndarray:
    """The step sizes of ``steps`` updates on a unit gradient (the learning rate for plain SGD)."""
    params = {"w": jnp.zeros(())}
    state, out = opt.init(params), []
    for _ in range(steps):
        upd, state = opt.update({"w": jnp.ones(())}, state, params)
        out.append(-float(upd["w"]))
    return np.asarray(out)


def test_laurent_optunet_recipe_halves_at_the_first_step_of_epochs_15_and_30():
    n_train = 64 * 3  # three steps an epoch
    cfg = optunet_train_config(n_train)
    rates = _rates(cfg.optimizer, 40 * 3)
    np.testing.assert_allclose(rates, [0.04] * 45 + [0.02] * 45 + [0.01] * 30, rtol=1e-6)
    decay = optunet_decay(60)
    assert decay == StepDecay(0.04, (15, 30), 0.5)
    # the rate of every epoch (the chapters' learning-rate curves) is the schedule's at the epoch's first step
    np.testing.assert_allclose([decay.at_epoch(e) for e in range(40)], rates[::3], rtol=1e-6)
    assert [decay.at_epoch(e) for e in (0, 14, 15, 29, 30, 59)] == [0.04, 0.04, 0.02, 0.02, 0.01, 0.01]
    assert optunet_decay(8).milestones == (2, 4) and optunet_decay(1).milestones == ()
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        optunet_decay(0)


def test_builders_are_memoised_so_a_config_built_twice_is_equal():
    assert optunet_train_config(640) == optunet_train_config(640)
    assert optunet_train_config(640).optimizer is not optunet_train_config(6400).optimizer  # 10 vs 100 steps an epoch
    assert constant_adam(1e-3) is constant_adam(1e-3) and cosine_sgd(0.2, 10) is cosine_sgd(0.2, 10)


def test_cosine_ramp_and_momentum_recipes():
    # cosine annealing starts at its rate and ends at 0 after all the steps
    np.testing.assert_allclose(_rates(cosine_sgd(0.2, 4), 5), [0.2, 0.2 * (1 + np.cos(np.pi / 4)) / 2, 0.1,
                                                              0.2 * (1 + np.cos(3 * np.pi / 4)) / 2, 0.0], atol=1e-7)
    # SWAG's ramp: linear from the start to the rate, then held
    np.testing.assert_allclose(_rates(ramp_sgd(0.01, 0.05, 4), 6), [0.01, 0.02, 0.03, 0.04, 0.05, 0.05], rtol=1e-6)
    assert ramp_sgd(0.01, 0.05, 0) is ramp_sgd(0.03, 0.05, 0)  # no ramp: the constant rate
    # momentum 0.9 (Nesterov's: g + 0.9 * trace) on a unit gradient
    np.testing.assert_allclose(_rates(step_sgd(StepDecay(0.1), 1, 0.9), 2), [0.1, 0.1 * 1.9], rtol=1e-6)
    np.testing.assert_allclose(_rates(step_sgd(StepDecay(0.1), 1, 0.9, True), 2), [0.1 * 1.9, 0.1 * 2.71], rtol=1e-6)
