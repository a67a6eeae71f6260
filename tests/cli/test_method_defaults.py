"""Each method's defaults are declared once, on its dataclass: the experiment-file reader and
the command line must produce exactly the dataclass's defaults (Redesign: defaults written
once)."""

from pathlib import Path

import pytest

from probemeter.cli._options import method_from_args
from probemeter.cli.main import build_parser
from probemeter.runs.config import load_experiment
from probemeter.runs.methods import METHODS

#: values for the options without a default, and the command line of each method
REQUIRED = {
    "curve": {"epsilon": 0.25},
    "mdl": {},
    "pareto": {},
    "power": {"baseline": "pixels"},
    "switching": {},
    "structural": {},
    "k-sparse": {},
}
COMMANDS = {
    "curve": ["curve", "--train", "a.npz", "--epsilon", "0.25"],
    "mdl": ["mdl", "a.npz"],
    "pareto": ["pareto", "sweep", "--train", "a.npz"],
    "power": ["power", "--a", "a.npz"],
    "switching": ["switching", "a.npz"],
}
#: methods of experiment files only: structural probes need the trees of a conllu or ptb task;
#: k-sparse probes are run from experiment files (or ``k_sparse_probes`` in Python)
EXPERIMENT_ONLY = {"structural", "k-sparse"}
#: options a command sets from its own inputs instead of a flag
FIXED = {
    "mdl": {"control": True},
    "power": {"baseline": "pixels", "probe": ()},
    # a layer verdict's ranking and the monitor metrics' positive class: experiment files only
    "curve": {"choose_by": "SDL", "positive": None},
    # the biaffine family parses sentences: experiment files only, no flags on feature files
    "pareto": {
        name: METHODS["pareto"].option_named(name).default
        for name in METHODS["pareto"].PARSER_OPTIONS
    },
}

EXPERIMENT = """
[task]
dataset = "{dataset}"
[[representations]]
name = "pixels"
kind = "raw"
[[representations]]
name = "pca-8"
kind = "pca"
n_components = 8
[method]
kind = "{kind}"
{required}
"""


def _toml(value):
    return f'"{value}"' if isinstance(value, str) else repr(value)


@pytest.mark.parametrize("kind", sorted(METHODS))
def test_experiment_file_defaults_are_the_dataclass_defaults(kind, tmp_path):
    cls = METHODS[kind]
    required = "\n".join(f"{key} = {_toml(value)}" for key, value in REQUIRED[kind].items())
    control = "control = true" if kind == "mdl" else ""
    words = kind in ("mdl", "structural")
    dataset = "ptb" if words else "digits"
    path = tmp_path / f"{kind}.toml"
    text = EXPERIMENT.format(dataset=dataset, kind=kind, required=required + "\n" + control)
    if kind == "structural":  # the trees of head selection
        text = text.replace('dataset = "ptb"', 'dataset = "ptb"\nlabel = "arcs"')
    if words:  # word representations of the text task
        text = text.replace('kind = "raw"', 'kind = "glove"').replace(
            'kind = "pca"\nn_components = 8', 'kind = "spacy"'
        )
    path.write_text(text)
    method = load_experiment(path).method
    assert method == cls(**REQUIRED[kind])
    for opt in cls.options():
        if not opt.required:
            assert getattr(method, opt.name) == opt.default, opt.name


def test_every_method_has_a_command_or_is_of_experiment_files_only():
    assert set(METHODS) == set(COMMANDS) | EXPERIMENT_ONLY


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_command_line_defaults_are_the_dataclass_defaults(kind):
    cls = METHODS[kind]
    args = build_parser().parse_args(COMMANDS[kind])
    fixed = {**REQUIRED[kind], **FIXED.get(kind, {})}
    assert method_from_args(cls, args, fixed=fixed) == cls(**REQUIRED[kind])
    flags = {opt.name for opt in cls.options()} - set(fixed)
    for name in flags:  # the flag exists and its default is the field's default
        assert getattr(args, name) == cls.option_named(name).default, name


def test_a_bad_flag_is_named_in_the_error(capsys):
    from probemeter.cli.main import main

    assert main(["pareto", "sweep", "--train", str(Path("a.npz")), "--penalties", "-1"]) == 2
    assert "--penalties: must be an integer >= 0; got -1" in capsys.readouterr().err
