"""Table-2 table, Fig.-2 plot, results file and the ``probemeter mdl`` command."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter.cli.main import main
from probemeter.mdl.online import BITS_PER_KBIT
from probemeter.mdl.table import load_mdl_results, mdl_frame, mdl_table


def _npz(path, n=300, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 40, size=n)
    y = groups % 3  # the task is a function of the type ...
    x = (np.eye(40)[groups] @ rng.normal(size=(40, 6))).astype(np.float32)
    x += 0.1 * rng.normal(size=x.shape).astype(np.float32)
    np.savez(path, X=x, y=y, groups=groups)
    return path


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
    status = main([*arguments, "--device", "cpu", "--no-progress", "--out", str(out)])
    assert status == 0
    (entry,) = load_mdl_results(out / "mdl.json")
    assert (entry.online.stopping_set, entry.online.n, entry.online.n_dev) == ("prefix", 240, 0)
