"""IDX files (the MNIST format) and Fashion-MNIST read from them.

An IDX file is a 4-byte magic number — two zero bytes, a dtype code, the number of dimensions —
then one big-endian uint32 per dimension, then the array itself, big-endian, in C order
(LeCun et al., http://yann.lecun.com/exdb/mnist/). Files are often gzipped; both are read.

Fashion-MNIST (Xiao et al., 2017) is the 10-class, 28×28 grey-scale drop-in for MNIST that
Whitney et al. probe in §5; offline it comes from Debian's package ``dataset-fashion-mnist``,
which installs the four IDX files under ``/usr/share/datasets/fashion-mnist``.

References:
    Xiao, H., Rasul, K. & Vollgraf, R. (2017). Fashion-MNIST: a novel image dataset for benchmarking
    machine learning algorithms. arXiv:1708.07747

    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from probemeter._validation import check_scalar
from probemeter.data import ProbeData

__all__ = ["FASHION_MNIST_ROOT", "fashion_mnist", "fashion_mnist_heldout", "read_idx"]

FASHION_MNIST_ROOT = "/usr/share/datasets/fashion-mnist"

# IDX dtype code -> big-endian numpy dtype
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when it is gzipped (detected by content, not suffix)."""
    raw = path.read_bytes()
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"IDX file {str(path)!r} is a damaged gzip stream: {error}") from error


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file, gzipped or raw, into a native-byte-order numpy array.

    The dtype follows the header's code: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64; the shape is the header's dimensions.

    Raises:
        ValueError: naming the path, when the file does not exist, is not IDX (bad magic
            number or dtype code), or its header or data are truncated or too long.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"IDX file {str(path)!r} does not exist")
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise ValueError(
            f"IDX file {str(path)!r} is truncated: {len(raw)} bytes, shorter than the 4-byte "
            "magic number"
        )
    if raw[0:2] != b"\x00\x00":
        raise ValueError(
            f"{str(path)!r} is not an IDX file: its magic number {raw[:4].hex()} does not "
            "start with two zero bytes"
        )
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        known = ", ".join(f"0x{key:02X}" for key in _IDX_DTYPES)
        raise ValueError(
            f"IDX file {str(path)!r} has unknown dtype code 0x{code:02X}; known: {known}"
        )
    header_size = 4 + 4 * ndim
    if len(raw) < header_size:
        raise ValueError(
            f"IDX file {str(path)!r} is truncated: its header declares {ndim} dimensions "
            f"({header_size} bytes) but the file holds {len(raw)} bytes"
        )
    shape = tuple(int(size) for size in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = _IDX_DTYPES[code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(raw) - header_size
    if found != expected:
        problem = "truncated" if found < expected else "longer than its header says"
        raise ValueError(
            f"IDX file {str(path)!r} is {problem}: shape {shape} of {dtype.name} needs "
            f"{expected} data bytes but the file holds {found}"
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header_size).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def _find_fashion_file(root: Path, prefix: str, kind: str, ndim: int) -> Path | None:
    """``{prefix}-{kind}-idx{ndim}-ubyte`` gzipped or raw (or with a dot before ``idx``)."""
    for separator in ("-", "."):
        stem = f"{prefix}-{kind}{separator}idx{ndim}-ubyte"
        for name in (f"{stem}.gz", stem):
            if (root / name).is_file():
                return root / name
    return None


def _check_count(argument: str, value: object, available: int, split: str) -> None:
    if value is None:
        return
    check_scalar(value, argument, int, min_val=1)
    if value > available:
        raise ValueError(
            f"{argument}={value} exceeds the {available} examples of the Fashion-MNIST "
            f"{split} split"
        )


def _subsample(
    images: np.ndarray, labels: np.ndarray, size: int | None, seed: list[int], skip: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Examples ``skip .. skip + size`` of a seeded permutation (kept in file order), or all.

    Subsamples of one seed are nested: a smaller one is part of every larger one; with
    ``skip`` equal to another subsample's size the two are disjoint.
    """
    if size is None:
        return images, labels
    order = np.random.default_rng(seed).permutation(labels.shape[0])
    rows = np.sort(order[skip : skip + size])
    return images[rows], labels[rows]


def _read_fashion(root: str | Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Images and labels of both official splits, ``{"train": ..., "test": ...}``, checked."""
    root = Path(root)
    install = (
        "Debian's package dataset-fashion-mnist provides them "
        "(apt-get install dataset-fashion-mnist), or pass root= the folder that holds them"
    )
    if not root.is_dir():
        raise ValueError(f"Fashion-MNIST folder {str(root)!r} does not exist; {install}")
    wanted = {
        (split, kind): (prefix, kind, ndim)
        for split, prefix in (("train", "train"), ("test", "t10k"))
        for kind, ndim in (("images", 3), ("labels", 1))
    }
    paths = {key: _find_fashion_file(root, *spec) for key, spec in wanted.items()}
    missing = [
        f"{prefix}-{kind}-idx{ndim}-ubyte(.gz)"
        for key, (prefix, kind, ndim) in wanted.items()
        if paths[key] is None
    ]
    if missing:
        raise ValueError(
            f"Fashion-MNIST file(s) {', '.join(missing)} missing from {str(root)!r}; {install}"
        )
    labels = {split: read_idx(paths[split, "labels"]) for split in ("train", "test")}
    for split, values in labels.items():
        if values.ndim != 1:
            raise ValueError(
                f"Fashion-MNIST {split} labels {str(paths[split, 'labels'])!r} have shape "
                f"{values.shape}; expected (n,)"
            )
    splits = {}
    for split in ("train", "test"):
        images = read_idx(paths[split, "images"])
        if images.ndim != 3 or images.shape[0] != labels[split].size:
            raise ValueError(
                f"Fashion-MNIST {split} images {str(paths[split, 'images'])!r} have shape "
                f"{images.shape} for {labels[split].size} labels; expected "
                f"({labels[split].size}, height, width)"
            )
        splits[split] = images, labels[split]
    return splits


def fashion_mnist(
    root: str | Path = FASHION_MNIST_ROOT,
    *,
    n_train: int | None = None,
    n_test: int | None = None,
    standardize: bool = True,
    random_state: int = 0,
    name: str = "fashion-mnist-pixels",
) -> ProbeData:
    """Fashion-MNIST pixels as :class:`~probemeter.data.ProbeData`: 784-d, 10 classes.

    The official training split (60 000 images) is the pool and the official test split
    (``t10k``, 10 000 images) the test set. Pixels become float32 in [0, 1] (divided by 255),
    then, with ``standardize``, zero-mean unit-variance with pool statistics.

    Args:
        root: the folder holding ``{train,t10k}-{images-idx3,labels-idx1}-ubyte`` (``.gz`` or
            raw), as installed by Debian's ``dataset-fashion-mnist``.
        n_train, n_test: if given, a random subsample of that many pool / test examples,
            drawn without replacement (kept in file order). Each split has its own seeded
            stream, and for one ``random_state`` smaller subsamples are nested in larger ones.
        standardize: standardise features with pool statistics (ProbeData.from_arrays).
        random_state: seed of the subsamples.
        name: the ProbeData's name in tables and plots.

    Raises:
        ValueError: a missing folder or file (naming it and the Debian package), a corrupt
            file, images and labels of different counts, or ``n_train`` / ``n_test`` that is
            not a positive integer or exceeds its split.
    """
    splits = _read_fashion(root)
    _check_count("n_train", n_train, splits["train"][1].shape[0], "training")
    _check_count("n_test", n_test, splits["test"][1].shape[0], "test")
    # one stream per split, so the test subsample does not move when n_train changes
    train_images, train_labels = _subsample(*splits["train"], n_train, [random_state, 0])
    test_images, test_labels = _subsample(*splits["test"], n_test, [random_state, 1])

    def pixels(images: np.ndarray) -> np.ndarray:
        values = images.reshape(images.shape[0], -1).astype(np.float32)
        values /= np.float32(255.0)  # in place: no second full-size float32 array
        return values

    return ProbeData.from_arrays(
        pixels(train_images),
        train_labels,
        pixels(test_images),
        test_labels,
        standardize=standardize,
        n_classes=10,
        name=name,
        copy=False,  # the float32 pixels are this function's own: standardise them in place
    )


def fashion_mnist_heldout(
    root: str | Path = FASHION_MNIST_ROOT,
    *,
    n_train: int,
    n_heldout: int,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Official-training-split images *outside* the pool of ``fashion_mnist(n_train=n_train,
    random_state=random_state)``: raw uint8 images (n_heldout, 28, 28) and their labels.

    They are the next ``n_heldout`` examples of the pool's seeded permutation, so they never
    overlap the pool (nor the test split): the "another split" on which a representation such
    as a VAE or CNN is trained before it is probed (Whitney et al., App. C.1).

    Raises:
        ValueError: as :func:`fashion_mnist`, or ``n_train + n_heldout`` beyond the 60 000
            training images.
    """
    splits = _read_fashion(root)
    available = splits["train"][1].shape[0]
    _check_count("n_train", n_train, available, "training")
    _check_count("n_heldout", n_heldout, available, "training")
    if n_train + n_heldout > available:
        raise ValueError(
            f"n_train + n_heldout = {n_train + n_heldout} exceeds the {available} examples of "
            "the Fashion-MNIST training split"
        )
    return _subsample(*splits["train"], n_heldout, [random_state, 0], skip=n_train)
