"""Sites inside a transformer's blocks: where in a Hugging Face model each TransformerLens hook
point is, and reading them with PyTorch forward hooks during one forward pass.

A *site* names one activation per block, as TransformerLens names its hook points
(Nanda & Bloom 2022):

=============  =================================  ==============================================
site           TransformerLens hook               value
=============  =================================  ==============================================
``resid_pre``  ``blocks.{i}.hook_resid_pre``      the residual stream entering block ``i``
``resid_mid``  ``blocks.{i}.hook_resid_mid``      after the attention's residual addition,
                                                  before the MLP's (sequential blocks only)
``resid_post`` ``blocks.{i}.hook_resid_post``     the residual stream leaving block ``i``
``attn_out``   ``blocks.{i}.hook_attn_out``       the attention's output added to the stream
``mlp_out``    ``blocks.{i}.hook_mlp_out``        the MLP's output added to the stream
``heads``      ``blocks.{i}.attn.hook_z``         each head's output before the output
                                                  projection, heads side by side
                                                  (``n_heads × d_head`` features)
=============  =================================  ==============================================

``hidden`` is not a hook point: it is the ``hidden_states`` a Hugging Face model returns
(``output_hidden_states``), ``n_blocks + 1`` of them, 0 the embeddings and ``i ≥ 1`` the stream
after block ``i − 1``, the last one after the model's final normalisation where it has one
(GPT-2's ``ln_f``, Llama's ``norm``): ``hidden`` layer ``i`` equals ``resid_post`` of block
``i − 1`` except at the last layer of such models. A ``module:`` site reads the output of any
module, its path written with ``{i}`` for the block (``module:layers.{i}.mlp.act_fn``).

Where the hook points are is declared per architecture family (:data:`FAMILIES`, keyed by the
config's ``model_type``); the values match TransformerLens's ``TransformerBridge``, which wraps
the same Hugging Face modules (``tests/encoders/test_sites.py`` compares them).

References:
    Nanda, N. & Bloom, J. (2022). TransformerLens. https://github.com/TransformerLensOrg/TransformerLens
    Elhage, N. et al. (2021). A Mathematical Framework for Transformer Circuits.
    https://transformer-circuits.pub/2021/framework/index.html (the residual stream; heads'
    outputs as independent additions to it)
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "BLOCK_SITES",
    "FAMILIES",
    "HIDDEN",
    "MODULE_PREFIX",
    "SITES",
    "Family",
    "SitePlan",
    "hook_name",
    "plan_site",
    "site_label",
    "site_problem",
    "site_width",
]

#: the hidden states the model returns (0 = embeddings, then one per block), the default
#: site: not a hook point
HIDDEN = "hidden"
#: sites read inside every block, by their TransformerLens names
BLOCK_SITES = ("resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out", "heads")
#: every named site
SITES = (HIDDEN, *BLOCK_SITES)
#: a site given as a module path: ``module:<path with {i}>``
MODULE_PREFIX = "module:"

#: TransformerLens's hook name of each block site (``{i}``: the block)
_HOOKS = {
    "resid_pre": "blocks.{i}.hook_resid_pre",
    "resid_mid": "blocks.{i}.hook_resid_mid",
    "resid_post": "blocks.{i}.hook_resid_post",
    "attn_out": "blocks.{i}.hook_attn_out",
    "mlp_out": "blocks.{i}.hook_mlp_out",
    "heads": "blocks.{i}.attn.hook_z",
}


@dataclass(frozen=True)
class Family:
    """Where the block sites of one architecture family are: ``blocks`` is the path of the list
    of blocks in the base model (``AutoModel``); each site is ``(module, read)``, the module's
    path inside a block (``""``: the block) and whether its ``"input"`` or ``"output"`` is the
    site's value. A site mapped to None does not exist in the family (``reason`` says why)."""

    blocks: str
    resid_mid: tuple[str, str] | None
    attn_out: tuple[str, str]
    mlp_out: tuple[str, str]
    heads: tuple[str, str]
    reason: str = ""

    def point(self, site: str) -> tuple[str, str] | None:
        """Where ``site`` is read: ``(module path inside a block, "input" | "output")``."""
        if site == "resid_pre":
            return ("", "input")
        if site == "resid_post":
            return ("", "output")
        return getattr(self, site)


_LLAMA = Family(
    blocks="layers",
    resid_mid=("post_attention_layernorm", "input"),
    attn_out=("self_attn", "output"),
    mlp_out=("mlp", "output"),
    heads=("self_attn.o_proj", "input"),
)
# Gemma 2 and 3 normalise the attention's and the MLP's outputs before adding them to the
# stream: what is added (TransformerLens's hook_attn_out / hook_mlp_out) is the norms' output
_GEMMA2 = Family(
    blocks="layers",
    resid_mid=("pre_feedforward_layernorm", "input"),
    attn_out=("post_attention_layernorm", "output"),
    mlp_out=("post_feedforward_layernorm", "output"),
    heads=("self_attn.o_proj", "input"),
)
_BERT = Family(
    blocks="encoder.layer",
    # post-norm: the stream after the attention's addition is its LayerNorm's output
    resid_mid=("attention.output.LayerNorm", "output"),
    attn_out=("attention.output.dense", "output"),
    mlp_out=("output.dense", "output"),
    heads=("attention.output.dense", "input"),
)

#: architecture families by the config's ``model_type``
FAMILIES: dict[str, Family] = {
    "gpt2": Family(
        blocks="h",
        resid_mid=("ln_2", "input"),
        attn_out=("attn", "output"),
        mlp_out=("mlp", "output"),
        heads=("attn.c_proj", "input"),
    ),
    "gpt_neox": Family(
        blocks="layers",
        resid_mid=("post_attention_layernorm", "input"),
        attn_out=("attention", "output"),
        mlp_out=("mlp", "output"),
        heads=("attention.dense", "input"),
    ),
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "qwen2": _LLAMA,
    "qwen3": _LLAMA,
    "gemma": _LLAMA,
    "gemma2": _GEMMA2,
    "gemma3_text": _GEMMA2,
    "bert": _BERT,
    "roberta": _BERT,
    "xlm-roberta": _BERT,
    "electra": _BERT,
}


def hook_name(site: str, block: int) -> str:
    """TransformerLens's hook name of a block site (``hook_name("attn_out", 3)`` is
    ``"blocks.3.hook_attn_out"``)."""
    return _HOOKS[site].format(i=block)


def site_problem(value: Any) -> str | None:
    """What is wrong with a ``site`` value (a name of :data:`SITES` or ``module:<path>`` with
    one ``{i}``), or None."""
    if isinstance(value, str) and value in SITES:
        return None
    if isinstance(value, str) and value.startswith(MODULE_PREFIX):
        path = value[len(MODULE_PREFIX) :]
        if path.count("{i}") != 1 or not re.fullmatch(r"[\w.{}]+", path):
            return (
                f"a module site is module:<dotted path> with one {{i}} for the block, e.g. "
                f'"module:layers.{{i}}.mlp"; got {value!r}'
            )
        return None
    return f"must be one of {', '.join(SITES)}, or module:<path with {{i}}>; got {value!r}"


def site_label(site: str) -> str:
    """How a site names the representations of its sweep (``NAME-<label>-<layer>``): its name,
    or a module path's part after the block (``module:layers.{i}.mlp.up_proj`` →
    ``mlp.up_proj``)."""
    if not site.startswith(MODULE_PREFIX):
        return site
    after = site[len(MODULE_PREFIX) :].split("{i}", 1)[1].strip(".")
    return after or "block"


def _module(model: torch.nn.Module, path: str) -> torch.nn.Module | None:
    try:
        return model.get_submodule(path) if path else model
    except AttributeError:
        return None


@dataclass(frozen=True)
class SitePlan:
    """Where one site of one loaded model is read: per block, the module and whether its input
    or output is the value; ``width`` is the features per token (None until a forward pass
    shows it, for module sites)."""

    site: str
    modules: tuple[torch.nn.Module, ...]
    read: str
    width: int | None

    @property
    def n_layers(self) -> int:
        """The site's layers: one per block."""
        return len(self.modules)

    @contextmanager
    def capture(self, layers: Sequence[int]) -> Iterator[dict[int, torch.Tensor]]:
        """Within the context, each forward pass stores the value at ``layers`` (block
        indices) in the yielded dict (block → tensor of shape (batch, tokens, width)); the hooks
        are removed on exit, whatever happens."""
        values: dict[int, torch.Tensor] = {}
        handles = []

        def keep(block: int, value: Any) -> None:
            tensor = value[0] if isinstance(value, tuple) else value
            if not isinstance(tensor, torch.Tensor):
                raise ValueError(
                    f"site {self.site!r}: block {block}'s module gave a {type(tensor).__name__}, "
                    "not a tensor"
                )
            values[block] = tensor

        try:
            for block in layers:
                module = self.modules[block]
                if self.read == "input":

                    def before(_module: Any, args: tuple, kwargs: dict, block: int = block) -> None:
                        keep(block, args[0] if args else kwargs["hidden_states"])

                    handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
                else:

                    def after(_module: Any, _args: Any, output: Any, block: int = block) -> None:
                        keep(block, output)

                    handles.append(module.register_forward_hook(after))
            yield values
        finally:
            for handle in handles:
                handle.remove()


def plan_site(model: torch.nn.Module, config: Any, site: str) -> SitePlan:
    """Where ``site`` (a block site of :data:`BLOCK_SITES` or ``module:<path>``) is in
    ``model``, a Hugging Face base model (``AutoModel``) with ``config``.

    Raises:
        ValueError: one line: an architecture outside :data:`FAMILIES` (naming those covered
            and the ``module:`` form), a site its blocks do not have (``resid_mid`` of parallel
            blocks), or a module path that does not resolve.
    """
    n_blocks = int(config.num_hidden_layers)
    model_type = getattr(config, "model_type", "?")
    if site.startswith(MODULE_PREFIX):
        path = site[len(MODULE_PREFIX) :]
        modules = []
        for block in range(n_blocks):
            found = _module_path(model, path.format(i=block))
            if found is None:
                raise ValueError(
                    f"site {site!r}: {path.format(i=block)!r} is no module of this "
                    f"{model_type} model (print(model) lists them; paths are relative to the "
                    f"base model, with or without its prefix {model.base_model_prefix!r})"
                )
            modules.append(found)
        return SitePlan(site, tuple(modules), "output", None)
    family = FAMILIES.get(model_type)
    if family is None:
        raise ValueError(
            f"site {site!r}: the {model_type} architecture is not mapped to sites (mapped: "
            f"{', '.join(sorted(FAMILIES))}); give a module path instead, e.g. "
            f'site = "module:<path of a block>.{{i}}.<module>", or site = "hidden"'
        )
    point = family.point(site)
    if site == "resid_mid" and getattr(config, "use_parallel_residual", False):
        point = None  # GPT-NeoX/Pythia: attention and MLP read the same stream
    if point is None:
        raise ValueError(
            f"site 'resid_mid' does not exist in this {model_type} model: its attention and MLP "
            "run in parallel on the same residual stream (use_parallel_residual), so there is "
            "no stream between them"
        )
    blocks = _module(model, family.blocks)
    inner, read = point
    modules = tuple(
        _module(blocks[block], inner) if blocks is not None else None for block in range(n_blocks)
    )
    if blocks is None or any(module is None for module in modules):
        raise ValueError(
            f"site {site!r}: this {model_type} model lacks {family.blocks}.<i>.{inner}, where "
            "its family keeps it (a different transformers version?); give a module path "
            "instead"
        )
    return SitePlan(site, modules, read, site_width(config, site))


def site_width(config: Any, site: str) -> int | None:
    """The features per token of ``site`` in a model with ``config`` (a Hugging Face config,
    read without the weights): the hidden size for ``"hidden"`` and the block sites,
    ``n_heads × d_head`` for ``"heads"`` (``head_dim`` where the config gives it, else the
    hidden size over the heads); None for a ``module:`` site, whose width only a forward pass
    shows."""
    if site.startswith(MODULE_PREFIX):
        return None
    width = int(config.hidden_size)
    if site == "heads":
        n_heads = int(config.num_attention_heads)
        head_dim = getattr(config, "head_dim", None) or width // n_heads
        width = n_heads * int(head_dim)
    return width


def _module_path(model: torch.nn.Module, path: str) -> torch.nn.Module | None:
    """The module at ``path`` in the base model, the path written with or without the prefix
    the task-head models put before it (``model.layers.3.mlp`` as a ``LlamaForCausalLM`` prints
    it, ``layers.3.mlp`` in the ``LlamaModel``)."""
    found = _module(model, path)
    prefix = f"{model.base_model_prefix}."
    if found is None and path.startswith(prefix):
        found = _module(model, path[len(prefix) :])
    return found
