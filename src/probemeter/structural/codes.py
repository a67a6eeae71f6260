"""Codelengths of tree structure: the online code over blocks of sentences and the loss-data
curve of structural probes, with the discretised-Laplace codelength of
:mod:`probemeter.structural.likelihood` (nats; bits = nats / ln 2).

Both fit a probe's Laplace scale b on **held-out** sentences, never on the sentences the probe
was trained on. Given an ordered set S of m sentences (a transmitted prefix, or a nested
training subset), :func:`holdout_split` keeps its last v = ⌈h·m⌉ sentences (``holdout`` h,
default :data:`HOLDOUT`; at least one, and at least one left to train on) as the held-out
part V and the first m − v as the training part T::

    B_S = the probe trained on T only
    b_S = argmin_b Σ_{s ∈ V} −ln Q(y_s | B_S, b)        (fit_laplace_scale on V)

For the plain continuous Laplace, b_S would be the mean absolute held-out residual
(1/|V|) Σ |y − μ|; the discretised, truncated, mixed Q has no closed form and is minimised
numerically. Fitting b on T instead (in-sample) makes it as small as the probe's training
residuals: for a probe that overfits (many feature dimensions, few sentences) the scale is far
too small, the code over-confident, and the codelengths no longer rank representations as the
held-out errors do. The held-out fit costs the probe the v held-out sentences of training data;
it trains no extra probe (a cross-fitted scale would train one per fold).

* :func:`structural_online_code` — Voita & Titov (2020), §2.2.2, eq. 4, with sentences as the
  transmitted items: a seeded order of the sentences is cut at the block ends
  t_1 < … < t_S (:func:`probemeter.mdl.block_ends`); the first t_1 sentences' targets are sent
  with the uniform code over their supports, and block (t_i, t_{i+1}] with the probe B_{t_i}
  and scale b_{t_i} of the first t_i sentences S_i, split as above (the probe trains on the
  first t_i − v_i transmitted sentences, the scale is fitted on the last v_i)::

      L = Σ_{s ≤ t_1} U(s) + Σ_{i=1}^{S−1} Σ_{t_i < s ≤ t_{i+1}} −ln Q(y_s | B_{t_i}, b_{t_i})

  where U(s) is the uniform code of sentence s's targets and Q the probe's likelihood. B_{t_i}
  and b_{t_i} are functions of the first t_i sentences only (their features, targets and the
  public seeds), so a receiver who has decoded them rebuilds both: the code is decodable.

* :func:`structural_curve` — Whitney et al. (2020), §2.1: probes trained on nested subsets of
  n pool sentences, the loss L(n) being the **mean codelength per test sentence** in nats,
  each probe's scale fitted on the held-out part of its own n sentences (so never on the test
  sentences, and L(n) is the cost of a probe *given n sentences*, as a block of the online
  code). The result holds a :class:`~probemeter.curves.LossDataCurve` (examples are
  sentences), so the curve measures (``description_length``, ``sdl``, ``sample_complexity``)
  apply unchanged given the first block's per-sentence cost
  (:attr:`StructuralCurve.first_block`, the mean uniform code of a pool sentence):
  :meth:`StructuralCurve.measure` passes it.

  The curve's ``loss_truncated`` is the **truncated loss per target, averaged per sentence**
  (:func:`~probemeter.structural.scoring.sentence_truncated_losses`)::

      ℓ(s) = (1/|T_s|) Σ_{t ∈ T_s} min(−ln Q(y_t | B, b), 1),   L_trunc(n) = mean_s ℓ(s)

  in [0, 1] for every test sentence s. Whitney et al. (2020), App. A (Algorithm 1, Theorem
  4), need a loss bounded in [0, 1] per independently drawn test example, "achieved by
  truncating the cross-entropy loss"; the independent draws here are sentences, whose
  codelengths (tens of nats) truncated at 1 would be 1 for every probe and every n, so SDL
  with the Hoeffding interval and εSC would say nothing. The per-target truncation keeps the
  bound and the meaning (ε is then in nats per target, truncated at 1), and the uniform
  code's value of it, :attr:`StructuralCurve.first_block_truncated`, is the first block's
  cost for ``metric="loss_truncated"``. It does not sum to a codelength: use ``loss`` for
  MDL in nats, ``loss_truncated`` for SDL with ``delta`` (Hoeffding) and εSC.

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368

    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from probemeter._io import JsonResult
from probemeter._validation import check_scalar, one_of
from probemeter.curves import measures
from probemeter.curves.curve import LossDataCurve, default_sizes
from probemeter.data import nested_subset, subset_permutation
from probemeter.mdl.online import BITS_PER_NAT, block_ends
from probemeter.structural.family import HEADLINE, _metadata, _split
from probemeter.structural.scoring import (
    fitted_scale,
    predict_sentences,
    score,
    sentence_codelengths,
    sentence_truncated_losses,
    uniform_codelength,
    uniform_truncated_losses,
)
from probemeter.structural.training import (
    TARGETS,
    ProbeSpec,
    StructuralTraining,
    check_features,
    fit_structural_layers,
)
from probemeter.structural.trees import HOLDOUT, TreeData, holdout_split
from probemeter.training.config import config_or_default
from probemeter.training.probe_runs import Stopwatch

__all__ = [
    "CURVE_SCHEMA",
    "HOLDOUT",
    "STRUCTURAL_TIMESTEPS",
    "StructuralCurve",
    "StructuralOnlineCode",
    "holdout_split",
    "structural_curve",
    "structural_curves",
    "structural_online_code",
    "structural_online_codes",
]

#: block ends as fractions of the sentences: doubling blocks, as the paper's timesteps, but
#: starting at 1/64 so that a few hundred sentences fill every block
STRUCTURAL_TIMESTEPS = (1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
#: the schema of :meth:`StructuralCurve.to_dict`
CURVE_SCHEMA = "probemeter.structural-curve/2"


@dataclass(frozen=True)
class StructuralOnlineCode(JsonResult):
    """The online codelength of the trees' distances or depths under one representation.

    Attributes:
        name: the representation; target: ``"distance"`` or ``"depth"``; rank: the probes'.
        n: sentences transmitted; ends: the block ends t_1 < … < t_S = n.
        blocks: one row per (seed, block): ``seed, block, start, end``, ``train_size`` and
            ``heldout_size`` (the sentences of the prefix the block's probe trained on and
            fitted its scale on; 0 for the uniform first block), ``codelength`` (nats),
            ``uniform_codelength`` (nats, the same targets under the uniform code) and
            ``scale`` (NaN for the first block).
        metadata: training protocol, trees, timings, versions.
    """

    name: str
    target: str
    rank: int
    n: int
    ends: tuple[int, ...]
    blocks: pd.DataFrame = field(repr=False)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def per_seed(self) -> pd.DataFrame:
        """Per seed: ``online`` and ``uniform`` codelengths (nats) and their ratio
        ``compression``."""
        grouped = self.blocks.groupby("seed")
        table = pd.DataFrame(
            {"online": grouped["codelength"].sum(), "uniform": grouped["uniform_codelength"].sum()}
        )
        return table.assign(compression=table["uniform"] / table["online"])

    @property
    def codelength(self) -> float:
        """The online codelength in nats, the mean over seeds (data orders)."""
        return float(self.per_seed()["online"].mean())

    @property
    def codelength_bits(self) -> float:
        return self.codelength * BITS_PER_NAT

    @property
    def uniform_codelength(self) -> float:
        """The uniform code of all n sentences' targets, in nats (the same for every order)."""
        return float(self.per_seed()["uniform"].mean())

    @property
    def compression(self) -> float:
        """uniform / online codelength (Voita & Titov, §2.2)."""
        return self.uniform_codelength / self.codelength

    def to_frame(self) -> pd.DataFrame:
        """The per-block table with the representation, target and rank."""
        return self.blocks.assign(representation=self.name, target=self.target, rank=self.rank)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (nats); :meth:`from_dict` restores it."""
        return {
            "name": self.name,
            "target": self.target,
            "rank": self.rank,
            "unit": "nats",
            "n": self.n,
            "ends": list(self.ends),
            "blocks": {c: self.blocks[c].tolist() for c in self.blocks.columns},
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> StructuralOnlineCode:
        if payload.get("unit", "nats") != "nats":
            raise ValueError(f"codelengths must be stored in nats; got {payload['unit']!r}")
        return cls(
            name=payload["name"],
            target=payload["target"],
            rank=int(payload["rank"]),
            n=int(payload["n"]),
            ends=tuple(int(e) for e in payload["ends"]),
            blocks=pd.DataFrame(payload["blocks"]),
            metadata=payload.get("metadata", {}),
        )

    def plot(self, ax: Any = None, *, label: str | None = None) -> Any:
        """Nats per block against the block's end (log x), online and uniform. Returns the
        matplotlib axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        mean = self.blocks.groupby("end")[["codelength", "uniform_codelength"]].mean()
        line = ax.plot(mean.index, mean["codelength"], marker="o", label=label or self.name)
        ax.plot(mean.index, mean["uniform_codelength"], ls="--", color=line[0].get_color())
        ax.set_xscale("log")
        ax.set_xlabel("block end (sentences)")
        ax.set_ylabel("block codelength (nats)")
        return ax


def structural_online_code(
    features: object,
    trees: TreeData,
    target: str = "distance",
    *,
    rank: int = 32,
    timesteps: Sequence[float] = STRUCTURAL_TIMESTEPS,
    seeds: int = 1,
    sentences: Sequence[int] | None = None,
    config: StructuralTraining | None = None,
    name: str | None = None,
    holdout: float = HOLDOUT,
) -> StructuralOnlineCode:
    """The online codelength (nats) of the trees' distances or depths given the features
    (module docstring): per seed, one data order of ``sentences`` (default: all), the blocks of
    ``timesteps``, and every block probe of every seed trained at once. The probe of block
    i + 1 trains on the first t_i − v_i sentences and its scale is fitted on the next v_i
    (:func:`holdout_split` with ``holdout``), so block i + 1's own data never enters its model.

    Raises:
        ValueError: bad features, target, rank, seeds, holdout, or timesteps too fine for the
            number of sentences (:func:`probemeter.mdl.block_ends`: t_1 ≥ 2, so every block
            probe has a sentence to train on and one to hold out).
    """
    one_of(*TARGETS)(target, "target")
    [codes] = structural_online_codes(
        [features],
        trees,
        (target,),
        rank=rank,
        timesteps=timesteps,
        seeds=seeds,
        sentences=sentences,
        config=config,
        names=[name or "features"],
        holdout=holdout,
    )
    return codes[target]


def structural_online_codes(
    layers: Sequence[object],
    trees: TreeData,
    targets: Sequence[str] = TARGETS,
    *,
    rank: int = 32,
    timesteps: Sequence[float] = STRUCTURAL_TIMESTEPS,
    seeds: int = 1,
    sentences: Sequence[int] | None = None,
    config: StructuralTraining | None = None,
    names: Sequence[str] | None = None,
    holdout: float = HOLDOUT,
    n_jobs: int | None = 1,
) -> list[dict[str, StructuralOnlineCode]]:
    """Per layer, the online code (:func:`structural_online_code`) of each target, every block
    probe of every layer and target trained together in one stacked call
    (:func:`~probemeter.structural.training.fit_structural_layers`, as
    :func:`~probemeter.structural.family.structural_families` trains a family's): a block
    probe's data order, initial B and minibatches depend on its seed, rank and training
    sentences alone, so the probes of one block on every layer and for both targets share
    their minibatches. Each code's ``metadata["seconds"]["train"]`` is the time of that
    joint training.

    Args:
        layers: per layer, (n_words, d) per-word features, sentence after sentence as in
            ``trees``.
        trees, rank, timesteps, seeds, sentences, config, holdout: as
            :func:`structural_online_code`.
        targets: distinct probe kinds, ``"distance"`` and/or ``"depth"``.
        names: each layer's name for results (default ``"layer 0"``, ``"layer 1"``, …).
        n_jobs: worker processes sharing the training
            (:func:`~probemeter.structural.training.fit_structural_layers`); the results do
            not depend on it.

    Raises:
        ValueError: as :func:`structural_online_code`; no layers, bad or repeated targets,
            or names not one per layer.
    """
    targets = _checked_targets(targets)
    config = config_or_default(config, StructuralTraining())
    arrays, names = _checked_layers(layers, trees, names)
    check_scalar(rank, "rank", int, min_val=1)
    check_scalar(seeds, "seeds", int, min_val=1)
    pool = np.arange(trees.n_sentences) if sentences is None else np.asarray(sentences, np.int64)
    ends = block_ends(int(pool.size), timesteps)
    orders = {s: pool[subset_permutation(pool.size, config.random_state, s)] for s in range(seeds)}
    splits = {
        (s, int(end)): holdout_split(orders[s][:end], holdout)
        for s in range(seeds)
        for end in ends[:-1]
    }
    specs = [ProbeSpec(rank, s, train) for (s, _), (train, _) in splits.items()]
    with Stopwatch() as training:
        trained = fit_structural_layers(arrays, trees, targets, specs, config, n_jobs=n_jobs)
    plan = _OnlinePlan(
        rank, seeds, int(pool.size), ends, orders, splits, config, holdout, training.seconds
    )
    return [
        {
            target: _online_code(array, trees, target, layer[target], name, plan)
            for target in targets
        }
        for array, layer, name in zip(arrays, trained, names)
    ]


def _checked_targets(targets: Sequence[str]) -> tuple[str, ...]:
    """``targets`` as distinct probe kinds; a ValueError naming ``targets`` otherwise."""
    if isinstance(targets, str) or not targets or len(set(targets)) != len(targets):
        raise ValueError(
            f'targets must be distinct probe kinds ("distance", "depth"); got {targets!r}'
        )
    for target in targets:
        one_of(*TARGETS)(target, "target")
    return tuple(targets)


def _checked_layers(
    layers: Sequence[object], trees: TreeData, names: Sequence[str] | None
) -> tuple[list[np.ndarray], list[str]]:
    """Each layer's features checked (:func:`check_features`) and its name (default
    ``"layer 0"``, ``"layer 1"``, …)."""
    if not layers:
        raise ValueError("layers is empty; give at least one layer's features")
    arrays = [check_features(features, trees) for features in layers]
    names = [f"layer {number}" for number in range(len(arrays))] if names is None else names
    if len(names) != len(arrays):
        raise ValueError(f"names must name each of the {len(arrays)} layers; got {len(names)}")
    return arrays, list(names)


@dataclass(frozen=True)
class _OnlinePlan:
    """The blocks of an online code shared by every layer and target: per seed its data
    order and each block's (train, held-out) split, and the joint training's seconds."""

    rank: int
    seeds: int
    n: int
    ends: np.ndarray
    orders: dict[int, np.ndarray]
    splits: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]
    config: StructuralTraining
    holdout: float
    train_seconds: float


def _online_code(
    array: np.ndarray,
    trees: TreeData,
    target: str,
    projections: Sequence[np.ndarray],
    name: str,
    plan: _OnlinePlan,
) -> StructuralOnlineCode:
    """The online code of one layer and target from its block probes ``projections`` (one
    per split of ``plan``, in its order)."""
    seeds, ends, orders, splits = plan.seeds, plan.ends, plan.orders, plan.splits
    trained = dict(zip(splits, projections))
    rows = []
    with Stopwatch() as scoring:
        for s in range(seeds):
            uniform = uniform_codelength(trees, target, orders[s][: ends[0]])
            rows.append(_block_row(s, 0, (0, int(ends[0])), uniform, uniform, math.nan, (0, 0)))
            for block, (start, end) in enumerate(itertools.pairwise(ends), start=1):
                projection, (train, heldout) = trained[s, int(start)], splits[s, int(start)]
                scale = _heldout_scale(projection, array, trees, target, heldout)
                sent = predict_sentences(projection, array, trees, target, orders[s][start:end])
                nats = float(sentence_codelengths(sent, target, scale).sum())
                uniform = uniform_codelength(trees, target, orders[s][start:end])
                sizes = (int(train.size), int(heldout.size))
                rows.append(
                    _block_row(s, block, (int(start), int(end)), nats, uniform, scale, sizes)
                )
    seconds = {"train": plan.train_seconds, "score": scoring.seconds}
    return StructuralOnlineCode(
        name=name,
        target=target,
        rank=plan.rank,
        n=plan.n,
        ends=tuple(int(e) for e in ends),
        blocks=pd.DataFrame(rows),
        metadata=_metadata(trees, plan.config, seconds) | _scale_note(plan.holdout),
    )


def _scale_note(holdout: float) -> dict[str, Any]:
    """The metadata entry saying how the Laplace scales were fitted."""
    return {
        "scale": "fitted on the held-out last share of each probe's sentences",
        "holdout": holdout,
    }


def _heldout_scale(
    projection: np.ndarray, features: np.ndarray, trees: TreeData, target: str, heldout: np.ndarray
) -> float:
    """b: the Laplace scale of the probe fitted on its held-out sentences (module docstring)."""
    return fitted_scale(predict_sentences(projection, features, trees, target, heldout), target)


def _block_row(
    seed: int,
    block: int,
    span: tuple[int, int],
    nats: float,
    uniform: float,
    scale: float,
    sizes: tuple[int, int],
) -> dict[str, Any]:
    """One row of :attr:`StructuralOnlineCode.blocks`: the block's (start, end), and the
    (train, held-out) sizes of its probe's prefix ((0, 0) for the uniform block 0)."""
    return {
        "seed": seed,
        "block": block,
        "start": span[0],
        "end": span[1],
        "train_size": sizes[0],
        "heldout_size": sizes[1],
        "codelength": nats,
        "uniform_codelength": uniform,
        "scale": scale,
    }


@dataclass(frozen=True)
class StructuralCurve(JsonResult):
    """The loss-data curve of structural probes: per probe, the mean codelength of a test
    sentence's targets (nats) against the number n of training sentences.

    Attributes:
        target: ``"distance"`` or ``"depth"``; rank: the probes'.
        curve: the :class:`~probemeter.curves.LossDataCurve`: examples are sentences;
            ``loss`` is nats per test sentence, ``loss_truncated`` the mean over test
            sentences of each sentence's mean truncated loss per target, in [0, 1] (module
            docstring), ``accuracy`` the test UUAS (distance) or root accuracy (depth). Its
            ``n_classes`` is the largest support size of any target (the longest sentence's
            length): the curve measures' default uniform first block (ln K per example) does
            not apply to sentences, so give ``first_block`` (:meth:`measure` does).
        first_block: the per-sentence cost of the first block, nats: the mean uniform code of
            a pool sentence's targets.
        first_block_truncated: the first block's cost for ``metric="loss_truncated"``: the
            mean over pool sentences of the uniform code's truncated loss per target,
            min(ln(support size), 1) averaged over the sentence's targets.
    """

    target: str
    rank: int
    curve: LossDataCurve
    first_block: float
    first_block_truncated: float

    def measure(self, name: str, *args: Any, **kwargs: Any) -> measures.MeasureResult:
        """A curve measure of :mod:`probemeter.curves.measures` on this curve, with this
        curve's first block where the measure takes one (``first_block`` for ``metric="loss"``,
        ``first_block_truncated`` for ``"loss_truncated"``): ``measure("description_length")``,
        ``measure("sdl", epsilon, metric="loss_truncated", delta=0.05)``,
        ``measure("sample_complexity", epsilon, metric="loss_truncated")``.

        Raises:
            ValueError: an unknown measure, or ``metric="error"`` for a measure with a first
                block and none given (no uniform UUAS or root accuracy is defined here).
        """
        allowed = ("description_length", "sdl", "sample_complexity", "validation_performance")
        one_of(*allowed)(name, "name")
        if name in ("description_length", "sdl") and "first_block" not in kwargs:
            metric = kwargs.get("metric", "loss")
            if metric == "error":
                raise ValueError(
                    "first_block: give the first block's error rate for metric='error' (the "
                    "curve defines none for UUAS or root accuracy)"
                )
            truncated = metric == "loss_truncated"
            kwargs["first_block"] = self.first_block_truncated if truncated else self.first_block
        metric = kwargs.get("metric", "loss")
        if name in ("sdl", "sample_complexity") and metric != "error":
            # ε is bounded by the sentences' own uniform code, not by ln K of one target
            uniform = self.first_block_truncated if metric == "loss_truncated" else self.first_block
            scale = math.log(2) if kwargs.get("unit", "nats") == "bits" else 1.0
            kwargs.setdefault("uniform_loss", uniform / scale)
        return getattr(measures, name)(self.curve, *args, **kwargs)

    def to_frame(self) -> pd.DataFrame:
        return self.curve.to_frame().assign(target=self.target, rank=self.rank)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": CURVE_SCHEMA,
            "target": self.target,
            "rank": self.rank,
            "first_block": self.first_block,
            "first_block_truncated": self.first_block_truncated,
            "curve": self.curve.to_dict(),
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> StructuralCurve:
        """The curve of :meth:`to_dict`.

        Raises:
            ValueError: a curve stored by an older version, whose ``loss_truncated`` was
                min(nats per sentence, 1), i.e. 1 throughout.
        """
        if payload.get("schema") != CURVE_SCHEMA:
            raise ValueError(
                f"a structural curve of schema {payload.get('schema')!r}, not {CURVE_SCHEMA!r}: "
                "stored by an older version, whose loss_truncated was min(nats per sentence, "
                "1), i.e. 1 for every probe; compute it again"
            )
        return cls(
            target=payload["target"],
            rank=int(payload["rank"]),
            curve=LossDataCurve.from_dict(payload["curve"]),
            first_block=float(payload["first_block"]),
            first_block_truncated=float(payload["first_block_truncated"]),
        )

    def plot(self, ax: Any = None, **kwargs: Any) -> Any:
        """The curve's plot (:meth:`LossDataCurve.plot`), its y axis in nats per sentence."""
        ax = self.curve.plot(ax, **kwargs)
        ax.set_xlabel("training sentences n")
        ax.set_ylabel("test codelength (nats per sentence)")
        return ax


def structural_curve(
    features: object,
    trees: TreeData,
    target: str = "distance",
    *,
    rank: int = 32,
    sizes: Sequence[int] | None = None,
    seeds: int = 2,
    test_size: float = 0.2,
    split: tuple[Sequence[int], Sequence[int]] | None = None,
    config: StructuralTraining | None = None,
    name: str | None = None,
    holdout: float = HOLDOUT,
) -> StructuralCurve:
    """The loss-data curve of rank-``rank`` structural probes (module docstring): for each
    size n ≥ 2 (default :func:`probemeter.curves.default_sizes` of the pool's sentences) and
    seed, the seed's nested subset of n pool sentences split by :func:`holdout_split` with
    ``holdout``: a probe trained on the first part, its scale fitted on the held-out part,
    scored on the test sentences. All probes are trained at once.

    Raises:
        ValueError: bad features, target, rank, seeds, sizes (each at least 2), holdout or
            split.
    """
    one_of(*TARGETS)(target, "target")
    [curves] = structural_curves(
        [features],
        trees,
        (target,),
        rank=rank,
        sizes=sizes,
        seeds=seeds,
        test_size=test_size,
        split=split,
        config=config,
        names=[name or "features"],
        holdout=holdout,
    )
    return curves[target]


def structural_curves(
    layers: Sequence[object],
    trees: TreeData,
    targets: Sequence[str] = TARGETS,
    *,
    rank: int = 32,
    sizes: Sequence[int] | None = None,
    seeds: int = 2,
    test_size: float = 0.2,
    split: tuple[Sequence[int], Sequence[int]] | None = None,
    config: StructuralTraining | None = None,
    names: Sequence[str] | None = None,
    holdout: float = HOLDOUT,
    n_jobs: int | None = 1,
) -> list[dict[str, StructuralCurve]]:
    """Per layer, the loss-data curve (:func:`structural_curve`) of each target, every probe
    of every size, seed, layer and target trained together in one stacked call
    (:func:`~probemeter.structural.training.fit_structural_layers`, as
    :func:`~probemeter.structural.family.structural_families` trains a family's): the probes
    of one (size, seed) on every layer and for both targets share their minibatches. Each
    curve's ``metadata["seconds"]["train"]`` is the time of that joint training.

    Args:
        layers: per layer, (n_words, d) per-word features, sentence after sentence as in
            ``trees``.
        trees, rank, sizes, seeds, test_size, split, config, holdout: as
            :func:`structural_curve`.
        targets: distinct probe kinds, ``"distance"`` and/or ``"depth"``.
        names: each layer's name for results (default ``"layer 0"``, ``"layer 1"``, …).
        n_jobs: worker processes sharing the training
            (:func:`~probemeter.structural.training.fit_structural_layers`); the results do
            not depend on it.

    Raises:
        ValueError: as :func:`structural_curve`; no layers, bad or repeated targets, or
            names not one per layer.
    """
    targets = _checked_targets(targets)
    config = config_or_default(config, StructuralTraining())
    arrays, names = _checked_layers(layers, trees, names)
    check_scalar(rank, "rank", int, min_val=1)
    check_scalar(seeds, "seeds", int, min_val=1)
    pool, test = _split(trees, test_size, split, config.random_state)
    sizes = default_sizes(int(pool.size), smallest=2) if sizes is None else np.asarray(sizes)
    if sizes.size == 0 or sizes.min() < 2 or np.unique(sizes).size != sizes.size:
        raise ValueError(
            f"sizes must be distinct numbers of sentences, each at least 2 (a probe trains on "
            f"some and fits its scale on the others held out); got {sizes.tolist()}"
        )
    splits = {
        (int(n), s): holdout_split(
            pool[nested_subset(pool.size, int(n), config.random_state, s)], holdout
        )
        for n in sizes
        for s in range(seeds)
    }
    specs = [ProbeSpec(rank, s, train) for (_, s), (train, _) in splits.items()]
    with Stopwatch() as training:
        trained = fit_structural_layers(arrays, trees, targets, specs, config, n_jobs=n_jobs)
    plan = _CurvePlan(rank, pool, test, splits, config, holdout, training.seconds)
    return [
        {target: _curve(array, trees, target, layer[target], name, plan) for target in targets}
        for array, layer, name in zip(arrays, trained, names)
    ]


@dataclass(frozen=True)
class _CurvePlan:
    """The probes of a loss-data curve shared by every layer and target: the pool and test
    sentences, each (size, seed)'s (train, held-out) split, and the joint training's
    seconds."""

    rank: int
    pool: np.ndarray
    test: np.ndarray
    splits: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]
    config: StructuralTraining
    holdout: float
    train_seconds: float


def _curve(
    array: np.ndarray,
    trees: TreeData,
    target: str,
    projections: Sequence[np.ndarray],
    name: str,
    plan: _CurvePlan,
) -> StructuralCurve:
    """The curve of one layer and target from its probes ``projections`` (one per split of
    ``plan``, in its order)."""
    rank, pool, test, config, holdout = plan.rank, plan.pool, plan.test, plan.config, plan.holdout
    rows = []
    with Stopwatch() as scoring:
        for ((n, seed), (_, heldout)), projection in zip(plan.splits.items(), projections):
            scale = _heldout_scale(projection, array, trees, target, heldout)
            predicted = predict_sentences(projection, array, trees, target, test)
            tested = score(predicted, trees, target, scale)
            truncated = sentence_truncated_losses(predicted, target, scale)
            rows.append(
                {
                    "n": n,
                    "seed": seed,
                    "loss": float(tested.codelength) / test.size,
                    "loss_truncated": float(truncated.mean()),
                    "accuracy": getattr(tested, HEADLINE[target]),
                }
            )
    pool_uniform = uniform_codelength(trees, target, pool)
    metadata = _metadata(trees, config, {"train": plan.train_seconds, "score": scoring.seconds})
    curve = LossDataCurve(
        name=name,
        points=pd.DataFrame(rows),
        n_classes=int(trees.lengths.max()),
        pool_size=int(pool.size),
        n_test=int(test.size),
        metadata={
            **metadata,
            **_scale_note(holdout),
            "loss": "nats per test sentence",
            "loss_truncated": "per test sentence, the mean over its targets of min(nats, 1)",
            "rank": rank,
        },
    )
    truncated_uniform = float(uniform_truncated_losses(trees, target, pool).mean())
    return StructuralCurve(target, rank, curve, pool_uniform / pool.size, truncated_uniform)
