"""A kept linear probe written back into a TransformerLens model (issue 43, item 5): steering
along its direction moves its logit by α‖v‖², projecting the direction out leaves the bias."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter import (
    Direction,
    Linear,
    ProbeData,
    ProbeSet,
    TrainingConfig,
    load_probes,
    loss_data_curve,
    pool_moments,
)
from probemeter.probes.direction import CLASS_LOGITS, LOGIT_DIFFERENCE, ProbeDirection

transformer_lens = pytest.importorskip("transformer_lens", reason="needs transformer-lens")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:HookedTransformer is deprecated:DeprecationWarning")

HOOK = "blocks.1.hook_resid_post"
#: the planted token: label 1 where the sequence opens with it
KEY = 3


@pytest.fixture(scope="module")
def model():
    config = transformer_lens.HookedTransformerConfig(
        n_layers=2, d_model=16, n_ctx=12, d_head=8, n_heads=2, d_vocab=40, act_fn="gelu",
        normalization_type="LN", seed=0, device="cpu",
    )  # fmt: skip
    return transformer_lens.HookedTransformer(config).eval()


@pytest.fixture(scope="module")
def tokens():
    rng = np.random.default_rng(0)
    rows = rng.integers(4, 40, size=(240, 10))
    labels = np.arange(240) % 2
    rows[labels == 1, :3] = KEY  # three times, at the start: a mean over positions shows it
    return torch.from_numpy(rows), labels


def _mean_at_hook(model, tokens, *hooks) -> np.ndarray:
    """The hook's activation averaged over positions, float64, read after ``hooks`` acted."""
    read = {}

    def keep(value, hook):
        read["x"] = value.detach().double().mean(dim=1).numpy()

    with torch.no_grad():
        model.run_with_hooks(tokens, fwd_hooks=[*((HOOK, h) for h in hooks), (HOOK, keep)])
    return read["x"]


def _trained(model, tokens, probe):
    rows, labels = tokens
    X = _mean_at_hook(model, rows).astype(np.float32)
    test = np.arange(240)[np.arange(240) % 5 == 0]
    train = np.arange(240)[np.arange(240) % 5 != 0]
    data = ProbeData.from_arrays(X[train], labels[train], X[test], labels[test])
    config = TrainingConfig(steps=300, lr=1e-2)
    curve = loss_data_curve(data, probe, sizes=[150], seeds=1, config=config, keep_probes=True)
    mean, std = pool_moments(X[train])
    return curve.probes[-1], data, mean, std, X, test


@pytest.mark.parametrize("probe", [Linear(), Direction("diff-means")], ids=["linear", "diff-means"])
def test_steering_moves_the_logit_by_alpha_norm_squared(model, tokens, probe, tmp_path):
    kept, data, mean, std, X, test = _trained(model, tokens, probe)
    exported = ProbeDirection.from_probe(kept, mean, std, hook_name=HOOK, source={"run": "here"})
    assert exported.which == LOGIT_DIFFERENCE and exported.d_model == 16
    # the exported map is the probe: its logit difference on the standardised test rows
    standardised = torch.from_numpy(np.asarray(data.X_test))
    with torch.no_grad():
        logits = kept.module()(standardised).double().numpy()
    np.testing.assert_allclose(
        exported.logits(X[test]), logits[:, 1] - logits[:, 0], rtol=1e-4, atol=1e-4
    )
    rows = tokens[0][:16]
    before = exported.logits(_mean_at_hook(model, rows))
    v = exported.direction.astype(np.float64)
    alpha = 3.0 / float(v @ v)  # a move of 3 nats, whatever ‖v‖

    def steer(value, hook):
        return value + alpha * exported.tensor(value)

    after = exported.logits(_mean_at_hook(model, rows, steer))
    np.testing.assert_allclose(after - before, alpha * (v @ v), rtol=0, atol=1e-4)
    # saved and loaded, the same direction
    exported.save(tmp_path / "direction.safetensors")
    loaded = ProbeDirection.load(tmp_path / "direction.safetensors")
    assert loaded.hook_name == HOOK and loaded.classes == (0, 1) and loaded.source["run"] == "here"
    np.testing.assert_array_equal(loaded.direction, exported.direction)
    np.testing.assert_array_equal(loaded.bias, exported.bias)


def test_projecting_the_direction_out_leaves_chance(model, tokens):
    kept, _, mean, std, _, test = _trained(model, tokens, Linear())
    exported = ProbeDirection.from_probe(kept, mean, std, hook_name=HOOK)
    rows, labels = tokens[0][test], tokens[1][test]
    logits = exported.logits(_mean_at_hook(model, rows))
    assert np.mean((logits > 0) == labels) > 0.9  # the planted token is read at this hook
    unit = exported.tensor()

    def ablate(value, hook):
        v = unit.to(value.dtype)
        return value - (value @ v)[..., None] * v / (v @ v)

    ablated = exported.logits(_mean_at_hook(model, rows, ablate))
    # v·x' = 0 for every token, so the mean's logit difference is the bias alone
    np.testing.assert_allclose(ablated, float(exported.bias), rtol=0, atol=1e-4)
    assert np.mean((ablated > 0) == labels) == pytest.approx(0.5)


def test_class_logits_and_refusals(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 4)).astype(np.float32) * 3 + 1
    y = np.arange(90) % 3
    data = ProbeData.from_arrays(X, y, X[:30], y[:30])
    curve = loss_data_curve(data, Linear(), sizes=[60], seeds=1, keep_probes=True,
                            config=TrainingConfig(steps=50))  # fmt: skip
    mean, std = pool_moments(X)
    exported = ProbeDirection.from_probe(curve.probes[0], mean, std, hook_name="h", classes="abc")
    assert exported.which == CLASS_LOGITS and exported.direction.shape == (3, 4)
    with torch.no_grad():
        expected = curve.probes[0].module()(torch.from_numpy(np.asarray(data.X_test))).numpy()
    np.testing.assert_allclose(exported.logits(X[:30]), expected, rtol=1e-4, atol=1e-4)
    # the set records the pool's moments: from_set needs no mean and std, and they survive
    # a save and load
    assert curve.probes.moments is not None
    np.testing.assert_array_equal(curve.probes.moments[0], mean)
    curve.probes.save(tmp_path / "probes.safetensors")
    loaded = load_probes(tmp_path / "probes.safetensors")
    again = ProbeDirection.from_set(loaded, hook_name="h", classes="abc", n=60)
    np.testing.assert_array_equal(again.direction, exported.direction)
    with pytest.raises(ValueError, match="no pool mean and std"):
        ProbeDirection.from_set(ProbeSet("x", loaded.probes), hook_name="h")
    with pytest.raises(ValueError, match="features"):
        ProbeDirection.from_probe(curve.probes[0], mean[:3], std[:3], hook_name="h")
    with pytest.raises(ValueError, match="classes"):
        ProbeDirection.from_probe(curve.probes[0], mean, std, hook_name="h", classes="ab")


def test_an_online_codes_kept_probes_record_the_moments():
    from probemeter.mdl import online_codelength

    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 3)).astype(np.float32) * 2 + 5
    y = (X[:, 0] > 5).astype(int)
    data = ProbeData.from_arrays(X, y, X[:20], y[:20])
    code = online_codelength(data, Linear(), (0.5, 1.0), 1, keep_probes=True,
                             config=TrainingConfig(steps=20))  # fmt: skip
    np.testing.assert_array_equal(code.probes.moments[1], pool_moments(X)[1])
