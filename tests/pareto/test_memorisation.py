"""Random MLP family, dropout in the stacked MLP, and memorisation complexity (Pimentel §5)."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from probemeter import Execution
from probemeter.data import ProbeData
from probemeter.pareto.families import random_mlp_family
from probemeter.pareto.memorisation import memorisation_complexity, shuffle_within_sentences
from probemeter.probes import MLP
from probemeter.training.config import TrainingConfig


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return ProbeData.from_arrays(X[:500], y[:500], test_size=100)


def test_family_follows_appendix_a():
    family = random_mlp_family(200, random_state=3)
    layers = [len(probe.hidden) for probe in family]
    assert set(layers) == {0, 1, 2, 3, 4, 5}
    for probe in family:
        if probe.hidden:
            assert 32 <= probe.hidden[0] <= 1024 and 0 <= probe.dropout <= 0.5
            assert all(b == max(1, a // 2) for a, b in zip(probe.hidden, probe.hidden[1:]))
        else:
            assert probe.dropout == 0.0  # a linear probe has no hidden layer to drop
    assert random_mlp_family(10, random_state=3) == family[:10]


def test_family_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n_probes"):
        random_mlp_family(0)
    with pytest.raises(ValueError, match="dropout"):
        random_mlp_family(3, dropout=(0.2, 1.0))
    with pytest.raises(ValueError, match="dropout"):
        MLP((8,), dropout=1.0)


def test_mlp_spec_round_trips_dropout():
    probe = MLP((8, 4), dropout=0.25)
    assert MLP.from_dict(probe.to_dict()) == probe
    assert MLP.from_dict(MLP((8,)).to_dict()) == MLP((8,))


@pytest.mark.numerics
def test_dropout_gradients_match_autograd_with_the_same_masks():
    probe = MLP((6, 5), dropout=0.4)
    rngs = [np.random.default_rng([0, i]) for i in range(3)]
    model = probe.stack(rngs, 4, 3, rows=7, precision="f32", device=torch.device("cpu"))
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(3, 7, 4, generator=generator)
    y = torch.randint(0, 3, (3, 7, 1), generator=generator)
    weights = torch.full((3, 7, 1), 1 / 7)
    model.accumulate_gradients(x, y, weights)
    masks = [mask.clone() for mask in model._masks]
    assert any((mask == 0).any() for mask in masks)  # something was dropped
    params = [p.detach().clone().requires_grad_(True) for p in model.parameters]
    hidden = x
    for layer in range(3):
        hidden = torch.baddbmm(params[2 * layer + 1], hidden, params[2 * layer])
        if layer < 2:
            hidden = hidden.clamp_min(0) * masks[layer]
    loss = (torch.nn.functional.cross_entropy(hidden.transpose(1, 2), y[..., 0], reduction="none")
            * weights[..., 0]).sum()  # fmt: skip
    loss.backward()
    for ours, reference in zip(model.parameters, params):
        torch.testing.assert_close(ours.grad, reference.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.numerics
def test_dropout_probe_does_not_depend_on_its_companions(digits):
    """Masks are drawn per probe for its own batch rows: training a dropout probe alone, or
    padded in one chunk beside a wider probe, gives the same numbers."""
    from probemeter.training.engine import fit_evaluate

    probe = MLP((16,), dropout=0.3)
    config = TrainingConfig(steps=40, batch_size=32, lr=1e-2)
    data = (digits.X_train, digits.y_train, digits.X_test, digits.y_test, digits.n_classes)
    small, wide = np.arange(20), np.arange(150)

    def run(subsets, keys):
        return fit_evaluate(
            *data, subsets, keys, probe, config, execution=Execution(device="cpu", n_jobs=1)
        ).loss

    alone = run([small], [(1,)])
    together = run([wide, small], [(2,), (1,)])
    np.testing.assert_allclose(together[1], alone[0], rtol=1e-6)
    assert not np.allclose(run([small], [(3,)]), alone)  # the key does seed the masks


def test_label_shuffled_training_accuracy_grows_with_width(digits):
    probes = [MLP((2,)), MLP((16,)), MLP((256,))]
    config = TrainingConfig(steps=400, batch_size=128, lr=1e-2)
    result = memorisation_complexity(digits, probes, config, execution=Execution(device="cpu"))
    assert np.all(np.diff(result.complexity) > 0), result.complexity
    assert result.complexity[0] < 0.35 and result.complexity[-1] > 0.8
    # trained on real labels the task is learnt: far above chance (1/10) even through a
    # 2-unit bottleneck (0.48-0.62 over random states), near-perfect for the wide probes
    assert np.all(result.accuracy > 3 / digits.n_classes) and result.accuracy[-1] > 0.9
    frame = result.to_frame()
    assert frame["hidden"].tolist() == [2, 16, 256] and result.kind == "label_shuffled"


def test_fully_shuffled_uses_the_given_inputs(digits):
    noise = np.random.default_rng(0).normal(size=digits.X_train.shape)
    config = TrainingConfig(steps=50, batch_size=64, lr=1e-2)
    result = memorisation_complexity(digits, [MLP((8,))], config, shuffled_inputs=noise)
    assert result.kind == "fully_shuffled" and 0 <= result.complexity[0] <= 1
    with pytest.raises(ValueError, match="shuffled_inputs"):
        memorisation_complexity(digits, [MLP((8,))], config, shuffled_inputs=noise[:5])
    with pytest.raises(ValueError, match="probes"):
        memorisation_complexity(digits, [], config)


def test_shuffle_within_sentences_keeps_each_sentence_s_words():
    sentences = [("a", "b", "c"), ("d",), ("e", "f")]
    shuffled, order = shuffle_within_sentences(sentences, random_state=1)
    flat = [w for s in sentences for w in s]
    assert [w for s in shuffled for w in s] == [flat[i] for i in order]
    assert [sorted(s) for s in shuffled] == [sorted(s) for s in sentences]
    with pytest.raises(ValueError, match="sentences"):
        shuffle_within_sentences([("a",), ()])
