"""``probemeter run --check`` reads the model's config and tokenizer (offline, without its
weights) and refuses, before anything is encoded, what the model cannot give: ``heads`` beyond
its heads, ``chat = true`` on a tokenizer without a chat template, ``pooling = "cls"`` on a
decoder, an SAE on a block the model does not have or whose ``d_in`` is not its site's width.
The run refuses the same, before it loads weights, each problem once; every problem of a file
is listed at once. Once ``--check`` said "experiment file OK" to each, and the run refused
after encoding (an SAE's block: twice, once for its latents and once for its dense site)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from tiny_models import HIDDEN, make_tiny_bert, make_tiny_decoder

import probemeter.runs.kinds.sae as sae_kind
import probemeter.runs.kinds.words as kinds
from probemeter.cli.main import main

transformers = pytest.importorskip("transformers")

#: a small chat template
CHAT = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"


def _sae(folder: Path, hook: str, d_in: int = HIDDEN) -> Path:
    """A SAELens SAE (random weights) on ``hook``, saved to ``folder``."""
    sae_lens = pytest.importorskip("sae_lens", reason="sae-lens is not installed")
    from sae_lens.saes.sae import SAEMetadata

    config = sae_lens.StandardSAEConfig(d_in=d_in, d_sae=64, metadata=SAEMetadata(hook_name=hook))
    sae_lens.StandardSAE(config).save_model(folder)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama (2 blocks, 4 heads, hidden size 32), a copy whose tokenizer has a chat
    template, and a texts file."""
    root = tmp_path_factory.mktemp("check-models")
    make_tiny_decoder(root / "llama", "llama")
    make_tiny_decoder(root / "chat", "llama")
    tokenizer = transformers.AutoTokenizer.from_pretrained(root / "chat")
    tokenizer.chat_template = CHAT
    tokenizer.save_pretrained(root / "chat")
    rows = [(f"text {i}", ("pos", "neg")[i % 2], "test" if i >= 18 else "train") for i in range(24)]
    pd.DataFrame(rows, columns=["text", "label", "split"]).to_csv(root / "texts.csv", index=False)
    return root


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a model's weights are loaded or a word is encoded."""

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded or run")

    monkeypatch.setattr(kinds, "_layer_features", started)
    monkeypatch.setattr(kinds, "_transformer", started)
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", started)


def _experiment(folder: Path, models: Path, entries: list[str], task: str = "") -> Path:
    """In ``folder``, a texts task on the texts of ``models`` (``task``: more of its options)
    with representations of ``entries`` (their options), and a quick curve."""
    reps = "".join(
        f'[[representations]]\nname = "r{i}"\nbatch_size = 8\n{entry}\n'
        for i, entry in enumerate(entries)
    )
    path = folder / "experiment.toml"
    path.write_text(
        f'[run]\nname = "check"\n[task]\ndataset = "texts"\npath = "{models / "texts.csv"}"\n'
        f'split_column = "split"\n{task}\n{reps}'
        "[method]\nepsilon = 0.5\nsizes = [4, 8]\nprobe = []\nseeds = 1\nsteps = 5\n"
    )
    return path


def _llama(models: Path, options: str, model: str = "llama") -> str:
    return f'kind = "transformer"\nmodel = "{models / model}"\nlayer = 1\n{options}'


def _sae_entry(models: Path, sae: Path) -> str:
    return f'kind = "sae"\nmodel = "{models / "llama"}"\nsae = "{sae}"'


#: name -> (the entry's options after kind/model, the task's options, words of the one line)
CASES = {
    "heads beyond the model's": (
        'site = "heads"\nheads = [0, 7]',
        "",
        ["representations[0].heads: 7 beyond the heads of", "it has 4 (0..3)"],
    ),
    "chat without a chat template": (
        "",
        "chat = true",
        ["task.chat: the tokenizer of", "llama' has no chat template"],
    ),
    "pooling cls on a decoder": (
        'pooling = "cls"',
        "",
        ["representations[0].pooling: 'cls' reads the first token", "decoder-only", "'last'"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_check_refuses_what_the_model_cannot_give(case, models, tmp_path, nothing_runs, capsys):
    options, task, words = CASES[case]
    path = _experiment(tmp_path, models, [_llama(models, options)], task)
    assert main(["run", str(path), "--check"]) == 2
    out, err = capsys.readouterr()
    assert "experiment file OK" not in out
    assert err.startswith(f"probemeter: error: {path}: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, (word, err)


@pytest.mark.parametrize(
    ("hook", "d_in", "words"),
    [
        (
            "blocks.5.hook_resid_post",
            HIDDEN,
            ["representations[0].sae: the SAE reads blocks.5.hook_resid_post", "has 2 blocks"],
        ),
        (
            "blocks.1.hook_resid_post",
            48,
            ["representations[0].sae: the SAE takes d_in = 48", "'resid_post'", "has 32"],
        ),
        (
            "blocks.0.attn.hook_z",
            16,
            ["representations[0].sae: the SAE takes d_in = 16", "'heads'", "has 32"],
        ),
    ],
    ids=["a block beyond the model's", "d_in of another model", "d_in of hook_z"],
)
@pytest.mark.parametrize("check", [True, False], ids=["--check", "run"])
def test_an_sae_of_another_model_is_refused_once_before_encoding(
    hook, d_in, words, check, models, tmp_path, nothing_runs, capsys
):
    """``--check`` and the run alike: one line, before the model is loaded (the run said it
    after encoding, twice for a block)."""
    path = _experiment(tmp_path, models, [_sae_entry(models, _sae(tmp_path / "sae", hook, d_in))])
    flags = ["--check"] if check else ["--out", str(tmp_path / "runs"), "--n-jobs", "1"]
    assert main(["run", str(path), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"probemeter: error: {path}: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, (word, err)


def test_every_problem_is_listed_at_once(models, tmp_path, nothing_runs, capsys):
    entries = [
        _llama(models, 'site = "heads"\nheads = [4]'),
        _llama(models, 'pooling = "cls"'),
        _sae_entry(models, _sae(tmp_path / "sae", "blocks.2.hook_resid_post")),
    ]
    path = _experiment(tmp_path, models, entries, "chat = true")
    assert main(["run", str(path), "--check"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"probemeter: error: {path}: 4 problems", lines
    located = sorted(line.split(":")[0].strip() for line in lines[1:])
    assert located == [
        "representations[0].heads",
        "representations[1].pooling",
        "representations[2].sae",
        "task.chat",
    ]


def test_what_the_model_can_give_passes(models, tmp_path, nothing_runs, capsys):
    """Heads within the model's, chat with a template, and SAEs of the model's width at its
    blocks pass, still without loading any weights."""
    entries = [
        _llama(models, 'site = "heads"\nheads = [0, 3]', model="chat"),
        _sae_entry(models, _sae(tmp_path / "sae", "blocks.1.hook_resid_post")),
        _sae_entry(models, _sae(tmp_path / "z", "blocks.0.attn.hook_z")),
    ]
    entries[1:] = [
        entry.replace(str(models / "llama"), str(models / "chat")) for entry in entries[1:]
    ]
    path = _experiment(tmp_path, models, entries, "chat = true")
    assert main(["run", str(path), "--check"]) == 0, capsys.readouterr().err
    assert "experiment file OK" in capsys.readouterr().out


def test_cls_passes_on_an_encoder(tmp_path, models, nothing_runs, capsys):
    """``pooling = "cls"`` is refused on decoders only: the tiny BERT's first token is its
    [CLS]."""
    bert = make_tiny_bert(tmp_path / "bert")
    entry = f'kind = "transformer"\nmodel = "{bert}"\nlayer = 1\npooling = "cls"'
    path = _experiment(tmp_path, models, [entry])
    assert main(["run", str(path), "--check"]) == 0, capsys.readouterr().err


def test_a_run_refuses_a_missing_block_once_when_the_config_was_not_at_hand(
    models, tmp_path, monkeypatch, capsys
):
    """Where the model's config is not at hand when the file is read (a Hub model the run
    downloads), the run's own refusal after encoding names the missing block once, not once
    for the latents and once for their dense site."""
    monkeypatch.setattr(sae_kind, "model_files", lambda model: None)
    path = _experiment(
        tmp_path, models, [_sae_entry(models, _sae(tmp_path / "sae", "blocks.5.hook_mlp_out"))]
    )
    flags = ["--out", str(tmp_path / "runs"), "--n-jobs", "1", "--no-progress"]
    assert main(["run", str(path), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("layer 5 does not exist") == 1, err
    assert err.startswith(f"probemeter: error: {path}: representations[0]: layer 5"), err
    assert err.count("\n") == 1, err
