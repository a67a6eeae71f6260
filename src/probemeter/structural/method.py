"""The ``structural`` method: distance and depth structural probes of every representation
(Hewitt & Manning 2019, *A Structural Probe for Finding Syntax in Word Representations*), run
from an experiment file (``[method] kind = "structural"``).

The task is head selection (``[task] label = "arcs"`` of a ``conllu`` or ``ptb`` task): its
data carry each word's head and sentence, and, for this method, each word's tag id in
``groups`` (its PTB XPOS tag where the treebank has them, else its UPOS tag, named in
``group_names``: :func:`~probemeter.datasets.arcs.head_probe_data` with ``groups="tags"``)
and the model's features as they are, not standardised (``standardize=False``: Hewitt &
Manning probe the raw hidden states, and the depth probe measures from their origin), from
which :func:`probe_trees` rebuilds the trees, their punctuation marks (left out of UUAS and
root accuracy, §3.1; UPOS ``PUNCT``, or Hewitt & Manning's XPOS tags where the tags are PTB
XPOS: :mod:`probemeter.structural.trees`) and the task's sentence split (its pool and test
sentences).

One stored unit per representation: a :class:`~probemeter.structural.family.StructuralFamily`
per probe kind (every rank × seed, trained on the pool less a seeded development share of its
sentences, scored on those development sentences and on the test sentences), and the
per-seed test correctness of the headline probes at their chosen rank (each gold edge found
by the minimum spanning tree, or each sentence's root found, with the sentence of each as its
cluster), so that a sentence-level paired test can compare layers. The rank is chosen on the
development sentences (highest mean development UUAS, resp. root accuracy:
:meth:`~probemeter.structural.family.StructuralFamily.best_rank`), never on the test
sentences, whose scores at it are reported; each :class:`~probemeter._summary.Summary` also
carries the development scores at that rank (``selection``), on which a layer sweep chooses
its best layer before testing it on the test sentences.

The run folder gets ``results.json`` (schema :data:`SCHEMA`; codelengths in nats; each
representation says which sentences chose its ranks, ``rank_chosen_on``), ``table.md`` /
``table.tex`` (per representation: UUAS and DSpr. of the distance probe, root accuracy and
NSpr. of the depth probe, each with its range over seeds, at the chosen rank, and a last line
naming the development split) and ``structural.png`` (UUAS and root accuracy against rank, one
line per representation); a layer sweep also gets the layer table and figure
(:mod:`probemeter.runs.layers`) of UUAS, DSpr., root accuracy and NSpr. against layer.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from probemeter import _validation as valid
from probemeter._figures import FigureOptions
from probemeter._method import (
    MAX_MEMORY_GIB,
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
from probemeter.structural.defaults import STRUCTURAL_RANKS, STRUCTURAL_SEEDS
from probemeter.structural.trees import TreeData, punctuation_rule, punctuation_tags
from probemeter.training.config import StructuralTraining

__all__ = [
    "SCHEMA",
    "STRUCTURAL_RANKS",
    "STRUCTURAL_SEEDS",
    "UNIT_SCHEMA",
    "StructuralMethod",
    "best_rank",
    "probe_trees",
    "structural_unit",
    "structural_units",
    "test_correctness",
]

#: the schema of a structural run's ``results.json``
SCHEMA = "probemeter.structural-run/2"
#: the layout of a stored unit's result, part of its key: units stored by a version whose
#: layout differed are computed again, not misread
UNIT_SCHEMA = "probemeter.structural-unit/2"
#: the probe kinds
_PROBES = ("distance", "depth")
#: the training options' defaults: :class:`StructuralTraining`'s, the API's
_TRAINING = StructuralTraining()


def _probes(value: Any) -> str | None:
    if (
        not isinstance(value, (list, tuple))
        or not value
        or any(item not in _PROBES for item in value)
        or len(set(value)) != len(value)
    ):
        return (
            f'must be a non-empty list of distinct probe kinds ("distance", "depth"); got {value!r}'
        )
    return None


@dataclass(frozen=True)
class StructuralMethod(Method):
    """``[method] kind = "structural"``: distance and depth structural probes over ranks and
    seeds, Hewitt & Manning (2019)."""

    probes: tuple[str, ...] = option(
        _PROBES,
        check=valid.Check(_probes),
        help='"distance" (UUAS, DSpr.) and/or "depth" (root accuracy, NSpr.) probes',
    )
    ranks: tuple[int, ...] = option(
        STRUCTURAL_RANKS,
        check=valid.integer_list(1, distinct=True, non_empty=True),
        help="probe ranks r (B is d x r); each probe kind reports its best rank",
    )
    seeds: int = option(
        STRUCTURAL_SEEDS, check=valid.integer(1), help="seeds per rank (initial B, batch order)"
    )
    epochs: int = option(
        _TRAINING.epochs,
        check=valid.integer(1),
        help="passes over the pool sentences (fixed, no early stop)",
    )
    batch_size: int = option(
        _TRAINING.batch_size, check=valid.integer(1), help="sentences per minibatch"
    )
    lr: float = option(_TRAINING.lr, check=valid.positive(), help="Adam learning rate")

    kind = "structural"
    #: its head-selection data carry each word's UPOS tag id in ``groups`` (for punctuation)
    reads_trees: ClassVar[bool] = True
    summary = "Hewitt & Manning: structural probes (UUAS, DSpr., root accuracy, NSpr.) by rank"

    def training(self, random_state: int) -> StructuralTraining:
        """How every probe trains: this method's ``epochs``, ``batch_size`` and ``lr``, with
        the run's ``random_state``."""
        return StructuralTraining(self.epochs, self.batch_size, self.lr, random_state)

    @property
    def accuracy_name(self) -> str:
        """``"UUAS"`` (distance probes) or ``"root accuracy"`` (depth probes only)."""
        return "UUAS" if self.probes[0] == "distance" else "root accuracy"

    def check_setup(self, task: TaskFacts | None, names: Sequence[str]) -> list[tuple[str, str]]:
        """Only tasks of dependency trees, labelled with each word's head (``"arcs"``)."""
        if task is None or not task.trees:
            shown = "no task" if task is None else f"dataset {task.dataset!r}"
            return [
                (
                    "task.dataset",
                    f"the structural method probes dependency trees: it needs a conllu or ptb "
                    f'task with label = "arcs"; got {shown}',
                )
            ]
        if not task.selects_heads():
            return [
                (
                    "task.label",
                    f"the {self.kind} method probes dependency trees: it needs label = "
                    f'"arcs" (each word\'s head); got {task.values().get("label")!r}',
                )
            ]
        return []

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        """One unit per representation, keyed by the settings and :data:`UNIT_SCHEMA`."""
        plans = self.per_representation(
            datasets, structural_unit, context.keywords("random_state", "n_jobs")
        )
        return [replace(plan, spec={**plan.spec, "unit": UNIT_SCHEMA}) for plan in plans]

    def compute_together(self, plans: Sequence[UnitPlan]) -> list[Mapping[str, Any]] | None:
        """The units of a layer sweep (the same trees and split) trained together
        (:func:`structural_units`): bit for bit each unit's own results but for the seconds,
        in about half the CPU time (gold EWT's 7 MiniLM layers: benchmarks/README.md)."""
        options = [{k: v for k, v in plan.options.items() if k != "method"} for plan in plans]
        if any(plan.function is not structural_unit for plan in plans) or any(
            option != options[0] for option in options
        ):
            return None
        return structural_units([plan.payload for plan in plans], method=self, **options[0])

    def headlines(self) -> tuple[Headline, ...]:
        """UUAS and DSpr. (distance probes), root accuracy and NSpr. (depth probes), all
        higher-is-better, at each kind's best rank; the first probe kind's score ranks."""
        found = {
            "distance": (
                Headline("uuas", "UUAS", "higher", "UUAS / root accuracy"),
                Headline("dspr", "DSpr.", "higher", "Spearman (lengths 5-50)"),
            ),
            "depth": (
                Headline("root_accuracy", "root accuracy", "higher", "UUAS / root accuracy", True),
                Headline("nspr", "NSpr.", "higher", "Spearman (lengths 5-50)", True),
            ),
        }
        return tuple(headline for kind in self.probes for headline in found[kind])

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per representation: each headline's test value over seeds at its probe kind's rank
        chosen on the development sentences (``estimates``), the same headlines on the
        development sentences at that rank (``selection``, from which a layer sweep chooses),
        and the first probe kind's test score (UUAS or root accuracy) with its per-seed
        correctness."""
        found = {}
        for result in results:
            families = _families(result)
            estimates, selection = {}, {}
            for target, family in families.items():
                rank = family.best_rank()
                rows = family.points[family.points["rank"] == rank]
                score, spearman = (
                    ("uuas", "dspr") if target == "distance" else ("root_accuracy", "nspr")
                )
                for name, column in ((score, family.metric), (spearman, "spearman")):
                    estimates[name] = Estimate.over_seeds(rows[column].tolist())
                    selection[name] = Estimate.over_seeds(rows[f"dev_{column}"].tolist())
            correctness = SeedCorrectness.from_dict(result["correctness"])
            first = families[self.probes[0]]
            found[str(result["name"])] = Summary(
                estimates,
                estimates[_HEADLINE_NAMES[first.target][0]],
                correctness,
                (),
                None,
                None,
                selection=selection,
                selection_split=first.rank_chosen_on,
            )
        return found

    def finish(
        self,
        results: Sequence[Mapping[str, Any]],
        run_dir: Path,
        extra: dict[str, Any],
        figures: FigureOptions,
    ) -> MethodRun:
        import matplotlib.pyplot as plt
        import pandas as pd

        from probemeter._io import environment, write_json_atomic

        chosen = sorted({str(result["rank_chosen_on"]) for result in results})
        write_json_atomic(
            run_dir / "results.json",
            {
                "schema": SCHEMA,
                "rank_chosen_on": chosen[0] if len(chosen) == 1 else chosen,
                "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "versions": environment(),
                "unit": "nats",
                "representations": [dict(result) for result in results],
                "run": extra,
            },
        )
        figure, axes = plt.subplots(
            1, len(self.probes), figsize=(4.5 * len(self.probes), 3.5), squeeze=False
        )
        for ax, target in zip(axes[0], self.probes):
            for result in results:
                family = _families(result)[target]
                family.plot(ax, label=family.name)
            ax.set_title(f"{target} probes (test sentences)")
            ax.legend(frameon=False, fontsize="small")
        figure.tight_layout()
        figure_files = figures.save(figure, run_dir / "structural")
        summaries = self.summaries(results)
        tables = (
            self.table(summaries, results, "text"),
            self.table(summaries, results, "markdown"),
            self.table(summaries, results, "latex"),
        )
        points = pd.concat(
            [f.to_frame() for result in results for f in _families(result).values()],
            ignore_index=True,
        )
        files = (run_dir / "results.json", *figure_files)
        return write_run_files(self, run_dir, tables, files, extra, {"structural_points": points})

    def table(
        self,
        summaries: Mapping[str, Summary],
        results: Sequence[Mapping[str, Any]],
        fmt: str = "markdown",
    ) -> str:
        """One row per representation: every headline's test value with its range over seeds
        (at the rank chosen on the development sentences), and each probe kind's chosen rank,
        in ``fmt`` (:func:`probemeter._tables.render_table`), with a last line naming the
        development split."""
        from probemeter._tables import render_table

        headlines = self.headlines()
        header = ["representation"]
        for target in self.probes:
            header += [h.label for h in headlines if _kind(h) == target] + [f"{target} rank"]
        rows = []
        for result in results:
            name = str(result["name"])
            families = _families(result)
            row = [name]
            for target in self.probes:
                row += [
                    summaries[name].estimates[h.name].format()
                    for h in headlines
                    if _kind(h) == target
                ]
                row.append(str(families[target].best_rank()))
            rows.append(row)
        chosen = sorted({str(result["rank_chosen_on"]) for result in results})
        footer = (
            f"Ranks chosen on {'; '.join(chosen)} (highest mean UUAS, resp. root accuracy); "
            "scores on the test sentences."
        )
        return render_table(header, rows, fmt, align="l" + "r" * (len(header) - 1), footer=footer)


#: the headline names of each probe kind: its score, its Spearman correlation
_HEADLINE_NAMES = {"distance": ("uuas", "dspr"), "depth": ("root_accuracy", "nspr")}


def _kind(headline: Headline) -> str:
    """The probe kind a headline measures."""
    return "distance" if headline.name in _HEADLINE_NAMES["distance"] else "depth"


def _families(result: Mapping[str, Any]) -> dict[str, Any]:
    """A unit's families, by probe kind, in the order the method lists them."""
    from probemeter.structural.family import StructuralFamily

    found = {}
    for target, payload in result["families"].items():
        family = StructuralFamily.from_dict(payload)
        scores = [column for column in family.points.columns if column not in ("rank", "seed")]
        points = family.points.astype(dict.fromkeys(scores, "float64"))  # JSON null: NaN
        found[target] = replace(family, points=points)
    return found


def _family_json(family: Any) -> dict[str, Any]:
    """A family as JSON for the run's store, whose values are finite: NaN scores (root
    accuracy of a distance probe, a Spearman with no sentence of length 5-50) as null."""
    payload = family.to_dict()
    payload["points"] = {
        column: [None if isinstance(v, float) and not np.isfinite(v) else v for v in values]
        for column, values in payload["points"].items()
    }
    return payload


def best_rank(family: Any) -> int:
    """The family's rank chosen on its development sentences
    (:meth:`~probemeter.structural.family.StructuralFamily.best_rank`)."""
    return int(family.best_rank())


def probe_trees(
    data: ProbeData, tags: Sequence[str] | None = None
) -> tuple[np.ndarray, TreeData, np.ndarray, np.ndarray]:
    """The per-word features, trees and sentence split of head-selection data whose groups
    are tag ids: indices into ``tags``, by default the data's own
    :attr:`~probemeter.data.ProbeData.group_names` (as
    :func:`~probemeter.datasets.arcs.head_probe_data` with ``groups="tags"`` or ``"upos"`` lays
    them out), else the UPOS tags (:data:`~probemeter.datasets.conll.UPOS_TAGS`).
    Returns (features (n_words, d) with the sentences in the order of their ids, the trees
    with punctuation marked — UPOS ``PUNCT``, or Hewitt & Manning's XPOS tags when ``tags``
    is a PTB XPOS vocabulary (:func:`~probemeter.structural.trees.punctuation_tags`) —, pool
    sentence indices, test sentence indices).

    Raises:
        ValueError: data without sentence ids or tag groups (not a tree task's data), or a
            group id outside ``tags``.
    """
    order, trees, pool, test = _tree_layout(data, tags)
    return _ordered_features(data, order), trees, pool, test


def _tree_layout(
    data: ProbeData, tags: Sequence[str] | None
) -> tuple[np.ndarray, TreeData, np.ndarray, np.ndarray]:
    """What :func:`probe_trees` derives from the data's sentence ids, heads and tag ids
    alone, not from its features: (the order of the rows by sentence, the trees, pool
    sentence indices, test sentence indices)."""
    from probemeter.datasets.conll import UPOS_TAGS

    parts = (data.sentences_train, data.sentences_test, data.groups_train, data.groups_test)
    if any(part is None for part in parts):
        raise ValueError(
            f"{data.name!r} has no sentences and UPOS tags: structural probes need the data of "
            'a conllu or ptb task with label = "arcs"'
        )
    vocabulary = tuple(tags if tags is not None else data.group_names or UPOS_TAGS)
    ids = np.concatenate([data.sentences_train, data.sentences_test])
    order = np.argsort(ids, kind="stable")  # every sentence's words stay in word order
    ids = ids[order]
    heads = np.concatenate([data.y_train, data.y_test])[order]
    groups = np.concatenate([data.groups_train, data.groups_test])[order]
    if groups.size and (groups.min() < 0 or groups.max() >= len(vocabulary)):
        raise ValueError(
            f"{data.name!r} has tag ids outside 0..{len(vocabulary) - 1} of the "
            f"{len(vocabulary)} tags given"
        )
    marks = punctuation_tags(vocabulary)
    punctuation = [index for index, tag in enumerate(vocabulary) if tag in marks]
    flags = np.isin(groups, punctuation)
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    ends = [*starts[1:].tolist(), ids.size]
    trees = TreeData(
        heads=tuple(tuple(heads[a:b].tolist()) for a, b in zip(starts, ends)),
        punctuation=tuple(tuple(flags[a:b].tolist()) for a, b in zip(starts, ends)),
        source=data.name,
        punctuation_rule=punctuation_rule(vocabulary),
    )
    sentence_ids = ids[starts]
    pool = np.searchsorted(sentence_ids, np.unique(data.sentences_train))
    test = np.searchsorted(sentence_ids, np.unique(data.sentences_test))
    return order, trees, pool, test


def _ordered_features(data: ProbeData, order: np.ndarray) -> np.ndarray:
    """The data's features, pool rows then test rows, in ``order`` (:func:`_tree_layout`)."""
    return np.concatenate([np.asarray(data.X_train), np.asarray(data.X_test)])[order]


def _same_trees(a: ProbeData, b: ProbeData) -> bool:
    """Whether two representations' data hold the same words, trees and split (a layer
    sweep's: the same sentence ids, heads and tag ids, row for row), so that
    :func:`_tree_layout` of one is that of the other."""
    columns = ("sentences_train", "sentences_test", "y_train", "y_test")
    return a.group_names == b.group_names and all(
        np.array_equal(getattr(a, name), getattr(b, name))
        for name in (*columns, "groups_train", "groups_test")
    )


def test_correctness(
    family: Any, features: np.ndarray, trees: TreeData, test: np.ndarray
) -> SeedCorrectness:
    """Per seed, at the family's rank chosen on its development sentences
    (:meth:`~probemeter.structural.family.StructuralFamily.best_rank`), which test items its
    probes got right: for distance probes each edge of the gold tree over the non-punctuation
    words (:func:`~probemeter.structural.evaluation.gold_edges`), found or not by the minimum
    spanning tree of the predicted distances (Hewitt & Manning §3.1), for depth probes each
    test sentence's root; their means are the seeds' UUAS and root accuracy. Each item's
    cluster is its sentence's index: the edges of one sentence are not independent draws."""
    from probemeter.structural.evaluation import root_correct
    from probemeter.structural.scoring import kept_gold_edges, predict_sentences, spanning_edges

    rank = family.best_rank()
    chosen = np.flatnonzero(family.points["rank"].to_numpy() == rank)
    seeds, correct = [], []
    items: list[int] = []
    clusters: list[int] = []
    for number, row in enumerate(chosen):
        predictions = predict_sentences(
            family.projections[row], features, trees, family.target, test
        )
        predicted = predictions.predicted
        # the minimum spanning trees of the predicted distances (every sentence's at once)
        spanning = spanning_edges(predictions, trees) if family.target == "distance" else []
        flags: list[bool] = []
        for position, (sentence, values) in enumerate(zip(test.tolist(), predicted)):
            heads, marks = trees.heads[sentence], np.asarray(trees.punctuation[sentence])
            if family.target == "depth":
                flags.append(root_correct(values, heads, marks))
                if number == 0:
                    items += [sentence, heads.index(0)]
                    clusters.append(sentence)
                continue
            gold = kept_gold_edges(trees, sentence)[1]  # once per trees
            flags += [edge in spanning[position] for edge in gold]
            if number == 0:
                items += [value for edge in gold for value in (sentence, *edge)]
                clusters += [sentence] * len(gold)
        seeds.append(int(family.points["seed"].iloc[row]))
        correct.append(np.asarray(flags, dtype=bool))
    n_train = int(family.points["n_train"].iloc[chosen[0]])
    return SeedCorrectness(
        tuple(seeds),
        tuple(correct),
        labels_digest(np.asarray(items)),
        n_train,
        np.asarray(clusters, dtype=np.int64),
    )


def structural_unit(
    data: ProbeData,
    *,
    method: StructuralMethod,
    random_state: int,
    n_jobs: int | None = 1,
    tags: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every probe kind's :class:`~probemeter.structural.family.StructuralFamily` of ``data``
    (trained on the task's pool sentences less a seeded development share, scored on those
    and on its test sentences) and the first kind's per-seed test correctness at the rank
    chosen on the development sentences (:func:`test_correctness`), as JSON; ``random_state``
    seeds the development share, initial weights and minibatch orders; ``n_jobs`` worker
    processes share the training (the results do not depend on it); ``tags``: the
    vocabulary of the data's tag ids (:func:`probe_trees`; default UPOS)."""
    [result] = structural_units(
        [data], method=method, random_state=random_state, n_jobs=n_jobs, tags=tags
    )
    return result


def _with_source(metadata: dict[str, Any], source: str) -> dict[str, Any]:
    """A family's ``metadata`` with its trees' source ``source``."""
    return {**metadata, "trees": {**metadata["trees"], "source": source}}


def structural_units(
    datasets: Sequence[ProbeData],
    *,
    method: StructuralMethod,
    random_state: int,
    n_jobs: int | None = 1,
    tags: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """:func:`structural_unit` of each of ``datasets``, the probes of those over the same
    trees and sentence split (a layer sweep's) trained together
    (:func:`~probemeter.structural.family.structural_families`: every layer's probes of a
    spec share its minibatches), as many at a time as their features fit
    :data:`~probemeter._method.MAX_MEMORY_GIB`: each result is its unit's alone but for the
    seconds of training, which are the joint training's."""
    from probemeter.structural.family import structural_families

    config = method.training(random_state)
    results: list[dict[str, Any]] = [{} for _ in datasets]

    def train(group: list[tuple[int, np.ndarray, TreeData, np.ndarray, np.ndarray]]) -> None:
        """Train ``group``'s units together and put their results in place."""
        _, _, trees, pool, test = group[0]
        trained = structural_families(
            [features for _, features, *_ in group],
            trees,
            method.probes,
            ranks=method.ranks,
            seeds=method.seeds,
            split=(pool, test),
            config=config,
            names=[datasets[i].name for i, *_ in group],
            n_jobs=n_jobs,
        )
        for (i, features, *_), families in zip(group, trained):
            # the same trees, but the source names each unit's own data (probe_trees's)
            source = datasets[i].name
            families = {
                target: replace(family, metadata=_with_source(family.metadata, source))
                for target, family in families.items()
            }
            first = families[method.probes[0]]
            correctness = test_correctness(first, features, trees, test)
            results[i] = {
                "name": datasets[i].name,
                "rank_chosen_on": first.rank_chosen_on,
                "punctuation": trees.punctuation_rule,
                "families": {target: _family_json(family) for target, family in families.items()},
                "correctness": correctness.to_dict(),
                "n_words": trees.n_words,
                "n_features": int(features.shape[1]),
            }

    # consecutive units of the same trees and split, their features (each a reordered copy of
    # the data's) within one chunk's memory budget: a long sweep of wide layers is trained a
    # few layers at a time, not all copied at once
    group: list[tuple[int, np.ndarray, TreeData, np.ndarray, np.ndarray]] = []
    key, held = None, 0
    layout, shown = None, 0  # the trees of datasets[shown]
    for i, data in enumerate(datasets):
        # the trees and split once per sweep, not per layer: the layers' data hold the same
        # sentences, heads and tags, so they share one TreeData and all it computes from the
        # trees alone (TreeData.memo: the gold sides of every score)
        if layout is None or not _same_trees(datasets[shown], data):
            layout, shown = _tree_layout(data, tags), i
        order, trees, pool, test = layout
        features = _ordered_features(data, order)
        same = (trees.heads, trees.punctuation, pool.tobytes(), test.tobytes())
        if group and (same != key or held + features.nbytes > MAX_MEMORY_GIB * 2**30):
            train(group)
            group, held = [], 0
        group.append((i, features, trees, pool, test))
        key, held = same, held + features.nbytes
    train(group)
    return results
