"""The real OpenTelemetry SDK and OTLP/HTTP exporter, in a process of their own, against
the receiver served by a live server: a multi-agent rollout sent in several batches, with
a span sent twice and one that ends after the root, becomes one rollout; closing it
queues the project's refresh, which attributes it.

Celery runs eagerly in the server thread (on the app's own conf), so each request's
assembly task has run when the exporter gets its 200: no waiting, no polling.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from attribution.models import TrajectoryAttribution
from ingest.core.records import Outcome
from ingest.models import LiveTrace, LiveTraceState, ReceivedSpan
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.services import live_traces_close
from pipeline.live import rollouts_changed
from projects.tokens import project_token_issue
from tests.ingest.otlp.exporters import exporter_env, run_python

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = Path(__file__).with_name("trip_agent.py")


def test_it_assembles_a_rollout_exported_by_the_real_sdk(live_server, project, eager_celery):
    token = project_token_issue(project=project)
    env = exporter_env(live_server.url, token, OTEL_EXPORTER_OTLP_COMPRESSION="gzip")
    assert "duplicate export: ok" in run_python([str(AGENT)], env)
    assert ReceivedSpan.objects.filter(project=project).count() == 8
    assert ReceivedSpan.objects.values("received_at").distinct().count() >= 4  # batches
    live = LiveTrace.objects.get(project=project)
    assert live.root_ended and not live.pending and live.state == LiveTraceState.OPEN
    rollout = live.rollout
    steps = list(rollout.steps.order_by("index"))
    assert [(s.kind, s.agent, s.tool_name) for s in steps] == [
        ("message", "user", ""),
        ("message", "researcher", ""),
        ("tool_call", "researcher", "search_flights"),
        ("tool_result", "tool", "search_flights"),
        ("message", "booker", ""),
        ("tool_call", "booker", "book_hotel"),
        ("tool_result", "tool", "book_hotel"),
        ("tool_call", "orchestrator", "send_summary"),
        ("tool_result", "tool", "send_summary"),
    ]
    assert steps[6].is_error and steps[6].content == "card declined"
    assert (rollout.task_id, rollout.environment) == ("weekend-oslo", "travel")
    assert rollout.outcome == Outcome.FAILURE and rollout.metadata["provider"] == "openai"

    config = ReceiverConfig(close_after_seconds=30)
    closed = live_traces_close(
        now=timezone.now() + timedelta(seconds=31), config=config, on_changed=rollouts_changed
    )
    assert closed == 1
    live.refresh_from_db()
    assert live.state == LiveTraceState.CLOSED and live.rollout_id == rollout.pk
    # Closing queued the project's refresh (run eagerly here): the failed rollout is attributed.
    attribution = TrajectoryAttribution.objects.get(trajectory=rollout)
    assert 0 <= attribution.point_step < len(steps)
