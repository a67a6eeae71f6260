"""The files a researcher judges a package by: licence, citation, changelog, typing marker, and
one version everywhere."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import probemeter

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def test_the_licence_is_mit_in_the_file_and_in_the_metadata():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]


def test_citation_is_valid_cff_and_cites_the_four_papers():
    cffconvert = pytest.importorskip("cffconvert")
    text = (ROOT / "CITATION.cff").read_text()
    cffconvert.Citation(text).validate()  # raises on a schema violation
    assert f"version: {probemeter.__version__}\n" in text
    for title in (
        "Evaluating representations by the complexity of learning low-loss predictors",
        "Information-Theoretic Probing with Minimum Description Length",
        "On the data requirements of probing",
        "Pareto Probing: Trading Off Accuracy for Complexity",
    ):
        assert title in text


def test_changelog_follows_keep_a_changelog_and_knows_this_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "Keep a Changelog" in text and "## [Unreleased]" in text
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", text, flags=re.M)
    assert releases and releases[0] == probemeter.__version__


def test_the_package_declares_its_type_hints():
    assert (Path(probemeter.__file__).parent / "py.typed").is_file()
