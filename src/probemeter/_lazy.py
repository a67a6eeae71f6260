"""Packages whose public names are imported on first use (PEP 562).

A package lists which submodule defines each of its public names; ``import probemeter`` then
loads no submodule (and so neither torch nor pandas) until a name is used. This keeps
``probemeter --help`` fast and lets each subpackage re-export its public API without import
cycles.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


class _Package(types.ModuleType):
    """A package some of whose public names are also the names of the submodules that define
    them (``probemeter.power.mcnemar``, the function, in ``power/mcnemar.py``). Python's
    import system binds a submodule on its package once it is imported, which would hide the
    exported name behind the module; here that binding stores the exported name instead. The
    submodule stays importable by its full path (``from probemeter.power.mcnemar import
    contingency_table``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_EXPORTS", {})
        if (
            exports.get(name) == f".{name}"
            and isinstance(value, types.ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
            and name in vars(value)
        ):
            value = vars(value)[name]
        super().__setattr__(name, value)


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose public name ``name`` lives in
    the submodule ``exports[name]`` (relative, e.g. ``".curve"``); a name that is its own
    module's (``"mdl": ".mdl"``) stands for the subpackage itself, unless that module defines
    the name (``"mcnemar": ".mcnemar"``: the function), which the package then gives whether
    or not the submodule was imported first (:class:`_Package`).

    A name is imported on its first use and then stored in the package's namespace.
    """
    sys.modules[package].__class__ = _Package

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        imported = importlib.import_module(module, package)
        own = module == f".{name}" and name not in vars(imported)
        value = imported if own else getattr(imported, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
