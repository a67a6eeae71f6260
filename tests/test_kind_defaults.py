"""Every option of a representation kind has one default: its declaration's (issue 41). The
methods' options against the Python API are ``tests/test_api_defaults.py``'s; here the model
kinds against the encoder they build, and the kinds' modules against their declarations.

- The parameters of the encoder a kind builds (:class:`~probemeter.encoders.TransformerEncoder`,
  ``train_vae``, ``train_cnn``) named like one of its options have that option's default,
  unless the table below says why not.
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
from probemeter.encoders.image_models import train_cnn, train_vae
from probemeter.runs.kinds import KINDS

#: TransformerEncoder parameters named like a model kind's option that are not that option's
#: default, with why
_UNRELATED = {
    "layer": "the kind's layer is required (a layer, a list or 'all'); the encoder's -1 is its "
    "last layer, for the Python API",
    "pooling": "the kind's default is the task's (None until the task is known); the encoder "
    "takes the pooling the task chose",
}

#: per kind, the encoder it builds and its options the encoder takes under another name
_ENCODERS = {
    "transformer": (TransformerEncoder, {}),
    "sae": (TransformerEncoder, {}),
    "vae": (train_vae, {"n_components": "latent_dim"}),
    "cnn": (train_cnn, {}),
}


@pytest.mark.parametrize("kind", list(_ENCODERS))
def test_the_encoder_has_the_defaults_of_the_kind_options_it_takes(kind):
    encoder, renamed = _ENCODERS[kind]
    parameters = inspect.signature(encoder).parameters
    shared = [
        (opt, renamed.get(opt.name, opt.name))
        for opt in KINDS[kind].options()
        if renamed.get(opt.name, opt.name) in parameters
    ]
    assert shared, "the encoder takes none of the kind's options"
    for opt, parameter in shared:
        if encoder is TransformerEncoder and opt.name in _UNRELATED:
            continue
        assert parameters[parameter].default == opt.default, (
            f"{kind}.{opt.name}: the kind's default {opt.default!r}, the encoder's "
            f"{parameters[parameter].default!r}"
        )


def test_the_unrelated_parameters_are_options_of_a_model_kind():
    names = {opt.name for kind in ("transformer", "sae") for opt in KINDS[kind].options()}
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
