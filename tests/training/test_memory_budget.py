"""The memory budget ``max_memory`` is a limit: the engine's estimate of a probe's bytes, the
refusal of a probe that cannot fit before anything is allocated, chunks that fit the budget,
and initial weights drawn in float32 (no float64 copy, the same U(-1/sqrt(fan_in), ...) law).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from probemeter import Execution
from probemeter.cli.main import main as cli_main
from probemeter.probes import MLP
from probemeter.probes.draws import fill_uniform
from probemeter.training import engine
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate
from probemeter.training.memory import (
    MemoryEstimate,
    check_memory_budget,
    estimate_memory,
    memory_budget,
)

MiB = 2**20
WORKSPACE = 8 * MiB  # memory._WORKSPACE_BYTES: matmul packing buffers, once per chunk


@pytest.fixture(scope="module")
def task() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A small 3-class task on 6 Gaussian features: pool 120, evaluation 50."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(170, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return x[:120], y[:120], x[120:], y[120:]


# ---------------------------------------------------------------------------------------------
# the estimate, by hand
# ---------------------------------------------------------------------------------------------


def test_estimate_of_a_tiny_probe_matches_a_hand_count():
    """MLP(3) on d = 2 features, K = 2 classes, minibatches of 4 rows, 5 steps, 10 evaluation
    rows, f32: every part counted by hand from the engine's allocations."""
    config = TrainingConfig(steps=5, batch_size=4)
    memory = estimate_memory(MLP((3,)), 2, 2, config, n_train=4, n_eval=10)
    # layers 2 -> 3 -> 2: weights 2*3 + 3*2 = 12, biases 3 + 2 = 5, 17 parameters
    assert memory.parameters == 4 * 17
    assert memory.gradients == 4 * 17
    assert memory.optimizer == 8 * 17  # Adam's two moments
    assert memory.shadows == 0  # f32
    # pre-activations (3 + 2), activations (3) and deltas (3) of 4 rows, f32
    assert memory.activations == 4 * 4 * (3 + 2 + 3 + 3)
    # gathered inputs (2 f32), indices and labels (int64 each), softmax (2) + scatter operand (1)
    assert memory.minibatch == 4 * (4 * 2 + 8 + 8 + 4 * (2 + 1))
    # int64 order of 5 steps x 4 rows, and 4 f32 row weights
    assert memory.index_stream == 8 * 5 * 4 + 4 * 4
    assert memory.early_stopping == 0
    # 10 rows: widest consecutive pair of outputs 3 + 2 (then logits 2 + log-probs 2 = 4);
    # losses and truncated losses (f32), predictions (int64), comparison (bool)
    assert memory.evaluation == 10 * (4 * 5 + 4 + 4 + 8 + 1)
    # once per chunk: float64 draw and argsort over 5*4 + 4 indices, the gathered order, workspace
    assert memory.chunk_overhead == WORKSPACE + 16 * (20 + 4) + 8 * 20
    assert memory.training == 68 + 68 + 176 + 176 + 144 + 136
    assert memory.evaluating == 68 + 68 + 176 + 176 + 370
    assert memory.per_probe == max(memory.training, memory.evaluating) == 858
    assert memory.chunk_bytes(3) == memory.chunk_overhead + 3 * 858
    assert memory.probes_within(memory.chunk_bytes(3)) == 3
    assert memory.probes_within(memory.chunk_bytes(3) - 1) == 2
    assert memory.probes_within(memory.chunk_overhead) == 0


@pytest.mark.parametrize("hidden", [4, 8, 16])
def test_parameter_parts_grow_with_hidden_size(hidden):
    d, k = 5, 3
    config = TrainingConfig(steps=3, batch_size=8)
    memory = estimate_memory(MLP((hidden, hidden)), d, k, config, n_eval=8)
    n_params = (d + 1) * hidden + (hidden + 1) * hidden + (hidden + 1) * k
    assert n_params == MLP((hidden, hidden)).parameter_count(d, k)
    assert memory.parameters == memory.gradients == 4 * n_params
    assert memory.optimizer == 8 * n_params
    assert memory.activations == 8 * 4 * (3 * 2 * hidden + k)
    # 8 evaluation rows; two hidden layers of `hidden` units are the widest pair of outputs
    assert memory.evaluation == 8 * (4 * 2 * hidden + 17)


def test_estimate_grows_with_hidden_size_and_batch():
    config = TrainingConfig(steps=10, batch_size=256)
    by_width = [estimate_memory(MLP((h, h)), 32, 5, config).per_probe for h in (8, 64, 512)]
    assert by_width == sorted(by_width) and by_width[0] < by_width[1] < by_width[2]
    d, k, hidden = 32, 5, (64, 32)
    for rows in (8, 16, 32):
        memory = estimate_memory(MLP(hidden), d, k, config, rows=rows)
        assert memory.activations == rows * 4 * (3 * 96 + k)
        assert memory.minibatch == rows * (4 * d + 16 + 4 * (k + 1))
        assert memory.index_stream == 8 * 10 * rows + 4 * rows
    small, large = (estimate_memory(MLP(hidden), d, k, config, rows=r) for r in (16, 32))
    assert large.training > small.training and large.parameters == small.parameters


def test_bf16_shadows_count_only_where_bf16_is_used():
    probe, config = MLP((32,)), TrainingConfig(steps=2, batch_size=128, precision="bf16")
    n_params, weights = probe.parameter_count(10, 4), 10 * 32 + 32 * 4
    wide = estimate_memory(probe, 10, 4, config, rows=64)
    assert wide.shadows == 2 * n_params + 2 * weights  # bf16 parameters and weight gradients
    assert wide.activations == 64 * 2 * (3 * 32 + 4)  # bf16 buffers
    narrow = estimate_memory(probe, 10, 4, config, rows=63)  # trains in f32 (memory-bound)
    assert narrow.shadows == 0 and narrow.activations == 63 * 4 * (3 * 32 + 4)


def test_dropout_masks_and_per_example_results_are_counted():
    config = TrainingConfig(steps=2, batch_size=16)
    plain = estimate_memory(MLP((32,)), 10, 4, config, n_eval=5000)
    dropped = estimate_memory(MLP((32,), dropout=0.3), 10, 4, config, n_eval=5000)
    assert dropped.activations - plain.activations == 16 * 4 * 32
    every = estimate_memory(MLP((32,)), 10, 4, config, n_eval=5000, per_example=True)
    assert every.evaluation - plain.evaluation == 5000 * 16  # f32 + int32, then concatenated


def test_early_stopping_counts_its_copies_instead_of_an_index_stream():
    probe = MLP((64,))
    config = TrainingConfig(batch_size=32, early_stopping=True)
    memory = estimate_memory(probe, 20, 5, config, n_train=1000)
    assert memory.index_stream == 0
    # at least the best-development parameters and half a stack's worth of compaction copies
    assert memory.early_stopping >= memory.parameters + memory.parameters * 2
    larger = estimate_memory(probe, 20, 5, config, n_train=10_000)
    assert larger.early_stopping > memory.early_stopping  # the development set grows


def test_a_shared_development_set_counts_once_per_chunk(task, monkeypatch):
    probe, d, k = MLP((16,)), 6, 3
    config = TrainingConfig(batch_size=32, early_stopping=True)
    own = estimate_memory(probe, d, k, config, n_train=100)
    shared = estimate_memory(probe, d, k, config, n_train=100, shared_dev_rows=500)
    # 500 rows of features (f32), labels and index (int64), weight (f32), once per chunk
    assert shared.chunk_overhead - own.chunk_overhead == 500 * (4 * d + 8 + 8 + 4)
    # per probe: the development losses' activations over all 500 rows
    assert shared.early_stopping > own.early_stopping
    seen = []
    monkeypatch.setattr(engine, "check_memory_budget", lambda *args, **kwargs: seen.append(kwargs))
    x_train, y_train, x_eval, y_eval = task
    fit_evaluate(
        x_train,
        y_train,
        x_eval,
        y_eval,
        3,
        [np.arange(60)],
        [(0,)],
        probe,
        TrainingConfig(batch_size=32, early_stopping=True, max_epochs=1),
        execution=Execution(device="cpu", n_jobs=1),
        dev_set=np.arange(60, 120),
    )
    assert seen[0]["shared_dev_rows"] == 60 and seen[0]["sizes"] == [60]


# ---------------------------------------------------------------------------------------------
# refusal before anything is allocated
# ---------------------------------------------------------------------------------------------


def _forbid_allocation(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make stacking probes or building a chunk runner record itself (and fail)."""
    calls: list[str] = []

    def stack(*args, **kwargs):
        calls.append("stack")
        raise AssertionError("probes were stacked")

    def build(*args, **kwargs):
        calls.append("build")
        raise AssertionError("a chunk runner was built")

    monkeypatch.setattr(MLP, "stack", stack)
    monkeypatch.setattr(engine._ChunkRunner, "build", classmethod(build))
    return calls


def test_a_probe_over_the_budget_is_refused_before_allocation(task, monkeypatch):
    x_train, y_train, x_eval, y_eval = task
    probe, config = MLP((60000, 60000)), TrainingConfig(steps=5, batch_size=256)
    calls = _forbid_allocation(monkeypatch)
    with pytest.raises(ValueError) as raised:
        fit_evaluate(
            x_train, y_train, x_eval, y_eval, 3, [np.arange(100)], [(0,)], probe, config,
            execution=Execution(device="cpu"),
        )  # fmt: skip
    assert calls == []
    message = str(raised.value)
    need = estimate_memory(probe, 6, 3, config, rows=100, n_train=100, n_eval=50).chunk_bytes(1)
    assert need > 50 * 2**30  # 3.6e9 parameters at 16 bytes
    assert "max_memory=2 GiB" in message
    assert "mlp-60000x60000" in message and "6 -> 60000 -> 60000 -> 3" in message
    assert f"{probe.parameter_count(6, 3):,} parameters" in message
    assert f"about {need / 2**30:.3g} GiB" in message
    assert "Adam moments" in message and "evaluation block" in message
    assert "Raise max_memory to at least" in message
    assert "smaller hidden sizes" in message and "smaller batch size" in message
    assert "\n" not in message


def test_a_probe_just_within_the_budget_trains_and_one_byte_over_is_refused(task):
    x_train, y_train, x_eval, y_eval = task
    probe, config = MLP((16,)), TrainingConfig(steps=5, batch_size=32, lr=1e-2)
    subsets, keys = [np.arange(40)], [(0, 1)]
    need = estimate_memory(probe, 6, 3, config, rows=32, n_train=40, n_eval=50).chunk_bytes(1)
    arguments = (x_train, y_train, x_eval, y_eval, 3, subsets, keys, probe, config)
    result = fit_evaluate(
        *arguments, execution=Execution(device="cpu", n_jobs=1, max_memory=need / 2**30)
    )
    assert np.isfinite(result.loss).all()
    with pytest.raises(ValueError, match=r"max_memory=.* cannot hold even one mlp-16 probe"):
        fit_evaluate(
            *arguments, execution=Execution(device="cpu", n_jobs=1, max_memory=(need - 1) / 2**30)
        )


def test_check_memory_budget_uses_the_effective_batch():
    probe, config = MLP((512, 512)), TrainingConfig(steps=1000, batch_size=256)
    small = estimate_memory(probe, 64, 10, config, rows=20, n_train=20).chunk_bytes(1)
    full = estimate_memory(probe, 64, 10, config).chunk_bytes(1)
    assert small < full
    budget = (small + full) / 2 / 2**30
    check_memory_budget(probe, 64, 10, config, budget, sizes=[5, 20])  # batches of 5 and 20
    with pytest.raises(ValueError, match="minibatches of 256 rows"):
        check_memory_budget(probe, 64, 10, config, budget, sizes=[20, 5000])
    with pytest.raises(ValueError, match="minibatches of 256 rows"):
        check_memory_budget(probe, 64, 10, config, budget)  # default: a full batch
    with pytest.raises(ValueError, match="max_memory"):
        check_memory_budget(probe, 64, 10, config, 0.0)


def test_chunks_hold_no_more_probes_than_the_budget(task):
    probe, config = MLP((16,)), TrainingConfig(steps=5, batch_size=32)
    subsets = [np.arange(60) for _ in range(7)]
    memory = estimate_memory(probe, 6, 3, config, rows=32, n_train=60, n_eval=50)
    budget = memory.chunk_bytes(3) / 2**30
    dims = (6, 3)
    chunks = engine._plan_chunks(subsets, probe, dims, config, budget, 1, n_eval=50)
    assert sorted(len(members) for members, _ in chunks) == [1, 3, 3]
    for members, rows in chunks:
        assert memory.chunk_bytes(len(members)) <= budget * 2**30 and rows == 32


def test_the_curve_command_refuses_a_huge_probe_in_one_line(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    features = tmp_path / "features.npz"
    np.savez(features, X=rng.normal(size=(200, 8)).astype(np.float32), y=rng.integers(0, 3, 200))
    calls = _forbid_allocation(monkeypatch)
    status = cli_main(
        ["curve", "--train", str(features), "--hidden", "200000", "200000", "--steps", "2",
         "--out", str(tmp_path / "out"), "--no-progress"]
    )  # fmt: skip  # 4e10 parameters: beyond the default budget of the CPU and of any GPU
    error = capsys.readouterr().err.strip()
    assert status != 0 and calls == []
    assert error.startswith("probemeter: error: max_memory=") and "\n" not in error
    assert "mlp-200000x200000" in error and "GiB" in error


def test_memory_estimate_is_public():
    import probemeter.training as training

    names = {"MemoryEstimate", "estimate_memory", "check_memory_budget"}
    assert names <= set(training.__all__) and all(getattr(training, name) for name in names)
    assert isinstance(estimate_memory(MLP(), 10, 2, TrainingConfig()), MemoryEstimate)


# ---------------------------------------------------------------------------------------------
# initial weights: float32 draws, nn.Linear's law, per-probe streams
# ---------------------------------------------------------------------------------------------


class _RecordingGenerator:
    """A numpy Generator that records the name and dtype of every draw made through it."""

    def __init__(self, seed: list[int], calls: list[tuple[str, object]]) -> None:
        self._rng = np.random.default_rng(seed)
        self._calls = calls

    def __getattr__(self, name: str):
        method = getattr(self._rng, name)

        def record(*args, **kwargs):
            self._calls.append((name, kwargs.get("dtype", np.float64)))
            return method(*args, **kwargs)

        return record


def test_stack_draws_float32_only():
    calls: list[tuple[str, object]] = []
    rngs = [_RecordingGenerator([3, probe], calls) for probe in range(3)]
    model = MLP((7, 5), dropout=0.2).stack(rngs, 4, 3, 8, "f32", torch.device("cpu"))
    parameter_draws = [call for call in calls if call[0] != "integers"]
    assert len(parameter_draws) == 3 * 3 * 2  # per probe, per layer: W then b
    assert all(call == ("random", np.float32) for call in parameter_draws)
    assert [name for name, _ in calls].count("integers") == 3  # the dropout streams' seeds
    assert all(tensor.dtype == torch.float32 for tensor in model.parameters)


def test_stack_holds_the_parameters_once_while_drawing():
    """Traced numpy memory while stacking two MLP(1000) probes on 1000-d inputs: the
    parameters once (no float64 draw, no per-probe copies); before, twice."""
    probe = MLP((1000,))
    rngs = [np.random.default_rng([0, probe_id]) for probe_id in range(2)]
    parameter_bytes = 2 * 4 * probe.parameter_count(1000, 10)
    MLP((3,)).stack(rngs, 3, 2, 4, "f32", torch.device("cpu"))  # warm up lazy imports
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        model = probe.stack(rngs, 1000, 10, 4, "f32", torch.device("cpu"))
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert model.parameters[0].shape == (2, 1000, 1000)
    assert parameter_bytes <= peak < 1.05 * parameter_bytes


def test_stacked_probe_equals_its_initial_parameters_and_leaves_the_same_stream():
    """Probe i of a stack is ``initial_parameters`` of its own generator, whatever its
    companions, and its generator is left where ``initial_parameters`` leaves it (the
    contract the engine's reference tests rely on for the minibatch order)."""
    probe = MLP((5, 4))
    keys = [[1, 2], [3, 4], [5, 6]]
    model = probe.stack(
        [np.random.default_rng(key) for key in keys], 6, 3, 4, "f32", torch.device("cpu")
    )
    for index, key in enumerate(keys):
        rng = np.random.default_rng(key)
        layers = probe.initial_parameters(rng, 6, 3)
        for (weight, bias), stacked_w, stacked_b in zip(
            layers, model.parameters[0::2], model.parameters[1::2]
        ):
            assert weight.dtype == bias.dtype == np.float32
            np.testing.assert_array_equal(stacked_w[index].numpy(), weight)
            np.testing.assert_array_equal(stacked_b[index, 0].numpy(), bias)
    stacked_rng, alone_rng = np.random.default_rng([1, 2]), np.random.default_rng([1, 2])
    probe.stack([stacked_rng], 6, 3, 4, "f32", torch.device("cpu"))
    probe.initial_parameters(alone_rng, 6, 3)
    assert stacked_rng.random() == alone_rng.random()


def test_initial_weights_are_reproducible_per_seed():
    probe = MLP((8,))
    first = probe.initial_parameters(np.random.default_rng([0, 1]), 4, 2)
    again = probe.initial_parameters(np.random.default_rng([0, 1]), 4, 2)
    other = probe.initial_parameters(np.random.default_rng([0, 2]), 4, 2)
    for (w, b), (w2, b2) in zip(first, again):
        np.testing.assert_array_equal(w, w2)
        np.testing.assert_array_equal(b, b2)
    assert not np.array_equal(first[0][0], other[0][0])


@pytest.mark.parametrize("fan_in", [1, 50, 4096])
def test_initial_weights_follow_nn_linear_uniform_law(fan_in):
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as nn.Linear and the former float64 draw: support,
    mean, variance and a Kolmogorov-Smirnov distance to the uniform law."""
    n = 400_000
    values = np.empty(n, dtype=np.float32)
    fill_uniform(np.random.default_rng(11), values, fan_in)
    bound = 1.0 / np.sqrt(fan_in)
    assert values.dtype == np.float32
    assert values.min() >= -np.float32(bound) and values.max() < np.float32(bound)
    scaled = values.astype(np.float64) / bound  # U(-1, 1): mean 0, variance 1/3
    sigma_mean = np.sqrt(1 / 3 / n)
    assert abs(scaled.mean()) < 5 * sigma_mean
    assert abs(scaled.var() - 1 / 3) < 0.01
    ecdf = np.arange(1, n + 1) / n
    ks = np.max(np.abs(ecdf - (np.sort(scaled) + 1) / 2))
    assert ks < 1.95 / np.sqrt(n)  # the 0.1 % critical value
    # the same law as the former draw, rng.uniform in float64 then cast
    former = np.random.default_rng(11).uniform(-bound, bound, n).astype(np.float32) / bound
    assert abs(former.var() - scaled.var()) < 0.01 and abs(former.mean() - scaled.mean()) < 0.01


def test_default_budget_is_sized_to_the_device():
    cpu = torch.device("cpu")
    assert memory_budget(None, cpu) == 2.0  # per worker process on the CPU
    assert memory_budget(0.25, cpu) == 0.25  # a given budget is kept as given
    if torch.cuda.is_available():
        gpu = torch.device("cuda")
        free = torch.cuda.mem_get_info(gpu)[0] / 2**30
        assert memory_budget(None, gpu) == pytest.approx(max(2.0, free / 2), rel=0.05)
        assert memory_budget(3.0, gpu) == 3.0


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_engine_plans_chunks_with_the_default_budget(monkeypatch, task, device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    budgets = []
    real = engine._plan_chunks

    def spy(subsets, probe, dims, config, max_memory, *args, **kwargs):
        budgets.append(max_memory)
        return real(subsets, probe, dims, config, max_memory, *args, **kwargs)

    monkeypatch.setattr(engine, "_plan_chunks", spy)
    x_train, y_train, x_eval, y_eval = task
    config = TrainingConfig(steps=2)
    probes = ([np.arange(40)], [(0,)], MLP(), config)
    fit_evaluate(
        x_train, y_train, x_eval, y_eval, 3, *probes, execution=Execution(device=device, n_jobs=1)
    )
    expected = memory_budget(None, torch.device(device))
    assert budgets == [pytest.approx(expected, rel=0.05)]
