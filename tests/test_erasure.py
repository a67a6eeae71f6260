"""LEACE erasure (probemeter.erasure): a planted linear concept erased leaves a linear probe's
online code at the uniform code, a non-linear concept stays within an MLP's reach, and the
eraser is fitted on the pool alone."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from probemeter import MLP, Execution, Linear, ProbeData
from probemeter.erasure import erase
from probemeter.mdl import online_codelength, paper_training

#: blocks of the online code: the first holds 30 of the 3,000 pool rows
_TIMESTEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0)


def _planted(concept, n: int = 4000, d: int = 8, seed: int = 0) -> ProbeData:
    """Gaussian features, the label ``concept(X)``; 3,000 pool rows, the rest the test set."""
    X = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    y = concept(X).astype(np.int64)
    return ProbeData.from_arrays(X[:3000], y[:3000], X[3000:], y[3000:])


def _linear(X):
    return X[:, 0] + X[:, 1] > 0


def _xor(X):
    return (X[:, 0] > 0) ^ (X[:, 1] > 0)


def _code_ratio(data: ProbeData, probe) -> float:
    """The online codelength of ``data``'s pool labels over the uniform code n·log2 K."""
    code = online_codelength(
        data,
        probe,
        _TIMESTEPS,
        seeds=2,
        config=paper_training(lr=1e-2),
        execution=Execution(device="cpu", n_jobs=1),
    )
    assert code.uniform_bits == pytest.approx(code.n * np.log2(data.n_classes))
    return code.codelength_bits / code.uniform_bits


def test_a_linear_concept_erased_leaves_the_linear_probe_at_the_uniform_code():
    data = _planted(_linear)
    erased = erase(data, data.y_train)
    assert erased.record.to_dict() == {
        "eraser": "leace",
        "concept": "label",
        "fitted_on": "pool",
        "n_rows": 3000,
        "n_columns": 2,
        "rank": 1,
    }
    assert _code_ratio(data, Linear()) < 0.3  # the original: far below uniform
    assert abs(_code_ratio(erased.data, Linear()) - 1) < 0.02
    # the pool's cross-covariance with the concept is gone
    centred = erased.data.X_train - erased.data.X_train.mean(axis=0)
    assert np.abs(centred.T @ (data.y_train - data.y_train.mean())).max() < 1e-2
    # labels, names, sizes as they were
    assert erased.data.X_train.dtype == np.float32
    assert np.array_equal(erased.data.y_test, data.y_test) and erased.data.name == data.name


def test_an_mlp_still_reads_a_non_linear_concept_after_leace():
    data = _planted(_xor)
    erased = erase(data, data.y_train)
    assert _code_ratio(erased.data, MLP((64,))) < 0.9  # XOR has no linear part to erase
    assert abs(_code_ratio(erased.data, Linear()) - 1) < 0.03


def test_the_eraser_is_fitted_on_the_pool_only():
    data = _planted(_linear)
    rows = np.random.default_rng(1).normal(size=data.X_test.shape).astype(np.float32)
    # other test rows and labels: the same pool erased bit for bit
    changed = replace(data, X_test=rows, y_test=1 - data.y_test)
    first, second = erase(data, data.y_train), erase(changed, changed.y_train)
    assert np.array_equal(first.data.X_train, second.data.X_train)
    # the test rows go through the pool's map: pool rows as a test set come out as they do
    # in the pool
    mirrored = replace(data, X_test=data.X_train[:500], y_test=data.y_train[:500])
    erased = erase(mirrored, mirrored.y_train)
    assert np.array_equal(erased.data.X_test, first.data.X_train[:500])


def test_another_concept_one_hot_of_k_classes():
    data = _planted(_linear)
    # three classes, linear in coordinates 2 and 3: the erased span is theirs
    scores = np.column_stack([data.X_train[:, 2], data.X_train[:, 3], np.zeros(data.pool_size)])
    concept = scores.argmax(axis=1)
    erased = erase(data, concept, concept="bins")
    assert (erased.record.concept, erased.record.n_columns, erased.record.rank) == ("bins", 3, 2)
    assert _code_ratio(erased.data, Linear()) < 0.3  # the label's coordinates untouched


def test_refusals_name_the_problem():
    data = _planted(_linear)
    sparse = replace(data, X_train=sp.csr_matrix(data.X_train), X_test=sp.csr_matrix(data.X_test))
    with pytest.raises(ValueError, match="sparse features: LEACE is a dense"):
        erase(sparse, data.y_train)
    with pytest.raises(ValueError, match="one label per pool row"):
        erase(data, data.y_train[:10])
    with pytest.raises(ValueError, match="one class only"):
        erase(data, np.zeros(data.pool_size, dtype=np.int64))
    with pytest.raises(ValueError, match="no INLP"):
        erase(data, data.y_train, method="inlp")


def test_features_already_white_are_erased():
    """Standardised whitened PCA components (the ``pca`` kind's) have the identity as sample
    covariance: concept-erasure's covariance shrinkage is no covariance there (and left off:
    with it, nothing would be erased)."""
    from sklearn.decomposition import PCA

    X = np.random.default_rng(2).normal(size=(1000, 40))
    white = PCA(6, whiten=True).fit_transform(X).astype(np.float32)
    y = (white[:, 0] + white[:, 1] > 0).astype(np.int64)
    data = ProbeData.from_arrays(white, y, white[:100], y[:100])
    erased = erase(data, data.y_train)
    assert erased.record.rank == 1
    centred = erased.data.X_train - erased.data.X_train.mean(axis=0)
    assert np.abs(centred.T @ (data.y_train - data.y_train.mean())).max() < 1e-2


def test_label_sets_are_erased_as_their_indicator_columns():
    data = _planted(_linear)
    sets = np.column_stack([data.X_train[:, 0] > 0, data.X_train[:, 3] > 0]).astype(np.float32)
    erased = erase(data, sets, concept="sets")
    assert (erased.record.n_columns, erased.record.rank) == (2, 2)
    centred = erased.data.X_train - erased.data.X_train.mean(axis=0)
    assert np.abs(centred.T @ (sets - sets.mean(axis=0))).max() < 1e-2
