"""Protobuf ``resourceSpans`` straight to :class:`ingest.core.spans.Span`, for the assembly.

The one OTLP reader is ingest.core.otlp_wire, over the OTLP/JSON shape; protobuf reaches
it through ingest.core.otlp_protobuf. Going through the JSON shape cost about two thirds
of reading a stored span (issue 15's benchmark: the assembly was the slowest stage), so
the common case is read here directly: the fields every span has (ids, name, times,
attributes, status, kind, flags), a resource and a scope with attributes, name and
version. Anything else (events, links, trace state, dropped counts, an attribute without
a key, a field this module does not know) sends that span, or that block, through the
JSON shape and the one reader, so the result is always what the reader gives:
tests/ingest/core/test_otlp_protobuf_spans.py compares the two on every kind of field.

Example:
    >>> from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    >>> request = trace_service_pb2.ExportTraceServiceRequest()
    >>> span = request.resource_spans.add().scope_spans.add().spans.add(name="chat", kind=3)
    >>> span.trace_id, span.span_id = b"\\x01" * 16, b"\\x02" * 8
    >>> [(s.name, s.extra) for s, _ in request_spans(request)]
    [('chat', {'kind': 3})]
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from ingest.core.otlp_protobuf import request_as_json, span_json
from ingest.core.otlp_wire import document_spans, span_from_object
from ingest.core.spans import STATUS_ERROR, STATUS_OK, STATUS_UNSET, Span

STATUS_BY_CODE = {0: STATUS_UNSET, 1: STATUS_OK, 2: STATUS_ERROR}
HOT_SPAN_FIELDS = frozenset(
    {
        "trace_id",
        "span_id",
        "parent_span_id",
        "name",
        "kind",
        "flags",
        "start_time_unix_nano",
        "end_time_unix_nano",
        "attributes",
        "status",
    }
)
SCOPE_FIELDS = frozenset({"name", "version", "attributes"})


# Every other field of the installed Span message, read from its descriptor: checking
# these few is a fifth of the cost of listing the fields a span has set.
_OTHER_SPAN_FIELDS = tuple(
    field.name for field in trace_pb2.Span.DESCRIPTOR.fields if field.name not in HOT_SPAN_FIELDS
)


class _Unusual(Exception):
    """Something the direct path leaves to the one reader."""


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        number = value.double_value
        if math.isfinite(number):
            return number
        return "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def _attributes(pairs: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for pair in pairs:
        if not pair.key:
            raise _Unusual  # the reader refuses it, naming the field
        attributes[pair.key] = _value(pair.value)  # unset: no oneof chosen, so None
    return attributes


def _span(raw: Any, *, record: str, position: int, scope: dict[str, Any]) -> Span:
    extra: dict[str, Any] = {}
    for name in _OTHER_SPAN_FIELDS:
        if getattr(raw, name):  # set (proto3: a scalar at its default is unset)
            raise _Unusual
    code = raw.status.code
    if code not in STATUS_BY_CODE:
        raise _Unusual
    if raw.kind:
        extra["kind"] = raw.kind
    if raw.flags:
        extra["flags"] = raw.flags
    if scope:
        extra["scope"] = scope
    return Span(
        trace_id=raw.trace_id.hex(),
        span_id=raw.span_id.hex(),
        parent_id=raw.parent_span_id.hex(),
        name=raw.name,
        start_ns=raw.start_time_unix_nano or None,
        end_ns=raw.end_time_unix_nano or None,
        status=STATUS_BY_CODE[code],
        status_message=raw.status.message,
        attributes=_attributes(raw.attributes),
        extra=extra,
        record=record,
        position=position,
    )


def _scope(scope_spans: Any) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    if scope_spans.HasField("scope"):
        for descriptor, _ in scope_spans.scope.ListFields():
            if descriptor.name not in SCOPE_FIELDS:
                raise _Unusual
        info = scope_spans.scope
        if info.name:
            scope["name"] = info.name
        if info.version:
            scope["version"] = info.version
        if info.attributes:
            scope["attributes"] = _attributes(info.attributes)
    if scope_spans.schema_url:
        scope["scopeSpans.schemaUrl"] = scope_spans.schema_url
    return scope


def _resource(block: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The block's resource attributes and its unusual fields (schema URL)."""
    for descriptor, _ in block.ListFields():
        if descriptor.name not in ("resource", "scope_spans", "schema_url"):
            raise _Unusual
    for descriptor, _ in block.resource.ListFields():
        if descriptor.name != "attributes":
            raise _Unusual
    extra = {"schemaUrl": block.schema_url} if block.schema_url else {}
    return _attributes(block.resource.attributes), extra


class _Memo:
    """Resources and scopes already read in this request, by their bytes: stored rows are
    one block each, so a trace's blocks repeat the same resource and scope. The block
    before is checked first, by message equality (in C), which is cheaper than
    serialising an envelope for the key: consecutive blocks nearly always share both."""

    def __init__(self) -> None:
        self.read: dict[bytes, Any] = {}
        self.last: dict[str, tuple[Any, str, Any]] = {}

    def _get(
        self,
        kind: str,
        message: Any,
        schema_url: str,
        envelope: Callable[[], Any],
        read: Callable[[], Any],
    ) -> Any:
        last = self.last.get(kind)
        if last is not None and last[1] == schema_url and last[0] == message:
            return last[2]
        key = kind.encode() + envelope().SerializeToString(deterministic=True)
        if key not in self.read:
            self.read[key] = read()
        self.last[kind] = (message, schema_url, self.read[key])
        return self.read[key]

    def resource(self, block: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        result: tuple[dict[str, Any], dict[str, Any]] = self._get(
            "resource",
            block.resource,
            block.schema_url,
            lambda: trace_pb2.ResourceSpans(resource=block.resource, schema_url=block.schema_url),
            lambda: _resource(block),
        )
        return result

    def scope(self, scope_spans: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._get(
            "scope",
            scope_spans.scope,
            scope_spans.schema_url,
            lambda: trace_pb2.ScopeSpans(
                scope=scope_spans.scope, schema_url=scope_spans.schema_url
            ),
            lambda: _scope(scope_spans),
        )
        return result


def _block_spans(
    block: Any, index: int, position: int, memo: _Memo
) -> list[tuple[Span, dict[str, Any]]]:
    resource, block_extra = memo.resource(block)
    pairs: list[tuple[Span, dict[str, Any]]] = []
    for s_index, scope_spans in enumerate(block.scope_spans):
        scope = memo.scope(scope_spans)
        where = f"resourceSpans[{index}].scopeSpans[{s_index}]"
        for k_index, raw in enumerate(scope_spans.spans):
            record = f"{where}.spans[{k_index}]"
            number = position + len(pairs)
            try:
                span = _span(raw, record=record, position=number, scope=scope)
            except _Unusual:
                span = span_from_object(span_json(raw), record=record, position=number, scope=scope)
            if block_extra:
                span.extra["resource_block"] = block_extra
            pairs.append((span, resource))
    return pairs


def request_spans(request: Any, *, position: int = 0) -> list[tuple[Span, dict[str, Any]]]:
    """The spans of a decoded ``ExportTraceServiceRequest`` with their resource attributes,
    as ingest.core.otlp_wire.document_spans reads its OTLP/JSON shape."""
    pairs: list[tuple[Span, dict[str, Any]]] = []
    memo = _Memo()
    for index, block in enumerate(request.resource_spans):
        try:
            pairs.extend(_block_spans(block, index, position + len(pairs), memo))
        except _Unusual:
            pairs.extend(_slow_block_spans(block, index, position + len(pairs)))
    return pairs


def _slow_block_spans(block: Any, index: int, position: int) -> list[tuple[Span, dict[str, Any]]]:
    """One block through the JSON shape and the one reader."""
    single = trace_service_pb2.ExportTraceServiceRequest()
    single.resource_spans.append(block)
    converted = request_as_json(single).get("resourceSpans", [{}])
    return document_spans(converted, position=position, first_index=index)
