"""Comparison tables of several representations (Whitney et al., Table 1 layout).

Three hand-made curves, K = 10, pool 100, sizes 10, 20, 40, 100, one seed:
    A    loss 2.0, 1.0, 0.5, 0.05   reaches ε = 0.1 at n = 100
    B    loss 1.5, 1.2, 1.0, 0.9    never reaches ε
    raw_pixels  loss 0.5, 0.3, 0.2, 0.15  never reaches ε, yet has the smallest SDL bound
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from probemeter.curves.comparison import MEASURES, compare, default_comparison_sizes
from probemeter.curves.curve import LossDataCurve

LN10 = math.log(10)
SIZES = (10, 20, 40, 100)


def make_curve(name: str, losses: list[float], sizes: tuple[int, ...] = SIZES) -> LossDataCurve:
    points = pd.DataFrame(
        {
            "n": list(sizes),
            "seed": [0] * len(sizes),
            "loss": losses,
            "loss_truncated": [min(loss, 1.0) for loss in losses],
            "accuracy": [1.0 - loss / 4 for loss in losses],
        }
    )
    return LossDataCurve(name, points, n_classes=10, pool_size=max(sizes), n_test=50)


@pytest.fixture
def curves() -> list[LossDataCurve]:
    return [
        make_curve("A", [2.0, 1.0, 0.5, 0.05]),
        make_curve("B", [1.5, 1.2, 1.0, 0.9]),
        make_curve("raw_pixels", [0.5, 0.3, 0.2, 0.15]),
    ]


@pytest.fixture
def comparison(curves):
    return compare(curves, 0.1)


def test_default_sizes_are_second_smallest_and_largest_common(curves):
    assert default_comparison_sizes(curves) == (20, 100)
    other = make_curve("C", [1.0, 0.5, 0.2], sizes=(10, 40, 100))
    assert default_comparison_sizes([*curves, other]) == (40, 100)
    assert default_comparison_sizes([make_curve("D", [1.0], sizes=(50,))]) == (50,)
    with pytest.raises(ValueError, match="share no measured size"):
        default_comparison_sizes([curves[0], make_curve("E", [1.0], sizes=(30,))])


def test_values_match_the_measures(comparison):
    assert comparison.sizes == (20, 100)
    assert comparison.representations == ("A", "B", "raw_pixels")
    assert comparison.result("MDL", 20, "A").value == pytest.approx(10 * LN10 + 10 * 2.0)
    assert comparison.result("MDL", 100, "B").value == pytest.approx(
        10 * LN10 + 10 * 1.5 + 20 * 1.2 + 60 * 1.0
    )
    sdl_a = comparison.result("SDL", 100, "A")
    assert sdl_a.value == pytest.approx(10 * (LN10 - 0.1) + 10 * 1.9 + 20 * 0.9 + 60 * 0.4)
    assert not sdl_a.lower_bound
    sdl_raw = comparison.result("SDL", 100, "raw_pixels")
    assert sdl_raw.value == pytest.approx(10 * (LN10 - 0.1) + 10 * 0.4 + 20 * 0.2 + 60 * 0.1)
    assert sdl_raw.lower_bound
    assert comparison.result("VA", 20, "B").value == pytest.approx(1.2)
    assert (comparison.result("SC", 100, "A").value, comparison.result("SC", 20, "A").value) == (
        100,
        20,
    )
    assert comparison.result("SC", 20, "A").lower_bound


def test_to_frame_is_tidy(comparison):
    frame = comparison.to_frame()
    assert list(frame.columns) == ["n", "measure", "representation", "value", "lower_bound", "unit"]
    assert len(frame) == 2 * len(MEASURES) * 3
    row = frame[(frame.n == 100) & (frame.measure == "SC") & (frame.representation == "B")]
    assert row.value.item() == 100
    assert bool(row.lower_bound.item())
    assert row.unit.item() == "examples"
    assert list(frame.measure[:6]) == ["VA", "VA", "VA", "MDL", "MDL", "MDL"]


def test_ranking_puts_lower_bounds_after_tight_values(comparison):
    # raw_pixels' SDL bound (36.03) is below A's tight 83.03, but it is only a bound
    assert comparison.ranking("SDL") == ["A", "raw_pixels", "B"]
    assert comparison.ranking("MDL", 100) == ["raw_pixels", "A", "B"]
    assert comparison.ranking("VA", 100) == ["A", "raw_pixels", "B"]
    assert comparison.best("SC") == "A"
    assert comparison.best("SDL", 20) is None  # nobody reaches ε with 20 points
    assert comparison.best("MDL", 20) == "raw_pixels"
    with pytest.raises(ValueError, match="not one of the compared sizes"):
        comparison.ranking("MDL", 40)
    with pytest.raises(ValueError, match="measure must be one of"):
        comparison.ranking("MI")


def test_text_table_layout(comparison):
    lines = str(comparison).splitlines()
    assert lines[0].startswith("metric=loss, unit=nats")
    assert lines[1].split() == ["n", "measure", "A", "B", "raw_pixels"]
    assert lines[3].split() == ["20", "VA", "1.00", "1.20", "0.30"]
    assert lines[5].split() == ["SDL,", "ε=0.1", ">", "41.03", ">", "36.03", ">", "26.03"]
    assert lines[7] == ""
    assert lines[10].split() == ["SDL,", "ε=0.1", "83.03", ">", "112.03", ">", "36.03"]
    assert lines[11].split() == ["SC,", "ε=0.1", "100", ">", "100", ">", "100"]


def test_markdown_table(comparison):
    caption, blank, *lines = comparison.to_markdown().splitlines()
    assert caption == "Table: " + comparison.caption() and blank == ""
    assert lines[0] == "| n | measure | A | B | raw_pixels |"
    assert lines[1] == "| ---: | :--- | ---: | ---: | ---: |"
    assert lines[2] == "| 20 | VA | 1.00 | 1.20 | 0.30 |"
    assert lines[3] == "|  | MDL | 43.03 | 38.03 | 28.03 |"
    assert lines[8] == "|  | SDL, ε=0.1 | 83.03 | > 112.03 | > 36.03 |"
    assert len(lines) == 2 + 2 * len(MEASURES)


def test_latex_table(comparison):
    latex = comparison.to_latex()
    caption = r"metric=loss, unit=nats ($\varepsilon$SC in examples), rule=last; $>x$: lower bound"
    assert latex.startswith(
        f"\\begin{{table}}\n\\centering\n\\caption{{{caption}}}\n"
        "\\begin{tabular}{rlrrr}\n\\toprule\n$n$ & Measure & A & B & raw\\_pixels"
    )
    assert " & SDL, $\\varepsilon=0.1$ & 83.03 & $>$ 112.03 & $>$ 36.03 \\\\" in latex
    assert "100 & VA & 0.05 & 0.90 & 0.15 \\\\" in latex
    assert latex.count("\\midrule") == 2
    assert latex.endswith("\\bottomrule\n\\end{tabular}\n\\end{table}")


@pytest.mark.parametrize("unit", ["nats", "bits"])
def test_markdown_and_latex_captions_name_metric_and_unit(curves, unit):
    """A table in bits must not pass for one in nats: both formats keep the caption line."""
    table = compare(curves, 0.1, unit=unit, metric="loss_truncated")
    assert table.caption().startswith(f"metric=loss_truncated, unit={unit} ")
    markdown, latex = table.to_markdown(), table.to_latex()
    assert markdown.startswith(f"Table: metric=loss_truncated, unit={unit} (εSC in examples)")
    assert f"\\caption{{metric=loss\\_truncated, unit={unit} ($\\varepsilon$SC" in latex
    other = "bits" if unit == "nats" else "nats"
    assert f"unit={other}" not in markdown and f"unit={other}" not in latex
    assert str(table).splitlines()[0] == table.caption()


def test_to_dict_is_json_ready(comparison):
    payload = json.loads(json.dumps(comparison.to_dict()))
    assert payload["epsilon"] == 0.1
    assert payload["sizes"] == [20, 100]
    assert len(payload["results"]) == 24
    assert {result["measure"] for result in payload["results"]} == set(MEASURES)


def test_mapping_names_and_options(curves):
    result = compare(
        {"first": curves[0], "second": curves[1]}, 0.5, sizes=[100, 40], unit="bits", rule="half"
    )
    assert result.representations == ("first", "second")
    assert result.sizes == (40, 100)
    assert (result.unit, result.rule) == ("bits", "half")
    sdl_first = result.result("SDL", 100, "first")
    assert sdl_first.representation == "first"
    assert sdl_first.unit == "bits"
    # ε = 0.5 bits: L(100) = 0.05 nats ≤ ε/2 = 0.25 bits, tight under "half"
    assert not sdl_first.lower_bound
    assert result.result("MDL", 40, "first").value == pytest.approx(
        (10 * LN10 + 10 * 2.0 + 20 * 1.0) / math.log(2)
    )


def test_error_metric_table(curves):
    result = compare(curves, 0.06, metric="error")
    assert result.unit == "errors"
    assert result.result("VA", 100, "A").value == pytest.approx(0.0125)
    assert result.result("SC", 100, "A").value == 100
    assert result.result("SC", 100, "raw_pixels").value == 40  # error 0.2 / 4 = 0.05


def test_invalid_inputs(curves):
    with pytest.raises(ValueError, match="named 'A'"):
        compare([curves[0], curves[0]], 0.1)
    with pytest.raises(ValueError, match="at least one curve"):
        compare([], 0.1)
    other_task = LossDataCurve("K3", curves[0].points, n_classes=3, pool_size=100, n_test=50)
    with pytest.raises(ValueError, match="n_classes"):
        compare([curves[0], other_task], 0.1)
    with pytest.raises(ValueError, match="epsilon"):
        compare(curves, 0.0)
    with pytest.raises(ValueError, match="below the smallest"):
        compare(curves, 0.1, sizes=[5])
    with pytest.raises(ValueError, match="sizes must be integers"):
        compare(curves, 0.1, sizes=[20.5])
    with pytest.raises(ValueError, match="at least one size"):
        compare(curves, 0.1, sizes=[])
