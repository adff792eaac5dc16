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

# Compiled kernels (numba) go into their on-disk cache (in the user's cache directory:
# tmhw/sim/jit.py) once, before any run needs them: a cold compile takes several
# seconds, a cached load a fraction of one.
# The package's bytecode too: an editable install leaves none, and where
# PYTHONDONTWRITEBYTECODE is set every process would compile every module it imports
# (0.1-0.2 s a command) instead of reading it.
KERNELS := $(BIN)/python -m compileall -q tmhw npu dram flash scenarios && \
	$(BIN)/python -c "import tmhw.system; tmhw.system.compile_kernels()"

run: $(STAMP)
	$(KERNELS)
	$(BIN)/tmhw scenario paper_headline --quick --out out

# Two workers: the suite is CPU-bound and the machine has two cores.
test: $(DEVSTAMP)
	$(KERNELS)
	$(BIN)/python -m pytest -n 2 --dist worksteal

lint: $(DEVSTAMP)
	$(BIN)/ruff check tmhw npu dram flash tests scenarios
	$(BIN)/mypy --strict tmhw npu dram flash

bench: $(STAMP)
	$(KERNELS)
	$(BIN)/tmhw bench

clean:
	rm -rf $(VENV) out build *.egg-info
