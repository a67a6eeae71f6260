"""The command line's answer to a tolerance ε that the uniform code already meets: `measures`
(and `curve`, after its probes) refuses ε at or above ln K (K·ln 2 for label sets) in the unit
asked for, with exit status 2 and one line naming ε and that limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_bad_inputs import _one_line_error

from probemeter.cli.main import main
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.results import save_results


def _curve(name: str, n_classes: int, multilabel: bool = False) -> LossDataCurve:
    """Sizes 10 and 100, one seed: mean loss 2.0 then 0.5 nats, accuracy 0.4 then 0.9."""
    columns = {
        "n": [10, 100],
        "seed": [0, 0],
        "loss": [2.0, 0.5],
        "loss_truncated": [1.0, 0.5],
        "accuracy": [0.4, 0.9],
    }
    if multilabel:
        columns |= {"micro_f1": [0.5, 0.9], "macro_f1": [0.5, 0.9]}
    points = pd.DataFrame(columns)
    return LossDataCurve(name, points, n_classes, 100, 50, multilabel=multilabel)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    save_results(path, [_curve("a", 10), _curve("b", 10)])
    return path


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--epsilon", "1e9"],
            "epsilon = 1e+09 nats is at or above ln K = 2.303 nats, the loss of the uniform "
            "code over K = 10 classes",
        ),
        (["--epsilon", "2.4"], "give epsilon below 2.303 nats"),
        (["--epsilon", "3.4", "--unit", "bits"], "at or above log2 K = 3.322 bits"),
        (
            ["--epsilon", "1.0", "--metric", "loss_truncated"],
            "at or above min(ln K, 1) = 1 nats",
        ),
    ],
)
def test_measures_refuses_an_epsilon_the_uniform_code_meets(results, flags, message, capsys):
    assert main(["measures", str(results), *flags]) == 2
    _one_line_error(capsys, message)


def test_measures_accepts_an_epsilon_below_ln_k(results, capsys):
    assert main(["measures", str(results), "--epsilon", "2.3"]) == 0
    assert "SDL, ε=2.3" in capsys.readouterr().out


def test_measures_of_label_sets_refuses_only_above_k_ln_2(tmp_path, capsys):
    """K = 20 label sets: the uniform code costs 20 bits (13.86 nats) an example, so 5 nats
    (above ln 20 = 3.0) is a valid tolerance and 14 nats is not."""
    path = tmp_path / "results.json"
    save_results(path, [_curve("sets", 20, multilabel=True)])
    assert main(["measures", str(path), "--epsilon", "5"]) == 0
    capsys.readouterr()
    assert main(["measures", str(path), "--epsilon", "14"]) == 2
    _one_line_error(capsys, "at or above K·ln 2 = 13.86 nats")
    assert main(["measures", str(path), "--epsilon", "20", "--unit", "bits"]) == 2
    _one_line_error(capsys, "at or above K = 20 bits")


def test_curve_refuses_an_epsilon_the_uniform_code_meets(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    np.savez(tmp_path / "ok.npz", X=X, y=(X[:, 0] > 0).astype(np.int64))  # K = 2
    argv = ["curve", "--train", str(tmp_path / "ok.npz"), "--out", str(tmp_path / "out")]
    argv += ["--epsilon", "0.7", "--steps", "5", "--seeds", "1", "--n-jobs", "1"]
    assert main([*argv, "--no-progress", "-q"]) == 2
    _one_line_error(capsys, "epsilon = 0.7 nats is at or above ln K = 0.6931 nats")
