"""Linear probes with a parametric complexity: nuclear-norm penalised and rank constrained.

Pimentel et al. (2020), §4.1. A linear probe ``p(t | h) = softmax(W h̃)`` with the bias as an
extra column, ``h̃ = [h; 1]`` and ``W ∈ R^{K×(d+1)}`` (footnote 4), has two complexities:

* the **nuclear norm** ``‖W‖* = Σ_i σ_i(W)`` (eq. 2), lowered by training on eq. (3),
  ``CE + λ·‖W‖*``, for λ swept log-uniformly over [2⁻¹⁰, 8] plus λ = 0 (footnote 8);
* the **rank**, bounded by ``r`` through the factorisation ``W = W_lᵀ W_r`` with
  ``W_l ∈ R^{r×K}``, ``W_r ∈ R^{r×(d+1)}``; its complexity is r, for r = 1 … min(K, d).

All λ (or all ranks) of one representation train at once: parameters are stacked on a leading
probe axis, every probe sees the same minibatches, and each carries its own penalty weight (or
rank mask), so there is no Python loop over probes. The trainer uses autograd
(``torch.linalg.svdvals`` is batched and differentiable: its gradient is the subgradient
``U Vᵀ`` of the nuclear norm).

Two details follow the authors' implementation (``rycolab/pareto-probing``), since the paper
leaves them open: the cross-entropy in eq. (3) is the *mean* over a minibatch *in bits*
(so λ weighs ``‖W‖*`` against bits per token), and the nuclear-norm probe L2-normalises each
input, ``h ← h / ‖h‖``. ``learned_input=m`` adds a learned, unpenalised input map ``E ∈
R^{d×m}`` before the probe: with one-hot input it is the learned word embedding of the one-hot
baseline (§6: "one-hot ... are learned with the other network parameters"), whose parameters
are not part of the probe's complexity. ``span`` (edge-probing span rows) pools each span with
a learned self-attention first (:mod:`probemeter.pareto.span_pooling`): W then maps the pooled
spans, its complexity measured as for fixed poolings, the attention vectors unpenalised; the
nuclear-norm probe normalises the pooled spans side by side.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from probemeter._device import resolve_device, single_threaded
from probemeter._validation import check_scalar, is_integer
from probemeter.pareto.defaults import LINEAR_TRAINING, PARETO_PENALTIES
from probemeter.pareto.span_pooling import attention_pool
from probemeter.probes.mlp import MLP
from probemeter.probes.stacked_mlp import stacked_affine
from probemeter.training.config import TrainingConfig, config_or_default

__all__ = [
    "LinearComplexityResult",
    "fit_nuclear_norm_probes",
    "fit_rank_probes",
    "matrix_rank",
    "nuclear_norm",
    "nuclear_norm_penalties",
    "nuclear_norm_subgradient",
]

#: singular values at or below this count as zero in :func:`matrix_rank` (the authors' 1e-3)
RANK_TOLERANCE = 1e-3
_LN2 = math.log(2.0)
#: a training step of less arithmetic than this (its three products over the minibatch) runs on
#: one thread: intra-op threads gain little on steps of a few milliseconds, and on a busy
#: machine their synchronisation made them many times slower (10 rank probes of 400 digits,
#: 1000 steps: 0.7-2.1 s on one thread, 10-15 s on two, 2 cores shared with 4 busy processes)
_ONE_THREAD_STEP_FLOPS = 1e9


def nuclear_norm(weights: torch.Tensor | np.ndarray) -> np.ndarray:
    """‖W‖* = Σ_i σ_i(W) (eq. 2) of each matrix of a (P, m, n) stack (or of one (m, n) matrix)."""
    tensor = torch.as_tensor(weights, dtype=torch.float32)
    return torch.linalg.svdvals(tensor).sum(dim=-1).numpy()


def matrix_rank(weights: torch.Tensor | np.ndarray, tol: float = RANK_TOLERANCE) -> np.ndarray:
    """Number of singular values above ``tol`` of each matrix of a (P, m, n) stack."""
    tensor = torch.as_tensor(weights, dtype=torch.float32)
    return (torch.linalg.svdvals(tensor) > tol).sum(dim=-1).numpy()


def nuclear_norm_subgradient(weights: torch.Tensor, tol: float = 1e-6) -> torch.Tensor:
    """A subgradient ``U Vᵀ`` of ‖W‖* at each matrix of a (P, m, n) stack (thin SVD, directions
    of singular values ≤ ``tol`` dropped, i.e. the minimum-norm subgradient's choice of 0 there).

    Computed from the eigen-decomposition of the small Gram matrix ``WᵀW = V S² Vᵀ`` (or
    ``WWᵀ`` when m < n): ``U Vᵀ = W V S⁻¹ Vᵀ``, about 3× faster than a batched SVD on CPU.
    """
    tall = weights.shape[-2] >= weights.shape[-1]
    matrix = weights if tall else weights.transpose(-1, -2)
    eigenvalues, vectors = torch.linalg.eigh(matrix.transpose(-1, -2) @ matrix)
    singular = eigenvalues.clamp_min(0).sqrt()
    inverse = torch.where(singular > tol, 1.0 / singular.clamp_min(tol), torch.zeros_like(singular))
    result = matrix @ (vectors * inverse.unsqueeze(-2)) @ vectors.transpose(-1, -2)
    return result if tall else result.transpose(-1, -2)


def nuclear_norm_penalties(
    n_probes: int = PARETO_PENALTIES, low: float = 2.0**-10, high: float = 8.0
) -> np.ndarray:
    """λ = 0 followed by ``n_probes - 1`` values evenly spaced in log between ``low`` and
    ``high`` (Pimentel et al., footnote 8: "log-uniform intervals from 2⁻¹⁰ and 8.0 while also
    including ... λ = 0"); ``n_probes`` by default the ``pareto`` method's ``penalties``
    (:data:`~probemeter.pareto.defaults.PARETO_PENALTIES`, 20).

    Raises:
        ValueError: ``n_probes`` < 2 or not 0 < low < high.
    """
    check_scalar(n_probes, "n_probes", int, min_val=2)
    check_scalar(low, "low", float, min_val=0, include_boundaries="neither")
    check_scalar(high, "high", float, min_val=low, include_boundaries="neither")
    return np.concatenate([[0.0], np.geomspace(low, high, int(n_probes) - 1)])


@dataclass(frozen=True)
class LinearComplexityResult:
    """One probe per row: its setting (λ or maximum rank), complexity and accuracies.

    Attributes:
        kind: ``"nuclear_norm"`` or ``"rank"``.
        setting: per probe, λ (nuclear norm) or the maximum rank r.
        complexity: per probe, ‖W‖* of the trained W (with its bias column) or r.
        accuracy: accuracy on the evaluation (test) set.
        train_accuracy: accuracy on the training pool.
        loss: mean cross-entropy on the evaluation set, in bits.
        nuclear_norm: ‖W‖* of every trained probe (also for rank probes).
        rank: number of singular values of W above 1e-3.
        metadata: training settings, for the record.
        correct: (probes, n_eval) bool: which evaluation examples each probe classified
            correctly (for McNemar's test against another representation).
    """

    kind: str
    setting: np.ndarray
    complexity: np.ndarray
    accuracy: np.ndarray
    train_accuracy: np.ndarray
    loss: np.ndarray
    nuclear_norm: np.ndarray
    rank: np.ndarray
    metadata: dict = field(default_factory=dict)
    correct: np.ndarray | None = field(default=None, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """A tidy table, one row per probe."""
        return pd.DataFrame(
            {
                "kind": self.kind,
                "setting": self.setting,
                "complexity": self.complexity,
                "accuracy": self.accuracy,
                "train_accuracy": self.train_accuracy,
                "loss_bits": self.loss,
                "nuclear_norm": self.nuclear_norm,
                "rank": self.rank,
            }
        )


def fit_nuclear_norm_probes(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    n_classes: int,
    penalties: Sequence[float] | np.ndarray | None = None,
    *,
    learned_input: int | None = None,
    span: Sequence[int] | None = None,
    config: TrainingConfig | None = None,
    random_state: int = 0,
    device: str | torch.device = "cpu",
) -> LinearComplexityResult:
    """Train one linear probe per λ on eq. (3), ``mean CE (bits) + λ·‖[W b]‖*``, all at once.

    Args:
        X_train, y_train: training pool, (n, d) features and (n,) class indices.
        X_eval, y_eval: evaluation set.
        n_classes: K.
        penalties: the λ per probe (default :func:`nuclear_norm_penalties`, 20 probes, the
            ``pareto`` method's).
        learned_input: width m of a learned, unpenalised input map (one-hot baseline); None
            for fixed representations.
        span: for edge-probing span rows, each span's padded token count (``ProbeData.
            span_tokens``): the probe pools each span with a learned self-attention first
            (:mod:`probemeter.pareto.span_pooling`), and ‖W‖* is that of its map of the
            pooled spans; None for rows read as they are.
        config: Adam updates, minibatch size and learning rate (fixed steps in f32); default
            :data:`~probemeter.pareto.defaults.LINEAR_TRAINING`, the ``pareto`` method's (1000
            updates at lr 1e-2 on minibatches of 256).
        random_state: seeds the shared minibatch order; probe initial weights are keyed by
            (random_state, λ).
        device: torch device.

    Raises:
        ValueError: empty or negative penalties, bad shapes or labels; ``span`` with
            ``learned_input``, or rows that do not hold the spans; a ``config`` with early
            stopping or bf16.
    """
    lambdas = np.asarray(penalties if penalties is not None else nuclear_norm_penalties(), float)
    if lambdas.ndim != 1 or lambdas.size == 0:
        raise ValueError("penalties is empty: give at least one λ")
    if not np.all(np.isfinite(lambdas)) or lambdas.min() < 0:
        raise ValueError(f"penalties must be finite and >= 0; got {lambdas.tolist()}")
    keys = [
        [random_state, *np.array([value], np.float64).view(np.uint32).tolist()] for value in lambdas
    ]
    return _fit(
        "nuclear_norm",
        lambdas,
        keys,
        None,
        (X_train, y_train, X_eval, y_eval, n_classes),
        (learned_input, None if span is None else tuple(span)),
        config,
        random_state,
        device,
    )


def fit_rank_probes(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    n_classes: int,
    ranks: Sequence[int] | np.ndarray | None = None,
    *,
    learned_input: int | None = None,
    span: Sequence[int] | None = None,
    config: TrainingConfig | None = None,
    random_state: int = 0,
    device: str | torch.device = "cpu",
) -> LinearComplexityResult:
    """Train one rank-constrained linear probe ``W = W_lᵀ W_r`` per maximum rank r, all at once.

    The bias sits inside the factorisation (``W_r`` acts on ``[h; 1]``), so the whole
    ``K × (d+1)`` map has rank ≤ r. Probes of different r share one stack of width
    max(r); columns beyond a probe's r are masked to zero.

    The other arguments are as in :func:`fit_nuclear_norm_probes` (``d`` is
    ``learned_input`` when given, the pooled spans' S · d with ``span``).

    Args:
        ranks: maximum ranks, integers in 1 … min(K, d) (default: all of them).

    Raises:
        ValueError: an empty rank list, a rank < 1 or above min(K, d).
    """
    d = learned_input if learned_input is not None else np.asarray(X_train).shape[-1]
    if span is not None:
        d = _pooled_width(np.asarray(X_train).shape[-1], span)
    limit = min(int(n_classes), int(d))
    values = np.arange(1, limit + 1) if ranks is None else np.asarray(ranks)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("ranks is empty: give at least one maximum rank")
    if not all(is_integer(r) for r in values.tolist()) or values.min() < 1 or values.max() > limit:
        raise ValueError(f"ranks must be integers in 1..min(K, d) = 1..{limit}; got {values}")
    values = values.astype(np.int64)
    keys = [[random_state, int(r), 0x4A4B] for r in values]
    return _fit(
        "rank",
        values,
        keys,
        values,
        (X_train, y_train, X_eval, y_eval, n_classes),
        (learned_input, None if span is None else tuple(span)),
        config,
        random_state,
        device,
    )


def _pooled_width(n_features: int, span: Sequence[int]) -> int:
    """S · d, the width of the pooled spans of rows of ``n_features`` (a ValueError if the
    rows do not hold the spans)."""
    return MLP(span=tuple(span), projection=1).token_width(n_features) * len(span)


class _StackedLinear(torch.nn.Module):
    """P linear probes on a leading axis: optional learned input map or span attention
    (``stage``: ``(learned_input, span)``), then either a full ``(d+1) × K`` matrix or a
    rank-masked factorisation."""

    def __init__(
        self,
        keys: list[list[int]],
        n_features: int,
        n_classes: int,
        stage: tuple[int | None, tuple[int, ...] | None],
        ranks: np.ndarray | None,
        normalize: bool,
    ) -> None:
        super().__init__()
        rngs = [np.random.default_rng(key) for key in keys]
        learned_input, self.span = stage
        width = n_features if learned_input is None else learned_input
        self.normalize = normalize
        self.embed = self.scores = None
        if learned_input is not None:
            self.embed = _param([rng.normal(0, 1, (n_features, width)) for rng in rngs])
        if self.span is not None:  # attention vectors at 0: mean pooling to start
            width = _pooled_width(n_features, self.span)
            self.token_width = width // len(self.span)
            shape = (len(rngs), len(self.span), self.token_width)
            self.scores = torch.nn.Parameter(torch.zeros(shape))
        if ranks is None:
            bound = 1 / math.sqrt(width)
            self.weight = _param(
                [rng.uniform(-bound, bound, (width + 1, n_classes)) for rng in rngs]
            )
            self.mask = None
        else:
            top = int(ranks.max())
            self.right = _param(
                [rng.uniform(-1, 1, (width + 1, top)) / math.sqrt(width) for rng in rngs]
            )
            self.left = _param(
                [rng.uniform(-1, 1, (top, n_classes)) / math.sqrt(top) for rng in rngs]
            )
            mask = (np.arange(top)[None, :] < ranks[:, None]).astype(np.float32)
            self.register_buffer("mask", torch.from_numpy(mask)[:, None, :])

    def matrix(self) -> torch.Tensor:
        """(P, d+1, K): the probe's full map, bias row last."""
        if self.mask is None:
            return self.weight
        return (self.right * self.mask) @ self.left

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (P, B, K) of a shared minibatch ``x`` (B, d)."""
        if self.scores is not None:
            h = attention_pool(x, self.scores, self.span, self.token_width)
        else:
            h = x.unsqueeze(0) if self.embed is None else x @ self.embed
        if self.normalize:
            h = h / (h.norm(dim=-1, keepdim=True) + 1e-5)
        matrix = self.matrix()
        h = h.expand(matrix.shape[0], -1, -1)
        return stacked_affine(matrix[:, -1:, :], h, matrix[:, :-1, :])


def _param(arrays: list[np.ndarray]) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.from_numpy(np.stack(arrays).astype(np.float32)))


def _fit(
    kind: str,
    settings: np.ndarray,
    keys: list[list[int]],
    ranks: np.ndarray | None,
    arrays: tuple,
    stage: tuple[int | None, tuple[int, ...] | None],
    config: TrainingConfig | None,
    random_state: int,
    device: str | torch.device,
) -> LinearComplexityResult:
    X_train, y_train, X_eval, y_eval, n_classes = arrays
    learned_input, span = stage
    config = config_or_default(config, LINEAR_TRAINING)
    if config.early_stopping or config.precision != "f32":
        raise ValueError(
            "config: the nuclear-norm and rank probes train a fixed number of steps in f32; "
            f"got early_stopping={config.early_stopping}, precision={config.precision!r}"
        )
    steps = config.steps
    if learned_input is not None:
        check_scalar(learned_input, "learned_input", int, min_val=1)
        if span is not None:
            raise ValueError("learned_input and span exclude each other: give one input stage")
    if span is not None:
        _pooled_width(np.asarray(X_train).shape[-1], span)
    X_train, y_train = _check_xy("X_train", X_train, "y_train", y_train, n_classes)
    X_eval, y_eval = _check_xy("X_eval", X_eval, "y_eval", y_eval, n_classes)
    if X_eval.shape[1] != X_train.shape[1]:
        raise ValueError(
            f"X_eval has {X_eval.shape[1]} features but X_train has {X_train.shape[1]}"
        )
    torch_device = resolve_device(device)
    model = _StackedLinear(
        keys, X_train.shape[1], int(n_classes), stage, ranks, normalize=ranks is None
    ).to(torch_device)
    penalty = torch.as_tensor(
        settings if kind == "nuclear_norm" else np.zeros(len(settings)),
        dtype=torch.float32,
        device=torch_device,
    )
    pool_x = torch.as_tensor(X_train, device=torch_device)
    pool_y = torch.as_tensor(y_train, device=torch_device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    order = _minibatches(len(y_train), config.batch_size, steps, random_state)
    use_penalty = bool((penalty > 0).any())
    rows = min(len(y_train), config.batch_size)
    step_flops = 6 * len(settings) * rows * (X_train.shape[1] + 1) * int(n_classes)
    with single_threaded(torch_device.type == "cpu" and step_flops < _ONE_THREAD_STEP_FLOPS):
        for batch in order:
            idx = torch.from_numpy(batch).to(torch_device)
            logits = model(pool_x[idx])
            labels = pool_y[idx].expand(logits.shape[0], -1)
            # per-probe mean CE in bits, summed over probes: each probe's gradient is its own
            ce = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), labels, reduction="none"
            ).mean(dim=1)
            loss = ce.sum() / _LN2
            if use_penalty:
                matrix = model.matrix()
                subgradient = nuclear_norm_subgradient(matrix.detach())
                # d/dW of λ·⟨W, G⟩ with G fixed is λ·G, the subgradient of λ‖W‖*
                loss = loss + (penalty[:, None, None] * matrix * subgradient).sum()
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        matrix = model.matrix().cpu()
        norms = nuclear_norm(matrix)
        measured_rank = matrix_rank(matrix)
        test_correct, test_loss = _evaluate(model, X_eval, y_eval, torch_device)
        train_correct, _ = _evaluate(model, X_train, y_train, torch_device)
    complexity = norms if kind == "nuclear_norm" else settings.astype(float)
    return LinearComplexityResult(
        kind=kind,
        setting=np.asarray(settings),
        complexity=np.asarray(complexity, dtype=float),
        accuracy=test_correct.mean(axis=1),
        train_accuracy=train_correct.mean(axis=1),
        loss=test_loss,
        nuclear_norm=norms.astype(float),
        rank=measured_rank.astype(np.int64),
        metadata={
            "steps": int(steps),
            "batch_size": int(config.batch_size),
            "lr": float(config.lr),
            "optimizer": "adam",
            "stopping": f"fixed {steps} steps",
            "random_state": int(random_state),
            "learned_input": learned_input,
            "span_attention": None if span is None else list(span),
            "input_normalisation": "l2" if ranks is None else "none",
            "loss": "mean cross-entropy in bits" + (" + λ‖W‖*" if kind == "nuclear_norm" else ""),
            "torch": torch.__version__,
            "numpy": np.__version__,
        },
        correct=test_correct,
    )


def _check_xy(
    x_name: str, X: object, y_name: str, y: object, n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    features = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    labels = np.asarray(y)
    if features.ndim != 2 or features.shape[0] == 0:
        raise ValueError(f"{x_name} must be a non-empty 2-D array; got shape {features.shape}")
    if labels.shape != (features.shape[0],):
        raise ValueError(f"{y_name} must have shape ({features.shape[0]},); got {labels.shape}")
    labels = labels.astype(np.int64)
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"{y_name} holds labels outside [0, n_classes={n_classes})")
    return features, labels


def _minibatches(n: int, batch_size: int, steps: int, random_state: int) -> np.ndarray:
    """(steps, b) pool indices, b = min(n, batch_size): epochs of fresh permutations, sampled
    without replacement: a probe sees exactly its own n examples."""
    batch = min(n, batch_size)
    rng = np.random.default_rng([random_state, 0xBA7C])
    epochs = -(-steps * batch // n)
    flat = np.concatenate([rng.permutation(n) for _ in range(epochs)])
    return flat[: steps * batch].reshape(steps, batch)


def _evaluate(
    model: _StackedLinear, X: np.ndarray, y: np.ndarray, device: torch.device, block: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Per probe: which examples of (X, y) it classifies correctly, (probes, n) bool, and its
    mean cross-entropy in bits."""
    correct = []
    total_ce = 0
    for start in range(0, len(y), block):
        x = torch.as_tensor(X[start : start + block], device=device)
        labels = torch.as_tensor(y[start : start + block], device=device)
        logits = model(x)
        expanded = labels.expand(logits.shape[0], -1)
        total_ce = total_ce + torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), expanded, reduction="none"
        ).double().sum(dim=1)
        correct.append((logits.argmax(dim=-1) == labels).cpu())
    return torch.cat(correct, dim=1).numpy(), (total_ce / len(y) / _LN2).cpu().numpy()
