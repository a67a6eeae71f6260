"""Pooled activations of a model object the user already holds: a TransformerLens
``HookedTransformer`` (or ``TransformerBridge``) read at any of its hook names, or an nnsight
``LanguageModel`` read at any of its modules' outputs, with the tokenisation, batching by
tokens, padding and pooling of :class:`~probemeter.encoders.hf.TransformerEncoder`.

:class:`ModelEncoder` is a :class:`TransformerEncoder` whose "layers" are the given hook names,
in their order, and whose forward pass is the model object's: everything else — the sentences
checked, ordered by length and batched by ``batch_size`` and ``batch_tokens``, right padding
(so a causal model's real tokens never see a pad), the ``mean``/``last``/``cls``/``all``/
``words`` pooling, ``keep_bos``, truncation and the length check — is the transformer
encoder's own code, so on the same weights the features are the ones an experiment file's
``kind = "transformer"`` reads (tests compare them).

- **TransformerLens** (Nanda & Bloom 2022): any name of ``model.hook_dict`` (``blocks.3.
  hook_resid_post``, ``blocks.0.attn.hook_z``, ``blocks.2.mlp.hook_post``, ...), read by a
  hook during ``run_with_hooks(tokens, attention_mask=..., return_type=None)``. The tokens are
  the model's tokenizer's, as the transformer encoder tokenises: TransformerLens sets its
  tokenizer up to prepend a BOS, as ``to_tokens`` does, so the texts read as TransformerLens
  reads them (``keep_bos=False`` leaves the BOS out of a mean); pass the Hugging Face tokenizer
  as ``tokenizer=`` to read them as ``kind = "transformer"`` does.
- **nnsight** (Fiotto-Kaufman et al. 2024): a module path of the wrapped model
  (``transformer.h.3``, ``model.layers.3.mlp``), its output saved inside ``model.trace``
  (the first element of a tuple output: a block's hidden states).

A value per token is (batch, tokens, ...): trailing axes (heads × d_head of ``hook_z``) are
flattened into one feature axis; a hook whose value is not per token (attention patterns) is
refused.

References:
    Nanda, N. and Bloom, J. (2022). TransformerLens.
    https://github.com/TransformerLensOrg/TransformerLens
    Fiotto-Kaufman, J. et al. (2024). NNsight and NDIF: Democratizing Access to Foundation
    Model Internals. arXiv:2407.14561
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from probemeter._validation import boolean, check_scalar, one_of, text
from probemeter.encoders.hf import (
    POOLINGS,
    TRUNCATIONS,
    WORD_POOLINGS,
    TransformerEncoder,
    _byte_level_without_prefix_space,
    _decoder_only,
    _import_transformers,
    position_limit,
)

if TYPE_CHECKING:
    from transformers import BatchEncoding

__all__ = ["LENS", "NNSIGHT", "ModelEncoder", "model_backend"]

#: a TransformerLens model: HookedTransformer or TransformerBridge (hook points by name)
LENS = "transformer_lens"
#: an nnsight LanguageModel (modules by path)
NNSIGHT = "nnsight"


def model_backend(model: object) -> str:
    """Which library ``model`` comes from: :data:`LENS` or :data:`NNSIGHT`.

    Raises:
        ValueError: any other object (one line naming its type and what is taken).
    """
    module = type(model).__module__.split(".", 1)[0]
    if module == "transformer_lens" and hasattr(model, "hook_dict"):
        return LENS
    if module == "nnsight" and hasattr(model, "trace"):
        return NNSIGHT
    raise ValueError(
        f"model is a {type(model).__module__}.{type(model).__name__}; give a TransformerLens "
        "HookedTransformer or TransformerBridge, or an nnsight LanguageModel"
    )


class ModelEncoder(TransformerEncoder):
    """Pooled activations at ``hook_names`` of a TransformerLens or nnsight model in memory
    (the module docstring): layer ``l`` of :meth:`encode_all_layers` and
    :meth:`encode_layers_into` is ``hook_names[l]``; one forward pass per batch serves all.

    Args:
        model: a ``transformer_lens.HookedTransformer`` / ``TransformerBridge`` or an
            ``nnsight.LanguageModel`` (or its successor ``nnsight.TransformersModel``), on the
            device it is to run on (never moved).
        hook_names: TransformerLens hook names of ``model`` (its ``hook_dict``), or nnsight
            module paths; all of one width (features per token).
        tokenizer: a Hugging Face tokenizer; default the model's own (``model.tokenizer``). A
            copy is padded on the right, the model's own is not changed.
        pooling, word_pooling, batch_size, batch_tokens: as :class:`TransformerEncoder`'s.
        max_length, truncate, keep_bos, progress: as :class:`TransformerEncoder`'s.
        name: label for results; default ``"<model class>/<pooling>"``.

    Raises:
        ValueError: one line naming the argument: another kind of model, a hook name the model
            does not have (the message lists a few it has), a hook whose value is not per
            token, hooks of different widths, a model without a tokenizer, an encoder-only
            model (TransformerLens: only decoders), and what :class:`TransformerEncoder`
            refuses of the other arguments.
    """

    def __init__(
        self,
        model: Any,
        hook_names: Sequence[str],
        *,
        tokenizer: Any = None,
        pooling: str = "mean",
        word_pooling: str = "mean",
        batch_size: int = 32,
        batch_tokens: int | None = None,
        max_length: int | None = None,
        truncate: str | None = None,
        keep_bos: bool = True,
        name: str | None = None,
        progress: bool = False,
    ) -> None:
        backend = model_backend(model)
        if isinstance(hook_names, str) or not isinstance(hook_names, Sequence) or not hook_names:
            raise ValueError("hook_names must be a non-empty list of the model's hook names")
        names = [text()(hook, "hook_names") for hook in hook_names]
        if len(set(names)) != len(names):
            raise ValueError(f"hook_names repeats a name: {names}")
        one_of(*POOLINGS)(pooling, "pooling")
        one_of(*WORD_POOLINGS)(word_pooling, "word_pooling")
        if truncate is not None:
            one_of(*TRUNCATIONS)(truncate, "truncate")
        check_scalar(batch_size, "batch_size", int, min_val=1)
        if batch_tokens is not None:
            check_scalar(batch_tokens, "batch_tokens", int, min_val=1)
        boolean()(keep_bos, "keep_bos")
        boolean()(progress, "progress")
        transformers = _import_transformers()
        self.backend = backend
        self.hook_names = tuple(names)
        self._targets = [self._target(model, backend, hook) for hook in names]
        tokenizer = getattr(model, "tokenizer", None) if tokenizer is None else tokenizer
        if tokenizer is None:
            raise ValueError("tokenizer: the model has none; pass tokenizer= (a HF tokenizer)")
        if pooling == "words" and _byte_level_without_prefix_space(tokenizer):
            raise ValueError(
                "pooling='words' with a byte-level tokenizer needs add_prefix_space=True: pass "
                "tokenizer=AutoTokenizer.from_pretrained(..., add_prefix_space=True)"
            )
        # a copy: padding on the right and a pad token are the encoder's, not the user's
        self.tokenizer = self._prepare_tokenizer(copy.deepcopy(tokenizer), pooling, "model")
        self.tokenizer.truncation_side = truncate or "right"
        if backend == LENS:
            config = None
            decoder = True  # HookedTransformer and TransformerBridge run causal models here
            limit = min(int(self.tokenizer.model_max_length), int(model.cfg.n_ctx))
        else:
            config = model.config
            decoder = _decoder_only(transformers, config)
            limit = position_limit(self.tokenizer, config)
        if decoder and pooling == "cls":
            raise ValueError(
                "pooling='cls' takes the first token, which sees only itself in a decoder"
            )
        if max_length is not None:
            check_scalar(max_length, "max_length", int, min_val=2, max_val=limit)
        self.model = model
        self.config = config
        self.device = next(iter(self._parameters(model, backend))).device
        self.site = "hooks"
        self.model_path = f"{type(model).__name__} in memory"
        self.revision = None
        self.decoder_only = decoder
        self.layer = 0
        self._set_reading(pooling, word_pooling, keep_bos, truncate, batch_size, batch_tokens)
        self.max_length = int(limit if max_length is None else max_length)
        self.random_init = False
        self.random_state = 0
        self.progress = progress
        self.dtype = "float32"
        self._n_layers = len(names)
        self._counts = {}
        self._token_types = (
            not decoder and config is not None and hasattr(config, "type_vocab_size")
        )
        shown = pooling if word_pooling == "mean" else f"{pooling}-{word_pooling}"
        self.name = name or f"{type(model).__name__}/{shown}"
        self.dimension = self._width()

    @staticmethod
    def _parameters(model: Any, backend: str) -> Any:
        return (model._module if backend == NNSIGHT else model).parameters()

    @staticmethod
    def _target(model: Any, backend: str, hook: str) -> Any:
        """The hook point (TransformerLens) or module envoy (nnsight) named ``hook``."""
        if backend == LENS:
            if hook not in model.hook_dict:
                known = [name for name in model.hook_dict if ".0." in name or "blocks" not in name]
                raise ValueError(
                    f"hook_names: {hook!r} is no hook of the model; it has e.g. {known[:8]} "
                    f"({len(model.hook_dict)} in all: model.hook_dict)"
                )
            return hook
        envoy = model
        try:
            for part in hook.split("."):
                envoy = envoy[int(part)] if part.isdigit() else getattr(envoy, part)
        except (AttributeError, IndexError, TypeError):
            raise ValueError(
                f"hook_names: {hook!r} is no module path of the model (e.g. one of "
                f"{[n for n, _ in model._module.named_modules()][1:8]})"
            ) from None
        return envoy

    @torch.no_grad()
    def _width(self) -> int:
        """The features per token of every hook, from one forward pass on a short text."""
        encoding = self.tokenizer(["a b"], return_tensors="pt")
        values = self._forward(encoding)
        widths = {hook: int(value.shape[-1]) for hook, value in zip(self.hook_names, values)}
        if len(set(widths.values())) > 1:
            raise ValueError(
                f"hook_names have different widths {widths}; give hooks of one width at a time"
            )
        return next(iter(widths.values()))

    def _forward(self, encoding: BatchEncoding) -> list[torch.Tensor]:
        """Each hook's value from one forward pass: (batch, tokens, width), on the device."""
        inputs = self._model_inputs(encoding)
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        if self.backend == LENS:
            found: dict[str, torch.Tensor] = {}

            def keeper(name: str) -> Any:
                # by the name asked for: a TransformerBridge's hook.name is the canonical one
                # of an alias (blocks.0.hook_resid_post is blocks.0.hook_out)
                def keep(value: torch.Tensor, hook: Any) -> None:
                    found[name] = value

                return keep

            hooks = [(name, keeper(name)) for name in self.hook_names]
            self.model.run_with_hooks(ids, attention_mask=mask, return_type=None, fwd_hooks=hooks)
            values = [found[name] for name in self.hook_names]
        else:
            values = self._traced(inputs)
        return [
            self._per_token(hook, value, ids.shape) for hook, value in zip(self.hook_names, values)
        ]

    def _traced(self, inputs: dict[str, torch.Tensor]) -> list[Any]:
        """The nnsight modules' outputs, saved inside one trace (nnsight compiles the body of
        the ``with`` block from this file's source)."""
        saved = []
        with self.model.trace(dict(inputs)):
            for envoy in self._targets:
                saved.append(envoy.output.save())
        return [value[0] if isinstance(value, tuple) else value for value in saved]

    @staticmethod
    def _per_token(hook: str, value: Any, shape: torch.Size) -> torch.Tensor:
        """``value`` as (batch, tokens, features), or one line naming the hook."""
        # an attention pattern (batch, heads, tokens, tokens) is per pair of tokens, even where
        # heads happen to equal tokens
        pairs = (
            isinstance(value, torch.Tensor) and value.ndim == 4 and value.shape[2:] == shape[1:] * 2
        )
        if (
            not isinstance(value, torch.Tensor)
            or value.ndim < 3
            or value.shape[:2] != shape
            or pairs
        ):
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(
                f"hook_names: {hook!r} gives {got}, not one value per token (batch {shape[0]}, "
                f"tokens {shape[1]}, features...)"
            )
        return value.reshape(*shape, -1)

    def _site_values(
        self, encoding: BatchEncoding, reads: Mapping[str, list[int]]
    ) -> dict[str, list[torch.Tensor]]:
        """The hooks' values at the layers of ``reads`` (its one site, the hooks: indices into
        :attr:`hook_names`) from one forward pass, one (batch, tokens, width) tensor each."""
        values = self._forward(encoding)
        return {site: [values[layer] for layer in layers] for site, layers in reads.items()}

    def _site_shape(self, site: str) -> tuple[int, int]:
        """Its one site's layers (the hook names) and width."""
        return self._n_layers, self.dimension

    @property
    def cache_key(self) -> dict[str, Any]:
        """A model object has no file to key features by: they are not cached."""
        raise ValueError("features of a model in memory are not cached (no file names its weights)")

    def at_site(self, site: str) -> TransformerEncoder:
        raise ValueError("a ModelEncoder reads hook_names, not sites: build one per set of hooks")

    def random_init_copy(self, random_state: int = 0) -> TransformerEncoder:
        raise ValueError("a model in memory has no architecture file to initialise afresh")
