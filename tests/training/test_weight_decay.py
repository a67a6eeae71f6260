"""Weight decay, an L2 penalty (λ/2)·‖W‖² on the probes' weight matrices (TrainingConfig's
``weight_decay``), and per-probe settings trained side by side (fit_evaluate's ``lr`` and
``weight_decay``): λ = 0 changes nothing, the penalty's gradient is λW on the weights and
nothing on the biases (a hand computation), and a linear probe trained to a stated
convergence criterion at λ = weight_decay_for_c(C, n, K) — 1/(C·n) for K ≥ 3 classes, 2/(C·n)
for K = 2 — has scikit-learn's LogisticRegression(C) coefficients, within the distance its
gradient norm proves."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probemeter import Execution
from probemeter.probes import MLP, Linear
from probemeter.training import engine
from probemeter.training.config import (
    TrainingConfig,
    c_for_weight_decay,
    grid_settings,
    weight_decay_for_c,
)
from probemeter.training.early_stopping import BatchedAdam
from probemeter.training.engine import fit_evaluate


def _blobs(n: int = 240, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three overlapping Gaussian classes (not separable: the unpenalised optimum is finite)."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 3
    centres = rng.normal(size=(3, d))
    return (rng.normal(size=(n, d)) + centres[labels]).astype(np.float32), labels


def test_zero_weight_decay_keeps_the_config_and_its_key():
    assert TrainingConfig(weight_decay=0) == TrainingConfig()
    assert "weight_decay" not in TrainingConfig().to_dict()
    assert TrainingConfig(weight_decay=1e-3).to_dict()["weight_decay"] == 1e-3
    assert TrainingConfig.from_dict(TrainingConfig(weight_decay=0.5).to_dict()).weight_decay == 0.5
    with pytest.raises(ValueError, match="weight_decay"):
        TrainingConfig(weight_decay=-1.0)


def test_per_probe_settings_equal_to_the_config_change_nothing():
    """Per-probe values equal to the config's take the same path as none given: the same
    numbers bit for bit (and weight_decay=0 is the engine's default path: see
    tests/curves/test_settings_grid.py for a curve before and after)."""
    X, y = _blobs()
    subsets = [np.arange(n) for n in (20, 60, 200)]
    keys = [(0, i) for i in range(3)]
    config = TrainingConfig(steps=40, lr=3e-3, batch_size=32)
    common = (X, y, X[:90], y[:90], 3, subsets, keys, MLP((8,)), config)
    plain = fit_evaluate(*common, execution=Execution(device="cpu", n_jobs=1))
    given = fit_evaluate(
        *common, execution=Execution(device="cpu", n_jobs=1), lr=[3e-3] * 3, weight_decay=[0.0] * 3
    )
    np.testing.assert_array_equal(plain.loss, given.loss)
    np.testing.assert_array_equal(plain.accuracy, given.accuracy)


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.numerics
def test_the_penalty_gradient_by_hand():
    """Three full-batch Adam steps of a linear probe at λ = 0.7, computed by hand in float64:
    the weights' gradient is Xᵀ(softmax(XW + b) − Y)/n + λW, the biases' has no λ term."""
    X, y = _blobs(n=30, d=4)
    lam, lr, steps, key = 0.7, 0.05, 3, (3, 1)
    config = TrainingConfig(steps=steps, lr=lr, batch_size=64, weight_decay=lam)
    trained = fit_evaluate(
        X,
        y,
        X,
        y,
        3,
        [np.arange(30)],
        [key],
        Linear(),
        config,
        execution=Execution(device="cpu", n_jobs=1),
        return_parameters=True,
    )
    [(weight, bias)] = Linear().initial_parameters(np.random.default_rng(list(key)), 4, 3)
    W, b = weight.astype(np.float64), bias.astype(np.float64)
    onehot = np.eye(3)[y]
    state = {"W": [np.zeros_like(W)] * 2, "b": [np.zeros_like(b)] * 2}
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for t in range(1, steps + 1):
        residual = _softmax(X @ W + b) - onehot
        gradients = {"W": X.T @ residual / len(y) + lam * W, "b": residual.mean(axis=0)}
        for name, value in (("W", W), ("b", b)):
            m, v = state[name]
            g = gradients[name]
            m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
            state[name] = [m, v]
            value -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    [(trained_w, trained_b)] = trained.parameters
    np.testing.assert_allclose(trained_w[0], W, atol=2e-6)
    np.testing.assert_allclose(trained_b[0], b, atol=2e-6)
    # the penalty mattered: without it the probe ends elsewhere
    free = fit_evaluate(
        X, y, X, y, 3, [np.arange(30)], [key], Linear(), TrainingConfig(steps=steps, lr=lr,
        batch_size=64), execution=Execution(device="cpu", n_jobs=1), return_parameters=True,
    )  # fmt: skip
    assert np.abs(free.parameters[0][0][0] - W).max() > 1e-3


@pytest.mark.numerics
def test_batched_adam_per_probe_decay_matches_torch_adam():
    """Runs of probes with their own (lr, λ): each probe's weight follows torch.optim.Adam with
    weight_decay=λ (coupled L2), its bias Adam without; a probe at lr 0 does not move."""
    settings = [(0.01, 0.0), (0.01, 0.5), (0.01, 0.5), (0.003, 0.5), (0.0, 0.5)]
    generator = torch.Generator().manual_seed(4)
    weight = torch.randn(5, 4, 3, generator=generator)
    bias = torch.randn(5, 1, 3, generator=generator)
    start = weight.clone()
    optimizer = BatchedAdam(
        [weight, bias],
        [lr for lr, _ in settings],
        weight_decay=[decay for _, decay in settings],
        decayed=[True, False],
    )
    singles = [
        (torch.nn.Parameter(weight[i].clone()), torch.nn.Parameter(bias[i].clone()))
        for i in range(5)
    ]
    references = [
        torch.optim.Adam([{"params": [w], "weight_decay": decay}, {"params": [b]}], lr=lr)
        for (w, b), (lr, decay) in zip(singles, settings)
    ]
    for _ in range(6):
        weight.grad = torch.randn(5, 4, 3, generator=generator)
        bias.grad = torch.randn(5, 1, 3, generator=generator)
        optimizer.step()
        for i, ((w, b), reference) in enumerate(zip(singles, references)):
            w.grad, b.grad = weight.grad[i].clone(), bias.grad[i].clone()
            reference.step()
    for i in range(4):
        torch.testing.assert_close(weight[i], singles[i][0].detach(), rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(bias[i], singles[i][1].detach(), rtol=1e-6, atol=1e-7)
    assert torch.equal(weight[4], start[4])


@pytest.mark.numerics
def test_a_grid_trains_in_one_plan_and_each_setting_as_alone():
    """Four settings × three probes in one call: one chunk plan, one chunk on a CPU worker;
    each setting's probes have the numbers they have trained alone, up to float rounding."""
    X, y = _blobs()
    subsets = [np.arange(n) for n in (20, 60, 200)]
    keys = [(0, i) for i in range(3)]
    base = TrainingConfig(steps=60, lr=3e-3, batch_size=32)
    configs = grid_settings(base, {"weight_decay": [0.0, 0.05], "lr": [1e-3, 1e-2]})
    plans = []
    real = engine._plan

    def spy(*args, **kwargs):
        plans.append(real(*args, **kwargs))
        return plans[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "_plan", spy)
        together = fit_evaluate(
            X,
            y,
            X[:90],
            y[:90],
            3,
            subsets * 4,
            keys * 4,
            MLP((8,)),
            base,
            execution=Execution(device="cpu", n_jobs=1),
            lr=np.repeat([c.lr for c in configs], 3),
            weight_decay=np.repeat([c.weight_decay for c in configs], 3),
        )
    assert len(plans) == 1 and sum(chunk.members.size for chunk in plans[0]) == 12
    for s, config in enumerate(configs):
        alone = fit_evaluate(
            X,
            y,
            X[:90],
            y[:90],
            3,
            subsets,
            keys,
            MLP((8,)),
            config,
            execution=Execution(device="cpu", n_jobs=1),
        )
        np.testing.assert_allclose(together.loss[3 * s : 3 * s + 3], alone.loss, rtol=1e-5)


def test_per_probe_settings_are_checked_by_name():
    X, y = _blobs(n=30)
    common = (X, y, X, y, 3, [np.arange(10)], [(0,)], Linear(), TrainingConfig(steps=1))
    with pytest.raises(ValueError, match=r"^lr: one value per probe"):
        fit_evaluate(*common, execution=Execution(device="cpu"), lr=[1e-3, 1e-3])
    with pytest.raises(ValueError, match=r"^weight_decay must be finite and >= 0"):
        fit_evaluate(*common, execution=Execution(device="cpu"), weight_decay=[-0.1])
    with pytest.raises(ValueError, match=r"^grid\['lr'\] repeats"):
        grid_settings(TrainingConfig(), {"lr": [1e-3, 1e-3]})
    with pytest.raises(ValueError, match="cannot be varied"):
        grid_settings(TrainingConfig(), {"steps": [1, 2]})


#: the convergence criterion: a probe counts as trained to the optimum of J once the norm of
#: J's gradient at its parameters, computed in float64, is at most this (float32 training
#: reaches about 1e-7 here; the coefficient tolerance follows from it, see _certified_distance)
GRADIENT_NORM = 1e-6
#: steps added per round of training until every probe meets GRADIENT_NORM, and the most
#: steps tried: Adam at a constant learning rate reaches float32's floor of the gradient and
#: then, its second moments decaying to that floor, takes lr-sized steps away from the optimum
#: again, so a probe is accepted at the first round that meets the criterion
ROUND_STEPS, MAX_STEPS, FULL_BATCH_LR = 250, 4000, 0.02


def _classes(n: int, d: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """K overlapping Gaussian classes of equal size (not separable: finite optimum)."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % K
    centres = rng.normal(size=(K, d))
    return (rng.normal(size=(n, d)) + centres[labels]).astype(np.float32), labels


def _multilabel(y: np.ndarray) -> bool:
    """Label sets: a float 0/1 matrix (n, K), K sigmoids; else class indices, a softmax."""
    return y.ndim == 2


def _probabilities(X: np.ndarray, y: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """softmax(XW + b), or σ(XW + b) for label sets, float64."""
    logits = X.astype(np.float64) @ W + b
    return 1 / (1 + np.exp(-logits)) if _multilabel(y) else _softmax(logits)


def _gradient(X: np.ndarray, y: np.ndarray, W: np.ndarray, b: np.ndarray, lam: float):
    """∇J of J(W, b) = (1/n) Σ_i ℓ_i + (λ/2)‖W‖² (softmax cross-entropy, or binary
    cross-entropy summed over labels), float64, as one vector (W row-major, then b): the
    residual P − Y is the same expression for both."""
    targets = y if _multilabel(y) else np.eye(W.shape[1])[y]
    residual = _probabilities(X, y, W, b) - targets
    return np.concatenate([(X.T @ residual / len(y) + lam * W).ravel(), residual.mean(axis=0)])


def _smallest_curvature(X: np.ndarray, y: np.ndarray, W: np.ndarray, b: np.ndarray, lam: float):
    """The smallest eigenvalue of J's Hessian at (W, b), float64 — for a softmax on the
    directions other than a common shift of the intercepts (along which J is constant). With
    x̃ = (x, 1), the Hessian is (1/n) Σ_i (x̃_i x̃_iᵀ) ⊗ S_i + λ on W, where S_i is
    diag(p_i) − p_i p_iᵀ for a softmax and diag(σ_i(1 − σ_i)) for label sets."""
    n, d = X.shape
    K = W.shape[1]
    p = _probabilities(X, y, W, b)
    if _multilabel(y):
        S = np.einsum("ik,km->ikm", p * (1 - p), np.eye(K))
    else:
        S = np.einsum("ik,km->ikm", p, np.eye(K)) - np.einsum("ik,im->ikm", p, p)
    Xt = np.hstack([X.astype(np.float64), np.ones((n, 1))])
    H = np.einsum("ij,il,ikm->jklm", Xt, Xt, S).reshape((d + 1) * K, (d + 1) * K) / n
    H[np.arange(d * K), np.arange(d * K)] += lam
    if _multilabel(y):
        return float(np.linalg.eigvalsh(H)[0])
    shift = np.zeros((d + 1) * K)
    shift[d * K :] = 1 / np.sqrt(K)
    basis = np.linalg.svd(np.eye((d + 1) * K) - np.outer(shift, shift))[0][:, :-1]
    return float(np.linalg.eigvalsh(basis.T @ H @ basis)[0])


def _certified_distance(X, y, ours, theirs, lam) -> tuple[float, float, dict]:
    """(‖θ_ours − θ_theirs‖, its bound, figures): the distance of two parameter points (W, b)
    (a softmax's intercepts centred) and the bound that J's gradients at them prove.

    J is strongly convex (a softmax's off the intercept shift): for θ on the segment between
    the points, each example's S_i changes by at most a factor e^{±R} — R the largest spread
    max_k − min_k of an example's change of logits between the two points for a softmax
    (each p_k changes by at most that factor, and uᵀS_iu is p's variance of u), the largest
    |change| of a logit for sigmoids (log σ(1 − σ) is 1-Lipschitz) — so J's Hessian
    ⪰ e^{−R}·μ, μ its smallest curvature at θ_theirs (:func:`_smallest_curvature`). Then
    ⟨∇J(a) − ∇J(b), a − b⟩ ≥ e^{−R} μ ‖a − b‖², and by Cauchy–Schwarz
    ‖a − b‖ ≤ (‖∇J(a)‖ + ‖∇J(b)‖) / (e^{−R} μ). Every quantity is computed in float64, so the
    bound follows from the computation, not from a CPU's rounding (it is rigorous up to
    float64's own, ~1e-16 relative)."""
    centred = (lambda b: b) if _multilabel(y) else (lambda b: b - b.mean())
    (Wa, ba), (Wb, bb) = ((W, centred(b)) for W, b in (ours, theirs))
    ga = float(np.linalg.norm(_gradient(X, y, Wa, ba, lam)))
    gb = float(np.linalg.norm(_gradient(X, y, Wb, bb, lam)))
    logits = X.astype(np.float64) @ (Wa - Wb) + (ba - bb)
    if _multilabel(y):
        spread = float(np.abs(logits).max())
    else:
        spread = float((logits.max(axis=1) - logits.min(axis=1)).max())
    mu = _smallest_curvature(X, y, Wb, bb, lam)
    distance = float(np.sqrt(np.sum((Wa - Wb) ** 2) + np.sum((ba - bb) ** 2)))
    figures = {"grad_ours": ga, "grad_theirs": gb, "mu": mu, "spread": spread}
    return distance, (ga + gb) / (np.exp(-spread) * mu), figures


def _train_to_the_criterion(X, y, K: int, lams: list[float]) -> tuple[list, list[int]]:
    """Linear probes, one per λ, each trained full-batch by the engine for ROUND_STEPS,
    2·ROUND_STEPS, ... steps until J's gradient norm at its parameters is at most
    GRADIENT_NORM: each probe's parameters (float64) at its first such round, and that
    round's steps. Fails naming the probes that never met it within MAX_STEPS."""
    n = len(y)
    accepted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    steps_taken: dict[int, int] = {}
    for steps in range(ROUND_STEPS, MAX_STEPS + 1, ROUND_STEPS):
        left = [i for i in range(len(lams)) if i not in accepted]
        if not left:
            break
        config = TrainingConfig(steps=steps, lr=FULL_BATCH_LR, batch_size=n)
        trained = fit_evaluate(
            X,
            y,
            X,
            y,
            K,
            [np.arange(n)] * len(left),
            [(0,)] * len(left),
            Linear(),
            config,
            execution=Execution(device="cpu", n_jobs=1),
            return_parameters=True,
            weight_decay=[lams[i] for i in left],
        )
        [(weights, biases)] = trained.parameters
        for row, i in enumerate(left):
            W, b = weights[row].astype(np.float64), biases[row].astype(np.float64)
            if np.linalg.norm(_gradient(X, y, W, b, lams[i])) <= GRADIENT_NORM:
                accepted[i], steps_taken[i] = (W, b), steps
    never = [lams[i] for i in range(len(lams)) if i not in accepted]
    assert not never, f"λ = {never}: ‖∇J‖ > {GRADIENT_NORM:g} after every round to {MAX_STEPS}"
    return [accepted[i] for i in range(len(lams))], [steps_taken[i] for i in range(len(lams))]


@pytest.mark.numerics
@pytest.mark.parametrize("K", [2, 3, 10])
def test_linear_probes_at_the_documented_lambda_are_scikit_learns(K):
    """At λ = weight_decay_for_c(C, n, K) (1/(C·n) for K ≥ 3, 2/(C·n) for K = 2), linear
    probes trained by the engine to a stated convergence criterion (‖∇J‖ ≤ GRADIENT_NORM,
    float64) have scikit-learn's LogisticRegression(C) (lbfgs, tol 1e-10, float64)
    coefficients within the distance the two gradient norms prove (_certified_distance), and
    that distance is within 1e-4 of the coefficients' norm, at C = 0.01, 0.1 and 1.

    K = 2 compares the probe's log-odds w₁ − w₀, b₁ − b₀ with scikit-learn's coef_ and
    intercept_ (its binary fit enters J as the columns ∓v/2, ∓c/2); K ≥ 3 compares W with
    coef_ᵀ uncentred — both optimise the same J, whose minimiser has columns summing to zero
    (checked: ‖W·1‖ = ‖∇_W J·1‖/λ for any W) — and the intercepts centred (softmax ignores a
    common constant)."""
    from sklearn.linear_model import LogisticRegression

    X, y = _classes(n=200, d=5, K=K, seed=1)
    n, Cs = len(y), (0.01, 0.1, 1.0)
    lams = [weight_decay_for_c(C, n, K) for C in Cs]
    probes, steps = _train_to_the_criterion(X, y, K, lams)
    for C, lam, (W, b), taken in zip(Cs, lams, probes, steps):
        reference = LogisticRegression(C=C, tol=1e-10, max_iter=100_000)
        reference.fit(X.astype(np.float64), y)
        coef, intercept = reference.coef_.T, reference.intercept_
        if K == 2:
            theirs = (np.hstack([-coef / 2, coef / 2]), np.array([-1.0, 1.0]) * intercept / 2)
        else:
            theirs = (coef, intercept)
        distance, bound, figures = _certified_distance(X, y, (W, b), theirs, lam)
        where = f"K = {K}, C = {C}, λ = {lam:g}, {taken} steps: {figures}"
        assert figures["grad_theirs"] <= GRADIENT_NORM, where  # scikit-learn converged on J
        assert distance <= bound, where  # what strong convexity proves
        if K == 2:
            # the log-odds map (W, b) ↦ (w₁ − w₀, b₁ − b₀) has norm √2
            ours = np.append(W[:, 1] - W[:, 0], b[1] - b[0])
            expected, tolerance = np.append(coef, intercept), np.sqrt(2) * bound
        else:
            column_sums = np.linalg.norm(coef.sum(axis=1))
            assert column_sums <= np.sqrt(K) * figures["grad_theirs"] / lam, where
            ours = np.append(W, b - b.mean())
            expected, tolerance = np.append(coef, intercept - intercept.mean()), bound
        difference = float(np.linalg.norm(ours - expected))
        assert difference <= tolerance, where
        # the criterion proves scikit-learn's coefficients within 1e-4 of their norm
        assert tolerance <= 1e-4 * np.linalg.norm(coef), where


@pytest.mark.numerics
def test_label_set_probes_at_the_documented_lambda_are_scikit_learns_per_label():
    """Multi-label probes (K = 2 sigmoids, binary cross-entropy summed over labels) at
    λ = weight_decay_for_c(C, n, 2, multilabel=True) = 1/(C·n) — not the two-class softmax's
    2/(C·n) — have, label by label, scikit-learn's binary LogisticRegression(C) coefficients
    within the distance their gradient norms prove, itself within 1e-4 of their norm."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    n, d, K, Cs = 200, 5, 2, (0.01, 0.1, 1.0)
    X = rng.normal(size=(n, d)).astype(np.float32)
    directions = rng.normal(size=(d, K))
    Y = (X @ directions + rng.normal(size=(n, K)) > 0).astype(np.float32)
    lams = [weight_decay_for_c(C, n, K, multilabel=True) for C in Cs]
    probes, steps = _train_to_the_criterion(X, Y, K, lams)
    for C, lam, (W, b), taken in zip(Cs, lams, probes, steps):
        fits = [
            LogisticRegression(C=C, tol=1e-10, max_iter=100_000).fit(X.astype(np.float64), y)
            for y in Y.T.astype(np.int64)
        ]
        coef = np.hstack([fit.coef_.T for fit in fits])
        intercept = np.concatenate([fit.intercept_ for fit in fits])
        distance, bound, figures = _certified_distance(X, Y, (W, b), (coef, intercept), lam)
        where = f"C = {C}, λ = {lam:g}, {taken} steps: {figures}"
        assert figures["grad_theirs"] <= GRADIENT_NORM, where
        assert distance <= bound, where
        assert bound <= 1e-4 * np.linalg.norm(coef), where


def test_weight_decay_for_c_by_classes():
    """λ = 2/(C·n) for two softmax columns, 1/(C·n) for K ≥ 3 and for multi-label probes; C
    back from λ; out-of-range arguments named."""
    assert weight_decay_for_c(0.1, 200, 2) == pytest.approx(2 / (0.1 * 200))
    assert weight_decay_for_c(0.1, 200, 3) == pytest.approx(1 / (0.1 * 200))
    assert weight_decay_for_c(0.1, 200, 10) == pytest.approx(1 / (0.1 * 200))
    assert weight_decay_for_c(0.1, 200, 2, multilabel=True) == pytest.approx(1 / (0.1 * 200))
    for K in (2, 3, 10):
        for multilabel in (False, True):
            lam = weight_decay_for_c(0.3, 57, K, multilabel=multilabel)
            C = c_for_weight_decay(lam, 57, K, multilabel=multilabel)
            assert C == pytest.approx(0.3, rel=1e-12)
    with pytest.raises(ValueError, match=r"^C must be"):
        weight_decay_for_c(0.0, 10, 3)
    with pytest.raises(ValueError, match=r"^n must be"):
        weight_decay_for_c(1.0, 0, 3)
    with pytest.raises(ValueError, match=r"^n_classes must be"):
        weight_decay_for_c(1.0, 10, 1)
    with pytest.raises(ValueError, match=r"^weight_decay must be"):
        c_for_weight_decay(0.0, 10, 3)
