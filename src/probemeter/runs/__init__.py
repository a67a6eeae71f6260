"""Experiment files run into folders: the TOML reader, building each representation's data, the
runner with resumable units (local or Ray) and the HTML report.
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "Experiment": ".config",
    "ExperimentError": ".config",
    "Representation": ".config",
    "RunSettings": ".config",
    "Task": ".config",
    "load_experiment": ".config",
    "save_probes_problem": ".config",
    "ReportFiles": ".html_report",
    "ranked": ".html_report",
    "write_report": ".html_report",
    "RayOptions": ".ray_backend",
    "RayUnavailableError": ".ray_backend",
    "import_ray": ".ray_backend",
    "run_units_on_ray": ".ray_backend",
    "ExperimentRun": ".runner",
    "prepare_data": ".runner",
    "run_experiment": ".runner",
    "load_run_probes": ".saved_probes",
    "ModelProbes": ".in_memory",
    "probe_model": ".in_memory",
    "split_texts": ".in_memory",
    "ResultStore": ".store",
    "Unit": ".store",
    "UnitOutcome": ".store",
    "check_result": ".store",
    "prepare_units": ".store",
    "run_units": ".store",
    "unit_key": ".store",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
