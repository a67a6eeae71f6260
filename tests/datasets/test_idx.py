"""The IDX reader on hand-built files, and Fashion-MNIST on a miniature copy and the real one."""

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

import probemeter as pm
from probemeter.datasets import read_idx

FASHION_ROOT = Path("/usr/share/datasets/fashion-mnist")
real_fashion = pytest.mark.skipif(
    not FASHION_ROOT.is_dir(),
    reason="Fashion-MNIST IDX files not installed (Debian package dataset-fashion-mnist)",
)

# IDX dtype codes, written here independently of the reader
CODES = {"u1": 0x08, "i1": 0x09, "i2": 0x0B, "i4": 0x0C, "f4": 0x0D, "f8": 0x0E}


def idx_bytes(array: np.ndarray, code: int | None = None) -> bytes:
    """The IDX encoding of ``array``: magic, big-endian uint32 dims, big-endian data."""
    code = CODES[array.dtype.str[1:]] if code is None else code
    header = struct.pack(">BBBB", 0, 0, code, array.ndim)
    header += struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write(path: Path, payload: bytes, gz: bool = False) -> Path:
    path.write_bytes(gzip.compress(payload) if gz else payload)
    return path


def sample_array(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype.startswith("f"):
        return (rng.standard_normal(shape) * 1e3).astype(dtype)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    values.flat[0], values.flat[-1] = info.min, info.max  # extremes survive the byte order
    return values


# ---------------------------------------------------------------------------------------------
# read_idx
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gz"])
@pytest.mark.parametrize("shape", [(7,), (3, 4, 5)], ids=["1d", "3d"])
@pytest.mark.parametrize("dtype", list(CODES))
def test_read_idx_round_trip(tmp_path, dtype, shape, gz):
    array = sample_array(dtype, shape)
    path = write(tmp_path / ("a.idx.gz" if gz else "a.idx"), idx_bytes(array), gz)
    back = read_idx(path)
    assert back.shape == shape
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    np.testing.assert_array_equal(back, array)
    back[...] = 0  # an ordinary, writable array


def test_read_idx_detects_gzip_by_content_and_accepts_str(tmp_path):
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    gz_without_suffix = write(tmp_path / "images-idx2-ubyte", idx_bytes(array), gz=True)
    raw_with_suffix = write(tmp_path / "labels.gz", idx_bytes(array))
    np.testing.assert_array_equal(read_idx(str(gz_without_suffix)), array)
    np.testing.assert_array_equal(read_idx(raw_with_suffix), array)


def test_read_idx_empty_dimension(tmp_path):
    back = read_idx(write(tmp_path / "e.idx", idx_bytes(np.zeros((0, 28, 28), np.uint8))))
    assert back.shape == (0, 28, 28)


def test_read_idx_missing_file_names_path(tmp_path):
    path = tmp_path / "nowhere-idx1-ubyte.gz"
    with pytest.raises(ValueError, match=r"nowhere-idx1-ubyte\.gz.*does not exist"):
        read_idx(path)
    with pytest.raises(ValueError, match="does not exist"):
        read_idx(tmp_path)  # a folder is not a file


def test_read_idx_bad_magic(tmp_path):
    payload = bytearray(idx_bytes(np.arange(4, dtype=np.uint8)))
    payload[1] = 0x03
    with pytest.raises(ValueError, match=r"not an IDX file.*magic"):
        read_idx(write(tmp_path / "bad.idx", bytes(payload)))


def test_read_idx_unknown_dtype_code(tmp_path):
    payload = idx_bytes(np.arange(4, dtype=np.uint8), code=0x0A)
    with pytest.raises(ValueError, match="unknown dtype code 0x0A"):
        read_idx(write(tmp_path / "code.idx", payload))


@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gz"])
def test_read_idx_truncated_data(tmp_path, gz):
    payload = idx_bytes(np.arange(60, dtype=">i4").reshape(3, 4, 5))
    with pytest.raises(ValueError, match=r"truncated.*\(3, 4, 5\).*needs 240.*holds 236"):
        read_idx(write(tmp_path / "short.idx", payload[:-4], gz))


def test_read_idx_truncated_header(tmp_path):
    payload = idx_bytes(np.zeros((2, 3, 4), np.uint8))
    with pytest.raises(ValueError, match=r"truncated.*3 dimensions"):
        read_idx(write(tmp_path / "header.idx", payload[:10]))
    with pytest.raises(ValueError, match=r"truncated.*4-byte magic"):
        read_idx(write(tmp_path / "tiny.idx", b"\x00\x00"))
    with pytest.raises(ValueError, match=r"truncated.*4-byte magic"):
        read_idx(write(tmp_path / "empty.idx", b""))


def test_read_idx_trailing_bytes(tmp_path):
    payload = idx_bytes(np.arange(5, dtype=np.float64)) + b"\x00"
    with pytest.raises(ValueError, match="longer than its header says"):
        read_idx(write(tmp_path / "long.idx", payload))


def test_read_idx_damaged_gzip(tmp_path):
    compressed = gzip.compress(idx_bytes(np.arange(1000, dtype=np.int16)))
    with pytest.raises(ValueError, match="damaged gzip"):
        read_idx(write(tmp_path / "cut.idx.gz", compressed[: len(compressed) // 2]))


# ---------------------------------------------------------------------------------------------
# fashion_mnist on a miniature copy (always runs)
# ---------------------------------------------------------------------------------------------


def make_fashion(root: Path, n_train: int = 50, n_test: int = 20, gz: bool = True) -> Path:
    """Four IDX files in the Debian layout: 8×8 uint8 images, labels 0..9 in turn."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    suffix = ".gz" if gz else ""
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 8, 8), dtype=np.uint8)
        images[0, 0, 0], images[0, 0, 1] = 0, 255
        labels = (np.arange(n) % 10).astype(np.uint8)
        write(root / f"{prefix}-images-idx3-ubyte{suffix}", idx_bytes(images), gz)
        write(root / f"{prefix}-labels-idx1-ubyte{suffix}", idx_bytes(labels), gz)
    return root


@pytest.mark.parametrize("gz", [True, False], ids=["gz", "raw"])
def test_fashion_mnist_miniature_pixels(tmp_path, gz):
    root = make_fashion(tmp_path / "fm", gz=gz)
    data = pm.fashion_mnist(root, standardize=False)
    images = read_idx(next(root.glob("train-images*")))
    assert data.X_train.shape == (50, 64) and data.X_test.shape == (20, 64)
    assert data.X_train.dtype == np.float32 and data.n_classes == 10
    assert data.name == "fashion-mnist-pixels"
    np.testing.assert_array_equal(data.X_train, images.reshape(50, 64) / np.float32(255))
    assert data.X_train.min() == 0.0 and data.X_train.max() == 1.0
    np.testing.assert_array_equal(data.y_train, np.arange(50) % 10)


def test_fashion_mnist_miniature_standardized(tmp_path):
    data = pm.fashion_mnist(make_fashion(tmp_path / "fm"), name="mini")
    assert data.name == "mini"
    np.testing.assert_allclose(data.X_train.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(data.X_train.std(axis=0), 1.0, atol=1e-4)


def test_fashion_mnist_subsample_is_seeded_and_from_the_split(tmp_path):
    root = make_fashion(tmp_path / "fm")
    full = pm.fashion_mnist(root, standardize=False)
    first = pm.fashion_mnist(root, n_train=30, n_test=5, standardize=False, random_state=3)
    again = pm.fashion_mnist(root, n_train=30, n_test=5, standardize=False, random_state=3)
    other = pm.fashion_mnist(root, n_train=30, n_test=5, standardize=False, random_state=4)
    assert first.X_train.shape == (30, 64) and first.X_test.shape == (5, 64)
    assert first.fingerprint() == again.fingerprint() != other.fingerprint()
    rows = {row.tobytes(): label for row, label in zip(full.X_train, full.y_train)}
    assert len(rows) == 50  # random images: every row is unique
    for row, label in zip(first.X_train, first.y_train):
        assert rows[row.tobytes()] == label  # drawn from the pool, label kept with its image
    assert len({row.tobytes() for row in first.X_train}) == 30  # without replacement


@pytest.mark.filterwarnings("ignore:test labels .* never occur:UserWarning")  # 10 of 50
def test_fashion_mnist_subsamples_nest_and_splits_are_independent(tmp_path):
    root = make_fashion(tmp_path / "fm")
    small = pm.fashion_mnist(root, n_train=10, n_test=5, standardize=False)
    large = pm.fashion_mnist(root, n_train=40, n_test=5, standardize=False)
    np.testing.assert_array_equal(small.X_test, large.X_test)  # n_train leaves the test alone
    large_rows = {row.tobytes() for row in large.X_train}
    assert all(row.tobytes() in large_rows for row in small.X_train)


def test_fashion_mnist_heldout_is_disjoint_from_the_pool(tmp_path):
    """The held-out images are training-split images, none of them in the pool; together
    they are the first n_train + n_heldout rows of the pool's permutation."""
    root = make_fashion(tmp_path / "fm")
    pool = pm.fashion_mnist(root, n_train=30, standardize=False, random_state=2)
    images, labels = pm.datasets.fashion_mnist_heldout(
        root, n_train=30, n_heldout=15, random_state=2
    )
    assert images.shape == (15, 8, 8) and images.dtype == np.uint8 and labels.shape == (15,)
    pool_rows = {row.tobytes() for row in (pool.X_train * 255).round().astype(np.uint8)}
    held_rows = {row.tobytes() for row in images.reshape(15, -1)}
    assert not pool_rows & held_rows
    both = pm.fashion_mnist(root, n_train=45, standardize=False, random_state=2)
    both_rows = {row.tobytes() for row in (both.X_train * 255).round().astype(np.uint8)}
    assert both_rows == pool_rows | held_rows
    with pytest.raises(ValueError, match="n_train \\+ n_heldout = 51 exceeds the 50"):
        pm.datasets.fashion_mnist_heldout(root, n_train=30, n_heldout=21)


def test_fashion_mnist_whole_split_on_request(tmp_path):
    root = make_fashion(tmp_path / "fm")
    data = pm.fashion_mnist(root, n_train=50, n_test=20, standardize=False)
    np.testing.assert_array_equal(data.y_train, np.arange(50) % 10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_train": 51}, "n_train=51 exceeds the 50 examples of the Fashion-MNIST training"),
        ({"n_test": 21}, "n_test=21 exceeds the 20 examples of the Fashion-MNIST test"),
        ({"n_train": 0}, "n_train must be an integer"),
        ({"n_train": 10.0}, "n_train must be an integer"),
        ({"n_test": True}, "n_test must be an integer"),
    ],
)
def test_fashion_mnist_bad_counts(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        pm.fashion_mnist(make_fashion(tmp_path / "fm"), **kwargs)


def test_fashion_mnist_missing_folder_points_to_debian_package(tmp_path):
    with pytest.raises(ValueError) as raised:
        pm.fashion_mnist(tmp_path / "absent")
    message = str(raised.value)
    assert "absent" in message and "does not exist" in message
    assert "apt-get install dataset-fashion-mnist" in message and "root=" in message


def test_fashion_mnist_missing_file_is_named(tmp_path):
    root = make_fashion(tmp_path / "fm")
    (root / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(ValueError) as raised:
        pm.fashion_mnist(root)
    message = str(raised.value)
    assert "t10k-labels-idx1-ubyte(.gz)" in message and "train-" not in message
    assert "apt-get install dataset-fashion-mnist" in message and "root=" in message


def test_fashion_mnist_images_and_labels_disagree(tmp_path):
    root = make_fashion(tmp_path / "fm")
    labels = np.zeros(49, dtype=np.uint8)
    write(root / "train-labels-idx1-ubyte.gz", idx_bytes(labels), gz=True)
    with pytest.raises(ValueError, match=r"train images .* shape \(50, 8, 8\) for 49 labels"):
        pm.fashion_mnist(root)


def test_fashion_mnist_corrupt_file_surfaces_read_idx_error(tmp_path):
    root = make_fashion(tmp_path / "fm")
    write(root / "t10k-images-idx3-ubyte.gz", b"\x00\x00\x08\x03" + b"\x00" * 8, gz=True)
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte\.gz.*truncated"):
        pm.fashion_mnist(root)


# ---------------------------------------------------------------------------------------------
# the real Fashion-MNIST (Debian's dataset-fashion-mnist)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fashion():
    return pm.fashion_mnist(FASHION_ROOT, standardize=False)


@real_fashion
@pytest.mark.slow
def test_real_fashion_mnist_shapes_and_classes(fashion):
    assert fashion.X_train.shape == (60000, 784) and fashion.X_test.shape == (10000, 784)
    assert fashion.X_train.dtype == np.float32 and fashion.n_classes == 10
    np.testing.assert_array_equal(np.bincount(fashion.y_train), np.full(10, 6000))
    np.testing.assert_array_equal(np.bincount(fashion.y_test), np.full(10, 1000))


@real_fashion
@pytest.mark.slow
def test_real_fashion_mnist_pixel_range(fashion):
    for pixels in (fashion.X_train, fashion.X_test):
        assert pixels.min() == 0.0 and pixels.max() == 1.0
        levels = pixels * 255
        assert np.abs(levels - np.rint(levels)).max() < 1e-3  # k / 255 for integer k
        assert 0.2 < pixels.mean() < 0.4  # mostly dark background, not an all-zero read


@real_fashion
@pytest.mark.slow
def test_real_fashion_mnist_subsample(fashion):
    data = pm.fashion_mnist(n_train=1000, n_test=300, standardize=False, random_state=7)
    again = pm.fashion_mnist(n_train=1000, n_test=300, standardize=False, random_state=7)
    assert data.X_train.shape == (1000, 784) and data.X_test.shape == (300, 784)
    assert data.fingerprint() == again.fingerprint()
    assert len(np.unique(data.y_train)) == 10
    pool = {row.tobytes() for row in fashion.X_train}
    assert all(row.tobytes() in pool for row in data.X_train)


@real_fashion
@pytest.mark.slow
def test_real_fashion_mnist_n_train_too_large():
    with pytest.raises(ValueError, match="n_train=60001 exceeds the 60000"):
        pm.fashion_mnist(n_train=60001)
