"""Command-line options derived from the method dataclasses, and the options every command
shares (device, workers, seed, progress): each default is written once, on the dataclass or
here, so ``probemeter <method>`` and ``probemeter run`` agree by construction."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from probemeter._execution import Execution
from probemeter._exports import EXPORT_FORMATS, export_formats
from probemeter._figures import DEFAULT_DPI, DEFAULT_FORMATS, FIGURE_FORMATS, FigureOptions
from probemeter._method import GPU_MEMORY_FRACTION, MAX_MEMORY_GIB, Method, Option
from probemeter.data import LABEL_MODES

__all__ = [
    "add_export_option",
    "add_figure_options",
    "add_labels_option",
    "add_max_memory_option",
    "add_method_options",
    "add_run_options",
    "execution_from_args",
    "export_option",
    "figure_options",
    "method_from_args",
    "option_argument",
]


def option_argument(opt: Option) -> dict[str, Any]:
    """The ``argparse.add_argument`` keywords of one method option (its type, arity, choices,
    default and help, all read off the dataclass field)."""
    keywords: dict[str, Any] = {"dest": opt.name, "default": None if opt.required else opt.default}
    annotation = opt.annotation
    if annotation == "bool":
        keywords["action"] = argparse.BooleanOptionalAction
    elif annotation.startswith("tuple[int"):
        keywords.update(type=int, nargs="*" if opt.flag == "--hidden" else "+", metavar="N")
    elif annotation.startswith("tuple[float"):
        keywords.update(type=float, nargs="+", metavar="X")
    elif annotation.startswith("tuple[str"):
        keywords.update(nargs="+", metavar="S")
    elif annotation in ("int", "float"):
        keywords["type"] = int if annotation == "int" else float
    elif opt.check.choices:
        keywords["choices"] = opt.check.choices
    # --help adds the default (cli._conventions.HelpFormatter); argparse %-formats help
    # strings, so a literal "%" (e.g. "0.1 %") must be doubled
    text = opt.help.removesuffix(" (required)") + (" (required)" if opt.required else "")
    keywords["help"] = text.replace("%", "%%")
    return keywords


def add_method_options(
    parser: argparse.ArgumentParser,
    method: type[Method],
    *,
    skip: Iterable[str] = (),
    title: str | None = None,
) -> None:
    """Add one flag per option of ``method`` (but ``skip``) to ``parser``."""
    group = parser.add_argument_group(title or f"{method.kind} options")
    skipped = set(skip)
    for opt in method.options():
        if opt.name not in skipped:
            group.add_argument(opt.flag, **option_argument(opt))


def method_from_args(
    method: type[Method], args: argparse.Namespace, fixed: Mapping[str, Any] | None = None
) -> Method:
    """The method from parsed flags (and ``fixed`` values for options without a flag; a
    value of None is an option not given); a ``ValueError`` naming the flag of each bad
    value."""
    flags = {opt.name: opt.flag for opt in method.options()}
    values = {name: getattr(args, name) for name in flags if hasattr(args, name)}
    values.update(fixed or {})
    built, problems = method.from_values(values, where=lambda opt: opt.flag)
    if problems:
        raise ValueError("; ".join(problems))
    return built


def add_labels_option(parser: argparse.ArgumentParser | Any) -> None:
    """``--labels indices|encode``: how the label array ``y`` of feature files is read
    (:meth:`probemeter.data.ProbeData.from_arrays`)."""
    parser.add_argument(
        "--labels",
        choices=LABEL_MODES,
        default="indices",
        help="y holds class indices 0..K-1 (indices), or any labels - strings, booleans, "
        "1-based or sparse integers - mapped to 0..K-1 (encode)",
    )


def add_figure_options(parser: argparse.ArgumentParser | Any) -> None:
    """``--figure-format`` and ``--dpi``: the formats figures are saved in and the resolution
    of raster ones (:class:`~probemeter._figures.FigureOptions`)."""
    group = parser.add_argument_group("figures")
    group.add_argument(
        "--figure-format",
        nargs="+",
        choices=FIGURE_FORMATS,
        default=list(DEFAULT_FORMATS),
        metavar="FORMAT",
        help="formats of every figure: png (screens, the report), pdf or svg (papers)",
    )
    group.add_argument("--dpi", type=int, default=DEFAULT_DPI, help="dots per inch of PNG")


def figure_options(args: argparse.Namespace) -> FigureOptions:
    """The :class:`~probemeter._figures.FigureOptions` of parsed ``--figure-format``/``--dpi``
    (a ``ValueError`` naming the flag otherwise)."""
    try:
        return FigureOptions(tuple(dict.fromkeys(args.figure_format)), args.dpi)
    except ValueError as error:
        raise ValueError(f"--figure-format/--dpi: {error}") from None


def add_export_option(parser: argparse.ArgumentParser | Any, where: str = "--out") -> None:
    """``--export csv|parquet``: also write the command's tables (probe points, measures,
    method tables) as CSV and/or Parquet files in ``where`` (:mod:`probemeter._exports`)."""
    parser.add_argument(
        "--export",
        action="append",
        metavar="FORMAT",
        help=f"also write the tables (probe points, measures, method tables) as "
        f"{' and/or '.join(EXPORT_FORMATS)} files in {where}; repeat it or separate formats "
        "with commas; parquet needs pyarrow (default: none)",
    )


def export_option(args: argparse.Namespace) -> tuple[str, ...]:
    """The formats of parsed ``--export`` flags, checked (a ``ValueError`` naming the flag, also
    for parquet without pyarrow)."""
    return export_formats(args.export, "--export")


def add_max_memory_option(parser: argparse.ArgumentParser | Any) -> None:
    """``--max-memory GIB``: the engine's budget for one chunk of stacked probes."""
    parser.add_argument(
        "--max-memory",
        type=float,
        default=None,
        metavar="GIB",
        help="GiB for one chunk of stacked probes, per worker process; a probe that cannot fit "
        f"is refused before training (default: {MAX_MEMORY_GIB:g} on the CPU, "
        f"{GPU_MEMORY_FRACTION:g} of the free memory on a GPU)",
    )


def execution_from_args(args: argparse.Namespace) -> Execution:
    """Where and how a command trains, from the options :func:`add_run_options` added (no
    ``--no-progress``: no progress bar; no ``--max-memory``: the engine's budget)."""
    return Execution(
        device=args.device,
        n_jobs=args.n_jobs,
        max_memory=getattr(args, "max_memory", None),
        progress=not getattr(args, "no_progress", True),
    )


def add_run_options(
    parser: argparse.ArgumentParser, *, progress: bool = True, memory: bool = False
) -> None:
    """``--device``, ``--n-jobs``, ``--random-state`` (and ``--no-progress``, ``--max-memory``):
    where and how a command trains, the same defaults for every command."""
    group = parser.add_argument_group("running")
    if memory:
        add_max_memory_option(group)
    group.add_argument("--device", default="auto", help="auto, cpu or cuda")
    group.add_argument(
        "--n-jobs",
        type=int,
        default=-1,
        help="CPU worker processes (-1: all CPUs this process may use)",
    )
    group.add_argument(
        "--random-state", type=int, default=0, help="seed of splits, subsets and inits"
    )
    if progress:
        group.add_argument("--no-progress", action="store_true", help="hide progress bars")
