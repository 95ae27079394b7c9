"""The direct protobuf reader gives exactly the spans that the one OTLP reader gives
through the OTLP/JSON shape, on every kind of field (each unusual one on its slow path)."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from ingest.core.errors import TraceParseError
from ingest.core.otlp_protobuf import request_as_json
from ingest.core.otlp_protobuf_spans import request_spans
from ingest.core.otlp_wire import document_spans
from tests.ingest.core.test_otlp_protobuf import _every_value_kind, _rich_request


def _through_json(request):
    return document_spans(request_as_json(request).get("resourceSpans", []))


def _shape(pairs):
    return [(vars(span), resource) for span, resource in pairs]


def _common_request() -> trace_service_pb2.ExportTraceServiceRequest:
    """What an SDK sends for an agent: resource and scope attributes, kinds, flags."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    block = request.resource_spans.add()
    attribute = block.resource.attributes.add()
    attribute.key, attribute.value.string_value = "service.name", "shop"
    block.schema_url = "https://opentelemetry.io/schemas/1.26.0"
    scope_spans = block.scope_spans.add()
    scope_spans.scope.name, scope_spans.scope.version = "agent", "1.0"
    scope_attribute = scope_spans.scope.attributes.add()
    scope_attribute.key, scope_attribute.value.int_value = "n", 3
    for number in range(3):
        span = scope_spans.spans.add(name=f"chat {number}", kind=number, flags=0x100 * number)
        span.trace_id, span.span_id = bytes(range(16)), bytes([number + 1] * 8)
        if number:
            span.parent_span_id = bytes([1] * 8)
        span.start_time_unix_nano, span.end_time_unix_nano = 10 + number, 20 + number
        span.status.code = number % 3
        span.status.message = "boom" if number == 2 else ""
        value = span.attributes.add()
        value.key, value.value.string_value = "gen_ai.operation.name", "chat"
    _every_value_kind_without_empty_key(scope_spans.spans[0])
    return request


def _every_value_kind_without_empty_key(span) -> None:
    _every_value_kind(span)
    _without_keyless_pairs(span)


def test_it_reads_the_common_fields_as_the_one_reader_does():
    request = _common_request()
    assert _shape(request_spans(request)) == _shape(_through_json(request))


def _without_keyless_pairs(span) -> None:
    del span.attributes[-1]  # an attribute without a key: refused by the reader
    kvlist = next(pair for pair in span.attributes if pair.key == "kvlist")
    del kvlist.value.kvlist_value.values[-1]


def test_it_reads_every_unusual_field_as_the_one_reader_does():
    request = _rich_request()
    spans = request.resource_spans[1].scope_spans[1].spans
    _without_keyless_pairs(spans[0])
    for number, span in enumerate(spans[1:], start=2):  # stored spans always have ids
        span.trace_id, span.span_id = bytes(range(16)), bytes([number] * 8)
    assert _shape(request_spans(request)) == _shape(_through_json(request))


def test_it_refuses_an_attribute_without_a_key_as_the_one_reader_does():
    request = _rich_request()
    with pytest.raises(TraceParseError) as direct:
        request_spans(request)
    with pytest.raises(TraceParseError) as reader:
        _through_json(request)
    assert str(direct.value) == str(reader.value)


def test_it_numbers_the_spans_from_the_given_position():
    request = _common_request()
    assert [span.position for span, _ in request_spans(request, position=5)] == [5, 6, 7]
