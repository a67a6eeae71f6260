"""The ``power`` method: every representation against a baseline on the same stratified 4:1:1
splits and seeds, McNemar power and the recommended training size (Zhu et al., §3–4, Table 2).

One stored unit per pair (baseline, representation); the run folder gets ``results.json`` (the
:class:`~probemeter.power.table.PowerReport`), ``table.md``/``table.tex`` and ``power.png``.

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from probemeter import _validation as valid
from probemeter._execution import Execution
from probemeter._figures import FigureOptions
from probemeter._method import (
    ENGINE_KEYWORDS,
    LANGUAGE_MODEL_PROBE,
    REQUIRED,
    Method,
    MethodRun,
    RunContext,
    TaskFacts,
    UnitPlan,
    option,
    write_run_files,
)
from probemeter._summary import Estimate, Headline, SeedCorrectness, Summary, labels_digest
from probemeter.data import ProbeData
from probemeter.power.defaults import POWER_ALPHA, POWER_PROBE, POWER_SEEDS, POWER_TRAINING
from probemeter.training.config import TrainingConfig

__all__ = [
    "POWER_ALPHA",
    "POWER_PROBE",
    "POWER_SEEDS",
    "POWER_TRAINING",
    "PowerMethod",
    "power_unit",
]


@dataclass(frozen=True)
class PowerMethod(Method):
    """``[method] kind = "power"``: paired comparisons with a baseline, Zhu et al. §3–4."""

    baseline: str = option(
        check=valid.text(), help="the representation every other is paired with (required)"
    )
    per_class: tuple[int, ...] = option(
        (16, 64, 256),
        check=valid.integer_list(distinct=True),
        help="training examples per class of each stratified 4:1:1 split",
    )
    seeds: int = option(POWER_SEEDS, check=valid.integer(1), help="seeds per split")
    probe: tuple[int, ...] = option(
        POWER_PROBE,
        check=valid.integer_list(),
        help="hidden widths of the probe; none: linear",
        flag="--hidden",
    )
    steps: int = option(
        POWER_TRAINING.steps, check=valid.integer(1), help="Adam updates of every probe"
    )
    batch_size: int = option(
        POWER_TRAINING.batch_size, check=valid.integer(1), help="minibatch size"
    )
    lr: float = option(POWER_TRAINING.lr, check=valid.positive(), help="Adam learning rate")
    alpha: float = option(
        POWER_ALPHA,
        check=valid.number(0, 1, "neither"),
        help="significance level of McNemar's test",
    )

    kind = "power"
    language_model_defaults: ClassVar[dict[str, Any]] = {"probe": LANGUAGE_MODEL_PROBE}
    compares_pairs = True
    pools_spans = True
    fits_directions = True
    summary = "Zhu et al.: paired comparisons with a baseline; McNemar power, recommended N"

    def training(self) -> TrainingConfig:
        """The :class:`~probemeter.training.config.TrainingConfig` of every probe."""
        return TrainingConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr)

    def check_setup(self, task: TaskFacts | None, names: Sequence[str]) -> list[tuple[str, str]]:
        if self.baseline is REQUIRED:  # reported as missing already
            return []
        if self.baseline not in names:
            return [
                (
                    "method.baseline",
                    f"{self.baseline!r} is none of the representations {list(names)}",
                )
            ]
        if len(names) < 2:
            return [("representations", "a power comparison needs at least two representations")]
        return []

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        keywords = context.keywords(*ENGINE_KEYWORDS)
        options = {"method": self, **keywords}
        spec = {"settings": self.to_dict()}
        baseline = datasets[self.baseline]
        return [
            UnitPlan(
                f"{self.baseline} vs {name}",
                (self.baseline, name),
                spec,
                power_unit,
                (baseline, data),
                options,
            )
            for name, data in datasets.items()
            if name != self.baseline
        ]

    def finish(
        self,
        results: Sequence[Mapping[str, Any]],
        run_dir: Path,
        extra: dict[str, Any],
        figures: FigureOptions,
    ) -> MethodRun:
        from probemeter.power.paired import PairedComparison
        from probemeter.power.table import power_frames, power_report

        comparisons = [PairedComparison.from_dict(result) for result in results]
        report = power_report(comparisons, alpha=self.alpha)
        report.save(run_dir / "results.json")
        figure_files = figures.save(report.figure(), run_dir / "power")
        latex = report.to_frame().to_latex(index=False, float_format=lambda v: f"{v:.3g}")
        tables = (str(report), report.to_markdown(), latex)
        files = (run_dir / "results.json", *figure_files)
        frames = power_frames(report, comparisons)
        return write_run_files(self, run_dir, tables, files, extra, frames)

    def headlines(self) -> tuple[Headline, ...]:
        """Test accuracy at the largest split (Zhu et al., Table 2's R)."""
        label = f"test accuracy ({max(self.per_class)} per class)"
        return (Headline("accuracy", label, "higher", label),)

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per representation (the baseline from its first pair): the accuracy of its probes on
        the largest split over the seeds, and their test correctness, paired across all pairs
        (every pair draws the same splits from the same labels)."""
        import numpy as np

        from probemeter.power.paired import PairedComparison

        found: dict[str, Summary] = {}
        for result in results:
            comparison = PairedComparison.from_dict(result)
            runs, metadata = comparison.runs, comparison.metadata
            largest = runs.loc[runs["n_train"].idxmax(), "split"]
            rows = np.flatnonzero((runs["split"] == largest).to_numpy())
            seeds = tuple(int(seed) for seed in runs["seed"].iloc[rows])
            digest = metadata.get("test_labels", {}).get(largest)  # optional (no paired test)
            features = metadata.get("n_features", {})
            for name, correct, role in (
                (comparison.name_a, comparison.correct_a, "a"),
                (comparison.name_b, comparison.correct_b, "b"),
            ):
                per_seed = tuple(correct[r] for r in rows)
                accuracy = Estimate.over_seeds([float(c.mean()) for c in per_seed])
                n_train = int(runs["n_train"].iloc[rows[0]])
                paired = SeedCorrectness(seeds, per_seed, digest, n_train) if digest else None
                dev = runs.get(f"dev_accuracy_{role}")
                dev = None if dev is None else dev.iloc[rows].to_numpy(dtype=np.float64)
                measured = dev is not None and not np.isnan(dev).any()
                found.setdefault(
                    name,
                    Summary(
                        {"accuracy": accuracy},
                        accuracy,
                        paired,
                        self.probe,
                        features.get(name),
                        metadata.get("n_classes"),
                        selection={"accuracy": Estimate.over_seeds(dev.tolist())}
                        if measured
                        else None,
                        selection_split=f"dev: the {int(runs['n_dev'].iloc[rows[0]]):,} "
                        "examples of the largest split's dev set"
                        if measured
                        else "",
                    ),
                )
        return found


def power_unit(
    pair: tuple[ProbeData, ProbeData],
    *,
    method: PowerMethod,
    random_state: int,
    execution: Execution,
) -> dict[str, Any]:
    """The paired comparison (baseline, representation) on stratified 4:1:1 splits with
    ``per_class`` training examples per class (Zhu et al. §4.1), as JSON."""
    from probemeter.power.paired import paired_data, run_configurations
    from probemeter.power.sampling import stratified_splits
    from probemeter.probes import MLP, probe_for

    baseline, other = pair
    X_a, X_b, y = paired_data(baseline, other)
    splits = stratified_splits(y, list(method.per_class), random_state=random_state)
    runs = run_configurations(
        {baseline.name: X_a, other.name: X_b},
        y,
        splits,
        method.seeds,
        probes={  # span probes where the rows are edge-probing spans (self-attention), a
            # direction twin's direction probe
            data.name: probe_for(data, method.probe)
            if data.span_tokens or data.direction
            else MLP(method.probe)
            for data in pair
        },
        config=method.training(),
        random_state=random_state,
        execution=execution,
        classes=other.classes if baseline.classes is None else baseline.classes,
    )
    comparison = runs.pair(baseline.name, other.name)
    recorded = {
        "test_labels": {split.name: labels_digest(y[split.test]) for split in splits},
        "n_features": {baseline.name: baseline.n_features, other.name: other.n_features},
        "n_classes": baseline.n_classes,
    }
    return replace(comparison, metadata={**comparison.metadata, **recorded}).to_dict()
