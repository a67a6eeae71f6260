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
projected), one batched matmul projects them for every target, the projections are padded
into (sentences, longest, r) batches whose pairwise squared distances are one Gram product
(:func:`loss_gradient`: the loss's gradient in closed form), and a stacked Adam (the update
of ``torch.optim.Adam``, elementwise, with a step count per spec) updates only them.
:func:`fit_one_probe` is the plain one-probe loop they are tested and benchmarked against
(``benchmarks/structural_speed.py``; figures in ``benchmarks/README.md``).

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
from probemeter.probes.stacked_mlp import stacked_affine, transposed_layer
from probemeter.structural.trees import TreeData
from probemeter.training.config import StructuralTraining, config_or_default
from probemeter.training.memory import memory_budget

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
    "loss_gradient",
    "loss_weights",
    "minibatches",
    "step_bytes",
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
    """Every layer's words (one flat row per word, a zero row last for padding) and the trees'
    padded targets: a minibatch gathers its words by position, so no layer is stored padded
    to the longest sentence."""

    features: torch.Tensor  # (n_layers, n_words + 1, d)
    gold: dict[str, torch.Tensor]  # per target (S, L, L) or (S, L)
    lengths: torch.Tensor  # (S,)
    offsets: torch.Tensor  # (S,): each sentence's first word

    @classmethod
    def build(
        cls, layers: Sequence[np.ndarray], trees: TreeData, targets: Sequence[str]
    ) -> _Corpus:
        n_words, dimension = layers[0].shape
        features = torch.zeros(len(layers), n_words + 1, dimension)
        for layer, array in enumerate(layers):
            features[layer, :n_words] = torch.from_numpy(array)
        return cls(
            features,
            {target: torch.from_numpy(trees.padded(target)) for target in targets},
            torch.from_numpy(trees.lengths.copy()),
            torch.from_numpy(trees.offsets[:-1].copy()),
        )

    def batch(self, index: torch.Tensor) -> _Batch:
        """The minibatch of sentences ``index`` (S, b) (−1 = padding: length 0): every
        layer's words of each row packed, trimmed to the row with most words, each target's
        gold values trimmed to the longest sentence."""
        real = index >= 0
        safe = index.clamp(min=0)
        lengths = torch.where(real, self.lengths[safe], 0)
        longest = max(int(lengths.max()), 1)
        positions = torch.arange(longest)
        inside = positions < lengths.unsqueeze(-1)  # (S, b, L)
        # a word's place among its row's words: the words of the row's earlier sentences first
        packed = (lengths.cumsum(1) - lengths).unsqueeze(-1) + positions
        width = max(int(lengths.sum(1).max()), 1)
        rows = torch.arange(index.shape[0]).view(-1, 1, 1).expand_as(packed)
        words = torch.full((index.shape[0], width), self.features.shape[1] - 1)
        words[rows[inside], packed[inside]] = (self.offsets[safe].unsqueeze(-1) + positions)[inside]
        gold = {
            target: values[safe, :longest, :longest] if values.ndim == 3 else values[safe, :longest]
            for target, values in self.gold.items()
        }
        # every (sentence, word) slot's packed word among all rows' (S·(W + 1), a zero last in
        # each row), and the inverse: each packed word's slot among all (S·b·L); words past
        # a row's end (zero features) take its first slot
        n_rows, n_slots = index.shape[0], index.shape[1] * longest
        slots = torch.where(inside, packed, width) + rows * (width + 1)
        places = torch.arange(n_rows).unsqueeze(-1).mul(n_slots).repeat(1, width)
        flat = (torch.arange(index.shape[1]).unsqueeze(-1) * longest + positions).expand_as(rows)
        places[rows[inside], packed[inside]] += flat[inside]
        features = self.features.index_select(1, words.reshape(-1))
        return _Batch(
            features.view(-1, n_rows, width, features.shape[-1]),
            slots.reshape(-1),
            places.reshape(-1),
            gold,
            lengths,
        )


@dataclass
class _Batch:
    """A minibatch of every layer: packed words, where each sentence's word sits, targets."""

    features: torch.Tensor  # (n_layers, S, W, d): each row's words, zero rows after them
    slots: torch.Tensor  # (S·b·L,): the packed place of every (sentence, word)
    places: torch.Tensor  # (S·W,): the inverse, each packed word's slot
    gold: dict[str, torch.Tensor]  # per target (S, b, L, L) or (S, b, L)
    lengths: torch.Tensor  # (S, b)

    def padded(self, packed: torch.Tensor) -> torch.Tensor:
        """(n_layers, S, b, L, k) padded sentences of the packed (n_layers, S, W, k) values,
        with zeros beyond each sentence's words."""
        n_layers, n_rows, _, k = packed.shape
        extended = torch.cat([packed, packed.new_zeros(n_layers, n_rows, 1, k)], 2)
        spread = extended.view(n_layers, -1, k).index_select(1, self.slots)
        return spread.view(n_layers, *self.lengths.shape, -1, k)

    def packed(self, padded: torch.Tensor) -> torch.Tensor:
        """(n_layers, S, W, k) packed words of the padded (n_layers, S, b, L, k) values."""
        n_layers, n_rows, k = padded.shape[0], padded.shape[1], padded.shape[-1]
        packed = padded.reshape(n_layers, -1, k).index_select(1, self.places)
        return packed.view(n_layers, n_rows, -1, k)


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

    Raises:
        ValueError: no layers, features of the wrong shape, bad or repeated targets, no
            probes, a training sentence index outside the trees, or a max_memory that is not
            positive.
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
    trained = [{target: [np.empty(0)] * len(specs) for target in targets} for _ in arrays]
    with single_threaded(True):
        for chunk in _layer_chunks(arrays, trees, targets, specs, config, budget):
            corpus = _Corpus.build([arrays[layer] for layer in chunk], trees, targets)
            for rank in sorted({spec.rank for spec in specs}):
                members = [i for i, spec in enumerate(specs) if spec.rank == rank]
                stack = _train_stack(corpus, targets, [specs[i] for i in members], config)
                for t, target in enumerate(targets):
                    own = stack[..., t * rank : (t + 1) * rank]
                    for position, layer in enumerate(chunk):
                        for column, i in enumerate(members):
                            trained[layer][target][i] = own[position, column].copy()
    return trained


def step_bytes(
    trees: TreeData,
    targets: Sequence[str],
    specs: Sequence[ProbeSpec],
    config: StructuralTraining,
    dimension: int,
) -> int:
    """An upper bound on the bytes one layer adds to a step of :func:`fit_structural_layers`:
    its words (n_words + 1) × d, every probe's B with its gradient and Adam's two moments,
    and a step's tensors at the worst case (every spec of the largest rank group active at
    its full batch b of the longest sentences L): the gathered features S·b·L·d, per target
    the projection, its gradient and the products around it (6·S·b·L·r) and the distance
    probe's pairwise tensors (8·S·b·L²: twice the sum of norms, D computed into it, its
    signs, the weights and the gold values gathered, with room for the products' copies);
    float32."""
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
        (trees.n_words + 1) * dimension
        + 4 * len(targets) * len(specs) * dimension * rank
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


def _train_stack(
    corpus: _Corpus, targets: Sequence[str], specs: list[ProbeSpec], config: StructuralTraining
) -> np.ndarray:
    """Train the probes of one rank as one (layers, specs, d, targets·r) stack (each target's
    B side by side: one product projects the words for all targets) with a stacked Adam; a
    spec's probes share its minibatches and its step count. Returns the stack."""
    n_layers, dimension = corpus.features.shape[0], corpus.features.shape[-1]
    initial = np.stack([initial_projection(s, dimension, config.random_state) for s in specs])
    rank = initial.shape[-1]
    initial = np.concatenate([initial] * len(targets), axis=-1)
    weights = torch.from_numpy(np.broadcast_to(initial, (n_layers, *initial.shape)).copy())
    schedules = [minibatches(spec, config) for spec in specs]
    first, second = torch.zeros_like(weights), torch.zeros_like(weights)
    steps = torch.zeros(len(specs), dtype=torch.float64)
    for step in range(max(len(schedule) for schedule in schedules)):
        active = [p for p, schedule in enumerate(schedules) if step < len(schedule)]
        width = max(len(schedules[p][step]) for p in active)
        index = torch.full((len(active), width), -1, dtype=torch.int64)
        for row, p in enumerate(active):
            batch = schedules[p][step]
            index[row, : len(batch)] = torch.from_numpy(batch)
        batch = corpus.batch(index)
        # every spec active (a run's probes share their sentences): the whole stack, no copies
        rows = slice(None) if len(active) == len(specs) else torch.tensor(active)
        projection = weights[:, rows]
        size = batch.features.shape  # (layers, specs, words, d)
        inputs = batch.features.reshape(-1, size[2], size[3])
        # only the batch's words are projected: padding would multiply zeros
        projected = stacked_affine(None, inputs, projection.reshape(-1, *projection.shape[2:]))
        projected = projected.reshape(*size[:3], -1)
        # each probe's loss is the mean over its minibatch's sentences
        mean = 1 / (index >= 0).sum(1).to(projected.dtype)
        longest = batch.lengths.max().clamp(min=1).item()
        gradient = torch.cat(
            [
                batch.packed(
                    loss_gradient(
                        batch.padded(projected[..., t * rank : (t + 1) * rank]),
                        batch.gold[target],
                        _mean_weights(loss_weights(batch.lengths, longest, target), mean),
                        target,
                    )
                )
                for t, target in enumerate(targets)
            ],
            -1,
        )
        gradient = _weight_gradient(inputs, gradient.reshape(-1, size[2], gradient.shape[-1]))
        steps[rows] += 1
        _adam_step(
            weights, first, second, gradient.view_as(projection), steps[rows], rows, config.lr
        )
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
    steps: torch.Tensor,
    rows: slice | torch.Tensor,
    lr: float,
) -> None:
    """torch.optim.Adam's update (β = (0.9, 0.999), ε = 1e-8) of the specs ``rows`` of the
    (layers, specs, d, targets·r) stacks, each spec with its own step count ``steps``."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    whole = isinstance(rows, slice)
    m = first[:, rows].mul_(beta1).add_(gradient, alpha=1 - beta1)
    v = second[:, rows].mul_(beta2).addcmul_(gradient, gradient, value=1 - beta2)
    step_size = (lr / (1 - beta1**steps)).to(weights.dtype).view(-1, 1, 1)
    correction = torch.sqrt(1 - beta2**steps).to(weights.dtype).view(-1, 1, 1)
    update = step_size * m / (v.sqrt() / correction + eps)
    if whole:
        weights.sub_(update)
        return
    first[:, rows], second[:, rows] = m, v
    weights[:, rows] = weights[:, rows] - update


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
