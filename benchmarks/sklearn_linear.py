"""Linear probes against scikit-learn's ``LogisticRegression`` at equal regularisation: do the
two reach the same loss, and which is faster? (Issue 34, item 3.)

scikit-learn's ``LogisticRegression(C=C)`` (multinomial, ``lbfgs``) on n training examples
minimises ``C Σ_i ℓ_i + ½‖w‖²`` with the intercept unpenalised; divided by C·n that is the
objective

    J(W, b) = (1/n) Σ_i ℓ(x_i, y_i) + (λ/2) ‖W‖²,    λ = 1 / (C n) for K ≥ 3 classes,

which probemeter's ``Linear`` probe minimises with ``weight_decay = λ`` (the L2 penalty on the
weights only; docs/probe-settings.md). For K = 2 the probe's two softmax columns pay half
scikit-learn's penalty for the same log-odds, so λ = 2 / (C n); both come from
:func:`probemeter.training.config.weight_decay_for_c`, which derives them, and a binary fit of
scikit-learn enters J as the columns ∓coef/2 (:func:`softmax_columns`). λ depends on n, so every
(size, seed) probe gets its own λ through :func:`probemeter.training.engine.fit_evaluate`'s
per-probe ``weight_decay``, all probes in ONE engine call (the loss-data curve's single
``weight_decay`` would need a call per size). Each probe trains **full-batch** (``batch_size`` ≥
the largest n: the minibatch noise of Adam would keep it off the optimum) for ``--steps`` Adam
updates at ``--lr``: 2,000 at 3·10⁻³ by default (at 10⁻² Adam hovers around the optimum instead
of settling: on Fashion-MNIST at n = 2,364 its objective after 2,000 steps was further from
scikit-learn's than after 1,000, 1.1 % off in one run; at 3·10⁻³, 2,000 steps came within 0.04 %
at n = 2,364 and 5,000).

For each size and seed both fit the same training subset (the loss-data curve's nested subset
of the pool, ``probemeter.data.nested_subset``); the script prints both test losses (nats),
both training objectives J computed alike in float64 from the fitted parameters (the quantity
both minimise: at the optimum they agree, so their relative gap says how far the worse one
stopped short), test accuracies, and the wall and CPU seconds of each (the process tree's:
``_proc_tree.TreeMonitor``, engine workers included; scikit-learn's BLAS threads are this
process's). Both run in this one process, back to back, so the ratio is fair on a noisy
machine; the load average before each side is printed with it.

**C** is fixed, 0.01 by default (``--C``): chosen once on Fashion-MNIST by scikit-learn itself,
fitting n = 1,000 and n = 10,000 pool examples at C ∈ {1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1} and
scoring on 10,000 other pool examples (never the test set): 0.01 had the lowest development
loss at n = 10,000 (0.445 nats) and was within 0.007 nats of the best (0.03) at n = 1,000.
Smaller λ (larger C) also makes both optimisers slower: lbfgs needed 2.3× the iterations at
C = 0.1.

Data: Fashion-MNIST pixels (Debian's ``dataset-fashion-mnist``, standardised with pool
statistics; pool 60,000, test 10,000), the full run at 10 sizes 250 … 60,000 × 2 seeds (the
issue's protocol); ``--quick``: sklearn's bundled digits (1,297 pool / 500 test), 5 sizes × 1
seed, in well under a minute. Without the Fashion-MNIST files the full run says so and stops.

Usage::

    python benchmarks/sklearn_linear.py --max-memory 6  # Fashion-MNIST, 10 sizes × 2 seeds: long
    python benchmarks/sklearn_linear.py --max-size 10000 --seeds 1
    python benchmarks/sklearn_linear.py --quick       # digits, under a minute
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _proc_tree import TreeMonitor, load_average
from curve_speed import digits_pixels, fashion_mnist_pixels, start_worker_pool

from probemeter import Execution
from probemeter.curves.curve import default_sizes
from probemeter.data import ProbeData, nested_subset
from probemeter.probes import Linear
from probemeter.training import TrainingConfig, weight_decay_for_c
from probemeter.training.engine import fit_evaluate

#: the inverse regularisation strength of both (see the module docstring for how it was chosen)
DEFAULT_C = 0.01
#: full-batch Adam: updates and learning rate (enough to reach the optimum within 1 %)
DEFAULT_STEPS, DEFAULT_LR = 2000, 0.003
#: the subsets' random state (that of loss_data_curve's default)
RANDOM_STATE = 0


@dataclass(frozen=True)
class Fit:
    """One fitted linear model: its parameters and where it stands."""

    weight: np.ndarray  # (d, K)
    bias: np.ndarray  # (K,)
    objective: float  # J on its training subset, float64
    test_loss: float  # mean test cross-entropy, nats
    test_accuracy: float


def log_softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax, stable."""
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def mean_cross_entropy(
    X: np.ndarray, y: np.ndarray, weight: np.ndarray, bias: np.ndarray
) -> tuple[float, float]:
    """Mean cross-entropy (nats) and accuracy of the linear model ``x W + b``, in float64."""
    logits = X.astype(np.float64) @ weight.astype(np.float64) + bias.astype(np.float64)
    log_p = log_softmax(logits)
    return float(-log_p[np.arange(len(y)), y].mean()), float((logits.argmax(1) == y).mean())


def objective(
    X: np.ndarray, y: np.ndarray, weight: np.ndarray, bias: np.ndarray, lam: float
) -> float:
    """J = mean cross-entropy + (λ/2)‖W‖² (biases unpenalised), in float64."""
    loss, _ = mean_cross_entropy(X, y, weight, bias)
    return loss + 0.5 * lam * float(np.sum(weight.astype(np.float64) ** 2))


def assess(
    data: ProbeData, rows: np.ndarray, weight: np.ndarray, bias: np.ndarray, lam: float
) -> Fit:
    """The model's training objective on ``rows`` and its test loss and accuracy."""
    loss, accuracy = mean_cross_entropy(data.X_test, data.y_test, weight, bias)
    J = objective(data.X_train[rows], data.y_train[rows], weight, bias, lam)
    return Fit(weight, bias, J, loss, accuracy)


def softmax_columns(coef: np.ndarray, intercept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's fitted ``coef_`` (K or 1, d) and ``intercept_`` as the probe's softmax
    weights (d, K) and biases (K,): a binary model's log-odds v, c as the two columns −v/2,
    v/2 and biases −c/2, c/2 (the same probabilities, and the minimiser of J at λ = 2/(C n),
    whose columns sum to zero)."""
    if coef.shape[0] == 1:
        return np.hstack([-coef.T / 2, coef.T / 2]), np.array([-0.5, 0.5]) * intercept[0]
    return coef.T, intercept


def subsets(pool_size: int, sizes: Sequence[int], seeds: int) -> list[tuple[int, int, np.ndarray]]:
    """(seed, n, pool rows) of every probe, seed-major: the loss-data curve's nested subsets."""
    return [
        (seed, int(n), nested_subset(pool_size, int(n), RANDOM_STATE, seed))
        for seed in range(seeds)
        for n in sizes
    ]


def fit_sklearn(
    data: ProbeData, grid: list[tuple[int, int, np.ndarray]], C: float, tol: float
) -> tuple[list[Fit], list[int]]:
    """scikit-learn's LogisticRegression(C, lbfgs) on each subset; the fits and lbfgs's
    iteration counts (``max_iter`` 10,000: it stops on ``tol``, warning if not)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    fits, iterations = [], []
    for _, n, rows in grid:
        model = LogisticRegression(C=C, solver="lbfgs", tol=tol, max_iter=10_000)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)  # never report a stopped fit
            model.fit(data.X_train[rows], data.y_train[rows])
        iterations.append(int(model.n_iter_[0]))
        weight, bias = softmax_columns(model.coef_, model.intercept_)
        lam = weight_decay_for_c(C, n, data.n_classes)
        fits.append(assess(data, rows, weight, bias, lam))
    return fits, iterations


def fit_probemeter(
    data: ProbeData,
    grid: list[tuple[int, int, np.ndarray]],
    C: float,
    config: TrainingConfig,
    n_jobs: int,
    max_memory: float | None = None,
) -> tuple[list[Fit], np.ndarray | None]:
    """probemeter's Linear probes, every (size, seed) in one fit_evaluate call, each at its own
    λ = weight_decay_for_c(C, n, K) (1/(C n), or 2/(C n) for two classes), within
    ``max_memory`` GiB a chunk (None: the engine's default); the test metrics are recomputed
    in float64 like scikit-learn's. With ``config.solver = "newton"`` it also returns each
    probe's Newton iterations (None for Adam)."""
    lams = [weight_decay_for_c(C, n, data.n_classes) for _, n, _ in grid]
    trained = fit_evaluate(
        data.X_train, data.y_train, data.X_test, data.y_test, data.n_classes,
        [rows for _, _, rows in grid], [(RANDOM_STATE, seed, n) for seed, n, _ in grid],
        Linear(), config, return_parameters=True,
        weight_decay=lams, execution=Execution(device="cpu", n_jobs=n_jobs, max_memory=max_memory),
    )  # fmt: skip
    [(weights, biases)] = trained.parameters
    fits = [
        assess(data, rows, weights[i], biases[i], lam)
        for i, ((_, _, rows), lam) in enumerate(zip(grid, lams))
    ]
    # the engine's own float32 test loss is the float64 one up to rounding
    np.testing.assert_allclose(trained.loss, [f.test_loss for f in fits], rtol=1e-4)
    if trained.converged is not None and not trained.converged.all():
        sys.exit("the Newton solver left a probe short of its tolerance: nothing to compare")
    return fits, trained.iterations


def timed(function: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, Any]]:
    """(result, figures of the process tree: wall_s, cpu_s, load_before...)."""
    with TreeMonitor() as monitor:
        result = function(*args)
    return result, monitor.figures()


def compare(
    data: ProbeData,
    sizes: Sequence[int],
    seeds: int,
    C: float,
    config: TrainingConfig,
    tol: float,
    n_jobs: int,
    max_memory: float | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    """Fit both on the same subsets, back to back in this process, ``repeats`` times
    alternated (the fastest run of each side quoted: a sub-second side is otherwise timed
    with its first calls' one-off costs), and print the table."""
    grid = subsets(data.pool_size, sizes, seeds)
    side = (
        f"exact Newton-CG to ||grad J||_2 <= {config.tol:g}"
        if config.solver == "newton"
        else f"full-batch Adam, {config.steps} steps, lr {config.lr:g}"
    )
    print(
        f"{data.name}: pool {data.pool_size} × {data.X_train.shape[1]}, test "
        f"{len(data.y_test)}, sizes {list(map(int, sizes))} × {seeds} seed(s), C = {C:g} "
        f"(λ = {2 if data.n_classes == 2 else 1}/(C n)); probemeter: {side}; "
        f"scikit-learn: lbfgs, tol {tol:g}",
        flush=True,
    )
    if n_jobs != 1:
        start_worker_pool(n_jobs)
    ours_times, their_times = [], []
    for _ in range(repeats):  # the two sides alternated; each side's fastest run is quoted
        (ours, newton_its), ours_time = timed(
            fit_probemeter, data, grid, C, config, n_jobs, max_memory
        )
        (theirs, iterations), their_time = timed(fit_sklearn, data, grid, C, tol)
        ours_times.append(ours_time)
        their_times.append(their_time)
    if repeats > 1:
        for name, times in (("scikit-learn", their_times), ("probemeter", ours_times)):
            walls = ", ".join(f"{t['wall_s']:.3f}" for t in times)
            print(f"{name:>12}: wall s of the {repeats} runs (the first cold): {walls}")
    ours_time = min(ours_times, key=lambda t: t["wall_s"])
    their_time = min(their_times, key=lambda t: t["wall_s"])
    newton_its = [None] * len(grid) if newton_its is None else newton_its
    print(
        f"{'n':>6} {'seed':>4} | {'test loss sk':>12} {'pm':>7} | {'objective sk':>12} "
        f"{'pm':>8} {'gap':>8} | {'acc sk':>6} {'pm':>6} | lbfgs it | newton it"
    )
    gaps = []
    for (seed, n, _), a, b, its, ours_its in zip(grid, theirs, ours, iterations, newton_its):
        gap = (b.objective - a.objective) / a.objective  # relative
        gaps.append(gap)
        print(
            f"{n:>6} {seed:>4} | {a.test_loss:>12.4f} {b.test_loss:>7.4f} | "
            f"{a.objective:>12.7f} {b.objective:>10.7f} {gap:>+8.1e} | "
            f"{a.test_accuracy:>6.3f} {b.test_accuracy:>6.3f} | {its:>8} | "
            f"{'-' if ours_its is None else ours_its:>9}"
        )
    ratio = their_time["wall_s"] / ours_time["wall_s"]
    cpu_ratio = their_time["cpu_s"] / ours_time["cpu_s"]
    for name, figures in (("scikit-learn", their_time), ("probemeter", ours_time)):
        print(
            f"{name:>12}: {figures['wall_s']:.1f} s wall, {figures['cpu_s']:.1f} CPU-s "
            f"(process tree; load average before {figures['load_before']:.2f}, after "
            f"{figures['load_after']:.2f})"
        )
    worst = max(gaps)
    print(
        f"scikit-learn / probemeter: {ratio:.2f}× wall, {cpu_ratio:.2f}× CPU "
        f"({'probemeter faster' if ratio > 1 else 'probemeter SLOWER'} in wall time); "
        f"objective gap (pm − sk)/sk: largest {worst:+.1e} "
        f"({'within' if worst <= 1e-6 else 'NOT within'} 1e-6 relative or below; positive: "
        "probemeter stopped short of scikit-learn's optimum)"
    )
    print(f"load average now: {', '.join(f'{x:.2f}' for x in load_average())}")
    return {"gaps": gaps, "ratio": ratio, "cpu_ratio": cpu_ratio}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="digits, 5 sizes × 1 seed")
    parser.add_argument("--C", type=float, default=DEFAULT_C, help="inverse L2 strength")
    parser.add_argument(
        "--solver",
        choices=("newton", "adam"),
        default="newton",
        help="probemeter's side: the exact Newton solver (default) or full-batch Adam (before)",
    )
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="Adam steps")
    parser.add_argument("--lr", type=float, default=DEFAULT_LR, help="Adam learning rate")
    parser.add_argument("--tol", type=float, default=1e-8, help="lbfgs tolerance")
    parser.add_argument("--seeds", type=int, default=2, help="seeds (full run)")
    parser.add_argument("--points", type=int, default=10, help="sizes (full run)")
    parser.add_argument("--smallest", type=int, default=250, help="smallest size (full run)")
    parser.add_argument("--max-size", type=int, default=None, help="largest size (full run)")
    parser.add_argument("--n-jobs", type=int, default=-1, help="engine CPU workers (-1: all)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="runs of each side, alternated, the fastest quoted (default: 5 quick, 1 full)",
    )
    parser.add_argument(
        "--max-memory",
        type=float,
        help="GiB of one chunk of probes (full-batch probes at n = 60,000 need about 4)",
    )
    args = parser.parse_args()
    if args.quick:
        data = digits_pixels()
        sizes, seeds = default_sizes(data.pool_size, 5, smallest=50), 1
    else:
        data = fashion_mnist_pixels()
        if isinstance(data, str):
            sys.exit(f"Fashion-MNIST unavailable, nothing measured: {data}")
        largest = min(args.max_size or data.pool_size, data.pool_size)
        sizes, seeds = default_sizes(largest, args.points, smallest=args.smallest), args.seeds
    # per-probe λ are given to the engine; the config's own is the first (the Newton solver
    # refuses a config without a penalty)
    config = TrainingConfig(
        steps=args.steps,
        batch_size=int(max(sizes)),
        lr=args.lr,
        weight_decay=weight_decay_for_c(args.C, int(max(sizes)), data.n_classes),
        solver=args.solver,
    )
    start = time.perf_counter()
    repeats = args.repeats or (5 if args.quick else 1)
    compare(data, sizes, seeds, args.C, config, args.tol, args.n_jobs, args.max_memory, repeats)
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
