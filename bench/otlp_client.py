"""One client process of bench/otlp.py: an agent's real OpenTelemetry SDK and OTLP/HTTP
exporter behind a BatchSpanProcessor, sending its share of the benchmark's rollouts.

It makes its spans first (the agent's work, not measured), prints READY, waits for GO on
its standard input, then hands every span to the BatchSpanProcessor at once (a burst:
the processor sends batches of 512 as fast as the receiver answers) and flushes. Each
export is timed; the last line printed is a JSON report. No Django here: the client's
memory is the SDK's.

The shape of a rollout (the one the issue's peer measurement used): an ``invoke_agent``
root and 19 children alternating ``chat`` (a model call whose output asks for a tool) and
``execute_tool`` (its result), each output 500-1,000 characters, with GenAI
semantic-convention attributes.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

SPANS_PER_ROLLOUT = 20
WORDS = [
    "the",
    "order",
    "refund",
    "booking",
    "flight",
    "hotel",
    "customer",
    "policy",
    "date",
    "city",
    "card",
    "payment",
    "status",
    "search",
    "result",
    "confirm",
    "cancel",
    "change",
    "seat",
    "baggage",
    "fare",
    "receipt",
    "window",
    "agent",
    "tool",
    "call",
    "reservation",
    "passenger",
    "itinerary",
    "available",
    "declined",
    "approved",
    "pending",
    "check",
    "balance",
]


def text(rng: random.Random) -> str:
    """500 to 1,000 characters of words."""
    target = rng.randint(500, 1000)
    words: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:target]


class Collector(SpanProcessor):
    """Keeps every ended span, to be exported later in one burst."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def rollout_spans(tracer_provider: TracerProvider, number: int, rng: random.Random) -> None:
    """One rollout of SPANS_PER_ROLLOUT spans, ended as an agent ends them."""
    tracer = tracer_provider.get_tracer("faultline-bench-agent")
    root_attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support",
        "faultline.task.id": f"task-{number % 50}",
        "faultline.environment": "bench",
    }
    with tracer.start_as_current_span("invoke_agent support", attributes=root_attributes):
        for turn in range((SPANS_PER_ROLLOUT - 1 + 1) // 2):
            call_id = f"call_{number}_{turn}"
            tool = rng.choice(("search_orders", "refund_order", "get_policy"))
            chat: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": rng.randint(200, 4000),
                "gen_ai.usage.output_tokens": rng.randint(50, 400),
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": text(rng)},
                                {
                                    "type": "tool_call",
                                    "id": call_id,
                                    "name": tool,
                                    "arguments": {"order_id": number},
                                },
                            ],
                        }
                    ]
                ),  # fmt: skip
            }
            if turn == 0:
                chat["gen_ai.input.messages"] = json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": text(rng)}]}]
                )
            with tracer.start_as_current_span("chat gpt-4o", attributes=chat):
                pass
            if 2 * turn + 2 >= SPANS_PER_ROLLOUT:
                break
            tool_attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": json.dumps({"order_id": number}),
                "gen_ai.tool.call.result": text(rng),
            }
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes=tool_attributes):
                pass


def make_spans(first: int, count: int, seed: int) -> list[ReadableSpan]:
    """The ended spans of rollouts first .. first+count-1 (ids random, content seeded)."""
    collector = Collector()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(collector)
    for number in range(first, first + count):
        rollout_spans(provider, number, random.Random(seed * 1_000_003 + number))
    return collector.spans


class TimedExporter(OTLPSpanExporter):
    """The real exporter, timing each batch (its retries included)."""

    def __init__(self, *, endpoint: str, headers: dict[str, str]) -> None:
        super().__init__(endpoint=endpoint, headers=headers)
        self.exports: list[tuple[float, float, int, bool]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        started = time.time()
        result = super().export(spans)
        self.exports.append((started, time.time(), len(spans), result == SpanExportResult.SUCCESS))
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--first", type=int, required=True)
    parser.add_argument("--rollouts", type=int, required=True)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    spans = make_spans(args.first, args.rollouts, args.seed)
    exporter = TimedExporter(
        endpoint=args.endpoint, headers={"Authorization": f"Bearer {args.token}"}
    )
    # The queue holds the whole burst: this measures the receiver, not the SDK's drops.
    processor = BatchSpanProcessor(exporter, max_queue_size=len(spans) + 1)
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        sys.exit("no GO")
    started, cpu_started = time.time(), time.process_time()
    for span in spans:
        processor.on_end(span)
    processor.force_flush(timeout_millis=600_000)
    processor.shutdown()
    report = {
        "spans": len(spans),
        "started": started,
        "exports": exporter.exports,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cpu_seconds": round(time.process_time() - cpu_started, 2),
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
