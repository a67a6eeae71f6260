"""Layer files stored as float32, float16 or bfloat16, the disk budget checked before encoding,
and an interrupted encoding that leaves nothing read as complete (FeatureCache.layers); the
sets of several keys filled by one call (FeatureCache.layer_sets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import namedtuple

import numpy as np
import pytest
import torch

import probemeter.encoders.cache as cache_module
from probemeter.encoders.cache import Bfloat16Rows, FeatureCache, LayerSet, to_bfloat16_bits

KEY, INPUTS = {"model": "tiny", "layer": "all"}, ["a b", "c"]
SHAPE = (3, 40, 6)
VALUES = np.random.default_rng(0).normal(size=SHAPE).astype(np.float32)


def fill(outputs: list) -> None:
    """Writes every layer in two batches of rows, as an encoder does."""
    for output, values in zip(outputs, VALUES):
        output[:25] = values[:25]
        output[25:] = values[25:]


def test_float32_storage_keeps_todays_files_and_keys(tmp_path) -> None:
    cache = FeatureCache(tmp_path)
    layers = cache.layers(KEY, INPUTS, SHAPE, fill)
    paths = cache.layer_paths(KEY, INPUTS, SHAPE[0])  # the key without "storage"
    assert all(path.is_file() for path in paths)
    for layer, path in zip(layers, paths):
        assert isinstance(layer, np.memmap) and layer.dtype == np.float32
        np.testing.assert_array_equal(np.load(path), VALUES[paths.index(path)])
    # a set written before the marker existed (each file renamed whole) is still a hit
    marker = paths[0].with_name(paths[0].name.split(".")[0] + ".layers.json")
    assert json.loads(marker.read_text())["storage"] == "float32"
    marker.unlink()
    again = cache.layers(KEY, INPUTS, SHAPE, fill)
    assert (cache.hits, cache.misses) == (1, 1)
    np.testing.assert_array_equal(again[2], VALUES[2])


def test_half_storages_round_to_nearest_even_and_are_recorded(tmp_path) -> None:
    cache = FeatureCache(tmp_path)
    half = cache.layers(KEY, INPUTS, SHAPE, fill, storage="float16")
    brain = cache.layers(KEY, INPUTS, SHAPE, fill, storage="bfloat16")
    assert cache.misses == 2  # each storage has a key of its own
    assert half[1].dtype == np.float16
    np.testing.assert_array_equal(half[1], VALUES[1].astype(np.float16))
    assert isinstance(brain[1], Bfloat16Rows) and brain[1].shape == SHAPE[1:]
    expected = torch.from_numpy(VALUES[1]).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(np.asarray(brain[1]), expected)
    np.testing.assert_array_equal(brain[1][[3, 0, 7]], expected[[3, 0, 7]])
    assert brain[1][5:9].dtype == np.float32
    markers = sorted(tmp_path.glob("*.layers.json"))
    assert sorted(json.loads(m.read_text())["storage"] for m in markers) == [
        "bfloat16",
        "float16",
    ]
    # stored at half the bytes of float32
    stems = {m.name.split(".")[0] for m in markers}
    for stem in stems:
        assert np.load(tmp_path / f"{stem}.layer0.npy", mmap_mode="r").itemsize == 2
    cache.layers(KEY, INPUTS, SHAPE, fill, storage="bfloat16")
    assert (cache.hits, cache.misses) == (1, 2)
    with pytest.raises(ValueError, match="storage must be one of float32, float16, bfloat16"):
        cache.layers(KEY, INPUTS, SHAPE, fill, storage="int8")


def test_bfloat16_bits_match_torch_rounding() -> None:
    values = np.random.default_rng(1).normal(scale=100.0, size=10_000).astype(np.float32)
    ties = np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, -(1.0 + 2.0**-8)], np.float32)  # halfway
    special = np.array([0.0, -0.0, np.inf, -np.inf, 3.4e38, 1e-40], np.float32)
    values = np.concatenate([values, ties, special])
    expected = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy()
    np.testing.assert_array_equal(to_bfloat16_bits(values), expected.view(np.uint16))
    nan = to_bfloat16_bits(np.array([np.nan], np.float32))
    assert np.isnan(Bfloat16Rows(nan.reshape(1, 1))[0, 0])  # never rounded into inf


def test_disk_budget_is_checked_before_encoding(tmp_path, monkeypatch) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(
        cache_module.shutil, "disk_usage", lambda _: usage(10**12, 10**12 - 10**9, 10**9)
    )
    calls = []
    cache = FeatureCache(tmp_path)
    shape = (33, 100_000, 768)  # 33 × 100,000 × 768 float32: 10.1 GB on a disk with 1 GB free

    def record(outputs: list) -> None:
        calls.append(outputs)

    with pytest.raises(ValueError) as error:
        cache.layers(KEY, INPUTS, shape, record)
    message = str(error.value)
    assert f"{33 * 100_000 * 768 * 4:,} bytes" in message and "1,000,000,000 bytes free" in message
    assert str(tmp_path) in message and 'storage="bfloat16"' in message
    assert calls == [] and list(tmp_path.iterdir()) == []  # nothing written, nothing encoded
    with pytest.raises(ValueError, match="no storage option is smaller"):
        cache.layers(KEY, INPUTS, shape, record, storage="float16")


def test_interrupted_encoding_restarts_and_equals_an_uninterrupted_one(tmp_path) -> None:
    cache = FeatureCache(tmp_path / "interrupted")

    def interrupted(outputs: list) -> None:
        for output, values in zip(outputs, VALUES):
            output[:25] = values[:25]  # half the rows written...
        raise RuntimeError("killed half way")  # ...when the encoding stops

    for storage in ("float32", "bfloat16"):
        with pytest.raises(RuntimeError, match="killed half way"):
            cache.layers(KEY, INPUTS, SHAPE, interrupted, storage=storage)
        assert list(cache.root.iterdir()) == [] and cache.misses == 0
    # a kill (no cleanup runs) leaves temporaries named by the dead process's id, and maybe
    # some layer files renamed before the marker: the next call removes the first and
    # rewrites all
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    paths = cache.layer_paths(KEY, INPUTS, SHAPE[0])
    abandoned = paths[1].with_name(f".{paths[1].name}.{dead}-0123abcd.tmp")
    abandoned.write_bytes(b"half a layer")
    live = paths[1].with_name(f".{paths[1].name}.{os.getppid()}-4567ef.tmp")  # a live writer's
    live.write_bytes(b"being written")
    np.save(paths[0], VALUES[0])  # layer 0 renamed into place, the rest not, no marker
    resumed = cache.layers(KEY, INPUTS, SHAPE, fill)
    assert not abandoned.exists() and live.exists() and cache.misses == 1
    live.unlink()
    whole = FeatureCache(tmp_path / "whole").layers(KEY, INPUTS, SHAPE, fill)
    for layer in range(SHAPE[0]):
        np.testing.assert_array_equal(resumed[layer], whole[layer])
    names = sorted(path.name for path in cache.root.iterdir())
    assert names == sorted(
        [*(path.name for path in paths), paths[0].name.split(".")[0] + ".layers.json"]
    )


def test_half_storage_without_its_marker_is_a_miss(tmp_path) -> None:
    cache = FeatureCache(tmp_path)
    cache.layers(KEY, INPUTS, SHAPE, fill, storage="float16")
    (marker,) = tmp_path.glob("*.layers.json")
    marker.unlink()  # killed between the last rename and the marker
    cache.layers(KEY, INPUTS, SHAPE, fill, storage="float16")
    assert (cache.hits, cache.misses) == (0, 2) and marker.is_file()


def test_sets_of_several_keys_are_filled_at_once_and_only_where_missing(tmp_path) -> None:
    """Three sites' sets, one already stored: one fill writes the other two (of two storages),
    each equal to its set written alone; an interrupted fill leaves neither complete, and the
    stored one untouched."""
    cache = FeatureCache(tmp_path)
    keys = [{**KEY, "site": site} for site in ("resid_post", "attn_out", "mlp_out")]
    shifted = {index: VALUES + index for index in range(3)}  # each site's own values

    def fill_sets(missing: dict) -> None:
        asked.append(sorted(missing))
        for index, outputs in missing.items():
            for output, values in zip(outputs, shifted[index]):
                output[:25] = values[:25]
                if stop:
                    raise RuntimeError("killed half way")
                output[25:] = values[25:]

    asked: list = []
    stop = False
    first = cache.layers(keys[0], INPUTS, SHAPE, lambda outputs: fill_sets({0: outputs}))
    sets = [LayerSet(keys[0], SHAPE), LayerSet(keys[1], SHAPE), LayerSet(keys[2], SHAPE, "float16")]
    stop = True
    with pytest.raises(RuntimeError, match="killed half way"):
        cache.layer_sets(sets, INPUTS, fill_sets)
    assert len(list(tmp_path.glob("*.layers.json"))) == 1  # the stored set's alone
    assert not list(tmp_path.glob(".*.tmp"))
    stop = False
    found = cache.layer_sets(sets, INPUTS, fill_sets)
    assert asked == [[0], [1, 2], [1, 2]]  # the stored set never asked again
    assert (cache.hits, cache.misses) == (2, 3)
    np.testing.assert_array_equal(np.stack(found[0]), np.stack(first))
    np.testing.assert_array_equal(np.stack(found[1]), shifted[1])
    np.testing.assert_array_equal(np.stack(found[2]), shifted[2].astype(np.float16))
    assert cache.layer_sets(sets, INPUTS, fill_sets)[2][0].dtype == np.float16
    assert asked[-1] == [1, 2] and cache.hits == 5
    with pytest.raises(ValueError, match="the same files"):
        cache.layer_sets([sets[0], sets[0]], INPUTS, fill_sets)
