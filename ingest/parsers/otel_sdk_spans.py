"""OpenTelemetry SDK span lists: ``{spans: [...], final_output}`` as any-agent saves its traces.

Each span is the Python SDK's ``ReadableSpan.to_json()``: ``name``, ``kind``,
``context: {trace_id, span_id}`` and ``parent: {span_id}`` with *integer* ids (a trace
id becomes the 32 hex digits OTel backends show; ``0x`` text ids lose the prefix),
``start_time``/``end_time`` as integer nanoseconds, ``status: {status_code, description}``,
flat ``attributes`` (GenAI conventions; any-agent's ``gen_ai.operation.name`` is
call_llm / execute_tool / invoke_agent, ``gen_ai.input.messages`` and ``gen_ai.output``
hold JSON text, ``gen_ai.tool.args`` the arguments), ``events``, ``links``, ``resource``.

One trace id is one trajectory (any-agent files hold one run). Spans are streamed one at a
time and kept decoded until the end, so the file is refused above
``limits.max_document_bytes``. ``final_output`` and any other top-level field go to the
trajectory's ``metadata.document``; the resource to ``metadata.resource``. Steps, agent
name and outcome: see ingest.core.genai; the trace-level rules (faultline.* attributes,
evaluation events, provider): ingest.core.otlp_trace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonstream import iter_document
from ingest.core.otlp_trace import trace_record
from ingest.core.records import TrajectoryRecord
from ingest.core.spans import STATUS_ERROR, STATUS_OK, STATUS_UNSET, Span, group_by_trace, parse_ns
from ingest.core.validate import optional_object, optional_str, require_object
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "otel_sdk_spans"
LABEL = "OpenTelemetry SDK span list (any-agent)"
EXTENSIONS = (".json",)

#: An integer trace id is shown as this many hex digits (W3C trace context: 16 bytes).
TRACE_ID_HEX_DIGITS = 32
MSG_BAD_ID = "Expected an integer or hex string id."
_HEX = re.compile(r"[0-9a-f]+")
MSG_BAD_STATUS = "Expected status_code unset, ok or error."
MSG_NO_SPANS = "The document has no spans."

_STATUS = {
    "unset": STATUS_UNSET,
    "ok": STATUS_OK,
    "error": STATUS_ERROR,
    "statuscode.unset": STATUS_UNSET,
    "statuscode.ok": STATUS_OK,
    "statuscode.error": STATUS_ERROR,
}
SPAN_KEYS = {
    "name",
    "context",
    "parent",
    "parent_id",
    "start_time",
    "end_time",
    "status",
    "attributes",
    "resource",
}


def sniff(head: bytes, filename: str) -> bool:
    start = head.lstrip()[:1]
    return (
        start == b"{"
        and re.search(rb'"spans"\s*:\s*\[', head) is not None
        and b'"span_id"' in head
        and b'"resourceSpans"' not in head
    )


def _id(value: Any, *, record: str, field: str, required: bool, hex_width: int = 0) -> str:
    """An id as text: ``0x`` dropped (the SDK's own ``to_json`` writes ``0x5b8a...``), and
    an integer as ``hex_width`` hex digits when one is given (trace ids: the 32 digits
    every OTel backend and the live receiver show), else as written."""
    if value is None or value == "":
        if required:
            raise TraceParseError(MSG_BAD_ID, record=record, field=field)
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TraceParseError(MSG_BAD_ID, record=record, field=field)
    if isinstance(value, int) and hex_width and value >= 0:
        return format(value, f"0{hex_width}x")
    text = str(value).lower()
    text = text[2:] if text.startswith("0x") and len(text) > 2 else text
    if not _HEX.fullmatch(text):
        # "nothex" became a rollout of its own, the real trace one step short.
        raise TraceParseError(MSG_BAD_ID, record=record, field=field)
    return text


def span_from_object(raw: Any, *, position: int) -> tuple[Span, dict[str, Any]]:
    record = f"spans[{position}]"
    obj = require_object(raw, record=record)
    context = require_object(obj.get("context"), record=record, field="context")
    parent = optional_object(obj, "parent", record=record)
    status = optional_object(obj, "status", record=record)
    code = str(status.get("status_code") or "unset").lower()
    if code not in _STATUS:
        raise TraceParseError(MSG_BAD_STATUS, record=record, field="status.status_code")
    description = status.get("description")
    attributes = require_object(obj.get("attributes") or {}, record=record, field="attributes")
    extra = {k: v for k, v in obj.items() if k not in SPAN_KEYS}
    extra["context"] = {k: v for k, v in context.items() if k not in {"trace_id", "span_id"}}
    parent_rest = {k: v for k, v in parent.items() if k not in {"span_id", "trace_id"}}
    if parent_rest:
        extra["parent"] = parent_rest
    resource = optional_object(obj, "resource", record=record)
    span = Span(
        trace_id=_id(
            context.get("trace_id"),
            record=record,
            field="context.trace_id",
            required=True,
            hex_width=TRACE_ID_HEX_DIGITS,
        ),
        span_id=_id(context.get("span_id"), record=record, field="context.span_id", required=True),
        parent_id=_id(
            parent.get("span_id", obj.get("parent_id")),
            record=record,
            field="parent.span_id",
            required=False,
        ),
        name=optional_str(obj, "name", record=record),
        start_ns=parse_ns(obj.get("start_time"), record=record, field="start_time"),
        end_ns=parse_ns(obj.get("end_time"), record=record, field="end_time"),
        status=_STATUS[code],
        status_message=description if isinstance(description, str) else "",
        attributes=dict(attributes),
        extra=extra,
        record=record,
        position=position,
    )
    return span, resource


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    spans: list[Span] = []
    resources: dict[str, dict[str, Any]] = {}
    document: dict[str, Any] = {}
    for kind, key, value in iter_document(
        stream,
        stream_keys={"spans"},
        max_item_bytes=limits.max_line_bytes,
        max_total_bytes=limits.max_document_bytes,
        big_integers=True,
    ):
        if kind == "item":
            span, resource = span_from_object(value, position=len(spans))
            if resources.setdefault(span.trace_id, resource) != resource:
                span.extra["resource"] = resource
            spans.append(span)
        else:
            document[key] = value
    if not spans:
        raise TraceParseError(MSG_NO_SPANS, record="document", field="spans")
    for trace_id, trace_spans in group_by_trace(spans).items():
        yield trace_record(
            trace_spans,
            trace_id=trace_id,
            resource=resources.get(trace_id, {}),
            extra={"format": FORMAT, "document": document},
            id_field="context.span_id",
        )
