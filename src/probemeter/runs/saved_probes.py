"""The probes a run kept (``save_probes``), read back by representation."""

from __future__ import annotations

from pathlib import Path

from probemeter._io import read_json
from probemeter._method import RUN_NAME
from probemeter.probes.saved import ProbeSet
from probemeter.runs.store import ResultStore

__all__ = ["load_run_probes"]

#: the results file of a folder without ``run.json``
#: (:attr:`~probemeter._method.Method.writes_results_alone`), which then holds the timings
_RESULTS_NAME = "results.json"


def load_run_probes(run_dir: str | Path) -> dict[str, ProbeSet]:
    """The probes of a finished run folder, by representation name.

    Each unit's key is read from the run's timings (``run.json``, or ``results.json`` of a
    folder without it: ``{label: {"key", ...}}``), and its probes from
    ``RUN_DIR/units/<key>.probes.safetensors`` (:meth:`ResultStore.load_probes`). On the
    representation's test set, ``load_run_probes(run)[name].evaluate(X_test, y_test)`` gives
    exactly the stored losses (a curve run's: those of its ``results.json``).

    Raises:
        ValueError: naming the folder or file: no finished run there (no timings), or a unit
            without probes (the run did not save them), or a damaged probes file.
    """
    run_dir = Path(run_dir)
    path = run_dir / RUN_NAME if (run_dir / RUN_NAME).is_file() else run_dir / _RESULTS_NAME
    payload = read_json(path, "run file")
    timings = payload.get("timings") if isinstance(payload, dict) else None
    if not isinstance(timings, dict):
        raise ValueError(
            f"{str(path)!r} records no units (no timings): not a run folder of probemeter run"
        )
    store = ResultStore(run_dir)
    return {
        label: store.load_probes(entry.get("key") if isinstance(entry, dict) else None)
        for label, entry in timings.items()
    }
