"""Experiment files with ``kind = "activations"``: dicts of hook name → tensor saved with
``torch.save`` (a TransformerLens ``ActivationCache``'s ``dict(cache.items())``, nnsight saved
values), one representation per hook, a layer sweep from a ``{i}`` pattern, the arrays as saved
(the chosen position), one clear problem per bad input, and a small run end to end."""

import json

import numpy as np
import pytest
import torch
from activation_fixtures import (
    ENTRY,
    HOOKS,
    assert_one_clear_problem,
    assert_sweep_of_hooks,
    run_curve_names,
)

from probemeter.data import ProbeData
from probemeter.runs.check import check_data
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data


def _cache(rows: int, seed: int, positions: int = 4, features: int = 3) -> dict:
    """A TransformerLens-like cache: three resid_post hooks (rows, positions, features), an
    attention-pattern hook of another shape, and labels; layer i's last position informative
    about the label in proportion to i."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(rows) % 2
    cache = {}
    for i, hook in enumerate(HOOKS):
        tensor = torch.randn(rows, positions, features, generator=generator)
        tensor[:, -1, 0] += labels * i
        cache[hook] = tensor
    cache["blocks.0.attn.hook_pattern"] = torch.randn(rows, 2, positions, positions)
    cache["labels"] = labels
    return cache


def _experiment(folder, hooks="blocks.{i}.hook_resid_post", extra="", train=None, test=None):
    """``acts.pt`` (40 rows) and ``acts_test.pt`` (20 rows) unless given, and the entry."""
    for name, rows, seed, given in (("acts.pt", 40, 0, train), ("acts_test.pt", 20, 1, test)):
        torch.save(_cache(rows, seed) if given is None else given, folder / name)
    path = folder / "acts.toml"
    path.write_text(ENTRY.format(train="acts.pt", test="acts_test.pt", hooks=hooks, extra=extra))
    return path


def test_a_hook_pattern_is_a_layer_sweep_of_exactly_the_saved_arrays(tmp_path):
    path = _experiment(tmp_path, extra="position = 1")
    experiment = load_experiment(path)
    reps = experiment.representations
    assert_sweep_of_hooks(reps)
    keys = [json.dumps(rep.key_dict(), sort_keys=True) for rep in reps]
    assert len(set(keys)) == 3  # one stored unit per hook
    check_data(experiment)
    data = prepare_data(experiment)
    train, test = torch.load(tmp_path / "acts.pt"), torch.load(tmp_path / "acts_test.pt")
    for i, hook in enumerate(HOOKS):
        expected = ProbeData.from_arrays(
            train[hook][:, 1].numpy(), train["labels"].numpy(),
            test[hook][:, 1].numpy(), test["labels"].numpy(),
        )  # fmt: skip
        np.testing.assert_array_equal(data[f"resid-{i}"].X_train, expected.X_train)
        np.testing.assert_array_equal(data[f"resid-{i}"].X_test, expected.X_test)
        np.testing.assert_array_equal(data[f"resid-{i}"].y_test, expected.y_test)


def test_one_hook_2d_tensors_and_labels_beside_the_file(tmp_path):
    rng = np.random.default_rng(0)
    flat = {
        f"layer{i}": torch.tensor(rng.normal(size=(40, 5)), dtype=torch.float64) for i in (0, 1)
    }
    flat_test = {key: value[:20] for key, value in flat.items()}
    path = _experiment(tmp_path, hooks="layer1", train=flat, test=flat_test)
    for name, rows in (("acts", 40), ("acts_test", 20)):
        np.save(tmp_path / f"{name}.labels.npy", np.array(["no", "yes"])[np.arange(rows) % 2])
    text = path.read_text().replace("\n[method]", 'labels = "encode"\n[method]')
    path.write_text(text)
    (rep,) = load_experiment(path).representations
    assert (rep.name, rep.sweep, rep.options["hook"]) == ("resid", None, "layer1")
    data = prepare_data(load_experiment(path))["resid"]
    assert data.classes == ("no", "yes")
    expected = ProbeData.from_arrays(
        flat["layer1"].float().numpy(), np.arange(40) % 2, flat_test["layer1"].float().numpy(),
        np.arange(20) % 2,
    )  # fmt: skip
    np.testing.assert_array_equal(data.X_train, expected.X_train)
    assert data.X_train.dtype == expected.X_train.dtype


def _without(cache: dict, hook: str) -> dict:
    return {key: value for key, value in cache.items() if key != hook}


def _bad(folder, case):
    """The entry of one bad input: (hooks, extra, train, test)."""
    cache, cache_test = _cache(40, 0), _cache(20, 1)
    flat = {"h": torch.zeros(40, 3), "labels": torch.arange(40) % 2}
    return {
        "missing-hook": ("blocks.7.hook_resid_post", "", None, None),
        "pattern-matches-none": ("blocks.{i}.hook_mlp_out", "", None, None),
        "test-lacks-hook": (
            "blocks.{i}.hook_resid_post",
            "",
            None,
            _without(cache_test, HOOKS[2]),
        ),
        "mismatched-shapes": (
            "blocks.*.hook_resid_post",
            "",
            None,
            {**cache_test, HOOKS[1]: torch.zeros(20, 4, 5)},
        ),
        "pickled-object": ("h", "", ProbeData, None),
        "not-a-dict": ("h", "", [torch.zeros(3)], None),
        "2-d-with-position": ("h", "position = 0", flat, {**flat}),
        "position-beyond": ("blocks.{i}.hook_resid_post", "position = 4", cache, None),
        "no-labels": ("blocks.{i}.hook_resid_post", "", _without(cache, "labels"), None),
    }[case]


PROBLEMS = {
    "missing-hook": r"\.hooks: 'blocks\.7\.hook_resid_post' is not in train; it holds "
    r"blocks\.0\.attn\.hook_pattern, blocks\.0\.hook_resid_post, .*$",
    "pattern-matches-none": r"\.hooks: 'blocks\.\{i\}\.hook_mlp_out' matches no hook of train; "
    r"it holds blocks\.0\.attn",
    "test-lacks-hook": r"\.test: lacks hook 'blocks\.2\.hook_resid_post' of train$",
    "mismatched-shapes": r"\.test: hook 'blocks\.1\.hook_resid_post' has shape \(20, 4, 5\) but "
    r"train \(40, 4, 3\)",
    "pickled-object": r"\.train: '.*acts\.pt' cannot be read as a dict of tensors .*"
    r"torch\.save\(dict\(cache\.items\(\)\), path\)$",
    "not-a-dict": r"\.train: '.*acts\.pt' holds a list, not a dict; save a dict of tensors",
    "2-d-with-position": r"\.position: hook 'h' is 2-D \(n, d\): remove position$",
    "position-beyond": r"\.position: 4 does not exist: hook 'blocks\.0\.hook_resid_post' has 4 "
    "positions$",
    "no-labels": r"\.train: '.*acts\.pt' has no labels: save them under \"labels\"",
}


@pytest.mark.parametrize("case", list(PROBLEMS))
def test_each_bad_input_is_one_clear_problem(tmp_path, capsys, case):
    hooks, extra, train, test = _bad(tmp_path, case)
    if train is ProbeData:  # a pickled object, as torch.save(cache, path) would write
        train = ProbeData.from_arrays(np.zeros((4, 2)), [0, 1, 0, 1], np.zeros((2, 2)), [0, 1])
    path = _experiment(tmp_path, hooks=hooks, extra=extra, train=train, test=test)
    assert_one_clear_problem(path, PROBLEMS[case], capsys)


def test_labels_in_the_dict_and_beside_it_are_refused_as_ambiguous(tmp_path):
    path = _experiment(tmp_path)
    np.save(tmp_path / "acts_test.labels.npy", np.arange(20) % 2)
    with pytest.raises(ExperimentError, match=r"\.test: .* holds labels and .* exists too: keep"):
        load_experiment(path)


@pytest.mark.slow
def test_a_sweep_of_saved_activations_runs_end_to_end(tmp_path, capsys):
    path = _experiment(tmp_path)
    out = tmp_path / "runs"
    assert run_curve_names(path, out) == ["resid-0", "resid-1", "resid-2"]


def test_a_real_transformer_lens_cache_saved_as_a_dict(tmp_path):
    lens = pytest.importorskip("transformer_lens", reason="transformer_lens is not installed")
    config = lens.HookedTransformerConfig(
        n_layers=2, d_model=8, n_ctx=6, d_head=4, n_heads=2, d_vocab=11, act_fn="relu"
    )
    model = lens.HookedTransformer(config)
    for name, rows in (("acts.pt", 40), ("acts_test.pt", 20)):
        tokens = torch.randint(0, 11, (rows, 6), generator=torch.Generator().manual_seed(rows))
        _, cache = model.run_with_cache(tokens)
        torch.save({**dict(cache.items()), "labels": torch.arange(rows) % 2}, tmp_path / name)
    path = tmp_path / "acts.toml"
    hooks = "blocks.{i}.hook_resid_post"
    path.write_text(ENTRY.format(train="acts.pt", test="acts_test.pt", hooks=hooks, extra=""))
    data = prepare_data(load_experiment(path))
    assert sorted(data) == ["resid-0", "resid-1"]
    assert data["resid-1"].X_train.shape == (40, 8)


def test_sizes_are_checked_against_the_rows_of_the_training_file(tmp_path):
    path = _experiment(tmp_path)
    path.write_text(path.read_text().replace("sizes = [10, 30]", "sizes = [10, 300]"))
    with pytest.raises(ExperimentError, match=r"sizes: 300 exceeds .*\(pool of 'resid': 40 rows\)"):
        load_experiment(path)
