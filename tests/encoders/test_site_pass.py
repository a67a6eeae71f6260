"""Every site of a model read in one forward pass per batch
(``TransformerEncoder.encode_sites_into``): bit for bit the features of one site at a time, on
a tiny Llama-style decoder and on MiniLM (BERT), for every pooling, the hidden states, block
sites and module sites of other widths among them; and the model's forward counted."""

from pathlib import Path

import numpy as np
import pytest
from tiny_models import make_tiny_decoder

from probemeter.encoders.hf import TransformerEncoder, minilm_path

pytest.importorskip("transformers")

TEXTS = [
    "the cat sat on the mat",
    "dogs bark",
    "a quick brown fox jumps over the lazy dog",
    "night falls",
    "she reads old books about distant stars near the river bank",
]
WORDS = [text.split() for text in TEXTS]
#: every site kind: the hidden states, block sites of the hidden width, heads, and a module
#: site of another width (the MLP's intermediate activations), by model
SITES = {
    "llama": [
        "hidden",
        "resid_post",
        "attn_out",
        "mlp_out",
        "heads",
        "module:layers.{i}.mlp.act_fn",
    ],
    "minilm": [
        "hidden",
        "resid_mid",
        "attn_out",
        "mlp_out",
        "module:encoder.layer.{i}.intermediate",
    ],
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {
        "llama": make_tiny_decoder(tmp_path_factory.mktemp("decoder") / "llama", "llama"),
        "minilm": minilm_path(),
    }


def _one_pass(encoder: TransformerEncoder, inputs: list, sites: list[str]) -> dict[str, list]:
    """Every layer of every site from one pass per batch."""
    outputs = {}
    for site in sites:
        moved = encoder.at_site(site)
        rows = moved.n_rows(inputs)
        outputs[site] = [
            np.empty((rows, moved.dimension), np.float32) for _ in range(moved.n_layers)
        ]
    encoder.encode_sites_into(inputs, outputs)
    return outputs


@pytest.mark.numerics
@pytest.mark.parametrize(
    ("model", "pooling"),
    [
        ("llama", "last"),
        ("llama", "mean"),
        ("llama", "words"),
        ("llama", "all"),
        ("minilm", "mean"),
        ("minilm", "cls"),
        ("minilm", "words"),
    ],
)
def test_every_site_from_one_pass_is_bit_identical_to_one_site_at_a_time(models, model, pooling):
    encoder = TransformerEncoder(
        models[model], pooling=pooling, batch_size=2, device="cpu", progress=False
    )
    inputs = WORDS if pooling == "words" else TEXTS
    together = _one_pass(encoder, inputs, SITES[model])
    for site, layers in together.items():
        alone = encoder.at_site(site).encode_all_layers(inputs)
        assert len(layers) == len(alone)
        for layer, (one_pass, own_pass) in enumerate(zip(layers, alone)):
            # the same bits, not merely close: one pass changes no arithmetic
            assert np.array_equal(one_pass.view(np.uint32), own_pass.view(np.uint32)), (
                f"{site} layer {layer}"
            )


def test_three_sites_cost_one_forward_pass_per_batch(models):
    encoder = TransformerEncoder(models["llama"], pooling="last", batch_size=2, progress=False)
    calls = []
    handle = encoder.model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        encoder.at_site("resid_post").encode_all_layers(TEXTS)
        one_site = len(calls)
        calls.clear()
        _one_pass(encoder, TEXTS, ["resid_post", "attn_out", "mlp_out"])
    finally:
        handle.remove()
    assert one_site == 3  # five texts, two per batch
    assert len(calls) == one_site


def test_sites_outputs_are_checked_per_site(models):
    encoder = TransformerEncoder(models["llama"], pooling="last", progress=False)
    good = [np.empty((len(TEXTS), 32), np.float32) for _ in range(2)]
    with pytest.raises(ValueError, match=r"outputs\['attn_out'\] must be 2 writable arrays"):
        encoder.encode_sites_into(TEXTS, {"resid_post": good, "attn_out": good[:1]})
    with pytest.raises(ValueError, match="site must be one of"):
        encoder.encode_sites_into(TEXTS, {"resid_posts": good})
    with pytest.raises(ValueError, match="at least one site"):
        encoder.encode_sites_into(TEXTS, {})
