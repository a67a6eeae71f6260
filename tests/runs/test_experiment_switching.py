"""The switching method: experiment files, its run folder and table, and ``probemeter
switching``."""

import json

import numpy as np
import pandas as pd
import pytest
from experiment_files import digits_experiment
from exported import assert_exported

from probemeter.cli.main import main
from probemeter.mdl.switching_code import SwitchingCode
from probemeter.mdl.switching_method import SCHEMA, SwitchingMethod, family_widths
from probemeter.runs.config import ExperimentError, load_experiment


def _digits(options: str) -> str:
    return digits_experiment(f'kind = "switching"\n{options}', name="switching")


FAST = "seeds = 1\ntimesteps = [0.05, 0.2, 1.0]\nmax_epochs = 2\nbatch_size = 256\nmax_switches = 1"


@pytest.mark.slow
def test_a_switching_run_writes_codes_table_figure_and_exports(tmp_path):
    path = tmp_path / "switching.toml"
    path.write_text(_digits(f'families = ["linear", "8"]\n{FAST}'))
    out = tmp_path / "runs"
    args = ["run", str(path), "--out", str(out), "--no-progress", "--n-jobs", "1"]
    assert main([*args, "--export", "csv"]) == 0
    run_dir = out / "switching"
    payload = json.loads((run_dir / "results.json").read_text())
    assert payload["schema"] == SCHEMA
    codes = [SwitchingCode.from_dict(code) for code in payload["codes"]]
    assert [code.name for code in codes] == ["pixels", "pca-8"]
    for code in codes:
        assert code.families == ("linear", "mlp-8")
        assert (code.hindsight["slack_bits"] >= 0).all()
        assert code.hindsight["switches"].tolist() == [0, 1]
        assert code.seeds["overhead_bits"].iloc[0] <= code.seeds["bound_bits"].iloc[0]
    table = (run_dir / "table.md").read_text()
    assert "linear kbits" in table and "mlp-8 kbits" in table and "pca-8" in table
    for name in ("switching.png", "table.tex", "report.html", "run.json"):
        assert (run_dir / name).is_file(), name
    frames = {
        f"switching_{name}": pd.concat(
            [getattr(code, name).assign(representation=code.name) for code in codes],
            ignore_index=True,
        )
        for name in ("blocks", "posterior", "seeds", "hindsight")
    }
    assert_exported(run_dir, frames, ("csv",))
    # the layer table's view: ranked by the switching code; accuracy of the best family
    method = load_experiment(path).method
    summaries = method.summaries(payload["codes"])
    assert next(h.name for h in method.headlines()) == "switching_codelength"
    for code in codes:
        summary = summaries[code.name]
        estimate = summary.estimates["switching_codelength"]
        assert estimate.value == pytest.approx(code.codelength_bits / 1024)
        best = min(code.codes, key=lambda c: c.codelength_bits)
        assert summary.accuracy.value == pytest.approx(best.mean("accuracy"))
        assert summary.probe == tuple(best.metadata["probe"]["hidden"])
    # resumed: every unit is loaded, nothing trained again, the same codes
    assert main(args) == 0
    again = json.loads((run_dir / "results.json").read_text())["codes"]
    assert again == payload["codes"]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ('families = ["linear"]', "method.families: must be a list of two or more"),
        ('families = ["linear", "wide"]', "method.families: must hold probe families"),
        ('families = ["64", "64"]', "method.families: must hold distinct"),
        ("rate = 1.5", "method.rate: must be"),
        ('granularity = "word"', "method.granularity"),
    ],
)
def test_bad_options_are_named(tmp_path, options, problem):
    path = tmp_path / "bad.toml"
    path.write_text(_digits(options))
    with pytest.raises(ExperimentError, match=problem):
        load_experiment(path)


def test_rates_and_families_as_written():
    assert family_widths("linear") == () and family_widths("64x32") == (64, 32)
    with pytest.raises(ValueError, match="'linear' or hidden widths"):
        family_widths("0x4")
    assert SwitchingMethod(rate=0.1).rate == 0.1
    method, problems = SwitchingMethod.from_values({"rate": "0.05", "families": ["linear", "4"]})
    assert problems == [] and method.rate == 0.05 and method.families == ("linear", "4")
    for rate in (10**400, True, "nan", "1e999", [0.1], -0.5):  # each one problem, no trace
        _, problems = SwitchingMethod.from_values({"rate": rate})
        assert len(problems) == 1 and problems[0].startswith("method.rate: must be")


@pytest.mark.slow
def test_the_switching_command(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(np.int64)
    np.savez(tmp_path / "a.npz", X=X, y=y)
    out = tmp_path / "out"
    args = ["switching", str(tmp_path / "a.npz"), "--families", "linear", "8x8", "--seeds", "1"]
    args += ["--timesteps", "0.05", "0.3", "1", "--max-epochs", "3", "--rate", "0.01"]
    assert main([*args, "--n-jobs", "1", "--no-progress", "--out", str(out)]) == 0
    payload = json.loads((out / "results.json").read_text())
    (code,) = [SwitchingCode.from_dict(result) for result in payload["codes"]]
    assert code.name == "a" and code.rate == 0.01 and code.families == ("linear", "mlp-8x8")
    assert "switching kbits" in capsys.readouterr().out
    assert (out / "switching.png").is_file() and (out / "table.md").is_file()
