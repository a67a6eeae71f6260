"""The ``probemeter`` command line.

* ``probemeter demo|curve|measures|report`` — loss-data curves and their measures (Whitney et
  al.; :mod:`probemeter.cli.curve`);
* ``probemeter run`` — a whole study described by an experiment file (:mod:`probemeter.cli.run`);
* ``probemeter mdl`` — online/variational codes with control tasks (:mod:`probemeter.cli.mdl`);
* ``probemeter power`` / ``probemeter recommend`` — statistical power and data requirements of
  a comparison problem (Zhu et al.; :mod:`probemeter.cli.power`);
* ``probemeter pareto sweep|table`` — Pareto probing (:mod:`probemeter.cli.pareto`);
* ``probemeter senteval generate`` — SentEval probing files from raw text
  (:mod:`probemeter.cli.senteval`);
* ``probemeter completion bash|zsh`` — the shell completion script
  (:mod:`probemeter.cli.completion`).

Every parser shows its defaults in ``--help`` and takes ``-q``/``-v``
(:mod:`probemeter.cli._conventions`): results go to stdout, progress and info lines to
stderr through :mod:`logging`.

Failures are one line on stderr with a distinct exit status (:mod:`probemeter.cli._errors`).
Each method's flags are derived from its dataclass (:mod:`probemeter.cli._options`). Modules
are imported lazily: ``probemeter --help`` loads neither torch nor pandas.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Sequence
from typing import TextIO

from probemeter.cli._conventions import (
    Parser,
    add_output_options,
    logging_to_stderr,
    subparsers,
    verbosity,
)
from probemeter.cli._errors import EXIT_CODES, guarded
from probemeter.cli.completion import add_completion_command
from probemeter.cli.curve import add_curve_commands
from probemeter.cli.mdl import add_mdl_command
from probemeter.cli.pareto import add_pareto_parser
from probemeter.cli.power import add_power_commands
from probemeter.cli.run import add_run_command
from probemeter.cli.senteval import add_senteval_command
from probemeter.cli.switching import add_switching_command

__all__ = ["build_parser", "main"]

_log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():  # restores the library's warning display on return
        warnings.showwarning = _one_line_warning
        return guarded(lambda: _handle(args))


def _handle(args: argparse.Namespace) -> int:
    """Run the command's handler with the package's log records on stderr at the level of
    ``-q``/``-v``; ``-q`` also hides progress bars."""
    level = verbosity(args)
    if args.quiet and hasattr(args, "no_progress"):
        args.no_progress = True
    with logging_to_stderr(level):
        settings = {key: value for key, value in vars(args).items() if key != "handler"}
        _log.debug("settings: %s", settings)
        return int(args.handler(args))


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings as ``probemeter: warning: …`` lines, without the source location."""
    print(f"probemeter: warning: {message}", file=sys.stderr if file is None else file)


def _version() -> str:
    from probemeter import __version__

    return f"probemeter {__version__}"


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every command's parser (:class:`~probemeter.cli._conventions.Parser`,
    defaults shown in ``--help``), each with ``-q``/``-v``."""
    parser = Parser(
        prog="probemeter",
        description="Evaluate representations by probing: loss-data curves, VA, MI, MDL, "
        "SDL and epsilon sample complexity; MDL probing; power analysis; Pareto probing.",
        epilog="exit status: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", required=True)
    add_curve_commands(commands)
    add_run_command(commands)
    add_power_commands(commands)
    add_pareto_parser(commands)
    add_mdl_command(commands)
    add_switching_command(commands)
    add_senteval_command(commands)
    add_completion_command(commands)
    add_output_options(parser, top=True)
    for command in subparsers(parser):
        add_output_options(command, top=False)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
