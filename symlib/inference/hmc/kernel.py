"""The HMC kernel (:func:`jittered_hmc`, BlackJAX's HMC with optional jitter) and the compiled
blocks of iterations, with dual-averaging step-size adaptation, that the driver runs for
every chain at once."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp

from symlib.inference.hmc.target import replicated


# --------------------------------------------------------------------------------------
# The jitted transition block
# --------------------------------------------------------------------------------------


def _kinetic_energy(momentum) -> jax.Array:
    """0.5 |p|^2: the kinetic energy under the identity mass matrix."""
    return 0.5 * sum(jnp.sum(jnp.square(m)) for m in jax.tree_util.tree_leaves(momentum))


def _dimension(tree) -> int:
    return sum(leaf.size for leaf in jax.tree_util.tree_leaves(tree))


_JITTER_STREAM = 0x6A17E4B3
"""``fold_in`` data of an iteration's jitter key (see :class:`HMCConfig`). It must not be a
small integer: with JAX's partitionable threefry ``fold_in(k, i) == split(k, n)[i]``, and
BlackJAX's HMC step draws the momentum from ``split(k)[0]`` and the accept/reject uniform
from ``split(k)[1]``. A jitter drawn from ``fold_in(k, 1)`` would equal that uniform, make
the step size depend on the acceptance decision and bias the chain (about -13% on a
variance; ``tests/inference/test_hmc_mixing.py`` checks this)."""


def _jitter_keys(key) -> tuple[jax.Array, jax.Array]:
    """The keys of an iteration's step-size and step-count draws, from its key ``key``."""
    key_eps, key_steps = jax.random.split(jax.random.fold_in(key, _JITTER_STREAM))
    return key_eps, key_steps


def _jittered(key, eps, *, num_leapfrog, step_size_jitter, num_leapfrog_jitter):
    """The step size and number of leapfrog steps of one iteration whose key is ``key``:
    ``eps`` and ``num_leapfrog`` themselves without jitter (the code path of an unjittered
    sampler), else drawn as :class:`HMCConfig` says, from ``fold_in(key, _JITTER_STREAM)``,
    independently of the momentum and of the accept/reject decision."""
    if not (step_size_jitter or num_leapfrog_jitter):
        return eps, num_leapfrog
    key_eps, key_steps = _jitter_keys(key)
    if step_size_jitter:
        u = jax.random.uniform(key_eps, (), eps.dtype, -1.0, 1.0)
        eps = eps * (1.0 + step_size_jitter * u)
    if num_leapfrog_jitter:
        num_leapfrog = jax.random.randint(key_steps, (), num_leapfrog - num_leapfrog_jitter,
                                          num_leapfrog + num_leapfrog_jitter + 1)
    return eps, num_leapfrog


class JitteredHMC(NamedTuple):
    """A jittered HMC kernel in BlackJAX's style (:func:`jittered_hmc`).

    Attributes:
        init: ``init(position) -> state`` (a ``blackjax`` HMC state).
        step: ``step(key, state, step_size, inverse_mass_matrix=None) -> (state, info)``:
            one iteration with step size ``step_size`` before jitter (``info`` is
            BlackJAX's HMC info); the mass matrix is the identity
            (:func:`identity_mass`) unless given. A loop that makes many steps computes
            it once, outside the loop, as :func:`run_hmc` does: the compiled program, and
            so the rounding of every leapfrog step, depends on where it is made.
    """

    init: Callable
    step: Callable


def identity_mass(position) -> jax.Array:
    """The identity inverse mass matrix (its diagonal) of a position pytree."""
    return jnp.ones(_dimension(position), jax.tree_util.tree_leaves(position)[0].dtype)


def jittered_hmc(logdensity: Callable, num_leapfrog: int, *, step_size_jitter: float = 0.0,
                 num_leapfrog_jitter: int = 0) -> JitteredHMC:
    """The HMC kernel of :func:`run_hmc`, for a loop of one's own: identity mass matrix,
    ``num_leapfrog`` leapfrog steps, and per iteration a step size and a number of steps
    jittered as :class:`HMCConfig` says (uniform ``eps * (1 + step_size_jitter * U(-1, 1))``
    and ``num_leapfrog +- num_leapfrog_jitter``), drawn from the iteration's key
    independently of the momentum and of the accept/reject decision. Without jitter an
    iteration is exactly ``blackjax.hmc(logdensity, eps, ...).step(key, state)``.

    Args:
        logdensity: ``logdensity(position) -> scalar`` (e.g. a :class:`LogDensity`).
        num_leapfrog: leapfrog steps per iteration (before jitter).
        step_size_jitter: relative half-width of the step-size jitter, in ``[0, 1)``.
        num_leapfrog_jitter: half-width of the step-count jitter, below ``num_leapfrog``.

    Returns:
        A :class:`JitteredHMC` (``init``, ``step``); both can be jitted and vmapped.
    """

    def init(position):
        return blackjax.hmc.init(position, logdensity)

    def step(key, state, step_size, inverse_mass_matrix=None):
        eps, steps = _jittered(key, jnp.asarray(step_size), num_leapfrog=num_leapfrog,
                               step_size_jitter=step_size_jitter, num_leapfrog_jitter=num_leapfrog_jitter)
        if inverse_mass_matrix is None:
            inverse_mass_matrix = identity_mass(state.position)
        hmc = blackjax.hmc(logdensity, eps, inverse_mass_matrix=inverse_mass_matrix, num_integration_steps=steps)
        return hmc.step(key, state)

    return JitteredHMC(init, step)


def _chain_block(logdensity, state, da_state, step_size, chain_key, start, num_active, adapt, *, block_len,
                 num_leapfrog, target_accept, step_size_jitter=0.0, num_leapfrog_jitter=0):
    """HMC iterations ``start .. start + num_active - 1`` of one chain, in a scan of length
    ``block_len`` (iterations ``>= num_active`` are skipped by ``lax.cond``, so one compiled
    program serves every block length up to ``block_len``).

    With ``adapt`` the step size is ``exp(log_step_size)`` of the dual-averaging state, which
    is updated with each acceptance rate; otherwise ``step_size`` is used unchanged. Each
    iteration integrates with that step size and ``num_leapfrog`` steps, each jittered as
    :class:`HMCConfig` says when ``step_size_jitter`` / ``num_leapfrog_jitter`` is non-zero.
    Returns the last state, the dual-averaging state, the (unjittered) step size and the
    per-iteration (acceptance rate, divergence flag, energy error), of which the first
    ``num_active`` are real.
    """
    dtype = jnp.result_type(state.logdensity)
    inverse_mass = identity_mass(state.position)  # once per block, outside the scan (see JitteredHMC)
    kernel = jittered_hmc(logdensity, num_leapfrog, step_size_jitter=step_size_jitter,
                          num_leapfrog_jitter=num_leapfrog_jitter)
    _, da_update, _ = blackjax.adaptation.step_size.dual_averaging_adaptation(target_accept)

    def transition(carry, t):
        state, da, eps = carry
        eps = jnp.where(adapt, jnp.exp(da.log_step_size).astype(eps.dtype), eps)
        key = jax.random.fold_in(chain_key, t)
        new_state, info = kernel.step(key, state, eps, inverse_mass)
        acceptance = info.acceptance_rate.astype(dtype)
        energy_error = (info.energy - (-state.logdensity + _kinetic_energy(info.momentum))).astype(dtype)
        # the update computes in the acceptance's dtype (float64 under jax_enable_x64); the
        # carry keeps its own, or lax.cond's two branches would return different types
        da = jax.tree.map(lambda new, old: jnp.where(adapt, new, old).astype(old.dtype),
                          da_update(da, acceptance), da)
        return (new_state, da, eps), (acceptance, info.is_divergent, energy_error)

    def skip(carry, t):
        return carry, (jnp.zeros((), dtype), jnp.zeros((), bool), jnp.zeros((), dtype))

    def one_iteration(carry, i):
        return jax.lax.cond(i < num_active, transition, skip, carry, start + i)

    steps = jnp.arange(block_len, dtype=jnp.int32)
    (state, da_state, step_size), stats = jax.lax.scan(one_iteration, (state, da_state, step_size), steps)
    return state, da_state, step_size, stats


@partial(jax.jit, static_argnames=("block_len", "num_leapfrog", "target_accept", "step_size_jitter",
                                   "num_leapfrog_jitter"))
def run_block(logdensity, state, da_state, step_size, chain_keys, start, num_active, adapt, *, block_len,
               num_leapfrog, target_accept, step_size_jitter=0.0, num_leapfrog_jitter=0):
    """:func:`_chain_block` for every chain at once (``vmap`` over the leading chain axis)."""
    block = partial(_chain_block, block_len=block_len, num_leapfrog=num_leapfrog, target_accept=target_accept,
                    step_size_jitter=step_size_jitter, num_leapfrog_jitter=num_leapfrog_jitter)
    in_axes = (None, 0, 0, 0, 0, None, None, None)
    out = jax.vmap(block, in_axes=in_axes)(logdensity, state, da_state, step_size, chain_keys, start, num_active, adapt)
    return replicated(logdensity, out)


@jax.jit
def init_states(logdensity, positions):
    return replicated(logdensity, jax.vmap(jittered_hmc(logdensity, 1).init)(positions))


def init_dual_averaging(step_size: jax.Array, target_accept: float):
    da_init, _, _ = blackjax.adaptation.step_size.dual_averaging_adaptation(target_accept)
    da = jax.vmap(da_init)(step_size)
    return da._replace(step=jnp.asarray(da.step, jnp.int32))


def final_step_size(da_state) -> jax.Array:
    return jnp.exp(da_state.log_step_size_avg)
