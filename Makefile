# Set-up and checks. Each target makes its own virtual environment (.venv) when missing.
# torch is pinned to the CPU build found on local disk; a bare `torch` would pull a CUDA build.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0
STAMP := $(VENV)/.installed
# A core install (no extras: numpy, pandas, msgspec, rich; no pyarrow, torch, panel) with the
# test tools only (versions as in the dev extra): the suite runs there too, every test of an
# extra skipped (TRACEVIZ_CORE_INSTALL=1: tests/test_core_install.py checks none is installed).
CORE_VENV := .venv-core
CORE_STAMP := $(CORE_VENV)/.installed
CORE_TEST_TOOLS := 'pytest>=8' 'hypothesis>=6.100' 'pytest-xdist>=3.6'

.PHONY: demo test lint typecheck unit unit-core bench clean

# The install steps say what they do; pip shows its progress for the long downloads (torch,
# the extras) so that a first `make demo` is not minutes of silence, except under CI (CI set),
# whose logs get only the step lines. Re-runs skip it all.
PIP_QUIET := $(if $(CI),--quiet,)

$(STAMP): pyproject.toml
	@echo "==> [1/4] virtual environment $(VENV)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> [2/4] pip (upgrade)"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "==> [3/4] $(TORCH), CPU build (a large download the first time)"
	@$(BIN)/python -m pip install $(PIP_QUIET) $(TORCH)
	@echo "==> [4/4] traceviz and its extras (runner, dashboard, ranks, distributed, dev, onnx, gpt2)"
	@$(BIN)/python -m pip install $(PIP_QUIET) -e '.[runner,dashboard,ranks,distributed,dev,onnx,gpt2]'
	@touch $(STAMP)
	@echo "==> set-up done"

$(CORE_STAMP): pyproject.toml Makefile
	@echo "==> core install $(CORE_VENV): traceviz without extras, plus pytest, pytest-xdist and hypothesis"
	@test -x $(CORE_VENV)/bin/python || $(PYTHON) -m venv $(CORE_VENV)
	@$(CORE_VENV)/bin/python -m pip install --quiet --upgrade pip
	@$(CORE_VENV)/bin/python -m pip install $(PIP_QUIET) -e . $(CORE_TEST_TOOLS)
	@touch $(CORE_STAMP)

demo: $(STAMP)
	@echo "==> traceviz demo: profile a built-in model eager vs torch.compile, then compare"
	$(BIN)/traceviz demo

lint: $(STAMP)
	$(BIN)/ruff check traceviz tests benchmarks
	$(BIN)/ruff format --check traceviz tests benchmarks
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The suite on one worker per core (pytest-xdist; 2 on CI's machine): 12.6 min against 17.9
# one after the other there. --dist loadfile keeps a file's tests in one worker, so a module's
# fixtures (a parsed corpus trace, a compiled sample run) are built once.
PYTEST_WORKERS ?= auto
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile

unit: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --durations=10

# The suite on the core install: what needs an extra skips; the rest passes without it.
unit-core: $(CORE_STAMP)
	TRACEVIZ_CORE_INSTALL=1 $(CORE_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_PARALLEL) --durations=5

test: lint typecheck unit unit-core

bench: $(STAMP)
	$(BIN)/python benchmarks/parse.py
	$(BIN)/python benchmarks/cli_startup.py

clean:
	rm -rf $(VENV) $(CORE_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
