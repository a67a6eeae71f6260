"""Packages whose public names are imported on first use (PEP 562).

A package lists which submodule defines each of its public names; ``import probemeter`` then
loads no submodule (and so neither torch nor pandas) until a name is used. This keeps
``probemeter --help`` fast and lets each subpackage re-export its public API without import
cycles.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose public name ``name`` lives in
    the submodule ``exports[name]`` (relative, e.g. ``".curve"``); a name that is its own
    module's (``"mdl": ".mdl"``) stands for the subpackage itself.

    A name is imported on its first use and then stored in the package's namespace.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        imported = importlib.import_module(module, package)
        value = imported if module == f".{name}" else getattr(imported, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
