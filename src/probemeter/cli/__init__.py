"""The ``probemeter`` command line: one module per method (``curve``, ``mdl``, ``power``,
``pareto``) plus ``run`` for experiment files; :func:`main` is the entry point."""

from probemeter.cli.main import main

__all__ = ["main"]
