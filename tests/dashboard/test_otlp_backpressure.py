"""POST /v1/traces pushes back instead of failing: 429 + Retry-After while the project's
backlog is full, 503 + Retry-After while the database is locked, never a 500 (which an
OpenTelemetry exporter drops without retrying)."""

from __future__ import annotations

import pytest
from django.db import connection, connections

from dashboard.otlp import MSG_BACKLOG_FULL, MSG_STORE_UNAVAILABLE
from ingest.models import LiveTrace, ReceivedSpan
from ingest.otlp.config import RETRY_AFTER_ENV
from ingest.otlp.services import live_traces_assemble
from projects.tokens import project_token_issue
from tests.ingest.core.otlp_builders import TRACE, json_span, protobuf_body

PROTOBUF = "application/x-protobuf"
OTHER_TRACE = "1bf7651916cd43dd8448eb211c80319d"
SPANS = [json_span(1, name="root", end=9), json_span(2, parent=1, name="chat", start=1, end=2)]
LATER = [json_span(3, name="root", end=9, trace=OTHER_TRACE)]


@pytest.fixture
def token(project):
    return project_token_issue(project=project)


def _post(client, body, token):
    return client.post(
        "/v1/traces", body, content_type=PROTOBUF, HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def _message(response) -> str:
    from google.rpc import status_pb2

    status = status_pb2.Status()
    status.ParseFromString(response.content)
    return status.message


@pytest.mark.django_db
def test_it_answers_429_with_retry_after_while_the_backlog_is_full(
    client, project, token, settings, monkeypatch
):
    settings.FAULTLINE_OTLP_MAX_PENDING_SPANS = 2
    monkeypatch.setenv(RETRY_AFTER_ENV, "3")
    assert _post(client, protobuf_body(SPANS), token).status_code == 200  # 2 pending now
    response = _post(client, protobuf_body(LATER), token)
    assert response.status_code == 429 and response["Retry-After"] == "3"
    assert _message(response) == MSG_BACKLOG_FULL.format(limit=2)
    assert not ReceivedSpan.objects.filter(trace_id=OTHER_TRACE).exists()
    assert not LiveTrace.objects.filter(trace_id=OTHER_TRACE).exists()


@pytest.mark.django_db
def test_it_takes_spans_again_once_the_backlog_is_assembled(client, project, token, settings):
    settings.FAULTLINE_OTLP_MAX_PENDING_SPANS = 2
    _post(client, protobuf_body(SPANS), token)
    assert _post(client, protobuf_body(LATER), token).status_code == 429
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    assert _post(client, protobuf_body(LATER), token).status_code == 200
    assert ReceivedSpan.objects.filter(trace_id=OTHER_TRACE).count() == 1


@pytest.mark.django_db
def test_it_takes_a_request_larger_than_the_bound_while_the_backlog_is_under_it(
    client, project, token, settings
):
    settings.FAULTLINE_OTLP_MAX_PENDING_SPANS = 1
    assert _post(client, protobuf_body(SPANS), token).status_code == 200
    assert ReceivedSpan.objects.count() == 2


@pytest.mark.django_db
def test_it_keeps_another_projects_backlog_apart(client, project, token, settings):
    from projects.models import Project

    settings.FAULTLINE_OTLP_MAX_PENDING_SPANS = 2
    other = Project.objects.create(name="Other", slug="other")
    _post(client, protobuf_body(SPANS), project_token_issue(project=other))
    assert _post(client, protobuf_body(LATER), token).status_code == 200


def _lock_the_span_table(blocker) -> None:
    """Another connection holds the write lock, as a long write of a worker would."""
    blocker.set_autocommit(False)
    with blocker.cursor() as cursor:
        if blocker.vendor == "sqlite":  # the whole database: SQLite has one writer
            cursor.execute(f"DELETE FROM {ReceivedSpan._meta.db_table}")
        else:
            cursor.execute(f"LOCK TABLE {ReceivedSpan._meta.db_table} IN EXCLUSIVE MODE")


@pytest.mark.django_db(transaction=True)
def test_it_answers_503_with_retry_after_while_the_database_is_locked(
    client, project, token, settings, monkeypatch
):
    settings.FAULTLINE_OTLP_LOCK_TIMEOUT_SECONDS = 0.05
    monkeypatch.setenv(RETRY_AFTER_ENV, "4")
    blocker = connections.create_connection("default")
    try:
        _lock_the_span_table(blocker)
        response = _post(client, protobuf_body(SPANS), token)
    finally:
        blocker.rollback()
        blocker.close()
    assert response.status_code == 503 and response["Retry-After"] == "4"
    assert _message(response) == MSG_STORE_UNAVAILABLE
    assert ReceivedSpan.objects.count() == 0 and LiveTrace.objects.count() == 0
    # The lock gone, the exporter's retry is stored, and the short wait was put back.
    assert _post(client, protobuf_body(SPANS), token).status_code == 200
    assert ReceivedSpan.objects.count() == 2
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout")
            assert cursor.fetchone()[0] == 30_000
