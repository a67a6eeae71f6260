"""Randomly initialised tiny decoder language models of the common families, built from their
configs and saved with a tokenizer trained here: offline stand-ins for Llama, Qwen2, Gemma 2,
GPT-NeoX/Pythia and GPT-2, to try sites, templates and sparse autoencoders on (the docs' page
"Probe a language model" and the tests use them). Nothing is downloaded."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BLOCKS",
    "DECODERS",
    "HIDDEN",
    "KEYWORDS",
    "TOKENIZER_TEXT",
    "byte_level_tokenizer",
    "contrast_pairs",
    "keyword_texts",
    "tiny_decoder",
]

#: hidden size and number of blocks of the tiny decoders
HIDDEN, BLOCKS = 32, 2
#: the text the tokenizer is trained on by default
TOKENIZER_TEXT = (
    "the cat sat on the mat",
    "dogs bark",
    "a quick brown fox jumps over the lazy dog near the river bank",
    "night falls",
    "she reads old books about distant stars",
)


def byte_level_tokenizer(texts: Sequence[str] = TOKENIZER_TEXT) -> tuple[Any, str]:
    """A byte-level BPE tokenizer (``tokenizers.Tokenizer``, 320 tokens) trained on ``texts``, and
    its end-of-text token."""
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
    backend.train_from_iterator(list(texts), trainer)
    return backend, "<|endoftext|>"


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


def tiny_decoder(
    folder: str | os.PathLike[str],
    family: str = "llama",
    texts: Sequence[str] = TOKENIZER_TEXT,
    *,
    positions: int = 64,
) -> Path:
    """A randomly initialised 2-block decoder of ``family`` (a key of :data:`DECODERS`: Llama,
    Qwen2, Gemma 2, GPT-NeoX sequential or parallel like Pythia, GPT-2; hidden size 32, 4 heads,
    ``positions`` tokens at most) saved to ``folder`` (created) with a byte-level BPE tokenizer
    trained on ``texts`` (:func:`byte_level_tokenizer`) that begins every text with a BOS token
    as Llama's does; returns the folder. Its weights are random: a model to try sites, templates
    and SAEs on, offline."""
    import torch
    import transformers
    from tokenizers import processors

    backend, eos = byte_level_tokenizer(texts)
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
        sizes = {"n_embd": HIDDEN, "n_layer": BLOCKS, "n_head": 4, "n_positions": positions}
    else:
        sizes |= {"intermediate_size": 48, "max_position_embeddings": positions}
    config = getattr(transformers, class_name)(
        vocab_size=backend.get_vocab_size(),
        bos_token_id=special,
        eos_token_id=special,
        pad_token_id=special,
        **sizes,
        **extra,
    )
    folder = Path(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


#: the words that say a label of :func:`keyword_texts`, two per label (one token each to the
#: tokenizer of :func:`tiny_decoder`)
KEYWORDS = {"a": ("cat", "dog"), "b": ("mat", "sat")}
#: the characters :func:`keyword_texts` fills texts with: more kinds of token than the tiny
#: decoders are wide, so that their noise covers every direction of a text's mean
_FILLER = tuple("abcdefghijklmnopqrstuvwxyz0123456789")


def keyword_texts(
    path: str | os.PathLike[str], n: int = 400, length: int = 200, random_state: int = 0
) -> Path:
    """Write a CSV (``text``, ``label``) of ``n`` texts whose label one token at a random
    position carries: ``length`` random filler characters with one keyword of the label
    (:data:`KEYWORDS`) inserted at a random place, labels alternating ``a``/``b``. A probe that
    reads one token at the right place — an attention probe — finds it; the last token and
    the mean of the tokens (the keyword one of ~``length`` tokens) barely carry it. Read with
    :func:`tiny_decoder`'s tokenizer the texts are about ``length`` tokens long: give the
    model ``positions`` to match."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(random_state)
    rows = []
    for index in range(n):
        label = "ab"[index % 2]
        left = int(rng.integers(0, length))
        keyword = str(rng.choice(KEYWORDS[label]))
        before = "".join(rng.choice(_FILLER, size=left))
        after = "".join(rng.choice(_FILLER, size=length - left))
        rows.append((f"{before} {keyword} {after}".strip(), label))
    path = Path(path)
    pd.DataFrame(rows, columns=["text", "label"]).to_csv(path, index=False)
    return path


#: what the true and the false member of :func:`contrast_pairs` say
_SAID = ("good", "bad")


def contrast_pairs(path: str | os.PathLike[str], n: int = 60, random_state: int = 2) -> Path:
    """Write a CSV (``claim``, ``negation``, ``truth``) of ``n`` contrast pairs: two texts that
    share their contents (two to five words such as "the cat sat") and differ in one word, "good"
    in the true member and "bad" in the false one; ``truth`` is 1 where the claim is the true
    member (every other row). A direction that flips between the two members says which is
    true: what contrast-consistent search looks for without the labels."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(random_state)
    words = "the cat sat on the mat dogs bark at night".split()
    rows = []
    for index in range(n):
        content = " ".join(rng.choice(words, size=int(rng.integers(2, 6))))
        truth = index % 2
        first, second = _SAID if truth else _SAID[::-1]
        rows.append((f"{first} {content}", f"{second} {content}", truth))
    path = Path(path)
    pd.DataFrame(rows, columns=["claim", "negation", "truth"]).to_csv(path, index=False)
    return path
