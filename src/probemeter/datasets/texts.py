"""Labelled texts in a table: a CSV, JSON-lines or Parquet file with a text column, a label
column and an optional split column — the shape of most probing sets of language models
(sentiment, truthfulness, deception) — or a folder a Hugging Face ``datasets`` ``Dataset`` or
``DatasetDict`` was saved to (``save_to_disk``; read with ``load_from_disk``, nothing
downloaded): a ``DatasetDict``'s ``train``, ``validation`` and ``test`` splits are the split
column's ``train``, ``dev`` and ``test`` (or the splits ``dataset_splits`` names, any other
split then left out with a warning: IMDB's ``unsupervised``), and a ``ClassLabel`` column's
labels are its class names (``names``), not the integers ``datasets`` stores.

:func:`read_texts` reads a file (its format from its suffix: ``.csv``, ``.jsonl``,
``.parquet``) into :class:`TextsData`, checking every row: a missing column is named with the
columns present, and an empty text, a missing label or a split other than ``train``/``dev``/
``test`` with its row (rows count the data records from 1: a CSV's header is no row).

Labels are strings or integers (integers where every label is one, or a string of digits as
a CSV writes them; booleans become ``"false"``/``"true"``), numbered 0..K-1 in sorted order,
their names kept in :attr:`TextsData.classes`; K is the pool's labels, never set by the test
rows: a test row with a label no pool row holds is refused, since a probe cannot learn a class
it never sees.

The split (:meth:`TextsData.split`): with a split column, the file's own — the pool is its
``train`` rows and, by default, its ``dev`` rows too (``dev="pool"``; ``dev="drop"`` leaves them
out), the test set its ``test`` rows; probemeter's methods hold their own development split out
of the pool, so a file's dev rows are more training data to them. Without a split column, a
seeded split stratified by label (scikit-learn's ``train_test_split(stratify=labels)``) sends
``test_size`` of the rows to the test set, the same for the same ``random_state``.

Rows of tokens (``rows_per_text``): where an encoder gives each text several rows (every token
of it), the split stays one of texts — a text's rows all in the pool or all in the test set, each
labelled with its text's label — and each row records its text as its cluster
(:attr:`~probemeter.data.ProbeData.clusters_train`), so that development splits, paired tests
and bootstraps keep a text's tokens together: the texts, not the tokens, were sampled.

Contrast pairs (``contrast_column``): each row holds two texts, a statement (the text
column) and its contrast (e.g. "... True" and "... False"), and the label says which of the
two is true (Burns et al. 2023, §2). Both texts of every row are encoded, the statements then
the contrasts (:attr:`TextsData.all_texts`: one list of 2n texts, one encoder pass), and
:func:`pair_features` makes one row of each pair (:data:`PAIRS`): their difference
x_first − x_second, or both side by side [x_first, x_second] (the layout CCS reads). The pair
is the row: it is split (by label, or the file's split column) and sampled as one.

pandas is imported only to read a CSV or Parquet file; Parquet needs pyarrow (the
``parquet`` or ``encoders`` extra), named in the error where it is missing.

References:
    Burns, C., Ye, H., Klein, D. & Steinhardt, J. (2023). Discovering Latent Knowledge in
    Language Models Without Supervision. ICLR. arXiv:2212.03827
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from probemeter._validation import listed
from probemeter.data import ProbeData, RowSplit
from probemeter.datasets.token_labels import Span, parse_spans

__all__ = [
    "DATASET_SPLITS",
    "DEV_HANDLING",
    "FORMATS",
    "PAIRS",
    "SIDE_BY_SIDE",
    "SPLITS",
    "TextsData",
    "dataset_splits_problem",
    "pair_features",
    "read_texts",
    "texts_format_problem",
]

#: the values of a split column
SPLITS = ("train", "dev", "test")
#: what becomes of a file's ``dev`` rows: joined to the pool, or left out
DEV_HANDLING = ("pool", "drop")
#: the formats read, by file suffix
FORMATS = {".csv": "CSV", ".jsonl": "JSON lines", ".parquet": "Parquet"}
#: a saved ``DatasetDict``'s splits, as the split column's values
DATASET_SPLITS = {"train": "train", "validation": "dev", "test": "test"}
#: the layout of contrast pairs side by side, [x_first, x_second] (what CCS reads)
SIDE_BY_SIDE = "concat"
#: how a contrast pair's two rows of features make its row: their difference
#: x_first − x_second, or both side by side [x_first, x_second]
PAIRS = ("difference", SIDE_BY_SIDE)

Label = str | int


@dataclass(frozen=True)
class TextsData:
    """A file's rows, in file order.

    Attributes:
        texts: each row's text.
        labels: each row's label (all strings, or all integers).
        splits: each row's split (``"train"``, ``"dev"`` or ``"test"``), or None where the
            file has no split column.
        source: the file read (or ``"<rows>"``).
        contrasts: with contrast pairs, each row's second text (its contrast), else None.
    """

    texts: tuple[str, ...]
    labels: tuple[Label, ...]
    splits: tuple[str, ...] | None = None
    source: str = "<rows>"
    contrasts: tuple[str, ...] | None = None
    #: with token labels, each text's labelled character spans
    #: (:mod:`probemeter.datasets.token_labels`; its ``labels`` are then empty strings)
    spans: tuple[tuple[Span, ...], ...] | None = None

    def __post_init__(self) -> None:
        if self.contrasts is not None and len(self.contrasts) != len(self.texts):
            raise ValueError(
                f"contrasts must be one per text ({len(self.texts)}); got {len(self.contrasts)}"
            )

    @property
    def n_rows(self) -> int:
        """Rows of the table: texts, or pairs of texts."""
        return len(self.texts)

    @property
    def all_texts(self) -> tuple[str, ...]:
        """What is encoded: the texts, then (with contrast pairs) the contrasts: 2n texts in one
        list, so that one encoder pass (and one feature cache entry) holds both members of
        every pair."""
        return self.texts if self.contrasts is None else self.texts + self.contrasts

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the rows (texts, labels, splits; contrasts where there are), for cache
        keys."""
        content = [self.texts, [str(label) for label in self.labels], self.splits]
        if self.contrasts is not None:  # only then: the digests of plain texts stay
            content.append(self.contrasts)
        if self.spans is not None:
            content.append(["token spans", [[list(span) for span in own] for own in self.spans]])
        text = json.dumps(content, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def split(
        self, *, test_size: float = 0.2, random_state: int = 0, dev: str = "pool"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row indices of the pool and of the test set (module docstring): the file's split,
        or a seeded split stratified by label of ``test_size`` of the rows.

        Raises:
            ValueError: a bad ``test_size`` or ``dev``; no pool or no test rows; a class too
                small to be in both sides of a stratified split; fewer than two classes in the
                pool; test rows with a label no pool row holds (naming the first).
        """
        if dev not in DEV_HANDLING:
            raise ValueError(f"dev must be one of {DEV_HANDLING}; got {dev!r}")
        if self.splits is not None:
            splits = np.array(self.splits)
            kept = ("train", "dev") if dev == "pool" else ("train",)
            pool = np.flatnonzero(np.isin(splits, kept))
            test = np.flatnonzero(splits == "test")
            for name, rows in (("pool (" + "/".join(kept) + " rows)", pool), ("test", test)):
                if not len(rows):
                    raise ValueError(f"texts file {self.source!r}: its {name} is empty")
        elif self.spans is not None:  # labels are the tokens': a seeded split of the texts
            pool, test = self._seeded(test_size, random_state)
        else:
            pool, test = self._stratified(test_size, random_state)
        if self.spans is None:  # token labels are checked per row (row_split)
            self._check_classes(pool, test)
        return pool, test

    def _seeded(self, test_size: float, random_state: int) -> tuple[np.ndarray, np.ndarray]:
        from sklearn.model_selection import train_test_split

        if not (isinstance(test_size, float | int) and 0 < test_size < 1):
            raise ValueError(f"test_size must be a fraction in (0, 1); got {test_size!r}")
        pool, test = train_test_split(
            np.arange(self.n_rows), test_size=test_size, random_state=random_state
        )
        return np.sort(pool), np.sort(test)

    def _stratified(self, test_size: float, random_state: int) -> tuple[np.ndarray, np.ndarray]:
        from sklearn.model_selection import train_test_split

        if not (isinstance(test_size, float | int) and 0 < test_size < 1):
            raise ValueError(f"test_size must be a fraction in (0, 1); got {test_size!r}")
        counts = self.counts(range(self.n_rows))
        rare = [label for label, count in counts.items() if count < 2]
        if rare:
            raise ValueError(
                f"texts file {self.source!r}: label(s) {listed([repr(r) for r in rare])} hold "
                "one row only; a stratified split needs two or more of each (or give the file "
                "a split column)"
            )
        try:
            pool, test = train_test_split(
                np.arange(self.n_rows),
                test_size=test_size,
                stratify=np.array([str(label) for label in self.labels]),
                random_state=random_state,
            )
        except ValueError as error:  # e.g. a test set smaller than the number of classes
            raise ValueError(
                f"texts file {self.source!r}: no stratified split with test_size={test_size} "
                f"of {self.n_rows} rows in {len(counts)} classes ({error})"
            ) from None
        return np.sort(pool), np.sort(test)

    def counts(self, rows: Any) -> dict[Label, int]:
        """Rows per label among ``rows`` (indices)."""
        found: dict[Label, int] = {}
        for row in rows:
            found[self.labels[row]] = found.get(self.labels[row], 0) + 1
        return found

    def _check_classes(self, pool: np.ndarray, test: np.ndarray) -> None:
        known = self.counts(pool)
        if len(known) < 2:
            raise ValueError(
                f"texts file {self.source!r}: its pool holds one class only "
                f"({next(iter(known))!r}); a probe needs two or more"
            )
        unseen = [row for row in test if self.labels[row] not in known]
        if unseen:
            labels = sorted({str(self.labels[row]) for row in unseen})
            raise ValueError(
                f"texts file {self.source!r}: {len(unseen)} test row(s) hold label(s) "
                f"{listed([repr(label) for label in labels])} that no pool row holds (the "
                f"first: row {unseen[0] + 1}); the classes are the pool's"
            )

    def classes(self, pool: np.ndarray) -> tuple[Label, ...]:
        """The label vocabulary of a pool (K = its length): its labels, sorted."""
        return tuple(sorted(self.counts(pool)))

    def probe_data(
        self,
        features: object,
        *,
        test_size: float = 0.2,
        random_state: int = 0,
        dev: str = "pool",
        name: str = "texts",
        rows_per_text: Any = None,
        pair: str | None = None,
        row_labels: Any = None,
    ) -> ProbeData:
        """Features of the rows (one per text, in file order; or ``rows_per_text[i]`` rows of
        text ``i``, the texts' rows in file order) with their labels, split by :meth:`split`
        (by text); class ``i`` is ``classes[i]``. Rows of tokens record their text as their
        cluster (module docstring). With ``pair`` (contrast pairs), ``features`` are those of
        :attr:`all_texts` (2n rows), made one row per pair by :func:`pair_features`. With
        ``row_labels`` (token labels: one label per row of tokens), the rows take those, not
        their text's (:meth:`row_split`).

        Raises:
            ValueError: ``features`` not 2-D or with a row count other than :attr:`n_rows` (or
                the sum of ``rows_per_text``, or 2n with ``pair``); a bad ``rows_per_text``;
                ``pair`` without contrasts, or with ``rows_per_text``; what :meth:`split`
                refuses.
        """
        if pair is not None:
            if self.contrasts is None:
                raise ValueError(
                    f"texts file {self.source!r}: pair {pair!r} needs contrast pairs (a "
                    "contrast_column); it has none"
                )
            if rows_per_text is not None:
                raise ValueError("a contrast pair is one row: it has no rows of tokens")
            features = pair_features(features, pair)
        texts_of = None if rows_per_text is None else self.text_of_rows(rows_per_text)
        n_rows = self.n_rows if texts_of is None else len(texts_of)
        X = features if sp.issparse(features) else np.asarray(features)  # SAE latents: CSR
        if X.ndim != 2 or X.shape[0] != n_rows:
            raise ValueError(f"features must be (n_rows={n_rows}, d); got shape {X.shape}")
        split = self.row_split(
            test_size=test_size,
            random_state=random_state,
            dev=dev,
            rows_per_text=rows_per_text,
            row_labels=row_labels,
        )
        data = split.probe_data(X, name=name)
        if texts_of is None:
            return data
        return replace(
            data, clusters_train=texts_of[split.train], clusters_test=texts_of[split.test]
        )

    def row_split(
        self,
        *,
        test_size: float = 0.2,
        random_state: int = 0,
        dev: str = "pool",
        rows_per_text: Any = None,
        row_labels: Any = None,
    ) -> RowSplit:
        """The rows :meth:`probe_data` takes as pool and test set (:meth:`split`) with their
        class indices (``classes[i]`` is class ``i``), before any feature is read: with
        ``rows_per_text``, every row of each text of the pool (of the test set), in order;
        with ``row_labels`` too, each row's own label, the classes the pool rows' labels.

        Raises:
            ValueError: as :meth:`split`; ``row_labels`` not one per row, fewer than two
                classes among the pool's rows, or a test row with a label no pool row holds."""
        if row_labels is not None:
            return self._token_label_split(
                test_size, random_state, dev, rows_per_text, list(row_labels)
            )
        pool, test = self.split(test_size=test_size, random_state=random_state, dev=dev)
        classes = self.classes(pool)
        index = {label: i for i, label in enumerate(classes)}
        y = np.array([index.get(label, -1) for label in self.labels], dtype=np.int64)
        if rows_per_text is not None:
            texts_of = self.text_of_rows(rows_per_text)
            pool, test = (np.flatnonzero(np.isin(texts_of, texts)) for texts in (pool, test))
            y = y[texts_of]
        return RowSplit(pool, test, y[pool], y[test], len(classes), classes)

    def _token_label_split(
        self,
        test_size: float,
        random_state: int,
        dev: str,
        rows_per_text: Any,
        row_labels: list[Label],
    ) -> RowSplit:
        """:meth:`row_split` of rows of tokens labelled one by one."""
        if rows_per_text is None:
            raise ValueError("row_labels label rows of tokens: give rows_per_text")
        texts_of = self.text_of_rows(rows_per_text)
        if len(row_labels) != len(texts_of):
            raise ValueError(
                f"row_labels must be one per row ({len(texts_of)}); got {len(row_labels)}"
            )
        pool_texts, test_texts = self.split(test_size=test_size, random_state=random_state, dev=dev)
        pool, test = (np.flatnonzero(np.isin(texts_of, t)) for t in (pool_texts, test_texts))
        labels = _uniform(row_labels)
        classes = tuple(sorted({labels[row] for row in pool}))
        if len(classes) < 2:
            raise ValueError(
                f"texts file {self.source!r}: the pool's tokens hold one label only "
                f"({classes[0]!r} if classes else 'none'); a probe needs two or more"
            )
        index = {label: i for i, label in enumerate(classes)}
        unseen = [row for row in test if labels[row] not in index]
        if unseen:
            names = sorted({str(labels[row]) for row in unseen})
            raise ValueError(
                f"texts file {self.source!r}: {len(unseen)} test token(s) hold label(s) "
                f"{listed([repr(name) for name in names])} that no pool token holds (the first "
                f"in text {int(texts_of[unseen[0]]) + 1}); the classes are the pool's"
            )
        y = np.array([index[label] if label in index else -1 for label in labels], np.int64)
        return RowSplit(pool, test, y[pool], y[test], len(classes), classes)

    def text_of_rows(self, rows_per_text: Any) -> np.ndarray:
        """The text of each row (int64) where text ``i`` has ``rows_per_text[i]`` rows, the
        texts' rows in file order.

        Raises:
            ValueError: not one positive count per text.
        """
        counts = np.asarray(rows_per_text)
        if (
            counts.shape != (self.n_rows,)
            or not np.issubdtype(counts.dtype, np.integer)
            or (counts < 1).any()
        ):
            raise ValueError(
                f"rows_per_text must be {self.n_rows} positive integers (one per text); got "
                f"shape {counts.shape}"
            )
        return np.repeat(np.arange(self.n_rows, dtype=np.int64), counts)


def pair_features(features: object, pair: str) -> np.ndarray:
    """One row per contrast pair from the features of both members: ``features`` holds 2n
    rows, the n first members (statements) then the n second ones (contrasts), as
    :attr:`TextsData.all_texts` lays them out; ``"difference"`` gives x_first − x_second
    (n, d), ``"concat"`` gives [x_first, x_second] (n, 2d).

    Raises:
        ValueError: ``pair`` not one of :data:`PAIRS`; features not 2-D with an even number
            of rows; sparse features (SAE latents are probed as texts, not pairs).
    """
    if pair not in PAIRS:
        raise ValueError(f"pair must be one of {list(PAIRS)}; got {pair!r}")
    if sp.issparse(features):
        raise ValueError("contrast pairs take dense features; got a sparse matrix")
    X = np.asarray(features)
    if X.ndim != 2 or X.shape[0] % 2:
        raise ValueError(
            f"features of contrast pairs must be (2n, d): both members of n pairs; got shape "
            f"{X.shape}"
        )
    n = X.shape[0] // 2
    first, second = X[:n], X[n:]
    if pair == "difference":
        return first - second
    return np.concatenate([first, second], axis=1)


def read_texts(
    path: str | Path,
    *,
    text_column: str = "text",
    label_column: str = "label",
    split_column: str | None = None,
    contrast_column: str | None = None,
    dataset_splits: Mapping[str, str] | None = None,
    extra_splits: tuple[str, ...] = (),
    token_labels: bool = False,
) -> TextsData:
    """Read a CSV, JSON-lines or Parquet file of labelled texts (module docstring).

    Args:
        path: the file; its suffix (``.csv``, ``.jsonl``, ``.parquet``) says its format. Or a
            folder a ``datasets.Dataset`` or ``DatasetDict`` was saved to: a ``DatasetDict``'s
            splits (``train``, ``validation``, ``test``: :data:`DATASET_SPLITS`) are its rows'
            split, in that order.
        text_column, label_column: the columns of the texts and of their labels.
        split_column: a column of ``train``/``dev``/``test``, or None (a seeded split); not
            with a ``DatasetDict``, whose splits are the split.
        contrast_column: with contrast pairs, the column of each row's second text (checked
            as the text column is); None: one text per row.
        extra_splits: further values the split column may hold (a texts task's
            ``shifted_splits``): their rows are neither pool nor test (:meth:`TextsData.split`
            leaves them out); a shifted test set takes them.
        dataset_splits: with a ``DatasetDict``, which of its splits are the rows' ``train``,
            ``dev`` and ``test`` (e.g. ``{"train": "train", "test": "test"}``; ``train`` and
            ``test`` named, ``dev`` optional); its other splits are left out with a one-line
            warning. None: :data:`DATASET_SPLITS`, every split one of them.
        token_labels: the label column holds each text's labelled character spans
            (:func:`~probemeter.datasets.token_labels.parse_spans`, checked against the
            text), kept in :attr:`TextsData.spans`; the texts are then split without
            stratification (their tokens carry the labels).

    Raises:
        ValueError: a missing file, an unknown suffix, a file that cannot be parsed, a
            missing column (listing those present), an empty text or contrast, a missing
            label or a bad split value (naming the row), or a file without rows; a contrast
            column that is the text or label column; a folder that is no saved dataset, a
            ``DatasetDict`` with other splits (without ``dataset_splits``) or with
            ``split_column`` given; ``dataset_splits`` naming a split the ``DatasetDict``
            lacks, or given for anything but a ``DatasetDict``.
        ImportError: a Parquet file without pyarrow installed; a folder without ``datasets``.
    """
    file = Path(path)
    where = f"texts file {str(file)!r}"
    if not file.exists():
        raise ValueError(f"{where} does not exist")
    error = _format_error(file)
    if error is not None:
        raise error
    if file.is_dir():
        columns, records, splits_given = _read_dataset(file, where, split_column, dataset_splits)
        if splits_given:
            split_column = _DATASET_SPLIT
    else:
        if dataset_splits is not None:
            raise ValueError(
                f"{where}: splits names the splits of a saved DatasetDict; this is a file "
                "(give its split column with split_column)"
            )
        columns, records = _read_records(file, file.suffix.lower(), where)
    wanted = {"text_column": text_column, "label_column": label_column}
    if split_column is not None:
        wanted["split_column"] = split_column
    if contrast_column is not None:
        for option, column in (("text_column", text_column), ("label_column", label_column)):
            if contrast_column == column:
                raise ValueError(
                    f"{where}: contrast_column {column!r} is the {option}; a pair's second "
                    "text needs a column of its own"
                )
        wanted["contrast_column"] = contrast_column
    for option, column in wanted.items():
        if column not in columns:
            raise ValueError(
                f"{where} has no column {column!r} ({option}); its columns: "
                f"{listed([repr(c) for c in columns], 20)}"
            )
    if not records:
        raise ValueError(f"{where} holds no rows")
    texts, labels, splits, contrasts = [], [], [], []
    spans: list[tuple[Span, ...]] = []
    for number, record in enumerate(records, start=1):
        texts.append(_text(record.get(text_column), f"{where}, row {number}", text_column))
        if contrast_column is not None:
            contrasts.append(
                _text(record.get(contrast_column), f"{where}, row {number}", contrast_column)
            )
        row = f"{where}, row {number}"
        if token_labels:  # the column holds the text's labelled character spans
            spans.append(parse_spans(record.get(label_column), texts[-1], f"{row}, {label_column}"))
            labels.append("")
        else:
            labels.append(_label(record.get(label_column), row, label_column))
        if split_column is not None:
            split = record.get(split_column)
            if split not in SPLITS and split not in extra_splits:
                raise ValueError(
                    f"{where}, row {number}: split {split!r} in column {split_column!r} is not "
                    f"one of {', '.join((*SPLITS, *extra_splits))}"
                )
            splits.append(split)
    return TextsData(
        tuple(texts),
        _uniform(labels),
        tuple(splits) if split_column is not None else None,
        source=str(file),
        contrasts=tuple(contrasts) if contrast_column is not None else None,
        spans=tuple(spans) if token_labels else None,
    )


def _text(value: Any, where: str, column: str) -> str:
    """A text as read: a string with more than white space."""
    if not isinstance(value, str) and not _missing(value):
        raise ValueError(f"{where}: text {value!r} in column {column!r} is no string")
    if _missing(value) or not value.strip():
        raise ValueError(f"{where}: empty text in column {column!r}")
    return value


def dataset_splits_problem(path: str | Path, splits: Mapping[str, str] | None) -> str | None:
    """What is wrong with ``splits`` (:func:`read_texts`'s ``dataset_splits``) for the folder
    ``path``, read from the index ``save_to_disk`` writes (``dataset_dict.json``: the split
    names) without loading the data: given for a file or a ``Dataset``, or naming a split the
    ``DatasetDict`` lacks; or what is wrong without it, a split none of
    :data:`DATASET_SPLITS`. None when fine (or when the index is unreadable: reading the data
    then says why)."""
    folder = Path(path)
    if not folder.is_dir():
        if splits is None:
            return None
        return (
            f"names a saved DatasetDict's splits; {str(folder)!r} is a file (give its split "
            "column with split_column)"
        )
    index = folder / _DATASET_FILES[0]
    if not index.is_file():
        if splits is None:
            return None
        return f"names a DatasetDict's splits; {str(folder)!r} is a Dataset without splits"
    try:
        present = json.loads(index.read_text(encoding="utf-8"))["splits"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if splits is None:
        return _unknown_splits(present, str(folder))
    return _missing_split(present, splits, str(folder))


def _unknown_splits(present: Any, folder: str | None) -> str | None:
    """Why a DatasetDict with the splits ``present`` cannot be read without ``splits`` (a
    split none of :data:`DATASET_SPLITS`), or None; ``folder`` named where given."""
    unknown = [name for name in present if name not in DATASET_SPLITS]
    if not unknown:
        return None
    of = "" if folder is None else f" of {folder!r}"
    return (
        f"DatasetDict split(s) {listed([repr(n) for n in unknown])}{of} are none of "
        f"{', '.join(DATASET_SPLITS)}; name the ones to use with splits, e.g. "
        'splits = {train = "train", test = "test"}'
    )


def _missing_split(present: Any, splits: Mapping[str, str], folder: str | None) -> str | None:
    """Why ``splits`` names a split the DatasetDict with the splits ``present`` lacks, or
    None; ``folder`` named where given."""
    missing = [name for name in splits.values() if name not in present]
    if not missing:
        return None
    dictionary = "DatasetDict" if folder is None else f"DatasetDict {folder!r}"
    return (
        f"names split {missing[0]!r}, which the {dictionary} lacks (its splits: "
        f"{', '.join(map(repr, present))})"
    )


def texts_format_problem(path: str | Path) -> str | None:
    """Why :func:`read_texts` cannot read ``path``'s format (an unknown suffix, or Parquet
    without pyarrow), or None; the file itself is not opened."""
    error = _format_error(Path(path))
    return None if error is None else str(error)


def _format_error(file: Path) -> ValueError | ImportError | None:
    where = f"texts file {str(file)!r}"
    if file.is_dir():
        if not any((file / name).is_file() for name in _DATASET_FILES):
            return ValueError(
                f"{where} is a folder but no saved Hugging Face dataset (save_to_disk writes "
                f"{' or '.join(_DATASET_FILES)} into it)"
            )
        if importlib.util.find_spec("datasets") is None:
            return ImportError(
                f"{where}: reading a saved Hugging Face dataset needs the package datasets: "
                "pip install datasets"
            )
        return None
    suffix = file.suffix.lower()
    if suffix not in FORMATS:
        return ValueError(f"{where}: unknown format {file.suffix!r} (known: {', '.join(FORMATS)})")
    if suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        return ImportError(
            f"{where}: reading Parquet needs the package pyarrow: pip install 'probemeter[parquet]'"
        )
    return None


def _read_records(file: Path, suffix: str, where: str) -> tuple[list[str], list[dict[str, Any]]]:
    """The columns and the rows (dictionaries) of a file."""
    if suffix == ".jsonl":
        return _read_jsonl(file, where)
    import pandas as pd

    if suffix == ".parquet":
        try:
            frame = pd.read_parquet(file)
        except (OSError, ValueError) as error:
            raise ValueError(f"{where} is not a readable Parquet file: {error}") from None
    else:
        try:  # every cell a string, an empty cell "" (no NaN: a text "NA" stays a text)
            frame = pd.read_csv(file, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
            raise ValueError(f"{where} is not a readable CSV file: {error}") from None
    columns = [str(column) for column in frame.columns]
    frame.columns = columns
    return columns, frame.to_dict(orient="records")


#: what ``save_to_disk`` writes: a DatasetDict's index, a Dataset's state
_DATASET_FILES = ("dataset_dict.json", "state.json")
#: the column a DatasetDict's splits become
_DATASET_SPLIT = "__split__"


def _read_dataset(
    folder: Path,
    where: str,
    split_column: str | None,
    dataset_splits: Mapping[str, str] | None = None,
) -> tuple[list[str], list[dict[str, Any]], bool]:
    """The columns and rows of a folder ``save_to_disk`` wrote, and whether they carry a
    DatasetDict's splits (in :data:`_DATASET_SPLIT`, the splits one after another)."""
    import datasets

    try:
        loaded = datasets.load_from_disk(str(folder))
    except (OSError, ValueError, FileNotFoundError) as error:
        raise ValueError(f"{where} is no readable saved dataset: {error}") from None
    if not isinstance(loaded, datasets.DatasetDict):
        if dataset_splits is not None:
            raise ValueError(
                f"{where} is a Dataset without splits; splits names a DatasetDict's (leave it "
                "out: a seeded split is made)"
            )
        return list(loaded.column_names), _named_rows(loaded), False
    chosen = _chosen_splits(loaded, where, dataset_splits)
    if split_column is not None:
        raise ValueError(
            f"{where} is a DatasetDict: its splits are the split; leave split_column out "
            f"(got {split_column!r})"
        )
    columns: dict[str, None] = {}
    records = []
    for name, split in chosen.items():
        if name in loaded:
            columns.update(dict.fromkeys(loaded[name].column_names))
            records += [{**row, _DATASET_SPLIT: split} for row in _named_rows(loaded[name])]
    return [*columns, _DATASET_SPLIT], records, True


def _chosen_splits(
    loaded: Any, where: str, dataset_splits: Mapping[str, str] | None
) -> dict[str, str]:
    """A DatasetDict's splits read, each as its split column value (``train``/``dev``/
    ``test``), in that order: :data:`DATASET_SPLITS` (every split one of them), or the splits
    ``dataset_splits`` names, the others left out with a warning."""
    if dataset_splits is None:
        problem = _unknown_splits(list(loaded), None)
        if problem is not None:
            raise ValueError(f"{where}: {problem}")
        return DATASET_SPLITS
    problem = _missing_split(list(loaded), dataset_splits, None)
    if problem is not None:
        raise ValueError(f"{where}: splits {problem}")
    chosen = {dataset_splits[role]: role for role in SPLITS if role in dataset_splits}
    left = [name for name in loaded if name not in chosen]
    if left:
        warnings.warn(
            f"{where}: DatasetDict split(s) {listed([repr(n) for n in left])} left out "
            "(splits names none of them)",
            UserWarning,
            stacklevel=4,
        )
    return chosen


def _named_rows(dataset: Any) -> list[dict[str, Any]]:
    """A ``datasets.Dataset``'s rows, a ``ClassLabel`` column's integers as its class names
    (``-1``, the feature's missing label, as None): the names are the labels, not the
    indices ``datasets`` stores."""
    import datasets

    rows = dataset.to_list()
    for column, feature in dataset.features.items():
        if isinstance(feature, datasets.ClassLabel):
            for row in rows:
                value = row.get(column)
                if isinstance(value, int):
                    row[column] = None if value < 0 else feature.int2str(value)
    return rows


def _read_jsonl(file: Path, where: str) -> tuple[list[str], list[dict[str, Any]]]:
    """One JSON object a line (blank lines skipped); the columns are every key found."""
    records, columns = [], {}
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{where}, line {number}: not JSON ({error})") from None
            if not isinstance(record, dict):
                raise ValueError(
                    f"{where}, line {number}: expected a JSON object, got {type(record).__name__}"
                )
            records.append(record)
            columns.update(dict.fromkeys(record))
    return list(columns), records


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _label(value: Any, where: str, column: str) -> Label:
    """A label as read: a stripped string, an integer, or a boolean as ``"false"``/``"true"``."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating) and not _missing(value):
        if float(value).is_integer():  # a Parquet integer column with gaps reads as float
            return int(value)
        raise ValueError(f"{where}: label {value!r} in column {column!r} is not an integer")
    if isinstance(value, str) and value.strip():
        return value.strip()
    if _missing(value) or isinstance(value, str):
        raise ValueError(f"{where}: missing label in column {column!r}")
    raise ValueError(
        f"{where}: label {value!r} in column {column!r} is neither a string nor an integer"
    )


def _uniform(labels: list[Label]) -> tuple[Label, ...]:
    """All integers where every label is an integer or a string of one (CSV cells), else all
    strings (so that they sort as one kind)."""

    def integer(label: Label) -> bool:
        return isinstance(label, int) or label.lstrip("-").isdigit()

    if all(integer(label) for label in labels):
        return tuple(int(label) for label in labels)
    return tuple(str(label) for label in labels)
