"""The batched trainer of structural probes: many linear maps B at once, stacked by rank.

Hewitt & Manning (2019), §2. A probe is a matrix B ∈ R^{d×r} (rank r, the complexity axis of
the family). The distance probe predicts d_B(h_i, h_j) = ‖Bᵀ(h_i − h_j)‖² and the depth probe
‖Bᵀh_i‖²; each is trained by Adam on the L1 loss of the paper, normalised per sentence s of
|s| words by the number of its pairs or words::

    distance:  (1/|s|²) Σ_{i,j} | d_T(w_i, w_j) − ‖Bᵀ(h_i − h_j)‖² |
    depth:     (1/|s|)  Σ_i     | ‖w_i‖ − ‖Bᵀh_i‖² |

averaged over the sentences of a minibatch. Each probe trains on its own sentences (a
:class:`ProbeSpec`: rank, seed, training sentences) for a fixed number of epochs over its own
shuffled order. Probes of one rank are one stacked tensor (P, d, r): at every step, the probes
that still have steps left gather their own minibatch, one batched matmul serves them all, and a
stacked Adam (the update of ``torch.optim.Adam``, elementwise, with a step count per probe)
updates only them. A probe's initial B and minibatch order depend only on (random_state, seed,
rank, number of training sentences), never on the other probes of the call.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from probemeter._device import single_threaded
from probemeter._validation import check_scalar, one_of
from probemeter.probes.stacked_mlp import stacked_affine
from probemeter.structural.trees import TreeData
from probemeter.training.config import StructuralTraining, config_or_default

__all__ = [
    "TARGETS",
    "ProbeSpec",
    "StructuralTraining",
    "check_features",
    "fit_structural_probes",
    "initial_projection",
    "minibatches",
    "predict",
    "sentence_loss",
]

TARGETS = ("distance", "depth")
#: the range of Hewitt & Manning's uniform initialisation of B
INIT_RANGE = 0.05


@dataclass(frozen=True)
class ProbeSpec:
    """One probe of a family: its rank r, its seed and the sentences it trains on."""

    rank: int
    seed: int
    sentences: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        check_scalar(self.rank, "rank", int, min_val=1)
        check_scalar(self.seed, "seed", int, min_val=0)
        index = np.asarray(self.sentences, dtype=np.int64).reshape(-1)
        if index.size == 0:
            raise ValueError("sentences is empty; a probe needs training sentences")
        object.__setattr__(self, "sentences", index)

    @property
    def n(self) -> int:
        return int(self.sentences.size)


def _stream(spec: ProbeSpec, random_state: int, purpose: int) -> np.random.Generator:
    """The random stream of one probe for one purpose (0: weights, 1: minibatch order)."""
    key = [random_state, spec.seed, spec.rank, spec.n, purpose]
    return np.random.default_rng(np.random.SeedSequence(key))


def initial_projection(spec: ProbeSpec, dimension: int, random_state: int) -> np.ndarray:
    """(d, r) float32: B's initial value, uniform in ±0.05 as in Hewitt & Manning's code."""
    rng = _stream(spec, random_state, 0)
    return rng.uniform(-INIT_RANGE, INIT_RANGE, (dimension, spec.rank)).astype(np.float32)


def minibatches(spec: ProbeSpec, config: StructuralTraining) -> list[np.ndarray]:
    """The probe's minibatches of sentence indices, epoch after epoch: each epoch a fresh
    shuffle of its own sentences, cut into ``batch_size`` pieces (the last may be smaller)."""
    rng = _stream(spec, config.random_state, 1)
    batches = []
    for _ in range(config.epochs):
        order = spec.sentences[rng.permutation(spec.n)]
        batches += [order[i : i + config.batch_size] for i in range(0, spec.n, config.batch_size)]
    return batches


def predict(projected: torch.Tensor, target: str) -> torch.Tensor:
    """The probe's predictions from the projected words U = HB, (..., L, r): squared distances
    ‖u_i − u_j‖² = ‖u_i‖² + ‖u_j‖² − 2 u_i·u_j as (..., L, L) (the Gram form: no (L, L, r)
    tensor of differences), or squared norms ‖u_i‖² as (..., L)."""
    norms = (projected * projected).sum(-1)
    if target == "depth":
        return norms
    gram = projected @ projected.transpose(-1, -2)
    return norms.unsqueeze(-1) + norms.unsqueeze(-2) - 2 * gram


def sentence_loss(
    predicted: torch.Tensor, gold: torch.Tensor, lengths: torch.Tensor, target: str
) -> torch.Tensor:
    """Per sentence, the paper's normalised L1 loss (module docstring); ``predicted`` and
    ``gold`` (..., L, L) or (..., L) with entries beyond a sentence's length ignored;
    ``lengths`` (...,) with 0 for padding sentences (loss 0)."""
    positions = torch.arange(gold.shape[-1], device=gold.device)
    inside = positions < lengths.unsqueeze(-1)
    if target == "distance":
        inside = inside.unsqueeze(-1) & inside.unsqueeze(-2)
        errors = ((predicted - gold).abs() * inside).sum((-1, -2))
        return errors / lengths.clamp(min=1).to(errors.dtype) ** 2
    errors = ((predicted - gold).abs() * inside).sum(-1)
    return errors / lengths.clamp(min=1).to(errors.dtype)


@dataclass
class _Corpus:
    """Padded features and targets of all sentences, as tensors."""

    features: torch.Tensor  # (S, L, d)
    gold: torch.Tensor  # (S, L, L) or (S, L)
    lengths: torch.Tensor  # (S,)

    @classmethod
    def build(cls, features: np.ndarray, trees: TreeData, target: str) -> _Corpus:
        longest = int(trees.lengths.max())
        padded = np.zeros((trees.n_sentences, longest, features.shape[1]), dtype=np.float32)
        for s, (start, stop) in enumerate(zip(trees.offsets[:-1], trees.offsets[1:])):
            padded[s, : stop - start] = features[start:stop]
        return cls(
            torch.from_numpy(padded),
            torch.from_numpy(trees.padded(target)),
            torch.from_numpy(trees.lengths.copy()),
        )

    def batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Features, gold targets and lengths of sentences ``index`` (P, b) (−1 = padding),
        trimmed to their longest sentence."""
        real = index >= 0
        safe = index.clamp(min=0)
        lengths = torch.where(real, self.lengths[safe], 0)
        longest = max(int(lengths.max()), 1)
        features = self.features[safe, :longest]
        gold = self.gold[safe, :longest, :longest] if self.gold.ndim == 3 else self.gold[safe]
        if self.gold.ndim == 2:
            gold = gold[..., :longest]
        return features, gold, lengths


def check_features(features: object, trees: TreeData) -> np.ndarray:
    """Per-word features as a (n_words, d) float32 array; a ValueError otherwise."""
    array = np.asarray(features, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != trees.n_words:
        raise ValueError(
            f"features must be (n_words={trees.n_words}, d), one row per word of the trees; "
            f"got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        raise ValueError("features holds NaN or infinite values")
    return array


def fit_structural_probes(
    features: object,
    trees: TreeData,
    target: str,
    specs: Sequence[ProbeSpec],
    config: StructuralTraining | None = None,
) -> list[np.ndarray]:
    """Train every probe of ``specs`` on its own sentences; return each probe's (d, r) B.

    Torch runs on one thread here: the matmuls are small, and intra-op threads only slowed
    them on a busy machine.

    Args:
        features: (n_words, d) per-word features, sentence after sentence as in ``trees``.
        trees: the sentences' trees (:class:`~probemeter.structural.trees.TreeData`).
        target: ``"distance"`` or ``"depth"``.
        specs: the probes (rank, seed, training sentence indices).
        config: the training protocol (default :class:`StructuralTraining`).

    Raises:
        ValueError: features of the wrong shape, a bad target, no probes, or a training
            sentence index outside the trees.
    """
    one_of(*TARGETS)(target, "target")
    config = config_or_default(config, StructuralTraining())
    array = check_features(features, trees)
    if not specs:
        raise ValueError("specs is empty; give at least one probe")
    for number, spec in enumerate(specs):
        if spec.sentences.min() < 0 or spec.sentences.max() >= trees.n_sentences:
            raise ValueError(
                f"specs[{number}] trains on a sentence outside 0..{trees.n_sentences - 1}"
            )
    corpus = _Corpus.build(array, trees, target)
    trained: list[np.ndarray] = [np.empty(0)] * len(specs)
    with single_threaded(True):
        for rank in sorted({spec.rank for spec in specs}):
            members = [i for i, spec in enumerate(specs) if spec.rank == rank]
            stack = _train_stack(corpus, target, [specs[i] for i in members], config)
            for i, projection in zip(members, stack):
                trained[i] = projection
    return trained


def _train_stack(
    corpus: _Corpus, target: str, specs: list[ProbeSpec], config: StructuralTraining
) -> np.ndarray:
    """Train the probes of one rank as one (P, d, r) stack with a stacked Adam."""
    dimension = corpus.features.shape[-1]
    weights = torch.from_numpy(
        np.stack([initial_projection(s, dimension, config.random_state) for s in specs])
    )
    schedules = [minibatches(spec, config) for spec in specs]
    first, second = torch.zeros_like(weights), torch.zeros_like(weights)
    steps = torch.zeros(len(specs), dtype=torch.float64)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for step in range(max(len(schedule) for schedule in schedules)):
        active = [p for p, schedule in enumerate(schedules) if step < len(schedule)]
        width = max(len(schedules[p][step]) for p in active)
        index = torch.full((len(active), width), -1, dtype=torch.int64)
        for row, p in enumerate(active):
            batch = schedules[p][step]
            index[row, : len(batch)] = torch.from_numpy(batch)
        features, gold, lengths = corpus.batch(index)
        rows = torch.tensor(active)
        projection = weights[rows].requires_grad_()
        size = features.shape
        # a rank below 16 is a narrow product, computed transposed on the CPU
        projected = stacked_affine(None, features.reshape(size[0], -1, size[-1]), projection)
        projected = projected.reshape(*size[:-1], projection.shape[-1])
        losses = sentence_loss(predict(projected, target), gold, lengths, target)
        counts = (index >= 0).sum(1).to(losses.dtype)
        (losses.sum(1) / counts).sum().backward()
        gradient = projection.grad
        # torch.optim.Adam's update, per probe with its own step count
        steps[rows] += 1
        m = first[rows].mul_(beta1).add_(gradient, alpha=1 - beta1)
        v = second[rows].mul_(beta2).addcmul_(gradient, gradient, value=1 - beta2)
        first[rows], second[rows] = m, v
        t = steps[rows]
        step_size = (config.lr / (1 - beta1**t)).to(weights.dtype).view(-1, 1, 1)
        correction = torch.sqrt(1 - beta2**t).to(weights.dtype).view(-1, 1, 1)
        weights[rows] = weights[rows] - step_size * m / (v.sqrt() / correction + eps)
    return weights.numpy()
