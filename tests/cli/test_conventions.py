"""What every command shares: defaults in ``--help``, ``-q``/``-v`` with logging, shell
completion (:mod:`probemeter.cli._conventions`, :mod:`probemeter.cli.completion`)."""

import argparse
import shutil
import subprocess
import sys

import numpy as np
import pytest

from probemeter.cli._conventions import HelpFormatter, shown_default, subparsers
from probemeter.cli.completion import completion_script
from probemeter.cli.main import build_parser, main

TINY = ["--hidden", "--steps", "20", "--seeds", "1", "--sizes", "10", "100", "--n-jobs", "1"]


def _features(path, n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    np.savez(path, X=X, y=(X[:, 0] > 0).astype(int))
    return path


def _parsers():
    parser = build_parser()
    return [parser, *subparsers(parser)]


def _action_help(parser, action) -> str:
    """The help of one action as ``--help`` renders it, on one line."""
    return " ".join(parser._get_formatter()._format_action(action).split())


def test_every_parser_shows_every_default_in_its_help():
    parsers = _parsers()
    names = {parser.prog for parser in parsers}
    assert {"probemeter demo", "probemeter pareto sweep", "probemeter completion"} <= names
    skipped = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    checked = 0
    for parser in parsers:
        assert parser.formatter_class is HelpFormatter, parser.prog
        for action in parser._actions:
            shown = shown_default(action.default)
            if isinstance(action, skipped) or shown is None:
                continue
            text = _action_help(parser, action)
            flag = f"{parser.prog} {action.option_strings or action.dest}"
            assert action.help, f"{flag} has a default but no help to show it in"
            if "(default" in action.help:  # written by hand: only where argparse cannot know it
                assert text.count("(default") == 1, flag
                continue
            assert f"(default: {shown})" in text, flag
            checked += 1
    assert checked > 100


def test_help_names_the_defaults_the_issue_found_hidden(capsys):
    with pytest.raises(SystemExit):
        main(["curve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for expected in (
        "Adam updates of every probe (default: 1000)",
        "Adam learning rate; a list: a grid with weight_decay, every setting trained side by "
        "side and the one of lowest development loss chosen per size (default: 0.0001)",
        "minibatch size (default: 256)",
        "test fraction when splitting (default: 0.2)",
        "hidden widths of the MLP probe; none for a linear probe (default: 512 512)",
        "formats of every figure: png (screens, the report), pdf or svg (papers) "
        "(default: png pdf)",
    ):
        assert expected in text
    assert "(default: None)" not in text and "(default: False)" not in text


@pytest.mark.slow
def test_quiet_hides_progress_bars_and_lines_and_keeps_the_table(tmp_path, capsys):
    data = _features(tmp_path / "a.npz")
    args = ["curve", "--train", str(data), *TINY, "--epsilon", "0.5"]
    assert main([*args, "--out", str(tmp_path / "loud")]) == 0
    loud = capsys.readouterr()
    assert "a: 2 probes in" in loud.err and "wrote" in loud.err  # progress lines ...
    assert "training 2 probes:" in loud.err  # ... and the engine's tqdm bar, on stderr
    assert main([*args, "--out", str(tmp_path / "quiet"), "-q"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    assert quiet.out == loud.out and "SDL, ε=0.5" in quiet.out
    assert main(["-q", *args, "--out", str(tmp_path / "before")]) == 0  # before the command
    assert capsys.readouterr().err == ""


def test_quiet_turns_progress_off_for_a_run_and_so_transformers_bars(tmp_path, monkeypatch):
    """``-q`` reaches ``run_experiment(progress=False)``, which silences the encoders' own
    bars (transformers' included: ``probemeter.encoders.hf``)."""
    import probemeter.runs.runner as runner

    seen = {}

    def record(experiment, out, **options):
        seen.update(options)
        raise ValueError("stop here")

    monkeypatch.setattr(runner, "run_experiment", record)
    path = tmp_path / "e.toml"
    path.write_text(
        '[task]\ndataset = "digits"\n[[representations]]\nname = "pixels"\nkind = "raw"\n'
        '[method]\nkind = "curve"\nepsilon = 0.5\n'
    )
    assert main(["run", str(path), "--out", str(tmp_path), "-q"]) == 2
    assert seen["progress"] is False
    assert main(["run", str(path), "--out", str(tmp_path)]) == 2
    assert seen["progress"] is True


def test_verbose_shows_debug_and_quiet_excludes_it(tmp_path, capsys):
    data = _features(tmp_path / "a.npz")
    out = tmp_path / "run"
    args = ["curve", "--train", str(data), *TINY, "--no-progress", "--epsilon", "0.5"]
    assert main([*args, "--out", str(out), "--export", "csv", "-v"]) == 0
    err = capsys.readouterr().err
    assert f"debug: wrote {out / 'points.csv'}" in err and "a: 2 probes in" in err
    assert "debug: settings: {" in err and "'epsilon': 0.5" in err
    assert main([*args, "--out", str(out), "-q", "-v"]) == 2
    assert "-q/--quiet and -v/--verbose exclude each other" in capsys.readouterr().err


def _bash_completions(script: str, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words`` with ``script`` sourced."""
    quoted = " ".join(f"'{word}'" for word in words)
    program = f"""
source "$SCRIPT"
COMP_WORDS=({quoted})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
_shtab_probemeter
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    return subprocess.run(
        ["bash", "-c", program],
        env={"SCRIPT": script, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_completes_commands_flags_and_choices(tmp_path, capsys):
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "probemeter.bash"
    script.write_text(capsys.readouterr().out)
    assert _bash_completions(str(script), ["probemeter", "pa"]) == ["pareto"]
    assert _bash_completions(str(script), ["probemeter", "pareto", "s"]) == ["sweep"]
    assert _bash_completions(str(script), ["probemeter", "curve", "--ep"]) == ["--epsilon"]
    assert _bash_completions(str(script), ["probemeter", "completion", ""]) == ["bash", "zsh"]
    assert _bash_completions(str(script), ["probemeter", "mdl", "--form"]) == ["--format"]
    commands = set(_bash_completions(str(script), ["probemeter", ""]))
    assert {"demo", "curve", "measures", "run", "mdl", "pareto", "power", "completion"} <= commands


def test_zsh_completion_script(capsys):
    assert main(["completion", "zsh"]) == 0
    script = capsys.readouterr().out
    assert script.startswith("#compdef probemeter") and "--epsilon" in script
    if shutil.which("zsh"):
        subprocess.run(["zsh", "-n"], input=script, text=True, check=True)
    with pytest.raises(ValueError, match="shell must be one of"):
        completion_script(build_parser(), "fish")


def test_help_does_not_import_torch_or_pandas():
    code = (
        "import sys\nfrom probemeter.cli.main import main\n"
        "try:\n    main(['curve', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted({'torch', 'pandas', 'shtab', 'matplotlib'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"
