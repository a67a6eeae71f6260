"""Conditional probing (``[run] baseline``): measures of each representation beyond a baseline
(Hewitt et al. 2021), on synthetic data where the answer is known, and the bound arithmetic."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from probemeter._summary import Estimate
from probemeter.cli.main import main
from probemeter.runs.conditional import Beyond, ConditionalAnalysis, beyond
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data

N_POOL, N_TEST = 800, 400
METHOD = (
    '[method]\nkind = "mdl"\ncontrol = false\nprobe = []\nseeds = 2\n'
    "timesteps = [0.1, 0.2, 0.4, 0.8, 1.0]\nmax_epochs = 40\nlr = 0.01\n"
)


def _write(folder: Path, depends_on: str) -> Path:
    """B and X of 4 independent Gaussian features each, over the same rows; the label a linear
    function of B or of X."""
    rng = np.random.default_rng(0)
    n = N_POOL + N_TEST
    B, X = rng.normal(size=(n, 4)), rng.normal(size=(n, 4))
    y = ((B if depends_on == "B" else X)[:, :2].sum(axis=1) > 0).astype(np.int64)
    for name, features in (("b", B), ("x", X)):
        np.savez(folder / f"{name}.npz", X=features[:N_POOL], y=y[:N_POOL])
        np.savez(folder / f"{name}_test.npz", X=features[N_POOL:], y=y[N_POOL:])
    path = folder / "conditional.toml"
    entries = "".join(
        f'[[representations]]\nname = "{name}"\nkind = "npz"\ntrain = "{name}.npz"\n'
        f'test = "{name}_test.npz"\n'
        for name in ("b", "x")
    )
    path.write_text(f'[run]\nname = "cond"\nbaseline = "b"\n{entries}{METHOD}')
    return path


def _run(folder: Path, depends_on: str) -> ConditionalAnalysis:
    path = _write(folder, depends_on)
    out = folder / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    run = out / "cond"
    assert (run / "conditional.md").is_file() and (run / "conditional.png").is_file()
    return ConditionalAnalysis.load(run / "conditional.json")


def _summaries(folder: Path) -> dict:
    """The method's summaries of every representation of the run in ``folder``."""
    entries = json.loads((folder / "runs" / "cond" / "results.json").read_text())["entries"]
    return load_experiment(folder / "conditional.toml").method.summaries(entries)


def test_the_data_beside_the_baseline_are_both_features(tmp_path):
    path = _write(tmp_path, "B")
    data = prepare_data(load_experiment(path), progress=False)
    assert sorted(data) == ["b", "x", "x|b"]
    both = data["x|b"]
    np.testing.assert_array_equal(both.X_train, np.hstack([data["b"].X_train, data["x"].X_train]))
    np.testing.assert_array_equal(both.y_test, data["x"].y_test)


@pytest.mark.slow
def test_nothing_beyond_a_baseline_the_label_depends_on(tmp_path):
    """The label a function of B, X noise: beyond B, X saves nothing and gains no accuracy
    (within the seeds' spread and 2 % of the uniform code), though B alone compresses the
    labels to a third of it."""
    analysis = _run(tmp_path, "B")
    saved = analysis.rows["x"]["online_codelength"]  # kbits
    uniform = N_POOL / 1000  # kbits: one bit per binary label
    assert saved.status == "exact"
    assert abs(saved.value) < 0.02 * uniform, saved
    assert saved.low <= 0 <= saved.high or abs(saved.value) < 0.01 * uniform, saved
    assert abs(analysis.rows["x"]["accuracy"].value) < 0.02


@pytest.mark.slow
def test_all_of_it_beyond_a_baseline_of_noise(tmp_path):
    """The label a function of X, B noise: X saves beyond B what it saves beyond nothing, the
    uniform code less its own codelength (B alone compresses nothing), within 2 % of it."""
    analysis = _run(tmp_path, "X")
    saved = analysis.rows["x"]["online_codelength"]  # kbits
    uniform = N_POOL / 1000
    assert saved.status == "exact"
    assert saved.value > 0.5 * uniform  # a linear label of 2 features: most of the bits
    assert analysis.rows["x"]["accuracy"].value > 0.4  # from chance to nearly all
    # beside noise, X codes the labels as it does alone: within the seeds' spread and 2 %
    summaries = _summaries(tmp_path)
    alone = summaries["x"].estimates["online_codelength"]
    both = summaries["x|b"].estimates["online_codelength"]
    assert abs(both.value - alone.value) < 0.02 * uniform
    assert both.low <= alone.high + 0.01 * uniform and alone.low <= both.high + 0.01 * uniform


def test_differences_carry_bounds_honestly():
    lower, exact = Estimate(10.0, lower_bound=True), Estimate(7.0)
    assert beyond(lower, exact, "lower").status == "lower bound"
    assert beyond(exact, lower, "lower").status == "upper bound"
    unknown = beyond(lower, Estimate(3.0, lower_bound=True), "lower")
    assert unknown.status == "unknown" and math.isnan(unknown.value)
    assert unknown.format() == "unknown (both bounds)"
    ranged = beyond(Estimate(10.0, 9.0, 11.0), Estimate(7.0, 6.5, 7.5), "lower")
    assert (ranged.value, ranged.low, ranged.high) == (3.0, 1.5, 4.5)
    assert ranged.format() == "3 [1.5, 4.5]"
    gained = beyond(Estimate(0.6, 0.55, 0.65), Estimate(0.9, 0.85, 0.95), "higher")
    assert gained.value == pytest.approx(0.3) and gained.low == pytest.approx(0.2)


def test_each_end_of_a_seed_range_carries_its_seeds_bound_flags():
    """``80 [70, > 120]`` minus ``11 [10, 12]``: the high end subtracts 10 from a seed that is
    only a lower bound (≥ 120), so it is ≥ 110, never the value 110; a bound subtracted from an
    end makes it an upper bound, two make it unknown; the value's own status is unchanged."""
    given_b = Estimate(80.0, 70.0, 120.0, high_bound=True)
    saved = beyond(given_b, Estimate(11.0, 10.0, 12.0), "lower")
    assert (saved.value, saved.low, saved.high) == (69.0, 58.0, 110.0)
    assert (saved.status, saved.low_status, saved.high_status) == (
        "exact",
        "exact",
        "lower bound",
    )
    assert saved.format() == "69 [58, ≥ 110]"
    # the seed of both's lowest value a bound: B's highest minus it is at most 110
    lowered = beyond(
        Estimate(80.0, 70.0, 120.0), Estimate(11.0, 10.0, 12.0, low_bound=True), "lower"
    )
    assert lowered.format() == "69 [58, ≤ 110]"
    nothing = beyond(given_b, Estimate(11.0, 10.0, 12.0, low_bound=True), "lower")
    assert nothing.high_status == "unknown" and nothing.format() == "69 [58, unknown]"
    # accuracy (higher is better): both minus B; a seed bound on either side marks its ends
    gained = beyond(Estimate(0.6, 0.5, 0.7, low_bound=True), Estimate(0.9, 0.8, 0.95), "higher")
    assert (gained.low_status, gained.high_status) == ("exact", "upper bound")
    # files written before each end had its status read as their tables showed them
    old = {"value": 3.0, "low": 1.0, "high": 4.0, "status": "lower bound"}
    assert Beyond.from_dict(old).format() == "≥ 3 [≥ 1, ≥ 4]"
    assert Beyond.from_dict(saved.to_dict()) == saved


def test_a_baseline_is_checked_up_front(tmp_path):
    path = _write(tmp_path, "B")
    text = path.read_text()
    path.write_text(text.replace('baseline = "b"', 'baseline = "c"'))
    with pytest.raises(ExperimentError, match=r"run.baseline: 'c' is no representation"):
        load_experiment(path)
    power = text.split("[method]")[0] + '[method]\nkind = "power"\nbaseline = "b"\n'
    path.write_text(power)
    with pytest.raises(ExperimentError, match="compares pairs itself"):
        load_experiment(path)
