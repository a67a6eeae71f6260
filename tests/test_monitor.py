"""Monitor metrics (probemeter.monitor): against scikit-learn and hand counts on the same
predictions, thresholds from the development split alone, and the cluster bootstrap."""

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, roc_auc_score

from probemeter import Execution, Linear, ProbeData, TrainingConfig, loss_data_curve
from probemeter.monitor import (
    MonitorScores,
    auroc,
    brier,
    dev_threshold,
    expected_calibration_error,
    monitor_metrics,
    positive_scores,
    recall_at,
)


def _from_probabilities(p1: np.ndarray, labels: np.ndarray) -> MonitorScores:
    """The scores a probe giving p(class 1) = ``p1`` has, through its per-example
    cross-entropy under the labels (as the engine reports it, float32)."""
    own = np.where(labels == 1, p1, 1.0 - p1)
    return positive_scores((-np.log(own)).astype(np.float32), labels)


def _predictions(seed: int = 0, n: int = 400):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    p1 = np.clip(0.35 * labels + rng.random(n) * 0.65, 1e-4, 1 - 1e-4)
    p1[:10] = p1[10:20]  # ties across classes: AUROC counts them 1/2
    return labels, p1


def test_auroc_and_brier_equal_scikit_learns_on_the_same_predictions():
    labels, p1 = _predictions()
    scores = _from_probabilities(p1, labels)
    probabilities = scores.probabilities  # what the probe said, recovered from its losses
    np.testing.assert_allclose(probabilities, p1, rtol=1e-6)  # float32 cross-entropy
    # AUROC ranks the log-odds (exact order where σ would round neighbours together)
    assert auroc(scores) == pytest.approx(roc_auc_score(labels, scores.scores), abs=1e-12)
    assert auroc(scores) == pytest.approx(roc_auc_score(labels, p1), abs=1e-3)
    assert brier(scores) == pytest.approx(brier_score_loss(labels, probabilities), abs=1e-12)
    # positive = 0 reverses the roles: AUROC of class 0 against its own labels
    flipped = positive_scores(-np.log(np.where(labels == 1, p1, 1 - p1)), labels, positive=0)
    np.testing.assert_allclose(flipped.probabilities, 1 - p1, rtol=1e-9)
    expected = roc_auc_score(labels == 0, flipped.scores)
    assert auroc(flipped) == pytest.approx(expected, abs=1e-12)


def test_ece_and_recall_at_a_fixed_threshold_equal_hand_counts():
    # six predictions: p(class 1) and labels
    p1 = np.array([0.95, 0.80, 0.60, 0.30, 0.10, 0.55])
    labels = np.array([1, 0, 1, 0, 0, 1])
    scores = _from_probabilities(p1, labels)
    # top-label confidences 0.95, 0.80, 0.60, 0.70, 0.90, 0.55; bins of width 1/15, right-closed:
    # 0.95 -> (14/15, 1], 0.80 -> (11/15, 12/15], 0.60 -> (8/15, 9/15], 0.70 -> (10/15, 11/15],
    # 0.90 -> (13/15, 14/15], 0.55 -> (8/15, 9/15]: one bin holds 0.60 and 0.55, both right.
    # |acc - conf| per bin: 0.05, |0 - 0.80|, |1 - 0.575| (two), 0.30, 0.10
    hand = (0.05 + 0.80 + 2 * 0.425 + 0.30 + 0.10) / 6
    assert expected_calibration_error(scores) == pytest.approx(hand, abs=1e-6)
    # flag s > logit(0.58): 0.95, 0.80, 0.60 flagged; positives 0.95, 0.60, 0.55 -> recall 2/3;
    # negatives 0.80, 0.30, 0.10 -> FPR 1/3
    recall, fpr = recall_at(scores, float(np.log(0.58 / 0.42)))
    assert (recall, fpr) == (pytest.approx(2 / 3), pytest.approx(1 / 3))


def test_the_dev_threshold_is_the_order_statistic_of_the_dev_negatives():
    negatives = np.arange(200, dtype=float)  # scores 0..199
    scores = np.concatenate([negatives, [500.0, 600.0]])
    positive = np.r_[np.zeros(200, bool), [True, True]]
    # 1 % of 200 = 2 may score above t: t is the third highest, 197; 5 %: the 11th, 189
    assert dev_threshold(scores, positive, 0.01) == 197.0
    assert dev_threshold(scores, positive, 0.05) == 189.0
    recall, fpr = recall_at(MonitorScores(scores, positive), 197.0)
    assert (recall, fpr) == (1.0, 0.01)
    # fewer negatives than 1/α: nothing may score above, t is their highest
    assert dev_threshold(scores[190:], positive[190:], 0.05) == 199.0
    with pytest.raises(ValueError, match="no negative"):
        dev_threshold(scores[200:], positive[200:], 0.01)


def test_monitor_metrics_apply_the_dev_threshold_unchanged_whatever_the_test_labels():
    labels, p1 = _predictions(1)
    dev_labels, dev_p1 = _predictions(2, 300)
    dev = _from_probabilities(dev_p1, dev_labels)
    test = _from_probabilities(p1, labels)
    found = monitor_metrics([test], [dev], seeds=[0], n_boot=50)
    for name, fpr in (("recall@1%fpr", 0.01), ("recall@5%fpr", 0.05)):
        threshold = found["thresholds"][name][0]
        assert threshold == dev_threshold(dev.scores, dev.positive, fpr)
        recall, reached = recall_at(test, threshold)
        assert found["metrics"][name]["per_seed"] == [recall]
        assert found["test_fpr"][name]["per_seed"] == [reached]
    permuted = np.random.default_rng(3).permutation(labels)
    other = monitor_metrics(
        [MonitorScores(test.scores, permuted == 1)], [dev], seeds=[0], n_boot=50
    )
    assert other["thresholds"] == found["thresholds"]
    assert other["metrics"]["auroc"] != found["metrics"]["auroc"]  # the test labels did change


def test_a_curves_thresholds_never_see_the_test_labels():
    """The curve's probes trained and thresholded with the test labels permuted: the same
    thresholds, development values and test scores (the probe's outputs), to the bit."""
    rng = np.random.default_rng(0)
    y = np.arange(500) % 2
    X = rng.normal(size=(500, 3)) + y[:, None]
    y_test = np.arange(200) % 2
    X_test = rng.normal(size=(200, 3)) + y_test[:, None]
    options = {
        "sizes": [20, 300],
        "seeds": 2,
        "config": TrainingConfig(steps=30, lr=1e-2),
        "execution": Execution(device="cpu"),
    }
    true = loss_data_curve(ProbeData.from_arrays(X, y, X_test, y_test), Linear(), **options)
    shuffled = rng.permutation(y_test)
    permuted = ProbeData.from_arrays(X, y, X_test, shuffled)
    other = loss_data_curve(permuted, Linear(), **options)
    assert other.monitor["thresholds"] == true.monitor["thresholds"]
    assert other.monitor["dev"] == true.monitor["dev"]
    assert other.monitor["metrics"]["auroc"]["value"] != true.monitor["metrics"]["auroc"]["value"]
    assert true.monitor["positive"] == {"index": 1, "label": None}
    assert true.monitor["metrics"]["auroc"]["value"] > 0.7


def test_no_dev_negative_means_no_threshold_and_a_one_class_test_set_no_auroc():
    labels, p1 = _predictions(4)
    test = _from_probabilities(p1, labels)
    dev = MonitorScores(np.array([0.5, 1.0]), np.array([True, True]))  # positives only
    found = monitor_metrics([test], [dev], seeds=[0], n_boot=20)
    assert "recall@1%fpr" not in found["metrics"] and "no negative" in found["thresholds"]["note"]
    positives = MonitorScores(test.scores, np.ones_like(test.positive))
    alone = monitor_metrics([positives], None, seeds=[0], n_boot=20)["metrics"]
    assert alone["auroc"]["value"] is None and alone["auroc"]["low"] is None
    assert alone["brier"]["value"] == pytest.approx(brier(positives))


def test_more_than_two_classes_get_no_monitor_metrics():
    rng = np.random.default_rng(0)
    y = np.arange(300) % 3
    data = ProbeData.from_arrays(rng.normal(size=(300, 2)) + y[:, None], y)
    curve = loss_data_curve(
        data, Linear(), [20, 100], seeds=1, config=TrainingConfig(steps=5),
        execution=Execution(device="cpu"),
    )  # fmt: skip
    assert curve.monitor is None and "monitor" not in curve.to_dict()


def test_the_bootstrap_resamples_clusters():
    """Texts of 20 rows each (tokens, say), every row of a text with its label, whose scores
    share the text's offset: rows of a text are not independent draws, and the cluster
    bootstrap's interval is much wider than the one an example bootstrap would give."""
    rng = np.random.default_rng(0)
    texts = np.repeat(np.arange(30), 20)
    labels = texts % 2 == 1
    scores = rng.normal(size=30)[texts] * 2 + labels + 0.1 * rng.normal(size=texts.size)
    test = MonitorScores(scores, labels)
    clustered = monitor_metrics([test], None, seeds=[0], clusters=texts, n_boot=400)
    examples = monitor_metrics([test], None, seeds=[0], clusters=None, n_boot=400)
    assert clustered["bootstrap"]["n_units"] == 30 and examples["bootstrap"]["n_units"] == 600
    for name in ("auroc", "brier"):
        wide, narrow = clustered["metrics"][name], examples["metrics"][name]
        assert wide["value"] == narrow["value"]
        assert (wide["high"] - wide["low"]) > 2 * (narrow["high"] - narrow["low"]), name
    # without a development split there is no threshold, so no recall
    assert "recall@1%fpr" not in clustered["metrics"]


def test_a_curve_resamples_its_test_sets_clusters():
    from dataclasses import replace

    rng = np.random.default_rng(0)
    y = np.arange(300) % 2
    data = ProbeData.from_arrays(
        rng.normal(size=(300, 2)) + y[:, None], y, rng.normal(size=(120, 2)), np.arange(120) % 2
    )
    clustered = replace(data, clusters_train=np.arange(240) // 6, clusters_test=np.arange(120) // 6)
    options = {"sizes": [20, 200], "seeds": 1, "config": TrainingConfig(steps=10)}
    curve = loss_data_curve(clustered, Linear(), **options, execution=Execution(device="cpu"))
    assert curve.monitor["bootstrap"]["n_units"] == 20  # the test set's 20 texts, not 120 rows
    assert curve.monitor["bootstrap"]["resampled"] == "clusters (texts or sentences)"


def test_the_bootstrap_in_blocks_equals_it_at_once(monkeypatch):
    import probemeter.monitor as monitor

    labels, p1 = _predictions(5, 300)
    test, dev = _from_probabilities(p1, labels), _from_probabilities(p1[::-1], labels[::-1])
    texts = np.arange(300) // 3
    at_once = monitor_metrics([test, dev], [dev, test], seeds=[0, 1], clusters=texts, n_boot=64)
    monkeypatch.setattr(monitor, "_WEIGHTS_AT_ONCE", 300 * 5)  # blocks of 5 replicates
    blocks = monitor_metrics([test, dev], [dev, test], seeds=[0, 1], clusters=texts, n_boot=64)
    assert blocks == at_once
