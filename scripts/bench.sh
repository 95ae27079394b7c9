#!/usr/bin/env bash
# Benchmarks: every bench/*.py that exists, with a throwaway PostgreSQL cluster for the
# ones that compare databases. Reports go to bench-results/*.json; docs/benchmarks.md
# holds the latest figures.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pg.sh
PY=.venv/bin/python
export FAULTLINE_CACHE_URL=""
trap pg_stop EXIT
pg_start
export FAULTLINE_BENCH_POSTGRES_URL="$PG_URL_BASE"
mkdir -p bench-results
for script in bench/ingest.py bench/attribution.py bench/clustering.py bench/pages.py bench/exports.py bench/load.py bench/otlp.py bench/refresh.py bench/live_trace.py; do
  if [ -f "$script" ]; then
    echo "== $script =="
    $PY "$script" "$@"
  fi
done
