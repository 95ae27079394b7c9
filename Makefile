# Faultline: `make run` serves the product with demo data; `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench venv system-run system-test clean help

help:
	@echo "make run    set everything up and serve Faultline with demo data on http://127.0.0.1:8000"
	@echo "make test   set everything up and run the whole test suite"
	@echo "make lint   ruff and mypy"
	@echo "make bench  benchmarks; writes bench-results/*.json"

$(STAMP): requirements/base.txt requirements/test.txt requirements/lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/test.txt -c requirements/lock.txt
	touch $(STAMP)

venv: $(STAMP)

# System packages come from Debian with apt-get, installed only when missing.
system-run:
	@command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

system-test: system-run
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

run: venv system-run
	@bash scripts/run.sh

test: venv system-test
	@bash scripts/test.sh

lint: venv
	@bash scripts/lint.sh

bench: venv system-test
	@bash scripts/bench.sh

clean:
	rm -rf var bench-results test-artifacts
