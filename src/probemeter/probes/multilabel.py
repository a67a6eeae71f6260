"""The multi-label objective of stacked probes: K sigmoid outputs, binary cross-entropy per label.

Tenney et al. (2019, §3) train edge probes whose targets carry a *set* of labels with one
sigmoid per label and binary cross-entropy; a target's code is then the sum of K Bernoulli
codes (:mod:`probemeter._multilabel`), which makes the online code of Voita & Titov (2020,
eq. 4) defined for such targets. Targets are a 0/1 indicator matrix (n, K), float32 on the
device. With logits z (P, n, K) the loss of one example is, in nats,

    ℓ(z, y) = Σ_k softplus(z_k) − y_k z_k = Σ_k −[y_k log σ(z_k) + (1 − y_k) log(1 − σ(z_k))],

and its gradient ∂ℓ/∂z_k = σ(z_k) − y_k; the engine's row weights w_r (1/batch on real rows, 0
on padding) scale it as they scale the softmax's. Predictions are ŷ_k = [z_k > 0]
(σ(z_k) > 0.5); an example is correct when ŷ = y on every label (exact set match).

References:
    Tenney, I., Xia, P., Chen, B., Wang, A., Poliak, A., McCoy, R. T., Kim, N., Van Durme, B.,
    Bowman, S. R., Das, D. & Pavlick, E. (2019). What do you learn from context? Probing for
    sentence structure in contextualized word representations. *ICLR 2019*. arXiv:1905.06316

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
import torch.nn.functional as F

from probemeter._multilabel import f1_scores

__all__ = ["binary_nll", "evaluate_multilabel", "sigmoid_gradient"]


def sigmoid_gradient(
    logits: torch.Tensor, targets: torch.Tensor, row_weights: torch.Tensor
) -> torch.Tensor:
    """w_r · (σ(z) − y): the gradient of Σ_r w_r · ℓ(z_r, y_r) at the logits (P, rows, K), for
    targets (P, rows, K) and row weights (P, rows, 1), in f32 (a new tensor)."""
    return torch.sigmoid(logits.float()).sub_(targets).mul_(row_weights)


def binary_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """ℓ(z, y) of every row in nats: logits (P, n, K), targets broadcastable to them → (P, n)."""
    expanded = targets.expand_as(logits)
    return F.binary_cross_entropy_with_logits(logits, expanded, reduction="none").sum(dim=-1)


def evaluate_multilabel(
    blocks: Iterable[tuple[int, torch.Tensor]],
    targets: torch.Tensor,
    per_example: bool = False,
) -> dict[str, np.ndarray]:
    """The metrics of :func:`~probemeter.probes.stacked_mlp.evaluate_stacked` for multi-label
    ``targets`` (n, K), float32 0/1, from the logits of each block of rows, ``(start, logits
    (P, rows, K))``: mean ℓ (``loss``, nats per example), mean min(ℓ, 1) (``loss_truncated``),
    the exact-set-match rate (``accuracy``), and per probe ``micro_f1`` and ``macro_f1``
    (:func:`probemeter._multilabel.f1_scores`); with ``per_example``, ``nll`` (P, n) float32
    and ``predictions`` (P, n, K) uint8 0/1. Sums are kept in float64, block after block."""
    totals: torch.Tensor | None = None
    counts: torch.Tensor | None = None
    per_row: dict[str, list[torch.Tensor]] = {"nll": [], "predictions": []}
    n = targets.shape[0]
    for start, logits in blocks:
        y = targets[start : start + logits.shape[1]].unsqueeze(0)
        if totals is None:
            totals = torch.zeros(3, logits.shape[0], dtype=torch.float64, device=logits.device)
            counts = torch.zeros(3, *logits.shape[::2], dtype=torch.float64, device=logits.device)
        nll = binary_nll(logits, y)
        predicted = logits > 0
        truth = y > 0.5
        totals[0] += nll.sum(dim=1, dtype=torch.float64)
        totals[1] += nll.clamp(max=1.0).sum(dim=1, dtype=torch.float64)
        totals[2] += (predicted == truth).all(dim=2).sum(dim=1, dtype=torch.float64)
        counts[0] += (predicted & truth).sum(dim=1, dtype=torch.float64)
        counts[1] += (predicted & ~truth).sum(dim=1, dtype=torch.float64)
        counts[2] += (~predicted & truth).sum(dim=1, dtype=torch.float64)
        if per_example:
            per_row["nll"].append(nll.cpu())
            per_row["predictions"].append(predicted.to(torch.uint8).cpu())
    values = (totals / n).cpu().numpy()
    scores = np.array([f1_scores(c) for c in counts.permute(1, 0, 2).cpu().numpy()])
    metrics = {
        "loss": values[0],
        "loss_truncated": values[1],
        "accuracy": values[2],
        "micro_f1": scores[:, 0],
        "macro_f1": scores[:, 1],
    }
    if per_example:
        metrics.update({name: torch.cat(parts, dim=1).numpy() for name, parts in per_row.items()})
    return metrics
