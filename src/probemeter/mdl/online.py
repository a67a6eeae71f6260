"""Online (prequential) description length of labels given representations (Voita & Titov 2020).

§2.2.2, eq. 4: with timesteps ``1 = t_0 < t_1 < ... < t_S = n``, the first block ``y_{1:t_1}``
is sent with the uniform code (``t_1 · log2 K`` bits); then, for i = 1..S-1, a probe trained on
the first ``t_i`` examples encodes the block ``y_{t_i+1 : t_{i+1}}`` at its cross-entropy::

    L_online = t_1 log2 K − Σ_{i=1}^{S-1} log2 p_{θ_i}(y_{t_i+1 : t_{i+1}} | x_{t_i+1 : t_{i+1}}).

Compression is ``n log2 K / L_online`` (§2.1). §2.3 splits the code: the *data* code is the
cross-entropy of the probe trained on all n examples, ``−Σ_j log2 p_{θ_S}(y_j | x_j)``, and the
*model* code is the rest, ``L_online − data``. The order in which data are sent is a seeded
permutation of the pool; several seeds give the mean and spread of Fig. 2d.

All block probes (S−1 per seed) and the full-data probe of every seed are trained at once by
:func:`probemeter.training.engine.fit_evaluate`, each evaluated on the whole pool
(``per_example=True``),
from which its next block's cross-entropies are summed. The engine works in nats; they are
converted to bits once, here, and every result field names its unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from probemeter._io import JsonResult
from probemeter._method import MAX_MEMORY_GIB
from probemeter._validation import check_scalar, one_of
from probemeter.data import ProbeData, subset_permutation
from probemeter.mdl.method import PAPER_TIMESTEPS
from probemeter.probes import MLP
from probemeter.training.engine import TrainingConfig, fit_evaluate
from probemeter.training.probe_runs import Stopwatch, run_metadata, seed_grid

__all__ = [
    "BITS_PER_NAT",
    "PAPER_TIMESTEPS",
    "OnlineCode",
    "SeedResults",
    "block_ends",
    "online_codelength",
    "paper_training",
    "uniform_codelength",
]

#: one nat is 1/ln 2 bits
BITS_PER_NAT = 1.0 / math.log(2.0)


def uniform_codelength(n: int, n_classes: int) -> float:
    """``n · log2 K`` bits: the labels sent without looking at the data (§2.1)."""
    return float(n) * math.log2(n_classes)


def paper_training(**overrides: Any) -> TrainingConfig:
    """The training protocol of §3.1: Adam with lr 1e-3, per-probe early stopping on a dev
    split, lr ×0.5 after an epoch without a new dev minimum, stop after 4 such epochs in a row.
    Keyword arguments override settings (e.g. ``batch_size``, ``max_epochs``)."""
    settings = {"lr": 1e-3, "batch_size": 256, "early_stopping": True, "patience": 4}
    return TrainingConfig(**{**settings, **overrides})


def block_ends(n: int, n_classes: int, timesteps: Sequence[float] = PAPER_TIMESTEPS) -> np.ndarray:
    """The block boundaries ``t_1 < ... < t_S = n`` as integers: ``round(t · n)``.

    Raises:
        ValueError: ``timesteps`` empty, not strictly increasing, outside (0, 1], or not ending
            at 1; two timesteps rounding to the same count (n too small for them); or a first
            block ``t_1`` smaller than the number of classes ``n_classes``.
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
    if ends[0] < n_classes:
        raise ValueError(
            f"the first block holds {ends[0]} examples (timesteps[0]={fractions[0]} of n={n}), "
            f"fewer than the number of classes {n_classes}; raise timesteps[0]"
        )
    return ends


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
    """

    name: str
    n_classes: int
    n: int
    ends: tuple[int, ...]
    blocks: pd.DataFrame = field(repr=False)
    seeds: pd.DataFrame = field(repr=False)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def uniform_bits(self) -> float:
        return uniform_codelength(self.n, self.n_classes)

    @property
    def codelength_bits(self) -> float:
        return self.mean("online_bits")

    @property
    def compression(self) -> float:
        return self.mean("compression")

    def block_table(self) -> pd.DataFrame:
        """Per block, mean over seeds: bounds, training size, bits, bits per label, accuracy."""
        return self.blocks.groupby("block").agg(
            start=("start", "first"),
            end=("end", "first"),
            train_size=("train_size", "first"),
            codelength_bits=("codelength_bits", "mean"),
            bits_per_label=("bits_per_label", "mean"),
            accuracy=("accuracy", "mean"),
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-(seed, block) table with the representation's name as a column."""
        return self.blocks.assign(representation=self.name)

    def __str__(self) -> str:
        return (
            f"online code of {self.name}: {self.codelength_bits / 1e3:.2f} "
            f"± {self.std('online_bits') / 1e3:.2f} kbits over {len(self.seeds)} seed(s), "
            f"compression {self.compression:.2f} (uniform {self.uniform_bits / 1e3:.2f} kbits); "
            f"data {self.mean('data_bits') / 1e3:.2f} + model {self.mean('model_bits') / 1e3:.2f} "
            "kbits\n" + self.block_table().to_string(float_format=lambda v: f"{v:.3f}")
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` restores it."""
        return {
            "kind": "online_code",
            "unit": "bits",
            "name": self.name,
            "n_classes": self.n_classes,
            "n": self.n,
            "ends": list(self.ends),
            "blocks": _columns(self.blocks),
            "seeds": _columns(self.seeds),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> OnlineCode:
        if payload.get("kind") != "online_code" or payload.get("unit") != "bits":
            raise ValueError("payload is not an online code in bits")
        return cls(
            name=payload["name"],
            n_classes=int(payload["n_classes"]),
            n=int(payload["n"]),
            ends=tuple(int(e) for e in payload["ends"]),
            blocks=pd.DataFrame(payload["blocks"]),
            seeds=pd.DataFrame(payload["seeds"]),
            metadata=payload.get("metadata", {}),
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
    probe: MLP | None = None,
    timesteps: Sequence[float] = PAPER_TIMESTEPS,
    seeds: int | Sequence[int] = 3,
    *,
    config: TrainingConfig | None = None,
    random_state: int = 0,
    device: str = "auto",
    n_jobs: int | None = -1,
    max_memory: float = MAX_MEMORY_GIB,
    progress: bool = False,
) -> OnlineCode:
    """Online codelength (eq. 4) of ``data``'s training pool, with the §2.3 data/model split.

    Args:
        data: features and labels; the pool (``X_train, y_train``) is what is transmitted; the
            test set gives the accuracy of the probe trained on all data.
        probe: the probe; default MLP-2 with h = 1000 (§3.1, Hewitt & Liang's default).
        timesteps: block ends as fractions of the pool, strictly increasing in (0, 1], ending
            at 1 (default: the paper's, footnote 4).
        seeds: a count or explicit seed ids; each seed is one data order (and probe seeds).
        config: how probes train; default :func:`paper_training` (§3.1 early stopping).
        random_state: global seed; probe (seed, t) is keyed by ``(random_state, seed, t)``.
        device, n_jobs, max_memory, progress: passed to the engine.

    Raises:
        ValueError: bad timesteps (see :func:`block_ends`), seeds or random_state.
    """
    check_scalar(random_state, "random_state", int, min_val=0)
    probe = MLP((1000, 1000)) if probe is None else probe
    config = paper_training() if config is None else config
    ends = block_ends(data.pool_size, data.n_classes, timesteps)
    # per seed: probes trained on the first t_1, ..., t_{S-1} examples (blocks) and on all n
    seeds_used, grid, keys = seed_grid(seeds, ends, random_state)
    orders = {seed: subset_permutation(data.pool_size, random_state, seed) for seed in seeds_used}
    subsets = [orders[seed][:t] for seed, t in grid]
    evaluation_x = np.concatenate([data.X_train, data.X_test])
    evaluation_y = np.concatenate([data.y_train, data.y_test])
    with Stopwatch() as watch:
        evaluation = fit_evaluate(
            data.X_train,
            data.y_train,
            evaluation_x,
            evaluation_y,
            data.n_classes,
            subsets,
            keys,
            probe,
            config,
            device=device,
            n_jobs=n_jobs,
            max_memory=max_memory,
            progress=progress,
            per_example=True,
        )
    n = data.pool_size
    pool_bits = evaluation.nll[:, :n].astype(np.float64) * BITS_PER_NAT
    pool_correct = evaluation.predictions[:, :n] == data.y_train[None, :]
    test_correct = evaluation.predictions[:, n:] == data.y_test[None, :]
    block_rows, seed_rows = [], []
    for seed in seeds_used:
        order = orders[seed]
        rows = [i for i, (s, _) in enumerate(grid) if s == seed]
        total = uniform_codelength(ends[0], data.n_classes)
        block_rows.append(_block_row(seed, 0, 0, int(ends[0]), 0, total, np.nan))
        for block in range(1, len(ends)):
            probe_row = rows[block - 1]  # trained on the first ends[block - 1] examples
            sent = order[ends[block - 1] : ends[block]]
            bits = float(pool_bits[probe_row, sent].sum())
            accuracy = float(pool_correct[probe_row, sent].mean())
            total += bits
            block_rows.append(
                _block_row(
                    seed,
                    block,
                    int(ends[block - 1]),
                    int(ends[block]),
                    int(ends[block - 1]),
                    bits,
                    accuracy,
                )
            )
        full = rows[-1]  # trained on all n examples
        data_bits = float(pool_bits[full].sum())
        uniform = uniform_codelength(n, data.n_classes)
        seed_rows.append(
            {
                "seed": seed,
                "online_bits": total,
                "uniform_bits": uniform,
                "compression": uniform / total,
                "data_bits": data_bits,
                "model_bits": total - data_bits,
                "accuracy": float(test_correct[full].mean()),
                "epochs": np.nan if evaluation.epochs is None else float(evaluation.epochs[full]),
            }
        )
    metadata = run_metadata(
        probe,
        config.to_dict(),
        random_state=random_state,
        device=device,
        seconds=watch.seconds,
        data=data,
        settings={"timesteps": [float(t) for t in timesteps]},
        data_fields={"n_test": len(data.y_test)},
    )
    return OnlineCode(
        name=data.name,
        n_classes=data.n_classes,
        n=n,
        ends=tuple(int(e) for e in ends),
        blocks=pd.DataFrame(block_rows),
        seeds=pd.DataFrame(seed_rows),
        metadata=metadata,
    )


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
