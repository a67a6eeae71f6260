"""Figures shared by the command-line tools: loss-data curves of several representations, and
SDL and εSC against layer for layer sweeps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from probemeter.curves.comparison import Comparison
from probemeter.curves.curve import LossDataCurve

__all__ = ["plot_curves", "plot_layers"]


def plot_curves(curves: Sequence[LossDataCurve], epsilon: float | None, path: str | Path) -> None:
    """Save loss (with the line y = ε, in nats, when given) and accuracy against n to ``path``.

    The SDL area is shaded only when there is a single curve (several would overlap).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (loss_ax, accuracy_ax) = plt.subplots(1, 2, figsize=(10, 3.8))
    for curve in curves:
        curve.plot(loss_ax, epsilon=epsilon, shade_sdl=len(curves) == 1)
        curve.plot(accuracy_ax, metric="accuracy")
    loss_ax.legend(fontsize=8)
    loss_ax.set_title("loss-data curves (band: min–max over seeds)")
    accuracy_ax.set_title("accuracy")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_layers(
    comparison: Comparison, sweeps: Mapping[str, Sequence[tuple[int, str]]], path: str | Path
) -> None:
    """Save SDL(ε) and εSC(ε) at the largest data size against layer, one line per sweep
    (``sweeps``: a model's name → its ``(layer, representation)`` pairs), to ``path``.

    The standard figure of probing papers (Voita & Titov Fig. 2; Whitney et al. Table 2 as a
    plot). A value that is only a lower bound (the curve never reached ε) is drawn as an open
    upward triangle: the true value lies above it.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(comparison.sizes)
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, measure, label in (
        (axes[0], "SDL", f"SDL at ε = {comparison.epsilon:g} ({comparison.unit})"),
        (axes[1], "SC", f"εSC at ε = {comparison.epsilon:g} (examples)"),
    ):
        for model, members in sweeps.items():
            layers = [layer for layer, _ in members]
            results = [comparison.result(measure, n, name) for _, name in members]
            (line,) = ax.plot(layers, [r.value for r in results], marker="o", label=model)
            bounds = [(layer, r.value) for layer, r in zip(layers, results) if r.lower_bound]
            if bounds:
                ax.plot(
                    *zip(*bounds), linestyle="none", marker="^", markersize=10,
                    markerfacecolor="white", color=line.get_color(), label=f"{model}: lower bound",
                )  # fmt: skip
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_title(label, fontsize=10)
        ax.set_xticks(sorted({layer for members in sweeps.values() for layer, _ in members}))
    axes[0].legend(fontsize=8)
    figure.suptitle(f"by layer, at n = {n} (lower is easier)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
