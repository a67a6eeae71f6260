"""The defaults of Whitney et al.'s loss-data curves, one value each for
:func:`~probemeter.curves.curve.loss_data_curve` and the ``curve`` method (whose options take
their defaults from here), at the bottom of the package so that both can import them."""

from __future__ import annotations

from probemeter.training.config import TrainingConfig

__all__ = [
    "CURVE_DEV_FRACTION",
    "CURVE_PROBE",
    "CURVE_SEEDS",
    "CURVE_TRAINING",
    "LANGUAGE_MODEL_GRID",
]

#: how every probe of a loss-data curve trains by default, in experiment files and
#: :func:`~probemeter.curves.curve.loss_data_curve` alike: :class:`TrainingConfig`'s defaults,
#: Whitney et al.'s protocol (App. C.1: Adam at lr 1e-4, the same number of updates at every n)
CURVE_TRAINING = TrainingConfig()
#: the defaults of the other options :func:`~probemeter.curves.curve.loss_data_curve` shares
#: with the ``curve`` method, one value each for both: the probe's hidden widths (two layers of
#: 512 ReLU units, Whitney et al., App. C.1), the data orders (seeds) per size, and the share of
#: the pool held out as a development split on which comparisons choose a representation before
#: testing it (Whitney et al. hold none out: ``dev_fraction=0``)
CURVE_PROBE: tuple[int, ...] = (512, 512)
CURVE_SEEDS = 4
CURVE_DEV_FRACTION = 0.1
#: on texts that language models read, the settings a linear probe's curve chooses from on the
#: development split, per size (the ``curve`` method's ``lr`` and ``weight_decay`` grid there):
#: Adam's learning rate 1e-3 or 1e-2 (Whitney et al.'s 1e-4 is slow for a linear probe's 1000
#: updates), and an L2 penalty from none to λ = 1e-2 (scikit-learn's C = 2/(λn): C ≥ 0.2 at
#: n = 1000 for two classes)
LANGUAGE_MODEL_GRID = {"lr": [1e-3, 1e-2], "weight_decay": [0.0, 1e-4, 1e-3, 1e-2]}
