"""A representation carries its kind's typed declaration, and the key of an encoder's features
is derived from it: an option a kind adds is in the feature cache's key with no other edit,
and the derived key is the encoder's own ``cache_key``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tiny_models import make_tiny_decoder

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter.encoders import TransformerEncoder
from probemeter.encoders.hf import _UNKEYED
from probemeter.runs.kinds import KINDS, Representation
from probemeter.runs.kinds.words import TransformerKind
from probemeter.runs.tasks import WORDS


@dataclass(frozen=True, kw_only=True)
class ToyKind(TransformerKind):
    """A transformer kind with one more option that changes its features."""

    scale: float = option(1.0, check=valid.number(), help="features times this", key_omits=1.0)

    kind = "toy"


class _Loaded:
    """What a loaded encoder tells the key (:meth:`TransformerKind.encoder_key`)."""

    model_path = "/models/toy"
    pooling = "mean"
    max_length = 64
    random_init = False
    random_state = 0
    revision = None


def _key(monkeypatch: pytest.MonkeyPatch, **options: Any) -> dict[str, Any]:
    monkeypatch.setitem(KINDS, ToyKind.kind, ToyKind)
    values = {**ToyKind.from_values({"layer": 1, **options})[0].values(), "pooling": "mean"}
    rep = Representation("toy", ToyKind.kind, WORDS, options=values)
    return rep.declared.encoder_key(_Loaded())


def test_an_option_a_kind_adds_is_in_the_key_of_its_features(monkeypatch):
    plain = _key(monkeypatch)
    assert "scale" not in plain  # its default is left out, as in unit keys
    scaled = _key(monkeypatch, scale=2.0)
    assert scaled == {**plain, "scale": 2.0}


def test_what_does_not_change_the_features_is_out_of_the_key(monkeypatch):
    assert _key(monkeypatch, batch_size=4, batch_tokens=99) == _key(monkeypatch)


def test_a_representation_reads_its_options_typed(monkeypatch):
    monkeypatch.setitem(KINDS, ToyKind.kind, ToyKind)
    rep = Representation("toy", ToyKind.kind, WORDS, options={"layer": [0, 1], "scale": 2})
    declared = rep.declared
    assert isinstance(declared, ToyKind)
    assert (declared.scale, declared.layer, declared.model) == (2, [0, 1], "minilm")
    assert declared.site == ToyKind.option_named("site").default


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"pooling": "last", "bos": "drop", "truncate": "left", "dtype": "bfloat16"},
        {"pooling": "mean", "site": "resid_post", "random_init": True},
        {"pooling": "words", "word_pooling": "first", "dtype": "float16"},
    ],
)
def test_the_derived_key_is_the_encoders_own(tmp_path: Path, options: dict[str, Any]):
    """For the same settings, the key derived from the declaration equals the hand-written
    ``TransformerEncoder.cache_key`` (feature files cached before stay valid)."""
    model = make_tiny_decoder(tmp_path / "llama", "llama")
    values = {"model": str(model), "layer": 1, "pooling": "mean", "bos": "keep", **options}
    declared, problems = TransformerKind.from_values(values)
    assert not problems
    encoder = TransformerEncoder(
        model,
        pooling=declared.pooling,
        word_pooling=declared.word_pooling,
        dtype=declared.dtype,
        keep_bos=declared.bos != "drop",
        truncate=declared.truncate,
        random_init=declared.random_init,
        random_state=3,
        progress=False,
    ).at_site(declared.site)
    assert declared.encoder_key(encoder) == {**encoder.cache_key, "layer": "all"}


def test_every_encoder_parameter_is_in_its_key_unless_it_cannot_change_the_features(tmp_path):
    """``TransformerEncoder.cache_key`` is derived from its signature: a parameter added to it
    is in the key (set away from its default) unless declared unkeyed."""
    model = make_tiny_decoder(tmp_path / "llama", "llama")
    texts = {"pooling": "last", "keep_bos": False, "truncate": "left", "dtype": "bfloat16"}
    changed = [
        TransformerEncoder(model, 1, site="resid_post", random_init=True, progress=False, **texts),
        TransformerEncoder(model, pooling="words", word_pooling="first", progress=False),
    ]
    keyed = set().union(*(encoder.cache_key for encoder in changed))
    parameters = set(inspect.signature(TransformerEncoder).parameters)
    assert parameters - _UNKEYED <= keyed
