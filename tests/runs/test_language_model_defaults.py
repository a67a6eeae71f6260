"""Defaults that suit language models (issue 42, item 5): on a texts task the engine methods
default to a linear probe, the curve method with a learning-rate and weight-decay grid chosen
on the development split; written options (a paper's protocol) are kept; other tasks keep the
papers' defaults; the generated reference states them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from probemeter.curves.defaults import CURVE_PROBE, CURVE_TRAINING, LANGUAGE_MODEL_GRID
from probemeter.encoders.tiny import tiny_decoder
from probemeter.runs.config import load_experiment
from probemeter.runs.methods import METHODS

TEXTS = "text,label\nthe film was great,pos\nthe film was dull,neg\n" * 10


def _experiment(tmp_path: Path, method: str, task: str = "texts") -> Path:
    (tmp_path / "texts.csv").write_text(TEXTS)
    table = (
        '[task]\ndataset = "texts"\npath = "texts.csv"\n'
        if task == "texts"
        else '[task]\ndataset = "digits"\n'
    )
    if task == "texts":
        if not (tmp_path / "model").exists():
            tiny_decoder(tmp_path / "model")
        representation = (
            '[[representations]]\nname = "tiny"\nkind = "transformer"\nmodel = "model"\n'
            "layer = [0, 1]\n"
        )
    else:
        representation = '[[representations]]\nname = "pixels"\nkind = "raw"\n'
    path = tmp_path / "experiment.toml"
    path.write_text(f"{table}\n{representation}\n[method]\n{method}")
    return path


def test_a_texts_task_defaults_to_a_linear_probe_with_a_grid_chosen_on_dev(tmp_path):
    method = load_experiment(_experiment(tmp_path, 'kind = "curve"\nepsilon = 0.1\n')).method
    assert method.probe == ()
    assert list(method.lr) == LANGUAGE_MODEL_GRID["lr"]
    assert list(method.weight_decay) == LANGUAGE_MODEL_GRID["weight_decay"]
    assert method.settings_grid() == LANGUAGE_MODEL_GRID  # chosen on the development split
    assert method.dev_fraction > 0


def test_written_options_keep_the_papers_protocol(tmp_path):
    written = 'kind = "curve"\nepsilon = 0.1\nprobe = [512, 512]\nlr = 1e-4\nweight_decay = 0.0\n'
    method = load_experiment(_experiment(tmp_path, written)).method
    assert method.probe == (512, 512) and method.lr == 1e-4 and method.weight_decay == 0.0
    assert method.settings_grid() is None


@pytest.mark.parametrize(
    "table", ['kind = "mdl"\n', 'kind = "power"\nbaseline = "tiny-0"\n', 'kind = "k-sparse"\n']
)
def test_the_other_engine_methods_default_to_a_linear_probe_on_texts(tmp_path, table):
    method = load_experiment(_experiment(tmp_path, table)).method
    assert method.probe == ()
    if method.kind == "mdl":  # texts have no word types for the control task
        assert method.control is False


def test_other_tasks_keep_the_papers_defaults(tmp_path):
    method = load_experiment(_experiment(tmp_path, 'kind = "curve"\nepsilon = 0.1\n', "digits"))
    assert method.method.probe == CURVE_PROBE
    assert method.method.lr == CURVE_TRAINING.lr


def test_the_generated_reference_states_the_defaults():
    sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_hooks"))
    from references import experiment_reference

    page = experiment_reference()
    for cls in METHODS.values():
        if cls.language_model_defaults:
            section = page.split(f'### `kind = "{cls.kind}"`')[1].split("### ")[0]
            assert "texts a language model reads" in section
            assert all(f"`{name} = " in section for name in cls.language_model_defaults)


def test_direction_twins_take_no_settings_grid(tmp_path):
    """A closed-form direction is the same at every learning rate and weight decay: under the
    default grid its curve is fitted once, and its results record the fit, not Adam's."""
    import numpy as np

    from probemeter import Execution
    from probemeter.curves.curve import loss_data_curve
    from probemeter.data import ProbeData
    from probemeter.probes import MLP, Direction

    method = load_experiment(_experiment(tmp_path, 'kind = "curve"\nepsilon = 0.1\n')).method
    assert method.settings_for(Direction("lda")) is None
    assert method.settings_for(MLP(())) == LANGUAGE_MODEL_GRID
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    X = rng.normal(size=(200, 4)) + y[:, None]
    data = ProbeData.from_arrays(X[:150], y[:150], X[150:], y[150:])
    with pytest.raises(ValueError, match="closed form"):
        loss_data_curve(data, Direction("lda"), [50, 135], 1, settings=LANGUAGE_MODEL_GRID)
    curve = loss_data_curve(data, Direction("lda"), [50, 135], 1, execution=Execution(n_jobs=1))
    assert curve.metadata["training"]["family"] == "lda"
    assert curve.metadata["training"]["training"] == "closed form"
    assert "settings" not in curve.metadata
