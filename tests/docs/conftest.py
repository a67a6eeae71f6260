"""The documentation hooks (``docs/_hooks``) as a module for the docs tests: ``references``
generates the reference pages that ``make docs`` builds."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def references():
    """``docs/_hooks/references.py``, imported as the site's build imports it."""
    spec = importlib.util.spec_from_file_location("docs_references", _DOCS / "_hooks/references.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]
