"""The tutorials' figures and tables, computed when the site is built.

Each tutorial has a small experiment file ``docs/tutorials/experiments/<name>.toml`` (shown in
the page and copied into the site). Building the site runs each
through :func:`probemeter.run_experiment`, as ``probemeter run`` would, into a temporary
folder, and takes the figures (PNG), tables (Markdown) and HTML report the run wrote: nothing
is cached in the repository. The experiments are small versions of the papers'.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("mkdocs.plugins.probemeter")

#: the folder of the tutorials' experiment files
EXPERIMENTS = Path(__file__).resolve().parent.parent / "tutorials" / "experiments"


@dataclass(frozen=True)
class Tutorial:
    """One tutorial's experiment and what the page shows of its run folder."""

    name: str
    #: run-folder files (PNG figures) embedded in the page as ``figures/<name>-<file>``
    figures: tuple[str, ...]
    #: run-folder files (Markdown tables) a page includes with ``<!-- run:<name>/<file> -->``;
    #: ``<!-- run:<name>/output -->`` is what ``probemeter run`` prints
    tables: tuple[str, ...] = ("table.md",)


TUTORIALS = (
    Tutorial("whitney", ("curves.png",)),
    Tutorial("voita-titov", ("mdl.png", "layers.png"), ("table.md", "layers.md")),
    Tutorial("zhu", ("power.png",)),
    Tutorial("pimentel", ("frontiers.png",)),
)


@dataclass
class Outputs:
    """What the runs produced: figure (and report) bytes by site path, table text by
    ``<name>/<file>``, and each run's wall time in seconds."""

    figures: dict[str, bytes] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


@contextmanager
def _one_torch_thread() -> Iterator[None]:
    """Torch on one intra-op thread inside the block: on a busy two-core machine its two
    threads wait on each other (the Pareto run took 138 s with two, 17 s with one, under a
    load of 6)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def run_tutorials(tutorials: tuple[Tutorial, ...] = TUTORIALS) -> Outputs:
    """Run every tutorial's experiment file (one worker process, one torch thread, no
    progress bars), write its report as ``probemeter run`` does, and collect its figures,
    tables and report."""
    import probemeter as pm
    from probemeter.runs.html_report import write_report

    outputs = Outputs()
    with _one_torch_thread(), tempfile.TemporaryDirectory(prefix="probemeter-docs-") as out:
        for tutorial in tutorials:
            start = time.perf_counter()
            experiment = pm.load_experiment(EXPERIMENTS / f"{tutorial.name}.toml")
            run = pm.run_experiment(experiment, out, n_jobs=1, progress=False)
            run_dir = Path(run.run_dir)
            write_report(run_dir)  # report.html and, for curves, table.md
            report = f"tutorials/reports/{tutorial.name}.html"
            outputs.figures[report] = (run_dir / "report.html").read_bytes()
            for name in tutorial.figures:
                path = f"tutorials/figures/{tutorial.name}-{name}"
                outputs.figures[path] = (run_dir / name).read_bytes()
            for name in tutorial.tables:
                text = (run_dir / name).read_text(encoding="utf-8")
                outputs.tables[f"{tutorial.name}/{name}"] = text.strip()
            outputs.tables[f"{tutorial.name}/output"] = run.table.strip()
            outputs.seconds[tutorial.name] = time.perf_counter() - start
            log.info("tutorial %s: ran in %.1f s", tutorial.name, outputs.seconds[tutorial.name])
    return outputs
