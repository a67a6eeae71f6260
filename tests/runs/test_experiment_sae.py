"""Experiment files with ``kind = "sae"``: a SAELens SAE (built here from its config with random
weights) over a site of a tiny Llama-style model, its latents sparse from the encoder to the
probes, beside the dense site it encodes."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from tiny_models import HIDDEN, make_tiny_decoder

from probemeter.cli.main import main
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data

pytest.importorskip("transformers")
sae_lens = pytest.importorskip("sae_lens", reason="sae-lens is not installed")

TEMPLATE = "Review: {text} Sentiment:"
D_SAE = 128
GOOD = "the cat sat on the mat near the river bank".split()
BAD = "dogs bark at night about distant old stars".split()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama, an SAE over its block 1's residual stream (random weights spread so that
    some latents fire), and a texts file with a split column."""
    import torch
    from sae_lens.saes.sae import SAEMetadata

    root = tmp_path_factory.mktemp("sae-run")
    make_tiny_decoder(root / "llama", "llama")
    config = sae_lens.StandardSAEConfig(
        d_in=HIDDEN, d_sae=D_SAE, metadata=SAEMetadata(hook_name="blocks.1.hook_resid_post")
    )
    sae = sae_lens.StandardSAE(config)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        sae.W_enc.copy_(torch.randn(sae.W_enc.shape, generator=generator))
        sae.b_enc.copy_(torch.randn(sae.b_enc.shape, generator=generator) - 1.5)
    sae.save_model(root / "sae")
    rng = np.random.default_rng(0)
    rows = []
    for index in range(48):
        label = ("pos", "neg")[index % 2]
        words = rng.choice(GOOD if label == "pos" else BAD, size=int(rng.integers(2, 9)))
        rows.append((" ".join(words), label, "test" if index >= 36 else "train"))
    pd.DataFrame(rows, columns=["text", "label", "split"]).to_csv(root / "texts.csv", index=False)
    return root


def _experiment(folder: Path, entry: str = 'sae = "sae"', task: str = "") -> Path:
    path = folder / "sae.toml"
    path.write_text(
        '[run]\nname = "sae"\n[task]\ndataset = "texts"\npath = "texts.csv"\n'
        f'split_column = "split"\ntemplate = "{TEMPLATE}"\n{task}'
        '[[representations]]\nname = "latents"\nkind = "sae"\nmodel = "llama"\n'
        f"batch_size = 8\n{entry}\n"
        "[method]\nepsilon = 0.5\nsizes = [8, 16, 30]\nprobe = []\nseeds = 1\nsteps = 30\n"
    )
    return path


def test_the_sae_names_its_site_and_brings_the_dense_baseline(folder):
    experiment = load_experiment(_experiment(folder))
    latents, dense = experiment.representations
    assert (latents.name, latents.kind, dense.name, dense.kind) == (
        "latents",
        "sae",
        "latents-dense",
        "transformer",
    )
    assert (latents.options["site"], latents.options["layer"]) == ("resid_post", 1)
    key = dense.key_dict()
    assert (key["site"], key["layer"], key["pooling"]) == ("resid_post", 1, "last")
    assert latents.key_dict()["sae"] == str((folder / "sae").resolve())
    assert "baseline" not in latents.key_dict()
    alone = load_experiment(_experiment(folder, 'sae = "sae"\nbaseline = false'))
    assert [rep.name for rep in alone.representations] == ["latents"]


def test_latents_are_the_sae_of_the_dense_site_and_stay_sparse(folder):
    """The latents' pool is CSR, and each row's active latents are those SAELens's encode gives
    for the dense site's last token (scaling by column, as sparse data are, keeps zeros)."""
    import torch

    data = prepare_data(load_experiment(_experiment(folder)), progress=False)
    latents, dense = data["latents"], data["latents-dense"]
    assert sp.issparse(latents.X_train) and sp.issparse(latents.X_test)
    assert latents.X_train.shape == (36, D_SAE)
    assert 0 < latents.X_train.nnz < 36 * D_SAE
    from probemeter.encoders import TransformerEncoder

    table = pd.read_csv(folder / "texts.csv")
    train = [TEMPLATE.format(text=t) for t in table[table["split"] == "train"]["text"]]
    encoder = TransformerEncoder(folder / "llama", 1, pooling="last", site="resid_post")
    raw = encoder.encode(train)
    sae = sae_lens.SAE.load_from_disk(folder / "sae")
    with torch.no_grad():
        expected = sae.encode(torch.tensor(raw)).numpy()
    np.testing.assert_array_equal(latents.X_train.toarray() != 0, expected != 0)
    # the dense baseline is the same site, standardised
    np.testing.assert_allclose(dense.X_train, (raw - raw.mean(0)) / raw.std(0), atol=1e-3)


def test_sae_entries_are_checked_up_front(folder, tmp_path):
    (tmp_path / "texts.csv").write_text((folder / "texts.csv").read_text())
    for entry, expected in {
        'sae = "nowhere"': "representations[0].sae: ",
        'sae = "llama"': "lacks cfg.json and sae_weights.safetensors",
    }.items():
        path = _experiment(tmp_path, entry.replace('"llama"', f'"{folder / "llama"}"'))
        path.write_text(
            path.read_text().replace('model = "llama"', f'model = "{folder / "llama"}"')
        )
        with pytest.raises(ExperimentError) as raised:
            load_experiment(path)
        assert expected in str(raised.value), str(raised.value)


@pytest.mark.slow
def test_probemeter_run_sae_beside_its_site_without_densifying(folder, tmp_path, monkeypatch):
    """``probemeter run`` trains curves on the latents and the dense site; no scipy matrix with
    the SAE's width is ever made dense whole (a minibatch of it may be)."""
    densified = []

    def guard(method):
        def wrapped(self, *args, **kwargs):
            if self.shape[1] == D_SAE and self.shape[0] > 16:
                densified.append(self.shape)
            return method(self, *args, **kwargs)

        return wrapped

    for cls in (sp.csr_matrix, sp.csr_array):
        for name in ("toarray", "todense"):
            monkeypatch.setattr(cls, name, guard(getattr(cls, name)))
    path = _experiment(folder)
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "-q", "--n-jobs", "1"]) == 0
    assert densified == []
    results = json.loads((out / "sae" / "results.json").read_text())
    assert {curve["name"] for curve in results["curves"]} == {"latents", "latents-dense"}
