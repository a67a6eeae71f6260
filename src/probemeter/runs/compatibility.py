"""What a method can measure against what the task and the representations need: the one place
an experiment file's method is checked against the rest of the file (:func:`setup_problems`),
from the capabilities the declarations state (:class:`~probemeter._method.Method`'s class
variables and hooks, :class:`~probemeter.runs.tasks.TaskType`,
:class:`~probemeter.runs.kinds.RepresentationKind`), before any data are loaded."""

from __future__ import annotations

from probemeter._method import Method
from probemeter.data import LEARNED_POOLINGS
from probemeter.runs.kinds import FILES, KINDS, FileKind, Representation, mixes_layers
from probemeter.runs.methods import METHODS
from probemeter.runs.tasks import Task

__all__ = ["setup_problems"]

Problems = list[tuple[str, str]]


def setup_problems(
    method: Method, task: Task | None, reps: list[Representation], keeping: str | None
) -> Problems:
    """Every problem of ``method`` with ``task`` and ``reps``, as (location, message): the
    method's own checks of its setup (``check_setup``, given the task's declaration), the task
    options its probes must learn or measure (self-attention pooling, label sets), head
    selection, scalar mixes, direction twins, and the feature files' pools and sparse rows;
    ``keeping``: where the run asked to keep its probes (None: it did not)."""
    names = [rep.name for rep in reps]
    found = list(method.check_setup(task.declared if task else None, names))
    if task is not None and task.options.get("pooling") == "self-attention":
        if not method.pools_spans:
            found.append(
                (
                    "task.pooling",
                    "self-attention pooling is learned by the probes of the "
                    f"{_methods_with('pools_spans')} methods: the {method.kind} method cannot "
                    'train it; use "mean", "max" or "endpoints"',
                )
            )
    if task is not None and task.options.get("multilabel") and not method.measures_label_sets:
        found.append(
            (
                "task.multilabel",
                "label sets are measured by probes with one sigmoid per label (curve method, "
                f"mdl method's online code): the {method.kind} method needs one label per "
                "target; set multilabel = false and keep one label per target",
            )
        )
    found += _head_problems(method, task, reps)
    for rep in reps:
        pooling = getattr(rep.declared, "pooling", None)
        if pooling in LEARNED_POOLINGS and not method.pools_spans:
            found.append(
                (
                    f"representations[{rep.entry}].pooling",
                    f"{pooling!r} pooling of a text's tokens is learned by the probes of the "
                    f"{_methods_with('pools_spans')} methods: the {method.kind} method cannot "
                    'train it; use "last", "mean" or "all"',
                )
            )
    for rep in reps:
        if mixes_layers(rep):
            problem = method.layer_mix_problem(rep.name)
            found += [problem] if problem else []
    twins = [rep.name for rep in reps if rep.options.get("directions")]
    problem = method.direction_problem(twins[0]) if twins else None
    found += [problem] if problem else []
    return found + _file_problems(method, reps, keeping)


def _methods_with(capability: str) -> str:
    """The kinds of the methods with ``capability`` (a class variable of theirs), for messages."""
    kinds = [kind for kind, cls in METHODS.items() if getattr(cls, capability)]
    return ", ".join(kinds[:-1]) + (" and " if len(kinds) > 1 else "") + kinds[-1]


def _head_problems(method: Method, task: Task | None, reps: list[Representation]) -> Problems:
    """Head selection (a task whose label is each word's head) needs a method that parses
    it (:attr:`~probemeter._method.Method.parses_heads`) or reads its trees
    (:attr:`~probemeter._method.Method.reads_trees`); those methods check the rest of their
    setup themselves (``check_setup``). Neither reads feature files, which have labels of
    their own."""
    found = []
    heads = task is not None and task.declared.selects_heads()
    if heads and not (method.reads_trees or method.parses_heads):
        found.append(
            (
                "method.kind",
                'task label "arcs" (each word\'s head, unlabelled parsing) runs with the pareto '
                'method only (kind = "pareto", family = "biaffine"; Pimentel et al. §7.2): the '
                f"{method.kind} method's probes give every row one class of a fixed set, while "
                "a word's candidate heads are the words of its own sentence, which only the "
                "biaffine parsing probe scores (structural probes of the trees: kind = "
                '"structural")',
            )
        )
    if heads or method.reads_trees:
        found += [
            (
                f"representations[{rep.entry}].kind",
                f'"{rep.kind}" features have their own labels, not the sentences and heads of '
                'task label "arcs": use a word representation',
            )
            for rep in reps
            if KINDS[rep.kind].reads == FILES
        ]
    return found


def _file_problems(method: Method, reps: list[Representation], keeping: str | None) -> Problems:
    """The method against each representation read from files, from the files' headers (no
    data are loaded): its sizes within the pool, then what sparse features need
    (:class:`~probemeter.runs.kinds.FileKind`)."""
    files = [rep for rep in reps if issubclass(KINDS[rep.kind], FileKind) and rep.train]
    found = [problem for rep in files for problem in KINDS[rep.kind].pool_problems(rep, method)]
    for rep in files:
        found += KINDS[rep.kind].sparse_problems(rep, method, keeping)
    return found
