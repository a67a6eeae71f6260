"""Labels of a text's tokens given as labelled character spans: an entity, or "this is where
the model lies", marked on the text itself, so that the labels do not depend on any model's
tokenizer and every model's tokens can be labelled from them.

A text's labels are a list of spans ``[start, end, label]``: characters ``start`` (included)
to ``end`` (excluded) of the text, 0-based, as Python slices them (:func:`parse_spans` reads
them from a JSON-lines list, a Parquet list column or a CSV cell holding the JSON list, and
checks them). Once a model's tokens are known — the rows of a texts task's ``pooling =
"all"``, each with the characters it covers
(:meth:`~probemeter.encoders.hf.TransformerEncoder.row_offsets`) — :func:`row_labels` gives
each token the label of the span that covers most of its characters (the first such span on
a tie), and ``outside`` (``"O"`` by default, BIO's outside) where it covers none of a span's
characters, as a token the tokenizer added (a BOS) does. A token split across a span's edge
(``" Paris"`` covering a space before an entity) is the span's where more of its characters
are. The text is the unit sampled: its tokens are split together and clustered by text.

References:
    Tjong Kim Sang, E. F. & De Meulder, F. (2003). Introduction to the CoNLL-2003 shared task:
    language-independent named entity recognition. *CoNLL 2003*. arXiv:cs/0306050

    Goldowsky-Dill, N., Chughtai, B., Heimersheim, S. & Hobbhahn, M. (2025). Detecting
    strategic deception using linear probes. arXiv:2502.03407
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["OUTSIDE", "Span", "parse_spans", "row_labels"]

#: the label of a token in no span (BIO's outside)
OUTSIDE = "O"

#: a labelled span of characters: start (included), end (excluded), label
Span = tuple[int, int, "str | int"]


def parse_spans(value: Any, text: str, where: str) -> tuple[Span, ...]:
    """The labelled spans of one text: ``value`` a list of ``[start, end, label]`` (or a JSON
    string of one, as a CSV cell holds it; an empty list or a missing value: no span), each
    with 0 ≤ start < end ≤ len(text) and a label that is a non-empty string or an integer.
    Returned sorted by start.

    Raises:
        ValueError: naming ``where`` (the row and column), for a value that is no such list,
            a span that is not three items, offsets that are not integers or fall outside the
            text, or a bad label.

    Examples:
        >>> parse_spans('[[4, 9, "CITY"]]', "I'm Paris-born", "row 1")
        ((4, 9, 'CITY'),)
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: spans must be a JSON list; {error.msg}") from None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where}: spans must be a list of [start, end, label]; got {value!r}")
    spans = []
    for item in value:
        item = item.tolist() if isinstance(item, np.ndarray) else item
        if not isinstance(item, list | tuple) or len(item) != 3:
            raise ValueError(f"{where}: a span must be [start, end, label]; got {item!r}")
        start, end, label = item
        if not all(
            isinstance(x, int | np.integer) and not isinstance(x, bool) for x in (start, end)
        ):
            raise ValueError(f"{where}: span offsets must be integers; got {item!r}")
        if not 0 <= start < end <= len(text):
            raise ValueError(
                f"{where}: span {item!r} is not within the text's {len(text)} characters "
                "(0 <= start < end <= length)"
            )
        good = (isinstance(label, str) and label.strip()) or (
            isinstance(label, int | np.integer) and not isinstance(label, bool)
        )
        if not good:
            raise ValueError(
                f"{where}: a span's label must be a string or an integer; got {item!r}"
            )
        spans.append(
            (int(start), int(end), label.strip() if isinstance(label, str) else int(label))
        )
    return tuple(sorted(spans, key=lambda span: span[0]))


def row_labels(
    offsets: Sequence[np.ndarray], spans: Sequence[Sequence[Span]], outside: Any = OUTSIDE
) -> list[Any]:
    """The label of every row of tokens, texts after texts: ``offsets[i]`` the (n_rows, 2)
    characters [start, end) of text ``i``'s rows, ``spans[i]`` its labelled spans
    (:func:`parse_spans`); each row takes the label of the span covering most of its
    characters (the first on a tie), ``outside`` where it covers none.

    Raises:
        ValueError: not one list of spans per text.

    Examples:
        >>> import numpy as np
        >>> tokens = [np.array([[0, 0], [0, 3], [3, 9], [9, 14]])]  # BOS, "I'm", " Paris", "-born"
        >>> row_labels(tokens, [((4, 9, "CITY"),)])
        ['O', 'O', 'CITY', 'O']
    """
    if len(offsets) != len(spans):
        raise ValueError(f"spans must be one list per text ({len(offsets)}); got {len(spans)}")
    labels: list[Any] = []
    for rows, own in zip(offsets, spans):
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        if not own:
            labels += [outside] * len(rows)
            continue
        starts = np.array([span[0] for span in own])
        ends = np.array([span[1] for span in own])
        # characters of each row (axis 0) inside each span (axis 1)
        overlap = np.minimum(rows[:, 1:2], ends) - np.maximum(rows[:, 0:1], starts)
        overlap = np.clip(overlap, 0, None)
        best = overlap.argmax(axis=1)
        covered = overlap[np.arange(len(rows)), best] > 0
        labels += [own[b][2] if c else outside for b, c in zip(best.tolist(), covered.tolist())]
    return labels
