"""The Celery app. The broker is read from FAULTLINE_BROKER_URL, not CELERY_BROKER_URL,
because Celery would let the latter override a test's configuration behind our back.

Tasks go to named queues by the app that defines them, so a deployment can give each kind
of work its own workers (docs/deploy.md): `ingest` (parsing uploads), `attribution`,
`analysis` (clustering and the post-upload refresh chain, which ends in clustering) and
`export`. Anything not routed (periodic maintenance) goes to `celery`, the default queue.
A worker started without -Q consumes every queue listed in task_queues, so one worker
(`make run`, the end-to-end tests) still runs everything.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, signals
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")

DEFAULT_QUEUE = "celery"
WORK_QUEUES = ("ingest", "attribution", "analysis", "export")
# Glob patterns on task names, first match wins.
TASK_ROUTES = {
    # The sweeper must never wait behind a clustering run.
    "pipeline.tasks.jobs_sweep": {"queue": DEFAULT_QUEUE},
    "pipeline.tasks.close_quiet_traces": {"queue": DEFAULT_QUEUE},
    "pipeline.tasks.assemble_live_traces": {"queue": "ingest"},
    "pipeline.tasks.ingest_upload": {"queue": "ingest"},
    "pipeline.tasks.refresh_*": {"queue": "analysis"},
    "ingest.*": {"queue": "ingest"},
    "attribution.*": {"queue": "attribution"},
    "analysis.*": {"queue": "analysis"},
    "exports.*": {"queue": "export"},
}

app = Celery("faultline")
app.config_from_object("django.conf:settings", namespace="FAULTLINE_CELERY")
app.conf.task_default_queue = DEFAULT_QUEUE
app.conf.task_queues = [Queue(name) for name in (*WORK_QUEUES, DEFAULT_QUEUE)]
app.conf.task_routes = TASK_ROUTES
app.autodiscover_tasks()

# Celery's Django fixup closes every database connection before and after each task unless
# this bound is set (celery#4116; its use of CONN_MAX_AGE was reverted in celery#9824), so
# every task paid a new PostgreSQL backend: a fork and cold catalog caches, more
# PostgreSQL CPU than the OTLP assembly's own queries (bench/otlp.py). With a bound that
# never trips, a task's connections live as Django keeps a request's: closed around each
# task when obsolete (CONN_MAX_AGE) or broken, and checked on reuse (CONN_HEALTH_CHECKS).
app.conf.CELERY_DB_REUSE_MAX = 10**12


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_connections(sender: Any = None, **_: Any) -> None:
    """Django's request-cycle rule around each task (not an eager one, which runs inside
    its caller's transaction)."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
