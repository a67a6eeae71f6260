"""Experiment files with sparse feature files (``kind = "npz"``, ``scipy.sparse.save_npz``):
the same curves and online codes as the dense file of the same matrix, methods that cannot
train on sparse rows refused at ``--check``, and a pool too wide to densify run in bounded
memory."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from probemeter.cli.main import main
from probemeter.runs.config import ExperimentError, load_experiment

_ENTRIES = """
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
"""

_CURVE = """
[method]
kind = "curve"
epsilon = 0.1
probe = [8]
seeds = 2
steps = 30
lr = 0.01
batch_size = 16
sizes = [20, 72]
"""

_MDL = """
[method]
kind = "mdl"
probe = [8]
seeds = 2
control = false
timesteps = [0.25, 0.5, 1.0]
max_epochs = 5
lr = 0.01
batch_size = 16
"""


def _zero_mean_codes(rng, rows: int, features: int, pairs: int) -> sp.csr_matrix:
    """Sparse codes whose every column sums to zero (``pairs`` values +v and −v each): the
    dense path's centring subtracts a zero mean, so standardised dense features equal the
    sparse path's scaled ones, and the two runs must agree."""
    rows_of, columns, values = [], [], []
    for column in range(features):
        chosen = rng.choice(rows, size=2 * pairs, replace=False)
        magnitudes = np.abs(rng.normal(size=pairs)) + 0.5
        rows_of += list(chosen)
        columns += [column] * 2 * pairs
        values += [*magnitudes, *-magnitudes]
    return sp.csr_matrix(
        (np.asarray(values, np.float32), (rows_of, columns)), shape=(rows, features)
    )


def _files(folder):
    """The same matrices as dense ``X``/``y`` archives and as save_npz files (the test set as
    CSC, converted on reading) with their labels in ``<stem>.labels.npy``."""
    rng = np.random.default_rng(0)
    pool, test = _zero_mean_codes(rng, 80, 40, 2), _zero_mean_codes(rng, 40, 40, 1)
    weights = rng.normal(size=40)
    for stem, matrix in (("", pool), ("_test", test)):
        labels = (matrix @ weights > 0).astype(int)
        np.savez(folder / f"dense{stem}.npz", X=matrix.toarray(), y=labels)
        sp.save_npz(folder / f"sparse{stem}.npz", matrix if stem == "" else matrix.tocsc())
        np.save(folder / f"sparse{stem}.labels.npy", labels)


def _run(folder, method: str) -> dict:
    path = folder / "codes.toml"
    path.write_text(_ENTRIES + method)
    args = ["run", str(path), "--out", str(folder / "runs"), "--no-progress", "--n-jobs", "1"]
    assert main(args) == 0
    return json.loads((folder / "runs" / "codes" / "results.json").read_text())


@pytest.mark.slow
def test_a_sparse_file_gives_the_curve_of_the_dense_file(tmp_path):
    _files(tmp_path)
    experiment = load_experiment(_write_only(tmp_path, _CURVE))
    assert [rep.train.name for rep in experiment.representations] == ["dense.npz", "sparse.npz"]
    dense, sparse = _run(tmp_path, _CURVE)["curves"]
    assert (dense["name"], sparse["name"]) == ("dense", "sparse")
    for key in ("loss", "accuracy", "dev_loss"):  # the development split's rows too
        expected = np.asarray(dense["points"][key], dtype=float)
        assert np.isfinite(expected).all()
        np.testing.assert_allclose(sparse["points"][key], expected, rtol=1e-5)


@pytest.mark.slow
def test_a_sparse_file_gives_the_online_code_of_the_dense_file(tmp_path):
    _files(tmp_path)
    dense, sparse = _run(tmp_path, _MDL)["entries"]
    for key in ("online_bits", "data_bits", "accuracy"):
        expected = np.asarray(dense["online"]["seeds"][key], dtype=float)
        np.testing.assert_allclose(sparse["online"]["seeds"][key], expected, rtol=1e-5)
    blocks = np.asarray(sparse["online"]["blocks"]["codelength_bits"])
    np.testing.assert_allclose(blocks, dense["online"]["blocks"]["codelength_bits"], rtol=1e-5)


def _write_only(folder, method: str, run: str = ""):
    path = folder / "codes.toml"
    path.write_text(run + _ENTRIES + method)
    return path


@pytest.mark.parametrize(
    ("method", "location", "reason"),
    [
        ('kind = "pareto"', "method.kind", "the pareto method's probes read dense features"),
        ('kind = "power"', "method.kind", "the power method's probes read dense features"),
        ('kind = "switching"', "method.kind", "the switching method's probes read dense"),
        (
            'kind = "mdl"\ncontrol = false\nvariational = true\ntimesteps = [0.25, 0.5, 1.0]',
            "method.variational",
            "the variational code's probes read dense features; set variational = false",
        ),
    ],
)
def test_methods_that_cannot_train_on_sparse_rows_are_refused_at_check(
    tmp_path, capsys, method, location, reason
):
    _files(tmp_path)
    path = _write_only(tmp_path, f"[method]\n{method}\n")
    with pytest.raises(ExperimentError) as raised:
        load_experiment(path)
    sparse = [p for p in raised.value.problems if "sparse features" in p]
    assert len(sparse) == 1  # the dense representation is not named
    assert sparse[0].startswith(f"{location}: representation 'sparse' has sparse features (")
    assert "sparse.npz" in sparse[0] and reason in sparse[0]
    out = tmp_path / "runs"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 2
    assert f"{location}: representation 'sparse'" in capsys.readouterr().err
    assert not out.exists()  # refused before anything was loaded or trained


def test_kept_probes_and_a_sparse_test_beside_a_dense_pool_are_refused(tmp_path):
    _files(tmp_path)
    path = _write_only(tmp_path, _CURVE, run="[run]\nsave_probes = true\n")
    with pytest.raises(ExperimentError, match=r"run.save_probes: representation 'sparse' has"):
        load_experiment(path)
    path.write_text(
        _ENTRIES.replace('test = "dense_test.npz"', 'test = "sparse_test.npz"') + _CURVE
    )
    with pytest.raises(
        ExperimentError, match=r"representations\[0\].test: holds a sparse matrix but train is"
    ):
        load_experiment(path)


_WIDE_RUN = """
import sys
from probemeter.cli.main import main
code = main(["run", sys.argv[1], "--out", sys.argv[2], "--no-progress", "--n-jobs", "1"])
# VmHWM: this process's own peak resident set (not the forked pytest process's)
status = dict(line.split(':', 1) for line in open('/proc/self/status'))
print(code, int(status['VmHWM'].split()[0]) / 2**20)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_run_on_a_pool_too_wide_to_densify_stays_sparse(tmp_path):
    """4000 + 1000 rows × 250 000 features at 0.1 % density: 4.7 GB dense (3.7 GiB the pool
    alone), 12 MB as files. ``probemeter run`` (a curve of linear probes) in a fresh process
    peaks under 1.5 GiB resident, torch included (0.44 GiB recorded): nothing densified the
    features."""
    rng = np.random.default_rng(0)
    features, per_row = 250_000, 250
    for name, rows in (("wide", 4000), ("wide_test", 1000)):
        columns = rng.integers(0, features, size=(rows, per_row)).ravel()
        values = np.abs(rng.standard_normal(rows * per_row)).astype(np.float32)
        pointers = np.arange(0, rows * per_row + 1, per_row)
        matrix = sp.csr_matrix((values, columns, pointers), shape=(rows, features))
        sp.save_npz(tmp_path / f"{name}.npz", matrix, compressed=False)
        labels = np.asarray(matrix[:, :2500].sum(axis=1)).ravel() > 0.3
        np.save(tmp_path / f"{name}.labels.npy", labels.astype(int))
    path = tmp_path / "wide.toml"
    path.write_text(
        '[[representations]]\nname = "wide"\nkind = "npz"\ntrain = "wide.npz"\n'
        'test = "wide_test.npz"\n[method]\nkind = "curve"\nprobe = []\nseeds = 1\nsteps = 20\n'
        "batch_size = 64\nlr = 0.01\nepsilon = 0.5\nsizes = [1000, 3600]\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_WIDE_RUN), str(path), str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    code, peak_gib = completed.stdout.split()[-2:]
    assert int(code) == 0, completed.stderr
    assert float(peak_gib) < 1.5
    curve = json.loads((tmp_path / "runs" / "wide" / "results.json").read_text())["curves"][0]
    assert np.isfinite(curve["points"]["loss"]).all()


def test_the_example_experiment_file_is_valid_with_files_like_the_script_writes(tmp_path):
    """examples/sparse_codes.toml, with small files in the layout
    ``examples/sae_sparse_codes.py --write-files`` gives (tags as strings)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "sparse_codes.toml"
    (tmp_path / "sparse_codes.toml").write_text(example.read_text())
    folder = tmp_path / "data" / "sae-codes"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for stem, rows in (("", 400), ("_test", 100)):
        tags = np.asarray(["NOUN", "VERB", "DET"])[np.arange(rows) % 3]
        np.savez(folder / f"layer{stem}.npz", X=rng.normal(size=(rows, 16)), y=tags)
        sp.save_npz(folder / f"codes{stem}.npz", sp.random(rows, 256, density=0.02, format="csr"))
        np.save(folder / f"codes{stem}.labels.npy", tags)
    experiment = load_experiment(tmp_path / "sparse_codes.toml")
    assert [rep.name for rep in experiment.representations] == ["layer", "codes"]
    assert experiment.method.kind == "mdl" and not experiment.method.control
