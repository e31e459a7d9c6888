# The quick start: `make run` serves the demo on SQLite with in-process timers; `make test` runs the suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# SLOW=1 also runs the long fault and load tests (CI does).
SLOW ?=
PYTEST_MARK := $(if $(SLOW),,-m "not slow")
# Where `make conformance-zipapp` writes the conformance runner as one file.
ZIPAPP ?= dist/agentprocess-conformance.pyz

.PHONY: run test lint migrate demo clean vendor modules conformance-zipapp

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# The dev install also holds the conformance runner (conformance/runner), whose dependencies are the server's.
$(VENV)/.installed-dev: $(VENV)/.installed conformance/runner/pyproject.toml
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q -e ./conformance/runner
	touch $@

migrate: $(VENV)/.installed
	$(BIN)/python manage.py migrate --no-input -v 0

demo: migrate
	$(BIN)/python manage.py demo_data

run: demo
	DEBUG=$${DEBUG:-1} DEMO_AGENT=$${DEMO_AGENT:-1} $(BIN)/python manage.py serve 127.0.0.1:$(PORT)

test: $(VENV)/.installed-dev
	$(BIN)/pytest $(PYTEST_MARK) $(TEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) var dist

# The conformance runner as one file that needs only Python 3.11, its pure-Python dependencies inside (docs/conformance.md).
conformance-zipapp: $(VENV)/.installed
	$(BIN)/python conformance/runner/build_zipapp.py $(ZIPAPP)

# Fetch the vendored browser scripts (static/vendor/) again and check them against their pinned integrity.
vendor:
	bin/vendor

# Every module of the apps with its line count, longest first (docs/architecture.md names each one).
modules:
	bin/modules
