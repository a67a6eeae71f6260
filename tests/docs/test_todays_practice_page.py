"""The page "Probes of today's practice" followed top to bottom: the tiny-model script writes
the texts, pairs and experiment files it shows; each checks, and (slow) each runs and gives
what the page says: attention probes read the one keyword the last token and the mean miss,
direction twins and surface floors beside the layers with the floor verdict, and a supervised
probe, diff-means and CCS side by side on contrast pairs with every seed's accuracy."""

from pathlib import Path

import pytest

from probemeter.cli.main import main
from probemeter.curves.results import load_curves
from probemeter.datasets.surface import SURFACE_FLOORS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "todays-practice.md"
EXPERIMENTS = ("attention_probes", "directions", "contrast_pairs")

pytest.importorskip("transformers")
pytest.importorskip("sae_lens", reason="sae-lens is not installed (the script writes an SAE)")


def _final(run: Path) -> dict[str, "object"]:
    """Each curve's points at its largest size."""
    return {
        curve.name: curve.points[curve.points["n"] == curve.points["n"].max()]
        for curve in load_curves(run / "results.json")
    }


def test_the_page_shows_every_experiment_file():
    text = PAGE.read_text()
    for name in EXPERIMENTS:
        assert f'--8<-- "examples/{name}.toml"' in text
        assert f"lm-demo/{name}.toml" in text


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_each_experiment_checks(lm_demo, name):
    assert main(["run", str(lm_demo / f"{name}.toml"), "--check"]) == 0


@pytest.mark.slow
def test_attention_probes_read_the_keyword(lm_demo, tmp_path):
    assert main(["run", str(lm_demo / "attention_probes.toml"), "--out", str(tmp_path), "-q"]) == 0
    final = _final(tmp_path / "attention")
    assert final["attention"]["accuracy"].mean() >= 0.95
    assert final["last"]["accuracy"].mean() <= 0.7 and final["mean"]["accuracy"].mean() <= 0.7


@pytest.mark.slow
def test_directions_and_floors_beside_the_layers(lm_demo, tmp_path):
    assert main(["run", str(lm_demo / "directions.toml"), "--out", str(tmp_path), "-q"]) == 0
    markdown = (tmp_path / "directions" / "layers.md").read_text()
    for sweep in ("llama", "llama-diff-means", "llama-lda"):
        assert f"| {sweep} | 0 |" in markdown, sweep
    for floor in SURFACE_FLOORS:
        assert f"| surface-{floor} | — |" in markdown, floor
    assert "llama's best layer does not beat the best surface floor" in markdown


@pytest.mark.slow
def test_a_probe_diff_means_and_ccs_on_the_pairs(lm_demo, tmp_path):
    assert main(["run", str(lm_demo / "contrast_pairs.toml"), "--out", str(tmp_path), "-q"]) == 0
    final = _final(tmp_path / "pairs")
    assert set(final) == {"llama", "llama-diff-means", "llama-ccs"}
    assert len(final["llama-ccs"]) == 3  # every seed's accuracy
    assert final["llama"]["accuracy"].mean() >= 0.9
    assert (final["llama-ccs"]["accuracy"] >= 0.9).sum() >= 2
