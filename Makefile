# Agora: the two commands of the README are `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 8000
# numba's on-disk cache of compiled kernels, kept out of the source tree
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: install run lint test test-all reproduce bench system-deps clean clean-cache

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip >/dev/null
	$(PY) -m pip install -e ".[test]"
	$(PY) -m app.cli warmup
	touch $(STAMP)

install: $(STAMP)

## the service with its demo data
run: $(STAMP)
	$(PY) -m app.cli serve --host $(HOST) --port $(PORT) --demo

## system packages the tests need (PostgreSQL server, Chromium); installed only when missing
system-deps:
	bash scripts/system-deps.sh

# schemathesis turns each API operation into a test item with the same node id; xdist's loadfile
# scheduling then runs only one of them, so the schema-wide tests run apart with --dist load.
SCHEMA_TESTS := tests/app/test_schemathesis.py tests/app/test_competitions_schema.py

## the linter, the formatter's check and the type checker on the library packages
LIBRARY := solvers aggregators markets samplers evaluation graphical cluster
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy $(LIBRARY)

## lint, then every test except the full reproductions (marked slow); the 15 slowest are listed (the
## suite must stay under 10 minutes on CI's 2 cores)
test: $(STAMP) system-deps lint
	$(PY) -m pytest -m "not slow" -n 2 --dist loadfile --durations=15 $(foreach t,$(SCHEMA_TESTS),--ignore=$(t))
	$(PY) -m pytest -m "not slow" -n 2 --dist load $(SCHEMA_TESTS)

## the full reproductions (and the slow tests)
reproduce: $(STAMP)
	$(PY) -m pytest -m slow
	$(PY) reproductions/run_all.py

## benchmark tables (peers installed from the `bench` extra)
bench: $(STAMP)
	$(PY) -m pip install -e ".[bench]"
	$(PY) benchmarks/run_all.py

## numba's compiled kernels (stale after a change to a kernel another kernel calls)
clean-cache:
	rm -rf .numba_cache

clean:
	rm -rf $(VENV) .numba_cache .pytest_cache
