# Throwaway PostgreSQL cluster helpers, sourced by scripts/test.sh and scripts/bench.sh.
# pg_start sets PG_URL_BASE (postgres://postgres@127.0.0.1:PORT); pg_stop removes it all.
pg_start() {
  PG_DIR=$(mktemp -d /tmp/faultline-pg.XXXXXX)
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PG_PORT=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  chown postgres:postgres "$PG_DIR"
  su postgres -s /bin/sh -c "$PG_BIN/initdb -D $PG_DIR/data -U postgres -A trust -E UTF8 --no-sync" >/dev/null
  su postgres -s /bin/sh -c "$PG_BIN/pg_ctl -D $PG_DIR/data -l $PG_DIR/log -w -o \"-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off\" start" >/dev/null
  PG_URL_BASE="postgres://postgres@127.0.0.1:$PG_PORT"
}

pg_stop() {
  if [ -n "${PG_DIR:-}" ]; then
    su postgres -s /bin/sh -c "$PG_BIN/pg_ctl -D $PG_DIR/data -m fast -w stop" >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}
