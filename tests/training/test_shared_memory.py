"""Shared-memory features: the same values, one file per array that goes with the array,
passed to the engine's worker processes by reference (not copied), and the same training."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import Parallel, delayed

from probemeter import Execution
from probemeter.data import ProbeData
from probemeter.probes import MLP
from probemeter.training import engine, shared_memory
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate
from probemeter.training.shared_memory import backing_file, share_array, share_data


def _data(sparse: bool = False) -> ProbeData:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1)
    if sparse:
        x[np.abs(x) < 1] = 0
        x = sp.csr_matrix(x)
    return ProbeData.from_arrays(x[:200], y[:200], x[200:], y[200:], standardize=False)


def test_shared_array_has_the_values_in_a_file_that_goes_with_it():
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::2]  # not C-ordered
    shared = share_array(array)
    path = backing_file(shared)
    assert path is not None and Path(path).is_file()
    assert Path(path).parent.name == f"probemeter-shared-{os.getpid()}"
    np.testing.assert_array_equal(shared, array)
    assert shared.dtype == array.dtype and shared.flags.c_contiguous
    view = np.asarray(shared)[1:]  # a view keeps the file
    del shared
    gc.collect()
    assert Path(path).is_file()
    del view
    gc.collect()
    assert not Path(path).exists()


def test_arrays_already_in_a_file_or_empty_are_kept():
    shared = share_array(np.ones((3, 2), dtype=np.float32))
    assert share_array(shared) is shared
    # a copy-on-write map's changes are its own: copied, not passed by its file
    path = Path(backing_file(shared))
    private = np.memmap(path, dtype=np.float32, mode="c", shape=(3, 2))
    private[0] = 7.0
    assert backing_file(private) is None
    copied = share_array(private)
    assert backing_file(copied) not in (None, str(path))
    np.testing.assert_array_equal(copied[0], [7.0, 7.0])
    empty = np.empty((0, 5), dtype=np.float32)
    assert share_array(empty) is empty
    with pytest.raises(ValueError, match="dtype object"):
        share_array(np.array([{}, None], dtype=object))


def test_falls_back_to_the_temporary_folder_without_room(monkeypatch, tmp_path):
    monkeypatch.setattr(shared_memory, "SHARED_MEMORY", tmp_path / "absent")
    monkeypatch.setattr(shared_memory.tempfile, "gettempdir", lambda: str(tmp_path))
    path = Path(backing_file(share_array(np.ones(4))))
    assert path.parent == tmp_path / f"probemeter-shared-{os.getpid()}"
    # a shared-memory folder too small for the array: only the temporary folder
    monkeypatch.setattr(shared_memory, "SHARED_MEMORY", Path("/"))
    statvfs = os.statvfs("/")
    too_big = statvfs.f_bavail * statvfs.f_frsize + 1
    assert shared_memory._base_folders(too_big) == [tmp_path]
    assert shared_memory._base_folders(1) == [Path("/"), tmp_path]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="posix_fallocate, /proc")
def test_a_full_folder_is_skipped_and_without_room_the_array_stays(monkeypatch, tmp_path):
    shm, temporary = tmp_path / "shm", tmp_path / "tmp"
    shm.mkdir()
    temporary.mkdir()
    monkeypatch.setattr(shared_memory, "SHARED_MEMORY", shm)
    monkeypatch.setattr(shared_memory.tempfile, "gettempdir", lambda: str(temporary))
    full = {shm}
    allocate = os.posix_fallocate

    def fallocate(descriptor: int, offset: int, length: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{descriptor}")).parent.parent in full:
            raise OSError(28, "No space left on device")
        allocate(descriptor, offset, length)

    monkeypatch.setattr(shared_memory.os, "posix_fallocate", fallocate)
    array = np.arange(10.0)
    shared = share_array(array)
    assert Path(backing_file(shared)).parent.parent == temporary
    assert list((shm / f"probemeter-shared-{os.getpid()}").iterdir()) == []  # no file left
    np.testing.assert_array_equal(shared, array)
    full.add(temporary)
    with pytest.warns(ResourceWarning, match="no room for"):
        assert share_array(array) is array


def test_folders_of_dead_processes_are_removed(monkeypatch, tmp_path):
    monkeypatch.setattr(shared_memory, "SHARED_MEMORY", tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    orphan = tmp_path / f"probemeter-shared-{dead}"
    orphan.mkdir()
    (orphan / "left.bin").write_bytes(b"x" * 10)
    alive = tmp_path / f"probemeter-shared-{os.getppid()}"  # a live process's folder stays
    alive.mkdir()
    share_array(np.ones(3))
    assert not orphan.exists()
    assert alive.is_dir()


def _backing_in_worker(array: np.ndarray) -> str | None:
    return backing_file(array)


@pytest.mark.slow
def test_workers_map_the_same_file():
    shared = share_array(np.ones((600, 700), dtype=np.float32))  # above joblib's 1 MB
    seen = Parallel(n_jobs=2, backend="loky")(delayed(_backing_in_worker)(shared) for _ in range(2))
    assert [str(path) for path in seen] == [backing_file(shared)] * 2
    # an ordinary array reaches the workers as a copy joblib wrote elsewhere
    copies = Parallel(n_jobs=2, backend="loky")(
        delayed(_backing_in_worker)(np.asarray(shared).copy()) for _ in range(2)
    )
    assert all(str(path) != backing_file(shared) for path in copies)


@pytest.mark.parametrize("sparse", [False, True])
def test_shared_data_equals_the_data(sparse):
    data = _data(sparse)
    shared = share_data(data)
    for name in ("X_train", "X_test"):
        before, after = getattr(data, name), getattr(shared, name)
        if sparse:
            assert sp.isspmatrix_csr(after)
            assert all(backing_file(a) for a in (after.data, after.indices, after.indptr))
            after, before = after.toarray(), before.toarray()
        else:
            assert backing_file(after) is not None
        np.testing.assert_array_equal(after, before)
    for name in ("y_train", "y_test"):
        assert backing_file(getattr(shared, name)) is not None
        np.testing.assert_array_equal(getattr(shared, name), getattr(data, name))
    assert shared.n_classes == data.n_classes and shared.name == data.name


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.slow
def test_training_on_shared_data_in_workers_is_unchanged(monkeypatch, sparse):
    monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)  # train in worker processes
    data = _data(sparse)
    subsets = [np.arange(n) for n in (40, 80, 120, 200)]
    keys = [(0, n) for n in (40, 80, 120, 200)]
    config = TrainingConfig(steps=30, batch_size=32, lr=1e-2)

    def train(d: ProbeData):
        return fit_evaluate(
            d.X_train, d.y_train, d.X_test, d.y_test, d.n_classes, subsets, keys, MLP((8,)),
            config, execution=Execution(device="cpu", n_jobs=2), per_example=True,
        )  # fmt: skip

    plain, shared = train(data), train(share_data(data))
    np.testing.assert_array_equal(shared.loss, plain.loss)
    np.testing.assert_array_equal(shared.nll, plain.nll)
