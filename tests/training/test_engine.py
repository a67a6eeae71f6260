"""Tests of the batched probe engine against a slow, independent one-probe-at-a-time reference.

The reference below uses plain ``torch.nn`` modules, autograd and ``torch.optim.Adam``; it shares
nothing with the engine except the documented random-stream contract: a probe keyed by ``key``
draws its initial parameters from ``np.random.default_rng(list(key))`` via
``probe.initial_parameters`` and then, from the same generator, its minibatch order as
``rng.random((epochs, n)).argsort(axis=1)`` (epochs of its own subset, without replacement).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from reference_training import minibatch_order, train_with_adam
from torch import nn

from probemeter import Execution
from probemeter.data import nested_subset
from probemeter.probes import MLP, Linear
from probemeter.probes.stacked_mlp import StackedMLP, evaluate_as_row
from probemeter.training import engine
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import ProbeEvaluation, fit_evaluate
from probemeter.training.memory import estimate_memory

N_FEATURES = 6
N_CLASSES = 3
POOL = 150
# more evaluation rows than the engine's evaluation block (4096): exercises the streaming sums
N_EVAL = 4200


def _teacher_data(rows: int, rng: np.random.Generator, teacher: np.ndarray, noise: float):
    x = rng.normal(size=(rows, N_FEATURES)).astype(np.float32)
    logits = x @ teacher + noise * rng.normal(size=(rows, N_CLASSES))
    return x, logits.argmax(axis=1).astype(np.int64)


@pytest.fixture(scope="module")
def task():
    """A small learnable 3-class task: a noisy linear teacher on 6 Gaussian features."""
    rng = np.random.default_rng(1234)
    teacher = rng.normal(size=(N_FEATURES, N_CLASSES))
    x_train, y_train = _teacher_data(POOL, rng, teacher, noise=0.5)
    x_eval, y_eval = _teacher_data(N_EVAL, rng, teacher, noise=0.5)
    return x_train, y_train, x_eval, y_eval


def _subset(n: int, seed: int = 0) -> np.ndarray:
    return nested_subset(POOL, n, random_state=7, seed=seed)


# ---------------------------------------------------------------------------------------------
# the slow reference: one probe, nn.Linear layers, autograd, torch.optim.Adam
# ---------------------------------------------------------------------------------------------


def _reference_model(layers: list[tuple[np.ndarray, np.ndarray]]) -> nn.Sequential:
    modules: list[nn.Module] = []
    for index, (weight, bias) in enumerate(layers):
        fan_in, fan_out = weight.shape
        linear = nn.Linear(fan_in, fan_out)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(weight.T))  # nn.Linear stores (out, in)
            linear.bias.copy_(torch.from_numpy(bias))
        modules.append(linear)
        if index < len(layers) - 1:
            modules.append(nn.ReLU())
    return nn.Sequential(*modules)


def _reference_metrics(model: nn.Module, x_eval: np.ndarray, y_eval: np.ndarray):
    with torch.no_grad():
        logits = model(torch.from_numpy(x_eval))
        labels = torch.from_numpy(y_eval)
        nll = F.cross_entropy(logits, labels, reduction="none").double()
        accuracy = (logits.argmax(dim=1) == labels).double().mean()
    return nll.mean().item(), nll.clamp(max=1.0).mean().item(), accuracy.item()


def reference_fit_evaluate(x_train, y_train, x_eval, y_eval, subset, key, probe, config):
    """Train one probe the slow, obvious way; return (loss, loss_truncated, accuracy, loss0)
    where loss0 is the evaluation loss of the untrained initial probe."""
    model, initial_loss = reference_train(
        x_train, y_train, x_eval, y_eval, subset, key, probe, config
    )
    return (*_reference_metrics(model, x_eval, y_eval), initial_loss)


def reference_train(x_train, y_train, x_eval, y_eval, subset, key, probe, config):
    """The slow reference's trained ``nn.Sequential`` and its untrained evaluation loss."""
    rng = np.random.default_rng(list(key))
    layers = probe.initial_parameters(rng, x_train.shape[1], N_CLASSES)
    order, batch = minibatch_order(rng, subset, config.steps, config.batch_size)
    model = _reference_model(layers)
    initial_loss = _reference_metrics(model, x_eval, y_eval)[0]
    train_with_adam(model, list(model.parameters()), x_train, y_train, order, batch, config.lr)
    return model, initial_loss


def _run(task, sizes_seeds, probe, config, **kwargs) -> ProbeEvaluation:
    x_train, y_train, x_eval, y_eval = task
    subsets = [_subset(n, seed) for n, seed in sizes_seeds]
    keys = [(7, seed, n) for n, seed in sizes_seeds]
    engine = {name: kwargs.pop(name) for name in ("n_jobs", "max_memory") if name in kwargs}
    return fit_evaluate(
        x_train, y_train, x_eval, y_eval, N_CLASSES, subsets, keys, probe, config,
        execution=Execution(device="cpu", **engine), **kwargs,
    )  # fmt: skip


# sizes below, equal to, and above the batch size (32); 45 and 150 are not multiples of 32
SIZES_SEEDS = [(5, 0), (20, 1), (32, 0), (45, 2), (150, 0)]


# ---------------------------------------------------------------------------------------------
# (a) subsets are a function of the seeds
# ---------------------------------------------------------------------------------------------


def test_same_seeds_give_same_subsets_and_different_seeds_differ():
    assert np.array_equal(_subset(40, 3), _subset(40, 3))
    assert not np.array_equal(_subset(40, 3), _subset(40, 4))
    assert np.array_equal(_subset(40, 3)[:10], _subset(10, 3))


# ---------------------------------------------------------------------------------------------
# (b) the batched engine matches the slow reference
# ---------------------------------------------------------------------------------------------


@pytest.mark.numerics
@pytest.mark.parametrize("probe", [Linear(), MLP((16, 12))], ids=["linear", "mlp-16x12"])
def test_engine_matches_one_probe_at_a_time_reference(task, probe):
    config = TrainingConfig(steps=60, batch_size=32, lr=1e-2)
    result = _run(task, SIZES_SEEDS, probe, config)
    for i, (n, seed) in enumerate(SIZES_SEEDS):
        loss, truncated, accuracy, initial = reference_fit_evaluate(
            *task, _subset(n, seed), (7, seed, n), probe, config
        )
        # training moved the loss by far more than the tolerance, so agreement is not trivial
        assert abs(loss - initial) > 1e-2, (n, loss, initial)
        np.testing.assert_allclose(result.loss[i], loss, rtol=1e-4, atol=1e-5, err_msg=f"n={n}")
        np.testing.assert_allclose(result.loss_truncated[i], truncated, rtol=1e-4, atol=1e-5)
        # an arg-max may flip on a near-tie, never for more than a couple of rows
        assert abs(result.accuracy[i] - accuracy) <= 2 / N_EVAL, (n, result.accuracy[i], accuracy)


def test_full_pool_training_learns_the_task(task):
    """The largest probe, trained for long enough, beats the uniform code and chance clearly."""
    config = TrainingConfig(steps=150, batch_size=32, lr=1e-2)
    result = _run(task, [(150, 0)], Linear(), config)
    assert result.loss[0] < 0.6 * math.log(N_CLASSES)
    assert result.accuracy[0] > 0.75


def test_a_diverging_step_size_is_flagged_and_a_sane_one_is_not(task, recwarn):
    """lr=1e6 sends every probe's test loss far past ln K: the engine says so, naming lr."""
    _run(task, [(150, 0)], Linear(), TrainingConfig(steps=30, batch_size=32, lr=1e-2))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    with pytest.warns(RuntimeWarning, match=r"2 of 2 probes diverged: .*lr=1e\+06 is likely"):
        result = _run(task, [(150, 0), (45, 1)], Linear(), TrainingConfig(steps=30, lr=1e6))
    assert np.all(result.loss > engine.DIVERGED_FACTOR * math.log(N_CLASSES))


def test_probe_depends_on_the_pool_only_through_its_subset(task):
    """Scrambling every pool row outside a probe's subset (features and labels) leaves its
    result bit-identical: the probe never reads an example it was not given."""
    x_train, y_train, x_eval, y_eval = task
    subset = _subset(45, seed=3)
    outside = np.setdiff1d(np.arange(POOL), subset)
    rng = np.random.default_rng(5)
    x_scrambled, y_scrambled = x_train.copy(), y_train.copy()
    x_scrambled[outside] = 100 * rng.normal(size=(outside.size, N_FEATURES))
    y_scrambled[outside] = (y_train[outside] + 1) % N_CLASSES
    config = TrainingConfig(steps=40, batch_size=16, lr=1e-2)
    subsets, keys = [subset, np.arange(POOL)], [(3,), (4,)]
    results = [
        fit_evaluate(
            x,
            y,
            x_eval,
            y_eval,
            N_CLASSES,
            subsets,
            keys,
            MLP((8,)),
            config,
            execution=Execution(device="cpu"),
        )
        for x, y in ((x_train, y_train), (x_scrambled, y_scrambled))
    ]
    assert results[0].loss[0] == results[1].loss[0]
    assert results[0].accuracy[0] == results[1].accuracy[0]
    # the full-pool probe does see the scrambled rows: the test can tell the difference
    assert results[0].loss[1] != results[1].loss[1]


# ---------------------------------------------------------------------------------------------
# (c) independence from the other probes and from chunking; keys, not positions, seed probes
# ---------------------------------------------------------------------------------------------


@pytest.mark.numerics
@pytest.mark.parametrize("probe", [Linear(), MLP((16, 12))], ids=["linear", "mlp-16x12"])
def test_results_do_not_depend_on_companion_probes(task, probe):
    config = TrainingConfig(steps=40, batch_size=32, lr=1e-2)
    group_a = [(20, 1), (45, 2), (150, 0)]
    group_b = [(5, 3), (32, 4), (100, 5), (150, 6), (45, 7)]
    alone = _run(task, group_a, probe, config)
    together = _run(task, group_b[:2] + group_a + group_b[2:], probe, config)
    for name in ("loss", "loss_truncated", "accuracy"):
        np.testing.assert_allclose(
            getattr(together, name)[2:5], getattr(alone, name), rtol=1e-6, atol=1e-7
        )


@pytest.mark.numerics
@pytest.mark.parametrize("probe", [Linear(), MLP((16, 12))], ids=["linear", "mlp-16x12"])
def test_results_do_not_depend_on_chunking(task, probe):
    config = TrainingConfig(steps=40, batch_size=32, lr=1e-2)
    sizes_seeds = [*SIZES_SEEDS, (45, 5), (150, 6)]
    one_chunk = _run(task, sizes_seeds, probe, config, max_memory=4.0)
    # a budget that holds the largest probe alone, and no two probes, forces one per chunk
    alone = estimate_memory(
        probe, N_FEATURES, N_CLASSES, config, rows=32, n_train=POOL, n_eval=N_EVAL
    ).chunk_bytes(1)
    subsets = [_subset(n, seed) for n, seed in sizes_seeds]
    dims = (N_FEATURES, N_CLASSES)
    chunks = engine._plan_chunks(subsets, probe, dims, config, alone / 2**30, 1, n_eval=N_EVAL)
    assert sorted(len(members) for members, _ in chunks) == [1] * len(sizes_seeds)
    one_per_chunk = _run(task, sizes_seeds, probe, config, max_memory=alone / 2**30)
    for name in ("loss", "loss_truncated", "accuracy"):
        np.testing.assert_allclose(
            getattr(one_per_chunk, name), getattr(one_chunk, name), rtol=1e-6, atol=1e-7
        )


@pytest.mark.numerics
@pytest.mark.slow
def test_results_do_not_depend_on_worker_processes(task, monkeypatch):
    """Chunks trained in worker processes give the same numbers as in this process."""
    config = TrainingConfig(steps=30, batch_size=32, lr=1e-2)
    sizes_seeds = [*SIZES_SEEDS, (45, 5), (150, 6)]
    in_process = _run(task, sizes_seeds, MLP((16,)), config, n_jobs=1)
    # this work is tiny, so the engine would keep it in-process: lift the threshold
    monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)
    in_workers = _run(task, sizes_seeds, MLP((16,)), config, n_jobs=2)
    for name in ("loss", "loss_truncated", "accuracy"):
        np.testing.assert_allclose(
            getattr(in_workers, name), getattr(in_process, name), rtol=1e-6, atol=1e-7
        )


@pytest.mark.numerics
def test_probe_order_permutes_results(task):
    config = TrainingConfig(steps=30, batch_size=32, lr=1e-2)
    forward = _run(task, SIZES_SEEDS, Linear(), config)
    backward = _run(task, SIZES_SEEDS[::-1], Linear(), config)
    np.testing.assert_allclose(backward.loss[::-1], forward.loss, rtol=1e-6, atol=1e-7)


def test_key_seeds_the_probe(task):
    """Same subset, different keys: different initial weights and orders, different results;
    same subset and key twice in one call: identical results."""
    x_train, y_train, x_eval, y_eval = task
    subset = _subset(45)
    config = TrainingConfig(steps=20, batch_size=16, lr=1e-2)
    result = fit_evaluate(
        x_train, y_train, x_eval, y_eval, N_CLASSES, [subset, subset, subset],
        [(0, 1), (0, 2), (0, 1)], MLP((8,)), config, execution=Execution(device="cpu"),
    )  # fmt: skip
    assert result.loss[0] != result.loss[1]
    assert result.loss[0] == result.loss[2]


# ---------------------------------------------------------------------------------------------
# (d) determinism
# ---------------------------------------------------------------------------------------------


def test_same_call_twice_is_bit_identical(task):
    config = TrainingConfig(steps=30, batch_size=32, lr=1e-2)
    first = _run(task, SIZES_SEEDS, MLP((16,)), config)
    second = _run(task, SIZES_SEEDS, MLP((16,)), config)
    for name in ("loss", "loss_truncated", "accuracy"):
        assert np.array_equal(getattr(first, name), getattr(second, name)), name


# ---------------------------------------------------------------------------------------------
# (e) every probe sees exactly its own n examples: the minibatch order
# ---------------------------------------------------------------------------------------------


def _orders(subsets, keys, batch, steps):
    rngs = [np.random.default_rng(list(key)) for key in keys]
    rows = max(min(len(subset), batch) for subset in subsets)
    return engine._minibatch_order(subsets, rngs, batch, rows, steps)[0]


@pytest.mark.parametrize(("n", "batch", "steps"), [(40, 8, 25), (96, 32, 30), (50, 32, 17)])
def test_minibatch_order_walks_epochs_without_replacement(n, batch, steps):
    subset = np.random.default_rng(n).choice(1000, size=n, replace=False)
    order = _orders([subset], [(3, n)], batch, steps)
    assert order.shape == (1, steps * batch)
    row = order[0]
    assert set(row.tolist()) <= set(subset.tolist())
    # every complete epoch (window of n consecutive draws) is a permutation of the subset
    for start in range(0, row.size - n + 1, n):
        assert sorted(row[start : start + n].tolist()) == sorted(subset.tolist()), start
    # over the whole of training, counts of the examples differ by at most one
    counts = np.array([np.sum(row == index) for index in subset])
    assert counts.max() - counts.min() <= 1
    if steps * batch >= n:
        assert counts.min() >= 1  # every example of the subset is seen


def test_minibatch_order_full_batch_when_subset_is_small():
    """With n < batch size the effective batch is n: every step is the whole subset."""
    subset = np.array([11, 3, 7, 40, 25])
    order = _orders([subset], [(0, 5)], batch=subset.size, steps=12)
    for step_batch in order[0].reshape(12, subset.size):
        assert sorted(step_batch.tolist()) == sorted(subset.tolist())


def test_minibatch_order_is_keyed_per_probe_not_by_position():
    a = np.arange(10, 50)
    b = np.arange(100, 140)
    together = _orders([a, b], [(1, 2), (3, 4)], batch=8, steps=15)
    alone = _orders([b], [(3, 4)], batch=8, steps=15)
    assert np.array_equal(together[1], alone[0])
    different_key = _orders([b], [(3, 5)], batch=8, steps=15)
    assert not np.array_equal(different_key[0], alone[0])


def test_narrow_batches_are_padded_with_zero_weight_rows():
    """Probes of different effective batch share a chunk: the narrow one's real rows are its
    own order, its padding repeats a real row and weighs nothing; weights are 1/b on real rows."""
    small, large = np.arange(5), np.arange(100, 140)
    rngs = [np.random.default_rng([1, 5]), np.random.default_rng([2, 40])]
    order, weights = engine._minibatch_order([small, large], rngs, 8, 8, 12)
    alone = _orders([small], [(1, 5)], batch=8, steps=12).reshape(12, 5)
    padded = order[0].reshape(12, 8)
    assert np.array_equal(padded[:, :5], alone)
    assert np.array_equal(padded[:, 5:], np.repeat(padded[:, :1], 3, axis=1))
    np.testing.assert_array_equal(weights[0], np.float32([0.2] * 5 + [0.0] * 3))
    np.testing.assert_array_equal(weights[1], [0.125] * 8)


@pytest.mark.numerics
def test_merged_chunks_match_separate_training(task, monkeypatch):
    """Padding narrow probes into a wider chunk does not change their results."""
    config = TrainingConfig(steps=40, batch_size=32, lr=1e-2)
    sizes_seeds = [(5, 0), (20, 1), (45, 2)]
    monkeypatch.setitem(engine._STEP_COSTS, "cpu", (0.0, 5e10))  # never merge
    separate = _run(task, sizes_seeds, MLP((16,)), config)
    monkeypatch.setitem(engine._STEP_COSTS, "cpu", (1e9, 5e10))  # always merge
    merged = _run(task, sizes_seeds, MLP((16,)), config)
    for name in ("loss", "loss_truncated", "accuracy"):
        np.testing.assert_allclose(
            getattr(merged, name), getattr(separate, name), rtol=1e-5, atol=1e-6
        )


def test_a_gpu_merges_the_narrow_chunks_a_cpu_keeps_apart():
    """The reference protocol's plan (digits' 64 pixels, MLP 512×512, 10 sizes × 4 seeds, batch
    256, one worker): on the CPU the sizes below the batch train in chunks of their own width,
    where a step's fixed cost is small against the padding's arithmetic; on a GPU, where the
    fixed cost dominates, every probe goes into one chunk of 256 rows."""
    sizes = [10, 17, 29, 51, 87, 149, 256, 440, 755, 1297]
    subsets = [np.arange(n) for _ in range(4) for n in sizes]
    config = TrainingConfig(steps=1000, batch_size=256, lr=1e-4)

    def plan(device_type: str) -> list[tuple[int, int]]:
        chunks = engine._plan_chunks(
            subsets, MLP((512, 512)), (64, 10), config, 64.0, 1, device_type=device_type
        )
        return [(members.size, rows) for members, rows in chunks]

    assert plan("cpu") == [(16, 256), (4, 149), (4, 87), (4, 51), (4, 29), (4, 17), (4, 10)]
    assert plan("cuda") == [(40, 256)]


def test_minibatch_order_follows_the_documented_stream():
    """The order is drawn from the probe's stream after its initial parameters, as the
    reference assumes: permutations of ``rng.random((epochs, n)).argsort(axis=1)``."""
    subset = np.arange(200, 237)
    key = (9, 9, 37)
    rng = np.random.default_rng(list(key))
    order = engine._minibatch_order([subset], [rng], 16, 16, 10)[0][0]
    expected_rng = np.random.default_rng(list(key))
    epochs = math.ceil(160 / 37)
    expected = subset[expected_rng.random((epochs, 37)).argsort(axis=1).reshape(-1)[:160]]
    assert np.array_equal(order, expected)


# ---------------------------------------------------------------------------------------------
# (f) bf16 precision
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("probe", [Linear(), MLP((16,))], ids=["linear", "mlp-16"])
def test_bf16_runs_and_stays_close_to_f32(task, probe):
    sizes_seeds = [(20, 1), (45, 2), (150, 0)]
    f32 = _run(task, sizes_seeds, probe, TrainingConfig(steps=60, batch_size=32, lr=3e-3))
    bf16 = _run(
        task, sizes_seeds, probe, TrainingConfig(steps=60, batch_size=32, lr=3e-3, precision="bf16")
    )
    assert np.all(np.isfinite(bf16.loss))
    np.testing.assert_allclose(bf16.loss, f32.loss, rtol=0.05)
    np.testing.assert_allclose(bf16.accuracy, f32.accuracy, atol=0.05)


# ---------------------------------------------------------------------------------------------
# (g) metric ranges and consistency
# ---------------------------------------------------------------------------------------------


def test_metrics_are_in_range_and_consistent(task):
    # a large learning rate makes some probes confidently wrong (losses above 1 nat)
    config = TrainingConfig(steps=30, batch_size=8, lr=0.3)
    result = _run(task, SIZES_SEEDS, MLP((16,)), config)
    assert result.loss.shape == result.loss_truncated.shape == result.accuracy.shape == (5,)
    assert np.all(result.loss_truncated <= result.loss + 1e-12)
    assert np.all(result.loss_truncated <= 1.0)
    assert np.all(result.loss_truncated >= 0.0)
    assert np.all((result.accuracy >= 0.0) & (result.accuracy <= 1.0))
    # accuracy is a count over the evaluation rows
    np.testing.assert_allclose(result.accuracy * N_EVAL, np.round(result.accuracy * N_EVAL))
    # truncation is real: some probe has loss > 1 and then loss_truncated < loss
    assert np.any(result.loss > 1.0)
    assert np.all(result.loss_truncated[result.loss > 1.0] < result.loss[result.loss > 1.0])


@pytest.mark.numerics
@pytest.mark.slow
def test_per_example_outputs_agree_with_the_aggregates(task, monkeypatch):
    """Per-example cross-entropies average to the loss, predictions reproduce the accuracy and
    the same loss per probe comes back from worker processes."""
    _, _, _, y_eval = task
    config = TrainingConfig(steps=30, batch_size=8, lr=0.3)
    result = _run(task, SIZES_SEEDS, MLP((16,)), config, per_example=True)
    assert result.nll.shape == result.predictions.shape == (5, N_EVAL)
    assert np.all(result.nll >= 0)
    np.testing.assert_allclose(result.nll.mean(axis=1), result.loss, rtol=1e-5)
    np.testing.assert_allclose(
        np.minimum(result.nll, 1.0).mean(axis=1), result.loss_truncated, rtol=1e-5
    )
    np.testing.assert_array_equal((result.predictions == y_eval).mean(axis=1), result.accuracy)
    monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)
    in_workers = _run(task, SIZES_SEEDS, MLP((16,)), config, per_example=True, n_jobs=2)
    np.testing.assert_allclose(in_workers.nll, result.nll, rtol=1e-5, atol=1e-6)
    assert _run(task, SIZES_SEEDS, MLP((16,)), config).nll is None


def test_no_probes_gives_empty_results(task):
    result = _run(task, [], Linear(), TrainingConfig(steps=2))
    assert result.loss.shape == (0,)
    assert result.parameters is None and result.stack_rows is None
    kept = _run(task, [], MLP((4,)), TrainingConfig(steps=2), return_parameters=True)
    assert kept.stack_rows.shape == (0,)
    assert [(w.shape, b.shape) for w, b in kept.parameters] == [
        ((0, N_FEATURES, 4), (0, 4)),
        ((0, 4, N_CLASSES), (0, N_CLASSES)),
    ]


# ---------------------------------------------------------------------------------------------
# (g') returned parameters: the trained weights, reproducing the metrics exactly
# ---------------------------------------------------------------------------------------------


def _metrics_of(result, x_eval, y_eval):
    """The engine's metrics recomputed from returned parameters, one probe at a time, placed
    as in its stack (``stack_rows``)."""
    rows = []
    for probe, row in enumerate(result.stack_rows):
        layers = [(w[probe], b[probe]) for w, b in result.parameters]
        features, labels = torch.from_numpy(x_eval), torch.from_numpy(y_eval)
        rows.append(evaluate_as_row(layers, int(row), features, labels))
    return {name: np.concatenate([row[name] for row in rows]) for name in rows[0]}


def _assert_reproduced(result, task):
    """Every probe's returned parameters give exactly its returned metrics."""
    recomputed = _metrics_of(result, task[2], task[3])
    for name in ("loss", "loss_truncated", "accuracy"):
        assert np.array_equal(recomputed[name], getattr(result, name)), name


@pytest.mark.numerics
@pytest.mark.parametrize("probe", [Linear(), MLP((16, 12))], ids=["linear", "mlp-16x12"])
def test_returned_parameters_are_the_trained_weights_and_change_nothing(task, probe):
    config = TrainingConfig(steps=60, batch_size=32, lr=1e-2)
    plain = _run(task, SIZES_SEEDS, probe, config)
    kept = _run(task, SIZES_SEEDS, probe, config, return_parameters=True)
    for name in ("loss", "loss_truncated", "accuracy"):
        assert np.array_equal(getattr(kept, name), getattr(plain, name)), name
    shapes = probe.layer_shapes(N_FEATURES, N_CLASSES)
    assert [(w.shape, b.shape) for w, b in kept.parameters] == [
        ((5, fan_in, fan_out), (5, fan_out)) for fan_in, fan_out in shapes
    ]
    assert all(w.dtype == b.dtype == np.float32 for w, b in kept.parameters)
    assert plain.stack_rows is None and kept.stack_rows.dtype == np.int64
    # over 4200 evaluation rows (two of the engine's blocks), bit for bit
    _assert_reproduced(kept, task)
    for i, (n, seed) in enumerate(SIZES_SEEDS):
        reference, _ = reference_train(*task, _subset(n, seed), (7, seed, n), probe, config)
        linears = [module for module in reference if isinstance(module, torch.nn.Linear)]
        for (weights, biases), linear in zip(kept.parameters, linears):
            # the reference trains in another order of float operations: close, not equal
            np.testing.assert_allclose(weights[i], linear.weight.detach().numpy().T, atol=2e-5)
            np.testing.assert_allclose(biases[i], linear.bias.detach().numpy(), atol=2e-5)
        initial = probe.initial_parameters(np.random.default_rng([7, seed, n]), N_FEATURES, 3)
        assert not np.allclose(kept.parameters[0][0][i], initial[0][0], atol=1e-3)  # trained


def test_early_stopping_returns_each_probes_best_epoch_parameters(task, monkeypatch):
    """Probes stop at different epochs, so the stack is compacted on the way; the parameters
    returned are those the metrics were computed with (each probe's best dev epoch)."""
    config = TrainingConfig(batch_size=16, lr=1e-2, early_stopping=True, max_epochs=40)
    sizes_seeds = [(20, 1), (45, 2), (150, 0), (150, 3), (32, 4)]
    plain = _run(task, sizes_seeds, MLP((8,)), config)
    compactions = []
    select = StackedMLP.select
    monkeypatch.setattr(
        StackedMLP, "select", lambda self, kept: compactions.append(kept) or select(self, kept)
    )
    kept = _run(task, sizes_seeds, MLP((8,)), config, return_parameters=True)
    assert compactions  # stopped probes were dropped from the stack before the others ended
    assert np.array_equal(kept.epochs, plain.epochs)
    assert np.array_equal(kept.loss, plain.loss)
    _assert_reproduced(kept, task)


@pytest.mark.slow
def test_parameters_from_worker_processes_reproduce_their_metrics(task, monkeypatch):
    config = TrainingConfig(steps=30, batch_size=32, lr=1e-2)
    sizes_seeds = [*SIZES_SEEDS, (45, 5), (150, 6)]
    monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)
    in_workers = _run(task, sizes_seeds, MLP((16,)), config, n_jobs=2, return_parameters=True)
    _assert_reproduced(in_workers, task)
    early = TrainingConfig(batch_size=16, lr=1e-2, early_stopping=True, max_epochs=20)
    _assert_reproduced(
        _run(task, sizes_seeds, MLP((16,)), early, n_jobs=2, return_parameters=True), task
    )


# ---------------------------------------------------------------------------------------------
# (h) bad arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"steps": 0}, "steps"),
        ({"steps": -3}, "steps"),
        ({"steps": 2.5}, "steps"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 8.0}, "batch_size"),
        ({"lr": 0.0}, "lr"),
        ({"lr": -1e-3}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"lr": float("inf")}, "lr"),
        ({"lr": "0.01"}, "lr"),
        ({"precision": "fp16"}, "precision"),
        ({"precision": "bfloat16"}, "precision"),
    ],
)
def test_training_config_rejects_bad_values(kwargs, argument):
    with pytest.raises(ValueError, match=rf"\b{argument}\b"):
        TrainingConfig(**kwargs)


@pytest.mark.parametrize("kwargs", [{"steps": True}, {"batch_size": True}, {"lr": True}])
def test_training_config_rejects_bools(kwargs):
    with pytest.raises(ValueError, match=rf"\b{next(iter(kwargs))}\b"):
        TrainingConfig(**kwargs)


def test_training_config_accepts_numpy_scalars():
    config = TrainingConfig(steps=np.int64(5), batch_size=np.int32(8), lr=np.float32(1e-3))
    assert config.lr == pytest.approx(1e-3)


def test_training_config_records_the_stopping_rule():
    spec = TrainingConfig(steps=123, batch_size=16, lr=1e-3).to_dict()
    assert spec["steps"] == 123
    assert spec["batch_size"] == 16
    assert "123" in spec["stopping"]


def test_fit_evaluate_rejects_mismatched_subsets_and_keys(task):
    x_train, y_train, x_eval, y_eval = task
    with pytest.raises(ValueError, match="keys"):
        fit_evaluate(
            x_train, y_train, x_eval, y_eval, N_CLASSES, [_subset(10), _subset(20)], [(0,)],
            Linear(), TrainingConfig(steps=2), execution=Execution(device="cpu"),
        )  # fmt: skip


def test_fit_evaluate_rejects_bad_memory_budget(task):
    x_train, y_train, x_eval, y_eval = task
    with pytest.raises(ValueError, match="max_memory"):
        fit_evaluate(
            x_train, y_train, x_eval, y_eval, N_CLASSES, [_subset(10)], [(0,)],
            Linear(), TrainingConfig(steps=2), execution=Execution(device="cpu", max_memory=0),
        )  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"subsets": [np.array([], dtype=np.int64)]}, r"subsets\[0\] is empty"),
        ({"subsets": [np.array([0, 10**6])]}, "outside the pool"),
        ({"subsets": [np.array([-1, 2])]}, "outside the pool"),
        ({"n_classes": 1}, "y_train holds labels outside"),
        ({"y_eval": np.array([], dtype=np.int64)}, "evaluation set"),
    ],
)
def test_fit_evaluate_rejects_bad_subsets_labels_and_empty_eval(task, change, message):
    x_train, y_train, x_eval, y_eval = task
    arguments = {
        "X_train": x_train, "y_train": y_train, "X_eval": x_eval, "y_eval": y_eval,
        "n_classes": N_CLASSES, "subsets": [_subset(10)], "keys": [(0,)], "probe": Linear(),
        "config": TrainingConfig(steps=2),
    }  # fmt: skip
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        fit_evaluate(**arguments, execution=Execution(device="cpu"))


@pytest.mark.parametrize("n_jobs", [0, -1000, 1.5])
def test_fit_evaluate_rejects_bad_n_jobs(task, n_jobs):
    with pytest.raises(ValueError, match="n_jobs"):
        _run(task, [(10, 0)], Linear(), TrainingConfig(steps=2), n_jobs=n_jobs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu(task):
    config = TrainingConfig(steps=40, batch_size=32, lr=1e-2)
    cpu = _run(task, SIZES_SEEDS, MLP((16,)), config)
    x_train, y_train, x_eval, y_eval = task
    subsets = [_subset(n, seed) for n, seed in SIZES_SEEDS]
    keys = [(7, seed, n) for n, seed in SIZES_SEEDS]
    cuda = fit_evaluate(
        x_train, y_train, x_eval, y_eval, N_CLASSES, subsets, keys, MLP((16,)), config,
        execution=Execution(device="cuda"),
    )  # fmt: skip
    np.testing.assert_allclose(cuda.loss, cpu.loss, rtol=1e-3, atol=1e-4)
