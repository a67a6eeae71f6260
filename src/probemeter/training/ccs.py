"""Contrast-consistent search (CCS): an unsupervised linear probe on contrast pairs, many at
once.

Burns et al. (2023, §2) read a statement x⁺ and its contrast x⁻ (the same question answered
"yes" and "no"; here the two texts of a contrast-pair row, laid out side by side: the first
half of each feature row is x⁺, the second x⁻, as a texts task with ``pair = "concat"`` gives
them). On probe p's training subset each side is normalised by its own mean and standard
deviation, elementwise (§2.2: x̃⁺ = (x⁺ − μ⁺)/σ⁺, x̃⁻ likewise; a feature constant on the
subset is only centred), and

    p(x) = σ(θᵀ x̃ + b),
    L(θ, b) = (1/n) Σ_i [ (p(x̃⁺_i) − (1 − p(x̃⁻_i)))²  +  min(p(x̃⁺_i), p(x̃⁻_i))² ],

consistency plus confidence, with no label. Each probe trains full batch from
``restarts`` random initialisations (nn.Linear's U(−1/√d, 1/√d), drawn from the probe's own
key and the restart's index, so a probe's result does not depend on the probes beside it),
``epochs`` AdamW steps each (:class:`~probemeter.training.config.CCSTraining`: the paper's
1000 epochs at lr 1e-3, the authors' code's weight decay 0.01 and 10 restarts); the restart
of lowest loss on the subset is kept (App.: "we ... take the one with the lowest loss"). All
probes × restarts are one stack of parameters (θ of shape (Q, d)): every step is two matrix
products of the union of the subsets' rows with the stack, each probe's loss weighted to its
own rows (a row outside the subset weighs 0), so Q probes train in one loop.

CCS predicts ½(p(x⁺) + 1 − p(x⁻)) > ½, i.e. p(x⁺) > p(x⁻), i.e. the margin
u(x) = θᵀ(x̃⁺ − x̃⁻) > 0 (b cancels; σ is monotone): "the first text is the true one". The loss
is symmetric in the sign of (θ, b) (swapping which side is true leaves it unchanged), so the
direction's sign is unidentified without labels: as the paper evaluates, it is fixed with
labels, here those of the probe's *training subset* (s = +1 where the decision's accuracy
there is at least ½, else −1), never the test set's. :class:`CCSFits` holds θ, b, the
normalisation, the sign and the losses; the linear map ``s·u(x) = vᵀx + c₀`` on the
side-by-side features (:meth:`CCSFits.signed_margin_map`) is what makes each CCS probe a linear
probe of the engine (:mod:`probemeter.training.directions`, family ``"ccs"``).

References:
    Burns, C., Ye, H., Klein, D. & Steinhardt, J. (2023). Discovering latent knowledge in
    language models without supervision. ICLR. arXiv:2212.03827

    Farquhar, S., Varma, V., Kenton, Z., Gasteiger, J., Mikulik, V. & Shah, R. (2023).
    Challenges with unsupervised LLM knowledge discovery. arXiv:2312.10029

    Loshchilov, I. & Hutter, F. (2019). Decoupled weight decay regularization. ICLR.
    arXiv:1711.05101
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from probemeter.probes.draws import fill_uniform
from probemeter.training.config import CCSTraining

__all__ = ["CCSFits", "ccs_loss", "ccs_objective", "fit_ccs", "pair_halves"]

#: a side's feature whose variance on the subset is at most this share of (1 + its squared
#: mean) is constant there up to rounding: it is centred, not scaled (its σ taken as 1)
_CONSTANT_VARIANCE = 1e-12
#: a probe whose margins' root mean square on its subset is at most this share of its
#: projections' reads equal sides (float32 features round at 6e-8; any signal is far above)
_INDISTINCT = 1e-4


def ccs_loss(p_first: torch.Tensor, p_second: torch.Tensor) -> torch.Tensor:
    """Each pair's CCS loss (Burns et al. 2023, eq. 1–2): consistency
    (p⁺ − (1 − p⁻))² plus confidence min(p⁺, p⁻)², elementwise."""
    return (p_first - (1 - p_second)).square() + torch.minimum(p_first, p_second).square()


def ccs_objective(
    theta: torch.Tensor,
    bias: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
    weights: torch.Tensor,
    normalisation: tuple[torch.Tensor, ...] | None = None,
) -> torch.Tensor:
    """Each probe's mean CCS loss on its rows, the objective :func:`fit_ccs` minimises.

    Args:
        theta, bias: (Q, d) and (Q,): Q probes' parameters.
        first, second: (n, d) each: the pairs' first and second sides, shared by the probes.
        weights: (n, Q): each probe's weight on each row (its multiplicity / subset size).
        normalisation: (μ⁺, σ⁺, μ⁻, σ⁻), each (Q, d): probe q reads (x − μ)/σ, folded into
            the product (θᵀ(x − μ)/σ = (θ/σ)ᵀx − (θ/σ)ᵀμ: no normalised copy per probe);
            None: the sides are read as they are.

    Returns:
        (Q,) Σ_i weights[i, q] · ccs_loss(p(x̃⁺_i), p(x̃⁻_i)).
    """
    margins = []
    for index, side in enumerate((first, second)):
        if normalisation is None:
            margins.append(side @ theta.T + bias)
            continue
        mean, scale = normalisation[2 * index], normalisation[2 * index + 1]
        scaled = theta / scale
        margins.append(side @ scaled.T - (scaled * mean).sum(dim=1) + bias)
    losses = ccs_loss(torch.sigmoid(margins[0]), torch.sigmoid(margins[1]))
    return (weights * losses).sum(dim=0)


def pair_halves(X: np.ndarray | torch.Tensor) -> tuple[int, str | None]:
    """The width d of each side of side-by-side pairs (2d features), or a problem."""
    width = int(X.shape[1])
    if width % 2:
        return 0, (
            f'CCS reads contrast pairs side by side ([x_first, x_second]: pair = "concat"); '
            f"{width} features are no two equal halves"
        )
    return width // 2, None


@dataclass(frozen=True)
class CCSFits:
    """P trained CCS probes (float64 numpy arrays; d is one side's width).

    Attributes:
        theta: (P, d) the direction θ of the kept restart, on normalised sides.
        bias: (P,) its b.
        mean_first, scale_first, mean_second, scale_second: (P, d) each side's mean and σ on
            the probe's subset (σ = 1 where the side is constant there).
        sign: (P,) +1 or −1: the orientation fixed on the subset's labels.
        loss: (P,) the unsupervised loss of the kept restart on its subset.
        restart: (P,) the index of the kept restart.
        train_accuracy: (P,) the signed decision's accuracy on the subset (≥ ½ but for zero
            margins).
        indistinct: (P,) whether the probe's margins θᵀ(x̃⁺ − x̃⁻) on its subset are rounding
            (their root mean square at most :data:`_INDISTINCT` times that of θᵀx̃): sides
            equal up to float rounding. Its map is then zero (no decision, the uniform code).
    """

    theta: np.ndarray
    bias: np.ndarray
    mean_first: np.ndarray
    scale_first: np.ndarray
    mean_second: np.ndarray
    scale_second: np.ndarray
    sign: np.ndarray
    loss: np.ndarray
    restart: np.ndarray
    train_accuracy: np.ndarray
    indistinct: np.ndarray

    def signed_margin_map(self) -> tuple[np.ndarray, np.ndarray]:
        """(v, c₀), (P, 2d) and (P,), with s·θᵀ(x̃⁺ − x̃⁻) = vᵀx + c₀ for a side-by-side row
        x = [x⁺, x⁻]: v = s·[θ/σ⁺, −θ/σ⁻], c₀ = −s·θᵀ(μ⁺/σ⁺ − μ⁻/σ⁻); zero for an
        :attr:`indistinct` probe."""
        first = self.theta / self.scale_first
        second = self.theta / self.scale_second
        signs = np.where(self.indistinct, 0.0, self.sign)
        vectors = signs[:, None] * np.concatenate([first, -second], axis=1)
        offsets = -signs * (
            (first * self.mean_first).sum(axis=1) - (second * self.mean_second).sum(axis=1)
        )
        return vectors, offsets

    def decisions(self, X: np.ndarray) -> np.ndarray:
        """(P, n) 0/1: each probe's signed CCS decision on side-by-side rows ``X`` (n, 2d):
        1 where s·(p(x̃⁺) − p(x̃⁻)) > 0."""
        vectors, offsets = self.signed_margin_map()
        margins = vectors @ np.asarray(X, dtype=np.float64).T + offsets[:, None]
        return (margins > 0).astype(np.int64)

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(P,) each probe's accuracy on rows ``X`` with labels ``y`` (0/1)."""
        return (self.decisions(X) == np.asarray(y)[None, :]).mean(axis=1)


def fit_ccs(
    X: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    subsets: Sequence[np.ndarray],
    keys: Sequence[tuple[int, ...]],
    config: CCSTraining | None = None,
) -> CCSFits:
    """Train one CCS probe per subset, all at once (module docstring).

    Args:
        X: (n, 2d) contrast pairs side by side, [x⁺, x⁻] per row (float64 on any device,
            or numpy; the arithmetic is in X's floating dtype).
        y: (n,) 0/1 labels, 1 where the first text is the true one; read only to fix each
            probe's sign on its own subset.
        subsets: per probe, indices into the rows of its training examples (repeats count).
        keys: per probe, integers seeding its initial parameters (restart r draws from
            ``np.random.default_rng([*key, r])``).
        config: epochs, learning rate, weight decay, restarts (default: ``CCSTraining()``).

    Raises:
        ValueError: an odd feature count, labels other than 0/1, an empty subset or an index
            outside the rows, keys not one per subset.
    """
    config = CCSTraining() if config is None else config
    X = torch.as_tensor(X)
    if not X.is_floating_point():
        X = X.to(torch.float64)
    device, dtype = X.device, X.dtype
    d, problem = pair_halves(X)
    if problem is not None:
        raise ValueError(problem)
    labels = torch.as_tensor(y, device=device).to(torch.int64)
    if labels.shape != (X.shape[0],) or not bool(((labels == 0) | (labels == 1)).all()):
        raise ValueError("CCS fixes its sign on two classes: y must be n labels 0 or 1")
    if len(keys) != len(subsets):
        raise ValueError(f"keys must be one per subset ({len(subsets)}); got {len(keys)}")
    subsets = [np.asarray(subset, dtype=np.int64) for subset in subsets]
    for subset in subsets:
        if not subset.size or subset.min() < 0 or subset.max() >= X.shape[0]:
            raise ValueError(f"every subset must hold row indices in [0, {X.shape[0]})")
    # the union of the subsets' rows, and each probe's weight on them (multiplicity / size)
    union = np.unique(np.concatenate(subsets))
    counts = np.zeros((union.size, len(subsets)))
    for probe, subset in enumerate(subsets):
        counts[:, probe] = np.bincount(np.searchsorted(union, subset), minlength=union.size)
    weights = torch.as_tensor(counts / counts.sum(axis=0), dtype=dtype, device=device)
    rows = X.index_select(0, torch.as_tensor(union, device=device))
    first, second = rows[:, :d], rows[:, d:]
    mean_first, scale_first = _moments(first, weights)
    mean_second, scale_second = _moments(second, weights)
    theta, bias, losses = _train(
        (first, mean_first, scale_first), (second, mean_second, scale_second),
        weights, keys, config,
    )  # fmt: skip
    # per probe, the restart of lowest loss (the first of equals)
    restarts = config.restarts
    kept = losses.view(len(subsets), restarts).argmin(dim=1)
    chosen = torch.arange(len(subsets), device=device) * restarts + kept
    theta, bias = theta[chosen], bias[chosen]
    # the margins θᵀ(x̃⁺ − x̃⁻) (n, P); the orientation of the higher accuracy on the subset
    # (at least ½ but for zero margins, which neither orientation calls true)
    normalisation = (mean_first, scale_first, mean_second, scale_second)
    z_first, z_second = _projections(first, second, theta, normalisation)
    margins = z_first - z_second
    # sides the direction cannot tell apart (equal up to rounding, e.g. the embedding of a last
    # token both texts share): their margins are rounding, no decision; zero, they give the
    # uniform code instead of a temperature fitted to noise
    spread = (weights * margins.square()).sum(dim=0).sqrt()
    size = (weights * (z_first.square() + z_second.square()) / 2).sum(dim=0).sqrt()
    indistinct = spread <= _INDISTINCT * size
    margins = torch.where(indistinct, 0.0, margins)
    truth = labels[union][:, None]
    accuracy_up = (weights * ((margins > 0).to(torch.int64) == truth).to(dtype)).sum(dim=0)
    accuracy_down = (weights * ((margins < 0).to(torch.int64) == truth).to(dtype)).sum(dim=0)
    sign = torch.where(accuracy_up >= accuracy_down, 1.0, -1.0).to(dtype)
    accuracy = torch.maximum(accuracy_up, accuracy_down)

    def host(tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().to(torch.float64).cpu().numpy()

    return CCSFits(
        theta=host(theta),
        bias=host(bias),
        mean_first=host(mean_first),
        scale_first=host(scale_first),
        mean_second=host(mean_second),
        scale_second=host(scale_second),
        sign=host(sign),
        loss=host(losses.view(len(subsets), restarts).gather(1, kept[:, None]).squeeze(1)),
        restart=kept.cpu().numpy(),
        train_accuracy=host(accuracy),
        indistinct=indistinct.cpu().numpy(),
    )


def _moments(side: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each probe's mean and σ (P, d) of one side over its rows (weights (n, P)); σ = 1 where
    the side is constant on the subset (up to rounding), which then is only centred."""
    mean = weights.T @ side
    variance = (weights.T @ side.square() - mean.square()).clamp(min=0)
    constant = variance <= _CONSTANT_VARIANCE * (1 + mean.square())
    return mean, torch.where(constant, 1.0, variance.sqrt()).to(side.dtype)


def _projections(
    first: torch.Tensor,
    second: torch.Tensor,
    theta: torch.Tensor,
    normalisation: tuple[torch.Tensor, ...],
) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, P) θ_pᵀx̃⁺ and θ_pᵀx̃⁻ of every row for every probe, the normalisation folded in."""
    mean_first, scale_first, mean_second, scale_second = normalisation
    scaled_first, scaled_second = theta / scale_first, theta / scale_second
    return (
        first @ scaled_first.T - (scaled_first * mean_first).sum(dim=1),
        second @ scaled_second.T - (scaled_second * mean_second).sum(dim=1),
    )


def _train(
    first: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    second: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    weights: torch.Tensor,
    keys: Sequence[tuple[int, ...]],
    config: CCSTraining,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """θ (Q, d), b (Q,) and the final losses (Q,) of every probe × restart (probe-major).

    Normalisation is folded into the product, never materialised per probe:
    θᵀ(x − μ)/σ = (θ/σ)ᵀx − (θ/σ)ᵀμ."""
    rows_first, mean_first, scale_first = first
    rows_second, mean_second, scale_second = second
    d = rows_first.shape[1]
    restarts = config.restarts
    device, dtype = rows_first.device, rows_first.dtype
    initial = np.empty((len(keys) * restarts, d + 1), dtype=np.float32)
    for probe, key in enumerate(keys):
        for restart in range(restarts):
            # θ then b, as nn.Linear(d, 1) draws them; a probe's draws are its own
            fill_uniform(
                np.random.default_rng([*key, restart]), initial[probe * restarts + restart], d
            )
    theta = torch.tensor(initial[:, :d], dtype=dtype, device=device, requires_grad=True)
    bias = torch.tensor(initial[:, d], dtype=dtype, device=device, requires_grad=True)
    probe_of = torch.arange(len(keys), device=device).repeat_interleave(restarts)
    stats = tuple(stat[probe_of] for stat in (mean_first, scale_first, mean_second, scale_second))
    row_weights = weights[:, probe_of]
    optimizer = torch.optim.AdamW(
        [theta, bias], lr=config.lr, weight_decay=config.weight_decay, foreach=False
    )

    def objective() -> torch.Tensor:
        return ccs_objective(theta, bias, rows_first, rows_second, row_weights, stats)

    for _ in range(config.epochs):
        optimizer.zero_grad(set_to_none=False)
        objective().sum().backward()  # each probe's loss depends on its own row of θ only
        optimizer.step()
    with torch.no_grad():
        losses = objective()
    return theta.detach(), bias.detach(), losses
