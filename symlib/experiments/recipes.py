"""The papers' optimisers as optax transformations, their learning-rate drops kept in epochs.

The papers give their recipes in epochs (Laurent et al.: SGD at 0.04, halved at epochs 15
and 30 of 60); optax schedules count optimisation steps. A :class:`StepDecay` holds a
recipe's numbers in epochs, gives the rate of every epoch (the learning-rate curves the
chapters plot, :meth:`StepDecay.at_epoch`) and the optax schedule for a number of steps
per epoch (:meth:`StepDecay.schedule`). The builders below return the optimisers.

A config that holds an optax transformation is hashed by the transformation's identity
(:class:`~symlib.inference.training.TrainConfig`), so every builder is memoised: the same
recipe and step count give the same object, and a config built twice reuses the loop
compiled for the first.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import optax


class StepDecay(NamedTuple):
    """A learning rate multiplied by ``factor`` at the start of each epoch of ``milestones``.

    Attributes:
        learning_rate: the rate of the first epoch.
        milestones: increasing (0-based) epochs at which the rate is multiplied by ``factor``.
        factor: the factor of every milestone.
    """

    learning_rate: float
    milestones: tuple[int, ...] = ()
    factor: float = 0.5

    def at_epoch(self, epoch: int) -> float:
        """The rate during the (0-based) ``epoch``: ``learning_rate * factor**k``, ``k`` the
        number of milestones ``<= epoch``."""
        return self.learning_rate * self.factor ** sum(epoch >= m for m in self.milestones)

    def schedule(self, steps_per_epoch: int) -> optax.Schedule:
        """The optax schedule of the rate over optimisation steps: each milestone at step
        ``milestone * steps_per_epoch``."""
        return optax.piecewise_constant_schedule(self.learning_rate,
                                                 {int(m) * steps_per_epoch: self.factor for m in self.milestones})


@functools.cache
def constant_adam(learning_rate: float) -> optax.GradientTransformation:
    """Adam at a constant rate (Xiao et al.'s MAP training, Bayes by backprop): ``optax.adam(learning_rate)``."""
    return optax.adam(learning_rate)


@functools.cache
def constant_sgd(learning_rate: float, momentum: float = 0.0) -> optax.GradientTransformation:
    """SGD at a constant rate (Laurent et al.'s SWAG phase), with ``momentum`` (0: none)."""
    return optax.sgd(learning_rate, momentum=momentum or None)


@functools.cache
def step_adam(decay: StepDecay, steps_per_epoch: int) -> optax.GradientTransformation:
    """Adam on the step decay ``decay`` (``steps_per_epoch`` optimisation steps per epoch)."""
    return optax.adam(decay.schedule(steps_per_epoch))


@functools.cache
def step_sgd(decay: StepDecay, steps_per_epoch: int, momentum: float = 0.0,
             nesterov: bool = False) -> optax.GradientTransformation:
    """SGD on the step decay ``decay``, with ``momentum`` (0: none), Nesterov's if ``nesterov``."""
    return optax.sgd(decay.schedule(steps_per_epoch), momentum=momentum or None, nesterov=nesterov)


@functools.cache
def cosine_sgd(learning_rate: float, total_steps: int, momentum: float = 0.0,
               nesterov: bool = False) -> optax.GradientTransformation:
    """SGD with cosine annealing from ``learning_rate`` to 0 over ``total_steps`` steps (at least 1)."""
    return optax.sgd(optax.cosine_decay_schedule(learning_rate, max(1, total_steps)), momentum=momentum or None,
                     nesterov=nesterov)


@functools.cache
def ramp_sgd(start: float, learning_rate: float, ramp_steps: int,
             momentum: float = 0.0) -> optax.GradientTransformation:
    """SGD whose rate moves linearly from ``start`` to ``learning_rate`` over ``ramp_steps`` steps, then stays
    (the SWAG phase after a ResNet's training; ``ramp_steps = 0``: :func:`constant_sgd`)."""
    if not ramp_steps:
        return constant_sgd(learning_rate, momentum)
    return optax.sgd(optax.linear_schedule(start, learning_rate, ramp_steps), momentum=momentum or None)
