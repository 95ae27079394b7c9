#!/usr/bin/env bash
# Serve Faultline on the embedded defaults: SQLite, a local redis-server, one Celery
# worker and the web server. Demo data from ../shared/data is ingested on first run
# through the real pipeline. Ctrl-C stops all three processes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
VAR=${FAULTLINE_VAR_DIR:-$PWD/var}
PORT=${FAULTLINE_PORT:-8000}
REDIS_PORT=${FAULTLINE_REDIS_PORT:-6379}
export FAULTLINE_VAR_DIR="$VAR"
export FAULTLINE_BROKER_URL=${FAULTLINE_BROKER_URL:-redis://127.0.0.1:$REDIS_PORT/0}
export FAULTLINE_RESULT_BACKEND=${FAULTLINE_RESULT_BACKEND:-redis://127.0.0.1:$REDIS_PORT/1}
export FAULTLINE_CACHE_URL=${FAULTLINE_CACHE_URL-redis://127.0.0.1:$REDIS_PORT/2}
mkdir -p "$VAR/redis" "$VAR/log"

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "Stopping Faultline..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  if [ -f "$VAR/redis/redis.pid" ]; then kill -TERM "$(cat "$VAR/redis/redis.pid")" 2>/dev/null || true; fi
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

if redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  echo "Using the redis-server already listening on port $REDIS_PORT."
else
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes --save "" --appendonly no \
    --pidfile "$VAR/redis/redis.pid" --logfile "$VAR/log/redis.log" --dir "$VAR/redis"
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

$PY manage.py migrate --no-input -v0
$PY -m celery -A faultline worker --loglevel=INFO --concurrency=1 --without-gossip --without-mingle \
  >"$VAR/log/worker.log" 2>&1 &
pids+=($!)
$PY manage.py demo_setup --data "${FAULTLINE_DEMO_DATA:-../shared/data}" --url "http://127.0.0.1:$PORT/"
echo "Worker log: $VAR/log/worker.log. Press Ctrl-C to stop."
$PY manage.py runserver "127.0.0.1:$PORT" --noreload --skip-checks &
pids+=($!)
wait -n "${pids[@]}"
