"""The Table-2 report of a comparison problem, with simulated power (Zhu et al., §4.4).

Per subsampled size: N_test, the mean |R₁ − R₂| over seeds, the N_train recommended by the
finite-class bound (:mod:`probemeter.power.bounds`), and the power of McNemar's test at that size
(:mod:`probemeter.power.simulation`) — the table of Zhu et al., Tables 2–7, next to the power
curves of Figs. 3–5.

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from probemeter._figures import representation_colours, shared_legend
from probemeter._io import JsonResult
from probemeter._tables import render_table
from probemeter.power.bounds import recommend_train_size
from probemeter.power.clustered import format_p, holm
from probemeter.power.defaults import POWER_ALPHA
from probemeter.power.paired import PairedComparison
from probemeter.power.simulation import SUFFICIENT_POWER, check_alpha

__all__ = ["PowerReport", "power_frames", "power_report"]


@dataclass(frozen=True)
class PowerReport(JsonResult):
    """Zhu et al., Table 2 with power: one row per (comparison, subsampled size).

    Attributes:
        table: columns ``comparison, split, n_train, n_test, accuracy_a, accuracy_b,
            mean_gap`` (mean |R₁ − R₂| over seeds), ``recommended_n_train`` (NaN where the gap
            is 0: the comparison may have collapsed), ``power`` (simulated at the row's own
            N_test, bootstrap, pooled over seeds), ``sufficient`` (power ≥ 0.8),
            ``recommendation_power``: the power at the smallest measured N_train ≥ the
            recommendation (NaN when the recommendation lies beyond the measured sizes),
            ``p_value``: McNemar's p-value at the row's split, the largest over its seeds (every
            seed must reject), and ``p_adjusted``: Holm's adjustment of ``p_value`` over every
            row of the report (each row is a test; Holm 1979).
        settings: alpha, simulations, bound settings.
        metadata: training metadata and versions.
    """

    table: pd.DataFrame = field(repr=False)
    settings: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        table = self.table.astype(object).where(self.table.notna(), None)
        return {
            "table": table.to_dict(orient="list"),
            "settings": self.settings,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> PowerReport:
        table = pd.DataFrame(payload["table"]).fillna(value=np.nan)
        return cls(table.infer_objects(), payload["settings"], payload.get("metadata", {}))

    def to_markdown(self) -> str:
        """The table in Markdown, numbers rounded for reading."""
        columns = [
            "comparison", "n_train", "n_test", "accuracy_a", "accuracy_b", "mean_gap",
            "recommended_n_train", "power", "recommendation_power", "p_value", "p_adjusted",
        ]  # fmt: skip
        rows = [
            [_cell(column, row[column]) for column in columns] for _, row in self.table.iterrows()
        ]
        return render_table(columns, rows, "markdown")

    def __str__(self) -> str:
        return self.to_markdown()

    def plot(self, ax: Any = None) -> Any:
        """Power against N_test, one line per comparison (coloured by
        :func:`~probemeter._figures.representation_colours` of the compared representations),
        with the 0.8 line (Figs. 3–5). Returns the matplotlib axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        names = [str(name) for name in pd.unique(self.table["comparison"])]
        compared = [name.rsplit(" vs ", 1)[-1] for name in names]
        colours = representation_colours(compared)
        for name, other in zip(names, compared):
            rows = self.table[self.table["comparison"] == name]
            ax.plot(
                rows["n_test"], rows["power"], marker="o", ms=3, label=name, color=colours[other]
            )
        ax.axhline(SUFFICIENT_POWER, color="0.3", ls="--", lw=1, label="power 0.8 (§3.5)")
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("test examples N_test (log scale)")
        ax.set_ylabel(f"power of McNemar's test (α = {self.settings['alpha']:g})")
        return ax

    def figure(self) -> Any:
        """:meth:`plot` as a figure of its own, titled, with one legend below. Returns the
        matplotlib figure."""
        from matplotlib.figure import Figure

        figure = Figure(figsize=(6.4, 4.6), layout="constrained")
        ax = self.plot(figure.subplots())
        ax.set_title("power against test-set size (Zhu et al. §3.5, Figs. 3–5)", fontsize=10)
        shared_legend(figure, [ax], columns=2)
        return figure


def power_report(
    comparisons: Sequence[PairedComparison],
    *,
    alpha: float = POWER_ALPHA,
    n_simulations: int = 1000,
    random_state: int = 0,
    **bound: Any,
) -> PowerReport:
    """Table 2 of Zhu et al. (§4.4) for each comparison, with the simulated power per size.

    For every split (a subsampled size): mean |R₁ − R₂| over seeds, the N_train recommended by
    the bound (:func:`probemeter.power.bounds.recommend_train_size` with the larger of the two
    probes' parameter counts, §4.6; ``bound`` passes its options: factor, delta, counting,
    bits_per_parameter, variant, C, first_block_fraction, eta), and the power of McNemar's
    test at the split's own N_test (bootstrap subsamples of its test set, pooled over seeds).
    The last column checks the recommendation against the measurements: the power observed at
    the smallest measured N_train at or above it.
    """
    alpha = check_alpha(alpha)
    recommend_train_size(0.1, 1, **bound)  # invalid bound options fail before any simulation
    rows = []
    for comparison in comparisons:
        summary = comparison.summary()
        first = len(rows)
        for split, stats in summary.iterrows():
            curve = comparison.power_curve(
                [split],
                [int(stats["n_test"])],
                alpha=alpha,
                n_simulations=n_simulations,
                replace=True,
                random_state=random_state,
            )
            recommended = np.nan
            if stats["mean_gap"] > 0:
                recommended = recommend_train_size(
                    float(stats["mean_gap"]), max(comparison.n_parameters), **bound
                ).n_train
            power = float(curve.table["power"].iloc[0])
            tests = comparison.runs.loc[comparison.runs["split"] == split, "p_value"]
            rows.append(
                {
                    "comparison": f"{comparison.name_a} vs {comparison.name_b}",
                    "split": split,
                    "n_train": int(stats["n_train"]),
                    "n_test": int(stats["n_test"]),
                    "accuracy_a": float(stats["accuracy_a"]),
                    "accuracy_b": float(stats["accuracy_b"]),
                    "mean_gap": float(stats["mean_gap"]),
                    "recommended_n_train": recommended,
                    "power": power,
                    "sufficient": power >= SUFFICIENT_POWER,
                    "p_value": float(tests.max()),
                }
            )
        block = rows[first:]
        for row in block:
            covering = [r for r in block if r["n_train"] >= row["recommended_n_train"]]
            row["recommendation_power"] = (
                min(covering, key=lambda r: r["n_train"])["power"] if covering else np.nan
            )
    if rows:
        for row, adjusted in zip(rows, holm([row["p_value"] for row in rows])):
            row["p_adjusted"] = float(adjusted)
    settings = {
        "alpha": alpha,
        "tests": "McNemar per seed, p the largest over seeds; Holm-adjusted over every row",
        "simulations": int(n_simulations),
        "subsampling": "bootstrap at each split's own N_test, pooled over seeds",
        "bound": {
            key: value
            for key, value in recommend_train_size(0.1, 1, **bound).to_dict().items()
            if key not in ("gap", "target", "n_train", "n_total", "n_parameters", "log_class_size")
        },
        "random_state": int(random_state),
    }
    metadata = {"training": comparisons[0].metadata if comparisons else {}}
    return PowerReport(pd.DataFrame(rows), settings, metadata)


def _cell(column: str, value: Any) -> str:
    """A report cell for reading: counts with thousands separators, gaps to 4 decimals, other
    numbers to 3, "—" where missing."""
    if isinstance(value, str):
        return value
    if pd.isna(value):
        return "—"
    if column in ("n_train", "n_test", "recommended_n_train"):
        return f"{int(value):,}"
    if column in ("p_value", "p_adjusted"):
        return format_p(value)
    return f"{value:.3f}" if column != "mean_gap" else f"{value:.4f}"


def power_frames(
    report: PowerReport, comparisons: Sequence[PairedComparison]
) -> dict[str, pd.DataFrame]:
    """The tables of a power analysis, by name: ``power``, the report's table
    (:meth:`PowerReport.to_frame`, Zhu et al. Table 2), and ``runs``, every probe run of
    every comparison (:meth:`PairedComparison.to_frame`: split, seed, both accuracies)."""
    runs = pd.concat([comparison.to_frame() for comparison in comparisons], ignore_index=True)
    return {"power": report.to_frame(), "runs": runs}
