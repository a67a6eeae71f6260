"""k-sparse probes (Gurnee et al. 2023): probes restricted to the k top-ranked features for
k = 1, 2, 4, …, a loss-data curve (Whitney et al. 2020) and optionally an online code (Voita &
Titov 2020) per k, the complexity–accuracy frontier over k (Pimentel et al. 2020, with k as the
complexity), and the knee: the fewest features that do as well as any k on the development
split.

The ranking sees only the rows the probes train on (the pool less the development split), so
neither the knee, chosen on the development split, nor the test figures are biased by the
selection of features.

References:
    Gurnee, W., Nanda, N., Pauly, M., Harvey, K., Troitskii, D. & Bertsimas, D. (2023).
    Finding Neurons in a Haystack: Case Studies with Sparse Probing. *Transactions on Machine
    Learning Research*. arXiv:2305.01610

    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020).
    Evaluating representations by the complexity of learning low-loss predictors.
    arXiv:2009.07368

    Voita, E. & Titov, I. (2020). Information-Theoretic Probing with Minimum Description
    Length. *EMNLP 2020*. arXiv:2003.12298

    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto Probing: Trading Off
    Accuracy for Complexity. *EMNLP 2020*. arXiv:2010.02180
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from probemeter._execution import Execution, execution_of
from probemeter._validation import check_scalar, integer_list, one_of
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.defaults import CURVE_DEV_FRACTION, CURVE_SEEDS
from probemeter.curves.measures import check_epsilon, sample_complexity, sdl
from probemeter.data import ProbeData, check_probe_data, check_single_label
from probemeter.mdl.defaults import PAPER_TIMESTEPS
from probemeter.mdl.online import OnlineCode, online_codelength
from probemeter.pareto.frontiers import pareto_frontier
from probemeter.probes import MLP, Linear
from probemeter.sparse_probing.ranking import L1_GRID, RANKINGS, rank_features
from probemeter.training.config import TrainingConfig
from probemeter.training.probe_runs import held_out_split

__all__ = ["KNEE_TOLERANCE", "KSparseResult", "default_ks", "k_sparse_probes", "plot_k_sparse"]

#: how far below the best development accuracy over k the knee may be
KNEE_TOLERANCE = 0.01
#: the splits a frontier or figure is drawn on
SPLITS = ("test", "dev")


def default_ks(n_features: int) -> tuple[int, ...]:
    """1, 2, 4, … up to ``n_features`` (Gurnee et al.'s powers of two), and ``n_features``
    itself, the unrestricted probe."""
    check_scalar(n_features, "n_features", int, min_val=1)
    powers = [2**i for i in range(int(np.log2(n_features)) + 1)]
    return tuple(sorted(set(powers) | {n_features}))


@dataclass(frozen=True)
class KSparseResult:
    """k-sparse probes of one representation: a loss-data curve (and an online code) per k.

    Attributes:
        name: the representation's name.
        ranking: how the features were ranked (``"mean-difference"`` or ``"l1"``).
        order: the features of the largest k, best first (the top k of any k are its first k).
        ks: the k probed, increasing.
        curves: per k, the loss-data curve of probes on the top k features, with a development
            split.
        knee: the smallest k whose development accuracy (at the largest training size, mean
            over seeds) is within ``tolerance`` of the best over k.
        online: per k, the online code, when asked for; else None.
        epsilon: the ε (nats) of the SDL and εSC columns, or None.
        tolerance: the knee's tolerance on development accuracy.
        chosen_on: where the knee was chosen: ``"dev"``, the development split, never the
            test set.
        tested_on: where the knee (and every k) was tested: ``"test"``, the test set, which
            neither the ranking nor the choice of the knee read.
    """

    name: str
    ranking: str
    order: tuple[int, ...]
    ks: tuple[int, ...]
    curves: dict[int, LossDataCurve] = field(repr=False)
    knee: int
    online: dict[int, OnlineCode] | None = field(default=None, repr=False)
    epsilon: float | None = None
    tolerance: float = KNEE_TOLERANCE
    chosen_on: str = "dev"
    tested_on: str = "test"

    def features(self, k: int) -> tuple[int, ...]:
        """The k features probed at ``k``, best first."""
        one_of(*self.ks)(k, "k")
        return self.order[:k]

    def to_frame(self) -> pd.DataFrame:
        """One row per k: ``k``, ``features`` (best first), ``test_loss`` and ``test_accuracy``
        of the probes trained on the largest size (mean over seeds), ``dev_loss`` and
        ``dev_accuracy`` of the same probes on the development split; with ``epsilon``,
        ``sdl`` and ``sample_complexity`` (nats, examples) and whether each is a lower bound;
        with online codes, ``online_bits`` and ``compression``."""
        rows = []
        for k in self.ks:
            curve = self.curves[k]
            development = curve.development_curve()
            row: dict[str, Any] = {
                "k": k,
                "features": self.features(k),
                "test_loss": float(curve.mean("loss").iloc[-1]),
                "test_accuracy": float(curve.mean("accuracy").iloc[-1]),
                "dev_loss": float(development.mean("loss").iloc[-1]),
                "dev_accuracy": float(development.mean("accuracy").iloc[-1]),
            }
            if self.epsilon is not None:
                surplus = sdl(curve, self.epsilon)
                needed = sample_complexity(curve, self.epsilon)
                row |= {
                    "sdl": surplus.value,
                    "sdl_lower_bound": surplus.lower_bound,
                    "sample_complexity": needed.value,
                    "sample_complexity_lower_bound": needed.lower_bound,
                }
            if self.online is not None:
                code = self.online[k]
                row |= {"online_bits": code.codelength_bits, "compression": code.compression}
            rows.append(row)
        return pd.DataFrame(rows)

    def frontier(self, split: str = "test") -> pd.DataFrame:
        """The complexity–accuracy Pareto frontier over k (Pimentel et al. 2020, §3, with the
        number of features k as the complexity): the rows of :meth:`to_frame` that no other k
        beats with as few features and higher accuracy on ``split`` (``"test"`` or
        ``"dev"``), by increasing k (:func:`~probemeter.pareto.frontiers.pareto_frontier`)."""
        one_of(*SPLITS)(split, "split")
        frame = self.to_frame()
        kept = pareto_frontier(frame["k"], frame[f"{split}_accuracy"])
        return frame.iloc[kept].reset_index(drop=True)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary: the fields, the table of :meth:`to_frame` and every curve
        (and online code) as its own ``to_dict``."""
        frame = self.to_frame().assign(features=lambda table: table["features"].map(list))
        return {
            "name": self.name,
            "ranking": self.ranking,
            "order": list(self.order),
            "ks": list(self.ks),
            "epsilon": self.epsilon,
            "tolerance": self.tolerance,
            "knee": self.knee,
            "chosen_on": self.chosen_on,
            "tested_on": self.tested_on,
            "table": frame.to_dict(orient="records"),
            "curves": {str(k): curve.to_dict() for k, curve in self.curves.items()},
            "online": None
            if self.online is None
            else {str(k): code.to_dict() for k, code in self.online.items()},
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> KSparseResult:
        """The result of :meth:`to_dict` (its table is recomputed from the curves)."""
        online = payload.get("online")
        return cls(
            name=payload["name"],
            ranking=payload["ranking"],
            order=tuple(int(feature) for feature in payload["order"]),
            ks=tuple(int(k) for k in payload["ks"]),
            curves={
                int(k): LossDataCurve.from_dict(curve) for k, curve in payload["curves"].items()
            },
            knee=int(payload["knee"]),
            online=None
            if online is None
            else {int(k): OnlineCode.from_dict(code) for k, code in online.items()},
            epsilon=payload["epsilon"],
            tolerance=payload["tolerance"],
            chosen_on=payload["chosen_on"],
            tested_on=payload["tested_on"],
        )

    def plot(self, axes: Sequence[Any] | None = None) -> Any:
        """Accuracy and loss against k (log₂ axis), on the test set and the development split,
        the knee marked; returns the two matplotlib axes (:func:`plot_k_sparse`)."""
        axes = plot_k_sparse([self], axes)
        axes[0].set_title(self.name)
        return axes


def plot_k_sparse(results: Sequence[KSparseResult], axes: Sequence[Any] | None = None) -> Any:
    """Accuracy and loss against k (log₂ axis) of each result, on the test set (solid) and the
    development split (dashed), a colour per representation
    (:func:`~probemeter._figures.representation_colours`), each knee a dotted vertical line
    in its colour; returns the two matplotlib axes."""
    import matplotlib.pyplot as plt

    from probemeter._figures import representation_colours

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    colours = representation_colours([result.name for result in results])
    single = len(results) == 1
    for result in results:
        frame = result.to_frame()
        colour = colours[result.name]
        for ax, metric in zip(axes, ("accuracy", "loss")):
            for split, style in zip(SPLITS, ("-", "--")):
                label = split if single else f"{result.name} ({split})"
                ax.plot(frame["k"], frame[f"{split}_{metric}"], style, marker="o", ms=3,
                        color=colour, label=label)  # fmt: skip
            knee = f"knee, k = {result.knee}" if single else f"{result.name} knee"
            ax.axvline(result.knee, color=colour, lw=1, ls=":", label=knee)
    rankings = sorted({result.ranking for result in results})
    for ax, label in zip(axes, ("accuracy", "loss (nats)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"features k ({', '.join(rankings)} ranking)")
        ax.set_ylabel(label)
    axes[0].legend(frameon=False, fontsize="small" if single else "x-small")
    return axes


def k_sparse_probes(
    data: ProbeData,
    ks: Sequence[int] | None = None,
    *,
    ranking: str = "mean-difference",
    probe: MLP | None = None,
    sizes: Sequence[int] | np.ndarray | None = None,
    seeds: int | Sequence[int] = CURVE_SEEDS,
    config: TrainingConfig | None = None,
    epsilon: float | None = None,
    online: bool = False,
    timesteps: Sequence[float] = PAPER_TIMESTEPS,
    online_config: TrainingConfig | None = None,
    tolerance: float = KNEE_TOLERANCE,
    dev_fraction: float = CURVE_DEV_FRACTION,
    l1_grid: int = L1_GRID,
    random_state: int = 0,
    execution: Execution | None = None,
    **old: Any,
) -> KSparseResult:
    """k-sparse probes of ``data`` (Gurnee et al. 2023): for each k, probes on the k features
    ranked first, measured by a loss-data curve and optionally the online code; the knee is
    chosen on the development split.

    The features are ranked (:func:`~probemeter.sparse_probing.ranking.rank_features`) on the
    pool rows the probes train on: the pool less the development split that
    :func:`~probemeter.curves.curve.loss_data_curve` holds out with the same ``dev_fraction``
    and ``random_state`` (never the test set). For each k, the data restricted to the top k
    columns (sparse features stay sparse) get a loss-data curve with that development split
    and, with ``online``, an online code (:func:`~probemeter.mdl.online.online_codelength`).
    The knee is the smallest k whose development accuracy, at the largest training size and
    averaged over seeds, is at least max_k dev_acc(k) − ``tolerance``.

    Args:
        data: features and labels, one class per example; dense or sparse (SAE latents).
        ks: the numbers of features, distinct positive integers ≤ ``data.n_features``;
            default :func:`default_ks` (1, 2, 4, … and all features).
        ranking: ``"mean-difference"`` or ``"l1"`` (:func:`rank_features`).
        probe: the probe on k features; default linear (Gurnee et al.'s probes are linear).
        sizes, seeds: the curves' training sizes (default: the curve's log-uniform sizes) and
            seeds (default 4, the ``curve`` method's).
        config: how every probe trains (curves and online codes); default each function's own
            (:func:`loss_data_curve`, :func:`online_codelength`).
        epsilon: an ε in nats for the SDL and εSC columns of :meth:`KSparseResult.to_frame`.
        online: also measure the online code per k.
        timesteps: the online code's block ends, fractions of the pool (default: Voita &
            Titov's, footnote 4).
        online_config: how the online codes' probes train, when not as ``config`` says (the
            ``k-sparse`` method of experiment files trains its curves and its codes each by
            its own protocol, as the ``curve`` and ``mdl`` methods do).
        tolerance: the knee's tolerance on development accuracy, in [0, 1) (default 0.01).
        dev_fraction: the development split's share of the pool, in (0, 1) (default 0.1).
        l1_grid: the L1 path's number of C values (``ranking="l1"``).
        random_state: global seed of the split, the curves, the codes and the L1 path.
        execution: as in :func:`loss_data_curve`.

    Raises:
        ValueError: naming the argument: ``data`` not a ProbeData, with label sets or with a
            column layout (``mix_layers``, ``span_tokens``) that a column subset breaks; ``ks``
            not distinct positive integers ≤ the number of features; an unknown ``ranking``;
            ``tolerance`` or ``dev_fraction`` out of range, an ``epsilon`` that is not a
            number in (0, log K) nats; or anything
            :func:`loss_data_curve` refuses.
    """
    execution = execution_of(execution, old, "k_sparse_probes")
    check_single_label(check_probe_data(data, sparse=True), "k_sparse_probes")
    for layout in ("mix_layers", "span_tokens"):
        if getattr(data, layout) is not None:
            raise ValueError(
                f"data ({data.name!r}) has {layout}: its columns are laid out by layer or "
                "span token, which a subset of single columns breaks"
            )
    ks = _check_ks(default_ks(data.n_features) if ks is None else ks, data.n_features)
    one_of(*RANKINGS)(ranking, "ranking")
    check_scalar(tolerance, "tolerance", float, min_val=0, max_val=1, include_boundaries="left")
    check_scalar(
        dev_fraction, "dev_fraction", float, min_val=0, max_val=1, include_boundaries="neither"
    )
    check_scalar(random_state, "random_state", int, min_val=0)
    if epsilon is not None:
        epsilon = check_epsilon(epsilon, data.n_classes)
    probe = Linear() if probe is None else probe
    train_rows, _ = held_out_split(data.pool_size, dev_fraction, random_state, data.clusters_train)
    order = rank_features(
        data, ranking, rows=train_rows, l1_grid=l1_grid, n_top=ks[-1],
        random_state=random_state, n_jobs=execution.n_jobs,
    )[: ks[-1]]  # fmt: skip
    shared = {"random_state": random_state, "config": config}
    quiet = replace(execution, progress=False)  # a progress bar per k: the curve's
    curves, codes = {}, {}
    for k in ks:
        subset = _columns(data, order[:k], f"{data.name} top-{k}")
        curves[k] = loss_data_curve(
            subset, probe, sizes, seeds, execution=execution, dev_fraction=dev_fraction, **shared
        )
        if online:
            coding = shared | {"config": config if online_config is None else online_config}
            codes[k] = online_codelength(subset, probe, timesteps, seeds, execution=quiet, **coding)
    development = [float(curves[k].development_curve().mean("accuracy").iloc[-1]) for k in ks]
    best = max(development)
    knee = next(k for k, accuracy in zip(ks, development) if accuracy >= best - tolerance)
    return KSparseResult(
        name=data.name,
        ranking=ranking,
        order=tuple(int(feature) for feature in order),
        ks=ks,
        curves=curves,
        online=codes if online else None,
        epsilon=epsilon,
        tolerance=tolerance,
        knee=knee,
    )


def _check_ks(ks: object, n_features: int) -> tuple[int, ...]:
    """``ks`` as increasing ints, or a ValueError naming ``ks``."""
    values = list(ks) if isinstance(ks, (list, tuple, range, np.ndarray)) else ks
    if isinstance(values, list):
        values = [int(k) if isinstance(k, np.integer) else k for k in values]
    integer_list(1, distinct=True, non_empty=True)(values, "ks")
    if max(values) > n_features:
        raise ValueError(f"ks must be at most the number of features, {n_features}; got {ks!r}")
    return tuple(sorted(values))


def _columns(data: ProbeData, columns: np.ndarray, name: str) -> ProbeData:
    """``data`` with only ``columns`` (in increasing order) of its features, its split, labels,
    groups and clusters kept; a CSR matrix stays CSR."""
    kept = np.sort(columns)

    def subset(X: Any) -> Any:
        part = X[:, kept]
        return part if data.is_sparse else np.ascontiguousarray(part)

    return replace(
        data,
        X_train=subset(data.X_train),
        X_test=subset(data.X_test),
        name=name,
        shifted=tuple(replace(shifted, X=subset(shifted.X)) for shifted in data.shifted),
    )
