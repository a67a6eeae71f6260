"""Label sets of edge-probing targets in experiment files (``[task] multilabel = true``): the
methods that measure them, the refusal without the key, and ``probemeter run`` of the curve
and mdl methods on them."""

from __future__ import annotations

import json

import pytest
from experiment_files import EDGE_MDL, edge_probing_experiment, write_edge_probing_files

from probemeter.cli.main import main
from probemeter.datasets.edge_probing import (
    EdgeProbingSet,
    EdgeSentence,
    EdgeTarget,
)
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data

pytest.importorskip("transformers")

NOUNS = {"cat", "mat", "dogs", "night", "fox", "books"}


def _label_set(word: str, position: int) -> tuple[str, ...]:
    """A word's features: noun or not, sentence-initial, long (several may hold)."""
    labels = ("NOUN",) if word in NOUNS else ()
    labels += ("FIRST",) if position == 0 else ()
    labels += ("LONG",) if len(word) > 3 else ()
    return labels or ("OTHER",)


def _targets(sentences):
    return EdgeProbingSet(
        tuple(
            EdgeSentence(
                words, tuple(EdgeTarget((i, i + 1), _label_set(w, i)) for i, w in enumerate(words))
            )
            for words in sentences
        )
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_edge_probing_files(tmp_path_factory.mktemp("label-sets"), _targets, test_copies=3)


CURVE = 'kind = "curve"\nepsilon = 0.5\nsizes = [10, 50]\nseeds = 1\nsteps = 5\nprobe = [8]'


def _experiment(folder, task="", method=CURVE, run=""):
    return edge_probing_experiment(folder, task, method, layer="2", run=run)


def test_label_sets_need_the_key_and_a_method_that_measures_them(files):
    with pytest.raises(ExperimentError, match=r"several labels .*multilabel = true"):
        prepare_data(load_experiment(_experiment(files)))
    data = prepare_data(load_experiment(_experiment(files, "multilabel = true")))["bert"]
    assert data.multilabel and data.classes == ("FIRST", "LONG", "NOUN", "OTHER")
    for method in ('kind = "pareto"', 'kind = "mdl"\nvariational = true'):
        with pytest.raises(ExperimentError, match=r"task\.multilabel: label sets are measured"):
            load_experiment(_experiment(files, "multilabel = true", method))
    keep = _experiment(files, "multilabel = true", run="[run]\nsave_probes = true\n\n")
    with pytest.raises(ExperimentError, match=r"run\.save_probes: probes of label sets"):
        load_experiment(keep)


@pytest.mark.slow
def test_curve_and_online_code_runs_on_label_sets(files, tmp_path):
    curve = _experiment(files, 'multilabel = true\npooling = "self-attention"')
    out = ["--out", str(tmp_path / "curve"), "--no-progress", "--n-jobs", "1"]
    assert main(["run", str(curve), *out]) == 0
    results = json.loads((tmp_path / "curve" / "exp" / "results.json").read_text())
    (result,) = results["curves"]
    assert result["multilabel"] and result["n_classes"] == 4
    assert result["metadata"]["probe"]["span"] == [1]  # the span stage trains on label sets
    assert {"micro_f1", "macro_f1"} <= set(result["points"])
    mdl = _experiment(files, "multilabel = true", EDGE_MDL)
    assert main(["run", str(mdl), "--out", str(tmp_path / "mdl"), "--no-progress"]) == 0
    text = (tmp_path / "mdl" / "exp" / "results.json").read_text()
    assert '"multilabel": true' in text
    assert "micro-F1 (%)" in (tmp_path / "mdl" / "exp" / "table.md").read_text()
