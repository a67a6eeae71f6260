"""Tables of labelled texts (CSV, JSON lines, Parquet): reading, the split, and the errors."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probemeter.datasets.texts import dataset_splits_problem, read_texts, texts_format_problem

ROWS = [
    ("a fine film", "pos", "train"),
    ("dull and long", "neg", "train"),
    ("loved it", "pos", "train"),
    ("never again", "neg", "dev"),
    ("a gem", "pos", "test"),
    ("a mess", "neg", "test"),
]


def _frame(rows=ROWS, columns=("review", "sentiment", "part")) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_each_format_reads_the_configured_columns(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    path = _write(_frame(), tmp_path / f"reviews{suffix}")
    data = read_texts(path, text_column="review", label_column="sentiment", split_column="part")
    assert data.texts == tuple(row[0] for row in ROWS)
    assert data.labels == tuple(row[1] for row in ROWS)
    assert data.splits == tuple(row[2] for row in ROWS)
    assert data.source == str(path)


def test_the_files_split_keeps_dev_in_the_pool_unless_dropped(tmp_path):
    data = read_texts(
        _write(_frame(), tmp_path / "r.csv"),
        text_column="review",
        label_column="sentiment",
        split_column="part",
    )
    pool, test = data.split()
    assert pool.tolist() == [0, 1, 2, 3] and test.tolist() == [4, 5]
    pool, test = data.split(dev="drop")
    assert pool.tolist() == [0, 1, 2] and test.tolist() == [4, 5]
    probe = data.probe_data(np.arange(12.0).reshape(6, 2))
    assert probe.classes == ("neg", "pos")
    assert probe.y_train.tolist() == [1, 0, 1, 0] and probe.y_test.tolist() == [1, 0]


def test_integer_labels_sort_numerically_whatever_the_format(tmp_path):
    rows = [(f"text {i}", [2, 10, 1][i % 3]) for i in range(9)]
    frame = pd.DataFrame(rows, columns=["text", "label"])
    for suffix in (".csv", ".jsonl"):
        data = read_texts(_write(frame, tmp_path / f"n{suffix}"))
        assert data.labels == tuple(row[1] for row in rows)
        pool, _ = data.split(test_size=1 / 3)
        assert data.classes(pool) == (1, 2, 10)


def test_the_stratified_split_is_seeded_and_keeps_the_class_shares(tmp_path):
    rows = [(f"text {i}", "abc"[i % 3]) for i in range(60)]
    data = read_texts(_write(pd.DataFrame(rows, columns=["text", "label"]), tmp_path / "s.csv"))
    pool, test = data.split(test_size=0.25, random_state=3)
    again, _ = data.split(test_size=0.25, random_state=3)
    other, _ = data.split(test_size=0.25, random_state=4)
    assert pool.tolist() == again.tolist() and pool.tolist() != other.tolist()
    assert len(test) == 15 and sorted(set(pool) | set(test)) == list(range(60))
    assert data.counts(test) == {"a": 5, "b": 5, "c": 5}


def test_a_texts_file_too_small_to_stratify_is_refused(tmp_path):
    rows = [("one", "a"), ("two", "b"), ("three", "b")]
    data = read_texts(_write(pd.DataFrame(rows, columns=["text", "label"]), tmp_path / "t.csv"))
    with pytest.raises(ValueError, match=r"label\(s\) 'a' hold one row only"):
        data.split()


def test_test_labels_outside_the_pool_are_refused(tmp_path):
    rows = [("a", "x", "train"), ("b", "y", "train"), ("c", "z", "test")]
    frame = pd.DataFrame(rows, columns=["text", "label", "split"])
    data = read_texts(_write(frame, tmp_path / "t.csv"), split_column="split")
    with pytest.raises(ValueError, match=r"1 test row\(s\) hold label\(s\) 'z'.*row 3"):
        data.split()


@pytest.mark.parametrize(
    ("content", "options", "message"),
    [
        (
            "text,label\nhi,a\n",
            {"label_column": "y"},
            r"no column 'y' \(label_column\); its "
            r"columns: 'text', 'label'",
        ),
        ("text,label\nhi,a\n ,b\n", {}, r"row 2: empty text in column 'text'"),
        ("text,label\nhi,a\nho,\n", {}, r"row 2: missing label in column 'label'"),
        (
            "text,label,s\nhi,a,train\nho,b,valid\n",
            {"split_column": "s"},
            r"row 2: split 'valid' in column 's' is not one of train, dev, test",
        ),
        ("text,label\n", {}, "holds no rows"),
    ],
)
def test_bad_csv_files_name_the_file_column_and_row(tmp_path, content, options, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as raised:
        read_texts(path, **options)
    assert str(path) in str(raised.value)


def test_bad_jsonl_lines_and_formats_are_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"text": "hi", "label": 1}) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl', line 2: not JSON"):
        read_texts(path)
    path.write_text(json.dumps({"text": 3, "label": 1}) + "\n")
    with pytest.raises(ValueError, match=r"row 1: text 3 in column 'text' is no string"):
        read_texts(path)
    path.write_text(json.dumps({"text": "hi", "label": 1.5}) + "\n")
    with pytest.raises(ValueError, match=r"label 1.5 in column 'label' is not an integer"):
        read_texts(path)
    other = tmp_path / "data.tsv"
    other.write_text("text\tlabel\n")
    with pytest.raises(ValueError, match=r"unknown format '.tsv' \(known: .csv, .jsonl"):
        read_texts(other)
    assert "unknown format" in texts_format_problem(other)
    with pytest.raises(ValueError, match="does not exist"):
        read_texts(tmp_path / "none.csv")


def test_parquet_without_pyarrow_names_the_package(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pyarrow" else find_spec(name, *a),
    )
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(ImportError, match=r"needs the package pyarrow: pip install"):
        read_texts(path)
    assert "pyarrow" in texts_format_problem(path)


def test_a_class_label_column_gives_its_names(tmp_path):
    """A saved dataset's ``ClassLabel`` column: its labels are the feature's names, not the
    integers ``datasets`` stores (they printed as 0, 1), in a ``Dataset`` and a
    ``DatasetDict`` alike; its missing label (-1) is refused as missing."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
    )
    rows = {"text": ["good film", "bad film", "fine", "awful"], "label": [1, 0, 1, 0]}
    saved = datasets.Dataset.from_dict(rows, features=features)
    saved.save_to_disk(tmp_path / "one")
    texts = read_texts(tmp_path / "one")
    assert texts.labels == ("pos", "neg", "pos", "neg")
    pool, _ = texts.split(test_size=0.5)
    assert texts.classes(pool) == ("neg", "pos")

    datasets.DatasetDict({"train": saved, "test": saved}).save_to_disk(tmp_path / "dict")
    assert read_texts(tmp_path / "dict").labels == ("pos", "neg", "pos", "neg") * 2

    missing = datasets.Dataset.from_dict({**rows, "label": [1, -1, 1, 0]}, features=features)
    missing.save_to_disk(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"row 2: missing label in column 'label'"):
        read_texts(tmp_path / "missing")


def test_a_dataset_dict_with_an_extra_split_reads_the_splits_named(tmp_path):
    """IMDB's shape: train, test and an unlabelled ``unsupervised`` split. Refused without
    ``dataset_splits`` (the message names the way round it); with it, the named splits are
    the rows' train/dev/test in that order (whatever the DatasetDict calls them), the extra
    split left out with one warning, ``ClassLabel`` names kept; a named split the folder lacks
    is one line naming it and the splits there are."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
    )

    def part(texts, labels):
        return datasets.Dataset.from_dict({"text": texts, "label": labels}, features=features)

    saved = datasets.DatasetDict(
        {
            "unsupervised": part(["no label here", "nor here"], [-1, -1]),
            "test": part(["lovely", "dull"], [1, 0]),
            "heldout": part(["great"], [1]),
            "train": part(["good film", "bad film", "fine", "awful"], [1, 0, 1, 0]),
        }
    )
    saved.save_to_disk(tmp_path / "imdb")
    with pytest.raises(ValueError, match=r"'unsupervised', 'heldout' are none of .*splits = "):
        read_texts(tmp_path / "imdb")

    with pytest.warns(UserWarning, match=r"split\(s\) 'unsupervised' left out") as caught:
        texts = read_texts(
            tmp_path / "imdb",
            dataset_splits={"train": "train", "dev": "heldout", "test": "test"},
        )
    assert len(caught) == 1
    assert texts.texts == ("good film", "bad film", "fine", "awful", "great", "lovely", "dull")
    assert texts.labels == ("pos", "neg", "pos", "neg", "pos", "pos", "neg")
    assert texts.splits == ("train",) * 4 + ("dev",) + ("test",) * 2
    pool, test = texts.split(dev="drop")
    assert list(pool) == [0, 1, 2, 3] and list(test) == [5, 6]

    with pytest.warns(UserWarning, match=r"'unsupervised', 'heldout' left out"):
        no_dev = read_texts(tmp_path / "imdb", dataset_splits={"train": "train", "test": "test"})
    assert no_dev.splits == ("train",) * 4 + ("test",) * 2

    with pytest.raises(ValueError, match=r"splits names split 'validation', which the "):
        read_texts(tmp_path / "imdb", dataset_splits={"train": "train", "test": "validation"})
    # the same, read off the folder's index (dataset_dict.json) without loading the data
    named = {"train": "train", "dev": "heldout", "test": "test"}
    assert dataset_splits_problem(tmp_path / "imdb", named) is None
    assert "'unsupervised', 'heldout' of" in dataset_splits_problem(tmp_path / "imdb", None)
    assert "names split 'validation', which the DatasetDict" in dataset_splits_problem(
        tmp_path / "imdb", {"train": "train", "test": "validation"}
    )
    saved["train"].save_to_disk(tmp_path / "one")
    with pytest.raises(ValueError, match=r"is a Dataset without splits; splits names"):
        read_texts(tmp_path / "one", dataset_splits={"train": "train", "test": "test"})
    pd.DataFrame({"text": ["a", "b"], "label": [0, 1]}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError, match=r"splits names the splits of a saved DatasetDict"):
        read_texts(tmp_path / "t.csv", dataset_splits={"train": "train", "test": "test"})
