"""A scripted multi-agent rollout traced with the real OpenTelemetry SDK and OTLP/HTTP
exporter, run as its own process by the end-to-end test.

The exporter is configured only through the standard environment variables
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_COMPRESSION),
as an agent engineer would. The spans leave in several batches (two spans per export),
one span is exported a second time (as a retry would), and one tool span ends after the
root span has been exported. Prints one line per export result it checks.
"""

from __future__ import annotations

import json

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.trace import Status, StatusCode

QUESTION = "Plan a weekend in Oslo: find a flight and book a hotel."


class Recorder(SpanProcessor):
    """Keeps every ended span, to send one again by hand."""

    def __init__(self) -> None:
        self.ended: dict[str, ReadableSpan] = {}

    def on_end(self, span: ReadableSpan) -> None:
        self.ended[span.name] = span


def messages(role: str, *parts: dict) -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


def chat(tracer, agent: str, inputs: str, output: str) -> None:
    with tracer.start_as_current_span(
        "chat gpt-4o",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.agent.name": agent,
            "gen_ai.input.messages": inputs,
            "gen_ai.output.messages": output,
        },
    ):
        pass


def tool(tracer, name: str, call_id: str, arguments: dict, result: str, error: str = "") -> None:
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(arguments),
            "gen_ai.tool.call.result": result,
        },
    ) as span:
        if error:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, result))


def main() -> None:
    resource = Resource.create(
        {
            "service.name": "trip-planner",
            "faultline.task.id": "weekend-oslo",
            "faultline.environment": "travel",
        }
    )
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter()
    recorder = Recorder()
    provider.add_span_processor(recorder)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_export_batch_size=2, schedule_delay_millis=60_000)
    )
    tracer = provider.get_tracer("trip-agent")

    with tracer.start_as_current_span(
        "invoke_workflow trip",
        attributes={
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.agent.name": "orchestrator",
            "gen_ai.conversation.id": "conv-oslo",
        },
    ) as root:
        root.add_event(
            "gen_ai.evaluation.result",
            {"gen_ai.evaluation.name": "task_success", "gen_ai.evaluation.score.label": "fail"},
        )
        with tracer.start_as_current_span(
            "invoke_agent researcher",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"},
        ):
            chat(
                tracer,
                "researcher",
                messages("user", {"type": "text", "content": QUESTION}),
                messages(
                    "assistant",
                    {
                        "type": "tool_call",
                        "id": "call_1",
                        "name": "search_flights",
                        "arguments": {"to": "OSL"},
                    },
                ),
            )
            tool(tracer, "search_flights", "call_1", {"to": "OSL"}, '[{"flight": "SK1"}]')
        provider.force_flush()  # the first batches: researcher's spans
        with tracer.start_as_current_span(
            "invoke_agent booker",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booker"},
        ):
            chat(
                tracer,
                "booker",
                messages("user", {"type": "text", "content": QUESTION}),
                messages(
                    "assistant",
                    {"type": "text", "content": "Booking the hotel."},
                    {
                        "type": "tool_call",
                        "id": "call_2",
                        "name": "book_hotel",
                        "arguments": {"city": "Oslo"},
                    },
                ),
            )
            tool(tracer, "book_hotel", "call_2", {"city": "Oslo"}, "card declined", "PaymentError")
        late = tracer.start_span(
            "execute_tool send_summary",
            context=trace.set_span_in_context(root),
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "send_summary",
                "gen_ai.tool.call.id": "call_3",
                "gen_ai.tool.call.result": "sent",
            },
        )
    provider.force_flush()  # the root span goes out here...
    late.end()
    provider.force_flush()  # ...and this tool span only after it
    again = exporter.export([recorder.ended["execute_tool search_flights"]])
    print("duplicate export:", "ok" if again is SpanExportResult.SUCCESS else "failed")
    provider.shutdown()


if __name__ == "__main__":
    main()
