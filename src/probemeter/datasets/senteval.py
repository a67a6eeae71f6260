"""SentEval probing tasks (Conneau et al. 2018): the release's files, read and written.

SentEval's ten probing tasks (``data/probing`` of github.com/facebookresearch/SentEval, the
tasks Zhu et al. probe in §4) are one text file each, one example a line::

    tr<TAB>label<TAB>sentence       (tr = training, va = validation, te = test)

The sentence is tokenised, its tokens separated by single spaces. :func:`read_senteval` reads
a file (or the file of a task in a ``probing/`` folder) into :class:`SentEvalData`, whose
:meth:`SentEvalData.probe_data` pairs sentence features with the labels. The file's own split
is kept, never re-split: the pool is its ``tr`` lines, the test set its ``te`` lines; the
``va`` lines are read and counted but not probed (probemeter's methods hold their own
development sets out of the pool).

The label vocabulary, whose size K sets the uniform code (log K per sentence) and the probes'
outputs, is the labels of the ``tr`` lines plus the labels the task declares — the fixed pair
of a binary task (:data:`TASK_LABELS`) and any given as ``labels`` — never the test lines':
a ``te`` line whose label is outside it is refused (:func:`read_senteval`,
:meth:`SentEvalData.probe_data`), naming the labels and the first such line, since a probe
cannot learn a class it never sees and K must not depend on the test split. Declare such a
label (``labels=``) to keep those lines, or leave them out of the file.

:func:`write_senteval` writes the same format, which
:func:`~probemeter.datasets.senteval_generate.generate_tasks` uses for tasks built from any
corpus.

Only the standard library and numpy are imported here, so experiment files can check a task
file cheaply (:func:`senteval_file` reads its first line).

References:
    Conneau, A., Kruszewski, G., Lample, G., Barrault, L. & Baroni, M. (2018). What you can cram
    into a single $&!#* vector: probing sentence embeddings for linguistic properties. *ACL 2018*.
    doi:10.18653/v1/P18-1198 (arXiv:1805.01070)

    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from probemeter._io import write_text_atomic
from probemeter._validation import listed
from probemeter.data import ProbeData

__all__ = [
    "INTEGER_TASKS",
    "SPLITS",
    "TASK_FILES",
    "TASK_LABELS",
    "SentEvalData",
    "read_senteval",
    "senteval_file",
    "write_senteval",
]

#: each task's file name in the release's ``data/probing`` folder
TASK_FILES = {
    "SentLen": "sentence_length.txt",
    "WC": "word_content.txt",
    "TreeDepth": "tree_depth.txt",
    "TopConst": "top_constituents.txt",
    "BShift": "bigram_shift.txt",
    "Tense": "past_present.txt",
    "SubjNum": "subj_number.txt",
    "ObjNum": "obj_number.txt",
    "SOMO": "odd_man_out.txt",
    "CoordInv": "coordination_inversion.txt",
}
#: the fixed label set of each binary task; the other tasks' labels are open (WC: the words;
#: TopConst: constituent sequences such as ``NP_VP_.``; SentLen, TreeDepth: integers)
TASK_LABELS: dict[str, tuple[str, ...] | None] = {
    "SentLen": None,
    "WC": None,
    "TreeDepth": None,
    "TopConst": None,
    "BShift": ("I", "O"),
    "Tense": ("PAST", "PRES"),
    "SubjNum": ("NN", "NNS"),
    "ObjNum": ("NN", "NNS"),
    "SOMO": ("C", "O"),
    "CoordInv": ("I", "O"),
}
#: tasks whose labels are integers (sentence-length bins, tree depths), ordered numerically
INTEGER_TASKS = ("SentLen", "TreeDepth")
#: the split codes of the first column
SPLITS = ("tr", "va", "te")


@dataclass(frozen=True)
class SentEvalData:
    """One SentEval task file: every line's split, label and sentence, in file order.

    Attributes:
        task: the task name (a key of :data:`TASK_FILES`).
        splits: ``"tr"``, ``"va"`` or ``"te"`` per line.
        labels: the label of each line, as written.
        sentences: the sentence of each line (tokens separated by single spaces).
        source: the file read (or ``"<rows>"``).
        declared: labels the task declares beyond those of its ``tr`` lines (they join
            :attr:`classes` even where no ``tr`` line holds them).
    """

    task: str
    splits: tuple[str, ...]
    labels: tuple[str, ...]
    sentences: tuple[str, ...]
    source: str = "<rows>"
    declared: tuple[str, ...] = ()

    @property
    def n_sentences(self) -> int:
        return len(self.sentences)

    @cached_property
    def classes(self) -> tuple[str, ...]:
        """The label vocabulary (K = its length): the labels of the ``tr`` lines, those of
        :data:`TASK_LABELS` for a binary task, and :attr:`declared`; sorted (numerically for
        :data:`INTEGER_TASKS`). The ``va`` and ``te`` lines add none (module docstring)."""
        found = {label for split, label in zip(self.splits, self.labels) if split == "tr"}
        found |= {*(TASK_LABELS.get(self.task) or ()), *self.declared}
        if self.task in INTEGER_TASKS:
            return tuple(sorted(found, key=int))
        return tuple(sorted(found))

    @cached_property
    def label_ids(self) -> np.ndarray:
        """(n_sentences,) int64 index of each line's label in :attr:`classes`; -1 for a
        ``va`` line whose label is not in it (``va`` lines are not probed)."""
        index = {label: i for i, label in enumerate(self.classes)}
        return np.array([index.get(label, -1) for label in self.labels], dtype=np.int64)

    def check_test_labels(self) -> None:
        """Refuse ``te`` lines whose label is not in :attr:`classes`.

        Raises:
            ValueError: naming the source, the labels, how many lines hold them and the
                sentence of the first.
        """
        known = set(self.classes)
        unseen = [
            (label, sentence)
            for split, label, sentence in zip(self.splits, self.labels, self.sentences)
            if split == "te" and label not in known
        ]
        if unseen:
            labels = sorted({label for label, _ in unseen})
            shown = listed([repr(label) for label in labels])
            raise ValueError(
                f"SentEval file {self.source!r}: {len(unseen)} 'te' line(s) hold label(s) "
                f"{shown} that no 'tr' line holds (the first: {unseen[0][1][:60]!r}); the "
                "label vocabulary is the 'tr' lines' labels plus those the task declares "
                "(labels=...): declare them, or leave those lines out"
            )

    def mask(self, split: str) -> np.ndarray:
        """(n_sentences,) bool: the lines of ``split`` (``"tr"``, ``"va"`` or ``"te"``)."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}; got {split!r}")
        return np.array([code == split for code in self.splits])

    def counts(self) -> dict[str, dict[str, int]]:
        """Lines per split and label: ``{split: {label: count}}``."""
        found: dict[str, dict[str, int]] = {split: {} for split in SPLITS}
        for split, label in zip(self.splits, self.labels):
            found[split][label] = found[split].get(label, 0) + 1
        return found

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the lines and of the label vocabulary (what features and labels are made
        of), for cache keys."""
        hasher = hashlib.sha256(self.task.encode("utf-8"))
        for row in zip(self.splits, self.labels, self.sentences):
            hasher.update(("\t".join(row) + "\n").encode("utf-8"))
        hasher.update(("classes\t" + "\t".join(self.classes) + "\n").encode("utf-8"))
        return hasher.hexdigest()

    def probe_data(self, features: object, *, name: str | None = None) -> ProbeData:
        """Sentence features with this task's labels: the pool is the ``tr`` lines, the test
        set the ``te`` lines (the file's own split); ``va`` lines are left out. Class ``i`` is
        ``classes[i]``, so pool and test share one label vocabulary, whose K (``n_classes``)
        is the ``tr`` lines' labels and the declared ones, never set by the test lines.

        Args:
            features: (n_sentences, d) array, one row per line of the file, in file order.

        Raises:
            ValueError: ``features`` not 2-D or with a row count other than ``n_sentences``;
                a ``te`` line whose label is not in :attr:`classes`
                (:meth:`check_test_labels`).
        """
        X = np.asarray(features)
        if X.ndim != 2 or X.shape[0] != self.n_sentences:
            raise ValueError(
                f"features must be (n_sentences={self.n_sentences}, d); got shape {X.shape}"
            )
        self.check_test_labels()
        train, test = self.mask("tr"), self.mask("te")
        y = self.label_ids
        data = ProbeData.from_arrays(
            X[train],
            y[train],
            X[test],
            y[test],
            n_classes=len(self.classes),
            name=name or f"senteval:{self.task}",
        )
        return replace(data, classes=self.classes)


def _check_task(task: str) -> None:
    if task not in TASK_FILES:
        raise ValueError(f"task must be one of {tuple(TASK_FILES)}; got {task!r}")


def senteval_file(path: str | Path, task: str) -> Path:
    """The file of ``task``: ``path`` itself, or ``path / TASK_FILES[task]`` when ``path`` is a
    folder (the release's ``data/probing``). Only the first line is read and checked.

    Raises:
        ValueError: an unknown ``task``, a missing file, or a first line that is not
            ``tr|va|te <TAB> label <TAB> sentence`` (naming ``FILE:1``).
    """
    _check_task(task)
    file = Path(path)
    if file.is_dir():
        file = file / TASK_FILES[task]
    if not file.is_file():
        raise ValueError(f"SentEval file {str(file)!r} does not exist")
    with file.open(encoding="utf-8") as handle:
        first = handle.readline()
    _parse_line(first.rstrip("\n").rstrip("\r"), task, f"{file}:1")
    return file


def read_senteval(
    path: str | Path, task: str, *, labels: Iterable[str] | None = None
) -> SentEvalData:
    """Read the SentEval probing file of ``task`` (a file, or a folder holding
    ``TASK_FILES[task]``).

    Every line must be ``tr|va|te <TAB> label <TAB> sentence`` with a non-empty label and
    sentence; labels of :data:`INTEGER_TASKS` must be integers, those of binary tasks in
    :data:`TASK_LABELS`. Blank lines are skipped. The label vocabulary is the ``tr`` lines'
    labels, the task's fixed pair (binary tasks) and ``labels``; a ``te`` line whose label is
    outside it is refused (module docstring).

    Args:
        labels: labels the task declares beyond those of its ``tr`` lines (e.g. a class the
            training lines lack but the test lines hold).

    Raises:
        ValueError: an unknown ``task``, a missing file, a bad line (one error naming
            ``FILE:LINE`` and what is wrong), a bad declared label, no ``tr`` or no ``te``
            lines, fewer than two classes among the ``tr`` lines, or ``te`` lines whose label
            is outside the vocabulary.
    """
    declared = _declared_labels(labels, task)
    file = senteval_file(path, task)
    rows: list[tuple[str, str, str]] = []
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if line.strip():
                rows.append(_parse_line(line, task, f"{file}:{number}"))
    if not rows:
        raise ValueError(f"SentEval file {str(file)!r} holds no lines")
    data = SentEvalData(
        task,
        tuple(row[0] for row in rows),
        tuple(row[1] for row in rows),
        tuple(row[2] for row in rows),
        source=str(file),
        declared=declared,
    )
    counts = data.counts()
    for split in ("tr", "te"):
        if not counts[split]:
            raise ValueError(f"SentEval file {str(file)!r} has no {split!r} lines")
    if len(counts["tr"]) < 2:
        raise ValueError(
            f"SentEval file {str(file)!r}: its 'tr' lines hold one class only "
            f"({next(iter(counts['tr']))!r}); a probe needs two or more"
        )
    data.check_test_labels()
    return data


def _declared_labels(labels: Iterable[str] | None, task: str) -> tuple[str, ...]:
    """``labels`` as a tuple, each checked as a label of ``task``'s lines would be."""
    if labels is None:
        return ()
    if isinstance(labels, str):
        raise ValueError(f"labels must be a list of labels, not one string; got {labels!r}")
    declared = tuple(labels)
    for label in declared:
        if not isinstance(label, str) or any(char in label for char in "\t\n\r"):
            raise ValueError(f"labels must be strings without tabs or newlines; got {label!r}")
        _parse_line(f"tr\t{label}\t.", task, "labels")
    return declared


def _parse_line(line: str, task: str, where: str) -> tuple[str, str, str]:
    """``(split, label, sentence)`` of one line, or a ValueError naming ``where``."""
    fields = line.split("\t")
    if len(fields) != 3:
        raise ValueError(
            f"{where}: expected 3 tab-separated fields (tr|va|te, label, sentence); got "
            f"{len(fields)} in {line[:80]!r}"
        )
    split, label, sentence = fields
    if split not in SPLITS:
        raise ValueError(f"{where}: the first field must be one of {SPLITS}; got {split!r}")
    if not label.strip() or not sentence.strip():
        raise ValueError(f"{where}: empty {'label' if not label.strip() else 'sentence'}")
    if task in INTEGER_TASKS and not label.lstrip("-").isdigit():
        raise ValueError(f"{where}: {task} labels are integers; got {label!r}")
    known = TASK_LABELS[task]
    if known is not None and label not in known:
        raise ValueError(f"{where}: {task} labels are {known}; got {label!r}")
    return split, label, sentence


def write_senteval(path: str | Path, rows: Iterable[tuple[str, str, str]], task: str) -> None:
    """Write ``(split, label, sentence)`` rows as a SentEval probing file of ``task``,
    atomically (a temporary file in the same folder, then ``os.replace``); what
    :func:`read_senteval` reads back unchanged.

    Raises:
        ValueError: a row that :func:`read_senteval` would refuse (bad split, label or
            sentence, a tab or line break in a field), naming the row.
    """
    _check_task(task)
    lines = []
    for index, (split, label, sentence) in enumerate(rows):
        for field_name, value in (("label", label), ("sentence", sentence)):
            if any(char in value for char in "\t\n\r"):
                raise ValueError(
                    f"rows[{index}]: the {field_name} {value!r} holds a tab or newline"
                )
        line = f"{split}\t{label}\t{sentence}"
        _parse_line(line, task, f"rows[{index}]")
        lines.append(line)
    if not lines:
        raise ValueError("rows is empty; a SentEval file needs at least one line")
    write_text_atomic(path, "\n".join(lines) + "\n")
