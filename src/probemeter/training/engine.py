"""The batched probe engine: train P probes at once, then evaluate them all.

Every method of probemeter reduces to "train many small probes, each on its own subset with its
own seed, then evaluate them". This module does that once, fast:

* parameters of a chunk of probes are stacked on a leading probe axis, ``W`` of shape
  (P, fan_in, fan_out); forward and backward passes are hand-written batched matmuls
  (``baddbmm``/``bmm`` into preallocated buffers) and the update is one fused Adam step for all
  probes — there is no Python loop over probes in the training loop;
* each probe trains on exactly its own examples: minibatches are drawn *without* replacement,
  epoch after epoch over the probe's own reshuffled subset. A probe whose subset is smaller than
  the batch size trains full-batch on its n examples (effective batch ``min(n, batch_size)``);
  probes are grouped by effective batch size so none is padded;
* every probe takes the same number of Adam updates whatever its subset size (Whitney et al.,
  App. C.1: "at each dataset size n we perform the same number of updates");
* a probe's random stream (initial weights and minibatch order) is keyed by its own ``key``
  tuple, never by its position, so results do not depend on chunking or on which other probes
  are trained alongside it.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from joblib import Parallel, delayed
from tqdm.auto import tqdm

from probemeter._device import resolve_device, single_threaded
from probemeter._method import MAX_MEMORY_GIB
from probemeter._validation import boolean, check_scalar, number, one_of
from probemeter.probes import MLP
from probemeter.probes.stacked_mlp import EVAL_ROWS_PER_BLOCK, StackedMLP
from probemeter.training.early_stopping import train_with_dev_stopping
from probemeter.training.workers import exit_with_parent

__all__ = [
    "MemoryEstimate",
    "ProbeEvaluation",
    "TrainingConfig",
    "check_memory_budget",
    "estimate_memory",
    "fit_evaluate",
]

_PRECISIONS = ("f32", "bf16")
_POSITIVE = number(0, closed="neither")
#: cost model of chunk planning (speed only): fixed cost of one training step of a chunk, and
#: the arithmetic rate of small batched matmuls, both measured on a 2-core CPU
_STEP_OVERHEAD_SECONDS = 4e-4
_ROW_FLOPS_PER_SECOND = 5e10
#: a probe whose test loss exceeds this many times ln K nats (the uniform code) has diverged
DIVERGED_FACTOR = 100
#: in bf16 mode, chunks with narrower minibatches train in f32 (they are memory-bound)
_BF16_MIN_ROWS = 64
#: below this much training arithmetic (a second or two of work) worker processes and intra-op
#: threads cost more than they save: train in this process, on one thread
_SMALL_WORK_FLOPS = 2e10


@dataclass(frozen=True)
class TrainingConfig:
    """How every probe is trained: a fixed number of Adam updates on minibatches (default), or
    per-probe early stopping with learning-rate annealing (``early_stopping=True``).

    Args:
        steps: Adam updates per probe, the same at every subset size (stopping rule: fixed).
        batch_size: minibatch size; a probe with n < batch_size trains full-batch on its n.
        lr: Adam learning rate (1e-4 in Whitney et al., App. C.1).
        precision: ``"f32"`` (default) or ``"bf16"``: bf16 matmuls with f32 master weights,
            f32 Adam state and f32 loss, for probes whose minibatches have at least 64 rows
            (narrower ones are bound by memory traffic, not arithmetic, and train in f32);
            evaluation is always f32.
        early_stopping: instead of ``steps`` fixed updates, the protocol of Voita & Titov §3.1
            (Hewitt & Liang 2019), per probe, inside the batched run: ``dev_fraction`` of each
            probe's subset is its development set; after every epoch on the rest, an epoch
            without a new development minimum multiplies the probe's learning rate by
            ``lr_decay``; ``patience`` such epochs in a row (or ``max_epochs``) stop it; its
            best-development parameters are kept (:mod:`probemeter.training.early_stopping`). The
            paper uses ``lr=1e-3``.
        dev_fraction, lr_decay, patience, max_epochs: settings of ``early_stopping``.
    """

    steps: int = 1000
    batch_size: int = 256
    lr: float = 1e-4
    precision: str = "f32"
    early_stopping: bool = False
    dev_fraction: float = 0.1
    lr_decay: float = 0.5
    patience: int = 4
    max_epochs: int = 100

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "patience", "max_epochs"):
            value = check_scalar(getattr(self, name), name, int, min_val=1)
            object.__setattr__(self, name, int(value))
        object.__setattr__(self, "lr", float(_POSITIVE(self.lr, "lr")))
        one_of(*_PRECISIONS)(self.precision, "precision")
        boolean()(self.early_stopping, "early_stopping")
        for name in ("dev_fraction", "lr_decay"):
            value = check_scalar(
                getattr(self, name), name, float, min_val=0, max_val=1, include_boundaries="neither"
            )
            object.__setattr__(self, name, float(value))

    def to_dict(self) -> dict:
        """The settings, plus the stopping rule stated explicitly (the early-stopping settings
        appear only when it is on, so fixed-steps configurations keep their old keys)."""
        settings = asdict(self)
        if not self.early_stopping:
            for name in ("early_stopping", "dev_fraction", "lr_decay", "patience", "max_epochs"):
                del settings[name]
            return {**settings, "optimizer": "adam", "stopping": f"fixed {self.steps} steps"}
        del settings["steps"]
        stopping = (
            f"early stopping per probe on a {self.dev_fraction:g} dev split of its subset: "
            f"lr x{self.lr_decay:g} after an epoch without a new dev minimum, stop after "
            f"{self.patience} such epochs in a row or {self.max_epochs} epochs; best-dev "
            "parameters kept (Voita & Titov 2020, sec. 3.1)"
        )
        return {**settings, "optimizer": "adam (per-probe lr)", "stopping": stopping}


@dataclass(frozen=True)
class ProbeEvaluation:
    """Per-probe test metrics, aligned with the probes passed to :func:`fit_evaluate`.

    Attributes:
        loss: mean cross-entropy on the evaluation set, in nats.
        loss_truncated: mean of min(cross-entropy, 1 nat): the [0, 1]-bounded loss of
            Whitney et al., App. A, for Hoeffding intervals.
        accuracy: fraction of evaluation examples whose arg-max prediction is the label.
        nll: only with ``per_example=True``: (P, n_eval) float32 cross-entropy of every
            evaluation example, in nats (online codes sum it over blocks; paired tests need it).
        predictions: only with ``per_example=True``: (P, n_eval) int32 arg-max predictions.
        epochs: only with ``config.early_stopping``: (P,) epochs each probe trained.
    """

    loss: np.ndarray
    loss_truncated: np.ndarray
    accuracy: np.ndarray
    nll: np.ndarray | None = None
    predictions: np.ndarray | None = None
    epochs: np.ndarray | None = None


def fit_evaluate(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    n_classes: int,
    subsets: Sequence[np.ndarray],
    keys: Sequence[tuple[int, ...]],
    probe: MLP,
    config: TrainingConfig,
    *,
    device: str | torch.device = "auto",
    n_jobs: int | None = -1,
    max_memory: float = MAX_MEMORY_GIB,
    progress: bool = False,
    per_example: bool = False,
    dev_set: np.ndarray | None = None,
) -> ProbeEvaluation:
    """Train one probe per entry of ``subsets`` and evaluate each on ``(X_eval, y_eval)``.

    Args:
        X_train, y_train: the training pool, float32 (n_pool, d) and int64 (n_pool,).
        X_eval, y_eval: the evaluation set shared by all probes.
        n_classes: number of output logits K.
        subsets: per probe, the indices into the pool of its training examples.
        keys: per probe, a tuple of integers seeding its own random stream (initial weights
            and minibatch order).
        probe: the probe architecture.
        config: optimisation settings.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``...
        n_jobs: CPU worker processes, each single-threaded, sharing the chunks of probes
            (``-1``: one per core; ``None`` or ``1``: train in this process with torch's own
            threads). On CUDA the probes train in this process. Results do not depend on it.
        max_memory: GiB budget for one chunk of stacked probes (per worker); the probe axis is
            split into chunks that fit it (:func:`estimate_memory`: parameters, gradients, Adam
            state, bf16 shadows, minibatch activations, index stream, evaluation block). A
            probe that cannot fit in it even alone is refused with a ``ValueError`` before
            anything is allocated or trained. The features and labels are not counted: they
            are the caller's arrays, which the chunks share (on the CPU float32 features are
            used in place, and worker processes receive them as shared memory maps); on an
            accelerator they are copied to it once, outside any chunk.
        progress: show a progress bar over probe-updates.
        per_example: also return every evaluation example's cross-entropy and prediction
            (``nll`` and ``predictions``, P × n_eval each).
        dev_set: only with ``config.early_stopping``: indices into the pool of one development
            set that every probe early-stops on, training on its whole subset (Voita & Titov
            §3.1 stop on a development split apart from the data); default: each probe's own
            ``config.dev_fraction`` of its subset.
    """
    _check_engine_inputs(X_train, y_train, X_eval, y_eval, n_classes, subsets, keys)
    dev_set = _check_dev_set(dev_set, config, len(X_train))
    _POSITIVE(max_memory, "max_memory")
    check_memory_budget(
        probe,
        X_train.shape[1],
        n_classes,
        config,
        max_memory,
        sizes=[len(subset) for subset in subsets],
        n_eval=len(y_eval),
        per_example=per_example,
        shared_dev_rows=None if dev_set is None else len(dev_set),
    )
    torch_device = resolve_device(device)
    workers = 1 if torch_device.type != "cpu" else _worker_count(n_jobs)
    n_probes = len(subsets)
    result = {name: np.empty(n_probes) for name in ("loss", "loss_truncated", "accuracy")}
    if per_example:
        result["nll"] = np.empty((n_probes, len(y_eval)), dtype=np.float32)
        result["predictions"] = np.empty((n_probes, len(y_eval)), dtype=np.int32)
    if config.early_stopping:
        result["epochs"] = np.empty(n_probes, dtype=np.int64)
    if n_probes == 0:
        return ProbeEvaluation(**result)
    shapes = probe.layer_shapes(X_train.shape[1], n_classes)
    small = _training_flops(subsets, probe, shapes, config) < _SMALL_WORK_FLOPS
    if small:
        workers = 1
    chunks = _plan_chunks(
        subsets,
        probe,
        shapes,
        config,
        max_memory,
        workers,
        n_eval=len(y_eval),
        per_example=per_example,
        shared_dev_rows=None if dev_set is None else len(dev_set),
    )
    tasks = [
        ([subsets[i] for i in members], [keys[i] for i in members], rows, per_example, dev_set)
        for members, rows in chunks
    ]
    arrays = (X_train, y_train, X_eval, y_eval)
    bar = tqdm(
        total=None if config.early_stopping else n_probes * config.steps,
        disable=not progress,
        unit="update",
        unit_scale=True,
        desc=f"training {n_probes} probes",
    )
    with bar:
        if workers == 1 or len(tasks) == 1:
            runner = _ChunkRunner.build(arrays, n_classes, probe, config, torch_device, bar.update)
            with single_threaded(small and torch_device.type == "cpu"):
                outputs = [runner.run(*task) for task in tasks]
        else:
            outputs = _run_in_workers(arrays, n_classes, probe, config, tasks, workers, bar)
    for (members, _), metrics in zip(chunks, outputs):
        for name, values in metrics.items():
            result[name][members] = values
    _warn_if_diverged(result["loss"], subsets, n_classes, config.lr)
    return ProbeEvaluation(**result)


def _warn_if_diverged(
    losses: np.ndarray, subsets: Sequence[np.ndarray], n_classes: int, lr: float
) -> None:
    """Warn when probes ended with a non-finite test loss, or one over ``DIVERGED_FACTOR``
    times the uniform code's ln K nats: no probe that learnt anything ends there, even one
    that overfits a handful of examples — it is a step size too large for Adam."""
    limit = DIVERGED_FACTOR * math.log(max(n_classes, 2))
    diverged = np.flatnonzero(~np.isfinite(losses) | (losses > limit))
    if diverged.size:
        first = diverged[0]
        warnings.warn(
            f"{diverged.size} of {len(losses)} probes diverged: test loss "
            f"{losses[first]:.3g} nats (n={len(subsets[first])}) against ln K = "
            f"{math.log(max(n_classes, 2)):.3g} for guessing uniformly; lr={lr:g} is likely too "
            "large (Adam usually needs 1e-4 to 1e-2). Their numbers are not meaningful",
            RuntimeWarning,
            stacklevel=3,
        )


def _check_engine_inputs(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    n_classes: int,
    subsets: Sequence[np.ndarray],
    keys: Sequence[tuple[int, ...]],
) -> None:
    """Cheap checks that turn deep torch errors into clear ones (ProbeData validates the rest)."""
    if len(subsets) != len(keys):
        raise ValueError(f"got {len(subsets)} subsets but {len(keys)} keys")
    if len(y_eval) == 0:
        raise ValueError("the evaluation set X_eval/y_eval is empty")
    for name, labels in (("y_train", y_train), ("y_eval", y_eval)):
        if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
            raise ValueError(f"{name} holds labels outside [0, n_classes={n_classes})")
    for position, subset in enumerate(subsets):
        if len(subset) == 0:
            raise ValueError(f"subsets[{position}] is empty: a probe needs training examples")
        if np.min(subset) < 0 or np.max(subset) >= len(X_train):
            raise ValueError(
                f"subsets[{position}] indexes outside the pool of {len(X_train)} examples"
            )


def _check_dev_set(
    dev_set: np.ndarray | None, config: TrainingConfig, pool_size: int
) -> np.ndarray | None:
    """``dev_set`` as int64 pool indices (None stays None); a ValueError naming it otherwise."""
    if dev_set is None:
        return None
    if not config.early_stopping:
        raise ValueError("dev_set is the early-stopping set: it needs config.early_stopping=True")
    indices = np.asarray(dev_set)
    if indices.ndim != 1 or indices.size == 0 or not np.issubdtype(indices.dtype, np.integer):
        raise ValueError("dev_set must be a non-empty 1-D array of pool indices")
    if indices.min() < 0 or indices.max() >= pool_size:
        raise ValueError(f"dev_set indexes outside the pool of {pool_size} examples")
    return indices.astype(np.int64)


def _training_flops(
    subsets: Sequence[np.ndarray],
    probe: MLP,
    shapes: list[tuple[int, int]],
    config: TrainingConfig,
) -> float:
    """Arithmetic of training (forward + backward ≈ 3× forward per example)."""
    examples = sum(min(len(s), config.batch_size) for s in subsets) * config.steps
    return 3.0 * examples * probe.forward_flops(shapes[0][0], shapes[-1][1])


def _worker_count(n_jobs: int | None) -> int:
    cores = os.cpu_count() or 1
    if n_jobs is None:
        return 1
    check_scalar(n_jobs, "n_jobs", int, min_val=-cores)
    if n_jobs == 0:
        raise ValueError("n_jobs must be a non-zero integer or None; got 0")
    return int(n_jobs) if n_jobs > 0 else cores + 1 + int(n_jobs)


def _plan_chunks(
    subsets: Sequence[np.ndarray],
    probe: MLP,
    shapes: list[tuple[int, int]],
    config: TrainingConfig,
    max_memory: float,
    workers: int,
    *,
    n_eval: int = EVAL_ROWS_PER_BLOCK,
    per_example: bool = False,
    shared_dev_rows: int | None = None,
) -> list[tuple[np.ndarray, int]]:
    """Chunks of probes as (members, rows), costliest first (longest-processing-time order).

    Probes are grouped by effective batch ``min(n, batch_size)``. Neighbouring groups are merged
    while padding the narrower probes with zero-weight rows costs less arithmetic than the
    fixed per-step cost of another chunk saves (tiny probes are overhead-bound, large ones are
    not, measured on a 2-core CPU). Each chunk is then split to fit the memory budget and, with
    several workers, so that none holds more than a worker's fair share of the work.
    Chunking changes speed only: a probe's numbers are the same, up to float rounding,
    whatever its companions. ``n_eval``, ``per_example`` and ``shared_dev_rows`` enter the
    memory estimate (:func:`estimate_memory`).
    """
    effective_batch = np.array([min(len(s), config.batch_size) for s in subsets])
    seconds_per_row = 3 * probe.forward_flops(shapes[0][0], shapes[-1][1]) / _ROW_FLOPS_PER_SECOND
    groups: list[tuple[np.ndarray, int]] = []
    for batch in np.unique(effective_batch):
        members = np.flatnonzero(effective_batch == batch)
        if groups:
            merged, rows = groups[-1]
            padding_cost = merged.size * (batch - rows) * seconds_per_row
            if padding_cost < _STEP_OVERHEAD_SECONDS:
                groups[-1] = (np.concatenate([merged, members]), int(batch))
                continue
        groups.append((members, int(batch)))
    # no chunk should hold more than one worker's fair share of the rows to process
    fair_share = sum(members.size * rows for members, rows in groups) / workers
    chunks = []
    for members, rows in groups:
        memory = estimate_memory(
            probe,
            shapes[0][0],
            shapes[-1][1],
            config,
            rows=rows,
            n_train=max(len(subsets[i]) for i in members),
            n_eval=n_eval,
            per_example=per_example,
            shared_dev_rows=shared_dev_rows,
        )
        size = min(
            _chunk_size(memory, max_memory),
            -(-members.size // math.ceil(members.size * rows / fair_share)),
        )
        chunks.extend((members[i : i + size], rows) for i in range(0, members.size, size))
    return sorted(chunks, key=lambda chunk: -chunk[1] * chunk[0].size)


def _chunk_size(memory: MemoryEstimate, max_memory: float) -> int:
    """How many probes of ``memory`` fit the budget of ``max_memory`` GiB (at least one:
    :func:`fit_evaluate` refuses, before planning, a probe that does not fit alone)."""
    size = memory.probes_within(max_memory * 2**30)
    if size < 1:
        raise RuntimeError(
            f"internal error: a probe of {_gib(memory.per_probe)} GiB was not refused by the "
            f"memory check for max_memory={max_memory:g} GiB"
        )
    return size


#: bytes of one element of a float32, int64 and bfloat16 tensor
_F32, _I64, _BF16 = 4, 8, 2
#: per chunk: what matrix multiplies and the allocator take beyond the tensors themselves
#: (packing buffers), measured on one CPU thread by benchmarks/memory_estimate.py: 2-6 MiB in
#: f32, 7-12 MiB more with bf16 matmuls; a few MiB more per extra thread of in-process training
_WORKSPACE_BYTES = 8 * 2**20
_BF16_WORKSPACE_BYTES = 16 * 2**20


@dataclass(frozen=True)
class MemoryEstimate:
    """What one probe of a chunk of stacked probes allocates, in bytes, by what holds it.

    The parts follow the engine's allocations (:class:`~probemeter.probes.stacked_mlp.StackedMLP`,
    ``_ChunkRunner.run``, ``_train_chunk`` and the early-stopping loop). The optimiser's state
    exists only while training and the evaluation block only while evaluating, so a probe's
    peak, :attr:`per_probe`, is the larger of :attr:`training` and :attr:`evaluating`.

    Attributes:
        parameters: the f32 master weights and biases (4 bytes × parameters).
        gradients: their f32 gradients (4 bytes × parameters).
        optimizer: Adam's two f32 moments (8 bytes × parameters), while training.
        shadows: in bf16 mode (``precision="bf16"`` and minibatches of at least 64 rows), the
            bf16 copies of the parameters and of the weight gradients (2 + 2 bytes); else 0.
        activations: the buffers of one minibatch, kept from training through evaluation:
            pre-activations of every layer, activations, back-propagated deltas and dropout
            masks of the hidden ones (bf16 in bf16 mode).
        minibatch: a training step's temporaries: the gathered inputs, their indices and
            labels, and the softmax (with bf16 inputs, f32 logits and a bf16 upstream gradient
            in bf16 mode).
        index_stream: the probe's minibatch order for all its steps (int64, ``steps × rows``)
            and its row weights; 0 with early stopping, which draws batches epoch by epoch.
        early_stopping: with ``config.early_stopping``: the best-development parameters, the
            probe's development set (its features gathered once; a set shared by all probes
            counts once per chunk, in ``chunk_overhead``) and epoch streams, and the largest
            transient of the loop: the copies made when stopped probes are dropped
            from the stack (the carrying-on half's parameters, gradients, moments and
            buffers), the development losses (parameter copies and activations), or Adam's
            per-layer temporaries; else 0.
        evaluation: one evaluation block of ``min(n_eval, EVAL_ROWS_PER_BLOCK)`` rows: two
            consecutive layers' outputs (the widest pair, the log-probabilities next to the
            logits included), the losses and predictions; with ``per_example`` also every
            evaluation example's loss and prediction, gathered and concatenated.
        chunk_overhead: once per chunk, not per probe: the transient of drawing one probe's
            minibatch order (a float64 draw and its argsort over the epochs of its subset),
            a shared development set's gathered rows, and the matrix-multiply libraries'
            workspace (``_WORKSPACE_BYTES``, and ``_BF16_WORKSPACE_BYTES`` more in bf16 mode;
            measured single-threaded, as worker processes train).
    """

    parameters: int
    gradients: int
    optimizer: int
    shadows: int
    activations: int
    minibatch: int
    index_stream: int
    early_stopping: int
    evaluation: int
    chunk_overhead: int

    @property
    def _resident(self) -> int:
        return (
            self.parameters + self.gradients + self.shadows + self.activations + self.index_stream
        )

    @property
    def training(self) -> int:
        """Bytes per probe while the chunk trains."""
        return self._resident + self.minibatch + self.optimizer + self.early_stopping

    @property
    def evaluating(self) -> int:
        """Bytes per probe while the chunk is evaluated (the optimiser is gone by then)."""
        return self._resident + self.evaluation

    @property
    def per_probe(self) -> int:
        """A probe's peak: the larger of :attr:`training` and :attr:`evaluating`."""
        return max(self.training, self.evaluating)

    def chunk_bytes(self, n_probes: int) -> int:
        """The peak of a chunk of ``n_probes`` such probes."""
        return self.chunk_overhead + n_probes * self.per_probe

    def probes_within(self, budget_bytes: float) -> int:
        """How many such probes one chunk can hold within ``budget_bytes`` (0: not even one)."""
        return max(0, int((budget_bytes - self.chunk_overhead) // self.per_probe))

    def describe(self) -> str:
        """The non-zero parts, in binary units, for messages."""
        names = {
            "parameters": "parameters",
            "gradients": "gradients",
            "optimizer": "Adam moments",
            "shadows": "bf16 shadows",
            "activations": "activation buffers",
            "minibatch": "minibatch temporaries",
            "index_stream": "minibatch index stream",
            "early_stopping": "early-stopping copies",
            "evaluation": "evaluation block",
            "chunk_overhead": "per-chunk workspace and minibatch-order draw",
        }
        parts = [
            f"{label} {_size(getattr(self, name))}"
            for name, label in names.items()
            if getattr(self, name)
        ]
        return ", ".join(parts)


def _gib(n_bytes: float) -> str:
    """Bytes as GiB with three significant digits."""
    return f"{n_bytes / 2**30:.3g}"


def _size(n_bytes: float) -> str:
    """Bytes in the largest binary unit (KiB, MiB or GiB) below them, three significant
    digits."""
    for power, unit in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if n_bytes >= 1024**power:
            return f"{n_bytes / 1024**power:.3g} {unit}"
    return f"{n_bytes:.0f} bytes"


def _gib_up(n_bytes: float) -> str:
    """Bytes as GiB rounded *up* at three significant digits (a budget that does hold them)."""
    gib = n_bytes / 2**30
    digits = 2 - math.floor(math.log10(gib))
    return f"{math.ceil(gib * 10**digits) / 10**digits:.{max(digits, 0)}f}"


def estimate_memory(
    probe: MLP,
    n_features: int,
    n_classes: int,
    config: TrainingConfig,
    *,
    rows: int | None = None,
    n_train: int | None = None,
    n_eval: int = EVAL_ROWS_PER_BLOCK,
    per_example: bool = False,
    shared_dev_rows: int | None = None,
) -> MemoryEstimate:
    """The bytes one probe of ``probe`` adds to a chunk of stacked probes, computed from the
    architecture alone, before anything is allocated (:class:`MemoryEstimate` lists the parts).

    Args:
        probe: the architecture.
        n_features, n_classes: input dimension d and output logits K.
        config: the training settings (batch size, steps, precision, early stopping).
        rows: minibatch rows of the chunk; default ``config.batch_size``, the most any probe
            uses (a probe with fewer training examples trains on ``min(n, batch_size)`` rows).
        n_train: the largest training subset among the chunk's probes (its minibatch-order
            draw and, with early stopping, its development set and epoch streams); default
            ``rows``.
        n_eval: examples of the evaluation set (evaluation streams over blocks of
            ``EVAL_ROWS_PER_BLOCK`` rows; with ``per_example`` every row's results are kept).
        per_example: whether every evaluation example's loss and prediction are returned.
        shared_dev_rows: with early stopping on one development set shared by every probe
            (``dev_set`` of :func:`fit_evaluate`), its size: its features are gathered once
            per chunk and every probe's development losses run over all its rows. Default:
            each probe stops on its own ``dev_fraction`` of its subset.
    """
    rows = config.batch_size if rows is None else int(check_scalar(rows, "rows", int, min_val=1))
    n_train = rows if n_train is None else int(check_scalar(n_train, "n_train", int, min_val=1))
    n_eval = int(check_scalar(n_eval, "n_eval", int, min_val=0))
    shapes = probe.layer_shapes(n_features, n_classes)
    weights = sum(fan_in * fan_out for fan_in, fan_out in shapes)
    n_params = weights + sum(fan_out for _, fan_out in shapes)
    hidden = sum(probe.hidden)
    low = config.precision == "bf16" and rows >= _BF16_MIN_ROWS
    element = _BF16 if low else _F32
    # pre-activations of every layer; activations, deltas and (with dropout) masks of hidden ones
    masks = hidden if probe.dropout and probe.hidden else 0
    buffers = rows * element * (hidden + n_classes + 2 * hidden + masks)
    # gathered inputs, their indices and labels, the softmax and its scatter operand
    minibatch = rows * (_F32 * n_features + 2 * _I64 + _F32 * (n_classes + 1))
    if low:  # bf16 inputs, the f32 logits of the softmax, the bf16 upstream gradient
        minibatch += rows * (_BF16 * n_features + _F32 * n_classes + _BF16 * n_classes)
    shadows = _BF16 * (n_params + weights) if low else 0
    # the widest pair of consecutive outputs alive together (logits and log-probabilities last)
    widths = [*probe.hidden, n_classes, n_classes]
    pair = max(a + b for a, b in itertools.pairwise(widths))
    block = min(n_eval, EVAL_ROWS_PER_BLOCK)
    # losses, truncated losses, int64 predictions and their comparison with the labels
    evaluation = block * (_F32 * pair + 2 * _F32 + _I64 + 1)
    if per_example:  # every row's f32 loss and int32 prediction, in blocks, then concatenated
        evaluation += n_eval * 2 * (_F32 + _F32)
    early_stopping = index_stream = 0
    chunk_overhead = _WORKSPACE_BYTES + (_BF16_WORKSPACE_BYTES if low else 0)
    if config.early_stopping:
        # best-development parameters; the probe's training indices and their permutation
        held = _F32 * n_params + 2 * _I64 * n_train
        if shared_dev_rows is None:  # its own development rows: features, labels, index, weight
            dev_rows = max(1, round(config.dev_fraction * n_train))
            held += dev_rows * (_F32 * n_features + 2 * _I64 + _F32)
            gathered = dev_rows * _F32 * n_features  # copied for the probes ending an epoch
        else:  # one set for all probes, gathered once per chunk and read through views
            dev_rows = int(check_scalar(shared_dev_rows, "shared_dev_rows", int, min_val=1))
            chunk_overhead += dev_rows * (_F32 * n_features + 2 * _I64 + _F32)
            gathered = 0
        # the carrying-on half's parameters, gradients and moments, shadows and buffers
        compaction = (4 * _F32 * n_params + shadows + buffers) // 2
        dev_losses = _F32 * n_params + gathered + dev_rows * (_F32 * pair + _I64 + 3 * _F32)
        adam_step = 2 * _F32 * max(fan_in * fan_out for fan_in, fan_out in shapes)
        early_stopping = held + max(compaction, dev_losses, adam_step)
    else:
        needed = config.steps * rows
        index_stream = _I64 * needed + _F32 * rows
        chunk_overhead += 2 * _I64 * (needed + n_train) + _I64 * needed
    return MemoryEstimate(
        parameters=_F32 * n_params,
        gradients=_F32 * n_params,
        optimizer=2 * _F32 * n_params,
        shadows=shadows,
        activations=buffers,
        minibatch=minibatch,
        index_stream=index_stream,
        early_stopping=early_stopping,
        evaluation=evaluation,
        chunk_overhead=chunk_overhead,
    )


def check_memory_budget(
    probe: MLP,
    n_features: int,
    n_classes: int,
    config: TrainingConfig,
    max_memory: float,
    *,
    sizes: Sequence[int] | None = None,
    n_eval: int = EVAL_ROWS_PER_BLOCK,
    per_example: bool = False,
    shared_dev_rows: int | None = None,
) -> None:
    """Refuse, before anything is allocated, a probe that cannot fit in ``max_memory`` alone.

    :func:`fit_evaluate` calls it first; a method or command can call it earlier (before
    loading models or writing anything) with the training-set sizes it will use.

    Args:
        probe, n_features, n_classes, config: as in :func:`estimate_memory`.
        max_memory: the GiB budget of one chunk of stacked probes (per worker).
        sizes: the probes' training-set sizes; each is estimated at its effective batch
            ``min(n, batch_size)`` (the rows its chunk will have), with the largest subset of
            that batch. Default: one probe of at least ``batch_size`` examples.
        n_eval, per_example, shared_dev_rows: as in :func:`estimate_memory`.

    Raises:
        ValueError: naming ``max_memory``, the probe, the estimate, its parts, and what to do
            (a larger ``max_memory``, smaller hidden sizes, a smaller batch size).
    """
    _POSITIVE(max_memory, "max_memory")
    sizes = np.asarray([config.batch_size] if sizes is None else sizes, dtype=np.int64)
    if sizes.size == 0:
        return
    effective = np.minimum(sizes, config.batch_size)
    worst, worst_rows = None, 0
    for rows in np.unique(effective):
        memory = estimate_memory(
            probe,
            n_features,
            n_classes,
            config,
            rows=int(rows),
            n_train=int(sizes[effective == rows].max()),
            n_eval=n_eval,
            per_example=per_example,
            shared_dev_rows=shared_dev_rows,
        )
        if worst is None or memory.chunk_bytes(1) > worst.chunk_bytes(1):
            worst, worst_rows = memory, int(rows)
    need = worst.chunk_bytes(1)
    if need <= max_memory * 2**30:
        return
    widths = " -> ".join(str(width) for width in (n_features, *probe.hidden, n_classes))
    raise ValueError(
        f"max_memory={max_memory:g} GiB cannot hold even one {probe.name} probe ({widths}, "
        f"{probe.parameter_count(n_features, n_classes):,} parameters) trained on minibatches "
        f"of {worst_rows} rows: it needs about {_size(need)} ({worst.describe()}; the peak "
        "is the larger of training, with the Adam moments, and evaluation, with the evaluation "
        f"block). Raise max_memory to at least {_gib_up(need)} GiB "
        "(the budget of one chunk of stacked probes, per worker process), or use smaller "
        "hidden sizes or a smaller batch size"
    )


@dataclass
class _ChunkRunner:
    """Trains and evaluates chunks of probes on tensors already on the device."""

    pool_x: torch.Tensor
    pool_y: torch.Tensor
    eval_x: torch.Tensor
    eval_y: torch.Tensor
    n_classes: int
    probe: MLP
    config: TrainingConfig
    report: Callable[[int], object]

    @classmethod
    def build(
        cls,
        arrays: tuple[np.ndarray, ...],
        n_classes: int,
        probe: MLP,
        config: TrainingConfig,
        device: torch.device,
        report: Callable[[int], object],
    ) -> _ChunkRunner:
        X_train, y_train, X_eval, y_eval = arrays
        with warnings.catch_warnings():
            # worker processes receive large arrays as read-only shared memory maps; the
            # engine only ever reads them, so sharing (not copying) them is safe
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            features = [
                torch.as_tensor(a, dtype=torch.float32, device=device) for a in (X_train, X_eval)
            ]
            labels = [
                torch.as_tensor(a, dtype=torch.int64, device=device) for a in (y_train, y_eval)
            ]
        return cls(
            features[0],
            labels[0],
            features[1],
            labels[1],
            n_classes,
            probe,
            config,
            report,
        )

    def run(
        self,
        subsets: list[np.ndarray],
        keys: list[tuple[int, ...]],
        rows: int,
        per_example: bool = False,
        dev_set: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """Train the probes of one chunk (``rows`` minibatch rows each) and evaluate them."""
        rngs = [np.random.default_rng(list(key)) for key in keys]
        # narrow minibatches are bound by parameter traffic, where bf16 shadows only add copies
        precision = self.config.precision if rows >= _BF16_MIN_ROWS else "f32"
        model = self.probe.stack(
            rngs, self.pool_x.shape[1], self.n_classes, rows, precision, self.pool_x.device
        )
        if self.config.early_stopping:
            epochs = _train_chunk_early_stopping(
                model,
                self.pool_x,
                self.pool_y,
                subsets,
                rngs,
                rows,
                self.config,
                self.report,
                dev_set,
            )
            metrics = model.evaluate(self.eval_x, self.eval_y, per_example=per_example)
            return {**metrics, "epochs": epochs}
        order, row_weights = _minibatch_order(
            subsets, rngs, self.config.batch_size, rows, self.config.steps
        )
        _train_chunk(model, self.pool_x, self.pool_y, order, row_weights, self.config, self.report)
        return model.evaluate(self.eval_x, self.eval_y, per_example=per_example)


def _run_task(
    arrays: tuple[np.ndarray, ...],
    n_classes: int,
    probe: MLP,
    config: TrainingConfig,
    subsets: list[np.ndarray],
    keys: list[tuple[int, ...]],
    rows: int,
    per_example: bool,
    dev_set: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """One chunk in a worker process, single-threaded (parallelise over probes, not
    inside matmuls)."""
    exit_with_parent()  # end this worker as soon as the run that started it dies (kill -9)
    torch.set_num_threads(1)
    runner = _ChunkRunner.build(arrays, n_classes, probe, config, torch.device("cpu"), _ignore)
    return runner.run(subsets, keys, rows, per_example, dev_set)


def _ignore(_: int) -> None:
    """Progress sink of worker processes (the parent reports progress per finished chunk)."""


def _run_in_workers(
    arrays: tuple[np.ndarray, ...],
    n_classes: int,
    probe: MLP,
    config: TrainingConfig,
    tasks: list[tuple[list[np.ndarray], list[tuple[int, ...]], int, bool, np.ndarray | None]],
    workers: int,
    bar: tqdm,
) -> list[dict[str, np.ndarray]]:
    """Run chunks in ``workers`` processes of joblib's reusable loky pool. Large arrays travel
    as shared memory maps, not copies; scripts need no ``__main__`` guard."""
    jobs = Parallel(n_jobs=workers, backend="loky", return_as="generator")(
        delayed(_run_task)(arrays, n_classes, probe, config, *task) for task in tasks
    )
    outputs = []
    for task, output in zip(tasks, jobs):
        outputs.append(output)
        bar.update(len(task[1]) * config.steps)
    return outputs


def _minibatch_order(
    subsets: list[np.ndarray],
    rngs: list[np.random.Generator],
    batch_size: int,
    rows: int,
    steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Pool indices of every minibatch, shape (P, steps * rows), and row weights (P, rows).

    Probe i trains on batches of b_i = min(n_i, batch_size) examples: it walks through its own
    subset in epochs, each epoch a fresh permutation drawn from its own stream (sampling
    without replacement); consecutive epochs are concatenated and cut into batches of b_i, so
    every example is seen once per epoch. A batch narrower than the chunk's ``rows`` is padded
    with copies of its first row, which carry weight 0; real rows carry weight 1/b_i, so the
    loss is each probe's mean cross-entropy over exactly its own batch.
    """
    order = np.empty((len(subsets), steps, rows), dtype=np.int64)
    row_weights = np.zeros((len(subsets), rows), dtype=np.float32)
    for row, (subset, rng) in enumerate(zip(subsets, rngs)):
        subset = np.asarray(subset, dtype=np.int64)
        batch = min(subset.size, batch_size)
        needed = steps * batch
        epochs = -(-needed // subset.size)
        permutations = rng.random((epochs, subset.size)).argsort(axis=1)
        order[row, :, :batch] = subset[permutations.reshape(-1)[:needed]].reshape(steps, batch)
        order[row, :, batch:] = order[row, :, :1]
        row_weights[row, :batch] = 1.0 / batch
    return order.reshape(len(subsets), steps * rows), row_weights


def _train_chunk(
    model: StackedMLP,
    pool_x: torch.Tensor,
    pool_y: torch.Tensor,
    order: np.ndarray,
    row_weights: np.ndarray,
    config: TrainingConfig,
    report: Callable[[int], object],
) -> None:
    """Run ``config.steps`` Adam updates on all stacked probes, in place; ``report`` receives
    the number of probe-updates done, every few steps."""
    n_probes, rows = row_weights.shape
    device = pool_x.device
    optimizer = torch.optim.Adam(model.parameters, lr=config.lr, fused=True)
    order_t = torch.from_numpy(order).to(device)
    weights_t = torch.from_numpy(row_weights).to(device).view(n_probes, rows, 1)
    x_batch = torch.empty(n_probes * rows, pool_x.shape[1], device=device)
    report_every = max(1, config.steps // 50)
    reported = 0
    for step in range(config.steps):
        idx = order_t[:, step * rows : (step + 1) * rows].reshape(-1)
        torch.index_select(pool_x, 0, idx, out=x_batch)
        labels = pool_y[idx].view(n_probes, rows, 1)
        model.accumulate_gradients(x_batch.view(n_probes, rows, -1), labels, weights_t)
        optimizer.step()
        model.refresh()
        if (step + 1) % report_every == 0 or step + 1 == config.steps:
            report(n_probes * (step + 1 - reported))
            reported = step + 1


def _train_chunk_early_stopping(
    model: StackedMLP,
    pool_x: torch.Tensor,
    pool_y: torch.Tensor,
    subsets: list[np.ndarray],
    rngs: list[np.random.Generator],
    rows: int,
    config: TrainingConfig,
    report: Callable[[int], object],
    dev_set: np.ndarray | None = None,
) -> np.ndarray:
    """``config.early_stopping`` training of one chunk; the epochs each probe ran (on
    ``dev_set``, when given, instead of each probe's own dev split)."""
    return train_with_dev_stopping(
        model,
        pool_x,
        pool_y,
        subsets,
        rngs,
        rows,
        batch_size=config.batch_size,
        lr=config.lr,
        dev_fraction=config.dev_fraction,
        lr_decay=config.lr_decay,
        patience=config.patience,
        max_epochs=config.max_epochs,
        report=report,
        compact=True,
        dev_set=dev_set,
    )
