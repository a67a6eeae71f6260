"""Contrast pairs in a texts table (``contrast_column``): the reader, the pair's features
(difference and side by side), the split by pair, and the inputs it refuses."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probemeter.datasets.texts import pair_features, read_texts

ROWS = [
    ("Paris is in France. True", "Paris is in France. False", "yes", "train"),
    ("Rome is in Spain. True", "Rome is in Spain. False", "no", "train"),
    ("Oslo is in Norway. True", "Oslo is in Norway. False", "yes", "train"),
    ("Bern is in Peru. True", "Bern is in Peru. False", "no", "train"),
    ("Lima is in Peru. True", "Lima is in Peru. False", "yes", "test"),
    ("Kyiv is in Chile. True", "Kyiv is in Chile. False", "no", "test"),
]
COLUMNS = ["statement", "contrast", "truth", "part"]


def _write(path: Path, rows=ROWS) -> Path:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


def _read(path: Path, **options):
    arguments = {
        "text_column": "statement",
        "label_column": "truth",
        "contrast_column": "contrast",
        "split_column": "part",
    }
    return read_texts(path, **{**arguments, **options})


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_pairs_are_read_as_rows_with_both_texts(tmp_path, suffix):
    data = _read(_write(tmp_path / f"pairs{suffix}"))
    assert data.n_rows == 6
    assert data.texts == tuple(row[0] for row in ROWS)
    assert data.contrasts == tuple(row[1] for row in ROWS)
    assert data.labels == tuple(row[2] for row in ROWS)
    # what is encoded: the statements, then the contrasts, in one list
    assert data.all_texts == data.texts + data.contrasts
    # the contrasts are in the digest; plain texts of the same file keep theirs
    plain = read_texts(
        tmp_path / f"pairs{suffix}",
        text_column="statement",
        label_column="truth",
        split_column="part",
    )
    assert plain.contrasts is None and plain.all_texts == plain.texts
    assert plain.digest != data.digest
    content = [plain.texts, list(plain.labels), plain.splits]
    import hashlib

    expected = hashlib.sha256(json.dumps(content, separators=(",", ":")).encode()).hexdigest()
    assert plain.digest == expected  # the digest of plain texts is unchanged by pairs


def test_the_pair_is_the_row_difference_and_concat(tmp_path):
    data = _read(_write(tmp_path / "pairs.csv"))
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    features = np.concatenate([first, second])  # statements then contrasts
    np.testing.assert_array_equal(pair_features(features, "difference"), first - second)
    np.testing.assert_array_equal(
        pair_features(features, "concat"), np.concatenate([first, second], axis=1)
    )
    # the file's split, by pair: rows 0-3 the pool, 4-5 the test set; "no" < "yes"
    diff = data.probe_data(features, pair="difference")
    assert diff.classes == ("no", "yes")
    assert diff.y_train.tolist() == [1, 0, 1, 0] and diff.y_test.tolist() == [1, 0]
    pool = first[:4] - second[:4]
    mean, std = pool.mean(0), pool.std(0)
    np.testing.assert_allclose(diff.X_train, (pool - mean) / std, rtol=1e-5, atol=1e-6)
    test = first[4:] - second[4:]
    np.testing.assert_allclose(diff.X_test, (test - mean) / std, rtol=1e-5, atol=1e-6)
    concat = data.probe_data(features, pair="concat")
    assert concat.X_train.shape == (4, 6) and concat.X_test.shape == (2, 6)
    side = np.concatenate([first, second], axis=1)
    mean, std = side[:4].mean(0), side[:4].std(0)
    np.testing.assert_allclose(concat.X_test, (side[4:] - mean) / std, rtol=1e-5, atol=1e-6)


def test_a_seeded_split_of_pairs_is_stratified_by_label(tmp_path):
    rows = [(f"s{i} True", f"s{i} False", ("yes", "no")[i % 2], "train") for i in range(20)]
    data = _read(_write(tmp_path / "pairs.csv", rows), split_column=None)
    features = np.arange(40 * 2, dtype=np.float64).reshape(40, 2)
    probe = data.probe_data(features, pair="difference", test_size=0.2, random_state=3)
    pool, test = data.split(test_size=0.2, random_state=3)
    assert len(pool) == 16 and len(test) == 4
    assert sorted(data.counts(test).values()) == [2, 2]
    assert probe.pool_size == 16


@pytest.mark.parametrize(
    ("cell", "message"),
    [("", "row 3: empty text in column 'contrast'"), ("   ", "row 3: empty text in column")],
)
def test_an_empty_contrast_names_its_row_and_column(tmp_path, cell, message):
    rows = [list(row) for row in ROWS]
    rows[2][1] = cell
    with pytest.raises(ValueError, match=message):
        _read(_write(tmp_path / "pairs.csv", rows))


def test_refused_pair_inputs(tmp_path):
    path = _write(tmp_path / "pairs.csv")
    with pytest.raises(ValueError, match=r"no column 'negation' \(contrast_column\)"):
        _read(path, contrast_column="negation")
    with pytest.raises(ValueError, match="contrast_column 'statement' is the text_column"):
        _read(path, contrast_column="statement")
    with pytest.raises(ValueError, match="contrast_column 'truth' is the label_column"):
        _read(path, contrast_column="truth")
    jsonl = tmp_path / "pairs.jsonl"
    records = [dict(zip(COLUMNS, row, strict=True)) for row in ROWS]
    records[1]["contrast"] = 7
    jsonl.write_text("".join(json.dumps(record) + "\n" for record in records))
    with pytest.raises(ValueError, match="row 2: text 7 in column 'contrast' is no string"):
        _read(jsonl)
    data = _read(path)
    features = np.zeros((12, 2))
    with pytest.raises(ValueError, match=r"\(2n, d\)"):
        data.probe_data(features[:11], pair="concat")
    with pytest.raises(ValueError, match="pair must be one of"):
        data.probe_data(features, pair="sum")
    with pytest.raises(ValueError, match="no rows of tokens"):
        data.probe_data(features, pair="concat", rows_per_text=[1] * 6)
    plain = read_texts(path, text_column="statement", label_column="truth", split_column="part")
    with pytest.raises(ValueError, match="needs contrast pairs"):
        plain.probe_data(features, pair="difference")
