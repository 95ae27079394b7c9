"""Spans as the OTLP receiver stores them: each one as it arrived, in its wire encoding.

The receiver does not decode a span's content in the request: it checks what it must
(ids storable, the request readable), then stores every span as a one-span
``resourceSpans`` block in the encoding it came in (``protobuf``: a serialized
``ResourceSpans``; ``json``: the OTLP/JSON object), with its resource and scope, so one
stored row is self-contained and exactly what the exporter sent. The assembly decodes the
rows of a trace with the one OTLP reader (ingest.core.otlp_wire; for protobuf its
direct form for the common fields, ingest.core.otlp_protobuf_spans): decoding once per assembly instead of once per
request and again per assembly was most of the receiver's cost (issue 15's benchmark).

Rows stored before this (``legacy``: the decoded span as JSON,
ingest.core.otlp_trace.span_to_json) are still read.

Example:
    >>> from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    >>> request = trace_service_pb2.ExportTraceServiceRequest()
    >>> block = request.resource_spans.add()
    >>> attribute = block.resource.attributes.add()
    >>> attribute.key, attribute.value.string_value = "service.name", "shop"
    >>> span = block.scope_spans.add().spans.add(name="chat", end_time_unix_nano=9)
    >>> span.trace_id, span.span_id = b"\\x01" * 16, b"\\x02" * 8
    >>> (incoming,), rejected = protobuf_request_spans(request)
    >>> incoming.span_id, incoming.root_ended, rejected
    ('0202020202020202', True, 0)
    >>> [(s.name, resource) for s, resource in stored_spans([(incoming.encoding, incoming.payload, None)])]
    [('chat', {'service.name': 'shop'})]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from ingest.core.errors import TraceParseError
from ingest.core.otlp_protobuf_spans import request_spans
from ingest.core.otlp_trace import span_from_json
from ingest.core.otlp_wire import MSG_BAD_STATUS, document_spans
from ingest.core.spans import Span
from ingest.core.storable import storable_value

ENCODING_PROTOBUF = "protobuf"
ENCODING_JSON = "json"
ENCODING_LEGACY = ""
STATUS_CODES = frozenset({0, 1, 2})
SPAN_RECORD = "resourceSpans[{block}].scopeSpans[{scope}].spans[{span}]"
SPANS_FIELD_TAG = b"\x12"  # field 2, length-delimited


@dataclass(frozen=True)
class IncomingSpan:
    """One span accepted by the receiver, ready to store."""

    trace_id: str
    span_id: str
    root_ended: bool
    encoding: str
    payload: bytes


def _storable_ids(span: Any) -> bool:
    """A trace id of 16 bytes and a span id of 8, not all zero; a parent of 8 if any."""
    parent = span.parent_span_id
    return (
        len(span.trace_id) == 16
        and any(span.trace_id)
        and len(span.span_id) == 8
        and any(span.span_id)
        and (not parent or (len(parent) == 8 and any(parent)))
    )


def _varint(number: int) -> bytes:
    """A protobuf base-128 varint.

    Example:
        >>> _varint(1), _varint(300)
        (b'\\x01', b'\\xac\\x02')
    """
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _with_spans_field(head: bytes, item: bytes) -> bytes:
    """``head`` (a serialised message) with ``item`` added as its field 2, which is
    ``scope_spans`` of a ResourceSpans and ``spans`` of a ScopeSpans: a parser reads
    fields in any order and appends a repeated field's items."""
    return head + SPANS_FIELD_TAG + _varint(len(item)) + item


def protobuf_request_spans(request: Any) -> tuple[list[IncomingSpan], int]:
    """The storable spans of a decoded ``ExportTraceServiceRequest`` and how many were
    refused for their ids; a status code the reader does not know (the one thing of a
    typed span it refuses) raises its TraceParseError, naming the span and field.

    Each one-span block is put together from bytes: the block's resource (and schema and
    any unknown field) and the scope are serialised once, each span once, where building
    a block message per span copied the span and serialised the resource again."""
    incoming: list[IncomingSpan] = []
    rejected = 0
    for b_index, block in enumerate(request.resource_spans):
        envelope = trace_pb2.ResourceSpans()
        envelope.CopyFrom(block)  # keeps the resource, schema and any unknown field
        del envelope.scope_spans[:]
        block_head = envelope.SerializeToString()
        for s_index, scope_spans in enumerate(block.scope_spans):
            holder = trace_pb2.ScopeSpans()
            holder.CopyFrom(scope_spans)
            del holder.spans[:]
            scope_head = holder.SerializeToString()
            for k_index, span in enumerate(scope_spans.spans):
                if span.status.code not in STATUS_CODES:
                    record = SPAN_RECORD.format(block=b_index, scope=s_index, span=k_index)
                    raise TraceParseError(MSG_BAD_STATUS, record=record, field="status.code")
                if not _storable_ids(span):
                    rejected += 1
                    continue
                one_span = _with_spans_field(scope_head, span.SerializeToString())
                incoming.append(
                    IncomingSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        root_ended=not span.parent_span_id and span.end_time_unix_nano != 0,
                        encoding=ENCODING_PROTOBUF,
                        payload=_with_spans_field(block_head, one_span),
                    )
                )
    return incoming, rejected


def _json_span_objects(blocks: list[Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any], Any]]:
    """(block, scopeSpans, span) objects in the reader's order (blocks already read by it,
    so every level is the right type)."""
    for block in blocks:
        for scope_spans in block.get("scopeSpans") or []:
            for span in scope_spans.get("spans") or []:
                yield block, scope_spans, span


def json_request_spans(blocks: list[Any], spans: list[Span]) -> list[IncomingSpan]:
    """The spans of OTLP/JSON ``resourceSpans`` blocks that the reader accepted (``spans``,
    decoded from the same blocks, in the same order), each as its one-span block."""
    incoming = []
    for (block, scope_spans, raw), span in zip(_json_span_objects(blocks), spans, strict=True):
        single = {
            **{key: value for key, value in block.items() if key != "scopeSpans"},
            "scopeSpans": [
                {**{k: v for k, v in scope_spans.items() if k != "spans"}, "spans": [raw]}
            ],
        }
        incoming.append(
            IncomingSpan(
                trace_id=span.trace_id,
                span_id=span.span_id,
                root_ended=not span.parent_id and span.end_ns is not None,
                encoding=ENCODING_JSON,
                # A lone surrogate (an escaped "\ud800", as JavaScript writes a string cut
                # inside an emoji) is valid JSON but not UTF-8: stored replaced, as the file
                # import stores it, not answered with a 500 that loses the whole batch.
                payload=json.dumps(storable_value(single), ensure_ascii=False).encode(),
            )
        )
    return incoming


def _protobuf_request(payloads: list[bytes]) -> Any:
    """Stored protobuf rows as one request, a block per row (each parsed in place)."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    for payload in payloads:
        request.resource_spans.add().MergeFromString(payload)
    return request


def stored_spans(rows: list[tuple[str, bytes, Any]]) -> list[tuple[Span, dict[str, Any]]]:
    """The spans of stored rows ``(encoding, payload, legacy span)`` in arrival order, each
    with its resource attributes (duplicates kept: the assembly collapses them)."""
    pairs: list[tuple[Span, dict[str, Any]]] = []
    run: list[bytes] = []

    def flush() -> None:
        if run:
            pairs.extend(request_spans(_protobuf_request(run), position=len(pairs)))
            run.clear()

    for encoding, payload, legacy in rows:
        if encoding == ENCODING_PROTOBUF:
            run.append(bytes(payload))
            continue
        flush()
        if encoding == ENCODING_JSON:
            pairs.extend(document_spans([json.loads(bytes(payload))], position=len(pairs)))
        else:
            pairs.append(span_from_json(legacy, position=len(pairs)))
    flush()
    return pairs


def incoming_spans_read(spans: list[IncomingSpan]) -> list[tuple[Span, dict[str, Any]]]:
    """What the assembly will read from these spans once stored."""
    return stored_spans([(span.encoding, span.payload, None) for span in spans])
