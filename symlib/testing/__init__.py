"""symlib.testing: reference solvers for tests and benchmarks (plain Git Re-Basin loop,
generic min-mass solvers, the alignment timing sweep, brute-force MMD). Not needed to use the library."""
from symlib.testing.reference import (  # noqa: F401
    reference_weight_matching,
    min_mass_lbfgs,
    min_mass_cvxpy,
    random_gaussian_posterior,
    alignment_timings,
    mmd2_brute_force,
)

__all__ = [
    "reference_weight_matching",
    "min_mass_lbfgs",
    "min_mass_cvxpy",
    "random_gaussian_posterior",
    "alignment_timings",
    "mmd2_brute_force",
]
