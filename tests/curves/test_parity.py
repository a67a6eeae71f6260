"""The parity example (Whitney et al. §3.1): VA ranks the noisy label first at small n and the
raw bits first at large n, while SDL and εSC never flip."""

import numpy as np
import pytest

import probemeter as pm
from probemeter.datasets.parity import binary_entropy

ALPHA = 0.1
EPSILON = 0.2  # below the noisy label's floor H(0.1) = 0.325 nats, above what raw bits reach


@pytest.fixture(scope="module")
def curves():
    reps = pm.parity_representations(n_train=2000, n_test=1000, n_bits=8, alpha=ALPHA)
    sizes = [10, 20, 40, 100, 250, 600, 2000]
    return {
        name: pm.loss_data_curve(
            data,
            pm.MLP((64,)),
            sizes=sizes,
            seeds=2,
            config=pm.TrainingConfig(steps=500, lr=1e-3),
            dev_fraction=0.0,
        )
        for name, data in reps.items()
    }


def test_representations_share_labels_and_noise_rate():
    reps = pm.parity_representations(n_train=5000, n_test=10, n_bits=6, alpha=ALPHA)
    noisy, raw = reps["noisy label"], reps["raw bits"]
    np.testing.assert_array_equal(noisy.y_train, raw.y_train)
    assert raw.X_train.shape == (5000, 6) and noisy.X_train.shape == (5000, 1)
    flip_rate = np.mean(noisy.X_train[:, 0] != noisy.y_train)
    assert abs(flip_rate - ALPHA) < 0.015
    assert set(np.unique(raw.X_train)) == {0.0, 1.0}  # bits stay bits: not standardised


def test_binary_entropy_closed_form_and_validation():
    assert binary_entropy(0.5 - 1e-12) == pytest.approx(np.log(2))
    assert binary_entropy(ALPHA) == pytest.approx(-0.1 * np.log(0.1) - 0.9 * np.log(0.9))
    with pytest.raises(ValueError, match="alpha"):
        pm.parity_representations(alpha=0.6)


@pytest.mark.slow
def test_va_ranking_flips_with_n(curves):
    small = pm.compare(curves, EPSILON, sizes=[20])
    large = pm.compare(curves, EPSILON, sizes=[2000])
    assert small.ranking("VA", 20)[0] == "noisy label"
    assert large.ranking("VA", 2000)[0] == "raw bits"
    noisy_floor = curves["noisy label"].mean().iloc[-1]
    assert noisy_floor > binary_entropy(ALPHA) - 0.02  # the noisy bit cannot beat H(α)


@pytest.mark.slow
def test_sdl_and_sc_do_not_flip(curves):
    for n in (20, 2000):
        noisy_sc = pm.sample_complexity(curves["noisy label"], EPSILON, n=n)
        noisy_sdl = pm.sdl(curves["noisy label"], EPSILON, n=n)
        assert noisy_sc.lower_bound and noisy_sdl.lower_bound  # never reaches ε: no verdict
    raw_sc = pm.sample_complexity(curves["raw bits"], EPSILON)
    assert not raw_sc.lower_bound and raw_sc.value <= 600
    assert pm.compare(curves, EPSILON, sizes=[2000]).ranking("SDL", 2000)[0] == "raw bits"
    # with little data SC says "not enough data" for both instead of picking a winner
    small = pm.compare(curves, EPSILON, sizes=[20])
    assert small.best("SC", 20) is None
