#!/usr/bin/env bash
# The whole test suite: first on SQLite (the embedded default), then every database test
# again on a throwaway PostgreSQL cluster started here (--database-tests-only, in
# tests/conftest.py: a test that never reaches a database passes or fails the same on
# both, and running it twice cost minutes). Redis and Celery workers are started by the
# tests that need them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pg.sh
PY=.venv/bin/python
ART=${FAULTLINE_TEST_ARTIFACTS:-$PWD/test-artifacts}
mkdir -p "$ART"
export FAULTLINE_TEST_ARTIFACTS="$ART"
export DJANGO_ALLOW_ASYNC_UNSAFE=true
export FAULTLINE_CACHE_URL=""
export FAULTLINE_VAR_DIR=$(mktemp -d /tmp/faultline-test.XXXXXX)
unset DATABASE_URL

trap 'pg_stop; rm -rf "$FAULTLINE_VAR_DIR"' EXIT
pg_start

echo "== lint: ruff and mypy =="
bash scripts/lint.sh

# Two processes for the tests that run in-process; the tests that start real servers,
# workers and kill them run one at a time, so their timing does not compete with them.
echo "== pytest on SQLite =="
$PY -m pytest tests -p no:cacheprovider -n 2 -m "not services" "$@"
echo "== pytest on SQLite: real services (redis-server, Celery workers, gunicorn) =="
$PY -m pytest tests -p no:cacheprovider -m "services" "$@"
echo "== pytest on PostgreSQL ($PG_URL_BASE) =="
DATABASE_URL="$PG_URL_BASE/faultline" $PY -m pytest tests -p no:cacheprovider -n 2 \
  --database-tests-only -m "not browser and not slow and not services" "$@"
echo "== pytest on PostgreSQL: real services =="
DATABASE_URL="$PG_URL_BASE/faultline" $PY -m pytest tests -p no:cacheprovider \
  -m "services and not browser and not slow" "$@"
