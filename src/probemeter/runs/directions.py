"""``directions``: direction baselines of a representation, measured beside its trained probes.

An entry with ``directions = ["diff-means", "lda"]`` (any kind: the option is declared once,
on :class:`~probemeter.runs.kinds.RepresentationKind`; the families are those of
:data:`~probemeter.training.directions.DIRECTION_FAMILIES`) gives, beside each of its
representations NAME, the representations ``NAME-diff-means`` and ``NAME-lda``: NAME's very
data (the same build, hence the same cached encoder pass, and no copy of its arrays) marked
with the family (:attr:`ProbeData.direction <probemeter.data.ProbeData.direction>`), so that
every method that takes its probes from :func:`~probemeter.probes.probe_for` fits them in
closed form instead of training the method's probe (:class:`~probemeter.probes.Direction`).
A layer sweep's twins form a sweep of their own (``SWEEP-lda``): their own line and row in
the same layer tables and figures, and the layer verdict takes them as any sweep. Methods
whose probes are not the engine's refuse them (``Method.fits_directions``,
:mod:`probemeter.runs.compatibility`).

NAME keeps its unit key (``directions`` is left out of keys when empty); ``NAME-FAMILY`` has
its own, holding ``directions = [FAMILY]``, and the probe in the method's unit spec is the
family's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from probemeter.data import ProbeData
from probemeter.runs.erasure import build_data as erased_or_built
from probemeter.runs.kinds import Build, Report, Representation, mixes_layers
from probemeter.runs.tasks import Task, TaskInputs
from probemeter.training.directions import DIRECTION_FAMILIES

__all__ = [
    "build_data",
    "direction_problem",
    "direction_source",
    "direction_task_problems",
    "direction_twins",
]


def direction_twins(
    reps: list[Representation], families: tuple[str, ...], where: str, report: Report
) -> list[Representation]:
    """The representations of one entry (at ``where``), each followed by one twin
    ``NAME-FAMILY`` per direction family of ``families``; what needs no data is checked
    here (no scalar mix: its layers side by side are one row for a learned mix).

    The entry's own representations keep no ``directions`` (a kind may copy its options into
    another representation's, as ``sae`` does into ``NAME-dense``): only the twins hold it,
    one family each."""
    found = []
    for rep in reps:
        if rep.options.get("directions"):
            rep = replace(rep, options={**rep.options, "directions": []})
        found.append(rep)
        if not families:
            continue
        if mixes_layers(rep):
            report(
                f"{where}.directions", "a scalar mix's layers side by side are no direction's row"
            )
        for family in families:
            sweep = None if rep.sweep is None else f"{rep.sweep}-{family}"
            options = {**rep.options, "directions": [family]}
            found.append(replace(rep, name=f"{rep.name}-{family}", sweep=sweep, options=options))
    return found


def direction_task_problems(rep: Representation, task: Task, where: str, report: Report) -> None:
    """Reports a direction twin (at ``where``) whose family reads contrast pairs side by side
    (CCS) on a task whose rows are not laid out so, before anything is encoded."""
    families = rep.options.get("directions") or ()
    if task.declared.pairs_side_by_side():
        return
    for family in families:
        if family in DIRECTION_FAMILIES and DIRECTION_FAMILIES[family].reads_pairs:
            report(
                f"{where}.directions",
                f"{family!r} reads contrast pairs side by side: a texts task with "
                f'contrast_column and pair = "concat"; the {task.dataset} task has none',
            )


def direction_source(rep: Representation) -> Representation:
    """The representation a direction twin measures: its name, sweep and options without
    the family (hence its unit and cache keys)."""
    (family,) = rep.options["directions"]
    suffix = f"-{family}"
    sweep = None if rep.sweep is None else rep.sweep.removesuffix(suffix)
    options = {**rep.options, "directions": []}
    return replace(rep, name=rep.name.removesuffix(suffix), sweep=sweep, options=options)


def build_data(
    rep: Representation, inputs: TaskInputs, build: Build, built: Mapping[str, ProbeData]
) -> ProbeData:
    """``rep``'s data: its kind's build (or its erased data,
    :func:`probemeter.runs.erasure.build_data`), or, for a direction twin, the data of the
    representation it measures (from ``built`` when already built there) with its family.

    Raises:
        ValueError: what building refused; for a twin, data a direction probe cannot fit
            (sparse features, label sets, rows of span tokens), naming ``directions``.
    """
    if not rep.options.get("directions"):
        return erased_or_built(rep, inputs, build, built)
    (family,) = rep.options["directions"]
    source = direction_source(rep)
    data = built.get(source.name)
    if data is None:
        data = erased_or_built(source, inputs, build, built)
    problem = direction_problem(data, family)
    if problem:
        raise ValueError(problem)
    return replace(data, name=rep.name, direction=family)


def direction_problem(data: ProbeData, family: str) -> str | None:
    """Why a direction probe of ``family`` cannot fit ``data`` (naming ``directions``), or
    None: sparse features, label sets, rows of span tokens."""
    problem = (
        "sparse features (its class means and covariance are dense)"
        if data.is_sparse
        else "label sets (one label per row)"
        if data.multilabel
        else "rows of span tokens (pooled by learned attention)"
        if data.span_tokens is not None
        else None
    )
    return None if problem is None else f"directions = [{family!r}]: cannot fit {problem}"
