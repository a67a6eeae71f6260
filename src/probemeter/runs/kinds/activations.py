"""Kind ``activations``: a model's activations saved by the user, one representation per hook.

Each of ``train`` and ``test`` is read as an *activation store* (:class:`_Store`): hook names →
the shape of each saved array (from headers only) and a reader of its data, with the labels of
each hook. Three sources provide one: a ``torch.save``'d dict of hook name → tensor (loaded
memory-mapped), a ``.safetensors`` file of hook-named tensors (``safe_open``, read lazily), and
a folder (or a pattern of files in a folder) of one file per hook, ``<hook name>.safetensors``,
``.npy`` (memory-mapped), ``.npz`` or ``.parquet``. The checks and the reader below see only
stores, so they are written once for every source."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter._method import Method
from probemeter.data import LABEL_MODES, ProbeData
from probemeter.feature_files import _header as npy_header
from probemeter.feature_files import _open_parquet as open_parquet
from probemeter.feature_files import _with_safetensors as with_safetensors
from probemeter.runs.kinds.base import (
    Report,
    Representation,
)
from probemeter.runs.kinds.files import FileKind
from probemeter.runs.tasks import TaskInputs

#: the layer index of a hook name matched by a ``hooks`` pattern
_HOOK_INDEX = r"(?P<i>\d+)"
#: the formats of one hook's file in a folder
_HOOK_SUFFIXES = (".safetensors", ".npy", ".npz", ".parquet")
#: the labels of a folder's hooks
_FOLDER_LABELS = "labels.npy"
#: how to save a TransformerLens cache as a file read here
_HOW = "save a dict of tensors: torch.save(dict(cache.items()), path)"
#: ``attention_mask`` of (n, positions, d) activations whose every position is a real token
UNPADDED = "unpadded"


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


# ---- activation stores ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Array:
    """One saved array: its shape, from the header, and a reader of its data, called only when
    the data are wanted: ``read(None)`` all of it, ``read(p)`` position ``p`` of an
    (n, positions, d) array (a tensor or a numpy array, as stored)."""

    shape: tuple[int, ...]
    read: Callable[[int | None], Any]


@dataclass(frozen=True)
class _Store:
    """The activations of one ``train`` or ``test``: each hook's array, the labels of each
    hook that has them (one array shared by every hook, or each hook file's own), and where
    the user would put labels (for the problem of hooks without them)."""

    hooks: dict[str, _Array]
    labels: dict[str, _Array]
    put_labels: str


def _open(path: Path) -> _Store:
    """The activation store at ``path``: a folder, or a pattern of files in one (``*``, ``?``
    or ``[`` in the last part), of one file per hook; a ``.safetensors`` file of hook-named
    tensors; otherwise a ``torch.save``'d dict. Labels saved with the activations (under
    ``"labels"``) or beside them (``<stem>.labels.npy``; ``labels.npy`` in a folder), not
    both. Headers only: no data are read. Any problem is a ValueError naming the path."""
    if path.is_dir() or (_is_pattern(path.name) and not path.is_file()):
        return _folder(path)
    if not path.is_file():
        raise ValueError(f"file or folder {str(path)!r} does not exist")
    if path.suffix == ".safetensors":
        arrays, inside = _safetensors(path), 'as a "labels" tensor in the file'
    else:
        arrays, inside = _torch_dict(path), 'under "labels" in the dict'
    side = path.with_name(f"{path.stem}.labels.npy")
    labels = _labels_once(path, arrays.pop("labels", None), side)
    put = f"save them {inside}, or in {side.name} beside it"
    return _Store(arrays, {} if labels is None else dict.fromkeys(arrays, labels), put)


def _is_pattern(name: str) -> bool:
    return any(mark in name for mark in "*?[")


def _folder(path: Path) -> _Store:
    """The store of a folder (or of the files of a folder a pattern matches): one file per
    hook, ``<hook name>`` and a suffix of :data:`_HOOK_SUFFIXES` (:func:`_hook_file`), its
    labels in the file or in the folder's ``labels.npy``."""
    folder, pattern = (path, "*") if path.is_dir() else (path.parent, path.name)
    if not folder.is_dir():  # patterns are of file names only: acts/*/*.npy lands here
        raise ValueError(f"folder {str(folder)!r} does not exist")
    files = sorted(file for file in folder.glob(pattern) if file.is_file())
    by_hook: dict[str, list[Path]] = {}
    for file in files:
        if file.name != _FOLDER_LABELS and file.suffix in _HOOK_SUFFIXES:
            by_hook.setdefault(file.name.removesuffix(file.suffix), []).append(file)
    if not by_hook:
        verb = "holds" if pattern == "*" else "matches"
        names = [file.name for file in files]
        raise ValueError(
            f"{str(path)!r} {verb} no activation files (one per hook: <hook name>.safetensors, "
            f".npy, .npz or .parquet); it {verb} {valid.listed(names) if names else 'no files'}"
        )
    for hook, twins in sorted(by_hook.items()):
        if len(twins) > 1:
            shown = " and ".join(file.name for file in twins)
            raise ValueError(f"{str(folder)!r} holds hook {hook!r} twice, {shown}: keep one")
    side = folder / _FOLDER_LABELS
    hooks, labels = {}, {}
    for hook, (file,) in sorted(by_hook.items()):
        hooks[hook], inside = _hook_file(file, hook)
        held = _labels_once(file, inside, side)
        if held is not None:
            labels[hook] = held
    put = (
        f'put {_FOLDER_LABELS} in {str(folder)!r}, or save them with each hook ("labels" in '
        'its .safetensors or .npz file, a column "label" of its .parquet table)'
    )
    return _Store(hooks, labels, put)


def _labels_once(path: Path, inside: _Array | None, side: Path) -> _Array | None:
    """The labels saved in ``path`` (``inside``) or in the file ``side``; None when neither,
    and both refused as ambiguous."""
    if not side.is_file():
        return inside
    if inside is not None:
        raise ValueError(
            f"{str(path)!r} holds labels and {str(side)!r} exists too: keep one of them"
        )
    return _npy(side)


def _hook_file(path: Path, hook: str) -> tuple[_Array, _Array | None]:
    """One hook's array and the labels saved with it (None when none): a ``.npy`` array; a
    ``.parquet`` table (:func:`_parquet`); of a ``.safetensors`` or ``.npz`` file, beside
    ``"labels"``, its one array, or of several the one named after the hook or ``"X"``."""
    if path.suffix == ".npy":
        return _npy(path), None
    if path.suffix == ".parquet":
        return _parquet(path)
    arrays = _safetensors(path) if path.suffix == ".safetensors" else _npz(path)
    labels = arrays.pop("labels", None)
    if len(arrays) == 1:
        return next(iter(arrays.values())), labels
    for name in (hook, "X"):
        if name in arrays:
            return arrays[name], labels
    held = valid.listed(sorted(arrays)) if arrays else "no array"
    raise ValueError(
        f'{str(path)!r} holds {held}: save one array (and "labels"), or name it {hook!r}'
    )


def _held(value: Any) -> _Array:
    """An array already at hand (a memory-mapped tensor or array, or labels loaded whole)."""
    return _Array(tuple(value.shape), partial(_at, value))


def _at(value: Any, position: int | None) -> Any:
    return value if position is None else value[:, position]


def _torch_dict(path: Path) -> dict[str, _Array]:
    """The arrays of a dict written by ``torch.save``, loaded memory-mapped (no data read):
    tensors, and ``"labels"`` as a tensor or anything ``np.asarray`` takes. Only plain dicts
    load (``weights_only=True``): a pickled ``ActivationCache`` or any other object is
    refused, saying how to save it."""
    import pickle

    import torch

    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"{str(path)!r} cannot be read as a dict of tensors ({first}); {_HOW}"
        ) from None
    if not isinstance(payload, dict):
        raise ValueError(f"{str(path)!r} holds a {type(payload).__name__}, not a dict; {_HOW}")
    odd = [
        str(key)
        for key, value in payload.items()
        if key != "labels" and not isinstance(value, torch.Tensor)
    ]
    if odd:
        raise ValueError(f"{str(path)!r}: {valid.listed(odd, 3)} not tensors; {_HOW}")
    return {
        key: _held(value if isinstance(value, torch.Tensor) else np.asarray(value))
        for key, value in payload.items()
    }


def _safetensors(path: Path) -> dict[str, _Array]:
    """The tensors of a ``.safetensors`` file, from its header; each read when wanted."""

    def unreadable(error: BaseException) -> ValueError:
        return ValueError(f"{str(path)!r} cannot be read as safetensors ({error})")

    shapes = with_safetensors(
        path,
        lambda stored: {key: tuple(stored.get_slice(key).get_shape()) for key in stored.keys()},
        unreadable,
    )
    return {
        key: _Array(shape, partial(_safetensors_read, path, key)) for key, shape in shapes.items()
    }


def _safetensors_read(path: Path, key: str, position: int | None) -> Any:
    """Tensor ``key`` of a ``.safetensors`` file, of a 3-D one only ``position`` (a slice of
    the memory-mapped file, not the whole tensor)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as stored:
        return stored.get_tensor(key) if position is None else stored.get_slice(key)[:, position]


def _npy(path: Path) -> _Array:
    """A ``.npy`` array, memory-mapped (arrays of Python objects refused: no pickle)."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (EOFError, ValueError, OSError) as error:
        raise ValueError(f"{str(path)!r} cannot be read as a .npy array ({error})") from None
    return _held(array)


def _npz(path: Path) -> dict[str, _Array]:
    """The arrays of an ``.npz`` archive, from the headers of its members; each read (whole:
    compressed members cannot be memory-mapped) when wanted."""
    import zipfile

    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                name = member.removesuffix(".npy")
                with archive.open(member) as stream:
                    shape, _ = npy_header(stream)
                arrays[name] = _Array(tuple(shape), partial(_npz_read, path, name))
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as error:
        raise ValueError(f"{str(path)!r} is not a readable .npz archive ({error})") from None
    return arrays


def _npz_read(path: Path, name: str, position: int | None) -> np.ndarray:
    with np.load(path, allow_pickle=False) as archive:
        return _at(archive[name], position)


def _parquet(path: Path) -> tuple[_Array, _Array | None]:
    """A table of one numeric column per feature (integers or floats), and the labels in a
    column ``"label"`` when there is one, from its schema and metadata."""

    def unreadable(error: BaseException) -> ValueError:
        return ValueError(f"{str(path)!r} cannot be read as a Parquet table ({error})")

    pa, stored, schema = open_parquet(path, unreadable)
    rows = stored.metadata.num_rows
    features = [field for field in schema if field.name != "label"]
    odd = [
        f"{field.name} ({field.type})"
        for field in features
        if not (pa.types.is_integer(field.type) or pa.types.is_floating(field.type))
    ]
    if odd or not features:
        problem = f"non-numeric columns {valid.listed(odd, 3)}" if odd else "no feature column"
        raise ValueError(
            f'{str(path)!r} has {problem}: every column but "label" is a feature, one '
            "numeric column each"
        )
    names = [field.name for field in features]
    X = _Array((rows, len(names)), partial(_parquet_features, path, names))
    if "label" not in schema.names:
        return X, None
    return X, _Array((rows,), partial(_parquet_labels, path))


def _parquet_features(path: Path, names: list[str], position: int | None) -> np.ndarray:
    """The feature columns, each cast to float32 on its own (never through float64, whose
    second rounding could change an integer's float32); ``position`` is None (a table is
    2-D)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=names, memory_map=True)
    return np.column_stack([table[name].to_numpy().astype(np.float32) for name in names])


def _parquet_labels(path: Path, position: int | None) -> np.ndarray:
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["label"], memory_map=True)["label"].to_numpy()


def _float32(value: Any) -> np.ndarray:
    """Features as float32: a tensor as ``Tensor.float`` widens or rounds it (bfloat16 too),
    an array as numpy casts it (the same rounding)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.float().numpy()
    return np.asarray(value, dtype=np.float32)


def _labels(value: Any) -> np.ndarray:
    import torch

    return value.numpy() if isinstance(value, torch.Tensor) else np.array(value)


# ---- the kind -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ActivationsKind(FileKind):
    train: str = option(
        check=valid.text(),
        help="activations of the pool, relative to the experiment file: a torch.save'd dict "
        "of hook name → tensor (n, d) or (n, positions, d), as dict(cache.items()) of a "
        "TransformerLens ActivationCache or a dict of nnsight saved values gives; a "
        ".safetensors file of such tensors; or a folder (or a pattern of files in one, "
        '"acts/train/*.safetensors") of one file per hook, <hook name>.safetensors, .npy, '
        '.npz or .parquet (numeric columns). Labels under "labels" in the file, in '
        "<stem>.labels.npy beside it or labels.npy in the folder, or a .parquet column "
        '"label"',
    )
    test: str = option(check=valid.text(), help="activations of the test set, like train")
    hooks: str = option(
        check=valid.Check(_hooks_check),
        help='a hook name ("blocks.3.hook_resid_post"), or a pattern with one {i} or * for '
        'the layer ("blocks.{i}.hook_resid_post"): one representation per matching hook '
        "(tensor name, or file name less its suffix in a folder), a layer sweep NAME-<i> "
        "ordered by i",
    )
    position: int = option(
        -1,
        check=valid.integer(),
        help="the position of (n, positions, d) tensors probed (-1: the last); only for 3-D; "
        "with an attention_mask, counted in each row's real tokens (-1: its last real token)",
    )
    attention_mask: str | None = option(
        None,
        check=valid.text(),
        help="required for (n, positions, d) tensors, whose rows are padded to one length: the "
        "name of an array saved with them (a key of the dict or .safetensors file, a file "
        "<name>.npy, .safetensors, ... in a folder) holding the attention mask (n, positions): "
        "1 a real token, 0 padding, on either side, or each row's token count (n,) of rows "
        f'padded on the right; "{UNPADDED}": every row fills every position',
        key_omits=UNPADDED,  # every position real: the features of a store read unmasked
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
        """The stores of ``train`` and ``test`` checked from their headers (no data read):
        the hook(s) present in both, train and test of the same features (and positions),
        the position within them, labels one per row. A pattern gives one representation
        per matching hook, ``NAME-<i>`` ordered by ``i`` (a layer sweep named NAME, its
        ``layer`` the hook's ``i``); a plain hook name one, named NAME. After a problem, the
        entry as one representation (the files are rejected anyway)."""
        paths = {
            key: None if key in bad else (folder / getattr(self, key)).resolve()
            for key in ("train", "test")
        }
        values = self.usable_values(bad)
        options = {key: values[key] for key in _ACTIVATION_KEYS}
        if options["attention_mask"] is None:  # 2-D: no mask, none in its record or key
            del options["attention_mask"]
        rep = Representation(name, self.kind, **paths, options=options)
        stores = {}
        for key, path in paths.items():
            if path is not None:
                try:
                    stores[key] = _open(path)
                except ValueError as error:
                    report(f"{where}.{key}", str(error))
        if len(stores) < 2 or {"hooks", "position", "attention_mask"} & bad:
            return [rep]
        masks = self._masks(where, rep, stores, report)
        if masks is None:
            return [rep]
        matched = self._matched(where, stores["train"].hooks, report)
        if matched is None or not self._agree(where, rep, stores, matched, report):
            return [rep]
        if not self._padding_agrees(where, stores, masks, matched, report):
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

    def _masks(
        self, where: str, rep: Representation, stores: dict[str, _Store], report: Report
    ) -> dict[str, _Array] | None:
        """The ``attention_mask`` array of each store, taken out of its hooks (empty where
        none is named or the rows are unpadded); None after a problem."""
        name = self.attention_mask
        if name is None or name == UNPADDED:
            return {}
        masks = {}
        for key, store in stores.items():
            if name not in store.hooks:
                held = valid.listed(sorted(store.hooks))
                shown = repr(str(getattr(rep, key)))
                report(f"{where}.attention_mask", f"{name!r} is not in {shown}; it holds {held}")
                return None
            masks[key] = store.hooks.pop(name)
            store.labels.pop(name, None)
        return masks

    def _padding_agrees(
        self,
        where: str,
        stores: dict[str, _Store],
        masks: dict[str, _Array],
        matched: list[tuple[int | None, str]],
        report: Report,
    ) -> bool:
        """An ``attention_mask`` for 3-D hooks only, and always for them, of the rows (and
        positions) of each store's hooks."""
        for _, hook in matched:
            shape = stores["train"].hooks[hook].shape
            if len(shape) == 2 and self.attention_mask is not None:
                report(
                    f"{where}.attention_mask",
                    f"hook {hook!r} is 2-D (n, d): no positions to mask; remove attention_mask",
                )
                return False
            if len(shape) == 3 and self.attention_mask is None:
                report(
                    f"{where}.attention_mask",
                    f"hook {hook!r} is (n, positions, d): rows padded to one length would read "
                    "padding at a position, silently; save the attention mask (n, positions) "
                    "or each row's token count (n,) with the activations and name it here, or "
                    f'write "{UNPADDED}" where every row fills every position',
                )
                return False
            for key, mask in masks.items():
                rows, positions = stores[key].hooks[hook].shape[:2]
                if mask.shape not in ((rows,), (rows, positions)):
                    report(
                        f"{where}.attention_mask",
                        f"{self.attention_mask!r} of {key} has shape {mask.shape}; hook "
                        f"{hook!r} needs ({rows}, {positions}), a mask, or ({rows},), token "
                        "counts",
                    )
                    return False
        return True

    def _matched(
        self, where: str, train: dict[str, _Array], report: Report
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
        stores: dict[str, _Store],
        matched: list[tuple[int | None, str]],
        report: Report,
    ) -> bool:
        """Each matched hook in test as in train but for the rows, 2-D or 3-D, its position
        there (3-D) or none asked (2-D); labels, one per row, for each hook of each store."""
        for key in ("train", "test"):
            store, shown = stores[key], repr(str(getattr(rep, key)))
            hooks = [hook for _, hook in matched if hook in store.hooks]
            if any(hook not in store.labels for hook in hooks):
                report(f"{where}.{key}", f"{shown} has no labels: {store.put_labels}")
                return False
            for hook in hooks:
                shape, labels = store.hooks[hook].shape, store.labels[hook].shape
                if len(shape) in (2, 3) and labels != shape[:1]:
                    report(
                        f"{where}.{key}",
                        f"{shown} has labels of shape {labels} for hook {hook!r} of {shape[0]} "
                        "rows: give one label per row",
                    )
                    return False
        train, test = stores["train"].hooks, stores["test"].hooks
        missing = [repr(hook) for _, hook in matched if hook not in test]
        if missing:
            hooks = "hook" if len(missing) == 1 else "hooks"
            report(f"{where}.test", f"lacks {hooks} {valid.listed(missing)} of train")
            return False
        for _, hook in matched:
            shape, shape_test = train[hook].shape, test[hook].shape
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
        """Rows of the hook's training array: its labels, one per row (from the header)."""
        hook = rep.options.get("hook")
        try:
            labels = _open(rep.train).labels.get(hook)
        except (ValueError, TypeError):  # reported when the entry was read
            return None
        return None if labels is None else labels.shape[0]

    @classmethod
    def sparse_problems(
        cls, rep: Representation, method: Method, keeping: str | None
    ) -> list[tuple[str, str]]:
        """None: saved activations are dense."""
        return []

    @classmethod
    def read(cls, rep: Representation, inputs: TaskInputs, *, standardize: bool) -> ProbeData:
        """The hook's array of each store as float32 (of a 3-D one, only the chosen position
        is read: with an attention mask, each row's own, :func:`_real_position`) and its
        labels."""
        declared = rep.declared
        hook, position = rep.options["hook"], declared.position
        masked = declared.attention_mask not in (None, UNPADDED)
        arrays = []
        for path in (rep.train, rep.test):
            store = _open(path)
            array = store.hooks[hook]
            if len(array.shape) == 2:
                features = _float32(array.read(None))
            elif masked:
                mask = _labels(store.hooks[declared.attention_mask].read(None))
                at = _real_position(mask, array.shape[1], position, str(path))
                features = np.empty((array.shape[0], array.shape[2]), dtype=np.float32)
                for index in np.unique(at):  # each position read once, as a slice
                    rows = at == index
                    features[rows] = _float32(array.read(int(index)))[rows]
            else:
                features = _float32(array.read(position))
            arrays += [features, _labels(store.labels[hook].read(None))]
        return ProbeData.from_arrays(
            *arrays, name=rep.name, labels=declared.labels, standardize=standardize
        )


def _real_position(mask: np.ndarray, positions: int, position: int, where: str) -> np.ndarray:
    """Each row's index of its ``position``-th real token (negative: counted back from its
    last real token), from an attention mask (n, positions) of 0/1, padding on either side,
    or token counts (n,) of rows padded on the right.

    Raises:
        ValueError: a mask of other values, counts outside 1..positions, rows with too few
            real tokens (how many, the first), each naming ``where``.
    """
    if mask.ndim == 1:
        if not np.issubdtype(mask.dtype, np.integer) or mask.min() < 1 or mask.max() > positions:
            raise ValueError(
                f"{where}: attention_mask of token counts must be integers in 1..{positions}"
            )
        real = np.arange(positions)[None, :] < mask[:, None]
    else:
        if not np.isin(mask, (0, 1)).all():
            raise ValueError(f"{where}: attention_mask must hold 0 (padding) and 1 (real tokens)")
        real = mask.astype(bool)
    counts = real.sum(axis=1)
    need = position + 1 if position >= 0 else -position
    short = np.flatnonzero(counts < need)
    if len(short):
        raise ValueError(
            f"{where}: {len(short)} rows have fewer than {need} real tokens for position "
            f"{position} (the first: row {short[0]}, {counts[short[0]]} tokens)"
        )
    rank = np.full(len(real), position) if position >= 0 else counts + position
    # the real token whose rank among its row's real tokens is ``rank`` (from 0)
    return np.argmax(real & (np.cumsum(real, axis=1) == (rank + 1)[:, None]), axis=1)


#: the ``activations`` entry's own options kept in its records (hence in unit keys)
_ACTIVATION_KEYS = ("hooks", "position", "labels", "attention_mask")
