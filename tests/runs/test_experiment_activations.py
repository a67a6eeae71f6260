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
from probemeter.runs.kinds.activations import UNPADDED
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


def _experiment(
    folder, hooks="blocks.{i}.hook_resid_post", extra="", train=None, test=None, mask=UNPADDED
):
    """``acts.pt`` (40 rows) and ``acts_test.pt`` (20 rows) unless given, and the entry, its
    ``attention_mask`` ``mask`` (none where None; the caches fill every position)."""
    for name, rows, seed, given in (("acts.pt", 40, 0, train), ("acts_test.pt", 20, 1, test)):
        torch.save(_cache(rows, seed) if given is None else given, folder / name)
    if mask is not None:
        extra = f'attention_mask = "{mask}"\n{extra}'
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
    path = _experiment(tmp_path, hooks="layer1", train=flat, test=flat_test, mask=None)
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
        "3-d-without-a-mask": ("blocks.{i}.hook_resid_post", None, None, None),
        "mask-not-saved": ("blocks.{i}.hook_resid_post", "mask", None, None),
        "mask-of-2-d": (
            "h",
            "mask",
            {**flat, "mask": torch.ones(40)},
            {**flat, "mask": torch.ones(40)},
        ),
        "mask-of-other-rows": (
            HOOKS[0],
            "mask",
            {**cache, "mask": torch.ones(40, 4)},
            {**cache_test, "mask": torch.ones(20, 5)},
        ),
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
    "3-d-without-a-mask": r"\.attention_mask: hook 'blocks\.0\.hook_resid_post' is \(n, "
    r"positions, d\): rows padded to one length would read padding at a position, silently; "
    r"save the attention mask \(n, positions\) or each row's token count \(n,\) with the "
    r'activations and name it here, or write "unpadded" where every row fills every position$',
    "mask-not-saved": r"\.attention_mask: 'mask' is not in '.*acts\.pt'; it holds blocks",
    "mask-of-2-d": r"\.attention_mask: hook 'h' is 2-D \(n, d\): no positions to mask; remove "
    "attention_mask$",
    "mask-of-other-rows": r"\.attention_mask: 'mask' of test has shape \(20, 5\); hook "
    r"'blocks\.0\.hook_resid_post' needs \(20, 4\), a mask, or \(20,\), token counts$",
}


@pytest.mark.parametrize("case", list(PROBLEMS))
def test_each_bad_input_is_one_clear_problem(tmp_path, capsys, case):
    hooks, extra, train, test = _bad(tmp_path, case)
    if train is ProbeData:  # a pickled object, as torch.save(cache, path) would write
        train = ProbeData.from_arrays(np.zeros((4, 2)), [0, 1, 0, 1], np.zeros((2, 2)), [0, 1])
    mask = {None: None, "mask": "mask"}.get(extra, UNPADDED)  # the mask cases' own
    extra = "" if extra in (None, "mask") else extra
    path = _experiment(tmp_path, hooks=hooks, extra=extra, train=train, test=test, mask=mask)
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
    extra = f'attention_mask = "{UNPADDED}"'  # random tokens: every position a real one
    path.write_text(ENTRY.format(train="acts.pt", test="acts_test.pt", hooks=hooks, extra=extra))
    data = prepare_data(load_experiment(path))
    assert sorted(data) == ["resid-0", "resid-1"]
    assert data["resid-1"].X_train.shape == (40, 8)


def test_sizes_are_checked_against_the_rows_of_the_training_file(tmp_path):
    path = _experiment(tmp_path)
    path.write_text(path.read_text().replace("sizes = [10, 30]", "sizes = [10, 300]"))
    with pytest.raises(ExperimentError, match=r"sizes: 300 exceeds .*\(pool of 'resid': 40 rows\)"):
        load_experiment(path)


def test_position_counts_each_rows_real_tokens_given_token_counts_or_a_mask(tmp_path):
    """Rows padded to one length: with their token counts (padding on the right) or their
    attention mask (padding on either side), ``position`` counts each row's real tokens, so
    -1 is each row's last real token, never padding; too few real tokens are refused."""
    generator = torch.Generator().manual_seed(0)
    caches, expected = {}, {}
    for name, rows in (("acts.pt", 40), ("acts_test.pt", 20)):
        tensor = torch.randn(rows, 6, 3, generator=generator)
        lengths = torch.randint(2, 7, (rows,), generator=generator)
        left = torch.arange(6)[None, :] >= 6 - lengths[:, None]  # padded on the left
        caches[name] = (tensor, lengths, left.long(), torch.arange(rows) % 2)
        index = torch.arange(rows)
        expected[name] = {
            ("lengths", -1): tensor[index, lengths - 1],
            ("lengths", 1): tensor[index, 1],
            ("mask", -1): tensor[:, -1],
            ("mask", 0): tensor[index, 6 - lengths],
        }
    for (mask, position), _ in expected["acts.pt"].items():
        for name, (tensor, lengths, left, labels) in caches.items():
            saved = {HOOKS[0]: tensor, "labels": labels, "lengths": lengths, "mask": left}
            torch.save(saved, tmp_path / name)
        path = tmp_path / "acts.toml"
        extra = f'attention_mask = "{mask}"\nposition = {position}'
        path.write_text(
            ENTRY.format(train="acts.pt", test="acts_test.pt", hooks=HOOKS[0], extra=extra)
        )
        experiment = load_experiment(path)
        assert experiment.representations[0].key_dict()["attention_mask"] == mask
        data = prepare_data(experiment)["resid"]
        reference = ProbeData.from_arrays(
            expected["acts.pt"][mask, position].numpy(), caches["acts.pt"][3].numpy(),
            expected["acts_test.pt"][mask, position].numpy(), caches["acts_test.pt"][3].numpy(),
        )  # fmt: skip
        np.testing.assert_array_equal(data.X_train, reference.X_train)
        np.testing.assert_array_equal(data.X_test, reference.X_test)
    path.write_text(path.read_text().replace("position = 0", "position = -3"))
    with pytest.raises(
        ExperimentError, match=r"rows have fewer than 3 real tokens for position -3"
    ):
        check_data(load_experiment(path))


def test_the_docs_transformer_lens_snippet_reads_each_texts_last_token(tmp_path):
    """docs/representations.md: a padded batch of texts run with its attention mask and saved
    with it reads, at position -1, each text's last token as the text alone gives it, padded
    on either side; without the mask, left padding was attended to (1.6 off on this model)
    and right padding read at position -1 (2.2 off)."""
    lens = pytest.importorskip("transformer_lens", reason="transformer_lens is not installed")
    import transformers
    from tiny_models import make_tiny_gpt2
    from transformer_lens import utils

    tokenizer = transformers.AutoTokenizer.from_pretrained(make_tiny_gpt2(tmp_path / "gpt2"))
    config = lens.HookedTransformerConfig(
        n_layers=2, d_model=16, n_ctx=32, d_head=4, n_heads=4, d_vocab=tokenizer.vocab_size + 1,
        act_fn="gelu", normalization_type="LN", seed=0,
    )  # fmt: skip
    texts = ["dogs bark", "the cat sat on the mat near the river bank", "night falls"] * 14
    labels = torch.arange(len(texts)) % 2
    hook = "blocks.1.hook_resid_post"
    for side in ("left", "right"):
        model = lens.HookedTransformer(config, tokenizer=tokenizer, default_padding_side=side)
        # the snippet of docs/representations.md
        tokens = model.to_tokens(texts)  # one batch, padded to the longest text
        mask = utils.get_attention_mask(model.tokenizer, tokens, model.cfg.default_prepend_bos)
        _, cache = model.run_with_cache(tokens, attention_mask=mask)
        torch.save(
            {**dict(cache.items()), "attention_mask": mask, "labels": labels}, tmp_path / "acts.pt"
        )
        alone = np.stack(
            [model.run_with_cache(model.to_tokens(text))[1][hook][0, -1].numpy() for text in texts]
        )
        path = tmp_path / "acts.toml"
        extra = 'attention_mask = "attention_mask"'
        path.write_text(ENTRY.format(train="acts.pt", test="acts.pt", hooks=hook, extra=extra))
        data = prepare_data(load_experiment(path))["resid"]
        reference = ProbeData.from_arrays(alone, labels.numpy(), alone, labels.numpy())
        np.testing.assert_allclose(data.X_train, reference.X_train, atol=1e-4)
        if side == "right":  # position -1 of the padded batch is padding for short texts
            assert np.abs(cache[hook][:, -1].numpy() - alone).max() > 1.0
