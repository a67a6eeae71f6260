"""Kinds whose features come with their own labels in files the user gives: arrays in
``.npz``/``.parquet``/``.safetensors`` files."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter._method import Method
from probemeter.data import LABEL_MODES, ProbeData
from probemeter.feature_files import FeatureFileInfo, inspect_features
from probemeter.runs.kinds.base import (
    COMBINATIONS,
    COMBINE_HELP,
    FILES,
    LAYER_HELP,
    Build,
    Report,
    Representation,
    RepresentationKind,
    check_layers,
    layer_representations,
    mix_layers,
)
from probemeter.runs.tasks import TaskInputs

# ---- features read from files ---------------------------------------------------------------


class FileKind(RepresentationKind):
    """Features with their own labels, read from files the user gives (no task needed)."""

    reads = FILES

    def files(
        self, where: str, folder: Path, bad: set[str], report: Report
    ) -> dict[str, Path | None]:
        """Its ``train`` and ``test`` files, made absolute (relative to ``folder``, which holds
        the experiment file); a missing one is reported, a refused one is None."""
        files: dict[str, Path | None] = {}
        for key in ("train", "test"):
            files[key] = None if key in bad else (folder / getattr(self, key)).resolve()
            if files[key] is not None and not files[key].is_file():
                report(f"{where}.{key}", f"file {str(files[key])!r} does not exist")
        return files

    @classmethod
    @abstractmethod
    def read(cls, rep: Representation, inputs: TaskInputs, *, standardize: bool) -> ProbeData:
        """The files' arrays validated as data (``standardize=False``: as read, which
        ``--check`` validates without the standardised copy)."""

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        return cls.read(rep, inputs, standardize=True)

    @classmethod
    def pool_problems(cls, rep: Representation, method: Method) -> list[tuple[str, str]]:
        """The method's sizes within the pool: the rows of the training file
        (:meth:`pool_rows`). The files' own problems were reported when the entry was read."""
        rows = cls.pool_rows(rep)
        if rows is None:
            return []
        entry = rep.sweep or rep.name
        return [
            (location, f"{message} (pool of {entry!r}: {rows} rows)")
            for location, message in method.check_pool(rows)
        ]

    @classmethod
    def pool_rows(cls, rep: Representation) -> int | None:
        """Rows of the training file, from its header; None when unreadable (reported when
        the entry was read)."""
        try:
            return inspect_features(rep.train).n_rows
        except ValueError:
            return None

    @classmethod
    def sparse_problems(
        cls, rep: Representation, method: Method, keeping: str | None
    ) -> list[tuple[str, str]]:
        """Sparse features (a ``scipy.sparse.save_npz`` matrix) need a method that trains on
        sparse rows (:meth:`~probemeter._method.Method.sparse_problems`) and cannot keep their
        probes (kept probes are evaluated on dense features; reported at ``keeping``, where
        the wish to keep them was written, when it was)."""
        try:
            sparse = inspect_features(rep.train).sparse
        except ValueError:  # reported when the entry was read
            return []
        if not sparse:
            return []
        what = f"representation {rep.name!r} has sparse features ({str(rep.train)!r})"
        problems = [(where, f"{what}: {reason}") for where, reason in method.sparse_problems()]
        if keeping is not None:
            off = "leave out --save-probes" if keeping[:2] == "--" else "set save_probes = false"
            kept = f"{what}: kept probes are evaluated on dense features; {off}"
            problems.append((keeping, kept))
        return problems


@dataclass(frozen=True, kw_only=True)
class NpzKind(FileKind):
    train: str = option(
        check=valid.text(),
        help="feature file of the pool (arrays X, y; .npz, .npy, .pt, .safetensors, .parquet; "
        "a scipy.sparse .npz for sparse features), relative to the experiment file",
    )
    test: str = option(check=valid.text(), help="feature file of the test set, like train")
    labels: str = option(
        "indices",
        check=valid.one_of(*LABEL_MODES),
        help='"indices" (class indices 0..K-1) or "encode" (strings, booleans, sparse '
        "integers mapped to 0..K-1)",
        key_omits="indices",
    )
    layer: int | list[int] | str | None = option(  # noqa: RUF009 (as TransformerKind.layer)
        None, check=valid.Check(check_layers), help="required when X is 3-D: " + LAYER_HELP
    )
    combine: str = option(
        "none", check=valid.one_of(*COMBINATIONS), help=COMBINE_HELP, key_omits="none"
    )

    kind = "npz"
    summary = "features with their own labels from files; no [task] needed"

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The files' headers checked (no data are loaded): arrays ``X`` and ``y`` readable
        and of matching shapes, test like train (features, layers); a 3-D ``X`` needs
        ``layer`` (one representation per layer, or with ``combine`` the layers side by side:
        :func:`layer_representations`), a 2-D one refuses it. After a problem, the entry as
        one representation (the file is rejected anyway)."""
        files = self.files(where, folder, bad, report)
        values = self.usable_values(bad)
        options: dict[str, Any] = {"labels": values["labels"]}
        layer = values["layer"]
        if layer is not None:
            options["layer"] = layer
            options["combine"] = values["combine"]
        rep = Representation(name, self.kind, **files, options=options)
        infos = {}
        for key, file in files.items():
            if file is not None and file.is_file():  # else reported above
                try:
                    infos[key] = inspect_features(file)
                except ValueError as error:
                    report(f"{where}.{key}", str(error))
        if len(infos) < 2:
            return [rep]
        layers = _file_layers(rep, where, infos["train"], infos["test"], "layer" in bad, report)
        return layers or [rep]

    @classmethod
    def read(cls, rep: Representation, inputs: TaskInputs, *, standardize: bool) -> ProbeData:
        """Arrays ``X`` and ``y`` of the pair of files; of a 3-D ``X`` the chosen layer, or
        several side by side."""
        X, y, X_test, y_test = inputs.feature_files(rep.train, rep.test)
        layer = rep.declared.layer
        if layer is not None:  # 3-D features, checked against the header before: one layer,
            chosen = layer if isinstance(layer, list) else [layer]  # or several side by side
            if X.ndim != 3 or X_test.ndim != 3 or max(chosen) >= min(X.shape[1], X_test.shape[1]):
                raise ValueError(
                    f"layer {max(chosen)} does not exist: X of {str(rep.train)!r} has shape "
                    f"{X.shape}, of {str(rep.test)!r} {X_test.shape} (examples, layers, features)"
                )
            X, X_test = (array[:, chosen].reshape(len(array), -1) for array in (X, X_test))
        data = ProbeData.from_arrays(
            X, y, X_test, y_test, name=rep.name, labels=rep.declared.labels, standardize=standardize
        )
        return replace(data, mix_layers=mix_layers(rep))


def _file_layers(
    rep: Representation,
    where: str,
    train: FeatureFileInfo,
    test: FeatureFileInfo,
    layer_refused: bool,
    report: Report,
) -> list[Representation] | None:
    """An ``npz`` entry's representations from its files' headers; None after a problem (or
    when its ``layer`` was refused, which is reported as such)."""
    if test.n_features != train.n_features:
        report(f"{where}.test", f"has {test.n_features} features but train has {train.n_features}")
        return None
    if test.n_layers != train.n_layers:
        report(f"{where}.test", f"has {_layer_axis(test)} but train has {_layer_axis(train)}")
        return None
    if test.sparse and not train.sparse:
        report(f"{where}.test", "holds a sparse matrix but train is dense: give both sparse")
        return None
    if layer_refused:
        return None
    shown = f"X of {str(train.path)!r}"
    layer = rep.declared.layer
    if train.n_layers is None:
        if layer is not None:
            report(f"{where}.layer", f"{shown} is 2-D (no layer axis): remove layer")
        return None
    if layer is None:
        report(
            f"{where}.layer",
            f"missing: {shown} has a layer axis ({train.n_layers} layers); choose one "
            'layer = <index>, a list of them, or "all"',
        )
        return None
    count = train.n_layers
    return layer_representations(rep, where, count, f"{shown} has {count} layers", report)


def _layer_axis(info: FeatureFileInfo) -> str:
    return "2-D X (no layer axis)" if info.n_layers is None else f"{info.n_layers} layers"
