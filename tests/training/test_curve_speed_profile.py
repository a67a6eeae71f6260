"""benchmarks/curve_speed.py's ``--profile`` on the quick small-linear case: the operator groups
of the one-thread profile account for the whole profiled time, and the engine's functions it
wraps in profiler labels are the library's own again afterwards."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
GROUP_LINE = re.compile(r"^ +(?P<group>\S.*?) +(?P<seconds>[\d.]+) s +(?P<percent>[\d.]+) %$")


@pytest.fixture
def bench(monkeypatch):
    """The benchmark module (it imports its siblings, so benchmarks/ goes on the path)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import curve_speed

    return curve_speed


def printed_groups(output: str) -> dict[str, float]:
    """The percentages of the printed table "by operator group"."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "by operator group:")
    groups = {}
    for line in lines[start + 1 :]:
        match = GROUP_LINE.match(line)
        if match is None:
            break
        groups[match["group"]] = float(match["percent"])
    return groups


@pytest.mark.slow  # the whole quick benchmark: peak, worker processes, plain loop (~20 s)
def test_profile_groups_sum_to_the_whole(bench, capsys, tmp_path):
    from probemeter.probes.stacked_mlp import StackedMLP
    from probemeter.training import engine

    train, evaluate = engine._train_chunk, StackedMLP.evaluate
    argv = ["--quick", "--profile", "--profile-steps", "5", "--cases", "small-linear"]
    # no peak of parallel processes: its function lives in the benchmark module, which a
    # worker pool started earlier by another test (loky reuses it) cannot import
    argv += ["--precisions", "f32", "--no-parallel-peak", "--json", str(tmp_path / "bench.json")]
    assert bench.main(argv) == 0
    output = capsys.readouterr().out
    assert "figures of 5 of the 100 steps" in output
    groups = printed_groups(output)
    assert list(groups) == list(bench.PROFILE_GROUPS)
    assert sum(groups.values()) == pytest.approx(100, abs=0.5)
    assert groups["matmuls"] > 0
    profile = json.loads((tmp_path / "bench.json").read_text())["cases"][0]["profile"]
    assert profile["steps"] == 5
    assert sum(profile["groups_percent"].values()) == pytest.approx(100)
    assert sum(profile["phases_percent"].values()) == pytest.approx(100)
    assert profile["phases_s"]["train full-batch"] + profile["phases_s"]["train small-n"] > 0
    assert profile["phases_s"]["evaluation"] > 0
    assert engine._train_chunk is train and StackedMLP.evaluate is evaluate


def test_profile_steps_must_be_positive(bench, capsys):
    with pytest.raises(SystemExit):
        bench.parse_arguments(["--profile", "--profile-steps", "0"])
    assert "--profile-steps must be at least 1, got 0" in capsys.readouterr().err
