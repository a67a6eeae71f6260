"""The ``pareto`` method: nuclear-norm and rank linear probes of every representation and the
Pareto hypervolumes of accuracy against complexity (Pimentel et al., §4.1, Tables 2–3).

On edge-probing span rows with ``pooling = "self-attention"`` each linear probe learns one
attention vector per span and its complexity is that of its map of the pooled spans
(:mod:`probemeter.pareto.span_pooling`).

One stored unit per representation; the run folder gets ``results.json`` (the
:class:`~probemeter.pareto.frontiers.ParetoFrontiers`), ``points.csv``,
``table.md``/``table.tex`` (Table 3 layout) and ``frontiers.png`` (Figs. 2–3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probemeter import _validation as valid
from probemeter._figures import FigureOptions
from probemeter._method import (
    Method,
    MethodRun,
    Option,
    RunContext,
    UnitPlan,
    option,
    write_run_files,
)
from probemeter._summary import Estimate, Headline, SeedCorrectness, Summary, labels_digest
from probemeter.data import ProbeData

__all__ = ["ParetoMethod", "pareto_unit"]


@dataclass(frozen=True)
class ParetoMethod(Method):
    """``[method] kind = "pareto"``: nuclear-norm and rank probes, Pimentel et al. §4."""

    penalties: int = option(
        20,
        check=valid.integer(0),
        help="nuclear-norm weights λ: 0 and log-spaced in [2^-10, 8] (0: none)",
    )
    ranks: bool = option(True, check=valid.boolean(), help="also the rank-constrained probes")
    steps: int = option(1000, check=valid.integer(1), help="Adam updates of the linear probes")
    batch_size: int = option(256, check=valid.integer(1), help="minibatch size")
    lr: float = option(1e-2, check=valid.positive(), help="Adam learning rate of linear probes")

    kind = "pareto"
    pools_spans = True
    summary = "Pimentel et al.: nuclear-norm and rank linear probes; Pareto hypervolumes (Table 3)"

    def check_options(self) -> list[tuple[Option, str]]:
        if self.penalties == 0 and not self.ranks:
            return [
                (self.option_named("penalties"), "0 with ranks = false leaves no probe to train")
            ]
        return []

    def penalty_values(self) -> tuple[float, ...]:
        """The λ sweep: 0 followed by log-spaced values; fewer than two leaves 0 or nothing."""
        from probemeter.pareto.linear_probes import nuclear_norm_penalties

        if self.penalties >= 2:
            return tuple(nuclear_norm_penalties(self.penalties))
        return (0.0,)[: self.penalties]

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        options = context.keywords("task", "random_state", "device")
        return self.per_representation(datasets, pareto_unit, options)

    def finish(
        self,
        results: Sequence[Mapping[str, Any]],
        run_dir: Path,
        extra: dict[str, Any],
        figures: FigureOptions,
    ) -> MethodRun:
        import pandas as pd

        from probemeter._io import write_text_atomic
        from probemeter.pareto.frontiers import ParetoFrontiers

        frames = [pd.DataFrame(result["points"]) for result in results]
        points = pd.concat(frames, ignore_index=True)
        frontiers = ParetoFrontiers(points, metadata=extra)
        frontiers.save(run_dir / "results.json")
        write_text_atomic(run_dir / "points.csv", points.to_csv(index=False))
        figure_files = figures.save(frontiers.figure(), run_dir / "frontiers")
        table = frontiers.hypervolume_table()
        tables = (str(table), table.to_markdown(), table.to_latex())
        files = (run_dir / "results.json", run_dir / "points.csv", *figure_files)
        return write_run_files(self, run_dir, tables, files, extra, frontiers.frames())

    def _measures(self) -> tuple[str, ...]:
        from probemeter.pareto.frontiers import NUCLEAR_NORM, RANK

        return tuple(
            measure
            for measure, trained in ((NUCLEAR_NORM, self.penalties > 0), (RANK, self.ranks))
            if trained
        )

    def headlines(self) -> tuple[Headline, ...]:
        """The Pareto hypervolume of accuracy against each complexity measure (Pimentel et
        al., §3, Tables 2–3): higher is better."""
        return tuple(
            Headline(f"hypervolume ({m})", f"hypervolume ({m})", "higher", f"hypervolume ({m})")
            for m in self._measures()
        )

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per representation: its hypervolumes (one probe per setting, no seeds: no range),
        against the cap shared by all representations of the run, and the test accuracy and
        correctness of its least constrained probe (λ = 0, else the highest rank)."""
        import pandas as pd

        from probemeter.pareto.frontiers import ParetoFrontiers
        from probemeter.pareto.sweeps import least_constrained

        frames = [pd.DataFrame(result["points"]) for result in results]
        frontiers = ParetoFrontiers(pd.concat(frames, ignore_index=True))
        found = {}
        for result, frame in zip(results, frames):
            name, task = str(frame["representation"].iloc[0]), str(frame["task"].iloc[0])
            estimates = {
                headline.name: Estimate(
                    frontiers.hypervolume(task, measure, name, cap=frontiers.cap(task, measure))
                )
                for headline, measure in zip(self.headlines(), self._measures())
            }
            stored = result.get("least_constrained")  # absent from older results
            found[name] = Summary(
                estimates,
                Estimate(float(frame["accuracy"].iloc[least_constrained(frame)])),
                None if stored is None else SeedCorrectness.from_dict(stored),
                (),
                result.get("n_features"),
                result.get("n_classes"),
            )
        return found


def pareto_unit(
    data: ProbeData, *, method: ParetoMethod, task: str, random_state: int, device: str
) -> dict[str, Any]:
    """Nuclear-norm and rank points of one representation (Pimentel et al. §4.1), as records,
    with the least constrained probe's test correctness (for McNemar's test across layers)."""
    from probemeter.pareto.sweeps import least_constrained, linear_sweep

    sweep = linear_sweep(
        data,
        task,
        data.name,
        penalties=method.penalty_values(),
        ranks=None if method.ranks else (),
        steps=method.steps,
        batch_size=method.batch_size,
        lr=method.lr,
        random_state=random_state,
        # "auto" stays on the CPU: the nuclear-norm and rank probes' SVD-based steps differ
        # between CPU and CUDA enough to move frontier points (up to 0.11 accuracy on digits,
        # measured on an H200), and a GPU gains nothing at these sizes (13.2 s vs 14.1 s)
        device="cpu" if device == "auto" else device,
    )
    row = least_constrained(sweep.points)
    correct = SeedCorrectness(
        (0,), (sweep.correct[row],), labels_digest(data.y_test), data.pool_size
    )
    return {
        "points": sweep.points.to_dict(orient="list"),
        "least_constrained": correct.to_dict(),
        "n_features": data.n_features,
        "n_classes": data.n_classes,
    }
