"""The ``mdl`` method: the online code (eq. 4) of each representation and of its control task
(§3.1), optionally the variational code (eq. 3) — Voita & Titov, Table 2 and Fig. 2.

One stored unit per representation; the run folder gets ``results.json`` (schema
``probemeter.mdl/1``; every online code records its ``stopping_set``), ``table.md``/``table.tex``
(Table 2 layout, kbits of 1024 bits as in the paper) and ``mdl.png``. With ``save_probes``,
each unit also keeps the probes of its online codes (those of the control task too, told apart
by their ``info`` ``code``: ``"online"`` or ``"control_online"``); variational probes are not
kept.

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. doi:10.18653/v1/D19-1275 (arXiv:1909.03368)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from probemeter import _validation as valid
from probemeter._execution import Execution
from probemeter._figures import FigureOptions
from probemeter._method import (
    ENGINE_KEYWORDS,
    LANGUAGE_MODEL_PROBE,
    PROBES_ENTRY,
    EngineProbes,
    Method,
    MethodRun,
    Option,
    RunContext,
    TaskFacts,
    UnitPlan,
    option,
    write_run_files,
)
from probemeter._summary import POOL_SELECTION, Estimate, Headline, LayerWeights, Summary
from probemeter.data import ProbeData
from probemeter.mdl.defaults import (
    MDL_PROBE,
    ONLINE_SEEDS,
    ONLINE_STOPPING_SET,
    PAPER_PROBE,
    PAPER_TIMESTEPS,
    PAPER_TRAINING,
    VARIATIONAL_TRAINING,
)
from probemeter.training.config import (
    SOLVER_OPTIONS,
    TrainingConfig,
    VariationalTraining,
    newton_option_problem,
)

__all__ = [
    "MDL_PROBE",
    "ONLINE_SEEDS",
    "ONLINE_STOPPING_SET",
    "PAPER_PROBE",
    "PAPER_TIMESTEPS",
    "PAPER_TRAINING",
    "VARIATIONAL_TRAINING",
    "MDLMethod",
    "OnlineCodeMethod",
    "block_problems",
    "mdl_unit",
    "online_option",
]

#: the headline measures of a representation: (code, measure, per-seed column, label, better);
#: each also for the control task, drawn dashed in the same panel (Voita & Titov, Fig. 2 by layer)
_CODES = (
    ("online", "codelength", "online_bits", "online codelength (kbits)", "lower"),
    ("online", "compression", "compression", "online compression", "higher"),
    ("variational", "codelength", "codelength_bits", "variational codelength (kbits)", "lower"),
    ("variational", "compression", "compression", "variational compression", "higher"),
)


def _timesteps(value: Any) -> str | None:
    numbers = isinstance(value, (list, tuple)) and value and all(valid.is_number(t) for t in value)
    if not numbers or not all(0 < t <= 1 for t in value) or value[-1] != 1:
        return f"must be increasing fractions in (0, 1] ending at 1; got {value!r}"
    if any(later <= earlier for earlier, later in itertools.pairwise(value)):
        return f"must be strictly increasing; got {value!r}"
    return None


def block_problems(
    pool_size: int, n_classes: int | None, stopping_set: str, timesteps: Sequence[float]
) -> list[tuple[str, str]]:
    """The problem, as (location, text), of online-code blocks ``timesteps`` over the examples
    transmitted from a pool of ``pool_size`` (less the held-out development set with
    ``stopping_set = "dev"``); none before the data are loaded (``n_classes`` None)."""
    if n_classes is None:
        return []
    from probemeter.mdl.online import block_ends, transmitted_size

    try:
        n = transmitted_size(pool_size, stopping_set, PAPER_TRAINING.dev_fraction)
        block_ends(n, timesteps)
    except ValueError as error:
        return [("method.timesteps", str(error))]
    return []


#: the options of every method that trains online codes (``mdl``, ``switching``), declared
#: once here: name -> keyword arguments of :func:`~probemeter._method.option`
_ONLINE_OPTIONS: dict[str, dict[str, Any]] = {
    "seeds": {
        "default": ONLINE_SEEDS,
        "check": valid.integer(1),
        "help": "data orders of the online codes",
    },
    "timesteps": {
        "default": PAPER_TIMESTEPS,
        "check": valid.Check(_timesteps),
        "help": "block ends as fractions of the data (the paper's 0.1 % ... 100 %)",
    },
    "batch_size": {
        "default": PAPER_TRAINING.batch_size,
        "check": valid.integer(1),
        "help": "minibatch size",
    },
    "lr": {
        "default": PAPER_TRAINING.lr,
        "check": valid.positive(),
        "help": "initial Adam learning rate",
    },
    "max_epochs": {
        "default": PAPER_TRAINING.max_epochs,
        "check": valid.integer(1),
        "help": "epochs at most (§3.1 early stopping on a dev split)",
    },
    "stopping_set": {
        "default": ONLINE_STOPPING_SET,
        "check": valid.one_of("dev", "prefix"),
        "help": (
            'where probes early-stop (§3.1): "dev", 10 % of the pool held out and not '
            "transmitted (the paper's); \"prefix\", 10 % of each block probe's own prefix"
        ),
    },
}


def online_option(name: str) -> Any:
    """A fresh dataclass field for the online-code option ``name`` (``seeds``, ``timesteps``,
    ``batch_size``, ``lr``, ``max_epochs``, ``stopping_set``): its default, check and help are
    declared once, in this module, for every method that trains online codes.

    Raises:
        ValueError: ``name`` is not an online-code option.
    """
    if name not in _ONLINE_OPTIONS:
        raise ValueError(
            f"name must be an online-code option ({', '.join(_ONLINE_OPTIONS)}); got {name!r}"
        )
    return option(**_ONLINE_OPTIONS[name])


class OnlineCodeMethod(Method):
    """Base of the methods that train online codes (Voita & Titov §2.2.2, eq. 4); their
    dataclasses declare the fields ``seeds``, ``timesteps``, ``batch_size``, ``lr``,
    ``max_epochs`` and ``stopping_set`` with :func:`online_option`."""

    seeds: int
    timesteps: tuple[float, ...]
    batch_size: int
    lr: float
    max_epochs: int
    stopping_set: str

    def check_pool(self, pool_size: int, n_classes: int | None = None) -> list[tuple[str, str]]:
        """The blocks of the online code over the examples transmitted from a pool of
        ``pool_size`` (less the held-out development set with ``stopping_set = "dev"``)."""
        return block_problems(pool_size, n_classes, self.stopping_set, self.timesteps)

    def training(self) -> TrainingConfig:
        """The :class:`~probemeter.training.config.TrainingConfig` of the online codes' probes:
        §3.1's protocol (:data:`PAPER_TRAINING`) with this method's ``batch_size``, ``lr`` and
        ``max_epochs``."""
        return replace(
            PAPER_TRAINING, batch_size=self.batch_size, lr=self.lr, max_epochs=self.max_epochs
        )


@dataclass(frozen=True)
class MDLMethod(OnlineCodeMethod):
    """``[method] kind = "mdl"``: online (and variational) codes, Voita & Titov §2–3."""

    probe: tuple[int, ...] = option(
        MDL_PROBE,
        check=valid.integer_list(),
        help="hidden widths of the MLP probe",
        flag="--hidden",
    )
    seeds: int = online_option("seeds")
    timesteps: tuple[float, ...] = online_option("timesteps")
    control: bool = option(
        True, check=valid.boolean(), help="also code the control task (word types -> labels)"
    )
    variational: bool = option(
        False, check=valid.boolean(), help="also the variational code (eq. 3; slow on CPU)"
    )
    batch_size: int = online_option("batch_size")
    lr: float = online_option("lr")
    max_epochs: int = online_option("max_epochs")
    stopping_set: str = online_option("stopping_set")
    weight_decay: float = option(
        0.0,
        check=valid.number(0),
        help="L2 penalty λ on the online code's probes' weight matrices, (λ/2)·‖W‖² added to "
        "the mean loss (0: the paper's protocol; > 0 with solver = newton)",
        key_omits=0.0,
    )
    solver: str = option(**SOLVER_OPTIONS["solver"])
    tol: float = option(**SOLVER_OPTIONS["tol"])
    variational_epochs: int = option(
        VARIATIONAL_TRAINING.epochs, check=valid.integer(1), help="epochs of the variational probe"
    )
    variational_lr: float = option(
        VARIATIONAL_TRAINING.lr,
        check=valid.positive(),
        help="learning rate of the variational probe",
    )

    kind = "mdl"
    # texts have no word types to give random labels (the control task): none by default
    language_model_defaults: ClassVar[dict[str, Any]] = {
        "probe": LANGUAGE_MODEL_PROBE,
        "control": False,
    }
    mixes_layers = True
    pools_spans = True
    summary = "Voita & Titov: online code of each representation and its control task, bits"
    keeps_probes = True

    @property
    def fits_directions(self) -> bool:  # type: ignore[override]
        """The online code's probes come from ``probe_for``; the variational code's are
        Bayesian MLPs, which no closed form gives."""
        return not self.variational

    @property
    def measures_label_sets(self) -> bool:  # type: ignore[override]
        """The online code's probes measure label sets (one sigmoid per label); the
        variational code's have one softmax."""
        return not self.variational

    def variational_training(self) -> VariationalTraining:
        """How the variational code's probes train: :data:`VARIATIONAL_TRAINING` with this
        method's ``variational_epochs`` and ``variational_lr``."""
        return replace(VARIATIONAL_TRAINING, epochs=self.variational_epochs, lr=self.variational_lr)

    def check_setup(self, task: TaskFacts | None, names: Sequence[str]) -> list[tuple[str, str]]:
        if self.control and (task is None or not task.word_types):
            message = (
                "the control task maps word types to labels: it needs a task of words (ptb, "
                "conllu or edge-probing); set control = false"
            )
            return [("method.control", message)]
        return []

    def layer_mix_problem(self, name: str) -> tuple[str, str] | None:
        if self.variational:
            return (
                "method.variational",
                f"the variational probe has no scalar mix for {name!r} (combine = "
                '"scalar-mix"): set variational = false, or combine = "concat"',
            )
        return super().layer_mix_problem(name)

    def sparse_problems(self) -> list[tuple[str, str]]:
        """The online code trains on sparse rows; the variational code's probes and the
        control task (made of dense features) do not."""
        problems = []
        if self.variational:
            reason = (
                "the variational code's probes read dense features; set variational = false "
                "(the online code trains on sparse ones)"
            )
            problems.append(("method.variational", reason))
        if self.control:
            reason = "the control task is built from dense features; set control = false"
            problems.append(("method.control", reason))
        return problems

    def training(self) -> TrainingConfig:
        """The online codes' probes: §3.1's protocol with this method's ``batch_size``, ``lr``,
        ``max_epochs`` and ``weight_decay``; with ``solver = "newton"`` each block's linear
        probe solved exactly at that weight decay (no early stopping: nothing is held out)."""
        if self.solver == "newton":
            return TrainingConfig(weight_decay=self.weight_decay, solver="newton", tol=self.tol)
        return replace(super().training(), weight_decay=self.weight_decay)

    def check_options(self) -> list[tuple[Option, str]]:
        """``solver = "newton"`` solves linear probes with weight decay only."""
        if self.solver != "newton":
            return []
        problem = newton_option_problem(
            self.probe, [self.weight_decay], lr_grid=False, fitted="block"
        )
        return [] if problem is None else [(self.option_named(problem[0]), problem[1])]

    def engine_probes(self, pool_size: int) -> EngineProbes | None:
        """The online code's probes: one per block end of the transmitted data, all sharing
        the pool's development rows when ``stopping_set = "dev"`` (and they early-stop)."""
        from probemeter.mdl.online import block_ends, transmitted_size

        config = self.training()
        stopping = self.stopping_set if config.early_stopping else "prefix"  # nothing held out
        n = transmitted_size(pool_size, stopping, config.dev_fraction)
        try:
            sizes = [int(end) for end in block_ends(n, self.timesteps)]
        except ValueError:  # blocks the pool cannot hold: check_pool reports them
            return None
        shared = pool_size - n if stopping == "dev" else None
        return EngineProbes(self.probe, config, sizes, shared)

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        options = context.keywords(*ENGINE_KEYWORDS, "keep_probes")
        return self.per_representation(datasets, mdl_unit, options)

    def finish(
        self,
        results: Sequence[Mapping[str, Any]],
        run_dir: Path,
        extra: dict[str, Any],
        figures: FigureOptions,
    ) -> MethodRun:
        from probemeter.mdl.table import mdl_figure, mdl_frames, mdl_table, save_mdl_results

        entries = [entry_from_dict(result) for result in results]
        save_mdl_results(run_dir / "results.json", entries, extra)
        figure_files = figures.save(mdl_figure(entries), run_dir / "mdl")
        tables = (mdl_table(entries, "text"), mdl_table(entries), mdl_table(entries, "latex"))
        files = (run_dir / "results.json", *figure_files)
        return write_run_files(self, run_dir, tables, files, extra, mdl_frames(entries))

    def _headline_codes(self) -> list[tuple[str, str, Headline]]:
        """Per headline: the :class:`~probemeter.mdl.table.MDLEntry` code it reads (e.g.
        ``control_online``), the per-seed column, and the headline itself."""
        prefixes = ("", "control_") if self.control else ("",)
        return [
            (
                f"{prefix}{code}",
                column,
                Headline(
                    f"{prefix}{code}_{measure}",
                    f"{'control: ' if prefix else ''}{label}",
                    better,
                    label,
                    dashed=bool(prefix),
                ),
            )
            for code, measure, column, label, better in _CODES
            if code == "online" or self.variational
            for prefix in prefixes
        ]

    def headlines(self) -> tuple[Headline, ...]:
        """Online (and variational) codelength in kbits of 1024 bits and compression, each
        with its control task (dashed) when computed; the online codelength ranks."""
        return tuple(headline for _, _, headline in self._headline_codes())

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per representation: every headline measure over its seeds (codelengths in kbits of
        1024 bits), and the test accuracy and correctness of the online code's probes trained
        on all data."""
        from probemeter.mdl.online import BITS_PER_KBIT

        found = {}
        for result in results:
            entry = entry_from_dict(result)
            estimates = {}
            for role, column, headline in self._headline_codes():
                values = getattr(entry, role).seeds[column].to_numpy(dtype=np.float64)
                scale = BITS_PER_KBIT if column.endswith("_bits") else 1.0
                estimates[headline.name] = Estimate.over_seeds(values / scale)
            online = entry.online
            mix = online.metadata.get("scalar_mix")
            found[entry.name] = Summary(
                estimates,
                Estimate.over_seeds(online.seeds["accuracy"].tolist()),
                online.test_correct,
                self.probe,
                online.metadata.get("n_features"),
                online.n_classes,
                None if mix is None else LayerWeights.from_dict(mix),
                selection=estimates,
                selection_split=POOL_SELECTION,
            )
        return found


def entry_from_dict(result: Mapping[str, Any]) -> Any:
    """The :class:`~probemeter.mdl.table.MDLEntry` of one unit's JSON result."""
    from probemeter.mdl.online import OnlineCode
    from probemeter.mdl.table import MDLEntry
    from probemeter.mdl.variational import VariationalCode

    codes = {
        role: (VariationalCode if "variational" in role else OnlineCode).from_dict(payload)
        for role, payload in result.items()
        if role != "name"
    }
    return MDLEntry(result["name"], **codes)


def mdl_unit(
    data: ProbeData,
    *,
    method: MDLMethod,
    random_state: int,
    execution: Execution,
    keep_probes: bool = False,
) -> dict[str, Any]:
    """Online (and variational) codes of ``data`` and, with ``method.control``, of its control
    task, as the JSON of an :class:`~probemeter.mdl.table.MDLEntry`; with ``keep_probes`` also
    the online codes' probes, as one :class:`~probemeter.probes.ProbeSet` under
    :data:`PROBES_ENTRY`, each probe's ``info`` ``code`` naming its code (``"online"``,
    ``"control_online"``)."""
    from probemeter.mdl.bayesian import BayesianMLP
    from probemeter.mdl.controls import control_task
    from probemeter.mdl.online import online_codelength
    from probemeter.mdl.variational import variational_codelength
    from probemeter.probes import ProbeSet, probe_for

    config = method.training()
    tasks = {"": data}
    if method.control:
        tasks["control_"] = control_task(data, random_state=random_state)
    codes: dict[str, Any] = {"name": data.name}
    kept = []
    for role, task in tasks.items():
        online = online_codelength(
            task,
            probe_for(task, method.probe),
            method.timesteps,
            seeds=method.seeds,
            config=config,
            stopping_set=method.stopping_set,
            random_state=random_state,
            execution=execution,
            keep_probes=keep_probes,
        )
        codes[f"{role}online"] = online.to_dict()
        if keep_probes:
            tag = {"code": f"{role}online"}
            kept += [replace(probe, info={**tag, **probe.info}) for probe in online.probes]
        if method.variational:
            codes[f"{role}variational"] = variational_codelength(
                task,
                BayesianMLP.for_data(task, method.probe),
                seeds=1,
                config=method.variational_training(),
                random_state=random_state,
                device=execution.device,
                progress=execution.progress,
            ).to_dict()
    if keep_probes:
        codes[PROBES_ENTRY] = ProbeSet(data.name, tuple(kept))
    return codes
