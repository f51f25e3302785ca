"""symlib.symmetry."""
