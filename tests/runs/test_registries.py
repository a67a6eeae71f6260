"""Tasks and representation kinds are declarations in registries, like methods: a task or a
kind defined here, in the test file alone, runs end to end through ``probemeter run``."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

import probemeter
from probemeter import _validation as valid
from probemeter._declared import option
from probemeter.cli.main import main
from probemeter.data import ProbeData
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.kinds import KINDS, Build, Representation, RepresentationKind
from probemeter.runs.methods import METHODS
from probemeter.runs.tasks import TASKS, TaskInputs, TaskType


@dataclass(frozen=True, kw_only=True)
class ThresholdTask(TaskType):
    """Three numbers per example; the class says whether the first exceeds a threshold."""

    n_train: int = option(300, check=valid.integer(20), help="pool size")
    threshold: float = option(0.0, check=valid.number(-1, 1), help="where the classes split")

    dataset = "threshold"
    summary = "a toy task: is the first of three numbers above a threshold"

    def pool_size(self) -> int:
        return self.n_train

    def views(self) -> dict[str, int | None]:
        return {"numbers": 3}

    def inputs(self, random_state: int) -> TaskInputs:
        rng = np.random.default_rng(random_state)
        X = rng.uniform(-1, 1, size=(self.n_train + 100, 3)).astype(np.float32)
        y = (X[:, 0] > self.threshold).astype(np.int64)
        n = self.n_train
        return TaskInputs(arrays={"numbers": (X[:n], y[:n], X[n:], y[n:])})


@dataclass(frozen=True, kw_only=True)
class PowerKind(RepresentationKind):
    """The task's numbers raised to a power."""

    view: str | None = option(None, check=valid.text(), help="the numeric input")
    exponent: int = option(2, check=valid.integer(1), help="the power each number is raised to")

    kind = "power-of"
    summary = "a toy kind: each number raised to an integer power"
    reads = "numeric"

    @classmethod
    def check_task(cls, rep, task, where, report):
        views = task.declared.views()
        rep = replace(rep, view=rep.view or next(iter(views)))
        if rep.view not in views:
            report(f"{where}.view", f"no input {rep.view!r}")
        return rep

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        X, y, X_test, y_test = inputs.arrays[rep.view]
        power = rep.options["exponent"]
        return ProbeData.from_arrays(X**power, y, X_test**power, y_test, name=rep.name)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(TASKS, ThresholdTask.dataset, ThresholdTask)
    monkeypatch.setitem(KINDS, PowerKind.kind, PowerKind)


EXPERIMENT = """
[run]
name = "toy"

[task]
dataset = "threshold"
n_train = 240
threshold = 0.25

[[representations]]
name = "odd"
kind = "power-of"
exponent = 3

[[representations]]
name = "even"
kind = "power-of"

[method]
kind = "curve"
epsilon = 0.5
sizes = [40, 120, 216]
seeds = 2
steps = 300
lr = 0.01
probe = []
"""


@pytest.mark.slow
def test_a_task_and_a_kind_declared_in_a_test_run_through_probemeter_run(
    registered, tmp_path, capsys
):
    path = tmp_path / "toy.toml"
    path.write_text(EXPERIMENT)
    assert main(["run", str(path), "--out", str(tmp_path / "runs"), "-q", "--n-jobs", "1"]) == 0
    results = json.loads((tmp_path / "runs" / "toy" / "results.json").read_text())
    task = results["experiment"]["task"]
    assert task == {"dataset": "threshold", "n_train": 240, "threshold": 0.25}
    reps = {rep["name"]: rep for rep in results["experiment"]["representations"]}
    assert reps["odd"]["exponent"] == 3 and reps["even"]["exponent"] == 2
    assert reps["odd"]["view"] == "numbers"  # filled in by the kind's check against the task
    final = {curve["name"]: _final_loss(curve["points"]) for curve in results["curves"]}
    assert set(final) == {"odd", "even"}
    # x³ keeps the order of x, so the threshold stays a threshold on the first feature; x²
    # folds the two signs together, and a linear probe cannot undo it
    assert final["odd"] < final["even"]


def _final_loss(points: dict[str, list[float]]) -> float:
    """Mean test loss over seeds at the largest size."""
    largest = max(points["n"])
    return float(np.mean([loss for n, loss in zip(points["n"], points["loss"]) if n == largest]))


def test_a_declared_task_and_kind_get_the_readers_checks(registered, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        EXPERIMENT.replace("threshold = 0.25", "threshold = 2\ncolour = 1").replace(
            "exponent = 3", "exponent = 0"
        )
    )
    with pytest.raises(ExperimentError) as raised:
        load_experiment(path)
    problems = raised.value.problems
    assert "task.colour: unknown key (known: dataset, n_train, threshold)" in problems
    assert any(p.startswith("task.threshold: must be") for p in problems)
    assert any(p.startswith("representations[0].exponent: must be") for p in problems)


def test_keys_follow_the_declarations(registered, tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(EXPERIMENT)
    experiment = load_experiment(path)
    assert experiment.task.key_dict() == {"dataset": "threshold", "n_train": 240, "threshold": 0.25}
    odd, even = experiment.representations
    assert odd.key_dict()["exponent"] == 3 and even.key_dict()["exponent"] == 2


def _sources() -> list[tuple[str, str]]:
    """Every module of the runs and the command line, subpackages included (``runs/kinds/``),
    as (path relative to the package, source)."""
    root = Path(probemeter.__file__).parent
    return [
        (str(path.relative_to(root)), path.read_text())
        for folder in ("runs", "cli")
        for path in sorted((root / folder).rglob("*.py"))
    ]


def test_no_task_dataset_or_kind_string_is_compared_outside_the_registries():
    """The runs and the command line ask declarations, never names: no ``dataset == "..."``
    or ``kind in (...)`` comparison is left in their source."""
    pattern = re.compile(r"""\b(dataset|kind) *(==|!=|\bin\b|\bnot in\b) *[("']""")
    found = [
        f"{path}:{number}: {line.strip()}"
        for path, source in _sources()
        for number, line in enumerate(source.splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_no_registered_name_is_written_outside_its_declaration():
    """A task's dataset, a representation kind's and a method's name is written once, in its
    declaration (``dataset = "..."``, ``kind = "..."`` in the class body); the runs and the
    command line take it from there (``TransformerKind.kind``) or from the registry, so that
    neither compares with nor builds a name the registries could lose. The names come from
    ``TASKS``, ``KINDS`` and ``METHODS``, so a new entry is covered with no edit here. Strings
    spelled like a name that name something else are not names: an option read by subscript
    (``options["sae"]``, though not a registry's ``KINDS["sae"]``), a subcommand
    (``add_parser("curve")``) and a file (``out / "power"``)."""
    names = {*TASKS, *KINDS, *METHODS}
    found = [
        f"{path}:{number}: {source.splitlines()[number - 1].strip()}"
        for path, source in _sources()
        for number in _names_written(source, names)
    ]
    assert found == []


def test_the_guard_sees_names_written_and_passes_names_declared():
    source = """
class TransformerKind:
    kind = "transformer"

def features(rep, options, out, commands):
    dense = replace(rep, kind="transformer")
    twin = Representation("twin", "transformer")
    if method != "curve" or rep.kind in ("sae", "npz"):
        cls = KINDS["sae"]
    kind = "glove"
    return options["sae"], commands.add_parser("curve"), out / "power", TransformerKind.kind
"""
    assert _names_written(source, {*KINDS, *METHODS}) == [6, 7, 8, 8, 8, 9, 10]


def _names_written(source: str, names: set[str]) -> list[int]:
    """The lines of ``source`` that write one of ``names`` as a string, in order, once per
    string; a declaration's own name (``kind = "..."`` or ``dataset = "..."`` in a class body)
    and strings that only share a name's spelling are left out (see the test above)."""
    tree = ast.parse(source)
    declared = {
        id(statement)
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef)
        for statement in cls.body
        if isinstance(statement, ast.Assign)
        and [getattr(target, "id", None) for target in statement.targets] in (["kind"], ["dataset"])
    }
    return sorted(
        child.lineno
        for node in ast.walk(tree)
        for child in ast.iter_child_nodes(node)
        if isinstance(child, ast.Constant)
        and child.value in names
        and id(node) not in declared
        and not _shares_the_spelling(child, node)
    )


def _shares_the_spelling(node: ast.Constant, parent: ast.AST) -> bool:
    """Whether ``node`` is a string spelled like a name that names something else: an option
    read by subscript (not a registry's), a subcommand or a file."""
    if isinstance(parent, ast.Subscript):
        return getattr(parent.value, "id", None) not in ("TASKS", "KINDS", "METHODS")
    if isinstance(parent, ast.Call):
        return getattr(parent.func, "attr", None) == "add_parser" and parent.args[:1] == [node]
    return isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div)


@pytest.mark.parametrize("registry", [TASKS, KINDS, METHODS], ids=["tasks", "kinds", "methods"])
def test_every_declared_option_has_a_check_and_help(registry):
    for cls in registry.values():
        assert cls.summary
        for opt in cls.options():
            assert opt.help and opt.check is not None, (cls, opt.name)
