"""Shared inputs for the parser tests: a minimal valid document per format, with a slot.

Each template is a valid file of its format in which ``@@`` stands inside a JSON string;
the bad-input tests fill the slot with a 100 MB string, invalid UTF-8 or 100,000 levels
of nesting, and cut the filled template short to make it truncated.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ingest.core.records import TrajectoryRecord
from ingest.parsers import get_parser
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SLOT = b"@@"

TEMPLATES: dict[str, tuple[str, bytes]] = {
    "openai_chat": (
        "chat.jsonl",
        b'{"id": "a", "messages": [{"role": "user", "content": "@@"}]}\n',
    ),
    "otlp_json": (
        "trace.json",
        b'{"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": '
        b'{"stringValue": "svc"}}]}, "scopeSpans": [{"scope": {"name": "s"}, "spans": [{"traceId": '
        b'"0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat m", '
        b'"startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000", '
        b'"attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}, '
        b'{"key": "gen_ai.output.messages", "value": {"stringValue": "@@"}}]}]}]}]}',
    ),
    "otel_sdk_spans": (
        "RUN_trace.json",
        b'{"spans": [{"name": "call_llm m", "context": {"trace_id": 1, "span_id": 2}, "parent": '
        b'{"span_id": null}, "start_time": 1700000000000000000, "end_time": 1700000001000000000, '
        b'"status": {"status_code": "ok"}, "attributes": {"gen_ai.operation.name": "call_llm", '
        b'"gen_ai.output": "@@"}}], "final_output": "x"}',
    ),
    "openinference": (
        "spans.jsonl",
        b'{"name": "llm", "context": {"trace_id": "t1", "span_id": "s1"}, "parent_id": null, '
        b'"span_kind": "LLM", "start_time": "2025-01-01T00:00:00+00:00", "end_time": '
        b'"2025-01-01T00:00:01+00:00", "status_code": "OK", "attributes": {"output.value": "@@"}}\n',
    ),
    "langfuse": (
        "trace.json",
        b'{"id": "t1", "timestamp": "2025-01-01T00:00:00Z", "name": "agent", "observations": '
        b'[{"id": "o1", "traceId": "t1", "parentObservationId": null, "type": "GENERATION", '
        b'"name": "chat", "startTime": "2025-01-01T00:00:00Z", "endTime": "2025-01-01T00:00:01Z", '
        b'"model": "m", "input": [{"role": "user", "content": "hi"}], "output": {"role": '
        b'"assistant", "content": "@@"}, "level": "DEFAULT"}], "scores": []}',
    ),
    "langsmith": (
        "runs.json",
        b'[{"id": "r1", "trace_id": "r1", "parent_run_id": null, "dotted_order": '
        b'"20250101T000000000000Zr1", "name": "ChatOpenAI", "run_type": "llm", "start_time": '
        b'"2025-01-01T00:00:00Z", "end_time": "2025-01-01T00:00:01Z", "inputs": {"messages": '
        b'[{"role": "user", "content": "hi"}]}, "outputs": {"choices": [{"message": {"role": '
        b'"assistant", "content": "@@"}}]}, "error": null, "extra": {"metadata": {}}}]',
    ),
    "swe_agent": (
        "run.traj",
        b'{"environment": "main", "trajectory": [{"action": "ls", "observation": "@@", "thought": '
        b'"look", "response": "r", "state": "{}"}], "history": [], "info": {"exit_status": "submitted"}}',
    ),
    "openhands": (
        "events.json",
        b'[{"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "user", "message": "m", '
        b'"action": "message", "args": {"content": "@@"}}]',
    ),
    "inspect_ai": (
        "log.json",
        b'{"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}, "plan": {}, '
        b'"samples": [{"id": 1, "epoch": 1, "input": "q", "messages": [{"role": "user", '
        b'"content": "@@"}], "scores": {"s": {"value": "C"}}}]}',
    ),
    "native": ("runs.jsonl", b'{"id": "r", "steps": [{"role": "user", "content": "@@"}]}\n'),
    "who_and_when": (
        "1.json",
        b'{"history": [{"role": "user", "content": "@@"}], "question": "q", "mistake_step": "0", '
        b'"is_correct": false}',
    ),
    "tau_bench": (
        "gpt-4o-airline.json",
        b'[{"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": [{"role": "user", '
        b'"content": "@@"}]}]',
    ),
}
NEW_FORMATS = (
    "openai_chat",
    "otlp_json",
    "otel_sdk_spans",
    "openinference",
    "swe_agent",
    "openhands",
    "inspect_ai",
    "langfuse",
    "langsmith",
)


def filled(fmt: str, text: bytes = b"hello") -> bytes:
    return TEMPLATES[fmt][1].replace(SLOT, text)


def parse_bytes(
    fmt: str, data: bytes, filename: str | None = None, limits: ParseLimits = DEFAULT_LIMITS
) -> list[TrajectoryRecord]:
    name = filename or TEMPLATES[fmt][0]
    return list(get_parser(fmt).parse(io.BytesIO(data), filename=name, limits=limits))


def parse_path(
    fmt: str, path: Path | str, limits: ParseLimits = DEFAULT_LIMITS, name: str = ""
) -> list[TrajectoryRecord]:
    with open(path, "rb") as stream:
        return list(get_parser(fmt).parse(stream, filename=name or str(path), limits=limits))


def write_with_huge_string(path: Path, fmt: str, size: int) -> None:
    """The format's template with ``size`` bytes of text in the slot, written in chunks."""
    prefix, suffix = TEMPLATES[fmt][1].split(SLOT)
    chunk = b"a" * (1024 * 1024)
    with open(path, "wb") as out:
        out.write(prefix)
        for _ in range(size // len(chunk)):
            out.write(chunk)
        out.write(suffix)


def deeply_nested(fmt: str, depth: int = 100_000) -> bytes:
    template = TEMPLATES[fmt][1]
    return template.replace(b'"' + SLOT + b'"', b"[" * depth + b"]" * depth)


def steps_summary(record: TrajectoryRecord) -> list[tuple[Any, ...]]:
    return [(step.kind, step.role, step.tool_name) for step in record.steps]
