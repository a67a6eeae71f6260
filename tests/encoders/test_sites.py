"""Sites inside transformer blocks (``TransformerEncoder(site=...)``): each block site of each
mapped family against TransformerLens's own hook points on the same weights, the residual
stream's identities, module paths, and the errors."""

from pathlib import Path

import numpy as np
import pytest
from tiny_models import BLOCKS, DECODERS, HIDDEN, make_tiny_bert, make_tiny_decoder

from probemeter.encoders.hf import TransformerEncoder
from probemeter.encoders.sites import BLOCK_SITES, hook_name

pytest.importorskip("transformers")

TEXTS = ["the cat sat on the mat", "dogs bark", "a quick brown fox jumps over the lazy dog"]


@pytest.fixture(scope="module")
def decoders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("decoders")
    return {family: make_tiny_decoder(folder / family, family) for family in DECODERS}


def _sites(folder: Path, family: str) -> list[str]:
    return [site for site in BLOCK_SITES if not (family == "pythia" and site == "resid_mid")]


@pytest.mark.parametrize("family", list(DECODERS))
def test_every_block_site_equals_transformer_lens_hook_point(decoders, family):
    """The last token's value at every site and block equals ``run_with_cache`` of
    TransformerLens's ``TransformerBridge`` booted on the same folder (``hook_z`` flattened)."""
    pytest.importorskip("transformer_lens", reason="transformer-lens is not installed")
    from transformer_lens.model_bridge import TransformerBridge

    bridge = TransformerBridge.boot_transformers(str(decoders[family]), device="cpu")
    encoder = TransformerEncoder(decoders[family], pooling="last", progress=False)
    names = [hook_name(site, block) for site in _sites(family, family) for block in range(BLOCKS)]
    cached = []
    for text in TEXTS:
        ids = bridge.tokenizer(text, return_tensors="pt")["input_ids"]
        _, cache = bridge.run_with_cache(ids, names_filter=names)
        cached.append(cache)
    for site in _sites(family, family):
        ours = encoder.at_site(site).encode_all_layers(TEXTS)
        assert ours.shape[0] == BLOCKS
        for block in range(BLOCKS):
            name = hook_name(site, block)
            theirs = np.stack([c[name][0, -1].reshape(-1).float().numpy() for c in cached])
            assert np.abs(theirs).max() > 0, name
            np.testing.assert_allclose(ours[block], theirs, atol=1e-5, err_msg=name)


def test_the_residual_stream_adds_up_in_a_pre_norm_decoder(decoders):
    """Llama: resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out, resid_pre of
    block i is hidden state i, and resid_post of the last block is not the last hidden state
    (which is after the final norm)."""
    encoder = TransformerEncoder(decoders["llama"], pooling="mean", progress=False)
    site = {name: encoder.at_site(name).encode_all_layers(TEXTS) for name in BLOCK_SITES}
    hidden = encoder.encode_all_layers(TEXTS)
    np.testing.assert_allclose(site["resid_mid"], site["resid_pre"] + site["attn_out"], atol=1e-5)
    np.testing.assert_allclose(site["resid_post"], site["resid_mid"] + site["mlp_out"], atol=1e-5)
    np.testing.assert_allclose(site["resid_pre"], hidden[:BLOCKS], atol=1e-6)
    np.testing.assert_allclose(site["resid_post"][0], hidden[1], atol=1e-6)
    assert np.abs(site["resid_post"][-1] - hidden[-1]).max() > 1e-3


def test_bert_sites_follow_its_post_norm_blocks(tmp_path):
    """BERT: resid_mid is LayerNorm(resid_pre + attn_out) and resid_post LayerNorm(resid_mid +
    mlp_out), with the block's own LayerNorms; resid_post of block i is hidden state i + 1."""
    import torch

    folder = make_tiny_bert(tmp_path / "bert")
    encoder = TransformerEncoder(folder, pooling="words", progress=False)
    words = [text.split() for text in TEXTS]
    site = {name: encoder.at_site(name).encode_all_layers(words) for name in BLOCK_SITES}
    hidden = encoder.encode_all_layers(words)
    np.testing.assert_allclose(site["resid_post"], hidden[1:], atol=1e-5)
    np.testing.assert_allclose(site["resid_pre"], hidden[:-1], atol=1e-5)
    assert site["heads"].shape[-1] == HIDDEN
    # one-piece words: a word's mean over its pieces is its piece, so the norms apply per row
    block = encoder.model.encoder.layer[0]
    with torch.no_grad():
        mid = block.attention.output.LayerNorm(
            torch.tensor(site["resid_pre"][0] + site["attn_out"][0])
        ).numpy()
        post = block.output.LayerNorm(torch.tensor(site["resid_mid"][0] + site["mlp_out"][0]))
    single = [len(encoder.tokenizer.tokenize(word)) == 1 for text in words for word in text]
    np.testing.assert_allclose(site["resid_mid"][0][single], mid[single], atol=1e-5)
    np.testing.assert_allclose(site["resid_post"][0][single], post.numpy()[single], atol=1e-5)


def test_a_module_path_with_or_without_the_task_model_prefix(decoders):
    encoder = TransformerEncoder(decoders["llama"], pooling="last", progress=False)
    mlp = encoder.at_site("mlp_out").encode_all_layers(TEXTS)
    for path in ("module:layers.{i}.mlp", "module:model.layers.{i}.mlp"):
        moved = encoder.at_site(path)
        assert (moved.n_layers, moved.dimension) == (BLOCKS, HIDDEN)
        np.testing.assert_array_equal(moved.encode_all_layers(TEXTS), mlp)
    inner = encoder.at_site("module:layers.{i}.mlp.up_proj")
    assert inner.dimension == 48  # the tiny decoders' intermediate size
    assert inner.cache_key["site"] == "module:layers.{i}.mlp.up_proj"


def test_at_site_shares_the_model_and_equals_a_fresh_encoder(decoders):
    encoder = TransformerEncoder(decoders["qwen2"], pooling="mean", progress=False)
    moved = encoder.at_site("attn_out")
    fresh = TransformerEncoder(decoders["qwen2"], pooling="mean", progress=False, site="attn_out")
    assert moved.model is encoder.model
    assert moved.cache_key == fresh.cache_key
    assert moved.name == fresh.name == "qwen2/attn_out/layer1/mean"
    np.testing.assert_array_equal(moved.encode_all_layers(TEXTS), fresh.encode_all_layers(TEXTS))
    assert "site" not in encoder.cache_key  # the hidden states keep their keys
    assert encoder.at_site("hidden").cache_key == encoder.cache_key


def test_heads_are_every_query_head_side_by_side_with_grouped_keys(decoders):
    """Llama with 4 query heads over 2 key-value heads, Gemma 2 with head_dim 8: hook_z has one
    d_head block per query head."""
    for family in ("llama", "gemma2"):
        encoder = TransformerEncoder(decoders[family], site="heads", progress=False)
        assert (encoder.n_layers, encoder.dimension) == (BLOCKS, 4 * 8)


def test_sites_are_refused_with_one_clear_line(decoders, tmp_path):
    import transformers

    with pytest.raises(ValueError, match=r"site must be one of hidden, resid_pre.*module:"):
        TransformerEncoder(decoders["llama"], site="resid", progress=False)
    with pytest.raises(ValueError, match=r"one \{i\} for the block"):
        TransformerEncoder(decoders["llama"], site="module:layers.mlp", progress=False)
    with pytest.raises(ValueError, match=r"'layers\.0\.mlpp' is no module of this llama model"):
        TransformerEncoder(decoders["llama"], site="module:layers.{i}.mlpp", progress=False)
    with pytest.raises(ValueError, match=r"resid_mid' does not exist .* in parallel"):
        TransformerEncoder(decoders["pythia"], site="resid_mid", progress=False)
    with pytest.raises(ValueError, match="layer"):
        TransformerEncoder(decoders["llama"], layer=BLOCKS, site="attn_out", progress=False)
    # an architecture outside the mapping: OPT
    folder = tmp_path / "opt"
    config = transformers.OPTConfig(
        vocab_size=400,
        hidden_size=16,
        num_hidden_layers=1,
        ffn_dim=16,
        num_attention_heads=2,
        word_embed_proj_dim=16,
        max_position_embeddings=32,
    )
    transformers.OPTModel(config).save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(decoders["llama"]).save_pretrained(folder)
    with pytest.raises(ValueError, match=r"opt architecture is not mapped .*gpt2.*module:"):
        TransformerEncoder(folder, site="attn_out", progress=False)
    opt = TransformerEncoder(folder, site="module:decoder.layers.{i}.self_attn", progress=False)
    assert opt.encode(TEXTS).shape == (3, 16)
    # OPT's MLP works on the batch's tokens flattened: no (batch, tokens, features) there
    with pytest.raises(ValueError, match=r"fc2' gives no per-token values \(shape \(2, 16\)\)"):
        TransformerEncoder(folder, site="module:decoder.layers.{i}.fc2", progress=False)


def test_a_token_budget_bounds_each_batch_and_keeps_the_features(decoders):
    """With batch_tokens, no forward pass holds more tokens than the budget (padding included,
    but for a sentence longer than it), and the features are those of plain batches."""
    texts = [" ".join(["the cat sat"] * (1 + i % 5)) for i in range(12)]
    plain = TransformerEncoder(decoders["llama"], pooling="mean", batch_size=4, progress=False)
    budget = TransformerEncoder(
        decoders["llama"], pooling="mean", batch_size=4, batch_tokens=24, progress=False
    )
    seen = []
    hook = budget.model.register_forward_pre_hook(
        lambda _module, args, kwargs: seen.append(tuple(kwargs["input_ids"].shape)),
        with_kwargs=True,
    )
    try:
        features = budget.encode(texts)
    finally:
        hook.remove()
    longest = max(len(budget.tokenizer(text)["input_ids"]) for text in texts)
    assert all(rows * tokens <= max(24, longest) and rows <= 4 for rows, tokens in seen)
    assert sum(rows for rows, _ in seen) == len(texts) and len(seen) > 3
    np.testing.assert_allclose(features, plain.encode(texts), atol=1e-5)
    with pytest.raises(ValueError, match="batch_tokens"):
        TransformerEncoder(decoders["llama"], batch_tokens=0, progress=False)
