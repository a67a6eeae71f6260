"""The ``mdl`` method: its options, defaults and checks, its stored units and its run folder."""

from __future__ import annotations

__all__ = ["PAPER_TIMESTEPS"]

#: the timesteps of Voita & Titov (footnote 4): 0.1, 0.2, ... 50, 100 percent of the data
PAPER_TIMESTEPS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
