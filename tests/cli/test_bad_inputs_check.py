"""``probemeter run FILE --check`` looks inside the data: each case here is a tiny experiment
whose run refuses to start within a second, for a problem in a data file or a run-time flag,
and whose ``--check`` once said "experiment file OK". Now ``--check`` refuses it: exit status 2,
one line on stderr naming the problem, no "OK", no word encoded and no probe trained.

The cases: malformed CoNLL-U, SentEval and edge-probing lines; a sparse feature file whose
``indptr`` is out of order; NaN in a feature file; labels of a single class (in a feature file,
in a treebank's pool); string labels without ``labels = "encode"``; ``label = "feats:<Name>"``
where no word carries the feature; ``--n-jobs 0``; ``--save-probes`` on sparse features; a
probe that cannot fit the memory budget (149 GiB); sizes beyond a treebank's pool; and a TOML
syntax error, named with its file and line and explained.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import probemeter.runs.kinds.words as kinds
import probemeter.training.engine as engine
from probemeter.cli.main import main

#: a transformer representation of the text tasks: MiniLM's embeddings (never encoded here)
WORDS = '[[representations]]\nname = "minilm"\nkind = "transformer"\nlayer = 0\n'
#: the good treebank as train and test split
TREEBANK = 'dataset = "conllu"\ntrain = "ok.conllu"\ntest = "ok.conllu"'
#: a quick curve; its sizes fit the pools of the files below (6 to 60 rows)
CURVE = '[method]\nkind = "curve"\nepsilon = 0.5\nsizes = [2, 4]\nsteps = 5\nseeds = 1\n'


def _npz(train: str, extra: str = "", method: str = CURVE, test: str | None = None) -> str:
    return (
        f'[[representations]]\nname = "a"\nkind = "npz"\ntrain = "{train}"\n'
        f'test = "{test or train}"\n{extra}\n{method}'
    )


def _task(task: str) -> str:
    return f"[task]\n{task}\n{WORDS}{CURVE}"


def _conllu(head_of_cat: str = "0", cat: str = "NOUN") -> str:
    """Six sentences "the cat sat" (DET, NOUN, VERB; FEATS Definite, Number, Tense), the
    fourth with ``head_of_cat`` as the head of "cat" (the root)."""
    blocks = []
    for index in range(6):
        head = head_of_cat if index == 3 else "0"
        blocks.append(
            "1\tthe\tthe\tDET\t_\tDefinite=Def\t2\tdet\t_\t_\n"
            f"2\tcat\tcat\t{cat}\t_\tNumber=Sing\t{head}\troot\t_\t_\n"
            "3\tsat\tsat\tVERB\t_\tTense=Past\t2\tdep\t_\t_\n"
        )
    return "\n".join(blocks) + "\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Good and broken data files of every kind an experiment reads."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    np.savez(tmp_path / "ok.npz", X=X, y=y)
    with_nan = X.copy()
    with_nan[5, 2] = np.nan
    np.savez(tmp_path / "nan.npz", X=with_nan, y=y)
    np.savez(tmp_path / "one_class.npz", X=X, y=np.zeros(60, dtype=np.int64))
    np.savez(tmp_path / "tags.npz", X=X, y=np.where(y == 1, "NOUN", "VERB"))
    codes = sp.random(60, 8, density=0.3, format="csr", random_state=0, dtype=np.float32)
    sp.save_npz(tmp_path / "sparse.npz", codes)
    np.save(tmp_path / "sparse.labels.npy", y)
    with np.load(tmp_path / "sparse.npz") as archive:
        arrays = dict(archive)
    arrays["indptr"] = arrays["indptr"][::-1].copy()  # decreasing: rows out of order
    np.savez(tmp_path / "indptr.npz", **arrays)
    np.save(tmp_path / "indptr.labels.npy", y)
    (tmp_path / "ok.conllu").write_text(_conllu())
    (tmp_path / "bad_head.conllu").write_text(_conllu(head_of_cat="x"))
    # every word of the training file a NOUN: a pool of one class for label "upos"
    (tmp_path / "nouns.conllu").write_text(
        _conllu().replace("\tDET\t", "\tNOUN\t").replace("\tVERB\t", "\tNOUN\t")
    )
    lines = [f"{'tr' if i < 8 else 'te'}\t{'PAST' if i % 2 else 'PRES'}\ta cat" for i in range(12)]
    (tmp_path / "ok.txt").write_text("\n".join(lines) + "\n")
    lines[4] = "tr\tPAST"  # line 5: two fields
    (tmp_path / "two_fields.txt").write_text("\n".join(lines) + "\n")
    records = [
        json.dumps({"text": "the cat sat", "targets": [{"span1": [0, 2], "label": "AB"[i % 2]}]})
        for i in range(6)
    ]
    (tmp_path / "ok.json").write_text("\n".join(records) + "\n")
    (tmp_path / "not_json.json").write_text("\n".join([*records[:2], "{not json", *records]))
    beyond = json.dumps({"text": "the cat sat", "targets": [{"span1": [1, 7], "label": "A"}]})
    (tmp_path / "span.json").write_text("\n".join([*records, beyond]) + "\n")
    return tmp_path


#: name -> (experiment file, extra flags of `probemeter run`, words the one line must hold)
CASES = {
    "conllu: a head that is no number": (
        _task('dataset = "conllu"\ntrain = "bad_head.conllu"\ntest = "ok.conllu"'),
        [],
        ["task", "bad_head.conllu"],
    ),
    "conllu: a pool of one class": (
        _task('dataset = "conllu"\ntrain = "nouns.conllu"\ntest = "nouns.conllu"'),
        [],
        ["task", "single class"],
    ),
    "conllu: a feature no word carries": (
        _task(TREEBANK + '\nlabel = "feats:Nonexistent"'),
        [],
        ["feats:Nonexistent", "no word", "Definite, Number, Tense"],
    ),
    "conllu: sizes beyond the pool": (
        _task(TREEBANK).replace("sizes = [2, 4]", "sizes = [2, 100]"),
        [],
        ["method.sizes", "100", "18 rows"],
    ),
    "senteval: a line of two fields": (
        _task('dataset = "senteval"\ntask = "Tense"\npath = "two_fields.txt"'),
        [],
        ["task", "two_fields.txt:5"],
    ),
    "edge probing: a line that is not JSON": (
        _task('dataset = "edge-probing"\ntrain = "not_json.json"\ntest = "ok.json"'),
        [],
        ["task", "not_json.json:3"],
    ),
    "edge probing: a span beyond its sentence": (
        _task('dataset = "edge-probing"\ntrain = "ok.json"\ntest = "span.json"'),
        [],
        ["task", "span.json:7"],
    ),
    "npz: sparse indptr out of order": (
        _npz("indptr.npz", test="sparse.npz"),
        [],
        ["representations[0]", "indptr.npz", "'indptr'"],
    ),
    "npz: NaN in the features": (_npz("nan.npz"), [], ["representations[0]", "NaN", "row 5"]),
    "npz: a single class": (_npz("one_class.npz"), [], ["representations[0]", "single class"]),
    "npz: string labels without encode": (_npz("tags.npz"), [], ["labels='encode'", "<U4"]),
    "--n-jobs 0": (_npz("ok.npz"), ["--n-jobs", "0"], ["--n-jobs must be a non-zero integer"]),
    "--save-probes on sparse features": (
        _npz("sparse.npz"),
        ["--save-probes"],
        ["--save-probes: representation 'a' has sparse features", "leave out --save-probes"],
    ),
    "a probe of 149 GiB": (
        _npz("ok.npz", method=CURVE + "probe = [100000, 100000]\n"),
        [],
        ["max_memory=2 GiB cannot hold even one", "149 GiB"],
    ),
    "TOML: a key given twice": (
        _npz("ok.npz", method=CURVE + "steps = 10\n"),
        [],
        ["line 13, column 11: not valid TOML: a key is given twice", "Cannot overwrite a value"],
    ),
}


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a word is encoded or the engine starts planning probes."""

    def started(*args, **kwargs):
        raise AssertionError("--check encoded words or trained probes")

    monkeypatch.setattr(engine, "_plan_chunks", started)
    monkeypatch.setattr(kinds, "_layer_features", started)


@pytest.mark.parametrize("case", list(CASES))
def test_check_refuses_what_the_run_would_refuse(case, folder, nothing_runs, capsys):
    text, flags, words = CASES[case]
    path = folder / "experiment.toml"
    path.write_text(text)
    assert main(["run", str(path), "--check", *flags]) == 2
    out, err = capsys.readouterr()
    assert "experiment file OK" not in out
    line = err.strip()
    assert line.startswith("probemeter: error: ") and "\n" not in line, err
    assert "Traceback" not in line
    named = "--n-jobs" in flags  # a flag is refused before the file is read
    assert named or line.startswith(f"probemeter: error: {path}: "), line
    for word in words:
        assert word in line, (word, line)


@pytest.mark.parametrize(
    "text",
    [
        _npz("ok.npz"),
        _npz("sparse.npz"),
        _npz("tags.npz", extra='labels = "encode"'),
        _task(TREEBANK),
        _task(TREEBANK + '\nlabel = "feats:Number"'),
        _task('dataset = "senteval"\ntask = "Tense"\npath = "ok.txt"'),
        _task('dataset = "edge-probing"\ntrain = "ok.json"\ntest = "ok.json"'),
    ],
)
def test_check_passes_good_data(text, folder, nothing_runs, capsys):
    """The good files of the same tasks pass, with the same flags (one worker)."""
    path = folder / "experiment.toml"
    path.write_text(text)
    assert main(["run", str(path), "--check", "--n-jobs", "1"]) == 0
    assert "experiment file OK" in capsys.readouterr().out


def test_the_run_refuses_what_check_refuses_with_the_same_line(folder, capsys):
    """``--check`` and the run report a data problem alike (the run's own checks)."""
    path = folder / "experiment.toml"
    path.write_text(_npz("one_class.npz"))
    assert main(["run", str(path), "--check"]) == 2
    checked = capsys.readouterr().err
    out = ["--out", str(folder / "runs"), "--n-jobs", "1", "--no-progress"]
    assert main(["run", str(path), *out]) == 2
    assert capsys.readouterr().err == checked


@pytest.mark.parametrize(
    ("out", "status", "words"),
    [
        ("ok.npz", 2, "--out '{d}/ok.npz' is a file; give a folder"),
        ("ok.npz/sub", 3, "'{d}/ok.npz/sub': Not a directory"),
    ],
    ids=["a file", "under a file"],
)
@pytest.mark.parametrize("check", [True, False], ids=["--check", "run"])
def test_out_is_refused_as_every_command_refuses_it(
    out, status, words, check, folder, nothing_runs, capsys
):
    """``--out`` a file: exit status 2, as ``curve`` and ``mdl`` (the run said 3); under a file:
    3, a file-system error; ``--check`` says so too, and creates nothing."""
    path = folder / "experiment.toml"
    path.write_text(_npz("ok.npz"))
    flags = ["--check"] if check else ["--n-jobs", "1", "--no-progress"]
    assert main(["run", str(path), "--out", str(folder / out), *flags]) == status
    out_, err = capsys.readouterr()
    assert "experiment file OK" not in out_
    assert err.startswith("probemeter: error: ") and err.count("\n") == 1, err
    assert words.format(d=folder) in err


def test_a_missing_template_is_refused_before_the_run(folder, nothing_runs, capsys):
    """``--template`` is read when the report is written, after the run: a missing one is
    refused first (by ``--check`` too)."""
    path = folder / "experiment.toml"
    path.write_text(_npz("ok.npz"))
    for flags in (["--check"], ["--out", str(folder / "runs"), "--n-jobs", "1"]):
        assert main(["run", str(path), "--template", str(folder / "none.j2"), *flags]) == 2
        line = f"probemeter: error: --template '{folder / 'none.j2'}' is no file\n"
        assert capsys.readouterr().err == line
    assert not (folder / "runs").exists()
