"""Contrast pairs on a texts task (``contrast_column``, ``pair``): the options checked before
anything is encoded, the pair's row made of both texts' features from one encoder pass (each
text templated and pooled as a plain text), the keys."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probemeter.datasets.texts import read_texts
from probemeter.runs.check import check_data
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data

pytest.importorskip("transformers")

TEMPLATE = "Claim: {text}\\nAnswer:"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from probemeter.encoders.tiny import tiny_decoder

    return tiny_decoder(tmp_path_factory.mktemp("models") / "llama")


def _write_pairs(folder: Path, n: int = 24) -> Path:
    rng = np.random.default_rng(1)
    words = "the cat sat on the mat dogs bark at night".split()
    rows = []
    for index in range(n):
        claim = " ".join(rng.choice(words, size=int(rng.integers(2, 7))))
        rows.append((f"{claim} yes", f"{claim} no", ("true", "false")[index % 2]))
    path = folder / "pairs.csv"
    pd.DataFrame(rows, columns=["claim", "negation", "truth"]).to_csv(path, index=False)
    return path


def _experiment(folder: Path, model: Path, task: str, pooling: str = "last") -> Path:
    path = folder / "pairs.toml"
    path.write_text(
        '[task]\ndataset = "texts"\npath = "pairs.csv"\ntext_column = "claim"\n'
        f'label_column = "truth"\ntemplate = "{TEMPLATE}"\n{task}'
        f'[[representations]]\nname = "llama"\nkind = "transformer"\nmodel = "{model}"\n'
        f'layer = 1\npooling = "{pooling}"\nbatch_size = 5\n'
        "[method]\nepsilon = 0.5\nsizes = [4, 8]\nprobe = []\nseeds = 1\nsteps = 5\n"
    )
    return path


@pytest.mark.parametrize("pooling", ["last", "mean"])
def test_a_pairs_row_is_made_of_both_texts_encoded_alone(tmp_path, model, pooling):
    from probemeter.encoders import TransformerEncoder
    from probemeter.encoders.hf import Prompt

    _write_pairs(tmp_path)
    texts = read_texts(
        tmp_path / "pairs.csv",
        text_column="claim",
        label_column="truth",
        contrast_column="negation",
    )
    # each text alone, no padding: templated, pooled as a plain text is
    start = len("Claim: ")
    prompts = [
        Prompt(f"Claim: {text}\nAnswer:", span=(start, start + len(text)))
        for text in texts.all_texts
    ]
    encoder = TransformerEncoder(
        model, 1, pooling=pooling, batch_size=1, keep_bos=False, progress=False
    )
    raw = encoder.encode(prompts if pooling == "mean" else [p.text for p in prompts])
    first, second = raw[: texts.n_rows], raw[texts.n_rows :]
    pool, test = texts.split(test_size=0.2, random_state=0)
    expected = {"difference": first - second, "concat": np.concatenate([first, second], 1)}
    for pair, rows in expected.items():
        task = f'contrast_column = "negation"\npair = "{pair}"\n'
        experiment = load_experiment(_experiment(tmp_path, model, task, pooling))
        check_data(experiment)
        data = prepare_data(experiment, progress=False)["llama"]
        mean, std = rows[pool].mean(0), rows[pool].std(0)
        np.testing.assert_allclose(data.X_train, (rows[pool] - mean) / std, atol=2e-3)
        np.testing.assert_allclose(data.X_test, (rows[test] - mean) / std, atol=2e-3)
        assert data.classes == ("false", "true")
        labels = np.array([label == "true" for label in texts.labels], dtype=np.int64)
        np.testing.assert_array_equal(data.y_train, labels[pool])
        np.testing.assert_array_equal(data.y_test, labels[test])
        key = experiment.task.key_dict()
        assert key["contrast_column"] == "negation" and key["pair"] == pair
    # plain texts: the pair options stay out of the key (keys of existing runs unchanged)
    plain = load_experiment(_experiment(tmp_path, model, ""))
    assert "pair" not in plain.task.key_dict() and "contrast_column" not in plain.task.key_dict()


@pytest.mark.parametrize(
    ("task", "pooling", "message"),
    [
        (
            'pair = "difference"\n',
            "last",
            "task.pair: 'difference' pairs texts; give contrast_column",
        ),
        (
            'contrast_column = "negation"\n',
            "last",
            "task.contrast_column: 'negation' makes contrast pairs: give pair",
        ),
        ('contrast_column = "negation"\npair = "sum"\n', "last", "task.pair: must be one of"),
        ('contrast_column = "claim"\npair = "concat"\n', "last", "is the text_column"),
        (
            'contrast_column = "negation"\npair = "concat"\n',
            "all",
            "representations[0].pooling: 'all' reads a text's rows of tokens; a contrast pair",
        ),
        (
            'contrast_column = "negation"\npair = "difference"\n',
            "attention",
            "representations[0].pooling: 'attention' reads a text's rows of tokens",
        ),
    ],
)
def test_pair_options_are_refused_with_one_line_before_encoding(
    tmp_path, model, task, pooling, message
):
    _write_pairs(tmp_path)
    with pytest.raises(ExperimentError, match=re.escape(message)):
        load_experiment(_experiment(tmp_path, model, task, pooling))


@pytest.mark.parametrize(
    "task",
    ["", 'contrast_column = "negation"\npair = "difference"\n'],
)
def test_ccs_needs_pairs_side_by_side_before_encoding(tmp_path, model, task):
    _write_pairs(tmp_path)
    path = _experiment(tmp_path, model, task)
    path.write_text(path.read_text().replace("batch_size = 5\n", 'directions = ["ccs"]\n'))
    with pytest.raises(
        ExperimentError,
        match=re.escape("representations[0].directions: 'ccs' reads contrast pairs side by side"),
    ):
        load_experiment(path)
    path.write_text(path.read_text().replace('"ccs"', '"diff-means"'))
    assert [rep.name for rep in load_experiment(path).representations] == [
        "llama",
        "llama-diff-means",
    ]


def test_a_missing_or_empty_contrast_column_is_named_by_check(tmp_path, model):
    path = _write_pairs(tmp_path)
    experiment = _experiment(tmp_path, model, 'contrast_column = "negated"\npair = "concat"\n')
    with pytest.raises(ExperimentError, match=r"no column 'negated' \(contrast_column\)"):
        check_data(load_experiment(experiment))
    frame = pd.read_csv(path)
    frame.loc[4, "negation"] = ""
    frame.to_csv(path, index=False)
    experiment = _experiment(tmp_path, model, 'contrast_column = "negation"\npair = "concat"\n')
    with pytest.raises(ExperimentError, match="row 5: empty text in column 'negation'"):
        check_data(load_experiment(experiment))


GOOD = ("good", "bad")


def _write_planted_pairs(folder: Path, n: int = 60) -> Path:
    """Pairs whose true member says "good" and whose false member says "bad" (or the reverse):
    a direction in the model's activations (the last token's) that flips between the true and
    the false member, on contents shared by both."""
    rng = np.random.default_rng(2)
    words = "the cat sat on the mat dogs bark at night".split()
    rows = []
    for index in range(n):
        content = " ".join(rng.choice(words, size=int(rng.integers(2, 6))))
        truth = index % 2  # 1: the statement is the true member
        said = GOOD if truth else GOOD[::-1]
        rows.append((f"{said[0]} {content}", f"{said[1]} {content}", truth))
    path = folder / "pairs.csv"
    pd.DataFrame(rows, columns=["claim", "negation", "truth"]).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_probemeter_run_measures_a_probe_diff_means_and_ccs_on_planted_pairs(tmp_path, model):
    """The done criterion: a supervised probe, a difference-in-means direction and CCS side
    by side on one pair task, with their curves and every seed's CCS accuracy."""
    import json

    from probemeter.cli.main import main

    _write_planted_pairs(tmp_path)
    path = tmp_path / "pairs.toml"
    path.write_text(
        '[run]\nname = "pairs"\n[task]\ndataset = "texts"\npath = "pairs.csv"\n'
        'text_column = "claim"\ncontrast_column = "negation"\npair = "concat"\n'
        'label_column = "truth"\n'
        f'[[representations]]\nname = "llama"\nkind = "transformer"\nmodel = "{model}"\n'
        'layer = 2\ndirections = ["diff-means", "ccs"]\n'
        "[method]\nepsilon = 0.5\nsizes = [8, 16, 40]\nprobe = []\nseeds = 3\nsteps = 200\n"
        "lr = 0.01\n"
    )
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    results = json.loads((out / "pairs" / "results.json").read_text())
    curves = {curve["name"]: curve for curve in results["curves"]}
    assert set(curves) == {"llama", "llama-diff-means", "llama-ccs"}
    for name, curve in curves.items():
        points = pd.DataFrame(curve["points"])
        assert sorted(points["n"].unique()) == [8, 16, 40], name
        assert sorted(points["seed"].unique()) == [0, 1, 2], name
    # the contrast removes the shared contents, which the difference in means reads as noise
    ccs = pd.DataFrame(curves["llama-ccs"]["points"])
    final = ccs[ccs["n"] == 40]
    assert len(final) == 3  # every seed's test accuracy, not only a mean
    assert (final["accuracy"] >= 0.9).sum() >= 2, final
    probe = pd.DataFrame(curves["llama"]["points"])
    assert probe[probe["n"] == 40]["accuracy"].mean() >= 0.9
