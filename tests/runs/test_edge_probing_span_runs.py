"""Runs of an edge-probing experiment with ``pooling = "self-attention"`` for the methods that
learn the pooling beyond the curve, online code and power: kept probes (``save_probes``),
the variational code and Pareto sweeps, with the tiny BERT of ``tiny_models``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_edge_probing_runs import CURVE, _experiment, files  # noqa: F401 (the module's fixture)

from probemeter.cli.main import main
from probemeter.pareto.sweeps import NUCLEAR_NORM, RANK
from probemeter.runs.config import load_experiment
from probemeter.runs.runner import prepare_data
from probemeter.runs.saved_probes import load_run_probes

pytest.importorskip("transformers")

ATTENTION = 'pooling = "self-attention"\nlabels = ["PRON"]'  # PRON: in the test file only


def _keep(path):
    """The experiment file at ``path`` with ``save_probes = true``."""
    path.write_text(path.read_text().replace("[task]", "[run]\nsave_probes = true\n\n[task]"))
    return path


def test_every_method_accepts_self_attention_and_kept_span_probes(files):  # noqa: F811
    for method in ('kind = "mdl"\nvariational = true', CURVE):
        experiment = load_experiment(_keep(_experiment(files, ATTENTION, method)))
        assert experiment.task.options["pooling"] == "self-attention"
        assert experiment.run.save_probes and experiment.method.kind in ("mdl", "curve")
    pareto = load_experiment(_experiment(files, ATTENTION, 'kind = "pareto"'))
    assert pareto.method.pools_spans


@pytest.mark.slow
def test_kept_span_probes_of_a_curve_run_reproduce_its_losses(files, tmp_path):  # noqa: F811
    experiment = _keep(_experiment(files, ATTENTION))
    assert main(["run", str(experiment), "--out", str(tmp_path), "-q", "--n-jobs", "1"]) == 0
    results = json.loads((tmp_path / "exp" / "results.json").read_text())
    probes = load_run_probes(tmp_path / "exp")
    data = prepare_data(load_experiment(experiment))
    for curve in results["curves"]:
        kept = probes[curve["name"]]
        assert kept[0].span is not None and kept[0].architecture.span == (2,)
        test = data[curve["name"]]
        recomputed = kept.evaluate(test.X_test, test.y_test).sort_values(["n", "seed"])
        assert recomputed["loss"].tolist() == curve["points"]["loss"]  # exactly
        assert np.array_equal(kept[0].predict(test.X_test), kept[0].predictions)


@pytest.mark.slow
def test_variational_code_and_pareto_sweeps_of_span_runs(files, tmp_path):  # noqa: F811
    method = (
        'kind = "mdl"\nprobe = [8]\nseeds = 1\ntimesteps = [0.25, 0.5, 1.0]\nmax_epochs = 3\n'
        "variational = true\nvariational_epochs = 2\ncontrol = false"
    )
    mdl = _keep(_experiment(files, ATTENTION, method))
    assert main(["run", str(mdl), "--out", str(tmp_path / "mdl"), "-q", "--n-jobs", "1"]) == 0
    entry = json.loads((tmp_path / "mdl" / "exp" / "results.json").read_text())["entries"][0]
    variational = entry["variational"]
    assert variational["metadata"]["probe"]["span"] == [2]
    assert variational["metadata"]["probe"]["projection"] == 256
    seeds = variational["seeds"]
    assert seeds["model_bits"][0] > 0 and seeds["codelength_bits"][0] == pytest.approx(
        seeds["model_bits"][0] + seeds["data_bits"][0]
    )
    assert load_run_probes(tmp_path / "mdl" / "exp")["bert-0"][0].span is not None
    pareto = _experiment(files, ATTENTION, 'kind = "pareto"\npenalties = 3\nsteps = 20')
    assert main(["run", str(pareto), "--out", str(tmp_path / "pareto"), "-q"]) == 0
    points = json.loads((tmp_path / "pareto" / "exp" / "results.json").read_text())["points"]
    assert sorted(set(points["representation"])) == ["bert-0", "bert-2"]
    assert set(points["measure"]) == {NUCLEAR_NORM, RANK}
    assert all(0 <= accuracy <= 1 for accuracy in points["accuracy"])
