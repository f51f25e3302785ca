"""symlib.inference."""
