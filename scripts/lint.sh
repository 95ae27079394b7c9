#!/usr/bin/env bash
# Lint and type checks, run by `make lint` and first thing by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports
.venv/bin/mypy faultline projects ingest attribution analysis exports pipeline dashboard
