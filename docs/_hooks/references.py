"""The generated reference pages: experiment files, command line and API.

Each page is read off the code when the site is built, so it cannot drift from it:

* the experiment-file reference (:func:`experiment_reference`), one function per table:
  ``[task]``, ``[[representations]]`` and ``[method]`` from the declarations (every option
  with its default, check and help; a method's with its flag) of
  :data:`~probemeter.runs.tasks.TASKS`, :data:`~probemeter.runs.kinds.KINDS` and
  :data:`~probemeter.runs.methods.METHODS`; ``[run]`` from the fields of
  :class:`~probemeter.runs.config.RunSettings`, their meaning in :data:`RUN_HELP`;
* the command-line reference from the argparse parsers of :mod:`probemeter.cli.main`, every
  subcommand at any depth;
* one API page per public subpackage or module, a mkdocstrings ``:::`` block per public
  module found on disk.

:func:`missing_from_references` says what a reference lacks (an option, a subcommand);
the build fails on any, and ``tests/docs/test_experiment_reference.py`` and
``tests/docs/test_docs_site.py`` check the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from probemeter.cli.main import build_parser
from probemeter.runs.config import RunSettings
from probemeter.runs.kinds import KINDS
from probemeter.runs.methods import METHODS
from probemeter.runs.tasks import TASKS

#: API pages: (title, module) in the order of the navigation; each subpackage's public
#: modules are found on disk, so a new module appears without editing this list
API_PACKAGES = (
    ("Data and feature files", ("probemeter.data", "probemeter.feature_files")),
    ("Loss-data curves (Whitney et al.)", ("probemeter.curves",)),
    ("MDL probing (Voita & Titov)", ("probemeter.mdl",)),
    ("Power (Zhu et al.)", ("probemeter.power",)),
    ("Pareto probing (Pimentel et al.)", ("probemeter.pareto",)),
    ("Structural probes (Hewitt & Manning)", ("probemeter.structural",)),
    ("k-sparse probes (Gurnee et al.)", ("probemeter.sparse_probing",)),
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
#
# One function per table of the page. ``[task]``, ``[[representations]]`` and ``[method]`` are
# rendered from the declarations (TASKS, KINDS, METHODS: every option with its default, check
# and help); ``[run]`` from RunSettings, a plain dataclass whose help texts are RUN_HELP below.


@dataclass(frozen=True)
class Key:
    """A key of an experiment-file table that is not a declared option: its name, its default
    as Markdown and what it means."""

    name: str
    default: str
    help: str


def _toml_value(value: object) -> str:
    """A default as it is written in an experiment file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return repr(value)


#: ``[run]``: what each field of :class:`probemeter.runs.config.RunSettings` means (a plain
#: dataclass: its names and defaults are read from it, a field without a line here fails the
#: build)
RUN_HELP = {
    "name": "the run folder under `--out`: `OUT/<name>`",
    "random_state": "the global seed: data splits, PCA and projections, subsets, probe "
    "initialisations",
    "device": '`"auto"` (a GPU when there is one), `"cpu"` or `"cuda"`; does not change unit keys',
    "save_probes": "keep every trained probe: `units/<key>.probes.safetensors` beside each unit "
    "(methods `curve` and `mdl`; needs safetensors); `load_run_probes` reads them",
    "baseline": "a representation of the run (a layer sweep's `NAME-0`, …): every other one is "
    "also probed beside it, and each measure is reported beyond it (conditional probing, "
    "Hewitt et al. 2021): `conditional.md`, `.json`, `.png`; not with `power`",
}

#: ``[[representations]]``: the keys of every entry besides its kind's options
ENTRY_KEYS = (
    Key("name", "required", "distinct over the entries; a layer sweep names NAME-0, NAME-1, …"),
    Key("kind", "required", "one of the kinds below; the other keys are its options"),
)


def _key_table(keys: tuple[Key, ...]) -> list[str]:
    """A table of keys that are not declared options."""
    lines = ["| key | default | meaning |", "|---|---|---|"]
    lines += [f"| `{key.name}` | {key.default} | {_cell(key.help)} |" for key in keys]
    return [*lines, ""]


def _option_table(options: tuple[Any, ...], flags: bool) -> list[str]:
    """A table of declared options (:class:`probemeter._declared.Option`): name, type,
    default (as written in a file), valid values (the check's own words), the command-line
    flag where ``flags``, and meaning."""
    flag_head, flag_rule = ("flag | ", "---|") if flags else ("", "")
    lines = [f"| option | type | default | valid values | {flag_head}meaning |"]
    lines += [f"|---|---|---|---|{flag_rule}---|"]
    for opt in options:
        if opt.required:
            default = "required"
        elif opt.written_default is None:
            default = "not set"
        else:
            default = f"`{_toml_value(opt.written_default)}`"
        valid = _valid_values(opt.check.problem, opt.annotation in ("int", "float"))
        flag = f"`{opt.flag}` | " if flags else ""
        lines.append(
            f"| `{opt.name}` | `{opt.annotation}` | {default} | {_cell(valid)} | {flag}"
            f"{_cell(opt.help)} |"
        )
    return [*lines, ""]


def _declarations(key: str, registry: dict[str, Any], flags: bool) -> list[str]:
    """One subsection per declaration (``### `key = "name"` ``): its summary and options."""
    lines = []
    for name, cls in registry.items():
        lines += [f'### `{key} = "{name}"`', "", cls.summary, ""]
        options = cls.options()
        lines += _option_table(options, flags) if options else ["No options of its own.", ""]
        lines += _language_model_defaults(cls)
    return lines


def _language_model_defaults(cls: Any) -> list[str]:
    """A method's defaults on tasks of texts that language models read
    (``Method.language_model_defaults``, ``TaskType.language_models``), as a sentence."""
    defaults = getattr(cls, "language_model_defaults", {})
    if not defaults:
        return []
    tasks = [f"`{name}`" for name, task in TASKS.items() if task.language_models]
    written = ", ".join(f"`{name} = {_toml_value(value)}`" for name, value in defaults.items())
    return [
        f"On a {' or '.join(tasks)} task (texts a language model reads) the defaults are "
        f"{written} instead (a linear probe; a grid of settings is chosen on the development "
        "split). Write the options out for a paper's protocol.",
        "",
    ]


def run_section() -> list[str]:
    """``[run]``: the fields of :class:`~probemeter.runs.config.RunSettings` (the run's folder,
    seed, device and kept probes) with their meaning in :data:`RUN_HELP`."""
    keys = tuple(
        Key(
            item.name,
            "the file's stem"
            if item.default is dataclasses.MISSING
            else f"`{_toml_value(item.default)}`",
            RUN_HELP[item.name],
        )
        for item in dataclasses.fields(RunSettings)
    )
    return ["## `[run]`", "", "Optional; every key has a default.", "", *_key_table(keys)]


def task_section() -> list[str]:
    """``[task]``: one subsection per dataset of :data:`~probemeter.runs.tasks.TASKS`."""
    names = ", ".join(f'`"{name}"`' for name in TASKS)
    lines = [
        "## `[task]`",
        "",
        'Required unless every representation is `kind = "npz"`. `dataset` (required) picks '
        f"the data, one of {names}; the other keys are its options. Guide: "
        "[Tasks](../tasks.md), [SentEval](../senteval.md), [Edge probing](../edge-probing.md).",
        "",
    ]
    return lines + _declarations("dataset", TASKS, flags=False)


def representations_section() -> list[str]:
    """``[[representations]]``: the keys of every entry, then one subsection per kind of
    :data:`~probemeter.runs.kinds.KINDS`."""
    lines = [
        "## `[[representations]]`",
        "",
        "At least one entry. Features are standardised with statistics of the training pool "
        "(parity features are kept as bits; sparse features are scaled, not centred). Guide: "
        "[Representations and feature files](../representations.md).",
        "",
        *_key_table(ENTRY_KEYS),
    ]
    return lines + _declarations("kind", KINDS, flags=False)


def method_section() -> list[str]:
    """``[method]``: one subsection per method of :data:`~probemeter.runs.methods.METHODS`,
    with each option's flag."""
    lines = [
        "## `[method]`",
        "",
        "`kind` (required) picks the method; the other keys are its options. Each option is "
        "also a flag of the command of the same name (`probemeter curve|mdl|switching|pareto "
        "sweep|power`), with the same default; the structural method and the pareto method's "
        "biaffine family run from experiment files only.",
        "",
    ]
    return lines + _declarations("kind", METHODS, flags=True)


def experiment_reference() -> str:
    """The experiment-file reference page (Markdown): :func:`run_section`,
    :func:`task_section`, :func:`representations_section` and :func:`method_section`."""
    lines = [
        "# Experiment-file reference",
        "",
        "An experiment file is TOML with the tables `[run]`, `[task]`, `[[representations]]` "
        "and `[method]`; `probemeter run FILE` runs it "
        "([Experiment files](../experiment-files.md); flags: the [CLI reference](cli.md)). "
        "This page is generated from the declarations of the tasks, representation kinds and "
        "methods when the site is built.",
        "",
    ]
    for section in (run_section, task_section, representations_section, method_section):
        lines += section()
    return "\n".join(lines)


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


def declared_rows(page: str, key: str, name: str) -> dict[str, str]:
    """The option rows of the declaration ``key = "name"`` (a dataset, kind or method) in the
    experiment-file reference: option name -> its table row (empty without a section)."""
    heading = f'### `{key} = "{name}"`'
    if heading not in page:
        return {}
    section = page.split(heading, 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {row.split("`", 2)[1]: row for row in rows}


def _section(page: str, table: str) -> str:
    """The part of the experiment-file reference under ``## `table` ``."""
    heading = f"## `{table}`"
    return page.split(heading, 1)[1].split("\n## ", 1)[0] if heading in page else ""


#: the declarations the experiment-file reference lists: (table, key, registry, with flags)
DECLARATIONS = (
    ("[task]", "dataset", TASKS, False),
    ("[[representations]]", "kind", KINDS, False),
    ("[method]", "kind", METHODS, True),
)


def missing_from_experiment_reference(page: str) -> list[str]:
    """What the experiment-file reference lacks: every ``[run]`` setting its row; every task,
    representation kind and method its section, and in it every declared option its row
    (a method's with its flag)."""
    missing = []
    run = _section(page, "[run]")
    for item in dataclasses.fields(RunSettings):
        if f"| `{item.name}` |" not in run:
            missing.append(f"experiment reference: [run] {item.name}")
    for table, key, registry, flags in DECLARATIONS:
        section = _section(page, table)
        for name, cls in registry.items():
            heading = f'### `{key} = "{name}"`'
            if heading not in section:
                missing.append(f"experiment reference: {table} {key} {name!r}")
                continue
            rows = declared_rows(section, key, name)
            for opt in cls.options():
                row = rows.get(opt.name)
                if row is None or (flags and f"| `{opt.flag}` |" not in row):
                    missing.append(f"experiment reference: {table} {name}.{opt.name}")
    return missing


def missing_from_cli_reference(cli: str) -> list[str]:
    """What the CLI reference lacks: every subcommand its section, every flag its row."""
    missing = []
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


def missing_from_references(experiment: str, cli: str) -> list[str]:
    """What the references lack (:func:`missing_from_experiment_reference`,
    :func:`missing_from_cli_reference`); the build fails on any."""
    return missing_from_experiment_reference(experiment) + missing_from_cli_reference(cli)
