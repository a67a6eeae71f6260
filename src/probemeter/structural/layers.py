"""Structural probes on every layer of a model: UUAS, DSpr., root accuracy and NSpr. per layer
(Hewitt & Manning 2019, Figure 2 and Table 1), as one frozen result with a table and a figure.

Each layer's rank is chosen on the development sentences held out of the pool
(:meth:`~probemeter.structural.family.StructuralFamily.best_rank`), the same sentences for
every layer, and the scores reported at it are the test sentences'.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from probemeter._io import JsonResult
from probemeter._tables import render_table
from probemeter.structural.defaults import STRUCTURAL_RANKS, STRUCTURAL_SEEDS
from probemeter.structural.family import StructuralFamily, structural_families
from probemeter.structural.training import StructuralTraining
from probemeter.structural.trees import HOLDOUT, TreeData, sentence_split
from probemeter.training.config import config_or_default

__all__ = ["StructuralLayers", "structural_layers"]


@dataclass(frozen=True)
class StructuralLayers(JsonResult):
    """Distance and depth probe families, one pair per layer (or any named representation).

    Attributes:
        families: per layer name, its distance family then its depth family.
    """

    families: tuple[tuple[str, StructuralFamily, StructuralFamily], ...]

    def table(self) -> pd.DataFrame:
        """One row per layer: at each probe kind's rank chosen on the development sentences
        (:meth:`StructuralFamily.best_rank`: highest mean development UUAS, resp. root
        accuracy), the test ``uuas``, ``dspr``, ``root_accuracy``, ``nspr``, the ranks chosen,
        and the test codelengths (nats) of both probes at those ranks."""
        rows = []
        for layer, distance, depth in self.families:
            near = distance.summary()
            deep = depth.summary()
            best_distance = distance.best_rank()
            best_depth = depth.best_rank()
            rows.append(
                {
                    "layer": layer,
                    "uuas": near.loc[best_distance, "uuas"],
                    "dspr": near.loc[best_distance, "spearman"],
                    "distance_rank": best_distance,
                    "distance_nats": near.loc[best_distance, "codelength"],
                    "root_accuracy": deep.loc[best_depth, "root_accuracy"],
                    "nspr": deep.loc[best_depth, "spearman"],
                    "depth_rank": best_depth,
                    "depth_nats": deep.loc[best_depth, "codelength"],
                }
            )
        return pd.DataFrame(rows).set_index("layer")

    @property
    def rank_chosen_on(self) -> str:
        """Which sentences chose the ranks, and which scored them, in words."""
        first = self.families[0][1]
        return (
            f"Ranks chosen on {first.rank_chosen_on} (highest mean UUAS, resp. root accuracy); "
            f"scores on the {first.n_test} test sentences."
        )

    def format(self, fmt: str = "markdown") -> str:
        """:meth:`table` as a paper table (``"markdown"``, ``"latex"``, ``"html"`` or
        ``"text"``): UUAS, DSpr., root accuracy and NSpr. per layer, with the ranks chosen, and
        a last line saying which sentences chose them (:attr:`rank_chosen_on`)."""
        header = ["layer", "UUAS", "DSpr.", "rank", "root acc.", "NSpr.", "rank"]
        rows = [
            [
                str(row.Index),
                f"{row.uuas:.3f}",
                f"{row.dspr:.3f}",
                str(row.distance_rank),
                f"{row.root_accuracy:.3f}",
                f"{row.nspr:.3f}",
                str(row.depth_rank),
            ]
            for row in self.table().itertuples()
        ]
        return render_table(header, rows, fmt, footer=self.rank_chosen_on)

    def __str__(self) -> str:
        return self.format("text")

    def to_frame(self) -> pd.DataFrame:
        """Every probe of every layer, tidy (one row per probe)."""
        return pd.concat(
            [f.to_frame().assign(layer=layer) for layer, *pair in self.families for f in pair],
            ignore_index=True,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "families": [
                {"layer": layer, "distance": a.to_dict(), "depth": b.to_dict()}
                for layer, a, b in self.families
            ]
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> StructuralLayers:
        return cls(
            tuple(
                (
                    entry["layer"],
                    StructuralFamily.from_dict(entry["distance"]),
                    StructuralFamily.from_dict(entry["depth"]),
                )
                for entry in payload["families"]
            )
        )

    def plot(self, axes: Any = None) -> Any:
        """Two panels against the layer: UUAS and DSpr. (distance probe), root accuracy and
        NSpr. (depth probe), at each layer's best rank. Returns the matplotlib figure."""
        import matplotlib.pyplot as plt

        table = self.table()
        if axes is None:
            figure, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharex=True)
        else:
            figure = axes[0].figure
        positions = np.arange(len(table))
        for ax, pairs, title in (
            (axes[0], (("uuas", "UUAS"), ("dspr", "DSpr.")), "distance probe"),
            (axes[1], (("root_accuracy", "root accuracy"), ("nspr", "NSpr.")), "depth probe"),
        ):
            for column, label in pairs:
                ax.plot(positions, table[column], marker="o", label=label)
            ax.set_title(title)
            ax.set_xticks(positions, [str(layer) for layer in table.index])
            ax.set_xlabel("layer")
            ax.set_ylim(0, 1)
            ax.legend(frameon=False, loc="lower right")
        return figure


def structural_layers(
    layers: Mapping[str, object] | Sequence[object],
    trees: TreeData,
    *,
    ranks: Sequence[int] = STRUCTURAL_RANKS,
    seeds: int = STRUCTURAL_SEEDS,
    test_size: float = 0.2,
    config: StructuralTraining | None = None,
    holdout: float = HOLDOUT,
    n_jobs: int | None = 1,
) -> StructuralLayers:
    """Distance and depth probe families on each layer's features, all on one sentence split
    and one development share ``holdout`` of the pool, every probe of every layer trained
    together (:func:`~probemeter.structural.family.structural_families`). ``layers``
    maps a layer's name to its (n_words, d) features, or is a sequence (names ``0, 1, …``),
    e.g. a (n_layers, n_words, d) array; ``n_jobs`` worker processes share the training."""
    config = config_or_default(config, StructuralTraining())
    named = dict(layers) if isinstance(layers, Mapping) else dict(enumerate(layers))
    if not named:
        raise ValueError("layers is empty; give at least one layer's features")
    split = sentence_split(trees.n_sentences, test_size, config.random_state)
    trained = structural_families(
        list(named.values()),
        trees,
        ("distance", "depth"),
        ranks=ranks,
        seeds=seeds,
        split=split,
        config=config,
        names=[f"layer {layer}" for layer in named],
        holdout=holdout,
        n_jobs=n_jobs,
    )
    families = [
        (str(layer), pair["distance"], pair["depth"]) for layer, pair in zip(named, trained)
    ]
    return StructuralLayers(tuple(families))
