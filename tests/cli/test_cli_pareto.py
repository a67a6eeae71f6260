"""``probemeter pareto sweep`` and ``probemeter pareto table``."""

import numpy as np
import pandas as pd
import pytest
from exported import assert_exported
from sklearn.datasets import load_digits

from probemeter.cli.main import main
from probemeter.pareto.frontiers import ParetoFrontiers

#: end-to-end: real models, worker processes or a Ray cluster (pytest -m 'not slow' skips)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("pareto")
    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    np.savez(root / "pixels.npz", X=X, y=y)
    noise = np.random.default_rng(0).normal(size=(300, 8))
    np.savez(root / "noise.npz", X=noise, y=y)
    out = root / "out"
    code = main(
        ["pareto", "sweep", "--train", str(root / "pixels.npz"), "--train", str(root / "noise.npz"),
         "--task", "digits", "--penalties", "3", "--mlps", "2", "--steps", "40",
         "--mlp-steps", "40", "--mlp-lr", "1e-2", "--out", str(out), "--export", "csv,parquet"]
    )  # fmt: skip
    assert code == 0
    return out


def test_sweep_exports_frontiers_and_hypervolumes(swept):
    frames = ParetoFrontiers.load(swept / "pareto.json").frames()
    assert frames["frontiers"]["on_frontier"].any() and len(frames["hypervolume"]) == 2 * 3
    assert_exported(swept, frames, ("csv", "parquet"))


def test_sweep_writes_points_analysis_and_plots(swept, capsys):
    points = pd.read_csv(swept / "points.csv")
    assert set(points["measure"]) == {"nuclear norm", "rank", "label-shuffled"}
    assert set(points["representation"]) == {"pixels", "noise"}
    assert (swept / "pareto.json").is_file() and (swept / "frontiers.png").is_file()
    # 3 λ + 8 ranks (min(K=10, d=8) for noise) or 10 ranks, + 2 MLPs per representation
    assert points.groupby("representation").size().to_dict() == {"noise": 13, "pixels": 15}


def test_table_reads_points_and_applies_caps(swept, capsys):
    capsys.readouterr()
    assert main(["pareto", "table", str(swept / "points.csv"), "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "| nuclear norm" in text and "dominant on digits (rank)" in text
    image = swept / "again.png"
    assert main(["pareto", "table", str(swept / "pareto.json"), "--cap", "rank=4",
                 "--plot", str(image)]) == 0  # fmt: skip
    assert image.is_file()


def test_table_rejects_bad_input(swept, capsys):
    assert main(["pareto", "table", str(swept / "missing.csv")]) == 2
    assert main(["pareto", "table", str(swept / "points.csv"), "--cap", "rank=x"]) == 2
    assert main(["pareto", "table", str(swept / "points.csv"), "--cap", "rank=0"]) == 2
    assert "error" in capsys.readouterr().err
