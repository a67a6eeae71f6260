"""Variational self-attentive span pooling: the span stage of the variational probe.

Edge-probing rows hold each span's tokens (:class:`~probemeter.datasets.edge_probing.SpanLayout`);
Voita & Titov's edge probes (2020, §4 and Fig. 4) project them and pool each span with the
self-attention of Lee et al. (2017) before the MLP (:mod:`probemeter.probes.span_attention`)::

    u_t = h_t W_s + b_s,    a = softmax_{t ≤ count}(u_t · w_s),    z_s = Σ_t a_t u_t.

In the variational code (eq. 3) every parameter of the probe is transmitted, so the pooling's
W_s, b_s and w_s are **variational, not point estimates**: each has a fully factorised Gaussian
posterior ``q(θ) = N(μ, σ²)`` under the standard normal prior ``N(0, 1)`` that the
Bayesian-compression layers put on their (reparameterised) weights and biases
(:mod:`probemeter.mdl.bayesian`), and its exact KL,

    KL(q(θ) ‖ N(0, 1)) = ½ (σ² + μ² − 1 − log σ²)   (nats, per parameter),

is part of the model code KL(β‖α). (A point estimate would cost nothing in the variational code
and leave 2 · (d + 2) · q parameters of every probe untransmitted.) The pooling has no
group-sparsity scales, so none of it is pruned.

The pooling weights are shared by all tokens of a span, so the local reparameterisation of the
layers (independent pre-activation noise per example) does not apply to them; a forward pass
draws **one** sample ``θ = μ + σ ⊙ ε`` per probe and shares it over its rows (the plain
reparameterisation trick: an unbiased estimate of E_θ of the data term). Posterior means μ pool
the spans of the pruned probe at test time. Initialisation: μ as the engine's poolings
(U(±1/√d) for W_s and b_s, U(±1/√q) for w_s), log σ² ~ N(−9, 0.01²) as the layers'.

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Lee, K., He, L., Lewis, M. & Zettlemoyer, L. (2017). End-to-end neural coreference resolution.
    *EMNLP 2017*. arXiv:1707.07045
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from probemeter.probes.draws import fill_uniform
from probemeter.probes.span_attention import pool_spans

__all__ = ["VariationalSpanPoolings"]


class VariationalSpanPoolings:
    """The variational span poolings of P probes (module docstring).

    Args:
        means: per span ``(W, b, w)`` posterior means, W (P, d, q), b (P, 1, q), w (P, q, 1).
        logvars: log σ² of the same shapes, in the same order.
        tokens: per span, its padded token count T.
    """

    def __init__(
        self, means: Sequence[torch.Tensor], logvars: Sequence[torch.Tensor], tokens: Sequence[int]
    ) -> None:
        self.means, self.logvars = list(means), list(logvars)
        self.tokens = tuple(int(t) for t in tokens)
        self.width = int(self.means[0].shape[1])

    @classmethod
    def initial(
        cls,
        rngs: Sequence[np.random.Generator],
        tokens: Sequence[int],
        width: int,
        projection: int,
        device: torch.device,
    ) -> VariationalSpanPoolings:
        """P poolings, probe p's drawn from ``rngs[p]`` alone: per span, μ_W and μ_b from
        U(±1/√d), μ_w from U(±1/√q), then their log σ² from N(−9, 0.01²)."""
        shapes = ((width, projection), (1, projection), (projection, 1))
        fans = (width, width, projection)
        means = [np.empty((len(rngs), *shape), np.float32) for _ in tokens for shape in shapes]
        logvars = [np.empty_like(mean) for mean in means]
        for probe, rng in enumerate(rngs):
            for index, mean in enumerate(means):
                fill_uniform(rng, mean[probe], fans[index % 3])
                logvars[index][probe] = rng.normal(-9.0, 1e-2, mean.shape[1:])

        def tensors(arrays: list[np.ndarray]) -> list[torch.Tensor]:
            return [torch.tensor(a, device=device, requires_grad=True) for a in arrays]

        return cls(tensors(means), tensors(logvars), tokens)

    @property
    def parameters(self) -> list[torch.Tensor]:
        return self.means + self.logvars

    def kl(self) -> torch.Tensor:
        """(P,) Σ KL(q(θ) ‖ N(0, 1)) over the poolings' parameters, in nats (exact)."""
        total = 0.0
        for mu, logvar in zip(self.means, self.logvars):
            gaussian = 0.5 * (logvar.exp() + mu.pow(2) - 1.0 - logvar)
            total = total + gaussian.flatten(1).sum(dim=1)
        return total

    def sample(self, features: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """The pooled spans (P, rows, q · spans) of ``features`` (P, rows, F) under one draw
        θ = μ + σ ⊙ ε per probe (differentiable in μ and log σ²)."""
        drawn = [
            mu + (0.5 * logvar).exp() * torch.randn(mu.shape, generator=generator, device=mu.device)
            for mu, logvar in zip(self.means, self.logvars)
        ]
        return pool_spans(drawn, self.tokens, self.width, _shared(features))

    def mean(self, features: torch.Tensor) -> torch.Tensor:
        """The pooled spans (P, rows, q · spans) of ``features`` at the posterior means."""
        means = [mu.detach() for mu in self.means]
        return pool_spans(means, self.tokens, self.width, _shared(features))


def _shared(features: torch.Tensor) -> torch.Tensor:
    """Rows expanded over the probe axis as one (rows, F) set (pooled without copying them)."""
    return features[0] if features.dim() == 3 and features.stride(0) == 0 else features
