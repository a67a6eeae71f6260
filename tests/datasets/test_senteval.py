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


def test_the_vocabulary_is_the_training_lines_labels_and_the_declared_ones(tmp_path):
    # WC: "cat" only in a te line, "dog" only in a va line
    text = "tr\tsun\ta sun\ntr\tsea\ta sea\nva\tdog\ta dog\nte\tsun\tthe sun\nte\tcat\ta cat\n"
    path = tmp_path / "word_content.txt"
    path.write_text(text)
    unseen = (
        r"1 'te' line\(s\) hold label\(s\) 'cat' that no 'tr' line holds \(the first: 'a cat'\)"
    )
    with pytest.raises(ValueError, match=unseen):
        read_senteval(path, "WC")
    rows = SentEvalData("WC", *zip(*(line.split("\t") for line in text.splitlines())))
    assert rows.classes == ("sea", "sun")  # K = 2: neither the te nor the va lines add one
    with pytest.raises(ValueError, match=unseen):
        rows.probe_data(np.zeros((5, 2)))
    # declared: K = 3, sorted; the va line's label stays outside (va lines are not probed)
    data = read_senteval(path, "WC", labels=["cat"])
    assert data.classes == ("cat", "sea", "sun") and data.declared == ("cat",)
    np.testing.assert_array_equal(data.label_ids, [2, 1, -1, 2, 0])
    with pytest.warns(UserWarning, match=r"test labels \[0\] never occur in the training pool"):
        probe = data.probe_data(np.arange(10, dtype=np.float32).reshape(5, 2))
    assert probe.n_classes == 3 and probe.classes == ("cat", "sea", "sun")
    np.testing.assert_array_equal(probe.y_test, [2, 0])
    assert data.digest != read_senteval(path, "WC", labels=["cat", "cow"]).digest  # K is in it
    # a binary task declares its pair: an "I" test line is known though no tr line holds it
    shifted = SentEvalData("BShift", ("tr", "te"), ("O", "I"), ("a b c", "a c b"))
    assert shifted.classes == ("I", "O")
    shifted.check_test_labels()
    # a declared label is checked as a line's label would be
    with pytest.raises(ValueError, match=r"labels: SentLen labels are integers; got 'x'"):
        read_senteval(tmp_path, "SentLen", labels=["x"])
    with pytest.raises(ValueError, match="labels must be a list of labels, not one string"):
        read_senteval(path, "WC", labels="cat")


def test_the_release_recipe_is_the_default_and_deviations_are_named():
    from probemeter.datasets.senteval_generate import RELEASE_RECIPE, Recipe

    recipe = Recipe()
    assert recipe == RELEASE_RECIPE and recipe.deviations() == {}
    # Conneau et al. 2018 §2: 1,000 WC words of frequency ranks 2k-3k; 100k/10k/10k per task
    assert (recipe.wc_words, recipe.wc_skip_top, recipe.wc_per_word) == (1000, 2000, 120)
    assert recipe.split_sizes == (100_000, 10_000, 10_000)
    assert recipe.va_fraction == recipe.te_fraction == 1 / 12
    changed = Recipe(wc_words=30, split_sizes=None)
    assert changed.deviations() == {
        "wc_words": {"release": 1000, "used": 30},
        "split_sizes": {"release": (100_000, 10_000, 10_000), "used": None},
    }
    for bad in ((1, 2), (0, 1, 1), (10, 1.5, 1)):
        with pytest.raises(ValueError, match="split_sizes must be three positive integers"):
            Recipe(split_sizes=bad)


def test_splits_follow_the_release_proportions_and_sizes():
    from probemeter.datasets.senteval_generate import Recipe, _split_balanced

    examples = [(label, (label, str(i)), None, 0) for label in ("I", "O") for i in range(120)]
    rows = _split_balanced("BShift", examples, Recipe(), np.random.default_rng(0))
    counted = {split: sum(1 for row in rows if row[0] == split) for split in ("tr", "va", "te")}
    assert counted == {"tr": 200, "va": 20, "te": 20}  # 100 / 10 / 10 per class, as 100k/10k/10k
    capped = _split_balanced(
        "BShift", examples, Recipe(split_sizes=(50, 7, 4)), np.random.default_rng(0)
    )
    counted = {split: sum(1 for row in capped if row[0] == split) for split in ("tr", "va", "te")}
    assert counted == {"tr": 50, "va": 6, "te": 4}  # at most the size, balanced: 2 * (size // 2)
    one_test = Recipe(split_sizes=(50, 7, 1))
    with pytest.raises(ValueError, match=r"split_sizes allows 1 'te' sentences, fewer than its 2"):
        _split_balanced("BShift", examples, one_test, np.random.default_rng(0))
