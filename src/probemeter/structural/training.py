"""The batched trainer of structural probes: many linear maps B at once, stacked by rank.

Hewitt & Manning (2019), §2. A probe is a matrix B ∈ R^{d×r} (rank r, the complexity axis of
the family). The distance probe predicts d_B(h_i, h_j) = ‖Bᵀ(h_i − h_j)‖² and the depth probe
‖Bᵀh_i‖²; each is trained by Adam on the L1 loss of the paper, normalised per sentence s of
|s| words by the number of its pairs or words::

    distance:  (1/|s|²) Σ_{i,j} | d_T(w_i, w_j) − ‖Bᵀ(h_i − h_j)‖² |
    depth:     (1/|s|)  Σ_i     | ‖w_i‖ − ‖Bᵀh_i‖² |

averaged over the sentences of a minibatch. Each probe trains on its own sentences (a
:class:`ProbeSpec`: rank, seed, training sentences) for a fixed number of epochs over its own
shuffled order. A probe's initial B and minibatch order depend only on (random_state, seed,
rank, number of training sentences), never on the other probes of the call, nor on its layer
or target: the probes of one spec on every layer and for both targets see the same sentences.
:func:`fit_structural_layers` therefore trains every (layer, target, spec) of one rank as one
stacked tensor (layers, specs, d, targets·r): at every step, the specs that still have steps
left gather their sentences' words once for all layers, packed (no padding row is
projected), one batched matmul projects them for every target, the minibatch's sentences
are cut into at most three buckets of similar length (:func:`length_buckets`: padding
every sentence to the longest of the minibatch would hold 7.5 times its pairs on EWT), each
bucket's projections padded into (sentences, longest, r) whose pairwise squared distances
are one Gram product (:func:`loss_gradient`: the loss's gradient in closed form), and Adam
(``torch.optim.Adam``'s fused kernel, elementwise) updates only them. The (chunk of layers,
rank) stacks are independent, so worker processes may share them (``n_jobs``).
:func:`fit_one_probe` is the plain one-probe loop they are tested and benchmarked against
(``benchmarks/structural_speed.py``; figures in ``benchmarks/README.md``).

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from joblib import Parallel, delayed

from probemeter._device import single_threaded
from probemeter._validation import check_scalar, one_of
from probemeter.probes.stacked_mlp import stacked_affine, transposed_layer
from probemeter.structural.trees import TreeData
from probemeter.training.config import StructuralTraining, config_or_default
from probemeter.training.engine import _SMALL_WORK_FLOPS
from probemeter.training.memory import memory_budget
from probemeter.training.workers import exit_with_parent, worker_count

__all__ = [
    "TARGETS",
    "ProbeSpec",
    "StructuralTraining",
    "check_features",
    "fit_one_probe",
    "fit_structural_layers",
    "fit_structural_probes",
    "initial_projection",
    "layers_per_chunk",
    "length_buckets",
    "loss_gradient",
    "loss_weights",
    "minibatches",
    "step_bytes",
]

TARGETS = ("distance", "depth")
#: the range of Hewitt & Manning's uniform initialisation of B
INIT_RANGE = 0.05
#: the fixed cost of one more bucket of sentences in a step, in padded pairs of words (about
#: the time of a dozen small kernel calls on a CPU: :func:`length_buckets`)
_BUCKET_PAIRS = 2048


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


def loss_weights(lengths: torch.Tensor, longest: int, target: str) -> torch.Tensor:
    """Each target's weight in its sentence's normalised L1 loss (module docstring): for
    sentences of ``lengths`` (...,) padded to ``longest`` words, (..., L, L) with 1/|s|² on
    the pairs i ≠ j of the sentence (a word's distance to itself is 0 by definition, whatever
    the rounding of the Gram form) or (..., L) with 1/|s| on its words; 0 beyond (a padding
    sentence, length 0, weighs nothing)."""
    positions = torch.arange(longest, device=lengths.device)
    inside = (positions < lengths.unsqueeze(-1)).to(torch.float32)
    scale = lengths.clamp(min=1).to(torch.float32).unsqueeze(-1)
    if target == "depth":
        return inside / scale
    pairs = inside.unsqueeze(-1) * (inside / (scale * scale)).unsqueeze(-2)
    return pairs.mul_(1 - torch.eye(longest, device=lengths.device))


def loss_gradient(
    projected: torch.Tensor, gold: torch.Tensor, weights: torch.Tensor, target: str
) -> torch.Tensor:
    """The gradient in U of Σ w·|D − d|, the weighted L1 loss of the projected words U = HB,
    (..., L, r) with zero rows beyond each sentence's length, against ``gold`` (..., L, L)
    distances or (..., L) depths, with ``weights`` of their shape (:func:`loss_weights`,
    times each sentence's weight in its minibatch's mean); in closed form: one product where
    autograd would pass through every (L, L) intermediate.

    Distance probe: the predictions D_ij = ‖u_i‖² + ‖u_j‖² − 2 u_i·u_j (the Gram form: no
    (L, L, r) tensor of differences), symmetric, as d and w are; with
    E_ij = w_ij·sign(D_ij − d_ij),

        ∂L/∂u_i = 4 (Σ_j E_ij) u_i − 4 (E U)_i.

    Depth probe: D_i = ‖u_i‖², ∂L/∂u_i = 2 w_i·sign(D_i − d_i)·u_i.
    """
    norms = (projected * projected).sum(-1)
    if target == "depth":
        signs = norms.sub_(gold).sign_().mul_(weights)
        return (2 * signs).unsqueeze(-1) * projected
    predicted = norms.unsqueeze(-1) + norms.unsqueeze(-2)
    shape = predicted.shape
    flat = projected.reshape(-1, *projected.shape[-2:])
    predicted = predicted.view(-1, *shape[-2:]).baddbmm_(flat, flat.transpose(1, 2), alpha=-2)
    signs = predicted.view(shape).sub_(gold).sign_().mul_(weights)
    gradient = projected * signs.sum(-1, keepdim=True)
    return gradient.sub_(signs @ projected).mul_(4)


@dataclass
class _Corpus:
    """Every layer's words as the caller holds them (one flat row per word, never copied
    whole) and the trained sentences' padded targets: a minibatch gathers its words by
    position, so no layer is stored padded to the longest sentence, and sentences no probe
    trains on (a run's development and test sentences) take no room."""

    layers: list[torch.Tensor]  # per layer (n_words, d), the caller's arrays
    gold: dict[str, torch.Tensor]  # per target (S, L, L) or (S, L), S trained sentences
    lengths: np.ndarray  # (n_sentences,)
    offsets: np.ndarray  # (n_sentences,): each sentence's first word
    places: np.ndarray  # (n_sentences,): each sentence's row of ``gold``, −1 if untrained
    #: the gathered features of a step, reused: a fresh block every step costs its page faults
    buffer: torch.Tensor = field(default_factory=lambda: torch.empty(0))

    @classmethod
    def build(
        cls,
        layers: Sequence[np.ndarray],
        trees: TreeData,
        gold: dict[str, np.ndarray],
        sentences: np.ndarray,
    ) -> _Corpus:
        """The corpus of ``layers`` over the (sorted, distinct) ``sentences`` the probes
        train on, whose padded targets are ``gold`` (:meth:`TreeData.padded`)."""
        places = np.full(trees.n_sentences, -1, dtype=np.int64)
        places[sentences] = np.arange(sentences.size)
        with warnings.catch_warnings():  # a worker's shared maps are read-only: only read
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            return cls(
                [torch.from_numpy(array) for array in layers],
                {target: torch.from_numpy(values) for target, values in gold.items()},
                trees.lengths,
                trees.offsets[:-1],
                places,
            )

    def batch(self, index: np.ndarray, targets: Sequence[str]) -> _Batch:
        """The minibatch of sentences ``index`` (S, b) (−1 = padding: no sentence): every
        layer's words of each row packed, the rows padded to the one with most words, and
        its sentences in buckets of similar length (:func:`length_buckets`), each with its
        gold values of ``targets``."""
        real = index >= 0
        safe = np.where(real, index, 0)
        lengths = np.where(real, self.lengths[safe], 0)  # (S, b)
        width = max(int(lengths.sum(1).max()), 1)
        # each sentence's first word among the packed words of all rows (row after row, each
        # row's sentences one after another, W = width places a row)
        first = (lengths.cumsum(1) - lengths + np.arange(index.shape[0])[:, None] * width).ravel()
        flat_lengths, starts = lengths.ravel(), self.offsets[safe].ravel()
        # every word of the batch: its sentence, its position there, its place among the rows
        sentence = np.repeat(np.arange(flat_lengths.size), flat_lengths)
        position = np.arange(sentence.size) - np.repeat(
            flat_lengths.cumsum() - flat_lengths, flat_lengths
        )
        words = np.zeros(index.shape[0] * width, dtype=np.int64)  # places past a row: word 0
        words[first[sentence] + position] = starts[sentence] + position
        words_t = torch.from_numpy(words)
        shape = (len(self.layers), words.size, self.layers[0].shape[1])
        if self.buffer.numel() < math.prod(shape):
            self.buffer = torch.empty(math.prod(shape))
        features = self.buffer[: math.prod(shape)].view(shape)
        for layer, values in enumerate(self.layers):
            torch.index_select(values, 0, words_t, out=features[layer])
        gold_rows = np.where(real, self.places[safe], 0).ravel()
        # each packed word's place among the buckets' slots laid end to end; a place past a
        # row's words takes the zero slot appended after them
        places = np.full(words.size, -1, dtype=np.int64)
        buckets, start = [], 0
        for members in length_buckets(flat_lengths):
            size = int(flat_lengths[members].max())
            inside = np.arange(size) < flat_lengths[members, None]  # (n, L)
            slots = first[members, None] + np.arange(size)
            places[slots[inside]] = start + np.flatnonzero(inside)
            start += inside.size
            rows_of_gold = torch.from_numpy(gold_rows[members])
            buckets.append(
                _Bucket(
                    # slots past a sentence's end read any word: their weights are 0
                    torch.from_numpy(np.where(inside, slots, 0).ravel()),
                    torch.from_numpy(flat_lengths[members]),
                    torch.from_numpy(members // index.shape[1]),
                    {
                        target: self.gold[target][rows_of_gold, :size, :size]
                        if target == "distance"
                        else self.gold[target][rows_of_gold, :size]
                        for target in targets
                    },
                )
            )
        places[places < 0] = start
        return _Batch(
            features.view(-1, index.shape[0], width, features.shape[-1]),
            buckets,
            torch.from_numpy(places),
        )


@dataclass
class _Bucket:
    """Sentences of a minibatch padded to the longest of them, with their targets."""

    slots: torch.Tensor  # (n·L,): each (sentence, word) slot's packed word
    lengths: torch.Tensor  # (n,)
    rows: torch.Tensor  # (n,): each sentence's row of the step (its spec)
    gold: dict[str, torch.Tensor]  # per target (n, L, L) or (n, L)


def length_buckets(lengths: np.ndarray) -> list[np.ndarray]:
    """The positions of the nonzero ``lengths`` in at most three buckets of consecutive
    lengths, the shortest first, cut where the padded pairs Σ_buckets n_j·L_j² are fewest
    (n_j sentences padded to the longest, L_j, of their bucket), each bucket counted as
    ``_BUCKET_PAIRS`` more pairs (its fixed cost): a minibatch's pairwise tensors then hold a
    few times its sentences' pairs Σ n², not |batch|·(max n)² (7.5 times Σ n² on EWT's
    minibatches of 2 × 20 sentences)."""
    order = np.argsort(lengths, kind="stable")
    order = order[lengths[order] > 0]
    n = order.size
    if n == 0:
        return []
    squares = lengths[order].astype(np.float64) ** 2
    # buckets [0, a), [a, c), [c, n), an empty one where a = 0 or a = c
    a, c = np.triu_indices(n + 1)
    first = np.where(a > 0, squares[a - 1] * a, 0.0)
    middle = np.where(c > a, squares[c - 1] * (c - a), 0.0)
    count = (a > 0).astype(int) + (c > a) + (c < n)
    cost = first + middle + np.where(c < n, squares[-1] * (n - c), 0.0) + _BUCKET_PAIRS * count
    best = int(np.argmin(cost))
    edges = sorted({0, int(a[best]), int(c[best]), n})
    return [order[begin:end] for begin, end in itertools.pairwise(edges)]


@dataclass
class _Batch:
    """A minibatch of every layer: packed words, its sentences in buckets of similar length,
    and where each packed word sits among the buckets."""

    features: torch.Tensor  # (n_layers, S, W, d): each row's words, then any words
    buckets: list[_Bucket]
    places: torch.Tensor  # (S·W,): each packed word's place among the buckets' slots

    def gradient(
        self, projected: torch.Tensor, targets: Sequence[str], rank: int, mean: torch.Tensor
    ) -> torch.Tensor:
        """∂L/∂U (n_layers, S, W, targets·r) of the packed projections ``projected`` of the
        same shape (target t in columns t·r…(t+1)·r): each bucket's sentences padded, the
        loss's gradient in closed form (:func:`loss_gradient`), each sentence weighted by
        its row's ``mean`` (S,), 1 / its minibatch's sentences; 0 at the places past a
        row's words."""
        n_layers, n_rows, _, k = projected.shape
        flat = projected.reshape(n_layers, -1, k)
        parts = []
        for bucket in self.buckets:
            size = bucket.slots.numel() // bucket.lengths.numel()
            padded = flat.index_select(1, bucket.slots).view(n_layers, -1, size, k)
            sentence_mean = mean[bucket.rows]
            gradients = [
                loss_gradient(
                    padded[..., t * rank : (t + 1) * rank],
                    bucket.gold[target],
                    _mean_weights(loss_weights(bucket.lengths, size, target), sentence_mean),
                    target,
                )
                for t, target in enumerate(targets)
            ]
            parts.append(torch.cat(gradients, -1).view(n_layers, -1, k))
        parts.append(projected.new_zeros(n_layers, 1, k))
        gradient = torch.cat(parts, 1).index_select(1, self.places)
        return gradient.view(n_layers, n_rows, -1, k)


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
    """Train every probe of ``specs`` on its own sentences; return each probe's (d, r) B: the
    one-layer, one-target case of :func:`fit_structural_layers`.

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
    [trained] = fit_structural_layers([features], trees, (target,), specs, config)
    return trained[target]


def fit_structural_layers(
    layers: Sequence[object],
    trees: TreeData,
    targets: Sequence[str],
    specs: Sequence[ProbeSpec],
    config: StructuralTraining | None = None,
    *,
    max_memory: float | None = None,
    n_jobs: int | None = 1,
) -> list[dict[str, list[np.ndarray]]]:
    """Train every (layer, target, spec) probe together; return, per layer, each target's
    (d, r) B of every spec, in the order of ``specs``.

    The probes of one rank are one stacked tensor (layers, specs, d, targets·r). A spec's
    probes of every layer and target see the same minibatches (its stream depends on the
    spec alone), so each step gathers the words of its sentences once for every layer,
    packed into (layers, specs, words, d), projects them for every target in one batched
    product, pads the projections into sentences and computes the loss's gradient in closed
    form (:func:`loss_gradient`), one Gram product per sentence batch; Hᵀ·∂L/∂U gives every
    probe's gradient, which the stacked Adam applies. Each probe's loss is its own, so its
    trained B is that of training it alone within float rounding (the plain one-probe loop,
    :func:`fit_one_probe`; the tests hold them to 1e-4 relative), and bit for bit that of
    :func:`fit_structural_probes` on its layer and target alone in the runs measured
    (``benchmarks/structural_speed.py``).

    Layers are trained together as far as the estimated memory of one step
    (:func:`layers_per_chunk`) fits ``max_memory`` GiB (default
    :func:`~probemeter.training.memory.memory_budget`'s for the CPU); beyond it, in chunks
    of consecutive layers. Torch runs on one thread here: the matmuls are small, and
    intra-op threads only slowed them on a busy machine.

    Args:
        layers: per layer, (n_words, d) per-word features, sentence after sentence as in
            ``trees`` (layers of different widths train in different chunks).
        trees: the sentences' trees (:class:`~probemeter.structural.trees.TreeData`).
        targets: distinct probe kinds, ``"distance"`` and/or ``"depth"``.
        specs: the probes (rank, seed, training sentence indices), each trained on every
            layer for every target.
        config: the training protocol (default :class:`StructuralTraining`).
        max_memory: GiB one chunk of layers may take (default: the CPU budget of one chunk
            of the stacked engine).
        n_jobs: worker processes (joblib's loky pool, as the stacked engine's: each
            single-threaded, ``-1`` one per usable CPU, ``None`` or ``1`` none) sharing the
            (chunk of layers, rank) stacks, the costliest first (the layers are not cut
            further for the workers: each stack's steps index its minibatches once for all
            its layers, and two halves of the layers cost 30 % more CPU on gold EWT). Work
            under 2e10 FLOPs (a second or two) trains in this process. The results do not
            depend on it.

    Raises:
        ValueError: no layers, features of the wrong shape, bad or repeated targets, no
            probes, a training sentence index outside the trees, a max_memory that is not
            positive, or a bad n_jobs.
    """
    config = config_or_default(config, StructuralTraining())
    if isinstance(targets, str) or not targets or len(set(targets)) != len(targets):
        raise ValueError(
            f'targets must be distinct probe kinds ("distance", "depth"); got {targets!r}'
        )
    for target in targets:
        one_of(*TARGETS)(target, "target")
    if not layers:
        raise ValueError("layers is empty; give at least one layer's features")
    arrays = [check_features(features, trees) for features in layers]
    if not specs:
        raise ValueError("specs is empty; give at least one probe")
    for number, spec in enumerate(specs):
        if spec.sentences.min() < 0 or spec.sentences.max() >= trees.n_sentences:
            raise ValueError(
                f"specs[{number}] trains on a sentence outside 0..{trees.n_sentences - 1}"
            )
    if max_memory is not None:
        check_scalar(max_memory, "max_memory", (int, float), min_val=0, include_boundaries="right")
    budget = memory_budget(max_memory, torch.device("cpu"))
    workers = worker_count(n_jobs)  # validates n_jobs
    chunks = _layer_chunks(arrays, trees, targets, specs, config, budget)
    ranks = sorted({spec.rank for spec in specs})
    # one task per (chunk of layers, rank), the costliest first (longest-processing-time)
    tasks = sorted(
        ((chunk, rank) for chunk in chunks for rank in ranks),
        key=lambda task: -len(task[0]) * arrays[task[0][0]].shape[1] * task[1],
    )
    sentences = np.unique(np.concatenate([spec.sentences for spec in specs]))
    gold = {target: trees.padded(target, sentences) for target in targets}
    work = [
        _StackTask(
            [arrays[layer] for layer in chunk],
            trees,
            gold,
            sentences,
            [spec for spec in specs if spec.rank == rank],
            config,
        )
        for chunk, rank in tasks
    ]
    if (
        workers > 1
        and len(tasks) > 1
        and _training_flops(arrays, trees, targets, specs, config) >= (_SMALL_WORK_FLOPS)
    ):
        stacks = Parallel(n_jobs=workers, backend="loky")(
            delayed(_train_in_worker)(task) for task in work
        )
    else:
        with single_threaded(True):
            stacks = [_train_stack(task) for task in work]
    trained = [{target: [np.empty(0)] * len(specs) for target in targets} for _ in arrays]
    for (chunk, rank), stack in zip(tasks, stacks):
        members = [i for i, spec in enumerate(specs) if spec.rank == rank]
        for t, target in enumerate(targets):
            own = stack[..., t * rank : (t + 1) * rank]
            for position, layer in enumerate(chunk):
                for column, i in enumerate(members):
                    trained[layer][target][i] = own[position, column].copy()
    return trained


def _training_flops(
    arrays: Sequence[np.ndarray],
    trees: TreeData,
    targets: Sequence[str],
    specs: Sequence[ProbeSpec],
    config: StructuralTraining,
) -> float:
    """The training arithmetic of every probe of every layer and target, all epochs: per
    probe, epoch and training word 4·d·r (U = HB and Hᵀ·∂L/∂U), and per distance probe and
    sentence of n words 6·r·n² (its Gram product and its gradient's)."""
    lengths = trees.lengths.astype(np.float64)
    width = sum(array.shape[1] for array in arrays)
    pairs = len(arrays) * ("distance" in targets)
    per_epoch = 0.0
    for spec in specs:
        trained = lengths[spec.sentences]
        per_epoch += spec.rank * (
            4 * width * len(targets) * trained.sum() + 6 * pairs * trained @ trained
        )
    return config.epochs * per_epoch


def _train_in_worker(task: _StackTask) -> np.ndarray:
    """:func:`_train_stack` of ``task`` in a worker process, single-threaded, ended with its
    parent."""
    exit_with_parent()
    torch.set_num_threads(1)
    return _train_stack(task)


def step_bytes(
    trees: TreeData,
    targets: Sequence[str],
    specs: Sequence[ProbeSpec],
    config: StructuralTraining,
    dimension: int,
) -> int:
    """An upper bound on the bytes one layer adds to a step of :func:`fit_structural_layers`
    (its features are the caller's, read in place): every probe's B with its gradient and
    Adam's two moments, and a step's tensors at the worst case (every spec of the largest
    rank group active at its full batch b of the longest sentences L): the gathered features
    S·b·L·d, per target the projection, its gradient and the products around it (6·S·b·L·r)
    and the distance probe's pairwise tensors (8·S·b·L²: twice the sum of norms, D computed
    into it, its signs, the weights and the gold values gathered, with room for the
    products' copies); float32. Bucketing the sentences by length only lowers the pairs."""
    longest = int(trees.lengths.max())
    ranks = [spec.rank for spec in specs]
    group = max(ranks.count(rank) for rank in set(ranks))
    rank = max(ranks)
    batch = min(config.batch_size, max(spec.n for spec in specs))
    rows = group * batch * longest
    per_target = {
        "distance": 6 * rows * rank + 8 * rows * longest,
        "depth": 6 * rows * rank + 8 * rows,
    }
    elements = (
        4 * len(targets) * len(specs) * dimension * rank
        + rows * dimension
        + sum(per_target[target] for target in targets)
    )
    return 4 * elements


def layers_per_chunk(
    trees: TreeData,
    targets: Sequence[str],
    specs: Sequence[ProbeSpec],
    config: StructuralTraining,
    dimension: int,
    max_memory: float,
) -> int:
    """How many layers of width ``dimension`` train together within ``max_memory`` GiB: the
    budget less the targets shared by every layer (the padded gold values of every sentence,
    S·L² for distances, S·L for depths), divided by :func:`step_bytes`; at least one."""
    longest = int(trees.lengths.max())
    shared = (
        4
        * trees.n_sentences
        * sum(longest * longest if target == "distance" else longest for target in targets)
    )
    room = max_memory * 2**30 - shared
    return max(1, int(room // step_bytes(trees, targets, specs, config, dimension)))


def _layer_chunks(
    arrays: Sequence[np.ndarray],
    trees: TreeData,
    targets: Sequence[str],
    specs: Sequence[ProbeSpec],
    config: StructuralTraining,
    budget: float,
) -> list[list[int]]:
    """Consecutive layers of one width, as many per chunk as :func:`layers_per_chunk` allows."""
    chunks: list[list[int]] = []
    for layer, array in enumerate(arrays):
        width = array.shape[1]
        size = layers_per_chunk(trees, targets, specs, config, width, budget)
        last = chunks[-1] if chunks else []
        if last and arrays[last[0]].shape[1] == width and len(last) < size:
            last.append(layer)
        else:
            chunks.append([layer])
    return chunks


@dataclass(frozen=True)
class _StackTask:
    """The probes ``specs`` of one rank on ``layers``: the targets of ``gold`` (padded over
    the trained ``sentences``, :class:`_Corpus`) side by side."""

    layers: list[np.ndarray]
    trees: TreeData
    gold: dict[str, np.ndarray]
    sentences: np.ndarray
    specs: list[ProbeSpec]
    config: StructuralTraining


def _train_stack(task: _StackTask) -> np.ndarray:
    """Train the task's probes as one (layers, specs, d, targets·r) stack (one product
    projects the words for all targets) with a stacked Adam; a spec's probes share its
    minibatches and its step count. Returns the stack."""
    specs, config = task.specs, task.config
    corpus = _Corpus.build(task.layers, task.trees, task.gold, task.sentences)
    targets = list(task.gold)
    n_layers, dimension = len(corpus.layers), corpus.layers[0].shape[1]
    initial = np.stack([initial_projection(s, dimension, config.random_state) for s in specs])
    rank = initial.shape[-1]
    initial = np.concatenate([initial] * len(targets), axis=-1)
    weights = torch.from_numpy(np.broadcast_to(initial, (n_layers, *initial.shape)).copy())
    schedules = [minibatches(spec, config) for spec in specs]
    first, second = torch.zeros_like(weights), torch.zeros_like(weights)
    for step in range(max(len(schedule) for schedule in schedules)):
        active = [p for p, schedule in enumerate(schedules) if step < len(schedule)]
        width = max(len(schedules[p][step]) for p in active)
        index = np.full((len(active), width), -1, dtype=np.int64)
        for row, p in enumerate(active):
            batch = schedules[p][step]
            index[row, : len(batch)] = batch
        batch = corpus.batch(index, targets)
        # every spec active (a run's probes share their sentences): the whole stack, no copies
        rows = slice(None) if len(active) == len(specs) else torch.tensor(active)
        projection = weights[:, rows]
        size = batch.features.shape  # (layers, specs, words, d)
        inputs = batch.features.reshape(-1, size[2], size[3])
        # only the batch's words are projected: padding would multiply zeros
        projected = stacked_affine(None, inputs, projection.reshape(-1, *projection.shape[2:]))
        # each probe's loss is the mean over its minibatch's sentences
        mean = torch.from_numpy(1 / (index >= 0).sum(1).astype(np.float32))
        gradient = batch.gradient(projected.reshape(*size[:3], -1), targets, rank, mean)
        gradient = _weight_gradient(inputs, gradient.reshape(-1, size[2], gradient.shape[-1]))
        _adam_step(weights, first, second, gradient.view_as(projection), step + 1, rows, config.lr)
    return weights.numpy()


def _mean_weights(weights: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
    """``weights`` (S, b, ...) times each row's ``mean`` (S,), 1 / its minibatch's sentences."""
    return weights.mul_(mean.view(-1, *[1] * (weights.ndim - 1)))


def _weight_gradient(inputs: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    """Hᵀ · ∂L/∂U per probe, (P, d, k), of ``inputs`` H (P, rows, d) and ``upstream`` (P, rows,
    k); a narrow one (:func:`~probemeter.probes.stacked_mlp.transposed_layer`) as
    (∂L/∂U)ᵀ · H, transposed back."""
    if transposed_layer(upstream.shape[-1], upstream.shape[1], upstream.device):
        return torch.bmm(upstream.transpose(1, 2), inputs).transpose(1, 2)
    return torch.bmm(inputs.transpose(1, 2), upstream)


def _adam_step(
    weights: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
    gradient: torch.Tensor,
    step: int,
    rows: slice | torch.Tensor,
    lr: float,
) -> None:
    """Adam's update (``torch.optim.Adam``'s fused kernel, β = (0.9, 0.999), ε = 1e-8) of the
    specs ``rows`` of the (layers, specs, d, targets·r) stacks at their ``step``-th update:
    the specs still training at a step have trained at every step before it, so they share
    their step count. The kernel is elementwise, so a probe's update does not depend on the
    others in the call; the specs of a partial step are gathered and written back."""
    whole = isinstance(rows, slice)
    parameters = [weights if whole else weights[:, rows]]
    moments = ([first], [second]) if whole else ([first[:, rows]], [second[:, rows]])
    torch._fused_adam_(
        parameters,
        [gradient.contiguous()],
        *moments,
        [],
        [torch.tensor(float(step))],
        lr=lr,
        beta1=0.9,
        beta2=0.999,
        weight_decay=0.0,
        eps=1e-8,
        amsgrad=False,
        maximize=False,
    )
    if not whole:
        weights[:, rows], first[:, rows], second[:, rows] = parameters[0], *moments[0], *moments[1]


def fit_one_probe(
    features: object,
    trees: TreeData,
    target: str,
    spec: ProbeSpec,
    config: StructuralTraining | None = None,
) -> np.ndarray:
    """One probe trained alone, as Hewitt & Manning's code trains it: the reference of the
    batched trainer (its tests, and the baseline of ``benchmarks/structural_speed.py``).

    Sentence by sentence, autograd through the explicit differences h_i − h_j (no Gram
    form), the L1 loss over all pairs (or words) divided by |s|² (or |s|), the mean over
    the minibatch, and ``torch.optim.Adam``; the same initial B
    (:func:`initial_projection`) and minibatches (:func:`minibatches`) as the batched
    trainer. Returns the (d, r) B.
    """
    one_of(*TARGETS)(target, "target")
    config = config_or_default(config, StructuralTraining())
    array = check_features(features, trees)
    projection = torch.tensor(initial_projection(spec, array.shape[1], config.random_state))
    projection.requires_grad_()
    optimiser = torch.optim.Adam([projection], lr=config.lr)
    for batch in minibatches(spec, config):
        losses = []
        for s in batch:
            words = torch.from_numpy(array[trees.offsets[s] : trees.offsets[s + 1]])
            projected = words @ projection
            n = len(words)
            if target == "distance":
                difference = projected[:, None, :] - projected[None, :, :]
                predicted = (difference**2).sum(-1)
                gold = torch.from_numpy(trees.distances(s).astype(np.float32))
                losses.append((predicted - gold).abs().sum() / n**2)
            else:
                predicted = (projected**2).sum(-1)
                gold = torch.from_numpy(trees.depths(s).astype(np.float32))
                losses.append((predicted - gold).abs().sum() / n)
        optimiser.zero_grad()
        torch.stack(losses).mean().backward()
        optimiser.step()
    return projection.detach().numpy()
