"""One export table per package: names loaded on first use.

Every ``symlib`` package lists its public names once, in a table ``{module: [names]}``, and
:func:`lazy_exports` turns the table into the package's ``__all__``, its module
``__getattr__`` (PEP 562: a name is imported from its module when first used, then kept in
the package's namespace) and ``__dir__``. ``import symlib.data`` therefore imports no
submodule, and no JAX, until a name is used; a submodule not in the table (``symlib.data.mnist``)
is still reachable as an attribute.
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence

__all__ = ["lazy_exports"]


def lazy_exports(package: str, table: Mapping[str, Sequence[str]], namespace: dict,
                 renamed: Mapping[str, str] | None = None) -> tuple[list[str], Callable, Callable]:
    """``(__all__, __getattr__, __dir__)`` of a package from its export table.

    Args:
        package: the package's ``__name__``.
        table: module (relative to the package, dotted for a subpackage's module) -> the
            names the package exports from it.
        namespace: the package's ``globals()``: a loaded name is stored there, so it is
            looked up only once.
        renamed: exported name -> the module's own name, for the few names exported under
            another name.

    Returns:
        The package's ``__all__`` (the table's names in order), ``__getattr__`` and ``__dir__``.

    Raises:
        ValueError: if a name is listed twice.
    """
    module_of = {}
    for module, names in table.items():
        for name in names:
            if name in module_of:
                raise ValueError(f"{package}: {name!r} is exported from both {module_of[name]!r} and {module!r}")
            module_of[name] = module
    renamed = dict(renamed or {})

    def __getattr__(name: str):
        if name in module_of:
            value = getattr(importlib.import_module(f"{package}.{module_of[name]}"), renamed.get(name, name))
        elif name.isidentifier() and not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            value = importlib.import_module(f"{package}.{name}")  # a submodule not imported yet
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(module_of))

    return list(module_of), __getattr__, __dir__
