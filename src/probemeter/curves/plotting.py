"""Figures shared by the command-line tools: loss-data curves of several representations (the
figure of measures against layer is :mod:`probemeter.runs.layers`'s, for every method)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from probemeter.curves.curve import LossDataCurve

__all__ = ["plot_curves"]


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
