"""The figure of several loss-data curves: test loss and accuracy against the training-set size,
one line per representation (the figure of the layer sweeps, for every method, is
:mod:`probemeter.runs.layers`'s).

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probemeter._figures import FigureOptions, representation_colours, shared_legend
from probemeter.curves.curve import LossDataCurve

__all__ = ["curves_figure", "plot_curves"]


def curves_figure(curves: Sequence[LossDataCurve], epsilon: float | None = None) -> Any:
    """Two panels, test loss (nats) and test accuracy against n (log scale): the mean over
    seeds as a line and the min–max band, each representation in its colour
    (:func:`~probemeter._figures.representation_colours`: a model's layers in sequential
    shades), the tolerance ε (nats) as a dashed line, one legend below. The SDL area is shaded
    only for a single curve (several would overlap). For label sets (multi-label targets) the
    second panel is the test micro-F1. Returns the matplotlib figure."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 4.4), layout="constrained")
    loss_ax, accuracy_ax = figure.subplots(1, 2)
    colours = representation_colours([curve.name for curve in curves])
    single = len(curves) == 1  # shade its SDL area (it draws ε itself)
    label_sets = any(curve.multilabel for curve in curves)
    metric, title = ("micro_f1", "test micro-F1") if label_sets else ("accuracy", "test accuracy")
    for curve in curves:
        colour = colours[curve.name]
        shown = epsilon if single else None
        curve.plot(loss_ax, epsilon=shown, shade_sdl=single, color=colour)
        curve.plot(accuracy_ax, metric=metric, color=colour)
    if epsilon is not None and not single:  # once, last in the legend
        loss_ax.axhline(epsilon, color="0.3", ls="--", lw=1, label=f"ε = {epsilon:g} nats")
    loss_ax.set_title("test loss (nats)", fontsize=10)
    accuracy_ax.set_title(title, fontsize=10)
    figure.suptitle(
        "loss-data curves: mean over seeds, band min–max over seeds (Whitney et al. §2.1)",
        fontsize=10,
    )
    shared_legend(figure, [loss_ax, accuracy_ax])
    return figure


def plot_curves(
    curves: Sequence[LossDataCurve],
    epsilon: float | None,
    stem: str | Path,
    options: FigureOptions | None = None,
) -> tuple[Path, ...]:
    """Save :func:`curves_figure` as ``stem.<format>`` for each of ``options.formats``
    (default PNG and PDF, 150 dpi); returns the paths."""
    return (options or FigureOptions()).save(curves_figure(curves, epsilon), stem)
