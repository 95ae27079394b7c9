"""A worker keeps its database connection from task to task, as Django keeps a request's:
Celery's Django fixup would close it around every task (faultline.celery)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection

from faultline.celery import _close_old_connections, app

pytestmark = [
    pytest.mark.django_db(transaction=True),  # no test transaction around the tasks
    # The test database of SQLite lives in memory, where Django never closes a connection.
    pytest.mark.skipif(connection.vendor == "sqlite", reason="runs in the PostgreSQL suite"),
]
QUEUED = SimpleNamespace(request=SimpleNamespace(is_eager=False))


def _run_task_hooks() -> None:
    """What a worker runs around one task: the fixup's hooks, then ours."""
    fixup = DjangoWorkerFixup(app)
    fixup.on_task_prerun(sender=QUEUED)
    _close_old_connections(sender=QUEUED)
    fixup.on_task_postrun(sender=QUEUED)
    _close_old_connections(sender=QUEUED)


@pytest.fixture
def kept_connection(monkeypatch):
    connection.ensure_connection()
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    connection.close_at = time.monotonic() + 60
    yield connection.connection
    connection.close()


def test_it_keeps_a_connection_across_tasks(kept_connection):
    for _ in range(3):
        _run_task_hooks()
    assert connection.connection is kept_connection


def test_it_closes_a_connection_past_its_age(kept_connection):
    connection.close_at = time.monotonic() - 1
    _run_task_hooks()
    assert connection.connection is None


def test_it_closes_a_connection_that_broke(kept_connection):
    kept_connection.close()  # the server went away under it
    connection.errors_occurred = True
    _run_task_hooks()
    assert connection.connection is None


def test_an_eager_task_leaves_its_callers_connection_alone(kept_connection):
    connection.close_at = time.monotonic() - 1
    _close_old_connections(sender=SimpleNamespace(request=SimpleNamespace(is_eager=True)))
    assert connection.connection is kept_connection
