"""Online (prequential) description length of labels given representations (Voita & Titov 2020).

§2.2.2, eq. 4: with timesteps ``1 = t_0 < t_1 < ... < t_S = n``, the first block ``y_{1:t_1}``
is sent with the uniform code (``t_1 · log2 K`` bits); then, for i = 1..S-1, a probe trained on
the first ``t_i`` examples encodes the block ``y_{t_i+1 : t_{i+1}}`` at its cross-entropy::

    L_online = t_1 log2 K − Σ_{i=1}^{S-1} log2 p_{θ_i}(y_{t_i+1 : t_{i+1}} | x_{t_i+1 : t_{i+1}}).

Compression is ``n log2 K / L_online`` (§2.1). §2.3 splits the code: the *data* code is the
cross-entropy of the probe trained on all n examples, ``−Σ_j log2 p_{θ_S}(y_j | x_j)``, and the
*model* code is the rest, ``L_online − data``. The order in which data are sent is a seeded
permutation of the transmitted examples; several seeds give the mean and spread of Fig. 2d.

Early stopping of the block probes (``stopping_set``). §3.1 trains every probe with the protocol
of Hewitt & Liang (2019): the learning rate is annealed and training stopped by the loss "on the
development set" — the Penn Treebank development split (Table 1: 40 117 targets), which is not
part of the 950 028 transmitted training targets, and is the same for every block probe
(footnote 6: "the development set is used for stopping criteria"). ``stopping_set="dev"`` (the
default) does the same with the pool: a seeded ``dev_fraction`` share of it (the training
config's, 0.1 by default; keyed by ``random_state`` only, so the same for every seed and block)
is held out once, is never transmitted, and every probe trains on its whole prefix and stops on
that shared development set; n is then the rest of the pool. Like the paper's, this development
set is side information both Alice and Bob hold: its labels are not counted in the codelength.
``stopping_set="prefix"`` keeps everything inside the code: each block probe stops on a seeded
``dev_fraction`` of its own prefix ``1..t_i`` (what the receiver already has) and trains on the
rest, and the whole pool is transmitted. With fixed-steps training (no early stopping) there is
no stopping set (recorded as ``"none"``) and the whole pool is transmitted.

Label sets (multi-label targets: ``ProbeData.multilabel``, e.g. edge-probing targets with
several labels, Tenney et al. 2019). The probes have K sigmoid outputs trained with binary
cross-entropy per label, so a target's label set is sent as K independent Bernoulli codes and
its codelength is their sum, ``−Σ_k log2 p_θ(y_k | x)`` bits; the first block is sent with the
uniform code of K fair coins, ``t_1 · K`` bits, and compression is ``n·K / L_online``. The
blocks' and the full-data probe's ``accuracy`` is the exact-set-match rate (an example is
correct when its whole set is predicted; McNemar's test pairs that); ``micro_f1`` (blocks and
seeds) and ``macro_f1`` (seeds) are added; a block's ``bits_per_label`` is per example, the
code of its whole label set.

Units: codes are in bits; tables and printouts give kbits, 1024 bits each
(:data:`BITS_PER_KBIT`), as the paper's tables do — n·log2 K ÷ (compression × codelength) over
the cells of its Tables 2 and 6 is 1021–1025, not 1000.

All block probes (S−1 per seed) and the full-data probe of every seed are trained at once by
:func:`probemeter.training.engine.fit_evaluate`; each block's probe is scored example by
example on the block it transmits next only (``pool_rows``; the full-data probe on every
transmitted example, for the data part of the split, and on the test set), and the next
block's cross-entropies are summed. The engine works in nats; they are
converted to bits once, here, and every result field names its unit.

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description
    length. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Blier, L. & Ollivier, Y. (2018). The description length of deep learning models.
    *NeurIPS 2018*. arXiv:1802.07044
    Tenney, I., Xia, P., Chen, B., Wang, A., Poliak, A., McCoy, R. T., Kim, N., Van Durme, B.,
    Bowman, S. R., Das, D. & Pavlick, E. (2019). What do you learn from context? Probing for
    sentence structure in contextualized word representations. *ICLR 2019*. arXiv:1905.06316
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from probemeter._execution import Execution, execution_of
from probemeter._io import JsonResult, classes_from_json, classes_to_json
from probemeter._multilabel import f1_scores, label_counts
from probemeter._summary import SeedCorrectness
from probemeter._validation import check_scalar, one_of
from probemeter.data import ProbeData, check_probe_data, subset_permutation
from probemeter.mdl.defaults import (
    MDL_PROBE,
    ONLINE_SEEDS,
    ONLINE_STOPPING_SET,
    PAPER_TIMESTEPS,
    PAPER_TRAINING,
)
from probemeter.probes import MLP
from probemeter.probes.saved import ProbeSet
from probemeter.training.config import TrainingConfig, config_or_default
from probemeter.training.engine import ProbeEvaluation, fit_evaluate
from probemeter.training.probe_runs import (
    Stopwatch,
    held_out_count,
    kept_spans,
    learned_mix,
    run_metadata,
    seed_grid,
)

__all__ = [
    "BITS_PER_KBIT",
    "BITS_PER_NAT",
    "PAPER_TIMESTEPS",
    "STOPPING_SETS",
    "OnlineCode",
    "SeedResults",
    "block_ends",
    "development_size",
    "development_split",
    "online_codelength",
    "online_codelengths",
    "paper_training",
    "transmitted_size",
    "uniform_codelength",
]

#: one nat is 1/ln 2 bits
BITS_PER_NAT = 1.0 / math.log(2.0)

#: one kbit of Voita & Titov's tables is 1024 bits: n·log2 K ÷ (compression × codelength in
#: kbits) over the cells of their Tables 2 and 6 has per-task medians of 1021–1025 (e.g. Table 2,
#: LAYER 2, control task, online code: 950 028·log2 45 ÷ (7.11 × 717) = 1023.4)
BITS_PER_KBIT = 1024

#: where online-code block probes early-stop (§3.1): ``"dev"``, a development set held out of
#: the pool and not transmitted (the paper's protocol), or ``"prefix"``, a share of each probe's
#: own prefix of the transmitted data
STOPPING_SETS = ("dev", "prefix")

#: the random stream of the held-out development split (keyed with ``random_state``)
_DEV_STREAM = 0xDE7

#: :func:`online_codelength`'s default probe, the ``mdl`` method's, built once (an MLP is a
#: frozen value)
_PROBE = MLP(MDL_PROBE)


def uniform_codelength(n: int, n_classes: int, multilabel: bool = False) -> float:
    """``n · log2 K`` bits: the labels sent without looking at the data (§2.1); for label
    sets (``multilabel``), ``n · K`` bits, one fair coin per label and example."""
    return float(n) * (n_classes if multilabel else math.log2(n_classes))


def paper_training(**overrides: Any) -> TrainingConfig:
    """The training protocol of §3.1, :data:`~probemeter.mdl.defaults.PAPER_TRAINING` (Adam with
    lr 1e-3, per-probe early stopping on a dev split, lr ×0.5 after an epoch without a new dev
    minimum, stop after 4 such epochs in a row or 100 epochs; minibatches of 64), the online
    codes' default. Keyword arguments override settings (e.g. ``batch_size``, ``max_epochs``)."""
    return replace(PAPER_TRAINING, **overrides)


def block_ends(n: int, timesteps: Sequence[float] = PAPER_TIMESTEPS) -> np.ndarray:
    """The block boundaries ``t_1 < ... < t_S = n`` as integers: ``round(t · n)``.

    Eq. 4 (§2.2.2) asks only ``1 = t_0 < t_1 < ... < t_S = n``: the first block ``y_{1:t_1}`` is
    sent with the uniform code, which costs ``t_1 · log2 K`` bits whatever ``t_1`` is, so a
    first block smaller than the number of classes K is allowed (with the paper's timesteps,
    K = 45 and n = 10 000 it holds 10 examples).

    Raises:
        ValueError: ``timesteps`` empty, not strictly increasing, outside (0, 1], or not ending
            at 1; two timesteps rounding to the same count (n too small for them); or a first
            block of fewer than 2 examples (eq. 4's ``t_0 = 1 < t_1``: the first block probe
            needs data to train on).
    """
    fractions = np.asarray(timesteps, dtype=np.float64)
    if fractions.ndim != 1 or fractions.size == 0:
        raise ValueError(f"timesteps must be a non-empty 1-D sequence; got {timesteps!r}")
    if not np.all(np.isfinite(fractions)) or fractions.min() <= 0 or fractions.max() > 1:
        raise ValueError(f"timesteps must lie in (0, 1]; got {fractions.tolist()}")
    if np.any(np.diff(fractions) <= 0):
        raise ValueError(f"timesteps must be strictly increasing; got {fractions.tolist()}")
    if fractions[-1] != 1.0:
        raise ValueError(
            f"timesteps must end at 1.0 (the whole dataset is sent); got {fractions[-1]}"
        )
    ends = np.round(fractions * n).astype(np.int64)
    if np.any(np.diff(ends) <= 0):
        raise ValueError(
            f"timesteps {fractions.tolist()} give block ends {ends.tolist()} for n={n}: two "
            "blocks would be empty; use fewer timesteps or more data"
        )
    if ends[0] < 2:
        raise ValueError(
            f"the first block holds {ends[0]} example(s) (timesteps[0]={fractions[0]} of n={n}); "
            "eq. 4 needs 1 = t_0 < t_1, at least 2 examples; raise timesteps[0] or use more data"
        )
    return ends


def development_size(pool_size: int, dev_fraction: float) -> int:
    """Examples held out of a pool of ``pool_size`` as the development set of
    ``stopping_set="dev"``: ``round(dev_fraction · pool_size)``, at least 1 and leaving at least
    1 to transmit (the rule of the engine's per-probe split,
    :func:`probemeter.training.early_stopping.dev_split`).

    Raises:
        ValueError: a pool of fewer than 2 examples, or ``dev_fraction`` outside (0, 1).
    """
    check_scalar(pool_size, "pool_size", int, min_val=2)
    check_scalar(
        dev_fraction, "dev_fraction", float, min_val=0, max_val=1, include_boundaries="neither"
    )
    return held_out_count(pool_size, dev_fraction)


def development_split(
    pool_size: int, dev_fraction: float, random_state: int
) -> tuple[np.ndarray, np.ndarray]:
    """The pool indices (sorted) of the transmitted examples and of the held-out development set
    of ``stopping_set="dev"`` (§3.1: a development set apart from the transmitted data, the same
    for every block probe and every data order): a seeded draw keyed by ``random_state`` only.
    """
    check_scalar(random_state, "random_state", int, min_val=0)
    n_dev = development_size(pool_size, dev_fraction)
    order = np.random.default_rng([random_state, _DEV_STREAM]).permutation(pool_size)
    return np.sort(order[n_dev:]), np.sort(order[:n_dev])


def transmitted_size(pool_size: int, stopping_set: str, dev_fraction: float) -> int:
    """n, the examples the online code transmits from a pool of ``pool_size``: the whole pool
    with ``stopping_set="prefix"``, the pool less its development set with ``"dev"``."""
    one_of(*STOPPING_SETS)(stopping_set, "stopping_set")
    if stopping_set == "prefix":
        return pool_size
    return pool_size - development_size(pool_size, dev_fraction)


def _columns(frame: pd.DataFrame) -> dict[str, list[Any]]:
    """Columns as lists with NaN (e.g. the uniform first block's accuracy) as JSON null;
    ``pd.DataFrame`` reads null back as NaN."""
    return frame.astype(object).where(frame.notna(), None).to_dict(orient="list")


class SeedResults(JsonResult):
    """Shared behaviour of code results holding a per-seed table ``seeds`` (mixin)."""

    seeds: pd.DataFrame

    def mean(self, column: str) -> float:
        """Mean over seeds of a per-seed column."""
        return float(self.seeds[column].mean())

    def std(self, column: str) -> float:
        """Standard deviation over seeds (ddof=1; 0 with one seed)."""
        return float(self.seeds[column].std(ddof=1)) if len(self.seeds) > 1 else 0.0

    def summary(self) -> pd.DataFrame:
        """Mean, standard deviation, min and max over seeds of every numeric per-seed column."""
        columns = self.seeds.drop(columns="seed").select_dtypes("number")
        return pd.DataFrame(
            {
                "mean": columns.mean(),
                "std": columns.std(ddof=1).fillna(0.0),
                "min": columns.min(),
                "max": columns.max(),
            }
        )


@dataclass(frozen=True)
class OnlineCode(SeedResults):
    """Online codelength of one representation's labels, over several data orders (seeds).

    Attributes:
        name: the representation.
        n_classes: K.
        n: examples transmitted (the pool size).
        ends: block boundaries t_1 < ... < t_S = n.
        blocks: one row per (seed, block): ``seed, block, start, end, train_size`` (0 for the
            uniform first block), ``codelength_bits``, ``bits_per_label``, ``accuracy`` (of the
            probe on its block; NaN for the uniform block).
        seeds: one row per seed: ``online_bits, uniform_bits, compression, data_bits,
            model_bits, accuracy`` (test accuracy of the probe trained on all data) and
            ``epochs`` (its training epochs; NaN with fixed steps).
        metadata: probe, training (with its stopping rule), random state, versions, timings.
        stopping_set: where the probes early-stopped (§3.1): ``"dev"`` (a development set held
            out of the pool, not transmitted: the paper's protocol), ``"prefix"`` (a share of
            each probe's own prefix) or ``"none"`` (fixed-steps training). Results written
            before this was recorded load as ``"prefix"`` (or ``"none"`` for fixed steps), the
            only rule there was.
        n_dev: examples of the held-out development set (0 unless ``stopping_set="dev"``);
            the pool held ``n + n_dev``.
        test_correct: per seed, which test examples the probe trained on all n examples got
            right (for McNemar's test between representations); None for codes stored before
            it was recorded.
        classes: the original label of each class index (``ProbeData.classes``); None when
            the data had none (and in results written before labels were recorded).
        multilabel: the labels were label sets (multi-label targets): codes are sums of K
            Bernoulli codes, the uniform code is K bits per example (see the module docstring).
        example_bits: with ``online_codelength(..., keep_example_bits=True)``, a (seeds, n)
            float64 array: per seed (in :attr:`seeds` order), the bits of every transmitted
            example in that seed's transmission order (``log2 K`` each in the uniform first
            block, ``K`` for label sets), whose block sums are the ``codelength_bits`` of
            :attr:`blocks` (the per-example losses a switching code mixes,
            :mod:`probemeter.mdl.switching`).
            Else None; not part of :meth:`to_dict` (nor of saved results or equality).
        probes: with ``online_codelength(..., keep_probes=True)``, every trained probe
            (:class:`~probemeter.probes.ProbeSet`), seed after seed: the block probes, ``info``
            ``{"seed", "role": "block", "block": i, "train_size": t_{i-1}}`` (trained on the
            first t_{i-1} examples of the seed's order, it encodes block i), then the
            full-data probe, ``{"seed", "role": "full", "train_size": n}``. Their stored loss,
            accuracy and predictions are on the data's *test* set (the codelengths come from
            the pool, where the block probes were evaluated too), for inspecting errors. Else
            None; not part of :meth:`to_dict` (nor of saved results or equality).
    """

    name: str
    n_classes: int
    n: int
    ends: tuple[int, ...]
    blocks: pd.DataFrame = field(repr=False)
    seeds: pd.DataFrame = field(repr=False)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    stopping_set: str = "prefix"
    n_dev: int = 0
    test_correct: SeedCorrectness | None = field(default=None, repr=False, compare=False)
    classes: tuple[Any, ...] | None = field(default=None, repr=False)
    probes: ProbeSet | None = field(default=None, repr=False, compare=False)
    multilabel: bool = False
    example_bits: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def uniform_bits(self) -> float:
        return uniform_codelength(self.n, self.n_classes, self.multilabel)

    @property
    def codelength_bits(self) -> float:
        return self.mean("online_bits")

    @property
    def compression(self) -> float:
        return self.mean("compression")

    def block_table(self) -> pd.DataFrame:
        """Per block, mean over seeds: bounds, training size, bits, bits per label, accuracy
        (and micro-F1 for label sets)."""
        return self.blocks.groupby("block").agg(
            start=("start", "first"),
            end=("end", "first"),
            train_size=("train_size", "first"),
            codelength_bits=("codelength_bits", "mean"),
            bits_per_label=("bits_per_label", "mean"),
            accuracy=("accuracy", "mean"),
            **({"micro_f1": ("micro_f1", "mean")} if self.multilabel else {}),
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-(seed, block) table with the representation's name as a column."""
        return self.blocks.assign(representation=self.name)

    def stopping(self) -> str:
        """Where the probes early-stopped, in words (:attr:`stopping_set`)."""
        if self.stopping_set == "dev":
            return (
                f"early stopping on a held-out development set of {self.n_dev} examples, "
                "not transmitted (Voita & Titov sec. 3.1)"
            )
        if self.stopping_set == "prefix":
            return "early stopping on a share of each block probe's own prefix"
        return "no early stopping (fixed steps)"

    def __str__(self) -> str:
        kbits = BITS_PER_KBIT
        return (
            f"online code of {self.name}: {self.codelength_bits / kbits:.2f} "
            f"± {self.std('online_bits') / kbits:.2f} kbits over {len(self.seeds)} seed(s), "
            f"compression {self.compression:.2f} (uniform {self.uniform_bits / kbits:.2f} kbits); "
            f"data {self.mean('data_bits') / kbits:.2f} + model "
            f"{self.mean('model_bits') / kbits:.2f} kbits (1 kbit = {kbits} bits); "
            f"n = {self.n}, {self.stopping()}\n"
            + self.block_table().to_string(float_format=lambda v: f"{v:.3f}")
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` restores it."""
        return {
            "kind": "online_code",
            "unit": "bits",
            "name": self.name,
            "n_classes": self.n_classes,
            "classes": classes_to_json(self.classes),
            "n": self.n,
            "stopping_set": self.stopping_set,
            "n_dev": self.n_dev,
            "ends": list(self.ends),
            "blocks": _columns(self.blocks),
            "seeds": _columns(self.seeds),
            "metadata": self.metadata,
            "test_correct": None if self.test_correct is None else self.test_correct.to_dict(),
            **({"multilabel": True} if self.multilabel else {}),
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> OnlineCode:
        """The code :meth:`to_dict` wrote. A payload without ``stopping_set`` (written before
        it was recorded) early-stopped on each probe's prefix, the only rule then: it loads as
        ``"prefix"``, or ``"none"`` when its training was fixed steps."""
        if payload.get("kind") != "online_code" or payload.get("unit") != "bits":
            raise ValueError("payload is not an online code in bits")
        metadata = payload.get("metadata", {})
        stopping_set = payload.get("stopping_set")
        if stopping_set is None:
            stopping = str(metadata.get("training", {}).get("stopping", ""))
            stopping_set = "none" if stopping.startswith("fixed") else "prefix"
        one_of(*STOPPING_SETS, "none")(stopping_set, "stopping_set")
        correct = payload.get("test_correct")
        return cls(
            name=payload["name"],
            n_classes=int(payload["n_classes"]),
            n=int(payload["n"]),
            ends=tuple(int(e) for e in payload["ends"]),
            blocks=pd.DataFrame(payload["blocks"]),
            seeds=pd.DataFrame(payload["seeds"]),
            metadata=metadata,
            stopping_set=stopping_set,
            n_dev=int(payload.get("n_dev", 0)),
            test_correct=None if correct is None else SeedCorrectness.from_dict(correct),
            classes=classes_from_json(payload.get("classes")),
            multilabel=bool(payload.get("multilabel", False)),
        )

    def plot(
        self, ax: Any = None, *, metric: str = "accuracy", label: str | None = None, **style: Any
    ) -> Any:
        """The online learning curve (Fig. 2c): per block, ``metric`` (``"accuracy"`` or
        ``"bits_per_label"``) of the probe trained on the preceding data, against the share of
        the data it was trained on (log x); band: min–max over seeds."""
        import matplotlib.pyplot as plt

        one_of("accuracy", "bits_per_label")(metric, "metric")
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        trained = self.blocks[self.blocks["train_size"] > 0]
        grouped = trained.groupby("train_size")[metric]
        share = grouped.mean().index.to_numpy() / self.n * 100
        line = ax.plot(share, grouped.mean(), marker="o", ms=3, label=label or self.name, **style)
        ax.fill_between(
            share, grouped.min(), grouped.max(), alpha=0.2, color=line[0].get_color(), lw=0
        )
        ax.set_xscale("log")
        ax.set_xlabel("% of data the block probe was trained on")
        ax.set_ylabel(
            {"accuracy": "accuracy on next block", "bits_per_label": "bits / label"}[metric]
        )
        return ax


def online_codelength(
    data: ProbeData,
    probe: MLP = _PROBE,
    timesteps: Sequence[float] = PAPER_TIMESTEPS,
    seeds: int | Sequence[int] = ONLINE_SEEDS,
    *,
    config: TrainingConfig | None = None,
    stopping_set: str = ONLINE_STOPPING_SET,
    random_state: int = 0,
    execution: Execution | None = None,
    keep_probes: bool = False,
    keep_example_bits: bool = False,
    **old: Any,
) -> OnlineCode:
    """Online codelength (eq. 4) of ``data``'s training pool, with the §2.3 data/model split.

    Args:
        data: features and labels; the pool (``X_train, y_train``) is what is transmitted
            (less the development set with ``stopping_set="dev"``); the test set gives the
            accuracy of the probe trained on all data.
        probe: the probe; default MLP-2 with h = 64, the ``mdl`` method's
            (:data:`~probemeter.mdl.defaults.MDL_PROBE`); the paper's MLP-2 with h = 1000 (§3.1,
            Hewitt & Liang's default) is ``MLP(PAPER_PROBE)``
            (:data:`~probemeter.mdl.defaults.PAPER_PROBE`).
        timesteps: block ends as fractions of the transmitted data, strictly increasing in
            (0, 1], ending at 1 (default: the paper's, footnote 4).
        seeds: a count or explicit seed ids; each seed is one data order (and probe seeds);
            default 2, the ``mdl`` method's (:data:`~probemeter.mdl.defaults.ONLINE_SEEDS`).
        config: how probes train; default :data:`~probemeter.mdl.defaults.PAPER_TRAINING`
            (§3.1 early stopping; the ``mdl`` method's).
        stopping_set: with early stopping, where probes stop (§3.1): ``"dev"`` (default, the
            paper's protocol): ``config.dev_fraction`` of the pool is held out once
            (:func:`development_split`), never transmitted, and is the development set of
            every probe, which trains on its whole prefix; ``"prefix"``: each probe stops on
            ``config.dev_fraction`` of its own prefix and trains on the rest, the whole pool is
            transmitted. Ignored with fixed-steps training (recorded as ``"none"``).
        random_state: global seed; probe (seed, t) is keyed by ``(random_state, seed, t)``.
        execution: where and how the probes train (:class:`~probemeter.Execution`; None:
            ``Execution()``).
        keep_probes: keep every block probe and the full-data probe of every seed in the
            code's ``probes``, each evaluated once more on the test set for its stored loss,
            accuracy and predictions (:meth:`ProbeSet.from_stacked`). The code is the same
            either way.
        keep_example_bits: keep every transmitted example's bits, per seed in its order
            (:attr:`OnlineCode.example_bits`). The code is the same either way.

    Raises:
        ValueError: bad timesteps (see :func:`block_ends`), ``stopping_set``, seeds or
            random_state.

    Examples:
        A linear probe on three separable classes, three blocks, two data orders, §3.1's
        early stopping at lr 1e-2; 10 % of the pool is the development set, not transmitted:

        >>> import numpy as np
        >>> from probemeter import Linear, ProbeData
        >>> rng = np.random.default_rng(0)
        >>> labels = np.arange(300) % 3
        >>> data = ProbeData.from_arrays(rng.normal(size=(300, 4)) + 2 * labels[:, None], labels)
        >>> from probemeter import Execution
        >>> from probemeter.mdl import online_codelength, paper_training
        >>> code = online_codelength(
        ...     data, Linear(), (0.1, 0.3, 1.0), seeds=2, config=paper_training(lr=1e-2),
        ...     execution=Execution(device="cpu"),
        ... )
        >>> code.n, code.n_dev, code.ends
        (216, 24, (22, 65, 216))
        >>> round(code.uniform_bits, 1), round(code.codelength_bits, 1), round(code.compression, 2)
        (342.4, 143.4, 2.39)

        The difference in means in place of the trained probe (each block's probe fitted in
        closed form on the blocks before it, :class:`~probemeter.probes.Direction`); on these
        isotropic classes it is the Bayes rule's estimate, and codes shorter:

        >>> from probemeter import Direction
        >>> direction = online_codelength(
        ...     data, Direction("diff-means"), (0.1, 0.3, 1.0), seeds=2,
        ...     execution=Execution(device="cpu"),
        ... )
        >>> round(direction.codelength_bits, 1), round(direction.compression, 2)
        (73.2, 4.69)
    """
    check_probe_data(data, sparse=True)
    if keep_probes and data.is_sparse:
        raise ValueError(
            "keep_probes: kept probes are evaluated on dense features; data has sparse ones"
        )
    options = _CodeOptions(
        timesteps=timesteps,
        seeds=seeds,
        config=config,
        stopping_set=stopping_set,
        random_state=random_state,
        execution=execution_of(execution, old, "online_codelength"),
        keep_probes=keep_probes,
        keep_example_bits=keep_example_bits,
    )
    (code,) = _online_codes(data, [probe], options)
    return code


def online_codelengths(
    data: ProbeData,
    probes: Sequence[MLP],
    timesteps: Sequence[float] = PAPER_TIMESTEPS,
    seeds: int | Sequence[int] = ONLINE_SEEDS,
    *,
    config: TrainingConfig | None = None,
    stopping_set: str = ONLINE_STOPPING_SET,
    random_state: int = 0,
    execution: Execution | None = None,
    keep_example_bits: bool = False,
    **old: Any,
) -> dict[str, OnlineCode]:
    """Online codelengths (eq. 4) of ``data`` with several probe families, by ``MLP.name``,
    over the same blocks, data orders and development split, all trained in one engine call
    (:func:`~probemeter.training.engine.fit_evaluate` with one architecture per probe, whose
    chunks share the workers). Each code equals :func:`online_codelength` of its family alone
    (same random streams; up to float rounding); its ``metadata["train_seconds"]`` is the time of
    the whole call.

    Args:
        probes: distinct probe architectures (e.g. linear, MLP-1, MLP-2).
        data, timesteps, seeds, config, stopping_set, random_state: as in
            :func:`online_codelength`.
        execution, keep_example_bits: as there.

    Raises:
        ValueError: no probes, two with the same name, or anything :func:`online_codelength`
            refuses.
    """
    check_probe_data(data, sparse=True)
    probes = list(probes)
    names = [probe.name for probe in probes]
    if not probes or len(set(names)) != len(names):
        raise ValueError(f"probes must be distinct probe architectures; got {names}")
    options = _CodeOptions(
        timesteps=timesteps,
        seeds=seeds,
        config=config,
        stopping_set=stopping_set,
        random_state=random_state,
        execution=execution_of(execution, old, "online_codelengths"),
        keep_probes=False,
        keep_example_bits=keep_example_bits,
    )
    return dict(zip(names, _online_codes(data, probes, options), strict=True))


@dataclass(frozen=True)
class _CodeOptions:
    """The settings of one call of :func:`online_codelength` or :func:`online_codelengths`
    (their arguments, checked; ``config`` None made :data:`PAPER_TRAINING`), shared by the
    codes of every probe family of the call."""

    timesteps: Sequence[float]
    seeds: int | Sequence[int]
    config: TrainingConfig
    stopping_set: str
    random_state: int
    execution: Execution
    keep_probes: bool
    keep_example_bits: bool

    def __post_init__(self) -> None:
        check_scalar(self.random_state, "random_state", int, min_val=0)
        one_of(*STOPPING_SETS)(self.stopping_set, "stopping_set")
        object.__setattr__(self, "config", config_or_default(self.config, PAPER_TRAINING))

    @property
    def stopping(self) -> str:
        """Where the probes early-stop: ``stopping_set``, or ``"none"`` with fixed steps."""
        return self.stopping_set if self.config.early_stopping else "none"


def _online_codes(data: ProbeData, probes: list[MLP], options: _CodeOptions) -> list[OnlineCode]:
    """The online code of every architecture of ``probes``, from one engine call."""
    config, random_state = options.config, options.random_state
    if options.stopping == "dev":
        transmitted, dev = development_split(data.pool_size, config.dev_fraction, random_state)
    else:
        transmitted, dev = np.arange(data.pool_size), np.empty(0, dtype=np.int64)
    n = transmitted.size
    ends = block_ends(n, options.timesteps)
    # per seed: probes trained on the first t_1, ..., t_{S-1} examples (blocks) and on all n
    seeds_used, grid, keys = seed_grid(options.seeds, ends, random_state)
    orders = {seed: transmitted[subset_permutation(n, random_state, seed)] for seed in seeds_used}
    subsets = [orders[seed][:t] for seed, t in grid]
    # the probe trained on the first ends[k] examples codes block k + 1 only; the probe trained
    # on all n is scored on every transmitted example (the data part of the §2.3 split)
    next_ends = {int(e): int(f) for e, f in itertools.pairwise(ends)}
    scored = [orders[seed][t : next_ends[t]] if t in next_ends else transmitted for seed, t in grid]
    families = len(probes)
    with Stopwatch() as watch:  # family f's probes are positions f·P … (f+1)·P − 1
        evaluation = fit_evaluate(
            data.X_train,
            data.y_train,
            data.X_test,
            data.y_test,
            data.n_classes,
            subsets * families,
            keys * families,
            [probe for probe in probes for _ in grid],
            config,
            execution=options.execution,
            per_example=True,
            dev_set=dev if options.stopping == "dev" else None,
            return_parameters=options.keep_probes,
            pool_rows=scored * families,
        )
    split = _Split(data, grid, seeds_used, orders, ends, dev, options)
    return [
        split.code(
            probe, evaluation.select(np.arange(f * len(grid), (f + 1) * len(grid))), watch.seconds
        )
        for f, probe in enumerate(probes)
    ]


@dataclass(frozen=True)
class _Split:
    """What the online codes of one call share: the data, the probes' (seed, prefix) grid,
    each seed's order of the transmitted examples, the block ends, the development set and the
    call's options."""

    data: ProbeData
    grid: list[tuple[int, int]]
    seeds: list[int]
    orders: dict[int, np.ndarray]
    ends: np.ndarray
    dev: np.ndarray
    options: _CodeOptions

    @property
    def n(self) -> int:
        """Transmitted examples."""
        return int(self.ends[-1])

    def code(self, probe: MLP, evaluation: ProbeEvaluation, seconds: float) -> OnlineCode:
        """The online code of ``probe``'s family from its probes' ``evaluation`` (aligned
        with ``grid``)."""
        options, probes = self.options, None
        if options.keep_probes:
            probes = ProbeSet.from_stacked(
                self.data.name,
                probe,
                evaluation.parameters,
                [_probe_info(seed, t, self.ends) for seed, t in self.grid],
                self.data.X_test,
                self.data.y_test,
                stack_rows=evaluation.stack_rows,
                mixes=None if probe.mix == 0 else (evaluation.mix_logits, evaluation.mix_scale),
                spans=kept_spans(evaluation),
                device=options.execution.device,
            )
            if self.data.pool_mean is not None:  # for writing a probe back into the model
                probes = replace(probes, moments=(self.data.pool_mean, self.data.pool_std))
        test_predictions = evaluation.predictions
        test_correct = test_predictions == self.data.y_test[None, :]
        if self.data.multilabel:  # correct when the whole label set is (exact set match)
            test_correct = test_correct.all(axis=2)
        block_rows, seed_rows, full_rows = [], [], []
        example_bits = np.full(
            (len(self.seeds), self.n),
            uniform_codelength(1, self.data.n_classes, self.data.multilabel),
        )
        for seed, seed_bits in zip(self.seeds, example_bits, strict=True):
            order = self.orders[seed]
            rows = [i for i, (s, _) in enumerate(self.grid) if s == seed]
            total = uniform_codelength(self.ends[0], self.data.n_classes, self.data.multilabel)
            block_rows.append(_block_row(seed, 0, 0, int(self.ends[0]), 0, total, np.nan))
            if self.data.multilabel:
                block_rows[-1]["micro_f1"] = np.nan
            for block in range(1, len(self.ends)):
                probe_row = rows[block - 1]  # trained on the first ends[block - 1] examples
                sent = order[self.ends[block - 1] : self.ends[block]]  # scored in this order
                block_bits = evaluation.pool_nll[probe_row].astype(np.float64) * BITS_PER_NAT
                seed_bits[self.ends[block - 1] : self.ends[block]] = block_bits
                bits = float(block_bits.sum())
                predicted = evaluation.pool_predictions[probe_row]
                correct = predicted == self.data.y_train[sent]
                accuracy = float((correct.all(axis=1) if self.data.multilabel else correct).mean())
                total += bits
                block_rows.append(
                    _block_row(
                        seed,
                        block,
                        int(self.ends[block - 1]),
                        int(self.ends[block]),
                        int(self.ends[block - 1]),
                        bits,
                        accuracy,
                    )
                )
                if self.data.multilabel:
                    counts = label_counts(predicted, self.data.y_train[sent])
                    block_rows[-1]["micro_f1"] = f1_scores(counts)[0]
            full = rows[-1]  # trained on all n examples
            full_rows.append(full)
            data_bits = float((evaluation.pool_nll[full].astype(np.float64) * BITS_PER_NAT).sum())
            uniform = uniform_codelength(self.n, self.data.n_classes, self.data.multilabel)
            seed_rows.append(
                {
                    "seed": seed,
                    "online_bits": total,
                    "uniform_bits": uniform,
                    "compression": uniform / total,
                    "data_bits": data_bits,
                    "model_bits": total - data_bits,
                    "accuracy": float(test_correct[full].mean()),
                    "epochs": np.nan
                    if evaluation.epochs is None
                    else float(evaluation.epochs[full]),
                }
            )
            if self.data.multilabel:  # F1 of the full-data probe on the test set
                micro, macro = f1_scores(label_counts(test_predictions[full], self.data.y_test))
                seed_rows[-1].update(micro_f1=micro, macro_f1=macro)
        config = options.config
        training = config.to_dict()
        if options.stopping == "dev":
            training["stopping"] = (
                f"early stopping per probe on a development set of {self.dev.size} pool "
                f"examples ({config.dev_fraction:g} of the pool) held out of the transmitted "
                "data, the same for every probe, which trains on its whole prefix: lr "
                f"x{config.lr_decay:g} after an epoch without a new dev minimum, stop after "
                f"{config.patience} such epochs in a row or {config.max_epochs} epochs; "
                "best-dev parameters kept (Voita & Titov 2020, sec. 3.1)"
            )
        metadata = run_metadata(
            probe,
            training,
            random_state=options.random_state,
            device=options.execution.device,
            seconds=seconds,
            data=self.data,
            settings={
                "timesteps": [float(t) for t in options.timesteps],
                "stopping_set": options.stopping,
                "n_dev": int(self.dev.size),
            },
            data_fields={"n_test": len(self.data.y_test), "n_features": self.data.n_features},
        )
        mix = learned_mix(self.data, evaluation, full_rows, self.seeds)
        if mix is not None:  # the layer weights the probes trained on all n examples learned
            metadata["scalar_mix"] = mix
        return OnlineCode(
            name=self.data.name,
            n_classes=self.data.n_classes,
            n=self.n,
            ends=tuple(int(e) for e in self.ends),
            blocks=pd.DataFrame(block_rows),
            seeds=pd.DataFrame(seed_rows),
            metadata=metadata,
            stopping_set=options.stopping,
            n_dev=int(self.dev.size),
            test_correct=SeedCorrectness.from_predictions(
                self.seeds,
                test_predictions[full_rows],
                self.data.y_test,
                self.n,
                self.data.clusters_test,
            ),
            classes=self.data.classes,
            probes=probes,
            multilabel=self.data.multilabel,
            example_bits=example_bits if options.keep_example_bits else None,
        )


def _probe_info(seed: int, train_size: int, ends: np.ndarray) -> dict[str, Any]:
    """A kept probe's ``info``: the block probe trained on the first t_{i-1} = ``train_size``
    examples encodes block i; the probe trained on all n is the full-data probe."""
    if train_size == ends[-1]:
        return {"seed": int(seed), "role": "full", "train_size": int(train_size)}
    block = int(np.searchsorted(ends, train_size)) + 1
    return {"seed": int(seed), "role": "block", "block": block, "train_size": int(train_size)}


def _block_row(
    seed: int, block: int, start: int, end: int, train_size: int, bits: float, accuracy: float
) -> dict[str, Any]:
    return {
        "seed": seed,
        "block": block,
        "start": start,
        "end": end,
        "train_size": train_size,
        "codelength_bits": bits,
        "bits_per_label": bits / (end - start),
        "accuracy": accuracy,
    }
