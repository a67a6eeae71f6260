"""What a model's config and tokenizer say, read without its weights and without running it:
the facts an experiment file's ``transformer`` and ``sae`` entries are checked against before
anything is encoded (:func:`model_files`), by ``probemeter run`` and ``--check`` alike.

The config is read by ``transformers.AutoConfig`` (its attribute maps give GPT-2's ``n_head``
as ``num_attention_heads``), the tokenizer by ``AutoTokenizer`` only when asked
(:meth:`ModelFiles.has_chat_template`); both from ``"minilm"``, a local folder or a Hub id
already in the Hugging Face cache, never downloaded.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probemeter.encoders.hf import _cached_config, _decoder_only, _quiet, _resolve_model
from probemeter.encoders.sites import site_width

__all__ = ["ModelFiles", "model_files"]

#: tokenizer files whose change makes a folder's tokenizer another one (read again)
_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "chat_template.jinja")


@dataclass(frozen=True, eq=False)
class ModelFiles:
    """A model's config, and its tokenizer on demand, read without the weights.

    Attributes:
        source: the local folder (``"minilm"`` resolved) or the Hub id.
        config: the ``transformers`` config.
    """

    source: Path | str
    config: Any

    @property
    def model_type(self) -> str:
        """The config's ``model_type`` (``"llama"``, ``"bert"``, ...)."""
        return str(getattr(self.config, "model_type", "?"))

    @property
    def n_blocks(self) -> int | None:
        """The transformer blocks (``num_hidden_layers``), None where the config names none."""
        value = getattr(self.config, "num_hidden_layers", None)
        return int(value) if isinstance(value, int) else None

    @property
    def n_heads(self) -> int | None:
        """The attention heads of a block (``num_attention_heads``), None where the config
        names none."""
        value = getattr(self.config, "num_attention_heads", None)
        return int(value) if isinstance(value, int) else None

    @property
    def decoder_only(self) -> bool:
        """Whether the model is decoder-only (GPT-like), as the encoder decides it."""
        import transformers

        return _decoder_only(transformers, self.config)

    def site_width(self, site: str) -> int | None:
        """The features per token of ``site``
        (:func:`~probemeter.encoders.sites.site_width`); None for a module site or a config
        without the sizes it needs."""
        try:
            return site_width(self.config, site)
        except (AttributeError, TypeError, ValueError):
            return None

    def tokenizer(self) -> Any | None:
        """The model's tokenizer, read by ``AutoTokenizer`` offline (kept: read once per
        unchanged folder); None when it cannot be read here."""
        return _tokenizer(str(self.source), _stamp(self.source, _TOKENIZER_FILES))

    def has_chat_template(self) -> bool | None:
        """Whether the model's tokenizer has a chat template (the tokenizer is read by
        ``AutoTokenizer``, offline); None when it cannot be read here."""
        return _has_chat_template(str(self.source), _stamp(self.source, _TOKENIZER_FILES))


def model_files(model: str | os.PathLike[str]) -> ModelFiles | None:
    """The config of ``model`` (``"minilm"``, a local folder with config.json, or a Hugging
    Face Hub id whose config is in the cache), read by ``AutoConfig`` without the weights or
    the network; None when it is not at hand (an uncached Hub id, transformers or MiniLM not
    installed) or transformers cannot read it (the encoder then says why when it loads).
    Reading the same unchanged folder again costs nothing (the configs read are kept)."""
    try:
        source = _resolve_model(model if isinstance(model, str) else os.fspath(model))
        if isinstance(source, str) and _cached_config(source) is None:
            return None
    except (ValueError, ImportError):
        return None
    config = _config(str(source), _stamp(source, ("config.json",)))
    return None if config is None else ModelFiles(source, config)


def _stamp(source: Path | str, names: tuple[str, ...]) -> tuple[Any, ...]:
    """When and how large a local folder's ``names`` are (a Hub id's cached files never
    change): what a kept reading is keyed by, so that a folder saved again is read again."""
    if isinstance(source, str):
        return ()
    found = []
    for name in names:
        try:
            status = (Path(source) / name).stat()
        except OSError:
            found.append(None)
        else:
            found.append((status.st_mtime_ns, status.st_size))
    return tuple(found)


def _local(source: str) -> dict[str, Any]:
    """The source as ``from_pretrained`` takes it, offline."""
    path = Path(source)
    return {"pretrained_model_name_or_path": path if path.is_absolute() else source}


@functools.lru_cache(maxsize=16)
def _config(source: str, stamp: tuple[Any, ...]) -> Any | None:
    """``AutoConfig`` of ``source`` (``stamp``: see :func:`_stamp`), or None."""
    try:
        import transformers
    except ImportError:
        return None
    with _quiet(True):
        try:
            return transformers.AutoConfig.from_pretrained(**_local(source), local_files_only=True)
        except Exception:  # unreadable here: the encoder reports it when it loads
            return None


def _has_chat_template(source: str, stamp: tuple[Any, ...]) -> bool | None:
    """Whether ``AutoTokenizer`` of ``source`` has a chat template (``stamp``: see
    :func:`_stamp`), None when the tokenizer cannot be read offline."""
    tokenizer = _tokenizer(source, stamp)
    return None if tokenizer is None else bool(getattr(tokenizer, "chat_template", None))


@functools.lru_cache(maxsize=16)
def _tokenizer(source: str, stamp: tuple[Any, ...]) -> Any | None:
    """``AutoTokenizer`` of ``source`` (``stamp``: see :func:`_stamp`), None when it cannot be
    read offline."""
    import transformers

    with _quiet(True):
        try:
            return transformers.AutoTokenizer.from_pretrained(
                **_local(source), local_files_only=True
            )
        except Exception:  # unreadable here: the encoder reports it when it loads
            return None
