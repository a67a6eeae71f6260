"""What the tests of ``kind = "activations"`` share (importable from the tests in this folder:
pytest puts it on ``sys.path``): the experiment entry they write, the hooks of their saved
activations, and the checks every such test makes — a ``{i}`` pattern is a layer sweep, a bad
input is one clear problem (the same from ``load_experiment`` and ``run --check``), a run ends
with one curve per hook."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from probemeter.cli.main import main
from probemeter.runs.config import ExperimentError, layer_sweeps, load_experiment

#: the entry of one activations representation, then a quick curve method
ENTRY = """
[[representations]]
name = "resid"
kind = "activations"
train = "{train}"
test = "{test}"
hooks = "{hooks}"
{extra}
[method]
epsilon = 0.5
probe = []
seeds = 1
steps = 20
sizes = [10, 30]
"""

#: the residual-stream hooks of three layers, as TransformerLens names them
HOOKS = [f"blocks.{i}.hook_resid_post" for i in range(3)]


def assert_sweep_of_hooks(reps: list) -> None:
    """``reps`` are the layer sweep ``resid`` over :data:`HOOKS`: ``resid-<i>`` of layer i."""
    assert [(rep.name, rep.options["layer"], rep.options["hook"]) for rep in reps] == [
        (f"resid-{i}", i, hook) for i, hook in enumerate(HOOKS)
    ]
    assert layer_sweeps(reps) == {"resid": [(i, f"resid-{i}") for i in range(3)]}


def assert_one_clear_problem(path: Path, problem: str, capsys: pytest.CaptureFixture) -> None:
    """The experiment file ``path`` has exactly one problem, of its first representation,
    matching the regular expression ``problem``; ``run --check`` reports it alone (exit 2)."""
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert len(caught.value.problems) == 1, caught.value.problems
    assert re.search(r"^representations\[0\]" + problem, caught.value.problems[0])
    assert main(["run", str(path), "--check"]) == 2
    assert capsys.readouterr().err == f"probemeter: error: {path}: {caught.value.problems[0]}\n"


def run_curve_names(path: Path, out: Path) -> list[str]:
    """``probemeter run`` of the experiment file ``path`` into ``out`` (one process, no
    progress bar), which succeeds: the names of the curves of its ``results.json``."""
    assert main(["run", str(path), "--out", str(out), "--n-jobs", "1", "--no-progress"]) == 0
    payload = json.loads((out / path.stem / "results.json").read_text())
    return [curve["name"] for curve in payload["curves"]]
