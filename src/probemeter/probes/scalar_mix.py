"""A learned scalar mix of layers, for P probes at once.

Peters et al. (2018, ELMo, eq. 1) and Tenney et al. (2019, "BERT rediscovers the classical NLP
pipeline", §3) let the probe learn which layers to read: with the L hidden states h_1 … h_L of a
token (each of width d) side by side in its features,

    x = γ · Σ_l s_l h_l,    s = softmax(a),

where the mixing logits ``a`` (L) and the scale γ are trained with the probe, and x (width d) is
what the probe's first layer reads. The weights s show where in the network the probe found the
property; Tenney et al.'s *center of gravity* is E_s[l] = Σ_l l · s_l.

Here the P probes of a stack each have their own ``a`` (P, 1, L) and γ (P, 1, 1), initialised
to 0 and 1 (a uniform mix, as AllenNLP's ``ScalarMix``: no random numbers are drawn). The
forward pass and its gradient are written by hand on preallocated buffers, like the rest of the
engine (:mod:`probemeter.probes.stacked_mlp`); the mix is computed with element-wise products
summed over layers in order, so its result does not depend on memory alignment.

References:
    Peters, M. E., Neumann, M., Iyyer, M., Gardner, M., Clark, C., Lee, K. & Zettlemoyer, L. (2018).
    Deep contextualized word representations. *NAACL-HLT 2018*. arXiv:1802.05365

    Tenney, I., Das, D. & Pavlick, E. (2019). BERT rediscovers the classical NLP pipeline.
    *ACL 2019*. arXiv:1905.05950
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

__all__ = ["ScalarMix", "ScalarMixes", "center_of_gravity", "mix_layers", "mixer"]


def mix_layers(
    coefficients: torch.Tensor, features: torch.Tensor, out: torch.Tensor
) -> torch.Tensor:
    """``out[p, r] = Σ_l coefficients[p, 0, l] · features[·, r, l·d:(l+1)·d]`` for each probe p.

    Args:
        coefficients: (P, 1, L) float32, the mix γ·softmax(a) of each probe.
        features: (P, rows, L·d) (one batch per probe) or (rows, L·d) (one batch for all).
        out: (P, rows, d) float32, written and returned.
    """
    n_layers = coefficients.shape[2]
    width = out.shape[2]
    blocks = features.unflatten(-1, (n_layers, width))
    for layer in range(n_layers):
        block = blocks[..., layer, :]
        weight = coefficients[:, :, layer : layer + 1]
        if layer == 0:
            torch.mul(block, weight, out=out)
        else:
            out.addcmul_(block, weight)
    return out


def center_of_gravity(weights: torch.Tensor) -> torch.Tensor:
    """Σ_l l · s_l for mixing weights ``s`` of shape (..., L) (Tenney et al. 2019, §3.1)."""
    layers = torch.arange(weights.shape[-1], dtype=weights.dtype, device=weights.device)
    return (weights * layers).sum(dim=-1)


class ScalarMixes:
    """The scalar mixes of a stack of P probes, over L layers of width d.

    Args:
        logits: (P, 1, L) float32 mixing logits ``a``; they and ``scale`` become parameters
            (with ``.grad``) of the probes' optimiser.
        scale: (P, 1, 1) float32 γ.
        rows: minibatch rows per probe.
        width: d, the width of one layer (the mixed input of the probe's first layer).
    """

    def __init__(self, logits: torch.Tensor, scale: torch.Tensor, rows: int, width: int) -> None:
        self.logits, self.scale = logits, scale
        for tensor in (logits, scale):
            tensor.grad = torch.zeros_like(tensor)
        n_probes, device = logits.shape[0], logits.device
        self.output = torch.empty(n_probes, rows, width, device=device)
        self.upstream = torch.empty(n_probes, rows, width, device=device)
        self._rows, self._width = rows, width

    @classmethod
    def uniform(
        cls, n_probes: int, n_layers: int, rows: int, width: int, device: torch.device
    ) -> ScalarMixes:
        """P mixes initialised to the uniform mix (a = 0, γ = 1)."""
        logits = torch.zeros(n_probes, 1, n_layers, device=device)
        scale = torch.ones(n_probes, 1, 1, device=device)
        return cls(logits, scale, rows, width)

    @property
    def parameters(self) -> list[torch.Tensor]:
        return [self.logits, self.scale]

    @property
    def n_layers(self) -> int:
        return int(self.logits.shape[2])

    def weights(self) -> torch.Tensor:
        """s = softmax(a), (P, 1, L)."""
        return torch.softmax(self.logits, dim=2)

    def coefficients(self) -> torch.Tensor:
        """γ · s, (P, 1, L)."""
        return self.weights() * self.scale

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """The mixed inputs (P, rows, d) of a minibatch ``features`` (P, rows, L·d), into the
        preallocated buffer :attr:`output`."""
        return mix_layers(self.coefficients(), features, self.output)

    def backward(self, features: torch.Tensor) -> None:
        """Write the gradients of ``logits`` and ``scale`` given ``features`` (P, rows, L·d) and
        the loss's gradient with respect to the mixed inputs, held in :attr:`upstream`.

        With g_l = Σ_{r,j} upstream[r, j] · h_l[r, j], s = softmax(a) and c = γ s:
        ∂/∂γ = Σ_l s_l g_l and ∂/∂a_l = γ s_l (g_l − Σ_k s_k g_k)."""
        n_probes = features.shape[0]
        blocks = features.view(n_probes, -1, self.n_layers, self._width)
        # g[p, l] = Σ_r <h_l[p, r], upstream[p, r]>: a batched matrix-vector product per row
        per_row = torch.matmul(blocks, self.upstream.unsqueeze(3))  # (P, rows, L, 1)
        gradient = per_row.sum(dim=1).transpose(1, 2)  # (P, 1, L)
        weights = self.weights()
        weighted = (weights * gradient).sum(dim=2, keepdim=True)  # (P, 1, 1)
        self.scale.grad.copy_(weighted)
        self.logits.grad.copy_(self.scale * weights * (gradient - weighted))

    def select(self, rows: torch.Tensor) -> ScalarMixes:
        """The mixes of the probes at ``rows``, as a new stack (copies)."""
        logits = self.logits.detach()[rows].clone()
        scale = self.scale.detach()[rows].clone()
        return ScalarMixes(logits, scale, self._rows, self._width)

    def evaluator(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """Rows (n, L·d) → their mixes (P, n, d) under the current parameters."""
        with torch.no_grad():
            coefficients = self.coefficients()
        return lambda rows: mixer(coefficients, self._width)(rows)

    def arrays(self) -> dict[str, np.ndarray]:
        """The learned mix on the host: ``mix_logits`` (P, L) and ``mix_scale`` (P,)."""
        logits = self.logits.detach().to("cpu", copy=True).numpy()
        scale = self.scale.detach().to("cpu", copy=True).numpy()
        return {"mix_logits": logits.reshape(logits.shape[0], -1), "mix_scale": scale.reshape(-1)}

    def parameter_arrays(self) -> dict[str, np.ndarray]:
        """Nothing more for keeping probes: the mix's parameters are :meth:`arrays`."""
        return {}


def mixer(coefficients: torch.Tensor, width: int) -> Callable[..., torch.Tensor]:
    """Rows (n, L·d) — or (P, n, L·d), one set per probe — and optionally an allocator of the
    (P, n, d) output, → their mixes under the (P, 1, L) ``coefficients`` γ·softmax(a)."""

    def mix(
        rows: torch.Tensor, allocate: Callable[..., torch.Tensor] | None = None
    ) -> torch.Tensor:
        shape = (coefficients.shape[0], rows.shape[-2], width)
        out = torch.empty(shape, device=rows.device) if allocate is None else allocate(shape)
        return mix_layers(coefficients, rows, out)

    return mix


class ScalarMix(torch.nn.Module):
    """One probe's scalar mix as an ordinary module: ``forward(x)`` maps (n, L·d) features to
    the (n, d) mix γ · Σ_l softmax(a)_l h_l, with parameters ``logits`` (L,) and ``scale`` (1,)
    (the engine computes the same mix, :func:`mix_layers`, up to float rounding)."""

    def __init__(self, n_layers: int, width: int) -> None:
        super().__init__()
        self.n_layers, self.width = int(n_layers), int(width)
        self.logits = torch.nn.Parameter(torch.zeros(self.n_layers))
        self.scale = torch.nn.Parameter(torch.ones(1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        blocks = features.unflatten(-1, (self.n_layers, self.width))
        weights = torch.softmax(self.logits, dim=0)
        return self.scale * (blocks * weights[:, None]).sum(dim=-2)
