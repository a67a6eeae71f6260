"""One way to write a run: a curve run writes ``run.json``, ``table.md`` and ``table.tex`` as
every method does (``write_run_files``), its report takes the one path through the method's
part (``Method.report_part``), and a folder of the older layout — ``results.json`` with no
``run.json``, as ``probemeter demo`` and ``curve`` write — still loads: its report, its kept
probes and its measures are those of the same run with ``run.json``."""

import json
import re
import shutil

from experiment_files import PIXELS, digits_experiment, pca

from probemeter.cli.main import main
from probemeter.curves.method import CurveMethod
from probemeter.runs.config import load_experiment
from probemeter.runs.html_report import write_report
from probemeter.runs.methods import run_method
from probemeter.runs.runner import run_experiment
from probemeter.runs.saved_probes import load_run_probes

METHOD = """epsilon = 0.3
probe = []
seeds = 1
steps = 20
lr = 1e-2
sizes = [20, 50]"""


def _written_time(html: str) -> str:
    """The report without the time it was written."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "TIME", html)


def test_a_curve_run_writes_run_json_and_a_folder_without_it_still_loads(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(digits_experiment(METHOD, "tiny", (PIXELS, pca(8)), "save_probes = true\n"))
    run = run_experiment(load_experiment(path), tmp_path / "runs", n_jobs=1, progress=False)
    new = run.run_dir
    results = json.loads((new / "results.json").read_text())
    record = json.loads((new / "run.json").read_text())
    assert record["method"] == CurveMethod.kind and record["figure"] == "curves.png"
    assert record["experiment"] == results["experiment"]
    assert record["timings"] == results["timings"] == run.timings
    assert [result["name"] for result in run.results] == ["pixels", "pca-8"]
    finished = {name: (new / name).read_text() for name in ("table.md", "table.tex")}
    write_report(new)  # the report's tables are those the run wrote
    assert {name: (new / name).read_text() for name in finished} == finished

    old = tmp_path / "old"  # the older layout: results.json, figures, units, no run.json
    shutil.copytree(new, old)
    for name in ("run.json", "table.md", "table.tex", "report.html"):
        (old / name).unlink()
    assert run_method(old) is run_method(new) is CurveMethod
    write_report(old)
    for name in ("table.md", "table.tex"):
        assert (old / name).read_text() == finished[name]
    assert _written_time((old / "report.html").read_text()) == _written_time(
        (new / "report.html").read_text()
    )
    old_probes, new_probes = load_run_probes(old), load_run_probes(new)
    assert list(old_probes) == list(new_probes) == ["pixels", "pca-8"]
    for name, probes in new_probes.items():
        assert old_probes[name].to_frame().equals(probes.to_frame())
    capsys.readouterr()
    printed = []
    for folder in (new, old):
        assert main(["measures", str(folder)]) == 0
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] and "SDL, ε=0.3" in printed[0]
