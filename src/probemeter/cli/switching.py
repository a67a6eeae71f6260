"""``probemeter switching``: the switching code over probe families (fixed share, Herbster &
Warmuth 1998, with switching rate 1/t) of features in files.

    probemeter switching layer0.npz layer1.npz --families linear 64 64x64 --out switching-results

Each file holds ``X`` and ``y``. Every family's online code (Voita & Titov eq. 4) and the
switching code over them; writes the run files of the ``switching`` method to ``--out``:
``results.json`` (all codes, in bits), ``table.md``/``table.tex`` and ``switching.png``.
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
from probemeter.mdl.switching_method import SwitchingMethod

__all__ = ["add_switching_command"]

_log = logging.getLogger(__name__)


def add_switching_command(commands: Any) -> None:
    """Register the ``switching`` sub-command on an ``argparse`` sub-parsers object."""
    parser = commands.add_parser(
        "switching", help="switching code over probe families (online codes, bits)"
    )
    add_feature_file_arguments(parser)
    add_method_options(parser, SwitchingMethod)
    add_run_options(parser, memory=True)
    add_figure_options(parser)
    parser.add_argument(
        "--out", type=Path, default=Path("switching-results"), help="folder of the results"
    )
    add_export_option(parser)
    parser.set_defaults(handler=run_switching)


def run_switching(args: argparse.Namespace) -> int:
    """Handler of ``probemeter switching``."""
    from probemeter._exports import export_frames
    from probemeter._io import writable_folder
    from probemeter.mdl.switching_method import switching_unit

    names = feature_names(args.features, args.name)
    method = method_from_args(SwitchingMethod, args)
    # every file is read and the output folder proven writable before any probe is trained
    datasets = [load_probe_data(path, args, name) for name, path in zip(names, args.features)]
    writable_folder(args.out, "--out")
    results = [
        switching_unit(
            data,
            method=method,
            random_state=args.random_state,
            execution=execution_from_args(args),
        )
        for data in datasets
    ]
    run = method.finish(
        results, args.out, {"command": "probemeter switching"}, figure_options(args)
    )
    written = export_frames(run.frames, args.out, export_option(args))
    print(run.table)
    _log.info("wrote %s", ", ".join(path.name for path in (*run.files, *written)))
    return 0
