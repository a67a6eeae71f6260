"""The ``pareto`` method: nuclear-norm and rank linear probes of every representation and the
Pareto hypervolumes of accuracy against complexity (Pimentel et al., §4.1, Tables 2–3); or,
for head selection (task label ``"arcs"``, ``family = "biaffine"``), the biaffine parsing
probe over a random MLP family, test UAS against label-shuffled complexity (§7.2, Table 2,
App. A–B), with Hewitt & Liang's dependency control task on request (``control``).

On edge-probing span rows with ``pooling = "self-attention"`` each linear probe learns one
attention vector per span and its complexity is that of its map of the pooled spans
(:mod:`probemeter.pareto.span_pooling`).

One stored unit per representation; the run folder gets ``results.json`` (the
:class:`~probemeter.pareto.frontiers.ParetoFrontiers`), ``points.csv``,
``table.md``/``table.tex`` (Table 3 layout) and ``frontiers.png`` (Figs. 2–3).

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. doi:10.18653/v1/D19-1275 (arXiv:1909.03368)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from probemeter import _validation as valid
from probemeter._figures import FigureOptions
from probemeter._method import (
    Method,
    MethodRun,
    Option,
    RunContext,
    TaskFacts,
    UnitPlan,
    option,
    write_run_files,
)
from probemeter._summary import Estimate, Headline, SeedCorrectness, Summary, labels_digest
from probemeter.data import ProbeData
from probemeter.pareto.defaults import (
    LINEAR_TRAINING,
    PARETO_PENALTIES,
    PARSER_DECODE,
    PARSER_TRAINING,
)
from probemeter.training.config import ParserTraining, TrainingConfig

if TYPE_CHECKING:
    from probemeter.probes.mlp import MLP

__all__ = [
    "FAMILIES",
    "LINEAR_TRAINING",
    "PARETO_PENALTIES",
    "PARSER_DECODE",
    "PARSER_TRAINING",
    "ParetoMethod",
    "least_constrained_parser",
    "pareto_unit",
    "parser_unit",
]

#: the probe families of the method: linear probes (§4.1), or biaffine parsers (§7.2)
FAMILIES = ("linear", "biaffine")


@dataclass(frozen=True)
class ParetoMethod(Method):
    """``[method] kind = "pareto"``: nuclear-norm and rank probes, Pimentel et al. §4; or
    biaffine parsers of a random MLP family (``family = "biaffine"``, head selection, §7.2)."""

    family: str = option(
        "linear",
        check=valid.one_of(*FAMILIES),
        help='"linear": nuclear-norm and rank probes (§4.1); "biaffine": parsers of a random '
        'MLP family, label-shuffled complexity, UAS (§7.2; task label "arcs")',
    )
    penalties: int = option(
        PARETO_PENALTIES,
        check=valid.integer(0),
        help="nuclear-norm weights λ: 0 and log-spaced in [2^-10, 8] (0: none)",
    )
    ranks: bool = option(True, check=valid.boolean(), help="also the rank-constrained probes")
    steps: int = option(
        LINEAR_TRAINING.steps, check=valid.integer(1), help="Adam updates of each probe"
    )
    batch_size: int = option(
        LINEAR_TRAINING.batch_size, check=valid.integer(1), help="minibatch size"
    )
    lr: float = option(
        LINEAR_TRAINING.lr, check=valid.positive(), help="Adam learning rate of linear probes"
    )
    parsers: int = option(
        10,
        check=valid.integer(1),
        help="biaffine family: MLP architectures drawn (App. A: layers 0-5, dropout 0-0.5)",
    )
    parser_hidden: int = option(
        1024,
        check=valid.integer(1),
        help="biaffine family: widest first hidden layer (log-uniform from min(32, it))",
    )
    parser_lr: float = option(
        PARSER_TRAINING.lr, check=valid.positive(), help="biaffine family: Adam learning rate"
    )
    batch_sentences: int = option(
        PARSER_TRAINING.batch_sentences,
        check=valid.integer(1),
        help="biaffine family: sentences per minibatch",
    )
    decode: str = option(
        PARSER_DECODE,
        check=valid.one_of("argmax", "mst"),
        help='biaffine family: each word\'s best head (App. B) or "mst", the best tree',
    )
    control: bool = option(
        False,
        check=valid.boolean(),
        help="biaffine family: also Hewitt & Liang's dependency control task (self/first/last)",
    )

    kind = "pareto"
    #: the sweeps train in the run's process (small linear probes; the biaffine parsers)
    trains_in_workers: ClassVar[bool] = False
    #: the options of the biaffine family only (the ``pareto sweep`` command, on feature files
    #: without sentences, has no flags for them)
    PARSER_OPTIONS: ClassVar[tuple[str, ...]] = (
        "family",
        "parsers",
        "parser_hidden",
        "parser_lr",
        "batch_sentences",
        "decode",
        "control",
    )
    pools_spans = True
    parses_heads = True
    summary = "Pimentel et al.: nuclear-norm and rank linear probes; Pareto hypervolumes (Table 3)"

    def check_setup(self, task: TaskFacts | None, names: Sequence[str]) -> list[tuple[str, str]]:
        """Head selection and the biaffine family go together: the task's heads need the
        family (the linear probes classify single words), the family needs a task of
        sentences labelled with their heads."""
        heads = task is not None and task.selects_heads()
        if heads and self.family != "biaffine":
            return [
                (
                    "method.family",
                    'task label "arcs" needs family = "biaffine" (the biaffine parsing probe '
                    "of Pimentel et al. §7.2, scored by UAS): nuclear-norm and rank linear "
                    "probes classify single words",
                )
            ]
        if self.family == "biaffine" and not heads:
            shown = (
                "no task"
                if task is None
                else f"dataset {task.dataset!r}, label {task.values().get('label')!r}"
            )
            return [
                (
                    "method.family",
                    '"biaffine" parses sentences: it needs a conllu or ptb task with label = '
                    f'"arcs"; got {shown}',
                )
            ]
        return []

    def check_options(self) -> list[tuple[Option, str]]:
        if self.family == "linear" and self.penalties == 0 and not self.ranks:
            return [
                (self.option_named("penalties"), "0 with ranks = false leaves no probe to train")
            ]
        if self.family == "linear" and self.control:
            return [
                (
                    self.option_named("control"),
                    "the control task here is the dependency control of head selection: it "
                    'needs family = "biaffine" (task label "arcs"); word-label control tasks '
                    "are the mdl method's",
                )
            ]
        return []

    @property
    def accuracy_name(self) -> str:
        """``"UAS"`` (unlabelled attachment score) for the biaffine family, else
        ``"accuracy"``."""
        return "UAS" if self.family == "biaffine" else "accuracy"

    def training(self) -> TrainingConfig:
        """How the nuclear-norm and rank probes train: :data:`LINEAR_TRAINING` with this
        method's ``steps``, ``batch_size`` and ``lr``."""
        return replace(LINEAR_TRAINING, steps=self.steps, batch_size=self.batch_size, lr=self.lr)

    def parser_training(self) -> ParserTraining:
        """How the biaffine parsers train: this method's ``steps``, ``batch_sentences`` and
        ``parser_lr``."""
        return ParserTraining(self.steps, self.batch_sentences, self.parser_lr)

    def parser_family(self, random_state: int) -> list[MLP]:
        """The biaffine family's MLP architectures (:func:`random_mlp_family`, App. A): first
        widths log-uniform in [min(32, ``parser_hidden``), ``parser_hidden``]."""
        from probemeter.pareto.families import random_mlp_family

        hidden = (min(32, self.parser_hidden), self.parser_hidden)
        return random_mlp_family(self.parsers, hidden=hidden, random_state=random_state)

    def penalty_values(self) -> tuple[float, ...]:
        """The λ sweep: 0 followed by log-spaced values; fewer than two leaves 0 or nothing."""
        from probemeter.pareto.linear_probes import nuclear_norm_penalties

        if self.penalties >= 2:
            return tuple(nuclear_norm_penalties(self.penalties))
        return (0.0,)[: self.penalties]

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        options = context.keywords("task", "random_state", "device")
        function = parser_unit if self.family == "biaffine" else pareto_unit
        return self.per_representation(datasets, function, options)

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
        figure = frontiers.figure(metric=self.accuracy_name)
        figure_files = figures.save(figure, run_dir / "frontiers")
        table = frontiers.hypervolume_table()
        tables = (str(table), table.to_markdown(), table.to_latex())
        files = (run_dir / "results.json", run_dir / "points.csv", *figure_files)
        return write_run_files(self, run_dir, tables, files, extra, frontiers.frames())

    def _measures(self) -> tuple[str, ...]:
        from probemeter.pareto.frontiers import LABEL_SHUFFLED, NUCLEAR_NORM, RANK

        if self.family == "biaffine":
            return (LABEL_SHUFFLED,)
        return tuple(
            measure
            for measure, trained in ((NUCLEAR_NORM, self.penalties > 0), (RANK, self.ranks))
            if trained
        )

    def headlines(self) -> tuple[Headline, ...]:
        """The Pareto hypervolume of accuracy (UAS for the biaffine family) against each
        complexity measure (Pimentel et al., §3, Tables 2–3): higher is better; with
        ``control``, also the control task's, dashed in the same panel."""
        found = [
            Headline(f"hypervolume ({m})", f"hypervolume ({m})", "higher", f"hypervolume ({m})")
            for m in self._measures()
        ]
        if self.control:
            found += [
                Headline(f"control: {h.name}", f"control: {h.label}", "higher", h.panel, True)
                for h in found
            ]
        return tuple(found)

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per representation: its hypervolumes (one probe per setting, no seeds: no range),
        against the cap shared by all representations of the run, and the test accuracy and
        correctness of its least constrained probe (λ = 0, else the highest rank)."""
        import pandas as pd

        from probemeter.pareto.frontiers import ParetoFrontiers
        from probemeter.pareto.sweeps import least_constrained

        frames = [pd.DataFrame(result["points"]) for result in results]
        frontiers = ParetoFrontiers(pd.concat(frames, ignore_index=True))
        if self.family == "biaffine":
            return self._parser_summaries(results, frames, frontiers)
        found = {}
        for result, frame in zip(results, frames):
            name, task = str(frame["representation"].iloc[0]), str(frame["task"].iloc[0])
            estimates = {
                headline.name: Estimate(
                    frontiers.hypervolume(task, measure, name, cap=frontiers.cap(task, measure))
                )
                for headline, measure in zip(self.headlines(), self._measures())
            }
            stored = result.get("least_constrained")  # optional (no paired test)
            found[name] = Summary(
                estimates,
                Estimate(float(frame["accuracy"].iloc[least_constrained(frame)])),
                None if stored is None else SeedCorrectness.from_dict(stored),
                (),
                result.get("n_features"),
                result.get("n_classes"),
            )
        return found

    def _parser_summaries(
        self, results: Sequence[Mapping[str, Any]], frames: Sequence[Any], frontiers: Any
    ) -> dict[str, Summary]:
        """The biaffine family's summaries: hypervolumes of the task (and its control), each
        against the cap shared by all representations, and the test UAS and per-word
        correctness of the parser chosen before any test score is seen
        (:func:`least_constrained_parser`)."""
        found = {}
        for result, frame in zip(results, frames):
            name = str(frame["representation"].iloc[0])
            tasks = {"": result["task"], "control: ": result.get("control_task")}
            estimates = {}
            for headline in self.headlines():
                prefix = "control: " if headline.dashed else ""
                task, measure = tasks[prefix], self._measures()[0]
                cap = frontiers.cap(task, measure)
                estimates[headline.name] = Estimate(
                    frontiers.hypervolume(task, measure, name, cap=cap)
                )
            correct = SeedCorrectness.from_dict(result["least_constrained"])
            found[name] = Summary(
                estimates,
                correct.accuracy,
                correct,
                (),
                result.get("n_features"),
                None,
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
        config=method.training(),
        random_state=random_state,
        # "auto" stays on the CPU: the nuclear-norm and rank probes' SVD-based steps differ
        # between CPU and CUDA enough to move frontier points, and a GPU does not speed up
        # sweeps of this size (benchmarks/README.md, "Choices measured once")
        device="cpu" if device == "auto" else device,
    )
    row = least_constrained(sweep.points)
    correct = SeedCorrectness(
        (0,),
        (sweep.correct[row],),
        labels_digest(data.y_test),
        data.pool_size,
        data.clusters_test,
    )
    return {
        "points": sweep.points.to_dict(orient="list"),
        "least_constrained": correct.to_dict(),
        "n_features": data.n_features,
        "n_classes": data.n_classes,
    }


def least_constrained_parser(points: Any) -> int:
    """Row of :func:`~probemeter.pareto.sweeps.parser_sweep`'s points holding the family's
    least constrained parser by its own complexity measure, the highest label-shuffled (or
    fully shuffled) training UAS (the first of equals): a choice made on training data only,
    before any test score is seen, as the linear family's λ = 0 probe. Its per-word test
    correctness serves McNemar's test across layers."""
    complexity = list(points["complexity"])
    return complexity.index(max(complexity))


def parser_unit(
    data: ProbeData, *, method: ParetoMethod, task: str, random_state: int, device: str
) -> dict[str, Any]:
    """Biaffine parsers of one representation's head-selection data
    (:func:`~probemeter.datasets.arcs.head_probe_data`; Pimentel et al. §7.2, App. B): per
    architecture of :meth:`ParetoMethod.parser_family`, test UAS against training UAS on heads
    permuted within sentences (:func:`~probemeter.pareto.sweeps.parser_sweep`); with
    ``method.control``, the same on Hewitt & Liang's control heads
    (:func:`~probemeter.datasets.arcs.control_heads`) as the task ``"<task> arcs, control"``.

    Raises:
        ValueError: ``data`` without sentence ids (no head-selection data).
    """
    import pandas as pd

    from probemeter.datasets.arcs import ARC_HEADS, control_heads
    from probemeter.pareto.sweeps import ParseSplit, parser_sweep

    if data.sentences_train is None or data.sentences_test is None:
        raise ValueError(
            f"{data.name!r}: the biaffine family parses sentences: it needs task label "
            f'"{ARC_HEADS}"'
        )
    family = method.parser_family(random_state)
    options = {
        "config": method.parser_training(),
        "decode": method.decode,
        "random_state": random_state,
        "device": device,
    }
    arrays = (data.X_train, data.sentences_train, data.X_test, data.sentences_test)
    names = {"task": f"{task} {ARC_HEADS}"}
    splits = {
        "task": ParseSplit(arrays[0], data.y_train, arrays[1], arrays[2], data.y_test, arrays[3])
    }
    if method.control:
        names["control"] = f"{task} {ARC_HEADS}, control"
        controls = [
            control_heads(groups, sentences, random_state=random_state)
            for groups, sentences in (
                (data.groups_train, data.sentences_train),
                (data.groups_test, data.sentences_test),
            )
        ]
        splits["control"] = ParseSplit(
            arrays[0], controls[0], arrays[1], arrays[2], controls[1], arrays[3], rooted=False
        )
    sweeps = {
        role: parser_sweep(split, names[role], data.name, family, **options)
        for role, split in splits.items()
    }
    chosen = least_constrained_parser(sweeps["task"].points)
    correct = SeedCorrectness(
        (0,),
        (sweeps["task"].correct[chosen],),
        labels_digest(data.y_test),
        data.pool_size,
        data.sentences_test,  # each test word's sentence: the unit the test set was drawn in
    )
    points = pd.concat([sweep.points for sweep in sweeps.values()], ignore_index=True)
    return {
        "points": points.to_dict(orient="list"),
        "least_constrained": correct.to_dict(),
        "task": names["task"],
        "control_task": names.get("control"),
        "n_features": data.n_features,
        "n_classes": data.n_classes,
    }
