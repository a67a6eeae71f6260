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
    with pytest.raises(ValueError, match=r"features\.csv.*must be one of \.npz, \.npy, \.pt"):
        load_features(path)


def test_loaded_features_feed_from_arrays(tmp_path):
    x, y = _xy()
    np.savez(tmp_path / "f.npz", X=x, y=y)
    data = ProbeData.from_arrays(*load_features(tmp_path / "f.npz"), test_size=0.25)
    assert data.pool_size == 30 and data.y_test.size == 10


@pytest.mark.parametrize("suffix", [".npz", ".npy", ".pt"])
def test_nan_or_inf_features_are_refused_naming_the_file(tmp_path, suffix):
    """Of two files the one holding NaN is named: ProbeData's check knows only "X"."""
    x, y = _xy()
    x[[3, 7, 8], 1] = [np.nan, np.inf, -np.inf]
    path = _save(tmp_path / f"bad{suffix}", x, y)
    message = r"bad\.(npz|npy|pt)': X contains NaN or inf in 3 row\(s\), the first at row 3 "
    with pytest.raises(ValueError, match=message + r"\(counting from 0\)"):
        load_features(path)
    inspect_features(path)  # the header is fine: values are checked once read
    integers = _save(tmp_path / f"int{suffix}", np.arange(80).reshape(40, 2), y)
    assert load_features(integers)[0].dtype.kind == "i"  # no values to check


def _save(path, x, y):
    if path.suffix == ".npz":
        np.savez(path, X=x, y=y)
    elif path.suffix == ".npy":
        np.save(path, x)
        np.save(path.with_suffix(".labels.npy"), y)
    else:
        import torch

        torch.save({"X": torch.as_tensor(x), "y": torch.as_tensor(y)}, path)
    return path


def test_inspect_reads_headers_without_loading(tmp_path, monkeypatch):
    x, y = _xy(rows=25, features=7)
    np.savez(tmp_path / "f.npz", X=x.astype(np.float16), y=y)

    def no_loading(*args, **kwargs):
        raise AssertionError("inspect_features loaded the arrays")

    monkeypatch.setattr(np, "load", no_loading)
    info = inspect_features(tmp_path / "f.npz")
    assert (info.n_rows, info.n_features) == (25, 7)
    assert info.feature_dtype == "float16" and info.label_dtype == str(y.dtype)


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


def _write(path, x, y):
    """Write features in the format of ``path``'s suffix."""
    import torch

    if path.suffix == ".pt":
        torch.save({"X": torch.from_numpy(x), "y": torch.from_numpy(y)}, path)
    elif path.suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file({"X": torch.from_numpy(x), "y": torch.from_numpy(y)}, str(path))
    elif path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"X": list(x), "y": y}), path)


@pytest.mark.parametrize("suffix", [".pt", ".safetensors", ".parquet"])
def test_other_formats_round_trip_and_inspect(tmp_path, suffix):
    x, y = _xy(rows=12, features=5)
    x = x.astype(np.float32)
    path = tmp_path / f"f{suffix}"
    _write(path, x, y)
    info = inspect_features(path)
    assert (info.n_rows, info.n_features) == (12, 5)
    loaded_x, loaded_y = load_features(path)
    np.testing.assert_array_equal(loaded_x, x)
    np.testing.assert_array_equal(loaded_y, y)


def test_parquet_with_one_column_per_feature_and_string_labels(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    x, _ = _xy(rows=6, features=3)
    tags = ["NOUN", "VERB", "DET"] * 2
    pq.write_table(
        pa.table({"f0": x[:, 0], "f1": x[:, 1], "f2": x[:, 2], "y": tags}), tmp_path / "t.parquet"
    )
    assert inspect_features(tmp_path / "t.parquet").n_features == 3
    loaded_x, loaded_y = load_features(tmp_path / "t.parquet")
    np.testing.assert_array_equal(loaded_x, x)
    assert loaded_y.tolist() == tags
    data = ProbeData.from_arrays(loaded_x, loaded_y, test_size=2, labels="encode")
    assert data.classes == ("DET", "NOUN", "VERB")


def test_bfloat16_safetensors_are_widened_to_float32(tmp_path):
    import torch
    from safetensors.torch import save_file

    x = torch.randn(4, 3).to(torch.bfloat16)
    save_file({"X": x, "y": torch.tensor([0, 1, 0, 1])}, str(tmp_path / "h.safetensors"))
    assert inspect_features(tmp_path / "h.safetensors").feature_dtype == "BF16"
    loaded_x, _ = load_features(tmp_path / "h.safetensors")
    assert loaded_x.dtype == np.float32
    np.testing.assert_array_equal(loaded_x, x.float().numpy())


@pytest.mark.parametrize("suffix", [".pt", ".safetensors", ".parquet"])
def test_other_formats_name_the_file_when_broken_or_incomplete(tmp_path, suffix):
    import torch

    (tmp_path / f"junk{suffix}").write_bytes(b"not a feature file at all")
    with pytest.raises(ValueError, match=rf"junk\{suffix}"):
        load_features(tmp_path / f"junk{suffix}")
    incomplete = tmp_path / f"x{suffix}"
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"X": [[1.0], [2.0]]}), incomplete)
        pattern = "needs a label column y"
    else:
        _write(incomplete, np.zeros((2, 1), np.float32), np.zeros(2, np.int64))
        payload = {"X": torch.zeros(2, 1)}
        if suffix == ".pt":
            torch.save(payload, incomplete)
        else:
            from safetensors.torch import save_file

            save_file(payload, str(incomplete))
        pattern = r"lacks array\(s\) \['y'\]"
    with pytest.raises(ValueError, match=pattern):
        inspect_features(incomplete)


def test_pt_files_never_run_pickled_code(tmp_path):
    import torch

    class Payload:
        def __reduce__(self):
            return (print, ("pickled code ran",))

    torch.save({"X": torch.zeros(2, 1), "y": Payload()}, tmp_path / "evil.pt")
    with pytest.raises(ValueError, match=r"evil\.pt.*cannot be read"):
        load_features(tmp_path / "evil.pt")


# ---------------------------------------------------------------------------------------------
# features with a layer axis: (examples, layers, features)
# ---------------------------------------------------------------------------------------------


def test_inspect_reads_the_layer_count_from_the_header(tmp_path, monkeypatch):
    x, y = np.zeros((9, 4, 5), np.float32), np.arange(9) % 2
    np.savez(tmp_path / "h.npz", X=x, y=y)
    np.save(tmp_path / "h.npy", x)
    np.save(tmp_path / "h.labels.npy", y)
    np.savez(tmp_path / "flat.npz", X=x[:, 0], y=y)
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("inspect_features loaded data"))
    for name in ("h.npz", "h.npy"):
        info = inspect_features(tmp_path / name)
        assert (info.n_rows, info.n_layers, info.n_features) == (9, 4, 5)
    assert inspect_features(tmp_path / "flat.npz").n_layers is None


@pytest.mark.parametrize("suffix", [".npz", ".pt", ".safetensors", ".parquet"])
def test_three_d_features_round_trip_in_every_format(tmp_path, suffix):
    x = np.arange(6 * 3 * 2, dtype=np.float32).reshape(6, 3, 2)
    y = np.arange(6) % 2
    path = tmp_path / f"h{suffix}"
    if suffix == ".npz":
        np.savez(path, X=x, y=y)
    elif suffix == ".parquet":  # a nested list column: one list of layers per row
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"X": x.tolist(), "y": y}), path)
    else:
        _write(path, x, y)
    info = inspect_features(path)
    assert (info.n_rows, info.n_layers, info.n_features) == (6, 3, 2)
    loaded_x, loaded_y = load_features(path)
    np.testing.assert_array_equal(loaded_x, x)
    np.testing.assert_array_equal(loaded_y, y)


def test_four_d_features_are_refused_naming_both_shapes(tmp_path):
    np.savez(tmp_path / "f.npz", X=np.zeros((4, 2, 2, 2)), y=np.zeros(4))
    with pytest.raises(ValueError, match=r"f\.npz.*X must be 2-D .* or 3-D .*\(4, 2, 2, 2\)"):
        inspect_features(tmp_path / "f.npz")
