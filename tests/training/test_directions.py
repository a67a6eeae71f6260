"""Direction baselines (``Direction("diff-means")``, ``Direction("lda")``): closed forms against
numpy and scikit-learn, the calibration at its optimum, batching, refusals, and the issue's
done criterion (LDA matches a converged linear probe on a planted linear concept with
anisotropic noise; the plain difference in means does not)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.optimize import minimize_scalar
from sklearn.covariance import ledoit_wolf_shrinkage
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

from probemeter import Execution, ProbeData
from probemeter.curves import loss_data_curve
from probemeter.mdl import online_codelength
from probemeter.probes import MLP, Direction, Linear, load_probes
from probemeter.training.config import TrainingConfig
from probemeter.training.directions import (
    CALIBRATION_TOLERANCE,
    DIRECTION_FAMILIES,
    PoolRows,
    fit_diff_means,
    fit_lda,
)
from probemeter.training.engine import fit_evaluate
from probemeter.training.memory import check_memory_budget, estimate_memory

CONFIG = TrainingConfig(steps=5)


def _gaussians(n: int, d: int = 12, classes: int = 2, seed: int = 0, spread: float = 1.0):
    """Classes with shared, anisotropic (rotated) covariance, their means ``spread`` apart."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    scales = np.geomspace(0.2, 3.0, d)
    means = spread * rng.normal(size=(classes, d))
    y = rng.integers(classes, size=n)
    x = means[y] + (rng.normal(size=(n, d)) * scales) @ rotation.T
    return x.astype(np.float32), y.astype(np.int64)


def _fit(fit, x, y, subsets, classes):
    return fit(PoolRows(torch.from_numpy(x)), torch.from_numpy(y), subsets, classes)


def _reference_statistics(x, y, classes):
    x = x.astype(np.float64)
    means = np.stack([x[y == k].mean(axis=0) for k in range(classes)])
    counts = np.bincount(y, minlength=classes)
    log_prior = np.log((counts + 1) / (len(y) + classes))  # add-one frequencies
    return means, log_prior


@pytest.mark.numerics
def test_diff_means_is_the_calibrated_class_mean_difference():
    x, y = _gaussians(300)
    subsets = [np.arange(40), np.arange(300)]
    fits = _fit(fit_diff_means, x, y, subsets, 2)
    for probe, subset in enumerate(subsets):
        means, log_prior = _reference_statistics(x[subset], y[subset], 2)
        a = fits.temperature[probe]
        w = fits.weights[probe].double().numpy()
        b = fits.biases[probe].double().numpy()
        # logit_1 − logit_0 = a (μ1 − μ0)ᵀ (x − (μ1 + μ0)/2) + ln(π1/π0)
        direction = means[1] - means[0]
        np.testing.assert_allclose(w[:, 1] - w[:, 0], a * direction, rtol=1e-5, atol=1e-6)
        midpoint_logit = (means[0] + means[1]) / 2 @ (w[:, 1] - w[:, 0]) + b[1] - b[0]
        np.testing.assert_allclose(midpoint_logit, log_prior[1] - log_prior[0], atol=1e-4)
        assert fits.shrinkage[probe] == 0 and a > 0


@pytest.mark.numerics
@pytest.mark.parametrize("classes", [2, 3])
def test_lda_equals_scikit_learn_with_the_same_ledoit_wolf_shrinkage(classes):
    x, y = _gaussians(400, classes=classes, seed=1)
    rng = np.random.default_rng(2)
    subsets = [np.arange(60), rng.choice(400, 250, replace=False), np.arange(400)]
    fits = _fit(fit_lda, x, y, subsets, classes)
    for probe, subset in enumerate(subsets):
        xs, ys = x[subset].astype(np.float64), y[subset]
        means, log_prior = _reference_statistics(xs, ys, classes)
        shrinkage = ledoit_wolf_shrinkage(xs - means[ys], assume_centered=True)
        assert fits.shrinkage[probe] == pytest.approx(shrinkage, rel=1e-9, abs=1e-12)
        assert 0 < shrinkage < 1
        sklearn = LinearDiscriminantAnalysis(solver="lsqr", shrinkage=shrinkage).fit(xs, ys)
        a = fits.temperature[probe]
        w = fits.weights[probe].double().numpy() / a
        b = (fits.biases[probe].double().numpy() - log_prior) / a
        if classes == 2:  # scikit-learn keeps class 1's row minus class 0's
            np.testing.assert_allclose(w[:, 1] - w[:, 0], sklearn.coef_[0], rtol=2e-5, atol=2e-5)
            intercept = sklearn.intercept_[0] - np.log(sklearn.priors_[1] / sklearn.priors_[0])
            np.testing.assert_allclose(b[1] - b[0], intercept, rtol=1e-4, atol=1e-4)
        else:
            np.testing.assert_allclose(w.T, sklearn.coef_, rtol=2e-5, atol=2e-5)
            np.testing.assert_allclose(
                b, sklearn.intercept_ - np.log(sklearn.priors_), rtol=1e-4, atol=1e-4
            )


def _mean_cross_entropy(a, scores, labels, log_prior):
    """Against add-one smoothed targets (1 − ε) e_y + ε/K, ε = 1/(n + 1)."""
    logits = a * scores + log_prior
    logits -= logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    smoothing = 1 / (len(labels) + 1)
    own = log_p[np.arange(len(labels)), labels]
    return -((1 - smoothing) * own + smoothing * log_p.mean(axis=1)).mean()


@pytest.mark.numerics
@pytest.mark.parametrize("fit", [fit_diff_means, fit_lda])
def test_the_calibration_stops_at_the_optimum_of_its_subset(fit):
    x, y = _gaussians(500, classes=3, seed=3, spread=0.3)  # overlapping: a finite optimum
    subset = np.arange(500)
    fits = _fit(fit, x, y, [subset], 3)
    a = fits.temperature[0]
    g, h = fits.calibration_gradient[0], fits.calibration_curvature[0]
    # the stated rule: half the squared Newton decrement at most the tolerance
    assert g * g / (2 * h) <= CALIBRATION_TOLERANCE and h > 0
    # the optimum found independently, by bounded scalar minimisation of the same loss
    _, log_prior = _reference_statistics(x, y, 3)
    w = fits.weights[0].double().numpy() / a
    offsets = (fits.biases[0].double().numpy() - log_prior) / a
    scores = x.astype(np.float64) @ w + offsets
    best = minimize_scalar(
        _mean_cross_entropy, bounds=(0, 10 * a), args=(scores, y, log_prior),
        method="bounded", options={"xatol": 1e-10},
    )  # fmt: skip
    # |a − a*| ≈ |g| / h; the tolerance bounds it by sqrt(2 tol / h)
    assert abs(a - best.x) <= np.sqrt(2 * CALIBRATION_TOLERANCE / h) + 1e-6


# the class-mean families; a seeded one (ccs: contrast pairs, two classes) in test_ccs.py
@pytest.mark.parametrize(
    "family", sorted(name for name, f in DIRECTION_FAMILIES.items() if not f.seeded)
)
def test_batched_probes_equal_each_fitted_alone(family):
    x, y = _gaussians(300, classes=3, seed=4)
    x_eval, y_eval = _gaussians(100, classes=3, seed=4)
    rng = np.random.default_rng(5)
    subsets = [rng.choice(300, n, replace=False) for n in (20, 80, 300, 150)]
    keys = [(0, i) for i in range(len(subsets))]
    probe = Direction(family)
    together = fit_evaluate(
        x, y, x_eval, y_eval, 3, subsets, keys, probe, CONFIG, return_parameters=True,
        per_example=True,
    )  # fmt: skip
    for i, subset in enumerate(subsets):
        alone = fit_evaluate(
            x, y, x_eval, y_eval, 3, [subset], [keys[i]], probe, CONFIG, return_parameters=True,
            per_example=True,
        )  # fmt: skip
        np.testing.assert_allclose(
            together.parameters[0][0][i], alone.parameters[0][0][0], rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(together.loss[i], alone.loss[0], rtol=1e-5)
        np.testing.assert_array_equal(together.predictions[i], alone.predictions[0])
    # the seed does not enter: the same subset under another key gives the same probe
    again = fit_evaluate(
        x, y, x_eval, y_eval, 3, subsets[:1], [(9, 9)], probe, CONFIG, return_parameters=True
    )
    np.testing.assert_array_equal(again.parameters[0][0][0], together.parameters[0][0][0])


def test_chunks_cut_by_the_memory_budget_change_nothing():
    x, y = _gaussians(400, d=64, seed=6)
    subsets = [np.arange(n) for n in (50, 100, 200, 400)]
    keys = [(0, n) for n in (50, 100, 200, 400)]
    memory = estimate_memory(Direction("lda"), 64, 2, CONFIG, n_train=400)
    # d² float64 covariances per probe: the estimate counts them
    assert memory.closed_form >= 3 * 8 * 64 * 64
    one_per_chunk = (memory.chunk_overhead + memory.per_probe * 1.5) / 2**30
    chunked = fit_evaluate(
        x, y, x[:50], y[:50], 2, subsets, keys, Direction("lda"), CONFIG,
        execution=Execution(max_memory=one_per_chunk), return_parameters=True,
    )  # fmt: skip
    whole = fit_evaluate(
        x, y, x[:50], y[:50], 2, subsets, keys, Direction("lda"), CONFIG, return_parameters=True
    )
    np.testing.assert_allclose(chunked.parameters[0][0], whole.parameters[0][0], rtol=1e-5)
    with pytest.raises(ValueError, match=r"direction probe.*Raise max_memory"):
        check_memory_budget(Direction("lda"), 64, 2, CONFIG, one_per_chunk / 4, sizes=[400])


def test_refusals_are_one_clear_line():
    x, y = _gaussians(100)
    subsets, keys = [np.arange(50)], [(0,)]
    with pytest.raises(ValueError, match="probe must be one of 'diff-means', 'lda'"):
        fit_evaluate(x, y, x, y, 2, subsets, keys, Direction("pca"), CONFIG)
    with pytest.raises(ValueError, match="family must name a direction family"):
        Direction("LDA!")
    labels = np.stack([y, 1 - y], axis=1).astype(np.float32)
    with pytest.raises(ValueError, match="label sets"):
        fit_evaluate(x, labels, x, labels, 2, subsets, keys, Direction("lda"), CONFIG)
    sparse = sp.csr_matrix(x)
    with pytest.raises(ValueError, match="dense features"):
        fit_evaluate(sparse, y, sparse, y, 2, subsets, keys, Direction("diff-means"), CONFIG)


def test_the_specification_is_its_own_and_reads_back():
    lda = Direction("lda")
    assert lda.to_dict() == {"family": "lda"} != Linear().to_dict()
    assert MLP.from_dict(lda.to_dict()) == lda and lda != Linear() and lda.hidden == ()
    assert {lda: 1}[Direction("lda")] == 1 and Direction("diff-means") != lda
    assert pickle.loads(pickle.dumps(lda)) == lda


def _planted(n: int, seed: int):
    """A planted linear concept: two Gaussian classes whose shared noise is strongly
    anisotropic and rotated, so that the Bayes-optimal direction Σ⁻¹(μ1 − μ0) is far from
    the mean difference μ1 − μ0."""
    d = 16
    rng = np.random.default_rng(100)  # the concept and the noise: fixed
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    scales = np.geomspace(0.1, 4.0, d)
    shift = rotation @ (0.1 * np.ones(d) + 0.45 * (scales > 2))  # mostly along noisy axes
    draw = np.random.default_rng(seed)
    y = draw.integers(2, size=n)
    x = (y[:, None] - 0.5) * shift + (draw.normal(size=(n, d)) * scales) @ rotation.T
    return x.astype(np.float32), y


@pytest.mark.numerics
@pytest.mark.slow
def test_done_lda_matches_a_linear_probe_and_the_mean_difference_does_not():
    x, y = _planted(8000, seed=1)
    x_test, y_test = _planted(5000, seed=2)
    data = ProbeData.from_arrays(x, y, x_test, y_test)
    pool = [np.arange(data.pool_size)]
    args = (data.X_train, data.y_train, data.X_test, data.y_test, 2, pool, [(0,)])
    # the linear probe to convergence: full batch, many steps, a small penalty
    converged = TrainingConfig(steps=3000, batch_size=data.pool_size, lr=0.05, weight_decay=1e-5)
    linear = fit_evaluate(*args, Linear(), converged).loss[0]
    lda = fit_evaluate(*args, Direction("lda"), CONFIG).loss[0]
    diff = fit_evaluate(*args, Direction("diff-means"), CONFIG).loss[0]
    assert abs(lda - linear) <= 0.02 * linear, (lda, linear)
    assert diff >= 1.25 * linear, (diff, linear)  # the known failure of the plain difference


def test_curves_codes_and_kept_probes_through_the_python_api(tmp_path):
    x, y = _planted(800, seed=3)
    data = ProbeData.from_arrays(x, y, test_size=0.25, random_state=0)
    curve = loss_data_curve(
        data, Direction("lda"), [20, 80, 300, 600], seeds=3, config=CONFIG, keep_probes=True,
        dev_fraction=0,
    )  # fmt: skip
    losses = curve.points.pivot(index="n", columns="seed", values="loss").to_numpy()
    assert losses.shape == (4, 3) and np.isfinite(losses).all()
    assert losses[-1].mean() < losses[0].mean()  # more data, better direction
    alone = fit_evaluate(
        data.X_train, data.y_train, data.X_test, data.y_test, 2,
        [np.arange(data.pool_size)], [(0,)], Direction("lda"), CONFIG,
    )  # fmt: skip
    # the curve's last size holds every pool row: whatever its seed, the same probe
    np.testing.assert_allclose(losses[-1], alone.loss[0], rtol=1e-5)
    curve.probes.save(tmp_path / "probes.safetensors")
    kept = load_probes(tmp_path / "probes.safetensors")
    assert kept[0].architecture == Direction("lda")
    code = online_codelength(data, Direction("diff-means"), (0.1, 0.3, 1.0), seeds=2)
    assert 0 < code.codelength_bits < code.uniform_bits


@pytest.mark.parametrize("family", ["diff-means", "lda"])
def test_a_subset_its_scores_separate_keeps_a_finite_temperature(family):
    """d > n: the training scores separate the subset; the plain cross-entropy would have no
    minimiser. With one pseudo-row the fitted logits' training margin is about ln n, and
    the test loss stays within a few nats of guessing."""
    x, y = _gaussians(300, d=64, seed=8)
    subset = np.arange(20)
    fits = _fit({"diff-means": fit_diff_means, "lda": fit_lda}[family], x, y, [subset], 2)
    w, b = fits.weights[0].double().numpy(), fits.biases[0].double().numpy()
    margins = (x[subset] @ w + b) @ np.array([-1.0, 1.0]) * np.where(y[subset] == 1, 1, -1)
    assert margins.min() > 0  # separated
    assert np.median(margins) < 2 * np.log(len(subset) + 1)
    g, h = fits.calibration_gradient[0], fits.calibration_curvature[0]
    assert g * g / (2 * h) <= CALIBRATION_TOLERANCE
    test = fit_evaluate(x, y, x[200:], y[200:], 2, [subset], [(0,)], Direction(family), CONFIG)
    assert test.loss[0] < 3.0


@pytest.mark.parametrize("family", ["diff-means", "lda"])
def test_a_pool_read_from_its_file_gives_the_same_probes(family, tmp_path, monkeypatch):
    """A large memory-mapped pool is read by pread (``FileRows``), never mapped whole: the
    rows, hence the fits, are the same."""
    from probemeter import _resident as resident

    x, y = _gaussians(500, d=16, seed=9)
    np.save(tmp_path / "pool.npy", x)
    mapped = np.load(tmp_path / "pool.npy", mmap_mode="r")
    subsets, keys = [np.arange(100), np.arange(500)], [(0,), (1,)]
    in_memory = fit_evaluate(
        x, y, x[:50], y[:50], 2, subsets, keys, Direction(family), CONFIG, return_parameters=True
    )
    monkeypatch.setattr(resident, "RESIDENT_FILE_BYTES", 0)
    assert resident.FileRows.of(mapped) is not None
    from_file = fit_evaluate(
        mapped, y, x[:50], y[:50], 2, subsets, keys, Direction(family), CONFIG,
        return_parameters=True,
    )  # fmt: skip
    np.testing.assert_array_equal(from_file.parameters[0][0], in_memory.parameters[0][0])
