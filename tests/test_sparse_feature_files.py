"""Sparse feature files (``scipy.sparse.save_npz``): read as CSR without densifying, labels from
the archive or ``<stem>.labels.npy``, and one clear error naming the file and the array for
every way such a file can be broken."""

import numpy as np
import pytest
import scipy.sparse as sp

from probemeter.feature_files import inspect_features, load_features, load_sparse_features


def _matrix(rows: int = 12, features: int = 30, seed: int = 0) -> sp.csr_matrix:
    return sp.random(rows, features, density=0.2, format="csr", random_state=seed, dtype=np.float32)


def _labels(rows: int = 12) -> np.ndarray:
    return np.arange(rows) % 3


def _write(path, fmt="csr", **arrays):
    """A sparse .npz as save_npz writes it, with ``arrays`` replacing or adding entries."""
    matrix = _matrix().asformat(fmt)
    stored = {"format": fmt.encode(), "shape": np.asarray(matrix.shape), "data": matrix.data}
    if fmt == "coo":
        stored.update(row=matrix.row, col=matrix.col)
    else:
        stored.update(indices=matrix.indices, indptr=matrix.indptr)
    stored = {**stored, "y": _labels(), **arrays}
    np.savez(path, **{key: value for key, value in stored.items() if value is not None})
    return path


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_a_save_npz_file_reads_as_the_same_csr_matrix_with_companion_labels(tmp_path, fmt):
    matrix, labels = _matrix(), _labels()
    path = tmp_path / "codes.npz"
    sp.save_npz(path, matrix.asformat(fmt))
    np.save(tmp_path / "codes.labels.npy", labels)
    info = inspect_features(path)
    assert (info.n_rows, info.n_features, info.n_layers, info.sparse) == (12, 30, None, True)
    assert (info.feature_dtype, info.label_dtype) == ("float32", "int64")
    X, y = load_features(path, sparse=True)
    assert sp.isspmatrix_csr(X) and X.shape == matrix.shape
    assert (X != matrix).nnz == 0
    np.testing.assert_array_equal(y, labels)


def test_labels_inside_the_archive_come_before_a_companion_file(tmp_path):
    path = _write(tmp_path / "codes.npz")
    np.save(tmp_path / "codes.labels.npy", _labels()[::-1])  # not read: the archive has y
    X, y = load_sparse_features(path)
    np.testing.assert_array_equal(y, _labels())
    assert (X != _matrix()).nnz == 0


def test_dense_readers_refuse_a_sparse_file_by_name(tmp_path):
    path = _write(tmp_path / "codes.npz")
    with pytest.raises(ValueError, match=r"codes\.npz' holds a sparse matrix.*curve and mdl"):
        load_features(path)
    dense = tmp_path / "dense.npz"
    np.savez(dense, X=np.zeros((3, 2)), y=np.zeros(3))
    with pytest.raises(ValueError, match=r"dense\.npz' holds no sparse matrix"):
        load_sparse_features(dense)
    assert not inspect_features(dense).sparse


def test_missing_labels_name_both_places_they_may_be(tmp_path):
    path = _write(tmp_path / "codes.npz", y=None)
    with pytest.raises(ValueError, match=r"codes\.npz.*array 'y' or in .*codes\.labels\.npy"):
        inspect_features(path)


def test_labels_must_match_the_rows_of_the_shape(tmp_path):
    path = _write(tmp_path / "codes.npz", y=np.zeros(11))
    with pytest.raises(ValueError, match=r"codes\.npz.*X has 12 rows but y has 11 labels"):
        inspect_features(path)


@pytest.mark.parametrize(
    ("fmt", "arrays", "message"),
    [
        ("csr", {"format": b"bsr"}, r"\(array 'format'\): .*format 'bsr'; CSR, CSC and COO"),
        ("csr", {"format": np.asarray([1, 2])}, r"\(array 'format'\)"),
        ("csr", {"indices": None}, r"is a sparse CSR file lacking array\(s\) \['indices'\]"),
        ("coo", {"col": None}, r"is a sparse COO file lacking array\(s\) \['col'\]"),
        ("csr", {"shape": np.asarray([12, 30, 1])}, r"\(array 'shape'\) must be two positive"),
        ("csr", {"shape": np.asarray([0, 30])}, r"\(array 'shape'\) must be two positive"),
        (
            "csr",
            {"indptr": np.zeros(12, dtype=np.int32)},
            r"\(array 'indptr'\) has 12 entries; .*13",
        ),
        (
            "csc",
            {"indptr": np.zeros(12, dtype=np.int32)},
            r"\(array 'indptr'\) has 12 entries; .*31",
        ),
        ("csr", {"indices": np.zeros(3, dtype=np.int32)}, r"\(array 'indices'\) has 3 entries"),
        ("coo", {"row": np.zeros(3, dtype=np.int32)}, r"\(array 'row'\) has 3 entries"),
        (
            "csr",
            {"data": np.zeros(72, dtype=np.complex64)},
            r"\(array 'data'\) must hold real numbers",
        ),
        ("csr", {"indices": np.zeros(72)}, r"\(array 'indices'\) must hold integers; got float64"),
    ],
)
def test_malformed_headers_name_the_file_and_the_array(tmp_path, fmt, arrays, message):
    path = _write(tmp_path / "bad.npz", fmt, **arrays)
    with pytest.raises(ValueError, match=r"bad\.npz' " + message):
        inspect_features(path)


def _pointers_and_indices():
    matrix = _matrix()
    return matrix.indptr.copy(), matrix.indices.copy(), matrix.data.copy()


def test_index_arrays_are_checked_on_inspection_and_values_when_read(tmp_path):
    indptr, indices, data = _pointers_and_indices()
    assert indptr[-1] == 72  # 20 % of 12 × 30
    decreasing = indptr.copy()
    decreasing[5], decreasing[6] = decreasing[6], decreasing[5] - 1
    short = indptr.copy()
    short[-1] = 70
    far = indices.copy()
    far[10] = 30
    cases = [
        (
            {"indptr": decreasing},
            r"\(array 'indptr'\) must start at 0, never decrease and end at 72 \(the stored "
            r"values\); it starts at 0, decreases and ends at 72: the file is damaged",
        ),
        ({"indptr": short}, r"\(array 'indptr'\) .*it starts at 0 and ends at 70"),
        (
            {"indices": far},
            r"\(array 'indices'\) has indices outside 0\.\.29 \(from 0 to 30\), while the "
            r"shape \(12, 30\) it states \(array 'shape'\) has 30 features",
        ),
    ]
    for arrays, message in cases:  # the structure is checked before any shape is trusted
        path = _write(tmp_path / "bad.npz", **arrays)
        for read in (inspect_features, load_sparse_features):
            with pytest.raises(ValueError, match=r"bad\.npz' " + message):
                read(path)
    bad_values = data.copy()
    bad_values[indptr[4] + 1] = np.nan  # row 4
    bad_values[indptr[7]] = np.inf
    path = _write(tmp_path / "bad.npz", data=bad_values)
    inspect_features(path)  # the values are read only with the matrix
    message = r"bad\.npz' \(array 'data'\) holds 2 NaN or inf value\(s\), first in row 4"
    with pytest.raises(ValueError, match=message):
        load_features(path, sparse=True)


def test_a_shape_smaller_than_the_indices_blames_its_own_file(tmp_path):
    """A train file stating 12 × 20 but holding column indices up to 29 is refused by its
    own name (its header alone would say 20 features, and a test file of 30 would be
    blamed for the mismatch)."""
    path = _write(tmp_path / "train.npz", shape=np.asarray([12, 20]))
    with pytest.raises(
        ValueError, match=r"train\.npz' \(array 'indices'\) has indices outside 0\.\.19 "
        r"\(from 0 to 2\d\), while the shape \(12, 20\)"
    ):  # fmt: skip
        inspect_features(path)
    coo = _write(tmp_path / "coo.npz", "coo", shape=np.asarray([10, 30]))
    with pytest.raises(ValueError, match=r"\(array 'row'\) has indices outside 0\.\.9"):
        inspect_features(coo)


def test_bad_values_are_located_in_csc_and_coo_files_too(tmp_path):
    matrix = _matrix().tocoo()
    data = matrix.data.copy()
    data[5] = -np.inf
    row = matrix.row.copy()
    row[0] = 12
    coo = _write(tmp_path / "coo.npz", "coo", data=data)
    with pytest.raises(ValueError, match=rf"'data'\) holds 1 NaN .*first in row {matrix.row[5]}"):
        load_sparse_features(coo)
    with pytest.raises(ValueError, match=r"\(array 'row'\) has indices outside 0\.\.11"):
        load_sparse_features(_write(tmp_path / "rows.npz", "coo", row=row))
    csc = _matrix().tocsc()
    data = csc.data.copy()
    data[3] = np.nan
    with pytest.raises(ValueError, match=rf"first in row {csc.indices[3]}\b"):
        load_sparse_features(_write(tmp_path / "csc.npz", "csc", data=data))


def test_coo_duplicates_are_summed_like_scipy(tmp_path):
    path = tmp_path / "dups.npz"
    np.savez(
        path,
        format=b"coo",
        shape=np.asarray([2, 3]),
        data=np.asarray([1.0, 2.0, 4.0]),
        row=np.asarray([0, 0, 1]),
        col=np.asarray([2, 2, 0]),
        y=np.asarray([0, 1]),
    )
    X, _ = load_sparse_features(path)
    np.testing.assert_array_equal(X.toarray(), [[0, 0, 3], [4, 0, 0]])
