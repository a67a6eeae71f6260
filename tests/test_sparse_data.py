"""ProbeData with sparse features: validation, scale-only standardisation, save/load, refusals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from probemeter import ProbeData
from probemeter.data import check_probe_data


def _sparse(rows=60, features=40, density=0.1, seed=0):
    X = sp.random(rows, features, density=density, format="csr", random_state=seed)
    y = np.arange(rows) % 3
    return X, y


@pytest.mark.parametrize(
    "convert",
    [
        sp.csr_matrix,
        sp.csc_matrix,
        sp.coo_matrix,
        sp.csr_array,
        lambda X: torch.from_numpy(X.toarray()).to_sparse(),
        lambda X: torch.from_numpy(X.toarray()).to_sparse_csr(),
    ],
)
def test_sparse_inputs_become_float32_csr_with_the_same_values(convert):
    X, y = _sparse()
    X64 = X.astype(np.float64)
    data = ProbeData.from_arrays(convert(X64), y, standardize=False, random_state=3)
    dense = ProbeData.from_arrays(X64.toarray(), y, standardize=False, random_state=3)
    assert data.is_sparse and not dense.is_sparse
    for got, want in ((data.X_train, dense.X_train), (data.X_test, dense.X_test)):
        assert sp.isspmatrix_csr(got) and got.dtype == np.float32
        assert got.has_sorted_indices
        np.testing.assert_array_equal(got.toarray(), want)
    np.testing.assert_array_equal(data.y_train, dense.y_train)
    assert data.n_features == 40 and data.pool_size == 48


def test_the_callers_matrix_is_not_modified():
    X, y = _sparse()
    X = X.astype(np.float32)
    X.data[0] = 0.0  # an explicit zero the validated copy drops
    before = X.copy()
    ProbeData.from_arrays(X, y)
    assert X.nnz == before.nnz
    np.testing.assert_array_equal(X.data, before.data)


def test_standardisation_scales_by_the_pool_deviation_without_centring():
    X, y = _sparse(density=0.2)
    X = X.tolil()
    X[:, 7] = 0.0  # a constant column stays as it is
    X = X.tocsr()
    given_test = sp.random(10, 40, density=0.3, format="csr", random_state=9)
    data = ProbeData.from_arrays(X, y, given_test, np.arange(10) % 3)
    pool = X.toarray().astype(np.float64)
    std = pool.std(axis=0)
    std[std == 0] = 1.0
    np.testing.assert_allclose(data.X_train.toarray(), pool / std, rtol=1e-6)
    np.testing.assert_allclose(data.X_test.toarray(), given_test.toarray() / std, rtol=1e-6)
    assert data.X_train.nnz == X.nnz  # zero stays zero: nothing was filled in
    assert np.all(data.X_train.toarray()[:, 7] == 0)


def test_a_dense_test_set_beside_a_sparse_pool_becomes_csr():
    X, y = _sparse()
    test = np.eye(5, 40, dtype=np.float32)
    data = ProbeData.from_arrays(X, y, test, np.arange(5) % 3, standardize=False)
    assert sp.isspmatrix_csr(data.X_test)
    np.testing.assert_array_equal(data.X_test.toarray(), test)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda X: X.multiply(np.nan).tocsr(), r"X contains NaN or inf in \d+ row\(s\), first at"),
        (
            lambda X: sp.csr_matrix(([1.0, np.inf], ([2, 5], [3, 3])), shape=(60, 40)),
            r"X contains NaN or inf in 1 row\(s\), first at row 5",
        ),
        (lambda X: X.astype(np.complex64), "real numbers"),
        (lambda X: sp.csr_matrix((0, 40)), "empty"),
        (lambda X: torch.zeros(2, 3, 4).to_sparse(), "2-D"),
    ],
)
def test_bad_sparse_features_are_refused(change, message):
    X, y = _sparse()
    with pytest.raises(ValueError, match=message):
        ProbeData.from_arrays(change(X), y)


def test_mismatched_sparse_and_dense_sets_are_refused():
    X, y = _sparse()
    with pytest.raises(ValueError, match="X_test is sparse but X is dense"):
        ProbeData.from_arrays(X.toarray(), y, X[:5], y[:5])
    with pytest.raises(ValueError, match="X_test has 39 features but X has 40"):
        ProbeData.from_arrays(X, y, X[:5, :39], y[:5])
    with pytest.raises(ValueError, match="y has 59 labels but X has 60 rows"):
        ProbeData.from_arrays(X, y[:59])


def test_save_and_load_keep_sparse_data(tmp_path):
    X, y = _sparse()
    data = ProbeData.from_arrays(X, y, name="codes")
    folder = data.save(tmp_path / "data")
    assert (folder / "X_train.npz").is_file() and not (folder / "X_train.npy").exists()
    loaded = ProbeData.load(folder)
    assert loaded.is_sparse and sp.isspmatrix_csr(loaded.X_train)
    assert loaded.fingerprint() == data.fingerprint()
    np.testing.assert_array_equal(loaded.X_test.toarray(), data.X_test.toarray())
    # dense data saved over it replace the .npz files
    dense = ProbeData.from_arrays(X.toarray(), y)
    dense.save(folder)
    assert not (folder / "X_train.npz").exists()
    assert not ProbeData.load(folder).is_sparse


def test_fingerprint_follows_the_stored_values():
    X, y = _sparse()
    a, b = ProbeData.from_arrays(X, y), ProbeData.from_arrays(X, y)
    assert a.fingerprint() == b.fingerprint()
    assert ProbeData.from_arrays(X * 2, y, standardize=False).fingerprint() != a.fingerprint()


def test_methods_without_sparse_support_refuse_it():
    X, y = _sparse()
    data = ProbeData.from_arrays(X, y, name="codes")
    with pytest.raises(ValueError, match=r"'codes'.*sparse features.*loss_data_curve"):
        check_probe_data(data)
    assert check_probe_data(data, sparse=True) is data
    from probemeter.mdl import variational_codelength
    from probemeter.power import paired_data

    with pytest.raises(ValueError, match="sparse features"):
        variational_codelength(data)
    with pytest.raises(ValueError, match="sparse features"):
        paired_data(data, data)


def test_keep_probes_is_refused_for_sparse_data():
    from probemeter.curves import loss_data_curve
    from probemeter.mdl import online_codelength

    data = ProbeData.from_arrays(*_sparse())
    with pytest.raises(ValueError, match="keep_probes"):
        loss_data_curve(data, keep_probes=True)
    with pytest.raises(ValueError, match="keep_probes"):
        online_codelength(data, keep_probes=True)
