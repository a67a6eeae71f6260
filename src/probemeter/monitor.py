"""Monitor metrics of two-class probes: AUROC, recall at a false-positive rate fixed on the
development split, Brier score and expected calibration error, with cluster-bootstrap intervals.

A probe used as a *monitor* flags one class (the *positive* class) in production text, so what
matters is how it ranks examples (AUROC), how much of the positive class it catches at a low
false-positive rate (FPR), and whether its probabilities can be read as probabilities
(Goldowsky-Dill et al. 2025, §3: recall at 1 % FPR; McKenzie et al. 2025: AUROC of probes as
monitors). With p_i = p(positive | x_i) from the probe and y_i = 1 for the positive class:

* AUROC = P(s_pos > s_neg) + ½ P(s_pos = s_neg), the Mann–Whitney statistic over every
  (positive, negative) pair, s the probe's log-odds of the positive class;
* recall at FPR α: the threshold t is fixed on the **development split** alone, as the
  (⌊α·n⌋ + 1)-th highest score of its n negatives, so that at most a share α of them score
  above t (``dev_threshold``); an example is flagged when s > t. The test recall (true-positive
  rate) and the test FPR actually reached at that unchanged t are both reported — the test
  labels never enter t;
* Brier score = mean (p_i − y_i)²;
* expected calibration error (Guo et al. 2017, §2): the top-label confidence c_i = max(p_i,
  1 − p_i) binned into 15 equal-width bins ((m−1)/15, m/15] of [0, 1]; ECE = Σ_m (|B_m|/n)
  · |acc(B_m) − conf(B_m)|, acc the share of the bin's predictions (p_i > ½ → positive) that
  are right, conf its mean c_i.

Each test metric has a percentile bootstrap interval (95 % by default, 1000 replicates) that
resamples the test set's clusters — whole texts or sentences where the rows are words or
tokens (``ProbeData.clusters_test``), else single examples — with replacement, as the power
of probemeter's clustered tests does (:func:`probemeter.power.clustered.decision_power`: a
multinomial draw of the units); rows of one cluster are not independent draws, and an
example-level bootstrap would give intervals too narrow. The same draws serve every seed, so
the mean over seeds gets its interval from the replicates' seed means.

References:
    Goldowsky-Dill, N., Chughtai, B., Heimersheim, S. & Hobbhahn, M. (2025). Detecting
    strategic deception using linear probes. arXiv:2502.03407

    McKenzie, A., Pawar, U., Blandfort, P., Bankes, W., Krueger, D., Lubana, E. S. &
    Krasheninnikov, D. (2025). Detecting high-stakes interactions with activation probes.
    arXiv:2506.10805

    Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. (2017). On calibration of modern neural
    networks. *ICML 2017*. arXiv:1706.04599
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ECE_BINS",
    "FPR_TARGETS",
    "MONITOR_BOOTSTRAP",
    "MONITOR_CONFIDENCE",
    "MONITOR_METRICS",
    "MonitorScores",
    "auroc",
    "brier",
    "dev_threshold",
    "expected_calibration_error",
    "monitor_metrics",
    "positive_scores",
    "recall_at",
]

#: the false-positive rates at which recall is reported, thresholds fixed on the dev split
FPR_TARGETS = (0.01, 0.05)
#: equal-width bins of the top-label confidence in the expected calibration error
ECE_BINS = 15
#: bootstrap replicates and the intervals' level
MONITOR_BOOTSTRAP = 1000
MONITOR_CONFIDENCE = 0.95
#: metric name -> (label, which way it improves); the names ``[method] choose_by`` takes
MONITOR_METRICS: dict[str, tuple[str, str]] = {
    "auroc": ("AUROC", "higher"),
    "recall@1%fpr": ("recall at 1 % FPR (dev threshold)", "higher"),
    "recall@5%fpr": ("recall at 5 % FPR (dev threshold)", "higher"),
    "brier": ("Brier score", "lower"),
    "ece": (f"ECE ({ECE_BINS} bins)", "lower"),
}


def _recall_name(fpr: float) -> str:
    return f"recall@{fpr:.0%}fpr"


@dataclass(frozen=True)
class MonitorScores:
    """A probe's log-odds of the positive class, ``scores`` (n,), and whether each example
    belongs to it, ``positive`` (n,) bool."""

    scores: np.ndarray
    positive: np.ndarray

    @property
    def probabilities(self) -> np.ndarray:
        """p(positive) = σ(score)."""
        return 1.0 / (1.0 + np.exp(-self.scores))


def positive_scores(nll: np.ndarray, labels: np.ndarray, positive: int = 1) -> MonitorScores:
    """Two-class log-odds of class ``positive`` from each example's cross-entropy under its
    label: the probe gives p(y_i) = exp(−nll_i), and with two classes the other class has
    1 − p(y_i), so s_i = log p(positive) − log p(other) = ±(log(1 − e^{−nll_i}) + nll_i) — the
    probe's output, whatever the label (the label only says which side of 1 − p it is on).
    Computed with ``expm1`` so that confident probes keep their order; a cross-entropy of
    exactly 0 (float32 underflow) is read as the smallest positive double.

    Args:
        nll: (..., n) cross-entropy in nats of each example under its own label.
        labels: (n,) class indices 0 or 1.
        positive: the positive class's index.
    """
    loss = np.maximum(np.asarray(nll, dtype=np.float64), np.finfo(np.float64).tiny)
    labels = np.asarray(labels)
    # log p(own label) - log p(other label): -nll - log(1 - exp(-nll))
    own_minus_other = -loss - np.log(-np.expm1(-loss))
    is_positive = labels == positive
    return MonitorScores(np.where(is_positive, own_minus_other, -own_minus_other), is_positive)


def dev_threshold(dev_scores: np.ndarray, dev_positive: np.ndarray, fpr: float) -> float:
    """The score threshold t that flags (s > t) at most a share ``fpr`` of the development
    split's negatives: the (⌊fpr·n⌋ + 1)-th highest of their n scores. Only development
    arrays enter; the test set is never seen (Goldowsky-Dill et al. 2025 fix it on control
    data).

    Raises:
        ValueError: the development split has no negative example.
    """
    negatives = np.sort(np.asarray(dev_scores, dtype=np.float64)[~np.asarray(dev_positive)])
    if negatives.size == 0:
        raise ValueError("the development split holds no negative example to set a threshold on")
    allowed = int(np.floor(fpr * negatives.size + 1e-9))  # the 1e-9: fpr·n exact in decimals
    return float(negatives[negatives.size - 1 - min(allowed, negatives.size - 1)])


def recall_at(scores: MonitorScores, threshold: float) -> tuple[float, float]:
    """(recall, false-positive rate) of flagging s > ``threshold``."""
    flagged = scores.scores > threshold
    return _share(flagged, scores.positive), _share(flagged, ~scores.positive)


def _share(flagged: np.ndarray, among: np.ndarray) -> float:
    count = int(among.sum())
    return float("nan") if count == 0 else float(flagged[among].sum() / count)


def auroc(scores: MonitorScores) -> float:
    """The Mann–Whitney AUROC of ``scores`` (ties count ½)."""
    value = _weighted_auroc(scores, np.ones((1, scores.scores.size)))
    return float(value[0])


def _weighted_auroc(scores: MonitorScores, weights: np.ndarray) -> np.ndarray:
    """AUROC under each row of example ``weights`` (B, n): Σ_k P_k (N_<k + ½ N_k) / (ΣP·ΣN)
    over the distinct scores k, P_k and N_k the weights of the positives and negatives
    scoring k, N_<k those of the negatives below."""
    from scipy import sparse

    distinct, index = np.unique(scores.scores, return_inverse=True)
    n = index.size
    by_score = sparse.csr_matrix((np.ones(n), (np.arange(n), index)), shape=(n, distinct.size))
    pos = np.asarray((by_score.T @ (weights * scores.positive).T).T)
    neg = np.asarray((by_score.T @ (weights * ~scores.positive).T).T)
    below = np.cumsum(neg, axis=1) - neg
    with np.errstate(invalid="ignore", divide="ignore"):
        return (pos * (below + 0.5 * neg)).sum(axis=1) / (pos.sum(axis=1) * neg.sum(axis=1))


def brier(scores: MonitorScores) -> float:
    """Mean (p_i − y_i)² of the positive class's probability."""
    return float(np.mean((scores.probabilities - scores.positive) ** 2))


def _calibration_parts(scores: MonitorScores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per example: its bin of top-label confidence ((m−1)/M, m/M], its confidence, and
    whether its prediction (positive when p > ½) is right."""
    p = scores.probabilities
    confidence = np.maximum(p, 1.0 - p)
    bins = np.clip(np.ceil(confidence * ECE_BINS).astype(np.int64) - 1, 0, ECE_BINS - 1)
    return bins, confidence, (p > 0.5) == scores.positive


def expected_calibration_error(scores: MonitorScores) -> float:
    """Σ_m (|B_m|/n)·|acc(B_m) − conf(B_m)| over :data:`ECE_BINS` equal-width bins of the
    top-label confidence (Guo et al. 2017, eq. 3)."""
    bins, confidence, right = _calibration_parts(scores)
    n = np.bincount(bins, minlength=ECE_BINS)
    gap = np.abs(
        np.bincount(bins, right.astype(float), ECE_BINS) - np.bincount(bins, confidence, ECE_BINS)
    )
    return float(gap.sum() / n.sum())


def _finite(value: Any) -> float | None:
    """A float, or None where it is undefined (NaN: e.g. AUROC of a one-class test set)."""
    return None if value is None or not np.isfinite(value) else float(value)


def _replicate_draws(
    clusters: np.ndarray | None, n: int, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The cluster bootstrap's draws: each replicate draws the test set's units (clusters, else
    examples) with replacement, a multinomial count per unit, (n_boot, units); and each
    example's unit, (n,): an example weighs its unit's count."""
    units = np.arange(n) if clusters is None else np.unique(clusters, return_inverse=True)[1]
    n_units = int(units.max()) + 1
    rng = np.random.default_rng([int(seed), n_units, 0x40C])
    draws = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot)
    return draws, units


#: example weights held at once by the bootstrap (replicates x examples), 32 MiB of float64
_WEIGHTS_AT_ONCE = 1 << 22


def _bootstrap(
    scores: MonitorScores,
    draws: np.ndarray,
    units: np.ndarray,
    thresholds: dict[str, float],
) -> dict[str, np.ndarray]:
    """Every metric on each replicate, the replicates' example weights made a block at a time
    (a test set of token rows may hold 10^5 rows: 1000 replicates at once would be 800 MB)."""
    step = max(1, _WEIGHTS_AT_ONCE // max(1, units.size))
    blocks = [
        _weighted_metrics(
            scores, draws[start : start + step][:, units].astype(np.float64), thresholds
        )
        for start in range(0, draws.shape[0], step)
    ]
    return {name: np.concatenate([block[name] for block in blocks]) for name in blocks[0]}


def _weighted_metrics(
    scores: MonitorScores, weights: np.ndarray, thresholds: dict[str, float]
) -> dict[str, np.ndarray]:
    """Every metric under each row of example ``weights`` (B, n)."""
    y = scores.positive
    total = weights.sum(axis=1)
    p = scores.probabilities
    with np.errstate(invalid="ignore", divide="ignore"):
        values = {
            "auroc": _weighted_auroc(scores, weights),
            "brier": weights @ ((p - y) ** 2) / total,
        }
        bins, confidence, right = _calibration_parts(scores)
        onehot = np.zeros((y.size, ECE_BINS))
        onehot[np.arange(y.size), bins] = 1.0
        gap = np.abs(weights @ (onehot * right[:, None]) - weights @ (onehot * confidence[:, None]))
        values["ece"] = gap.sum(axis=1) / total
        for name, threshold in thresholds.items():
            flagged = (scores.scores > threshold).astype(float)
            values[name] = (weights @ (flagged * y)) / (weights @ y.astype(float))
            values[f"{name}:test_fpr"] = (weights @ (flagged * ~y)) / (weights @ (~y).astype(float))
    return values


def monitor_metrics(
    test: Sequence[MonitorScores],
    dev: Sequence[MonitorScores] | None,
    *,
    seeds: Sequence[int],
    clusters: np.ndarray | None = None,
    n_boot: int = MONITOR_BOOTSTRAP,
    confidence: float = MONITOR_CONFIDENCE,
    random_state: int = 0,
) -> dict[str, Any]:
    """The monitor metrics of one representation's probes, one per seed (see the module
    docstring), as a JSON-ready dictionary.

    Args:
        test: per seed, the probe's scores on the test set (one test set: the same labels).
        dev: per seed, its scores on the development split (None: no development split, so no
            threshold and no recall at a fixed FPR).
        seeds: the seed of each probe.
        clusters: (n_test,) the unit each test example was sampled in (a text or sentence);
            None: every example is its own.
        n_boot, confidence, random_state: the bootstrap's replicates, level and seed.

    Returns:
        ``{"metrics": {name: {"value", "low", "high", "per_seed", "seed_low", "seed_high"}},
        "dev": {name: per-seed values on the development split}, "thresholds": {name:
        per-seed thresholds (log-odds), "split": "dev"}, "dev_fpr": ..., "test_fpr":
        {name: {"value", "low", "high", "per_seed"}}, "bootstrap": {...}}``; ``value`` is the
        mean over seeds, ``low``/``high`` its bootstrap interval.
    """
    n = test[0].scores.size
    draws, units = _replicate_draws(clusters, n, n_boot, random_state)
    names = ["auroc", "brier", "ece"]
    thresholds: list[dict[str, float]] = [{} for _ in test]
    dev_values: dict[str, list[float]] = {}
    dev_fpr: dict[str, list[float]] = {}
    no_threshold = None
    if dev is not None and not all((~seed_dev.positive).any() for seed_dev in dev):
        no_threshold = "the development split holds no negative example: no threshold, no recall"
        dev = None
    if dev is not None:
        names += [_recall_name(fpr) for fpr in FPR_TARGETS]
        for seed_dev, chosen in zip(dev, thresholds):
            for fpr in FPR_TARGETS:
                name = _recall_name(fpr)
                chosen[name] = dev_threshold(seed_dev.scores, seed_dev.positive, fpr)
                recall, reached = recall_at(seed_dev, chosen[name])
                dev_values.setdefault(name, []).append(recall)
                dev_fpr.setdefault(name, []).append(reached)
            for name, measure in (
                ("auroc", auroc),
                ("brier", brier),
                ("ece", expected_calibration_error),
            ):
                dev_values.setdefault(name, []).append(measure(seed_dev))
    point = [_weighted_metrics(s, np.ones((1, n)), t) for s, t in zip(test, thresholds)]
    boot = [_bootstrap(s, draws, units, t) for s, t in zip(test, thresholds)]
    tail = 50 * (1 - confidence)

    def summarise(name: str) -> dict[str, Any]:
        per_seed = [_finite(values[name][0]) for values in point]
        replicate_means = np.mean([values[name] for values in boot], axis=0)
        replicate_means = replicate_means[np.isfinite(replicate_means)]
        # a metric undefined on the test set (one class only) is null, as is its interval
        low, high = (
            np.percentile(replicate_means, [tail, 100 - tail])
            if replicate_means.size and None not in per_seed
            else (None, None)
        )
        defined = [value for value in per_seed if value is not None]
        return {
            "value": float(np.mean(defined)) if len(defined) == len(per_seed) else None,
            "low": _finite(low),
            "high": _finite(high),
            "per_seed": per_seed,
            "seed_low": min(defined, default=None),
            "seed_high": max(defined, default=None),
        }

    recalls = [name for name in names if name.startswith("recall@")]
    units = "examples" if clusters is None else "clusters (texts or sentences)"
    return {
        "seeds": [int(seed) for seed in seeds],
        "metrics": {name: summarise(name) for name in names},
        "test_fpr": {name: summarise(f"{name}:test_fpr") for name in recalls},
        "dev": {name: [_finite(v) for v in values] for name, values in dev_values.items()},
        "dev_fpr": {name: [_finite(v) for v in values] for name, values in dev_fpr.items()},
        "thresholds": {
            "split": "dev",
            "scores": "log-odds of the positive class; flagged when above",
            **({} if no_threshold is None else {"note": no_threshold}),
            "dev_negatives": [] if dev is None else [int((~d.positive).sum()) for d in dev],
            **{name: [t[name] for t in thresholds] for name in recalls},
        },
        "bootstrap": {
            "replicates": int(n_boot),
            "confidence": float(confidence),
            "resampled": units,
            "n_units": int(n if clusters is None else np.unique(clusters).size),
            "random_state": int(random_state),
        },
        "ece_bins": f"{ECE_BINS} equal-width bins of the top-label confidence, |acc - conf| "
        "weighted by the bin's share",
    }
