"""Probe families: the architectures the engine trains, stacked on a leading probe axis."""

from probemeter.probes.mlp import MLP, Linear

__all__ = ["MLP", "Linear"]
