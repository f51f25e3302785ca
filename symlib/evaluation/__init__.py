"""symlib.evaluation."""
