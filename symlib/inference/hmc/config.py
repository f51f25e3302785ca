"""HMC settings and results: :class:`HMCConfig`, :class:`HMCResult`, the statistics recorded at
every iteration (:data:`STATS`), :data:`SAMPLER_VERSION` and the run's warnings and errors."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
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


class HMCResult:
    """Output of :func:`run_hmc`.

    ``samples``: pytree like the initial position with leading ``(num_chains, num_samples)``
    axes (numpy; loaded from ``out_dir`` on first access when the run was stored there).
    ``stats``: dict of ``(num_chains, num_iterations)`` arrays ``acceptance_rate``,
    ``is_divergent``, ``energy_error`` (burn-in included). ``step_size``: final step size
    per chain. ``config``: the :class:`HMCConfig`. ``out_dir``: where the run is stored, or ``None``.
    """

    def __init__(self, samples, stats, step_size, cfg: HMCConfig, out_dir: Path | None = None, like=None):
        self._samples, self.stats, self.step_size, self.config = samples, stats, np.asarray(step_size), cfg
        self.out_dir, self._like = out_dir, like

    @property
    def samples(self):
        """The kept samples (read from ``out_dir`` and checked against their checksums on first access)."""
        if self._samples is None:
            from symlib.inference.hmc.store import load_samples  # the store reads results of this module

            self._samples = load_samples(self.out_dir, like=self._like)
        return self._samples

    @property
    def num_iterations(self) -> int:
        """Burn-in plus sampling iterations of the config."""
        return self.config.num_iterations

    @property
    def num_burnin(self) -> int:
        """Burn-in iterations of the config."""
        return self.config.num_burnin

    @property
    def mean_acceptance(self) -> float:
        """Mean acceptance probability after burn-in, over chains and iterations."""
        return float(np.mean(self.stats["acceptance_rate"][:, self.num_burnin:]))

    @property
    def num_divergences(self) -> int:
        """Divergent transitions after burn-in, summed over chains."""
        return int(np.sum(self.stats["is_divergent"][:, self.num_burnin:]))

    @property
    def num_burnin_divergences(self) -> int:
        """Divergent transitions during burn-in, summed over chains."""
        return int(np.sum(self.stats["is_divergent"][:, : self.num_burnin]))

    def summary(self) -> dict[str, Any]:
        """Acceptance, divergences and step size in one dict.

        Returns:
            ``mean_acceptance``, ``num_divergences``, ``num_burnin_divergences``,
            ``step_size`` (list, one per chain), ``num_chains``, ``num_samples``, ``num_iterations``.
        """
        return {
            "mean_acceptance": self.mean_acceptance,
            "num_divergences": self.num_divergences,
            "num_burnin_divergences": self.num_burnin_divergences,
            "step_size": self.step_size.tolist(),
            "num_chains": self.config.num_chains,
            "num_samples": self.config.num_samples,
            "num_iterations": self.num_iterations,
        }

    def warning_messages(self) -> list[str]:
        """Human-readable problems with the run.

        Returns:
            One message per problem (acceptance after burn-in below 0.2 or above 0.99,
            divergent transitions); empty when the run looks fine.
        """
        msgs, acc, eps = [], self.mean_acceptance, _fmt_steps(self.step_size)
        n_iter = self.config.num_chains * self.config.num_samples * self.config.thin
        if acc < 0.2:
            msgs.append(f"mean acceptance after burn-in is {acc:.3f} (< 0.2) with step size {eps}: "
                        "the step size is probably too large; try a smaller one")
        elif acc > 0.99:
            msgs.append(f"mean acceptance after burn-in is {acc:.3f} (> 0.99) with step size {eps}: "
                        "the step size may be needlessly small (slow exploration); try a larger one")
        div, div_burn = self.num_divergences, self.num_burnin_divergences
        if div or (div_burn and not self.config.adapt_step_size):
            msgs.append(f"{div} of {n_iter} transitions after burn-in diverged ({div_burn} during burn-in) "
                        f"with step size {eps}: try a smaller step size")
        return msgs


def _fmt_steps(step_size: np.ndarray) -> str:
    vals = np.unique(np.round(np.asarray(step_size, float), 8))
    return f"{vals[0]:.4g}" if vals.size == 1 else f"{vals.min():.4g}..{vals.max():.4g}"
