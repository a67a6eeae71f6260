"""Learned self-attentive pooling of spans, for P probes at once (Lee et al. 2017, §4; the span
representation of Tenney et al. 2019 and of Voita & Titov 2020, Fig. 4).

An edge-probing row holds, for each of its one or two spans, the token count and the span's
token vectors h_1 … h_T (width d), padded with zeros
(:class:`~probemeter.datasets.edge_probing.SpanLayout`).
Each probe projects and pools every span with parameters of its own (W_s of d × q, b_s, w_s of
q for span s)::

    u_t = h_t W_s + b_s,    a = softmax_{t ≤ count}(u_t · w_s),    z_s = Σ_t a_t u_t,

and its MLP reads [z_1, z_2] (q per span). Padded positions get no attention. The gradient is
written by hand (with g = ∂L/∂z_s)::

    ∂L/∂s_t = a_t (g·u_t − g·z_s),   ∂L/∂u_t = a_t g + (∂L/∂s_t) w_s,
    ∂L/∂w_s = Σ_t (∂L/∂s_t) u_t,     ∂L/∂W_s = Σ_t h_tᵀ ∂L/∂u_t,   ∂L/∂b_s = Σ_t ∂L/∂u_t,

summed over a minibatch's rows (padded rows carry weight 0 upstream). Parameters are drawn like
``nn.Linear``'s, U(±1/√fan_in), from each probe's own random stream, before its MLP's.

Pooling ``"max"`` (:data:`LEARNED_POOLINGS`) replaces the attention by the maximum of each
projected coordinate over the span's tokens, ``z_s = max_{t ≤ count} u_t`` (coordinate-wise):
with q = K, the maximum over tokens of per-token logits that the MLP then reads, the max probe
of McKenzie et al. (2025, §3). Its gradient goes to each coordinate's arg-max token,
``∂L/∂u_t = g ⊙ 1[t = argmax]``; it reads no score vector (w_s stays 0, drawn nothing).
One implementation serves both: the spans of edge probing and the text of a texts task read
token by token (``pooling = "attention"`` or ``"max"``, one span per row,
:func:`~probemeter.datasets.texts.token_spans`), McKenzie et al.'s attention-pooled and
max-pooled probes.

A trained probe's poolings are kept as a :class:`SpanPooling` (with the probe,
:class:`~probemeter.probes.saved.SavedProbe`), and run as an ordinary module by
:class:`SpanAttention`.

References:
    Lee, K., He, L., Lewis, M. & Zettlemoyer, L. (2017). End-to-end neural coreference resolution.
    *EMNLP 2017*. arXiv:1707.07045

    Tenney, I., Xia, P., Chen, B., Wang, A., Poliak, A., McCoy, R. T., Kim, N., Van Durme, B.,
    Bowman, S. R., Das, D. & Pavlick, E. (2019). What do you learn from context? Probing for
    sentence structure in contextualized word representations. *ICLR 2019*. arXiv:1905.06316

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    McKenzie, A., et al. (2025). Detecting high-stakes interactions with activation probes.
    arXiv:2506.10805
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from probemeter.data import ATTENTION, LEARNED_POOLINGS
from probemeter.probes.draws import fill_uniform

__all__ = [
    "ATTENTION",
    "LEARNED_POOLINGS",
    "SpanAttention",
    "SpanAttentions",
    "SpanPooling",
    "pool_spans",
    "pooler",
]


def _split(
    features: torch.Tensor, tokens: Sequence[int], width: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per span, its token counts (..., 1) and its padded token vectors (..., T, d), as views
    of ``features`` (..., n_spans + Σ T·d)."""
    spans, offset = [], len(tokens)
    for index, padded in enumerate(tokens):
        counts = features[..., index : index + 1]
        block = features[..., offset : offset + padded * width].unflatten(-1, (padded, width))
        spans.append((counts, block))
        offset += padded * width
    return spans


def _pool(
    h: torch.Tensor,
    counts: torch.Tensor,
    W: torch.Tensor,
    b: torch.Tensor,
    w: torch.Tensor,
    pooling: str = ATTENTION,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One span of P probes: projections u (P, n, T, q), attention a (P, n, T) — for
    ``"max"``, each coordinate's arg-max token (P, n, 1, q) — and the pooled z (P, n, q), for
    tokens ``h`` (P or 1, n, T, d), their counts (P or 1, n, 1) and parameters W (P, d, q),
    b (P, 1, q), w (P, q, 1)."""
    n_probes, (width, projection) = W.shape[0], W.shape[1:]
    rows, tokens = h.shape[1], h.shape[2]
    if h.shape[0] == 1:  # the same rows for every probe: one matrix product for all of them
        flat = h.reshape(rows * tokens, width) @ W.transpose(0, 1).reshape(width, -1)
        u = flat.view(rows, tokens, n_probes, projection).permute(2, 0, 1, 3)
    else:  # batched products, without broadcasting W over the rows (which would copy it)
        u = torch.bmm(h.reshape(n_probes, rows * tokens, width), W).view(
            n_probes, rows, tokens, projection
        )
    u = u + b.unsqueeze(1)
    positions = torch.arange(h.shape[-2], device=h.device)
    if pooling != ATTENTION:
        padded = (positions >= counts).unsqueeze(-1)  # (P or 1, n, T, 1)
        z, chosen = u.masked_fill(padded, float("-inf")).max(dim=2, keepdim=True)
        return u, chosen, z.squeeze(2)
    scores = torch.bmm(u.reshape(n_probes, rows * tokens, projection), w).view(
        n_probes, rows, tokens
    )
    positions = torch.arange(h.shape[-2], device=h.device)
    scores = scores.masked_fill(positions >= counts, float("-inf"))
    a = torch.softmax(scores, dim=-1)
    return u, a, torch.matmul(a.unsqueeze(-2), u).squeeze(-2)


def _per_span(parameters: Sequence[torch.Tensor]) -> list[Sequence[torch.Tensor]]:
    """``[W_1, b_1, w_1, W_2, b_2, w_2]`` as one ``(W, b, w)`` per span."""
    return [parameters[i : i + 3] for i in range(0, len(parameters), 3)]


def _pool_all(
    parameters: Sequence[torch.Tensor],
    tokens: Sequence[int],
    width: int,
    features: torch.Tensor,
    pooling: str = ATTENTION,
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per span, :func:`_pool`'s projections, attention and pooled span of rows ``features``
    ((P, n, F), or (1, n, F): the same rows for every probe)."""
    return [
        _pool(h, counts, *span, pooling)
        for (counts, h), span in zip(_split(features, tokens, width), _per_span(parameters))
    ]


def pool_spans(
    parameters: Sequence[torch.Tensor],
    tokens: Sequence[int],
    width: int,
    features: torch.Tensor,
    pooling: str = ATTENTION,
) -> torch.Tensor:
    """The pooled spans [z_1, z_2] (P, n, q · spans) of rows ``features`` ((P, n, F): one batch
    per probe, or (n, F): the same rows for every probe) under the stacked ``parameters``
    ``[W_1, b_1, w_1, W_2, b_2, w_2]``, pooled by ``pooling`` (:data:`LEARNED_POOLINGS`)."""
    if features.dim() == 2:
        features = features.unsqueeze(0)
    spans = _pool_all(parameters, tokens, width, features, pooling)
    return torch.cat([z for _, _, z in spans], dim=-1)


def pooler(
    parameters: Sequence[torch.Tensor],
    tokens: Sequence[int],
    width: int,
    pooling: str = ATTENTION,
) -> Callable[..., torch.Tensor]:
    """Rows (n, F) — or (P, n, F), one set per probe — and optionally an allocator of the
    (P, n, q · spans) output, → their pooled spans under the stacked ``parameters``.

    Each probe is pooled on its own (:func:`pool_spans` of its slice of the stack), so its
    pooled spans do not depend on its companions: a stack's one matrix product for all
    projections would round each probe's differently with the stack's width, and a kept probe
    pooled alone (:func:`~probemeter.probes.stacked_mlp.evaluate_as_row`) could not reproduce
    them. The output is written probe by probe into one (P, n, q · spans) tensor; on the CPU
    this costs about what one product for the whole stack does (timings in
    ``benchmarks/README.md``, "Choices measured once")."""

    def pool(
        rows: torch.Tensor, allocate: Callable[..., torch.Tensor] | None = None
    ) -> torch.Tensor:
        n_probes = parameters[0].shape[0]
        shape = (n_probes, rows.shape[-2], parameters[0].shape[2] * len(tokens))
        out = torch.empty(shape, device=rows.device) if allocate is None else allocate(shape)
        shared = rows.dim() == 2
        for probe in range(n_probes):
            own = [tensor[probe : probe + 1] for tensor in parameters]
            features = rows.unsqueeze(0) if shared else rows[probe : probe + 1]
            spans = _pool_all(own, tokens, width, features, pooling)
            torch.cat([z for _, _, z in spans], dim=-1, out=out[probe : probe + 1])
        return out

    return pool


class SpanAttentions:
    """The span poolings of a stack of P probes (see the module docstring).

    Args:
        parameters: per span ``(W, b, w)``: W (P, d, q), b (P, 1, q), w (P, q, 1), float32; they
            become parameters (with ``.grad``) of the probes' optimiser.
        tokens: per span, its padded token count T.
        rows: minibatch rows per probe.
        pooling: ``"attention"`` or ``"max"`` (:data:`LEARNED_POOLINGS`).
    """

    def __init__(
        self,
        parameters: Sequence[torch.Tensor],
        tokens: Sequence[int],
        rows: int,
        pooling: str = ATTENTION,
    ) -> None:
        self.pooling = pooling
        self.parameters = list(parameters)
        for tensor in self.parameters:
            tensor.grad = torch.zeros_like(tensor)
        self.tokens = tuple(int(t) for t in tokens)
        n_probes, width, projection = self.parameters[0].shape
        self.width, self.projection = int(width), int(projection)
        device = self.parameters[0].device
        shape = (n_probes, rows, projection * len(self.tokens))
        self.output = torch.empty(shape, device=device)
        self.upstream = torch.empty(shape, device=device)
        self._saved: list[tuple[torch.Tensor, torch.Tensor]] = []

    @classmethod
    def initial(
        cls,
        rngs: Sequence[np.random.Generator],
        tokens: Sequence[int],
        width: int,
        projection: int,
        rows: int,
        device: torch.device,
        pooling: str = ATTENTION,
    ) -> SpanAttentions:
        """P poolings, probe i's drawn from ``rngs[i]`` alone: per span, W and b from U(±1/√d)
        and then w from U(±1/√q) (float32 draws, :func:`~probemeter.probes.draws.fill_uniform`);
        ``"max"`` draws no w (it stays 0)."""
        stacked = [
            np.zeros((len(rngs), *shape), dtype=np.float32)
            for _ in tokens
            for shape in ((width, projection), (1, projection), (projection, 1))
        ]
        drawn = 3 if pooling == ATTENTION else 2
        for probe, rng in enumerate(rngs):
            for index in range(0, len(stacked), 3):
                arrays = stacked[index : index + drawn]
                for array, fan_in in zip(arrays, (width, width, projection)):
                    fill_uniform(rng, array[probe], fan_in)
        tensors = [torch.from_numpy(a).to(device) for a in stacked]
        return cls(tensors, tokens, rows, pooling)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """The pooled spans (P, rows, q · spans) of a minibatch ``features`` (P, rows, F), into
        :attr:`output`; the projections and attention are kept for :meth:`backward`."""
        spans = _pool_all(self.parameters, self.tokens, self.width, features, self.pooling)
        self._saved = [(u, a) for u, a, _ in spans]
        return torch.cat([z for _, _, z in spans], dim=-1, out=self.output)

    def backward(self, features: torch.Tensor) -> None:
        """Write the parameters' gradients from :attr:`upstream`, the loss's gradient at the
        pooled spans (see the module docstring)."""
        q = self.projection
        spans = _split(features, self.tokens, self.width)
        for index, ((_, h), (W, b, w), (u, a)) in enumerate(
            zip(spans, _per_span(self.parameters), self._saved)
        ):
            g = self.upstream[..., index * q : (index + 1) * q].unsqueeze(-2)  # (P, rows, 1, q)
            n_probes = u.shape[0]
            if self.pooling == ATTENTION:
                gu = (u * g).sum(dim=-1)  # (P, rows, T): g · u_t
                ds = a * (gu - (a * gu).sum(dim=-1, keepdim=True))
                du = a.unsqueeze(-1) * g + ds.unsqueeze(-1) * w.transpose(1, 2).unsqueeze(1)
                w.grad.copy_((ds.unsqueeze(-1) * u).sum(dim=(1, 2)).view(n_probes, q, 1))
            else:  # each coordinate's gradient to its arg-max token (a holds their indices)
                du = torch.zeros_like(u).scatter_(2, a, g)
            flat_h = h.reshape(n_probes, -1, self.width)
            torch.bmm(flat_h.transpose(1, 2), du.reshape(n_probes, -1, q), out=W.grad)
            b.grad.copy_(du.sum(dim=(1, 2)).view(n_probes, 1, q))

    def evaluator(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """Rows (n, F) → their pooled spans (P, n, q · spans) under the current parameters."""
        detached = [p.detach() for p in self.parameters]
        return pooler(detached, self.tokens, self.width, self.pooling)

    def select(self, rows: torch.Tensor) -> SpanAttentions:
        """The poolings of the probes at ``rows``, as a new stack (copies)."""
        chosen = [p.detach()[rows].clone() for p in self.parameters]
        return SpanAttentions(chosen, self.tokens, self.output.shape[1], self.pooling)

    def arrays(self) -> dict[str, np.ndarray]:
        """What the engine returns of the stage: nothing (a pooling has no summary)."""
        return {}

    def parameter_arrays(self) -> dict[str, np.ndarray]:
        """Copies of the poolings' parameters on the host, the spans stacked on axis 1 (the
        engine's ``ProbeEvaluation.span_weight`` etc., for keeping probes): ``span_weight``
        W (P, S, d, q), ``span_bias`` b (P, S, q) and ``span_score`` w (P, S, q), float32."""
        per_span = _per_span([p.detach().to("cpu", copy=True) for p in self.parameters])
        n_probes = self.parameters[0].shape[0]
        return {
            "span_weight": torch.stack([W for W, _, _ in per_span], dim=1).numpy(),
            "span_bias": torch.stack([b.view(n_probes, -1) for _, b, _ in per_span], 1).numpy(),
            "span_score": torch.stack([w.view(n_probes, -1) for _, _, w in per_span], 1).numpy(),
        }


@dataclass(frozen=True, eq=False)
class SpanPooling:
    """The trained poolings of one probe's S spans (the module docstring's W_s, b_s, w_s), as
    kept with the probe (:class:`~probemeter.probes.saved.SavedProbe`).

    Attributes:
        tokens: per span, its padded token count T.
        weight: (S, d, q) float32, each span's projection W_s.
        bias: (S, q) float32, its projection bias b_s.
        score: (S, q) float32, its attention vector w_s (zeros for ``"max"``).
        pooling: ``"attention"`` or ``"max"`` (:data:`LEARNED_POOLINGS`).

    Raises:
        ValueError: arrays that are not float32 or whose shapes do not agree with one
            another and with one or two spans.
    """

    tokens: tuple[int, ...]
    weight: np.ndarray
    bias: np.ndarray
    score: np.ndarray
    pooling: str = ATTENTION

    def __post_init__(self) -> None:
        if self.pooling not in LEARNED_POOLINGS:
            raise ValueError(f"pooling must be one of {LEARNED_POOLINGS}; got {self.pooling!r}")
        tokens = tuple(int(t) for t in self.tokens)
        if not 1 <= len(tokens) <= 2 or min(tokens) < 1:
            raise ValueError(f"tokens must be one or two padded token counts; got {self.tokens}")
        object.__setattr__(self, "tokens", tokens)
        arrays = [np.asarray(getattr(self, name)) for name in ("weight", "bias", "score")]
        spans = len(tokens)
        if any(a.dtype != np.float32 for a in arrays) or arrays[0].ndim != 3:
            raise ValueError("span weight, bias and score must be float32, weight (S, d, q)")
        q = arrays[0].shape[2]
        if arrays[0].shape[0] != spans or any(a.shape != (spans, q) for a in arrays[1:]):
            raise ValueError(
                f"span weight, bias and score must be ({spans}, d, q), ({spans}, q) and "
                f"({spans}, q) for {spans} span(s); got {[a.shape for a in arrays]}"
            )
        for name, array in zip(("weight", "bias", "score"), arrays):
            object.__setattr__(self, name, np.ascontiguousarray(array))

    @property
    def width(self) -> int:
        """d, the width of one token vector."""
        return int(self.weight.shape[1])

    @property
    def projection(self) -> int:
        """q, the width of a pooled span."""
        return int(self.weight.shape[2])

    def tensors(self, device: torch.device | str = "cpu") -> list[torch.Tensor]:
        """The poolings as a stack of one probe, ``[W_1, b_1, w_1, ...]`` of shapes (1, d, q),
        (1, 1, q) and (1, q, 1) (what :func:`pool_spans` reads)."""
        q = self.projection
        return [
            torch.as_tensor(array, device=device).reshape(shape)
            for span in range(len(self.tokens))
            for array, shape in (
                (self.weight[span], (1, self.width, q)),
                (self.bias[span], (1, 1, q)),
                (self.score[span], (1, q, 1)),
            )
        ]

    def module(self) -> SpanAttention:
        """The poolings as a :class:`SpanAttention` module holding copies of them."""
        module = SpanAttention(self.tokens, self.width, self.projection, self.pooling)
        with torch.no_grad():
            for name in ("weight", "bias", "score"):
                getattr(module, name).copy_(torch.from_numpy(getattr(self, name)))
        return module


class SpanAttention(torch.nn.Module):
    """One probe's span poolings as an ordinary module: ``forward(x)`` maps (n, F) span rows
    to the (n, q · S) pooled spans [z_1, z_2] (the module docstring), with parameters
    ``weight`` (S, d, q), ``bias`` (S, q) and ``score`` (S, q) — the engine's arithmetic
    (:func:`pool_spans`), differentiable by autograd. Its parameters start uninitialised
    (zeros); :meth:`SpanPooling.module` fills them."""

    def __init__(
        self, tokens: Sequence[int], width: int, projection: int, pooling: str = ATTENTION
    ) -> None:
        super().__init__()
        self.tokens, self.width = tuple(int(t) for t in tokens), int(width)
        self.pooling = pooling
        spans, q = len(self.tokens), int(projection)
        self.weight = torch.nn.Parameter(torch.zeros(spans, self.width, q))
        self.bias = torch.nn.Parameter(torch.zeros(spans, q))
        self.score = torch.nn.Parameter(torch.zeros(spans, q))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        q = self.weight.shape[2]
        parameters = [
            tensor
            for span in range(len(self.tokens))
            for tensor in (
                self.weight[span].unsqueeze(0),
                self.bias[span].view(1, 1, q),
                self.score[span].view(1, q, 1),
            )
        ]
        return pool_spans(parameters, self.tokens, self.width, features, self.pooling)[0]
