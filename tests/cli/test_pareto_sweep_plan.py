"""``probemeter pareto sweep`` says what it will train before it trains (the probes of each
family, their updates, the flags that set them) and shows its progress as it goes, as every
long command does; once it printed nothing at all until the end, with ``--penalties 0`` too,
which asks for no nuclear-norm probe but still trains the rank probes and the MLP family."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from probemeter.cli.main import main


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 digits, 8 of their pixels (columns 20..27: most vary), 10 classes."""
    X, y = load_digits(return_X_y=True)
    path = tmp_path_factory.mktemp("sweep") / "small.npz"
    np.savez(path, X=X[:120, 20:28].astype(np.float32), y=y[:120])
    return path


def _sweep(small: Path, out: Path, *flags: str) -> list[str]:
    return [
        "pareto", "sweep", "--train", str(small), "--steps", "20", "--mlps", "2",
        "--mlp-steps", "20", "--n-jobs", "1", "--out", str(out), *flags,
    ]  # fmt: skip


def test_the_sweep_says_what_it_trains_then_shows_its_progress(small, tmp_path, capsys):
    assert main(_sweep(small, tmp_path / "out", "--penalties", "0")) == 0
    err = capsys.readouterr().err
    plan = (
        "small: will train no nuclear-norm probe (--penalties 0), 8 rank probes (ranks 1..8), "
        "20 Adam updates each (--steps); 2 random MLPs (--mlps), each trained twice (real and "
        "shuffled labels), 20 Adam updates each (--mlp-steps)"
    )
    assert plan in err, err
    hint = "the random MLPs take most of the time: fewer with --mlps N, none with --measures"
    assert hint in err
    # then, in order: the linear probes, the MLPs' progress bar (4 trainings of 20 updates)
    # and the time they took
    linear = err.index("small: 8 linear probes in ")
    bar = err.index("training 4 probes")
    assert err.index(plan) < linear < bar < err.index("small: 2 random MLPs, each trained twice")
    assert "80.0/80.0" in err[bar:]


def test_no_progress_keeps_the_plan_and_drops_the_bar(small, tmp_path, capsys):
    flags = ("--penalties", "2", "--measures", "nuclear-norm", "label-shuffled", "--no-progress")
    assert main(_sweep(small, tmp_path / "out", *flags)) == 0
    err = capsys.readouterr().err
    assert "small: will train 2 nuclear-norm probes (--penalties 2), 20 Adam updates" in err
    assert "training 4 probes" not in err and "small: 2 linear probes in " in err


def test_nothing_to_train_is_refused_before_reading(small, tmp_path, capsys):
    """``--penalties 0`` with only nuclear-norm measured leaves nothing: refused at once,
    naming both flags (it failed after reading every file)."""
    flags = ("--penalties", "0", "--measures", "nuclear-norm")
    assert main(_sweep(small, tmp_path / "out", *flags)) == 2
    err = capsys.readouterr().err
    assert err.startswith("probemeter: error: --penalties 0 leaves no nuclear-norm probe and ")
    assert "--measures nuclear-norm asks for no other family: nothing to train" in err
    assert not (tmp_path / "out").exists()
