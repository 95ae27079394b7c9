"""Spans that never reach the product are said so: the receiver counts the requests it
refused for good (the exporter drops them) and the uploads page says that live traces may
miss steps; a closed rollout whose spans name a parent that never came says so on its page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from ingest.core.otlp_receive import CONTENT_JSON, MSG_BODY_TOO_LARGE, decode_request
from ingest.models import LiveTrace, LiveTraceState, SpanRefusals
from ingest.otlp.config import MAX_BODY_BYTES_ENV
from ingest.otlp.receive import spans_receive
from ingest.otlp.services import live_traces_assemble
from projects.tokens import project_token_issue
from tests.conftest import ingest_file, shared_file
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span, protobuf_body

pytestmark = pytest.mark.django_db

SPANS = [json_span(1, name="root", end=9), json_span(2, parent=1, name="chat", start=1, end=2)]
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "find_hotel"}


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
    assert (refusals.requests, refusals.spans, refusals.last_status) == (1, 1, 200)


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


def _rollout_page(client, member, project, rollout_id) -> str:
    client.force_login(member)
    url = reverse("dashboard:rollout_detail", args=[project.slug, rollout_id])
    return client.get(url).content.decode()


@pytest.fixture
def rootless_trace(project):
    """A trace whose root span (1) never arrived: its two tool spans name it."""
    spans = [
        json_span(n, parent=1, name="tool", start=n, end=n + 1, attributes=TOOL) for n in (2, 3)
    ]
    spans_receive(project=project, spans=decode_request(json_body(spans), CONTENT_JSON).spans)
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    return LiveTrace.objects.get(project=project, trace_id=TRACE)


def test_a_closed_trace_whose_spans_lost_their_parent_says_so(
    client, member, project, rootless_trace
):
    LiveTrace.objects.filter(pk=rootless_trace.pk).update(
        state=LiveTraceState.CLOSED, closed_at=timezone.now() - timedelta(minutes=5)
    )
    html = _rollout_page(client, member, project, rootless_trace.rollout_id)
    assert 'id="parentless-steps"' in html and "2 steps name a parent span" in html
    assert 'href="#step-0"' in html and 'href="#step-1"' in html


def test_an_open_trace_is_not_warned_about_as_its_parents_come_last(
    client, member, project, rootless_trace
):
    html = _rollout_page(client, member, project, rootless_trace.rollout_id)
    assert 'id="live-trace"' in html and 'id="parentless-steps"' not in html


def test_an_uploaded_rollout_with_every_parent_has_no_warning(client, member, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    html = _rollout_page(client, member, project, project.trajectories.get().pk)
    assert 'id="parentless-steps"' not in html
