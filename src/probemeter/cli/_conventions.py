"""What every ``probemeter`` command shares, whoever registers it: help that shows each
option's default, ``-q/--quiet`` and ``-v/--verbose``, and messages through :mod:`logging`.

* :class:`HelpFormatter` appends ``(default: …)`` to every option with a default, read off
  the parser, so a help string never repeats a default by hand (and cannot drift from it);
* :class:`Parser` uses it, and so do the sub-parsers it creates (``add_subparsers`` makes them
  of the parent's class), so a command added with ``commands.add_parser`` gets it too;
* :func:`add_output_options` puts ``-q``/``-v`` on every parser of the tree, so they work
  before or after the command name; :func:`logging_to_stderr` routes the package's
  ``logging`` records (progress lines, files written; debug details with ``-v``) to stderr
  while a command runs. Results (tables) are printed on stdout.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "HelpFormatter",
    "Parser",
    "add_output_options",
    "logging_to_stderr",
    "shown_default",
    "subparsers",
    "verbosity",
]

#: the package's root logger: every module logs under it (``logging.getLogger(__name__)``)
LOGGER = "probemeter"


def shown_default(default: Any) -> str | None:
    """How ``--help`` writes a default: lists space-separated (``none`` when empty); None (do
    not show) for no default, ``False`` of a switch and ``argparse.SUPPRESS``."""
    if default is None or default is False or default == argparse.SUPPRESS:
        return None
    if isinstance(default, (list, tuple)):
        return " ".join(str(item) for item in default) or "none"
    return str(default)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``ArgumentDefaultsHelpFormatter`` that writes defaults readably (:func:`shown_default`)
    and leaves help strings that already say their default alone."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        shown = shown_default(action.default)
        if shown is None or "(default" in help_text or "%(default)" in help_text:
            return help_text
        if not action.option_strings and action.nargs not in (argparse.OPTIONAL, "*"):
            return help_text  # a required positional has no default
        # argparse %-formats help strings: a literal "%" in the default must be doubled
        return f"{help_text} (default: {shown.replace('%', '%%')})"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose help shows defaults (:class:`HelpFormatter`); its
    sub-parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every parser below ``parser`` (its commands, their sub-commands, …), depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases share a parser
                yield child
                yield from subparsers(child)


def add_output_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``-q/--quiet`` and ``-v/--verbose`` on ``parser``. On sub-parsers (``top`` False) they
    default to ``argparse.SUPPRESS``, so a flag given before the command name is not reset by
    the command's own default."""
    group = parser.add_argument_group("output")
    default = False if top else argparse.SUPPRESS
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="only results, warnings and errors: no progress bars (transformers' included) "
        "and no progress lines",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="also debug messages (settings resolved, each file written)",
    )


def verbosity(args: argparse.Namespace) -> int:
    """The logging level of ``-q`` (``WARNING``), ``-v`` (``DEBUG``) or neither (``INFO``).

    Raises:
        ValueError: both given.
    """
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
    if quiet and verbose:
        raise ValueError("-q/--quiet and -v/--verbose exclude each other; give one")
    return logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO


@contextmanager
def logging_to_stderr(level: int) -> Iterator[None]:
    """While active, the package's log records of ``level`` and above go to stderr, one plain
    line each (debug records prefixed ``debug:``); the logger's previous state is restored on
    exit, so :func:`probemeter.cli.main` can run many times in one process."""
    logger = logging.getLogger(LOGGER)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PlainFormatter())
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False  # our one handler, not the root logger's as well
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


class _PlainFormatter(logging.Formatter):
    """``message`` for info, ``debug: message`` for debug records."""

    def format(self, record: logging.LogRecord) -> str:
        message = super().format(record)
        return f"debug: {message}" if record.levelno < logging.INFO else message
