"""The ``k-sparse`` method: k-sparse probes of every representation (Gurnee et al. 2023) — the
features ranked on the pool alone, probes on the top k for k = 1, 2, 4, …, a loss-data curve
(and optionally an online code) per k, the complexity–accuracy frontier over k and its knee,
chosen on the development split and tested on the test set.

One stored unit per representation (its :class:`~probemeter.sparse_probing.k_sparse.KSparseResult`);
the run folder gets ``results.json`` (schema ``probemeter.k_sparse/1``: every result with its
ranking, per-k table, knee, the split that chose it and the split that tested it, curves and
codes), ``table.md``/``table.tex`` (one row per representation and k, the frontiers and the
knee marked) and ``k_sparse.png`` (accuracy and loss against k).

References:
    Gurnee, W., Nanda, N., Pauly, M., Harvey, K., Troitskii, D. & Bertsimas, D. (2023).
    Finding Neurons in a Haystack: Case Studies with Sparse Probing. *Transactions on Machine
    Learning Research*. arXiv:2305.01610

    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto Probing: Trading Off
    Accuracy for Complexity. *EMNLP 2020*. arXiv:2010.02180
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
    Method,
    MethodRun,
    Option,
    RunContext,
    UnitPlan,
    option,
    write_run_files,
)
from probemeter._summary import Estimate, Headline, Summary
from probemeter.curves.defaults import CURVE_DEV_FRACTION, CURVE_TRAINING
from probemeter.curves.method import curve_option, resolved_precision
from probemeter.data import ProbeData
from probemeter.mdl.defaults import ONLINE_STOPPING_SET, PAPER_TRAINING
from probemeter.mdl.method import online_option
from probemeter.sparse_probing.k_sparse import KNEE_TOLERANCE, SPLITS, KSparseResult
from probemeter.sparse_probing.ranking import L1_GRID, RANKINGS
from probemeter.training.config import TrainingConfig, newton_option_problem

__all__ = ["K_SPARSE_PROBE", "K_SPARSE_SCHEMA", "KSparseMethod", "k_sparse_unit"]

#: the probe on the top k features by default, in experiment files and
#: :func:`~probemeter.sparse_probing.k_sparse.k_sparse_probes` alike: linear (Gurnee et al.'s)
K_SPARSE_PROBE: tuple[int, ...] = ()
#: the schema of the run folder's ``results.json``
K_SPARSE_SCHEMA = "probemeter.k_sparse/1"


def _default_or_integers(value: Any) -> str | None:
    """``"default"`` or distinct positive integers (``ks``, ``sizes``)."""
    if value in ("default", None):
        return None
    return valid.integer_list(distinct=True, non_empty=True).problem(value)


def _default_or_tuple(value: Any) -> tuple[int, ...] | None:
    return None if value in ("default", None) else tuple(value)


def _shown(value: tuple[int, ...] | None) -> Any:
    return "default" if value is None else list(value)


@dataclass(frozen=True)
class KSparseMethod(Method):
    """``[method] kind = "k-sparse"``: k-sparse probes per representation, Gurnee et al. 2023."""

    ranking: str = option(
        RANKINGS[0],
        check=valid.one_of(*RANKINGS),
        help='how features are ranked on the pool: "mean-difference" (|μ₁ − μ₀|, one-vs-rest '
        'for K classes) or "l1" (order of entry on an L1 logistic-regression path)',
    )
    ks: tuple[int, ...] | None = option(
        None,
        check=valid.Check(_default_or_integers),
        help='numbers of features k probed ("default": 1, 2, 4, … and all features)',
        parse=_default_or_tuple,
        show=_shown,
    )
    probe: tuple[int, ...] = option(
        K_SPARSE_PROBE,
        check=valid.integer_list(),
        help="hidden widths of the MLP probe on the top k; none for a linear probe",
        flag="--hidden",
    )
    seeds: int = curve_option("seeds")
    steps: int = curve_option("steps")
    lr: float = option(CURVE_TRAINING.lr, check=valid.positive(), help="Adam learning rate")
    batch_size: int = curve_option("batch_size")
    precision: str = curve_option("precision")
    weight_decay: float = option(
        0.0,
        check=valid.number(0),
        help="L2 penalty λ on the probes' weight matrices, (λ/2)·‖W‖² added to the mean loss "
        "(> 0 with solver = newton)",
        key_omits=0.0,
    )
    solver: str = curve_option("solver")
    tol: float = curve_option("tol")
    sizes: tuple[int, ...] | None = curve_option("sizes")
    dev_fraction: float = option(
        CURVE_DEV_FRACTION,
        check=valid.number(0, 1, closed="neither"),
        help="share of the pool (whole sentences for words) held out of ranking and training, "
        "on which the knee is chosen",
    )
    tolerance: float = option(
        KNEE_TOLERANCE,
        check=valid.number(0, 1, closed="left"),
        help="the knee: the fewest features whose dev accuracy is within this of the best k's",
    )
    epsilon: float | None = option(
        None,
        check=valid.positive(),
        help="a loss tolerance ε in nats: SDL and εSC per k",
    )
    l1_grid: int = option(
        L1_GRID, check=valid.integer(1), help='values of C on the L1 path (ranking = "l1")'
    )
    online: bool = option(
        False, check=valid.boolean(), help="also the online code per k (Voita & Titov)"
    )
    timesteps: tuple[float, ...] = online_option("timesteps")
    max_epochs: int = online_option("max_epochs")

    kind = "k-sparse"
    language_model_defaults: ClassVar[dict[str, Any]] = {"probe": LANGUAGE_MODEL_PROBE}
    fits_directions = True
    summary = (
        "Gurnee et al.: k-sparse probes on the top-k ranked features; curves, codes, the "
        "frontier over k and its knee (dev)"
    )

    def check_pool(self, pool_size: int, n_classes: int | None = None) -> list[tuple[str, str]]:
        """Explicit ``sizes`` within the pool less its development split, and, with
        ``online``, the online code's blocks."""
        from probemeter.curves.measures import check_epsilon
        from probemeter.mdl.method import block_problems
        from probemeter.training.probe_runs import held_out_count

        found = []
        left = pool_size - (held_out_count(pool_size, self.dev_fraction) if pool_size > 1 else 0)
        if self.sizes is not None and max(self.sizes) > left:
            message = (
                f"{max(self.sizes)} exceeds the {left} examples left for training of a pool "
                f"of {pool_size} (dev_fraction = {self.dev_fraction:g} is held out)"
            )
            found.append(("method.sizes", message))
        if self.online:
            found += block_problems(pool_size, n_classes, ONLINE_STOPPING_SET, self.timesteps)
        if self.epsilon is not None and n_classes is not None:
            try:
                check_epsilon(self.epsilon, n_classes)
            except ValueError as error:
                found.append(("method.epsilon", str(error)))
        return found

    def sparse_problems(self) -> list[tuple[str, str]]:
        """No problems: the rankings read CSR columns, and each top-k subset stays CSR for the
        curves and online codes."""
        return []

    def training(self) -> TrainingConfig:
        """How every probe of the curves trains: ``steps``, ``batch_size``, ``lr`` and
        ``precision`` (the ``curve`` method's protocol, :data:`CURVE_TRAINING`)."""
        return TrainingConfig(
            self.steps,
            self.batch_size,
            self.lr,
            self.precision,
            weight_decay=self.weight_decay,
            solver=self.solver,
            tol=self.tol,
        )

    def check_options(self) -> list[tuple[Option, str]]:
        """``solver = "newton"`` solves linear probes with weight decay only."""
        if self.solver != "newton":
            return []
        problem = newton_option_problem(
            self.probe, [self.weight_decay], lr_grid=False, fitted="subset"
        )
        return [] if problem is None else [(self.option_named(problem[0]), problem[1])]

    def online_training(self) -> TrainingConfig:
        """How the online codes' probes train: the ``mdl`` method's protocol
        (:data:`~probemeter.mdl.defaults.PAPER_TRAINING`) with this method's ``max_epochs``;
        with ``solver = "newton"`` each block's probe solved exactly, as the curves'."""
        if self.solver == "newton":
            return self.training()
        return replace(PAPER_TRAINING, max_epochs=self.max_epochs)

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        """One unit per representation.

        Raises:
            ValueError: explicit ``ks`` beyond a representation's features, before anything
                is trained.
        """
        for name, data in datasets.items():
            if self.ks is not None and max(self.ks) > data.n_features:
                raise ValueError(
                    f"method.ks: {max(self.ks)} exceeds the {data.n_features} features of {name!r}"
                )
        # "auto" decided before the keys: they and the units carry the precision used
        method, chosen = resolved_precision(self, context.device)
        options = {**context.keywords(*ENGINE_KEYWORDS), "precision_choice": chosen}
        return method.per_representation(datasets, k_sparse_unit, options)

    def finish(
        self,
        results: Sequence[Mapping[str, Any]],
        run_dir: Path,
        extra: dict[str, Any],
        figures: FigureOptions,
    ) -> MethodRun:
        import matplotlib.pyplot as plt
        import pandas as pd

        from probemeter._io import write_json_atomic
        from probemeter.sparse_probing.k_sparse import plot_k_sparse

        found = [KSparseResult.from_dict(dict(result)) for result in results]
        payload = {"schema": K_SPARSE_SCHEMA, "results": [dict(r) for r in results], **extra}
        write_json_atomic(run_dir / "results.json", payload)
        figure, axes = plt.subplots(1, 2, figsize=(10, 4))
        plot_k_sparse(found, axes)
        figure_files = figures.save(figure, run_dir / "k_sparse")
        tables = tuple(_table(found, fmt) for fmt in ("text", "markdown", "latex"))
        frame = pd.concat(
            [result.to_frame().assign(representation=result.name) for result in found],
            ignore_index=True,
        ).assign(features=lambda table: table["features"].map(list))
        files = (run_dir / "results.json", *figure_files)
        return write_run_files(self, run_dir, tables, files, extra, {"k_sparse": frame})

    def headlines(self) -> tuple[Headline, ...]:
        """The test accuracy of the probes at the knee (it ranks), and the knee k itself: fewer
        features carrying the label is the sparser code (Gurnee et al., §3)."""
        return (
            Headline("accuracy", "accuracy", "higher", "test accuracy at the knee"),
            Headline("knee", "knee k (features)", "lower", "knee k (features, chosen on dev)"),
        )

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per representation: the accuracy of the probes at the knee trained on the largest
        size (mean and range over seeds) and the knee, on the test set; the same on the
        development split, where the knee was chosen (the selection)."""
        found = {}
        for payload in results:
            result = KSparseResult.from_dict(dict(payload))
            curve = result.curves[result.knee]
            measured = {}
            for split, points in (("test", curve), ("dev", curve.development_curve())):
                final = points.points[points.points["n"] == points.sizes[-1]]["accuracy"]
                knee = Estimate(float(result.knee))
                measured[split] = {"accuracy": Estimate.over_seeds(final.tolist()), "knee": knee}
            held_out = curve.metadata["development"]
            found[result.name] = Summary(
                measured["test"],
                measured["test"]["accuracy"],
                curve.final_correct,
                self.probe,
                payload.get("n_features"),
                curve.n_classes,
                selection=measured["dev"],
                selection_split=(
                    f"dev: {held_out['n_dev']:,} pool examples ({held_out['fraction']:.0%} of "
                    f"the pool's {held_out['groups']}) held out of ranking and training"
                ),
            )
        return found


def _table(results: Sequence[KSparseResult], fmt: str) -> str:
    """One row per representation and k: dev and test accuracy and loss of the probes trained
    on the largest size (mean over seeds), SDL and εSC with ``epsilon``, the online code when
    measured, on which split's frontier over k the row lies, and the knee."""
    from probemeter._tables import render_table

    epsilon = any(result.epsilon is not None for result in results)
    online = any(result.online is not None for result in results)
    header = ["representation", "k", "dev accuracy", "test accuracy", "dev loss", "test loss"]
    header += ["SDL (nats)", "εSC (examples)"] if epsilon else []
    header += ["online (kbits)", "compression"] if online else []
    header += ["frontier", "knee"]
    rows, breaks = [], []
    for result in results:
        breaks.append(len(rows))
        frame = result.to_frame()
        frontiers = {split: set(result.frontier(split)["k"]) for split in SPLITS}
        for record in frame.to_dict(orient="records"):
            k = record["k"]
            row = [result.name, str(k)]
            row += [f"{record[f'{split}_{metric}']:.3f}" for metric in ("accuracy", "loss")
                    for split in ("dev", "test")]  # fmt: skip
            if epsilon:
                row += [
                    _measure(record.get(name), record.get(f"{name}_lower_bound"))
                    for name in ("sdl", "sample_complexity")
                ]
            if online:
                bits = record.get("online_bits")
                row += ["—" if bits is None else f"{bits / 1024:.2f}"]
                compression = record.get("compression")
                row += ["—" if compression is None else f"{compression:.2f}"]
            row += [", ".join(split for split in ("dev", "test") if k in frontiers[split])]
            row += [f"knee ({result.chosen_on})" if k == result.knee else ""]
            rows.append(row)
    title = (
        "k-sparse probes (Gurnee et al. 2023): probes on the top k features ranked on the pool; "
        "the knee chosen on the dev split, tested on the test set"
    )
    return render_table(header, rows, fmt, breaks=breaks[1:], title=title)


def _measure(value: float | None, lower_bound: bool | None) -> str:
    """A measure as the layer tables write it (``"> x"`` when only a lower bound), ``"—"``
    when the representation's result has none."""
    return "—" if value is None else Estimate(value, lower_bound=bool(lower_bound)).format()


def k_sparse_unit(
    data: ProbeData,
    *,
    method: KSparseMethod,
    random_state: int,
    execution: Execution,
    precision_choice: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One unit: the k-sparse probes of ``data``
    (:func:`~probemeter.sparse_probing.k_sparse.k_sparse_probes`) as the JSON of their
    :class:`~probemeter.sparse_probing.k_sparse.KSparseResult`, with the data's feature
    count; ``precision_choice``, what ``precision = "auto"`` chose when the units were planned
    (:func:`~probemeter.curves.method.resolved_precision`), in each curve's
    ``metadata["precision"]``."""
    from probemeter.probes import probe_for
    from probemeter.sparse_probing.k_sparse import k_sparse_probes

    result = k_sparse_probes(
        data,
        method.ks,
        ranking=method.ranking,
        probe=probe_for(data, method.probe),  # a direction twin's: its direction
        sizes=method.sizes,
        seeds=method.seeds,
        config=method.training(),
        epsilon=method.epsilon,
        online=method.online,
        timesteps=method.timesteps,
        online_config=method.online_training(),
        tolerance=method.tolerance,
        dev_fraction=method.dev_fraction,
        l1_grid=method.l1_grid,
        random_state=random_state,
        execution=execution,
    )
    payload = {**result.to_dict(), "n_features": data.n_features}
    if precision_choice is not None:
        for curve in payload["curves"].values():
            curve["metadata"]["precision"] = precision_choice
    return payload
