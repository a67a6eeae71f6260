"""Randomly initialised tiny transformers saved to a folder, for tests that need a model on
disk without a download (importable from any test: pytest puts ``tests/`` on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path

#: hidden size and number of blocks of the tiny models (hidden states 0..BLOCKS)
HIDDEN, BLOCKS = 32, 2


def make_tiny_bert(folder: Path) -> Path:
    """A 2-block BERT (hidden size 32) with MiniLM's WordPiece tokenizer, saved to ``folder``."""
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
