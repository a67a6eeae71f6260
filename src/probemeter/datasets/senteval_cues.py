"""A surface-cue baseline for SentEval's order tasks: what a classifier learns without syntax.

BShift and CoordInv (Conneau et al. 2018, arXiv:1805.01070, §2) are defined by word order
alone: an inverted sentence holds the same words as an original one. A generator that leaves
a trace of the inversion on the surface — a lower-case word first and a capital second ("cat
The sat"), a capital inside the sentence ("…, but They might"), punctuation moved ("… ; ?") —
makes a task that a bag of words solves, and a probe's accuracy on it says nothing about
syntax. :func:`surface_cue_accuracy` measures that: a logistic regression (scikit-learn,
L2; its inverse regularisation C chosen among :data:`C_GRID` by the log loss of an inner
3-fold cross-validation, so that a bag of thousands of words does not drown a cue that few
features carry) on

* the case pattern of the first word (lower, title, upper, other);
* the positions of capitalised words and of punctuation tokens, counted from the start and
  from the end of the sentence (one indicator per position);
* a case-sensitive bag of words (one indicator per word form present),

each feature kept where at least two sentences have it (one sentence's feature cannot be
learnt in one fold and used in another), scored by stratified k-fold cross-validation. On a
task without surface cues its accuracy stays at chance (the share of the most frequent class:
0.5 for the balanced order tasks), within the sampling error of the folds' predictions,
sqrt(chance (1 − chance) / n).

References:
    Conneau, A., Kruszewski, G., Lample, G., Barrault, L. & Baroni, M. (2018). What you can cram
    into a single $&!#* vector: probing sentence embeddings for linguistic properties. *ACL 2018*.
    doi:10.18653/v1/P18-1198 (arXiv:1805.01070)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from probemeter._validation import check_scalar

__all__ = ["C_GRID", "CueBaseline", "surface_cue_accuracy", "surface_features"]

#: the inverse regularisation strengths the inner cross-validation chooses from
C_GRID = (0.01, 0.1, 1.0)


@dataclass(frozen=True)
class CueBaseline:
    """The cross-validated accuracy of the surface-cue baseline on one task.

    Attributes:
        accuracy: the share of sentences classified correctly, each by the fold that held it
            out.
        chance: the share of the most frequent label.
        n_sentences: sentences scored.
        folds: cross-validation folds.
    """

    accuracy: float
    chance: float
    n_sentences: int
    folds: int

    @property
    def margin(self) -> float:
        """``accuracy - chance``: what the surface alone tells about the label."""
        return self.accuracy - self.chance

    def to_dict(self) -> dict[str, float | int]:
        return {
            "accuracy": self.accuracy,
            "chance": self.chance,
            "n_sentences": self.n_sentences,
            "folds": self.folds,
        }


def _case(word: str) -> str:
    letters = [char for char in word if char.isalpha()]
    if not letters:
        return "other"
    if len(letters) > 1 and all(char.isupper() for char in letters):
        return "upper"
    if word[:1].isupper():
        return "title"
    if word[:1].islower():
        return "lower"
    return "other"


def surface_features(sentence: str) -> dict[str, int]:
    """The baseline's features of one tokenised sentence (tokens separated by spaces), as
    indicator names: ``first:<case>``, ``cap@<i>`` / ``cap@-<j>`` and ``punct@<i>`` /
    ``punct@-<j>`` (position from the start, from the end: 0 and -1 are the first and last
    token), and ``word:<form>``."""
    tokens = sentence.split()
    features = {f"first:{_case(tokens[0]) if tokens else 'none'}": 1}
    n = len(tokens)
    for index, token in enumerate(tokens):
        features[f"word:{token}"] = 1
        if token[:1].isupper():
            features[f"cap@{index}"] = features[f"cap@-{n - index}"] = 1
        if not any(char.isalnum() for char in token):
            features[f"punct@{index}"] = features[f"punct@-{n - index}"] = 1
    return features


def surface_cue_accuracy(
    labels: Sequence[str],
    sentences: Sequence[str],
    *,
    folds: int = 5,
    random_state: int = 0,
) -> CueBaseline:
    """The stratified ``folds``-fold cross-validated accuracy of a logistic regression on the
    surface features of ``sentences`` (:func:`surface_features`; module docstring).

    Raises:
        ValueError: ``labels`` and ``sentences`` of different lengths, fewer than two labels,
            a label with fewer sentences than ``folds``, or ``folds`` below 2.
    """
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_predict

    check_scalar(folds, "folds", int, min_val=2)
    check_scalar(random_state, "random_state", int, min_val=0)
    if len(labels) != len(sentences):
        raise ValueError(
            f"labels has {len(labels)} entries but sentences has {len(sentences)}; give one "
            "label per sentence"
        )
    y = np.asarray(labels)
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2 or counts.min() < folds:
        raise ValueError(
            f"labels must hold two or more labels with at least folds={folds} sentences each; "
            f"got {dict(zip(classes.tolist(), counts.tolist()))}"
        )
    features = [surface_features(sentence) for sentence in sentences]
    shared = Counter(name for row in features for name in row)
    X = DictVectorizer().fit_transform(
        [{name: 1 for name in row if shared[name] >= 2} for row in features]
    )
    # the inner search picks C anew in each outer fold (nested cross-validation)
    model = GridSearchCV(
        LogisticRegression(max_iter=2000),
        {"C": list(C_GRID)},
        scoring="neg_log_loss",
        cv=StratifiedKFold(3, shuffle=True, random_state=random_state),
    )
    split = StratifiedKFold(folds, shuffle=True, random_state=random_state)
    predicted = cross_val_predict(model, X, y, cv=split)
    return CueBaseline(
        accuracy=float(np.mean(predicted == y)),
        chance=float(counts.max() / len(y)),
        n_sentences=len(y),
        folds=folds,
    )
