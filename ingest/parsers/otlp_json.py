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
How spans become steps, the agent name and the outcome: see ingest.core.genai.
The resource and scope attributes go to ``metadata.resource`` / the step's
``metadata.span.scope``; any other span field (kind, events, links, flags, ...) to the
step's ``metadata.span``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.genai import genai_trajectory
from ingest.core.jsonstream import iter_document
from ingest.core.records import TrajectoryRecord
from ingest.core.spans import STATUS_ERROR, STATUS_OK, STATUS_UNSET, Span, parse_ns
from ingest.core.spill import TraceBuffer
from ingest.core.validate import (
    optional_list,
    optional_object,
    optional_str,
    require_object,
    require_str,
)
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "otlp_json"
LABEL = "OTLP/JSON traces (OpenTelemetry GenAI)"
EXTENSIONS = (".json", ".jsonl")

MSG_BAD_VALUE = "Expected an OTLP AnyValue object (stringValue, intValue, doubleValue, boolValue, bytesValue, arrayValue or kvlistValue)."
MSG_BAD_STATUS = "Expected a status code: 0/1/2 or STATUS_CODE_UNSET/OK/ERROR."
MSG_NO_SPANS = "No spans found under resourceSpans[].scopeSpans[].spans[]."

_STATUS = {
    0: STATUS_UNSET,
    1: STATUS_OK,
    2: STATUS_ERROR,
    "STATUS_CODE_UNSET": STATUS_UNSET,
    "STATUS_CODE_OK": STATUS_OK,
    "STATUS_CODE_ERROR": STATUS_ERROR,
    "UNSET": STATUS_UNSET,
    "OK": STATUS_OK,
    "ERROR": STATUS_ERROR,
}
SPAN_KEYS = {
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "attributes",
    "status",
}


def sniff(head: bytes, filename: str) -> bool:
    start = head.lstrip()[:1]
    return start == b"{" and b'"resourceSpans"' in head


def any_value(value: Any, *, record: str, field: str) -> Any:
    """An OTLP AnyValue as a plain JSON value."""
    if not isinstance(value, dict):
        raise TraceParseError(MSG_BAD_VALUE, record=record, field=field)
    if not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        raw = value["intValue"]
        if isinstance(raw, bool):
            raise TraceParseError(MSG_BAD_VALUE, record=record, field=field)
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise TraceParseError(MSG_BAD_VALUE, record=record, field=field) from None
    if "doubleValue" in value:
        raw = value["doubleValue"]
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise TraceParseError(MSG_BAD_VALUE, record=record, field=field) from None
        return number if math.isfinite(number) else str(raw)
    if "bytesValue" in value:
        return value["bytesValue"]
    if "arrayValue" in value:
        array = require_object(value["arrayValue"], record=record, field=field + ".arrayValue")
        items = optional_list(array, "values", record=record, prefix=field + ".arrayValue.")
        return [
            any_value(item, record=record, field=f"{field}[{i}]") for i, item in enumerate(items)
        ]
    if "kvlistValue" in value:
        kvlist = require_object(value["kvlistValue"], record=record, field=field + ".kvlistValue")
        pairs = optional_list(kvlist, "values", record=record, prefix=field + ".kvlistValue.")
        return attributes_dict(pairs, record=record, field=field)
    raise TraceParseError(MSG_BAD_VALUE, record=record, field=field)


def attributes_dict(pairs: list[Any], *, record: str, field: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for position, raw in enumerate(pairs):
        where = f"{field}[{position}]"
        pair = require_object(raw, record=record, field=where)
        key = require_str(pair, "key", record=record, prefix=where + ".")
        attributes[key] = any_value(pair.get("value", {}), record=record, field=f"{field}.{key}")
    return attributes


def _status(raw: Any, record: str) -> tuple[str, str]:
    status = optional_object({"status": raw}, "status", record=record)
    code = status.get("code", 0)
    if isinstance(code, bool) or code not in _STATUS:
        raise TraceParseError(MSG_BAD_STATUS, record=record, field="status.code")
    return _STATUS[code], optional_str(status, "message", record=record, prefix="status.")


def _hex_id(value: str) -> str:
    return value.lower() if all(c in "0123456789abcdefABCDEF" for c in value) else value


def span_from_object(raw: Any, *, record: str, position: int, scope: dict[str, Any]) -> Span:
    obj = require_object(raw, record=record)
    status, message = _status(obj.get("status"), record)
    extra = {k: v for k, v in obj.items() if k not in SPAN_KEYS}
    if scope:
        extra["scope"] = scope
    return Span(
        trace_id=_hex_id(require_str(obj, "traceId", record=record)),
        span_id=_hex_id(require_str(obj, "spanId", record=record)),
        parent_id=_hex_id(optional_str(obj, "parentSpanId", record=record)),
        name=optional_str(obj, "name", record=record),
        start_ns=parse_ns(obj.get("startTimeUnixNano"), record=record, field="startTimeUnixNano"),
        end_ns=parse_ns(obj.get("endTimeUnixNano"), record=record, field="endTimeUnixNano"),
        status=status,
        status_message=message,
        attributes=attributes_dict(
            optional_list(obj, "attributes", record=record), record=record, field="attributes"
        ),
        extra=extra,
        record=record,
        position=position,
    )


def _block_spans(
    block: Any, index: int, spans: TraceBuffer, resources: dict[str, dict[str, Any]]
) -> None:
    where = f"resourceSpans[{index}]"
    obj = require_object(block, record=where)
    resource_obj = optional_object(obj, "resource", record=where)
    resource = attributes_dict(
        optional_list(resource_obj, "attributes", record=where, prefix="resource."),
        record=where,
        field="resource.attributes",
    )
    block_extra = {k: v for k, v in obj.items() if k not in {"resource", "scopeSpans"}}
    block_extra.update({f"resource.{k}": v for k, v in resource_obj.items() if k != "attributes"})
    for s_index, raw_scope in enumerate(optional_list(obj, "scopeSpans", record=where)):
        scope_where = f"{where}.scopeSpans[{s_index}]"
        scope_spans = require_object(raw_scope, record=scope_where)
        scope_obj = dict(optional_object(scope_spans, "scope", record=scope_where))
        scope_obj.update(
            {f"scopeSpans.{k}": v for k, v in scope_spans.items() if k not in {"scope", "spans"}}
        )
        if "attributes" in scope_obj:
            scope_obj["attributes"] = attributes_dict(
                optional_list(scope_obj, "attributes", record=scope_where, prefix="scope."),
                record=scope_where,
                field="scope.attributes",
            )
        for k_index, raw_span in enumerate(optional_list(scope_spans, "spans", record=scope_where)):
            span = span_from_object(
                raw_span,
                record=f"{scope_where}.spans[{k_index}]",
                position=len(spans),
                scope=scope_obj,
            )
            # Unusual resource fields, or a resource that differs from the trace's first one,
            # stay with the span.
            if block_extra:
                span.extra["resource_block"] = block_extra
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
        resource = resources.get(trace_id, {})
        record = genai_trajectory(
            trace_spans,
            trace_id=trace_id,
            id_field="spanId",
            extra={"format": FORMAT, "resource": resource}
            | ({"document": document} if document else {}),
        )
        if not record.agent_system and isinstance(resource.get("service.name"), str):
            record.agent_system = resource["service.name"]
        yield record
