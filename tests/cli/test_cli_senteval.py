"""``probemeter senteval generate`` on a text file (tasks that need no parser)."""

import json
import subprocess
import sys

from probemeter.cli.main import main
from probemeter.cli.senteval import _TASKS
from probemeter.datasets.senteval import read_senteval
from probemeter.datasets.senteval_generate import GENERATED_TASKS, METADATA_FILE


def test_generate_from_a_text_file(tmp_path, capsys):
    words = "the quick brown fox jumps over a lazy dog near river bank today".split()
    lines = [" ".join(words[i % 5 : i % 5 + 5 + i % 8]) for i in range(60)]
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(lines) + "\n\n")
    out = tmp_path / "tasks"
    args = ["senteval", "generate", "--text", str(text), "--out", str(out)]
    assert main([*args, "--tasks", "SentLen", "BShift", "--random-state", "4"]) == 0
    captured = capsys.readouterr()  # the table on stdout, the closing line on stderr
    assert "SentLen" in captured.out and "silver labels" in captured.err
    metadata = json.loads((out / METADATA_FILE).read_text())
    assert metadata["random_state"] == 4 and metadata["n_sentences"] == 60
    assert metadata["spacy"] is None  # no parser was needed
    data = read_senteval(out, "BShift")
    assert data.classes == ("I", "O")
    assert main([*args, "--tasks", "SOMO"]) == 2
    assert "'SOMO' cannot be generated: it needs a language model" in capsys.readouterr().err


def test_the_release_recipe_is_the_default_and_each_flag_a_recorded_deviation(tmp_path, capsys):
    words = "the quick brown fox jumps over a lazy dog near river bank today".split()
    lines = [" ".join(words[i % 5 : i % 5 + 5 + i % 8]) for i in range(60)]
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(lines) + "\n")
    args = ["senteval", "generate", "--text", str(text), "--tasks", "SentLen", "BShift"]
    assert main([*args, "--out", str(tmp_path / "release")]) == 0
    assert "recipe: the release's" in capsys.readouterr().out
    release = json.loads((tmp_path / "release" / METADATA_FILE).read_text())
    assert release["deviations"] == {}
    assert release["recipe"]["split_sizes"] == [100_000, 10_000, 10_000]
    assert release["recipe"]["wc_words"] == 1000 and release["recipe"]["wc_skip_top"] == 2000
    assert main([*args, "--out", str(tmp_path / "own"), "--split-sizes", "20", "4", "2"]) == 0
    printed = capsys.readouterr().out
    assert "recipe deviates from the release: split_sizes (20, 4, 2) (release (100000" in printed
    own = json.loads((tmp_path / "own" / METADATA_FILE).read_text())
    assert own["deviations"] == {
        "split_sizes": {"release": [100_000, 10_000, 10_000], "used": [20, 4, 2]}
    }
    sizes = own["tasks"]["BShift"]["sizes"]  # tr and te at their caps, va below its own
    assert sizes["tr"] == 20 and sizes["va"] <= 4 and sizes["te"] == 2
    assert release["tasks"]["BShift"]["sizes"]["tr"] > 20


def test_the_command_names_the_generated_tasks_without_importing_datasets():
    assert _TASKS == GENERATED_TASKS
    code = (
        "import sys\nfrom probemeter.cli.main import build_parser\nbuild_parser()\n"
        "print('probemeter.datasets' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
