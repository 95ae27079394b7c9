"""The receiver's backlog: spans stored per trace since its last assembly, summed over the
project's pending traces (what the 429 of the receiver is decided on)."""

from __future__ import annotations

import pytest

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.models import LiveTrace
from ingest.otlp.receive import pending_span_count, receive_backlog_full, spans_receive
from ingest.otlp.services import live_traces_assemble
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

pytestmark = pytest.mark.django_db

OTHER = "1bf7651916cd43dd8448eb211c80319d"


def _receive(project, spans):
    spans_receive(project=project, spans=decode_request(json_body(spans), CONTENT_JSON).spans)


def _pending(trace_id: str) -> int:
    return LiveTrace.objects.get(trace_id=trace_id).pending_spans


def test_it_counts_the_spans_each_request_adds_to_each_trace(project):
    _receive(
        project, [json_span(1, name="root"), json_span(2, parent=1), json_span(3, trace=OTHER)]
    )
    _receive(project, [json_span(4, parent=1)])
    assert (_pending(TRACE), _pending(OTHER)) == (3, 1)
    assert pending_span_count(project_id=project.pk) == 4


def test_it_clears_the_count_of_an_assembled_trace(project):
    _receive(project, [json_span(1, name="root"), json_span(2, trace=OTHER)])
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    assert _pending(TRACE) == 0
    assert pending_span_count(project_id=project.pk) == 1


def test_it_counts_again_after_assembly_when_late_spans_arrive(project):
    _receive(project, [json_span(1, name="root")])
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    _receive(project, [json_span(2, parent=1), json_span(3, parent=1)])
    assert pending_span_count(project_id=project.pk) == 2


def test_it_counts_only_the_projects_own_traces(project):
    from projects.models import Project

    other = Project.objects.create(name="Other", slug="other")
    _receive(other, [json_span(1, name="root"), json_span(2, parent=1)])
    assert pending_span_count(project_id=project.pk) == 0
    assert receive_backlog_full(project_id=other.pk, max_pending_spans=2)
    assert not receive_backlog_full(project_id=project.pk, max_pending_spans=2)


def test_it_keeps_a_traces_first_arrival_and_ended_root_when_more_spans_arrive(project):
    _receive(project, [json_span(1, name="root", end=9)])
    first = LiveTrace.objects.get().first_span_at
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    _receive(project, [json_span(2, parent=1)])
    live = LiveTrace.objects.get()
    assert live.root_ended and live.pending and live.state == "open"
    assert live.first_span_at == first <= live.last_span_at
