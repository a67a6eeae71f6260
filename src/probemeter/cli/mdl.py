"""``probemeter mdl``: online (and optionally variational) codes of features in ``.npz`` files.

    probemeter mdl layer0.npz layer1.npz --groups groups --variational --out mdl-results

Each file holds ``X`` and ``y`` (and, for the control task, word-type ids: ``--groups NAME``
names an array in the ``.npz``, or ``--groups PATH.npy`` a file with one id per row). With
groups the control task (Voita & Titov §3.1) is coded too. Writes ``mdl.json`` (all codes, in
bits), ``mdl.md`` (the Table-2-style table) and ``mdl.png`` (Fig. 2 a–c) to ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from probemeter._io import write_text_atomic
from probemeter.data import ProbeData, load_features
from probemeter.mdl.bayesian import BayesianMLP
from probemeter.mdl.controls import control_task
from probemeter.mdl.online import PAPER_TIMESTEPS, online_codelength, paper_training
from probemeter.mdl.table import MDLEntry, mdl_table, plot_mdl, save_mdl_results
from probemeter.mdl.variational import variational_codelength
from probemeter.probes import MLP

__all__ = ["add_mdl_command"]


def add_mdl_command(commands: Any) -> None:
    """Register the ``mdl`` sub-command on an ``argparse`` sub-parsers object."""
    parser = commands.add_parser("mdl", help="MDL probing (online/variational codes, controls)")
    parser.add_argument("features", type=Path, nargs="+", help=".npz files with X and y")
    parser.add_argument("--name", action="append", help="one name per features file")
    parser.add_argument(
        "--groups", help="word-type ids: an array name in each .npz or a .npy file (one file)"
    )
    parser.add_argument("--hidden", type=int, nargs="*", default=[1000, 1000])
    parser.add_argument("--seeds", type=int, default=3, help="data orders of the online code")
    parser.add_argument("--timesteps", type=float, nargs="+", default=list(PAPER_TIMESTEPS))
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--variational", action="store_true", help="also the variational code")
    parser.add_argument("--variational-epochs", type=int, default=200)
    parser.add_argument("--test-size", type=float, default=0.2)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--format", choices=("markdown", "text", "latex"), default="markdown")
    parser.add_argument("--out", type=Path, default=Path("mdl-results"))
    parser.set_defaults(handler=run_mdl)


def _load(path: Path, groups: str | None, args: argparse.Namespace, name: str) -> ProbeData:
    X, y = load_features(path)
    group_ids = None
    if groups is not None:
        if groups.endswith(".npy"):
            group_ids = np.load(groups, allow_pickle=False)
        else:
            with np.load(path, allow_pickle=False) as archive:
                if groups not in archive.files:
                    raise ValueError(f"--groups {groups!r}: no such array in {str(path)!r}")
                group_ids = archive[groups]
        if len(group_ids) != len(y):
            raise ValueError(
                f"--groups has {len(group_ids)} ids but {str(path)!r} has {len(y)} rows"
            )
    return ProbeData.from_arrays(
        X,
        y,
        groups=group_ids,
        test_size=args.test_size,
        random_state=args.random_state,
        name=name,
    )


def run_mdl(args: argparse.Namespace) -> int:
    """Handler of ``probemeter mdl``."""
    names = args.name or [path.stem for path in args.features]
    if len(names) != len(args.features):
        raise ValueError(f"give one --name per features file ({len(args.features)})")
    config = paper_training(batch_size=args.batch_size, max_epochs=args.max_epochs)
    probe = MLP(tuple(args.hidden))
    entries = []
    for name, path in zip(names, args.features):
        data = _load(path, args.groups, args, name)
        tasks = [("", data)]
        if args.groups is not None:
            tasks.append(("control_", control_task(data, random_state=args.random_state)))
        codes = {}
        for role, task in tasks:
            codes[f"{role}online"] = online_codelength(
                task,
                probe,
                args.timesteps,
                args.seeds,
                config=config,
                random_state=args.random_state,
                device=args.device,
                n_jobs=args.n_jobs,
            )
            if args.variational:
                codes[f"{role}variational"] = variational_codelength(
                    task,
                    BayesianMLP(tuple(args.hidden)),
                    epochs=args.variational_epochs,
                    random_state=args.random_state,
                    device=args.device,
                )
        entries.append(MDLEntry(name, **codes))
    table = mdl_table(entries, args.format)
    args.out.mkdir(parents=True, exist_ok=True)
    save_mdl_results(args.out / "mdl.json", entries, {"command": "probemeter mdl"})
    write_text_atomic(args.out / "mdl.md", mdl_table(entries, "markdown") + "\n")
    plot_mdl(entries, args.out / "mdl.png")
    print(table)
    print(f"\nwrote {args.out / 'mdl.json'}, mdl.md and mdl.png")
    return 0
