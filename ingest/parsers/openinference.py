"""OpenInference span JSONL, as Arize Phoenix exports spans: one span per line.

A line has ``name``, ``context: {trace_id, span_id}`` (or flat ``context.trace_id`` /
``context.span_id`` columns), ``parent_id``, ``span_kind``, ``start_time``/``end_time``
(ISO 8601), ``status_code`` (OK / ERROR / UNSET), ``status_message``, ``events`` and
``attributes``. Attributes may be nested (``{"llm": {"input_messages": [...]}}``), flat
dotted keys (``llm.input_messages.0.message.role``) or ``attributes.``-prefixed columns;
all three are flattened to dotted keys first.

Each span is translated to the OpenTelemetry GenAI conventions (ingest.core.openinference,
which the OTLP receiver uses too) and the trace is then built
exactly as OTLP traces are (ingest.core.genai): one trace id is one trajectory, tree order
then start time, tool spans split into a call and a result.

- LLM spans: ``llm.input_messages.N.message.*`` and ``llm.output_messages.N.message.*``
  (``role``, ``content`` or ``contents.M.message_content.text``, ``name``,
  ``tool_call_id``, ``tool_calls.M.tool_call.{id, function.name, function.arguments}``);
  ``llm.model_name`` is the policy model.
- TOOL spans: ``tool.name``, ``tool.parameters`` (or ``input.value``), ``output.value``,
  ``tool_call.id``. RETRIEVER spans are read as tools named after the span.
- AGENT spans: ``agent.name`` (else the span name) names the agent of everything below.
- Other kinds (CHAIN, EMBEDDING, RERANKER, GUARDRAIL, EVALUATOR, PROMPT) are not steps;
  they go to ``metadata.other_spans``. The root's ``input.value`` is the task text when no
  user message carries it.

Outcome: the root span's ``status_code`` ERROR is a failure; OpenInference instrumentors set
OK on every call that did not raise, so OK and UNSET give an unknown outcome.
Lines are read one at a time, but a trace's spans may be anywhere in the file, so the
decoded spans are held until the end: the file is refused above ``max_document_bytes``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import iter_lines, loads
from ingest.core.openinference import to_genai
from ingest.core.otlp_trace import trace_record
from ingest.core.records import TrajectoryRecord
from ingest.core.spans import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    Span,
    datetime_to_ns,
)
from ingest.core.spill import TraceBuffer
from ingest.core.validate import optional_str, require_object
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "openinference"
LABEL = "OpenInference span JSONL (Phoenix)"
EXTENSIONS = (".jsonl", ".ndjson")

MSG_BAD_ID = "Expected a non-empty string or integer id."
MSG_BAD_STATUS = "Expected status_code OK, ERROR or UNSET."
MSG_BAD_TIME = "Expected an ISO 8601 timestamp."
MSG_NO_SPANS = "The file has no spans."
MSG_DOCUMENT_TOO_LARGE = "The file is larger than the limit of {limit} bytes for span formats."

_STATUS = {"OK": STATUS_OK, "ERROR": STATUS_ERROR, "UNSET": STATUS_UNSET, "": STATUS_UNSET}
ROW_KEYS = {
    "name",
    "context",
    "context.trace_id",
    "context.span_id",
    "parent_id",
    "span_kind",
    "start_time",
    "end_time",
    "status_code",
    "status_message",
    "attributes",
}


def sniff(head: bytes, filename: str) -> bool:
    first = head.lstrip().split(b"\n", 1)[0]
    if not first.startswith(b"{"):
        return False
    has_id = b'"span_id"' in first or b'"context.span_id"' in first
    return has_id and (b'"span_kind"' in first or b"openinference.span.kind" in first)


def flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested objects and lists of objects as dotted keys; lists of scalars stay lists."""
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            flatten(item, f"{prefix}.{index}", out)
    else:
        out[prefix] = value


def _time(value: Any, record: str, field: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise TraceParseError(MSG_BAD_TIME, record=record, field=field) from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return datetime_to_ns(parsed)
    raise TraceParseError(MSG_BAD_TIME, record=record, field=field)


def _id(value: Any, record: str, field: str, required: bool) -> str:
    if value is None or value == "":
        if required:
            raise TraceParseError(MSG_BAD_ID, record=record, field=field)
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TraceParseError(MSG_BAD_ID, record=record, field=field)
    return str(value)


def span_from_row(obj: Any, *, record: str, position: int) -> Span:
    row = require_object(obj, record=record)
    raw_context = row.get("context")
    context: dict[str, Any] = raw_context if isinstance(raw_context, dict) else {}
    attributes: dict[str, Any] = {}
    raw_attributes = row.get("attributes")
    if raw_attributes is not None:
        flatten(require_object(raw_attributes, record=record, field="attributes"), "", attributes)
    for key, value in row.items():
        if key.startswith("attributes."):
            flatten(value, key.removeprefix("attributes."), attributes)
    kind = row.get("span_kind") or attributes.get("openinference.span.kind") or ""
    if not isinstance(kind, str):
        kind = ""
    status = row.get("status_code") or ""
    if not isinstance(status, str) or status.upper() not in _STATUS:
        raise TraceParseError(MSG_BAD_STATUS, record=record, field="status_code")
    name = optional_str(row, "name", record=record)
    extra = {k: v for k, v in row.items() if k not in ROW_KEYS and not k.startswith("attributes.")}
    if kind:
        extra["span_kind"] = kind
    return Span(
        trace_id=_id(
            context.get("trace_id", row.get("context.trace_id")), record, "context.trace_id", True
        ),
        span_id=_id(
            context.get("span_id", row.get("context.span_id")), record, "context.span_id", True
        ),
        parent_id=_id(row.get("parent_id"), record, "parent_id", False),
        name=name,
        start_ns=_time(row.get("start_time"), record, "start_time"),
        end_ns=_time(row.get("end_time"), record, "end_time"),
        status=_STATUS[status.upper()],
        status_message=optional_str(row, "status_message", record=record),
        attributes=to_genai(kind, name, attributes),
        extra=extra,
        record=record,
        position=position,
    )


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    spans = TraceBuffer()
    try:
        for number, line in iter_lines(stream, max_line_bytes=limits.max_line_bytes):
            record = f"line {number}"
            spans.add(span_from_row(loads(line, record=record), record=record, position=len(spans)))
        if not len(spans):
            raise TraceParseError(MSG_NO_SPANS, record="document")
        for trace_id, trace_spans in spans.traces():
            # The trace-level rules (task text from the root's input.value, faultline.*
            # attributes, evaluation events) are the OTLP receiver's.
            yield trace_record(
                trace_spans,
                trace_id=trace_id,
                resource={},
                extra={"format": FORMAT},
                id_field="context.span_id",
            )
    finally:
        spans.close()
