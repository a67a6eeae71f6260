"""A text read token by token, for probes that learn how to pool its tokens: attention probes
(``pooling = "attention"``) and max-pooled probes (``pooling = "max"``) of a texts task.

:func:`token_spans` lays out data whose rows are tokens — every token of each text, its text
recorded as its cluster (:attr:`~probemeter.data.ProbeData.clusters_train`, as a texts task's
``pooling = "all"`` gives them) — as one row per text: the text's token count, then its token
vectors padded with zeros to the longest text of the data, T tokens of width d (one span of
:class:`~probemeter.datasets.edge_probing.SpanLayout`). Probes then pool each text with the
stacked engine's learned span pooling (:mod:`probemeter.probes.span_attention`, the one
implementation that also pools edge-probing spans), masked to the text's own tokens: with
pooling ``"attention"``, u_t = h_t W + b (q wide), a = softmax_t(u_t · w), z = Σ_t a_t u_t; with
``"max"``, z = max_t u_t coordinate-wise; then the probe's MLP (a linear probe with
``probe = []``) reads z.

The projection width q is the data's (:attr:`~probemeter.data.ProbeData.span_projection`): by
default K + 1 for attention — one head's query and K value directions, the attention probe of
McKenzie et al. (2025, §3), whose query vector and value vectors are exactly what a projection
to K + 1 dimensions followed by the score w and the classifier can express — and K for
max pooling, so that z is the maximum over tokens of K per-token logits (their max-pooled
probe). A wider projection costs T·d·q per text and step: the width of a model is what makes
attention probes expensive, so q stays small.

The token vectors keep the standardisation of the token rows (the pool's tokens' mean and
standard deviation); the counts and the zero padding are not standardised. The texts'
labels are their tokens' (checked equal), and the rows are texts: nothing is clustered any
more, since the texts are the units sampled. The layout is written a block of token rows at a
time, so token rows that are a memory map (a feature cache's layer files) are read once, in
order; the padded rows themselves take n · (1 + T·d) floats, in memory or, with ``out``, in
``.npy`` files read back memory-mapped. :class:`TokenSpanSplit` builds the same data straight
from a layer file larger than memory (a run's feature cache): the token rows standardised a
block at a time (:meth:`~probemeter.data.RowSplit.save`, byte for byte what
:meth:`~probemeter.data.RowSplit.probe_data` computes), then laid out into the cache's files.

References:
    McKenzie, A., Pawar, U., Blandfort, P., Bankes, W., Krueger, D., Lubana, E. S. &
    Krasheninnikov, D. (2025). Detecting high-stakes interactions with activation probes.
    arXiv:2506.10805

    Lee, K., He, L., Lewis, M. & Zettlemoyer, L. (2017). End-to-end neural coreference
    resolution. *EMNLP 2017*. arXiv:1707.07045

    Kramár, J., et al. (2026). Building production-ready probes for Gemini. arXiv:2601.11516
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from probemeter._validation import one_of
from probemeter.data import ATTENTION, LEARNED_POOLINGS, ProbeData, RowSplit

__all__ = ["TokenSpanSplit", "default_projection", "token_spans"]

#: token rows copied into the padded layout at a time
_BLOCK_ROWS = 4096


def default_projection(pooling: str, n_classes: int) -> int:
    """q of :func:`token_spans` by default: K + 1 for attention (one query, K values), K for max
    pooling (K per-token logits)."""
    return n_classes + 1 if pooling == ATTENTION else n_classes


def token_spans(
    data: ProbeData,
    pooling: str = ATTENTION,
    *,
    projection: int | None = None,
    out: str | Path | None = None,
) -> ProbeData:
    """One row per text from rows of tokens (module docstring), for probes that pool each
    text's tokens with ``pooling`` after projecting them to ``projection`` dimensions.

    Args:
        data: rows of tokens, each row's text as its cluster (``clusters_train`` and
            ``clusters_test``), a text's rows contiguous and in order; dense features.
        pooling: ``"attention"`` or ``"max"`` (:data:`~probemeter.data.LEARNED_POOLINGS`).
        projection: q, the width tokens are projected to before pooling; None:
            :func:`default_projection`.
        out: a folder to write the padded rows to (``X_train.npy``, ``X_test.npy``, where
            :meth:`~probemeter.data.ProbeData.save` of the result to that folder finds
            them), returned memory-mapped; None: in memory.

    Returns:
        ProbeData with ``span_tokens = (T,)``, ``span_pooling`` and ``span_projection`` set,
        which :func:`~probemeter.probes.probe_for` turns into probes that pool this way.

    Raises:
        ValueError: an unknown ``pooling``, a ``projection`` below 1, sparse features, rows
            without clusters, a text whose rows are not contiguous, or a text whose tokens
            disagree on its label.

    Examples:
        >>> import numpy as np
        >>> from dataclasses import replace
        >>> from probemeter.data import ProbeData
        >>> tokens = np.arange(10, dtype=np.float32).reshape(5, 2)
        >>> data = ProbeData.from_arrays(
        ...     tokens[:3], [1, 1, 0], tokens[3:], [0, 0], n_classes=2, standardize=False
        ... )
        >>> data = replace(data, clusters_train=np.array([0, 0, 1]), clusters_test=np.array([2, 2]))
        >>> texts = token_spans(data, "attention")
        >>> texts.X_train  # count, then two token vectors (the second text's padded)
        array([[2., 0., 1., 2., 3.],
               [1., 4., 5., 0., 0.]], dtype=float32)
        >>> texts.y_train, texts.span_tokens, texts.span_projection
        (array([1, 0]), (2,), 3)
    """
    one_of(*LEARNED_POOLINGS)(pooling, "pooling")
    if projection is not None and (isinstance(projection, bool) or int(projection) < 1):
        raise ValueError(f"projection must be a positive integer; got {projection!r}")
    if data.is_sparse:
        raise ValueError(
            "data: learned token pooling reads dense token vectors; these features are sparse"
        )
    if data.clusters_train is None or data.clusters_test is None:
        raise ValueError(
            "data: rows of tokens must record their text as their cluster (clusters_train, "
            'clusters_test), as a texts task\'s pooling "all" does'
        )
    train = _texts(data.clusters_train, "clusters_train")
    test = _texts(data.clusters_test, "clusters_test")
    longest = int(max(train[1].max(initial=0), test[1].max(initial=0)))
    folder = None if out is None else Path(out)
    X_train, y_train = _layout(data.X_train, data.y_train, *train, longest, "train", folder)
    X_test, y_test = _layout(data.X_test, data.y_test, *test, longest, "test", folder)
    q = default_projection(pooling, data.n_classes) if projection is None else int(projection)
    return ProbeData(
        X_train,
        y_train,
        X_test,
        y_test,
        data.n_classes,
        name=data.name,
        classes=data.classes,
        span_tokens=(longest,),
        span_pooling=pooling,
        span_projection=q,
    )


def _texts(clusters: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Each text's first row and row count, for rows whose text is ``clusters``."""
    clusters = np.asarray(clusters)
    starts = np.flatnonzero(np.r_[True, clusters[1:] != clusters[:-1]]) if clusters.size else []
    starts = np.asarray(starts, dtype=np.int64)
    if len(np.unique(clusters[starts])) != len(starts):
        raise ValueError(f"data.{where}: a text's rows must be contiguous; one is split")
    counts = np.diff(np.r_[starts, clusters.size]).astype(np.int64)
    return starts, counts


def _layout(
    tokens: np.ndarray,
    labels: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    longest: int,
    split: str,
    out: Path | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The padded rows (n_texts, 1 + longest · d) of one split and each text's label; with
    ``out``, written to ``out / X_<split>.npy`` and read back memory-mapped."""
    width = int(tokens.shape[1])
    y = np.asarray(labels)[starts]
    if not np.array_equal(np.asarray(labels), np.repeat(y, counts, axis=0)):
        raise ValueError(f"data: the tokens of a {split} text disagree on its label")
    shape = (len(starts), 1 + longest * width)
    if out is None:
        X = np.zeros(shape, dtype=np.float32)
    else:  # a new file reads as zeros where nothing is written: the padding
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"X_{split}.npy"
        path.unlink(missing_ok=True)
        X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=shape)
    X[:, 0] = counts
    padded = X[:, 1:].reshape(len(starts), longest, width)  # a view: the last axis is split
    text = np.repeat(np.arange(len(starts)), counts)
    position = np.arange(int(counts.sum())) - np.repeat(starts, counts)
    for first in range(0, len(text), _BLOCK_ROWS):
        block = slice(first, first + _BLOCK_ROWS)
        padded[text[block], position[block]] = np.asarray(tokens[block], dtype=np.float32)
    if out is None:
        return X, y
    X.flush()
    del padded, X
    return np.load(out / f"X_{split}.npy", mmap_mode="r"), y


@dataclass(frozen=True)
class TokenSpanSplit:
    """Which token rows of a layer file make the pool's and the test set's texts, for
    :func:`token_spans` built without holding the layer (:meth:`save`).

    Attributes:
        rows: the token rows of the pool's texts and of the test set's, in text order, with
            their labels (their text's), as :meth:`~probemeter.data.RowSplit.probe_data` takes them.
        texts_train, texts_test: the text of each of those rows (its cluster).
        pooling: ``"attention"`` or ``"max"``.
        projection: q; None: :func:`default_projection`.
    """

    rows: RowSplit
    texts_train: np.ndarray
    texts_test: np.ndarray
    pooling: str = ATTENTION
    projection: int | None = None

    def probe_data(self, features: object, *, name: str) -> ProbeData:
        """:func:`token_spans` of the token rows' data, in memory."""
        return self._spans(self.rows.probe_data(features, name=name), None)

    def save(
        self,
        folder: str | Path,
        read_rows: Callable[[np.ndarray], np.ndarray],
        n_features: int,
        *,
        name: str,
    ) -> Path:
        """Write what :meth:`probe_data` makes to ``folder``, as
        :meth:`~probemeter.data.ProbeData.save` would and as
        :meth:`~probemeter.data.RowSplit.save` does: the token rows are read a block at a time
        with ``read_rows(indices)`` (n, ``n_features``) and standardised into a scratch folder
        inside ``folder`` (:meth:`~probemeter.data.RowSplit.save`: the same numbers as in
        memory), then laid out a block of token rows at a time into ``folder/X_train.npy`` and
        ``X_test.npy``; the labels and the JSON follow, the JSON last, and the scratch folder
        is removed. Returns the folder."""
        folder = Path(folder)
        scratch = folder / "tokens"
        self.rows.save(scratch, read_rows, n_features, name=name)
        try:
            return self._spans(ProbeData.load(scratch), folder).save(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _spans(self, tokens: ProbeData, out: Path | None) -> ProbeData:
        clustered = replace(tokens, clusters_train=self.texts_train, clusters_test=self.texts_test)
        return token_spans(clustered, self.pooling, projection=self.projection, out=out)
