"""``probemeter mdl``: online (and optionally variational) codes of features in ``.npz`` files.

    probemeter mdl layer0.npz layer1.npz --groups groups --variational --out mdl-results

Each file holds ``X`` and ``y`` (and, for the control task, word-type ids: ``--groups NAME``
names an array in the ``.npz``, or ``--groups PATH.npy`` a file with one id per row). With
groups the control task (Voita & Titov §3.1) is coded too. Writes ``mdl.json`` (all codes, in
bits), ``mdl.md`` (the Table-2-style table) and ``mdl.png`` (Fig. 2 a–c) to ``--out``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from probemeter.cli._feature_files import (
    add_feature_file_arguments,
    feature_names,
    load_probe_data,
)
from probemeter.cli._options import (
    add_export_option,
    add_figure_options,
    add_method_options,
    add_run_options,
    execution_from_args,
    export_option,
    figure_options,
    method_from_args,
)
from probemeter.mdl.method import MDLMethod

__all__ = ["add_mdl_command"]

_log = logging.getLogger(__name__)


def add_mdl_command(commands: Any) -> None:
    """Register the ``mdl`` sub-command on an ``argparse`` sub-parsers object."""
    parser = commands.add_parser("mdl", help="MDL probing (online/variational codes, controls)")
    add_feature_file_arguments(parser)
    parser.add_argument(
        "--groups", help="word-type ids: an array name in each .npz or a .npy file (one file)"
    )
    # the control task is coded when word types are given (--groups)
    add_method_options(parser, MDLMethod, skip=("control",))
    add_run_options(parser, memory=True)
    add_figure_options(parser)
    parser.add_argument(
        "--format", choices=("markdown", "text", "latex"), default="markdown", help="table format"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("mdl-results"), help="folder of the results"
    )
    add_export_option(parser)
    parser.set_defaults(handler=run_mdl)


def run_mdl(args: argparse.Namespace) -> int:
    """Handler of ``probemeter mdl``."""
    from probemeter._exports import export_frames
    from probemeter._io import writable_folder, write_text_atomic
    from probemeter.mdl.method import entry_from_dict, mdl_unit
    from probemeter.mdl.table import mdl_figure, mdl_frames, mdl_table, save_mdl_results

    names = feature_names(args.features, args.name)
    method = method_from_args(MDLMethod, args, fixed={"control": args.groups is not None})
    # every file is read and the output folder proven writable before any probe is trained
    datasets = [
        load_probe_data(path, args, name, args.groups) for name, path in zip(names, args.features)
    ]
    figures = figure_options(args)
    formats = export_option(args)
    writable_folder(args.out, "--out")
    entries = []
    for data in datasets:
        result = mdl_unit(
            data,
            method=method,
            random_state=args.random_state,
            execution=execution_from_args(args),
        )
        entries.append(entry_from_dict(result))
    table = mdl_table(entries, args.format)
    save_mdl_results(args.out / "mdl.json", entries, {"command": "probemeter mdl"})
    write_text_atomic(args.out / "mdl.md", mdl_table(entries, "markdown") + "\n")
    written = export_frames(mdl_frames(entries), args.out, formats)
    written += figures.save(mdl_figure(entries), args.out / "mdl")
    print(table)
    _log.info("wrote %s, mdl.md and %s", args.out / "mdl.json", ", ".join(p.name for p in written))
    return 0
