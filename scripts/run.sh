#!/usr/bin/env bash
# Serve Faultline on the embedded defaults: SQLite, a local redis-server that keeps its data
# on disk, two Celery workers (one for the heavy work, one for intake: uploads, live traces
# and the sweeper), Celery beat, and gunicorn serving the app (static
# files included, through WhiteNoise). Demo data from ../shared/data is ingested on first run
# through the real pipeline. Ctrl-C, or TERM to the script or its process group (kill,
# systemd, docker stop, a CI timeout), stops every process this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
VAR=${FAULTLINE_VAR_DIR:-$PWD/var}
PORT=${FAULTLINE_PORT:-8000}
REDIS_PORT=${FAULTLINE_REDIS_PORT:-6379}
# 2 cores: two web processes with a few threads each (requests mostly wait on the database),
# one process for the heavy work (the clustering and attribution use numpy on every core
# themselves) and one for intake, so that an upload, a live trace's spans and the sweeper
# never wait behind a refresh that takes minutes (a trial sent spans live during one).
WEB_WORKERS=${FAULTLINE_WEB_WORKERS:-2}
WEB_THREADS=${FAULTLINE_WEB_THREADS:-4}
WORKER_CONCURRENCY=${FAULTLINE_WORKER_CONCURRENCY:-1}
WORKER_QUEUES=${FAULTLINE_WORKER_QUEUES:-attribution,analysis,export}
INTAKE_QUEUES=${FAULTLINE_INTAKE_QUEUES:-ingest,celery}
STOP_TIMEOUT=${FAULTLINE_STOP_TIMEOUT:-20}
export FAULTLINE_VAR_DIR="$VAR"
export FAULTLINE_BROKER_URL=${FAULTLINE_BROKER_URL:-redis://127.0.0.1:$REDIS_PORT/0}
export FAULTLINE_RESULT_BACKEND=${FAULTLINE_RESULT_BACKEND:-redis://127.0.0.1:$REDIS_PORT/1}
export FAULTLINE_CACHE_URL=${FAULTLINE_CACHE_URL-redis://127.0.0.1:$REDIS_PORT/2}
mkdir -p "$VAR/redis" "$VAR/log" "$VAR/run"
# The URLs this instance uses, for a command run with only FAULTLINE_VAR_DIR set (the CLI
# beside this run): faultline.env.instance_env reads them; the environment still wins.
(umask 077 && printf 'FAULTLINE_BROKER_URL=%s\nFAULTLINE_RESULT_BACKEND=%s\nFAULTLINE_CACHE_URL=%s\n' \
  "$FAULTLINE_BROKER_URL" "$FAULTLINE_RESULT_BACKEND" "$FAULTLINE_CACHE_URL" >"$VAR/run/instance.env")

# The secret key: FAULTLINE_SECRET_KEY if set, else a random one kept in var/ (git-ignored,
# readable by this user only) so sessions survive a restart.
if [ -z "${FAULTLINE_SECRET_KEY:-}" ] && [ ! -s "$VAR/secret_key" ]; then
  (umask 077 && $PY -c 'import secrets; print(secrets.token_urlsafe(64))' >"$VAR/secret_key")
  echo "Generated a secret key in $VAR/secret_key."
fi

# One run per var dir: a second `make run` on the same data would migrate under the live
# one, clear its static files, start rival workers, and stop its redis-server on the way out.
# Only this shell holds the lock: every command it starts gets `9>&-`, so that a service
# left running by a run that was killed (SIGKILL, a crash) cannot make the next run say
# "already running" with nothing to stop; that run stops it instead (below).
exec 9>"$VAR/run/run.lock"
if ! flock -n 9; then
  echo "Faultline is already running on $VAR (another 'make run'); stop it first, or give this" >&2
  echo "one its own FAULTLINE_VAR_DIR, FAULTLINE_PORT and FAULTLINE_REDIS_PORT." >&2
  exit 1
fi

# Every service started is listed in run/services ("pid start-time name", its process
# group leader), and the list is emptied once the run has stopped them. A list left
# non-empty is what a killed run left running: stopped here, before anything else. The
# start time (from /proc) tells the service from a later process given the same number.
SERVICES="$VAR/run/services"
started_at() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
remember() { echo "$1 $(started_at "$1") $2" >>"$SERVICES"; }
if [ -s "$SERVICES" ]; then
  left=()
  names=""
  while read -r pid since name; do
    if [ -n "$since" ] && [ "$(started_at "$pid")" = "$since" ]; then
      left+=("$pid")
      names+="${names:+, }$name (pid $pid)"
    fi
  done <"$SERVICES"
  if [ "${#left[@]}" -gt 0 ]; then
    echo "Stopping what an earlier run on $VAR left running when it was killed: $names."
    for pid in "${left[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for _ in $(seq $((STOP_TIMEOUT * 10))); do
      still=""
      for pid in "${left[@]}"; do kill -0 "$pid" 2>/dev/null && still=yes; done
      [ -n "$still" ] || break
      sleep 0.1
    done
    for pid in "${left[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  fi
fi
: >"$SERVICES"

# What a process killed mid-upload left: request bodies spooled by Django and files being
# stored (ingest.services._spool). No process of this var dir is running now (the lock).
mkdir -p "$VAR/tmp/uploads"
find "$VAR/tmp/uploads" -type f -delete
[ -d "$VAR/media" ] && find "$VAR/media" -maxdepth 1 -type f -name 'upload-*' -delete

pids=()
redis_pid="" # the redis-server this script started and watches (none if it found one)
declare -A service_of=()
# Each service runs in its own process group (setsid), so stopping it at once reaches its
# children too (gunicorn's and Celery's worker processes).
start() {
  local name=$1 log=$2
  shift 2
  setsid "$@" >>"$log" 2>&1 9>&- &
  pids+=($!)
  service_of[$!]=$name
  remember $! "$name"
}
start_worker() {
  start worker "$VAR/log/worker.log" $PY -m celery -A faultline worker --loglevel=INFO \
    --hostname="worker@%h" --queues="$WORKER_QUEUES" --concurrency="$WORKER_CONCURRENCY" \
    --without-gossip --without-mingle
}
start_intake() {
  start intake "$VAR/log/intake.log" $PY -m celery -A faultline worker --loglevel=INFO \
    --hostname="intake@%h" --queues="$INTAKE_QUEUES" --concurrency=1 \
    --without-gossip --without-mingle
}
start_beat() {
  start beat "$VAR/log/beat.log" $PY -m celery -A faultline beat --loglevel=INFO \
    --schedule="$VAR/run/celerybeat-schedule" --pidfile=
}
# redis-server in the foreground of its own process group, like the other services, so the
# loop below sees it end and starts it again: same port, same data dir (its append-only
# file under var/redis keeps queued tasks across the restart). It is not in pids: it must
# outlive the worker and gunicorn when the run stops, for them to finish their work.
start_redis() {
  setsid redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
    --appendonly yes --appendfsync everysec --save "" --dir "$VAR/redis" \
    >>"$VAR/log/redis.log" 2>&1 9>&- &
  redis_pid=$!
  service_of[$!]=redis
  remember $! redis-server
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
describe() {
  case $1 in
    redis) echo "redis-server (port $REDIS_PORT, data in $VAR/redis)" ;;
    intake) echo "intake worker (uploads, live traces, the sweeper)" ;;
    *) echo "$1" ;;
  esac
}
start_web() {
  start web "$VAR/log/gunicorn.log" $PY -m gunicorn faultline.wsgi:application \
    --bind "127.0.0.1:$PORT" --workers "$WEB_WORKERS" --threads "$WEB_THREADS" \
    --worker-class gthread --timeout 120 --graceful-timeout 10 \
    --control-socket "$VAR/run/gunicorn.ctl" \
    --access-logfile "$VAR/log/access.log" --error-logfile "$VAR/log/gunicorn.log"
}
alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
stop_at_once() {
  echo "Stopping at once."
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}
cleanup() {
  # Best effort to the end: the commands below get the group's signals too (a terminal's
  # Ctrl-C reaches the `sleep` of a loop), and one failing must not end the cleanup early.
  set +e
  trap - EXIT
  # The same TERM comes again while this runs (make forwards to the script the TERM the
  # group got; systemd and docker stop may repeat theirs): ignored, or the stop would end
  # here with redis-server still running. A second Ctrl-C stops at once, and redis-server
  # is still shut down after it.
  trap '' TERM HUP
  trap stop_at_once INT
  echo
  echo "Stopping Faultline (Ctrl-C again to stop at once)..."
  local pid waited=0
  # TERM to each service's main process only: gunicorn finishes its requests, the worker
  # its current task (warm shutdown; TERM to the whole group killed the task midway).
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  while alive && [ "$waited" -lt $((STOP_TIMEOUT * 10)) ]; do sleep 0.1; waited=$((waited + 1)); done
  if alive; then
    # A task still running is not acknowledged (acks_late) and will be delivered again.
    echo "Still running after ${STOP_TIMEOUT}s: killing what is left."
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null; done
  fi
  [ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}" 2>/dev/null
  if [ -n "$redis_pid" ]; then
    # Last, once nothing uses it; SHUTDOWN flushes the append-only file.
    redis-cli -p "$REDIS_PORT" shutdown >/dev/null 2>&1 || kill -TERM "$redis_pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$redis_pid" 2>/dev/null
    wait "$redis_pid" 2>/dev/null
  fi
  # Children the services' own groups held (gunicorn's and Celery's worker processes).
  for pid in "${pids[@]}" $redis_pid; do kill -KILL -- "-$pid" 2>/dev/null; done
  : >"$SERVICES"
  echo "Stopped."
}
# A signal ends the run once everything is stopped: after the handler the script would
# otherwise go on with the line it was at (start gunicorn after a TERM during the demo
# set-up, say). Status 128 + the signal's number, as a shell killed by it.
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP # the terminal closed
trap cleanup EXIT

if redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  echo "Using the redis-server already listening on port $REDIS_PORT (not started, nor restarted, here)."
else
  start_redis
fi

$PY manage.py migrate --no-input -v0 9>&-
# Static files gzipped into var/staticfiles, served by WhiteNoise from there.
$PY manage.py collectstatic --no-input --clear -v0 9>&-
export FAULTLINE_STATIC_COLLECTED=true

start_worker
start_intake
start_beat
$PY manage.py demo_setup --data "${FAULTLINE_DEMO_DATA:-../shared/data}" --url "http://127.0.0.1:$PORT/" 9>&-
start_web
echo "Logs in $VAR/log (worker.log, intake.log, beat.log, gunicorn.log, access.log, redis.log). Press Ctrl-C to stop."
# A service that ends on its own (killed, crashed), the redis-server started above too, is
# named and started again; nothing it held is lost (tasks are acknowledged late and kept in
# Redis's append-only file, uploads and refreshes are rows the sweeper re-sends). Stops
# that keep coming (MAX_RESTARTS within RESTART_WINDOW seconds, all services together) end
# the whole run instead of looping.
MAX_RESTARTS=${FAULTLINE_MAX_RESTARTS:-5}
RESTART_WINDOW=${FAULTLINE_RESTART_WINDOW:-300}
restarts=()
while true; do
  ended=""
  code=0
  watched=("${pids[@]}")
  [ -z "$redis_pid" ] || watched+=("$redis_pid")
  wait -n -p ended "${watched[@]}" || code=$?
  # Nothing left to watch (every service gave up): the run ends, and cleanup with it.
  [ "${#pids[@]}" -gt 0 ] || break
  [ -n "$ended" ] || continue
  name=${service_of[$ended]}
  unset "service_of[$ended]"
  if [ "$ended" = "$redis_pid" ]; then
    redis_pid=""
  else
    remaining=()
    for pid in "${pids[@]}"; do [ "$pid" = "$ended" ] || remaining+=("$pid"); done
    pids=("${remaining[@]}")
  fi
  kill -KILL -- "-$ended" 2>/dev/null || true # children it left behind
  now=$(date +%s)
  recent=()
  for t in "${restarts[@]}"; do [ $((now - t)) -lt "$RESTART_WINDOW" ] && recent+=("$t"); done
  restarts=("${recent[@]}" "$now")
  if [ "${#restarts[@]}" -gt "$MAX_RESTARTS" ]; then
    echo "$(date +%T) The $(describe "$name") stopped (exit $code), the ${#restarts[@]}th stop in ${RESTART_WINDOW}s: giving up. See $VAR/log." >&2
    exit 1
  fi
  echo "$(date +%T) The $(describe "$name") stopped (exit $code); starting it again. See $VAR/log for why." >&2
  sleep 1
  "start_$name"
done
