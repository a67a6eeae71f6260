"""Experiment files: parsing, validation that reports every problem, and `probemeter run`
end to end — resuming stored units, recomputing with --fresh, surviving a SIGKILL."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from experiment_files import PIXELS, digits_experiment, pca
from subprocess_kill import kill_when

from probemeter.cli.main import main
from probemeter.curves.method import CurveMethod
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data
from probemeter.runs.saved_probes import load_run_probes
from probemeter.runs.store import ResultStore
from probemeter.training.shared_memory import backing_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: the curve method of the tiny experiments, with {steps} training steps
TINY = """epsilon = 0.3
probe = []
seeds = 2
steps = {steps}
lr = 1e-2
sizes = [20, 100, 400]"""


def _write(tmp_path, steps=60, components=(8,)):
    representations = (PIXELS, *(pca(k) for k in components))
    path = tmp_path / "tiny.toml"
    path.write_text(digits_experiment(TINY.format(steps=steps), "tiny", representations))
    return path


def test_parses_a_good_file_with_defaults(tmp_path):
    experiment = load_experiment(_write(tmp_path))
    assert experiment.run.name == "tiny" and experiment.run.random_state == 0
    assert experiment.task.dataset == "digits" and experiment.task.options == {"n_test": 500}
    assert [(r.name, r.kind, r.view, r.n_components) for r in experiment.representations] == [
        ("pixels", "raw", "pixels", None),
        ("pca-8", "pca", "pixels", 8),
    ]
    assert experiment.method == CurveMethod(
        epsilon=0.3, probe=(), seeds=2, steps=60, lr=1e-2, sizes=(20, 100, 400)
    )
    assert json.loads(json.dumps(experiment.to_dict()))["method"]["sizes"] == [20, 100, 400]


@pytest.mark.parametrize("name", ["digits.toml", "fashion_mnist.toml"])
def test_examples_are_valid(name, capsys):
    assert main(["run", str(EXAMPLES / name), "--check"]) == 0
    assert "experiment file OK" in capsys.readouterr().out


def test_every_problem_is_reported_at_once_with_its_location(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(
        """
[run]
colour = "red"
[task]
dataset = "digits"
n_test = "many"
[[representations]]
name = "a"
kind = "pca"
n_components = 100
[[representations]]
name = "a"
kind = "umap"
[[representations]]
name = "b"
kind = "npz"
train = "missing.npz"
[method]
epsilon = -1
sizes = [10, 5000]
probe = [512, 0]
"""
    )
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    problems = caught.value.problems
    expected = [
        "run.colour: unknown key",
        "task.n_test: must be an integer",
        "representations[1].name: 'a' is already representations[0]",
        "representations[1].kind: must be one of",
        "representations[2].train: file",
        "representations[2].test: missing (required)",
        "method.epsilon: must be a number > 0; got -1",
        "method.probe: must be a list of positive integers",
    ]
    for start in expected:
        assert sum(problem.startswith(start) for problem in problems) == 1, (start, problems)
    assert len(problems) == len(expected)

    # with the task readable, the checks against its pool and features run too
    path.write_text(path.read_text().replace('"many"', "500"))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    problems = caught.value.problems
    assert (
        "method.sizes: 5000 exceeds the 1167 examples left for training of a pool of 1297 "
        "(dev_fraction = 0.1 is held out)" in problems
    )
    assert any(p.startswith("representations[0].n_components: 100 exceeds") for p in problems)

    assert main(["run", str(path), "--check"]) == 2  # one line per problem, no traceback
    error = capsys.readouterr().err
    assert "Traceback" not in error and f"{len(problems)} problems" in error
    assert all(
        problem in error.splitlines()[-len(problems) + index]
        for index, problem in enumerate(problems)
    )


def test_syntax_errors_and_missing_files_are_experiment_errors(tmp_path):
    (tmp_path / "broken.toml").write_text("[run\n")
    with pytest.raises(ExperimentError, match="not valid TOML"):
        load_experiment(tmp_path / "broken.toml")
    with pytest.raises(ExperimentError, match="cannot be read"):
        load_experiment(tmp_path / "absent.toml")


def test_parity_views(tmp_path):
    path = tmp_path / "parity.toml"
    path.write_text(
        '[task]\ndataset = "parity"\nn_train = 50\nn_test = 20\nn_bits = 6\n'
        '[[representations]]\nname = "bits"\nkind = "raw"\n'
        '[[representations]]\nname = "noisy"\nkind = "raw"\nview = "noisy label"\n'
        "[method]\nepsilon = 0.1\n"
    )
    data = prepare_data(load_experiment(path))
    assert data["bits"].n_features == 6 and data["noisy"].n_features == 1
    assert data["bits"].pool_size == 50 and len(data["noisy"].y_test) == 20


def test_shared_data_are_the_data_in_shared_memory(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(digits_experiment("epsilon = 0.1"))
    experiment = load_experiment(path)
    plain, shared = prepare_data(experiment), prepare_data(experiment, shared=True)
    assert plain.keys() == shared.keys() == {"pixels", "pca-8"}
    for name, data in shared.items():
        for features in ("X_train", "X_test"):
            assert backing_file(getattr(data, features)) is not None
            assert backing_file(getattr(plain[name], features)) is None
            np.testing.assert_array_equal(getattr(data, features), getattr(plain[name], features))
        np.testing.assert_array_equal(data.y_train, plain[name].y_train)


def test_npz_representation_needs_no_task_and_checks_its_pool_up_front(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for name, n in (("a.npz", 60), ("a_test.npz", 30)):
        np.savez(tmp_path / name, X=rng.normal(size=(n, 3)), y=np.arange(n) % 2)
    path = tmp_path / "own.toml"
    path.write_text(
        '[[representations]]\nname = "a"\nkind = "npz"\ntrain = "a.npz"\ntest = "a_test.npz"\n'
        "[method]\nepsilon = 0.1\nprobe = []\nsteps = 5\nsizes = [10, 100]\n"
    )
    with pytest.raises(ExperimentError, match=r"method.sizes: 100 exceeds the 54 examples .*'a'"):
        load_experiment(path)  # the file's header gives the pool: checked without loading it
    assert main(["run", str(path), "--out", str(tmp_path / "runs"), "--no-progress"]) == 2
    assert "method.sizes: 100 exceeds the 54 examples left" in capsys.readouterr().err
    path.write_text(path.read_text().replace("sizes = [10, 100]", "sizes = [10, 54]"))
    assert load_experiment(path).task is None
    assert not (tmp_path / "runs").exists()  # checked before anything was written or trained


def _results(run_dir):
    return json.loads((run_dir / "results.json").read_text())


@pytest.mark.slow
def test_run_writes_results_then_resumes_and_fresh_recomputes(tmp_path, capsys):
    path, out = _write(tmp_path), tmp_path / "runs"
    args = ["run", str(path), "--out", str(out), "--no-progress", "--n-jobs", "1"]
    assert main(args) == 0
    printed = capsys.readouterr()
    run_dir = out / "tiny"
    for word in ("pixels", "pca-8", "SDL, ε=0.3"):
        assert word in printed.out
    assert f"to {run_dir} in" in printed.err  # the files written: a log line
    payload = _results(run_dir)
    assert payload["schema"] == "probemeter.results/1"
    assert [curve["name"] for curve in payload["curves"]] == ["pixels", "pca-8"]
    assert payload["experiment"]["method"]["sizes"] == [20, 100, 400]
    assert not any(timing["loaded"] for timing in payload["timings"].values())
    assert (run_dir / "experiment.toml").read_text() == path.read_text()
    assert (run_dir / "curves.png").stat().st_size > 10_000
    units = {
        key: ResultStore(run_dir).path(key).read_bytes() for key in ResultStore(run_dir).keys()
    }
    assert len(units) == 2

    assert main(args) == 0  # everything is loaded: unit files untouched
    second = _results(run_dir)
    assert all(timing["loaded"] for timing in second["timings"].values())
    assert second["curves"] == payload["curves"]
    assert {key: ResultStore(run_dir).path(key).read_bytes() for key in units} == units

    assert main([*args, "--fresh"]) == 0
    assert not any(timing["loaded"] for timing in _results(run_dir)["timings"].values())
    # training is deterministic: recomputed curves equal the stored ones
    assert _results(run_dir)["curves"][0]["points"] == payload["curves"][0]["points"]


@pytest.mark.slow
def test_a_killed_run_resumes_without_recomputing_stored_units(tmp_path):
    path, out = _write(tmp_path, steps=400, components=(4, 8, 16)), tmp_path / "runs"
    command = [sys.executable, "-m", "probemeter.cli.main", "run", str(path), "--out", str(out)]
    command += ["--no-progress", "--n-jobs", "1"]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    store = ResultStore(out / "tiny")

    kill_when(command, environment, lambda: bool(store.keys()))
    stored = {key: store.path(key).read_bytes() for key in store.keys()}
    assert 1 <= len(stored) < 4
    assert not (out / "tiny" / "results.json").exists()

    finished = subprocess.run(command, env=environment, capture_output=True, timeout=120)
    assert finished.returncode == 0, finished.stderr.decode()
    timings = _results(out / "tiny")["timings"]
    assert {t["key"] for t in timings.values() if t["loaded"]} == set(stored)
    assert {key: store.path(key).read_bytes() for key in stored} == stored
    assert len(store.keys()) == 4


# ---------------------------------------------------------------------------------------------
# save_probes: every unit's trained probes beside it
# ---------------------------------------------------------------------------------------------


def test_save_probes_is_read_and_checked(tmp_path):
    path = _write(tmp_path)
    assert load_experiment(path).run.save_probes is False
    path.write_text(path.read_text().replace('name = "tiny"', 'name = "tiny"\nsave_probes = true'))
    experiment = load_experiment(path)
    assert experiment.run.save_probes is True
    assert experiment.to_dict()["run"]["save_probes"] is True
    path.write_text(path.read_text().replace("save_probes = true", 'save_probes = "yes"'))
    with pytest.raises(
        ExperimentError, match=r"run\.save_probes: must be true or false; got 'yes'"
    ):
        load_experiment(path)


def _tiny_probes_file(tmp_path, save_probes: bool):
    """The tiny digits experiment of item 5's acceptance: sizes 20 and 50, one seed, 20
    steps."""
    path = tmp_path / "tiny.toml"
    method = TINY.format(steps=20).replace("seeds = 2", "seeds = 1")
    method = method.replace("sizes = [20, 100, 400]", "sizes = [20, 50]")
    run = "save_probes = true\n" if save_probes else ""
    path.write_text(digits_experiment(method, "tiny", (PIXELS, pca(8)), run))
    return path


@pytest.mark.slow
def test_a_run_with_save_probes_keeps_probes_reproducing_its_results(tmp_path):
    path, out = _tiny_probes_file(tmp_path, save_probes=True), tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--n-jobs", "1"]) == 0
    run_dir = out / "tiny"
    results = _results(run_dir)
    store = ResultStore(run_dir)
    for timing in results["timings"].values():
        assert store.probes_path(timing["key"]).is_file()
    probes = load_run_probes(run_dir)
    assert list(probes) == ["pixels", "pca-8"]
    datasets = prepare_data(load_experiment(path))
    for curve in results["curves"]:
        kept, data = probes[curve["name"]], datasets[curve["name"]]
        frame = kept.to_frame()
        assert frame[["n", "seed"]].values.tolist() == [[20, 0], [50, 0]]
        assert frame["loss"].tolist() == curve["points"]["loss"]  # the stored floats
        # on the device the run evaluated on (``device = "auto"``): exactly on the CPU; on a
        # GPU cuBLAS picks kernels by the stack's shape, so a lone probe differs in the last bits
        recomputed = kept.evaluate(data.X_test, data.y_test, device="auto")
        if torch.cuda.is_available():
            np.testing.assert_allclose(recomputed["loss"], curve["points"]["loss"], rtol=1e-6)
        else:
            assert recomputed["loss"].tolist() == curve["points"]["loss"]  # exactly
            assert recomputed["accuracy"].tolist() == curve["points"]["accuracy"]
        with torch.no_grad():
            logits = kept[1].module()(torch.from_numpy(data.X_test))
        assert np.array_equal(logits.argmax(dim=1).numpy(), kept[1].predictions)


@pytest.mark.slow
def test_switching_save_probes_on_recomputes_only_units_lacking_probes(tmp_path):
    path, out = _tiny_probes_file(tmp_path, save_probes=False), tmp_path / "runs"
    args = ["run", str(path), "--out", str(out), "--no-progress", "--n-jobs", "1"]
    assert main(args) == 0
    run_dir = out / "tiny"
    first = _results(run_dir)
    keys = {name: timing["key"] for name, timing in first["timings"].items()}
    store = ResultStore(run_dir)
    assert not any(store.probes_path(key).exists() for key in keys.values())
    with pytest.raises(ValueError, match="has no probes"):
        load_run_probes(run_dir)

    assert main(args) == 0  # save_probes still off: the units stay valid
    assert all(timing["loaded"] for timing in _results(run_dir)["timings"].values())

    assert main([*args, "--save-probes"]) == 0  # on: units without probes are recomputed
    second = _results(run_dir)
    assert {name: timing["key"] for name, timing in second["timings"].items()} == keys
    assert not any(timing["loaded"] for timing in second["timings"].values())
    # the same results, now with their probes
    assert [c["points"] for c in second["curves"]] == [c["points"] for c in first["curves"]]
    assert second["experiment"]["run"]["save_probes"] is True

    store.probes_path(keys["pca-8"]).unlink()  # a unit whose probes went missing
    assert main([*args, "--save-probes"]) == 0
    third = _results(run_dir)["timings"]
    assert third["pixels"]["loaded"] and not third["pca-8"]["loaded"]
    assert set(load_run_probes(run_dir)) == {"pixels", "pca-8"}


#: an experiment file whose line 5 gives ``n_test`` a second time
TWICE = '[task]\ndataset = "digits"\nn_test = 400\n\nn_test = 300\n' + PIXELS + "[method]\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            TWICE,
            "line 5, column 13: not valid TOML: a key is given twice, or a key and a table share "
            "a name (Cannot overwrite a value)",
        ),
        (
            '[run]\nname = "a"\n[run]\n',
            "line 3, column 5: not valid TOML: a table is declared twice ([name] once per file; "
            "[[name]] repeats) (Cannot declare ('run',) twice)",
        ),
        (
            "[method]\nkind = curve\n",
            "line 2, column 8: not valid TOML: a value TOML cannot read: text needs quotes (kind = "
            '"pca"), true and false are lower-case, an array needs its closing ] (Invalid value)',
        ),
        ("[method]\nsizes = [10,\n", "end of file: not valid TOML: a value TOML cannot read"),
    ],
    ids=["key-twice", "table-twice", "unquoted", "unclosed"],
)
def test_a_toml_error_names_the_file_its_line_and_what_it_means(tmp_path, capsys, text, problem):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    (found,) = caught.value.problems
    assert found.startswith(problem)
    assert str(caught.value) == f"{path}: {found}"  # one problem: one line, naming the file
    assert main(["run", str(path), "--check"]) == 2
    assert capsys.readouterr().err == f"probemeter: error: {path}: {found}\n"


def test_a_byte_order_mark_is_no_content_and_other_bytes_are_named_by_line(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + digits_experiment("epsilon = 0.5").encode())
    assert load_experiment(path).run.name == "exp"
    path.write_bytes(b'[run]\nname = "caf\xe9"\n')  # Latin-1, not UTF-8
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert caught.value.problems == ("line 2: not UTF-8 text (byte 0xe9); save the file as UTF-8",)


@pytest.mark.slow
def test_an_mdl_layer_sweep_prints_its_verdict_once(tmp_path, capsys):
    """`probemeter run` of an mdl layer sweep prints the method's table, the layer table and
    one verdict per sweep (a report of issue 30 said twice; not reproduced on 77ad10b)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3, 4)).astype(np.float32)
    np.savez(tmp_path / "layers.npz", X=X, y=(X[:, 1, 0] > 0).astype(np.int64))
    path = tmp_path / "sweep.toml"
    path.write_text(
        '[[representations]]\nname = "h"\nkind = "npz"\ntrain = "layers.npz"\n'
        'test = "layers.npz"\nlayer = "all"\n[method]\nkind = "mdl"\ncontrol = false\n'
        "probe = [8]\nseeds = 1\ntimesteps = [0.25, 0.5, 1.0]\nmax_epochs = 3\n"
    )
    out = ["--out", str(tmp_path / "runs"), "--n-jobs", "1", "--no-progress", "-q"]
    assert main(["run", str(path), *out]) == 0
    printed = capsys.readouterr().out
    assert printed.count("h: best layer") == 1, printed
