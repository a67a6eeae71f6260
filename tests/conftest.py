"""Shared test settings.

Probes in these tests are tiny, so intra-op threading only adds overhead; with a busy
neighbour on a 2-core machine torch's default two threads made small matmuls ~1000x slower
(measured on the development machine). One thread keeps the suite fast and its timings stable.

Property-based tests (hypothesis) run under a profile chosen by the environment variable
``HYPOTHESIS_PROFILE``:

* ``probemeter`` (the default): 30 examples per property, derandomised, so that CI sees the
  same examples on every run and a failure is reproducible from the printed blob; no example
  database (no ``.hypothesis/`` folder in the checkout); no per-example deadline, since a
  2-core CI machine with a busy neighbour makes wall-clock deadlines flaky. Every example is
  cheap (no probe is trained), so the count alone bounds the time: about 7 s for all property
  tests on 2 cores (the experiment-file fuzzer runs 4x the count; 50 examples would take
  about 11 s).
* ``thorough``: 2000 random (not derandomised) examples per property (about 7 minutes on 2
  cores), for a search before a release or after changing the measures or the reader:
  ``HYPOTHESIS_PROFILE=thorough .venv/bin/python -m pytest tests/curves/test_measure_properties.py
  tests/runs/test_config_properties.py``.

No health check is suppressed: the strategies generate valid inputs directly (few ``assume``
rejections) and the tests use no function-scoped fixtures.
"""

import os

import pytest
from hypothesis import settings

settings.register_profile(
    "probemeter", max_examples=30, deadline=None, derandomize=True, database=None, print_blob=True
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, database=None, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "probemeter"))


@pytest.hookimpl(trylast=True)  # after pytest-xdist has registered its controller, if any
def pytest_configure(config: pytest.Config) -> None:
    """One torch thread in every process that runs tests; the controller of ``pytest -n 2``
    runs none, and not importing torch there (about 2 s) starts its workers sooner."""
    if config.pluginmanager.hasplugin("dsession"):
        return
    import torch

    torch.set_num_threads(1)
