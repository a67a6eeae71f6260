"""Pools larger than memory: probe data split and standardised a block of rows at a time
(RowSplit.save, FeatureCache.split_probe_data), the same files byte for byte as the in-memory
path; minibatches read from a large memory-mapped pool with pread (probemeter._resident), the
same numbers as gathering through the map; and a pool larger than a resident-memory ceiling
trains (a subprocess's peak RSS)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import probemeter._resident as resident
import probemeter.data as data_module
from probemeter import Execution
from probemeter.curves.curve import loss_data_curve
from probemeter.data import ProbeData, RowSplit
from probemeter.encoders.cache import FeatureCache
from probemeter.probes import MLP
from probemeter.training import TrainingConfig

FILES = (
    "X_train.npy",
    "X_test.npy",
    "y_train.npy",
    "y_test.npy",
    "pool_mean.npy",
    "pool_std.npy",
    "probe_data.json",
)


def _task(rows: int, width: int, seed: int = 0) -> tuple[np.ndarray, RowSplit]:
    rng = np.random.default_rng(seed)
    scales = rng.uniform(0.01, 300.0, width)  # far from standardised, so the moments matter
    X = (rng.normal(size=(rows, width)) * scales + scales).astype(np.float32)
    X[:, 0] = 7.0  # a constant column: its std is taken as 1
    y = (X[:, 1:] @ rng.normal(size=width - 1) > 0).astype(np.int64) + (np.arange(rows) % 3 == 0)
    order = rng.permutation(rows)
    test, pool = order[: rows // 4], order[rows // 4 :]
    return X, RowSplit(pool, test, y[pool], y[test], 3, ("low", "mid", "high"))


@pytest.mark.parametrize(
    ("rows", "width", "elements"),
    [(500, 7, 1 << 22), (2001, 33, 1000), (300, 1, 64), (120, 300, 299)],
)
def test_streamed_split_writes_the_in_memory_files_byte_for_byte(
    tmp_path, monkeypatch, rows, width, elements
) -> None:
    # few elements per block: many blocks, one row per block, blocks narrower than a row
    monkeypatch.setattr(data_module, "_STANDARDIZE_ELEMENTS", elements)
    X, split = _task(rows, width)
    stored = tmp_path / "features.npy"
    np.save(stored, X)
    mapped = np.load(stored, mmap_mode="r")
    cache = FeatureCache(tmp_path / "cache")
    key = {"features": "x", "rows": rows}
    in_memory = cache.probe_data(key, lambda: split.probe_data(mapped, name="x"))
    streamed = FeatureCache(tmp_path / "streamed").split_probe_data(key, mapped, split, name="x")
    folders = [c.root / "probe-data" for c in (cache, FeatureCache(tmp_path / "streamed"))]
    (first,), (second,) = (list(folder.iterdir()) for folder in folders)
    assert first.name == second.name  # the same key
    for name in FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert streamed.fingerprint() == in_memory.fingerprint()
    assert streamed.classes == ("low", "mid", "high")
    assert sorted(p.name for p in second.iterdir()) == sorted(FILES)  # no temporaries left


def test_streamed_split_reads_large_layer_files_with_pread(tmp_path, monkeypatch) -> None:
    """float32, float16 and bfloat16 layers of FeatureCache.layers, read with pread (every
    file counts as large here), give the data of the in-memory path on the same layers."""
    monkeypatch.setattr(resident, "RESIDENT_FILE_BYTES", 0)
    X, split = _task(400, 16, seed=3)
    cache = FeatureCache(tmp_path)
    for storage in ("float32", "float16", "bfloat16"):
        (layer,) = cache.layers(
            {"m": 1}, ["x"], (1, *X.shape), lambda out: out[0].__setitem__(slice(None), X),
            storage=storage,
        )  # fmt: skip
        assert resident.FileRows.of(getattr(layer, "bits", layer)) is not None
        key = {"storage": storage}
        streamed = cache.split_probe_data(key, layer, split, name="x")
        expected = split.probe_data(np.asarray(layer, dtype=np.float32), name="x")
        np.testing.assert_array_equal(streamed.X_train, expected.X_train)
        np.testing.assert_array_equal(streamed.X_test, expected.X_test)
        assert cache.split_probe_data(key, layer, split, name="x").fingerprint() == (
            expected.fingerprint()
        )


def test_streamed_split_refuses_what_from_arrays_refuses(tmp_path) -> None:
    X, split = _task(100, 4)
    X[split.test[3], 2] = np.nan
    with pytest.raises(ValueError, match=f"NaN or inf in row {split.test[3]}"):
        split.save(tmp_path / "a", lambda rows: X[rows], 4, name="x")
    assert not (tmp_path / "a" / "probe_data.json").exists()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["X_train.npy"]
    one_class = RowSplit(split.train, split.test, split.y_train * 0, split.y_test * 0, 1)
    with pytest.raises(ValueError, match="single class"):
        one_class.save(tmp_path / "b", lambda rows: X[rows], 4, name="x")


def test_minibatches_read_with_pread_give_the_mapped_numbers(tmp_path, monkeypatch) -> None:
    X, split = _task(1200, 24, seed=5)
    data = FeatureCache(tmp_path).split_probe_data({"k": 1}, X, split, name="x")
    assert isinstance(data.X_train, np.memmap)
    config = TrainingConfig(steps=60, batch_size=64, lr=1e-2)

    def curve(data: ProbeData) -> np.ndarray:
        result = loss_data_curve(
            data, MLP((16,)), [30, 400, 800], 2, config=config, execution=Execution(n_jobs=1)
        )
        return result.points[["loss", "accuracy"]].to_numpy()

    mapped = curve(data)
    assert resident.FileRows.of(data.X_train) is None  # a small file: read through its map
    monkeypatch.setattr(resident, "RESIDENT_FILE_BYTES", 0)
    assert resident.FileRows.of(data.X_train) is not None
    # the pool's rows, and the development rows, read with pread
    np.testing.assert_array_equal(curve(data), mapped)
    in_memory = ProbeData.load(data_folder(tmp_path), mmap=False)
    assert resident.FileRows.of(in_memory.X_train) is None
    np.testing.assert_array_equal(curve(in_memory), mapped)


def data_folder(root: Path) -> Path:
    (folder,) = (root / "probe-data").iterdir()
    return folder


_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import numpy as np
    from probemeter.curves.curve import loss_data_curve
    from probemeter.data import RowSplit
    from probemeter.encoders.cache import FeatureCache
    from probemeter.probes import MLP
    from probemeter.training import TrainingConfig

    def status(key):
        lines = Path("/proc/self/status").read_text().splitlines()
        return int(next(line for line in lines if line.startswith(key)).split()[1]) * 1024

    root = Path(sys.argv[1])
    imported = status("VmRSS")
    X = np.load(root / "features.npy", mmap_mode="r")
    y = np.load(root / "labels.npy")
    test, pool = np.arange(0, len(X), 20), np.setdiff1d(np.arange(len(X)), np.arange(0, len(X), 20))
    split = RowSplit(pool, test, y[pool], y[test], 2)
    data = FeatureCache(root / "cache").split_probe_data({"pool": 1}, X, split, name="pool")
    curve = loss_data_curve(
        data, MLP(()), sizes=[200, int(0.9 * data.pool_size)], seeds=1,
        config=TrainingConfig(steps=200, batch_size=256), n_jobs=1, progress=False,
    )
    print(json.dumps({
        "imported": imported, "peak": status("VmHWM"), "pool_bytes": int(data.X_train.nbytes),
        "loss": curve.points["loss"].tolist(),
    }))
    """
)


@pytest.mark.slow
def test_a_pool_larger_than_the_resident_memory_ceiling_trains(tmp_path) -> None:
    """A 1 GB pool (250,000 × 1,024 float32) split, standardised and trained on in a child
    process whose peak resident set (VmHWM: file pages mapped included) stays under the
    ceiling of its imports (torch, transformers: 0.35-0.46 GB as installed) plus half the
    pool — a ceiling smaller than the pool, asserted too (measured here: 0.38 GB imported, a
    peak of 0.69 GB)."""
    rows, width = 263_158, 1024  # a test set of one row in 20: a pool of 250,000 rows
    X = np.lib.format.open_memmap(
        tmp_path / "features.npy", mode="w+", dtype=np.float32, shape=(rows, width)
    )
    rng = np.random.default_rng(0)
    direction = rng.normal(size=width).astype(np.float32)
    labels = np.empty(rows, dtype=np.int64)
    for start in range(0, rows, 16_384):
        block = rng.standard_normal((min(16_384, rows - start), width), dtype=np.float32)
        X[start : start + len(block)] = block
        labels[start : start + len(block)] = block @ direction > 0
    X.flush()
    del X
    np.save(tmp_path / "labels.npy", labels)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-3000:]
    found = json.loads(child.stdout.strip().splitlines()[-1])
    pool = found["pool_bytes"]
    assert pool == 250_000 * width * 4
    ceiling = found["imported"] + pool / 2
    assert ceiling < pool, found  # the pool does not fit under the ceiling
    assert found["peak"] < ceiling, found
    assert found["loss"][1] < found["loss"][0] < np.log(2) + 0.05  # it learnt
