"""Experiment files with the mdl, pareto and power methods: validation, run folders, resume."""

import json
from dataclasses import replace

import pandas as pd
import pytest
import torch
from experiment_files import PIXELS, digits_experiment, run_file
from exported import assert_exported

from probemeter.cli.main import main
from probemeter.mdl.table import load_mdl_results, mdl_frames
from probemeter.pareto.frontiers import ParetoFrontiers
from probemeter.power.table import PowerReport
from probemeter.runs import runner
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data, run_experiment
from probemeter.runs.saved_probes import load_run_probes
from probemeter.training.shared_memory import backing_file


@pytest.mark.slow
def test_pareto_method_writes_hypervolumes_and_frontiers(tmp_path, capsys):
    method = 'kind = "pareto"\npenalties = 3\nsteps = 60\nlr = 0.05'
    text = digits_experiment(name="pareto", method=method)
    run_dir = run_file(tmp_path, text, "pareto", "--export", "csv", "--export", "parquet")
    frontiers = ParetoFrontiers.load(run_dir / "results.json")
    assert_exported(run_dir, frontiers.frames(), ("csv", "parquet"))
    table = frontiers.hypervolume_table().to_frame()
    assert set(table["representation"]) == {"pixels", "pca-8"}
    assert set(table["measure"]) == {"nuclear norm", "rank"}
    # λ = 0 plus two penalties, ranks 1 ... min(K=10, d) per representation
    points = frontiers.points
    assert (points["measure"] == "nuclear norm").sum() == 2 * 3
    assert (points["measure"] == "rank").sum() == 10 + 8
    for name in ("frontiers.png", "points.csv", "table.md", "table.tex", "report.html"):
        assert (run_dir / name).is_file(), name
    assert "pixels" in (run_dir / "table.md").read_text()
    assert "method kind pareto" in capsys.readouterr().out


@pytest.mark.slow
def test_power_method_pairs_each_representation_with_the_baseline(tmp_path):
    method = (
        'kind = "power"\nbaseline = "pixels"\nper_class = [8, 16]\nseeds = 2\nsteps = 60\nlr = 0.01'
    )
    run_dir = run_file(
        tmp_path, digits_experiment(name="power", method=method), "power", "--export=csv"
    )
    report = PowerReport.load(run_dir / "results.json")
    frame = report.to_frame()
    assert_exported(run_dir, {"power": frame}, ("csv",))
    runs = pd.read_csv(run_dir / "runs.csv")  # every probe run: 2 sizes x 2 seeds
    assert len(runs) == 4 and set(runs["a"]) == {"pixels"} and set(runs["b"]) == {"pca-8"}
    assert set(frame["comparison"]) == {"pixels vs pca-8"}
    assert len(frame) == 2  # one row per subsampled size
    assert frame["power"].between(0, 1).all()
    run = json.loads((run_dir / "run.json").read_text())
    assert run["method"] == "power" and list(run["timings"]) == ["pixels vs pca-8"]


PTB_MDL = """
[run]
{run}

[task]
dataset = "ptb"
n_sentences = 40

[[representations]]
name = "glove"
kind = "glove"

[[representations]]
name = "spacy"
kind = "spacy"

[method]
kind = "mdl"
probe = [16]
seeds = 1
timesteps = [0.1, 0.3, 1.0]
max_epochs = 3
"""


@pytest.mark.slow
def test_mdl_method_codes_task_and_control_and_resumes(tmp_path):
    pytest.importorskip("spacy")
    text = PTB_MDL.format(run="")
    run_dir = run_file(tmp_path, text, "mdl", "--export", "parquet")
    entries = load_mdl_results(run_dir / "results.json")
    assert [entry.name for entry in entries] == ["glove", "spacy"]
    frames = mdl_frames(entries)
    assert list(frames) == ["mdl", "online"]  # no variational code in this run
    assert set(frames["online"]["task"]) == {"task", "control"}
    assert_exported(run_dir, frames, ("parquet",))
    for entry in entries:
        assert entry.online is not None and entry.control_online is not None
        assert entry.online.codelength_bits > 0 and entry.control_online.codelength_bits > 0
    assert "glove" in (run_dir / "table.md").read_text()
    assert (run_dir / "mdl.png").is_file() and (run_dir / "report.html").is_file()
    # a second run loads both units from the store
    run_file(tmp_path, text, "mdl")
    timings = json.loads((run_dir / "run.json").read_text())["timings"]
    assert all(timing["loaded"] for timing in timings.values())


@pytest.mark.slow
def test_an_mdl_run_keeps_the_probes_of_both_codes(tmp_path):
    pytest.importorskip("spacy")
    run_dir = run_file(tmp_path, PTB_MDL.format(run="save_probes = true"), "mdl")
    entries = {entry.name: entry for entry in load_mdl_results(run_dir / "results.json")}
    probes = load_run_probes(run_dir)
    assert list(probes) == ["glove", "spacy"]
    datasets = prepare_data(load_experiment(tmp_path / "mdl.toml"))
    for name, kept in probes.items():
        frame = kept.to_frame()
        # per code, seed 0: the block probes of blocks 1 and 2, then the full-data probe
        assert frame[["code", "role"]].values.tolist() == [
            [code, role]
            for code in ("online", "control_online")
            for role in ("block", "block", "full")
        ]
        for code, task in (("online", datasets[name]), ("control_online", None)):
            (full,) = kept.select(code=code, role="full")
            assert full.accuracy == getattr(entries[name], code).seeds["accuracy"][0]
            if task is not None:  # the task's own test set: the stored losses, exactly
                recomputed = kept.select(code=code).evaluate(task.X_test, task.y_test)
                assert recomputed["loss"].tolist() == frame["loss"][:3].tolist()


def test_mdl_blocks_are_checked_against_each_pool_before_training(tmp_path, capsys):
    text = digits_experiment(name="blocks", method='kind = "mdl"\ncontrol = false')
    path = tmp_path / "blocks.toml"
    path.write_text(text)  # 0.1 % of the 1297-image pool is 1 image, fewer than 10 classes
    # one job: more would start worker processes (as the data load) for a run refused before
    argv = ["run", str(path), "--out", str(tmp_path / "runs"), "--no-progress", "--n-jobs", "1"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "method.timesteps:" in error and "representations[1]" in error
    assert not (tmp_path / "runs" / "blocks" / "units").exists()


def test_method_problems_are_listed_together(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        digits_experiment(
            name="bad", method='kind = "power"\nbaseline = "nope"\nseeds = 0\nfoo = 1'
        )
    )
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    problems = "\n".join(caught.value.problems)
    assert "method.baseline: 'nope' is none of the representations" in problems
    assert "method.seeds: must be an integer >= 1; got 0" in problems
    assert "method.foo: unknown key" in problems
    path.write_text(digits_experiment(name="bad", method='kind = "mdl"\ntimesteps = [0.5, 0.2]'))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    problems = "\n".join(caught.value.problems)
    assert "method.control: the control task maps word types" in problems
    assert "method.timesteps: must be increasing fractions in (0, 1] ending at 1" in problems
    nothing = 'kind = "pareto"\npenalties = 0\nranks = false'
    path.write_text(digits_experiment(name="bad", method=nothing))
    with pytest.raises(ExperimentError, match="leaves no probe to train"):
        load_experiment(path)


def test_save_probes_is_refused_for_methods_that_keep_none(tmp_path, capsys):
    message = "only 'curve' and 'mdl' runs keep their probes; method 'power' does not"
    path = tmp_path / "pairs.toml"
    text = digits_experiment(name="pairs", method='kind = "power"\nbaseline = "pixels"')
    path.write_text(text.replace('name = "pairs"', 'name = "pairs"\nsave_probes = true'))
    assert main(["run", str(path), "--check"]) == 2
    assert f"run.save_probes: {message}" in capsys.readouterr().err
    path.write_text(text)
    assert main(["run", str(path), "--check"]) == 0  # the file alone is fine
    capsys.readouterr()
    assert main(["run", str(path), "--check", "--save-probes"]) == 2
    err = capsys.readouterr().err
    assert f"--save-probes: {message}" in err and len(err.strip().splitlines()) == 1
    experiment = load_experiment(path)
    keeping = replace(experiment, run=replace(experiment.run, save_probes=True))
    with pytest.raises(ValueError, match=f"save_probes: {message}"):
        run_experiment(keeping, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()  # refused before anything was written


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize(
    ("method", "in_workers"),
    [
        ('kind = "curve"\nsizes = [50, 100]\nseeds = 1\nsteps = 5\nepsilon = 0.5', True),
        ('kind = "pareto"\npenalties = 2\nranks = false\nsteps = 20', False),
    ],
)
@pytest.mark.slow
def test_workers_and_shared_features_only_for_methods_that_train_in_workers(
    tmp_path, monkeypatch, method, in_workers, device
):
    """Worker processes start, and the features go to shared memory, only for a method that
    trains in workers, on the CPU (on a GPU one process trains)."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    started, shared = [], []
    warm, prepare = runner.warm_workers, runner.prepare_data

    def recording_warm(n_jobs):
        started.append(n_jobs)
        return warm(n_jobs)

    def recording_prepare(*args, **kwargs):
        datasets = prepare(*args, **kwargs)
        shared.extend(backing_file(data.X_train) is not None for data in datasets.values())
        return datasets

    monkeypatch.setattr(runner, "warm_workers", recording_warm)
    monkeypatch.setattr(runner, "prepare_data", recording_prepare)
    path = tmp_path / "exp.toml"
    run = f'device = "{device}"'
    path.write_text(digits_experiment(method, representations=[PIXELS], run=run))
    experiment = load_experiment(path)
    assert experiment.method.trains_in_workers is in_workers
    run_experiment(experiment, tmp_path / "runs", n_jobs=2, progress=False)
    in_workers_here = in_workers and device == "cpu"
    assert started == ([2] if in_workers_here else [])
    assert shared == [in_workers_here]
