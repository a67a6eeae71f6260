"""The ``switching`` method: every probe family's online code of each representation and the
switching code over them: fixed share with switching rate α_t = 1/t (Herbster & Warmuth 1998;
not van Erven, Grünwald & de Rooij's switch distribution, see :mod:`probemeter.mdl.switching`).

One stored unit per representation (a :class:`~probemeter.mdl.switching_code.SwitchingCode`);
the run folder gets ``results.json`` (schema ``probemeter.switching/1``, bits), ``table.md`` /
``table.tex`` (each family's online code, the Bayesian mixture and the switching code in kbits
of 1024 bits; the best family; the switching code's overhead over it and the bound B_0 in bits)
and ``switching.png`` (per representation: cumulative bits against the switching code's, and
the posterior over families after each block).

References:
    Herbster, M. & Warmuth, M. K. (1998). Tracking the best expert. *Machine Learning* 32(2),
    151–178. doi:10.1023/A:1007424614876

    van Erven, T., Grünwald, P. & de Rooij, S. (2012). Catching up faster by switching sooner.
    *Journal of the Royal Statistical Society: Series B* 74(3). doi:10.1111/j.1467-9868.2011.01025.x
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from probemeter import _validation as valid
from probemeter._execution import Execution
from probemeter._figures import FigureOptions
from probemeter._method import (
    ENGINE_KEYWORDS,
    MethodRun,
    RunContext,
    UnitPlan,
    option,
    write_run_files,
)
from probemeter._summary import POOL_SELECTION, Estimate, Headline, Summary
from probemeter.data import ProbeData
from probemeter.mdl.defaults import MAX_SWITCHES, SWITCHING_GRANULARITY, SWITCHING_RATE
from probemeter.mdl.method import OnlineCodeMethod, online_option

__all__ = [
    "MAX_SWITCHES",
    "SCHEMA",
    "SWITCHING_GRANULARITY",
    "SWITCHING_RATE",
    "SwitchingMethod",
    "family_widths",
    "switching_unit",
]

#: the schema of a switching run's ``results.json``
SCHEMA = "probemeter.switching/1"

#: kbits of the tables, as the MDL tables (Voita & Titov's unit)
_KBIT = 1024


def family_widths(spec: str) -> tuple[int, ...]:
    """A family as written in an experiment file: ``"linear"`` (no hidden layer) or hidden
    widths joined by ``x`` (``"64"``, ``"256x256"``).

    Raises:
        ValueError: anything else.
    """
    if spec == "linear":
        return ()
    parts = str(spec).split("x")
    if not all(part.isdigit() and int(part) >= 1 for part in parts):
        raise ValueError(
            f"a probe family is 'linear' or hidden widths joined by 'x' (e.g. '64x64'); "
            f"got {spec!r}"
        )
    return tuple(int(part) for part in parts)


def _families(value: Any) -> str | None:
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        return f"must be a list of two or more probe families; got {value!r}"
    try:
        widths = [family_widths(spec) for spec in value]
    except ValueError as error:
        return f"must hold probe families: {error}"
    if len(set(widths)) != len(widths):
        return f"must hold distinct probe families; got {value!r}"
    return None


def _parse_rate(value: Any) -> str | float:
    """``"harmonic"``, or the constant rate as a float (from a number or, on the command line,
    its text); the value as written otherwise (for :func:`_rate` to refuse)."""
    if value == "harmonic" or isinstance(value, bool):
        return value
    if not isinstance(value, str) and not valid.is_number(value):
        return value
    try:
        return float(value)
    except (ValueError, OverflowError):  # not a number, or an integer beyond floats
        return value


def _rate(value: Any) -> str | None:
    rate = _parse_rate(value)
    if rate == "harmonic" or (isinstance(rate, float) and 0 <= rate < 1):
        return None
    return f'must be "harmonic" (alpha_t = 1/t) or a number in [0, 1); got {value!r}'


@dataclass(frozen=True)
class SwitchingMethod(OnlineCodeMethod):
    """``[method] kind = "switching"``: a switching code over probe families' online codes."""

    families: tuple[str, ...] = option(
        ("linear", "64", "64x64"),
        check=valid.Check(_families),
        help='probe families: "linear" or hidden widths joined by x ("64", "64x64")',
    )
    seeds: int = online_option("seeds")
    timesteps: tuple[float, ...] = online_option("timesteps")
    rate: str | float = option(
        SWITCHING_RATE,
        check=valid.Check(_rate),
        parse=_parse_rate,
        help='switching rate: "harmonic" (alpha_t = 1/t), a constant in [0, 1), 0: no switching',
    )
    granularity: str = option(
        SWITCHING_GRANULARITY,
        check=valid.one_of("example", "block"),
        help="rounds of the switching code: every label, or every online-code block",
    )
    max_switches: int = option(
        MAX_SWITCHES,
        check=valid.integer(0),
        help="best sequences in hindsight with up to this many switches",
    )
    batch_size: int = online_option("batch_size")
    lr: float = online_option("lr")
    max_epochs: int = online_option("max_epochs")
    stopping_set: str = online_option("stopping_set")

    kind = "switching"
    mixes_layers = True
    pools_spans = True
    summary = (
        "switching code over probe families' online codes (Voita & Titov): fixed share, "
        "α_t = 1/t (Herbster & Warmuth), bits"
    )

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        return self.per_representation(datasets, switching_unit, context.keywords(*ENGINE_KEYWORDS))

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

        codes = _codes(results)
        write_json_atomic(
            run_dir / "results.json",
            {
                "schema": SCHEMA,
                "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "versions": environment(),
                "codes": [code.to_dict() for code in codes],
                "run": extra,
            },
        )
        figure, axes = plt.subplots(len(codes), 2, figsize=(10, 3.2 * len(codes)), squeeze=False)
        for row, code in zip(axes, codes, strict=True):
            code.plot(row)
        figure.tight_layout()
        figure_files = figures.save(figure, run_dir / "switching")
        tables = (
            switching_table(codes, "text"),
            switching_table(codes, "markdown"),
            switching_table(codes, "latex"),
        )
        frames = {
            name: pd.concat(
                [getattr(code, name).assign(representation=code.name) for code in codes],
                ignore_index=True,
            )
            for name in ("blocks", "posterior", "seeds", "hindsight")
        }
        files = (run_dir / "results.json", *figure_files)
        return write_run_files(
            self,
            run_dir,
            tables,
            files,
            extra,
            {f"switching_{name}": frame for name, frame in frames.items()},
        )

    def headlines(self) -> tuple[Headline, ...]:
        """The switching codelength (ranks) and the best family's, in kbits of 1024 bits, in
        one panel (the best family dashed); the switching code's compression."""
        panel = "codelength (kbits)"
        return (
            Headline("switching_codelength", "switching codelength (kbits)", "lower", panel),
            Headline(
                "best_family_codelength",
                "best family's online codelength (kbits)",
                "lower",
                panel,
                dashed=True,
            ),
            Headline("switching_compression", "switching compression", "higher", "compression"),
        )

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per representation: the headlines over seeds, and the test accuracy and correctness
        of the probes trained on all data of the family with the shortest mean online code."""
        found = {}
        for code in _codes(results):
            seeds = code.seeds
            best = code.codes[int(np.argmin([c.codelength_bits for c in code.codes]))]
            estimates = {
                "switching_codelength": Estimate.over_seeds(seeds["switching_bits"] / _KBIT),
                "best_family_codelength": Estimate.over_seeds(seeds["best_family_bits"] / _KBIT),
                "switching_compression": Estimate.over_seeds(seeds["compression"]),
            }
            found[code.name] = Summary(
                estimates,
                Estimate.over_seeds(best.seeds["accuracy"].tolist()),
                best.test_correct,
                tuple(best.metadata["probe"]["hidden"]),
                best.metadata.get("n_features"),
                best.n_classes,
                selection=estimates,
                selection_split=POOL_SELECTION,
            )
        return found


def _codes(results: Sequence[Mapping[str, Any]]) -> list[Any]:
    from probemeter.mdl.switching_code import SwitchingCode

    return [SwitchingCode.from_dict(dict(result)) for result in results]


def switching_table(codes: Sequence[Any], fmt: str = "markdown") -> str:
    """One row per representation: each family's online code, the Bayesian mixture and the
    switching code (kbits of 1024 bits, means over seeds), the best family in hindsight (the
    most frequent over seeds), the switching code's overhead over it and the bound B_0 (bits),
    in ``fmt`` (:func:`probemeter._tables.render_table`)."""
    from probemeter._tables import render_table

    families = list(dict.fromkeys(f for code in codes for f in code.families))
    header = [
        "representation",
        *(f"{family} kbits" for family in families),
        "mixture kbits",
        "switching kbits",
        "best family",
        "switching − best (bits)",
        "bound B0 (bits)",
    ]
    rows = []
    for code in codes:
        table = code.summary_table()["bits"]
        rows.append(
            [
                code.name,
                *(
                    f"{table[family] / _KBIT:.3f}" if family in table else "–"
                    for family in families
                ),
                f"{table['mixture (no switching)'] / _KBIT:.3f}",
                f"{table['switching'] / _KBIT:.3f}",
                str(code.seeds["best_family"].mode().iloc[0]),
                f"{code.mean('overhead_bits'):.1f}",
                f"{code.mean('bound_bits'):.1f}",
            ]
        )
    align = "l" + "r" * (len(families) + 2) + "l" + "rr"
    return render_table(header, rows, fmt, align=align)


def switching_unit(
    data: ProbeData,
    *,
    method: SwitchingMethod,
    random_state: int,
    execution: Execution,
) -> dict[str, Any]:
    """Every family's online code of ``data`` and the switching code over them, as the JSON
    of a :class:`~probemeter.mdl.switching_code.SwitchingCode`."""
    from probemeter.mdl.switching_code import switching_codelength
    from probemeter.probes import probe_for

    return switching_codelength(
        data,
        [probe_for(data, family_widths(spec)) for spec in method.families],
        method.timesteps,
        method.seeds,
        config=method.training(),
        stopping_set=method.stopping_set,
        rate=method.rate,
        granularity=method.granularity,
        max_switches=method.max_switches,
        random_state=random_state,
        execution=execution,
    ).to_dict()
