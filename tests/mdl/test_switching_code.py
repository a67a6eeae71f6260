"""The switching code over probe families' online codes (probemeter.mdl.switching_code)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd
import pytest
from stand_in_engine import stand_in_evaluation

from probemeter import Execution
from probemeter.data import ProbeData, subset_permutation
from probemeter.mdl.online import OnlineCode, online_codelength
from probemeter.mdl.switching import overhead_bound, switch_forward
from probemeter.mdl.switching_code import SwitchingCode, switching_code, switching_codelength
from probemeter.probes import MLP, Linear
from probemeter.training.engine import TrainingConfig

TIMESTEPS = (0.1, 0.2, 0.4, 0.7, 1.0)


def _data(n=250, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x @ rng.normal(size=(d, k)) + rng.normal(size=(n, k))).argmax(axis=1)
    return ProbeData.from_arrays(x, y, test_size=0.2, random_state=seed, n_classes=k)


def _fake_engine(monkeypatch):
    """Probe p of a seed (trained on the p-th prefix) gives example j the cross-entropy
    ``base + j / 10 000`` nats, with base 0.1 for the linear probe's first two block probes and
    2.0 after, and the other way round for the MLP: the linear family is best early, the MLP
    late. The online code passes one architecture per probe (all families in one call)."""

    def fake(X_train, y_train, X_eval, y_eval, n_classes, subsets, keys, probe, *a, **kw):
        per_seed = len(subsets) // len({key[1] for key in keys}) // len(set(probe))
        early = np.array([i % per_seed < 2 for i in range(len(subsets))])
        linear = np.array([p == Linear() for p in probe])
        base = np.where(early == linear, 0.1, 2.0)
        return stand_in_evaluation(
            y_train, y_eval, len(subsets), kw["pool_rows"], lambda i, rows: base[i] + rows / 10_000
        )

    monkeypatch.setattr(importlib.import_module("probemeter.mdl.online"), "fit_evaluate", fake)


def test_switching_follows_the_family_that_is_best_now(monkeypatch):
    _fake_engine(monkeypatch)
    data = _data(n=500)  # pool of 400
    code = switching_codelength(
        data, [Linear(), MLP((8,))], TIMESTEPS, seeds=2, stopping_set="prefix", random_state=4
    )
    assert code.families == ("linear", "mlp-8") and code.ends == (40, 80, 160, 280, 400)
    # example bits: example j of seed s's order costs (base + j/10 000) / ln 2 bits
    online = online_codelength(
        data, Linear(), TIMESTEPS, seeds=2, stopping_set="prefix", random_state=4,
        keep_example_bits=True,
    )  # fmt: skip
    for row, seed in enumerate(online.seeds["seed"]):
        order = subset_permutation(400, 4, seed)
        np.testing.assert_allclose(online.example_bits[row, :40], math.log2(3))
        base = np.repeat([0.1, 0.1, 2.0, 2.0], [40, 80, 120, 120])
        expected = (base + order[40:] / 10_000).astype(np.float32) / math.log(2)
        np.testing.assert_allclose(online.example_bits[row, 40:], expected, rtol=1e-6)
    np.testing.assert_allclose(
        online.example_bits.sum(axis=1), online.seeds["online_bits"], rtol=1e-12
    )
    # each family alone pays 2 bits-ish per label on half the data; switching pays ~0.15
    families = code.family_bits()
    assert code.codelength_bits < 0.35 * families.min()
    for _, seed in code.seeds.iterrows():
        assert seed["switching_bits"] < seed["mixture_bits"] - 100
        assert seed["overhead_bits"] <= seed["bound_bits"]
    assert (code.hindsight["slack_bits"] >= 0).all()
    one_switch = code.hindsight[code.hindsight["switches"] == 1]
    np.testing.assert_array_less(
        one_switch["switching_bits"] - one_switch["best_bits"], overhead_bound(400, 2, 1)
    )
    # posterior: linear after the first coded blocks, the MLP at the end; sums to one
    weights = code.posterior.pivot_table("posterior", "block", "family")
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    assert weights.loc[0, "linear"] == pytest.approx(0.5)
    assert weights.loc[2, "linear"] > 0.99 and weights.loc[4, "mlp-8"] > 0.99
    # the block table: each family's cumulative bits end at its online code
    last = code.blocks[code.blocks["block"] == 4].set_index(["code", "seed"])["cumulative_bits"]
    for family, online_code in zip(code.families, code.codes, strict=True):
        np.testing.assert_allclose(
            last[family].to_numpy(), online_code.seeds["online_bits"], rtol=1e-12
        )
    np.testing.assert_allclose(last["switching"].to_numpy(), code.seeds["switching_bits"])


def test_block_granularity_and_the_mixture(monkeypatch):
    _fake_engine(monkeypatch)
    data = _data(n=500)
    kwargs = dict(timesteps=TIMESTEPS, seeds=1, stopping_set="prefix")
    families = [Linear(), MLP((8,))]
    by_block = switching_codelength(data, families, granularity="block", **kwargs)
    codes = [code.blocks["codelength_bits"].to_numpy() for code in by_block.codes]
    expected = switch_forward(np.column_stack(codes)).total_bits
    assert by_block.codelength_bits == pytest.approx(expected, rel=1e-12)
    assert by_block.seeds["bound_bits"].iloc[0] == pytest.approx(1 + math.log2(5))
    # rate 0: the Bayesian mixture at either granularity, the closed form mixture_bits
    for granularity in ("example", "block"):
        mixture = switching_codelength(
            data, families, rate=0, granularity=granularity, **kwargs
        )  # fmt: skip
        assert mixture.codelength_bits == pytest.approx(mixture.mean("mixture_bits"), rel=1e-9)
        assert mixture.hindsight["switches"].tolist() == [0]


@pytest.mark.numerics
def test_real_probes_match_their_online_codes_and_round_trip(tmp_path):
    data = _data(n=300)
    config = TrainingConfig(steps=40, batch_size=32, lr=1e-2)
    kwargs = dict(seeds=2, config=config, execution=Execution(device="cpu", n_jobs=1))
    code = switching_codelength(data, [Linear(), MLP((16,))], TIMESTEPS, **kwargs)
    alone = online_codelength(data, MLP((16,)), TIMESTEPS, **kwargs)
    assert code.family_bits()["mlp-16"] == pytest.approx(alone.codelength_bits, rel=1e-6)
    assert (code.hindsight["slack_bits"] >= 0).all()
    path = tmp_path / "switching.json"
    code.save(path)
    loaded = SwitchingCode.load(path)
    assert loaded.to_dict() == code.to_dict()
    assert "switching code of" in str(code) and "mixture (no switching)" in str(code)
    assert set(code.to_frame()["representation"]) == {data.name}
    import matplotlib

    matplotlib.use("Agg")
    excess_ax, posterior_ax = code.plot()
    assert len(excess_ax.lines) == 4 and posterior_ax.get_ylim() == (0, 1)


def test_bad_inputs_are_refused():
    data = _data(n=200)
    kwargs = dict(
        timesteps=(0.2, 1.0), seeds=1, config=TrainingConfig(steps=2), execution=Execution(n_jobs=1)
    )
    with pytest.raises(ValueError, match="two or more distinct"):
        switching_codelength(data, [Linear()], **kwargs)
    with pytest.raises(ValueError, match="two or more distinct"):
        switching_codelength(data, [Linear(), MLP(())], **kwargs)
    with pytest.raises(ValueError, match="granularity"):
        switching_codelength(data, [Linear(), MLP((4,))], granularity="word", **kwargs)
    a = online_codelength(data, Linear(), keep_example_bits=True, **kwargs)
    b = online_codelength(data, MLP((4,)), random_state=1, keep_example_bits=True, **kwargs)
    with pytest.raises(ValueError, match="random_state"):
        switching_code({"a": a, "b": b})
    plain = online_codelength(data, MLP((4,)), **kwargs)
    with pytest.raises(ValueError, match="keep_example_bits=True"):
        switching_code({"a": a, "b": plain})
    with pytest.raises(ValueError, match="codes is empty"):
        switching_code({})


def _hand_code(example_bits, *, n_classes, ends, multilabel):
    """An online code built by hand: one seed, the given per-example bits (transmission
    order), blocks and seeds tables as ``online_codelength`` writes them."""
    bits = np.asarray(example_bits, dtype=np.float64)
    starts = (0, *ends[:-1])
    blocks = pd.DataFrame(
        {
            "seed": 0,
            "block": range(len(ends)),
            "start": starts,
            "end": ends,
            "codelength_bits": [bits[a:b].sum() for a, b in zip(starts, ends, strict=True)],
        }
    )
    seeds = pd.DataFrame({"seed": [0], "online_bits": [bits.sum()]})
    return OnlineCode(
        name="spans",
        n_classes=n_classes,
        n=int(ends[-1]),
        ends=tuple(ends),
        blocks=blocks,
        seeds=seeds,
        metadata={"random_state": 0},
        multilabel=multilabel,
        example_bits=bits[None, :],
    )


def test_label_sets_get_k_bits_per_example_as_their_uniform_code():
    """K = 20 label sets, n = 100: the uniform code sends 20 fair coins per example, 2 000 bits
    (not n·log2 K = 432.2). Both families send the first block of 10 examples at 20 bits
    each and the other 90 at 2 bits, so the switching code, a mixture of two equal codes, is
    200 + 180 = 380 bits and compresses 2 000 / 380 = 5.263 times (it said 1.137)."""
    bits = [20.0] * 10 + [2.0] * 90
    codes = {
        family: _hand_code(bits, n_classes=20, ends=(10, 100), multilabel=True)
        for family in ("linear", "mlp-8")
    }
    code = switching_code(codes)
    seed = code.seeds.iloc[0]
    assert seed["switching_bits"] == pytest.approx(380.0, rel=1e-12)
    assert seed["uniform_bits"] == 2000.0
    assert seed["compression"] == pytest.approx(2000 / 380, rel=1e-12)
    assert codes["linear"].uniform_bits == 2000.0  # the online code's own uniform code agrees
    # one label out of K = 20: n·log2 K
    single = {
        family: _hand_code(bits, n_classes=20, ends=(10, 100), multilabel=False)
        for family in ("linear", "mlp-8")
    }
    assert switching_code(single).seeds["uniform_bits"].iloc[0] == pytest.approx(
        100 * math.log2(20), rel=1e-12
    )
    with pytest.raises(ValueError, match="multilabel"):
        switching_code({"sets": codes["linear"], "classes": single["mlp-8"]})
