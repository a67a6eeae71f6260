"""Probes from model objects in memory (issue 43, item 4): a TransformerLens or nnsight model
read at its hook names gives the features and curves of ``kind = "transformer"`` on the same
weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_models import BLOCKS, make_tiny_gpt2

from probemeter import Linear, TrainingConfig, loss_data_curve
from probemeter.encoders import TransformerEncoder
from probemeter.encoders.in_memory import ModelEncoder
from probemeter.mdl import online_codelength
from probemeter.runs.in_memory import probe_model, split_texts

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = [
    pytest.mark.filterwarnings("ignore:HookedTransformer is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:LanguageModel is deprecated"),
]

#: texts of different lengths (batches by tokens differ from batches by count); the label is
#: the animal
WORDS = ("the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park")


def _texts(n: int = 60) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for index in range(n):
        animal = ("cat", "dog")[index % 2]
        filler = " ".join(rng.choice(WORDS[2:6], size=int(rng.integers(1, 9))))
        texts.append(f"the {animal} {filler}")
        labels.append(animal)
    return texts, labels


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


def _transformer_features(folder, pooling="mean", **options) -> list[np.ndarray]:
    """What ``kind = "transformer"`` with ``site = "resid_post"`` reads, block by block."""
    encoder = TransformerEncoder(
        folder, site="resid_post", pooling=pooling, progress=False, **options
    )
    return list(encoder.encode_all_layers(_texts()[0]))


CONFIG = TrainingConfig(steps=40, lr=1e-2)


def test_nnsight_gives_the_transformer_kinds_features_and_curves(folder):
    nnsight = pytest.importorskip("nnsight", reason="nnsight is an optional extra")
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder)
    lm = nnsight.LanguageModel(hf, tokenizer=transformers.AutoTokenizer.from_pretrained(folder))
    hooks = [f"transformer.h.{block}" for block in range(BLOCKS)]
    texts, labels = _texts()
    for pooling in ("mean", "last"):
        expected = _transformer_features(folder, pooling, batch_tokens=40)
        encoder = ModelEncoder(lm, hooks, pooling=pooling, batch_tokens=40)
        assert encoder.n_layers == BLOCKS and encoder.dimension == hf.config.n_embd
        for block, features in enumerate(encoder.encode_all_layers(texts)):
            np.testing.assert_array_equal(features, expected[block])
    # nnsight 0.8's successor of LanguageModel wraps the same object alike
    wrapper = getattr(nnsight, "TransformersModel", None)
    if wrapper is not None:
        other = ModelEncoder(wrapper(hf, tokenizer=lm.tokenizer), hooks, pooling="last")
        np.testing.assert_array_equal(other.encode_all_layers(texts)[1], expected[1])
    # the same split and training give the same curve, point for point
    split = split_texts(labels, test_size=0.25, random_state=0)
    found = probe_model(
        lm, texts, labels, hooks, split=split, sizes=[10, 40], seeds=2, config=CONFIG,
        online_code=True, timesteps=(0.25, 0.5, 1.0),
    )  # fmt: skip
    for block, hook in enumerate(hooks):
        data = split.probe_data(_transformer_features(folder)[block], name=hook)
        reference = loss_data_curve(data, Linear(), sizes=[10, 40], seeds=2, config=CONFIG)
        ours, theirs = found.curves[hook].to_dict(), reference.to_dict()
        for result in (ours, theirs):  # wall time is no result
            result["metadata"].pop("train_seconds")
        assert ours == theirs
        np.testing.assert_array_equal(found.data[hook].X_train, data.X_train)
        code = online_codelength(data, Linear(), (0.25, 0.5, 1.0), 2, config=CONFIG)
        assert found.codes[hook].codelength_bits == code.codelength_bits
    assert found.split.classes == ("cat", "dog")


def _lens_from_hf(folder):
    """A HookedTransformer with the tiny GPT-2's weights, built offline from its config
    (``from_pretrained`` would look up the official name on the Hub)."""
    lens = pytest.importorskip("transformer_lens", reason="needs transformer-lens")
    from transformer_lens.pretrained.weight_conversions import convert_gpt2_weights

    hf = transformers.AutoModelForCausalLM.from_pretrained(folder)
    c = hf.config
    config = lens.HookedTransformerConfig(
        n_layers=c.n_layer, d_model=c.n_embd, n_ctx=c.n_positions, d_head=c.n_embd // c.n_head,
        n_heads=c.n_head, d_mlp=4 * c.n_embd, d_vocab=c.vocab_size, act_fn="gelu_new",
        normalization_type="LN", eps=c.layer_norm_epsilon, device="cpu",
    )  # fmt: skip
    model = lens.HookedTransformer(
        config, tokenizer=transformers.AutoTokenizer.from_pretrained(folder)
    )
    model.load_state_dict(convert_gpt2_weights(hf, config), strict=False)
    return model.eval()


def test_transformer_lens_reads_its_own_activations_and_the_transformer_kinds(folder):
    model = _lens_from_hf(folder)
    hooks = [f"blocks.{block}.hook_resid_post" for block in range(BLOCKS)] + [
        "blocks.1.attn.hook_z"
    ]
    texts, _ = _texts()
    # the model's tokenizer as TransformerLens set it up prepends a BOS, as to_tokens does
    encoder = ModelEncoder(model, hooks, pooling="mean", batch_tokens=40)
    own = encoder.encode_all_layers(texts)
    # against run_with_cache, one text at a time (no padding at all)
    for index in (0, 7, 31):
        ids = model.to_tokens(texts[index])
        assert ids[0, 0] == model.tokenizer.bos_token_id
        with torch.no_grad():
            _, cache = model.run_with_cache(ids, return_type=None)
        for layer, hook in enumerate(hooks):
            value = cache[hook][0].reshape(ids.shape[1], -1).mean(dim=0).numpy()
            np.testing.assert_allclose(own[layer][index], value, rtol=1e-5, atol=1e-6)
    # with the folder's tokenizer (no BOS), what kind = "transformer" reads
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    read = ModelEncoder(model, hooks, tokenizer=tokenizer, batch_tokens=40).encode_all_layers(texts)
    for index in (0, 7, 31):
        ids = torch.tensor([tokenizer(texts[index])["input_ids"]])
        with torch.no_grad():
            _, cache = model.run_with_cache(ids, return_type=None)
        for layer, hook in enumerate(hooks):
            value = cache[hook][0].reshape(ids.shape[1], -1).mean(dim=0).numpy()
            np.testing.assert_allclose(read[layer][index], value, rtol=1e-5, atol=1e-6)
    # against the Hugging Face model the weights came from: TransformerLens's einsums round
    # otherwise than its matrix products, so equal to float32 rounding: a few ulps of values
    # below 0.05 (an ulp there is 3.7e-9; measured 7.5e-9 at most)
    expected = _transformer_features(folder, batch_tokens=40)
    for block in range(BLOCKS):
        np.testing.assert_allclose(read[block], expected[block], rtol=0, atol=5e-8)


def test_a_probe_of_a_lens_model_back_into_it(folder):
    model = _lens_from_hf(folder)
    texts, labels = _texts()
    hook = "blocks.1.hook_resid_post"
    found = probe_model(model, texts, labels, [hook], sizes=[40], seeds=1, config=CONFIG)
    direction = found.direction(hook)
    assert direction.hook_name == hook and direction.classes == ("cat", "dog")
    assert direction.d_model == model.cfg.d_model
    mean, std = found.moments[hook]
    X = found.data[hook].X_test * std + mean  # the raw test features, back from standardised
    kept = found.curves[hook].probes.select(n=40)[0]
    with torch.no_grad():
        logits = kept.module()(torch.from_numpy(found.data[hook].X_test)).double().numpy()
    np.testing.assert_allclose(direction.logits(X), logits[:, 1] - logits[:, 0], atol=1e-4)


def test_bad_input_is_one_line(folder):
    model = _lens_from_hf(folder)
    with pytest.raises(ValueError, match="no hook of the model"):
        ModelEncoder(model, ["blocks.9.hook_resid_post"])
    with pytest.raises(ValueError, match="not one value per token"):
        ModelEncoder(model, ["blocks.0.attn.hook_pattern"])
    with pytest.raises(ValueError, match="different widths"):
        ModelEncoder(model, ["blocks.0.hook_resid_post", "blocks.0.mlp.hook_post"])
    with pytest.raises(ValueError, match="TransformerLens"):
        ModelEncoder(object(), ["x"])
    with pytest.raises(ValueError, match="pooling"):
        probe_model(model, ["a b"] * 4, [0, 1] * 2, ["blocks.0.hook_resid_post"], pooling="all")
    with pytest.raises(ValueError, match="labels has 3"):
        probe_model(model, ["a b"] * 4, [0, 1, 0], ["blocks.0.hook_resid_post"])


def _experiment(tmp_path, folder, texts, labels) -> Path:
    """A texts file whose split column tests the last quarter, and an experiment file reading
    it with ``kind = "transformer"`` at every block's ``resid_post``."""
    import pandas as pd

    split = ["test" if index >= 3 * len(texts) // 4 else "train" for index in range(len(texts))]
    pd.DataFrame({"text": texts, "label": labels, "split": split}).to_csv(
        tmp_path / "texts.csv", index=False
    )
    path = tmp_path / "run.toml"
    path.write_text(
        '[run]\nname = "gpt"\nsave_probes = true\n[task]\ndataset = "texts"\npath = "texts.csv"\n'
        'split_column = "split"\n[[representations]]\nname = "gpt"\nkind = "transformer"\n'
        f'model = "{folder}"\nlayer = "all"\nsite = "resid_post"\npooling = "mean"\n'
        "batch_tokens = 40\n[method]\nepsilon = 0.5\nsizes = [10, 40]\nprobe = []\nseeds = 2\n"
        "steps = 40\nlr = 0.01\n"
    )
    return path


@pytest.mark.slow
def test_an_experiment_files_transformer_run_and_probe_model_agree(tmp_path, folder):
    """``probemeter run`` with ``kind = "transformer"`` and probe_model on an nnsight model of
    the same folder, on the file's split: the same data bit for bit, the same curves to float32
    rounding."""
    nnsight = pytest.importorskip("nnsight", reason="nnsight is an optional extra")
    from probemeter import load_curves, load_experiment, load_run_probes, run_experiment
    from probemeter.data import RowSplit
    from probemeter.encoders.sites import hook_name
    from probemeter.probes.direction import ProbeDirection
    from probemeter.runs.runner import prepare_data

    texts, labels = _texts()
    experiment = load_experiment(_experiment(tmp_path, folder, texts, labels))
    run = run_experiment(experiment, tmp_path / "out", progress=False, n_jobs=1)
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder)
    lm = nnsight.LanguageModel(hf, tokenizer=transformers.AutoTokenizer.from_pretrained(folder))
    rows = np.arange(len(texts))
    encoded = np.unique(labels, return_inverse=True)[1]
    train, test = rows[rows < 45], rows[rows >= 45]
    split = RowSplit(train, test, encoded[train], encoded[test], 2, ("cat", "dog"))
    hooks = [f"transformer.h.{block}" for block in range(BLOCKS)]
    config = TrainingConfig(steps=40, lr=0.01)
    found = probe_model(
        lm, texts, labels, hooks, split=split, sizes=[10, 40], seeds=2, config=config
    )
    stored = {curve.name: curve for curve in load_curves(tmp_path / "out" / "gpt" / "results.json")}
    prepared = prepare_data(experiment, progress=False)
    for block, hook in enumerate(hooks):
        data = prepared[f"gpt-resid_post-{block}"]
        for part in ("X_train", "X_test", "y_train", "y_test"):
            np.testing.assert_array_equal(getattr(data, part), getattr(found.data[hook], part))
        ours = found.curves[hook].to_dict()["points"]
        theirs = stored[f"gpt-resid_post-{block}"].to_dict()["points"]
        # the same probes on the same data: a run stacks its units' probes otherwise than one
        # curve alone, and MKL rounds float32 products by their operands' alignment, so the
        # losses agree to float32 rounding over 40 Adam steps, not bit for bit
        assert ours["n"] == theirs["n"] and ours["seed"] == theirs["seed"]
        assert ours["accuracy"] == theirs["accuracy"], hook
        for measure in ("loss", "dev_loss"):
            np.testing.assert_allclose(ours[measure], theirs[measure], rtol=1e-5, err_msg=hook)
    assert run is not None
    # the run kept its pools' moments with its probes: each exports back into the model, and
    # agrees with probe_model's export of the same probe to float32 rounding
    kept = load_run_probes(tmp_path / "out" / "gpt")
    for block, hook in enumerate(hooks):
        probes = kept[f"gpt-resid_post-{block}"]
        np.testing.assert_array_equal(probes.moments[0], found.moments[hook][0])
        name = hook_name("resid_post", block)
        direction = ProbeDirection.from_set(probes, hook_name=name, n=40, seed=0)
        ours = found.direction(hook, n=40, seed=0)
        assert direction.hook_name == f"blocks.{block}.hook_resid_post"
        np.testing.assert_allclose(direction.direction, ours.direction, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_a_transformer_bridge_reads_what_the_transformer_kind_reads(folder):
    """A TransformerBridge booted on the folder wraps the same Hugging Face modules: its hook
    points (aliases such as ``blocks.0.hook_resid_post`` of ``blocks.0.hook_out``) give the
    transformer kind's site features, to float32 rounding (the bridge reorders some of the
    block's arithmetic)."""
    pytest.importorskip("transformer_lens", reason="needs transformer-lens")
    from transformer_lens.model_bridge import TransformerBridge

    bridge = TransformerBridge.boot_transformers(str(folder), device="cpu")
    hooks = [f"blocks.{block}.hook_resid_post" for block in range(BLOCKS)]
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    encoder = ModelEncoder(bridge, hooks, tokenizer=tokenizer, batch_tokens=40)
    read = encoder.encode_all_layers(_texts()[0])
    expected = _transformer_features(folder, batch_tokens=40)
    for block in range(BLOCKS):
        np.testing.assert_allclose(read[block], expected[block], rtol=1e-5, atol=1e-6)


def test_a_feature_cache_keeps_the_hooks_features(folder, tmp_path, monkeypatch):
    """With a cache, a second call reads every hook's features back without a forward pass."""
    from probemeter.encoders import FeatureCache

    model = _lens_from_hf(folder)
    texts, labels = _texts()
    hooks = ["blocks.0.hook_resid_post", "blocks.1.hook_resid_post"]
    cache = FeatureCache(tmp_path / "cache")
    options = {"sizes": [20], "seeds": 1, "config": CONFIG, "cache": cache}
    first = probe_model(model, texts, labels, hooks, cache_key={"model": "tiny"}, **options)
    assert len(list((tmp_path / "cache").glob("*.layer*.npy"))) == len(hooks)

    def refuse(*args, **kwargs):
        raise AssertionError("encoded again")

    monkeypatch.setattr(ModelEncoder, "encode_layers_into", refuse)
    again = probe_model(model, texts, labels, hooks, cache_key={"model": "tiny"}, **options)
    for hook in hooks:
        np.testing.assert_array_equal(again.data[hook].X_train, first.data[hook].X_train)
    assert cache.hits == 1
    with pytest.raises(ValueError, match="cache_key"):
        probe_model(model, texts, labels, hooks, cache=cache)


def test_one_verdict_over_the_hooks(folder):
    """The position embedding's mean depends on a text's length alone, which the label does
    not: the block that read the animal's token wins the verdict over it, chosen on dev and
    tested on the test set."""
    model = _lens_from_hf(folder)
    texts, labels = _texts()
    hooks = ["hook_pos_embed", "blocks.1.hook_resid_post"]
    found = probe_model(model, texts, labels, hooks, sizes=[10, 40], seeds=2, config=CONFIG)
    analysis = found.verdict(0.5)
    [verdict] = analysis.verdicts
    assert verdict.best == (1, "blocks.1.hook_resid_post")
    assert verdict.runner_up == (0, "hook_pos_embed")
    assert verdict.chosen_on.startswith("dev") and verdict.tested_on == "test"
    assert verdict.test.n_test == len(found.split.test)
    assert found.curves[hooks[0]].points["accuracy"].max() < 0.8  # the length is no label
