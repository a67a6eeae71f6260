"""Direction baselines: linear probes fitted in closed form, many at once.

A *direction family* turns each probe's training subset into the parameters (W, b) of an
ordinary linear probe, without gradient descent, so that everything the engine does with a
trained linear probe — evaluation, kept probes, PVI, online codes, paired tests — applies
unchanged (:func:`~probemeter.training.engine.fit_evaluate` dispatches here when its probe is
a :class:`~probemeter.probes.Direction`). The families are declared once, in
:data:`DIRECTION_FAMILIES` (name, help, batched fit, its memory and arithmetic): another
family is one more entry.

**The two families.** On probe p's subset, with class means μ_k, class frequencies π_k and a
matrix S,

    score_k(x) = μ_kᵀ S⁻¹ x − ½ μ_kᵀ S⁻¹ μ_k,        logit_k(x) = a · score_k(x) + ln π_k,

with S = I for ``"diff-means"`` (difference in means: AxBench's DiffMean, Wu et al. 2025;
Marks & Tegmark 2023's mass-mean probe) and S the pooled within-class covariance,
shrunk by Ledoit & Wolf (2004), for ``"lda"`` (Fisher's linear discriminant, as
scikit-learn's ``LinearDiscriminantAnalysis(solver="lsqr")`` computes it). These are the
logits of the Gaussian class model with shared covariance S; ``a ≥ 0``, one temperature per
probe, is the one parameter fitted to the labels: for K = 2 the logit difference is

    logit_1 − logit_0 = a (μ_1 − μ_0)ᵀ S⁻¹ (x − (μ_1 + μ_0)/2) + ln(π_1/π_0),

the class-mean difference (whitened for LDA) projected, with a one-parameter logistic
calibration: the issue's "difference in means with a logistic calibration fitted on the same
subset". a minimises the subset's mean cross-entropy against add-one smoothed targets,
(1 − ε) e_y + ε/K with ε = 1/(n + 1) (one pseudo-row spread evenly over the classes, as the
class frequencies are add-one smoothed), a convex function of a: damped Newton steps from
a = 0 (projected on a ≥ 0, halved until the loss falls by a quarter of the predicted
decrease) until half the squared Newton decrement, L'(a)² / (2 L''(a)), the loss still to
gain by the quadratic model, is at most :data:`CALIBRATION_TOLERANCE` nats, or
:data:`CALIBRATION_STEPS` steps. Why smoothed: when a small subset's scores separate its
classes (d > n makes it the rule, LDA's whitening more so), the plain cross-entropy has no
minimiser — it falls towards 0 as a grows — and any stopping point is an arbitrary, huge a:
test losses of tens of nats per example (82.7 at n = 20, d = 64 in
``benchmarks/directions.py --quick`` before). With one pseudo-row the optimum is finite, its
training margin about ln n; at the full pool ε is negligible.

**CCS** (``"ccs"``, Burns et al. 2023): a third family, on contrast pairs side by side (a
texts task's ``pair = "concat"``), is not closed-form: each probe is trained without labels
(:mod:`probemeter.training.ccs`, its restarts drawn from the probe's seed: the one *seeded*
family) and expressed as the linear probe with logits (0, a·s·θᵀ(x̃⁺ − x̃⁻)), its sign s fixed
on the subset's labels and a fitted as below with no offset (:func:`fit_ccs_directions`).

**Details stated.** The class frequencies are add-one smoothed, π_k = (n_k + 1)/(n + K), as
probemeter's null model of PVI, so that a class absent from a small subset keeps a finite
logit; such a class's mean is the subset's mean (no evidence to move it). The pooled
covariance is S_W = (1/n) Σ_i (x_i − μ_{y_i})(x_i − μ_{y_i})ᵀ = Σ_k (n_k/n) C_k, the
class-frequency-weighted maximum-likelihood covariances (scikit-learn's ``covariance_``
without shrinkage); LDA uses S = (1 − δ) S_W + δ (tr S_W / d) I, δ the Ledoit–Wolf
intensity of the within-class residuals x_i − μ_{y_i} (scikit-learn's
``ledoit_wolf_shrinkage(residuals, assume_centered=True)``), i.e. exactly
``LinearDiscriminantAnalysis(solver="lsqr", shrinkage=δ)``'s covariance (its "auto"
shrinkage instead estimates δ per class on standardised features, which a batched fit
cannot hold: K covariances per probe). S is solved by a Cholesky factorisation, or, where
it is singular (a feature constant on the subset and δ = 0), by the pseudo-inverse
(scikit-learn's least-squares solution). A probe's seed does not enter these two families:
their probes of one size differ only by their subsets.

**Cost.** One pass over the union of the probes' rows gathers every probe's class sums (one
matrix product of per-probe, per-class indicator weights with each block of rows); for LDA,
the second moments Σ x xᵀ are (d, d) products of each probe's rows, a probe whose subset
extends another's (a curve's nested subsets of one seed) starting from the other's sum, so
that they cost one pass per seed over its largest subset; LDA's Ledoit–Wolf intensity needs
Σ_i ‖x_i − μ_{y_i}‖⁴, an O(n d) pass; the scores of the calibration another O(n d K) one.
Then one (P, d, d) factorisation. A curve costs a few passes over the data, against a trained
probe's thousands of minibatch steps (``benchmarks/directions.py``).

References:
    Wu, Z., Arora, A., Geiger, A., Wang, Z., Huang, J., Jurafsky, D., Manning, C. D. & Potts, C.
    (2025). AxBench: steering LLMs? Even simple baselines outperform sparse autoencoders.
    arXiv:2501.17148

    Marks, S. & Tegmark, M. (2023). The geometry of truth: emergent linear structure in large
    language model representations of true/false datasets. arXiv:2310.06824

    Fisher, R. A. (1936). The use of multiple measurements in taxonomic problems. *Annals of
    Eugenics* 7(2), 179–188. doi:10.1111/j.1469-1809.1936.tb02137.x

    Ledoit, O. & Wolf, M. (2004). A well-conditioned estimator for large-dimensional covariance
    matrices. *Journal of Multivariate Analysis* 88(2), 365–411.
    doi:10.1016/S0047-259X(03)00096-4

    Pedregosa, F. et al. (2011). Scikit-learn: machine learning in Python. *JMLR* 12,
    2825–2830. arXiv:1201.0490 (``sklearn.discriminant_analysis.LinearDiscriminantAnalysis``)

    Boyd, S. & Vandenberghe, L. (2004). *Convex Optimization*, §9.5 (Newton's method, the
    Newton decrement). Cambridge University Press.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from probemeter.training.ccs import fit_ccs
from probemeter.training.config import CCSTraining

__all__ = [
    "CALIBRATION_STEPS",
    "CALIBRATION_TOLERANCE",
    "DIRECTION_FAMILIES",
    "DirectionFamily",
    "DirectionFits",
    "PoolRows",
    "calibrate",
    "direction_family",
    "families_problem",
    "fit_ccs_directions",
    "fit_diff_means",
    "fit_lda",
]

#: the calibration stops when half the squared Newton decrement, the mean cross-entropy still
#: to gain by the quadratic model, is at most this many nats
CALIBRATION_TOLERANCE = 1e-9
#: ... or after this many Newton steps (a separable subset takes about ln(1/tolerance) + a few)
CALIBRATION_STEPS = 100
#: rows gathered per block of the passes over the data (bounds the temporaries)
BLOCK_ROWS = 4096
#: bytes of a float64
_F64 = 8
#: how the ``"ccs"`` family trains (the paper's protocol, :class:`CCSTraining`'s defaults)
_CCS = CCSTraining()


@dataclass(frozen=True)
class DirectionFits:
    """The closed-form fits of P probes.

    Attributes:
        weights: (P, d, K) float32: probe p's logits are ``x @ weights[p] + biases[p]``.
        biases: (P, K) float32.
        temperature: (P,) float64, each probe's fitted a ≥ 0.
        shrinkage: (P,) float64, LDA's Ledoit–Wolf intensity δ (0 for the difference in means).
        calibration_gradient: (P,) float64, dL/da at the fitted a (nats per unit of a).
        calibration_curvature: (P,) float64, d²L/da² there.
    """

    weights: torch.Tensor
    biases: torch.Tensor
    temperature: np.ndarray
    shrinkage: np.ndarray
    calibration_gradient: np.ndarray
    calibration_curvature: np.ndarray


class PoolRows:
    """The rows of a training pool, gathered as float64 blocks on its device: from the
    engine's tensor, or, for a large memory-mapped pool, by ``pread`` from its file
    (:class:`~probemeter._resident.FileRows`), never mapping it whole."""

    def __init__(self, pool_x: torch.Tensor, pool_file: Any = None) -> None:
        self.pool_x, self.pool_file = pool_x, pool_file

    @property
    def n_features(self) -> int:
        return int(self.pool_x.shape[1])

    @property
    def device(self) -> torch.device:
        return self.pool_x.device

    def gather(self, rows: np.ndarray) -> torch.Tensor:
        """Rows ``rows`` (pool indices), in that order, as a (len(rows), d) float64 tensor."""
        if self.pool_file is not None:
            block = np.empty((len(rows), self.n_features), dtype=np.float32)
            self.pool_file.gather(rows, block)
            return torch.from_numpy(block).to(torch.float64)
        index = torch.as_tensor(rows, dtype=torch.int64, device=self.device)
        return self.pool_x.index_select(0, index).to(torch.float64)


@dataclass(frozen=True)
class _Subsets:
    """P subsets as weights on the union of their rows: ``counts[p, j]`` is how often union
    row ``union[j]`` is in subset p (its multiplicity), with the labels of the union rows."""

    union: np.ndarray
    counts: torch.Tensor
    labels: torch.Tensor

    @classmethod
    def of(cls, subsets: Sequence[np.ndarray], pool_y: torch.Tensor) -> _Subsets:
        union = np.unique(np.concatenate([np.asarray(s, dtype=np.int64) for s in subsets]))
        counts = np.zeros((len(subsets), union.size))
        for probe, subset in enumerate(subsets):
            counts[probe] = np.bincount(np.searchsorted(union, subset), minlength=union.size)
        device = pool_y.device
        labels = pool_y[torch.as_tensor(union, device=device)]
        return cls(union, torch.as_tensor(counts, device=device), labels)

    def blocks(self) -> Any:
        """(start, stop) of the union's blocks of :data:`BLOCK_ROWS` rows."""
        for start in range(0, self.union.size, BLOCK_ROWS):
            yield start, min(start + BLOCK_ROWS, self.union.size)


def _class_means(
    rows: PoolRows, subsets: _Subsets, n_classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per probe: class counts (P, K) and class means (P, K, d) (a class absent from the
    subset: the subset's mean), float64.

    The class sums of every probe are one product per block: the per-probe, per-class
    indicator weights (P·K, b) times the block's rows (b, d)."""
    n_probes, d = subsets.counts.shape[0], rows.n_features
    device = rows.device
    sums = torch.zeros(n_probes * n_classes, d, dtype=torch.float64, device=device)
    counts = torch.zeros(n_probes, n_classes, dtype=torch.float64, device=device)
    for start, stop in subsets.blocks():
        x = rows.gather(subsets.union[start:stop])
        onehot = torch.nn.functional.one_hot(subsets.labels[start:stop], n_classes).to(x.dtype)
        weights = subsets.counts[:, start:stop]  # (P, b)
        indicator = weights[:, None, :] * onehot.T[None]  # (P, K, b)
        sums += indicator.reshape(n_probes * n_classes, -1) @ x
        counts += indicator.sum(dim=2)
    sums = sums.view(n_probes, n_classes, d)
    totals = counts.sum(dim=1, keepdim=True)
    overall = sums.sum(dim=1) / totals  # (P, d)
    means = torch.where(
        counts[:, :, None] > 0, sums / counts.clamp(min=1)[:, :, None], overall[:, None, :]
    )
    return counts, means


def _second_moments(rows: PoolRows, subsets: Sequence[np.ndarray]) -> torch.Tensor:
    """Per probe, Σ_i x_i x_iᵀ over its subset (P, d, d), float64, each a running sum of
    block products; a probe whose subset extends another's (the other's rows are its first
    rows: a curve's nested subsets of one seed) starts from the other's sum and adds its own
    rows only, so a curve's seed costs one pass over its largest subset, not one per size."""
    d = rows.n_features
    moments = torch.zeros(len(subsets), d, d, dtype=torch.float64, device=rows.device)
    done: list[int] = []
    for probe in sorted(range(len(subsets)), key=lambda i: len(subsets[i])):
        subset = np.asarray(subsets[probe])
        start = 0
        for other in reversed(done):  # the largest prefix among those already summed
            n = len(subsets[other])
            if n <= len(subset) and np.array_equal(subset[:n], subsets[other]):
                moments[probe] = moments[other]
                start = n
                break
        for begin in range(start, len(subset), BLOCK_ROWS):
            x = rows.gather(subset[begin : begin + BLOCK_ROWS])
            moments[probe].addmm_(x.T, x)
        done.append(probe)
    return moments


def _fourth_moments(rows: PoolRows, subsets: _Subsets, means: torch.Tensor) -> torch.Tensor:
    """Per probe, Σ_i ‖x_i − μ_{y_i}‖⁴ over its rows (with multiplicity): the β of Ledoit &
    Wolf's intensity, an O(n d) pass once the means are known, batched over the probes:
    ‖x − μ‖² = ‖x‖² − 2 xᵀμ + ‖μ‖², the products xᵀμ_k of a block for every probe one
    batched product (P, b, K)."""
    n_probes = subsets.counts.shape[0]
    total = torch.zeros(n_probes, dtype=torch.float64, device=rows.device)
    squared_means = means.square().sum(dim=2)  # (P, K)
    for start, stop in subsets.blocks():
        x = rows.gather(subsets.union[start:stop])
        labels, weights = subsets.labels[start:stop], subsets.counts[:, start:stop]
        products = torch.matmul(x, means.transpose(1, 2))  # (P, b, K)
        own = products[:, torch.arange(len(labels), device=x.device), labels]  # (P, b)
        distance = x.square().sum(dim=1)[None] - 2 * own + squared_means[:, labels]
        total += (weights * distance.square()).sum(dim=1)
    return total


def _ledoit_wolf(covariance: torch.Tensor, fourth: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Ledoit & Wolf's shrinkage intensity δ ∈ [0, 1] of each (P,) probe's centred data from
    its covariance (1/n) Σ r rᵀ (P, d, d), Σ ‖r‖⁴ and n: scikit-learn's
    ``ledoit_wolf_shrinkage(r, assume_centered=True)``, term by term
    (β = (Σ‖r‖⁴/n − ‖C‖²_F) / (d n), δ² = ‖C − μI‖²_F / d, δ = min(β, δ²)/δ²)."""
    d = covariance.shape[1]
    trace = torch.diagonal(covariance, dim1=1, dim2=2).sum(dim=1)
    mu = trace / d
    frobenius = covariance.square().sum(dim=(1, 2))
    beta = (fourth / n - frobenius) / (d * n)
    delta = (frobenius - 2 * mu * trace + d * mu.square()) / d
    beta = torch.minimum(beta, delta)
    return torch.where(beta > 0, beta / torch.where(delta > 0, delta, 1.0), 0.0)


def _solve(matrices: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """S⁻¹ B for each probe's symmetric positive semi-definite S (P, d, d) and B (P, d, K): by
    Cholesky where S is positive definite, else by the pseudo-inverse (the minimum-norm
    least-squares solution, as scikit-learn's ``lsqr`` solver takes)."""
    factor, info = torch.linalg.cholesky_ex(matrices)
    solved = torch.cholesky_solve(right, factor)
    singular = torch.nonzero(info).squeeze(1)
    if singular.numel():
        pinv = torch.linalg.pinv(matrices.index_select(0, singular), hermitian=True)
        solved[singular] = pinv @ right.index_select(0, singular)
    return solved


@dataclass(frozen=True)
class _Rows:
    """The rows of every probe, flat: each (probe, row) pair once, with its probe, its
    multiplicity in the probe's subset, its label and its class scores (N, K)."""

    probe: torch.Tensor
    weights: torch.Tensor
    labels: torch.Tensor
    scores: torch.Tensor
    n_probes: int

    def total(self, values: torch.Tensor) -> torch.Tensor:
        """Per probe, the sum of ``values`` (N,) over its rows."""
        summed = torch.zeros(self.n_probes, dtype=values.dtype, device=values.device)
        return summed.index_add_(0, self.probe, values)


def _scores(
    rows: PoolRows, subsets: _Subsets, weights: torch.Tensor, offsets: torch.Tensor
) -> _Rows:
    """Every probe's class scores x W_p + c_p on its own rows: per block of the union, one
    batched product (P, b, K) for every probe, of which each probe's rows are kept."""
    kept: dict[str, list[torch.Tensor]] = {"probe": [], "weights": [], "labels": [], "scores": []}
    for start, stop in subsets.blocks():
        x = rows.gather(subsets.union[start:stop])
        counts = subsets.counts[:, start:stop]
        probe, row = torch.nonzero(counts, as_tuple=True)
        scores = torch.matmul(x, weights) + offsets[:, None, :]  # (P, b, K)
        kept["probe"].append(probe)
        kept["weights"].append(counts[probe, row])
        kept["labels"].append(subsets.labels[start:stop][row])
        kept["scores"].append(scores[probe, row])
    flat = {name: torch.cat(parts) for name, parts in kept.items()}
    return _Rows(**flat, n_probes=weights.shape[0])


def _calibration_terms(
    temperature: torch.Tensor,
    data: _Rows,
    log_prior: torch.Tensor,
    smoothing: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean cross-entropy L(a) of each probe's logits a·score + ln π on its rows against
    targets (1 − ε) e_y + ε/K (ε: ``smoothing``, (P,); None: 0), and its first and second
    derivatives in a: L' = mean(E_p[s] − (1 − ε) s_y − ε s̄), L'' = mean(Var_p[s])."""
    scores, probe = data.scores, data.probe
    logits = temperature[probe, None] * scores + log_prior[probe]
    log_p = torch.log_softmax(logits, dim=1)
    p = log_p.exp()
    true_log_p = log_p.gather(1, data.labels[:, None]).squeeze(1)
    true_score = scores.gather(1, data.labels[:, None]).squeeze(1)
    if smoothing is not None:
        keep = (1 - smoothing)[probe]
        true_log_p = keep * true_log_p + smoothing[probe] * log_p.mean(dim=1)
        true_score = keep * true_score + smoothing[probe] * scores.mean(dim=1)
    expected = (p * scores).sum(dim=1)
    variance = ((p * scores.square()).sum(dim=1) - expected.square()).clamp(min=0)
    total = data.total(data.weights)
    loss = -data.total(data.weights * true_log_p) / total
    gradient = data.total(data.weights * (expected - true_score)) / total
    curvature = data.total(data.weights * variance) / total
    return loss, gradient, curvature


def calibrate(
    scores: torch.Tensor,
    row_weights: torch.Tensor,
    labels: torch.Tensor,
    log_prior: torch.Tensor,
    *,
    tolerance: float = CALIBRATION_TOLERANCE,
    max_steps: int = CALIBRATION_STEPS,
    smoothed: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each probe's temperature a ≥ 0 minimising the weighted mean cross-entropy of the logits
    a·score + ln π (damped, projected Newton from a = 0; the module docstring states the
    stopping rule).

    Args:
        scores: (P, m, K) float64 class scores of each probe's rows.
        row_weights: (P, m) each row's multiplicity (0: padding).
        labels: (P, m) int64 each row's class.
        log_prior: (P, K) ln π.
        tolerance: nats: stop when L'(a)² / (2 L''(a)) is at most this.
        max_steps: Newton steps at most.
        smoothed: against add-one smoothed targets, (1 − ε) e_y + ε/K with ε = 1/(n + 1), n
            each probe's rows (with multiplicity): one pseudo-row spread evenly over the
            classes, so that a subset its scores separate still has a finite optimum (module
            docstring); False: the plain cross-entropy.

    Returns:
        (a, L'(a), L''(a)), each (P,) float64.
    """
    probe, row = torch.nonzero(row_weights, as_tuple=True)
    data = _Rows(
        probe, row_weights[probe, row], labels[probe, row], scores[probe, row], scores.shape[0]
    )
    return _calibrate(data, log_prior, tolerance, max_steps, smoothed)


def _calibrate(
    data: _Rows, log_prior: torch.Tensor, tolerance: float, max_steps: int, smoothed: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`calibrate` on the probes' rows, flat."""
    temperature = torch.zeros(data.n_probes, dtype=data.scores.dtype, device=data.scores.device)
    smoothing = 1 / (data.total(data.weights) + 1) if smoothed else None
    terms = (data, log_prior, smoothing)
    loss, gradient, curvature = _calibration_terms(temperature, *terms)
    for _ in range(max_steps):
        step = torch.where(curvature > 0, -gradient / curvature.clamp(min=1e-300), 0.0)
        step = torch.where((temperature <= 0) & (step < 0), 0.0, step)
        active = (gradient.square() > 2 * tolerance * curvature) & (step != 0)
        if not active.any():
            break
        scale = torch.ones_like(temperature)
        # halve each active probe's step until its loss falls by a quarter of the decrease
        # its derivative predicts (Armijo), along the projection on a ≥ 0
        for _ in range(60):
            trial = (temperature + scale * step).clamp(min=0)
            trial_loss = _calibration_terms(trial, *terms)[0]
            enough = trial_loss <= loss + 0.25 * gradient * (trial - temperature)
            if (enough | ~active).all():
                break
            scale = torch.where(enough | ~active, scale, scale / 2)
        moved = torch.where(active, (temperature + scale * step).clamp(min=0), temperature)
        temperature = moved
        loss, gradient, curvature = _calibration_terms(temperature, *terms)
    return temperature, gradient, curvature


def _fit_class_means(
    rows: PoolRows,
    pool_y: torch.Tensor,
    subsets: Sequence[np.ndarray],
    n_classes: int,
    *,
    whiten: bool,
) -> DirectionFits:
    """Both families: class means, S (I, or LDA's shrunk pooled covariance), the scores'
    linear map S⁻¹ μ_k and offsets −½ μ_kᵀ S⁻¹ μ_k, the calibration, then W = a S⁻¹ μᵀ,
    b = a·offset + ln π."""
    chosen = _Subsets.of(subsets, pool_y)
    counts, means = _class_means(rows, chosen, n_classes)
    n = counts.sum(dim=1)
    n_probes, d = means.shape[0], means.shape[2]
    shrinkage = torch.zeros(n_probes, dtype=torch.float64, device=rows.device)
    if whiten:
        moments = _second_moments(rows, subsets)
        # S_W = (Σ x xᵀ − Σ_k n_k μ_k μ_kᵀ) / n; its Ledoit–Wolf shrinkage towards (tr/d) I
        between = torch.einsum("pk,pki,pkj->pij", counts, means, means)
        covariance = (moments - between) / n[:, None, None]
        covariance = (covariance + covariance.transpose(1, 2)) / 2
        del moments, between
        fourth = _fourth_moments(rows, chosen, means)
        shrinkage = _ledoit_wolf(covariance, fourth, n)
        target = torch.diagonal(covariance, dim1=1, dim2=2).sum(dim=1) / d
        covariance *= (1 - shrinkage)[:, None, None]
        covariance.diagonal(dim1=1, dim2=2).add_((shrinkage * target)[:, None])
        directions = _solve(covariance, means.transpose(1, 2))  # (P, d, K)
        del covariance
    else:
        directions = means.transpose(1, 2).clone()
    offsets = -0.5 * torch.einsum("pkd,pdk->pk", means, directions)
    log_prior = torch.log((counts + 1) / (n + n_classes)[:, None])
    scored = _scores(rows, chosen, directions, offsets)
    temperature, gradient, curvature = _calibrate(
        scored, log_prior, CALIBRATION_TOLERANCE, CALIBRATION_STEPS, smoothed=True
    )
    weights = (temperature[:, None, None] * directions).to(torch.float32)
    biases = (temperature[:, None] * offsets + log_prior).to(torch.float32)
    return DirectionFits(
        weights,
        biases,
        temperature.cpu().numpy(),
        shrinkage.cpu().numpy(),
        gradient.cpu().numpy(),
        curvature.cpu().numpy(),
    )


def fit_diff_means(
    rows: PoolRows, pool_y: torch.Tensor, subsets: Sequence[np.ndarray], n_classes: int
) -> DirectionFits:
    """The difference in means (S = I) of every subset, calibrated (module docstring)."""
    return _fit_class_means(rows, pool_y, subsets, n_classes, whiten=False)


def fit_lda(
    rows: PoolRows, pool_y: torch.Tensor, subsets: Sequence[np.ndarray], n_classes: int
) -> DirectionFits:
    """Fisher's linear discriminant (S the Ledoit–Wolf-shrunk pooled within-class covariance)
    of every subset, calibrated (module docstring)."""
    return _fit_class_means(rows, pool_y, subsets, n_classes, whiten=True)


def _calibration_bytes(n_train: int, n_classes: int) -> int:
    """Per probe: the subset's multiplicities over the union, its scores, row weights, labels
    and the calibration's temporaries (logits, log-probabilities, probabilities)."""
    return _F64 * n_train * (1 + 3 + 4 * n_classes)


def _class_mean_bytes(n_features: int, n_classes: int, n_train: int) -> int:
    """Per probe of ``"diff-means"``: class sums and means, directions, and the calibration."""
    return 3 * _F64 * n_classes * n_features + _calibration_bytes(n_train, n_classes)


def _lda_bytes(n_features: int, n_classes: int, n_train: int) -> int:
    """Per probe of ``"lda"``: also Σ x xᵀ, the covariance and its Cholesky factor (d × d
    float64 each), and the between-class term."""
    return 4 * _F64 * n_features**2 + _class_mean_bytes(n_features, n_classes, n_train)


def _class_mean_flops(n_features: int, n_classes: int, n_train: int) -> float:
    """The class sums and the scores: 2 · 2 n d K."""
    return 4.0 * n_train * n_features * n_classes


def _lda_flops(n_features: int, n_classes: int, n_train: int) -> float:
    """Also Σ x xᵀ (2 n d²), the fourth moments (3 n d) and the factorisation (d³/3)."""
    d = n_features
    return (
        2.0 * n_train * d * d
        + 3.0 * n_train * d
        + d**3 / 3
        + _class_mean_flops(d, n_classes, n_train)
    )


def fit_ccs_directions(
    rows: PoolRows,
    pool_y: torch.Tensor,
    subsets: Sequence[np.ndarray],
    n_classes: int,
    *,
    keys: Sequence[tuple[int, ...]],
) -> DirectionFits:
    """CCS (Burns et al. 2023) of every subset as a calibrated linear probe on contrast pairs
    side by side (:mod:`probemeter.training.ccs`: trained without labels, its sign fixed on
    the subset's labels).

    Each probe's logits on a row x = [x⁺, x⁻] are (0, a·s·θᵀ(x̃⁺ − x̃⁻)): class 1 ("the first
    text is the true one", after the sign) exactly where CCS decides so, ½(p(x⁺) + 1 − p(x⁻))
    > ½ oriented by s, so the probe's accuracy is CCS's decision's; a ≥ 0, the one calibrated
    parameter, is fitted on the subset as the other families' temperature, against the same
    add-one smoothed targets (module docstring: CCS separates a small subset as often as they
    do), and gives the probe its cross-entropy. There is no offset c (no ln π): an offset would
    move the decision's threshold away from CCS's. The seed of each probe (``keys``) draws its
    restarts' initial parameters: CCS's probes differ by seed at every size.

    Raises:
        ValueError: not two classes; a feature count that is no two equal halves.
    """
    problem = _ccs_problem(rows.n_features, n_classes)
    if problem is not None:
        raise ValueError(problem)
    chosen = _Subsets.of(subsets, pool_y)
    union = torch.as_tensor(chosen.union, device=rows.device)
    fits = fit_ccs(
        rows.gather(chosen.union),
        pool_y.index_select(0, union),
        [np.searchsorted(chosen.union, np.asarray(subset)) for subset in subsets],
        keys,
    )
    vectors, offsets = (torch.as_tensor(a, device=rows.device) for a in fits.signed_margin_map())
    directions = torch.stack([torch.zeros_like(vectors), vectors], dim=2)  # (P, 2d, 2)
    offsets = torch.stack([torch.zeros_like(offsets), offsets], dim=1)  # (P, 2)
    scored = _scores(rows, chosen, directions, offsets)
    no_offset = torch.zeros_like(offsets)
    temperature, gradient, curvature = _calibrate(
        scored, no_offset, CALIBRATION_TOLERANCE, CALIBRATION_STEPS, smoothed=True
    )
    return DirectionFits(
        (temperature[:, None, None] * directions).to(torch.float32),
        (temperature[:, None] * offsets).to(torch.float32),
        temperature.cpu().numpy(),
        np.zeros(len(subsets)),
        gradient.cpu().numpy(),
        curvature.cpu().numpy(),
    )


def _ccs_problem(n_features: int, n_classes: int) -> str | None:
    """Why data of ``n_features`` features and ``n_classes`` classes are no contrast pairs
    side by side for CCS, or None."""
    if n_classes != 2:
        return f"ccs decides which of two texts is true: 2 classes, not {n_classes}"
    if n_features % 2:
        return (
            f'ccs reads contrast pairs side by side (a texts task\'s pair = "concat"); '
            f"{n_features} features are no two equal halves"
        )
    return None


def _no_problem(n_features: int, n_classes: int) -> str | None:
    """Any dense data of one label per row."""
    return None


def _ccs_bytes(n_features: int, n_classes: int, n_train: int) -> int:
    """Per probe of ``"ccs"``: its restarts' θ, gradients and AdamW moments, each side's mean
    and σ, the (n, restarts) margins, probabilities and losses of a step and their gradients,
    and the calibration (the union of the subsets' rows, gathered once, is shared)."""
    restarts = _CCS.restarts
    return _F64 * (
        4 * restarts * n_features + 2 * n_features + 8 * n_train * restarts
    ) + _calibration_bytes(n_train, n_classes)


def _ccs_flops(n_features: int, n_classes: int, n_train: int) -> float:
    """Each restart's epochs: both sides' products forward and backward, 4 · 2 n (d/2) each."""
    return 8.0 * _CCS.epochs * _CCS.restarts * n_train * n_features / 2 + _class_mean_flops(
        n_features, n_classes, n_train
    )


@dataclass(frozen=True)
class DirectionFamily:
    """One direction family, declared once in :data:`DIRECTION_FAMILIES`.

    Attributes:
        name: its name (``Direction(name)``, ``directions = [name]`` in experiment files).
        help: one line for the experiment-file reference and error messages.
        fit: the batched fit: (rows, pool labels, subsets, K) → :class:`DirectionFits`, every
            probe of a chunk at once.
        fit_bytes: (d, K, n_train) → the bytes one probe's fit holds at its peak (the
            engine's memory estimate, :func:`~probemeter.training.memory.estimate_memory`).
        fit_flops: (d, K, n_train) → one probe's arithmetic (how the engine plans it).
        seeded: whether its fit draws from each probe's seed (then it takes ``keys=``, one
            tuple of integers per probe, as the engine's trained probes do).
        problem: (d, K) → why the family cannot fit such data, or None (the engine asks
            before any work).
        reads_pairs: whether it reads contrast pairs side by side (an experiment file's
            task must lay its rows out so: a texts task's ``pair = "concat"``).
        protocol: how its probes train where they are not closed-form (CCS's
            :class:`~probemeter.training.config.CCSTraining`), recorded in results; None for a
            closed form.
    """

    name: str
    help: str
    fit: Callable[..., DirectionFits]
    fit_bytes: Callable[[int, int, int], int]
    fit_flops: Callable[[int, int, int], float]
    seeded: bool = False
    problem: Callable[[int, int], str | None] = _no_problem
    reads_pairs: bool = False
    protocol: Any = None

    def record(self) -> dict[str, Any]:
        """What results record as a direction's training (in place of the engine's settings,
        which do not apply): the family, what it fits, and its protocol where it trains."""
        how = "closed form" if self.protocol is None else self.protocol.to_dict()
        return {"family": self.name, "fit": self.help, "training": how}


#: the direction families by name: each fits linear probes in closed form (module docstring)
DIRECTION_FAMILIES: dict[str, DirectionFamily] = {
    family.name: family
    for family in (
        DirectionFamily(
            "diff-means",
            "difference in means: logits a·(μ_kᵀx − ½‖μ_k‖²) + ln π_k, one temperature a "
            "fitted on the subset (Wu et al. 2025; Marks & Tegmark 2023)",
            fit_diff_means,
            _class_mean_bytes,
            _class_mean_flops,
        ),
        DirectionFamily(
            "lda",
            "Fisher's linear discriminant: the difference in means whitened by the pooled "
            "within-class covariance, Ledoit–Wolf shrunk, one temperature fitted on the subset",
            fit_lda,
            _lda_bytes,
            _lda_flops,
        ),
        DirectionFamily(
            "ccs",
            "contrast-consistent search on contrast pairs side by side (a texts task's pair = "
            '"concat"): unsupervised, its sign fixed on the subset\'s labels, one temperature '
            "fitted there (Burns et al. 2023)",
            fit_ccs_directions,
            _ccs_bytes,
            _ccs_flops,
            seeded=True,
            problem=_ccs_problem,
            reads_pairs=True,
            protocol=_CCS,
        ),
    )
}


def families_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a list of direction families (an experiment file's
    ``directions``): a list of distinct declared names; None when it is one."""
    names = list(DIRECTION_FAMILIES)
    if (
        not isinstance(value, (list, tuple))
        or any(item not in names for item in value)
        or len(set(value)) != len(value)
    ):
        return f"must be a list of distinct direction families among {names}; got {value!r}"
    return None


def direction_family(name: object, what: str = "family") -> DirectionFamily:
    """The declared family ``name``; a ValueError naming ``what`` and the families otherwise."""
    if not isinstance(name, str) or name not in DIRECTION_FAMILIES:
        raise ValueError(
            f"{what} must be one of {', '.join(map(repr, DIRECTION_FAMILIES))}; got {name!r}"
        )
    return DIRECTION_FAMILIES[name]
