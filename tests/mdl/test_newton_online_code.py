"""The online code with the exact solver of linear probes (solver = "newton"): every block's
bits are those of scikit-learn's LogisticRegression(C) fitted on the block's prefix at the
same λ (C = c_for_weight_decay(λ, n, K)), and the ``mdl`` method reads the option and
refuses it where it cannot apply."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from probemeter import Execution
from probemeter.data import subset_permutation
from probemeter.datasets.digits import digits_representations
from probemeter.mdl.method import MDLMethod
from probemeter.mdl.online import online_codelength
from probemeter.probes import Linear
from probemeter.training.config import TrainingConfig, c_for_weight_decay

BITS_PER_NAT = 1 / np.log(2)


@pytest.mark.numerics
def test_every_block_is_coded_by_scikit_learns_optimum():
    """Digits, blocks at 10 %, 30 %, 100 % of the pool, λ = 0.01: each block's bits within
    1e-4 relative of those of scikit-learn's fit (tol 1e-10) on the examples before it."""
    data = digits_representations()["pixels"]
    lam = 0.01
    code = online_codelength(
        data, Linear(), (0.1, 0.3, 1.0), seeds=1,
        config=TrainingConfig(solver="newton", weight_decay=lam),
        execution=Execution(device="cpu", n_jobs=1),
    )  # fmt: skip
    assert code.metadata["training"]["solver"] == "newton"
    order = subset_permutation(data.pool_size, 0, 0)  # nothing held out: no early stopping
    blocks = code.blocks[code.blocks["block"] > 0]
    assert len(blocks) == 2
    for row in blocks.itertuples():
        seen, sent = order[: row.start], order[row.start : row.end]
        C = c_for_weight_decay(lam, len(seen), data.n_classes)
        model = LogisticRegression(C=C, tol=1e-10, max_iter=10_000)
        model.fit(data.X_train[seen], data.y_train[seen])
        p = model.predict_proba(data.X_train[sent])
        bits = -np.log(p[np.arange(len(sent)), data.y_train[sent]]).sum() * BITS_PER_NAT
        np.testing.assert_allclose(row.codelength_bits, bits, rtol=1e-4)


def test_the_method_reads_the_solver_and_refuses_where_it_cannot_apply():
    method, problems = MDLMethod.from_values(
        {"probe": [], "solver": "newton", "weight_decay": 0.01}
    )
    assert not problems
    config = method.training()
    assert (config.solver, config.weight_decay, config.early_stopping) == ("newton", 0.01, False)
    _, problems = MDLMethod.from_values({"solver": "newton", "weight_decay": 0.01})
    assert problems == [
        "method.solver: newton solves linear probes only; the probe has hidden layers [64, 64] "
        "(set probe = [] or solver = adam)"
    ]
    _, problems = MDLMethod.from_values({"probe": [], "solver": "newton"})
    assert len(problems) == 1 and problems[0].startswith("method.weight_decay: solver = newton")
    paper, _ = MDLMethod.from_values({})
    assert paper.training().early_stopping and "solver" not in paper.training().to_dict()
