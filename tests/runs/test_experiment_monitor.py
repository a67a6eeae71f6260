"""Monitor metrics through ``probemeter run``: a two-class layer sweep chosen by AUROC on the
development split (``[method] choose_by``), the metrics in results.json, the tables, layers.md
and the report; the option refused for more classes and without a development split."""

import json

import numpy as np
import pytest

from probemeter.cli.main import main

EXPERIMENT = """
[[representations]]
name = "h"
kind = "npz"
train = "h.npz"
test = "h_test.npz"
layer = "all"
labels = "encode"

[method]
epsilon = 0.5
probe = []
seeds = 2
steps = 40
lr = 0.01
sizes = [10, 150]
{extra}
"""


def _write(folder, extra, classes=2):
    """Three layers of two features, layer l informative about the label in proportion to l
    (``classes`` labels, named "no"/"yes" for two)."""
    names = np.array(["no", "yes"] if classes == 2 else ["a", "b", "c"])
    for name, rows, seed in (("h.npz", 200, 0), ("h_test.npz", 100, 1)):
        rng = np.random.default_rng(seed)
        y = np.arange(rows) % classes
        X = rng.normal(size=(rows, 3, 2))
        X[:, :, 0] += y[:, None] * np.arange(3)[None, :]
        np.savez(folder / name, X=X, y=names[y])
    path = folder / "monitor.toml"
    path.write_text(EXPERIMENT.format(extra=extra))
    return path


@pytest.mark.slow
def test_a_sweep_chosen_by_auroc_on_dev_reports_the_monitor_metrics(tmp_path):
    path = _write(tmp_path, 'choose_by = "auroc"\npositive = "no"')
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--n-jobs", "1", "--no-progress", "-q"]) == 0
    run_dir = out / "monitor"
    curves = json.loads((run_dir / "results.json").read_text())["curves"]
    monitors = {curve["name"]: curve["monitor"] for curve in curves}
    for monitor in monitors.values():
        assert monitor["positive"] == {"index": 0, "label": "no"}
        assert monitor["thresholds"]["split"] == "dev"
        assert monitor["bootstrap"]["replicates"] == 1000
        for metric in monitor["metrics"].values():
            assert metric["low"] <= metric["value"] <= metric["high"]
            assert metric["value"] == pytest.approx(np.mean(metric["per_seed"]))
    layers = json.loads((run_dir / "layers.json").read_text())
    assert layers["headlines"][0]["name"] == "auroc"
    (verdict,) = layers["verdicts"]
    dev_auroc = {name: np.mean(m["dev"]["auroc"]) for name, m in monitors.items()}
    best = max(dev_auroc, key=dev_auroc.get)  # chosen on dev, not on test
    assert verdict["best"][1] == best and verdict["chosen_on"].startswith("dev")
    assert verdict["tested_on"] == "test"
    assert "AUROC" in (run_dir / "layers.md").read_text()
    table = (run_dir / "table.md").read_text()
    assert "Monitor metrics" in table and "positive class: class 0 (no)" in table
    assert 'id="monitor"' in (run_dir / "report.html").read_text()


def test_a_positive_class_the_data_lack_is_refused_before_any_unit(tmp_path, capsys):
    path = _write(tmp_path, 'positive = "maybe"')
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "-q"]) == 2
    assert capsys.readouterr().err == (
        "probemeter: error: method.positive: 'maybe' is no class of 'h-0' ('no', 'yes')\n"
    )
    assert not list(out.glob("*/units/*"))


def test_choose_by_a_monitor_metric_is_refused_for_three_classes(tmp_path, capsys):
    path = _write(tmp_path, 'choose_by = "recall@1%fpr"', classes=3)
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "-q"]) == 2
    # the data's check (before any unit), one problem per layer of the sweep
    error = capsys.readouterr().err.strip().splitlines()
    assert error[0].endswith("monitor.toml: 3 problems")
    refusal = (
        "  method.choose_by: 'recall@1%fpr' is a monitor metric of two-class tasks; the task "
        "has 3 classes (choose by SDL or SC) (representations[0], 'h-{}')"
    )
    assert error[1:] == [refusal.format(layer) for layer in range(3)]
    assert not list(out.glob("*/units/*"))  # refused before any unit


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (
            'choose_by = "recall@5%fpr"\ndev_fraction = 0',
            "method.choose_by: recall at a false-positive rate takes its threshold from the "
            "development split: dev_fraction must be > 0",
        ),
        ('choose_by = "f1"', "method.choose_by: must be one of"),
    ],
)
def test_choose_by_problems_are_one_line_at_check(tmp_path, capsys, extra, problem):
    path = _write(tmp_path, extra)
    assert main(["run", str(path), "--check"]) == 2
    error = capsys.readouterr().err
    assert problem in error and error.count("\n") == 1


def test_the_digits_ten_classes_refuse_choose_by_auroc_before_any_unit(tmp_path, capsys):
    from experiment_files import digits_experiment

    method = 'epsilon = 0.5\nchoose_by = "auroc"'
    path = tmp_path / "digits.toml"
    path.write_text(digits_experiment(method, name="digits"))
    assert main(["run", str(path), "--out", str(tmp_path / "runs"), "--no-progress"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error[0].endswith("digits.toml: 2 problems")
    assert all("the task has 10 classes (choose by SDL or SC)" in line for line in error[1:])
