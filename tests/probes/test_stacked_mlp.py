"""Tests of the stacked probes: the hand-written backward equals autograd's, a narrow output
layer's transposed products included; one probe evaluated as a row of a stack gives that row's
numbers bit for bit, whatever the shapes."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from probemeter.probes import MLP, Linear
from probemeter.probes.sparse_inputs import SparseRows, StackedSparseRows
from probemeter.probes.stacked_mlp import (
    evaluate_as_row,
    evaluate_stacked,
    stacked_affine,
    transposed_layer,
)

CPU = torch.device("cpu")


@pytest.mark.numerics
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize(("rows", "fan_out"), [(40, 10), (40, 3), (8, 10), (40, 16)])
def test_stacked_affine_equals_baddbmm_with_its_gradients(rows, fan_out, with_bias):
    """bias + inputs @ weight per probe (inputs @ weight without a bias), whichever way it is
    computed (transposed for the first two shapes), with the same autograd gradients (the
    Pareto, variational and structural probes train through it)."""
    n_probes, fan_in = 3, 20
    gen = torch.Generator().manual_seed(rows * fan_out)
    leaves = [
        torch.randn(shape, generator=gen)
        for shape in ((n_probes, 1, fan_out), (n_probes, rows, fan_in), (n_probes, fan_in, fan_out))
    ]
    upstream = torch.randn(n_probes, rows, fan_out, generator=gen)
    if not with_bias:
        leaves = leaves[1:]
    results = []
    ours = stacked_affine if with_bias else functools.partial(stacked_affine, None)
    for function in (ours, torch.baddbmm if with_bias else torch.bmm):
        tensors = [t.clone().requires_grad_() for t in leaves]
        output = function(*tensors)
        (output * upstream).sum().backward()
        results.append([output.detach(), *(t.grad for t in tensors)])
    assert results[0][0].shape == (n_probes, rows, fan_out)
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.numerics
@pytest.mark.parametrize(
    ("probe", "k", "rows", "precision", "transposed"),
    [
        (MLP((24,)), 10, 40, "f32", True),  # narrow output, enough rows: transposed
        (MLP((24,)), 10, 40, "bf16", True),
        (Linear(), 3, 64, "f32", True),
        (MLP((24,)), 10, 20, "f32", False),  # too few rows
        (MLP((24,)), 16, 40, "f32", False),  # not narrow
    ],
)
def test_gradients_match_autograd(probe, k, rows, precision, transposed):
    """Every gradient of the weighted cross-entropy Σ_r w_r · CE equals autograd's through a
    plain forward (padding rows of weight 0 included), whichever way the products run."""
    assert transposed_layer(k, rows, CPU) == transposed
    n_probes, d = 3, 12
    stack = probe.stack(
        [np.random.default_rng(i) for i in range(n_probes)], d, k, rows, precision, CPU
    )
    gen = torch.Generator().manual_seed(k + rows)
    x = torch.randn(n_probes, rows, d, generator=gen)
    y = torch.randint(0, k, (n_probes, rows, 1), generator=gen)
    weights = torch.zeros(n_probes, rows, 1)
    for p, batch in enumerate((rows, rows // 2, 1)):
        weights[p, :batch] = 1 / batch
    leaves = [t.detach().clone().requires_grad_() for t in stack.parameters]
    stack.accumulate_gradients(x, y, weights)
    hidden = x
    for layer in range(len(leaves) // 2):
        if layer:
            hidden = hidden.relu()
        hidden = torch.baddbmm(leaves[2 * layer + 1], hidden, leaves[2 * layer])
    ce = F.cross_entropy(hidden.reshape(-1, k), y.reshape(-1), reduction="none")
    (ce * weights.reshape(-1)).sum().backward()
    rtol, atol = (1e-5, 1e-7) if precision == "f32" else (3e-2, 3e-3)
    for got, want in zip(stack.parameters, leaves):
        torch.testing.assert_close(got.grad, want.grad, rtol=rtol, atol=atol)
        assert want.grad.abs().max() > 1e-3  # not trivially zero


@pytest.mark.numerics
def test_linear_probe_on_sparse_rows_matches_dense():
    """A linear probe's only layer reads sparse rows as they are (never transposed, and no
    transposed buffers are made): its gradients equal those from the same rows made dense,
    which run transposed."""
    n_probes, rows, d, k = 2, 48, 30, 4
    assert transposed_layer(k, rows, CPU)
    rng = np.random.default_rng(3)
    matrix = sp.random(n_probes * rows, d, density=0.2, random_state=rng, dtype=np.float32)
    y = torch.from_numpy(rng.integers(0, k, (n_probes, rows, 1)))
    weights = torch.full((n_probes, rows, 1), 1 / rows)
    gradients = []
    for inputs in (
        SparseRows.from_scipy(matrix, CPU).view(n_probes, rows, -1),
        torch.from_numpy(matrix.toarray()).view(n_probes, rows, d),
    ):
        rngs = [np.random.default_rng(i) for i in range(n_probes)]
        stack = Linear().stack(rngs, d, k, rows, "f32", CPU)
        stack.accumulate_gradients(inputs, y, weights)
        assert (stack._transposed is None) == isinstance(inputs, SparseRows | StackedSparseRows)
        gradients.append([t.grad for t in stack.parameters])
    for sparse, dense in zip(*gradients):
        torch.testing.assert_close(sparse, dense, rtol=1e-5, atol=1e-7)


#: (features, hidden widths, classes, evaluation rows, probes): odd rows and widths put stack
#: rows off 16-byte boundaries; 8193 rows stream over three blocks (4096 + 4096 + 1)
SHAPES = [
    (16, (), 10, 539, 7),
    (64, (32, 16), 10, 539, 6),
    (13, (7, 5), 7, 5001, 11),
    (33, (17,), 2, 8193, 5),
    (64, (512,), 10, 539, 3),
]


@pytest.mark.parametrize(("d", "hidden", "k", "n", "p"), SHAPES)
def test_a_probe_evaluated_as_its_row_gives_that_rows_numbers(d, hidden, k, n, p):
    rng = np.random.default_rng(d * n)
    widths = [d, *hidden, k]
    weights = [
        rng.standard_normal((p, a, b)).astype(np.float32) / np.float32(np.sqrt(a))
        for a, b in itertools.pairwise(widths)
    ]
    biases = [rng.standard_normal((p, b)).astype(np.float32) for b in widths[1:]]
    features = torch.from_numpy(rng.standard_normal((n, d)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, k, n))
    stacked = evaluate_stacked(
        [torch.from_numpy(w) for w in weights],
        [torch.from_numpy(b)[:, None, :] for b in biases],
        features,
        labels,
        per_example=True,
    )
    for row in range(p):
        layers = [(w[row], b[row]) for w, b in zip(weights, biases)]
        alone = evaluate_as_row(layers, row, features, labels, per_example=True)
        for name in ("loss", "loss_truncated", "accuracy"):
            assert alone[name][0] == stacked[name][row], (name, row)
        assert np.array_equal(alone["nll"][0], stacked["nll"][row])
        assert np.array_equal(alone["predictions"][0], stacked["predictions"][row])
