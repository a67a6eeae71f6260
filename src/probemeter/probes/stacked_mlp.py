"""P MLP probes at once: parameters stacked on a leading probe axis, with a hand-written
batched forward and backward pass into preallocated buffers.

``baddbmm``/``bmm(out=...)`` into buffers that live for the whole training run are faster on
the CPU than autograd, which allocates fresh gradient buffers every step; in bf16 mode the
matmuls run on persistent bf16 shadow weights that are refreshed in place after each update,
while the master weights, their gradients, Adam's state and the softmax stay in f32. A layer
with fewer than 16 outputs (a probe's output layer on most tasks) computes its products
transposed on the CPU (:func:`transposed_layer`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from probemeter.probes.multilabel import binary_nll, evaluate_multilabel, sigmoid_gradient
from probemeter.probes.scalar_mix import mixer
from probemeter.probes.span_attention import SpanPooling, pooler
from probemeter.probes.sparse_inputs import baddbmm, transposed_bmm

__all__ = [
    "EVAL_ROWS_PER_BLOCK",
    "StackedMLP",
    "evaluate_as_row",
    "evaluate_stacked",
    "stacked_affine",
    "transposed_layer",
]

#: evaluation streams over blocks of this many rows (memory stays bounded on large test sets)
EVAL_ROWS_PER_BLOCK = 4096

#: on the CPU, layers with fewer outputs than this compute their products transposed ...
NARROW_OUTPUT = 16
#: ... on at least this many rows (:func:`transposed_layer`)
TRANSPOSED_MIN_ROWS = 32

_relu_backward = torch.ops.aten.threshold_backward.grad_input


def transposed_layer(fan_out: int, rows: int, device: torch.device) -> bool:
    """Whether a layer's products on ``rows`` rows are computed transposed: its outputs as
    Wᵀ · hᵀ, shape (P, fan_out, rows), and its weight gradient as upstreamᵀ · h, shape
    (P, fan_out, fan_in), copied into W's gradient (P, fan_in, fan_out).

    True on the CPU for fewer than :data:`NARROW_OUTPUT` outputs and at least
    :data:`TRANSPOSED_MIN_ROWS` rows. torch's CPU ``bmm`` (MKL) runs a product whose output
    has few columns far below the machine's rate; transposed, the rows are the columns. At 16
    outputs the plain products are about as fast, and below 32 rows the transposed forward is
    the slower one: hence the two thresholds (timings in ``benchmarks/README.md``, "Narrow
    output layers"). The results differ only by float rounding.
    """
    return device.type == "cpu" and fan_out < NARROW_OUTPUT and rows >= TRANSPOSED_MIN_ROWS


class StackedMLP:
    """A stack of P ReLU MLPs of one architecture, trained on minibatches of ``rows`` rows.

    Args:
        layers: per layer ``(W, b)`` with W of shape (P, fan_in, fan_out) and b of shape
            (P, 1, fan_out), float32, on the training device. They become the master weights.
        rows: minibatch rows per probe (the widest probe's batch; narrower probes pad with
            zero-weight rows).
        precision: ``"f32"`` or ``"bf16"`` (bf16 matmuls, f32 master weights and gradients).
        dropout: inverted-dropout rate on every hidden activation during training (each unit
            kept with probability 1 − rate and scaled by 1 / (1 − rate)); none at evaluation.
        generators: with dropout, one torch generator per probe: probe i draws its masks, for
            exactly its own batch rows, from its own stream, so they do not depend on its
            companions or on padding.
        stage: a learned input stage before the first layer, in f32 in either precision: a
            scalar mix of layers side by side (:class:`~probemeter.probes.scalar_mix.ScalarMixes`)
            or the self-attentive pooling of spans
            (:class:`~probemeter.probes.span_attention.SpanAttentions`). It has ``parameters``
            (which follow the layers' in :attr:`parameters`), an ``output`` and an ``upstream``
            buffer (P, rows, width), ``forward(features)``, ``backward(features)`` (from the
            gradient put in ``upstream``), ``select(rows)``, ``evaluator()`` (rows (n, F) →
            (P, n, width)), ``arrays()`` (what the engine returns of it) and
            ``parameter_arrays()`` (what it returns more with the trained parameters).
    """

    def __init__(
        self,
        layers: list[tuple[torch.Tensor, torch.Tensor]],
        rows: int,
        precision: str,
        dropout: float = 0.0,
        generators: list[torch.Generator] | None = None,
        stage: Any = None,
    ):
        self._weights = [weight for weight, _ in layers]
        self._biases = [bias for _, bias in layers]
        self.parameters = [tensor for layer in layers for tensor in layer]
        for tensor in self.parameters:
            tensor.grad = torch.zeros_like(tensor)
        self.stage = stage
        if stage is not None:
            self.parameters += stage.parameters
        self._low = precision == "bf16"
        dtype = torch.bfloat16 if self._low else torch.float32
        # matmul operands: the master weights themselves in f32, persistent bf16 copies in bf16
        self._w = [w.to(dtype) for w in self._weights] if self._low else self._weights
        self._b = [b.to(dtype) for b in self._biases] if self._low else self._biases
        n_probes, device = self._weights[0].shape[0], self._weights[0].device
        widths = [w.shape[2] for w in self._weights]
        self._pre = [torch.empty(n_probes, rows, w, device=device, dtype=dtype) for w in widths]
        self._act = [torch.empty_like(pre) for pre in self._pre[:-1]]
        # a narrow output layer's products run transposed (transposed_layer), into buffers
        # made at its first dense minibatch (a linear probe on sparse rows never needs them)
        self._narrow = transposed_layer(widths[-1], rows, device)
        self._transposed: tuple[torch.Tensor, torch.Tensor] | None = None
        self._delta = [torch.empty_like(act) for act in self._act]
        self._keep = 1.0 - dropout
        # padding rows keep a mask of ones (their weight is 0 anyway); real rows are redrawn
        self._masks = [torch.ones_like(act) for act in self._act] if dropout else []
        if dropout and (generators is None or len(generators) != n_probes):
            raise ValueError(f"dropout needs one generator per probe ({n_probes})")
        self._generators = list(generators) if dropout else []
        self._rows, self._precision, self._dropout = rows, precision, dropout
        self._grad_w_low = [torch.empty_like(w) for w in self._w] if self._low else None
        self._inputs_low = (
            torch.empty(n_probes, rows, self._weights[0].shape[1], device=device, dtype=dtype)
            if self._low
            else None
        )
        # the gradient at the stage's output, in the matmuls' precision (copied to f32 for it)
        self._stage_upstream_low = (
            torch.empty_like(self._inputs_low) if stage is not None and self._low else None
        )

    def accumulate_gradients(
        self, inputs: torch.Tensor, labels: torch.Tensor, row_weights: torch.Tensor
    ) -> None:
        """Write into ``.grad`` the gradient of each probe's weighted cross-entropy
        Σ_r w_r · CE(x_r, y_r) (w_r = 1/batch on its real rows, 0 on padding); with
        multi-label targets, of Σ_r w_r · ℓ(x_r, y_r), ℓ the binary cross-entropy summed over
        the labels (:mod:`probemeter.probes.multilabel`).

        Args:
            inputs: (P, rows, d) float32 minibatch features (with a stage, what it reads:
                L layers side by side, span rows), or sparse rows
                (:class:`~probemeter.probes.sparse_inputs.StackedSparseRows`, in f32).
            labels: (P, rows, 1) int64 labels, or (P, rows, K) float32 0/1 label sets.
            row_weights: (P, rows, 1) float32 weights.
        """
        features = inputs
        if self.stage is not None:
            inputs = self.stage.forward(features)
        if self._low:
            self._inputs_low.copy_(inputs)
            inputs = self._inputs_low
        last = len(self._w) - 1
        # sparse rows (a linear probe's only layer) are multiplied as they are
        transposed = self._narrow and (last > 0 or not _is_sparse(inputs))
        if transposed and self._transposed is None:
            self._transposed = self._transposed_buffers()
        hidden = inputs
        for layer in range(last + 1):  # pre[l] = h[l-1] @ W[l] + b[l]; act[l] = relu(pre[l])
            if layer == last and transposed:
                _transposed_affine(self._b[layer], hidden, self._w[layer], self._transposed[0])
            else:
                baddbmm(self._b[layer], hidden, self._w[layer], out=self._pre[layer])
            if layer < last:
                hidden = torch.clamp_min(self._pre[layer], 0.0, out=self._act[layer])
                if self._masks:  # inverted dropout: act *= bernoulli(keep) / keep
                    hidden.mul_(self._draw_mask(layer, row_weights))
        logits = self._transposed[0].transpose(1, 2) if transposed else self._pre[last]
        if labels.is_floating_point():  # label sets: d loss / d logits = w_r · (σ − y)
            upstream = sigmoid_gradient(logits, labels, row_weights)
        else:  # d loss / d logits = w_r · (softmax − onehot), in f32
            upstream = torch.softmax(logits.float(), dim=-1)
            upstream.scatter_add_(2, labels, torch.full(labels.shape, -1.0, device=labels.device))
            upstream.mul_(row_weights)
        if self._low:
            upstream = upstream.to(torch.bfloat16)
        for layer in range(last, -1, -1):
            below = inputs if layer == 0 else self._act[layer - 1]
            if layer == last and transposed:  # (P, fan_out, fan_in), then into .grad
                weight_grad = self._transposed[1]
                torch.bmm(upstream.transpose(1, 2), below, out=weight_grad)
                self._weights[layer].grad.copy_(weight_grad.transpose(1, 2))
            else:
                weight_grad = self._grad_w_low[layer] if self._low else self._weights[layer].grad
                transposed_bmm(below, upstream, out=weight_grad)
                if self._low:
                    self._weights[layer].grad.copy_(weight_grad)
            self._biases[layer].grad.copy_(upstream.sum(dim=1, keepdim=True))
            if layer > 0:  # back through W, then through the ReLU (zero where it clamped)
                delta = self._delta[layer - 1]
                torch.bmm(upstream, self._w[layer].transpose(1, 2), out=delta)
                if self._masks:  # back through dropout (dropped units then read as clamped)
                    delta.mul_(self._masks[layer - 1])
                _relu_backward(delta, self._act[layer - 1], 0.0, grad_input=delta)
                upstream = delta
        if self.stage is not None:  # back through W[0] to the stage's output, then into it
            if self._low:
                torch.bmm(upstream, self._w[0].transpose(1, 2), out=self._stage_upstream_low)
                self.stage.upstream.copy_(self._stage_upstream_low)
            else:
                torch.bmm(upstream, self._w[0].transpose(1, 2), out=self.stage.upstream)
            self.stage.backward(features)

    def _transposed_buffers(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The output layer's outputs (P, fan_out, rows) and weight gradient (P, fan_out,
        fan_in), computed transposed, in the matmuls' precision."""
        weight = self._w[-1]
        n_probes, fan_in, fan_out = weight.shape
        return (
            weight.new_empty(n_probes, fan_out, self._rows),
            weight.new_empty(n_probes, fan_out, fan_in),
        )

    def _draw_mask(self, layer: int, row_weights: torch.Tensor) -> torch.Tensor:
        """Fresh dropout masks of one hidden layer: probe i's real rows (weight > 0, they come
        first) from its own stream, scaled by 1/keep."""
        batch_rows = (row_weights[:, :, 0] > 0).sum(dim=1).tolist()
        mask = self._masks[layer]
        for probe, (generator, batch) in enumerate(zip(self._generators, batch_rows)):
            real = mask[probe, :batch]
            real.bernoulli_(self._keep, generator=generator).div_(self._keep)
        return mask

    def select(self, kept: np.ndarray) -> StackedMLP:
        """The probes at rows ``kept`` as a new, smaller stack: copies of their parameters, the
        same architecture, precision and dropout, and their own dropout streams, continued."""
        index = torch.as_tensor(kept, device=self._weights[0].device)
        layers = [
            (w.detach()[index].clone(), b.detach()[index].clone())
            for w, b in zip(self._weights, self._biases)
        ]
        generators = [self._generators[i] for i in kept] if self._dropout else None
        stage = None if self.stage is None else self.stage.select(index)
        return StackedMLP(layers, self._rows, self._precision, self._dropout, generators, stage)

    def refresh(self) -> None:
        """After an optimiser step: copy the updated master weights into the bf16 shadows (one
        ``_foreach_copy_`` call for all of them)."""
        if self._low:
            torch._foreach_copy_(self._w + self._b, self._weights + self._biases)

    def numpy_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Copies of the master (f32) parameters on the host, per layer ``(W, b)``: ``W`` of
        shape (P, fan_in, fan_out) and ``b`` of shape (P, fan_out), float32."""
        return [
            (
                w.detach().to("cpu", copy=True).numpy(),
                b.detach().to("cpu", copy=True).numpy().reshape(b.shape[0], b.shape[2]),
            )
            for w, b in zip(self._weights, self._biases)
        ]

    def evaluate(
        self,
        features: torch.Tensor,
        labels: torch.Tensor,
        rows_per_block: int = EVAL_ROWS_PER_BLOCK,
        per_example: bool = False,
    ) -> dict[str, np.ndarray]:
        """:func:`evaluate_stacked` of this stack's master (f32) parameters."""
        stage = None if self.stage is None else self.stage.evaluator()
        return evaluate_stacked(
            self._weights, self._biases, features, labels, rows_per_block, per_example, stage=stage
        )

    def evaluate_rows(
        self,
        row: int,
        features: torch.Tensor,
        labels: torch.Tensor,
        indices: np.ndarray,
        rows_per_block: int = EVAL_ROWS_PER_BLOCK,
    ) -> dict[str, np.ndarray]:
        """The probe at ``row`` of this stack alone, on the rows ``indices`` of ``features``
        and ``labels`` (gathered block after block, never all at once): each example's
        cross-entropy ``nll`` (n,) float32, in nats, and prediction ``predictions`` ((n,)
        int32, or (n, K) uint8 for label sets), in the order of ``indices``, as
        :func:`evaluate_stacked` computes them. The online code scores each block's probe only
        on the block it transmits next."""
        if len(indices) == 0:
            dtype = np.uint8 if labels.dim() == 2 else np.int32
            return {
                "nll": np.empty(0, dtype=np.float32),
                "predictions": np.empty((0, *labels.shape[1:]), dtype=dtype),
            }
        one = slice(row, row + 1)
        stage = None
        if self.stage is not None:
            rows = torch.arange(row, row + 1, device=self._weights[0].device)
            stage = self.stage.select(rows).evaluator()
        metrics = evaluate_stacked(
            [weight[one] for weight in self._weights],
            [bias[one] for bias in self._biases],
            features,
            labels,
            rows_per_block,
            per_example=True,
            stage=stage,
            indices=torch.as_tensor(indices, dtype=torch.int64, device=labels.device),
        )
        return {"nll": metrics["nll"][0], "predictions": metrics["predictions"][0]}

    def stage_arrays(self) -> dict[str, np.ndarray]:
        """What the engine returns of the input stage (a scalar mix's ``mix_logits`` (P, L) and
        ``mix_scale`` (P,)); empty without one."""
        return {} if self.stage is None else self.stage.arrays()

    def stage_parameter_arrays(self) -> dict[str, np.ndarray]:
        """The input stage's parameters that :meth:`stage_arrays` leaves out, on the host (a
        span pooling's ``span_weight``, ``span_bias`` and ``span_score``); empty without."""
        return {} if self.stage is None else self.stage.parameter_arrays()

    @torch.no_grad()
    def losses(
        self,
        rows: torch.Tensor,
        features: torch.Tensor,
        labels: torch.Tensor,
        weights: torch.Tensor,
    ) -> torch.Tensor:
        """Per probe of the stack's ``rows``, Σ_r w_r · ℓ(x_r, y_r) in nats, on its own
        ``features`` (len(rows), n, F), ``labels`` (len(rows), n; or label sets (len(rows), n,
        K), then with the multi-label loss ℓ, else cross-entropy) and ``weights``: the
        development losses of early stopping. Dense features stream over blocks of
        :data:`EVAL_ROWS_PER_BLOCK` rows (a large development set never holds a
        (len(rows), n, width) activation); sparse rows are one block. Each block's f32 sums
        are added in float64."""
        stage = None if self.stage is None else self.stage.select(rows).evaluator()
        layer_weights = [weight[rows] for weight in self._weights]
        layer_biases = [bias[rows] for bias in self._biases]
        total = torch.zeros(len(rows), dtype=torch.float64, device=features.device)
        # dense features stream over blocks; sparse rows are one block
        block_rows = EVAL_ROWS_PER_BLOCK if isinstance(features, torch.Tensor) else None
        blocks = _logit_blocks(layer_weights, layer_biases, features, block_rows, None, stage)
        for start, logits in blocks:
            block = slice(start, start + logits.shape[1])
            if labels.is_floating_point():
                nll = binary_nll(logits, labels[:, block])
            else:
                log_probs = torch.log_softmax(logits, dim=-1)
                nll = -log_probs.gather(2, labels[:, block].unsqueeze(2)).squeeze(2)
            total += (nll * weights[:, block]).sum(dim=1, dtype=torch.float64)
        return total


@torch.no_grad()
def evaluate_stacked(
    weights: list[torch.Tensor],
    biases: list[torch.Tensor],
    features: torch.Tensor,
    labels: torch.Tensor,
    rows_per_block: int = EVAL_ROWS_PER_BLOCK,
    per_example: bool = False,
    outputs: Callable[[tuple[int, int, int]], torch.Tensor] | None = None,
    stage: Callable[..., torch.Tensor] | None = None,
    indices: torch.Tensor | None = None,
) -> dict[str, np.ndarray]:
    """Per probe of stacked ReLU-MLP parameters, in f32 and streaming over blocks of rows: mean
    cross-entropy (nats), mean of min(CE, 1) and accuracy on ``(features, labels)``; with
    ``per_example`` also each example's cross-entropy ``nll`` (P, n) float32 and arg-max
    ``predictions`` (P, n) int32. Multi-label ``labels`` (n, K) float32 0/1 are scored by
    :func:`~probemeter.probes.multilabel.evaluate_multilabel` (binary cross-entropy summed
    over labels, exact-set-match accuracy, micro- and macro-F1).

    ``weights[l]`` is (P, fan_in, fan_out) and ``biases[l]`` (P, 1, fan_out), float32, on the
    device of ``features`` (float32, (n, d), or sparse rows,
    :class:`~probemeter.probes.sparse_inputs.SparseRows`) and ``labels`` (int64, (n,)). Each block's
    cross-entropies are summed in float64 and the sums added block after block, then divided
    by n. ``outputs``, when given, returns the tensor of a shape (P, rows, fan_out) that a
    layer's outputs are written to (:func:`evaluate_as_row`); by default torch allocates them.
    ``stage`` (an input stage's ``evaluator()``: rows (n, F), and optionally ``outputs``, →
    (P, n, width)) first turns each block of rows into what the first layer reads.
    ``indices`` (int64, on the device), when given, evaluates the rows ``features[indices]``
    and ``labels[indices]`` instead, each block gathered on its own (n = len(indices)).
    """
    n_probes = weights[0].shape[0]
    if indices is not None:
        labels = labels.index_select(0, indices)
    blocks = _logit_blocks(weights, biases, features, rows_per_block, outputs, stage, indices)
    n_rows = labels.shape[0]
    if labels.dim() == 2:
        return evaluate_multilabel(blocks, labels, per_example)
    totals = torch.zeros(3, n_probes, dtype=torch.float64, device=features.device)
    per_row: dict[str, list[torch.Tensor]] = {"nll": [], "predictions": []}
    for start, hidden in blocks:
        y = labels[start : start + rows_per_block]
        log_probs = torch.log_softmax(hidden, dim=-1)
        nll = -log_probs.gather(2, y.view(1, -1, 1).expand(n_probes, -1, 1)).squeeze(2)
        totals[0] += nll.sum(dim=1, dtype=torch.float64)
        totals[1] += nll.clamp(max=1.0).sum(dim=1, dtype=torch.float64)
        predictions = log_probs.argmax(dim=2)
        totals[2] += (predictions == y).sum(dim=1, dtype=torch.float64)
        if per_example:
            per_row["nll"].append(nll.cpu())
            per_row["predictions"].append(predictions.to(torch.int32).cpu())
    values = (totals / n_rows).cpu().numpy()
    metrics = {"loss": values[0], "loss_truncated": values[1], "accuracy": values[2]}
    if per_example:
        metrics.update({name: torch.cat(parts, dim=1).numpy() for name, parts in per_row.items()})
    return metrics


def _logit_blocks(
    weights: list[torch.Tensor],
    biases: list[torch.Tensor],
    features: Any,
    rows_per_block: int | None,
    outputs: Callable[[tuple[int, int, int]], torch.Tensor] | None,
    stage: Callable[..., torch.Tensor] | None,
    indices: torch.Tensor | None = None,
) -> Iterator[tuple[int, torch.Tensor]]:
    """Each block of ``rows_per_block`` rows (None: all in one block) of ``features``, rows
    (n, F) shared by the stacked probes or each probe's own (P, n, F), or of
    ``features[indices]`` (gathered block by block): its first row and the stacked probes'
    logits (P, rows, fan_out) (see :func:`evaluate_stacked`)."""
    n_probes = weights[0].shape[0]
    per_probe = len(features.shape) == 3
    n_rows = features.shape[-2] if indices is None else indices.shape[0]
    rows_per_block = n_rows if rows_per_block is None else rows_per_block
    for start in range(0, n_rows, rows_per_block):
        stop = start + rows_per_block
        if indices is not None:
            x = features.index_select(0, indices[start:stop])
        elif start == 0 and stop >= n_rows:
            x = features  # one block (sparse rows of each probe are never sliced)
        else:
            x = features[:, start:stop] if per_probe else features[start:stop]
        if stage is not None:
            x = stage(x) if outputs is None else stage(x, outputs)
        elif not per_probe:
            x = x.expand(n_probes, -1, -1)
        hidden = stacked_affine(biases[0], x, weights[0], outputs)
        for w, b in zip(weights[1:], biases[1:]):
            hidden = stacked_affine(b, hidden.clamp_min_(0.0), w, outputs)
        yield start, hidden


def stacked_affine(
    bias: torch.Tensor | None,
    inputs: torch.Tensor,
    weight: torch.Tensor,
    outputs: Callable[[tuple[int, int, int]], torch.Tensor] | None = None,
) -> torch.Tensor:
    """``bias + inputs @ weight`` per probe (``inputs @ weight`` with ``bias`` None, dense
    inputs only), (P, rows, fan_out), for ``bias`` (P, 1, fan_out), ``inputs`` (P, rows,
    fan_in) and ``weight`` (P, fan_in, fan_out); into ``outputs(shape)`` when given, else
    differentiable by autograd. A narrow layer's (:func:`transposed_layer`) is computed as a
    (P, fan_out, rows) tensor, of which it returns the transposed view."""
    n_probes, rows, fan_out = inputs.shape[0], inputs.shape[1], weight.shape[2]
    if not _is_sparse(inputs) and transposed_layer(fan_out, rows, inputs.device):
        out = None if outputs is None else outputs((n_probes, fan_out, rows))
        return _transposed_affine(bias, inputs, weight, out).transpose(1, 2)
    out = None if outputs is None else outputs((n_probes, rows, fan_out))
    if bias is None:
        return torch.bmm(inputs, weight, out=out)
    return baddbmm(bias, inputs, weight, out=out)


def _transposed_affine(
    bias: torch.Tensor | None,
    inputs: torch.Tensor,
    weight: torch.Tensor,
    out: torch.Tensor | None,
) -> torch.Tensor:
    """``(bias + inputs @ weight)ᵀ`` per probe into ``out`` (P, fan_out, rows): the product
    Wᵀ · inputsᵀ, whose columns are the rows (:func:`transposed_layer`)."""
    if bias is None:
        return torch.bmm(weight.transpose(1, 2), inputs.transpose(1, 2), out=out)
    return torch.baddbmm(
        bias.transpose(1, 2), weight.transpose(1, 2), inputs.transpose(1, 2), out=out
    )


def _is_sparse(inputs: object) -> bool:
    """Whether ``inputs`` are sparse rows rather than a dense tensor."""
    return not isinstance(inputs, torch.Tensor)


def evaluate_as_row(
    layers: Sequence[tuple[np.ndarray, np.ndarray]],
    row: int,
    features: torch.Tensor,
    labels: torch.Tensor,
    per_example: bool = False,
    mix: tuple[np.ndarray, float] | None = None,
    span: SpanPooling | None = None,
) -> dict[str, np.ndarray]:
    """:func:`evaluate_stacked` of one probe (a stack of one) as if it were row ``row`` of a
    stack: bit for bit the numbers it had there.

    ``layers`` are the probe's ``(W, b)``, W (fan_in, fan_out) and b (fan_out,) float32;
    ``mix``, its scalar mix's logits (L,) and scale, when it has one; ``span``, its span
    poolings, when it pools spans (the engine pools each probe of a stack on its own,
    :func:`~probemeter.probes.span_attention.pooler`). Float32 matrix products can round
    differently with the memory alignment of their output (measured with MKL on this project's
    CPU: a probe's logits differed in the last bit between row 1 of a stack and a stack of its
    own when rows · K was not a multiple of 4, so that row 1 did not start on a 16-byte
    boundary), so every parameter (the span poolings' too) and every layer output (and the
    mixed inputs or pooled spans) is placed at the offset, modulo 64 bytes, that row r =
    ``row`` has in a stack: r · fan_in · fan_out, r · fan_out and r · rows · fan_out floats.
    """
    device = features.device
    weights, biases = [], []
    for weight, bias in layers:
        fan_in, fan_out = weight.shape
        placed = _placed((1, fan_in, fan_out), row * fan_in * fan_out, device)
        weights.append(placed.copy_(torch.from_numpy(np.ascontiguousarray(weight))))
        placed = _placed((1, 1, fan_out), row * fan_out, device)
        biases.append(placed.copy_(torch.from_numpy(np.ascontiguousarray(bias)).view(1, 1, -1)))
    stage = None
    if mix is not None:
        logits = torch.as_tensor(np.asarray(mix[0], dtype=np.float32), device=device)
        scale = torch.tensor(float(mix[1]), dtype=torch.float32, device=device)
        coefficients = torch.softmax(logits.view(1, 1, -1), dim=2) * scale.view(1, 1, 1)
        stage = mixer(coefficients, weights[0].shape[1])
    elif span is not None:  # each span's W, b and w placed as probe ``row`` of their stacks
        placed = [
            _placed(tuple(tensor.shape), row * tensor.numel(), device).copy_(tensor)
            for tensor in span.tensors()
        ]
        stage = pooler(placed, span.tokens, span.width, span.pooling)

    def outputs(shape: tuple[int, int, int]) -> torch.Tensor:
        return _placed(shape, row * shape[1] * shape[2], device)

    return evaluate_stacked(
        weights,
        biases,
        features,
        labels,
        per_example=per_example,
        outputs=outputs,
        stage=stage,
    )


#: floats in the 64 bytes within which :func:`_placed` positions a tensor
_LINE_FLOATS = 16


def _placed(shape: tuple[int, ...], offset: int, device: torch.device) -> torch.Tensor:
    """An uninitialised float32 tensor of ``shape`` whose first element lies ``offset``
    floats, modulo 16 (64 bytes), after a 64-byte boundary."""
    numel = math.prod(shape)
    buffer = torch.empty(numel + _LINE_FLOATS, dtype=torch.float32, device=device)
    start = (offset - buffer.data_ptr() // 4) % _LINE_FLOATS
    return buffer[start : start + numel].view(shape)
