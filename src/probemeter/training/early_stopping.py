"""Early stopping with learning-rate annealing, per probe, inside the batched engine.

The training protocol of Voita & Titov (2020), §3.1, taken from Hewitt & Liang (2019): Adam with
learning rate 1e-3; after every epoch the loss on a development set is measured; an epoch that
brings no new minimum halves the learning rate (×``lr_decay``), and training stops after
``patience`` (4) such epochs in a row. The parameters of the best development epoch are kept.

Here every probe of a stacked chunk follows this rule on its own:

* its development set is a seeded ``dev_fraction`` of *its own* training subset (the rest is what
  it trains on), so an online-code block probe never looks at data the receiver does not have;
  or, given ``dev_set``, one development set shared by every probe, apart from their subsets
  (each then trains on its whole subset), as §3.1 stops on the treebank's development split;
* its epochs have their own length, ``ceil(n_train / b)`` steps of its batch size
  ``b = min(n_train, batch_size)`` (the last batch of an epoch may be narrower: its rows carry
  weight ``1/len(batch)``), each epoch a fresh permutation from the probe's own random stream;
* its learning rate is its own entry of a per-probe learning-rate tensor (:class:`BatchedAdam`);
  a stopped probe gets learning rate 0 and zero-weight rows, so its parameters no longer move
  while the others train on, and results do not depend on the probe's companions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from probemeter.training.config import TrainingConfig

__all__ = ["BatchedAdam", "dev_split", "train_with_dev_stopping"]

#: an epoch counts as a new development minimum when it beats the best loss by more than this
#: (nats; Hewitt & Liang's code uses the same 1e-4 margin)
IMPROVEMENT_NATS = 1e-4


class BatchedAdam:
    """Adam (Kingma & Ba 2015) on stacked parameters with one learning rate and one L2
    strength per probe.

    The update is ``torch.optim.Adam``'s (non-amsgrad), computed by its fused kernel: with
    bias corrections c1 = 1 − β1^t and c2 = 1 − β2^t,
    ``θ ← θ − (lr_p / c1) · m / (sqrt(v) / sqrt(c2) + ε)``, where ``lr_p`` is the learning rate
    of the probe the parameter belongs to (leading axis) and m, v the moments of its gradient
    ``g + λ_p θ`` on the ``decayed`` parameters (coupled weight decay: the gradient of the
    penalty (λ_p / 2) ‖θ‖², :class:`~probemeter.training.config.TrainingConfig`'s
    ``weight_decay``), ``g`` on the others.

    Args:
        parameters: tensors of shape (P, ...), each with a ``.grad`` of the same shape.
        lr: the initial learning rate of every probe, or one per probe (P,).
        weight_decay: λ ≥ 0, of every probe or one per probe (P,); constant during training.
        decayed: per parameter, whether the penalty weighs it (default: every one).

    Attributes:
        lr: (P,) float32 on the host, each probe's current learning rate (early stopping
            anneals it in place; 0 stops the probe): kept off the device so that a step reads
            it without waiting for the device.
    """

    def __init__(
        self,
        parameters: list[torch.Tensor],
        lr: float | Sequence[float] | np.ndarray,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        *,
        weight_decay: float | Sequence[float] | np.ndarray = 0.0,
        decayed: Sequence[bool] | None = None,
    ) -> None:
        self.parameters = parameters
        n_probes = parameters[0].shape[0]
        rates = np.broadcast_to(np.asarray(lr, dtype=np.float64), (n_probes,))
        self.lr = torch.tensor(rates, dtype=torch.float32)
        self.weight_decay = np.broadcast_to(
            np.asarray(weight_decay, dtype=np.float64), (n_probes,)
        ).copy()
        self.decayed = [True] * len(parameters) if decayed is None else list(decayed)
        if len(self.decayed) != len(parameters):
            raise ValueError(f"decayed: one flag per parameter ({len(parameters)})")
        self.betas = betas
        self.eps = eps
        self._exp_avg = [torch.zeros_like(p) for p in parameters]
        self._exp_avg_sq = [torch.zeros_like(p) for p in parameters]
        self._steps = 0
        self._step = torch.zeros((), device=parameters[0].device)
        self._planned: tuple[list[float], list[Any], list[Any]] = ([], [], [])

    def subset(self, parameters: list[torch.Tensor], rows: torch.Tensor) -> BatchedAdam:
        """An optimiser for ``parameters`` (the probes ``rows`` of this one's, in order) that
        carries on with their moments, learning rates, L2 strengths and step count."""
        host_rows = rows.cpu()
        smaller = BatchedAdam(
            parameters,
            0.0,
            self.betas,
            self.eps,
            weight_decay=self.weight_decay[host_rows.numpy()],
            decayed=self.decayed,
        )
        smaller.lr = self.lr[host_rows].clone()
        smaller._exp_avg = [m[rows].clone() for m in self._exp_avg]
        smaller._exp_avg_sq = [v[rows].clone() for v in self._exp_avg_sq]
        smaller._steps = self._steps
        return smaller

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every probe with its own learning rate and L2 strength.

        Probes in a run of consecutive rows with the same learning rate and L2 strength are
        updated by one call of the fused Adam kernel (``torch._fused_adam_``, the kernel of
        ``torch.optim.Adam(fused=True)``) on their slices of every parameter (two calls when
        λ > 0: the decayed parameters with ``weight_decay=λ``, the others without): one pass
        over parameters, gradients and moments instead of about eight elementwise passes and
        their temporaries. Probes with learning rate 0 (stopped ones) are skipped: their
        parameters would not move, and their moments are never used again.
        """
        self._steps += 1
        rates = self.lr.tolist()
        grads = [parameter.grad for parameter in self.parameters]
        planned_rates, planned_grads, calls = self._planned
        # the runs' slices hold until a rate changes (early stopping) or a .grad is replaced
        if rates != planned_rates or any(g is not p for g, p in zip(grads, planned_grads)):
            calls = self._calls(rates, grads)
            self._planned = (rates, grads, calls)
        self._step.fill_(float(self._steps))
        for tensors, lr, weight_decay in calls:
            torch._fused_adam_(
                *tensors,
                lr=lr,
                beta1=self.betas[0],
                beta2=self.betas[1],
                weight_decay=weight_decay,
                eps=self.eps,
                amsgrad=False,
                maximize=False,
            )

    def _calls(
        self, rates: list[float], grads: list[torch.Tensor]
    ) -> list[tuple[list[list[torch.Tensor]], float, float]]:
        """The fused kernel's calls of one step, as (tensor lists, lr, weight decay): per run
        of consecutive probes with the same positive rate and L2 strength λ, their slices of
        every parameter, gradient and moment (with λ > 0, the decayed parameters in a call
        with ``weight_decay=λ``, the others in one without)."""
        decays = self.weight_decay.tolist()
        everything = range(len(self.parameters))
        calls = []
        start = 0
        while start < len(rates):
            stop = start + 1
            while (
                stop < len(rates) and rates[stop] == rates[start] and decays[stop] == decays[start]
            ):
                stop += 1
            lr, decay, part = rates[start], decays[start], slice(start, stop)
            start = stop
            if lr <= 0:
                continue
            groups = [(list(everything), 0.0)]
            if decay:
                groups = [
                    ([i for i in everything if self.decayed[i]], decay),
                    ([i for i in everything if not self.decayed[i]], 0.0),
                ]
            for members, weight_decay in groups:
                if not members:
                    continue
                tensors = [
                    [group[i][part] for i in members]
                    for group in (self.parameters, grads, self._exp_avg, self._exp_avg_sq)
                ]
                calls.append(([*tensors, [], [self._step] * len(members)], lr, weight_decay))
        return calls


def _compact(stack: Any, optimizer: BatchedAdam, kept: np.ndarray) -> tuple[Any, BatchedAdam]:
    """The rows ``kept`` of a stacked model (its ``select``) and of its optimiser's state."""
    rows = torch.as_tensor(kept, device=stack.parameters[0].device)
    smaller = stack.select(kept)
    return smaller, optimizer.subset(smaller.parameters, rows)


def dev_split(
    subset: np.ndarray, dev_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Split a probe's subset into (train, dev): a seeded shuffle, ``max(1, round(f·n))`` to dev.

    Raises:
        ValueError: a subset of fewer than two examples (nothing would be left to train on).
    """
    subset = np.asarray(subset, dtype=np.int64)
    if subset.size < 2:
        raise ValueError(
            f"early stopping needs at least 2 examples per probe (train + dev); got {subset.size}"
        )
    n_dev = min(max(1, round(dev_fraction * subset.size)), subset.size - 1)
    shuffled = subset[rng.permutation(subset.size)]
    return shuffled[n_dev:], shuffled[:n_dev]


class _EpochStreams:
    """Each probe's minibatches: epochs over its own training indices, reshuffled per epoch."""

    def __init__(
        self, train: list[np.ndarray], rngs: list[np.random.Generator], batch_size: int
    ) -> None:
        self.train = train
        self.rngs = rngs
        self.batch = [min(len(t), batch_size) for t in train]
        self.position = [0] * len(train)
        self.permuted = [t for t in train]

    def next_batch(self, probe: int) -> tuple[np.ndarray, bool]:
        """The probe's next minibatch and whether it closes an epoch."""
        if self.position[probe] == 0:
            order = self.rngs[probe].permutation(len(self.train[probe]))
            self.permuted[probe] = self.train[probe][order]
        start = self.position[probe]
        batch = self.permuted[probe][start : start + self.batch[probe]]
        self.position[probe] = start + len(batch)
        ends = self.position[probe] >= len(self.train[probe])
        if ends:
            self.position[probe] = 0
        return batch, ends


def train_with_dev_stopping(
    model: object,
    pool_x: torch.Tensor,
    pool_y: torch.Tensor,
    subsets: list[np.ndarray],
    rngs: list[np.random.Generator],
    rows: int,
    config: TrainingConfig,
    *,
    report: Callable[[int], object],
    compact: bool = False,
    dev_set: np.ndarray | None = None,
    optimizer: BatchedAdam | None = None,
) -> np.ndarray:
    """Train a stacked chunk with per-probe early stopping (§3.1); return epochs run per probe.

    ``model`` is a :class:`~probemeter.probes.stacked_mlp.StackedMLP` (any object with its
    ``parameters``, ``accumulate_gradients``, ``refresh`` and ``losses``), trained as
    ``config`` says (its ``steps`` aside): minibatches of ``config.batch_size``, Adam from
    ``config.lr``. Training stops for probe p after
    ``config.patience`` epochs in a row without a new development minimum, or after
    ``config.max_epochs``; its learning rate is multiplied by ``config.lr_decay`` after every
    such epoch. At the end each probe's parameters are those of its best development epoch.

    With ``compact`` (the model then needs ``select(kept_rows)`` returning the smaller stack, as
    :meth:`StackedMLP.select`), whenever half the probes of the current stack have stopped they
    are dropped from it, with their Adam state, so that steps no longer compute probes that do
    not move; a probe's numbers do not depend on it beyond float rounding.

    With ``dev_set`` (pool indices), every probe stops on that one development set and trains
    on its whole subset (``config.dev_fraction`` is then unused); its features are gathered
    once, not once per probe.

    ``optimizer``: the :class:`BatchedAdam` of ``model.parameters`` to anneal (per-probe
    learning rates and L2 strengths, e.g. a grid of settings trained side by side); default
    one at ``config.lr`` without penalty.
    """
    n_probes = len(subsets)
    device = pool_x.device
    if dev_set is None:
        splits = [dev_split(subset, config.dev_fraction, rng) for subset, rng in zip(subsets, rngs)]
        train = [split[0] for split in splits]
    else:
        train = [np.asarray(subset, dtype=np.int64) for subset in subsets]
    if max(min(len(t), config.batch_size) for t in train) > rows:
        raise ValueError(f"rows={rows} is narrower than a probe's batch")
    streams = _EpochStreams(train, rngs, config.batch_size)
    if dev_set is None:
        dev_rows = max(len(split[1]) for split in splits)
        dev_index = np.zeros((n_probes, dev_rows), dtype=np.int64)
        dev_weight = np.zeros((n_probes, dev_rows), dtype=np.float32)
        for probe, (_, dev) in enumerate(splits):
            dev_index[probe, : len(dev)] = dev
            dev_weight[probe, : len(dev)] = 1.0 / len(dev)
        dev_index_t = torch.from_numpy(dev_index).to(device)
        dev_x = pool_x[dev_index_t.view(-1)].view(n_probes, dev_rows, -1)
        dev_y = pool_y[dev_index_t]
        dev_w = torch.from_numpy(dev_weight).to(device)
    else:  # one shared set: probe axis of stride 0
        shared = torch.as_tensor(np.asarray(dev_set, dtype=np.int64), device=device)
        dev_x = pool_x[shared].unsqueeze(0).expand(n_probes, -1, -1)
        dev_y = pool_y[shared].unsqueeze(0).expand(n_probes, *pool_y[shared].shape)
        dev_w = torch.full((1, shared.numel()), 1.0 / shared.numel(), device=device)
        dev_w = dev_w.expand(n_probes, -1)

    best = [p.detach().clone() for p in model.parameters]
    best_loss = np.full(n_probes, np.inf)
    bad_epochs = np.zeros(n_probes, dtype=np.int64)
    epochs = np.zeros(n_probes, dtype=np.int64)
    active = np.ones(n_probes, dtype=bool)
    if optimizer is None:
        optimizer = BatchedAdam(model.parameters, config.lr)
    stack = model
    alive = np.arange(n_probes)  # original probe of each row of the current stack
    while active.any():
        if compact and 2 * active.sum() <= alive.size:
            # drop stopped probes (and their Adam state) from the stack: they no longer move
            kept = np.flatnonzero(active[alive])
            stack, optimizer = _compact(stack, optimizer, kept)
            alive = alive[kept]
        width = alive.size
        index = np.zeros((width, rows), dtype=np.int64)
        weight = np.zeros((width, rows), dtype=np.float32)
        ending = []
        for row, probe in enumerate(alive):
            if not active[probe]:
                continue
            batch, ends = streams.next_batch(probe)
            index[row, : len(batch)] = batch
            index[row, len(batch) :] = batch[0]
            weight[row, : len(batch)] = 1.0 / len(batch)
            if ends:
                ending.append(row)
        idx = torch.from_numpy(index).to(device).view(-1)
        x_batch = pool_x.index_select(0, idx).view(width, rows, -1)
        labels = pool_y[idx].view(width, rows, -1)
        weights_t = torch.from_numpy(weight).to(device).view(width, rows, 1)
        stack.accumulate_gradients(x_batch, labels, weights_t)
        optimizer.step()
        stack.refresh()
        report(int(active.sum()))
        if not ending:
            continue
        chosen = torch.as_tensor(ending, device=device)
        originals = torch.as_tensor(alive[ending], device=device)
        # a shared set is the same for every probe: slice its stride-0 view, copy nothing
        pick = originals if dev_set is None else slice(len(ending))
        losses = stack.losses(chosen, dev_x[pick], dev_y[pick], dev_w[pick]).cpu()
        for position, row in enumerate(ending):
            probe = alive[row]
            epochs[probe] += 1
            loss = float(losses[position])
            if loss < best_loss[probe] - IMPROVEMENT_NATS:
                best_loss[probe] = loss
                bad_epochs[probe] = 0
                for saved, parameter in zip(best, stack.parameters):
                    saved[probe].copy_(parameter[row])
            else:
                bad_epochs[probe] += 1
                optimizer.lr[row] *= config.lr_decay
            if bad_epochs[probe] >= config.patience or epochs[probe] >= config.max_epochs:
                active[probe] = False
                optimizer.lr[row] = 0.0
    with torch.no_grad():
        for saved, parameter in zip(best, model.parameters):
            parameter.copy_(saved)
    model.refresh()
    return epochs
