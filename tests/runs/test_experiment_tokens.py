"""Texts and tokens on the texts task: pooling "all" (every token of a text a row, clustered by
text), a marker in the template, chat templates, and saved Hugging Face datasets; each against
a direct forward pass of the model, and the errors."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_models import make_tiny_bert, make_tiny_decoder

from probemeter.datasets.texts import read_texts
from probemeter.encoders.hf import Prompt, TransformerEncoder, token_counts
from probemeter.runs.check import check_data
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data
from probemeter.training.probe_runs import held_out_split

pytest.importorskip("transformers")

GOOD = "the cat sat on the mat near the river bank".split()
BAD = "dogs bark at night about distant old stars".split()
LAYER = 1
#: a small chat template, Llama-like: it writes the BOS itself
CHAT = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny Llama (its tokenizer adds a BOS), and a copy whose tokenizer has a chat
    template."""
    import transformers

    folder = tmp_path_factory.mktemp("token-models")
    llama = make_tiny_decoder(folder / "llama", "llama")
    chat = make_tiny_decoder(folder / "chat", "llama")
    tokenizer = transformers.AutoTokenizer.from_pretrained(chat)
    tokenizer.chat_template = CHAT
    tokenizer.save_pretrained(chat)
    return {"llama": llama, "chat": chat}


@pytest.fixture(scope="module")
def direct(models):
    """Per text: the layer's hidden states of a direct forward pass (batch of one), the
    tokens and their character offsets."""
    import torch
    import transformers

    cache: dict = {}

    def run(model: str, text: str, special: bool = True):
        if (model, text, special) not in cache:
            net = transformers.AutoModel.from_pretrained(models[model]).eval()
            tokenizer = transformers.AutoTokenizer.from_pretrained(models[model])
            encoded = tokenizer(text, return_offsets_mapping=True, add_special_tokens=special)
            with torch.no_grad():
                states = net(torch.tensor([encoded.input_ids]), output_hidden_states=True)
            cache[model, text, special] = (
                states.hidden_states[LAYER][0].numpy(),
                encoded.input_ids,
                np.array(encoded.offset_mapping),
            )
        return cache[model, text, special]

    return run


def _write_texts(folder: Path, n: int = 24) -> Path:
    rng = np.random.default_rng(1)
    rows = []
    for index in range(n):
        label = ("pos", "neg")[index % 2]
        words = rng.choice(GOOD if label == "pos" else BAD, size=int(rng.integers(1, 6)))
        rows.append((" ".join(words), label))
    path = folder / "reviews.csv"
    pd.DataFrame(rows, columns=["text", "label"]).to_csv(path, index=False)
    return path


def _experiment(folder: Path, model: Path, task: str = "", rep: str = "") -> Path:
    path = folder / "tokens.toml"
    path.write_text(
        '[run]\nname = "tokens"\n[task]\ndataset = "texts"\npath = "reviews.csv"\n'
        f'{task}[[representations]]\nname = "llama"\nkind = "transformer"\nlayer = {LAYER}\n'
        f'model = "{model}"\nbatch_size = 5\n{rep}'
        "[method]\nepsilon = 0.5\nsizes = [8, 16]\nprobe = []\nseeds = 1\nsteps = 20\n"
    )
    return path


def _standardized(raw: np.ndarray, pool: np.ndarray, test: np.ndarray):
    mean, std = raw[pool].mean(0), raw[pool].std(0)
    return (raw[pool] - mean) / std, (raw[test] - mean) / std


def _text_tokens(direct, template: str, text: str) -> tuple[np.ndarray, np.ndarray]:
    """The tiny Llama's hidden states of ``text`` in ``template`` (a direct forward pass) and
    which of its tokens overlap the text's characters (not the template's, not the BOS)."""
    templated = template.replace("{text}", text)
    states, _, offsets = direct("llama", templated)
    start = templated.index(text)
    inside = (offsets[:, 1] > offsets[:, 0]) & (offsets[:, 0] < start + len(text))
    return states, inside & (offsets[:, 1] > start)


def test_all_gives_every_token_of_each_text_a_row_clustered_by_text(tmp_path, models, direct):
    """Pooling "all" with a template: the rows are the tokens of each text (not of the
    template, not the BOS), equal to a direct forward pass of the templated text alone,
    split by text, labelled and clustered by their text; a development split of the pool
    never splits a text's tokens."""
    _write_texts(tmp_path)
    template = "Review: {text} Sentiment:"
    path = _experiment(tmp_path, models["llama"], f'template = "{template}"\n', 'pooling = "all"\n')
    experiment = load_experiment(path)
    assert experiment.representations[0].key_dict()["pooling"] == "all"
    assert "marker" not in experiment.task.key_dict() and "chat" not in experiment.task.key_dict()
    check_data(experiment)  # --check: the pool counted in texts
    data = prepare_data(experiment, progress=False)["llama"]

    texts = read_texts(tmp_path / "reviews.csv")
    pool, test = texts.split(random_state=experiment.run.random_state)
    rows, counts = [], []
    for text in texts.texts:
        states, inside = _text_tokens(direct, template, text)
        assert not inside[0]  # the BOS is no token of the text
        rows.append(states[inside])
        counts.append(int(inside.sum()))
    raw = np.concatenate(rows)
    text_of = np.repeat(np.arange(texts.n_rows), counts)
    pool_rows = np.flatnonzero(np.isin(text_of, pool))
    test_rows = np.flatnonzero(np.isin(text_of, test))
    X_train, X_test = _standardized(raw, pool_rows, test_rows)
    np.testing.assert_allclose(data.X_train, X_train, atol=1e-3)
    np.testing.assert_allclose(data.X_test, X_test, atol=1e-3)
    labels = np.array([label == "pos" for label in texts.labels], dtype=np.int64)
    np.testing.assert_array_equal(data.y_train, labels[text_of[pool_rows]])
    np.testing.assert_array_equal(data.clusters_train, text_of[pool_rows])
    np.testing.assert_array_equal(data.clusters_test, text_of[test_rows])
    assert max(counts) > 1 and data.pool_size == len(pool_rows) > len(pool)

    for seed in range(5):
        kept, held = held_out_split(data.pool_size, 0.25, seed, data.clusters_train)
        assert not set(data.clusters_train[kept]) & set(data.clusters_train[held])


def test_mean_with_a_template_averages_the_texts_tokens_only(tmp_path, models, direct):
    """Pooling "mean" with a template averages the tokens of ``{text}``, the rows "all" gives,
    not the template's (nor the BOS, ``bos = "drop"``): equal to that mean computed by hand
    from a direct forward pass. Averaging every token but the BOS, as before, moved the
    standardised features by 4.3 at most on the tiny Llama."""
    _write_texts(tmp_path)
    template = "Review: {text} Sentiment:"
    path = _experiment(
        tmp_path, models["llama"], f'template = "{template}"\n', 'pooling = "mean"\n'
    )
    experiment = load_experiment(path)
    data = prepare_data(experiment, progress=False)["llama"]
    texts = read_texts(tmp_path / "reviews.csv")
    pool, test = texts.split(random_state=experiment.run.random_state)
    means, whole = [], []
    for text in texts.texts:
        states, inside = _text_tokens(direct, template, text)
        means.append(states[inside].mean(0))
        whole.append(states[1:].mean(0))  # every token but the BOS: the template's too
    raw = np.stack(means)
    X_train, X_test = _standardized(raw, pool, test)
    np.testing.assert_allclose(data.X_train, X_train, atol=1e-3)
    np.testing.assert_allclose(data.X_test, X_test, atol=1e-3)
    before, _ = _standardized(np.stack(whole), pool, test)  # the template's tokens moved it
    assert np.abs(before - X_train).max() > 1.0


def test_texts_longer_than_the_model_are_refused_unless_a_side_is_cut(tmp_path, models):
    """A text of 197 tokens for a model of 64 positions: refused by ``--check`` (from the
    tokenizer) and by the run, naming how many and the longest; ``truncate = "left"`` keeps
    its end, so "last" reads the template's closing ":" (a direct forward pass of the BOS and
    the last 63 tokens), where cutting the right read a word from the middle. The option is in
    the unit and cache keys only when set."""
    import torch
    import transformers

    frame = pd.read_csv(_write_texts(tmp_path))
    long_text = (
        " ".join(["the cat sat on the mat near the river bank"] * 14) + " dogs bark night falls"
    )
    frame.loc[3, "text"] = long_text
    frame.to_csv(tmp_path / "reviews.csv", index=False)
    template = "Review: {text} Sentiment:"
    path = _experiment(tmp_path, models["llama"], f'template = "{template}"\n')
    experiment = load_experiment(path)
    assert "truncate" not in experiment.representations[0].key_dict()
    message = (
        r"representations\[0\].truncate: 1 of 24 texts are longer than the 64 tokens '.*llama' "
        r"reads \(the longest, text 4, has 197 tokens\): they would be cut without a word; "
        r'give truncate = "left"'
    )
    with pytest.raises(ExperimentError, match=message):
        check_data(experiment)
    with pytest.raises(ValueError, match=r"1 of 24 texts are longer than the 64 tokens"):
        prepare_data(experiment, progress=False)

    path.write_text(
        path.read_text().replace("batch_size = 5\n", 'batch_size = 5\ntruncate = "left"\n')
    )
    experiment = load_experiment(path)
    assert experiment.representations[0].key_dict()["truncate"] == "left"
    check_data(experiment)
    data = prepare_data(experiment, progress=False)["llama"]
    texts = read_texts(tmp_path / "reviews.csv")
    pool, test = texts.split(random_state=experiment.run.random_state)
    net = transformers.AutoModel.from_pretrained(models["llama"]).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(models["llama"])
    last = []
    for text in texts.texts:
        ids = tokenizer(template.replace("{text}", text)).input_ids
        kept = ids if len(ids) <= 64 else ids[:1] + ids[-63:]  # the BOS, then the end
        with torch.no_grad():
            states = net(torch.tensor([kept]), output_hidden_states=True).hidden_states
        last.append(states[LAYER][0, -1].numpy())
    X_train, X_test = _standardized(np.stack(last), pool, test)
    np.testing.assert_allclose(data.X_train, X_train, atol=1e-3)
    np.testing.assert_allclose(data.X_test, X_test, atol=1e-3)
    ids = tokenizer(template.replace("{text}", long_text)).input_ids
    assert len(ids) == 197 and tokenizer.decode(ids[-1]) == ":"
    assert tokenizer.decode(ids[63]) != ":"  # what the right cut's last token was

    def encoder(**options: str) -> TransformerEncoder:
        return TransformerEncoder(models["llama"], LAYER, pooling="last", progress=False, **options)

    assert "truncate" not in encoder().cache_key
    assert encoder(truncate="left").cache_key["truncate"] == "left"
    assert encoder(truncate="left").cache_key != encoder(truncate="right").cache_key
    with pytest.raises(ValueError, match=r"truncate must be one of"):
        encoder(truncate="middle")


def test_all_without_a_template_keeps_the_bos_only_when_asked(models, direct):
    """Without a template every token of the text is a row; the BOS the tokenizer adds is one
    with ``keep_bos`` (the encoder's default), not without; counts from one tokenization."""
    texts = ["dogs bark", "the cat sat on the mat", "night falls"]
    for keep_bos, first in ((True, 0), (False, 1)):
        encoder = TransformerEncoder(
            models["llama"], LAYER, pooling="all", keep_bos=keep_bos, batch_size=2, progress=False
        )
        expected = [direct("llama", text)[0][first:] for text in texts]
        np.testing.assert_array_equal(encoder.row_counts(texts), [len(e) for e in expected])
        assert encoder.n_rows(texts) == sum(len(e) for e in expected)
        np.testing.assert_allclose(encoder.encode(texts), np.concatenate(expected), atol=1e-5)


def test_all_on_an_encoder_leaves_out_the_tokens_the_tokenizer_adds(tmp_path):
    """A BERT-like encoder: "all" gives the text's word pieces, not [CLS] or [SEP]; with a
    prompt's span, the pieces of those characters only."""
    import torch
    import transformers

    folder = make_tiny_bert(tmp_path / "bert")
    model = transformers.AutoModel.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    texts = ["dogs bark loudly", "the cat sat"]
    encoder = TransformerEncoder(folder, LAYER, pooling="all", progress=False)
    expected = []
    for text in texts:
        ids = tokenizer(text, return_tensors="pt").input_ids
        with torch.no_grad():
            states = model(ids, output_hidden_states=True).hidden_states[LAYER][0].numpy()
        expected.append(states[1:-1])  # [CLS] first, [SEP] last
    np.testing.assert_allclose(encoder.encode(texts), np.concatenate(expected), atol=1e-5)
    spans = [Prompt(f"Review: {text}", span=(8, 8 + len(text))) for text in texts]
    counts = encoder.row_counts(spans)
    np.testing.assert_array_equal(counts, [len(e) for e in expected])


def test_the_marker_reads_the_last_token_before_it(tmp_path, models, direct):
    """``marker``: taken out of the template; pooling "last" reads the last token ending at
    or before it, which is the last token of the templated text cut at the marker."""
    _write_texts(tmp_path)
    template = "Review: {text}<<probe>> Sentiment:"
    path = _experiment(
        tmp_path, models["llama"], f'template = "{template}"\nmarker = "<<probe>>"\n'
    )
    experiment = load_experiment(path)
    assert experiment.task.key_dict()["marker"] == "<<probe>>"
    data = prepare_data(experiment, progress=False)["llama"]
    texts = read_texts(tmp_path / "reviews.csv")
    pool, test = texts.split(random_state=experiment.run.random_state)
    cut = np.stack([direct("llama", f"Review: {text}")[0][-1] for text in texts.texts])
    X_train, X_test = _standardized(cut, pool, test)
    np.testing.assert_allclose(data.X_train, X_train, atol=1e-3)
    np.testing.assert_allclose(data.X_test, X_test, atol=1e-3)
    # the whole template's last token is another one
    whole = np.stack([direct("llama", f"Review: {t} Sentiment:")[0][-1] for t in texts.texts])
    assert not np.allclose(whole, cut, atol=1e-3)


def test_chat_wraps_each_text_once_with_one_bos(models, direct):
    """``Prompt(chat=True)``: the chat template's text tokenized without special tokens (the
    template wrote its BOS: one BOS, not two); "last" is the generation prompt's last token;
    "all" the tokens of the message's text; "mean" their mean (not the template's tokens)."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(models["chat"])
    texts = ["dogs bark", "the cat sat on the mat"]
    last = TransformerEncoder(models["chat"], LAYER, pooling="last", progress=False)
    every = TransformerEncoder(models["chat"], LAYER, pooling="all", keep_bos=False, progress=False)
    mean = TransformerEncoder(models["chat"], LAYER, pooling="mean", keep_bos=False, progress=False)
    prompts = [Prompt(text, chat=True) for text in texts]
    expected_last, expected_all, expected_mean = [], [], []
    for text in texts:
        wrapped = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        states, ids, offsets = direct("chat", wrapped, special=False)
        assert ids.count(tokenizer.bos_token_id) == 1 and ids[0] == tokenizer.bos_token_id
        assert direct("chat", wrapped)[1][:2] == [tokenizer.bos_token_id] * 2  # added again
        # the tokens the model reads, as the length checks count them: one BOS
        assert token_counts(tokenizer, [Prompt(text, chat=True), text]).tolist() == [
            len(ids),
            len(direct("chat", text)[1]),
        ]
        expected_last.append(states[-1])
        start = wrapped.index(f"|>{text}") + 2
        inside = (offsets[:, 0] < start + len(text)) & (offsets[:, 1] > start)
        expected_all.append(states[inside & (offsets[:, 1] > offsets[:, 0])])
        expected_mean.append(expected_all[-1].mean(0))  # the text's tokens, as "all"
    np.testing.assert_allclose(last.encode(prompts), np.stack(expected_last), atol=1e-5)
    np.testing.assert_allclose(every.encode(prompts), np.concatenate(expected_all), atol=1e-5)
    np.testing.assert_allclose(mean.encode(prompts), np.stack(expected_mean), atol=1e-5)
    # a marked position moves with the message's text
    text = "Review: dogs bark Sentiment:"
    wrapped = tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
    )
    states, _, offsets = direct("chat", wrapped, special=False)
    end = wrapped.index(text) + len("Review: dogs bark")
    position = np.flatnonzero((offsets[:, 1] <= end) & (offsets[:, 1] > offsets[:, 0]))[-1]
    marked = last.encode([Prompt(text, end=len("Review: dogs bark"), chat=True)])
    np.testing.assert_allclose(marked[0], states[position], atol=1e-5)


def test_chat_through_an_experiment_file(tmp_path, models, direct):
    import transformers

    _write_texts(tmp_path)
    path = _experiment(tmp_path, models["chat"], 'template = "Review: {text}"\nchat = true\n')
    experiment = load_experiment(path)
    data = prepare_data(experiment, progress=False)["llama"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(models["chat"])
    texts = read_texts(tmp_path / "reviews.csv")
    pool, test = texts.split(random_state=experiment.run.random_state)
    raw = []
    for text in texts.texts:
        message = [{"role": "user", "content": f"Review: {text}"}]
        wrapped = tokenizer.apply_chat_template(message, tokenize=False, add_generation_prompt=True)
        raw.append(direct("chat", wrapped, special=False)[0][-1])
    X_train, X_test = _standardized(np.stack(raw), pool, test)
    np.testing.assert_allclose(data.X_train, X_train, atol=1e-3)
    np.testing.assert_allclose(data.X_test, X_test, atol=1e-3)


def test_a_saved_dataset_dict_gives_its_splits(tmp_path):
    """A folder ``DatasetDict.save_to_disk`` wrote: train, validation and test are the split
    (validation as dev, joined to the pool by default); a ``Dataset`` folder has none."""
    datasets = pytest.importorskip("datasets")
    parts = {
        "train": {"sentence": ["good film", "bad film", "fine", "awful"], "y": [1, 0, 1, 0]},
        "validation": {"sentence": ["great", "poor"], "y": [1, 0]},
        "test": {"sentence": ["lovely", "dull"], "y": [1, 0]},
    }
    saved = datasets.DatasetDict({k: datasets.Dataset.from_dict(v) for k, v in parts.items()})
    saved.save_to_disk(tmp_path / "reviews")
    texts = read_texts(tmp_path / "reviews", text_column="sentence", label_column="y")
    assert texts.texts[:4] == ("good film", "bad film", "fine", "awful")
    assert texts.splits == ("train",) * 4 + ("dev",) * 2 + ("test",) * 2
    pool, test = texts.split()
    assert list(pool) == list(range(6)) and list(test) == [6, 7]
    assert texts.labels == (1, 0, 1, 0, 1, 0, 1, 0)

    saved["train"].save_to_disk(tmp_path / "train-only")
    alone = read_texts(tmp_path / "train-only", text_column="sentence", label_column="y")
    assert alone.splits is None and alone.n_rows == 4

    with pytest.raises(ValueError, match=r"is a DatasetDict: its splits are the split"):
        read_texts(tmp_path / "reviews", text_column="sentence", split_column="split")
    datasets.DatasetDict({"extra": saved["train"]}).save_to_disk(tmp_path / "other")
    with pytest.raises(ValueError, match=r"split\(s\) 'extra' are none of train, validation"):
        read_texts(tmp_path / "other", text_column="sentence")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"is a folder but no saved Hugging Face dataset"):
        read_texts(tmp_path / "empty")


def test_a_saved_dataset_in_an_experiment_file(tmp_path, models):
    datasets = pytest.importorskip("datasets")
    frame = pd.read_csv(_write_texts(tmp_path, 40))
    half = 30
    saved = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_pandas(frame[:half], preserve_index=False),
            "test": datasets.Dataset.from_pandas(frame[half:], preserve_index=False),
        }
    )
    saved.save_to_disk(tmp_path / "saved")
    path = _experiment(tmp_path, models["llama"])
    path.write_text(path.read_text().replace('"reviews.csv"', '"saved"'))
    data = prepare_data(load_experiment(path), progress=False)["llama"]
    assert (data.pool_size, len(data.y_test)) == (half, len(frame) - half)


def test_a_dataset_dict_with_an_extra_split_through_task_splits(tmp_path, models):
    """``[task] splits`` names the DatasetDict's splits: IMDB's ``unsupervised`` split (labels
    -1) is left out with a warning and the pool and test set are the named splits; bad tables
    are refused when the file is read, one line naming ``task.splits``."""
    datasets = pytest.importorskip("datasets")
    frame = pd.read_csv(_write_texts(tmp_path, 40))
    unlabelled = pd.DataFrame({"text": ["no label", "none either"], "label": ["?", "?"]})
    saved = datasets.DatasetDict(
        {
            "fit": datasets.Dataset.from_pandas(frame[:30], preserve_index=False),
            "unsupervised": datasets.Dataset.from_pandas(unlabelled, preserve_index=False),
            "test": datasets.Dataset.from_pandas(frame[30:], preserve_index=False),
        }
    )
    saved.save_to_disk(tmp_path / "saved")
    path = _experiment(tmp_path, models["llama"])
    path.write_text(path.read_text().replace('"reviews.csv"', '"saved"'))
    # read off the folder's index when the file is read, before any data are loaded
    with pytest.raises(ExperimentError, match=r"task.path: DatasetDict split\(s\) 'fit', "):
        load_experiment(path)
    path = _experiment(tmp_path, models["llama"], 'splits = {train = "fit", test = "test"}\n')
    path.write_text(path.read_text().replace('"reviews.csv"', '"saved"'))
    with pytest.warns(UserWarning, match=r"split\(s\) 'unsupervised' left out"):
        data = prepare_data(load_experiment(path), progress=False)["llama"]
    assert (data.pool_size, len(data.y_test)) == (30, 10)
    cases = {
        'splits = {train = "fit"}\n': r"task.splits: names no test split",
        'splits = {train = "fit", test = "fit"}\n': r"task.splits: names the split 'fit' twice",
        'splits = {fit = "fit", test = "test"}\n': r"task.splits: 'fit' is none of train, dev",
        'splits = "fit"\n': r"task.splits: must be a table of the DatasetDict's split names",
        'splits = {train = "fit", test = "test"}\nsplit_column = "s"\n': r"task.splits: a "
        "DatasetDict's splits are the split; leave split_column out",
        'splits = {train = "fit", test = "validation"}\n': r"task.splits: names split "
        r"'validation', which the DatasetDict .* lacks \(its splits: 'fit', 'unsupervised', "
        r"'test'\)",
    }
    for task, message in cases.items():
        path = _experiment(tmp_path, models["llama"], task)
        path.write_text(path.read_text().replace('"reviews.csv"', '"saved"'))
        with pytest.raises(ExperimentError, match=message):
            load_experiment(path)
    path = _experiment(tmp_path, models["llama"], 'splits = {train = "fit", test = "test"}\n')
    with pytest.raises(ExperimentError, match=r"task.splits: names a saved DatasetDict's splits"):
        load_experiment(path)


def test_errors_of_markers_chat_and_all(tmp_path, models):
    _write_texts(tmp_path)
    cases = {
        'marker = "<<probe>>"\n': r"task.marker: '<<probe>>' marks a position in the template; "
        "there is none",
        'template = "Review: {text}"\nmarker = "<<probe>>"\n': r"task.marker: '<<probe>>' must "
        r"be in the template once; it is there 0 times",
        'template = "<<p>>{text}<<p>>"\nmarker = "<<p>>"\n': r"it is there 2 times",
        'template = "{text}"\nmarker = "text"\n': r"task.marker: 'text' overlaps '\{text\}'",
    }
    for task, message in cases.items():
        with pytest.raises(ExperimentError, match=message):
            load_experiment(_experiment(tmp_path, models["llama"], task))
    # chat with a tokenizer that has no chat template: named when the file is read
    path = _experiment(tmp_path, models["llama"], "chat = true\n")
    with pytest.raises(ValueError, match=r"chat: the tokenizer of '.*llama' has no chat template"):
        prepare_data(load_experiment(path), progress=False)
    senteval = tmp_path / "senteval.txt"
    senteval.write_text("tr\tA\ta b\nte\tB\tc d\n")
    written = path.read_text().replace(
        'dataset = "texts"\npath = "reviews.csv"\nchat = true',
        'dataset = "senteval"\ntask = "BShift"\npath = "senteval.txt"',
    )
    path.write_text(written.replace("batch_size = 5", 'pooling = "all"'))
    with pytest.raises(ExperimentError, match=r"pooling: 'all' is not a pooling of the senteval"):
        load_experiment(path)
    encoder = TransformerEncoder(models["llama"], LAYER, pooling="last", progress=False)
    with pytest.raises(ValueError, match=r"inputs\[0\].end 9 is not a character"):
        encoder.encode([Prompt("dogs", end=9)])
    with pytest.raises(ValueError, match=r"inputs mix chat prompts with others"):
        encoder.encode([Prompt("dogs", chat=True), "cats"])
    with pytest.raises(ValueError, match=r"row_counts counts the rows of pooling='all'"):
        encoder.row_counts(["dogs"])
    assert json.dumps(Prompt("dogs", (0, 2)).key()) and Prompt("dogs").key() == "dogs"
