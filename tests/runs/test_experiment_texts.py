"""Experiment files on a table of labelled texts (``dataset = "texts"``): the reader, ``--check``,
the data a decoder's last token gives (whatever side its tokenizer pads), the template, and a
run through ``probemeter run``."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_models import make_tiny_gpt2
from tokenizers import processors

from probemeter.cli.main import main
from probemeter.datasets.texts import read_texts
from probemeter.encoders.hf import Prompt
from probemeter.runs.check import check_data
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data

pytest.importorskip("transformers")

TEMPLATE = "Review: {text}\\nSentiment:"
GOOD = "the cat sat on the mat near the river bank".split()
BAD = "dogs bark at night about distant old stars".split()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 twice: its tokenizer padding on the right, and a copy padding on the left
    (as decoder models' tokenizers often do)."""
    import transformers

    folder = tmp_path_factory.mktemp("models")
    make_tiny_gpt2(folder / "gpt2-right")
    shutil.copytree(folder / "gpt2-right", folder / "gpt2-left")
    # padding_side as a keyword of the load: then it is saved to tokenizer_config.json
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        folder / "gpt2-left", padding_side="left"
    )
    tokenizer.save_pretrained(folder / "gpt2-left")
    assert transformers.AutoTokenizer.from_pretrained(folder / "gpt2-left").padding_side == "left"
    # and a copy whose tokenizer begins every text with a BOS token, as Llama-like ones do
    shutil.copytree(folder / "gpt2-right", folder / "gpt2-bos")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder / "gpt2-bos")
    bos = tokenizer.bos_token
    tokenizer._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", special_tokens=[(bos, tokenizer.bos_token_id)]
    )
    tokenizer.save_pretrained(folder / "gpt2-bos")
    return folder


def _write_texts(folder: Path, n: int = 40) -> Path:
    """Texts of random lengths (so that batches pad), their label the words they are drawn
    from."""
    rng = np.random.default_rng(0)
    rows = []
    for index in range(n):
        label = ("pos", "neg")[index % 2]
        words = rng.choice(GOOD if label == "pos" else BAD, size=int(rng.integers(2, 9)))
        rows.append((" ".join(words), label))
    path = folder / "reviews.csv"
    pd.DataFrame(rows, columns=["review", "stars"]).to_csv(path, index=False)
    return path


def _experiment(folder: Path, models: Path, task: str = "", method: str = "") -> Path:
    reps = "".join(
        f'[[representations]]\nname = "{side}"\nkind = "transformer"\nlayer = 2\n'
        f'model = "{models / f"gpt2-{side}"}"\nbatch_size = 8\n'
        for side in ("right", "left")
    )
    path = folder / "texts.toml"
    path.write_text(
        '[run]\nname = "texts"\n[task]\ndataset = "texts"\npath = "reviews.csv"\n'
        f'text_column = "review"\nlabel_column = "stars"\ntemplate = "{TEMPLATE}"\n{task}'
        f"{reps}[method]\n"
        + (method or "epsilon = 0.5\nsizes = [8, 16, 28]\nprobe = []\nseeds = 1\nsteps = 30\n")
    )
    return path


def test_the_last_token_of_the_templated_text_whatever_the_padding_side(tmp_path, models):
    from probemeter.encoders import TransformerEncoder

    _write_texts(tmp_path)
    experiment = load_experiment(_experiment(tmp_path, models))
    assert experiment.task.options["path"] == str((tmp_path / "reviews.csv").resolve())
    assert [rep.options["pooling"] for rep in experiment.representations] == ["last", "last"]
    check_data(experiment)  # --check: reads the file whole, builds the split
    data = prepare_data(experiment, progress=False)
    # the encoder pads on the right whatever the tokenizer was saved with
    np.testing.assert_array_equal(data["left"].X_train, data["right"].X_train)
    np.testing.assert_array_equal(data["left"].X_test, data["right"].X_test)

    texts = read_texts(tmp_path / "reviews.csv", text_column="review", label_column="stars")
    pool, test = texts.split(test_size=0.2, random_state=experiment.run.random_state)
    assert data["right"].classes == ("neg", "pos")
    y = np.array([texts.labels[row] == "pos" for row in range(texts.n_rows)], dtype=np.int64)
    np.testing.assert_array_equal(data["right"].y_train, y[pool])
    np.testing.assert_array_equal(data["right"].y_test, y[test])

    # each templated text alone (no padding at all): its last token
    templated = [f"Review: {text}\nSentiment:" for text in texts.texts]
    encoder = TransformerEncoder(
        models / "gpt2-left", 2, pooling="last", batch_size=1, progress=False
    )
    assert encoder.tokenizer.padding_side == "right"
    raw = encoder.encode(templated)
    mean, std = raw[pool].mean(0), raw[pool].std(0)
    np.testing.assert_allclose(data["right"].X_train, (raw[pool] - mean) / std, atol=1e-3)
    np.testing.assert_allclose(data["right"].X_test, (raw[test] - mean) / std, atol=1e-3)
    # without the template the last token is the text's own: other features
    plain = encoder.encode(list(texts.texts))
    assert not np.allclose(
        (plain[pool] - plain[pool].mean(0)) / plain[pool].std(0), data["right"].X_train, atol=1e-2
    )


def test_the_default_pooling_suits_the_model(tmp_path, models):
    """On texts, a decoder's default pooling is "last"; an encoder's (BERT-like) is "mean":
    its last real token is [SEP], the same token closing every text, which "last" used to
    read. An explicit pooling is kept; a Hub model whose config is not at hand must name one."""
    from tiny_models import make_tiny_bert

    from probemeter.encoders import TransformerEncoder

    bert = make_tiny_bert(tmp_path / "bert")
    _write_texts(tmp_path)
    path = _experiment(tmp_path, models)
    text = path.read_text().replace(str(models / "gpt2-left"), str(bert))
    path.write_text(text)
    decoder, encoder = load_experiment(path).representations
    assert decoder.key_dict()["pooling"] == "last" and encoder.key_dict()["pooling"] == "mean"
    data = prepare_data(load_experiment(path), progress=False)["left"]
    texts = read_texts(tmp_path / "reviews.csv", text_column="review", label_column="stars")
    pool, test = texts.split(test_size=0.2, random_state=0)
    templated = [f"Review: {t}\nSentiment:" for t in texts.texts]
    start = len("Review: ")
    prompts = [Prompt(t, span=(start, start + len(o))) for t, o in zip(templated, texts.texts)]
    raw = TransformerEncoder(bert, 2, pooling="mean", progress=False).encode(prompts)
    mean, std = raw[pool].mean(0), raw[pool].std(0)
    np.testing.assert_allclose(data.X_train, (raw[pool] - mean) / std, atol=1e-3)
    np.testing.assert_allclose(data.X_test, (raw[test] - mean) / std, atol=1e-3)
    # what "last" read on the encoder: [SEP], whatever the text
    last = TransformerEncoder(bert, 2, pooling="last", progress=False)
    ids = last.tokenizer(templated[:3])["input_ids"]
    assert {row[-1] for row in ids} == {last.tokenizer.sep_token_id}

    path.write_text(text.replace("batch_size = 8", 'batch_size = 8\npooling = "last"'))
    assert [r.options["pooling"] for r in load_experiment(path).representations] == ["last"] * 2
    path.write_text(text.replace(str(bert), "nobody-here/no-such-model"))
    with pytest.raises(
        ExperimentError,
        match=r"representations\[1\].pooling: the default "
        r'depends on the model \(decoders "last", encoders "mean"\), and the '
        r"config of 'nobody-here/no-such-model' is not at hand: give pooling",
    ):
        load_experiment(path)


def test_last_and_mean_pool_the_real_tokens_of_a_left_padded_batch(models):
    """The attention mask says which tokens are padding on either side: "last" takes a
    sentence's last real token, "mean" averages its real tokens only."""
    import torch

    from probemeter.encoders import TransformerEncoder

    hidden = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(1, 2, 4, 3)
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])  # the first sentence padded on the left
    for pooling, expected in (
        ("last", hidden[0, [0, 1], [3, 3]]),
        ("mean", torch.stack([hidden[0, 0, 2:].mean(0), hidden[0, 1].mean(0)])),
    ):
        encoder = TransformerEncoder(models / "gpt2-left", 1, pooling=pooling, progress=False)
        pooled = encoder._pool(hidden, {"attention_mask": mask}, ["a", "b"], [0, 1])
        torch.testing.assert_close(pooled[0], expected)


def test_mean_leaves_out_the_bos_token_on_texts_unless_kept(tmp_path, models):
    """A tokenizer that adds a BOS token: on a texts task "mean" averages the text's tokens
    only (``bos = "drop"``, the task's default), with ``bos = "keep"`` the BOS too; "last"
    reads the last real token either way."""
    import torch
    import transformers

    from probemeter.encoders import TransformerEncoder

    folder = models / "gpt2-bos"
    texts = ["dogs bark", "the cat sat on the mat near the river bank", "night falls"]
    model = transformers.AutoModel.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    states = []
    for text in texts:
        ids = tokenizer(text, return_tensors="pt").input_ids
        assert ids[0, 0] == tokenizer.bos_token_id
        with torch.no_grad():
            states.append(model(ids, output_hidden_states=True).hidden_states[2][0].numpy())
    for keep_bos, first in ((True, 0), (False, 1)):
        encoder = TransformerEncoder(
            folder, 2, pooling="mean", keep_bos=keep_bos, batch_size=2, progress=False
        )
        expected = np.stack([state[first:].mean(0) for state in states])
        np.testing.assert_allclose(encoder.encode(texts), expected, atol=1e-5)
    assert "keep_bos" not in TransformerEncoder(folder, 2, progress=False).cache_key
    last = TransformerEncoder(folder, 2, pooling="last", keep_bos=False, progress=False)
    np.testing.assert_allclose(last.encode(texts), [s[-1] for s in states], atol=1e-5)

    _write_texts(tmp_path)
    path = _experiment(tmp_path, models)
    text = (
        path.read_text()
        .replace("gpt2-left", "gpt2-bos")
        .replace("batch_size = 8", 'pooling = "mean"')
    )
    path.write_text(text.replace('pooling = "mean"', 'pooling = "mean"\nbos = "keep"', 1))
    experiment = load_experiment(path)
    keep, drop = experiment.representations
    assert (keep.options["bos"], drop.options["bos"]) == ("keep", "drop")
    assert "bos" not in keep.key_dict() and drop.key_dict()["bos"] == "drop"
    data = prepare_data(experiment, progress=False)
    texts = read_texts(tmp_path / "reviews.csv", text_column="review", label_column="stars")
    pool, _ = texts.split(test_size=0.2, random_state=experiment.run.random_state)
    start = len("Review: ")  # with a template, "mean" averages the text's tokens only
    templated = [
        Prompt(f"Review: {text}\nSentiment:", span=(start, start + len(text)))
        for text in texts.texts
    ]
    for keep_bos, agrees in ((False, True), (True, False)):
        encoder = TransformerEncoder(folder, 2, pooling="mean", keep_bos=keep_bos, progress=False)
        raw = encoder.encode(templated)[pool]
        standardized = (raw - raw.mean(0)) / raw.std(0)
        assert np.allclose(data["left"].X_train, standardized, atol=1e-3) == agrees


def test_texts_files_templates_and_poolings_are_checked(tmp_path, models):
    _write_texts(tmp_path)
    path = _experiment(tmp_path, models, task='split_column = "part"\n')
    with pytest.raises(ExperimentError, match=r"has no column 'part' \(split_column\)"):
        check_data(load_experiment(path))
    text = path.read_text()
    path.write_text(text.replace(TEMPLATE, "Review:"))
    with pytest.raises(
        ExperimentError, match=r"task.template: must be a string holding '\{text\}'"
    ):
        load_experiment(path)
    shutil.copy(tmp_path / "reviews.csv", tmp_path / "reviews.tsv")
    path.write_text(
        text.replace("reviews.csv", "reviews.tsv").replace("batch_size = 8", 'pooling = "words"', 1)
    )
    with pytest.raises(ExperimentError) as raised:
        load_experiment(path)
    problems = "\n".join(raised.value.problems)
    assert "reviews.tsv': unknown format '.tsv' (known: .csv, .jsonl, .parquet)" in problems
    assert "representations[0].pooling: 'words' is not a pooling of the texts task" in problems


@pytest.mark.slow
def test_probemeter_run_on_a_texts_file_with_glove_and_a_decoder(tmp_path, models):
    _write_texts(tmp_path)
    path = _experiment(tmp_path, models)
    path.write_text(
        path.read_text().replace(
            "[method]", '[[representations]]\nname = "glove"\nkind = "glove"\n[method]'
        )
    )
    assert main(["run", str(path), "--out", str(tmp_path / "runs"), "-q", "--n-jobs", "1"]) == 0
    results = json.loads((tmp_path / "runs" / "texts" / "results.json").read_text())
    assert results["experiment"]["task"]["dataset"] == "texts"
    assert {curve["name"] for curve in results["curves"]} == {"right", "left", "glove"}
