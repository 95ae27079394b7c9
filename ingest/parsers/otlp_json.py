"""OTLP/JSON traces with OpenTelemetry GenAI attributes.

The wire shape is ``{resourceSpans: [{resource, scopeSpans: [{scope, spans: [...]}]}]}``;
a file may hold one such export or several, one per line (the collector's file exporter).
Each span has hex ``traceId``/``spanId``/``parentSpanId``, ``startTimeUnixNano`` /
``endTimeUnixNano`` as decimal strings, typed attribute values (``stringValue``,
``intValue``, ``doubleValue``, ``boolValue``, ``bytesValue``, ``arrayValue``,
``kvlistValue``) and ``status: {code, message}``.

One trace id is one trajectory. The resourceSpans blocks are streamed one at a time, but
the spans of a trace may be spread over the whole file, so the file's spans are held
(decoded) until the end: the file is refused above ``limits.max_document_bytes``.
The wire shape is read by ingest.core.otlp_wire, the trace is turned into a rollout by
ingest.core.otlp_trace (steps: ingest.core.genai), the same code the OTLP/HTTP receiver
uses. The resource and scope attributes go to ``metadata.resource`` / the step's
``metadata.span.scope``; any other span field (kind, events, links, flags, ...) to the
step's ``metadata.span``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonstream import iter_document
from ingest.core.otlp_trace import trace_record
from ingest.core.otlp_wire import (
    MSG_BAD_STATUS,
    MSG_BAD_VALUE,
    any_value,
    attributes_dict,
    block_spans,
    span_from_object,
)
from ingest.core.records import TrajectoryRecord
from ingest.core.spill import TraceBuffer
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "otlp_json"
LABEL = "OTLP/JSON traces (OpenTelemetry GenAI)"
EXTENSIONS = (".json", ".jsonl")

MSG_NO_SPANS = "No spans found under resourceSpans[].scopeSpans[].spans[]."

__all__ = ["MSG_BAD_STATUS", "MSG_BAD_VALUE", "any_value", "attributes_dict", "span_from_object"]


def sniff(head: bytes, filename: str) -> bool:
    start = head.lstrip()[:1]
    return start == b"{" and b'"resourceSpans"' in head


def _block_spans(
    block: Any, index: int, spans: TraceBuffer, resources: dict[str, dict[str, Any]]
) -> None:
    for span, resource in block_spans(block, index=index, position=len(spans)):
        # A resource that differs from the trace's first one stays with the span.
        if resources.setdefault(span.trace_id, resource) != resource:
            span.extra["resource"] = resource
        spans.add(span)


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    spans = TraceBuffer()
    try:
        yield from _parse(stream, spans, limits)
    finally:
        spans.close()


def _parse(
    stream: IO[bytes], spans: TraceBuffer, limits: ParseLimits
) -> Iterator[TrajectoryRecord]:
    resources: dict[str, dict[str, Any]] = {}
    document: dict[str, Any] = {}
    index = 0
    # Memory is bounded by one resourceSpans block plus the span buffer, which spills to
    # disk, so the file as a whole needs no cap here (uploads have their own size limit).
    for kind, key, value in iter_document(
        stream,
        stream_keys={"resourceSpans"},
        max_item_bytes=limits.max_line_bytes,
        multiple=True,
    ):
        if kind == "item":
            _block_spans(value, index, spans, resources)
            index += 1
        else:
            document[key] = value
    if not len(spans):
        raise TraceParseError(MSG_NO_SPANS, record="document", field="resourceSpans")
    for trace_id, trace_spans in spans.traces():
        yield trace_record(
            trace_spans,
            trace_id=trace_id,
            resource=resources.get(trace_id, {}),
            extra={"format": FORMAT} | ({"document": document} if document else {}),
        )
