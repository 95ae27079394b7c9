#!/usr/bin/env bash
# The whole test suite: first on SQLite (the embedded default), then every database test
# again on a throwaway PostgreSQL cluster started here. Redis and Celery workers are
# started by the tests that need them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
ART=${FAULTLINE_TEST_ARTIFACTS:-$PWD/test-artifacts}
mkdir -p "$ART"
export FAULTLINE_TEST_ARTIFACTS="$ART"
export DJANGO_ALLOW_ASYNC_UNSAFE=true
export FAULTLINE_CACHE_URL=""
unset DATABASE_URL

PG_DIR=$(mktemp -d /tmp/faultline-pg.XXXXXX)
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PG_PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
stop_pg() {
  su postgres -s /bin/sh -c "$PG_BIN/pg_ctl -D $PG_DIR/data -m fast -w stop" >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
trap stop_pg EXIT
chown postgres:postgres "$PG_DIR"
su postgres -s /bin/sh -c "$PG_BIN/initdb -D $PG_DIR/data -U postgres -A trust -E UTF8 --no-sync" >/dev/null
su postgres -s /bin/sh -c "$PG_BIN/pg_ctl -D $PG_DIR/data -l $PG_DIR/log -w -o \"-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off\" start" >/dev/null
export FAULTLINE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/faultline"

echo "== pytest on SQLite =="
$PY -m pytest tests -p no:cacheprovider "$@"
echo "== pytest on PostgreSQL ($FAULTLINE_TEST_POSTGRES_URL) =="
DATABASE_URL="$FAULTLINE_TEST_POSTGRES_URL" $PY -m pytest tests -p no:cacheprovider \
  -m "not browser and not slow" -k "not core" "$@"
