# The two set-up commands are `make demo` and `make test`; both start from nothing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)/dagster_home

.PHONY: install jars demo test unit lint dev clean

$(BIN)/lake: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/lake

install: $(BIN)/lake

# Check Java and fetch Delta Lake's jars (cached after the first time).
jars: install
	$(BIN)/lake setup

# The sales walkthrough through the Dagster daemon, against dagster_home/lake (`make dev` shows it).
demo: jars
	$(BIN)/python demo/walkthrough.py

# Tests run in TEST_WORKERS processes, each with its own Spark session and servers; a worker that
# runs out of tests takes half of another's (work stealing).
TEST_WORKERS ?= 3

test: jars lint
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal

# The tests that need no Spark, server or other process (marked `unit` in tests/conftest.py): the
# analyses of queries, grammars, the catalog on SQLite, sensors … in well under a minute.
unit: install
	$(BIN)/pytest -m unit -n 0 -p no:randomly -q

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Dagster UI and daemon on http://localhost:3000; runs use a warm Spark Connect server, and
# `lake code-server` serves the definitions anew when the catalog changes (scripts/dev.py starts
# all three, Ctrl-C stops them).
dev: jars
	$(BIN)/python scripts/dev.py

clean:
	rm -rf $(VENV) dagster_home/lake dagster_home/storage dagster_home/history dagster_home/logs
