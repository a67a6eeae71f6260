"""The generated reference pages: experiment files, command line and API.

Each page is read off the code when the site is built, so it cannot drift from it:

* the experiment-file reference from the method dataclasses (every ``option()`` with its
  default, check and help; :data:`probemeter.runs.methods.METHODS`), the ``[task]`` datasets
  (:data:`probemeter.runs.config.DATASETS`) and the ``[run]`` settings;
* the command-line reference from the argparse parsers of :mod:`probemeter.cli.main`, every
  subcommand at any depth;
* one API page per public subpackage or module, a mkdocstrings ``:::`` block per public
  module found on disk.

:func:`missing_from_references` says what a reference lacks (a method option, a subcommand);
the build fails on any, and ``tests/test_docs.py`` checks the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

from probemeter.cli.main import build_parser
from probemeter.runs.config import DATASETS, RunSettings
from probemeter.runs.methods import METHODS, _toml_value

#: API pages: (title, module) in the order of the navigation; each subpackage's public
#: modules are found on disk, so a new module appears without editing this list
API_PACKAGES = (
    ("Data and feature files", ("probemeter.data", "probemeter.feature_files")),
    ("Loss-data curves (Whitney et al.)", ("probemeter.curves",)),
    ("MDL probing (Voita & Titov)", ("probemeter.mdl",)),
    ("Power (Zhu et al.)", ("probemeter.power",)),
    ("Pareto probing (Pimentel et al.)", ("probemeter.pareto",)),
    ("Structural probes (Hewitt & Manning)", ("probemeter.structural",)),
    ("Probes", ("probemeter.probes",)),
    ("Training engine", ("probemeter.training",)),
    ("Datasets", ("probemeter.datasets",)),
    ("Encoders", ("probemeter.encoders",)),
    ("Experiment runs", ("probemeter.runs",)),
)


def _cell(text: Any) -> str:
    """Text for a Markdown table cell (outside code spans, where a "|" needs no escape)."""
    return str(text).replace("|", r"\|").replace("\n", " ")


def _valid_values(problem: Callable[[Any], str | None], numeric: bool) -> str:
    """What a valid value is, in the check's own words (its "must be …" without "must be"):
    the problem of a value of no valid type, or, for a number, of one below any bound."""
    words = ""
    for value in (object(), -(10**18)) if numeric else (object(),):
        text = problem(value) or ""
        words = text.split("; got")[0].removeprefix("must be ") or words
    return words


# ---- experiment files ------------------------------------------------------------------------


def experiment_reference() -> str:
    """The experiment-file reference page (Markdown)."""
    lines = [
        "# Experiment-file reference",
        "",
        "An experiment file is TOML with the tables `[run]`, `[task]`, `[[representations]]` "
        "and `[method]`; `probemeter run FILE` runs it (see the [CLI reference](cli.md)). "
        "Everything on this page is generated from the code when the site is built.",
        "",
        "## `[run]`",
        "",
        "| key | default |",
        "|---|---|",
    ]
    for item in dataclasses.fields(RunSettings):
        default = (
            "the file's stem"
            if item.default is dataclasses.MISSING
            else f"`{_toml_value(item.default)}`"
        )
        lines.append(f"| `{item.name}` | {default} |")
    lines += ["", "## `[task]`", "", "`dataset` picks the data; each has its own keys:", ""]
    lines += ["| dataset | key | default | valid values |", "|---|---|---|---|"]
    for name, spec in DATASETS.items():
        for key, (check, default) in spec.options.items():
            valid = _valid_values(check, isinstance(default, (int, float)))
            lines.append(f"| `{name}` | `{key}` | `{_toml_value(default)}` | {_cell(valid)} |")
    lines += [
        "",
        "## `[[representations]]` and the whole schema",
        "",
        "The schema as the experiment-file reader documents it "
        "([`probemeter.runs.config`](../api/runs.md)):",
        "",
        "```toml",
        _schema_block(),
        "```",
        "",
        "## `[method]`",
        "",
        "`kind` picks the method; the other keys are its options. Each option is also a flag "
        "of the command of the same name (`probemeter curve|mdl|pareto sweep|power`), with "
        "the same default.",
        "",
    ]
    for cls in METHODS.values():
        lines += [f'### `kind = "{cls.kind}"`', "", cls.summary, ""]
        lines += ["| option | type | default | valid values | flag | meaning |"]
        lines += ["|---|---|---|---|---|---|"]
        for opt in cls.options():
            default = "required" if opt.required else f"`{_toml_value(opt.written_default)}`"
            valid = _valid_values(opt.check.problem, opt.annotation in ("int", "float"))
            lines.append(
                f"| `{opt.name}` | `{opt.annotation}` | {default} | {_cell(valid)} "
                f"| `{opt.flag}` | {_cell(opt.help)} |"
            )
        lines.append("")
    return "\n".join(lines)


def _schema_block() -> str:
    """The TOML schema in :mod:`probemeter.runs.config`'s docstring: the indented block after
    its ``::``, blank lines included, up to the first line that is not indented."""
    from probemeter.runs import config

    lines = (config.__doc__ or "").split("::", 1)[1].splitlines()[1:]
    block = []
    for line in lines:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line.removeprefix("    "))
    return "\n".join(block).strip("\n")


# ---- command line ----------------------------------------------------------------------------


#: arguments the references leave out: ``-h/--help`` (on every command) and the subcommand
#: choice (each subcommand has its own section)
_SKIPPED = (argparse._HelpAction, argparse._SubParsersAction)


def commands(
    parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every (sub)command: its words after ``probemeter``, its parser and its one-line help,
    depth first in the order ``--help`` lists them."""
    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name, "")
                yield from commands(sub, (*path, name))


def _has_subcommands(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    """One table row per argument: its flags (or name) and arguments, and its help as
    ``--help`` shows it (with the default, where the help says it)."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, _SKIPPED):
            continue
        names = ", ".join(f"`{flag}`" for flag in action.option_strings) or f"`{action.dest}`"
        if action.option_strings and action.nargs != 0:
            names += f" `{formatter._format_args(action, action.dest.upper())}`"
        help_text = formatter._expand_help(action) if action.help else ""
        rows.append(f"| {names} | {_cell(help_text)} |")
    return rows


def cli_reference() -> str:
    """The command-line reference page (Markdown), every subcommand with every argument."""
    root = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Generated from the `argparse` parsers of `probemeter.cli` when the site is built. "
        "`probemeter COMMAND --help` prints the same. Failures are one line "
        "`probemeter: error: …` with an exit status by kind (the last line of "
        "`probemeter --help`):",
        "",
        "```text",
        root.format_help().strip(),
        "```",
        "",
    ]
    for path, parser, summary in commands(root):
        words = " ".join(path)
        lines += [f"{'#' * (len(path) + 1)} `probemeter {words}`", ""]
        if summary:
            lines += [summary[0].upper() + summary[1:], ""]
        if parser.description:
            lines += [parser.description, ""]
        lines += ["```text", parser.format_usage().strip(), "```", ""]
        if not _has_subcommands(parser):
            lines += ["| argument | meaning |", "|---|---|"]
            lines += _argument_rows(parser)
            lines.append("")
        if parser.epilog:
            lines += [parser.epilog, ""]
    return "\n".join(lines)


# ---- API -------------------------------------------------------------------------------------


def public_modules(name: str) -> list[str]:
    """``name`` and, for a package, its public submodules (no leading underscore), sorted."""
    found = [name]
    if _is_package(name):
        module = __import__(name, fromlist=["_"])
        for info in pkgutil.iter_modules(module.__path__):
            if not info.name.startswith("_"):
                found += public_modules(f"{name}.{info.name}")
    return found


def _is_package(name: str) -> bool:
    return hasattr(__import__(name, fromlist=["_"]), "__path__")


def api_pages() -> dict[str, str]:
    """The API pages by file name (``api/<slug>.md``): one per entry of :data:`API_PACKAGES`,
    a mkdocstrings block per public module."""
    pages = {}
    for title, roots in API_PACKAGES:
        slug = roots[0].rsplit(".", 1)[-1].replace("_", "-")
        lines = [f"# {title}", ""]
        for root in roots:
            for module in public_modules(root):
                lines += [f"::: {module}", ""]
                if _is_package(module):  # its names are documented in their modules
                    lines[-1:] = ["    options:", "      members: false", ""]
        pages[f"api/{slug}.md"] = "\n".join(lines)
    index = ["# API reference", ""]
    index += [
        "Generated by mkdocstrings from the docstrings (Google style), which cite the papers' "
        "sections and equations. `import probemeter as pm` re-exports the names a first "
        "user needs; everything else is imported from its package.",
        "",
        "::: probemeter",
        "    options:",
        "      members: false",
        "",
    ]
    index += [
        f"- [{title}]({page.removeprefix('api/')})" for (title, _), page in zip(API_PACKAGES, pages)
    ]
    pages["api/index.md"] = "\n".join(index) + "\n"
    return pages


# ---- coverage --------------------------------------------------------------------------------


def missing_from_references(experiment: str, cli: str) -> list[str]:
    """What the references lack: every method option must have its row (and flag) in the
    experiment-file reference, every subcommand its section in the CLI reference."""
    missing = []
    for cls in METHODS.values():
        if f'### `kind = "{cls.kind}"`' not in experiment:
            missing.append(f"experiment reference: method {cls.kind!r}")
        for opt in cls.options():
            if f"| `{opt.name}` |" not in experiment or f"`{opt.flag}`" not in experiment:
                missing.append(f"experiment reference: {cls.kind}.{opt.name}")
    for path, parser, _ in commands():
        if f" `probemeter {' '.join(path)}`\n" not in cli:
            missing.append(f"CLI reference: probemeter {' '.join(path)}")
        if not _has_subcommands(parser):
            for action in parser._actions:
                if isinstance(action, _SKIPPED):
                    continue
                for flag in action.option_strings:
                    if f"`{flag}`" not in cli:
                        missing.append(f"CLI reference: probemeter {' '.join(path)} {flag}")
    return missing
