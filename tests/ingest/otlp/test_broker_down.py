"""With the broker unreachable the spans are still acknowledged, and the sweeper
assembles them: an acknowledged span is never lost, nothing waits forever."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from ingest.models import LiveTrace
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.services import live_traces_close
from projects.tokens import project_token_issue
from tests.ingest.core.otlp_builders import json_span, protobuf_body

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_acknowledges_spans_while_the_broker_is_down_and_sweeps_them_later(
    client, project, unreachable_broker, caplog
):
    token = project_token_issue(project=project)
    body = protobuf_body([json_span(1, name="root", end=9)])
    with caplog.at_level(logging.WARNING, logger="pipeline.live"):
        response = client.post(
            "/v1/traces",
            body,
            content_type="application/x-protobuf",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
    assert response.status_code == 200
    assert "broker unavailable" in caplog.text
    live = LiveTrace.objects.get()
    assert live.pending and live.rollout is None
    later = timezone.now() + timedelta(seconds=61)
    live_traces_close(now=later, config=ReceiverConfig(sweep_after_seconds=60))
    live.refresh_from_db()
    assert not live.pending and live.rollout is not None
