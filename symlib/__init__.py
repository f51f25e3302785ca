"""symlib: weight-space symmetries of Bayesian neural networks, in JAX."""
__version__ = "0.1.0"
