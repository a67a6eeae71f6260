"""The loss-data curve with ``solver = "newton"`` (the exact solver of linear probes): through
the method's options, its refusals, a grid over weight decay chosen on the development split,
and through ``probemeter run``: every point the optimum scikit-learn reaches at the same λ."""

from __future__ import annotations

import json

import numpy as np
import pytest
from experiment_files import PIXELS, digits_experiment, run_file
from sklearn.linear_model import LogisticRegression

from probemeter import Execution
from probemeter.curves.curve import loss_data_curve
from probemeter.curves.method import CurveMethod
from probemeter.data import nested_subset
from probemeter.datasets.digits import digits_representations
from probemeter.probes import Linear
from probemeter.training.config import NEWTON_MAX_ITER, TrainingConfig, c_for_weight_decay


def test_the_method_reads_the_solver_and_refuses_where_it_cannot_apply():
    method, problems = CurveMethod.from_values(
        {"epsilon": 0.5, "probe": [], "solver": "newton", "weight_decay": [1e-3, 1e-2]}
    )
    assert not problems
    config = method.training()
    assert (config.solver, config.tol, config.weight_decay) == ("newton", 1e-5, 1e-3)
    described = config.to_dict()
    assert described["solver"] == "newton" and described["max_iter"] == NEWTON_MAX_ITER
    refusals = {
        "method.solver: newton solves linear probes only": {"probe": [16]},
        "method.weight_decay: solver = newton needs weight_decay > 0": {"weight_decay": 0},
        "method.lr: solver = newton does not use a learning rate": {
            "weight_decay": 1e-3,
            "lr": [1e-3, 1e-2],
        },
    }
    for refusal, values in refusals.items():
        options = {"epsilon": 0.5, "probe": [], "solver": "newton", **values}
        _, problems = CurveMethod.from_values(options)
        assert len(problems) == 1 and problems[0].startswith(refusal), problems
    _, problems = CurveMethod.from_values({"epsilon": 0.5, "solver": "lbfgs"})
    assert problems and problems[0].startswith("method.solver")


@pytest.mark.numerics
def test_a_curve_of_exact_probes_is_scikit_learns():
    """Every point of a digits curve (2 seeds × 3 sizes, λ = 0.01) is the probe scikit-learn's
    LogisticRegression(C = c_for_weight_decay(λ, n, K)) fits on the same subset: test losses
    within 1e-4 relative (both at their optimum; the points carry the Newton iterations)."""
    data = digits_representations()["pixels"]
    sizes, lam = [60, 200, 600], 0.01
    curve = loss_data_curve(
        data, Linear(), sizes, 2, config=TrainingConfig(solver="newton", weight_decay=lam),
        execution=Execution(device="cpu", n_jobs=1), dev_fraction=0.0,
    )  # fmt: skip
    assert (curve.points["iterations"] >= 1).all()
    assert curve.metadata["training"]["solver"] == "newton"
    for row in curve.points.itertuples():
        rows = nested_subset(data.pool_size, row.n, 0, row.seed)
        C = c_for_weight_decay(lam, row.n, data.n_classes)
        model = LogisticRegression(C=C, tol=1e-10, max_iter=10_000)
        model.fit(data.X_train[rows], data.y_train[rows])
        p = model.predict_proba(data.X_test)
        theirs = -np.log(p[np.arange(len(data.y_test)), data.y_test]).mean()
        np.testing.assert_allclose(row.loss, theirs, rtol=1e-4)


@pytest.mark.slow
def test_exact_probes_through_probemeter_run(tmp_path):
    method = (
        'kind = "curve"\nepsilon = 0.5\nprobe = []\nsizes = [50, 200]\nseeds = 2\n'
        'solver = "newton"\nweight_decay = [0.001, 0.1]\n'
    )
    run = run_file(tmp_path, digits_experiment(method, "newton", [PIXELS]), "newton")
    results = json.loads((run / "results.json").read_text())
    metadata = results["curves"][0]["metadata"]
    assert metadata["training"]["solver"] == "newton"
    assert metadata["settings"]["grid"]["weight_decay"] == [0.001, 0.1]
    specs = [json.loads(p.read_text())["spec"] for p in (run / "units").glob("*.json")]
    assert specs and all("newton" in json.dumps(spec) for spec in specs)
