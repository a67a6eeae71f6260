"""Random baselines for probing: control tasks, shuffled labels, randomly initialised encoders.

* **Control task** (Hewitt & Liang 2019, "Designing and interpreting probes with control
  tasks", EMNLP, arXiv:1909.03368, as used by Voita & Titov 2020, §3.1): "for each word
  type, a PoS tag is independently sampled from the empirical distribution of the tags in the
  linguistic data"; every token of a type gets its type's label, whatever its context. Only a
  probe that memorises word types can learn it. Here (:func:`control_task`,
  :func:`control_task_labels`) the labels are drawn by a NumPy generator seeded with
  ``random_state``: the distinct type ids present (pool and test set together, one map for
  both), in increasing order, take the successive draws from p(y), the pool's label
  distribution. So within one call a type has one label in every sentence and in both splits,
  and the same ids, labels and seed give the same labels again. A type's label is *not* a
  function of its word form alone: it depends on the seed, on the set of type ids present (a
  type with a smaller id, added or removed, shifts the draws of every type after it) and on
  p(y), so the same word can get another control label in another corpus or subset.
* **Dependency control task** (Hewitt & Liang 2019's control for dependency edge prediction,
  the second of the two control tasks Voita & Titov §3.1 name): every word type gets one of
  three behaviours — attach to *itself*, to the *first* (leftmost) word of its sentence, or to
  the *last* (rightmost) — and every token of the type takes its head that way; for labelled
  arcs each type also gets one control relation, drawn from the relations' empirical
  distribution (:func:`dependency_control`, defined in
  :mod:`probemeter.datasets.dependency_control` so the Pareto method's parsing probe can use
  it too). These use uniform numbers hashed from the word form and the seed (BLAKE2b), not a
  generator: a word's behaviour is the same in every sentence, split and corpus; its relation
  is F⁻¹(u), F the relation distribution of the sentences given, so it is the same wherever F
  (and the vocabulary's order) is, e.g. over all splits read together.
* **Selectivity** (Hewitt & Liang): accuracy on the task minus accuracy on its control task.
* **Label-shuffled baseline**: labels permuted across examples, which destroys any relation to
  the features while keeping the label distribution.
* **Randomly initialised encoder** (Voita & Titov §4): the encoder with every weight matrix
  above the embedding layer replaced by a random orthonormal matrix, the embedding layer kept.

References:
    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. doi:10.18653/v1/D19-1275 (arXiv:1909.03368)

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import torch

from probemeter._validation import check_scalar
from probemeter.data import ProbeData, check_probe_data
from probemeter.datasets.dependency_control import (
    CONTROL_BEHAVIOURS,
    DependencyControl,
    dependency_control,
)
from probemeter.encoders.hf import TransformerEncoder

__all__ = [
    "CONTROL_BEHAVIOURS",
    "DependencyControl",
    "OrthonormalRandomEncoder",
    "control_task",
    "control_task_labels",
    "dependency_control",
    "selectivity",
    "shuffled_labels",
]


def control_task_labels(
    groups: object,
    labels: object,
    *,
    n_classes: int | None = None,
    random_state: int = 0,
) -> tuple[np.ndarray, dict[int, int]]:
    """One label per group (word type), drawn from the empirical distribution of ``labels``.

    Args:
        groups: (n,) integer group id of every example (word type).
        labels: (n,) integer labels whose empirical distribution p(y) = count(y) / n is sampled.
        n_classes: size of the label alphabet (default: ``max(labels) + 1``).
        random_state: seed of the generator; the i-th smallest group id present takes the
            i-th draw, so a group's label depends on which other ids are present.

    Returns:
        the (n,) control labels and the mapping {group id: label}.

    Raises:
        ValueError: groups and labels of different lengths, empty, or not 1-D integers.
    """
    group_ids = np.asarray(groups)
    label_ids = np.asarray(labels)
    if group_ids.ndim != 1 or label_ids.ndim != 1 or group_ids.size == 0:
        raise ValueError("groups and labels must be non-empty 1-D arrays")
    if group_ids.shape != label_ids.shape:
        raise ValueError(
            f"groups has {group_ids.size} entries but labels has {label_ids.size}; give one "
            "group id per example"
        )
    for name, values in (("groups", group_ids), ("labels", label_ids)):
        if not np.issubdtype(values.dtype, np.integer) or values.min() < 0:
            raise ValueError(f"{name} must hold non-negative integers")
    n_classes = int(label_ids.max()) + 1 if n_classes is None else n_classes
    (control,), mapping = _type_labels([group_ids], label_ids, n_classes, random_state)
    return control, mapping


def control_task(data: ProbeData, *, random_state: int = 0) -> ProbeData:
    """``data`` with its labels replaced by the control task's: one label per word type (from
    ``groups_train``/``groups_test``, one map for both), drawn from the empirical label
    distribution of the training pool by a generator seeded with ``random_state`` over the
    sorted type ids of pool and test set (:func:`control_task_labels`; the module docstring
    says what a type's label depends on). For label sets (``data.multilabel``), one label
    *set* per word type, that of a pool example drawn uniformly in the same way: a draw from
    the empirical distribution of the pool's label sets.

    Raises:
        ValueError: ``data`` has no ``groups_train``/``groups_test``.
    """
    if check_probe_data(data).groups_train is None or data.groups_test is None:
        raise ValueError(
            "the control task needs word types: build ProbeData with groups (and groups_test)"
        )
    groups = [data.groups_train, data.groups_test]
    if data.multilabel:
        types = np.unique(np.concatenate(groups))
        drawn = np.random.default_rng(random_state).integers(0, data.pool_size, types.size)
        train, test = (data.y_train[drawn[np.searchsorted(types, g)]] for g in groups)
    else:
        (train, test), _ = _type_labels(groups, data.y_train, data.n_classes, random_state)
    return dataclasses.replace(data, y_train=train, y_test=test, name=f"{data.name} (control)")


def _type_labels(
    group_arrays: list[np.ndarray], labels: np.ndarray, n_classes: int, random_state: int
) -> tuple[list[np.ndarray], dict[int, int]]:
    """Draw one label per distinct group of ``group_arrays`` (sorted by id) from
    p(y) = count(y in labels) / len(labels); return each array's labels and the map."""
    distribution = np.bincount(labels, minlength=n_classes) / labels.size
    types = np.unique(np.concatenate(group_arrays))
    drawn = np.random.default_rng(random_state).choice(n_classes, size=types.size, p=distribution)
    arrays = [drawn[np.searchsorted(types, groups)].astype(np.int64) for groups in group_arrays]
    return arrays, dict(zip(types.tolist(), drawn.tolist()))


def shuffled_labels(data: ProbeData, *, random_state: int = 0) -> ProbeData:
    """``data`` with the pool's and the test set's labels each randomly permuted."""
    check_probe_data(data)
    rng = np.random.default_rng(random_state)
    return dataclasses.replace(
        data,
        y_train=rng.permutation(data.y_train),
        y_test=rng.permutation(data.y_test),
        name=f"{data.name} (shuffled labels)",
    )


def selectivity(task_accuracy: Any, control_accuracy: Any) -> Any:
    """Hewitt & Liang's selectivity: task accuracy − control-task accuracy (element-wise)."""
    return np.subtract(task_accuracy, control_accuracy)


class OrthonormalRandomEncoder(TransformerEncoder):
    """A :class:`TransformerEncoder` whose layers above the embeddings are random (§4).

    Voita & Titov §4: "all weights above the lexical layer (LAYER 0) are replaced with random
    orthonormal matrices (but the embedding layer, LAYER 0, is retained from trained" model).
    Here every 2-D weight outside the embedding module is drawn with
    ``torch.nn.init.orthogonal_`` (orthonormal rows or columns); the remaining 1-D parameters
    above the embeddings are set to the identity of their role (normalisation gains 1, biases
    0), so nothing learned is left above layer 0. Layer 0 features equal the trained model's.

    Args:
        model_path, layer, **kwargs: as for :class:`TransformerEncoder` (pre-trained weights are
            loaded, then replaced).
        random_state: seed of the orthonormal matrices.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        layer: int,
        *,
        random_state: int = 0,
        **kwargs: Any,
    ) -> None:
        check_scalar(random_state, "random_state", int, min_val=0)
        if kwargs.get("random_init"):
            raise ValueError("random_init must be False: the embeddings are kept pre-trained")
        super().__init__(model_path, layer, **kwargs)
        self.orthonormal_state = int(random_state)
        generator = torch.Generator().manual_seed(self.orthonormal_state)
        with torch.no_grad():
            for name, parameter in self.model.named_parameters():
                if name.startswith("embeddings."):
                    continue
                if parameter.dim() >= 2:
                    values = torch.empty(parameter.shape)
                    torch.nn.init.orthogonal_(values, generator=generator)
                    parameter.copy_(values)
                elif name.endswith("bias"):
                    parameter.zero_()
                else:
                    parameter.fill_(1.0)
        if kwargs.get("name") is None:
            model_name = self.name.split("/")[0]
            self.name = f"{model_name}-orthonormal{random_state}/layer{self.layer}/{self.pooling}"

    @property
    def cache_key(self) -> dict[str, Any]:
        return {**super().cache_key, "random_orthonormal": self.orthonormal_state}
