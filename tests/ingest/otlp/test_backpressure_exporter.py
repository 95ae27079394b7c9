"""The real OpenTelemetry SDK (BatchSpanProcessor + OTLP/HTTP exporter) against the live
receiver while the project's backlog is full: it gets 429 with Retry-After, waits, sends
the same batch again once the backlog has been assembled, and nothing is lost."""

from __future__ import annotations

import logging
import threading

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.models import ReceivedSpan
from ingest.otlp.config import RETRY_AFTER_ENV
from ingest.otlp.receive import pending_span_count, spans_receive
from ingest.otlp.services import live_traces_assemble
from projects.tokens import project_token_issue
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

pytestmark = pytest.mark.django_db(transaction=True)

SPANS_SENT = 5


class RecordingExporter(OTLPSpanExporter):
    """The real exporter, keeping the result of each batch it was given."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.results: list[SpanExportResult] = []

    def export(self, spans):
        result = super().export(spans)
        self.results.append(result)
        return result


class Refusals(logging.Handler):
    """Tells when the receiver has refused a request for a full backlog."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = threading.Event()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "backlog full" in record.getMessage():
            self.count += 1
            self.seen.set()


def _agent_run(exporter: RecordingExporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("backpressure-test")
    with tracer.start_as_current_span(
        "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        for number in range(SPANS_SENT - 1):
            with tracer.start_as_current_span(
                f"chat {number}", attributes={"gen_ai.operation.name": "chat"}
            ):
                pass
    provider.shutdown()  # flushes: returns once the exporter succeeded or gave up


def test_it_loses_nothing_when_the_exporter_is_told_429_then_accepted(
    live_server, project, settings, monkeypatch, eager_celery
):
    settings.FAULTLINE_OTLP_MAX_PENDING_SPANS = 1
    monkeypatch.setenv(RETRY_AFTER_ENV, "1")
    # A backlog from before: one span the workers have not assembled yet.
    spans_receive(
        project=project, spans=decode_request(json_body([json_span(1)]), CONTENT_JSON).spans
    )
    refusals = Refusals()
    logging.getLogger("dashboard.otlp").addHandler(refusals)
    exporter = RecordingExporter(
        endpoint=f"{live_server.url}/v1/traces",
        headers={"Authorization": f"Bearer {project_token_issue(project=project)}"},
    )
    agent = threading.Thread(target=_agent_run, args=(exporter,))
    try:
        agent.start()
        assert refusals.seen.wait(timeout=30), "the receiver never refused the batch"
        # The workers catch up while the exporter waits out Retry-After.
        live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
        assert pending_span_count(project_id=project.pk) == 0
        agent.join(timeout=60)
    finally:
        logging.getLogger("dashboard.otlp").removeHandler(refusals)
    assert refusals.count >= 1
    assert exporter.results == [SpanExportResult.SUCCESS]
    sent = ReceivedSpan.objects.filter(project=project).exclude(trace_id=TRACE)
    assert sent.count() == SPANS_SENT
