"""Every package's export table: each name of ``__all__`` resolves, and, where the package lists its
names in an ``_EXPORTS`` table ({module: [names]}, loaded on first use by the package's ``__getattr__``),
each listed module exists and defines each name listed under it."""
import importlib
import subprocess
import sys
import types

import pytest

PACKAGES = ["symlib.core", "symlib.data", "symlib.evaluation", "symlib.inference", "symlib.inference.hmc", "symlib.symmetry",
            "symlib.symmetry.matching",
            "symlib.experiments", "symlib.experiments.laurent", "symlib.experiments.rossi",
            "symlib.experiments.xiao", "symlib.testing"]
#: package -> the names of its __all__ that are meant to be modules (none yet)
MODULES_IN_ALL: dict[str, set[str]] = {}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_of_all_resolves(package):
    pkg = importlib.import_module(package)
    names = list(pkg.__all__)
    assert len(names) == len(set(names)), f"{package}.__all__ lists twice: {sorted({n for n in names if names.count(n) > 1})}"
    modules = {n for n in names if isinstance(getattr(pkg, n), types.ModuleType)}
    assert modules == MODULES_IN_ALL.get(package, set()), f"{package}.__all__ names modules: {sorted(modules)}"


@pytest.mark.parametrize("package", [p for p in PACKAGES if hasattr(importlib.import_module(p), "_EXPORTS")])
def test_the_table_names_where_each_name_lives(package):
    pkg = importlib.import_module(package)
    listed = [name for names in pkg._EXPORTS.values() for name in names]
    assert len(listed) == len(set(listed)), f"{package}._EXPORTS lists a name under two modules"
    assert set(pkg.__all__) <= set(listed)
    renamed = getattr(pkg, "_RENAMED", {})
    for module, names in pkg._EXPORTS.items():
        mod = importlib.import_module(f"{package}.{module}")
        for name in names:
            own = renamed.get(name, name)
            assert hasattr(mod, own), f"{package}._EXPORTS: {mod.__name__} has no {own!r}"
            assert getattr(pkg, name) is getattr(mod, own), f"{package}.{name} is not {mod.__name__}.{own}"
    assert set(listed) <= set(dir(pkg))


@pytest.mark.parametrize("package", [p for p in PACKAGES if hasattr(importlib.import_module(p), "_EXPORTS")])
def test_unknown_names(package):
    pkg = importlib.import_module(package)
    assert not hasattr(pkg, "no_such_name") and not hasattr(pkg, "no.such") and not hasattr(pkg, "__no_such__")
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        pkg.no_such_name  # noqa: B018


def test_submodule_attributes_without_importing_them():
    """`symlib.inference.hmc` and the like work right after `import symlib.inference`, as when every
    submodule was imported eagerly."""
    code = ("import symlib.inference, symlib.data, sys; "
            "assert 'symlib.inference.hmc' not in sys.modules; "
            "assert symlib.inference.hmc.HMCConfig is symlib.inference.HMCConfig; "
            "assert symlib.data.mnist.load_mnist is symlib.data.load_mnist")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_library_packages_import_lazily():
    """Importing the library's packages imports none of their modules (nor JAX) but the export
    tables' helper `symlib.core.exports`; `symlib.data` stays JAX-free when used."""
    code = ("import sys, symlib.core, symlib.data, symlib.evaluation, symlib.inference, symlib.symmetry, symlib.testing; "
            "loaded = sorted(m for m in sys.modules if m.startswith(('symlib.', 'jax')) and m.count('.') > 1 "
            "and m != 'symlib.core.exports' or m == 'jax'); assert not loaded, loaded; "
            "symlib.data.load_mnist, symlib.data.load_cifar10, symlib.data.standardize; "
            "assert 'jax' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_name_listed_twice_is_refused():
    from symlib.core.exports import lazy_exports

    with pytest.raises(ValueError, match="'f' is exported from both 'a' and 'b'"):
        lazy_exports("pkg", {"a": ["f"], "b": ["g", "f"]}, {})
    names, getattr_, dir_ = lazy_exports("symlib.core", {"pytree": ["ravel"]}, ns := {})
    assert names == ["ravel"] and "ravel" in dir_() and getattr_("ravel") is ns["ravel"]


@pytest.mark.parametrize("package", PACKAGES)
def test_star_import_gives_every_name_of_all(package):
    namespace: dict = {}
    exec(f"from {package} import *", namespace)  # noqa: S102
    pkg = importlib.import_module(package)
    assert set(pkg.__all__) <= set(namespace), f"missing after import *: {sorted(set(pkg.__all__) - set(namespace))}"


def test_inference_face_is_the_shape_of_the_fits():
    """``symlib.inference`` exports the fits, their configurations and posteriors, and a few
    helpers (about 40 names); the loops behind the fits are private to their modules."""
    import symlib.inference as inference

    fits = {n for n in inference.__all__ if n.startswith("fit_")}
    assert fits == {f"fit_{m}" for m in inference.FITS} | {"fit_modes"}  # fit_modes: a method's fit, several modes
    assert len(inference.__all__) <= 45, sorted(inference.__all__)
    for loop in ("train_map", "train_map_many", "train_vi", "train_swag", "train_dropout", "laplace_posterior",
                 "run_sghmc", "train_many", "train_mlp", "train_mlp_vi", "train_ensemble"):
        assert not hasattr(inference, loop), loop
