"""SentEval probing files: reading hand-written files, the file's own split, clear errors."""

import numpy as np
import pytest

from probemeter.datasets.senteval import (
    TASK_FILES,
    SentEvalData,
    read_senteval,
    senteval_file,
    write_senteval,
)
from probemeter.datasets.senteval_generate import tree_depth

# a SentLen file as the release writes it: bins as integers, splits in file order
SENTLEN = "tr\t10\ta b c\ntr\t2\td e\nva\t2\tf g\nte\t10\th i j\ntr\t10\tk l m\n\nte\t2\tn o\n"


def test_reader_keeps_the_split_and_orders_integer_labels_numerically(tmp_path):
    path = tmp_path / "sentence_length.txt"
    path.write_text(SENTLEN)
    data = read_senteval(tmp_path, "SentLen")  # a folder: the task's release file in it
    assert data.source == str(path)
    assert data.splits == ("tr", "tr", "va", "te", "tr", "te")
    assert data.classes == ("2", "10")  # not the string order ("10" < "2")
    np.testing.assert_array_equal(data.label_ids, [1, 0, 0, 1, 1, 0])
    assert data.counts() == {"tr": {"10": 2, "2": 1}, "va": {"2": 1}, "te": {"10": 1, "2": 1}}
    features = np.arange(12, dtype=np.float32).reshape(6, 2)
    probe = data.probe_data(features, name="rows")
    # pool = the tr lines (0, 1, 4), test = the te lines (3, 5); va (2) left out
    assert probe.pool_size == 3 and len(probe.y_test) == 2
    np.testing.assert_array_equal(probe.y_train, [1, 0, 1])
    np.testing.assert_array_equal(probe.y_test, [1, 0])
    assert probe.classes == ("2", "10") and probe.n_classes == 2
    # standardised with pool statistics: the rows keep their order
    raw = features[[0, 1, 4]]
    expected = (raw - raw.mean(0)) / raw.std(0)
    np.testing.assert_allclose(probe.X_train, expected, rtol=1e-5)


def test_probe_data_needs_one_row_per_line(tmp_path):
    (tmp_path / "s.txt").write_text(SENTLEN)
    data = read_senteval(tmp_path / "s.txt", "SentLen")
    with pytest.raises(ValueError, match=r"features must be \(n_sentences=6, d\); got shape"):
        data.probe_data(np.zeros((5, 2)))


def test_write_read_round_trip(tmp_path):
    rows = [("tr", "PAST", "he went home"), ("te", "PRES", "she goes"), ("tr", "PRES", "it is")]
    write_senteval(tmp_path / "deep" / "past_present.txt", rows, "Tense")
    data = read_senteval(tmp_path / "deep", "Tense")
    assert list(zip(data.splits, data.labels, data.sentences)) == rows
    assert data == SentEvalData("Tense", *zip(*rows), source=data.source)
    assert (tmp_path / "deep" / "past_present.txt").read_text().splitlines()[1] == (
        "te\tPRES\tshe goes"
    )


@pytest.mark.parametrize(
    ("text", "task", "message"),
    [
        ("tr\tO\ta b\nte\tI a b\n", "BShift", r"bad\.txt:2: expected 3 tab-separated fields"),
        ("tr\tO\ta b\nxx\tI\ta b\n", "BShift", r"bad\.txt:2: the first field must be one of"),
        ("tr\tO\ta b\nte\tX\ta b\n", "BShift", r"bad\.txt:2: BShift labels are \('I', 'O'\)"),
        ("tr\t3\ta b\n\nte\tlong\ta b\n", "SentLen", r"bad\.txt:3: SentLen labels are integers"),
        ("tr\tO\t \n", "BShift", r"bad\.txt:1: empty sentence"),
        ("tr\tO\ta\ntr\tI\tb\nva\tO\tc\n", "BShift", r"has no 'te' lines"),
        ("tr\tO\ta\ntr\tO\tb\nte\tI\tc\n", "BShift", r"'tr' lines hold one class only"),
    ],
)
def test_bad_files_name_the_file_and_line(tmp_path, text, task, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_senteval(path, task)


def test_missing_files_and_unknown_tasks(tmp_path):
    with pytest.raises(ValueError, match=r"word_content\.txt' does not exist"):
        read_senteval(tmp_path, "WC")
    with pytest.raises(ValueError, match=r"task must be one of \('SentLen', 'WC'"):
        senteval_file(tmp_path, "wc")
    (tmp_path / "subj_number.txt").write_text("tr\tNNP\tjohn runs\n")
    with pytest.raises(ValueError, match=r"subj_number\.txt:1: SubjNum labels are"):
        senteval_file(tmp_path, "SubjNum")  # the first line only: what --check reads
    with pytest.raises(ValueError, match=r"rows\[0\]: the sentence 'a\\tb' holds a tab"):
        write_senteval(tmp_path / "x.txt", [("tr", "O", "a\tb")], "BShift")


def test_all_ten_release_files_are_named():
    assert len(TASK_FILES) == 10
    assert TASK_FILES["Tense"] == "past_present.txt"
    assert TASK_FILES["SOMO"] == "odd_man_out.txt"
    assert TASK_FILES["CoordInv"] == "coordination_inversion.txt"


def test_tree_depth_counts_the_words_on_the_longest_root_path():
    assert tree_depth([-1]) == 1
    # "the cat sat on the mat": sat <- cat <- the; sat <- on <- mat <- the
    assert tree_depth([1, 2, -1, 2, 5, 3]) == 4
    with pytest.raises(ValueError, match="one root"):
        tree_depth([1, 0])
    with pytest.raises(ValueError, match="one root"):
        tree_depth([-1, -1])
    with pytest.raises(ValueError, match="cycle"):
        tree_depth([-1, 2, 1])


def test_a_target_form_in_both_classes_stays_in_one_split():
    from probemeter.datasets.senteval_generate import Recipe, _split_balanced

    # "put" is a root verb tagged both VBD (PAST) and VBP (PRES); 30 other forms per class
    examples = [("PAST", ("they", "put", str(i)), "put", 0) for i in range(4)]
    examples += [("PRES", ("we", "put", str(i)), "put", 0) for i in range(4)]
    for label in ("PAST", "PRES"):
        examples += [
            (label, (label, f"v{i}", str(j)), f"{label}{i}", 0) for i in range(30) for j in range(2)
        ]
    for seed in range(20):
        rows = _split_balanced("Tense", examples, Recipe(), np.random.default_rng(seed))
        splits = {split for split, _, sentence in rows if " put " in sentence}
        assert len(splits) <= 1, (seed, splits)
