"""``--export csv|parquet``: probe points, measures and method tables beside results.json
(:mod:`probemeter._exports`), and ``probemeter measures RUN_FOLDER`` without ``--epsilon``."""

import math

import numpy as np
import pandas as pd
import pytest
from exported import assert_exported

import probemeter as pm
from probemeter._exports import export_formats, export_frames, write_frame
from probemeter.cli.main import main
from probemeter.curves.results import result_frames

TINY = ["--hidden", "--steps", "30", "--seeds", "2", "--sizes", "10", "50", "200"]
TINY += ["--lr", "1e-2", "--n-jobs", "1", "--no-progress", "-q", "--labels", "encode"]


@pytest.fixture
def features(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for name, d in (("a", 5), ("b", 2)):
        X = rng.normal(size=(300, d))
        np.savez(tmp_path / f"{name}.npz", X=X, y=(X[:, 0] + 0.3 * rng.normal(size=300) > 0))
        paths.append(tmp_path / f"{name}.npz")
    return paths


def _curve(features, out, *extra):
    args = ["curve", *(f for path in features for f in ("--train", str(path))), *TINY]
    assert main([*args, "--out", str(out), *extra]) == 0


@pytest.mark.slow
def test_curve_exports_points_and_measures_in_both_formats(features, tmp_path, capsys):
    out = tmp_path / "run"
    _curve(features, out, "--epsilon", "0.4", "--unit", "bits", "--export", "csv,parquet")
    curves = pm.load_curves(out / "results.json")
    comparison = pm.compare(curves, 0.4, unit="bits")
    frames = result_frames(curves, comparison)
    assert list(frames["points"]["representation"].unique()) == ["a", "b"]
    assert len(frames["points"]) == 2 * 3 * 2  # curves x sizes x seeds
    pd.testing.assert_frame_equal(frames["measures"], comparison.to_frame())
    assert set(frames["measures"]["unit"]) == {"bits", "examples"}
    assert_exported(out, frames, ("csv", "parquet"))
    assert not list(out.glob(".*.tmp"))  # atomic: no temporary file left


@pytest.mark.slow
def test_curve_without_epsilon_exports_points_only(features, tmp_path):
    out = tmp_path / "run"
    _curve(features, out, "--export", "parquet", "--export", "csv")
    frames = result_frames(pm.load_curves(out / "results.json"))
    # two classes: the monitor metrics' table too (probemeter.monitor)
    assert list(frames) == ["points", "monitor"] and not (out / "measures.csv").exists()
    assert_exported(out, frames, ("csv", "parquet"))


@pytest.mark.slow
def test_measures_of_a_run_folder_take_epsilon_and_unit_from_its_results(
    features, tmp_path, capsys
):
    out = tmp_path / "run"
    _curve(features, out, "--epsilon", "0.4", "--unit", "bits")
    curves = pm.load_curves(out / "results.json")
    capsys.readouterr()
    assert main(["measures", str(out), "--format", "markdown", "--export", "csv"]) == 0
    captured = capsys.readouterr()
    expected = pm.compare(curves, 0.4, unit="bits")
    assert captured.out.strip() == expected.to_markdown().strip()
    assert "ε = 0.4 bits, from" in captured.err
    assert_exported(out, result_frames(curves, expected), ("csv",))
    # asked in nats: the stored 0.4 bits is 0.4 ln 2 nats, the same tolerance
    assert main(["measures", str(out), "--unit", "nats"]) == 0
    in_nats = pm.compare(curves, 0.4 * math.log(2), unit="nats")
    assert capsys.readouterr().out.strip() == str(in_nats).strip()
    bits, nats = expected.result("SC", 200, "a"), in_nats.result("SC", 200, "a")
    assert (bits.value, bits.lower_bound) == (nats.value, nats.lower_bound)
    # an explicit --epsilon still wins
    assert main(["measures", str(out / "results.json"), "--epsilon", "0.9", "-q"]) == 0
    assert "SDL, ε=0.9" in capsys.readouterr().out


@pytest.mark.slow
def test_measures_without_epsilon_need_a_stored_comparison(features, tmp_path, capsys):
    out = tmp_path / "run"
    _curve(features, out)  # no --epsilon: no comparison stored
    assert main(["measures", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--epsilon not given" in err and "holds no comparison" in err
    _curve(features, out, "--epsilon", "0.4")
    assert main(["measures", str(out), "--metric", "error"]) == 2
    assert "is for --metric loss, not error; give --epsilon" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "message"),
    [("xlsx", "got 'xlsx'"), ("csv,", "got ''"), ("CSV,Parquet", None)],
)
def test_export_formats_are_checked_before_training(features, tmp_path, capsys, flag, message):
    if message is None:  # case and spaces are forgiven
        assert export_formats([flag]) == ("csv", "parquet")
        return
    args = ["curve", "--train", str(features[0]), *TINY, "--out", str(tmp_path / "o")]
    assert main([*args, "--export", flag]) == 2
    err = capsys.readouterr().err
    assert err.startswith("probemeter: error: --export takes formats among csv, parquet")
    assert message in err and not (tmp_path / "o" / "results.json").exists()


def test_parquet_without_pyarrow_is_a_clear_error(features, tmp_path, monkeypatch, capsys):
    import probemeter._exports as exports

    real = exports.importlib.util.find_spec
    monkeypatch.setattr(
        exports.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "pyarrow" else real(name, *args),
    )
    args = ["curve", "--train", str(features[0]), *TINY, "--out", str(tmp_path / "o")]
    assert main([*args, "--export", "parquet"]) == 2
    err = capsys.readouterr().err
    assert "--export parquet needs the pyarrow package: pip install 'probemeter[parquet]'" in err
    assert export_formats(["csv"]) == ("csv",)  # CSV needs nothing


def test_write_frame_keeps_a_named_index_and_export_frames_lists_the_files(tmp_path):
    table = pd.DataFrame({"bits": [1.5, 2.25]}, index=pd.Index(["x", "y"], name="name"))
    written = export_frames({"t": table, "u": table.reset_index()}, tmp_path, ["parquet", "csv"])
    names = ["t.parquet", "t.csv", "u.parquet", "u.csv"]
    assert [path.name for path in written] == names
    assert pd.read_csv(tmp_path / "t.csv").to_dict("list") == {
        "name": ["x", "y"],
        "bits": [1.5, 2.25],
    }
    assert export_frames({"t": table}, tmp_path / "none", []) == ()
    with pytest.raises(ValueError, match="fmt must be one of"):
        write_frame(tmp_path / "t.xlsx", table, "xlsx")
