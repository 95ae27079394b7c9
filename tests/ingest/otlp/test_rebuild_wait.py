"""A long live trace is not rebuilt from all its spans on every request that brings a few
more (quadratic in its length): it waits (ingest.core.otlp_trace.rebuild_wait), one rebuild
is scheduled for when the wait is over, and a lost schedule does not strand it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import TestCase
from django.utils import timezone

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.models import LiveTrace
from ingest.otlp.config import REBUILD_PER_SPAN_ENV, ReceiverConfig
from ingest.otlp.receive import spans_receive
from ingest.otlp.services import REBUILD_LOST_AFTER_SECONDS, live_traces_assemble
from pipeline.live import live_traces_assemble_run
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

pytestmark = pytest.mark.django_db

TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "find_hotel"}
# Traces of 3 spans or more wait 10 s per span: every wait below is far from elapsing.
WAITING = ReceiverConfig(rebuild_seconds_per_span=10.0, rebuild_free_below_spans=3)


def _receive(project, first: int, count: int) -> None:
    spans = [
        json_span(n, parent=1, name="tool", start=n, end=n + 1, attributes=TOOL)
        for n in range(first, first + count)
    ]
    spans_receive(project=project, spans=decode_request(json_body(spans), CONTENT_JSON).spans)


def _assemble(project, deferred: list, *, scheduled: bool = False) -> int:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return live_traces_assemble(
            project_id=project.pk,
            trace_ids=[TRACE],
            on_deferred=lambda *call: deferred.append(call),
            scheduled=scheduled,
            config=WAITING,
        )


def _steps(project) -> int:
    return LiveTrace.objects.get(project=project, trace_id=TRACE).rollout.step_count


@pytest.fixture
def waiting(project):
    """A trace built from 3 spans moments ago, then sent 1 more."""
    deferred: list = []
    _receive(project, 2, 3)
    assert _assemble(project, deferred) == 1 and deferred == []
    _receive(project, 5, 1)
    return deferred


def test_it_leaves_a_long_trace_rebuilt_moments_ago_pending(project, waiting):
    before = _steps(project)
    assert _assemble(project, waiting) == 0
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert live.pending and live.pending_spans == 1 and _steps(project) == before
    [(project_id, trace_ids, seconds)] = waiting
    assert (project_id, trace_ids) == (project.pk, [TRACE])
    assert 29 < seconds <= 30  # 3 spans x 10 s, less the moment since the build


def test_it_schedules_one_rebuild_however_many_requests_wait_for_it(project, waiting):
    _assemble(project, waiting)
    _receive(project, 6, 1)
    _receive(project, 7, 1)
    assert _assemble(project, waiting) == 0 and len(waiting) == 1


def test_it_rebuilds_the_waiting_trace_when_its_scheduled_rebuild_runs(project, waiting):
    _assemble(project, waiting)
    before = _steps(project)
    assert _assemble(project, waiting, scheduled=True) == 1
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert not live.pending and live.rebuild_due_at is None and live.assembled_spans == 4
    assert _steps(project) > before


def test_it_rebuilds_at_once_a_trace_whose_scheduled_rebuild_was_lost(project, waiting):
    _assemble(project, waiting)
    LiveTrace.objects.filter(trace_id=TRACE).update(
        rebuild_due_at=timezone.now() - timedelta(seconds=REBUILD_LOST_AFTER_SECONDS + 1)
    )
    assert _assemble(project, waiting) == 1 and len(waiting) == 1


def test_it_rebuilds_once_the_wait_is_over(project, waiting):
    LiveTrace.objects.filter(trace_id=TRACE).update(
        assembled_at=timezone.now() - timedelta(seconds=31)
    )
    assert _assemble(project, waiting) == 1 and waiting == []


def test_the_pipeline_queues_the_rebuild_and_the_worker_runs_it(project, eager_celery, monkeypatch):
    # 200 spans and more wait (the default threshold); eager Celery runs the queued rebuild
    # at once. A second a span makes the wait 200 s: the default 2 ms (0.4 s here) can be
    # over before the second request on a slow machine, which then rebuilds at once.
    monkeypatch.setenv(REBUILD_PER_SPAN_ENV, "1")
    _receive(project, 2, 200)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert live_traces_assemble_run(project.pk, [TRACE]) == 1
    _receive(project, 202, 1)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert live_traces_assemble_run(project.pk, [TRACE]) == 0
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert (live.pending, live.assembled_spans, live.rebuild_due_at) == (False, 201, None)
