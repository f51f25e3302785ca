"""Does HMC stay correct at a lower matrix-product precision? The measurements that decide
the precision :func:`~symlib.inference.hmc.run_hmc` uses on a GPU.

On an NVIDIA GPU a float32 matrix product can run on tensor cores in TF32 (10-bit mantissa)
or bfloat16 (7-bit), several times faster than in full float32. HMC is exact only if the
log density it accepts with and the gradients it integrates with are those of one function:
a rounding error in the log density of a sum over N = 50,000 examples shifts the energy
error of every proposal, and rounding in the gradient perturbs the trajectory. Both are
measured here on the same positions and the same random numbers, with JAX's
``jax.default_matmul_precision`` (``"highest"``: float32; ``"tensorfloat32"``;
``"bfloat16"``), against ``"highest"``:

- :func:`density_errors`: at given positions, the log density's absolute error (nats) and
  the gradient's relative error (``|g - g_ref| / |g_ref|``), and the seconds per gradient;
- :func:`precision_run`: the same :func:`~symlib.inference.hmc.run_hmc` (same key, starts
  and config, step size adapted during burn-in as a real run adapts it) at one precision: its
  acceptance, energy errors and divergences after burn-in, and its adapted step size;
- :func:`precision_study`: that run at every precision and, by :func:`study_of_runs` (which
  also joins runs made apart), the errors at the chains' starting positions and at
  ``"highest"``'s final positions;
- :func:`choose_precision`: the fastest precision whose sampler behaves as float32's
  (:data:`ACCEPTANCE_TOLERANCE`, :data:`DENSITY_TOLERANCE`).

On a CPU the precisions are the same computation (XLA's CPU backend computes float32
products in float32 whatever the setting): every error is 0, which the tests use.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from symlib.inference.hmc.config import HMCConfig, HMCWarning

#: the matrix-product precisions compared, the reference first (``jax.default_matmul_precision`` names)
PRECISIONS = ("highest", "tensorfloat32", "bfloat16")
#: a precision samples as float32 does if its mean acceptance after burn-in is within this
#: (absolute) of float32's, on the same chains and random numbers
ACCEPTANCE_TOLERANCE = 0.02
#: ... and its log density's largest error at the chains' positions is below this (nats): an
#: error of 0.1 nat changes a proposal's acceptance probability by about 10%
DENSITY_TOLERANCE = 0.1


def _check_precisions(precisions: Sequence[str]) -> tuple[str, ...]:
    precisions = tuple(precisions)
    if not precisions or precisions[0] != "highest":
        raise ValueError(f"precisions must start with the reference 'highest', got {precisions}")
    if len(set(precisions)) != len(precisions):
        raise ValueError(f"precisions must be distinct, got {precisions}")
    return precisions


def _value_and_grad_at(logdensity: Callable, positions, precision: str, repeats: int):
    """Log density and gradient at every position (leading axis), and seconds per gradient."""
    with jax.default_matmul_precision(precision):
        fn = jax.jit(jax.vmap(jax.value_and_grad(logdensity)))
        value, grad = jax.block_until_ready(fn(positions))  # compiled here, then timed
        t0 = time.perf_counter()
        for _ in range(repeats):
            jax.block_until_ready(fn(positions))
        seconds = (time.perf_counter() - t0) / max(repeats, 1)
    return np.asarray(value, np.float64), jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), grad), seconds


def _flat(tree, n: int) -> np.ndarray:
    return np.concatenate([np.reshape(leaf, (n, -1)) for leaf in jax.tree_util.tree_leaves(tree)], axis=1)


def density_errors(logdensity: Callable, positions, precisions: Sequence[str] = PRECISIONS,
                   repeats: int = 3) -> dict[str, dict[str, Any]]:
    """The log density and its gradient at ``positions`` at every precision, against the first.

    Args:
        logdensity: a function of one position (a pytree), e.g. from
            :func:`~symlib.inference.hmc.make_logdensity`.
        positions: positions stacked on a leading axis of every leaf.
        precisions: ``jax.default_matmul_precision`` names, the reference ``"highest"`` first.
        repeats: timed calls per precision (after one that compiles).

    Returns:
        ``precision -> {"logdensity_abs_error": per position (nats), "grad_rel_error": per
        position, "seconds_per_gradient": float}`` (the reference's errors are 0).

    Raises:
        ValueError: for precisions not starting with ``"highest"``, or a non-finite log
            density or gradient at the reference precision.
    """
    precisions = _check_precisions(precisions)
    n = int(np.shape(jax.tree_util.tree_leaves(positions)[0])[0])
    out, ref = {}, None
    for precision in precisions:
        value, grad, seconds = _value_and_grad_at(logdensity, positions, precision, repeats)
        flat = _flat(grad, n)
        if ref is None:
            if not (np.all(np.isfinite(value)) and np.all(np.isfinite(flat))):
                raise ValueError("the log density or its gradient is not finite at the given positions (float32)")
            ref = (value, flat)
        out[precision] = {
            "logdensity_abs_error": np.abs(value - ref[0]),
            "grad_rel_error": np.linalg.norm(flat - ref[1], axis=1) / np.maximum(np.linalg.norm(ref[1], axis=1), 1e-300),
            "seconds_per_gradient": seconds / n,
        }
    return out


def _after_burnin(stats: dict[str, np.ndarray], burnin: int) -> dict[str, np.ndarray]:
    return {k: np.asarray(v)[:, burnin:] for k, v in stats.items()}


def precision_run(key: jax.Array, init_params, logdensity: Callable, cfg: HMCConfig, precision: str) -> dict[str, Any]:
    """One run of the study: :func:`~symlib.inference.hmc.run_hmc` at ``precision``.

    Args:
        key: the run's key (the same for every precision of a study).
        init_params: the chains' starts, as :func:`~symlib.inference.hmc.run_hmc` takes them.
        logdensity: the target.
        cfg: the run's :class:`~symlib.inference.hmc.HMCConfig`.
        precision: a ``jax.default_matmul_precision`` name.

    Returns:
        ``acceptance``, ``abs_energy_error_mean``, ``abs_energy_error_max``, ``divergences``
        (after burn-in, over chains), ``step_size`` (per chain), ``seconds``, ``warnings`` (the
        run's :class:`~symlib.inference.hmc.HMCWarning` s as text, not raised: a low acceptance
        is a result here) and ``last``: the chains' final positions (leading chain axis).
    """
    from symlib.inference.hmc.driver import run_hmc

    with jax.default_matmul_precision(precision), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HMCWarning)
        t0 = time.perf_counter()
        res = run_hmc(key, init_params, logdensity, cfg, progress=False)
        seconds = time.perf_counter() - t0
    stats = _after_burnin(res.stats, cfg.num_burnin)
    energy = np.abs(stats["energy_error"])
    return {"acceptance": float(np.mean(stats["acceptance_rate"])), "abs_energy_error_mean": float(np.mean(energy)),
            "abs_energy_error_max": float(np.max(energy)), "divergences": int(np.sum(stats["is_divergent"])),
            "step_size": np.asarray(res.step_size, np.float64), "seconds": seconds,
            "warnings": [str(w.message) for w in caught if issubclass(w.category, HMCWarning)],
            "last": jax.tree_util.tree_map(lambda a: np.asarray(a[:, -1]), res.samples)}


def precision_study(key: jax.Array, init_params, logdensity: Callable, cfg: HMCConfig,
                    precisions: Sequence[str] = PRECISIONS) -> dict[str, Any]:
    """The same HMC run at every precision (:func:`precision_run`), and the log density's and
    gradient's errors (:func:`study_of_runs`).

    Args:
        key: the runs' key (the same for every precision).
        init_params: the chains' starts, as :func:`~symlib.inference.hmc.run_hmc` takes them.
        logdensity: the target.
        cfg: the runs' :class:`~symlib.inference.hmc.HMCConfig` (a real run's settings with
            fewer iterations; with ``adapt_step_size`` every precision adapts its own step size).
        precisions: ``jax.default_matmul_precision`` names, ``"highest"`` first.

    Returns:
        As :func:`study_of_runs`.

    Raises:
        ValueError: as :func:`density_errors`.
    """
    precisions = _check_precisions(precisions)
    return study_of_runs(logdensity, init_params, cfg,
                         {p: precision_run(key, init_params, logdensity, cfg, p) for p in precisions})


def study_of_runs(logdensity: Callable, init_params, cfg: HMCConfig, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The study from its runs, which may have run apart (one a step of a GPU queue): the log
    density's and gradient's errors (:func:`density_errors`, timed on this machine) at the
    chains' starts and at ``"highest"``'s final positions.

    Args:
        logdensity: the target.
        init_params: the chains' starts.
        cfg: the runs' config.
        runs: ``precision -> ``:func:`precision_run`'s dict, ``"highest"`` first (only its
            ``last`` is needed; the others may leave it out).

    Returns:
        ``precisions`` (the names), ``at_start`` and ``at_end`` (:func:`density_errors`) and
        ``runs`` (each run without ``last``).

    Raises:
        ValueError: as :func:`density_errors`.
    """
    from symlib.inference.hmc.driver import chain_positions

    precisions = _check_precisions(list(runs))
    starts = chain_positions(init_params, cfg.num_chains, None)
    return {"precisions": list(precisions), "at_start": density_errors(logdensity, starts, precisions),
            "at_end": density_errors(logdensity, runs["highest"]["last"], precisions),
            "runs": {p: {k: v for k, v in r.items() if k != "last"} for p, r in runs.items()}}


def choose_precision(study: dict[str, Any]) -> tuple[str, list[str]]:
    """The fastest precision of ``study`` whose sampler behaves as float32's: mean acceptance
    within :data:`ACCEPTANCE_TOLERANCE` of ``"highest"``'s, no more divergences, and a log
    density error below :data:`DENSITY_TOLERANCE` at every start and end position.

    Returns:
        ``(precision, reasons)``: the chosen name (``"highest"`` when no other qualifies) and
        one line per precision saying why it qualifies or not.
    """
    ref = study["runs"]["highest"]
    reasons, ok = [], []
    for p in study["precisions"]:
        run = study["runs"][p]
        err = max(float(np.max(study["at_start"][p]["logdensity_abs_error"])),
                  float(np.max(study["at_end"][p]["logdensity_abs_error"])))
        d_acc = run["acceptance"] - ref["acceptance"]
        passes = abs(d_acc) <= ACCEPTANCE_TOLERANCE and run["divergences"] <= ref["divergences"] and err < DENSITY_TOLERANCE
        speed = study["at_start"]["highest"]["seconds_per_gradient"] / study["at_start"][p]["seconds_per_gradient"]
        reasons.append(f"{p}: acceptance {run['acceptance']:.3f} ({d_acc:+.3f} against float32), "
                       f"{run['divergences']} divergences, largest log-density error {err:.3g} nats, "
                       f"{speed:.2f}x float32's gradients per second: {'qualifies' if passes else 'rejected'}")
        if passes:
            ok.append((study["at_start"][p]["seconds_per_gradient"], p))
    return min(ok)[1] if ok else "highest", reasons
