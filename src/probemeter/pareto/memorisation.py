"""Non-parametric (memorisation) complexity: how well a probe fits shuffled labels.

Pimentel et al. (2020), §5. For each architecture of a probe family,

* **accuracy** is the test accuracy of the probe trained on the real training set;
* **label-shuffled complexity** is the *training* accuracy the same architecture reaches when
  trained on the training set with its labels shuffled at the token level (footnote 5: token,
  not type, level; training, not test, accuracy);
* **fully-shuffled complexity** is the same with the inputs shuffled too: for contextual
  representations, the words of each sentence are shuffled *before encoding*
  (:func:`shuffle_within_sentences`), so the probe must memorise unstructured input (§5; only
  meaningful for contextual representations, footnote 10). Pass those features as
  ``shuffled_inputs``.

The whole family trains in one pass of the batched engine
(:func:`probemeter.training.engine.fit_evaluate_many`: on the real and on the shuffled labels,
repeated architectures stacked together, every chunk sharing the workers); each probe is keyed
by (random_state, its draw).
Memorisation complexity needs nothing of the architecture, so on edge-probing span rows
(``data.span_tokens``) each probe of the family learns a self-attentive pooling of the spans
first (:func:`span_probe`), whose parameters are part of what it memorises with.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from probemeter._execution import Execution, execution_of
from probemeter.data import ProbeData, check_attention_spans, check_probe_data, check_single_label
from probemeter.probes import MLP
from probemeter.probes.mlp import SPAN_PROJECTION
from probemeter.training.config import TrainingConfig, config_or_default
from probemeter.training.engine import EngineCall, fit_evaluate_many

__all__ = [
    "MemorisationResult",
    "memorisation_complexity",
    "shuffle_within_sentences",
    "span_probe",
]


@dataclass(frozen=True)
class MemorisationResult:
    """Per probe architecture: complexity (training accuracy on shuffled data) and accuracy.

    Attributes:
        kind: ``"label_shuffled"`` or ``"fully_shuffled"``.
        probes: the architectures, one per row.
        complexity: training accuracy reached on the shuffled training set, in [0, 1].
        accuracy: test accuracy of the same architecture trained on the real labels.
        metadata: training settings and library versions.
    """

    kind: str
    probes: tuple[MLP, ...]
    complexity: np.ndarray
    accuracy: np.ndarray
    metadata: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per probe: architecture, dropout, complexity, accuracy."""
        return pd.DataFrame(
            {
                "kind": self.kind,
                "probe": [probe.name for probe in self.probes],
                "layers": [len(probe.hidden) for probe in self.probes],
                "hidden": [probe.hidden[0] if probe.hidden else 0 for probe in self.probes],
                "dropout": [probe.dropout for probe in self.probes],
                "complexity": self.complexity,
                "accuracy": self.accuracy,
            }
        )


def memorisation_complexity(
    data: ProbeData,
    probes: Sequence[MLP],
    config: TrainingConfig | None = None,
    *,
    shuffled_inputs: np.ndarray | None = None,
    random_state: int = 0,
    execution: Execution | None = None,
    **old: Any,
) -> MemorisationResult:
    """Label-shuffled (or, with ``shuffled_inputs``, fully-shuffled) complexity of each probe.

    Every probe trains on the whole training pool twice: once on the real labels (evaluated on
    the test set: ``accuracy``) and once on a token-level permutation of the labels (evaluated
    on that same shuffled training set: ``complexity``).

    Args:
        data: the task.
        probes: architectures, e.g. :func:`probemeter.pareto.families.random_mlp_family`.
        config: optimisation settings (default ``TrainingConfig()``).
        shuffled_inputs: features of the training pool encoded from within-sentence shuffled
            words, row-aligned with ``data.X_train`` (fully-shuffled); None: label-shuffled.
        random_state: seeds the label permutation and every probe's stream.
        execution: where and how the probes train (:class:`~probemeter.Execution`; None:
            ``Execution()``); its progress bar is over the probe-updates of the whole family (its
            training on the real and on the shuffled labels).

    On span rows, ``probes`` without span pooling are given the data's
    (:func:`span_probe`); ``MemorisationResult.probes`` holds the architectures trained.

    Raises:
        ValueError: no probes, ``shuffled_inputs`` of the wrong shape, or a probe that pools
            other spans than the data's rows hold.
    """
    execution = execution_of(execution, old, "memorisation_complexity")
    check_single_label(check_probe_data(data), "the memorisation test")
    probes = tuple(span_probe(probe, data) for probe in probes)
    if not probes:
        raise ValueError("probes is empty: give at least one probe architecture")
    config = config_or_default(config, TrainingConfig())
    X_shuffled = data.X_train
    if shuffled_inputs is not None:
        X_shuffled = np.ascontiguousarray(np.asarray(shuffled_inputs, dtype=np.float32))
        if X_shuffled.shape != data.X_train.shape:
            raise ValueError(
                f"shuffled_inputs must have the training pool's shape {data.X_train.shape}; "
                f"got {X_shuffled.shape}"
            )
    permutation = np.random.default_rng([random_state, 0x5AFF1E]).permutation(data.pool_size)
    y_shuffled = data.y_train[permutation]
    subsets = [np.arange(data.pool_size)] * len(probes)
    keys = [(random_state, i) for i in range(len(probes))]
    common = dict(
        n_classes=data.n_classes, subsets=subsets, keys=keys, probe=list(probes), config=config
    )
    calls = [
        EngineCall(data.X_train, data.y_train, data.X_test, data.y_test, **common),
        EngineCall(X_shuffled, y_shuffled, X_shuffled, y_shuffled, **common),
    ]
    real, shuffled = fit_evaluate_many(calls, execution=execution)
    accuracy = np.asarray(real.accuracy, dtype=float)
    complexity = np.asarray(shuffled.accuracy, dtype=float)
    return MemorisationResult(
        kind="label_shuffled" if shuffled_inputs is None else "fully_shuffled",
        probes=probes,
        complexity=complexity,
        accuracy=accuracy,
        metadata={
            **config.to_dict(),
            "random_state": int(random_state),
            "shuffle": "token-level label permutation of the training pool",
            "torch": torch.__version__,
            "numpy": np.__version__,
        },
    )


def span_probe(probe: MLP, data: ProbeData, *, projection: int = SPAN_PROJECTION) -> MLP:
    """``probe`` as it reads ``data``'s rows: on edge-probing span rows
    (``data.span_tokens``), a probe without span pooling gets the data's, projected to
    ``projection`` dimensions (as :func:`~probemeter.probes.probe_for`); else ``probe``.

    Raises:
        ValueError: ``probe`` pools spans other than the data's rows hold.
    """
    check_attention_spans(data, "a Pareto probe family")
    if probe.span == (data.span_tokens or ()):
        return probe
    if probe.span or data.span_tokens is None:
        raise ValueError(
            f"probe {probe.name} pools spans {probe.span or 'none'} but the rows hold "
            f"{data.span_tokens or 'no spans'}"
        )
    return MLP(probe.hidden, probe.dropout, span=data.span_tokens, projection=projection)


def shuffle_within_sentences(
    sentences: Sequence[Sequence[str]], random_state: int = 0
) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """Shuffle the words of every sentence (the inputs of the fully-shuffled setting, §5).

    Returns:
        The shuffled sentences, and ``order`` (n_words,): flat word indices such that word
        ``order[k]`` of the original corpus sits at flat position k of the shuffled one.

    Raises:
        ValueError: no sentences or an empty sentence.
    """
    if len(sentences) == 0:
        raise ValueError("sentences is empty")
    rng = np.random.default_rng([random_state, 0x5E27])
    shuffled, order, start = [], [], 0
    for index, words in enumerate(sentences):
        if len(words) == 0:
            raise ValueError(f"sentences[{index}] is empty")
        permutation = rng.permutation(len(words))
        shuffled.append(tuple(words[i] for i in permutation))
        order.append(start + permutation)
        start += len(words)
    return shuffled, np.concatenate(order)
