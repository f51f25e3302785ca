"""`from <package> import *` works for every package of symlib: every name of its
``__all__`` exists (issue 46: symlib.inference listed names it did not import)."""
import importlib

import pytest

PACKAGES = ["symlib", "symlib.core", "symlib.data", "symlib.symmetry", "symlib.symmetry.derive",
            "symlib.symmetry.matching", "symlib.inference", "symlib.inference.hmc", "symlib.evaluation",
            "symlib.experiments"]


@pytest.mark.parametrize("package", PACKAGES)
def test_star_import(package):
    module = importlib.import_module(package)
    missing = [name for name in getattr(module, "__all__", []) if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"
    namespace = {}
    exec(f"from {package} import *", namespace)  # noqa: S102
    assert set(getattr(module, "__all__", namespace)) <= set(namespace)
