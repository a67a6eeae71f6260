"""Kept probes with self-attentive span pooling: the engine's poolings kept with the MLP
weights, saved and reloaded, reproducing the engine's test losses and predictions exactly on
the CPU, and their ``torch.nn`` modules against the one-probe autograd pooling reference."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import safetensors.numpy
import torch
from test_span_attention import CLASSES, PROJECTION, TOKENS, WIDTH, _reference_pool, _span_rows

from probemeter import Execution
from probemeter.curves.curve import loss_data_curve
from probemeter.data import ProbeData
from probemeter.probes import MLP, ProbeSet, SavedProbe, SpanPooling, load_probes
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

PROBE = MLP((7,), span=TOKENS, projection=PROJECTION)
SIZES = (20, 45, 80, 150, 120)  # five probes: rows 0-4 of one stack, odd offsets among them


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(11)
    return (*_span_rows(150, rng), *_span_rows(203, rng))


@pytest.fixture(scope="module")
def trained(task):
    """Span probes trained by the engine, with their parameters, and their kept set (its
    metrics recomputed one probe at a time, not copied from the engine)."""
    x_test, y_test = task[2:]
    subsets = [np.arange(n) for n in SIZES]
    keys = [(5, n) for n in SIZES]
    config = TrainingConfig(steps=150, batch_size=32, lr=1e-2)
    evaluation = fit_evaluate(
        *task,
        CLASSES,
        subsets,
        keys,
        PROBE,
        config,
        execution=Execution(device="cpu", n_jobs=1),
        per_example=True,
        return_parameters=True,
    )
    spans = (evaluation.span_weight, evaluation.span_bias, evaluation.span_score)
    probes = ProbeSet.from_stacked(
        "spans", PROBE, evaluation.parameters, [{"n": n} for n in SIZES], x_test, y_test,
        stack_rows=evaluation.stack_rows, spans=spans,
    )  # fmt: skip
    return evaluation, probes


def test_the_engine_returns_each_probes_poolings(trained):
    evaluation, probes = trained
    assert evaluation.span_weight.shape == (len(SIZES), 2, WIDTH, PROJECTION)
    assert evaluation.span_bias.shape == evaluation.span_score.shape == (len(SIZES), 2, PROJECTION)
    for index, probe in enumerate(probes):
        assert probe.span.tokens == TOKENS and probe.n_features == 2 + 5 * WIDTH
        assert np.array_equal(probe.span.weight, evaluation.span_weight[index])
        assert np.array_equal(probe.span.score, evaluation.span_score[index])


def test_kept_span_probes_reproduce_the_engines_metrics_exactly(trained, task):
    evaluation, probes = trained
    assert sorted(set(evaluation.stack_rows.tolist())) == list(range(len(SIZES)))
    for index, probe in enumerate(probes):
        # pooled and evaluated alone, placed as row stack_row: the engine's floats
        assert probe.loss == evaluation.loss[index]
        assert probe.accuracy == evaluation.accuracy[index]
        assert np.array_equal(probe.predictions, evaluation.predictions[index])
    assert len(set(evaluation.loss.tolist())) == len(SIZES)  # five different probes


def test_reloaded_span_probes_predict_exactly_what_the_trained_ones_did(trained, task, tmp_path):
    evaluation, probes = trained
    x_test, y_test = task[2:]
    path = tmp_path / "spans.safetensors"
    probes.save(path)
    loaded = load_probes(path)
    for before, after in zip(probes, loaded):
        assert after.architecture == PROBE
        for part in ("weight", "bias", "score"):
            assert np.array_equal(getattr(after.span, part), getattr(before.span, part))
    recomputed = loaded.evaluate(x_test, y_test)
    assert recomputed["loss"].tolist() == evaluation.loss.tolist()  # exactly
    for index, probe in enumerate(loaded):
        assert np.array_equal(probe.predict(x_test), evaluation.predictions[index])
        assert probe.predict(x_test[5:6]).tolist() == [evaluation.predictions[index, 5]]
    tensors = safetensors.numpy.load_file(str(path))
    assert tensors["probe.2.0.weight"].shape == (2, WIDTH, PROJECTION)
    state = {k.removeprefix("probe.2."): v for k, v in tensors.items() if k.startswith("probe.2.")}
    assert sorted(state) == sorted(loaded[2].module().state_dict())


@pytest.mark.numerics
def test_module_pools_like_the_autograd_reference(trained, task):
    _, probes = trained
    x_test = torch.from_numpy(task[2])
    for probe in probes:
        module = probe.module()
        assert [type(m).__name__ for m in module] == ["SpanAttention", "Linear", "ReLU", "Linear"]
        spans = [
            [torch.from_numpy(probe.span.weight[s]), torch.from_numpy(probe.span.bias[s]),
             torch.from_numpy(probe.span.score[s][:, None])]
            for s in range(2)
        ]  # fmt: skip
        with torch.no_grad():
            pooled = module[0](x_test)
            logits = module(x_test)
        torch.testing.assert_close(pooled, _reference_pool(x_test, spans), rtol=1e-5, atol=1e-6)
        assert np.array_equal(logits.argmax(dim=1).numpy(), probe.predictions)
        loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(task[3])).item()
        assert loss == pytest.approx(probe.loss, rel=1e-5)


@pytest.mark.numerics
def test_a_kept_curve_of_span_probes_stores_the_curves_losses(task):
    data = replace(ProbeData.from_arrays(*task, standardize=False), span_tokens=TOKENS)
    config = TrainingConfig(steps=20)
    curve = loss_data_curve(
        data,
        PROBE,
        [30, 150],
        2,
        config=config,
        execution=Execution(n_jobs=1),
        keep_probes=True,
        dev_fraction=0.0,
    )
    # on the device the curve trained on (``device = "auto"``): exactly on the CPU; on a GPU
    # cuBLAS picks kernels by the stack's shape, so a lone probe differs in the last bits
    kept = curve.probes.evaluate(data.X_test, data.y_test, device="auto")
    merged = curve.points.merge(kept, on=["n", "seed"], suffixes=("", "_kept"))
    assert len(merged) == 4
    if torch.cuda.is_available():
        np.testing.assert_allclose(merged["loss_kept"], merged["loss"], rtol=1e-6)
    else:
        assert (merged["loss"] == merged["loss_kept"]).all()


def test_span_poolings_are_checked(trained):
    _, probes = trained
    probe = probes[0]
    with pytest.raises(ValueError, match="the architecture pools spans"):
        replace(probe, span=None)
    with pytest.raises(ValueError, match="do not fit the architecture's spans"):
        replace(probe, architecture=replace(PROBE, projection=PROJECTION + 1))
    with pytest.raises(ValueError, match="the architecture pools no spans"):
        replace(probe, architecture=MLP((7,)))
    with pytest.raises(ValueError, match=r"must be \(2, d, q\), \(2, q\) and \(2, q\)"):
        SpanPooling(TOKENS, probe.span.weight, probe.span.bias[:1], probe.span.score)
    with pytest.raises(ValueError, match="float32"):
        SpanPooling(TOKENS, probe.span.weight.astype(np.float64), probe.span.bias, probe.span.score)
    with pytest.raises(
        ValueError, match=r"spans \(the engine's span_weight, span_bias, span_score\) must be given"
    ):
        ProbeSet.from_stacked("x", PROBE, [(np.zeros((1, 8, 3), np.float32),) * 2], [{}], [], [])
    with pytest.raises(ValueError, match=r"X must have shape \(n, 27\)"):
        probe.predict(np.zeros((2, 5), np.float32))
    assert isinstance(probe, SavedProbe)
