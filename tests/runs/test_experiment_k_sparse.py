"""``[method] kind = "k-sparse"`` through ``probemeter run`` (issue 32, item 6): on a feature
file whose label depends on 3 known coordinates among 1,000, the unit's ranking puts them
first and the knee, chosen on the development split and tested on the test set, is at k = 3;
on a CSR pool far too wide to densify, nothing but the top-k columns is ever made dense."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from probemeter.cli.main import main
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.sparse_probing.method import KSparseMethod

#: the coordinates the label depends on, among 1,000
KNOWN = (17, 503, 911)

_HAYSTACK = """
[[representations]]
name = "haystack"
kind = "npz"
train = "haystack.npz"
test = "haystack_test.npz"

[method]
kind = "k-sparse"
ks = [1, 2, 3, 4, 8, 32]
sizes = [2700]
seeds = 2
steps = 300
lr = 0.03
epsilon = 0.3
"""


def _run(folder, text: str, name: str) -> dict:
    path = folder / f"{name}.toml"
    path.write_text(text)
    args = ["run", str(path), "--out", str(folder / "runs"), "--no-progress", "--n-jobs", "1"]
    assert main(args) == 0
    return json.loads((folder / "runs" / name / "results.json").read_text())


@pytest.mark.slow
def test_the_ranking_finds_the_three_coordinates_and_the_dev_split_chooses_k_3(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 1000)).astype(np.float32)
    y = (X[:, list(KNOWN)].sum(axis=1) > 0).astype(np.int64)
    np.savez(tmp_path / "haystack.npz", X=X[:3000], y=y[:3000])
    np.savez(tmp_path / "haystack_test.npz", X=X[3000:], y=y[3000:])
    payload = _run(tmp_path, _HAYSTACK, "haystack")
    assert payload["schema"] == "probemeter.k_sparse/1"
    (result,) = payload["results"]
    assert set(result["order"][:3]) == set(KNOWN)
    assert result["knee"] == 3
    assert (result["chosen_on"], result["tested_on"]) == ("dev", "test")
    table = {row["k"]: row for row in result["table"]}
    assert sorted(table[3]["features"]) == list(KNOWN)
    assert table[3]["dev_accuracy"] > 0.95 and table[3]["test_accuracy"] > 0.95
    assert table[2]["test_accuracy"] < 0.9
    assert {"test_loss", "dev_loss", "sdl", "sample_complexity"} <= set(table[1])
    assert set(result["curves"]) == {"1", "2", "3", "4", "8", "32"}
    folder = tmp_path / "runs" / "haystack"
    markdown = (folder / "table.md").read_text()
    knee_row = next(line for line in markdown.splitlines() if "knee (dev)" in line)
    assert knee_row.startswith("| haystack | 3 |")
    assert (folder / "k_sparse.png").stat().st_size > 0
    assert json.loads((folder / "run.json").read_text())["figure"] == "k_sparse.png"
    # a layer table ranks by the accuracy at the knee, the selection on the dev split
    summary = KSparseMethod().summaries(payload["results"])["haystack"]
    assert summary.estimates["knee"].value == summary.selection["knee"].value == 3
    assert summary.selection["accuracy"].value > 0.95 and summary.accuracy.value > 0.95
    assert summary.correctness is not None and summary.selection_split.startswith("dev: ")


_WIDE = """
[[representations]]
name = "latents"
kind = "npz"
train = "latents.npz"
test = "latents_test.npz"

[method]
kind = "k-sparse"
ks = [1, 2, 3, 4]
sizes = [1800]
seeds = 1
steps = 200
lr = 0.05
"""


def _latents(rng, rows: int, features: int) -> sp.csr_matrix:
    """Non-negative latents, 20 active per row among ``features``, the known three active in
    about half the rows."""
    columns = rng.integers(0, features, size=(rows, 20))
    values = rng.exponential(size=(rows, 20))
    known = rng.exponential(size=(rows, 3)) * (rng.random((rows, 3)) < 0.5)
    matrix = sp.csr_matrix(
        (values.ravel(), (np.repeat(np.arange(rows), 20), columns.ravel())),
        shape=(rows, features),
    ).tolil()
    matrix[:, list(KNOWN)] = known
    return matrix.tocsr().astype(np.float32)


@pytest.mark.slow
def test_a_csr_pool_too_wide_to_densify_is_densified_only_in_its_top_k_columns(
    tmp_path, monkeypatch
):
    """2,000 + 500 rows × 200,000 latents (2 GB as dense float32): every dense conversion of a
    sparse matrix or tensor during the run (ranking, subsets, probes) has at most max(ks) = 4
    columns."""
    rng = np.random.default_rng(1)
    features = 200_000
    for stem, rows in (("latents", 2000), ("latents_test", 500)):
        matrix = _latents(rng, rows, features)
        sp.save_npz(tmp_path / f"{stem}.npz", matrix)
        labels = np.asarray(matrix[:, list(KNOWN)].sum(axis=1)).ravel() > 1.0
        np.save(tmp_path / f"{stem}.labels.npy", labels.astype(np.int64))
    import torch

    def guard(original):
        def guarded(self, *args, **kwargs):
            if sp.issparse(self) or self.layout != torch.strided:
                assert self.shape[-1] <= 4, f"a sparse {tuple(self.shape)} was made dense"
            return original(self, *args, **kwargs)

        return guarded

    for cls, name in [
        *((cls, name) for cls in (sp.csr_matrix, sp.csr_array) for name in ("toarray", "todense")),
        (torch.Tensor, "to_dense"),
    ]:
        monkeypatch.setattr(cls, name, guard(getattr(cls, name)))
    payload = _run(tmp_path, _WIDE, "latents")
    monkeypatch.undo()
    (result,) = payload["results"]
    assert result["n_features"] == features
    assert set(result["order"][:3]) == set(KNOWN)
    assert result["knee"] == 3 and result["chosen_on"] == "dev"


def test_bad_k_sparse_options_are_named(tmp_path, capsys):
    rng = np.random.default_rng(2)
    for stem, rows in (("small", 100), ("small_test", 40)):
        np.savez(tmp_path / f"{stem}.npz", X=rng.normal(size=(rows, 6)), y=np.arange(rows) % 2)
    path = tmp_path / "small.toml"
    entry = (
        '[[representations]]\nname = "small"\nkind = "npz"\ntrain = "small.npz"\n'
        'test = "small_test.npz"\n'
    )
    path.write_text(
        entry + '[method]\nkind = "k-sparse"\nranking = "anova"\nks = [0, 2]\nsizes = [95]\n'
    )
    with pytest.raises(ExperimentError) as raised:
        load_experiment(path)
    problems = "\n".join(raised.value.problems)
    assert "method.ranking: must be one of" in problems
    assert "method.ks: must be a list of positive integers" in problems
    path.write_text(entry + '[method]\nkind = "k-sparse"\nsizes = [95]\n')
    with pytest.raises(ExperimentError, match=r"method\.sizes: 95 exceeds the"):
        load_experiment(path)
    path.write_text(entry + '[method]\nkind = "k-sparse"\nks = [1, 7]\n')
    assert load_experiment(path).method.ks == (1, 7)  # the features are known once loaded
    assert main(["run", str(path), "--out", str(tmp_path / "runs"), "--no-progress"]) == 2
    assert "method.ks: 7 exceeds the 6 features of 'small'" in capsys.readouterr().err


_ONLINE = """
[[representations]]
name = "dense"
kind = "npz"
train = "dense.npz"
test = "dense_test.npz"

[[representations]]
name = "sparse"
kind = "npz"
train = "sparse.npz"
test = "sparse_test.npz"

[method]
kind = "k-sparse"
ranking = "l1"
l1_grid = 10
ks = [1, 2, 20]
sizes = [300]
seeds = 1
steps = 100
lr = 0.05
online = true
timesteps = [0.25, 0.5, 1.0]
max_epochs = 5
"""


def test_online_codes_per_k_of_a_dense_and_a_sparse_representation(tmp_path):
    """One feature carries the label: both representations (the same matrix, dense and CSR)
    rank it first with the L1 path, the knee is k = 1, and each k gets its online code."""
    rng = np.random.default_rng(3)
    X = rng.exponential(size=(500, 20)) * (rng.random((500, 20)) < 0.3)
    y = (X[:, 6] > 0).astype(np.int64)
    for stem, rows in (("", slice(0, 400)), ("_test", slice(400, 500))):
        np.savez(tmp_path / f"dense{stem}.npz", X=X[rows], y=y[rows])
        sp.save_npz(tmp_path / f"sparse{stem}.npz", sp.csr_matrix(X[rows]))
        np.save(tmp_path / f"sparse{stem}.labels.npy", y[rows])
    payload = _run(tmp_path, _ONLINE, "online")
    for result in payload["results"]:
        assert result["ranking"] == "l1" and result["order"][0] == 6
        assert set(result["online"]) == {"1", "2", "20"}
        assert all(row["online_bits"] > 0 and row["compression"] > 0 for row in result["table"])
        assert result["knee"] == 1 and result["chosen_on"] == "dev"
    markdown = (tmp_path / "runs" / "online" / "table.md").read_text()
    assert "| online (kbits) | compression |" in markdown and "| sparse | 20 |" in markdown
