"""The command line's bad-input matrix: each case ends in one line on stderr, with the exit
status of its kind (2 bad input, 3 file system, 4 memory, 130 interrupted), and — where the
problem can be known before training — without training a single probe."""

from __future__ import annotations

import errno
import zipfile
from pathlib import Path

import numpy as np
import pytest

import probemeter.training.engine as engine
from probemeter.cli.main import main

#: tiny training; -q: stderr holds the error alone, without the progress lines (logging)
TINY = ["--steps", "5", "--seeds", "1", "--n-jobs", "1", "--no-progress", "-q"]


def write_files(folder: Path) -> Path:
    """Good and broken feature, points and results files, written to ``folder``."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    np.savez(folder / "ok.npz", X=X, y=y)
    np.savez(folder / "noy.npz", X=X)
    whole = (folder / "ok.npz").read_bytes()
    (folder / "truncated.npz").write_bytes(whole[: len(whole) // 2])
    np.savez(folder / "objects.npz", X=np.array([np.zeros(3), np.zeros(2)], dtype=object), y=y)
    np.savez(folder / "flat.npz", X=X[:, 0], y=y)
    np.savez(folder / "short.npz", X=X, y=y[:-1])
    (folder / "empty.csv").write_text("")
    (folder / "other.json").write_text('{"a": 1}')
    (folder / "broken.json").write_text("{broken")
    (folder / "folder").mkdir()
    return folder


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A folder of good and broken feature, points and results files."""
    return write_files(tmp_path)


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the engine starts planning probes."""

    def trained(*args, **kwargs):
        raise AssertionError("probes were trained before the input was refused")

    monkeypatch.setattr(engine, "_plan_chunks", trained)


def _one_line_error(capsys: pytest.CaptureFixture[str], pattern: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("probemeter: error: "), err
    assert "\n" not in err and "Traceback" not in err, err
    assert pattern in err, err
    return err


CASES = {
    # name: (argv with {d} for the files folder, exit status, text the message must hold)
    "truncated npz": (["curve", "--train", "{d}/truncated.npz"], 2, "not a readable .npz"),
    "object arrays": (["curve", "--train", "{d}/objects.npz"], 2, "objects.npz"),
    "npz without y": (["curve", "--train", "{d}/noy.npz"], 2, "lacks array(s) ['y']"),
    "X not 2-D": (["curve", "--train", "{d}/flat.npz"], 2, "X must be 2-D"),
    "rows differ": (["curve", "--train", "{d}/short.npz"], 2, "60 rows but y has 59"),
    "missing file": (["curve", "--train", "{d}/missing.npz"], 2, "does not exist"),
    "folder as file": (["curve", "--train", "{d}/folder"], 2, "is a folder"),
    "--at beyond pool": (
        ["curve", "--train", "{d}/ok.npz", "--epsilon", "0.1", "--at", "99999"],
        2,
        "--at asks for 99999",
    ),
    "--epsilon negative": (["curve", "--train", "{d}/ok.npz", "--epsilon", "-1"], 2, "--epsilon"),
    "--out is a file": (["curve", "--train", "{d}/ok.npz", "--out", "{d}/ok.npz"], 2, "--out"),
    "--out under a file": (
        ["curve", "--train", "{d}/ok.npz", "--out", "{d}/ok.npz/sub"],
        3,
        "a part of the path is a file",
    ),
    "--groups missing": (["mdl", "{d}/ok.npz", "--groups", "{d}/none.npy"], 2, "--groups"),
    "--groups not in npz": (["mdl", "{d}/ok.npz", "--groups", "words"], 2, "no array 'words'"),
    "mdl: second file broken": (["mdl", "{d}/ok.npz", "{d}/truncated.npz"], 2, "truncated.npz"),
    "mdl: --out under a file": (
        ["mdl", "{d}/ok.npz", "--out", "{d}/ok.npz/sub"],
        3,
        "a part of the path is a file",
    ),
    "pareto sweep: --out is a file": (
        ["pareto", "sweep", "--train", "{d}/ok.npz", "--out", "{d}/ok.npz"],
        2,
        "--out",
    ),
    "pareto sweep: second file broken": (
        ["pareto", "sweep", "--train", "{d}/ok.npz", "--train", "{d}/noy.npz"],
        2,
        "noy.npz",
    ),
    "measures: folder without results": (
        ["measures", "{d}/folder", "--epsilon", "0.1"],
        2,
        "results.json' does not exist",
    ),
    "measures: not JSON": (["measures", "{d}/broken.json", "--epsilon", "1"], 2, "not valid JSON"),
    "measures: other JSON": (["measures", "{d}/other.json", "--epsilon", "0.1"], 2, "other.json"),
    "pareto table: empty CSV": (["pareto", "table", "{d}/empty.csv"], 2, "empty.csv"),
    "pareto table: other JSON": (["pareto", "table", "{d}/other.json"], 2, "other.json"),
    "pareto table: broken JSON": (["pareto", "table", "{d}/broken.json"], 2, "broken.json"),
    "report: empty folder": (["report", "{d}/folder"], 2, "does not exist"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_before_training(case, files, no_training, capsys):
    argv, status, pattern = CASES[case]
    argv = [part.format(d=files) for part in argv]
    if argv[0] == "curve":
        argv += TINY if "--out" in argv else [*TINY, "--out", str(files / "out")]
    if argv[0] == "mdl":
        argv += ["--n-jobs", "1", "--no-progress"]
    if (argv[0] == "mdl" or argv[:2] == ["pareto", "sweep"]) and "--out" not in argv:
        argv += ["--out", str(files / "out")]
    assert main(argv) == status
    _one_line_error(capsys, pattern)


def test_every_command_has_working_help(capsys):
    commands = [["demo"], ["curve"], ["measures"], ["report"], ["run"], ["power"]]
    commands += [["recommend"], ["mdl"], ["pareto", "sweep"], ["pareto", "table"], []]
    for command in commands:
        with pytest.raises(SystemExit) as exit_:
            main([*command, "--help"])
        assert exit_.value.code == 0, command
    assert "exit status" in capsys.readouterr().out


def test_unwritable_out_is_refused_before_training(files, no_training, monkeypatch, capsys):
    import probemeter._io as io

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(io.tempfile, "mkstemp", refuse)
    argv = ["curve", "--train", str(files / "ok.npz"), "--out", str(files / "out"), *TINY]
    assert main(argv) == 3
    _one_line_error(capsys, f"'{files / 'out'}': Permission denied; check its permissions")


def test_disk_full_after_training_is_one_line(files, monkeypatch, capsys):
    import probemeter.curves.results as results

    def full(path, payload):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(results, "write_json_atomic", full)
    argv = ["curve", "--train", str(files / "ok.npz"), "--out", str(files / "out"), *TINY]
    assert main(argv) == 3
    _one_line_error(capsys, "No space left on device; the disk is full")


def test_results_are_saved_before_a_late_failure(files, monkeypatch, capsys):
    """A comparison that fails after training must not lose the trained curves."""
    import probemeter.curves.comparison as comparison

    def broken(*args, **kwargs):
        raise ValueError("comparison failed")

    monkeypatch.setattr(comparison, "compare", broken)
    out = files / "out"
    argv = ["curve", "--train", str(files / "ok.npz"), "--out", str(out), "--epsilon", "0.1"]
    assert main([*argv, *TINY]) == 2
    _one_line_error(capsys, "comparison failed")
    monkeypatch.undo()
    assert main(["measures", str(out), "--epsilon", "0.5"]) == 0  # a run folder is accepted
    assert "SDL" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("error", "status", "pattern"),
    [
        (MemoryError(), 4, "out of memory"),
        (KeyboardInterrupt(), 130, "interrupted"),
        (zipfile.BadZipFile("File is not a zip file"), 2, "not a readable archive"),
    ],
)
def test_error_boundary_statuses(error, status, pattern, files, monkeypatch, capsys):
    import probemeter.cli.curve as curve

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(curve, "_train_curves", fail)
    argv = ["curve", "--train", str(files / "ok.npz"), "--out", str(files / "out"), *TINY]
    assert main(argv) == status
    _one_line_error(capsys, pattern)


def test_internal_errors_keep_their_traceback(files, monkeypatch):
    import probemeter.cli.curve as curve

    def bug(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(curve, "_train_curves", bug)
    with pytest.raises(KeyError):
        main(["curve", "--train", str(files / "ok.npz"), "--out", str(files / "out"), *TINY])


def _experiment(folder: Path, run: str, train: str) -> Path:
    path = folder / "experiment.toml"
    path.write_text(
        f"{run}\n[[representations]]\nname = 'a'\nkind = 'npz'\ntrain = '{train}'\n"
        "test = 'ok.npz'\n[method]\nkind = 'curve'\nepsilon = 0.5\nsizes = [10, 1000]\n"
    )
    return path


def test_check_reads_feature_file_headers(files, capsys):
    path = _experiment(files, "", "noy.npz")
    assert main(["run", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "representations[0].train" in err and "lacks array(s) ['y']" in err
    path = _experiment(files, "", "ok.npz")
    assert main(["run", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "method.sizes" in err and "pool of 'a': 60 rows" in err


def test_check_refuses_cuda_without_cuda(files, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    path = _experiment(files, "[run]\ndevice = 'cuda'", "ok.npz")
    assert main(["run", str(path), "--check"]) == 2
    assert "run.device: 'cuda' but CUDA is not available" in capsys.readouterr().err


@pytest.mark.slow
def test_warnings_are_one_line(files, capsys):
    argv = ["curve", "--train", str(files / "ok.npz"), "--out", str(files / "out"), *TINY]
    assert main([*argv, "--lr", "1e6"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("probemeter: warning: ") and "diverged" in err and "\n" not in err


@pytest.mark.slow
def test_string_labels_need_and_get_labels_encode(files, capsys):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3)).astype(np.float32)
    tags = np.where(X[:, 0] > 0, "NOUN", "VERB")
    np.savez(files / "tags.npz", X=X, y=tags)
    np.savez(files / "one_based.npz", X=X, y=(X[:, 0] > 0) + 1)
    argv = ["curve", "--train", str(files / "tags.npz"), "--out", str(files / "out"), *TINY]
    assert main(argv) == 2
    _one_line_error(capsys, "pass labels='encode'")
    assert main([*argv, "--labels", "encode"]) == 0
    argv[2] = str(files / "one_based.npz")
    assert main(argv) == 2
    _one_line_error(capsys, "1 of them never occur (0)")
    assert main([*argv, "--labels", "encode"]) == 0


@pytest.mark.slow
def test_experiment_npz_labels_key(files, capsys):
    X = np.random.default_rng(2).normal(size=(40, 3)).astype(np.float32)
    np.savez(files / "t.npz", X=X, y=np.where(X[:, 0] > 0, "a", "b"))
    path = files / "labels.toml"
    path.write_text(
        "[[representations]]\nname = 't'\nkind = 'npz'\ntrain = 't.npz'\ntest = 't.npz'\n"
        "labels = 'encode'\n[method]\nepsilon = 0.5\nsizes = [10, 30]\nsteps = 5\nseeds = 1\n"
    )
    out = ["--out", str(files / "runs"), "--n-jobs", "1", "--no-progress"]
    assert main(["run", str(path), *out]) == 0
    path.write_text(path.read_text().replace("'encode'", "'strings'"))
    assert main(["run", str(path), "--check"]) == 2
    assert "representations[0].labels: must be one of" in capsys.readouterr().err
