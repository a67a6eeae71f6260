"""SAELens SAEs as encoders: loading from a folder or an object, the site of the hook, sparse
latents equal to SAELens's dense ``encode``, batching that never holds an (n, d_sae) array,
the cache key, and every refusal. SAEs are built from configs with random weights."""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sae_lens = pytest.importorskip("sae_lens")
import torch  # noqa: E402
from sae_lens.saes.sae import SAEMetadata  # noqa: E402

from probemeter.encoders.sae import SparseAutoencoder, load_sae, parse_hook_name  # noqa: E402

D_IN, D_SAE, K = 16, 64, 4


def _randomised(sae: sae_lens.SAE, seed: int) -> sae_lens.SAE:
    """Random encoder weights and biases spread around zero, so that some latents fire on
    standard-normal rows and some do not."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        sae.W_enc.copy_(torch.randn(sae.W_enc.shape, generator=generator) / 4)
        sae.b_enc.copy_(torch.randn(sae.b_enc.shape, generator=generator) / 2)
        sae.b_dec.copy_(torch.randn(sae.b_dec.shape, generator=generator) / 10)
    return sae


@pytest.fixture(scope="module")
def standard() -> sae_lens.SAE:
    config = sae_lens.StandardSAEConfig(
        d_in=D_IN, d_sae=D_SAE, metadata=SAEMetadata(hook_name="blocks.3.hook_resid_post")
    )
    return _randomised(sae_lens.StandardSAE(config), seed=0)


@pytest.fixture(scope="module")
def topk() -> sae_lens.SAE:
    config = sae_lens.TopKSAEConfig(
        d_in=D_IN, d_sae=D_SAE, k=K, metadata=SAEMetadata(hook_name="blocks.1.hook_mlp_out")
    )
    return _randomised(sae_lens.TopKSAE(config), seed=1)


@pytest.fixture(scope="module")
def saved(standard: sae_lens.SAE, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sae") / "standard"
    standard.save_model(folder)
    return folder


@pytest.fixture(scope="module")
def rows() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((50, D_IN)).astype(np.float32)


def _dense(sae: sae_lens.SAE, X: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return sae.encode(torch.tensor(X)).numpy()


def test_load_from_folder(saved: Path) -> None:
    loaded = load_sae(saved)
    assert isinstance(loaded, SparseAutoencoder)
    assert loaded.hook_name == "blocks.3.hook_resid_post"
    assert (loaded.site, loaded.layer) == ("resid_post", 3)
    assert (loaded.d_in, loaded.d_sae, loaded.architecture) == (D_IN, D_SAE, "standard")
    assert loaded.cache_key["sae_path"] == str(saved.resolve())
    assert len(loaded.cache_key["sae_sha256"]) == 64


def test_load_from_object(topk: sae_lens.SAE) -> None:
    loaded = load_sae(topk)
    assert loaded.sae is topk
    assert (loaded.site, loaded.layer, loaded.architecture) == ("mlp_out", 1, "topk")
    assert loaded.cache_key["sae_path"] is None


@pytest.mark.parametrize("which", ["standard", "topk"])
def test_sparse_latents_equal_saelens_encode(
    which: str, request: pytest.FixtureRequest, rows: np.ndarray
) -> None:
    sae = request.getfixturevalue(which)
    expected = _dense(sae, rows)
    latents = load_sae(sae).encode_sparse(rows)
    assert isinstance(latents, sp.csr_matrix) and latents.dtype == np.float32
    assert latents.shape == (len(rows), D_SAE)
    assert 0 < latents.nnz == np.count_nonzero(expected) < expected.size
    np.testing.assert_allclose(latents.toarray(), expected, rtol=0, atol=1e-6)
    in_sevens = load_sae(sae).encode_sparse(rows, batch_size=7)
    np.testing.assert_array_equal(in_sevens.indptr, latents.indptr)
    np.testing.assert_array_equal(in_sevens.indices, latents.indices)
    np.testing.assert_allclose(in_sevens.data, latents.data, rtol=0, atol=1e-6)
    if which == "topk":
        assert np.diff(latents.indptr).max() <= K


def test_folder_and_memory_map_give_the_same_latents(
    saved: Path, standard: sae_lens.SAE, rows: np.ndarray, tmp_path: Path
) -> None:
    np.save(tmp_path / "rows.npy", rows)
    mapped = np.load(tmp_path / "rows.npy", mmap_mode="r")
    latents = load_sae(saved).encode_sparse(mapped, batch_size=16)
    np.testing.assert_allclose(latents.toarray(), _dense(standard, rows), rtol=0, atol=1e-6)


def test_never_more_than_one_batch_dense(
    standard: sae_lens.SAE, rows: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_sae(standard)
    encode, widths = standard.encode, []

    def recording(x: torch.Tensor) -> torch.Tensor:
        widths.append(x.shape[0])
        assert not torch.is_grad_enabled()
        return encode(x)

    monkeypatch.setattr(standard, "encode", recording)
    loaded.encode_sparse(rows, batch_size=16)
    assert widths == [16, 16, 16, 2]


def test_hook_z_rows_are_the_heads_concatenated() -> None:
    config = sae_lens.StandardSAEConfig(
        d_in=8,
        d_sae=24,
        reshape_activations="hook_z",
        metadata=SAEMetadata(hook_name="blocks.0.attn.hook_z"),
    )
    sae = _randomised(sae_lens.StandardSAE(config), seed=2)
    heads = np.random.default_rng(1).standard_normal((9, 2, 4)).astype(np.float32)
    loaded = load_sae(sae)
    assert (loaded.site, loaded.layer) == ("heads", 0)
    latents = loaded.encode_sparse(heads.reshape(9, 8), batch_size=4)
    # the SAE records d_head from its first real input, not from encode_sparse's rows
    assert getattr(sae, "d_head", None) is None
    np.testing.assert_allclose(latents.toarray(), _dense(sae, heads), rtol=0, atol=1e-6)
    assert sae.d_head == 4


@pytest.mark.parametrize(
    ("hook", "site", "layer"),
    [
        ("blocks.0.hook_resid_pre", "resid_pre", 0),
        ("blocks.2.hook_resid_mid", "resid_mid", 2),
        ("blocks.11.hook_resid_post", "resid_post", 11),
        ("blocks.4.hook_attn_out", "attn_out", 4),
        ("blocks.5.hook_mlp_out", "mlp_out", 5),
        ("blocks.6.attn.hook_z", "heads", 6),
    ],
)
def test_hook_names(hook: str, site: str, layer: int) -> None:
    assert parse_hook_name(hook) == (site, layer)


@pytest.mark.parametrize(
    "hook", ["blocks.3.ln2.hook_normalized", "hook_embed", "blocks.x.hook_resid_post"]
)
def test_other_hooks_are_refused(hook: str) -> None:
    with pytest.raises(ValueError, match=rf"{hook}.*supported hooks: blocks\.\{{i\}}"):
        parse_hook_name(hook)


def test_cache_key_follows_the_weights(standard: sae_lens.SAE, tmp_path: Path) -> None:
    sae = copy.deepcopy(standard)
    sae.save_model(tmp_path)
    first = load_sae(tmp_path).cache_key
    sae.save_model(tmp_path)
    assert load_sae(tmp_path).cache_key == first
    in_memory = load_sae(sae).cache_key
    with torch.no_grad():
        sae.W_enc[0, 0] += 1.0
    sae.save_model(tmp_path)
    retrained = load_sae(tmp_path).cache_key
    assert retrained["sae_path"] == first["sae_path"]
    assert retrained["sae_sha256"] != first["sae_sha256"]
    assert load_sae(sae).cache_key["sae_sha256"] != in_memory["sae_sha256"]
    assert load_sae(copy.deepcopy(sae)).cache_key == load_sae(sae).cache_key


def test_refused_sources(saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"nowhere.*not a folder"):
        load_sae(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"empty.*lacks cfg\.json and sae_weights\.safetensors"):
        load_sae(empty)
    broken = tmp_path / "broken"
    shutil.copytree(saved, broken)
    config = json.loads((broken / "cfg.json").read_text())
    (broken / "cfg.json").write_text(json.dumps({**config, "architecture": "no-such-sae"}))
    with pytest.raises(ValueError, match=r"broken.*SAELens cannot load it: .*no-such-sae"):
        load_sae(broken)
    with pytest.raises(ValueError, match=r"source must be a folder.*got int"):
        load_sae(3)
    nameless = sae_lens.TopKSAE(sae_lens.TopKSAEConfig(d_in=D_IN, d_sae=D_SAE, k=K))
    with pytest.raises(ValueError, match="no hook name"):
        load_sae(nameless)
    nameless.cfg.metadata.hook_name = "blocks.0.hook_embed"
    with pytest.raises(ValueError, match=r"blocks\.0\.hook_embed.*supported hooks"):
        load_sae(nameless)
    monkeypatch.setitem(sys.modules, "sae_lens", None)
    with pytest.raises(ImportError, match=r"pip install 'probemeter\[lens\]'"):
        load_sae(saved)


def test_refused_rows(standard: sae_lens.SAE, rows: np.ndarray) -> None:
    loaded = load_sae(standard)
    with pytest.raises(ValueError, match=r"X must be 2-D.*\(16,\)"):
        loaded.encode_sparse(rows[0])
    with pytest.raises(
        ValueError, match=r"X has 15 columns.*blocks\.3\.hook_resid_post.*d_in = 16"
    ):
        loaded.encode_sparse(rows[:, :15])
    with pytest.raises(ValueError, match=r"X must be a numpy array.*list"):
        loaded.encode_sparse(rows.tolist())
    with pytest.raises(ValueError, match=r"X must hold floating-point.*int64"):
        loaded.encode_sparse(rows.astype(np.int64))
    with pytest.raises(ValueError, match="X has no rows"):
        loaded.encode_sparse(rows[:0])
    poisoned = rows.copy()
    poisoned[33, 2] = np.nan
    with pytest.raises(ValueError, match="X contains NaN or inf, first at row 33"):
        loaded.encode_sparse(poisoned, batch_size=8)
    for batch_size in (0, 2.5):
        with pytest.raises(ValueError, match="batch_size must be an integer"):
            loaded.encode_sparse(rows, batch_size=batch_size)
