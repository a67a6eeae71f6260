"""``probemeter run --check``: what a run checks of its data before it trains, without
encoding, fitting or training anything (:func:`check_data`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from probemeter._device import resolve_device
from probemeter.data import ProbeData
from probemeter.runs.config import Experiment, ExperimentError
from probemeter.runs.directions import direction_problem
from probemeter.runs.kinds import KINDS, Build, FileKind
from probemeter.runs.kinds.words import length_problems
from probemeter.runs.runner import task_inputs
from probemeter.runs.tasks import WORDS, TaskInputs

__all__ = ["check_data"]


def check_data(experiment: Experiment, *, max_memory: float | None = None) -> None:
    """What a run checks of its data before it trains, without encoding, fitting or training
    anything: ``probemeter run --check``, after
    :func:`~probemeter.runs.config.load_experiment` (which reads files' headers only). The
    checks are the run's own, on the data the run would build:

    * a task whose files the user gives (``conllu``, ``edge-probing``, ``senteval``:
      :attr:`~probemeter.runs.tasks.TaskType.reads_files`) has them read whole by the
      readers the run uses (one pass over each), and its split and labels built as the run
      builds them (:meth:`~probemeter.runs.tasks.TaskText.probe_data`), from one column of
      zeros where a representation
      would give its features (the split and the labels do not depend on them): malformed
      lines, a pool of one class, a ``feats:<Name>`` label no word carries, a tree the
      labels cannot be read from are refused, and the method's sizes and blocks are checked
      against that pool (:meth:`~probemeter._method.Method.check_pool`);
    * texts longer than a model reads, of a model entry that does not say how to cut them
      (``truncate``), counted by the model's tokenizer alone
      (:func:`~probemeter.runs.kinds.words.length_problems`), as the encoder refuses them;
    * each representation read from files (``npz``) is read and validated as the run does
      (features finite, labels class indices unless ``labels = "encode"``, two classes or
      more, sparse arrays consistent; not standardised), then checked against the method's
      sizes and, for a method whose probes train in the engine
      (:meth:`~probemeter._method.Method.engine_probes`), against the memory budget of one
      probe, as the engine checks it (:func:`_memory_problem`).

    The datasets the package makes itself (digits, parity, fashion-mnist, ptb) and the
    features of encoders and of VAE/CNN are not built here: their sizes are checked from the
    file by ``load_experiment``, the rest when the run builds them. A transformer's or an
    SAE's options are checked by ``load_experiment`` too, against the model's config and
    tokenizer read without its weights
    (:func:`~probemeter.encoders.model_files.model_files`: heads, ``pooling = "cls"`` on a
    decoder, ``chat``, the SAE's block and ``d_in``), so the run refuses them as early.

    Args:
        max_memory: the run's GiB budget of one chunk of stacked probes (None: the device's
            default, :func:`~probemeter.training.memory.memory_budget`).

    Raises:
        ExperimentError: listing every problem found, each ``"location: message"``; of a
            representation, its first problem.
    """
    from probemeter.training.memory import memory_budget

    method, problems = experiment.method, []
    build = Build(
        experiment.run.random_state, None, experiment.run.device, False, method.reads_trees
    )
    task, inputs = experiment.task, TaskInputs(experiment.task)
    if task is not None and task.declared.reads_files:
        try:
            inputs = task_inputs(experiment)
        except ExperimentError as error:
            problems.extend(error.problems)
        else:
            if any(KINDS[rep.kind].reads == WORDS for rep in experiment.representations):
                problems.extend(_text_task_problems(inputs, method, build))
                problems.extend(length_problems(experiment.representations, inputs))
    budget = memory_budget(max_memory, resolve_device(experiment.run.device))
    failed = set()  # entries with a problem: the other layers of a sweep are not checked
    for rep in experiment.representations:
        kind = KINDS[rep.kind]
        if not issubclass(kind, FileKind) or rep.entry in failed:
            continue
        where = rep.location
        try:
            data = kind.read(rep, inputs, standardize=False)
            for family in rep.options.get("directions") or ():  # a twin: its family's probe
                data = replace(data, direction=family)
                problem = direction_problem(data, family)
                if problem:
                    raise ValueError(problem)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            failed.add(rep.entry)
            continue
        found = [
            f"{location}: {message} ({rep.described})"
            for location, message in method.check_pool(data.pool_size, data.n_classes)
        ]
        memory = _memory_problem(method, data, budget)
        found += [f"{where}: {memory}"] if memory else []
        if found:
            problems.extend(found)
            failed.add(rep.entry)
    if problems:
        raise ExperimentError(experiment.path, problems)


def _text_task_problems(inputs: TaskInputs, method: Any, build: Build) -> list[str]:
    """The problems of a text task's data (built over a stand-in column of zeros, one row per
    word or sentence) and of the method's sizes against its pool."""
    text, dataset = inputs.text, inputs.task.dataset
    if text.labels_tokens:  # labels of tokens: checked with each representation's tokens
        return []
    stand_in = np.zeros((text.n_rows, 1), dtype=np.float32)
    try:
        data = text.probe_data(
            stand_in, dataset, trees=build.trees, random_state=build.random_state
        )
    except ValueError as error:
        return [f"task: {error}"]
    pool = f"the {dataset} task's pool: {data.pool_size} rows, {data.n_classes} classes"
    return [
        f"{location}: {message} ({pool})"
        for location, message in method.check_pool(data.pool_size, data.n_classes)
    ]


def _memory_problem(method: Any, data: ProbeData, max_memory: float) -> str | None:
    """Why one probe of ``method`` on ``data`` cannot fit in ``max_memory`` GiB, as the engine
    refuses it before training (:func:`~probemeter.training.memory.check_memory_budget`, with
    the training-set sizes the method declares, :meth:`~probemeter._method.Method.engine_probes`,
    and their evaluation on every test example), or None. A method whose probes train
    elsewhere than the engine declares none and is checked when they train."""
    from probemeter.probes import probe_for
    from probemeter.probes.sparse_inputs import sparse_row_bytes
    from probemeter.training.memory import check_memory_budget

    planned = method.engine_probes(data.pool_size)
    if planned is None:
        return None
    probe = probe_for(data, planned.probe)
    row_bytes = None
    if data.is_sparse:  # a gathered sparse row, as the engine counts it
        if probe.mix or probe.span:
            return None  # refused by the engine with its own message
        width = probe.layer_shapes(data.n_features, data.n_classes)[0][1]
        row_bytes = sparse_row_bytes(data.X_train, width)
    try:
        check_memory_budget(
            probe,
            data.n_features,
            data.n_classes,
            planned.config,
            max_memory,
            sizes=planned.sizes,
            n_eval=len(data.y_test),
            per_example=True,
            shared_dev_rows=planned.shared_dev_rows,
            row_bytes=row_bytes,
        )
    except ValueError as error:
        return str(error)
    return None
