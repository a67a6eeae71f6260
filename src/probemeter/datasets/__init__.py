"""Datasets that return :class:`~probemeter.data.ProbeData`, ready to probe."""

from probemeter.datasets.digits import digits_representations
from probemeter.datasets.idx import fashion_mnist, read_idx
from probemeter.datasets.parity import parity_representations

__all__ = ["digits_representations", "fashion_mnist", "parity_representations", "read_idx"]
