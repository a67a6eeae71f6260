import json

import numpy as np
import pandas as pd
import pytest

import probemeter as pm
from probemeter.cli.main import main


def _write(path, n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    np.savez(path, X=X, y=y)
    return path


@pytest.mark.slow
def test_demo_quick_writes_table_results_and_plot(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    for word in ("pixels", "pca-8", "random-proj-8", "VA", "MDL", "SDL, ε=0.4", "SC, ε=0.4"):
        assert word in printed
    payload = json.loads((out / "results.json").read_text())
    assert payload["schema"] == "probemeter.results/1"
    assert [c["name"] for c in payload["curves"]] == ["pixels", "pca-8", "random-proj-8"]
    assert payload["comparison"]["epsilon"] == 0.4
    assert (out / "curves.png").stat().st_size > 10_000
    # ε is reachable: on the full pool at least one representation has a tight SDL and εSC,
    # printed without the "> " of a lower bound
    results = payload["comparison"]["results"]
    full = max(result["n"] for result in results)
    for measure in ("SDL", "SC"):
        tight = [
            result["representation"]
            for result in results
            if (result["measure"], result["n"]) == (measure, full) and not result["lower_bound"]
        ]
        assert "pixels" in tight, measure
    (row,) = [line for line in printed.splitlines() if line.strip().startswith("SC, ε=0.4")][1:]
    assert not row.split()[2].startswith(">")  # pixels' εSC on the full pool


def test_curve_then_measures_recomputes_without_training(tmp_path, capsys):
    a, b = _write(tmp_path / "a.npz"), _write(tmp_path / "b.npz", d=2, seed=1)
    out = tmp_path / "run"
    args = ["curve", "--train", str(a), "--train", str(b), "--hidden", "--steps", "100"]
    args += ["--lr", "1e-2", "--seeds", "2", "--sizes", "10", "50", "216", "--no-progress"]
    assert main([*args, "--epsilon", "0.4", "--out", str(out)]) == 0
    curves = pm.load_curves(out / "results.json")
    assert [c.name for c in curves] == ["a", "b"]
    assert curves[0].metadata["probe"] == {"family": "mlp", "hidden": []}
    capsys.readouterr()
    assert (
        main(
            [
                "measures",
                str(out / "results.json"),
                "--epsilon",
                "0.5",
                "--unit",
                "bits",
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    expected = pm.compare(curves, 0.5, unit="bits")
    assert table.strip() == expected.to_markdown().strip()
    assert (
        main(
            [
                "measures",
                str(out / "results.json"),
                "--epsilon",
                "0.2",
                "--metric",
                "error",
                "--format",
                "latex",
            ]
        )
        == 0
    )
    assert "\\begin{tabular}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sizes", "5000"], "sizes"),
        (["--test", "missing.npz"], "missing.npz"),
        (["--name", "x", "--name", "y"], "--name"),
    ],
)
def test_curve_bad_input_is_one_clear_line(tmp_path, capsys, extra, message):
    a = _write(tmp_path / "a.npz")
    code = main(["curve", "--train", str(a), "--steps", "5", "--no-progress", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_measures_rejects_non_results_file(tmp_path, capsys):
    bogus = tmp_path / "x.json"
    bogus.write_text("{}")
    assert main(["measures", str(bogus), "--epsilon", "0.1"]) == 2
    assert "neither" in capsys.readouterr().err


def test_results_round_trip(tmp_path):
    curve = pm.LossDataCurve(
        "r",
        pd.DataFrame(
            {
                "n": [10, 100],
                "seed": [0, 0],
                "loss": [2.0, 0.5],
                "loss_truncated": [1.0, 0.5],
                "accuracy": [0.2, 0.8],
            }
        ),
        n_classes=10,
        pool_size=100,
        n_test=50,
    )
    pm.save_results(tmp_path / "r.json", [curve], pm.compare([curve], 0.6))
    (loaded,) = pm.load_curves(tmp_path / "r.json")
    assert loaded.points.equals(curve.points)
    curve.save(tmp_path / "single.json")
    assert pm.load_curves(tmp_path / "single.json")[0].points.equals(curve.points)


@pytest.mark.slow
def test_figures_are_written_in_the_formats_asked_for(tmp_path, capsys):
    data = _write(tmp_path / "a.npz")
    out = tmp_path / "svg"
    args = ["curve", "--train", str(data), "--hidden", "--steps", "20", "--seeds", "1"]
    args += ["--sizes", "10", "100", "--no-progress", "--epsilon", "0.5", "--out", str(out)]
    assert main([*args, "--figure-format", "svg", "pdf", "--dpi", "200"]) == 0
    assert sorted(p.name for p in out.glob("curves.*")) == ["curves.pdf", "curves.svg"]
    assert (out / "curves.svg").read_bytes().startswith(b"<?xml")
    assert "curves.svg, curves.pdf" in capsys.readouterr().err  # the files written: a log line
    capsys.readouterr()
    assert main([*args, "--dpi", "2"]) == 2  # before any training: one line
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("probemeter: error: --figure-format/--dpi: dpi")
    with pytest.raises(SystemExit) as stopped:  # argparse refuses the choice itself
        main([*args, "--figure-format", "bmp"])
    assert stopped.value.code == 2 and "invalid choice: 'bmp'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "steps", "epsilon"),
    [([], 300, 0.4), (["--steps", "50", "--epsilon", "0.2"], 50, 0.2)],
)
def test_demo_quick_settings_yield_to_the_flags_given(tmp_path, monkeypatch, extra, steps, epsilon):
    """``--quick`` sets its probe, steps, seeds, lr and ε = 0.4 only where no flag did."""
    import probemeter.curves.method as method_module

    seen = {}

    def stop(data, *, method, **options):
        seen["method"] = method
        raise ValueError("stop before training")

    monkeypatch.setattr(method_module, "curve_unit", stop)
    argv = ["demo", "--quick", "--out", str(tmp_path), "-q", *extra]
    assert main(argv) == 2
    assert seen["method"].steps == steps and seen["method"].seeds == 2
    assert seen["method"].probe == (64,) and seen["method"].lr == 1e-3
    assert seen["method"].epsilon == epsilon  # resolved before training
    # without --quick: the method's defaults and ε = 0.1
    assert main(["demo", "--out", str(tmp_path), "-q", "--steps", "1"]) == 2
    assert seen["method"].steps == 1 and seen["method"].probe == (512, 512)
    assert seen["method"].epsilon == 0.1 and seen["method"].seeds == 4
