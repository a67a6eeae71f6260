"""Adam as one fused kernel call per step, without ``torch.optim.Optimizer``'s machinery.

``torch.optim.Adam(params, lr, fused=True).step()`` ends in one call of the fused kernel
``torch._fused_adam_`` (Kingma & Ba 2015, Algorithm 1, with bias corrections c1 = 1 − β1^t and
c2 = 1 − β2^t: ``θ ← θ − lr · (m / c1) / (sqrt(v / c2) + ε)``), but each step first goes through
the optimiser's Python layers: state lookups per parameter, grouping by device and dtype,
hooks, and, on its first call, an import of ``torch._dynamo`` in each worker process. A small
probe's step is short, so those layers are a large share of it (benchmarks/README.md,
"Training internals").
:class:`FusedAdam` holds the same state (first and second moments, a float32 step count per
parameter) and calls the kernel directly: its updates are bit for bit those of
``torch.optim.Adam(..., fused=True)``.
"""

from __future__ import annotations

import torch

__all__ = ["FusedAdam"]


class FusedAdam:
    """Adam on ``parameters`` (each with a ``.grad`` of its shape), one fused kernel per step.

    Args:
        parameters: float32 tensors updated in place; their ``.grad`` is read at every step.
        lr: learning rate.
        betas, eps: Adam's (β1, β2) and ε, as ``torch.optim.Adam``'s defaults.
    """

    def __init__(
        self,
        parameters: list[torch.Tensor],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.parameters = list(parameters)
        self.lr = float(lr)
        self.betas = betas
        self.eps = eps
        self._exp_avg = [torch.zeros_like(p) for p in self.parameters]
        self._exp_avg_sq = [torch.zeros_like(p) for p in self.parameters]
        # torch.optim.Adam keeps one float32 step tensor per parameter for its fused kernel
        self._steps = [
            torch.zeros((), dtype=torch.float32, device=p.device) for p in self.parameters
        ]

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every parameter from its current ``.grad``."""
        torch._foreach_add_(self._steps, 1)
        torch._fused_adam_(
            self.parameters,
            [p.grad for p in self.parameters],
            self._exp_avg,
            self._exp_avg_sq,
            [],
            self._steps,
            lr=self.lr,
            beta1=self.betas[0],
            beta2=self.betas[1],
            weight_decay=0.0,
            eps=self.eps,
            amsgrad=False,
            maximize=False,
        )
