"""Self-attentive span pooling for the linear probes of Pareto probing (edge-probing span rows).

Lee et al. (2017)'s pooling of span s (:mod:`probemeter.probes.span_attention`) followed by a
linear probe ``[z_1, z_2] W + c`` is linear in the attention-pooled tokens::

    z_s = Σ_t a_t (h_t W_s + b_s) = h̄_s W_s + b_s,      h̄_s = Σ_t a_t h_t,
    a = softmax_t(u_t · w_s) = softmax_t(h_t · v_s),      v_s = W_s w_s

(b_s · w_s is the same for every token and cancels in the softmax), so the logits are
``Σ_s h̄_s (W_s W^{(s)}) + const``: a linear map M of the pooled spans [h̄_1, h̄_2] (S · d
features), whose tokens are weighted by one learned attention vector v_s per span. With a
projection width q > K the two parametrisations give the same functions (W_s can span both
v_s and the K columns of M_s); M is invariant to trading scale between W_s and W, where the
norm of W alone is not. So the span probes of :mod:`probemeter.pareto.linear_probes` learn
v_s and M directly, and Pimentel et al.'s complexities (§4.1) are those of M — its nuclear norm
‖M‖* (with the bias row) and its rank — the same measures as for fixed span poolings (mean,
max, endpoints), of a map of the same width. The attention vectors are, like the learned input
map of the one-hot baseline, a learned input stage outside the complexity (S · d parameters,
unpenalised); they start at 0, i.e. at mean pooling, so initialisation draws nothing for them.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Lee, K., He, L., Lewis, M. & Zettlemoyer, L. (2017). End-to-end neural coreference resolution.
    *EMNLP 2017*. arXiv:1707.07045
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["attention_pool"]


def attention_pool(
    features: torch.Tensor, scores: torch.Tensor, tokens: Sequence[int], width: int
) -> torch.Tensor:
    """The pooled spans [h̄_1, h̄_2] (P, n, S · d) of span rows ``features`` (n, F): counts
    first, then each span's T_s zero-padded token vectors of width d
    (:class:`~probemeter.datasets.edge_probing.SpanLayout`), under each probe's attention
    vectors ``scores`` (P, S, d); padded positions get no attention."""
    pooled, offset = [], len(tokens)
    for span, padded in enumerate(tokens):
        h = features[:, offset : offset + padded * width].unflatten(-1, (padded, width))
        offset += padded * width
        logits = torch.einsum("ntd,pd->pnt", h, scores[:, span])
        valid = torch.arange(padded, device=features.device) < features[:, span : span + 1]
        attention = torch.softmax(logits.masked_fill(~valid, float("-inf")), dim=-1)
        pooled.append(torch.einsum("pnt,ntd->pnd", attention, h))
    return torch.cat(pooled, dim=-1)
