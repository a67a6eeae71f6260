"""``probemeter run``: a whole study from an experiment file (:mod:`probemeter.runs.config`),
resumable, in this process or on a Ray cluster (``--backend ray``)."""

from __future__ import annotations

import argparse
import errno
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from probemeter.cli._options import (
    add_export_option,
    add_figure_options,
    add_max_memory_option,
    export_option,
    figure_options,
)

__all__ = ["add_run_command"]

_log = logging.getLogger(__name__)


def add_run_command(commands: Any) -> None:
    """Register ``run``."""
    run = commands.add_parser("run", help="run an experiment file (TOML), resuming a stopped run")
    run.add_argument("experiment", type=Path, help="the experiment file (TOML)")
    run.add_argument("--out", type=Path, default=Path("runs"), help="runs go to OUT/<run.name>")
    run.add_argument("--fresh", action="store_true", help="recompute units already stored")
    run.add_argument(
        "--check",
        action="store_true",
        help="only check the file, its data files and the flags (nothing is encoded or "
        "trained), then exit",
    )
    run.add_argument(
        "--save-probes",
        action="store_true",
        help="store each unit's trained probes beside it, as [run] save_probes = true does",
    )
    run.add_argument(
        "--n-jobs", type=int, help="CPU worker processes, --backend local (default -1: all)"
    )
    add_max_memory_option(run)
    run.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_export_option(run, "the run folder")
    add_figure_options(run)
    run.add_argument(
        "--template",
        type=Path,
        help="your own Jinja2 template of report.html (context: probemeter.runs.html_report)",
    )
    _ray_options(run)
    run.set_defaults(handler=_run_experiment)


#: the options of `probemeter run` that only the Ray backend takes (fields of RayOptions)
_RAY_ONLY = ("address", "cpus_per_unit", "gpus_per_unit", "max_retries")


def _ray_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("backend")
    group.add_argument(
        "--backend",
        default="local",
        metavar="{local,ray}",
        help="local (this process, the default) or ray (one Ray task per unit)",
    )
    group.add_argument(
        "--address", help="Ray cluster: auto or HOST:PORT (default: a new one for this run)"
    )
    group.add_argument(
        "--cpus-per-unit",
        type=int,
        metavar="N",
        help="CPUs (and worker processes) per Ray task (default 1)",
    )
    group.add_argument(
        "--gpus-per-unit", type=float, metavar="G", help="GPUs per Ray task (default 0)"
    )
    group.add_argument(
        "--max-retries",
        type=int,
        metavar="N",
        help="Ray re-runs of a task whose worker died (default 3)",
    )


def _ray_settings(args: argparse.Namespace) -> Any:
    """The Ray options of `probemeter run` (None for --backend local), checked."""
    if args.backend not in ("local", "ray"):
        raise ValueError(f"--backend must be 'local' or 'ray'; got {args.backend!r}")
    if args.max_memory is not None and not (math.isfinite(args.max_memory) and args.max_memory > 0):
        raise ValueError(f"--max-memory must be a positive number of GiB; got {args.max_memory}")
    if args.backend == "local":
        for name in _RAY_ONLY:
            if getattr(args, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} needs --backend ray (the backend is local)")
        from probemeter.training.workers import worker_count

        try:  # the engine's own check of n_jobs, before anything is read
            worker_count(-1 if args.n_jobs is None else args.n_jobs)
        except ValueError as error:
            message = str(error).replace("n_jobs", "--n-jobs", 1).replace(" or None", "")
            raise ValueError(message) from None
        return None
    from probemeter.runs.ray_backend import RayOptions, import_ray

    if args.n_jobs is not None:
        raise ValueError("--n-jobs is for --backend local; on Ray use --cpus-per-unit")
    given = {name: getattr(args, name) for name in _RAY_ONLY if getattr(args, name) is not None}
    try:
        options = RayOptions(**given)
    except ValueError as error:  # name the flag, not the field
        message = str(error)
        for name in _RAY_ONLY:
            message = message.replace(name, "--" + name.replace("_", "-"), 1)
        raise ValueError(message) from None
    import_ray()  # after the flags: a bad flag is reported whether or not Ray is installed
    return options


def _check_out(out: Path) -> None:
    """``--out`` as :func:`~probemeter._io.writable_folder` will find it when the run starts,
    without creating it (``--check`` writes nothing): a file is refused (ValueError), a
    file among its parents or a parent that cannot be written is an OSError naming it."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file; give a folder")
    existing = next(folder for folder in (out, *out.parents) if folder.exists())
    if not existing.is_dir():
        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(out))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(existing))


def _run_experiment(args: argparse.Namespace) -> int:
    """Run the experiment file; with ``--check``, only what the run checks before it trains:
    the file (:func:`~probemeter.runs.config.load_experiment`), every flag, and the data
    (:func:`~probemeter.runs.check.check_data`), so that "OK" means the run will start."""
    from probemeter._io import writable_folder
    from probemeter.runs.check import check_data
    from probemeter.runs.config import load_experiment
    from probemeter.runs.html_report import write_report
    from probemeter.runs.runner import run_experiment

    ray = _ray_settings(args)
    figures, formats = figure_options(args), export_option(args)
    if args.template is not None and not args.template.is_file():  # else found after the run
        raise ValueError(f"--template {str(args.template)!r} is no file")
    experiment = load_experiment(args.experiment, save_probes=args.save_probes)
    names = ", ".join(rep.name for rep in experiment.representations)
    task = experiment.task.dataset if experiment.task else "npz features"
    settings = ", ".join(f"{key} {value}" for key, value in experiment.method.to_dict().items())
    print(f"{args.experiment}: {task}; representations {names}; method {settings}")
    if args.check:
        _check_out(args.out)
        check_data(experiment, max_memory=args.max_memory)
        print("experiment file OK")
        return 0
    writable_folder(args.out, "--out")  # as every command proves --out before any work
    started = time.perf_counter()
    run = run_experiment(
        experiment,
        args.out,
        fresh=args.fresh,
        n_jobs=-1 if args.n_jobs is None else args.n_jobs,
        max_memory=args.max_memory,
        progress=not args.no_progress,
        ray=ray,
        figures=figures,
        export=formats,
    )
    for name, timing in run.timings.items():
        how = "loaded (computed earlier in" if timing["loaded"] else "computed in"
        _log.info("%s: %s %.1f s%s", name, how, timing["seconds"], ")" if timing["loaded"] else "")
    print()
    print(run.table)
    files = write_report(run.run_dir, template=args.template)
    written = ", ".join(path.name for path in run.files)
    _log.info(
        "wrote %s, experiment.toml and units/ to %s in %.1f s; report: %s",
        written, run.run_dir, time.perf_counter() - started, files.html,
    )  # fmt: skip
    return 0
