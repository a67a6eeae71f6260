"""Bad input whose message named the wrong thing or nothing (issue 30, items 10 and 12): each
case ends in exit status 2 and one line that names the file, and where it matters the line,
sentence, word and key — before any probe is trained (the helpers of the bad-input matrix,
``test_bad_inputs``, are reused)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import test_bad_inputs as matrix

from probemeter.cli.main import main

TINY, _one_line_error = matrix.TINY, matrix._one_line_error
files, no_training = matrix.files, matrix.no_training  # the matrix's fixtures

pytest.importorskip("conllu", reason="conllu not installed (optional extra 'text')")


def _row(*fields: object) -> str:
    return "\t".join(str(field) for field in fields)


#: a good sentence, then one whose words 2 and 3 head each other (lines 4-6)
CYCLE = "\n".join(
    [
        _row(1, "dogs", "dog", "NOUN", "_", "_", 2, "nsubj", "_", "_"),
        _row(2, "bark", "bark", "VERB", "_", "_", 0, "root", "_", "_"),
        "",
        _row(1, "cats", "cat", "NOUN", "_", "_", 0, "root", "_", "_"),
        _row(2, "see", "see", "VERB", "_", "_", 3, "dep", "_", "_"),
        _row(3, "it", "it", "PRON", "_", "_", 2, "obj", "_", "_"),
        "",
        "",
    ]
)
GOOD = CYCLE.replace("\t3\tdep", "\t1\tdep")


def _conllu_experiment(folder: Path, label: str, train: str, test: str) -> Path:
    """A conllu task of ``label`` on ``train``/``test`` under ``folder``, GloVe words (the files
    are refused before any word is encoded, so GloVe is never loaded); head selection (arcs)
    with structural probes, other labels with a curve."""
    path = folder / f"conllu-{label}.toml"
    method = (
        "kind = 'structural'"
        if label == "arcs"
        else "kind = 'curve'\nepsilon = 0.5\nsizes = [1, 2]\nsteps = 5\nseeds = 1"
    )
    path.write_text(
        f"[task]\ndataset = 'conllu'\ntrain = '{train}'\ntest = '{test}'\nlabel = '{label}'\n"
        f"[[representations]]\nname = 'g'\nkind = 'glove'\n[method]\n{method}\n"
    )
    return path


def _run(path: Path, folder: Path) -> list[str]:
    return ["run", str(path), "--out", str(folder / "runs"), "--n-jobs", "1", "--no-progress"]


@pytest.mark.parametrize("label", ["deprel-arcs", "arcs", "deprel"])
def test_heads_that_form_no_tree_are_refused_naming_file_line_sentence_word(
    label, files, no_training, capsys
):
    (files / "good.conllu").write_text(GOOD)
    (files / "cycle.conllu").write_text(CYCLE)
    path = _conllu_experiment(files, label, "good.conllu", "cycle.conllu")
    assert main(_run(path, files)) == 2
    err = _one_line_error(capsys, "cycle.conllu' line 5 (sentence 2, word 2): the HEAD field")
    assert err.endswith("the heads of words 2 → 3 → 2 form a cycle, which never reaches the root")


def test_a_field_that_cannot_be_parsed_is_named_with_its_line(files, no_training, capsys):
    (files / "good.conllu").write_text(GOOD)
    (files / "x.conllu").write_text(GOOD.replace("\t2\tnsubj", "\tx\tnsubj"))
    path = _conllu_experiment(files, "upos", "good.conllu", "x.conllu")
    assert main(_run(path, files)) == 2
    _one_line_error(
        capsys,
        "x.conllu' line 1 (sentence 1): the HEAD field (column 7) is 'x', not a word number "
        "(0 for the root)",
    )


def test_a_byte_order_mark_is_accepted_and_named_inside_a_file(files, no_training, capsys):
    # the train file opens with a mark (read past); the test file's second sentence holds one
    (files / "marked.conllu").write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    joined = GOOD.replace("\n\n1\tcats", "\n\n\ufeff1\tcats")
    (files / "joined.conllu").write_text(joined, encoding="utf-8")
    path = _conllu_experiment(files, "upos", "marked.conllu", "joined.conllu")
    assert main(_run(path, files)) == 2
    _one_line_error(
        capsys,
        "joined.conllu' line 4 (sentence 2): the ID field (column 1) is '\\ufeff1', not a word "
        "number (1, 2, …), a range (1-2) or an empty node (1.1) (it holds a byte-order mark, "
        "U+FEFF",
    )


def test_nan_in_the_second_train_file_is_named(files, no_training, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    X[5, 2] = np.nan
    np.savez(files / "nan.npz", X=X, y=(X[:, 0] > 0).astype(np.int64))
    argv = ["curve", "--train", str(files / "ok.npz"), "--train", str(files / "nan.npz")]
    assert main([*argv, "--out", str(files / "out"), *TINY]) == 2
    _one_line_error(
        capsys, "nan.npz': X contains NaN or inf in 1 row(s), the first at row 5 (counting from 0)"
    )


def test_a_sparse_train_file_whose_indices_exceed_its_shape_is_blamed(files, capsys):
    matrix = sp.random(60, 10, density=0.3, format="csr", random_state=0, dtype=np.float32)
    y = np.arange(60) % 2
    sp.save_npz(files / "test.npz", matrix)
    np.save(files / "test.labels.npy", y)
    stored = dict(np.load(files / "test.npz"))
    np.savez(files / "train.npz", **{**stored, "shape": np.asarray([60, 5])})  # says 5 features
    np.save(files / "train.labels.npy", y)
    path = files / "sparse.toml"
    path.write_text(
        "[[representations]]\nname = 's'\nkind = 'npz'\ntrain = 'train.npz'\n"
        "test = 'test.npz'\n[method]\nkind = 'curve'\nepsilon = 0.5\nsizes = [10, 40]\n"
    )
    assert main(["run", str(path), "--check"]) == 2
    err = _one_line_error(capsys, "representations[0].train: ")
    assert "train.npz' (array 'indices') has indices outside 0..4" in err
    assert "representations[0].test" not in err


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder written by `probemeter curve`, trained once for the module's tests."""
    folder = matrix.write_files(tmp_path_factory.mktemp("trained"))
    argv = ["curve", "--train", str(folder / "ok.npz"), "--out", str(folder / "run"), *TINY]
    assert main([*argv, "--epsilon", "0.5"]) == 0
    return folder / "run"


@pytest.fixture
def damaged(trained: Path, files: Path) -> Path:
    """A copy of the trained results folder, to be damaged by each test."""
    return Path(shutil.copytree(trained, files / "run"))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            lambda curve: curve["points"]["loss"].__setitem__(0, "0.5"),
            "is damaged: curves[0].points.loss[0] is '0.5', not a number",
        ),
        (
            lambda curve: curve["points"].__setitem__("n", curve["points"]["n"][:3]),
            "is damaged: curves[0].points has columns of different lengths (n 3, seed ",
        ),
        (
            lambda curve: curve.__setitem__("n_classes", "two"),
            "is damaged: curves[0].n_classes is 'two', not a positive integer",
        ),
    ],
)
@pytest.mark.parametrize("command", ["measures", "report"])
def test_a_damaged_results_file_names_the_key(damaged, damage, message, command, capsys):
    path = damaged / "results.json"
    payload = json.loads(path.read_text())
    damage(payload["curves"][0])
    path.write_text(json.dumps(payload))
    assert main([command, str(damaged)]) == 2
    _one_line_error(capsys, f"results file '{path}' {message}")


def test_a_results_file_with_a_byte_order_mark_is_read(damaged, capsys):
    path = damaged / "results.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert main(["measures", str(damaged)]) == 0
    assert "SDL" in capsys.readouterr().out


def test_measures_names_an_mdl_folder_and_the_command_that_reads_it(files, capsys):
    run = files / "mdl-run"  # a run folder of `probemeter run` with kind = "mdl"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"method": "mdl", "figure": "mdl.png"}))
    (run / "results.json").write_text(json.dumps({"schema": "probemeter.mdl/1", "entries": []}))
    for target in (run, run / "results.json"):
        assert main(["measures", str(target), "--epsilon", "0.1"]) == 2
        _one_line_error(
            capsys, f"'{run}' is the folder of a run of method 'mdl' (its run.json says so)"
        )
    (files / "folder" / "results.json").write_text(json.dumps({"schema": "probemeter.mdl/1"}))
    assert main(["measures", str(files / "folder"), "--epsilon", "0.1"]) == 2
    _one_line_error(capsys, "holds no loss-data curves: its schema is 'probemeter.mdl/1'")
    codes = files / "mdl-out"  # what `probemeter mdl --out` writes
    codes.mkdir()
    (codes / "mdl.json").write_text("{}")
    for command in (["measures", str(codes), "--epsilon", "0.1"], ["report", str(codes)]):
        assert main(command) == 2
        _one_line_error(capsys, f"'{codes}' is the folder of `probemeter mdl` (mdl.json)")


@pytest.mark.parametrize("command", ["mdl", "run"])
def test_an_existing_file_as_out_is_bad_input_for_every_command(
    command, files, no_training, capsys
):
    """`--out FILE` is the same mistake for every command: a flag naming a file where a folder
    is needed (status 2, bad input); only a path *under* a file is the file system refusing
    (status 3)."""
    if command == "mdl":
        argv = ["mdl", str(files / "ok.npz"), "--n-jobs", "1", "--no-progress"]
    else:
        path = files / "e.toml"
        path.write_text(
            "[[representations]]\nname = 'a'\nkind = 'npz'\ntrain = 'ok.npz'\ntest = 'ok.npz'\n"
            "[method]\nkind = 'curve'\nepsilon = 0.5\nsizes = [10, 40]\nsteps = 5\nseeds = 1\n"
        )
        argv = ["run", str(path), "--n-jobs", "1", "--no-progress"]
    assert main([*argv, "--out", str(files / "ok.npz")]) == 2
    _one_line_error(capsys, f"--out '{files / 'ok.npz'}' is a file; give a folder")
