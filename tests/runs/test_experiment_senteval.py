"""Experiment files on SentEval probing files: the file's split, sentence pooling, checks,
and curve / mdl runs through the runner."""

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_models import make_tiny_bert

from probemeter.curves.curve import LossDataCurve
from probemeter.datasets.senteval import read_senteval, write_senteval
from probemeter.encoders import TransformerEncoder, glove_6b_50d
from probemeter.mdl.table import load_mdl_results
from probemeter.runs.config import ExperimentError, Representation, load_experiment
from probemeter.runs.runner import prepare_data, run_experiment

pytest.importorskip("transformers")

WORDS = "the market rose stocks fell investors said bank shares prices higher lower".split()


def _write_task(folder: Path, n_train: int = 120, n_valid: int = 10, n_test: int = 40) -> Path:
    """A BShift file of random word sequences: ``O`` lines as drawn, ``I`` lines end in
    the pair "fell rose" (something a sentence encoder can pick up)."""
    rng = np.random.default_rng(0)
    rows = []
    for split, count in (("tr", n_train), ("va", n_valid), ("te", n_test)):
        for index in range(count):
            words = list(rng.choice(WORDS, size=int(rng.integers(4, 9))))
            label = "IO"[index % 2]
            if label == "I":
                words += ["fell", "rose"]
            rows.append((split, label, " ".join(words)))
    write_senteval(folder / "probing" / "bigram_shift.txt", rows, "BShift")
    return folder / "probing"


def _experiment(folder: Path, representations: str, method: str, task: str = "BShift") -> Path:
    path = folder / "senteval.toml"
    path.write_text(
        f'[run]\nname = "se"\n[task]\ndataset = "senteval"\ntask = "{task}"\npath = "probing"\n'
        f"{representations}[method]\n{method}\n"
    )
    return path


CURVE = "epsilon = 0.5\nsizes = [20, 60, 108]\nprobe = []\nseeds = 1\nsteps = 60"


@pytest.mark.slow
def test_sentence_features_keep_the_files_split_and_pooling(tmp_path):
    folder = make_tiny_bert(tmp_path / "tiny-bert")
    _write_task(tmp_path)
    reps = (
        '[[representations]]\nname = "mean"\nkind = "transformer"\nlayer = 2\n'
        'model = "tiny-bert"\n'
        '[[representations]]\nname = "cls"\nkind = "transformer"\nlayer = 2\n'
        'model = "tiny-bert"\npooling = "cls"\n'
        '[[representations]]\nname = "glove"\nkind = "glove"\n'
    )
    experiment = load_experiment(_experiment(tmp_path, reps, CURVE))
    assert experiment.task.options["path"] == str((tmp_path / "probing").resolve())
    assert [rep.options.get("pooling") for rep in experiment.representations] == [
        "mean",
        "cls",
        None,
    ]
    data = prepare_data(experiment, cache_dir=tmp_path / "cache")
    task = read_senteval(tmp_path / "probing", "BShift")
    train, test = task.mask("tr"), task.mask("te")
    sentences = list(task.sentences)
    # atol 1e-3: the runner's batches pad differently (float32 attention); a row out of
    # order or from the wrong split would be off by O(1)
    for name, pooling in (("mean", "mean"), ("cls", "cls")):
        assert data[name].pool_size == 120 and len(data[name].y_test) == 40
        encoder = TransformerEncoder(folder, 2, pooling=pooling, progress=False)
        raw = encoder.encode(sentences)
        mean, std = raw[train].mean(0), raw[train].std(0)
        np.testing.assert_allclose(data[name].X_train, (raw[train] - mean) / std, atol=1e-3)
        np.testing.assert_allclose(data[name].X_test, (raw[test] - mean) / std, atol=1e-3)
        np.testing.assert_array_equal(data[name].y_test, task.label_ids[test])
    assert not np.allclose(data["mean"].X_train, data["cls"].X_train)
    glove = glove_6b_50d().sentence_means([s.split() for s in sentences])
    raw_mean, raw_std = glove[train].mean(0), glove[train].std(0)
    np.testing.assert_allclose(data["glove"].X_test, (glove[test] - raw_mean) / raw_std, atol=1e-4)
    assert data["glove"].classes == ("I", "O")


def test_senteval_files_and_poolings_are_checked(tmp_path):
    _write_task(tmp_path)
    reps = (
        '[[representations]]\nname = "w"\nkind = "transformer"\nlayer = 1\npooling = "words"\n'
        '[[representations]]\nname = "s"\nkind = "spacy"\n'
    )
    with pytest.raises(ExperimentError) as error:
        load_experiment(_experiment(tmp_path, reps, 'kind = "mdl"', task="Tense"))
    problems = "\n".join(error.value.problems)
    assert "task.path: SentEval file" in problems and "past_present.txt' does not exist" in problems
    assert "representations[0].pooling: 'words' is not a pooling of the senteval task" in problems
    assert "representations[1].kind: 'spacy' gives word vectors without a sentence" in problems
    assert "method.control: the control task maps word types" in problems
    (tmp_path / "probing" / "past_present.txt").write_text("tr\tpast\tit went\n")
    with pytest.raises(ExperimentError, match=r"past_present\.txt:1: Tense labels are"):
        glove = '[[representations]]\nname = "g"\nkind = "glove"\n'
        load_experiment(_experiment(tmp_path, glove, CURVE, task="Tense"))
    ptb = tmp_path / "ptb.toml"
    ptb.write_text(
        '[task]\ndataset = "ptb"\n[[representations]]\nname = "m"\nkind = "transformer"\n'
        f'layer = 1\npooling = "mean"\n[method]\n{CURVE}\n'
    )
    with pytest.raises(ExperimentError, match=r"'mean' is not a pooling of the ptb task"):
        load_experiment(ptb)


def test_ptb_unit_keys_are_unchanged_by_the_pooling_option():
    options = {"layer": 2, "model": "minilm", "random_init": False}
    before = Representation("m", "transformer", "words", options=options)
    now = Representation("m", "transformer", "words", options={**options, "pooling": "words"})
    last = Representation("m", "transformer", "words", options={**options, "pooling": "last"})
    assert now.key_dict() == before.key_dict()
    assert last.key_dict() == {**before.key_dict(), "pooling": "last"}


@pytest.mark.slow
def test_curve_and_mdl_runs_on_a_senteval_file(tmp_path):
    make_tiny_bert(tmp_path / "tiny-bert")
    _write_task(tmp_path)
    reps = (
        '[[representations]]\nname = "bert"\nkind = "transformer"\nlayer = [0, 2]\n'
        'model = "tiny-bert"\npooling = "last"\n'
    )
    run = run_experiment(
        load_experiment(_experiment(tmp_path, reps, CURVE)), tmp_path / "runs", progress=False
    )
    curves = [LossDataCurve.from_dict(result) for result in run.results]
    assert [curve.name for curve in curves] == ["bert-0", "bert-2"]
    # the pool less its development split (12 sentences) trains the probes
    assert all((curve.n_test, curve.pool_size) == (40, 108) for curve in curves)
    mdl = 'kind = "mdl"\ncontrol = false\nprobe = []\nseeds = 1\ntimesteps = [0.2, 0.5, 1.0]'
    path = _experiment(tmp_path, reps, mdl + "\nmax_epochs = 3")
    run = run_experiment(load_experiment(path), tmp_path / "runs", progress=False, fresh=True)
    entries = load_mdl_results(run.run_dir / "results.json")
    assert [entry.name for entry in entries] == ["bert-0", "bert-2"]
    for entry in entries:  # the pool's labels (tr lines only), two classes: 1 bit each
        assert 0 < entry.online.n <= 120 and entry.online.n_classes == 2
        assert entry.online.uniform_bits == pytest.approx(entry.online.n)
        assert entry.online.codelength_bits > 0
    task = json.loads((run.run_dir / "run.json").read_text())["experiment"]["task"]
    assert task["dataset"] == "senteval" and task["task"] == "BShift"


@pytest.mark.slow
def test_power_run_on_a_senteval_file(tmp_path):
    make_tiny_bert(tmp_path / "tiny-bert")
    _write_task(tmp_path)
    reps = (
        '[[representations]]\nname = "mean"\nkind = "transformer"\nlayer = 2\n'
        'model = "tiny-bert"\n'
        '[[representations]]\nname = "last"\nkind = "transformer"\nlayer = 2\n'
        'model = "tiny-bert"\npooling = "last"\n'
    )
    method = 'kind = "power"\nbaseline = "mean"\nper_class = [8, 32]\nseeds = 2\nsteps = 40'
    run = run_experiment(
        load_experiment(_experiment(tmp_path, reps, method)), tmp_path / "runs", progress=False
    )
    assert list(run.timings) == ["mean vs last"]
    assert "mean vs last" in run.table
