"""The fast subset (``pytest -m "not slow"``) touches every package of probemeter: for each
subpackage and public top-level module, some test module that is not entirely marked slow
imports it. Marking tests slow keeps the developer's loop short; this keeps it from silently
dropping a package.

A test module is entirely slow when its ``pytestmark`` holds ``pytest.mark.slow``, or when
every test function in it is decorated with it. Imports are read from the source (no test
module is imported): ``import probemeter.X``, ``from probemeter.X... import`` and
``from probemeter import X`` count for ``X``.
"""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import probemeter

TESTS = Path(__file__).resolve().parent


def _packages() -> set[str]:
    """The subpackages and public top-level modules of probemeter."""
    return {
        info.name
        for info in pkgutil.iter_modules(probemeter.__path__)
        if info.ispkg or not info.name.startswith("_")
    }


def _is_slow_mark(node: ast.expr) -> bool:
    """``pytest.mark.slow``, bare or in a list or tuple of marks."""
    if isinstance(node, ast.List | ast.Tuple):
        return any(_is_slow_mark(item) for item in node.elts)
    return ast.unparse(node) == "pytest.mark.slow"


def _entirely_slow(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            if _is_slow_mark(node.value):
                return True
    tests = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    ]
    return bool(tests) and all(
        any(_is_slow_mark(decorator) for decorator in test.decorator_list) for test in tests
    )


def _imported(tree: ast.Module, packages: set[str]) -> set[str]:
    """The packages among ``packages`` that ``tree`` imports, anywhere in the module."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "probemeter":
                names += [f"probemeter.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "probemeter" and len(parts) > 1 and parts[1] in packages:
                found.add(parts[1])
    return found


def test_every_package_is_imported_by_a_test_module_of_the_fast_subset():
    packages = _packages()
    assert {"cli", "curves", "mdl", "runs", "data", "feature_files"} <= packages
    touched: set[str] = set()
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not _entirely_slow(tree):
            touched |= _imported(tree, packages)
    assert sorted(packages - touched) == []


def test_a_module_is_entirely_slow_by_its_pytestmark_or_all_its_tests():
    slow = "import pytest\npytestmark = [pytest.mark.slow]\ndef test_a(): pass\n"
    assert _entirely_slow(ast.parse(slow))
    each = "@pytest.mark.slow\ndef test_a(): pass\n@pytest.mark.slow\ndef test_b(): pass\n"
    assert _entirely_slow(ast.parse(each))
    one = "@pytest.mark.slow\ndef test_a(): pass\ndef test_b(): pass\n"
    assert not _entirely_slow(ast.parse(one))
    skipped = "pytestmark = pytest.mark.skipif(True, reason='x')\ndef test_a(): pass\n"
    assert not _entirely_slow(ast.parse(skipped))
    imports = "from probemeter import mdl, pm_alias\nimport probemeter.power.table\n"
    assert _imported(ast.parse(imports), {"mdl", "power", "runs"}) == {"mdl", "power"}
