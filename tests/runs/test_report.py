"""Tests of the run-folder report: self-contained HTML, Markdown and LaTeX tables.

Hand-made curves (K = 10, pool 100, one seed) as in tests/test_comparison.py:
    A           reaches ε = 0.1 at n = 100
    B           never reaches ε
    <b>x</b>    never reaches ε (and needs HTML escaping)
plus a tiny real curve: a linear probe trained on sklearn's bundled digits.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
from html import escape
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits

from probemeter import Execution
from probemeter.curves.comparison import compare
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.results import save_results
from probemeter.data import ProbeData
from probemeter.probes import Linear
from probemeter.runs.html_report import ranked, write_report
from probemeter.training.config import TrainingConfig

SIZES = (10, 20, 40, 100)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHROMIUM = Path("/usr/bin/chromium")


def make_curve(name: str, losses: list[float]) -> LossDataCurve:
    points = pd.DataFrame(
        {
            "n": [n for n in SIZES for _ in range(2)],
            "seed": [0, 1] * len(SIZES),
            "loss": [loss + delta for loss in losses for delta in (0.0, 0.02)],
            "loss_truncated": [min(loss, 1.0) for loss in losses for _ in range(2)],
            "accuracy": [1.0 - loss / 4 for loss in losses for _ in range(2)],
        }
    )
    return LossDataCurve(name, points, n_classes=10, pool_size=100, n_test=50)


@pytest.fixture(scope="module")
def curves() -> list[LossDataCurve]:
    return [
        make_curve("B", [1.5, 1.2, 1.0, 0.9]),
        make_curve("<b>x</b>", [0.5, 0.3, 0.2, 0.15]),
        make_curve("A", [2.0, 1.0, 0.5, 0.05]),
    ]


@pytest.fixture(scope="module")
def digits_curve() -> LossDataCurve:
    bunch = load_digits()
    data = ProbeData.from_arrays(bunch.data, bunch.target, test_size=0.3, name="digits-pixels")
    config = TrainingConfig(steps=30, batch_size=64, lr=1e-2)
    settings = {"config": config, "execution": Execution(device="cpu")}
    return loss_data_curve(data, Linear(), sizes=[20, 100, 400], seeds=2, **settings)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, curves) -> Path:
    folder = tmp_path_factory.mktemp("run")
    save_results(folder / "results.json", curves, compare(curves, 0.1))
    write_report(folder)
    return folder


def html_of(folder: Path) -> str:
    return (folder / "report.html").read_text()


def comparison_header(html: str) -> list[str]:
    table = re.search(r'<table id="comparison">(.*?)</table>', html, re.S).group(1)
    header = re.search(r"<tr>(.*?)</tr>", table, re.S).group(1)
    return re.findall(r"<th[^>]*>(.*?)</th>", header)[2:]


def test_report_writes_every_file(run_dir, curves):
    html = html_of(run_dir)
    assert html.startswith("<!DOCTYPE html>")
    assert re.search(r'<table id="comparison">.*<td>&gt; \d', html, re.S), "no lower bound cell"
    for name in ("A", "B", "&lt;b&gt;x&lt;/b&gt;"):
        assert f"<th>{name}</th>" in html
        assert f"<h3>{name}</h3>" in html
    assert "<b>x</b>" not in html
    assert "Library versions" in html and "torch" in html


def test_report_is_self_contained_with_valid_png_figures(run_dir):
    html = html_of(run_dir)
    assert "http://" not in html and "https://" not in html
    sources = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(sources) == 2
    for source in sources:
        assert source.startswith("data:image/png;base64,")
        image = base64.b64decode(source.removeprefix("data:image/png;base64,"), validate=True)
        assert image.startswith(PNG_SIGNATURE) and len(image) > 5000


def test_columns_are_ranked_best_first(run_dir, curves):
    comparison = compare(curves, 0.1)
    order = ranked(comparison).representations
    assert order[0] == comparison.ranking("SC")[0] == "A"
    # B and <b>x</b> share the SC lower bound "> 100"; SDL (a smaller bound for <b>x</b>) decides
    assert list(order) == comparison.ranking("SDL") == ["A", "<b>x</b>", "B"]
    assert comparison_header(html_of(run_dir)) == [escape(name) for name in order]


def test_ranking_breaks_sc_ties_by_sdl():
    tied = [make_curve("worse", [1.5, 1.2, 1.0, 0.9]), make_curve("better", [0.5, 0.4, 0.3, 0.2])]
    comparison = compare(tied, 0.1)
    assert (
        comparison.result("SC", 100, "worse").value == comparison.result("SC", 100, "better").value
    )
    assert ranked(comparison).representations == ("better", "worse")


def test_markdown_and_latex_tables_equal_the_comparisons_own(run_dir, curves):
    comparison = ranked(compare(curves, 0.1))
    assert (run_dir / "table.md").read_text() == comparison.to_markdown() + "\n"
    assert (run_dir / "table.tex").read_text() == comparison.to_latex() + "\n"


@pytest.mark.slow
def test_epsilon_recomputes_and_missing_comparison_needs_epsilon(tmp_path, curves):
    save_results(tmp_path / "results.json", curves)
    with pytest.raises(ValueError, match="--epsilon"):
        write_report(tmp_path)
    files = write_report(tmp_path, epsilon=1.1)
    assert files.paths == (tmp_path / "report.html", tmp_path / "table.md", tmp_path / "table.tex")
    assert files.markdown.read_text() == ranked(compare(curves, 1.1)).to_markdown() + "\n"
    assert "ε = 1.1" in html_of(tmp_path)


def test_missing_or_foreign_results_file_is_a_clear_error(tmp_path, curves):
    with pytest.raises(ValueError, match="does not exist"):
        write_report(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="neither"):
        write_report(tmp_path)
    curves[0].save(tmp_path / "results.json")
    with pytest.raises(ValueError, match="single saved curve"):
        write_report(tmp_path)


@pytest.mark.slow
def test_experiment_and_timings_are_shown_when_present(tmp_path, curves, digits_curve):
    save_results(tmp_path / "results.json", [digits_curve], compare([digits_curve], 0.5))
    payload = json.loads((tmp_path / "results.json").read_text())
    payload["experiment"] = {"name": "digits <test>", "seeds": 2}
    payload["timings"] = {
        "digits-pixels": {"key": "ab12", "seconds": 1.23456, "loaded": True},
        "plain": 7.0,
    }
    (tmp_path / "results.json").write_text(json.dumps(payload))
    write_report(tmp_path)
    html = html_of(tmp_path)
    assert "digits &lt;test&gt;" in html and "Experiment" in html
    assert re.search(r"digits-pixels</td><td>1.235</td><td>yes</td>", html)
    assert re.search(r"plain</td><td>7.000</td><td></td>", html)
    assert "<h3>digits-pixels</h3>" in html


def test_experiment_and_timings_are_skipped_when_absent(run_dir):
    html = html_of(run_dir)
    assert "Experiment" not in html and "Timings" not in html


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless browser test needs /usr/bin/chromium")
@pytest.mark.slow
def test_report_renders_in_headless_chromium(run_dir, tmp_path):
    url = (run_dir / "report.html").resolve().as_uri()
    flags = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', dom)) == 2
    assert '<table id="comparison">' in dom
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [*flags, f"--screenshot={screenshot}", "--window-size=1200,2000", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    pixels = matplotlib.image.imread(screenshot)[..., :3]
    assert pixels.shape[:2] == (2000, 1200)
    # Curve lines are saturated colours; text and table rules are grey.
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    assert np.count_nonzero(saturation > 0.3) > 1000, "no coloured figure pixels on the page"


@pytest.mark.slow
def test_the_experiment_is_shown_as_written_and_spreads_are_labelled(tmp_path, curves):
    save_results(tmp_path / "results.json", curves, compare(curves, 0.1))
    written = "# my study\n[method]\nepsilon = 0.1  # nats\n"
    (tmp_path / "experiment.toml").write_text(written)
    write_report(tmp_path)
    html = html_of(tmp_path)
    experiment = re.search(r'<pre id="experiment">(.*?)</pre>', html, re.S).group(1)
    assert experiment == escape(written)  # the user's file, comments and all
    assert "experiment.toml, as written" in html
    assert "test loss (nats), mean ± s.d. over seeds" in html


@pytest.mark.slow
def test_a_recorded_configuration_is_shown_without_its_unset_values(tmp_path, curves):
    save_results(tmp_path / "results.json", curves, compare(curves, 0.1))
    payload = json.loads((tmp_path / "results.json").read_text())
    payload["experiment"] = {"run": {"name": "x", "device": None}, "task": None}
    (tmp_path / "results.json").write_text(json.dumps(payload))
    write_report(tmp_path)
    shown = re.search(r'<pre id="experiment">(.*?)</pre>', html_of(tmp_path), re.S).group(1)
    assert json.loads(shown.replace("&#34;", '"')) == {"run": {"name": "x"}}


@pytest.mark.slow
def test_labels_and_features_from_one_pipeline_raise_a_banner(tmp_path, curves):
    save_results(tmp_path / "results.json", curves, compare(curves, 0.1))
    payload = json.loads((tmp_path / "results.json").read_text())
    payload["experiment"] = {
        "task": {"dataset": "ptb", "label": "upos"},
        "representations": [{"name": "spacy", "kind": "spacy"}, {"name": "m", "kind": "glove"}],
    }
    (tmp_path / "results.json").write_text(json.dumps(payload))
    write_report(tmp_path)
    banners = re.findall(r'<p class="warning" role="alert">(.*?)</p>', html_of(tmp_path), re.S)
    assert len(banners) == 1 and "&#39;spacy&#39; is the tok2vec layer" in banners[0]
    assert "silver upos labels: its scores are inflated" in banners[0]


@pytest.mark.slow
def test_a_template_of_ones_own_renders_the_same_context(tmp_path, curves):
    save_results(tmp_path / "results.json", curves, compare(curves, 0.1))
    mine = tmp_path / "mine.html.j2"
    mine.write_text(
        "{{ title }}|{{ warnings | length }}|"
        "{% for rep in representations %}{{ rep.name }};{% endfor %}"
    )
    write_report(tmp_path, template=mine)
    assert (
        html_of(tmp_path)
        == "probemeter report: A, &lt;b&gt;x&lt;/b&gt;, B|0|B;&lt;b&gt;x&lt;/b&gt;;A;"
    )
    with pytest.raises(ValueError, match=r"template '.*missing.j2' does not exist"):
        write_report(tmp_path, template=tmp_path / "missing.j2")
    mine.write_text("{% for %}")
    with pytest.raises(ValueError, match="is not valid Jinja2"):
        write_report(tmp_path, template=mine)
    mine.write_text("{{ no_such_key }}")
    with pytest.raises(ValueError, match=r"'no_such_key' is undefined \(see html_report"):
        write_report(tmp_path, template=mine)


def test_a_method_report_embeds_an_svg_figure_or_names_pdf_ones(tmp_path):
    from probemeter._method import RUN_NAME

    (tmp_path / "table.md").write_text("| a | b |\n")
    svg = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'
    (tmp_path / "frontiers.svg").write_bytes(svg)
    run = {"method": "pareto", "figure": "frontiers.svg", "figures": ["frontiers.svg"]}
    (tmp_path / RUN_NAME).write_text(json.dumps(run))
    write_report(tmp_path)
    sources = re.findall(r'<img [^>]*src="([^"]+)"', html_of(tmp_path))
    assert sources == ["data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")]
    run = {"method": "pareto", "figure": None, "figures": ["frontiers.pdf"]}
    (tmp_path / RUN_NAME).write_text(json.dumps(run))
    write_report(tmp_path)
    html = html_of(tmp_path)
    assert "<img" not in html and "Figure files: frontiers.pdf." in html
