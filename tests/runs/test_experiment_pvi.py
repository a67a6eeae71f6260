"""``[method] pvi = true`` of the curve method through ``probemeter run``: pointwise
V-information of every test example of every representation in ``pvi.csv`` (and Parquet on
request), drawn by label in ``pvi.png``; runs without it keep their unit keys."""

import json

import numpy as np
import pandas as pd
import pytest
from experiment_files import PIXELS, digits_experiment, pca, run_file

from probemeter.cli.main import main
from probemeter.curves.curve import LossDataCurve
from probemeter.pvi import PVIResult

METHOD = 'kind = "curve"\nepsilon = 0.5\nprobe = []\nsizes = [50, 200]\nseeds = 2\nsteps = 30\n'


def _specs(run_dir):
    specs = [json.loads(path.read_text())["spec"] for path in (run_dir / "units").glob("*.json")]
    assert specs
    return specs


@pytest.mark.slow
def test_run_writes_one_row_per_test_example_per_representation(tmp_path):
    pytest.importorskip("pyarrow")
    text = digits_experiment(METHOD + "lr = 0.01\npvi = true", "pvi", [PIXELS, pca(8)])
    run = run_file(tmp_path, text, "pvi", "--export", "parquet")
    table = pd.read_csv(run / "pvi.csv")
    results = json.loads((run / "results.json").read_text())
    curves = [LossDataCurve.from_dict(curve) for curve in results["curves"]]
    n_test = curves[0].n_test
    assert len(table) == 2 * n_test
    assert table.groupby("representation").size().to_dict() == {"pixels": n_test, "pca-8": n_test}
    assert list(table.columns) == [
        "representation", "example", "label", "pvi_seed0", "pvi_seed1", "pvi"
    ]  # fmt: skip
    assert sorted(table["label"].unique()) == list(range(10))
    for curve in curves:  # the table is each curve's stored PVI
        rows = table[table["representation"] == curve.name].reset_index(drop=True)
        np.testing.assert_array_equal(rows["pvi"].to_numpy(), curve.pvi.pvi)
        assert PVIResult.from_frame(rows).v_information == pytest.approx(curve.pvi.v_information)
    pd.testing.assert_frame_equal(pd.read_parquet(run / "pvi.parquet"), table, check_dtype=False)
    assert (run / "pvi.png").is_file()
    assert all(spec["pvi"] is True for spec in _specs(run))


@pytest.mark.slow
def test_without_pvi_units_keep_their_keys(tmp_path):
    run = run_file(tmp_path, digits_experiment(METHOD, "plain", [PIXELS]), "plain")
    assert not (run / "pvi.csv").exists()
    assert all("pvi" not in spec for spec in _specs(run))


def test_curve_command_writes_pvi_with_the_flag(tmp_path):
    """``probemeter curve --pvi`` writes the same files as a run with ``pvi = true``."""
    rng = np.random.default_rng(0)
    labels = np.arange(300) % 3
    np.savez(tmp_path / "a.npz", X=rng.normal(size=(300, 4)) + labels[:, None], y=labels)
    out = tmp_path / "out"
    args = ["curve", "--train", str(tmp_path / "a.npz"), "--out", str(out), "--pvi"]
    assert main([*args, "--sizes", "20", "100", "--steps", "10", "--no-progress", "-q"]) == 0
    table = pd.read_csv(out / "pvi.csv")
    assert len(table) == 60 and (out / "pvi.png").is_file()  # a test set of 20 %
