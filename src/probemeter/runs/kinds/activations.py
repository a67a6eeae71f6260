"""Kind ``activations``: a model's activations saved by the user (``torch.save`` of a hook
name → tensor dict), one representation per hook."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter.data import LABEL_MODES, ProbeData
from probemeter.runs.kinds.base import (
    Report,
    Representation,
)
from probemeter.runs.kinds.files import FileKind
from probemeter.runs.tasks import TaskInputs

#: the layer index of a hook name matched by a ``hooks`` pattern
_HOOK_INDEX = r"(?P<i>\d+)"


def _hook_pattern(hooks: str) -> re.Pattern[str] | None:
    """``hooks`` with one ``{i}`` or ``*`` (the layer index) as a regular expression; None for
    a plain hook name."""
    for mark in ("{i}", "*"):
        if hooks.count(mark) == 1:
            before, after = hooks.split(mark)
            return re.compile(re.escape(before) + _HOOK_INDEX + re.escape(after))
    return None


def _hooks_check(value: Any) -> str | None:
    """``hooks``: a hook name, or a pattern with one ``{i}`` or one ``*`` for the layer."""
    if not isinstance(value, str) or not value:
        return f"must be a hook name or a pattern with one {{i}} or *; got {value!r}"
    if value.count("{i}") + value.count("*") > 1:
        return f"must hold one {{i}} or one * (the layer index), not several; got {value!r}"
    return None


def _load_activations(path: Path) -> tuple[dict[str, Any], np.ndarray | None]:
    """The hook name → tensor dict of a file written by ``torch.save`` (loaded memory-mapped,
    so headers cost no data), and its labels: the dict's ``"labels"`` or a
    ``<stem>.labels.npy`` beside the file (None when neither; both is refused as ambiguous).
    Only plain dicts of tensors load (``weights_only=True``): a pickled ``ActivationCache`` or
    any other object is refused, saying how to save it."""
    import pickle

    import torch

    how = "save a dict of tensors: torch.save(dict(cache.items()), path)"
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"{str(path)!r} cannot be read as a dict of tensors ({first}); {how}"
        ) from None
    if not isinstance(payload, dict):
        raise ValueError(f"{str(path)!r} holds a {type(payload).__name__}, not a dict; {how}")
    side = path.with_name(f"{path.stem}.labels.npy")
    labels = payload.pop("labels", None)
    if labels is not None and side.is_file():
        raise ValueError(
            f"{str(path)!r} holds labels and {str(side)!r} exists too: keep one of them"
        )
    if side.is_file():
        labels = np.load(side, allow_pickle=False)
    elif labels is not None:
        labels = labels.numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    odd = [str(key) for key, value in payload.items() if not isinstance(value, torch.Tensor)]
    if odd:
        raise ValueError(f"{str(path)!r}: {valid.listed(odd, 3)} not tensors; {how}")
    return payload, labels


@dataclass(frozen=True, kw_only=True)
class ActivationsKind(FileKind):
    train: str = option(
        check=valid.text(),
        help="activations of the pool: a torch.save'd dict of hook name → tensor (n, d) or "
        "(n, positions, d), as dict(cache.items()) of a TransformerLens ActivationCache or a "
        'dict of nnsight saved values gives, with its labels under "labels" or in '
        "<stem>.labels.npy beside it; relative to the experiment file",
    )
    test: str = option(check=valid.text(), help="activations of the test set, like train")
    hooks: str = option(
        check=valid.Check(_hooks_check),
        help='a hook name ("blocks.3.hook_resid_post"), or a pattern with one {i} or * for '
        'the layer ("blocks.{i}.hook_resid_post"): one representation per matching hook, a '
        "layer sweep NAME-<i> ordered by i",
    )
    position: int = option(
        -1,
        check=valid.integer(),
        help="the position of (n, positions, d) tensors probed (-1: the last); only for 3-D",
    )
    labels: str = option(
        "indices",
        check=valid.one_of(*LABEL_MODES),
        help='"indices" (class indices 0..K-1) or "encode" (strings, booleans, sparse '
        "integers mapped to 0..K-1)",
    )

    kind = "activations"
    summary = "activations saved from TransformerLens or nnsight, one per hook; no [task]"

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The files checked from their tensors' headers (memory-mapped; no data read): the
        hook(s) present in both, train and test of the same features (and positions), the
        position within them, labels one per row. A pattern gives one representation per
        matching hook, ``NAME-<i>`` ordered by ``i`` (a layer sweep named NAME, its ``layer``
        the hook's ``i``); a plain hook name one, named NAME. After a problem, the entry as one
        representation (the files are rejected anyway)."""
        files = self.files(where, folder, bad, report)
        values = self.usable_values(bad)
        options = {key: values[key] for key in _ACTIVATION_KEYS}
        rep = Representation(name, self.kind, **files, options=options)
        loaded = {}
        for key, file in files.items():
            if file is not None and file.is_file():  # else reported above
                try:
                    loaded[key] = _load_activations(file)
                except ValueError as error:
                    report(f"{where}.{key}", str(error))
        if len(loaded) < 2 or {"hooks", "position"} & bad:
            return [rep]
        matched = self._matched(where, loaded["train"][0], report)
        if matched is None or not self._agree(where, rep, loaded, matched, report):
            return [rep]
        if len(matched) == 1 and matched[0][0] is None:
            return [replace(rep, options={**options, "hook": matched[0][1]})]
        return [
            replace(
                rep,
                name=f"{name}-{index}",
                options={**options, "hook": hook, "layer": index},
                sweep=name,
            )
            for index, hook in matched
        ]

    def _matched(
        self, where: str, train: dict[str, Any], report: Report
    ) -> list[tuple[int | None, str]] | None:
        """``(layer, hook)`` of the hooks the entry names, by layer; None after a problem."""
        names = sorted(train)
        pattern = _hook_pattern(self.hooks)
        if pattern is None:
            if self.hooks in train:
                return [(None, self.hooks)]
            report(
                f"{where}.hooks", f"{self.hooks!r} is not in train; it holds {valid.listed(names)}"
            )
            return None
        found = sorted(
            (int(match["i"]), hook) for hook in names if (match := pattern.fullmatch(hook))
        )
        if not found:
            report(
                f"{where}.hooks",
                f"{self.hooks!r} matches no hook of train; it holds {valid.listed(names)}",
            )
            return None
        return found

    def _agree(
        self,
        where: str,
        rep: Representation,
        loaded: dict[str, tuple[dict[str, Any], np.ndarray | None]],
        matched: list[tuple[int | None, str]],
        report: Report,
    ) -> bool:
        """Each matched hook in test as in train but for the rows, 2-D or 3-D, its position
        there (3-D) or none asked (2-D); labels one per row of each file."""
        for key in ("train", "test"):
            tensors, labels = loaded[key]
            file = str(getattr(rep, key))
            if labels is None:
                report(
                    f"{where}.{key}",
                    f'{file!r} has no labels: save them under "labels" in the dict, or in '
                    f"{Path(file).stem}.labels.npy beside it",
                )
                return False
            shapes = [tensors[hook].shape for _, hook in matched if hook in tensors]
            rows = sorted({shape[0] for shape in shapes if len(shape) in (2, 3)})
            if rows and rows != [len(labels)]:
                shown = ", ".join(map(str, rows))
                report(f"{where}.{key}", f"{file!r} has {len(labels)} labels for {shown} rows")
                return False
        train, test = loaded["train"][0], loaded["test"][0]
        for _, hook in matched:
            if hook not in test:
                report(f"{where}.test", f"lacks hook {hook!r} of train")
                return False
            shape, shape_test = tuple(train[hook].shape), tuple(test[hook].shape)
            if len(shape) not in (2, 3) or shape[1:] != shape_test[1:]:
                report(
                    f"{where}.test",
                    f"hook {hook!r} has shape {shape_test} but train {shape}; give both "
                    "(n, d) or both (n, positions, d) with the same positions and d",
                )
                return False
            if len(shape) == 2 and self.position != -1:
                report(f"{where}.position", f"hook {hook!r} is 2-D (n, d): remove position")
                return False
            if len(shape) == 3 and not -shape[1] <= self.position < shape[1]:
                report(
                    f"{where}.position",
                    f"{self.position} does not exist: hook {hook!r} has {shape[1]} positions",
                )
                return False
        return True

    @classmethod
    def pool_rows(cls, rep: Representation) -> int | None:
        """Rows of the training file: its labels, one per row (checked when read)."""
        try:
            return len(_load_activations(rep.train)[1])
        except (ValueError, TypeError):  # reported when the entry was read
            return None

    @classmethod
    def read(cls, rep: Representation, inputs: TaskInputs, *, standardize: bool) -> ProbeData:
        """The hook's tensor of each file as float32 (of a 3-D one, the chosen position) and
        the file's labels."""
        arrays = []
        for path in (rep.train, rep.test):
            tensors, labels = _load_activations(path)
            tensor = tensors[rep.options["hook"]]
            if tensor.ndim == 3:
                tensor = tensor[:, rep.options["position"]]
            arrays += [tensor.float().numpy(), labels]
        return ProbeData.from_arrays(
            *arrays, name=rep.name, labels=rep.options["labels"], standardize=standardize
        )


#: the ``activations`` entry's own options kept in its records (hence in unit keys)
_ACTIVATION_KEYS = ("hooks", "position", "labels")
