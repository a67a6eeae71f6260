"""``probemeter completion bash|zsh``: the shell completion script of the whole command line,
generated from its parsers by ``shtab``; commands, sub-commands, flags and choices complete,
and options that take a path complete file names (``--out``: folder names).

    probemeter completion bash > ~/.local/share/bash-completion/completions/probemeter
    probemeter completion zsh > "${fpath[1]}/_probemeter"
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["SHELLS", "add_completion_command", "completion_script"]

#: the shells a script is generated for
SHELLS = ("bash", "zsh")


def add_completion_command(commands: Any) -> None:
    """Register ``completion``."""
    completion = commands.add_parser(
        "completion",
        help="print the shell completion script (bash or zsh)",
        description="Print the completion script of probemeter for a shell; source it, or save "
        "it where the shell loads completions (bash: "
        "~/.local/share/bash-completion/completions/probemeter; zsh: a folder of $fpath, as "
        "_probemeter).",
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell")
    completion.set_defaults(handler=_run_completion)


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The ``shell`` completion script of ``parser`` and its sub-commands (``shtab``); every
    option of type :class:`~pathlib.Path` completes file names, ``--out`` folder names."""
    import shtab

    if shell not in SHELLS:
        raise ValueError(f"shell must be one of {list(SHELLS)}; got {shell!r}")
    from probemeter.cli._conventions import subparsers

    for each in (parser, *subparsers(parser)):
        for action in each._actions:
            if action.type is Path:
                folder = "--out" in action.option_strings
                action.complete = shtab.DIRECTORY if folder else shtab.FILE  # type: ignore[attr-defined]
    return shtab.complete(parser, shell=shell)


def _run_completion(args: argparse.Namespace) -> int:
    from probemeter.cli.main import build_parser

    print(completion_script(build_parser(), args.shell))
    return 0
