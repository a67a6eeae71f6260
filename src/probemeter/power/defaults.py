"""The defaults of Zhu et al.'s paired comparisons and power, one value each for the API
(:func:`~probemeter.power.paired.run_configurations`, :func:`~probemeter.power.table.power_report`
and every power computation) and the ``power`` method (whose options take their defaults from
here), at the bottom of the package so that both can import them."""

from __future__ import annotations

from probemeter.training.config import TrainingConfig

__all__ = ["POWER_ALPHA", "POWER_PROBE", "POWER_SEEDS", "POWER_TRAINING"]

#: how every probe of a paired comparison trains by default, in experiment files and
#: :func:`~probemeter.power.paired.run_configurations` alike: 1000 Adam updates at lr 1e-3 on
#: minibatches of 64 (within the ranges Zhu et al. search, App. C.4: lr 1e-4 to 1e-2, batches of
#: 8 to 64)
POWER_TRAINING = TrainingConfig(steps=1000, batch_size=64, lr=1e-3)
#: the other defaults the Python API shares with the ``power`` method, one value each for both:
#: seeds per split and the probe's hidden widths
#: (:func:`~probemeter.power.paired.run_configurations`: a linear probe, logistic regression,
#: Zhu et al.'s main probe), and the significance level of McNemar's test
#: (:func:`~probemeter.power.table.power_report` and every power computation)
POWER_SEEDS = 5
POWER_PROBE: tuple[int, ...] = ()
POWER_ALPHA = 0.05
