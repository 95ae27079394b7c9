"""The rollout page of a rollout sent over OTLP says whether its trace is still open, how
many newer spans it does not show yet, and why the latest could not be assembled."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.models import LiveTrace, LiveTraceState
from ingest.otlp.receive import spans_receive
from ingest.otlp.services import live_traces_assemble
from tests.conftest import REPO_ROOT, ingest_file, shared_file
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

pytestmark = pytest.mark.django_db

TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "find_hotel"}


def _receive(project, *numbers: int) -> None:
    spans = [
        json_span(n, parent=1, name="tool", start=n, end=n + 1, attributes=TOOL) for n in numbers
    ]
    spans_receive(project=project, spans=decode_request(json_body(spans), CONTENT_JSON).spans)


@pytest.fixture
def live_rollout(project):
    _receive(project, 2, 3)
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    return LiveTrace.objects.get(project=project, trace_id=TRACE)


def _page(client, member, project, rollout_id) -> str:
    client.force_login(member)
    url = reverse("dashboard:rollout_detail", args=[project.slug, rollout_id])
    return client.get(url).content.decode()


def test_it_says_the_trace_is_open_and_counts_the_spans_not_shown_yet(
    client, member, project, live_rollout
):
    _receive(project, 4, 5, 6)
    LiveTrace.objects.filter(pk=live_rollout.pk).update(
        rebuild_due_at=timezone.now() + timedelta(seconds=20)
    )
    html = _page(client, member, project, live_rollout.rollout_id)
    assert 'id="live-trace"' in html and "Live trace, still open" in html
    assert "3 newer spans are not shown yet" in html and "from now" in html


def test_it_says_when_a_trace_closed(client, member, project, live_rollout):
    LiveTrace.objects.filter(pk=live_rollout.pk).update(
        state=LiveTraceState.CLOSED, closed_at=timezone.now() - timedelta(minutes=5)
    )
    html = _page(client, member, project, live_rollout.rollout_id)
    assert "Live trace, closed" in html and "5\xa0minutes ago" in html
    assert "not shown yet" not in html


def test_it_shows_why_the_latest_spans_failed_escaped(client, member, project, live_rollout):
    LiveTrace.objects.filter(pk=live_rollout.pk).update(error_message="<b>cycle</b> in parents")
    html = _page(client, member, project, live_rollout.rollout_id)
    assert "&lt;b&gt;cycle&lt;/b&gt; in parents" in html and "<b>cycle</b>" not in html


def test_an_uploaded_rollout_has_no_live_note(client, member, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    html = _page(client, member, project, project.trajectories.get().pk)
    assert 'id="live-trace"' not in html
    assert 'id="parentless-steps"' not in html  # every step's parent is there


def test_the_live_note_is_information_not_a_warning(client, member, project, live_rollout):
    LiveTrace.objects.filter(pk=live_rollout.pk).update(
        state=LiveTraceState.CLOSED, closed_at=timezone.now() - timedelta(minutes=5)
    )
    html = _page(client, member, project, live_rollout.rollout_id)
    assert '<div class="message info" id="live-trace">' in html
    css = (REPO_ROOT / "static" / "css" / "faultline.css").read_text()
    [rule] = [line for line in css.splitlines() if line.startswith(".message.info ")]
    # Neutral: the panel's own colours, not the orange accent of a warning.
    assert "var(--panel)" in rule and "var(--line)" in rule and "accent" not in rule


def test_a_closed_trace_whose_spans_lost_their_parent_says_so(
    client, member, project, live_rollout
):
    # Its two tool spans name a root span (1) that never arrived.
    LiveTrace.objects.filter(pk=live_rollout.pk).update(
        state=LiveTraceState.CLOSED, closed_at=timezone.now() - timedelta(minutes=5)
    )
    html = _page(client, member, project, live_rollout.rollout_id)
    assert 'id="parentless-steps"' in html and "2 steps name a parent span" in html
    assert 'href="#step-0"' in html and 'href="#step-1"' in html


def test_an_open_trace_is_not_warned_about_as_its_parents_come_last(
    client, member, project, live_rollout
):
    html = _page(client, member, project, live_rollout.rollout_id)
    assert 'id="live-trace"' in html and 'id="parentless-steps"' not in html
