"""Tests of the stacked evaluation: one probe evaluated as a row of a stack gives that row's
numbers bit for bit, whatever the shapes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from probemeter.probes.stacked_mlp import evaluate_as_row, evaluate_stacked

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
