"""The feature-file helpers shared by ``probemeter mdl`` and ``probemeter switching``."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from probemeter.cli._feature_files import feature_names, load_probe_data
from probemeter.training.shared_memory import backing_file


def _args(**changes) -> argparse.Namespace:
    return argparse.Namespace(
        **{"test_size": 0.25, "random_state": 0, "labels": "indices", "n_jobs": 1, **changes}
    )


@pytest.fixture
def features(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "layer.npz"
    np.savez(path, X=rng.normal(size=(40, 3)), y=np.arange(40) % 4, words=np.arange(40) % 7)
    return path


def test_names_are_the_stems_or_one_per_file():
    paths = [Path("a/layer0.npz"), Path("b/layer1.pt")]
    assert feature_names(paths, None) == ["layer0", "layer1"]
    assert feature_names(paths, ["x", "y"]) == ["x", "y"]
    with pytest.raises(ValueError, match=r"give one --name per features file \(2\); got 1"):
        feature_names(paths, ["x"])


def test_file_is_split_with_the_commands_settings(features):
    data = load_probe_data(features, _args(), "layer 0")
    assert data.name == "layer 0"
    assert (data.pool_size, len(data.y_test)) == (30, 10)
    assert data.groups_train is None
    again = load_probe_data(features, _args(), "layer 0")
    np.testing.assert_array_equal(data.y_train, again.y_train)
    other = load_probe_data(features, _args(random_state=1), "layer 0")
    assert not np.array_equal(data.y_train, other.y_train)


def test_features_are_shared_when_workers_train(features):
    alone = load_probe_data(features, _args(), "layer 0")
    shared = load_probe_data(features, _args(n_jobs=2), "layer 0")
    assert backing_file(alone.X_train) is None
    assert backing_file(shared.X_train) is not None and backing_file(shared.X_test) is not None
    np.testing.assert_array_equal(shared.X_train, alone.X_train)
    np.testing.assert_array_equal(shared.X_test, alone.X_test)


def test_group_ids_from_the_file_or_a_npy(features, tmp_path):
    from_npz = load_probe_data(features, _args(), "layer", groups="words")
    np.save(tmp_path / "words.npy", np.arange(40) % 7)
    from_npy = load_probe_data(features, _args(), "layer", groups=str(tmp_path / "words.npy"))
    assert from_npz.groups_train is not None
    assert sorted(np.concatenate([from_npz.groups_train, from_npz.groups_test]).tolist()) == sorted(
        (np.arange(40) % 7).tolist()
    )
    np.testing.assert_array_equal(from_npz.groups_train, from_npy.groups_train)


def test_group_ids_must_be_one_per_row(features, tmp_path):
    np.save(tmp_path / "short.npy", np.arange(39))
    with pytest.raises(ValueError, match=r"--groups has 39 ids but .*layer\.npz' has 40 rows"):
        load_probe_data(features, _args(), "layer", groups=str(tmp_path / "short.npy"))
    with pytest.raises(ValueError, match="--groups 'missing'"):
        load_probe_data(features, _args(), "layer", groups="missing")


def test_mdl_and_switching_take_feature_files_alike():
    from probemeter.cli.main import build_parser

    parser = build_parser()
    for command in ("mdl", "switching"):
        args = parser.parse_args([command, "a.npz", "b.pt", "--name", "x", "--name", "y"])
        assert args.features == [Path("a.npz"), Path("b.pt")] and args.name == ["x", "y"]
        assert (args.test_size, args.labels) == (0.2, "indices")
        args = parser.parse_args([command, "a.npz", "--test-size", "0.5", "--labels", "encode"])
        assert (args.test_size, args.labels) == (0.5, "encode")
