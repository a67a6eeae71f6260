"""Experiment files on sites inside a decoder's blocks: a texts file, a tiny Llama-style model,
every layer of three sites with the last token of a template, through ``--check`` and
``probemeter run``; the same features from TransformerLens-built activations."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_models import BLOCKS, make_tiny_decoder

from probemeter.cli.main import main
from probemeter.runs.config import ExperimentError, load_experiment, site_sweeps
from probemeter.runs.runner import prepare_data

pytest.importorskip("transformers")

TEMPLATE = "Review: {text} Sentiment:"
SITES = ("resid_post", "attn_out", "mlp_out")
GOOD = "the cat sat on the mat near the river bank".split()
BAD = "dogs bark at night about distant old stars".split()


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_decoder(tmp_path_factory.mktemp("models") / "llama", "llama")


def _write_texts(folder: Path, n: int = 48) -> pd.DataFrame:
    """Texts with a split column (the last quarter tests), labelled by the words they are drawn
    from."""
    rng = np.random.default_rng(0)
    rows = []
    for index in range(n):
        label = ("pos", "neg")[index % 2]
        words = rng.choice(GOOD if label == "pos" else BAD, size=int(rng.integers(2, 9)))
        rows.append((" ".join(words), label, "test" if index >= 3 * n // 4 else "train"))
    table = pd.DataFrame(rows, columns=["text", "label", "split"])
    table.to_csv(folder / "texts.csv", index=False)
    return table


def _experiment(folder: Path, model: Path, representation: str = "") -> Path:
    path = folder / "sites.toml"
    path.write_text(
        '[run]\nname = "sites"\n[task]\ndataset = "texts"\npath = "texts.csv"\n'
        f'split_column = "split"\ntemplate = "{TEMPLATE}"\n'
        f'[[representations]]\nname = "llama"\nkind = "transformer"\nmodel = "{model}"\n'
        f'layer = "all"\nsite = {json.dumps(list(SITES))}\npooling = "last"\n'
        f"batch_size = 8\n{representation}"
        "[method]\nepsilon = 0.5\nsizes = [8, 16, 30]\nprobe = []\nseeds = 1\nsteps = 30\n"
    )
    return path


def test_a_site_sweep_is_one_representation_per_site_and_block(tmp_path, llama):
    _write_texts(tmp_path)
    experiment = load_experiment(_experiment(tmp_path, llama))
    names = [rep.name for rep in experiment.representations]
    assert names == [f"llama-{site}-{block}" for site in SITES for block in range(BLOCKS)]
    assert {rep.sweep for rep in experiment.representations} == {f"llama-{s}" for s in SITES}
    keys = [rep.key_dict() for rep in experiment.representations]
    assert [key["site"] for key in keys] == [site for site in SITES for _ in range(BLOCKS)]
    assert all("heads" not in key and "storage" not in key for key in keys)
    # the sweeps are sites of one entry: the across-sites verdict ranks them together
    assert site_sweeps(experiment.representations) == {
        "llama": {site: f"llama-{site}" for site in SITES}
    }


def test_sites_of_one_entry_are_grouped_apart_from_its_random_twin_and_other_entries(
    tmp_path, llama
):
    """``random_init = "also"`` gives a random-weight twin of every site: its sites are a group
    of their own (NAME-random), and an entry read at one site is no group; the hidden states
    as a site name the group without a suffix."""
    _write_texts(tmp_path)
    second = (
        f'[[representations]]\nname = "one"\nkind = "transformer"\nmodel = "{llama}"\n'
        'layer = "all"\nsite = "mlp_out"\npooling = "last"\n'
    )
    path = _experiment(tmp_path, llama, 'random_init = "also"\n' + second)
    groups = site_sweeps(load_experiment(path).representations)
    assert groups == {
        "llama": {site: f"llama-{site}" for site in SITES},
        "llama-random": {site: f"llama-random-{site}" for site in SITES},
    }
    path = _experiment(tmp_path, llama)
    path.write_text(path.read_text().replace('"resid_post"', '"hidden"'))
    groups = site_sweeps(load_experiment(path).representations)
    assert groups == {"llama": {"hidden": "llama", "attn_out": "llama-attn_out",
                                "mlp_out": "llama-mlp_out"}}  # fmt: skip


def test_site_features_equal_transformer_lens_activations_read_back(tmp_path, llama):
    """The last token of each templated text at every site, as the transformer kind reads it,
    equals the activations TransformerLens's TransformerBridge caches on the same model, saved
    with torch.save and read by kind = "activations"."""
    pytest.importorskip("transformer_lens", reason="transformer-lens is not installed")
    import torch
    from transformer_lens.model_bridge import TransformerBridge

    table = _write_texts(tmp_path)
    data = prepare_data(load_experiment(_experiment(tmp_path, llama)), progress=False)
    bridge = TransformerBridge.boot_transformers(str(llama), device="cpu")
    labels = {"pos": 1, "neg": 0}
    for split in ("train", "test"):
        rows = table[table["split"] == split]
        cache: dict[str, list[torch.Tensor]] = {}
        for text in rows["text"]:
            ids = bridge.tokenizer(TEMPLATE.format(text=text), return_tensors="pt")["input_ids"]
            _, cached = bridge.run_with_cache(ids)
            for site in SITES:
                for block in range(BLOCKS):
                    name = f"blocks.{block}.hook_{site}"
                    cache.setdefault(name, []).append(cached[name][0, -1])
        saved = {name: torch.stack(values) for name, values in cache.items()}
        saved["labels"] = torch.tensor([labels[label] for label in rows["label"]])
        torch.save(saved, tmp_path / f"lens-{split}.pt")
    for site in SITES:
        path = tmp_path / f"lens-{site}.toml"
        path.write_text(
            f'[run]\nname = "lens"\n[[representations]]\nname = "lens"\nkind = "activations"\n'
            f'train = "lens-train.pt"\ntest = "lens-test.pt"\nhooks = "blocks.{{i}}.hook_{site}"\n'
            "[method]\nepsilon = 0.5\nsizes = [8, 16, 30]\nprobe = []\nseeds = 1\nsteps = 30\n"
        )
        lens = prepare_data(load_experiment(path), progress=False)
        for block in range(BLOCKS):
            ours, theirs = data[f"llama-{site}-{block}"], lens[f"lens-{block}"]
            np.testing.assert_array_equal(ours.y_train, theirs.y_train)
            np.testing.assert_allclose(ours.X_train, theirs.X_train, atol=1e-4)
            np.testing.assert_allclose(ours.X_test, theirs.X_test, atol=1e-4)


def test_sites_are_checked_before_any_work(tmp_path, llama):
    _write_texts(tmp_path)
    path = _experiment(tmp_path, llama)
    text = path.read_text()
    cases = {
        'layer = 1\nsite = "resid"': "representations[0].site: must be one of hidden",
        'layer = 1\nsite = ["attn_out", "attn_out"]': "non-empty list of distinct sites",
        'layer = 1\nsite = "attn_out"\nheads = [0]': 'heads: selects heads of site "heads"',
        'layer = 1\nsite = "module:layers.mlp"': r"one {i} for the block",
        'layer = 2\nsite = "attn_out"': "2 does not exist: ",
    }
    for written, expected in cases.items():
        changed = text.replace('layer = "all"\nsite = ["resid_post", "attn_out", "mlp_out"]', "")
        path.write_text(changed.replace('pooling = "last"', f'{written}\npooling = "last"'))
        with pytest.raises(ExperimentError) as raised:
            load_experiment(path)
        assert expected in str(raised.value), (written, str(raised.value))


def test_heads_choose_columns_of_hook_z(tmp_path, llama):
    _write_texts(tmp_path)
    path = _experiment(tmp_path, llama)
    text = path.read_text().replace(
        'site = ["resid_post", "attn_out", "mlp_out"]', 'site = "heads"'
    )
    path.write_text(text)
    every = prepare_data(load_experiment(path), progress=False)
    path.write_text(text.replace('site = "heads"', 'site = "heads"\nheads = [3, 1]'))
    chosen = prepare_data(load_experiment(path), progress=False)
    assert list(chosen) == ["llama-heads-0", "llama-heads-1"]
    # 4 heads of 8 dimensions: head 3 then head 1 (standardised per column, so equal columns)
    whole = every["llama-heads-1"].X_train
    np.testing.assert_allclose(
        chosen["llama-heads-1"].X_train, np.hstack([whole[:, 24:32], whole[:, 8:16]]), atol=1e-6
    )


@pytest.mark.slow
def test_probemeter_run_on_three_sites_of_a_tiny_llama(tmp_path, llama):
    _write_texts(tmp_path)
    path = _experiment(tmp_path, llama)
    assert main(["run", str(path), "--check"]) == 0
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    results = json.loads((out / "sites" / "results.json").read_text())
    assert {curve["name"] for curve in results["curves"]} == {
        f"llama-{site}-{block}" for site in SITES for block in range(BLOCKS)
    }
    layers = json.loads((out / "sites" / "layers.json").read_text())
    assert set(json.dumps(layers)) and all(f"llama-{site}" in json.dumps(layers) for site in SITES)
    assert (out / "sites" / "layers.png").is_file()


@pytest.mark.slow
def test_one_verdict_across_three_sites_through_probemeter_run(tmp_path, llama):
    """``probemeter run`` on three sites of every block: besides each site's sweep, one
    ranking of every (site, block) on the development split, the best tested against the
    runner-up and each other site's best (Holm over those), in layers.json, layers.md, the
    report and the figure sites.png, one line per site."""
    _write_texts(tmp_path)
    path = _experiment(tmp_path, llama)
    path.write_text(
        path.read_text()
        .replace("sizes = [8, 16, 30]", "sizes = [8, 30]")
        .replace("steps = 30", "steps = 5")
    )
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    run = out / "sites"
    layers = json.loads((run / "layers.json").read_text())
    assert layers["schema"] == "probemeter.layers/5"
    assert [v["sweep"] for v in layers["verdicts"]] == [f"llama-{site}" for site in SITES]
    (verdict,) = layers["sites"]
    assert verdict["entry"] == "llama" and verdict["sites"] == list(SITES)
    ranked = {(block["site"], block["layer"]) for block in verdict["ranking"]}
    assert ranked == {(site, block) for site in SITES for block in range(BLOCKS)}
    assert verdict["chosen_on"].startswith("dev") and verdict["tested_on"] == "test"
    best = verdict["best"]
    others = {c["other"]["representation"]: c["roles"] for c in verdict["comparisons"]}
    runner_up = verdict["ranking"][1]["representation"]
    assert "runner-up" in others[runner_up]
    for site in SITES:  # each other site's best, by the ranking on the development split
        if site != best["site"]:
            top = next(b for b in verdict["ranking"] if b["site"] == site)
            assert f"best of {site}" in others[top["representation"]]
    tests = [c["test"] for c in verdict["comparisons"]]
    assert {t["comparisons"] for t in tests} == {len(tests)}
    assert all(t["first"] == best["representation"] for t in tests)
    assert "## Across sites" in (run / "layers.md").read_text()
    assert (run / "sites.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (run / "report.html").read_text()
    assert "<h3>Across sites</h3>" in report and 'id="sites-figure"' in report


def _forward_passes(prepare) -> int:
    """How many times ``prepare()`` runs the tiny Llama's base model (a global forward
    pre-hook counts the calls of every LlamaModel)."""
    import torch

    calls = []

    def count(module, args):
        if type(module).__name__ == "LlamaModel":
            calls.append(1)

    handle = torch.nn.modules.module.register_module_forward_pre_hook(count)
    try:
        prepare()
    finally:
        handle.remove()
    return len(calls)


def test_three_sites_of_a_sweep_are_read_in_one_pass_per_batch(tmp_path, llama):
    """48 texts in batches of 8: six forward passes serve every block of the three sites, in
    memory and into a cache; a cache holding one site has the other two encoded in one pass
    (the cached site not again), and a complete cache needs no pass."""
    _write_texts(tmp_path)
    three = load_experiment(_experiment(tmp_path, llama))
    path = _experiment(tmp_path, llama)
    sites = f"site = {json.dumps(list(SITES))}\n"
    path.write_text(path.read_text().replace(sites, 'site = ["resid_post"]\n'))
    one = load_experiment(path)
    data = {}
    assert _forward_passes(lambda: data.update(prepare_data(three, progress=False))) == 6
    cache = tmp_path / "cache"
    assert _forward_passes(lambda: prepare_data(one, cache, progress=False)) == 6
    written = {path: path.stat().st_mtime_ns for path in cache.glob("*.npy")}
    assert len(written) == 2  # resid_post's two blocks
    cached = {}
    assert _forward_passes(lambda: cached.update(prepare_data(three, cache, progress=False))) == 6
    assert {path: path.stat().st_mtime_ns for path in written} == written  # not written again
    assert _forward_passes(lambda: prepare_data(three, cache, progress=False)) == 0
    assert len(list(cache.glob("*.layers.json"))) == len(SITES)
    for name, prepared in data.items():
        np.testing.assert_array_equal(cached[name].X_train, prepared.X_train)


def test_cached_site_data_are_split_a_block_at_a_time_into_the_same_arrays(tmp_path, llama):
    """With a feature cache, a texts task's data are split and standardised straight from the
    layer files (FeatureCache.split_probe_data): the arrays equal those built in memory."""
    _write_texts(tmp_path)
    experiment = load_experiment(_experiment(tmp_path, llama))
    in_memory = prepare_data(experiment, progress=False)
    cached = prepare_data(experiment, cache_dir=tmp_path / "cache", progress=False)
    assert any((tmp_path / "cache" / "probe-data").iterdir())
    for name, data in in_memory.items():
        np.testing.assert_array_equal(cached[name].X_train, data.X_train)
        np.testing.assert_array_equal(cached[name].X_test, data.X_test)
        np.testing.assert_array_equal(cached[name].y_train, data.y_train)


def test_a_layer_files_storage_is_in_the_key_of_the_data_prepared_from_them(tmp_path, llama):
    """float32 then float16 layer files in one cache folder: the data prepared from the
    float16 files equal those prepared in a cache of their own, not the float32 data cached
    first (the prepared data's key holds the storage, as the layer files' key does)."""
    _write_texts(tmp_path)

    def prepared(storage: str, cache: str) -> np.ndarray:
        path = _experiment(tmp_path, llama, f'storage = "{storage}"\n')
        sites = f'layer = "all"\nsite = {json.dumps(list(SITES))}\n'
        path.write_text(path.read_text().replace(sites, 'layer = 1\nsite = "resid_post"\n'))
        [data] = prepare_data(load_experiment(path), tmp_path / cache, progress=False).values()
        return np.array(data.X_train)

    exact = prepared("float32", "shared")
    after_float32 = prepared("float16", "shared")
    alone = prepared("float16", "own")
    assert not np.array_equal(exact, alone)  # half precision gives other features
    np.testing.assert_array_equal(after_float32, alone)
