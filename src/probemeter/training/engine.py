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
  probes are grouped by effective batch size, neighbouring groups merged (the narrower padded
  with zero-weight rows) where another chunk's fixed step cost would exceed the padding's
  arithmetic — on a GPU nearly always (``_STEP_COSTS``); on the CPU a chunk on few rows holds
  no more probes than fit the cache (:mod:`probemeter.training.cache`);
* every probe takes the same number of Adam updates whatever its subset size (Whitney et al.,
  App. C.1: "at each dataset size n we perform the same number of updates");
* probes may differ in learning rate and L2 strength (``lr``/``weight_decay`` per probe: a grid
  of settings) and still share chunks: each run of rows with equal settings takes one fused
  Adam call (:class:`~probemeter.training.early_stopping.BatchedAdam`);
* a probe's random stream (initial weights and minibatch order) is keyed by its own ``key``
  tuple, never by its position, so results do not depend on chunking or on which other probes
  are trained alongside it.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from joblib import Parallel, delayed
from tqdm.auto import tqdm

from probemeter._device import resolve_device, single_threaded
from probemeter._execution import Execution, execution_of
from probemeter._multilabel import check_label_sets, uniform_nats
from probemeter._resident import FileRows, release
from probemeter.probes import MLP
from probemeter.probes.mlp import Direction
from probemeter.probes.sparse_inputs import SparseRows, feature_tensor, sparse_row_bytes
from probemeter.probes.stacked_mlp import EVAL_ROWS_PER_BLOCK, StackedMLP
from probemeter.training import newton
from probemeter.training.cache import CACHE_BOUND_ROWS, cache_budget
from probemeter.training.config import BF16_MIN_ROWS, NEWTON_MAX_ITER, TrainingConfig
from probemeter.training.directions import PoolRows, direction_family
from probemeter.training.early_stopping import BatchedAdam, train_with_dev_stopping
from probemeter.training.fused_adam import FusedAdam
from probemeter.training.memory import (
    check_memory_budget,
    estimate_memory,
    memory_budget,
    probes_per_chunk,
)
from probemeter.training.precision import concrete_config
from probemeter.training.workers import exit_with_parent, worker_count

__all__ = ["EngineCall", "ProbeEvaluation", "fit_evaluate", "fit_evaluate_many", "warm_workers"]

#: cost model of chunk planning (speed only), by device type: the fixed cost of one training
#: step of a chunk (seconds) and the arithmetic rate of its small batched matmuls (FLOP/s),
#: measured on a 2-core CPU and on a GPU (``benchmarks/gpu_chunks.py``; figures in
#: benchmarks/README.md). On a GPU a chunk step's kernel launches and Python cost many times
#: its arithmetic, so padding narrow probes into one wide chunk costs far less than the steps
#: of another chunk.
_STEP_COSTS = {"cpu": (4e-4, 5e10), "cuda": (5e-4, 1e13)}
#: a probe whose test loss exceeds this many times ln K nats (the uniform code) has diverged
DIVERGED_FACTOR = 100
#: below this much training arithmetic (a second or two of work) worker processes and intra-op
#: threads cost more than they save: train in this process, on one thread
_SMALL_WORK_FLOPS = 2e10


@dataclass(frozen=True)
class ProbeEvaluation:
    """Per-probe test metrics, aligned with the probes passed to :func:`fit_evaluate`.

    Attributes:
        loss: mean cross-entropy on the evaluation set, in nats (multi-label targets: the
            binary cross-entropy summed over the K labels, :mod:`probemeter.probes.multilabel`).
        loss_truncated: mean of min(cross-entropy, 1 nat): the [0, 1]-bounded loss of
            Whitney et al., App. A, for Hoeffding intervals.
        accuracy: fraction of evaluation examples whose arg-max prediction is the label
            (multi-label: whose predicted label set is exactly the target's).
        nll: only with ``per_example=True``: (P, n_eval) float32 cross-entropy of every
            evaluation example, in nats (online codes sum it over blocks; paired tests need it).
        predictions: only with ``per_example=True``: (P, n_eval) int32 arg-max predictions
            (multi-label: (P, n_eval, K) uint8 0/1, label k predicted when σ(z_k) > 0.5).
        epochs: only with ``config.early_stopping``: (P,) epochs each probe trained.
        iterations, converged: only with ``config.solver = "newton"``: (P,) each probe's Newton
            iterations (every stage, :mod:`probemeter.training.newton`) and whether it reached
            ``config.tol`` (a probe that did not is warned of, its numbers not those of the
            optimum).
        parameters: only with ``return_parameters=True``: the trained parameters, per layer
            ``(W, b)`` stacked on the probe axis, ``W`` of shape (P, fan_in, fan_out) and ``b``
            of shape (P, fan_out), float32 on the host: probe i computes
            ``h = relu(h @ W[i] + b[i])`` layer after layer (no ReLU after the last). They
            are exactly the parameters the metrics were computed with (with early stopping,
            those of each probe's best development epoch).
        stack_rows: only with ``return_parameters=True``: (P,) the row each probe held in the
            stack of probes it was evaluated in, with which
            :func:`~probemeter.probes.stacked_mlp.evaluate_as_row` reproduces its metrics bit
            for bit.
        mix_logits, mix_scale: only for probes with a scalar mix (``probe.mix``): (P, L) the
            trained mixing logits a and (P,) the scale γ; the layer weights are softmax(a).
        micro_f1, macro_f1: only for multi-label targets: (P,) F1 scores on the evaluation
            set (:func:`probemeter._multilabel.f1_scores`).
        pool_nll, pool_predictions: only with ``pool_rows``: per probe, the cross-entropy
            (float32, nats) and arg-max prediction (as in ``predictions``) of each pool example
            in its ``pool_rows`` entry, in that order; None for a probe given none.
        span_weight, span_bias, span_score: only with ``return_parameters=True`` for probes
            with self-attentive span pooling (``probe.span``): each span s's pooling, W
            (P, S, d, q), b (P, S, q) and w (P, S, q) (:mod:`probemeter.probes.span_attention`).
    """

    loss: np.ndarray
    loss_truncated: np.ndarray
    accuracy: np.ndarray
    nll: np.ndarray | None = None
    predictions: np.ndarray | None = None
    epochs: np.ndarray | None = None
    iterations: np.ndarray | None = None
    converged: np.ndarray | None = None
    parameters: tuple[tuple[np.ndarray, np.ndarray], ...] | None = None
    stack_rows: np.ndarray | None = None
    mix_logits: np.ndarray | None = None
    mix_scale: np.ndarray | None = None
    micro_f1: np.ndarray | None = None
    macro_f1: np.ndarray | None = None
    span_weight: np.ndarray | None = None
    span_bias: np.ndarray | None = None
    span_score: np.ndarray | None = None
    pool_nll: tuple[np.ndarray | None, ...] | None = None
    pool_predictions: tuple[np.ndarray | None, ...] | None = None

    def select(self, probes: np.ndarray) -> ProbeEvaluation:
        """The evaluation of the probes at positions ``probes`` only, in that order (every
        per-probe field; ``parameters`` layer by layer)."""
        chosen: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None:
                chosen[item.name] = None
            elif item.name == "parameters":
                chosen[item.name] = tuple((w[probes], b[probes]) for w, b in value)
            elif isinstance(value, tuple):
                chosen[item.name] = tuple(value[i] for i in probes)
            else:
                chosen[item.name] = value[probes]
        return ProbeEvaluation(**chosen)


def fit_evaluate(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    n_classes: int,
    subsets: Sequence[np.ndarray],
    keys: Sequence[tuple[int, ...]],
    probe: MLP | Sequence[MLP],
    config: TrainingConfig,
    *,
    execution: Execution | None = None,
    per_example: bool = False,
    dev_set: np.ndarray | None = None,
    return_parameters: bool = False,
    pool_rows: Sequence[np.ndarray | None] | None = None,
    lr: Sequence[float] | np.ndarray | None = None,
    weight_decay: Sequence[float] | np.ndarray | None = None,
    **old: Any,
) -> ProbeEvaluation:
    """Train one probe per entry of ``subsets`` and evaluate each on ``(X_eval, y_eval)``.

    Args:
        X_train, y_train: the training pool, float32 (n_pool, d) and int64 (n_pool,); or,
            for multi-label targets, y_train a 0/1 indicator matrix (n_pool, K): the probes
            then have K sigmoid outputs trained with binary cross-entropy per label (Tenney et
            al. 2019; :mod:`probemeter.probes.multilabel`). The
            features may be a scipy.sparse CSR matrix (with ``X_eval`` one too): minibatches
            are then gathered as sparse rows and the first layer computes sparse-dense
            products, never a dense copy of the pool (:mod:`probemeter.probes.sparse_inputs`;
            in f32 whatever ``config.precision``; no mix or span stage).
        X_eval, y_eval: the evaluation set shared by all probes (labels like ``y_train``;
            evaluated in blocks of ``EVAL_ROWS_PER_BLOCK`` rows, sparse ones as sparse rows).
        n_classes: number of output logits K.
        subsets: per probe, the indices into the pool of its training examples.
        keys: per probe, a tuple of integers seeding its own random stream (initial weights
            and minibatch order).
        probe: the probe architecture; or one per entry of ``subsets``, several
            architectures trained in this one call (each chunk stacks one architecture; all
            chunks share the workers, so a small family's chunks fill the gaps a large one
            leaves). Several architectures must agree on ``mix``, ``span`` and
            ``projection`` and cannot ``return_parameters``.
        config: optimisation settings.
        execution: where and how the probes train (:class:`~probemeter.Execution`; None:
            ``Execution()``). Its ``n_jobs``: CPU worker processes, each single-threaded,
            sharing the chunks of probes (``-1``: one per usable CPU,
            :func:`~probemeter.training.workers.worker_count`; ``None`` or ``1``: train in this
            process with torch's own threads); on CUDA the probes train in this process.
            Results do not depend on it. Its ``max_memory``: GiB budget for one chunk of
            stacked probes (per worker; None: sized to the device by :func:`memory_budget`,
            2 GiB on the CPU); the probe axis is
            split into chunks that fit it (:func:`estimate_memory`: parameters, gradients, Adam
            state, bf16 shadows, minibatch activations, index stream, evaluation block). A
            probe that cannot fit in it even alone is refused with a ``ValueError`` before
            anything is allocated or trained. The features and labels are not counted: they
            are the caller's arrays, which the chunks share (on the CPU float32 features are
            used in place, and worker processes receive them as shared memory maps); on an
            accelerator they are copied to it once, outside any chunk. Its ``progress``: a
            bar over probe-updates.
        per_example: also return every evaluation example's cross-entropy and prediction
            (``nll`` and ``predictions``, P × n_eval each).
        dev_set: only with ``config.early_stopping``: indices into the pool of one development
            set that every probe early-stops on, training on its whole subset (Voita & Titov
            §3.1 stop on a development split apart from the data); default: each probe's own
            ``config.dev_fraction`` of its subset.
        return_parameters: also return every probe's trained parameters (``parameters``),
            copied to the host, and its row in its chunk (``stack_rows``); training, chunking
            and metrics are the same either way.
        pool_rows: per probe, indices into the pool (or None) on which it is also evaluated
            example by example after training, on its own (``pool_nll`` and
            ``pool_predictions``): the online code scores each block's probe on the block it
            transmits next only, instead of every probe on the whole pool. The rows are
            gathered block by block from the shared pool, never copied whole.
        lr, weight_decay: per probe, its Adam learning rate and L2 strength λ, in place of
            ``config.lr`` and ``config.weight_decay`` (each probe minimises its mean loss +
            (λ/2) Σ ‖W‖² over its layers' weight matrices): a grid of settings trains side by
            side in this one call, its probes stacked in the same chunks
            (:class:`~probemeter.training.early_stopping.BatchedAdam` updates each run of
            probes with equal settings by one fused kernel call). A chunk whose probes share
            one learning rate and no penalty takes one fused Adam call per step
            (:class:`~probemeter.training.fused_adam.FusedAdam`), as without these arguments.
    """
    call = EngineCall(
        X_train, y_train, X_eval, y_eval, n_classes, subsets, keys, probe, config,
        per_example=per_example, dev_set=dev_set, return_parameters=return_parameters,
        pool_rows=pool_rows, lr=lr, weight_decay=weight_decay,
    )  # fmt: skip
    execution = execution_of(execution, old, "fit_evaluate")
    trained = _train([call], execution)
    return _evaluations(trained)[0]


@dataclass(frozen=True)
class EngineCall:
    """The arguments of one :func:`fit_evaluate` call but those every call of
    :func:`fit_evaluate_many` shares (``execution``):
    its data, probes, training settings and what it returns, as :func:`fit_evaluate` documents
    them."""

    X_train: Any
    y_train: np.ndarray
    X_eval: Any
    y_eval: np.ndarray
    n_classes: int
    subsets: Sequence[np.ndarray]
    keys: Sequence[tuple[int, ...]]
    probe: MLP | Sequence[MLP]
    config: TrainingConfig
    per_example: bool = False
    dev_set: np.ndarray | None = None
    return_parameters: bool = False
    pool_rows: Sequence[np.ndarray | None] | None = None
    lr: Sequence[float] | np.ndarray | None = None
    weight_decay: Sequence[float] | np.ndarray | None = None


def fit_evaluate_many(
    calls: Sequence[EngineCall],
    *,
    execution: Execution | None = None,
    **old: Any,
) -> list[ProbeEvaluation]:
    """:func:`fit_evaluate` for several calls at once, e.g. the same probes on every layer of
    a sweep: each call's probes are planned into exactly the chunks :func:`fit_evaluate` would
    make of them alone, then the chunks of all calls train through one pass of the worker
    processes, costliest first, each on its own call's arrays (shared-memory maps travel by
    reference, :mod:`~probemeter.training.shared_memory`). Separate calls each end with a tail
    in which one worker finishes the last chunk while the others idle, and a small call trains
    on one thread of this process; here the chunks of the other calls fill those gaps.

    Every probe's numbers are those of its call made alone, bit for bit: the same chunks, and
    every chunk trains on one thread whether in a worker or in this process — except a call
    of a single chunk that is not small work, which alone trains in this process on torch's
    threads and here in a worker on one (the same arithmetic, up to float rounding of
    threaded reductions).

    The runner does not use it for the units of a layer sweep: on gold EWT's UPOS sweep (14
    representations, ``benchmarks/sweep_planning.py``) each curve's plan already balances its
    chunks over the workers, and one plan saved no wall time beyond the machine's noise.

    Args:
        calls: the calls, each checked as :func:`fit_evaluate` checks its arguments.
        execution: as for :func:`fit_evaluate`, shared by all calls (its ``max_memory``
            bounds each chunk, whatever its call).

    Returns:
        One :class:`ProbeEvaluation` per call, in the order of ``calls``.

    Raises:
        ValueError: an entry of ``calls`` that is no :class:`EngineCall` (naming its
            position), or what :func:`fit_evaluate` raises for its arguments.
    """
    execution = execution_of(execution, old, "fit_evaluate_many")
    trained = _train(calls, execution)
    return _evaluations(trained)


def _train(
    calls: Sequence[EngineCall],
    execution: Execution,
) -> list[_Call]:
    """The calls checked, planned and trained, their results collected
    (:func:`fit_evaluate_many`)."""
    calls = list(calls)
    for position, call in enumerate(calls):
        if not isinstance(call, EngineCall):
            raise ValueError(f"calls[{position}] must be an EngineCall; got {type(call).__name__}")
    # precision="auto" becomes f32 or bf16 here, decided once per process for the device
    calls = [replace(call, config=concrete_config(call.config, execution.device)) for call in calls]
    # check: the inputs, and that every probe fits the memory budget alone
    checked = [_Call.check(call) for call in calls]
    torch_device = resolve_device(execution.device)
    max_memory = memory_budget(execution.max_memory, torch_device)
    for call in checked:
        call.check_memory(max_memory)  # validates max_memory too
    workers = (
        1 if torch_device.type != "cpu" else worker_count(execution.n_jobs)
    )  # validates n_jobs
    # plan: each call's chunks as if alone (on one thread in this process when its work is
    # small), then the chunks of all calls together
    for call in checked:
        call.plan(max_memory, workers, torch_device.type)
    work = [(call, chunk) for call in checked for chunk in call.chunks]
    small = sum(call.flops for call in checked) < _SMALL_WORK_FLOPS
    # run
    outputs = _run(work, torch_device, workers=1 if small else workers, progress=execution.progress)
    # collect
    for (call, chunk), metrics in zip(work, outputs):
        call.results.add(chunk, metrics)
    return checked


def _evaluations(calls: list[_Call]) -> list[ProbeEvaluation]:
    """Each trained call's :class:`ProbeEvaluation`; warns, at the line that called
    :func:`fit_evaluate` or :func:`fit_evaluate_many`, of diverged probes."""
    for call in calls:
        if call.subsets:
            uniform = uniform_nats(call.n_classes, np.ndim(call.arrays[1]) == 2)
            losses = call.results.fields["loss"]
            _warn_if_diverged(losses, call.subsets, uniform, call.rates[0], stacklevel=4)
            converged = call.results.fields.get("converged")
            if converged is not None and not converged.all():
                first = int(np.flatnonzero(~converged)[0])
                warnings.warn(
                    f"solver='newton': {int((~converged).sum())} of {converged.size} probes "
                    f"did not reach tol={call.config.tol:g} in {NEWTON_MAX_ITER} iterations "
                    f"(first: n={len(call.subsets[first])}); their numbers are not those of "
                    "the optimum (ProbeEvaluation.converged)",
                    RuntimeWarning,
                    stacklevel=4,
                )
    return [call.results.evaluation() for call in calls]


@dataclass
class _Call:
    """One :class:`EngineCall`, checked (:meth:`check`), then planned (:meth:`plan`) and
    filled chunk by chunk (:attr:`results`)."""

    arrays: tuple[Any, ...]
    n_classes: int
    subsets: Sequence[np.ndarray]
    keys: Sequence[tuple[int, ...]]
    config: TrainingConfig
    families: dict[MLP, np.ndarray]
    pool_rows: list[np.ndarray | None] | None
    rates: tuple[np.ndarray, np.ndarray]
    request: _Request
    row_bytes: dict[MLP, float | None]
    results: _Results | None = None
    chunks: list[_Chunk] = field(default_factory=list)
    #: its training arithmetic (:func:`_training_flops`)
    flops: float = 0.0
    #: whether its work is small enough to train on one thread in this process, alone
    small: bool = True

    @classmethod
    def check(cls, call: EngineCall) -> _Call:
        """``call``'s arguments checked (a ValueError naming the argument otherwise)."""
        X_train, y_train, X_eval, y_eval, n_classes = (
            call.X_train, call.y_train, call.X_eval, call.y_eval, call.n_classes
        )  # fmt: skip
        subsets, keys, config = call.subsets, call.keys, call.config
        _check_engine_inputs(X_train, y_train, X_eval, y_eval, n_classes, subsets, keys)
        families = _families(call.probe, len(subsets), call.return_parameters)
        _check_directions(families, X_train, y_train, n_classes)
        pool_rows = _check_pool_rows(call.pool_rows, len(subsets), X_train.shape[0])
        dev_set = _check_dev_set(call.dev_set, config, X_train.shape[0])
        rates = _probe_settings(call.lr, call.weight_decay, config, len(subsets))
        _check_newton(config, families, X_train, y_train, rates[1])
        request = _Request(call.per_example, dev_set, call.return_parameters, len(y_eval))
        row_bytes = {family: _sparse_row_bytes(X_train, family, n_classes) for family in families}
        return cls(
            (X_train, y_train, X_eval, y_eval), n_classes, subsets, keys, config, families,
            pool_rows, rates, request, row_bytes,
        )  # fmt: skip

    @property
    def dims(self) -> tuple[int, int]:
        """(features, classes) of its data."""
        return self.arrays[0].shape[1], self.n_classes

    def check_memory(self, max_memory: float) -> None:
        """Refuse (ValueError) a probe that cannot fit ``max_memory`` GiB even alone."""
        if self.config.solver == "newton":
            largest = max((len(s) for s in self.subsets), default=0)
            need = newton.memory_bytes(*self.dims, largest) / 2**30
            if need > max_memory:
                raise ValueError(
                    f"max_memory: a probe of {largest} rows solved by solver='newton' needs "
                    f"{need:.2f} GiB, over the budget of {max_memory:g} GiB"
                )
            return
        for family, members in self.families.items():
            sizes = [len(self.subsets[i]) for i in members]
            check_memory_budget(
                family, *self.dims, self.config, max_memory, sizes=sizes,
                row_bytes=self.row_bytes[family], **self.request.memory_keywords(),
            )  # fmt: skip

    def plan(self, max_memory: float, workers: int, device_type: str) -> None:
        """Its result arrays and its chunks, as :func:`fit_evaluate` plans them for this call
        alone: for ``workers`` processes, or one when its work is small."""
        X_train, _, _, y_eval = self.arrays
        # the settings all architectures share (mix, span) shape the results
        self.results = _Results.allocate(
            next(iter(self.families)), len(self.subsets), X_train, y_eval, self.n_classes,
            self.config, self.request, pooled=self.pool_rows is not None,
        )  # fmt: skip
        if not self.subsets:
            return
        self.flops = sum(
            sum(newton.fit_flops(*self.dims, len(self.subsets[i])) for i in members)
            if self.config.solver == "newton"
            else _training_flops([self.subsets[i] for i in members], family, self.dims, self.config)
            if not isinstance(family, Direction)
            else _direction_flops([self.subsets[i] for i in members], family, self.dims)
            for family, members in self.families.items()
        )
        self.small = self.flops < _SMALL_WORK_FLOPS
        self.chunks = _plan(
            self.families, self.subsets, self.keys, self.pool_rows, self.rates, self.dims,
            self.config, self.request, max_memory=max_memory,
            workers=1 if self.small else workers, row_bytes=self.row_bytes,
            device_type=device_type,
        )  # fmt: skip


@dataclass(frozen=True)
class _Request:
    """What every chunk of one :func:`fit_evaluate` call returns besides its test metrics, and
    the development set its probes early-stop on (``fit_evaluate``'s arguments, checked)."""

    per_example: bool
    dev_set: np.ndarray | None
    return_parameters: bool
    n_eval: int

    def memory_keywords(self) -> dict[str, Any]:
        """The keywords of :func:`estimate_memory` that these outputs and this development
        set set."""
        return {
            "n_eval": self.n_eval,
            "per_example": self.per_example,
            "shared_dev_rows": None if self.dev_set is None else len(self.dev_set),
        }


@dataclass(frozen=True)
class _Chunk:
    """Probes trained stacked in one training loop: one architecture, one minibatch width.

    Attributes:
        probe: their architecture.
        members: their positions among the probes of the :func:`fit_evaluate` call.
        rows: minibatch rows of the stack, the widest member's ``min(n, batch_size)``.
        subsets, keys: each member's training indices and random-stream key.
        pool_rows: each member's pool rows to score example by example (None: no member is).
        work: its estimated arithmetic, by which chunks are ordered (costliest first).
        lr, weight_decay: each member's learning rate and L2 strength.
    """

    probe: MLP
    members: np.ndarray
    rows: int
    subsets: list[np.ndarray]
    keys: list[tuple[int, ...]]
    pool_rows: list[np.ndarray | None] | None
    work: float
    lr: np.ndarray
    weight_decay: np.ndarray

    @classmethod
    def of(
        cls,
        probe: MLP,
        members: np.ndarray,
        rows: int,
        calls: tuple[Sequence[np.ndarray], Sequence[Any], list[Any] | None],
        rates: tuple[np.ndarray, np.ndarray],
        work: float,
    ) -> _Chunk:
        """The chunk of ``members`` of the call whose per-probe ``subsets, keys, pool_rows``
        are ``calls`` and learning rates and L2 strengths ``rates``."""
        subsets, keys, pool_rows = calls
        return cls(
            probe,
            members,
            rows,
            [subsets[i] for i in members],
            [keys[i] for i in members],
            None if pool_rows is None else [pool_rows[i] for i in members],
            work,
            rates[0][members],
            rates[1][members],
        )


def _plan(
    families: dict[MLP, np.ndarray],
    subsets: Sequence[np.ndarray],
    keys: Sequence[tuple[int, ...]],
    pool_rows: list[np.ndarray | None] | None,
    rates: tuple[np.ndarray, np.ndarray],
    dims: tuple[int, int],
    config: TrainingConfig,
    request: _Request,
    *,
    max_memory: float,
    workers: int,
    row_bytes: dict[MLP, float | None],
    device_type: str,
) -> list[_Chunk]:
    """Every architecture's chunks (:func:`_plan_chunks`), costliest first over all of them,
    so that a small family's chunks fill the gaps a large one leaves in the workers; ``rates``
    are every probe's learning rate and L2 strength (probes of a grid of settings share
    chunks like any others)."""
    chunks = []
    for family, indices in families.items():
        if config.solver == "newton":
            chunks += _newton_chunks(
                family, indices, subsets, keys, pool_rows, rates, dims, max_memory, workers
            )
            continue
        if isinstance(family, Direction):
            chunks += _direction_chunks(
                family, indices, subsets, keys, pool_rows, rates, dims, config, request,
                max_memory=max_memory, workers=workers,
            )  # fmt: skip
            continue
        forward = family.forward_flops(*dims)
        for members, rows in _plan_chunks(
            [subsets[i] for i in indices],
            family,
            dims,
            config,
            max_memory,
            workers,
            row_bytes=row_bytes[family],
            cache_bytes=cache_budget() if device_type == "cpu" else None,
            device_type=device_type,
            **request.memory_keywords(),
        ):
            members = indices[members]
            work = forward * _work(members, rows, subsets, config)
            chunks.append(_Chunk.of(family, members, rows, (subsets, keys, pool_rows), rates, work))
    return sorted(chunks, key=lambda chunk: -chunk.work)


@dataclass
class _Results:
    """The arrays of a :class:`ProbeEvaluation`, allocated for every probe of the call and
    filled chunk by chunk (:meth:`add`)."""

    fields: dict[str, Any]
    parameters: tuple[tuple[np.ndarray, np.ndarray], ...] | None = None
    stack_rows: np.ndarray | None = None

    @classmethod
    def allocate(
        cls,
        probe: MLP,
        n_probes: int,
        X_train: Any,
        y_eval: np.ndarray,
        n_classes: int,
        config: TrainingConfig,
        request: _Request,
        *,
        pooled: bool,
    ) -> _Results:
        """Empty arrays for what ``request`` and ``config`` ask of ``n_probes`` probes whose
        shared settings (mix, span) are ``probe``'s; ``pooled``: room for each probe's metrics
        on its own pool rows (None for a probe given none)."""
        fields = {name: np.empty(n_probes) for name in ("loss", "loss_truncated", "accuracy")}
        multilabel = np.ndim(y_eval) == 2
        if multilabel:
            fields.update(micro_f1=np.empty(n_probes), macro_f1=np.empty(n_probes))
        if request.per_example:
            fields["nll"] = np.empty((n_probes, len(y_eval)), dtype=np.float32)
            fields["predictions"] = (
                np.empty((n_probes, *np.shape(y_eval)), dtype=np.uint8)
                if multilabel
                else np.empty((n_probes, len(y_eval)), dtype=np.int32)
            )
        if config.early_stopping:
            fields["epochs"] = np.empty(n_probes, dtype=np.int64)
        if config.solver == "newton":
            fields["iterations"] = np.empty(n_probes, dtype=np.int64)
            fields["converged"] = np.empty(n_probes, dtype=bool)
        if pooled:
            fields["pool_nll"], fields["pool_predictions"] = [None] * n_probes, [None] * n_probes
        if probe.mix:
            fields["mix_logits"] = np.empty((n_probes, probe.mix), dtype=np.float32)
            fields["mix_scale"] = np.empty(n_probes, dtype=np.float32)
        if not request.return_parameters:
            return cls(fields)
        parameters = tuple(
            (
                np.empty((n_probes, fan_in, fan_out), dtype=np.float32),
                np.empty((n_probes, fan_out), dtype=np.float32),
            )
            for fan_in, fan_out in probe.layer_shapes(X_train.shape[1], n_classes)
        )
        if probe.span:
            spans, q = len(probe.span), probe.projection
            width = probe.token_width(X_train.shape[1])
            fields["span_weight"] = np.empty((n_probes, spans, width, q), dtype=np.float32)
            fields["span_bias"] = np.empty((n_probes, spans, q), dtype=np.float32)
            fields["span_score"] = np.empty((n_probes, spans, q), dtype=np.float32)
        return cls(fields, parameters, np.zeros(n_probes, dtype=np.int64))

    def add(self, chunk: _Chunk, metrics: dict[str, Any]) -> None:
        """The metrics (and parameters) of ``chunk``'s probes, in their places."""
        members = chunk.members
        if self.parameters is not None:
            self.stack_rows[members] = np.arange(members.size)
            for layer, (weights, biases) in enumerate(metrics.pop("parameters")):
                self.parameters[layer][0][members] = weights
                self.parameters[layer][1][members] = biases
        for name in ("pool_nll", "pool_predictions"):
            for member, values in zip(members, metrics.pop(name, ())):
                self.fields[name][member] = values
        for name, values in metrics.items():
            self.fields[name][members] = values

    def evaluation(self) -> ProbeEvaluation:
        """The :class:`ProbeEvaluation` of the filled arrays (per-probe lists of pool
        evaluations made tuples)."""
        fields = dict(self.fields)
        for name in ("pool_nll", "pool_predictions"):
            if name in fields:
                fields[name] = tuple(fields[name])
        return ProbeEvaluation(**fields, parameters=self.parameters, stack_rows=self.stack_rows)


def _families(
    probe: MLP | Sequence[MLP], n_probes: int, return_parameters: bool
) -> dict[MLP, np.ndarray]:
    """The probe indices of each architecture (one architecture: all of them), checked."""
    if isinstance(probe, MLP):
        return {probe: np.arange(n_probes)}
    probes = list(probe)
    if len(probes) != n_probes or not all(isinstance(p, MLP) for p in probes):
        raise ValueError(f"probe: one MLP, or one per subset ({n_probes}); got {len(probes)}")
    families: dict[MLP, list[int]] = {}
    for index, architecture in enumerate(probes):
        families.setdefault(architecture, []).append(index)
    stages = {(p.mix, p.span, p.projection) for p in families}
    if len(stages) > 1:
        raise ValueError("probe: architectures trained together must share mix, span, projection")
    if len(families) > 1 and return_parameters:
        raise ValueError("return_parameters: one architecture per call (their layers differ)")
    return {p: np.array(indices, dtype=np.int64) for p, indices in families.items()}


def _check_pool_rows(
    pool_rows: Sequence[np.ndarray | None] | None, n_probes: int, pool_size: int
) -> list[np.ndarray | None] | None:
    """``pool_rows`` as int64 arrays, one entry per probe, every index inside the pool."""
    if pool_rows is None:
        return None
    if len(pool_rows) != n_probes:
        raise ValueError(f"pool_rows: {len(pool_rows)} entries for {n_probes} probes")
    return [
        None if rows is None else _pool_indices(f"pool_rows[{probe}]", rows, pool_size)
        for probe, rows in enumerate(pool_rows)
    ]


def _pool_indices(name: str, rows: object, pool_size: int, *, empty: bool = True) -> np.ndarray:
    """``rows`` as int64 indices into a pool of ``pool_size`` rows (none at all only with
    ``empty``); a ValueError naming ``name`` otherwise."""
    indices = np.asarray(rows)
    if (
        indices.ndim != 1
        or not np.issubdtype(indices.dtype, np.integer)
        or (indices.size == 0 and not empty)
    ):
        kind = "1-D" if empty else "non-empty 1-D"
        raise ValueError(f"{name} must be a {kind} array of integer pool indices")
    if indices.size and (indices.min() < 0 or indices.max() >= pool_size):
        raise ValueError(f"{name} indexes outside the pool of {pool_size} rows")
    return indices.astype(np.int64, copy=False)


def _sparse_row_bytes(X_train: Any, probe: MLP, n_classes: int) -> float | None:
    """For a scipy.sparse pool, the bytes a gathered row takes (what the memory estimate counts
    instead of a dense row); None for dense features. Raises a ValueError for a probe with an
    input stage (a scalar mix or span pooling reads dense layers or spans side by side)."""
    if not sp.issparse(X_train):
        return None
    if probe.mix or probe.span:
        raise ValueError(
            f"probe {probe.name} has an input stage (mix or span) that reads dense features; "
            "sparse features (scipy.sparse) go straight into the first layer"
        )
    return sparse_row_bytes(X_train, probe.layer_shapes(X_train.shape[1], n_classes)[0][1])


def _warn_if_diverged(
    losses: np.ndarray,
    subsets: Sequence[np.ndarray],
    uniform: float,
    lr: np.ndarray,
    *,
    stacklevel: int,
) -> None:
    """Warn when probes ended with a non-finite test loss, or one over ``DIVERGED_FACTOR``
    times the ``uniform`` code's nats per example (ln K; K·ln 2 for label sets): no probe
    that learnt anything ends there, even one that overfits a handful of examples — it is a
    step size too large for Adam (``lr``: each probe's learning rate)."""
    uniform = max(uniform, math.log(2))
    limit = DIVERGED_FACTOR * uniform
    diverged = np.flatnonzero(~np.isfinite(losses) | (losses > limit))
    if diverged.size:
        first = diverged[0]
        warnings.warn(
            f"{diverged.size} of {len(losses)} probes diverged: test loss "
            f"{losses[first]:.3g} nats (n={len(subsets[first])}) against "
            f"{uniform:.3g} for guessing uniformly; lr={lr[first]:g} is likely too "
            "large (Adam usually needs 1e-4 to 1e-2). Their numbers are not meaningful",
            RuntimeWarning,
            stacklevel=stacklevel,
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
    if np.ndim(y_train) == 2 or np.ndim(y_eval) == 2:
        check_label_sets(y_train, y_eval, n_classes)
    else:
        for name, labels in (("y_train", y_train), ("y_eval", y_eval)):
            if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
                raise ValueError(f"{name} holds labels outside [0, n_classes={n_classes})")
    for position, subset in enumerate(subsets):
        if len(subset) == 0:
            raise ValueError(f"subsets[{position}] is empty: a probe needs training examples")
        if np.min(subset) < 0 or np.max(subset) >= X_train.shape[0]:
            raise ValueError(
                f"subsets[{position}] indexes outside the pool of {X_train.shape[0]} examples"
            )


def _probe_settings(
    lr: Sequence[float] | np.ndarray | None,
    weight_decay: Sequence[float] | np.ndarray | None,
    config: TrainingConfig,
    n_probes: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Every probe's (learning rate, L2 strength) as float64 arrays: ``config``'s where not
    given per probe; a ValueError naming ``lr`` or ``weight_decay`` for a wrong count, or a
    rate that is not positive or a strength that is negative or either not finite."""
    settings = []
    for name, given, default, low in (
        ("lr", lr, config.lr, "> 0"),
        ("weight_decay", weight_decay, config.weight_decay, ">= 0"),
    ):
        if given is None:
            settings.append(np.full(n_probes, default))
            continue
        values = np.asarray(given, dtype=np.float64)
        if values.shape != (n_probes,):
            raise ValueError(f"{name}: one value per probe ({n_probes}); got shape {values.shape}")
        bad = ~np.isfinite(values) | ((values <= 0) if name == "lr" else (values < 0))
        if bad.any():
            raise ValueError(f"{name} must be finite and {low}; got {values[bad][0]!r}")
        settings.append(values)
    return settings[0], settings[1]


def _check_dev_set(
    dev_set: np.ndarray | None, config: TrainingConfig, pool_size: int
) -> np.ndarray | None:
    """``dev_set`` as int64 pool indices (None stays None); a ValueError naming it otherwise."""
    if dev_set is None:
        return None
    if not config.early_stopping:
        raise ValueError("dev_set is the early-stopping set: it needs config.early_stopping=True")
    return _pool_indices("dev_set", dev_set, pool_size, empty=False)


def _training_flops(
    subsets: Sequence[np.ndarray],
    probe: MLP,
    dims: tuple[int, int],
    config: TrainingConfig,
) -> float:
    """Arithmetic of training (forward + backward ≈ 3× forward per example) on ``dims`` =
    (features, classes)."""
    examples = sum(min(len(s), config.batch_size) for s in subsets) * config.steps
    return 3.0 * examples * probe.forward_flops(*dims)


def _check_directions(
    families: dict[MLP, np.ndarray], X_train: Any, y_train: Any, n_classes: int
) -> None:
    """A ValueError, before any work, for a direction probe that is no declared family, or on
    data it cannot fit: label sets (its class means are of one label per row), sparse
    features (its covariance and class means would be dense), or what its family refuses
    (``DirectionFamily.problem``: CCS's contrast pairs)."""
    for family in families:
        if not isinstance(family, Direction):
            continue
        problem = direction_family(family.family, "probe").problem(X_train.shape[1], n_classes)
        if problem is not None:
            raise ValueError(f"probe {family.name}: {problem}")
        if np.ndim(y_train) == 2:
            raise ValueError(
                f"probe {family.name}: a direction probe fits one label per row; label sets "
                "(multi-label targets) take trained probes"
            )
        if sp.issparse(X_train):
            raise ValueError(
                f"probe {family.name}: a direction probe needs dense features (its class means "
                "and covariance are dense); sparse features take trained probes"
            )


def _check_newton(
    config: TrainingConfig,
    families: dict[MLP, np.ndarray],
    X_train: Any,
    y_train: np.ndarray,
    weight_decay: np.ndarray,
) -> None:
    """A ValueError naming ``solver``, before any work, where the exact Newton solver cannot
    apply: it solves linear softmax probes on dense features with an L2 penalty λ > 0 only."""
    if config.solver != "newton":
        return
    for family in families:
        problem = (
            f"a direction probe ({family.family}) is fitted in closed form"
            if isinstance(family, Direction)
            else f"probe {family.name} has hidden layers {list(family.hidden)}"
            if family.hidden
            else "a probe with a scalar mix or span pooling is not a linear softmax probe"
            if family.mix or family.span
            else None
        )
        if problem:
            raise ValueError(f"solver='newton' solves linear probes only: {problem}")
    if np.ndim(y_train) == 2:
        raise ValueError("solver='newton' solves softmax probes: label sets need Adam")
    if sp.issparse(X_train):
        raise ValueError("solver='newton' needs dense features; sparse ones train with Adam")
    if (weight_decay <= 0).any():
        raise ValueError(
            "solver='newton' needs weight_decay > 0 for every probe: without the L2 penalty a "
            "separable subset's objective has no minimiser"
        )


def _newton_chunks(
    probe: MLP,
    indices: np.ndarray,
    subsets: Sequence[np.ndarray],
    keys: Sequence[tuple[int, ...]],
    pool_rows: list[np.ndarray | None] | None,
    rates: tuple[np.ndarray, np.ndarray],
    dims: tuple[int, int],
    max_memory: float,
    workers: int,
) -> list[_Chunk]:
    """Chunks of linear probes the Newton solver stacks: probes in order of size, a chunk
    closed when padding its members to its largest would waste over a quarter of its rows,
    when it would exceed the memory budget, a worker's fair share of all rows, or
    ``newton.STACK_ROWS`` rows: stacking saves the fixed costs of small probes, while large
    ones gain nothing from it and would wait for each other in lockstep (each its own chunk,
    they spread over the workers)."""
    order = sorted(indices, key=lambda i: len(subsets[i]))
    fair_share = sum(len(subsets[i]) for i in indices) / workers
    groups: list[list[int]] = []
    for i in order:
        n = len(subsets[i])
        if groups:
            group = groups[-1]
            padded = (len(group) + 1) * n
            real = sum(len(subsets[j]) for j in group) + n
            fits = newton.memory_bytes(*dims, n, len(group) + 1) <= max_memory * 2**30
            small = padded <= min(fair_share, newton.STACK_ROWS)
            # a stack this small is bound by per-operation overhead, not arithmetic: padding
            # it costs less than solving its probes one stack after another
            tiny = padded * dims[0] <= newton.TINY_STACK
            if fits and (tiny or (padded <= 1.25 * real and small)):
                group.append(i)
                continue
        groups.append([i])
    chunks = []
    for group in groups:
        members = np.array(sorted(group), dtype=np.int64)
        work = sum(newton.fit_flops(*dims, len(subsets[i])) for i in members)
        chunks.append(_Chunk.of(probe, members, 1, (subsets, keys, pool_rows), rates, work))
    return chunks


def _direction_flops(
    subsets: Sequence[np.ndarray], probe: Direction, dims: tuple[int, int]
) -> float:
    """The arithmetic of fitting direction probes on ``subsets`` (its family's declaration)."""
    fit_flops = direction_family(probe.family, "probe").fit_flops
    return sum(fit_flops(*dims, len(subset)) for subset in subsets)


def _direction_chunks(
    probe: Direction,
    indices: np.ndarray,
    subsets: Sequence[np.ndarray],
    keys: Sequence[tuple[int, ...]],
    pool_rows: list[np.ndarray | None] | None,
    rates: tuple[np.ndarray, np.ndarray],
    dims: tuple[int, int],
    config: TrainingConfig,
    request: _Request,
    *,
    max_memory: float,
    workers: int,
) -> list[_Chunk]:
    """Chunks of direction probes: as many as the memory budget holds (its family's fit and
    the evaluation, :func:`estimate_memory`), at least one per worker, balanced by their data
    (a fit's cost grows with its subset); evaluated on one row buffer (none is trained)."""
    memory = estimate_memory(
        probe, *dims, config, rows=1,
        n_train=max(len(subsets[i]) for i in indices), **request.memory_keywords(),
    )  # fmt: skip
    capacity = probes_per_chunk(memory, max_memory)
    parts = _balanced_by_data(indices, subsets, capacity, workers)
    return [
        _Chunk.of(
            probe,
            members,
            1,
            (subsets, keys, pool_rows),
            rates,
            _direction_flops([subsets[i] for i in members], probe, dims),
        )
        for members in parts
    ]


def _plan_chunks(
    subsets: Sequence[np.ndarray],
    probe: MLP,
    dims: tuple[int, int],
    config: TrainingConfig,
    max_memory: float,
    workers: int,
    *,
    n_eval: int = EVAL_ROWS_PER_BLOCK,
    per_example: bool = False,
    shared_dev_rows: int | None = None,
    row_bytes: float | None = None,
    cache_bytes: int | None = None,
    device_type: str = "cpu",
) -> list[tuple[np.ndarray, int]]:
    """Chunks of probes as (members, rows), costliest first (longest-processing-time order).

    Probes are grouped by effective batch ``min(n, batch_size)``. Neighbouring groups are merged
    while padding the narrower probes with zero-weight rows costs less arithmetic than the
    fixed per-step cost of another chunk saves (tiny probes are overhead-bound, large ones are
    not; the costs are ``device_type``'s, :data:`_STEP_COSTS`: on a GPU nearly everything
    merges). Each chunk is then split to fit the memory budget, on fewer than
    ``CACHE_BOUND_ROWS`` rows to keep the state its steps touch within ``cache_bytes`` (a
    CPU's :func:`~probemeter.training.cache.cache_budget`; None on an accelerator), and, with
    several workers, so that none holds more than a worker's fair share of the work.
    Chunking changes speed only: a probe's numbers are the same, up to float rounding,
    whatever its companions. ``dims`` are the (features, classes) of the data; ``n_eval``,
    ``per_example``, ``shared_dev_rows`` and ``row_bytes`` enter the memory estimate
    (:func:`estimate_memory`).
    """
    effective_batch = np.array([min(len(s), config.batch_size) for s in subsets])
    step_overhead, row_flops_per_second = _STEP_COSTS[device_type]
    seconds_per_row = 3 * probe.forward_flops(*dims) / row_flops_per_second
    groups: list[tuple[np.ndarray, int]] = []
    for batch in np.unique(effective_batch):
        members = np.flatnonzero(effective_batch == batch)
        if groups:
            merged, rows = groups[-1]
            padding_cost = merged.size * (batch - rows) * seconds_per_row
            if padding_cost < step_overhead:
                groups[-1] = (np.concatenate([merged, members]), int(batch))
                continue
        groups.append((members, int(batch)))
    # no chunk should hold more than one worker's fair share of the rows to process
    fair_share = sum(members.size * rows for members, rows in groups) / workers
    chunks = []
    for members, rows in groups:
        memory = estimate_memory(
            probe,
            *dims,
            config,
            rows=rows,
            n_train=max(len(subsets[i]) for i in members),
            n_eval=n_eval,
            per_example=per_example,
            shared_dev_rows=shared_dev_rows,
            row_bytes=row_bytes,
        )
        capacity = probes_per_chunk(memory, max_memory)
        if cache_bytes is not None and rows < CACHE_BOUND_ROWS:
            capacity = min(capacity, max(1, cache_bytes // memory.step_state))
        if config.early_stopping:
            parts = _balanced_by_data(members, subsets, capacity, workers)
            chunks.extend((part, rows) for part in parts)
            continue
        size = min(capacity, -(-members.size // math.ceil(members.size * rows / fair_share)))
        chunks.extend((members[i : i + size], rows) for i in range(0, members.size, size))
    return sorted(chunks, key=lambda chunk: -_work(*chunk, subsets, config))


def _work(
    members: np.ndarray, rows: int, subsets: Sequence[np.ndarray], config: TrainingConfig
) -> int:
    """The work of training the probes ``members`` of ``subsets`` stacked on ``rows`` rows, in
    rows processed per forward pass: with early stopping it grows with their data, with
    fixed steps with the stacked rows."""
    if config.early_stopping:
        return sum(len(subsets[i]) for i in members)
    return rows * members.size


def _balanced_by_data(
    members: np.ndarray, subsets: Sequence[np.ndarray], capacity: int, workers: int
) -> list[np.ndarray]:
    """Early-stopped probes of one batch width split into chunks of about equal work.

    An early-stopped probe takes ~n/b steps per epoch, so its work grows with its subset size
    n, not with its batch width (which fixed-steps chunking balances): in an online code the
    probe on all the data does as much as all block probes together. Probes go, largest first,
    to the chunk holding the least data so far (longest-processing-time rule), into as many
    chunks as the memory budget needs and at least one per worker (up to one per probe), so
    that the largest probes train side by side in different workers.
    """
    count = max(-(-members.size // capacity), min(workers, members.size))
    bins: list[list[int]] = [[] for _ in range(count)]
    loads = np.zeros(count)
    for member in sorted(members, key=lambda i: -len(subsets[i])):
        open_bins = [b for b in range(count) if len(bins[b]) < capacity]
        target = min(open_bins, key=lambda b: loads[b])
        bins[target].append(int(member))
        loads[target] += len(subsets[member])
    return [np.array(sorted(b), dtype=np.int64) for b in bins if b]


@dataclass
class _ChunkRunner:
    """Trains and evaluates chunks of probes on tensors already on the device."""

    pool_x: torch.Tensor
    pool_y: torch.Tensor
    eval_x: torch.Tensor
    eval_y: torch.Tensor
    n_classes: int
    config: TrainingConfig
    request: _Request
    report: Callable[[int], object]
    #: a large memory-mapped pool's rows, read with pread (never mapped into this process)
    pool_file: FileRows | None = None
    #: the host arrays behind the tensors, whose maps' pages are released after each pass
    host: tuple[Any, ...] = ()

    @classmethod
    def build(
        cls,
        arrays: tuple[np.ndarray, ...],
        n_classes: int,
        config: TrainingConfig,
        request: _Request,
        device: torch.device,
        report: Callable[[int], object],
    ) -> _ChunkRunner:
        X_train, y_train, X_eval, y_eval = arrays
        with warnings.catch_warnings():
            # worker processes receive large arrays as read-only shared memory maps; the
            # engine only ever reads them, so sharing (not copying) them is safe
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            pool_x, eval_x = (feature_tensor(a, device) for a in (X_train, X_eval))
            pool_y, eval_y = (  # label sets (n, K) as float32 0/1, the targets of the sigmoids
                torch.as_tensor(
                    a, dtype=torch.int64 if a.ndim == 1 else torch.float32, device=device
                )
                for a in (y_train, y_eval)
            )
        # on an accelerator the pool was copied to the device once: read there
        pool_file = FileRows.of(X_train) if device.type == "cpu" else None
        return cls(
            pool_x,
            pool_y,
            eval_x,
            eval_y,
            n_classes,
            config,
            request,
            report,
            pool_file,
            (X_train, X_eval) if device.type == "cpu" else (),
        )

    def run(self, chunk: _Chunk) -> dict[str, Any]:
        """Train the probes of ``chunk`` and evaluate them; with ``return_parameters``,
        ``"parameters"`` holds their layers on the host (:meth:`StackedMLP.numpy_layers`);
        with ``pool_rows``, ``"pool_nll"`` and ``"pool_predictions"`` hold each probe's
        per-example metrics on its own pool rows."""
        config, rows = self.config, chunk.rows
        if config.solver == "newton":
            return self._fit_newton(chunk)
        if isinstance(chunk.probe, Direction):
            return self._fit_directions(chunk)
        rngs = [np.random.default_rng(list(key)) for key in chunk.keys]
        # narrow minibatches are bound by parameter traffic, where bf16 shadows only add copies
        # sparse inputs: the first layer's product is a sparse-dense one, in f32
        low = rows >= BF16_MIN_ROWS and not isinstance(self.pool_x, SparseRows)
        precision = config.precision if low else "f32"
        model = chunk.probe.stack(
            rngs, self.pool_x.shape[1], self.n_classes, rows, precision, self.pool_x.device
        )
        metrics: dict[str, Any] = {}
        if config.early_stopping:
            optimizer = BatchedAdam(
                model.parameters,
                chunk.lr,
                weight_decay=chunk.weight_decay,
                decayed=self._decayed(model, chunk.probe),
            )
            metrics["epochs"] = train_with_dev_stopping(
                model,
                self.pool_x,
                self.pool_y,
                chunk.subsets,
                rngs,
                rows,
                config,
                report=self.report,
                compact=True,
                dev_set=self.request.dev_set,
                optimizer=optimizer,
            )
        else:
            order, row_weights = _minibatch_order(
                chunk.subsets, rngs, config.batch_size, rows, config.steps
            )
            _train_chunk(
                model,
                self._fixed_steps_optimizer(model, chunk),
                self.pool_x,
                self.pool_y,
                order,
                row_weights,
                config,
                self.report,
                self.pool_file,
            )
        release(*self.host)  # early stopping reads the pool through its map
        metrics.update(
            model.evaluate(self.eval_x, self.eval_y, per_example=self.request.per_example)
        )
        release(*self.host)  # the test set's pages, read once per chunk
        if chunk.pool_rows is not None:
            on_pool = [
                None if indices is None else self._evaluate_rows(model, r, indices)
                for r, indices in enumerate(chunk.pool_rows)
            ]
            for name in ("nll", "predictions"):
                metrics[f"pool_{name}"] = [None if m is None else m[name] for m in on_pool]
        if self.request.return_parameters:
            metrics["parameters"] = model.numpy_layers()
            metrics.update(model.stage_parameter_arrays())
        metrics.update(model.stage_arrays())
        return metrics

    def _fit_directions(self, chunk: _Chunk) -> dict[str, Any]:
        """A chunk of direction probes (:class:`~probemeter.probes.Direction`): their linear
        layers fitted in closed form on their subsets
        (:mod:`probemeter.training.directions`), then evaluated as any chunk of linear probes
        (epochs: 0, none trained)."""
        family = direction_family(chunk.probe.family, "probe")
        seeds = {"keys": chunk.keys} if family.seeded else {}  # a seeded fit's draws (CCS)
        fits = family.fit(
            PoolRows(self.pool_x, self.pool_file), self.pool_y, chunk.subsets, self.n_classes,
            **seeds,
        )  # fmt: skip
        release(*self.host)
        metrics: dict[str, Any] = {}
        if self.config.early_stopping:
            metrics["epochs"] = np.zeros(chunk.members.size, dtype=np.int64)
        return self._evaluate_linear(chunk, fits.weights, fits.biases, metrics)

    def _fit_newton(self, chunk: _Chunk) -> dict[str, Any]:
        """A chunk of linear probes solved exactly by stacked Newton–CG
        (:mod:`probemeter.training.newton`), each at its own λ, then evaluated as any chunk
        of linear probes; ``iterations`` and ``converged`` say how each ended."""
        X, y = newton.gather_stack(self.pool_x, self.pool_y, chunk.subsets, self.pool_file)
        release(*self.host)
        fit = newton.fit_linear_newton(
            X, y, [len(s) for s in chunk.subsets], self.n_classes, chunk.weight_decay,
            tol=self.config.tol, max_iter=NEWTON_MAX_ITER,
        )  # fmt: skip
        del X, y
        metrics = {"iterations": fit.iterations, "converged": fit.converged}
        return self._evaluate_linear(chunk, fit.weights, fit.biases, metrics)

    def _evaluate_linear(
        self, chunk: _Chunk, weights: torch.Tensor, biases: torch.Tensor, metrics: dict[str, Any]
    ) -> dict[str, Any]:
        """``metrics`` with the evaluation of the fitted linear probes (W (P, d, K), b (P, K))
        of ``chunk``: test metrics, pool rows, parameters as requested."""
        layers = [(weights.contiguous(), biases[:, None, :].contiguous())]
        model = StackedMLP(layers, chunk.rows, "f32")
        metrics.update(
            model.evaluate(self.eval_x, self.eval_y, per_example=self.request.per_example)
        )
        release(*self.host)
        if chunk.pool_rows is not None:
            on_pool = [
                None if indices is None else self._evaluate_rows(model, r, indices)
                for r, indices in enumerate(chunk.pool_rows)
            ]
            for name in ("nll", "predictions"):
                metrics[f"pool_{name}"] = [None if m is None else m[name] for m in on_pool]
        if self.request.return_parameters:
            metrics["parameters"] = model.numpy_layers()
        self.report(chunk.members.size * self.config.steps)
        return metrics

    def _decayed(self, model: StackedMLP, probe: MLP) -> list[bool]:
        """Which of ``model.parameters`` the L2 penalty weighs: each layer's weight matrix W.
        A stack lists its layers' (W, b) in order, then its input stage's parameters (a mix,
        span pooling), which, like the biases, are not penalised (scikit-learn leaves the
        intercept unpenalised too)."""
        layers = len(probe.layer_shapes(self.pool_x.shape[1], self.n_classes))
        return [i < 2 * layers and i % 2 == 0 for i in range(len(model.parameters))]

    def _fixed_steps_optimizer(self, model: StackedMLP, chunk: _Chunk) -> Any:
        """Adam for ``chunk``'s fixed-steps training: one fused call per step
        (:class:`FusedAdam`) when its probes share a learning rate and have no penalty, else
        one per run of probes with equal settings (:class:`BatchedAdam`)."""
        lr, decay = chunk.lr, chunk.weight_decay
        if (lr == lr[0]).all() and not decay.any():
            return FusedAdam(model.parameters, lr=float(lr[0]))
        return BatchedAdam(
            model.parameters, lr, weight_decay=decay, decayed=self._decayed(model, chunk.probe)
        )

    def _evaluate_rows(self, model: StackedMLP, row: int, indices: np.ndarray) -> dict[str, Any]:
        """``model.evaluate_rows`` on the pool rows ``indices``; from a pool read with pread
        (:attr:`pool_file`), those rows are read into memory first, in their order: the same
        rows in the same blocks, so the same numbers, without mapping the pool."""
        if self.pool_file is None:
            return model.evaluate_rows(row, self.pool_x, self.pool_y, indices)
        features = torch.empty(len(indices), self.pool_x.shape[1], dtype=torch.float32)
        self.pool_file.gather(indices, features.numpy())
        labels = self.pool_y[torch.as_tensor(indices, dtype=torch.int64)]
        return model.evaluate_rows(row, features, labels, np.arange(len(indices)))


def _run(
    work: list[tuple[_Call, _Chunk]],
    device: torch.device,
    *,
    workers: int,
    progress: bool,
) -> list[dict[str, Any]]:
    """Every chunk's metrics, in the order of ``work`` (each chunk with its call): in
    ``workers`` processes when there are several and more than one chunk, costliest chunk
    first whatever its call; else in this process, call after call, each call's chunks on one
    thread when its work is small (:attr:`_Call.small`). ``progress`` shows a bar over
    probe-updates."""
    n_probes = sum(chunk.members.size for _, chunk in work)
    stopping = any(call.config.early_stopping for call, _ in work)
    bar = tqdm(
        total=None if stopping else sum(c.members.size * call.config.steps for call, c in work),
        disable=not progress,
        unit="update",
        unit_scale=True,
        desc=f"training {n_probes} probes",
    )
    with bar:
        if workers > 1 and len(work) > 1:
            return _run_in_workers(work, workers, bar)
        outputs, runners = [], {}
        for call, chunk in work:
            if id(call) not in runners:
                runners[id(call)] = _ChunkRunner.build(
                    call.arrays, call.n_classes, call.config, call.request, device, bar.update
                )
            with single_threaded(call.small and device.type == "cpu"):
                outputs.append(runners[id(call)].run(chunk))
        return outputs


def _run_task(
    arrays: tuple[np.ndarray, ...],
    n_classes: int,
    config: TrainingConfig,
    request: _Request,
    chunk: _Chunk,
) -> dict[str, Any]:
    """One chunk in a worker process, single-threaded (parallelise over probes, not
    inside matmuls)."""
    exit_with_parent()  # end this worker as soon as the run that started it dies (kill -9)
    torch.set_num_threads(1)
    device = torch.device("cpu")
    return _ChunkRunner.build(arrays, n_classes, config, request, device, _ignore).run(chunk)


def _ignore(_: int) -> None:
    """Progress sink of worker processes (the parent reports progress per finished chunk)."""


def _run_in_workers(
    work: list[tuple[_Call, _Chunk]], workers: int, bar: tqdm
) -> list[dict[str, Any]]:
    """Run the chunks of ``work`` in ``workers`` processes of joblib's reusable loky pool,
    costliest first (longest-processing-time order over every call's chunks); metrics in the
    order of ``work``. Large arrays travel as shared memory maps, not copies; scripts need no
    ``__main__`` guard."""
    order = sorted(range(len(work)), key=lambda i: -work[i][1].work)
    jobs = Parallel(n_jobs=workers, backend="loky", return_as="generator")(
        delayed(_run_task)(call.arrays, call.n_classes, call.config, call.request, chunk)
        for call, chunk in (work[i] for i in order)
    )
    outputs: list[dict[str, Any]] = [{} for _ in work]
    for i, output in zip(order, jobs):
        outputs[i] = output
        call, chunk = work[i]
        bar.update(chunk.members.size * call.config.steps)
    return outputs


def warm_workers(n_jobs: int | None = -1) -> threading.Thread | None:
    """Start the worker processes :func:`fit_evaluate` will train in (joblib's reusable loky
    pool, the same ``n_jobs``), in a background thread, so that their start — a Python
    process importing torch and this module, seconds each — overlaps whatever the caller does
    next (loading data, encoding features) instead of delaying the first chunk. Returns the
    thread (joinable), or None when ``n_jobs`` means no worker processes.

    A failure here is not reported: the engine's own call starts the pool again and reports
    it. The pool stays warm across engine calls until idle for loky's timeout (300 s)."""
    workers = worker_count(n_jobs)
    if workers == 1:
        return None

    def start() -> None:
        try:
            Parallel(n_jobs=workers, backend="loky")(delayed(_ready)() for _ in range(workers))
        except Exception:
            return

    thread = threading.Thread(target=start, name="probemeter-warm-workers", daemon=True)
    thread.start()
    return thread


def _ready() -> int:
    """In a worker: the state :func:`_run_task` expects (this module imported, one thread,
    ended with its parent)."""
    exit_with_parent()
    torch.set_num_threads(1)
    return os.getpid()


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
    optimizer: FusedAdam | BatchedAdam,
    pool_x: torch.Tensor,
    pool_y: torch.Tensor,
    order: np.ndarray,
    row_weights: np.ndarray,
    config: TrainingConfig,
    report: Callable[[int], object],
    pool_file: FileRows | None = None,
) -> None:
    """Run ``config.steps`` updates of ``optimizer`` (Adam on ``model.parameters``) on all
    stacked probes, in place; ``report`` receives
    the number of probe-updates done, every few steps. With ``pool_file`` (the rows of a large
    memory-mapped pool, :class:`~probemeter._resident.FileRows`) minibatches are read from the
    file instead of gathered through the map: the same values, none of the pool resident."""
    n_probes, rows = row_weights.shape
    device = pool_x.device
    order_t = torch.from_numpy(order).to(device)
    weights_t = torch.from_numpy(row_weights).to(device).view(n_probes, rows, 1)
    sparse = isinstance(pool_x, SparseRows)  # gathered as sparse rows, never made dense
    x_batch = None if sparse else torch.empty(n_probes * rows, pool_x.shape[1], device=device)
    x_numpy = None if pool_file is None else x_batch.numpy()  # pread's buffer (on the CPU)
    report_every = max(1, config.steps // 50)
    reported = 0
    for step in range(config.steps):
        idx = order_t[:, step * rows : (step + 1) * rows].reshape(-1)
        if sparse:
            inputs = pool_x.index_select(0, idx).view(n_probes, rows, -1)
        elif pool_file is not None:
            block = order[:, step * rows : (step + 1) * rows].reshape(-1)
            inputs = torch.from_numpy(pool_file.gather(block, x_numpy)).view(n_probes, rows, -1)
        else:
            inputs = torch.index_select(pool_x, 0, idx, out=x_batch).view(n_probes, rows, -1)
        labels = pool_y[idx].view(n_probes, rows, -1)
        model.accumulate_gradients(inputs, labels, weights_t)
        optimizer.step()
        model.refresh()
        if (step + 1) % report_every == 0 or step + 1 == config.steps:
            report(n_probes * (step + 1 - reported))
            reported = step + 1
