"""The ``probemeter`` command line.

* ``probemeter demo|curve|measures|report`` — loss-data curves and their measures (Whitney et
  al.; :mod:`probemeter.cli.curve`);
* ``probemeter run`` — a whole study described by an experiment file (:mod:`probemeter.cli.run`);
* ``probemeter mdl`` — online/variational codes with control tasks (:mod:`probemeter.cli.mdl`);
* ``probemeter power`` / ``probemeter recommend`` — statistical power and data requirements of
  a comparison problem (Zhu et al.; :mod:`probemeter.cli.power`);
* ``probemeter pareto sweep|table`` — Pareto probing (:mod:`probemeter.cli.pareto`);
* ``probemeter senteval generate`` — SentEval probing files from raw text
  (:mod:`probemeter.cli.senteval`).

Failures are one line on stderr with a distinct exit status (:mod:`probemeter.cli._errors`).
Each method's flags are derived from its dataclass (:mod:`probemeter.cli._options`). Modules
are imported lazily: ``probemeter --help`` loads neither torch nor pandas.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import TextIO

from probemeter.cli._errors import EXIT_CODES, guarded
from probemeter.cli.curve import add_curve_commands
from probemeter.cli.mdl import add_mdl_command
from probemeter.cli.pareto import add_pareto_parser
from probemeter.cli.power import add_power_commands
from probemeter.cli.run import add_run_command
from probemeter.cli.senteval import add_senteval_command

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():  # restores the library's warning display on return
        warnings.showwarning = _one_line_warning
        return guarded(lambda: args.handler(args))


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    add_senteval_command(commands)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
