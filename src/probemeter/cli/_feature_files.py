"""Feature files on the command line: the representations of ``probemeter mdl`` and
``probemeter switching`` (one ``X``/``y`` file each, split into pool and test here)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probemeter.data import ProbeData

__all__ = ["add_feature_file_arguments", "feature_names", "load_probe_data"]


def add_feature_file_arguments(parser: argparse.ArgumentParser | Any) -> None:
    """The representations of a command: one or more ``features`` files, ``--name`` (one per
    file), ``--test-size`` (the test fraction split from each) and ``--labels``."""
    from probemeter.cli._options import add_labels_option

    parser.add_argument(
        "features",
        type=Path,
        nargs="+",
        help="feature files with X and y (.npz, .pt, .safetensors, .parquet, .npy)",
    )
    parser.add_argument("--name", action="append", help="one name per features file")
    parser.add_argument("--test-size", type=float, default=0.2, help="test fraction of each file")
    add_labels_option(parser)


def feature_names(paths: Sequence[Path], names: Sequence[str] | None) -> list[str]:
    """The representations' names: ``names`` (one ``--name`` per file) or the files' stems.

    Raises:
        ValueError: ``names`` given, but not one per file.
    """
    found = list(names) if names else [path.stem for path in paths]
    if len(found) != len(paths):
        raise ValueError(f"give one --name per features file ({len(paths)}); got {len(found)}")
    return found


def load_probe_data(
    path: Path, args: argparse.Namespace, name: str, groups: str | None = None
) -> ProbeData:
    """The representation in the features file ``path`` (``X`` and ``y``), split by
    ``args.test_size`` and ``args.random_state`` with labels read as ``args.labels``
    (:meth:`~probemeter.data.ProbeData.from_arrays`); with ``groups``, its word-type ids (the
    control task's, Voita & Titov §3.1): an array name in the file, or a ``.npy`` file. When
    ``args.n_jobs`` means worker processes, the features are put in shared memory
    (:func:`~probemeter.training.shared_memory.share_data`: the workers map them, no copies).

    Raises:
        ValueError: the file or the group ids unreadable, or not one id per row of ``X``;
            arrays that :meth:`~probemeter.data.ProbeData.from_arrays` refuses (naming the
            file).
    """
    from probemeter.data import ProbeData
    from probemeter.feature_files import load_array, load_features
    from probemeter.training.shared_memory import share_for_workers

    X, y = load_features(path)
    group_ids = None
    if groups is not None:
        try:
            group_ids = load_array(groups) if groups.endswith(".npy") else load_array(path, groups)
        except ValueError as error:
            raise ValueError(f"--groups {groups!r}: {error}") from None
        if len(group_ids) != len(y):
            raise ValueError(
                f"--groups has {len(group_ids)} ids but {str(path)!r} has {len(y)} rows"
            )
    try:
        data = ProbeData.from_arrays(
            X,
            y,
            groups=group_ids,
            test_size=args.test_size,
            random_state=args.random_state,
            name=name,
            labels=args.labels,
        )
    except ValueError as error:  # named by array (X, y): say from which of the files
        raise ValueError(f"{str(path)!r}: {error}") from None
    del X, y  # the file's arrays go before the features are copied to shared memory
    return share_for_workers(data, args.n_jobs)
