"""The defaults of Hewitt & Manning's structural probes, one value each for the API
(:func:`~probemeter.structural.family.structural_probes`,
:func:`~probemeter.structural.layers.structural_layers`) and the ``structural`` method (whose
options take their defaults from here), at the bottom of the package so that both can import
them."""

from __future__ import annotations

__all__ = ["STRUCTURAL_RANKS", "STRUCTURAL_SEEDS"]

#: the probe ranks r and the seeds per rank by default, in experiment files and the API alike
#: (:func:`~probemeter.structural.family.structural_probes`,
#: :func:`~probemeter.structural.layers.structural_layers`): powers of two up to 64, one seed
STRUCTURAL_RANKS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
STRUCTURAL_SEEDS = 1
