"""Tables and figures of MDL probing in the layout of Voita & Titov (2020).

* :func:`mdl_table`: Table 2 — rows are representations (layers); columns accuracy, variational
  codelength and compression, online codelength and compression, each cell a
  "linguistic / control" pair; codelengths in kbits of 1024 bits
  (:data:`~probemeter.mdl.online.BITS_PER_KBIT`), the paper's unit (n·log2 K ÷ (compression ×
  codelength) over the cells of its Tables 2 and 6 is 1021–1025).
* :func:`mdl_figure`: Fig. 2 a–c — data vs model code as stacked bars for the variational and
  the online code, and the online-code learning curves (solid: task, dashed: control).
* :func:`save_mdl_results` / :func:`load_mdl_results`: every code of a run as one JSON file.

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probemeter._figures import representation_colours, shared_legend
from probemeter._io import environment, write_json_atomic
from probemeter._tables import classes_line, render_table
from probemeter._validation import one_of
from probemeter.mdl.online import BITS_PER_KBIT, OnlineCode
from probemeter.mdl.variational import VariationalCode

__all__ = [
    "SCHEMA",
    "MDLEntry",
    "load_mdl_results",
    "mdl_figure",
    "mdl_frame",
    "mdl_frames",
    "mdl_table",
    "save_mdl_results",
]

SCHEMA = "probemeter.mdl/1"
_FORMATS = ("markdown", "text", "latex")


@dataclass(frozen=True)
class MDLEntry:
    """The codes of one representation for a task and (optionally) its control task."""

    name: str
    online: OnlineCode | None = None
    control_online: OnlineCode | None = None
    variational: VariationalCode | None = None
    control_variational: VariationalCode | None = None

    def codes(self) -> dict[str, OnlineCode | VariationalCode]:
        """The codes present, by role."""
        roles = ("online", "control_online", "variational", "control_variational")
        return {role: getattr(self, role) for role in roles if getattr(self, role) is not None}


def mdl_frame(entries: Sequence[MDLEntry]) -> pd.DataFrame:
    """One row per representation; means over seeds; codelengths in kbits (1024 bits,
    :data:`~probemeter.mdl.online.BITS_PER_KBIT`, as in the paper's Table 2).

    Columns (NaN where a code is absent): ``accuracy`` and ``control_accuracy`` (test accuracy
    of the standard probe trained on all data, from the online code; else of the variational
    probe), ``selectivity``, and for ``code`` in (variational, online) and role in ("", control):
    ``{role_}{code}_kbits``, ``{role_}{code}_kbits_std``, ``{role_}{code}_compression``,
    ``{role_}{code}_model_kbits``, ``{role_}{code}_data_kbits``; ``architecture`` and
    ``control_architecture`` (pruned variational probes, first seed); ``stopping_set`` and
    ``control_stopping_set`` (where the online code's probes early-stopped:
    :attr:`OnlineCode.stopping_set`; empty without an online code); ``micro_f1`` and
    ``control_micro_f1`` (the full-data probe's test micro-F1, for label sets: the accuracy
    is then the exact-set-match rate).
    """
    kbits = BITS_PER_KBIT
    rows = []
    for entry in entries:
        row: dict[str, Any] = {"representation": entry.name}
        for prefix in ("", "control_"):
            online = getattr(entry, f"{prefix}online")
            variational = getattr(entry, f"{prefix}variational")
            for kind, code, total in (
                ("online", online, "online_bits"),
                ("variational", variational, "codelength_bits"),
            ):
                present = code is not None
                row[f"{prefix}{kind}_kbits"] = code.mean(total) / kbits if present else np.nan
                row[f"{prefix}{kind}_kbits_std"] = code.std(total) / kbits if present else np.nan
                row[f"{prefix}{kind}_compression"] = code.compression if present else np.nan
                for part in ("model", "data"):
                    value = code.mean(f"{part}_bits") / kbits if present else np.nan
                    row[f"{prefix}{kind}_{part}_kbits"] = value
            source = online if online is not None else variational
            row[f"{prefix}accuracy"] = source.mean("accuracy") if source is not None else np.nan
            row[f"{prefix}architecture"] = (
                variational.seeds["architecture"].iloc[0] if variational is not None else ""
            )
            row[f"{prefix}stopping_set"] = online.stopping_set if online is not None else ""
            labelled_sets = online is not None and online.multilabel
            row[f"{prefix}micro_f1"] = online.mean("micro_f1") if labelled_sets else np.nan
        row["selectivity"] = row["accuracy"] - row["control_accuracy"]
        rows.append(row)
    return pd.DataFrame(rows).set_index("representation")


def mdl_frames(entries: Sequence[MDLEntry]) -> dict[str, pd.DataFrame]:
    """The tables of an MDL run, by name: ``mdl``, one row per representation
    (:func:`mdl_frame`, its index as the ``representation`` column); ``online``, every block
    of every online code (:meth:`OnlineCode.to_frame`, in bits), and ``variational``, every
    seed of every variational code (:meth:`VariationalCode.to_frame`, in bits), each with a
    ``task`` column: ``"task"`` or ``"control"`` (Voita & Titov §3.1). A kind of code that no
    entry has gives no table."""
    frames = {"mdl": mdl_frame(entries).reset_index()}
    for code in ("online", "variational"):
        parts = [
            getattr(entry, f"{prefix}{code}").to_frame().assign(task=task)
            for entry in entries
            for prefix, task in (("", "task"), ("control_", "control"))
            if getattr(entry, f"{prefix}{code}") is not None
        ]
        if parts:
            frames[code] = pd.concat(parts, ignore_index=True)
    return frames


def mdl_table(entries: Sequence[MDLEntry], fmt: str = "markdown") -> str:
    """Table 2 of Voita & Titov: "task / control" pairs; accuracy in % (for label sets, the
    exact-set-match rate, with the micro-F1 beside it), codelengths in kbits
    (1024 bits, the paper's unit), the online code's standard deviation over data orders (when
    there are several, Fig. 2d) and the pruned variational probes; under it, one line with the
    original labels of the class indices when the codes recorded them (``classes``).

    Args:
        fmt: ``"markdown"``, ``"text"`` (aligned plain text) or ``"latex"``.
    """
    one_of(*_FORMATS)(fmt, "fmt")
    frame = mdl_frame(entries)

    def pair(column: str, scale: float, digits: int) -> pd.Series:
        def cell(task: float, control: float) -> str:
            parts = [f"{v * scale:.{digits}f}" for v in (task, control) if not np.isnan(v)]
            return " / ".join(parts) if parts else "-"

        return pd.Series(
            [cell(a, b) for a, b in zip(frame[column], frame[f"control_{column}"])],
            index=frame.index,
        )

    table = pd.DataFrame(
        {
            "accuracy (%)": pair("accuracy", 100, 1),
            "micro-F1 (%)": pair("micro_f1", 100, 1),
            "variational (kbits)": pair("variational_kbits", 1, 2),
            "var. compression": pair("variational_compression", 1, 2),
            "online (kbits)": pair("online_kbits", 1, 2),
            "online compression": pair("online_compression", 1, 2),
            "online s.d. over seeds (kbits)": pair("online_kbits_std", 1, 2),
            "pruned probe": [
                " / ".join(p for p in (a, b) if p)
                for a, b in zip(frame["architecture"], frame["control_architecture"])
            ],
        }
    )
    spread = frame[["online_kbits_std", "control_online_kbits_std"]].fillna(0.0)
    if not spread.to_numpy().any():  # one seed: no spread to show
        table = table.drop(columns="online s.d. over seeds (kbits)")
    table = table.loc[:, (table != "-").any() & (table != "").any()]
    header = ["representation", *table.columns]
    rows = [[str(name), *cells] for name, cells in zip(table.index, table.to_numpy().tolist())]
    footer = classes_line(code.classes for entry in entries for code in entry.codes().values())
    return render_table(header, rows, fmt, footer=footer)


def mdl_figure(entries: Sequence[MDLEntry]) -> Any:
    """Fig. 2 a–c of Voita & Titov: per code computed (variational, online), the codelength of
    every representation split into data and model code as stacked bars (task left, control
    task right and hatched), and the online learning curves (accuracy of each block's probe
    on the next block, solid for the task, dashed for the control task). Every representation
    keeps its colour (:func:`~probemeter._figures.representation_colours`) in the learning
    curves; one legend below. Returns the matplotlib figure."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    frame = mdl_frame(entries)
    codes = [
        kind for kind in ("variational", "online") if frame[f"{kind}_data_kbits"].notna().any()
    ]
    figure = Figure(figsize=(5.2 * (len(codes) + 1), 4.6), layout="constrained")
    axes = figure.subplots(1, len(codes) + 1, squeeze=False)[0]
    positions = np.arange(len(frame))
    for ax, kind in zip(axes, codes):
        for offset, prefix, hatch in ((-0.2, "", None), (0.2, "control_", "//")):
            data = frame[f"{prefix}{kind}_data_kbits"].to_numpy()
            model = frame[f"{prefix}{kind}_model_kbits"].to_numpy()
            if np.all(np.isnan(data)):
                continue
            ax.bar(positions + offset, data, 0.38, color="C0", hatch=hatch)
            ax.bar(positions + offset, model, 0.38, bottom=data, color="C1", hatch=hatch)
        ax.set_xticks(positions, frame.index, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel("codelength (kbits of 1024 bits)")
        ax.set_title(f"{kind} code: data + model codelength", fontsize=10)
    colours = representation_colours([entry.name for entry in entries])
    curves = axes[-1]
    for entry in entries:
        for code, style in ((entry.online, "-"), (entry.control_online, "--")):
            if code is not None:
                label = entry.name if style == "-" else "_control"
                code.plot(curves, label=label, color=colours[entry.name], ls=style)
    curves.set_title("online code: accuracy of each block's probe on the next block", fontsize=10)
    shared_legend(figure, [curves])
    keys = [Patch(color="C0", label="data code"), Patch(color="C1", label="model code")]
    keys += [Patch(facecolor="white", edgecolor="0.3", hatch="//", label="control task (bars)")]
    keys += [Line2D([], [], color="0.3", ls="--", label="control task (curves)")]
    axes[0].legend(handles=keys, fontsize=7, loc="upper left")
    return figure


def save_mdl_results(
    path: str | Path, entries: Sequence[MDLEntry], extra: dict[str, Any] | None = None
) -> None:
    """Write every code of ``entries`` to ``path`` as JSON (schema ``probemeter.mdl/1``,
    all codelengths in bits), atomically; ``extra`` (JSON-ready) is stored under ``"run"``.
    Every online code records its ``stopping_set`` (and ``n_dev``)."""
    payload = {
        "schema": SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": environment(),
        "entries": [
            {"name": entry.name, **{role: code.to_dict() for role, code in entry.codes().items()}}
            for entry in entries
        ],
        "run": extra or {},
    }
    write_json_atomic(path, payload)


def load_mdl_results(path: str | Path) -> list[MDLEntry]:
    """Read the entries written by :func:`save_mdl_results`.

    Raises:
        ValueError: not a ``probemeter.mdl/1`` file.
    """
    payload = json.loads(Path(path).read_text())
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA:
        raise ValueError(f"{str(path)!r} is not a {SCHEMA} file")
    entries = []
    for item in payload["entries"]:
        codes = {
            role: (OnlineCode if "online" in role else VariationalCode).from_dict(item[role])
            for role in ("online", "control_online", "variational", "control_variational")
            if role in item
        }
        entries.append(MDLEntry(item["name"], **codes))
    return entries
