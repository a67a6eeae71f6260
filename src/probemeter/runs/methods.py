"""The ``mdl``, ``pareto`` and ``power`` methods of experiment files, as resumable units.

:func:`probemeter.runs.runner.run_experiment` turns each method into units of
:mod:`probemeter.runs.store` (one per representation; for ``power`` one per representation paired
with the baseline), runs them on the local or Ray backend, and hands the stored results to the
method's ``finish``, which writes the run folder:

* ``mdl`` (Voita & Titov 2020): per representation the online code (eq. 4) of the task and of
  its control task (§3.1, word types → labels), optionally the variational code (eq. 3);
  ``results.json`` (schema ``probemeter.mdl.online/1``), ``table.md``/``table.tex`` (Table 2 layout,
  kbits) and ``mdl.png`` (Fig. 2 a–c).
* ``pareto`` (Pimentel et al. 2020): nuclear-norm and rank linear probes of every
  representation (§4.1); ``results.json`` (the :class:`~probemeter.pareto.frontiers.ParetoFrontiers`),
  ``points.csv``, ``table.md``/``table.tex`` (Pareto hypervolumes, Table 3 layout) and
  ``frontiers.png`` (Figs. 2–3).
* ``power`` (Zhu et al. 2022): every representation against the baseline on the same stratified
  4:1:1 splits and seeds (§4.1); ``results.json`` (the :class:`~probemeter.power.table.
  PowerReport`), ``table.md``/``table.tex`` (Table 2 with McNemar power) and ``power.png``.

Each also writes ``run.json`` (method, figure, experiment, timings), which
:func:`probemeter.runs.html_report.write_report` turns into ``report.html``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from probemeter._io import write_json_atomic, write_text_atomic
from probemeter.data import ProbeData
from probemeter.runs.config import MDLMethod, ParetoMethod, PowerMethod
from probemeter.runs.store import UnitOutcome

__all__ = ["RUN_NAME", "MethodRun", "finish", "unit_function"]

#: the method run's description next to its results: method, figure, experiment, timings
RUN_NAME = "run.json"


@dataclass(frozen=True)
class MethodRun:
    """What a method's ``finish`` wrote: the printable table and the files."""

    table: str
    files: tuple[Path, ...]


# ---------------------------------------------------------------------------------------------
# units: module-level functions (they run in Ray tasks too), JSON results
# ---------------------------------------------------------------------------------------------


def mdl_unit(
    data: ProbeData,
    *,
    method: MDLMethod,
    random_state: int,
    device: str,
    n_jobs: int | None,
    max_memory: float,
    progress: bool,
) -> dict[str, Any]:
    """Online (and variational) codes of ``data`` and, with ``method.control``, of its control
    task, as the JSON of an :class:`~probemeter.mdl.table.MDLEntry`."""
    from probemeter.mdl.controls import control_task
    from probemeter.mdl.online import online_codelength, paper_training
    from probemeter.probes import MLP
    from probemeter.mdl.bayesian import BayesianMLP
    from probemeter.mdl.variational import variational_codelength

    config = paper_training(
        batch_size=method.batch_size, lr=method.lr, max_epochs=method.max_epochs
    )
    tasks = {"": data}
    if method.control:
        tasks["control_"] = control_task(data, random_state=random_state)
    codes: dict[str, Any] = {"name": data.name}
    for role, task in tasks.items():
        codes[f"{role}online"] = online_codelength(
            task,
            MLP(method.probe),
            method.timesteps,
            seeds=method.seeds,
            config=config,
            random_state=random_state,
            device=device,
            n_jobs=n_jobs,
            max_memory=max_memory,
            progress=progress,
        ).to_dict()
        if method.variational:
            codes[f"{role}variational"] = variational_codelength(
                task,
                BayesianMLP(method.probe),
                seeds=1,
                epochs=method.variational_epochs,
                lr=method.variational_lr,
                random_state=random_state,
                device=device,
                progress=progress,
            ).to_dict()
    return codes


def pareto_unit(
    data: ProbeData,
    *,
    method: ParetoMethod,
    task: str,
    random_state: int,
    device: str,
) -> dict[str, Any]:
    """Nuclear-norm and rank points of one representation (Pimentel et al. §4.1), as records."""
    from probemeter.pareto.sweeps import linear_points
    from probemeter.pareto.linear_probes import nuclear_norm_penalties

    # the sweep is λ = 0 followed by log-spaced values; fewer than two leaves λ = 0 or nothing
    penalties: Sequence[float] = (0.0,)[: method.penalties]
    if method.penalties >= 2:
        penalties = nuclear_norm_penalties(method.penalties)
    points = linear_points(
        data,
        task,
        data.name,
        penalties=penalties,
        ranks=None if method.ranks else (),
        steps=method.steps,
        batch_size=method.batch_size,
        lr=method.lr,
        random_state=random_state,
        device="cpu" if device == "auto" else device,
    )
    return {"points": points.to_dict(orient="list")}


def power_unit(
    pair: tuple[ProbeData, ProbeData],
    *,
    method: PowerMethod,
    random_state: int,
    device: str,
    n_jobs: int | None,
    progress: bool,
) -> dict[str, Any]:
    """The paired comparison (baseline, representation) on stratified 4:1:1 splits with
    ``per_class`` training examples per class (Zhu et al. §4.1), as JSON."""
    from probemeter.power.paired import paired_data, run_configurations
    from probemeter.probes import MLP
    from probemeter.power.sampling import stratified_splits

    baseline, other = pair
    X_a, X_b, y = paired_data(baseline, other)
    splits = stratified_splits(y, list(method.per_class), random_state=random_state)
    runs = run_configurations(
        {baseline.name: X_a, other.name: X_b},
        y,
        splits,
        method.seeds,
        probes=MLP(method.probe),
        steps=method.steps,
        batch_size=method.batch_size,
        lr=method.lr,
        random_state=random_state,
        device=device,
        n_jobs=n_jobs,
        progress=progress,
    )
    return runs.pair(baseline.name, other.name).to_dict()


def unit_function(kind: str) -> Callable[..., Mapping[str, Any]]:
    """The unit function of a method kind."""
    return {"mdl": mdl_unit, "pareto": pareto_unit, "power": power_unit}[kind]


# ---------------------------------------------------------------------------------------------
# finishing: tables, figures and results files from the stored unit results
# ---------------------------------------------------------------------------------------------


def finish(
    method: MDLMethod | ParetoMethod | PowerMethod,
    outcomes: Sequence[UnitOutcome],
    run_dir: Path,
    extra: dict[str, Any],
) -> MethodRun:
    """Write the run folder's results, tables and figure for ``method`` (module docstring);
    ``extra`` (the experiment and timings) goes into ``results.json``."""
    results = [outcome.result for outcome in outcomes]
    writer = {"mdl": _finish_mdl, "pareto": _finish_pareto, "power": _finish_power}[method.kind]
    table, markdown, latex, files = writer(method, results, run_dir, extra)
    write_text_atomic(run_dir / "table.md", markdown + "\n")
    write_text_atomic(run_dir / "table.tex", latex + "\n")
    figure = next(path.name for path in files if path.suffix == ".png")
    write_json_atomic(run_dir / RUN_NAME, {"method": method.kind, "figure": figure, **extra})
    return MethodRun(
        table, (*files, run_dir / "table.md", run_dir / "table.tex", run_dir / RUN_NAME)
    )


def _finish_mdl(
    method: MDLMethod, results: list[dict[str, Any]], run_dir: Path, extra: dict[str, Any]
) -> tuple[str, str, str, tuple[Path, ...]]:
    from probemeter.mdl.online import OnlineCode
    from probemeter.mdl.table import MDLEntry, mdl_table, plot_mdl, save_mdl_results
    from probemeter.mdl.variational import VariationalCode

    entries = []
    for result in results:
        codes = {
            role: (VariationalCode if "variational" in role else OnlineCode).from_dict(payload)
            for role, payload in result.items()
            if role != "name"
        }
        entries.append(MDLEntry(result["name"], **codes))
    save_mdl_results(run_dir / "results.json", entries, extra)
    plot_mdl(entries, run_dir / "mdl.png")
    files = (run_dir / "results.json", run_dir / "mdl.png")
    return mdl_table(entries, "text"), mdl_table(entries), mdl_table(entries, "latex"), files


def _finish_pareto(
    method: ParetoMethod, results: list[dict[str, Any]], run_dir: Path, extra: dict[str, Any]
) -> tuple[str, str, str, tuple[Path, ...]]:
    import matplotlib.pyplot as plt

    from probemeter.pareto.frontiers import ParetoFrontiers

    points = pd.concat([pd.DataFrame(result["points"]) for result in results], ignore_index=True)
    frontiers = ParetoFrontiers(points, metadata=extra)
    frontiers.save(run_dir / "results.json")
    write_text_atomic(run_dir / "points.csv", points.to_csv(index=False))
    figure = frontiers.figure()
    figure.savefig(run_dir / "frontiers.png", dpi=110)
    plt.close(figure)
    table = frontiers.hypervolume_table()
    files = (run_dir / "results.json", run_dir / "points.csv", run_dir / "frontiers.png")
    return str(table), table.to_markdown(), table.to_latex(), files


def _finish_power(
    method: PowerMethod, results: list[dict[str, Any]], run_dir: Path, extra: dict[str, Any]
) -> tuple[str, str, str, tuple[Path, ...]]:
    import matplotlib.pyplot as plt

    from probemeter.power.paired import PairedComparison
    from probemeter.power.table import power_report

    comparisons = [PairedComparison.from_dict(result) for result in results]
    report = power_report(comparisons, alpha=method.alpha)
    report.save(run_dir / "results.json")
    axes = report.plot()
    axes.figure.savefig(run_dir / "power.png", dpi=110)
    plt.close(axes.figure)
    frame = report.to_frame()
    latex = frame.to_latex(index=False, float_format=lambda value: f"{value:.3g}")
    files = (run_dir / "results.json", run_dir / "power.png")
    return str(report), report.to_markdown(), latex, files


def power_pairs(
    names: Sequence[str], baseline: str, datasets: Mapping[str, ProbeData]
) -> list[tuple[str, tuple[ProbeData, ProbeData]]]:
    """``(label, (baseline data, other data))`` for every representation but the baseline."""
    return [
        (f"{baseline} vs {name}", (datasets[baseline], datasets[name]))
        for name in names
        if name != baseline
    ]
