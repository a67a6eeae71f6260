"""Publication figures: every method's figure saved as PNG, PDF and SVG; colours that show the
order of a model's layers and never repeat; one legend per figure, with ε; panels named by
their measure."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from probemeter import Execution
from probemeter._figures import FigureOptions, representation_colours
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.plotting import curves_figure
from probemeter.data import ProbeData
from probemeter.mdl.online import online_codelength
from probemeter.mdl.table import MDLEntry, mdl_figure
from probemeter.pareto.frontiers import NUCLEAR_NORM, RANK, ParetoFrontiers
from probemeter.power.paired import PairedComparison
from probemeter.power.sampling import stratified_splits
from probemeter.power.table import power_report
from probemeter.probes import Linear
from probemeter.training.config import TrainingConfig

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}
ALL = FigureOptions(("png", "pdf", "svg"), dpi=72)


def _curve(name: str, shift: float) -> LossDataCurve:
    sizes = (10, 40, 160)
    points = pd.DataFrame(
        {
            "n": [n for n in sizes for _ in range(2)],
            "seed": [0, 1] * len(sizes),
            "loss": [1.5 / (i + 1) + shift + 0.01 * s for i in range(3) for s in range(2)],
            "loss_truncated": [0.5] * 6,
            "accuracy": [0.4 + 0.1 * i for i in range(3) for _ in range(2)],
        }
    )
    return LossDataCurve(name, points, n_classes=4, pool_size=160, n_test=50)


def _saved(figure, tmp_path, name: str) -> list[str]:
    """Save ``figure`` in every format and check each file is one of its format."""
    paths = ALL.save(figure, tmp_path / name)
    assert [path.name for path in paths] == [f"{name}.png", f"{name}.pdf", f"{name}.svg"]
    for path in paths:
        assert path.read_bytes().startswith(MAGIC[path.suffix[1:]]), path
    assert not list(tmp_path.glob(".*.tmp"))  # written through temporaries, renamed
    return [path.name for path in paths]


def _texts(figure) -> set[str]:
    return {text.get_text() for text in figure.findobj(matplotlib.text.Text)}


def test_the_curve_figure_names_its_panels_and_puts_epsilon_in_one_legend(tmp_path):
    curves = [_curve(f"m-{layer}", 0.1 * layer) for layer in range(13)] + [_curve("glove", 0)]
    figure = curves_figure(curves, epsilon=0.5)
    assert len(figure.legends) == 1  # one legend for both panels
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels[-1] == "ε = 0.5 nats" and "m-12" in labels and "glove" in labels
    assert {"test loss (nats)", "test accuracy"} <= _texts(figure)
    lines = {line.get_label(): line.get_color() for line in figure.axes[0].get_lines()}
    assert len({lines[f"m-{layer}"] for layer in range(13)} | {lines["glove"]}) == 14
    _saved(figure, tmp_path, "curves")


@pytest.mark.slow
def test_the_mdl_figure_shows_only_the_codes_computed(tmp_path):
    rng = np.random.default_rng(0)
    y = np.arange(300) % 3
    X = rng.normal(size=(300, 5)) + y[:, None]
    data = ProbeData.from_arrays(X, y, test_size=60, name="toy")
    config = TrainingConfig(steps=20, batch_size=32, lr=1e-2)
    online = online_codelength(
        data,
        Linear(),
        [0.1, 0.5, 1.0],
        seeds=1,
        config=config,
        execution=Execution(device="cpu", n_jobs=1),
    )
    figure = mdl_figure([MDLEntry("toy", online), MDLEntry("toy-2", online)])
    titles = [ax.get_title() for ax in figure.axes]
    assert not any("variational" in title for title in titles)  # not computed: no panel
    assert "online code: data + model codelength" in titles
    assert "codelength (kbits of 1024 bits)" in {ax.get_ylabel() for ax in figure.axes}
    _saved(figure, tmp_path, "mdl")


@pytest.mark.slow
def test_the_pareto_figure_names_the_measure_and_what_its_complexity_is(tmp_path):
    points = pd.DataFrame(
        {
            "task": "toy",
            "measure": [NUCLEAR_NORM] * 4 + [RANK] * 4,
            "representation": ["a", "a", "b", "b"] * 2,
            "complexity": [1.0, 3.0, 2.0, 5.0, 1, 2, 1, 2],
            "accuracy": [0.5, 0.7, 0.6, 0.8, 0.5, 0.6, 0.55, 0.7],
        }
    )
    figure = ParetoFrontiers(points).figure()
    titles = {ax.get_title() for ax in figure.axes}
    assert titles == {"Pareto frontier, nuclear norm", "Pareto frontier, rank"}  # not "toy"
    assert "nuclear norm ‖W‖* of the probe (parametric complexity)" in _texts(figure)
    assert {ax.get_ylabel() for ax in figure.axes} == {"toy: test accuracy"}
    _saved(figure, tmp_path, "frontiers")


@pytest.mark.slow
def test_the_power_figure_has_the_power_line_in_its_legend(tmp_path):
    splits = stratified_splits(np.repeat(np.arange(2), 100), [8, 16])
    runs = pd.DataFrame({"split": [0, 1], "seed": [0, 0]})
    rng = np.random.default_rng(1)
    correct_a = [rng.random(4) < 0.5, rng.random(8) < 0.5]
    correct_b = [rng.random(4) < 0.8, rng.random(8) < 0.8]
    comparison = PairedComparison.build("a", "b", splits, runs, correct_a, correct_b, (3, 3))
    figure = power_report([comparison], n_simulations=20).figure()
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == ["a vs b", "power 0.8 (§3.5)"]
    assert "power of McNemar's test (α = 0.05)" in _texts(figure)
    _saved(figure, tmp_path, "power")


def test_layers_of_a_model_take_sequential_shades_in_layer_order():
    names = ["glove", *(f"bert-{layer}" for layer in (12, 0, 6, 3)), "spacy", "gpt-0", "gpt-1"]
    colours = representation_colours(names)
    viridis, oranges = matplotlib.colormaps["viridis"], matplotlib.colormaps["Oranges"]
    # four bert layers in order 0, 3, 6, 12 along viridis' 0 .. 0.85
    for rank, layer in enumerate((0, 3, 6, 12)):
        assert colours[f"bert-{layer}"] == viridis(0.85 * rank / 3)
    assert colours["gpt-0"] == oranges(0.35) and colours["gpt-1"] == oranges(0.95)
    tab10 = matplotlib.colormaps["tab10"]
    assert (colours["glove"], colours["spacy"]) == (tab10(0), tab10(1))
    assert list(colours) == names
    many = representation_colours([f"rep{i}" for i in range(25)])
    assert len(set(many.values())) == 25  # past tab20: evenly spaced hues, none repeated


def test_figure_options_check_formats_and_dpi():
    assert FigureOptions().formats == ("png", "pdf") and FigureOptions().dpi == 150
    assert FigureOptions(("pdf",)).embeddable is None
    assert FigureOptions(("svg", "pdf")).embeddable == "svg"
    for formats in ((), ("bmp",), ("png", "png")):
        with pytest.raises(ValueError, match="figure formats must be distinct ones of"):
            FigureOptions(formats)
    with pytest.raises(ValueError, match="dpi"):
        FigureOptions(dpi=5)
