# Set-up and checks. Each target makes its own virtual environment (.venv) when missing.
# torch is pinned to the CPU build found on local disk; a bare `torch` would pull a CUDA build.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e '.[runner,dashboard,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/traceviz demo

lint: $(STAMP)
	$(BIN)/ruff check traceviz tests benchmarks
	$(BIN)/ruff format --check traceviz tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python benchmarks/parse.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
