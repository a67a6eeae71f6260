# The two set-up commands of the README: `make demo` and `make test`.
# Both build the virtualenv .venv in this repository from scratch when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned for installs here: 2.13.0 is a CPU wheel on local disk; an unpinned
# torch would pull a multi-GB CUDA build. pyproject.toml declares the range users may have.
TORCH_PIN := torch==2.13.0

.PHONY: venv demo test docs lint bench clean

$(BIN)/probemeter: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH_PIN)
	$(BIN)/pip install --quiet -e '.[dev,encoders,text,ray,docs,lens,erasure]'
	# nnsight is optional: where it does not install cleanly beside the pinned torch, its
	# tests skip with the reason (tests/encoders/test_in_memory.py)
	$(BIN)/pip install --quiet -e '.[nnsight]' $(TORCH_PIN) || echo "nnsight not installed: its tests skip"
	touch $(BIN)/probemeter

venv: $(BIN)/probemeter

demo: venv
	$(BIN)/probemeter demo --out demo-results

# The tests marked `numerics` run a second time on ATen's portable kernels
# (ATEN_CPU_CAPABILITY=default), so that a tolerance at the edge of one CPU's vector kernels
# fails on every machine (about a minute on 2 cores).
test: venv
	$(BIN)/ruff check src tests benchmarks examples docs
	$(BIN)/ruff format --check src tests benchmarks examples docs
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q
	ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest -q -m numerics -n 2

# The documentation site into site/: generates the references from the code and runs every
# tutorial's small experiment for its figures (about 2 minutes on 2 cores).
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: venv
	$(BIN)/python benchmarks/curve_speed.py

clean:
	rm -rf $(VENV) demo-results .pytest_cache build site src/*.egg-info
