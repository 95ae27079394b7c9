"""POST /v1/traces: statuses, content types, and what is stored (or not)."""

from __future__ import annotations

import gzip
import json

import pytest
from django.core.cache import cache
from django.db import connection
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from dashboard.otlp import MSG_BAD_TOKEN, MSG_NO_TOKEN, MSG_STORE_UNAVAILABLE
from ingest.core.otlp_receive import (
    MSG_BAD_HEX_ID,
    MSG_BAD_PROTOBUF,
    MSG_BODY_TOO_LARGE,
    MSG_REJECTED_SPANS,
    MSG_UNSUPPORTED_MEDIA_TYPE,
)
from ingest.models import LiveTrace, ReceivedSpan
from ingest.otlp.config import MAX_BODY_BYTES_ENV, RETRY_AFTER_ENV
from projects.security import MSG_TOKEN_THROTTLED, token_failure_key
from projects.tokens import project_token_issue
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span, protobuf_body

pytestmark = pytest.mark.django_db

PROTOBUF = "application/x-protobuf"
SPANS = [json_span(1, name="root", end=9), json_span(2, parent=1, name="chat", start=1, end=2)]


@pytest.fixture
def token(project):
    return project_token_issue(project=project)


def _post(client, body, *, token, content_type=PROTOBUF, path="/v1/traces", **headers):
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client.post(path, body, content_type=content_type, **headers)


def _nothing_stored() -> bool:
    return ReceivedSpan.objects.count() == 0 and LiveTrace.objects.count() == 0


def _status_message(response) -> str:
    if response["Content-Type"] == PROTOBUF:
        status = status_pb2.Status()
        status.ParseFromString(response.content)
        return status.message
    return response.json()["message"]


def test_it_stores_protobuf_spans_and_answers_in_protobuf(
    client, project, token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _post(client, protobuf_body(SPANS), token=token)
    assert response.status_code == 200 and response["Content-Type"] == PROTOBUF
    reply = trace_service_pb2.ExportTraceServiceResponse()
    reply.ParseFromString(response.content)
    assert not reply.HasField("partial_success")
    assert ReceivedSpan.objects.filter(project=project, trace_id=TRACE).count() == 2
    live = LiveTrace.objects.get(project=project, trace_id=TRACE)
    assert live.pending and live.root_ended
    assert len(callbacks) == 1  # the assembly task, queued on commit


def test_it_stores_json_spans_and_answers_in_json(client, project, token):
    response = _post(client, json_body(SPANS), token=token, content_type="application/json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.json() == {} and ReceivedSpan.objects.count() == 2


def test_it_stores_a_lone_surrogate_replaced_instead_of_answering_500(client, project, token):
    # Valid JSON (JavaScript writes it for a string cut inside an emoji) that is not UTF-8:
    # the file import stored it replaced, the receiver answered 500 and lost the batch.
    from ingest.otlp.services import live_traces_assemble

    spans = [
        json_span(1, name="root", end=9),
        json_span(2, parent=1, name="chat", start=1, end=2, attributes={"note": "cut PLACEHOLDER"}),
    ]
    body = json.dumps(json.loads(json_body(spans))).replace("PLACEHOLDER", "\\ud83d")
    assert "\\ud83d" in body
    response = _post(client, body.encode(), token=token, content_type="application/json")
    assert response.status_code == 200, response.content
    assert ReceivedSpan.objects.filter(project=project).count() == 2
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    rollout = project.trajectories.get(external_id=TRACE)
    assert "cut \ufffd" in json.dumps(
        list(rollout.steps.values_list("metadata", flat=True)), ensure_ascii=False
    )


def test_it_answers_on_the_api_path_too(client, project, token):
    response = _post(client, protobuf_body(SPANS), token=token, path="/api/v1/otlp/v1/traces")
    assert response.status_code == 200 and ReceivedSpan.objects.count() == 2


def test_it_inflates_gzip_bodies(client, project, token):
    body = gzip.compress(protobuf_body(SPANS))
    response = _post(client, body, token=token, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200 and ReceivedSpan.objects.count() == 2


def test_it_stores_the_same_span_sent_twice_once(client, project, token):
    for _ in range(2):
        assert _post(client, protobuf_body(SPANS), token=token).status_code == 200
    assert ReceivedSpan.objects.count() == 2 and LiveTrace.objects.count() == 1


def test_it_reports_refused_spans_as_a_partial_success(client, project, token):
    short = json_span(3, parent=1)
    short["traceId"] = "abc0"
    response = _post(
        client, json_body([*SPANS, short]), token=token, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json() == {
        "partialSuccess": {
            "rejectedSpans": "1",
            "errorMessage": MSG_REJECTED_SPANS.format(count=1),
        }
    }
    assert ReceivedSpan.objects.count() == 2


def test_it_refuses_garbage_protobuf_with_400(client, project, token):
    response = _post(client, b"this is not protobuf", token=token)
    assert response.status_code == 400 and _status_message(response) == MSG_BAD_PROTOBUF
    assert _nothing_stored()


def test_it_refuses_json_with_a_bad_id_with_400(client, project, token):
    spans = [json_span(1, name="root", end=9), json_span(2, parent=1)]
    spans[1]["spanId"] = "zz" * 8
    response = _post(client, json_body(spans), token=token, content_type="application/json")
    assert response.status_code == 400
    field = "resourceSpans[0].scopeSpans[0].spans[1].spanId"
    assert _status_message(response) == MSG_BAD_HEX_ID.format(field=field, value="zz" * 8)
    assert _nothing_stored()


def test_it_refuses_a_wrong_content_type_with_415(client, project, token):
    response = _post(client, json_body(SPANS), token=token, content_type="text/plain")
    assert response.status_code == 415 and response["Content-Type"] == "application/json"
    assert _status_message(response) == MSG_UNSUPPORTED_MEDIA_TYPE.format(content_type="text/plain")
    assert _nothing_stored()


def test_it_refuses_an_oversized_body_with_413(client, project, token, monkeypatch):
    body = protobuf_body(SPANS)
    monkeypatch.setenv(MAX_BODY_BYTES_ENV, str(len(body) - 1))
    response = _post(client, body, token=token)
    assert response.status_code == 413
    assert _status_message(response) == MSG_BODY_TOO_LARGE.format(limit=len(body) - 1)
    assert _nothing_stored()


def test_it_refuses_a_gzip_body_that_inflates_past_the_limit_with_413(
    client, project, token, monkeypatch
):
    monkeypatch.setenv(MAX_BODY_BYTES_ENV, "10000")
    bomb = gzip.compress(json.dumps({"resourceSpans": [], "pad": "x" * 100_000}).encode())
    response = _post(
        client, bomb, token=token, content_type="application/json", HTTP_CONTENT_ENCODING="gzip"
    )
    assert response.status_code == 413 and _nothing_stored()


def test_it_refuses_a_wrong_token_with_401(client, project, token):
    response = _post(client, protobuf_body(SPANS), token="flt_not-the-token")
    assert response.status_code == 401 and _status_message(response) == MSG_BAD_TOKEN
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert _nothing_stored()


def test_it_counts_wrong_tokens_and_then_refuses_even_a_right_one_on_both_paths(
    client, project, token, settings
):
    settings.FAULTLINE_TOKEN_FAILURE_LIMIT = 3
    for count in range(1, 4):
        response = _post(client, protobuf_body(SPANS), token="flt_not-the-token")
        assert response.status_code == 401
        assert cache.get(token_failure_key("127.0.0.1")) == count
    for path in ("/v1/traces", "/api/v1/otlp/v1/traces"):
        response = _post(client, protobuf_body(SPANS), token=token, path=path)
        assert response.status_code == 429, path
        assert _status_message(response) == MSG_TOKEN_THROTTLED  # in OTLP's encoding
        assert response["Retry-After"] == str(settings.FAULTLINE_TOKEN_COOLOFF_SECONDS)
    assert _nothing_stored()


def test_it_does_not_count_a_request_without_a_token(client, project, token):
    _post(client, protobuf_body(SPANS), token=None)
    assert cache.get(token_failure_key("127.0.0.1")) is None


def test_it_refuses_a_request_without_a_token_with_401(client, project, token):
    response = _post(client, protobuf_body(SPANS), token=None)
    assert response.status_code == 401 and _status_message(response) == MSG_NO_TOKEN
    assert _nothing_stored()


def test_it_only_takes_post(client, project, token):
    response = client.get("/v1/traces", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 405 and response["Allow"] == "POST"


def test_it_answers_503_with_retry_after_when_the_span_store_is_unavailable(
    client, project, token, monkeypatch
):
    monkeypatch.setenv(RETRY_AFTER_ENV, "7")
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute(f"DROP TABLE {ReceivedSpan._meta.db_table}")
    response = _post(client, protobuf_body(SPANS), token=token)
    assert response.status_code == 503 and response["Retry-After"] == "7"
    assert _status_message(response) == MSG_STORE_UNAVAILABLE
    assert LiveTrace.objects.count() == 0
