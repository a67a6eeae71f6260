"""Data requirements and statistical power of probing comparisons (Zhu et al., 2022).

McNemar against statsmodels on fixed tables; the paper's numeric bound examples; recommended N
against its closed form; stratified and rotation splits; power ≈ α under a true null and → 1
for a large difference; collapse verdicts; bad input.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from exported import assert_exported
from scipy.stats import norm
from sklearn.datasets import load_digits
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from probemeter import Execution
from probemeter.data import ProbeData
from probemeter.power.bounds import (
    generalization_bound,
    log_function_class_size,
    probe_parameter_count,
    recommend_train_size,
    required_train_size,
    total_data_size,
)
from probemeter.power.collapse import collapse_verdict, detect_collapse
from probemeter.power.defaults import POWER_TRAINING
from probemeter.power.mcnemar import contingency_table, mcnemar, mcnemar_p_values
from probemeter.power.paired import PairedComparison, paired_data, run_configurations
from probemeter.power.sampling import (
    pilot_splits,
    rotation_splits,
    stratified_split,
    stratified_splits,
)
from probemeter.power.simulation import simulate_power
from probemeter.power.table import PowerReport, power_frames, power_report
from probemeter.probes import MLP

TABLES = [
    [[10, 3], [12, 40]],  # b + c = 15: exact
    [[0, 0], [7, 93]],  # one-sided discordance, small
    [[101, 121], [59, 33]],  # large: chi2
    [[5, 40], [25, 930]],
    [[200, 13], [11, 776]],
]


# --------------------------------------------------------------------------- McNemar


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("correction", [False, True])
def test_mcnemar_chi2_matches_statsmodels(table, correction):
    ours = mcnemar(table=table, method="chi2", correction=correction)
    reference = sm_mcnemar(np.array(table), exact=False, correction=correction)
    assert ours.statistic == pytest.approx(reference.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-10)


@pytest.mark.parametrize("table", TABLES)
def test_mcnemar_exact_matches_statsmodels(table):
    ours = mcnemar(table=table, method="exact")
    reference = sm_mcnemar(np.array(table), exact=True)
    assert ours.statistic == reference.statistic
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-10)


def test_mcnemar_auto_switches_at_25_discordant_pairs():
    assert mcnemar(table=[[0, 12], [12, 0]]).method == "exact"  # b + c = 24
    assert mcnemar(table=[[0, 13], [12, 0]]).method == "chi2"  # b + c = 25


def test_mcnemar_from_predictions_builds_table_1():
    correct_a = np.array([1, 1, 0, 0, 1, 0, 1], dtype=bool)
    correct_b = np.array([1, 0, 1, 0, 0, 1, 1], dtype=bool)
    # rows: A incorrect / correct; columns: B incorrect / correct
    np.testing.assert_array_equal(contingency_table(correct_a, correct_b), [[1, 2], [2, 2]])
    assert mcnemar(correct_a, correct_b).table == ((1, 2), (2, 2))


@pytest.mark.parametrize("value", [True, False])
def test_mcnemar_perfect_or_zero_accuracy_does_not_break(value):
    """Both probes 100 % (or 0 %) correct: no discordant pair, p = 1 (a known pitfall)."""
    same = np.full(50, value)
    result = mcnemar(same, same)
    assert result.p_value == 1.0 and result.statistic == 0.0
    assert mcnemar_p_values([0, 0], [0, 0], method="chi2").tolist() == [1.0, 1.0]


def test_mcnemar_rejects_unpaired_predictions():
    with pytest.raises(ValueError, match="paired"):
        mcnemar(np.ones(10, bool), np.ones(11, bool))
    with pytest.raises(ValueError, match="table"):
        mcnemar(table=[[1, 2, 3], [4, 5, 6]])


# --------------------------------------------------------------------------- bounds


def test_paper_bound_examples_reproduced_with_the_papers_count():
    """§3.4: D = 4,096 logistic regression (D + 1 parameters, 32 bits), δ = 1e-8."""
    log_size = log_function_class_size(4097, 32, counting="paper")
    assert round(generalization_bound(65_536, log_size, delta=1e-8), 3) == 0.039
    n = required_train_size(0.05, log_size, delta=1e-8)
    assert n == 39_691 and round(n, -4) == 40_000  # "N = 40k"


@pytest.mark.parametrize(
    ("printed_gap", "printed_n"),
    [(0.1313, 22_263), (0.1281, 23_362), (0.0879, 49_647), (0.1331, 21_662), (0.1488, 17_331)],
)
def test_paper_table_2_reproduced(printed_gap, printed_n):
    """Table 2 (BERT, D = 768, LogReg): the printed N_train is the closed form at a gap that
    rounds to the printed 4-decimal mean |R1 - R2| (the printed gap is itself rounded)."""
    log_size = log_function_class_size(769, counting="paper")
    implied_gap = 2 * generalization_bound(printed_n, log_size)
    assert round(implied_gap, 4) == printed_gap
    ours = recommend_train_size(printed_gap, 769).n_train
    assert abs(ours - printed_n) / printed_n < 2 * 0.00005 / printed_gap + 1e-6


def test_parameter_counts_follow_zhu_et_al_footnote_6():
    """§3.4 and fn. 6: a binary probe has one logit. LogReg: D + 1; MLP with one hidden layer
    of H units: (D + 1)H + H + 1, printed as 15,401 for D = 768 (BERT), H = 20 (§4.6). The
    footnote's "D + 1 = 799" is a misprint: 15,401 = 769·20 + 20 + 1, and Table 2 is
    reproduced with 769 (test_paper_table_2_reproduced)."""
    assert probe_parameter_count(768) == 769
    assert probe_parameter_count(4096) == 4097  # the §3.4 InferSent example
    assert probe_parameter_count(768, 2, (20,)) == 15_401 == (768 + 1) * 20 + 20 + 1
    assert probe_parameter_count(300, 2, (20,)) == 301 * 20 + 21  # GloVe
    # K > 2 (the paper gives no count): K logits, K(D + 1) and (D + 1)H + (H + 1)K
    assert probe_parameter_count(768, 6) == 6 * 769
    assert probe_parameter_count(64, 10, (32,)) == 65 * 32 + 33 * 10
    # two hidden layers, binary: (D + 1)H1 + (H1 + 1)H2 + H2 + 1
    assert probe_parameter_count(10, 2, (4, 3)) == 11 * 4 + 5 * 3 + 3 + 1
    for bad, name in (((0,), "n_features"), ((10, 1), "n_classes"), ((10, 2, (0,)), "hidden")):
        with pytest.raises(ValueError, match=name):
            probe_parameter_count(*bad)


def test_paper_table_2_row_reproduced_from_the_counted_parameters():
    """Table 2, first row (BERT, D = 768, LogReg, mean gap .1313): N_train 22,263 within the
    rounding of the printed gap, from the counted D + 1 parameters — K(D + 1) = 1,538 would
    give 22,568, outside it."""
    ours = recommend_train_size(0.1313, probe_parameter_count(768, 2)).n_train
    assert abs(ours - 22_263) / 22_263 < 2 * 0.00005 / 0.1313
    doubled = recommend_train_size(0.1313, 2 * 769).n_train
    assert abs(doubled - 22_263) / 22_263 > 2 * 0.00005 / 0.1313


def test_exact_count_makes_the_papers_example_vacuous():
    """The inconsistency we document: |F| = (2^32)^(D+1) is the real count of D + 1 32-bit
    parameters, and with it the paper's example bound exceeds 1 (vacuous for accuracy)."""
    exact = log_function_class_size(4097, 32, counting="exact")
    assert exact == pytest.approx(4097 * 32 * math.log(2))
    assert generalization_bound(65_536, exact) > 1.6
    assert required_train_size(0.05, exact) > 70_000_000


def test_recommendation_matches_closed_form_and_shrinks_with_the_gap():
    n_parameters, delta = 650, 1e-6
    log_term = math.log(2) + 32 * math.log(2) + math.log(n_parameters) - math.log(delta)
    previous = math.inf
    for gap in (0.01, 0.02, 0.05, 0.1, 0.3):
        rec = recommend_train_size(gap, n_parameters, delta=delta, eta=4)
        assert rec.n_train == math.ceil(2 * log_term / (gap / 2) ** 2)
        assert rec.n_total == math.ceil(1.5 * rec.n_train)
        assert rec.n_train < previous
        previous = rec.n_train
    assert (
        recommend_train_size(0.1, 650, factor=10).n_train > recommend_train_size(0.1, 650).n_train
    )


def test_bound_variants():
    log_size = log_function_class_size(100)
    base = generalization_bound(1000, log_size)
    assert generalization_bound(1000, log_size, variant="control") == pytest.approx(2 * base)
    assert generalization_bound(
        1000, log_size, variant="prequential", C=0.5, first_block_fraction=0.01
    ) == pytest.approx(50 * base)
    assert required_train_size(0.1, log_size, variant="control") == pytest.approx(
        4 * required_train_size(0.1, log_size), rel=1e-4
    )
    assert total_data_size(1000, eta=4) == 1500 and total_data_size(1000, eta=8) == 1250


@pytest.mark.parametrize("delta", [0, 1, -0.1, 1.5])
def test_delta_outside_unit_interval_is_rejected(delta):
    with pytest.raises(ValueError, match="delta"):
        recommend_train_size(0.1, 100, delta=delta)
    with pytest.raises(ValueError, match="delta"):
        generalization_bound(100, 10.0, delta=delta)


def test_zero_gap_explains_a_possible_collapse():
    with pytest.raises(ValueError, match="collapsed"):
        recommend_train_size(0.0, 100)
    with pytest.raises(ValueError, match="gap"):
        recommend_train_size(-0.1, 100)


# --------------------------------------------------------------------------- splits


def test_stratified_splits_have_exact_per_class_counts_and_are_nested():
    y = np.repeat(np.arange(3), [400, 350, 500])
    splits = stratified_splits(y, [2**5, 2**6, 2**7], random_state=3)
    for m, split in zip([32, 64, 128], splits):
        for role, per_class in (("train", m), ("dev", m // 4), ("test", m // 4)):
            np.testing.assert_array_equal(np.bincount(y[getattr(split, role)]), [per_class] * 3)
        roles = [split.train, split.dev, split.test]
        assert sum(len(r) for r in roles) == len(np.unique(np.concatenate(roles)))  # disjoint
    assert splits[0].sizes == (96, 24, 24)  # fn. 4's 4:1:1
    for small, large in itertools.pairwise(splits):
        for role in ("train", "dev", "test"):
            assert set(getattr(small, role)) <= set(getattr(large, role))


def test_stratified_split_rejects_sizes_larger_than_the_data():
    y = np.repeat(np.arange(2), [100, 40])
    with pytest.raises(ValueError, match="class 1"):
        stratified_split(y, 32)  # needs 48 of each class
    with pytest.raises(ValueError, match="divisible"):
        stratified_split(y, 6)


def test_pilots_are_independent_stratified_draws():
    y = np.repeat(np.arange(2), 500)
    pilots = pilot_splits(y, 16, 4, random_state=1)
    assert len({tuple(p.test) for p in pilots}) == 4
    assert all(np.bincount(y[p.train]).tolist() == [16, 16] for p in pilots)


def test_six_fold_rotation_tests_every_example_exactly_once():
    y = np.random.default_rng(0).integers(0, 4, size=203)
    splits = rotation_splits(y, 6, random_state=2)
    tested = np.concatenate([s.test for s in splits])
    np.testing.assert_array_equal(np.sort(tested), np.arange(203))
    for i, split in enumerate(splits):
        # fold i validates in run i and tested in run i - 1
        np.testing.assert_array_equal(split.dev, splits[(i - 1) % 6].test)
        together = np.concatenate([split.train, split.dev, split.test])
        np.testing.assert_array_equal(np.sort(together), np.arange(203))


# --------------------------------------------------------------------------- power


def test_power_is_alpha_under_a_true_null_and_one_for_a_large_difference():
    rng = np.random.default_rng(0)
    n = 200_000
    null_a = [rng.random(n) < 0.8 for _ in range(3)]
    null_b = [rng.random(n) < 0.8 for _ in range(3)]
    null = simulate_power(null_a, null_b, [200, 1000], n_simulations=2000)
    assert np.all(np.abs(null.table["power"] - 0.05) < 0.015)
    strong_b = [rng.random(n) < 0.6 for _ in range(3)]
    strong = simulate_power(null_a, strong_b, [50, 200, 1000], n_simulations=500)
    assert strong.table["power"].iloc[-1] == 1.0
    assert np.all(np.diff(strong.table["power"]) >= 0)
    assert strong.smallest_sufficient() <= 200
    # identical predictions: no discordant pair ever, so the test never rejects
    same = simulate_power(null_a, null_a, [100], n_simulations=100)
    assert same.table["power"].iloc[0] == 0.0


def _balanced_null(n=20_000, discordant=1500, seeds=3):
    """Two classifiers whose disagreement is exchangeable: on each seed's test set exactly
    ``discordant`` examples are right only for A and as many only for B (b = c), placed at
    random, plus 3,000 examples both get wrong."""
    rng = np.random.default_rng(13)
    correct_a, correct_b = [], []
    for _ in range(seeds):
        a, b = np.ones(n, bool), np.ones(n, bool)
        order = rng.permutation(n)
        b[order[:discordant]] = False
        a[order[discordant : 2 * discordant]] = False
        a[order[2 * discordant : 2 * discordant + 3000]] = False
        b[order[2 * discordant : 2 * discordant + 3000]] = False
        correct_a.append(a)
        correct_b.append(b)
    return correct_a, correct_b


def test_bootstrap_keeps_the_null_rejection_rate_at_alpha_up_to_and_beyond_the_test_size():
    """Zhu et al. §3.5 (Card et al., 2020): resample the test set with replacement. Under a
    true null (b = c on a test set of n = 20,000) the bootstrap rejects at ≈ α at every m, also
    m ≥ n; without replacement the rate falls as m → n, following the finite-population
    correction 2·Φ(−z_{α/2}·sqrt((n − 1)/(n − m))), to exactly 0 at m = n (every subsample is
    the observed, balanced table). Measured (3 seeds × 4,000 simulations): with replacement
    0.047, 0.054, 0.050, 0.048, 0.050, 0.055, 0.053 at m = 1,024 … 40,000; without 0.043, 0.029,
    0.008, 0.000, 0.000, 0.000."""
    n, alpha = 20_000, 0.05
    correct_a, correct_b = _balanced_null(n)
    sizes = [1024, 4096, 8192, 16_384, 19_000, 20_000, 40_000]
    boot = simulate_power(correct_a, correct_b, sizes, n_simulations=4000).table
    assert (boot["test_size"] == sizes).all()
    # binomial standard error of a rate of 0.05 over 12,000 simulations is 0.002
    assert np.all(np.abs(boot["power"] - alpha) < 0.012), boot["power"].tolist()
    without = simulate_power(
        correct_a, correct_b, sizes[:-1], n_simulations=4000, replace=False
    ).table.set_index("test_size")["power"]
    for m in (1024, 4096, 8192, 16_384, 19_000):
        predicted = 2 * norm.sf(norm.isf(alpha / 2) * np.sqrt((n - 1) / (n - m)))
        assert abs(without[m] - predicted) < 0.012, (m, without[m], predicted)
    assert without[4096] < 0.035 and without[16_384] < 0.002 and without[20_000] == 0.0
    assert boot.set_index("test_size")["power"][16_384] > 0.04  # the bootstrap does not collapse
    defaults = simulate_power(correct_a, correct_b, [20_000], n_simulations=500)
    assert defaults.replace is True and defaults.table["power"].iloc[0] > 0.02


def test_power_pools_seeds_explicitly():
    """Power = significant simulations summed over seeds / (seeds × simulations)."""
    strong = [np.r_[np.ones(500, bool), np.zeros(500, bool)]]
    none = [np.ones(1000, bool)]
    pooled = simulate_power(
        [strong[0], none[0]], [np.zeros(1000, bool), none[0]], [400], n_simulations=200
    )
    assert pooled.table["power"].iloc[0] == pytest.approx(0.5)
    assert pooled.table["power_min"].iloc[0] == 0 and pooled.table["power_max"].iloc[0] == 1


def test_power_rejects_bad_input():
    a = [np.ones(100, bool)]
    with pytest.raises(ValueError, match="paired"):
        simulate_power(a, [np.ones(90, bool)])
    with pytest.raises(ValueError, match="larger than the data"):
        simulate_power(a, a, [200], replace=False)
    assert simulate_power(a, a, [200]).table["test_size"].iloc[0] == 200  # bootstrap default
    with pytest.raises(ValueError, match="replace must be true or false"):
        simulate_power(a, a, [50], replace="no")
    with pytest.raises(ValueError, match="alpha"):
        simulate_power(a, a, [50], alpha=1.5)


# --------------------------------------------------------------------------- trained runs


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = ((X - X.mean(0)) / (X.std(0) + 1e-9)).astype(np.float32)
    return X, y


TRAIN = {
    "config": replace(POWER_TRAINING, steps=200, lr=3e-3),
    "execution": Execution(n_jobs=1),
    "standardize": False,
}
FIVE_STEPS = replace(POWER_TRAINING, steps=5)


def test_trained_comparison_power_report_and_round_trip(digits, tmp_path):
    X, y = digits
    noisy = X + np.random.default_rng(1).normal(0, 2.0, X.shape).astype(np.float32)
    splits = stratified_splits(y, [8, 32, 96])
    runs = run_configurations({"clean": X, "noisy": noisy}, y, splits, 2, **TRAIN)
    comparison = runs.pair("clean", "noisy")
    assert len(comparison.runs) == 6 and comparison.n_parameters == (650, 650)
    # paired: every run's correctness is aligned with its split's test examples
    assert [len(c) for c in comparison.correct_a] == [20, 20, 80, 80, 240, 240]
    report = power_report([comparison], n_simulations=200)
    table = report.to_frame()
    assert (table["accuracy_a"] > table["accuracy_b"]).all()
    assert table["power"].iloc[-1] == 1.0 and np.diff(table["power"]).min() >= 0
    for _, row in table.iterrows():
        assert row["recommended_n_train"] == recommend_train_size(row["mean_gap"], 650).n_train
    report.save(tmp_path / "report.json")
    loaded = PowerReport.load(tmp_path / "report.json")
    assert (
        loaded.to_frame()["recommended_n_train"].tolist() == table["recommended_n_train"].tolist()
    )
    comparison.save(tmp_path / "comparison.json")
    again = PairedComparison.load(tmp_path / "comparison.json")
    for ours, theirs in zip(comparison.correct_b, again.correct_b):
        np.testing.assert_array_equal(ours, theirs)
    import matplotlib

    matplotlib.use("Agg")
    comparison.plot_bounds().figure.savefig(tmp_path / "bounds.png")
    report.plot().figure.savefig(tmp_path / "power.png")


def test_identically_distributed_configurations_have_power_near_alpha(digits):
    """A true null with real probes: two independent noise draws of the same scale. Over the
    6-fold rotation every example is tested once; subsamples of 200 reject at about α."""
    X, y = digits
    rng = np.random.default_rng(5)
    a, b = (X + rng.normal(0, 1.5, X.shape).astype(np.float32) for _ in range(2))
    runs = run_configurations({"a": a, "b": b}, y, rotation_splits(y, 6), 4, **TRAIN)
    curve = runs.pair("a", "b").power_curve(test_sizes=[200], n_simulations=2000)
    assert 0.02 < curve.table["power"].iloc[0] < 0.09  # measured 0.0475 at α = 0.05


def test_collapse_verdicts(digits):
    X, y = digits
    same = detect_collapse(X, X, y, seeds=2, **TRAIN)
    assert same.verdict == "collapsed" and same.interval == (0.0, 0.0)
    noise = X + np.random.default_rng(2).normal(0, 3.0, X.shape).astype(np.float32)
    different = detect_collapse(
        X, noise, y, method="pilots", n_pilots=4, per_class=16, seeds=2, **TRAIN
    )
    assert different.verdict == "not collapsed" and different.interval[1] < 0
    assert different.rejection_rate > 0.5 and len(different.evidence) == 8


def test_undecided_when_the_pilots_are_too_noisy():
    rng = np.random.default_rng(0)
    splits = rotation_splits(np.zeros(60, int), 6)
    runs = pd.DataFrame({"split": range(6), "seed": 0})
    correct_a = [rng.random(10) < 0.5 for _ in range(6)]
    correct_b = [rng.random(10) < 0.5 for _ in range(6)]
    comparison = PairedComparison.build("a", "b", splits, runs, correct_a, correct_b, (1, 1))
    assert collapse_verdict(comparison, tolerance=0.01).verdict == "undecided"


def test_unpaired_representations_are_rejected(digits):
    X, y = digits
    a = ProbeData.from_arrays(X[:1000], y[:1000], X[1000:], y[1000:])
    b = ProbeData.from_arrays(X[:1000], y[:1000], X[1000:1500], y[1000:1500])
    with pytest.raises(ValueError, match="paired"):
        paired_data(a, b)
    X_a, _, labels = paired_data(a, a)
    assert len(X_a) == len(labels) == 1797
    with pytest.raises(ValueError, match="paired"):
        run_configurations({"a": X, "b": X[:-1]}, y, rotation_splits(y), 1, **TRAIN)


# --------------------------------------------------------------------------- command line


@pytest.mark.slow
def test_cli_recommend_and_power(tmp_path, capsys, digits):
    from probemeter.cli.main import main

    assert main(["recommend", "--gap", "0.1313", "--features", "768"]) == 0
    assert "N_train = 22,247" in capsys.readouterr().out
    assert main(["recommend", "--r", "0.8", "0.8", "--parameters", "10"]) == 2
    assert "collapsed" in capsys.readouterr().err
    X, y = digits
    np.savez(tmp_path / "A.npz", X=X, y=y)
    np.savez(tmp_path / "B.npz", X=X + np.random.default_rng(0).normal(0, 3, X.shape), y=y)
    np.savez(tmp_path / "C.npz", X=X[:-1], y=y[:-1])
    common = ["--seeds", "1", "--steps", "100", "--n-jobs", "1", "--simulations", "100"]
    out = tmp_path / "out"
    argv = ["power", "--a", str(tmp_path / "A.npz"), "--b", str(tmp_path / "B.npz")]
    export = ["--export", "csv,parquet"]
    assert main([*argv, "--per-class", "8", "16", *common, "--out", str(out), *export]) == 0
    printed = capsys.readouterr().out
    assert "A vs B" in printed and "not collapsed" in printed
    report = PowerReport.load(out / "power.json")
    assert report.to_frame()["n_train"].tolist() == [80, 160]
    frames = power_frames(report, [PairedComparison.load(out / "comparison.json")])
    assert len(frames["runs"]) == 2  # two sizes, one seed
    assert_exported(out, frames, ("csv", "parquet"))
    assert (out / "power.png").stat().st_size > 0 and (out / "bounds.png").stat().st_size > 0
    unpaired = ["power", "--a", str(tmp_path / "A.npz"), "--b", str(tmp_path / "C.npz")]
    assert main([*unpaired, *common]) == 2
    assert "paired" in capsys.readouterr().err


def test_power_report_marks_zero_gaps_and_checks_bound_options():
    """Identical predictions: mean gap 0, no recommendation (NaN: possibly collapsed), power 0."""
    splits = stratified_splits(np.repeat(np.arange(2), 100), [8, 16])
    runs = pd.DataFrame({"split": [0, 1], "seed": [0, 0]})
    correct = [np.ones(4, bool), np.r_[np.ones(6, bool), np.zeros(2, bool)]]
    comparison = PairedComparison.build("a", "b", splits, runs, correct, correct, (10, 10))
    table = power_report([comparison], n_simulations=50).to_frame()
    assert table["mean_gap"].tolist() == [0.0, 0.0]
    assert table["recommended_n_train"].isna().all() and (table["power"] == 0).all()
    with pytest.raises(ValueError, match="delta"):
        power_report([comparison], delta=0.0)
    with pytest.raises(ValueError, match="alpha"):
        comparison.summary(alpha=0)
    with pytest.raises(ValueError, match="paired"):  # predictions on a different test set
        PairedComparison.build("a", "b", splits, runs, correct, [c[:-1] for c in correct], (1, 1))
    with pytest.raises(ValueError, match="paired with the split"):
        PairedComparison.build("a", "b", splits, runs, correct[::-1], correct[::-1], (1, 1))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--gap", "2", "--features", "768"], "--gap must be in (0, 1]"),
        (["--r", "0.9", "1.3", "--features", "768"], "--r takes two accuracies in [0, 1]; got 1.3"),
        (["--gap", "0.1", "--features", "0"], "--features must be an integer >= 1; got 0"),
        (["--gap", "0.1", "--parameters", "0"], "--parameters must be an integer >= 1; got 0"),
    ],
)
def test_cli_recommend_refuses_impossible_gaps_and_counts(argv, message, capsys):
    from probemeter.cli.main import main

    assert main(["recommend", *argv]) == 2
    error = capsys.readouterr()
    assert message in error.err and "Traceback" not in error.err and "N_train" not in error.out


def test_cli_recommend_counts_a_binary_probe_as_the_paper_does(capsys):
    """--features D: D + 1 parameters for LogReg (also with --classes 2), (D + 1)H + H + 1
    with --hidden H (Zhu et al. §3.4, fn. 6), K(D + 1) for K > 2."""
    from probemeter.cli.main import main

    for argv, parameters in (
        (["--features", "768"], 769),
        (["--features", "768", "--classes", "2"], 769),
        (["--features", "768", "--hidden", "20"], 15_401),
        (["--features", "768", "--classes", "6"], 6 * 769),
    ):
        assert main(["recommend", "--gap", "0.022", *argv]) == 0
        printed = capsys.readouterr().out
        assert f"from {parameters} parameters" in printed
        n_train = recommend_train_size(0.022, parameters).n_train
        assert f"N_train = {n_train:,}" in printed


def test_binary_comparisons_count_one_logit(digits):
    """run_configurations records the bound's count: D + 1 for a binary linear probe and
    (D + 1)H + H + 1 for one hidden layer, not the 2(D + 1) weights of a two-logit softmax."""
    X, y = digits
    binary = y < 2
    X2, y2 = X[binary], y[binary]
    splits = stratified_splits(y2, [8])
    runs = run_configurations(
        {"a": X2, "b": X2[:, ::-1].copy()},
        y2,
        splits,
        1,
        probes={"a": MLP(()), "b": MLP((5,))},
        **TRAIN,
    )
    assert runs.n_parameters == {"a": 65, "b": 65 * 5 + 5 + 1}
    assert runs.pair("a", "b").n_parameters == (65, 331)


def test_recommend_train_size_refuses_a_gap_above_one():
    with pytest.raises(ValueError, match=r"gap must be a number in \[0, 1\]; got 2"):
        recommend_train_size(2, n_parameters=769)
    assert recommend_train_size(1, n_parameters=769).n_train > 0  # the largest possible gap


def test_mcnemar_refuses_empty_results():
    with pytest.raises(ValueError, match="no test examples"):
        mcnemar(np.array([], dtype=bool), np.array([], dtype=bool))
    with pytest.raises(ValueError, match="no test examples"):
        mcnemar(table=[[0, 0], [0, 0]])


# --------------------------------------------------------------------------- class labels


def test_paired_comparisons_keep_the_class_labels(tmp_path):
    rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    X = rng.normal(size=(60, 4)).astype(np.float32)
    splits = rotation_splits(y, 6)
    runs = run_configurations(
        {"a": X, "b": X[:, ::-1]},
        y,
        splits,
        1,
        config=FIVE_STEPS,
        execution=Execution(n_jobs=1),
        classes=[True, "x", 2],
    )
    comparison = runs.pair("a", "b")
    assert comparison.classes == (True, "x", 2)
    assert comparison.to_dict()["classes"] == [True, "x", 2]
    comparison.save(tmp_path / "comparison.json")
    assert PairedComparison.load(tmp_path / "comparison.json").classes == (True, "x", 2)
    old = comparison.to_dict()
    del old["classes"]  # written before labels were kept
    assert PairedComparison.from_dict(old).classes is None
    with pytest.raises(ValueError, match="classes holds 2 labels but y has class index 2"):
        run_configurations(
            {"a": X},
            y,
            splits,
            1,
            config=FIVE_STEPS,
            execution=Execution(n_jobs=1),
            classes=["p", "q"],
        )


def test_paired_data_refuses_two_label_mappings():
    X, tags = np.random.default_rng(0).normal(size=(30, 2)), np.array(["a", "b"] * 15)
    a = ProbeData.from_arrays(X, tags, labels="encode", name="a")
    b = ProbeData.from_arrays(X, np.where(tags == "a", "n", "v"), labels="encode", name="b")
    with pytest.raises(ValueError, match=r"'a' and 'b' encode different labels .*one label"):
        paired_data(a, b)
    plain = ProbeData.from_arrays(X, (tags == "b").astype(int), name="plain")
    assert paired_data(a, plain)[2].tolist() == paired_data(a, a)[2].tolist()


def test_features_of_configurations_must_be_2d():
    y = np.arange(12) % 2
    with pytest.raises(ValueError, match=r"features\['a'\] must be 2-D .*\(12, 2, 2\)"):
        run_configurations({"a": np.zeros((12, 2, 2))}, y, rotation_splits(y, 6), 1)


def test_power_report_p_values_are_the_largest_over_seeds_and_holm_adjusted():
    """Two seeds per split: the row's p-value is the larger seed's McNemar p; the report's
    four rows (two comparisons × two splits) are adjusted together by Holm."""
    from probemeter.power.clustered import holm

    splits = stratified_splits(np.repeat(np.arange(2), 100), [8, 16])
    runs = pd.DataFrame({"split": [0, 0, 1, 1], "seed": [0, 1, 0, 1]})
    rng = np.random.default_rng(5)
    sizes = [splits[j].sizes[2] for j in runs["split"]]
    first = [rng.random(n) < 0.9 for n in sizes]
    second = [rng.random(n) < 0.5 for n in sizes]
    comparisons = [
        PairedComparison.build(name, "x", splits, runs, first, other, (10, 10))
        for name, other in (("a", second), ("b", first))
    ]
    table = power_report(comparisons, n_simulations=20).to_frame()
    expected = [
        max(mcnemar(first[r], other[r]).p_value for r in rows)
        for other in (second, first)
        for rows in ((0, 1), (2, 3))
    ]
    np.testing.assert_allclose(table["p_value"], expected)
    np.testing.assert_allclose(table["p_adjusted"], holm(expected))
    assert table.loc[2:, "p_value"].tolist() == [1.0, 1.0]  # identical predictions


def test_power_runs_record_each_probe_on_its_dev_set(digits):
    """The dev sets stay out of training and of the test set; each probe's accuracy there is
    kept, and the power method's layer selection reads it (Summary.selection)."""
    from probemeter.power.method import PowerMethod

    X, y = digits
    splits = stratified_splits(y, [8], random_state=0)
    config = replace(POWER_TRAINING, steps=30)
    runs = run_configurations(
        {"A": X, "B": X[:, ::-1].copy()},
        y,
        splits,
        2,
        config=config,
        execution=Execution(n_jobs=None),
    )
    comparison = runs.pair("A", "B")
    assert {"dev_accuracy_a", "dev_accuracy_b"} <= set(comparison.runs.columns)
    dev = splits[0].dev
    assert 0 < len(dev) and not set(dev) & (set(splits[0].train) | set(splits[0].test))
    assert comparison.runs["dev_accuracy_a"].tolist() == list(runs.dev_accuracy["A"])
    result = PairedComparison.from_dict(comparison.to_dict())
    result = replace(result, metadata={**result.metadata, "test_labels": {}})
    method = PowerMethod(baseline="A", per_class=(8,), seeds=2, steps=30)
    summaries = method.summaries([result.to_dict()])
    selection = summaries["A"].selection["accuracy"]
    assert selection.value == pytest.approx(np.mean(runs.dev_accuracy["A"]))
    assert summaries["B"].selection_split.startswith(f"dev: the {len(dev)} examples")
