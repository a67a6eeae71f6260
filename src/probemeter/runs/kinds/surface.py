"""Kind ``surface``: a surface floor of a texts task (:mod:`probemeter.datasets.surface`) as a
representation, built from the task's raw texts alone (no encoder pass).

``[task] controls = ["bag-of-words", "length", ...]`` adds one representation per floor,
named ``surface-FLOOR`` (:func:`floor_name`, the one naming scheme), after the entries of
``[[representations]]`` (:func:`surface_representations`); an entry ``kind = "surface"`` with
``floor = ...`` makes one under a name of its own. Every method then measures it as it measures
any representation, and a layer sweep's verdict compares its best layer with the best floor
(:mod:`probemeter.runs.layers`).

Tokens: with ``controls``, the tokenizer of the run's model when its ``transformer`` and
``sae`` entries name exactly one (read by :func:`~probemeter.encoders.model_files.model_files`,
without the weights), otherwise scikit-learn's words
(:data:`~probemeter.datasets.surface.WORD_TOKENS`); the representation's option ``tokens``
holds which, and with it its unit key, beside the floor's name and settings. A floor reads the
raw text of each row, never the template around it.

Rows: one per text; where the run's one model is read with ``pooling = "all"`` (a row per
token, clustered by text), ``controls`` gives the floors the same rows (``rows = "token"``:
each text's floor repeated for each of its tokens, as that model's encoder counts them), so
that the layers' and the floors' test sets are the same rows in the same texts and the verdict
pairs them with the sign-flip test of texts.

Sparse floors (bag of words, TF-IDF, one-hot tokens) stay scipy CSR for the methods that train
on sparse rows (loss-data curves, online codes); for a method that trains on dense features only
(:meth:`~probemeter._method.Method.sparse_problems`, or kept probes) they are densified when
they hold at most :data:`DENSE_LIMIT` values, and refused with one line otherwise.

References:
    Hewitt, J. & Liang, P. (2019). Designing and Interpreting Probes with Control Tasks.
    EMNLP-IJCNLP. arXiv:1909.03368
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter.data import ProbeData
from probemeter.datasets.surface import (
    SURFACE_FLOORS,
    WORD_TOKENS,
    Tokenize,
    surface_features,
    word_tokens,
)
from probemeter.encoders.model_files import model_files
from probemeter.runs.kinds.base import Build, Report, Representation, RepresentationKind
from probemeter.runs.kinds.words import _ModelKind, _transformer_model
from probemeter.runs.tasks import ALL_TOKENS, WORDS, Task, TaskInputs, TaskText

__all__ = [
    "CONTROLS",
    "DENSE_LIMIT",
    "SURFACE_PREFIX",
    "SurfaceKind",
    "floor_name",
    "surface_floor_names",
    "surface_representations",
]

#: the prefix of a floor's representation made by ``controls``: ``surface-bag-of-words``
SURFACE_PREFIX = "surface-"
#: where ``controls`` are declared (the location of their problems)
CONTROLS = "task.controls"
#: a floor's rows: one per text, or each text's row repeated for each of its tokens
ROWS = ("text", "token")
#: the most values a sparse floor may hold once densified for a method that trains on dense
#: features only (256 MiB of float32)
DENSE_LIMIT = 1 << 26


def floor_name(floor: str) -> str:
    """The representation of surface floor ``floor`` that ``controls`` makes."""
    return SURFACE_PREFIX + floor


def _tokenizer(tokens: str) -> Tokenize:
    """A text's tokens: scikit-learn's words, or the tokens of the model ``tokens``'s tokenizer
    (its word pieces, no special tokens).

    Raises:
        ValueError: the model's tokenizer cannot be read here (offline)."""
    if tokens == WORD_TOKENS:
        return word_tokens
    files = model_files(tokens)
    tokenizer = None if files is None else files.tokenizer()
    if tokenizer is None:
        raise ValueError(f"the tokenizer of {tokens!r} cannot be read here")
    return tokenizer.tokenize


@dataclass(frozen=True, kw_only=True)
class SurfaceKind(RepresentationKind):
    floor: str = option(
        check=valid.one_of(*SURFACE_FLOORS),
        help="the surface floor: "
        + "; ".join(f'"{floor.name}": {floor.help}' for floor in SURFACE_FLOORS.values()),
    )
    tokens: str = option(
        WORD_TOKENS,
        check=valid.text(),
        help=f'"{WORD_TOKENS}" (scikit-learn\'s default token pattern, lowercased: words of two '
        'characters or more), or a model ("minilm", a model folder relative to the experiment '
        "file, a Hub id in the cache) whose tokenizer splits the texts (read without weights)",
    )
    rows: str = option(
        ROWS[0],
        check=valid.one_of(*ROWS),
        help='"text": a row per text; "token": each text\'s row repeated for each of its '
        'tokens, as a transformer of the model tokens names with pooling "all" lays them out '
        "(clustered by text; controls choose it where the run's one model pools so)",
        key_omits=ROWS[0],
    )

    kind = "surface"
    summary = (
        "a surface floor of a texts task (bag of words, TF-IDF, length, first or last token) "
        "from its raw texts alone, fitted on the pool; usually made by [task] controls"
    )
    reads = WORDS
    #: not a word encoder: it gives one row per text, and is no sentence pooling to suggest
    pools_sentences: ClassVar[bool] = False

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """One representation; a ``tokens`` model folder made absolute, and the floor's
        settings in its options (hence in its unit key)."""
        options = self.usable_values(bad)
        tokens = options["tokens"]
        if tokens not in (None, WORD_TOKENS, "minilm"):
            options["tokens"] = _transformer_model(tokens, f"{where}.tokens", folder, report)
        if options["floor"] is not None:
            options["settings"] = SURFACE_FLOORS[options["floor"]].settings
        return [Representation(name, self.kind, WORDS, options=options)]

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        """A task whose rows are texts with surface floors (``controls``), one text per row."""
        declared = task.declared
        at = where if rep.declared_at is not None else f"{where}.kind"
        if not declared.surface:
            report(at, f"surface floors read texts: the {task.dataset} task has none")
        elif getattr(declared, "pair", None) is not None:
            report(at, "surface floors read one text per row; a contrast pair is two")
        return rep

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        """The floor's features of every text, fitted on the pool's texts, split as the task
        splits its texts; densified for a method that needs dense features.

        Raises:
            ValueError: a tokenizer that cannot be read, a pool without tokens, sparse
                features too large to densify for the method."""
        declared, text = rep.declared, inputs.text
        texts = text.surface_texts()
        split = text.row_split(build.random_state)
        assert split is not None, "a text per row has a row split"
        features = surface_features(declared.floor, texts, split.train, _tokenizer(declared.tokens))
        if declared.rows == ROWS[1]:  # fitted on the texts, then a row per token
            text = _token_rows(text, inputs, declared.tokens)
            features = features[np.repeat(np.arange(len(texts)), text.rows_per_text)]
        if build.dense and sp.issparse(features):
            rows, columns = features.shape
            if rows * columns > DENSE_LIMIT:
                raise ValueError(
                    f"surface floor {declared.floor!r}: {rows:,} rows × {columns:,} columns "
                    f"would be {rows * columns * 4 / 2**30:.1f} GiB dense, and the method trains "
                    'on dense features only: use kind = "curve" or "mdl" (they train on sparse '
                    f"rows), or leave {declared.floor!r} out of {CONTROLS}"
                )
            features = features.toarray()
        return text.probe_data(features, rep.name, trees=False, random_state=build.random_state)


def _token_rows(text: TaskText, inputs: TaskInputs, model: str) -> TaskText:
    """The text with a row per token, as the run's encoder of ``model`` with pooling ``"all"``
    counted them (built before the floors: they follow the entries).

    Raises:
        ValueError: no such encoder in the run."""
    for group, encoder in inputs.encoders.items():
        if group[0] == model and getattr(encoder, "pooling", None) == ALL_TOKENS:
            return text.token_rows(encoder.row_counts(text.encoder_inputs(ALL_TOKENS)))
    raise ValueError(
        f'rows = "token" repeats rows as a transformer entry of model {model!r} with pooling '
        f'"{ALL_TOKENS}" lays them out; the run has none'
    )


def _run_model(reps: Sequence[Representation]) -> str | None:
    """The one model the run's model entries (``transformer``, ``sae``) name, or None where
    they name none or several."""
    models = {
        rep.declared.model
        for rep in reps
        if issubclass(rep.kind_class, _ModelKind) and rep.declared.model
    }
    return models.pop() if len(models) == 1 else None


def surface_representations(
    task: Task, reps: Sequence[Representation], report: Report
) -> list[Representation]:
    """The representations ``[task] controls`` asks for beside ``reps``: ``surface-FLOOR`` per
    floor, tokenized by the one model of ``reps`` (else by words); problems (a name taken, a
    tokenizer not at hand, a task without texts) reported at ``task.controls``."""
    floors = task.options.get("controls") or ()
    if not floors:
        return []
    model = _run_model(reps)
    tokens = WORD_TOKENS if model is None else model
    tokens_rows = model is not None and any(
        issubclass(rep.kind_class, _ModelKind) and rep.declared.pooling == ALL_TOKENS
        for rep in reps
    )
    if model is not None:
        try:
            _tokenizer(model)
        except ValueError as error:
            report(CONTROLS, f"{error}: the floors would be tokenized by its tokenizer")
    names = {rep.name for rep in reps}
    found = []
    for floor in floors:
        options = {"floor": floor, "tokens": tokens, "rows": ROWS[int(tokens_rows)]}
        options["settings"] = SURFACE_FLOORS[floor].settings
        rep = Representation(
            floor_name(floor), SurfaceKind.kind, WORDS, options=options, declared_at=CONTROLS
        )
        if rep.name in names:
            report(CONTROLS, f"{rep.name!r} is already a representation's name; rename that one")
        found.append(SurfaceKind.check_task(rep, task, CONTROLS, report))
    return found


def surface_floor_names(reps: Sequence[Representation]) -> list[str]:
    """The names of the surface floors among ``reps`` (kind ``surface``), in order."""
    return [rep.name for rep in reps if issubclass(rep.kind_class, SurfaceKind)]
