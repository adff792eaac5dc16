# The whole set-up on a fresh machine is `make run` or `make test`: each creates
# .venv if it is missing and installs the package into it.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,cluster]'
	touch $(STAMP) $@

run: $(STAMP)
	$(BIN)/tmhw scenario paper_headline --quick --out out

# Two workers: the suite is CPU-bound and the machine has two cores.
test: $(DEVSTAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal

lint: $(DEVSTAMP)
	$(BIN)/ruff check tmhw npu dram flash tests scenarios
	$(BIN)/mypy --strict tmhw npu dram flash

bench: $(STAMP)
	$(BIN)/tmhw bench

clean:
	rm -rf $(VENV) out build *.egg-info
