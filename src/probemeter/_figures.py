"""Figures as a paper wants them: saved in the formats asked for (PNG for screens, PDF or SVG for
papers) at a chosen resolution, one legend for the whole figure, and colours that show order
where the representations have one (the layers of a model) and stay distinct where they do not.

matplotlib is imported inside the functions that draw, so importing this module is cheap.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probemeter._validation import check_scalar

__all__ = [
    "DEFAULT_DPI",
    "DEFAULT_FORMATS",
    "FIGURE_FORMATS",
    "FigureOptions",
    "representation_colours",
    "shared_legend",
]

#: the formats a figure can be saved in
FIGURE_FORMATS = ("png", "pdf", "svg")
#: PNG for the report and screens, PDF for papers
DEFAULT_FORMATS = ("png", "pdf")
DEFAULT_DPI = 150

#: a representation named NAME-<layer>: one layer of a model (a layer sweep)
_LAYER_NAME = re.compile(r"^(?P<model>.+)-(?P<layer>\d+)$")
#: sequential colormaps for the layers of the first, second, ... model of a figure, each with
#: the part used (the palest ends are hard to see on white): the first perceptually uniform,
#: the others single hues, so two models' layers never look alike
_SEQUENTIAL = (("viridis", 0.0, 0.85), ("Oranges", 0.35, 0.95), ("Reds", 0.35, 0.95))
_SEQUENTIAL += (("Greys", 0.35, 0.95),)


@dataclass(frozen=True)
class FigureOptions:
    """How figures are saved: every one of ``formats`` (of :data:`FIGURE_FORMATS`), raster
    formats at ``dpi`` dots per inch.

    Raises:
        ValueError: an unknown or repeated format, no format, or a dpi outside [10, 2400].
    """

    formats: tuple[str, ...] = DEFAULT_FORMATS
    dpi: int = DEFAULT_DPI

    def __post_init__(self) -> None:
        formats = tuple(self.formats)
        unknown = [f for f in formats if f not in FIGURE_FORMATS]
        if not formats or unknown or len(set(formats)) != len(formats):
            raise ValueError(
                f"figure formats must be distinct ones of {list(FIGURE_FORMATS)}; got "
                f"{list(formats)}"
            )
        object.__setattr__(self, "formats", formats)
        check_scalar(self.dpi, "dpi", int, min_val=10, max_val=2400)

    def save(self, figure: Any, stem: str | Path) -> tuple[Path, ...]:
        """Save ``figure`` as ``stem.<format>`` for every format, each atomically (a temporary
        file in the same folder, created if missing, renamed), then close it. Returns the
        paths, in format order."""
        import matplotlib.pyplot as plt

        stem = Path(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        paths = []
        for fmt in self.formats:
            path = stem.with_name(f"{stem.name}.{fmt}")
            handle, temporary = tempfile.mkstemp(
                dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
            )
            os.close(handle)
            try:
                figure.savefig(temporary, format=fmt, dpi=self.dpi, bbox_inches="tight")
                os.replace(temporary, path)
            finally:
                Path(temporary).unlink(missing_ok=True)
            paths.append(path)
        plt.close(figure)
        return tuple(paths)

    @property
    def embeddable(self) -> str | None:
        """The format an HTML page can show (PNG, else SVG), or None (PDF only)."""
        return next((fmt for fmt in ("png", "svg") if fmt in self.formats), None)


def representation_colours(names: Sequence[str]) -> dict[str, Any]:
    """A colour per representation, none repeated: the layers of one model (two or more names
    ``MODEL-<layer>``) take shades of a sequential colormap in layer order (one colormap per
    model: viridis, then Oranges, Reds, Greys), so depth reads as a gradient; every other
    representation takes the next colour of a qualitative palette (tab10, then tab20, then
    evenly spaced hues when there are more)."""
    import matplotlib

    models: dict[str, list[tuple[int, str]]] = {}
    for name in names:
        match = _LAYER_NAME.match(name)
        if match:
            models.setdefault(match["model"], []).append((int(match["layer"]), name))
    ordered = {model: members for model, members in models.items() if len(members) >= 2}
    colours: dict[str, Any] = {}
    for index, members in enumerate(ordered.values()):
        name, low, high = _SEQUENTIAL[index % len(_SEQUENTIAL)]
        colormap = matplotlib.colormaps[name]
        for rank, (_, name) in enumerate(sorted(members)):
            share = rank / (len(members) - 1)
            colours[name] = colormap(low + share * (high - low))
    others = [name for name in dict.fromkeys(names) if name not in colours]
    palette = _qualitative(len(others))
    colours.update(zip(others, palette))
    return {name: colours[name] for name in dict.fromkeys(names)}


def _qualitative(count: int) -> list[Any]:
    """``count`` distinct colours: tab10's, tab20's, or evenly spaced hues."""
    import matplotlib

    if count <= 10:
        return [matplotlib.colormaps["tab10"](i) for i in range(count)]
    if count <= 20:
        return [matplotlib.colormaps["tab20"](i) for i in range(count)]
    return [matplotlib.colormaps["hsv"](i / count) for i in range(count)]


def shared_legend(figure: Any, axes: Sequence[Any], *, columns: int | None = None) -> Any:
    """One legend for ``axes`` (each label once, e.g. a representation drawn in every panel,
    or the ε line), below the panels of ``figure``. Returns it (None without labels)."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if not label.startswith("_"):
                handles.setdefault(label, handle)
    if not handles:
        return None
    columns = columns or min(len(handles), 5)
    return figure.legend(
        list(handles.values()),
        list(handles),
        loc="outside lower center",
        ncols=columns,
        fontsize="small",
        frameon=False,
    )
