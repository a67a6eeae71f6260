"""The online-code options are declared once (``mdl.method.online_option``) and shared by every
method that trains online codes: same defaults, checks, help and flags in ``mdl`` and
``switching``, and the same training protocol and pool checks."""

from __future__ import annotations

import pytest

from probemeter.mdl.defaults import PAPER_TIMESTEPS
from probemeter.mdl.method import MDLMethod, OnlineCodeMethod, online_option
from probemeter.mdl.switching_method import SwitchingMethod

SHARED = ("seeds", "timesteps", "batch_size", "lr", "max_epochs", "stopping_set")


def _options(cls: type) -> dict:
    return {opt.name: opt for opt in cls.options()}


@pytest.mark.parametrize("name", SHARED)
def test_mdl_and_switching_declare_the_shared_option_alike(name):
    mdl, switching = _options(MDLMethod)[name], _options(SwitchingMethod)[name]
    assert (mdl.default, mdl.help, mdl.flag, mdl.annotation) == (
        switching.default,
        switching.help,
        switching.flag,
        switching.annotation,
    )
    assert mdl.check is switching.check


def test_shared_defaults_are_the_papers():
    method = SwitchingMethod()
    assert method.timesteps == PAPER_TIMESTEPS
    assert (method.seeds, method.batch_size, method.lr, method.max_epochs) == (2, 64, 1e-3, 100)
    assert method.stopping_set == "dev"


def test_shared_checks_refuse_bad_values_in_both_methods():
    for cls in (MDLMethod, SwitchingMethod):
        _, problems = cls.from_values({"stopping_set": "test", "timesteps": [0.5, 0.25, 1]})
        assert any(p.startswith("method.stopping_set:") for p in problems)
        assert any("strictly increasing" in p for p in problems)


def test_training_protocol_takes_the_methods_settings():
    for cls in (MDLMethod, SwitchingMethod):
        method = cls(batch_size=32, lr=5e-4, max_epochs=7)
        assert isinstance(method, OnlineCodeMethod)
        config = method.training()
        assert (config.batch_size, config.lr, config.max_epochs) == (32, 5e-4, 7)
        assert config.early_stopping and config.patience == 4  # Voita & Titov §3.1


def test_pool_check_is_shared():
    # 8 blocks from 1 %: 100 examples less the 10 % dev set leave a first block of 1 example
    timesteps = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0)
    for cls in (MDLMethod, SwitchingMethod):
        method = cls(timesteps=timesteps)
        assert method.check_pool(100, None) == []  # before the data are loaded
        problems = method.check_pool(100, 10)
        assert [location for location, _ in problems] == ["method.timesteps"]
        assert method.check_pool(10_000, 10) == []


def test_unknown_online_option_is_refused():
    with pytest.raises(ValueError, match=r"name must be an online-code option.*'probe'"):
        online_option("probe")
