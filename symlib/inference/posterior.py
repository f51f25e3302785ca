"""Full-batch HMC as a fit, and :data:`FITS`, the table of every method's fit.

Every posterior approximation is ``fit_<method>(key, params0, model, data, config)``
(:mod:`symlib.inference.shape` gives the shape), written in its method's module beside the
loop it drives: :func:`~symlib.inference.training.fit_map` and
:func:`~symlib.inference.training.fit_ensemble`, :func:`~symlib.inference.vi.fit_vi`,
:func:`~symlib.inference.laplace.fit_laplace`, :func:`~symlib.inference.swag.fit_swag`,
:func:`~symlib.inference.sgmcmc.fit_sghmc`, :func:`~symlib.inference.dropout.fit_dropout`;
:func:`fit_hmc` (here) drives the HMC driver of :mod:`symlib.inference.hmc`, whose chunked,
resumable, sharded run is its own subpackage. Every experiment of the book, the benchmarks
and the README fit through this shape.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from symlib.core.checks import check_finite_tree
from symlib.inference._loop import check_state
from symlib.inference.dropout import fit_dropout
from symlib.inference.hmc import HMCConfig, make_logdensity, run_hmc
from symlib.inference.hmc.driver import per_chain_guess, reads_per_chain
from symlib.inference.laplace import fit_laplace
from symlib.inference.sgmcmc import fit_sghmc
from symlib.inference.shape import Data, Model, NonFiniteFitError, Samples, check_fit_inputs, first_non_finite
from symlib.inference.swag import fit_swag
from symlib.inference.training import fit_ensemble, fit_map
from symlib.inference.vi import fit_vi

__all__ = ["fit_hmc", "FITS"]

PyTree = Any


def fit_hmc(key: jax.Array, params0: PyTree, model: Model, data: Data, config: HMCConfig, *,
            prior_var: float = 1.0, temperature: float = 1.0, out_dir=None, init_per_chain: bool | None = None,
            progress: bool | None = None) -> Samples:
    """Full-batch HMC (BlackJAX; :func:`~symlib.inference.hmc.run_hmc`) on the tempered posterior
    ``N(0, prior_var I)`` prior times the likelihood ``model.likelihood`` of ``model.apply_fn``'s
    outputs to the power ``1 / temperature`` (:func:`~symlib.inference.hmc.make_logdensity`).

    ``params0`` is where the chains start: one network (every chain starts there) or one start
    per chain stacked on a leading axis of size ``config.num_chains`` (read so when every leaf
    has that leading axis and there are several chains; ``init_per_chain`` forces either).
    The model state (``model.state``) is held fixed at ``params0``'s values (evaluation mode)
    and carried by every draw; with per-chain starts it is taken from the first chain's.
    With ``out_dir`` the chains are stored there as they run and a stored run with the same
    identity (:func:`~symlib.inference.hmc.run_fingerprint`) is resumed, not recomputed.

    Returns:
        A :class:`Samples` with ``chains=True`` (leaves ``(chains, draws per chain, ...)``)
        and the run's :class:`~symlib.inference.hmc.HMCResult` as ``info``.

    Raises:
        ValueError: as :func:`~symlib.inference.hmc.run_hmc`; where ``params0`` was guessed to
            hold one start per chain, any ``ValueError`` or ``TypeError`` of the run is re-raised
            naming that reading and ``init_per_chain=False``.
        NonFiniteFitError: if a kept sample holds NaN or inf (naming the chain and the fix).
    """
    check_fit_inputs(model, data, config, HMCConfig)
    guessed = init_per_chain is None and reads_per_chain(params0, config.num_chains)
    per_chain = guessed if init_per_chain is None else bool(init_per_chain)
    with per_chain_guess(guessed, config.num_chains, "params0"):
        state = None
        if model.state:
            check_state(params0, model.state, "params0")
            state = {k: (jax.tree_util.tree_map(lambda a: a[0], params0[k]) if per_chain else params0[k])
                     for k in model.state}
        weights = {k: v for k, v in params0.items() if k not in model.state} if model.state else params0
        check_finite_tree(weights, "params0")
        logdensity = make_logdensity(data.x, data.y, prior_var=prior_var, temperature=temperature,
                                     apply_fn=model.apply_fn, state=state, likelihood=model.likelihood)
        result = run_hmc(key, weights, logdensity, config, out_dir=out_dir, progress=progress,
                         init_per_chain=per_chain)
    samples = result.samples
    for c, chain in enumerate(zip(*[np.asarray(a).reshape(config.num_chains, config.num_samples, -1)
                                    for a in jax.tree_util.tree_leaves(samples)])):
        bad = first_non_finite(np.concatenate(chain, axis=1))
        if bad is not None:
            raise NonFiniteFitError(f"fit_hmc: chain {c} became NaN or inf (first at kept sample {bad + 1} of "
                                    f"{config.num_samples}); lower the step size (config.step_size="
                                    f"{config.step_size!r}) or turn on its adaptation (adapt_step_size=True)")
    if state is not None:
        lead = (config.num_chains, config.num_samples)
        samples = {**samples, **jax.tree_util.tree_map(lambda a: np.broadcast_to(np.asarray(a), lead + np.shape(a)),
                                                       state)}
    return Samples(samples, chains=True, info=result)


#: method name -> its fit (the posterior approximations of Laurent et al.'s Table 1 and more)
FITS: dict[str, Callable[..., Any]] = {"map": fit_map, "ensemble": fit_ensemble, "vi": fit_vi, "laplace": fit_laplace,
                                       "swag": fit_swag, "sghmc": fit_sghmc, "hmc": fit_hmc, "dropout": fit_dropout}
