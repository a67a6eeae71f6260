"""The `numerics` marker (issue 40, item 8): declared, carried by the numerically sensitive
tests, and rerun by ``make test`` under ``ATEN_CPU_CAPABILITY=default``, a setting torch
honours, so a tolerance that holds only with one CPU's vector kernels fails on every machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_the_marker_is_declared_and_make_test_reruns_its_tests_on_portable_kernels():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    markers = settings["tool"]["pytest"]["ini_options"]["markers"]
    assert any(marker.startswith("numerics:") for marker in markers)
    recipe = (ROOT / "Makefile").read_text().split("\ntest: venv\n", 1)[1].split("\n\n", 1)[0]
    assert "\tATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest -q -m numerics" in recipe
    assert recipe.index("-m numerics") > recipe.index("$(BIN)/python -m pytest -q\n")


def test_the_comparisons_with_references_carry_it():
    marked = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if "@pytest.mark.numerics" in path.read_text()
    }
    for expected in (
        "tests/training/test_weight_decay.py",
        "tests/training/test_engine.py",
        "tests/probes/test_stacked_mlp.py",
        "tests/curves/test_curve.py",
        "tests/mdl/test_mdl.py",
    ):
        assert expected in marked


def test_torch_honours_the_portable_kernel_setting():
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    env = {"ATEN_CPU_CAPABILITY": "default", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "DEFAULT"
