"""The memory budget of the engine: what one probe of a chunk of stacked probes allocates,
estimated from its architecture before anything is allocated, and the refusal of a probe that
cannot fit ``max_memory`` (GiB per chunk, per worker process). ``benchmarks/memory_estimate.py``
compares the estimate with measured peaks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from probemeter._method import GPU_MEMORY_FRACTION, MAX_MEMORY_GIB
from probemeter._validation import check_scalar, positive
from probemeter.probes import MLP
from probemeter.probes.mlp import Direction
from probemeter.probes.stacked_mlp import EVAL_ROWS_PER_BLOCK
from probemeter.training.config import BF16_MIN_ROWS, TrainingConfig
from probemeter.training.directions import BLOCK_ROWS, direction_family

__all__ = [
    "MemoryEstimate",
    "check_memory_budget",
    "estimate_memory",
    "memory_budget",
    "probes_per_chunk",
]


def memory_budget(max_memory: float | None, device: torch.device) -> float:
    """The GiB budget of one chunk of stacked probes on ``device``.

    ``max_memory`` when given (validated later by :func:`check_memory_budget`). By default
    (None): :data:`~probemeter._method.MAX_MEMORY_GIB` (2 GiB) per worker process on the CPU,
    where several workers share the machine's memory; on a CUDA device,
    :data:`~probemeter._method.GPU_MEMORY_FRACTION` (half) of the memory the device has free
    now (``torch.cuda.mem_get_info``), so that a large GPU stacks many probes per chunk (one
    chunk at a time trains there) while the data, the matmul workspace and other processes
    keep the rest; at least the CPU default's 2 GiB.
    """
    if max_memory is not None:
        return max_memory
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return max(MAX_MEMORY_GIB, GPU_MEMORY_FRACTION * free / 2**30)
    return MAX_MEMORY_GIB


def probes_per_chunk(memory: MemoryEstimate, max_memory: float) -> int:
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
#: (packing buffers): the most benchmarks/memory_estimate.py measured on one CPU thread, with a
#: margin (benchmarks/README.md, "Training internals")
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
        closed_form: for a direction probe (:class:`~probemeter.probes.Direction`), what
            its closed-form fit holds at its peak, as its family declares it
            (:data:`~probemeter.training.directions.DIRECTION_FAMILIES`: class sums, for LDA
            the d × d covariances, the calibration's scores); 0 for a trained probe.
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
    closed_form: int = 0

    @property
    def _resident(self) -> int:
        return (
            self.parameters + self.gradients + self.shadows + self.activations + self.index_stream
        )

    @property
    def step_state(self) -> int:
        """Bytes per probe that every training step reads or writes: parameters, gradients,
        Adam moments, bf16 shadows, activation buffers and minibatch temporaries (what has to
        stay in the CPU's cache for a step on few rows not to wait on memory,
        :mod:`probemeter.training.cache`)."""
        return (
            self.parameters
            + self.gradients
            + self.optimizer
            + self.shadows
            + self.activations
            + self.minibatch
        )

    @property
    def training(self) -> int:
        """Bytes per probe while the chunk trains."""
        return (
            self._resident
            + self.minibatch
            + self.optimizer
            + self.early_stopping
            + self.closed_form
        )

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
            "closed_form": "closed-form fit",
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
    row_bytes: float | None = None,
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
        row_bytes: bytes of one gathered row of features; default a dense float32 row,
            4 · ``n_features``; for sparse features
            :func:`~probemeter.probes.sparse_inputs.sparse_row_bytes`.
    """
    row_bytes = _F32 * n_features if row_bytes is None else math.ceil(row_bytes)
    rows = config.batch_size if rows is None else int(check_scalar(rows, "rows", int, min_val=1))
    n_train = rows if n_train is None else int(check_scalar(n_train, "n_train", int, min_val=1))
    n_eval = int(check_scalar(n_eval, "n_eval", int, min_val=0))
    if isinstance(probe, Direction):
        return _direction_memory(probe, n_features, n_classes, n_train, n_eval, per_example)
    shapes = probe.layer_shapes(n_features, n_classes)
    weights = sum(fan_in * fan_out for fan_in, fan_out in shapes)
    n_params = probe.parameter_count(n_features, n_classes)
    hidden = sum(probe.hidden)
    # "auto" may resolve to bf16 (probemeter.training.precision): counted at bf16's footprint
    low = config.precision != "f32" and rows >= BF16_MIN_ROWS
    element = _BF16 if low else _F32
    # with a scalar mix: the mixed inputs (one layer's width) and their gradient; with span
    # pooling, also the projections and attention of every span token
    mixed = shapes[0][0] if probe.mix else 0
    # pre-activations of every layer; activations, deltas and (with dropout) masks of hidden ones
    masks = hidden if probe.dropout and probe.hidden else 0
    buffers = rows * element * (hidden + n_classes + 2 * hidden + masks)
    buffers += _F32 * probe.stage_floats(n_features, rows) + (rows * mixed * _BF16 if low else 0)
    # gathered inputs, their indices and labels, the softmax and its scatter operand
    minibatch = rows * (row_bytes + 2 * _I64 + _F32 * (n_classes + 1))
    if low:  # bf16 inputs, the f32 logits of the softmax, the bf16 upstream gradient
        minibatch += rows * (_BF16 * n_features + _F32 * n_classes + _BF16 * n_classes)
    shadows = _BF16 * (n_params + weights) if low else 0
    # the widest pair of consecutive outputs alive together (logits and log-probabilities last)
    widths = [*probe.hidden, n_classes, n_classes]
    pair = max(a + b for a, b in itertools.pairwise(widths))
    block = min(n_eval, EVAL_ROWS_PER_BLOCK)
    # losses, truncated losses, int64 predictions and their comparison with the labels (and the
    # block's mixed inputs or pooled spans)
    evaluation = block * (_F32 * pair + 2 * _F32 + _I64 + 1)
    evaluation += _F32 * probe.stage_floats(n_features, block, training=False)
    if per_example:  # every row's f32 loss and int32 prediction, in blocks, then concatenated
        evaluation += n_eval * 2 * (_F32 + _F32)
    early_stopping = index_stream = 0
    chunk_overhead = _WORKSPACE_BYTES + (_BF16_WORKSPACE_BYTES if low else 0)
    if config.early_stopping:
        # best-development parameters; the probe's training indices and their permutation
        held = _F32 * n_params + 2 * _I64 * n_train
        if shared_dev_rows is None:  # its own development rows: features, labels, index, weight
            dev_rows = max(1, round(config.dev_fraction * n_train))
            held += dev_rows * (row_bytes + 2 * _I64 + _F32)
            gathered = dev_rows * row_bytes  # copied for the probes ending an epoch
        else:  # one set for all probes, gathered once per chunk and read through views
            dev_rows = int(check_scalar(shared_dev_rows, "shared_dev_rows", int, min_val=1))
            chunk_overhead += dev_rows * (row_bytes + 2 * _I64 + _F32)
            gathered = 0
        # the carrying-on half's parameters, gradients and moments, shadows and buffers
        compaction = (4 * _F32 * n_params + shadows + buffers) // 2
        dev_row = _F32 * pair + _I64 + 3 * _F32
        dev_row += _F32 * probe.stage_floats(n_features, 1, training=False)
        dev_losses = _F32 * n_params + gathered + dev_rows * dev_row
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


def _direction_memory(
    probe: Direction,
    n_features: int,
    n_classes: int,
    n_train: int,
    n_eval: int,
    per_example: bool,
) -> MemoryEstimate:
    """A direction probe's bytes: its linear layer, its family's fit, and the evaluation of
    a linear probe; per chunk, a block of rows gathered in float32 and float64 and the
    workspace (nothing is trained: no gradients, moments or minibatches)."""
    n_params = probe.parameter_count(n_features, n_classes)
    block = min(n_eval, EVAL_ROWS_PER_BLOCK)
    evaluation = block * (_F32 * 2 * n_classes + 2 * _F32 + _I64 + 1)
    if per_example:
        evaluation += n_eval * 2 * (_F32 + _F32)
    fit = direction_family(probe.family, "probe").fit_bytes(n_features, n_classes, n_train)
    return MemoryEstimate(
        parameters=_F32 * n_params,
        gradients=0,
        optimizer=0,
        shadows=0,
        activations=_F32 * n_classes,
        minibatch=0,
        index_stream=0,
        early_stopping=0,
        evaluation=evaluation,
        chunk_overhead=_WORKSPACE_BYTES + BLOCK_ROWS * n_features * (_F32 + 2 * 8),
        closed_form=fit,
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
    row_bytes: float | None = None,
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
        n_eval, per_example, shared_dev_rows, row_bytes: as in :func:`estimate_memory`.

    Raises:
        ValueError: naming ``max_memory``, the probe, the estimate, its parts, and what to do
            (a larger ``max_memory``, smaller hidden sizes, a smaller batch size).
    """
    positive()(max_memory, "max_memory")
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
            row_bytes=row_bytes,
        )
        if worst is None or memory.chunk_bytes(1) > worst.chunk_bytes(1):
            worst, worst_rows = memory, int(rows)
    need = worst.chunk_bytes(1)
    if need <= max_memory * 2**30:
        return
    widths = " -> ".join(str(width) for width in (n_features, *probe.hidden, n_classes))
    if isinstance(probe, Direction):
        raise ValueError(
            f"max_memory={max_memory:g} GiB cannot hold even one {probe.name} direction probe "
            f"({widths}) fitted on {int(sizes.max())} examples: it needs about {_size(need)} "
            f"({worst.describe()}). Raise max_memory to at least {_gib_up(need)} GiB (the "
            "budget of one chunk of probes, per worker process), or use fewer features"
        )
    raise ValueError(
        f"max_memory={max_memory:g} GiB cannot hold even one {probe.name} probe ({widths}, "
        f"{probe.parameter_count(n_features, n_classes):,} parameters) trained on minibatches "
        f"of {worst_rows} rows: it needs about {_size(need)} ({worst.describe()}; the peak "
        "is the larger of training, with the Adam moments, and evaluation, with the evaluation "
        f"block). Raise max_memory to at least {_gib_up(need)} GiB "
        "(the budget of one chunk of stacked probes, per worker process), or use smaller "
        "hidden sizes or a smaller batch size"
    )
