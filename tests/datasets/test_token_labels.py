"""Labels of tokens from labelled character spans (issue 43, item 6): spans read and checked,
each token labelled by the span covering most of its characters, and a model's tokens located
in their text's characters (TransformerEncoder.row_offsets)."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter.datasets.token_labels import OUTSIDE, parse_spans, row_labels


def test_spans_are_read_from_lists_and_json_cells():
    text = "Ada Lovelace met Babbage in London"
    assert parse_spans([[17, 24, "PER"], [0, 12, "PER"]], text, "row 1") == (
        (0, 12, "PER"),
        (17, 24, "PER"),
    )  # sorted by start
    assert parse_spans('[[28, 34, "LOC"]]', text, "row 1") == ((28, 34, "LOC"),)
    assert parse_spans(np.array([[0, 3, 7]], dtype=object), text, "r") == ((0, 3, 7),)
    assert parse_spans(None, text, "r") == () and parse_spans("", text, "r") == ()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[[0, 3", "JSON list"),
        ({"a": 1}, "list of \\[start, end, label\\]"),
        ([[0, 3]], "must be \\[start, end, label\\]"),
        ([[0.5, 3, "X"]], "integers"),
        ([[3, 3, "X"]], "not within"),
        ([[0, 99, "X"]], "not within"),
        ([[0, 3, ""]], "label"),
        ([[0, 3, True]], "label"),
    ],
)
def test_bad_spans_are_refused_naming_the_row(value, message):
    with pytest.raises(ValueError, match=f"row 7: .*{message}"):
        parse_spans(value, "Ada Lovelace", "row 7")


def test_each_token_takes_the_span_covering_most_of_its_characters():
    # "New York-based": tokens "New" [0,3), " Yo" [3,6), "rk-" [6,9), "based" [9,14)
    offsets = [np.array([[0, 0], [0, 3], [3, 6], [6, 9], [9, 14]]), np.array([[0, 2]])]
    spans = [((0, 8, "LOC"), (8, 14, "MISC")), ()]
    # "rk-" covers 2 characters of LOC and 1 of MISC; the BOS (0, 0) covers none
    assert row_labels(offsets, spans) == [OUTSIDE, "LOC", "LOC", "LOC", "MISC", OUTSIDE]
    # a tie goes to the first span; another outside label
    assert row_labels([np.array([[2, 4]])], [((0, 3, "A"), (3, 6, "B"))], outside=0) == ["A"]
    with pytest.raises(ValueError, match="one list per text"):
        row_labels(offsets, spans[:1])


def test_a_models_tokens_are_located_in_their_texts_characters(tmp_path):
    pytest.importorskip("transformers")
    from probemeter.encoders import TransformerEncoder
    from probemeter.encoders.hf import Prompt
    from probemeter.encoders.tiny import tiny_decoder

    tiny_decoder(tmp_path / "llama")
    texts = [
        "the cat sat on the mat",
        Prompt("Review: the dog barks at night Sentiment:", (8, 30)),
    ]
    for keep_bos in (True, False):
        encoder = TransformerEncoder(
            tmp_path / "llama", 0, pooling="all", progress=False, keep_bos=keep_bos
        )
        offsets = encoder.row_offsets(texts)
        assert [len(rows) for rows in offsets] == encoder.row_counts(texts).tolist()
        for item, rows in zip(texts, offsets):
            raw = item if isinstance(item, str) else item.text[slice(*item.span)]
            pieces = [raw[a:b] for a, b in rows if b > a]
            assert "".join(pieces).strip() == raw  # every character of the text, in order
            assert (rows[:, 0] == rows[:, 1]).sum() == int(keep_bos)  # the BOS covers none
    labels = row_labels(offsets, [((4, 7, "ANIMAL"),), ((4, 7, "ANIMAL"),)])
    assert labels.count("ANIMAL") == 2  # " cat" and " dog"
