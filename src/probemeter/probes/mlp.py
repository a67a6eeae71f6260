"""Multi-layer perceptron probes (a linear probe is an MLP with no hidden layer).

The default, two hidden layers of 512 ReLU units, is the probe of Whitney et al., App. C.1.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368

    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Peters, M. E., Neumann, M., Iyyer, M., Gardner, M., Clark, C., Lee, K. & Zettlemoyer, L. (2018).
    Deep contextualized word representations. *NAACL-HLT 2018*. arXiv:1802.05365

    Tenney, I., Das, D. & Pavlick, E. (2019). BERT rediscovers the classical NLP pipeline.
    *ACL 2019*. arXiv:1905.05950

    Lee, K., He, L., Lewis, M. & Zettlemoyer, L. (2017). End-to-end neural coreference resolution.
    *EMNLP 2017*. arXiv:1707.07045

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from probemeter._validation import check_scalar, integer_list, one_of
from probemeter.data import ProbeData
from probemeter.probes.draws import fill_uniform
from probemeter.probes.scalar_mix import ScalarMixes
from probemeter.probes.span_attention import ATTENTION, LEARNED_POOLINGS, SpanAttentions
from probemeter.probes.stacked_mlp import StackedMLP

__all__ = ["MLP", "Direction", "Linear", "fill_uniform", "probe_for"]


@dataclass(frozen=True)
class MLP:
    """A ReLU MLP probe ``d -> hidden[0] -> ... -> hidden[-1] -> K`` (logits).

    Args:
        hidden: widths of the hidden layers; ``()`` is a linear (multinomial logistic) probe.
        dropout: rate of (inverted) dropout on every hidden layer's output during training,
            in [0, 1) (the random MLP family of Pimentel et al., §6.2, draws it from U[0, 0.5]).
        mix: 0, or L ≥ 2: the features are L layers of equal width side by side, and the probe
            first learns a scalar mix of them, γ · Σ_l softmax(a)_l h_l (Peters et al. 2018,
            eq. 1; Tenney, Das & Pavlick 2019): its first layer reads one layer's width
            (:mod:`probemeter.probes.scalar_mix`).
        span: for edge probing, each span's padded token count (one or two spans): the rows are
            span token vectors (:class:`~probemeter.datasets.edge_probing.SpanLayout`), which the
            probe first projects to ``projection`` dimensions and pools with a learned
            self-attention per span (Lee et al. 2017; Voita & Titov 2020, Fig. 4); its first
            layer reads the pooled spans side by side (:mod:`probemeter.probes.span_attention`).
        projection: q, the width of the span projection (with ``span``).
        span_pooling: how each span's projected tokens are pooled (with ``span``):
            ``"attention"`` (the learned self-attention above) or ``"max"`` (each projected
            coordinate's maximum over the tokens; with q = K the maximum of per-token logits,
            McKenzie et al. 2025, arXiv:2506.10805, §3).
    """

    hidden: tuple[int, ...] = (512, 512)
    dropout: float = 0.0
    mix: int = 0
    span: tuple[int, ...] = ()
    projection: int = 0
    span_pooling: str = ATTENTION

    def __post_init__(self) -> None:
        hidden = integer_list(1)(tuple(self.hidden), "hidden")
        object.__setattr__(self, "hidden", tuple(int(w) for w in hidden))
        dropout = check_scalar(
            self.dropout, "dropout", float, min_val=0, max_val=1, include_boundaries="left"
        )
        object.__setattr__(self, "dropout", float(dropout))
        if self.mix != 0:
            check_scalar(self.mix, "mix", int, min_val=2)
        object.__setattr__(self, "mix", int(self.mix))
        span = tuple(integer_list(1)(tuple(self.span), "span"))
        if len(span) > 2 or (self.mix and span):
            raise ValueError("span takes one or two spans, and no mix beside it")
        if span:
            check_scalar(self.projection, "projection", int, min_val=1)
        elif self.projection:
            raise ValueError("projection is the width of span pooling: it needs span")
        one_of(*LEARNED_POOLINGS)(self.span_pooling, "span_pooling")
        if self.span_pooling != ATTENTION and not span:
            raise ValueError("span_pooling pools spans: it needs span")
        object.__setattr__(self, "span", tuple(int(t) for t in span))
        object.__setattr__(self, "projection", int(self.projection))

    @property
    def name(self) -> str:
        if not self.hidden:
            name = "linear"
        else:
            name = "mlp-" + "x".join(str(w) for w in self.hidden)
            name += f"-drop{self.dropout:.3g}" if self.dropout else ""
        if self.span:
            name += f"-span{'x'.join(map(str, self.span))}-proj{self.projection}"
            name += "" if self.span_pooling == ATTENTION else f"-{self.span_pooling}"
        return name + (f"-mix{self.mix}" if self.mix else "")

    def token_width(self, n_features: int) -> int:
        """With ``span``: d, the width of one token vector in rows of ``n_features`` floats.

        Raises:
            ValueError: rows that do not hold the spans' counts and padded tokens.
        """
        tokens = sum(self.span)
        if (n_features - len(self.span)) % tokens or n_features <= len(self.span):
            raise ValueError(
                f"rows of {n_features} features do not hold {len(self.span)} span count(s) and "
                f"{tokens} padded token vectors of one width"
            )
        return (n_features - len(self.span)) // tokens

    def input_width(self, n_features: int) -> int:
        """The width the first layer reads: ``n_features``; one layer's with a mix; the pooled
        spans side by side with ``span``.

        Raises:
            ValueError: with a mix, ``n_features`` is not a multiple of the mixed layers; with
                spans, rows that do not hold them.
        """
        if self.span:
            self.token_width(n_features)
            return len(self.span) * self.projection
        if not self.mix:
            return n_features
        if n_features % self.mix:
            raise ValueError(
                f"mix={self.mix} layers side by side need a multiple of {self.mix} features; "
                f"got {n_features}"
            )
        return n_features // self.mix

    def layer_shapes(self, n_features: int, n_classes: int) -> list[tuple[int, int]]:
        """(fan_in, fan_out) of each affine layer (with a mix, the first reads one layer)."""
        widths = [self.input_width(n_features), *self.hidden, n_classes]
        return list(itertools.pairwise(widths))

    def parameter_count(self, n_features: int, n_classes: int) -> int:
        """Number of trainable parameters (weights and biases; L logits and a scale with a
        mix)."""
        affine = sum(
            (fan_in + 1) * fan_out for fan_in, fan_out in self.layer_shapes(n_features, n_classes)
        )
        if self.span:  # per span W (d × q), b and w (q each)
            affine += len(self.span) * (self.token_width(n_features) + 2) * self.projection
        return affine + (self.mix + 1 if self.mix else 0)

    def forward_flops(self, n_features: int, n_classes: int) -> int:
        """Multiply-add FLOPs (2 per MAC) of one example's forward pass (the mix: one per
        feature)."""
        affine = sum(
            2 * fan_in * fan_out for fan_in, fan_out in self.layer_shapes(n_features, n_classes)
        )
        if self.span:  # projection, scores and weighted sum of every padded token
            affine += sum(self.span) * 2 * (self.token_width(n_features) + 2) * self.projection
        return affine + (2 * n_features if self.mix else 0)

    def stage_floats(self, n_features: int, rows: int, *, training: bool = True) -> int:
        """Float32 values the input stage (mix or span pooling) of one probe holds for ``rows``
        rows: while training, its output and upstream buffers, and the span poolings'
        projections, attention and their gradients; while evaluating, its output (and the
        projections and attention); 0 without a stage."""
        if self.mix:
            return (2 if training else 1) * rows * self.input_width(n_features)
        if self.span:
            q, spans, tokens = self.projection, len(self.span), sum(self.span)
            if training:
                return rows * (2 * spans * q + tokens * (2 * q + 3))
            return rows * (spans * q + tokens * (q + 2))
        return 0

    def initial_parameters(
        self, rng: np.random.Generator, n_features: int, n_classes: int
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per-layer ``(W, b)`` with ``W`` of shape (fan_in, fan_out), PyTorch's ``nn.Linear``
        default: both drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), in float32 directly
        (:func:`fill_uniform`), layer after layer, W before b."""
        layers = []
        for fan_in, fan_out in self.layer_shapes(n_features, n_classes):
            weight = np.empty((fan_in, fan_out), dtype=np.float32)
            bias = np.empty(fan_out, dtype=np.float32)
            fill_uniform(rng, weight, fan_in)
            fill_uniform(rng, bias, fan_in)
            layers.append((weight, bias))
        return layers

    def stack(
        self,
        rngs: list[np.random.Generator],
        n_features: int,
        n_classes: int,
        rows: int,
        precision: str,
        device: torch.device,
    ) -> StackedMLP:
        """P probes of this architecture, probe i initialised from ``rngs[i]`` alone (so its
        weights do not depend on its companions), stacked for batched training.

        Probe i's parameters are exactly :meth:`initial_parameters` of ``rngs[i]`` (the same
        draws in the same order), written straight into the stacked float32 arrays: nothing
        is drawn in float64 and no per-probe copy is made, so initialisation holds the
        parameters once (on an accelerator, once on the host and once on the device).

        With dropout, probe i's masks come from a torch stream seeded by a draw from
        ``rngs[i]``, so they too do not depend on its companions."""
        shapes = self.layer_shapes(n_features, n_classes)
        span_stage = None
        if self.span:  # drawn first, as they come first in the network
            width = self.token_width(n_features)
            span_stage = SpanAttentions.initial(
                rngs, self.span, width, self.projection, rows, device, self.span_pooling
            )
        stacked = [
            (
                np.empty((len(rngs), fan_in, fan_out), dtype=np.float32),
                np.empty((len(rngs), 1, fan_out), dtype=np.float32),
            )
            for fan_in, fan_out in shapes
        ]
        for probe, rng in enumerate(rngs):
            for (fan_in, _), (weights, biases) in zip(shapes, stacked):
                fill_uniform(rng, weights[probe], fan_in)
                fill_uniform(rng, biases[probe, 0], fan_in)
        layers = [
            (torch.from_numpy(weights).to(device), torch.from_numpy(biases).to(device))
            for weights, biases in stacked
        ]
        del stacked
        generators = None
        if self.dropout and self.hidden:
            generators = [
                torch.Generator(device=device).manual_seed(int(rng.integers(2**62))) for rng in rngs
            ]
        dropout = self.dropout if self.hidden else 0.0
        stage: Any = None
        if self.mix:
            width = self.input_width(n_features)
            stage = ScalarMixes.uniform(len(rngs), self.mix, rows, width, device)
        elif self.span:
            stage = span_stage
        return StackedMLP(
            layers, rows, precision, dropout=dropout, generators=generators, stage=stage
        )

    def to_dict(self) -> dict:
        spec = {"family": "mlp", "hidden": list(self.hidden)}
        spec |= {"dropout": self.dropout} if self.dropout else {}
        spec |= {"span": list(self.span), "projection": self.projection} if self.span else {}
        # only when not the default: the keys of attention-pooled span probes stay as they were
        spec |= {} if self.span_pooling == ATTENTION else {"span_pooling": self.span_pooling}
        return spec | ({"mix": self.mix} if self.mix else {})

    @staticmethod
    def from_dict(spec: dict) -> MLP:
        if set(spec) == {"family"} and spec["family"] != "mlp":  # {"family": "lda"}
            return Direction(spec["family"])
        if spec.get("family") != "mlp":
            raise ValueError(f"not an MLP probe specification: {spec!r}")
        return MLP(
            hidden=tuple(spec["hidden"]),
            dropout=float(spec.get("dropout", 0.0)),
            mix=int(spec.get("mix", 0)),
            span=tuple(spec.get("span", ())),
            projection=int(spec.get("projection", 0)),
            span_pooling=str(spec.get("span_pooling", ATTENTION)),
        )


#: q, the width to which span probes project each span's tokens before pooling them (the
#: span projection width of the edge probes of Tenney et al. 2019, "What do you learn from
#: context?")
SPAN_PROJECTION = 256


def probe_for(data: ProbeData, hidden: Sequence[int], *, projection: int = SPAN_PROJECTION) -> MLP:
    """An MLP of ``hidden`` widths for ``data``: with a learned scalar mix of its layers when
    the data are layers side by side to be mixed (``data.mix_layers``); with learned pooling of
    each span, projected to ``projection`` dimensions, when the rows are spans
    (``data.span_tokens``: edge-probing spans, or a text's tokens), pooled and projected as the
    data say where they do (``data.span_pooling``, ``data.span_projection``); a plain one
    else. For a direction twin's data (``data.direction``, an experiment file's
    ``directions``), the :class:`Direction` it names, whatever ``hidden``."""
    if data.direction is not None:
        return Direction(data.direction)
    if data.span_tokens is not None:
        return MLP(
            tuple(hidden),
            span=data.span_tokens,
            projection=data.span_projection or projection,
            span_pooling=data.span_pooling or ATTENTION,
        )
    return MLP(tuple(hidden), mix=0 if data.mix_layers is None else len(data.mix_layers))


def Linear() -> MLP:
    """A linear (multinomial logistic regression) probe: an MLP with no hidden layer."""
    return MLP(hidden=())


#: how a direction family's name is spelt (its declaration, with its fit, is in
#: :data:`probemeter.training.directions.DIRECTION_FAMILIES`, which the engine checks)
_FAMILY_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


@dataclass(frozen=True, init=False, repr=False)
class Direction(MLP):
    """A direction baseline: a linear probe (an :class:`MLP` with no hidden layer, so that
    evaluation, kept probes, PVI, online codes and paired tests take it as any linear probe)
    whose parameters the engine fits in closed form instead of training them:
    ``Direction("diff-means")`` (the difference in class means) or ``Direction("lda")``
    (Fisher's discriminant, whitened by the shrunk pooled covariance), each with one fitted
    temperature (:mod:`probemeter.training.directions`, where the families are declared).

    Its specification ``{"family": name}`` keeps its unit keys apart from a linear probe's.
    The training settings (steps, learning rates, weight decay, batch size, early stopping)
    do not apply to a closed form and are ignored; a probe's seed does not enter either, so
    probes of one size differ only by their subsets — but for ``Direction("ccs")``, CCS on
    contrast pairs (trained without labels, its own protocol), whose random starts the seed
    draws.

    Examples:
        >>> from probemeter.probes import Direction
        >>> Direction("lda").to_dict(), Direction("lda").name
        ({'family': 'lda'}, 'lda')
    """

    family: str = "diff-means"

    def __init__(self, family: str) -> None:
        if not isinstance(family, str) or not _FAMILY_NAME.fullmatch(family) or family == "mlp":
            raise ValueError(f"family must name a direction family, e.g. 'lda'; got {family!r}")
        object.__setattr__(self, "family", family)
        super().__init__(hidden=())

    def __repr__(self) -> str:
        return f"Direction({self.family!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # its own __init__ takes the family alone
        return (Direction, (self.family,))

    @property
    def name(self) -> str:
        return self.family

    def to_dict(self) -> dict:
        return {"family": self.family}
