"""Shifted test sets of a texts task (``[task] shifted``, ``shifted_splits``): refused with one
line before anything is encoded, encoded in the task's pass, standardised with the pool's
statistics, scored by the probes trained once (a set equal to the test set gives the test
set's numbers and a zero gap), reported with a bootstrap interval and a paired test; and the
planted shift through ``probemeter run``: a keyword replaced by its synonym, which the tiny
decoder reads as the keyword and the bag-of-words floor never saw."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probemeter.cli.main import main
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.data import ProbeData, ShiftedSet
from probemeter.power.mcnemar import mcnemar
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data
from probemeter.runs.shift import ShiftAnalysis, analyse_shift

#: filler words of one token each to the tiny decoder's tokenizer (with a leading space)
FILLER = ("the", "over", "near", "on")
#: each label's keyword in the pool and test set, and its synonym in the shifted file
KEYWORD = {"a": "cat", "b": "mat"}
SYNONYM = {"a": "dog", "b": "sat"}


def _texts(path: Path, words: dict[str, str], n: int, seed: int, split: bool = True) -> Path:
    """``n`` texts of six filler words with the label's word at a random place (labels
    alternating a/b); the last quarter the test split."""
    rng = np.random.default_rng(seed)
    rows = []
    for index in range(n):
        label = "ab"[index % 2]
        text = list(rng.choice(FILLER, size=6))
        text.insert(int(rng.integers(0, 7)), words[label])
        row = {"text": " ".join(text), "label": label}
        if split:
            row["split"] = "test" if index >= 3 * n // 4 else "train"
        rows.append(row)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _experiment(folder: Path, task: str = "", method: str = "", reps: str | None = None) -> Path:
    _texts(folder / "texts.csv", KEYWORD, 80, 0)
    _texts(folder / "shifted.csv", SYNONYM, 40, 1, split=False)
    path = folder / "shift.toml"
    path.write_text(
        '[run]\nname = "shift"\n[task]\ndataset = "texts"\npath = "texts.csv"\n'
        'split_column = "split"\n'
        + task
        + (
            reps
            if reps is not None
            else '[[representations]]\nname = "bow"\nkind = "surface"\nfloor = "bag-of-words"\n'
        )
        + "[method]\n"
        + (method or "sizes = [20, 60]\nseeds = 2\nprobe = []\nsteps = 100\nlr = 0.01\n")
        + ("" if "epsilon" in method or "mdl" in method else "epsilon = 0.6\n")
    )
    return path


def _problems(path: Path) -> tuple[str, ...]:
    with pytest.raises(ExperimentError) as error:
        load_experiment(path)
    assert "\n" not in str(error.value)
    return error.value.problems


def test_shifted_sets_are_checked_before_anything_is_encoded(tmp_path):
    shifted = 'shifted = {synonyms = "shifted.csv"}\n'
    cases = [
        ('shifted = {synonyms = "nowhere.csv"}\n', "task.shifted.synonyms: file "),
        ('shifted = {test = "shifted.csv"}\n', "task.shifted: 'test' names a split"),
        ('shifted = "shifted.csv"\n', "task.shifted: must be a table of names to files"),
        ('shifted_splits = ["ood", "ood"]\n', "task.shifted_splits: 'ood' is listed twice"),
        ('shifted_splits = ["dev"]\n', "task.shifted_splits: 'dev' is one of the task's own"),
        (shifted + 'shifted_splits = ["synonyms"]\n', "task.shifted_splits: 'synonyms' names"),
        (shifted + 'contrast_column = "text2"\npair = "difference"\n', "task.shifted: shifted"),
    ]
    for task, problem in cases:
        problems = _problems(_experiment(tmp_path, task))
        assert any(found.startswith(problem) for found in problems), (task, problems)
    # another method than the curve's does not score them
    problems = _problems(_experiment(tmp_path, shifted, 'kind = "mdl"\n'))
    assert problems == (
        "task.shifted: shifted test sets are scored by the curve method's probes; 'mdl' does "
        "not score them",
    )
    # not a texts task: the option is unknown there
    digits = tmp_path / "digits.toml"
    digits.write_text(
        '[task]\ndataset = "digits"\nshifted = {a = "x.csv"}\n[method]\nepsilon = 0.6\n'
    )
    with pytest.raises(ExperimentError) as error:
        load_experiment(digits)
    assert "task.shifted: unknown key (known: dataset, n_test)" in error.value.problems


def test_check_refuses_a_shifted_label_the_pool_never_saw(tmp_path, capsys):
    """``probemeter run --check`` reads the shifted file whole, before anything is encoded."""
    path = _experiment(tmp_path, 'shifted = {synonyms = "shifted.csv"}\n')
    pd.DataFrame({"text": ["the cat"], "label": ["c"]}).to_csv(
        tmp_path / "shifted.csv", index=False
    )
    assert main(["run", str(path), "--check"]) != 0
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "task.shifted.synonyms:" in errors[0]
    assert "holds label(s) 'c' that no pool row holds" in errors[0]


def test_a_shifted_file_is_read_and_checked_like_the_task_file(tmp_path):
    path = _experiment(tmp_path, 'shifted = {synonyms = "shifted.csv"}\n')
    # a missing column, named with the option
    pd.read_csv(tmp_path / "shifted.csv").rename(columns={"label": "y"}).to_csv(
        tmp_path / "shifted.csv", index=False
    )
    with pytest.raises(
        ValueError, match=r"task: task\.shifted\.synonyms: texts file .* has no column 'label'"
    ):
        prepare_data(load_experiment(path), progress=False)
    # a split value no row holds
    ood = _experiment(tmp_path, 'shifted_splits = ["ood"]\n')
    with pytest.raises(ValueError, match=r"task\.shifted_splits: no row of .* has 'ood'"):
        prepare_data(load_experiment(ood), progress=False)
    # a label the pool never saw
    path = _experiment(tmp_path, 'shifted = {synonyms = "shifted.csv"}\n')
    table = pd.read_csv(tmp_path / "texts.csv")
    pd.DataFrame({"text": ["the cat"], "label": ["c"]}).to_csv(
        tmp_path / "shifted.csv", index=False
    )
    with pytest.raises(
        ValueError, match=r"task: task\.shifted\.synonyms: .* holds label\(s\) 'c' that no pool row"
    ):
        prepare_data(load_experiment(path), progress=False)
    assert len(table) == 80


def test_shifted_rows_are_standardised_with_the_pools_statistics(tmp_path):
    """A split value and a file: the shifted set's rows are the bag-of-words counts of its
    texts, fitted on the pool, standardised with the pool's mean and (ddof 0) std."""
    table = pd.read_csv(_texts(tmp_path / "texts.csv", KEYWORD, 80, 0))
    table.loc[:9, "split"] = "ood"  # ten rows of the file's own form the set "ood"
    table["text"] += [" near" * (index % 5) for index in range(len(table))]  # lengths vary
    table.to_csv(tmp_path / "texts.csv", index=False)
    _texts(tmp_path / "shifted.csv", SYNONYM, 40, 1, split=False)
    path = tmp_path / "shift.toml"
    path.write_text(
        '[task]\ndataset = "texts"\npath = "texts.csv"\nsplit_column = "split"\n'
        'shifted = {synonyms = "shifted.csv"}\nshifted_splits = ["ood"]\n'
        '[[representations]]\nname = "length"\nkind = "surface"\nfloor = "length"\n'
        "[method]\nsizes = [20]\nepsilon = 0.6\n"
    )
    data = prepare_data(load_experiment(path), progress=False)["length"]
    assert [shifted.name for shifted in data.shifted] == ["ood", "synonyms"]
    pool = table[table["split"] == "train"]["text"]
    lengths = pool.str.split().str.len().to_numpy(dtype=np.float64)
    mean, std = lengths.mean(), lengths.std()
    ood, synonyms = data.shifted
    expected = (table["text"][:10].str.split().str.len().to_numpy() - mean) / std
    np.testing.assert_allclose(ood.X[:, 0], expected, rtol=1e-6)
    assert ood.y.tolist() == [0 if label == "a" else 1 for label in table["label"][:10]]
    assert synonyms.X.shape == (40, 1) and len(data.y_test) == 20 and data.pool_size == 50
    np.testing.assert_allclose(synonyms.X[:, 0], (7 - mean) / std, rtol=1e-6)


def _data(rng: np.random.Generator, n: int = 120) -> ProbeData:
    labels = np.arange(n) % 2
    X = rng.normal(size=(n, 5)) + 1.5 * labels[:, None]
    return ProbeData.from_arrays(X[:80], labels[:80], X[80:], labels[80:])


@pytest.mark.numerics
def test_a_shifted_set_equal_to_the_test_set_gives_the_test_sets_numbers(tmp_path):
    from probemeter import Execution, Linear, TrainingConfig

    data = _data(np.random.default_rng(0))
    same = ProbeData.from_arrays(data.X_train, data.y_train, data.X_test, data.y_test)
    data = ProbeData(
        **{**same.__dict__, "shifted": (ShiftedSet("same", data.X_test, data.y_test),)}
    )
    curve = loss_data_curve(
        data, Linear(), [20, 60], seeds=3, config=TrainingConfig(steps=50, lr=1e-2),
        execution=Execution(device="cpu"),
    )  # fmt: skip
    final = curve.points[curve.points["n"] == 60]
    found = curve.shifted["sets"]["same"]
    assert found["loss"] == final["loss"].tolist()  # bit for bit: the engine's arithmetic
    assert found["accuracy"] == final["accuracy"].tolist()
    assert found["nll"] == curve.shifted["test_nll"]
    # monitor metrics: the same scores and the same thresholds, set on the development split
    assert found["monitor"] == {k: v for k, v in curve.monitor.items() if k != "positive"}
    assert found["monitor"]["thresholds"]["split"] == "dev"
    # through JSON and the analysis: zero gaps, McNemar's p = 1 against itself
    curve = LossDataCurve.from_dict(json.loads(json.dumps(curve.to_dict())))
    analysis = analyse_shift([curve, LossDataCurve(**{**curve.__dict__, "name": "twin"})])
    row = analysis.rows[0]
    assert row.accuracy_gap == 0 and row.loss_gap == 0
    assert set(row.monitor) == {"auroc", "recall@1%fpr", "recall@5%fpr", "brier", "ece"}
    for values in row.monitor.values():
        assert values["test"] == values["shifted"]
        assert values.get("test_fpr") == values.get("shifted_fpr")
    assert row.accuracy_gap_low <= 0 <= row.accuracy_gap_high
    assert row.loss_gap_low <= 0 <= row.loss_gap_high
    assert [test.p_value for test in analysis.tests] == [1.0]
    assert ShiftAnalysis.from_dict(analysis.to_dict()) == analysis


@pytest.mark.numerics
@pytest.mark.parametrize("family", ["diff-means", "lda", "mlp", "grid"])
def test_every_probe_family_scores_a_copy_of_the_test_set_as_the_engine_did(family):
    """Direction baselines (fitted in closed form), a hidden layer and a settings grid (the
    chosen setting's probes): a shifted copy of the test set gives the curve's points."""
    from probemeter import MLP, Direction, Execution, Linear, TrainingConfig

    data = _data(np.random.default_rng(2))
    data = replace(data, shifted=(ShiftedSet("same", data.X_test, data.y_test),))
    config = {"config": TrainingConfig(steps=50, lr=1e-2)}
    probe, options = {
        "diff-means": (Direction("diff-means"), {}),
        "lda": (Direction("lda"), {}),
        "mlp": (MLP((8,)), config),
        "grid": (Linear(), {**config, "settings": {"lr": [1e-3, 1e-2]}}),
    }[family]
    curve = loss_data_curve(
        data, probe, [20, 60], seeds=2, execution=Execution(device="cpu"), **options
    )
    final = curve.points[curve.points["n"] == 60]
    assert curve.shifted["sets"]["same"]["loss"] == final["loss"].tolist()
    assert curve.shifted["sets"]["same"]["accuracy"] == final["accuracy"].tolist()


def test_the_gap_interval_and_the_paired_test_by_hand():
    """Two curves' stored shifted scores built by hand: the gap is the mean over seeds of
    shifted − test accuracy, its interval holds it, the paired test is McNemar's per seed (the
    largest p) Holm-adjusted over the comparisons."""
    rng = np.random.default_rng(1)
    labels = np.arange(50) % 2

    def curve(name: str, hit: float, dev_loss: float) -> LossDataCurve:
        predictions = [np.where(rng.random(50) < hit, labels, 1 - labels) for _ in range(2)]
        test_correct = [rng.random(20) < 0.9 for _ in range(2)]
        points = pd.DataFrame(
            {"n": [40, 40], "seed": [0, 1], "loss": [0.3, 0.4], "loss_truncated": [0.3, 0.4],
             "accuracy": [c.mean() for c in test_correct], "dev_loss": [dev_loss] * 2,
             "dev_loss_truncated": [dev_loss] * 2, "dev_accuracy": [0.9, 0.9]}
        )  # fmt: skip
        from probemeter._summary import SeedCorrectness, labels_digest

        correct = SeedCorrectness((0, 1), tuple(test_correct), labels_digest(np.zeros(20)), 40)
        shifted = {
            "seeds": [0, 1], "n_train": 40, "test_nll": [[0.3] * 20, [0.4] * 20],
            "sets": {"s": {"n": 50, "loss": [0.5, 0.7],
                           "accuracy": [float((p == labels).mean()) for p in predictions],
                           "nll": [[0.5] * 50, [0.7] * 50],
                           "predictions": [p.tolist() for p in predictions],
                           "labels": labels.tolist()}},
        }  # fmt: skip
        return LossDataCurve(name, points, 2, 40, 20, final_correct=correct, shifted=shifted)

    layer, floor, other = curve("layer", 0.95, 0.1), curve("floor", 0.5, 0.2), curve("x", 0.6, 0.3)
    analysis = analyse_shift([floor, layer, other], random_state=0)
    assert analysis.chosen == "layer" and analysis.chosen_on == "dev"
    row = next(row for row in analysis.rows if row.representation == "layer")
    shifted_accuracy = np.mean(layer.shifted["sets"]["s"]["accuracy"])
    test_accuracy = np.mean([c.mean() for c in layer.final_correct.correct])
    assert row.accuracy_gap == pytest.approx(shifted_accuracy - test_accuracy, abs=1e-12)
    assert row.accuracy_gap_low < row.accuracy_gap < row.accuracy_gap_high
    assert row.loss_gap == pytest.approx(0.6 - 0.35) and row.loss_gap_low == pytest.approx(0.25)
    p = {}
    for against in (floor, other):
        per_seed = [
            mcnemar(
                np.array(layer.shifted["sets"]["s"]["predictions"][s]) == labels,
                np.array(against.shifted["sets"]["s"]["predictions"][s]) == labels,
            ).p_value
            for s in range(2)
        ]
        p[against.name] = max(per_seed)
    tests = {test.second: test for test in analysis.tests}
    assert tests["floor"].p_value == p["floor"] and tests["x"].p_value == p["x"]
    low, high = sorted(p.values())
    assert sorted(test.p_adjusted for test in analysis.tests) == pytest.approx(
        [min(1, 2 * low), max(min(1, 2 * low), high)]
    )
    assert "shifted set" in analysis.table() and "p (Holm)" in analysis.tests_table()


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama decoder with the input-embedding row of each synonym's token set equal
    to its keyword's (" dog" := " cat", " sat" := " mat", and the same without the space):
    the model reads a synonym as its keyword, exactly."""
    pytest.importorskip("transformers")
    import torch
    import transformers

    from probemeter.encoders.tiny import tiny_decoder

    folder = tiny_decoder(tmp_path_factory.mktemp("models") / "llama")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    embedding = model.get_input_embeddings().weight
    with torch.no_grad():
        for label, keyword in KEYWORD.items():
            for space in ("", " "):
                (source,) = tokenizer(space + keyword, add_special_tokens=False)["input_ids"]
                (target,) = tokenizer(space + SYNONYM[label], add_special_tokens=False)["input_ids"]
                embedding[target] = embedding[source]
    model.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_a_planted_shift_collapses_the_surface_floor_and_not_the_layer(tmp_path, planted):
    """The done criterion of issue 43, item 2. The pool and test texts say their label with a
    keyword (a: "cat", b: "mat") among six filler words; the shifted file says it with a
    synonym (a: "dog", b: "sat") that no pool text holds. The tiny decoder's input embeddings
    of each synonym were set equal to its keyword's (:func:`planted`), so every layer of the
    model reads the shifted texts as it reads the keyword texts: its probes hold; the
    bag-of-words floor, fitted on the pool's words, sees no keyword there: near chance."""
    reps = (
        f'[[representations]]\nname = "llama"\nkind = "transformer"\nmodel = "{planted}"\n'
        'layer = "all"\npooling = "mean"\n'
    )
    task = 'shifted = {synonyms = "shifted.csv"}\ncontrols = ["bag-of-words"]\n'
    method = "sizes = [20, 60]\nseeds = 2\nprobe = []\nsteps = 200\nlr = 0.01\n"
    path = _experiment(tmp_path, task, method, reps)
    _texts(tmp_path / "texts.csv", KEYWORD, 160, 0)
    _texts(tmp_path / "shifted.csv", SYNONYM, 100, 1, split=False)
    assert main(["run", str(path), "--out", str(tmp_path / "runs"), "-q", "--n-jobs", "1"]) == 0
    out = tmp_path / "runs" / "shift"
    analysis = ShiftAnalysis.from_dict(json.loads((out / "shift.json").read_text()))
    rows = {row.representation: row for row in analysis.rows}
    floor = rows["surface-bag-of-words"]
    assert floor.test_accuracy >= 0.95 and floor.shifted_accuracy <= 0.65
    assert floor.accuracy_gap_high < -0.25  # the collapse, outside its interval
    layers = [row for name, row in rows.items() if name.startswith("llama")]
    best = max(layers, key=lambda row: row.shifted_accuracy)
    assert best.test_accuracy >= 0.9 and best.shifted_accuracy >= 0.9
    assert best.accuracy_gap_low <= 0.05
    # as a monitor: the floor ranks the shifted texts at chance, the layer as on the test set
    assert floor.monitor["auroc"]["test"] >= 0.95 and floor.monitor["auroc"]["shifted"] <= 0.7
    assert best.monitor["auroc"]["shifted"] >= 0.95
    test = next(test for test in analysis.tests if "bag-of-words" in test.second)
    assert analysis.chosen.startswith("llama") and test.p_adjusted < 0.01
    markdown = (out / "shift.md").read_text()
    assert "synonyms" in markdown and "surface-bag-of-words" in markdown
    report = (out / "report.html").read_text()
    assert '<div id="shift-table"' in report and '<div id="shift-tests"' in report
    results = json.loads((out / "results.json").read_text())
    assert "synonyms" in json.dumps(results)


def test_a_bfloat16_layer_file_gives_the_shifted_rows_of_its_widened_values(tmp_path):
    """A cached layer stored as bfloat16 (:class:`~probemeter.encoders.cache.Bfloat16Rows`) is
    read only at the pool's and the shifted set's rows, and gives the rows its widened float32
    values give, standardised with the pool's mean and (ddof 0) std."""
    from probemeter.encoders.cache import Bfloat16Rows
    from probemeter.runs.tasks import TextsTask

    table = pd.read_csv(_texts(tmp_path / "texts.csv", KEYWORD, 80, 0))
    table.loc[:9, "split"] = "ood"
    table.to_csv(tmp_path / "texts.csv", index=False)
    task = TextsTask(
        path=str(tmp_path / "texts.csv"), split_column="split", shifted_splits=("ood",)
    )
    text = task.inputs(0).text
    values = np.random.default_rng(3).normal(size=(80, 4)).astype(np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)
    widened = (bits.astype(np.uint32) << 16).view(np.float32)
    data = text.probe_data(widened, "x", trees=False, random_state=0)
    from_bits = text.shifted_sets(data, Bfloat16Rows(bits), 0).shifted[0]
    assert from_bits.name == "ood" and np.array_equal(from_bits.X, data.shifted[0].X)
    pool = widened[table["split"].to_numpy() == "train"].astype(np.float64)
    expected = (widened[:10] - pool.mean(axis=0)) / pool.std(axis=0)
    np.testing.assert_allclose(from_bits.X, expected, rtol=1e-5, atol=1e-6)


def test_conditional_probing_puts_the_shifted_sets_side_by_side_too():
    """[B; X] of a ``[run] baseline``: each shifted set's rows are B's then X's, as the pool's
    and the test set's are, so its probes read them."""
    from probemeter.runs.conditional import conditional_data

    rng = np.random.default_rng(4)
    first, second = _data(rng), _data(rng)
    first = replace(first, shifted=(ShiftedSet("s", first.X_test[:5], first.y_test[:5]),))
    second = replace(second, shifted=(ShiftedSet("s", second.X_test[:5], first.y_test[:5]),))
    second = replace(second, y_train=first.y_train, y_test=first.y_test)
    both = conditional_data(first, second, "x|b")
    (shifted,) = both.shifted
    assert shifted.name == "s" and np.array_equal(shifted.y, first.y_test[:5])
    np.testing.assert_array_equal(shifted.X, np.hstack([first.X_test[:5], second.X_test[:5]]))


def test_erasure_maps_the_shifted_sets_as_it_maps_the_test_set():
    """LEACE fitted on the pool applies to every row the probes read: a shifted copy of the
    test set is erased exactly as the test set is."""
    pytest.importorskip("concept_erasure")
    from probemeter.erasure import erase

    data = _data(np.random.default_rng(5))
    data = replace(data, shifted=(ShiftedSet("same", data.X_test, data.y_test),))
    erased = erase(data, data.y_train).data
    np.testing.assert_array_equal(erased.shifted[0].X, erased.X_test)
