"""Experiment files: one TOML file describes a whole probing study.

A file has four tables::

    [run]                       # optional: name, random_state, device, save_probes
    [task]                      # dataset = one of TASKS, and its options
    [[representations]]         # at least one: name, kind = one of KINDS, and its options
    [method]                    # kind = one of METHODS, and its options

Every option of a task, a representation kind and a method is declared once, in its class
(:data:`~probemeter.runs.tasks.TASKS`, :data:`~probemeter.runs.kinds.KINDS`,
:data:`~probemeter.runs.methods.METHODS`), with its default, check and help; this reader, the
command line and the docs' experiment-file reference (``docs/experiment-files.md``) follow
from those declarations. :func:`load_experiment` checks the whole file before anything is
trained and reports *every* problem at once, each with its TOML location, in one
:class:`ExperimentError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from probemeter import _validation as valid
from probemeter._declared import REQUIRED
from probemeter._method import Method
from probemeter.runs.kinds import FILES, KINDS, FileKind, Representation
from probemeter.runs.methods import METHODS
from probemeter.runs.tasks import TASKS, Task
from probemeter.runs.toml_text import read_toml

__all__ = [
    "KINDS",
    "METHODS",
    "TASKS",
    "Experiment",
    "ExperimentError",
    "Method",
    "Representation",
    "RunSettings",
    "Task",
    "layer_sweeps",
    "load_experiment",
    "pipeline_warnings",
    "save_probes_problem",
]


class ExperimentError(ValueError):
    """An experiment file with problems; ``problems`` lists each as ``"location: message"``.

    Its message names the file: one problem is one line, ``"FILE: location: message"``;
    several are a line ``"FILE: N problems"`` followed by one indented line each."""

    def __init__(self, path: str | Path, problems: list[str]) -> None:
        self.problems = tuple(problems)
        if len(problems) == 1:
            super().__init__(f"{path}: {problems[0]}")
            return
        count = f"{len(problems)} problem" + ("s" if len(problems) != 1 else "")
        super().__init__(f"{path}: {count}\n" + "\n".join(f"  {p}" for p in problems))


_string = valid.text().problem
_boolean = valid.boolean().problem


def _integer(low: int) -> Callable[[Any], str | None]:
    return valid.integer(low).problem


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    return valid.one_of(*choices).problem


@dataclass(frozen=True)
class RunSettings:
    """``[run]``: the run folder's name, the global seed, the device, and whether each unit's
    trained probes are stored beside it (``save_probes``; not part of any unit's key)."""

    name: str
    random_state: int = 0
    device: str = "auto"
    save_probes: bool = False


def save_probes_problem(method: Method) -> str | None:
    """Why a run of ``method`` cannot save its probes here (the method keeps none, or
    safetensors is missing), or None."""
    from probemeter.probes.saved import safetensors_problem

    if not method.keeps_probes:
        keeping = " and ".join(repr(kind) for kind, cls in METHODS.items() if cls.keeps_probes)
        return f"only {keeping} runs keep their probes; method {method.kind!r} does not"
    return safetensors_problem()


@dataclass(frozen=True)
class Experiment:
    """A parsed, validated experiment file."""

    path: Path
    run: RunSettings
    task: Task | None
    representations: tuple[Representation, ...]
    method: Method

    def to_dict(self) -> dict[str, Any]:
        """The configuration as JSON values, defaults filled in (for results files)."""
        return {
            "path": str(self.path),
            "run": {
                "name": self.run.name,
                "random_state": self.run.random_state,
                "device": self.run.device,
                "save_probes": self.run.save_probes,
            },
            "task": None
            if self.task is None
            else {"dataset": self.task.dataset, **self.task.options},
            "representations": [rep.to_dict() for rep in self.representations],
            "method": self.method.to_dict(),
        }


class _Reader:
    """Reads keys of TOML tables, collecting every problem with its location."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, where: str, message: str) -> None:
        """Record a problem, once: an entry expanded into several (``random_init = "also"``)
        reports what they share a single time."""
        problem = f"{where}: {message}"
        if problem not in self.problems:
            self.problems.append(problem)

    def extend(self, problems: Sequence[str]) -> None:
        """Record problems written ``"location: message"``, each once."""
        for problem in problems:
            if problem not in self.problems:
                self.problems.append(problem)

    def table(self, document: Mapping[str, Any], key: str, required: bool) -> dict[str, Any]:
        value = document.get(key)
        if value is None:
            if required:
                self.add(key, "missing (a required table)")
            return {}
        if not isinstance(value, dict):
            self.add(_join("", key), f"must be a table; got {value!r}")
            return {}
        return value

    def unknown(self, where: str, table: Mapping[str, Any], allowed: set[str]) -> None:
        for key in table:
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                self.add(_join(where, key), f"unknown key (known: {known})")

    def get(
        self,
        where: str,
        table: Mapping[str, Any],
        key: str,
        check: Callable[[Any], str | None],
        default: Any = REQUIRED,
    ) -> Any:
        """The checked value of ``table[key]``, its default, or ``None`` after a problem."""
        if key not in table:
            if default is REQUIRED:
                self.add(_join(where, key), "missing (required)")
                return None
            return default
        problem = check(table[key])
        if problem:
            self.add(_join(where, key), problem)
            return None
        return table[key]


def _join(where: str, key: str) -> str:
    """``where.key``; a key that is not plain printable text is quoted (a line break in a key
    must not split its problem over two lines)."""
    shown = key if key.isprintable() and key.strip() == key and key else repr(key)
    return f"{where}.{shown}" if where else shown


def load_experiment(path: str | Path, *, save_probes: bool = False) -> Experiment:
    """Parse and validate the experiment file ``path``.

    The file's contents beyond their headers (text files of the task, feature files' arrays)
    are checked by :func:`probemeter.runs.check.check_data`, which ``probemeter run --check``
    calls after this.

    Args:
        save_probes: keep every unit's probes whatever ``[run] save_probes`` says (what
            ``probemeter run --save-probes`` asks); its problems are then reported at
            ``--save-probes``.

    Raises:
        ExperimentError: listing every problem found (a missing or unreadable file, TOML
            syntax with its line and a plain explanation, unknown or missing keys, wrong types
            or values, unknown datasets or kinds, missing feature files, sizes outside a pool,
            too many components, duplicate names), each as ``"location: message"``.
    """
    path = Path(path)
    try:
        document = read_toml(path)
    except ValueError as error:
        raise ExperimentError(path, [str(error)]) from None
    reader = _Reader()
    reader.unknown("", document, {"run", "task", "representations", "method"})
    run = _read_run(reader, reader.table(document, "run", required=False), path)
    keeping = "run.save_probes"
    if save_probes and not run.save_probes:
        run, keeping = replace(run, save_probes=True), "--save-probes"
    representations = _read_representations(reader, document.get("representations"), path)
    needs_task = "task" in document or any(
        KINDS[rep.kind].reads != FILES for rep in representations
    )
    task = _read_task(reader, reader.table(document, "task", required=needs_task), path)
    method = _read_method(reader, reader.table(document, "method", required=True))
    problem = save_probes_problem(method) if run.save_probes and method else None
    if problem:
        reader.add(keeping, problem)
    if run.save_probes and task is not None and task.options.get("multilabel"):
        reader.add(keeping, "probes of label sets (multilabel) cannot be kept yet")
    if task is not None:
        representations = _check_against_task(reader, task, representations, method)
    _check_method(reader, method, task, representations)
    _check_files(reader, method, run, representations, keeping)
    if reader.problems:
        raise ExperimentError(path, reader.problems)
    return Experiment(path, run, task, tuple(representations), method)


def _check_method(
    reader: _Reader, method: Method | None, task: Task | None, reps: list[Representation]
) -> None:
    """Checks of the method against the task and the representations: what its probes can
    measure (the capabilities :class:`~probemeter._method.Method` declares) against what the
    task and the representations need."""
    if method is None:
        return
    names = [rep.name for rep in reps]
    for where, message in method.check_setup(task.declared if task else None, names):
        reader.add(where, message)
    if task is not None and task.options.get("pooling") == "self-attention":
        if not method.pools_spans:
            spans = _methods_with("pools_spans")
            reader.add(
                "task.pooling",
                f"self-attention pooling is learned by the probes of the {spans} methods: the "
                f'{method.kind} method cannot train it; use "mean", "max" or "endpoints"',
            )
    if task is not None and task.options.get("multilabel"):
        if not method.measures_label_sets:
            reader.add(
                "task.multilabel",
                "label sets are measured by probes with one sigmoid per label (curve method, "
                f"mdl method's online code): the {method.kind} method needs one label per "
                "target; set multilabel = false and keep one label per target",
            )
    _check_heads(reader, method, task, reps)
    for rep in reps:
        if rep.options.get("combine") == "scalar-mix":
            problem = method.layer_mix_problem(rep.name)
            if problem:
                reader.add(*problem)


def _methods_with(capability: str) -> str:
    """The kinds of the methods with ``capability`` (a class variable of theirs), for messages."""
    kinds = [kind for kind, cls in METHODS.items() if getattr(cls, capability)]
    return ", ".join(kinds[:-1]) + (" and " if len(kinds) > 1 else "") + kinds[-1]


def _check_heads(
    reader: _Reader, method: Method, task: Task | None, reps: list[Representation]
) -> None:
    """Head selection (a task whose label is each word's head) needs a method that parses
    it (:attr:`~probemeter._method.Method.parses_heads`) or reads its trees
    (:attr:`~probemeter._method.Method.reads_trees`); those methods check the rest of their
    setup themselves (``check_setup``). Neither reads feature files, which have labels of
    their own."""
    heads = task is not None and task.declared.selects_heads()
    if heads and not (method.reads_trees or method.parses_heads):
        reader.add(
            "method.kind",
            'task label "arcs" (each word\'s head, unlabelled parsing) runs with the '
            'pareto method only (kind = "pareto", family = "biaffine"; Pimentel et al. §7.2): '
            f"the {method.kind} method's probes give every row one class of a fixed set, "
            "while a word's candidate heads are the words of its own sentence, which only "
            "the biaffine parsing probe scores (structural probes of the trees: kind = "
            '"structural")',
        )
    if heads or method.reads_trees:
        for rep in reps:
            if KINDS[rep.kind].reads == FILES:
                reader.add(
                    f"representations[{rep.entry}].kind",
                    f'"{rep.kind}" features have their own labels, not the sentences and '
                    'heads of task label "arcs": use a word representation',
                )


def _check_files(
    reader: _Reader,
    method: Method | None,
    run: RunSettings,
    reps: list[Representation],
    keeping: str = "run.save_probes",
) -> None:
    """The method against each representation read from files, from the files' headers (no
    data are loaded): its sizes within the pool, then what sparse features need
    (:class:`~probemeter.runs.kinds.FileKind`); kept probes are asked for at ``keeping``."""
    if method is None:
        return
    files = [rep for rep in reps if issubclass(KINDS[rep.kind], FileKind) and rep.train]
    for rep in files:
        for location, message in KINDS[rep.kind].pool_problems(rep, method):
            reader.add(location, message)
    for rep in files:
        sparse = KINDS[rep.kind].sparse_problems(rep, method, keeping if run.save_probes else None)
        for location, message in sparse:
            reader.add(location, message)


def _read_run(reader: _Reader, table: dict[str, Any], path: Path) -> RunSettings:
    reader.unknown("run", table, {"name", "random_state", "device", "save_probes"})
    name = reader.get("run", table, "name", _string, path.stem)
    if name is not None and ("/" in name or "\\" in name or name in (".", "..")):
        reader.add("run.name", f"must be a plain folder name; got {name!r}")
    random_state = reader.get("run", table, "random_state", _integer(0), 0)
    device = reader.get("run", table, "device", _one_of("auto", "cpu", "cuda"), "auto")
    if device == "cuda" and not torch.cuda.is_available():
        reader.add("run.device", "'cuda' but CUDA is not available here; use 'auto' or 'cpu'")
    save_probes = reader.get("run", table, "save_probes", _boolean, False)
    return RunSettings(name or path.stem, random_state or 0, device or "auto", bool(save_probes))


def _read_task(reader: _Reader, table: dict[str, Any], path: Path) -> Task | None:
    """``[task]``: its dataset's declared options checked, files made absolute (relative to
    the experiment file) and checked; None when the task is unusable."""
    if not table:
        return None
    dataset = reader.get("task", table, "dataset", _one_of(*TASKS))
    if dataset is None:
        return None
    declaration = TASKS[dataset]
    reader.unknown("task", table, {"dataset", *(opt.name for opt in declaration.options())})
    declared, problems = declaration.from_values(table)
    if problems:
        reader.extend(problems)
        return None
    options = declared.values()
    for key in declaration.paths:
        if options[key] is not None:
            options[key] = str((path.parent / options[key]).resolve())
    task = Task(dataset, options)
    for where, message in task.declared.path_problems():
        reader.add(where, message)
    return task


def pipeline_warnings(experiment: Mapping[str, Any]) -> list[str]:
    """Why some scores of an experiment (its :meth:`Experiment.to_dict`) are not comparable:
    a task whose labels are silver, predicted by a spaCy pipeline
    (:attr:`~probemeter.runs.tasks.TaskType.silver_pipeline`: ``ptb``), probed through that
    same pipeline's tok2vec layer (a ``spacy`` representation): probes on it recover the
    pipeline's own decisions and score higher than the representation's grasp of the
    property would warrant. One line per such representation."""
    task = experiment.get("task") or {}
    declaration = TASKS.get(task.get("dataset"))
    pipeline = None if declaration is None else declaration.silver_pipeline
    if pipeline is None:
        return []
    return [
        f"{rep['name']!r} is the tok2vec layer of {pipeline}, the spaCy pipeline "
        f"that produced the task's silver {task.get('label', 'upos')} labels: its scores are "
        "inflated (the labels were predicted from these features); compare it with other "
        "representations with caution"
        for rep in experiment.get("representations", ())
        if rep.get("kind") in KINDS and KINDS[rep["kind"]].pipeline == pipeline
    ]


def layer_sweeps(representations: Sequence[Representation]) -> dict[str, list[tuple[int, str]]]:
    """The layer sweeps among ``representations``: entry name → ``(layer, name)`` pairs."""
    sweeps: dict[str, list[tuple[int, str]]] = {}
    for rep in representations:
        if rep.sweep is not None:
            sweeps.setdefault(rep.sweep, []).append((rep.options["layer"], rep.name))
    return sweeps


def _read_representations(reader: _Reader, entries: Any, path: Path) -> list[Representation]:
    if entries is None:
        reader.add("representations", "missing (at least one [[representations]] entry)")
        return []
    if not isinstance(entries, list) or not entries:
        reader.add("representations", "must be a non-empty array of tables [[representations]]")
        return []
    found: list[Representation] = []
    names: dict[str, int] = {}
    generated: set[str] = set()  # names made by expanding a layer sweep (NAME-3)
    for index, entry in enumerate(entries):
        start = len(found)
        _read_entry(reader, index, entry, path, found, names, generated)
        found[start:] = [replace(rep, entry=index) for rep in found[start:]]
    expanded = [rep.name for rep in found]
    for twice in sorted(n for n in generated if expanded.count(n) > 1):
        reader.add("representations", f"layer {twice!r} names two representations; rename one")
    return found


def _read_entry(
    reader: _Reader,
    index: int,
    entry: Any,
    path: Path,
    found: list[Representation],
    names: dict[str, int],
    generated: set[str],
) -> None:
    """Entry ``index`` of ``[[representations]]``: its representations appended to ``found``
    (a layer sweep gives several), its name to ``names``, the names its sweep made to
    ``generated``; problems to ``reader``."""
    where = f"representations[{index}]"
    if not isinstance(entry, dict):
        reader.add(where, f"must be a table; got {entry!r}")
        return
    name = reader.get(where, entry, "name", _string)
    if name in names:
        reader.add(f"{where}.name", f"{name!r} is already representations[{names[name]}]")
    elif name is not None:
        names[name] = index
    kind = reader.get(where, entry, "kind", _one_of(*KINDS))
    declaration = None if kind is None else KINDS[kind]
    allowed = {"name", "kind", *(opt.name for opt in declaration.options())} if kind else entry
    reader.unknown(where, entry, set(allowed))
    if declaration is None or name is None:
        return
    declared, problems = declaration.from_values(entry, where=lambda opt: f"{where}.{opt.name}")
    reader.extend(problems)
    refused = declaration.refused(entry)
    reps = declared.representations(name, where, path.parent, refused, reader.add)
    generated.update(rep.name for rep in reps if rep.name != name)
    found.extend(reps)


def _read_method(reader: _Reader, table: dict[str, Any]) -> Method | None:
    """The ``[method]`` table; None when its kind or any option is unusable."""
    kind = reader.get("method", table, "kind", _one_of(*METHODS), "curve")
    if kind is None:
        return None
    cls = METHODS[kind]
    reader.unknown("method", table, {"kind", *(opt.name for opt in cls.options())})
    method, problems = cls.from_values(table)
    reader.problems.extend(problems)  # with problems the file is rejected; the method is
    return method  # still checked against the task, to report every problem at once


def _check_against_task(
    reader: _Reader, task: Task, representations: list[Representation], method: Method | None
) -> list[Representation]:
    """Checks that need the task's pool size and inputs (no data are loaded): the method's
    sizes within the pool, and each representation against the task (its kind's
    :meth:`~probemeter.runs.kinds.RepresentationKind.check_task`); returns the
    representations with what the task decides filled in (a default view, a pooling)."""
    pool = task.pool_size
    if pool is not None and method is not None:
        for where, message in method.check_pool(pool):
            reader.add(where, message)
    return [
        KINDS[rep.kind].check_task(rep, task, f"representations[{rep.entry}]", reader.add)
        for rep in representations
    ]
