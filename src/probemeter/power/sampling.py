"""Train/dev/test splits for comparison problems: stratified subsets and fold rotations.

Zhu et al. (2022) draw every probing data set from a larger one:

* **stratified subsets** (§4.1 and footnote 4): 2^k *training* examples per class, with the
  train/dev/test sizes in the ratio η:1:1, η = 4 — "when there are 2^7 train samples per class,
  the subset consists of 256 train samples, 64 dev and 64 test samples, all with evenly
  distributed labels" (two classes);
* **pilot subsamples** (§3.6): the same stratified draw repeated with independent streams,
  one "pilot study" each;
* **the fold rotation** (§3.6): the data cut into K folds (K = 6 in the paper); run i takes
  fold i as validation, fold (i + 1) mod K as test and the rest as training, so every example
  is a test example exactly once.

A :class:`Split` holds index arrays into the data set; nothing here touches features.

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from probemeter._validation import check_scalar, is_integer

__all__ = [
    "Split",
    "pilot_splits",
    "rotation_splits",
    "stratified_split",
    "stratified_splits",
]


@dataclass(frozen=True, eq=False)
class Split:
    """Disjoint train / dev / test index arrays into one data set.

    Attributes:
        train, dev, test: int64 indices into the data set (order: see the builders).
        name: a label for tables, e.g. ``"2^7 per class"`` or ``"fold 3"``.
    """

    train: np.ndarray
    dev: np.ndarray
    test: np.ndarray
    name: str = "split"

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(n_train, n_dev, n_test)."""
        return len(self.train), len(self.dev), len(self.test)


def _labels(y: object) -> np.ndarray:
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(
            f"y must be a non-empty 1-D array of class labels; got shape {labels.shape}"
        )
    return labels


def _role_sizes(per_class: int, ratio: Sequence[int]) -> tuple[int, int, int]:
    """Per-class (train, dev, test) counts for ``per_class`` training examples and η:1:1-style
    ``ratio`` (train, dev, test); dev and test counts must come out whole."""
    check_scalar(per_class, "per_class", int, min_val=1)
    if len(ratio) != 3 or not all(is_integer(r) and r >= 0 for r in ratio) or ratio[0] < 1:
        raise ValueError(
            "ratio must be three non-negative integers (train, dev, test) with a positive "
            f"train part; got {ratio!r}"
        )
    counts = []
    for part in ratio[1:]:
        count, remainder = divmod(int(per_class) * int(part), int(ratio[0]))
        if remainder:
            raise ValueError(
                f"per_class={per_class} with ratio {tuple(ratio)} gives a fractional dev/test "
                f"count ({per_class}*{part}/{ratio[0]}); choose per_class divisible by {ratio[0]}"
            )
        counts.append(count)
    return int(per_class), counts[0], counts[1]


def stratified_splits(
    y: object,
    per_class: Sequence[int],
    *,
    ratio: Sequence[int] = (4, 1, 1),
    random_state: int = 0,
) -> list[Split]:
    """One stratified split per entry of ``per_class`` (training examples per class), nested.

    Each class's examples are permuted once (stream keyed by ``random_state`` and the class);
    the permutation is cut into a test region, a dev region and a training region sized for the
    largest request, and the split for ``m`` training examples per class takes the first m of
    the training region and the first m·ratio[1]/ratio[0] (dev) and m·ratio[2]/ratio[0] (test)
    of the others. So every split has *exactly* those counts per class (Zhu et al., fn. 4), and
    a smaller split's train, dev and test sets are subsets of a larger one's.

    Raises:
        ValueError: a size that is not a positive integer, a fractional dev/test count, or a
            class with too few examples for the largest size (naming the class).
    """
    return _stratified(_labels(y), list(per_class), ratio, [int(random_state)])


def _stratified(
    labels: np.ndarray, requested: list[int], ratio: Sequence[int], stream: list[int]
) -> list[Split]:
    """:func:`stratified_splits` with the random stream keyed by ``stream`` + class position."""
    if not requested:
        raise ValueError("per_class is empty")
    roles = [_role_sizes(m, ratio) for m in requested]
    largest = tuple(max(r[i] for r in roles) for i in range(3))
    classes, counts = np.unique(labels, return_counts=True)
    needed = sum(largest)
    short = [(label.item(), int(n)) for label, n in zip(classes, counts) if n < needed]
    if short:
        name, have = short[0]
        raise ValueError(
            f"per_class={max(requested)} needs {needed} examples of every class "
            f"({largest[0]} train, {largest[1]} dev, {largest[2]} test) but class {name!r} has "
            f"only {have}; sizes larger than the data cannot be drawn"
        )
    regions = []  # per class: (test region, dev region, train region)
    for position, label in enumerate(classes):
        rng = np.random.default_rng([*stream, position, 0x57A7])
        members = rng.permutation(np.flatnonzero(labels == label))
        test, dev = members[: largest[2]], members[largest[2] : largest[2] + largest[1]]
        regions.append((test, dev, members[largest[2] + largest[1] :]))
    splits = []
    for m, (n_train, n_dev, n_test) in zip(requested, roles):
        splits.append(
            Split(
                train=np.concatenate([train[:n_train] for _, _, train in regions]),
                dev=np.concatenate([dev[:n_dev] for _, dev, _ in regions]),
                test=np.concatenate([test[:n_test] for test, _, _ in regions]),
                name=f"{m} per class",
            )
        )
    return splits


def stratified_split(
    y: object, per_class: int, *, ratio: Sequence[int] = (4, 1, 1), random_state: int = 0
) -> Split:
    """The stratified split with ``per_class`` training examples per class (see
    :func:`stratified_splits`)."""
    return stratified_splits(y, [per_class], ratio=ratio, random_state=random_state)[0]


def pilot_splits(
    y: object,
    per_class: int,
    n_pilots: int,
    *,
    ratio: Sequence[int] = (4, 1, 1),
    random_state: int = 0,
) -> list[Split]:
    """``n_pilots`` independent stratified "pilot studies" (Zhu et al., §3.6), each drawn like
    :func:`stratified_split` from its own stream keyed by (``random_state``, pilot index).

    Pilots may share examples with each other (each is a fresh draw from the whole data set);
    within a pilot, train, dev and test are disjoint.
    """
    check_scalar(n_pilots, "n_pilots", int, min_val=2)
    labels = _labels(y)
    splits = []
    for pilot in range(int(n_pilots)):
        (split,) = _stratified(labels, [per_class], ratio, [int(random_state), pilot, 0x9170])
        splits.append(Split(split.train, split.dev, split.test, f"pilot {pilot}"))
    return splits


def rotation_splits(y: object, n_folds: int = 6, *, random_state: int = 0) -> list[Split]:
    """The K-fold rotation of Zhu et al., §3.6: run i (i = 0..K-1) validates on fold i, tests on
    fold (i + 1) mod K and trains on the other K - 2 folds.

    Folds are stratified: each class's examples are permuted (seeded by ``random_state``) and
    dealt round-robin to the folds, so fold sizes differ by at most one per class. Every example
    is in exactly one test set over the K runs.

    Raises:
        ValueError: ``n_folds`` < 3 (a run needs a train, a dev and a test fold) or more folds
            than examples.
    """
    labels = _labels(y)
    check_scalar(n_folds, "n_folds", int, min_val=3)
    if n_folds > labels.size:
        raise ValueError(f"n_folds={n_folds} exceeds the {labels.size} examples")
    rng = np.random.default_rng([int(random_state), 0xF01D])
    fold_of = np.empty(labels.size, dtype=np.int64)
    offset = 0
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        fold_of[members] = (offset + np.arange(members.size)) % n_folds
        offset += members.size  # continue dealing where the last class stopped: balanced folds
    folds = [np.flatnonzero(fold_of == i) for i in range(n_folds)]
    splits = []
    for i in range(n_folds):
        test_fold = (i + 1) % n_folds
        train = np.concatenate([folds[j] for j in range(n_folds) if j not in (i, test_fold)])
        splits.append(Split(np.sort(train), folds[i], folds[test_fold], f"fold {i}"))
    return splits
