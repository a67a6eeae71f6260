"""Build the offline stand-ins the pages "Probe a language model" and "Probes of today's
practice" run on: a randomly initialised tiny Llama-style model, a SAELens sparse autoencoder
over its block 1's residual stream, a texts file of labelled reviews, texts whose label one
keyword carries (``keywords.csv``), contrast pairs (``pairs.csv``) and the experiment files
beside them (:data:`EXPERIMENTS`).

    python examples/tiny_language_model.py lm-demo
    probemeter run lm-demo/language_model.toml --check
    probemeter run lm-demo/language_model.toml --out runs

The model's and the SAE's weights are random, so the numbers say nothing about language: the
point is the commands. With a real model, ``model`` is a Hub id and ``sae`` a folder SAELens
saved (the page shows both).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

#: words the reviews of each label are drawn from
WORDS = {
    "positive": "great lovely wonderful superb charming delightful moving".split(),
    "negative": "dull awful boring clumsy tedious bland forgettable".split(),
}
FILLER = "the film was a story with acting and music that felt".split()
#: the experiment files written beside the model: the page "Probe a language model"'s, and the
#: page "Probes of today's practice"'s (attention probes, direction baselines and surface
#: floors, contrast pairs)
EXPERIMENTS = (
    "language_model.toml",
    "attention_probes.toml",
    "directions.toml",
    "contrast_pairs.toml",
)


def write_reviews(path: Path, n: int = 120, random_state: int = 0) -> None:
    """``n`` short reviews, half of each label, each a few filler words and one or two words of
    its label; the last quarter is the test split."""
    rng = np.random.default_rng(random_state)
    rows = []
    for index in range(n):
        label = ("positive", "negative")[index % 2]
        words = [*rng.choice(FILLER, size=int(rng.integers(3, 8))), *rng.choice(WORDS[label], 2)]
        rng.shuffle(words)
        rows.append((" ".join(words), label, "test" if index >= 3 * n // 4 else "train"))
    pd.DataFrame(rows, columns=["text", "label", "split"]).to_csv(path, index=False)


def write_sae(folder: Path, d_in: int, d_sae: int = 256, random_state: int = 0) -> None:
    """A standard SAELens SAE over ``blocks.1.hook_resid_post`` with random weights, biased so
    that a few latents fire per row, saved as ``SAE.save_model`` saves a trained one."""
    import sae_lens
    import torch
    from sae_lens.saes.sae import SAEMetadata

    config = sae_lens.StandardSAEConfig(
        d_in=d_in, d_sae=d_sae, metadata=SAEMetadata(hook_name="blocks.1.hook_resid_post")
    )
    sae = sae_lens.StandardSAE(config)
    generator = torch.Generator().manual_seed(random_state)
    with torch.no_grad():
        sae.W_enc.copy_(torch.randn(sae.W_enc.shape, generator=generator))
        sae.b_enc.copy_(torch.randn(sae.b_enc.shape, generator=generator) - 2.0)
    sae.save_model(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where to write the model, SAE and files")
    folder = parser.parse_args().folder
    folder.mkdir(parents=True, exist_ok=True)
    from probemeter.encoders.tiny import (
        HIDDEN,
        TOKENIZER_TEXT,
        contrast_pairs,
        keyword_texts,
        tiny_decoder,
    )

    write_reviews(folder / "reviews.csv")
    texts = pd.read_csv(folder / "reviews.csv")["text"]
    # the tokenizer also learns the tiny decoders' words (one token each for the keywords of
    # keywords.csv), and 256 positions read its 200-token texts
    tokenizer_texts = [*texts, "Review: Sentiment:", *TOKENIZER_TEXT]
    tiny_decoder(folder / "llama", "llama", texts=tokenizer_texts, positions=256)
    write_sae(folder / "sae", d_in=HIDDEN)
    keyword_texts(folder / "keywords.csv", n=400, length=200)
    contrast_pairs(folder / "pairs.csv", n=60)
    for name in EXPERIMENTS:
        shutil.copy(Path(__file__).with_name(name), folder / name)
    print(
        f"wrote {folder}/: llama/, sae/, reviews.csv, keywords.csv, pairs.csv, "
        + ", ".join(EXPERIMENTS)
    )


if __name__ == "__main__":
    main()
