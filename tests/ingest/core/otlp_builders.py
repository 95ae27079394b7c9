"""Small builders of OTLP requests for the receiver tests (protobuf and OTLP/JSON)."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span_id(n: int) -> str:
    return f"{n:016x}"


def json_attributes(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    def value(item: Any) -> dict[str, Any]:
        if isinstance(item, bool):
            return {"boolValue": item}
        if isinstance(item, int):
            return {"intValue": str(item)}
        if isinstance(item, float):
            return {"doubleValue": item}
        return {"stringValue": str(item)}

    return [{"key": key, "value": value(item)} for key, item in attributes.items()]


def json_span(
    n: int,
    *,
    parent: int | None = None,
    name: str = "span",
    start: int = 0,
    end: int | None = None,
    attributes: dict[str, Any] | None = None,
    trace: str = TRACE,
    **extra: Any,
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id(n),
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start),
        "attributes": json_attributes(attributes or {}),
        **extra,
    }
    if parent is not None:
        span["parentSpanId"] = span_id(parent)
    if end is not None:
        span["endTimeUnixNano"] = str(1_700_000_000_000_000_000 + end)
    return span


def json_body(spans: list[dict[str, Any]], resource: dict[str, Any] | None = None) -> bytes:
    block = {
        "resource": {"attributes": json_attributes(resource or {"service.name": "shop"})},
        "scopeSpans": [{"scope": {"name": "tests"}, "spans": spans}],
    }
    return json.dumps({"resourceSpans": [block]}).encode()


def protobuf_body(spans: list[dict[str, Any]], resource: dict[str, Any] | None = None) -> bytes:
    """The same request as json_body, as protobuf."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    block = request.resource_spans.add()
    for key, item in (resource or {"service.name": "shop"}).items():
        attribute = block.resource.attributes.add()
        attribute.key = key
        attribute.value.string_value = str(item)
    scope = block.scope_spans.add()
    scope.scope.name = "tests"
    for raw in spans:
        span = scope.spans.add()
        span.trace_id = bytes.fromhex(raw["traceId"])
        span.span_id = bytes.fromhex(raw["spanId"])
        if raw.get("parentSpanId"):
            span.parent_span_id = bytes.fromhex(raw["parentSpanId"])
        span.name = raw["name"]
        span.start_time_unix_nano = int(raw["startTimeUnixNano"])
        if raw.get("endTimeUnixNano"):
            span.end_time_unix_nano = int(raw["endTimeUnixNano"])
        if raw.get("status"):
            span.status.code = raw["status"]["code"]
            span.status.message = raw["status"].get("message", "")
        for pair in raw["attributes"]:
            attribute = span.attributes.add()
            attribute.key = pair["key"]
            ((kind, item),) = pair["value"].items()
            if kind == "stringValue":
                attribute.value.string_value = item
            elif kind == "intValue":
                attribute.value.int_value = int(item)
            elif kind == "doubleValue":
                attribute.value.double_value = item
            else:
                attribute.value.bool_value = item
    return request.SerializeToString()
