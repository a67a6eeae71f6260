"""The layer analysis (runs/layers.py) on hand-built results whose measures and tests are known
in closed form: SDL and εSC of the curve method, the best layer chosen on the development split
and tested on the test set, McNemar's p-values and their Holm adjustment, the clustered test of
words within sentences, the power verdict and the bound's recommended training size."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from probemeter._figures import FigureOptions
from probemeter._summary import Estimate, Headline, SeedCorrectness, Summary, labels_digest
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.method import CurveMethod
from probemeter.power.clustered import format_p, sign_flip_test
from probemeter.runs.layers import (
    CLUSTERED,
    LayerAnalysis,
    PairTest,
    analyse_layers,
    pair_test,
    write_layer_files,
)

N_TEST = 200
LABELS = np.arange(N_TEST) % 2
FIRST_BLOCK = 10 * (math.log(2) - 0.5)  # the uniform code's excess over ε = 0.5 on 10 points


def _correct(wrong: range) -> np.ndarray:
    correct = np.ones(N_TEST, dtype=bool)
    correct[list(wrong)] = False
    return correct


def _curve(
    name: str,
    losses: dict[int, list[float]],
    wrong: range,
    dev: dict[int, list[float]] | None = None,
    clusters: np.ndarray | None = None,
    correct: np.ndarray | None = None,
) -> dict:
    """A curve over sizes 10 and 100 with two seeds; the probes of n = 100 get every test
    example right but ``wrong`` (or as ``correct`` says, on a test set of its length). The
    probes' losses on the development split held out of the pool are ``dev`` (default: the
    test losses); ``dev=False`` measures none."""
    dev = losses if dev is None else dev
    correct = _correct(wrong) if correct is None else np.asarray(correct, bool)
    labels = np.arange(correct.size) % 2
    rows = [
        {"n": n, "seed": seed, "loss": loss, "loss_truncated": min(loss, 1.0), "accuracy": 0.5}
        for n, values in losses.items()
        for seed, loss in enumerate(values)
    ]
    points = pd.DataFrame(rows)
    points.loc[points["n"] == 100, "accuracy"] = correct.mean()
    metadata = {"n_features": 4}
    if dev:
        points["dev_loss"] = [loss for values in dev.values() for loss in values]
        points["dev_loss_truncated"] = np.minimum(points["dev_loss"], 1.0)
        points["dev_accuracy"] = 0.5
        metadata["development"] = {
            "fraction": 0.1, "n_dev": 11, "groups": "examples", "random_state": 0,
        }  # fmt: skip
    final = SeedCorrectness((0, 1), (correct,) * 2, labels_digest(labels), 100, clusters)
    curve = LossDataCurve(name, points, 2, 100, correct.size, metadata, final)
    return curve.to_dict()


METHOD = CurveMethod(epsilon=0.5, probe=(8,))
RESULTS = [
    # SDL = 10·(ln 2 − ε) + 90·[mean L(10) − ε]; tight when mean L(100) ≤ ε
    _curve("m-0", {10: [0.9, 1.1], 100: [0.45, 0.55]}, range(60)),  # 46.93; seed 1 a bound
    _curve("m-1", {10: [0.6, 0.6], 100: [0.3, 0.3]}, range(10)),  # 10.93, best
    _curve("m-2", {10: [0.7, 0.7], 100: [0.6, 0.6]}, range(12)),  # > 19.93: never reaches ε
]
SWEEPS = {"m": [(2, "m-2"), (0, "m-0"), (1, "m-1")]}  # any order: sorted by layer


def test_curve_summaries_are_the_hand_computed_sdl_and_sc_with_seed_ranges():
    summaries = METHOD.summaries(RESULTS)
    zero = summaries["m-0"].estimates["SDL"]
    assert zero.value == pytest.approx(FIRST_BLOCK + 90 * 0.5)
    assert zero.low == pytest.approx(FIRST_BLOCK + 90 * 0.4) and not zero.low_bound
    assert zero.high == pytest.approx(FIRST_BLOCK + 90 * 0.6) and zero.high_bound
    assert not zero.lower_bound  # the mean curve reached ε = 0.5 at n = 100
    two = summaries["m-2"]
    assert two.estimates["SDL"].lower_bound and two.estimates["SC"].lower_bound
    assert two.estimates["SDL"].value == pytest.approx(FIRST_BLOCK + 90 * 0.2)
    assert summaries["m-1"].estimates["SC"] == Estimate(100.0, 100.0, 100.0)
    assert summaries["m-1"].accuracy.value == pytest.approx(190 / 200)
    assert summaries["m-1"].correctness.n_train == 100


def test_best_layer_and_runner_up_with_an_established_difference():
    analysis = analyse_layers(METHOD, RESULTS, SWEEPS, n_simulations=200)
    assert [row.layer for row in analysis.rows] == [0, 1, 2]
    (verdict,) = analysis.verdicts
    # ranked by SDL: layer 1 (10.9), then layer 0 (46.9); layer 2 is only a lower bound
    assert verdict.best == (1, "m-1") and verdict.runner_up == (0, "m-0")
    test = verdict.test
    # layer 1 errs on 10 examples, layer 0 on those and 50 more: b = 0, c = 50 per seed
    expected = stats.chi2.sf(50.0, df=1)  # χ² = (b − c)² / (b + c), Zhu et al. §3.5
    assert test.p_values == pytest.approx((expected, expected))
    assert test.power == 1.0 and test.established and test.recommended_n_train is None
    assert (test.accuracy_first, test.accuracy_second) == (0.95, 0.70)
    assert "m-1 is more accurate, an established difference" in verdict.describe()
    # chosen on the development split, tested on the test set, and said so
    assert verdict.chosen_on.startswith("dev: 11 pool examples") and verdict.tested_on == "test"
    assert "chosen on dev: 11 pool examples" in verdict.describe()
    # two distinct comparisons in the sweep (0-1, which is also the verdict's pair, and 1-2,
    # p = 0.5): Holm doubles the smaller p-value, the larger stays max(2 p1, p2) = 0.5
    assert test.p_adjusted == pytest.approx(2 * expected)
    assert analysis.rows[1].previous.p_adjusted == pytest.approx(2 * expected)
    assert analysis.rows[2].previous.p_adjusted == pytest.approx(0.5)


def test_the_development_split_chooses_even_where_the_test_set_would_not():
    # by test SDL layer 1 is best; on the development split layer 0 is: the verdict follows
    # the development split, and the test set only tests that choice
    dev_0, dev_1 = {10: [0.5, 0.5], 100: [0.2, 0.2]}, {10: [0.8, 0.8], 100: [0.4, 0.4]}
    results = [
        _curve("m-0", {10: [0.9, 1.1], 100: [0.45, 0.55]}, range(60), dev_0),
        _curve("m-1", {10: [0.6, 0.6], 100: [0.3, 0.3]}, range(10), dev_1),
    ]
    (verdict,) = analyse_layers(METHOD, results, {"m": [(0, "m-0"), (1, "m-1")]}).verdicts
    assert verdict.best == (0, "m-0") and verdict.runner_up == (1, "m-1")
    # dev SDL: the uniform first block, then 90 · (0.5 − 0.5)⁺ (layer 0), 90 · 0.3 (layer 1)
    assert verdict.best_value == Estimate(FIRST_BLOCK, FIRST_BLOCK, FIRST_BLOCK).format()
    assert verdict.runner_up_value.startswith(f"{FIRST_BLOCK + 27:.3g}")
    assert verdict.test.first == "m-0" and verdict.test.accuracy_first == 0.70


def test_no_confirmatory_test_without_a_development_split():
    results = [
        _curve("m-0", {10: [0.9, 1.1], 100: [0.45, 0.55]}, range(60), dev=False),
        _curve("m-1", {10: [0.6, 0.6], 100: [0.3, 0.3]}, range(10), dev=False),
    ]
    (verdict,) = analyse_layers(METHOD, results, {"m": [(0, "m-0"), (1, "m-1")]}).verdicts
    assert verdict.best == (1, "m-1") and verdict.chosen_on == "test"
    assert verdict.test is None and verdict.tested_on == ""
    assert "no confirmatory test" in verdict.describe()


def test_words_clustered_in_sentences_get_the_clustered_test():
    clusters = np.arange(N_TEST) // 5  # 40 sentences of 5 words
    results = [
        _curve("m-0", {10: [0.9, 1.1], 100: [0.45, 0.55]}, range(60), clusters=clusters),
        _curve("m-1", {10: [0.6, 0.6], 100: [0.3, 0.3]}, range(10), clusters=clusters),
    ]
    (verdict,) = analyse_layers(
        METHOD, results, {"m": [(0, "m-0"), (1, "m-1")]}, n_simulations=200
    ).verdicts
    test = verdict.test
    # the 50 words layer 0 alone gets wrong fill 10 whole sentences, d_j = 5 each: of the
    # 2^10 sign patterns only all-plus and all-minus reach |T| = 50, p = 2/1024
    expected = 2 / 2**10
    assert sign_flip_test(_correct(range(10)), _correct(range(60)), clusters).p_value == expected
    assert test.test == CLUSTERED and test.n_clusters == 40
    assert test.p_values == (expected, expected)
    # far fewer independent units than 50 words: weaker evidence than McNemar's χ² = 50 says
    assert expected > stats.chi2.sf(50.0, df=1) * 1e3
    # decision power: a bootstrap test set holds X ~ Bin(40, ¼) such sentences, p = 2^(1 − X)
    # below α = 0.05 iff X ≥ 6 (one comparison in the sweep; both seeds alike)
    assert test.comparisons == 1 and test.power_level == 0.05
    assert test.power == pytest.approx(stats.binom.sf(5, 40, 0.25), abs=0.05)
    text = verdict.describe()
    assert "sign-flip randomisation test of the sentences' discordance differences" in text
    assert "(exact over all 2^10 sign patterns of the 10 sentences with a difference)" in text
    assert "p = 0.002" in text and "in 40 sentences" in text
    assert "power of the decision 0.9" in text and "all 2 seeds reject at α = 0.05" in text


@pytest.mark.parametrize(
    ("better", "worse", "clusters", "exact"),
    [
        # two one-word sentences, A right on both, B wrong on both: exact McNemar p = 0.5
        ([1, 1], [0, 0], [0, 1], 0.5),
        # three 4-word sentences, B wrong on exactly one word of each: exact p = 0.25
        ([1] * 12, [0, 1, 1, 1] * 3, [0] * 4 + [1] * 4 + [2] * 4, 0.25),
    ],
)
def test_sentences_that_differ_alike_are_no_established_difference(better, worse, clusters, exact):
    # every sentence has the same share of discordant words: Obuchowski's variance estimate
    # is 0, which made χ² infinite, p "< 1e-300", power 1.00 and the verdict "established"
    ids = np.array(clusters)
    results = [
        _curve("m-0", {10: [0.6, 0.6], 100: [0.3, 0.3]}, (), clusters=ids, correct=better),
        _curve("m-1", {10: [0.9, 1.1], 100: [0.45, 0.55]}, (), clusters=ids, correct=worse),
    ]
    analysis = analyse_layers(METHOD, results, {"m": [(0, "m-0"), (1, "m-1")]})
    (verdict,) = analysis.verdicts
    test = verdict.test
    assert verdict.best == (0, "m-0") and test.test == CLUSTERED
    assert test.p_values == (exact, exact) and test.p_adjusted == exact >= 0.25
    assert test.power == 0.0 and not test.established
    text = verdict.describe()
    assert "not an established difference" in text and "is more accurate" not in text
    assert f"p = {exact:g}" in text and "< 1e-300" not in text
    assert analysis.rows[1].previous.cell() == f"p = {exact:g}, power 0.00"
    # the test sentences this comparison would need: the same differences, more sentences
    assert test.sentences_needed is not None and test.sentences_needed > len(set(clusters))
    assert f"about {test.sentences_needed:,} test sentences" in text


def test_the_power_is_that_of_the_decision_at_holms_level():
    # three layers, two comparisons (0-1, which is also the verdict's pair, and 1-2): the
    # power asks both seeds to reject at α/2 = 0.025. 40 sentences of 5 words; layer 1 alone
    # right on all words of sentences 2..5 (d = 5, four sentences): a bootstrap test set
    # holds X ~ Bin(40, 1/10) of them, p = 2^(1 − X) < 0.025 iff X ≥ 7, < 0.05 iff X ≥ 6
    clusters = np.arange(N_TEST) // 5
    results = [
        _curve("m-0", {10: [0.9, 1.1], 100: [0.45, 0.55]}, range(30), clusters=clusters),
        _curve("m-1", {10: [0.6, 0.6], 100: [0.3, 0.3]}, range(10), clusters=clusters),
        _curve("m-2", {10: [0.7, 0.7], 100: [0.6, 0.6]}, range(12), clusters=clusters),
    ]
    analysis = analyse_layers(METHOD, results, SWEEPS, n_simulations=2000)
    test = analysis.verdicts[0].test
    assert (test.first, test.second) == ("m-1", "m-0") and test.p_values == (2 / 16,) * 2
    assert test.comparisons == 2 and test.power_level == 0.025
    expected = stats.binom.sf(6, 40, 0.1)
    assert test.power == pytest.approx(expected, abs=0.03)
    # the per-seed power at the unadjusted α, pooled, was larger: P(X ≥ 6)
    assert stats.binom.sf(5, 40, 0.1) > expected + 0.05
    assert "α/m = 0.05/2 = 0.025, Holm's first step over the sweep's m = 2" in test.describe()


def test_a_version_2_power_is_read_as_pooled_per_seed():
    old = {"first": "a", "second": "b", "accuracy_first": 0.9, "accuracy_second": 0.8,
           "p_values": [0.01], "power": 0.7, "alpha": 0.05, "n_test": 100,
           "recommended_n_train": 5000, "problem": None, "test": "McNemar", "n_clusters": None,
           "p_adjusted": 0.01, "recommended_sentences": 300, "p_value": 0.01}  # fmt: skip
    test = PairTest.from_dict(old)
    assert test.power_level is None and test.sentences_needed is None
    assert "pooled over seeds: a result of an older version" in test.describe()


def test_underflowed_p_values_are_written_as_a_bound():
    assert format_p(0.0) == "< 1e-300" and format_p(3e-301) == "< 1e-300"
    assert format_p(0.0123) == "0.012"
    assert format_p(0.0, "p") == "p < 1e-300" and format_p(0.0123, "p") == "p = 0.012"
    # a layer table's cell and a verdict write an underflowed p as a bound, never "p = 0":
    # 1,200 sentences, A right and B wrong on each, p = 2^-1199 below the smallest double
    (a, b), ids = ([np.ones(1200, bool)] * 2, [np.zeros(1200, bool)] * 2), np.arange(1200)
    certain = [Summary({}, Estimate(1.0), SeedCorrectness((0, 1), x, "d", 9, ids), (), 4, 2)
               for x in (a, b)]  # fmt: skip
    test = pair_test("x", certain[0], "y", certain[1], n_simulations=20)
    assert test.p_value == 0.0
    assert test.cell().startswith("p < 1e-300") and "p < 1e-300 (the largest" in test.describe()


def test_adjacent_layers_without_support_get_the_bounds_recommendation():
    analysis = analyse_layers(METHOD, RESULTS, SWEEPS, n_simulations=200)
    one_to_two = analysis.rows[2].previous
    assert (one_to_two.first, one_to_two.second) == ("m-1", "m-2")
    # errors 0..9 vs 0..11: b = 0, c = 2 (exact test): p = 2 · P[Bin(2, ½) ≤ 0] = 0.5
    assert one_to_two.p_values == (0.5, 0.5) and not one_to_two.established
    # ⌈2 · ln(2|F|/δ) · (2 / gap)²⌉, ln|F| = 32 ln 2 + ln P, δ = 1e-8 (Zhu et al. §3.2–3.4);
    # a binary MLP 4 → 8 → 1 logit has P = 5·8 + 9·1 = 49 parameters (§3.4 fn. 6)
    log_class = 32 * math.log(2) + math.log(49)
    gap = 2 / N_TEST
    expected = math.ceil(2 * (math.log(2) + log_class - math.log(1e-8)) * (2 / gap) ** 2)
    assert one_to_two.recommended_n_train == expected
    assert f"about {expected:,} training examples" in one_to_two.describe()
    assert analysis.rows[0].previous is None


def test_no_test_without_paired_predictions():
    summaries = METHOD.summaries(RESULTS)
    one, zero = summaries["m-1"], summaries["m-0"]
    elsewhere = SeedCorrectness((0, 1), zero.correctness.correct, labels_digest(LABELS[::-1]), 100)
    unpaired = Summary(zero.estimates, zero.accuracy, elsewhere, (8,), 4, 2)
    test = pair_test("m-1", one, "m-0", unpaired)
    assert test.problem.startswith("the two were evaluated on different test sets")
    assert test.p_values == () and test.power is None and not test.established
    older = Summary(zero.estimates, zero.accuracy, None, (8,), 4, 2)
    assert "older version" in pair_test("m-1", one, "m-0", older).problem
    one_sentence = SeedCorrectness(
        (0, 1), zero.correctness.correct, labels_digest(LABELS), 100, np.zeros(N_TEST, np.int64)
    )
    alone = [Summary(s.estimates, s.accuracy, replace(one_sentence, correct=s.correctness.correct),
                     (8,), 4, 2) for s in (one, zero)]  # fmt: skip
    assert pair_test("m-1", alone[0], "m-0", alone[1]).problem.startswith("the test set holds one")
    other_seed = SeedCorrectness((7,), zero.correctness.correct[:1], labels_digest(LABELS), 100)
    lone = Summary(zero.estimates, zero.accuracy, other_seed, (8,), 4, 2)
    assert pair_test("m-1", one, "m-0", lone).problem == "the two share no seed"


def test_equal_accuracies_are_reported_as_a_possible_collapse():
    summaries = METHOD.summaries(RESULTS)
    same = Summary({}, summaries["m-1"].accuracy, summaries["m-1"].correctness, (8,), 4, 2)
    test = pair_test("m-1", summaries["m-1"], "copy", same, n_simulations=50)
    assert test.p_values == (1.0, 1.0) and test.power == 0.0
    assert test.recommended_n_train is None and "may have collapsed" in test.describe()


def test_no_best_layer_when_every_value_is_a_lower_bound():
    only_bounds = {"m": [(2, "m-2")]}
    (verdict,) = analyse_layers(METHOD, RESULTS, only_bounds).verdicts
    assert verdict.best is None and "only a lower bound" in verdict.reason
    (single,) = analyse_layers(METHOD, RESULTS, {"m": [(1, "m-1")]}).verdicts
    assert single.best == (1, "m-1") and single.runner_up is None
    assert single.describe().endswith("the sweep has one layer only")
    with pytest.raises(ValueError, match=r"sweep 'm': no result for \['m-9'\]"):
        analyse_layers(METHOD, RESULTS, {"m": [(9, "m-9")]})


def test_estimates_format_and_order():
    assert Estimate(0.8123).format() == "0.812"
    assert Estimate(2540.0, 1460.0, 2540.0).format() == "2,540 [1,460, 2,540]"
    bound = Estimate.over_seeds([1288.0, 1700.0], 1494.0, lower_bound=True, seed_bounds=[1, 0])
    assert bound.format() == "> 1,494 [> 1,288, 1,700]"
    lower = Headline("x", "x", "lower", "x")
    higher = Headline("y", "y", "higher", "y")
    values = [Estimate(3.0), Estimate(1.0, lower_bound=True), Estimate(2.0)]
    assert lower.best_first(values) == [2, 0, 1]  # tight values first, lower bounds last
    assert higher.best_first(values) == [0, 2, 1]
    with pytest.raises(ValueError, match="better"):
        Headline("z", "z", "sideways", "z")


def test_files_round_trip_and_tables(tmp_path):
    analysis = analyse_layers(METHOD, RESULTS, SWEEPS, n_simulations=100)
    paths = write_layer_files(analysis, tmp_path)
    assert [p.name for p in paths] == [
        "layers.png", "layers.pdf", "layers.json", "layers.md", "layers.tex",
    ]  # fmt: skip
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    svg = write_layer_files(analysis, tmp_path / "svg", FigureOptions(("svg",)))
    assert svg[0].name == "layers.svg" and svg[0].read_bytes().startswith(b"<?xml")
    figure = analysis.plot()
    assert len(figure.legends) == 1 and [ax.get_title() for ax in figure.axes] == [
        "SDL at ε = 0.5 (nats)", "εSC at ε = 0.5 (examples)", "test accuracy of the best probes",
    ]  # fmt: skip
    loaded = LayerAnalysis.load(paths[2])
    assert loaded.to_dict() == json.loads(paths[2].read_text()) == analysis.to_dict()
    assert str(loaded) == str(analysis)
    markdown = paths[3].read_text()
    assert "| m | 1 | 10.9 [10.9, 10.9] | 100 [100, 100] |" in markdown
    assert "> 19.9 [> 19.9, > 19.9]" in markdown
    assert "best layer 1 by SDL at ε = 0.5 (nats)" in markdown
    frame = analysis.to_frame()
    assert set(frame["measure"]) == {"SDL", "SC", "accuracy"} and len(frame) == 9
    with pytest.raises(ValueError, match=r"probemeter\.layers/3"):
        LayerAnalysis.from_dict({"schema": "other"})


def test_a_control_line_is_listed_once_per_model_in_the_legend():
    def estimate(value):
        return {"value": value, "low": None, "high": None, "lower_bound": False}

    panel = "online codelength (kbits)"
    headlines = [
        {"name": "task", "label": panel, "better": "lower", "panel": panel},
        {"name": "control", "label": f"control: {panel}", "better": "lower", "panel": panel,
         "dashed": True},
        {"name": "ratio", "label": "compression", "better": "higher", "panel": "compression"},
        {"name": "control_ratio", "label": "control: compression", "better": "higher",
         "panel": "compression", "dashed": True},
    ]  # fmt: skip
    rows = [
        {"sweep": "m", "layer": layer, "representation": f"m-{layer}",
         "estimates": {name: estimate(1.0 + layer) for name in ("task", "control", "ratio",
                                                                 "control_ratio")},
         "accuracy": estimate(0.5), "previous": None}
        for layer in (0, 1)
    ]  # fmt: skip
    analysis = LayerAnalysis.from_dict(
        {"schema": "probemeter.layers/2", "method": "mdl", "alpha": 0.05,
         "headlines": headlines, "rows": rows, "verdicts": []}
    )  # fmt: skip
    labels = [text.get_text() for text in analysis.plot().legends[0].get_texts()]
    assert labels == ["m", "m, control"]


# Three sites a, b, c of one entry e, two blocks each. SDL on the development split (= the test
# losses here) is FIRST_BLOCK + 90·(mean L(10) − ε): a0 +9, a1 +13.5, b0 +18, b1 +27, c0 +36, c1
# a lower bound (L(100) > ε): the ranking is a0, a1, b0, b1, c0, c1. The best a0 errs on 10
# test examples; its runner-up a1 (the same site) on those and 30 more, b's best b0 on 4 more,
# c's best c0 on 20 more.
SITE_RESULTS = [
    _curve("e-a-0", {10: [0.6, 0.6], 100: [0.3, 0.3]}, range(10)),
    _curve("e-a-1", {10: [0.65, 0.65], 100: [0.3, 0.3]}, range(40)),
    _curve("e-b-0", {10: [0.7, 0.7], 100: [0.3, 0.3]}, range(14)),
    _curve("e-b-1", {10: [0.8, 0.8], 100: [0.3, 0.3]}, range(12)),
    _curve("e-c-0", {10: [0.9, 0.9], 100: [0.3, 0.3]}, range(30)),
    _curve("e-c-1", {10: [0.7, 0.7], 100: [0.6, 0.6]}, range(12)),
]
SITE_SWEEPS = {f"e-{s}": [(1, f"e-{s}-1"), (0, f"e-{s}-0")] for s in "abc"}
SITES = {"e": {"a": "e-a", "b": "e-b", "c": "e-c"}}


def test_one_verdict_across_sites_and_blocks_with_holm_over_its_family():
    """The best (site, block) by SDL on the development split, tested against the runner-up
    and the best block of each other site: three distinct comparisons, their p-values
    McNemar's by hand (χ² at 30 discordant pairs, the exact binomial below 25) and Holm's
    adjustment over m = 3 by hand; the power asked at α/3."""
    analysis = analyse_layers(METHOD, SITE_RESULTS, SITE_SWEEPS, n_simulations=200, sites=SITES)
    (verdict,) = analysis.sites
    assert [(b.site, b.layer) for b in verdict.ranking] == [
        ("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0), ("c", 1),
    ]  # fmt: skip
    assert verdict.ranking[0].estimate.value == pytest.approx(FIRST_BLOCK + 9)
    assert verdict.ranking[-1].estimate.lower_bound
    assert (verdict.best.site, verdict.best.layer) == ("a", 0)
    assert verdict.chosen_on.startswith("dev: 11 pool examples") and verdict.tested_on == "test"
    roles = {c.roles: (c.other.site, c.other.layer) for c in verdict.comparisons}
    assert roles == {("runner-up",): ("a", 1), ("best of b",): ("b", 0), ("best of c",): ("c", 0)}
    p = {c.other.representation: c.test.p_value for c in verdict.comparisons}
    p_a1, p_b0, p_c0 = stats.chi2.sf(30.0, df=1), 2 * 0.5**4, 2 * 0.5**20
    assert p == pytest.approx({"e-a-1": p_a1, "e-b-0": p_b0, "e-c-0": p_c0})
    # Holm, ascending: 3·p_a1; max(3·p_a1, 2·p_c0) = 2·p_c0; max(2·p_c0, 1·p_b0) = p_b0
    adjusted = {c.other.representation: c.test.p_adjusted for c in verdict.comparisons}
    assert adjusted == pytest.approx({"e-a-1": 3 * p_a1, "e-b-0": p_b0, "e-c-0": 2 * p_c0})
    for comparison in verdict.comparisons:
        test = comparison.test
        assert test.first == "e-a-0" and test.comparisons == 3
        assert test.power_level == pytest.approx(0.05 / 3)
    established = {c.other.representation: c.test.established for c in verdict.comparisons}
    assert established == {"e-a-1": True, "e-b-0": False, "e-c-0": True}
    assert not verdict.established_best  # b's best is not separated from it
    text = verdict.describe()
    assert "best a block 0 of 6 (site, block) pairs by SDL" in text
    assert "Holm-adjusted over the family's m = 3 comparisons" in text
    assert "across-sites family's comparisons" in text
    assert "a block 0 is not established as the best (site, block)" in text
    # the per-site sweeps are as before: their own verdicts, Holm over their own comparisons
    assert [v.sweep for v in analysis.verdicts] == ["e-a", "e-b", "e-c"]


def test_a_runner_up_that_is_another_sites_best_is_one_comparison():
    """With two sites, the runner-up b0 is also b's best: one comparison (m = 1), its
    adjusted p-value the p-value itself."""
    results = [SITE_RESULTS[i] for i in (0, 2, 3, 5)]  # a0, b0, b1, c1 as a's second block
    sweeps = {"e-a": [(0, "e-a-0"), (1, "e-c-1")], "e-b": [(0, "e-b-0"), (1, "e-b-1")]}
    analysis = analyse_layers(
        METHOD, results, sweeps, n_simulations=200, sites={"e": {"a": "e-a", "b": "e-b"}}
    )
    (verdict,) = analysis.sites
    (comparison,) = verdict.comparisons
    assert comparison.roles == ("runner-up", "best of b")
    assert comparison.test.p_adjusted == comparison.test.p_value == pytest.approx(2 * 0.5**4)
    assert comparison.test.comparisons == 1


def test_no_confirmatory_test_across_sites_without_a_development_split():
    results = [_curve(f"e-{s}-{b}", {10: [0.6 + 0.05 * (2 * "ab".index(s) + b)] * 2,
                                     100: [0.3, 0.3]}, range(10), dev=False)
               for s in "ab" for b in (0, 1)]  # fmt: skip
    sweeps = {f"e-{s}": [(0, f"e-{s}-0"), (1, f"e-{s}-1")] for s in "ab"}
    analysis = analyse_layers(
        METHOD, results, sweeps, n_simulations=50, sites={"e": {"a": "e-a", "b": "e-b"}}
    )
    (verdict,) = analysis.sites
    assert verdict.chosen_on == "test" and verdict.tested_on == ""
    assert all(c.test is None for c in verdict.comparisons)
    assert "no confirmatory test" in verdict.describe()


def test_the_across_sites_files_round_trip_with_its_figure(tmp_path):
    analysis = analyse_layers(METHOD, SITE_RESULTS, SITE_SWEEPS, n_simulations=100, sites=SITES)
    paths = write_layer_files(analysis, tmp_path)
    assert [p.name for p in paths] == [
        "layers.png", "layers.pdf", "sites.png", "sites.pdf", "layers.json", "layers.md",
        "layers.tex",
    ]  # fmt: skip
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    figure = analysis.plot_sites()
    (ax,) = figure.axes
    assert ax.get_title().startswith("e: SDL at ε = 0.5 (nats) on dev")
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert set(labels) == {
        "a", "b", "c", "c: lower bound", "best (site, block)", "tested against the best",
    }  # fmt: skip
    payload = json.loads(paths[4].read_text())
    assert payload["schema"] == "probemeter.layers/5"
    loaded = LayerAnalysis.load(paths[4])
    assert loaded.to_dict() == payload == analysis.to_dict()
    assert str(loaded) == str(analysis)
    markdown = paths[5].read_text()
    assert "## Across sites" in markdown
    assert "| 1 | a | 0 | 10.9 [10.9, 10.9] | best |" in markdown
    assert "| 3 | b | 0 |" in markdown and "best of b: accuracy 0.9500 vs 0.9300" in markdown
    assert "% Across sites" not in paths[6].read_text()
    assert "\\section*{Across sites}" in paths[6].read_text()
    # a version-4 document (before the across-sites verdicts) reads with none
    old = {**analysis.to_dict(), "schema": "probemeter.layers/4"}
    del old["sites"]
    assert LayerAnalysis.from_dict(old).sites == ()
