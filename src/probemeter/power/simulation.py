"""Statistical power of McNemar's test by simulation (Zhu et al., §3.5; Card et al., 2020).

"One repetitively samples a portion of test data and computes χ². The portion of simulations
with significant χ² is taken as the estimated power. [...] we run the simulations of Card et
al. (2020) for each random seed, and then count the total number of significant simulations to
compute the power" — power is pooled over seeds explicitly.

Subsampling a test set of n examples whose paired table has b = n01 and c = n10 discordant
pairs: *with* replacement (a bootstrap, the default, as in Card et al.'s simulations that Zhu
et al. follow) the table of a resample of m examples has (b', c', rest) ~ multinomial(m; b/n,
c/n, 1 − (b + c)/n); *without* replacement it is multivariate hypergeometric(b, c, n − b − c;
m). We draw those counts directly — exactly the distribution of building the table from
subsampled examples, thousands of times faster.

Why the bootstrap: a resample is a fresh test set of m examples from the empirical
distribution, so on a test set whose discordance is balanced (b = c, a true null) McNemar's
test rejects at about α for every m, including m ≥ n. Without replacement the difference
b' − c' then has variance (b + c)·(m/n)·(n − m)/(n − 1) instead of (b + c)·m/n (the
finite-population correction), so the χ² statistic shrinks by (n − m)/(n − 1) and the
rejection rate falls from α towards 0 as m → n: 2·Φ(−z_{α/2}·sqrt((n − 1)/(n − m))), measured
0.029 at m = 4,096 and 0.000 at m = 16,384 of n = 20,000 for α = 0.05 (0.054 and 0.048 with
the bootstrap); at m = n every "simulation" is the observed table. ``replace=False`` stays
available for subsamples well below n (no example is repeated).

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801

    Card, D., Henderson, P., Khandelwal, U., Jia, R., Mahowald, K. & Jurafsky, D. (2020). With
    little power comes great responsibility. *EMNLP 2020*. arXiv:2010.06595
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from probemeter._io import JsonResult, environment
from probemeter._validation import boolean, check_scalar, integer_list
from probemeter.power.defaults import POWER_ALPHA
from probemeter.power.mcnemar import contingency_table, mcnemar_p_values

__all__ = ["SUFFICIENT_POWER", "PowerCurve", "check_alpha", "simulate_power"]

#: the conventional sufficient power (Zhu et al., §3.5: "at least 0.8")
SUFFICIENT_POWER = 0.8


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float, or a ValueError when it is not a level in (0, 1)."""
    return float(
        check_scalar(alpha, "alpha", float, min_val=0, max_val=1, include_boundaries="neither")
    )


def _paired_seeds(
    correct_a: Sequence[np.ndarray], correct_b: Sequence[np.ndarray]
) -> list[tuple[int, int, int]]:
    """Per seed (n, b, c) from paired correctness arrays, validating the pairing."""
    if len(correct_a) != len(correct_b) or len(correct_a) == 0:
        raise ValueError(
            f"correct_a and correct_b must hold the same non-zero number of seeds; got "
            f"{len(correct_a)} and {len(correct_b)}"
        )
    counts = []
    for seed, (a, b) in enumerate(zip(correct_a, correct_b)):
        try:
            table = contingency_table(a, b)
        except ValueError as error:
            raise ValueError(f"seed {seed}: {error}") from None
        counts.append((int(table.sum()), int(table[0, 1]), int(table[1, 0])))
    return counts


def _draw_discordant(
    rng: np.random.Generator, n: int, b: int, c: int, m: int, draws: int, replace: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Discordant counts (b', c') of ``draws`` subsamples of size m (module docstring)."""
    if replace:
        counts = rng.multinomial(m, [b / n, c / n, (n - b - c) / n], size=draws)
    else:
        counts = rng.multivariate_hypergeometric([b, c, n - b - c], m, size=draws)
    return counts[:, 0], counts[:, 1]


@dataclass(frozen=True)
class PowerCurve(JsonResult):
    """Simulated power of McNemar's test against test-set size (Zhu et al., §3.5, Figs. 3–5).

    Attributes:
        table: one row per test size: ``test_size, power`` (pooled over seeds: significant
            simulations / (seeds × simulations)), ``power_min, power_max`` (over seeds),
            ``seeds, simulations``.
        alpha: significance level of each test.
        replace: whether subsamples were drawn with replacement (bootstrap).
        metadata: method, correction, random_state, versions.
    """

    table: pd.DataFrame = field(repr=False)
    alpha: float
    replace: bool
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def smallest_sufficient(self, threshold: float = SUFFICIENT_POWER) -> int | None:
        """The smallest test size whose power is ≥ ``threshold``; None if none reaches it."""
        reached = self.table[self.table["power"] >= threshold]
        return None if reached.empty else int(reached["test_size"].min())

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "replace": self.replace,
            "table": self.table.to_dict(orient="list"),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> PowerCurve:
        return cls(
            pd.DataFrame(payload["table"]),
            float(payload["alpha"]),
            bool(payload["replace"]),
            payload.get("metadata", {}),
        )

    def plot(self, ax: Any = None, *, label: str | None = None) -> Any:
        """Power against test size (log x) with the min–max band over seeds and the 0.8 line."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        sizes = self.table["test_size"]
        line = ax.plot(sizes, self.table["power"], marker="o", ms=3, label=label)
        ax.fill_between(
            sizes,
            self.table["power_min"],
            self.table["power_max"],
            alpha=0.15,
            color=line[0].get_color(),
            lw=0,
        )
        ax.axhline(SUFFICIENT_POWER, color="0.3", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("test examples")
        ax.set_ylabel(f"power (McNemar, α = {self.alpha:g})")
        return ax


def simulate_power(
    correct_a: Sequence[np.ndarray],
    correct_b: Sequence[np.ndarray],
    test_sizes: Sequence[int] | None = None,
    *,
    alpha: float = POWER_ALPHA,
    n_simulations: int = 1000,
    replace: bool = True,
    method: str = "auto",
    correction: bool = False,
    random_state: int = 0,
) -> PowerCurve:
    """Power of McNemar's test by simulation (Zhu et al., §3.5; Card et al., 2020).

    For each seed s (``correct_a[s]``, ``correct_b[s]``: per-example correctness of the two
    configurations trained with seed s, on the same test examples) and each size m, draw
    ``n_simulations`` subsamples of m test examples, run McNemar's test on each, and count
    p < ``alpha``. Power at m = Σ_s significant_s / (seeds · n_simulations).

    Args:
        test_sizes: subsample sizes; default powers of two up to the smallest seed's test set
            (and that size itself).
        replace: ``True`` (default): bootstrap resamples, drawn with replacement (Card et al.,
            2020, as followed by Zhu et al. §3.5); m may exceed the test-set size. ``False``:
            subsamples without replacement, m ≤ n; under a true null their rejection rate
            falls below α as m approaches n (by the factor (n − m)/(n − 1) on χ², see the
            module docstring), so use it only for m ≪ n.
        method, correction: McNemar variant (:func:`probemeter.power.mcnemar.mcnemar`).
        random_state: seed of the subsampling streams (one per seed and size).

    Raises:
        ValueError: unpaired arrays (different lengths for one seed), alpha outside (0, 1),
            sizes < 1, sizes larger than a seed's test set with ``replace=False``, or a
            ``replace`` that is not a bool.
    """
    alpha = check_alpha(alpha)
    check_scalar(n_simulations, "n_simulations", int, min_val=1)
    boolean()(replace, "replace")
    seeds = _paired_seeds(correct_a, correct_b)
    smallest = min(n for n, _, _ in seeds)
    if test_sizes is None:
        sizes = [2**k for k in range(4, 64) if 2**k < smallest] + [smallest]
    else:
        integer_list(1, non_empty=True)(list(test_sizes), "test_sizes")
        sizes = sorted({int(m) for m in test_sizes})
        if not replace and sizes[-1] > smallest:
            raise ValueError(
                f"test_sizes asks for {sizes[-1]} test examples but a seed's test set holds "
                f"only {smallest}; sizes larger than the data need replace=True (bootstrap)"
            )
    rows = []
    for m in sizes:
        per_seed = []
        for seed, (n, b, c) in enumerate(seeds):
            rng = np.random.default_rng([int(random_state), seed, m, 0x9043])
            b_sub, c_sub = _draw_discordant(rng, n, b, c, m, n_simulations, replace)
            p = mcnemar_p_values(b_sub, c_sub, method=method, correction=correction)
            per_seed.append(np.count_nonzero(p < alpha))
        per_seed = np.asarray(per_seed)
        rows.append(
            {
                "test_size": m,
                "power": per_seed.sum() / (len(seeds) * n_simulations),
                "power_min": per_seed.min() / n_simulations,
                "power_max": per_seed.max() / n_simulations,
                "seeds": len(seeds),
                "simulations": int(n_simulations),
            }
        )
    metadata = {
        "method": method,
        "correction": bool(correction),
        "random_state": int(random_state),
        "versions": environment(),
    }
    return PowerCurve(pd.DataFrame(rows), alpha, bool(replace), metadata)
