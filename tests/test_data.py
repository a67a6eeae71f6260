"""Tests of ProbeData validation, standardisation, splitting, subsampling and file loading."""

from __future__ import annotations

import hashlib
import itertools
import warnings

import numpy as np
import pytest

from probemeter.data import ProbeData, layer_data, nested_subset, subset_permutation


def _xy(rows: int = 40, features: int = 3, classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features))
    y = np.arange(rows) % classes
    return x, y


# ---------------------------------------------------------------------------------------------
# validation: every error names the offending argument
# ---------------------------------------------------------------------------------------------


def test_valid_arrays_are_accepted_with_canonical_dtypes():
    x, y = _xy()
    data = ProbeData.from_arrays(x, y.astype(np.float64), test_size=10)
    assert data.X_train.dtype == np.float32
    assert data.X_test.dtype == np.float32
    assert data.y_train.dtype == np.int64
    assert data.y_test.dtype == np.int64
    assert data.pool_size == 30
    assert data.y_test.size == 10
    assert data.n_features == 3
    assert data.n_classes == 3


def test_column_vector_labels_are_accepted():
    x, y = _xy()
    data = ProbeData.from_arrays(x, y[:, None], test_size=10)
    assert data.y_train.ndim == 1


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (np.zeros((10, 2)), np.arange(9) % 2, r"\by\b.*9 labels.*\bX\b has 10 rows"),
        (np.zeros(10), np.arange(10) % 2, r"\bX\b must be a 2-D array"),
        (np.zeros((10, 2, 2)), np.arange(10) % 2, r"\bX\b has shape \(10, 2, 2\).*layer_data"),
        (np.zeros((10, 2, 2, 2)), np.arange(10) % 2, r"\bX\b must be a 2-D array"),
        (np.zeros((0, 3)), np.zeros(0, dtype=int), r"\bX\b is empty"),
        (np.zeros((10, 0)), np.arange(10) % 2, r"\bX\b is empty"),
        (np.array([["a", "b"]] * 10), np.arange(10) % 2, r"\bX\b must hold real numbers"),
        (np.zeros((10, 2)), (np.arange(10) % 2).reshape(5, 2), r"\by\b must be a 1-D array"),
    ],
    ids=["length-mismatch", "1-d", "3-d", "4-d", "no-rows", "no-columns", "strings", "2-d-labels"],
)
def test_bad_shapes_are_rejected(x, y, match):
    with pytest.raises(ValueError, match=match):
        ProbeData.from_arrays(x, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features_are_rejected_with_row(bad):
    x, y = _xy()
    x[7, 1] = bad
    with pytest.raises(ValueError, match=r"\bX\b contains NaN or inf.*row 7"):
        ProbeData.from_arrays(x, y)


def test_non_finite_test_features_are_rejected():
    x, y = _xy()
    x_test, y_test = _xy(seed=1)
    x_test[3, 0] = np.nan
    with pytest.raises(ValueError, match=r"\bX_test\b contains NaN or inf"):
        ProbeData.from_arrays(x, y, x_test, y_test)


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        (np.array([0.0, 1.5] * 20), r"\by\b must hold integer class indices"),
        (np.array([0.0, np.nan] * 20), r"\by\b must hold integer class indices"),
        (np.array(["cat", "dog"] * 20), r"\by\b must hold integer class indices.*dtype"),
        (np.array([0, -1] * 20), r"\by\b must be non-negative.*-1"),
        (np.full(40, 2), r"\by\b has a single class"),
    ],
    ids=["fractional", "nan", "strings", "negative", "single-class"],
)
def test_bad_labels_are_rejected(labels, match):
    x, _ = _xy()
    with pytest.raises(ValueError, match=match):
        ProbeData.from_arrays(x, labels)


def test_integer_valued_float_labels_are_accepted():
    x, _ = _xy()
    data = ProbeData.from_arrays(x, np.array([0.0, 1.0, 2.0, 1.0] * 10), test_size=8)
    assert set(np.unique(data.y_train).tolist()) == {0, 1, 2}


def test_test_labels_are_validated_by_name():
    x, y = _xy()
    x_test, _ = _xy(rows=12, seed=1)
    with pytest.raises(ValueError, match=r"\by_test\b has 11 labels but \bX_test\b has 12"):
        ProbeData.from_arrays(x, y, x_test, np.zeros(11, dtype=int))
    with pytest.raises(ValueError, match=r"\by_test\b must be non-negative"):
        ProbeData.from_arrays(x, y, x_test, -np.ones(12, dtype=int))


def test_feature_count_mismatch_is_rejected():
    x, y = _xy(features=3)
    x_test, y_test = _xy(features=4, seed=1)
    with pytest.raises(ValueError, match=r"\bX_test\b has 4 features but \bX\b has 3"):
        ProbeData.from_arrays(x, y, x_test, y_test)


def test_only_one_of_x_test_and_y_test_is_rejected():
    x, y = _xy()
    x_test, y_test = _xy(seed=1)
    with pytest.raises(ValueError, match=r"X_test and y_test"):
        ProbeData.from_arrays(x, y, X_test=x_test)
    with pytest.raises(ValueError, match=r"X_test and y_test"):
        ProbeData.from_arrays(x, y, y_test=y_test)


@pytest.mark.parametrize(
    "test_size", [0, 0.0, 1.0, 40, 41, -5, 1.5, True, False, "0.2", None, 0.001]
)
def test_bad_test_size_is_rejected(test_size):
    x, y = _xy(rows=40)
    with pytest.raises(ValueError, match=r"\btest_size\b"):
        ProbeData.from_arrays(x, y, test_size=test_size)


@pytest.mark.parametrize(
    ("test_size", "n_test"), [(0.25, 10), (1, 1), (0.5, 20), (30, 30), (np.int64(7), 7)]
)
def test_valid_test_size_gives_that_many_test_rows(test_size, n_test):
    x, y = _xy(rows=40, classes=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small test or pool set may miss a class
        data = ProbeData.from_arrays(x, y, test_size=test_size)
    assert data.y_test.size == n_test
    assert data.pool_size == 40 - n_test


def test_test_size_is_ignored_when_a_test_set_is_given():
    x, y = _xy(rows=40, classes=2)
    data = ProbeData.from_arrays(x, y, np.zeros((2, 3)), [0, 1], test_size=0.5)
    assert data.pool_size == 40
    assert data.y_test.size == 2


def test_n_classes_smaller_than_labels_is_rejected():
    x, y = _xy(classes=3)
    with pytest.raises(ValueError, match=r"\bn_classes\b=2.*at least 3"):
        ProbeData.from_arrays(x, y, n_classes=2)


def test_n_classes_counts_test_labels_and_can_be_larger():
    x, y = _xy(classes=2)
    x_test = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"2 of them never occur \(2, 3\).*labels='encode'"):
        ProbeData.from_arrays(x, y, x_test, [0, 1, 4, 1])  # classes 2 and 3 would be phantoms
    with pytest.warns(UserWarning):  # declared: an alphabet of 5 with classes unseen here
        data = ProbeData.from_arrays(x, y, x_test, [0, 1, 4, 1], n_classes=5)
    assert data.n_classes == 5
    data = ProbeData.from_arrays(x, y, n_classes=7)
    assert data.n_classes == 7


def test_unseen_test_labels_warn_naming_them():
    x, y = _xy(classes=2)
    x_test = np.zeros((5, 3))
    with pytest.warns(UserWarning, match=r"\[2, 3\].*never occur in the training pool"):
        data = ProbeData.from_arrays(x, y, x_test, [0, 1, 2, 3, 3])
    assert data.n_classes == 4


def test_no_warning_when_all_test_labels_are_seen():
    x, y = _xy(classes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ProbeData.from_arrays(x, y, np.zeros((3, 3)), [0, 1, 2])


# ---------------------------------------------------------------------------------------------
# standardisation and the split
# ---------------------------------------------------------------------------------------------


def test_standardisation_uses_training_pool_statistics_only():
    rng = np.random.default_rng(3)
    x = rng.normal(loc=5.0, scale=3.0, size=(200, 4))
    x[:, 2] = 7.0  # a constant column
    y = np.arange(200) % 2
    # a test set on a very different scale: if its statistics leaked, train stats would move
    x_test = rng.normal(loc=-50.0, scale=20.0, size=(30, 4))
    data = ProbeData.from_arrays(x, y, x_test, np.arange(30) % 2)
    np.testing.assert_allclose(data.X_train.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(data.X_train[:, [0, 1, 3]].std(axis=0), 1.0, atol=1e-5)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[2] = 1.0
    np.testing.assert_allclose(data.X_test, (x_test - mean) / std, rtol=1e-5, atol=1e-5)
    assert np.all(np.isfinite(data.X_train)) and np.all(np.isfinite(data.X_test))
    assert np.all(data.X_train[:, 2] == 0.0)
    # the test set is not itself standardised
    assert data.X_test[:, 0].mean() < -10


def test_standardisation_after_a_split_uses_the_pool_only():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(100, 2))
    x[:, 1] = np.arange(100.0) ** 2  # skewed, so pool and full-data statistics differ
    data = ProbeData.from_arrays(x, np.arange(100) % 2, test_size=0.3)
    np.testing.assert_allclose(data.X_train.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(data.X_train.std(axis=0), 1.0, atol=1e-5)
    assert abs(data.X_test[:, 1].mean()) > 1e-3  # test rows are transformed, not re-centred


def test_standardize_false_keeps_raw_values():
    x, y = _xy()
    data = ProbeData.from_arrays(x, y, x[:5], y[:5], standardize=False)
    np.testing.assert_array_equal(data.X_train, x.astype(np.float32))
    np.testing.assert_array_equal(data.X_test, x[:5].astype(np.float32))


def test_split_shuffles_before_splitting_and_keeps_rows_intact():
    rows = 100
    x = np.arange(rows, dtype=np.float64)[:, None].repeat(2, axis=1)
    x[:, 1] = -x[:, 1]
    y = np.arange(rows) % 4
    data = ProbeData.from_arrays(x, y, test_size=0.2, standardize=False)
    test_ids = data.X_test[:, 0].astype(int)
    train_ids = data.X_train[:, 0].astype(int)
    # not the last (nor the first) 20 rows of the file
    assert set(test_ids.tolist()) != set(range(80, 100))
    assert set(test_ids.tolist()) != set(range(20))
    # a partition of the rows, with features and labels kept together
    assert sorted(np.r_[train_ids, test_ids].tolist()) == list(range(rows))
    np.testing.assert_array_equal(data.y_train, train_ids % 4)
    np.testing.assert_array_equal(data.y_test, test_ids % 4)
    np.testing.assert_array_equal(data.X_train[:, 1], -data.X_train[:, 0])


def test_split_is_seeded_by_random_state():
    x, y = _xy(rows=60)
    a = ProbeData.from_arrays(x, y, test_size=0.2, random_state=1)
    b = ProbeData.from_arrays(x, y, test_size=0.2, random_state=1)
    c = ProbeData.from_arrays(x, y, test_size=0.2, random_state=2)
    np.testing.assert_array_equal(a.X_test, b.X_test)
    assert a.fingerprint() == b.fingerprint()
    assert not np.array_equal(a.X_test, c.X_test)
    assert a.fingerprint() != c.fingerprint()


def test_groups_follow_their_rows_through_the_split():
    rows = 50
    x = np.arange(rows, dtype=float)[:, None]
    y = np.arange(rows) % 2
    groups = np.arange(rows) * 10
    data = ProbeData.from_arrays(x, y, groups=groups, test_size=10, standardize=False)
    np.testing.assert_array_equal(data.groups_train, data.X_train[:, 0].astype(int) * 10)
    np.testing.assert_array_equal(data.groups_test, data.X_test[:, 0].astype(int) * 10)
    with pytest.raises(ValueError, match=r"\bgroups\b has 3 labels"):
        ProbeData.from_arrays(x, y, groups=[1, 2, 3])
    with pytest.raises(ValueError, match=r"\bgroups_test\b"):
        ProbeData.from_arrays(x, y, groups_test=[1, 2, 3])


# ---------------------------------------------------------------------------------------------
# check_sizes
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    x, y = _xy(rows=60)
    return ProbeData.from_arrays(x, y, test_size=10, name="toy")  # pool of 50


def test_check_sizes_returns_sorted_unique_ints(data):
    sizes = data.check_sizes([50, 10, 10.0, 3, np.int32(20)])
    assert sizes.dtype == np.int64
    assert sizes.tolist() == [3, 10, 20, 50]
    assert data.check_sizes(7).tolist() == [7]


@pytest.mark.parametrize(
    ("sizes", "match"),
    [
        ([10, 51], r"\bsizes\b asks for 51.*'toy' holds 50"),
        ([0, 10], r"\bsizes\b must be >= 1"),
        ([-3], r"\bsizes\b must be >= 1"),
        ([10.5], r"\bsizes\b must be integers"),
        ([np.nan], r"\bsizes\b must be integers"),
        ([], r"\bsizes\b is empty"),
    ],
)
def test_check_sizes_rejects_bad_sizes(data, sizes, match):
    with pytest.raises(ValueError, match=match):
        data.check_sizes(sizes)


@pytest.mark.parametrize("sizes", [["10"], None])
def test_check_sizes_rejects_non_numbers_with_value_error(data, sizes):
    with pytest.raises(ValueError, match=r"\bsizes\b"):
        data.check_sizes(sizes)


def test_check_sizes_names_the_given_argument(data):
    with pytest.raises(ValueError, match=r"\bn_values\b asks for 1000"):
        data.check_sizes([1000], argument="n_values")


# ---------------------------------------------------------------------------------------------
# nested subsets
# ---------------------------------------------------------------------------------------------


def test_nested_subsets_are_prefixes_per_seed():
    pool = 500
    sizes = [1, 10, 37, 100, 499, 500]
    for seed in range(3):
        subsets = [nested_subset(pool, n, random_state=11, seed=seed) for n in sizes]
        for small, large in itertools.pairwise(subsets):
            np.testing.assert_array_equal(large[: small.size], small)
        assert [s.size for s in subsets] == sizes


def test_nested_subsets_are_drawn_without_replacement():
    subset = nested_subset(1297, 1297, random_state=0, seed=0)
    assert np.unique(subset).size == 1297  # every pool example, each once
    subset = nested_subset(1297, 600, random_state=0, seed=1)
    assert np.unique(subset).size == 600
    assert subset.min() >= 0 and subset.max() < 1297


def test_nested_subsets_differ_across_seeds_and_random_states():
    a = nested_subset(300, 50, random_state=0, seed=0)
    assert not np.array_equal(a, nested_subset(300, 50, random_state=0, seed=1))
    assert not np.array_equal(a, nested_subset(300, 50, random_state=1, seed=0))
    # and are not merely the first n rows of the pool
    assert not np.array_equal(np.sort(a), np.arange(50))


def test_nested_subsets_are_deterministic():
    a = nested_subset(300, 50, random_state=4, seed=2)
    np.testing.assert_array_equal(a, nested_subset(300, 50, random_state=4, seed=2))
    np.testing.assert_array_equal(a, subset_permutation(300, 4, 2)[:50])


@pytest.mark.parametrize("n", [0, -1, 301])
def test_nested_subset_rejects_bad_sizes(n):
    with pytest.raises(ValueError, match=r"\bn\b"):
        nested_subset(300, n, random_state=0, seed=0)


def test_non_integer_n_classes_raises():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 3
    with pytest.raises(ValueError, match="n_classes must be an integer"):
        ProbeData.from_arrays(X, y, n_classes=3.7)


def test_a_negative_random_state_is_refused_by_name():
    X, y = np.zeros((10, 2)), np.arange(10) % 2
    with pytest.raises(ValueError, match="random_state must be an integer >= 0; got -1"):
        ProbeData.from_arrays(X, y, random_state=-1)


def _entry_points():
    import probemeter.curves.curve as curve
    import probemeter.mdl.controls as controls
    import probemeter.mdl.online as online
    import probemeter.mdl.variational as variational
    import probemeter.pareto.memorisation as memorisation
    import probemeter.pareto.sweeps as sweeps
    import probemeter.power.paired as paired
    from probemeter.probes import MLP

    return {
        "loss_data_curve": lambda data: curve.loss_data_curve(data),
        "online_codelength": lambda data: online.online_codelength(data),
        "variational_codelength": lambda data: variational.variational_codelength(data),
        "control_task": lambda data: controls.control_task(data),
        "shuffled_labels": lambda data: controls.shuffled_labels(data),
        "memorisation_complexity": lambda data: memorisation.memorisation_complexity(
            data, [MLP((4,))]
        ),
        "linear_points": lambda data: sweeps.linear_points(data, "task", "rep"),
        "paired_data": lambda data: paired.paired_data(data, data),
    }


@pytest.mark.parametrize("entry", list(_entry_points()))
def test_arrays_where_probe_data_is_expected_are_refused_by_name(entry):
    X, y = _xy()
    with pytest.raises(ValueError, match=r"must be a ProbeData; got ndarray\. .*from_arrays"):
        _entry_points()[entry](X)
    with pytest.raises(ValueError, match=r"must be a ProbeData; got tuple"):
        _entry_points()[entry]((X, y))


# ---------------------------------------------------------------------------------------------
# labels as users hold them: gapped indices refused, any labels encoded; torch tensors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("offset", "scale"), [(1, 1), (0, 1000)])
def test_gapped_class_indices_are_refused_offering_encode(offset, scale):
    x, y = _xy(classes=2)
    gapped = y * scale + offset  # {1, 2} (1-based) or {0, 1000} (sparse)
    with pytest.raises(ValueError, match=r"never occur.*labels='encode' to map the 2 distinct"):
        ProbeData.from_arrays(x, gapped)
    data = ProbeData.from_arrays(x, gapped, labels="encode")
    assert data.n_classes == 2 and data.classes == (offset, scale + offset)
    plain = ProbeData.from_arrays(x, y)
    np.testing.assert_array_equal(data.y_train, plain.y_train)  # same split, same indices
    np.testing.assert_array_equal(data.y_test, plain.y_test)


def test_string_labels_are_encoded_over_pool_and_test_in_sorted_order():
    x, _ = _xy(rows=6)
    y = np.array(["NOUN", "VERB", "DET", "NOUN", "VERB", "DET"])
    with pytest.warns(UserWarning, match=r"test labels \[0\] never occur"):  # ADJ: test only
        data = ProbeData.from_arrays(x, y, x[:3], ["DET", "ADJ", "DET"], labels="encode")
    assert data.classes == ("ADJ", "DET", "NOUN", "VERB") and data.n_classes == 4
    assert data.y_train.tolist() == [2, 3, 1, 2, 3, 1] and data.y_test.tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match=r"dtype <U4.*labels='encode'"):
        ProbeData.from_arrays(x, y)


def test_boolean_and_categorical_labels():
    import pandas as pd

    x, y = _xy(classes=2)
    with pytest.raises(ValueError, match=r"dtype bool.*labels='encode'"):
        ProbeData.from_arrays(x, y == 1)
    flags = ProbeData.from_arrays(x, y == 1, labels="encode")
    assert flags.classes == (False, True)
    category = pd.Series(np.where(y == 1, "yes", "no"), dtype="category")
    assert ProbeData.from_arrays(x, category, labels="encode").classes == ("no", "yes")


def test_labels_that_cannot_be_encoded_or_a_bad_mode_are_named():
    x, _ = _xy(rows=4)
    with pytest.raises(ValueError, match="cannot be ordered"):
        ProbeData.from_arrays(x, np.array(["a", 1, "b", 2], dtype=object), labels="encode")
    with pytest.raises(ValueError, match="NaN"):
        ProbeData.from_arrays(x, [0.0, np.nan, 1.0, 0.0], labels="encode")
    with pytest.raises(ValueError, match="labels must be one of"):
        ProbeData.from_arrays(x, [0, 1, 0, 1], labels="strings")
    with pytest.raises(ValueError, match="n_classes is implied"):
        ProbeData.from_arrays(x, [0, 1, 0, 1], labels="encode", n_classes=3)


def test_torch_tensors_of_any_dtype_and_grad_are_accepted():
    import torch

    x, y = _xy()
    reference = ProbeData.from_arrays(x.astype(np.float32), y)
    leaf = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    from_tensors = ProbeData.from_arrays(leaf * 1.0, torch.from_numpy(y))
    np.testing.assert_array_equal(from_tensors.X_train, reference.X_train)
    np.testing.assert_array_equal(from_tensors.y_test, reference.y_test)
    low = torch.tensor(x, dtype=torch.bfloat16)
    half = ProbeData.from_arrays(low, y, low[:5], y[:5], standardize=False)
    assert half.X_train.dtype == np.float32
    np.testing.assert_array_equal(half.X_train, low.float().numpy())  # widened exactly
    assert not np.array_equal(half.X_train, x.astype(np.float32))  # really bf16-rounded


def _old_fingerprint(data: ProbeData) -> str:
    """The digest as computed before fingerprint() hashed the buffers in place (copies made
    with tobytes), with the class labels when known."""
    import hashlib

    digest = hashlib.sha256()
    for array in (data.X_train, data.y_train, data.X_test, data.y_test):
        digest.update(str(array.shape).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(str(data.n_classes).encode())
    if data.classes is not None:
        digest.update(repr(data.classes).encode())
    return digest.hexdigest()[:16]


def test_save_and_load_round_trip_memory_mapped_or_in_memory(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 4))
    labels = np.array(["noun", "verb", "adj"])[np.arange(30) % 3]
    data = ProbeData.from_arrays(
        X, labels, name="words", labels="encode", groups=np.arange(30) % 7, test_size=10
    )
    folder = data.save(tmp_path / "saved")
    assert sorted(p.name for p in folder.iterdir()) == [
        "X_test.npy", "X_train.npy", "groups_test.npy", "groups_train.npy", "pool_mean.npy",
        "pool_std.npy", "probe_data.json", "y_test.npy", "y_train.npy",
    ]  # fmt: skip
    # x = z·σ + μ gives back the raw pool rows (each a row of X), to float32 rounding
    raw = data.X_train * data.pool_std + data.pool_mean
    nearest = np.abs(raw[:, None, :] - X[None, :, :]).max(axis=2).min(axis=1)
    assert nearest.max() < 1e-5
    for mmap in (True, False):
        loaded = ProbeData.load(folder, mmap=mmap)
        # the pool's moments, kept for writing a probe back in the raw features' space
        np.testing.assert_array_equal(loaded.pool_mean, data.pool_mean)
        np.testing.assert_array_equal(loaded.pool_std, data.pool_std)
        assert isinstance(loaded.X_train, np.memmap) is mmap
        assert loaded.fingerprint() == data.fingerprint() == _old_fingerprint(data)
        assert (loaded.name, loaded.n_classes, loaded.classes) == (
            "words",
            3,
            ("adj", "noun", "verb"),
        )
        for name in ("X_train", "y_train", "X_test", "y_test", "groups_train", "groups_test"):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(data, name))
    assert not ProbeData.load(folder).X_train.flags.writeable  # read-only maps of the files
    # saving data without groups over a folder that had them removes the stale group files
    ProbeData.from_arrays(X, np.arange(30) % 3).save(folder)
    assert ProbeData.load(folder).groups_train is None


def test_load_refuses_incomplete_or_foreign_folders(tmp_path):
    with pytest.raises(ValueError, match=r"saved ProbeData .* does not exist"):
        ProbeData.load(tmp_path / "nothing")
    folder = ProbeData.from_arrays(*_xy()).save(tmp_path / "d")
    (folder / "y_test.npy").unlink()
    with pytest.raises(ValueError, match=r"lacks y_test\.npy"):
        ProbeData.load(folder)
    (folder / "probe_data.json").write_text('{"schema": "something else"}')
    with pytest.raises(ValueError, match="holds no saved ProbeData"):
        ProbeData.load(folder)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        ProbeData.from_arrays(*_xy()).save(tmp_path / "file")


def test_fingerprint_of_memory_maps_copies_nothing(tmp_path):
    import tracemalloc

    rng = np.random.default_rng(0)
    data = ProbeData.from_arrays(rng.normal(size=(20_000, 100)), np.arange(20_000) % 4)
    loaded = ProbeData.load(data.save(tmp_path / "d"))
    expected = _old_fingerprint(data)
    tracemalloc.start()
    assert loaded.fingerprint() == expected
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1_000_000  # the pool is 6.4 MB: hashed in place, never copied


# ---------------------------------------------------------------------------------------------
# features and labels in the containers users hold them in
# ---------------------------------------------------------------------------------------------


def _same(data: ProbeData, reference: ProbeData) -> None:
    """Exactly the same arrays (and class labels) as ``reference``."""
    for part in ("X_train", "y_train", "X_test", "y_test"):
        np.testing.assert_array_equal(getattr(data, part), getattr(reference, part))
    assert data.X_train.dtype == np.float32 and data.y_train.dtype == np.int64
    assert (data.n_classes, data.classes) == (reference.n_classes, reference.classes)


def test_pandas_frames_and_series_give_the_arrays_they_hold():
    import pandas as pd

    x, y = _xy()
    reference = ProbeData.from_arrays(x, y)
    frame = pd.DataFrame(x, columns=["a", "b", "c"])
    _same(ProbeData.from_arrays(frame, pd.Series(y)), reference)
    _same(ProbeData.from_arrays(frame.astype("float32"), pd.Series(y)), reference)
    series_of_rows = pd.Series(list(x))  # one array per cell, as a column of embeddings
    _same(ProbeData.from_arrays(series_of_rows, y), reference)


def test_a_pandas_categorical_label_column_is_encoded_by_category():
    import pandas as pd

    x, y = _xy(classes=3)
    tags = pd.Categorical(np.array(["NOUN", "ADJ", "VERB"])[y], categories=["VERB", "NOUN", "ADJ"])
    frame = pd.DataFrame({"tag": tags})
    data = ProbeData.from_arrays(x, frame["tag"], labels="encode")
    assert data.classes == ("ADJ", "NOUN", "VERB") and data.n_classes == 3
    plain = ProbeData.from_arrays(x, y)  # the same split: NOUN (y = 0) is 1, ADJ (y = 1) is 0
    np.testing.assert_array_equal(data.y_train, np.array([1, 0, 2])[plain.y_train])
    np.testing.assert_array_equal(data.y_test, np.array([1, 0, 2])[plain.y_test])
    with pytest.raises(ValueError, match=r"dtype object.*labels='encode'"):
        ProbeData.from_arrays(x, frame["tag"])


def _hugging_face_datasets():
    """The ``datasets`` package, or a skip where it is missing (without it, ``import datasets``
    can find the namespace package ``tests/datasets`` instead)."""
    datasets = pytest.importorskip("datasets")
    if not hasattr(datasets, "Dataset"):
        pytest.skip("Hugging Face datasets is not installed")
    return datasets


def test_hugging_face_dataset_columns_in_every_format():
    datasets = _hugging_face_datasets()
    x, y = _xy()
    reference = ProbeData.from_arrays(x.astype(np.float32), y)
    table = datasets.Dataset.from_dict({"features": x.astype(np.float32).tolist(), "label": y})
    for format_type in (None, "numpy", "torch", "pandas", "arrow"):
        ds = table.with_format(format_type)
        _same(ProbeData.from_arrays(ds["features"], ds["label"]), reference)
    test = datasets.Dataset.from_dict({"features": x[:5].tolist(), "label": y[:5]})
    given = ProbeData.from_arrays(
        table["features"], table["label"], test["features"], test["label"]
    )
    np.testing.assert_array_equal(given.y_test, y[:5])


def test_lists_of_rows_and_of_blocks_are_stacked_and_concatenated():
    import torch

    x, y = _xy(rows=10)
    reference = ProbeData.from_arrays(x, y, x[:4], y[:4])
    rows = [torch.tensor(row, requires_grad=True) for row in x]  # one tensor per example
    _same(ProbeData.from_arrays(rows, y, tuple(x[:4]), y[:4]), reference)
    blocks = [torch.from_numpy(x[:3]), x[3:7], x[7:]]  # batches, as collected
    labels = [y[:3], torch.from_numpy(y[3:7]), list(y[7:])]
    _same(ProbeData.from_arrays(blocks, labels, [x[:4]], [y[:4]]), reference)
    scalars = [torch.tensor(label) for label in y]  # one 0-d tensor per label
    _same(ProbeData.from_arrays(x.tolist(), scalars, x[:4], y[:4]), reference)


@pytest.mark.parametrize(
    ("features", "message"),
    [
        ([np.zeros(3), np.zeros((2, 3))], r"^X: element 1 is 2-D but element 0 is 1-D; give one"),
        ([np.zeros(3)] * 4 + [np.zeros(2)], r"^X: element 4 has shape \(2,\) but element 0 has"),
        ([np.zeros((2, 3)), np.zeros((5, 4))], r"^X: element 1 has shape \(5, 4\) but element 0"),
        ([[0.0, 1.0], [2.0]], r"^X: element 1 has shape \(1,\) but element 0 has shape \(2,\)"),
        ([np.float64(1.0), np.zeros(3)], r"^X: element 0 has shape \(\); each element must be"),
    ],
    ids=["rows-and-blocks", "ragged-rows", "ragged-blocks", "ragged-lists", "scalar-first"],
)
def test_mixed_or_ragged_lists_name_the_argument_and_the_element(features, message):
    with pytest.raises(ValueError, match=message):
        ProbeData.from_arrays(features, [0, 1, 0, 1, 0][: len(features)])
    x, y = _xy(rows=6)
    with pytest.raises(ValueError, match=message.replace("X:", "X_test:")):
        ProbeData.from_arrays(x, y, features, [0, 1, 0, 1, 0][: len(features)])


def test_label_lists_name_their_argument():
    x, y = _xy(rows=6)
    with pytest.raises(ValueError, match=r"^y: element 1 is 1-D but element 0 is 0-D"):
        ProbeData.from_arrays(x, [np.int64(0), y[1:]])
    with pytest.raises(ValueError, match=r"^y_test: element 1 is 2-D but element 0 is 1-D"):
        ProbeData.from_arrays(x, y, x[:3], [y[:1], y[1:3, None]])


@pytest.mark.parametrize("container", ["numpy", "pandas", "list of tensors", "list", "datasets"])
def test_gapped_indices_are_refused_from_every_container(container):
    x, y = _xy(classes=2)
    gapped = y + 1  # 1-based: class 0 never occurs
    if container == "pandas":
        import pandas as pd

        gapped = pd.Series(gapped)
    elif container == "list of tensors":
        import torch

        gapped = [torch.from_numpy(gapped[:25]), torch.from_numpy(gapped[25:])]
    elif container == "list":
        gapped = gapped.tolist()
    elif container == "datasets":
        datasets = _hugging_face_datasets()
        gapped = datasets.Dataset.from_dict({"y": gapped})["y"]
    with pytest.raises(ValueError, match=r"never occur.*labels='encode' to map the 2 distinct"):
        ProbeData.from_arrays(x, gapped)
    assert ProbeData.from_arrays(x, gapped, labels="encode").classes == (1, 2)


# ---------------------------------------------------------------------------------------------
# features with a layer axis: one ProbeData per layer, all split alike
# ---------------------------------------------------------------------------------------------


def _layered(rows: int = 30, layers: int = 4, features: int = 2) -> np.ndarray:
    """X[i, l, j] = 1000 i + 10 l + j: each value tells its row, layer and feature."""
    axes = np.arange(rows), np.arange(layers), np.arange(features)
    row, layer, feature = np.meshgrid(*axes, indexing="ij")
    return (1000 * row + 10 * layer + feature).astype(np.float64)


def test_layer_data_splits_every_layer_identically():
    X, y = _layered(), np.arange(30) % 3
    data = layer_data(X, y, standardize=False, random_state=4)
    assert list(data) == ["layer-0", "layer-1", "layer-2", "layer-3"]
    rows = {part: None for part in ("X_train", "X_test")}
    for layer, (name, item) in enumerate(data.items()):
        assert item.name == name
        for part in rows:
            values = getattr(item, part)
            row = (values[:, 0] - 10 * layer) / 1000  # the row each example came from
            np.testing.assert_array_equal(values[:, 1], 1000 * row + 10 * layer + 1)
            if rows[part] is None:
                rows[part] = row
            np.testing.assert_array_equal(row, rows[part])  # the same rows, in the same order
        np.testing.assert_array_equal(item.y_train, rows["X_train"].astype(int) % 3)
        np.testing.assert_array_equal(item.y_test, rows["X_test"].astype(int) % 3)
    assert sorted(np.concatenate(list(rows.values()))) == list(range(30))
    single = ProbeData.from_arrays(X[:, 2], y, standardize=False, random_state=4)
    _same(data["layer-2"], single)


def test_layer_data_with_a_test_set_choice_of_layers_and_encoded_labels():
    X, tags = _layered(), np.array(["b", "a", "c"])[np.arange(30) % 3]
    data = layer_data(
        X[:20], tags[:20], X[20:], tags[20:], layers=[3, 1], prefix="bert", labels="encode"
    )
    assert list(data) == ["bert-3", "bert-1"]
    assert {item.classes for item in data.values()} == {("a", "b", "c")}
    reference = ProbeData.from_arrays(X[:20, 1], tags[:20], X[20:, 1], tags[20:], labels="encode")
    _same(data["bert-1"], reference)
    assert list(layer_data(X, tags, layers=2, labels="encode")) == ["layer-2"]


def test_layer_data_takes_lists_of_examples_or_of_blocks():
    import torch

    X, y = _layered(rows=12), np.arange(12) % 2
    reference = layer_data(X, y)
    per_example = layer_data(list(X), y)  # (n_layers, n_features) each
    blocks = layer_data([torch.from_numpy(X[:5]), torch.from_numpy(X[5:])], [y[:5], y[5:]])
    for name, item in reference.items():
        _same(per_example[name], item)
        _same(blocks[name], item)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda X, y: layer_data(X[:, 0], y),
            r"X must be a 3-D array of shape \(n_examples, n_lay",
        ),
        (lambda X, y: layer_data(X, y, X[:5, :3], y[:5]), r"X_test has shape \(5, 3, 2\) but X"),
        (lambda X, y: layer_data(X, y, layers=4), r"layer 4 does not exist; X has 4 layers \(0..3"),
        (lambda X, y: layer_data(X, y, layers=[0, -1]), r"layers must be a list of non-negative"),
        (lambda X, y: layer_data(X, y, layers=[1, 1]), r"layers must be a list of distinct"),
        (lambda X, y: layer_data(X, y, layers="last"), r'layers must be "all", a layer index'),
        (lambda X, y: layer_data(X, y, name="x"), r"pass prefix, not name"),
        (lambda X, y: layer_data(X, y, prefix=""), r"prefix must be a non-empty string"),
        (lambda X, y: layer_data(X, y + 1), r"never occur.*labels='encode'"),
    ],
    ids=[
        "2-d",
        "test-layers",
        "missing-layer",
        "negative",
        "twice",
        "word",
        "name",
        "prefix",
        "gapped",
    ],
)
def test_layer_data_refuses_bad_input_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call(_layered(), np.arange(30) % 3)


def test_the_fingerprint_tells_class_labels_apart_and_ignores_their_absence():
    x, y = _xy(classes=2)
    plain = ProbeData.from_arrays(x, y)
    named = ProbeData.from_arrays(x, np.array(["a", "b"])[y], labels="encode")
    renamed = ProbeData.from_arrays(x, np.array(["a", "c"])[y], labels="encode")
    assert named.fingerprint() != renamed.fingerprint() != plain.fingerprint()
    legacy = hashlib.sha256()  # the fingerprint of data without class labels is unchanged
    for array in (plain.X_train, plain.y_train, plain.X_test, plain.y_test):
        legacy.update(str(array.shape).encode() + np.ascontiguousarray(array).tobytes())
    legacy.update(b"2")
    assert plain.fingerprint() == legacy.hexdigest()[:16]
