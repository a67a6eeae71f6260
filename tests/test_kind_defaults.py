"""Every option of a representation kind has one default: its declaration's (issue 41). The
methods' options against the Python API are ``tests/test_api_defaults.py``'s; here the model
kinds against the encoder they build, and the kinds' modules against their declarations.

- :class:`~probemeter.encoders.TransformerEncoder`'s parameters named like an option of a
  model kind have that option's default, unless the table below says why not.
- No module of ``runs/kinds/`` reads an option with a fallback (``options.get("site", ...)``,
  ``options.get("site") or ...``): a representation's typed declaration
  (``Representation.declared``) holds every option, its defaults filled in.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import probemeter
from probemeter.encoders import TransformerEncoder
from probemeter.runs.kinds import KINDS
from probemeter.runs.kinds.words import _ModelKind

#: TransformerEncoder parameters named like a model kind's option that are not that option's
#: default, with why
_UNRELATED = {
    "layer": "the kind's layer is required (a layer, a list or 'all'); the encoder's -1 is its "
    "last layer, for the Python API",
    "pooling": "the kind's default is the task's (None until the task is known); the encoder "
    "takes the pooling the task chose",
}

_MODEL_KINDS = [cls for cls in KINDS.values() if issubclass(cls, _ModelKind)]


@pytest.mark.parametrize("kind", _MODEL_KINDS, ids=lambda cls: cls.kind)
def test_the_encoder_has_the_defaults_of_the_kind_options_it_takes(kind):
    parameters = inspect.signature(TransformerEncoder).parameters
    shared = [opt for opt in kind.options() if opt.name in parameters]
    assert shared, "the encoder takes none of the kind's options"
    for opt in shared:
        if opt.name in _UNRELATED:
            continue
        assert parameters[opt.name].default == opt.default, (
            f"{kind.kind}.{opt.name}: the kind's default {opt.default!r}, the encoder's "
            f"{parameters[opt.name].default!r}"
        )


def test_the_unrelated_parameters_are_options_of_a_model_kind():
    names = {opt.name for kind in _MODEL_KINDS for opt in kind.options()}
    assert set(_UNRELATED) <= names


_KINDS_FOLDER = Path(probemeter.__file__).parent / "runs" / "kinds"


@pytest.mark.parametrize("path", sorted(_KINDS_FOLDER.glob("*.py")), ids=lambda p: p.name)
def test_no_kind_module_reads_an_option_with_a_fallback(path):
    names = {opt.name for kind in KINDS.values() for opt in kind.options()}
    fallback = re.compile(r"""\.get\(\s*["'](\w+)["']\s*(,|\)\s*or\b)""")
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for match in fallback.finditer(line)
        if match.group(1) in names
    ]
    assert not found, "read the typed declaration (rep.declared) instead:\n" + "\n".join(found)
