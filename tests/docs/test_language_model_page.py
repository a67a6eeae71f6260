"""The page "Probe a language model" followed top to bottom: its script builds the tiny model,
the SAE and the texts file, and the experiment file it shows checks and runs."""

import json
import re
from pathlib import Path

import pytest

from probemeter.cli.main import main
from probemeter.datasets.surface import SURFACE_FLOORS
from probemeter.encoders.sites import SITES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "language-models.md"

pytest.importorskip("transformers")
pytest.importorskip("sae_lens", reason="sae-lens is not installed")


def test_the_page_names_every_site_and_shows_the_example_file():
    text = PAGE.read_text()
    for site in SITES:
        assert f'`"{site}"' in text, site
    assert '--8<-- "examples/language_model.toml"' in text


def test_the_example_checks(lm_demo, capsys):
    assert main(["run", str(lm_demo / "language_model.toml"), "--check"]) == 0
    printed = capsys.readouterr().out
    names = re.findall(r"llama-\w+-\d", printed)
    assert names == [
        f"llama-{s}-{b}" for s in ("resid_post", "attn_out", "mlp_out") for b in (0, 1)
    ]
    assert "sae, sae-dense" in printed
    assert f"surface-{', surface-'.join(SURFACE_FLOORS)}" in printed  # [task] controls


@pytest.mark.slow
def test_the_example_runs(lm_demo, tmp_path):
    out = tmp_path / "runs"
    path = lm_demo / "language_model.toml"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    folder = out / "language-model"
    results = json.loads((folder / "results.json").read_text())
    assert len(results["curves"]) == 8 + len(SURFACE_FLOORS)
    assert (folder / "layers.png").is_file() and (folder / "layers.md").is_file()
    # every surface floor in the layer table, after the layers
    markdown = (folder / "layers.md").read_text()
    for floor in SURFACE_FLOORS:
        assert f"| surface-{floor} | — |" in markdown, floor
    assert markdown.count("Against the surface floors") == 3  # one per sweep
