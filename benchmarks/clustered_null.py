"""Paired tests of words in sentences under a null: does each hold its level at α = 0.05 with
5 … 100 sentences? (Issue 40, item 2.)

The null: two probes of **equal accuracy with a sentence-specific difference**. Each sentence
j has a random size n_j (uniform on 3..30 words), a difficulty q_j ~ Beta(2, 2) and a shift
δ_j ~ Normal(0, 0.15) in which probe does better on it; probe A gets each of its words right
with probability clip(q_j + δ_j, 0, 1), probe B with clip(q_j − δ_j, 0, 1), independently
given the sentence. The shift's distribution is symmetric, so the two probes are exchangeable
within a sentence and equally accurate on average, yet on any one sentence one of them is
better: the case in which the words of a sentence are not independent draws.

For K = 5, 10, 20, 30, 50, 100 sentences it draws ``--replicates`` test sets (10,000 by
default: standard error 0.0022 at a rate of 0.05; each K its own seeded stream) and prints,
per K, the rejection rate at α = 0.05 of

* the **sign-flip test** of the sentences' discordance differences
  (:func:`probemeter.power.clustered.sign_flip_test`, the test the layer verdicts use: exact
  over all 2^m sign patterns), and
* **Obuchowski's asymptotic clustered χ²** (:func:`probemeter.power.clustered.clustered_mcnemar`,
  what the verdicts used before), counting a test set whose sentences all differ alike (zero
  variance: χ² was ∞, p = 0) as a rejection, as the old code did,

each with its binomial standard error, then the same two tests under an **alternative** (the
shift's mean 0.1 instead of 0: A better on average) for their power, and the two degenerate
cases of the issue, and an example of the power behind "established" (item 3: pooled per
seed at α, as reported before, against every seed rejecting at α/m, the decision taken) with
the test sentences that decision needs (item 4). The script fails (exit status 1) where the
sign-flip test's rejection rate exceeds α by more than three standard errors. ``--quick``
runs 1,000 replicates per K (for CI, about ten seconds); the full run takes under a minute
of one core.

    .venv/bin/python benchmarks/clustered_null.py            # 10,000 replicates per K
    .venv/bin/python benchmarks/clustered_null.py --quick    # 1,000 replicates per K

References:
    Fisher, R. A. (1935). *The Design of Experiments*. Oliver & Boyd. §21.

    Obuchowski, N. A. (1998). On the comparison of correlated proportions for clustered data.
    *Statistics in Medicine* 17(13), 1495–1507.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from probemeter.power.clustered import (
    clustered_mcnemar,
    decision_power,
    sentences_needed,
    sign_flip_test,
)

ALPHA = 0.05
SENTENCES = (5, 10, 20, 30, 50, 100)


def draw_test_set(
    rng: np.random.Generator, clusters: int, mean_shift: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One test set of ``clusters`` sentences (module docstring): A's and B's correctness per
    word and each word's sentence."""
    sizes = rng.integers(3, 31, clusters)
    ids = np.arange(clusters).repeat(sizes)
    difficulty = rng.beta(2.0, 2.0, clusters).repeat(sizes)
    shift = rng.normal(mean_shift, 0.15, clusters).repeat(sizes)
    a = rng.random(ids.size) < np.clip(difficulty + shift, 0.0, 1.0)
    b = rng.random(ids.size) < np.clip(difficulty - shift, 0.0, 1.0)
    return a, b, ids


def rejection_rates(
    clusters: int, replicates: int, mean_shift: float = 0.0
) -> tuple[float, float, float]:
    """The sign-flip and the asymptotic test's rejection rates at α over ``replicates`` test
    sets, and the share of test sets without asymptotic variance."""
    rng = np.random.default_rng([40, clusters, round(mean_shift * 1000)])
    sign_flip = asymptotic = degenerate = 0
    for _ in range(replicates):
        a, b, ids = draw_test_set(rng, clusters, mean_shift)
        sign_flip += sign_flip_test(a, b, ids).p_value < ALPHA
        p = clustered_mcnemar(a, b, ids).p_value
        degenerate += math.isnan(p) and a.sum() != b.sum()
        asymptotic += (p < ALPHA) or (math.isnan(p) and a.sum() != b.sum())  # was p = 0
    return sign_flip / replicates, asymptotic / replicates, degenerate / replicates


def degenerate_cases() -> None:
    """The issue's two test sets whose sentences all differ alike."""
    cases = {
        "two 1-word sentences, A right on both, B wrong on both": ([1, 1], [0, 0], [0, 1]),
        "three 4-word sentences, B wrong on one word of each": (
            [1] * 12,
            [0, 1, 1, 1] * 3,
            [0] * 4 + [1] * 4 + [2] * 4,
        ),
    }
    print("\nDegenerate cases (exact McNemar: 0.5 and 0.25)")
    for name, (a, b, ids) in cases.items():
        result = sign_flip_test(a, b, ids)
        chi = clustered_mcnemar(a, b, ids)
        print(
            f"  {name}: sign-flip p = {result.p_value:g} ({result.name}); asymptotic χ² "
            f"{chi.statistic} (was inf, p = 0)"
        )


def decision_example() -> None:
    """Which power stands behind "established" (issue 40, item 3): three seeds' probes on one
    test set of 150 sentences drawn under the alternative with the shift's mean 0.04 (the
    sentences shared, the words' outcomes drawn per seed); per-seed power pooled over seeds at
    α (the old definition, here with the sign-flip test), the chance that all three seeds
    reject at α, and at α/3 (Holm's first step over three comparisons: the decision taken);
    then the test sentences that decision needs (item 4)."""
    rng = np.random.default_rng([40, 3])
    sizes = rng.integers(3, 31, 150)
    ids = np.arange(150).repeat(sizes)
    difficulty = rng.beta(2.0, 2.0, 150).repeat(sizes)
    shift = rng.normal(0.04, 0.15, 150).repeat(sizes)
    seeds = [
        (
            rng.random(ids.size) < np.clip(difficulty + shift, 0.0, 1.0),
            rng.random(ids.size) < np.clip(difficulty - shift, 0.0, 1.0),
        )
        for _ in range(3)
    ]
    a, b = [x for x, _ in seeds], [y for _, y in seeds]
    p = [sign_flip_test(x, y, ids).p_value for x, y in seeds]
    pooled = np.mean([decision_power([x], [y], ids).power for x, y in seeds])
    every = decision_power(a, b, ids)
    rule = decision_power(a, b, ids, comparisons=3)
    needed = sentences_needed(a, b, ids, comparisons=3)
    gap = np.mean([x.mean() - y.mean() for x, y in seeds])
    print(
        f"\nPower behind 'established': 3 seeds, 150 sentences ({ids.size:,} words), accuracy "
        f"gap {gap:.4f}, sign-flip p per seed {', '.join(f'{v:.2g}' for v in p)}\n"
        f"  per seed at α, pooled over seeds (the old figure): {pooled:.3f}\n"
        f"  all three seeds reject at α:                      {every.power:.3f}\n"
        f"  all three seeds reject at α/3 (the decision):     {rule.power:.3f}\n"
        f"  test sentences for power 0.8 of the decision:     {needed.describe()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 replicates per K")
    parser.add_argument("--replicates", type=int, default=10_000)
    args = parser.parse_args(argv)
    replicates = 1000 if args.quick else args.replicates
    sentences = SENTENCES
    start = time.perf_counter()
    error = math.sqrt(ALPHA * (1 - ALPHA) / replicates)
    print(
        f"Rejection rate at α = {ALPHA} under the null (equal accuracies, a sentence-specific "
        f"difference), {replicates:,} replicates per K; binomial standard error at 0.05: "
        f"{error:.4f}"
    )
    print(f"{'K':>5}  {'sign-flip':>10}  {'asymptotic χ²':>14}  {'no χ² variance':>15}")
    failed = []
    for k in sentences:
        exact, asymptotic, degenerate = rejection_rates(k, replicates)
        print(f"{k:>5}  {exact:>10.3f}  {asymptotic:>14.3f}  {degenerate:>15.3f}")
        if exact > ALPHA + 3 * error:
            failed.append(k)
    print("\nPower under an alternative (the shift's mean 0.1: A better on average)")
    print(f"{'K':>5}  {'sign-flip':>10}  {'asymptotic χ²':>14}")
    for k in sentences:
        exact, asymptotic, _ = rejection_rates(k, replicates, mean_shift=0.1)
        print(f"{k:>5}  {exact:>10.3f}  {asymptotic:>14.3f}")
    degenerate_cases()
    decision_example()
    print(f"\n{time.perf_counter() - start:.1f} s")
    if failed:
        print(f"the sign-flip test rejected above α + 3 standard errors at K = {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
