"""A decoded protobuf ``ExportTraceServiceRequest`` in the OTLP/JSON shape, fast.

The receiver reads protobuf and OTLP/JSON bodies with one reader (ingest.core.otlp_wire),
so protobuf is first turned into the JSON shape. ``json_format.MessageToDict`` does that
generically, walking every field through descriptors in Python: it was the largest cost
of a request (0.8 of 2.4 s for 5,200 spans). This walks the hot fields of a span (ids,
name, times, attributes, status, flags) directly and leaves the rare ones (events, links,
resource, scope) to ``MessageToDict``; the result is the same dict, with span ids already
in hex (tests/ingest/core/test_otlp_protobuf.py compares the two on every kind of field).
A span with a field this module does not know is converted by ``MessageToDict`` whole.

Example:
    >>> from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    >>> request = trace_service_pb2.ExportTraceServiceRequest()
    >>> span = request.resource_spans.add().scope_spans.add().spans.add()
    >>> span.span_id, span.name, span.start_time_unix_nano = bytes.fromhex("00f067aa0ba902b7"), "chat", 5
    >>> attribute = span.attributes.add()
    >>> attribute.key, attribute.value.int_value = "tokens", 7
    >>> request_as_json(request)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    [{'spanId': '00f067aa0ba902b7', 'name': 'chat', 'startTimeUnixNano': '5', 'attributes': [{'key': 'tokens', 'value': {'intValue': '7'}}]}]
"""

from __future__ import annotations

import base64
import math
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

LINK_ID_KEYS = ("traceId", "spanId")
ID_FIELDS = {"trace_id": "traceId", "span_id": "spanId", "parent_span_id": "parentSpanId"}
RESOURCE_SPANS_FIELDS = frozenset({"resource", "scope_spans", "schema_url"})
SCOPE_SPANS_FIELDS = frozenset({"scope", "spans", "schema_url"})


def _as_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, use_integers_for_enums=True)


def _hex_of_base64(value: Any) -> str:
    return base64.b64decode(value).hex() if isinstance(value, str) else ""


def _double(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def any_value_json(value: Any) -> dict[str, Any]:
    """An ``AnyValue`` as MessageToDict writes it."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return {"stringValue": value.string_value}
    if kind == "int_value":
        return {"intValue": str(value.int_value)}
    if kind == "bool_value":
        return {"boolValue": value.bool_value}
    if kind == "double_value":
        return {"doubleValue": _double(value.double_value)}
    if kind == "array_value":
        items = value.array_value.values
        return {"arrayValue": {"values": [any_value_json(item) for item in items]} if items else {}}
    if kind == "kvlist_value":
        pairs = value.kvlist_value.values
        return {"kvlistValue": {"values": key_values_json(pairs)} if pairs else {}}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
    return {}


def key_values_json(pairs: Any) -> list[dict[str, Any]]:
    """Repeated ``KeyValue`` (attributes) as MessageToDict writes them."""
    converted = []
    for pair in pairs:
        item: dict[str, Any] = {}
        if pair.key:
            item["key"] = pair.key
        if pair.HasField("value"):
            item["value"] = any_value_json(pair.value)
        converted.append(item)
    return converted


def _span_field(name: str, value: Any) -> tuple[str, Any] | None:
    """One set field of a Span in the JSON shape, or None for a field not known here."""
    if name in ID_FIELDS:
        return ID_FIELDS[name], value.hex()
    if name in ("start_time_unix_nano", "end_time_unix_nano"):
        return ("startTimeUnixNano" if name[0] == "s" else "endTimeUnixNano"), str(value)
    if name == "attributes":
        return "attributes", key_values_json(value)
    if name == "status":
        status: dict[str, Any] = {}
        if value.message:
            status["message"] = value.message
        if value.code:
            status["code"] = value.code
        return "status", status
    if name in ("events", "links"):
        items = [_as_dict(item) for item in value]
        if name == "links":
            for link in items:
                for key in LINK_ID_KEYS:
                    if key in link:
                        link[key] = _hex_of_base64(link[key])
        return name, items
    simple = {
        "name": "name",
        "kind": "kind",
        "flags": "flags",
        "trace_state": "traceState",
        "dropped_attributes_count": "droppedAttributesCount",
        "dropped_events_count": "droppedEventsCount",
        "dropped_links_count": "droppedLinksCount",
    }
    return (simple[name], value) if name in simple else None


def span_json(span: Any) -> dict[str, Any]:
    """One ``Span`` in the OTLP/JSON shape, ids in hex."""
    converted: dict[str, Any] = {}
    for descriptor, value in span.ListFields():
        field = _span_field(descriptor.name, value)
        if field is None:
            return _slow_span_json(span)
        converted[field[0]] = field[1]
    return converted


def _slow_span_json(span: Any) -> dict[str, Any]:
    converted = _as_dict(span)
    for key in ("traceId", "spanId", "parentSpanId"):
        if key in converted:
            converted[key] = _hex_of_base64(converted[key])
    for link in converted.get("links", []):
        for key in LINK_ID_KEYS:
            if key in link:
                link[key] = _hex_of_base64(link[key])
    return converted


def _scope_spans_json(scope_spans: Any) -> dict[str, Any]:
    converted: dict[str, Any] = {}
    if any(d.name not in SCOPE_SPANS_FIELDS for d, _ in scope_spans.ListFields()):
        converted = {k: v for k, v in _as_dict(scope_spans).items() if k != "spans"}
    if scope_spans.HasField("scope"):
        converted["scope"] = _as_dict(scope_spans.scope)
    if scope_spans.spans:
        converted["spans"] = [span_json(span) for span in scope_spans.spans]
    if scope_spans.schema_url:
        converted["schemaUrl"] = scope_spans.schema_url
    return converted


def _resource_spans_json(block: Any) -> dict[str, Any]:
    converted: dict[str, Any] = {}
    if any(d.name not in RESOURCE_SPANS_FIELDS for d, _ in block.ListFields()):
        converted = {k: v for k, v in _as_dict(block).items() if k != "scopeSpans"}
    if block.HasField("resource"):
        converted["resource"] = _as_dict(block.resource)
    if block.scope_spans:
        converted["scopeSpans"] = [_scope_spans_json(scope) for scope in block.scope_spans]
    if block.schema_url:
        converted["schemaUrl"] = block.schema_url
    return converted


def request_as_json(request: Any) -> dict[str, Any]:
    """A decoded ``ExportTraceServiceRequest`` as OTLP/JSON (span and link ids in hex)."""
    if not request.resource_spans:
        return {}
    return {"resourceSpans": [_resource_spans_json(block) for block in request.resource_spans]}
