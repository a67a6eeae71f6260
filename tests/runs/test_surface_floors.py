"""Surface floors of a texts task (``[task] controls``, runs/kinds/surface.py): checked before
anything is encoded, one representation per floor tokenized by the run's one model, built from
the raw texts fitted on the pool, densified for methods that read dense features, and the layer
verdict's comparison of the best layer with the best floor (runs/layers.py) — on hand-built
results whose tests are known in closed form, and through ``probemeter run`` on a keyword task
with a tiny decoder."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.feature_extraction.text import CountVectorizer
from tiny_models import make_tiny_gpt2

from probemeter._summary import SeedCorrectness, labels_digest
from probemeter.cli.main import main
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.method import CurveMethod
from probemeter.datasets.surface import SURFACE_FLOORS, WORD_TOKENS
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.kinds import surface
from probemeter.runs.kinds.surface import SurfaceKind, floor_name
from probemeter.runs.layers import CLUSTERED, LayerAnalysis, analyse_layers
from probemeter.runs.runner import prepare_data

FLOORS = list(SURFACE_FLOORS)
KEYWORD = "banana"
VOCABULARY = "the cat sat on mat near river bank dogs bark at night about distant old stars".split()


def _keyword_texts(folder: Path, n: int = 200) -> Path:
    """Label 1 iff the text holds KEYWORD; the texts of label 0 get another word of the
    vocabulary instead, so that lengths say nothing of the label. The last quarter is the test
    split."""
    rng = np.random.default_rng(0)
    rows = []
    for index in range(n):
        words = list(rng.choice(VOCABULARY, size=int(rng.integers(3, 9))))
        label = index % 2
        extra = KEYWORD if label else str(rng.choice(VOCABULARY))
        words.insert(int(rng.integers(0, len(words) + 1)), extra)
        split = "test" if index >= 3 * n // 4 else "train"
        rows.append((" ".join(words), label, split))
    path = folder / "keyword.csv"
    pd.DataFrame(rows, columns=["text", "label", "split"]).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    return make_tiny_gpt2(tmp_path_factory.mktemp("models") / "gpt2")


def _experiment(
    folder: Path, controls: str, representations: str, method: str = "", task: str = ""
) -> Path:
    _keyword_texts(folder)
    path = folder / "floors.toml"
    path.write_text(
        '[run]\nname = "floors"\n[task]\ndataset = "texts"\npath = "keyword.csv"\n'
        f'split_column = "split"\ntemplate = "Text: {{text}} Answer:"\n{task}'
        f"controls = {controls}\n{representations}[method]\n"
        + (
            method
            or "epsilon = 0.6\nsizes = [20, 40, 80, 130]\nprobe = []\nseeds = 2\nsteps = 200\n"
            "lr = 0.01\n"
        )
    )
    return path


def _transformer(
    model: Path, name: str = "gpt2", layer: str = '"all"', pooling: str = "mean"
) -> str:
    """The tiny decoder's layers, each text's tokens averaged (the keyword's embedding is in
    the mean: the model can reach the floor)."""
    return (
        f'[[representations]]\nname = "{name}"\nkind = "transformer"\nmodel = "{model}"\n'
        f'layer = {layer}\npooling = "{pooling}"\n'
    )


WORDS_ONLY = '[[representations]]\nname = "bow"\nkind = "surface"\nfloor = "bag-of-words"\n'


def test_controls_are_checked_before_anything_is_encoded(tmp_path):
    for controls, problem in [
        ('["bow"]', "task.controls: 'bow' is no surface floor (known: " + ", ".join(FLOORS)),
        ('["length", "length"]', "task.controls: 'length' is listed twice"),
        ('"length"', "task.controls: must be a list of surface floors"),
    ]:
        path = _experiment(tmp_path, controls, WORDS_ONLY)
        with pytest.raises(ExperimentError) as error:
            load_experiment(path)
        assert error.value.problems == (problem,) or error.value.problems[0].startswith(problem)
        assert len(error.value.problems) == 1 and "\n" not in str(error.value)
    # a floor's name taken by an entry
    named = WORDS_ONLY.replace('"bow"', '"surface-length"')
    with pytest.raises(ExperimentError, match=r"task.controls: 'surface-length' is already"):
        load_experiment(_experiment(tmp_path, '["length"]', named))
    # a floor entry on a task without texts
    digits = tmp_path / "digits.toml"
    digits.write_text('[task]\ndataset = "digits"\n' + WORDS_ONLY + '[method]\nkind = "curve"\n')
    with pytest.raises(ExperimentError, match=r"representations\[0\]\.kind: surface floors read"):
        load_experiment(digits)


def test_one_representation_per_floor_tokenized_by_the_runs_one_model(tmp_path, model):
    path = _experiment(tmp_path, json.dumps(FLOORS), _transformer(model))
    reps = load_experiment(path).representations
    floors = [rep for rep in reps if rep.kind == SurfaceKind.kind]
    assert [rep.name for rep in floors] == [f"surface-{name}" for name in FLOORS]
    assert [floor_name(name) for name in FLOORS] == [rep.name for rep in floors]
    bow = floors[0].key_dict()
    assert bow["floor"] == "bag-of-words" and bow["tokens"] == str(model)
    assert bow["settings"] == SURFACE_FLOORS["bag-of-words"].settings
    assert floors[0].location == "task.controls ('surface-bag-of-words')"
    # two models: the floors read words
    copy = tmp_path / "gpt2-copy"
    shutil.copytree(model, copy)
    two = _transformer(model) + _transformer(copy, "copy", "1")
    reps = load_experiment(_experiment(tmp_path, '["length"]', two)).representations
    assert reps[-1].key_dict()["tokens"] == WORD_TOKENS


def test_a_floor_reads_the_raw_texts_fitted_on_the_pool(tmp_path):
    path = _experiment(tmp_path, '["length"]', WORDS_ONLY)
    experiment = load_experiment(path)
    data = prepare_data(experiment, progress=False)
    table = pd.read_csv(tmp_path / "keyword.csv")
    pool = table[table["split"] == "train"]["text"].tolist()
    vocabulary = CountVectorizer().fit(pool).vocabulary_
    bow = data["bow"]
    assert bow.is_sparse and bow.n_features == len(vocabulary)  # no column of the template's
    assert "text" not in vocabulary and "answer" not in vocabulary
    # the length floor: the pool's word counts, standardised over the pool
    lengths = np.array([len(text.split()) for text in pool], dtype=np.float64)
    expected = (lengths - lengths.mean()) / lengths.std()
    length = data["surface-length"]
    np.testing.assert_allclose(length.X_train[:, 0], expected, rtol=1e-5, atol=1e-6)
    assert length.X_test.shape[0] == (table["split"] == "test").sum()


def test_a_models_tokenizer_splits_the_raw_texts(tmp_path, model):
    import transformers

    entry = WORDS_ONLY + f'tokens = "{model}"\n'
    data = prepare_data(load_experiment(_experiment(tmp_path, '["first-token"]', entry)))
    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    table = pd.read_csv(tmp_path / "keyword.csv")
    pool = table[table["split"] == "train"]["text"].tolist()
    pieces = CountVectorizer(analyzer=tokenizer.tokenize).fit(pool).vocabulary_
    words = CountVectorizer().fit(pool).vocabulary_
    assert data["bow"].n_features == len(pieces) != len(words)
    # the entry's tokens are its own: controls read words where no transformer names a model
    first = {CountVectorizer().build_analyzer()(text)[0] for text in pool}
    assert data["surface-first-token"].n_features == len(first)
    assert len({tokenizer.tokenize(text)[0] for text in pool}) != len(first)


def test_a_method_on_dense_features_gets_small_floors_densified_and_large_ones_refused(
    tmp_path, monkeypatch
):
    method = 'kind = "power"\nbaseline = "bow"\nper_class = [20, 40]\nprobe = []\nseeds = 1\n'
    path = _experiment(tmp_path, '["first-token"]', WORDS_ONLY, method)
    data = prepare_data(load_experiment(path), progress=False)
    assert not data["bow"].is_sparse and not data["surface-first-token"].is_sparse
    monkeypatch.setattr(surface, "DENSE_LIMIT", 10)
    with pytest.raises(ExperimentError) as error:
        prepare_data(load_experiment(path), progress=False)
    assert any(
        problem.startswith("task.controls ('surface-first-token'): surface floor 'first-token': ")
        and "dense features only" in problem
        for problem in error.value.problems
    )


# ---- the verdict on hand-built results ------------------------------------------------------

N_TEST = 200
METHOD = CurveMethod(epsilon=0.5, probe=(8,))


def _curve(name: str, dev: float | None, wrong: range) -> dict:
    """A curve over sizes 10 and 100, two seeds, whose probes of n = 10 lose ``dev`` on the
    development split (SDL there at ε = 0.5: 10 · (ln 2 − ε) + 90 · (dev − ε), the probes of
    n = 100 within ε) and whose probes of n = 100 get every test example right but
    ``wrong``; ``dev=None``: no development split."""
    correct = np.ones(N_TEST, dtype=bool)
    correct[list(wrong)] = False
    rows = [
        {"n": n, "seed": seed, "loss": loss, "loss_truncated": min(loss, 1.0), "accuracy": 0.5}
        for n, loss in ((10, 0.6), (100, 0.3))
        for seed in (0, 1)
    ]
    points = pd.DataFrame(rows)
    points.loc[points["n"] == 100, "accuracy"] = correct.mean()
    metadata: dict = {"n_features": 4}
    if dev is not None:
        points["dev_loss"] = [dev, dev, 0.3, 0.3]
        points["dev_loss_truncated"] = np.minimum(points["dev_loss"], 1.0)
        points["dev_accuracy"] = 0.5
        metadata["development"] = {
            "fraction": 0.1, "n_dev": 11, "groups": "examples", "random_state": 0,
        }  # fmt: skip
    digest = labels_digest(np.arange(N_TEST) % 2)
    final = SeedCorrectness((0, 1), (correct,) * 2, digest, 100, None)
    return LossDataCurve(name, pd.DataFrame(points), 2, 100, N_TEST, metadata, final).to_dict()


SWEEP = {"m": [(0, "m-0"), (1, "m-1")]}


def test_the_best_layer_beats_the_floor_chosen_on_the_development_split(tmp_path):
    results = [
        _curve("m-0", 0.9, range(60)),
        _curve("m-1", 0.6, range(10)),  # the best layer: 10 test errors
        # floor a: the better on the development split, 60 test errors; b: more accurate on
        # the test set, worse on the development split
        _curve("floor-a", 0.7, range(60)),
        _curve("floor-b", 0.8, range(12)),
    ]
    analysis = analyse_layers(
        METHOD, results, SWEEP, floors=["floor-a", "floor-b"], n_simulations=200
    )
    (verdict,) = analysis.verdicts
    floor = verdict.floor
    assert verdict.best == (1, "m-1") and floor.floor == "floor-a"
    assert floor.chosen_on.startswith("dev: 11 pool examples")
    # layer 1 errs on 10 examples, floor a on those and 50 more: b = 0, c = 50 per seed
    expected = stats.chi2.sf(50.0, df=1)
    test = floor.test
    assert (test.first, test.second) == ("m-1", "floor-a")
    assert test.p_values == pytest.approx((expected, expected))
    # Holm over the sweep's two comparisons (0-1, also the verdict's pair, and 1-floor a),
    # both p = χ²(50): the smaller doubled, the larger max(2p, p) = 2p
    assert test.comparisons == 2 and test.p_adjusted == pytest.approx(2 * expected)
    assert verdict.test.p_adjusted == pytest.approx(2 * expected)
    assert floor.difference == pytest.approx(0.95 - 0.70) and floor.beats
    text = verdict.describe()
    assert "best layer 1 − best floor = +25.00 points of test accuracy" in text
    assert "m's best layer beats the best surface floor" in text
    # the floors' rows in the table, after the layers; and in layers.json
    table = analysis.table("markdown")
    assert "| floor-a | — |" in table and "| floor-b | — |" in table
    loaded = LayerAnalysis.from_dict(json.loads(json.dumps(analysis.to_dict())))
    assert loaded.to_dict() == analysis.to_dict() and str(loaded) == str(analysis)
    # the figure: the best floor of each panel as a level (test accuracy: floor b's 0.94)
    figure = analysis.plot()
    accuracy_panel = figure.axes[-1]
    levels = {line.get_label(): line.get_ydata()[0] for line in accuracy_panel.get_lines()}
    assert levels["best surface floor: floor-b"] == pytest.approx(0.94)
    payload = analysis.to_dict()["verdicts"][0]["floor"]
    assert payload["beats"] is True and payload["difference"] == pytest.approx(0.25)


def test_a_floor_as_accurate_as_the_best_layer_is_not_beaten():
    results = [
        _curve("m-0", 0.9, range(60)),
        _curve("m-1", 0.6, range(10)),
        _curve("floor", 0.6, range(8)),  # 8 errors, within the layer's 10
    ]
    (verdict,) = analyse_layers(
        METHOD, results, SWEEP, floors=["floor"], n_simulations=200
    ).verdicts
    floor = verdict.floor
    # 2 discordant pairs, both the floor's: McNemar's exact test (b + c < 25),
    # p = 2 · P[Bin(2, ½) ≤ 0] = 2 · ¼
    assert floor.difference == pytest.approx(-0.01) and not floor.beats
    assert floor.test.p_values == (0.5, 0.5)
    assert "m's best layer does not beat the best surface floor (no more accurate)" in (
        verdict.describe()
    )
    # without floors, no comparison: the verdict is as before
    (plain,) = analyse_layers(METHOD, results[:2], SWEEP, n_simulations=200).verdicts
    assert plain.floor is None and "surface floor" not in plain.describe()
    assert math.isclose(plain.test.p_adjusted, plain.test.p_value)


def test_a_floor_measured_on_no_held_out_data_is_named_but_not_tested():
    results = [
        _curve("m-0", 0.9, range(60)),
        _curve("m-1", 0.6, range(10)),
        _curve("floor", None, range(60)),
    ]
    analysis = analyse_layers(METHOD, results, SWEEP, floors=["floor"], n_simulations=200)
    (verdict,) = analysis.verdicts
    assert verdict.floor.floor == "floor" and verdict.floor.chosen_on == "test"
    assert verdict.floor.test is None and not verdict.floor.beats
    assert "whether m's best layer beats it is not tested" in verdict.describe()
    assert verdict.test.comparisons == 1  # the untested comparison is no Holm comparison


# ---- through probemeter run ------------------------------------------------------------------


@pytest.mark.slow
def test_on_a_keyword_task_the_bag_of_words_floor_is_not_beaten(tmp_path, model):
    """The done criterion: label 1 iff the text holds a keyword; the bag-of-words floor reaches
    the tiny decoder's accuracy, and the verdict says its best layer does not beat it."""
    path = _experiment(tmp_path, json.dumps(FLOORS), _transformer(model))
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    folder = out / "floors"
    layers = json.loads((folder / "layers.json").read_text())
    accuracy = {row["representation"]: row["accuracy"]["value"] for row in layers["rows"]}
    floors = {row["representation"]: row["accuracy"]["value"] for row in layers["floors"]}
    assert list(floors) == [floor_name(name) for name in FLOORS]
    # the model gets the keyword too (its embedding is in the mean), the floor as well or better
    assert max(accuracy.values()) >= 0.9
    assert floors["surface-bag-of-words"] >= max(accuracy.values())
    # the floors that cannot see the keyword stay near chance: lengths were balanced
    assert floors["surface-length"] <= 0.7
    (verdict,) = layers["verdicts"]
    comparison = verdict["floor"]
    assert comparison["floor"] in ("surface-bag-of-words", "surface-tf-idf")
    assert comparison["beats"] is False and comparison["difference"] <= 0
    markdown = (folder / "layers.md").read_text()
    assert "gpt2's best layer does not beat the best surface floor" in markdown
    for name in FLOORS:
        assert f"| surface-{name} | — |" in markdown
    results = json.loads((folder / "results.json").read_text())
    assert {curve["name"] for curve in results["curves"]} >= set(floors)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method",
    [
        'kind = "mdl"\nprobe = []\ncontrol = false\ntimesteps = [0.1, 0.25, 0.5, 1.0]\n'
        "max_epochs = 5\n",
        'kind = "power"\nbaseline = "surface-length"\nper_class = [20, 40]\nprobe = []\n'
        "seeds = 1\nsteps = 200\nlr = 0.01\n",
    ],
    ids=["mdl", "power"],
)
def test_floors_go_through_every_method(tmp_path, model, method):
    path = _experiment(tmp_path, '["bag-of-words", "length"]', _transformer(model), method)
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    layers = json.loads((out / "floors" / "layers.json").read_text())
    assert [row["representation"] for row in layers["floors"]] == [
        "surface-bag-of-words",
        "surface-length",
    ]
    (verdict,) = layers["verdicts"]
    assert verdict["floor"]["floor"] in ("surface-bag-of-words", "surface-length")
    assert "surface-bag-of-words" in (out / "floors" / "table.md").read_text()


MDL = (
    'kind = "mdl"\nprobe = []\ncontrol = false\ntimesteps = [0.1, 0.25, 0.5, 1.0]\nmax_epochs = 5\n'
)


@pytest.mark.slow
def test_floors_of_token_rows_are_paired_with_the_layers_by_the_sign_flip_test(tmp_path, model):
    """pooling "all": the floors get the layers' rows (each text's floor once per token) and
    clusters, so the verdict pairs them with the sign-flip test of texts."""
    reps = _transformer(model, pooling="all")
    path = _experiment(tmp_path, '["bag-of-words", "length"]', reps, MDL)
    experiment = load_experiment(path)
    assert experiment.representations[-1].key_dict()["rows"] == "token"
    data = prepare_data(experiment, progress=False)
    layer, floor = data["gpt2-1"], data["surface-bag-of-words"]
    assert floor.pool_size == layer.pool_size > 150  # tokens, not texts
    np.testing.assert_array_equal(floor.clusters_test, layer.clusters_test)
    np.testing.assert_array_equal(floor.y_test, layer.y_test)
    # each text's rows share one floor row
    rows = floor.X_test.toarray()
    for text in np.unique(floor.clusters_test)[:5]:
        same = rows[floor.clusters_test == text]
        assert (same == same[0]).all()
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    (verdict,) = json.loads((out / "floors" / "layers.json").read_text())["verdicts"]
    test = verdict["floor"]["test"]
    assert test["test"] == CLUSTERED and test["n_clusters"] == 50  # the 50 test texts
