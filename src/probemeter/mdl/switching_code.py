"""The switching code of a representation's labels over the online codes of several probe
families: fixed share (Herbster & Warmuth 1998) with switching rate α_t = 1/t over the
families' predictions (switching between models is suggested by Blier & Ollivier 2018, §3.4,
and Whitney et al., §7, after van Erven, Grünwald & de Rooij's switch distribution, 2012, which
has another prior on switching sequences: :mod:`probemeter.mdl.switching`).

Every family (linear, MLP-1, MLP-2, widths) gets its own online code (Voita & Titov 2020, eq. 4,
:func:`~probemeter.mdl.online.online_codelength`) over the *same* blocks and data orders: the
development split and each seed's order depend only on ``random_state`` and the seed, so
example j of seed s is the same label in every family's code. The switching code then mixes
the families' predictions of each example with the fixed-share prior over switching sequences
(:mod:`probemeter.mdl.switching`), seed by seed:

* ``granularity="example"`` (default): the rounds are the n transmitted examples in their
  order, as in prediction with expert advice (the posterior over families updates after every
  label); within a block every family predicts with its probe trained on the preceding blocks,
  and the first block costs ``log2 K`` per label in every family (K bits per label set), which
  leaves the posterior unchanged;
* ``granularity="block"``: the rounds are the S blocks, each family coding a block at its
  block codelength — switches only at block boundaries; a coarser but valid variant whose bound
  has log2 S in place of log2 n.

The code is never more than ``B_0`` bits (``log2 F + log2 T`` with the harmonic rate, for F
families and T rounds) longer than the best family's online code in hindsight, nor more than
``B_k`` longer than the best sequence of families with at most k switches; both are reported
per seed with the bound.

References:
    Herbster, M. & Warmuth, M. K. (1998). Tracking the best expert. *Machine Learning* 32(2),
    151–178. doi:10.1023/A:1007424614876

    van Erven, T., Grünwald, P. & de Rooij, S. (2012). Catching up faster by switching sooner.
    *Journal of the Royal Statistical Society: Series B* 74(3). doi:10.1111/j.1467-9868.2011.01025.x

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368

    Blier, L. & Ollivier, Y. (2018). The description length of deep learning models. *NeurIPS 2018*.
    arXiv:1802.07044
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from probemeter._execution import Execution, execution_of
from probemeter._validation import check_scalar, one_of
from probemeter.data import ProbeData, check_probe_data
from probemeter.mdl.defaults import (
    MAX_SWITCHES,
    ONLINE_SEEDS,
    ONLINE_STOPPING_SET,
    PAPER_TIMESTEPS,
    SWITCHING_GRANULARITY,
    SWITCHING_RATE,
)
from probemeter.mdl.online import (
    BITS_PER_KBIT,
    OnlineCode,
    SeedResults,
    online_codelengths,
)
from probemeter.mdl.switching import (
    best_sequences,
    overhead_bound,
    switch_forward,
    switching_rates,
)
from probemeter.probes import MLP
from probemeter.training.config import TrainingConfig

__all__ = ["GRANULARITIES", "SwitchingCode", "switching_code", "switching_codelength"]

#: the rounds of the switching code: every transmitted example, or every online-code block
GRANULARITIES = ("example", "block")

#: the code of the switching mixture in ``blocks`` beside the families' names
SWITCHING = "switching"


@dataclass(frozen=True)
class SwitchingCode(SeedResults):
    """The switching code of one representation's labels over probe families' online codes.

    Attributes:
        name: the representation.
        families: the families' names, in the order given.
        n_classes, n, ends: K, the examples transmitted and the block ends (as in every
            family's :class:`~probemeter.mdl.online.OnlineCode`).
        rate: the switching rate: ``"harmonic"`` (α_t = 1/t) or a constant α (0: the Bayesian
            mixture, no switching).
        granularity: the rounds: ``"example"`` or ``"block"``.
        blocks: one row per (seed, block, code), code a family or ``"switching"``: ``seed,
            block, start, end, code, codelength_bits`` (of the block) and ``cumulative_bits``
            (blocks 0..block).
        posterior: one row per (seed, block, family): ``posterior``, the switching code's
            posterior weight of the family after the block's last label.
        seeds: one row per seed: ``switching_bits``; ``mixture_bits``, the Bayesian mixture
            of the families (no switching) for comparison; ``best_family`` and
            ``best_family_bits``, the family with the shortest online code in hindsight, and
            ``worst_family_bits``; ``overhead_bits`` = switching − best family, at most
            ``bound_bits`` (B_0); ``uniform_bits``, n·log2 K (n·K for label sets, one fair
            coin per label and example, as ``OnlineCode.uniform_bits``), and ``compression``
            (uniform ÷ switching).
        hindsight: one row per (seed, switches k = 0..max_switches, while the prior gives
            sequences with k switches mass: only k = 0 with rate 0): ``best_bits``, the best
            sequence of families with at most k switches (k = 0: the best family);
            ``bound_bits``, B_k; ``switching_bits``; ``slack_bits`` = best + bound −
            switching, never negative (the bound holds).
        codes: each family's online code (``example_bits`` not kept).
        metadata: the settings (rate, granularity, rounds, max_switches) and each family's
            training time.
    """

    name: str
    families: tuple[str, ...]
    n_classes: int
    n: int
    ends: tuple[int, ...]
    rate: str | float
    granularity: str
    blocks: pd.DataFrame = field(repr=False)
    posterior: pd.DataFrame = field(repr=False)
    seeds: pd.DataFrame = field(repr=False)
    hindsight: pd.DataFrame = field(repr=False)
    codes: tuple[OnlineCode, ...] = field(repr=False)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def codelength_bits(self) -> float:
        """The switching code, mean over seeds, in bits."""
        return self.mean("switching_bits")

    def family_bits(self) -> pd.Series:
        """Each family's online code, mean over seeds, in bits (indexed by family)."""
        return pd.Series(
            [code.codelength_bits for code in self.codes], index=list(self.families), name="bits"
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-(seed, block, code) table with the representation's name as a column."""
        return self.blocks.assign(representation=self.name)

    def summary_table(self) -> pd.DataFrame:
        """One row per code (each family, the Bayesian mixture, the switching code): bits,
        mean and standard deviation over seeds, and excess over the best family in hindsight
        (per seed, then averaged)."""
        best = self.seeds["best_family_bits"].to_numpy()
        per_seed = {
            family: self.blocks[
                (self.blocks["code"] == family) & (self.blocks["block"] == len(self.ends) - 1)
            ]["cumulative_bits"].to_numpy()
            for family in self.families
        }
        per_seed["mixture (no switching)"] = self.seeds["mixture_bits"].to_numpy()
        per_seed[SWITCHING] = self.seeds["switching_bits"].to_numpy()
        return pd.DataFrame(
            {
                "bits": {code: bits.mean() for code, bits in per_seed.items()},
                "std": {
                    code: bits.std(ddof=1) if bits.size > 1 else 0.0
                    for code, bits in per_seed.items()
                },
                "excess_bits": {code: (bits - best).mean() for code, bits in per_seed.items()},
            }
        ).rename_axis("code")

    def __str__(self) -> str:
        kbits = BITS_PER_KBIT
        return (
            f"switching code of {self.name} over {', '.join(self.families)} "
            f"(rate {self.rate}, per {self.granularity}): "
            f"{self.codelength_bits / kbits:.3f} kbits over {len(self.seeds)} seed(s); "
            f"overhead over the best family {self.mean('overhead_bits'):.1f} bits "
            f"(bound {self.mean('bound_bits'):.1f} bits); n = {self.n}\n"
            + self.summary_table().to_string(float_format=lambda v: f"{v:.1f}")
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` restores it."""
        return {
            "kind": "switching_code",
            "unit": "bits",
            "name": self.name,
            "families": list(self.families),
            "n_classes": self.n_classes,
            "n": self.n,
            "ends": list(self.ends),
            "rate": self.rate,
            "granularity": self.granularity,
            "blocks": self.blocks.to_dict(orient="list"),
            "posterior": self.posterior.to_dict(orient="list"),
            "seeds": self.seeds.to_dict(orient="list"),
            "hindsight": self.hindsight.to_dict(orient="list"),
            "codes": [code.to_dict() for code in self.codes],
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> SwitchingCode:
        """The code :meth:`to_dict` wrote."""
        if payload.get("kind") != "switching_code" or payload.get("unit") != "bits":
            raise ValueError("payload is not a switching code in bits")
        return cls(
            name=payload["name"],
            families=tuple(payload["families"]),
            n_classes=int(payload["n_classes"]),
            n=int(payload["n"]),
            ends=tuple(int(e) for e in payload["ends"]),
            rate=payload["rate"],
            granularity=payload["granularity"],
            blocks=pd.DataFrame(payload["blocks"]),
            posterior=pd.DataFrame(payload["posterior"]),
            seeds=pd.DataFrame(payload["seeds"]),
            hindsight=pd.DataFrame(payload["hindsight"]),
            codes=tuple(OnlineCode.from_dict(code) for code in payload["codes"]),
            metadata=payload.get("metadata", {}),
        )

    def plot(self, axes: Any = None) -> Any:
        """Two panels against the labels transmitted (block ends, log x): each family's
        cumulative codelength minus the switching code's (bits; above 0: longer than the
        switching code), mean over seeds, with the bound ``B_0`` dashed (no family's excess
        can fall below ``−B_0``; y linear within ±B_0, logarithmic beyond); and the posterior
        over families after each block (mean over seeds), stacked. Returns the two axes."""
        import matplotlib.pyplot as plt

        if axes is None:
            _, axes = plt.subplots(1, 2, figsize=(10, 3.5))
        excess_ax, posterior_ax = axes
        table = self.blocks.groupby(["code", "block"])["cumulative_bits"].mean().unstack("code")
        ends = np.asarray(self.ends)
        for family in self.families:
            excess_ax.plot(ends, table[family] - table[SWITCHING], marker="o", ms=3, label=family)
        excess_ax.axhline(0, color="black", lw=1, label=SWITCHING)
        excess_ax.axhline(-self.mean("bound_bits"), color="gray", ls="--", lw=1, label="−bound")
        excess_ax.set_xscale("log")
        excess_ax.set_yscale("symlog", linthresh=max(1.0, self.mean("bound_bits")))
        excess_ax.set_xlabel("labels transmitted")
        excess_ax.set_ylabel("cumulative bits − switching code")
        excess_ax.set_title(self.name)
        excess_ax.legend(fontsize="small")
        weights = self.posterior.groupby(["block", "family"])["posterior"].mean().unstack()
        weights = weights[list(self.families)]
        posterior_ax.stackplot(
            ends, weights.to_numpy().T, labels=list(self.families), step="post", alpha=0.8
        )
        posterior_ax.set_xscale("log")
        posterior_ax.set_ylim(0, 1)
        posterior_ax.set_xlabel("labels transmitted")
        posterior_ax.set_ylabel("posterior over families")
        posterior_ax.legend(fontsize="small", loc="lower left")
        return axes


def switching_code(
    codes: Mapping[str, OnlineCode],
    *,
    rate: str | float = SWITCHING_RATE,
    granularity: str = SWITCHING_GRANULARITY,
    max_switches: int = MAX_SWITCHES,
) -> SwitchingCode:
    """The switching code over the online codes ``codes`` (family name → code), each computed
    with ``keep_example_bits=True`` on the same data, blocks, seeds and ``random_state``.

    Args:
        codes: at least one family's online code; the families' names are the keys.
        rate: the switching rate (:func:`~probemeter.mdl.switching.switching_rates`):
            ``"harmonic"`` (α_t = 1/t), a constant α in [0, 1), or 0 (Bayesian mixture).
        granularity: ``"example"`` (rounds are the transmitted labels) or ``"block"``
            (rounds are the online code's blocks).
        max_switches: the hindsight comparison covers sequences with up to this many switches.

    Raises:
        ValueError: no codes, a code without ``example_bits``, codes of different data,
            blocks, seeds, stopping sets or random states, or a bad rate, granularity or
            ``max_switches``.
    """
    one_of(*GRANULARITIES)(granularity, "granularity")
    check_scalar(max_switches, "max_switches", int, min_val=0)
    switching_rates(1, rate)  # validates rate
    families = tuple(codes)
    if not families:
        raise ValueError("codes is empty: give at least one family's online code")
    first = codes[families[0]]
    for family, code in codes.items():
        if code.example_bits is None:
            raise ValueError(
                f"codes[{family!r}] has no example_bits: compute it with "
                "online_codelength(..., keep_example_bits=True)"
            )
        _check_same_blocks(family, code, families[0], first)
    uniform = first.uniform_bits  # n·log2 K, or n·K bits for label sets (K fair coins each)
    tables: dict[str, list[dict[str, Any]]] = {
        name: [] for name in ("blocks", "posterior", "seeds", "hindsight")
    }
    for index, seed in enumerate(first.seeds["seed"].tolist()):
        example_bits = np.column_stack([codes[f].example_bits[index] for f in families])
        rows = _seed_rows(
            example_bits, np.asarray(first.ends), families, rate, granularity, max_switches
        )
        for name, found in rows.items():
            tables[name].extend({"seed": seed, **row} for row in found)
        tables["seeds"][-1].update(
            uniform_bits=uniform, compression=uniform / tables["seeds"][-1]["switching_bits"]
        )
    return SwitchingCode(
        name=first.name,
        families=families,
        n_classes=first.n_classes,
        n=first.n,
        ends=first.ends,
        rate=rate if isinstance(rate, str) else float(rate),
        granularity=granularity,
        blocks=pd.DataFrame(tables["blocks"]),
        posterior=pd.DataFrame(tables["posterior"]),
        seeds=pd.DataFrame(tables["seeds"]),
        hindsight=pd.DataFrame(tables["hindsight"]),
        codes=tuple(_without_example_bits(codes[f]) for f in families),
        metadata={
            "rate": rate if isinstance(rate, str) else float(rate),
            "prior": "fixed share, uniform over families; alpha_t = "
            + ("1/t" if isinstance(rate, str) else f"{float(rate):g}"),
            "granularity": granularity,
            "rounds": first.n if granularity == "example" else len(first.ends),
            "max_switches": max_switches,
            "train_seconds": {f: codes[f].metadata.get("train_seconds") for f in families},
        },
    )


def switching_codelength(
    data: ProbeData,
    families: Sequence[MLP],
    timesteps: Sequence[float] = PAPER_TIMESTEPS,
    seeds: int | Sequence[int] = ONLINE_SEEDS,
    *,
    config: TrainingConfig | None = None,
    stopping_set: str = ONLINE_STOPPING_SET,
    rate: str | float = SWITCHING_RATE,
    granularity: str = SWITCHING_GRANULARITY,
    max_switches: int = MAX_SWITCHES,
    random_state: int = 0,
    execution: Execution | None = None,
    **old: Any,
) -> SwitchingCode:
    """Online codes of ``data``'s labels with every probe family in ``families``, and the
    switching code over them (:func:`switching_code`).

    All families are trained in one engine call
    (:func:`~probemeter.mdl.online.online_codelengths`): every block probe of every seed and
    family at once, over the same blocks, orders and development split (all keyed by
    ``random_state`` and the seed); the engine stacks each family in chunks of its own, which
    share the workers.

    Args:
        data, timesteps, seeds, config, stopping_set, random_state: as in
            :func:`~probemeter.mdl.online.online_codelength`.
        execution: as there.
        families: two or more distinct probe architectures (e.g. ``MLP(())``, ``MLP((256,))``,
            ``MLP((256, 256))``), named by ``MLP.name``.
        rate, granularity, max_switches: as in :func:`switching_code`.

    Raises:
        ValueError: fewer than two families, two with the same name, or anything
            :func:`~probemeter.mdl.online.online_codelength` or :func:`switching_code` refuses.
    """
    check_probe_data(data)
    families = tuple(families)
    names = [family.name for family in families]
    if len(families) < 2 or len(set(names)) != len(names):
        raise ValueError(f"families must be two or more distinct probe architectures; got {names}")
    one_of(*GRANULARITIES)(granularity, "granularity")
    check_scalar(max_switches, "max_switches", int, min_val=0)
    switching_rates(1, rate)
    codes = online_codelengths(
        data,
        families,
        timesteps,
        seeds,
        config=config,
        stopping_set=stopping_set,
        random_state=random_state,
        execution=execution_of(execution, old, "switching_codelength"),
        keep_example_bits=True,
    )
    return switching_code(codes, rate=rate, granularity=granularity, max_switches=max_switches)


def _seed_rows(
    example_bits: np.ndarray,
    ends: np.ndarray,
    families: tuple[str, ...],
    rate: str | float,
    granularity: str,
    max_switches: int,
) -> dict[str, list[dict[str, Any]]]:
    """The rows of one seed's tables (without its ``seed`` column, and its ``seeds`` row
    without the uniform code): the switching code over ``example_bits`` (labels × families,
    in transmission order) at ``granularity``, per block, its posterior after each block, the
    best family and the hindsight comparison."""
    starts = np.concatenate([[0], ends[:-1]])
    block_bits = np.add.reduceat(example_bits, starts, axis=0)
    if granularity == "example":
        losses, last_rounds = example_bits, ends - 1
    else:
        losses, last_rounds = block_bits, np.arange(len(ends))
    forward = switch_forward(losses, rate)
    switching_blocks = forward.round_bits
    if granularity == "example":
        switching_blocks = np.add.reduceat(switching_blocks, starts)
    blocks = []
    for code_name, bits in zip(
        (*families, SWITCHING), (*block_bits.T, switching_blocks), strict=True
    ):
        cumulative = np.cumsum(bits)
        blocks.extend(
            {
                "block": block,
                "start": int(starts[block]),
                "end": int(ends[block]),
                "code": code_name,
                "codelength_bits": float(bits[block]),
                "cumulative_bits": float(cumulative[block]),
            }
            for block in range(len(ends))
        )
    posterior = [
        {"block": block, "family": family, "posterior": float(weight)}
        for block, row in enumerate(forward.posterior[last_rounds])
        for family, weight in zip(families, row, strict=True)
    ]
    totals = block_bits.sum(axis=0)
    best = int(np.argmin(totals))
    switching_bits = forward.total_bits
    summary = {
        "switching_bits": switching_bits,
        "mixture_bits": switch_forward(totals[None, :], 0.0).total_bits,
        "best_family": families[best],
        "best_family_bits": float(totals[best]),
        "worst_family_bits": float(totals.max()),
        "overhead_bits": switching_bits - float(totals[best]),
        "bound_bits": overhead_bound(len(losses), len(families), 0, rate),
    }
    hindsight = []
    for switches, best_bits in enumerate(best_sequences(losses, max_switches)):
        bound = overhead_bound(len(losses), len(families), switches, rate)
        if math.isinf(bound):  # the prior gives such sequences no mass
            break
        hindsight.append(
            {
                "switches": switches,
                "best_bits": float(best_bits),
                "bound_bits": bound,
                "switching_bits": switching_bits,
                "slack_bits": float(best_bits) + bound - switching_bits,
            }
        )
    return {"blocks": blocks, "posterior": posterior, "seeds": [summary], "hindsight": hindsight}


def _check_same_blocks(family: str, code: OnlineCode, reference: str, first: OnlineCode) -> None:
    """Refuse a code whose examples are not the reference code's, example for example."""
    checks = {
        "n_classes": (code.n_classes, first.n_classes),
        "multilabel": (code.multilabel, first.multilabel),
        "n": (code.n, first.n),
        "ends": (code.ends, first.ends),
        "seeds": (code.seeds["seed"].tolist(), first.seeds["seed"].tolist()),
        "stopping_set": (code.stopping_set, first.stopping_set),
        "n_dev": (code.n_dev, first.n_dev),
        "random_state": (code.metadata.get("random_state"), first.metadata.get("random_state")),
        "data_fingerprint": (
            code.metadata.get("data_fingerprint"),
            first.metadata.get("data_fingerprint"),
        ),
    }
    for what, (value, expected) in checks.items():
        if value != expected:
            raise ValueError(
                f"codes[{family!r}] has {what} {value!r} but codes[{reference!r}] has "
                f"{expected!r}: the switching code mixes codes of the same examples in the same "
                "order (same data, timesteps, seeds, stopping set and random_state)"
            )


def _without_example_bits(code: OnlineCode) -> OnlineCode:
    return replace(code, example_bits=None)
