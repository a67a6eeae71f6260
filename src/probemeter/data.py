"""Probing data: frozen features with integer labels, validated once, up front.

A :class:`ProbeData` holds a training *pool* (from which every probe draws its subset) and a
held-out *test* set on which every probe is evaluated. Features are standardised to zero mean and
unit variance with statistics of the training pool only (Whitney et al., App. C.1).

Labels are one class per example, or (``labels="indicator"``) a *set* of labels per example,
a 0/1 indicator matrix (n, K): multi-label targets such as edge-probing targets with several
labels (Tenney et al. 2019), whose probes have K sigmoid outputs and whose code is a sum of K
Bernoulli codes (:mod:`probemeter._multilabel`).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from probemeter._arrays import as_numpy
from probemeter._io import (
    classes_from_json,
    classes_to_json,
    read_json,
    save_npy_atomic,
    write_bytes_atomic,
    write_text_atomic,
)
from probemeter._resident import scan_blocks
from probemeter._sparse import as_csr, is_sparse, scale_columns
from probemeter._validation import check_scalar, integer_list, is_integer, listed, one_of, text

__all__ = [
    "ATTENTION",
    "INDICATOR",
    "LABEL_MODES",
    "LEARNED_POOLINGS",
    "ProbeData",
    "RowSplit",
    "ShiftedSet",
    "check_attention_spans",
    "check_probe_data",
    "check_single_label",
    "layer_data",
    "nested_subset",
    "pool_moments",
    "seed_ids",
    "subset_permutation",
]


#: how ``from_arrays`` reads labels: class indices 0..K−1 as given, or any labels encoded
LABEL_MODES = ("indices", "encode")
#: ``from_arrays(labels=INDICATOR)``: label sets as a 0/1 indicator matrix (n, K) (multi-label
#: targets; arrays only: feature files and experiment files hold one label per row)
INDICATOR = "indicator"
#: softmax attention over a span's tokens (Lee et al. 2017), the default span pooling
ATTENTION = "attention"
#: how probes pool the tokens of span rows (``ProbeData.span_pooling``,
#: :mod:`probemeter.probes.span_attention`): softmax attention, or each projected coordinate's
#: maximum
LEARNED_POOLINGS = (ATTENTION, "max")
#: what :meth:`ProbeData.save` writes: one .npy file per array, then the JSON description
_ARRAYS = (
    "X_train",
    "y_train",
    "X_test",
    "y_test",
    "groups_train",
    "groups_test",
    "sentences_train",
    "sentences_test",
    "clusters_train",
    "clusters_test",
    "pool_mean",
    "pool_std",
)
_META = "probe_data.json"
_SCHEMA = "probemeter.probe_data/1"


_SHAPES = {2: "(n_examples, n_features)", 3: "(n_examples, n_layers, n_features)"}


def _as_features(name: str, array: object, ndim: int = 2) -> np.ndarray:
    """Finite real features of ``ndim`` dimensions (3: with a layer axis) as float32."""
    features = as_numpy(array, name, example_ndim=ndim - 1)
    if features.ndim == 3 and ndim == 2:
        raise ValueError(
            f"{name} has shape {features.shape}, with a layer axis {_SHAPES[3]}: build one "
            "ProbeData per layer, all with the same split, with probemeter.layer_data(X, y, ...); "
            'in an experiment file give the npz representation layer = <int>, a list or "all"'
        )
    if features.ndim != ndim:
        raise ValueError(
            f"{name} must be a {ndim}-D array of shape {_SHAPES[ndim]}; got shape {features.shape}"
        )
    if 0 in features.shape:
        raise ValueError(f"{name} is empty (shape {features.shape})")
    if not np.issubdtype(features.dtype, np.number) or np.issubdtype(
        features.dtype, np.complexfloating
    ):
        raise ValueError(f"{name} must hold real numbers; got dtype {features.dtype}")
    features = features.astype(np.float32, copy=False)
    finite = np.isfinite(features)
    if not finite.all():
        bad_rows = np.flatnonzero(~finite.reshape(len(features), -1).all(axis=1))
        raise ValueError(
            f"{name} contains NaN or inf in {bad_rows.size} row(s), first at row {bad_rows[0]}"
        )
    return features


def _as_labels(
    name: str, array: object, n_rows: int, features_name: str, encode: bool = False
) -> np.ndarray:
    """Integer class indices (or, with ``encode``, the raw labels, checked for shape only)."""
    labels = as_numpy(array, name, example_ndim=0)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of class indices; got shape {labels.shape}")
    if labels.shape[0] != n_rows:
        raise ValueError(
            f"{name} has {labels.shape[0]} labels but {features_name} has {n_rows} rows"
        )
    if encode:
        return labels
    hint = "; pass labels='encode' to map any labels (strings, booleans, ...) to 0..K-1"
    if np.issubdtype(labels.dtype, np.floating):
        if not np.isfinite(labels).all() or not np.all(labels == np.round(labels)):
            raise ValueError(
                f"{name} must hold integer class indices; got non-integer values" + hint
            )
    elif not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name} must hold integer class indices; got dtype {labels.dtype}" + hint)
    labels = labels.astype(np.int64)
    if labels.min() < 0:
        raise ValueError(f"{name} must be non-negative class indices; found {labels.min()}")
    return labels


@dataclass(frozen=True)
class ShiftedSet:
    """A further test set of a :class:`ProbeData`: examples drawn from another distribution
    than the pool's (a shifted test set; Goldowsky-Dill et al. 2025), labelled with the pool's
    classes and standardised with the pool's statistics, on which the probes trained on the
    pool are evaluated beside the in-distribution test set.

    Attributes:
        name: the set's name (a key of a texts task's ``shifted``, or a split value).
        X: (n, d) float32 features (scipy CSR where the data's are sparse).
        y: (n,) int64 class indices of the pool's classes.

    References:
        Goldowsky-Dill, N., Chughtai, B., Heimersheim, S. & Hobbhahn, M. (2025). Detecting
        Strategic Deception Using Linear Probes. arXiv:2502.03407
    """

    name: str
    X: Any = field(repr=False)
    y: np.ndarray = field(repr=False)


@dataclass(frozen=True, eq=False)
class ProbeData:
    """Features and labels for probing: a training pool and a test set.

    Build it with :meth:`from_arrays` (which validates and, by default, standardises); the
    constructor itself trusts its inputs.

    Attributes:
        X_train: (n_pool, d) float32 training pool: a numpy array, or a scipy.sparse CSR
            matrix for sparse features (:attr:`is_sparse`; ``X_test`` is then one too).
        y_train: (n_pool,) int64 class indices; or, for multi-label targets
            (:attr:`multilabel`), an (n_pool, K) uint8 0/1 indicator matrix of label sets.
        X_test: (n_test, d) float32 test features.
        y_test: (n_test,) int64 class indices (or (n_test, K) label sets).
        n_classes: K, the size of the label alphabet (uniform code costs log K per label; for
            label sets, K·log 2, one fair coin per label).
        name: a label for tables and plots.
        groups_train, groups_test: optional integer group ids (word types, sentences), used by
            control tasks and grouped splits.
        classes: with ``labels="encode"``, the original label of each class index; else None.
        mix_layers: when the features are several model layers side by side, of equal width,
            for probes to mix with a learned scalar mix (``combine = "scalar-mix"``; Peters et
            al. 2018, Tenney et al. 2019): the layer indices, in feature order; else None.
        span_tokens: when the rows are edge-probing spans laid out for self-attentive pooling
            (:class:`~probemeter.datasets.edge_probing.SpanLayout`: each span's token count,
            then its token vectors zero-padded), each span's padded token count; probes pool
            them with learned attention (:func:`~probemeter.probes.probe_for`); else None.
        span_pooling, span_projection: with ``span_tokens``, how probes pool the spans
            (``"attention"`` or ``"max"``, :data:`LEARNED_POOLINGS`)
            and the width q they project tokens to first, where the data decide them (a texts
            task's ``pooling = "attention"`` or ``"max"`` over each text's tokens,
            :func:`~probemeter.datasets.texts.token_spans`); None: attention at
            :func:`~probemeter.probes.probe_for`'s width (edge probing).
        sentences_train, sentences_test: for head selection (unlabelled dependency parsing,
            :func:`~probemeter.datasets.arcs.head_probe_data`), each row's sentence id, each
            sentence's rows contiguous and in word order; the labels are then head positions
            within the sentence (0 = the ROOT slot), not classes shared by all rows; else None.
        group_names: when the groups are tags (head-selection data for structural probes), the
            tag of each group id; else None.
        clusters_train, clusters_test: the unit each row was sampled in, as an integer id per
            row — the sentence of a word — when rows are not independent draws; else None.
        direction: for a direction twin (an experiment file's ``directions``), the direction
            family its probes are (:func:`~probemeter.probes.probe_for` returns that
            :class:`~probemeter.probes.Direction` whatever the method's probe); else None.
            Development splits hold out whole clusters, and paired tests between
            representations run at the cluster level
            (:attr:`probemeter._summary.SeedCorrectness.clusters`).
        shifted: further test sets (a texts task's ``shifted`` files and ``shifted_splits``:
            text unlike the pool's), each a :class:`ShiftedSet` standardised with the pool's
            statistics as ``X_test`` is; every probe is trained once and evaluated on the test
            set and on each of them. Empty by default.
        pool_mean, pool_std: the pool's mean μ and standard deviation σ (float64 (d,),
            :func:`pool_moments`) the dense features were standardised with, ``(x − μ)/σ``;
            kept so that a linear probe can be written back in the features' own space
            (:class:`~probemeter.probes.direction.ProbeDirection`); None where the features were
            not standardised here (sparse, ``standardize=False``, built otherwise).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    name: str = "representation"
    groups_train: np.ndarray | None = field(default=None, repr=False)
    groups_test: np.ndarray | None = field(default=None, repr=False)
    classes: tuple[Any, ...] | None = field(default=None, repr=False)
    mix_layers: tuple[int, ...] | None = field(default=None, repr=False)
    span_tokens: tuple[int, ...] | None = field(default=None, repr=False)
    span_pooling: str | None = field(default=None, repr=False)
    span_projection: int | None = field(default=None, repr=False)
    sentences_train: np.ndarray | None = field(default=None, repr=False)
    sentences_test: np.ndarray | None = field(default=None, repr=False)
    clusters_train: np.ndarray | None = field(default=None, repr=False)
    clusters_test: np.ndarray | None = field(default=None, repr=False)
    group_names: tuple[str, ...] | None = field(default=None, repr=False)
    direction: str | None = field(default=None, repr=False)
    shifted: tuple[ShiftedSet, ...] = field(default=(), repr=False)
    pool_mean: np.ndarray | None = field(default=None, repr=False)
    pool_std: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def from_arrays(
        cls,
        X: object,
        y: object,
        X_test: object | None = None,
        y_test: object | None = None,
        *,
        test_size: float | int = 0.2,
        standardize: bool = True,
        n_classes: int | None = None,
        name: str = "representation",
        groups: object | None = None,
        groups_test: object | None = None,
        random_state: int = 0,
        labels: str = "indices",
        copy: bool = True,
    ) -> ProbeData:
        """Validate arrays and build a :class:`ProbeData`.

        Give either a training pool and a test set (``X, y, X_test, y_test``), or one set
        (``X, y``) that is *shuffled* and then split, ``test_size`` (a fraction in (0, 1) or a
        count) going to the test set.

        Features and labels may be numpy arrays, nested lists, pandas DataFrames and Series
        (a ``Categorical`` label column too), Hugging Face ``datasets`` columns
        (``ds["features"]``, in any format), pyarrow arrays or torch tensors (detached and
        copied to the CPU, whatever their dtype, device or ``requires_grad``). A list or tuple
        of 1-D arrays or tensors is one row each; a list of 2-D ones is blocks of rows,
        concatenated (what is collected batch by batch); labels likewise, as single values or
        1-D blocks. Features are kept as float32, whatever their dtype (bfloat16 is widened
        exactly): to train in bfloat16, ask the training for it (``precision="bf16"``), not
        the features. Features with a layer axis (3-D) go to :func:`layer_data`.

        **Sparse features** — a scipy.sparse matrix or array (any format) or a torch sparse
        (COO or CSR) tensor for ``X``, e.g. sparse-autoencoder latents — are kept as float32
        CSR matrices and never made dense (``X_test`` may be dense or sparse; it becomes CSR
        too): the engine gathers minibatches as sparse rows and computes the first layer as
        sparse-dense products (:mod:`probemeter.probes.sparse_inputs`). Standardisation then
        only *scales* each feature by its pool standard deviation, without centring
        (subtracting the mean would fill every zero); zero stays zero. Loss-data curves and
        online codes take sparse data; other methods refuse it (:func:`check_probe_data`).

        ``labels="indices"`` (default) takes ``y`` as class indices 0..K−1; indices that skip
        classes (1-based labels, or {0, 1000}) are refused: they would add classes no example
        has, and every codelength counts log K. ``labels="encode"`` maps any labels — strings,
        booleans, categories, sparse integers — to 0..K−1 in sorted order over pool and test set,
        keeping the original label of each index in :attr:`classes`. ``labels="indicator"``
        takes ``y`` as label sets, a 0/1 matrix (n, K) (multi-label targets; each of the K
        labels must occur in the pool or the test set): probes then have K sigmoid outputs
        trained with binary cross-entropy per label (Tenney et al. 2019), and only the methods
        that train them in the engine take such data (loss-data curves, the online code).

        ``copy=False`` (scikit-learn's convention) lets standardisation overwrite float32
        C-ordered ``X`` and ``X_test`` in place instead of writing new arrays (the caller must
        not use them afterwards): a loader that has just built them then needs no second copy.

        Examples:
            >>> import numpy as np
            >>> from probemeter import ProbeData
            >>> X = np.random.default_rng(0).normal(size=(100, 5))
            >>> y = np.where(X[:, 0] > 0, "yes", "no")
            >>> data = ProbeData.from_arrays(X, y, test_size=0.25, labels="encode")
            >>> data.pool_size, len(data.y_test), data.n_features, data.n_classes
            (75, 25, 5, 2)
            >>> data.classes
            ('no', 'yes')
            >>> data.X_train.dtype, bool(np.abs(data.X_train.mean(axis=0)).max() < 1e-6)
            (dtype('float32'), True)

        Raises:
            ValueError: non-2-D (3-D: naming :func:`layer_data`) or empty features, lists
                that mix rows with blocks or have ragged widths, NaN/inf, length mismatches,
                non-integer, negative or gapped labels (with ``labels="indices"``), fewer than
                two classes, a bad ``test_size``, ``n_classes``, ``labels`` or ``random_state``
                (a non-negative integer); with ``labels="indicator"``, label sets that are not
                0/1 matrices of one width, or a label that never occurs.
        """
        check_scalar(random_state, "random_state", int, min_val=0)
        mode = one_of(*LABEL_MODES, INDICATOR)(labels, "labels")
        encode, indicator = mode == "encode", mode == INDICATOR
        if mode != "indices" and n_classes is not None:
            raise ValueError(f"n_classes is implied by labels={mode!r} (the distinct labels)")
        sparse = is_sparse(X)
        X = as_csr("X", X) if sparse else _as_features("X", X)
        read_labels = _as_label_sets if indicator else _as_labels
        y = read_labels("y", y, X.shape[0], "X", encode)
        classes = None
        if encode and X_test is None:
            (y,), classes = _encode_labels(y)
        group_ids = None if groups is None else _as_labels("groups", groups, X.shape[0], "X")
        if (X_test is None) != (y_test is None):
            raise ValueError("give both X_test and y_test, or neither (then X is split)")
        if X_test is None:
            if groups_test is not None:
                raise ValueError("groups_test needs X_test; to split one set pass only groups")
            X, y, X_test, y_test, group_ids, test_group_ids = _shuffle_split(
                X, y, group_ids, test_size, random_state
            )
        else:
            X_test = _test_features(X_test, sparse)
            y_test = read_labels("y_test", y_test, X_test.shape[0], "X_test", encode)
            if encode:
                (y, y_test), classes = _encode_labels(y, y_test)
            test_group_ids = (
                None
                if groups_test is None
                else _as_labels("groups_test", groups_test, X_test.shape[0], "X_test")
            )
            if X_test.shape[1] != X.shape[1]:
                raise ValueError(f"X_test has {X_test.shape[1]} features but X has {X.shape[1]}")
        if indicator:
            n_classes = _label_set_width(y, y_test)
        else:
            seen = np.unique(y)
            if seen.size < 2:
                raise ValueError(
                    f"y has a single class ({seen[0]}); probing needs at least two classes"
                )
            inferred = int(max(y.max(), y_test.max())) + 1
            if n_classes is None:
                _refuse_phantom_classes(np.union1d(seen, np.unique(y_test)), inferred)
                n_classes = inferred
            elif check_scalar(n_classes, "n_classes", int) < inferred:
                raise ValueError(
                    f"n_classes={n_classes} but labels go up to {inferred - 1}; "
                    f"n_classes must be at least {inferred}"
                )
            unseen = np.setdiff1d(np.unique(y_test), seen)
            if unseen.size:
                warnings.warn(
                    f"test labels {unseen.tolist()} never occur in the training pool; probes "
                    "cannot predict them and their loss is high",
                    stacklevel=2,
                )
        mean = std = None
        if standardize and sparse:  # scale only: centring would make the features dense
            X, X_test = scale_columns(X, X_test)
        elif standardize:
            mean, std = pool_moments(X)
            X = _standardized(X, mean, std, in_place=not copy)
            X_test = _standardized(X_test, mean, std, in_place=not copy)
        return cls(
            X_train=X if sparse else np.ascontiguousarray(X),
            y_train=y,
            X_test=X_test if sparse else np.ascontiguousarray(X_test),
            y_test=y_test,
            n_classes=int(n_classes),
            name=name,
            groups_train=group_ids,
            groups_test=test_group_ids,
            classes=classes,
            pool_mean=mean,
            pool_std=std,
        )

    @property
    def multilabel(self) -> bool:
        """Whether the labels are label sets, an (n, K) 0/1 indicator matrix (multi-label
        targets), rather than one class index per example."""
        return self.y_train.ndim == 2

    @property
    def pool_size(self) -> int:
        """Number of examples in the training pool (the largest possible probe subset)."""
        return int(self.X_train.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def is_sparse(self) -> bool:
        """Whether the features are scipy.sparse CSR matrices (see :meth:`from_arrays`)."""
        return sp.issparse(self.X_train)

    def fingerprint(self) -> str:
        """A short hash of the arrays, the class count, the original labels (:attr:`classes`,
        when known), the sentence ids of head-selection data and the rows' clusters (when set):
        equal data give equal fingerprints, and so do data without ``classes`` before and after
        ``classes`` were recorded."""
        digest = hashlib.sha256()
        arrays = [self.X_train, self.y_train, self.X_test, self.y_test]
        for pair in ("sentences", "clusters"):
            train, test = getattr(self, f"{pair}_train"), getattr(self, f"{pair}_test")
            if train is not None and test is not None:
                arrays += [train, test]
        for array in arrays:
            digest.update(str(array.shape).encode())
            parts = (array.indptr, array.indices, array.data) if sp.issparse(array) else (array,)
            for part in parts:
                _hash_blocks(digest, np.ascontiguousarray(part))  # the buffer itself: no copy
        digest.update(str(self.n_classes).encode())
        if self.classes is not None:
            digest.update(repr(self.classes).encode())
        if self.group_names is not None:
            digest.update(repr(self.group_names).encode())
        for shifted in self.shifted:  # only with shifted sets: other fingerprints stay
            digest.update(shifted.name.encode())
            for array in (shifted.X, shifted.y):
                digest.update(str(array.shape).encode())
                dense = array.toarray() if sp.issparse(array) else array
                _hash_blocks(digest, np.ascontiguousarray(dense))
        return digest.hexdigest()[:16]

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the data to ``folder`` (created): one ``.npy`` file per array and
        ``probe_data.json`` (schema, ``n_classes``, ``name``, ``classes`` as
        :func:`~probemeter._io.classes_to_json` writes them, ``mix_layers``, ``span_tokens``,
        ``span_pooling`` and ``span_projection`` when set), each
        file atomically
        and the JSON last, so a folder with ``probe_data.json`` is complete. Sparse features
        are written as ``X_train.npz`` and ``X_test.npz`` (``scipy.sparse.save_npz``,
        uncompressed) instead, and the JSON says ``"sparse": true``. Returns the folder.

        Raises:
            ValueError: ``folder`` is a file.
        """
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"folder {str(folder)!r} is a file; give a folder")
        described = {"schema": _SCHEMA, "n_classes": self.n_classes, "name": self.name}
        for layout in ("mix_layers", "span_tokens", "group_names"):
            if getattr(self, layout) is not None:
                described[layout] = list(getattr(self, layout))
        for layout in ("span_pooling", "span_projection"):
            if getattr(self, layout) is not None:
                described[layout] = getattr(self, layout)
        if self.direction is not None:
            described["direction"] = self.direction
        if self.is_sparse:
            described["sparse"] = True
        meta = json.dumps({**described, "classes": classes_to_json(self.classes)})
        folder.mkdir(parents=True, exist_ok=True)
        for name in _ARRAYS:
            array = getattr(self, name)
            if _maps_file(array, folder / f"{name}.npy"):  # written there already (RowSplit)
                continue
            (folder / f"{name}.{'npy' if sp.issparse(array) else 'npz'}").unlink(missing_ok=True)
            if sp.issparse(array):
                stream = io.BytesIO()
                sp.save_npz(stream, array, compressed=False)
                write_bytes_atomic(folder / f"{name}.npz", stream.getvalue())
            elif array is not None:
                save_npy_atomic(folder / f"{name}.npy", array)
            else:
                (folder / f"{name}.npy").unlink(missing_ok=True)
        write_text_atomic(folder / _META, meta)
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, mmap: bool = True) -> ProbeData:
        """The data :meth:`save` wrote to ``folder``; with ``mmap`` the arrays are read-only
        memory maps of the files (pages are read when used and can be dropped again by the
        operating system), else loaded into memory. Sparse features are always loaded into
        memory (``scipy.sparse.load_npz``).

        Raises:
            ValueError: naming ``folder``, when it holds no complete saved ProbeData or its
                arrays do not fit together.
        """
        folder = Path(folder)
        meta = read_json(folder / _META, "saved ProbeData")
        if not isinstance(meta, dict) or meta.get("schema") != _SCHEMA:
            raise ValueError(f"{str(folder)!r} holds no saved ProbeData ({_SCHEMA})")
        arrays = {}
        sparse = meta.get("sparse") is True
        for name in _ARRAYS:
            compressed = sparse and name in ("X_train", "X_test")
            path = folder / f"{name}.{'npz' if compressed else 'npy'}"
            if path.is_file():
                try:
                    arrays[name] = (
                        sp.csr_matrix(sp.load_npz(path))
                        if compressed
                        else np.load(path, mmap_mode="r" if mmap else None)
                    )
                except (OSError, ValueError, EOFError) as error:
                    raise ValueError(f"{str(path)!r} cannot be read: {error}") from None
            elif not name.startswith(("groups", "sentences", "clusters", "pool")):
                raise ValueError(f"saved ProbeData {str(folder)!r} lacks {path.name}")
        X, y, X_test, y_test = (arrays[name] for name in _ARRAYS[:4])
        fits = X.shape[0] == len(y) and X_test.shape[0] == len(y_test)
        if X.ndim != 2 or X_test.ndim != 2 or not fits:
            raise ValueError(f"saved ProbeData {str(folder)!r} has arrays that do not fit together")
        return cls(
            X_train=X,
            y_train=y,
            X_test=X_test,
            y_test=y_test,
            n_classes=int(meta["n_classes"]),
            name=str(meta["name"]),
            mix_layers=None if "mix_layers" not in meta else tuple(meta["mix_layers"]),
            span_tokens=None if "span_tokens" not in meta else tuple(meta["span_tokens"]),
            span_pooling=meta.get("span_pooling"),
            span_projection=meta.get("span_projection"),
            direction=meta.get("direction"),
            group_names=None if "group_names" not in meta else tuple(meta["group_names"]),
            groups_train=arrays.get("groups_train"),
            groups_test=arrays.get("groups_test"),
            sentences_train=arrays.get("sentences_train"),
            sentences_test=arrays.get("sentences_test"),
            clusters_train=arrays.get("clusters_train"),
            clusters_test=arrays.get("clusters_test"),
            pool_mean=arrays.get("pool_mean"),
            pool_std=arrays.get("pool_std"),
            classes=classes_from_json(meta.get("classes")),
        )

    def check_sizes(self, sizes: object, argument: str = "sizes") -> np.ndarray:
        """Validate requested training-subset sizes against the pool; return sorted unique ints.

        Raises:
            ValueError: a size that is not an integer, is < 1, or exceeds the pool.
        """
        values = np.asarray(sizes)
        if values.ndim == 0:
            values = values[None]
        if values.ndim != 1:
            raise ValueError(
                f"{argument} must be a 1-D sequence of sizes; got shape {values.shape}"
            )
        if values.size == 0:
            raise ValueError(f"{argument} is empty")
        numeric = np.issubdtype(values.dtype, np.integer) or np.issubdtype(
            values.dtype, np.floating
        )
        if not numeric or not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
            raise ValueError(f"{argument} must be integers; got {values.tolist()}")
        values = values.astype(np.int64)
        if values.min() < 1:
            raise ValueError(f"{argument} must be >= 1; got {values.min()}")
        if values.max() > self.pool_size:
            raise ValueError(
                f"{argument} asks for {values.max()} training examples but the pool of "
                f"{self.name!r} holds {self.pool_size}"
            )
        return np.unique(values)


@dataclass(frozen=True)
class RowSplit:
    """Which rows of a feature matrix (one row per example) form the pool and the test set, in
    their order, and their labels: a split decided before the features are read, so that it can
    be applied to features larger than memory (:meth:`save`).

    Attributes:
        train, test: row indices of the pool and of the test set.
        y_train, y_test: their class indices.
        n_classes: the number of classes (K).
        classes: the original label of each class index, when known.
    """

    train: np.ndarray
    test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    n_classes: int
    classes: tuple[Any, ...] | None = None

    def probe_data(self, features: object, *, name: str) -> ProbeData:
        """``ProbeData.from_arrays(X[train], y_train, X[test], y_test)``, standardised, in
        memory (sparse features: scaled, kept sparse)."""
        X = features if sp.issparse(features) else np.asarray(features)
        data = ProbeData.from_arrays(
            X[self.train],
            self.y_train,
            X[self.test],
            self.y_test,
            n_classes=self.n_classes,
            name=name,
        )
        return data if self.classes is None else replace(data, classes=self.classes)

    def save(
        self,
        folder: str | os.PathLike[str],
        read_rows: Callable[[np.ndarray], np.ndarray],
        n_features: int,
        *,
        name: str,
    ) -> Path:
        """Write what :meth:`probe_data` makes, as :meth:`ProbeData.save` would (the same
        files, byte for byte), reading the features a block of rows at a time:
        ``read_rows(indices)`` returns those rows (n, ``n_features``) in that order.

        The pool's rows are read in pool order and written to ``X_train.npy`` while their
        float64 column sums accumulate (each block added to the running sum row after row,
        the order of :func:`numpy.mean` along axis 0: the same mean); its standard deviation
        (ddof 0) is then summed over the same blocks of the written file as
        :func:`_column_moments`, and the pool and the test rows are standardised block by
        block, ``(x - mean) / std`` in float64 rounded to float32 (a constant column's std
        taken as 1). Nothing larger than a block (:data:`_STANDARDIZE_ELEMENTS` values) is
        held; the files are written with ``pwrite``, not mapped, and renamed into place;
        the JSON is written last. The labels are checked by :meth:`ProbeData.from_arrays`
        itself (on one placeholder column).

        Raises:
            ValueError: what :meth:`ProbeData.from_arrays` refuses of the labels; features
                with NaN or inf (naming the first row), or not ``n_features`` wide.
        """
        folder = Path(folder)
        checked = ProbeData.from_arrays(  # the labels' checks and warnings, on no features
            np.zeros((len(self.train), 1), np.float32),
            self.y_train,
            np.zeros((len(self.test), 1), np.float32),
            self.y_test,
            n_classes=self.n_classes,
            name=name,
            standardize=False,
        )
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _META).unlink(missing_ok=True)  # incomplete until the JSON is written again
        step = max(1, _STANDARDIZE_ELEMENTS // max(1, n_features))
        # sums and standardisation come out the same whatever the blocks (row after row, value
        # by value): smaller blocks than the squares' (which must match _column_moments') keep
        # their float64 temporaries small
        small = max(1, step // 8)

        def rows(indices: np.ndarray, first: int) -> np.ndarray:
            block = np.asarray(read_rows(indices), dtype=np.float32)
            if block.shape != (len(indices), n_features):
                raise ValueError(
                    f"read_rows returned shape {block.shape}; expected "
                    f"({len(indices)}, {n_features})"
                )
            finite = np.isfinite(block).all(axis=1)
            if not finite.all():
                raise ValueError(
                    f"X contains NaN or inf in row {indices[np.argmin(finite)]} (pool/test "
                    f"position {first + int(np.argmin(finite))})"
                )
            return block

        with _RowsFile(folder / "X_train.npy", len(self.train), n_features) as pool:
            total = None
            for start in range(0, len(self.train), small):
                block = rows(self.train[start : start + small], start)
                pool.write(start, block)
                # the running sum as the first row: one float64 block, summed down in row order
                rows64 = block if total is None else np.concatenate([total[None], block])
                total = rows64.sum(axis=0, dtype=np.float64)
            mean = total / len(self.train)
            squares = np.zeros(n_features, dtype=np.float64)
            for start in range(0, len(self.train), step):
                deviation = pool.read(start, start + step) - mean
                squares += np.einsum("ij,ij->j", deviation, deviation)
            std = np.sqrt(squares / len(self.train))
            std[std == 0] = 1.0
            for start in range(0, len(self.train), small):
                pool.write(start, (pool.read(start, start + small) - mean) / std)
        with _RowsFile(folder / "X_test.npy", len(self.test), n_features) as test:
            for start in range(0, len(self.test), small):
                test.write(start, (rows(self.test[start : start + small], start) - mean) / std)
        written = replace(
            checked,
            X_train=np.load(folder / "X_train.npy", mmap_mode="r"),
            X_test=np.load(folder / "X_test.npy", mmap_mode="r"),
            classes=self.classes,
            pool_mean=mean,
            pool_std=std,
        )
        return written.save(folder)


class _RowsFile:
    """A float32 ``.npy`` file of ``(n_rows, width)`` written and read a block of rows at a time
    with ``pwrite``/``pread`` (never mapped), under a temporary name renamed into place, after
    an ``fsync``, when the ``with`` block ends without an exception (removed otherwise)."""

    def __init__(self, path: Path, n_rows: int, width: int) -> None:
        self.path, self.row_bytes = path, width * 4
        self.shape = (n_rows, width)
        self.temporary = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex}.tmp")

    def __enter__(self) -> _RowsFile:
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32))}
        header.update(fortran_order=False, shape=self.shape)
        with open(self.temporary, "wb") as stream:  # np.save's header (version 1.0)
            np.lib.format.write_array_header_1_0(stream, header)
            self.offset = stream.tell()
            stream.truncate(self.offset + self.shape[0] * self.row_bytes)
        self.fd = os.open(self.temporary, os.O_RDWR)
        return self

    def write(self, start: int, block: np.ndarray) -> None:
        data = np.ascontiguousarray(block, dtype=np.float32)
        view = memoryview(data).cast("B")
        at = self.offset + start * self.row_bytes
        while view:  # pwrite may write less than asked
            written = os.pwrite(self.fd, view, at)
            view, at = view[written:], at + written

    def read(self, start: int, stop: int) -> np.ndarray:
        stop = min(stop, self.shape[0])
        out = np.empty((stop - start, self.shape[1]), dtype=np.float32)
        view = memoryview(out).cast("B")
        if os.preadv(self.fd, [view], self.offset + start * self.row_bytes) != len(view):
            raise OSError(f"{str(self.temporary)!r} was truncated while being written")
        return out

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if kind is None:
                os.fsync(self.fd)
        finally:
            os.close(self.fd)
        if kind is None:
            os.replace(self.temporary, self.path)
        else:
            self.temporary.unlink(missing_ok=True)


def _maps_file(array: object, path: Path) -> bool:
    """Whether ``array`` is a whole read-only memory map of the ``.npy`` file ``path``."""
    return (
        isinstance(array, np.memmap)
        and array.mode == "r"
        and bool(array.filename)
        and array.offset != 0
        and Path(array.filename) == path.absolute()
        and array.base is not None
        and not isinstance(array.base, np.ndarray)
    )


def _hash_blocks(digest: Any, array: np.ndarray) -> None:
    """``digest.update(array)`` a block of rows at a time, a large memory map's pages released
    after each (:func:`~probemeter._resident.scan_blocks`): the same bytes in the same order,
    so the same hash, without the whole file resident."""
    if array.ndim == 0:
        digest.update(array)
        return
    for block in scan_blocks(array):
        digest.update(block)


#: rows standardised at a time: float64 temporaries of at most ~32 MB whatever the data size
_STANDARDIZE_ELEMENTS = 1 << 22


def _column_moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation (ddof 0) in float64, two passes over blocks of
    rows: ``X.std(axis=0, dtype=np.float64)`` would hold a full-size float64 copy of X (twice
    the float32 features), these hold one block at a time."""
    mean = X.mean(axis=0, dtype=np.float64)
    squares = np.zeros(X.shape[1], dtype=np.float64)
    step = max(1, _STANDARDIZE_ELEMENTS // max(1, X.shape[1]))
    for start in range(0, X.shape[0], step):
        deviation = X[start : start + step] - mean
        squares += np.einsum("ij,ij->j", deviation, deviation)
    return mean, np.sqrt(squares / X.shape[0])


def pool_moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean μ and standard deviation σ (ddof 0, float64; a constant column's σ taken as 1)
    with which :meth:`ProbeData.from_arrays` standardises dense features, ``(x − μ)/σ``, from
    the raw pool ``X`` (n_pool, d): what a probe of standardised features needs to be written
    in the features' own space (:class:`~probemeter.probes.direction.ProbeDirection`)."""
    mean, std = _column_moments(X)
    std[std == 0] = 1.0  # constant features stay constant (zero) instead of NaN
    return mean, std


def _standardized(
    X: np.ndarray, mean: np.ndarray, std: np.ndarray, in_place: bool = False
) -> np.ndarray:
    """``((X - mean) / std)`` in float64, rounded to float32, a block of rows at a time: the
    same numbers as the whole-array expression, without its two full-size float64
    temporaries; written over X itself with ``in_place`` when X is a writable C-ordered
    float32 array."""
    writable = X.dtype == np.float32 and X.flags.c_contiguous and X.flags.writeable
    out = X if in_place and writable else np.empty(X.shape, dtype=np.float32)
    step = max(1, _STANDARDIZE_ELEMENTS // max(1, X.shape[1]))
    for start in range(0, X.shape[0], step):
        out[start : start + step] = (X[start : start + step] - mean) / std
    return out


def _as_label_sets(
    name: str, array: object, n_rows: int, features_name: str, encode: bool = False
) -> np.ndarray:
    """Label sets: a 0/1 indicator matrix (n_rows, K) as uint8 (``encode`` is unused: label
    sets are always given as indicators)."""
    labels = as_numpy(array, name, example_ndim=1)
    if labels.ndim != 2 or labels.shape[1] == 0:
        raise ValueError(
            f"{name} must be a 0/1 indicator matrix (n_examples, n_labels) of label sets "
            f"(labels='indicator'); got shape {labels.shape}"
        )
    if labels.shape[0] != n_rows:
        raise ValueError(
            f"{name} has {labels.shape[0]} label sets but {features_name} has {n_rows} rows"
        )
    numeric = labels.dtype == bool or np.issubdtype(labels.dtype, np.number)
    if not numeric or not np.isin(labels, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0 and 1 (label absent / present)")
    return labels.astype(np.uint8)


def _label_set_width(y: np.ndarray, y_test: np.ndarray) -> int:
    """K of the label sets ``y`` and ``y_test``: one width, every label occurring somewhere
    (a label that never does would add log 2 to the uniform code of every example)."""
    if y_test.shape[1] != y.shape[1]:
        raise ValueError(f"y_test has {y_test.shape[1]} label columns but y has {y.shape[1]}")
    never = np.flatnonzero((y.sum(axis=0) + y_test.sum(axis=0)) == 0)
    if never.size:
        raise ValueError(
            f"label column(s) {never[:5].tolist()} never occur in y or y_test: drop them (each "
            "adds a label every example is coded against)"
        )
    unseen = np.flatnonzero(y.sum(axis=0) == 0)
    if unseen.size:
        warnings.warn(
            f"label column(s) {unseen[:5].tolist()} never occur in the training pool; probes "
            "cannot predict them",
            stacklevel=3,
        )
    return int(y.shape[1])


def _test_features(X_test: object, sparse: bool) -> np.ndarray | sp.csr_matrix:
    """The validated test features: CSR when the pool is sparse (a dense ``X_test`` is
    converted), else dense (a sparse ``X_test`` beside a dense pool is refused)."""
    if not sparse:
        if is_sparse(X_test):
            raise ValueError(
                "X_test is sparse but X is dense: give both as sparse matrices, or both dense"
            )
        return _as_features("X_test", X_test)
    if not is_sparse(X_test):
        X_test = sp.csr_matrix(_as_features("X_test", X_test))
    return as_csr("X_test", X_test)


def _encode_labels(*parts: np.ndarray) -> tuple[list[np.ndarray], tuple[Any, ...]]:
    """Each part's labels as indices into the sorted distinct labels of all parts."""
    try:
        classes, codes = np.unique(np.concatenate(parts), return_inverse=True)
    except TypeError as error:  # e.g. strings mixed with numbers
        raise ValueError(f"labels cannot be ordered to encode them: {error}") from None
    if classes.dtype.kind == "f" and np.isnan(classes).any():
        raise ValueError("labels contain NaN; drop those rows or give them a class")
    bounds = np.cumsum([0, *(len(part) for part in parts)])
    codes = codes.astype(np.int64).reshape(-1)
    return [codes[a:b] for a, b in itertools.pairwise(bounds)], tuple(classes.tolist())


def _refuse_phantom_classes(present: np.ndarray, inferred: int) -> None:
    """Class indices 0..K−1 must all occur (in the pool or the test set): an index that never
    occurs is a phantom class that lengthens every code (log K) and changes every measure."""
    if present.size == inferred:
        return
    missing = np.setdiff1d(np.arange(inferred), present)
    shown = listed([str(c) for c in missing])
    raise ValueError(
        f"labels are not the class indices 0..{inferred - 1}: {missing.size} of them never occur "
        f"({shown}), so probes would count {inferred} classes for {present.size} labels. Pass "
        f"labels='encode' to map the {present.size} distinct labels to 0..{present.size - 1}, or "
        f"n_classes={inferred} if those classes exist but have no examples here"
    )


def layer_data(
    X: object,
    y: object,
    X_test: object | None = None,
    y_test: object | None = None,
    *,
    layers: int | Sequence[int] | str = "all",
    prefix: str = "layer",
    **options: Any,
) -> dict[str, ProbeData]:
    """One :class:`ProbeData` per layer of features with a layer axis, all split alike.

    ``X`` (and ``X_test``) have shape ``(n_examples, n_layers, n_features)``, e.g. a model's
    hidden states stacked with ``torch.stack(outputs.hidden_states, dim=1)``, in any container
    :meth:`ProbeData.from_arrays` takes; a list of ``(n_layers, n_features)`` arrays is one
    example each, a list of 3-D blocks is concatenated. Layer ``l`` becomes
    ``ProbeData.from_arrays(X[:, l], y, X_test[:, l], y_test, name=f"{prefix}-{l}",
    **options)``. The shuffled split depends only on the number of rows and ``random_state``,
    and the labels are encoded over the same values, so every layer has the same examples in
    its pool and in its test set, in the same order, with the same labels: layers can be
    compared pairwise (e.g. :func:`probemeter.power.paired_data`).

    Args:
        layers: ``"all"``, one layer index (0-based, along axis 1), or a list of distinct ones.
        prefix: each layer is named ``f"{prefix}-{layer}"``.
        options: keywords of :meth:`ProbeData.from_arrays` (``test_size``, ``standardize``,
            ``labels``, ``n_classes``, ``groups``, ``groups_test``, ``random_state``), not
            ``name``.

    Returns:
        name → data, in the order of ``layers``.

    Raises:
        ValueError: ``X`` or ``X_test`` not 3-D or with different layer or feature counts, a
            layer that does not exist, a bad ``layers`` or ``prefix``, ``name`` among the
            options, and whatever :meth:`ProbeData.from_arrays` raises.
    """
    if "name" in options:
        raise ValueError(f"layer_data names each layer '{prefix}-<layer>': pass prefix, not name")
    text()(prefix, "prefix")
    X = _as_features("X", X, ndim=3)
    if X_test is not None:
        X_test = _as_features("X_test", X_test, ndim=3)
        if X_test.shape[1:] != X.shape[1:]:
            raise ValueError(
                f"X_test has shape {X_test.shape} but X has {X.shape}: both need the same "
                "layers and features"
            )
    y = as_numpy(y, "y", example_ndim=0)
    y_test = None if y_test is None else as_numpy(y_test, "y_test", example_ndim=0)
    return {
        f"{prefix}-{layer}": ProbeData.from_arrays(
            X[:, layer],
            y,
            None if X_test is None else X_test[:, layer],
            y_test,
            name=f"{prefix}-{layer}",
            **options,
        )
        for layer in _layer_indices(layers, X.shape[1])
    }


def _layer_indices(layers: object, n_layers: int) -> list[int]:
    """``layers`` (``"all"``, an index or a list of distinct indices) as indices into
    ``n_layers`` layers."""
    if isinstance(layers, str) and layers == "all":
        return list(range(n_layers))
    if is_integer(layers):
        chosen = [int(layers)]  # type: ignore[call-overload]
    elif isinstance(layers, (list, tuple, np.ndarray)):
        chosen = [
            int(layer)
            for layer in integer_list(0, distinct=True, non_empty=True)(list(layers), "layers")
        ]
    else:
        raise ValueError(f'layers must be "all", a layer index or a list of them; got {layers!r}')
    for layer in chosen:
        if not 0 <= layer < n_layers:
            raise ValueError(
                f"layers: layer {layer} does not exist; X has {n_layers} layers (0..{n_layers - 1})"
            )
    return chosen


def check_single_label(data: ProbeData, method: str, argument: str = "data") -> ProbeData:
    """``data`` itself when it holds one class per example; a ValueError naming ``argument``
    and ``method`` when it holds label sets (multi-label targets), which only the methods that
    train K-sigmoid probes in the engine measure: loss-data curves and the online code."""
    if data.multilabel:
        raise ValueError(
            f"{argument} holds label sets ({data.n_classes} labels, multi-label targets), but "
            f"{method} needs one class per example; measure label sets with a loss-data curve "
            "or the online code (binary cross-entropy per label)"
        )
    return data


def check_attention_spans(data: ProbeData, what: str) -> ProbeData:
    """``data`` itself unless its spans are pooled otherwise than by attention
    (``data.span_pooling = "max"``), which ``what`` (probes with an attention pooling of their
    own: Pareto, variational) cannot learn: a ValueError then, naming the probes that can."""
    if data.span_pooling not in (None, ATTENTION):
        raise ValueError(
            f"{what} pools spans with attention only; {data.name!r} asks for "
            f"{data.span_pooling!r} pooling, which the engine's probes learn (loss-data "
            "curves, online codes, paired comparisons)"
        )
    return data


def check_probe_data(data: object, argument: str = "data", *, sparse: bool = False) -> ProbeData:
    """``data`` itself when it is a :class:`ProbeData`; otherwise a ValueError naming
    ``argument`` and how to build one (arrays are not accepted silently: the pool/test split
    and the standardisation are choices ``ProbeData.from_arrays`` makes explicit). Data with
    sparse features (:attr:`ProbeData.is_sparse`) are refused unless the caller takes them
    (``sparse=True``: loss-data curves and online codes)."""
    if not isinstance(data, ProbeData):
        raise ValueError(
            f"{argument} must be a ProbeData; got {type(data).__name__}. Build one from arrays "
            "with ProbeData.from_arrays(X, y) (or X_test, y_test for a given test set)"
        )
    if data.is_sparse and not sparse:
        raise ValueError(
            f"{argument} ({data.name!r}) has sparse features (scipy.sparse CSR), which this "
            "method does not take: loss-data curves (loss_data_curve) and online codes "
            "(online_codelength) do; or give dense features to ProbeData.from_arrays"
        )
    return data


def _shuffle_split(
    X: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray | None,
    test_size: float | int,
    random_state: int,
) -> tuple[np.ndarray, ...]:
    n_rows = X.shape[0]
    if isinstance(test_size, float) and 0.0 < test_size < 1.0:
        n_test = round(test_size * n_rows)
    elif isinstance(test_size, (int, np.integer)) and not isinstance(test_size, bool):
        n_test = int(test_size)
    else:
        raise ValueError(
            f"test_size must be a fraction in (0, 1) or an integer count; got {test_size!r}"
        )
    if not 1 <= n_test < n_rows:
        raise ValueError(
            f"test_size={test_size!r} leaves {n_test} test and {n_rows - n_test} training "
            f"examples out of {n_rows}; both must be at least 1"
        )
    order = np.random.default_rng(random_state).permutation(n_rows)
    test, train = order[:n_test], order[n_test:]
    split_groups = (None, None) if groups is None else (groups[train], groups[test])
    return X[train], y[train], X[test], y[test], split_groups[0], split_groups[1]


def subset_permutation(pool_size: int, random_state: int, seed: int) -> np.ndarray:
    """The seeded permutation of the pool whose prefixes are a seed's nested training subsets.

    Keyed by ``(random_state, seed)`` only, so the subset of size n is a prefix of the subset of
    any larger size for the same seed, whatever else is being trained alongside it.
    """
    rng = np.random.default_rng([random_state, seed, 0x5EED])
    return rng.permutation(pool_size)


def nested_subset(pool_size: int, n: int, random_state: int, seed: int) -> np.ndarray:
    """Indices of the size-``n`` training subset of ``seed``: a prefix of its permutation."""
    check_scalar(n, "n", int, min_val=1, max_val=pool_size)
    return subset_permutation(pool_size, random_state, seed)[:n]


def seed_ids(seeds: int | Sequence[int]) -> list[int]:
    """Seed ids from a count (0 … seeds−1) or an explicit sequence of distinct non-negative
    integers; raises a ValueError naming ``seeds`` otherwise."""
    if is_integer(seeds):
        return list(range(int(check_scalar(seeds, "seeds", int, min_val=1))))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (Sequence, np.ndarray)):
        raise ValueError(f"seeds must be a count or a sequence of seed ids; got {seeds!r}")
    values = integer_list(0, distinct=True, non_empty=True)(list(seeds), "seeds")
    return [int(s) for s in values]
