"""Tests of loss-data curves on a real dataset (sklearn's bundled digits)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_digits

from probemeter import Execution
from probemeter._io import environment
from probemeter.curves.curve import LossDataCurve, default_sizes, loss_data_curve
from probemeter.data import ProbeData, nested_subset
from probemeter.probes import MLP, Linear, load_probes
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

SIZES = [10, 40, 160, 640]
STEPS = 150
CONFIG = TrainingConfig(steps=STEPS, batch_size=64, lr=1e-2)
#: no development split: the curve's own mechanics (tests/curves/test_curve_development_split.py
#: has the split's)
SETTINGS = {"config": CONFIG, "execution": Execution(device="cpu"), "dev_fraction": 0.0}


@pytest.fixture(scope="module")
def digits() -> ProbeData:
    bunch = load_digits()
    return ProbeData.from_arrays(bunch.data, bunch.target, test_size=0.3, name="digits-pixels")


@pytest.fixture(scope="module")
def curve(digits) -> LossDataCurve:
    return loss_data_curve(
        digits, Linear(), sizes=[*SIZES, digits.pool_size], seeds=2, random_state=3, **SETTINGS
    )


def _toy_curve(points: dict, name: str = "toy", pool_size: int = 100) -> LossDataCurve:
    frame = pd.DataFrame(points)
    for metric in ("loss_truncated", "accuracy"):
        if metric not in frame:
            frame[metric] = 0.5
    return LossDataCurve(name, frame, n_classes=3, pool_size=pool_size, n_test=20)


# ---------------------------------------------------------------------------------------------
# the curve itself
# ---------------------------------------------------------------------------------------------


def test_curve_has_one_point_per_size_and_seed(curve, digits):
    assert digits.pool_size == 1258
    points = curve.points
    assert len(points) == 5 * 2
    assert curve.sizes.tolist() == [*SIZES, 1258]
    assert curve.n_seeds == 2
    assert sorted(set(points["seed"].tolist())) == [0, 1]
    assert curve.pool_size == 1258
    assert curve.n_test == digits.y_test.size == 539
    assert curve.n_classes == 10
    assert curve.name == "digits-pixels"
    assert np.all(np.isfinite(points[["loss", "loss_truncated", "accuracy"]].to_numpy()))


def test_learning_curve_goes_down(curve):
    loss = curve.mean("loss")
    accuracy = curve.mean("accuracy")
    assert loss.iloc[-1] < loss.iloc[0] - 0.5
    assert accuracy.iloc[-1] > accuracy.iloc[0] + 0.2
    # with the full pool a linear probe on digits pixels is a good classifier
    assert accuracy.iloc[-1] > 0.9
    assert loss.iloc[-1] < 0.4
    # the curve decreases overall from each size to four times that size
    assert loss.loc[640] < loss.loc[160] < loss.loc[40] < loss.loc[10]


def test_small_n_loss_is_reported_not_hidden(curve):
    """Probes on 10 points are poor; the curve keeps their raw loss, beside the truncated one."""
    smallest = curve.points[curve.points["n"] == 10]
    assert np.all(smallest["loss"] > 1.0)  # not clipped to something optimistic
    assert np.all(smallest["loss_truncated"] < smallest["loss"])
    assert np.all(smallest["loss_truncated"] <= 1.0)


@pytest.mark.numerics
def test_curve_points_are_the_engine_results_for_nested_subsets(curve, digits):
    """Point (n, seed) is the probe trained on the first n points of seed's permutation with
    the stream keyed by (random_state, seed, n)."""
    grid = [(160, 1), (10, 0), (1258, 0)]
    result = fit_evaluate(
        digits.X_train, digits.y_train, digits.X_test, digits.y_test, digits.n_classes,
        [nested_subset(digits.pool_size, n, 3, seed) for n, seed in grid],
        [(3, seed, n) for n, seed in grid],
        Linear(), CONFIG, execution=Execution(device="cpu"),
    )  # fmt: skip
    for i, (n, seed) in enumerate(grid):
        row = curve.points[(curve.points["n"] == n) & (curve.points["seed"] == seed)]
        assert len(row) == 1
        np.testing.assert_allclose(row["loss"].iloc[0], result.loss[i], rtol=1e-6)
        np.testing.assert_allclose(row["accuracy"].iloc[0], result.accuracy[i], rtol=1e-6)


@pytest.mark.numerics
def test_points_do_not_depend_on_the_other_sizes_or_seeds(curve, digits):
    partial = loss_data_curve(
        digits, Linear(), sizes=[40, 640], seeds=[1], random_state=3, **SETTINGS
    )
    full = curve.points.set_index(["n", "seed"])
    for row in partial.points.itertuples():
        np.testing.assert_allclose(row.loss, full.loc[(row.n, row.seed), "loss"], rtol=1e-6)


def test_curve_is_deterministic_and_depends_on_random_state(digits):
    kwargs = {"sizes": [20, 80], "seeds": [0, 4], **SETTINGS, "config": replace(CONFIG, steps=20)}
    first = loss_data_curve(digits, MLP((16,)), random_state=5, **kwargs)
    second = loss_data_curve(digits, MLP((16,)), random_state=5, **kwargs)
    other = loss_data_curve(digits, MLP((16,)), random_state=6, **kwargs)
    pd.testing.assert_frame_equal(first.points, second.points, check_exact=True)
    assert not np.allclose(first.points["loss"], other.points["loss"])
    assert sorted(set(first.points["seed"])) == [0, 4]


def test_default_sizes_are_used_when_none_given(digits):
    result = loss_data_curve(
        digits, Linear(), seeds=1, **{**SETTINGS, "config": replace(CONFIG, steps=3)}
    )
    assert result.sizes.tolist() == default_sizes(digits.pool_size).tolist()
    assert result.sizes[-1] == digits.pool_size


def test_mlp_probe_curve_runs(digits):
    result = loss_data_curve(digits, MLP((32,)), sizes=[50, 500], seeds=1, **SETTINGS)
    loss = result.mean("loss")
    assert loss.loc[500] < loss.loc[50]
    assert result.metadata["probe"] == {"family": "mlp", "hidden": [32]}


# ---------------------------------------------------------------------------------------------
# bad arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seeds", [0, -2, [], [1, 1], [-1, 2]])
def test_bad_seeds_raise(digits, seeds):
    with pytest.raises(ValueError, match=r"\bseeds\b"):
        loss_data_curve(digits, Linear(), sizes=[10], seeds=seeds, **SETTINGS)


@pytest.mark.parametrize("sizes", [[10, 1259], [0, 10], [10.5], []])
def test_bad_sizes_raise_naming_sizes(digits, sizes):
    with pytest.raises(ValueError, match=r"\bsizes\b"):
        loss_data_curve(digits, Linear(), sizes=sizes, seeds=1, **SETTINGS)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"steps": 0}, "steps"), ({"lr": -1.0}, "lr"), ({"precision": "f16"}, "precision")],
)
def test_bad_training_settings_raise(digits, kwargs, argument):
    with pytest.raises(ValueError, match=rf"\b{argument}\b"):
        config = TrainingConfig(**kwargs)
        loss_data_curve(digits, Linear(), sizes=[10], seeds=1, **{**SETTINGS, "config": config})


# ---------------------------------------------------------------------------------------------
# default_sizes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pool", [10, 11, 37, 100, 1000, 1258, 1797, 10**4, 54321, 10**5, 10**6])
def test_default_sizes_properties(pool):
    sizes = default_sizes(pool)
    assert sizes.dtype.kind == "i"
    assert np.all(np.diff(sizes) > 0)  # distinct and ascending
    assert sizes[0] == 10
    assert sizes[-1] == pool
    assert np.all(sizes <= pool)
    if pool >= 1000:
        assert 10 <= sizes.size <= 20
    # log-uniform: consecutive ratios are all about the same
    if pool >= 1000:
        ratios = sizes[1:] / sizes[:-1]
        assert ratios.max() / ratios.min() < 1.5


def test_default_sizes_more_points_for_bigger_pools():
    counts = [default_sizes(pool).size for pool in (1000, 10**4, 10**5, 10**6)]
    assert counts == sorted(counts)
    assert counts[-1] > counts[0]


def test_default_sizes_small_pools_and_explicit_counts():
    assert default_sizes(5).tolist() == [5]
    assert default_sizes(1).tolist() == [1]
    sizes = default_sizes(1000, n_points=4, smallest=1)
    assert sizes.tolist() == [1, 10, 100, 1000]
    with pytest.raises(ValueError, match=r"\bpool_size\b"):
        default_sizes(0)


# ---------------------------------------------------------------------------------------------
# serialisation
# ---------------------------------------------------------------------------------------------


def _assert_same_curve(a: LossDataCurve, b: LossDataCurve) -> None:
    pd.testing.assert_frame_equal(a.points, b.points, check_exact=True)
    assert (a.name, a.n_classes, a.pool_size, a.n_test) == (
        b.name,
        b.n_classes,
        b.pool_size,
        b.n_test,
    )
    assert a.metadata == b.metadata


def test_dict_round_trip_is_exact(curve):
    payload = curve.to_dict()
    assert payload["unit"] == "nats"
    restored = LossDataCurve.from_dict(json.loads(json.dumps(payload)))
    _assert_same_curve(restored, curve)


def test_save_load_round_trip_is_exact(curve, tmp_path):
    path = tmp_path / "nested" / "curve.json"
    curve.save(path)
    restored = LossDataCurve.load(path)
    _assert_same_curve(restored, curve)
    assert [p.name for p in path.parent.iterdir()] == ["curve.json"]  # no temporary files left
    # floats survive bit for bit
    assert restored.points["loss"].to_numpy().tobytes() == curve.points["loss"].to_numpy().tobytes()


def test_from_dict_rejects_other_units_and_missing_keys(curve):
    payload = curve.to_dict()
    with pytest.raises(ValueError, match="nats"):
        LossDataCurve.from_dict({**payload, "unit": "bits"})
    incomplete = {key: value for key, value in payload.items() if key != "n_test"}
    with pytest.raises(ValueError, match="n_test"):
        LossDataCurve.from_dict(incomplete)


def test_constructor_validates_points():
    with pytest.raises(ValueError, match="accuracy"):
        LossDataCurve(
            "x",
            pd.DataFrame({"n": [1], "seed": [0], "loss": [1.0], "loss_truncated": [1.0]}),
            2,
            5,
            5,
        )
    with pytest.raises(ValueError, match="at least one point"):
        _toy_curve({"n": [], "seed": [], "loss": []})


def test_points_are_sorted_by_size_then_seed():
    toy = _toy_curve({"n": [50, 10, 50, 10], "seed": [1, 1, 0, 0], "loss": [4.0, 2.0, 3.0, 1.0]})
    assert toy.points["n"].tolist() == [10, 10, 50, 50]
    assert toy.points["seed"].tolist() == [0, 1, 0, 1]
    assert toy.points["loss"].tolist() == [1.0, 2.0, 3.0, 4.0]


# ---------------------------------------------------------------------------------------------
# summary, truncate, merge, frame, plot
# ---------------------------------------------------------------------------------------------


def test_summary_columns_and_values():
    toy = _toy_curve(
        {
            "n": [10, 10, 10, 40, 40, 40],
            "seed": [0, 1, 2, 0, 1, 2],
            "loss": [3.0, 1.0, 2.0, 0.5, 0.5, 0.8],
        }
    )
    summary = toy.summary()
    assert list(summary.columns) == ["mean", "std", "min", "max", "seeds"]
    assert summary.index.tolist() == [10, 40]
    np.testing.assert_allclose(summary.loc[10].to_numpy(), [2.0, 1.0, 1.0, 3.0, 3.0])
    np.testing.assert_allclose(summary.loc[40, "mean"], 0.6)
    np.testing.assert_allclose(summary.loc[40, "std"], np.std([0.5, 0.5, 0.8], ddof=1))
    pd.testing.assert_series_equal(toy.mean(), summary["mean"])
    with pytest.raises(ValueError, match=r"\bmetric\b"):
        toy.summary("f1")


def test_summary_single_seed_has_zero_std():
    summary = _toy_curve({"n": [10, 20], "seed": [0, 0], "loss": [1.0, 0.5]}).summary()
    assert summary["std"].tolist() == [0.0, 0.0]


def test_summary_of_real_curve_matches_points(curve):
    summary = curve.summary("accuracy")
    assert summary.index.tolist() == curve.sizes.tolist()
    assert summary["seeds"].tolist() == [2] * 5
    at_40 = curve.points[curve.points["n"] == 40]["accuracy"]
    np.testing.assert_allclose(summary.loc[40, "mean"], at_40.mean())
    assert np.all(summary["min"] <= summary["mean"]) and np.all(summary["mean"] <= summary["max"])


def test_truncate(curve):
    short = curve.truncate(200)
    assert short.sizes.tolist() == [10, 40, 160]
    assert short.pool_size == 200
    assert len(short.points) == 6
    pd.testing.assert_frame_equal(
        short.points, curve.points[curve.points["n"] <= 200].reset_index(drop=True)
    )
    assert curve.truncate(160).sizes.tolist() == [10, 40, 160]
    assert len(curve.points) == 10  # the original is untouched
    with pytest.raises(ValueError, match="smallest is 10"):
        curve.truncate(9)


def test_merge_adds_points_and_prefers_the_other_curve():
    a = _toy_curve({"n": [10, 20], "seed": [0, 0], "loss": [1.0, 0.5]})
    b = _toy_curve({"n": [10, 20], "seed": [1, 0], "loss": [1.5, 0.25]})
    merged = a.merge(b)
    assert list(zip(merged.points["n"], merged.points["seed"], strict=True)) == [
        (10, 0),
        (10, 1),
        (20, 0),
    ]
    assert merged.points["loss"].tolist() == [1.0, 1.5, 0.25]  # (20, 0) taken from b
    assert merged.n_seeds == 1  # size 20 has only seed 0
    with pytest.raises(ValueError, match="different data"):
        a.merge(_toy_curve({"n": [10], "seed": [0], "loss": [1.0]}, pool_size=99))


@pytest.mark.numerics
def test_merge_of_real_curves_equals_joint_curve(digits, curve):
    seed0 = loss_data_curve(digits, Linear(), sizes=[10, 40], seeds=[0], random_state=3, **SETTINGS)
    seed1 = loss_data_curve(digits, Linear(), sizes=[10, 40], seeds=[1], random_state=3, **SETTINGS)
    merged = seed0.merge(seed1)
    expected = curve.points[curve.points["n"] <= 40].reset_index(drop=True)
    pd.testing.assert_frame_equal(merged.points, expected, rtol=1e-6)


def test_to_frame_is_tidy(curve):
    frame = curve.to_frame()
    assert set(frame.columns) >= {
        "n",
        "seed",
        "loss",
        "loss_truncated",
        "accuracy",
        "representation",
    }
    assert (frame["representation"] == "digits-pixels").all()
    assert len(frame) == len(curve.points)


def test_plot_draws_mean_curve(curve):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = curve.plot(epsilon=0.5)
    try:
        assert ax.get_xscale() == "log"
        x, y = ax.get_lines()[0].get_data()
        assert list(x) == curve.sizes.tolist()
        np.testing.assert_allclose(y, curve.mean("loss").to_numpy())
    finally:
        plt.close(ax.figure)


# ---------------------------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------------------------


def test_metadata_records_versions_stopping_rule_and_seed(curve, digits):
    meta = curve.metadata
    assert meta["random_state"] == 3
    assert meta["training"]["stopping"] == f"fixed {STEPS} steps"
    assert meta["training"]["steps"] == STEPS
    assert meta["training"]["lr"] == 1e-2
    assert meta["training"]["batch_size"] == 64
    assert meta["training"]["precision"] == "f32"
    assert meta["probe"] == {"family": "mlp", "hidden": []}
    assert meta["device"] == "cpu"
    assert meta["n_features"] == 64
    assert meta["data_fingerprint"] == digits.fingerprint()
    assert meta["train_seconds"] >= 0
    versions = meta["versions"]
    assert versions["torch"] == torch.__version__
    assert versions["numpy"] == np.__version__
    assert versions["pandas"] == pd.__version__
    assert set(versions) >= {"probemeter", "python"}
    assert versions == environment()
    json.dumps(meta)  # JSON-ready as it stands


def test_losses_are_in_nats_relative_to_the_uniform_code(curve):
    """The uniform code costs log K nats: the full-pool probe is far below it, the 10-point
    probes are within a factor of it (losses in bits would be 1/ln 2 larger)."""
    uniform = math.log(curve.n_classes)
    loss = curve.mean("loss")
    assert loss.iloc[-1] < 0.2 * uniform
    assert 0.5 * uniform < loss.iloc[0] < 1.5 * uniform


# ---------------------------------------------------------------------------------------------
# known defects, kept as strict expected failures: remove the mark when fixed
# ---------------------------------------------------------------------------------------------


def test_save_with_numpy_integer_settings(digits, tmp_path):
    result = loss_data_curve(
        digits, Linear(), sizes=[10], seeds=1, random_state=np.int64(3),
        **{**SETTINGS, "config": replace(CONFIG, steps=np.int64(3), batch_size=np.int64(8))},
    )  # fmt: skip
    result.save(tmp_path / "curve.json")
    _assert_same_curve(LossDataCurve.load(tmp_path / "curve.json"), result)


def test_string_seeds_raise(digits):
    with pytest.raises(ValueError, match=r"\bseeds\b"):
        loss_data_curve(digits, Linear(), sizes=[10], seeds="12", **SETTINGS)


@pytest.mark.parametrize("seeds", [True, 2.0])
def test_bool_or_float_seeds_raise_value_error(digits, seeds):
    with pytest.raises(ValueError, match=r"\bseeds\b"):
        loss_data_curve(digits, Linear(), sizes=[10], seeds=seeds, **SETTINGS)


# ---- the original labels of the class indices, kept in the results ----------------------------


def test_a_categorical_label_column_reaches_results_json_and_every_table(tmp_path):
    from dataclasses import replace

    from probemeter.curves.comparison import compare
    from probemeter.curves.results import load_curves, save_results

    rng = np.random.default_rng(0)
    tags = pd.Categorical(rng.choice(["VERB", "ADJ", "NOUN"], size=60))
    frame = pd.DataFrame({"tag": tags, **{f"f{j}": rng.normal(size=60) for j in range(3)}})
    data = ProbeData.from_arrays(frame[["f0", "f1", "f2"]], frame["tag"], labels="encode")
    curve = loss_data_curve(
        data,
        Linear(),
        [10, 20],
        seeds=1,
        **{**SETTINGS, "execution": Execution(device="cpu", n_jobs=1)},
    )
    assert curve.classes == ("ADJ", "NOUN", "VERB")
    save_results(tmp_path / "results.json", [curve])
    stored = json.loads((tmp_path / "results.json").read_text())["curves"][0]
    assert stored["classes"] == ["ADJ", "NOUN", "VERB"]
    (loaded,) = load_curves(tmp_path / "results.json")
    assert loaded.classes == curve.classes
    comparison = compare([loaded, replace(loaded, name="again")], 0.5)
    line = "classes: 0 = ADJ, 1 = NOUN, 2 = VERB (K = 3)"
    assert str(comparison).splitlines()[-1] == line
    assert comparison.to_markdown().endswith("|\n\n" + line)
    assert comparison.to_latex().splitlines()[-3] == rf"\multicolumn{{4}}{{l}}{{{line}}} \\"
    relabelled = replace(loaded, name="other", classes=("a", "b", "c"))
    assert "different label mappings" in compare([loaded, relabelled], 0.5).to_markdown()


def test_class_labels_survive_truncation_merging_and_json_types(curve):
    from dataclasses import replace

    flags = replace(curve, classes=(np.False_, np.True_))
    numbers = replace(curve, classes=(np.int64(3), np.float32(7.5)))
    assert json.dumps(flags.to_dict()["classes"]) == "[false, true]"
    assert json.dumps(numbers.to_dict()["classes"]) == "[3, 7.5]"
    assert LossDataCurve.from_dict(flags.to_dict()).classes == (False, True)
    assert flags.truncate(40).classes == flags.merge(flags).classes == (False, True)
    with pytest.raises(ValueError, match="cannot merge curves of different data"):
        flags.merge(numbers)


def test_curves_written_before_class_labels_were_recorded_still_load(curve):
    from probemeter.curves.comparison import compare

    payload = curve.to_dict()
    assert payload["classes"] is None  # digits' labels are indices: no labels to record
    del payload["classes"]
    old = LossDataCurve.from_dict(payload)
    assert old.classes is None and "classes" not in str(compare([old], 0.5))


# ---------------------------------------------------------------------------------------------
# kept probes
# ---------------------------------------------------------------------------------------------


@pytest.mark.numerics
def test_kept_probes_reproduce_the_curve_exactly_and_change_nothing(digits, tmp_path):
    settings = {**SETTINGS, "config": replace(CONFIG, steps=40)}
    plain = loss_data_curve(digits, MLP((16,)), sizes=[10, 40, 160], seeds=2, **settings)
    kept = loss_data_curve(
        digits, MLP((16,)), sizes=[10, 40, 160], seeds=2, keep_probes=True, **settings
    )
    assert plain.probes is None
    assert kept.points.equals(plain.points)  # training and points are the same, bit for bit
    timed = ("train_seconds",)  # the only field that may differ: wall-clock time
    assert _without(kept.to_dict(), timed) == _without(plain.to_dict(), timed)
    assert "probes" not in json.dumps(kept.to_dict())  # the probes are not part of results
    frame = kept.probes.to_frame()
    assert frame[["n", "seed"]].equals(kept.points[["n", "seed"]])  # one probe per point
    # 539 test rows x 10 classes: stack rows lie off 16-byte boundaries, yet every loss is the
    # point's own float
    assert frame["loss"].tolist() == kept.points["loss"].tolist()
    assert frame["accuracy"].tolist() == kept.points["accuracy"].tolist()
    for probe, accuracy in zip(kept.probes, kept.points["accuracy"]):
        assert np.mean(probe.predictions == digits.y_test) == accuracy
    kept.probes.save(tmp_path / "probes.safetensors")
    reloaded = load_probes(tmp_path / "probes.safetensors")
    assert reloaded.evaluate(digits.X_test, digits.y_test)["loss"].tolist() == (
        kept.points["loss"].tolist()
    )
    assert kept.truncate(40).probes is None and kept.merge(plain).probes is None


def _without(payload: dict, fields: tuple[str, ...]) -> dict:
    """A result's dictionary with ``fields`` of its metadata left out."""
    metadata = {k: v for k, v in payload["metadata"].items() if k not in fields}
    return {**payload, "metadata": metadata}
