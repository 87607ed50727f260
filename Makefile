# Two commands: `make run` (the example agent) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml $(VENV)/.installed-dev
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/eve compile
	$(BIN)/eve run "What does a hammer cost, and in dollars?"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check eve tests bench agent
	$(BIN)/ruff format --check eve tests bench agent
	$(BIN)/mypy

test: lint
	$(BIN)/eve compile --check
	$(BIN)/pytest -q

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
