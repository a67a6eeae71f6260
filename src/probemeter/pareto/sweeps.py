"""Pareto probing sweeps: train a task's probe families and return (complexity, accuracy) points.

Pimentel et al. (2020), §4–7. Each function trains one representation's probes on one task and
returns a tidy frame, one row per probe, with the columns ``task, measure, representation,
complexity, accuracy`` that :mod:`probemeter.pareto.frontiers` turns into frontiers and
hypervolumes:

* :func:`linear_points` — nuclear-norm (λ sweep, §4.1, complexity ‖W‖*) and rank (complexity
  r) linear probes, accuracy on the test set (:func:`linear_sweep` also gives which test
  examples each probe got right);
* :func:`mlp_family_points` — trains a probe family for its label-shuffled (§5, complexity =
  training accuracy on token-shuffled labels) or fully-shuffled complexity, accuracy on the
  test set (:func:`probemeter.pareto.frontiers.memorisation_points` pairs results trained
  elsewhere);
* :func:`parser_points` — the same for dependency parsing with the biaffine probe (App. B):
  complexity = training UAS on heads permuted within sentences, accuracy = test UAS (§7)
  (:func:`parser_sweep` also gives which test words each parser attached correctly);
* :func:`treebank_tasks` — POS labelling (POSL), arc labelling (DAL, pairs of words) and
  parsing data of one treebank and one representation, on one sentence-level split.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from probemeter._execution import Execution, execution_of
from probemeter.data import ProbeData, check_attention_spans, check_probe_data, check_single_label
from probemeter.datasets.conll import Treebank, task_labels
from probemeter.pareto.biaffine import fit_biaffine_parsers
from probemeter.pareto.defaults import PARSER_DECODE
from probemeter.pareto.frontiers import FULLY_SHUFFLED, LABEL_SHUFFLED, NUCLEAR_NORM, RANK
from probemeter.pareto.linear_probes import fit_nuclear_norm_probes, fit_rank_probes
from probemeter.pareto.memorisation import memorisation_complexity
from probemeter.pareto.parsing import arc_pairs, check_parse, shuffle_heads
from probemeter.probes import MLP
from probemeter.training.config import ParserTraining, TrainingConfig

__all__ = [
    "FULLY_SHUFFLED",
    "LABEL_SHUFFLED",
    "NUCLEAR_NORM",
    "RANK",
    "LinearSweep",
    "ParseSplit",
    "least_constrained",
    "linear_points",
    "linear_sweep",
    "mlp_family_points",
    "parser_points",
    "parser_sweep",
    "treebank_tasks",
]


def _frame(task: str, measure: str, representation: str, **columns: object) -> pd.DataFrame:
    frame = pd.DataFrame(columns)
    frame.insert(0, "representation", representation)
    frame.insert(0, "measure", measure)
    frame.insert(0, "task", task)
    return frame


@dataclass(frozen=True, eq=False)
class LinearSweep:
    """The probes of :func:`linear_sweep` (or of :func:`parser_sweep`).

    Attributes:
        points: one row per probe (the columns of :func:`linear_points`, or of
            :func:`parser_points`).
        correct: (probes, n_test) bool, aligned with ``points``: which test examples each
            probe classified correctly (for parsers: which test words got their gold head).
    """

    points: pd.DataFrame
    correct: np.ndarray


def least_constrained(points: pd.DataFrame) -> int:
    """The row of :func:`linear_sweep`'s points holding the least constrained probe, a choice
    made before seeing any accuracy: the unpenalised nuclear-norm probe (λ = 0) when there is
    one, else the highest rank."""
    unpenalised = np.flatnonzero(
        (points["measure"] == NUCLEAR_NORM).to_numpy() & (points["setting"] == 0).to_numpy()
    )
    if unpenalised.size:
        return int(unpenalised[0])
    ranks = points["setting"].where(points["measure"] == RANK).to_numpy(dtype=np.float64)
    return int(np.nanargmax(ranks))


def linear_sweep(
    data: ProbeData,
    task: str,
    representation: str,
    *,
    penalties: Sequence[float] | None = None,
    ranks: Sequence[int] | None = None,
    learned_input: int | None = None,
    config: TrainingConfig | None = None,
    random_state: int = 0,
    device: str | torch.device = "cpu",
) -> LinearSweep:
    """Nuclear-norm and rank probes of one representation on one task (§4.1, §6.1): their
    points and which test examples each got right. On edge-probing span rows
    (``data.span_tokens``) each probe pools the spans with a learned self-attention and its
    complexity is that of its map of the pooled spans (:mod:`probemeter.pareto.span_pooling`).

    Args:
        penalties: λ values; ``()`` skips them. Default
            :func:`~probemeter.pareto.linear_probes.nuclear_norm_penalties`: 0 and 19
            log-spaced in [2⁻¹⁰, 8], the ``pareto`` method's
            (:data:`~probemeter.pareto.defaults.PARETO_PENALTIES`).
        ranks: maximum ranks (default: 1 … min(K, d)); ``()`` skips them.
        learned_input: width of a learned input embedding (one-hot baseline), else None.
        config: how the probes train; default :data:`~probemeter.pareto.defaults.LINEAR_TRAINING`,
            the ``pareto`` method's (1000 Adam updates at lr 1e-2 on minibatches of 256).
        Others: see :func:`probemeter.pareto.linear_probes.fit_nuclear_norm_probes`.
    """
    check_single_label(check_probe_data(data), "a Pareto sweep (softmax probes)")
    check_attention_spans(data, "a Pareto sweep")
    arrays = (data.X_train, data.y_train, data.X_test, data.y_test, data.n_classes)
    common = dict(
        learned_input=learned_input,
        span=data.span_tokens,
        config=config,
        random_state=random_state,
        device=device,
    )
    frames, correct = [], []
    for measure, fit, settings in (
        (NUCLEAR_NORM, fit_nuclear_norm_probes, penalties),
        (RANK, fit_rank_probes, ranks),
    ):
        if settings is not None and len(settings) == 0:
            continue
        result = fit(*arrays, settings, **common)
        frames.append(
            _frame(
                task,
                measure,
                representation,
                complexity=result.complexity,
                accuracy=result.accuracy,
                setting=result.setting.astype(float),
                train_accuracy=result.train_accuracy,
                nuclear_norm=result.nuclear_norm,
                rank=result.rank,
            )
        )
        correct.append(result.correct)
    if not frames:
        raise ValueError("penalties and ranks are both empty: nothing to train")
    return LinearSweep(pd.concat(frames, ignore_index=True), np.concatenate(correct))


def linear_points(
    data: ProbeData, task: str, representation: str, **options: object
) -> pd.DataFrame:
    """The points of :func:`linear_sweep` (same arguments): one row per probe, columns
    ``task, measure, representation, complexity, accuracy, setting, train_accuracy,
    nuclear_norm, rank``."""
    return linear_sweep(data, task, representation, **options).points


def mlp_family_points(
    data: ProbeData,
    task: str,
    representation: str,
    probes: Sequence[MLP],
    config: TrainingConfig | None = None,
    *,
    shuffled_inputs: np.ndarray | None = None,
    random_state: int = 0,
    execution: Execution | None = None,
    **old: Any,
) -> pd.DataFrame:
    """Label-shuffled (or, with ``shuffled_inputs``, fully-shuffled) points of a probe family
    (§5, §6.2); see :func:`probemeter.pareto.memorisation.memorisation_complexity`
    (``execution``'s progress bar: over the family's probe-updates; None:
    ``Execution(device="cpu")``, the CPU, where the pareto sweeps' small probes train by
    default)."""
    execution = execution_of(execution, old, "mlp_family_points", Execution(device="cpu"))
    result = memorisation_complexity(
        data,
        probes,
        config,
        shuffled_inputs=shuffled_inputs,
        random_state=random_state,
        execution=execution,
    )
    table = result.to_frame()
    return _frame(
        task,
        FULLY_SHUFFLED if shuffled_inputs is not None else LABEL_SHUFFLED,
        representation,
        complexity=result.complexity,
        accuracy=result.accuracy,
        probe=table["probe"],
        layers=table["layers"],
        hidden=table["hidden"],
        dropout=table["dropout"],
    )


@dataclass(frozen=True)
class ParseSplit:
    """Parsing data of one representation: words with heads and sentence ids, split by
    sentence. Heads are 1-based within the sentence, 0 for the root; ``rooted=False`` lets a
    sentence have no word attached to the root (a control task's heads)."""

    X_train: np.ndarray
    heads_train: np.ndarray
    sentences_train: np.ndarray
    X_test: np.ndarray
    heads_test: np.ndarray
    sentences_test: np.ndarray
    rooted: bool = True

    def __post_init__(self) -> None:
        check_parse(self.heads_train, self.sentences_train, rooted=self.rooted)
        check_parse(self.heads_test, self.sentences_test, rooted=self.rooted)
        for part in ("train", "test"):
            X, heads = getattr(self, f"X_{part}"), getattr(self, f"heads_{part}")
            if X.ndim != 2 or X.shape[0] != heads.size:
                raise ValueError(f"X_{part} must be (n_words={heads.size}, d); got {X.shape}")


def parser_points(
    split: ParseSplit, task: str, representation: str, probes: Sequence[MLP], **options: object
) -> pd.DataFrame:
    """The points of :func:`parser_sweep` (same arguments): one row per architecture,
    columns ``task, measure, representation, complexity, accuracy, probe, layers, hidden,
    dropout``."""
    return parser_sweep(split, task, representation, probes, **options).points


def parser_sweep(
    split: ParseSplit,
    task: str,
    representation: str,
    probes: Sequence[MLP],
    *,
    shuffled_inputs: np.ndarray | None = None,
    config: ParserTraining | None = None,
    decode: str = PARSER_DECODE,
    random_state: int = 0,
    device: str | torch.device = "cpu",
) -> LinearSweep:
    """Label-shuffled (or fully-shuffled) parsing points (§7, Table 2): per architecture, test
    UAS of the parser trained on the real heads (accuracy) and training UAS of the parser
    trained on heads permuted within each sentence (complexity); and which test words each
    parser trained on the real heads attached to their gold head. Repeated architectures
    train stacked, as ``config`` says (default :data:`~probemeter.pareto.defaults.PARSER_TRAINING`,
    the ``pareto`` method's; :func:`~probemeter.pareto.biaffine.fit_biaffine_parsers`).

    Raises:
        ValueError: no probes, ``shuffled_inputs`` not shaped like ``split.X_train``.
    """
    probes = tuple(probes)
    if not probes:
        raise ValueError("probes is empty: give at least one probe architecture")
    X_shuffled = split.X_train if shuffled_inputs is None else np.asarray(shuffled_inputs)
    if X_shuffled.shape != split.X_train.shape:
        raise ValueError(f"shuffled_inputs must have shape {split.X_train.shape}")
    rooted = split.rooted
    heads_shuffled = shuffle_heads(
        split.heads_train, split.sentences_train, random_state, rooted=rooted
    )
    train = (split.X_train, split.heads_train, split.sentences_train)
    test = (split.X_test, split.heads_test, split.sentences_test)
    memorise = (X_shuffled, heads_shuffled, split.sentences_train)
    common = dict(
        config=config,
        decode=decode,
        random_state=random_state,
        device=device,
        rooted=rooted,
    )
    complexity = np.empty(len(probes))
    accuracy = np.empty(len(probes))
    correct = np.empty((len(probes), split.heads_test.size), dtype=bool)
    for architecture in dict.fromkeys(probes):
        members = [i for i, probe in enumerate(probes) if probe == architecture]
        keys = [(random_state, i) for i in members]
        real = fit_biaffine_parsers(*train, [test], architecture, keys, **common)
        shuffled = fit_biaffine_parsers(*memorise, [memorise], architecture, keys, **common)
        accuracy[members] = real.uas[:, 0]
        complexity[members] = shuffled.uas[:, 0]
        correct[members] = real.heads[0] == split.heads_test[None, :]
    points = _frame(
        task,
        FULLY_SHUFFLED if shuffled_inputs is not None else LABEL_SHUFFLED,
        representation,
        complexity=complexity,
        accuracy=accuracy,
        probe=[probe.name for probe in probes],
        layers=[len(probe.hidden) for probe in probes],
        hidden=[probe.hidden[0] if probe.hidden else 0 for probe in probes],
        dropout=[probe.dropout for probe in probes],
    )
    return LinearSweep(points, correct)


def treebank_tasks(
    treebank: Treebank,
    features: np.ndarray,
    test_mask: np.ndarray,
    *,
    name: str = "representation",
    standardize: bool = True,
    relations: Sequence[str] | None = None,
) -> tuple[ProbeData, ProbeData, ParseSplit]:
    """POSL, DAL and parsing data of one representation of ``treebank`` (§6, §7).

    Args:
        features: (n_words, d), one row per word of ``treebank.words``.
        test_mask: (n_words,) bool, the test words (whole sentences, e.g.
            :func:`probemeter.datasets.conll.sentence_test_mask`).
        standardize: standardise features with training-pool statistics (turn it off for
            one-hot indicators).
        relations: the DAL label vocabulary (default: the treebank's relations, sorted); for
            a treebank's official split give the vocabulary of all its files,
            ``splits.vocabulary("deprel")`` with ``treebank = splits.combined`` and
            ``test_mask = splits.test_mask``
            (:class:`~probemeter.datasets.treebank_splits.TreebankSplits`).

    Returns:
        ``(posl, dal, parsing)``: POSL data grouped by word type; DAL data of ``[h_tail;
        h_head]`` pairs (root arcs left out) labelled with the tail's relation and grouped by
        the tail's word type (for control tasks); parsing data.

    Raises:
        ValueError: shapes that do not match the treebank, a split that cuts a sentence.
    """
    X = np.asarray(features, dtype=np.float32)
    test = np.asarray(test_mask, dtype=bool)
    if X.ndim != 2 or X.shape[0] != treebank.n_words or test.shape != (treebank.n_words,):
        raise ValueError(
            f"features must be (n_words={treebank.n_words}, d) and test_mask (n_words,); got "
            f"{X.shape} and {test.shape}"
        )
    sentences = treebank.sentence_ids
    if np.any(np.bincount(sentences, weights=test) % np.bincount(sentences)):
        raise ValueError("test_mask must select whole sentences")
    if standardize:
        mean, std = X[~test].mean(axis=0), X[~test].std(axis=0)
        X = (X - mean) / np.where(std > 0, std, 1.0)
    upos, upos_vocabulary = task_labels(treebank, "upos")
    types = treebank.word_type_ids
    posl = ProbeData.from_arrays(
        X[~test], upos[~test], X[test], upos[test], n_classes=len(upos_vocabulary),
        standardize=False, name=f"{name}:POSL", groups=types[~test], groups_test=types[test],
    )  # fmt: skip
    heads = np.array([h for sentence in treebank.heads for h in sentence], dtype=np.int64)
    relation_ids, relation_vocabulary = task_labels(treebank, "deprel", relations)
    pairs, tails, _ = arc_pairs(X, heads, sentences)
    on_test = test[tails]
    dal = ProbeData.from_arrays(
        pairs[~on_test], relation_ids[tails][~on_test], pairs[on_test],
        relation_ids[tails][on_test], n_classes=len(relation_vocabulary), standardize=False,
        name=f"{name}:DAL", groups=types[tails][~on_test], groups_test=types[tails][on_test],
    )  # fmt: skip
    dal = replace(dal, classes=tuple(relation_vocabulary))
    parsing = ParseSplit(
        X[~test], heads[~test], sentences[~test], X[test], heads[test], sentences[test]
    )
    return posl, dal, parsing
