"""The documentation hooks (``docs/_hooks``) as a module for the docs tests: ``references``
generates the reference pages that ``make docs`` builds; ``lm_demo``, the folder
``examples/tiny_language_model.py`` writes, which the language-model pages follow."""

from __future__ import annotations

import importlib.util
import subprocess
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


@pytest.fixture(scope="session")
def lm_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``examples/tiny_language_model.py lm-demo``'s folder: the tiny model, its SAE, the texts
    and the experiment files of the pages "Probe a language model" and "Probes of today's
    practice" (once for both)."""
    pytest.importorskip("transformers")
    pytest.importorskip("sae_lens", reason="sae-lens is not installed (the script writes an SAE)")
    folder = tmp_path_factory.mktemp("lm") / "lm-demo"
    script = _DOCS.parent / "examples" / "tiny_language_model.py"
    subprocess.run([sys.executable, str(script), str(folder)], check=True, capture_output=True)
    return folder
