"""Table-2 table, Fig.-2 plot, results file and the ``probemeter mdl`` command."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from exported import assert_exported

from probemeter import Execution
from probemeter.cli.main import main
from probemeter.mdl.online import BITS_PER_KBIT
from probemeter.mdl.table import load_mdl_results, mdl_frame, mdl_frames, mdl_table


def _npz(path, n=300, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 40, size=n)
    y = groups % 3  # the task is a function of the type ...
    x = (np.eye(40)[groups] @ rng.normal(size=(40, 6))).astype(np.float32)
    x += 0.1 * rng.normal(size=x.shape).astype(np.float32)
    np.savez(path, X=x, y=y, groups=groups)
    return path


@pytest.mark.slow
def test_cli_mdl_writes_json_markdown_and_png(tmp_path, capsys):
    features = _npz(tmp_path / "rep.npz")
    out = tmp_path / "out"
    status = main(
        [
            "mdl",
            str(features),
            "--groups",
            "groups",
            "--hidden",
            "8",
            "--seeds",
            "2",
            "--timesteps",
            "0.1",
            "0.3",
            "1.0",
            "--max-epochs",
            "5",
            "--variational",
            "--variational-epochs",
            "2",
            "--n-jobs",
            "1",
            "--device",
            "cpu",
            "--out",
            str(out),
        ]
    )
    assert status == 0
    assert {p.name for p in out.iterdir()} >= {"mdl.json", "mdl.md", "mdl.png"}
    (entry,) = load_mdl_results(out / "mdl.json")
    assert entry.name == "rep" and entry.control_online is not None
    assert entry.control_variational is not None
    frame = mdl_frame([entry])
    kbits = entry.online.codelength_bits / BITS_PER_KBIT
    assert frame.loc["rep", "online_kbits"] == pytest.approx(kbits)
    assert frame.loc["rep", "stopping_set"] == entry.online.stopping_set == "dev"
    assert frame.loc["rep", "selectivity"] == pytest.approx(
        entry.online.mean("accuracy") - entry.control_online.mean("accuracy")
    )
    markdown = (out / "mdl.md").read_text()
    assert "online (kbits)" in markdown and " / " in markdown
    assert "s.d. over seeds" in markdown  # two seeds: their spread is shown
    assert "online compression" in capsys.readouterr().out
    assert "\\begin{tabular}" in mdl_table([entry], "latex")
    with pytest.raises(ValueError, match="fmt"):
        mdl_table([entry], "html")


def test_cli_mdl_rejects_groups_of_wrong_length(tmp_path, capsys):
    features = _npz(tmp_path / "rep.npz")
    np.save(tmp_path / "g.npy", np.zeros(7, dtype=int))
    status = main(["mdl", str(features), "--groups", str(tmp_path / "g.npy"), "--device", "cpu"])
    assert status == 2
    assert "--groups" in capsys.readouterr().err


def test_cli_mdl_rejects_bad_timesteps(tmp_path, capsys):
    features = _npz(tmp_path / "rep.npz")
    status = main(["mdl", str(features), "--timesteps", "0.5", "0.2", "1.0", "--device", "cpu"])
    assert status == 2
    assert "increasing" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_mdl_stopping_set_flag(tmp_path, capsys):
    """``--stopping-set`` comes from the option declaration: checked, and recorded per code."""
    features = _npz(tmp_path / "rep.npz")
    with pytest.raises(SystemExit) as caught:  # argparse's choices, from the option's check
        main(["mdl", str(features), "--stopping-set", "sideways", "--device", "cpu"])
    assert caught.value.code == 2
    assert "--stopping-set" in capsys.readouterr().err
    out = tmp_path / "out"
    arguments = ["mdl", str(features), "--hidden", "4", "--seeds", "1", "--timesteps", "0.1"]
    arguments += ["1.0", "--max-epochs", "2", "--stopping-set", "prefix", "--n-jobs", "1"]
    arguments += ["--export", "csv,parquet"]
    status = main([*arguments, "--device", "cpu", "--no-progress", "--out", str(out)])
    assert status == 0
    (entry,) = load_mdl_results(out / "mdl.json")
    frames = mdl_frames([entry])
    assert_exported(out, frames, ("parquet",))
    assert_exported(out, {"online": frames["online"]}, ("csv",))
    # CSV cannot tell an empty string (no pruned architecture) from a missing value
    numbers = frames["mdl"].select_dtypes("number")
    read = pd.read_csv(out / "mdl.csv", float_precision="round_trip")
    pd.testing.assert_frame_equal(read[numbers.columns], numbers)
    assert (entry.online.stopping_set, entry.online.n, entry.online.n_dev) == ("prefix", 240, 0)


def test_codes_keep_the_class_labels_and_the_table_shows_them_once(tmp_path):
    from probemeter.data import ProbeData
    from probemeter.mdl.bayesian import BayesianMLP
    from probemeter.mdl.controls import control_task
    from probemeter.mdl.online import OnlineCode, online_codelength, paper_training
    from probemeter.mdl.table import MDLEntry, save_mdl_results
    from probemeter.mdl.variational import VariationalCode, variational_codelength
    from probemeter.probes import Linear
    from probemeter.training.config import VariationalTraining

    rng = np.random.default_rng(0)
    tags = np.array(["DET", "NOUN", "VERB"])[np.arange(120) % 3]
    words = np.arange(120) % 30  # word types: the control task's groups
    data = ProbeData.from_arrays(
        rng.normal(size=(120, 4)), tags, labels="encode", name="rep", groups=words
    )
    settings = {"random_state": 1}
    config = paper_training(max_epochs=2)
    codes = {
        role: online_codelength(
            task,
            Linear(),
            (0.25, 1.0),
            1,
            config=config,
            execution=Execution(device="cpu", n_jobs=1),
            **settings,
        )
        for role, task in (("online", data), ("control_online", control_task(data)))
    }
    one_epoch = VariationalTraining(epochs=1, batch_size=256, lr=1e-2)
    codes["variational"] = variational_codelength(
        data, BayesianMLP(()), config=one_epoch, **settings
    )
    assert {code.classes for code in codes.values()} == {("DET", "NOUN", "VERB")}
    save_mdl_results(tmp_path / "mdl.json", [MDLEntry("rep", **codes)])
    (entry,) = load_mdl_results(tmp_path / "mdl.json")
    assert {code.classes for code in entry.codes().values()} == {("DET", "NOUN", "VERB")}
    line = "classes: 0 = DET, 1 = NOUN, 2 = VERB (K = 3)"
    assert mdl_table([entry], "text").splitlines()[-1] == line
    assert mdl_table([entry]).endswith("|\n\n" + line)
    assert mdl_table([entry], "latex").count(line) == 1
    old_online, old_variational = entry.online.to_dict(), entry.variational.to_dict()
    del old_online["classes"], old_variational["classes"]  # written before labels were kept
    old = MDLEntry(
        "old",
        online=OnlineCode.from_dict(old_online),
        variational=VariationalCode.from_dict(old_variational),
    )
    assert old.online.classes is None and old.variational.classes is None
    assert "classes" not in mdl_table([old])
    assert "different label mappings" in mdl_table([entry, old])
