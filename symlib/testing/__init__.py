"""symlib.testing: reference solvers for tests and benchmarks (plain Git Re-Basin loop,
generic min-mass solvers, the alignment timing sweep, brute-force MMD). Not needed to use the library.
Names are loaded on first use."""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "reference": ["reference_weight_matching", "min_mass_lbfgs", "min_mass_cvxpy", "random_gaussian_posterior",
                  "alignment_timings", "mmd2_brute_force"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
