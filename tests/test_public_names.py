"""Every package's public names resolve to what they name: a function or class exported under
the name of the submodule that defines it (``probemeter.power.mcnemar``) is the function,
whether the package is asked first or the submodule was imported first."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHECK = textwrap.dedent(
    """
    import importlib, pkgutil, sys, types
    import probemeter

    packages = ["probemeter"] + [
        f"probemeter.{info.name}" for info in pkgutil.iter_modules(probemeter.__path__)
        if info.ispkg
    ]
    early = sys.argv[1] == "submodules-first"
    wrong = []
    for name in packages:
        package = importlib.import_module(name)
        exports = getattr(package, "_EXPORTS", {})
        if early:  # the submodules imported before the package is asked for a name
            for module in set(exports.values()):
                importlib.import_module(module, name)
        for public in package.__all__:
            value = getattr(package, public)
            if public not in exports:  # imported eagerly by the package itself
                if isinstance(value, types.ModuleType) and public in vars(value):
                    wrong.append(f"{name}.{public} is a module")
                continue
            module = importlib.import_module(exports[public], name)
            expected = vars(module).get(public, module)
            if value is not expected:
                wrong.append(f"{name}.{public} is {value!r}, not {expected!r}")
            if isinstance(value, types.ModuleType) and public in vars(module):
                wrong.append(f"{name}.{public} is a module")
    print("\\n".join(wrong) or "ok")
    """
)


def _check(order: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", CHECK, order], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip()


@pytest.mark.slow
def test_every_public_name_is_what_it_names_when_asked_first():
    assert _check("package-first") == "ok"


@pytest.mark.slow
def test_every_public_name_is_what_it_names_after_its_submodule_was_imported():
    assert _check("submodules-first") == "ok"


def test_the_two_shadowed_names_are_the_functions():
    from probemeter.mdl import switching_code
    from probemeter.power import mcnemar

    assert callable(mcnemar) and mcnemar([1, 0, 1], [1, 1, 0]).p_value == 1.0
    assert callable(switching_code) and switching_code.__module__.endswith("switching_code")
