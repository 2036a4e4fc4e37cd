# The two commands of the README: `make demo` and `make test`. Everything else is their plumbing.
SHELL := /bin/bash
# a step piped into a progress filter fails when the step fails, not only when the filter does
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-complete
# pip installs uv, pinned where the bicleaner environment pins it, and uv installs the rest: from empty caches on a
# 2-core Intel Xeon, 17 s for the locked set where pip took 330 s, 7 s for torch's wheel where pip took 50 s
# (docs/operations.md). uv reads no pip.conf, so it is given the wheel folder pip would look in: PIP_FIND_LINKS, else
# pip's configured find-links (UV_FIND_LINKS and UV_INDEX are uv's own settings).
UV := $(shell grep '^uv==' requirements-bicleaner.lock)
FIND_LINKS := $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV_PIP := $(BIN)/uv pip install --python $(BIN)/python $(if $(FIND_LINKS),--find-links "$(FIND_LINKS)")
# An unpinned torch pulls several GB of CUDA packages: install the pinned CPU wheel first, alone.
TORCH := torch==2.13.0
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PIP := $(BIN)/pip install --disable-pip-version-check
# bifixer, bicleaner-hardrules and bicleaner-ai need numpy<2 and tensorflow 2.20: an environment of their own,
# built by `bitextflow-local prepare` when a pair config scores with bicleaner (and by `make models`).
BICLEANER_VENV := .venv-bicleaner
# The pair config `make demo` runs: it builds what this config uses (bitextflow-local prepare) and leaves the rest
# to first use or `make models`.
DEMO_PAIR := include/pairs/en-es.yaml
# when make started, read once: `make demo` ends with its total time
STARTED := $(shell date +%s)

# $(call step,what it does,command): say what the step does, run it, say how long it took. Make splits the
# arguments of a call at commas: neither may contain one.
step = @printf '==> %s\n' '$(1)'; SECONDS=0; $(2) && printf '    %s: %d s\n' '$(1)' $$SECONDS
# $(call debian,check,packages): install Debian packages when the check (a shell command) fails.
debian = $(call step,Debian packages $(2),$(1) >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends $(2); })

.PHONY: setup venv debian-extras models demo test test-quick fuzz stop lock clean

# Everything the tests use: the environment, the Debian packages the demo does without, every model.
setup: venv debian-extras models

# The Python environment and the Debian package its dictionaries need: all `make demo` builds before the steps
# of its pair config.
venv: $(STAMP)

$(STAMP): requirements.lock pyproject.toml tools/pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11"; exit 1; }
	@# the locked set needs 3.11.5 or newer (soupsieve 4.1); Debian 12's own python3.11 is 3.11.2
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11, 5))' || { echo "make: $$(command -v $(PYTHON)) is Python $$($(PYTHON) -c 'import platform; print(platform.python_version())'); the locked packages need 3.11.5 or newer: install one (pyenv install 3.11) and run make PYTHON=/path/to/python3.11"; exit 1; }
	@# lt-print dumps Apertium's bilingual transducers into the sentence aligner's dictionaries
	$(call debian,command -v lt-print,lttoolbox-dev)
	$(call step,Python environment $(VENV),test -x $(BIN)/python || $(PYTHON) -m venv $(VENV))
	$(call step,$(UV),$(PIP) --quiet $(UV))
	$(call step,$(TORCH) (the CPU wheel),$(UV_PIP) $(TORCH))
	$(call step,the locked set (requirements.lock),$(UV_PIP) -r requirements.lock)
	@# the library and, beside it, the local services, site and demo (tools/): a second package
	$(call step,bitextflow and bitextflow-local (editable),$(UV_PIP) --no-deps --no-build-isolation -e . -e tools)
	$(call step,uv pip check,$(BIN)/uv pip check --python $(BIN)/python)
	@touch $(STAMP)

# Debian packages of what the demo does not run: groff (the crawl benchmark's full local site), Redis and
# PostgreSQL (the distributed profile, `services up --executor celery`; Debian keeps initdb off PATH), Chromium
# and its driver (tests/stack/test_browser.py), Noto fonts (reports of pairs outside Latin, Cyrillic and Greek).
debian-extras:
	$(call debian,command -v groff,groff-base)
	$(call debian,command -v redis-server,redis-server)
	$(call debian,command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb',postgresql)
	$(call debian,command -v chromedriver,chromium chromium-driver)
	@# the release report's plots draw Chinese, Japanese, Korean, Arabic, Devanagari and Thai text with these
	@# (bitextflow.release.report.PLOT_FONTS); matplotlib lists fonts once, so its list is made again after
	$(call debian,fc-list -q 'Noto Sans CJK JP' && fc-list -q 'Noto Sans Arabic',fonts-noto-cjk fonts-noto-core) && rm -f $${XDG_CACHE_HOME:-$$HOME/.cache}/matplotlib/fontlist-*.json

# Every dictionary, model, data set and environment a pair config or a test uses (`bitextflow-local prepare --list`).
models: venv
	$(BIN)/bitextflow-local prepare --all

# The services start while the models build: a cold start spends most of its 85 s in Airflow's database migration
# and components starting up, time the model steps fill on the other core.
demo: venv
	$(call step,the models of $(DEMO_PAIR) and the local services (S3 and site and Airflow) alongside,\
		$(BIN)/bitextflow-local services up & services=$$!; $(BIN)/bitextflow-local prepare $(DEMO_PAIR); \
		prepared=$$?; wait $$services && test $$prepared = 0)
	$(BIN)/bitextflow-local demo $(DEMO_PAIR)
	@echo "make demo: done in $$(( $$(date +%s) - $(STARTED) )) s"

# The whole suite (docs/testing.md): setup (a no-op once done), then every tier on both cores. pytest-xdist hands tests
# out a module at a time as workers free up, the stack tier (one stack for its modules) to one worker (tests/conftest.py).
PYTEST_WORKERS ?= 2
test:
	@SECONDS=0; $(MAKE) --no-print-directory setup && printf 'make test: setup took %d s\n' $$SECONDS
	@SECONDS=0; BITEXTFLOW_REQUIRE_BICLEANER=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS); \
		status=$$?; printf 'make test: pytest took %d s\n' $$SECONDS; exit $$status

# The edit-test loop: the unit tier, no service started, in a few minutes (the demo's models and heliport's
# environment first: a no-op once built).
test-quick: venv
	$(BIN)/bitextflow-local prepare $(DEMO_PAIR)
	$(BIN)/python -m pytest tests/unit -n $(PYTEST_WORKERS)

# The 10,000 hostile inputs of tests/unit/test_fuzz.py (make test runs 2,500 of them).
fuzz: venv
	$(BIN)/python -m pytest tests/unit/test_fuzz.py --hypothesis-profile=fuzz

stop:
	test ! -x $(BIN)/bitextflow-local || $(BIN)/bitextflow-local services down

# Re-resolve the locked set from requirements.txt (needs the package registries).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet $(TORCH) && .lock-venv/bin/pip install --quiet -r requirements.txt
	.lock-venv/bin/pip freeze --exclude-editable > requirements.lock && rm -rf .lock-venv

clean: stop
	rm -rf $(VENV) $(BICLEANER_VENV) .local
