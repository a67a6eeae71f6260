"""Zhu et al. (2022) §4.3 on real data: how much data to tell a representation from its noisy copy?

Representation: Fashion-MNIST pixels (Debian's ``dataset-fashion-mnist``, all 70,000 images),
PCA to 64 components fitted on the official training split, each component standardised to unit
variance. Comparison problems: the clean representation vs. the same plus Gaussian noise
N(0, σ²) with σ² ∈ {0.01, 0.03, 0.1, 0.3, 1, 3} (the paper's scales), probe = logistic
regression (linear softmax), both trained on the same stratified subsets (2^k training
examples per class, train/dev/test 4:1:1, §4.1 fn. 4) with the same seeds.

For every noise scale and subset size the script reports the mean |R₁ − R₂| over seeds, the
N_train the finite-class bound recommends for that gap (§3.4, |F| counted as in the paper), and
the power of McNemar's test simulated at that N_test (bootstrap, pooled over seeds, §3.5).
Then it compares, per noise scale, the recommendation made from the *smallest* (pilot) subset
with the smallest N_train whose simulated power reached 0.8, and gives the collapse verdict of
repeated pilots (§3.6).

    .venv/bin/python examples/power_fashion_noise.py            # CPU-sized, a few minutes
    .venv/bin/python examples/power_fashion_noise.py --help

Outputs (``--out``, default ``power-fashion-noise/``): ``report.json`` (Table 2 rows),
``power_by_noise.md`` (the tables printed below), ``power.png`` (power vs N_test per σ², Fig. 3),
``power_subsampled.png`` (the largest subset's probes, test set subsampled) and ``bounds.png``
(empirical vs theoretical margins of the clean vs σ² = 1 comparison, Fig. 2).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from probemeter._io import write_json_atomic, write_text_atomic
from probemeter.datasets import fashion_mnist
from probemeter.datasets.projections import project
from probemeter.power.bounds import recommend_train_size
from probemeter.power.collapse import collapse_verdict
from probemeter.power.paired import PairedComparison, run_configurations
from probemeter.power.sampling import pilot_splits, stratified_splits
from probemeter.power.simulation import SUFFICIENT_POWER, PowerCurve
from probemeter.power.table import PowerReport, power_report
from probemeter.training import TrainingConfig

NOISE_VARIANCES = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("power-fashion-noise"))
    parser.add_argument("--components", type=int, default=64, help="PCA components")
    parser.add_argument("--noise", type=float, nargs="+", default=list(NOISE_VARIANCES))
    parser.add_argument(
        "--per-class", type=int, nargs="+", default=[2**k for k in range(4, 13)],
        help="training examples per class of each subset (default 2^4 .. 2^12)",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--pilots", type=int, default=6, help="pilot repetitions (collapse)")
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--random-state", type=int, default=0)
    return parser.parse_args(argv)


def representations(args: argparse.Namespace) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Clean PCA features of all 70k images and one noisy copy per σ² (independent draws)."""
    data = fashion_mnist(standardize=False)
    pool, test = project("pca", args.components, data.X_train, data.X_test, args.random_state)
    clean = np.concatenate([pool, test])
    clean = ((clean - pool.mean(0)) / pool.std(0)).astype(np.float32)
    labels = np.concatenate([data.y_train, data.y_test])
    features = {"clean": clean}
    for position, variance in enumerate(args.noise):
        rng = np.random.default_rng([args.random_state, position, 0x7015E])
        noise = rng.normal(0.0, np.sqrt(variance), clean.shape).astype(np.float32)
        features[f"σ²={variance:g}"] = clean + noise
    return features, labels


def recommendation_check(report: pd.DataFrame) -> pd.DataFrame:
    """Per noise scale: the recommendations made from each subset (a pilot each, as in the
    paper's Table 2), the smallest measured N_train whose simulated power reached 0.8, and
    whether the median recommendation lies in that sufficient-power range."""
    rows = []
    for comparison, block in report.groupby("comparison", sort=False):
        block = block.sort_values("n_train")
        recommended = block["recommended_n_train"].dropna()
        reached = block[block["power"] >= SUFFICIENT_POWER]
        sufficient_from = int(reached["n_train"].min()) if len(reached) else None
        median = float(recommended.median()) if len(recommended) else np.nan
        covering = block[block["n_train"] >= median]
        rows.append(
            {
                "comparison": comparison,
                "recommended N_train (median)": median,
                "min": recommended.min() if len(recommended) else np.nan,
                "max": recommended.max() if len(recommended) else np.nan,
                "N_train at power ≥ 0.8": sufficient_from,
                "median ≥ it": None if sufficient_from is None or np.isnan(median)
                else bool(median >= sufficient_from),
                # power at the smallest measured N_train ≥ the median recommendation
                "power there": covering["power"].iloc[0] if len(covering) else None,
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def fixed_probe_power(
    comparisons: list[PairedComparison], args: argparse.Namespace
) -> tuple[pd.DataFrame, dict[str, PowerCurve]]:
    """§3.5 on the largest subset: the probes trained there stay fixed and their test set is
    subsampled at growing sizes (without replacement). The recommendation from that subset's
    gap, N_train, is turned into a test size N_train/η (η = 4) and the power there is simulated
    too (bootstrap when it exceeds the test set)."""
    rows, curves = [], {}
    for comparison in comparisons:
        largest = comparison.split_names[-1]
        stats = comparison.summary().loc[largest]
        n_test = int(stats["n_test"])
        sizes = [2**k for k in range(4, 40) if 2**k < n_test] + [n_test]
        options = {"n_simulations": args.simulations, "random_state": args.random_state}
        curve = comparison.power_curve([largest], sizes, **options)
        curves[comparison.name_b] = curve
        recommended = rec_test = power_at_rec = None
        if stats["mean_gap"] > 0:
            rec = recommend_train_size(float(stats["mean_gap"]), max(comparison.n_parameters))
            recommended, rec_test = rec.n_train, math.ceil(rec.n_train / rec.eta)
            at_rec = comparison.power_curve(
                [largest], [rec_test], replace=rec_test > n_test, **options
            )
            power_at_rec = float(at_rec.table["power"].iloc[0])
        rows.append(
            {
                "comparison": f"{comparison.name_a} vs {comparison.name_b}",
                "mean |R1-R2|": float(stats["mean_gap"]),
                "recommended N_train": recommended,
                "recommended N_test (÷4)": rec_test,
                "smallest N_test with power ≥ 0.8": curve.smallest_sufficient(),
                "power at recommended N_test": power_at_rec,
                # beyond the test set the power is a bootstrap that takes the observed
                # difference as the truth: an extrapolation, not a measurement
                "extrapolated": None if rec_test is None else rec_test > n_test,
            }
        )
    return pd.DataFrame(rows), curves


def markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    def cell(value: object) -> str:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return "—"
        if isinstance(value, (bool, np.bool_)):
            return "yes" if value else "no"
        if isinstance(value, (int, np.integer)):
            return f"{int(value):,}"
        if isinstance(value, (float, np.floating)):
            if abs(value) >= 100 or (value.is_integer() and value >= 2):  # counts
                return f"{value:,.0f}"
            return f"{value:.{digits}f}"
        return str(value)

    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    lines = [header, "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    features, labels = representations(args)
    print(f"Fashion-MNIST: {labels.size} images, PCA-{args.components}, noise σ² {args.noise}")
    splits = stratified_splits(labels, args.per_class, random_state=args.random_state)
    training = {
        "config": TrainingConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr),
        "standardize": False,  # σ² is relative to the unit-variance clean features
        "n_jobs": args.n_jobs,
        "random_state": args.random_state,
    }
    runs = run_configurations(features, labels, splits, args.seeds, **training)
    noisy = [name for name in runs.names if name != "clean"]
    comparisons = [runs.pair("clean", name) for name in noisy]
    report = power_report(
        comparisons, n_simulations=args.simulations, random_state=args.random_state
    )
    table = report.to_frame()
    table["σ²"] = table["comparison"].str.replace("clean vs σ²=", "").astype(float)
    power = table.pivot(index="σ²", columns="n_test", values="power")
    power.columns = [f"N_test={c:,}" for c in power.columns]
    power.index = [f"{v:g}" for v in power.index]
    power.index.name = "σ²"
    check = recommendation_check(table)
    fixed, curves = fixed_probe_power(comparisons, args)
    subsampled = pd.DataFrame(
        {name: curve.table.set_index("test_size")["power"] for name, curve in curves.items()}
    ).T
    subsampled.columns = [f"{c:,}" for c in subsampled.columns]
    subsampled.index.name = "N_test →"

    pilots = pilot_splits(labels, args.per_class[0] * 4, args.pilots, random_state=1)
    pilot_runs = run_configurations(features, labels, pilots, 3, **training)
    verdicts = pd.DataFrame(
        [
            {"comparison": f"clean vs {name}", **_verdict(pilot_runs.pair("clean", name))}
            for name in noisy
        ]
    )
    seconds = time.perf_counter() - started

    table2 = table[
        ["comparison", "n_train", "n_test", "accuracy_a", "accuracy_b", "mean_gap",
         "recommended_n_train", "power", "recommendation_power"]
    ].rename(columns={"accuracy_a": "acc clean", "accuracy_b": "acc noisy",
                      "mean_gap": "mean |R1-R2|", "recommended_n_train": "recommended N_train",
                      "recommendation_power": "power at rec."})  # fmt: skip
    sections = [
        f"Fashion-MNIST PCA-{args.components}, logistic-regression probe, {args.seeds} seeds, "
        f"{args.steps} Adam steps; McNemar α = 0.05, {args.simulations} bootstrap simulations "
        f"per seed; bound δ = 1e-8, |F| = 2^32 × parameters ({runs.n_parameters['clean']}).",
        "## Power by noise scale (rows) and test size (columns)\n\n"
        + markdown(power.reset_index()),
        "## Recommended N_train (over the subsets) vs. where power reaches 0.8\n\n"
        + markdown(check),
        f"## Power of the probes trained on the largest subset ({comparisons[0].split_names[-1]}"
        "), test set subsampled without replacement\n\n" + markdown(subsampled.reset_index()),
        "## Recommendation from the largest subset vs. simulated power\n\n" + markdown(fixed),
        f"## Collapse verdicts from {args.pilots} pilots of {args.per_class[0] * 4} training "
        "examples per class (3 seeds)\n\n" + markdown(verdicts, digits=4),
        "## Table 2 per comparison\n\n" + markdown(table2, digits=4),
        f"Total run time: {seconds:.1f} s",
    ]
    text = "\n\n".join(sections)
    print(text)
    write_outputs(args.out, text, report, comparisons, check, verdicts, seconds, curves)
    return 0


def _verdict(comparison: PairedComparison) -> dict[str, object]:
    verdict = collapse_verdict(comparison)
    return {
        "verdict": verdict.verdict,
        "mean difference": verdict.mean_difference,
        "interval low": verdict.interval[0],
        "interval high": verdict.interval[1],
        "McNemar rejection rate": verdict.rejection_rate,
    }


def write_outputs(
    out: Path,
    text: str,
    report: PowerReport,
    comparisons: list[PairedComparison],
    check: pd.DataFrame,
    verdicts: pd.DataFrame,
    seconds: float,
    curves: dict[str, PowerCurve],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    report.save(out / "report.json")
    write_text_atomic(out / "power_by_noise.md", text + "\n")
    write_json_atomic(
        out / "summary.json",
        {
            "recommendation_check": check.astype(object).where(check.notna(), None).to_dict("list"),
            "collapse": verdicts.to_dict(orient="list"),
            "seconds": round(seconds, 1),
        },
    )
    figure, ax = plt.subplots(figsize=(5.5, 3.8))
    report.plot(ax)
    ax.set_title("clean vs noisy Fashion-MNIST PCA (Zhu et al. Fig. 3)")
    figure.tight_layout()
    figure.savefig(out / "power.png", dpi=120)
    plt.close(figure)
    figure, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, curve in curves.items():
        curve.plot(ax, label=name)
    ax.legend(fontsize=7)
    ax.set_title("probes of the largest subset, test set subsampled")
    figure.tight_layout()
    figure.savefig(out / "power_subsampled.png", dpi=120)
    plt.close(figure)
    middle = next((c for c in comparisons if c.name_b == "σ²=1"), comparisons[-1])
    figure, ax = plt.subplots(figsize=(5.5, 3.8))
    middle.plot_bounds(ax)
    ax.set_title(f"{middle.name_a} vs {middle.name_b}: bound margins (Fig. 2)")
    figure.tight_layout()
    figure.savefig(out / "bounds.png", dpi=120)
    plt.close(figure)
    print(f"wrote {out}/report.json, summary.json, power_by_noise.md, power.png, bounds.png")


if __name__ == "__main__":
    sys.exit(main())
