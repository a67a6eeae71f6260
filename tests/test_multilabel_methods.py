"""Label sets (multi-label targets) through the data, edge probing, loss-data curves and the
online code: the codes are sums of K Bernoulli codes (Tenney et al. 2019's sigmoid probes;
Voita & Titov 2020, eq. 4), the uniform code is K bits per example, and the methods that
cannot use label sets refuse them with the reason."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from probemeter import Execution
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.measures import description_length
from probemeter.data import ProbeData, subset_permutation
from probemeter.datasets.edge_probing import edge_labels, edge_probe_data, read_edge_probing
from probemeter.mdl.controls import control_task
from probemeter.mdl.online import BITS_PER_NAT, OnlineCode, online_codelength
from probemeter.probes import Linear
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

D, K = 5, 3


@pytest.fixture(scope="module")
def data() -> ProbeData:
    rng = np.random.default_rng(5)
    teacher = rng.normal(size=(D, K))
    x = rng.normal(size=(300, D)).astype(np.float32)
    sets = (x @ teacher + 0.4 * rng.normal(size=(300, K)) > 0.2).astype(np.uint8)
    groups = rng.integers(0, 40, 300)
    return ProbeData.from_arrays(
        x[:220], sets[:220], x[220:], sets[220:], labels="indicator", name="toy",
        groups=groups[:220], groups_test=groups[220:],
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def test_label_sets_in_probe_data(data, tmp_path):
    assert data.multilabel and data.n_classes == K and data.y_train.shape == (220, K)
    assert data.y_train.dtype == np.uint8
    loaded = ProbeData.load(data.save(tmp_path / "saved"))
    assert loaded.multilabel and np.array_equal(loaded.y_test, data.y_test)
    assert loaded.fingerprint() == data.fingerprint()
    # one set split into pool and test: rows move with their sets
    split = ProbeData.from_arrays(data.X_train, data.y_train, labels="indicator", test_size=0.25)
    assert split.y_train.shape == (165, K) and split.y_test.shape == (55, K)
    assert not ProbeData.from_arrays(data.X_train, data.y_train.argmax(1)).multilabel


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (np.zeros(10), r"y must be a 0/1 indicator matrix \(n_examples, n_labels\)"),
        (np.full((10, 2), 2), "only 0 and 1"),
        (np.ones((9, 2)), "9 label sets but X has 10 rows"),
        (np.c_[np.ones(10), np.zeros(10)], r"label column\(s\) \[1\] never occur"),
    ],
)
def test_bad_label_sets_are_refused(labels, message):
    x = np.random.default_rng(0).normal(size=(10, 3))
    first_only = np.c_[np.ones(10), np.zeros(10)]
    with pytest.raises(ValueError, match=message):
        ProbeData.from_arrays(x, labels, x, first_only, labels="indicator")
    with pytest.warns(UserWarning, match=r"label column\(s\) \[1\] never occur in the training"):
        ProbeData.from_arrays(x, first_only, x, np.ones((10, 2)), labels="indicator")


def test_label_sets_need_one_width_and_no_n_classes():
    x = np.zeros((4, 2))
    sets = np.eye(4, 3, dtype=int)
    with pytest.raises(ValueError, match="y_test has 2 label columns but y has 3"):
        ProbeData.from_arrays(x, sets, x, sets[:, :2], labels="indicator")
    with pytest.raises(ValueError, match="n_classes is implied by labels='indicator'"):
        ProbeData.from_arrays(x, sets, x, sets, labels="indicator", n_classes=3)


def _edge_file(tmp_path, name, targets):
    lines = [json.dumps({"text": "a b c", "targets": targets})]
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return read_edge_probing(tmp_path / name)


def test_edge_label_sets_share_one_vocabulary(tmp_path):
    train = _edge_file(
        tmp_path,
        "train.json",
        [{"span1": [0, 1], "label": ["B", "A"]}, {"span1": [1, 2], "label": "C"}],
    )
    test = _edge_file(tmp_path, "test.json", [{"span1": [2, 3], "label": ["D", "B", "B"]}])
    with pytest.raises(ValueError, match="'D' that no target of the pool"):
        edge_labels(train, test, multilabel=True)  # the test split alone adds no label
    (y_train, y_test), vocabulary = edge_labels(train, test, multilabel=True, labels=["D"])
    assert vocabulary == ("A", "B", "C", "D")
    np.testing.assert_array_equal(y_train, [[1, 1, 0, 0], [0, 0, 1, 0]])
    np.testing.assert_array_equal(y_test, [[0, 1, 0, 1]])
    with pytest.raises(ValueError, match=r"several labels .*multilabel=True"):
        edge_labels(train, test)
    features = [np.arange(9, dtype=np.float32).reshape(3, 3)]
    with pytest.warns(UserWarning, match=r"label column\(s\) \[3\] never occur in the training"):
        probe_data = edge_probe_data(
            train, test, features, features, "mean", multilabel=True, labels=["D"]
        )
    assert probe_data.multilabel and probe_data.classes == vocabulary
    np.testing.assert_array_equal(probe_data.y_train, y_train)


def test_control_task_gives_each_word_type_one_label_set(data):
    control = control_task(data, random_state=3)
    assert control.multilabel and control.y_train.shape == data.y_train.shape
    groups = np.concatenate([data.groups_train, data.groups_test])
    sets = np.concatenate([control.y_train, control.y_test])
    pool_sets = {tuple(row) for row in data.y_train}
    for group in np.unique(groups):
        rows = {tuple(row) for row in sets[groups == group]}
        assert len(rows) == 1 and rows <= pool_sets  # one set per type, drawn from the pool's


# ---------------------------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------------------------


def test_curve_of_label_sets(data):
    config = TrainingConfig(steps=80, lr=1e-2)
    curve = loss_data_curve(
        data,
        Linear(),
        [10, 60, 220],
        2,
        config=config,
        execution=Execution(n_jobs=1),
        dev_fraction=0.0,
    )
    assert curve.multilabel
    assert {"micro_f1", "macro_f1"} <= set(curve.points.columns)
    assert curve.summary("micro_f1")["mean"].iloc[-1] > 0.7
    final = curve.points[curve.points["n"] == 220]
    # the final probes' correctness is exact set match: it averages to their accuracy
    assert curve.final_correct.accuracy.value == pytest.approx(final["accuracy"].mean())
    loaded = LossDataCurve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert loaded.multilabel and loaded.points.equals(curve.points)
    # MDL's first block is sent with the uniform code of K fair coins, K ln 2 nats each
    code = description_length(curve)
    assert code.first_block == pytest.approx(K * math.log(2))
    losses = curve.mean("loss")
    expected = 10 * K * math.log(2) + 50 * losses[10] + 160 * losses[60] + 0 * losses[220]
    assert code.value == pytest.approx(expected)


@pytest.mark.numerics
def test_online_code_of_label_sets_is_a_sum_of_bernoulli_codes(data):
    config = TrainingConfig(steps=60, batch_size=32, lr=1e-2)
    code = online_codelength(
        data,
        Linear(),
        timesteps=(0.1, 0.4, 1.0),
        seeds=1,
        config=config,
        execution=Execution(n_jobs=1),
    )
    n = data.pool_size  # fixed steps: no development set, the whole pool is sent
    assert code.multilabel and code.n == n and code.uniform_bits == n * K
    ends = code.ends
    blocks = code.blocks
    assert blocks["codelength_bits"].iloc[0] == ends[0] * K  # K bits per example
    order = subset_permutation(n, 0, 0)
    for block in (1, 2):
        sent = order[ends[block - 1] : ends[block]]
        again = fit_evaluate(
            data.X_train,
            data.y_train,
            data.X_train[sent],
            data.y_train[sent],
            K,
            [order[: ends[block - 1]]],
            [(0, 0, ends[block - 1])],
            Linear(),
            config,
            execution=Execution(n_jobs=1),
        )
        bits = again.loss[0] * len(sent) * BITS_PER_NAT
        assert blocks["codelength_bits"].iloc[block] == pytest.approx(bits, rel=1e-4)
        assert blocks["micro_f1"].iloc[block] == pytest.approx(again.micro_f1[0], abs=1e-9)
    seed = code.seeds.iloc[0]
    assert seed["online_bits"] == pytest.approx(blocks["codelength_bits"].sum())
    assert seed["compression"] == pytest.approx(n * K / seed["online_bits"])
    assert seed["compression"] > 1.2  # the features predict the sets
    assert 0 < seed["macro_f1"] <= 1 and 0 < seed["micro_f1"] <= 1
    loaded = OnlineCode.from_dict(json.loads(json.dumps(code.to_dict())))
    assert loaded.multilabel and loaded.uniform_bits == n * K
    assert "micro_f1" in code.block_table().columns


def test_methods_without_label_sets_refuse_them(data):
    from probemeter.mdl.variational import variational_codelength
    from probemeter.pareto.sweeps import linear_sweep
    from probemeter.power.paired import paired_data

    with pytest.raises(ValueError, match=r"the variational code .* needs one class per example"):
        variational_codelength(data)
    with pytest.raises(ValueError, match="a Pareto sweep"):
        linear_sweep(data, "toy", "toy")
    with pytest.raises(ValueError, match="a power comparison"):
        paired_data(data, data)
    with pytest.raises(ValueError, match=r"label sets .* cannot be kept"):
        config = TrainingConfig(steps=2)
        loss_data_curve(
            data, Linear(), [20], 1, config=config, execution=Execution(n_jobs=1), keep_probes=True
        )


def test_morphology_targets_are_the_feature_sets_of_words():
    from probemeter.datasets.conll import Treebank
    from probemeter.datasets.edge_probing import treebank_targets

    treebank = Treebank(
        sentences=(("the", "cats", "sat"),),
        upos=(("DET", "NOUN", "VERB"),),
        heads=((2, 3, 0),),
        deprels=(("det", "nsubj", "root"),),
        silver=True,
        source="hand",
        feats=(("_", "Number=Plur", "VerbForm=Fin|Tense=Past"),),
    )
    morphology = treebank_targets(treebank, "morphology")
    assert [(t.span1, t.labels) for t in morphology.targets] == [
        ((1, 2), ("Number=Plur",)),
        ((2, 3), ("Tense=Past", "VerbForm=Fin")),
    ]  # "the" has no feature: no target
    with pytest.raises(ValueError, match="no FEATS column"):
        treebank_targets(dataclasses.replace(treebank, feats=None), "morphology")
