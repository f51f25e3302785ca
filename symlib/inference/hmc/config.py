"""HMC settings and results: :class:`HMCConfig`, :class:`HMCResult`, the statistics recorded at
every iteration (:data:`STATS`), :data:`SAMPLER_VERSION` and the run's warnings and errors."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np




STATS = ("acceptance_rate", "is_divergent", "energy_error")

SAMPLER_VERSION = 1
"""Version of the sampler's mathematics. Bump it when the integrator, the step-size
adaptation, the momentum distribution or the thinning/burn-in logic changes, i.e. whenever
the same config, data, initial state and key would give a different chain. It is part of
every run's identity (:func:`run_fingerprint`), so a stored run of another sampler version
is never resumed."""


class HMCWarning(UserWarning):
    """Emitted after a run whose acceptance rate or divergences suggest a bad step size."""


class CorruptRunError(ValueError):
    """A file of a run stored by :func:`run_hmc` is missing, truncated, damaged or has no
    checksum. The message names the file and says how to recompute it."""


# --------------------------------------------------------------------------------------
# Configuration and results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HMCConfig:
    """HMC settings. ``num_samples`` is the number kept per chain, one every ``thin``
    iterations after ``num_burnin`` burn-in iterations. With ``adapt_step_size`` the step
    size is tuned by dual averaging towards ``target_accept`` during burn-in (starting from
    ``step_size``) and frozen afterwards.

    **Jitter** (Neal 2011, "MCMC using Hamiltonian dynamics", Sec. 5.4.2.2; Stan's
    ``stepsize_jitter``). With a fixed step size ``eps`` and a fixed number of leapfrog
    steps ``L``, a coordinate of a Gaussian posterior with standard deviation ``s`` whose
    trajectory length ``eps * L`` is close to a multiple of its period (about ``2 pi s``)
    comes back where it started after every iteration and barely moves; close to an odd
    multiple of the half period (``pi s``) it is only reflected, so its square (its
    variance) barely moves. Drawing the step size, or the number of steps, afresh at every
    iteration breaks this resonance:

    * ``step_size_jitter = j``: iteration ``t`` of a chain integrates with step size
      ``eps_t = eps * u``, ``u ~ Uniform[1 - j, 1 + j]`` (``eps`` the fixed or adapted
      step size; during adaptation the dual averaging still tunes ``eps`` from the
      acceptance rates of the jittered steps). The stored ``step_size`` is ``eps``.
    * ``num_leapfrog_jitter = J``: iteration ``t`` takes ``L_t ~ Uniform{L - J, ..., L + J}``
      leapfrog steps (so ``J < num_leapfrog``). On a GPU all chains wait for the longest
      trajectory of the iteration, so this costs up to ``L + J`` gradient evaluations.

    The draws use keys derived from the iteration's key ``k = fold_in(fold_in(key, c), t)``
    by ``fold_in(k, _JITTER_STREAM)``, a stream that BlackJAX's step never uses, so they are
    independent of the momentum and of the accept/reject decision (which still use ``k``,
    as without jitter). A run is still reproducible and resumable, and the jitter is part
    of the run's identity (it is a field of the config).

    **The default is no jitter** (``step_size_jitter = 0.0``, ``num_leapfrog_jitter = 0``):
    it is the sampler as Xiao et al. describe it (App. A: 500 leapfrog steps per
    iteration; no jitter is mentioned) and it gives bit for bit the chains of symlib before
    jitter existed, so stored runs keep their identity and are resumed. Turn jitter on
    (e.g. ``step_size_jitter=0.2``) when the posterior has scales that differ widely and
    ``L`` is fixed; :func:`symlib.inference.diagnostics.coordinate_diagnostics` shows the
    coordinates whose effective sample size collapses.

    Raises:
        ValueError: naming the field, for a non-positive or non-finite ``step_size``, counts
            below their minimum (``num_burnin >= 0``, the others ``>= 1``), a ``target_accept``
            outside (0, 1), ``adapt_step_size`` without burn-in, a ``step_size_jitter``
            outside [0, 1) or a ``num_leapfrog_jitter`` outside [0, ``num_leapfrog``).
    """

    step_size: float
    num_leapfrog: int
    num_burnin: int
    num_samples: int
    thin: int
    num_chains: int = 1
    adapt_step_size: bool = False
    target_accept: float = 0.8
    step_size_jitter: float = 0.0
    num_leapfrog_jitter: int = 0

    def __post_init__(self):
        _check_real(self.step_size, "step_size")
        if not self.step_size > 0:
            raise ValueError(f"step_size must be > 0, got {self.step_size}")
        for name, low in (("num_leapfrog", 1), ("num_burnin", 0), ("num_samples", 1), ("thin", 1), ("num_chains", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not isinstance(self.adapt_step_size, (bool, np.bool_)):
            raise ValueError(f"adapt_step_size must be a bool, got {self.adapt_step_size!r}")
        _check_real(self.target_accept, "target_accept")
        if not 0 < self.target_accept < 1:
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept}")
        if self.adapt_step_size and self.num_burnin == 0:
            raise ValueError("adapt_step_size needs burn-in iterations (num_burnin >= 1) to adapt during")
        _check_real(self.step_size_jitter, "step_size_jitter")
        if not 0 <= self.step_size_jitter < 1:
            raise ValueError(f"step_size_jitter must lie in [0, 1) (the step size is drawn from "
                             f"[(1 - j) eps, (1 + j) eps]), got {self.step_size_jitter}")
        jit_l = self.num_leapfrog_jitter
        if isinstance(jit_l, bool) or not isinstance(jit_l, (int, np.integer)) or not 0 <= jit_l < self.num_leapfrog:
            raise ValueError(f"num_leapfrog_jitter must be an integer in [0, num_leapfrog) = [0, {self.num_leapfrog}) "
                             f"(at least one leapfrog step per iteration), got {jit_l!r}")

    @property
    def num_iterations(self) -> int:
        """Burn-in plus sampling iterations."""
        return self.num_burnin + self.num_samples * self.thin

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain Python values.

        Returns:
            ``{field name: value}``, JSON-serialisable; ``HMCConfig(**cfg.to_dict()) == cfg``.
        """
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def identity_dict(self) -> dict[str, Any]:
        """The fields that identify a run: :meth:`to_dict` without the jitter fields when
        they are 0 (no jitter), so that a run without jitter keeps the identity it had
        before jitter existed.

        Returns:
            A JSON-serialisable dict of field values.
        """
        d = self.to_dict()
        for name in _JITTER_FIELDS:
            if d[name] == 0:
                del d[name]
        return d


_JITTER_FIELDS = ("step_size_jitter", "num_leapfrog_jitter")


def _check_real(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value
