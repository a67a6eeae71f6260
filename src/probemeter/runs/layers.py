"""Layer sweeps: a method's headline measures against layer, and whether the best layer is
better than the runner-up with statistical support.

A run over the layers of a model (``layer = "all"`` or a list in an experiment file,
:func:`probemeter.runs.config.layer_sweeps`) gets, for every method, from the
:class:`~probemeter._summary.Summary` of each layer (:meth:`~probemeter._method.Method.summaries`):

* a table (``layers.md``, ``layers.tex``): per sweep and layer, every headline measure with its
  range over seeds (``"> x"``: only a lower bound, the data ran out first), the test accuracy of
  the method's best probes, and a paired test against the previous layer;
* a figure (``layers.png``, ``layers.pdf``): one panel per measure against layer, bars spanning
  the seeds, lower bounds as open upward triangles (Voita & Titov, Fig. 2; Whitney et al.,
  Table 2 as a plot; Pimentel et al., Figs. 2–5);
* a verdict per sweep: the best layer and the runner-up *chosen on data held out from the test
  set* (:attr:`~probemeter._summary.Summary.selection`: a development split of the pool, or the
  pool itself for the codes that are measured on it), then tested on the test set: whether
  their best probes differ in accuracy with statistical support. A method that measured no
  held-out data gets no confirmatory test: choosing a layer on its test scores and testing it
  on the same scores would be optimistic, so the verdict names the test-set leader and says so.

The paired test runs at the unit the test set was sampled in. Examples that are their own
units (sentences, images) get McNemar's test (Zhu et al., §3.5, Table 1); words and tree edges
clustered in sentences (:attr:`~probemeter._summary.SeedCorrectness.clusters`) get the
sign-flip randomisation test of the sentences' discordance differences
(:func:`probemeter.power.clustered.sign_flip_test`: T = Σ_j d_j, d_j the words of sentence j
only the first probe gets right minus those only the second does, against all 2^m sign
patterns), exact at any number of sentences — Obuchowski's asymptotic clustered χ² rejected a
true null up to three times too often with few sentences and gave p = 0 where every sentence
differed alike. Each test runs per seed on the two representations' test predictions (paired:
the same test examples, checked by a digest of the test labels); the comparison's p-value is
the largest over the seeds (every seed must reject: a valid, conservative level-α test). A
sweep makes several comparisons (each layer against the previous, the verdict's pair), so
their p-values are Holm-adjusted (Holm 1979) over the sweep's m distinct comparisons; a
difference is *established* when the adjusted p-value is below α and the power is at least 0.8
(§3.5). The power is that of this decision
(:func:`probemeter.power.clustered.decision_power`): the chance, over bootstrap test sets (of
examples, or of whole sentences; the same draw for every seed), that every seed's test rejects
at α/m, Holm's first step — not a per-seed share pooled over seeds at the unadjusted α. When
the difference is not established, the verdict gives two figures, each labelled: the
training-set size that the generalisation bound recommends for the observed accuracy gap
(§3.2–3.4, :func:`probemeter.power.bounds.recommend_train_size`: bound = gap / 2, in i.i.d.
examples, as the bound counts them, unadjusted), and for a clustered test set the number of
test sentences at which the decision's power reaches 0.8 at the observed per-sentence
differences (:func:`probemeter.power.clustered.sentences_needed`).

Surface floors (``[task] controls``, :mod:`probemeter.runs.kinds.surface`): their rows follow
the layers' in the table, and each verdict compares its sweep's best layer with the best floor
(:class:`FloorComparison`): the floor chosen on the same held-out data by the same measure, the
two best probes tested on the test set by the same paired test (McNemar's, or the sign-flip
test of sentences), that comparison Holm-adjusted together with the sweep's others. The verdict
says by how much the best layer is more accurate than the best floor (in points of accuracy),
and whether it *beats* it: an established difference (adjusted p < α, power ≥ 0.8) in the
layer's favour (Hewitt & Liang 2019: a probe's accuracy means little before its controls').

:func:`analyse_layers` computes it all; :func:`write_layer_files` writes the files, and
``layers.json`` (schema ``probemeter.layers/4``) keeps every number, with which split chose the
best layer and which tested it.

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801

    Obuchowski, N. A. (1998). On the comparison of correlated proportions for clustered data.
    *Statistics in Medicine* 17(13), 1495–1507.

    Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scandinavian
    Journal of Statistics* 6(2), 65–70.

    Fisher, R. A. (1935). *The Design of Experiments*. Oliver & Boyd. §21 (the randomisation
    test of paired differences; no identifier).

    Good, P. I. (2005). *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.
    Springer. doi:10.1007/b138696

    Hewitt, J. & Liang, P. (2019). Designing and Interpreting Probes with Control Tasks.
    EMNLP-IJCNLP. arXiv:1909.03368
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probemeter._figures import FigureOptions, shared_legend
from probemeter._io import JsonResult, write_text_atomic
from probemeter._method import Method
from probemeter._summary import Estimate, Headline, Summary, measured_headlines
from probemeter._tables import render_table
from probemeter.power.bounds import probe_parameter_count, recommend_train_size
from probemeter.power.clustered import (
    decision_power,
    format_p,
    holm,
    sentences_needed,
    sign_flip_test,
)
from probemeter.power.mcnemar import mcnemar
from probemeter.power.simulation import SUFFICIENT_POWER, check_alpha

__all__ = [
    "SCHEMA",
    "FloorComparison",
    "FloorRow",
    "LayerAnalysis",
    "LayerRow",
    "PairTest",
    "SiteBlock",
    "SiteComparison",
    "SitesVerdict",
    "SweepVerdict",
    "analyse_layers",
    "pair_test",
    "write_layer_files",
]

SCHEMA = "probemeter.layers/5"
#: the schemas :meth:`LayerAnalysis.from_dict` reads: version 1 (before the verdicts recorded
#: which split chose and tested, the test's name and Holm's adjustment) reads with those empty;
#: version 2 (Obuchowski's asymptotic test, a power pooled over seeds at the unadjusted α)
#: reads with that power marked as such and no decision level; version 3 (before surface
#: floors) reads without floors; version 4 (before the across-sites verdicts) without those
READABLE = (
    "probemeter.layers/1",
    "probemeter.layers/2",
    "probemeter.layers/3",
    "probemeter.layers/4",
    SCHEMA,
)
#: bootstrap test sets for the power of the decision
SIMULATIONS = 1000
#: the paired tests, by whether the test examples are clustered in sentences
MCNEMAR = "McNemar"
CLUSTERED = "sign-flip randomisation test of the sentences' discordance differences"


@dataclass(frozen=True)
class PairTest:
    """A paired test between the best probes of two representations (module docstring).

    Attributes:
        first, second: the representations (for a verdict: best, then runner-up).
        accuracy_first, accuracy_second: mean test accuracy over the seeds (all seeds when no
            test could be made, else the paired ones).
        p_values: the test's two-sided p-value per paired seed; empty when no test was made.
        power: the power of the decision (:func:`~probemeter.power.clustered.decision_power`):
            the chance that every seed's test rejects at ``power_level`` on a bootstrap test
            set of this size (of examples, or of whole sentences); None when no test was made.
            In a result of schema version 2 or older (``power_level`` None): the per-seed
            power pooled over seeds at the unadjusted α.
        alpha: the significance level.
        n_test: test examples of each probe.
        recommended_n_train: with power below 0.8 and unequal accuracies, the training-set size
            the bound recommends to separate the two (Zhu et al. §3.4), in examples as the bound
            counts them (i.i.d., unadjusted for sentences); None otherwise, or when the probes'
            size is not recorded.
        problem: why no test could be made; None when it was.
        test: which test ran (:data:`MCNEMAR` or :data:`CLUSTERED`).
        n_clusters: the sentences of a clustered test set (None when not clustered).
        p_adjusted: the comparison's p-value (:attr:`p_value`) Holm-adjusted over the sweep's
            comparisons; equal to it when the comparison is the only one.
        detail: how the p-values were computed (for the sign-flip test: exact over all 2^m
            sign patterns, or Monte Carlo over R, with m by seed).
        comparisons: m, the sweep's distinct comparisons Holm adjusts over.
        power_level: α/m, the level at which :attr:`power` asks every seed to reject.
        sentences_needed: for a clustered test set without an established difference, the
            smallest number of test sentences at which the decision's power reaches 0.8 at the
            observed per-sentence differences (None: not computed, or not reached by
            ``sentences_searched``).
        sentences_searched: the most test sentences that search would try (its limit).
        family: whose comparisons Holm adjusts over: ``"sweep"`` (a sweep's), or
            ``"across-sites"`` (the across-sites verdict's, :class:`SitesVerdict`).
    """

    first: str
    second: str
    accuracy_first: float
    accuracy_second: float
    p_values: tuple[float, ...] = ()
    power: float | None = None
    alpha: float = 0.05
    n_test: int | None = None
    recommended_n_train: int | None = None
    problem: str | None = None
    test: str = MCNEMAR
    n_clusters: int | None = None
    p_adjusted: float | None = None
    detail: str = ""
    comparisons: int = 1
    power_level: float | None = None
    sentences_needed: int | None = None
    sentences_searched: int | None = None
    family: str = "sweep"

    @property
    def p_value(self) -> float | None:
        """The comparison's p-value: the largest over the seeds (None without a test)."""
        return max(self.p_values) if self.p_values else None

    @property
    def established(self) -> bool:
        """Whether the accuracies differ: the Holm-adjusted p-value below α with power ≥ 0.8
        (Zhu et al., §3.5)."""
        adjusted = self.p_adjusted if self.p_adjusted is not None else self.p_value
        return (
            adjusted is not None
            and adjusted < self.alpha
            and self.power is not None
            and self.power >= SUFFICIENT_POWER
        )

    @property
    def _family_text(self) -> str:
        """Whose comparisons Holm adjusted over, in words."""
        return "sweep's" if self.family == "sweep" else f"{self.family} family's"

    @property
    def rejections(self) -> int:
        """Seeds whose test rejected equal accuracy at ``alpha`` (unadjusted)."""
        return sum(p < self.alpha for p in self.p_values)

    def cell(self) -> str:
        """A table cell: the p-value, its Holm adjustment, the decision's power and a mark
        when established."""
        if self.problem is not None:
            return "no test"
        mark = " (established)" if self.established else ""
        adjusted = (
            ""
            if self.p_adjusted is None or self.p_adjusted == self.p_value
            else f" (Holm {format_p(self.p_adjusted)})"
        )
        return f"{format_p(self.p_value, 'p')}{adjusted}, power {self.power:.2f}{mark}"

    def power_text(self) -> str:
        """Which power :attr:`power` is, in words."""
        if self.power_level is None:
            return (
                f"power {self.power:.2f} (per seed at α = {self.alpha:g}, pooled over seeds: a "
                "result of an older version, not the power of the decision)"
            )
        seeds = len(self.p_values)
        every = f"all {seeds} seeds reject" if seeds > 1 else "the test rejects"
        level = (
            f"α = {self.alpha:g}"
            if self.comparisons == 1
            else f"α/m = {self.alpha:g}/{self.comparisons} = {self.power_level:.2g}, Holm's "
            f"first step over the {self._family_text} m = {self.comparisons} comparisons"
        )
        resampled = "test examples" if self.n_clusters is None else "whole sentences"
        return (
            f"power of the decision {self.power:.2f} (the chance that {every} at {level}, on "
            f"bootstrap test sets of {resampled})"
        )

    def describe(self) -> str:
        """The test in words: accuracies, which test, p-values, power and what it means."""
        accuracies = (
            f"test accuracy {self.accuracy_first:.4f} ({self.first}) vs "
            f"{self.accuracy_second:.4f} ({self.second})"
        )
        if self.problem is not None:
            return f"{accuracies}; no paired test: {self.problem}"
        seeds = len(self.p_values)
        units = (
            f"{self.n_test:,} test examples"
            if self.n_clusters is None
            else f"{self.n_test:,} test examples in {self.n_clusters:,} sentences"
        )
        adjusted = (
            ""
            if self.p_adjusted is None
            else f", Holm-adjusted over the {self._family_text} comparisons "
            f"{format_p(self.p_adjusted)}"
        )
        name = f"{self.test} ({self.detail})" if self.detail else self.test
        text = (
            f"{accuracies}; {name}: {format_p(self.p_value, 'p')} (the largest of {seeds} "
            f"seed{'s' if seeds > 1 else ''}, {self.rejections} rejecting at α = "
            f"{self.alpha:g}){adjusted}; {self.power_text()} at {units}"
        )
        if self.established:
            better = self.first if self.accuracy_first >= self.accuracy_second else self.second
            return (
                f"{text}: {better} is more accurate, an established difference (adjusted "
                "p < α, power of the decision ≥ 0.8)"
            )
        if self.accuracy_first == self.accuracy_second:
            return (
                f"{text}: equal accuracies, the comparison may have collapsed (Zhu et al. §3.6); "
                "more data would not separate them"
            )
        gap = abs(self.accuracy_first - self.accuracy_second)
        advice = []
        if self.recommended_n_train is not None:
            advice.append(
                f"the bound recommends about {self.recommended_n_train:,} training examples "
                f"(Zhu et al. §3.4: bound = gap / 2, i.i.d. examples)"
            )
        if self.sentences_needed is not None:
            advice.append(
                f"the decision's power reaches 0.8 at about {self.sentences_needed:,} test "
                "sentences (cluster bootstrap at the observed per-sentence differences)"
            )
        elif self.sentences_searched is not None:
            advice.append(
                f"the decision's power stays below 0.8 up to {self.sentences_searched:,} test "
                "sentences (cluster bootstrap at the observed per-sentence differences)"
            )
        advice_text = f"; for an accuracy gap of {gap:.4f}, " + "; ".join(advice) if advice else ""
        return (
            f"{text}: not an established difference (adjusted p ≥ α or power of the decision "
            f"< 0.8){advice_text}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "p_values": list(self.p_values), "p_value": self.p_value}

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> PairTest:
        """A test from :meth:`to_dict`, or from an older ``layers.json`` (keys it no longer
        holds, such as version 2's ``recommended_sentences``, are dropped)."""
        names = {field.name for field in fields(cls)}
        known = {key: value for key, value in payload.items() if key in names}
        return cls(**{**known, "p_values": tuple(payload["p_values"])})


@dataclass(frozen=True)
class LayerRow:
    """One layer of a sweep: its measures, its best probes' accuracy, and McNemar's test
    against the previous layer of the sweep (None for the first)."""

    sweep: str
    layer: int
    representation: str
    estimates: Mapping[str, Estimate]
    accuracy: Estimate
    previous: PairTest | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sweep": self.sweep,
            "layer": self.layer,
            "representation": self.representation,
            "estimates": {name: e.to_dict() for name, e in self.estimates.items()},
            "accuracy": self.accuracy.to_dict(),
            "previous": None if self.previous is None else self.previous.to_dict(),
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> LayerRow:
        previous = payload["previous"]
        return cls(
            payload["sweep"],
            int(payload["layer"]),
            payload["representation"],
            {name: Estimate.from_dict(e) for name, e in payload["estimates"].items()},
            Estimate.from_dict(payload["accuracy"]),
            None if previous is None else PairTest.from_dict(previous),
        )


@dataclass(frozen=True)
class FloorRow:
    """One surface floor of the run (``[task] controls``): its measures and its best probes'
    accuracy, beside the layers in the table."""

    representation: str
    estimates: Mapping[str, Estimate]
    accuracy: Estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "representation": self.representation,
            "estimates": {name: e.to_dict() for name, e in self.estimates.items()},
            "accuracy": self.accuracy.to_dict(),
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> FloorRow:
        return cls(
            payload["representation"],
            {name: Estimate.from_dict(e) for name, e in payload["estimates"].items()},
            Estimate.from_dict(payload["accuracy"]),
        )


@dataclass(frozen=True)
class FloorComparison:
    """A sweep's best layer against the best surface floor (module docstring).

    Attributes:
        floor: the best floor by the ranking measure on the data that chose the best layer;
            None when none is named (``reason``).
        floor_value: its ranking estimate there, formatted.
        chosen_on: which data chose it.
        test: the paired test of the best layer's probes (``first``) against the floor's
            (``second``) on the test set; None when none is made (``reason``).
        reason: why no floor is named or tested.
    """

    floor: str | None
    floor_value: str = ""
    chosen_on: str = ""
    test: PairTest | None = None
    reason: str | None = None

    @property
    def difference(self) -> float | None:
        """How much more accurate the best layer's probes are than the floor's on the test
        set (a fraction of the test examples; negative: the floor is more accurate)."""
        if self.test is None or self.test.problem is not None:
            return None
        return self.test.accuracy_first - self.test.accuracy_second

    @property
    def beats(self) -> bool:
        """Whether the best layer beats the best floor: more accurate, an established
        difference (Holm-adjusted p < α, power of the decision ≥ 0.8)."""
        difference = self.difference
        return difference is not None and difference > 0 and self.test.established

    def describe(self, sweep: str, layer: int, accuracy: str = "accuracy") -> str:
        """The comparison in words, ending with whether layer ``layer`` of ``sweep`` beats
        the best floor."""
        if self.floor is None:
            return f"Against the surface floors: {self.reason}."
        text = (
            f"Against the surface floors: best floor {self.floor} ({self.floor_value}; chosen "
            f"on {self.chosen_on})"
        )
        untested = f"whether {sweep}'s best layer beats it is not tested"
        if self.test is None:
            return f"{text}; {self.reason}: {untested}."
        difference = self.difference
        if difference is None:
            return f"{text}; {self.test.describe()}: {untested}."
        test = self.test
        adjusted = "" if test.p_adjusted is None else f", Holm-adjusted {format_p(test.p_adjusted)}"
        verdict = "beats" if self.beats else "does not beat"
        why = (
            "an established difference"
            if self.beats
            else "more accurate, but not an established difference (adjusted p ≥ α or power "
            "of the decision < 0.8)"
            if difference > 0
            else "no more accurate"
        )
        return (
            f"{text}: best layer {layer} − best floor = {100 * difference:+.2f} points of test "
            f"{accuracy} ({test.accuracy_first:.4f} vs {test.accuracy_second:.4f}; {test.test}: "
            f"{format_p(test.p_value, 'p')}{adjusted}, power {test.power:.2f}): {sweep}'s best "
            f"layer {verdict} the best surface floor ({why})."
        )

    def to_dict(self) -> dict[str, Any]:
        difference = self.difference
        return {
            "floor": self.floor,
            "floor_value": self.floor_value,
            "chosen_on": self.chosen_on,
            "test": None if self.test is None else self.test.to_dict(),
            "reason": self.reason,
            "difference": difference,
            "difference_unit": "accuracy (fraction of the test examples)",
            "beats": self.beats,
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> FloorComparison:
        test = payload["test"]
        return cls(
            payload["floor"],
            payload["floor_value"],
            payload["chosen_on"],
            None if test is None else PairTest.from_dict(test),
            payload["reason"],
        )


@dataclass(frozen=True)
class SweepVerdict:
    """The best layer of one sweep by the ranking measure, the runner-up, and their test.

    Attributes:
        sweep: the model's entry name.
        measure: the ranking headline's label.
        best, runner_up: (layer, representation); None when no layer can be named (``reason``).
        test: the paired test of best against runner-up on the test set (None when no test is
            made: one layer, no choice on held-out data).
        reason: why no best layer is named, or why it is not tested.
        best_value, runner_up_value: their ranking estimates on the data that chose them,
            formatted.
        chosen_on: which data chose the best layer and the runner-up (a development split of
            the pool, the pool itself, or ``"test"`` when the method measured nothing else).
        tested_on: which data tested them (``"test"``), or ``""`` when no test was made.
        floor: the best layer against the best surface floor; None in a run without floors.
    """

    sweep: str
    measure: str
    best: tuple[int, str] | None
    runner_up: tuple[int, str] | None
    test: PairTest | None
    reason: str | None = None
    best_value: str = ""
    runner_up_value: str = ""
    chosen_on: str = ""
    tested_on: str = ""
    floor: FloorComparison | None = None

    def describe(self) -> str:
        """The verdict in one paragraph (with the surface floors: then their comparison)."""
        text = self._describe()
        if self.floor is None:
            return text
        text += "" if text.endswith(".") else "."
        if self.best is None:
            return f"{text} Against the surface floors: no best layer to compare."
        return f"{text} {self.floor.describe(self.sweep, self.best[0])}"

    def _describe(self) -> str:
        if self.best is None:
            return f"{self.sweep}: no best layer by {self.measure}: {self.reason}"
        text = (
            f"{self.sweep}: best layer {self.best[0]} by {self.measure} ({self.best_value}; "
            f"chosen on {self.chosen_on})"
        )
        if self.runner_up is None:
            return f"{text}; {self.reason}"
        text += f", runner-up layer {self.runner_up[0]} ({self.runner_up_value})"
        if self.test is None:
            return f"{text}; {self.reason}"
        return f"{text}. Best probes, tested on the {self.tested_on} set: {self.test.describe()}."

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "best": None if self.best is None else list(self.best),
            "runner_up": None if self.runner_up is None else list(self.runner_up),
            "test": None if self.test is None else self.test.to_dict(),
            "floor": None if self.floor is None else self.floor.to_dict(),
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> SweepVerdict:
        pair = payload["best"], payload["runner_up"]
        floor = payload.get("floor")
        return cls(
            **{
                **payload,
                "best": None if pair[0] is None else (int(pair[0][0]), pair[0][1]),
                "runner_up": None if pair[1] is None else (int(pair[1][0]), pair[1][1]),
                "test": None if payload["test"] is None else PairTest.from_dict(payload["test"]),
                "floor": None if floor is None else FloorComparison.from_dict(floor),
            }
        )


@dataclass(frozen=True)
class SiteBlock:
    """One (site, block) of an entry read at several sites: its representation and the ranking
    measure on the data that chose among them (:attr:`SitesVerdict.chosen_on`)."""

    site: str
    layer: int
    representation: str
    estimate: Estimate

    def name(self) -> str:
        """``"SITE block N"``, as the verdict and the tables write it."""
        return f"{self.site} block {self.layer}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "estimate": self.estimate.to_dict()}

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> SiteBlock:
        return cls(
            payload["site"],
            int(payload["layer"]),
            payload["representation"],
            Estimate.from_dict(payload["estimate"]),
        )


@dataclass(frozen=True)
class SiteComparison:
    """The best (site, block) against another, on the test set.

    Attributes:
        roles: what the other is: ``"runner-up"`` and/or ``"best of SITE"`` (the runner-up is
            often the best of its site: one comparison then, counted once by Holm).
        other: the other (site, block).
        test: the paired test of the best's probes (``first``) against the other's; None when
            no confirmatory test is made (:attr:`SitesVerdict.reason`).
    """

    roles: tuple[str, ...]
    other: SiteBlock
    test: PairTest | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "roles": list(self.roles),
            "other": self.other.to_dict(),
            "test": None if self.test is None else self.test.to_dict(),
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> SiteComparison:
        test = payload["test"]
        return cls(
            tuple(payload["roles"]),
            SiteBlock.from_dict(payload["other"]),
            None if test is None else PairTest.from_dict(test),
        )


@dataclass(frozen=True)
class SitesVerdict:
    """One verdict across the sites and blocks of one entry (``site = [...]``): every (site,
    block) ranked by the sweeps' ranking measure on the same held-out data, the best tested on
    the test set against the runner-up and against the best block of each other site, the
    p-values Holm-adjusted over that family of distinct comparisons (module docstring).

    Attributes:
        entry: the entry's name (its sweeps are ``entry-SITE``).
        measure: the ranking headline's label.
        sites: the sites, in the entry's order.
        ranking: every (site, block), best first (lower bounds last).
        chosen_on: which data ranked them (a development split, the pool, or ``"test"``).
        best: the best (site, block); None when none can be named (``reason``).
        comparisons: the best against the runner-up and each other site's best, one per
            distinct other (site, block).
        tested_on: ``"test"`` when the comparisons were tested, else ``""``.
        reason: why no best is named, or why the comparisons are not tested.
    """

    entry: str
    measure: str
    sites: tuple[str, ...]
    ranking: tuple[SiteBlock, ...]
    chosen_on: str
    best: SiteBlock | None
    comparisons: tuple[SiteComparison, ...] = ()
    tested_on: str = ""
    reason: str | None = None

    @property
    def established_best(self) -> bool:
        """Whether the best (site, block) is more accurate than every other compared, each an
        established difference after Holm's adjustment (adjusted p < α, power ≥ 0.8)."""
        tests = [comparison.test for comparison in self.comparisons]
        return bool(tests) and all(
            test is not None
            and test.problem is None
            and test.established
            and test.accuracy_first > test.accuracy_second
            for test in tests
        )

    def describe(self, accuracy: str = "accuracy") -> str:
        """The verdict in one paragraph."""
        sites = ", ".join(self.sites)
        if self.best is None:
            return (
                f"Across the sites of {self.entry} ({sites}): no best (site, block) by "
                f"{self.measure}: {self.reason}"
            )
        text = (
            f"Across the sites of {self.entry} ({sites}): best {self.best.name()} of "
            f"{len(self.ranking)} (site, block) pairs by {self.measure} "
            f"({self.best.estimate.format()}; chosen on {self.chosen_on})"
        )
        others = [
            f"{' and '.join(c.roles)}: {c.other.name()} ({c.other.estimate.format()})"
            for c in self.comparisons
        ]
        if others:
            text += "; " + "; ".join(others)
        if not self.tested_on:
            return f"{text}; {self.reason}."
        m = max(c.test.comparisons for c in self.comparisons if c.test is not None)
        tests = [
            f"against the {' and '.join(c.roles)}: "
            + c.test.describe().replace("test accuracy", f"test {accuracy}")
            for c in self.comparisons
        ]
        verdict = (
            f"{self.best.name()} is the best (site, block): more accurate than each compared, "
            "every difference established"
            if self.established_best
            else f"{self.best.name()} is not established as the best (site, block): not every "
            "comparison is an established difference in its favour"
        )
        return (
            f"{text}. Best probes tested on the {self.tested_on} set, Holm-adjusted over the "
            f"family's m = {m} comparisons: " + "; ".join(tests) + f". {verdict}."
        )

    def table(self, fmt: str = "markdown", accuracy: str = "accuracy") -> str:
        """The ranking: rank, site, block, the measure on the choosing data, and for the
        best's comparisons the test {accuracy}, p (Holm) and power."""
        compared = {c.other.representation: c for c in self.comparisons}
        where = "test" if self.chosen_on == "test" else "held out"
        header = ["rank", "site", "block", f"{self.measure} ({where})", "compared"]
        rows = []
        for rank, block in enumerate(self.ranking, start=1):
            comparison = compared.get(block.representation)
            if self.best is not None and block.representation == self.best.representation:
                cell = "best"
            elif comparison is None:
                cell = ""
            elif comparison.test is None:
                cell = " and ".join(comparison.roles)
            else:
                test = comparison.test
                cell = (
                    f"{' and '.join(comparison.roles)}: {accuracy} {test.accuracy_first:.4f} vs "
                    f"{test.accuracy_second:.4f}; {test.cell()}"
                )
            rows.append([str(rank), block.site, str(block.layer), block.estimate.format(), cell])
        return render_table(header, rows, fmt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "measure": self.measure,
            "sites": list(self.sites),
            "ranking": [block.to_dict() for block in self.ranking],
            "chosen_on": self.chosen_on,
            "best": None if self.best is None else self.best.to_dict(),
            "comparisons": [comparison.to_dict() for comparison in self.comparisons],
            "tested_on": self.tested_on,
            "reason": self.reason,
            "established_best": self.established_best,
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> SitesVerdict:
        best = payload["best"]
        return cls(
            payload["entry"],
            payload["measure"],
            tuple(payload["sites"]),
            tuple(SiteBlock.from_dict(block) for block in payload["ranking"]),
            payload["chosen_on"],
            None if best is None else SiteBlock.from_dict(best),
            tuple(SiteComparison.from_dict(c) for c in payload["comparisons"]),
            payload["tested_on"],
            payload["reason"],
        )


@dataclass(frozen=True)
class LayerAnalysis(JsonResult):
    """Every sweep of a run, layer by layer, with its verdict (see the module docstring)."""

    method: str
    headlines: tuple[Headline, ...]
    rows: tuple[LayerRow, ...]
    verdicts: tuple[SweepVerdict, ...]
    alpha: float
    #: what the best probes' test accuracy is called (``"UAS"`` for head selection)
    accuracy: str = "accuracy"
    #: the run's surface floors (``[task] controls``), after the layers in the table
    floors: tuple[FloorRow, ...] = ()
    #: one verdict across the sites and blocks of each entry read at several sites
    sites: tuple[SitesVerdict, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """One row per (sweep, layer, measure): value, seed range, lower-bound flag; the
        accuracy of the best probes is the measure :attr:`accuracy` (``"accuracy"``, or
        ``"UAS"``); a surface floor's rows have its name as their sweep and no layer."""
        records = []
        rows = [(row.sweep, row.layer, row) for row in self.rows]
        rows += [(floor.representation, None, floor) for floor in self.floors]
        for sweep, layer, row in rows:
            measures = {**row.estimates, self.accuracy: row.accuracy}
            for measure, estimate in measures.items():
                records.append(
                    {
                        "sweep": sweep,
                        "layer": layer,
                        "representation": row.representation,
                        "measure": measure,
                        **estimate.to_dict(),
                    }
                )
        return pd.DataFrame(records)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "method": self.method,
            "alpha": self.alpha,
            "accuracy": self.accuracy,
            "headlines": [asdict(headline) for headline in self.headlines],
            "rows": [row.to_dict() for row in self.rows],
            "verdicts": [verdict.to_dict() for verdict in self.verdicts],
            "floors": [floor.to_dict() for floor in self.floors],
            "sites": [verdict.to_dict() for verdict in self.sites],
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> LayerAnalysis:
        if payload.get("schema") not in READABLE:
            raise ValueError(f"not a layers document (readable: {', '.join(READABLE)})")
        return cls(
            payload["method"],
            tuple(Headline(**headline) for headline in payload["headlines"]),
            tuple(LayerRow.from_dict(row) for row in payload["rows"]),
            tuple(SweepVerdict.from_dict(v) for v in payload["verdicts"]),
            float(payload["alpha"]),
            str(payload.get("accuracy", "accuracy")),
            tuple(FloorRow.from_dict(floor) for floor in payload.get("floors", ())),
            tuple(SitesVerdict.from_dict(verdict) for verdict in payload.get("sites", ())),
        )

    @property
    def accuracy_is_headline(self) -> bool:
        """Whether the best probes' test accuracy is itself a headline (structural probes:
        UUAS, or root accuracy): the table and figure then show it once."""
        return self.accuracy in {headline.label for headline in self.headlines}

    def table(self, fmt: str = "markdown") -> str:
        """The layer table in ``fmt`` (``"markdown"``, ``"text"``, ``"latex"``, ``"html"``);
        the accuracy column only where the accuracy is no headline."""
        accuracy = [] if self.accuracy_is_headline else [self.accuracy]
        header = [
            "model",
            "layer",
            *(headline.label for headline in self.headlines),
            *accuracy,
            "vs previous layer",
        ]
        rows, breaks = [], []
        for index, row in enumerate(self.rows):
            if index and row.sweep != self.rows[index - 1].sweep:
                breaks.append(index)
            rows.append(
                [
                    row.sweep,
                    str(row.layer),
                    *(row.estimates[headline.name].format() for headline in self.headlines),
                    *([] if self.accuracy_is_headline else [row.accuracy.format()]),
                    "—" if row.previous is None else row.previous.cell(),
                ]
            )
        if self.floors:  # the surface floors, each a row of its own: no layer, no previous
            breaks.append(len(rows))
        for floor in self.floors:
            rows.append(
                [
                    floor.representation,
                    "—",
                    *(floor.estimates[headline.name].format() for headline in self.headlines),
                    *([] if self.accuracy_is_headline else [floor.accuracy.format()]),
                    "—",
                ]
            )
        return render_table(header, rows, fmt, breaks=breaks)

    def notes(self) -> list[str]:
        """How to read the table, then one verdict per sweep."""
        tests = sorted(
            {
                test.test
                for test in [row.previous for row in self.rows]
                + [verdict.test for verdict in self.verdicts]
                if test is not None and test.problem is None
            }
        )
        named = " and ".join(tests) if tests else "McNemar"
        return [
            "Values [min, max over seeds]; > x: a lower bound (the data ran out first). "
            f"{self.accuracy[0].upper()}{self.accuracy[1:]}: the test {self.accuracy} of the "
            f"method's best probes. Paired test ({named}) on their test predictions per seed, "
            "p the largest over seeds, Holm-adjusted over each sweep's m comparisons; power: "
            "that of the decision, the share of bootstrap test sets (of whole sentences when "
            f"clustered) on which every seed's test rejects at α/m (α = {self.alpha:g}); a "
            "difference is established at adjusted p < α and power ≥ 0.8 (Zhu et al. 2022, "
            "§3.5). The best layer is chosen on held-out data and tested on the test set.",
            *(
                verdict.describe().replace("test accuracy", f"test {self.accuracy}")
                for verdict in self.verdicts
            ),
        ]

    def __str__(self) -> str:
        return "\n\n".join([self.table("text"), *self.notes(), *self.sites_section("text")])

    def sites_section(self, fmt: str = "markdown") -> list[str]:
        """The section "Across sites" (empty without an entry read at several sites): its
        heading, then per entry its ranking of every (site, block) and its verdict."""
        if not self.sites:
            return []
        heading = {"markdown": "## Across sites", "latex": "\\section*{Across sites}"}
        parts = [
            heading.get(fmt, "Across sites"),
            "Every (site, block) of an entry read at several sites, ranked by the sweeps' "
            "measure on the same held-out data; the best tested on the test set against the "
            "runner-up and the best block of each other site, by the same paired test, the "
            "p-values Holm-adjusted over that family of distinct comparisons, the power that of "
            "the decision at α/m.",
        ]
        for verdict in self.sites:
            parts += [verdict.table(fmt, self.accuracy), verdict.describe(self.accuracy)]
        return parts

    def plot(self) -> Any:
        """One panel per headline panel (and test accuracy): the measure against layer, one
        line per sweep (dashed: a control), bars spanning the seeds, lower bounds as open
        triangles, the best surface floor of each measure as a grey dotted level, one legend
        below. Returns the matplotlib figure (save it with
        :meth:`probemeter._figures.FigureOptions.save`)."""
        from matplotlib.figure import Figure

        panels = list(dict.fromkeys(headline.panel for headline in self.headlines))
        extra = 0 if self.accuracy_is_headline else 1
        figure = Figure(figsize=(4.2 * (len(panels) + extra), 4.0), layout="constrained")
        axes = figure.subplots(1, len(panels) + extra, squeeze=False)
        sweeps = list(dict.fromkeys(row.sweep for row in self.rows))
        for ax, panel in zip(axes[0], panels):
            for headline in self.headlines:
                if headline.panel == panel:  # a dashed line's role: its label less the panel's
                    role = headline.label.removesuffix(panel).rstrip(": ") or headline.label
                    self._draw(ax, sweeps, headline.name, headline.dashed, role)
                    if not headline.dashed:
                        self._draw_floor(ax, headline)
            ax.set_title(panel, fontsize=9)
        if extra:
            self._draw(axes[0][-1], sweeps, "accuracy", False, "accuracy")
            self._draw_floor(axes[0][-1], None)
            axes[0][-1].set_title(f"test {self.accuracy} of the best probes", fontsize=9)
        layers = sorted({row.layer for row in self.rows})
        for ax in axes[0]:
            ax.set_xlabel("layer (0 = embeddings)")
            ax.set_xticks(layers)
        shared_legend(figure, list(axes[0]), columns=4)
        figure.suptitle(
            f"{self.method} method: measures by layer (bars: range over seeds; open "
            "triangles: lower bounds)",
            fontsize=10,
        )
        return figure

    def plot_sites(self) -> Any:
        """The across-sites figure: per entry read at several sites, a panel of the ranking
        measure on the data that chose (a development split) against block, one line per
        site, bars spanning the seeds, lower bounds as open triangles, the best (site, block)
        starred and each block it was tested against ringed. Returns the matplotlib figure,
        or None without such an entry."""
        if not self.sites:
            return None
        from matplotlib.figure import Figure

        count = len(self.sites)
        figure = Figure(figsize=(4.8 * count, 4.0), layout="constrained")
        axes = figure.subplots(1, count, squeeze=False)[0]
        for ax, verdict in zip(axes, self.sites):
            for index, site in enumerate(verdict.sites):
                blocks = sorted(
                    (b for b in verdict.ranking if b.site == site), key=lambda b: b.layer
                )
                layers = np.array([b.layer for b in blocks])
                values = np.array([b.estimate.value for b in blocks])
                low = np.array(
                    [
                        b.estimate.low if b.estimate.low is not None else b.estimate.value
                        for b in blocks
                    ]
                )
                high = np.array(
                    [
                        b.estimate.high if b.estimate.high is not None else b.estimate.value
                        for b in blocks
                    ]
                )
                spread = [np.maximum(values - low, 0.0), np.maximum(high - values, 0.0)]
                colour = f"C{index % 10}"
                ax.errorbar(
                    layers, values, yerr=spread, color=colour, marker="o", ms=4, capsize=3,
                    label=site,
                )  # fmt: skip
                bounds = np.array([b.estimate.lower_bound for b in blocks])
                if bounds.any():
                    ax.plot(
                        layers[bounds], values[bounds], ls="none", marker="^", ms=10,
                        markerfacecolor="white", color=colour, label=f"{site}: lower bound",
                    )  # fmt: skip
            if verdict.best is not None:
                best = verdict.best
                ax.plot(
                    [best.layer], [best.estimate.value], ls="none", marker="*", ms=16,
                    color="black", markerfacecolor="gold", label="best (site, block)",
                )  # fmt: skip
                compared = [c.other for c in verdict.comparisons]
                ax.plot(
                    [b.layer for b in compared], [b.estimate.value for b in compared], ls="none",
                    marker="o", ms=11, markerfacecolor="none", color="black",
                    label="tested against the best",
                )  # fmt: skip
            ax.set_title(f"{verdict.entry}: {verdict.measure} on {verdict.chosen_on}", fontsize=9)
            ax.set_xlabel(
                "block (hidden: layer, 0 = embeddings)" if "hidden" in verdict.sites else "block"
            )
            ax.set_xticks(sorted({b.layer for b in verdict.ranking}))
        shared_legend(figure, list(axes), columns=4)
        figure.suptitle(
            f"{self.method} method: one ranking across sites and blocks, on the data that chose",
            fontsize=10,
        )
        return figure

    def _draw_floor(self, ax: Any, headline: Headline | None) -> None:
        """The best surface floor by ``headline`` (None: by test accuracy, higher is better)
        as a horizontal dotted level; nothing without floors."""
        if not self.floors:
            return
        if headline is None:
            estimates = [floor.accuracy for floor in self.floors]
            best = max(range(len(estimates)), key=lambda i: estimates[i].value)
        else:
            estimates = [floor.estimates[headline.name] for floor in self.floors]
            best = headline.best_first(estimates)[0]
        name = self.floors[best].representation
        ax.axhline(
            estimates[best].value, color="0.45", ls=":", lw=1.2, label=f"best surface floor: {name}"
        )

    def _draw(self, ax: Any, sweeps: list[str], measure: str, dashed: bool, role: str) -> None:
        for index, sweep in enumerate(sweeps):
            rows = [row for row in self.rows if row.sweep == sweep]
            estimates = [
                row.accuracy if measure == "accuracy" else row.estimates[measure] for row in rows
            ]
            layers = np.array([row.layer for row in rows])
            values = np.array([e.value for e in estimates])
            low = np.array([e.value if e.low is None else e.low for e in estimates])
            high = np.array([e.value if e.high is None else e.high for e in estimates])
            colour = f"C{index % 10}"
            name = sweep if measure == "accuracy" or not dashed else f"{sweep}, {role}"
            # a mean over seeds can round an ulp outside their range (seeds that agree)
            spread = [np.maximum(values - low, 0.0), np.maximum(high - values, 0.0)]
            ax.errorbar(
                layers, values, yerr=spread, color=colour,
                ls="--" if dashed else "-", marker="o", ms=4, capsize=3, label=name,
            )  # fmt: skip
            bounds = np.array([e.lower_bound for e in estimates])
            if bounds.any():
                ax.plot(
                    layers[bounds], values[bounds], ls="none", marker="^", ms=10,
                    markerfacecolor="white", color=colour, label=f"{sweep}: lower bound",
                )  # fmt: skip


def _problem(first_summary: Summary, second_summary: Summary) -> str | None:
    """Why the two summaries' best probes cannot be tested against each other; None when they
    can."""
    a, b = first_summary.correctness, second_summary.correctness
    if a is None or b is None:
        return "no per-example test predictions stored (a result of an older version)"
    if a.labels_digest != b.labels_digest or a.n_test != b.n_test:
        return "the two were evaluated on different test sets, so predictions are not paired"
    if (a.clusters is None) != (b.clusters is None) or (
        a.clusters is not None and not np.array_equal(a.clusters, b.clusters)
    ):
        return "the two test sets group their examples into different sentences"
    if not set(a.seeds) & set(b.seeds):
        return "the two share no seed"
    if a.clusters is not None and a.n_clusters < 2:
        return "the test set holds one sentence: a paired test of sentences needs at least two"
    return None


def _detail(results: Sequence[Any]) -> str:
    """How the seeds' sign-flip p-values were computed, in words."""
    counts = sorted({result.n_discordant for result in results})
    monte_carlo = [result for result in results if result.method != "exact"]
    if not monte_carlo and len(counts) == 1:
        m = counts[0]
        return f"exact over all 2^{m} sign patterns of the {m:,} sentences with a difference"
    span = f"{counts[0]:,}" if len(counts) == 1 else f"{counts[0]:,}–{counts[-1]:,}"
    if not monte_carlo:
        return f"exact over all 2^k sign patterns, k = {span} sentences with a difference by seed"
    patterns = monte_carlo[0].n_patterns
    return (
        f"{len(monte_carlo)} of {len(results)} seeds by Monte Carlo over {patterns:,} random "
        f"sign patterns (resolution 1/{patterns + 1:,}), the others exact; {span} sentences "
        "with a difference by seed"
    )


def pair_test(
    first: str,
    first_summary: Summary,
    second: str,
    second_summary: Summary,
    *,
    alpha: float = 0.05,
    n_simulations: int = SIMULATIONS,
    random_state: int = 0,
    comparisons: int = 1,
    sentences: bool = True,
    family: str = "sweep",
) -> PairTest:
    """The paired test between the best probes of two representations, per paired seed —
    McNemar's, or the sign-flip test of sentences when the test examples are words of
    sentences — with the power of the decision at α/``comparisons`` and, when the difference
    is not established, the bound's recommended N_train and (``sentences``: for a clustered
    test set) the test sentences the decision needs (see the module docstring). No test is
    made (``problem`` says why) when either summary holds no per-example predictions, the
    test sets differ, or no seed is shared."""
    alpha = check_alpha(alpha)
    a, b = first_summary.correctness, second_summary.correctness
    means = first_summary.accuracy.value, second_summary.accuracy.value
    problem = _problem(first_summary, second_summary)
    if problem is not None:
        return PairTest(first, second, *means, alpha=alpha, problem=problem)
    seeds = [seed for seed in a.seeds if seed in set(b.seeds)]
    correct_a = [a.correct[a.seeds.index(seed)] for seed in seeds]
    correct_b = [b.correct[b.seeds.index(seed)] for seed in seeds]
    clusters = a.clusters
    if clusters is None:
        p_values = tuple(mcnemar(x, y).p_value for x, y in zip(correct_a, correct_b))
        detail = ""
    else:
        results = [
            sign_flip_test(x, y, clusters, random_state=random_state)
            for x, y in zip(correct_a, correct_b)
        ]
        p_values = tuple(result.p_value for result in results)
        detail = _detail(results)
    options = {
        "alpha": alpha,
        "comparisons": comparisons,
        "random_state": random_state,
    }
    decision = decision_power(
        correct_a, correct_b, clusters, n_simulations=n_simulations, **options
    )
    accuracy_a = float(np.mean([values.mean() for values in correct_a]))
    accuracy_b = float(np.mean([values.mean() for values in correct_b]))
    recommended = needed = searched = None
    gap = abs(accuracy_a - accuracy_b)
    parameters = [_parameter_count(summary) for summary in (first_summary, second_summary)]
    if decision.power < SUFFICIENT_POWER and gap > 0:
        if None not in parameters:
            recommended = recommend_train_size(gap, max(parameters)).n_train
        if clusters is not None and sentences:
            found = sentences_needed(correct_a, correct_b, clusters, **options)
            needed, searched = found.n_sentences, found.most
    return PairTest(
        first,
        second,
        accuracy_a,
        accuracy_b,
        p_values,
        decision.power,
        alpha,
        a.n_test,
        recommended,
        test=MCNEMAR if clusters is None else CLUSTERED,
        n_clusters=None if clusters is None else a.n_clusters,
        detail=detail,
        comparisons=int(comparisons),
        power_level=decision.level,
        sentences_needed=needed,
        sentences_searched=searched,
        family=family,
    )


def _parameter_count(summary: Summary) -> int | None:
    """The best probes' parameters as the bound counts them (Zhu et al., §3.4 fn. 6)."""
    if summary.n_features is None or summary.n_classes is None:
        return None
    return probe_parameter_count(summary.n_features, summary.n_classes, summary.probe)


def analyse_layers(
    method: Method,
    results: Sequence[Mapping[str, Any]],
    sweeps: Mapping[str, Sequence[tuple[int, str]]],
    *,
    alpha: float = 0.05,
    n_simulations: int = SIMULATIONS,
    random_state: int = 0,
    floors: Sequence[str] = (),
    sites: Mapping[str, Mapping[str, str]] | None = None,
) -> LayerAnalysis:
    """The layer table, figure data and verdicts of ``sweeps`` (a model's entry name → its
    ``(layer, representation)`` pairs) from a run's unit ``results`` (see the module
    docstring); with ``floors`` (the representations of surface floors), their rows and each
    verdict's comparison of the best layer with the best floor; with ``sites`` (an entry's
    name → ``{site: sweep}``, :func:`probemeter.runs.config.site_sweeps`), one verdict across
    each entry's sites and blocks (:class:`SitesVerdict`).

    Raises:
        ValueError: a sweep or ``floors`` names a representation the results do not hold;
            ``sites`` names a sweep ``sweeps`` does not hold.
    """
    alpha = check_alpha(alpha)
    summaries = method.summaries(results)
    headlines = measured_headlines(method.headlines(), summaries.values())
    options = {"alpha": alpha, "n_simulations": n_simulations, "random_state": random_state}
    missing = [name for name in floors if name not in summaries]
    if missing:
        raise ValueError(f"surface floors: no result for {missing}")
    floor_rows = tuple(
        FloorRow(name, summaries[name].estimates, summaries[name].accuracy) for name in floors
    )
    rows, verdicts = [], []
    for sweep, members in sweeps.items():
        members = sorted(members)
        missing = [name for _, name in members if name not in summaries]
        if missing:
            raise ValueError(f"sweep {sweep!r}: no result for {missing}")
        verdict, tested = _verdict(sweep, members, summaries, headlines[0])
        floor, against = _floor_choice(verdict, floors, summaries, headlines[0])
        pairs = [(members[i - 1][1], members[i][1]) for i in range(1, len(members))]
        testable = {
            frozenset(pair)
            for pair in [*pairs, *([tested] if tested else []), *([against] if against else [])]
            if _problem(summaries[pair[0]], summaries[pair[1]]) is None
        }
        sweep_options = {**options, "comparisons": max(1, len(testable))}
        sweep_rows = []
        for index, (layer, name) in enumerate(members):
            previous = None
            if index:
                before = members[index - 1][1]
                previous = pair_test(
                    before, summaries[before], name, summaries[name], sentences=False,
                    **sweep_options,
                )  # fmt: skip
            summary = summaries[name]
            sweep_rows.append(
                LayerRow(sweep, layer, name, summary.estimates, summary.accuracy, previous)
            )
        if tested is not None:
            best, runner_up = tested
            test = pair_test(
                best, summaries[best], runner_up, summaries[runner_up], **sweep_options
            )
            verdict = replace(verdict, test=test, tested_on="test")
        if against is not None:
            layer, best_floor = against
            test = pair_test(
                layer, summaries[layer], best_floor, summaries[best_floor], **sweep_options
            )
            floor = replace(floor, test=test)
        if floor is not None:
            verdict = replace(verdict, floor=floor)
        sweep_rows, verdict = _adjusted(sweep_rows, verdict)
        rows += sweep_rows
        verdicts.append(verdict)
    across = []
    for entry, named in (sites or {}).items():
        unknown = [sweep for sweep in named.values() if sweep not in sweeps]
        if unknown:
            raise ValueError(f"sites of {entry!r}: no sweep {unknown}")
        across.append(_across_sites(entry, named, sweeps, summaries, headlines[0], options))
    return LayerAnalysis(
        method.kind,
        headlines,
        tuple(rows),
        tuple(verdicts),
        alpha,
        method.accuracy_name,
        floor_rows,
        tuple(across),
    )


def _across_sites(
    entry: str,
    sites: Mapping[str, str],
    sweeps: Mapping[str, Sequence[tuple[int, str]]],
    summaries: Mapping[str, Summary],
    ranking: Headline,
    options: Mapping[str, Any],
) -> SitesVerdict:
    """One verdict across the sites of ``entry`` (``sites``: site → its sweep's name): every
    (site, block) ranked by ``ranking`` on the held-out data (:func:`_choice_estimates`, as a
    sweep's verdict), the best tested on the test set (:func:`pair_test`) against the
    runner-up and against the best block of each other site, the distinct comparisons'
    p-values Holm-adjusted together and each decision's power at α/m (module docstring)."""
    blocks = [
        (site, layer, name)
        for site, sweep in sites.items()
        for layer, name in sorted(sweeps[sweep])
    ]
    chosen = [summaries[name] for _, _, name in blocks]
    estimates, chosen_on = _choice_estimates(chosen, ranking)
    order = ranking.best_first(estimates)
    ranked = tuple(SiteBlock(*blocks[i], estimates[i]) for i in order)
    common = {"entry": entry, "measure": ranking.label, "sites": tuple(sites)}
    common.update(ranking=ranked, chosen_on=chosen_on)
    best = ranked[0]
    if best.estimate.lower_bound:
        reason = (
            "every (site, block)'s value is only a lower bound: the data ran out before the "
            "measure was reached (Whitney et al. §4), so they cannot be ordered"
        )
        return SitesVerdict(**common, best=None, reason=reason)
    roles: dict[str, list[str]] = {ranked[1].representation: ["runner-up"]}
    for site in sites:
        if site != best.site:
            top = next(block for block in ranked if block.site == site)
            roles.setdefault(top.representation, []).append(f"best of {site}")
    by_name = {block.representation: block for block in ranked}
    others = [by_name[name] for name in sorted(roles, key=lambda n: ranked.index(by_name[n]))]
    if chosen_on == "test":
        reason = (
            "no confirmatory test: this method measured no data held out from the test set, and "
            "a (site, block) chosen on its test scores, tested on the same scores, would look "
            "better than it is"
        )
        untested = tuple(SiteComparison(tuple(roles[o.representation]), o) for o in others)
        return SitesVerdict(**common, best=best, comparisons=untested, reason=reason)
    first = summaries[best.representation]
    testable = [
        other for other in others if _problem(first, summaries[other.representation]) is None
    ]
    adjusted_over = {**options, "comparisons": max(1, len(testable))}
    tests = [
        pair_test(
            best.representation,
            first,
            other.representation,
            summaries[other.representation],
            family="across-sites",
            **adjusted_over,
        )
        for other in others
    ]
    measured = [i for i, test in enumerate(tests) if test.p_value is not None]
    adjusted = holm([tests[i].p_value for i in measured]) if measured else []
    for i, p in zip(measured, adjusted):
        tests[i] = replace(tests[i], p_adjusted=float(p))
    comparisons = tuple(
        SiteComparison(tuple(roles[o.representation]), o, test) for o, test in zip(others, tests)
    )
    return SitesVerdict(**common, best=best, comparisons=comparisons, tested_on="test")


def _floor_choice(
    verdict: SweepVerdict,
    floors: Sequence[str],
    summaries: Mapping[str, Summary],
    ranking: Headline,
) -> tuple[FloorComparison | None, tuple[str, str] | None]:
    """The best surface floor by ``ranking``, chosen on the held-out data that chose the
    sweep's best layer (the test scores where the layer was chosen on those), and the pair
    (best layer, best floor) to test on the test set (None when no confirmatory test is made:
    the comparison then says why); (None, None) without floors."""
    if not floors:
        return None, None
    if verdict.best is None:
        return FloorComparison(None, reason="no best layer to compare"), None
    chosen = [summaries[name] for name in floors]
    estimates, chosen_on = _choice_estimates(chosen, ranking, verdict.chosen_on != "test")
    order = ranking.best_first(estimates)
    best = floors[order[0]]
    value = f"{ranking.label} {estimates[order[0]].format()}"
    if estimates[order[0]].lower_bound:
        reason = (
            f"every floor's {ranking.label} is only a lower bound (the data ran out first), so "
            "the floors cannot be ordered"
        )
        return FloorComparison(None, reason=reason), None
    if chosen_on == "test":
        reason = (
            "no confirmatory test: the best layer or the floors were measured on no data held "
            "out from the test set, and what is chosen on test scores looks better there"
        )
        return FloorComparison(best, value, chosen_on, reason=reason), None
    return FloorComparison(best, value, chosen_on), (verdict.best[1], best)


def _adjusted(rows: list[LayerRow], verdict: SweepVerdict) -> tuple[list[LayerRow], SweepVerdict]:
    """The sweep's rows and verdict with every test's p-value Holm-adjusted over the sweep's
    distinct comparisons (each layer against the previous one, the verdict's pair, and the
    best layer against the best surface floor; a pair tested twice counts once)."""
    tests = [row.previous for row in rows if row.previous is not None]
    if verdict.test is not None:
        tests.append(verdict.test)
    floor = verdict.floor
    if floor is not None and floor.test is not None:
        tests.append(floor.test)
    distinct = {
        frozenset((test.first, test.second)): test.p_value
        for test in tests
        if test.p_value is not None
    }
    adjusted = dict(zip(distinct, holm(list(distinct.values())))) if distinct else {}

    def adjust(test: PairTest | None) -> PairTest | None:
        pair = None if test is None else frozenset((test.first, test.second))
        if pair not in adjusted:
            return test
        return replace(test, p_adjusted=float(adjusted[pair]))

    rows = [replace(row, previous=adjust(row.previous)) for row in rows]
    if floor is not None:
        verdict = replace(verdict, floor=replace(floor, test=adjust(floor.test)))
    return rows, replace(verdict, test=adjust(verdict.test))


def _choice_estimates(
    chosen: Sequence[Summary], ranking: Headline, held_out: bool = True
) -> tuple[list[Estimate], str]:
    """The estimates by ``ranking`` to choose among ``chosen`` on, and where they come from:
    their held-out (development) values where every one has them and ``held_out`` allows,
    else their test values (``"test"``: then no choice is tested)."""
    if held_out and all(
        summary.selection is not None and ranking.name in summary.selection for summary in chosen
    ):
        splits = list(dict.fromkeys(summary.selection_split for summary in chosen))
        chosen_on = "; ".join(split for split in splits if split) or "held-out data"
        return [summary.selection[ranking.name] for summary in chosen], chosen_on
    return [summary.estimates[ranking.name] for summary in chosen], "test"


def _verdict(
    sweep: str,
    members: Sequence[tuple[int, str]],
    summaries: Mapping[str, Summary],
    ranking: Headline,
) -> tuple[SweepVerdict, tuple[str, str] | None]:
    """The best layer of a sweep by ``ranking`` on held-out data and the runner-up (see the
    module docstring), with the pair of representations to test on the test set (None when
    no confirmatory test is made; the verdict then says why)."""
    chosen = [summaries[name] for _, name in members]
    estimates, chosen_on = _choice_estimates(chosen, ranking)
    order = ranking.best_first(estimates)
    best = members[order[0]]
    common = {"chosen_on": chosen_on}
    if estimates[order[0]].lower_bound:
        reason = (
            "every layer's value is only a lower bound: the data ran out before the measure was "
            "reached (Whitney et al. §4), so the layers cannot be ordered"
        )
        return SweepVerdict(sweep, ranking.label, None, None, None, reason, **common), None
    shown = estimates[order[0]].format()
    if len(members) < 2:
        reason = "the sweep has one layer only"
        verdict = SweepVerdict(sweep, ranking.label, best, None, None, reason, shown, **common)
        return verdict, None
    runner_up = members[order[1]]
    runner_up_value = estimates[order[1]].format()
    if chosen_on == "test":
        reason = (
            "no confirmatory test: this method measured no data held out from the test set, and "
            "a layer chosen on its test scores, tested on the same scores, would look better "
            "than it is"
        )
        verdict = SweepVerdict(
            sweep, ranking.label, best, runner_up, None, reason, shown, runner_up_value, **common
        )
        return verdict, None
    verdict = SweepVerdict(
        sweep,
        ranking.label,
        best,
        runner_up,
        None,
        best_value=shown,
        runner_up_value=runner_up_value,
        **common,
    )
    return verdict, (best[1], runner_up[1])


def write_layer_files(
    analysis: LayerAnalysis, run_dir: str | Path, figures: FigureOptions | None = None
) -> tuple[Path, ...]:
    """Write the figure (``layers.png`` and ``layers.pdf``, or the formats of ``figures``),
    ``layers.json``, ``layers.md`` and ``layers.tex`` (table and notes) into ``run_dir``, each
    atomically; returns the paths, the figures first."""
    run_dir = Path(run_dir)
    notes = analysis.notes()
    figures = figures or FigureOptions()
    figure_files = figures.save(analysis.plot(), run_dir / "layers")
    if analysis.sites:  # the across-sites figure: one line per site
        figure_files += figures.save(analysis.plot_sites(), run_dir / "sites")
    files = {name: run_dir / f"layers.{name}" for name in ("json", "md", "tex")}
    analysis.save(files["json"])
    markdown = "\n\n".join([analysis.table("markdown"), *notes, *analysis.sites_section()])
    write_text_atomic(files["md"], markdown + "\n")
    across = [
        part if part.startswith("\\") else f"% {part}" for part in analysis.sites_section("latex")
    ]
    latex = "\n".join([analysis.table("latex"), *(f"% {note}" for note in notes), *across])
    write_text_atomic(files["tex"], latex + "\n")
    return (*figure_files, *files.values())
