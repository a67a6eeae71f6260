"""The exact solver of linear probes (TrainingConfig(solver="newton"),
probemeter.training.newton): its objective, gradient and Hessian-vector product against
autograd, its solutions against scikit-learn's LogisticRegression(C) at λ =
weight_decay_for_c(C, n, K), a stacked call against each probe solved alone (the distance
strong convexity allows at the stated gradient norm), what it records, and its refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from probemeter import Execution
from probemeter.probes import MLP, Linear
from probemeter.probes.mlp import Direction
from probemeter.training import engine, newton
from probemeter.training.config import (
    NEWTON_MAX_ITER,
    NEWTON_TOL,
    TrainingConfig,
    grid_settings,
    weight_decay_for_c,
)
from probemeter.training.engine import fit_evaluate

CPU = Execution(device="cpu", n_jobs=1)


def _blobs(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """K overlapping Gaussian classes with correlated features."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % k
    centres = rng.normal(size=(k, d))
    mixing = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    X = (rng.normal(size=(n, d)) + centres[labels]) @ mixing
    return X.astype(np.float32), labels


def _objective(X, y, W, b, lam) -> float:
    """J = mean cross-entropy + (λ/2)‖W‖², float64."""
    z = X.astype(np.float64) @ W.astype(np.float64) + b.astype(np.float64)
    z -= z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return float(-logp[np.arange(len(y)), y].mean() + 0.5 * lam * (W.astype(np.float64) ** 2).sum())


def _newton(**settings) -> TrainingConfig:
    return TrainingConfig(
        solver="newton", weight_decay=settings.pop("weight_decay", 0.1), **settings
    )


@pytest.mark.numerics
def test_objective_gradient_and_hessian_product_match_autograd():
    """Three probes of 7, 12 and 12 rows stacked (the first padded), λ per probe, θ = (W; b):
    J, ∇J and (H + diag(shift)) V against torch.autograd in float64, relative 1e-10, the
    shift λ + μ on the weight rows and μ on the bias row (the solver's damped system)."""
    torch.manual_seed(0)
    P, m, d, K = 3, 12, 5, 4
    X = torch.randn(P, m, d, dtype=torch.float64)
    y = torch.randint(0, K, (P, m))
    sizes = [7, 12, 12]
    weight = torch.zeros(P, m, dtype=torch.float64)
    for p, n in enumerate(sizes):
        weight[p, :n] = 1.0 / n
    lam = torch.tensor([0.3, 0.01, 1.5], dtype=torch.float64)
    mu = torch.tensor([0.2, 0.0, 0.05], dtype=torch.float64)
    theta = torch.randn(P, d + 1, K, dtype=torch.float64, requires_grad=True)

    def reference(theta):
        W, b = theta[:, :d], theta[:, d]
        logp = torch.log_softmax(torch.baddbmm(b[:, None, :], X, W), dim=2)
        loss = -(weight * logp.gather(2, y[..., None]).squeeze(2)).sum(1)
        return loss + 0.5 * lam * W.square().sum((1, 2))

    J_ref = reference(theta)
    (g_ref,) = torch.autograd.grad(J_ref.sum(), theta, create_graph=True)
    V = torch.randn(P, d + 1, K, dtype=torch.float64)
    (H_ref,) = torch.autograd.grad((g_ref * V).sum(), theta)
    H_ref = H_ref + mu[:, None, None] * V
    with torch.no_grad():
        J, g, _ = newton.objective_gradient(X, y, weight, theta, lam)
        probs = torch.softmax(torch.baddbmm(theta[:, d:], X, theta[:, :d]), dim=2)
        shift = (lam + mu)[:, None, None].repeat(1, d + 1, 1)
        shift[:, d] = mu[:, None]
        HV = newton.hessian_vector_product(
            newton._augmented(X, torch.float64), probs * weight[..., None], probs, V, shift
        )
    for ours, theirs in ((J, J_ref), (g, g_ref), (HV, H_ref)):
        torch.testing.assert_close(ours, theirs.detach(), rtol=1e-10, atol=1e-14)
    # the solver's own shift (float32, from λ and μ) is the one built here
    torch.testing.assert_close(newton._shift(lam, mu, d), shift.float())


@pytest.mark.numerics
@pytest.mark.parametrize("k", [2, 3])
def test_the_solution_is_scikit_learns_optimum(k):
    """Probes of 40, 150 and 600 rows at C = 0.1 (λ = weight_decay_for_c(C, n, K), each its
    own, one engine call): the objective is scikit-learn's lbfgs optimum (tol 1e-10) within
    1e-6 relative or below it, and the gradient norm met the tolerance."""
    X, y = _blobs(700, 6, k)
    sizes, C = (40, 150, 600), 0.1
    subsets = [np.arange(n) for n in sizes]
    lams = [weight_decay_for_c(C, n, k) for n in sizes]
    trained = fit_evaluate(
        X, y, X, y, k, subsets, [(0, i) for i in range(3)], Linear(), _newton(),
        execution=CPU, return_parameters=True, weight_decay=lams,
    )  # fmt: skip
    [(weights, biases)] = trained.parameters
    assert trained.converged.all() and (trained.iterations >= 1).all()
    for i, n in enumerate(sizes):
        model = LogisticRegression(C=C, tol=1e-10, max_iter=10_000).fit(X[:n], y[:n])
        coef, intercept = model.coef_, model.intercept_
        if k == 2:  # the binary log-odds as two softmax columns (weight_decay_for_c)
            coef, intercept = np.vstack([-coef / 2, coef / 2]), np.array([-1, 1]) * intercept / 2
        theirs = _objective(X[:n], y[:n], coef.T, intercept, lams[i])
        ours = _objective(X[:n], y[:n], weights[i], biases[i], lams[i])
        assert ours <= theirs * (1 + 1e-6), (n, ours, theirs)


@pytest.mark.numerics
def test_a_stacked_call_is_each_probe_solved_alone():
    """Five probes of three sizes and two λ in one call equal each solved alone, within the
    distance the tolerance allows: ‖θ − θ*‖ ≤ ‖∇J‖/μ with μ ≥ λ in W, so two solutions each
    within tol of the optimum differ by at most 2·tol/λ (and the test losses agree)."""
    X, y = _blobs(500, 8, 4, seed=1)
    rng = np.random.default_rng(0)
    subsets = [rng.permutation(500)[:n] for n in (60, 60, 200, 500, 500)]
    lams = np.array([0.05, 0.01, 0.05, 0.01, 0.05])
    keys = [(0, i) for i in range(5)]
    common = (X, y, X[:100], y[:100], 4)
    stacked = fit_evaluate(
        *common, subsets, keys, Linear(), _newton(), execution=CPU, return_parameters=True,
        weight_decay=lams,
    )  # fmt: skip
    for i in range(5):
        alone = fit_evaluate(
            *common, [subsets[i]], [keys[i]], Linear(), _newton(weight_decay=lams[i]),
            execution=CPU, return_parameters=True,
        )  # fmt: skip
        (W, b), (W_alone, b_alone) = stacked.parameters[0], alone.parameters[0]
        # W is unique; the biases up to a common constant, which the solver centres away
        assert np.linalg.norm(W[i] - W_alone[0]) <= 2 * NEWTON_TOL / lams[i]
        np.testing.assert_allclose(b[i].sum(), 0, atol=1e-5)
        np.testing.assert_allclose(b[i], b_alone[0], atol=2 * NEWTON_TOL / lams[i])
        # a logit moves by at most ‖x‖·‖ΔW‖ + ‖Δb‖∞, a cross-entropy by at most twice that
        moved = np.linalg.norm(X[:100], axis=1).max() * np.linalg.norm(W[i] - W_alone[0])
        moved += np.abs(b[i] - b_alone[0]).max()
        assert abs(stacked.loss[i] - alone.loss[0]) <= 2 * moved


@pytest.mark.numerics
def test_probes_on_nested_subsets_share_their_rows():
    """Subsets that are prefixes of one another (a loss-data curve's of one seed) are gathered
    once, (1, m, d), and solved sharing them; each probe's solution is the one on a stack
    padded as for unrelated subsets, within the 2·tol/λ strong convexity allows, their
    objectives within tol²/λ (each within the stated gap tol²/(2λ) of the minimum); unrelated
    subsets stay stacked, (P, m, d)."""
    X, y = _blobs(600, 7, 3, seed=4)
    order = np.random.default_rng(1).permutation(600)
    sizes, lams = np.array([40, 150, 600]), np.array([0.05, 0.01, 0.02])
    subsets = [order[:n] for n in sizes]
    pool_x, pool_y = torch.as_tensor(X), torch.as_tensor(y)
    X_shared, y_shared = newton.gather_stack(pool_x, pool_y, subsets)
    assert X_shared.shape == (1, 600, 7) and y_shared.shape == (1, 600)
    padded = np.stack([np.concatenate([s, np.full(600 - len(s), s[0])]) for s in subsets])
    X_padded, y_padded = pool_x[padded], pool_y[padded]
    shared = newton.fit_linear_newton(X_shared, y_shared, sizes, 3, lams)
    alone = newton.fit_linear_newton(X_padded, y_padded, sizes, 3, lams)
    assert shared.converged.all() and alone.converged.all()
    for i in range(3):
        distance = torch.linalg.norm(shared.weights[i] - alone.weights[i])
        assert distance <= 2 * NEWTON_TOL / lams[i]
    assert (np.abs(shared.objective - alone.objective) <= NEWTON_TOL**2 / lams).all()
    unrelated = [subsets[0], np.random.default_rng(2).permutation(600)[:150]]
    assert newton.gather_stack(pool_x, pool_y, unrelated)[0].shape == (2, 150, 7)


@pytest.mark.numerics
@pytest.mark.parametrize("shared", [False, True])
def test_both_memory_layouts_give_the_same_numbers(shared):
    """The classes-major layout a small stack uses (its probabilities (P, K, m) in memory) and
    the rows-major one give the same J, ∇J and Hessian products (float64, relative 1e-12),
    for stacked and for shared rows; compacting the stack keeps each layout."""
    torch.manual_seed(1)
    P, m, d, K = 3, 9, 4, 3
    X = torch.randn(1 if shared else P, m, d, dtype=torch.float64)
    y = torch.randint(0, K, (P, m))
    weight = torch.full((P, m), 1.0 / m, dtype=torch.float64)
    lam = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    theta = torch.randn(P, d + 1, K, dtype=torch.float64)
    V = torch.randn(P, d + 1, K, dtype=torch.float64)
    shift = newton._shift(lam, torch.full((P,), 0.01, dtype=torch.float64), d).double()
    Xa = newton._augmented(X, torch.float64)
    results = []
    for classes_major in (False, True):
        J, g, probs = newton.objective_gradient(
            X, y, weight, theta, lam, classes_major=classes_major
        )
        probs = probs.double()
        assert (probs.stride(1) == 1) == classes_major  # the layout the product follows
        HV = newton.hessian_vector_product(Xa, probs * weight[..., None], probs, V, shift)
        kept = newton._select_probes(probs, torch.tensor([0, 2]))
        torch.testing.assert_close(kept, probs[[0, 2]], rtol=0, atol=0)
        assert np.argsort(kept.stride()).tolist() == np.argsort(probs.stride()).tolist()
        results.append((J, g, HV))
    for ours, theirs in zip(*results):
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-15)


def test_the_config_records_the_solver_and_refuses_what_it_cannot_solve():
    config = TrainingConfig(solver="newton", weight_decay=1e-3, tol=1e-7)
    described = config.to_dict()
    assert described["solver"] == "newton" and described["tol"] == 1e-7
    assert described["max_iter"] == NEWTON_MAX_ITER and described["weight_decay"] == 1e-3
    assert "lr" not in described and "steps" not in described
    assert TrainingConfig.from_dict(described) == config
    assert "solver" not in TrainingConfig().to_dict()  # Adam's keys unchanged
    with pytest.raises(ValueError, match=r"^solver="):
        TrainingConfig(solver="newton")  # no weight decay
    with pytest.raises(ValueError, match=r"^solver="):
        TrainingConfig(solver="newton", weight_decay=0.1, early_stopping=True)
    with pytest.raises(ValueError, match="solver"):
        TrainingConfig(solver="lbfgs")
    with pytest.raises(ValueError, match=r"grid\['lr'\]"):
        grid_settings(config, {"lr": [1e-3, 1e-2]})
    assert len(grid_settings(config, {"weight_decay": [1e-3, 1e-2]})) == 2


@pytest.mark.parametrize(
    ("probe", "problem"),
    [
        (MLP((8,)), "hidden layers"),
        (Direction("diff-means"), "direction"),
        (MLP((), mix=2), "mix"),
    ],
)
def test_the_engine_refuses_probes_that_are_not_linear(probe, problem):
    X, y = _blobs(40, 4, 3)
    with pytest.raises(
        ValueError, match=f"^solver='newton' solves linear probes only: .*{problem}"
    ):
        fit_evaluate(X, y, X, y, 3, [np.arange(40)], [(0,)], probe, _newton(), execution=CPU)


def test_the_engine_refuses_a_probe_without_penalty_and_label_sets():
    X, y = _blobs(40, 4, 3)
    with pytest.raises(ValueError, match=r"^solver='newton' needs weight_decay > 0"):
        fit_evaluate(
            X, y, X, y, 3, [np.arange(40)] * 2, [(0,), (1,)], Linear(), _newton(),
            execution=CPU, weight_decay=[0.1, 0.0],
        )  # fmt: skip
    sets = np.eye(3, dtype=np.float32)[y]
    with pytest.raises(ValueError, match=r"^solver='newton' solves softmax probes"):
        fit_evaluate(
            X, sets, X, sets, 3, [np.arange(40)], [(0,)], Linear(), _newton(), execution=CPU
        )


def test_a_probe_short_of_its_tolerance_is_reported(monkeypatch):
    """At an iteration cap of 1 the probe cannot reach 1e-5: converged False, a warning."""
    X, y = _blobs(200, 5, 3)
    common = (X, y, X, y, 3, [np.arange(200)], [(0,)], Linear(), _newton(weight_decay=1e-3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solved = fit_evaluate(*common, execution=CPU)
    monkeypatch.setattr(engine, "NEWTON_MAX_ITER", 1)
    with pytest.warns(RuntimeWarning, match="did not reach tol"):
        capped = fit_evaluate(*common, execution=CPU)
    assert solved.converged[0] and not capped.converged[0]
    assert capped.iterations[0] >= 1 and solved.loss[0] != capped.loss[0]


@pytest.mark.numerics
def test_the_kronecker_preconditioner_solves_its_kronecker_system():
    """_KroneckerPreconditioner against its definition in float64 numpy: with
    C = (1/n) Σ_i x̃_i x̃_iᵀ (x̃ = (x, 1)) and A = (1/n) Σ_i (diag p_i − p_i p_iᵀ) on each
    probe's first n rows, M = C ⊗ A + δ I maps a
    (d+1) × K matrix Z to C Z A + δ Z, so its inverse applied to R must satisfy
    C Z A + δ Z = R; two probes of 30 and 50 rows stacked (the first padded). Float32
    arithmetic: relative 1e-4."""
    rng = np.random.default_rng(4)
    P, m, d, K = 2, 50, 5, 3
    X = torch.as_tensor(rng.normal(size=(P, m, d)), dtype=torch.float32)
    probs = torch.softmax(torch.as_tensor(rng.normal(size=(P, m, K)), dtype=torch.float32), 2)
    sizes, damping = np.array([30, 50]), torch.tensor([0.02, 0.5], dtype=torch.float64)
    R = torch.as_tensor(rng.normal(size=(P, d + 1, K)), dtype=torch.float32)
    kronecker = newton._KroneckerPreconditioner(newton._augmented(X, torch.float32), sizes)
    kronecker.factors(probs, damping)
    Z = kronecker.apply(R).double().numpy()
    for p in range(P):
        n = sizes[p]
        Xt = np.hstack([X[p, :n].double().numpy(), np.ones((n, 1))])
        q = probs[p, :n].double().numpy()
        C = Xt.T @ Xt / n
        A = (np.diag(q.sum(0)) - q.T @ q) / n
        lhs = C @ Z[p] @ A + float(damping[p]) * Z[p]
        np.testing.assert_allclose(lhs, R[p].double().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.numerics
@pytest.mark.parametrize("K", [2, 3])
def test_the_block_preconditioner_inverts_each_class_block_of_the_hessian(K):
    """_BlockPreconditioner against its definition built independently in float64 numpy:
    class k's block G_k = (1/n) Σ_i p_ik (1 − p_ik) x̃_i x̃_iᵀ (x̃ = (x, 1)) on the first
    min(n, SAMPLE_ROWS) rows, each plus (λ + μ) I and inverted, applied to the residual's
    columns, residual and result centred across classes; two probes of 30 and 50 rows
    stacked (the first padded). Its arithmetic is float32: relative 1e-4."""
    rng = np.random.default_rng(3)
    P, m, d = 2, 50, 5
    X = torch.as_tensor(rng.normal(size=(P, m, d)), dtype=torch.float32)
    probs = torch.softmax(torch.as_tensor(rng.normal(size=(P, m, K)), dtype=torch.float32), 2)
    sizes, damping = np.array([30, 50]), torch.tensor([0.02, 0.5], dtype=torch.float64)
    R = torch.as_tensor(rng.normal(size=(P, d + 1, K)), dtype=torch.float32)  # (W; b) rows
    block = newton._BlockPreconditioner(newton._augmented(X, torch.float32), sizes)
    block.factors(probs, damping)
    Z_ours = block.apply(R)
    for p in range(P):
        n = sizes[p]
        Xt = np.hstack([X[p, :n].double().numpy(), np.ones((n, 1))])
        Rp = R[p].double().numpy()
        Rp = Rp - Rp.mean(1, keepdims=True)
        Z = np.empty_like(Rp)
        for k in range(K):
            q = probs[p, :n, k].double().numpy()
            G = (Xt * (q * (1 - q))[:, None]).T @ Xt / n
            Z[:, k] = np.linalg.solve(G + float(damping[p]) * np.eye(d + 1), Rp[:, k])
        Z = Z - Z.mean(1, keepdims=True)
        np.testing.assert_allclose(Z_ours[p].numpy(), Z, rtol=1e-4, atol=1e-6 * np.abs(Z).max())
    # a block made indefinite (as bf16 rounding could) is inverted with its negative
    # eigenvalues set to 0: here G = −I, so (0 + λ + μ)⁻¹ I
    block.G[0, 1] = -torch.eye(d + 1)
    block.factors(probs, 2 * damping)  # not a refresh: the blocks stay, the damping moved
    torch.testing.assert_close(
        block.inverse[0, 1], torch.eye(d + 1) / (2 * 0.02), rtol=1e-5, atol=0
    )


@pytest.mark.numerics
def test_both_preconditioners_reach_scikit_learns_optimum(monkeypatch):
    """The per-class block preconditioner (used from newton.BLOCK_MIN_ROWS rows, here forced
    down to 1) and the Kronecker one (below) change how fast the solver gets there, never
    where: three probes of 40, 150 and 600 rows, K = 4, each ends at scikit-learn's optimum
    (objective within 1e-6 relative or below) and the two fits agree within 2·tol/λ."""
    X, y = _blobs(700, 6, 4, seed=2)
    sizes, C = (40, 150, 600), 0.1
    subsets = [np.arange(n) for n in sizes]
    lams = [weight_decay_for_c(C, n, 4) for n in sizes]
    common = (X, y, X, y, 4, subsets, [(0, i) for i in range(3)], Linear(), _newton())
    kronecker = fit_evaluate(*common, execution=CPU, return_parameters=True, weight_decay=lams)
    monkeypatch.setattr(newton, "BLOCK_MIN_ROWS", 1)
    blocks = fit_evaluate(*common, execution=CPU, return_parameters=True, weight_decay=lams)
    assert kronecker.converged.all() and blocks.converged.all()
    for i, n in enumerate(sizes):
        model = LogisticRegression(C=C, tol=1e-10, max_iter=10_000).fit(X[:n], y[:n])
        theirs = _objective(X[:n], y[:n], model.coef_.T, model.intercept_, lams[i])
        for fitted in (kronecker, blocks):
            W, b = fitted.parameters[0][0][i], fitted.parameters[0][1][i]
            assert _objective(X[:n], y[:n], W, b, lams[i]) <= theirs * (1 + 1e-6), (n, fitted)
        distance = np.linalg.norm(kronecker.parameters[0][0][i] - blocks.parameters[0][0][i])
        assert distance <= 2 * NEWTON_TOL / lams[i]
