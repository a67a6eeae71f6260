"""Feature files: loading ``.npz``/``.npy`` features, reading their headers only, and one
clear error naming the file for every way a file can be broken."""

import numpy as np
import pytest

from probemeter.data import ProbeData
from probemeter.feature_files import inspect_features, load_array, load_features


def _xy(rows: int = 40, features: int = 3, classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features))
    y = np.arange(rows) % classes
    return x, y


def test_load_npz(tmp_path):
    x, y = _xy()
    path = tmp_path / "features.npz"
    np.savez(path, X=x, y=y)
    loaded_x, loaded_y = load_features(path)
    np.testing.assert_array_equal(loaded_x, x)
    np.testing.assert_array_equal(loaded_y, y)
    loaded_x, _ = load_features(str(path))  # a string path works too
    np.testing.assert_array_equal(loaded_x, x)


def test_load_npy_pair(tmp_path):
    x, y = _xy()
    np.save(tmp_path / "layer.3.npy", x)
    np.save(tmp_path / "layer.3.labels.npy", y)
    loaded_x, loaded_y = load_features(tmp_path / "layer.3.npy")
    np.testing.assert_array_equal(loaded_x, x)
    np.testing.assert_array_equal(loaded_y, y)


def test_load_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nothing.npz"
    with pytest.raises(ValueError, match=r"nothing\.npz.*does not exist"):
        load_features(path)


def test_load_npz_missing_arrays(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, features=np.zeros((3, 2)), y=np.zeros(3))
    with pytest.raises(ValueError, match=r"bad\.npz.*lacks.*'X'.*features"):
        load_features(path)


def test_load_npy_without_labels(tmp_path):
    np.save(tmp_path / "alone.npy", np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"alone\.labels\.npy"):
        load_features(tmp_path / "alone.npy")


def test_load_wrong_suffix(tmp_path):
    path = tmp_path / "features.csv"
    path.write_text("1,2\n")
    with pytest.raises(ValueError, match=r"features\.csv.*must be \.npz or \.npy"):
        load_features(path)


def test_loaded_features_feed_from_arrays(tmp_path):
    x, y = _xy()
    np.savez(tmp_path / "f.npz", X=x, y=y)
    data = ProbeData.from_arrays(*load_features(tmp_path / "f.npz"), test_size=0.25)
    assert data.pool_size == 30 and data.y_test.size == 10


def test_inspect_reads_headers_without_loading(tmp_path, monkeypatch):
    x, y = _xy(rows=25, features=7)
    np.savez(tmp_path / "f.npz", X=x.astype(np.float16), y=y)

    def no_loading(*args, **kwargs):
        raise AssertionError("inspect_features loaded the arrays")

    monkeypatch.setattr(np, "load", no_loading)
    info = inspect_features(tmp_path / "f.npz")
    assert (info.n_rows, info.n_features) == (25, 7)
    assert info.feature_dtype == np.float16 and info.label_dtype == y.dtype


def test_inspect_npy_pair_and_column_labels(tmp_path):
    x, y = _xy(rows=9, features=2)
    np.save(tmp_path / "l.npy", x)
    np.save(tmp_path / "l.labels.npy", y[:, None])  # a column of labels counts as 1-D
    info = inspect_features(tmp_path / "l.npy")
    assert (info.n_rows, info.n_features) == (9, 2)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"X": np.zeros(5), "y": np.zeros(5)}, r"X must be 2-D.*\(5,\)"),
        ({"X": np.zeros((5, 2)), "y": np.zeros((5, 2))}, r"y must be 1-D.*\(5, 2\)"),
        ({"X": np.zeros((5, 2)), "y": np.zeros(4)}, r"X has 5 rows but y has 4 labels"),
        (
            {"X": np.array([np.zeros(2), np.zeros(3)], dtype=object), "y": np.zeros(2)},
            r"f\.npz.*array 'X'.*Python objects",
        ),
    ],
)
def test_inspect_refuses_bad_shapes_naming_the_file(tmp_path, arrays, message):
    np.savez(tmp_path / "f.npz", **arrays)
    with pytest.raises(ValueError, match=message):
        inspect_features(tmp_path / "f.npz")
    with pytest.raises(ValueError, match=message):
        load_features(tmp_path / "f.npz")


@pytest.mark.parametrize("keep", [0, 10, 200])
def test_truncated_archive_names_the_file(tmp_path, keep):
    x, y = _xy()
    np.savez(tmp_path / "f.npz", X=x, y=y)
    whole = (tmp_path / "f.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(whole[:keep] if keep < 200 else whole[:-200])
    with pytest.raises(ValueError, match=r"cut\.npz.*(not a readable|cannot be read)"):
        load_features(tmp_path / "cut.npz")


def test_folder_is_refused(tmp_path):
    with pytest.raises(ValueError, match="is a folder"):
        load_features(tmp_path)


def test_load_array_from_npy_and_npz(tmp_path):
    ids = np.arange(6) % 4
    np.save(tmp_path / "ids.npy", ids)
    np.savez(tmp_path / "f.npz", X=np.zeros((6, 2)), y=ids, groups=ids + 1)
    np.testing.assert_array_equal(load_array(tmp_path / "ids.npy"), ids)
    np.testing.assert_array_equal(load_array(tmp_path / "f.npz", "groups"), ids + 1)
    with pytest.raises(ValueError, match=r"no array 'words'; it holds \['X', 'y', 'groups'\]"):
        load_array(tmp_path / "f.npz", "words")
    with pytest.raises(ValueError, match="name the array"):
        load_array(tmp_path / "f.npz")
