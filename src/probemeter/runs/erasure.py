"""``erase``: a representation with a concept erased, measured beside the original.

An entry with ``erase = "label"`` (any kind: the option is declared once, on
:class:`~probemeter.runs.kinds.RepresentationKind`) gives, beside each of its representations
NAME, the representation ``NAME-erased``: NAME's features with the concept erased by LEACE
fitted on the pool (:func:`probemeter.erasure.erase`). Every method then measures it as it
measures any representation. The concept is the task's own label (``"label"``, or its name:
``"upos"`` of a conllu task labelled ``upos``, a texts task's ``label_column``) or another
label of the task's rows (:meth:`~probemeter.runs.tasks.TaskType.concept_problem`: a conllu
or ptb word label, another column of a texts file).

NAME keeps its unit key (``erase`` is left out of keys when unset); ``NAME-erased`` has its
own, holding ``erase`` and the eraser. Its features are built from NAME's (the same build,
hence the same cached encoder pass), then erased.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from probemeter.data import ProbeData
from probemeter.erasure import erase, erasure_problem
from probemeter.runs.kinds import FILES, KINDS, Build, Report, Representation, mixes_layers
from probemeter.runs.tasks import OWN_LABEL, Task, TaskInputs

__all__ = ["ERASED", "build_data", "erased_source", "erased_twins", "erasure_task_problems"]

#: the suffix of an erased representation's name (and of its layer sweep's)
ERASED = "-erased"


def erased_twins(
    reps: list[Representation], concept: str | None, where: str, report: Report
) -> list[Representation]:
    """The representations of one entry (at ``where``), each followed by its erased twin
    ``NAME-erased`` when the entry erases ``concept``; what needs no task is checked here
    (``concept-erasure`` installed, no scalar mix, a files kind's concept ``"label"``).

    The entry's own representations keep no ``erase`` (a kind may copy its options into
    another representation's, as ``sae`` does into ``NAME-dense``): only the twins hold it."""
    found = []
    for rep in reps:
        if rep.declared.erase is not None:
            rep = replace(rep, options={**rep.options, "erase": None})
        found.append(rep)
        if concept is None:
            continue
        at = f"{where}.erase"
        problem = erasure_problem()
        if problem:
            report(at, problem)
        if mixes_layers(rep):
            report(at, "a scalar mix's layers side by side cannot be erased as one row")
        if KINDS[rep.kind].reads == FILES and concept != OWN_LABEL:
            report(at, f"a {rep.kind} file holds one label: only {OWN_LABEL!r}; got {concept!r}")
        sweep = None if rep.sweep is None else rep.sweep + ERASED
        options = {**rep.options, "erase": concept}
        found.append(replace(rep, name=rep.name + ERASED, sweep=sweep, options=options))
    return found


def erasure_task_problems(rep: Representation, task: Task, where: str, report: Report) -> None:
    """Reports an ``erase`` of ``rep`` (at ``where``) naming no label of ``task``'s rows."""
    concept = rep.declared.erase
    if concept is None or KINDS[rep.kind].reads == FILES:
        return
    problem = task.declared.concept_problem(concept)
    if problem:
        report(f"{where}.erase", problem)


def build_data(
    rep: Representation, inputs: TaskInputs, build: Build, built: Mapping[str, ProbeData]
) -> ProbeData:
    """``rep``'s data: its kind's build, or, for an erased twin, the data of the
    representation it erases (from ``built`` when already built there) with the concept
    erased (:func:`~probemeter.erasure.erase`, fitted on the pool).

    Raises:
        ValueError: the kind's build refused, sparse features (LEACE needs dense ones), a
            concept the task's files lack.
    """
    concept = rep.declared.erase
    if concept is None:
        return KINDS[rep.kind].build(rep, inputs, build)
    source = erased_source(rep)
    if source.name in built:
        data = built[source.name]
    else:
        data = KINDS[source.kind].build(source, inputs, build)
    task = inputs.task
    own = task is None or concept in (OWN_LABEL, task.declared.label_name())
    try:
        if own or KINDS[rep.kind].reads == FILES:
            labels, n_classes = data.y_train, data.n_classes
        else:
            assert inputs.text is not None, "a concept other than the label is a text task's"
            labels, n_classes = inputs.text.concept_labels(concept, build.random_state), None
        return erase(data, labels, concept=concept, n_classes=n_classes).data
    except ValueError as error:  # a column the file lacks, sparse features, ...
        raise ValueError(f"erase = {concept!r}: {error}") from None


def erased_source(rep: Representation) -> Representation:
    """The representation an erased twin erases: its name, sweep and options without
    ``erase`` (hence its unit and cache keys)."""
    sweep = None if rep.sweep is None else rep.sweep.removesuffix(ERASED)
    options = {**rep.options, "erase": None}
    return replace(rep, name=rep.name.removesuffix(ERASED), sweep=sweep, options=options)
