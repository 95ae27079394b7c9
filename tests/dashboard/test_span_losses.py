"""Spans that never reach the product are said so: the receiver counts the requests it
refused for good (the exporter drops them) and the uploads page says that live traces may
miss steps (a closed rollout whose spans name a parent that never came says so on its
page: test_rollout_live.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from ingest.core.otlp_receive import CONTENT_JSON, MSG_BODY_TOO_LARGE
from ingest.models import SpanRefusals
from ingest.otlp.config import MAX_BODY_BYTES_ENV
from projects.tokens import project_token_issue
from tests.ingest.core.otlp_builders import json_body, json_span, protobuf_body

pytestmark = pytest.mark.django_db

SPANS = [json_span(1, name="root", end=9), json_span(2, parent=1, name="chat", start=1, end=2)]


@pytest.fixture
def token(project):
    return project_token_issue(project=project)


def _post(client, body, *, token, content_type="application/x-protobuf"):
    return client.post(
        "/v1/traces", body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def _uploads_page(client, member, project) -> str:
    client.force_login(member)
    return client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()


def test_requests_refused_for_good_are_counted_and_shown_on_the_uploads_page(
    client, member, project, token, monkeypatch
):
    body = protobuf_body(SPANS)
    monkeypatch.setenv(MAX_BODY_BYTES_ENV, str(len(body) - 1))
    assert _post(client, body, token=token).status_code == 413
    assert _post(client, b"not protobuf", token=token).status_code == 400
    refusals = SpanRefusals.objects.get(project=project)
    assert (refusals.requests, refusals.spans, refusals.last_status) == (2, 0, 400)
    assert refusals.first_at <= refusals.last_at

    html = _uploads_page(client, member, project)
    assert 'id="span-refusals"' in html and "2 span requests refused" in html
    assert "(400)" in html and "may miss steps" in html


def test_spans_refused_inside_a_partial_success_are_counted(client, project, token):
    short = json_span(3, parent=1)
    short["traceId"] = "abc0"
    response = _post(client, json_body([*SPANS, short]), token=token, content_type=CONTENT_JSON)
    assert response.status_code == 200
    refusals = SpanRefusals.objects.get(project=project)
    # The request was taken: only its refused span is lost, it is no refused request.
    assert (refusals.requests, refusals.spans, refusals.last_status) == (0, 1, 200)


def test_a_partial_success_is_not_counted_as_a_refused_request(client, member, project, token):
    for _ in range(4):
        assert _post(client, b"not protobuf", token=token).status_code == 400
    short = json_span(3, parent=1)
    short["traceId"] = "abc0"
    response = _post(client, json_body([*SPANS, short]), token=token, content_type=CONTENT_JSON)
    assert response.status_code == 200
    refusals = SpanRefusals.objects.get(project=project)
    assert (refusals.requests, refusals.spans) == (4, 1)

    html = _uploads_page(client, member, project)
    assert "4 span requests refused, and 1 span refused in partly accepted requests" in html
    assert "5 span requests" not in html and "(a partly accepted request)" in html


def test_only_partial_successes_name_no_refused_request(client, member, project, token):
    short = json_span(3, parent=1)
    short["traceId"] = "abc0"
    _post(client, json_body([*SPANS, short]), token=token, content_type=CONTENT_JSON)
    html = _uploads_page(client, member, project)
    assert "Spans lost: 1 span refused in partly accepted requests" in html
    assert "span request" not in html


def test_answers_the_exporter_retries_and_wrong_tokens_are_not_counted(
    client, project, token, settings
):
    settings.FAULTLINE_OTLP_MAX_PENDING_SPANS = 1
    assert _post(client, protobuf_body(SPANS), token=token).status_code == 200
    assert _post(client, protobuf_body(SPANS), token=token).status_code == 429
    assert _post(client, protobuf_body(SPANS), token="wrong").status_code == 401
    assert not SpanRefusals.objects.exists()


def test_a_project_without_refusals_shows_no_warning(client, member, project, token):
    assert _post(client, protobuf_body(SPANS), token=token).status_code == 200
    assert 'id="span-refusals"' not in _uploads_page(client, member, project)


def test_the_message_of_a_refusal_is_escaped(client, member, project):
    now = timezone.now()
    SpanRefusals.objects.create(
        project=project,
        requests=1,
        first_at=now,
        last_at=now,
        last_status=400,
        last_message="<img src=x onerror=alert(1)>",
    )
    html = _uploads_page(client, member, project)
    assert "&lt;img src=x" in html and "<img src=x" not in html


def test_the_body_limit_message_is_what_the_page_quotes(
    client, member, project, token, monkeypatch
):
    monkeypatch.setenv(MAX_BODY_BYTES_ENV, "10")
    assert _post(client, protobuf_body(SPANS), token=token).status_code == 413
    assert MSG_BODY_TOO_LARGE.format(limit=10) in _uploads_page(client, member, project)
