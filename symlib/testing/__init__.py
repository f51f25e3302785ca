"""symlib.testing."""
