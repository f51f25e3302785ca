"""No module under ``symlib/`` reaches into another module's private names.

A name is private when it starts with one underscore and is not a dunder
(``__version__``, ``__all__`` and ``__file__`` are public). Two forms are
checked, in every module under ``symlib/``:

(a) ``from <symlib module> import _name`` (absolute or relative), where the
    module is not the importing file itself;
(b) ``<alias>._name`` (or ``getattr(<alias>, "_name")``), where ``<alias>`` is
    bound to a symlib module by ``import symlib.x.y as alias``,
    ``import symlib.x`` (then ``symlib.x._name``) or ``from symlib.x import y``
    with ``y`` a module.

A helper used by several modules has a public name in the module that owns
it. A package-private module, one whose own file name starts with ``_``
(e.g. ``symlib/inference/_loop.py``), is the place for helpers shared inside
its package: importing a *public* name from it is allowed, and so is
importing the private module itself from a module of the same package
(``from symlib.inference import _loop`` inside ``symlib/inference/``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    name: str
    owner: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.owner}.{self.name}"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of ``path`` under ``root`` and whether it is a package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def symlib_modules(root: Path = ROOT) -> set[str]:
    """The dotted names of the modules and packages under ``root / "symlib"``."""
    return {_module_name(p, root)[0] for p in (root / "symlib").rglob("*.py")}


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module_allowed(target: str, module: str, is_package: bool) -> bool:
    """A private submodule imported from inside its own package."""
    package = target.rsplit(".", 1)[0]
    here = module if is_package else module.rsplit(".", 1)[0]
    return here == package or here.startswith(package + ".")


def find_private_uses(source: str, module: str, is_package: bool, modules: set[str],
                      path: str = "<string>") -> list[Finding]:
    """Every use, in ``source`` (the module ``module``), of another symlib module's private name."""
    tree = ast.parse(source)
    found: list[Finding] = []
    aliases: dict[str, str] = {}  # local name -> symlib module it is bound to

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "symlib":
                    continue
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases["symlib"] = "symlib"
                last = alias.name.rsplit(".", 1)[-1]
                if _is_private(last) and not _private_module_allowed(alias.name, module, is_package):
                    found.append(Finding(path, node.lineno, last, alias.name.rsplit(".", 1)[0]))
        elif isinstance(node, ast.ImportFrom):
            source_module = _resolve(node, module, is_package)
            if source_module.split(".")[0] != "symlib":
                continue
            for alias in node.names:
                submodule = f"{source_module}.{alias.name}"
                if submodule in modules:
                    aliases[alias.asname or alias.name] = submodule
                    if _is_private(alias.name) and not _private_module_allowed(submodule, module, is_package):
                        found.append(Finding(path, node.lineno, alias.name, source_module))
                elif _is_private(alias.name) and source_module != module:
                    found.append(Finding(path, node.lineno, alias.name, source_module))

    def bound_module(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return aliases.get(expr.id)
        if isinstance(expr, ast.Attribute):
            parent = bound_module(expr.value)
            if parent is not None and f"{parent}.{expr.attr}" in modules:
                return f"{parent}.{expr.attr}"
        return None

    for node in ast.walk(tree):
        owner = name = None
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner, name = bound_module(node.value), node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_private(node.args[1].value)
        ):
            owner, name = bound_module(node.args[0]), node.args[1].value
        if owner is None or owner == module:
            continue
        if f"{owner}.{name}" in modules and _private_module_allowed(f"{owner}.{name}", module, is_package):
            continue
        found.append(Finding(path, node.lineno, name, owner))
    return found


def scan(root: Path = ROOT) -> list[Finding]:
    modules = symlib_modules(root)
    found: list[Finding] = []
    for path in sorted((root / "symlib").rglob("*.py")):
        module, is_package = _module_name(path, root)
        rel = str(path.relative_to(root))
        found += find_private_uses(path.read_text(), module, is_package, modules, rel)
    return found


def test_the_scan_reads_every_module():
    modules = symlib_modules()
    assert {"symlib", "symlib.inference.hmc", "symlib.experiments.xiao.hmc_pieces", "symlib.inference._loop"} <= modules
    assert len(modules) == len(list((ROOT / "symlib").rglob("*.py"))) > 50


def test_no_module_imports_another_modules_private_names():
    found = sorted(scan(), key=lambda f: (f.path, f.line, f.name))
    assert not found, "private names used across modules:\n" + "\n".join(map(str, found))


_MODULES = {
    "symlib",
    "symlib.inference",
    "symlib.inference.hmc",
    "symlib.inference._loop",
    "symlib.inference.vi",
    "symlib.inference.training",
    "symlib.evaluation",
    "symlib.evaluation.pieces",
}

_PLANTED = """
import symlib.inference.hmc as hmc
import symlib.inference
from symlib.inference import training
from symlib.inference.hmc import _kernel, run_hmc, __version__
from ..inference import hmc as h2
from symlib.inference._loop import check_data
from symlib.inference import _loop

hmc._store(1)
symlib.inference.hmc._kernel
h2._run_id
getattr(hmc, "_chunks")
hmc.__file__
hmc.run_hmc
training._check_data
_loop.check_data
"""


def test_check_catches_both_forms_in_a_planted_snippet():
    found = find_private_uses(_PLANTED, "symlib.evaluation.pieces", False, _MODULES)
    assert sorted((f.line, f.owner, f.name) for f in found) == [
        (5, "symlib.inference.hmc", "_kernel"),
        (8, "symlib.inference", "_loop"),
        (10, "symlib.inference.hmc", "_store"),
        (11, "symlib.inference.hmc", "_kernel"),
        (12, "symlib.inference.hmc", "_run_id"),
        (13, "symlib.inference.hmc", "_chunks"),
        (16, "symlib.inference.training", "_check_data"),
    ]


def test_own_names_and_package_private_modules_are_allowed():
    own = "from symlib.inference.hmc import _kernel\nimport symlib.inference.hmc as me\nme._kernel\n"
    assert find_private_uses(own, "symlib.inference.hmc", False, _MODULES) == []
    sibling = "from symlib.inference import _loop\nfrom . import _loop as l2\n_loop.check_data\n"
    assert find_private_uses(sibling, "symlib.inference.vi", False, _MODULES) == []
    from_package = "from symlib.inference import _loop\n"
    assert find_private_uses(from_package, "symlib.inference", True, _MODULES) == []
