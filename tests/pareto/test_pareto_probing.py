"""Sweeps that turn a treebank and a representation into Pareto points (Pimentel §4-7)."""

import numpy as np
import pytest

from probemeter.datasets.conll import Treebank, sentence_test_mask
from probemeter.pareto.sweeps import (
    LABEL_SHUFFLED,
    NUCLEAR_NORM,
    RANK,
    linear_points,
    mlp_family_points,
    parser_points,
    treebank_tasks,
)
from probemeter.probes import MLP
from probemeter.training.config import ParserTraining, TrainingConfig

COLUMNS = ["task", "measure", "representation", "complexity", "accuracy"]


@pytest.fixture(scope="module")
def treebank():
    """60 copies of three small hand-annotated sentences."""
    base = [
        (("the", "dog", "barks"), ("DET", "NOUN", "VERB"), (2, 3, 0), ("det", "nsubj", "ROOT")),
        (("a", "cat", "saw", "it"), ("DET", "NOUN", "VERB", "PRON"), (2, 3, 0, 3),
         ("det", "nsubj", "ROOT", "dobj")),
        (("run", "!"), ("VERB", "PUNCT"), (0, 1), ("ROOT", "punct")),
    ]  # fmt: skip
    rows = base * 60
    return Treebank(*(tuple(r[i] for r in rows) for i in range(4)), silver=False, source="test")


@pytest.fixture(scope="module")
def tasks(treebank):
    features = np.random.default_rng(0).normal(size=(treebank.n_words, 6)).astype(np.float32)
    features[:, 0] = treebank.upos_ids  # POS is readable from the first feature
    test = sentence_test_mask(treebank, 0.25, random_state=0)
    return test, treebank_tasks(treebank, features, test, name="rep")


def test_treebank_tasks_share_one_sentence_split(treebank, tasks):
    test, (posl, dal, parsing) = tasks
    assert posl.X_train.shape[0] == (~test).sum() and posl.n_classes == 17
    n_roots_train = sum(1 for h, t in zip(np.concatenate(treebank.heads), test) if h == 0 and not t)
    assert dal.X_train.shape == ((~test).sum() - n_roots_train, 12)
    assert dal.n_classes == 5
    assert parsing.X_test.shape[0] == test.sum()
    with pytest.raises(ValueError, match="whole sentences"):
        bad = test.copy()
        bad[np.flatnonzero(test)[0]] = False
        treebank_tasks(treebank, np.zeros((treebank.n_words, 2)), bad)


def test_linear_points_hold_both_measures(tasks):
    _, (posl, _, _) = tasks
    config = TrainingConfig(steps=150, lr=1e-2)
    frame = linear_points(posl, "POSL", "rep", penalties=[0.0, 0.5], ranks=[1, 3], config=config)
    assert list(frame.columns[:5]) == COLUMNS
    assert frame["measure"].tolist() == [NUCLEAR_NORM] * 2 + [RANK] * 2
    nuclear = frame[frame["measure"] == NUCLEAR_NORM]
    assert nuclear["complexity"].iloc[0] > nuclear["complexity"].iloc[1]
    assert frame[frame["measure"] == RANK]["complexity"].tolist() == [1.0, 3.0]
    with pytest.raises(ValueError, match="nothing to train"):
        linear_points(posl, "POSL", "rep", penalties=[], ranks=[])


def test_memorisation_points_are_label_shuffled(tasks):
    _, (posl, _, _) = tasks
    config = TrainingConfig(steps=60, batch_size=64, lr=1e-2)
    frame = mlp_family_points(posl, "POSL", "rep", [MLP(()), MLP((16,))], config)
    assert (frame["measure"] == LABEL_SHUFFLED).all() and frame["layers"].tolist() == [0, 1]
    assert frame["complexity"].between(0, 1).all() and frame["accuracy"].between(0, 1).all()


def test_parser_points_report_test_and_memorised_uas(tasks):
    _, (_, _, parsing) = tasks
    config = ParserTraining(steps=40, batch_sentences=32, lr=1e-2)
    frame = parser_points(parsing, "parsing", "rep", [MLP(()), MLP(())], config=config)
    assert len(frame) == 2 and (frame["measure"] == LABEL_SHUFFLED).all()
    assert frame["accuracy"].between(0, 1).all() and frame["complexity"].between(0, 1).all()
    with pytest.raises(ValueError, match="probes"):
        parser_points(parsing, "parsing", "rep", [])
