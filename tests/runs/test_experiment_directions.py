"""``directions`` in experiment files (issue 42, item 2): NAME-diff-means and NAME-lda measured
beside NAME by ``probemeter run`` (curves over sizes × seeds, online codes, a layer sweep's own
line and rows), NAME's unit key unchanged, and the problems refused before anything is
trained."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from experiment_files import run_file

from probemeter.cli.main import main
from probemeter.runs.config import ExperimentError, load_experiment

_ENTRY = """
[run]
name = "{name}"

[[representations]]
name = "planted"
kind = "npz"
train = "planted.npz"
test = "planted_test.npz"
{extra}
[method]
{method}
"""


def _planted(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes whose shared noise is anisotropic and rotated (the planted linear
    concept of ``tests/training/test_directions.py``)."""
    d = 16
    rng = np.random.default_rng(100)
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    scales = np.geomspace(0.1, 4.0, d)
    shift = rotation @ (0.1 * np.ones(d) + 0.45 * (scales > 2))
    draw = np.random.default_rng(seed)
    y = draw.integers(2, size=n)
    x = (y[:, None] - 0.5) * shift + (draw.normal(size=(n, d)) * scales) @ rotation.T
    return x.astype(np.float32), y


def _files(folder, pool: int = 1000) -> None:
    for stem, rows, seed in (("planted", pool, 1), ("planted_test", 2000, 2)):
        x, y = _planted(rows, seed)
        np.savez(folder / f"{stem}.npz", X=x, y=y)


def _run(folder, method: str, name: str, extra: str = 'directions = ["diff-means", "lda"]'):
    text = _ENTRY.format(name=name, extra=extra, method=method)
    return json.loads((run_file(folder, text, name) / "results.json").read_text())


_CURVE = (
    'kind = "curve"\nepsilon = 0.3\nprobe = []\nseeds = 3\nsteps = 300\nlr = 0.03\n'
    "sizes = [20, 50, 100, 200, 400, 900]"
)


@pytest.mark.slow
def test_curves_of_direction_twins_beside_the_trained_probe(tmp_path):
    _files(tmp_path)
    results = _run(tmp_path, _CURVE, "curves")
    curves = {curve["name"]: curve for curve in results["curves"]}
    assert list(curves) == ["planted", "planted-diff-means", "planted-lda"]
    for curve in curves.values():  # 6 sizes × 3 seeds each
        assert len(curve["points"]["loss"]) == 18
    final = {
        name: np.mean(
            [
                loss
                for n, loss in zip(curve["points"]["n"], curve["points"]["loss"])
                if n == max(curve["points"]["n"])
            ]
        )
        for name, curve in curves.items()
    }
    assert final["planted-lda"] < 0.9 * final["planted-diff-means"]  # whitening pays
    reps = results["experiment"]["representations"]
    assert [rep.get("directions") for rep in reps] == [None, ["diff-means"], ["lda"]]
    # NAME's unit key is the one it has without directions; each twin has its own
    plain = _run(tmp_path, _CURVE, "plain", extra="")
    keys = {name: timing["key"] for name, timing in results["timings"].items()}
    assert plain["timings"]["planted"]["key"] == keys["planted"]
    assert len(set(keys.values())) == 3
    unit = json.loads(
        (tmp_path / "runs" / "curves" / "units" / f"{keys['planted-lda']}.json").read_text()
    )
    assert unit["spec"]["probe"] == {"family": "lda"}


@pytest.mark.slow
def test_done_lda_matches_the_converged_linear_probe_through_a_file(tmp_path):
    _files(tmp_path, pool=8000)
    method = (
        'kind = "curve"\nepsilon = 0.3\nprobe = []\nseeds = 1\nsteps = 3000\nlr = 0.05\n'
        "weight_decay = 1e-5\nbatch_size = 8000\ndev_fraction = 0\nsizes = [8000]"
    )
    results = _run(tmp_path, method, "done")
    loss = {curve["name"]: curve["points"]["loss"][-1] for curve in results["curves"]}
    assert abs(loss["planted-lda"] - loss["planted"]) <= 0.02 * loss["planted"], loss
    assert loss["planted-diff-means"] >= 1.25 * loss["planted"], loss


def test_online_codes_of_direction_twins(tmp_path):
    _files(tmp_path)
    method = (
        'kind = "mdl"\nprobe = []\nseeds = 2\ntimesteps = [0.1, 0.2, 0.4, 0.7, 1.0]\n'
        "control = false"
    )
    results = _run(tmp_path, method, "codes")
    codes = {entry["online"]["name"]: entry["online"] for entry in results["entries"]}
    assert list(codes) == ["planted", "planted-diff-means", "planted-lda"]
    ratio = {
        name: sum(code["seeds"]["online_bits"]) / sum(code["seeds"]["uniform_bits"])
        for name, code in codes.items()
    }
    # the whitened direction compresses; the plain difference barely beats the uniform code
    assert 0 < ratio["planted-lda"] < 0.95 and ratio["planted-lda"] < ratio["planted-diff-means"]


@pytest.mark.slow
def test_a_layer_sweep_gets_a_sweep_of_twins_in_the_same_layer_table(tmp_path):
    rng = np.random.default_rng(0)
    for stem, rows in (("planted", 300), ("planted_test", 200)):
        y = np.arange(rows) % 2
        X = rng.normal(size=(rows, 3, 4))
        X[:, :, 0] += y[:, None] * np.arange(1, 4)[None, :]  # layer l informative as l grows
        np.savez(tmp_path / f"{stem}.npz", X=X.astype(np.float32), y=y)
    method = 'kind = "curve"\nepsilon = 0.3\nprobe = []\nseeds = 2\nsteps = 50\nsizes = [50, 250]'
    extra = 'layer = "all"\ndirections = ["lda"]'
    run = run_file(tmp_path, _ENTRY.format(name="sweep", extra=extra, method=method), "sweep")
    names = [c["name"] for c in json.loads((run / "results.json").read_text())["curves"]]
    assert names == ["planted-0", "planted-0-lda", "planted-1", "planted-1-lda", "planted-2",
                     "planted-2-lda"]  # fmt: skip
    swept = load_experiment(tmp_path / "sweep.toml").representations
    assert {rep.sweep for rep in swept} == {"planted", "planted-lda"}
    layers = (run / "layers.md").read_text()
    assert "planted-lda" in layers and "planted-2-lda" in layers


def _problems(folder, text: str) -> str:
    path = folder / "bad.toml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    return str(caught.value)


def test_problems_are_refused_before_anything_is_trained(tmp_path, capsys):
    _files(tmp_path)
    bad = _ENTRY.format(name="bad", extra='directions = ["pca"]', method=_CURVE)
    assert (
        "representations[0].directions: must be a list of distinct direction families among "
        "['diff-means', 'lda'" in _problems(tmp_path, bad)
    )
    twins = 'directions = ["lda"]'
    pareto = _ENTRY.format(name="p", extra=twins, method='kind = "pareto"')
    assert "method.kind: 'planted-lda' is a direction twin" in _problems(tmp_path, pareto)
    variational = _ENTRY.format(
        name="v", extra=twins, method='kind = "mdl"\nvariational = true\nprobe = []'
    )
    assert "method.kind: 'planted-lda' is a direction twin" in _problems(tmp_path, variational)
    # sparse features: refused when the data are built, before any unit is computed
    rng = np.random.default_rng(0)
    for stem, rows in (("", 1200), ("_test", 100)):
        sp.save_npz(tmp_path / f"codes{stem}.npz", sp.random(rows, 30, density=0.2, format="csr"))
        np.save(tmp_path / f"codes{stem}.labels.npy", rng.integers(0, 2, size=rows))
    path = tmp_path / "sparse.toml"
    path.write_text(
        _ENTRY.format(name="sparse", extra=twins, method=_CURVE).replace("planted", "codes")
    )
    args = ["run", str(path), "--out", str(tmp_path / "runs"), "--no-progress", "--n-jobs", "1"]
    assert main(args) == 2
    assert "directions = ['lda']: cannot fit sparse features" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "sparse" / "units").exists()
    assert main(["run", str(path), "--check"]) == 2
    assert "directions = ['lda']: cannot fit sparse features" in capsys.readouterr().err


@pytest.mark.slow
def test_power_and_k_sparse_fit_the_twins_directions(tmp_path):
    _files(tmp_path, pool=600)
    power = 'kind = "power"\nbaseline = "planted"\nper_class = [40]\nseeds = 2\nsteps = 50'
    results = _run(tmp_path, power, "power", extra='directions = ["lda"]')
    assert results["table"]["comparison"] == ["planted vs planted-lda"]
    probes = results["metadata"]["training"]["probes"]
    assert probes == {"planted": {"family": "mlp", "hidden": []}, "planted-lda": {"family": "lda"}}
    k_sparse = (
        'kind = "k-sparse"\nks = [1, 4, 16]\nsizes = [400]\nseeds = 2\nsteps = 50\nepsilon = 0.3'
    )
    results = _run(tmp_path, k_sparse, "k-sparse", extra='directions = ["diff-means"]')
    plain, twin = results["results"]
    assert (plain["name"], twin["name"]) == ("planted", "planted-diff-means")
    assert '"family": "diff-means"' in json.dumps(twin) and "diff-means" not in json.dumps(plain)


def test_a_conditional_run_refuses_direction_twins(tmp_path):
    _files(tmp_path)
    text = _ENTRY.format(name="beyond", extra='directions = ["lda"]', method=_CURVE)
    text = text.replace('[run]\nname = "beyond"', '[run]\nname = "beyond"\nbaseline = "planted"')
    assert "run.baseline: conditional probing measures X beside B" in _problems(tmp_path, text)


@pytest.mark.slow
def test_an_erased_representation_gets_its_own_direction_twin(tmp_path):
    """``erase`` and ``directions`` together: NAME-erased-lda measures the erased data (LEACE
    leaves no linear information about the label: the direction guesses)."""
    _files(tmp_path)
    results = _run(tmp_path, _CURVE, "erased", extra='erase = "label"\ndirections = ["lda"]')
    curves = {curve["name"]: curve for curve in results["curves"]}
    assert list(curves) == ["planted", "planted-lda", "planted-erased", "planted-erased-lda"]
    final = {name: curve["points"]["loss"][-1] for name, curve in curves.items()}
    assert final["planted-lda"] < 0.6 and abs(final["planted-erased-lda"] - np.log(2)) < 0.05
