"""Spans stored as they arrived, and read back by the assembly (ingest.core.otlp_stored)."""

from __future__ import annotations

import json

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from ingest.core.otlp_protobuf import request_as_json
from ingest.core.otlp_receive import CONTENT_JSON, CONTENT_PROTOBUF, decode_request
from ingest.core.otlp_stored import (
    ENCODING_JSON,
    ENCODING_LEGACY,
    ENCODING_PROTOBUF,
    stored_spans,
)
from ingest.core.otlp_trace import span_to_json
from ingest.core.otlp_wire import document_spans
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span, protobuf_body, span_id

SPANS = [
    json_span(1, name="root", end=9, attributes={"faultline.task.id": "t-1"}),
    json_span(2, parent=1, name="chat", attributes={"gen_ai.operation.name": "chat"}),
    json_span(3, parent=1, name="tool", status={"code": 2, "message": "declined"}),
]


def _rows(body: bytes, content_type: str) -> list[tuple[str, bytes, None]]:
    return [(s.encoding, s.payload, None) for s in decode_request(body, content_type).spans]


def _shape(pairs):
    return [
        (s.span_id, s.parent_id, s.name, s.end_ns, s.status, s.attributes, s.extra, r)
        for s, r in pairs
    ]


def test_it_stores_each_protobuf_span_as_a_one_span_block_with_its_resource_and_scope():
    payloads = [s.payload for s in decode_request(protobuf_body(SPANS), CONTENT_PROTOBUF).spans]
    blocks = [trace_pb2.ResourceSpans.FromString(p) for p in payloads]
    assert [len(b.scope_spans) for b in blocks] == [1, 1, 1]
    assert [b.scope_spans[0].spans[0].span_id.hex() for b in blocks] == [
        span_id(n) for n in (1, 2, 3)
    ]
    assert {b.resource.attributes[0].value.string_value for b in blocks} == {"shop"}
    assert {b.scope_spans[0].scope.name for b in blocks} == {"tests"}


def test_it_reads_stored_protobuf_rows_as_the_reader_reads_the_whole_request():
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(protobuf_body(SPANS))
    direct = document_spans(request_as_json(request)["resourceSpans"])
    assert _shape(stored_spans(_rows(protobuf_body(SPANS), CONTENT_PROTOBUF))) == _shape(direct)


def test_it_reads_stored_json_rows_as_the_reader_reads_the_whole_request():
    direct = document_spans(json.loads(json_body(SPANS))["resourceSpans"])
    assert _shape(stored_spans(_rows(json_body(SPANS), CONTENT_JSON))) == _shape(direct)


def test_it_keeps_each_span_with_its_own_resource_when_resources_differ():
    rows = _rows(protobuf_body(SPANS[:1], {"service.name": "a"}), CONTENT_PROTOBUF)
    rows += _rows(protobuf_body(SPANS[1:], {"service.name": "b"}), CONTENT_PROTOBUF)
    pairs = stored_spans(rows)
    assert [r["service.name"] for _, r in pairs] == ["a", "b", "b"]
    assert [s.position for s, _ in pairs] == [0, 1, 2]


def test_it_reads_rows_of_every_encoding_in_arrival_order():
    (first,) = stored_spans(_rows(json_body(SPANS[:1]), CONTENT_JSON))
    legacy = span_to_json(*first)
    rows = [(ENCODING_LEGACY, b"", legacy)]
    rows += _rows(json_body(SPANS[1:2]), CONTENT_JSON)
    rows += _rows(protobuf_body(SPANS[2:]), CONTENT_PROTOBUF)
    assert [r[0] for r in rows] == [ENCODING_LEGACY, ENCODING_JSON, ENCODING_PROTOBUF]
    pairs = stored_spans(rows)
    assert [(s.span_id, s.position) for s, _ in pairs] == [(span_id(n), n - 1) for n in (1, 2, 3)]
    assert all(s.trace_id == TRACE for s, _ in pairs)


def test_it_marks_the_root_ended_only_for_an_ended_span_without_a_parent():
    for body, kind in ((protobuf_body(SPANS), CONTENT_PROTOBUF), (json_body(SPANS), CONTENT_JSON)):
        assert [s.root_ended for s in decode_request(body, kind).spans] == [True, False, False]


def test_it_keeps_schema_urls_and_every_scope_in_the_blocks_it_puts_together_from_bytes():
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(protobuf_body(SPANS))
    block = request.resource_spans[0]
    block.schema_url = "https://opentelemetry.io/schemas/1.26.0"
    block.scope_spans[0].schema_url = "https://example.test/scope"
    second = block.scope_spans.add()
    second.scope.name = "other-scope"
    second.spans.append(block.scope_spans[0].spans[0])
    second.spans[0].span_id = bytes.fromhex(span_id(7))
    body = request.SerializeToString()
    stored = [
        trace_pb2.ResourceSpans.FromString(s.payload)
        for s in decode_request(body, CONTENT_PROTOBUF).spans
    ]
    expected = []
    for scope_spans in block.scope_spans:
        for span in scope_spans.spans:
            one = trace_pb2.ResourceSpans(resource=block.resource, schema_url=block.schema_url)
            holder = one.scope_spans.add(scope=scope_spans.scope, schema_url=scope_spans.schema_url)
            holder.spans.append(span)
            expected.append(one)
    assert stored == expected
