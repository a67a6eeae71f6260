"""The ``Examples`` sections of the docstrings run as doctests, one test per module.

Every module under ``src/probemeter`` whose source holds ``>>>`` is collected, so an example
added to any docstring runs in ``make test`` without being listed here. A failure shows
doctest's own report: the example, what it expected and what it got.
"""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest

import probemeter

PACKAGE = Path(probemeter.__file__).parent

#: ELLIPSIS for outputs with a part that may vary (``<...>``), NORMALIZE_WHITESPACE for
#: examples whose output is wrapped to the line length.
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>>" not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_modules_are_found() -> None:
    """The discovery sees the modules known to hold examples (a broken glob finds none)."""
    assert {"probemeter._validation", "probemeter.power.clustered"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_examples(name: str) -> None:
    module = importlib.import_module(name)
    tests = [test for test in doctest.DocTestFinder().find(module) if test.examples]
    assert tests, f"{name} holds '>>>' but doctest finds no example in its docstrings"
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test, out=report.write)
    assert runner.failures == 0, (
        f"{runner.failures} of {runner.tries} examples failed in {name}:\n{report.getvalue()}"
    )
