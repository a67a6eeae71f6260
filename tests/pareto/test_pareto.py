"""Pareto frontier, dominant representations and hypervolume on hand-made point sets."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from probemeter.pareto.frontiers import (
    ParetoFrontiers,
    memorisation_points,
    pareto_dominant,
    pareto_frontier,
    pareto_hypervolume,
)


def test_frontier_drops_dominated_points_and_orders_by_complexity() -> None:
    complexity = [5.0, 1.0, 3.0, 2.0, 4.0]
    accuracy = [0.9, 0.5, 0.6, 0.7, 0.8]
    # (3, 0.6) is dominated by (2, 0.7); the others form the frontier
    assert pareto_frontier(complexity, accuracy).tolist() == [1, 3, 4, 0]


def test_frontier_ties_keep_the_most_accurate_and_the_first_duplicate() -> None:
    complexity = [1.0, 1.0, 2.0, 2.0, 3.0]
    accuracy = [0.4, 0.6, 0.7, 0.7, 0.7]
    # equal complexity: the more accurate (index 1); identical points 2 and 3: the first;
    # (3, 0.7) is dominated by (2, 0.7) (equal accuracy, strictly simpler)
    assert pareto_frontier(complexity, accuracy).tolist() == [1, 2]


def test_single_point_is_its_own_frontier() -> None:
    assert pareto_frontier([7.0], [0.1]).tolist() == [0]


def test_hypervolume_is_the_area_under_the_step_frontier() -> None:
    # frontier (1, 0.5), (2, 0.7), (4, 0.8) up to cap 5; (3, 0.6) is dominated
    complexity = [1.0, 2.0, 3.0, 4.0]
    accuracy = [0.5, 0.7, 0.6, 0.8]
    area = 1 * 0.0 + 1 * 0.5 + 2 * 0.7 + 1 * 0.8
    assert pareto_hypervolume(complexity, accuracy, cap=5.0, normalise=False) == pytest.approx(area)
    assert pareto_hypervolume(complexity, accuracy, cap=5.0) == pytest.approx(area / 5)


def test_hypervolume_ignores_dominated_points() -> None:
    base = pareto_hypervolume([0.0, 2.0], [0.3, 0.9], cap=4.0)
    with_dominated = pareto_hypervolume([0.0, 2.0, 1.0, 3.0], [0.3, 0.9, 0.2, 0.5], cap=4.0)
    assert base == pytest.approx((2 * 0.3 + 2 * 0.9) / 4)
    assert with_dominated == pytest.approx(base)


def test_hypervolume_cap_cuts_the_area_and_drops_probes_beyond_it() -> None:
    complexity = [1.0, 3.0, 10.0]
    accuracy = [0.4, 0.6, 0.95]
    # cap 5: [1, 3) at 0.4, [3, 5) at 0.6; the probe at 10 is outside the interval
    assert pareto_hypervolume(complexity, accuracy, cap=5.0) == pytest.approx((0.8 + 1.2) / 5)
    # cap 2: only [1, 2) at 0.4
    assert pareto_hypervolume(complexity, accuracy, cap=2.0) == pytest.approx(0.4 / 2)
    # a probe exactly at the cap adds nothing
    assert pareto_hypervolume([1.0, 2.0], [0.5, 1.0], cap=2.0) == pytest.approx(0.25)


def test_zero_complexity_probe_fills_the_whole_interval() -> None:
    assert pareto_hypervolume([0.0], [0.8], cap=3.0) == pytest.approx(0.8)


def test_pareto_dominant_names_representations_on_the_pooled_frontier() -> None:
    points = {
        "onehot": ([1.0, 5.0], [0.6, 0.8]),
        "bert": ([3.0, 6.0], [0.7, 0.95]),
        "random": ([2.0, 7.0], [0.3, 0.5]),
    }
    assert pareto_dominant(points) == ["onehot", "bert"]


@pytest.mark.parametrize("cap", [0.0, -1.0, float("nan"), float("inf"), "x"])
def test_bad_cap_is_rejected(cap: object) -> None:
    with pytest.raises(ValueError, match="cap"):
        pareto_hypervolume([1.0], [0.5], cap=cap)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("complexity", "accuracy", "name"),
    [
        ([], [], "complexity"),
        ([1.0], [], "accuracy"),
        ([1.0, 2.0], [0.5], "same length"),
        ([1.0, np.nan], [0.5, 0.6], "complexity"),
        ([1.0, 2.0], [0.5, np.nan], "accuracy"),
        ([-1.0], [0.5], "complexity"),
        ([[1.0]], [[0.5]], "complexity"),
    ],
)
def test_bad_points_are_rejected_naming_the_argument(
    complexity: list, accuracy: list, name: str
) -> None:
    with pytest.raises(ValueError, match=name):
        pareto_frontier(complexity, accuracy)
    with pytest.raises(ValueError, match=name):
        pareto_hypervolume(complexity, accuracy, cap=1.0)


def test_pareto_dominant_rejects_empty_sets_naming_the_representation() -> None:
    with pytest.raises(ValueError, match="at least one"):
        pareto_dominant({})
    with pytest.raises(ValueError, match="'bert'"):
        pareto_dominant({"bert": ([], [])})


# --- ParetoFrontiers and the hypervolume table --------------------------------------------
#
# Two tasks, two measures, three representations; hand-computed frontiers and areas:
#   POS / rank:   A (1, .5) (2, .7) (4, .8) [(3, .6) dominated]     B (2, .6) (3, .9)
#                 shared cap = 4 → A: (1·.5 + 2·.7)/4 = .475, B: (1·.6 + 1·.9)/4 = .375
#   POS / norm:   A (10, .4) (30, .8)   B (20, .9)   caps={"norm": 40}
#                 A: (20·.4 + 10·.8)/40 = .4, B: 20·.9/40 = .45
#   DEP / rank:   A (1, .3) (2, .5)   C (2, .6)   cap 2 → A: .15, C: 0


def _points() -> pd.DataFrame:
    rows = [
        ("POS", "rank", "A", 1, 0.5),
        ("POS", "rank", "A", 2, 0.7),
        ("POS", "rank", "A", 3, 0.6),
        ("POS", "rank", "A", 4, 0.8),
        ("POS", "rank", "B", 2, 0.6),
        ("POS", "rank", "B", 3, 0.9),
        ("POS", "norm", "A", 10, 0.4),
        ("POS", "norm", "A", 30, 0.8),
        ("POS", "norm", "B", 20, 0.9),
        ("POS", "norm", "B", 50, 0.95),
        ("DEP", "rank", "A", 1, 0.3),
        ("DEP", "rank", "A", 2, 0.5),
        ("DEP", "rank", "C", 2, 0.6),
    ]
    frame = pd.DataFrame(rows, columns=["task", "measure", "representation", *"ca"])
    frame = frame.rename(columns={"c": "complexity", "a": "accuracy"})
    return frame.assign(probe=range(len(frame)))


@pytest.fixture
def frontiers() -> ParetoFrontiers:
    return ParetoFrontiers(_points(), caps={"norm": 40.0}, metadata={"note": "hand-made"})


def test_frontiers_order_and_caps(frontiers: ParetoFrontiers) -> None:
    assert frontiers.tasks == ("POS", "DEP")
    assert frontiers.measures == ("rank", "norm")
    assert frontiers.representations == ("A", "B", "C")
    assert frontiers.cap("POS", "rank") == 4.0  # largest rank of any representation
    assert frontiers.cap("DEP", "rank") == 2.0
    assert frontiers.cap("POS", "norm") == 40.0  # explicit


def test_frontiers_hypervolumes_match_hand_areas(frontiers: ParetoFrontiers) -> None:
    expected = {
        ("POS", "rank", "A"): 0.475,
        ("POS", "rank", "B"): 0.375,
        ("POS", "norm", "A"): 0.4,
        ("POS", "norm", "B"): 0.45,
        ("DEP", "rank", "A"): 0.15,
        ("DEP", "rank", "C"): 0.0,
    }
    for (task, measure, name), value in expected.items():
        assert frontiers.hypervolume(task, measure, name) == pytest.approx(value)
    assert frontiers.hypervolume("POS", "rank", "A", cap=2.0) == pytest.approx(0.25)


def test_frontier_rows_and_flags(frontiers: ParetoFrontiers) -> None:
    assert frontiers.frontier("POS", "rank", "A")["probe"].tolist() == [0, 1, 3]
    frame = frontiers.to_frame()
    assert frame.loc[frame["on_frontier"], "probe"].tolist() == [
        0,
        1,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
        11,
        12,
    ]
    # pooled POS/rank frontier: A(1,.5), A(2,.7), B(3,.9); DEP/rank: A(1,.3), C(2,.6)
    pooled = frame[frame["dominant"] & (frame["measure"] == "rank")]
    assert pooled["probe"].tolist() == [0, 1, 5, 10, 12]
    assert frontiers.dominant("POS", "rank") == ["A", "B"]
    assert frontiers.dominant("POS", "norm") == ["A", "B"]
    assert frontiers.dominant("POS", "norm", max_complexity=15) == ["A"]
    assert frontiers.dominant("DEP", "rank") == ["A", "C"]


def test_unknown_names_raise_key_error(frontiers: ParetoFrontiers) -> None:
    with pytest.raises(KeyError, match="'C'"):
        frontiers.hypervolume("POS", "rank", "C")
    with pytest.raises(KeyError, match="'SRL'"):
        frontiers.cap("SRL", "rank")


def test_frontiers_validate_their_points() -> None:
    with pytest.raises(ValueError, match="lacks column"):
        ParetoFrontiers(_points().drop(columns="measure"))
    with pytest.raises(ValueError, match="empty"):
        ParetoFrontiers(_points().iloc[:0])
    bad = _points()
    bad.loc[4, "accuracy"] = np.nan
    with pytest.raises(ValueError, match="'B' on 'POS' \\(rank\\): accuracy"):
        ParetoFrontiers(bad)
    with pytest.raises(ValueError, match="cap"):
        ParetoFrontiers(_points(), caps={"rank": 0})
    zero = _points().assign(complexity=0.0)
    with pytest.raises(ValueError, match="caps="):
        ParetoFrontiers(zero).cap("POS", "rank")


def test_frontiers_round_trip_through_json(frontiers: ParetoFrontiers, tmp_path) -> None:
    path = tmp_path / "pareto.json"
    frontiers.save(path)
    loaded = ParetoFrontiers.load(path)
    pd.testing.assert_frame_equal(loaded.points, frontiers.points, check_dtype=False)
    assert loaded.caps == frontiers.caps and loaded.metadata == frontiers.metadata
    assert json.loads(path.read_text())["schema"] == "probemeter.pareto/1"
    with pytest.raises(ValueError, match="schema"):
        ParetoFrontiers.from_dict({"points": {}})


def test_hypervolume_table_layout(frontiers: ParetoFrontiers) -> None:
    table = frontiers.hypervolume_table()
    assert table.value("rank", "B", "POS") == pytest.approx(0.375)
    assert table.value("rank", "B", "DEP") is None
    assert table.row_keys() == [
        ("rank", "A"),
        ("rank", "B"),
        ("rank", "C"),
        ("norm", "A"),
        ("norm", "B"),
    ]
    assert table.table_rows() == [
        ["rank", "A", "0.47", "0.15"],
        ["rank", "B", "0.38", "-"],
        ["rank", "C", "-", "0.00"],
        ["norm", "A", "0.40", "-"],
        ["norm", "B", "0.45", "-"],
    ]
    tidy = table.to_frame()
    assert set(tidy.columns) == {"measure", "representation", "task", "hypervolume", "cap"}
    assert tidy.loc[tidy["measure"] == "norm", "cap"].tolist() == [40.0, 40.0]
    markdown = table.to_markdown().splitlines()
    assert markdown[0] == "| measure | representation | POS | DEP |"
    assert markdown[3] == "| rank | B | 0.38 | - |"
    text = str(table).splitlines()
    assert text[1].split() == ["measure", "representation", "POS", "DEP"]
    assert "" in text  # blank line between measures
    latex = table.to_latex()
    assert latex.count(r"\midrule") == 2 and r"rank & C & - & 0.00 \\" in latex
    only = frontiers.hypervolume_table(measures=["norm"], tasks=["POS"])
    assert only.table_rows(3) == [["norm", "A", "0.400"], ["norm", "B", "0.450"]]
    assert json.loads(json.dumps(table.to_dict()))["tasks"] == ["POS", "DEP"]


def test_latex_groups_tasks_named_group_slash_name() -> None:
    points = _points().replace({"task": {"POS": "POSL/English", "DEP": "DAL/English"}})
    latex = ParetoFrontiers(points).hypervolume_table().to_latex()
    assert r" &  & \multicolumn{1}{c}{POSL} & \multicolumn{1}{c}{DAL} \\" in latex
    assert r"Metric & Representation & English & English \\" in latex


def test_plot_draws_one_step_frontier_per_representation(frontiers: ParetoFrontiers) -> None:
    ax = frontiers.plot("POS", "rank")
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"A", "B"}
    assert lines["A"].get_drawstyle() == "steps-post"
    assert lines["A"].get_xdata().tolist() == [1, 2, 4, 4]
    assert lines["A"].get_ydata().tolist() == [0.5, 0.7, 0.8, 0.8]
    assert ax.get_xlim() == (0, 4)
    clipped = frontiers.plot("POS", "norm", xmax=25)
    assert clipped.get_lines()[0].get_xdata().tolist() == [10, 25]  # A's probe at 30 is cut


def test_figure_grid_and_saving(frontiers: ParetoFrontiers, tmp_path) -> None:
    figure = frontiers.figure(xmax={"norm": 60})
    axes = figure.get_axes()
    assert len(axes) == 4
    assert [ax.get_visible() for ax in axes] == [True, True, True, False]  # DEP has no norm
    assert axes[1].get_xlim() == (0, 60)
    figure.savefig(tmp_path / "frontiers.png")
    assert (tmp_path / "frontiers.png").stat().st_size > 1000


def test_plot_keeps_one_colour_per_representation(frontiers: ParetoFrontiers) -> None:
    import matplotlib

    dep = {line.get_label(): line.get_color() for line in frontiers.plot("DEP", "rank").get_lines()}
    tab10 = matplotlib.colormaps["tab10"]
    assert dep == {"A": tab10(0), "C": tab10(2)}  # C keeps its place after B, absent here


def test_memorisation_points_pair_true_accuracy_with_shuffled_training_accuracy() -> None:
    true = pd.DataFrame(
        {"rep": ["a", "a", "b"], "arch": [1, 2, 1], "accuracy": [0.9, 0.8, 0.7], "other": 0}
    )
    shuffled = pd.DataFrame(
        {"rep": ["b", "a", "a"], "arch": [1, 2, 1], "train_accuracy": [0.3, 0.6, 0.2]}
    )
    points = memorisation_points(true, shuffled, on=["rep", "arch"])
    assert points.to_dict("list") == {
        "rep": ["a", "a", "b"],
        "arch": [1, 2, 1],
        "complexity": [0.2, 0.6, 0.3],
        "accuracy": [0.9, 0.8, 0.7],
    }


def test_memorisation_points_reject_or_drop_missing_twins() -> None:
    true = pd.DataFrame({"arch": [1, 2], "accuracy": [0.9, 0.8]})
    shuffled = pd.DataFrame({"arch": [1], "train_accuracy": [0.4]})
    with pytest.raises(ValueError, match=r"lack a shuffled twin.*'arch': 2"):
        memorisation_points(true, shuffled, on="arch")
    dropped = memorisation_points(true, shuffled, on="arch", missing="drop")
    assert dropped["arch"].tolist() == [1]
    with pytest.raises(ValueError, match="more than once"):
        memorisation_points(pd.concat([true, true]), shuffled, on="arch")
    with pytest.raises(ValueError, match="shuffled lacks column"):
        memorisation_points(true, shuffled, on="arch", train_accuracy="train_acc")
    with pytest.raises(ValueError, match="missing must be"):
        memorisation_points(true, shuffled, on="arch", missing="ignore")


def test_pareto_dominant_credits_identical_points_to_the_first_listed() -> None:
    assert pareto_dominant({"a": ([1.0], [0.5]), "b": ([1.0], [0.5])}) == ["a"]


def test_frontier_agrees_with_the_pairwise_definition_on_random_points() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        c = rng.integers(0, 6, size=12).astype(float)  # many ties
        a = rng.integers(0, 6, size=12) / 5
        dominated = {
            i
            for i in range(12)
            for j in range(12)
            if c[j] <= c[i] and a[j] >= a[i] and (c[j] < c[i] or a[j] > a[i] or j < i)
        }
        assert sorted(pareto_frontier(c, a).tolist()) == sorted(set(range(12)) - dominated)


@pytest.mark.parametrize("accuracy", [1.7, -0.1])
def test_hypervolume_refuses_accuracies_outside_zero_one(accuracy):
    with pytest.raises(ValueError, match=r"accuracy must be in \[0, 1\]"):
        pareto_hypervolume([1.0, 2.0], [0.5, accuracy], cap=4.0)
